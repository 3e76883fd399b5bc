//! The classifiers the workers read: two copies, each brought up to date
//! from a log of rule changes when it is published, so that a publication
//! costs the changes made since, never the size of the tables.
//!
//! Why: a snapshot must not change under the workers while the control
//! plane changes rules all the time. Sharing one classifier between the
//! two with copy-on-write subtables (what sluice did before) made the
//! first change after each publication copy the whole subtable it touched,
//! a cost growing with the table; the agent had to space publications
//! 2 us per installed rule (200 ms at 100 000 rules) so that a stream of
//! flow-mods did not copy a growing table once per socket read, and a
//! flow-mod sent without a barrier waited that long to take effect.
//!
//! How: the control plane's flow tables keep no classifier. They log every
//! rule they add and remove, and a publication ([`Published::tables`])
//! takes a copy that no snapshot holds any more, applies to it the changes
//! it has not seen, and hands it out. With two copies that is the one the
//! workers ran before the last publication: each change is applied twice,
//! once to each copy, and nothing is copied. (Open vSwitch gets the same
//! from one classifier whose rules are visible in version ranges; two
//! copies cost memory instead, about the classifier's size once more, and
//! keep the readers' lookup exactly as it was.)
//!
//! When no copy is free (a worker still runs the version before last, the
//! XDP fast path is compiling it, a scrape reads it), a publication clones
//! the newest copy: its subtables are shared, and those the changes touch
//! are copied, as before. That is also how the second copy is made, the
//! first time rules change after a publication. [`Published::reusable`]
//! tells the caller whether the next publication is cheap, so that it can
//! wait a moment instead.
//!
//! Contract: the tables a publication returns answer every lookup as
//! classifiers built from scratch from the rules added and not removed
//! (the property test below holds this with random holders).

use std::collections::VecDeque;
use std::sync::Arc;

use crate::lookup::classifier::Classifier;
use crate::lookup::rule::Rule;

/// One flow table as a snapshot holds it: the classifier of the rules a
/// lookup can return, and apart from it the conjunctive rules (whose
/// actions are `conjunction`s, [`crate::lookup::conjunction`]), which a lookup
/// only consults. Dereferences to the first: everything that looks rules
/// up or lists them sees the ordinary rules, and only the conjunction
/// lookup and the XDP compiler look at `conj`.
#[derive(Clone, Debug, Default)]
pub struct TableClassifier {
    pub rules: Classifier<Arc<Rule>>,
    pub conj: Classifier<Arc<Rule>>,
}

impl std::ops::Deref for TableClassifier {
    type Target = Classifier<Arc<Rule>>;
    fn deref(&self) -> &Classifier<Arc<Rule>> {
        &self.rules
    }
}

impl TableClassifier {
    /// The classifier `r` belongs in.
    fn of(&mut self, r: &Rule) -> &mut Classifier<Arc<Rule>> {
        if r.is_conjunctive() {
            &mut self.conj
        } else {
            &mut self.rules
        }
    }

    fn heap_bytes(&self) -> usize {
        self.rules.heap_bytes() + self.conj.heap_bytes()
    }
}

/// One [`TableClassifier`] per flow table, as a snapshot holds them.
pub type Tables = Vec<TableClassifier>;

/// A rule change, as the flow tables log it.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Add(Arc<Rule>),
    Remove(Arc<Rule>),
    /// A new version of a rule with the same id, match and priority.
    Replace(Arc<Rule>),
    /// The table is empty: what a copy had is dropped at once, rather
    /// than removed rule by rule (a DELETE of every flow).
    Clear,
}

/// The published copies and the log they are brought up to date from.
#[derive(Clone, Debug)]
pub(crate) struct Published {
    /// One or two copies, oldest first, each with the log position it
    /// has applied (changes `[0, pos)`).
    copies: VecDeque<(u64, Arc<Tables>)>,
    /// The changes not every copy has applied: `log[0]` is change `base`.
    log: VecDeque<(u8, Op)>,
    base: u64,
}

impl Published {
    pub(crate) fn new(n_tables: usize) -> Published {
        let empty: Tables = (0..n_tables).map(|_| TableClassifier::default()).collect();
        Published {
            copies: VecDeque::from([(0, Arc::new(empty))]),
            log: VecDeque::new(),
            base: 0,
        }
    }

    fn end(&self) -> u64 {
        self.base + self.log.len() as u64
    }

    /// Logs changes made to table `table`.
    pub(crate) fn log(&mut self, table: u8, ops: impl IntoIterator<Item = Op>) {
        self.log.extend(ops.into_iter().map(|o| (table, o)));
    }

    /// Whether [`Published::tables`] would apply the changes to a copy no
    /// one holds (or has nothing to apply), rather than copy what they
    /// touch; `more`: changes are still to be logged. True too while
    /// there is only one copy: the second is made once, by copying.
    pub(crate) fn reusable(&self, more: bool) -> bool {
        let end = self.end();
        (!more && self.copies.back().is_some_and(|c| c.0 == end))
            || self.copies.len() < 2
            || self.copies.iter().any(|c| Arc::strong_count(&c.1) == 1)
    }

