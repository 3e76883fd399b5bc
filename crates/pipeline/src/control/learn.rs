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
//! What one call costs is bounded whatever the tables hold, so that a
//! round of the daemon's control loop (up to 4 096 learned flows) stays
//! far under 100 ms:
//! * the table counts its learned flows as rules come and go
//!   ([`FlowTable::learned_len`]), so a flow refused at the cap costs a
//!   lookup, not a count (it was counted again at every refusal, over
//!   every learned flow: at a cap of 8 192, a round of 4 096 refused
//!   flows held the control thread 3.4 s);
//! * which flows a learner taught is kept only for learn actions that
//!   need it (`limit`, `delete_learned`; Open vSwitch's MAC learning uses
//!   neither), as a list per learner that each flow added sweeps two
//!   entries further, dropping flows gone (expired, deleted): no pruning
//!   of the whole list at once (at 524 288 flows that took 236 ms), and
//!   the list stays within about twice the flows it holds installed;
//! * a learner's `limit` is checked against the list's length, counted
//!   exactly (the list pruned whole) only when the length reaches the
//!   limit and a rule left one of the learner's tables since the last
//!   count: once per round of removals at most, and O(limit).

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

/// A learned flow its learner keeps track of.
#[derive(Debug, Clone)]
struct Entry {
    table: u8,
    /// Its learn action had `delete_learned`.
    delete_with_learner: bool,
    rule: Weak<Rule>,
}

/// Entries each flow added looks at ([`Taught::sweep`]).
const SWEEP: usize = 2;

#[derive(Debug, Default, Clone)]
struct Taught {
    flows: Vec<Entry>,
    /// Where the sweep goes on from.
    cursor: usize,
    /// The tables `flows` are in, and the removals they had counted
    /// ([`FlowTable::removals`]) at the last exact count.
    tables: Vec<u8>,
    counted_at: u64,
}

impl Taught {
    /// Looks at the next [`SWEEP`] entries, dropping flows gone.
    fn sweep(&mut self, tables: &[FlowTable]) {
        for _ in 0..SWEEP {
            if self.cursor >= self.flows.len() {
                self.cursor = 0;
                if self.flows.is_empty() {
                    return;
                }
            }
            let e = &self.flows[self.cursor];
            if installed(tables, e.table, &e.rule) {
                self.cursor += 1;
            } else {
                self.flows.swap_remove(self.cursor);
            }
        }
    }
}

/// The learned flows' bookkeeping.
#[derive(Debug, Default, Clone)]
pub(crate) struct LearnState {
    by_learner: HashMap<RuleId, Taught>,
    rate: Vec<Gcra>,
    pub(crate) stats: LearnStats,
    /// Per worker, the highest sequence number of a flow it holds until
    /// publication taken here ([`crate::Snapshot::learned_seen`]).
    pub(crate) seen: Vec<u64>,
}

/// Workers whose held flows are acknowledged (a bound on `seen`; a
/// datapath runs far fewer).
const MAX_WORKERS: usize = 4096;

fn installed(tables: &[FlowTable], t: u8, w: &Weak<Rule>) -> bool {
    let Some(r) = w.upgrade() else {
        return false;
    };
    tables
        .get(t as usize)
        .and_then(|tb| tb.get_exact(&r.key(), r.priority))
        .is_some_and(|now| now.id == r.id)
}

/// Removals counted by `tables` of `all`.
fn removals(all: &[FlowTable], tables: &[u8]) -> u64 {
    tables
        .iter()
        .filter_map(|t| all.get(*t as usize))
        .map(FlowTable::removals)
        .sum()
}

