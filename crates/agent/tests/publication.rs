//! When the agent publishes: a flow-mod with no barrier takes effect at
//! the end of the `receive` call that brought it, whatever the tables'
//! size, as long as the datapath has let go of the version before last;
//! while it holds every copy, the publication waits (for a tick) at most
//! `publish_interval_ns`.

use agent::{Agent, ConnId};
use ofp::msg::simple::Hello;
use ofp::Message;
use pipeline::Pipeline;

mod common;
use common::{replies, Holding};

fn flow(text: &str, xid: u32) -> Vec<u8> {
    Message::FlowMod(ofp::text::parse_flow_mod(text).unwrap()).to_bytes(xid)
}

/// An agent with `rules` flows installed and published, its datapath
/// holding only the last version.
fn loaded(rules: u32) -> (Agent<Holding>, ConnId) {
    let dp = Holding::default();
    dp.set_hold(1);
    let mut a = Agent::new(1, Pipeline::new(pipeline::Config::default()), dp, "br0");
    let id = a.connect(0);
    replies(&mut a, id);
    assert!(a.handle_input(id, &Message::Hello(Hello::ours()).to_bytes(1), 0));
    let mut bytes = Vec::new();
    for i in 0..rules {
        let text = format!(
            "priority=5,tcp,nw_src=10.{}.{}.{},tp_dst=80,actions=output:2",
            i >> 16,
            (i >> 8) & 255,
            i & 255
        );
        bytes.extend(flow(&text, i));
    }
    assert!(a.handle_input(id, &bytes, 1));
    assert!(replies(&mut a, id).is_empty(), "no errors");
    assert!(!a.is_dirty(), "published at the end of the receive");
    (a, id)
}

#[test]
fn a_flow_mod_without_barrier_is_published_at_once_in_a_large_table() {
    let (mut a, id) = loaded(50_000);
    assert!(
        a.publish_interval_ns() >= 100_000_000,
        "a 100 ms spacing would apply"
    );
    let before = a.datapath().version();
    // 1 ns later: far inside the interval.
    let msg = flow("priority=9,udp,actions=output:1", 7);
    assert!(a.handle_input(id, &msg, 2));
    assert!(!a.is_dirty());
    let after = a.datapath().version();
    assert_eq!(after, before + 1);
    let snap = a.datapath().held.borrow().back().unwrap().clone();
    assert_eq!(snap.tables[0].len(), 50_001);
}

#[test]
fn while_the_datapath_holds_every_copy_the_publication_waits() {
    let (mut a, id) = loaded(1_000);
    // Workers lag: the two last versions stay in use.
    a.datapath().set_hold(2);
    assert!(a.handle_input(id, &flow("priority=9,udp,actions=output:1", 7), 2));
    assert!(!a.is_dirty(), "one copy was still free");
    let v = a.datapath().version();
    assert!(a.handle_input(id, &flow("priority=9,icmp,actions=output:1", 8), 3));
    assert!(a.is_dirty(), "both copies held: waits rather than copy");
    assert_eq!(a.datapath().version(), v);
    // The workers move on: the next tick publishes.
    a.datapath().set_hold(1);
    common::tick(&mut a, 4);
    assert!(!a.is_dirty());
    assert_eq!(a.datapath().version(), v + 1);
    // Held again, and the interval passes: published anyway (by copying).
    a.datapath().set_hold(2);
    assert!(a.handle_input(id, &flow("priority=9,arp,actions=output:1", 9), 5));
    assert!(a.handle_input(id, &flow("priority=9,sctp,actions=output:1", 10), 6));
    assert!(a.is_dirty());
    let due = 6 + a.publish_interval_ns();
    common::tick(&mut a, due);
    assert!(!a.is_dirty());
    let snap = a.datapath().held.borrow().back().unwrap().clone();
    assert_eq!(snap.tables[0].len(), 1_004);
}

#[test]
fn a_barrier_publishes_even_while_every_copy_is_held() {
    let (mut a, id) = loaded(1_000);
    a.datapath().set_hold(2);
    assert!(a.handle_input(id, &flow("priority=9,udp,actions=output:1", 7), 2));
    assert!(a.handle_input(id, &flow("priority=9,icmp,actions=output:1", 8), 3));
    assert!(a.is_dirty());
    let mut bytes = flow("priority=9,arp,actions=output:1", 9);
    bytes.extend(Message::BarrierRequest.to_bytes(10));
    assert!(a.handle_input(id, &bytes, 4));
    assert!(!a.is_dirty());
    assert!(matches!(
        replies(&mut a, id)[..],
        [(10, Message::BarrierReply)]
    ));
    let snap = a.datapath().held.borrow().back().unwrap().clone();
    assert_eq!(snap.tables[0].len(), 1_003);
}
