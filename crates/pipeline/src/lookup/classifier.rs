//! The compiled classifier: tuple-space search specialised to the installed
//! rules.
//!
//! Rules are grouped by mask into subtables (one per distinct mask, as in
//! Open vSwitch's classifier). A subtable knows which key words its mask
//! touches and hashes only those; its rules' masked values live in one flat
//! arena, chained by hash. Subtables are visited from the highest priority
//! any of their rules has, and the search stops as soon as the best match so
//! far outranks every subtable left, so a lookup usually touches one or two
//! subtables whatever the table's size.
//!
//! Ties between rules of equal priority that both match are broken by the
//! lower [`RuleId`] (the spec leaves the choice open; being deterministic
//! lets the differential tests compare with a linear scan exactly).
//!
//! Publishing: a `Classifier` is cheap to clone (its subtables are behind
//! `Arc`), and an update of a clone copies only the subtables it touches
//! (copy-on-write); an update of a classifier no one else holds changes it
//! in place. The control plane keeps two copies and brings the one readers
//! have left up to date ([`crate::lookup::published`]); readers keep the snapshot
//! they hold until their next batch, so a packet sees the old rules or the
//! new ones, never a mix. Nothing here locks.

use std::collections::BTreeMap;
use std::sync::Arc;

use packet::{FlowKey, KEY_WORDS};

use crate::lookup::matchkey::MaskedKey;

/// Identifies a rule; chosen by the owner of the rules (the flow table).
pub type RuleId = u32;

const NIL: u32 = u32::MAX;

#[inline]
fn mix(h: u64, w: u64) -> u64 {
    let x = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 29)
}

/// One rule's place in a subtable: what a lookup reads of it after its
/// values, together on one cache line.
#[derive(Clone, Debug)]
struct Entry<T> {
    /// What the owner stores with the rule (the flow table: its `Arc<Rule>`).
    data: Option<T>,
    /// Next slot in the same hash chain (chains are kept by falling priority).
    next: u32,
    /// NIL for a free slot.
    rule: RuleId,
    prio: u16,
}

/// A chain's place in the index: the full hash of its masked values and
/// its first slot (NIL: an empty bucket).
#[derive(Clone, Copy, Debug)]
struct Bucket {
    hash: u64,
    slot: u32,
}

const EMPTY: Bucket = Bucket { hash: 0, slot: NIL };

/// Hash of masked values -> first slot of its chain: open addressing with
/// linear probing, at most three quarters full, removal by backward shift
/// (no tombstones). Its own rather than a `HashMap` so that a lookup is one
/// bucket read a worker can issue ahead of time ([`crate::lookup::lookahead`]),
/// and the bucket holds the slot itself.
#[derive(Clone, Debug, Default)]
struct Index {
    buckets: Vec<Bucket>,
    used: usize,
}

impl Index {
    #[inline]
    fn home(&self, h: u64) -> usize {
        // The hash's low bits come out of a multiply-xorshift: spread enough.
        h as usize & (self.buckets.len() - 1)
    }

    /// The first slot of the chain for `h`.
    #[inline]
    fn get(&self, h: u64) -> Option<u32> {
        if self.buckets.is_empty() {
            return None;
        }
        let mask = self.buckets.len() - 1;
        let mut i = self.home(h);
        loop {
            let b = self.buckets[i];
            if b.slot == NIL {
                return None;
            }
            if b.hash == h {
                return Some(b.slot);
            }
            i = (i + 1) & mask;
        }
    }

