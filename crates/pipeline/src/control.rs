//! The control plane's copy of the pipeline: every table, group and meter,
//! and the OpenFlow semantics of FLOW_MOD, GROUP_MOD and METER_MOD applied
//! to it. Nothing here is seen by workers until [`Pipeline::snapshot`]
//! publishes it.
//!
//! Every mod is checked completely before anything changes, so a refused
//! mod leaves the pipeline exactly as it was (the spec's "nothing
//! half-applied").

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

use crate::changes::ChangeLog;
use crate::classifier::RuleId;
use crate::exec::{GroupRt, PortState, Snapshot};
use crate::matchkey::{compile, compile_valid, MaskedKey, PackedKey};
use crate::meter::MeterState;
use crate::ports::PortTable;
use crate::published::{Op, Published};
use crate::rule::{Counters, Rule, StoredMatch};
use crate::table::FlowTable;
use crate::validate::{self, Context};

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
    /// caches ([`crate::changes`]): a cached answer no listed change
    /// touches survives a publication. 0: every publication empties every
    /// cache.
    pub change_log: usize,
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

fn fm_err(c: FlowModFailedCode, d: &'static str) -> OfpError {
    OfpError::new(ErrorCode::FlowModFailed(c), d)
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
    ports: Arc<PortTable>,
    /// OFPC_INVALID_TTL_TO_CONTROLLER (set by SET_CONFIG).
    pub invalid_ttl_to_controller: bool,
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
    liveness: Option<Arc<HashMap<u32, Box<[bool]>>>>,
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
            table_counters: Arc::new((0..n).map(|_| Counters::new(config.workers)).collect()),
            ports: Arc::default(),
            invalid_ttl_to_controller: false,
            version: 0,
            changes: Arc::new(ChangeLog::default()),
            published: Published::new(n as usize),
        }
    }

    /// Adds or updates a port (liveness and flood/forward settings).
    pub fn set_port(&mut self, p: PortState) {
        self.liveness = None;
        let mut v = self.ports.as_slice().to_vec();
        v.push(p);
        self.ports = Arc::new(PortTable::new(v));
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
        self.ports = Arc::new(PortTable::new(v));
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
    /// holds any more ([`crate::published`]; if every copy is held, the
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
                t.ops.clear();
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
        Arc::new(Snapshot {
            version: self.version,
            changes: self.changes.clone(),
            tables: self.published.tables(),
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
    /// once rules changed after a publication; see [`crate::published`]).
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
        for a in actions {
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

    fn context(&self) -> Context<'_, Group, Meter> {
        Context {
            n_tables: self.config.n_tables,
            groups: &self.groups,
            meters: &self.meters,
        }
    }

    fn table_ids(&self, table_id: u8) -> std::ops::Range<usize> {
        if table_id == TABLE_ALL {
            0..self.tables.len()
        } else {
            table_id as usize..table_id as usize + 1
        }
    }

    /// Applies a FLOW_MOD at time `now_ns`. Returns the rules it removed
    /// (DELETE), for FLOW_REMOVED messages.
    pub fn flow_mod(&mut self, fm: &FlowMod, now_ns: u64) -> Result<Vec<Removed>, OfpError> {
        self.apply_flow_mod(fm, None, now_ns)
    }

    /// [`Pipeline::flow_mod`] for a FLOW_MOD decoded from the wire and
    /// validated by the caller with `Message::validate`, given its match
    /// as the codec found it in the message (`ofp::FlowMod::match_bytes`;
    /// None: encode it here): the match is not validated again, and a
    /// rule keeps it as the bytes it came in rather than encoding it anew.
    /// (In the million-flow push the second validation and the encoding
    /// were ~10% of the time.)
    pub fn flow_mod_with_match(
        &mut self,
        fm: &FlowMod,
        wire_match: Option<&[u8]>,
        now_ns: u64,
    ) -> Result<Vec<Removed>, OfpError> {
        self.apply_flow_mod(fm, wire_match, now_ns)
    }

    /// Applies `fm`; `wire_match`, when given, is its match as received
    /// and already validated.
    fn apply_flow_mod(
        &mut self,
        fm: &FlowMod,
        wire_match: Option<&[u8]>,
        now_ns: u64,
    ) -> Result<Vec<Removed>, OfpError> {
        if fm.flags & !ff::ALL != 0 {
            return Err(fm_err(
                FlowModFailedCode::BadFlags,
                "unknown flow-mod flags",
            ));
        }
        let is_delete = matches!(
            fm.command,
            FlowModCommand::Delete | FlowModCommand::DeleteStrict
        );
        let table_ok =
            (fm.table_id as usize) < self.tables.len() || (is_delete && fm.table_id == TABLE_ALL);
        if !table_ok {
            return Err(fm_err(FlowModFailedCode::BadTableId, "no such table"));
        }
        let key = match wire_match {
            Some(_) => compile_valid(&fm.match_)?,
            None => compile(&fm.match_)?,
        };
        // A flow entry must fit one FLOW_STATS reply (see FLOW_ENTRY_MAX).
        let ins_len = (!is_delete).then(|| {
            let mut v = Vec::new();
            ofp::instruction::encode_instructions(&fm.instructions, &mut v);
            v.len()
        });
        match fm.command {
            FlowModCommand::Add => {
                let m = wire_match.map_or_else(|| fm.match_.wire_len(), <[u8]>::len);
                fits_flow_stats(m, ins_len.unwrap_or(0))?;
                self.add(fm, key, wire_match, now_ns).map(|_| Vec::new())
            }
            FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                validate::instructions(fm.table_id, &fm.instructions, &fm.match_, &self.context())?;
                let strict = fm.command == FlowModCommand::ModifyStrict;
                let table = &mut self.tables[fm.table_id as usize];
                let targets: Vec<Arc<Rule>> = if strict {
                    table
                        .get_exact(&key, fm.priority)
                        .filter(|r| r.cookie_matches(fm.cookie, fm.cookie_mask))
                        .cloned()
                        .into_iter()
                        .collect()
                } else {
                    table
                        .rules()
                        .filter(|r| {
                            r.key().is_subset_of(&key)
                                && r.cookie_matches(fm.cookie, fm.cookie_mask)
                        })
                        .cloned()
                        .collect()
                };
                for r in &targets {
                    fits_flow_stats(r.match_.wire_len(), ins_len.unwrap_or(0))?;
                }
                let workers = self.config.workers;
                let instructions: Box<[ofp::Instruction]> =
                    fm.instructions.clone().into_boxed_slice();
                let table = &mut self.tables[fm.table_id as usize];
                for old in targets {
                    let counters = if fm.flags & ff::RESET_COUNTS != 0 {
                        Arc::new(Counters::new(workers))
                    } else {
                        old.counters.clone()
                    };
                    table.replace(Arc::new(Rule {
                        instructions: instructions.clone(),
                        counters,
                        ..clone_rule(&old)
                    }));
                }
                Ok(Vec::new())
            }
            FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
                let strict = fm.command == FlowModCommand::DeleteStrict;
                let mut removed = Vec::new();
                for t in self.table_ids(fm.table_id) {
                    let table = &mut self.tables[t];
                    let selected = |r: &Rule| {
                        r.cookie_matches(fm.cookie, fm.cookie_mask)
                            && (fm.out_port == port_no::ANY || r.outputs_to(fm.out_port))
                            && (fm.out_group == group_no::ANY || r.uses_group(fm.out_group))
                    };
                    let doomed: Vec<Arc<Rule>> = if strict {
                        table
                            .get_exact(&key, fm.priority)
                            .filter(|r| selected(r))
                            .cloned()
                            .into_iter()
                            .collect()
                    } else {
                        table
                            .rules()
                            .filter(|r| r.key().is_subset_of(&key) && selected(r))
                            .cloned()
                            .collect()
                    };
                    for r in doomed {
                        if let Some(rule) = table.remove(&r) {
                            self.flows -= 1;
                            removed.push(Removed {
                                rule,
                                reason: FlowRemovedReason::Delete,
                            });
                        }
                    }
                }
                Ok(removed)
            }
            FlowModCommand::Unknown(_) => Err(fm_err(
                FlowModFailedCode::BadCommand,
                "unknown flow-mod command",
            )),
        }
    }

    fn add(
        &mut self,
        fm: &FlowMod,
        key: MaskedKey,
        wire_match: Option<&[u8]>,
        now_ns: u64,
    ) -> Result<(), OfpError> {
        validate::instructions(fm.table_id, &fm.instructions, &fm.match_, &self.context())?;
        let workers = self.config.workers;
        let table = &mut self.tables[fm.table_id as usize];
        let existing = table.get_exact(&key, fm.priority).cloned();
        if fm.flags & ff::CHECK_OVERLAP != 0 {
            let clash = table
                .rules()
                .any(|r| r.priority == fm.priority && !r.packed.is(&key) && r.key().overlaps(&key));
            if clash {
                return Err(fm_err(
                    FlowModFailedCode::Overlap,
                    "overlaps a rule of the same priority",
                ));
            }
        }
        if existing.is_none() && table.len() >= table.max_entries {
            return Err(fm_err(FlowModFailedCode::TableFull, "table is full"));
        }
        if existing.is_none() && self.flows >= self.config.max_flows {
            return Err(fm_err(
                FlowModFailedCode::TableFull,
                "the switch holds max_flows rules",
            ));
        }
        // An identical entry is replaced; its counters are kept unless asked.
        let (id, counters) = match &existing {
            Some(old) if fm.flags & ff::RESET_COUNTS == 0 => (old.id, old.counters.clone()),
            Some(old) => (old.id, Arc::new(Counters::new(workers))),
            None => {
                self.next_id = self.next_id.wrapping_add(1);
                (self.next_id, Arc::new(Counters::new(workers)))
            }
        };
        let rule = Arc::new(Rule {
            id,
            table_id: fm.table_id,
            priority: fm.priority,
            table_miss: fm.priority == 0 && fm.match_.entries.is_empty(),
            packed: PackedKey::pack(&key),
            match_: wire_match.map_or_else(|| StoredMatch::new(&fm.match_), StoredMatch::from_wire),
            instructions: fm.instructions.clone().into_boxed_slice(),
            cookie: fm.cookie,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            flags: fm.flags,
            created_ns: now_ns,
            counters,
        });
        let table = &mut self.tables[fm.table_id as usize];
        if existing.is_some() {
            table.replace(rule);
        } else {
            table.insert_keyed(rule, &key);
            self.flows += 1;
        }
        Ok(())
    }

    /// The earliest time a rule may expire (when [`Pipeline::expire`] has
    /// work, at the soonest); None with no timed rule.
    pub fn next_expiry(&self) -> Option<u64> {
        self.tables.iter().filter_map(|t| t.next_deadline()).min()
    }

    /// Removes rules whose idle or hard timeout passed by `now_ns`. Looks
    /// only at the rules whose deadline passed ([`crate::expiry`]), not
    /// at every timed rule.
    pub fn expire(&mut self, now_ns: u64) -> Vec<Removed> {
        let mut out = Vec::new();
        for table in &mut self.tables {
            for (r, reason) in table.due(now_ns) {
                if let Some(rule) = table.remove(&r) {
                    self.flows -= 1;
                    out.push(Removed { rule, reason });
                }
            }
        }
        out
    }

    fn selected_rules<'a>(
        &'a self,
        req: &'a FlowStatsRequest,
    ) -> Result<Vec<&'a Arc<Rule>>, OfpError> {
        if req.table_id != TABLE_ALL && req.table_id as usize >= self.tables.len() {
            return Err(OfpError::new(
                ErrorCode::BadRequest(ofp::error::BadRequestCode::BadTableId),
                "no such table",
            ));
        }
        let key = compile(&req.match_)?;
        // An empty match selects every rule: skip unpacking each rule's key.
        let all = req.match_.entries.is_empty();
        Ok(self
            .table_ids(req.table_id)
            .flat_map(|t| self.tables[t].rules())
            .filter(|r| {
                (all || r.key().is_subset_of(&key))
                    && r.cookie_matches(req.cookie, req.cookie_mask)
                    && (req.out_port == port_no::ANY || r.outputs_to(req.out_port))
                    && (req.out_group == group_no::ANY || r.uses_group(req.out_group))
            })
            .collect())
    }

    /// Answers a flow stats request.
    pub fn flow_stats(
        &self,
        req: &FlowStatsRequest,
        now_ns: u64,
    ) -> Result<Vec<FlowStats>, OfpError> {
        Ok(self
            .flow_stats_rules(req)?
            .iter()
            .map(|r| flow_stats_entry(r, now_ns))
            .collect())
    }

    /// The rules a flow stats request selects, in the order they are
    /// reported (table, then priority from high to low, then age), held so
    /// a long reply can be produced a message at a time while the tables
    /// change ([`flow_stats_entry`] makes each entry).
    pub fn flow_stats_rules(&self, req: &FlowStatsRequest) -> Result<Vec<Arc<Rule>>, OfpError> {
        let mut keyed: Vec<(u64, &Arc<Rule>)> = self
            .selected_rules(req)?
            .into_iter()
            .map(|r| {
                // Table, priority from high to low, then id, in one word
                // (an unstable sort of plain words: the 1M-flow dump).
                let k = (r.table_id as u64) << 48
                    | ((u16::MAX - r.priority) as u64) << 32
                    | r.id as u64;
                (k, r)
            })
            .collect();
        keyed.sort_unstable_by_key(|(k, _)| *k);
        Ok(keyed.into_iter().map(|(_, r)| r.clone()).collect())
    }

    /// Answers an aggregate stats request.
    pub fn aggregate(&self, req: &FlowStatsRequest) -> Result<AggregateStats, OfpError> {
        Ok(self
            .selected_rules(req)?
            .into_iter()
            .fold(AggregateStats::default(), |a, r| {
                let t = r.counters.totals();
                AggregateStats {
                    packet_count: a.packet_count + t.packets,
                    byte_count: a.byte_count + t.bytes,
                    flow_count: a.flow_count + 1,
                }
            }))
    }

    /// Applies a GROUP_MOD. Deleting a group removes the rules that use it.
    pub fn group_mod(&mut self, gm: &GroupMod, now_ns: u64) -> Result<Vec<Removed>, OfpError> {
        self.liveness = None;
        let e =
            |c: GroupModFailedCode, d: &'static str| OfpError::new(ErrorCode::GroupModFailed(c), d);
        match gm.command {
            GroupModCommand::Add | GroupModCommand::Modify => {
                let add = gm.command == GroupModCommand::Add;
                if gm.group_id > group_no::MAX {
                    return Err(e(GroupModFailedCode::InvalidGroup, "reserved group id"));
                }
                presence(
                    add,
                    self.groups.contains_key(&gm.group_id),
                    e(GroupModFailedCode::GroupExists, "group exists"),
                    e(GroupModFailedCode::UnknownGroup, "no such group"),
                )?;
                if add && self.groups.len() >= self.config.max_groups {
                    return Err(e(GroupModFailedCode::OutOfGroups, "group table full"));
                }
                self.check_buckets(gm)?;
                let workers = self.config.workers;
                // MODIFY keeps the group's counters and age; buckets start afresh.
                let (counters, created_ns) = match self.groups.get(&gm.group_id) {
                    Some(old) => (old.rt.counters.clone(), old.created_ns),
                    None => (Arc::new(Counters::new(workers)), now_ns),
                };
                let rt = GroupRt {
                    group_type: gm.group_type,
                    buckets: gm.buckets.clone(),
                    counters,
                    bucket_counters: gm
                        .buckets
                        .iter()
                        .map(|_| Arc::new(Counters::new(workers)))
                        .collect(),
                    total_weight: gm.buckets.iter().map(|b| b.weight as u32).sum(),
                };
                self.groups.insert(
                    gm.group_id,
                    Group {
                        group_id: gm.group_id,
                        created_ns,
                        rt: Arc::new(rt),
                    },
                );
                Ok(Vec::new())
            }
            GroupModCommand::Delete => {
                let ids: HashSet<u32> = selected_ids(&self.groups, gm.group_id, group_no::ALL)
                    .into_iter()
                    .collect();
                // Deleting a group other groups still forward to would break
                // them (one pass over the groups that stay).
                let chained = self
                    .groups
                    .values()
                    .filter(|g| !ids.contains(&g.group_id))
                    .flat_map(|g| g.rt.buckets.iter().flat_map(|b| b.actions.iter()))
                    .any(|a| matches!(a, Action::Group(x) if ids.contains(x)));
                if chained {
                    return Err(e(
                        GroupModFailedCode::ChainedGroup,
                        "another group forwards to this group",
                    ));
                }
                for id in &ids {
                    self.groups.remove(id);
                }
                // One pass over the rules, however many groups go.
                Ok(self.remove_rules_where(
                    |r| {
                        r.actions()
                            .any(|a| matches!(a, Action::Group(g) if ids.contains(g)))
                    },
                    FlowRemovedReason::GroupDelete,
                ))
            }
            GroupModCommand::Unknown(_) => Err(e(
                GroupModFailedCode::BadCommand,
                "unknown group-mod command",
            )),
        }
    }

    fn check_buckets(&self, gm: &GroupMod) -> Result<(), OfpError> {
        let e =
            |c: GroupModFailedCode, d: &'static str| OfpError::new(ErrorCode::GroupModFailed(c), d);
        match gm.group_type {
            GroupType::Unknown(_) => {
                return Err(e(GroupModFailedCode::BadType, "unknown group type"))
            }
            GroupType::Indirect if gm.buckets.len() != 1 => {
                return Err(e(
                    GroupModFailedCode::BadBucket,
                    "an indirect group has exactly one bucket",
                ))
            }
            _ => {}
        }
        // Its GROUP_STATS and GROUP_DESC entries must each fit one reply.
        let buckets_len: usize = gm.buckets.iter().map(|b| b.wire_len()).sum();
        if gm.buckets.len() > GROUP_BUCKETS_MAX {
            return Err(e(
                GroupModFailedCode::OutOfBuckets,
                "more buckets than a GROUP_STATS reply can report",
            ));
        }
        // GROUP_DESC: reply header 16, entry header 8, the buckets.
        if 16 + 8 + buckets_len > ofp::header::MAX_MSG_LEN {
            return Err(e(
                GroupModFailedCode::BadBucket,
                "the buckets would not fit a GROUP_DESC reply (65 535 bytes)",
            ));
        }
        for b in &gm.buckets {
            if gm.group_type != GroupType::Select && b.weight != 0 {
                return Err(e(
                    GroupModFailedCode::WeightUnsupported,
                    "weights are for select groups",
                ));
            }
            if gm.group_type == GroupType::FastFailover
                && b.watch_port == port_no::ANY
                && b.watch_group == group_no::ANY
            {
                return Err(e(
                    GroupModFailedCode::BadWatch,
                    "a fast-failover bucket needs a watch port or group",
                ));
            }
            if gm.group_type == GroupType::FastFailover
                && b.watch_group != group_no::ANY
                && !self.groups.contains_key(&b.watch_group)
            {
                return Err(e(
                    GroupModFailedCode::BadWatch,
                    "watched group does not exist",
                ));
            }
            validate::actions(
                &b.actions,
                validate::Packets::Unknown,
                &Context {
                    n_tables: self.config.n_tables,
                    groups: &self.groups,
                    meters: &self.meters,
                },
            )
            .or_else(|err| match err.code {
                // A bucket may name the group being added (that is a loop, reported below).
                ErrorCode::BadAction(ofp::error::BadActionCode::BadOutGroup)
                    if b.actions.contains(&Action::Group(gm.group_id)) =>
                {
                    Ok(())
                }
                _ => Err(err),
            })?;
        }
        // Loop detection: following group actions from this group must
        // never come back (OFPGMFC_LOOP: a packet would go round), nor
        // following watched groups (OFPGMFC_BAD_WATCH: liveness would be
        // defined by itself). The two are separate: a packet follows only
        // actions, liveness only watches.
        let next = |g: u32, watch: bool| -> Vec<u32> {
            let buckets = if g == gm.group_id {
                &gm.buckets
            } else {
                match self.groups.get(&g) {
                    Some(x) => &x.rt.buckets,
                    None => return Vec::new(),
                }
            };
            let mut v = Vec::new();
            for b in buckets {
                if watch {
                    if b.watch_group != group_no::ANY {
                        v.push(b.watch_group);
                    }
                } else {
                    v.extend(b.actions.iter().filter_map(|a| match a {
                        Action::Group(x) => Some(*x),
                        _ => None,
                    }));
                }
            }
            v
        };
        let loops = |watch: bool| {
            let mut stack = next(gm.group_id, watch);
            let mut seen = HashSet::new();
            while let Some(g) = stack.pop() {
                if g == gm.group_id {
                    return true;
                }
                if seen.insert(g) {
                    stack.extend(next(g, watch));
                }
            }
            false
        };
        if loops(false) {
            return Err(e(GroupModFailedCode::Loop, "group chain loops back"));
        }
        if loops(true) {
            return Err(e(
                GroupModFailedCode::BadWatch,
                "the group watches itself, directly or through other groups",
            ));
        }
        Ok(())
    }

    /// How many flows and groups forward to each group directly
    /// (GROUP_STATS ref_count, OpenFlow 1.3 7.3.5.9), in one pass over the
    /// rules and one over the groups; each counts once however many of
    /// its actions name the group.
    pub fn group_ref_counts(&self) -> HashMap<u32, u32> {
        let mut n = HashMap::new();
        let mut seen: Vec<u32> = Vec::new();
        let mut count = |actions: &mut dyn Iterator<Item = &Action>| {
            seen.clear();
            seen.extend(actions.filter_map(|a| match a {
                Action::Group(g) => Some(*g),
                _ => None,
            }));
            seen.sort_unstable();
            seen.dedup();
            for g in &seen {
                *n.entry(*g).or_insert(0) += 1;
            }
        };
        for r in self.tables.iter().flat_map(|t| t.rules()) {
            count(&mut r.actions());
        }
        for g in self.groups.values() {
            count(&mut g.rt.buckets.iter().flat_map(|b| b.actions.iter()));
        }
        n
    }

    /// How many rules use each meter (METER_STATS flow_count), in one pass.
    pub fn meter_flow_counts(&self) -> HashMap<u32, u32> {
        let mut n = HashMap::new();
        for m in self
            .tables
            .iter()
            .flat_map(|t| t.rules())
            .filter_map(|r| r.meter())
        {
            *n.entry(m).or_insert(0) += 1;
        }
        n
    }

    /// Applies a METER_MOD. Deleting a meter removes the rules that use it.
    pub fn meter_mod(&mut self, mm: &MeterMod, now_ns: u64) -> Result<Vec<Removed>, OfpError> {
        let e =
            |c: MeterModFailedCode, d: &'static str| OfpError::new(ErrorCode::MeterModFailed(c), d);
        match mm.command {
            MeterModCommand::Add | MeterModCommand::Modify => {
                let add = mm.command == MeterModCommand::Add;
                if mm.meter_id == 0 || mm.meter_id > meter_no::MAX {
                    return Err(e(MeterModFailedCode::InvalidMeter, "meter id out of range"));
                }
                presence(
                    add,
                    self.meters.contains_key(&mm.meter_id),
                    e(MeterModFailedCode::MeterExists, "meter exists"),
                    e(MeterModFailedCode::UnknownMeter, "no such meter"),
                )?;
                let unit = mm.flags & (meter_flags::KBPS | meter_flags::PKTPS);
                let known = meter_flags::KBPS
                    | meter_flags::PKTPS
                    | meter_flags::BURST
                    | meter_flags::STATS;
                if unit == (meter_flags::KBPS | meter_flags::PKTPS) || mm.flags & !known != 0 {
                    return Err(e(MeterModFailedCode::BadFlags, "meter flags"));
                }
                if add && self.meters.len() >= self.config.max_meters {
                    return Err(e(MeterModFailedCode::OutOfMeters, "meter table full"));
                }
                if mm.bands.len() > self.config.max_bands {
                    return Err(e(MeterModFailedCode::OutOfBands, "too many bands"));
                }
                for b in &mm.bands {
                    match b {
                        MeterBand::Experimenter { .. } => {
                            return Err(e(
                                MeterModFailedCode::BadBand,
                                "no experimenter bands known",
                            ))
                        }
                        _ if b.rate() == 0 => {
                            return Err(e(MeterModFailedCode::BadRate, "band rate is zero"))
                        }
                        MeterBand::DscpRemark { prec_level, .. }
                            if *prec_level == 0 || *prec_level > 63 =>
                        {
                            return Err(e(
                                MeterModFailedCode::BadBandValue,
                                "prec_level out of range",
                            ))
                        }
                        _ => {}
                    }
                }
                let state = Arc::new(MeterState::new(mm.meter_id, mm.flags, &mm.bands));
                self.meters.insert(
                    mm.meter_id,
                    Meter {
                        meter_id: mm.meter_id,
                        created_ns: now_ns,
                        state,
                    },
                );
                Ok(Vec::new())
            }
            MeterModCommand::Delete => {
                let ids: HashSet<u32> = selected_ids(&self.meters, mm.meter_id, meter_no::ALL)
                    .into_iter()
                    .collect();
                for id in &ids {
                    self.meters.remove(id);
                }
                Ok(self.remove_rules_where(
                    |r| r.meter().is_some_and(|m| ids.contains(&m)),
                    FlowRemovedReason::Delete,
                ))
            }
            MeterModCommand::Unknown(_) => Err(e(
                MeterModFailedCode::BadCommand,
                "unknown meter-mod command",
            )),
        }
    }

    fn remove_rules_where(
        &mut self,
        f: impl Fn(&Rule) -> bool,
        reason: FlowRemovedReason,
    ) -> Vec<Removed> {
        let mut out = Vec::new();
        for table in &mut self.tables {
            let doomed: Vec<Arc<Rule>> = table.rules().filter(|r| f(r)).cloned().collect();
            for r in doomed {
                if let Some(rule) = table.remove(&r) {
                    self.flows -= 1;
                    out.push(Removed { rule, reason });
                }
            }
        }
        out
    }
}

