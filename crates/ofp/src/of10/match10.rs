//! OpenFlow 1.0's `ofp_match` (40 bytes, a wildcard bitmap) to and from
//! the internal OXM [`Match`].
//!
//! Contract, reading (Open vSwitch's `ofputil_match_from_ofp10_match`
//! then `ofputil_normalize_match`, lib/ofp-match.c):
//! * Wildcard bits above `OFPFW10_ALL` (bit 22 on) are ignored.
//! * `dl_vlan` = `OFP_VLAN_NONE` (0xffff), not wildcarded: "no tag"
//!   (`vlan_vid` = `OFPVID_NONE`), whatever `dl_vlan_pcp` says (Open
//!   vSwitch reads a PCP with no tag so too). Otherwise a matched VID is
//!   `vlan_vid` = VID | `OFPVID_PRESENT`, a matched PCP is `vlan_pcp`,
//!   and a PCP matched with the VID wildcarded adds
//!   `vlan_vid=0x1000/0x1000` (a tag is there).
//! * `nw_tos` is the DSCP (`ip_dscp` = tos >> 2; the ECN bits are not
//!   matched); `nw_src`/`nw_dst` carry their prefix length in the
//!   wildcards (32 or more: not matched).
//! * Layer 3 and 4 fields count only where the matched `dl_type` gives
//!   them a meaning, as the normalisation does: IPv4 gives `ip_dscp`,
//!   `ip_proto`, `ipv4_src`/`dst`, and with TCP, UDP, SCTP or ICMP matched
//!   the ports (`tcp_*`, `udp_*`, `sctp_*`, or `icmpv4_type`/`code` from
//!   `tp_src`/`tp_dst`); IPv6 gives `ip_dscp`, `ip_proto` and the ports
//!   (ICMPv6's type and code); ARP and RARP give `arp_op` (the low byte
//!   of `nw_proto`) and `arp_spa`/`arp_tpa`. Other fields are dropped
//!   (Open vSwitch logs "normalization changed ofp_match").
//! * The entries come in OXM field order: in_port, eth_dst, eth_src,
//!   eth_type, vlan_vid, vlan_pcp, ip_dscp, ip_proto/arp_op, addresses,
//!   ports.
//!
//! Writing (`ofputil_match_to_ofp10_match`): the fields 1.0 has are
//! written, any non-zero mask on them counting as "matched" (Open vSwitch
//! writes the masked value); an IPv4 address mask becomes the prefix its
//! lowest set bit gives. Every other field (metadata, tunnel, registers,
//! IPv6 addresses, MPLS, conntrack, ...) cannot be said in 1.0 and is left
//! out, so the 1.0 match is wider than the internal one: this is what a
//! 1.0 controller sees of such a flow in a flow stats reply or a
//! FLOW_REMOVED, as Open vSwitch shows it.

use bytes::BufMut;

use crate::error::Result;
use crate::oxm::{Match, Oxm, OxmField, OFPVID_NONE, OFPVID_PRESENT};
use crate::wire::Reader;

use super::port10::{port_from_10, port_to_10};

pub const OFPFW10_IN_PORT: u32 = 1 << 0;
pub const OFPFW10_DL_VLAN: u32 = 1 << 1;
pub const OFPFW10_DL_SRC: u32 = 1 << 2;
pub const OFPFW10_DL_DST: u32 = 1 << 3;
pub const OFPFW10_DL_TYPE: u32 = 1 << 4;
pub const OFPFW10_NW_PROTO: u32 = 1 << 5;
pub const OFPFW10_TP_SRC: u32 = 1 << 6;
pub const OFPFW10_TP_DST: u32 = 1 << 7;
pub const OFPFW10_NW_SRC_SHIFT: u32 = 8;
pub const OFPFW10_NW_DST_SHIFT: u32 = 14;
pub const OFPFW10_DL_VLAN_PCP: u32 = 1 << 20;
pub const OFPFW10_NW_TOS: u32 = 1 << 21;
/// Every wildcard bit.
pub const OFPFW10_ALL: u32 = (1 << 22) - 1;
/// `OFP_VLAN_NONE`.
pub const OFP10_VLAN_NONE: u16 = 0xffff;
/// Size of `ofp_match`.
pub const MATCH10_LEN: usize = 40;

