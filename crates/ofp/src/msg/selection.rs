//! A select group's selection method: Open vSwitch's only group property,
//! Netronome's experimenter property `NTRT_SELECTION_METHOD`
//! (include/openflow/netronome-ext.h), which OpenFlow 1.5 group mods and
//! group descriptions carry.
//!
//! Contract, as Open vSwitch 3.1 reads and writes it (lib/ofp-group.c,
//! lib/nx-match.c):
//!
//! * The property (`ntr_group_prop_selection_method`, 40 bytes and the
//!   fields, padded to 8): type `OFPGPT15_EXPERIMENTER`, experimenter
//!   `NTR_VENDOR_ID` (0x154d; 0x1540, Open vSwitch 2.4's wrong value, is
//!   read too), exp_type 1, the method's name NUL-terminated in 16 bytes,
//!   a 64-bit parameter, then the `fields`: OXM TLVs without the has-mask
//!   bit whose value is the mask to apply to the packet's field.
//! * Read ([`decode_prop`]), in Open vSwitch's order: in a group of
//!   another type than select `OFPBPC_BAD_VALUE` (an unknown type
//!   `OFPGMFC_BAD_TYPE`); with DELETE, INSERT_BUCKET or REMOVE_BUCKET
//!   `OFPBPC_BAD_VALUE` (an unknown command `OFPGMFC_BAD_COMMAND`);
//!   shorter than 40 bytes `OFPBPC_BAD_LEN`; a name not NUL-terminated, or
//!   other than `hash` and `dp_hash`, `OFPBPC_BAD_VALUE`; fields with
//!   `dp_hash` `OFPBPC_BAD_VALUE`; then each field: unknown
//!   `OFPBMC_BAD_FIELD`, with the has-mask bit `OFPBMC_BAD_MASK` (its value
//!   outside its mask `OFPBMC_BAD_WILDCARDS`), twice `OFPBMC_DUP_FIELD`, a
//!   mask a field that cannot be masked does not allow (neither all ones
//!   nor all zeros) `OFPBMC_BAD_MASK`, a header whose length is not its
//!   field's `OFPBMC_BAD_LEN`.
//! * The fields are kept in Open vSwitch's order (its field ids,
//!   `enum mf_field_id`), not the order they came in: Open vSwitch holds
//!   them in a bitmap, and hashes, writes and prints them so.
//! * Fields sluice has no name for (Open vSwitch's `dp_hash`,
//!   `tun_metadata`, NSH, ...) are `OFPBMC_BAD_FIELD`; so are the
//!   OpenFlow fields Open vSwitch has none of (`in_phy_port`, `pbb_isid`,
//!   `ipv6_exthdr`, `pbb_uca`), as there.

use bytes::BufMut;

use crate::error::{BadMatchCode, ErrorCode, GroupModFailedCode, OfpError, Result};
use crate::msg::group::{GroupModCommand, GroupType};
use crate::oxm::{MatchEntry, OxmField};
use crate::wire::{len_placeholder, patch_len, zeros, Reader};

/// Netronome's experimenter id (`NTR_VENDOR_ID`).
pub const NTR_VENDOR_ID: u32 = 0x0000_154d;
/// The id Open vSwitch 2.4 wrote by mistake (`NTR_COMPAT_VENDOR_ID`), still read.
pub const NTR_COMPAT_VENDOR_ID: u32 = 0x0000_1540;
/// `NTRT_SELECTION_METHOD`.
pub const NTRT_SELECTION_METHOD: u32 = 1;
/// `NTR_MAX_SELECTION_METHOD_LEN`: the name's bytes, NUL included.
pub const MAX_METHOD_LEN: usize = 16;
/// The property's fixed part.
const PROP_LEN: usize = 40;

/// The two methods Open vSwitch implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `hash`: a hash of the named fields (masked), with the parameter as
    /// its basis; without fields Open vSwitch's default selection.
    Hash,
    /// `dp_hash`: the datapath's hash of the packet's 5-tuple (the
    /// parameter's high 32 bits name the algorithm, its low 32 bits the
    /// basis), mapped onto the buckets by weight.
    DpHash,
}

