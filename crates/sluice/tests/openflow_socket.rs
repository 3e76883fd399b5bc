//! The daemon's OpenFlow side over a real socket (no root needed: one pcap
//! port, the management socket in a temporary run directory): malformed
//! and refused messages get the exact error type/code the spec names, with
//! the offending bytes; nothing is half-applied; the connection survives
//! every one of them.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use ofp::error::{
    BadActionCode, BadInstructionCode, BadMatchCode, BadRequestCode, ErrorCode, MeterModFailedCode,
};
use ofp::msg::multipart::{MultipartReplyBody, MultipartRequest, MultipartRequestBody};
use ofp::msg::simple::Hello;
use ofp::text::parse_flow_mod;
use ofp::{Framer, Message};

mod common;
use common::Daemon;

fn start(name: &str) -> (Daemon, PathBuf) {
    start_with(name, "")
}

/// The daemon with `extra` lines in its `[bridge]` section.
fn start_with(name: &str, extra: &str) -> (Daemon, PathBuf) {
    let dir = std::env::temp_dir().join(format!("sluice-of-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("sluice.toml");
    std::fs::write(
        &cfg,
        format!(
            "[bridge]\nname = \"t\"\nlocal_port = false\nfail_mode = \"secure\"\n{extra}\n\
             [[port]]\nname = \"out\"\nofport = 1\nbackend = \"pcap\"\npcap_out = \"{}\"\n",
            dir.join("out.pcap").display()
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap(), "--run-dir"])
        .arg(&dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sock = dir.join("t.mgmt");
    let d = Daemon { child, dir };
    let t0 = Instant::now();
    while !sock.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no management socket"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    (d, sock)
}

struct Peer {
    s: UnixStream,
    framer: Framer,
}

impl Peer {
    fn connect(sock: &Path) -> Peer {
        let s = UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut p = Peer {
            s,
            framer: Framer::new(),
        };
        p.raw(&Message::Hello(Hello::ours()).to_bytes(1));
        let (_, m) = p.recv();
        assert!(matches!(m, Message::Hello(_)), "{m:?}");
        p
    }

    fn raw(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    fn recv(&mut self) -> (u32, Message) {
        loop {
            if let Some(f) = self.framer.next_message() {
                let (h, m) = f.expect("the switch sends well-formed messages");
                return (h.xid, m);
            }
            let mut buf = [0u8; 65536];
            let n = self.s.read(&mut buf).expect("the switch answers");
            assert!(n > 0, "the switch closed the connection");
            self.framer.push(&buf[..n]);
        }
    }

    /// Sends `bytes` (xid inside) and expects exactly `code` for that xid,
    /// carrying the start of the offending message.
    fn expect_error(&mut self, bytes: &[u8], code: ErrorCode) {
        let xid = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        self.raw(bytes);
        let (rx, m) = self.recv();
        let Message::Error(e) = m else {
            panic!("expected {code}, got {m:?}")
        };
        assert_eq!((rx, e.code), (xid, code), "for xid {xid}");
        let n = bytes.len().min(64);
        assert_eq!(
            &e.data[..],
            &bytes[..n],
            "the error carries the offending bytes"
        );
    }
}

fn flow(xid: u32, text: &str) -> Vec<u8> {
    Message::FlowMod(parse_flow_mod(text).unwrap()).to_bytes(xid)
}

#[test]
fn malformed_messages_get_the_named_error_and_the_connection_survives() {
    let (_d, sock) = start("malformed");
    let mut p = Peer::connect(&sock);

    // Truncated: a FLOW_MOD cut short (the header's length says so).
    let mut fm = flow(10, "priority=5,actions=output:1");
    fm.truncate(30);
    fm[2..4].copy_from_slice(&30u16.to_be_bytes());
    p.expect_error(&fm, ErrorCode::BadRequest(BadRequestCode::BadLen));

    // Wrong length: a BARRIER_REQUEST with 8 stray bytes.
    let mut b = Message::BarrierRequest.to_bytes(11);
    b.extend_from_slice(&[0; 8]);
    b[2..4].copy_from_slice(&16u16.to_be_bytes());
    p.expect_error(&b, ErrorCode::BadRequest(BadRequestCode::BadLen));

    // Unknown message type; wrong version.
    p.expect_error(
        &[4, 99, 0, 8, 0, 0, 0, 12],
        ErrorCode::BadRequest(BadRequestCode::BadType),
    );
    p.expect_error(
        &[1, 5, 0, 8, 0, 0, 0, 13],
        ErrorCode::BadRequest(BadRequestCode::BadVersion),
    );

    // Bad OXM prerequisites: tcp_dst without ip_proto=6.
    let mut bad = parse_flow_mod("priority=5,tcp,tp_dst=80,actions=drop").unwrap();
    bad.match_
        .entries
        .retain(|e| !matches!(e, ofp::MatchEntry::Basic(o) if o.field == ofp::OxmField::IpProto));
    p.expect_error(
        &Message::FlowMod(bad).to_bytes(14),
        ErrorCode::BadMatch(BadMatchCode::BadPrereq),
    );

    // References to what does not exist: group, meter, table.
    p.expect_error(
        &flow(15, "priority=5,actions=group:77"),
        ErrorCode::BadAction(BadActionCode::BadOutGroup),
    );
    p.expect_error(
        &flow(16, "priority=5,actions=meter:9,output:1"),
        ErrorCode::MeterModFailed(MeterModFailedCode::UnknownMeter),
    );
    p.expect_error(
        &flow(17, "table=3,priority=5,actions=goto_table:1"),
        ErrorCode::BadInstruction(BadInstructionCode::BadTableId),
    );

    // An experimenter nobody knows; sluice's own id and Nicira's (Open
    // vSwitch's OFPBRC_BAD_SUBTYPE) with an unknown type.
    let exp = |xid: u32, id: u32, ty: u32| {
        Message::Experimenter(ofp::msg::simple::ExperimenterMsg {
            experimenter: id,
            exp_type: ty,
            data: Bytes::new(),
        })
        .to_bytes(xid)
    };
    p.expect_error(
        &exp(18, 0x00ab_cdef, 1),
        ErrorCode::BadRequest(BadRequestCode::BadExperimenter),
    );
    p.expect_error(
        &exp(19, ofp::msg::sluice::SLUICE_EXPERIMENTER, 77),
        ErrorCode::BadRequest(BadRequestCode::BadExpType),
    );
    p.expect_error(
        &exp(19, 0x2320, 1),
        ErrorCode::BadRequest(BadRequestCode::BadExpType),
    );

    // A message only a switch sends.
    p.expect_error(
        &Message::BarrierReply.to_bytes(20),
        ErrorCode::BadRequest(BadRequestCode::BadType),
    );

    // Still up: echo answers, and nothing of the above was applied.
    p.raw(&Message::EchoRequest(Bytes::from_static(b"alive")).to_bytes(21));
    assert_eq!(
        p.recv(),
        (21, Message::EchoReply(Bytes::from_static(b"alive")))
    );
    let req = MultipartRequest::new(MultipartRequestBody::Flow(Default::default()));
    p.raw(&Message::MultipartRequest(req).to_bytes(22));
    let (xid, m) = p.recv();
    assert_eq!(xid, 22);
    let Message::MultipartReply(r) = m else {
        panic!("{m:?}")
    };
    assert_eq!(
        r.body,
        MultipartReplyBody::Flow(vec![]),
        "no flow half-applied"
    );

    // A broken header (length below 8) is the one thing that ends it.
    p.expect_error(
        &[4, 2, 0, 4, 0, 0, 0, 23],
        ErrorCode::BadRequest(BadRequestCode::BadLen),
    );
    let mut buf = [0u8; 16];
    assert_eq!(
        p.s.read(&mut buf).unwrap_or(0),
        0,
        "closed after a broken header"
    );
    // ...and the switch still takes new connections.
    let mut q = Peer::connect(&sock);
    q.raw(&Message::BarrierRequest.to_bytes(1));
    assert_eq!(q.recv(), (1, Message::BarrierReply));
}

#[test]
fn trace_over_the_socket_names_the_rule() {
    let (_d, sock) = start("trace");
    let mut p = Peer::connect(&sock);
    p.raw(&flow(
        2,
        "priority=7,cookie=0x42,tcp,tp_dst=80,actions=output:1",
    ));
    p.raw(&Message::BarrierRequest.to_bytes(3));
    assert_eq!(p.recv(), (3, Message::BarrierReply));
    // From port 5 (not configured: the trace says so), so that output:1
    // is not the ingress port.
    let req = ofp::msg::sluice::TraceRequest {
        in_port: 5,
        frame: Bytes::from(packet::wire::build::sample_tcp(80, 0x02)),
    };
    p.raw(&req.message().to_bytes(4));
    let (xid, m) = p.recv();
    assert_eq!(xid, 4);
    let Message::Experimenter(e) = m else {
        panic!("{m:?}")
    };
    let text = String::from_utf8(e.data.to_vec()).unwrap();
    assert!(
        text.contains(" 0. tcp,tp_dst=80, priority 7, cookie 0x42"),
        "{text}"
    );
    assert!(text.contains("in_port 5 (no such port)"), "{text}");
    assert!(text.contains("Datapath actions: 1"), "{text}");
    // A trace too short for its header is BAD_LEN, and changes nothing.
    let mut short = req.message().to_bytes(5);
    short.truncate(16 + 4);
    short[2..4].copy_from_slice(&20u16.to_be_bytes());
    p.expect_error(&short, ErrorCode::BadRequest(BadRequestCode::BadLen));
}

fn rss_kb(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_peer_that_never_reads_cannot_grow_the_daemon() {
    let (d, sock) = start("noread");
    let pid = d.child.id();
    // Warm up: one well-behaved exchange, so the first replies' buffers exist.
    let mut good = Peer::connect(&sock);
    good.raw(&Message::FeaturesRequest.to_bytes(2));
    assert!(matches!(good.recv().1, Message::FeaturesReply(_)));
    let before = rss_kb(pid);
    // The bad peer: HELLO, then TABLE_FEATURES requests (16 bytes, ~390 KB
    // of reply each) and ECHO_REQUESTs, as fast as the daemon takes them
    // for 3 s, never reading a byte.
    let mut bad = UnixStream::connect(&sock).unwrap();
    bad.set_write_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    bad.write_all(&Message::Hello(Hello::ours()).to_bytes(1))
        .unwrap();
    let tf = Message::MultipartRequest(MultipartRequest::new(MultipartRequestBody::TableFeatures(
        vec![],
    )))
    .to_bytes(3);
    let echo = Message::EchoRequest(Bytes::from(vec![7u8; 1000])).to_bytes(4);
    let mut chunk = Vec::new();
    for _ in 0..64 {
        chunk.extend_from_slice(&tf);
        chunk.extend_from_slice(&echo);
    }
    let t0 = Instant::now();
    let mut sent = 0usize;
    while t0.elapsed() < Duration::from_secs(3) {
        match bad.write(&chunk) {
            Ok(n) => sent += n,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let after = rss_kb(pid);
    // Had every request been answered: ~390 KB per 16 bytes of TABLE_FEATURES.
    let asked = sent / (tf.len() + echo.len()) * 390;
    eprintln!("sent {sent} bytes asking for ~{asked} kB of replies; RSS {before} -> {after} kB");
    assert!(
        asked > 40_000,
        "the peer asked for far more than the budget"
    );
    // The budget (4 MB) plus one reply, with room for allocator slack.
    assert!(
        after < before + 8 * 1024,
        "RSS grew from {before} to {after} kB"
    );
    // The daemon still serves others at once.
    let t = Instant::now();
    good.raw(&Message::EchoRequest(Bytes::from_static(b"hi")).to_bytes(9));
    assert!(matches!(good.recv(), (9, Message::EchoReply(_))));
    assert!(t.elapsed() < Duration::from_secs(1));
    drop(bad);
}

#[test]
fn a_listener_holds_at_most_max_connections_and_the_socket_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_d, sock) = start_with("maxconn", "max_connections = 3");
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let mut peers: Vec<Peer> = (0..3).map(|_| Peer::connect(&sock)).collect();
    // The fourth is closed as it comes: end of stream, no HELLO.
    let mut extra = UnixStream::connect(&sock).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(extra.read(&mut buf).unwrap_or(0), 0, "refused");
    // The three still work; one leaves and a new one is taken.
    for (i, p) in peers.iter_mut().enumerate() {
        p.raw(&Message::BarrierRequest.to_bytes(10 + i as u32));
        assert!(matches!(p.recv().1, Message::BarrierReply));
    }
    drop(peers.pop());
    std::thread::sleep(Duration::from_millis(300));
    let mut again = Peer::connect(&sock);
    again.raw(&Message::BarrierRequest.to_bytes(20));
    assert!(matches!(again.recv().1, Message::BarrierReply));
}

fn cpu_ticks(pid: u32) -> u64 {
    // utime + stime, fields 14 and 15 of /proc/PID/stat (after the comm).
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn out_of_descriptors_the_daemon_rests_its_listeners_instead_of_spinning() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (d, sock) = start_with("emfile", &format!("listen = [\"ptcp:{port}\"]"));
    let pid = d.child.id();
    let mut m = Peer::connect(&sock);
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(5), "no ptcp listener");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Leave the daemon no descriptor to accept with.
    let used = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count() as u64;
    let (soft, hard) = netdev::os::nofile_limit(pid).unwrap();
    netdev::os::set_nofile_limit(pid, used, hard).unwrap();
    // Peers wait in the backlog while accept(2) fails with EMFILE.
    let peers: Vec<std::net::TcpStream> = (0..10)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let ticks = cpu_ticks(pid) - before;
    eprintln!("CPU in 2 s out of descriptors: {ticks} ticks (100 a second)");
    assert!(ticks < 40, "{ticks} ticks in 2 s: the control thread spins");
    // The connection it has is served meanwhile.
    m.raw(&Message::BarrierRequest.to_bytes(5));
    assert!(matches!(m.recv(), (5, Message::BarrierReply)));
    // Descriptors back: the waiting peers are taken.
    netdev::os::set_nofile_limit(pid, soft, hard).unwrap();
    let mut last = peers.into_iter().last().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut hello = [0u8; 8];
    last.read_exact(&mut hello).unwrap();
    assert_eq!(hello[1], 0, "the switch's HELLO");
}
