//! OXM match fields (spec 7.2.3): the 40 basic fields of OpenFlow 1.3 as a
//! table, [`Oxm`] (one basic field with optional mask), passthrough of other
//! OXM classes (experimenter), and [`Match`] (`ofp_match`, type OXM).
//!
//! Values are held as `u128` big-endian numbers in the field's width: one
//! uniform, `Copy` representation for a 1-bit `mpls_bos` and a 128-bit IPv6
//! address alike, so coding, validation and printing are table driven.
//!
//! Decoding checks only structure (header lengths). [`Match::validate`] checks
//! meaning: masks on unmaskable fields, values out of range, value bits
//! outside the mask, duplicates and prerequisites, each with the code the
//! spec names.

use bytes::{BufMut, Bytes};

use crate::error::{BadMatchCode, ErrorCode, OfpError, Result};
use crate::macros::wire_enum;
use crate::wire::{len_placeholder, pad_to_8, patch_len, Reader};

/// `OFPXMC_OPENFLOW_BASIC`.
pub const OXM_CLASS_BASIC: u16 = 0x8000;
/// `OFPXMC_EXPERIMENTER`.
pub const OXM_CLASS_EXPERIMENTER: u16 = 0xffff;
/// `OFPVID_PRESENT`: the VLAN_VID bit meaning "a VLAN tag is present".
pub const OFPVID_PRESENT: u16 = 0x1000;
/// `OFPVID_NONE`: VLAN_VID value meaning "no VLAN tag".
pub const OFPVID_NONE: u16 = 0x0000;

wire_enum! {
    /// `oxm_ofb_match_fields`; names are the spec's, lower case.
    pub enum OxmField: u8 {
        InPort = 0 => "in_port",
        InPhyPort = 1 => "in_phy_port",
        Metadata = 2 => "metadata",
        EthDst = 3 => "eth_dst",
        EthSrc = 4 => "eth_src",
        EthType = 5 => "eth_type",
        VlanVid = 6 => "vlan_vid",
        VlanPcp = 7 => "vlan_pcp",
        IpDscp = 8 => "ip_dscp",
        IpEcn = 9 => "ip_ecn",
        IpProto = 10 => "ip_proto",
        Ipv4Src = 11 => "ipv4_src",
        Ipv4Dst = 12 => "ipv4_dst",
        TcpSrc = 13 => "tcp_src",
        TcpDst = 14 => "tcp_dst",
        UdpSrc = 15 => "udp_src",
        UdpDst = 16 => "udp_dst",
        SctpSrc = 17 => "sctp_src",
        SctpDst = 18 => "sctp_dst",
        Icmpv4Type = 19 => "icmpv4_type",
        Icmpv4Code = 20 => "icmpv4_code",
        ArpOp = 21 => "arp_op",
        ArpSpa = 22 => "arp_spa",
        ArpTpa = 23 => "arp_tpa",
        ArpSha = 24 => "arp_sha",
        ArpTha = 25 => "arp_tha",
        Ipv6Src = 26 => "ipv6_src",
        Ipv6Dst = 27 => "ipv6_dst",
        Ipv6Flabel = 28 => "ipv6_flabel",
        Icmpv6Type = 29 => "icmpv6_type",
        Icmpv6Code = 30 => "icmpv6_code",
        Ipv6NdTarget = 31 => "ipv6_nd_target",
        Ipv6NdSll = 32 => "ipv6_nd_sll",
        Ipv6NdTll = 33 => "ipv6_nd_tll",
        MplsLabel = 34 => "mpls_label",
        MplsTc = 35 => "mpls_tc",
        MplsBos = 36 => "mpls_bos",
        PbbIsid = 37 => "pbb_isid",
        TunnelId = 38 => "tunnel_id",
        Ipv6Exthdr = 39 => "ipv6_exthdr",
    }
}

/// How a field's value is written in text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// Decimal integer.
    Dec,
    /// Hexadecimal integer with `0x`.
    Hex,
    /// `aa:bb:cc:dd:ee:ff`.
    Mac,
    /// Dotted quad.
    Ipv4,
    /// RFC 5952 text.
    Ipv6,
}

