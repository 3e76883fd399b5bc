//! One OpenFlow flow table: its rules and the indexes flow-mods need
//! (exact match+priority for ADD and strict commands). The classifier the
//! workers search is not here: the table logs each rule it adds and
//! removes, and the pipeline applies the log to the published classifiers
//! ([`crate::lookup::published`]).
//!
//! The indexes use the Fx hash: keys are rule ids and 352-byte masked keys
//! chosen by the controller, hashed once per flow-mod, where SipHash's
//! cost showed in the million-flow ingest profile and its flooding
//! resistance buys nothing (a controller that wants to slow the switch can
//! simply send more flow-mods).

use std::collections::BTreeMap;
use std::sync::Arc;

use ofp::msg::flow::FlowRemovedReason;

use crate::lookup::classifier::RuleId;
use crate::lookup::expiry::{expired, Deadlines};
use crate::lookup::matchkey::MaskedKey;
use crate::lookup::published::Op;
use crate::lookup::rule::Rule;

/// A flow table (the control plane's copy).
#[derive(Clone, Debug)]
pub struct FlowTable {
    pub id: u8,
    /// Rules beyond this are refused with OFPFMFC_TABLE_FULL.
    pub max_entries: usize,
    /// Rules added and removed since the last snapshot, for the
    /// published classifiers.
    pub(crate) ops: Vec<Op>,
    /// Every rule, by exact match and priority (the one index flow-mods
    /// need: ADD replaces an identical entry, strict commands name one),
    /// with the hash stored so growing the table never rehashes the
    /// 352-byte keys. One map, not a second one by id: each map was a
    /// cache miss per flow-mod in the million-flow profile.
    pub(crate) exact: hashbrown::HashTable<(u64, Arc<Rule>)>,
    /// Rules with an idle or hard timeout, and when each may expire
    /// ([`crate::lookup::expiry`]): expiry looks only at the rules due, so a large
    /// table of permanent or long-lived flows costs nothing to age.
    pub(crate) timed: BTreeMap<RuleId, Arc<Rule>>,
    deadlines: Deadlines,
    /// The matches of the rules added or removed since the last snapshot
    /// (for the workers' caches, [`crate::lookup::changes`]), at most
    /// [`CHANGES_KEPT`]; past that only `changes_overflow` is set.
    pub(crate) changes: Vec<MaskedKey>,
    pub(crate) changes_overflow: bool,
    /// Rules a `learn` action added ([`Rule::learned`]) now installed.
    learned: usize,
    /// Rules removed from this table so far (only grows): what the
    /// learned flows' bookkeeping needs to know whether any went.
    removals: u64,
    /// The longest match (wire bytes) a rule of this table has had (only
    /// grows): a MODIFY whose instructions fit a FLOW_STATS entry with
    /// it need not look at each rule's.
    pub(crate) match_len_max: usize,
}

/// Rule changes a table keeps between two snapshots (more than any
/// change log holds: past it the next snapshot starts the log afresh).
pub(crate) const CHANGES_KEPT: usize = 64;

impl FlowTable {
    pub fn new(id: u8, max_entries: usize) -> FlowTable {
        FlowTable {
            id,
            max_entries,
            ops: Vec::new(),
            exact: hashbrown::HashTable::new(),
            timed: BTreeMap::new(),
            deadlines: Deadlines::default(),
            changes: Vec::new(),
            changes_overflow: false,
            learned: 0,
            removals: 0,
            match_len_max: 0,
        }
    }

    /// Notes a rule change for the workers' caches. A rule's `conj_id`
    /// is left out of its change: the packets whose answer it can change
    /// are looked up with `conj_id` 0 and reach it through a conjunction
    /// ([`crate::lookup::conjunction`]), so the change must cover them whatever
    /// their `conj_id` (a broader change only costs cached answers).
    fn changed(&mut self, key: &MaskedKey) {
        if self.changes_overflow {
            return;
        }
        if self.changes.len() >= CHANGES_KEPT {
            self.changes_overflow = true;
            self.changes = Vec::new();
        } else {
            let mut k = *key;
            let conj = packet::slots::CONJ_ID;
            k.mask.w[conj.word as usize] &= !conj.mask();
            k.value.w[conj.word as usize] &= !conj.mask();
            self.changes.push(k);
        }
    }

    /// Number of installed rules.
    pub fn len(&self) -> usize {
        self.exact.len()
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty()
    }

    /// Installed rules a `learn` action added.
    pub fn learned_len(&self) -> usize {
        self.learned
    }

    /// Rules removed from this table so far (it only grows).
    pub(crate) fn removals(&self) -> u64 {
        self.removals
    }

    /// The rule with exactly this match and priority.
    pub fn get_exact(&self, key: &MaskedKey, priority: u16) -> Option<&Arc<Rule>> {
        let h = exact_hash(key, priority);
        self.exact
            .find(h, |(eh, r)| {
                *eh == h && r.priority == priority && r.packed.is(key)
            })
            .map(|(_, r)| r)
    }

    /// Every rule by its hash and the address of its version, without
    /// reading the rules (what a job in rounds looks at,
    /// [`crate::control::FlowModJob`]).
    pub(crate) fn addresses(&self) -> Vec<(u64, usize)> {
        self.exact
            .iter()
            .map(|(h, r)| (*h, Arc::as_ptr(r) as usize))
            .collect()
    }

