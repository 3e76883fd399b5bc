//! The agent's state machine driven by random sequences of events on a fake
//! clock, sans IO: connections opening and closing, byte streams (canned
//! valid messages, bundles of them among these, Open vSwitch's packet-in
//! formats and controller ids, messages with random bodies, raw bytes,
//! split anywhere), PACKET_INs (for two controller ids, some with
//! userdata and registers), link changes and time passing. The datapath is the real
//! pipeline: every PACKET_OUT the agent accepts is run by a worker on the
//! published snapshot. No panic; everything the agent sends frames and
//! decodes as OpenFlow 1.3, each message's length field equal to its size.
//!
//! Input: a list of events, each an opcode byte and its arguments.
#![no_main]

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use agent::{Agent, ConnId, Datapath, PortInfo};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use ofp::msg::multipart::PortStats;
use ofp::Message;
use pipeline::{Pipeline, Snapshot, ToController, Worker};

struct Dp {
    snap: RefCell<Option<Arc<Snapshot>>>,
    worker: RefCell<Worker>,
}

impl Datapath for Dp {
    type Port = PortInfo;
    type PortSettings = ();
    fn publish(&self, snap: Arc<Snapshot>) {
        *self.snap.borrow_mut() = Some(snap);
    }
    fn packet_out(&self, in_port: u32, actions: Vec<ofp::Action>, frame: Bytes) -> bool {
        if let Some(s) = self.snap.borrow().as_ref() {
            let mut f = frame.to_vec();
            let _ = self.worker.borrow_mut().packet_out(s, in_port, &actions, &mut f, 0);
        }
        true
    }
    fn port_stats(&self, port_no: u32) -> Option<PortStats> {
        (port_no <= 3).then(|| PortStats { port_no, ..Default::default() })
    }
    fn queue_stats(&self, port_no: u32, queue_id: u32) -> Option<(u64, u64, u64)> {
        (port_no <= 3 && queue_id < 2).then_some((1, 1, 0))
    }
    fn port_add(&mut self, port: PortInfo) -> Result<PortInfo, String> {
        Ok(port)
    }
}

