//! When a table's timed rules expire, kept as deadlines instead of found
//! by a scan: a min-heap of (the time a rule would expire if nothing hit
//! it again, its id).
//!
//! How: a rule with a timeout enters the heap when it is added or
//! replaced. Expiry pops only the deadlines that have passed and looks at
//! each rule again: a hard timeout is final, an idle one moves with the
//! rule's last hit (workers record hits without telling the control
//! plane), so a rule hit since is pushed back with its new deadline. The
//! cost of a round is the rules due in it, not the timed rules there are.
//!
//! Contract: a rule is never reported expired before its time; it is
//! reported at the first expiry round at or after it, with the reason the
//! spec's order gives (the hard timeout when it has passed, else the idle
//! one), whatever else came due since. Entries of rules removed stay in
//! the heap until their time (skipped then); a rule replaced or modified
//! gets a second entry (the first found takes it). Whenever the entries
//! pass twice the timed rules plus [`SLACK`] the heap is rebuilt from the
//! live rules, so its size stays within that bound at all times (a
//! rebuild costs the timed rules, and comes only after as many pushes).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use ofp::msg::flow::FlowRemovedReason;

use crate::lookup::classifier::RuleId;
use crate::lookup::rule::Rule;

/// Stale entries tolerated beyond the live rules before a rebuild.
pub(crate) const SLACK: usize = 1024;

/// The deadlines of one table's timed rules.
#[derive(Clone, Debug, Default)]
pub(crate) struct Deadlines {
    heap: BinaryHeap<Reverse<(u64, RuleId)>>,
}

impl Deadlines {
    /// Notes `rule`'s deadline (a rule without a timeout has none); the
    /// caller keeps the heap bounded ([`Deadlines::compact`]).
    pub(crate) fn track(&mut self, rule: &Rule) {
        if let Some(at) = due_at(rule) {
            self.heap.push(Reverse((at, rule.id)));
        }
    }

    /// The earliest deadline (perhaps of a rule gone since: a wake-up
    /// then finds nothing to do).
    pub(crate) fn next(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((at, _))| *at)
    }

    /// The id of a rule whose deadline has passed at `now_ns`, taken out.
    pub(crate) fn pop_due(&mut self, now_ns: u64) -> Option<RuleId> {
        match self.heap.peek() {
            Some(Reverse((at, _))) if *at <= now_ns => self.heap.pop().map(|Reverse((_, id))| id),
            _ => None,
        }
    }

    /// Rebuilds the heap from the `live` timed rules if stale entries
    /// outnumber them (see the module's contract).
    pub(crate) fn compact<'a>(&mut self, live: usize, rules: impl Iterator<Item = &'a Rule>) {
        if self.heap.len() <= 2 * live + SLACK {
            return;
        }
        self.heap.clear();
        for r in rules {
            self.track(r);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }
}

/// Whether `rule` has expired at `now_ns`, and why: the hard timeout when
/// it has passed, else the idle one. Both count from the rule's addition
/// or last MODIFY, the idle one from its last hit if later: a MODIFY
/// starts both again, as in Open vSwitch.
pub(crate) fn expired(rule: &Rule, now_ns: u64) -> Option<FlowRemovedReason> {
    let secs = |s: u16| s as u64 * 1_000_000_000;
    if rule.hard_timeout != 0 && now_ns >= rule.modified_ns + secs(rule.hard_timeout) {
        return Some(FlowRemovedReason::HardTimeout);
    }
    if rule.idle_timeout != 0 && now_ns >= rule.last_used_ns() + secs(rule.idle_timeout) {
        return Some(FlowRemovedReason::IdleTimeout);
    }
    None
}

/// When `rule` expires if nothing hits it again: the earlier of its hard
/// deadline and its idle deadline (as [`expired`] counts them); None
/// without a timeout.
pub(crate) fn due_at(rule: &Rule) -> Option<u64> {
    let secs = |s: u16| s as u64 * 1_000_000_000;
    let hard = (rule.hard_timeout != 0).then(|| rule.modified_ns + secs(rule.hard_timeout));
    let idle = (rule.idle_timeout != 0).then(|| rule.last_used_ns() + secs(rule.idle_timeout));
    match (hard, idle) {
        (Some(h), Some(i)) => Some(h.min(i)),
        (h, i) => h.or(i),
    }
}

