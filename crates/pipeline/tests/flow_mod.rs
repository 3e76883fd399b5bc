//! OpenFlow 1.3 semantics of FLOW_MOD, GROUP_MOD and METER_MOD on the
//! control plane's pipeline, with the exact error codes.

use ofp::error::*;
use ofp::msg::flow::{flow_mod_flags as ff, FlowMod, FlowModCommand, FlowRemovedReason};
use ofp::msg::group::GroupModCommand;
use ofp::msg::meter::MeterModCommand;
use ofp::msg::multipart::FlowStatsRequest;
use ofp::text::{parse_flow_mod, parse_group_mod, parse_meter_mod};
use ofp::ErrorCode;
use pipeline::{Config, Pipeline};

const SEC: u64 = 1_000_000_000;

fn p() -> Pipeline {
    Pipeline::new(Config {
        n_tables: 4,
        max_entries: 3,
        ..Config::default()
    })
}

fn fm(cmd: FlowModCommand, s: &str) -> FlowMod {
    let mut f = parse_flow_mod(s).unwrap();
    f.command = cmd;
    f
}

fn add(s: &str) -> FlowMod {
    fm(FlowModCommand::Add, s)
}

fn code(r: Result<Vec<pipeline::Removed>, ofp::OfpError>) -> ErrorCode {
    r.unwrap_err().code
}

fn count(p: &Pipeline) -> usize {
    p.tables().iter().map(|t| t.len()).sum()
}

fn all_stats(p: &Pipeline) -> Vec<ofp::msg::multipart::FlowStats> {
    p.flow_stats(&FlowStatsRequest::default(), 0).unwrap()
}

#[test]
fn add_replace_and_counters() {
    let mut p = p();
    p.flow_mod(&add("priority=10,in_port=1,actions=output:2"), 0)
        .unwrap();
    let r = p.tables()[0].rules().next().unwrap().clone();
    r.counters.hit(0, 100, 5);
    // Same match and priority: replaced, counters kept.
    p.flow_mod(&add("priority=10,in_port=1,actions=output:3"), SEC)
        .unwrap();
    assert_eq!(count(&p), 1);
    let s = all_stats(&p);
    assert_eq!((s[0].packet_count, s[0].byte_count), (1, 100));
    assert!(p.tables()[0].rules().next().unwrap().outputs_to(3));
    // With reset_counts they start again.
    p.flow_mod(
        &add("priority=10,in_port=1,reset_counts,actions=output:3"),
        SEC,
    )
    .unwrap();
    assert_eq!(all_stats(&p)[0].packet_count, 0);
    // Another priority is another rule.
    p.flow_mod(&add("priority=11,in_port=1,actions=output:3"), SEC)
        .unwrap();
    assert_eq!(count(&p), 2);
}

