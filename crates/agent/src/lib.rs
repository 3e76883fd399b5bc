//! # agent: the OpenFlow agent, sans-IO
//!
//! Each connection negotiates its OpenFlow version (1.0, 1.2-1.5; the
//! bridge's `protocols` in [`ConnConfig::versions`]) and its bytes go
//! through `ofp::Message::decode_as`/`encode_as` of that version: the
//! agent itself works on the 1.3-shaped messages. The one thing it does
//! by version is OpenFlow 1.0-1.2's table miss (a packet-in for those
//! controllers while one is connected: [`local`]).
//!
//! The [`Agent`] owns a bridge's control-plane [`Pipeline`] and talks to
//! any number of controller connections. It sees bytes and times, never
//! sockets or clocks, and its state is its own (quinn's shape):
//!
//! * inputs, `handle_*`: a connection's bytes ([`Agent::handle_input`];
//!   [`Agent::connect`] and [`Agent::disconnect`] for its life), the time
//!   ([`Agent::handle_timeout`]), ports ([`Agent::handle_add_port`],
//!   [`Agent::handle_del_port`], [`Agent::handle_detach_port`],
//!   [`Agent::handle_reattach_port`], [`Agent::handle_port_settings`]:
//!   the ports' one door, each through the [`Datapath`]) and their links
//!   ([`Agent::handle_link_change`]), frames for the controller
//!   ([`Agent::handle_packet_in_tunneled`]), management commands
//!   ([`Agent::handle_command`]), the fail mode
//!   ([`Agent::handle_fail_mode`]) and a reload's static flows, groups and
//!   meters ([`Agent::handle_local_changes`]);
//! * commands, `set_*`: what new connections start with
//!   ([`Agent::set_conn_config`]), PACKET_IN and learning limits, table
//!   names;
//! * outputs, `poll_*`: the bytes to write to each connection
//!   ([`Agent::poll_transmit`], then [`Agent::transmitted`]), when to call
//!   again ([`Agent::poll_timeout`]: the daemon sleeps until then) and
//!   what the daemon must do ([`Agent::poll_event`]: close a connection).
//!
//! What must touch the datapath goes through the [`Datapath`] trait:
//! publishing a new pipeline snapshot, handing over a PACKET_OUT, reading
//! port counters, adding, deleting, detaching and re-attaching ports. The
//! agent hands out its datapath read only ([`Agent::datapath`]).
//!
//! The code is split by job: [`session`] (a connection's life and
//! bytes), [`dispatch`] (what each message does), [`stats`] (multipart
//! replies), [`monitor`] (flow monitors), [`ports`], [`command`],
//! [`trace`], [`ctflush`] (NXT_CT_FLUSH_ZONE, NXT_CT_FLUSH), [`asynchronous`]
//! (PACKET_IN, FLOW_REMOVED), [`local`] (fail
//! mode, reloads), [`timers`], [`bundle`], [`tables`] (table names, and a
//! TABLE_FEATURES request that sets them).
//!
//! Contracts:
//! * Every message a controller may send is answered as OpenFlow 1.3.5
//!   says (other versions: as their translators, and Open vSwitch, say),
//!   and every refusal is the OFPT_ERROR the spec names, carrying the
//!   first 64 bytes of the offending message; the connection stays up
//!   (only a broken stream — a header length below 8 — or a failed HELLO
//!   closes it).
//! * Nothing is half-applied: a modification either takes effect whole or
//!   the pipeline is unchanged (the pipeline's own contract).
//! * Changes are published to the datapath before any BARRIER_REPLY or
//!   bundle COMMIT_REPLY (and before a PACKET_OUT or trace runs), so a
//!   controller that got a barrier reply knows the datapath runs
//!   everything it sent before.
//!   Otherwise they are published at the end of the [`Agent::handle_input`]
//!   call that made them, whatever the tables' size: a publication applies
//!   the changes since the last one to a copy of the classifiers the
//!   workers no longer run ([`pipeline::lookup::published`]). Only while every
//!   copy is still held (a worker has not yet moved to the last version)
//!   does a publication wait, for the next call or [`Agent::handle_timeout`], and at
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
//! * An OpenFlow 1.0 connection chooses its flow format
//!   (NXT_SET_FLOW_FORMAT: 1.0's match or NXM) and whether its flow mods
//!   carry a table id (NXT_FLOW_MOD_TABLE_ID), as Open vSwitch lets it:
//!   NXT_FLOW_MOD is applied as any FLOW_MOD, NXST_FLOW and
//!   NXST_AGGREGATE are answered in NXM, and a connection in the NXM
//!   format gets NXT_FLOW_REMOVED ([`ofp::msg::nx_flow`]).
//! * Flow monitors (Open vSwitch's NXST_FLOW_MONITOR under 1.0, 1.4's
//!   OFPMP_FLOW_MONITOR): every change to the flow tables, from any
//!   source, is reported to the connections whose monitors want it, and
//!   a slow reader is paused rather than buffered without bound
//!   ([`monitor`]).
//! * PACKET_INs go to the connections of their controller id
//!   (NXT_SET_CONTROLLER_ID; 0 by default), each in the format it chose
//!   (NXT_SET_PACKET_IN_FORMAT: OFPT_PACKET_IN, Open vSwitch's
//!   NXT_PACKET_IN or NXT_PACKET_IN2, the one with `userdata`), as Open
//!   vSwitch sends them ([`asynchronous`]).
//! * PACKET_INs are limited per connection (a [`pipeline::bucket::Gcra`]
//!   token bucket) and dropped —
//!   counted — when a connection's outbox is full, so a flood of misses
//!   cannot starve the channel or grow memory.
//! * Memory per connection is bounded: past [`ConnConfig::max_outbox`]
//!   unsent bytes the agent handles no more of that connection's requests
//!   ([`Conn::wants_input`] tells the daemon to stop reading it), a
//!   FLOW_STATS reply is produced a message at a time as the outbox drains
//!   ([`Agent::pump`]; later requests, barriers included, wait behind it),
//!   as a FLOW_MOD naming more rules than a round changes is applied a
//!   round per `pump` ([`pipeline::control::FlowModJob`]: its FLOW_REMOVED
//!   messages sent a round at a time, the datapath seeing each round
//!   published, a barrier answered after the last),
//!   and past [`ConnConfig::outbox_hard_cap`] ([`Conn::over_hard_cap`],
//!   reachable only by asynchronous messages) the daemon closes it.
//! * No message longer than 65 535 bytes is ever sent: multipart replies
//!   are split, trace text and PACKET_IN data cut to fit, flows and groups
//!   whose stats entries could not fit refused; [`Conn`] encodes with
//!   `Message::try_encode` and drops (and logs) anything longer.

