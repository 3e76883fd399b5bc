//! The Nicira messages of `ofp::msg::nxt` against ovs-ofctl 3.1.
//!
//! `ovs-ofctl -O OpenFlow13 monitor SWITCH -P FORMAT` is pointed at a
//! switch this test plays (a unix socket): the NXT_SET_PACKET_IN_FORMAT
//! it sends must be the bytes sluice writes for that format, and the
//! packet-ins sluice writes in that format (OFPT_PACKET_IN, NXT_PACKET_IN,
//! NXT_PACKET_IN2) must be printed by ovs-ofctl with every field sluice
//! put in: table, cookie, lengths, metadata, reason, buffer, userdata,
//! the frame. `ovs-ofctl ofp-print` reads NXT_SET_CONTROLLER_ID.
//!
//! Needs `ovs-ofctl` (Debian's openvswitch-common, which `scripts/setup.sh`
//! installs): without it the test fails, it does not skip.

use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::process::{Command, Stdio};

use bytes::Bytes;
use ofp::msg::flow::{PacketIn, PacketInReason};
use ofp::msg::nxt::{NxPacketIn, NxtMsg, PacketIn2, PacketInFormat};
use ofp::port::NO_BUFFER;
use ofp::{Match, Message, Oxm, OxmField};
use packet::wire::build::{self as wb, Ip, IpFields, Transport};
use packet::wire::udp::Udp;

mod ovs_ofctl;
use ovs_ofctl::{accept_ovs_ofctl, answer_keepalive, ovs_ofctl, read_msg};

