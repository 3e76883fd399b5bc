//! The connection table: shards, each a slab of connections and an index
//! from key to slot, behind its own lock. There is no global lock: a
//! packet locks the one shard its key hashes to.
//!
//! A connection lives in the shard of its originator's key. Both keys of
//! an untranslated connection hash to the same shard (the shard is chosen
//! by a hash that is the same for a key and its reverse), so one lock
//! covers both directions. A translated connection's reply key may hash
//! elsewhere: that shard holds an [`Slot::Alias`], the reply key and where
//! the connection is; a lookup that meets an alias unlocks its shard and
//! locks the connection's, and checks the connection there still has that
//! key (a slot freed and reused by another connection fails the check).
//! Whoever needs two shards at once (creating or removing a connection)
//! locks them in index order, so workers never deadlock.
//!
//! Beside the shards, [`Table::unassured`] counts each shard's
//! connections that are not assured (changed only under that shard's
//! lock, read without it): a full table's early drop reads these counts to
//! skip shards with nothing to evict, and locks only shards that have
//! something ([`Shard::pick_unassured`] then looks at a bounded window).

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Mutex, MutexGuard};

use hashbrown::HashTable;

use crate::conn::Conn;
use crate::key::Key;

/// Number of shards (a power of two).
pub(crate) const SHARDS: usize = 256;

/// What a slab slot holds.
#[derive(Debug)]
pub(crate) enum Slot {
    Free,
    Conn(Conn),
    /// A translated connection's reply key, kept in the shard it hashes
    /// to; the connection is at (`home`, `slot`).
    Alias {
        key: Key,
        home: u16,
        slot: u32,
    },
}

/// One shard.
#[derive(Debug, Default)]
pub(crate) struct Shard {
    /// Index entries: slot << 1 | direction (direction 0 for an alias).
    index: HashTable<u32>,
    pub(crate) slots: Vec<Slot>,
    free: Vec<u32>,
    /// Where the next sweep starts.
    pub(crate) cursor: usize,
    /// Where the next early-drop window starts.
    ed_cursor: usize,
}

/// The hash of a key within its shard.
pub(crate) fn key_hash(k: &Key) -> u64 {
    let x = rustc_hash::FxBuildHasher.hash_one(k);
    x ^ (x >> 31)
}

