//! Flow-key extraction: one pass over the headers of a frame.
//!
//! [`extract`] never reads out of bounds and never panics: every fixed
//! header is read through a checked view of [`crate::wire`] (none when the
//! frame does not hold all of it), the variable parts (IPv6 extension
//! headers, ND options) with checked gets, and a header that is cut short
//! or malformed simply ends parsing. Its layer's flag (see [`crate::flags`]) is
//! then not set and its fields stay zero, so the key matches only what was
//! really present.

use crate::key::{flags, slots as s, FlowKey};
use crate::wire::arp::Arp;
use crate::wire::ethernet::{Addrs, EtherType};
use crate::wire::icmp::{Icmp, NdOption, NeighbourDiscovery};
use crate::wire::ipv4::Ipv4;
use crate::wire::ipv6::{self, Ipv6};
use crate::wire::mpls::{Itag, Mpls};
use crate::wire::tcp::Tcp;
use crate::wire::udp::{Sctp, Udp};
use crate::wire::vlan::{self, Vlan};

/// EtherTypes the parser knows.
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    pub const RARP: u16 = 0x8035;
    pub const VLAN: u16 = 0x8100;
    pub const QINQ: u16 = 0x88a8;
    /// Pre-standard QinQ tag still seen in the wild.
    pub const QINQ_OLD: u16 = 0x9100;
    pub const IPV6: u16 = 0x86dd;
    pub const MPLS: u16 = 0x8847;
    pub const MPLS_MCAST: u16 = 0x8848;
    pub const PBB: u16 = 0x88e7;
}

/// IP protocol numbers the parser knows.
pub mod ipproto {
    pub const ICMP: u8 = 1;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    pub const ICMPV6: u8 = 58;
    pub const SCTP: u8 = 132;
    /// UDP-Lite (RFC 3828): not parsed, but its checksum is followed
    /// (`wire::transport`).
    pub const UDPLITE: u8 = 136;
    pub const HOPOPTS: u8 = 0;
    pub const ROUTING: u8 = 43;
    pub const FRAGMENT: u8 = 44;
    pub const ESP: u8 = 50;
    pub const AH: u8 = 51;
    pub const NONE: u8 = 59;
    pub const DSTOPTS: u8 = 60;
}

/// `ofp_ipv6exthdr_flags`.
pub mod exthdr {
    pub const NONEXT: u16 = 1 << 0;
    pub const ESP: u16 = 1 << 1;
    pub const AUTH: u16 = 1 << 2;
    pub const DEST: u16 = 1 << 3;
    pub const FRAG: u16 = 1 << 4;
    pub const ROUTER: u16 = 1 << 5;
    pub const HOP: u16 = 1 << 6;
    pub const UNREP: u16 = 1 << 7;
    pub const UNSEQ: u16 = 1 << 8;
}

/// Where the headers start, for actions that edit them in place. `None`
/// when the header is absent or incomplete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Offsets {
    /// The outermost VLAN tag (its TPID).
    pub vlan: Option<u16>,
    /// The EtherType field after all tags (what eth_type reports).
    pub eth_type: Option<u16>,
    /// The outermost MPLS label stack entry or PBB I-TAG.
    pub l2_5: Option<u16>,
    /// The IPv4/IPv6/ARP header.
    pub l3: Option<u16>,
    /// The transport header.
    pub l4: Option<u16>,
    /// The EtherType the headers at `l2_5`/`l3` were parsed as (0: no
    /// Ethernet header). Editors trust this, never the EtherType bytes,
    /// which an earlier action may have rewritten.
    pub l3_type: u16,
    /// The IP protocol the header at `l4` was parsed as (valid when `l4`
    /// is set).
    pub l4_proto: u8,
    /// Where the transport segment ends (the IP length, not the frame's:
    /// Ethernet pads short frames), when all of it is in this packet; 0
    /// for a first fragment. What a whole-segment checksum (SCTP's CRC)
    /// may cover.
    pub l4_end: u16,
}

