//! What happens to a packet: the published [`Snapshot`] of the pipeline and
//! a [`Worker`] that runs packets through it (here: the interpreter; the
//! published types in `snapshot.rs`, the action set in `action_set.rs`,
//! groups in `groups.rs`).
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
//!
//! One job in one file: the interpreter (its steps share the packet's
//! context and are read best in order).

use std::sync::Arc;

use ofp::msg::flow::PacketInReason;
use ofp::msg::group::GroupType;
use ofp::oxm::{MatchEntry, Oxm, OxmField};
use ofp::port::port_no;
use ofp::{Action, Instruction};
use packet::{extract, slots as s, FlowKey, FrameBuf, Offsets, TunnelDst, TunnelMeta};

use crate::conjunction;
use crate::edit::{self, Edit, Ttl};
use crate::emc::Emc;
use crate::meter::Verdict;
use crate::rule::Rule;
use crate::trace::{describe_key, describe_rule};

mod action_set;
mod ct;
mod groups;
mod learn;
mod multipath;
mod nicira;
mod resubmit;
mod snapshot;

use action_set::ActionSet;
pub use learn::{Learned, PENDING_MAX as LEARN_PENDING_MAX, RELEARN_NS};
pub use snapshot::{GroupRt, Output, PacketInExtra, PortState, Snapshot, ToController};

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
    /// The rule being executed (the learner of a `learn`).
    rule_id: crate::classifier::RuleId,
    dropped: bool,
    /// Group buckets run so far for this packet.
    buckets_run: u32,
    /// Resubmits run so far for this packet, and how deep they nest now.
    resubmits: u32,
    resubmit_depth: u32,
    /// The packet went over the resubmit limits: dropped whole.
    failed: bool,
    /// A cached walk being replayed ([`crate::paths`]): the rules its
    /// lookups found, and how many were used.
    replay: Option<&'a [Option<Arc<Rule>>]>,
    replayed: usize,
    /// Whether this packet's lookups are recorded (`Exec::recorded`).
    record: bool,
    /// An `exit` ran: no further action runs (the action set still does).
    exited: bool,
    /// How deep `clone`s nest now.
    clone_depth: u32,
}

impl<'a> Ctx<'a> {
    /// The next lookup's answer from the walk being replayed, if any
    /// (`Some(None)`: that lookup found no rule).
    #[inline]
    fn replay_next(&mut self) -> Option<Option<&'a Arc<Rule>>> {
        let path = self.replay?;
        match path.get(self.replayed) {
            Some(r) => {
                self.replayed += 1;
                Some(r.as_ref())
            }
            None => {
                // Past the recorded walk (a meter ended it early): real
                // lookups from here on.
                self.replay = None;
                None
            }
        }
    }
}

/// How a walk through the tables ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// The packet goes on (to its action set, or the resubmit's caller).
    Done,
    /// The packet goes no further (no table-miss rule, a meter, a TTL).
    Stop,
}

/// A datapath worker: run packets with [`Worker::process`].
pub struct Worker {
    /// This worker's counter slot.
    pub id: usize,
    exec: Exec,
    emc: Option<Emc>,
    paths: Option<crate::paths::Paths>,
    ahead: crate::lookahead::Ahead,
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
            paths: (entries > 0).then(|| crate::paths::Paths::new(entries / 2)),
            ahead: crate::lookahead::Ahead::new(),
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

    /// The flows packets taught since the last call (`learn`), for the
    /// control plane to add ([`crate::Pipeline::learn`]). At most
    /// [`LEARN_PENDING_MAX`] wait between two calls.
    pub fn take_learned(&mut self) -> Vec<Learned> {
        std::mem::take(&mut self.exec.teach.pending)
    }

    /// Learned flows this worker did not hand over: (taught again within
    /// [`RELEARN_NS`], dropped because [`LEARN_PENDING_MAX`] were waiting).
    pub fn learn_skipped(&self) -> (u64, u64) {
        (self.exec.teach.repeated, self.exec.teach.dropped)
    }

    /// Heap bytes of this worker's learning bookkeeping (the flows it
    /// taught lately, the list waiting for [`Worker::take_learned`]).
    pub fn learn_bytes(&self) -> usize {
        self.exec.teach.heap_bytes()
    }