    /// The tables with every logged change applied. A table's
    /// classifiers emptied at once ([`Op::Clear`]) go to `dispose`, and
    /// the changes logged before its last clear are skipped.
    pub(crate) fn tables(&mut self, dispose: &crate::garbage::Disposer) -> Arc<Tables> {
        let end = self.end();
        let newest = self.copies.len() - 1;
        if self.copies[newest].0 == end {
            return self.copies[newest].1.clone();
        }
        // The oldest copy first: applying to it lets the log shrink.
        let free = (0..self.copies.len()).find(|&i| Arc::strong_count(&self.copies[i].1) == 1);
        let (pos, mut tables) = match free {
            Some(i) => {
                let c = self.copies.remove(i).expect("in range");
                if i > 0 {
                    // The older copy is still held: let it go rather than
                    // keep the log growing for it.
                    self.copies.clear();
                }
                c
            }
            None => {
                let (pos, t) = &self.copies[newest];
                let fresh = (*pos, Arc::new(Tables::clone(t)));
                if self.copies.len() == 2 {
                    self.copies.pop_front();
                }
                fresh
            }
        };
        let t = Arc::get_mut(&mut tables).expect("a free or fresh copy");
        let from = (pos - self.base) as usize;
        // Where each table's last clear is: what comes before it in that
        // table is moot (a MODIFY of a million flows followed by a DELETE
        // of them all need not be applied first).
        let mut cleared: Vec<usize> = Vec::new();
        for (i, (table, op)) in self.log.range(from..).enumerate() {
            if matches!(op, Op::Clear) {
                let t = *table as usize;
                if cleared.len() <= t {
                    cleared.resize(t + 1, 0);
                }
                cleared[t] = i + 1;
            }
        }
        for (i, (table, op)) in self.log.range(from..).enumerate() {
            if cleared.get(*table as usize).is_some_and(|&c| i + 1 < c) {
                continue;
            }
            let tc = &mut t[*table as usize];
            match op {
                Op::Add(r) => tc.of(r).insert_with(r.id, &r.key(), r.priority, r.clone()),
                Op::Remove(r) => {
                    // Removed as the version that was added: a replace may
                    // have moved it between the two classifiers.
                    let key = r.key();
                    if !tc.rules.remove(r.id, &key, r.priority) {
                        tc.conj.remove(r.id, &key, r.priority);
                    }
                }
                Op::Replace(r) => {
                    let key = r.key();
                    if !tc.of(r).replace_data(r.id, &key, r.priority, r.clone()) {
                        // New actions can make a rule conjunctive or not:
                        // it moves to the other classifier.
                        let moved = tc.rules.remove(r.id, &key, r.priority)
                            || tc.conj.remove(r.id, &key, r.priority);
                        debug_assert!(moved, "replaced rule {} not in the classifier", r.id);
                        tc.of(r).insert_with(r.id, &key, r.priority, r.clone());
                    }
                }
                Op::Clear => dispose.dispose(std::mem::take(tc)),
            }
        }
        self.copies.push_back((end, tables.clone()));
        let oldest = self.copies[0].0;
        self.log.drain(..(oldest - self.base) as usize);
        self.base = oldest;
        tables
    }

    /// Heap bytes of the newest copy's classifiers (for memory figures;
    /// the other copy, when there is one, holds about as much).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.copies
            .back()
            .map_or(0, |c| c.1.iter().map(TableClassifier::heap_bytes).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::matchkey::{MaskedKey, PackedKey};
    use crate::lookup::rule::{Counters, StoredMatch};
    use packet::FlowKey;
    use proptest::prelude::*;

    fn rule(id: u32, key: &MaskedKey, priority: u16) -> Arc<Rule> {
        Arc::new(Rule {
            counters: Arc::new(Counters::new(1)),
            instructions: Box::new([]),
            cookie: 0,
            priority,
            table_id: 0,
            table_miss: false,
            learned: false,
            flags: 0,
            idle_timeout: 0,
            hard_timeout: 0,
            id,
            created_ns: 0,
            modified_ns: 0,
            match_: StoredMatch::from_wire(&[]),
            packed: PackedKey::pack(key),
        })
    }

    /// A masked key over word 0 (a few masks so rules share subtables).
    fn key(mask: u8, value: u8) -> MaskedKey {
        let mut k = MaskedKey::default();
        let m = [0xffu64, 0xf0, 0x0f, 0][mask as usize % 4];
        k.mask.w[0] = m;
        k.value.w[0] = u64::from(value) & m;
        k
    }

    #[derive(Debug, Clone)]
    enum Step {
        Add(u8, u8, u8, u16),
        Remove(usize),
        Replace(usize),
        Clear(u8),
        Publish,
        /// Keep the snapshot of the last publication until told.
        Hold,
        Release,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => (0u8..2, 0u8..4, any::<u8>(), 0u16..4).prop_map(|(t, m, v, p)| Step::Add(t, m, v, p)),
            2 => any::<usize>().prop_map(Step::Remove),
            1 => (0u8..2).prop_map(Step::Clear),
            2 => any::<usize>().prop_map(Step::Replace),
            2 => Just(Step::Publish),
            1 => Just(Step::Hold),
            1 => Just(Step::Release),
        ]
    }