/// Valid requests of every kind a controller sends, encoded.
fn canned() -> &'static [Vec<u8>] {
    static C: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    C.get_or_init(|| {
        use ofp::msg::multipart::{MultipartRequest, MultipartRequestBody as B};
        use ofp::text::{parse_flow_mod, parse_group_mod, parse_meter_mod};
        let mut m: Vec<Message> = vec![
            Message::Hello(ofp::msg::simple::Hello::ours()),
            Message::FeaturesRequest,
            Message::GetConfigRequest,
            Message::BarrierRequest,
            Message::EchoRequest(Bytes::from_static(b"x")),
            Message::GetAsyncRequest,
        ];
        use ofp::FlowModCommand as C;
        for (cmd, f) in [
            (C::Add, "priority=5,ip,nw_dst=10.0.0.0/8,actions=dec_ttl,output:2"),
            (C::Add, "table=0,priority=1,actions=controller:128"),
            (C::Add, "table=0,priority=9,arp,actions=group:1"),
            (C::Add, "table=0,priority=7,tcp,idle_timeout=1,hard_timeout=2,send_flow_rem,actions=set_field:80->tcp_dst,goto_table:1"),
            (C::Add, "table=1,priority=1,actions=meter:1,write_actions(output:3)"),
            (C::Delete, "table=255"),
            (C::DeleteStrict, "priority=5,ip,nw_dst=10.0.0.0/8"),
            (C::Modify, "table=0,actions=output:1"),
        ] {
            let mut fm = parse_flow_mod(f).unwrap();
            fm.command = cmd;
            m.push(Message::FlowMod(fm));
        }
        for g in [
            "group_id=1,type=all,bucket=set_field:0x86dd->eth_type,set_field:2001:db8::1->ipv6_src,output:2,bucket=output:3",
            "group_id=2,type=ff,bucket=watch_port:2,output:2,bucket=watch_group:1,group:1",
            "group_id=3,type=select,bucket=weight:1,output:1,bucket=weight:2,group:1",
        ] {
            let mut gm = parse_group_mod(g).unwrap();
            gm.command = ofp::msg::group::GroupModCommand::Add;
            m.push(Message::GroupMod(gm.clone()));
            gm.command = ofp::msg::group::GroupModCommand::Delete;
            m.push(Message::GroupMod(gm));
        }
        let mut mm = parse_meter_mod("meter=1,kbps,bands=type=drop,rate=1000").unwrap();
        mm.command = ofp::msg::meter::MeterModCommand::Add;
        m.push(Message::MeterMod(mm));
        for body in [
            B::Desc,
            B::Flow(Default::default()),
            B::Aggregate(Default::default()),
            B::Table,
            B::PortStats { port_no: ofp::port::port_no::ANY },
            B::Queue { port_no: ofp::port::port_no::ANY, queue_id: 0xffff_ffff },
            B::Group { group_id: 0xffff_fffc },
            B::GroupDesc,
            B::GroupFeatures,
            B::Meter { meter_id: 0xffff_ffff },
            B::MeterConfig { meter_id: 0xffff_ffff },
            B::MeterFeatures,
            B::TableFeatures(vec![]),
            B::PortDesc,
        ] {
            m.push(Message::MultipartRequest(MultipartRequest { flags: 0, body }));
        }
        m.push(Message::PacketOut(ofp::PacketOut {
            buffer_id: u32::MAX,
            in_port: 1,
            actions: ofp::text::parse_actions("set_field:2->arp_op,output:table").unwrap(),
            data: Bytes::from_static(&[
                0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 8, 6, 0, 1, 8, 0, 6, 4, 0, 1,
                2, 0, 0, 0, 0, 1, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
            ]),
        }));
        m.push(Message::RoleRequest(ofp::msg::simple::Role {
            role: ofp::msg::simple::ControllerRole::Master,
            generation_id: 1,
        }));
        // Open vSwitch's packet-in formats and controller ids.
        {
            use ofp::msg::nxt::{NxtMsg, PacketInFormat as F};
            for f in [F::Standard, F::Nxt, F::Nxt2] {
                m.push(NxtMsg::SetPacketInFormat(f).message());
            }
            for id in [0, 1] {
                m.push(NxtMsg::SetControllerId(id).message());
            }
        }
        // Management commands (taken on service connections only).
        for words in [
            &["del-port", "1"][..],
            &["del-port", "p2"],
            &["add-port", "tap9", "ofport=9"],
            &["fdb-show"],
            &["vlog", "debug"],
            &["no-such-verb", "x"],
            &[""],
        ] {
            let req = ofp::msg::sluice::CommandRequest {
                words: words.iter().map(|w| w.to_string()).collect(),
            };
            m.push(req.message());
        }
        // Bundles (every canned message has xid 7, so a bundled copy of one
        // carries the right inner xid): open, adds of flow, group and meter
        // mods and of a message that may not be bundled, close, commit,
        // discard, for two bundle ids and both flag sets.
        {
            use ofp::msg::bundle::{BundleAdd, BundleCtrl, BundleCtrlType as T};
            let inner: Vec<Message> = m
                .iter()
                .filter(|x| matches!(x, Message::FlowMod(_) | Message::GroupMod(_) | Message::MeterMod(_)))
                .cloned()
                .chain([Message::BarrierRequest])
                .collect();
            for id in [1u32, 2] {
                for flags in [0u16, 3] {
                    for t in [T::OpenRequest, T::CloseRequest, T::CommitRequest, T::DiscardRequest] {
                        m.push(BundleCtrl { bundle_id: id, ctrl_type: t, flags, properties: Bytes::new() }.message());
                    }
                    for x in &inner {
                        m.push(BundleAdd::new(id, flags, x, 7).message());
                    }
                }
            }
        }
        m.iter().map(|m| m.to_bytes(7)).collect()
    })
}

/// Checks and empties what the agent queued on `id`.
fn drain(a: &mut Agent<Dp>, id: ConnId) {
    let out = a.poll_transmit(id).unwrap_or_default().to_vec();
    a.transmitted(id, out.len());
    let mut at = 0;
    while at < out.len() {
        assert!(out.len() - at >= 8, "a message cut short at the end of the outbox");
        let len = u16::from_be_bytes([out[at + 2], out[at + 3]]) as usize;
        assert!(len >= 8 && at + len <= out.len(), "length field {len} at {at} of {}", out.len());
        let bytes = Bytes::copy_from_slice(&out[at..at + len]);
        if let Err(e) = Message::decode(&bytes) {
            panic!("the agent sent a message that does not decode: {e:?} {:02x?}", &out[at..at + len.min(64)]);
        }
        at += len;
    }
}