    /// Cache hits and misses so far.
    pub fn cache_stats(&self) -> (u64, u64) {
        self.emc.as_ref().map_or((0, 0), |e| (e.hits, e.misses))
    }

    /// Misses the exact-match cache did not admit while thrashing
    /// ([`crate::emc`]).
    pub fn cache_refused(&self) -> u64 {
        self.emc.as_ref().map_or(0, |e| e.refused)
    }

    /// Lookups that skipped the exact-match cache while it was bypassed
    /// ([`crate::emc`]).
    pub fn cache_bypassed(&self) -> u64 {
        self.emc.as_ref().map_or(0, |e| e.bypassed)
    }

    /// Hits and misses of the cache of whole walks ([`crate::paths`]).
    pub fn path_stats(&self) -> (u64, u64) {
        self.paths.as_ref().map_or((0, 0), |p| (p.hits, p.misses))
    }

    /// Cache hits so far on entries of an earlier version that no rule
    /// change since touched (counted in the hits too).
    pub fn cache_kept(&self) -> u64 {
        self.emc.as_ref().map_or(0, |e| e.kept)
    }

    /// Looks ahead over the packets (ingress port, frame) about to run
    /// through `snap`, up to [`crate::lookahead::LOOKAHEAD`] of them: while
    /// the exact-match cache misses, loads into the CPU's caches what their
    /// first lookups will read ([`crate::lookahead`]). Changes no result;
    /// call it for a batch, then [`Worker::process`] each packet.
    pub fn look_ahead<'a>(
        &mut self,
        snap: &Snapshot,
        frames: impl IntoIterator<Item = (u32, &'a [u8])>,
    ) {
        // A bypassed cache is not looked ahead into (most lookups skip it).
        let emc = self.emc.as_ref().filter(|e| !e.bypassed_now());
        let sink = self.ahead.run(emc, snap, self.id, frames);
        std::hint::black_box(sink);
    }

    /// Turns the look ahead on (the default) or off, for comparisons.
    pub fn set_lookahead(&mut self, on: bool) {
        self.ahead.enabled = on;
    }

    /// Batches looked ahead over so far.
    pub fn lookahead_batches(&self) -> u64 {
        self.ahead.batches
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
            self.paths.as_mut(),
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
        e.key.clear_metadata();
        e.stack.clear();
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
            rule_id: u32::MAX,
            dropped: false,
            buckets_run: 0,
            resubmits: 0,
            resubmit_depth: 0,
            failed: false,
            replay: None,
            replayed: 0,
            record: false,
            exited: false,
            clone_depth: 0,
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
        .process::<true, _>(0, None, None, snap, in_port, tun, &mut f, 0)
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
    /// The conjunction lookup's scratch ([`conjunction::lookup`]).
    conj: Vec<conjunction::Hit>,
    /// Flows packets taught (`learn`), for the control plane.
    teach: learn::Teach,
    /// The rules this packet's lookups found, for [`crate::paths`].
    recorded: Vec<Option<Arc<Rule>>>,
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
    /// The packet's stack for `push` and `pop`, as Open vSwitch keeps it:
    /// each value's bytes then their count (see [`nicira`]).
    stack: Vec<u8>,
    /// This packet ran a `ct`: its walk is not recorded ([`crate::paths`]).
    uncacheable: bool,
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
            conj: Vec::new(),
            teach: learn::Teach::default(),
            recorded: Vec::with_capacity(8),
            metadata: 0,
            tun: TunnelMeta::default(),
            tun_arrived: (0, 0),
            log: Vec::new(),
            indent: 0,
            skipped_edits: 0,
            over_limit: 0,
            buckets_carried: 0,
            buckets_used: 0,
            stack: Vec::new(),
            uncacheable: false,
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
        emc: Option<&mut Emc>,
        mut paths: Option<&mut crate::paths::Paths>,
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
        self.key.clear_metadata();
        self.stack.clear();
        self.reextract(frame, in_port);
        if T {
            self.note(format!("Flow: {}", describe_key(&self.key)));
        }
        // A walk recorded for this ingress key replays; otherwise this one
        // is recorded, when the cache is in use.
        let mut replay = None;
        let mut ingress = None;
        if let Some(p) = paths.as_deref_mut().filter(|_| snap.multi_table) {
            replay = p.get(snap.version, &self.key);
            if replay.is_none() {
                ingress = Some(self.key);
                self.recorded.clear();
            }
        }
        let record = ingress.is_some();
        self.uncacheable = false;
        self.run_walk::<T, B>(worker, emc, snap, in_port, frame, now_ns, replay, record);
        if let (Some(key), Some(p), false) = (ingress, paths, self.uncacheable) {
            p.put(snap.version, &key, &self.recorded);
            self.recorded.clear();
        }
        &self.outputs
    }