impl Method {
    /// The name on the wire and in text.
    pub fn name(self) -> &'static str {
        match self {
            Method::Hash => "hash",
            Method::DpHash => "dp_hash",
        }
    }

    /// The method named `s`, if Open vSwitch implements it.
    pub fn from_name(s: &str) -> Option<Method> {
        match s {
            "hash" => Some(Method::Hash),
            "dp_hash" => Some(Method::DpHash),
            _ => None,
        }
    }
}

/// One field a `hash` selection reads, with the mask applied to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HashField {
    pub field: OxmField,
    /// Big-endian in the field's wire width; all ones hashes the whole field.
    pub mask: u128,
}

impl HashField {
    /// The whole field.
    pub fn whole(field: OxmField) -> HashField {
        HashField {
            field,
            mask: field.width_mask(),
        }
    }

    /// Whether the mask is all ones (printed as the field's name alone).
    pub fn is_whole(&self) -> bool {
        self.mask == self.field.width_mask()
    }
}

/// A select group's selection method (`selection_method=...`,
/// `selection_method_param=...`, `fields(...)` in ovs-ofctl's text).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SelectionMethod {
    pub method: Method,
    /// `selection_method_param` (0 when not given).
    pub param: u64,
    /// Only with [`Method::Hash`]; in Open vSwitch's order, each once.
    pub fields: Vec<HashField>,
}

impl SelectionMethod {
    /// A method without parameter or fields.
    pub fn new(method: Method) -> SelectionMethod {
        SelectionMethod {
            method,
            param: 0,
            fields: Vec::new(),
        }
    }
}

/// Open vSwitch's facts about a field it can hash: its rank in `enum
/// mf_field_id` (the order of a field array), its name (`mf->name`, what
/// ovs-ofctl prints) and whether it may be masked (`mf->maskable`); None
/// for a field Open vSwitch does not have.
pub fn ovs_field(f: OxmField) -> Option<(u16, &'static str, bool)> {
    use OxmField as F;
    // (rank, name, maskable), ranks in Open vSwitch 3.1's enum order;
    // gaps are fields sluice does not have.
    Some(match f {
        F::ConjId => (3, "conj_id", false),
        F::TunnelId => (4, "tun_id", true),
        F::TunIpv4Src => (5, "tun_src", true),
        F::TunIpv4Dst => (6, "tun_dst", true),
        F::TunIpv6Src => (7, "tun_ipv6_src", true),
        F::TunIpv6Dst => (8, "tun_ipv6_dst", true),
        F::Metadata => (100, "metadata", true),
        F::NxmInPort => (101, "in_port", false),
        F::InPort => (102, "in_port_oxm", false),
        F::PktMark => (105, "pkt_mark", true),
        F::CtState => (106, "ct_state", true),
        F::CtZone => (107, "ct_zone", false),
        F::CtMark => (108, "ct_mark", true),
        F::CtLabel => (109, "ct_label", true),
        F::CtNwProto => (110, "ct_nw_proto", false),
        F::CtNwSrc => (111, "ct_nw_src", true),
        F::CtNwDst => (112, "ct_nw_dst", true),
        F::CtIpv6Src => (113, "ct_ipv6_src", true),
        F::CtIpv6Dst => (114, "ct_ipv6_dst", true),
        F::CtTpSrc => (115, "ct_tp_src", true),
        F::CtTpDst => (116, "ct_tp_dst", true),
        F::Reg(n) if n < 16 => (120 + n as u16, REG_NAMES[n as usize], true),
        F::XReg(n) if n < 8 => (140 + n as u16, XREG_NAMES[n as usize], true),
        F::XXReg(n) if n < 4 => (150 + n as u16, XXREG_NAMES[n as usize], true),
        F::EthSrc => (200, "eth_src", true),
        F::EthDst => (201, "eth_dst", true),
        F::EthType => (202, "eth_type", false),
        F::VlanTci => (203, "vlan_tci", true),
        F::VlanVid => (205, "vlan_vid", true),
        F::VlanPcp => (207, "vlan_pcp", false),
        F::MplsLabel => (208, "mpls_label", false),
        F::MplsTc => (209, "mpls_tc", false),
        F::MplsBos => (210, "mpls_bos", false),
        F::Ipv4Src => (212, "ip_src", true),
        F::Ipv4Dst => (213, "ip_dst", true),
        F::Ipv6Src => (214, "ipv6_src", true),
        F::Ipv6Dst => (215, "ipv6_dst", true),
        F::Ipv6Flabel => (216, "ipv6_label", true),
        F::IpProto => (217, "nw_proto", false),
        F::IpDscp => (219, "ip_dscp", false),
        F::IpEcn => (220, "nw_ecn", false),
        F::NwTtl => (221, "nw_ttl", false),
        F::IpFrag => (222, "ip_frag", true),
        F::ArpOp => (223, "arp_op", false),
        F::ArpSpa => (224, "arp_spa", true),
        F::ArpTpa => (225, "arp_tpa", true),
        F::ArpSha => (226, "arp_sha", true),
        F::ArpTha => (227, "arp_tha", true),
        F::TcpSrc => (228, "tcp_src", true),
        F::TcpDst => (229, "tcp_dst", true),
        F::TcpFlags => (230, "tcp_flags", true),
        F::UdpSrc => (231, "udp_src", true),
        F::UdpDst => (232, "udp_dst", true),
        F::SctpSrc => (233, "sctp_src", true),
        F::SctpDst => (234, "sctp_dst", true),
        F::Icmpv4Type => (235, "icmp_type", false),
        F::Icmpv4Code => (236, "icmp_code", false),
        F::Icmpv6Type => (237, "icmpv6_type", false),
        F::Icmpv6Code => (238, "icmpv6_code", false),
        F::Ipv6NdTarget => (239, "nd_target", true),
        F::Ipv6NdSll => (240, "nd_sll", true),
        F::Ipv6NdTll => (241, "nd_tll", true),
        _ => return None,
    })
}

