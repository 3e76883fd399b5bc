//! The group engine's limits: loops through watched groups are refused,
//! liveness is worked out once per version (never per packet along a
//! chain), one packet's copies and bucket runs are capped and the excess
//! counted, and deleting many groups or meters is one pass.

use ofp::error::{ErrorCode, GroupModFailedCode};
use ofp::msg::group::{Bucket, GroupMod, GroupModCommand, GroupType};
use ofp::port::{group_no, port_no};
use ofp::text::{parse_flow_mod, parse_group_mod};
use ofp::Action;
use pipeline::exec::{MAX_BUCKETS_PER_PACKET, MAX_OUTPUTS_PER_PACKET};
use pipeline::{Config, Pipeline, PortState, Worker};

fn port(n: u32, live: bool) -> PortState {
    PortState {
        port_no: n,
        live,
        no_flood: false,
        no_fwd: false,
        no_recv: false,
    }
}

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Config {
        max_groups: 100_000,
        ..Config::default()
    });
    for n in 1..=3 {
        p.set_port(port(n, true));
    }
    p
}

fn group(p: &mut Pipeline, cmd: GroupModCommand, s: &str) -> Result<(), ErrorCode> {
    let mut g = parse_group_mod(s).unwrap();
    g.command = cmd;
    p.group_mod(&g, 0).map(|_| ()).map_err(|e| e.code)
}

/// Adds a group that must be accepted.
fn add(p: &mut Pipeline, s: &str) {
    group(p, GroupModCommand::Add, s).unwrap_or_else(|e| panic!("{s}: {e:?}"));
}

/// A 60-byte frame of the local experimental EtherType, 02:..:01 to
/// 02:..:02.
fn frame() -> Vec<u8> {
    let mut f =
        packet::wire::build::ethernet(0x0200_0000_0002, 0x0200_0000_0001, None, 0x88b5, &[]);
    f.resize(60, 0);
    f
}

#[test]
fn a_group_watching_itself_is_refused() {
    let mut p = pipeline();
    let bad_watch = Err(ErrorCode::GroupModFailed(GroupModFailedCode::BadWatch));
    assert_eq!(
        group(
            &mut p,
            GroupModCommand::Add,
            "group_id=1,type=ff,bucket=watch_group:1,output:2,bucket=watch_port:3,output:3"
        ),
        bad_watch
    );
    // Through another group: 2 watches 1, then 1 is changed to watch 2.
    add(&mut p, "group_id=1,type=ff,bucket=watch_port:2,output:2");
    add(&mut p, "group_id=2,type=ff,bucket=watch_group:1,output:2");
    assert_eq!(
        group(
            &mut p,
            GroupModCommand::Modify,
            "group_id=1,type=ff,bucket=watch_group:2,output:2"
        ),
        bad_watch
    );
    // A forwarding loop keeps its own error.
    add(&mut p, "group_id=3,type=indirect,bucket=output:2");
    assert_eq!(
        group(
            &mut p,
            GroupModCommand::Modify,
            "group_id=3,type=indirect,bucket=group:3"
        ),
        Err(ErrorCode::GroupModFailed(GroupModFailedCode::Loop))
    );
}

#[test]
fn liveness_follows_watched_groups_and_port_changes() {
    let mut p = pipeline();
    add(&mut p, "group_id=1,type=ff,bucket=watch_port:2,output:2");
    add(
        &mut p,
        "group_id=2,type=ff,bucket=watch_group:1,output:2,bucket=watch_port:3,output:3",
    );
    p.flow_mod(&parse_flow_mod("priority=1,actions=group:2").unwrap(), 0)
        .unwrap();
    let mut w = Worker::new(0);
    let out = |p: &mut Pipeline, w: &mut Worker| -> Vec<u32> {
        let snap = p.snapshot();
        w.process(&snap, 1, &mut frame(), 0)
            .iter()
            .map(|o| o.port)
            .collect()
    };
    assert_eq!(out(&mut p, &mut w), [2]);
    p.set_port(port(2, false));
    assert_eq!(out(&mut p, &mut w), [3], "group 1 is dead with port 2");
    p.set_port(port(2, true));
    assert_eq!(out(&mut p, &mut w), [2]);
}

#[test]
fn a_long_chain_of_watched_groups_is_worked_out_without_recursion() {
    let mut p = pipeline();
    add(&mut p, "group_id=1,type=ff,bucket=watch_port:2,output:2");
    for g in 2..=3000u32 {
        let gm = GroupMod::new(
            GroupModCommand::Add,
            GroupType::FastFailover,
            g,
            vec![Bucket {
                watch_group: g - 1,
                actions: vec![Action::Output {
                    port: 3,
                    max_len: 0,
                }],
                ..Bucket::default()
            }],
        );
        p.group_mod(&gm, 0).unwrap();
    }
    p.flow_mod(&parse_flow_mod("priority=1,actions=group:3000").unwrap(), 0)
        .unwrap();
    let mut w = Worker::new(0);
    let snap = p.snapshot();
    assert_eq!(w.process(&snap, 1, &mut frame(), 0).len(), 1);
    p.set_port(port(2, false));
    let snap = p.snapshot();
    assert!(
        w.process(&snap, 1, &mut frame(), 0).is_empty(),
        "the whole chain died"
    );
}

