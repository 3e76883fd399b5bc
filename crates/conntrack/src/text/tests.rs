//! Lines compared with Open vSwitch's own (`tests/system-traffic.at`
//! expectations, with the ids and ports it clears filled in), connections
//! made both by hand and by real packets through a tracker.

use super::*;
use crate::build::{self, Ip, Seg};
use crate::key::words;
use crate::tcp::{Peer, TcpConn};
use crate::{Request, Tracker};

const A: Ip = Ip::V4([10, 1, 1, 1]);
const B: Ip = Ip::V4([10, 1, 1, 2]);

fn v4(a: [u8; 4]) -> [u64; 2] {
    words(u32::from_be_bytes(a) as u128)
}

fn key(src: [u8; 4], dst: [u8; 4], proto: u8, sport: u16, dport: u16, zone: u16) -> Key {
    Key {
        src: v4(src),
        dst: v4(dst),
        sport,
        dport,
        zone,
        proto,
        v6: false,
    }
}

fn entry(orig: Key, reply: Key, proto: ProtoState) -> Entry {
    Entry {
        conn: Conn {
            key: [orig, reply],
            proto,
            expires_ms: 0,
            mark: 0,
            label: [0, 0],
            nat: 0,
            assured: false,
        },
        remaining_ms: 29_500,
    }
}

fn simple() -> ProtoState {
    ProtoState::Simple { replied: true }
}

fn tcp(a: PeerState, b: PeerState) -> ProtoState {
    let (mut p, mut q) = (Peer::default(), Peer::default());
    p.state = a;
    q.state = b;
    ProtoState::Tcp(TcpConn {
        peer: [p, q],
        reset: false,
    })
}

#[test]
fn lines_as_open_vswitch_prints_them() {
    let k = key([10, 1, 1, 1], [10, 1, 1, 2], 17, 1, 2, 0);
    let mut e = entry(k, k.reverse(), simple());
    e.conn.mark = 170;
    assert_eq!(
        format_entry(&e, false),
        "udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),reply=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),mark=170"
    );

    let k = key([10, 1, 1, 2], [10, 1, 1, 1], 17, 2, 1, 5);
    let mut e = entry(k, k.reverse(), simple());
    e.conn.label = words(0xaa00000000);
    assert_eq!(
        format_entry(&e, false),
        "udp,orig=(src=10.1.1.2,dst=10.1.1.1,sport=2,dport=1),reply=(src=10.1.1.1,dst=10.1.1.2,sport=1,dport=2),zone=5,labels=0xaa00000000"
    );

    // A translated ICMP echo: the reply key is the translated one.
    let k = key([10, 0, 0, 1], [10, 0, 0, 2], 1, 500, 8 << 8, 0);
    let r = key([10, 0, 0, 2], [10, 0, 0, 201], 1, 500, 0, 0);
    assert_eq!(
        format_entry(&entry(k, r, simple()), false),
        "icmp,orig=(src=10.0.0.1,dst=10.0.0.2,id=500,type=8,code=0),reply=(src=10.0.0.2,dst=10.0.0.201,id=500,type=0,code=0)"
    );

    let k = key([10, 1, 1, 1], [10, 1, 1, 2], 6, 30000, 80, 0);
    let e = entry(
        k,
        k.reverse(),
        tcp(PeerState::FinWait2, PeerState::TimeWait),
    );
    assert_eq!(
        format_entry(&e, false),
        "tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=30000,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=30000),protoinfo=(state=TIME_WAIT)"
    );

    // Every optional field, in Open vSwitch's order; -s adds timeout=
    // after the zone.
    let k = key([10, 1, 1, 1], [10, 1, 1, 2], 6, 34567, 80, 1);
    let mut e = entry(
        k,
        k.reverse(),
        tcp(PeerState::Established, PeerState::Established),
    );
    e.conn.mark = 3;
    e.conn.label = words(0x200000001);
    let line = "tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567),zone=1,mark=3,labels=0x200000001,protoinfo=(state=ESTABLISHED)";
    assert_eq!(format_entry(&e, false), line);
    assert_eq!(
        format_entry(&e, true),
        line.replace(",zone=1,", ",zone=1,timeout=29,")
    );
}

