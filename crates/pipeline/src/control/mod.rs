//! The control plane's copy of the pipeline: every table, group and meter,
//! and the OpenFlow semantics of FLOW_MOD, GROUP_MOD and METER_MOD applied
//! to it. Nothing here is seen by workers until [`Pipeline::snapshot`]
//! publishes it.
//!
//! Every mod is checked completely before anything changes, so a refused
//! mod leaves the pipeline exactly as it was (the spec's "nothing
//! half-applied").
//!
//! Here: the [`Pipeline`] itself, its ports, publication and the checks of
//! a PACKET_OUT; flow entries in [`flows`], groups and meters in
//! [`groups_meters`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ofp::error::{ErrorCode, FlowModFailedCode, GroupModFailedCode, MeterModFailedCode};
use ofp::msg::flow::{
    flow_mod_flags as ff, FlowMod, FlowModCommand, FlowRemoved, FlowRemovedReason,
};
use ofp::msg::group::{GroupMod, GroupModCommand, GroupType};
use ofp::msg::meter::{meter_flags, MeterBand, MeterMod, MeterModCommand};
use ofp::msg::multipart::{AggregateStats, FlowStats, FlowStatsRequest};
use ofp::port::{group_no, meter_no, port_no, TABLE_ALL};
use ofp::{Action, OfpError};

use crate::lookup::changes::ChangeLog;
use crate::lookup::classifier::RuleId;
use crate::lookup::matchkey::{compile, compile_valid, MaskedKey, PackedKey};
use crate::lookup::published::{Op, Published};
use crate::lookup::rule::{Counters, Rule, StoredMatch};
use crate::lookup::table::FlowTable;
use crate::meter::MeterState;
use crate::ports::PortState;
use crate::ports::PortTable;
use crate::snapshot::{GroupRt, Snapshot};
use crate::validate::{self, Context};

pub mod flows;
pub mod groups_meters;
pub mod learn;

use flows::age;
pub use flows::{flow_stats_entry, Applied, FlowModJob, FLOW_ENTRY_MAX, ROUND};
use groups_meters::bucket_liveness;
pub use groups_meters::GROUP_BUCKETS_MAX;

/// Limits and sizes of a pipeline.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Number of flow tables (1-255).
    pub n_tables: u8,
    /// Default capacity of each table.
    pub max_entries: usize,
    /// Rules in all tables together: past it, OFPFMFC_TABLE_FULL (memory
    /// grows with rules; 254 tables of `max_entries` each would not fit).
    pub max_flows: usize,
    /// Number of datapath workers (one counter slot each).
    pub workers: usize,
    pub max_groups: usize,
    pub max_meters: usize,
    pub max_bands: usize,
    /// Rule changes each snapshot lists for the workers' exact-match
    /// caches ([`crate::lookup::changes`]): a cached answer no listed change
    /// touches survives a publication. 0: every publication empties every
    /// cache.
    pub change_log: usize,
    /// Flows packets may teach (`learn`) per second, per table
    /// ([`learn`]); bursts of `learn_burst`. 0: no limit.
    pub learn_rate: u64,
    pub learn_burst: u64,
    /// Learned flows one table may hold.
    pub learned_max: usize,
    /// The connection tracker's timeouts and limits (changeable later
    /// through [`Pipeline::conntrack`]).
    pub ct_timeouts: conntrack::Timeouts,
    pub ct_limits: conntrack::Limits,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            n_tables: 254,
            max_entries: 2_000_000,
            max_flows: 2_000_000,
            workers: 1,
            max_groups: 65_536,
            max_meters: 65_536,
            max_bands: 8,
            change_log: 16,
            learn_rate: 10_000,
            learn_burst: 10_000,
            learned_max: 1_000_000,
            ct_timeouts: conntrack::Timeouts::default(),
            ct_limits: conntrack::Limits::default(),
        }
    }
}

/// A group as installed, with its run-time form (and counters).
#[derive(Debug, Clone)]
pub struct Group {
    pub group_id: u32,
    pub created_ns: u64,
    pub rt: Arc<GroupRt>,
}