/// The longest flow entry (`ofp_flow_stats`: 48 bytes, the match, the
/// instructions; as long as the FLOW_MOD that makes it) whose FLOW_STATS
/// reply fits one message: 65 535 less the reply's 16-byte header. A
/// longer one could never be reported, so it is refused.
pub const FLOW_ENTRY_MAX: usize = ofp::header::MAX_MSG_LEN - 16;

fn fits_flow_stats(match_len: usize, ins_len: usize) -> Result<(), OfpError> {
    if 48 + match_len + ins_len > FLOW_ENTRY_MAX {
        return Err(fm_err(
            FlowModFailedCode::Unknown0,
            "the flow entry would not fit a FLOW_STATS reply (65 535 bytes)",
        ));
    }
    Ok(())
}

/// The most buckets a group may have: its GROUP_STATS entry (40 bytes and
/// 16 per bucket) must fit one reply message (16-byte header).
pub const GROUP_BUCKETS_MAX: usize = (ofp::header::MAX_MSG_LEN - 16 - 40) / 16;

/// ADD needs the id free, MODIFY needs it taken.
fn presence(
    add: bool,
    exists: bool,
    if_exists: OfpError,
    if_missing: OfpError,
) -> Result<(), OfpError> {
    match (add, exists) {
        (true, true) => Err(if_exists),
        (false, false) => Err(if_missing),
        _ => Ok(()),
    }
}

