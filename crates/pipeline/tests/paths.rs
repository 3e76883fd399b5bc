//! The cache of whole walks (`pipeline::lookup::paths`) against no cache at all:
//! random multi-table pipelines with registers, resubmit (to other ports
//! and tables), goto_table, conjunctions and header edits; each packet
//! run several times through a worker with its caches (the first run
//! records, the others replay) and once through one without; the outputs
//! and the bytes of each must be the same. Flow-mods between the runs
//! (a new publication) must be seen at once.

use ofp::text::parse_flow_mod;
use pipeline::{Pipeline, Worker};
use proptest::prelude::*;

mod common;

fn frame(src: u8, dport: u16) -> Vec<u8> {
    common::tcp_frame(src, 0, 9, 1000, dport)
}

/// One random flow of table `t` (of 4).
fn flow() -> impl Strategy<Value = String> {
    let matches = prop_oneof![
        Just(String::new()),
        (1u8..4).prop_map(|p| format!("in_port={p},")),
        (0u8..4).prop_map(|v| format!("reg0={v},")),
        (0u8..3).prop_map(|v| format!("reg1={v}/0x3,")),
        (80u16..83).prop_map(|d| format!("tcp,tp_dst={d},")),
        (1u8..4).prop_map(|s| format!("ip,nw_src=10.0.0.{s},")),
    ];
    let action = prop_oneof![
        (1u32..5).prop_map(|p| format!("output:{p}")),
        (0u8..4).prop_map(|v| format!("load:{v}->NXM_NX_REG0[]")),
        (0u8..4).prop_map(|v| format!("set_field:{v}->reg1")),
        (1u8..4).prop_map(|t| format!("resubmit(,{t})")),
        (1u8..4, 1u8..4).prop_map(|(p, t)| format!("resubmit({p},{t})")),
        Just("move:NXM_NX_REG0[0..1]->NXM_NX_REG1[0..1]".to_string()),
        (1u8..4).prop_map(|s| format!("mod_nw_src:10.0.0.{s}")),
        Just("dec_ttl".to_string()),
    ];
    (
        0u8..4,
        0u16..4,
        matches,
        proptest::collection::vec(action, 0..4),
        proptest::option::of(1u8..4),
    )
        .prop_map(|(t, prio, m, acts, goto)| {
            let mut a = acts.join(",");
            if let Some(g) = goto.filter(|g| *g > t) {
                if !a.is_empty() {
                    a.push(',');
                }
                a.push_str(&format!("goto_table:{g}"));
            }
            if a.is_empty() {
                a.push_str("drop");
            }
            format!("table={t},priority={prio},{m}actions={a}")
        })
}

fn conj_flows() -> Vec<String> {
    vec![
        "table=1,priority=50,conj_id=7,actions=output:4".into(),
        "table=1,priority=60,ip,nw_src=10.0.0.1,actions=conjunction(7,1/2)".into(),
        "table=1,priority=60,tcp,tp_dst=81,actions=conjunction(7,2/2)".into(),
    ]
}

fn build(flows: &[String]) -> Pipeline {
    common::pipeline_of_valid(4, 4, flows)
}

type Seen = Vec<(u32, Vec<u8>)>;

fn run(w: &mut Worker, p: &mut Pipeline, in_port: u32, f: &[u8]) -> Seen {
    let snap = p.snapshot();
    let mut f = f.to_vec();
    let outs = w.process(&snap, in_port, &mut f, 0).to_vec();
    outs.into_iter()
        .map(|o| (o.port, o.data.unwrap_or_else(|| f.clone())))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
    #[test]
    fn replayed_walks_answer_as_fresh_lookups(
        flows in proptest::collection::vec(flow(), 1..30),
        conj in any::<bool>(),
        extra in flow(),
    ) {
        let mut all = flows.clone();
        if conj {
            all.extend(conj_flows());
        }
        let mut p = build(&all);
        let packets: Vec<(u32, Vec<u8>)> = (1u8..4)
            .flat_map(|s| (80u16..83).map(move |d| (s as u32, frame(s, d))))
            .collect();
        let mut cached = Worker::new(0);
        let multi = p.snapshot().multi_table;
        for round in 0..3 {
            for (port, f) in &packets {
                let want = run(&mut Worker::with_cache(0, 0), &mut p, *port, f);
                let got = run(&mut cached, &mut p, *port, f);
                prop_assert_eq!(&got, &want, "round {} port {}", round, port);
            }
            if round == 1 {
                // A new flow: the next round runs a new version.
                let fm = parse_flow_mod(&extra).unwrap();
                if ofp::msg::Message::FlowMod(fm.clone()).validate().is_ok() {
                    let _ = p.flow_mod(&fm, 0);
                }
            }
        }
        // Walks of two lookups or more were replayed.
        let (hits, _) = cached.path_stats();
        let walks_of_two = packets.iter().any(|(port, f)| {
            let mut w = Worker::new(0);
            run(&mut w, &mut p, *port, f);
            run(&mut w, &mut p, *port, f);
            w.path_stats().0 > 0
        });
        prop_assert!(!multi || !walks_of_two || hits > 0);
    }
}
