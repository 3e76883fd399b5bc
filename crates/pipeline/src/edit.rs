//! Editing packets in place: set_field on every settable field with
//! incremental checksum updates (RFC 1624), push/pop of VLAN, MPLS and PBB
//! headers, and the TTL actions.
//!
//! Every function takes the frame and its current [`Offsets`] (from
//! [`packet::extract`]) and leaves the frame valid.
//!
//! How out-of-bounds access is kept out: this module never indexes the
//! frame. It reaches a header only through a [`Hdr`], a fixed-size view
//! (`&mut [u8; N]`) taken with a checked `get_mut` at an offset the parser
//! recorded, which does not exist when the header is not wholly there; and
//! it reads and writes a header's fields only at constant offsets that the
//! compiler checks against `N` (`const { assert!(..) }`), so an access past
//! a header does not build; the ranges `Vec::splice`/`drain` take for
//! push and pop are the ones a `Hdr` was just taken at. Which header sits
//! at an offset is what the parser decided (`Offsets::l3_type`,
//! `Offsets::l4_proto`), never re-read from bytes an earlier action may
//! have rewritten; what the parser does not record is read from the
//! packet as it is now (the ICMPv6 type for the ND fields, the MPLS
//! bottom-of-stack bit and the IP version under a label for copy_ttl).
//!
//! A field the packet does not carry is left alone and reported as
//! [`Edit::Skipped`] (the worker counts these): validation refuses what it
//! can know in advance (flow matches, PACKET_OUT packets), but a group
//! bucket sees packets nobody knew at GROUP_MOD time. Actions that change
//! the header layout (set_field of eth_type or ip_proto, push, pop) report
//! it so the caller re-extracts the key and the offsets before the next
//! action.

use ofp::oxm::{Oxm, OxmField as F};
use packet::checksum as ck;
use packet::parse::{ethertype, ipproto};
use packet::{FrameBuf, Offsets};

/// What an edit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// Applied; the header layout is unchanged.
    Done,
    /// Applied; the header layout changed: re-extract before the next action.
    Layout,
    /// The packet has no such header (or not all of it): nothing changed.
    Skipped,
}

/// An `N`-byte header inside a frame. Fields are reached with constant
/// offsets checked against `N` when the code is built.
struct Hdr<'a, const N: usize>(&'a mut [u8; N]);

impl<'a, const N: usize> Hdr<'a, N> {
    /// The header at `at`, if the frame holds all `N` bytes of it.
    fn at(f: &'a mut [u8], at: Option<usize>) -> Option<Self> {
        let at = at?;
        let b = f.get_mut(at..at.checked_add(N)?)?;
        Some(Hdr(b.try_into().ok()?))
    }

    fn u8<const AT: usize>(&self) -> u8 {
        const { assert!(AT < N) };
        self.0[AT]
    }

    fn set_u8<const AT: usize>(&mut self, v: u8) {
        const { assert!(AT < N) };
        self.0[AT] = v;
    }

    fn u16<const AT: usize>(&self) -> u16 {
        const { assert!(AT + 2 <= N) };
        u16::from_be_bytes([self.0[AT], self.0[AT + 1]])
    }

    fn set_u16<const AT: usize>(&mut self, v: u16) {
        const { assert!(AT + 2 <= N) };
        [self.0[AT], self.0[AT + 1]] = v.to_be_bytes();
    }

    fn u32<const AT: usize>(&self) -> u32 {
        const { assert!(AT + 4 <= N) };
        u32::from_be_bytes([self.0[AT], self.0[AT + 1], self.0[AT + 2], self.0[AT + 3]])
    }

    fn set_u32<const AT: usize>(&mut self, v: u32) {
        const { assert!(AT + 4 <= N) };
        [self.0[AT], self.0[AT + 1], self.0[AT + 2], self.0[AT + 3]] = v.to_be_bytes();
    }

    /// Replaces the `L` bytes at `AT` with the low `L` bytes of `value`;
    /// returns what they were.
    fn swap<const AT: usize, const L: usize>(&mut self, value: u128) -> Old {
        const { assert!(AT + L <= N && L <= 16) };
        let new = value.to_be_bytes();
        let mut old = Old {
            buf: [0; 16],
            len: L,
        };
        for i in 0..L {
            old.buf[i] = self.0[AT + i];
            self.0[AT + i] = new[16 - L + i];
        }
        old
    }

