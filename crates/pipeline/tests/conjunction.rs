//! Open vSwitch's conjunctive matches through the pipeline: the example
//! of ovs-fields(7), several conjunctions sharing flows, the priority
//! rules (an ordinary flow of equal or higher priority wins; a satisfied
//! conjunction without a `conj_id` flow falls back to the ordinary one),
//! flows changed between conjunctive and ordinary by a modify, and the
//! exact-match cache kept right across those changes.

use ofp::text::parse_flow_mod;
use pipeline::{Config, Pipeline, PortState, Worker};

fn flow(p: &mut Pipeline, f: &str) {
    let fm = parse_flow_mod(f).unwrap_or_else(|e| panic!("{f}: {e}"));
    ofp::msg::Message::FlowMod(fm.clone())
        .validate()
        .unwrap_or_else(|e| panic!("{f}: {e}"));
    p.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{f}: {e}"));
}

fn pipeline(flows: &[&str]) -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 4,
        ..Config::default()
    });
    for n in 1..=8 {
        p.set_port(PortState::up(n));
    }
    for f in flows {
        flow(&mut p, f);
    }
    p
}

fn frame(src: u8, dst: u8, dport: u16) -> Vec<u8> {
    packet::wire::build::tcp_v4(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [10, 0, 0, src],
        [10, 0, 0, dst],
        1234,
        dport,
        2,
    )
}

fn outs(w: &mut Worker, p: &mut Pipeline, f: &[u8]) -> Vec<u32> {
    let snap = p.snapshot();
    let mut f = f.to_vec();
    w.process(&snap, 1, &mut f, 0)
        .iter()
        .map(|o| o.port)
        .collect()
}

/// The example of ovs-fields(7): ip_src in {1,4,6,7} and ip_dst in
/// {2,5,7,8} go to the conj_id flow (here output:3); the rest to the
/// table-miss flow (output:4).
const EXAMPLE: &[&str] = &[
    "conj_id=1234,actions=output:3",
    "ip,ip_src=10.0.0.1,actions=conjunction(1234, 1/2)",
    "ip,ip_src=10.0.0.4,actions=conjunction(1234, 1/2)",
    "ip,ip_src=10.0.0.6,actions=conjunction(1234, 1/2)",
    "ip,ip_src=10.0.0.7,actions=conjunction(1234, 1/2)",
    "ip,ip_dst=10.0.0.2,actions=conjunction(1234, 2/2)",
    "ip,ip_dst=10.0.0.5,actions=conjunction(1234, 2/2)",
    "ip,ip_dst=10.0.0.7,actions=conjunction(1234, 2/2)",
    "ip,ip_dst=10.0.0.8,actions=conjunction(1234, 2/2)",
    "priority=0,actions=output:4",
];

#[test]
fn the_manual_example_matches_the_cross_product() {
    let mut p = pipeline(EXAMPLE);
    for cached in [false, true] {
        let mut w = if cached {
            Worker::with_cache(0, 4096)
        } else {
            Worker::new(0)
        };
        for round in 0..2 {
            for src in 0..10u8 {
                for dst in 0..10u8 {
                    let want = if [1, 4, 6, 7].contains(&src) && [2, 5, 7, 8].contains(&dst) {
                        3
                    } else {
                        4
                    };
                    assert_eq!(
                        outs(&mut w, &mut p, &frame(src, dst, 80)),
                        vec![want],
                        "{src}->{dst} cached={cached} round={round}"
                    );
                }
            }
        }
    }
}

#[test]
fn conjunctive_flows_count_nothing_and_the_conj_id_flow_counts_its_packets() {
    let mut p = pipeline(EXAMPLE);
    let mut w = Worker::new(0);
    outs(&mut w, &mut p, &frame(1, 2, 80));
    outs(&mut w, &mut p, &frame(4, 8, 80));
    let counts: Vec<(String, u64)> = p
        .tables()
        .iter()
        .flat_map(|t| t.rules())
        .map(|r| {
            (
                ofp::text::format_instructions(&r.instructions),
                r.counters.totals().packets,
            )
        })
        .collect();
    for (acts, n) in counts {
        let want = if acts == "output:3" { 2 } else { 0 };
        assert_eq!(n, want, "{acts}");
    }
}