#[test]
fn flow_mod_errors_change_nothing() {
    let mut p = p();
    p.flow_mod(&add("priority=10,in_port=1,actions=output:2"), 0)
        .unwrap();
    let before = all_stats(&p);
    let cases: Vec<(FlowMod, ErrorCode)> = vec![
        (
            add("table=9,actions=drop"),
            ErrorCode::FlowModFailed(FlowModFailedCode::BadTableId),
        ),
        (
            fm(FlowModCommand::Unknown(9), "actions=drop"),
            ErrorCode::FlowModFailed(FlowModFailedCode::BadCommand),
        ),
        (
            add("flags=0x40,actions=drop"),
            ErrorCode::FlowModFailed(FlowModFailedCode::BadFlags),
        ),
        (
            add("table=1,actions=goto_table:1"),
            ErrorCode::BadInstruction(BadInstructionCode::BadTableId),
        ),
        (
            add("table=1,actions=goto_table:0"),
            ErrorCode::BadInstruction(BadInstructionCode::BadTableId),
        ),
        (
            add("table=3,actions=goto_table:4"),
            ErrorCode::BadInstruction(BadInstructionCode::BadTableId),
        ),
        (
            add("ip,actions=set_field:80->tcp_dst"),
            ErrorCode::BadAction(BadActionCode::MatchInconsistent),
        ),
        (
            add("actions=set_field:4101->vlan_vid"),
            ErrorCode::BadAction(BadActionCode::MatchInconsistent),
        ),
        (
            add("actions=group:7"),
            ErrorCode::BadAction(BadActionCode::BadOutGroup),
        ),
        (
            add("actions=meter:7,output:1"),
            ErrorCode::MeterModFailed(MeterModFailedCode::UnknownMeter),
        ),
        (
            add("actions=output:0"),
            ErrorCode::BadAction(BadActionCode::BadOutPort),
        ),
        (
            add("actions=push_vlan:0x0800"),
            ErrorCode::BadAction(BadActionCode::BadArgument),
        ),
        (
            add("tcp_dst=80,actions=drop"),
            ErrorCode::BadMatch(BadMatchCode::BadPrereq),
        ),
        (
            {
                let mut f = add("in_port=1,actions=write_actions(output:2)");
                f.instructions.push(f.instructions[0].clone());
                f
            },
            ErrorCode::BadInstruction(BadInstructionCode::UnsupInst),
        ),
    ];
    for (f, want) in cases {
        let text = ofp::text::format_flow_mod(&f);
        assert_eq!(code(p.flow_mod(&f, 0)), want, "{text}");
        assert_eq!(all_stats(&p), before, "{text} changed the table");
    }
    // A VLAN push makes a later set_field of vlan_vid consistent.
    p.flow_mod(
        &add("priority=1,actions=push_vlan:0x8100,set_field:4101->vlan_vid,output:1"),
        0,
    )
    .unwrap();
    p.flow_mod(
        &add("priority=1,tcp,actions=set_field:80->tcp_dst,output:1"),
        0,
    )
    .unwrap();
}

#[test]
fn table_full_and_overlap() {
    let mut p = p();
    for i in 1..=3 {
        p.flow_mod(&add(&format!("priority=5,in_port={i},actions=drop")), 0)
            .unwrap();
    }
    assert_eq!(
        code(p.flow_mod(&add("in_port=9,actions=drop"), 0)),
        ErrorCode::FlowModFailed(FlowModFailedCode::TableFull)
    );
    // Replacing an existing entry still works when full.
    p.flow_mod(&add("priority=5,in_port=3,actions=output:1"), 0)
        .unwrap();
    let mut q = Pipeline::new(Config::default());
    q.flow_mod(&add("priority=5,ip,nw_dst=10.0.0.0/8,actions=drop"), 0)
        .unwrap();
    let e = q.flow_mod(
        &add("priority=5,ip,nw_dst=10.1.0.0/16,check_overlap,actions=drop"),
        0,
    );
    assert_eq!(
        code(e),
        ErrorCode::FlowModFailed(FlowModFailedCode::Overlap)
    );
    q.flow_mod(
        &add("priority=6,ip,nw_dst=10.1.0.0/16,check_overlap,actions=drop"),
        0,
    )
    .unwrap();
    q.flow_mod(
        &add("priority=5,ip,nw_dst=11.0.0.0/8,check_overlap,actions=drop"),
        0,
    )
    .unwrap();
}