#[inline]
fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// Parses `frame` (an Ethernet frame received on `in_port`) into `key`,
/// overwriting its first [`crate::PACKET_WORDS`] words and keeping the
/// metadata words after them (see [`crate::PACKET_WORDS`]); returns the
/// header offsets.
pub fn extract(frame: &[u8], in_port: u32, key: &mut FlowKey) -> Offsets {
    // The metadata words after PACKET_WORDS are the caller's.
    key.w[..crate::key::PACKET_WORDS].fill(0);
    key.set(s::IN_PORT, in_port as u64);
    key.set(s::IN_PHY_PORT, in_port as u64);
    let mut off = Offsets::default();
    let Some(macs) = Addrs::at(frame, 0) else {
        return off;
    };
    let (dst, src) = (macs.dst(), macs.src());
    let mut at = 12;
    let mut ty = match EtherType::at(frame, at) {
        Some(t) => t.value(),
        None => return off,
    };
    // VLAN tags: the outermost one is the one OpenFlow 1.3 matches.
    while matches!(ty, ethertype::VLAN | ethertype::QINQ | ethertype::QINQ_OLD) {
        let Some(tci) = Vlan::at(frame, at).map(|t| t.tci()) else {
            return off;
        };
        let Some(inner) = EtherType::at(frame, at + vlan::LEN).map(|t| t.value()) else {
            return off;
        };
        if off.vlan.is_none() {
            off.vlan = Some(at as u16);
            key.set(s::VLAN_VID, 0x1000 | (tci & 0x0fff) as u64);
            key.set(s::VLAN_PCP, (tci >> 13) as u64);
            key.add_flags(flags::VLAN);
        }
        at += vlan::LEN;
        ty = inner;
    }
    key.set(s::ETH_DST, dst);
    key.set(s::ETH_SRC, src);
    key.set(s::ETH_TYPE, ty as u64);
    key.add_flags(flags::ETH);
    off.eth_type = Some(at as u16);
    off.l3_type = ty;
    let l3 = at + 2;
    match ty {
        ethertype::IPV4 => ipv4(frame, l3, key, &mut off),
        ethertype::IPV6 => ipv6(frame, l3, key, &mut off),
        ethertype::ARP | ethertype::RARP => arp(frame, l3, key, &mut off),
        ethertype::MPLS | ethertype::MPLS_MCAST => {
            if let Some(lse) = Mpls::at(frame, l3).map(|h| h.lse()) {
                key.set(s::MPLS_LABEL, (lse >> 12) as u64);
                key.set(s::MPLS_TC, ((lse >> 9) & 7) as u64);
                key.set(s::MPLS_BOS, ((lse >> 8) & 1) as u64);
                key.add_flags(flags::MPLS);
                off.l2_5 = Some(l3 as u16);
            }
        }
        ethertype::PBB => {
            if let Some(itag) = Itag::at(frame, l3).map(|h| h.word()) {
                key.set(s::PBB_ISID, (itag & 0x00ff_ffff) as u64);
                key.set(s::PBB_UCA, ((itag >> 27) & 1) as u64);
                key.add_flags(flags::PBB);
                off.l2_5 = Some(l3 as u16);
            }
        }
        _ => {}
    }
    off
}

fn arp(b: &[u8], at: usize, key: &mut FlowKey, off: &mut Offsets) {
    // Only Ethernet/IPv4 ARP has the fields OpenFlow matches.
    let Some(h) = Arp::at(b, at) else {
        return;
    };
    if !h.is_ethernet_ipv4() {
        return;
    }
    key.set(s::ARP_OP, h.op() as u64);
    key.set(s::ARP_SHA, h.sha());
    key.set(s::NW_SRC, h.spa() as u64);
    key.set(s::ARP_THA, h.tha());
    key.set(s::NW_DST, h.tpa() as u64);
    key.add_flags(flags::ARP);
    off.l3 = Some(at as u16);
}

