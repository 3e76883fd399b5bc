//! Packets through the pipeline: instructions, the action set, header
//! edits with valid checksums, reserved ports, groups, meters, TTL expiry,
//! counters and snapshot isolation.

use etherparse::PacketBuilder;
use ofp::msg::flow::{FlowModCommand, PacketInReason};
use ofp::msg::group::GroupModCommand;
use ofp::msg::meter::MeterModCommand;
use ofp::port::port_no;
use ofp::text::{parse_flow_mod, parse_group_mod, parse_meter_mod};
use packet::checksum;
use packet::wire::build::{self as wb, Ext, Ip, IpFields, Transport};
use pipeline::{Config, Output, Pipeline, PortState, Worker};

const SRC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const DST: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn tcp(ttl: u8, sport: u16) -> Vec<u8> {
    let b = PacketBuilder::ethernet2(SRC, DST)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], ttl)
        .tcp(sport, 80, 7, 1000);
    let mut v = Vec::new();
    b.write(&mut v, b"payload").unwrap();
    v
}

fn udp() -> Vec<u8> {
    let b = PacketBuilder::ethernet2(SRC, DST)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(5000, 53);
    let mut v = Vec::new();
    b.write(&mut v, b"query").unwrap();
    v
}

fn pipeline(flows: &[&str]) -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 8,
        ..Config::default()
    });
    for n in 1..=4 {
        p.set_port(PortState::up(n));
    }
    for f in flows {
        let fm = parse_flow_mod(f).unwrap();
        p.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    p
}

fn run(p: &mut Pipeline, in_port: u32, frame: &mut Vec<u8>) -> Vec<Output> {
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    w.process(&snap, in_port, frame, 1_000).to_vec()
}

fn ports(outs: &[Output]) -> Vec<u32> {
    outs.iter().map(|o| o.port).collect()
}

/// IPv4 header and TCP/UDP checksums of an untagged frame verify.
fn checksums_ok(f: &[u8]) -> bool {
    let ihl = (f[14] & 15) as usize * 4;
    if checksum::internet(&f[14..14 + ihl]) != 0 {
        return false;
    }
    let total = u16::from_be_bytes([f[16], f[17]]) as usize;
    let seg = &f[14 + ihl..14 + total];
    let mut src = [0u8; 4];
    let mut dst = [0u8; 4];
    src.copy_from_slice(&f[26..30]);
    dst.copy_from_slice(&f[30..34]);
    let pseudo = checksum::pseudo_v4(src, dst, f[23], seg.len() as u16);
    checksum::finish(checksum::sum(seg, pseudo)) == 0
}

#[test]
fn forward_miss_and_table_miss() {
    let mut p = pipeline(&["priority=10,in_port=1,actions=output:2"]);
    let mut f = tcp(64, 1);
    let outs = run(&mut p, 1, &mut f);
    assert_eq!(ports(&outs), vec![2]);
    assert!(
        outs[0].data.is_none(),
        "the final packet is shared, not copied"
    );
    assert!(
        run(&mut p, 3, &mut tcp(64, 1)).is_empty(),
        "no rule, no table-miss entry: drop"
    );
    p.flow_mod(
        &parse_flow_mod("priority=0,actions=controller:128").unwrap(),
        0,
    )
    .unwrap();
    let outs = run(&mut p, 3, &mut tcp(64, 1));
    assert_eq!(ports(&outs), vec![port_no::CONTROLLER]);
    let c = outs[0].controller.as_ref().unwrap();
    assert_eq!(
        (c.reason, c.max_len, c.table_id),
        (PacketInReason::NoMatch, 128, 0)
    );
    // A non-miss rule to the controller says ACTION.
    p.flow_mod(
        &parse_flow_mod("priority=5,in_port=4,actions=controller").unwrap(),
        0,
    )
    .unwrap();
    let outs = run(&mut p, 4, &mut tcp(64, 1));
    assert_eq!(
        outs[0].controller.as_ref().unwrap().reason,
        PacketInReason::Action
    );
}