/// `ofp_match` field by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Match10 {
    pub wildcards: u32,
    pub in_port: u16,
    pub dl_src: [u8; 6],
    pub dl_dst: [u8; 6],
    pub dl_vlan: u16,
    pub dl_vlan_pcp: u8,
    pub dl_type: u16,
    pub nw_tos: u8,
    pub nw_proto: u8,
    pub nw_src: u32,
    pub nw_dst: u32,
    pub tp_src: u16,
    pub tp_dst: u16,
}

impl Match10 {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.wildcards);
        out.put_u16(self.in_port);
        out.extend_from_slice(&self.dl_src);
        out.extend_from_slice(&self.dl_dst);
        out.put_u16(self.dl_vlan);
        out.put_u8(self.dl_vlan_pcp);
        out.put_u8(0);
        out.put_u16(self.dl_type);
        out.put_u8(self.nw_tos);
        out.put_u8(self.nw_proto);
        out.put_u16(0);
        out.put_u32(self.nw_src);
        out.put_u32(self.nw_dst);
        out.put_u16(self.tp_src);
        out.put_u16(self.tp_dst);
    }

    pub fn decode(r: &mut Reader<'_>) -> Result<Match10> {
        let wildcards = r.u32()?;
        let in_port = r.u16()?;
        let dl_src = r.array()?;
        let dl_dst = r.array()?;
        let dl_vlan = r.u16()?;
        let dl_vlan_pcp = r.u8()?;
        r.skip(1)?;
        let dl_type = r.u16()?;
        let nw_tos = r.u8()?;
        let nw_proto = r.u8()?;
        r.skip(2)?;
        Ok(Match10 {
            wildcards,
            in_port,
            dl_src,
            dl_dst,
            dl_vlan,
            dl_vlan_pcp,
            dl_type,
            nw_tos,
            nw_proto,
            nw_src: r.u32()?,
            nw_dst: r.u32()?,
            tp_src: r.u16()?,
            tp_dst: r.u16()?,
        })
    }
}

/// The IPv4 mask of wildcard bits `n` (the number of low bits ignored).
fn wcbits_to_mask(n: u32) -> u32 {
    if n >= 32 {
        0
    } else {
        u32::MAX << n
    }
}

/// The wildcard bits of an IPv4 mask: 32 minus the prefix its lowest set
/// bit gives (Open vSwitch's `ofputil_netmask_to_wcbits`).
fn mask_to_wcbits(m: u32) -> u32 {
    if m == 0 {
        32
    } else {
        m.trailing_zeros()
    }
}

fn mac(a: [u8; 6]) -> u128 {
    a.iter().fold(0u128, |v, b| v << 8 | u128::from(*b))
}

