//! Faults on the daemon without root (pcap ports): a worker that dies
//! takes the daemon down loudly.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use packet::checksum;
use packet::wire::build::{self as wb, Ext, IpFields, Transport};
use packet::wire::ipv4::Ipv4;
use packet::wire::ipv6::Ipv6;
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};

mod common;
use common::Daemon;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-faults-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write_pcap(p: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::new(std::fs::File::create(p).unwrap()).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(&PcapPacket::new(
            Duration::from_micros(i as u64),
            f.len() as u32,
            f,
        ))
        .unwrap();
    }
}

fn read_pcap(p: &Path) -> Vec<Vec<u8>> {
    let Ok(f) = std::fs::File::open(p) else {
        return Vec::new();
    };
    let Ok(mut r) = PcapReader::new(f) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    while let Some(Ok(pkt)) = r.next_packet() {
        v.push(pkt.data.to_vec());
    }
    v
}

/// A bridge with pcap port 1 (`in.pcap`) and port 2 (`out.pcap`) and the
/// given flows; returns the config's path.
fn two_pcap_ports(dir: &Path, flows: &[&str], rate: Option<u64>) -> PathBuf {
    let cfg = dir.join("sluice.toml");
    let flows: String = flows.iter().map(|f| format!("  \"{f}\",\n")).collect();
    let rate = rate.map_or(String::new(), |r| format!("pcap_rate = {r}\n"));
    std::fs::write(
        &cfg,
        format!(
            "[bridge]\nname = \"t\"\nlocal_port = false\nflows = [\n{flows}]\n\
             [[port]]\nname = \"in\"\nofport = 1\nbackend = \"pcap\"\npcap_in = \"{}\"\n{rate}\
             [[port]]\nname = \"out\"\nofport = 2\nbackend = \"pcap\"\npcap_out = \"{}\"\n",
            dir.join("in.pcap").display(),
            dir.join("out.pcap").display()
        ),
    )
    .unwrap();
    cfg
}

#[test]
fn a_worker_panic_stops_the_daemon_with_status_70_and_an_error_line() {
    let dir = temp_dir("panic");
    // Batches of 32 frames: the worker panics in its 5th, after it has
    // sent it.
    let frames: Vec<Vec<u8>> = (0..1000)
        .map(|_| packet::wire::build::sample_tcp(80, 0x02))
        .collect();
    write_pcap(&dir.join("in.pcap"), &frames);
    let cfg = two_pcap_ports(&dir, &["priority=1,actions=output:2"], None);
    let t0 = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap(), "--duration", "30"])
        .arg("--run-dir")
        .arg(&dir)
        .env("SLUICE_FAULT", "worker-panic:5")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut d = Daemon {
        child,
        dir: dir.clone(),
    };
    // Wait for the exit with a bound (the daemon must not keep answering
    // with a dead worker).
    let status = loop {
        if let Some(s) = d.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the daemon still runs 10 s after its worker was made to panic"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(d.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(d.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert_eq!(status.code(), Some(70), "{err}");
    let line = err
        .lines()
        .find(|l| l.contains("ERROR") && l.contains("worker died"))
        .unwrap_or_else(|| panic!("no error line naming the worker: {err}"));
    assert!(line.contains("bridge=t"), "{line}");
    assert!(line.contains("worker=0"), "{line}");
    assert!(
        line.contains("injected fault (SLUICE_FAULT=worker-panic:5)"),
        "{line}"
    );
    assert!(line.contains("datapath/src/worker.rs"), "{line}");
    // What the worker had sent before it died was flushed, and the
    // counters were printed on the way out.
    assert_eq!(read_pcap(&dir.join("out.pcap")).len(), 5 * 32, "{out}");
    assert!(out.contains("bridge t"), "{out}");
}

#[test]
fn a_fault_injection_that_is_not_understood_refuses_to_start() {
    let dir = temp_dir("badfault");
    write_pcap(&dir.join("in.pcap"), &[]);
    let cfg = two_pcap_ports(&dir, &[], None);
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap(), "--duration", "5"])
        .arg("--run-dir")
        .arg(&dir)
        .env("SLUICE_FAULT", "worker-panic:soon")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("SLUICE_FAULT=\"worker-panic:soon\""), "{err}");
}

