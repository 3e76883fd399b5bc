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
use pipeline::{Config, Output, Pipeline, PortState, Worker};

fn frame() -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x88, 0xb5];
    f.resize(60, 0);
    f
}

/// An IPv4/UDP frame with TTL `ttl`.
fn ip_frame(ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let mut ip = vec![
        0x45, 0, 0, 28, 0, 0, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
    ];
    let sum = packet::checksum::internet(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
    f.resize(60, 0);
    f
}

fn pipeline(flows: &[&str]) -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 16,
        ..Config::default()
    });
    for n in 1..=5 {
        p.set_port(PortState::up(n));
    }
    for f in flows {
        let fm = parse_flow_mod(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        p.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    p
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
    p.flow_mod(&parse_flow_mod("actions=group:1,output:5").unwrap(), 0)
        .unwrap();
    assert_eq!(ports(&mut p), vec![2, 4, 5]);
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
    assert_eq!(outs[0].controller.unwrap().max_len, 0xffff);
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
    let reg = |n| pipeline::matchkey::read_field(w.key(), F::Reg(n)).unwrap();
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
            .map(|o| (o.port, o.controller.map(|c| c.reason)))
            .collect::<Vec<_>>()
    };
    // Connection id 0 is sluice's: told.
    assert_eq!(
        run("ip,actions=dec_ttl(0,1),output:2"),
        vec![(port_no::CONTROLLER, Some(PacketInReason::InvalidTtl))]
    );
    // No id 0: not told; the packet goes no further either way.
    assert_eq!(run("ip,actions=dec_ttl(1,2),output:2"), vec![]);
    // A TTL above 1 is decremented.
    let mut p = pipeline(&["ip,actions=dec_ttl(3),output:2"]);
    let (outs, _) = outputs(&mut p, &mut ip_frame(9));
    assert_eq!(outs[0].port, 2);
    // In the action set too.
    let mut p = pipeline(&["ip,actions=write_actions(dec_ttl(5),output:2)"]);
    p.invalid_ttl_to_controller = true;
    assert!(outputs(&mut p, &mut ip_frame(1)).0.is_empty());
}

#[test]
fn controller_sends_a_packet_in_with_its_reason_and_max_len() {
    let mut p = pipeline(&["actions=controller(reason=no_match,max_len=10),controller(reason=group),controller(reason=invalid_ttl)"]);
    let (outs, _) = outputs(&mut p, &mut frame());
    let got: Vec<_> = outs
        .iter()
        .map(|o| {
            let c = o.controller.unwrap();
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
    // A connection id sluice has none of: nothing.
    let mut p = pipeline(&["actions=controller(id=3),output:2"]);
    assert_eq!(ports(&mut p), vec![2]);
}

#[test]
fn controller_userdata_and_pause_are_refused_without_packet_in2() {
    for f in [
        "actions=controller(userdata=01.02)",
        "actions=controller(pause)",
        "actions=clone(controller(pause))",
    ] {
        assert_eq!(
            refused(f),
            ErrorCode::BadAction(BadActionCode::BadArgument),
            "{f}"
        );
    }
    assert_eq!(
        refused("actions=controller(meter_id=7)"),
        ErrorCode::MeterModFailed(MeterModFailedCode::UnknownMeter)
    );
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
