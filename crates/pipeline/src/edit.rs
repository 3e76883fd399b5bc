//! Editing packets in place: set_field on every settable field with
//! incremental checksum updates (RFC 1624), push/pop of VLAN, MPLS and PBB
//! headers, and the TTL actions.
//!
//! Every function takes the frame and its current [`Offsets`] (from
//! [`packet::extract`]) and leaves the frame valid; a field the packet does
//! not carry is left alone (the validator already refused flows whose
//! match does not guarantee the field, so this only happens for packets
//! that are truncated or malformed). Functions that change the header
//! layout return `true` so the caller re-extracts the key and offsets.

use ofp::oxm::{Oxm, OxmField as F};
use packet::checksum as ck;
use packet::parse::{ethertype, ipproto};
use packet::Offsets;

#[inline]
fn rd16(f: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([f[at], f[at + 1]])
}

#[inline]
fn wr16(f: &mut [u8], at: usize, v: u16) {
    f[at..at + 2].copy_from_slice(&v.to_be_bytes());
}

fn rd32(f: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]])
}

/// The L3 protocol at `off.l3`, from the EtherType field.
fn l3_type(f: &[u8], off: &Offsets) -> Option<u16> {
    off.eth_type.map(|at| rd16(f, at as usize))
}

/// Where the transport checksum lives, and the transport protocol.
fn l4_checksum_at(f: &[u8], off: &Offsets) -> Option<(usize, u8)> {
    let l3 = off.l3? as usize;
    let l4 = off.l4? as usize;
    let proto = match l3_type(f, off)? {
        ethertype::IPV4 => f[l3 + 9],
        ethertype::IPV6 => ipv6_l4(f, l3)?,
        _ => return None,
    };
    Some((l4 + csum_off(proto)?, proto))
}

fn csum_off(proto: u8) -> Option<usize> {
    match proto {
        ipproto::TCP => Some(16),
        ipproto::UDP => Some(6),
        ipproto::ICMP | ipproto::ICMPV6 => Some(2),
        _ => None,
    }
}

/// The upper-layer protocol of an IPv6 packet (after extension headers).
fn ipv6_l4(f: &[u8], l3: usize) -> Option<u8> {
    let mut next = *f.get(l3 + 6)?;
    let mut p = l3 + 40;
    loop {
        match next {
            ipproto::HOPOPTS | ipproto::ROUTING | ipproto::DSTOPTS => {
                let len = (*f.get(p + 1)? as usize + 1) * 8;
                next = *f.get(p)?;
                p += len;
            }
            ipproto::FRAGMENT => {
                next = *f.get(p)?;
                p += 8;
            }
            ipproto::AH => {
                let len = (*f.get(p + 1)? as usize + 2) * 4;
                next = *f.get(p)?;
                p += len;
            }
            other => return Some(other),
        }
    }
}

/// Updates the transport checksum after bytes it covers changed from `old`
/// to `new`. `pseudo` says the bytes are in the IP pseudo-header (addresses,
/// protocol), which ICMPv4's checksum does not cover. UDP's zero rule is
/// honoured.
fn fix_l4(f: &mut [u8], off: &Offsets, old: &[u8], new: &[u8], pseudo: bool) {
    let Some((at, proto)) = l4_checksum_at(f, off) else {
        return;
    };
    if at + 2 > f.len() || (pseudo && proto == ipproto::ICMP) {
        return;
    }
    let udp = proto == ipproto::UDP;
    let c = rd16(f, at);
    if udp && c == 0 && l3_type(f, off) == Some(ethertype::IPV4) {
        return; // IPv4 UDP without checksum stays without
    }
    let mut n = ck::update_bytes(c, old, new);
    if udp && n == 0 {
        n = 0xffff;
    }
    wr16(f, at, n);
}

/// Up to 16 bytes a field had before a rewrite (no allocation).
struct Old {
    buf: [u8; 16],
    len: usize,
}

