//! sluice's connection tracker, in user space: what Open vSwitch's `ct`
//! action asks of a tracker.
//!
//! [`Tracker::track`] takes an IPv4 or IPv6 packet (its bytes from the IP
//! header on), the zone and what the `ct` asks (commit, force, NAT, a mark
//! and label to set) and returns the packet's connection state as the
//! `ct_state`, `ct_zone`, `ct_mark`, `ct_label` and `ct_nw_*`/`ct_tp_*`
//! fields read it; with NAT it rewrites the packet's addresses and ports
//! in place.
//!
//! - TCP: states and sequence windows ([`tcp`]); a segment outside the
//!   window or with flags no TCP sends is `+inv`.
//! - UDP, SCTP, UDP-Lite, other IP protocols: by addresses (and ports);
//!   established once a reply was seen.
//! - ICMP and ICMPv6: echo (and IPv4 timestamp, information, address mask)
//!   requests and their replies; an error that quotes a tracked
//!   connection's packet is `+rel`; other ICMP messages are `+inv`.
//! - Zones: a connection is tracked per zone (the zone is part of its key).
//! - Timeouts per protocol state, Linux's defaults ([`Timeouts`]),
//!   changeable at run time.
//! - Limits: in total and per zone. At a limit a new connection first
//!   evicts a connection that is not assured (Linux's early drop: TCP
//!   before its handshake completed, UDP and others before a reply, any
//!   ICMP), of its zone if the zone's limit is the one reached, found
//!   with bounded work ([`EARLY_DROP_SHARDS`] shards locked,
//!   [`EARLY_DROP_SLOTS`] slots looked at in each); counted in
//!   [`Stats::early_dropped`]. With none found it is not committed (the
//!   packet is `+trk+new` but nothing is stored, as in Open vSwitch) and
//!   counted in [`Stats::refused`]. An assured connection is never
//!   evicted, so a SYN flood can neither push out live connections nor
//!   keep new ones out for the SYN_SENT timeout.
//! - NAT: a new connection whose NAT finds no free mapping in
//!   [`NAT_TRIES`] tries is not committed and is counted in
//!   [`Stats::refused`] and [`Stats::nat_exhausted`] (no eviction for it,
//!   as in Linux).
//! - IP fragments are not reassembled: a fragment is `+trk+inv` (the
//!   missing piece, documented in docs/OVS-DIALECT.md).
//!
//! Thread-safety: a `Tracker` is shared by all workers (`&self`
//! everywhere); see [`table`] for the locking. Nothing here panics on any
//! packet bytes (a fuzz target holds this), and memory is bounded by the
//! limits.

pub mod build;
mod config;
mod conn;
pub mod key;
pub mod nat;
mod table;
pub mod tcp;
pub mod text;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::MutexGuard;

pub use config::{Limits, Timeouts, TIMEOUT_NAMES};
pub use conn::{Conn, ProtoState};
pub use key::{Key, Parsed, L4};
pub use nat::{NatKind, NatRange, NatSpec};

use config::{LiveLimits, LiveTimeouts};
use table::{shard_of, Slot, Table};

/// Bits of `ct_state`, as Open vSwitch numbers them.
pub mod state {
    pub const NEW: u32 = 0x01;
    pub const EST: u32 = 0x02;
    pub const REL: u32 = 0x04;
    pub const RPL: u32 = 0x08;
    pub const INV: u32 = 0x10;
    pub const TRK: u32 = 0x20;
    pub const SNAT: u32 = 0x40;
    pub const DNAT: u32 = 0x80;
}

/// What a `ct` action asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Request {
    pub zone: u16,
    pub commit: bool,
    /// With `commit`: a connection found in the reply direction is ended
    /// and the packet starts a new one.
    pub force: bool,
    pub nat: Option<NatSpec>,
    /// (value, mask) to set the connection's mark to (with `commit`).
    pub mark: Option<(u32, u32)>,
    /// (value, mask) for the label.
    pub label: Option<(u128, u128)>,
    /// The packet's `ct_state` and `ct_zone` before this `ct` (a packet
    /// translated in this zone already is not translated again).
    pub prev_state: u32,
    pub prev_zone: u16,
}

/// The packet's connection fields after a `ct`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Verdict {
    /// `ct_state` ([`state`] bits; always with `TRK`).
    pub state: u32,
    pub zone: u16,
    pub mark: u32,
    pub label: u128,
    /// The connection's original-direction key (`ct_nw_src` and so on),
    /// when the packet belongs to one (a new packet's own key).
    pub orig: Option<Key>,
    /// The packet's bytes were rewritten (NAT).
    pub rewritten: bool,
}

/// Counters (monotonic).
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections committed.
    pub committed: AtomicU64,
    /// New connections not committed: a limit reached and nothing to
    /// evict, or no free NAT mapping.
    pub refused: AtomicU64,
    /// Connections not assured evicted to make room for a new one at a
    /// limit (early drop).
    pub early_dropped: AtomicU64,
    /// New connections not committed because NAT found no free mapping
    /// (also counted in `refused`).
    pub nat_exhausted: AtomicU64,
    /// Packets found invalid.
    pub invalid: AtomicU64,
    /// Connections ended by a timeout.
    pub expired: AtomicU64,
    /// Packets tracked.
    pub packets: AtomicU64,
}

/// A connection as [`Tracker::dump`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub conn: Conn,
    /// Milliseconds until it expires.
    pub remaining_ms: u64,
}

/// What [`Tracker::flush`] removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Filter {
    pub zone: Option<u16>,
    /// Fields of the original-direction key that must match (each `None`
    /// matches anything).
    pub orig: KeyFilter,
    /// Fields of the reply-direction key.
    pub reply: KeyFilter,
}