const REG_NAMES: [&str; 16] = [
    "reg0", "reg1", "reg2", "reg3", "reg4", "reg5", "reg6", "reg7", "reg8", "reg9", "reg10",
    "reg11", "reg12", "reg13", "reg14", "reg15",
];
const XREG_NAMES: [&str; 8] = [
    "xreg0", "xreg1", "xreg2", "xreg3", "xreg4", "xreg5", "xreg6", "xreg7",
];
const XXREG_NAMES: [&str; 4] = ["xxreg0", "xxreg1", "xxreg2", "xxreg3"];

/// The field ovs-ofctl's `fields(...)` names `s` (`mf_from_name`: a
/// field's name or one of its other names).
pub fn hash_field_by_name(s: &str) -> Option<OxmField> {
    use OxmField as F;
    let f = match s {
        "in_port" => F::NxmInPort,
        "in_port_oxm" => F::InPort,
        "tp_src" => F::TcpSrc,
        "tp_dst" => F::TcpDst,
        "nw_tos" | "dl_vlan" | "dl_vlan_pcp" => return None,
        _ => OxmField::from_ovs_name(s)?,
    };
    ovs_field(f).map(|_| f)
}

/// Whether `mask` is one Open vSwitch takes for `f` (`mf_is_mask_valid`:
/// anything for a maskable field, else all ones or all zeros).
pub fn mask_valid(f: OxmField, mask: u128) -> bool {
    match ovs_field(f) {
        Some((_, _, true)) => true,
        Some((_, _, false)) => mask == 0 || mask == f.width_mask(),
        None => false,
    }
}

/// Sorts `fields` into Open vSwitch's order.
pub fn canonical_order(fields: &mut [HashField]) {
    fields.sort_by_key(|h| ovs_field(h.field).map_or(u16::MAX, |x| x.0));
}

fn bad_property(code: u16, why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::Unknown { ty: 14, code }, why)
}

fn bad_match(code: BadMatchCode, why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadMatch(code), why)
}

/// Whether a property's experimenter and exp_type are the selection method.
pub fn is_selection_method(experimenter: u32, exp_type: u32) -> bool {
    matches!(experimenter, NTR_VENDOR_ID | NTR_COMPAT_VENDOR_ID)
        && exp_type == NTRT_SELECTION_METHOD
}