#[test]
fn priorities_decide_as_in_open_vswitch() {
    // An ordinary flow of the same priority as the conjunctive ones wins;
    // one below loses to a satisfied conjunction whose conj_id flow ranks
    // above it.
    let mut p = pipeline(&[
        "priority=16,conj_id=1,actions=output:3",
        "priority=20,ip,ip_src=10.0.0.1,actions=conjunction(1,1/2)",
        "priority=20,ip,ip_dst=10.0.0.2,actions=conjunction(1,2/2)",
        "priority=20,ip,ip_src=10.0.0.1,ip_dst=10.0.0.9,actions=output:5",
        "priority=15,ip,ip_src=10.0.0.1,actions=output:6",
    ]);
    let mut w = Worker::new(0);
    assert_eq!(outs(&mut w, &mut p, &frame(1, 2, 80)), vec![3]);
    assert_eq!(outs(&mut w, &mut p, &frame(1, 9, 80)), vec![5]);
    assert_eq!(outs(&mut w, &mut p, &frame(1, 3, 80)), vec![6]);
    // The conj_id lookup is an ordinary lookup: with the conj_id flow
    // below the priority-15 flow, that one answers.
    let mut fm = parse_flow_mod("priority=16,conj_id=1").unwrap();
    fm.command = ofp::msg::flow::FlowModCommand::DeleteStrict;
    p.flow_mod(&fm, 0).unwrap();
    flow(&mut p, "priority=10,conj_id=1,actions=output:3");
    assert_eq!(outs(&mut w, &mut p, &frame(1, 2, 80)), vec![6]);
    // A satisfied conjunction whose conj_id flow is missing: as if it had
    // not matched.
    let mut p = pipeline(&[
        "priority=20,ip,ip_src=10.0.0.1,actions=conjunction(9,1/2)",
        "priority=20,ip,ip_dst=10.0.0.2,actions=conjunction(9,2/2)",
        "priority=1,actions=output:7",
    ]);
    assert_eq!(outs(&mut Worker::new(0), &mut p, &frame(1, 2, 80)), vec![7]);
}

#[test]
fn one_flow_in_two_conjunctions_and_three_clauses() {
    let mut p = pipeline(&[
        "conj_id=1,actions=output:2",
        "conj_id=2,actions=output:3",
        "ip,ip_src=10.0.0.1,actions=conjunction(1,1/3),conjunction(2,1/2)",
        "ip,ip_dst=10.0.0.2,actions=conjunction(1,2/3)",
        "tcp,tp_dst=80,actions=conjunction(1,3/3)",
        "ip,ip_dst=10.0.0.3,actions=conjunction(2,2/2)",
        "priority=0,actions=output:4",
    ]);
    let mut w = Worker::with_cache(0, 1024);
    assert_eq!(outs(&mut w, &mut p, &frame(1, 2, 80)), vec![2]);
    assert_eq!(
        outs(&mut w, &mut p, &frame(1, 2, 81)),
        vec![4],
        "clause 3 missing"
    );
    assert_eq!(outs(&mut w, &mut p, &frame(1, 3, 81)), vec![3]);
}