#[test]
fn ipv6_and_other_protocols() {
    let a: u128 = "fc00::1".parse::<Ipv6Addr>().unwrap().into();
    let b: u128 = "fc00::2".parse::<Ipv6Addr>().unwrap().into();
    let k = Key {
        src: words(a),
        dst: words(b),
        sport: 7,
        dport: 128 << 8,
        zone: 0,
        proto: 58,
        v6: true,
    };
    assert_eq!(
        format_entry(&entry(k, k.reverse(), simple()), false),
        "icmpv6,orig=(src=fc00::1,dst=fc00::2,id=7,type=128,code=0),reply=(src=fc00::2,dst=fc00::1,id=7,type=129,code=0)"
    );
    let k = key([10, 1, 1, 1], [10, 1, 1, 2], 47, 0, 0, 0);
    assert_eq!(
        format_entry(&entry(k, k.reverse(), simple()), false),
        "47,orig=(src=10.1.1.1,dst=10.1.1.2,sport=0,dport=0),reply=(src=10.1.1.2,dst=10.1.1.1,sport=0,dport=0)"
    );
    assert_eq!(proto_name(132), "sctp");
}

#[test]
fn states_of_real_handshakes() {
    let t = Tracker::default();
    let commit = Request {
        commit: true,
        zone: 3,
        ..Request::default()
    };
    let seg = |sport, dport, seq, ack, flags| Seg {
        sport,
        dport,
        seq,
        ack,
        flags,
        win: 1000,
        wscale: None,
    };
    let mut p = build::tcp(A, B, &seg(34567, 80, 100, 0, 0x02), 0);
    t.track(&mut p, false, &commit, 1000);
    let line = |t: &Tracker| format_entry(&t.dump(&Filter::default(), 10, 1000)[0], false);
    assert!(
        line(&t).ends_with(",zone=3,protoinfo=(state=SYN_SENT)"),
        "{}",
        line(&t)
    );
    let mut p = build::tcp(B, A, &seg(80, 34567, 500, 101, 0x12), 0);
    t.track(&mut p, false, &commit, 1000);
    let mut p = build::tcp(A, B, &seg(34567, 80, 101, 501, 0x10), 0);
    t.track(&mut p, false, &commit, 1000);
    assert_eq!(
        line(&t),
        "tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567),zone=3,protoinfo=(state=ESTABLISHED)"
    );
    let mut p = build::udp(A, B, 5000, 53, 10);
    t.track(&mut p, false, &Request { zone: 0, ..commit }, 1000);
    let all = t.dump(&Filter::default(), 10, 1000);
    assert_eq!(
        format_entry(&all[0], true),
        "udp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=5000,dport=53),reply=(src=10.1.1.2,dst=10.1.1.1,sport=53,dport=5000),timeout=30"
    );
}

#[test]
fn flush_tuples_as_open_vswitch_writes_them() {
    // The man page's examples.
    let f = parse_flush(&[
        "ct_nw_src=10.1.1.1,ct_nw_dst=10.1.1.2,ct_nw_proto=1,icmp_type=8,icmp_code=0,icmp_id=10",
    ])
    .unwrap();
    assert_eq!(f.zone, Some(0));
    assert_eq!(
        f.orig,
        KeyFilter {
            src: Some(0x0a01_0101),
            dst: Some(0x0a01_0102),
            proto: Some(1),
            sport: Some(10),
            dport: Some(8 << 8),
        }
    );
    let f = parse_flush(&[
        "zone=5",
        "ct_ipv6_src=fc00::1,ct_ipv6_dst=fc00::2,ct_nw_proto=6,ct_tp_src=1,ct_tp_dst=2",
    ])
    .unwrap();
    assert_eq!(f.zone, Some(5));
    assert_eq!(
        f.orig.src,
        Some("fc00::1".parse::<Ipv6Addr>().unwrap().into())
    );
    assert_eq!(
        (f.orig.sport, f.orig.dport, f.orig.proto),
        (Some(1), Some(2), Some(6))
    );
    // The reply tuple alone, after an empty original one.
    let f = parse_flush(&["", "ct_nw_src=10.1.1.2,ct_nw_proto=17,ct_tp_src=53"]).unwrap();
    assert_eq!(f.orig.proto, Some(17));
    assert_eq!((f.reply.src, f.reply.sport), (Some(0x0a01_0102), Some(53)));
    // Nothing: everything; a zone alone: that zone.
    assert_eq!(parse_flush::<&str>(&[]).unwrap(), Filter::default());
    assert_eq!(parse_flush(&["zone=7"]).unwrap().zone, Some(7));
}