    /// Makes `slot` the first of the chain for `h`, creating the chain.
    fn set(&mut self, h: u64, slot: u32) {
        if (self.used + 1) * 4 > self.buckets.len() * 3 {
            self.grow();
        }
        let mask = self.buckets.len() - 1;
        let mut i = self.home(h);
        loop {
            let b = &mut self.buckets[i];
            if b.slot == NIL {
                *b = Bucket { hash: h, slot };
                self.used += 1;
                return;
            }
            if b.hash == h {
                b.slot = slot;
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Forgets the chain for `h` (there must be one).
    fn remove(&mut self, h: u64) {
        let mask = self.buckets.len() - 1;
        let mut hole = self.home(h);
        while self.buckets[hole].hash != h || self.buckets[hole].slot == NIL {
            debug_assert!(self.buckets[hole].slot != NIL, "no chain to remove");
            hole = (hole + 1) & mask;
        }
        // Backward shift: every bucket after the hole, up to the next empty
        // one, moves into the hole unless its home lies after the hole.
        let mut j = hole;
        loop {
            j = (j + 1) & mask;
            let b = self.buckets[j];
            if b.slot == NIL {
                break;
            }
            let home = self.home(b.hash);
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.buckets[hole] = b;
                hole = j;
            }
        }
        self.buckets[hole] = EMPTY;
        self.used -= 1;
    }

    fn grow(&mut self) {
        let n = (self.buckets.len() * 2).max(8);
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY; n]);
        self.used = 0;
        for b in old.into_iter().filter(|b| b.slot != NIL) {
            self.set(b.hash, b.slot);
        }
    }

    fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<Bucket>()
    }
}

/// Rules that share one mask.
#[derive(Clone, Debug)]
struct Subtable<T> {
    mask: FlowKey,
    /// The key words this mask touches (non-zero mask words).
    words: Box<[u8]>,
    /// Masked values, `words.len()` per slot.
    values: Vec<u64>,
    entries: Vec<Entry<T>>,
    free: Vec<u32>,
    index: Index,
    /// How many rules have each priority (to know the maximum after removals).
    prios: BTreeMap<u16, u32>,
}

impl<T: Clone> Subtable<T> {
    fn new(mask: FlowKey) -> Subtable<T> {
        let words: Box<[u8]> = (0..KEY_WORDS as u8)
            .filter(|&i| mask.w[i as usize] != 0)
            .collect();
        Subtable {
            mask,
            words,
            values: Vec::new(),
            entries: Vec::new(),
            free: Vec::new(),
            index: Index::default(),
            prios: BTreeMap::new(),
        }
    }

    fn max_priority(&self) -> Option<u16> {
        self.prios.keys().next_back().copied()
    }

    fn len(&self) -> usize {
        self.entries.len() - self.free.len()
    }

    #[inline]
    fn hash_key(&self, key: &FlowKey) -> u64 {
        self.words.iter().fold(0, |h, &i| {
            mix(h, key.w[i as usize] & self.mask.w[i as usize])
        })
    }

    #[inline]
    fn slot_values(&self, slot: u32) -> &[u64] {
        let n = self.words.len();
        &self.values[slot as usize * n..slot as usize * n + n]
    }

    #[inline]
    fn slot_matches(&self, slot: u32, key: &FlowKey) -> bool {
        self.slot_values(slot)
            .iter()
            .zip(self.words.iter())
            .all(|(v, &i)| key.w[i as usize] & self.mask.w[i as usize] == *v)
    }

    /// Best (priority, rule, slot) in this subtable for `key`.
    #[inline]
    fn lookup(&self, key: &FlowKey) -> Option<(u16, RuleId, u32)> {
        let mut slot = self.index.get(self.hash_key(key))?;
        let mut best: Option<(u16, RuleId, u32)> = None;
        while slot != NIL {
            let e = &self.entries[slot as usize];
            if best.is_some_and(|(bp, _, _)| e.prio < bp) {
                break; // chains fall in priority: nothing better follows
            }
            if self.slot_matches(slot, key)
                && best.is_none_or(|(bp, br, _)| e.prio > bp || (e.prio == bp && e.rule < br))
            {
                best = Some((e.prio, e.rule, slot));
            }
            slot = e.next;
        }
        best
    }