/// A meter as installed, with its run-time state (buckets and counters).
#[derive(Debug, Clone)]
pub struct Meter {
    pub meter_id: u32,
    pub created_ns: u64,
    pub state: Arc<MeterState>,
}

/// A rule taken out of the pipeline, and why.
#[derive(Debug, Clone)]
pub struct Removed {
    pub rule: Arc<Rule>,
    pub reason: FlowRemovedReason,
}

impl Removed {
    /// Whether the controller asked to hear about it (OFPFF_SEND_FLOW_REM).
    pub fn notify(&self) -> bool {
        self.rule.flags & ff::SEND_FLOW_REM != 0
    }

    /// The FLOW_REMOVED message for it, at time `now_ns`.
    pub fn message(&self, now_ns: u64) -> FlowRemoved {
        let r = &self.rule;
        let t = r.counters.totals();
        let (duration_sec, duration_nsec) = age(r, now_ns);
        FlowRemoved {
            cookie: r.cookie,
            priority: r.priority,
            reason: self.reason,
            table_id: r.table_id,
            duration_sec,
            duration_nsec,
            idle_timeout: r.idle_timeout,
            hard_timeout: r.hard_timeout,
            packet_count: t.packets,
            byte_count: t.bytes,
            match_: r.match_.get(),
        }
    }
}

/// One change to the flow tables, as flow monitors report it
/// ([`Pipeline::watch_flows`]).
#[derive(Debug, Clone)]
pub enum FlowChange {
    /// A rule added by an ADD (a controller's, a reload's or a `learn`
    /// action's); `replaced` is the rule of the same match and priority it
    /// took the place of, if any.
    Added {
        rule: Arc<Rule>,
        replaced: Option<Arc<Rule>>,
    },
    /// A rule a MODIFY gave new instructions (`old` is the rule before).
    Modified { rule: Arc<Rule>, old: Arc<Rule> },
    /// A rule taken out, and why (deleted, expired, with its group or
    /// meter, with its learner).
    Removed(Removed),
}

/// The control plane's pipeline.
#[derive(Debug, Clone)]
pub struct Pipeline {
    pub config: Config,
    pub(crate) tables: Vec<FlowTable>,
    pub(crate) groups: HashMap<u32, Group>,
    pub(crate) meters: HashMap<u32, Meter>,
    next_id: RuleId,
    table_counters: Arc<Vec<Counters>>,
    ports: PortTable,
    /// OFPC_INVALID_TTL_TO_CONTROLLER (set by SET_CONFIG).
    /// Whether FLOW_MODs now applied may make OpenFlow 1.0's edits
    /// whatever their match says of the packets (a VLAN pop, the IP
    /// edits: [`crate::validate::Context::of10_edits`]): the agent sets it
    /// while it applies an OpenFlow 1.0 peer's.
    pub of10_edits: bool,
    pub invalid_ttl_to_controller: bool,
    /// A packet no rule matches goes to the controllers as a packet-in
    /// (OFPR_NO_MATCH) instead of being dropped: OpenFlow 1.0-1.2's
    /// table miss. The agent sets it while a controller of those versions
    /// is connected (as Open vSwitch's `connmgr_wants_packet_in_on_miss`
    /// decides); only those controllers get the packet-ins.
    pub miss_to_controller: bool,
    version: u64,
    /// The recent rule changes, as the snapshots carry them.
    changes: Arc<ChangeLog>,
    /// The classifiers snapshots carry, kept up to date from the tables'
    /// logs of rule changes.
    published: Published,
    /// Rules in all tables.
    flows: usize,
    /// Bucket liveness as of the last snapshot; None once a group or a
    /// port has changed since (worked out again at the next snapshot, not
    /// at every one).
    liveness: Option<Arc<rustc_hash::FxHashMap<u32, Box<[bool]>>>>,
    /// Learned flows' bookkeeping ([`learn`]).
    learning: learn::LearnState,
    /// The connection tracker `ct` actions use: one for the pipeline's
    /// life, shared by every snapshot (connections outlive flow changes).
    conntrack: Arc<conntrack::Tracker>,
    /// Where what a big change leaves to free goes ([`crate::garbage`]).
    disposer: crate::garbage::Disposer,
    /// The Geneve option table ([`crate::tlv`]).
    pub tlv: crate::tlv::TlvTable,
    /// `tlv` as snapshots carry it.
    geneve: Arc<crate::tlv::GeneveMap>,
    /// Whether rule changes are written to `journal` ([`Pipeline::watch_flows`]).
    watching: bool,
    /// The rule changes since the last [`Pipeline::take_flow_changes`], in
    /// the order they happened.
    journal: Vec<FlowChange>,
}