#[test]
fn modify_and_delete_select_by_match_cookie_and_out_port() {
    let mut p = Pipeline::new(Config::default());
    p.flow_mod(
        &add("priority=1,cookie=0x11,tcp,tp_dst=80,actions=output:1"),
        0,
    )
    .unwrap();
    p.flow_mod(
        &add("priority=2,cookie=0x12,tcp,tp_dst=443,actions=output:2"),
        0,
    )
    .unwrap();
    p.flow_mod(&add("priority=3,cookie=0x21,udp,actions=output:2"), 0)
        .unwrap();
    p.flow_mod(
        &add("table=1,priority=3,cookie=0x21,udp,actions=output:2"),
        0,
    )
    .unwrap();

    // Non-strict modify: every rule at least as specific as the match.
    p.flow_mod(&fm(FlowModCommand::Modify, "tcp,actions=output:9"), 0)
        .unwrap();
    let outs: Vec<bool> = all_stats(&p)
        .iter()
        .map(|s| s.instructions == parse_flow_mod("actions=output:9").unwrap().instructions)
        .collect();
    assert_eq!(outs.iter().filter(|x| **x).count(), 2);
    // Cookie filter.
    p.flow_mod(
        &fm(FlowModCommand::Modify, "cookie=0x11/0xff,actions=output:7"),
        0,
    )
    .unwrap();
    // Strict modify needs the exact match and priority.
    p.flow_mod(
        &fm(
            FlowModCommand::ModifyStrict,
            "priority=2,tcp,actions=output:5",
        ),
        0,
    )
    .unwrap();
    assert!(all_stats(&p)
        .iter()
        .all(|s| s.instructions != parse_flow_mod("actions=output:5").unwrap().instructions));
    p.flow_mod(
        &fm(
            FlowModCommand::ModifyStrict,
            "priority=2,tcp,tp_dst=443,actions=output:5",
        ),
        0,
    )
    .unwrap();
    // Modify never adds.
    p.flow_mod(&fm(FlowModCommand::Modify, "arp,actions=output:5"), 0)
        .unwrap();
    assert_eq!(count(&p), 4);

    // Delete with out_port: only rules that output there.
    let removed = p
        .flow_mod(
            &fm(FlowModCommand::Delete, "table=all,out_port=2,actions=drop"),
            0,
        )
        .unwrap();
    assert_eq!(removed.len(), 2, "the two udp rules output to port 2");
    assert!(removed
        .iter()
        .all(|r| r.reason == FlowRemovedReason::Delete));
    // Delete strict.
    let removed = p
        .flow_mod(
            &fm(FlowModCommand::DeleteStrict, "priority=1,tcp,tp_dst=80"),
            0,
        )
        .unwrap();
    assert_eq!(removed.len(), 1);
    let removed = p.flow_mod(&fm(FlowModCommand::Delete, ""), 0).unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(count(&p), 0);
}

#[test]
fn timeouts_expire_with_reasons() {
    let mut p = Pipeline::new(Config::default());
    p.flow_mod(
        &add("priority=1,in_port=1,idle_timeout=10,send_flow_rem,actions=drop"),
        0,
    )
    .unwrap();
    p.flow_mod(&add("priority=1,in_port=2,hard_timeout=5,actions=drop"), 0)
        .unwrap();
    p.flow_mod(&add("priority=1,in_port=3,actions=drop"), 0)
        .unwrap();
    assert!(p.expire(4 * SEC).is_empty());
    let hard = p.expire(5 * SEC);
    assert_eq!(hard.len(), 1);
    assert_eq!(hard[0].reason, FlowRemovedReason::HardTimeout);
    assert!(!hard[0].notify());
    // A hit at 8 s keeps the idle rule until 18 s.
    let idle = p.tables()[0]
        .rules()
        .find(|r| r.idle_timeout == 10)
        .unwrap()
        .clone();
    idle.counters.hit(0, 60, 8 * SEC);
    assert!(p.expire(17 * SEC).is_empty());
    let gone = p.expire(18 * SEC);
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].reason, FlowRemovedReason::IdleTimeout);
    assert!(gone[0].notify());
    let msg = gone[0].message(18 * SEC + 5);
    assert_eq!(
        (
            msg.duration_sec,
            msg.duration_nsec,
            msg.packet_count,
            msg.byte_count
        ),
        (18, 5, 1, 60)
    );
    assert_eq!(count(&p), 1);
}