/// The ids a DELETE names: every id for `all`, else `id` if it exists.
fn selected_ids<V>(map: &HashMap<u32, V>, id: u32, all: u32) -> Vec<u32> {
    if id == all {
        map.keys().copied().collect()
    } else {
        map.contains_key(&id).then_some(id).into_iter().collect()
    }
}

/// A copy of a rule's fields (counters shared), for building a new version.
fn clone_rule(r: &Rule) -> Rule {
    Rule {
        id: r.id,
        table_id: r.table_id,
        priority: r.priority,
        packed: r.packed.clone(),
        table_miss: r.table_miss,
        match_: r.match_.clone(),
        instructions: r.instructions.clone(),
        cookie: r.cookie,
        idle_timeout: r.idle_timeout,
        hard_timeout: r.hard_timeout,
        flags: r.flags,
        created_ns: r.created_ns,
        counters: r.counters.clone(),
    }
}

/// Which buckets of each group are live: the watched port is live (or
/// none is watched) and the watched group has a live bucket (or none is
/// watched). Worked out for every group at once, each group once (an
/// explicit stack, so a long chain of watched groups cannot exhaust the
/// thread's stack); a group met again while its own liveness is being
/// worked out (a loop GROUP_MOD refuses, kept safe here anyway) is not live.
fn bucket_liveness(groups: &HashMap<u32, Group>, ports: &[PortState]) -> HashMap<u32, Box<[bool]>> {
    // `ports` is sorted by number (`Pipeline::set_port`).
    let port_live = |p: u32| {
        p == port_no::ANY
            || ports
                .binary_search_by_key(&p, |x| x.port_no)
                .is_ok_and(|i| ports[i].live)
    };
    let mut live: HashMap<u32, bool> = HashMap::with_capacity(groups.len());
    let mut visiting: HashSet<u32> = HashSet::new();
    let mut stack: Vec<(u32, bool)> = Vec::new();
    for &root in groups.keys() {
        stack.push((root, false));
        while let Some((g, expanded)) = stack.pop() {
            let Some(grp) = groups.get(&g) else { continue };
            if expanded {
                let any = grp.rt.buckets.iter().any(|b| {
                    port_live(b.watch_port)
                        && (b.watch_group == group_no::ANY
                            || live.get(&b.watch_group).copied().unwrap_or(false))
                });
                live.insert(g, any);
                continue;
            }
            if live.contains_key(&g) || !visiting.insert(g) {
                continue;
            }
            stack.push((g, true));
            for b in &grp.rt.buckets {
                let w = b.watch_group;
                if w != group_no::ANY && !live.contains_key(&w) && !visiting.contains(&w) {
                    stack.push((w, false));
                }
            }
        }
    }
    groups
        .iter()
        .map(|(id, grp)| {
            let v: Box<[bool]> = grp
                .rt
                .buckets
                .iter()
                .map(|b| {
                    port_live(b.watch_port)
                        && (b.watch_group == group_no::ANY
                            || live.get(&b.watch_group).copied().unwrap_or(false))
                })
                .collect();
            (*id, v)
        })
        .collect()
}

/// One rule's FLOW_STATS entry at `now_ns` (counters as they are now).
pub fn flow_stats_entry(r: &Rule, now_ns: u64) -> FlowStats {
    let t = r.counters.totals();
    let (duration_sec, duration_nsec) = age(r, now_ns);
    FlowStats {
        table_id: r.table_id,
        duration_sec,
        duration_nsec,
        priority: r.priority,
        idle_timeout: r.idle_timeout,
        hard_timeout: r.hard_timeout,
        flags: r.flags,
        cookie: r.cookie,
        packet_count: t.packets,
        byte_count: t.bytes,
        match_: r.match_.get(),
        instructions: r.instructions.to_vec(),
    }
}

/// How long `r` has been installed at `now_ns`: (seconds, nanoseconds).
fn age(r: &Rule, now_ns: u64) -> (u32, u32) {
    let d = now_ns.saturating_sub(r.created_ns);
    ((d / 1_000_000_000) as u32, (d % 1_000_000_000) as u32)
}