/// Static facts about a basic field (spec table 11 and 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldInfo {
    /// Width on the wire, bytes.
    pub width: u8,
    /// Significant bits (values with higher bits set are `OFPBMC_BAD_VALUE`).
    pub bits: u8,
    /// Whether a mask is allowed.
    pub maskable: bool,
    /// Whether `set_field` may write it.
    pub settable: bool,
    /// Text form of values.
    pub kind: ValueKind,
}

const fn fi(width: u8, bits: u8, maskable: bool, settable: bool, kind: ValueKind) -> FieldInfo {
    FieldInfo {
        width,
        bits,
        maskable,
        settable,
        kind,
    }
}

impl OxmField {
    /// Facts about this field; `None` for unknown field numbers.
    pub const fn info(self) -> Option<FieldInfo> {
        use ValueKind::*;
        Some(match self {
            OxmField::InPort => fi(4, 32, false, false, Dec),
            OxmField::InPhyPort => fi(4, 32, false, false, Dec),
            OxmField::Metadata => fi(8, 64, true, false, Hex),
            OxmField::EthDst | OxmField::EthSrc => fi(6, 48, true, true, Mac),
            OxmField::EthType => fi(2, 16, false, true, Hex),
            OxmField::VlanVid => fi(2, 13, true, true, Dec),
            OxmField::VlanPcp => fi(1, 3, false, true, Dec),
            OxmField::IpDscp => fi(1, 6, false, true, Dec),
            OxmField::IpEcn => fi(1, 2, false, true, Dec),
            OxmField::IpProto => fi(1, 8, false, true, Dec),
            OxmField::Ipv4Src | OxmField::Ipv4Dst => fi(4, 32, true, true, Ipv4),
            OxmField::TcpSrc
            | OxmField::TcpDst
            | OxmField::UdpSrc
            | OxmField::UdpDst
            | OxmField::SctpSrc
            | OxmField::SctpDst => fi(2, 16, false, true, Dec),
            OxmField::Icmpv4Type | OxmField::Icmpv4Code => fi(1, 8, false, true, Dec),
            OxmField::ArpOp => fi(2, 16, false, true, Dec),
            OxmField::ArpSpa | OxmField::ArpTpa => fi(4, 32, true, true, Ipv4),
            OxmField::ArpSha | OxmField::ArpTha => fi(6, 48, true, true, Mac),
            OxmField::Ipv6Src | OxmField::Ipv6Dst => fi(16, 128, true, true, Ipv6),
            OxmField::Ipv6Flabel => fi(4, 20, true, true, Hex),
            OxmField::Icmpv6Type | OxmField::Icmpv6Code => fi(1, 8, false, true, Dec),
            OxmField::Ipv6NdTarget => fi(16, 128, false, true, Ipv6),
            OxmField::Ipv6NdSll | OxmField::Ipv6NdTll => fi(6, 48, false, true, Mac),
            OxmField::MplsLabel => fi(4, 20, false, true, Dec),
            OxmField::MplsTc => fi(1, 3, false, true, Dec),
            OxmField::MplsBos => fi(1, 1, false, true, Dec),
            OxmField::PbbIsid => fi(3, 24, true, true, Dec),
            OxmField::TunnelId => fi(8, 64, true, true, Hex),
            OxmField::Ipv6Exthdr => fi(2, 9, true, false, Hex),
            OxmField::Unknown(_) => return None,
        })
    }

    /// The field's value mask (all significant bits set).
    pub fn full_mask(self) -> u128 {
        match self.info() {
            Some(i) if i.bits == 128 => u128::MAX,
            Some(i) => (1u128 << i.bits) - 1,
            None => 0,
        }
    }

    /// All-ones in the field's wire width (what an "exact" mask looks like).
    pub fn width_mask(self) -> u128 {
        match self.info() {
            Some(i) if i.width == 16 => u128::MAX,
            Some(i) => (1u128 << (8 * i.width as u32)) - 1,
            None => 0,
        }
    }

