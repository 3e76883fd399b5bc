//! Flows this worker taught (`learn`) and the control plane has not yet
//! published, seen by the worker's own next packets: Open vSwitch adds a
//! learned flow while it translates the packet that taught it, so the
//! packet after it already sees the flow; sluice's tables have one writer
//! (the control plane) and change only by publication, which comes
//! later. Without this, the reply to a frame a MAC-learning pipeline
//! just learned from was flooded until the next publication.
//!
//! Contract:
//! * A flow enters after the walk of the packet that taught it, so that
//!   packet never sees it (as in Open vSwitch, whose translation looks
//!   up the tables as they were when it began). It does not enter when
//!   the published table already holds it as it is (the same match,
//!   priority, instructions, cookie, timeouts and flags: the packets of
//!   a known MAC address teach their flow again every second), nor past
//!   [`MAX`] entries (the flow is then seen from its publication, as
//!   before).
//! * A lookup of table T whose answer has priority P (none: below every
//!   priority) is overridden by the entry of table T of the highest
//!   priority that matches the packet, if that priority is above P, or
//!   equal to it with the same match (the ADD will replace that rule).
//! * An entry leaves when the worker runs a snapshot whose
//!   [`Snapshot::learned_seen`] for this worker has reached its sequence
//!   number: the control plane took the flow then, whatever it did with
//!   it (added, unchanged, refused over a limit). One not acknowledged
//!   within [`TTL_NS`] leaves anyway (its flow was dropped on the way).
//! * While any entry is held the worker's cache of whole walks
//!   ([`crate::lookup::paths`]) is neither replayed nor filled: a walk
//!   recorded before could pass the table an entry changes. The
//!   exact-match cache still answers (it caches the classifier's answer,
//!   which an entry overrides after it). The cost on every lookup is one
//!   test of an empty list.
//!
//! What it does not do (docs/OVS-DIALECT.md): other workers see the flow
//! from its publication only, and the packets an entry matched are
//! counted on no flow.

use std::sync::Arc;

use packet::FlowKey;

use super::Learned;
use crate::lookup::matchkey::{compile, MaskedKey, PackedKey};
use crate::lookup::rule::{Counters, Rule, StoredMatch};
use crate::snapshot::Snapshot;

/// Flows held at most (a learn storm fills it in one batch; past it,
/// flows wait for publication as before).
pub const MAX: usize = 64;

/// How long an entry the control plane never acknowledged is held.
pub const TTL_NS: u64 = 1_000_000_000;

struct Entry {
    table: u8,
    key: MaskedKey,
    rule: Arc<Rule>,
    seq: u64,
    at_ns: u64,
}

/// One worker's taught flows (module doc).
#[derive(Default)]
pub(crate) struct Unpublished {
    entries: Vec<Entry>,
    /// The last sequence number given (per worker; 0: none yet).
    last_seq: u64,
    /// Flows held so far (for tests and counters).
    pub(super) held: u64,
}

/// None held: what a trace, a PACKET_OUT or a resumption looks through.
pub(super) static NONE: Unpublished = Unpublished {
    entries: Vec::new(),
    last_seq: 0,
    held: 0,
};

impl Unpublished {
    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Lets go of the entries `snap` acknowledges for `worker`, and of
    /// those older than [`TTL_NS`].
    #[cold]
    pub(super) fn prune(&mut self, snap: &Snapshot, worker: usize, now_ns: u64) {
        let seen = snap.learned_seen.get(worker).copied().unwrap_or(0);
        self.entries
            .retain(|e| e.seq > seen && now_ns.saturating_sub(e.at_ns) < TTL_NS);
    }

    /// Holds the flow `l` teaches, unless `snap` has it already or the
    /// list is full; when held, `l` carries its worker and sequence
    /// number for the control plane to acknowledge.
    #[cold]
    pub(super) fn hold(&mut self, l: &mut Learned, snap: &Snapshot, worker: usize, now_ns: u64) {
        if self.entries.len() >= MAX {
            return;
        }
        let fm = &l.flow_mod;
        let Ok(key) = compile(&fm.match_) else {
            return;
        };
        let Some(cls) = snap.tables.get(fm.table_id as usize) else {
            return;
        };
        // The flow's own values as a packet: the rule that answers them
        // first is the flow itself if it is published and not hidden.
        let mut probe = key.value;
        let published = crate::lookup::conjunction::lookup(cls, &mut probe, &mut Vec::new()).0;
        if published.is_some_and(|r| {
            r.priority == fm.priority
                && r.packed.is(&key)
                && *r.instructions == *fm.instructions
                && r.cookie == fm.cookie
                && r.idle_timeout == fm.idle_timeout
                && r.hard_timeout == fm.hard_timeout
                && r.flags == fm.flags
        }) {
            return;
        }
        self.last_seq += 1;
        let rule = Arc::new(Rule {
            counters: Arc::new(Counters::new(1)),
            instructions: fm.instructions.clone().into_boxed_slice(),
            cookie: fm.cookie,
            priority: fm.priority,
            table_id: fm.table_id,
            table_miss: false,
            learned: true,
            flags: fm.flags,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            // No rule of the tables: the learner of nothing.
            id: u32::MAX,
            created_ns: now_ns,
            modified_ns: now_ns,
            match_: StoredMatch::new(&fm.match_),
            packed: PackedKey::pack(&key),
        });
        // A flow taught again replaces its earlier entry.
        self.entries.retain(|e| {
            !(e.table == fm.table_id && e.rule.priority == fm.priority && e.key == key)
        });
        self.entries.push(Entry {
            table: fm.table_id,
            key,
            rule,
            seq: self.last_seq,
            at_ns: now_ns,
        });
        self.held += 1;
        l.worker = worker;
        l.seq = self.last_seq;
    }

    /// The answer to a lookup of `table` with `key` whose tables' answer
    /// was `found`: the entry that overrides it (module doc), or `found`.
    #[cold]
    pub(super) fn over<'a>(
        &'a self,
        table: u8,
        key: &FlowKey,
        found: Option<&'a Arc<Rule>>,
    ) -> Option<&'a Arc<Rule>> {
        let mut best: Option<&Entry> = None;
        for e in self
            .entries
            .iter()
            .filter(|e| e.table == table && e.key.matches(key))
        {
            let beats_found = match found {
                None => true,
                Some(r) => {
                    e.rule.priority > r.priority
                        || (e.rule.priority == r.priority && r.packed.is(&e.key))
                }
            };
            if beats_found && best.is_none_or(|b| e.rule.priority > b.rule.priority) {
                best = Some(e);
            }
        }
        best.map(|e| &e.rule).or(found)
    }
}