#[test]
fn backend_pcap_with_a_command_line_port_is_a_config_error_not_a_panic() {
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--backend", "pcap", "--port", "veth0", "--duration", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--port veth0"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

// ---- Malformed frames on the data plane ----------------------------------

const SRC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const DST: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn eth(ty: u16, payload: &[u8]) -> Vec<u8> {
    wb::ethernet(wb::mac(DST), wb::mac(SRC), None, ty, payload)
}

/// `n` VLAN tags (VIDs 1..=n) in front of EtherType `ty`.
fn vlan_stack(n: u16, ty: u16, payload: &[u8]) -> Vec<u8> {
    let tags: Vec<(u16, u16)> = (1..=n).map(|vid| (0x8100, vid)).collect();
    wb::ethernet_tags(wb::mac(DST), wb::mac(SRC), &tags, ty, payload)
}

/// An IPv4 header (+ `l4`) from 10.0.0.1, id 1: `ihl` in words (NOP
/// options past 5), the total length as given (or true), fragment field,
/// and a correct header checksum unless `bad_sum`.
struct V4 {
    proto: u8,
    dst: [u8; 4],
    ihl: u8,
    total: Option<u16>,
    frag: u16,
    bad_sum: bool,
}

impl V4 {
    fn to(dst: [u8; 4], proto: u8) -> V4 {
        V4 {
            proto,
            dst,
            ihl: 5,
            total: None,
            frag: 0,
            bad_sum: false,
        }
    }

    fn build(&self, l4: &[u8]) -> Vec<u8> {
        let fields = IpFields {
            ident: 1,
            frag: self.frag,
            ..IpFields::default()
        };
        let hl = self.ihl as usize * 4;
        let nops = vec![1; hl.saturating_sub(20)];
        let t = Transport::Other(self.proto);
        let mut p = wb::ipv4_options([10, 0, 0, 1], self.dst, &fields, &nops, &t, l4);
        // What the builder would not write: an IHL below 5 (the true total
        // length counting it), a total length that lies, a bad checksum.
        let mut h = Ipv4::at_mut(&mut p, 0).unwrap();
        h.set_version_ihl(0x40 | self.ihl);
        h.set_total_len(self.total.unwrap_or((hl + l4.len()) as u16));
        h.set_checksum(0);
        let sum = checksum::internet(&p[..hl.max(20)]) ^ if self.bad_sum { 0x5a5a } else { 0 };
        Ipv4::at_mut(&mut p, 0).unwrap().set_checksum(sum);
        p
    }
}

// The transport headers stay hand bytes: what they carry is wrong on
// purpose (a TCP checksum of 0xdead, a UDP length as given, a UDP
// checksum of 0xbeef).

fn tcp(dport: u16) -> Vec<u8> {
    let mut t = 40000u16.to_be_bytes().to_vec();
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&[
        0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0x10, 0, 0xde, 0xad, 0, 0,
    ]);
    t
}

fn udp(dport: u16, len: u16) -> Vec<u8> {
    let mut u = 5353u16.to_be_bytes().to_vec();
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&len.to_be_bytes());
    u.extend_from_slice(&[0xbe, 0xef, 1, 2, 3, 4]);
    u
}

/// IPv6 with extension headers `exts` before `l4` (of protocol `proto`).
fn ipv6(exts: &[Ext], proto: u8, l4: &[u8]) -> Vec<u8> {
    let t = Transport::Other(proto);
    wb::ipv6_ext([0xfd; 16], [0xfe; 16], &IpFields::default(), exts, &t, l4)
}

/// `n` destination-options headers (8 bytes each).
fn dest_opts(n: usize) -> Vec<Ext> {
    vec![Ext::padding(60); n]
}