    /// The spec's prerequisites: each listed field must be present, exactly
    /// matched, with one of the listed values (spec table 12).
    pub fn prerequisites(self) -> &'static [(OxmField, &'static [u128])] {
        const IP: &[u128] = &[0x0800, 0x86dd];
        const V4: &[u128] = &[0x0800];
        const V6: &[u128] = &[0x86dd];
        const ARP: &[u128] = &[0x0806];
        const MPLS: &[u128] = &[0x8847, 0x8848];
        use OxmField as F;
        match self {
            F::IpDscp | F::IpEcn | F::IpProto => &[(F::EthType, IP)],
            F::Ipv4Src | F::Ipv4Dst => &[(F::EthType, V4)],
            F::TcpSrc | F::TcpDst => &[(F::IpProto, &[6])],
            F::UdpSrc | F::UdpDst => &[(F::IpProto, &[17])],
            F::SctpSrc | F::SctpDst => &[(F::IpProto, &[132])],
            F::Icmpv4Type | F::Icmpv4Code => &[(F::IpProto, &[1])],
            F::ArpOp | F::ArpSpa | F::ArpTpa | F::ArpSha | F::ArpTha => &[(F::EthType, ARP)],
            F::Ipv6Src | F::Ipv6Dst | F::Ipv6Flabel | F::Ipv6Exthdr => &[(F::EthType, V6)],
            F::Icmpv6Type | F::Icmpv6Code => &[(F::IpProto, &[58])],
            F::Ipv6NdTarget => &[(F::Icmpv6Type, &[135, 136])],
            F::Ipv6NdSll => &[(F::Icmpv6Type, &[135])],
            F::Ipv6NdTll => &[(F::Icmpv6Type, &[136])],
            F::MplsLabel | F::MplsTc | F::MplsBos => &[(F::EthType, MPLS)],
            F::PbbIsid => &[(F::EthType, &[0x88e7])],
            _ => &[],
        }
    }

    /// The 32-bit OXM header for this field (`hasmask` selects the length).
    pub fn header(self, has_mask: bool) -> u32 {
        let w = self.info().map_or(0, |i| i.width as u32);
        let len = if has_mask { 2 * w } else { w };
        ((OXM_CLASS_BASIC as u32) << 16)
            | ((self.value() as u32) << 9)
            | ((has_mask as u32) << 8)
            | len
    }
}

/// One basic-class match field, with an optional mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Oxm {
    pub field: OxmField,
    /// Big-endian value in the field's width.
    pub value: u128,
    /// `None` for an exact match.
    pub mask: Option<u128>,
}

impl Oxm {
    /// An exact match.
    pub fn exact(field: OxmField, value: u128) -> Self {
        Oxm {
            field,
            value,
            mask: None,
        }
    }

    /// A masked match; a mask of all ones (in the wire width) is kept as given.
    pub fn masked(field: OxmField, value: u128, mask: u128) -> Self {
        Oxm {
            field,
            value,
            mask: Some(mask),
        }
    }

    /// The mask in effect (all ones in the wire width when exact).
    pub fn effective_mask(&self) -> u128 {
        self.mask.unwrap_or_else(|| self.field.width_mask())
    }

    /// Bytes this OXM takes on the wire.
    pub fn wire_len(&self) -> usize {
        let w = self.field.info().map_or(0, |i| i.width as usize);
        4 + if self.mask.is_some() { 2 * w } else { w }
    }