fn mac_bytes(v: u128) -> [u8; 6] {
    let b = (v as u64).to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// The internal match a 1.0 match means (module doc).
pub fn from_10(m: &Match10) -> Match {
    let w = m.wildcards & OFPFW10_ALL;
    let on = |bit: u32| w & bit == 0;
    let mut out = Match::new();
    if on(OFPFW10_IN_PORT) {
        out = out.with(Oxm::exact(OxmField::InPort, port_from_10(m.in_port).into()));
    }
    if on(OFPFW10_DL_DST) {
        out = out.with(Oxm::exact(OxmField::EthDst, mac(m.dl_dst)));
    }
    if on(OFPFW10_DL_SRC) {
        out = out.with(Oxm::exact(OxmField::EthSrc, mac(m.dl_src)));
    }
    let dl_type = on(OFPFW10_DL_TYPE).then_some(m.dl_type);
    if let Some(t) = dl_type {
        out = out.with(Oxm::exact(OxmField::EthType, t.into()));
    }
    if on(OFPFW10_DL_VLAN) && m.dl_vlan == OFP10_VLAN_NONE {
        out = out.with(Oxm::exact(OxmField::VlanVid, OFPVID_NONE.into()));
    } else {
        let present = u128::from(OFPVID_PRESENT);
        if on(OFPFW10_DL_VLAN) {
            let vid = u128::from(m.dl_vlan & 0xfff) | present;
            out = out.with(Oxm::exact(OxmField::VlanVid, vid));
        } else if on(OFPFW10_DL_VLAN_PCP) {
            out = out.with(Oxm::masked(OxmField::VlanVid, present, present));
        }
        if on(OFPFW10_DL_VLAN_PCP) {
            out = out.with(Oxm::exact(OxmField::VlanPcp, (m.dl_vlan_pcp & 7).into()));
        }
    }
    let proto = on(OFPFW10_NW_PROTO).then_some(m.nw_proto);
    let addr = |out: Match, f: OxmField, v: u32, shift: u32| {
        let mask = wcbits_to_mask((w >> shift) & 0x3f);
        match mask {
            0 => out,
            u32::MAX => out.with(Oxm::exact(f, v.into())),
            _ => out.with(Oxm::masked(f, (v & mask).into(), mask.into())),
        }
    };
    let ports = |out: Match, f: [OxmField; 2], mask8: bool| {
        let v = |x: u16| u128::from(if mask8 { x & 0xff } else { x });
        let mut out = out;
        if on(OFPFW10_TP_SRC) {
            out = out.with(Oxm::exact(f[0], v(m.tp_src)));
        }
        if on(OFPFW10_TP_DST) {
            out = out.with(Oxm::exact(f[1], v(m.tp_dst)));
        }
        out
    };
    use OxmField as F;
    match dl_type {
        Some(0x0800) | Some(0x86dd) => {
            let v4 = dl_type == Some(0x0800);
            if on(OFPFW10_NW_TOS) {
                out = out.with(Oxm::exact(F::IpDscp, (m.nw_tos >> 2).into()));
            }
            if let Some(p) = proto {
                out = out.with(Oxm::exact(F::IpProto, p.into()));
            }
            if v4 {
                out = addr(out, F::Ipv4Src, m.nw_src, OFPFW10_NW_SRC_SHIFT);
                out = addr(out, F::Ipv4Dst, m.nw_dst, OFPFW10_NW_DST_SHIFT);
            }
            out = match (proto, v4) {
                (Some(6), _) => ports(out, [F::TcpSrc, F::TcpDst], false),
                (Some(17), _) => ports(out, [F::UdpSrc, F::UdpDst], false),
                (Some(132), _) => ports(out, [F::SctpSrc, F::SctpDst], false),
                (Some(1), true) => ports(out, [F::Icmpv4Type, F::Icmpv4Code], true),
                (Some(58), false) => ports(out, [F::Icmpv6Type, F::Icmpv6Code], true),
                _ => out,
            };
        }
        Some(0x0806) | Some(0x8035) => {
            if let Some(p) = proto {
                out = out.with(Oxm::exact(F::ArpOp, p.into()));
            }
            out = addr(out, F::ArpSpa, m.nw_src, OFPFW10_NW_SRC_SHIFT);
            out = addr(out, F::ArpTpa, m.nw_dst, OFPFW10_NW_DST_SHIFT);
        }
        _ => {}
    }
    out
}

/// The 1.0 match of an internal one (module doc: what 1.0 has no field
/// for is left out).
pub fn to_10(m: &Match) -> Match10 {
    let mut w = OFPFW10_IN_PORT
        | OFPFW10_DL_SRC
        | OFPFW10_DL_DST
        | OFPFW10_DL_TYPE
        | OFPFW10_NW_PROTO
        | OFPFW10_TP_SRC
        | OFPFW10_TP_DST
        | OFPFW10_NW_TOS;
    let mut o = Match10::default();
    let (mut nw_src_mask, mut nw_dst_mask) = (0u32, 0u32);
    let (mut tci, mut tci_mask) = (0u16, 0u16);
    for x in m.basic() {
        let mask = x.effective_mask();
        let v = x.value & mask;
        if mask == 0 {
            continue;
        }
        use OxmField as F;
        match x.field {
            F::InPort => {
                w &= !OFPFW10_IN_PORT;
                o.in_port = port_to_10(v as u32);
            }
            F::EthDst => {
                w &= !OFPFW10_DL_DST;
                o.dl_dst = mac_bytes(v);
            }
            F::EthSrc => {
                w &= !OFPFW10_DL_SRC;
                o.dl_src = mac_bytes(v);
            }
            F::EthType => {
                w &= !OFPFW10_DL_TYPE;
                o.dl_type = v as u16;
            }
            F::VlanVid => {
                // OXM's VID | PRESENT is the TCI's VID | CFI.
                tci |= (v as u16 & 0xfff) | if v as u16 & 0x1000 != 0 { 0x1000 } else { 0 };
                tci_mask |= (mask as u16 & 0xfff) | (mask as u16 & 0x1000);
            }
            F::VlanPcp => {
                tci |= ((v as u16) & 7) << 13 | 0x1000;
                tci_mask |= ((mask as u16) & 7) << 13 | 0x1000;
            }
            F::IpDscp => {
                w &= !OFPFW10_NW_TOS;
                o.nw_tos = (v as u8) << 2;
            }
            F::IpProto | F::ArpOp => {
                w &= !OFPFW10_NW_PROTO;
                o.nw_proto = v as u8;
            }
            F::Ipv4Src | F::ArpSpa => {
                nw_src_mask = mask as u32;
                o.nw_src = v as u32;
            }
            F::Ipv4Dst | F::ArpTpa => {
                nw_dst_mask = mask as u32;
                o.nw_dst = v as u32;
            }
            F::TcpSrc | F::UdpSrc | F::SctpSrc | F::Icmpv4Type | F::Icmpv6Type => {
                w &= !OFPFW10_TP_SRC;
                o.tp_src = v as u16;
            }
            F::TcpDst | F::UdpDst | F::SctpDst | F::Icmpv4Code | F::Icmpv6Code => {
                w &= !OFPFW10_TP_DST;
                o.tp_dst = v as u16;
            }
            _ => {}
        }
    }
    // The CFI bit says "present"; the VID bits of OXM's VID.
    let cfi = 0x1000u16;
    if tci_mask == 0 {
        w |= OFPFW10_DL_VLAN | OFPFW10_DL_VLAN_PCP;
    } else if tci_mask & cfi != 0 && tci & cfi == 0 {
        o.dl_vlan = OFP10_VLAN_NONE;
    } else {
        if tci_mask & 0xfff == 0 {
            w |= OFPFW10_DL_VLAN;
        } else {
            o.dl_vlan = tci & 0xfff;
        }
        if tci_mask & 0xe000 == 0 {
            w |= OFPFW10_DL_VLAN_PCP;
        } else {
            o.dl_vlan_pcp = (tci >> 13) as u8;
        }
    }
    let src_bits = mask_to_wcbits(nw_src_mask);
    let dst_bits = mask_to_wcbits(nw_dst_mask);
    o.nw_src &= wcbits_to_mask(src_bits);
    o.nw_dst &= wcbits_to_mask(dst_bits);
    w |= src_bits << OFPFW10_NW_SRC_SHIFT | dst_bits << OFPFW10_NW_DST_SHIFT;
    o.wildcards = w;
    o
}

/// Whether every field of the match is matched exactly (no wildcard bit):
/// OpenFlow 1.0 gives such a flow the highest priority.
pub fn is_exact(m: &Match10) -> bool {
    m.wildcards & OFPFW10_ALL == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn read(b: &[u8]) -> Match10 {
        let b = Bytes::copy_from_slice(b);
        let mut r = Reader::new(&b, crate::ErrorCode::BAD_LEN);
        Match10::decode(&mut r).unwrap()
    }

    /// The `ofp_match` of `tcp,in_port=1,nw_src=10.0.0.0/8,tp_dst=80` as
    /// the 1.0.0 spec lays it out (§5.2.3) and `ovs-ofctl ofp-print` reads
    /// it: wildcards 0x0038184e (dl_vlan, dl_src, dl_dst, tp_src, pcp and
    /// tos wild; nw_src 24 bits wild, nw_dst 32).
    #[test]
    fn golden_tcp_match() {
        let golden: [u8; 40] = [
            0x00, 0x38, 0x18, 0x4e, // wildcards
            0x00, 0x01, // in_port
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // dl_src, dl_dst
            0, 0, 0, 0, // dl_vlan, pcp, pad
            0x08, 0x00, // dl_type
            0, 6, 0, 0, // tos, proto, pad
            10, 0, 0, 0, // nw_src
            0, 0, 0, 0, // nw_dst
            0, 0, 0, 80, // tp_src, tp_dst
        ];
        let m10 = read(&golden);
        let m = from_10(&m10);
        let want = Match::new()
            .with(Oxm::exact(OxmField::InPort, 1))
            .with(Oxm::exact(OxmField::EthType, 0x0800))
            .with(Oxm::exact(OxmField::IpProto, 6))
            .with(Oxm::masked(OxmField::Ipv4Src, 0x0a00_0000, 0xff00_0000))
            .with(Oxm::exact(OxmField::TcpDst, 80));
        assert_eq!(m, want);
        let mut out = Vec::new();
        to_10(&m).encode(&mut out);
        assert_eq!(out, golden);
    }

    #[test]
    fn vlan_none_and_pcp_only() {
        let mut m = Match10 {
            wildcards: OFPFW10_ALL & !OFPFW10_DL_VLAN,
            dl_vlan: OFP10_VLAN_NONE,
            ..Default::default()
        };
        assert_eq!(
            from_10(&m),
            Match::new().with(Oxm::exact(OxmField::VlanVid, 0))
        );
        m.wildcards = OFPFW10_ALL & !OFPFW10_DL_VLAN_PCP;
        m.dl_vlan_pcp = 5;
        let got = from_10(&m);
        assert_eq!(
            got,
            Match::new()
                .with(Oxm::masked(OxmField::VlanVid, 0x1000, 0x1000))
                .with(Oxm::exact(OxmField::VlanPcp, 5))
        );
        let back = to_10(&got);
        assert_eq!(back.wildcards & OFPFW10_DL_VLAN, OFPFW10_DL_VLAN);
        assert_eq!(back.wildcards & OFPFW10_DL_VLAN_PCP, 0);
        assert_eq!(back.dl_vlan_pcp, 5);
    }

    #[test]
    fn fields_without_their_dl_type_are_dropped() {
        // nw_src and tp_dst matched but dl_type wildcarded: normalised away.
        let m = Match10 {
            wildcards: OFPFW10_ALL & !(OFPFW10_TP_DST | (0x3f << OFPFW10_NW_SRC_SHIFT)),
            nw_src: 0x0a00_0001,
            tp_dst: 80,
            ..Default::default()
        };
        assert_eq!(from_10(&m), Match::new());
        // ARP: nw_proto is the opcode, nw_src the sender address.
        let m = Match10 {
            wildcards: OFPFW10_ALL
                & !(OFPFW10_DL_TYPE | OFPFW10_NW_PROTO | (0x3f << OFPFW10_NW_SRC_SHIFT)),
            dl_type: 0x0806,
            nw_proto: 2,
            nw_src: 0x0a00_0001,
            ..Default::default()
        };
        assert_eq!(
            from_10(&m),
            Match::new()
                .with(Oxm::exact(OxmField::EthType, 0x0806))
                .with(Oxm::exact(OxmField::ArpOp, 2))
                .with(Oxm::exact(OxmField::ArpSpa, 0x0a00_0001))
        );
    }

    #[test]
    fn fields_1_0_lacks_are_left_out() {
        let m = Match::new()
            .with(Oxm::exact(OxmField::Metadata, 7))
            .with(Oxm::exact(OxmField::InPort, 2));
        let o = to_10(&m);
        assert_eq!(o.wildcards, 0x0038_20fe);
        assert_eq!(o.in_port, 2);
    }
}
