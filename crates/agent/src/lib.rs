//! # agent: the OpenFlow 1.3 agent, sans-IO
//!
//! The [`Agent`] owns a bridge's control-plane [`Pipeline`] and talks to
//! any number of controller connections. It sees bytes, never sockets: the
//! daemon feeds each connection's input to [`Agent::receive`], writes out
//! [`Conn::outbox`], and calls [`Agent::tick`] for keepalives, flow
//! expiry and idle bundles. What must touch the datapath goes through the
//! [`Datapath`] trait: publishing a new pipeline snapshot, handing over a
//! PACKET_OUT, reading port counters.
//!
//! Contracts:
//! * Every message a controller may send is answered as OpenFlow 1.3.5
//!   says, and every refusal is the OFPT_ERROR the spec names, carrying the
//!   first 64 bytes of the offending message; the connection stays up
//!   (only a broken stream — a header length below 8 — or a failed HELLO
//!   closes it).
//! * Nothing is half-applied: a modification either takes effect whole or
//!   the pipeline is unchanged (the pipeline's own contract).
//! * Changes are published to the datapath before any BARRIER_REPLY or
//!   bundle COMMIT_REPLY (and before a PACKET_OUT or trace runs), so a
//!   controller that got a barrier reply knows the datapath runs
//!   everything it sent before.
//!   Otherwise they are published at the end of the [`Agent::receive`]
//!   call that made them, whatever the tables' size: a publication applies
//!   the changes since the last one to a copy of the classifiers the
//!   workers no longer run ([`pipeline::published`]). Only while every
//!   copy is still held (a worker has not yet moved to the last version)
//!   does a publication wait, for the next call or [`Agent::tick`], and at
//!   most [`Agent::publish_interval_ns`]: past that it copies the
//!   subtables the changes touch, a cost that grows with the table.
//! * Bundles (the ONF extension for OpenFlow 1.3, as Open vSwitch offers
//!   it; [`bundle`]): FLOW_MOD, GROUP_MOD and METER_MOD messages added to
//!   a bundle take effect at its commit, all of them in order or none, and
//!   the datapath sees the pipeline before the commit or after it, never
//!   between; a connection's bundles are bounded (64 open, `max_flows`
//!   messages, 256 MiB; all connections' together `max_flows` and
//!   512 MiB) and discarded after 10 s idle or with the connection.
//! * Roles as OpenFlow 1.3: EQUAL by default, one MASTER at a time (a new
//!   master turns the old one into a SLAVE), generation ids compared
//!   modulo 2^64 (OFPRRFC_STALE), slaves refused every modification
//!   (OFPBRC_IS_SLAVE); per-connection asynchronous configuration decides
//!   which PACKET_IN, PORT_STATUS and FLOW_REMOVED each gets.
//! * PACKET_INs are limited per connection (token bucket) and dropped —
//!   counted — when a connection's outbox is full, so a flood of misses
//!   cannot starve the channel or grow memory.
//! * Memory per connection is bounded: past [`ConnConfig::max_outbox`]
//!   unsent bytes the agent handles no more of that connection's requests
//!   ([`Conn::wants_input`] tells the daemon to stop reading it), a
//!   FLOW_STATS reply is produced a message at a time as the outbox drains
//!   ([`Agent::pump`]; later requests, barriers included, wait behind it),
//!   and past [`ConnConfig::outbox_hard_cap`] ([`Conn::over_hard_cap`],
//!   reachable only by asynchronous messages) the daemon closes it.
//! * No message longer than 65 535 bytes is ever sent: multipart replies
//!   are split, trace text and PACKET_IN data cut to fit, flows and groups
//!   whose stats entries could not fit refused; [`Conn`] encodes with
//!   `Message::try_encode` and drops (and logs) anything longer.

pub mod buffers;
pub mod bundle;
pub mod conn;
pub mod outbox;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use ofp::error::{
    BadRequestCode, ErrorCode, HelloFailedCode, PortModFailedCode, QueueOpFailedCode,
    RoleRequestFailedCode, SwitchConfigFailedCode, TableModFailedCode,
};
use ofp::msg::flow::PacketInReason;
use ofp::msg::multipart::{
    Desc, MultipartReply, MultipartReplyBody as R, MultipartRequestBody as Q, PortStats,
    QueueStats, TableStats,
};
use ofp::msg::simple::{
    ControllerRole, ErrorMsg, FeaturesReply, HelloElem, PacketQueue, PortReason, PortStatus,
    QueueGetConfigReply, QueueProp, Role, SwitchConfig,
};
use ofp::port::{port_config, port_no, port_state, PortDesc, NO_BUFFER};
use ofp::wire::FixedStr;
use ofp::{Action, Message, Oxm, OxmField, PacketIn, PacketOut};
use packet::TunnelDst;
use pipeline::{Pipeline, PortState, Removed, Snapshot, ToController};

pub use buffers::Buffers;
pub use bundle::{BundleLimits, Bundles};
pub use conn::{Conn, ConnConfig, Phase};
pub use outbox::Outbox;

/// What the agent needs from the datapath.
pub trait Datapath {
    /// Makes `snap` the pipeline every worker runs from its next batch.
    fn publish(&self, snap: Arc<Snapshot>);
    /// Hands a PACKET_OUT to the datapath to run and send; false if the
    /// datapath's queue is full (the packet is then not sent).
    fn packet_out(&self, in_port: u32, actions: Vec<Action>, frame: Bytes) -> bool;
    /// A port's counters (None: no such port).
    fn port_stats(&self, port_no: u32) -> Option<PortStats>;
    /// A queue's counters: (tx_bytes, tx_packets, tx_errors), None if the
    /// datapath has no such queue on that port.
    fn queue_stats(&self, port_no: u32, queue_id: u32) -> Option<(u64, u64, u64)>;
    /// `add-port`: opens the port the words describe (`IFACE
    /// [ofport=N] [backend=NAME] ...`), hands it to the workers and says
    /// how it looks; Err says why not (the text the user sees). `taken` is
    /// the port numbers in use. A datapath whose ports are fixed refuses.
    fn add_port(&mut self, words: &[String], taken: &[u32]) -> Result<PortInfo, String> {
        let _ = (words, taken);
        Err("this switch's ports are fixed".into())
    }
    /// `del-port`: closes the port's devices (the agent has already taken
    /// it out of the pipeline).
    fn del_port(&mut self, port_no: u32) -> Result<(), String> {
        let _ = port_no;
        Err("this switch's ports are fixed".into())
    }
    /// The port the NORMAL action's MAC table has learned `mac` on in
    /// `vlan` (for `trace`); None if not learned or there is no table.
    fn mac_lookup(&self, vlan: u16, mac: u64) -> Option<u32> {
        let _ = (vlan, mac);
        None
    }
    /// Any other management command (`fdb-show`, `vlog`, ...): None if the
    /// datapath does not know it.
    fn command(&mut self, words: &[String]) -> Option<Result<String, String>> {
        let _ = words;
        None
    }
    /// The ports the XDP fast path serves; None if the bridge runs none
    /// (for `trace`).
    fn fast_path_ports(&self) -> Option<Vec<u32>> {
        None
    }
}

/// A port as the agent describes it.
#[derive(Debug, Clone)]
pub struct PortInfo {
    pub port_no: u32,
    pub name: String,
    pub hw_addr: [u8; 6],
    /// OFPPC_* bits set by PORT_MOD.
    pub config: u32,
    pub link_up: bool,
    /// (queue id, min rate, max rate) in kbit/s (0: none).
    pub queues: Vec<(u32, u64, u64)>,
    /// When the port was added (ns), for stats durations.
    pub since_ns: u64,
}