impl std::ops::Deref for Old {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Rewrites `len` (≤ 16) bytes at `at` with the low bytes of `value`,
/// returning the old bytes.
fn put_bytes(f: &mut [u8], at: usize, len: usize, value: u128) -> Old {
    let mut old = Old { buf: [0; 16], len };
    old.buf[..len].copy_from_slice(&f[at..at + len]);
    f[at..at + len].copy_from_slice(&value.to_be_bytes()[16 - len..]);
    old
}

/// Rewrites a 16-bit word at `at` under `mask` and updates the checksum at
/// `csum_at` (if any) incrementally.
fn put16_masked(f: &mut [u8], at: usize, mask: u16, bits: u16, csum_at: Option<usize>) {
    let old = rd16(f, at);
    let new = (old & !mask) | (bits & mask);
    wr16(f, at, new);
    if let Some(c) = csum_at {
        let v = ck::update16(rd16(f, c), old, new);
        wr16(f, c, v);
    }
}

/// Executes `set_field` for `o` on `f`. Returns true if the frame's layout
/// changed (never for set_field) — kept for symmetry with push/pop.
pub fn set_field(f: &mut [u8], off: &Offsets, o: &Oxm) -> bool {
    let v = o.value;
    let l3 = off.l3.map(|x| x as usize);
    let l4 = off.l4.map(|x| x as usize);
    let ty = l3_type(f, off);
    let v4 = ty == Some(ethertype::IPV4);
    let v6 = ty == Some(ethertype::IPV6);
    let arp = matches!(ty, Some(ethertype::ARP | ethertype::RARP));
    match o.field {
        // A runt frame without a whole Ethernet header is left alone.
        F::EthDst | F::EthSrc if off.eth_type.is_none() => {}
        F::EthDst => {
            put_bytes(f, 0, 6, v);
        }
        F::EthSrc => {
            put_bytes(f, 6, 6, v);
        }
        F::EthType => {
            if let Some(at) = off.eth_type {
                wr16(f, at as usize, v as u16);
            }
        }
        F::VlanVid => {
            if let Some(at) = off.vlan {
                put16_masked(f, at as usize + 2, 0x0fff, v as u16, None);
            }
        }
        F::VlanPcp => {
            if let Some(at) = off.vlan {
                put16_masked(f, at as usize + 2, 0xe000, (v as u16) << 13, None);
            }
        }
        F::IpDscp | F::IpEcn => {
            let (mask, bits) = if o.field == F::IpDscp {
                (0xfc, (v as u8) << 2)
            } else {
                (0x03, v as u8)
            };
            match l3 {
                Some(at) if v4 => put16_masked(f, at, mask as u16, bits as u16, Some(at + 10)),
                // IPv6 traffic class straddles bytes 0 and 1: bits 4..11 of the first word.
                Some(at) if v6 => put16_masked(f, at, (mask as u16) << 4, (bits as u16) << 4, None),
                _ => {}
            }
        }
        F::IpProto => {
            if let (Some(at), true) = (l3, v4) {
                let old = [0, f[at + 9]];
                put16_masked(f, at + 8, 0x00ff, v as u16, Some(at + 10));
                fix_l4(f, off, &old, &[0, v as u8], true);
            }
        }
        F::Ipv4Src | F::Ipv4Dst | F::ArpSpa | F::ArpTpa => {
            let Some(at) = l3 else { return false };
            let (pos, is_arp) = match o.field {
                F::Ipv4Src if v4 => (at + 12, false),
                F::Ipv4Dst if v4 => (at + 16, false),
                F::ArpSpa if arp => (at + 14, true),
                F::ArpTpa if arp => (at + 24, true),
                _ => return false,
            };
            let old = put_bytes(f, pos, 4, v);
            if !is_arp {
                let c = ck::update32(rd16(f, at + 10), rd32(&old, 0), v as u32);
                wr16(f, at + 10, c);
                fix_l4(f, off, &old, &(v as u32).to_be_bytes(), true);
            }
        }
        F::TcpSrc
        | F::TcpDst
        | F::UdpSrc
        | F::UdpDst
        | F::Icmpv4Type
        | F::Icmpv4Code
        | F::Icmpv6Type
        | F::Icmpv6Code => {
            let Some(at) = l4 else { return false };
            let (pos, mask, bits) = match o.field {
                F::TcpSrc | F::UdpSrc => (at, 0xffff, v as u16),
                F::TcpDst | F::UdpDst => (at + 2, 0xffff, v as u16),
                F::Icmpv4Type | F::Icmpv6Type => (at, 0xff00, (v as u16) << 8),
                _ => (at, 0x00ff, v as u16),
            };
            let old = rd16(f, pos).to_be_bytes();
            put16_masked(f, pos, mask, bits, None);
            let new = rd16(f, pos).to_be_bytes();
            fix_l4(f, off, &old, &new, false);
        }
        F::SctpSrc | F::SctpDst => {
            let Some(at) = l4 else { return false };
            let pos = if o.field == F::SctpSrc { at } else { at + 2 };
            wr16(f, pos, v as u16);
            // CRC32c cannot be updated incrementally: recompute over the packet.
            let end = f.len();
            f[at + 8..at + 12].fill(0);
            let c = ck::sctp(&f[at..end]);
            f[at + 8..at + 12].copy_from_slice(&c);
        }
        F::ArpOp => {
            if let (Some(at), true) = (l3, arp) {
                wr16(f, at + 6, v as u16);
            }
        }
        F::ArpSha | F::ArpTha => {
            if let (Some(at), true) = (l3, arp) {
                put_bytes(
                    f,
                    if o.field == F::ArpSha {
                        at + 8
                    } else {
                        at + 18
                    },
                    6,
                    v,
                );
            }
        }
        F::Ipv6Src | F::Ipv6Dst => {
            if let (Some(at), true) = (l3, v6) {
                let old = put_bytes(
                    f,
                    if o.field == F::Ipv6Src {
                        at + 8
                    } else {
                        at + 24
                    },
                    16,
                    v,
                );
                fix_l4(f, off, &old, &v.to_be_bytes(), true);
            }
        }
        F::Ipv6Flabel => {
            if let (Some(at), true) = (l3, v6) {
                let w = (rd32(f, at) & 0xfff0_0000) | (v as u32 & 0x000f_ffff);
                f[at..at + 4].copy_from_slice(&w.to_be_bytes());
            }
        }
        F::Ipv6NdTarget | F::Ipv6NdSll | F::Ipv6NdTll => {
            let Some(at) = l4 else { return false };
            if !v6 || f.len() < at + 24 {
                return false;
            }
            let pos = match o.field {
                F::Ipv6NdTarget => Some((at + 8, 16)),
                _ => nd_option(f, at, if o.field == F::Ipv6NdSll { 1 } else { 2 })
                    .map(|p| (p + 2, 6)),
            };
            if let Some((pos, len)) = pos {
                let old = put_bytes(f, pos, len, v);
                let new = &v.to_be_bytes()[16 - len..];
                fix_l4(f, off, &old, new, false);
            }
        }
        F::MplsLabel | F::MplsTc | F::MplsBos => {
            if let Some(at) = mpls_at(f, off) {
                let lse = rd32(f, at);
                let (mask, bits) = match o.field {
                    F::MplsLabel => (0xffff_f000, (v as u32) << 12),
                    F::MplsTc => (0x0000_0e00, (v as u32) << 9),
                    _ => (0x0000_0100, (v as u32) << 8),
                };
                f[at..at + 4].copy_from_slice(&((lse & !mask) | (bits & mask)).to_be_bytes());
            }
        }
        F::PbbIsid => {
            if let (Some(at), Some(ethertype::PBB)) = (off.l2_5, ty) {
                let at = at as usize;
                let w = (rd32(f, at) & 0xff00_0000) | (v as u32 & 0x00ff_ffff);
                f[at..at + 4].copy_from_slice(&w.to_be_bytes());
            }
        }
        // Not packet fields: the pipeline keeps them in the key.
        F::InPort | F::InPhyPort | F::Metadata | F::TunnelId | F::Ipv6Exthdr | F::Unknown(_) => {}
    }
    false
}

/// The offset of the ND option of `kind` (1 = source, 2 = target LLA).
fn nd_option(f: &[u8], l4: usize, kind: u8) -> Option<usize> {
    let mut p = l4 + 24;
    while p + 8 <= f.len() {
        let (t, len) = (f[p], f[p + 1] as usize * 8);
        if len == 0 {
            return None;
        }
        if t == kind && len == 8 {
            return Some(p);
        }
        p += len;
    }
    None
}

fn mpls_at(f: &[u8], off: &Offsets) -> Option<usize> {
    match l3_type(f, off)? {
        ethertype::MPLS | ethertype::MPLS_MCAST => {
            off.l2_5.map(|x| x as usize).filter(|&a| a + 4 <= f.len())
        }
        _ => None,
    }
}

/// Where a new outermost VLAN tag, or a new MPLS label, goes.
fn after_macs() -> usize {
    12
}

/// push_vlan: a new outer tag with the given TPID; VID and PCP are copied
/// from the existing outer tag, or 0 (spec 5.12.1). Returns true (layout changed).
pub fn push_vlan(f: &mut Vec<u8>, off: &Offsets, tpid: u16) -> bool {
    if f.len() < 14 {
        return false;
    }
    let tci = off.vlan.map_or(0, |at| rd16(f, at as usize + 2));
    let mut tag = [0u8; 4];
    tag[..2].copy_from_slice(&tpid.to_be_bytes());
    tag[2..].copy_from_slice(&tci.to_be_bytes());
    f.splice(after_macs()..after_macs(), tag);
    true
}

/// pop_vlan: removes the outer tag.
pub fn pop_vlan(f: &mut Vec<u8>, off: &Offsets) -> bool {
    match off.vlan {
        Some(at) => {
            f.drain(at as usize..at as usize + 4);
            true
        }
        None => false,
    }
}

/// The IP TTL of the packet, if it is IP.
fn ip_ttl(f: &[u8], off: &Offsets) -> Option<u8> {
    let l3 = off.l3? as usize;
    match l3_type(f, off)? {
        ethertype::IPV4 => f.get(l3 + 8).copied(),
        ethertype::IPV6 => f.get(l3 + 7).copied(),
        _ => None,
    }
}

/// push_mpls: a new outermost label stack entry after the Ethernet/VLAN
/// header; label and TC from an existing outer entry (else 0), TTL from it
/// or from the IP header (else 64), BoS set when it is the only entry.
pub fn push_mpls(f: &mut Vec<u8>, off: &Offsets, eth: u16) -> bool {
    let Some(et) = off.eth_type.map(|x| x as usize) else {
        return false;
    };
    let outer = mpls_at(f, off).map(|at| rd32(f, at));
    let lse = match outer {
        Some(o) => o & !0x100,
        None => 0x100 | ip_ttl(f, off).unwrap_or(64) as u32,
    };
    wr16(f, et, eth);
    f.splice(et + 2..et + 2, lse.to_be_bytes());
    true
}

/// pop_mpls: removes the outermost label stack entry; the EtherType becomes `eth`.
pub fn pop_mpls(f: &mut Vec<u8>, off: &Offsets, eth: u16) -> bool {
    let (Some(at), Some(et)) = (mpls_at(f, off), off.eth_type) else {
        return false;
    };
    wr16(f, et as usize, eth);
    f.drain(at..at + 4);
    true
}

/// push_pbb: encapsulates the frame behind a backbone header whose MACs copy
/// the customer's and whose I-TAG carries I-SID 0 (set it with set_field).
pub fn push_pbb(f: &mut Vec<u8>, eth: u16) -> bool {
    if f.len() < 14 {
        return false;
    }
    let mut hdr = [0u8; 18];
    hdr[..12].copy_from_slice(&f[..12]);
    hdr[12..14].copy_from_slice(&eth.to_be_bytes());
    f.splice(0..0, hdr);
    true
}

/// pop_pbb: removes the backbone header; the customer frame is what is left.
pub fn pop_pbb(f: &mut Vec<u8>, off: &Offsets) -> bool {
    match (off.l2_5, l3_type(f, off)) {
        (Some(at), Some(ethertype::PBB)) if f.len() >= at as usize + 4 + 12 => {
            f.drain(..at as usize + 4);
            true
        }
        _ => false,
    }
}

/// The outcome of a TTL action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    Ok,
    /// The TTL was or became zero: the packet must not go on.
    Expired,
}

