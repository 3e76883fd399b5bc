//! Network address translation: the range a `nat(src=…)` or `nat(dst=…)`
//! gives, choosing a free mapping for a new connection, and rewriting a
//! packet's addresses and ports with their checksums (incrementally, RFC
//! 1624: the cost does not grow with the packet).

use crate::key::{addr, words, Key, Layout, L4};
use packet::checksum;
use packet::wire::icmp::Icmp;
use packet::wire::ipv4::Ipv4;
use packet::wire::ipv6::{self, Ipv6};
use packet::wire::transport;
use packet::wire::udp::Ports;

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
/// Checksums are updated incrementally: IPv4's header checksum, and the
/// transport's through the one fix-up, `packet::wire::transport` (a UDP
/// datagram sent without a checksum stays without, IPv6's too, as Open
/// vSwitch leaves it; SCTP's CRC is not recomputed).
pub fn rewrite(b: &mut [u8], at: &Layout, l4: &L4, from: &Key, to: &Key) {
    // ICMPv6's checksum covers IPv6's pseudo-header: in an IPv4 packet
    // that protocol number is opaque, its bytes left alone.
    let proto = match (from.v6, from.proto) {
        (false, packet::parse::ipproto::ICMPV6) => 0,
        (_, p) => p,
    };
    let l4o = at.l4;
    // The transport checksum follows each change of bytes it covers.
    let fix = |b: &mut [u8], old: &[u8], new: &[u8], pseudo: bool| {
        transport::fix_checksum(b, l4o, proto, old, new, pseudo)
    };
    let (src, dst) = (addr(to.src), addr(to.dst));
    if from.v6 {
        let Some(mut h) = Ipv6::at_mut(b, 0) else {
            return;
        };
        let (os, od) = (h.src(), h.dst());
        h.set_src(src);
        h.set_dst(dst);
        if os != src {
            fix(b, &os.to_be_bytes(), &src.to_be_bytes(), true);
        }
        if od != dst {
            fix(b, &od.to_be_bytes(), &dst.to_be_bytes(), true);
        }
    } else {
        let Some(mut h) = Ipv4::at_mut(b, 0) else {
            return;
        };
        let (src, dst) = (src as u32, dst as u32);
        let (os, od) = (h.src(), h.dst());
        if os != src {
            h.set_src_fix(src);
        }
        if od != dst {
            h.set_dst_fix(dst);
        }
        if os != src {
            fix(b, &os.to_be_bytes(), &src.to_be_bytes(), true);
        }
        if od != dst {
            fix(b, &od.to_be_bytes(), &dst.to_be_bytes(), true);
        }
    }
    let ported = match l4 {
        L4::Tcp(_) | L4::Udp => true,
        L4::Other => from.has_ports(),
        // An ICMP query keeps its identifier (translations never change
        // it here); an error's quoted packet is `rewrite_quoted`'s.
        L4::IcmpQuery { .. } | L4::IcmpError { .. } => false,
    };
    if !ported {
        return;
    }
    let Some(mut p) = Ports::at_mut(b, l4o) else {
        return;
    };
    let (osp, odp) = (p.src(), p.dst());
    p.set_src(to.sport);
    p.set_dst(to.dport);
    if osp != to.sport {
        fix(b, &osp.to_be_bytes(), &to.sport.to_be_bytes(), false);
    }
    if odp != to.dport {
        fix(b, &odp.to_be_bytes(), &to.dport.to_be_bytes(), false);
    }
}

/// Rewrites the packet quoted by an ICMP error at `inner_l3` from `from`
/// to `to` (its addresses and ports) and the outer ICMP checksum with it;
/// the quoted packet's IPv4 header checksum follows, its transport
/// checksum is left as it is (its layer-4 part is cut short: receivers do
/// not check it).
pub fn rewrite_quoted(b: &mut [u8], at: &Layout, inner_l3: usize, from: &Key, to: &Key) {
    let Some(mut sum) = Icmp::at_mut(b, at.l4).map(|h| h.checksum()) else {
        return;
    };
    // Every change of the quoted bytes moves the ICMP checksum.
    let mut moved = |old: &[u8], new: &[u8]| sum = checksum::update_bytes(sum, old, new);
    let (src, dst) = (addr(to.src), addr(to.dst));
    let ihl = if from.v6 {
        let Some(mut h) = Ipv6::at_mut(b, inner_l3) else {
            return;
        };
        for (old, new, v6) in [(h.src(), src, true), (h.dst(), dst, false)] {
            if old != new {
                if v6 {
                    h.set_src(new);
                } else {
                    h.set_dst(new);
                }
                moved(&old.to_be_bytes(), &new.to_be_bytes());
            }
        }
        ipv6::LEN
    } else {
        let Some(mut h) = Ipv4::at_mut(b, inner_l3) else {
            return;
        };
        for (old, new, is_src) in [(h.src(), src as u32, true), (h.dst(), dst as u32, false)] {
            if old != new {
                let before = h.checksum();
                if is_src {
                    h.set_src_fix(new);
                } else {
                    h.set_dst_fix(new);
                }
                moved(&old.to_be_bytes(), &new.to_be_bytes());
                // The quoted header's checksum is in the ICMP payload too.
                moved(&before.to_be_bytes(), &h.checksum().to_be_bytes());
            }
        }
        h.header_len()
    };
    if from.has_ports() {
        if let Some(mut p) = Ports::at_mut(b, inner_l3 + ihl) {
            for (old, new, is_src) in [(p.src(), to.sport, true), (p.dst(), to.dport, false)] {
                if old != new {
                    if is_src {
                        p.set_src(new);
                    } else {
                        p.set_dst(new);
                    }
                    moved(&old.to_be_bytes(), &new.to_be_bytes());
                }
            }
        }
    }
    if let Some(mut h) = Icmp::at_mut(b, at.l4) {
        h.set_checksum(sum);
    }
}