/// Fields of a key to match; `None` matches anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KeyFilter {
    pub src: Option<u128>,
    pub dst: Option<u128>,
    pub proto: Option<u8>,
    pub sport: Option<u16>,
    pub dport: Option<u16>,
}

impl KeyFilter {
    fn matches(&self, k: &Key) -> bool {
        self.src.is_none_or(|a| a == k.src_addr())
            && self.dst.is_none_or(|a| a == k.dst_addr())
            && self.proto.is_none_or(|p| p == k.proto)
            && self.sport.is_none_or(|p| p == k.sport)
            && self.dport.is_none_or(|p| p == k.dport)
    }
}

impl Filter {
    fn matches(&self, c: &Conn) -> bool {
        self.zone.is_none_or(|z| z == c.key[0].zone)
            && self.orig.matches(&c.key[0])
            && self.reply.matches(&c.key[1])
    }
}

/// The tracker.
pub struct Tracker {
    table: Table,
    timeouts: LiveTimeouts,
    limits: LiveLimits,
    total: AtomicU64,
    pub stats: Stats,
    sweep_shard: AtomicUsize,
}

/// How many packets between two steps of the incremental sweep.
/// (A full pass over 1 000 000 connections then takes about 16 000 000
/// packets; a connection found expired by a lookup goes at once, and a
/// new connection at a limit sweeps first, see [`Tracker::new_conn`].)
const SWEEP_EVERY: u64 = 1024;
/// Slots one sweep step looks at.
const SWEEP_SLOTS: usize = 64;
/// At a limit, one new connection in this many (refused or admitted by
/// an early drop) sweeps first ...
const REFUSED_SWEEP: u64 = 64;
/// ... this many steps.
const REFUSED_SWEEP_STEPS: usize = 16;
/// NAT mappings tried before a new connection gives up on one.
pub const NAT_TRIES: u32 = 128;
/// At a limit, shards with unassured connections that one new connection
/// locks at most looking for one to evict (Linux looks at 8 hash
/// buckets, `NF_CT_EVICTION_RANGE`) ...
pub const EARLY_DROP_SHARDS: usize = 8;
/// ... and slots it looks at in each.
pub const EARLY_DROP_SLOTS: usize = 32;

/// Where a connection was found.
struct Found {
    home: usize,
    slot: u32,
    dir: usize,
}

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker")
            .field("connections", &self.len())
            .field("limits", &self.limits())
            .finish_non_exhaustive()
    }
}

impl Default for Tracker {
    fn default() -> Tracker {
        Tracker::new(Timeouts::default(), Limits::default())
    }
}

impl Tracker {
    /// An empty tracker.
    pub fn new(timeouts: Timeouts, limits: Limits) -> Tracker {
        let t = Tracker {
            table: Table::new(),
            timeouts: LiveTimeouts::default(),
            limits: LiveLimits::new(&limits),
            total: AtomicU64::new(0),
            stats: Stats::default(),
            sweep_shard: AtomicUsize::new(0),
        };
        t.timeouts.store(&timeouts);
        t
    }

    /// The timeouts now.
    pub fn timeouts(&self) -> Timeouts {
        self.timeouts.load()
    }

    /// Changes the timeouts (connections pick them up at their next packet).
    pub fn set_timeouts(&self, t: &Timeouts) {
        self.timeouts.store(t);
    }

    /// The limits now.
    pub fn limits(&self) -> Limits {
        Limits {
            total: self.limits.total.load(Relaxed),
            zone_default: self.limits.zone_default.load(Relaxed),
        }
    }

    /// Changes the total and default per-zone limits.
    pub fn set_limits(&self, l: &Limits) {
        self.limits.total.store(l.total, Relaxed);
        self.limits.zone_default.store(l.zone_default, Relaxed);
    }

    /// Sets `zone`'s own limit (`None`: back to the default; `Some(0)`:
    /// no limit).
    pub fn set_zone_limit(&self, zone: u16, limit: Option<u32>) {
        let v = match limit {
            None => 0,
            Some(0) => u32::MAX,
            Some(n) => n,
        };
        self.limits.zone[zone as usize].store(v, Relaxed);
    }

    /// `zone`'s limit (0: none) and its connections now.
    pub fn zone_usage(&self, zone: u16) -> (u32, u32) {
        (
            self.limits.zone_limit(zone),
            self.limits.count[zone as usize].load(Relaxed),
        )
    }

    /// The zones with a limit of their own, and that limit (0: none), in
    /// zone order (`ct-get-limits` lists them).
    pub fn zone_limits(&self) -> Vec<(u16, u32)> {
        self.limits
            .zone
            .iter()
            .enumerate()
            .filter_map(|(z, l)| match l.load(Relaxed) {
                0 => None,
                u32::MAX => Some((z as u16, 0)),
                n => Some((z as u16, n)),
            })
            .collect()
    }

    /// Connections tracked now.
    pub fn len(&self) -> u64 {
        self.total.load(Relaxed)
    }

    /// Whether no connection is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes the table holds (slabs and indexes).
    pub fn heap_bytes(&self) -> usize {
        (0..table::SHARDS)
            .map(|i| self.table.lock(i).heap_bytes())
            .sum::<usize>()
            + self.limits.zone.len() * 8
    }

    /// Connections per zone now, for the zones that have any.
    pub fn zones(&self) -> Vec<(u16, u32)> {
        self.limits
            .count
            .iter()
            .enumerate()
            .filter_map(|(z, c)| {
                let n = c.load(Relaxed);
                (n > 0).then_some((z as u16, n))
            })
            .collect()
    }