/// set_nw_ttl / dec_nw_ttl (`set` = None decrements).
pub fn nw_ttl(f: &mut [u8], off: &Offsets, set: Option<u8>) -> Ttl {
    let Some(l3) = off.l3.map(|x| x as usize) else {
        return Ttl::Ok;
    };
    let (pos, csum) = match l3_type(f, off) {
        Some(ethertype::IPV4) => (l3 + 8, Some(l3 + 10)),
        Some(ethertype::IPV6) => (l3 + 7, None),
        _ => return Ttl::Ok,
    };
    let old = f[pos];
    let new = match set {
        Some(t) => t,
        None if old <= 1 => return Ttl::Expired,
        None => old - 1,
    };
    if pos % 2 == 0 {
        put16_masked(f, pos, 0xff00, (new as u16) << 8, csum);
    } else {
        f[pos] = new;
    }
    Ttl::Ok
}

/// set_mpls_ttl / dec_mpls_ttl on the outermost entry.
pub fn mpls_ttl(f: &mut [u8], off: &Offsets, set: Option<u8>) -> Ttl {
    let Some(at) = mpls_at(f, off) else {
        return Ttl::Ok;
    };
    let old = f[at + 3];
    f[at + 3] = match set {
        Some(t) => t,
        None if old <= 1 => return Ttl::Expired,
        None => old - 1,
    };
    Ttl::Ok
}

