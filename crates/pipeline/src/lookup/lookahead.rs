//! Looking ahead over a batch: the memory its packets' first lookups will
//! read, loaded for the whole batch before the first packet runs.
//!
//! Why: with more active flows than the exact-match cache holds, a packet
//! misses the cache and searches a table far larger than the CPU's caches.
//! What it reads is a chain of dependent loads (the cache's slot, the
//! subtable's index bucket, the rule's entry and values, the rule, its
//! counters and instructions), each a miss to memory, so one packet at a
//! time they follow one another: about a microsecond a packet at a million
//! flows. Across a batch, though, the same link of every packet's chain is
//! independent of the others': read for the whole batch in one pass, the
//! CPU waits for all of them at once. (VPP and DPDK's hash lookups do the
//! same with prefetch instructions; sluice forbids `unsafe`, so the passes
//! make plain reads and fold what they read into a sink.)
//!
//! How: [`Ahead::run`] extracts each packet's key, then passes over the
//! batch once per link: the cache slot and the first subtable's index
//! bucket; the chain's first entry and its values, and the rule the cache
//! slot holds; then each rule's first line, its counters' and
//! instructions' lines, its counter slot and first action. The packets then
//! run one by one as before (`Worker::process`) and find in the
//! CPU's caches what they read.
//!
//! Contract: a look ahead only reads. It writes nothing a packet's run
//! reads (not the cache, its statistics, the counters), so the results
//! with and without it are the same (a test below holds this).
//!
//! When: only while the exact-match cache misses (at least a quarter of
//! its lookups since the last look ahead, or no cache at all). With few
//! flows every packet hits the cache, and the passes would only extract
//! the keys twice.

use packet::{extract, FlowKey};

use crate::lookup::emc::Emc;
use crate::lookup::published::TableClassifier;
use crate::lookup::rule::Rule;

/// The most packets one look ahead covers: the datapath's receive batch.
/// (A longer look ahead would start evicting what its first packets need.)
pub const LOOKAHEAD: usize = 32;

/// One packet's place in the passes.
#[derive(Clone, Copy, Default)]
struct Lane {
    /// Its hash in the exact-match cache (which picks the slot).
    emc: u64,
    /// Its hash in table 0's first subtable.
    hash: u64,
    /// The first slot of that hash's chain (NIL: none).
    slot: u32,
}

/// A worker's look-ahead state.
pub(crate) struct Ahead {
    key: FlowKey,
    lanes: [Lane; LOOKAHEAD],
    /// The cache's hits and misses at the last look ahead.
    seen: (u64, u64),
    /// Whether the cache missed enough since then.
    on: bool,
    /// Off: never look ahead ([`crate::Worker::set_lookahead`]).
    pub(crate) enabled: bool,
    /// Batches looked ahead over.
    pub(crate) batches: u64,
}

impl Ahead {
    pub(crate) fn new() -> Ahead {
        Ahead {
            key: FlowKey::default(),
            lanes: [Lane::default(); LOOKAHEAD],
            seen: (0, 0),
            on: true,
            enabled: true,
            batches: 0,
        }
    }

    /// Whether the cache's record since the last call asks for a look
    /// ahead.
    fn wanted(&mut self, emc: Option<&Emc>) -> bool {
        let Some(e) = emc else {
            return true;
        };
        let (dh, dm) = (e.hits - self.seen.0, e.misses - self.seen.1);
        // A few lookups say little: keep the last decision.
        if dh + dm >= 8 {
            self.on = dm * 4 >= dh + dm;
            self.seen = (e.hits, e.misses);
        }
        self.on
    }

    /// Looks ahead over up to [`LOOKAHEAD`] packets (ingress port, frame)
    /// about to be looked up in `table0` (a snapshot's first table) on
    /// `worker`. Returns the sink (the
    /// fold of what was read), for the caller to drop.
    pub(crate) fn run<'a>(
        &mut self,
        emc: Option<&Emc>,
        table0: Option<&TableClassifier>,
        worker: usize,
        frames: impl IntoIterator<Item = (u32, &'a [u8])>,
    ) -> u64 {
        if !self.enabled || !self.wanted(emc) {
            return 0;
        }
        let Some(cls) = table0 else {
            return 0;
        };
        self.batches += 1;
        let mut sink = 0u64;
        let mut n = 0;
        for (lane, (port, frame)) in self.lanes.iter_mut().zip(frames) {
            extract(frame, port, &mut self.key);
            lane.emc = emc.map_or(0, |e| e.hash_of(0, &self.key));
            lane.hash = cls.ahead_hash(&self.key);
            n += 1;
        }
        let lanes = &mut self.lanes[..n];
        // Each pass reads one link of every packet's chain, and acts only
        // on what an earlier pass read (a branch on a value still on its
        // way from memory would hold the pass up on it).
        // The cache slots' first lines and the index buckets.
        for l in lanes.iter() {
            if let Some(e) = emc {
                sink ^= e.touch_head(l.emc);
            }
            sink ^= cls.ahead_bucket(l.hash);
        }
        // The slots' keys (when they hold the hash); the chains' entries
        // and values.
        for l in lanes.iter_mut() {
            if let Some(e) = emc {
                sink ^= e.touch(l.emc);
            }
            l.slot = cls.ahead_chain(l.hash);
            sink ^= cls.ahead_slot(l.slot);
        }
        // The rules, then their counters and instructions, then the
        // counter slot and the first action.
        let mut rules: [[Option<&Rule>; 2]; LOOKAHEAD] = [[None; 2]; LOOKAHEAD];
        for (l, r) in lanes.iter().zip(rules.iter_mut()) {
            r[0] = cls.ahead_data(l.slot).map(|r| &**r);
            r[1] = emc.and_then(|e| e.rule_of(l.emc)).map(|r| &**r);
        }
        for level in 0..3 {
            for r in rules[..n].iter().flatten().flatten() {
                sink ^= r.touch(level, worker);
            }
        }
        sink
    }
}
