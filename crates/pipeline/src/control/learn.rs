//! Learned flows (Open vSwitch's `learn`): adding what packets taught,
//! within the limits that keep a flood of distinct packets from taking
//! the control plane or the tables, and removing a learner's flows with
//! it (`delete_learned`).
//!
//! Limits, each counted in [`LearnStats`]:
//! * the learn action's own `limit`: flows it taught still installed;
//! * [`Config::learn_rate`] flows learned per second per table (a token
//!   bucket, bursts of [`Config::learn_burst`]): what a flood of new
//!   connections costs the control thread is bounded, whatever arrives;
//! * [`Config::learned_max`] learned flows per table, beside the table's
//!   own capacity.
//!
//! A flow taught again while an identical one (match, priority, actions,
//! cookie, timeouts) is installed changes nothing: Open vSwitch would
//! restart its hard timeout; sluice leaves it running (written down in
//! docs/OVS-DIALECT.md).
//!
//! Which flows a learner taught is kept as a list per learner, pruned of
//! flows gone (expired, deleted) when it grows past twice its size at the
//! last pruning: memory stays proportional to the learned flows installed.

use std::sync::Weak;

use super::*;
use crate::bucket::Gcra;
use crate::exec::Learned;

/// What the control plane did with flows packets taught.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LearnStats {
    pub added: u64,
    /// An identical flow was installed: nothing changed.
    pub unchanged: u64,
    /// Refused: the learn action's `limit` was reached.
    pub over_limit: u64,
    /// Refused: the table's rate of learning ([`Config::learn_rate`]).
    pub over_rate: u64,
    /// Refused: the table holds [`Config::learned_max`] learned flows.
    pub over_table: u64,
    /// Refused by the table's checks (a match the packet could not make
    /// valid, a full table).
    pub refused: u64,
    /// Learned flows removed with their learner (`delete_learned`).
    pub deleted_with_learner: u64,
}

#[derive(Debug, Default, Clone)]
struct Taught {
    delete_learned: bool,
    flows: Vec<(u8, Weak<Rule>)>,
    pruned_len: usize,
}

/// The learned flows' bookkeeping.
#[derive(Debug, Default, Clone)]
pub(crate) struct LearnState {
    by_learner: HashMap<RuleId, Taught>,
    /// Learned flows per table, as last counted (pruning corrects it).
    per_table: Vec<usize>,
    rate: Vec<Gcra>,
    pub(crate) stats: LearnStats,
}

fn installed(tables: &[FlowTable], t: u8, w: &Weak<Rule>) -> bool {
    let Some(r) = w.upgrade() else {
        return false;
    };
    tables
        .get(t as usize)
        .and_then(|tb| tb.get_exact(&r.key(), r.priority))
        .is_some_and(|now| now.id == r.id)
}

