//! The fake datapath the agent drives in these tests, and the helpers that
//! open connections to it and read its answers.

use std::cell::RefCell;
use std::sync::Arc;

use agent::{Agent, ConnId, Datapath, PortInfo};
use bytes::Bytes;
use ofp::error::ErrorCode;
use ofp::msg::simple::Hello;
use ofp::Message;
use pipeline::{Pipeline, Snapshot, ToController};

use crate::common::{decode_all, replies};

#[derive(Default)]
pub struct FakeDp {
    pub published: RefCell<u64>,
    pub outs: RefCell<Vec<(u32, Vec<ofp::Action>, Bytes)>>,
    /// The ports `port_set` was asked about.
    pub settings: Vec<u32>,
    /// The link changes the datapath was told.
    pub links: Vec<(u32, bool)>,
}

impl Datapath for FakeDp {
    type Port = PortInfo;
    type PortSettings = ();
    fn publish(&self, snap: Arc<Snapshot>) {
        *self.published.borrow_mut() = snap.version;
    }
    fn packet_out(&self, in_port: u32, actions: Vec<ofp::Action>, frame: Bytes) -> bool {
        self.outs.borrow_mut().push((in_port, actions, frame));
        true
    }
    fn port_stats(&self, port_no: u32) -> Option<ofp::msg::multipart::PortStats> {
        Some(ofp::msg::multipart::PortStats {
            port_no,
            rx_packets: 7,
            ..Default::default()
        })
    }
    fn queue_stats(&self, port_no: u32, queue_id: u32) -> Option<(u64, u64, u64)> {
        Some((1000 * port_no as u64 + queue_id as u64, 3, 0))
    }
    /// Interfaces named `tap*` exist; they get the lowest free number.
    fn port_from_words(&self, words: &[String], taken: &[u32]) -> Result<PortInfo, String> {
        if !words[0].starts_with("tap") {
            return Err(format!("{}: no such interface", words[0]));
        }
        let no = (1..).find(|n| !taken.contains(n)).unwrap();
        Ok(PortInfo::new(no, &words[0], [2, 0, 0, 0, 1, no as u8]))
    }
    /// A port is as the test describes it.
    fn port_add(&mut self, port: PortInfo) -> Result<PortInfo, String> {
        Ok(port)
    }
    fn port_del(&mut self, port_no: u32) -> Result<(), String> {
        if port_no == 2 {
            return Err("busy".into());
        }
        Ok(())
    }
    /// Port 1's devices are open (and closed by a detach); others have none.
    fn port_detach(&mut self, port_no: u32) -> bool {
        port_no == 1
    }
    /// Port 1's interface is back with another address; others' are not.
    fn port_reattach(&mut self, port_no: u32) -> Result<PortInfo, String> {
        match port_no {
            1 => Ok(PortInfo::new(1, "p1", [2, 0, 0, 0, 9, 1])),
            _ => Err("no such interface yet".into()),
        }
    }
    fn port_link_changed(&mut self, port_no: u32, up: bool) {
        self.links.push((port_no, up));
    }
    fn port_set(&mut self, port_no: u32, (): ()) -> bool {
        self.settings.push(port_no);
        port_no == 1
    }
}

pub fn agent() -> Agent<FakeDp> {
    let mut a = Agent::new(
        0x2a,
        Pipeline::new(pipeline::Config::default()),
        FakeDp::default(),
        "br0",
    );
    for n in 1..=2 {
        let p = PortInfo::new(n, &format!("p{n}"), [2, 0, 0, 0, 0, n as u8]);
        a.handle_add_port(p, 0).unwrap();
    }
    a
}

pub fn open(a: &mut Agent<FakeDp>) -> ConnId {
    let id = a.connect(0);
    assert!(matches!(replies(a, id)[..], [(_, Message::Hello(_))]));
    assert!(a.handle_input(id, &Message::Hello(Hello::ours()).to_bytes(1), 0));
    id
}

pub fn send(a: &mut Agent<FakeDp>, id: ConnId, m: &Message, xid: u32) -> Vec<(u32, Message)> {
    assert!(
        a.handle_input(id, &m.to_bytes(xid), 1),
        "connection stays up"
    );
    replies(a, id)
}

pub fn error_of(r: &[(u32, Message)]) -> (u32, ErrorCode, Bytes) {
    match r {
        [(xid, Message::Error(e))] => (*xid, e.code, e.data.clone()),
        other => panic!("expected one error, got {other:?}"),
    }
}

/// A table miss of `frame` on port 1, and the one PACKET_IN it makes.
pub fn table_miss(a: &mut Agent<FakeDp>, id: ConnId, frame: &Bytes) -> ofp::PacketIn {
    let ctl = ToController::new(ofp::msg::flow::PacketInReason::NoMatch, 0, 0, 0);
    a.handle_packet_in(1, ctl, frame.clone(), 5);
    match &replies(a, id)[..] {
        [(_, Message::PacketIn(p))] => p.clone(),
        other => panic!("{other:?}"),
    }
}

pub fn flow(text: &str) -> Message {
    Message::FlowMod(ofp::text::parse_flow_mod(text).unwrap())
}

/// Takes everything queued on `id` as a peer reading it would.
pub fn drain(a: &mut Agent<FakeDp>, id: ConnId) -> Vec<(u32, Message)> {
    let out = a.poll_transmit(id).unwrap_or_default().to_vec();
    a.transmitted(id, out.len());
    decode_all(&out)
}

/// Sends a management command; (ok, text) of the reply.
pub fn command(a: &mut Agent<FakeDp>, id: ConnId, words: &[&str]) -> Vec<(u32, Message)> {
    let req = ofp::msg::sluice::CommandRequest {
        words: words.iter().map(|w| w.to_string()).collect(),
    };
    send(a, id, &req.message(), 9)
}

pub fn command_reply(r: &[(u32, Message)]) -> (bool, String) {
    match r {
        [(9, Message::Experimenter(e))] => {
            let c = ofp::msg::sluice::CommandReply::decode(&e.data).unwrap();
            (c.ok, c.text)
        }
        other => panic!("expected a command reply, got {other:?}"),
    }
}

pub fn nxt(m: ofp::msg::nxt::NxtMsg) -> Message {
    m.message()
}

pub fn nx_raw(subtype: u32, body: &[u8]) -> Message {
    Message::Experimenter(ofp::msg::simple::ExperimenterMsg {
        experimenter: ofp::msg::nxt::NX_VENDOR_ID,
        exp_type: subtype,
        data: Bytes::copy_from_slice(body),
    })
}
