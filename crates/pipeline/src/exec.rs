//! What happens to a packet: the published [`Snapshot`] of the pipeline and
//! a [`Worker`] that runs packets through it.
//!
//! For each packet: extract the flow key, look it up in table 0, run the
//! rule's instructions in the spec's order (meter, apply-actions,
//! clear-actions, write-actions, write-metadata, goto-table), repeat for
//! each goto, then execute the action set in the spec's order (5.10: copy
//! TTL in, pop, push-MPLS, push-PBB, push-VLAN, copy TTL out, decrement TTL,
//! set, qos, group or output). Headers are edited in place with incremental
//! checksums; the key is re-extracted only when the next lookup needs it.
//!
//! Outputs are collected in the worker's reusable list; an output made
//! before the packet is modified again gets its own copy of the bytes, an
//! output of the final packet shares the caller's buffer (no copy in the
//! common case). Reserved ports are resolved here (IN_PORT, ALL, FLOOD
//! against the port table); CONTROLLER, LOCAL and NORMAL are returned as
//! such for the datapath and the agent.

use std::collections::HashMap;
use std::sync::Arc;

use ofp::msg::flow::PacketInReason;
use ofp::msg::group::GroupType;
use ofp::oxm::{MatchEntry, Oxm, OxmField};
use ofp::port::port_no;
use ofp::{Action, Instruction};
use packet::{extract, slots as s, FlowKey, FrameBuf, Offsets, TunnelDst, TunnelMeta};

use crate::changes::ChangeLog;
use crate::edit::{self, Edit, Ttl};
use crate::emc::Emc;
use crate::meter::{MeterState, Verdict};
use crate::rule::Counters;
use crate::trace::{describe_key, describe_rule};

/// A port as the pipeline sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortState {
    pub port_no: u32,
    /// Link up and not administratively down.
    pub live: bool,
    /// OFPPC_NO_FLOOD: left out of FLOOD.
    pub no_flood: bool,
    /// OFPPC_NO_FWD: nothing is sent out of it.
    pub no_fwd: bool,
    /// OFPPC_NO_RECV: whatever it receives is dropped (the datapath checks
    /// this once per received batch).
    pub no_recv: bool,
}

impl PortState {
    /// A live port with no OFPPC_* bit set.
    pub fn up(port_no: u32) -> PortState {
        PortState {
            port_no,
            live: true,
            no_flood: false,
            no_fwd: false,
            no_recv: false,
        }
    }
}

/// A group as workers run it.
#[derive(Debug)]
pub struct GroupRt {
    pub group_type: GroupType,
    pub buckets: Vec<ofp::msg::group::Bucket>,
    pub counters: Arc<Counters>,
    pub bucket_counters: Vec<Arc<Counters>>,
    pub total_weight: u32,
}

/// Per-table lookup (`packets`) and matched (`bytes`) counters, per worker.
pub type TableCounters = Counters;

/// An immutable version of the pipeline, shared by all workers.
#[derive(Debug)]
pub struct Snapshot {
    pub version: u64,
    /// The rule changes of the last versions: what a cache entry of an
    /// earlier version is checked against.
    pub changes: Arc<ChangeLog>,
    /// One classifier per table (shared with the control plane, which
    /// brings a copy no snapshot holds up to date for the next version:
    /// [`crate::published`]).
    pub tables: Arc<crate::published::Tables>,
    pub table_counters: Arc<Vec<TableCounters>>,
    pub groups: HashMap<u32, Arc<GroupRt>>,
    /// Which buckets of each group are live (watch port up, watched group
    /// live), worked out from the port table when a group or a port
    /// changed (shared by the versions in between), so a packet never
    /// walks a chain of watched groups.
    pub bucket_live: Arc<HashMap<u32, Box<[bool]>>>,
    pub meters: HashMap<u32, Arc<MeterState>>,
    /// The ports, with the FLOOD and ALL sets ([`crate::ports`]).
    pub ports: Arc<crate::ports::PortTable>,
    /// OFPC_INVALID_TTL_TO_CONTROLLER.
    pub invalid_ttl_to_controller: bool,
}

/// Why a packet goes to the controller, and what the PACKET_IN says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToController {
    pub reason: PacketInReason,
    pub table_id: u8,
    pub cookie: u64,
    pub max_len: u16,
}

/// One copy of the packet leaving the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// A port number, or CONTROLLER / LOCAL / NORMAL.
    pub port: u32,
    pub queue: Option<u32>,
    /// The bytes, when they differ from the final packet.
    pub data: Option<Vec<u8>>,
    /// Set for port CONTROLLER.
    pub controller: Option<ToController>,
    /// The packet's tunnel metadata at the output: where a tunnel port
    /// sends it (`tun_dst`) and with which VNI (`tun_id`). A packet that
    /// came from a tunnel and still has the destination it arrived with
    /// (this host's own address) has none here: a flow-based tunnel port
    /// does not send it back to this host (Open vSwitch refuses that too),
    /// which would loop between two tunnel ports for ever.
    pub tunnel: TunnelDst,
}

/// A set_field (a load is one with a mask) or a move in an action set:
/// `Copy`, so that emptying the set for each packet costs no drop code
/// (a `Vec<Action>` here measured 5-10 ns per packet more).
#[derive(Clone, Copy)]
enum SetOrMove {
    Set(Oxm),
    Move(ofp::action::RegMove),
}

