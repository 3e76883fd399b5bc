//! Open vSwitch's Nicira actions through the pipeline: note, exit,
//! output:FIELD, dec_ttl(ids), push/pop, clone, sample, controller(...).
//! Cases marked "OVS:" give what Open vSwitch 3.1 itself does for the same
//! flows (`ovs-appctl ofproto/trace` on a netdev bridge; ports 1-5,
//! `scripts/ovs_nicira_cases.sh`).

use ofp::error::{BadActionCode, MeterModFailedCode};
use ofp::msg::flow::PacketInReason;
use ofp::msg::group::GroupModCommand;
use ofp::port::port_no;
use ofp::text::{parse_flow_mod, parse_group_mod};
use ofp::ErrorCode;
use pipeline::{Output, Pipeline, PortState, Worker};

/// A 60-byte frame of the local experimental EtherType, 02:..:01 to
/// 02:..:02.
fn frame() -> Vec<u8> {
    let mut f =
        packet::wire::build::ethernet(0x0200_0000_0002, 0x0200_0000_0001, None, 0x88b5, &[]);
    f.resize(60, 0);
    f
}

/// An IPv4/UDP frame (10.0.0.1:1 to 10.0.0.2:2) with TTL `ttl`, padded
/// to 60 bytes.
fn ip_frame(ttl: u8) -> Vec<u8> {
    use packet::wire::build::{self as wb, Ip, IpFields, Transport};
    let fields = IpFields {
        ttl,
        ..IpFields::default()
    };
    let t = Transport::Udp { sport: 1, dport: 2 };
    let ip = wb::ip(
        Ip::V4([10, 0, 0, 1]),
        Ip::V4([10, 0, 0, 2]),
        &fields,
        &t,
        &[],
    );
    let mut f = wb::ethernet(0x0200_0000_0002, 0x0200_0000_0001, None, 0x0800, &ip);
    f.resize(60, 0);
    f
}

mod common;

fn pipeline(flows: &[&str]) -> Pipeline {
    common::pipeline(16, 5, flows)
}

fn outputs(p: &mut Pipeline, f: &mut Vec<u8>) -> (Vec<Output>, u64) {
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let outs = w.process(&snap, 1, f, 1_000).to_vec();
    (outs, w.over_limit())
}

/// The ports a frame from port 1 goes out of.
fn ports(p: &mut Pipeline) -> Vec<u32> {
    outputs(p, &mut frame()).0.iter().map(|o| o.port).collect()
}

fn refused(flow: &str) -> ErrorCode {
    let mut p = pipeline(&[]);
    let fm = parse_flow_mod(flow).unwrap();
    p.flow_mod(&fm, 0).unwrap_err().code
}

fn trace(p: &mut Pipeline) -> String {
    let snap = p.snapshot();
    pipeline::trace::trace(&snap, 1, &frame()).steps.join("\n")
}

#[test]
fn note_and_sample_do_nothing() {
    let mut p =
        pipeline(&["actions=note:01.02,sample(probability=65535,collector_set_id=1),output:2"]);
    assert_eq!(ports(&mut p), vec![2]);
}

#[test]
fn exit_stops_the_actions() {
    let mut p = pipeline(&["actions=output:2,exit,output:3"]);
    assert_eq!(ports(&mut p), vec![2]);
}

#[test]
fn exit_in_a_resubmitted_flow_stops_the_outer_ones_too() {
    // OVS: output:4 only.
    let mut p = pipeline(&[
        "priority=1,actions=resubmit(,1),output:3",
        "table=1,actions=output:4,exit,output:5",
    ]);
    assert_eq!(ports(&mut p), vec![4]);
}

#[test]
fn exit_skips_the_flows_other_instructions_and_later_tables() {
    // OVS: drop (write_actions and goto_table after the exit do not run).
    let mut p = pipeline(&[
        "priority=1,actions=exit,write_actions(output:2),goto_table:1",
        "table=1,actions=output:3",
    ]);
    assert_eq!(ports(&mut p), Vec::<u32>::new());
}

#[test]
fn after_exit_the_action_set_runs_as_ovs_actions_7_says() {
    // ovs-actions(7): "Actions in the action set are still executed
    // (specify clear_actions before exit to discard them)." Open vSwitch
    // 3.1's translation does not run it (ofproto/trace: drop): sluice
    // follows the manual.
    let mut p = pipeline(&[
        "priority=1,actions=write_actions(output:2),goto_table:1",
        "table=1,actions=exit",
    ]);
    assert_eq!(ports(&mut p), vec![2]);
    let mut p = pipeline(&[
        "priority=1,actions=write_actions(output:2),goto_table:1",
        "table=1,actions=exit,clear_actions",
    ]);
    // clear_actions runs after the apply-actions (the spec's order): the
    // exit ends the flow's instructions first, so the set still holds
    // output:2; a flow that clears it before a later flow's exit empties it.
    assert_eq!(ports(&mut p), vec![2]);
    let mut p = pipeline(&[
        "priority=1,actions=write_actions(output:2),goto_table:1",
        "table=1,actions=clear_actions,goto_table:2",
        "table=2,actions=exit",
    ]);
    assert_eq!(ports(&mut p), Vec::<u32>::new());
}

#[test]
fn exit_in_a_group_bucket_ends_that_bucket_only() {
    let mut p = pipeline(&[]);
    let mut g =
        parse_group_mod("group_id=1,type=all,bucket=output:2,exit,output:3,bucket=output:4")
            .unwrap();
    g.command = GroupModCommand::Add;
    p.group_mod(&g, 0).unwrap();
    p.flow_mod(
        &parse_flow_mod("actions=group:1,resubmit(,1),output:5").unwrap(),
        0,
    )
    .unwrap();
    p.flow_mod(&parse_flow_mod("table=1,actions=output:3").unwrap(), 0)
        .unwrap();
    assert_eq!(ports(&mut p), vec![2, 4, 3, 5]);
}