    /// Every rule, in no particular order.
    pub fn rules(&self) -> impl Iterator<Item = &Arc<Rule>> {
        self.exact.iter().map(|(_, r)| r)
    }

    /// The rules that have a timeout.
    pub fn timed_rules(&self) -> impl Iterator<Item = &Arc<Rule>> {
        self.timed.values()
    }

    /// The rules whose timeout has passed at `now_ns`, and which one
    /// (still installed: the caller removes them). Looks only at the
    /// deadlines that have passed.
    pub(crate) fn due(&mut self, now_ns: u64) -> Vec<(Arc<Rule>, FlowRemovedReason)> {
        let mut out: Vec<(Arc<Rule>, FlowRemovedReason)> = Vec::new();
        // A rule replaced since it was tracked has two entries.
        let mut taken = std::collections::HashSet::new();
        while let Some(id) = self.deadlines.pop_due(now_ns) {
            let Some(r) = self.timed.get(&id) else {
                continue; // removed since
            };
            match expired(r, now_ns) {
                Some(reason) => {
                    if taken.insert(id) {
                        out.push((r.clone(), reason));
                    }
                }
                // Hit since: its deadline moved on.
                None => self.deadlines.track(r),
            }
        }
        self.deadlines
            .compact(self.timed.len(), self.timed.values().map(|r| &**r));
        out
    }

    /// Notes a timed rule's deadline, keeping the heap within its bound.
    fn track(&mut self, rule: &Rule) {
        self.deadlines.track(rule);
        self.deadlines
            .compact(self.timed.len(), self.timed.values().map(|r| &**r));
    }

    /// The earliest time a timed rule of this table may expire.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        self.deadlines.next()
    }

    /// Entries in the deadline heap (for tests of its bound).
    #[cfg(test)]
    pub(crate) fn deadline_entries(&self) -> usize {
        self.deadlines.len()
    }

    /// Adds a rule, its key at hand (`rule.key()`); the caller has checked
    /// no rule has its match and priority (else [`FlowTable::replace`]).
    pub(crate) fn insert_keyed(&mut self, rule: Arc<Rule>, key: &MaskedKey) {
        self.learned += usize::from(rule.learned);
        self.match_len_max = self.match_len_max.max(rule.match_.wire_len());
        self.ops.push(Op::Add(rule.clone()));
        if rule.idle_timeout != 0 || rule.hard_timeout != 0 {
            self.timed.insert(rule.id, rule.clone());
            self.track(&rule);
        }
        let h = exact_hash(key, rule.priority);
        self.exact.insert_unique(h, (h, rule), |(eh, _)| *eh);
        self.changed(key);
    }

    /// Removes `rule` (found by its match, priority and id).
    pub(crate) fn remove(&mut self, rule: &Rule) -> Option<Arc<Rule>> {
        let key = rule.key();
        let e = self
            .exact
            .find_entry(exact_hash(&key, rule.priority), |(_, r)| r.id == rule.id)
            .ok()?;
        let ((_, removed), _) = e.remove();
        self.learned -= usize::from(removed.learned);
        self.removals += 1;
        self.ops.push(Op::Remove(removed.clone()));
        self.timed.remove(&removed.id);
        self.changed(&key);
        Some(removed)
    }

    /// Removes every rule at once: the table's maps are swapped for empty
    /// ones and the published classifiers emptied ([`Op::Clear`]) rather
    /// than each rule removed, its key unpacked and hashed. Returns the
    /// map of the rules removed (what was logged and is now moot goes to
    /// `dispose`, as the timed rules' map).
    pub(crate) fn take_all(
        &mut self,
        dispose: &crate::garbage::Disposer,
    ) -> hashbrown::HashTable<(u64, Arc<Rule>)> {
        let all = std::mem::take(&mut self.exact);
        self.removals += all.len() as u64;
        self.learned = 0;
        dispose.dispose((
            std::mem::take(&mut self.timed),
            std::mem::take(&mut self.ops),
        ));
        self.deadlines = Deadlines::default();
        self.ops.push(Op::Clear);
        // Every cached answer of this table may change.
        self.changes_overflow = true;
        self.changes = Vec::new();
        all
    }

    /// Replaces a rule by a new version with the same id, match and
    /// priority: its entry points to the new version (in the classifiers
    /// too: [`Op::Replace`], not a removal and an insertion).
    pub(crate) fn replace(&mut self, rule: Arc<Rule>) {
        let key = rule.key();
        let h = exact_hash(&key, rule.priority);
        let Some((_, old)) = self.exact.find_mut(h, |(_, r)| r.id == rule.id) else {
            self.insert_keyed(rule, &key);
            return;
        };
        self.learned = self.learned + usize::from(rule.learned) - usize::from(old.learned);
        *old = rule.clone();
        if rule.idle_timeout != 0 || rule.hard_timeout != 0 {
            self.timed.insert(rule.id, rule.clone());
            self.track(&rule);
        } else {
            self.timed.remove(&rule.id);
        }
        self.ops.push(Op::Replace(rule));
        self.changed(&key);
    }
}

fn exact_hash(key: &MaskedKey, priority: u16) -> u64 {
    use std::hash::BuildHasher;
    rustc_hash::FxBuildHasher.hash_one((key, priority))
}
