//! The per-worker cache of whole pipeline walks: for a packet's ingress
//! flow key, the rules each of its lookups found, in order.
//!
//! Why: a multi-table pipeline in Open vSwitch's dialect (Neutron's br-int:
//! five tables chained by resubmit, registers carrying the port and the
//! network from table to table) makes one lookup per table. The
//! exact-match cache ([`crate::lookup::emc`]) serves one table at a time and a
//! resubmit's lookups not at all, so such a pipeline cost 2.3-2.4 times a
//! single table for the same traffic. What a packet's lookups find
//! depends only on its ingress key (headers, ingress port, tunnel
//! metadata; the registers start at zero) and on the snapshot: every
//! action that changes what a later lookup sees (set_field, load, move,
//! push/pop, write_metadata, a resubmit's port) is itself decided by the
//! rules found before. So the list of rules found is a function of the
//! ingress key within one snapshot version, and replaying it skips every
//! lookup while the instructions and actions run as always (counters,
//! meters, learn, groups: nothing is skipped but the searches).
//!
//! Contract: an entry is used only for the snapshot version it was
//! recorded in (a publication makes every entry miss; the per-table cache
//! and its change log still serve then). A replay that runs out of
//! recorded lookups (a meter dropped the recorded packet early) goes on
//! with real lookups. Only walks of 2 to [`MAX_PATH`] lookups are kept,
//! and the cache is consulted and filled only for snapshots with rules in
//! more than one table ([`crate::Snapshot::multi_table`]): a single-table
//! pipeline pays one test of a flag.

use std::sync::Arc;

use packet::FlowKey;

use crate::lookup::rule::Rule;

/// Most lookups one cached walk holds.
pub const MAX_PATH: usize = 32;

struct Slot {
    version: u64,
    key: FlowKey,
    path: Box<[Option<Arc<Rule>>]>,
}

/// The cache.
pub struct Paths {
    slots: Vec<Slot>,
    mask: usize,
    pub hits: u64,
    pub misses: u64,
}

impl Paths {
    /// A cache of `entries` slots (rounded up to a power of two).
    pub fn new(entries: usize) -> Paths {
        let n = entries.max(2).next_power_of_two();
        Paths {
            slots: (0..n)
                .map(|_| Slot {
                    version: 0,
                    key: FlowKey::default(),
                    path: Box::new([]),
                })
                .collect(),
            mask: n - 1,
            hits: 0,
            misses: 0,
        }
    }

    /// The walk recorded for `key` at `version`, if any. Two slots per
    /// hash (the bucket's two ways), so that two flows that hash alike do
    /// not keep evicting each other.
    #[inline]
    pub fn get(&mut self, version: u64, key: &FlowKey) -> Option<&[Option<Arc<Rule>>]> {
        // An ingress key: its metadata words are zero, so the packet
        // words are the whole key.
        debug_assert!(key.metadata_zero());
        let i = crate::lookup::emc::hash(key, 0xff, true) as usize & self.mask;
        for j in [i, i ^ 1] {
            let s = &self.slots[j];
            if s.version == version && s.key.same_packet(key) {
                self.hits += 1;
                return Some(&self.slots[j].path);
            }
        }
        self.misses += 1;
        None
    }

    /// Records the walk `path` of the packet with ingress key `key`, at
    /// `version` (walks of fewer than two or more than [`MAX_PATH`]
    /// lookups are not kept), in a way of its bucket that holds nothing
    /// of this version, else in the second way.
    pub fn put(&mut self, version: u64, key: &FlowKey, path: &[Option<Arc<Rule>>]) {
        if path.len() < 2 || path.len() > MAX_PATH {
            return;
        }
        debug_assert!(key.metadata_zero());
        let i = crate::lookup::emc::hash(key, 0xff, true) as usize & self.mask;
        let j = if self.slots[i].version != version {
            i
        } else {
            i ^ 1
        };
        let s = &mut self.slots[j];
        s.version = version;
        s.key = *key;
        s.path = path.into();
    }
}