impl Pipeline {
    pub fn new(config: Config) -> Pipeline {
        let n = config.n_tables.clamp(1, 255);
        Pipeline {
            config: Config {
                n_tables: n,
                ..config
            },
            tables: (0..n)
                .map(|i| FlowTable::new(i, config.max_entries))
                .collect(),
            groups: HashMap::new(),
            meters: HashMap::new(),
            next_id: 0,
            flows: 0,
            liveness: None,
            learning: learn::LearnState::default(),
            table_counters: Arc::new((0..n).map(|_| Counters::new(config.workers)).collect()),
            ports: PortTable::default(),
            invalid_ttl_to_controller: false,
            of10_edits: false,
            miss_to_controller: false,
            version: 0,
            changes: Arc::new(ChangeLog::default()),
            published: Published::new(n as usize),
            conntrack: Arc::new(conntrack::Tracker::new(
                config.ct_timeouts,
                config.ct_limits,
            )),
            disposer: Default::default(),
            tlv: Default::default(),
            geneve: Default::default(),
            watching: false,
            journal: Vec::new(),
        }
    }

    /// Turns the journal of rule changes on or off (off by default: it
    /// costs nothing then). While it is on, every rule added, modified and
    /// removed is written down, in order ([`FlowChange`]; a removal as the
    /// returned [`Removed`] says it), for [`Pipeline::take_flow_changes`]:
    /// what flow monitors report. A DELETE in rounds
    /// ([`Pipeline::flow_mod_round`]) writes its removals as it hands them
    /// back. The caller must take the changes after each call that makes
    /// some, or the journal grows with them; turning it off empties it.
    pub fn watch_flows(&mut self, on: bool) {
        self.watching = on;
        if !on {
            self.journal = Vec::new();
        }
    }

    /// Whether the journal is on.
    pub fn watching_flows(&self) -> bool {
        self.watching
    }

    /// The rule changes written down since the last call, oldest first.
    pub fn take_flow_changes(&mut self) -> Vec<FlowChange> {
        std::mem::take(&mut self.journal)
    }

    pub(crate) fn note(&mut self, c: impl FnOnce() -> FlowChange) {
        if self.watching {
            self.journal.push(c());
        }
    }

    pub(crate) fn note_removed(&mut self, removed: &[Removed]) {
        if self.watching {
            self.journal
                .extend(removed.iter().cloned().map(FlowChange::Removed));
        }
    }

    /// Sets where what a big change leaves to free is dropped
    /// ([`crate::garbage`]; by default at once, on the caller's thread).
    pub fn set_disposer(&mut self, d: crate::garbage::Disposer) {
        self.disposer = d;
    }

    /// Where what a big change leaves to free is dropped.
    pub fn disposer(&self) -> &crate::garbage::Disposer {
        &self.disposer
    }

    /// The connection tracker (its connections, limits and timeouts).
    pub fn conntrack(&self) -> &Arc<conntrack::Tracker> {
        &self.conntrack
    }

    /// Adds or updates a port (liveness and flood/forward settings).
    pub fn set_port(&mut self, p: PortState) {
        self.liveness = None;
        let mut v = self.ports.as_slice().to_vec();
        v.push(p);
        self.ports = PortTable::new(v);
    }

