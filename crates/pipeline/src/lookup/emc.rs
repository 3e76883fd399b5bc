//! The per-worker exact-match cache in front of the classifier.
//!
//! A direct-mapped table from a packet's whole flow key (and table number)
//! to the rule the classifier chose for it, or to "no rule". Entries carry
//! the snapshot version they were computed in. An entry of an earlier
//! version is checked, when next hit, against the rule changes the
//! snapshot lists ([`crate::lookup::changes`]): kept (and moved to the new
//! version) if none matches its key, a miss otherwise or when the changes
//! since it are no longer listed. So a flow-mod empties only the entries
//! it could change, and a bulk push every entry, without touching them.
//! A hit costs one hash of the key and one comparison (plus, once per
//! publication, one masked compare per listed change); a miss costs that
//! plus the classifier lookup it saves next time. Each worker owns its
//! cache: no sharing, no locks.
//!
//! Admission: when more than a quarter of the lookups miss (checked every
//! [`WINDOW`] misses), the cache is thrashing: more flows are active than
//! it holds, and a miss that overwrites a slot only evicts a flow as likely
//! to come back as the new one. Then only one miss in [`ADMIT`] is cached.
//! A flow carrying traffic still gets in after a few of its packets, while
//! a flood of one-packet flows (a scan, random 5-tuples) mostly does not,
//! and the misses stop paying for writing a whole key. (Open vSwitch's
//! exact-match cache admits one miss in 100 always, `emc-insert-inv-prob`.)
//! When fewer than one lookup in nine hits, the cache is bypassed: only one
//! lookup in [`ADMIT`] consults it ([`Emc::consult`]), enough to notice
//! when the traffic changes, and the others go straight to the classifier
//! without paying for the cache's hash and slot.

use std::sync::Arc;

use packet::{FlowKey, KEY_WORDS, PACKET_WORDS};

/// Where the tunnel words of a key start ([`packet::slots::TUN_IPV4_SRC`]
/// and the four IPv6 words after it).
const TUNNEL_WORDS_AT: usize = packet::slots::TUN_IPV4_SRC.word as usize;

use crate::lookup::changes::ChangeLog;
use crate::lookup::rule::Rule;

/// `repr(C)` and cache-line aligned: the key's hash, the rule, the
/// version and the first key words share the slot's first line, so a
/// lookup of another key (the common miss when the cache thrashes) reads
/// that line alone; the packet words fill the next three.
#[repr(C, align(64))]
struct Slot {
    /// [`hash`] of the key held (compared before the key).
    hash: u64,
    rule: Option<Arc<Rule>>,
    version: u64,
    table: u8,
    /// The key's metadata words are all zero ([`FlowKey::metadata_zero`]).
    plain: bool,
    key: FlowKey,
}

/// The cache.
pub struct Emc {
    slots: Vec<Slot>,
    mask: usize,
    pub hits: u64,
    pub misses: u64,
    /// Hits on entries of an earlier version, kept by the change log.
    pub kept: u64,
    /// Misses not cached (admission, see the module docs).
    pub refused: u64,
    /// Lookups that skipped the cache while it was bypassed.
    pub bypassed: u64,
    /// Whether lookups skip the cache (see the module docs).
    bypass: bool,
    /// Lookups asked about while bypassed.
    asked: u64,
    /// Hits and misses at the last admission check.
    mark: (u64, u64),
    /// The hash of the last key looked up (`put` follows its `find`).
    last: u64,
    /// Whether the cache is thrashing (more than a quarter of the lookups
    /// missed since the last check).
    thrashing: bool,
}

/// Misses between two admission checks.
pub const WINDOW: u64 = 256;
/// While thrashing, one miss in `ADMIT` is cached.
pub const ADMIT: u64 = 16;

/// Odd multipliers, one per key word.
const K: [u64; KEY_WORDS] = {
    let mut k = [0u64; KEY_WORDS];
    let mut i = 0;
    while i < KEY_WORDS {
        k[i] = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(2 * i as u64 + 1) | 1;
        i += 1;
    }
    k
};

/// Hashes the key: the packet words, and the metadata words unless
/// `plain` says they are all zero ([`FlowKey::metadata_zero`]; a zero
/// word adds nothing to the fold, so a key hashes alike either way). The
/// per-word multiplies are independent of each other (a sum, not a
/// chain), so they pipeline: a chained hash over 17 words cost more than
/// the classifier lookup it was meant to save.
#[inline(always)] // once per lookup: a call cost a tenth of it
pub(crate) fn hash(key: &FlowKey, table: u8, plain: bool) -> u64 {
    let mut h = table as u64;
    // The tunnel words (the last five packet words) and the metadata
    // words are zero for most packets: folded into one before the
    // multiply (the comparison that follows a hash is exact, so folding
    // only costs collisions).
    let (head, rest) = key.w.split_at(TUNNEL_WORDS_AT);
    for (w, k) in head.iter().zip(K.iter()) {
        h = h.wrapping_add(w.wrapping_mul(*k));
    }
    let (tunnel, metadata) = rest.split_at(PACKET_WORDS - TUNNEL_WORDS_AT);
    let rotated = |a: u64, (i, w): (usize, &u64)| a ^ w.rotate_left(13 * i as u32);
    let mut fold = tunnel.iter().enumerate().fold(0u64, rotated);
    if !plain {
        fold ^= metadata
            .iter()
            .enumerate()
            .fold(0u64, |a, (i, w)| rotated(a, (i + tunnel.len(), w)));
    }
    h = h.wrapping_add(fold.wrapping_mul(K[TUNNEL_WORDS_AT]));
    h ^= h >> 29;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 32)
}

