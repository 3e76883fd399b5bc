//! Editing packets in place: set_field on every settable field with
//! incremental checksum updates (RFC 1624), push/pop of VLAN, MPLS and PBB
//! headers, and the TTL actions.
//!
//! Every function takes the frame and its current [`Offsets`] (from
//! [`packet::extract`]) and leaves the frame valid.
//!
//! How out-of-bounds access is kept out: this module never indexes the
//! frame. It reaches a header only through a checked view of
//! [`packet::wire`] (`Ipv4`, `Tcp`, `Vlan`, ...: the header's fixed bytes,
//! taken at an offset the parser recorded, which does not exist when the
//! header is not wholly there), whose fields sit at constant offsets the
//! compiler checks against the header's size; the ranges the frame's
//! insert and remove take for push and pop are the ones a view was just
//! taken at. Transport checksums follow through the one fix-up,
//! [`packet::wire::transport::fix_checksum`]. Which header sits
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
use packet::parse::{ethertype, ipproto};
use packet::wire::arp::Arp;
use packet::wire::ethernet::{Addrs, EtherType, ADDRS_LEN};
use packet::wire::icmp::{self, Icmp, NdOption, NeighbourDiscovery};
use packet::wire::ipv4::Ipv4;
use packet::wire::ipv6::Ipv6;
use packet::wire::mpls::{self, Itag, Mpls};
use packet::wire::transport;
use packet::wire::udp::{Ports, Sctp};
use packet::wire::vlan::{self, Vlan};
use packet::{checksum as ck, FrameBuf, Offsets};

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

/// Folds a change of bytes the packet's transport checksum covers into it
/// ([`transport::fix_checksum`]; `pseudo`: the bytes are in the IP
/// pseudo-header).
fn fix_l4(f: &mut [u8], off: &Offsets, old: &[u8], new: &[u8], pseudo: bool) {
    if let (Some(at), Some(proto)) = (l4(off), l4_proto(off)) {
        transport::fix_checksum(f, at, proto, old, new, pseudo);
    }
}

/// The view at an offset the parser may have recorded.
fn at<'a, V>(
    f: &'a mut [u8],
    at: Option<usize>,
    view: fn(&'a mut [u8], usize) -> Option<V>,
) -> Option<V> {
    view(f, at?)
}