#[test]
fn output_to_the_port_a_field_holds() {
    let mut p = pipeline(&["actions=load:2->NXM_NX_REG0[],output:NXM_NX_REG0[]"]);
    assert_eq!(ports(&mut p), vec![2]);
    // A part of a field.
    let mut p =
        pipeline(&["actions=load:0x30004->NXM_NX_REG5[],output:reg5[16..31],output:reg5[0..15]"]);
    assert_eq!(ports(&mut p), vec![3, 4]);
    // Open vSwitch's 16-bit reserved ports; the controller gets the whole packet.
    let mut p = pipeline(&["actions=load:0xfffd->NXM_NX_REG0[0..15],output:reg0[0..15]"]);
    let (outs, _) = outputs(&mut p, &mut frame());
    assert_eq!(outs.len(), 1);
    assert_eq!(outs[0].port, port_no::CONTROLLER);
    assert_eq!(outs[0].controller.as_ref().unwrap().max_len, 0xffff);
    // Above 65535, 0, or the ingress port: nothing.
    let mut p = pipeline(&[
        "actions=load:0x10002->NXM_NX_REG0[],output:reg0,output:reg1,load:1->reg2,output:reg2",
    ]);
    assert_eq!(ports(&mut p), Vec::<u32>::new());
    // The field's prerequisites hold for the flow's packets.
    assert_eq!(
        refused("actions=output:NXM_OF_IP_SRC[0..15]"),
        ErrorCode::BadAction(BadActionCode::MatchInconsistent)
    );
}

#[test]
fn push_and_pop_move_bits_through_the_stack() {
    // OVS: reg1 = 0xff, reg2 = 0xf, output:3 (g_stack_bits).
    let mut p = pipeline(&[
        "actions=load:0xffff->NXM_NX_REG0[],push:NXM_NX_REG0[],pop:NXM_NX_REG1[0..7],push:NXM_NX_REG0[0..3],pop:NXM_NX_REG2[],load:3->NXM_NX_REG3[],output:NXM_NX_REG3[]",
    ]);
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let outs: Vec<u32> = w
        .process(&snap, 1, &mut frame(), 0)
        .iter()
        .map(|o| o.port)
        .collect();
    assert_eq!(outs, vec![3]);
    use ofp::oxm::OxmField as F;
    let reg = |n| pipeline::lookup::matchkey::read_field(w.key(), F::Reg(n)).unwrap();
    assert_eq!((reg(1), reg(2)), (0xff, 0xf));
    // Last in, first out; a wide value through a narrower pop keeps its
    // low bits; a header field to a register and back.
    let mut p = pipeline(&[
        "actions=load:2->reg0,load:4->reg1,push:reg0,push:reg1,pop:reg0,pop:reg1,output:reg0,output:reg1",
        "table=1,actions=drop",
    ]);
    assert_eq!(ports(&mut p), vec![4, 2]);
    let mut p =
        pipeline(&["actions=push:NXM_OF_ETH_SRC[],pop:NXM_NX_REG4[0..15],output:reg4[0..7]"]);
    // eth_src 02:00:00:00:00:01: its low 16 bits are 1.
    assert_eq!(ports(&mut p), Vec::<u32>::new());
    let mut p =
        pipeline(&["actions=push:NXM_OF_ETH_DST[],pop:NXM_NX_REG4[0..15],output:reg4[0..7]"]);
    assert_eq!(ports(&mut p), vec![2]);
}

#[test]
fn a_pop_or_a_move_into_vlan_tci_pushes_and_pops_the_tag_as_a_load_does() {
    // A CFI bit set pushes a tag (VID 100 here), cleared pops it. OVS:
    // push_vlan(vid=100,pcp=0) for the first two, no tag for the third
    // (scripts/ovs_nicira_cases.sh).
    let vid = |o: &Output, f: &[u8]| {
        let b = o.data.as_deref().unwrap_or(f);
        (b[12..14] == [0x81, 0x00]).then(|| u16::from_be_bytes([b[14], b[15]]) & 0xfff)
    };
    for flow in [
        "actions=load:0x1064->NXM_NX_REG0[0..15],push:NXM_NX_REG0[0..15],pop:NXM_OF_VLAN_TCI[],output:2",
        "actions=load:0x1064->NXM_NX_REG0[0..15],move:NXM_NX_REG0[0..15]->NXM_OF_VLAN_TCI[],output:2",
    ] {
        let mut p = pipeline(&[flow]);
        let mut f = frame();
        let (outs, _) = outputs(&mut p, &mut f);
        assert_eq!(outs.len(), 1, "{flow}");
        assert_eq!(vid(&outs[0], &f), Some(100), "{flow}");
    }
    let mut p = pipeline(&[
        "actions=load:0x1064->NXM_OF_VLAN_TCI[],push:NXM_NX_REG0[0..15],pop:NXM_OF_VLAN_TCI[],output:2",
    ]);
    let mut f = frame();
    let (outs, _) = outputs(&mut p, &mut f);
    assert_eq!(
        vid(&outs[0], &f),
        None,
        "a zero popped into vlan_tci removes the tag"
    );
}

#[test]
fn pop_of_an_empty_stack_changes_nothing_and_goes_on() {
    // OVS: "stack underflow", then output:3.
    let mut p = pipeline(&["actions=load:2->reg0,pop:NXM_NX_REG0[],output:reg0,output:3"]);
    assert_eq!(ports(&mut p), vec![2, 3]);
    assert!(trace(&mut p).contains("stack underflow"));
}

#[test]
fn a_full_stack_drops_the_packet_whole() {
    // 250 pushes of 17 bytes per table, each table resubmitting to the
    // next: past 64 KiB the packet is dropped, what it was sent to too.
    let pushes = vec!["push:NXM_NX_XXREG0[]"; 250].join(",");
    let flows: Vec<String> = (0..16)
        .map(|t| {
            let first = if t == 0 { "output:2," } else { "" };
            format!("table={t},actions={first}{pushes},resubmit(,{})", t + 1)
        })
        .collect();
    let flows: Vec<&str> = flows.iter().map(String::as_str).collect();
    let mut p = pipeline(&flows);
    assert_eq!(outputs(&mut p, &mut frame()), (vec![], 1));
    // Short of the limit: nothing happens.
    let mut p = pipeline(&flows[..3]);
    assert_eq!(ports(&mut p), vec![2]);
}