#[test]
fn flush_errors_name_the_field() {
    for (args, want) in [
        (
            &["ct_nw_src=10.1.1"][..],
            "ct_nw_src: \"10.1.1\" is not an IPv4 address",
        ),
        (
            &["ct_nw_src=10.1.1.1,ct_ipv6_dst=::1"],
            "ct_ipv6_dst: the tuple's other addresses are IPv4",
        ),
        (&["ct_tp_src=80"], "a port needs ct_nw_proto"),
        (&["ct_nw_proto=6,icmp_type=8"], "need ct_nw_proto=1"),
        (&["ct_nw_proto=1,ct_tp_dst=8"], "ICMP has no ports"),
        (
            &["ct_nw_proto=300"],
            "ct_nw_proto: \"300\" is not a protocol",
        ),
        (&["ct_nw_src="], "ct_nw_src: missing value"),
        (
            &["ct_nw_src=1.1.1.1,ct_nw_src=1.1.1.2"],
            "ct_nw_src is set more than once",
        ),
        (&["nw_src=1.1.1.1"], "nw_src: not a conntrack tuple field"),
        (&["zone=70000"], "zone: \"70000\" is not a zone"),
        (&["mark=1"], "mark=1: flushing by mark"),
        (&["a=1", "b=2", "c=3"], "\"c=3\": unexpected"),
    ] {
        let e = parse_flush(args).unwrap_err();
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[test]
fn flush_filter_selects_what_it_names() {
    let t = Tracker::default();
    let commit = Request {
        commit: true,
        ..Request::default()
    };
    for (sport, zone) in [(1000, 0), (1001, 0), (1002, 9)] {
        let mut p = build::udp(A, B, sport, 53, 0);
        t.track(&mut p, false, &Request { zone, ..commit }, 0);
    }
    let mut p = build::echo(A, B, 77, 1, false);
    t.track(&mut p, false, &commit, 0);
    let f = parse_flush(&["ct_nw_proto=17,ct_tp_src=1001"]).unwrap();
    assert_eq!(t.flush(&f), 1);
    let f = parse_flush(&["ct_nw_src=10.1.1.1,ct_nw_proto=1,icmp_id=77"]).unwrap();
    assert_eq!(t.flush(&f), 1);
    assert_eq!(t.flush(&parse_flush(&["zone=9"]).unwrap()), 1);
    assert_eq!(t.len(), 1);
}

#[test]
fn limits_and_timeouts() {
    assert_eq!(parse_zone_limit("zone=1,limit=5"), Ok((1, 5)));
    assert_eq!(parse_zone_limit("limit=0,zone=0x10"), Ok((16, 0)));
    for (s, want) in [
        ("zone=1", "give zone=N,limit=M"),
        ("zone=1,limit=x", "limit: \"x\" is not a limit"),
        ("zone=1,max=3", "max: not a zone limit field"),
        ("zone=,limit=3", "zone: missing value"),
    ] {
        let e = parse_zone_limit(s).unwrap_err();
        assert!(e.contains(want), "{s}: {e}");
    }
    assert_eq!(parse_default_limit("default=10"), Ok(10));
    assert!(parse_default_limit("default=-1")
        .unwrap_err()
        .contains("default"));
    assert_eq!(parse_zones("zone=1,2,3"), Ok(vec![1, 2, 3]));
    assert!(parse_zones("zone=1,x").unwrap_err().contains("\"x\""));
    assert_eq!(
        format_zone_limits(10, &[(1, 5, 0), (2, 10, 0)]),
        "default limit=10\nzone=1,limit=5,count=0\nzone=2,limit=10,count=0\n"
    );
    assert_eq!(parse_timeout("udp=40"), Ok(("udp", 40)));
    assert!(parse_timeout("udp=0").unwrap_err().contains("at least 1"));
    assert!(parse_timeout("tcp=5")
        .unwrap_err()
        .contains("unknown conntrack timeout `tcp`"));
    assert!(parse_timeout("udp").unwrap_err().contains("NAME=SECONDS"));
}