    /// Tracks the IP packet `b` (IPv6 if `v6`) at `now_ms` (any monotonic
    /// clock, in milliseconds).
    pub fn track(&self, b: &mut [u8], v6: bool, req: &Request, now_ms: u64) -> Verdict {
        // One shared counter per packet: it also paces the sweep.
        if self
            .stats
            .packets
            .fetch_add(1, Relaxed)
            .is_multiple_of(SWEEP_EVERY)
        {
            self.sweep_step(now_ms);
        }
        let mut v = self.track_inner::<false>(b, v6, req, now_ms);
        v.state |= state::TRK;
        v.zone = req.zone;
        if v.state & state::INV != 0 {
            self.stats.invalid.fetch_add(1, Relaxed);
        }
        v
    }

    /// What [`Tracker::track`] would say, changing nothing in the table
    /// (the packet itself is rewritten if a translation applies): for
    /// `trace`.
    pub fn peek(&self, b: &mut [u8], v6: bool, req: &Request, now_ms: u64) -> Verdict {
        let mut v = self.track_inner::<true>(b, v6, req, now_ms);
        v.state |= state::TRK;
        v.zone = req.zone;
        v
    }

    /// With `DRY`, nothing in the table changes.
    fn track_inner<const DRY: bool>(
        &self,
        b: &mut [u8],
        v6: bool,
        req: &Request,
        now: u64,
    ) -> Verdict {
        let (mut key, l4, at) = match key::parse(b, v6) {
            Parsed::Ok { key, l4, at } => (key, l4, at),
            Parsed::Fragment | Parsed::Bad => {
                return Verdict {
                    state: state::INV,
                    ..Verdict::default()
                }
            }
        };
        key.zone = req.zone;
        // Translated in this zone already: not again.
        let nat_done = req.prev_zone == req.zone
            && req.prev_state & state::TRK != 0
            && req.prev_state & (state::SNAT | state::DNAT) != 0;
        if let L4::IcmpError {
            mut inner,
            inner_l3,
        } = l4
        {
            inner.zone = req.zone;
            return self.related::<DRY>(b, &at, &l4, &key, &inner, inner_l3, req, nat_done, now);
        }
        if let Some((mut g, f)) = self.locate::<DRY>(&key, now) {
            let Some(Slot::Conn(live)) = g.slots.get_mut(f.slot as usize) else {
                return Verdict {
                    state: state::INV,
                    ..Verdict::default()
                };
            };
            let mut copy;
            let c: &mut Conn = if DRY {
                copy = live.clone();
                &mut copy
            } else {
                live
            };
            if req.force && req.commit && f.dir == 1 {
                drop(g);
                if !DRY {
                    self.remove(f.home, f.slot);
                }
                return self.new_conn::<DRY>(b, &at, &l4, key, req, now);
            }
            let update = match (&mut c.proto, &l4) {
                (ProtoState::Tcp(t), L4::Tcp(seg)) => t.update(f.dir == 1, seg),
                (ProtoState::Simple { replied }, _) => {
                    if f.dir == 1 {
                        *replied = true;
                    }
                    if *replied {
                        tcp::Update::Valid
                    } else {
                        tcp::Update::ValidNew
                    }
                }
                _ => tcp::Update::Invalid,
            };
            let mut v = Verdict {
                orig: Some(c.key[0]),
                ..Verdict::default()
            };
            match update {
                tcp::Update::Reopen => {
                    drop(g);
                    if !DRY {
                        self.remove(f.home, f.slot);
                    }
                    return self.new_conn::<DRY>(b, &at, &l4, key, req, now);
                }
                tcp::Update::Invalid => v.state = state::INV,
                tcp::Update::ValidNew => v.state = state::NEW,
                tcp::Update::Valid => {
                    v.state = state::EST;
                    if f.dir == 1 {
                        v.state |= state::RPL;
                    }
                }
            }
            if update != tcp::Update::Invalid {
                c.expires_ms = now + c.timeout_ms(&self.timeouts);
            }
            if !DRY && !c.assured && c.proves_assured() {
                c.assured = true;
                self.table.count_unassured(f.home, false);
            }
            apply_marks(c, req);
            v.mark = c.mark;
            v.label = c.label();
            if req.nat.is_some() && c.nat != 0 && !nat_done {
                let to = c.key[1 - f.dir].reverse();
                nat::rewrite(b, &at, &l4, &key, &to);
                v.rewritten = true;
                v.state |= nat_state(c.nat, f.dir == 1);
            }
            return v;
        }
        self.new_conn::<DRY>(b, &at, &l4, key, req, now)
    }