    /// Rewrites the bits of `mask` in the 16-bit word at `AT`; returns the
    /// word before and after.
    fn masked16<const AT: usize>(&mut self, mask: u16, bits: u16) -> (u16, u16) {
        let old = self.u16::<AT>();
        let new = (old & !mask) | (bits & mask);
        self.set_u16::<AT>(new);
        (old, new)
    }

    /// Folds a change of a covered 16-bit word into the checksum at `AT`.
    fn fold16<const AT: usize>(&mut self, (old, new): (u16, u16)) {
        let c = ck::update16(self.u16::<AT>(), old, new);
        self.set_u16::<AT>(c);
    }
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

fn l3(off: &Offsets) -> Option<usize> {
    off.l3.map(usize::from)
}

fn l4(off: &Offsets) -> Option<usize> {
    off.l4.map(usize::from)
}

fn is_v4(off: &Offsets) -> bool {
    off.l3.is_some() && off.l3_type == ethertype::IPV4
}

fn is_v6(off: &Offsets) -> bool {
    off.l3.is_some() && off.l3_type == ethertype::IPV6
}

fn is_arp(off: &Offsets) -> bool {
    off.l3.is_some() && matches!(off.l3_type, ethertype::ARP | ethertype::RARP)
}

/// The transport protocol at `off.l4`, if there is a transport header.
fn l4_proto(off: &Offsets) -> Option<u8> {
    off.l4.map(|_| off.l4_proto)
}

/// Folds a change of bytes a transport checksum covers, from `old` to
/// `new`, into that checksum. `pseudo`: the bytes are in the IP
/// pseudo-header (addresses, protocol), which ICMPv4's checksum does not
/// cover. A UDP datagram without a checksum (0) stays without; a UDP
/// checksum that comes out zero is sent as 0xffff.
fn fix_l4(f: &mut [u8], off: &Offsets, old: &[u8], new: &[u8], pseudo: bool) {
    let at = l4(off);
    match l4_proto(off) {
        Some(ipproto::TCP) => {
            if let Some(mut h) = Hdr::<20>::at(f, at) {
                let c = ck::update_bytes(h.u16::<16>(), old, new);
                h.set_u16::<16>(c);
            }
        }
        Some(ipproto::UDP) => {
            if let Some(mut h) = Hdr::<8>::at(f, at) {
                let c = h.u16::<6>();
                // No checksum stays no checksum (IPv4, and IPv6 tunnels
                // under RFC 6935): a computed one from an update of zero
                // would be wrong.
                if c == 0 {
                    return;
                }
                let n = ck::update_bytes(c, old, new);
                h.set_u16::<6>(if n == 0 { 0xffff } else { n });
            }
        }
        Some(ipproto::ICMP) if pseudo => {}
        Some(ipproto::ICMP | ipproto::ICMPV6) => {
            if let Some(mut h) = Hdr::<4>::at(f, at) {
                let c = ck::update_bytes(h.u16::<2>(), old, new);
                h.set_u16::<2>(c);
            }
        }
        // SCTP's CRC is recomputed by whoever changes what it covers.
        _ => {}
    }
}

/// Executes `set_field` for `o` on `f`.
pub fn set_field(f: &mut [u8], off: &Offsets, o: &Oxm) -> Edit {
    let v = o.value;
    match o.field {
        F::EthDst | F::EthSrc => {
            // The MACs of a frame the parser found an EtherType in.
            let Some(mut h) = Hdr::<12>::at(f, off.eth_type.map(|_| 0)) else {
                return Edit::Skipped;
            };
            if o.field == F::EthDst {
                h.swap::<0, 6>(v);
            } else {
                h.swap::<6, 6>(v);
            }
            Edit::Done
        }
        F::EthType => match Hdr::<2>::at(f, off.eth_type.map(usize::from)) {
            Some(mut h) => {
                h.set_u16::<0>(v as u16);
                Edit::Layout
            }
            None => Edit::Skipped,
        },
        F::VlanVid | F::VlanPcp => match Hdr::<4>::at(f, off.vlan.map(usize::from)) {
            Some(mut h) => {
                if o.field == F::VlanVid {
                    h.masked16::<2>(0x0fff, v as u16);
                } else {
                    h.masked16::<2>(0xe000, (v as u16) << 13);
                }
                Edit::Done
            }
            None => Edit::Skipped,
        },
        F::IpDscp | F::IpEcn => {
            let (mask, bits) = if o.field == F::IpDscp {
                (0xfc, (v as u16) << 2)
            } else {
                (0x03, v as u16 & 3)
            };
            if is_v4(off) {
                let Some(mut h) = Hdr::<20>::at(f, l3(off)) else {
                    return Edit::Skipped;
                };
                let w = h.masked16::<0>(mask, bits);
                h.fold16::<10>(w);
                Edit::Done
            } else if is_v6(off) {
                // The traffic class is bits 4..11 of the first word.
                let Some(mut h) = Hdr::<40>::at(f, l3(off)) else {
                    return Edit::Skipped;
                };
                h.masked16::<0>(mask << 4, bits << 4);
                Edit::Done
            } else {
                Edit::Skipped
            }
        }
        F::IpProto => {
            let (old, new) = if is_v4(off) {
                let Some(mut h) = Hdr::<20>::at(f, l3(off)) else {
                    return Edit::Skipped;
                };
                let (old, new) = h.masked16::<8>(0x00ff, v as u16);
                h.fold16::<10>((old, new));
                (old as u8, new as u8)
            } else if is_v6(off) {
                // IPv6's protocol is the Next Header that names the
                // transport header: the fixed header's, or the last
                // extension header's.
                let at = l3(off).and_then(|l3| v6_next_header_at(f, l3, l4(off)));
                let Some(b) = at.and_then(|at| f.get_mut(at)) else {
                    return Edit::Skipped;
                };
                let old = std::mem::replace(b, v as u8);
                (old, v as u8)
            } else {
                return Edit::Skipped;
            };
            // The protocol is in the pseudo-header the transport checksum
            // covers (the header keeps its old layout: only the sum moves).
            fix_l4(f, off, &[0, old], &[0, new], true);
            // The transport header is now read as another protocol.
            Edit::Layout
        }
        F::Ipv4Src | F::Ipv4Dst => {
            if !is_v4(off) {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<20>::at(f, l3(off)) else {
                return Edit::Skipped;
            };
            let old = if o.field == F::Ipv4Src {
                h.swap::<12, 4>(v)
            } else {
                h.swap::<16, 4>(v)
            };
            let was = u32::from_be_bytes([old[0], old[1], old[2], old[3]]);
            let c = ck::update32(h.u16::<10>(), was, v as u32);
            h.set_u16::<10>(c);
            fix_l4(f, off, &old, &(v as u32).to_be_bytes(), true);
            Edit::Done
        }
        F::ArpOp | F::ArpSpa | F::ArpTpa | F::ArpSha | F::ArpTha => {
            if !is_arp(off) {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<28>::at(f, l3(off)) else {
                return Edit::Skipped;
            };
            match o.field {
                F::ArpOp => h.set_u16::<6>(v as u16),
                F::ArpSha => drop(h.swap::<8, 6>(v)),
                F::ArpSpa => drop(h.swap::<14, 4>(v)),
                F::ArpTha => drop(h.swap::<18, 6>(v)),
                _ => drop(h.swap::<24, 4>(v)),
            }
            Edit::Done
        }
        F::TcpSrc | F::TcpDst | F::UdpSrc | F::UdpDst => {
            let want = if matches!(o.field, F::TcpSrc | F::TcpDst) {
                ipproto::TCP
            } else {
                ipproto::UDP
            };
            if l4_proto(off) != Some(want) {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<4>::at(f, l4(off)) else {
                return Edit::Skipped;
            };
            let old = if matches!(o.field, F::TcpSrc | F::UdpSrc) {
                h.swap::<0, 2>(v)
            } else {
                h.swap::<2, 2>(v)
            };
            fix_l4(f, off, &old, &(v as u16).to_be_bytes(), false);
            Edit::Done
        }
        F::Icmpv4Type | F::Icmpv4Code | F::Icmpv6Type | F::Icmpv6Code => {
            let want = if matches!(o.field, F::Icmpv4Type | F::Icmpv4Code) {
                ipproto::ICMP
            } else {
                ipproto::ICMPV6
            };
            if l4_proto(off) != Some(want) {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<4>::at(f, l4(off)) else {
                return Edit::Skipped;
            };
            let (old, new) = if matches!(o.field, F::Icmpv4Type | F::Icmpv6Type) {
                h.masked16::<0>(0xff00, (v as u16) << 8)
            } else {
                h.masked16::<0>(0x00ff, v as u16)
            };
            fix_l4(f, off, &old.to_be_bytes(), &new.to_be_bytes(), false);
            Edit::Done
        }
        F::SctpSrc | F::SctpDst => {
            // A fragment's CRC covers bytes this packet does not have.
            if l4_proto(off) != Some(ipproto::SCTP) || off.l4_end == 0 {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<12>::at(f, l4(off)) else {
                return Edit::Skipped;
            };
            if o.field == F::SctpSrc {
                h.set_u16::<0>(v as u16);
            } else {
                h.set_u16::<2>(v as u16);
            }
            h.set_u32::<8>(0);
            // CRC32c cannot be updated incrementally: recompute over the
            // segment (up to the IP length: not Ethernet's padding).
            let at = l4(off).unwrap_or(0);
            let c = f.get(at..off.l4_end as usize).map(ck::sctp);
            if let (Some(c), Some(mut h)) = (c, Hdr::<12>::at(f, Some(at))) {
                h.set_u32::<8>(u32::from_be_bytes(c));
            }
            Edit::Done
        }
        F::Ipv6Src | F::Ipv6Dst => {
            if !is_v6(off) {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<40>::at(f, l3(off)) else {
                return Edit::Skipped;
            };
            let old = if o.field == F::Ipv6Src {
                h.swap::<8, 16>(v)
            } else {
                h.swap::<24, 16>(v)
            };
            fix_l4(f, off, &old, &v.to_be_bytes(), true);
            Edit::Done
        }
        F::Ipv6Flabel => {
            if !is_v6(off) {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<40>::at(f, l3(off)) else {
                return Edit::Skipped;
            };
            let w = (h.u32::<0>() & 0xfff0_0000) | (v as u32 & 0x000f_ffff);
            h.set_u32::<0>(w);
            Edit::Done
        }
        F::Ipv6NdTarget => {
            if !is_v6(off) || l4_proto(off) != Some(ipproto::ICMPV6) {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<24>::at(f, l4(off)) else {
                return Edit::Skipped;
            };
            // Only a neighbour solicitation or advertisement has a target
            // (its type as the packet has it now).
            if !matches!(h.u8::<0>(), 135 | 136) {
                return Edit::Skipped;
            }
            let old = h.swap::<8, 16>(v);
            fix_l4(f, off, &old, &v.to_be_bytes(), false);
            Edit::Done
        }
        F::Ipv6NdSll | F::Ipv6NdTll => {
            if !is_v6(off) || l4_proto(off) != Some(ipproto::ICMPV6) {
                return Edit::Skipped;
            }
            // SLL options belong to solicitations, TLL to advertisements.
            let (kind, ty) = if o.field == F::Ipv6NdSll {
                (1, 135)
            } else {
                (2, 136)
            };
            if Hdr::<24>::at(f, l4(off)).is_none_or(|h| h.u8::<0>() != ty) {
                return Edit::Skipped;
            }
            let at = l4(off).and_then(|l4| nd_option(f, l4, kind));
            let Some(mut h) = Hdr::<8>::at(f, at) else {
                return Edit::Skipped;
            };
            let old = h.swap::<2, 6>(v);
            fix_l4(f, off, &old, &v.to_be_bytes()[10..], false);
            Edit::Done
        }
        F::MplsLabel | F::MplsTc | F::MplsBos => {
            let Some(mut h) = mpls(f, off) else {
                return Edit::Skipped;
            };
            let (mask, bits) = match o.field {
                F::MplsLabel => (0xffff_f000, (v as u32) << 12),
                F::MplsTc => (0x0000_0e00, (v as u32) << 9),
                _ => (0x0000_0100, (v as u32) << 8),
            };
            let lse = h.u32::<0>();
            h.set_u32::<0>((lse & !mask) | (bits & mask));
            Edit::Done
        }
        F::PbbIsid => {
            if off.l3_type != ethertype::PBB {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<4>::at(f, off.l2_5.map(usize::from)) else {
                return Edit::Skipped;
            };
            let w = (h.u32::<0>() & 0xff00_0000) | (v as u32 & 0x00ff_ffff);
            h.set_u32::<0>(w);
            Edit::Done
        }
        F::PbbUca => {
            if off.l3_type != ethertype::PBB {
                return Edit::Skipped;
            }
            let Some(mut h) = Hdr::<4>::at(f, off.l2_5.map(usize::from)) else {
                return Edit::Skipped;
            };
            let w = (h.u32::<0>() & !(1 << 27)) | ((v as u32 & 1) << 27);
            h.set_u32::<0>(w);
            Edit::Done
        }
        // Not packet fields: the pipeline keeps them in the key.
        F::InPort
        | F::InPhyPort
        | F::Metadata
        | F::TunnelId
        | F::TunIpv4Src
        | F::TunIpv4Dst
        | F::TunIpv6Src
        | F::TunIpv6Dst
        | F::Ipv6Exthdr
        | F::NxmInPort
        // Written by the interpreter (it may push or pop a tag).
        | F::VlanTci
        | F::PktMark
        | F::ConjId
        | F::Reg(_)
        | F::XReg(_)
        | F::XXReg(_)
        | F::Unknown(_) => Edit::Done,
        // Read-only (as in Open vSwitch): validation refuses writes.
        F::IpFrag | F::TcpFlags => Edit::Done,
        // The ct fields are read-only outside `ct`'s exec(), which sets
        // ct_mark and ct_label on the connection (exec/ct.rs): validation
        // refuses any other write.
        F::CtState
        | F::CtZone
        | F::CtMark
        | F::CtLabel
        | F::CtNwSrc
        | F::CtNwDst
        | F::CtIpv6Src
        | F::CtIpv6Dst
        | F::CtNwProto
        | F::CtTpSrc
        | F::CtTpDst => Edit::Skipped,
        // set_field:N->nw_ttl is set_nw_ttl (N may be 0 here: a set never
        // expires the packet).
        F::NwTtl => match nw_ttl(f, off, Some(v as u8)) {
            Ttl::Skipped => Edit::Skipped,
            _ => Edit::Done,
        },
    }
}

/// The offset of the Next Header byte that names the transport in the
/// IPv6 packet at `l3`: byte 6 of the fixed header, or byte 0 of the last
/// extension header (fragment headers are 8 bytes, AH counts 4-byte words
/// less 2, the others 8-byte words less 1). With the transport header the
/// parser found at `l4`, None unless the chain ends exactly there; without
/// one (a protocol it does not parse, a later fragment), the chain is
/// walked while it names extension headers. The walk is bounded by the
/// frame: every step moves forward at least 8 bytes.
fn v6_next_header_at(f: &[u8], l3: usize, l4: Option<usize>) -> Option<usize> {
    let mut at = l3.checked_add(6)?;
    let mut next = *f.get(at)?;
    let mut p = l3.checked_add(40)?;
    let more = |p: usize, next: u8| match l4 {
        Some(l4) => p < l4,
        None => matches!(next, 0 | 43 | 44 | 51 | 60 | 135 | 139 | 140 | 253 | 254),
    };
    while more(p, next) {
        let len = match next {
            ipproto::FRAGMENT => 8,
            ipproto::AH => (usize::from(*f.get(p + 1)?) + 2) * 4,
            _ => (usize::from(*f.get(p + 1)?) + 1) * 8,
        };
        at = p;
        next = *f.get(p)?;
        p = p.checked_add(len)?;
    }
    match l4 {
        Some(l4) => (p == l4).then_some(at),
        None => (p <= f.len()).then_some(at),
    }
}

/// The offset of the 8-byte ND option of `kind` (1 = source, 2 = target
/// link-layer address) after the 24-byte ND message at `l4`.
fn nd_option(f: &[u8], l4: usize, kind: u8) -> Option<usize> {
    let mut p = l4.checked_add(24)?;
    loop {
        let t = *f.get(p)?;
        let len = *f.get(p + 1)? as usize * 8;
        if len == 0 {
            return None;
        }
        if t == kind && len == 8 {
            return Some(p);
        }
        p += len;
    }
}

/// The outermost MPLS label stack entry.
fn mpls<'a>(f: &'a mut [u8], off: &Offsets) -> Option<Hdr<'a, 4>> {
    match off.l3_type {
        ethertype::MPLS | ethertype::MPLS_MCAST => Hdr::<4>::at(f, off.l2_5.map(usize::from)),
        _ => None,
    }
}

/// Where a new outermost VLAN tag goes: after the MACs.
const AFTER_MACS: usize = 12;

/// push_vlan: a new outer tag with the given TPID; VID and PCP are copied
/// from the existing outer tag, or 0 (spec 5.12.1).
pub fn push_vlan<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets, tpid: u16) -> Edit {
    if off.eth_type.is_none() || f.len() < AFTER_MACS + 2 {
        return Edit::Skipped;
    }
    let tci = Hdr::<4>::at(f, off.vlan.map(usize::from)).map_or(0, |h| h.u16::<2>());
    let mut tag = [0u8; 4];
    tag[..2].copy_from_slice(&tpid.to_be_bytes());
    tag[2..].copy_from_slice(&tci.to_be_bytes());
    f.insert(AFTER_MACS, &tag);
    Edit::Layout
}

/// pop_vlan: removes the outer tag.
pub fn pop_vlan<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets) -> Edit {
    let at = off.vlan.map(usize::from);
    match (at, Hdr::<4>::at(f, at).is_some()) {
        (Some(at), true) => {
            f.remove(at, 4);
            pad_to_minimum(f);
            Edit::Layout
        }
        _ => Edit::Skipped,
    }
}

/// The IP TTL (hop limit) of the packet, if it is IP.
fn ip_ttl(f: &mut [u8], off: &Offsets) -> Option<u8> {
    if is_v4(off) {
        Hdr::<20>::at(f, l3(off)).map(|h| h.u8::<8>())
    } else if is_v6(off) {
        Hdr::<40>::at(f, l3(off)).map(|h| h.u8::<7>())
    } else {
        None
    }
}

/// push_mpls: a new outermost label stack entry after the Ethernet/VLAN
/// header; label and TC from an existing outer entry (else 0), TTL from it
/// or from the IP header (else 0), BoS set when it is the only entry.
pub fn push_mpls<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets, eth: u16) -> Edit {
    let et = off.eth_type.map(usize::from);
    let lse = match mpls(f, off) {
        Some(h) => h.u32::<0>() & !0x100,
        // Fields a new header cannot copy are zero (OpenFlow 1.3.5,
        // 5.12.1): a label pushed on a non-IP frame has TTL 0.
        None => 0x100 | ip_ttl(f, off).unwrap_or(0) as u32,
    };
    let (Some(et), Some(mut h)) = (et, Hdr::<2>::at(f, et)) else {
        return Edit::Skipped;
    };
    h.set_u16::<0>(eth);
    f.insert(et + 2, &lse.to_be_bytes());
    Edit::Layout
}

/// Ethernet's shortest frame without its FCS.
pub const MIN_FRAME: usize = 60;

/// A pop that leaves the frame shorter than Ethernet allows pads it with
/// zeros, as a NIC pads what it sends: on veth and TAP ports nothing else
/// would, and a receiver (the OpenFlow switch test tool among them) sees a
/// frame of the minimum size whatever headers were taken off. Bytes past
/// the IP length are padding to every parser.
fn pad_to_minimum<B: FrameBuf + ?Sized>(f: &mut B) {
    f.pad_to(MIN_FRAME);
}

/// pop_mpls: removes the outermost label stack entry; the EtherType becomes `eth`.
pub fn pop_mpls<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets, eth: u16) -> Edit {
    let (Some(at), Some(et)) = (off.l2_5.map(usize::from), off.eth_type.map(usize::from)) else {
        return Edit::Skipped;
    };
    if mpls(f, off).is_none() {
        return Edit::Skipped;
    }
    let Some(mut h) = Hdr::<2>::at(f, Some(et)) else {
        return Edit::Skipped;
    };
    h.set_u16::<0>(eth);
    f.remove(at, 4);
    pad_to_minimum(f);
    Edit::Layout
}

/// push_pbb: encapsulates the frame behind a backbone header whose MACs copy
/// the customer's and whose I-TAG carries I-SID 0 (set it with set_field).
pub fn push_pbb<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets, eth: u16) -> Edit {
    let Some(h) = Hdr::<12>::at(f, off.eth_type.map(|_| 0)) else {
        return Edit::Skipped;
    };
    let mut hdr = [0u8; 18];
    hdr[..12].copy_from_slice(&h.0[..]);
    hdr[12..14].copy_from_slice(&eth.to_be_bytes());
    f.insert(0, &hdr);
    Edit::Layout
}

/// pop_pbb: removes the backbone header; the customer frame (its MACs at
/// least) is what is left.
pub fn pop_pbb<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets) -> Edit {
    let at = off.l2_5.map(usize::from);
    match at {
        Some(at) if off.l3_type == ethertype::PBB && Hdr::<16>::at(f, Some(at)).is_some() => {
            f.remove(0, at + 4);
            pad_to_minimum(f);
            Edit::Layout
        }
        _ => Edit::Skipped,
    }
}

/// The outcome of a TTL action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    Ok,
    /// The TTL was or became zero: the packet must not go on.
    Expired,
    /// The packet has no such TTL: nothing changed.
    Skipped,
}

/// The TTL after a set (`Some`) or a decrement (`None`); None when expired.
fn next_ttl(old: u8, set: Option<u8>) -> Option<u8> {
    match set {
        Some(t) => Some(t),
        None if old <= 1 => None,
        None => Some(old - 1),
    }
}

/// set_nw_ttl / dec_nw_ttl (`set` = None decrements).
pub fn nw_ttl(f: &mut [u8], off: &Offsets, set: Option<u8>) -> Ttl {
    if is_v4(off) {
        let Some(mut h) = Hdr::<20>::at(f, l3(off)) else {
            return Ttl::Skipped;
        };
        let Some(new) = next_ttl(h.u8::<8>(), set) else {
            return Ttl::Expired;
        };
        let w = h.masked16::<8>(0xff00, (new as u16) << 8);
        h.fold16::<10>(w);
        Ttl::Ok
    } else if is_v6(off) {
        let Some(mut h) = Hdr::<40>::at(f, l3(off)) else {
            return Ttl::Skipped;
        };
        let Some(new) = next_ttl(h.u8::<7>(), set) else {
            return Ttl::Expired;
        };
        h.set_u8::<7>(new);
        Ttl::Ok
    } else {
        Ttl::Skipped
    }
}

/// set_mpls_ttl / dec_mpls_ttl on the outermost entry.
pub fn mpls_ttl(f: &mut [u8], off: &Offsets, set: Option<u8>) -> Ttl {
    let Some(mut h) = mpls(f, off) else {
        return Ttl::Skipped;
    };
    match next_ttl(h.u8::<3>(), set) {
        Some(t) => {
            h.set_u8::<3>(t);
            Ttl::Ok
        }
        None => Ttl::Expired,
    }
}

/// copy_ttl_out: from the next-to-outermost header (inner MPLS entry, or
/// IP) to the outermost MPLS entry. copy_ttl_in: the other way. Returns
/// false when the packet has no such pair of headers.
pub fn copy_ttl(f: &mut [u8], off: &Offsets, outward: bool) -> bool {
    let Some(outer) = mpls(f, off).map(|h| h.u32::<0>()) else {
        return false;
    };
    let Some(at) = off.l2_5.map(usize::from) else {
        return false;
    };
    let inner = at + 4;
    let bos = outer & 0x100 != 0;
    if !bos {
        // The next entry of the stack.
        let Some(mut h) = Hdr::<4>::at(f, Some(inner)) else {
            return false;
        };
        if outward {
            let t = h.u8::<3>();
            Hdr::<4>::at(f, Some(at))
                .map(|mut o| o.set_u8::<3>(t))
                .is_some()
        } else {
            h.set_u8::<3>(outer as u8);
            true
        }
    } else {
        // The IP header under the stack, recognised by its version.
        match f.get(inner).map(|b| b >> 4) {
            Some(4) => {
                let Some(mut h) = Hdr::<20>::at(f, Some(inner)) else {
                    return false;
                };
                if outward {
                    let t = h.u8::<8>();
                    Hdr::<4>::at(f, Some(at))
                        .map(|mut o| o.set_u8::<3>(t))
                        .is_some()
                } else {
                    let w = h.masked16::<8>(0xff00, (outer as u16 & 0xff) << 8);
                    h.fold16::<10>(w);
                    true
                }
            }
            Some(6) => {
                let Some(mut h) = Hdr::<40>::at(f, Some(inner)) else {
                    return false;
                };
                if outward {
                    let t = h.u8::<7>();
                    Hdr::<4>::at(f, Some(at))
                        .map(|mut o| o.set_u8::<3>(t))
                        .is_some()
                } else {
                    h.set_u8::<7>(outer as u8);
                    true
                }
            }
            _ => false,
        }
    }
}