    /// Removes a port.
    pub fn remove_port(&mut self, port_no: u32) {
        self.liveness = None;
        let v = self
            .ports
            .iter()
            .filter(|p| p.port_no != port_no)
            .copied()
            .collect();
        self.ports = PortTable::new(v);
    }

    /// The ports, by number.
    pub fn ports(&self) -> &[PortState] {
        self.ports.as_slice()
    }

    /// Per-table lookup (`packets`) and matched (`bytes`) counters.
    pub fn table_counters(&self) -> &[Counters] {
        &self.table_counters
    }

    /// Publishes the current state as a new immutable version. Cost: the
    /// rule changes since the last one, applied to a classifier no snapshot
    /// holds any more ([`crate::lookup::published`]; if every copy is held, the
    /// subtables the changes touch are copied), and one `Arc` clone per
    /// group and meter.
    pub fn snapshot(&mut self) -> Arc<Snapshot> {
        self.version += 1;
        let mut fresh = Vec::new();
        let mut overflow = false;
        for t in self.tables.iter_mut() {
            overflow |= std::mem::take(&mut t.changes_overflow);
            fresh.extend(t.changes.drain(..).map(|k| (t.id, k)));
            if t.is_empty() && !t.ops.is_empty() {
                // Whatever came before, the table ends empty.
                self.disposer.dispose(std::mem::take(&mut t.ops));
                self.published.log(t.id, [Op::Clear]);
            } else if !t.ops.is_empty() {
                self.published.log(t.id, t.ops.drain(..));
            }
        }
        // Untouched unless rules changed (or the log is off): snapshots
        // between share it.
        if overflow || !fresh.is_empty() || self.config.change_log == 0 {
            Arc::make_mut(&mut self.changes).record(
                self.version,
                fresh.into_iter(),
                overflow,
                self.config.change_log,
            );
        }
        let tables = self.published.tables(&self.disposer);
        Arc::new(Snapshot {
            version: self.version,
            changes: self.changes.clone(),
            multi_table: tables.iter().filter(|t| !t.is_empty()).count() > 1,
            tables,
            table_counters: self.table_counters.clone(),
            groups: self
                .groups
                .iter()
                .map(|(k, g)| (*k, g.rt.clone()))
                .collect(),
            bucket_live: self
                .liveness
                .get_or_insert_with(|| {
                    Arc::new(bucket_liveness(&self.groups, self.ports.as_slice()))
                })
                .clone(),
            meters: self
                .meters
                .iter()
                .map(|(k, m)| (*k, m.state.clone()))
                .collect(),
            ports: self.ports.clone(),
            invalid_ttl_to_controller: self.invalid_ttl_to_controller,
            miss_to_controller: self.miss_to_controller,
            conntrack: self.conntrack.clone(),
            geneve: self.geneve.clone(),
            learned_seen: self.learning.seen.as_slice().into(),
            removals: self.tables.iter().map(|t| t.removals()).sum(),
        })
    }

    /// Rules in all tables together.
    /// Whether the next [`Pipeline::snapshot`] applies the rule changes to
    /// a classifier no snapshot holds (cheap, whatever the tables' size),
    /// rather than copying the subtables they touch: false while every
    /// copy is still held (a worker still runs the version before the
    /// last).
    pub fn snapshot_is_cheap(&self) -> bool {
        self.published
            .reusable(self.tables.iter().any(|t| !t.ops.is_empty()))
    }

    /// Heap bytes of one copy of the published classifiers (there are two
    /// once rules changed after a publication; see [`crate::lookup::published`]).
    pub fn classifier_bytes(&self) -> usize {
        self.published.heap_bytes()
    }

    pub fn flow_count(&self) -> usize {
        self.flows
    }

    /// The tables.
    pub fn tables(&self) -> &[FlowTable] {
        &self.tables
    }

    /// Mutable access to a table's settings (capacity).
    pub fn table_mut(&mut self, id: u8) -> Option<&mut FlowTable> {
        self.tables.get_mut(id as usize)
    }