#[test]
fn a_modify_restarts_the_timeouts_and_sets_the_ages_as_open_vswitch_does() {
    let mut p = Pipeline::new(Config::default());
    p.flow_mod(
        &add("priority=1,in_port=1,hard_timeout=10,idle_timeout=8,actions=drop"),
        0,
    )
    .unwrap();
    let ages = |p: &Pipeline, now: u64| {
        let fs = p.flow_stats(&FlowStatsRequest::default(), now).unwrap();
        (fs[0].duration_sec, fs[0].idle_age, fs[0].hard_age)
    };
    assert_eq!(ages(&p, 3 * SEC), (3, Some(3), Some(3)));
    // A hit at 4 s: idle_age counts from it.
    let rule = p.tables()[0].rules().next().unwrap().clone();
    rule.counters.hit(0, 60, 4 * SEC);
    assert_eq!(ages(&p, 6 * SEC + 5), (6, Some(2), Some(6)));
    // A MODIFY at 7 s: the duration goes on, both ages start again, and
    // so do both timeouts (hard at 17 s, idle at 15 s).
    p.flow_mod(
        &fm(FlowModCommand::Modify, "in_port=1,actions=output:2"),
        7 * SEC,
    )
    .unwrap();
    assert_eq!(ages(&p, 9 * SEC), (9, Some(2), Some(2)));
    assert!(p.expire(14 * SEC).is_empty());
    let gone = p.expire(15 * SEC);
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].reason, FlowRemovedReason::IdleTimeout);

    p.flow_mod(
        &add("priority=1,in_port=2,hard_timeout=10,actions=drop"),
        20 * SEC,
    )
    .unwrap();
    p.flow_mod(
        &fm(FlowModCommand::Modify, "in_port=2,actions=output:3"),
        25 * SEC,
    )
    .unwrap();
    assert!(p.expire(34 * SEC).is_empty());
    let gone = p.expire(35 * SEC);
    assert_eq!(gone[0].reason, FlowRemovedReason::HardTimeout);
}

#[test]
fn stats_and_aggregate() {
    let mut p = Pipeline::new(Config::default());
    p.flow_mod(&add("priority=1,tcp,actions=output:1"), 0)
        .unwrap();
    p.flow_mod(&add("priority=9,tcp,tp_dst=80,actions=output:1"), 0)
        .unwrap();
    p.flow_mod(&add("table=2,priority=1,arp,actions=output:2"), 0)
        .unwrap();
    for r in p.tables()[0].rules() {
        r.counters.hit(0, 10, 1);
    }
    let req = FlowStatsRequest {
        match_: ofp::text::parse_match("tcp").unwrap(),
        ..Default::default()
    };
    let s = p.flow_stats(&req, 2 * SEC).unwrap();
    assert_eq!(s.iter().map(|s| s.priority).collect::<Vec<_>>(), vec![9, 1]);
    assert_eq!(s[0].duration_sec, 2);
    let a = p.aggregate(&FlowStatsRequest::default()).unwrap();
    assert_eq!((a.flow_count, a.packet_count, a.byte_count), (3, 2, 20));
    let bad = FlowStatsRequest {
        table_id: 254,
        ..Default::default()
    };
    assert_eq!(
        p.aggregate(&bad).unwrap_err().code,
        ErrorCode::BadRequest(BadRequestCode::BadTableId)
    );
}

fn gm(cmd: GroupModCommand, s: &str) -> ofp::msg::group::GroupMod {
    let mut g = parse_group_mod(s).unwrap();
    g.command = cmd;
    g
}

