//! Open vSwitch's `learn` through the pipeline: the flow a packet teaches
//! (its match from the packet's fields, loads and outputs as actions,
//! timeouts, priority, cookie, table), added by the control plane and
//! seen by the packets after it; MAC learning as the Open vSwitch
//! tutorial writes it; the learn action's `limit`, the per-table rate and
//! cap; `delete_learned`; a flow taught again changing nothing.

use ofp::msg::flow::FlowModCommand;
use ofp::text::{format_flow_mod, parse_flow_mod};
use pipeline::{Config, Pipeline, PortState, Worker};

fn flow(p: &mut Pipeline, f: &str) {
    let fm = parse_flow_mod(f).unwrap_or_else(|e| panic!("{f}: {e}"));
    ofp::msg::Message::FlowMod(fm.clone())
        .validate()
        .unwrap_or_else(|e| panic!("{f}: {e}"));
    p.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{f}: {e}"));
}

fn pipeline(config: Config, flows: &[&str]) -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 16,
        ..config
    });
    for n in 1..=8 {
        p.set_port(PortState::up(n));
    }
    for f in flows {
        flow(&mut p, f);
    }
    p
}

fn eth(src: u8, dst: u8) -> Vec<u8> {
    packet::wire::build::tcp_v4(
        [2, 0, 0, 0, 0, src],
        [2, 0, 0, 0, 0, dst],
        [10, 0, 0, src],
        [10, 0, 0, dst],
        1000 + src as u16,
        80,
        2,
    )
}

/// Runs `frame` from `in_port`, hands what it taught to the control
/// plane, and returns the ports it went out of.
fn run(p: &mut Pipeline, w: &mut Worker, in_port: u32, frame: &[u8], now: u64) -> Vec<u32> {
    let snap = p.snapshot();
    let mut f = frame.to_vec();
    let outs = w
        .process(&snap, in_port, &mut f, now)
        .iter()
        .map(|o| o.port)
        .collect();
    for l in w.take_learned() {
        p.learn(&l, now);
    }
    outs
}