    /// A packet no connection has.
    fn new_conn<const DRY: bool>(
        &self,
        b: &mut [u8],
        at: &key::Layout,
        l4: &L4,
        key: Key,
        req: &Request,
        now: u64,
    ) -> Verdict {
        let ok = match l4 {
            L4::Tcp(t) => tcp::valid_new(t),
            L4::IcmpQuery { ty } => key::icmp_is_request(*ty, key.v6),
            _ => true,
        };
        if !ok {
            return Verdict {
                state: state::INV,
                orig: None,
                ..Verdict::default()
            };
        }
        let mut v = Verdict {
            state: state::NEW,
            orig: Some(key),
            ..Verdict::default()
        };
        if !req.commit {
            return v;
        }
        // Limits first: a refused connection costs no NAT search.
        let zl = self.limits.zone_limit(key.zone);
        let total = self.limits.total.load(Relaxed);
        let full = || {
            (zl != 0 && self.limits.count[key.zone as usize].load(Relaxed) >= zl)
                || (total != 0 && self.total.load(Relaxed) >= total)
        };
        let mut at_limit = full();
        if at_limit
            && !DRY
            && (self.stats.refused.load(Relaxed) + self.stats.early_dropped.load(Relaxed))
                .is_multiple_of(REFUSED_SWEEP)
        {
            // Expired connections may hold the room: a bounded sweep
            // (one in REFUSED_SWEEP new connections at the limit, refused
            // or admitted by an early drop, so a flood at the limit does
            // not buy a sweep per packet).
            for _ in 0..REFUSED_SWEEP_STEPS {
                self.sweep_step(now);
            }
            at_limit = full();
        }
        if at_limit && !DRY {
            // Early drop: make room by evicting one that is not assured
            // (of this zone, if the zone is what is full).
            let zone_full = zl != 0 && self.limits.count[key.zone as usize].load(Relaxed) >= zl;
            at_limit = !self.early_drop(&key, zone_full.then_some(key.zone)).0;
        }
        if at_limit {
            if !DRY {
                self.stats.refused.fetch_add(1, Relaxed);
            }
            return v;
        }
        let range = req.nat.and_then(|n| n.range);
        let mut translated = key;
        if let Some(r) = range {
            let seed = self
                .stats
                .packets
                .load(Relaxed)
                .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            match nat::choose(&key, &r, seed, NAT_TRIES, |cand| {
                let rk = cand.reverse();
                self.table.lock(shard_of(&rk)).find(&rk).is_none()
            }) {
                Some(t) => translated = t,
                None => {
                    // No free mapping: not committed (Linux fails the
                    // connection too, and evicts nothing for it).
                    if !DRY {
                        self.stats.refused.fetch_add(1, Relaxed);
                        self.stats.nat_exhausted.fetch_add(1, Relaxed);
                    }
                    return v;
                }
            }
        }
        let reply = translated.reverse();
        let proto = match l4 {
            L4::Tcp(t) => ProtoState::Tcp(tcp::TcpConn::new(t)),
            _ => ProtoState::Simple { replied: false },
        };
        let mut c = Conn {
            key: [key, reply],
            proto,
            expires_ms: 0,
            mark: 0,
            label: [0, 0],
            nat: match range.map(|r| r.kind) {
                Some(NatKind::Src) if translated != key => nat::SNAT,
                Some(NatKind::Dst) if translated != key => nat::DNAT,
                _ => 0,
            },
            assured: false,
        };
        c.expires_ms = now + c.timeout_ms(&self.timeouts);
        apply_marks(&mut c, req);
        let (mark, label, nat_bits) = (c.mark, c.label(), c.nat);
        let (h, r) = (shard_of(&key), shard_of(&reply));
        if DRY {
            // What would be committed; the translation shows on the packet.
        } else {
            let mut two = self.table.lock2(h, r);
            let taken = two.a().find(&key).is_some()
                || match two.b() {
                    Some(s) => s.find(&reply).is_some(),
                    None => two.a().find(&reply).is_some(),
                };
            if taken {
                // Another worker committed it (or took the mapping) in
                // between: this packet is new, its connection is theirs.
                return v;
            }
            let slot = two.a().alloc(Slot::Conn(c));
            self.table.count_unassured(h, true);
            two.a().index(slot, 0);
            match two.b() {
                None => two.a().index(slot, 1),
                Some(s) => {
                    let a = s.alloc(Slot::Alias {
                        key: reply,
                        home: h as u16,
                        slot,
                    });
                    s.index(a, 0);
                }
            }
        }
        if !DRY {
            self.total.fetch_add(1, Relaxed);
            self.limits.count[key.zone as usize].fetch_add(1, Relaxed);
            self.stats.committed.fetch_add(1, Relaxed);
        }
        v.mark = mark;
        v.label = label;
        if nat_bits != 0 {
            nat::rewrite(b, at, l4, &key, &translated);
            v.rewritten = true;
            v.state |= nat_state(nat_bits, false);
        }
        v
    }

    /// An ICMP error: related to the connection of the packet it quotes.
    #[allow(clippy::too_many_arguments)] // the packet, its parts, and the request
    fn related<const DRY: bool>(
        &self,
        b: &mut [u8],
        at: &key::Layout,
        l4: &L4,
        outer: &Key,
        inner: &Key,
        inner_l3: usize,
        req: &Request,
        nat_done: bool,
        now: u64,
    ) -> Verdict {
        // The error goes back to the quoted packet's sender (Open vSwitch
        // and Linux both check this): one to anyone else is invalid.
        if outer.dst != inner.src {
            return Verdict {
                state: state::INV,
                ..Verdict::default()
            };
        }
        // The error travels the way an answer to the quoted packet would.
        let Some((g, f)) = self.locate::<DRY>(&inner.reverse(), now) else {
            return Verdict {
                state: state::INV,
                ..Verdict::default()
            };
        };
        let Some(Slot::Conn(c)) = g.slots.get(f.slot as usize) else {
            return Verdict {
                state: state::INV,
                ..Verdict::default()
            };
        };
        let mut v = Verdict {
            state: state::REL | if f.dir == 1 { state::RPL } else { 0 },
            orig: Some(c.key[0]),
            mark: c.mark,
            label: c.label(),
            ..Verdict::default()
        };
        if req.nat.is_some() && c.nat != 0 && !nat_done {
            // This direction's key becomes the other's, reversed; the
            // quoted packet goes the other way.
            let (here, there) = (c.key[f.dir], c.key[1 - f.dir]);
            let mut to = *outer;
            if outer.src == here.src {
                to.src = there.dst;
            }
            if outer.dst == here.dst {
                to.dst = there.src;
            }
            nat::rewrite(b, at, l4, outer, &to);
            nat::rewrite_quoted(b, at, inner_l3, inner, &there);
            v.rewritten = true;
            v.state |= nat_state(c.nat, f.dir == 1);
        }
        drop(g);
        v
    }