/// Group 1 with `leaf` buckets, groups 2..=16 each with two buckets to the
/// one below, and a flow sending everything to group 16.
fn chain_of_all_groups(leaf: &str) -> Pipeline {
    let mut p = pipeline();
    add(&mut p, &format!("group_id=1,type=all,{leaf}"));
    for g in 2..=16 {
        let s = format!(
            "group_id={g},type=all,bucket=group:{},bucket=group:{}",
            g - 1,
            g - 1
        );
        group(&mut p, GroupModCommand::Add, &s).unwrap();
    }
    p.flow_mod(&parse_flow_mod("priority=1,actions=group:16").unwrap(), 0)
        .unwrap();
    p
}

#[test]
fn chained_all_groups_are_capped_and_the_excess_counted() {
    // 16 levels of ALL groups with 2 buckets: 65 536 copies uncapped.
    let mut p = chain_of_all_groups("bucket=output:2,bucket=output:3");
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let n = w.process(&snap, 1, &mut frame(), 0).len();
    assert!(n <= MAX_OUTPUTS_PER_PACKET, "{n} outputs");
    assert!(n > 0);
    assert!(w.over_limit() > 0, "the excess is counted");
    // The bucket budget bounds the work even when nothing is output.
    let mut p = chain_of_all_groups("bucket=dec_ttl,bucket=dec_ttl");
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    assert!(w.process(&snap, 1, &mut frame(), 0).is_empty());
    assert!(
        w.over_limit() >= 1,
        "stopped at {MAX_BUCKETS_PER_PACKET} bucket runs"
    );
    let stats = &snap.groups[&1].counters;
    assert!(stats.totals().packets <= MAX_BUCKETS_PER_PACKET as u64);
}

#[test]
fn deleting_all_groups_removes_their_rules_in_one_pass() {
    let mut p = pipeline();
    for g in 1..=2000u32 {
        add(
            &mut p,
            &format!("group_id={g},type=indirect,bucket=output:2"),
        );
        p.flow_mod(
            &parse_flow_mod(&format!(
                "priority=5,in_port=1,dl_vlan={},actions=group:{g}",
                g % 4000
            ))
            .unwrap(),
            0,
        )
        .unwrap();
    }
    p.flow_mod(&parse_flow_mod("priority=1,actions=output:3").unwrap(), 0)
        .unwrap();
    let refs = p.group_ref_counts();
    assert_eq!(refs.len(), 2000);
    assert!(refs.values().all(|&n| n == 1));
    let all = GroupMod::new(
        GroupModCommand::Delete,
        GroupType::All,
        group_no::ALL,
        vec![],
    );
    let removed = p.group_mod(&all, 0).unwrap();
    assert_eq!(removed.len(), 2000);
    assert!(p.groups().is_empty());
    assert_eq!(
        p.tables()[0].rules().count(),
        1,
        "the rule without a group stays"
    );
}

#[test]
fn a_packet_out_shares_one_budget_with_its_table_submissions() {
    let mut p = pipeline();
    // A flow that copies every packet 1 024 times...
    let outs = vec!["output:2"; 1024].join(",");
    p.flow_mod(
        &parse_flow_mod(&format!("priority=1,actions={outs}")).unwrap(),
        0,
    )
    .unwrap();
    let snap = p.snapshot();
    // ...and a PACKET_OUT that submits its packet to the tables 1 024 times.
    let actions = vec![
        Action::Output {
            port: port_no::TABLE,
            max_len: 0
        };
        1024
    ];
    let mut w = Worker::new(0);
    let r = w.packet_out(&snap, port_no::CONTROLLER, &actions, &mut frame(), 0);
    assert!(r.len() <= MAX_OUTPUTS_PER_PACKET, "{} outputs", r.len());
    assert!(w.over_limit() > 0);
}

#[test]
fn watches_and_group_actions_are_followed_apart() {
    let mut p = pipeline();
    // Group 1 watches group 2, which forwards to group 1: neither a packet
    // loop nor a liveness loop.
    add(&mut p, "group_id=1,type=ff,bucket=watch_port:2,output:2");
    add(&mut p, "group_id=2,type=all,bucket=group:1");
    group(
        &mut p,
        GroupModCommand::Modify,
        "group_id=1,type=ff,bucket=watch_group:2,output:2,bucket=watch_port:3,output:3",
    )
    .unwrap();
    // GROUP_STATS ref_count counts flows and groups forwarding to a group.
    p.flow_mod(
        &parse_flow_mod("priority=1,actions=group:1,group:1").unwrap(),
        0,
    )
    .unwrap();
    let refs = p.group_ref_counts();
    assert_eq!(
        refs.get(&1),
        Some(&2),
        "one flow (counted once) and group 2"
    );
    assert_eq!(refs.get(&2), None);
}
