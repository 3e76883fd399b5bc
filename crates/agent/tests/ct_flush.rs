//! NXT_CT_FLUSH_ZONE and NXT_CT_FLUSH from a controller: the connections
//! Open vSwitch 3.1 would take out of its tracker go from the pipeline's
//! (`lib/ct-dpif.c` ct_dpif_flush: a zone; everything; one connection by
//! a full original tuple, in either direction, zone 0 without a zone;
//! else every connection whose tuples match what is given, ICMP ids,
//! types and codes compared whole). Nothing is answered; a malformed
//! message is refused with Open vSwitch's error and flushes nothing. The
//! last test sends them with ovs-ofctl 3.1 (`ct-flush-zone`, `ct-flush`).
//!
//! Needs `ovs-ofctl` (scripts/setup.sh installs it): without it the last
//! test fails, it does not skip.

use std::net::Ipv4Addr;

use agent::{Agent, ConnId};
use conntrack::build::{self, Ip, Seg};
use conntrack::{Filter, NatKind, NatRange, NatSpec, Request};
use ofp::msg::ct_flush::{CtFlush, CtTuple};
use ofp::msg::nxt::{NxtMsg, NXBRC_MUST_BE_ZERO, NXT_CT_FLUSH, NXT_CT_FLUSH_ZONE, NX_VENDOR_ID};
use ofp::msg::simple::{ControllerRole, ExperimenterMsg, Hello, Role};
use ofp::Message;
use pipeline::Pipeline;

mod common;
use common::replies;

type Dp = common::Holding;

const A: [u8; 4] = [10, 0, 0, 1];
const B: [u8; 4] = [10, 0, 0, 2];
const C: [u8; 4] = [10, 0, 0, 3];
const D: [u8; 4] = [10, 0, 0, 9];
const NAT: [u8; 4] = [192, 168, 1, 1];
const V6A: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const V6B: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

fn agent() -> Agent<Dp> {
    let mut a = Agent::new(
        1,
        Pipeline::new(pipeline::Config::default()),
        Dp::default(),
        "br0",
    );
    a.handle_timeout(0);
    a
}

fn open(a: &mut Agent<Dp>) -> ConnId {
    let id = a.connect(0);
    replies(a, id);
    assert!(a.handle_input(id, &Message::Hello(Hello::ours()).to_bytes(1), 0));
    replies(a, id);
    id
}

fn syn(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> Vec<u8> {
    build::tcp(
        Ip::V4(src),
        Ip::V4(dst),
        &Seg {
            sport,
            dport,
            seq: 1000,
            ack: 0,
            flags: 0x02,
            win: 65535,
            wscale: None,
        },
        0,
    )
}

/// The connections every test starts from, by name:
/// * `tcp0`: TCP 10.0.0.1:1000 -> 10.0.0.2:80, zone 0;
/// * `tcp5`: the same in zone 5;
/// * `udp5`: UDP 10.0.0.1:53000 -> 10.0.0.3:53, zone 5;
/// * `udp6`: UDP [fd00::1]:5000 -> [fd00::2]:53, zone 0;
/// * `echo`: ICMP echo 10.0.0.1 -> 10.0.0.2, id 7, zone 0;
/// * `snat`: TCP 10.0.0.9:2000 -> 10.0.0.2:80 in zone 7, source-NATed
///   to 192.168.1.1:40000 (its reply key 10.0.0.2:80 -> 192.168.1.1:40000).
fn fill(a: &Agent<Dp>) {
    let t = a.pipeline().conntrack();
    t.flush(&Filter::default());
    let commit = |zone| Request {
        zone,
        commit: true,
        ..Request::default()
    };
    let n = u32::from_be_bytes(NAT) as u128;
    let snat = Request {
        nat: Some(NatSpec {
            range: Some(NatRange {
                kind: NatKind::Src,
                addr_min: n,
                addr_max: n,
                port_min: 40000,
                port_max: 40000,
                random: false,
                persistent: false,
            }),
        }),
        ..commit(7)
    };
    for (mut p, v6, req) in [
        (syn(A, 1000, B, 80), false, commit(0)),
        (syn(A, 1000, B, 80), false, commit(5)),
        (
            build::udp(Ip::V4(A), Ip::V4(C), 53000, 53, 4),
            false,
            commit(5),
        ),
        (
            build::udp(Ip::V6(V6A), Ip::V6(V6B), 5000, 53, 4),
            true,
            commit(0),
        ),
        (
            build::echo(Ip::V4(A), Ip::V4(B), 7, 1, false),
            false,
            commit(0),
        ),
        (syn(D, 2000, B, 80), false, snat),
    ] {
        let v = t.track(&mut p, v6, &req, 0);
        assert_eq!(v.state & conntrack::state::NEW, conntrack::state::NEW);
    }
    assert_eq!(t.len(), 6);
}

/// The names of the connections left.
fn left(a: &Agent<Dp>) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = a
        .pipeline()
        .conntrack()
        .dump(&Filter::default(), 100, 1)
        .into_iter()
        .map(|e| {
            let k = e.conn.key[0];
            match (k.zone, k.proto, k.v6, k.src_addr() as u32) {
                (0, 6, false, _) => "tcp0",
                (5, 6, _, _) => "tcp5",
                (5, 17, _, _) => "udp5",
                (0, 17, true, _) => "udp6",
                (0, 1, _, _) => "echo",
                (7, 6, _, _) => "snat",
                other => panic!("{other:?}"),
            }
        })
        .collect();
    v.sort();
    v
}

