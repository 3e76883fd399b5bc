//! An installed flow entry and its counters.
//!
//! A [`Rule`] is immutable once published (workers hold it through `Arc`);
//! a MODIFY makes a new `Rule` that shares the old one's [`Counters`] unless
//! the flow-mod asked to reset them.
//!
//! Counters are per worker: each worker writes only its own cache-padded
//! slot (plain relaxed loads and stores, no read-modify-write across cores),
//! and the control plane sums the slots when a controller asks. This is the
//! DESIGN's rule against shared counters on the fast path.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use bytes::Bytes;
use ofp::{ErrorCode, Instruction, Match};

use crate::lookup::classifier::RuleId;
use crate::lookup::matchkey::{MaskedKey, PackedKey};

/// One worker's counters for one rule, alone on its cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct CounterSlot {
    packets: AtomicU64,
    bytes: AtomicU64,
    last_hit_ns: AtomicU64,
}

/// Per-worker packet/byte counters and last-hit time of a rule.
#[derive(Debug)]
pub struct Counters {
    slots: Box<[CounterSlot]>,
}

/// Counter totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    pub packets: u64,
    pub bytes: u64,
    /// 0 if never hit.
    pub last_hit_ns: u64,
}

impl Counters {
    /// Counters for `workers` workers (at least one).
    pub fn new(workers: usize) -> Counters {
        Counters {
            slots: (0..workers.max(1))
                .map(|_| CounterSlot::default())
                .collect(),
        }
    }

    /// Records a hit by `worker` (only that worker may call this for its slot).
    #[inline]
    pub fn hit(&self, worker: usize, bytes: u64, now_ns: u64) {
        if let Some(s) = self.slots.get(worker) {
            s.packets.store(s.packets.load(Relaxed) + 1, Relaxed);
            s.bytes.store(s.bytes.load(Relaxed) + bytes, Relaxed);
            s.last_hit_ns.store(now_ns, Relaxed);
        }
    }

    /// Adds `packets` and `bytes` counted elsewhere (the XDP fast path's
    /// fold) to `slot`, whose only writer the caller is; `now_ns` becomes
    /// the last hit if any packet was added.
    pub fn add(&self, slot: usize, packets: u64, bytes: u64, now_ns: u64) {
        if let Some(s) = self.slots.get(slot) {
            s.packets.store(s.packets.load(Relaxed) + packets, Relaxed);
            s.bytes.store(s.bytes.load(Relaxed) + bytes, Relaxed);
            if packets > 0 {
                s.last_hit_ns.store(now_ns, Relaxed);
            }
        }
    }

    /// For looking ahead ([`crate::lookup::lookahead`]): reads the slots' pointer
    /// (`level` 0) or `worker`'s slot (1); what it read, for a sink.
    #[inline]
    pub(crate) fn touch(&self, level: u8, worker: usize) -> u64 {
        match level {
            0 => self.slots.len() as u64,
            _ => self
                .slots
                .get(worker)
                .map_or(0, |s| s.packets.load(Relaxed)),
        }
    }

    /// Sums every worker's slot.
    pub fn totals(&self) -> Totals {
        self.slots.iter().fold(Totals::default(), |t, s| Totals {
            packets: t.packets + s.packets.load(Relaxed),
            bytes: t.bytes + s.bytes.load(Relaxed),
            last_hit_ns: t.last_hit_ns.max(s.last_hit_ns.load(Relaxed)),
        })
    }
}

/// A match kept in its wire form (`ofp_match`, padded to 8), decoded
/// only on the slow paths (stats, FLOW_REMOVED, trace).
///
/// Why: the decoded [`Match`] holds 80-byte entries in a `Vec` of its own,
/// ~450 bytes and one more allocation for a typical 5-field match, against
/// ~40 bytes here; at a million rules that was most of the table's memory
/// and of the time spent faulting it in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMatch(Box<[u8]>);

impl StoredMatch {
    /// Its length on the wire, padding included.
    pub fn wire_len(&self) -> usize {
        self.0.len()
    }

    /// Stores `m`.
    pub fn new(m: &Match) -> StoredMatch {
        let mut v = Vec::with_capacity(m.wire_len());
        m.encode(&mut v);
        StoredMatch(v.into_boxed_slice())
    }

    /// Stores a match as it came on the wire (`ofp_match` with its
    /// padding), for bytes that `Match::decode` accepted.
    pub fn from_wire(bytes: &[u8]) -> StoredMatch {
        StoredMatch(bytes.into())
    }

    /// The match. The bytes were encoded from a `Match` by
    /// [`StoredMatch::new`] or had been decoded by `Match::decode`
    /// ([`StoredMatch::from_wire`]), so decoding them gives it back; a
    /// failure would be a codec bug, shown as an empty match rather than a
    /// panic.
    pub fn get(&self) -> Match {
        let bytes = Bytes::copy_from_slice(&self.0);
        let decoded = Match::decode(&mut ofp::wire::Reader::new(
            &bytes,
            ErrorCode::MATCH_BAD_LEN,
        ));
        debug_assert!(decoded.is_ok(), "stored match does not decode");
        decoded.unwrap_or_default()
    }
}