/// The shard of a key.
pub(crate) fn shard_of(k: &Key) -> usize {
    let h = k.symmetric_hash();
    ((h ^ (h >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize % SHARDS
}

fn entry_key(slots: &[Slot], e: u32) -> Option<&Key> {
    match slots.get((e >> 1) as usize)? {
        Slot::Conn(c) => Some(&c.key[(e & 1) as usize]),
        Slot::Alias { key, .. } => Some(key),
        Slot::Free => None,
    }
}

impl Shard {
    /// The index entry of `k`: (slot, direction).
    pub(crate) fn find(&self, k: &Key) -> Option<(u32, usize)> {
        let slots = &self.slots;
        self.index
            .find(key_hash(k), |&e| entry_key(slots, e) == Some(k))
            .map(|&e| (e >> 1, (e & 1) as usize))
    }

    /// Puts `s` in a free slot.
    pub(crate) fn alloc(&mut self, s: Slot) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = s;
                i
            }
            None => {
                self.slots.push(s);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Indexes `slot`'s key in direction `dir`.
    pub(crate) fn index(&mut self, slot: u32, dir: usize) {
        let Shard { index, slots, .. } = self;
        let Some(k) = entry_key(slots, slot << 1 | dir as u32) else {
            return;
        };
        let h = key_hash(k);
        index.insert_unique(h, slot << 1 | dir as u32, |&e| {
            entry_key(slots, e).map_or(0, key_hash)
        });
    }

    /// Removes the index entry of `slot`'s key in direction `dir`.
    fn unindex(&mut self, slot: u32, dir: usize) {
        let e = slot << 1 | dir as u32;
        let Some(k) = entry_key(&self.slots, e) else {
            return;
        };
        let h = key_hash(k);
        if let Ok(o) = self.index.find_entry(h, |&x| x == e) {
            o.remove();
        }
    }

    /// Frees `slot` (its index entries first).
    pub(crate) fn release(&mut self, slot: u32) -> Slot {
        match &self.slots[slot as usize] {
            Slot::Conn(c) => {
                let both_here = shard_of(&c.key[1]) == shard_of(&c.key[0]);
                self.unindex(slot, 0);
                if both_here {
                    self.unindex(slot, 1);
                }
            }
            Slot::Alias { .. } => self.unindex(slot, 0),
            Slot::Free => return Slot::Free,
        }
        self.free.push(slot);
        std::mem::replace(&mut self.slots[slot as usize], Slot::Free)
    }

    /// The unassured connection (of `zone`, if given) to evict among the
    /// next `n` slots from where the last look ended: one the responder
    /// never answered if there is one, and of those the one that expires
    /// first. Its slot, original key, and whether it was answered. Looks
    /// at `n` slots at most (fewer in a smaller slab), and moves the
    /// window on, so repeated calls cover the shard.
    pub(crate) fn pick_unassured(
        &mut self,
        n: usize,
        zone: Option<u16>,
    ) -> Option<(u32, Key, bool)> {
        let len = self.slots.len();
        if len == 0 {
            return None;
        }
        let start = self.ed_cursor % len;
        let looked = n.min(len);
        let mut best: Option<((bool, u64), u32, Key)> = None;
        for i in 0..looked {
            let at = (start + i) % len;
            if let Slot::Conn(c) = &self.slots[at] {
                let rank = (c.replied(), c.expires_ms);
                if !c.assured
                    && zone.is_none_or(|z| z == c.key[0].zone)
                    && best.is_none_or(|b| rank < b.0)
                {
                    best = Some((rank, at as u32, c.key[0]));
                }
            }
        }
        self.ed_cursor = (start + looked) % len;
        best.map(|((replied, _), slot, k)| (slot, k, replied))
    }

    /// Heap bytes held.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.index.capacity() * (std::mem::size_of::<u32>() + 1)
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.free.capacity() * 4
    }

    /// Entries in the index.
    pub(crate) fn indexed(&self) -> usize {
        self.index.len()
    }
}

/// All shards.
pub(crate) struct Table {
    pub(crate) shards: Box<[Mutex<Shard>]>,
    /// Per shard: its connections that are not assured (changed under
    /// the shard's lock, read without it).
    pub(crate) unassured: Box<[AtomicU32]>,
}

impl Table {
    pub(crate) fn new() -> Table {
        Table {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            unassured: (0..SHARDS).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// One more (`up`) or one fewer unassured connection in shard `i`
    /// (whose lock the caller holds).
    pub(crate) fn count_unassured(&self, i: usize, up: bool) {
        if up {
            self.unassured[i].fetch_add(1, Relaxed);
        } else {
            self.unassured[i].fetch_sub(1, Relaxed);
        }
    }

    /// Locks shard `i` (a worker that panicked holding it left it as it
    /// was: every change is whole before it could panic, so the data is
    /// still sound).
    pub(crate) fn lock(&self, i: usize) -> MutexGuard<'_, Shard> {
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Locks shards `a` and `b` in index order (one lock if equal).
    pub(crate) fn lock2(&self, a: usize, b: usize) -> Two<'_> {
        if a == b {
            Two::One(self.lock(a))
        } else if a < b {
            let ga = self.lock(a);
            Two::Two(ga, self.lock(b))
        } else {
            let gb = self.lock(b);
            Two::Two(self.lock(a), gb)
        }
    }
}

/// Two shards locked together: (`a`, `b`) as asked.
pub(crate) enum Two<'a> {
    One(MutexGuard<'a, Shard>),
    /// The guards of `a` and `b`.
    Two(MutexGuard<'a, Shard>, MutexGuard<'a, Shard>),
}

impl Two<'_> {
    pub(crate) fn a(&mut self) -> &mut Shard {
        match self {
            Two::One(g) => g,
            Two::Two(g, _) => g,
        }
    }

    /// The second shard, if not the same as the first.
    pub(crate) fn b(&mut self) -> Option<&mut Shard> {
        match self {
            Two::One(_) => None,
            Two::Two(_, g) => Some(g),
        }
    }
}