    /// The walk of [`Exec::process`] and the action set after it.
    #[allow(clippy::too_many_arguments)] // the packet and its context
    #[inline(always)]
    fn run_walk<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        worker: usize,
        emc: Option<&mut Emc>,
        snap: &Snapshot,
        in_port: u32,
        frame: &mut B,
        now_ns: u64,
        replay: Option<&[Option<Arc<Rule>>]>,
        record: bool,
    ) -> Walk {
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
            rule_id: u32::MAX,
            dropped: false,
            buckets_run: std::mem::take(&mut self.buckets_carried),
            resubmits: 0,
            resubmit_depth: 0,
            failed: false,
            replay,
            replayed: 0,
            record,
            exited: false,
            clone_depth: 0,
        };
        let walked = self.walk::<T, B>(0, None, frame, &mut cx, emc, 0);
        if cx.failed {
            // As Open vSwitch: a packet over the resubmit limits is dropped
            // whole, whatever it had been sent to.
            self.outputs.clear();
            self.buckets_used = cx.buckets_run;
            return walked;
        }
        if walked == Walk::Stop {
            self.buckets_used = cx.buckets_run;
            return walked;
        }
        // After an exit too (ovs-actions(7): "Actions in the action set
        // are still executed").
        cx.exited = false;
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
        walked
    }

    /// Looks the packet up from table `first` on and runs what matches,
    /// following goto_table: the pipeline's walk, or a resubmit's (there a
    /// table without a matching rule does nothing, where the pipeline's
    /// walk drops the packet). `depth` is how deep in groups the actions
    /// run. `lookup_port`, if given, is the ingress port the first lookup
    /// alone sees (a resubmit's port, as Open vSwitch: the actions, and
    /// the lookups of a goto_table after, see the packet's own).
    #[allow(clippy::too_many_arguments)] // where the walk starts, the packet, its context
    #[inline(always)] // the per-packet walk: its context stays in registers
    fn walk<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        first: usize,
        lookup_port: Option<u32>,
        frame: &mut B,
        cx: &mut Ctx<'_>,
        mut emc: Option<&mut Emc>,
        depth: u32,
    ) -> Walk {
        let mut table = first;
        let mut lookup_port = lookup_port;
        let snap = cx.snap;
        while let Some(cls) = snap.tables.get(table) {
            if cx.key_stale {
                self.reextract(frame, cx.in_port);
                cx.key_stale = false;
                if T {
                    self.note(format!("Flow now: {}", describe_key(&self.key)));
                }
            }
            // Metadata can change between lookups (write_metadata); the
            // tunnel words follow `tun` where it changes (write_field).
            self.key.set(s::METADATA, self.metadata);
            let tc = snap.table_counters.get(table).filter(|_| !T);
            let (worker, now_ns) = (cx.worker, cx.now_ns);
            let other_port = lookup_port.take().filter(|&p| p != cx.in_port);
            if let Some(p) = other_port {
                self.key.set(s::IN_PORT, p as u64);
            }
            let replayed = cx.replay_next();
            let cache = match emc.as_deref_mut() {
                Some(e) if !T => e.consult().then_some(e),
                _ => None,
            };
            let found = match (replayed, cache) {
                (Some(r), _) => r,
                (None, Some(e)) => {
                    match e.find(snap.version, &snap.changes, table as u8, &self.key) {
                        Ok(i) => e.rule(i),
                        Err(i) => {
                            let r = conjunction::lookup(cls, &mut self.key, &mut self.conj).0;
                            e.put(i, snap.version, table as u8, &self.key, r);
                            r
                        }
                    }
                }
                (None, None) => {
                    let (r, via) = conjunction::lookup(cls, &mut self.key, &mut self.conj);
                    if let (true, conjunction::Via::Conjunction { id, priority }) = (T, via) {
                        self.note(format!(
                            "{table:>2}. Conjunction {id} (priority {priority}): every clause matched; looked up again with conj_id={id}"
                        ));
                    }
                    r
                }
            };
            if other_port.is_some() {
                self.key.set(s::IN_PORT, cx.in_port as u64);
            }
            if cx.record && self.recorded.len() <= crate::paths::MAX_PATH {
                self.recorded.push(found.cloned());
            }
            let Some(rule) = found else {
                // No match and no table-miss entry: the packet is dropped,
                // or with a controller of OpenFlow 1.0-1.2 connected, sent
                // to it (that version's table miss).
                if let Some(c) = tc {
                    c.hit(worker, 0, now_ns);
                }
                let to_controller = cx.resubmit_depth == 0 && cx.snap.miss_to_controller;
                if T {
                    self.note(format!(
                        "{table:>2}. No match: {}.",
                        if to_controller {
                            "to the OpenFlow 1.0-1.2 controllers (their table miss)"
                        } else if cx.resubmit_depth == 0 {
                            "drop (no table-miss rule)"
                        } else {
                            "nothing (a resubmit that finds no rule does nothing)"
                        }
                    ));
                }
                if to_controller {
                    let meta = ToController {
                        extra: self.packet_in_extra(bytes::Bytes::new()),
                        implicit_miss: true,
                        // max_len 0 with NO_MATCH: the switch's miss_send_len.
                        ..ToController::new(PacketInReason::NoMatch, table as u8, 0, 0)
                    };
                    self.push(port_no::CONTROLLER, cx, Some(meta));
                    // Outputs made before stay; the action set does not run.
                    return Walk::Stop;
                }
                return if cx.resubmit_depth == 0 {
                    Walk::Stop
                } else {
                    Walk::Done
                };
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
            cx.rule_id = rule.id;
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
                                    cx.dropped = true;
                                    return Walk::Stop;
                                }
                                Verdict::Remark(p) => self.remark(frame, cx, p),
                            }
                        }
                    }
                    Instruction::ApplyActions(list) => {
                        self.run_actions::<T, _>(list, frame, cx, depth);
                        if cx.dropped {
                            return Walk::Stop;
                        }
                        if cx.exited {
                            // Not this flow's other instructions, nor
                            // any table after (the action set does run).
                            if T {
                                self.indent -= 1;
                            }
                            return Walk::Done;
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
        Walk::Done
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
                Action::SetField(MatchEntry::Basic(o)) => self.write_any::<T, _>(o, frame, cx),
                Action::RegLoad(l) => {
                    if !crate::matchkey::load_metadata(&mut self.key, l) {
                        self.write_any::<T, _>(&l.masked(), frame, cx);
                    }
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
                | Action::DecTtlIds(_)
                | Action::SetMplsTtl(_)
                | Action::DecMplsTtl => {
                    self.before_change(frame, cx);
                    let r = match a {
                        Action::SetNwTtl(t) => edit::nw_ttl(frame, &self.off, Some(*t)),
                        Action::DecNwTtl | Action::DecTtlIds(_) => {
                            edit::nw_ttl(frame, &self.off, None)
                        }
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
                        // One packet-in for the connections of each
                        // controller id dec_ttl(ids) names (dec_ttl: 0),
                        // as Open vSwitch's compose_dec_ttl sends them.
                        let ids: &[u16] = match a {
                            Action::DecTtlIds(ids) => ids,
                            _ => &[0],
                        };
                        if cx.snap.invalid_ttl_to_controller && !ids.is_empty() {
                            let extra = self.packet_in_extra(bytes::Bytes::new());
                            for &id in ids {
                                if self.outputs.len() >= MAX_OUTPUTS_PER_PACKET {
                                    self.over_limit += 1;
                                    continue;
                                }
                                self.outputs.push(Output {
                                    port: port_no::CONTROLLER,
                                    queue: None,
                                    data: Some(frame.to_vec()),
                                    controller: Some(ToController {
                                        controller_id: id,
                                        extra: extra.clone(),
                                        ..ToController::new(
                                            PacketInReason::InvalidTtl,
                                            cx.table_id,
                                            cx.cookie,
                                            ofp::action::OFPCML_NO_BUFFER,
                                        )
                                    }),
                                    tunnel: self.tun.dst(),
                                });
                            }
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
                Action::Resubmit(r) => {
                    self.resubmit::<T, _>(r, frame, cx, depth);
                    if cx.dropped || cx.exited {
                        return;
                    }
                }
                Action::Note(_) | Action::Sample(_) => {}
                Action::Exit => {
                    cx.exited = true;
                    return;
                }
                // A conjunctive flow is never the result of a lookup
                // (`crate::conjunction`): nothing runs its actions.
                Action::Conjunction(_) => {}
                Action::SetField(MatchEntry::Other(_)) | Action::Experimenter { .. } => {}
                _ => {
                    if self.run_rare::<T, B>(a, frame, cx, depth) {
                        return;
                    }
                }
            }
        }
    }

    /// The actions few pipelines run (the Nicira extensions beyond
    /// load and resubmit), out of line: [`Exec::run_actions`] is entered
    /// once per table a packet visits, and its set-up grew with every
    /// action it held inline. True when the action list ends here.
    #[inline(never)]
    fn run_rare<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        a: &Action,
        frame: &mut B,
        cx: &mut Ctx<'_>,
        depth: u32,
    ) -> bool {
        match a {
            Action::RegMove(m) => {
                let v = self.field_value(m.src, frame, cx) >> m.src_ofs;
                let dst = ofp::action::Subfield {
                    field: m.dst,
                    ofs: m.dst_ofs,
                    n_bits: m.n_bits,
                };
                self.write_subfield::<T, _>(&dst, v, frame, cx);
            }
            Action::OutputReg(o) => self.output_reg::<T>(o, frame, cx),
            Action::StackPush(f) => {
                self.stack_push::<T>(f, frame, cx);
                if cx.dropped {
                    return true;
                }
            }
            Action::Learn(l) => {
                let learner = cx.rule_id;
                let taught = learn::build(l, learner, |f| self.field_value(f, frame, cx));
                if T {
                    let mut fm = taught.flow_mod.clone();
                    fm.command = ofp::msg::flow::FlowModCommand::Add;
                    self.note(format!(
                        "    -> would learn: {}",
                        ofp::text::format_flow_mod(&fm)
                    ));
                } else {
                    self.teach.push(taught, cx.now_ns);
                }
            }
            Action::StackPop(f) => self.stack_pop::<T, _>(f, frame, cx),
            Action::Clone(list) => {
                self.clone_actions::<T>(list, frame, cx, depth);
                if cx.dropped || cx.exited {
                    return true;
                }
            }
            Action::Controller(c) => self.controller::<T>(c, frame, cx),
            Action::Multipath(m) => self.multipath::<T, _>(m, frame, cx),
            Action::Bundle(b) => self.bundle::<T, _>(b, frame, cx),
            // run_actions' own (listed, so that a new action is placed
            // in one of the two on purpose).
            Action::Output { .. }
            | Action::Group(_)
            | Action::SetQueue(_)
            | Action::SetField(_)
            | Action::RegLoad(_)
            | Action::PushVlan(_)
            | Action::PushMpls(_)
            | Action::PopMpls(_)
            | Action::PushPbb(_)
            | Action::PopVlan
            | Action::PopPbb
            | Action::SetNwTtl(_)
            | Action::DecNwTtl
            | Action::DecTtlIds(_)
            | Action::SetMplsTtl(_)
            | Action::DecMplsTtl
            | Action::CopyTtlOut
            | Action::CopyTtlIn
            | Action::Resubmit(_)
            | Action::Note(_)
            | Action::Sample(_)
            | Action::Exit
            | Action::Conjunction(_)
            | Action::Experimenter { .. } => {}
            Action::Ct(c) => {
                self.conntrack::<T, B>(c, frame, cx, depth);
                if cx.dropped || cx.failed {
                    return true;
                }
            }
            Action::CtClear => self.key.clear_ct(),
            // Only inside ct (validation refuses it elsewhere).
            Action::Nat(_) => {}
        }
        false
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
            OxmField::NxmInPort => ofp::resubmit::port_to_u16(cx.in_port) as u128,
            _ => {
                if cx.key_stale {
                    self.reextract(frame, cx.in_port);
                    cx.key_stale = false;
                }
                crate::matchkey::read_field(&self.key, f).unwrap_or(0)
            }
        }
    }

    /// [`Exec::write_field`], and the writes that change the header
    /// layout: `NXM_OF_VLAN_TCI` (Open vSwitch's OpenFlow 1.0 view of the
    /// tag) pushes a tag when CFI becomes set on a packet without one and
    /// pops it when CFI is cleared, then sets VID and PCP.
    fn write_any<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        o: &Oxm,
        frame: &mut B,
        cx: &mut Ctx<'_>,
    ) {
        if o.field != OxmField::VlanTci {
            return self.write_field::<T>(o, frame, cx);
        }
        let old = self.field_value(OxmField::VlanTci, frame, cx);
        let m = o.mask.unwrap_or(0xffff) & 0xffff;
        let tci = ((old & !m) | (o.value & m)) as u16;
        let tagged = self.key.flags() & packet::flags::VLAN != 0;
        if tci & 0x1000 == 0 {
            if tagged {
                self.before_change(frame, cx);
                let r = edit::pop_vlan(frame, &self.off);
                self.after_edit::<T>(r, frame, cx);
            }
            return;
        }
        if !tagged {
            self.before_change(frame, cx);
            let r = edit::push_vlan(frame, &self.off, packet::parse::ethertype::VLAN);
            self.after_edit::<T>(r, frame, cx);
        }
        self.before_change(frame, cx);
        for (f, v) in [
            (OxmField::VlanVid, (tci & 0x1fff) as u128),
            (OxmField::VlanPcp, (tci >> 13) as u128),
        ] {
            let r = edit::set_field(frame, &self.off, &Oxm::exact(f, v));
            self.after_edit::<T>(r, frame, cx);
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
        if crate::matchkey::is_key_metadata(o.field) {
            // Registers and the packet mark live in the key itself.
            crate::matchkey::write_metadata(&mut self.key, o.field, o.value, m);
            return;
        }
        match o.field {
            OxmField::Metadata => self.metadata = merge(self.metadata as u128) as u64,
            // Open vSwitch's `load:...->NXM_OF_IN_PORT[]`: the packet now
            // counts as received on that port (an output to its real
            // ingress port is then allowed; IN_PORT means the new one).
            OxmField::NxmInPort => {
                let old = ofp::resubmit::port_to_u16(cx.in_port) as u128;
                cx.in_port = ofp::resubmit::Resubmit::port_from_u16(merge(old) as u16);
                self.key.set(s::IN_PORT, cx.in_port as u64);
            }
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

    /// The outputs from `first_out` on that carry no bytes of their own
    /// get `copy` (a group bucket's or a clone's packet): the last one
    /// takes the buffer itself, the others a copy of it.
    fn outputs_carry(&mut self, first_out: usize, copy: Vec<u8>) {
        let mut copy = Some(copy);
        let n = self.outputs.len();
        for (j, o) in self.outputs[first_out..].iter_mut().enumerate() {
            if o.data.is_none() {
                o.data = if first_out + j + 1 == n {
                    copy.take()
                } else {
                    copy.clone()
                };
            }
        }
    }

    #[inline(always)] // a copy of every output: out of line, its 96 bytes went through the stack
    fn push(&mut self, port: u32, cx: &mut Ctx<'_>, controller: Option<ToController>) {
        if self.outputs.len() >= MAX_OUTPUTS_PER_PACKET {
            self.over_limit += 1;
            return;
        }
        // The controller hears the packet's metadata as it is.
        let tunnel = if controller.is_some() {
            self.tun.dst()
        } else {
            self.out_tunnel()
        };
        self.outputs.push(Output {
            port,
            queue: cx.queue,
            data: None,
            controller,
            tunnel,
        });
    }

    /// What a packet-in of the packet as it is now carries beyond its
    /// port and tunnel destination ([`PacketInExtra`]): `userdata` and
    /// the pipeline fields; None when all of it is empty or zero (the
    /// usual case, which allocates nothing).
    pub(super) fn packet_in_extra(&self, userdata: bytes::Bytes) -> Option<Arc<PacketInExtra>> {
        let e = PacketInExtra {
            userdata,
            regs: std::array::from_fn(|i| self.key.get(s::REGS[i]) as u32),
            pkt_mark: self.key.get(s::PKT_MARK) as u32,
            metadata: self.metadata,
            tun_ipv4_src: self.tun.ipv4_src,
            tun_ipv6_src: self.tun.ipv6_src,
        };
        (!e.is_empty()).then(|| Arc::new(e))
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
                    extra: self.packet_in_extra(bytes::Bytes::new()),
                    ..ToController::new(reason, cx.table_id, cx.cookie, max_len)
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
}