#[test]
fn set_field_keeps_checksums_valid_and_earlier_outputs_keep_old_bytes() {
    let mut p = pipeline(&[
        "priority=10,tcp,actions=output:2,set_field:192.168.7.7->ipv4_src,set_field:8080->tcp_dst,set_field:02:aa:00:00:00:01->eth_dst,dec_nw_ttl,output:3",
        "priority=10,udp,actions=set_field:10.9.9.9->ipv4_dst,set_field:99->udp_src,set_field:46->ip_dscp,output:2",
    ]);
    let original = tcp(64, 1234);
    let mut f = original.clone();
    let outs = run(&mut p, 1, &mut f);
    assert_eq!(ports(&outs), vec![2, 3]);
    assert_eq!(
        outs[0].data.as_deref(),
        Some(&original[..]),
        "output before the edits sends the original"
    );
    assert!(outs[1].data.is_none());
    assert_eq!(&f[26..30], &[192, 168, 7, 7]);
    assert_eq!(u16::from_be_bytes([f[36], f[37]]), 8080);
    assert_eq!(&f[0..6], &[2, 0xaa, 0, 0, 0, 1]);
    assert_eq!(f[22], 63, "TTL decremented");
    assert!(checksums_ok(&f), "incremental checksums verify");

    let mut u = udp();
    run(&mut p, 1, &mut u);
    assert_eq!(&u[30..34], &[10, 9, 9, 9]);
    assert_eq!(u[15] >> 2, 46);
    assert!(checksums_ok(&u));
}

#[test]
fn goto_metadata_and_action_set_order() {
    let mut p = pipeline(&[
        "table=0,priority=1,actions=write_actions(output:4),write_metadata:0x5/0xf,goto_table:2",
        "table=2,priority=1,metadata=0x5/0xf,actions=write_actions(set_field:02:00:00:00:00:09->eth_src),goto_table:3",
        "table=3,priority=1,actions=clear_actions,write_actions(output:3,set_field:02:00:00:00:00:07->eth_src)",
    ]);
    let mut f = tcp(64, 1);
    let outs = run(&mut p, 1, &mut f);
    // clear_actions in table 3 dropped output:4 and the first set_field.
    assert_eq!(ports(&outs), vec![3]);
    assert_eq!(
        &f[6..12],
        &[2, 0, 0, 0, 0, 7],
        "set-field runs before output in the action set"
    );
    // Without the metadata, table 2 misses and the packet is dropped at the miss.
    let mut p = pipeline(&[
        "table=0,priority=1,actions=write_actions(output:4),write_metadata:0x4/0xf,goto_table:2",
        "table=2,priority=1,metadata=0x5/0xf,actions=output:2",
    ]);
    assert!(run(&mut p, 1, &mut tcp(64, 1)).is_empty());
}

#[test]
fn reserved_ports() {
    let mut p = pipeline(&[
        "priority=1,in_port=1,actions=flood",
        "priority=1,in_port=2,actions=all",
        "priority=1,in_port=3,actions=in_port",
    ]);
    p.set_port(PortState {
        port_no: 3,
        live: true,
        no_flood: true,
        no_fwd: false,
        no_recv: false,
    });
    p.set_port(PortState {
        port_no: 4,
        live: false,
        no_flood: false,
        no_fwd: false,
        no_recv: false,
    });
    assert_eq!(
        ports(&run(&mut p, 1, &mut tcp(64, 1))),
        vec![2],
        "flood skips in_port, no_flood and down ports"
    );
    assert_eq!(
        ports(&run(&mut p, 2, &mut tcp(64, 1))),
        vec![1, 3],
        "all skips in_port and down ports"
    );
    assert_eq!(ports(&run(&mut p, 3, &mut tcp(64, 1))), vec![3]);
    // Output to the ingress port by number is dropped.
    let mut q = pipeline(&["priority=1,actions=output:1,output:2"]);
    assert_eq!(ports(&run(&mut q, 1, &mut tcp(64, 1))), vec![2]);
}