impl PortInfo {
    /// A port whose link is up, with no OFPPC_* bit and no queues, added now.
    pub fn new(port_no: u32, name: &str, hw_addr: [u8; 6]) -> PortInfo {
        PortInfo {
            port_no,
            name: name.to_string(),
            hw_addr,
            config: 0,
            link_up: true,
            queues: Vec::new(),
            since_ns: 0,
        }
    }

    fn desc(&self) -> PortDesc {
        PortDesc {
            port_no: self.port_no,
            hw_addr: self.hw_addr,
            name: FixedStr::new(&self.name),
            config: self.config,
            state: if self.link_up {
                port_state::LIVE
            } else {
                port_state::LINK_DOWN
            },
            // 10 Gb/s copper, full duplex: what veth and TAP report.
            curr: 0x0040 | 0x0800,
            advertised: 0,
            supported: 0,
            peer: 0,
            curr_speed: 10_000_000,
            max_speed: 10_000_000,
        }
    }

    fn state(&self) -> PortState {
        PortState {
            port_no: self.port_no,
            live: self.link_up && self.config & port_config::PORT_DOWN == 0,
            no_flood: self.config & NO_FLOOD != 0,
            no_fwd: self.config & port_config::NO_FWD != 0,
            no_recv: self.config & port_config::NO_RECV != 0,
        }
    }
}

/// OFPPC_NO_FLOOD (OpenFlow 1.0's bit, which Open vSwitch keeps in 1.3).
pub const NO_FLOOD: u32 = 1 << 4;

/// Identifies a connection.
pub type ConnId = u64;

/// The agent of one bridge.
pub struct Agent<D: Datapath> {
    pub datapath_id: u64,
    pub pipeline: Pipeline,
    pub datapath: D,
    pub ports: BTreeMap<u32, PortInfo>,
    pub conns: BTreeMap<ConnId, Conn>,
    next_conn: ConnId,
    pub buffers: Buffers,
    pub switch_config: SwitchConfig,
    /// The largest generation id a master or slave has presented.
    generation: Option<u64>,
    dirty: bool,
    /// The snapshot the datapath runs (the last published).
    published: Option<Arc<Snapshot>>,
    /// When it was published, and the latest time the agent was told.
    last_publish_ns: u64,
    now_ns: u64,
    pub desc: Desc,
    pub conn_config: ConnConfig,
}

fn brc(c: BadRequestCode) -> ErrorCode {
    ErrorCode::BadRequest(c)
}

/// The default miss_send_len (OFPCML_DEFAULT... 128 bytes, as the spec).
pub const DEFAULT_MISS_SEND_LEN: u16 = 128;

impl<D: Datapath> Agent<D> {
    pub fn new(datapath_id: u64, pipeline: Pipeline, datapath: D, dp_desc: &str) -> Self {
        Agent {
            datapath_id,
            pipeline,
            datapath,
            ports: BTreeMap::new(),
            conns: BTreeMap::new(),
            next_conn: 1,
            buffers: Buffers::default(),
            switch_config: SwitchConfig {
                flags: 0,
                miss_send_len: DEFAULT_MISS_SEND_LEN,
            },
            generation: None,
            dirty: false,
            published: None,
            last_publish_ns: 0,
            now_ns: 0,
            desc: Desc {
                mfr_desc: FixedStr::new("sluice project"),
                hw_desc: FixedStr::new("sluice software switch"),
                sw_desc: FixedStr::new(concat!("sluice ", env!("CARGO_PKG_VERSION"))),
                serial_num: FixedStr::new("None"),
                dp_desc: FixedStr::new(dp_desc),
            },
            conn_config: ConnConfig::default(),
        }
    }

    /// Adds (or replaces) a port; connected controllers hear PORT_STATUS ADD.
    pub fn add_port(&mut self, p: PortInfo) {
        self.pipeline.set_port(p.state());
        let desc = p.desc();
        self.ports.insert(p.port_no, p);
        self.dirty = true;
        self.port_status(PortReason::Add, desc);
        self.publish();
    }

    /// Removes a port; connected controllers hear PORT_STATUS DELETE. Flows
    /// that output to it stay and send nothing there (as in Open vSwitch).
    /// False if there is no such port.
    pub fn remove_port(&mut self, port_no: u32) -> bool {
        let Some(p) = self.ports.remove(&port_no) else {
            return false;
        };
        self.pipeline.remove_port(port_no);
        self.dirty = true;
        self.port_status(PortReason::Delete, p.desc());
        self.publish();
        true
    }

    /// Runs a management command (sluice's COMMAND_REQUEST): `add-port`,
    /// `del-port` and `show-ports` here, the rest by the datapath. The
    /// answer is the text the user sees, Err if refused.
    pub fn command(&mut self, words: &[String]) -> Result<String, String> {
        let Some(verb) = words.first().map(String::as_str) else {
            return Err("an empty command".into());
        };
        match verb {
            "add-port" => {
                let name = words.get(1).ok_or("add-port: which interface?")?;
                if let Some(p) = self.ports.values().find(|p| p.name == *name) {
                    return Err(format!("add-port: {name} is already port {}", p.port_no));
                }
                let taken: Vec<u32> = self.ports.keys().copied().collect();
                let mut info = self
                    .datapath
                    .add_port(&words[1..], &taken)
                    .map_err(|e| format!("add-port {name}: {e}"))?;
                info.since_ns = self.now_ns;
                let (no, up) = (info.port_no, info.link_up);
                self.add_port(info);
                Ok(format!(
                    "added {name} as port {no} (link {})\n",
                    if up { "up" } else { "down" }
                ))
            }
            "del-port" => {
                let which = words.get(1).ok_or("del-port: which port?")?;
                if words.len() > 2 {
                    return Err(format!("del-port: unexpected {:?}", words[2]));
                }
                let no = self
                    .ports
                    .values()
                    .find(|p| p.name == *which || p.port_no.to_string() == *which)
                    .map(|p| p.port_no)
                    .ok_or_else(|| format!("del-port: {which} is not a port of this bridge"))?;
                if no == ofp::port::port_no::LOCAL {
                    return Err("del-port: the LOCAL port goes with the bridge".into());
                }
                // The devices first: if the datapath refuses, nothing
                // changed. Until the pipeline without the port is
                // published, outputs to it find no device and are dropped.
                self.datapath
                    .del_port(no)
                    .map_err(|e| format!("del-port {which}: {e}"))?;
                self.remove_port(no);
                Ok(format!("deleted port {no} ({which})\n"))
            }
            _ => self
                .datapath
                .command(words)
                .unwrap_or_else(|| Err(format!("{verb:?}: no such command"))),
        }
    }

    /// A port's devices were opened again (its interface came back, maybe
    /// with another hardware address): controllers hear PORT_STATUS MODIFY
    /// if its description changed.
    pub fn port_reattached(&mut self, port: u32, hw_addr: [u8; 6], up: bool) {
        self.modify_port(port, |p| {
            p.hw_addr = hw_addr;
            p.link_up = up;
        });
    }

    /// A port's link went up or down.
    pub fn link_changed(&mut self, port: u32, up: bool) {
        self.modify_port(port, |p| p.link_up = up);
    }