fn all_but(gone: &[&str]) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = ["echo", "snat", "tcp0", "tcp5", "udp5", "udp6"]
        .into_iter()
        .filter(|n| !gone.contains(n))
        .collect();
    v.sort();
    v
}

/// Sends `m` and a barrier: what came back before the barrier reply.
fn send(a: &mut Agent<Dp>, id: ConnId, m: &Message) -> Vec<Message> {
    assert!(a.handle_input(id, &m.to_bytes(10), 0));
    assert!(a.handle_input(id, &Message::BarrierRequest.to_bytes(11), 0));
    let mut r = replies(a, id);
    assert!(
        matches!(r.last(), Some((11, Message::BarrierReply))),
        "{r:?}"
    );
    r.pop();
    r.into_iter().map(|(_, m)| m).collect()
}

fn v4(a: [u8; 4]) -> u128 {
    u128::from(Ipv4Addr::from(a).to_ipv6_mapped())
}

fn tuple(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> CtTuple {
    CtTuple {
        src: if src == [0; 4] { 0 } else { v4(src) },
        dst: if dst == [0; 4] { 0 } else { v4(dst) },
        src_port: sport,
        dst_port: dport,
        ..CtTuple::default()
    }
}

fn flush(zone: Option<u16>, ip_proto: u8, orig: CtTuple, reply: CtTuple) -> Message {
    NxtMsg::CtFlush(CtFlush {
        zone,
        ip_proto,
        orig,
        reply,
    })
    .message()
}

#[test]
fn flush_zone_takes_the_zone() {
    let mut a = agent();
    let id = open(&mut a);
    fill(&a);
    assert!(send(&mut a, id, &NxtMsg::CtFlushZone(5).message()).is_empty());
    assert_eq!(left(&a), all_but(&["tcp5", "udp5"]));
    // A zone with nothing in it: nothing happens, nothing is answered.
    assert!(send(&mut a, id, &NxtMsg::CtFlushZone(9).message()).is_empty());
    assert_eq!(left(&a), all_but(&["tcp5", "udp5"]));
    assert!(send(&mut a, id, &NxtMsg::CtFlushZone(0).message()).is_empty());
    assert_eq!(left(&a), vec!["snat"]);
}

#[test]
fn flush_with_nothing_to_match() {
    let mut a = agent();
    let id = open(&mut a);
    fill(&a);
    let none = CtTuple::default();
    // A zone only: that zone.
    assert!(send(&mut a, id, &flush(Some(7), 0, none, none)).is_empty());
    assert_eq!(left(&a), all_but(&["snat"]));
    // Nothing at all: every connection of every zone.
    assert!(send(&mut a, id, &flush(None, 0, none, none)).is_empty());
    assert!(left(&a).is_empty());
    // ICMP fields without a protocol say nothing (Open vSwitch's
    // ofp_ct_match_is_zero): everything again.
    fill(&a);
    let icmp = CtTuple {
        icmp_id: 99,
        icmp_type: 3,
        ..CtTuple::default()
    };
    assert!(send(&mut a, id, &flush(None, 0, icmp, none)).is_empty());
    assert!(left(&a).is_empty());
}

#[test]
fn flush_by_five_tuple() {
    let mut a = agent();
    let id = open(&mut a);
    fill(&a);
    let none = CtTuple::default();
    // Without a zone, zone 0 only: tcp5 (the same tuple in zone 5) stays.
    let m = flush(None, 6, tuple(A, 1000, B, 80), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&["tcp0"]));
    // The reply direction's tuple finds the connection too.
    let m = flush(Some(5), 6, tuple(B, 80, A, 1000), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&["tcp0", "tcp5"]));
    // A translated connection by its reply key (to the NAT address) ...
    fill(&a);
    let m = flush(Some(7), 6, tuple(B, 80, NAT, 40000), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&["snat"]));
    // ... but not by the untranslated reverse, which no packet carries.
    fill(&a);
    let m = flush(Some(7), 6, tuple(B, 80, D, 2000), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&[]));
    // The wrong protocol: nothing.
    let m = flush(None, 17, tuple(A, 1000, B, 80), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&[]));
    // ICMP: addresses, id, type and code; the reply's type finds it too.
    let echo = |ty| CtTuple {
        icmp_id: 7,
        icmp_type: ty,
        ..tuple(A, 0, B, 0)
    };
    let m = flush(None, 1, echo(0), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&[]), "type 0 from A is no key of it");
    let m = flush(None, 1, echo(8), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&["echo"]));
    fill(&a);
    let reply = CtTuple {
        icmp_id: 7,
        ..tuple(B, 0, A, 0)
    };
    assert!(send(&mut a, id, &flush(None, 1, reply, none)).is_empty());
    assert_eq!(left(&a), all_but(&["echo"]));
}