fuzz_target!(|data: &[u8]| {
    let dp = Dp { snap: RefCell::new(None), worker: RefCell::new(Worker::new(0)) };
    let mut a = Agent::new(1, Pipeline::new(pipeline::Config { n_tables: 4, ..Default::default() }), dp, "fuzz");
    for n in 1..=3u32 {
        let p = PortInfo {
            queues: vec![(0, 0, 0), (1, 100, 1000)],
            ..PortInfo::new(n, &format!("p{n}"), [2, 0, 0, 0, 0, n as u8])
        };
        a.handle_add_port(p, 0).unwrap();
    }
    let mut now: u64 = 1;
    let mut conns: Vec<ConnId> = Vec::new();
    let mut d = data;
    let take = |n: usize, d: &mut &[u8]| -> Vec<u8> {
        let n = n.min(d.len());
        let (h, t) = d.split_at(n);
        *d = t;
        h.to_vec()
    };
    while let Some((&op, rest)) = d.split_first() {
        d = rest;
        let pick = |conns: &[ConnId]| (!conns.is_empty()).then(|| conns[op as usize / 16 % conns.len()]);
        match op % 10 {
            0 if conns.len() < 4 => {
                let id = a.connect(now);
                if op & 0x80 != 0 {
                    a.set_service(id);
                }
                conns.push(id);
            }
            1 => {
                // A canned message, whole.
                let b = take(1, &mut d);
                let Some(id) = pick(&conns) else { continue };
                let c = canned();
                let m = &c[b.first().copied().unwrap_or(0) as usize % c.len()];
                if !a.handle_input(id, m, now) {
                    a.disconnect(id);
                    conns.retain(|x| *x != id);
                }
            }
            2 => {
                // A message of any type with a random body.
                let h = take(3, &mut d);
                let (ty, len) = (h.first().copied().unwrap_or(0) % 32, h.get(1).copied().unwrap_or(0) as usize);
                let body = take(len, &mut d);
                let Some(id) = pick(&conns) else { continue };
                let mut m = vec![4, ty, 0, 0, 0, 0, 0, h.get(2).copied().unwrap_or(0)];
                m.extend_from_slice(&body);
                let l = m.len() as u16;
                m[2..4].copy_from_slice(&l.to_be_bytes());
                if !a.handle_input(id, &m, now) {
                    a.disconnect(id);
                    conns.retain(|x| *x != id);
                }
            }
            3 => {
                // Raw bytes, possibly part of a message.
                let n = take(1, &mut d).first().copied().unwrap_or(0) as usize % 48;
                let raw = take(n, &mut d);
                let Some(id) = pick(&conns) else { continue };
                if !a.handle_input(id, &raw, now) {
                    a.disconnect(id);
                    conns.retain(|x| *x != id);
                }
            }
            4 => {
                // Time passes: up to ~25 s in 100 ms steps.
                now += (op as u64 / 10 + 1) * 100_000_000;
                a.handle_timeout(now);
                while let Some(agent::Event::Close { conn: id, .. }) = a.poll_event() {
                    a.disconnect(id);
                    conns.retain(|x| *x != id);
                }
            }
            5 => {
                if let Some(id) = pick(&conns) {
                    a.disconnect(id);
                    conns.retain(|x| *x != id);
                }
            }
            6 => {
                let n = take(1, &mut d).first().copied().unwrap_or(0) as usize;
                let frame = take(n, &mut d);
                let mut ctl = ToController::new(ofp::msg::flow::PacketInReason::NoMatch, 0, u64::MAX, if op & 0x80 != 0 { 0xffff } else { 64 });
                // Some for controller id 1, some with userdata and
                // registers (as controller(userdata=..,id=1) makes them).
                ctl.controller_id = (op as u16 >> 6) & 1;
                if op & 0x20 != 0 {
                    let u = take(1, &mut d).first().copied().unwrap_or(0) as usize;
                    ctl.extra = Some(std::sync::Arc::new(pipeline::PacketInExtra {
                        userdata: Bytes::from(take(u, &mut d)),
                        regs: [op as u32; 16],
                        metadata: 7,
                        ..Default::default()
                    }));
                }
                a.handle_packet_in(1 + (op as u32 >> 5) % 3, ctl, Bytes::from(frame), now);
            }
            7 => a.handle_link_change(1 + (op as u32 >> 4) % 4, op & 0x80 != 0),
            8 => {
                let n = take(1, &mut d).first().copied().unwrap_or(0) as usize;
                let frame = take(n, &mut d);
                let _ = a.trace(1 + (op as u32 >> 5) % 3, &frame);
            }
            _ => {
                if let Some(id) = pick(&conns) {
                    drain(&mut a, id);
                }
            }
        }
    }
    for id in conns {
        drain(&mut a, id);
    }
});