#[test]
fn clone_works_on_a_copy() {
    // The clone's edits are in its output only.
    let mut p =
        pipeline(&["actions=clone(set_field:02:00:00:00:00:09->eth_dst,output:2),output:3"]);
    let (outs, _) = outputs(&mut p, &mut frame());
    let f = |o: &Output| o.data.clone().unwrap_or_else(frame);
    assert_eq!(outs.len(), 2);
    assert_eq!(&f(&outs[0])[..6], &[2, 0, 0, 0, 0, 9]);
    assert_eq!(outs[1].port, 3);
    assert_eq!(f(&outs[1]), frame());
    // Registers and in_port come back as they were.
    let mut p = pipeline(&[
        "actions=load:3->reg0,clone(load:2->reg0,load:4->NXM_OF_IN_PORT[],output:reg0,output:in_port),output:reg0,output:in_port",
    ]);
    assert_eq!(ports(&mut p), vec![2, 4, 3, 1]);
}

#[test]
fn clone_has_its_own_stack_and_action_set() {
    // OVS: what the clone pushes is gone after it (stack underflow).
    let mut p =
        pipeline(&["actions=load:5->reg0,clone(load:2->reg0,push:reg0),pop:reg1,output:reg1"]);
    assert_eq!(ports(&mut p), Vec::<u32>::new());
    // The clone sees the stack as it was.
    let mut p = pipeline(&[
        "actions=load:4->reg0,push:reg0,clone(pop:reg1,output:reg1),pop:reg2,output:reg2",
    ]);
    assert_eq!(ports(&mut p), vec![4, 4]);
    // OVS: 3, 2 (the clone's action set), 4, 2 (the packet's).
    let mut p = pipeline(&[
        "priority=1,actions=write_actions(output:2),goto_table:1",
        "table=1,actions=clone(output:3),output:4",
    ]);
    assert_eq!(ports(&mut p), vec![3, 2, 4, 2]);
}

#[test]
fn exit_in_a_clone_ends_the_packets_actions() {
    // OVS: output:2 only.
    let mut p = pipeline(&["actions=clone(output:2,exit,output:4),output:3"]);
    assert_eq!(ports(&mut p), vec![2]);
    // OVS: drop.
    let mut p = pipeline(&["actions=load:1->NXM_NX_REG0[],clone(exit),output:3"]);
    assert_eq!(ports(&mut p), Vec::<u32>::new());
}

#[test]
fn clones_nest_boundedly() {
    // 50 clones in a flow that resubmits to itself: past 100 nested
    // clones the packet is dropped whole, and the stack holds.
    let flow = format!(
        "actions=output:2,{}resubmit(,0){}",
        "clone(".repeat(50),
        ")".repeat(50)
    );
    let mut p = pipeline(&[&flow]);
    assert_eq!(outputs(&mut p, &mut frame()), (vec![], 1));
    // 99 nested in one flow run.
    let flow = format!("actions={}output:2{}", "clone(".repeat(99), ")".repeat(99));
    let mut p = pipeline(&[&flow]);
    assert_eq!(ports(&mut p), vec![2]);
}

#[test]
fn dec_ttl_with_ids_tells_only_those_controllers() {
    let run = |flow: &str| {
        let mut p = pipeline(&[flow]);
        p.invalid_ttl_to_controller = true;
        let (outs, _) = outputs(&mut p, &mut ip_frame(1));
        outs.iter()
            .map(|o| {
                let c = o.controller.as_ref().unwrap();
                (o.port, c.reason, c.controller_id)
            })
            .collect::<Vec<_>>()
    };
    // One packet-in for each id, for the connections of that id; the
    // packet goes no further.
    let ttl = |id| (port_no::CONTROLLER, PacketInReason::InvalidTtl, id);
    assert_eq!(
        run("ip,actions=dec_ttl(0,1),output:2"),
        vec![ttl(0), ttl(1)]
    );
    assert_eq!(run("ip,actions=dec_ttl(7),output:2"), vec![ttl(7)]);
    assert_eq!(run("ip,actions=dec_ttl,output:2"), vec![ttl(0)]);
    // No id (NXAST_DEC_TTL_CNT_IDS with none): nobody is told.
    let mut p = pipeline(&[]);
    let mut fm = parse_flow_mod("ip,actions=dec_ttl(1),output:2").unwrap();
    if let ofp::Instruction::ApplyActions(a) = &mut fm.instructions[0] {
        a[0] = ofp::Action::DecTtlIds(vec![]);
    }
    p.flow_mod(&fm, 0).unwrap();
    p.invalid_ttl_to_controller = true;
    assert!(outputs(&mut p, &mut ip_frame(1)).0.is_empty());
    // A TTL above 1 is decremented.
    let mut p = pipeline(&["ip,actions=dec_ttl(3),output:2"]);
    let (outs, _) = outputs(&mut p, &mut ip_frame(9));
    assert_eq!(outs[0].port, 2);
    // In the action set too, for those ids; a later plain dec_ttl in the
    // set replaces them (id 0).
    assert_eq!(
        run("ip,actions=write_actions(dec_ttl(5,6),output:2)"),
        vec![ttl(5), ttl(6)]
    );
    let mut p = pipeline(&[
        "table=0,ip,actions=write_actions(dec_ttl(5)),goto_table:1",
        "table=1,ip,actions=write_actions(dec_ttl,output:2)",
    ]);
    p.invalid_ttl_to_controller = true;
    let (outs, _) = outputs(&mut p, &mut ip_frame(1));
    assert_eq!(
        outs.iter()
            .map(|o| o.controller.as_ref().unwrap().controller_id)
            .collect::<Vec<_>>(),
        vec![0]
    );
}

