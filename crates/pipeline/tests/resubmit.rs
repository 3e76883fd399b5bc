//! Open vSwitch's `resubmit` through the pipeline: another table or the
//! current one, another ingress port for the lookup or the packet's own,
//! the matching
//! flow's instructions run where the resubmit stands (its write-actions
//! into the packet's action set, its goto_table followed), nothing when no
//! flow matches, and Open vSwitch's limits (64 nested, 4 096 per packet;
//! past them the packet is dropped whole and counted). The expected
//! outputs of the first six cases are Open vSwitch 3.1's for the same
//! flows (`ovs-appctl ofproto/trace` on a netdev bridge, 2026-11-27).

use ofp::msg::group::GroupModCommand;
use ofp::text::{parse_flow_mod, parse_group_mod};
use pipeline::{Output, Pipeline, Worker};

/// A 60-byte frame of the local experimental EtherType, 02:..:01 to
/// 02:..:02.
fn frame() -> Vec<u8> {
    let mut f =
        packet::wire::build::ethernet(0x0200_0000_0002, 0x0200_0000_0001, None, 0x88b5, &[]);
    f.resize(60, 0);
    f
}

mod common;

fn pipeline(flows: &[&str]) -> Pipeline {
    common::pipeline(16, 4, flows)
}

/// The ports a frame from `in_port` goes out of, and the worker's
/// over-limit count.
fn run(p: &mut Pipeline, in_port: u32) -> (Vec<u32>, u64) {
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = frame();
    let outs: Vec<Output> = w.process(&snap, in_port, &mut f, 1_000).to_vec();
    (outs.iter().map(|o| o.port).collect(), w.over_limit())
}

#[test]
fn a_resubmit_runs_the_other_tables_flow_then_goes_on() {
    let mut p = pipeline(&[
        "priority=1,actions=resubmit(,1),output:3",
        "table=1,priority=1,actions=output:2",
    ]);
    assert_eq!(run(&mut p, 1), (vec![2, 3], 0));
}

#[test]
fn back_to_an_earlier_table_and_the_current_one() {
    let mut p = pipeline(&[
        "priority=1,actions=goto_table:2",
        "table=1,priority=1,actions=output:2",
        "table=2,priority=5,in_port=1,actions=resubmit(,1),resubmit(4),output:3",
        "table=2,priority=5,in_port=4,actions=output:1",
    ]);
    // resubmit(4): the current table (2) looked up as if from port 4; its
    // flow's output:1 is the packet's ingress port, skipped (Open vSwitch:
    // "skipping output to input port").
    assert_eq!(run(&mut p, 1).0, vec![2, 3]);
}

#[test]
fn the_lookup_sees_the_port_named_and_the_actions_the_packets_own() {
    let mut p = pipeline(&[
        "priority=1,in_port=1,actions=resubmit(3,1),output:in_port",
        "table=1,priority=1,in_port=3,actions=output:in_port,output:2",
        "table=1,priority=1,in_port=1,actions=output:4",
    ]);
    // The lookup matches in_port=3; IN_PORT is the packet's own port, 1,
    // in the resubmitted flow as after it (ofproto/trace: 1,2,1).
    assert_eq!(run(&mut p, 1).0, vec![1, 2, 1]);
}

#[test]
fn no_flow_in_the_resubmitted_table_does_nothing() {
    let mut p = pipeline(&["priority=1,actions=resubmit(,5),output:2"]);
    assert_eq!(run(&mut p, 1), (vec![2], 0));
    // A table past the pipeline's, as Open vSwitch: nothing either.
    let mut p = pipeline(&["priority=1,actions=resubmit(,200),output:2"]);
    assert_eq!(run(&mut p, 1), (vec![2], 0));
}

#[test]
fn write_actions_and_goto_in_the_resubmitted_flow_count() {
    let mut p = pipeline(&[
        "priority=1,actions=resubmit(,1),output:3",
        "table=1,priority=1,actions=write_actions(output:4),goto_table:3",
        "table=3,priority=1,actions=output:2",
    ]);
    // Applied at once: 2 (table 3), then 3; the action set at the end: 4.
    assert_eq!(run(&mut p, 1).0, vec![2, 3, 4]);
}

#[test]
fn a_resubmit_loop_drops_the_packet_whole_and_is_counted() {
    let mut p = pipeline(&["priority=1,actions=output:2,resubmit(,0)"]);
    assert_eq!(run(&mut p, 1), (vec![], 1));
}