#[test]
fn vlan_push_set_pop() {
    let mut p = pipeline(&[
        "priority=1,in_port=1,actions=push_vlan:0x8100,set_field:4106->vlan_vid,output:2",
        "priority=1,in_port=2,dl_vlan=10,actions=pop_vlan,output:1",
    ]);
    let original = tcp(64, 1);
    let mut f = original.clone();
    run(&mut p, 1, &mut f);
    assert_eq!(&f[12..16], &[0x81, 0x00, 0x00, 0x0a]);
    assert_eq!(f.len(), original.len() + 4);
    let outs = run(&mut p, 2, &mut f);
    assert_eq!(ports(&outs), vec![1]);
    assert_eq!(f, original);
}

#[test]
fn mpls_push_pop_restores_the_packet() {
    let mut p = pipeline(&[
        "priority=1,in_port=1,ip,actions=push_mpls:0x8847,set_field:100->mpls_label,output:2",
        "priority=1,in_port=2,mpls,mpls_label=100,actions=pop_mpls:0x0800,output:1",
    ]);
    let original = tcp(64, 1);
    let mut f = original.clone();
    run(&mut p, 1, &mut f);
    assert_eq!(&f[12..14], &[0x88, 0x47]);
    let lse = u32::from_be_bytes([f[14], f[15], f[16], f[17]]);
    assert_eq!(
        (lse >> 12, (lse >> 8) & 1, lse & 0xff),
        (100, 1, 64),
        "label, bottom of stack, TTL from IP"
    );
    assert_eq!(ports(&run(&mut p, 2, &mut f)), vec![1]);
    assert_eq!(f, original);
}

fn group(p: &mut Pipeline, s: &str) {
    let mut g = parse_group_mod(s).unwrap();
    g.command = GroupModCommand::Add;
    p.group_mod(&g, 0).unwrap();
}

#[test]
fn groups_all_select_indirect_ff() {
    let mut p = pipeline(&[]);
    group(
        &mut p,
        "group_id=1,type=all,bucket=set_field:02:00:00:00:00:11->eth_dst,output:2,bucket=output:3",
    );
    group(
        &mut p,
        "group_id=2,type=select,bucket=weight:1,output:3,bucket=weight:3,output:4",
    );
    group(&mut p, "group_id=3,type=indirect,bucket=group:1");
    group(
        &mut p,
        "group_id=4,type=ff,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3",
    );
    for (g, port) in [(1, 1), (2, 2), (3, 5), (4, 4)] {
        p.flow_mod(
            &parse_flow_mod(&format!("priority=1,in_port={port},actions=group:{g}")).unwrap(),
            0,
        )
        .unwrap();
    }
    let original = tcp(64, 1);
    let mut f = original.clone();
    let outs = run(&mut p, 1, &mut f);
    assert_eq!(ports(&outs), vec![2, 3]);
    assert_eq!(
        &outs[0].data.as_ref().unwrap()[0..6],
        &[2, 0, 0, 0, 0, 0x11]
    );
    assert_eq!(
        outs[1].data.as_deref(),
        Some(&original[..]),
        "buckets do not see each other's edits"
    );
    assert_eq!(
        f, original,
        "the group does not change the packet the rule goes on with"
    );
    // Indirect to the all group.
    assert_eq!(ports(&run(&mut p, 5, &mut tcp(64, 1))), vec![2, 3]);
    // Select: a flow keeps its bucket; across flows the weights show.
    let mut hits = [0u32; 2];
    for sport in 0..2000u16 {
        let a = ports(&run(&mut p, 2, &mut tcp(64, sport)));
        let b = ports(&run(&mut p, 2, &mut tcp(64, sport)));
        assert_eq!(a, b, "same flow, same bucket");
        hits[(a[0] == 4) as usize] += 1;
    }
    assert!(
        (300..700).contains(&hits[0]) && (1300..1700).contains(&hits[1]),
        "{hits:?}"
    );
    // Fast failover: first live bucket.
    assert_eq!(ports(&run(&mut p, 4, &mut tcp(64, 1))), vec![2]);
    p.set_port(PortState {
        port_no: 2,
        live: false,
        no_flood: false,
        no_fwd: false,
        no_recv: false,
    });
    assert_eq!(ports(&run(&mut p, 4, &mut tcp(64, 1))), vec![3]);
    p.set_port(PortState {
        port_no: 3,
        live: false,
        no_flood: false,
        no_fwd: false,
        no_recv: false,
    });
    assert!(run(&mut p, 4, &mut tcp(64, 1)).is_empty());
}