    /// Finds the connection that has `k` as one of its keys (removing it
    /// if it expired), with its shard locked.
    fn locate<const DRY: bool>(
        &self,
        k: &Key,
        now: u64,
    ) -> Option<(MutexGuard<'_, table::Shard>, Found)> {
        let s = shard_of(k);
        let g = self.table.lock(s);
        let (slot, dir) = g.find(k)?;
        let (g, home, slot, dir) = match g.slots.get(slot as usize) {
            Some(Slot::Conn(_)) => (g, s, slot, dir),
            Some(Slot::Alias { home, slot: hs, .. }) => {
                let (home, hs) = (*home as usize, *hs);
                drop(g);
                let hg = self.table.lock(home);
                match hg.slots.get(hs as usize) {
                    Some(Slot::Conn(c)) if c.key[1] == *k => (hg, home, hs, 1),
                    _ => return None,
                }
            }
            _ => return None,
        };
        let Some(Slot::Conn(c)) = g.slots.get(slot as usize) else {
            return None;
        };
        if c.expires_ms <= now {
            drop(g);
            if !DRY && self.remove(home, slot).is_some() {
                self.stats.expired.fetch_add(1, Relaxed);
            }
            return None;
        }
        Some((g, Found { home, slot, dir }))
    }

    /// Removes the connection at (`home`, `slot`), both its keys.
    fn remove(&self, home: usize, slot: u32) -> Option<Conn> {
        self.remove_if(home, slot, |_| true)
    }

    /// Early drop: evicts one connection that is not assured (of `zone`,
    /// if given), looking first in the shard `key` hashes to and on from
    /// there, skipping shards whose count of unassured connections is 0.
    /// One the responder never answered goes first: one that was answered
    /// (a handshake under way) is evicted only if none of those was found
    /// within the bound.
    /// Bounded work: [`table::SHARDS`] counter reads, [`EARLY_DROP_SHARDS`]
    /// shards locked and [`EARLY_DROP_SLOTS`] slots looked at in each.
    /// Returns whether one was evicted, and the slots looked at.
    fn early_drop(&self, key: &Key, zone: Option<u16>) -> (bool, usize) {
        let first = shard_of(key);
        let (mut locked, mut looked) = (0, 0);
        let mut answered = None;
        // The slot may have changed hands since the look: the key is checked.
        let evict = |s: usize, slot: u32, k0: Key| {
            let gone = self
                .remove_if(s, slot, |c| !c.assured && c.key[0] == k0)
                .is_some();
            if gone {
                self.stats.early_dropped.fetch_add(1, Relaxed);
            }
            gone
        };
        for i in 0..table::SHARDS {
            let s = (first + i) % table::SHARDS;
            if self.table.unassured[s].load(Relaxed) == 0 {
                continue;
            }
            let victim = {
                let mut g = self.table.lock(s);
                looked += EARLY_DROP_SLOTS.min(g.slots.len());
                g.pick_unassured(EARLY_DROP_SLOTS, zone)
            };
            match victim {
                Some((slot, k0, false)) if evict(s, slot, k0) => return (true, looked),
                Some((slot, k0, true)) if answered.is_none() => answered = Some((s, slot, k0)),
                _ => {}
            }
            locked += 1;
            if locked == EARLY_DROP_SHARDS {
                break;
            }
        }
        let gone = answered.is_some_and(|(s, slot, k0)| evict(s, slot, k0));
        (gone, looked)
    }

    /// Removes the connection at (`home`, `slot`) if `pred` holds for it.
    fn remove_if(&self, home: usize, slot: u32, pred: impl Fn(&Conn) -> bool) -> Option<Conn> {
        let reply_shard = match self.table.lock(home).slots.get(slot as usize) {
            Some(Slot::Conn(c)) => shard_of(&c.key[1]),
            _ => return None,
        };
        let mut two = self.table.lock2(home, reply_shard);
        let Some(Slot::Conn(c)) = two.a().slots.get(slot as usize) else {
            return None;
        };
        if !pred(c) {
            return None;
        }
        let reply = c.key[1];
        if reply_shard != shard_of(&c.key[1]) {
            return None;
        }
        if let Some(s) = two.b() {
            if let Some((a, _)) = s.find(&reply) {
                if matches!(s.slots.get(a as usize), Some(Slot::Alias { home: h, slot: hs, .. }) if *h as usize == home && *hs == slot)
                {
                    s.release(a);
                }
            }
        }
        let Slot::Conn(c) = two.a().release(slot) else {
            return None;
        };
        if !c.assured {
            self.table.count_unassured(home, false);
        }
        drop(two);
        self.total.fetch_sub(1, Relaxed);
        self.limits.count[c.key[0].zone as usize].fetch_sub(1, Relaxed);
        Some(c)
    }

    /// One step of the incremental sweep: [`SWEEP_SLOTS`] slots of the next
    /// shard; expired connections are removed.
    fn sweep_step(&self, now: u64) {
        let s = self.sweep_shard.fetch_add(1, Relaxed) % table::SHARDS;
        self.sweep_shard_slots(s, SWEEP_SLOTS, now);
    }