mod asynchronous;
pub mod buffers;
pub mod bundle;
mod command;
pub mod conn;
mod ctflush;
mod dispatch;
mod local;
pub mod monitor;
pub mod outbox;
mod ports;
mod session;
mod stats;
mod tables;
mod timers;
mod trace;

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
    ControllerRole, ErrorMsg, FeaturesReply, PacketQueue, PortReason, PortStatus,
    QueueGetConfigReply, QueueProp, Role, SwitchConfig,
};
use ofp::port::{port_config, port_no, port_state, PortDesc, NO_BUFFER};
use ofp::wire::FixedStr;
use ofp::{Action, Message, Oxm, OxmField, PacketIn, PacketOut, Version};
use packet::TunnelDst;
use pipeline::{Pipeline, PortState, Removed, Snapshot, ToController};

pub use buffers::Buffers;
pub use bundle::{BundleLimits, Bundles};
pub use conn::{Conn, ConnConfig, Phase};
pub use local::{LocalChange, LocalRefusal};
pub use monitor::{Monitors, PAUSE_AT};
pub use outbox::Outbox;
use stats::Progress;
pub use stats::{FlowModRounds, FlowStatsJob, Job};
pub use tables::MAX_TABLE_NAME;
pub use timers::Event;

/// What the agent needs from the datapath (the provider contract, in the
/// shape of Open vSwitch's ofproto provider): publication, PACKET_OUT,
/// counters, and the ports' one door. A port is added, deleted, detached,
/// re-attached and set only through the agent ([`Agent::handle_add_port`],
/// [`Agent::handle_del_port`], [`Agent::handle_detach_port`],
/// [`Agent::handle_reattach_port`], [`Agent::handle_port_settings`]),
/// which calls these and tells controllers what changed; whoever owns the
/// agent never reaches the datapath's ports another way.
pub trait Datapath {
    /// A port as this datapath takes it ([`Datapath::port_add`]): what to
    /// open, or devices opened already (the daemon opens many at once).
    type Port;
    /// A port's settings the datapath changes in place and no controller
    /// sees ([`Datapath::port_set`]: NORMAL's VLANs).
    type PortSettings;
    /// Makes `snap` the pipeline every worker runs from its next batch.
    fn publish(&self, snap: Arc<Snapshot>);
    /// Hands a PACKET_OUT to the datapath to run and send; false if the
    /// datapath's queue is full (the packet is then not sent).
    fn packet_out(&self, in_port: u32, actions: Vec<Action>, frame: Bytes) -> bool;
    /// Hands an NXT_RESUME to the datapath: the paused walk `c` goes on
    /// with `frame` from `in_port`, `fields` (the controller's registers,
    /// metadata, ...) over the frozen ones ([`pipeline::Worker::resume`]);
    /// false if it could not be queued.
    fn resume(
        &self,
        in_port: u32,
        c: pipeline::continuation::Continuation,
        fields: Vec<ofp::oxm::Oxm>,
        frame: Bytes,
    ) -> bool {
        let _ = (in_port, c, fields, frame);
        false
    }
    /// A port's counters (None: no such port).
    fn port_stats(&self, port_no: u32) -> Option<PortStats>;
    /// A queue's counters: (tx_bytes, tx_packets, tx_errors), None if the
    /// datapath has no such queue on that port.
    fn queue_stats(&self, port_no: u32, queue_id: u32) -> Option<(u64, u64, u64)>;
    /// `add-port`'s words (`IFACE [ofport=N] [backend=NAME] ...`) as a
    /// port to add; `taken` is the port numbers in use. Err says why not
    /// (the text the user sees). A datapath whose ports are fixed refuses.
    fn port_from_words(&self, words: &[String], taken: &[u32]) -> Result<Self::Port, String> {
        let _ = (words, taken);
        Err("this switch's ports are fixed".into())
    }
    /// Adds a port (Open vSwitch's `port_add`): opens its devices unless
    /// they come opened, hands them to the workers, and says how the port
    /// looks (its `since_ns` is the agent's to set). Err says why not,
    /// without naming the port (the caller does); nothing changed then.
    fn port_add(&mut self, port: Self::Port) -> Result<PortInfo, String> {
        let _ = port;
        Err("this switch's ports are fixed".into())
    }
    /// Deletes a port (Open vSwitch's `port_del`): closes its devices
    /// before it returns (the agent takes it out of the pipeline after).
    /// Err: refused, nothing changed.
    fn port_del(&mut self, port_no: u32) -> Result<(), String> {
        let _ = port_no;
        Err("this switch's ports are fixed".into())
    }
    /// Detaches a port whose interface is gone: its devices are closed
    /// before it returns; number, counters and queues stay. False if
    /// there is no such attached port.
    fn port_detach(&mut self, port_no: u32) -> bool {
        let _ = port_no;
        false
    }
    /// Opens a detached port's devices again (its interface is back, or
    /// was re-created) and says how the port looks now; Err says why not
    /// yet.
    fn port_reattach(&mut self, port_no: u32) -> Result<PortInfo, String> {
        let _ = port_no;
        Err("this switch's ports are fixed".into())
    }
    /// A port's link went up or down (before controllers hear it).
    fn port_link_changed(&mut self, port_no: u32, up: bool) {
        let _ = (port_no, up);
    }
    /// Changes a port's settings in place (the port stays open). False if
    /// there is no such port.
    fn port_set(&mut self, port_no: u32, settings: Self::PortSettings) -> bool {
        let _ = (port_no, settings);
        false
    }
    /// Where NORMAL sends `frame` (after the pipeline's edits) that came
    /// in on `in_port`, and why, as the datapath would decide it at
    /// `now_ns` without learning anything (for `trace`); None if the
    /// datapath has no NORMAL.
    fn normal_hop(
        &self,
        snap: &Snapshot,
        in_port: u32,
        frame: &[u8],
        now_ns: u64,
    ) -> Option<pipeline::trace::NormalHop> {
        let _ = (snap, in_port, frame, now_ns);
        None
    }
    /// Any other management command (`fdb-show`, `vlog`, ...): None if the
    /// datapath does not know it.
    fn command(&mut self, words: &[String]) -> Option<Result<String, String>> {
        let _ = words;
        None
    }
    /// What the XDP fast path does with `frame` arriving on `in_port`
    /// under `snap`, in words (for `trace`); None if the bridge runs no
    /// fast path.
    fn fast_path_verdict(&self, snap: &Snapshot, in_port: u32, frame: &[u8]) -> Option<String> {
        let _ = (snap, in_port, frame);
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

    pub(crate) fn desc(&self) -> PortDesc {
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

/// The agent of one bridge. Its state is its own: the daemon reaches it
/// only through the `handle_*` inputs and `poll_*` outputs (and reads it
/// through the accessors).
pub struct Agent<D: Datapath> {
    datapath_id: u64,
    pipeline: Pipeline,
    datapath: D,
    ports: BTreeMap<u32, PortInfo>,
    conns: BTreeMap<ConnId, Conn>,
    next_conn: ConnId,
    buffers: Buffers,
    switch_config: SwitchConfig,
    /// The largest generation id a master or slave has presented.
    generation: Option<u64>,
    dirty: bool,
    /// The snapshot the datapath runs (the last published).
    published: Option<Arc<Snapshot>>,
    /// When it was published, and the latest time the agent was told.
    last_publish_ns: u64,
    now_ns: u64,
    desc: Desc,
    /// The configuration each new connection starts with.
    conn_config: ConnConfig,
    /// What the daemon must do, oldest first ([`Agent::poll_event`]).
    events: std::collections::VecDeque<Event>,
    /// Standalone fail mode: the flow installed while no controller is
    /// connected ([`local`]); None in secure mode.
    standalone_flow: Option<ofp::FlowMod>,
    /// Whether that flow is installed now.
    fail_flow_installed: bool,
    /// The tables' names ([`tables`]).
    table_names: tables::TableNames,
}

fn brc(c: BadRequestCode) -> ErrorCode {
    ErrorCode::BadRequest(c)
}

/// The default miss_send_len (OFPCML_DEFAULT... 128 bytes, as the spec).
pub const DEFAULT_MISS_SEND_LEN: u16 = 128;

impl<D: Datapath> Agent<D> {
    pub fn new(datapath_id: u64, pipeline: Pipeline, datapath: D, dp_desc: &str) -> Self {
        let table_names = tables::TableNames::new(pipeline.config.n_tables);
        Agent {
            table_names,
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
            events: Default::default(),
            standalone_flow: None,
            fail_flow_installed: false,
        }
    }

    /// The control plane's pipeline (read only: it changes through
    /// OpenFlow messages and the `handle_*` inputs).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The datapath the agent drives.
    pub fn datapath(&self) -> &D {
        &self.datapath
    }

    /// The ports, by number.
    pub fn ports(&self) -> &BTreeMap<u32, PortInfo> {
        &self.ports
    }

    /// A connection's state (read only).
    pub fn conn(&self, id: ConnId) -> Option<&Conn> {
        self.conns.get(&id)
    }

    /// Every connection.
    pub fn conns(&self) -> impl Iterator<Item = (ConnId, &Conn)> {
        self.conns.iter().map(|(id, c)| (*id, c))
    }

    /// The configuration new connections start with.
    pub fn conn_config(&self) -> &ConnConfig {
        &self.conn_config
    }

    /// Sets the configuration new connections start with (the ones open
    /// keep theirs).
    pub fn set_conn_config(&mut self, config: ConnConfig) {
        self.conn_config = config;
    }

    /// The PACKET_IN limit (per second, per connection) of every
    /// connection, open ones included (a reload's `packet_in_rate`).
    pub fn set_packet_in_rate(&mut self, rate: u32) {
        self.conn_config.packet_in_rate = rate;
        for c in self.conns.values_mut() {
            c.config.packet_in_rate = rate;
        }
    }

    /// Sets what packets may teach (`learn`) per table: flows per second
    /// (0: no limit), bursts, learned flows a table holds (a reload's
    /// `learn_rate`, `learn_burst`, `learned_max`). A table already past
    /// a lowered cap keeps its flows and learns no more until it is under.
    pub fn set_learn_limits(&mut self, rate: u64, burst: u64, max: usize) {
        let c = &mut self.pipeline.config;
        (c.learn_rate, c.learn_burst, c.learned_max) = (rate, burst, max);
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
}