fn ipv4(b: &[u8], at: usize, key: &mut FlowKey, off: &mut Offsets) {
    let Some(h) = Ipv4::at(b, at) else { return };
    let ihl = h.header_len();
    if h.version() != 4 || ihl < 20 || b.len() < at + ihl {
        return;
    }
    let total = h.total_len() as usize;
    if total < ihl {
        return;
    }
    key.set(s::IP_DSCP, (h.tos() >> 2) as u64);
    key.set(s::IP_ECN, (h.tos() & 3) as u64);
    key.set(s::IP_PROTO, h.proto() as u64);
    key.set(s::NW_TTL, h.ttl() as u64);
    key.set(s::NW_SRC, h.src() as u64);
    key.set(s::NW_DST, h.dst() as u64);
    key.add_flags(flags::IPV4);
    off.l3 = Some(at as u16);
    let (more, offset) = (h.more_fragments(), h.frag_offset());
    if more || offset != 0 {
        key.add_flags(flags::FRAG);
    }
    if offset != 0 {
        key.add_flags(flags::LATER_FRAG);
        return;
    }
    // The IP total length bounds the transport header (Ethernet may pad).
    let end = (at + total).min(b.len());
    l4(&b[..end], at + ihl, h.proto(), key, off);
}

fn ipv6(b: &[u8], at: usize, key: &mut FlowKey, off: &mut Offsets) {
    let Some(h) = Ipv6::at(b, at) else { return };
    if h.version() != 6 {
        return;
    }
    let tc = h.traffic_class();
    key.set(s::IP_DSCP, (tc >> 2) as u64);
    key.set(s::IP_ECN, (tc & 3) as u64);
    key.set(s::IPV6_FLABEL, h.flow_label() as u64);
    key.set(s::NW_TTL, h.hop_limit() as u64);
    let (src, dst) = (h.src(), h.dst());
    key.set(s::IPV6_SRC_HI, (src >> 64) as u64);
    key.set(s::IPV6_SRC_LO, src as u64);
    key.set(s::IPV6_DST_HI, (dst >> 64) as u64);
    key.set(s::IPV6_DST_LO, dst as u64);
    key.add_flags(flags::IPV6);
    off.l3 = Some(at as u16);
    let payload = h.payload_len() as usize;
    let end = (at + ipv6::LEN + payload).min(b.len());
    let b = &b[..end];

    // Extension headers, with the spec's flags for what was seen, repeated
    // or out of the RFC 8200 order (hop, dest, routing, frag, auth, esp, dest).
    let mut next = h.next_header();
    let mut p = at + ipv6::LEN;
    let mut seen: u16 = 0;
    let mut rank = 0u8;
    let mut ext: u16 = 0;
    let mut dest_count = 0;
    let mut later_frag = false;
    loop {
        let (bit, r) = match next {
            ipproto::HOPOPTS => (exthdr::HOP, 1),
            ipproto::DSTOPTS => {
                dest_count += 1;
                // A second destination-options header belongs after auth/esp.
                (
                    exthdr::DEST,
                    if dest_count == 1 && rank < 3 { 2 } else { 7 },
                )
            }
            ipproto::ROUTING => (exthdr::ROUTER, 3),
            ipproto::FRAGMENT => (exthdr::FRAG, 4),
            ipproto::AH => (exthdr::AUTH, 5),
            ipproto::ESP => (exthdr::ESP, 6),
            ipproto::NONE => {
                ext |= exthdr::NONEXT;
                break;
            }
            _ => break,
        };
        if seen & bit != 0 && !(bit == exthdr::DEST && dest_count == 2) {
            ext |= exthdr::UNREP;
        }
        if r < rank || (bit == exthdr::HOP && p != at + ipv6::LEN) {
            ext |= exthdr::UNSEQ;
        }
        seen |= bit;
        ext |= bit;
        rank = rank.max(r);
        if bit == exthdr::ESP {
            break; // encrypted from here on
        }
        let Some(&nh) = b.get(p) else { break };
        let Some(&len) = b.get(p + 1) else { break };
        let hlen = match bit {
            exthdr::FRAG => {
                let Some(fo) = be16(b, p + 2) else { break };
                key.add_flags(flags::FRAG);
                if fo & 0xfff8 != 0 {
                    later_frag = true;
                }
                8
            }
            exthdr::AUTH => (len as usize + 2) * 4,
            _ => (len as usize + 1) * 8,
        };
        if b.len() < p + hlen {
            break;
        }
        next = nh;
        p += hlen;
        if later_frag {
            break;
        }
    }
    key.set(s::IPV6_EXTHDR, ext as u64);
    key.set(s::IP_PROTO, next as u64);
    if later_frag {
        key.add_flags(flags::LATER_FRAG);
        return;
    }
    l4(b, p, next, key, off);
}

