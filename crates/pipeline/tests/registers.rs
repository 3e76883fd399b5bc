//! Open vSwitch's metadata and extension fields through the pipeline:
//! registers (reg, xreg, xxreg views of the same bits) set by load, move
//! and set_field and matched by later tables; the packet mark; nw_ttl,
//! ip_frag and tcp_flags read from the packet; `NXM_OF_IN_PORT` written
//! to allow output to the ingress port. Registers start at zero for every
//! packet, survive resubmit and goto_table, are a bucket's own in a group,
//! and are part of the exact-match cache's key (the same packet with other
//! register values must not hit another table's cached rule).

use ofp::msg::group::GroupModCommand;
use ofp::text::{parse_flow_mod, parse_group_mod};
use pipeline::{Pipeline, Worker};

mod common;

fn pipeline(flows: &[&str]) -> Pipeline {
    common::pipeline(16, 8, flows)
}

fn outs(w: &mut Worker, p: &mut Pipeline, in_port: u32, frame: &[u8]) -> Vec<u32> {
    let snap = p.snapshot();
    let mut f = frame.to_vec();
    w.process(&snap, in_port, &mut f, 1_000)
        .iter()
        .map(|o| o.port)
        .collect()
}

fn run(p: &mut Pipeline, in_port: u32, frame: &[u8]) -> Vec<u32> {
    outs(&mut Worker::new(0), p, in_port, frame)
}

fn tcp(dport: u16, flags: u8) -> Vec<u8> {
    packet::wire::build::sample_tcp(dport, flags)
}

#[test]
fn a_register_set_in_one_table_is_matched_in_the_next() {
    let mut p = pipeline(&[
        "in_port=1,actions=load:0x5->NXM_NX_REG0[],resubmit(,1)",
        "in_port=2,actions=set_field:0x6->reg0,goto_table:1",
        "table=1,reg0=5,actions=output:3",
        "table=1,reg0=6,actions=output:4",
        "table=1,priority=0,actions=output:5",
    ]);
    assert_eq!(run(&mut p, 1, &tcp(80, 2)), vec![3]);
    assert_eq!(run(&mut p, 2, &tcp(80, 2)), vec![4]);
    // Every packet starts with zero registers.
    assert_eq!(run(&mut p, 3, &tcp(80, 2)), Vec::<u32>::new());
}

#[test]
fn xreg_and_xxreg_are_views_of_the_registers() {
    let mut p = pipeline(&[
        // xreg1 = reg2 (high) : reg3; xxreg1 = reg4 .. reg7.
        "actions=set_field:0x0000000100000002->xreg1,load:0x3->NXM_NX_XXREG1[0..31],resubmit(,1)",
        "table=1,reg2=1,reg3=2,reg7=3,reg4=0,actions=output:2",
        "table=1,priority=0,actions=output:6",
    ]);
    assert_eq!(run(&mut p, 1, &tcp(80, 2)), vec![2]);
    let mut p = pipeline(&[
        "actions=load:0xffffffffffffffffffffffffffffffff->NXM_NX_XXREG3[],move:NXM_NX_XXREG3[60..91]->NXM_NX_REG0[],resubmit(,1)",
        "table=1,reg0=0xffffffff,reg12=0xffffffff,reg15=0xffffffff,actions=output:2",
        "table=1,priority=0,actions=output:6",
    ]);
    assert_eq!(run(&mut p, 1, &tcp(80, 2)), vec![2]);
    // Partial bits: reg1[4..11] = 0xab, the rest stays.
    let mut p = pipeline(&[
        "actions=load:0xffffffff->NXM_NX_REG1[],load:0x0->NXM_NX_REG1[0..3],load:0xab->NXM_NX_REG1[4..11],resubmit(,1)",
        "table=1,reg1=0xfffffab0,actions=output:2",
        "table=1,priority=0,actions=output:6",
    ]);
    assert_eq!(run(&mut p, 1, &tcp(80, 2)), vec![2]);
}

#[test]
fn registers_copy_packet_fields_and_back() {
    let mut p = pipeline(&[
        "tcp,actions=move:NXM_OF_TCP_DST[]->NXM_NX_REG5[0..15],move:NXM_OF_IN_PORT[]->NXM_NX_REG6[0..15],resubmit(,1)",
        "table=1,reg5=80,reg6=1,actions=output:2",
        "table=1,priority=0,actions=output:6",
    ]);
    assert_eq!(run(&mut p, 1, &tcp(80, 2)), vec![2]);
    assert_eq!(run(&mut p, 1, &tcp(81, 2)), vec![6]);
}