#[test]
fn groups_semantics() {
    let mut p = Pipeline::new(Config::default());
    let e = |r: Result<Vec<pipeline::Removed>, ofp::OfpError>| r.unwrap_err().code;
    let g = |c| ErrorCode::GroupModFailed(c);
    p.group_mod(
        &gm(
            GroupModCommand::Add,
            "group_id=1,type=all,bucket=output:1,bucket=output:2",
        ),
        0,
    )
    .unwrap();
    assert_eq!(
        e(p.group_mod(
            &gm(GroupModCommand::Add, "group_id=1,type=all,bucket=output:1"),
            0
        )),
        g(GroupModFailedCode::GroupExists)
    );
    assert_eq!(
        e(p.group_mod(&gm(GroupModCommand::Modify, "group_id=2,type=all"), 0)),
        g(GroupModFailedCode::UnknownGroup)
    );
    assert_eq!(
        e(p.group_mod(&gm(GroupModCommand::Add, "group_id=0xffffff01,type=all"), 0)),
        g(GroupModFailedCode::InvalidGroup)
    );
    assert_eq!(
        e(p.group_mod(&gm(GroupModCommand::Add, "group_id=3,type=indirect"), 0)),
        g(GroupModFailedCode::BadBucket)
    );
    assert_eq!(
        e(p.group_mod(
            &gm(GroupModCommand::Add, "group_id=3,type=ff,bucket=output:1"),
            0
        )),
        g(GroupModFailedCode::BadWatch)
    );
    assert_eq!(
        e(p.group_mod(
            &gm(
                GroupModCommand::Add,
                "group_id=3,type=all,bucket=weight:5,output:1"
            ),
            0
        )),
        g(GroupModFailedCode::WeightUnsupported)
    );
    // Chains and loops.
    p.group_mod(
        &gm(
            GroupModCommand::Add,
            "group_id=2,type=indirect,bucket=group:1",
        ),
        0,
    )
    .unwrap();
    assert_eq!(
        e(p.group_mod(
            &gm(
                GroupModCommand::Modify,
                "group_id=1,type=all,bucket=group:2"
            ),
            0
        )),
        g(GroupModFailedCode::Loop)
    );
    assert_eq!(
        e(p.group_mod(
            &gm(GroupModCommand::Add, "group_id=5,type=all,bucket=group:5"),
            0
        )),
        g(GroupModFailedCode::Loop)
    );
    assert_eq!(
        e(p.group_mod(&gm(GroupModCommand::Delete, "group_id=1"), 0)),
        g(GroupModFailedCode::ChainedGroup)
    );
    // Deleting a group removes the flows that use it.
    p.flow_mod(
        &add("priority=1,in_port=1,send_flow_rem,actions=group:2"),
        0,
    )
    .unwrap();
    p.flow_mod(&add("priority=1,in_port=2,actions=output:3"), 0)
        .unwrap();
    let removed = p
        .group_mod(&gm(GroupModCommand::Delete, "group_id=all"), 0)
        .unwrap();
    assert_eq!(removed.len(), 1);
    assert_eq!(removed[0].reason, FlowRemovedReason::GroupDelete);
    assert!(p.groups().is_empty());
    assert_eq!(count(&p), 1);
}

#[test]
fn meters_semantics() {
    let mut p = Pipeline::new(Config::default());
    let m = |cmd, s: &str| {
        let mut m = parse_meter_mod(s).unwrap();
        m.command = cmd;
        m
    };
    let e = |c| ErrorCode::MeterModFailed(c);
    p.meter_mod(
        &m(
            MeterModCommand::Add,
            "meter=1,kbps,bands=type=drop,rate=1000",
        ),
        0,
    )
    .unwrap();
    assert_eq!(
        p.meter_mod(
            &m(
                MeterModCommand::Add,
                "meter=1,kbps,bands=type=drop,rate=1000"
            ),
            0
        )
        .unwrap_err()
        .code,
        e(MeterModFailedCode::MeterExists)
    );
    assert_eq!(
        p.meter_mod(
            &m(MeterModCommand::Add, "meter=0,kbps,bands=type=drop,rate=1"),
            0
        )
        .unwrap_err()
        .code,
        e(MeterModFailedCode::InvalidMeter)
    );
    assert_eq!(
        p.meter_mod(
            &m(
                MeterModCommand::Modify,
                "meter=2,kbps,bands=type=drop,rate=1"
            ),
            0
        )
        .unwrap_err()
        .code,
        e(MeterModFailedCode::UnknownMeter)
    );
    assert_eq!(
        p.meter_mod(
            &m(
                MeterModCommand::Add,
                "meter=2,kbps,pktps,bands=type=drop,rate=1"
            ),
            0
        )
        .unwrap_err()
        .code,
        e(MeterModFailedCode::BadFlags)
    );
    assert_eq!(
        p.meter_mod(
            &m(MeterModCommand::Add, "meter=2,kbps,bands=type=drop,rate=0"),
            0
        )
        .unwrap_err()
        .code,
        e(MeterModFailedCode::BadRate)
    );
    p.flow_mod(&add("priority=1,actions=meter:1,output:1"), 0)
        .unwrap();
    let removed = p
        .meter_mod(&m(MeterModCommand::Delete, "meter=1"), 0)
        .unwrap();
    assert_eq!(removed.len(), 1);
    assert!(p.meters().is_empty());
    let _ = ff::SEND_FLOW_REM;
}