impl Pipeline {
    /// Adds a flow a packet taught ([`crate::Worker::take_learned`]), at
    /// `now_ns`, within the limits above. Whether it was added; every
    /// outcome is counted in [`Pipeline::learn_stats`].
    pub fn learn(&mut self, l: &Learned, now_ns: u64) -> bool {
        // Whatever becomes of it, the worker holding it may let it go
        // from the next snapshot on.
        if l.seq != 0 && l.worker < MAX_WORKERS {
            let seen = &mut self.learning.seen;
            if seen.len() <= l.worker {
                seen.resize(l.worker + 1, 0);
            }
            seen[l.worker] = seen[l.worker].max(l.seq);
        }
        let fm = &l.flow_mod;
        let t = fm.table_id;
        let n = self.tables.len();
        let st = &mut self.learning;
        if st.rate.len() != n {
            st.rate.resize(n, Gcra::new());
        }
        if t as usize >= n || fm.command != FlowModCommand::Add {
            st.stats.refused += 1;
            return false;
        }
        let Ok(key) = compile(&fm.match_) else {
            self.learning.stats.refused += 1;
            return false;
        };
        let table = &self.tables[t as usize];
        let existing = table.get_exact(&key, fm.priority);
        if let Some(r) = existing {
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
        // A learned flow that replaces one (same match and priority: a
        // MAC address that moved) does not grow the table's count.
        let grows = !existing.is_some_and(|r| r.learned);
        let cfg = &self.config;
        let (rate, burst, max) = (cfg.learn_rate, cfg.learn_burst, cfg.learned_max);
        if l.limit != 0 && self.taught_count(l.learner, l.limit as usize) >= l.limit as usize {
            self.learning.stats.over_limit += 1;
            return false;
        }
        if grows && self.tables[t as usize].learned_len() >= max {
            self.learning.stats.over_table += 1;
            return false;
        }
        let cost = 1_000_000_000 / rate.max(1);
        if rate != 0
            && !self.learning.rate[t as usize].take(now_ns, cost, cost.saturating_mul(burst))
        {
            self.learning.stats.over_rate += 1;
            return false;
        }
        let rule = match self.add_learned(fm, key, now_ns) {
            Ok(r) => r,
            Err(_) => {
                self.learning.stats.refused += 1;
                return false;
            }
        };
        self.learning.stats.added += 1;
        if l.limit != 0 || l.delete_learned {
            let tables = &self.tables;
            let taught = self.learning.by_learner.entry(l.learner).or_default();
            if !taught.tables.contains(&t) {
                taught.tables.push(t);
                taught.counted_at = removals(tables, &taught.tables);
            }
            taught.sweep(tables);
            taught.flows.push(Entry {
                table: t,
                delete_with_learner: l.delete_learned,
                rule: Arc::downgrade(&rule),
            });
        }
        true
    }

    /// The checks of a FLOW_MOD ADD that the learned flow's making does
    /// not already ensure, then the add, marked learned.
    fn add_learned(
        &mut self,
        fm: &FlowMod,
        key: MaskedKey,
        now_ns: u64,
    ) -> Result<Arc<Rule>, OfpError> {
        if fm.flags & !ff::ALL != 0 {
            return Err(flows::fm_err(
                FlowModFailedCode::BadFlags,
                "unknown flow-mod flags",
            ));
        }
        let mut ins = Vec::new();
        ofp::instruction::encode_instructions(&fm.instructions, &mut ins);
        flows::fits_flow_stats(fm.match_.wire_len(), ins.len())?;
        self.add(fm, key, None, true, now_ns)
    }

    /// What the control plane did with learned flows so far.
    pub fn learn_stats(&self) -> LearnStats {
        self.learning.stats
    }

    /// Heap bytes of the learned flows' bookkeeping (which learner taught
    /// which flow; not the flows themselves, which are rules).
    pub fn learn_bytes(&self) -> usize {
        use std::mem::size_of;
        let st = &self.learning;
        st.by_learner.capacity() * (size_of::<(RuleId, Taught)>() + 1)
            + st.by_learner
                .values()
                .map(|t| t.flows.capacity() * size_of::<Entry>() + t.tables.capacity())
                .sum::<usize>()
            + st.rate.capacity() * size_of::<Gcra>()
    }

    /// Flows `learner` taught (with `limit` or `delete_learned`) that are
    /// still installed, or at least `limit` of them.
    fn taught_count(&mut self, learner: RuleId, limit: usize) -> usize {
        let tables = &self.tables;
        let Some(taught) = self.learning.by_learner.get_mut(&learner) else {
            return 0;
        };
        // The list holds every such flow installed, and maybe some gone:
        // under the limit, so are the flows.
        if taught.flows.len() < limit {
            return taught.flows.len();
        }
        let now = removals(tables, &taught.tables);
        if now != taught.counted_at {
            taught.flows.retain(|e| installed(tables, e.table, &e.rule));
            taught.cursor = 0;
            taught.counted_at = now;
        }
        taught.flows.len()
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
            for e in taught.flows {
                let t = e.table;
                if !e.delete_with_learner || !installed(&self.tables, t, &e.rule) {
                    continue;
                }
                let Some(r) = e.rule.upgrade() else { continue };
                if let Some(rule) = self.tables[t as usize].remove(&r) {
                    self.flows -= 1;
                    self.learning.stats.deleted_with_learner += 1;
                    removed.push(Removed {
                        rule,
                        reason: ofp::msg::flow::FlowRemovedReason::Delete,
                    });
                }
            }
        }
    }
}