#[test]
fn controller_sends_a_packet_in_with_its_reason_and_max_len() {
    let mut p = pipeline(&["actions=controller(reason=no_match,max_len=10),controller(reason=group),controller(reason=invalid_ttl)"]);
    let (outs, _) = outputs(&mut p, &mut frame());
    let got: Vec<_> = outs
        .iter()
        .map(|o| {
            let c = o.controller.as_ref().unwrap();
            (o.port, c.reason, c.max_len)
        })
        .collect();
    // OpenFlow 1.3 has no group reason: Open vSwitch sends it as action.
    assert_eq!(
        got,
        vec![
            (port_no::CONTROLLER, PacketInReason::NoMatch, 10),
            (port_no::CONTROLLER, PacketInReason::Action, 0xffff),
            (port_no::CONTROLLER, PacketInReason::InvalidTtl, 0xffff),
        ]
    );
    // Another connection id: the packet-in is for the connections of
    // that id (the agent picks them).
    let mut p = pipeline(&["actions=controller(id=3),output:2"]);
    let (outs, _) = outputs(&mut p, &mut frame());
    assert_eq!(
        outs.iter().map(|o| o.port).collect::<Vec<_>>(),
        vec![port_no::CONTROLLER, 2]
    );
    assert_eq!(outs[0].controller.as_ref().unwrap().controller_id, 3);
    // From a table-miss flow, action is an explicit miss: no_match (as
    // Open vSwitch's xlate_controller_action makes it); another reason
    // stays.
    let mut p = pipeline(&["priority=0,actions=controller(id=0),controller(reason=invalid_ttl)"]);
    let (outs, _) = outputs(&mut p, &mut frame());
    let reasons: Vec<_> = outs
        .iter()
        .map(|o| o.controller.as_ref().unwrap().reason)
        .collect();
    assert_eq!(
        reasons,
        vec![PacketInReason::NoMatch, PacketInReason::InvalidTtl]
    );
}

/// userdata rides with the packet-in, with the packet's registers,
/// pkt_mark and metadata as they are at the action; a packet-in of a
/// packet with none of these carries nothing more.
#[test]
fn controller_carries_userdata_and_the_packets_fields() {
    let mut p = pipeline(&[
        "table=0,actions=load:5->NXM_NX_REG0[],load:0x7->NXM_NX_REG15[],set_field:9->pkt_mark,write_metadata:0xab00/0xff00,goto_table:1",
        "table=1,actions=controller(userdata=01.02.03,id=2),load:6->NXM_NX_REG0[],controller",
    ]);
    let (outs, _) = outputs(&mut p, &mut frame());
    let c: Vec<_> = outs.iter().map(|o| o.controller.clone().unwrap()).collect();
    let e = c[0].extra.as_deref().unwrap();
    assert_eq!(c[0].userdata(), &[1, 2, 3]);
    assert_eq!((c[0].controller_id, c[0].table_id), (2, 1));
    assert_eq!(
        (e.regs[0], e.regs[15], e.pkt_mark, e.metadata),
        (5, 7, 9, 0xab00)
    );
    let e = c[1].extra.as_deref().unwrap();
    assert!(c[1].userdata().is_empty());
    assert_eq!((c[1].controller_id, e.regs[0]), (0, 6));
    let mut p = pipeline(&["actions=controller,controller(userdata=aa)"]);
    let (outs, _) = outputs(&mut p, &mut frame());
    assert_eq!(outs[0].controller.as_ref().unwrap().extra, None);
    assert_eq!(outs[1].controller.as_ref().unwrap().userdata(), &[0xaa]);
}

/// The packet-in of a paused walk and the continuation it carries.
fn paused(p: &mut Pipeline) -> (Output, pipeline::continuation::Continuation) {
    let (outs, over) = outputs(p, &mut frame());
    assert_eq!((outs.len(), over), (1, 0), "{outs:?}");
    let ctl = outs[0].controller.as_ref().expect("a packet-in");
    let c = pipeline::continuation::Continuation::decode(
        &ctl.extra.as_deref().expect("metadata").continuation,
    )
    .expect("a continuation");
    (outs[0].clone(), c)
}

fn resume(
    p: &mut Pipeline,
    c: &pipeline::continuation::Continuation,
    regs: &[(u8, u32)],
) -> Vec<u32> {
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let fields: Vec<_> = regs
        .iter()
        .map(|&(r, v)| ofp::oxm::Oxm::exact(ofp::oxm::OxmField::Reg(r), v as u128))
        .collect();
    w.resume(&snap, 1, c, &fields, &mut frame(), 0)
        .iter()
        .map(|o| o.port)
        .collect()
}

#[test]
fn a_paused_walk_resumes_after_the_pause_with_the_controllers_registers() {
    // OVN's put_dhcp_opts, in miniature: table 2 (reached by a resubmit
    // from table 0, then a goto) pauses; the controller sets reg0[3]; the
    // resumed walk goes on with the resubmit after the pause, table 3
    // choosing by the bit; then what was left after the outer resubmit
    // (output:4), and the action set written before the pause (output:3).
    let mut p = pipeline(&[
        "priority=1,actions=resubmit(,1),output:4",
        "table=1,priority=1,actions=write_actions(output:3),goto_table:2",
        "table=2,priority=1,actions=load:1->NXM_NX_REG1[],controller(userdata=00.00.00.02,pause),resubmit(,3)",
        "table=3,priority=2,reg0=0x8/0x8,reg1=1,actions=output:2",
        "table=3,priority=1,actions=output:5",
    ]);
    let (pin, c) = paused(&mut p);
    assert_eq!(pin.port, port_no::CONTROLLER);
    assert_eq!(pin.controller.as_ref().unwrap().userdata(), &[0, 0, 0, 2]);
    assert_eq!(c.frames.len(), 2, "{c:?}");
    // Without the controller's bit: table 3's other flow.
    assert_eq!(resume(&mut p, &c, &[]), vec![5, 4, 3]);
    assert_eq!(resume(&mut p, &c, &[(0, 8)]), vec![2, 4, 3]);
    // A pause where sluice cannot freeze the walk drops the packet, counted.
    for f in [
        &["actions=clone(controller(pause)),output:2"][..],
        &[
            "actions=clone(resubmit(,1)),output:2",
            "table=1,actions=controller(pause)",
        ],
    ] {
        let mut p = pipeline(f);
        assert_eq!(outputs(&mut p, &mut frame()), (vec![], 1), "{f:?}");
    }
    assert_eq!(
        refused("actions=controller(meter_id=7)"),
        ErrorCode::MeterModFailed(MeterModFailedCode::UnknownMeter)
    );
}

