//! A FLOW_MOD naming more rules than one round changes
//! (`pipeline::control::ROUND`) is the connection's job: a round per
//! `pump`, its FLOW_REMOVED messages all sent, the connection's later
//! messages (a barrier) answered only after the last round, other
//! connections answered between rounds.

use agent::{Agent, ConnId};
use ofp::msg::simple::Hello;
use ofp::Message;
use pipeline::Pipeline;

mod common;
use common::{replies, Holding};

fn flow(text: &str, xid: u32) -> Vec<u8> {
    Message::FlowMod(ofp::text::parse_flow_mod(text).unwrap()).to_bytes(xid)
}

fn command(text: &str, c: ofp::FlowModCommand, xid: u32) -> Vec<u8> {
    let mut fm = ofp::text::parse_flow_mod(text).unwrap();
    fm.command = c;
    Message::FlowMod(fm).to_bytes(xid)
}

fn open(a: &mut Agent<Holding>, now: u64) -> ConnId {
    let id = a.connect(now);
    replies(a, id);
    assert!(a.handle_input(id, &Message::Hello(Hello::ours()).to_bytes(1), now));
    id
}

/// An agent with `n` flows (every third with send_flow_rem), published,
/// its datapath holding the last version.
fn loaded(n: u32) -> (Agent<Holding>, ConnId) {
    let dp = Holding::default();
    dp.set_hold(1);
    let mut a = Agent::new(1, Pipeline::new(pipeline::Config::default()), dp, "br0");
    let id = open(&mut a, 0);
    let mut bytes = Vec::new();
    for i in 0..n {
        let flag = if i % 3 == 0 { "send_flow_rem," } else { "" };
        let text = format!(
            "priority=5,tcp,nw_src=10.{}.{}.{},{flag}actions=output:2",
            i >> 16,
            (i >> 8) & 255,
            i & 255
        );
        bytes.extend(flow(&text, i));
    }
    assert!(a.handle_input(id, &bytes, 1));
    assert!(replies(&mut a, id).is_empty(), "no errors");
    (a, id)
}

/// Pumps `id` until its job is done; the rounds it took.
fn pump_out(a: &mut Agent<Holding>, id: ConnId, out: &mut Vec<(u32, Message)>) -> usize {
    let mut rounds = 0;
    while a.conn(id).unwrap().in_rounds() {
        assert!(a.pump(id, 10));
        out.extend(replies(a, id));
        rounds += 1;
        assert!(rounds < 10_000);
    }
    rounds
}

#[test]
fn a_barrier_after_a_delete_of_everything_waits_for_every_flow_removed() {
    let n = (pipeline::control::ROUND * 6) as u32;
    let (mut a, id) = loaded(n);
    let other = open(&mut a, 2);
    let mut msgs = command("table=255", ofp::FlowModCommand::Delete, 100);
    msgs.extend(Message::BarrierRequest.to_bytes(101));
    assert!(a.handle_input(id, &msgs, 3));
    // Deleted whole at once: the datapath already runs the empty table.
    assert_eq!(a.pipeline().flow_count(), 0);
    let snap = a.datapath().held.borrow().back().unwrap().clone();
    assert!(snap.tables[0].is_empty());
    let mut out = replies(&mut a, id);
    assert!(
        a.conn(id).unwrap().in_rounds(),
        "FLOW_REMOVED still to send"
    );
    assert!(!out.iter().any(|(_, m)| matches!(m, Message::BarrierReply)));
    // Another connection is answered between rounds.
    assert!(a.handle_input(
        other,
        &Message::EchoRequest(Default::default()).to_bytes(7),
        4
    ));
    assert!(replies(&mut a, other)
        .iter()
        .any(|(x, m)| *x == 7 && matches!(m, Message::EchoReply(_))));
    let rounds = pump_out(&mut a, id, &mut out);
    assert!(rounds >= 1);
    out.extend(replies(&mut a, id));
    let removed = out
        .iter()
        .filter(|(_, m)| matches!(m, Message::FlowRemoved(_)))
        .count();
    assert_eq!(removed, n.div_ceil(3) as usize, "one per flagged flow");
    // The barrier reply comes last, after every FLOW_REMOVED.
    assert!(matches!(out.last(), Some((101, Message::BarrierReply))));
    assert_eq!(
        out.iter()
            .filter(|(_, m)| matches!(m, Message::BarrierReply))
            .count(),
        1
    );
}

#[test]
fn a_modify_of_a_big_table_goes_in_rounds_and_the_barrier_waits() {
    let n = (pipeline::control::ROUND * 3 + 1) as u32;
    let (mut a, id) = loaded(n);
    let mut msgs = command("actions=output:3", ofp::FlowModCommand::Modify, 100);
    msgs.extend(Message::BarrierRequest.to_bytes(101));
    assert!(a.handle_input(id, &msgs, 3));
    let mut out = replies(&mut a, id);
    assert!(out.is_empty(), "the barrier waits");
    assert!(a.conn(id).unwrap().in_rounds());
    // Each round is published: some rules changed, not yet all.
    let snap = a.datapath().held.borrow().back().unwrap().clone();
    let changed = snap.tables[0]
        .entries()
        .filter(|(_, _, r)| r.outputs_to(3))
        .count();
    assert!(changed > 0 && changed < n as usize, "{changed}");
    pump_out(&mut a, id, &mut out);
    out.extend(replies(&mut a, id));
    assert!(matches!(out.as_slice(), [(101, Message::BarrierReply)]));
    let snap = a.datapath().held.borrow().back().unwrap().clone();
    let changed = snap.tables[0]
        .entries()
        .filter(|(_, _, r)| r.outputs_to(3))
        .count();
    assert_eq!(changed, n as usize, "all of them by the barrier reply");
}

#[test]
fn a_modify_in_rounds_is_applied_whole_when_its_connection_goes() {
    let n = (pipeline::control::ROUND * 3 + 1) as u32;
    let (mut a, id) = loaded(n);
    let other = open(&mut a, 2);
    assert!(a.handle_input(
        id,
        &command("actions=output:3", ofp::FlowModCommand::Modify, 100),
        3
    ));
    assert!(a.conn(id).unwrap().in_rounds());
    a.disconnect(id);
    a.publish();
    let snap = a.datapath().held.borrow().back().unwrap().clone();
    let changed = snap.tables[0]
        .entries()
        .filter(|(_, _, r)| r.outputs_to(3))
        .count();
    assert_eq!(changed, n as usize);
    assert!(replies(&mut a, other).is_empty());
}