impl Emc {
    /// A cache of `entries` slots (rounded up to a power of two).
    pub fn new(entries: usize) -> Emc {
        let n = entries.max(1).next_power_of_two();
        Emc {
            // Version 0 is never published, so fresh slots never hit.
            slots: (0..n)
                .map(|_| Slot {
                    hash: 0,
                    version: 0,
                    table: 0,
                    plain: true,
                    key: FlowKey::default(),
                    rule: None,
                })
                .collect(),
            mask: n - 1,
            hits: 0,
            misses: 0,
            kept: 0,
            refused: 0,
            bypassed: 0,
            bypass: false,
            asked: 0,
            mark: (0, 0),
            last: 0,
            thrashing: false,
        }
    }

    /// Judges the lookups since the last check: thrashing when more than a
    /// quarter missed, bypassed when fewer than one in nine hit.
    fn judge(&mut self) {
        let (dh, dm) = (self.hits - self.mark.0, self.misses - self.mark.1);
        self.thrashing = dm * 4 > dh + dm;
        self.bypass = dh * 9 < dh + dm;
        self.mark = (self.hits, self.misses);
    }

    /// Whether this lookup consults the cache: always, unless the cache is
    /// bypassed (then one lookup in [`ADMIT`]).
    #[inline(always)]
    pub fn consult(&mut self) -> bool {
        if !self.bypass {
            return true;
        }
        self.asked += 1;
        if self.asked.is_multiple_of(ADMIT) {
            // While bypassed, misses are few: judged every WINDOW lookups
            // made, so that the cache comes back when traffic does.
            if self.asked.is_multiple_of(WINDOW * ADMIT) {
                self.judge();
            }
            return true;
        }
        self.bypassed += 1;
        false
    }

    /// Whether the cache is bypassed (see the module docs).
    pub fn bypassed_now(&self) -> bool {
        self.bypass
    }

    /// The slot holding `key` for `table` at `version`, if cached (an
    /// entry of an earlier version that `changes` shows untouched is moved
    /// to `version`).
    #[inline(always)] // one call per table a packet visits
    pub fn find(
        &mut self,
        version: u64,
        changes: &ChangeLog,
        table: u8,
        key: &FlowKey,
    ) -> Result<usize, usize> {
        // Most lookups are of keys without metadata (a packet's first
        // table): those compare and hash the packet words only.
        let plain = key.metadata_zero();
        let h = hash(key, table, plain);
        self.last = h;
        let i = h as usize & self.mask;
        let s = &mut self.slots[i];
        if s.hash == h
            && s.table == table
            && s.plain == plain
            && s.key.same_packet(key)
            && (plain || s.key.same(key))
        {
            if s.version == version {
                self.hits += 1;
                return Ok(i);
            }
            if changes.unchanged(s.version, version, table, key) {
                s.version = version;
                self.hits += 1;
                self.kept += 1;
                return Ok(i);
            }
        }
        self.misses += 1;
        Err(i)
    }

    /// For looking ahead ([`crate::lookup::lookahead`]): the hash of `key` in
    /// `table`, which picks the slot a lookup reads.
    #[inline(always)]
    pub(crate) fn hash_of(&self, table: u8, key: &FlowKey) -> u64 {
        hash(key, table, key.metadata_zero())
    }

    /// For looking ahead: reads the first line of the slot a key of hash
    /// `h` picks, without acting on it.
    #[inline]
    pub(crate) fn touch_head(&self, h: u64) -> u64 {
        self.slots[h as usize & self.mask].hash
    }

    /// For looking ahead, once the first line is read: reads the key's
    /// lines when the slot holds hash `h` (a lookup compares them). Their
    /// fold, for a sink.
    #[inline]
    pub(crate) fn touch(&self, h: u64) -> u64 {
        let s = &self.slots[h as usize & self.mask];
        if s.hash != h {
            return s.hash;
        }
        let w = &s.key.w;
        s.version ^ w[5] ^ w[13] ^ w[21] ^ w[29] ^ w[37]
    }

    /// For looking ahead: the rule slot `h` holds, if it holds that hash.
    #[inline]
    pub(crate) fn rule_of(&self, h: u64) -> Option<&Arc<Rule>> {
        let s = &self.slots[h as usize & self.mask];
        (s.hash == h).then_some(s.rule.as_ref()).flatten()
    }

    /// The rule cached in slot `i` (None: the cached answer is "no rule").
    #[inline]
    pub fn rule(&self, i: usize) -> Option<&Arc<Rule>> {
        self.slots[i].rule.as_ref()
    }

    /// Caches the classifier's answer in slot `i` (from the [`Emc::find`]
    /// of this `key` just before),
    /// unless the cache is thrashing and does not admit this one (see the
    /// module docs).
    #[inline]
    pub fn put(
        &mut self,
        i: usize,
        version: u64,
        table: u8,
        key: &FlowKey,
        rule: Option<&Arc<Rule>>,
    ) {
        // Once per WINDOW misses (`put` follows every miss of `find`).
        if self.misses.is_multiple_of(WINDOW) {
            self.judge();
        }
        if self.thrashing && !self.misses.is_multiple_of(ADMIT) {
            self.refused += 1;
            return;
        }
        let s = &mut self.slots[i];
        debug_assert_eq!(self.last, hash(key, table, key.metadata_zero()));
        s.hash = self.last;
        s.version = version;
        s.table = table;
        s.plain = key.metadata_zero();
        s.key = *key;
        s.rule = rule.cloned();
    }
}
