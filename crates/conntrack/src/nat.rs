//! Network address translation: the range a `nat(src=…)` or `nat(dst=…)`
//! gives, choosing a free mapping for a new connection, and rewriting a
//! packet's addresses and ports with their checksums (incrementally, RFC
//! 1624: the cost does not grow with the packet).

use crate::key::{addr, proto, words, Key, Layout, L4};
use packet::checksum;

/// Which end a `nat` translates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NatKind {
    /// `nat(src=…)`: the originator's address (and port).
    Src,
    /// `nat(dst=…)`: the responder's.
    Dst,
}

/// A `nat(…)` in a `ct`: with `range` a new connection gets a mapping;
/// without (`nat` alone) only an existing connection's mapping applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NatSpec {
    pub range: Option<NatRange>,
}

/// `src=ADDR[-ADDR][:PORT[-PORT]]` or the `dst=` form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NatRange {
    pub kind: NatKind,
    /// Addresses, IPv4 in the low 32 bits.
    pub addr_min: u128,
    pub addr_max: u128,
    /// Ports; both 0 when none were given.
    pub port_min: u16,
    pub port_max: u16,
    /// `random`: the first port tried is random rather than hashed.
    pub random: bool,
    /// `persistent`: the same address for a given originator (it is
    /// always, here: the address is chosen by a hash of the addresses).
    pub persistent: bool,
}

/// Bits of [`crate::Conn::nat`].
pub const SNAT: u8 = 1;
pub const DNAT: u8 = 2;