#[test]
fn malformed_frames_are_forwarded_or_dropped_per_spec_and_counted() {
    const REST: u8 = 2;
    const WEB: u8 = 3;
    const UDP: u8 = 4;
    const EDIT: u8 = 5;
    const DROP: u8 = 0;
    let web_v4 = |v: V4| eth(0x0800, &v.build(&tcp(80)));
    let edit_to = [10, 9, 9, 9];
    // 30 destination-options headers, the frame cut 100 bytes into them,
    // the payload length saying 400.
    let mut chain_cut = ipv6(&dest_opts(30), 6, &[]);
    chain_cut.truncate(40 + 100);
    Ipv6::at_mut(&mut chain_cut, 0)
        .unwrap()
        .set_payload_len(400);
    let cases: Vec<(&str, Vec<u8>, u8)> = vec![
        ("runt of 0 bytes", vec![], DROP),
        ("runt of 1 byte", vec![0xff], DROP),
        ("runt of 13 bytes", vec![0xff; 13], DROP),
        ("only an Ethernet header, IPv4 type", eth(0x0800, &[]), REST),
        (
            "IPv4 total length past the frame",
            web_v4(V4 {
                total: Some(2000),
                ..V4::to([10, 0, 0, 2], 6)
            }),
            WEB,
        ),
        (
            "IPv4 total length that leaves no room for TCP",
            web_v4(V4 {
                total: Some(20),
                ..V4::to([10, 0, 0, 2], 6)
            }),
            REST,
        ),
        (
            "IPv4 total length below its header",
            web_v4(V4 {
                total: Some(8),
                ..V4::to([10, 0, 0, 2], 6)
            }),
            REST,
        ),
        (
            "IPv4 header length past the frame",
            eth(
                0x0800,
                &V4 {
                    ihl: 15,
                    ..V4::to([10, 0, 0, 2], 6)
                }
                .build(&[])[..24],
            ),
            REST,
        ),
        (
            "IPv4 header length below 5 words",
            web_v4(V4 {
                ihl: 3,
                ..V4::to([10, 0, 0, 2], 6)
            }),
            REST,
        ),
        (
            "UDP length that lies",
            eth(0x0800, &V4::to([10, 0, 0, 2], 17).build(&udp(53, 0xffff))),
            UDP,
        ),
        // ip_proto says UDP: a `udp` match (eth_type and ip_proto) takes
        // it, though it has no ports to match.
        (
            "UDP header cut short",
            eth(0x0800, &V4::to([10, 0, 0, 2], 17).build(&udp(53, 14)[..5])),
            UDP,
        ),
        (
            "10 VLAN tags, then IPv4/TCP",
            vlan_stack(10, 0x0800, &V4::to([10, 0, 0, 2], 6).build(&tcp(80))),
            WEB,
        ),
        (
            "VLAN tags to the frame's end",
            vlan_stack(40, 0x8100, &[]),
            REST,
        ),
        (
            "IPv6 with 30 extension headers, then TCP",
            eth(0x86dd, &ipv6(&dest_opts(30), 6, &tcp(80))),
            WEB,
        ),
        (
            "IPv6 extension header chain past the frame",
            eth(0x86dd, &chain_cut),
            REST,
        ),
        (
            "IPv6 later fragment",
            eth(0x86dd, &ipv6(&[Ext::fragment(32, false, 7)], 6, &tcp(80))),
            REST,
        ),
        (
            "IPv4 first fragment (ports present)",
            web_v4(V4 {
                frag: 0x2000,
                ..V4::to([10, 0, 0, 2], 6)
            }),
            WEB,
        ),
        (
            "IPv4 later fragment (no ports)",
            web_v4(V4 {
                frag: 100,
                ..V4::to([10, 0, 0, 2], 6)
            }),
            REST,
        ),
        (
            "bad IPv4 header checksum",
            web_v4(V4 {
                bad_sum: true,
                ..V4::to([10, 0, 0, 2], 6)
            }),
            WEB,
        ),
        (
            "bad TCP checksum",
            eth(0x0800, &V4::to([10, 0, 0, 2], 6).build(&tcp(80))),
            WEB,
        ),
        // Edited on the way (dec_ttl, set ip_dst): the edit stays inside
        // the headers really present.
        (
            "edit: IPv4 total length past the frame",
            web_v4(V4 {
                total: Some(2000),
                ..V4::to(edit_to, 6)
            }),
            EDIT,
        ),
        (
            "edit: IPv4 options and a bad checksum",
            web_v4(V4 {
                ihl: 7,
                bad_sum: true,
                ..V4::to(edit_to, 6)
            }),
            EDIT,
        ),
        (
            "edit: 10 VLAN tags, UDP length that lies",
            vlan_stack(10, 0x0800, &V4::to(edit_to, 17).build(&udp(53, 3))),
            EDIT,
        ),
        (
            "edit: IPv4 later fragment",
            web_v4(V4 {
                frag: 100,
                ..V4::to(edit_to, 6)
            }),
            EDIT,
        ),
        (
            "edit: IPv4 total length that leaves no room for TCP",
            web_v4(V4 {
                total: Some(20),
                ..V4::to(edit_to, 6)
            }),
            EDIT,
        ),
    ];
    let dir = temp_dir("malformed");
    let frames: Vec<Vec<u8>> = cases.iter().map(|c| c.1.clone()).collect();
    write_pcap(&dir.join("in.pcap"), &frames);
    let cfg = dir.join("sluice.toml");
    let mut toml = format!(
        "[bridge]\nname = \"t\"\nlocal_port = false\nflows = [\n\
         \"priority=40,ip,nw_dst=10.9.9.9,actions=dec_ttl,set_field:10.9.9.10->ipv4_dst,output:5\",\n\
         \"priority=30,tcp,tp_dst=80,actions=output:3\",\n\
         \"priority=30,tcp6,tp_dst=80,actions=output:3\",\n\
         \"priority=20,udp,actions=output:4\",\n\
         \"priority=0,actions=output:2\",\n]\n\
         [[port]]\nname = \"in\"\nofport = 1\nbackend = \"pcap\"\npcap_in = \"{}\"\n",
        dir.join("in.pcap").display()
    );
    for p in 2..=5 {
        toml.push_str(&format!(
            "[[port]]\nname = \"o{p}\"\nofport = {p}\nbackend = \"pcap\"\npcap_out = \"{}\"\n",
            dir.join(format!("o{p}.pcap")).display()
        ));
    }
    std::fs::write(&cfg, toml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap(), "--duration", "0.5"])
        .arg("--run-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let mut got: Vec<std::collections::VecDeque<Vec<u8>>> = (0..=5)
        .map(|p| read_pcap(&dir.join(format!("o{p}.pcap"))).into())
        .collect();
    for (name, frame, port) in &cases {
        if *port == DROP {
            continue;
        }
        let f = got[*port as usize]
            .pop_front()
            .unwrap_or_else(|| panic!("{name}: nothing arrived on port {port}"));
        if *port != EDIT {
            assert_eq!(&f, frame, "{name}: not forwarded unchanged");
            continue;
        }
        // Edited: TTL one less, destination changed, everything past the
        // IPv4 header as it was except the transport checksum.
        let tags = frame[12..]
            .chunks(4)
            .take_while(|c| c[..2] == [0x81, 0x00])
            .count();
        let ip = 14 + 4 * tags;
        let hl = (frame[ip] & 0x0f) as usize * 4;
        assert_eq!(f.len(), frame.len(), "{name}");
        assert_eq!(f[ip + 8], frame[ip + 8] - 1, "{name}: TTL");
        assert_eq!(f[ip + 16..ip + 20], [10, 9, 9, 10], "{name}: ip_dst");
        assert_eq!(f[..ip], frame[..ip], "{name}: L2 changed");
        let diff: Vec<usize> = (ip + hl..f.len()).filter(|&i| f[i] != frame[i]).collect();
        assert!(
            diff.len() <= 2,
            "{name}: bytes past the IP header changed at {diff:?}"
        );
    }
    for (p, rest) in got.iter().enumerate() {
        assert!(rest.is_empty(), "port {p} got {} frames more", rest.len());
    }
    // Runts: counted as receive errors of port 1, the rest as received.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("1 "))
        .unwrap_or_else(|| panic!("{stdout}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(cols[2], (cases.len() - 3).to_string(), "{line}");
    assert_eq!(cols[7], "3", "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn check_config_validates_and_exits_without_touching_an_interface() {
    let dir = std::env::temp_dir().join(format!("sluice-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |text: &str| {
        let cfg = dir.join("sluice.toml");
        std::fs::write(&cfg, text).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
            .args(["--check-config", "--config", cfg.to_str().unwrap()])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    // Interfaces that do not exist: only the configuration is checked.
    let (code, text) =
        run("[bridge]\nflows = [\"priority=1,actions=drop\"]\n[[port]]\nname = \"no-such-if0\"\n");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("bridge br0: 1 port(s), 1 flow(s)"), "{text}");
    assert!(text.contains("configuration ok"), "{text}");
    let (code, text) = run("[bridge]\nworkers = \"two\"\n[[port]]\nname = \"a\"\n");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("line 2, column 11"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