#[test]
fn the_packet_mark_and_header_fields_match() {
    let mut p = pipeline(&[
        "actions=set_field:0x7->pkt_mark,goto_table:1",
        "table=1,pkt_mark=0x7,tcp,nw_ttl=64,ip_frag=no,tcp_flags=+syn-ack,actions=output:2",
        "table=1,priority=5,pkt_mark=0x7,tcp,tcp_flags=+syn+ack,actions=output:3",
        "table=1,priority=0,actions=output:6",
    ]);
    assert_eq!(run(&mut p, 1, &tcp(80, 0x02)), vec![2], "SYN");
    assert_eq!(run(&mut p, 1, &tcp(80, 0x12)), vec![3], "SYN+ACK");
    assert_eq!(run(&mut p, 1, &tcp(80, 0x10)), vec![6], "ACK");
    // set_field on nw_ttl writes the packet (with its checksum).
    let mut p = pipeline(&[
        "ip,actions=set_field:9->nw_ttl,resubmit(,1)",
        "table=1,ip,nw_ttl=9,actions=output:2",
    ]);
    let mut f = tcp(80, 2);
    let snap = p.snapshot();
    let o = Worker::new(0).process(&snap, 1, &mut f, 0).to_vec();
    assert_eq!(o.iter().map(|o| o.port).collect::<Vec<_>>(), vec![2]);
    assert_eq!(f[22], 9);
    assert_eq!(packet::checksum::internet(&f[14..34]), 0, "IPv4 checksum");
}

#[test]
fn fragments_match_ip_frag() {
    let mut p = pipeline(&[
        "priority=9,ip,ip_frag=later,actions=output:4",
        "priority=8,ip,ip_frag=first,actions=output:3",
        "priority=7,ip,ip_frag=no,actions=output:2",
    ]);
    let mut first = tcp(80, 2);
    first[20] = 0x20; // more fragments, offset 0
    let mut later = tcp(80, 2);
    later[20] = 0x00;
    later[21] = 0x10; // offset 16
    assert_eq!(run(&mut p, 1, &tcp(80, 2)), vec![2]);
    assert_eq!(run(&mut p, 1, &first), vec![3]);
    assert_eq!(run(&mut p, 1, &later), vec![4]);
}

#[test]
fn writing_in_port_allows_output_to_the_ingress_port() {
    let mut p = pipeline(&["in_port=1,actions=output:1,load:0->NXM_OF_IN_PORT[],output:1"]);
    // The first output:1 is the ingress port (skipped); after the load the
    // packet counts as from port 0, so the second goes out.
    assert_eq!(run(&mut p, 1, &tcp(80, 2)), vec![1]);
}

#[test]
fn a_bucket_changes_its_own_registers() {
    let mut p = pipeline(&[]);
    let g = parse_group_mod(
        "group_id=1,type=all,bucket=actions=load:0x2->NXM_NX_REG0[],resubmit(,1),bucket=actions=resubmit(,1)",
    )
    .unwrap();
    assert_eq!(g.command, GroupModCommand::Add);
    p.group_mod(&g, 0).unwrap();
    for f in [
        "actions=load:0x1->NXM_NX_REG0[],group:1",
        "table=1,reg0=1,actions=output:2",
        "table=1,reg0=2,actions=output:3",
    ] {
        p.flow_mod(&parse_flow_mod(f).unwrap(), 0).unwrap();
    }
    // The first bucket's load is its own: the second bucket sees reg0=1.
    assert_eq!(run(&mut p, 1, &tcp(80, 2)), vec![3, 2]);
}

#[test]
fn the_cache_keeps_packets_with_other_registers_apart() {
    // The same packet reaches table 1 with reg0=5 from port 1 and reg0=6
    // from port 2: a cache keyed on the headers alone would answer the
    // second with the first one's rule.
    let mut p = pipeline(&[
        "in_port=1,actions=load:0x5->NXM_NX_REG0[],resubmit(,1)",
        "in_port=2,actions=load:0x6->NXM_NX_REG0[],goto_table:1",
        "table=1,reg0=5,actions=output:3",
        "table=1,reg0=6,actions=output:4",
    ]);
    let mut w = Worker::with_cache(0, 1024);
    for _ in 0..3 {
        assert_eq!(outs(&mut w, &mut p, 1, &tcp(80, 2)), vec![3]);
        assert_eq!(outs(&mut w, &mut p, 2, &tcp(80, 2)), vec![4]);
    }
    assert!(w.cache_stats().0 > 0, "the cache was used");
}
