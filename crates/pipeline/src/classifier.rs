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
//! have left up to date ([`crate::published`]); readers keep the snapshot
//! they hold until their next batch, so a packet sees the old rules or the
//! new ones, never a mix. Nothing here locks.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use packet::{FlowKey, KEY_WORDS};

use crate::matchkey::MaskedKey;

/// Identifies a rule; chosen by the owner of the rules (the flow table).
pub type RuleId = u32;

const NIL: u32 = u32::MAX;

#[inline]
fn mix(h: u64, w: u64) -> u64 {
    let x = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 29)
}

/// Rules that share one mask.
#[derive(Clone, Debug)]
struct Subtable<T> {
    mask: FlowKey,
    /// The key words this mask touches (non-zero mask words).
    words: Box<[u8]>,
    /// Masked values, `words.len()` per slot.
    values: Vec<u64>,
    prio: Vec<u16>,
    rule: Vec<RuleId>,
    /// What the owner stores with each rule (the flow table: its `Arc<Rule>`).
    data: Vec<Option<T>>,
    /// Next slot in the same hash chain (chains are kept by falling priority).
    next: Vec<u32>,
    free: Vec<u32>,
    /// Hash of masked words -> first slot of its chain.
    index: HashMap<u64, u32, BuildIdentity>,
    /// How many rules have each priority (to know the maximum after removals).
    prios: BTreeMap<u16, u32>,
}

#[derive(Clone, Copy, Default, Debug)]
struct BuildIdentity;
#[derive(Default)]
struct Identity(u64);
impl std::hash::Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}
impl std::hash::BuildHasher for BuildIdentity {
    type Hasher = Identity;
    fn build_hasher(&self) -> Identity {
        Identity(0)
    }
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
            prio: Vec::new(),
            rule: Vec::new(),
            data: Vec::new(),
            next: Vec::new(),
            free: Vec::new(),
            index: HashMap::default(),
            prios: BTreeMap::new(),
        }
    }

    fn max_priority(&self) -> Option<u16> {
        self.prios.keys().next_back().copied()
    }

    fn len(&self) -> usize {
        self.rule.len() - self.free.len()
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
        let h = self.hash_key(key);
        let mut slot = *self.index.get(&h)?;
        let mut best: Option<(u16, RuleId, u32)> = None;
        while slot != NIL {
            let p = self.prio[slot as usize];
            if best.is_some_and(|(bp, _, _)| p < bp) {
                break; // chains fall in priority: nothing better follows
            }
            if self.slot_matches(slot, key) {
                let r = self.rule[slot as usize];
                if best.is_none_or(|(bp, br, _)| p > bp || (p == bp && r < br)) {
                    best = Some((p, r, slot));
                }
            }
            slot = self.next[slot as usize];
        }
        best
    }

    fn insert(&mut self, key: &MaskedKey, priority: u16, id: RuleId, data: T) {
        let n = self.words.len();
        let slot = match self.free.pop() {
            Some(s) => {
                for (j, &i) in self.words.iter().enumerate() {
                    self.values[s as usize * n + j] = key.value.w[i as usize];
                }
                self.prio[s as usize] = priority;
                self.rule[s as usize] = id;
                self.data[s as usize] = Some(data);
                s
            }
            None => {
                self.values
                    .extend(self.words.iter().map(|&i| key.value.w[i as usize]));
                self.prio.push(priority);
                self.rule.push(id);
                self.data.push(Some(data));
                self.next.push(NIL);
                (self.rule.len() - 1) as u32
            }
        };
        let h = self.hash_key(&key.value);
        // Insert into the chain, keeping it in falling priority order.
        match self.index.get(&h).copied() {
            None => {
                self.next[slot as usize] = NIL;
                self.index.insert(h, slot);
            }
            Some(first) if self.prio[first as usize] <= priority => {
                self.next[slot as usize] = first;
                self.index.insert(h, slot);
            }
            Some(first) => {
                let mut at = first;
                while self.next[at as usize] != NIL
                    && self.prio[self.next[at as usize] as usize] > priority
                {
                    at = self.next[at as usize];
                }
                self.next[slot as usize] = self.next[at as usize];
                self.next[at as usize] = slot;
            }
        }
        *self.prios.entry(priority).or_default() += 1;
    }

    /// Gives rule `id` new data; false if it is not here.
    fn replace_data(&mut self, key: &MaskedKey, priority: u16, id: RuleId, data: T) -> bool {
        let h = self.hash_key(&key.value);
        let Some(&first) = self.index.get(&h) else {
            return false;
        };
        let mut at = first;
        while at != NIL {
            if self.rule[at as usize] == id && self.prio[at as usize] == priority {
                self.data[at as usize] = Some(data);
                return true;
            }
            at = self.next[at as usize];
        }
        false
    }

    fn remove(&mut self, key: &MaskedKey, priority: u16, id: RuleId) -> bool {
        let h = self.hash_key(&key.value);
        let Some(first) = self.index.get(&h).copied() else {
            return false;
        };
        let mut prev = NIL;
        let mut at = first;
        while at != NIL {
            if self.rule[at as usize] == id && self.prio[at as usize] == priority {
                let nxt = self.next[at as usize];
                if prev == NIL {
                    if nxt == NIL {
                        self.index.remove(&h);
                    } else {
                        self.index.insert(h, nxt);
                    }
                } else {
                    self.next[prev as usize] = nxt;
                }
                self.rule[at as usize] = NIL;
                self.data[at as usize] = None;
                self.next[at as usize] = NIL;
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
            at = self.next[at as usize];
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
            st.rule
                .iter()
                .zip(st.prio.iter())
                .zip(st.data.iter())
                .filter_map(|((&id, &p), d)| Some((id, p, d.as_ref()?)))
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
        self.subtables[st].data[slot as usize].as_ref()
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

    /// Calls `f` with the priority and data of every rule that matches
    /// `key` with a priority above `above` (every matching rule when
    /// `None`), subtable by subtable from the highest priority down;
    /// stops early when `f` returns false. For the conjunctive rules of a
    /// table (`crate::conjunction`), where all the matches count, not
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
            let Some(&first) = st.index.get(&h) else {
                continue;
            };
            // A chain holds the rules of one hash, by falling priority.
            let mut at = first;
            while at != NIL {
                let p = st.prio[at as usize];
                if above.is_some_and(|a| p <= a) {
                    break;
                }
                if st.slot_matches(at, key) {
                    if let Some(d) = st.data[at as usize].as_ref() {
                        if !f(p, d) {
                            return;
                        }
                    }
                }
                at = st.next[at as usize];
            }
        }
    }

    /// Approximate heap bytes held (for memory figures).
    pub fn heap_bytes(&self) -> usize {
        self.subtables
            .iter()
            .map(|s| {
                s.values.capacity() * 8
                    + s.prio.capacity() * 2
                    + s.rule.capacity() * 4
                    + s.data.capacity() * std::mem::size_of::<Option<T>>()
                    + s.next.capacity() * 4
                    + s.free.capacity() * 4
                    + s.index.capacity() * 13
                    + std::mem::size_of::<Subtable<T>>()
            })
            .sum()
    }
}