#[derive(Default)]
struct ActionSet {
    copy_ttl_in: bool,
    pop_vlan: bool,
    pop_mpls: Option<u16>,
    pop_pbb: bool,
    push_mpls: Option<u16>,
    push_pbb: Option<u16>,
    push_vlan: Option<u16>,
    copy_ttl_out: bool,
    dec_mpls_ttl: bool,
    dec_nw_ttl: bool,
    set_mpls_ttl: Option<u8>,
    set_nw_ttl: Option<u8>,
    /// set_field, load and move actions, in the order written: a
    /// set_field replaces an earlier set_field of its field (one action
    /// per type, spec 5.10); loads and moves are kept in order as Open
    /// vSwitch keeps them (a 128-bit load is two 64-bit ones).
    set_or_move: Vec<SetOrMove>,
    set_queue: Option<u32>,
    group: Option<u32>,
    output: Option<(u32, u16)>,
}

impl ActionSet {
    fn clear(&mut self) {
        let fields = std::mem::take(&mut self.set_or_move);
        *self = ActionSet {
            set_or_move: fields,
            ..ActionSet::default()
        };
        self.set_or_move.clear();
    }

    fn is_empty(&self) -> bool {
        !(self.copy_ttl_in
            || self.pop_vlan
            || self.pop_pbb
            || self.copy_ttl_out
            || self.dec_mpls_ttl
            || self.dec_nw_ttl)
            && self.pop_mpls.is_none()
            && self.push_mpls.is_none()
            && self.push_pbb.is_none()
            && self.push_vlan.is_none()
            && self.set_mpls_ttl.is_none()
            && self.set_nw_ttl.is_none()
            && self.set_or_move.is_empty()
            && self.set_queue.is_none()
            && self.group.is_none()
            && self.output.is_none()
    }

    /// Write-actions: each action replaces the set's action of its type.
    fn write(&mut self, actions: &[Action]) {
        for a in actions {
            match a {
                Action::CopyTtlIn => self.copy_ttl_in = true,
                Action::PopVlan => self.pop_vlan = true,
                Action::PopMpls(e) => self.pop_mpls = Some(*e),
                Action::PopPbb => self.pop_pbb = true,
                Action::PushMpls(e) => self.push_mpls = Some(*e),
                Action::PushPbb(e) => self.push_pbb = Some(*e),
                Action::PushVlan(e) => self.push_vlan = Some(*e),
                Action::CopyTtlOut => self.copy_ttl_out = true,
                Action::DecMplsTtl => self.dec_mpls_ttl = true,
                Action::DecNwTtl => self.dec_nw_ttl = true,
                Action::SetMplsTtl(t) => self.set_mpls_ttl = Some(*t),
                Action::SetNwTtl(t) => self.set_nw_ttl = Some(*t),
                Action::SetField(MatchEntry::Basic(o)) => {
                    self.set_or_move
                        .retain(|x| !matches!(x, SetOrMove::Set(y) if y.field == o.field && y.mask.is_none()));
                    self.set_or_move.push(SetOrMove::Set(*o));
                }
                Action::RegLoad(l) => self.set_or_move.push(SetOrMove::Set(l.masked())),
                Action::RegMove(m) => self.set_or_move.push(SetOrMove::Move(*m)),
                Action::SetQueue(q) => self.set_queue = Some(*q),
                Action::Group(g) => self.group = Some(*g),
                Action::Output { port, max_len } => self.output = Some((*port, *max_len)),
                Action::SetField(MatchEntry::Other(_)) | Action::Experimenter { .. } => {}
            }
        }
    }

    /// The set as an ordered action list (spec 5.10).
    fn ordered(&self, out: &mut Vec<Action>) {
        out.clear();
        if self.copy_ttl_in {
            out.push(Action::CopyTtlIn);
        }
        if self.pop_vlan {
            out.push(Action::PopVlan);
        }
        if let Some(e) = self.pop_mpls {
            out.push(Action::PopMpls(e));
        }
        if self.pop_pbb {
            out.push(Action::PopPbb);
        }
        if let Some(e) = self.push_mpls {
            out.push(Action::PushMpls(e));
        }
        if let Some(e) = self.push_pbb {
            out.push(Action::PushPbb(e));
        }
        if let Some(e) = self.push_vlan {
            out.push(Action::PushVlan(e));
        }
        if self.copy_ttl_out {
            out.push(Action::CopyTtlOut);
        }
        if self.dec_mpls_ttl {
            out.push(Action::DecMplsTtl);
        }
        if self.dec_nw_ttl {
            out.push(Action::DecNwTtl);
        }
        if let Some(t) = self.set_mpls_ttl {
            out.push(Action::SetMplsTtl(t));
        }
        if let Some(t) = self.set_nw_ttl {
            out.push(Action::SetNwTtl(t));
        }
        out.extend(self.set_or_move.iter().map(|x| match x {
            SetOrMove::Set(o) => Action::SetField(MatchEntry::Basic(*o)),
            SetOrMove::Move(m) => Action::RegMove(*m),
        }));
        if let Some(q) = self.set_queue {
            out.push(Action::SetQueue(q));
        }
        match (self.group, self.output) {
            (Some(g), _) => out.push(Action::Group(g)),
            (None, Some((port, max_len))) => out.push(Action::Output { port, max_len }),
            (None, None) => {}
        }
    }
}

