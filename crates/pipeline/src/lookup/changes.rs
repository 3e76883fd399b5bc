//! What changed in the flow tables between published versions, so that a
//! worker's exact-match cache keeps every entry no change could affect.
//!
//! The classifier's answer for a flow key depends only on the rules whose
//! match covers that key. So an answer cached at version `v` still holds
//! at version `V` unless a rule added, removed or replaced in `(v, V]`, in
//! the same table, matches the key. The control plane records the match of
//! every such rule ([`ChangeLog`]), and each snapshot carries the log of
//! the last few changes: a cache entry is checked against the changes it
//! has not seen the first time it is hit after a publication, instead of
//! being thrown away with every other entry.
//!
//! The log is bounded ([`crate::Config::change_log`] changes, 16 by
//! default): checking an entry costs one masked compare per change, so a
//! long log would cost more than the classifier lookup it saves. A
//! publication that brings more changes than that (a bulk push) empties
//! the log and moves its horizon ([`ChangeLog::since`]) to the new version:
//! every older entry misses, as they all did before there was a log.
//!
//! Contract: for every cached answer of version `v` with
//! `since <= v < V`, [`ChangeLog::unchanged`] is true only if no rule
//! change of version `v+1..=V` in that table matches the key; the
//! differential test `a_cache_kept_across_publications_answers_as_the_classifier`
//! (in `exec`'s tests) holds this against the classifier itself.

use std::collections::VecDeque;
use std::sync::Arc;

use packet::FlowKey;

use crate::lookup::matchkey::MaskedKey;

/// One rule change: the match of a rule added, removed or replaced in
/// `table`, first visible in snapshot `version`, with the key words its
/// mask touches (a check reads only those).
#[derive(Debug)]
struct Change {
    version: u64,
    table: u8,
    key: MaskedKey,
    words: Box<[u8]>,
}

impl Change {
    #[inline]
    fn matches(&self, key: &FlowKey) -> bool {
        self.words.iter().all(|&w| {
            let w = w as usize;
            key.w[w] & self.key.mask.w[w] == self.key.value.w[w]
        })
    }
}

/// The recent rule changes, oldest first.
#[derive(Debug, Clone)]
pub struct ChangeLog {
    /// Every change of a version after this one is in `entries`; answers
    /// cached before it cannot be checked.
    since: u64,
    /// Shared between the snapshots that carry them: a publication copies
    /// pointers, not keys.
    entries: VecDeque<Arc<Change>>,
}

impl Default for ChangeLog {
    fn default() -> Self {
        // The first snapshot is version 1; a cache slot never filled has
        // version 0 and never passes.
        ChangeLog {
            since: 1,
            entries: VecDeque::new(),
        }
    }
}

impl ChangeLog {
    /// Records the changes that become visible at `version` (`overflow`:
    /// more happened than were kept), keeping at most `max` changes; with
    /// `max == 0` every publication starts afresh (no cached answer
    /// survives it).
    pub(crate) fn record(
        &mut self,
        version: u64,
        fresh: impl ExactSizeIterator<Item = (u8, MaskedKey)>,
        overflow: bool,
        max: usize,
    ) {
        if max == 0 || overflow || fresh.len() > max {
            self.since = version;
            self.entries.clear();
            return;
        }
        for (table, key) in fresh {
            let words = (0..key.mask.w.len())
                .filter(|&w| key.mask.w[w] != 0)
                .map(|w| w as u8)
                .collect();
            self.entries.push_back(Arc::new(Change {
                version,
                table,
                key,
                words,
            }));
        }
        while self.entries.len() > max {
            if let Some(c) = self.entries.pop_front() {
                self.since = self.since.max(c.version);
            }
        }
    }

    /// The version before which cached answers cannot be checked.
    pub fn since(&self) -> u64 {
        self.since
    }

    /// Changes kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether an answer for `key` in `table` cached at version `cached`
    /// still holds at version `now`: no change since is known to touch it.
    #[inline]
    pub fn unchanged(&self, cached: u64, now: u64, table: u8, key: &FlowKey) -> bool {
        // Newest first, stopping at the first change the answer saw: the
        // entries are in version order, and an answer one publication old
        // (the usual case) is checked against that publication's changes
        // only.
        cached >= self.since
            && cached < now
            && self
                .entries
                .iter()
                .rev()
                .take_while(|c| c.version > cached)
                .all(|c| c.table != table || !c.matches(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::slots as s;

    fn key_with_port(p: u64) -> FlowKey {
        let mut k = FlowKey::default();
        k.set(s::IN_PORT, p);
        k
    }

    fn match_port(p: u64) -> MaskedKey {
        let mut m = MaskedKey::default();
        m.value.set(s::IN_PORT, p);
        m.mask.set(s::IN_PORT, u32::MAX as u64);
        m
    }

    #[test]
    fn only_changes_that_match_the_key_in_its_table_after_it_was_cached_count() {
        let mut log = ChangeLog::default();
        log.record(1, std::iter::empty(), false, 16);
        log.record(2, [(0, match_port(1))].into_iter(), false, 16);
        let (k1, k2) = (key_with_port(1), key_with_port(2));
        // Cached at 1: the change at 2 covers port 1, not port 2.
        assert!(!log.unchanged(1, 2, 0, &k1));
        assert!(log.unchanged(1, 2, 0, &k2));
        // Another table, or cached after the change: untouched.
        assert!(log.unchanged(1, 2, 1, &k1));
        assert!(log.unchanged(2, 3, 0, &k1));
        // Never from the future, never the unfilled version 0.
        assert!(!log.unchanged(3, 2, 0, &k2));
        assert!(!log.unchanged(0, 2, 0, &k2));
    }

    #[test]
    fn a_log_past_its_bound_moves_its_horizon() {
        let mut log = ChangeLog::default();
        for v in 1..=5u64 {
            log.record(v, [(0, match_port(v))].into_iter(), false, 3);
        }
        // Versions 3, 4, 5 kept: answers from before 2 cannot be checked.
        assert_eq!(log.len(), 3);
        assert_eq!(log.since(), 2);
        assert!(!log.unchanged(1, 5, 0, &key_with_port(9)));
        assert!(log.unchanged(2, 5, 0, &key_with_port(9)));
        // A bulk change (or overflow, or no log at all) starts afresh.
        log.record(6, (0..4u32).map(|p| (0, match_port(p as u64))), false, 3);
        assert_eq!((log.since(), log.len()), (6, 0));
        log.record(7, std::iter::empty(), true, 3);
        assert_eq!(log.since(), 7);
        log.record(8, std::iter::empty(), false, 0);
        assert_eq!(log.since(), 8);
        assert!(!log.unchanged(7, 8, 0, &key_with_port(9)));
    }
}