/// Executes `set_field` for `o` on `f`.
pub fn set_field(f: &mut [u8], off: &Offsets, o: &Oxm) -> Edit {
    let v = o.value;
    match o.field {
        F::EthDst | F::EthSrc => {
            // The MACs of a frame the parser found an EtherType in.
            let Some(mut h) = at(f, off.eth_type.map(|_| 0), Addrs::at_mut) else {
                return Edit::Skipped;
            };
            if o.field == F::EthDst {
                h.set_dst(v as u64);
            } else {
                h.set_src(v as u64);
            }
            Edit::Done
        }
        F::EthType => {
            match at(f, off.eth_type.map(usize::from), EtherType::at_mut) {
                Some(mut h) => {
                    h.set_value(v as u16);
                    Edit::Layout
                }
                None => Edit::Skipped,
            }
        }
        F::VlanVid | F::VlanPcp => match at(f, off.vlan.map(usize::from), Vlan::at_mut) {
            Some(mut h) => {
                if o.field == F::VlanVid {
                    h.set_tci_bits(0x0fff, v as u16);
                } else {
                    h.set_tci_bits(0xe000, (v as u16) << 13);
                }
                Edit::Done
            }
            None => Edit::Skipped,
        },
        F::IpDscp | F::IpEcn => {
            let (mask, bits) = if o.field == F::IpDscp {
                (0xfc, (v as u8) << 2)
            } else {
                (0x03, v as u8 & 3)
            };
            if is_v4(off) {
                let Some(mut h) = at(f, l3(off), Ipv4::at_mut) else {
                    return Edit::Skipped;
                };
                h.set_tos_fix(mask, bits);
                Edit::Done
            } else if is_v6(off) {
                let Some(mut h) = at(f, l3(off), Ipv6::at_mut) else {
                    return Edit::Skipped;
                };
                h.set_traffic_class_bits(mask, bits);
                Edit::Done
            } else {
                Edit::Skipped
            }
        }
        F::IpProto => {
            let (old, new) = if is_v4(off) {
                let Some(mut h) = at(f, l3(off), Ipv4::at_mut) else {
                    return Edit::Skipped;
                };
                (h.set_proto_fix(v as u8), v as u8)
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
            let Some(mut h) = at(f, l3(off), Ipv4::at_mut) else {
                return Edit::Skipped;
            };
            let was = if o.field == F::Ipv4Src {
                h.set_src_fix(v as u32)
            } else {
                h.set_dst_fix(v as u32)
            };
            fix_l4(f, off, &was.to_be_bytes(), &(v as u32).to_be_bytes(), true);
            Edit::Done
        }
        F::ArpOp | F::ArpSpa | F::ArpTpa | F::ArpSha | F::ArpTha => {
            if !is_arp(off) {
                return Edit::Skipped;
            }
            let Some(mut h) = at(f, l3(off), Arp::at_mut) else {
                return Edit::Skipped;
            };
            match o.field {
                F::ArpOp => h.set_op(v as u16),
                F::ArpSha => h.set_sha(v as u64),
                F::ArpSpa => h.set_spa(v as u32),
                F::ArpTha => h.set_tha(v as u64),
                _ => h.set_tpa(v as u32),
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
            let Some(mut h) = at(f, l4(off), Ports::at_mut) else {
                return Edit::Skipped;
            };
            let was = if matches!(o.field, F::TcpSrc | F::UdpSrc) {
                let was = h.src();
                h.set_src(v as u16);
                was
            } else {
                let was = h.dst();
                h.set_dst(v as u16);
                was
            };
            fix_l4(f, off, &was.to_be_bytes(), &(v as u16).to_be_bytes(), false);
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
            let Some(mut h) = at(f, l4(off), Icmp::at_mut) else {
                return Edit::Skipped;
            };
            let (old, new) = if matches!(o.field, F::Icmpv4Type | F::Icmpv6Type) {
                h.set_type_code_bits(0xff00, (v as u16) << 8)
            } else {
                h.set_type_code_bits(0x00ff, v as u16)
            };
            fix_l4(f, off, &old.to_be_bytes(), &new.to_be_bytes(), false);
            Edit::Done
        }
        F::SctpSrc | F::SctpDst => {
            // A fragment's CRC covers bytes this packet does not have.
            if l4_proto(off) != Some(ipproto::SCTP) || off.l4_end == 0 {
                return Edit::Skipped;
            }
            let Some(mut h) = at(f, l4(off), Sctp::at_mut) else {
                return Edit::Skipped;
            };
            if o.field == F::SctpSrc {
                h.set_src_port(v as u16);
            } else {
                h.set_dst_port(v as u16);
            }
            h.set_crc(0);
            // CRC32c cannot be updated incrementally: recompute over the
            // segment (up to the IP length: not Ethernet's padding).
            let at4 = l4(off).unwrap_or(0);
            let c = f.get(at4..off.l4_end as usize).map(ck::sctp);
            if let (Some(c), Some(mut h)) = (c, Sctp::at_mut(f, at4)) {
                h.set_crc(u32::from_be_bytes(c));
            }
            Edit::Done
        }
        F::Ipv6Src | F::Ipv6Dst => {
            if !is_v6(off) {
                return Edit::Skipped;
            }
            let Some(mut h) = at(f, l3(off), Ipv6::at_mut) else {
                return Edit::Skipped;
            };
            let was = if o.field == F::Ipv6Src {
                let was = h.src();
                h.set_src(v);
                was
            } else {
                let was = h.dst();
                h.set_dst(v);
                was
            };
            fix_l4(f, off, &was.to_be_bytes(), &v.to_be_bytes(), true);
            Edit::Done
        }
        F::Ipv6Flabel => {
            if !is_v6(off) {
                return Edit::Skipped;
            }
            let Some(mut h) = at(f, l3(off), Ipv6::at_mut) else {
                return Edit::Skipped;
            };
            h.set_flow_label(v as u32);
            Edit::Done
        }
        F::Ipv6NdTarget => {
            if !is_v6(off) || l4_proto(off) != Some(ipproto::ICMPV6) {
                return Edit::Skipped;
            }
            let Some(mut h) = at(f, l4(off), NeighbourDiscovery::at_mut) else {
                return Edit::Skipped;
            };
            // Only a neighbour solicitation or advertisement has a target
            // (its type as the packet has it now).
            if !matches!(h.ty(), icmp::ND_SOLICIT | icmp::ND_ADVERT) {
                return Edit::Skipped;
            }
            let was = h.target();
            h.set_target(v);
            fix_l4(f, off, &was.to_be_bytes(), &v.to_be_bytes(), false);
            Edit::Done
        }
        F::Ipv6NdSll | F::Ipv6NdTll => {
            if !is_v6(off) || l4_proto(off) != Some(ipproto::ICMPV6) {
                return Edit::Skipped;
            }
            // SLL options belong to solicitations, TLL to advertisements.
            let (kind, ty) = if o.field == F::Ipv6NdSll {
                (icmp::ND_OPT_SLL, icmp::ND_SOLICIT)
            } else {
                (icmp::ND_OPT_TLL, icmp::ND_ADVERT)
            };
            if at(f, l4(off), NeighbourDiscovery::at_mut).is_none_or(|h| h.ty() != ty) {
                return Edit::Skipped;
            }
            let opt = l4(off).and_then(|l4| nd_option(f, l4, kind));
            let Some(mut h) = at(f, opt, NdOption::at_mut) else {
                return Edit::Skipped;
            };
            let was = h.mac();
            h.set_mac(v as u64);
            fix_l4(f, off, &was.to_be_bytes()[2..], &(v as u64).to_be_bytes()[2..], false);
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
            h.set_lse_bits(mask, bits);
            Edit::Done
        }
        F::PbbIsid | F::PbbUca => {
            if off.l3_type != ethertype::PBB {
                return Edit::Skipped;
            }
            let Some(mut h) = at(f, off.l2_5.map(usize::from), Itag::at_mut) else {
                return Edit::Skipped;
            };
            if o.field == F::PbbIsid {
                h.set_bits(0x00ff_ffff, v as u32);
            } else {
                h.set_bits(1 << 27, (v as u32 & 1) << 27);
            }
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
        | F::TunMetadata(_)
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
fn mpls<'a>(f: &'a mut [u8], off: &Offsets) -> Option<Mpls<&'a mut [u8; 4]>> {
    match off.l3_type {
        ethertype::MPLS | ethertype::MPLS_MCAST => at(f, off.l2_5.map(usize::from), Mpls::at_mut),
        _ => None,
    }
}

/// push_vlan: a new outer tag with the given TPID; VID and PCP are copied
/// from the existing outer tag, or 0 (spec 5.12.1).
pub fn push_vlan<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets, tpid: u16) -> Edit {
    // The new tag goes after the MACs.
    if off.eth_type.is_none() || f.len() < ADDRS_LEN + 2 {
        return Edit::Skipped;
    }
    let tci = at(f, off.vlan.map(usize::from), Vlan::at_mut).map_or(0, |h| h.tci());
    let mut tag = [0u8; 4];
    let mut h = Vlan::at_mut(&mut tag, 0).expect("a tag's room");
    h.set_tpid(tpid);
    h.set_tci(tci);
    f.insert(ADDRS_LEN, &tag);
    Edit::Layout
}

/// pop_vlan: removes the outer tag.
pub fn pop_vlan<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets) -> Edit {
    let tag = off.vlan.map(usize::from);
    match (tag, at(f, tag, Vlan::at_mut).is_some()) {
        (Some(tag), true) => {
            f.remove(tag, vlan::LEN);
            pad_to_minimum(f);
            Edit::Layout
        }
        _ => Edit::Skipped,
    }
}

/// The IP TTL (hop limit) of the packet, if it is IP.
fn ip_ttl(f: &mut [u8], off: &Offsets) -> Option<u8> {
    if is_v4(off) {
        at(f, l3(off), Ipv4::at_mut).map(|h| h.ttl())
    } else if is_v6(off) {
        at(f, l3(off), Ipv6::at_mut).map(|h| h.hop_limit())
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
        Some(h) => h.lse() & !0x100,
        // Fields a new header cannot copy are zero (OpenFlow 1.3.5,
        // 5.12.1): a label pushed on a non-IP frame has TTL 0.
        None => 0x100 | ip_ttl(f, off).unwrap_or(0) as u32,
    };
    let (Some(et), Some(mut h)) = (et, at(f, et, EtherType::at_mut)) else {
        return Edit::Skipped;
    };
    h.set_value(eth);
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
    let (Some(lse), Some(et)) = (off.l2_5.map(usize::from), off.eth_type.map(usize::from)) else {
        return Edit::Skipped;
    };
    if mpls(f, off).is_none() {
        return Edit::Skipped;
    }
    let Some(mut h) = EtherType::at_mut(f, et) else {
        return Edit::Skipped;
    };
    h.set_value(eth);
    f.remove(lse, mpls::LEN);
    pad_to_minimum(f);
    Edit::Layout
}

/// push_pbb: encapsulates the frame behind a backbone header whose MACs copy
/// the customer's and whose I-TAG carries I-SID 0 (set it with set_field).
pub fn push_pbb<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets, eth: u16) -> Edit {
    let Some(h) = at(f, off.eth_type.map(|_| 0), Addrs::at_mut) else {
        return Edit::Skipped;
    };
    let mut hdr = [0u8; 18];
    hdr[..ADDRS_LEN].copy_from_slice(h.bytes());
    hdr[ADDRS_LEN..ADDRS_LEN + 2].copy_from_slice(&eth.to_be_bytes());
    f.insert(0, &hdr);
    Edit::Layout
}

