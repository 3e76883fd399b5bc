//! The stages section: what each step of the packet path costs, in ns per
//! packet, on a small rule set so that the step's own cost shows.
//!
//! The rule set: the rule under test (`in_port=1,tcp,nw_dst=10.0.0.2,
//! tp_dst=80`, priority 100), nine decoys of higher priority each with its
//! own mask that the test frame does not match, and the table-miss rule: a
//! cache miss searches every subtable. One TCP/IPv4 64-byte frame, always
//! the same flow.
//!
//! * `parse`: flow-key extraction alone.
//! * `cache_hit`: `Worker::process` with the rule `output:2`: parse, cache
//!   hit, the output, the rule's counters.
//! * `classifier_miss`: the same worker without a cache minus `cache_hit`
//!   (alternating rounds): the classifier lookup over the subtables in
//!   place of a cache hit.
//! * one row per action kind: the rule with that action (then `output:2`,
//!   or a group instead of it) minus the rule with `output:2` alone, in
//!   alternating rounds. Both sides restore the frame from a template
//!   before every packet (the actions edit it in place), so the copy
//!   cancels out.
//!
//! Not here: the per-rule counters are always charged on the fast path
//! (there is no switch to turn them off, and the bench adds none to the
//! library), so their cost is inside `cache_hit` and has no row of its
//! own. Receive and transmit are not in the pipeline (the lab measures
//! them as the nullx floor).

use std::time::Instant;

use ofp::msg::meter::MeterModCommand;
use ofp::text::{parse_flow_mod, parse_group_mod, parse_meter_mod};
use packet::{extract, FlowKey};
use pipeline::{Pipeline, PortState, Snapshot, Worker};
use std::sync::Arc;

use crate::measure::{delta, rounds, Plan, Stat};
use crate::rules::frame;

/// Packets per timed call.
const BATCH: usize = 1024;

const TARGET: &str = "priority=100,in_port=1,tcp,nw_dst=10.0.0.2,tp_dst=80";
const BASE_ACTIONS: &str = "output:2";

/// Higher-priority rules the test frame misses, one mask each.
const DECOYS: &[&str] = &[
    "ip,nw_src=172.16.0.0/12",
    "ip,nw_src=192.168.0.0/16",
    "ip,nw_dst=192.168.7.0/24",
    "udp,tp_dst=53",
    "dl_src=02:00:00:00:00:77",
    "dl_dst=02:00:00:00:00:88",
    "in_port=4",
    "tcp,tp_src=22",
    "arp",
];

/// Action rows: name, the rule's actions, whether the frame is tagged,
/// what it measures.
const ACTIONS: &[(&str, &str, bool, &str)] = &[
    (
        "set_field_eth_dst",
        "set_field:02:00:00:00:00:99->eth_dst,output:2",
        false,
        "rewrite the destination MAC",
    ),
    (
        "set_field_ipv4_dst",
        "set_field:10.0.0.9->ip_dst,output:2",
        false,
        "rewrite the IPv4 destination, checksums updated incrementally",
    ),
    (
        "set_field_tcp_dst",
        "set_field:8080->tcp_dst,output:2",
        false,
        "rewrite the TCP destination port, checksum updated incrementally",
    ),
    (
        "push_vlan",
        "push_vlan:0x8100,output:2",
        false,
        "insert an 802.1Q tag",
    ),
    (
        "pop_vlan",
        "pop_vlan,output:2",
        true,
        "remove the 802.1Q tag of a tagged frame (base: the tagged frame, output only)",
    ),
    (
        "dec_ttl",
        "dec_ttl,output:2",
        false,
        "decrement the IPv4 TTL, checksum updated",
    ),
    (
        "push_mpls",
        "push_mpls:0x8847,output:2",
        false,
        "insert an MPLS label stack entry",
    ),
    (
        "group_select",
        "group:1",
        false,
        "a select group of 4 buckets (each an output) in place of the output",
    ),
    (
        "group_all",
        "group:2",
        false,
        "an all group of 4 buckets (4 copies out) in place of the output",
    ),
    (
        "meter",
        "meter:1,output:2",
        false,
        "a meter before the output (pktps dscp_remark band, never exceeded)",
    ),
];

/// The test frame, tagged (VLAN 100) or not.
pub(crate) fn test_frame(tagged: bool) -> Vec<u8> {
    let vlan = tagged.then_some(100);
    frame(
        vlan,
        0x0200_0000_0002,
        0x0a00_0001,
        0x0a00_0002,
        6,
        1234,
        80,
    )
}

