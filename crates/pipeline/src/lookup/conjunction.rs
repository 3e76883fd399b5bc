//! Open vSwitch's conjunctive matches: a table lookup that consults the
//! table's conjunctive flows.
//!
//! A conjunctive flow (actions `conjunction(id, k/n)`, [`ofp::conjunction`])
//! is never the result of a lookup. A lookup first finds the best ordinary
//! rule, as always. If conjunctive flows of a higher priority match the
//! packet, then, from the highest such priority down: a conjunction `id`
//! that has a matching flow in each of its `n` clauses at that priority is
//! satisfied, and the table is looked up again with `conj_id = id`
//! (ordinary rules only); if that finds a rule, it is the answer. If no
//! satisfied conjunction finds one, the answer is the ordinary rule. This
//! is Open vSwitch's rule (ovs-fields(7), "Conjunctive Match Fields"):
//! equal-priority conjunctive and ordinary matches go to the ordinary
//! rule; the `conj_id` a lookup set is not kept after it.
//!
//! Cost: a table without conjunctive flows pays one emptiness check. With
//! them, the lookup visits every conjunctive flow that matches (Open
//! vSwitch does too); the work per packet is bounded by the table's size,
//! and the answer, which depends on the key alone, is what the exact-match
//! cache keeps, so a flow's packets pay it once. The scratch space is the
//! caller's, kept between packets.

use std::sync::Arc;

use packet::{slots as s, FlowKey};

use crate::lookup::published::TableClassifier;
use crate::lookup::rule::Rule;

/// One conjunctive flow's clause that a packet matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Hit {
    /// Falling priority first (stored inverted for the sort).
    inv_priority: u16,
    id: u32,
    n_clauses: u8,
    clause: u8,
}

/// How a lookup found its rule, for trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The best ordinary rule (or none).
    Direct,
    /// Conjunction `id`, at `priority`, then the `conj_id=id` lookup.
    Conjunction { id: u32, priority: u16 },
}

/// The rule `t` answers for `key`, conjunctions included. `key`'s
/// `conj_id` is set during the second lookup and restored after.
#[inline]
pub fn lookup<'a>(
    t: &'a TableClassifier,
    key: &mut FlowKey,
    scratch: &mut Vec<Hit>,
) -> (Option<&'a Arc<Rule>>, Via) {
    let direct = t.rules.lookup_data(key);
    if t.conj.is_empty() {
        return (direct, Via::Direct);
    }
    lookup_conjunctive(t, key, scratch, direct)
}

#[cold]
fn lookup_conjunctive<'a>(
    t: &'a TableClassifier,
    key: &mut FlowKey,
    scratch: &mut Vec<Hit>,
    direct: Option<&'a Arc<Rule>>,
) -> (Option<&'a Arc<Rule>>, Via) {
    scratch.clear();
    t.conj
        .for_each_match_above(key, direct.map(|r| r.priority), |p, r| {
            for ins in r.instructions.iter() {
                if let ofp::Instruction::ApplyActions(list) = ins {
                    for a in list.iter() {
                        if let ofp::Action::Conjunction(c) = a {
                            scratch.push(Hit {
                                inv_priority: !p,
                                id: c.id,
                                n_clauses: c.n_clauses,
                                clause: c.clause,
                            });
                        }
                    }
                }
            }
            true
        });
    if scratch.is_empty() {
        return (direct, Via::Direct);
    }
    scratch.sort_unstable();
    let saved = key.get(s::CONJ_ID);
    let mut i = 0;
    while i < scratch.len() {
        // One (priority, id, n) group: satisfied if its clauses cover 1..=n.
        let h = scratch[i];
        let mut seen = 0u64;
        while i < scratch.len()
            && (scratch[i].inv_priority, scratch[i].id, scratch[i].n_clauses)
                == (h.inv_priority, h.id, h.n_clauses)
        {
            seen |= 1u64 << (scratch[i].clause.saturating_sub(1) & 63);
            i += 1;
        }
        let all = if h.n_clauses >= 64 {
            u64::MAX
        } else {
            (1u64 << h.n_clauses) - 1
        };
        if seen == all {
            key.set(s::CONJ_ID, h.id as u64);
            let found = t.rules.lookup_data(key);
            key.set(s::CONJ_ID, saved);
            if found.is_some() {
                let via = Via::Conjunction {
                    id: h.id,
                    priority: !h.inv_priority,
                };
                return (found, via);
            }
        }
    }
    (direct, Via::Direct)
}