/// Reads the selection method property of a group of `group_type` in a
/// group mod with `command`; `prop` is the whole property (its type and
/// length too) without its padding.
pub fn decode_prop(
    prop: &[u8],
    group_type: GroupType,
    command: GroupModCommand,
) -> Result<SelectionMethod> {
    match group_type {
        GroupType::Select => {}
        GroupType::Unknown(_) => {
            return Err(OfpError::new(
                ErrorCode::GroupModFailed(GroupModFailedCode::BadType),
                "selection method in a group of unknown type",
            ))
        }
        _ => return Err(bad_property(2, "selection method outside a select group")),
    }
    match command {
        GroupModCommand::Add | GroupModCommand::Modify => {}
        GroupModCommand::Unknown(_) => {
            return Err(OfpError::new(
                ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand),
                "selection method with an unknown command",
            ))
        }
        _ => {
            return Err(bad_property(
                2,
                "selection method with a command other than ADD or MODIFY",
            ))
        }
    }
    if prop.len() < PROP_LEN {
        return Err(bad_property(1, "selection method property too short"));
    }
    let name = &prop[16..16 + MAX_METHOD_LEN];
    let Some(end) = name.iter().position(|&b| b == 0) else {
        return Err(bad_property(2, "selection method not NUL-terminated"));
    };
    let method = std::str::from_utf8(&name[..end])
        .ok()
        .and_then(Method::from_name)
        .ok_or(bad_property(
            2,
            "selection method other than hash and dp_hash",
        ))?;
    let mut p = [0u8; 8];
    p.copy_from_slice(&prop[32..40]);
    let param = u64::from_be_bytes(p);
    let raw = &prop[PROP_LEN..];
    if !raw.is_empty() && method != Method::Hash {
        return Err(bad_property(2, "fields with a method other than hash"));
    }
    Ok(SelectionMethod {
        method,
        param,
        fields: decode_fields(raw)?,
    })
}

/// Reads a field array (Open vSwitch's `oxm_pull_field_array`).
fn decode_fields(raw: &[u8]) -> Result<Vec<HashField>> {
    let b = bytes::Bytes::copy_from_slice(raw);
    let bad_len = ErrorCode::BadMatch(BadMatchCode::BadLen);
    let mut r = Reader::new(&b, bad_len);
    let mut v: Vec<HashField> = Vec::new();
    while !r.is_empty() {
        let o = match MatchEntry::decode(&mut r, bad_len)? {
            MatchEntry::Basic(o) if ovs_field(o.field).is_some() => o,
            _ => return Err(bad_match(BadMatchCode::BadField, "unknown field in fields")),
        };
        if let Some(m) = o.mask {
            return Err(if o.value & !m != 0 {
                bad_match(
                    BadMatchCode::BadWildcards,
                    "field with bits outside its mask",
                )
            } else {
                bad_match(BadMatchCode::BadMask, "masked OXM in fields")
            });
        }
        if v.iter().any(|h| h.field == o.field) {
            return Err(bad_match(BadMatchCode::DupField, "field twice in fields"));
        }
        if !mask_valid(o.field, o.value) {
            return Err(bad_match(
                BadMatchCode::BadMask,
                "mask the field does not take",
            ));
        }
        v.push(HashField {
            field: o.field,
            mask: o.value,
        });
    }
    canonical_order(&mut v);
    Ok(v)
}

/// Appends the property (padded to 8), fields in the order held.
pub fn encode_prop(s: &SelectionMethod, out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u16(0xffff); // OFPGPT15_EXPERIMENTER
    let at = len_placeholder(out);
    out.put_u32(NTR_VENDOR_ID);
    out.put_u32(NTRT_SELECTION_METHOD);
    zeros(out, 4);
    let mut name = [0u8; MAX_METHOD_LEN];
    let n = s.method.name().as_bytes();
    name[..n.len()].copy_from_slice(n);
    out.extend_from_slice(&name);
    out.put_u64(s.param);
    for h in &s.fields {
        encode_field(h, out);
    }
    patch_len(out, at, start);
    let len = out.len() - start;
    zeros(out, crate::wire::pad8(len) - len);
}

