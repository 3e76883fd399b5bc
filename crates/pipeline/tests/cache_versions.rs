//! The exact-match cache across publications: a worker whose cache lives
//! through many snapshots (entries kept where the change log shows no rule
//! change touched them) must answer every packet as a worker with no cache
//! does, after any sequence of adds, modifies, deletes, strict or not, in
//! two tables; and a flow-mod must not empty the entries it cannot affect.

use etherparse::PacketBuilder;
use ofp::msg::flow::{FlowMod, FlowModCommand};
use ofp::text::parse_flow_mod;
use pipeline::{Config, Output, Pipeline, PortState, Worker};
use proptest::prelude::*;

fn frame(in_host: u8, dst_host: u8, dport: u16) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, in_host], [2, 0, 0, 0, 0, dst_host])
        .ipv4([10, 0, 0, in_host], [10, 0, 0, dst_host], 64)
        .tcp(1000 + in_host as u16, dport, 1, 1000);
    let mut v = Vec::new();
    b.write(&mut v, b"x").unwrap();
    v
}

fn pipeline(change_log: usize) -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 2,
        change_log,
        ..Config::default()
    });
    for n in 1..=4 {
        p.set_port(PortState::up(n));
    }
    p
}

/// A flow over a small universe, so rules overlap: in_port, nw_dst and
/// tp_dst each present or not, in table 0 or 1; table 0 sometimes goes on
/// to table 1.
fn flow() -> impl Strategy<Value = String> {
    (
        0u8..2,
        0u16..4,
        proptest::option::of(1u8..4),
        proptest::option::of(1u8..4),
        proptest::option::of(prop_oneof![Just(80u16), Just(443)]),
        1u8..5,
        any::<bool>(),
    )
        .prop_map(|(table, prio, inp, dst, dport, out, goto)| {
            let mut m = vec![format!("table={table}"), format!("priority={prio}")];
            if let Some(i) = inp {
                m.push(format!("in_port={i}"));
            }
            if dst.is_some() || dport.is_some() {
                m.push("tcp".into());
            }
            if let Some(d) = dst {
                m.push(format!("nw_dst=10.0.0.{d}"));
            }
            if let Some(p) = dport {
                m.push(format!("tp_dst={p}"));
            }
            let act = if table == 0 && goto {
                "goto_table:1".to_string()
            } else {
                format!("output:{out}")
            };
            format!("{},actions={act}", m.join(","))
        })
}

#[derive(Debug, Clone)]
enum Op {
    Add(String),
    Modify(String, bool),
    Delete(String, bool),
    /// Publish a snapshot and run the packets.
    Publish,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => flow().prop_map(Op::Add),
        1 => (flow(), any::<bool>()).prop_map(|(f, s)| Op::Modify(f, s)),
        1 => (flow(), any::<bool>()).prop_map(|(f, s)| Op::Delete(f, s)),
        3 => Just(Op::Publish),
    ]
}

fn flow_mod(text: &str, command: FlowModCommand) -> FlowMod {
    let mut fm = parse_flow_mod(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    fm.command = command;
    fm
}

fn ports(outs: &[Output]) -> Vec<u32> {
    outs.iter().map(|o| o.port).collect()
}

/// Every packet of the universe (in_port, destination host, port).
fn packets() -> Vec<(u32, Vec<u8>)> {
    let mut v = Vec::new();
    for i in 1..=4u8 {
        for d in 1..=4u8 {
            for dport in [80, 443, 22] {
                v.push((i as u32, frame(i, d, dport)));
            }
        }
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1500, ..ProptestConfig::default() })]

    #[test]
    fn a_cache_kept_across_publications_answers_as_the_classifier(
        ops in proptest::collection::vec(op(), 1..40),
        log in prop_oneof![Just(1usize), Just(4), Just(16)],
    ) {
        let mut p = pipeline(log);
        let mut cached = Worker::new(0);
        let pkts = packets();
        for (step, o) in ops.iter().enumerate() {
            // Refusals (a modify or delete that finds nothing is not one;
            // a goto past the last table is) leave the pipeline unchanged.
            let _ = match o {
                Op::Add(f) => p.flow_mod(&flow_mod(f, FlowModCommand::Add), 0),
                Op::Modify(f, strict) => p.flow_mod(&flow_mod(f, if *strict { FlowModCommand::ModifyStrict } else { FlowModCommand::Modify }), 0),
                Op::Delete(f, strict) => p.flow_mod(&flow_mod(f, if *strict { FlowModCommand::DeleteStrict } else { FlowModCommand::Delete }), 0),
                Op::Publish => {
                    let snap = p.snapshot();
                    let mut fresh = Worker::with_cache(0, 0);
                    for (k, (in_port, f)) in pkts.iter().enumerate() {
                        let want = ports(fresh.process(&snap, *in_port, &mut f.clone(), 1));
                        let got = ports(cached.process(&snap, *in_port, &mut f.clone(), 1));
                        prop_assert_eq!(got, want, "step {} packet {}", step, k);
                    }
                    continue;
                }
            };
        }
    }
}

/// A flow-mod keeps the cached answers it cannot change, and empties the
/// ones it does; with the log off (the behaviour before there was one)
/// every publication empties everything.
#[test]
fn a_flow_mod_empties_only_the_entries_it_touches() {
    for (log, kept_after_mod) in [(16usize, true), (0, false)] {
        let mut p = pipeline(log);
        p.flow_mod(
            &flow_mod("priority=1,in_port=1,actions=output:2", FlowModCommand::Add),
            0,
        )
        .unwrap();
        p.flow_mod(
            &flow_mod("priority=1,in_port=2,actions=output:1", FlowModCommand::Add),
            0,
        )
        .unwrap();
        let mut w = Worker::new(0);
        let snap = p.snapshot();
        let (a, b) = (frame(1, 2, 80), frame(2, 1, 80));
        w.process(&snap, 1, &mut a.clone(), 1);
        w.process(&snap, 2, &mut b.clone(), 1);
        let misses = w.cache_stats().1;
        // A new rule for port 2 only.
        p.flow_mod(
            &flow_mod(
                "priority=5,in_port=2,tcp,actions=output:3",
                FlowModCommand::Add,
            ),
            0,
        )
        .unwrap();
        let snap = p.snapshot();
        let out_a = ports(w.process(&snap, 1, &mut a.clone(), 1));
        let out_b = ports(w.process(&snap, 2, &mut b.clone(), 1));
        assert_eq!((out_a, out_b), (vec![2], vec![3]), "log {log}");
        let (kept, new_misses) = (w.cache_kept(), w.cache_stats().1 - misses);
        if kept_after_mod {
            assert_eq!(
                (kept, new_misses),
                (1, 1),
                "port 1 kept, port 2 looked up again"
            );
        } else {
            assert_eq!((kept, new_misses), (0, 2), "log off: both looked up again");
        }
    }
}