    /// Appends the OXM TLV.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let w = self.field.info().map_or(0, |i| i.width as usize);
        out.put_u32(self.field.header(self.mask.is_some()));
        put_be(out, self.value, w);
        if let Some(m) = self.mask {
            put_be(out, m, w);
        }
    }

    /// Checks one field on its own: mask allowed, value in range, value bits
    /// inside the mask.
    pub fn validate(&self) -> Result<()> {
        let info = self.field.info().ok_or(OfpError::new(
            ErrorCode::BadMatch(BadMatchCode::BadField),
            "unknown OXM field",
        ))?;
        let full = self.field.full_mask();
        if self.value & !full != 0 {
            return Err(OfpError::new(
                ErrorCode::BadMatch(BadMatchCode::BadValue),
                "value out of range for field",
            ));
        }
        if let Some(m) = self.mask {
            if !info.maskable {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadMask),
                    "field cannot be masked",
                ));
            }
            if m & !full != 0 {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadMask),
                    "mask out of range for field",
                ));
            }
            if self.value & !m != 0 {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadWildcards),
                    "value has bits set outside its mask",
                ));
            }
        }
        Ok(())
    }
}

fn put_be(out: &mut Vec<u8>, v: u128, width: usize) {
    out.extend_from_slice(&v.to_be_bytes()[16 - width..]);
}

#[inline]
fn get_be(b: &[u8]) -> u128 {
    let mut a = [0u8; 16];
    let n = b.len().min(16);
    a[16 - n..].copy_from_slice(&b[..n]);
    u128::from_be_bytes(a)
}

/// An OXM of a class other than OpenFlow basic, kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OtherOxm {
    pub class: u16,
    pub field: u8,
    pub has_mask: bool,
    /// The payload (for the experimenter class it starts with the experimenter id).
    pub body: Bytes,
}

impl OtherOxm {
    /// The experimenter id, for the experimenter class.
    pub fn experimenter(&self) -> Option<u32> {
        (self.class == OXM_CLASS_EXPERIMENTER && self.body.len() >= 4)
            .then(|| u32::from_be_bytes([self.body[0], self.body[1], self.body[2], self.body[3]]))
    }
}

/// One entry of a match or a set_field action.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MatchEntry {
    Basic(Oxm),
    Other(OtherOxm),
}

impl MatchEntry {
    /// Bytes on the wire.
    pub fn wire_len(&self) -> usize {
        match self {
            MatchEntry::Basic(o) => o.wire_len(),
            MatchEntry::Other(o) => 4 + o.body.len(),
        }
    }

    /// Appends the TLV.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            MatchEntry::Basic(o) => o.encode(out),
            MatchEntry::Other(o) => {
                out.put_u16(o.class);
                out.put_u8((o.field << 1) | o.has_mask as u8);
                out.put_u8(o.body.len() as u8);
                out.extend_from_slice(&o.body);
            }
        }
    }

    /// Decodes one TLV; `bad_len` is the error for inconsistent lengths.
    #[inline]
    pub fn decode(r: &mut Reader<'_>, bad_len: ErrorCode) -> Result<MatchEntry> {
        let hdr = r.u32()?;
        let (class, field, has_mask, len) = (
            (hdr >> 16) as u16,
            ((hdr >> 9) & 0x7f) as u8,
            hdr & 0x100 != 0,
            (hdr & 0xff) as usize,
        );
        let body = r
            .slice(len)
            .map_err(|_| OfpError::new(bad_len, "OXM longer than its container"))?;
        if class != OXM_CLASS_BASIC {
            if class == OXM_CLASS_EXPERIMENTER && len < 4 {
                return Err(OfpError::new(
                    bad_len,
                    "experimenter OXM without experimenter id",
                ));
            }
            return Ok(MatchEntry::Other(OtherOxm {
                class,
                field,
                has_mask,
                body: Bytes::copy_from_slice(body),
            }));
        }
        let f = OxmField::from(field);
        let Some(info) = f.info() else {
            return Err(OfpError::new(
                ErrorCode::BadMatch(BadMatchCode::BadField),
                "unknown OXM basic field",
            ));
        };
        let w = info.width as usize;
        if len != w << has_mask as usize {
            return Err(OfpError::new(bad_len, "OXM length does not fit its field"));
        }
        let value = get_be(&body[..w]);
        let mask = if has_mask {
            Some(get_be(&body[w..]))
        } else {
            None
        };
        Ok(MatchEntry::Basic(Oxm {
            field: f,
            value,
            mask,
        }))
    }
}