    fn answers(t: &Tables) -> Vec<Option<u32>> {
        t.iter()
            .flat_map(|cls| {
                (0..=255u64).map(|v| {
                    let mut k = FlowKey::default();
                    k.w[0] = v;
                    cls.lookup(&k)
                })
            })
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn publications_answer_as_classifiers_built_from_scratch(steps in proptest::collection::vec(step(), 1..80)) {
            let mut p = Published::new(2);
            let mut live: Vec<(u8, Arc<Rule>)> = Vec::new();
            let mut next = 0u32;
            let mut held: Vec<(Arc<Tables>, Vec<Option<u32>>)> = Vec::new();
            let mut last: Option<Arc<Tables>> = None;
            for s in steps {
                match s {
                    Step::Add(t, m, v, prio) => {
                        let r = rule(next, &key(m, v), prio);
                        next += 1;
                        p.log(t, [Op::Add(r.clone())]);
                        live.push((t, r));
                    }
                    Step::Remove(i) if !live.is_empty() => {
                        let (t, r) = live.remove(i % live.len());
                        p.log(t, [Op::Remove(r)]);
                    }
                    Step::Remove(_) => {}
                    Step::Replace(i) if !live.is_empty() => {
                        let i = i % live.len();
                        let (t, old) = &live[i];
                        let new = rule(old.id, &old.key(), old.priority);
                        p.log(*t, [Op::Replace(new.clone())]);
                        live[i].1 = new;
                    }
                    Step::Replace(_) => {}
                    Step::Clear(t) => {
                        live.retain(|(lt, _)| *lt != t);
                        p.log(t, [Op::Clear]);
                    }
                    Step::Publish => {
                        let tables = p.tables(&Default::default());
                        for (t, cls) in tables.iter().enumerate() {
                            let mut fresh: Classifier<Arc<Rule>> = Classifier::new();
                            for (_, r) in live.iter().filter(|(lt, _)| *lt as usize == t) {
                                fresh.insert_with(r.id, &r.key(), r.priority, r.clone());
                            }
                            prop_assert_eq!(cls.len(), fresh.len());
                            for v in 0..=255u64 {
                                let mut k = FlowKey::default();
                                k.w[0] = v;
                                prop_assert_eq!(cls.lookup(&k), fresh.lookup(&k));
                                prop_assert_eq!(
                                    cls.lookup_data(&k).map(Arc::as_ptr),
                                    fresh.lookup_data(&k).map(Arc::as_ptr)
                                );
                            }
                        }
                        last = Some(tables);
                    }
                    Step::Hold => held.extend(last.clone().map(|t| {
                        let answers = answers(&t);
                        (t, answers)
                    })),
                    Step::Release => held.clear(),
                }
                // A snapshot never changes while it is held.
                for (t, a) in &held {
                    prop_assert_eq!(&answers(t), a);
                }
                prop_assert!(p.copies.len() <= 2);
                prop_assert!(p.log.len() <= 200);
            }
        }
    }

    #[test]
    fn a_change_is_applied_to_a_free_copy_not_copied() {
        let mut p = Published::new(1);
        for i in 0..100 {
            p.log(0, [Op::Add(rule(i, &key(0, i as u8), 1))]);
        }
        let a = p.tables(&Default::default());
        p.log(0, [Op::Add(rule(100, &key(1, 7), 2))]);
        let b = p.tables(&Default::default());
        assert!(!Arc::ptr_eq(&a, &b));
        drop(a);
        // The copy `a` was is free again: the next publication reuses it.
        p.log(0, [Op::Remove(rule(100, &key(1, 7), 2))]);
        assert!(p.reusable(false));
        let a_ptr = Arc::as_ptr(&p.copies[0].1);
        let c = p.tables(&Default::default());
        assert_eq!(Arc::as_ptr(&c), a_ptr, "the free copy is the one published");
        assert_eq!(c[0].len(), 100);
        assert_eq!(b[0].len(), 101, "the snapshot held is untouched");
        // Both held now: the next publication must copy.
        p.log(0, [Op::Add(rule(101, &key(1, 9), 2))]);
        assert!(!p.reusable(false));
        let d = p.tables(&Default::default());
        assert_eq!(d[0].len(), 101);
        assert_eq!(c[0].len(), 100);
        assert_eq!(b[0].len(), 101);
    }
}