/// The state a packet carries through the pipeline.
struct Ctx<'a> {
    snap: &'a Snapshot,
    worker: usize,
    in_port: u32,
    now_ns: u64,
    queue: Option<u32>,
    /// Outputs from this index on without their own bytes carry "the packet
    /// being worked on"; they get a copy before it changes.
    pending_from: usize,
    /// Set when headers changed since the key was extracted.
    key_stale: bool,
    /// The table and rule being executed (for PACKET_IN).
    table_id: u8,
    cookie: u64,
    table_miss: bool,
    dropped: bool,
    /// Group buckets run so far for this packet.
    buckets_run: u32,
}

/// A datapath worker: run packets with [`Worker::process`].
pub struct Worker {
    /// This worker's counter slot.
    pub id: usize,
    exec: Exec,
    emc: Option<Emc>,
}

/// Default exact-match cache size (entries).
pub const EMC_ENTRIES: usize = 8192;

impl Worker {
    /// A worker with an exact-match cache of [`EMC_ENTRIES`] entries.
    pub fn new(id: usize) -> Worker {
        Worker::with_cache(id, EMC_ENTRIES)
    }

    /// A worker with a cache of `entries` entries (0: no cache).
    pub fn with_cache(id: usize, entries: usize) -> Worker {
        Worker {
            id,
            exec: Exec::new(),
            emc: (entries > 0).then(|| Emc::new(entries)),
        }
    }

    /// The flow key of the last packet processed (as last extracted).
    pub fn key(&self) -> &FlowKey {
        &self.exec.key
    }

    /// Edits (set_field, TTL, push/pop) skipped so far because the packet
    /// had no such header: a group bucket's action list meets packets that
    /// validation could not know.
    pub fn skipped_edits(&self) -> u64 {
        self.exec.skipped_edits
    }

    /// Outputs and group buckets dropped so far because one packet asked
    /// for more than [`MAX_OUTPUTS_PER_PACKET`] copies or
    /// [`MAX_BUCKETS_PER_PACKET`] bucket runs.
    pub fn over_limit(&self) -> u64 {
        self.exec.over_limit
    }

    /// Cache hits and misses so far.
    pub fn cache_stats(&self) -> (u64, u64) {
        self.emc.as_ref().map_or((0, 0), |e| (e.hits, e.misses))
    }

    /// Cache hits so far on entries of an earlier version that no rule
    /// change since touched (counted in the hits too).
    pub fn cache_kept(&self) -> u64 {
        self.emc.as_ref().map_or(0, |e| e.kept)
    }

    /// Runs one packet received on `in_port` through `snap`. The frame may
    /// be edited in place (a `Vec`, or any [`FrameBuf`]: a frame left in
    /// its receive memory); outputs without their own `data` carry the
    /// frame as it is when this returns.
    pub fn process<B: FrameBuf + ?Sized>(
        &mut self,
        snap: &Snapshot,
        in_port: u32,
        frame: &mut B,
        now_ns: u64,
    ) -> &[Output] {
        self.process_tunneled(snap, in_port, &TunnelMeta::default(), frame, now_ns)
    }

    /// [`Worker::process`] for a packet that came out of a tunnel port
    /// with metadata `tun` (its VNI and outer addresses, which flows match
    /// as `tun_id`, `tun_src`, `tun_dst`).
    pub fn process_tunneled<B: FrameBuf + ?Sized>(
        &mut self,
        snap: &Snapshot,
        in_port: u32,
        tun: &TunnelMeta,
        frame: &mut B,
        now_ns: u64,
    ) -> &[Output] {
        self.exec.process::<false, _>(
            self.id,
            self.emc.as_mut(),
            snap,
            in_port,
            tun,
            frame,
            now_ns,
        )
    }
}

impl Worker {
    /// Runs a PACKET_OUT's `actions` on `frame` as if it had arrived on
    /// `in_port` (CONTROLLER when it came from nowhere). An output to
    /// TABLE submits the packet to the pipeline from table 0 and its
    /// outputs join the list. Every output carries its own bytes. This is
    /// the control path (allocation is fine here).
    pub fn packet_out(
        &mut self,
        snap: &Snapshot,
        in_port: u32,
        actions: &[Action],
        frame: &mut Vec<u8>,
        now_ns: u64,
    ) -> Vec<Output> {
        let e = &mut self.exec;
        e.outputs.clear();
        e.set.clear();
        e.metadata = 0;
        e.tun = TunnelMeta::default();
        e.tun_arrived = (0, 0);
        e.reextract(frame, in_port);
        let mut cx = Ctx {
            snap,
            worker: self.id,
            in_port,
            now_ns,
            queue: None,
            pending_from: 0,
            key_stale: false,
            table_id: 0,
            cookie: u64::MAX,
            table_miss: false,
            dropped: false,
            buckets_run: 0,
        };
        e.run_actions::<false, _>(actions, frame, &mut cx, 0);
        let mut buckets = cx.buckets_run;
        let outs: Vec<Output> = e
            .outputs
            .drain(..)
            .map(|mut o| {
                o.data.get_or_insert_with(|| frame.clone());
                o
            })
            .collect();
        // The per-packet limits hold for the PACKET_OUT as a whole: its
        // submissions to the tables share one budget of outputs and
        // bucket runs with its own actions.
        let mut result = Vec::with_capacity(outs.len());
        for o in outs {
            if o.port != port_no::TABLE {
                result.push(o);
                continue;
            }
            if result.len() >= MAX_OUTPUTS_PER_PACKET || buckets >= MAX_BUCKETS_PER_PACKET {
                self.exec.over_limit += 1;
                continue;
            }
            let mut f = o.data.unwrap_or_default();
            let id = self.id;
            self.exec.buckets_carried = buckets;
            let room = MAX_OUTPUTS_PER_PACKET - result.len();
            let r = self.exec.process::<false, _>(
                id,
                None,
                snap,
                in_port,
                &o.tunnel.meta(),
                &mut f,
                now_ns,
            );
            let over = r.len().saturating_sub(room) as u64;
            result.extend(r.iter().take(room).cloned().map(|mut x| {
                x.data.get_or_insert_with(|| f.clone());
                x
            }));
            self.exec.over_limit += over;
            buckets = self.exec.buckets_used;
        }
        result
    }
}