fn l4(b: &[u8], at: usize, proto: u8, key: &mut FlowKey, off: &mut Offsets) {
    // What goes in the two transport slots: the ports, or ICMP's type and
    // code.
    let pair = match proto {
        ipproto::TCP => Tcp::at(b, at).filter(|h| h.header_len() >= 20).map(|h| {
            key.set(s::TCP_FLAGS, h.flags() as u64);
            (h.src_port(), h.dst_port())
        }),
        ipproto::UDP => Udp::at(b, at).map(|h| (h.src_port(), h.dst_port())),
        ipproto::SCTP => Sctp::at(b, at).map(|h| (h.src_port(), h.dst_port())),
        ipproto::ICMP => Icmp::at(b, at).map(|h| (h.ty() as u16, h.code() as u16)),
        ipproto::ICMPV6 if key.flags() & flags::IPV6 != 0 => Icmp::at(b, at).map(|h| {
            if h.ty() == 135 || h.ty() == 136 {
                nd(b, at, h.ty(), key);
            }
            (h.ty() as u16, h.code() as u16)
        }),
        _ => None,
    };
    let ok = match pair {
        Some((src, dst)) => {
            key.set(s::TP_SRC, src as u64);
            key.set(s::TP_DST, dst as u64);
            true
        }
        None => false,
    };
    if ok {
        key.add_flags(flags::L4);
        off.l4 = Some(at as u16);
        off.l4_proto = proto;
        off.l4_end = if key.flags() & flags::FRAG != 0 {
            0
        } else {
            b.len() as u16
        };
    }
}

/// Neighbour solicitation (135) / advertisement (136): target and the
/// source/target link-layer address option.
fn nd(b: &[u8], at: usize, ty: u8, key: &mut FlowKey) {
    let Some(target) = NeighbourDiscovery::at(b, at).map(|h| h.target()) else {
        return;
    };
    let mut sll = 0;
    let mut tll = 0;
    let mut p = at + 24;
    while let (Some(&opt), Some(&len)) = (b.get(p), b.get(p + 1)) {
        let olen = len as usize * 8;
        if olen == 0 || b.len() < p + olen {
            return; // malformed options: the ND fields are not trustworthy
        }
        match (opt, ty) {
            (1, 135) if olen == 8 && sll == 0 => sll = NdOption::at(b, p).map_or(0, |o| o.mac()),
            (2, 136) if olen == 8 && tll == 0 => tll = NdOption::at(b, p).map_or(0, |o| o.mac()),
            _ => {}
        }
        p += olen;
    }
    key.set(s::ND_TARGET_HI, (target >> 64) as u64);
    key.set(s::ND_TARGET_LO, target as u64);
    key.set(s::ARP_SHA, sll);
    key.set(s::ARP_THA, tll);
    key.add_flags(flags::ND);
}

/// The VLAN id (0 if untagged), source and destination MAC (as 48-bit
/// numbers) of an Ethernet frame: what the NORMAL learning switch keys on.
/// None for a frame too short for its headers.
pub fn l2_addresses(f: &[u8]) -> Option<(u16, u64, u64)> {
    let macs = Addrs::at(f, 0)?;
    let tpid = EtherType::at(f, 12)?.value();
    let vlan = if matches!(tpid, ethertype::VLAN | ethertype::QINQ) {
        Vlan::at(f, 12)?.vid()
    } else {
        0
    };
    Some((vlan, macs.src(), macs.dst()))
}