#[test]
fn flush_by_partial_tuples() {
    let mut a = agent();
    let id = open(&mut a);
    let none = CtTuple::default();
    // A protocol only, every zone.
    fill(&a);
    assert!(send(&mut a, id, &flush(None, 17, none, none)).is_empty());
    assert_eq!(left(&a), all_but(&["udp5", "udp6"]));
    // A source address only: the IPv4 connections from it, every zone
    // (not udp6, of the other family; not snat).
    fill(&a);
    let m = flush(None, 0, tuple(A, 0, [0; 4], 0), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), vec!["snat", "udp6"]);
    // ... in one zone.
    fill(&a);
    let m = flush(Some(5), 0, tuple(A, 0, [0; 4], 0), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&["tcp5", "udp5"]));
    // A destination port with its protocol.
    fill(&a);
    let m = flush(None, 6, tuple([0; 4], 0, [0; 4], 80), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&["tcp0", "tcp5", "snat"]));
    // The reply tuple: the translated connection by its NAT address.
    fill(&a);
    let m = flush(None, 0, none, tuple([0; 4], 0, NAT, 0));
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&["snat"]));
    // Both tuples must match.
    fill(&a);
    let m = flush(None, 6, tuple(A, 0, [0; 4], 0), tuple([0; 4], 0, NAT, 0));
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&[]));
    // IPv6 addresses.
    let m = flush(
        None,
        0,
        CtTuple {
            dst: u128::from_be_bytes(V6B),
            ..CtTuple::default()
        },
        none,
    );
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&["udp6"]));
    // ICMP compares id, type and code whole, 0 included: a source address
    // alone matches no echo (its reply tuple's id is 7, not 0) ...
    fill(&a);
    let m = flush(None, 1, tuple(A, 0, [0; 4], 0), none);
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&[]));
    // ... with both directions' id and type it does.
    let m = flush(
        None,
        1,
        CtTuple {
            icmp_id: 7,
            icmp_type: 8,
            ..tuple(A, 0, [0; 4], 0)
        },
        CtTuple {
            icmp_id: 7,
            ..CtTuple::default()
        },
    );
    assert!(send(&mut a, id, &m).is_empty());
    assert_eq!(left(&a), all_but(&["echo"]));
}