    fn sweep_shard_slots(&self, s: usize, n: usize, now: u64) -> usize {
        let mut expired: [u32; SWEEP_SLOTS] = [0; SWEEP_SLOTS];
        let mut stale: [u32; SWEEP_SLOTS] = [0; SWEEP_SLOTS];
        let (mut ne, mut ns) = (0, 0);
        let mut aliases: [(u32, usize, u32, Key); 8] = [(0, 0, 0, Key::default()); 8];
        let mut na = 0;
        let looked;
        {
            let mut g = self.table.lock(s);
            let len = g.slots.len();
            if len == 0 {
                return 0;
            }
            let start = g.cursor % len;
            looked = n.min(len).min(SWEEP_SLOTS);
            for i in 0..looked {
                let at = (start + i) % len;
                match &g.slots[at] {
                    Slot::Conn(c) if c.expires_ms <= now => {
                        expired[ne] = at as u32;
                        ne += 1;
                    }
                    Slot::Alias { key, home, slot } if na < aliases.len() => {
                        aliases[na] = (at as u32, *home as usize, *slot, *key);
                        na += 1;
                    }
                    _ => {}
                }
            }
            g.cursor = (start + looked) % len.max(1);
        }
        for &slot in &expired[..ne] {
            if self.remove(s, slot).is_some() {
                self.stats.expired.fetch_add(1, Relaxed);
            }
        }
        // An alias whose connection is gone (a removal that raced with a
        // slot's reuse) is removed.
        for &(at, home, hs, key) in &aliases[..na] {
            let live = matches!(
                self.table.lock(home).slots.get(hs as usize),
                Some(Slot::Conn(c)) if c.key[1] == key
            );
            if !live {
                stale[ns] = at;
                ns += 1;
            }
        }
        if ns > 0 {
            let mut g = self.table.lock(s);
            for &at in &stale[..ns] {
                if let Some(Slot::Alias { home, slot, key }) = g.slots.get(at as usize) {
                    let (home, slot, key) = (*home as usize, *slot, *key);
                    drop(g);
                    let live = matches!(
                        self.table.lock(home).slots.get(slot as usize),
                        Some(Slot::Conn(c)) if c.key[1] == key
                    );
                    g = self.table.lock(s);
                    if !live {
                        g.release(at);
                    }
                }
            }
        }
        looked
    }

    /// Removes every expired connection now (the incremental sweep does
    /// this a little at a time as packets pass).
    pub fn sweep(&self, now_ms: u64) {
        for s in 0..table::SHARDS {
            let len = self.table.lock(s).slots.len();
            let mut done = 0;
            while done < len {
                let n = self.sweep_shard_slots(s, SWEEP_SLOTS, now_ms);
                if n == 0 {
                    break;
                }
                done += n;
            }
        }
    }

    /// The connections that `filter` selects (at most `max`), sorted by
    /// zone and original key.
    pub fn dump(&self, filter: &Filter, max: usize, now_ms: u64) -> Vec<Entry> {
        let mut out = Vec::new();
        for s in 0..table::SHARDS {
            let g = self.table.lock(s);
            for slot in &g.slots {
                if let Slot::Conn(c) = slot {
                    if c.expires_ms > now_ms && filter.matches(c) && out.len() < max {
                        out.push(Entry {
                            conn: c.clone(),
                            remaining_ms: c.expires_ms - now_ms,
                        });
                    }
                }
            }
        }
        out.sort_by_key(|e| {
            let k = e.conn.key[0];
            (k.zone, k.v6, k.proto, k.src, k.dst, k.sport, k.dport)
        });
        out
    }

    /// Removes the connections `filter` selects; returns how many.
    pub fn flush(&self, filter: &Filter) -> usize {
        self.flush_if(|c| filter.matches(c))
    }

    /// Removes the connections for which `pred` is true (expired ones
    /// included); returns how many. For selections a [`Filter`] cannot
    /// say (Open vSwitch's NXT_CT_FLUSH: a connection by either
    /// direction's key, an address family, ICMP ids compared whole).
    pub fn flush_if(&self, pred: impl Fn(&Conn) -> bool) -> usize {
        let mut n = 0;
        for s in 0..table::SHARDS {
            let slots: Vec<u32> = {
                let g = self.table.lock(s);
                g.slots
                    .iter()
                    .enumerate()
                    .filter_map(|(i, x)| match x {
                        Slot::Conn(c) if pred(c) => Some(i as u32),
                        _ => None,
                    })
                    .collect()
            };
            for slot in slots {
                n += self.remove(s, slot).is_some() as usize;
            }
        }
        n
    }

    /// Index entries in all shards (two per untranslated connection; a
    /// translated one whose keys hash apart has one and its alias one).
    pub fn indexed(&self) -> usize {
        (0..table::SHARDS)
            .map(|i| self.table.lock(i).indexed())
            .sum()
    }
}

fn apply_marks(c: &mut Conn, req: &Request) {
    if !req.commit {
        return;
    }
    if let Some((v, m)) = req.mark {
        c.mark = (c.mark & !m) | (v & m);
    }
    if let Some((v, m)) = req.label {
        let l = (c.label() & !m) | (v & m);
        c.label = key::words(l);
    }
}

/// The `ct_state` NAT bit of a packet of a translated connection: the
/// originator's packets are translated as the connection was (source or
/// destination), the responder's the other way.
fn nat_state(nat: u8, reply: bool) -> u32 {
    let src = nat & nat::SNAT != 0;
    match (src, reply) {
        (true, false) | (false, true) => state::SNAT,
        (true, true) | (false, false) => state::DNAT,
    }
}