    /// Applies `change` to a port; if that changed it, the pipeline learns
    /// its new state, controllers hear PORT_STATUS MODIFY and the pipeline
    /// is published.
    fn modify_port(&mut self, port: u32, change: impl FnOnce(&mut PortInfo)) {
        let Some(p) = self.ports.get_mut(&port) else {
            return;
        };
        let before = (p.hw_addr, p.link_up);
        change(p);
        if (p.hw_addr, p.link_up) == before {
            return;
        }
        let (state, desc) = (p.state(), p.desc());
        self.pipeline.set_port(state);
        self.dirty = true;
        self.port_status(PortReason::Modify, desc);
        self.publish();
    }

    fn port_status(&mut self, reason: PortReason, desc: PortDesc) {
        let msg = Message::PortStatus(PortStatus { reason, desc });
        for c in self.conns.values_mut() {
            if c.wants(c.async_config.port_status_mask, reason.value()) {
                let xid = c.xid();
                c.send(&msg, xid);
            }
        }
    }

    /// A new controller connection (our HELLO is queued).
    pub fn connect(&mut self, now_ns: u64) -> ConnId {
        let id = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(id, Conn::new(now_ns, self.conn_config));
        id
    }

    /// The connection is gone.
    pub fn disconnect(&mut self, id: ConnId) {
        self.conns.remove(&id);
    }

    /// Whether any controller has completed the handshake: HELLO and a
    /// FEATURES_REQUEST (a bare TCP connect, or a HELLO alone, does not
    /// end standalone fail mode).
    pub fn has_controller(&self) -> bool {
        self.conns
            .values()
            .any(|c| c.phase == Phase::Open && c.features_seen && !c.service)
    }