#[test]
fn meters_drop_over_rate() {
    let mut p = pipeline(&[]);
    let mut m =
        parse_meter_mod("meter=1,pktps,burst,bands=type=drop,rate=10,burst_size=2").unwrap();
    m.command = MeterModCommand::Add;
    p.meter_mod(&m, 0).unwrap();
    p.flow_mod(
        &parse_flow_mod("priority=1,actions=meter:1,output:2").unwrap(),
        0,
    )
    .unwrap();
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    // 100 packets at the same instant: only the burst passes.
    let passed = (0..100)
        .filter(|_| !w.process(&snap, 1, &mut tcp(64, 1), 0).is_empty())
        .count();
    assert!((2..=3).contains(&passed), "{passed}");
    // One per 100 ms (the rate) all pass.
    let steady = (1..=50u64)
        .filter(|i| {
            !w.process(&snap, 1, &mut tcp(64, 1), i * 100_000_000 + 1_000_000_000)
                .is_empty()
        })
        .count();
    assert_eq!(steady, 50);
}

#[test]
fn ttl_expiry_goes_to_the_controller_when_asked() {
    let mut p = pipeline(&["priority=1,actions=dec_nw_ttl,output:2"]);
    assert!(
        run(&mut p, 1, &mut tcp(1, 1)).is_empty(),
        "dropped by default"
    );
    p.invalid_ttl_to_controller = true;
    let outs = run(&mut p, 1, &mut tcp(1, 1));
    assert_eq!(ports(&outs), vec![port_no::CONTROLLER]);
    assert_eq!(
        outs[0].controller.as_ref().unwrap().reason,
        PacketInReason::InvalidTtl
    );
}

#[test]
fn counters_and_snapshot_isolation() {
    let mut p = pipeline(&["priority=1,in_port=1,actions=output:2"]);
    let old = p.snapshot();
    let mut del = parse_flow_mod("in_port=1").unwrap();
    del.command = FlowModCommand::Delete;
    p.flow_mod(&del, 0).unwrap();
    let new = p.snapshot();
    let mut w = Worker::new(0);
    assert_eq!(
        ports(w.process(&old, 1, &mut tcp(64, 1), 0)),
        vec![2],
        "the old version still forwards"
    );
    assert!(w.process(&new, 1, &mut tcp(64, 1), 0).is_empty());
    assert!(new.version > old.version);

    let mut p = pipeline(&["priority=1,in_port=1,actions=output:2"]);
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    for _ in 0..3 {
        w.process(&snap, 1, &mut tcp(64, 1), 5);
    }
    w.process(&snap, 2, &mut tcp(64, 1), 5);
    let t = p.tables()[0].rules().next().unwrap().counters.totals();
    assert_eq!((t.packets, t.bytes), (3, 3 * tcp(64, 1).len() as u64));
    let tc = p.table_counters()[0].totals();
    assert_eq!((tc.packets, tc.bytes), (4, 3), "lookups 4, matched 3");
}

include!("edit_flows.rs");