/// One field as Open vSwitch 3.1 writes it to OpenFlow 1.5 peers: its
/// match header (TCP flags as 1.5's basic field 42), no has-mask bit, the
/// mask as value.
fn encode_field(h: &HashField, out: &mut Vec<u8>) {
    let w = h.field.info().map_or(0, |i| i.width as usize);
    if h.field == OxmField::TcpFlags {
        out.put_u32(0x8000_0000 | 42 << 9 | w as u32);
    } else {
        out.put_u32(h.field.header(false));
    }
    out.extend_from_slice(&h.mask.to_be_bytes()[16 - w..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(name: &str, param: u64, fields: &[u8]) -> Vec<u8> {
        let mut v = vec![0xff, 0xff, 0, 0];
        v.extend_from_slice(&NTR_VENDOR_ID.to_be_bytes());
        v.extend_from_slice(&1u32.to_be_bytes());
        v.extend_from_slice(&[0; 4]);
        let mut n = [0u8; 16];
        n[..name.len()].copy_from_slice(name.as_bytes());
        v.extend_from_slice(&n);
        v.extend_from_slice(&param.to_be_bytes());
        v.extend_from_slice(fields);
        let len = v.len() as u16;
        v[2..4].copy_from_slice(&len.to_be_bytes());
        v
    }

    fn code(e: OfpError) -> ErrorCode {
        e.code
    }

    const SEL: GroupType = GroupType::Select;
    const ADD: GroupModCommand = GroupModCommand::Add;

    #[test]
    fn open_vswitch_bytes_read_and_written() {
        // ovs-ofctl 3.1's property for selection_method=hash,fields=ip_src
        // (captured: 48 bytes, OXM_OF_IPV4_SRC with an all-ones mask).
        let wire = "ffff0030 0000154d 00000001 00000000 68617368000000000000000000000000 \
                    0000000000000000 80001604ffffffff";
        let b: Vec<u8> = hex(wire);
        let s = decode_prop(&b, SEL, ADD).unwrap();
        assert_eq!(s.method, Method::Hash);
        assert_eq!(s.fields, vec![HashField::whole(OxmField::Ipv4Src)]);
        let mut out = Vec::new();
        encode_prop(&s, &mut out);
        assert_eq!(out, b);
        // dp_hash without fields: 40 bytes.
        let mut out = Vec::new();
        encode_prop(&SelectionMethod::new(Method::DpHash), &mut out);
        assert_eq!(out.len(), 40);
        assert_eq!(decode_prop(&out, SEL, ADD).unwrap().method, Method::DpHash);
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn checked_in_open_vswitch_order() {
        let p = prop("hash", 0, &[]);
        let bpc = |c| ErrorCode::Unknown { ty: 14, code: c };
        let gm = |c| ErrorCode::GroupModFailed(c);
        // Type before command before length.
        assert_eq!(
            code(decode_prop(&p[..20], GroupType::All, GroupModCommand::Delete).unwrap_err()),
            bpc(2)
        );
        assert_eq!(
            code(decode_prop(&p, GroupType::Unknown(9), ADD).unwrap_err()),
            gm(GroupModFailedCode::BadType)
        );
        for c in [
            GroupModCommand::Delete,
            GroupModCommand::InsertBucket,
            GroupModCommand::RemoveBucket,
        ] {
            assert_eq!(code(decode_prop(&p[..20], SEL, c).unwrap_err()), bpc(2));
        }
        assert_eq!(
            code(decode_prop(&p, SEL, GroupModCommand::Unknown(7)).unwrap_err()),
            gm(GroupModFailedCode::BadCommand)
        );
        assert_eq!(code(decode_prop(&p[..39], SEL, ADD).unwrap_err()), bpc(1));
        // Names: unknown, empty, not terminated.
        assert_eq!(
            code(decode_prop(&prop("foo", 0, &[]), SEL, ADD).unwrap_err()),
            bpc(2)
        );
        assert_eq!(
            code(decode_prop(&prop("", 0, &[]), SEL, ADD).unwrap_err()),
            bpc(2)
        );
        let mut long = prop("dp_hash", 0, &[]);
        long[16..32].copy_from_slice(b"dp_hashdp_hashdp");
        assert_eq!(code(decode_prop(&long, SEL, ADD).unwrap_err()), bpc(2));
        // Fields with dp_hash.
        let ip_src = hex("80001604ffffffff");
        assert_eq!(
            code(decode_prop(&prop("dp_hash", 0, &ip_src), SEL, ADD).unwrap_err()),
            bpc(2)
        );
        let bmc = |c| ErrorCode::BadMatch(c);
        let f = |x: &str| code(decode_prop(&prop("hash", 0, &hex(x)), SEL, ADD).unwrap_err());
        // Masked entry, twice, a mask nw_proto does not take, unknown, short.
        assert_eq!(f("80001708ffffff00ffffff00"), bmc(BadMatchCode::BadMask));
        assert_eq!(
            f("80001708ffffff01ffffff00"),
            bmc(BadMatchCode::BadWildcards)
        );
        assert_eq!(
            f("80001604ffffffff80001604ffffff00"),
            bmc(BadMatchCode::DupField)
        );
        assert_eq!(f("80001401f0"), bmc(BadMatchCode::BadMask));
        assert_eq!(f("80000204000000ff"), bmc(BadMatchCode::BadField)); // in_phy_port
        assert_eq!(f("8000160200ff"), bmc(BadMatchCode::BadLen));
        // nw_proto all zeros or all ones is fine; fields come out in
        // Open vSwitch's order (ip_src, nw_proto, tcp_src).
        let s = decode_prop(
            &prop("hash", 7, &hex("80001a02ffff 80001401ff 80001604ffff0000")),
            SEL,
            ADD,
        )
        .unwrap();
        assert_eq!(s.param, 7);
        assert_eq!(
            s.fields.iter().map(|h| h.field).collect::<Vec<_>>(),
            vec![OxmField::Ipv4Src, OxmField::IpProto, OxmField::TcpSrc]
        );
        assert_eq!(s.fields[0].mask, 0xffff_0000);
        // The compat experimenter id is read too.
        let mut compat = prop("hash", 0, &[]);
        compat[4..8].copy_from_slice(&NTR_COMPAT_VENDOR_ID.to_be_bytes());
        assert!(is_selection_method(NTR_COMPAT_VENDOR_ID, 1));
        assert!(decode_prop(&compat, SEL, ADD).is_ok());
    }

    #[test]
    fn names_as_ovs_ofctl_reads_them() {
        assert_eq!(hash_field_by_name("nw_src"), Some(OxmField::Ipv4Src));
        assert_eq!(hash_field_by_name("ip_src"), Some(OxmField::Ipv4Src));
        assert_eq!(hash_field_by_name("tp_dst"), Some(OxmField::TcpDst));
        assert_eq!(hash_field_by_name("in_port"), Some(OxmField::NxmInPort));
        assert_eq!(hash_field_by_name("reg3"), Some(OxmField::Reg(3)));
        assert_eq!(hash_field_by_name("in_phy_port"), None);
        assert_eq!(ovs_field(OxmField::IpProto).unwrap().1, "nw_proto");
        assert!(mask_valid(OxmField::IpProto, 0));
        assert!(!mask_valid(OxmField::IpProto, 0x0f));
        assert!(mask_valid(OxmField::Ipv4Src, 0x0f));
        // Every field Open vSwitch ranks has a distinct rank, and every name
        // reads back as its field.
        let all: Vec<OxmField> = OxmField::KNOWN
            .iter()
            .chain(OxmField::NICIRA)
            .chain(OxmField::CT)
            .copied()
            .filter(|f| ovs_field(*f).is_some())
            .collect();
        let mut ranks: Vec<u16> = all.iter().map(|f| ovs_field(*f).unwrap().0).collect();
        ranks.sort_unstable();
        ranks.dedup();
        assert_eq!(ranks.len(), all.len());
        for f in all {
            assert_eq!(
                hash_field_by_name(ovs_field(f).unwrap().1),
                Some(f),
                "{f:?}"
            );
        }
    }
}