impl Pipeline {
    /// Adds a flow a packet taught ([`crate::Worker::take_learned`]), at
    /// `now_ns`, within the limits above. Whether it was added; every
    /// outcome is counted in [`Pipeline::learn_stats`].
    pub fn learn(&mut self, l: &Learned, now_ns: u64) -> bool {
        let fm = &l.flow_mod;
        let t = fm.table_id;
        let n = self.tables.len();
        let st = &mut self.learning;
        if st.per_table.len() != n {
            st.per_table.resize(n, 0);
            st.rate.resize(n, Gcra::new());
        }
        if t as usize >= n {
            st.stats.refused += 1;
            return false;
        }
        let Ok(key) = compile(&fm.match_) else {
            self.learning.stats.refused += 1;
            return false;
        };
        if let Some(r) = self.tables[t as usize].get_exact(&key, fm.priority) {
            if *r.instructions == *fm.instructions
                && r.cookie == fm.cookie
                && r.idle_timeout == fm.idle_timeout
                && r.hard_timeout == fm.hard_timeout
                && r.flags == fm.flags
            {
                self.learning.stats.unchanged += 1;
                return false;
            }
        }
        let cfg = &self.config;
        let (rate, burst, max) = (cfg.learn_rate, cfg.learn_burst, cfg.learned_max);
        if l.limit != 0 && self.taught_count(l.learner) >= l.limit as usize {
            self.learning.stats.over_limit += 1;
            return false;
        }
        if self.learning.per_table[t as usize] >= max {
            self.prune_table(t);
            if self.learning.per_table[t as usize] >= max {
                self.learning.stats.over_table += 1;
                return false;
            }
        }
        let cost = 1_000_000_000 / rate.max(1);
        if !self.learning.rate[t as usize].take(now_ns, cost, cost.saturating_mul(burst)) {
            self.learning.stats.over_rate += 1;
            return false;
        }
        if self.flow_mod(fm, now_ns).is_err() {
            self.learning.stats.refused += 1;
            return false;
        }
        let Some(rule) = self.tables[t as usize]
            .get_exact(&key, fm.priority)
            .cloned()
        else {
            return false;
        };
        let st = &mut self.learning;
        st.stats.added += 1;
        st.per_table[t as usize] += 1;
        let taught = st.by_learner.entry(l.learner).or_default();
        taught.delete_learned |= l.delete_learned;
        taught.flows.push((t, Arc::downgrade(&rule)));
        if taught.flows.len() > 2 * taught.pruned_len + 64 {
            self.prune_learner(l.learner);
        }
        true
    }

    /// What the control plane did with learned flows so far.
    pub fn learn_stats(&self) -> LearnStats {
        self.learning.stats
    }

    /// Flows `learner` taught that are still installed.
    fn taught_count(&mut self, learner: RuleId) -> usize {
        self.prune_learner(learner);
        self.learning
            .by_learner
            .get(&learner)
            .map_or(0, |t| t.flows.len())
    }

    fn prune_learner(&mut self, learner: RuleId) {
        let Some(taught) = self.learning.by_learner.get_mut(&learner) else {
            return;
        };
        let tables = &self.tables;
        let per_table = &mut self.learning.per_table;
        taught.flows.retain(|(t, w)| {
            let keep = installed(tables, *t, w);
            if !keep {
                if let Some(c) = per_table.get_mut(*t as usize) {
                    *c = c.saturating_sub(1);
                }
            }
            keep
        });
        taught.pruned_len = taught.flows.len();
    }

    fn prune_table(&mut self, table: u8) {
        let learners: Vec<RuleId> = self
            .learning
            .by_learner
            .iter()
            .filter(|(_, t)| t.flows.iter().any(|(tb, _)| *tb == table))
            .map(|(id, _)| *id)
            .collect();
        for id in learners {
            self.prune_learner(id);
        }
    }

    /// After `removed` left the tables: the flows the removed learners
    /// taught with `delete_learned` go too (appended to `removed`, reason
    /// DELETE), and the bookkeeping of every removed learner is dropped.
    pub(super) fn forget_learners(&mut self, removed: &mut Vec<Removed>) {
        if self.learning.by_learner.is_empty() {
            return;
        }
        let mut i = 0;
        while i < removed.len() {
            let id = removed[i].rule.id;
            i += 1;
            let Some(taught) = self.learning.by_learner.remove(&id) else {
                continue;
            };
            if !taught.delete_learned {
                continue;
            }
            for (t, w) in taught.flows {
                if !installed(&self.tables, t, &w) {
                    continue;
                }
                let Some(r) = w.upgrade() else { continue };
                if let Some(rule) = self.tables[t as usize].remove(&r) {
                    self.flows -= 1;
                    self.learning.stats.deleted_with_learner += 1;
                    if let Some(c) = self.learning.per_table.get_mut(t as usize) {
                        *c = c.saturating_sub(1);
                    }
                    removed.push(Removed {
                        rule,
                        reason: ofp::msg::flow::FlowRemovedReason::Delete,
                    });
                }
            }
        }
    }
}