fn learned_flows(p: &Pipeline, table: usize) -> Vec<String> {
    let mut v: Vec<String> = p.tables()[table]
        .rules()
        .map(|r| {
            let fm = ofp::msg::flow::FlowMod {
                table_id: table as u8,
                priority: r.priority,
                cookie: r.cookie,
                idle_timeout: r.idle_timeout,
                hard_timeout: r.hard_timeout,
                match_: r.match_.get(),
                instructions: r.instructions.to_vec(),
                ..Default::default()
            };
            format_flow_mod(&fm)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn the_taught_flow_is_built_from_the_packet() {
    let mut p = pipeline(
        Config::default(),
        &["tcp,actions=learn(table=12,hard_timeout=100,priority=200,cookie=0x64,eth_type=0x800,nw_proto=6,NXM_OF_TCP_DST[],NXM_OF_IP_DST[],NXM_OF_IP_SRC[],load:NXM_OF_IP_DST[]->NXM_NX_REG3[],load:NXM_OF_TCP_DST[]->NXM_NX_REG4[0..15],load:0x1->NXM_NX_REG4[16..18],load:0x1->NXM_NX_REG0[19]),output:2"],
    );
    let mut w = Worker::new(0);
    assert_eq!(run(&mut p, &mut w, 1, &eth(1, 2), 0), vec![2]);
    assert_eq!(
        learned_flows(&p, 12),
        vec!["table=12,priority=200,cookie=0x64,hard_timeout=100,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_dst=80,actions=load:0xa000002->NXM_NX_REG3[],load:0x50->NXM_NX_REG4[0..15],load:0x1->NXM_NX_REG4[16..18],load:0x1->NXM_NX_REG0[19]".to_string()]
    );
}

/// The Open vSwitch tutorial's MAC learning (ovs-advanced.rst, tables 2
/// and 3 reduced to one VLAN): table 0 learns where each source address
/// lives into table 10, then looks the destination up there; a miss
/// floods.
#[test]
fn mac_learning_as_the_tutorial_writes_it() {
    let mut p = pipeline(
        Config::default(),
        &[
            "actions=learn(table=10,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]),resubmit(,10),goto_table:1",
            "table=10,priority=0,actions=drop",
            "table=1,reg0=0,actions=flood",
            "table=1,reg0=1,actions=output:1",
            "table=1,reg0=2,actions=output:2",
        ],
    );
    let mut w = Worker::new(0);
    let flood = run(&mut p, &mut w, 1, &eth(1, 2), 0);
    assert_eq!(flood.len(), 7, "unknown destination: flooded ({flood:?})");
    // The reply finds where 02:..:01 lives; then the first host's next
    // packet finds the second.
    assert_eq!(run(&mut p, &mut w, 2, &eth(2, 1), 1), vec![1]);
    assert_eq!(run(&mut p, &mut w, 1, &eth(1, 2), 2), vec![2]);
    assert_eq!(
        learned_flows(&p, 10),
        vec![
            "table=10,priority=0,actions=drop".to_string(),
            "table=10,priority=32768,vlan_tci=0x0000/0x0fff,dl_dst=02:00:00:00:00:01,actions=load:0x1->NXM_NX_REG0[0..15]".to_string(),
            "table=10,priority=32768,vlan_tci=0x0000/0x0fff,dl_dst=02:00:00:00:00:02,actions=load:0x2->NXM_NX_REG0[0..15]".to_string(),
        ]
    );
}

/// As in Open vSwitch, the packet after the one that taught a flow sees
/// it, before the control plane has published it: the worker holds it
/// (its cache of whole walks aside, which had recorded the flooded walk)
/// until a snapshot acknowledges it, or for a second at most. The packet
/// that taught it does not see it.
#[test]
fn the_next_packet_sees_a_taught_flow_before_its_publication() {
    let flows = [
        "actions=learn(table=10,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]),resubmit(,10),goto_table:1",
        "table=10,priority=0,actions=drop",
        "table=1,reg0=0,actions=flood",
        "table=1,reg0=1,actions=output:1",
        "table=1,reg0=2,actions=output:2",
        "table=1,reg0=3,actions=output:3",
    ];
    let mut p = pipeline(Config::default(), &flows);
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let go = |w: &mut Worker, snap: &pipeline::Snapshot, port: u32, f: Vec<u8>, now: u64| {
        let mut f = f;
        w.process(snap, port, &mut f, now)
            .iter()
            .map(|o| o.port)
            .collect::<Vec<_>>()
    };
    // 02:..:02 to 02:..:01, twice, before anything is known: flooded
    // (and the walk recorded), its own flow held.
    assert_eq!(go(&mut w, &snap, 2, eth(2, 1), 0).len(), 7);
    assert_eq!(go(&mut w, &snap, 2, eth(2, 1), 1).len(), 7);
    assert_eq!(w.unpublished(), (1, 1));
    // 01 to 02 through the same snapshot: 02 is known already.
    assert_eq!(go(&mut w, &snap, 1, eth(1, 2), 2), vec![2]);
    // And the reply finds 01, recorded walk or not.
    assert_eq!(go(&mut w, &snap, 2, eth(2, 1), 3), vec![1]);
    assert_eq!(w.unpublished(), (2, 2));
    // The control plane takes them; from the snapshot that says so on,
    // the worker holds nothing and the tables answer the same.
    let learned = w.take_learned();
    assert_eq!(
        learned.iter().map(|l| l.seq).collect::<Vec<_>>(),
        vec![1, 2]
    );
    for l in &learned {
        assert!(p.learn(l, 4));
    }
    let snap = p.snapshot();
    assert_eq!(&*snap.learned_seen, &[2]);
    assert_eq!(go(&mut w, &snap, 2, eth(2, 1), 5), vec![1]);
    assert_eq!(w.unpublished().0, 0);
    assert_eq!(go(&mut w, &snap, 1, eth(1, 2), 6), vec![2]);
    // A flow the tables hold as it is is not held again (the second's
    // repeat).
    assert_eq!(go(&mut w, &snap, 1, eth(1, 2), 2_000_000_000), vec![2]);
    assert_eq!(w.unpublished(), (0, 2));

    // Never acknowledged (the flow lost on the way): let go after a second.
    let mut p = pipeline(Config::default(), &flows);
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    go(&mut w, &snap, 1, eth(1, 2), 0);
    assert_eq!(go(&mut w, &snap, 2, eth(2, 1), 10), vec![1]);
    assert_eq!(
        go(&mut w, &snap, 3, eth(3, 1), pipeline::UNPUBLISHED_TTL_NS).len(),
        7
    );

    // The packet that teaches does not see what it taught: here the
    // destination is its own source, looked up after the learn. The
    // next one (from elsewhere) finds it.
    let mut p = pipeline(Config::default(), &flows);
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    assert_eq!(go(&mut w, &snap, 1, eth(1, 1), 0).len(), 7);
    assert_eq!(go(&mut w, &snap, 3, eth(1, 1), 1), vec![1]);
    // That one taught 01 at port 3: the entry is replaced, not added.
    assert_eq!(w.unpublished(), (1, 2));
    assert_eq!(go(&mut w, &snap, 2, eth(2, 1), 2), vec![3]);
}

/// A storm of distinct sources holds at most UNPUBLISHED_MAX flows; the
/// rest wait for publication, as before.
#[test]
fn a_learn_storm_holds_a_bounded_number_of_flows() {
    let mut p = pipeline(
        Config::default(),
        &["actions=learn(table=10,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[]),flood"],
    );
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    for i in 0..1000u16 {
        let mut f = eth16(i);
        w.process(&snap, 1, &mut f, i as u64);
    }
    assert_eq!(w.unpublished().0, pipeline::UNPUBLISHED_MAX);
    assert_eq!(
        w.take_learned().iter().filter(|l| l.seq != 0).count(),
        pipeline::UNPUBLISHED_MAX
    );
}

#[test]
fn limit_rate_and_table_cap_bound_what_packets_teach() {
    // limit=3: three distinct sources, then refused.
    let mut p = pipeline(
        Config::default(),
        &["actions=learn(table=1,limit=3,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[])"],
    );
    let mut w = Worker::new(0);
    for src in 1..=10 {
        run(&mut p, &mut w, 1, &eth(src, 99), 0);
    }
    assert_eq!(p.tables()[1].len(), 3);
    assert_eq!(p.learn_stats().over_limit, 7);
    // A per-table rate of 5/s with bursts of 5: 5 at once, then 1 per
    // 200 ms.
    let mut p = pipeline(
        Config {
            learn_rate: 5,
            learn_burst: 5,
            ..Config::default()
        },
        &["actions=learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])"],
    );
    let mut w = Worker::new(0);
    for src in 1..=20 {
        run(&mut p, &mut w, 1, &eth(src, 99), 0);
    }
    let n = p.tables()[1].len();
    assert!((5..=6).contains(&n), "{n} learned at once");
    run(&mut p, &mut w, 1, &eth(50, 99), 400_000_000);
    assert_eq!(p.tables()[1].len(), n + 1);
    assert!(p.learn_stats().over_rate >= 14);
    // A cap of 4 learned flows per table.
    let mut p = pipeline(
        Config {
            learned_max: 4,
            ..Config::default()
        },
        &["actions=learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])"],
    );
    let mut w = Worker::new(0);
    for src in 1..=9 {
        run(&mut p, &mut w, 1, &eth(src, 99), 0);
    }
    assert_eq!(p.tables()[1].len(), 4);
    assert_eq!(p.learn_stats().over_table, 5);
}

#[test]
fn a_flow_taught_again_changes_nothing_and_delete_learned_removes_them() {
    let mut p = pipeline(
        Config::default(),
        &["priority=5,actions=learn(table=1,delete_learned,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])"],
    );
    let mut w = Worker::new(0);
    for src in 1..=3 {
        run(&mut p, &mut w, 1, &eth(src, 99), 0);
    }
    // The same packet again (another worker, so not remembered there).
    let mut w2 = Worker::new(0);
    run(&mut p, &mut w2, 1, &eth(1, 99), 0);
    assert_eq!(p.learn_stats().unchanged, 1);
    assert_eq!(p.tables()[1].len(), 3);
    let mut fm = parse_flow_mod("priority=5").unwrap();
    fm.command = FlowModCommand::DeleteStrict;
    let removed = p.flow_mod(&fm, 0).unwrap();
    assert_eq!(removed.len(), 4, "the learner and what it taught");
    assert_eq!(p.tables()[1].len(), 0);
    assert_eq!(p.learn_stats().deleted_with_learner, 3);
}

#[test]
fn learned_flows_expire_and_the_worker_repeats_nothing_within_a_second() {
    let mut p = pipeline(
        Config::default(),
        &["actions=learn(table=1,idle_timeout=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])"],
    );
    let mut w = Worker::new(0);
    for _ in 0..100 {
        run(&mut p, &mut w, 1, &eth(1, 99), 0);
    }
    assert_eq!(w.learn_skipped().0, 99, "taught once, then remembered");
    assert_eq!(p.tables()[1].len(), 1);
    p.expire(3_000_000_000);
    assert_eq!(p.tables()[1].len(), 0);
    run(&mut p, &mut w, 1, &eth(1, 99), 3_000_000_000);
    assert_eq!(p.tables()[1].len(), 1, "taught again after it expired");
}

#[test]
fn trace_shows_what_would_be_learned_learns_nothing_and_hands_it_over() {
    let mut p = pipeline(
        Config::default(),
        &["actions=learn(table=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])"],
    );
    let snap = p.snapshot();
    let t = pipeline::trace::trace(&snap, 1, &eth(1, 2));
    let text = t.steps.join("\n");
    assert!(text.contains(" -> table=1"), "{text}");
    assert!(text.contains("dl_dst=02:00:00:00:00:01"), "{text}");
    assert_eq!(p.tables()[1].len(), 0);
    // What it taught, for `-generate` to add as a packet's would be.
    assert_eq!(t.learned.len(), 1);
    for l in &t.learned {
        p.learn(l, 0);
    }
    assert_eq!(p.tables()[1].len(), 1, "added through the packets' path");
}

/// A frame from source address 02:00:00:00:HI:LO (`src`) to 02:..:fe.
fn eth16(src: u16) -> Vec<u8> {
    let [hi, lo] = src.to_be_bytes();
    packet::wire::build::tcp_v4(
        [2, 0, 0, 0, hi, lo],
        [2, 0, 0, 0, 0, 0xfe],
        [10, 0, hi, lo],
        [10, 0, 0, 0xfe],
        1000,
        80,
        2,
    )
}

#[test]
fn the_table_cap_follows_learned_flows_as_they_come_and_go() {
    let mut p = pipeline(
        Config {
            learned_max: 3,
            ..Config::default()
        },
        &[
            "actions=learn(table=1,idle_timeout=1,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15])",
            "table=1,priority=0,actions=drop",
        ],
    );
    let mut w = Worker::new(0);
    for src in 1..=5 {
        run(&mut p, &mut w, 1, &eth(src, 99), 0);
    }
    assert_eq!(
        p.tables()[1].learned_len(),
        3,
        "the controller's flow is not counted"
    );
    assert_eq!(p.tables()[1].len(), 4);
    assert_eq!((p.learn_stats().added, p.learn_stats().over_table), (3, 2));
    // An address that moved replaces its flow: learned at the cap.
    run(&mut p, &mut w, 2, &eth(1, 99), 0);
    assert_eq!(p.learn_stats().added, 4);
    assert_eq!(p.tables()[1].learned_len(), 3);
    assert!(learned_flows(&p, 1)
        .iter()
        .any(|f| f.contains("dl_dst=02:00:00:00:00:01,actions=load:0x2->")));
    // Expired: learning goes on.
    p.expire(3_000_000_000);
    assert_eq!(p.tables()[1].learned_len(), 0);
    for src in 6..=7 {
        run(&mut p, &mut w, 1, &eth(src, 99), 3_000_000_000);
    }
    assert_eq!(p.tables()[1].learned_len(), 2);
    // A controller's flow in a learned flow's place is the controller's;
    // one deleted is gone from the count.
    flow(&mut p, "table=1,dl_dst=02:00:00:00:00:06,actions=drop");
    assert_eq!(p.tables()[1].learned_len(), 1);
    let mut fm = parse_flow_mod("table=1,dl_dst=02:00:00:00:00:07").unwrap();
    fm.command = FlowModCommand::DeleteStrict;
    p.flow_mod(&fm, 3_000_000_000).unwrap();
    assert_eq!(p.tables()[1].learned_len(), 0);
    assert_eq!(p.tables()[1].len(), 2);
}

#[test]
fn a_learner_at_its_limit_learns_again_once_its_flows_go() {
    let mut p = pipeline(
        Config::default(),
        &["actions=learn(table=1,limit=2,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])"],
    );
    let mut w = Worker::new(0);
    for src in 1..=3 {
        run(&mut p, &mut w, 1, &eth(src, 99), 0);
    }
    assert_eq!(p.tables()[1].len(), 2);
    assert_eq!(p.learn_stats().over_limit, 1);
    let mut fm = parse_flow_mod("table=1,dl_dst=02:00:00:00:00:01").unwrap();
    fm.command = FlowModCommand::DeleteStrict;
    assert_eq!(p.flow_mod(&fm, 0).unwrap().len(), 1);
    run(&mut p, &mut w, 1, &eth(4, 99), 0);
    run(&mut p, &mut w, 1, &eth(5, 99), 0);
    assert_eq!(p.tables()[1].len(), 2);
    assert_eq!(p.learn_stats().over_limit, 2);
    assert!(learned_flows(&p, 1)
        .iter()
        .any(|f| f.contains("02:00:00:00:00:04")));
}

#[test]
fn a_learner_removed_with_its_group_takes_its_learned_flows() {
    let mut p = pipeline(Config::default(), &[]);
    let gm = ofp::text::parse_group_mod("group_id=1,type=all,bucket=output:2").unwrap();
    p.group_mod(&gm, 0).unwrap();
    flow(
        &mut p,
        "priority=5,actions=learn(table=1,delete_learned,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[]),group:1",
    );
    let mut w = Worker::new(0);
    for src in 1..=3 {
        run(&mut p, &mut w, 1, &eth(src, 99), 0);
    }
    assert_eq!(p.tables()[1].len(), 3);
    let mut del = gm.clone();
    del.command = ofp::msg::group::GroupModCommand::Delete;
    let removed = p.group_mod(&del, 0).unwrap();
    assert_eq!(removed.len(), 4, "the learner and what it taught");
    assert_eq!(p.tables()[1].len(), 0);
    assert_eq!(p.learn_stats().deleted_with_learner, 3);
}

/// A learner whose flows keep expiring: what it remembers of them stays
/// within a small multiple of what is installed (each flow added sweeps
/// two entries further), however many it has taught.
#[test]
fn a_learners_bookkeeping_stays_bounded_while_its_flows_expire() {
    let mut p = pipeline(
        Config::default(),
        &["actions=learn(table=1,idle_timeout=1,delete_learned,NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[])"],
    );
    let mut w = Worker::new(0);
    let mut most = 0;
    for cycle in 0..100u16 {
        let now = cycle as u64 * 2_000_000_000;
        for i in 0..50 {
            run(&mut p, &mut w, 1, &eth16(cycle * 50 + i + 1), now);
        }
        assert_eq!(p.tables()[1].len(), 50);
        p.expire(now + 1_500_000_000);
        assert_eq!(p.tables()[1].len(), 0);
        most = most.max(p.learn_bytes());
    }
    assert_eq!(p.learn_stats().added, 5_000);
    assert!(
        most < 16 * 1024,
        "{most} bytes for at most 50 flows installed"
    );
}