#[test]
fn more_than_4096_resubmits_drop_the_packet() {
    // Each table resubmits twice to the next: 2 + 4 + ... + 2^12 > 4096
    // (the last table has no flow: the limit alone stops the packet, and
    // what it had been sent to, port 2, is dropped with it).
    let mut flows: Vec<String> = (0..13)
        .map(|t| {
            format!(
                "table={t},priority=1,actions=resubmit(,{n}),resubmit(,{n})",
                n = t + 1
            )
        })
        .collect();
    flows[0] = "table=0,priority=1,actions=output:2,resubmit(,1),resubmit(,1)".into();
    let refs: Vec<&str> = flows.iter().map(String::as_str).collect();
    let mut p = pipeline(&refs);
    assert_eq!(run(&mut p, 1), (vec![], 1));
    // Ten levels (2 046 resubmits) are within the limits.
    let mut flows: Vec<String> = (0..10)
        .map(|t| {
            format!(
                "table={t},priority=1,actions=resubmit(,{n}),resubmit(,{n})",
                n = t + 1
            )
        })
        .collect();
    flows.push("table=10,priority=1,actions=output:2".into());
    let refs: Vec<&str> = flows.iter().map(String::as_str).collect();
    let mut p = pipeline(&refs);
    let (outs, over) = run(&mut p, 1);
    assert_eq!((outs.len(), over), (1024, 0));
}

#[test]
fn a_group_bucket_may_resubmit() {
    let mut p = pipeline(&["table=1,priority=1,actions=output:2"]);
    let mut g = parse_group_mod("group_id=1,type=all,bucket=resubmit(,1),bucket=output:3").unwrap();
    g.command = GroupModCommand::Add;
    p.group_mod(&g, 0).unwrap();
    let fm = parse_flow_mod("priority=1,actions=group:1").unwrap();
    p.flow_mod(&fm, 0).unwrap();
    assert_eq!(run(&mut p, 1).0, vec![2, 3]);
}

#[test]
fn trace_follows_the_resubmit() {
    let mut p = pipeline(&[
        "priority=1,actions=resubmit(,1),output:3",
        "table=1,priority=7,actions=output:2",
    ]);
    let snap = p.snapshot();
    let t = pipeline::trace::trace(&snap, 1, &frame());
    let text = t.steps.join("\n");
    let at = text.find("resubmit(,1)").expect(&text);
    let nested = text[at..].find(" 1. ").expect(&text);
    assert!(text[at + nested..].contains("output:2"), "{text}");
    assert_eq!(
        t.outputs.iter().map(|o| o.port).collect::<Vec<_>>(),
        vec![2, 3]
    );
}

#[test]
fn a_forward_chain_of_resubmits_does_not_nest() {
    // Open vSwitch forwards a chain of 100 resubmits, each to the next
    // table (ofproto/trace, 3.1): only a resubmit to the same or an
    // earlier table counts toward the 64 levels.
    let chain = || {
        let mut flows: Vec<String> = (0..100)
            .map(|t| format!("table={t},priority=1,actions=resubmit(,{})", t + 1))
            .collect();
        flows.push("table=100,priority=1,actions=output:2".into());
        let refs: Vec<&str> = flows.iter().map(String::as_str).collect();
        let mut p = common::pipeline(101, 4, &refs);
        assert_eq!(run(&mut p, 1), (vec![2], 0));
        // The same chain with a resubmit back to table 0 at its end: a
        // loop, dropped at 64 levels (Open vSwitch: "over 4096 resubmit
        // actions" first only when the chain is longer than 64).
        let last = flows.len() - 1;
        flows[last] = "table=100,priority=1,actions=output:2,resubmit(,0)".into();
        let refs: Vec<&str> = flows.iter().map(String::as_str).collect();
        let mut p = common::pipeline(101, 4, &refs);
        assert_eq!(run(&mut p, 1), (vec![], 1));
    };
    std::thread::Builder::new()
        .stack_size(pipeline::WALK_STACK)
        .spawn(chain)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn the_longest_walk_the_limits_allow_fits_a_walking_threads_stack() {
    // 254 tables, each resubmitting to the next and the last to table 0:
    // 4 096 resubmits, every one a call level (only 16 of them nest as
    // Open vSwitch counts), walked and traced on a stack of the size the
    // threads that walk packets get. Open vSwitch 3.1 traces the same
    // flows to ">>>> over 4096 resubmit actions <<<<" and a drop.
    let run_all = || {
        let mut flows: Vec<String> = (0..253)
            .map(|t| format!("table={t},priority=1,actions=resubmit(,{})", t + 1))
            .collect();
        flows.push("table=253,priority=1,actions=output:2,resubmit(,0)".into());
        let refs: Vec<&str> = flows.iter().map(String::as_str).collect();
        let mut p = common::pipeline(254, 4, &refs);
        assert_eq!(run(&mut p, 1), (vec![], 1));
        let snap = p.snapshot();
        let t = pipeline::trace::trace(&snap, 1, &frame());
        assert!(t.outputs.is_empty());
    };
    std::thread::Builder::new()
        .stack_size(pipeline::WALK_STACK)
        .spawn(run_all)
        .unwrap()
        .join()
        .unwrap();
}
