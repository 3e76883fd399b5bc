//! OpenFlow 1.5's groups in the pipeline: the selection methods of select
//! groups (`dp_hash`, `hash` with fields) choosing buckets for packets,
//! and INSERT_BUCKET and REMOVE_BUCKET with their errors, as Open vSwitch
//! 3.1 does them.

use etherparse::PacketBuilder;
use ofp::error::{ErrorCode, GroupModFailedCode};
use ofp::msg::group::{GroupMod, GroupModCommand, BUCKET_ALL, BUCKET_FIRST, BUCKET_LAST};
use ofp::text::{format_group_mod, parse_flow_mod, parse_group_mod, parse_group_mod_for};
use pipeline::{Config, Output, Pipeline, PortState, Worker};

fn tcp(src: [u8; 4], sport: u16) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4(src, [10, 0, 0, 2], 64)
        .tcp(sport, 80, 7, 1000);
    let mut v = Vec::new();
    b.write(&mut v, b"payload").unwrap();
    v
}

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 4,
        ..Config::default()
    });
    for n in 1..=5 {
        p.set_port(PortState::up(n));
    }
    p
}

/// Adds the group, and a flow from port 1 to group 1 once it exists.
fn add(p: &mut Pipeline, s: &str) {
    p.group_mod(&parse_group_mod(s).unwrap(), 0)
        .unwrap_or_else(|e| panic!("{s}: {e}"));
    if p.groups().contains_key(&1) {
        p.flow_mod(
            &parse_flow_mod("priority=1,in_port=1,actions=group:1").unwrap(),
            0,
        )
        .unwrap();
    }
}

fn out_ports(snap: &pipeline::Snapshot, w: &mut Worker, frame: &[u8]) -> Vec<u32> {
    let mut f = frame.to_vec();
    w.process(snap, 1, &mut f, 1_000)
        .iter()
        .map(|o: &Output| o.port)
        .collect()
}

fn ports(p: &mut Pipeline, frame: &[u8]) -> Vec<u32> {
    out_ports(&p.snapshot(), &mut Worker::new(0), frame)
}

/// Which port each of `n` flows (source address and port varying) goes
/// to, and that each flow goes there every time (three packets each, by
/// two workers).
fn spread(p: &mut Pipeline, n: u16) -> std::collections::BTreeMap<u32, u32> {
    let snap = p.snapshot();
    let (mut w0, mut w1) = (Worker::new(0), Worker::new(1));
    let mut hits = std::collections::BTreeMap::new();
    for i in 0..n {
        let f = tcp([10, 1, (i >> 8) as u8, i as u8], 1000 + i * 7);
        let a = out_ports(&snap, &mut w0, &f);
        assert_eq!(a.len(), 1, "one bucket");
        assert_eq!(out_ports(&snap, &mut w1, &f), a, "same flow, same bucket");
        assert_eq!(out_ports(&snap, &mut w0, &f), a, "same flow, same bucket");
        *hits.entry(a[0]).or_insert(0) += 1;
    }
    hits
}

#[test]
fn dp_hash_spreads_flows_by_weight_and_keeps_each_on_its_bucket() {
    // OVN's load balancer group, its ct() buckets made outputs.
    let mut p = pipeline();
    add(
        &mut p,
        "group_id=1,type=select,selection_method=dp_hash,\
         bucket=bucket_id=0,weight:100,actions=output:2,\
         bucket=bucket_id=1,weight:100,actions=output:3",
    );
    let hits = spread(&mut p, 2000);
    assert_eq!(
        hits.keys().copied().collect::<Vec<_>>(),
        vec![2, 3],
        "{hits:?}"
    );
    assert!((800..1200).contains(&hits[&2]), "{hits:?}");
    // 1:3.
    add_or_modify(
        &mut p,
        "group_id=1,type=select,selection_method=dp_hash,\
         bucket=weight:1,actions=output:2,bucket=weight:3,actions=output:3",
    );
    let hits = spread(&mut p, 2000);
    assert!((350..650).contains(&hits[&2]), "{hits:?}");
    // A dead bucket's flows go to the live one; the live one's stay.
    let before: Vec<Vec<u32>> = (0..200u16)
        .map(|i| ports(&mut p, &tcp([10, 2, 0, i as u8], i)))
        .collect();
    add_or_modify(
        &mut p,
        "group_id=1,type=select,selection_method=dp_hash,\
         bucket=weight:1,watch_port:5,actions=output:2,bucket=weight:3,actions=output:3",
    );
    p.set_port(PortState {
        live: false,
        ..PortState::up(5)
    });
    for (i, b) in before.iter().enumerate() {
        let now = ports(&mut p, &tcp([10, 2, 0, i as u8], i as u16));
        assert_eq!(now, vec![3]);
        if b == &vec![3] {
            assert_eq!(&now, b);
        }
    }
}

