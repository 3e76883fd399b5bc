//! OpenFlow 1.5's groups in the pipeline: the selection methods of select
//! groups (`dp_hash`, `hash` with fields) choosing buckets for packets.

use etherparse::PacketBuilder;
use ofp::msg::group::GroupModCommand;
use ofp::text::{parse_flow_mod, parse_group_mod};
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
