//! Random bytes and random packet sequences through one tracker: no
//! panic, every verdict tracked, the limit held, the index consistent
//! (the fuzz target `fuzz/fuzz_targets/conntrack.rs` goes further).

use conntrack::build::{self, Ip, Seg};
use conntrack::state::TRK;
use conntrack::{Limits, NatKind, NatRange, NatSpec, Request, Timeouts, Tracker};
use proptest::prelude::*;

const LIMIT: u64 = 6;

fn check(t: &Tracker) {
    let n = t.len() as usize;
    let idx = t.indexed();
    assert!(t.len() <= LIMIT, "{n} connections");
    assert!(
        idx >= n && idx <= 2 * n,
        "{idx} index entries for {n} connections"
    );
}

#[derive(Debug, Clone)]
enum Op {
    Raw(Vec<u8>, bool),
    Tcp {
        v6: bool,
        fwd: bool,
        flags: u8,
        seq: u32,
        ack: u32,
        len: usize,
        flip: Option<(usize, u8)>,
    },
    Udp {
        v6: bool,
        fwd: bool,
        port: u16,
    },
    Echo {
        v6: bool,
        fwd: bool,
        reply: bool,
    },
    Error {
        v6: bool,
        fwd: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (proptest::collection::vec(any::<u8>(), 0..80), any::<bool>())
            .prop_map(|(b, v6)| Op::Raw(b, v6)),
        (
            any::<bool>(),
            any::<bool>(),
            0u8..0x40,
            any::<u32>(),
            any::<u32>(),
            0usize..64,
            proptest::option::of((0usize..200, 1u8..=255))
        )
            .prop_map(|(v6, fwd, flags, seq, ack, len, flip)| Op::Tcp {
                v6,
                fwd,
                flags,
                seq,
                ack,
                len,
                flip
            }),
        (any::<bool>(), any::<bool>(), 1000u16..1004).prop_map(|(v6, fwd, port)| Op::Udp {
            v6,
            fwd,
            port
        }),
        (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(v6, fwd, reply)| Op::Echo {
            v6,
            fwd,
            reply
        }),
        (any::<bool>(), any::<bool>()).prop_map(|(v6, fwd)| Op::Error { v6, fwd }),
    ]
}

fn ends(v6: bool, fwd: bool) -> (Ip, Ip) {
    let (a, b) = if v6 {
        let mut a = [0u8; 16];
        a[0] = 0xfd;
        let mut b = a;
        a[15] = 1;
        b[15] = 2;
        (Ip::V6(a), Ip::V6(b))
    } else {
        (Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]))
    };
    if fwd {
        (a, b)
    } else {
        (b, a)
    }
}

fn packet(o: &Op) -> (Vec<u8>, bool) {
    match o {
        Op::Raw(b, v6) => (b.clone(), *v6),
        Op::Tcp {
            v6,
            fwd,
            flags,
            seq,
            ack,
            len,
            flip,
        } => {
            let (a, b) = ends(*v6, *fwd);
            let (sport, dport) = if *fwd { (1000, 80) } else { (80, 1000) };
            let s = Seg {
                sport,
                dport,
                seq: *seq,
                ack: *ack,
                flags: *flags,
                win: 1000,
                wscale: (flags & 2 != 0).then_some(3),
            };
            let mut p = build::tcp(a, b, &s, *len);
            if let Some((at, x)) = flip {
                let at = at % p.len();
                p[at] ^= x;
            }
            (p, *v6)
        }
        Op::Udp { v6, fwd, port } => {
            let (a, b) = ends(*v6, *fwd);
            let (sp, dp) = if *fwd { (*port, 53) } else { (53, *port) };
            (build::udp(a, b, sp, dp, 4), *v6)
        }
        Op::Echo { v6, fwd, reply } => {
            let (a, b) = ends(*v6, *fwd);
            (build::echo(a, b, 9, 1, *reply), *v6)
        }
        Op::Error { v6, fwd } => {
            let (a, b) = ends(*v6, *fwd);
            let q = build::udp(b, a, 53, 1000, 4);
            (build::unreachable(a, b, &q), *v6)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_are_tracked_without_panic(b in proptest::collection::vec(any::<u8>(), 0..120), v6 in any::<bool>(), zone in 0u16..3) {
        let t = Tracker::default();
        let mut p = b;
        let v = t.track(&mut p, v6, &Request { zone, commit: true, ..Request::default() }, 1);
        prop_assert!(v.state & TRK != 0);
    }

    #[test]
    fn random_sequences_keep_the_table_consistent(ops in proptest::collection::vec((op(), 0u8..16, 0u64..5_000), 1..40)) {
        let t = Tracker::new(Timeouts::default(), Limits { total: LIMIT, zone_default: 0 });
        let mut now = 1_000;
        for (o, how, dt) in &ops {
            let (mut p, v6) = packet(o);
            let nat = (how & 8 != 0).then(|| NatSpec { range: Some(NatRange {
                kind: if how & 4 != 0 { NatKind::Src } else { NatKind::Dst },
                addr_min: if v6 { 0xfd00_0000_0000_0000_0000_0000_0000_0009 } else { 0x0a00_0009 },
                addr_max: if v6 { 0xfd00_0000_0000_0000_0000_0000_0000_0009 } else { 0x0a00_0009 },
                port_min: 2000, port_max: 2001, random: false, persistent: false,
            }) });
            let req = Request { zone: (how & 1) as u16, commit: how & 2 != 0, nat, ..Request::default() };
            let v = t.track(&mut p, v6, &req, now);
            prop_assert!(v.state & TRK != 0);
            check(&t);
            now += dt;
        }
        t.sweep(now + 10_000_000);
        prop_assert_eq!(t.len(), 0);
        prop_assert_eq!(t.indexed(), 0);
    }
}