#[test]
fn a_resumed_walk_may_pause_again_and_keeps_what_was_left() {
    let mut p = pipeline(&[
        "priority=1,actions=resubmit(,1),output:4",
        "table=1,priority=1,actions=controller(pause),controller(pause),output:2",
    ]);
    let (_, c) = paused(&mut p);
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let outs = w.resume(&snap, 1, &c, &[], &mut frame(), 0);
    assert_eq!(outs.len(), 1);
    let again = pipeline::continuation::Continuation::decode(
        &outs[0]
            .controller
            .as_ref()
            .unwrap()
            .extra
            .as_deref()
            .unwrap()
            .continuation,
    )
    .unwrap();
    assert_eq!(resume(&mut p, &again, &[]), vec![2, 4]);
}

#[test]
fn what_an_action_set_cannot_hold_is_refused_in_write_actions() {
    assert_eq!(
        refused("actions=write_actions(exit)"),
        ErrorCode::BadAction(BadActionCode::BadType)
    );
    assert_eq!(
        refused("actions=write_actions(clone(output:1))"),
        ErrorCode::BadAction(BadActionCode::BadType)
    );
}

#[test]
fn trace_shows_each_step() {
    let mut p = pipeline(&[
        "actions=load:2->reg0,push:reg0,clone(pop:reg1,output:reg1),output:reg0[0..15],exit,output:3",
    ]);
    let t = trace(&mut p);
    for want in [
        "push:NXM_NX_REG0[]",
        "-> pushed 0x2",
        "clone(pop:NXM_NX_REG1[],output:NXM_NX_REG1[])",
        "    pop:NXM_NX_REG1[]",
        "-> port 2",
        "exit",
    ] {
        assert!(t.contains(want), "{want}:\n{t}");
    }
    assert!(!t.contains("output:3"), "{t}");
}

/// Frames for the multipath and bundle cases: Ethernet (02:..:01 to
/// 02:..:02 unless said), then what follows; made by the one frame
/// builder (`packet::wire`), transport headers without checksums (the
/// hashes do not read them).
mod frames {
    use packet::wire::build::{self as wb, Ip, IpFields, Transport};
    pub use packet::wire::build::{arp, ethernet_tags, mac};
    use packet::wire::tcp::Tcp;
    use packet::wire::udp::{Sctp, Udp};

    pub const SRC: [u8; 6] = [2, 0, 0, 0, 0, 1];
    pub const DST: [u8; 6] = [2, 0, 0, 0, 0, 2];

    pub fn eth(dst: [u8; 6], src: [u8; 6], vlan: Option<u16>, ty: u16, body: &[u8]) -> Vec<u8> {
        let mut f = wb::ethernet(wb::mac(dst), wb::mac(src), vlan, ty, body);
        if f.len() < 60 {
            f.resize(60, 0);
        }
        f
    }

    pub fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
        let t = Transport::Other(proto);
        wb::ip(Ip::V4(src), Ip::V4(dst), &IpFields::default(), &t, l4)
    }

    pub fn ipv6(next: u8, src: u128, dst: u128, l4: &[u8]) -> Vec<u8> {
        let (s, d) = (Ip::V6(src.to_be_bytes()), Ip::V6(dst.to_be_bytes()));
        wb::ip(s, d, &IpFields::default(), &Transport::Other(next), l4)
    }

    pub fn tcp(sp: u16, dp: u16) -> Vec<u8> {
        let mut t = vec![0u8; 20];
        let mut h = Tcp::at_mut(&mut t, 0).unwrap();
        h.set_src_port(sp);
        h.set_dst_port(dp);
        h.set_offset_flags(0x5000);
        h.set_window(0xffff);
        t
    }

    pub fn udp(sp: u16, dp: u16) -> Vec<u8> {
        let mut t = vec![0u8; 8];
        let mut h = Udp::at_mut(&mut t, 0).unwrap();
        h.set_src_port(sp);
        h.set_dst_port(dp);
        h.set_length(8);
        t
    }

    pub fn sctp(sp: u16, dp: u16) -> Vec<u8> {
        let mut t = vec![0u8; 12];
        let mut h = Sctp::at_mut(&mut t, 0).unwrap();
        h.set_src_port(sp);
        h.set_dst_port(dp);
        t
    }
}