#[test]
fn dp_hash_with_weights_past_256_slots_still_selects() {
    // Open vSwitch falls back to its default hash: every flow still goes
    // somewhere, by weight.
    let mut p = pipeline();
    add(
        &mut p,
        "group_id=1,type=select,selection_method=dp_hash,\
         bucket=weight:1,actions=output:2,bucket=weight:1000,actions=output:3",
    );
    let hits = spread(&mut p, 500);
    assert!(hits[&3] > 480, "{hits:?}");
}

#[test]
fn hash_fields_hash_the_named_fields_only() {
    let mut p = pipeline();
    add(
        &mut p,
        "group_id=1,type=select,selection_method=hash,fields(ip_src),\
         bucket=bucket_id:0,actions=output:2,bucket=bucket_id:1,actions=output:3,\
         bucket=bucket_id:2,actions=output:4",
    );
    // Flows of one source, whatever their ports: one bucket.
    for src in 0..50u8 {
        let first = ports(&mut p, &tcp([10, 3, 0, src], 1));
        for sport in 2..20 {
            assert_eq!(ports(&mut p, &tcp([10, 3, 0, src], sport)), first);
        }
    }
    // Across sources, all three buckets.
    let hits = spread(&mut p, 1500);
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert!(hits.values().all(|&n| n > 300), "{hits:?}");
    // A mask keeps only the bits it names: /24 sources share a bucket.
    add_or_modify(
        &mut p,
        "group_id=1,type=select,selection_method=hash,fields=ip_src=255.255.255.0,\
         bucket=actions=output:2,bucket=actions=output:3",
    );
    let a = ports(&mut p, &tcp([10, 4, 0, 1], 1));
    for h in 2..100u8 {
        assert_eq!(ports(&mut p, &tcp([10, 4, 0, h], h as u16)), a);
    }
    // Fields a packet lacks (UDP ports of a TCP packet) are left out.
    add_or_modify(
        &mut p,
        "group_id=1,type=select,selection_method=hash,fields(ip_src,udp_src),\
         bucket=actions=output:2,bucket=actions=output:3",
    );
    let a = ports(&mut p, &tcp([10, 5, 0, 1], 1));
    for sport in 2..50 {
        assert_eq!(ports(&mut p, &tcp([10, 5, 0, 1], sport)), a);
    }
}

#[test]
fn hash_takes_weights_and_never_a_zero_weight_bucket() {
    let mut p = pipeline();
    add(
        &mut p,
        "group_id=1,type=select,selection_method=hash,fields(ip_src,tcp_src),\
         bucket=weight:0,actions=output:2,bucket=weight:5,actions=output:3,\
         bucket=weight:5,actions=output:4",
    );
    let hits = spread(&mut p, 1000);
    assert!(!hits.contains_key(&2), "{hits:?}");
    assert!(hits[&3] > 350 && hits[&4] > 350, "{hits:?}");
}

fn add_or_modify(p: &mut Pipeline, s: &str) {
    let mut g = parse_group_mod(s).unwrap();
    g.command = GroupModCommand::Modify;
    p.group_mod(&g, 0).unwrap_or_else(|e| panic!("{s}: {e}"));
}

fn bucket_cmd(p: &mut Pipeline, c: GroupModCommand, s: &str) -> Result<(), ErrorCode> {
    let g = parse_group_mod_for(s, c).unwrap();
    p.group_mod(&g, 0).map(|_| ()).map_err(|e| e.code)
}

fn insert(p: &mut Pipeline, s: &str) -> Result<(), ErrorCode> {
    bucket_cmd(p, GroupModCommand::InsertBucket, s)
}