/// pop_pbb: removes the backbone header; the customer frame (its MACs at
/// least) is what is left.
pub fn pop_pbb<B: FrameBuf + ?Sized>(f: &mut B, off: &Offsets) -> Edit {
    let itag = off.l2_5.map(usize::from);
    match itag {
        // The I-TAG and the customer MACs after it are there.
        Some(itag)
            if off.l3_type == ethertype::PBB
                && Itag::at_mut(f, itag).is_some()
                && Addrs::at_mut(f, itag + mpls::LEN).is_some() =>
        {
            f.remove(0, itag + mpls::LEN);
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
        let Some(mut h) = at(f, l3(off), Ipv4::at_mut) else {
            return Ttl::Skipped;
        };
        let Some(new) = next_ttl(h.ttl(), set) else {
            return Ttl::Expired;
        };
        h.set_ttl_fix(new);
        Ttl::Ok
    } else if is_v6(off) {
        let Some(mut h) = at(f, l3(off), Ipv6::at_mut) else {
            return Ttl::Skipped;
        };
        let Some(new) = next_ttl(h.hop_limit(), set) else {
            return Ttl::Expired;
        };
        h.set_hop_limit(new);
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
    match next_ttl(h.ttl(), set) {
        Some(t) => {
            h.set_ttl(t);
            Ttl::Ok
        }
        None => Ttl::Expired,
    }
}

/// copy_ttl_out: from the next-to-outermost header (inner MPLS entry, or
/// IP) to the outermost MPLS entry. copy_ttl_in: the other way. Returns
/// false when the packet has no such pair of headers.
pub fn copy_ttl(f: &mut [u8], off: &Offsets, outward: bool) -> bool {
    let Some(outer) = mpls(f, off).map(|h| h.lse()) else {
        return false;
    };
    let Some(lse) = off.l2_5.map(usize::from) else {
        return false;
    };
    let inner = lse + mpls::LEN;
    // Writes the outermost entry's TTL.
    let set_outer = |f: &mut [u8], t: u8| Mpls::at_mut(f, lse).map(|mut o| o.set_ttl(t)).is_some();
    if outer & 0x100 == 0 {
        // The next entry of the stack.
        let Some(mut h) = Mpls::at_mut(f, inner) else {
            return false;
        };
        if outward {
            let t = h.ttl();
            set_outer(f, t)
        } else {
            h.set_ttl(outer as u8);
            true
        }
    } else {
        // The IP header under the stack, recognised by its version.
        match f.get(inner).map(|b| b >> 4) {
            Some(4) => {
                let Some(mut h) = Ipv4::at_mut(f, inner) else {
                    return false;
                };
                if outward {
                    let t = h.ttl();
                    set_outer(f, t)
                } else {
                    h.set_ttl_fix(outer as u8);
                    true
                }
            }
            Some(6) => {
                let Some(mut h) = Ipv6::at_mut(f, inner) else {
                    return false;
                };
                if outward {
                    let t = h.hop_limit();
                    set_outer(f, t)
                } else {
                    h.set_hop_limit(outer as u8);
                    true
                }
            }
            _ => false,
        }
    }
}