/// `OFPMT_OXM`.
pub const OFPMT_OXM: u16 = 1;

/// `ofp_match` of type OXM: an ordered list of fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Match {
    pub entries: Vec<MatchEntry>,
}

impl Match {
    /// The match-all match.
    pub fn new() -> Self {
        Match::default()
    }

    /// Adds a basic field (builder style).
    pub fn with(mut self, oxm: Oxm) -> Self {
        self.entries.push(MatchEntry::Basic(oxm));
        self
    }

    /// The basic field `f`, if present.
    pub fn get(&self, f: OxmField) -> Option<&Oxm> {
        self.basic().find(|o| o.field == f)
    }

    /// The basic fields, in order.
    pub fn basic(&self) -> impl Iterator<Item = &Oxm> {
        self.entries.iter().filter_map(|e| match e {
            MatchEntry::Basic(o) => Some(o),
            MatchEntry::Other(_) => None,
        })
    }

    /// Wire length including padding.
    pub fn wire_len(&self) -> usize {
        crate::wire::pad8(4 + self.entries.iter().map(MatchEntry::wire_len).sum::<usize>())
    }

    /// Appends `ofp_match` (header, fields, padding to 8).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(OFPMT_OXM);
        let at = len_placeholder(out);
        for e in &self.entries {
            e.encode(out);
        }
        patch_len(out, at, start);
        pad_to_8(out, start);
    }

    /// Decodes `ofp_match` including its padding.
    pub fn decode(r: &mut Reader<'_>) -> Result<Match> {
        let ty = r.u16()?;
        let len = r.u16()? as usize;
        if ty != OFPMT_OXM {
            return Err(OfpError::new(
                ErrorCode::BadMatch(BadMatchCode::BadType),
                "match type is not OXM",
            ));
        }
        if len < 4 {
            return Err(OfpError::new(
                ErrorCode::MATCH_BAD_LEN,
                "match length below 4",
            ));
        }
        let mut body = r
            .sub(len - 4, ErrorCode::MATCH_BAD_LEN)
            .map_err(|_| OfpError::new(ErrorCode::MATCH_BAD_LEN, "match longer than message"))?;
        let pad = crate::wire::pad8(len) - len;
        r.skip(pad)
            .map_err(|_| OfpError::new(ErrorCode::MATCH_BAD_LEN, "match padding missing"))?;
        let mut entries = Vec::with_capacity(body.remaining() / 8 + 1);
        while !body.is_empty() {
            entries.push(MatchEntry::decode(&mut body, ErrorCode::MATCH_BAD_LEN)?);
        }
        Ok(Match { entries })
    }

    /// Checks the match as a whole, with the spec's codes: each field on its
    /// own ([`Oxm::validate`]), then `OFPBMC_DUP_FIELD`, then prerequisites
    /// (`OFPBMC_BAD_PREREQ`), including VLAN_PCP's "VLAN_VID != NONE".
    /// Non-basic classes are reported as `OFPBMC_BAD_FIELD` (we know none).
    pub fn validate(&self) -> Result<()> {
        let mut seen: [Option<&Oxm>; 40] = [None; 40];
        for e in &self.entries {
            let o = match e {
                MatchEntry::Basic(o) => o,
                MatchEntry::Other(_) => {
                    return Err(OfpError::new(
                        ErrorCode::BadMatch(BadMatchCode::BadField),
                        "unsupported OXM class",
                    ))
                }
            };
            o.validate()?;
            let slot = &mut seen[o.field.value() as usize];
            if slot.is_some() {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::DupField),
                    "field appears twice",
                ));
            }
            *slot = Some(o);
        }
        let bad_prereq = OfpError::new(
            ErrorCode::BadMatch(BadMatchCode::BadPrereq),
            "prerequisite not met",
        );
        for o in seen.iter().flatten() {
            for (need, values) in o.field.prerequisites() {
                match seen[need.value() as usize] {
                    Some(p)
                        if p.effective_mask() == need.width_mask() && values.contains(&p.value) => {
                    }
                    _ => return Err(bad_prereq),
                }
            }
            if o.field == OxmField::VlanPcp {
                match seen[OxmField::VlanVid.value() as usize] {
                    Some(v) if !(v.mask.is_none() && v.value == OFPVID_NONE as u128) => {}
                    _ => return Err(bad_prereq),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(fields: &[Oxm]) -> Match {
        fields.iter().fold(Match::new(), |m, o| m.with(*o))
    }

    #[test]
    fn header_layout_matches_spec() {
        // OXM_OF_IN_PORT = 0x80000004, OXM_OF_ETH_DST_W = 0x8000070c.
        assert_eq!(OxmField::InPort.header(false), 0x8000_0004);
        assert_eq!(OxmField::EthDst.header(true), 0x8000_070c);
        assert_eq!(OxmField::Ipv6Src.header(false), 0x8000_3410);
    }

    #[test]
    fn all_forty_fields_have_info() {
        for v in 0..40u8 {
            assert!(OxmField::from(v).info().is_some(), "field {v}");
        }
        assert!(OxmField::from(40).info().is_none());
    }

    #[test]
    fn prerequisites_are_checked() {
        use OxmField as F;
        let tcp = m(&[
            Oxm::exact(F::EthType, 0x800),
            Oxm::exact(F::IpProto, 6),
            Oxm::exact(F::TcpDst, 80),
        ]);
        assert!(tcp.validate().is_ok());
        let no_proto = m(&[Oxm::exact(F::EthType, 0x800), Oxm::exact(F::TcpDst, 80)]);
        assert_eq!(
            no_proto.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadPrereq)
        );
        let udp = m(&[
            Oxm::exact(F::EthType, 0x800),
            Oxm::exact(F::IpProto, 17),
            Oxm::exact(F::TcpDst, 80),
        ]);
        assert_eq!(
            udp.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadPrereq)
        );
        let masked_type = m(&[
            Oxm::masked(F::EthType, 0x800, 0xff00),
            Oxm::exact(F::IpProto, 6),
        ]);
        // eth_type is not maskable: that is reported first.
        assert_eq!(
            masked_type.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadMask)
        );
        let pcp = m(&[Oxm::exact(F::VlanVid, 0), Oxm::exact(F::VlanPcp, 3)]);
        assert_eq!(
            pcp.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadPrereq)
        );
        let pcp_ok = m(&[Oxm::exact(F::VlanVid, 0x1005), Oxm::exact(F::VlanPcp, 3)]);
        assert!(pcp_ok.validate().is_ok());
    }

    #[test]
    fn value_and_mask_checks() {
        use OxmField as F;
        let dup = m(&[Oxm::exact(F::InPort, 1), Oxm::exact(F::InPort, 2)]);
        assert_eq!(
            dup.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::DupField)
        );
        let wild = m(&[Oxm::masked(F::EthDst, 0xff, 0xf0)]);
        assert_eq!(
            wild.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadWildcards)
        );
        let range = m(&[Oxm::exact(F::VlanPcp, 8)]);
        assert_eq!(
            range.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadValue)
        );
        let mask = m(&[Oxm::masked(F::InPort, 1, 1)]);
        assert_eq!(
            mask.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadMask)
        );
    }

    #[test]
    fn decode_rejects_bad_lengths() {
        // in_port with length 5
        let raw = Bytes::from_static(&[0, 1, 0, 13, 0x80, 0, 0, 5, 0, 0, 0, 1, 9, 0, 0, 0]);
        let mut r = Reader::new(&raw, ErrorCode::BAD_LEN);
        assert_eq!(
            Match::decode(&mut r).unwrap_err().code,
            ErrorCode::MATCH_BAD_LEN
        );
        // unknown basic field 45
        let raw = Bytes::from_static(&[0, 1, 0, 8, 0x80, 0, 45 << 1, 0]);
        let mut r = Reader::new(&raw, ErrorCode::BAD_LEN);
        assert_eq!(
            Match::decode(&mut r).unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadField)
        );
    }
}