/// Runs `frame` through `snap` as if it arrived on `in_port`, touching no
/// counter, meter or cache; returns what each step did, the outputs (each
/// with its bytes) and the packet as it ends. See [`crate::trace`].
pub(crate) fn trace_run(
    snap: &Snapshot,
    in_port: u32,
    tun: &TunnelMeta,
    frame: &[u8],
) -> (Vec<String>, Vec<Output>, Vec<u8>) {
    let mut e = Exec::new();
    let mut f = frame.to_vec();
    let outputs = e
        .process::<true, _>(0, None, snap, in_port, tun, &mut f, 0)
        .to_vec();
    let outputs = outputs
        .into_iter()
        .map(|mut o| {
            o.data.get_or_insert_with(|| f.clone());
            o
        })
        .collect();
    (std::mem::take(&mut e.log), outputs, f)
}

/// The per-packet execution state a worker reuses.
struct Exec {
    key: FlowKey,
    off: Offsets,
    outputs: Vec<Output>,
    set: ActionSet,
    scratch: Vec<Action>,
    metadata: u64,
    /// The packet's tunnel metadata: what it came with from a tunnel port,
    /// as flows have set it since.
    tun: TunnelMeta,
    /// The destination it came with (this host's address; zero if it did
    /// not come from a tunnel).
    tun_arrived: (u32, u128),
    /// What a trace run did, line by line (only written when tracing).
    log: Vec<String>,
    /// The trace's current indentation (nesting of groups).
    indent: usize,
    /// Edits skipped because the packet had no such header (see [`edit`]).
    skipped_edits: u64,
    /// Outputs and group buckets dropped over the per-packet limits.
    over_limit: u64,
    /// Bucket runs a PACKET_OUT has already spent, for the pipeline run of
    /// its output:TABLE to go on from (0 otherwise).
    buckets_carried: u32,
    /// Bucket runs the last `process` ended with.
    buckets_used: u32,
}

const MAX_GROUP_DEPTH: u32 = 16;

/// The fields of a packet's tunnel metadata.
fn is_tunnel_field(f: OxmField) -> bool {
    matches!(
        f,
        OxmField::TunnelId
            | OxmField::TunIpv4Src
            | OxmField::TunIpv4Dst
            | OxmField::TunIpv6Src
            | OxmField::TunIpv6Dst
    )
}

/// Copies of one packet the pipeline may send (ports, controller): more
/// are dropped and counted ([`Worker::over_limit`]). Chained ALL groups
/// multiply copies (16 levels of 2 buckets would be 65 536); a flood on a
/// bridge of this many ports is far beyond any bridge sluice runs.
pub const MAX_OUTPUTS_PER_PACKET: usize = 1024;

/// Group buckets one packet may run, all groups together: a budget on the
/// work chained groups can ask for, outputs or not.
pub const MAX_BUCKETS_PER_PACKET: u32 = 1024;

impl Exec {
    fn new() -> Exec {
        Exec {
            key: FlowKey::default(),
            off: Offsets::default(),
            outputs: Vec::with_capacity(8),
            set: ActionSet::default(),
            scratch: Vec::with_capacity(16),
            metadata: 0,
            tun: TunnelMeta::default(),
            tun_arrived: (0, 0),
            log: Vec::new(),
            indent: 0,
            skipped_edits: 0,
            over_limit: 0,
            buckets_carried: 0,
            buckets_used: 0,
        }
    }

    /// Writes one trace line (only called when tracing).
    fn note(&mut self, line: String) {
        let pad = "    ".repeat(self.indent);
        self.log.push(format!("{pad}{line}"));
    }