fn edit_everything() -> Pipeline {
    let mut p = pipeline(&[]);
    group(
        &mut p,
        "group_id=1,type=all,bucket=pop_vlan,output:3,bucket=push_mpls:0x8847,output:4",
    );
    for f in EDIT_EVERYTHING {
        p.flow_mod(&parse_flow_mod(f).unwrap(), 0)
            .unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    p.invalid_ttl_to_controller = true;
    p
}

fn sample_frames() -> Vec<Vec<u8>> {
    let mut v = vec![tcp(64, 1), udp(), tcp(1, 9)];
    let mut b = Vec::new();
    PacketBuilder::ethernet2(SRC, DST)
        .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 9)
        .icmpv4_echo_request(1, 1)
        .write(&mut b, b"x")
        .unwrap();
    v.push(b);
    let mut b = Vec::new();
    PacketBuilder::ethernet2(SRC, DST)
        .ipv6([0x20; 16], [0x21; 16], 9)
        .tcp(1, 2, 3, 4)
        .write(&mut b, b"y")
        .unwrap();
    v.push(b);
    v.push(neighbour_solicitation());
    v
}

/// A neighbour solicitation (target ::) with a source link-layer address
/// option.
fn neighbour_solicitation() -> Vec<u8> {
    let t = Transport::Icmp {
        v6: true,
        ty: 135,
        code: 0,
        rest: [0; 4],
    };
    let body = wb::nd([0; 16], Some((1, wb::mac(SRC))));
    let fields = IpFields {
        ttl: 9,
        ..IpFields::default()
    };
    let ip = wb::ip(Ip::V6([0x20; 16]), Ip::V6([0x21; 16]), &fields, &t, &body);
    wb::ethernet(wb::mac(DST), wb::mac(SRC), None, 0x86dd, &ip)
}

#[test]
fn edits_keep_checksums_valid() {
    let mut p = edit_everything();
    let mut f = udp();
    let outs = run(&mut p, 1, &mut f);
    assert!(!outs.is_empty());
    // The UDP rule pushed a tag: strip it to check the IPv4/UDP checksums.
    let mut untagged = f.clone();
    untagged.drain(12..16);
    assert_eq!(u16::from_be_bytes([untagged[34], untagged[35]]), 1);
    assert!(checksums_ok(&untagged));
    let mut t = tcp(64, 5);
    run(&mut p, 1, &mut t);
    // The TCP rule's goto leads to table 1, which wrote a push_mpls action set.
    assert_eq!(&t[12..14], &[0x88, 0x48]);
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config { cases: 2000, ..Default::default() })]

    #[test]
    fn any_packet_through_every_edit_does_not_panic(i in 0usize..6, pos in proptest::prelude::any::<proptest::sample::Index>(), b in proptest::prelude::any::<u8>(), cut in proptest::prelude::any::<proptest::sample::Index>()) {
        let mut p = edit_everything();
        let snap = p.snapshot();
        let mut w = Worker::new(0);
        let mut f = sample_frames().swap_remove(i);
        let at = pos.index(f.len());
        f[at] = b;
        let keep = cut.index(f.len() + 1);
        f.truncate(keep.max(at + 1).min(f.len()));
        for port in [1, 2, 5] {
            let mut g = f.clone();
            w.process(&snap, port, &mut g, 7);
        }
    }
}