#[cfg(test)]
mod tests {
    use crate::{Config, Pipeline};

    const S: u64 = 1_000_000_000;

    fn add(p: &mut Pipeline, text: &str, now: u64) {
        p.flow_mod(&ofp::text::parse_flow_mod(text).unwrap(), now)
            .unwrap();
    }

    #[test]
    fn rules_expire_at_their_deadline_not_before() {
        let mut p = Pipeline::new(Config::default());
        add(
            &mut p,
            "priority=1,in_port=1,hard_timeout=5,actions=drop",
            0,
        );
        add(
            &mut p,
            "priority=1,in_port=2,idle_timeout=3,actions=drop",
            0,
        );
        add(&mut p, "priority=1,in_port=3,actions=drop", 0);
        assert_eq!(p.next_expiry(), Some(3 * S));
        assert!(p.expire(3 * S - 1).is_empty());
        let gone = p.expire(3 * S);
        assert_eq!(gone.len(), 1);
        assert_eq!(
            gone[0].reason,
            ofp::msg::flow::FlowRemovedReason::IdleTimeout
        );
        assert_eq!(p.next_expiry(), Some(5 * S));
        assert!(p.expire(5 * S - 1).is_empty());
        assert_eq!(p.expire(5 * S).len(), 1);
        assert_eq!(p.next_expiry(), None);
        assert_eq!(p.expire(1_000 * S).len(), 0);
    }

    #[test]
    fn a_late_round_reports_the_hard_timeout_when_both_passed() {
        let mut p = Pipeline::new(Config::default());
        add(
            &mut p,
            "priority=1,in_port=1,idle_timeout=2,hard_timeout=5,actions=drop",
            0,
        );
        let gone = p.expire(9 * S);
        assert_eq!(gone.len(), 1);
        assert_eq!(
            gone[0].reason,
            ofp::msg::flow::FlowRemovedReason::HardTimeout
        );
    }

    #[test]
    fn the_heap_stays_bounded_under_modify_churn_between_rounds() {
        let mut p = Pipeline::new(Config::default());
        for i in 0..100u32 {
            add(
                &mut p,
                &format!("priority=1,in_port={i},hard_timeout=60000,actions=drop"),
                0,
            );
        }
        // Every MODIFY of the 100 timed rules adds an entry per rule; no
        // expiry round runs in between.
        for _ in 0..200 {
            let mut m = ofp::text::parse_flow_mod("actions=output:2").unwrap();
            m.command = ofp::msg::flow::FlowModCommand::Modify;
            p.flow_mod(&m, 0).unwrap();
        }
        let n = p.tables()[0].deadline_entries();
        assert!(
            n <= 2 * 100 + super::SLACK,
            "{n} entries for 100 timed rules"
        );
        assert_eq!(p.next_expiry(), Some(60_000 * S));
    }

    #[test]
    fn the_heap_stays_bounded_under_add_and_delete_churn() {
        let mut p = Pipeline::new(Config::default());
        for i in 0..20_000u32 {
            let m = format!("priority=1,in_port={},hard_timeout=60000", 1 + i % 7);
            add(&mut p, &format!("{m},actions=drop"), 0);
            let mut d = ofp::text::parse_flow_mod(&m).unwrap();
            d.command = ofp::msg::flow::FlowModCommand::DeleteStrict;
            d.out_port = ofp::port::port_no::ANY;
            d.out_group = ofp::port::group_no::ANY;
            p.flow_mod(&d, 0).unwrap();
            // Expiry rounds compact the heap.
            p.expire(1);
        }
        let n = p.tables()[0].deadline_entries();
        assert!(n <= super::SLACK + 1, "{n} entries for 0 timed rules");
    }
}