fn mix(k: &Key, salt: u64) -> u64 {
    use std::hash::BuildHasher;
    let x = rustc_hash::FxBuildHasher.hash_one((k.src, k.dst, k.proto, k.zone, salt));
    // Fx leaves the low bits weak: spread them.
    (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (x >> 32)
}

/// Candidate translated keys for a new connection whose packet key is
/// `orig`, in the order to try them: `f` is called with each candidate
/// (the originator's key after translation) until it returns true; at
/// most `budget` candidates are tried. Returns the accepted candidate.
pub fn choose(
    orig: &Key,
    r: &NatRange,
    seed: u64,
    budget: u32,
    mut f: impl FnMut(&Key) -> bool,
) -> Option<Key> {
    let span = r.addr_max.saturating_sub(r.addr_min);
    let pick = mix(orig, 0);
    let a = if span == 0 {
        r.addr_min
    } else {
        r.addr_min + (pick as u128 % (span + 1))
    };
    let base = {
        let mut k = *orig;
        match r.kind {
            NatKind::Src => k.src = words(a),
            NatKind::Dst => k.dst = words(a),
        }
        k
    };
    let ported = orig.has_ports();
    let cur = match r.kind {
        NatKind::Src => orig.sport,
        NatKind::Dst => orig.dport,
    };
    let (lo, hi) = if r.port_min == 0 && r.port_max == 0 {
        // No range: the port as it is if free, then (for a source) the
        // port class it belongs to, as Linux does.
        match r.kind {
            NatKind::Dst => (cur, cur),
            NatKind::Src if cur < 512 => (1, 511),
            NatKind::Src if cur < 1024 => (600, 1023),
            NatKind::Src => (1024, 65535),
        }
    } else {
        (r.port_min, r.port_max.max(r.port_min))
    };
    let with_port = |p: u16| {
        let mut k = base;
        if ported {
            match r.kind {
                NatKind::Src => k.sport = p,
                NatKind::Dst => k.dport = p,
            }
        }
        k
    };
    // First the port as it is, when in the range.
    if !ported || (lo..=hi).contains(&cur) {
        let k = with_port(cur);
        if f(&k) {
            return Some(k);
        }
        if !ported {
            return None;
        }
    }
    let n = (hi - lo) as u32 + 1;
    let start = if r.random {
        seed
    } else {
        mix(orig, 1) ^ (orig.sport as u64)
    };
    for i in 0..budget.min(n) {
        let p = lo + ((start as u32).wrapping_add(i) % n) as u16;
        let k = with_port(p);
        if f(&k) {
            return Some(k);
        }
    }
    None
}

/// Rewrites the packet `b` (as [`crate::key::parse`] laid it out) from
/// key `from` to key `to` (addresses and ports; for an ICMP error, the
/// outer destination or source and the quoted packet's matching end).
/// Checksums are updated incrementally.
pub fn rewrite(b: &mut [u8], at: &Layout, l4: &L4, from: &Key, to: &Key) {
    let v6 = from.v6;
    let (alen, sa, da) = if v6 { (16, 8, 24) } else { (4, 12, 16) };
    let l4o = at.l4;
    // The layer-4 checksum's offset, if it covers the pseudo-header.
    let l4sum = match from.proto {
        proto::TCP => Some(l4o + 16),
        proto::UDP | proto::UDPLITE => Some(l4o + 6),
        proto::ICMPV6 if v6 => Some(l4o + 2),
        _ => None,
    };
    let udp_zero = from.proto == proto::UDP && !v6 && get16(b, l4o + 6) == 0;
    let mut ip_sum = if v6 { 0 } else { get16(b, 10) };
    let mut l4_sum = l4sum.map(|o| get16(b, o));
    let mut change = |b: &mut [u8], off: usize, new: &[u8], pseudo: bool, ip: bool| {
        let n = new.len();
        let mut old = [0u8; 16];
        old[..n].copy_from_slice(&b[off..off + n]);
        if &old[..n] == new {
            return;
        }
        b[off..off + n].copy_from_slice(new);
        if ip && !v6 {
            ip_sum = checksum::update_bytes(ip_sum, &old[..n], new);
        }
        if pseudo {
            if let Some(s) = l4_sum.as_mut() {
                *s = checksum::update_bytes(*s, &old[..n], new);
            }
        }
    };
    let (src, dst) = (addr(to.src).to_be_bytes(), addr(to.dst).to_be_bytes());
    change(b, sa, &src[16 - alen..], true, true);
    change(b, da, &dst[16 - alen..], true, true);
    match l4 {
        L4::Tcp(_) | L4::Udp => {
            change(b, l4o, &to.sport.to_be_bytes(), true, false);
            change(b, l4o + 2, &to.dport.to_be_bytes(), true, false);
        }
        L4::Other if from.has_ports() => {
            change(b, l4o, &to.sport.to_be_bytes(), true, false);
            change(b, l4o + 2, &to.dport.to_be_bytes(), true, false);
        }
        L4::IcmpQuery { .. } => {
            // The identifier is kept (translations never change it here).
        }
        L4::IcmpError { .. } | L4::Other => {}
    }
    if !v6 {
        put16(b, 10, ip_sum);
    }
    if let (Some(o), Some(s)) = (l4sum, l4_sum) {
        if !udp_zero {
            put16(
                b,
                o,
                if from.proto == proto::UDP && s == 0 {
                    0xffff
                } else {
                    s
                },
            );
        }
    }
}

/// Rewrites the packet quoted by an ICMP error at `inner_l3` from `from`
/// to `to` (its addresses and ports) and the outer ICMP checksum with it;
/// the quoted packet's own checksums are left as they are (its layer-4
/// part is cut short: receivers do not check them).
pub fn rewrite_quoted(b: &mut [u8], at: &Layout, inner_l3: usize, from: &Key, to: &Key) {
    let v6 = from.v6;
    let (alen, sa, da) = if v6 { (16, 8, 24) } else { (4, 12, 16) };
    let icmp_sum_at = at.l4 + 2;
    let mut icmp_sum = get16(b, icmp_sum_at);
    let ihl = if v6 {
        40
    } else {
        (b[inner_l3] & 0xf) as usize * 4
    };
    let mut inner_ip_sum = if v6 { 0 } else { get16(b, inner_l3 + 10) };
    let (src, dst) = (addr(to.src).to_be_bytes(), addr(to.dst).to_be_bytes());
    let (sp, dp) = (to.sport.to_be_bytes(), to.dport.to_be_bytes());
    let ports = if from.has_ports() { 2 } else { 0 };
    let edits: [(usize, &[u8], bool); 4] = [
        (inner_l3 + sa, &src[16 - alen..], true),
        (inner_l3 + da, &dst[16 - alen..], true),
        (inner_l3 + ihl, &sp, false),
        (inner_l3 + ihl + 2, &dp, false),
    ];
    for &(off, new, ip) in &edits[..2 + ports] {
        let n = new.len();
        let Some(cur) = b.get(off..off + n) else {
            continue;
        };
        let mut old = [0u8; 16];
        old[..n].copy_from_slice(cur);
        if &old[..n] == new {
            continue;
        }
        b[off..off + n].copy_from_slice(new);
        icmp_sum = checksum::update_bytes(icmp_sum, &old[..n], new);
        if ip && !v6 {
            let before = inner_ip_sum;
            inner_ip_sum = checksum::update_bytes(inner_ip_sum, &old[..n], new);
            // The inner IP checksum is in the ICMP payload too.
            icmp_sum = checksum::update_bytes(
                icmp_sum,
                &before.to_be_bytes(),
                &inner_ip_sum.to_be_bytes(),
            );
            put16(b, inner_l3 + 10, inner_ip_sum);
        }
    }
    put16(b, icmp_sum_at, icmp_sum);
}

fn get16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn put16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_be_bytes());
}