#[test]
fn multipath_and_bundle_pick_what_open_vswitch_picks() {
    use frames::*;
    use ofp::oxm::OxmField as F;
    // The flow of scripts/ovs_nicira_cases.sh's hash case: each hash in a
    // register (its low half by modulo_n, its high half by hash_threshold,
    // both over 65536 links), hrw and iter_hash picks, bundle picks among
    // ports 1-5 (live) and 7-9 (none).
    let mut mp = Vec::new();
    let fields = [
        "eth_src",
        "symmetric_l4",
        "symmetric_l3l4",
        "symmetric_l3l4+udp",
        "nw_src",
        "nw_dst",
        "symmetric_l3",
    ];
    for (i, f) in fields.iter().enumerate() {
        mp.push(format!(
            "multipath({f},1234,modulo_n,65536,0,NXM_NX_REG{i}[0..15])"
        ));
        mp.push(format!(
            "multipath({f},1234,hash_threshold,65536,0,NXM_NX_REG{i}[16..31])"
        ));
    }
    for (i, f) in ["eth_src", "symmetric_l4"].iter().enumerate() {
        let r = 8 + i;
        mp.push(format!(
            "multipath({f},0,modulo_n,65536,0,NXM_NX_REG{r}[0..15])"
        ));
        mp.push(format!(
            "multipath({f},0,hash_threshold,65536,0,NXM_NX_REG{r}[16..31])"
        ));
    }
    mp.extend(
        [
            "multipath(symmetric_l4,7,hrw,10,0,NXM_NX_REG10[0..3])",
            "multipath(symmetric_l4,7,iter_hash,10,12,NXM_NX_REG10[4..7])",
            "multipath(symmetric_l4,7,hrw,100,0,NXM_NX_REG10[8..15])",
            "multipath(symmetric_l4,7,iter_hash,100,0,NXM_NX_REG10[16..23])",
            "multipath(eth_src,7,hash_threshold,7,0,NXM_NX_REG10[24..26])",
            "multipath(eth_src,7,modulo_n,7,0,NXM_NX_REG10[27..29])",
            "bundle_load(symmetric_l4,9,hrw,ofport,NXM_NX_REG11[0..15],members:1,2,3,4,5)",
            "bundle_load(eth_src,9,hrw,ofport,NXM_NX_REG11[16..31],members:2,4,7)",
            "bundle_load(nw_src,0,active_backup,ofport,NXM_NX_REG12[0..15],members:9,3,2)",
            "bundle_load(nw_dst,3,hrw,ofport,NXM_NX_REG12[16..31],members:8,9)",
        ]
        .map(String::from),
    );
    let flow = format!("actions={}", mp.join(","));
    let v4 = |a: [u8; 4]| a;
    let v6 = |s: &str| s.parse::<std::net::Ipv6Addr>().unwrap().to_bits();
    let cases: Vec<(&str, Vec<u8>, [u32; 12])> = vec![
        (
            "p1: not IP",
            eth(DST, SRC, None, 0x88b5, &[]),
            [
                0x6e6f5e44, 0x4babba91, 0x45af2c4c, 0x45af2c4c, 0x4d2, 0x4d2, 0x1725e1f0, 0,
                0x3834ef4f, 0x274c97d3, 0x6353544, 0x40002,
            ],
        ),
        (
            "p2: tcp",
            eth(
                DST,
                SRC,
                None,
                0x0800,
                &ipv4(6, v4([10, 0, 0, 1]), v4([10, 0, 0, 2]), &tcp(1234, 80)),
            ),
            [
                0x6e6f5e44, 0xee43ec8f, 0x9d18f655, 0x9d18f655, 0xeab7cf86, 0xa96ea8fc, 0x22c028b4,
                0, 0x3834ef4f, 0x7368bc7a, 0x6252559, 0x40004,
            ],
        ),
        (
            "p3: udp",
            eth(
                [0xf0, 0x0d, 0, 0xab, 0xcd, 0xef],
                [0x52, 0x54, 0, 0x12, 0x34, 0x56],
                None,
                0x0800,
                &ipv4(17, v4([10, 1, 2, 3]), v4([192, 168, 7, 9]), &udp(5000, 53)),
            ),
            [
                0xa7251b1f, 0x13b5241, 0x49e80f74, 0x6f57fb8f, 0x653e14c4, 0x35b587ac, 0xcb36f043,
                0, 0x92e04e43, 0xca08bee3, 0x1b292996, 0x20002,
            ],
        ),
        (
            "p4: tcp6",
            eth(
                DST,
                SRC,
                None,
                0x86dd,
                &ipv6(6, v6("2001:db8::1"), v6("2001:db8::2:3"), &tcp(443, 5555)),
            ),
            [
                0x6e6f5e44, 0xad724a1f, 0xcb258ba9, 0xcb258ba9, 0x47c07edf, 0x161da7a5, 0x2f9b1f33,
                0, 0x3834ef4f, 0x6a16b16c, 0x6101083, 0x40003,
            ],
        ),
        (
            "p5: icmp in VLAN 5",
            eth(
                DST,
                SRC,
                Some(5),
                0x0800,
                &ipv4(1, v4([1, 2, 3, 4]), v4([5, 6, 7, 8]), &[0; 8]),
            ),
            [
                0x6e6f5e44, 0x2ecb96c3, 0xeb0a299c, 0xeb0a299c, 0x5b3746dc, 0xc101f4cf, 0xfd231f3a,
                0, 0x3834ef4f, 0xb665864, 0x6222262, 0x40005,
            ],
        ),
        (
            "p6: sctp",
            eth(
                DST,
                SRC,
                None,
                0x0800,
                &ipv4(132, v4([1, 2, 3, 4]), v4([5, 6, 7, 8]), &sctp(9, 10)),
            ),
            [
                0x6e6f5e44, 0xfcf18f7c, 0x68c022c1, 0x68c022c1, 0x5b3746dc, 0xc101f4cf, 0xfd231f3a,
                0, 0x3834ef4f, 0x9d9d2dc7, 0x6292993, 0x40004,
            ],
        ),
        (
            "p7: udp6",
            eth(
                DST,
                SRC,
                None,
                0x86dd,
                &ipv6(17, v6("fe80::1"), v6("ff02::1:2"), &udp(546, 547)),
            ),
            [
                0x6e6f5e44, 0x19af3132, 0x24207515, 0xf7fc489, 0x42277d8a, 0x29a8b08e, 0xe52d3a1d,
                0, 0x3834ef4f, 0x1200e952, 0x65a5a25, 0x40004,
            ],
        ),
        (
            "p8: arp",
            eth(
                DST,
                SRC,
                None,
                0x0806,
                &arp(1, 0, 0x0102_0304, 0, 0x0506_0708),
            ),
            [
                0x6e6f5e44, 0xaab904c2, 0x10a87f0b, 0x10a87f0b, 0x4d2, 0x4d2, 0x4df00e28, 0,
                0x3834ef4f, 0xa66f3673, 0x6191994, 0x40002,
            ],
        ),
    ];
    let mut p = pipeline(&[&flow]);
    let snap = p.snapshot();
    let mut bad = Vec::new();
    for (name, mut f, want) in cases {
        let mut w = Worker::new(0);
        w.process(&snap, 1, &mut f, 0);
        let reg =
            |n: u8| pipeline::lookup::matchkey::read_field(w.key(), F::Reg(n)).unwrap() as u32;
        for (r, want) in want.iter().enumerate() {
            if r == 7 {
                continue;
            }
            let got = reg(r as u8);
            if got != *want {
                bad.push(format!("{name}: reg{r} = {got:#x}, Open vSwitch {want:#x}"));
            }
        }
        // bundle_load to members that do not exist: OFPP_NONE; the active
        // backup's first live member.
        assert_eq!(reg(12), 0xffff_0003, "{name}");
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn bundle_outputs_to_a_live_member() {
    // Port 2 down: active_backup takes the next live one.
    let mut p = pipeline(&["actions=bundle(eth_src,0,active_backup,ofport,members:7,2,3)"]);
    let mut down = PortState::up(2);
    down.live = false;
    p.set_port(down);
    assert_eq!(ports(&mut p), vec![3]);
    // None live: nothing.
    let mut p = pipeline(&["actions=bundle(eth_src,0,hrw,ofport,members:7,8),output:4"]);
    assert_eq!(ports(&mut p), vec![4]);
    // The destination must hold a port number.
    assert_eq!(
        refused("actions=bundle_load(eth_src,0,hrw,ofport,reg0[0..7],members:1)"),
        ErrorCode::BadAction(BadActionCode::BadArgument)
    );
    assert_eq!(
        refused("actions=multipath(eth_src,0,modulo_n,1,0,NXM_OF_IP_SRC[])"),
        ErrorCode::BadAction(BadActionCode::MatchInconsistent)
    );
}

#[test]
fn actions_inside_a_clone_count_for_out_port_and_groups() {
    let mut p = pipeline(&[
        "priority=2,actions=clone(output:4)",
        "priority=1,in_port=2,actions=controller(reason=no_match)",
    ]);
    let rules: Vec<_> = p.tables()[0].rules().collect();
    assert!(rules.iter().any(|r| r.outputs_to(4)));
    assert!(rules.iter().any(|r| r.outputs_to(port_no::CONTROLLER)));
    // A group a clone sends to: deleting it removes the flow.
    let mut g = parse_group_mod("group_id=7,type=all,bucket=output:3").unwrap();
    g.command = GroupModCommand::Add;
    p.group_mod(&g, 0).unwrap();
    p.flow_mod(
        &parse_flow_mod("priority=3,actions=clone(group:7),output:2").unwrap(),
        0,
    )
    .unwrap();
    assert_eq!(ports(&mut p), vec![3, 2]);
    g.command = GroupModCommand::Delete;
    let removed = p.group_mod(&g, 0).unwrap();
    assert_eq!(removed.len(), 1);
    // A group that does not exist, inside a clone, is refused as outside.
    assert_eq!(
        refused("actions=clone(group:9)"),
        ErrorCode::BadAction(BadActionCode::BadOutGroup)
    );
}

#[test]
fn cached_walks_replay_the_same_as_fresh_ones() {
    // Multi-table flows whose later lookups depend on what these actions
    // write (the cache of whole walks replays lookups by ingress key):
    // the second packet, replayed, goes where the first went.
    use frames::*;
    let flows = [
        "priority=1,actions=multipath(symmetric_l4,0,hrw,4,0,NXM_NX_REG0[0..1]),resubmit(,1)",
        "table=1,reg0=0,actions=push:NXM_NX_REG0[],load:3->NXM_NX_REG0[],pop:NXM_NX_REG1[],resubmit(,2)",
        "table=1,reg0=1,actions=clone(load:2->NXM_NX_REG1[],resubmit(,2)),output:4",
        "table=1,reg0=2,actions=bundle_load(symmetric_l4,0,hrw,ofport,NXM_NX_REG1[],members:2,3),resubmit(,2),exit,output:1",
        "table=1,reg0=3,actions=output:5,exit",
        "table=2,reg1=0,actions=output:2",
        "table=2,reg1=2,actions=output:3",
        "table=2,reg1=3,actions=output:5",
    ];
    let mut p = pipeline(&flows);
    let snap = p.snapshot();
    let mut cached = Worker::new(0);
    let mut fresh = Worker::with_cache(0, 0);
    let mut seen = std::collections::BTreeSet::new();
    for sp in 1000..1064u16 {
        let f = eth(
            DST,
            SRC,
            None,
            0x0800,
            &ipv4(6, [10, 0, 0, 1], [10, 0, 0, 2], &tcp(sp, 80)),
        );
        let want: Vec<u32> = fresh
            .process(&snap, 1, &mut f.clone(), 0)
            .iter()
            .map(|o| o.port)
            .collect();
        for _ in 0..2 {
            let got: Vec<u32> = cached
                .process(&snap, 1, &mut f.clone(), 0)
                .iter()
                .map(|o| o.port)
                .collect();
            assert_eq!(got, want, "tcp source port {sp}");
        }
        seen.insert(want);
    }
    // Every branch was taken, and replays were used.
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(cached.path_stats().0 > 0);
}

#[test]
fn clones_and_resubmits_nested_to_the_limits_fit_a_small_stack() {
    // The deepest recursions the limits allow: 64 resubmits each in a
    // clone, and clones to 100 deep between resubmits. A worker thread's
    // 2 MiB stack holds them (debug build included); the packet is
    // dropped whole and counted.
    let run = || {
        for flow in [
            "actions=output:2,clone(resubmit(,0))",
            "actions=output:2,clone(clone(resubmit(,0)))",
            "actions=output:2,clone(clone(clone(clone(clone(resubmit(,0))))))",
        ] {
            let mut p = pipeline(&[flow]);
            assert_eq!(outputs(&mut p, &mut frame()), (vec![], 1), "{flow}");
            let snap = p.snapshot();
            let t = pipeline::trace::trace(&snap, 1, &frame());
            assert!(t.outputs.is_empty(), "{flow}");
        }
    };
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn symmetric_hashes_take_both_vlan_tags_as_open_vswitch_does() {
    // Open vSwitch 3.1 with other_config:vlan-limit=2 (its flow holds two
    // tags; sluice parses below both), ofproto/trace of this frame:
    // reg0=0x281ee190, reg1=0x9d18f655, reg2=0x4.
    use frames::*;
    use ofp::oxm::OxmField as F;
    let tags = [(0x88a8, 5), (0x8100, 7)];
    let ip = ipv4(6, [10, 0, 0, 1], [10, 0, 0, 2], &tcp(1234, 80));
    let mut f = ethernet_tags(mac(DST), mac(SRC), &tags, 0x0800, &ip);
    let mut p = pipeline(&["actions=multipath(symmetric_l4,1234,modulo_n,65536,0,NXM_NX_REG0[0..15]),multipath(symmetric_l4,1234,hash_threshold,65536,0,NXM_NX_REG0[16..31]),multipath(symmetric_l3l4,1234,modulo_n,65536,0,NXM_NX_REG1[0..15]),multipath(symmetric_l3l4,1234,hash_threshold,65536,0,NXM_NX_REG1[16..31]),bundle_load(symmetric_l4,9,hrw,ofport,NXM_NX_REG2[0..15],members:1,2,3,4,5)"]);
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    w.process(&snap, 1, &mut f, 0);
    let reg = |n: u8| pipeline::lookup::matchkey::read_field(w.key(), F::Reg(n)).unwrap() as u32;
    assert_eq!((reg(0), reg(1), reg(2)), (0x281e_e190, 0x9d18_f655, 4));
}

#[test]
fn an_experimenter_action_sluice_does_not_take_gets_the_code_open_vswitch_gives() {
    // NXAST_DEC_TTL (OpenFlow 1.0's dec_ttl, subtype 18): Open vSwitch
    // 3.1 refuses it under 1.3 with OFPBAC_BAD_VENDOR_TYPE, OpenFlow
    // 1.3's BAD_EXP_TYPE; an action of a vendor nobody knows is
    // BAD_EXPERIMENTER.
    let code = |experimenter: u32, subtype: u16| {
        let mut p = pipeline(&[]);
        let mut fm = parse_flow_mod("actions=drop").unwrap();
        let mut data = subtype.to_be_bytes().to_vec();
        data.resize(6, 0);
        fm.instructions = vec![ofp::Instruction::ApplyActions(vec![
            ofp::Action::Experimenter {
                experimenter,
                data: data.into(),
            },
        ])];
        p.flow_mod(&fm, 0).unwrap_err().code
    };
    assert_eq!(
        code(ofp::action::NX_VENDOR_ID, 18),
        ErrorCode::BadAction(BadActionCode::BadExpType)
    );
    assert_eq!(
        code(0x00ab_cdef, 1),
        ErrorCode::BadAction(BadActionCode::BadExperimenter)
    );
}

#[test]
fn check_pkt_larger_sets_its_bit_by_the_frames_length() {
    // The test frame is 60 bytes: larger than 59, not larger than 60.
    for (len, want) in [(59, 2), (60, 3), (1500, 3)] {
        let flows = [
            format!("priority=1,actions=check_pkt_larger({len})->NXM_NX_REG0[5],resubmit(,1)"),
            "table=1,priority=2,reg0=0x20/0x20,actions=output:2".into(),
            "table=1,priority=1,actions=output:3".into(),
        ];
        let refs: Vec<&str> = flows.iter().map(String::as_str).collect();
        let mut p = pipeline(&refs);
        assert_eq!(ports(&mut p), vec![want], "check_pkt_larger({len})");
    }
    // A bit of a field that cannot be written: refused on the wire as
    // Open vSwitch refuses it (mf_check_dst).
    let a = ofp::text::parse_actions("check_pkt_larger(10)->NXM_NX_CT_STATE[0]").unwrap();
    let mut b = Vec::new();
    a[0].encode(&mut b);
    let b = bytes::Bytes::from(b);
    let mut r = ofp::wire::Reader::new(&b, ErrorCode::BAD_LEN);
    assert_eq!(
        ofp::Action::decode(&mut r).unwrap_err().code,
        ErrorCode::BadAction(BadActionCode::BadSetArgument)
    );
    assert_eq!(
        refused("actions=write_actions(check_pkt_larger(10)->NXM_NX_REG0[0])"),
        ErrorCode::BadAction(BadActionCode::BadType)
    );
}

#[test]
fn a_move_into_vlan_vid_writes_the_twelve_bit_vid() {
    // Antrea's `push_vlan:0x8100,move:NXM_NX_CT_LABEL[64..75]->
    // OXM_OF_VLAN_VID[]`, with a register as the source: OXM_OF_VLAN_VID
    // is Open vSwitch's 12-bit vlan_vid there (MFF_VLAN_VID). A write
    // changes the tag's VID (the present bit stays, a tag's); a read gives
    // the VID alone.
    let vid = |o: &Output, f: &[u8]| {
        let b = o.data.as_deref().unwrap_or(f);
        (b[12..14] == [0x81, 0x00]).then(|| u16::from_be_bytes([b[14], b[15]]))
    };
    let cases: [(&str, Option<u16>); 2] = [
        (
            "actions=load:0xabc->NXM_NX_REG1[0..11],push_vlan:0x8100,move:NXM_NX_REG1[0..11]->OXM_OF_VLAN_VID[],output:2",
            Some(0xabc),
        ),
        // Read into reg2 (12 bits: the VID), the VID zeroed, then written
        // back from reg2: 0xabc again.
        (
            "actions=push_vlan:0x8100,load:0xabc->OXM_OF_VLAN_VID[],move:OXM_OF_VLAN_VID[]->NXM_NX_REG2[0..11],\
             load:0->OXM_OF_VLAN_VID[],move:NXM_NX_REG2[0..11]->OXM_OF_VLAN_VID[],output:2",
            Some(0xabc),
        ),
    ];
    for (flow, want) in cases {
        let mut p = pipeline(&[flow]);
        let mut f = frame();
        let (outs, _) = outputs(&mut p, &mut f);
        assert_eq!(outs.len(), 1, "{flow}");
        assert_eq!(vid(&outs[0], &f), want, "{flow}");
    }
    // A 13th bit is refused, as Open vSwitch refuses it; so is a write
    // to packets not known to be tagged (OFPBAC_MATCH_INCONSISTENT, as
    // Open vSwitch answers a load to vlan_vid without a VLAN matched).
    assert!(parse_flow_mod("actions=move:NXM_NX_REG1[0..12]->OXM_OF_VLAN_VID[0..12]").is_err());
    let mut p = pipeline(&[]);
    let untagged =
        parse_flow_mod("actions=move:NXM_NX_REG1[0..11]->OXM_OF_VLAN_VID[],output:2").unwrap();
    assert_eq!(
        p.flow_mod(&untagged, 0).unwrap_err().code,
        ErrorCode::BadAction(BadActionCode::MatchInconsistent)
    );
}