#[cfg(test)]
mod early_drop_tests {
    //! Early drop at a full table: unassured connections make room, assured
    //! ones never do, and the work per new connection is bounded.

    use super::*;
    use crate::build::{self, Ip, Seg};
    use proptest::prelude::*;

    const NOW: u64 = 1_000;

    fn ip(host: u32) -> Ip {
        let [_, b, c, d] = host.to_be_bytes();
        Ip::V4([10, b, c, d])
    }

    fn seg(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8) -> Seg {
        Seg {
            sport,
            dport,
            seq,
            ack,
            flags,
            win: 64240,
            wscale: None,
        }
    }

    fn commit(zone: u16) -> Request {
        Request {
            zone,
            commit: true,
            ..Request::default()
        }
    }

    fn limited(total: u64) -> Tracker {
        Tracker::new(
            Timeouts::default(),
            Limits {
                total,
                zone_default: 0,
            },
        )
    }

    /// A SYN from host `h` port `sport` to 10.255.0.1:80, committed in `zone`.
    fn syn(t: &Tracker, h: u32, sport: u16, zone: u16) -> Verdict {
        let mut p = build::tcp(
            ip(h),
            Ip::V4([10, 255, 0, 1]),
            &seg(sport, 80, 100, 0, 0x02),
            0,
        );
        t.track(&mut p, false, &commit(zone), NOW)
    }

    /// A whole handshake from host `h`: the connection ends up assured.
    fn handshake(t: &Tracker, h: u32, sport: u16, zone: u16) {
        let srv = Ip::V4([10, 255, 0, 1]);
        let look = Request {
            zone,
            ..Request::default()
        };
        assert_eq!(syn(t, h, sport, zone).state, state::TRK | state::NEW);
        let mut sa = build::tcp(srv, ip(h), &seg(80, sport, 900, 101, 0x12), 0);
        assert_ne!(t.track(&mut sa, false, &look, NOW).state & state::EST, 0);
        let mut ack = build::tcp(ip(h), srv, &seg(sport, 80, 101, 901, 0x10), 0);
        assert_ne!(t.track(&mut ack, false, &look, NOW).state & state::EST, 0);
    }

    fn count(c: &AtomicU64) -> u64 {
        c.load(Relaxed)
    }

    fn unassured_counted(t: &Tracker) -> u64 {
        t.table
            .unassured
            .iter()
            .map(|a| a.load(Relaxed) as u64)
            .sum()
    }

    fn unassured_held(t: &Tracker) -> u64 {
        t.dump(&Filter::default(), usize::MAX, NOW)
            .iter()
            .filter(|e| !e.conn.assured)
            .count() as u64
    }

    #[test]
    fn a_table_full_of_syn_sent_admits_a_new_connection() {
        let t = limited(500);
        for i in 0..500 {
            assert!(syn(&t, 1, 1000 + i as u16, 0).state & state::NEW != 0);
        }
        assert_eq!(t.len(), 500);
        assert_eq!(count(&t.stats.refused), 0);
        // Another host's connection gets in, and completes.
        handshake(&t, 2, 4000, 0);
        assert_eq!(t.len(), 500);
        assert_eq!(count(&t.stats.early_dropped), 1);
        assert_eq!(count(&t.stats.refused), 0);
        let d = t.dump(&Filter::default(), usize::MAX, NOW);
        let mine = d.iter().find(|e| e.conn.key[0].sport == 4000).unwrap();
        assert!(mine.conn.assured);
        assert_eq!(mine.conn.state_name(), "ESTABLISHED");
        assert_eq!(unassured_counted(&t), 499);
        assert_eq!(unassured_held(&t), 499);
    }

    #[test]
    fn a_handshake_under_way_outlasts_the_flood() {
        // 499 SYNs nobody answers and one the server answered: 2 000 new
        // connections at the full table evict the unanswered ones only.
        let t = limited(500);
        for i in 0..499 {
            syn(&t, 1, 1000 + i as u16, 0);
        }
        syn(&t, 2, 4000, 0);
        let srv = Ip::V4([10, 255, 0, 1]);
        let mut sa = build::tcp(srv, ip(2), &seg(80, 4000, 900, 101, 0x12), 0);
        let look = Request::default();
        assert_ne!(t.track(&mut sa, false, &look, NOW).state & state::EST, 0);
        for i in 0..2000u32 {
            syn(&t, 3 + i / 1000, 1000 + (i % 1000) as u16, 0);
        }
        assert_eq!(count(&t.stats.early_dropped), 2000);
        assert_eq!(t.len(), 500);
        // Its handshake completes.
        let mut ack = build::tcp(ip(2), srv, &seg(4000, 80, 101, 901, 0x10), 0);
        assert_ne!(t.track(&mut ack, false, &look, NOW).state & state::EST, 0);
        let d = t.dump(&Filter::default(), usize::MAX, NOW);
        let mine = d.iter().find(|e| e.conn.key[0].sport == 4000).unwrap();
        assert!(mine.conn.assured);
        // With only answered ones left, those go (no lock-out).
        let t = limited(3);
        for i in 0..3u16 {
            syn(&t, 5, 100 + i, 0);
            let mut sa = build::tcp(srv, ip(5), &seg(80, 100 + i, 900, 101, 0x12), 0);
            t.track(&mut sa, false, &look, NOW);
        }
        assert_eq!(syn(&t, 6, 100, 0).state, state::TRK | state::NEW);
        assert_eq!(count(&t.stats.early_dropped), 1);
        assert_eq!(count(&t.stats.refused), 0);
    }