    /// Marks `id` a service connection (a management tool such as
    /// sluice-ctl or ovs-ofctl): it speaks OpenFlow like any other, but does
    /// not count as a controller for the fail mode.
    pub fn set_service(&mut self, id: ConnId) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.service = true;
        }
    }

    /// Notes that the pipeline was changed from outside (published at the
    /// next [`Agent::publish`]).
    pub fn mark_changed(&mut self) {
        self.dirty = true;
    }

    /// Publishes the pipeline if it changed.
    pub fn publish(&mut self) {
        if self.dirty || self.published.is_none() {
            let snap = self.pipeline.snapshot();
            self.published = Some(snap.clone());
            self.datapath.publish(snap);
            self.dirty = false;
            self.last_publish_ns = self.now_ns;
        }
    }

    /// How long a publication that nothing forces waits for a copy of the
    /// classifiers to come free ([`pipeline::Pipeline::snapshot_is_cheap`])
    /// before it copies the subtables the changes touch instead: 2 us per
    /// installed rule (200 ms at 100 000 rules), at most 1 s. Copying costs
    /// ~100 ns per rule of the subtable (measured on the million-flow push:
    /// copies every 500 ns per rule took 0.7-0.9 s of 3.6 s), so at 2 us
    /// the copies stay near a twentieth of the control plane's time even
    /// if a reader always lags. A barrier still publishes at once.
    pub fn publish_interval_ns(&self) -> u64 {
        let rules: usize = self.pipeline.tables().iter().map(|t| t.len()).sum();
        (rules as u64 * 2_000).min(1_000_000_000)
    }

    /// Publishes if the pipeline changed and the publication is cheap, or
    /// the interval has passed.
    pub fn publish_due(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        if self.dirty
            && (self.pipeline.snapshot_is_cheap()
                || now_ns.saturating_sub(self.last_publish_ns) >= self.publish_interval_ns())
        {
            self.publish();
        }
    }

    /// Whether changes wait to be published.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Feeds bytes received on connection `id`, handling every complete
    /// message. Returns false when the connection must be closed (after its
    /// outbox is written).
    pub fn receive(&mut self, id: ConnId, data: &[u8], now_ns: u64) -> bool {
        self.now_ns = self.now_ns.max(now_ns);
        let Some(c) = self.conns.get_mut(&id) else {
            return false;
        };
        c.framer.push(data);
        c.last_rx_ns = now_ns;
        c.probe_sent = false;
        self.pump(id, now_ns)
    }

    /// Notes that the peer of `id` took bytes we sent: as good as input
    /// for the inactivity probe (its requests may be waiting, unread,
    /// behind a long reply).
    pub fn peer_alive(&mut self, id: ConnId, now_ns: u64) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.last_rx_ns = c.last_rx_ns.max(now_ns);
            c.probe_sent = false;
        }
    }

    /// Moves connection `id` on as far as its budget allows: the next
    /// messages of a long reply in progress, then the requests waiting in
    /// its input, one at a time, stopping when the unsent bytes pass the
    /// budget ([`ConnConfig::max_outbox`]). The daemon calls this after
    /// each write that made room. Returns false when the connection must
    /// be closed (after its outbox is written).
    pub fn pump(&mut self, id: ConnId, now_ns: u64) -> bool {
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return false;
            };
            if c.phase == Phase::Closing || !c.within_budget() {
                break;
            }
            if c.job.is_some() {
                self.continue_job(id, now_ns);
                continue;
            }
            let Some(next) = c.framer.next_frame() else {
                break;
            };
            match next {
                Err(rej) => {
                    c.send(&rej.reply(), rej.xid);
                    if rej.fatal {
                        c.phase = Phase::Closing;
                    }
                }
                Ok(frame) => self.handle_frame(id, &frame, now_ns),
            }
        }
        if let Some(c) = self.conns.get_mut(&id) {
            // A started message, while we read: its deadline runs.
            let partial = c.framer.buffered() > 0 && !c.framer.has_frame() && c.wants_input();
            c.partial_since_ns = match (partial, c.partial_since_ns) {
                (false, _) => None,
                (true, None) => Some(now_ns),
                (true, since) => since,
            };
        }
        self.publish_due(now_ns);
        self.conns
            .get(&id)
            .is_some_and(|c| c.phase != Phase::Closing)
    }

    /// Sends the next message of connection `id`'s FLOW_STATS reply: as
    /// many entries as fit one message, REPLY_MORE unless they are the
    /// last. The rules were taken when the request came; their counters
    /// are read now.
    fn continue_job(&mut self, id: ConnId, now_ns: u64) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        let Some(job) = c.job.as_mut() else {
            return;
        };
        let mut entries = Vec::new();
        let mut len = 0;
        let mut scratch = Vec::new();
        while let Some(r) = job.rules.get(job.at) {
            scratch.clear();
            ofp::instruction::encode_instructions(&r.instructions, &mut scratch);
            let l = 48 + r.match_.wire_len() + scratch.len();
            if !entries.is_empty() && len + l > MAX_BODY {
                break;
            }
            entries.push(pipeline::control::flow_stats_entry(r, now_ns));
            len += l;
            job.at += 1;
        }
        let done = job.at >= job.rules.len();
        let xid = job.xid;
        let msg = Message::MultipartReply(MultipartReply {
            flags: if done { 0 } else { 1 },
            body: R::Flow(entries),
        });
        c.send(&msg, xid);
        if done {
            c.job = None;
        }
    }

    fn send(&mut self, id: ConnId, msg: &Message, xid: u32) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.send(msg, xid);
        }
    }

    fn error(&mut self, id: ConnId, xid: u32, code: ErrorCode, frame: &Bytes) {
        let data = frame.slice(..frame.len().min(ofp::framer::ERROR_DATA_LEN));
        self.send(id, &Message::Error(ErrorMsg { code, data }), xid);
    }

    fn handle_frame(&mut self, id: ConnId, frame: &Bytes, now_ns: u64) {
        let phase = self.conns[&id].phase;
        let xid = ofp::Header::parse(frame).map_or(0, |h| h.xid);
        let version = frame.first().copied().unwrap_or(0);
        if phase == Phase::AwaitHello {
            self.hello(id, xid, version, frame);
            return;
        }
        let (_, msg) = match Message::decode(frame) {
            Ok(m) => m,
            Err(e) => {
                self.error(id, xid, e.code, frame);
                return;
            }
        };
        if let Err(e) = msg.validate() {
            self.error(id, xid, e.code, frame);
            return;
        }
        if let Err(code) = self.dispatch(id, xid, msg, frame, now_ns) {
            self.error(id, xid, code, frame);
        }
    }

    /// The peer's first message: it must be a HELLO that allows 1.3.
    fn hello(&mut self, id: ConnId, xid: u32, version: u8, frame: &Bytes) {
        let c = self.conns.get_mut(&id).expect("live connection");
        let ok = match Message::decode(frame) {
            Ok((_, Message::Hello(h))) => {
                let bitmap = h.elements.iter().find_map(|e| match e {
                    HelloElem::VersionBitmap(b) => Some(b.clone()),
                    _ => None,
                });
                match bitmap {
                    Some(b) => b.first().is_some_and(|w| w & (1 << ofp::OFP_VERSION) != 0),
                    None => h.version >= ofp::OFP_VERSION,
                }
            }
            // A HELLO of another version may not decode as ours.
            _ => {
                ofp::Header::parse(frame).is_some_and(|h| h.msg_type == ofp::MsgType::Hello)
                    && version > ofp::OFP_VERSION
            }
        };
        if ok {
            c.phase = Phase::Open;
        } else {
            let data = Bytes::from_static(b"sluice speaks OpenFlow 1.3 (wire version 4) only");
            c.send(
                &Message::Error(ErrorMsg {
                    code: ErrorCode::HelloFailed(HelloFailedCode::Incompatible),
                    data,
                }),
                xid,
            );
            c.phase = Phase::Closing;
        }
    }

    fn is_slave(&self, id: ConnId) -> bool {
        self.conns[&id].role == ControllerRole::Slave
    }

    fn dispatch(
        &mut self,
        id: ConnId,
        xid: u32,
        msg: Message,
        frame: &Bytes,
        now_ns: u64,
    ) -> Result<(), ErrorCode> {
        use Message as M;
        let modifies = matches!(
            msg,
            M::FlowMod(_)
                | M::GroupMod(_)
                | M::MeterMod(_)
                | M::PortMod(_)
                | M::TableMod(_)
                | M::PacketOut(_)
        ) || matches!(&msg, M::MultipartRequest(r) if matches!(&r.body, Q::TableFeatures(t) if !t.is_empty()));
        if modifies && self.is_slave(id) {
            return Err(brc(BadRequestCode::IsSlave));
        }
        match msg {
            M::Hello(_) => {}
            M::EchoRequest(data) => self.send(id, &M::EchoReply(data), xid),
            M::EchoReply(_) => {}
            M::FeaturesRequest => {
                use ofp::msg::simple::capabilities as cap;
                if let Some(c) = self.conns.get_mut(&id) {
                    c.features_seen = true;
                }
                let reply = FeaturesReply {
                    datapath_id: self.datapath_id,
                    n_buffers: buffers::N_BUFFERS,
                    n_tables: self.pipeline.config.n_tables,
                    auxiliary_id: 0,
                    capabilities: cap::FLOW_STATS
                        | cap::TABLE_STATS
                        | cap::PORT_STATS
                        | cap::GROUP_STATS
                        | cap::QUEUE_STATS,
                    reserved: 0,
                };
                self.send(id, &M::FeaturesReply(reply), xid);
            }
            M::GetConfigRequest => {
                let c = self.switch_config;
                self.send(id, &M::GetConfigReply(c), xid);
            }
            M::SetConfig(c) => {
                // Fragments are switched as they are (OFPC_FRAG_NORMAL); we
                // neither drop nor reassemble them.
                if c.flags & 0x3 != 0 {
                    return Err(ErrorCode::SwitchConfigFailed(
                        SwitchConfigFailedCode::BadFlags,
                    ));
                }
                self.switch_config = c;
                let ttl = c.flags & 0x4 != 0;
                if self.pipeline.invalid_ttl_to_controller != ttl {
                    self.pipeline.invalid_ttl_to_controller = ttl;
                    self.dirty = true;
                }
            }
            M::FlowMod(fm) => {
                // A buffered packet named by the flow-mod is looked up first
                // (an unusable id refuses the whole flow-mod) and taken only
                // once the flow-mod has succeeded.
                let buffered = if fm.buffer_id != NO_BUFFER
                    && matches!(
                        fm.command,
                        ofp::FlowModCommand::Add
                            | ofp::FlowModCommand::Modify
                            | ofp::FlowModCommand::ModifyStrict
                    ) {
                    Some(self.buffer(fm.buffer_id)?)
                } else {
                    None
                };
                // Validated above (Message::validate), and `frame` is its wire form.
                let removed = self
                    .pipeline
                    .flow_mod_wire(&fm, frame, now_ns)
                    .map_err(|e| e.code)?;
                if buffered.is_some() {
                    let _ = self.buffers.take(fm.buffer_id);
                }
                self.dirty = true;
                self.flow_removed(&removed, now_ns);
                if let Some((in_port, data)) = buffered {
                    self.publish();
                    let _ = self.datapath.packet_out(
                        in_port,
                        vec![Action::Output {
                            port: port_no::TABLE,
                            max_len: 0,
                        }],
                        data,
                    );
                }
            }
            M::GroupMod(gm) => {
                let removed = self.pipeline.group_mod(&gm, now_ns).map_err(|e| e.code)?;
                self.dirty = true;
                self.flow_removed(&removed, now_ns);
            }
            M::MeterMod(mm) => {
                let removed = self.pipeline.meter_mod(&mm, now_ns).map_err(|e| e.code)?;
                self.dirty = true;
                self.flow_removed(&removed, now_ns);
            }
            M::PortMod(pm) => {
                let Some(p) = self.ports.get_mut(&pm.port_no) else {
                    return Err(ErrorCode::PortModFailed(PortModFailedCode::BadPort));
                };
                if p.hw_addr != pm.hw_addr {
                    return Err(ErrorCode::PortModFailed(PortModFailedCode::BadHwAddr));
                }
                let known = port_config::PORT_DOWN
                    | port_config::NO_RECV
                    | port_config::NO_FWD
                    | port_config::NO_PACKET_IN
                    | NO_FLOOD;
                if pm.mask & !known != 0 {
                    return Err(ErrorCode::PortModFailed(PortModFailedCode::BadConfig));
                }
                let config = (p.config & !pm.mask) | (pm.config & pm.mask);
                if config != p.config {
                    p.config = config;
                    let (state, desc) = (p.state(), p.desc());
                    self.pipeline.set_port(state);
                    self.dirty = true;
                    self.port_status(PortReason::Modify, desc);
                }
            }
            M::TableMod(tm) => {
                if tm.table_id != ofp::port::TABLE_ALL
                    && tm.table_id >= self.pipeline.config.n_tables
                {
                    return Err(ErrorCode::TableModFailed(TableModFailedCode::BadTable));
                }
                // OpenFlow 1.3 defines no table config bits (3 is deprecated).
                if tm.config & !3 != 0 {
                    return Err(ErrorCode::TableModFailed(TableModFailedCode::BadConfig));
                }
            }
            M::PacketOut(po) => self.packet_out(po)?,
            M::MultipartRequest(req) => {
                if req.flags & 1 != 0 {
                    // OFPMPF_REQ_MORE: no request here needs several parts.
                    return Err(brc(BadRequestCode::MultipartBufferOverflow));
                }
                if let Q::Flow(freq) = &req.body {
                    let rules = self.pipeline.flow_stats_rules(freq).map_err(|e| e.code)?;
                    if let Some(c) = self.conns.get_mut(&id) {
                        c.job = Some(FlowStatsJob { xid, rules, at: 0 });
                    }
                    return Ok(());
                }
                let bodies = self.multipart(req.body, now_ns)?;
                let n = bodies.len();
                for (i, body) in bodies.into_iter().enumerate() {
                    let flags = if i + 1 < n { 1 } else { 0 };
                    self.send(id, &M::MultipartReply(MultipartReply { flags, body }), xid);
                }
            }
            M::BarrierRequest => {
                self.publish();
                self.send(id, &M::BarrierReply, xid);
            }
            M::QueueGetConfigRequest { port } => {
                let queues: Vec<PacketQueue> = if port == port_no::ANY {
                    self.ports.values().flat_map(queue_desc).collect()
                } else {
                    match self.ports.get(&port) {
                        Some(p) => queue_desc(p),
                        None => return Err(ErrorCode::QueueOpFailed(QueueOpFailedCode::BadPort)),
                    }
                };
                self.send(
                    id,
                    &M::QueueGetConfigReply(QueueGetConfigReply { port, queues }),
                    xid,
                );
            }
            M::RoleRequest(r) => {
                let role = self.role(id, r)?;
                self.send(id, &M::RoleReply(role), xid);
            }
            M::GetAsyncRequest => {
                let a = self.conns[&id].async_config;
                self.send(id, &M::GetAsyncReply(a), xid);
            }
            M::SetAsync(a) => {
                if let Some(c) = self.conns.get_mut(&id) {
                    c.async_config = a;
                }
            }
            M::Experimenter(e) if e.experimenter == ofp::msg::bundle::ONF_EXPERIMENTER => {
                return self.onf_message(id, xid, &e, frame, now_ns);
            }
            M::Experimenter(e) => {
                use ofp::msg::sluice;
                if e.experimenter == sluice::SLUICE_EXPERIMENTER
                    && e.exp_type == sluice::COMMAND_REQUEST
                {
                    // Commands change the switch itself: the management
                    // socket's connections only.
                    if !self.conns.get(&id).is_some_and(|c| c.service) {
                        return Err(brc(BadRequestCode::Eperm));
                    }
                    let req = sluice::CommandRequest::decode(&e.data).map_err(|e| e.code)?;
                    let (ok, text) = match self.command(&req.words) {
                        Ok(t) => (true, t),
                        Err(t) => (false, t),
                    };
                    let reply = sluice::CommandReply {
                        ok,
                        text: fit_text(&text, 20).into_owned(),
                    };
                    self.send(id, &reply.message(), xid);
                    return Ok(());
                }
                if e.experimenter != sluice::SLUICE_EXPERIMENTER
                    || e.exp_type != sluice::TRACE_REQUEST
                {
                    return Err(sluice::unknown(&e));
                }
                let req = sluice::TraceRequest::decode(&e.data).map_err(|e| e.code)?;
                let text = self.trace(req.in_port, &req.frame);
                self.send(id, &sluice::trace_reply(&fit_text(&text, 16)), xid);
            }
            // Messages only a switch sends.
            M::Error(_) => {}
            M::FeaturesReply(_)
            | M::GetConfigReply(_)
            | M::PacketIn(_)
            | M::FlowRemoved(_)
            | M::PortStatus(_)
            | M::MultipartReply(_)
            | M::BarrierReply
            | M::QueueGetConfigReply(_)
            | M::RoleReply(_)
            | M::GetAsyncReply(_) => return Err(brc(BadRequestCode::BadType)),
        }
        let _ = frame;
        Ok(())
    }

    /// What the datapath does with `frame` arriving on `in_port`, as text
    /// (see [`pipeline::trace`]). Traces the pipeline as last published.
    pub fn trace(&mut self, in_port: u32, frame: &[u8]) -> String {
        self.publish();
        let Some(snap) = self.published.clone() else {
            return String::new();
        };
        let port = match self.ports.get(&in_port) {
            Some(p) => format!("{} ({})", in_port, p.name),
            None => format!("{in_port} (no such port)"),
        };
        let t = pipeline::trace::trace(&snap, in_port, frame);
        // NORMAL followed to the port the MAC table picks, as the
        // datapath would (the trace learns nothing).
        let normal = |o: &pipeline::Output| -> Option<pipeline::trace::NormalHop> {
            let data = o.data.as_deref().unwrap_or(&t.final_frame);
            let (vlan, _, dst) = packet::l2_addresses(data)?;
            let flood = || -> Vec<u32> {
                snap.ports
                    .iter()
                    .filter(|p| p.port_no != in_port && p.live && !p.no_flood && !p.no_fwd)
                    .map(|p| p.port_no)
                    .collect()
            };
            let dst_s = ofp::text::format_mac(dst);
            let vl = if vlan == 0 {
                String::new()
            } else {
                format!(" in VLAN {vlan}")
            };
            let (why, ports) = if dst & (1 << 40) != 0 {
                (
                    format!("dst {dst_s} is broadcast/multicast: flooded"),
                    flood(),
                )
            } else {
                match self.datapath.mac_lookup(vlan, dst) {
                    Some(p) if p == in_port => (
                        format!("dst {dst_s} learned on the ingress port{vl}: dropped"),
                        Vec::new(),
                    ),
                    Some(p) => (format!("dst {dst_s} learned on port {p}{vl}"), vec![p]),
                    None => (format!("dst {dst_s} not learned{vl}: flooded"), flood()),
                }
            };
            Some(pipeline::trace::NormalHop { why, ports })
        };
        let mut text = format!(
            "Bridge: dpid {:016x}, in_port {port}
{}",
            self.datapath_id,
            t.text_with(in_port, &normal)
        );
        if let Some(xdp) = self.datapath.fast_path_ports() {
            let what = if xdp.contains(&in_port) {
                fastpath::model::describe(&fastpath::model::verdict(&snap, in_port, &xdp, frame))
            } else {
                "the ingress port is not an xdp port: user space".into()
            };
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("XDP fast path: {what}\n"));
        }
        text
    }

    /// The buffered packet `id` names (left in the pool), or the error the
    /// spec gives for an unusable id.
    fn buffer(&self, id: u32) -> Result<(u32, Bytes), ErrorCode> {
        self.buffers.get(id).map_err(|m| match m {
            buffers::Missing::Unknown => brc(BadRequestCode::BufferUnknown),
            buffers::Missing::Empty => brc(BadRequestCode::BufferEmpty),
        })
    }

    fn packet_out(&mut self, po: PacketOut) -> Result<(), ErrorCode> {
        let valid_in = po.in_port == port_no::CONTROLLER
            || po.in_port == port_no::LOCAL
            || po.in_port == port_no::ANY
            || self.ports.contains_key(&po.in_port);
        if !valid_in {
            return Err(brc(BadRequestCode::BadPort));
        }
        for a in &po.actions {
            if let Action::Output { port, .. } = a {
                let ok = *port <= port_no::MAX && self.ports.contains_key(port)
                    || (*port > port_no::MAX && *port != port_no::ANY);
                if !ok {
                    return Err(ErrorCode::BadAction(ofp::error::BadActionCode::BadOutPort));
                }
            }
            if let Action::Group(g) = a {
                if !self.pipeline.groups().contains_key(g) {
                    return Err(ErrorCode::BadAction(ofp::error::BadActionCode::BadOutGroup));
                }
            }
        }
        let (in_port, data) = if po.buffer_id != NO_BUFFER {
            let (p, d) = self.buffer(po.buffer_id)?;
            (
                if po.in_port == port_no::ANY {
                    p
                } else {
                    po.in_port
                },
                d,
            )
        } else {
            if po.data.is_empty() {
                return Err(brc(BadRequestCode::BadPacket));
            }
            (po.in_port, po.data)
        };
        let in_port = if in_port == port_no::ANY {
            port_no::CONTROLLER
        } else {
            in_port
        };
        // The actions must suit this packet, as a flow's suit its match.
        self.pipeline
            .check_packet_out(&po.actions, &data, in_port)
            .map_err(|e| e.code)?;
        if po.buffer_id != NO_BUFFER {
            let _ = self.buffers.take(po.buffer_id);
        }
        self.publish();
        // A full datapath queue drops the packet, as a full port would.
        let _ = self.datapath.packet_out(in_port, po.actions, data);
        Ok(())
    }

    fn role(&mut self, id: ConnId, r: Role) -> Result<Role, ErrorCode> {
        match r.role {
            ControllerRole::NoChange => {}
            ControllerRole::Equal => self.conns.get_mut(&id).expect("live").role = r.role,
            ControllerRole::Master | ControllerRole::Slave => {
                if let Some(g) = self.generation {
                    if (r.generation_id.wrapping_sub(g) as i64) < 0 {
                        return Err(ErrorCode::RoleRequestFailed(RoleRequestFailedCode::Stale));
                    }
                }
                self.generation = Some(r.generation_id);
                if r.role == ControllerRole::Master {
                    for (cid, c) in self.conns.iter_mut() {
                        if *cid != id && c.role == ControllerRole::Master {
                            c.role = ControllerRole::Slave;
                        }
                    }
                }
                self.conns.get_mut(&id).expect("live").role = r.role;
            }
            _ => return Err(ErrorCode::RoleRequestFailed(RoleRequestFailedCode::BadRole)),
        }
        Ok(Role {
            role: self.conns[&id].role,
            generation_id: self.generation.unwrap_or(0),
        })
    }

    /// Answers a multipart request: one or more reply bodies (several when
    /// a reply would not fit one message).
    fn multipart(&mut self, body: Q, now_ns: u64) -> Result<Vec<R>, ErrorCode> {
        let p = &self.pipeline;
        Ok(match body {
            Q::Desc => vec![R::Desc(Box::new(self.desc))],
            // `dispatch` answers FLOW_STATS a message at a time (see
            // `Agent::pump`); this is the whole reply at once.
            Q::Flow(req) => {
                let all = p.flow_stats(&req, now_ns).map_err(|e| e.code)?;
                split(all, R::Flow)
            }
            Q::Aggregate(req) => vec![R::Aggregate(p.aggregate(&req).map_err(|e| e.code)?)],
            Q::Table => {
                let counters = p.table_counters();
                let stats = p
                    .tables()
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let c = counters.get(i).map(|c| c.totals()).unwrap_or_default();
                        TableStats {
                            table_id: i as u8,
                            active_count: t.len() as u32,
                            lookup_count: c.packets,
                            matched_count: c.bytes,
                        }
                    })
                    .collect();
                split(stats, R::Table)
            }
            Q::PortStats { port_no: want } => {
                if want != port_no::ANY && !self.ports.contains_key(&want) {
                    return Err(brc(BadRequestCode::BadPort));
                }
                let stats = self
                    .ports
                    .values()
                    .filter(|p| want == port_no::ANY || p.port_no == want)
                    .filter_map(|p| {
                        let mut s = self.datapath.port_stats(p.port_no)?;
                        let d = now_ns.saturating_sub(p.since_ns);
                        s.port_no = p.port_no;
                        s.duration_sec = (d / 1_000_000_000) as u32;
                        s.duration_nsec = (d % 1_000_000_000) as u32;
                        Some(s)
                    })
                    .collect();
                split(stats, R::PortStats)
            }
            Q::PortDesc => split(
                self.ports.values().map(PortInfo::desc).collect(),
                R::PortDesc,
            ),
            Q::GroupDesc => {
                let mut v: Vec<_> = p
                    .groups()
                    .values()
                    .map(|g| ofp::msg::multipart::GroupDesc {
                        group_type: g.rt.group_type,
                        group_id: g.group_id,
                        buckets: g.rt.buckets.clone(),
                    })
                    .collect();
                v.sort_by_key(|g| g.group_id);
                split(v, R::GroupDesc)
            }
            Q::Group { group_id } => {
                let refs = p.group_ref_counts();
                let mut v: Vec<_> = p
                    .groups()
                    .values()
                    .filter(|g| group_id == ofp::port::group_no::ALL || g.group_id == group_id)
                    .map(|g| {
                        let t = g.rt.counters.totals();
                        let d = now_ns.saturating_sub(g.created_ns);
                        ofp::msg::multipart::GroupStats {
                            group_id: g.group_id,
                            ref_count: refs.get(&g.group_id).copied().unwrap_or(0),
                            packet_count: t.packets,
                            byte_count: t.bytes,
                            duration_sec: (d / 1_000_000_000) as u32,
                            duration_nsec: (d % 1_000_000_000) as u32,
                            bucket_stats: g
                                .rt
                                .bucket_counters
                                .iter()
                                .map(|c| {
                                    let t = c.totals();
                                    ofp::msg::multipart::BucketCounter {
                                        packet_count: t.packets,
                                        byte_count: t.bytes,
                                    }
                                })
                                .collect(),
                        }
                    })
                    .collect();
                v.sort_by_key(|g| g.group_id);
                split(v, R::Group)
            }
            Q::MeterConfig { meter_id } => {
                let mut v: Vec<_> = p
                    .meters()
                    .values()
                    .filter(|m| meter_id == ofp::port::meter_no::ALL || m.meter_id == meter_id)
                    .map(|m| ofp::msg::multipart::MeterConfig {
                        flags: m.state.flags,
                        meter_id: m.meter_id,
                        bands: m.state.bands.iter().map(|b| b.band.clone()).collect(),
                    })
                    .collect();
                v.sort_by_key(|m| m.meter_id);
                split(v, R::MeterConfig)
            }
            Q::Meter { meter_id } => {
                use std::sync::atomic::Ordering::Relaxed;
                let flows = p.meter_flow_counts();
                let mut v: Vec<_> = p
                    .meters()
                    .values()
                    .filter(|m| meter_id == ofp::port::meter_no::ALL || m.meter_id == meter_id)
                    .map(|m| {
                        let d = now_ns.saturating_sub(m.created_ns);
                        ofp::msg::multipart::MeterStats {
                            meter_id: m.meter_id,
                            flow_count: flows.get(&m.meter_id).copied().unwrap_or(0),
                            packet_in_count: m.state.packets.load(Relaxed),
                            byte_in_count: m.state.bytes.load(Relaxed),
                            duration_sec: (d / 1_000_000_000) as u32,
                            duration_nsec: (d % 1_000_000_000) as u32,
                            band_stats: m
                                .state
                                .bands
                                .iter()
                                .map(|b| ofp::msg::multipart::MeterBandStats {
                                    packet_band_count: b.packets.load(Relaxed),
                                    byte_band_count: b.bytes.load(Relaxed),
                                })
                                .collect(),
                        }
                    })
                    .collect();
                v.sort_by_key(|m| m.meter_id);
                split(v, R::Meter)
            }
            Q::GroupFeatures => vec![R::GroupFeatures(ofp::msg::multipart::GroupFeatures {
                // all, select, indirect, fast failover
                types: 0b1111,
                // select weight, select liveness, chaining
                capabilities: 0b0111,
                max_groups: [p.config.max_groups as u32; 4],
                actions: [ACTIONS_SUPPORTED; 4],
            })],
            Q::MeterFeatures => vec![R::MeterFeatures(ofp::msg::multipart::MeterFeatures {
                max_meter: p.config.max_meters as u32,
                // drop, dscp_remark
                band_types: (1 << 1) | (1 << 2),
                // kbps, pktps, burst, stats
                capabilities: 0b1111,
                max_bands: p.config.max_bands as u8,
                max_color: 0,
            })],
            Q::Queue {
                port_no: port,
                queue_id,
            } => {
                if port != port_no::ANY && !self.ports.contains_key(&port) {
                    return Err(ErrorCode::QueueOpFailed(QueueOpFailedCode::BadPort));
                }
                let mut stats = Vec::new();
                let mut ports: Vec<&PortInfo> = self
                    .ports
                    .values()
                    .filter(|p| port == port_no::ANY || p.port_no == port)
                    .collect();
                ports.sort_by_key(|p| p.port_no);
                for p in ports {
                    for &(q, _, _) in &p.queues {
                        if queue_id != ofp::port::QUEUE_ALL && q != queue_id {
                            continue;
                        }
                        let Some((tx_bytes, tx_packets, tx_errors)) =
                            self.datapath.queue_stats(p.port_no, q)
                        else {
                            continue;
                        };
                        let d = now_ns.saturating_sub(p.since_ns);
                        stats.push(QueueStats {
                            port_no: p.port_no,
                            queue_id: q,
                            tx_bytes,
                            tx_packets,
                            tx_errors,
                            duration_sec: (d / 1_000_000_000) as u32,
                            duration_nsec: (d % 1_000_000_000) as u32,
                        });
                    }
                }
                if stats.is_empty() && queue_id != ofp::port::QUEUE_ALL {
                    return Err(ErrorCode::QueueOpFailed(QueueOpFailedCode::BadQueue));
                }
                split(stats, R::Queue)
            }
            Q::TableFeatures(set) if set.is_empty() => split(
                table_features(p.config.n_tables, p.config.max_entries),
                R::TableFeatures,
            ),
            // Changing the tables' features is not supported (the spec's
            // answer for a switch that cannot).
            Q::TableFeatures(_) => {
                return Err(ErrorCode::TableFeaturesFailed(
                    ofp::error::TableFeaturesFailedCode::Eperm,
                ))
            }
            Q::Experimenter(_) => return Err(brc(BadRequestCode::BadExperimenter)),
        })
    }

    fn flow_removed(&mut self, removed: &[Removed], now_ns: u64) {
        for r in removed.iter().filter(|r| r.notify()) {
            let msg = Message::FlowRemoved(r.message(now_ns));
            for c in self.conns.values_mut() {
                if c.wants(c.async_config.flow_removed_mask, r.reason.value()) {
                    let xid = c.xid();
                    c.send(&msg, xid);
                }
            }
        }
    }

    /// A packet the datapath sends to the controller: buffered if the
    /// controller asked for less than the whole frame, then a PACKET_IN to
    /// every connection that wants it and whose rate limit allows.
    pub fn packet_in(&mut self, in_port: u32, ctl: ToController, frame: Bytes, now_ns: u64) {
        self.packet_in_tunneled(in_port, &TunnelDst::default(), ctl, frame, now_ns)
    }

    /// [`Agent::packet_in`] for a packet with tunnel metadata: the
    /// PACKET_IN's match carries its `tunnel_id` (OpenFlow 1.3 7.4.1: the
    /// pipeline fields that are not zero) and `tun_dst`/`tun_ipv6_dst` as
    /// Open vSwitch sends them.
    pub fn packet_in_tunneled(
        &mut self,
        in_port: u32,
        tun: &TunnelDst,
        ctl: ToController,
        frame: Bytes,
        now_ns: u64,
    ) {
        if self
            .ports
            .get(&in_port)
            .is_some_and(|p| p.config & port_config::NO_PACKET_IN != 0)
        {
            return;
        }
        let max_len = if ctl.reason == PacketInReason::NoMatch && ctl.max_len == 0 {
            self.switch_config.miss_send_len
        } else {
            ctl.max_len
        };
        let reason = ctl.reason.value();
        if !self
            .conns
            .values()
            .any(|c| c.wants(c.async_config.packet_in_mask, reason))
        {
            return;
        }
        let total_len = frame.len().min(u16::MAX as usize) as u16;
        // What is sent of the frame: max_len bytes (all with
        // OFPCML_NO_BUFFER), and never more than one message holds; the
        // rest waits in a buffer.
        let cut = if max_len == 0xffff {
            PACKET_IN_DATA_MAX
        } else {
            (max_len as usize).min(PACKET_IN_DATA_MAX)
        };
        let (buffer_id, data) = if frame.len() <= cut {
            (NO_BUFFER, frame)
        } else {
            let id = self.buffers.put(in_port, frame.clone());
            (id, frame.slice(..cut))
        };
        let msg = Message::PacketIn(PacketIn {
            buffer_id,
            total_len,
            reason: ctl.reason,
            table_id: ctl.table_id,
            cookie: ctl.cookie,
            match_: ofp::Match {
                entries: std::iter::once((OxmField::InPort, in_port as u128))
                    .chain(
                        [
                            (OxmField::TunnelId, tun.id as u128),
                            (OxmField::TunIpv4Dst, tun.ipv4_dst as u128),
                            (OxmField::TunIpv6Dst, u128::from_be_bytes(tun.ipv6_dst)),
                        ]
                        .into_iter()
                        .filter(|(_, v)| *v != 0),
                    )
                    .map(|(f, v)| ofp::MatchEntry::Basic(Oxm::exact(f, v)))
                    .collect(),
            },
            data,
        });
        for c in self.conns.values_mut() {
            if c.wants(c.async_config.packet_in_mask, reason) && c.packet_in_allowed(now_ns) {
                let xid = c.xid();
                c.send(&msg, xid);
            }
        }
    }

    /// Keepalives, deadlines, flow expiry and idle bundles (discarded with
    /// OFPBFC_TIMEOUT, see [`bundle`]). Returns the connections to
    /// close, with why: no input for twice the probe interval, no HELLO
    /// within [`ConnConfig::hello_deadline_ns`], a message left half sent
    /// past [`ConnConfig::message_deadline_ns`].
    pub fn tick(&mut self, now_ns: u64) -> Vec<(ConnId, &'static str)> {
        self.now_ns = self.now_ns.max(now_ns);
        let removed = self.pipeline.expire(now_ns);
        if !removed.is_empty() {
            self.dirty = true;
            self.flow_removed(&removed, now_ns);
        }
        self.expire_bundles(now_ns);
        self.publish_due(now_ns);
        let mut dead = Vec::new();
        for (id, c) in self.conns.iter_mut() {
            let idle = now_ns.saturating_sub(c.last_rx_ns);
            let cfg = &c.config;
            if c.phase == Phase::AwaitHello
                && now_ns.saturating_sub(c.opened_ns) > cfg.hello_deadline_ns
            {
                dead.push((*id, "no HELLO in time"));
            } else if c
                .partial_since_ns
                .is_some_and(|t| now_ns.saturating_sub(t) > cfg.message_deadline_ns)
            {
                dead.push((*id, "a message left unfinished"));
            } else if idle > 2 * c.config.probe_ns {
                dead.push((*id, "inactivity probe unanswered"));
            } else if idle > c.config.probe_ns && !c.probe_sent && c.phase == Phase::Open {
                let xid = c.xid();
                c.send(&Message::EchoRequest(Bytes::new()), xid);
                c.probe_sent = true;
            }
        }
        dead
    }
}

