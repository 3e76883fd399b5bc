//! What happens to a packet: a [`Worker`] runs packets through a published
//! [`Snapshot`] (`crate::snapshot`), the interpreter.
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
//! The rooms: this file holds the state a packet carries (`Ctx`) and the
//! state a worker reuses between packets (`Exec`); `worker.rs` the public
//! [`Worker`] and the trace's entry; `walk.rs` the walk through the tables
//! and instructions; `actions.rs` an action list and field writes;
//! `output.rs` where outputs go; the action set, groups, `ct`, `learn`,
//! resubmit, multipath/bundle and the other Nicira actions each in a file
//! of their own. All are `impl Exec` blocks over the same two structs.

use std::sync::Arc;

use ofp::msg::flow::PacketInReason;
use ofp::msg::group::GroupType;
use ofp::oxm::{MatchEntry, Oxm, OxmField};
use ofp::port::port_no;
use ofp::{Action, Instruction};
use packet::{extract, slots as s, FlowKey, FrameBuf, Offsets, TunnelDst, TunnelMeta};

use crate::describe::{describe_key, describe_rule};
use crate::edit::{self, Edit, Ttl};
use crate::lookup::conjunction;
use crate::lookup::emc::Emc;
use crate::lookup::rule::Rule;
use crate::meter::Verdict;

mod action_set;
mod actions;
mod ct;
mod groups;
mod learn;
pub(crate) mod multipath;
mod nicira;
mod output;
mod pause;
mod resubmit;
mod unpublished;
mod walk;
mod worker;

use crate::snapshot::{GroupRt, Output, PacketInExtra, Snapshot, ToController};
use action_set::ActionSet;
pub(crate) use ct::{CtRun, RecircRun};
pub use learn::{Learned, PENDING_MAX as LEARN_PENDING_MAX, RELEARN_NS};
use unpublished::Unpublished;
pub use unpublished::{MAX as UNPUBLISHED_MAX, TTL_NS as UNPUBLISHED_TTL_NS};
pub(crate) use worker::trace_run;
pub use worker::{Worker, EMC_ENTRIES};

/// The state a packet carries through the pipeline.
struct Ctx<'a> {
    snap: &'a Snapshot,
    /// Flows the worker taught that its packets see until they are
    /// published ([`unpublished`]).
    unpublished: &'a Unpublished,
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
    rule_id: crate::lookup::classifier::RuleId,
    dropped: bool,
    /// Group buckets run so far for this packet.
    buckets_run: u32,
    /// Resubmits run so far for this packet; how deep they nest now as
    /// Open vSwitch counts it (only those to the same or an earlier table,
    /// and recirculations); how many resubmit levels the walk is in.
    resubmits: u32,
    resubmit_depth: u32,
    in_resubmit: u32,
    /// The packet went over the resubmit limits: dropped whole.
    failed: bool,
    /// A cached walk being replayed ([`crate::lookup::paths`]): the rules its
    /// lookups found, and how many were used.
    replay: Option<&'a [Option<Arc<Rule>>]>,
    replayed: usize,
    /// Whether this packet's lookups are recorded (`Exec::recorded`).
    record: bool,
    /// An `exit` ran: no further action runs (the action set still does).
    exited: bool,
    /// How deep `clone`s nest now.
    clone_depth: u32,
    /// `controller(pause)` ran: the walk unwinds, each level freezing
    /// what it had left ([`Exec::frozen`]); `exited` is set with it.
    paused: bool,
    /// The action set is running (no pause there).
    in_action_set: bool,
}

impl<'a> Ctx<'a> {
    /// A packet's context at the start of its walk (or of a PACKET_OUT's
    /// or a resumption's actions): nothing run yet, cookie all ones.
    fn new(snap: &'a Snapshot, worker: usize, in_port: u32, now_ns: u64) -> Self {
        Ctx {
            snap,
            unpublished: &unpublished::NONE,
            worker,
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
            in_resubmit: 0,
            failed: false,
            replay: None,
            replayed: 0,
            record: false,
            exited: false,
            clone_depth: 0,
            paused: false,
            in_action_set: false,
        }
    }

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
    /// The rules this packet's lookups found, for [`crate::lookup::paths`].
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
    /// Frames dropped for their Geneve options ([`crate::tlv::GeneveMap::read`]).
    tun_opts_refused: u64,
    /// Bucket runs a PACKET_OUT has already spent, for the pipeline run of
    /// its output:TABLE to go on from (0 otherwise).
    buckets_carried: u32,
    /// Bucket runs the last `process` ended with.
    buckets_used: u32,
    /// The packet's stack for `push` and `pop`, as Open vSwitch keeps it:
    /// each value's bytes then their count (see [`nicira`]).
    stack: Vec<u8>,
    /// What a paused walk left, innermost level first, and the index in
    /// `outputs` of its packet-in ([`continuation`]).
    frozen: Vec<crate::continuation::Frame>,
    pause_output: Option<usize>,
    /// This packet ran a `ct`: its walk is not recorded ([`crate::lookup::paths`]).
    uncacheable: bool,
    /// A trace's `--ct-next` states still to give, in order (only a trace
    /// sets them: [`crate::trace::Options::ct_next`]), each for the
    /// recirculation at its path ([`ct::RecircRun::path`]).
    ct_plan: Vec<(Vec<u32>, u32)>,
    /// A trace's TCI for the key alone ([`crate::trace::Options::tci`]).
    tci: Option<(u16, u8)>,
    /// A trace's recirculations (`ct(table=N)`), in the order they began,
    /// and its `ct`s, in the order they ran (only a trace writes them).
    recircs: Vec<ct::RecircRun>,
    cts: Vec<ct::CtRun>,
    /// The block a trace is writing: 0 the packet's first pass, `i + 1`
    /// `recircs[i]`.
    block: usize,
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
            tun_opts_refused: 0,
            buckets_carried: 0,
            buckets_used: 0,
            stack: Vec::new(),
            frozen: Vec::new(),
            pause_output: None,
            uncacheable: false,
            ct_plan: Vec::new(),
            tci: None,
            recircs: Vec::new(),
            cts: Vec::new(),
            block: 0,
        }
    }

    /// Writes one trace line (only called when tracing).
    fn note(&mut self, line: String) {
        let pad = "    ".repeat(self.indent);
        self.log.push(format!("{pad}{line}"));
    }
}