#[test]
fn malformed_flushes_are_refused_and_flush_nothing() {
    let mut a = agent();
    let id = open(&mut a);
    fill(&a);
    let raw = |exp_type, data: Vec<u8>| {
        Message::Experimenter(ExperimenterMsg {
            experimenter: NX_VENDOR_ID,
            exp_type,
            data: data.into(),
        })
    };
    // Padding not zero; a body of the wrong length.
    for (m, code) in [
        (
            raw(NXT_CT_FLUSH_ZONE, vec![0, 0, 0, 1, 0, 0, 0, 5]),
            NXBRC_MUST_BE_ZERO,
        ),
        (
            raw(NXT_CT_FLUSH_ZONE, vec![0, 5]),
            ofp::error::ErrorCode::BAD_LEN,
        ),
        (
            raw(NXT_CT_FLUSH, vec![0, 1, 0, 0, 0, 0, 0, 0]),
            NXBRC_MUST_BE_ZERO,
        ),
        (
            raw(NXT_CT_FLUSH, vec![0; 12]),
            ofp::error::ErrorCode::BAD_LEN,
        ),
        // A property running past the message.
        (
            raw(
                NXT_CT_FLUSH,
                vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 12, 0, 0, 0, 0],
            ),
            ofp::msg::ct_flush::OFPBPC_BAD_LEN,
        ),
    ] {
        match &send(&mut a, id, &m)[..] {
            [Message::Error(e)] => assert_eq!(e.code, code, "{m:?}"),
            other => panic!("{m:?}: {other:?}"),
        }
    }
    assert_eq!(left(&a), all_but(&[]));
}

#[test]
fn a_slave_may_flush() {
    let mut a = agent();
    let id = open(&mut a);
    fill(&a);
    let slave = Message::RoleRequest(Role {
        role: ControllerRole::Slave,
        generation_id: 1,
    });
    assert!(matches!(
        &send(&mut a, id, &slave)[..],
        [Message::RoleReply(_)]
    ));
    assert!(send(&mut a, id, &NxtMsg::CtFlushZone(0).message()).is_empty());
    assert_eq!(left(&a), all_but(&["tcp0", "udp6", "echo"]));
}

/// ovs-ofctl 3.1 as the controller: `ct-flush-zone` and `ct-flush` with
/// a zone, tuples (`ct_nw_src=...`) or nothing.
#[test]
fn ovs_ofctl_flushes() {
    let dir = std::env::temp_dir().join(format!("sluice-ctflush-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("br0.mgmt");
    let mut a = agent();
    // Each: what ovs-ofctl is asked, and which connections are left.
    let cases: [(&[&str], Vec<&str>); 8] = [
        (&["ct-flush-zone", "SW", "5"], all_but(&["tcp5", "udp5"])),
        (&["ct-flush", "SW", "zone=7"], all_but(&["snat"])),
        (
            &[
                "ct-flush",
                "SW",
                "ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=6,ct_tp_src=1000,ct_tp_dst=80",
            ],
            all_but(&["tcp0"]),
        ),
        (&["ct-flush", "SW", "ct_nw_src=10.0.0.1"], vec!["snat", "udp6"]),
        (&["ct-flush", "SW", "", "ct_nw_dst=192.168.1.1"], all_but(&["snat"])),
        (
            &[
                "ct-flush",
                "SW",
                "zone=0",
                "ct_nw_src=10.0.0.1,ct_nw_dst=10.0.0.2,ct_nw_proto=1,icmp_id=7,icmp_type=8,icmp_code=0",
            ],
            all_but(&["echo"]),
        ),
        (&["ct-flush", "SW", "ct_ipv6_dst=fd00::2"], all_but(&["udp6"])),
        (&["ct-flush", "SW"], vec![]),
    ];
    for (args, want) in cases {
        fill(&a);
        let (ok, _, err) = common::ovs_ofctl(&mut a, &sock, args);
        assert!(ok, "{args:?}: {err}");
        assert_eq!(left(&a), want, "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