#[test]
fn flow_mods_from_the_wire_keep_their_match_and_behave_the_same() {
    // The same flows through flow_mod and through flow_mod_with_match (the
    // agent's path: decoded and validated from these bytes) give the same
    // table, and stats give back each match as sent.
    let texts = [
        "priority=100,tcp,nw_src=10.0.0.0/8,tp_dst=80,actions=output:2",
        "priority=5,in_port=1,dl_vlan=7,actions=drop",
        "priority=0,actions=CONTROLLER:65535",
        "table=1,priority=9,icmp6,ipv6_dst=2001:db8::/32,actions=output:3",
    ];
    let (mut a, mut b) = (p(), p());
    for t in texts {
        let m = add(t);
        a.flow_mod(&m, 0).unwrap();
        let wire = ofp::Message::FlowMod(m.clone()).to_bytes(1);
        let (_, decoded) = ofp::Message::decode(&bytes::Bytes::from(wire.clone())).unwrap();
        let ofp::Message::FlowMod(d) = decoded else {
            panic!()
        };
        b.flow_mod_with_match(&d, ofp::FlowMod::match_bytes(&wire), 0)
            .unwrap();
    }
    let sa = all_stats(&a);
    let sb = all_stats(&b);
    assert_eq!(sa, sb);
    for t in texts {
        let m = add(t);
        assert!(
            sb.iter()
                .any(|f| f.match_ == m.match_ && f.priority == m.priority),
            "{t}"
        );
    }
    // A truncated message falls back to encoding the match itself.
    let m = add(texts[0]);
    let mut c = p();
    c.flow_mod_with_match(&m, ofp::FlowMod::match_bytes(&[0u8; 20]), 0)
        .unwrap();
    assert_eq!(all_stats(&c)[0].match_, m.match_);
}

#[test]
fn max_flows_bounds_all_tables_together_and_the_count_follows_every_removal() {
    let mut p = Pipeline::new(Config {
        n_tables: 4,
        max_flows: 5,
        ..Config::default()
    });
    let gm = |s: &str| {
        let mut g = parse_group_mod(s).unwrap();
        g.command = GroupModCommand::Add;
        g
    };
    p.group_mod(&gm("group_id=1,type=indirect,bucket=output:2"), 0)
        .unwrap();
    for t in 0..3 {
        p.flow_mod(
            &add(&format!("table={t},priority=1,in_port=1,actions=drop")),
            0,
        )
        .unwrap();
    }
    p.flow_mod(&add("table=3,priority=2,in_port=2,actions=group:1"), 0)
        .unwrap();
    p.flow_mod(
        &add("table=3,priority=3,in_port=3,idle_timeout=1,actions=drop"),
        0,
    )
    .unwrap();
    assert_eq!(p.flow_count(), 5);
    assert_eq!(
        code(p.flow_mod(&add("table=2,priority=9,in_port=9,actions=drop"), 0)),
        ErrorCode::FlowModFailed(FlowModFailedCode::TableFull)
    );
    // Replacing an identical entry is not a new rule.
    p.flow_mod(&add("table=0,priority=1,in_port=1,actions=output:2"), 0)
        .unwrap();
    assert_eq!(p.flow_count(), 5);
    // Every way out: expiry, group deletion, delete.
    p.expire(5 * SEC);
    assert_eq!(p.flow_count(), 4);
    let mut del = gm("group_id=1,type=indirect,bucket=output:2");
    del.command = GroupModCommand::Delete;
    p.group_mod(&del, 0).unwrap();
    assert_eq!(p.flow_count(), 3);
    p.flow_mod(&fm(FlowModCommand::Delete, "table=1"), 0)
        .unwrap();
    assert_eq!(p.flow_count(), 2);
    assert_eq!(p.flow_count(), count(&p));
    p.flow_mod(&add("table=2,priority=9,in_port=9,actions=drop"), 0)
        .unwrap();
}