    pub fn groups(&self) -> &HashMap<u32, Group> {
        &self.groups
    }

    pub fn meters(&self) -> &HashMap<u32, Meter> {
        &self.meters
    }

    /// Validates a PACKET_OUT's actions against the packet it carries, as
    /// a flow-mod's are against its match: arguments, groups, and set_field
    /// prerequisites the packet's own headers must meet
    /// (OFPBAC_MATCH_INCONSISTENT). An output to TABLE is allowed.
    pub fn check_packet_out(
        &self,
        actions: &[Action],
        frame: &[u8],
        in_port: u32,
    ) -> Result<(), OfpError> {
        let mut key = packet::FlowKey::default();
        packet::extract(frame, in_port, &mut key);
        validate::actions(actions, validate::Packets::Packet(&key), &self.context())
    }

    /// Where a PACKET_OUT may come from and go, before its packet is
    /// looked at: `in_port` a port of the switch, CONTROLLER, LOCAL or ANY
    /// (else OFPBRC_BAD_PORT); every output a port of the switch or a
    /// reserved port but ANY (else OFPBAC_BAD_OUT_PORT: unlike a flow's,
    /// a packet cannot wait for its port to come); every group one that
    /// exists (else OFPBAC_BAD_OUT_GROUP). In action order.
    pub fn check_packet_out_ports(&self, in_port: u32, actions: &[Action]) -> Result<(), OfpError> {
        let known = |p: u32| self.ports.get(p).is_some();
        if !(matches!(in_port, port_no::CONTROLLER | port_no::LOCAL | port_no::ANY)
            || known(in_port))
        {
            return Err(OfpError::new(
                ErrorCode::BadRequest(ofp::error::BadRequestCode::BadPort),
                "packet-out in_port: no such port",
            ));
        }
        for a in ofp::action::flattened(actions) {
            match a {
                Action::Output { port, .. }
                    if !(*port <= port_no::MAX && known(*port)
                        || (*port > port_no::MAX && *port != port_no::ANY)) =>
                {
                    return Err(OfpError::new(
                        ErrorCode::BadAction(ofp::error::BadActionCode::BadOutPort),
                        "packet-out output: no such port",
                    ));
                }
                Action::Group(g) if !self.groups.contains_key(g) => {
                    return Err(OfpError::new(
                        ErrorCode::BadAction(ofp::error::BadActionCode::BadOutGroup),
                        "packet-out group: no such group",
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// NXT_TLV_TABLE_MOD: [`crate::tlv::TlvTable::apply`], with the
    /// fields the installed flows use, which DELETE and CLEAR may not
    /// unmap (`NXTTMFC_INVALID_TLV_DEL`).
    pub fn tlv_table_mod(
        &mut self,
        m: &ofp::msg::tlv_table::TlvTableMod,
    ) -> Result<(), ofp::ErrorCode> {
        let removes = !matches!(m.command, ofp::msg::tlv_table::TlvCommand::Add);
        let in_use = if removes { self.tlv_fields_in_use() } else { 0 };
        self.tlv.apply(m, in_use)?;
        self.geneve = Arc::new(crate::tlv::GeneveMap::of(&self.tlv));
        Ok(())
    }

    /// The `tun_metadataN` fields the installed flows name (a bitmap).
    fn tlv_fields_in_use(&self) -> u64 {
        let mut used = 0u64;
        for t in &self.tables {
            for r in t.rules() {
                used |= crate::tlv::fields_used(
                    &r.match_.get(),
                    crate::tlv::instruction_actions(&r.instructions),
                );
            }
        }
        used
    }

    fn context(&self) -> Context<'_, Group, Meter> {
        Context {
            n_tables: self.config.n_tables,
            groups: &self.groups,
            meters: &self.meters,
            of10_edits: self.of10_edits,
        }
    }

    fn table_ids(&self, table_id: u8) -> std::ops::Range<usize> {
        if table_id == TABLE_ALL {
            0..self.tables.len()
        } else {
            table_id as usize..table_id as usize + 1
        }
    }
}