fn remove(p: &mut Pipeline, s: &str) -> Result<(), ErrorCode> {
    bucket_cmd(p, GroupModCommand::RemoveBucket, s)
}

/// The group as GROUP_DESC reports it, in ovs-ofctl's text.
fn text(p: &Pipeline, id: u32) -> String {
    let g = &p.groups()[&id];
    let mut gm = GroupMod::new(
        GroupModCommand::Add,
        g.rt.group_type,
        id,
        g.rt.buckets.clone(),
    );
    gm.selection = g.rt.selection.clone();
    format_group_mod(&gm)
}

const GMF: fn(GroupModFailedCode) -> ErrorCode = ErrorCode::GroupModFailed;

#[test]
fn insert_and_remove_buckets_as_open_vswitch_does() {
    let mut p = pipeline();
    add(
        &mut p,
        "group_id=1,type=select,selection_method=dp_hash,\
         bucket=bucket_id:0,weight:100,actions=output:2,bucket=bucket_id:1,weight:100,actions=output:3",
    );
    // First, after an id, last; inserted buckets without weight weigh 0
    // (ovs-ofctl sends them in an `all` group mod); the group keeps its
    // type and selection method.
    insert(
        &mut p,
        "group_id=1,command_bucket_id=first,bucket=bucket_id:5,actions=output:2",
    )
    .unwrap();
    insert(
        &mut p,
        "group_id=1,command_bucket_id=0,bucket=bucket_id:6,actions=output:3,bucket=bucket_id:9,weight:4,actions=output:4",
    )
    .unwrap();
    insert(
        &mut p,
        "group_id=1,command_bucket_id=last,bucket=bucket_id:7,actions=output:5",
    )
    .unwrap();
    // Open vSwitch 3.1 dumps (ovs-ofctl -O OpenFlow15 dump-groups) after the same:
    assert_eq!(
        text(&p, 1),
        "group_id=1,type=select,selection_method=dp_hash,\
         bucket=bucket_id:5,weight:0,actions=output:2,\
         bucket=bucket_id:0,weight:100,actions=output:2,\
         bucket=bucket_id:6,weight:0,actions=output:3,\
         bucket=bucket_id:9,weight:4,actions=output:4,\
         bucket=bucket_id:1,weight:100,actions=output:3,\
         bucket=bucket_id:7,weight:0,actions=output:5"
    );
    // Errors: an id the group has, an unknown bucket, an unknown group,
    // a watch in the `all` mod ovs-ofctl sends.
    assert_eq!(
        insert(
            &mut p,
            "group_id=1,command_bucket_id=last,bucket=bucket_id:7,actions=output:2"
        ),
        Err(GMF(GroupModFailedCode::BucketExists))
    );
    assert_eq!(
        insert(
            &mut p,
            "group_id=1,command_bucket_id=42,bucket=bucket_id:8,actions=output:2"
        ),
        Err(GMF(GroupModFailedCode::UnknownBucket))
    );
    assert_eq!(
        insert(
            &mut p,
            "group_id=9,command_bucket_id=last,bucket=bucket_id:8,actions=output:2"
        ),
        Err(GMF(GroupModFailedCode::UnknownGroup))
    );
    assert_eq!(
        insert(
            &mut p,
            "group_id=1,command_bucket_id=last,bucket=bucket_id:8,watch_port:2,actions=output:2"
        ),
        Err(GMF(GroupModFailedCode::WatchUnsupported))
    );
    // Remove: first, last, by id, unknown, all.
    remove(&mut p, "group_id=1,command_bucket_id=first").unwrap();
    remove(&mut p, "group_id=1,command_bucket_id=last").unwrap();
    remove(&mut p, "group_id=1,command_bucket_id=6").unwrap();
    assert_eq!(
        text(&p, 1),
        "group_id=1,type=select,selection_method=dp_hash,\
         bucket=bucket_id:0,weight:100,actions=output:2,\
         bucket=bucket_id:9,weight:4,actions=output:4,\
         bucket=bucket_id:1,weight:100,actions=output:3"
    );
    assert_eq!(
        remove(&mut p, "group_id=1,command_bucket_id=42"),
        Err(GMF(GroupModFailedCode::UnknownBucket))
    );
    assert_eq!(
        remove(&mut p, "group_id=9,command_bucket_id=all"),
        Err(GMF(GroupModFailedCode::UnknownGroup))
    );
    // Traffic follows: only the remaining buckets' ports.
    let hits = spread(&mut p, 600);
    assert_eq!(
        hits.keys().copied().collect::<Vec<_>>(),
        vec![2, 3, 4],
        "{hits:?}"
    );
    remove(&mut p, "group_id=1").unwrap();
    assert_eq!(
        text(&p, 1),
        "group_id=1,type=select,selection_method=dp_hash"
    );
    assert!(ports(&mut p, &tcp([10, 0, 0, 1], 1)).is_empty());
    // FIRST and LAST of a group without buckets: nothing to do.
    remove(&mut p, "group_id=1,command_bucket_id=first").unwrap();
    remove(&mut p, "group_id=1,command_bucket_id=last").unwrap();
    // And buckets come back, into the empty group.
    insert(
        &mut p,
        "group_id=1,command_bucket_id=first,bucket=bucket_id:3,weight:1,actions=output:2",
    )
    .unwrap();
    assert_eq!(ports(&mut p, &tcp([10, 0, 0, 1], 1)), vec![2]);
}