/// Actions the datapath runs (`ofp_action_type` bits 0-27, every 1.3 one
/// but the experimenter's).
const ACTIONS_SUPPORTED: u32 = (1 << 0)
    | (1 << 11)
    | (1 << 12)
    | (1 << 15)
    | (1 << 16)
    | (1 << 17)
    | (1 << 18)
    | (1 << 19)
    | (1 << 20)
    | (1 << 21)
    | (1 << 22)
    | (1 << 23)
    | (1 << 24)
    | (1 << 25)
    | (1 << 26)
    | (1 << 27);

/// What every table supports: all instructions (goto only forward), every
/// action, every basic OXM field to match, wildcard and set.
fn table_features(
    n_tables: u8,
    max_entries: usize,
) -> Vec<ofp::msg::table_features::TableFeatures> {
    use ofp::msg::table_features::{
        prop_type as t, OxmId, TableFeatureProp as P, TableFeatures, TypeId,
    };
    let ids = |tys: Vec<u16>| {
        tys.into_iter()
            .map(|ty| TypeId {
                ty,
                data: Bytes::new(),
            })
            .collect::<Vec<_>>()
    };
    let instructions = ids(ofp::instruction::InstructionType::KNOWN
        .iter()
        .map(|i| i.value())
        .collect());
    let actions = ids(ofp::action::ActionType::KNOWN
        .iter()
        .map(|a| a.value())
        .filter(|&v| v != 0xffff)
        .collect());
    let oxm = |pred: fn(&ofp::oxm::FieldInfo) -> bool| {
        // The 40 basic fields, then the NXM_1 tunnel fields (their
        // headers are Open vSwitch's, class 0x0001).
        OxmField::KNOWN
            .iter()
            .chain(OxmField::NICIRA)
            .filter_map(|f| Some((f, f.info()?)))
            .filter(|(_, i)| pred(i))
            .map(|(f, _)| OxmId {
                header: f.header(false),
                experimenter: None,
            })
            .collect::<Vec<_>>()
    };
    let all = oxm(|_| true);
    let wild = oxm(|i| i.maskable);
    let set = oxm(|i| i.settable);
    (0..n_tables)
        .map(|id| {
            let next: Vec<u8> = (id.saturating_add(1)..n_tables).collect();
            let mut props = Vec::new();
            for ty in [t::INSTRUCTIONS, t::INSTRUCTIONS_MISS] {
                props.push(P::Instructions {
                    ty,
                    ids: instructions.clone(),
                });
            }
            props.push(P::NextTables {
                ty: t::NEXT_TABLES,
                tables: next.clone(),
            });
            props.push(P::NextTables {
                ty: t::NEXT_TABLES_MISS,
                tables: next,
            });
            for ty in [
                t::WRITE_ACTIONS,
                t::WRITE_ACTIONS_MISS,
                t::APPLY_ACTIONS,
                t::APPLY_ACTIONS_MISS,
            ] {
                props.push(P::Actions {
                    ty,
                    ids: actions.clone(),
                });
            }
            props.push(P::Oxms {
                ty: t::MATCH,
                ids: all.clone(),
            });
            props.push(P::Oxms {
                ty: t::WILDCARDS,
                ids: wild.clone(),
            });
            for ty in [
                t::WRITE_SETFIELD,
                t::WRITE_SETFIELD_MISS,
                t::APPLY_SETFIELD,
                t::APPLY_SETFIELD_MISS,
            ] {
                props.push(P::Oxms {
                    ty,
                    ids: set.clone(),
                });
            }
            TableFeatures {
                table_id: id,
                name: FixedStr::new(&format!("table{id}")),
                metadata_match: u64::MAX,
                metadata_write: u64::MAX,
                config: 0,
                max_entries: max_entries.min(u32::MAX as usize) as u32,
                properties: props,
            }
        })
        .collect()
}