/// Runs `ovs-ofctl monitor -P format` against a switch that, once the
/// format is set (ovs-ofctl's barrier after it answered), sends `msgs`
/// and an echo request, and hangs up once it is answered. Returns what
/// ovs-ofctl sent and what it printed of `msgs`.
fn monitor(format: &str, msgs: &[Message], n: usize) -> (Vec<Vec<u8>>, String) {
    let dir = std::env::temp_dir().join(format!("sluice-ovs-nxt-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sw.sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).expect("bind the test switch's socket");
    listener.set_nonblocking(true).unwrap();
    let mut child = Command::new(ovs_ofctl())
        .args(["-O", "OpenFlow13", "monitor"])
        .arg(format!("unix:{}", path.display()))
        .args(["-P", format])
        // Its control socket goes to the run directory.
        .env("OVS_RUNDIR", &dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ovs-ofctl");
    let mut conn = accept_ovs_ofctl(&listener, &mut child)
        .unwrap_or_else(|(st, e)| panic!("ovs-ofctl exited ({st}) without connecting: {e}"));
    let mut sent = Vec::new();
    while let Some(m) = read_msg(&mut conn) {
        match m[1] {
            // ECHO_REQUEST, BARRIER_REQUEST: answered; the barrier
            // follows the format request.
            2 | 20 => {
                answer_keepalive(&mut conn, &m);
                if m[1] == 20 {
                    break;
                }
            }
            _ => sent.push(m),
        }
    }
    for m in msgs {
        conn.write_all(&m.to_bytes(0)).unwrap();
    }
    // An echo round trip: ovs-ofctl has read (and printed) all of them
    // once it answers.
    let _ = conn.write_all(&[4, 2, 0, 8, 0, 0, 0, 99]);
    while let Some(m) = read_msg(&mut conn) {
        if m[1] == 3 {
            break;
        }
    }
    drop(conn);
    // monitor prints what it receives on stderr; the echo request ends
    // what the test sent.
    let mut out = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let end = out
        .find("OFPT_ECHO_REQUEST")
        .unwrap_or_else(|| panic!("{out}"));
    out.truncate(end);
    (sent, out)
}

/// A UDP packet from 10.0.0.1:1234 to 10.0.0.2:53 (IPv4 id 0x1234, no
/// flags, no UDP checksum), 60 bytes.
fn udp_frame() -> Vec<u8> {
    let fields = IpFields {
        ident: 0x1234,
        frag: 0,
        ..IpFields::default()
    };
    let t = Transport::Udp {
        sport: 1234,
        dport: 53,
    };
    let mut ip = wb::ip(
        Ip::V4([10, 0, 0, 1]),
        Ip::V4([10, 0, 0, 2]),
        &fields,
        &t,
        &[],
    );
    Udp::at_mut(&mut ip, 20).unwrap().set_checksum(0); // ovs-ofctl: udp_csum:0
    let mut f = wb::ethernet(0x0200_0000_0002, 0x0200_0000_0001, None, 0x0800, &ip);
    f.resize(60, 0);
    f
}

fn sample(data: &[u8], total_len: u16, buffer_id: u32) -> PacketIn {
    PacketIn {
        buffer_id,
        total_len,
        reason: PacketInReason::Action,
        table_id: 3,
        cookie: 0x77,
        match_: Match::new()
            .with(Oxm::exact(OxmField::InPort, 1))
            .with(Oxm::exact(OxmField::TunnelId, 0x99))
            .with(Oxm::exact(OxmField::TunIpv4Dst, 0x0a00_0063))
            .with(Oxm::exact(OxmField::Reg(0), 5))
            .with(Oxm::exact(OxmField::Reg(15), 0xf))
            .with(Oxm::exact(OxmField::PktMark, 9))
            .with(Oxm::exact(OxmField::Metadata, 0xab00)),
        data: Bytes::copy_from_slice(data),
    }
}

/// What ovs-ofctl prints of the packet-ins of `sample`, after the name:
/// the same for the three formats (but NXT_PACKET_IN2's userdata).
const WHOLE: &str = " (xid=0x0): table_id=3 cookie=0x77 total_len=60 pkt_mark=0x9,reg0=0x5,reg15=0xf,tun_id=0x99,tun_dst=10.0.0.99,metadata=0xab00,in_port=1 (via action) data_len=60 (unbuffered)\n";
const CUT: &str = " (xid=0x0): table_id=3 cookie=0x77 total_len=1500 pkt_mark=0x9,reg0=0x5,reg15=0xf,tun_id=0x99,tun_dst=10.0.0.99,metadata=0xab00,in_port=1 (via action) data_len=60 buffer=0x00000007\n";
const FLOW: &str = "udp,vlan_tci=0x0000,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_src=10.0.0.1,nw_dst=10.0.0.2,nw_tos=0,nw_ecn=0,nw_ttl=64,nw_frag=no,tp_src=1234,tp_dst=53 udp_csum:0\n";

#[test]
fn ovs_ofctl_monitor_asks_as_sluice_writes_and_prints_what_sluice_sends() {
    let f = udp_frame();
    let whole = sample(&f, 60, NO_BUFFER);
    let cut = sample(&f, 1500, 7);
    let cases: [(&str, PacketInFormat, [Message; 2], [String; 2]); 3] = [
        (
            "standard",
            PacketInFormat::Standard,
            [
                Message::PacketIn(whole.clone()),
                Message::PacketIn(cut.clone()),
            ],
            [
                format!("OFPT_PACKET_IN (OF1.3){WHOLE}{FLOW}"),
                format!("OFPT_PACKET_IN (OF1.3){CUT}{FLOW}"),
            ],
        ),
        (
            "nxt_packet_in",
            PacketInFormat::Nxt,
            [
                NxPacketIn::from_packet_in(&whole).message(),
                NxPacketIn::from_packet_in(&cut).message(),
            ],
            [
                format!("NXT_PACKET_IN (OF1.3){WHOLE}{FLOW}"),
                format!("NXT_PACKET_IN (OF1.3){CUT}{FLOW}"),
            ],
        ),
        (
            "nxt_packet_in2",
            PacketInFormat::Nxt2,
            [
                PacketIn2::from_packet_in(&whole, Bytes::from_static(&[1, 2, 0xab])).message(),
                PacketIn2::from_packet_in(&cut, Bytes::new()).message(),
            ],
            [
                format!("NXT_PACKET_IN2 (OF1.3){WHOLE} userdata=01.02.ab\n{FLOW}"),
                format!("NXT_PACKET_IN2 (OF1.3){CUT}{FLOW}"),
            ],
        ),
    ];
    for (n, (name, format, msgs, want)) in cases.into_iter().enumerate() {
        let (sent, printed) = monitor(name, &msgs, n);
        // What ovs-ofctl asked for, byte for byte (its xid aside).
        let spif = sent
            .iter()
            .find(|m| m[1] == 4)
            .unwrap_or_else(|| panic!("{name}: no experimenter message in {sent:02x?}"));
        let xid = u32::from_be_bytes([spif[4], spif[5], spif[6], spif[7]]);
        assert_eq!(
            spif,
            &NxtMsg::SetPacketInFormat(format).message().to_bytes(xid),
            "{name}"
        );
        let (_, m) = Message::decode(&Bytes::from(spif.clone())).unwrap();
        let Message::Experimenter(e) = m else {
            panic!()
        };
        assert_eq!(
            NxtMsg::decode(&e).unwrap().unwrap(),
            NxtMsg::SetPacketInFormat(format)
        );
        assert_eq!(printed, want.concat(), "{name}");
    }
}

#[test]
fn ovs_ofctl_reads_set_controller_id_as_sluice_writes_it() {
    let wire = NxtMsg::SetControllerId(258).message().to_bytes(7);
    let hex: String = wire.iter().map(|b| format!("{b:02x}")).collect();
    let out = Command::new(ovs_ofctl())
        .args(["ofp-print", &hex])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "NXT_SET_CONTROLLER_ID (OF1.3) (xid=0x7): id=258\n"
    );
}