/// A pipeline with the rule set, the target rule doing `actions`.
pub(crate) fn rig(actions: &str) -> Arc<Snapshot> {
    let mut p = Pipeline::new(pipeline::Config {
        n_tables: 1,
        ..Default::default()
    });
    for n in 1..=5 {
        p.set_port(PortState::up(n));
    }
    let mut mm =
        parse_meter_mod("meter=1,pktps,bands=type=dscp_remark,rate=1000000000,prec_level=1")
            .expect("valid bench meter");
    mm.command = MeterModCommand::Add;
    p.meter_mod(&mm, 0).expect("valid bench meter");
    let buckets = "bucket=output:2,bucket=output:3,bucket=output:4,bucket=output:5";
    for g in [
        format!("group_id=1,type=select,{buckets}"),
        format!("group_id=2,type=all,{buckets}"),
    ] {
        let gm = parse_group_mod(&g).expect("valid bench group");
        p.group_mod(&gm, 0).expect("valid bench group");
    }
    let flows = DECOYS
        .iter()
        .map(|d| format!("priority=200,{d},actions=drop"))
        .chain([
            // A pop needs a match that says the packets are tagged.
            if actions.starts_with("pop_vlan") {
                format!("{TARGET},vlan_tci=0x1000/0x1000,actions={actions}")
            } else {
                format!("{TARGET},actions={actions}")
            },
            "priority=0,actions=drop".to_string(),
        ]);
    for f in flows {
        let fm = parse_flow_mod(&f).unwrap_or_else(|e| panic!("{f}: {e}"));
        p.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{f}: {e:?}"));
    }
    p.snapshot()
}

/// Runs packets of one frame through a worker and snapshot.
struct Side {
    w: Worker,
    snap: Arc<Snapshot>,
}

impl Side {
    /// `w` on `snap`, checked to reach an output with `template` (a frame
    /// that fell to the table-miss rule would time the wrong thing).
    fn new(mut w: Worker, snap: Arc<Snapshot>, template: &[u8]) -> Side {
        let out = w.process(&snap, 1, &mut template.to_vec(), 0).len();
        assert!(out > 0, "the bench frame does not reach an output");
        Side { w, snap }
    }
}

/// A closure running `BATCH` packets of `template` through the base side
/// (`false`) or the variant (`true`), restoring the frame before each
/// when `restore`. Both sides share the frame buffers. The clock passed
/// is real time (meters refill by it).
fn pair(
    mut base: Side,
    mut variant: Side,
    template: Vec<u8>,
    restore: bool,
) -> impl FnMut(bool) -> u64 {
    let mut buf = template.clone();
    let start = Instant::now();
    move |v| {
        let s = if v { &mut variant } else { &mut base };
        let now = start.elapsed().as_nanos() as u64;
        let mut acc = 0;
        for _ in 0..BATCH {
            if restore {
                buf.clear();
                buf.extend_from_slice(&template);
            }
            acc += s.w.process(&s.snap, 1, &mut buf, now).len() as u64;
        }
        acc
    }
}

/// Whether one packet of `template` through `snap` comes out edited: an
/// action row whose frame is not edited would time nothing.
fn edits(snap: &Snapshot, template: &[u8]) -> bool {
    let mut buf = template.to_vec();
    Worker::new(0).process(snap, 1, &mut buf, 0);
    buf != template
}

fn print(stage: &str, s: Stat, what: &str, json: bool) {
    if json {
        println!(
            "{{\"scenario\": \"stages\", \"stage\": \"{stage}\", \"ns_per_pkt\": {:.1}, \"min_ns\": {:.1}, \"max_ns\": {:.1}, \"what\": \"{what}\"}}",
            s.median, s.min, s.max
        );
    } else {
        println!(
            "{stage:<20} {:>8.1} {:>8.1} {:>8.1}  {what}",
            s.median, s.min, s.max
        );
    }
}

/// Every stage, a table or JSON lines.
pub fn run(plan: Plan, json: bool) {
    if !json {
        println!(
            "\n{:<20} {:>8} {:>8} {:>8}  what (ns per packet; actions: added to a plain output)",
            "stage", "ns/pkt", "min_ns", "max_ns"
        );
    }
    let plain = test_frame(false);
    let base = rig(BASE_ACTIONS);

    let mut key = FlowKey::default();
    let parse = rounds(plan, BATCH, || {
        let mut acc = 0;
        for _ in 0..BATCH {
            extract(std::hint::black_box(&plain), 1, &mut key);
            acc += key.w[2];
        }
        acc
    });
    print(
        "parse",
        parse,
        "flow-key extraction of a TCP/IPv4 frame",
        json,
    );

    let cached = || Side::new(Worker::new(0), base.clone(), &plain);
    let mut only = pair(cached(), cached(), plain.clone(), false);
    let hit = rounds(plan, BATCH, || only(false));
    print(
        "cache_hit",
        hit,
        "Worker::process, one flow, rule output: parse + cache hit + output + counters",
        json,
    );

    let subtables = base.tables[0].subtables();
    let uncached = Side::new(Worker::with_cache(0, 0), base.clone(), &plain);
    let miss = delta(plan, BATCH, pair(cached(), uncached, plain.clone(), false));
    let what = format!(
        "Worker without cache minus cache_hit: the classifier lookup over {subtables} subtables in place of a cache hit"
    );
    print("classifier_miss", miss, &what, json);

    for &(stage, actions, tagged, what) in ACTIONS {
        let f = test_frame(tagged);
        let variant = rig(actions);
        let header_action = !(stage.starts_with("group") || stage == "meter");
        assert_eq!(
            edits(&variant, &f),
            header_action,
            "{stage}: the frame's edit is not what the row measures"
        );
        let sides = (
            Side::new(Worker::new(0), base.clone(), &f),
            Side::new(Worker::new(0), variant, &f),
        );
        let d = delta(plan, BATCH, pair(sides.0, sides.1, f, true));
        print(stage, d, what, json);
    }
}