/// An installed flow entry.
///
/// `repr(C)` with the fields a packet's execution reads first, so they
/// share the rule's first cache line; the match (packed and as sent) and
/// the bookkeeping come after.
#[derive(Debug)]
#[repr(C)]
pub struct Rule {
    pub counters: Arc<Counters>,
    /// A boxed slice, not a `Vec`: 16 bytes in the rule, no spare
    /// capacity. (Sharing equal lists between rules through an `Arc` was
    /// tried: it saved ~150 bytes per rule but hashing every list cost
    /// more ingest time than the allocations it saved, and lookups on
    /// large tables measured ~10% slower.)
    pub instructions: Box<[Instruction]>,
    pub cookie: u64,
    pub priority: u16,
    pub table_id: u8,
    /// Priority 0 and an empty match: the table-miss flow entry.
    pub table_miss: bool,
    /// Added by a `learn` action ([`crate::Pipeline::learn`]); counted
    /// against the table's cap on learned flows.
    pub learned: bool,
    pub flags: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub id: RuleId,
    /// When the entry was added (MODIFY keeps it), ns on the caller's clock.
    pub created_ns: u64,
    /// When the entry was added or last modified (a MODIFY's time): what
    /// its hard timeout and `hard_age` count from, and where its idle
    /// time starts again, as in Open vSwitch.
    pub modified_ns: u64,
    /// The match as the controller sent it (for stats and FLOW_REMOVED).
    pub match_: StoredMatch,
    /// The compiled match, packed ([`Rule::key`] gives it whole).
    pub packed: PackedKey,
}

impl Rule {
    /// Whether this is a conjunctive flow (its actions are Open vSwitch's
    /// `conjunction`s, and notes): a lookup never returns it
    /// ([`crate::lookup::conjunction`]).
    pub fn is_conjunctive(&self) -> bool {
        matches!(&*self.instructions, [Instruction::ApplyActions(list)]
            if list.iter().any(|a| matches!(a, ofp::Action::Conjunction(_))))
    }

    /// When the entry was last used: its last packet, or its addition or
    /// last modification if later (its idle timeout and `idle_age` count
    /// from here).
    pub fn last_used_ns(&self) -> u64 {
        self.counters.totals().last_hit_ns.max(self.modified_ns)
    }

    /// The compiled match.
    pub fn key(&self) -> MaskedKey {
        self.packed.unpack()
    }

    /// For looking ahead ([`crate::lookup::lookahead`]): reads, level by level,
    /// what a packet's run reads of this rule: its first line (0), the
    /// counters' and the instructions' first lines (1), this worker's
    /// counter slot and the first action (2). What it read, for a sink.
    #[inline]
    pub(crate) fn touch(&self, level: u8, worker: usize) -> u64 {
        match level {
            0 => self.cookie ^ self.id as u64,
            1 => {
                // No branch on what is read here: it is still in memory.
                let apply = matches!(
                    self.instructions.first(),
                    Some(Instruction::ApplyActions(_))
                );
                apply as u64 ^ self.counters.touch(0, worker)
            }
            _ => {
                let first = match self.instructions.first() {
                    Some(Instruction::ApplyActions(list)) => list
                        .first()
                        .is_some_and(|a| matches!(a, ofp::Action::Output { .. }))
                        as u64,
                    _ => 0,
                };
                first ^ self.counters.touch(1, worker)
            }
        }
    }

    /// Whether the rule's instructions output to `port` (for out_port
    /// filters): an output action, or, as Open vSwitch counts them, a
    /// `controller(...)` for CONTROLLER; inside a `clone` too.
    pub fn outputs_to(&self, port: u32) -> bool {
        self.actions().any(|a| match a {
            ofp::Action::Output { port: p, .. } | ofp::Action::OutputTrunc { port: p, .. } => {
                *p == port
            }
            ofp::Action::Controller(_) => port == ofp::port::port_no::CONTROLLER,
            _ => false,
        })
    }

    /// Whether the rule's instructions send to `group` (for out_group
    /// filters), inside a `clone` too.
    pub fn uses_group(&self, group: u32) -> bool {
        self.actions()
            .any(|a| matches!(a, ofp::Action::Group(g) if *g == group))
    }

    /// The meter the rule uses, if any.
    pub fn meter(&self) -> Option<u32> {
        self.instructions.iter().find_map(|i| match i {
            Instruction::Meter(m) => Some(*m),
            _ => None,
        })
    }

    /// Every action in apply-actions and write-actions instructions, and
    /// in the `clone`s among them ([`ofp::action::flattened`]).
    pub fn actions(&self) -> impl Iterator<Item = &ofp::Action> {
        self.instructions.iter().flat_map(|i| match i {
            Instruction::ApplyActions(a) | Instruction::WriteActions(a) => {
                ofp::action::flattened(a)
            }
            _ => ofp::action::flattened(&[]),
        })
    }

    /// Whether `cookie`/`mask` (from a flow-mod or stats request) selects this rule.
    pub fn cookie_matches(&self, cookie: u64, mask: u64) -> bool {
        self.cookie & mask == cookie & mask
    }
}