fn queue_desc(p: &PortInfo) -> Vec<PacketQueue> {
    p.queues
        .iter()
        .map(|&(id, min, max)| {
            // Rates in tenths of a percent of the port's 10 Gb/s.
            let pct = |kbps: u64| ((kbps * 1000) / 10_000_000).min(1000) as u16;
            let mut props = Vec::new();
            if min > 0 {
                props.push(QueueProp::MinRate(pct(min)));
            }
            if max > 0 {
                props.push(QueueProp::MaxRate(pct(max)));
            }
            PacketQueue {
                queue_id: id,
                port: p.port_no,
                properties: props,
            }
        })
        .collect()
}

/// A FLOW_STATS reply in progress on one connection.
#[derive(Debug)]
pub struct FlowStatsJob {
    xid: u32,
    /// The rules selected when the request came, in reply order.
    rules: Vec<Arc<pipeline::Rule>>,
    /// How many have been sent.
    at: usize,
}

/// The most frame bytes one PACKET_IN carries: 65 535 less its header
/// (24 bytes), the in_port match (16) and the 2 bytes of padding.
const PACKET_IN_DATA_MAX: usize = ofp::header::MAX_MSG_LEN - 42;

/// Text cut to fit one message whose headers take `overhead` bytes of the
/// 65 535 (a trace reply 16, a command reply 20), at a line end when there
/// is one, with a note that it was cut.
fn fit_text(text: &str, overhead: usize) -> std::borrow::Cow<'_, str> {
    const NOTE: &str = "\n... (truncated: longer than one OpenFlow message)\n";
    let max = ofp::header::MAX_MSG_LEN - overhead;
    if text.len() <= max {
        return text.into();
    }
    let mut cut = max - NOTE.len();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let cut = text[..cut].rfind('\n').unwrap_or(cut);
    format!("{}{NOTE}", &text[..cut]).into()
}

/// Largest body of one multipart reply message (the header and multipart
/// header take 16 bytes of the 65 535).
const MAX_BODY: usize = 65_535 - 16;

/// Splits a list into reply bodies that each fit one message, by encoding
/// and measuring.
fn split<T: Clone>(items: Vec<T>, make: fn(Vec<T>) -> R) -> Vec<R> {
    let size = |v: Vec<T>| -> usize {
        Message::MultipartReply(MultipartReply {
            flags: 0,
            body: make(v),
        })
        .to_bytes(0)
        .len()
            - 16
    };
    let mut out = Vec::new();
    let mut cur: Vec<T> = Vec::new();
    let mut cur_len = 0;
    for it in items {
        let l = size(vec![it.clone()]);
        if !cur.is_empty() && cur_len + l > MAX_BODY {
            out.push(make(std::mem::take(&mut cur)));
            cur_len = 0;
        }
        cur_len += l;
        cur.push(it);
    }
    out.push(make(cur));
    out
}