#[test]
fn exact_match_cache_never_serves_a_stale_rule() {
    let mut p = pipeline(&["priority=1,in_port=1,actions=output:2"]);
    let mut w = Worker::new(0);
    let s1 = p.snapshot();
    for _ in 0..3 {
        assert_eq!(ports(w.process(&s1, 1, &mut tcp(64, 1), 0)), vec![2]);
    }
    let (hits, misses) = w.cache_stats();
    assert_eq!((hits, misses), (2, 1));
    p.flow_mod(
        &parse_flow_mod("priority=5,in_port=1,actions=output:3").unwrap(),
        0,
    )
    .unwrap();
    let s2 = p.snapshot();
    assert_eq!(
        ports(w.process(&s2, 1, &mut tcp(64, 1), 0)),
        vec![3],
        "a new version invalidates the cache"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config { cases: 1000, ..Default::default() })]

    #[test]
    fn cache_and_no_cache_agree(i in 0usize..6, pos in proptest::prelude::any::<proptest::sample::Index>(), b in proptest::prelude::any::<u8>(), port in 1u32..6) {
        let mut p = edit_everything();
        let snap = p.snapshot();
        let mut cached = Worker::new(0);
        let mut plain = Worker::with_cache(0, 0);
        let mut f = sample_frames().swap_remove(i);
        let at = pos.index(f.len());
        f[at] = b;
        for _ in 0..2 {
            let (mut a, mut c) = (f.clone(), f.clone());
            let oa = cached.process(&snap, port, &mut a, 7).to_vec();
            let oc = plain.process(&snap, port, &mut c, 7).to_vec();
            proptest::prop_assert_eq!(oa, oc);
            proptest::prop_assert_eq!(a, c);
        }
    }
}

#[test]
fn trace_tells_each_step_and_changes_nothing() {
    let mut p = pipeline(&[]);
    group(
        &mut p,
        "group_id=1,type=all,bucket=output:2,bucket=dec_ttl,output:3",
    );
    for f in [
        "table=0,priority=10,cookie=0x7,tcp,tp_dst=80,actions=set_field:02:00:00:00:00:99->eth_dst,goto_table:1",
        "table=1,priority=5,actions=write_actions(group:1)",
        "table=0,priority=0,actions=controller",
    ] {
        p.flow_mod(&parse_flow_mod(f).unwrap(), 0).unwrap();
    }
    let snap = p.snapshot();
    let t = pipeline::trace::trace(&snap, 1, &tcp(64, 1000));
    let text = t.text(1);
    assert!(
        text.starts_with("Flow: tcp,in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,"),
        "{text}"
    );
    for want in [
        " 0. tcp,tp_dst=80, priority 10, cookie 0x7",
        "    set_field:02:00:00:00:00:99->eth_dst",
        "    goto_table:1",
        " 1. priority 5",
        "Action set: group:1",
        "group:1 (type=all): 2 bucket(s) from bucket 0",
        "bucket 1:",
        "dec_ttl",
        "output:3",
        "Final flow: tcp,in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:99",
        // The changes before each output, as Open vSwitch commits them.
        "Datapath actions: set(eth(dst=02:00:00:00:00:99)),2,set(ipv4(ttl=63)),3",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // Each bucket's copy: port 3's was decremented, port 2's was not.
    assert_eq!(t.outputs[0].data.as_ref().unwrap()[22], 64);
    assert_eq!(t.outputs[1].data.as_ref().unwrap()[22], 63);
    // Nothing counted: rule, table and group counters are untouched.
    let flows = p.flow_stats(&Default::default(), 0).unwrap();
    assert!(flows.iter().all(|f| f.packet_count == 0));
    let mut w = Worker::new(0);
    let outs = w.process(&snap, 1, &mut tcp(64, 1000), 1).to_vec();
    assert_eq!(ports(&outs), [2, 3], "the fast path agrees with the trace");

    // A miss goes to the controller with its reason; no rule at all drops.
    let t = pipeline::trace::trace(&snap, 1, &udp());
    assert!(
        t.text(1)
            .contains("Datapath actions: controller(reason=no_match,table=0)"),
        "{}",
        t.text(1)
    );
    let empty = pipeline(&[]).snapshot();
    let t = pipeline::trace::trace(&empty, 1, &udp());
    assert!(t.text(1).contains(" 0. No match.\n    drop"));
    assert!(t.text(1).ends_with("Datapath actions: drop\n"));
}

/// An IPv6 TCP frame, optionally behind a hop-by-hop options header.
fn tcp6(hop_by_hop: bool) -> Vec<u8> {
    let t = Transport::Tcp {
        sport: 1111,
        dport: 2222,
        seq: 7,
        ack: 0,
        flags: 0,
        window: 1000,
        options: &[],
    };
    // 8 bytes of hop-by-hop options (a PadN option) naming TCP.
    let exts = if hop_by_hop {
        vec![Ext::padding(0)]
    } else {
        vec![]
    };
    let fields = IpFields::default();
    let ip = wb::ipv6_ext([0x20; 16], [0x30; 16], &fields, &exts, &t, b"payload");
    wb::ethernet(wb::mac(DST), wb::mac(SRC), None, 0x86dd, &ip)
}

/// The transport checksum of an untagged IPv6 frame verifies, taking the
/// protocol from the header that names the transport (`next_at`).
fn checksum6_ok(f: &[u8], next_at: usize, l4: usize) -> bool {
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&f[22..38]);
    dst.copy_from_slice(&f[38..54]);
    let seg = &f[l4..];
    let pseudo = checksum::pseudo_v6(src, dst, f[next_at], seg.len() as u32);
    checksum::finish(checksum::sum(seg, pseudo)) == 0
}

