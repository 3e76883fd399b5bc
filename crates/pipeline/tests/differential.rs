//! Differential tests: the compiled classifier against a plain linear scan,
//! over random rule sets (overlapping masks, shared priorities), random
//! packets and random sequences of inserts and removals. Both must pick the
//! same rule every time: highest priority, ties to the lowest id.

use proptest::prelude::*;

use ofp::oxm::{Match, Oxm, OxmField as F};
use packet::{flags, slots as s, FlowKey};
use pipeline::{compile, Classifier, MaskedKey, RuleId};

/// The reference: a list scanned from end to end.
#[derive(Default, Clone)]
struct Linear(Vec<(RuleId, MaskedKey, u16)>);

impl Linear {
    fn lookup(&self, k: &FlowKey) -> Option<RuleId> {
        self.0
            .iter()
            .filter(|(_, m, _)| m.matches(k))
            .max_by(|a, b| a.2.cmp(&b.2).then(b.0.cmp(&a.0)))
            .map(|r| r.0)
    }
}

const NW: [(u32, u32); 5] = [
    (0x0a00_0000, 0xff00_0000),
    (0x0a01_0000, 0xffff_0000),
    (0x0a01_0203, 0xffff_ffff),
    (0x0a01_0200, 0xffff_ff00),
    (0xc0a8_0000, 0xffff_0000),
];

/// A random valid match over a small universe of values, so rules overlap.
fn rule_match() -> impl Strategy<Value = Match> {
    (
        proptest::option::of(1u32..4),
        0u8..4,
        proptest::option::of(0usize..NW.len()),
        proptest::option::of(0usize..NW.len()),
        proptest::option::of(prop_oneof![Just(80u16), Just(443), Just(22)]),
        proptest::option::of(0u8..3),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(in_port, proto, src, dst, tp, vlan, mcast)| {
            let mut m = Match::new();
            if let Some(p) = in_port {
                m = m.with(Oxm::exact(F::InPort, p as u128));
            }
            if let Some(mc) = mcast {
                let v = if mc { 1u128 << 40 } else { 0 };
                m = m.with(Oxm::masked(F::EthDst, v, 1 << 40));
            }
            match vlan {
                Some(0) => m = m.with(Oxm::exact(F::VlanVid, 0)),
                Some(1) => m = m.with(Oxm::exact(F::VlanVid, 0x1005)),
                Some(_) => m = m.with(Oxm::masked(F::VlanVid, 0x1000, 0x1000)),
                None => {}
            }
            if proto > 0 {
                m = m.with(Oxm::exact(F::EthType, 0x0800));
                for (f, pick) in [(F::Ipv4Src, src), (F::Ipv4Dst, dst)] {
                    if let Some(i) = pick {
                        let (v, mask) = NW[i];
                        m = m.with(if mask == u32::MAX {
                            Oxm::exact(f, v as u128)
                        } else {
                            Oxm::masked(f, v as u128, mask as u128)
                        });
                    }
                }
                if proto >= 2 {
                    let (p, f) = if proto == 2 {
                        (6, F::TcpDst)
                    } else {
                        (17, F::UdpDst)
                    };
                    m = m.with(Oxm::exact(F::IpProto, p));
                    if let Some(port) = tp {
                        m = m.with(Oxm::exact(f, port as u128));
                    }
                }
            }
            m
        })
}

/// A random packet key over the same universe (plus values no rule uses).
fn packet_key() -> impl Strategy<Value = FlowKey> {
    (
        1u64..5,
        0u8..3,
        prop_oneof![
            Just(0x0a01_0203u64),
            Just(0x0a01_0299),
            Just(0x0a02_0001),
            Just(0xc0a8_0101),
            Just(0x0101_0101)
        ],
        prop_oneof![Just(0x0a01_0203u64), Just(0x0a00_0001), Just(0xc0a8_0005)],
        prop_oneof![Just(80u64), Just(443), Just(22), Just(8080)],
        prop_oneof![Just(0u64), Just(0x1005), Just(0x1007)],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(port, kind, src, dst, tp, vlan, mcast, l4ok)| {
            let mut k = FlowKey::default();
            k.set(s::IN_PORT, port);
            k.set(s::IN_PHY_PORT, port);
            k.set(
                s::ETH_DST,
                if mcast {
                    0x0100_0000_0001
                } else {
                    0x0200_0000_0001
                },
            );
            k.set(s::VLAN_VID, vlan);
            let mut f = flags::ETH;
            if vlan != 0 {
                f |= flags::VLAN;
            }
            if kind == 0 {
                k.set(s::ETH_TYPE, 0x0806);
            } else {
                k.set(s::ETH_TYPE, 0x0800);
                k.set(s::NW_SRC, src);
                k.set(s::NW_DST, dst);
                k.set(s::IP_PROTO, if kind == 1 { 6 } else { 17 });
                f |= flags::IPV4;
                if l4ok {
                    k.set(s::TP_DST, tp);
                    f |= flags::L4;
                }
            }
            k.set(s::FLAGS, f);
            k
        })
}

#[derive(Debug, Clone)]
enum Op {
    Insert(Match, u16),
    /// Remove the n-th live rule (modulo the count).
    Remove(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (rule_match(), 0u16..6).prop_map(|(m, p)| Op::Insert(m, p)),
        1 => any::<usize>().prop_map(Op::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn classifier_agrees_with_linear_scan(ops in proptest::collection::vec(op(), 1..60),
                                          packets in proptest::collection::vec(packet_key(), 1..40)) {
        let mut c: Classifier = Classifier::new();
        let mut r = Linear::default();
        let mut next_id: RuleId = 0;
        for (step, o) in ops.into_iter().enumerate() {
            match o {
                Op::Insert(m, prio) => {
                    let key = compile(&m).expect("generated matches are valid");
                    c.insert(next_id, &key, prio);
                    r.0.push((next_id, key, prio));
                    next_id += 1;
                }
                Op::Remove(n) if !r.0.is_empty() => {
                    let (id, key, prio) = r.0.remove(n % r.0.len());
                    prop_assert!(c.remove(id, &key, prio));
                    prop_assert!(!c.remove(id, &key, prio), "removed twice");
                }
                Op::Remove(_) => {}
            }
            prop_assert_eq!(c.len(), r.0.len());
            for (i, k) in packets.iter().enumerate() {
                prop_assert_eq!(c.lookup(k), r.lookup(k), "step {} packet {}", step, i);
            }
        }
    }

    #[test]
    fn snapshots_are_isolated(rules in proptest::collection::vec((rule_match(), 0u16..6), 1..30),
                              packets in proptest::collection::vec(packet_key(), 1..20)) {
        let mut c: Classifier = Classifier::new();
        for (i, (m, p)) in rules.iter().enumerate() {
            c.insert(i as RuleId, &compile(m).unwrap(), *p);
        }
        let before: Vec<_> = packets.iter().map(|k| c.lookup(k)).collect();
        let snapshot = c.clone();
        // Change the working copy a lot; the snapshot must not see any of it.
        for (i, (m, p)) in rules.iter().enumerate() {
            c.remove(i as RuleId, &compile(m).unwrap(), *p);
        }
        c.insert(999, &MaskedKey::default(), 100);
        let after: Vec<_> = packets.iter().map(|k| snapshot.lookup(k)).collect();
        prop_assert_eq!(before, after);
        prop_assert!(packets.iter().all(|k| c.lookup(k) == Some(999)));
    }
}