/// copy_ttl_out: from the next-to-outermost header (inner MPLS entry, or
/// IP) to the outermost MPLS entry. copy_ttl_in: the other way.
pub fn copy_ttl(f: &mut [u8], off: &Offsets, outward: bool) {
    let Some(at) = mpls_at(f, off) else { return };
    let bos = f[at + 2] & 1 == 1;
    let inner_lse = (!bos && f.len() >= at + 8).then_some(at + 7);
    if outward {
        let ttl = match inner_lse {
            Some(p) => Some(f[p]),
            None => inner_ip_ttl(f, at + 4),
        };
        if let Some(t) = ttl {
            f[at + 3] = t;
        }
    } else {
        let t = f[at + 3];
        match inner_lse {
            Some(p) => f[p] = t,
            None => set_inner_ip_ttl(f, at + 4, t),
        }
    }
}

fn inner_ip_ttl(f: &[u8], at: usize) -> Option<u8> {
    match f.get(at)? >> 4 {
        4 => f.get(at + 8).copied(),
        6 => f.get(at + 7).copied(),
        _ => None,
    }
}

fn set_inner_ip_ttl(f: &mut [u8], at: usize, t: u8) {
    match f.get(at).map(|b| b >> 4) {
        Some(4) if f.len() >= at + 20 => {
            put16_masked(f, at + 8, 0xff00, (t as u16) << 8, Some(at + 10))
        }
        Some(6) if f.len() >= at + 40 => f[at + 7] = t,
        _ => {}
    }
}