#[test]
fn set_ip_proto_on_ipv6_rewrites_the_last_next_header_and_the_sum() {
    // As the OpenFlow switch test tool expects: the transport header keeps
    // its bytes, its checksum follows the pseudo-header's new protocol.
    let mut p =
        pipeline(&["priority=1,in_port=1,ipv6,ip_proto=6,actions=set_field:17->ip_proto,output:2"]);
    for (hbh, next_at, l4) in [(false, 20, 54), (true, 54, 62)] {
        let original = tcp6(hbh);
        assert!(checksum6_ok(&original, next_at, l4));
        let mut f = original.clone();
        assert_eq!(ports(&run(&mut p, 1, &mut f)), vec![2]);
        assert_eq!(f[next_at], 17, "hop-by-hop {hbh}");
        if hbh {
            assert_eq!(f[20], 0, "the fixed header still names the options");
        }
        assert!(checksum6_ok(&f, next_at, l4), "hop-by-hop {hbh}");
        assert_eq!(
            f[l4..l4 + 16],
            original[l4..l4 + 16],
            "ports, seq, ack kept"
        );
    }
}

#[test]
fn push_mpls_on_a_non_ip_frame_has_ttl_zero() {
    // OpenFlow 1.3.5 5.12.1: a field the new header cannot copy is zero.
    let mut p = pipeline(&["priority=1,in_port=1,arp,actions=push_mpls:0x8847,output:2"]);
    let arp = wb::arp(1, wb::mac(SRC), 0x0a00_0001, 0, 0x0a00_0002);
    let mut f = wb::ethernet(wb::mac(DST), wb::mac(SRC), None, 0x0806, &arp);
    f.resize(60, 0);
    assert_eq!(ports(&run(&mut p, 1, &mut f)), vec![2]);
    assert_eq!(&f[12..14], &[0x88, 0x47]);
    assert_eq!(
        &f[14..18],
        &[0, 0, 1, 0],
        "label 0, TC 0, bottom of stack, TTL 0"
    );
}