    #[test]
    fn a_table_full_of_established_refuses_and_evicts_none() {
        let t = limited(300);
        for i in 0..300 {
            handshake(&t, 1, 1000 + i as u16, 0);
        }
        assert_eq!(unassured_counted(&t), 0);
        let before = t.dump(&Filter::default(), usize::MAX, NOW);
        for i in 0..50 {
            let v = syn(&t, 3, 5000 + i, 0);
            assert_eq!(v.state, state::TRK | state::NEW, "new, not committed");
        }
        assert_eq!(count(&t.stats.refused), 50);
        assert_eq!(count(&t.stats.early_dropped), 0);
        assert_eq!(t.dump(&Filter::default(), usize::MAX, NOW), before);
    }

    #[test]
    fn a_full_zone_evicts_only_its_own() {
        let t = limited(0);
        t.set_zone_limit(7, Some(20));
        for i in 0..20 {
            syn(&t, 1, 1000 + i, 7);
            syn(&t, 1, 1000 + i, 8);
        }
        assert_eq!(t.zone_usage(7), (20, 20));
        syn(&t, 2, 9000, 7);
        assert_eq!(t.zone_usage(7), (20, 20));
        assert_eq!(t.zone_usage(8).1, 20, "zone 8 untouched");
        assert_eq!(count(&t.stats.early_dropped), 1);
        let d = t.dump(
            &Filter {
                zone: Some(7),
                ..Filter::default()
            },
            usize::MAX,
            NOW,
        );
        assert!(d.iter().any(|e| e.conn.key[0].sport == 9000));
    }

    #[test]
    fn work_per_new_connection_is_bounded() {
        // A big table of established connections with a few unassured
        // ones spread over it: a new connection at the limit looks at no
        // more than the bound, whatever the table's size.
        let t = limited(0);
        for i in 0..20_000u32 {
            handshake(&t, 10 + i / 1000, 1000 + (i % 1000) as u16, 0);
        }
        for i in 0..3 {
            syn(&t, 99, 7000 + i, 0);
        }
        let bound = EARLY_DROP_SHARDS * EARLY_DROP_SLOTS;
        for i in 0..200u32 {
            let k = key::Key {
                sport: 20_000 + i as u16,
                ..Key::default()
            };
            let (_, looked) = t.early_drop(&k, None);
            assert!(looked <= bound, "{looked} slots looked at, bound {bound}");
        }
        // No assured one went, whatever was dropped.
        assert!(t.len() >= 20_000);
        assert_eq!(
            t.dump(&Filter::default(), usize::MAX, NOW)
                .iter()
                .filter(|e| e.conn.assured)
                .count(),
            20_000
        );
        // With nothing unassured left, no shard is even locked.
        t.flush_if(|c| !c.assured);
        assert_eq!(unassured_counted(&t), 0);
        assert_eq!(t.early_drop(&Key::default(), None), (false, 0));
    }

    #[test]
    fn nat_exhaustion_is_a_counted_refusal() {
        let t = Tracker::default();
        let one = Ip::V4([192, 0, 2, 1]);
        let Ip::V4(a) = one else { unreachable!() };
        let req = Request {
            commit: true,
            nat: Some(NatSpec {
                range: Some(NatRange {
                    kind: NatKind::Src,
                    addr_min: u32::from_be_bytes(a) as u128,
                    addr_max: u32::from_be_bytes(a) as u128,
                    port_min: 5000,
                    port_max: 5001,
                    random: false,
                    persistent: false,
                }),
            }),
            ..Request::default()
        };
        let mut n = 0;
        for i in 0..4u16 {
            let mut p = build::udp(ip(1), ip(2), 100 + i, 53, 0);
            if t.track(&mut p, false, &req, NOW).rewritten {
                n += 1;
            }
        }
        assert_eq!(n, 2, "two ports, two connections");
        assert_eq!(count(&t.stats.nat_exhausted), 2);
        assert_eq!(count(&t.stats.refused), 2);
        assert_eq!(count(&t.stats.early_dropped), 0);
        assert_eq!(t.len(), 2);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Whatever mix of new connections, completed handshakes, replies
        /// and flushes: the per-shard counts of unassured connections
        /// match the table, the limit holds, and no assured connection
        /// is ever evicted.
        #[test]
        fn unassured_counts_match_and_assured_survive(
            ops in proptest::collection::vec((0u8..4, 0u16..64), 1..300),
            limit in 8u64..40,
        ) {
            let t = limited(limit);
            let mut assured_before = 0u64;
            for (op, n) in ops {
                match op {
                    0 => { syn(&t, 1, 1000 + n, 0); }
                    1 => {
                        let mut q = build::udp(ip(2), ip(3), 1000 + n, 53, 0);
                        t.track(&mut q, false, &commit(0), NOW);
                        let mut r = build::udp(ip(3), ip(2), 53, 1000 + n, 0);
                        t.track(&mut r, false, &Request::default(), NOW);
                    }
                    2 => {
                        let mut q = build::udp(ip(4), ip(3), 1000 + n, 53, 0);
                        t.track(&mut q, false, &commit(0), NOW);
                    }
                    _ => { t.flush_if(|c| c.key[0].sport == 1000 + n); }
                }
                let d = t.dump(&Filter::default(), usize::MAX, NOW);
                let assured = d.iter().filter(|e| e.conn.assured).count() as u64;
                prop_assert!(op == 3 || assured >= assured_before, "an assured one was evicted");
                assured_before = assured;
                prop_assert!(t.len() <= limit);
                prop_assert_eq!(unassured_counted(&t), unassured_held(&t));
            }
        }
    }
}