    fn insert(&mut self, key: &MaskedKey, priority: u16, id: RuleId, data: T) {
        let n = self.words.len();
        let entry = Entry {
            data: Some(data),
            next: NIL,
            rule: id,
            prio: priority,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                for (j, &i) in self.words.iter().enumerate() {
                    self.values[s as usize * n + j] = key.value.w[i as usize];
                }
                self.entries[s as usize] = entry;
                s
            }
            None => {
                self.values
                    .extend(self.words.iter().map(|&i| key.value.w[i as usize]));
                self.entries.push(entry);
                (self.entries.len() - 1) as u32
            }
        };
        let h = self.hash_key(&key.value);
        // Insert into the chain, keeping it in falling priority order.
        match self.index.get(h) {
            None => self.index.set(h, slot),
            Some(first) if self.entries[first as usize].prio <= priority => {
                self.entries[slot as usize].next = first;
                self.index.set(h, slot);
            }
            Some(first) => {
                let mut at = first;
                loop {
                    let nx = self.entries[at as usize].next;
                    if nx == NIL || self.entries[nx as usize].prio <= priority {
                        break;
                    }
                    at = nx;
                }
                self.entries[slot as usize].next = self.entries[at as usize].next;
                self.entries[at as usize].next = slot;
            }
        }
        *self.prios.entry(priority).or_default() += 1;
    }

    /// The slot of rule `id` (with this key and priority), if here.
    fn slot_of(&self, key: &MaskedKey, priority: u16, id: RuleId) -> Option<u32> {
        let mut at = self.index.get(self.hash_key(&key.value))?;
        while at != NIL {
            let e = &self.entries[at as usize];
            if e.rule == id && e.prio == priority {
                return Some(at);
            }
            at = e.next;
        }
        None
    }

    /// Gives rule `id` new data; false if it is not here.
    fn replace_data(&mut self, key: &MaskedKey, priority: u16, id: RuleId, data: T) -> bool {
        match self.slot_of(key, priority, id) {
            Some(at) => {
                self.entries[at as usize].data = Some(data);
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, key: &MaskedKey, priority: u16, id: RuleId) -> bool {
        let h = self.hash_key(&key.value);
        let Some(first) = self.index.get(h) else {
            return false;
        };
        let mut prev = NIL;
        let mut at = first;
        while at != NIL {
            let e = &self.entries[at as usize];
            if e.rule == id && e.prio == priority {
                let nxt = e.next;
                if prev != NIL {
                    self.entries[prev as usize].next = nxt;
                } else if nxt == NIL {
                    self.index.remove(h);
                } else {
                    self.index.set(h, nxt);
                }
                self.entries[at as usize] = Entry {
                    data: None,
                    next: NIL,
                    rule: NIL,
                    prio: 0,
                };
                self.free.push(at);
                if let Some(c) = self.prios.get_mut(&priority) {
                    *c -= 1;
                    if *c == 0 {
                        self.prios.remove(&priority);
                    }
                }
                return true;
            }
            prev = at;
            at = e.next;
        }
        false
    }
}

/// A set of prioritised masked rules with fast lookup. See the module docs.
#[derive(Clone, Debug)]
pub struct Classifier<T = ()> {
    subtables: Vec<Arc<Subtable<T>>>,
    /// Each subtable's maximum priority, in the same order as `subtables`,
    /// which is kept sorted by it (highest first).
    max_prio: Vec<u16>,
    /// Mask -> position in `subtables` (rebuilt when the order changes).
    by_mask: rustc_hash::FxHashMap<FlowKey, usize>,
    rules: usize,
}

impl<T: Clone> Default for Classifier<T> {
    fn default() -> Self {
        Classifier {
            subtables: Vec::new(),
            max_prio: Vec::new(),
            by_mask: Default::default(),
            rules: 0,
        }
    }
}

impl<T: Clone> Classifier<T> {
    pub fn new() -> Self {
        Classifier::default()
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules
    }

    pub fn is_empty(&self) -> bool {
        self.rules == 0
    }

    /// Number of distinct masks.
    pub fn subtables(&self) -> usize {
        self.subtables.len()
    }

    fn find(&self, mask: &FlowKey) -> Option<usize> {
        self.by_mask.get(mask).copied()
    }

    fn reorder(&mut self) {
        let mut pairs: Vec<(u16, Arc<Subtable<T>>)> = self
            .subtables
            .drain(..)
            .filter_map(|s| s.max_priority().map(|p| (p, s)))
            .collect();
        pairs.sort_by_key(|p| std::cmp::Reverse(p.0));
        self.max_prio = pairs.iter().map(|p| p.0).collect();
        self.subtables = pairs.into_iter().map(|p| p.1).collect();
        self.by_mask = self
            .subtables
            .iter()
            .enumerate()
            .map(|(i, s)| (s.mask, i))
            .collect();
    }

    /// Every rule as (id, priority, data), subtable by subtable, in no
    /// particular order: for compilers of the table (the XDP fast path).
    pub fn entries(&self) -> impl Iterator<Item = (RuleId, u16, &T)> {
        self.subtables.iter().flat_map(|st| {
            st.entries
                .iter()
                .filter_map(|e| Some((e.rule, e.prio, e.data.as_ref()?)))
        })
    }

    /// Adds rule `id` with no data (for classifiers of `()`).
    pub fn insert(&mut self, id: RuleId, key: &MaskedKey, priority: u16)
    where
        T: Default,
    {
        self.insert_with(id, key, priority, T::default())
    }

    /// Adds rule `id` carrying `data`. The caller guarantees ids are unique.
    pub fn insert_with(&mut self, id: RuleId, key: &MaskedKey, priority: u16, data: T) {
        let i = match self.find(&key.mask) {
            Some(i) => i,
            None => {
                self.subtables.push(Arc::new(Subtable::new(key.mask)));
                self.max_prio.push(0);
                self.by_mask.insert(key.mask, self.subtables.len() - 1);
                self.subtables.len() - 1
            }
        };
        let st = Arc::make_mut(&mut self.subtables[i]);
        st.insert(key, priority, id, data);
        self.rules += 1;
        if st.max_priority() != Some(self.max_prio[i]) || st.len() == 1 {
            self.reorder();
        }
    }

    /// Removes rule `id` (inserted with this key and priority); false if absent.
    pub fn remove(&mut self, id: RuleId, key: &MaskedKey, priority: u16) -> bool {
        let Some(i) = self.find(&key.mask) else {
            return false;
        };
        let st = Arc::make_mut(&mut self.subtables[i]);
        if !st.remove(key, priority, id) {
            return false;
        }
        self.rules -= 1;
        if st.len() == 0 || st.max_priority() != Some(self.max_prio[i]) {
            self.reorder();
        }
        true
    }

    /// Gives rule `id` (inserted with this key and priority) new data, in
    /// place; false if absent.
    pub fn replace_data(&mut self, id: RuleId, key: &MaskedKey, priority: u16, data: T) -> bool {
        let Some(i) = self.find(&key.mask) else {
            return false;
        };
        Arc::make_mut(&mut self.subtables[i]).replace_data(key, priority, id, data)
    }

    /// The highest-priority rule matching `key` (ties: lowest id).
    #[inline]
    pub fn lookup(&self, key: &FlowKey) -> Option<RuleId> {
        self.lookup_with_priority(key).map(|(_, r)| r)
    }

    /// Like [`Classifier::lookup`], with the rule's priority.
    #[inline]
    pub fn lookup_with_priority(&self, key: &FlowKey) -> Option<(u16, RuleId)> {
        self.find_best(key).map(|(p, r, _, _)| (p, r))
    }

    /// The best rule's data.
    #[inline]
    pub fn lookup_data(&self, key: &FlowKey) -> Option<&T> {
        let (_, _, st, slot) = self.find_best(key)?;
        self.subtables[st].entries[slot as usize].data.as_ref()
    }

    #[inline]
    fn find_best(&self, key: &FlowKey) -> Option<(u16, RuleId, usize, u32)> {
        let mut best: Option<(u16, RuleId, usize, u32)> = None;
        for (i, (st, &maxp)) in self.subtables.iter().zip(self.max_prio.iter()).enumerate() {
            if let Some((bp, ..)) = best {
                if maxp < bp {
                    break;
                }
            }
            if let Some((p, r, slot)) = st.lookup(key) {
                if best.is_none_or(|(bp, br, ..)| p > bp || (p == bp && r < br)) {
                    best = Some((p, r, i, slot));
                }
            }
        }
        best
    }

    /// For looking ahead ([`crate::lookup::lookahead`]): the hash of `key` in the
    /// first subtable (the one a lookup starts with), 0 when there is none.
    #[inline]
    pub(crate) fn ahead_hash(&self, key: &FlowKey) -> u64 {
        self.subtables.first().map_or(0, |st| st.hash_key(key))
    }

    /// For looking ahead: reads the home bucket of `hash` in the first
    /// subtable's index, without acting on what it holds (a branch on a
    /// value still in memory would stall the pass); what it read.
    #[inline]
    pub(crate) fn ahead_bucket(&self, hash: u64) -> u64 {
        match self.subtables.first() {
            Some(st) if !st.index.buckets.is_empty() => st.index.buckets[st.index.home(hash)].hash,
            _ => 0,
        }
    }

    /// For looking ahead, once the bucket is read: the first slot of the
    /// chain for `hash` in the first subtable (NIL: none).
    #[inline]
    pub(crate) fn ahead_chain(&self, hash: u64) -> u32 {
        self.subtables
            .first()
            .and_then(|st| st.index.get(hash))
            .unwrap_or(NIL)
    }

    /// For looking ahead: reads slot `slot`'s entry and the first and last
    /// of its values in the first subtable; what it read.
    #[inline]
    pub(crate) fn ahead_slot(&self, slot: u32) -> u64 {
        let Some(st) = self.subtables.first().filter(|_| slot != NIL) else {
            return 0;
        };
        let v = st.slot_values(slot);
        let (first, last) = (v.first().copied(), v.last().copied());
        st.entries[slot as usize].prio as u64 ^ first.unwrap_or(0) ^ last.unwrap_or(0)
    }

    /// For looking ahead, once the slot is read: its data.
    #[inline]
    pub(crate) fn ahead_data(&self, slot: u32) -> Option<&T> {
        let st = self.subtables.first().filter(|_| slot != NIL)?;
        st.entries[slot as usize].data.as_ref()
    }

    /// Calls `f` with the priority and data of every rule that matches
    /// `key` with a priority above `above` (every matching rule when
    /// `None`), subtable by subtable from the highest priority down;
    /// stops early when `f` returns false. For the conjunctive rules of a
    /// table (`crate::lookup::conjunction`), where all the matches count, not
    /// only the best.
    pub fn for_each_match_above(
        &self,
        key: &FlowKey,
        above: Option<u16>,
        mut f: impl FnMut(u16, &T) -> bool,
    ) {
        for (st, &maxp) in self.subtables.iter().zip(self.max_prio.iter()) {
            if above.is_some_and(|a| maxp <= a) {
                break;
            }
            let h = st.hash_key(key);
            let Some(first) = st.index.get(h) else {
                continue;
            };
            // A chain holds the rules of one hash, by falling priority.
            let mut at = first;
            while at != NIL {
                let e = &st.entries[at as usize];
                if above.is_some_and(|a| e.prio <= a) {
                    break;
                }
                if st.slot_matches(at, key) {
                    if let Some(d) = e.data.as_ref() {
                        if !f(e.prio, d) {
                            return;
                        }
                    }
                }
                at = e.next;
            }
        }
    }

    /// Approximate heap bytes held (for memory figures).
    pub fn heap_bytes(&self) -> usize {
        self.subtables
            .iter()
            .map(|s| {
                s.values.capacity() * 8
                    + s.entries.capacity() * std::mem::size_of::<Entry<T>>()
                    + s.free.capacity() * 4
                    + s.index.heap_bytes()
                    + std::mem::size_of::<Subtable<T>>()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// The index answers as a map from hash to slot through any
        /// sequence of sets and removals, with hashes crowded onto a few
        /// home buckets so that probing and the backward shift wrap.
        #[test]
        fn index_is_a_map(ops in proptest::collection::vec((any::<bool>(), 0u64..40, 0u32..1000), 1..400)) {
            let mut ix = Index::default();
            let mut model: HashMap<u64, u32> = HashMap::new();
            for (set, k, slot) in ops {
                // Few distinct low bits, distinct full hashes.
                let h = (k << 40) | (k % 3);
                if set || !model.contains_key(&h) {
                    ix.set(h, slot);
                    model.insert(h, slot);
                } else {
                    ix.remove(h);
                    model.remove(&h);
                }
                prop_assert_eq!(ix.used, model.len());
                for k in 0u64..40 {
                    let h = (k << 40) | (k % 3);
                    prop_assert_eq!(ix.get(h), model.get(&h).copied());
                }
            }
        }
    }
}