#[test]
fn pop_mpls_then_set_icmp_type_gives_the_plain_packet() {
    // The switch test tool's case: mpls/ipv4/icmp echo, pop_mpls then a
    // match and set_field on the ICMP type in the next table.
    let mut p = pipeline(&[
        "table=0,priority=1,actions=pop_mpls:0x0800,goto_table:1",
        "table=1,priority=1,icmp,icmp_type=8,actions=set_field:0->icmpv4_type,output:2",
    ]);
    let b = PacketBuilder::ethernet2(SRC, DST)
        .ipv4([192, 168, 10, 10], [192, 168, 20, 20], 64)
        .icmpv4_echo_request(0, 0);
    let mut plain = Vec::new();
    b.write(&mut plain, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    let lse = wb::mpls(100, 3, true, 64);
    let mut f = wb::ethernet(
        wb::mac(DST),
        wb::mac(SRC),
        None,
        0x8847,
        &[&lse[..], &plain[14..]].concat(),
    );
    assert_eq!(ports(&run(&mut p, 1, &mut f)), vec![2]);
    let mut want = plain.clone();
    want[34] = 0; // echo reply
    let c = u16::from_be_bytes([want[36], want[37]]);
    want[36..38].copy_from_slice(&checksum::update16(c, 0x0800, 0x0000).to_be_bytes());
    // 54 bytes less the label: padded to Ethernet's 60, as a NIC would.
    want.resize(60, 0);
    assert_eq!(f, want);
}

#[test]
fn set_ip_proto_on_ipv6_without_a_parsed_transport() {
    // GRE (47), which the parser does not take apart: the Next Header is
    // still the protocol (IPv4 rewrites any protocol too).
    let mut p = pipeline(&["priority=1,in_port=1,ipv6,actions=set_field:17->ip_proto,output:2"]);
    let mut f = tcp6(true);
    f[54] = 47; // the hop-by-hop header now names GRE
    assert_eq!(ports(&run(&mut p, 1, &mut f)), vec![2]);
    assert_eq!((f[20], f[54]), (0, 17));
}

/// OpenFlow 1.0-1.2's table miss (`Pipeline::miss_to_controller`, which
/// the agent sets while such a controller is connected): a packet no rule
/// matches goes to the controller as NO_MATCH, with the switch's
/// miss_send_len (max_len 0), marked for those versions only; without it,
/// it is dropped. A resubmit that finds nothing still does nothing.
#[test]
fn a_table_miss_is_a_packet_in_for_old_versions_only_when_asked() {
    let mut p = pipeline(&["table=1,priority=1,actions=output:3"]);
    assert!(run(&mut p, 1, &mut tcp(64, 1)).is_empty());
    p.miss_to_controller = true;
    let outs = run(&mut p, 1, &mut tcp(64, 1));
    assert_eq!(ports(&outs), vec![port_no::CONTROLLER]);
    let c = outs[0].controller.as_ref().expect("a packet-in");
    assert_eq!(
        (c.reason, c.table_id, c.max_len, c.implicit_miss),
        (PacketInReason::NoMatch, 0, 0, true)
    );
    let mut p = pipeline(&["priority=1,actions=resubmit(,2),output:2"]);
    p.miss_to_controller = true;
    assert_eq!(ports(&run(&mut p, 1, &mut tcp(64, 1))), vec![2]);
}

/// OpenFlow 1.4's PBB_UCA: the I-TAG's Use Customer Address bit, matched
/// and set (the other bits of the tag and the I-SID stay).
#[test]
fn pbb_uca_is_matched_and_set() {
    // Priority 5, I-SID 100; the customer's frame of EtherType IPv4 (20
    // bytes of zeros).
    let frame = |uca: bool| {
        let c = 0x2222_2222_2222;
        let customer = wb::ethernet(c, c, None, 0x0800, &[0; 20]);
        let body = [&wb::itag(5, false, uca, 100)[..], &customer].concat();
        wb::ethernet(0x2222_2222_2222, 0x1211_1111_1111, None, 0x88e7, &body)
    };
    let mut p = pipeline(&[
        "priority=2,dl_type=0x88e7,pbb_uca=1,actions=output:2",
        "priority=1,dl_type=0x88e7,pbb_uca=0,actions=set_field:1->pbb_uca,output:3",
    ]);
    assert_eq!(ports(&run(&mut p, 1, &mut frame(true))), vec![2]);
    let mut f = frame(false);
    assert_eq!(ports(&run(&mut p, 1, &mut f)), vec![3]);
    assert_eq!(f, frame(true), "the bit set, the rest as it was");
}