#[test]
fn bucket_commands_keep_counters_and_check_the_result() {
    let mut p = pipeline();
    add(
        &mut p,
        "group_id=2,type=all,bucket=bucket_id:0,actions=output:2",
    );
    add(
        &mut p,
        "group_id=1,type=ff,bucket=bucket_id:0,watch_port:2,actions=output:2",
    );
    let _ = ports(&mut p, &tcp([10, 0, 0, 1], 1));
    let packets = |p: &Pipeline| {
        let g = &p.groups()[&1];
        (
            g.rt.counters.totals().packets,
            g.rt.bucket_counters[0].totals().packets,
        )
    };
    assert_eq!(packets(&p), (1, 1));
    // Into a fast-failover group, a bucket without a watch (ovs-ofctl's
    // `all` mod cannot carry one).
    insert(
        &mut p,
        "group_id=1,command_bucket_id=first,bucket=bucket_id:1,actions=output:3",
    )
    .unwrap();
    let g = &p.groups()[&1];
    assert_eq!(g.rt.buckets[0].bucket_id, 1);
    assert_eq!(
        g.rt.bucket_counters[1].totals().packets,
        1,
        "bucket 0 kept its counters"
    );
    assert_eq!(
        g.rt.counters.totals().packets,
        1,
        "the group kept its counters"
    );
    // A loop through an inserted bucket is refused like any other.
    assert_eq!(
        insert(
            &mut p,
            "group_id=2,command_bucket_id=last,bucket=bucket_id:1,actions=group:2"
        ),
        Err(GMF(GroupModFailedCode::Loop))
    );
    // REMOVE_BUCKET carries no buckets.
    let mut g = parse_group_mod_for(
        "group_id=2,command_bucket_id=all",
        GroupModCommand::RemoveBucket,
    )
    .unwrap();
    g.buckets = parse_group_mod("group_id=2,bucket=output:2")
        .unwrap()
        .buckets;
    assert_eq!(
        p.group_mod(&g, 0).unwrap_err().code,
        GMF(GroupModFailedCode::BadBucket)
    );
    // An inserted bucket whose id the insert itself repeats: the group
    // keeps its buckets.
    let before = text(&p, 2);
    let mut g = parse_group_mod_for(
        "group_id=2,command_bucket_id=last,bucket=bucket_id:4,actions=output:3",
        GroupModCommand::InsertBucket,
    )
    .unwrap();
    g.buckets.push(g.buckets[0].clone());
    assert!(p.group_mod(&g, 0).is_err());
    assert_eq!(text(&p, 2), before);
    let _ = (BUCKET_ALL, BUCKET_FIRST, BUCKET_LAST);
}

#[test]
fn an_indirect_group_runs_every_bucket_insert_bucket_gave_it() {
    let mut p = pipeline();
    add(
        &mut p,
        "group_id=1,type=indirect,bucket=bucket_id:0,actions=output:2",
    );
    insert(
        &mut p,
        "group_id=1,command_bucket_id=last,bucket=bucket_id:1,actions=output:3",
    )
    .unwrap();
    assert_eq!(ports(&mut p, &tcp([10, 0, 0, 1], 1)), vec![2, 3]);
}