#[test]
fn changes_reach_cached_answers() {
    let mut p = pipeline(EXAMPLE);
    let mut w = Worker::with_cache(0, 1024);
    assert_eq!(outs(&mut w, &mut p, &frame(2, 2, 80)), vec![4]);
    assert_eq!(outs(&mut w, &mut p, &frame(1, 2, 80)), vec![3]);
    // A new clause-1 flow makes 10.0.0.2 a member.
    flow(&mut p, "ip,ip_src=10.0.0.2,actions=conjunction(1234, 1/2)");
    assert_eq!(outs(&mut w, &mut p, &frame(2, 2, 80)), vec![3]);
    // The conj_id flow's actions change: cached answers follow.
    let mut fm = parse_flow_mod("conj_id=1234,actions=output:5").unwrap();
    fm.command = ofp::msg::flow::FlowModCommand::ModifyStrict;
    p.flow_mod(&fm, 0).unwrap();
    assert_eq!(outs(&mut w, &mut p, &frame(1, 2, 80)), vec![5]);
    // A clause flow turned into an ordinary one by a modify, and back.
    let mut fm = parse_flow_mod("ip,ip_src=10.0.0.1,actions=output:6").unwrap();
    fm.command = ofp::msg::flow::FlowModCommand::ModifyStrict;
    p.flow_mod(&fm, 0).unwrap();
    assert_eq!(outs(&mut w, &mut p, &frame(1, 9, 80)), vec![6]);
    let mut fm = parse_flow_mod("ip,ip_src=10.0.0.1,actions=conjunction(1234,1/2)").unwrap();
    fm.command = ofp::msg::flow::FlowModCommand::ModifyStrict;
    p.flow_mod(&fm, 0).unwrap();
    assert_eq!(outs(&mut w, &mut p, &frame(1, 9, 80)), vec![4]);
    assert_eq!(outs(&mut w, &mut p, &frame(1, 2, 80)), vec![5]);
    // Deleting the conj_id flow.
    let mut fm = parse_flow_mod("conj_id=1234").unwrap();
    fm.command = ofp::msg::flow::FlowModCommand::DeleteStrict;
    p.flow_mod(&fm, 0).unwrap();
    assert_eq!(outs(&mut w, &mut p, &frame(1, 2, 80)), vec![4]);
}

#[test]
fn trace_names_the_conjunction() {
    let mut p = pipeline(EXAMPLE);
    let snap = p.snapshot();
    let t = pipeline::trace::trace(&snap, 1, &frame(1, 2, 80));
    let text = t.steps.join("\n");
    assert!(text.contains("Conjunction 1234"), "{text}");
}

#[test]
fn thousands_of_clauses_cost_a_bounded_lookup() {
    // 64 clauses of 100 flows each: a packet matching one flow of each
    // clause is found; one missing a clause is not.
    let mut flows = vec![
        "conj_id=5,actions=output:2".to_string(),
        "priority=0,actions=output:3".into(),
    ];
    for k in 1..=64u32 {
        for v in 0..100u32 {
            // Clause k matches tp_src = k*100 + v or, for v = 0, the test
            // packet (by a prefix of its source or destination address
            // that differs from clause to clause).
            if v == 0 {
                let (field, addr, len) = if k <= 32 {
                    ("nw_src", "10.0.0.1", k)
                } else {
                    ("nw_dst", "10.0.0.2", k - 32)
                };
                flows.push(format!(
                    "ip,{field}={addr}/{len},actions=conjunction(5,{k}/64)"
                ));
            } else {
                flows.push(format!(
                    "tcp,tp_src={},actions=conjunction(5,{k}/64)",
                    k * 100 + v
                ));
            }
        }
    }
    let refs: Vec<&str> = flows.iter().map(String::as_str).collect();
    let mut p = pipeline(&refs);
    assert_eq!(outs(&mut Worker::new(0), &mut p, &frame(1, 2, 80)), vec![2]);
    let mut fm = parse_flow_mod("ip,nw_dst=10.0.0.2/32").unwrap();
    fm.command = ofp::msg::flow::FlowModCommand::DeleteStrict;
    p.flow_mod(&fm, 0).unwrap();
    assert_eq!(outs(&mut Worker::new(0), &mut p, &frame(1, 2, 80)), vec![3]);
}
