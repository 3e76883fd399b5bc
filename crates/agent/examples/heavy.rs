//! Control-thread time of the heaviest single requests a controller can
//! send, on a large switch: how long `Agent::handle_input` takes for one message
//! (the daemon's control thread does nothing else meanwhile) and how many
//! bytes it queues. The hardening issue's bound is 100 ms per message.
//!
//! `cargo run --release -p agent --example heavy [-- FLOWS GROUPS]`
//! (defaults: 1 000 000 flows, 65 536 groups).

use std::sync::Arc;
use std::time::Instant;

use agent::{Agent, Datapath, PortInfo};
use bytes::Bytes;
use ofp::msg::multipart::{MultipartRequest, MultipartRequestBody as B};
use ofp::msg::simple::Hello;
use ofp::Message;
use pipeline::{Pipeline, Snapshot};

struct Null;

impl Datapath for Null {
    type Port = PortInfo;
    type PortSettings = ();
    fn publish(&self, _: Arc<Snapshot>) {}
    fn packet_out(&self, _: u32, _: Vec<ofp::Action>, _: Bytes) -> bool {
        true
    }
    fn port_stats(&self, port_no: u32) -> Option<ofp::msg::multipart::PortStats> {
        Some(ofp::msg::multipart::PortStats {
            port_no,
            ..Default::default()
        })
    }
    fn queue_stats(&self, _: u32, _: u32) -> Option<(u64, u64, u64)> {
        None
    }
    /// A port is as the test describes it.
    fn port_add(&mut self, port: PortInfo) -> Result<PortInfo, String> {
        Ok(port)
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let flows = args.first().copied().unwrap_or(1_000_000);
    let groups = args.get(1).copied().unwrap_or(65_536) as u32;
    let mut p = Pipeline::new(pipeline::Config::default());
    // As the daemon: big changes' leftovers are freed on a thread.
    if let Some(d) = pipeline::garbage::on_thread("heavy-free") {
        p.set_disposer(d);
    }
    let mut a = Agent::new(1, p, Null, "heavy");
    for n in 1..=4u32 {
        let p = PortInfo::new(n, &format!("p{n}"), [2, 0, 0, 0, 0, n as u8]);
        a.handle_add_port(p, 0).unwrap();
    }
    let id = a.connect(0);
    a.handle_input(id, &Message::Hello(Hello::ours()).to_bytes(1), 0);
    let mut xid = 10;
    // One request: the time of the call that takes it in (the longest the
    // control thread is held by it), then, for a reply produced as the
    // outbox drains, every later step until it is done, as a peer that
    // reads everything would cause.
    let mut send = |a: &mut Agent<Null>, m: &Message, what: &str| {
        xid += 1;
        let wire = m.to_bytes(xid);
        let t = Instant::now();
        a.handle_input(id, &wire, 1);
        let first = t.elapsed();
        let (mut longest, mut total, mut bytes, mut steps) = (first, first, 0usize, 1);
        loop {
            let n = a.poll_transmit(id).map_or(0, <[u8]>::len);
            bytes += n;
            a.transmitted(id, n);
            if !a.conn(id).unwrap().has_work() {
                break;
            }
            let t = Instant::now();
            a.pump(id, 1);
            let e = t.elapsed();
            longest = longest.max(e);
            total += e;
            steps += 1;
        }
        if !what.is_empty() {
            println!(
                "{what:<36} longest step {:>7.1} ms, {steps:>5} steps, {:>8.1} ms in all, {bytes:>10} bytes",
                longest.as_secs_f64() * 1e3,
                total.as_secs_f64() * 1e3
            );
        }
    };
    // The tables: `flows` exact 5-tuples in table 0, each with two actions.
    let t = Instant::now();
    for i in 0..flows {
        let fm = ofp::text::parse_flow_mod(&format!(
            "priority=10,tcp,nw_src=10.{}.{}.{},tp_dst=80,actions=set_field:02:00:00:00:00:09->eth_dst,output:{}",
            (i >> 16) & 255,
            (i >> 8) & 255,
            i & 255,
            1 + i % 4
        ))
        .unwrap();
        send(&mut a, &Message::FlowMod(fm), "");
    }
    for g in 1..=groups {
        let mut gm = ofp::text::parse_group_mod(&format!(
            "group_id={g},type=ff,bucket=watch_port:1,output:1,bucket=watch_port:2,output:2"
        ))
        .unwrap();
        gm.command = ofp::msg::group::GroupModCommand::Add;
        send(&mut a, &Message::GroupMod(gm), "");
    }
    send(&mut a, &Message::BarrierRequest, "");
    println!(
        "set-up: {flows} flows, {groups} groups in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let mp = |body| Message::MultipartRequest(MultipartRequest { flags: 0, body });
    send(
        &mut a,
        &mp(B::Flow(Default::default())),
        "FLOW_STATS, all flows",
    );
    send(
        &mut a,
        &mp(B::Aggregate(Default::default())),
        "AGGREGATE_STATS, all flows",
    );
    send(
        &mut a,
        &mp(B::TableFeatures(vec![])),
        "TABLE_FEATURES request",
    );
    send(&mut a, &mp(B::Table), "TABLE_STATS");
    send(
        &mut a,
        &mp(B::Group {
            group_id: ofp::port::group_no::ALL,
        }),
        "GROUP_STATS, all groups",
    );
    send(&mut a, &mp(B::GroupDesc), "GROUP_DESC");
    let mut ow =
        ofp::text::parse_flow_mod("priority=10,tcp,nw_src=10.0.0.1,tp_dst=80,actions=output:3")
            .unwrap();
    ow.flags = ofp::msg::flow::flow_mod_flags::CHECK_OVERLAP;
    ow.priority = 11;
    send(
        &mut a,
        &Message::FlowMod(ow),
        "FLOW_MOD ADD with CHECK_OVERLAP",
    );
    let mut m = ofp::text::parse_flow_mod("tcp,actions=output:2").unwrap();
    m.command = ofp::FlowModCommand::Modify;
    send(
        &mut a,
        &Message::FlowMod(m),
        "FLOW_MOD MODIFY of every flow",
    );
    let mut gd = ofp::text::parse_group_mod("group_id=1,type=all").unwrap();
    gd.command = ofp::msg::group::GroupModCommand::Delete;
    gd.group_id = ofp::port::group_no::ALL;
    send(&mut a, &Message::GroupMod(gd), "GROUP_MOD DELETE ALL");
    let mut d = ofp::text::parse_flow_mod("table=255").unwrap();
    d.command = ofp::FlowModCommand::Delete;
    send(
        &mut a,
        &Message::FlowMod(d),
        "FLOW_MOD DELETE of every flow",
    );
}