    /// Runs one packet. With `T` (a trace), nothing is counted, meters are
    /// not charged, the cache is not used, and every step is written to
    /// `log`; without it this is the fast path, and the trace code is
    /// compiled out.
    #[allow(clippy::too_many_arguments)] // the packet, where it came from, and the context
    fn process<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        worker: usize,
        mut emc: Option<&mut Emc>,
        snap: &Snapshot,
        in_port: u32,
        tun: &TunnelMeta,
        frame: &mut B,
        now_ns: u64,
    ) -> &[Output] {
        self.outputs.clear();
        self.set.clear();
        self.metadata = 0;
        self.tun = *tun;
        self.tun_arrived = (tun.ipv4_dst, tun.ipv6_dst);
        self.reextract(frame, in_port);
        if T {
            self.note(format!("Flow: {}", describe_key(&self.key)));
        }
        let mut cx = Ctx {
            snap,
            worker,
            in_port,
            now_ns,
            queue: None,
            pending_from: 0,
            key_stale: false,
            table_id: 0,
            cookie: 0,
            table_miss: false,
            dropped: false,
            buckets_run: std::mem::take(&mut self.buckets_carried),
        };
        let mut table = 0usize;
        while let Some(cls) = snap.tables.get(table) {
            if cx.key_stale {
                self.reextract(frame, in_port);
                cx.key_stale = false;
                if T {
                    self.note(format!("Flow now: {}", describe_key(&self.key)));
                }
            }
            // Metadata can change between lookups (write_metadata); the
            // tunnel words follow `tun` where it changes (write_field).
            self.key.set(s::METADATA, self.metadata);
            let tc = snap.table_counters.get(table).filter(|_| !T);
            let found = match emc.as_deref_mut().filter(|_| !T) {
                Some(e) => match e.find(snap.version, &snap.changes, table as u8, &self.key) {
                    Ok(i) => e.rule(i),
                    Err(i) => {
                        let r = cls.lookup_data(&self.key);
                        e.put(i, snap.version, table as u8, &self.key, r);
                        r
                    }
                },
                None => cls.lookup_data(&self.key),
            };
            let Some(rule) = found else {
                // No match and no table-miss entry: the packet is dropped.
                if let Some(c) = tc {
                    c.hit(worker, 0, now_ns);
                }
                if T {
                    self.note(format!("{table:>2}. No match: drop (no table-miss rule)."));
                }
                {
                    self.buckets_used = cx.buckets_run;
                    return &self.outputs;
                }
            };
            if let Some(c) = tc {
                c.hit(worker, 1, now_ns);
            }
            if T {
                self.note(format!("{table:>2}. {}", describe_rule(rule)));
                self.indent += 1;
            } else {
                rule.counters.hit(worker, frame.len() as u64, now_ns);
            }
            cx.table_id = table as u8;
            cx.cookie = rule.cookie;
            cx.table_miss = rule.table_miss;
            let mut goto = None;
            for ins in rule.instructions.iter() {
                match ins {
                    Instruction::Meter(m) => {
                        if T {
                            let what = if snap.meters.contains_key(m) {
                                "not charged by a trace"
                            } else {
                                "no such meter: ignored"
                            };
                            self.note(format!("meter:{m} ({what})"));
                        } else if let Some(ms) = snap.meters.get(m) {
                            match ms.apply(frame.len(), now_ns) {
                                Verdict::Pass => {}
                                Verdict::Drop => {
                                    self.buckets_used = cx.buckets_run;
                                    return &self.outputs;
                                }
                                Verdict::Remark(p) => self.remark(frame, &mut cx, p),
                            }
                        }
                    }
                    Instruction::ApplyActions(list) => {
                        self.run_actions::<T, _>(list, frame, &mut cx, 0);
                        if cx.dropped {
                            self.buckets_used = cx.buckets_run;
                            return &self.outputs;
                        }
                    }
                    Instruction::ClearActions => {
                        if T {
                            self.note("clear_actions".into());
                        }
                        self.set.clear()
                    }
                    Instruction::WriteActions(list) => {
                        if T {
                            self.note(format!(
                                "write_actions({})",
                                ofp::text::format_actions(list)
                            ));
                        }
                        self.set.write(list)
                    }
                    Instruction::WriteMetadata { metadata, mask } => {
                        self.metadata = (self.metadata & !mask) | (metadata & mask);
                        if T {
                            self.note(format!("write_metadata -> metadata={:#x}", self.metadata));
                        }
                    }
                    Instruction::GotoTable(t) => goto = Some(*t as usize),
                    Instruction::Experimenter { .. } => {}
                }
            }
            if T {
                if let Some(t) = goto {
                    self.note(format!("goto_table:{t}"));
                }
                self.indent -= 1;
            }
            match goto {
                Some(t) if t > table => table = t,
                _ => break,
            }
        }
        if !self.set.is_empty() {
            let mut list = std::mem::take(&mut self.scratch);
            self.set.ordered(&mut list);
            if T {
                self.note(format!("Action set: {}", ofp::text::format_actions(&list)));
                self.indent += 1;
            }
            self.run_actions::<T, _>(&list, frame, &mut cx, 0);
            if T {
                self.indent -= 1;
            }
            self.scratch = list;
        } else if T {
            self.note("Action set: empty".into());
        }
        self.buckets_used = cx.buckets_run;
        &self.outputs
    }

    fn reextract(&mut self, frame: &[u8], in_port: u32) {
        self.off = extract(frame, in_port, &mut self.key);
        self.key.set_tunnel(&self.tun);
    }

    /// Follows up an edit: new offsets after a layout change, a count (and
    /// a trace line) for an edit the packet had no header for.
    fn after_edit<const T: bool>(&mut self, r: Edit, frame: &[u8], cx: &Ctx<'_>) {
        match r {
            Edit::Done => {}
            Edit::Layout => self.reextract(frame, cx.in_port),
            Edit::Skipped if T => self.note("    skipped: the packet has no such header".into()),
            Edit::Skipped => self.skipped_edits += 1,
        }
    }

    /// Gives every pending "final packet" output its own copy before the
    /// packet changes.
    fn before_change(&mut self, frame: &[u8], cx: &mut Ctx<'_>) {
        for o in self.outputs[cx.pending_from..]
            .iter_mut()
            .filter(|o| o.data.is_none())
        {
            o.data = Some(frame.to_vec());
        }
        cx.key_stale = true;
    }

    fn remark(&mut self, frame: &mut [u8], cx: &mut Ctx<'_>, prec: u8) {
        if self.key.flags() & (packet::flags::IPV4 | packet::flags::IPV6) == 0 {
            return;
        }
        // Raise the drop precedence (DSCP bits 2..1) by `prec`, saturating.
        let dscp = self.key.get(s::IP_DSCP) as u8;
        let dp = ((dscp >> 1) & 3).saturating_add(prec).min(3);
        let new = (dscp & !0b110) | (dp << 1);
        self.before_change(frame, cx);
        edit::set_field(frame, &self.off, &Oxm::exact(OxmField::IpDscp, new as u128));
    }

    fn run_actions<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        list: &[Action],
        frame: &mut B,
        cx: &mut Ctx<'_>,
        depth: u32,
    ) {
        for a in list {
            if T && !matches!(a, Action::Output { .. } | Action::Group(_)) {
                self.note(ofp::text::format_action(a));
            }
            match a {
                Action::Output { port, max_len } => self.output::<T>(*port, *max_len, cx),
                Action::Group(g) => self.group::<T>(*g, frame, cx, depth),
                Action::SetQueue(q) => cx.queue = Some(*q),
                Action::SetField(MatchEntry::Basic(o)) => self.write_field::<T>(o, frame, cx),
                Action::RegLoad(l) => self.write_field::<T>(&l.masked(), frame, cx),
                Action::RegMove(m) => {
                    let v = self.field_value(m.src, frame, cx) >> m.src_ofs;
                    let mask = ofp::action::bits_mask(m.dst_ofs, m.n_bits);
                    let o = Oxm::masked(
                        m.dst,
                        v.checked_shl(m.dst_ofs as u32).unwrap_or(0) & mask,
                        mask,
                    );
                    if T {
                        self.note(format!(
                            "    -> {}",
                            ofp::text::format_action(&Action::SetField(MatchEntry::Basic(o)))
                        ));
                    }
                    self.write_field::<T>(&o, frame, cx);
                }
                Action::PushVlan(t)
                | Action::PushMpls(t)
                | Action::PopMpls(t)
                | Action::PushPbb(t) => {
                    self.before_change(frame, cx);
                    let r = match a {
                        Action::PushVlan(_) => edit::push_vlan(frame, &self.off, *t),
                        Action::PushMpls(_) => edit::push_mpls(frame, &self.off, *t),
                        Action::PopMpls(_) => edit::pop_mpls(frame, &self.off, *t),
                        _ => edit::push_pbb(frame, &self.off, *t),
                    };
                    self.after_edit::<T>(r, frame, cx);
                }
                Action::PopVlan | Action::PopPbb => {
                    self.before_change(frame, cx);
                    let r = if *a == Action::PopVlan {
                        edit::pop_vlan(frame, &self.off)
                    } else {
                        edit::pop_pbb(frame, &self.off)
                    };
                    self.after_edit::<T>(r, frame, cx);
                }
                Action::SetNwTtl(_)
                | Action::DecNwTtl
                | Action::SetMplsTtl(_)
                | Action::DecMplsTtl => {
                    self.before_change(frame, cx);
                    let r = match a {
                        Action::SetNwTtl(t) => edit::nw_ttl(frame, &self.off, Some(*t)),
                        Action::DecNwTtl => edit::nw_ttl(frame, &self.off, None),
                        Action::SetMplsTtl(t) => edit::mpls_ttl(frame, &self.off, Some(*t)),
                        _ => edit::mpls_ttl(frame, &self.off, None),
                    };
                    if r == Ttl::Skipped {
                        self.after_edit::<T>(Edit::Skipped, frame, cx);
                    }
                    if r == Ttl::Expired {
                        if T {
                            self.note("    TTL expired: the packet is dropped here".into());
                        }
                        if cx.snap.invalid_ttl_to_controller
                            && self.outputs.len() >= MAX_OUTPUTS_PER_PACKET
                        {
                            self.over_limit += 1;
                        } else if cx.snap.invalid_ttl_to_controller {
                            self.outputs.push(Output {
                                port: port_no::CONTROLLER,
                                queue: None,
                                data: Some(frame.to_vec()),
                                controller: Some(ToController {
                                    reason: PacketInReason::InvalidTtl,
                                    table_id: cx.table_id,
                                    cookie: cx.cookie,
                                    max_len: ofp::action::OFPCML_NO_BUFFER,
                                }),
                                tunnel: self.tun.dst(),
                            });
                        }
                        cx.dropped = true;
                        return;
                    }
                }
                Action::CopyTtlOut | Action::CopyTtlIn => {
                    self.before_change(frame, cx);
                    let done = edit::copy_ttl(frame, &self.off, *a == Action::CopyTtlOut);
                    if !done {
                        self.after_edit::<T>(Edit::Skipped, frame, cx);
                    }
                }
                Action::SetField(MatchEntry::Other(_)) | Action::Experimenter { .. } => {}
            }
        }
    }

    /// Where a tunnel port sends the packet as it is now: not back to the
    /// address it arrived at (see [`Output::tunnel`]).
    #[inline]
    fn out_tunnel(&self) -> TunnelDst {
        let mut d = self.tun.dst();
        if (self.tun.ipv4_dst, self.tun.ipv6_dst) == self.tun_arrived {
            d.ipv4_dst = 0;
            d.ipv6_dst = [0; 16];
        }
        d
    }

    /// The packet's current value of field `f` (its metadata, or its
    /// headers as they are now).
    fn field_value(&mut self, f: OxmField, frame: &[u8], cx: &mut Ctx<'_>) -> u128 {
        let t = &self.tun;
        match f {
            OxmField::Metadata => self.metadata as u128,
            OxmField::TunnelId => t.id as u128,
            OxmField::TunIpv4Src => t.ipv4_src as u128,
            OxmField::TunIpv4Dst => t.ipv4_dst as u128,
            OxmField::TunIpv6Src => t.ipv6_src,
            OxmField::TunIpv6Dst => t.ipv6_dst,
            _ => {
                if cx.key_stale {
                    self.reextract(frame, cx.in_port);
                    cx.key_stale = false;
                }
                crate::matchkey::read_field(&self.key, f).unwrap_or(0)
            }
        }
    }

    /// Writes `o.value` into the bits of field `o.field` its mask selects
    /// (all of them without a mask): metadata in place, headers by
    /// [`edit::set_field`].
    fn write_field<const T: bool>(&mut self, o: &Oxm, frame: &mut [u8], cx: &mut Ctx<'_>) {
        let full = o.field.width_mask();
        let m = o.mask.unwrap_or(full) & full;
        let merge = |old: u128| (old & !m) | (o.value & m);
        if is_tunnel_field(o.field) {
            let t = &mut self.tun;
            match o.field {
                OxmField::TunnelId => t.id = merge(t.id as u128) as u64,
                OxmField::TunIpv4Src => t.ipv4_src = merge(t.ipv4_src as u128) as u32,
                OxmField::TunIpv4Dst => t.ipv4_dst = merge(t.ipv4_dst as u128) as u32,
                OxmField::TunIpv6Src => t.ipv6_src = merge(t.ipv6_src),
                _ => t.ipv6_dst = merge(t.ipv6_dst),
            }
            // The next lookup sees it.
            self.key.set_tunnel(&self.tun);
            return;
        }
        match o.field {
            OxmField::Metadata => self.metadata = merge(self.metadata as u128) as u64,
            _ => {
                let exact = if m == full {
                    Oxm::exact(o.field, o.value & full)
                } else {
                    let old = self.field_value(o.field, frame, cx);
                    Oxm::exact(o.field, merge(old) & o.field.full_mask())
                };
                self.before_change(frame, cx);
                let r = edit::set_field(frame, &self.off, &exact);
                self.after_edit::<T>(r, frame, cx);
            }
        }
    }

    fn push(&mut self, port: u32, cx: &mut Ctx<'_>, controller: Option<ToController>) {
        if self.outputs.len() >= MAX_OUTPUTS_PER_PACKET {
            self.over_limit += 1;
            return;
        }
        self.outputs.push(Output {
            port,
            queue: cx.queue,
            data: None,
            controller,
            // The controller hears the packet's metadata as it is.
            tunnel: if controller.is_some() {
                self.tun.dst()
            } else {
                self.out_tunnel()
            },
        });
    }

    fn output<const T: bool>(&mut self, port: u32, max_len: u16, cx: &mut Ctx<'_>) {
        let before = self.outputs.len();
        if T && before >= MAX_OUTPUTS_PER_PACKET {
            self.note(format!(
                "output:{} -> dropped: more than {MAX_OUTPUTS_PER_PACKET} outputs for one packet",
                ofp::text::format_port(port)
            ));
        }
        self.output_to(port, max_len, cx);
        if T {
            let to: Vec<String> = self.outputs[before..]
                .iter()
                .map(|o| ofp::text::format_port(o.port))
                .collect();
            let what = if to.is_empty() {
                " -> nothing: the port is the ingress port, down or no_fwd".to_string()
            } else if port == port_no::ALL || port == port_no::FLOOD {
                format!(" -> {}", to.join(","))
            } else {
                String::new()
            };
            let a = Action::Output { port, max_len };
            self.note(format!("{}{what}", ofp::text::format_action(&a)));
        }
    }

    fn output_to(&mut self, port: u32, max_len: u16, cx: &mut Ctx<'_>) {
        match port {
            port_no::IN_PORT => self.push(cx.in_port, cx, None),
            port_no::ALL => {
                for p in cx.snap.ports.all_from(cx.in_port) {
                    self.push(p, cx, None);
                }
            }
            port_no::FLOOD => {
                for p in cx.snap.ports.flood_from(cx.in_port) {
                    self.push(p, cx, None);
                }
            }
            port_no::CONTROLLER => {
                let reason = if cx.table_miss {
                    PacketInReason::NoMatch
                } else {
                    PacketInReason::Action
                };
                let meta = ToController {
                    reason,
                    table_id: cx.table_id,
                    cookie: cx.cookie,
                    max_len,
                };
                self.push(port_no::CONTROLLER, cx, Some(meta));
            }
            port_no::LOCAL | port_no::NORMAL => self.push(port, cx, None),
            // A packet never goes back out of its ingress port unless IN_PORT says so.
            p if p == cx.in_port => {}
            p => {
                // Unknown ports are accepted by flow-mods (ports may come later);
                // down or no_fwd ports drop here.
                if cx.snap.ports.usable(p) != Some(false) {
                    self.push(p, cx, None);
                }
            }
        }
    }

    fn live_bucket(snap: &Snapshot, g: u32, i: usize) -> bool {
        snap.bucket_live
            .get(&g)
            .and_then(|v| v.get(i))
            .copied()
            .unwrap_or(false)
    }

    /// Which buckets of `grp` this packet takes.
    fn choose(&self, snap: &Snapshot, g: u32, grp: &GroupRt) -> Option<std::ops::Range<usize>> {
        match grp.group_type {
            GroupType::All => Some(0..grp.buckets.len()),
            GroupType::Indirect => (!grp.buckets.is_empty()).then_some(0..1),
            GroupType::FastFailover => grp
                .buckets
                .iter()
                .enumerate()
                .position(|(i, _)| Self::live_bucket(snap, g, i))
                .map(|i| i..i + 1),
            GroupType::Select => {
                // Hash the flow so that one flow keeps one bucket; weight the choice.
                let live: u32 = grp
                    .buckets
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| Self::live_bucket(snap, g, *i))
                    .map(|(_, b)| b.weight as u32)
                    .sum();
                if live == 0 {
                    return None;
                }
                let k = &self.key;
                let mut h = 0xcbf2_9ce4_8422_2325u64;
                for w in [
                    k.w[2],
                    k.w[3],
                    k.w[4],
                    k.get(s::IP_PROTO),
                    k.w[6] >> 32,
                    k.w[7],
                    k.w[8],
                    k.w[9],
                    k.w[10],
                ] {
                    h = (h ^ w).wrapping_mul(0x1000_0000_01b3);
                    h ^= h >> 29;
                }
                let mut pick = (h % live as u64) as u32;
                for (i, b) in grp.buckets.iter().enumerate() {
                    if !Self::live_bucket(snap, g, i) {
                        continue;
                    }
                    if pick < b.weight as u32 {
                        return Some(i..i + 1);
                    }
                    pick -= b.weight as u32;
                }
                None
            }
            GroupType::Unknown(_) => None,
        }
    }

    fn group<const T: bool>(&mut self, g: u32, frame: &[u8], cx: &mut Ctx<'_>, depth: u32) {
        if depth >= MAX_GROUP_DEPTH {
            if T {
                self.note(format!("group:{g} -> dropped: groups nested too deep"));
            }
            return;
        }
        if cx.buckets_run >= MAX_BUCKETS_PER_PACKET {
            if T {
                self.note(format!(
                    "group:{g} -> dropped: more than {MAX_BUCKETS_PER_PACKET} buckets for one packet"
                ));
            }
            self.over_limit += 1;
            return;
        }
        let snap = cx.snap;
        let Some(grp) = snap.groups.get(&g) else {
            if T {
                self.note(format!("group:{g} -> no such group: nothing"));
            }
            return;
        };
        if !T {
            grp.counters.hit(cx.worker, frame.len() as u64, cx.now_ns);
        }
        let Some(range) = self.choose(snap, g, grp) else {
            if T {
                self.note(format!("group:{g} -> no live bucket: nothing"));
            }
            return;
        };
        if T {
            let (ty, first, n) = (grp.group_type, range.start, range.len());
            self.note(format!(
                "group:{g} (type={ty}): {n} bucket(s) from bucket {first}"
            ));
        }
        // Each bucket works on its own copy of the packet; the packet the
        // rule goes on with is not changed by the group.
        let (saved_key, saved_off, saved_queue, saved_tun, saved_meta, saved_stale) = (
            self.key,
            self.off,
            cx.queue,
            self.tun,
            self.metadata,
            cx.key_stale,
        );
        let end = range.end;
        for i in range {
            if cx.buckets_run >= MAX_BUCKETS_PER_PACKET {
                if T {
                    self.note(format!(
                        "bucket {i} and after -> dropped: more than {MAX_BUCKETS_PER_PACKET} buckets for one packet"
                    ));
                }
                self.over_limit += (end - i) as u64;
                break;
            }
            cx.buckets_run += 1;
            let b = &grp.buckets[i];
            if T {
                self.note(format!("bucket {i}:"));
                self.indent += 1;
            } else if let Some(c) = grp.bucket_counters.get(i) {
                c.hit(cx.worker, frame.len() as u64, cx.now_ns);
            }
            let mut copy = frame.to_vec();
            let first_out = self.outputs.len();
            let outer_from = std::mem::replace(&mut cx.pending_from, first_out);
            self.run_actions::<T, _>(&b.actions, &mut copy, cx, depth + 1);
            if T {
                self.indent -= 1;
            }
            // This bucket's outputs carry this bucket's packet.
            let mut copy = Some(copy);
            let n = self.outputs.len();
            for (j, o) in self.outputs[first_out..].iter_mut().enumerate() {
                if o.data.is_none() {
                    // The last one takes the buffer itself.
                    o.data = if first_out + j + 1 == n {
                        copy.take()
                    } else {
                        copy.clone()
                    };
                }
            }
            cx.pending_from = outer_from;
            cx.dropped = false;
            self.key = saved_key;
            self.off = saved_off;
            cx.queue = saved_queue;
            // A bucket runs on a copy of the packet, metadata included.
            self.tun = saved_tun;
            self.metadata = saved_meta;
            cx.key_stale = saved_stale;
        }
    }
}
