//! Flows and matches in ovs-ofctl text.

use std::collections::BTreeMap;

use super::actions::{format_instructions, parse_instructions_ctx, Ctx};
use super::names::{format_port, parse_port, Names};
use super::value::{format_masked, parse_masked, parse_num, parse_uint};
use super::{split_at_key, split_top, TextError};
use crate::msg::flow::{flow_mod_flags as ff, FlowMod};
use crate::oxm::{Match, MatchEntry, Oxm, OxmField, OFPVID_PRESENT};
use crate::port::{group_no, port_no, NO_BUFFER, TABLE_ALL};

const ETH_IP: u128 = 0x0800;
const ETH_IPV6: u128 = 0x86dd;
const ETH_ARP: u128 = 0x0806;
const ETH_RARP: u128 = 0x8035;

/// The protocol shorthands: name, eth_type, ip_proto.
const SHORTHANDS: &[(&str, u128, Option<u128>)] = &[
    ("ip", ETH_IP, None),
    ("icmp", ETH_IP, Some(1)),
    ("tcp", ETH_IP, Some(6)),
    ("udp", ETH_IP, Some(17)),
    ("sctp", ETH_IP, Some(132)),
    ("ipv6", ETH_IPV6, None),
    ("icmp6", ETH_IPV6, Some(58)),
    ("tcp6", ETH_IPV6, Some(6)),
    ("udp6", ETH_IPV6, Some(17)),
    ("sctp6", ETH_IPV6, Some(132)),
    ("arp", ETH_ARP, None),
    ("rarp", ETH_RARP, None),
    ("mpls", 0x8847, None),
    ("mplsm", 0x8848, None),
];

/// Flag names, in print order.
const FLAGS: &[(&str, u16)] = &[
    ("send_flow_rem", ff::SEND_FLOW_REM),
    ("check_overlap", ff::CHECK_OVERLAP),
    ("reset_counts", ff::RESET_COUNTS),
    ("no_packet_counts", ff::NO_PKT_COUNTS),
    ("no_byte_counts", ff::NO_BYT_COUNTS),
];

/// A field by a name that needs no context: OXM names and ovs-ofctl aliases
/// (the field table's rows, [`OxmField::from_ovs_name`]).
pub fn field_by_name(name: &str) -> Option<OxmField> {
    OxmField::from_ovs_name(name)
}

/// The name ovs-ofctl gives a field where no context changes it (in
/// `set_field:V->FIELD`): its own name where it has one (`ip_dst`,
/// `tun_id`, `nd_target`, ...), else the OXM name. [`field_by_name`]
/// reads them all.
pub fn ovs_field_name(f: OxmField) -> &'static str {
    f.ovs_name()
}

fn is_arp(eth: Option<u128>) -> bool {
    matches!(eth, Some(ETH_ARP | ETH_RARP))
}

/// Resolves a match field name in the context of the match's eth_type and
/// ip_proto, as ovs-ofctl does (`nw_src` in an ARP match is `arp_spa`).
fn resolve(name: &str, eth: Option<u128>, proto: Option<u128>) -> Result<OxmField, TextError> {
    use OxmField as F;
    Ok(match name {
        "nw_src" if is_arp(eth) => F::ArpSpa,
        "nw_dst" if is_arp(eth) => F::ArpTpa,
        "nw_proto" if is_arp(eth) => F::ArpOp,
        "icmp_type" if proto == Some(58) => F::Icmpv6Type,
        "icmp_code" if proto == Some(58) => F::Icmpv6Code,
        "tp_src" | "tp_dst" => {
            let src = name == "tp_src";
            match proto {
                Some(6) => [F::TcpDst, F::TcpSrc][src as usize],
                Some(17) => [F::UdpDst, F::UdpSrc][src as usize],
                Some(132) => [F::SctpDst, F::SctpSrc][src as usize],
                _ => return Err(TextError::new(name, "tcp, udp or sctp (or nw_proto=N) in the same match, to say which transport port")),
            }
        }
        // Fields of Nicira actions only: a match holds in_port and
        // vlan_vid/vlan_pcp (`vlan_tci=` is read above, in lower case).
        _ => field_by_name(name)
            .filter(|f| !matches!(f, F::NxmInPort | F::VlanTci))
            .ok_or_else(|| TextError::new(name, "a match field name like in_port or nw_dst"))?,
    })
}

/// Whether a parse leaves out the fields whose prerequisites the match
/// lacks, as ovs-ofctl does, or refuses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prereqs {
    /// Refused: `tp_dst` without a protocol is a parse error; the others
    /// stay in the match, for [`Match::validate`] to refuse
    /// (`OFPBMC_BAD_PREREQ`).
    Keep,
    /// Left out and named (ovs-ofctl's "normalization changed
    /// ofp_match").
    Drop,
}

/// Parses match tokens (shorthands and `field=value[/mask]`); with
/// [`Prereqs::Drop`] also returns the tokens left out.
fn parse_match_tokens(toks: &[&str], how: Prereqs) -> Result<(Match, Vec<String>), TextError> {
    // First pass: the context (eth_type, ip_proto) that names depend on.
    let mut eth = None;
    let mut proto = None;
    for tok in toks {
        if let Some((_, e, p)) = SHORTHANDS.iter().find(|(n, _, _)| n == tok) {
            eth = Some(*e);
            proto = p.or(proto);
        } else if let Some((k, v)) = tok.split_once('=') {
            match k {
                "dl_type" | "eth_type" => eth = parse_uint(v, "an ethertype").ok(),
                "nw_proto" | "ip_proto" => proto = parse_uint(v, "an IP protocol number").ok(),
                _ => {}
            }
        }
    }
    let mut fields: BTreeMap<u8, (Oxm, String)> = BTreeMap::new();
    let mut dropped = Vec::new();
    let mut put = |tok: &str, o: Oxm| -> Result<(), TextError> {
        match fields.get(&o.field.value()) {
            Some((prev, _)) if *prev != o => Err(TextError::new(
                tok,
                "no conflicting value for a field given already",
            )),
            _ => {
                fields.insert(o.field.value(), (o, tok.to_string()));
                Ok(())
            }
        }
    };
    for tok in toks {
        if let Some((_, e, p)) = SHORTHANDS.iter().find(|(n, _, _)| n == tok) {
            put(tok, Oxm::exact(OxmField::EthType, *e))?;
            if let Some(p) = p {
                put(tok, Oxm::exact(OxmField::IpProto, *p))?;
            }
            continue;
        }
        let (k, v) = tok.split_once('=').ok_or_else(|| {
            TextError::new(
                tok,
                "field=value, a protocol like tcp, or a flag like send_flow_rem",
            )
        })?;
        let o = match k {
            "dl_vlan" => {
                let vid: u16 = parse_num(v, "a VLAN id (0-4095, or 0xffff for none)")?;
                match vid {
                    0xffff => Oxm::exact(OxmField::VlanVid, 0),
                    0..=0xfff => Oxm::exact(OxmField::VlanVid, (vid | OFPVID_PRESENT) as u128),
                    _ => {
                        return Err(TextError::new(
                            tok,
                            "a VLAN id (0-4095, or 0xffff for none)",
                        ))
                    }
                }
            }
            // The OpenFlow 1.0 TCI, as Open vSwitch maps it onto OXM:
            // CFI and VID become vlan_vid (CFI is OFPVID_PRESENT), PCP
            // becomes an exact vlan_pcp where a tag is asked for.
            "vlan_tci" => {
                let what = "a 16-bit TCI (value[/mask])";
                let (t, m) = match v.split_once('/') {
                    Some((t, m)) => (parse_num::<u16>(t, what)?, parse_num::<u16>(m, what)?),
                    None => (parse_num::<u16>(v, what)?, 0xffff),
                };
                let t = t & m;
                let (vid, vmask) = ((t & 0x1fff) as u128, (m & 0x1fff) as u128);
                if vid != 0 && m & 0xe000 != 0 {
                    put(tok, Oxm::exact(OxmField::VlanPcp, (t >> 13) as u128))?;
                }
                match vmask {
                    0 => continue,
                    0x1fff => Oxm::exact(OxmField::VlanVid, vid),
                    _ => Oxm::masked(OxmField::VlanVid, vid, vmask),
                }
            }
            // A reserved port by name, in either case (`in_port=LOCAL`).
            "in_port" if port_no::from_name(v).is_some() => {
                Oxm::exact(OxmField::InPort, parse_port(v)? as u128)
            }
            "nw_tos" => {
                let tos: u8 = parse_num(v, "a TOS byte with the two ECN bits clear")?;
                if tos & 3 != 0 {
                    return Err(TextError::new(
                        tok,
                        "a TOS byte with the two ECN bits clear",
                    ));
                }
                Oxm::exact(OxmField::IpDscp, (tos >> 2) as u128)
            }
            // A transport port without a protocol that names it: ovs-ofctl
            // reads it (its tp_src/tp_dst) and leaves it out.
            "tp_src" | "tp_dst" if how == Prereqs::Drop && !matches!(proto, Some(6 | 17 | 132)) => {
                parse_masked(OxmField::TcpDst, v)?;
                dropped.push(tok.to_string());
                continue;
            }
            _ => {
                let f = resolve(k, eth, proto)?;
                let (mut value, mask) = parse_masked(f, v)?;
                // As ovs-ofctl: bits the mask leaves out are not sent.
                if let Some(m) = mask {
                    value &= m;
                }
                let o = Oxm {
                    field: f,
                    value,
                    mask,
                };
                // As Open vSwitch: a match holds 32-bit registers; a wider
                // view is split into the registers its mask touches.
                if let Some((first, n @ 2..)) = f.regs() {
                    for (i, r) in (first..first + n).enumerate() {
                        let shift = 32 * (n as u32 - 1 - i as u32);
                        let m = (o.effective_mask() >> shift) as u32;
                        let v = (o.value >> shift) as u32;
                        if m != 0 {
                            let mask = (m != u32::MAX).then_some(m as u128);
                            put(
                                tok,
                                Oxm {
                                    field: OxmField::Reg(r),
                                    value: v as u128,
                                    mask,
                                },
                            )?;
                        }
                    }
                    continue;
                }
                o
            }
        };
        put(tok, o)?;
    }
    if how == Prereqs::Drop {
        // ovs-ofctl's normalization: a field whose prerequisites (an exact
        // eth_type, ip_proto, ICMPv6 type, ...) the match lacks is left
        // out, until every field left has its own (`nw_proto=6,tp_dst=80`
        // without `ip` loses both).
        loop {
            let unmet = fields.values().find(|(o, _)| {
                o.field.prerequisites().iter().any(|(need, values)| {
                    !fields
                        .get(&need.value())
                        .is_some_and(|(p, _)| p.mask.is_none() && values.contains(&p.value))
                })
            });
            let Some((o, tok)) = unmet.cloned() else {
                break;
            };
            fields.remove(&o.field.value());
            if !dropped.contains(&tok) {
                dropped.push(tok);
            }
        }
    }
    // In the order written.
    dropped.sort_by_key(|t| toks.iter().position(|x| x == t));
    let m = Match {
        entries: fields
            .into_values()
            .map(|(o, _)| MatchEntry::Basic(o))
            .collect(),
    };
    Ok((m, dropped))
}

/// Parses a match alone (as in `dump-flows tcp,tp_dst=80`).
pub fn parse_match(s: &str) -> Result<Match, TextError> {
    parse_match_tokens(&split_top(s), Prereqs::Keep).map(|(m, _)| m)
}

fn exact(m: &Match, f: OxmField) -> Option<u128> {
    m.get(f).filter(|o| o.mask.is_none()).map(|o| o.value)
}

/// Where a field comes in a printed match: ovs-ofctl's order (packet
/// mark, conjunction id and the connection-tracking fields before the
/// protocol shorthand, then registers,
/// tunnel id and addresses, metadata, in_port, VLAN, Ethernet source then
/// destination, the L3 addresses, protocol, ARP hardware addresses, TOS,
/// TTL, fragments, MPLS, L4 ports or ICMP type and code, TCP flags, ND),
/// then the fields ovs-ofctl lacks. Ranks below [`BEFORE_SHORTHAND`] come
/// before the shorthand (`pkt_mark=0x1,tcp,...`).
fn print_rank(f: OxmField) -> u8 {
    use OxmField as F;
    match f {
        F::PktMark => 0,
        F::ConjId => 1,
        // The connection-tracking fields, in match_format's order.
        F::CtState => 2,
        F::CtZone => 3,
        F::CtMark => 4,
        F::CtLabel => 5,
        F::CtNwSrc => 6,
        F::CtIpv6Src => 7,
        F::CtNwDst => 8,
        F::CtIpv6Dst => 9,
        F::CtNwProto => 10,
        F::CtTpSrc => 11,
        F::CtTpDst => 12,
        F::Reg(n) => 13 + n.min(15),
        // Matches carry registers, not their wider views (Open vSwitch
        // splits those into registers); a decoded one prints beside them.
        F::XReg(n) => 13 + (2 * n).min(15),
        F::XXReg(n) => 13 + (4 * n).min(15),
        F::TunnelId => 31,
        F::TunIpv4Src => 32,
        F::TunIpv4Dst => 33,
        F::TunIpv6Src => 34,
        F::TunIpv6Dst => 35,
        // After the tunnel addresses (format_flow_tunnel), by index.
        F::TunMetadata(_) => 36,
        F::Metadata => 37,
        F::InPort | F::NxmInPort => 38,
        F::InPhyPort => 39,
        F::VlanVid | F::VlanTci => 40,
        F::VlanPcp => 41,
        F::EthSrc => 42,
        F::EthDst => 43,
        F::EthType => 44,
        F::Ipv6Src => 45,
        F::Ipv6Dst => 46,
        F::Ipv6Flabel => 47,
        F::Ipv4Src | F::ArpSpa => 48,
        F::Ipv4Dst | F::ArpTpa => 49,
        F::IpProto | F::ArpOp => 50,
        F::ArpSha => 51,
        F::ArpTha => 52,
        F::IpDscp => 53,
        F::IpEcn => 54,
        F::NwTtl => 55,
        F::IpFrag => 56,
        F::MplsLabel => 57,
        F::MplsTc => 58,
        F::MplsBos => 59,
        F::TcpSrc | F::UdpSrc | F::SctpSrc | F::Icmpv4Type | F::Icmpv6Type => 60,
        F::TcpDst | F::UdpDst | F::SctpDst | F::Icmpv4Code | F::Icmpv6Code => 61,
        F::TcpFlags => 62,
        F::Ipv6NdTarget => 63,
        F::Ipv6NdSll => 64,
        F::Ipv6NdTll => 65,
        F::PbbIsid => 66,
        F::PbbUca => 66,
        F::Ipv6Exthdr => 67,
        F::Unknown(_) => 68,
    }
}

/// Ranks ([`print_rank`]) printed before the protocol shorthand.
const BEFORE_SHORTHAND: u8 = 13;

/// The name a field is printed with, given the match's context.
fn print_name(f: OxmField, eth: Option<u128>, proto: Option<u128>) -> &'static str {
    use OxmField as F;
    let arp = is_arp(eth);
    match f {
        F::EthDst => "dl_dst",
        F::EthSrc => "dl_src",
        F::EthType => "dl_type",
        F::IpEcn => "nw_ecn",
        F::IpProto if !arp => "nw_proto",
        F::Ipv4Src if !arp => "nw_src",
        F::Ipv4Dst if !arp => "nw_dst",
        F::TcpSrc if proto == Some(6) => "tp_src",
        F::TcpDst if proto == Some(6) => "tp_dst",
        F::UdpSrc if proto == Some(17) => "tp_src",
        F::UdpDst if proto == Some(17) => "tp_dst",
        F::SctpSrc if proto == Some(132) => "tp_src",
        F::SctpDst if proto == Some(132) => "tp_dst",
        F::Icmpv4Type if proto == Some(1) => "icmp_type",
        F::Icmpv4Code if proto == Some(1) => "icmp_code",
        F::Icmpv6Type if proto == Some(58) => "icmp_type",
        F::Icmpv6Code if proto == Some(58) => "icmp_code",
        F::VlanPcp => "dl_vlan_pcp",
        F::Ipv6Flabel => "ipv6_label",
        F::Ipv6NdTarget => "nd_target",
        F::Ipv6NdSll => "nd_sll",
        F::Ipv6NdTll => "nd_tll",
        F::TunnelId => "tun_id",
        F::IpFrag => "nw_frag",
        _ => f.name().unwrap_or("?"),
    }
}

/// Writes a match: a protocol shorthand where one fits, then the fields.
/// The empty match is the empty string.
pub fn format_match(m: &Match) -> String {
    format_match_named(m, &Names::new())
}

/// Writes a match, `in_port` by name where `names` has one.
pub fn format_match_named(m: &Match, names: &Names) -> String {
    let eth = exact(m, OxmField::EthType);
    let proto = exact(m, OxmField::IpProto);
    let mut parts: Vec<String> = Vec::new();
    let mut before: Vec<String> = Vec::new();
    let short = SHORTHANDS
        .iter()
        .filter(|(_, e, p)| Some(*e) == eth && (p.is_none() || *p == proto))
        .max_by_key(|(_, _, p)| p.is_some());
    let (skip_eth, skip_proto) = match short {
        Some((name, _, p)) => {
            parts.push(name.to_string());
            (true, p.is_some())
        }
        None => (false, false),
    };
    // ovs-ofctl's order, whatever the order of the OXMs on the wire.
    let mut entries: Vec<&MatchEntry> = m.entries.iter().collect();
    entries.sort_by_key(|e| match e {
        MatchEntry::Basic(o) => (print_rank(o.field), o.field.tun_metadata_index()),
        MatchEntry::Other(_) => (u8::MAX, None),
    });
    for e in entries {
        let parts = match e {
            MatchEntry::Basic(o) if print_rank(o.field) < BEFORE_SHORTHAND => &mut before,
            _ => &mut parts,
        };
        let o = match e {
            MatchEntry::Basic(o) => o,
            MatchEntry::Other(o) => {
                parts.push(format!(
                    "oxm(class={:#06x},field={},hasmask={})",
                    o.class, o.field, o.has_mask
                ));
                continue;
            }
        };
        match o.field {
            // As ovs-ofctl prints a match it decoded: the value's bytes
            // (the fewest that hold value and mask), the mask only where
            // it is not all ones over them, none at all (presence alone)
            // where it is zero.
            OxmField::TunMetadata(_) => {
                let name = o.field.name().unwrap_or("?");
                let w = o.wire_width();
                let ones = if w >= 16 {
                    u128::MAX
                } else {
                    (1u128 << (8 * w)) - 1
                };
                let hex = |v: u128| {
                    if v == 0 {
                        "0".to_string()
                    } else {
                        format!("{v:#x}")
                    }
                };
                match o.mask {
                    Some(0) => parts.push(name.to_string()),
                    Some(m) if m != ones => {
                        parts.push(format!("{name}={}/{}", hex(o.value), hex(m)))
                    }
                    _ => parts.push(format!("{name}={}", hex(o.value))),
                }
                continue;
            }
            OxmField::EthType if skip_eth && o.mask.is_none() => continue,
            // Open vSwitch holds 8 bits of ct_state: a mask without any of
            // them matches everything, and it prints nothing.
            OxmField::CtState if o.effective_mask() & 0xff == 0 => continue,
            OxmField::IpProto if skip_proto && o.mask.is_none() => continue,
            OxmField::InPort if o.mask.is_none() && o.value <= u32::MAX as u128 => {
                parts.push(format!("in_port={}", names.port(o.value as u32)));
                continue;
            }
            // ovs-ofctl writes the DSCP as the TOS byte.
            OxmField::IpDscp if o.mask.is_none() && o.value < 64 => {
                parts.push(format!("nw_tos={}", o.value << 2));
                continue;
            }
            OxmField::VlanVid
                if o.mask.is_none()
                    && o.value & OFPVID_PRESENT as u128 != 0
                    && o.value <= 0x1fff =>
            {
                parts.push(format!("dl_vlan={}", o.value & 0xfff));
                continue;
            }
            // Any other VLAN_VID as ovs-ofctl shows it: the OpenFlow 1.0
            // TCI (CFI is OFPVID_PRESENT), with the PCP folded in.
            OxmField::VlanVid if o.value <= 0x1fff && o.effective_mask() & 0x1fff != 0 => {
                let (mut tci, mut mask) = (o.value as u16, (o.effective_mask() & 0x1fff) as u16);
                // The PCP folds in where the TCI's parser puts it back:
                // with CFI (a tag) in the value.
                let pcp = m.get(OxmField::VlanPcp).filter(|p| p.mask.is_none());
                if let Some(p) = pcp.filter(|_| tci & OFPVID_PRESENT != 0) {
                    tci |= (p.value as u16 & 7) << 13;
                    mask |= 0xe000;
                }
                parts.push(format!("vlan_tci={tci:#06x}/{mask:#06x}"));
                continue;
            }
            OxmField::VlanPcp
                if m.get(OxmField::VlanVid).is_some_and(|v| {
                    // Folded into vlan_tci above: a masked VID with CFI.
                    v.mask.is_some()
                        && v.value & OFPVID_PRESENT as u128 != 0
                        && v.value <= 0x1fff
                        && v.effective_mask() & 0x1fff != 0
                }) =>
            {
                continue;
            }
            _ => {}
        }
        let name = print_name(o.field, eth, proto);
        parts.push(format!(
            "{name}={}",
            format_masked(o.field, o.value, o.mask)
        ));
    }
    before.extend(parts);
    before.join(",")
}

/// Parses a flow as `ovs-ofctl add-flow` takes it. The command stays ADD:
/// in ovs-ofctl it comes from the verb (add-flow, mod-flows, del-flows), not
/// the text. A missing `actions=` means no instructions (drop).
///
/// A match field whose prerequisites the match lacks (`nw_dst=10.0.0.1`
/// without `ip`, `tp_dst=80` without `tcp`, `udp` or `sctp`) is left out,
/// as ovs-ofctl's normalization leaves it out: the flow matches more
/// packets than its text says. [`parse_flow_mod_noting`] says which.
/// A connection-tracking tuple field without a valid connection
/// matched before it stays, for [`Match::validate`] to refuse.
pub fn parse_flow_mod(s: &str) -> Result<FlowMod, TextError> {
    parse_flow_mod_noting(s).map(|(fm, _)| fm)
}

/// [`parse_flow_mod`], and the match's tokens it left out for want of
/// their prerequisites, in the order written (empty when none), for a
/// tool to warn as ovs-ofctl logs "normalization changed ofp_match".
pub fn parse_flow_mod_noting(s: &str) -> Result<(FlowMod, Vec<String>), TextError> {
    let (head, acts) = match split_at_key(s, "actions=") {
        Some((h, a)) => (h, Some(a)),
        None => (s, None),
    };
    let mut fm = FlowMod::default();
    let mut match_toks = Vec::new();
    for tok in split_top(head) {
        if let Some((_, bit)) = FLAGS.iter().find(|(n, _)| *n == tok) {
            fm.flags |= bit;
            continue;
        }
        let Some((k, v)) = tok.split_once('=') else {
            match_toks.push(tok);
            continue;
        };
        match k {
            "table" => {
                fm.table_id = if v == "all" {
                    TABLE_ALL
                } else {
                    parse_num(v, "a table number (0-254) or all")?
                }
            }
            "priority" => fm.priority = parse_num(v, "a priority (0-65535)")?,
            "cookie" => {
                let (c, m) = match v.split_once('/') {
                    Some((c, m)) => (c, Some(m)),
                    None => (v, None),
                };
                fm.cookie = parse_num(c, "a 64-bit cookie")?;
                fm.cookie_mask = m.map_or(Ok(0), |m| parse_num(m, "a 64-bit cookie mask"))?;
            }
            "idle_timeout" => fm.idle_timeout = parse_num(v, "a timeout in seconds (0-65535)")?,
            "hard_timeout" => fm.hard_timeout = parse_num(v, "a timeout in seconds (0-65535)")?,
            "out_port" => fm.out_port = parse_port(v)?,
            "out_group" => {
                fm.out_group = match v {
                    "any" => group_no::ANY,
                    "all" => group_no::ALL,
                    _ => parse_num(v, "a group number, any or all")?,
                }
            }
            "buffer_id" => fm.buffer_id = parse_num(v, "a buffer id")?,
            "flags" => fm.flags |= parse_num::<u16>(v, "a flags number")?,
            _ => match_toks.push(tok),
        }
    }
    let (m, dropped) = parse_match_tokens(&match_toks, Prereqs::Drop)?;
    fm.match_ = m;
    if let Some(a) = acts {
        let m = &fm.match_;
        let ctx = Ctx {
            proto: exact(m, OxmField::IpProto),
            // A tag is there when the match asks for OFPVID_PRESENT.
            vlan: m.get(OxmField::VlanVid).is_some_and(|o| {
                let present = OFPVID_PRESENT as u128;
                o.value & o.effective_mask() & present != 0
            }),
            depth: 0,
            in_ct: false,
        };
        fm.instructions = parse_instructions_ctx(a, ctx)?;
    }
    Ok((fm, dropped))
}

/// Writes a flow in the canonical form [`parse_flow_mod`] reads back.
pub fn format_flow_mod(fm: &FlowMod) -> String {
    let mut parts = vec![
        if fm.table_id == TABLE_ALL {
            "table=all".to_string()
        } else {
            format!("table={}", fm.table_id)
        },
        format!("priority={}", fm.priority),
    ];
    if fm.cookie != 0 || fm.cookie_mask != 0 {
        let mut c = format!("cookie={:#x}", fm.cookie);
        if fm.cookie_mask != 0 {
            c.push_str(&format!("/{:#x}", fm.cookie_mask));
        }
        parts.push(c);
    }
    if fm.idle_timeout != 0 {
        parts.push(format!("idle_timeout={}", fm.idle_timeout));
    }
    if fm.hard_timeout != 0 {
        parts.push(format!("hard_timeout={}", fm.hard_timeout));
    }
    if fm.out_port != port_no::ANY {
        parts.push(format!("out_port={}", format_port(fm.out_port)));
    }
    if fm.out_group != group_no::ANY {
        parts.push(format!("out_group={}", fm.out_group));
    }
    if fm.buffer_id != NO_BUFFER {
        parts.push(format!("buffer_id={}", fm.buffer_id));
    }
    let mut flags = fm.flags;
    for (name, bit) in FLAGS {
        if flags & bit != 0 {
            parts.push(name.to_string());
            flags &= !bit;
        }
    }
    if flags != 0 {
        parts.push(format!("flags={flags:#x}"));
    }
    let m = format_match(&fm.match_);
    if !m.is_empty() {
        parts.push(m);
    }
    parts.push(format!("actions={}", format_instructions(&fm.instructions)));
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Action;
    use crate::instruction::Instruction;

    #[test]
    fn tun_metadata_reads_and_prints_as_ovs_ofctl_writes_it() {
        let fm = parse_flow_mod(
            "tun_metadata1=0x5,tun_metadata0=0x2/0xffff,actions=\
             move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14],\
             set_field:0x10002->tun_metadata0,load:0x1->NXM_NX_TUN_METADATA3[0..7]",
        )
        .unwrap();
        assert_eq!(
            fm.match_.get(OxmField::TunMetadata(0)).unwrap().mask,
            Some(0xffff)
        );
        // By index; a mask of all ones over the value's bytes is not shown.
        assert_eq!(
            format_match(&fm.match_),
            "tun_metadata0=0x2,tun_metadata1=0x5"
        );
        let wide = parse_match("tun_metadata0=0x2/0xff00ff").unwrap();
        assert_eq!(format_match(&wide), "tun_metadata0=0x2/0xff00ff");
        assert_eq!(
            crate::text::format_instructions(&fm.instructions),
            "move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14],\
             set_field:0x10002->tun_metadata0,set_field:0x1/0xff->tun_metadata3"
        );
    }

    /// ovs-ofctl's normalization, checked against ovs-ofctl 3.1's
    /// `parse-flow` ("normalization changed ofp_match ... post: ..."):
    /// fields without their prerequisites are left out and named, the
    /// rest of the flow kept (the corpus's neutron and netvirt flows).
    #[test]
    fn fields_without_prerequisites_are_left_out_as_ovs_ofctl_does() {
        for (text, post, dropped) in [
            (
                "nw_dst=192.168.1.10 actions=NORMAL",
                "",
                &["nw_dst=192.168.1.10"][..],
            ),
            (
                "metadata=0x222e0/0xfffffffe,nw_dst=10.0.123.2,tp_dst=8080 actions=drop",
                "metadata=0x222e0/0xfffffffe",
                &["nw_dst=10.0.123.2", "tp_dst=8080"][..],
            ),
            ("priority=5,tp_dst=80,actions=drop", "", &["tp_dst=80"][..]),
            ("ip,tp_dst=80,actions=drop", "ip", &["tp_dst=80"][..]),
            (
                "nw_proto=6,tp_dst=80,actions=drop",
                "",
                &["nw_proto=6", "tp_dst=80"][..],
            ),
            (
                "ipv6,nw_dst=10.0.0.1,actions=drop",
                "ipv6",
                &["nw_dst=10.0.0.1"][..],
            ),
            (
                "nw_ttl=3,ip_frag=first,actions=drop",
                "",
                &["nw_ttl=3", "ip_frag=first"][..],
            ),
            (
                "ip,tcp_flags=+syn,actions=drop",
                "ip",
                &["tcp_flags=+syn"][..],
            ),
            (
                "tcp,tp_dst=80,nw_dst=10.0.0.1,actions=drop",
                "tcp,nw_dst=10.0.0.1,tp_dst=80",
                &[][..],
            ),
        ] {
            let (fm, d) = parse_flow_mod_noting(text).unwrap();
            assert_eq!(format_match(&fm.match_), post, "{text}");
            assert_eq!(d, dropped, "{text}");
            assert!(fm.match_.validate().is_ok(), "{text}");
            assert_eq!(parse_flow_mod(text).unwrap(), fm);
        }
        // A bad value is still an error, prerequisite or not.
        assert!(parse_flow_mod("tp_dst=x,actions=drop").is_err());
        assert!(parse_flow_mod("nw_dst=10.0.0.300,actions=drop").is_err());
        // A match alone (dump-flows, a packet) is not normalized.
        assert!(parse_match("tp_dst=80").is_err());
        assert!(parse_match("nw_dst=10.0.0.1").unwrap().validate().is_err());
        // ct's tuple fields without a valid connection stay, and are refused.
        let fm = parse_flow_mod("ct_tp_src=80,actions=drop").unwrap();
        assert!(fm.match_.validate().is_err());
    }

    #[test]
    fn the_issue_example_parses_and_prints_back() {
        let s = "table=0,priority=100,in_port=1,dl_type=0x0800,nw_dst=10.0.0.0/8,tcp,tp_dst=80,\
                 actions=set_field:02:00:00:00:00:01->eth_dst,output:2";
        let fm = parse_flow_mod(s).unwrap();
        assert_eq!(fm.priority, 100);
        assert_eq!(fm.match_.get(OxmField::TcpDst).unwrap().value, 80);
        assert_eq!(
            fm.match_.get(OxmField::Ipv4Dst).unwrap().mask,
            Some(0xff00_0000)
        );
        assert!(fm.match_.validate().is_ok());
        assert_eq!(
            fm.instructions,
            vec![Instruction::ApplyActions(vec![
                Action::SetField(MatchEntry::Basic(Oxm::exact(
                    OxmField::EthDst,
                    0x0200_0000_0001
                ))),
                Action::Output {
                    port: 2,
                    max_len: 0
                },
            ])]
        );
        let text = format_flow_mod(&fm);
        assert_eq!(
            text,
            "table=0,priority=100,tcp,in_port=1,nw_dst=10.0.0.0/8,tp_dst=80,\
             actions=set_field:02:00:00:00:00:01->eth_dst,output:2"
        );
        assert_eq!(format_flow_mod(&parse_flow_mod(&text).unwrap()), text);
    }

    #[test]
    fn instructions_and_options() {
        let s =
            "table=1,priority=5,cookie=0x10/0xff,idle_timeout=10,hard_timeout=20,send_flow_rem,\
                 arp,nw_src=10.1.0.1,actions=meter:1,output:3,clear_actions,write_actions(group:5),\
                 write_metadata:0x1/0xff,goto_table:2";
        let fm = parse_flow_mod(s).unwrap();
        assert_eq!(fm.match_.get(OxmField::ArpSpa).unwrap().value, 0x0a01_0001);
        assert_eq!(fm.instructions.len(), 6);
        assert_eq!(fm.flags, ff::SEND_FLOW_REM);
        let text = format_flow_mod(&fm);
        assert_eq!(parse_flow_mod(&text).unwrap(), fm);
        assert_eq!(format_flow_mod(&parse_flow_mod(&text).unwrap()), text);
        // Printed in the order they run whatever the message's order, so
        // that the text reads back.
        let mut rev = fm.clone();
        rev.instructions.reverse();
        assert_eq!(format_flow_mod(&rev), text);
    }

    #[test]
    fn instructions_only_in_the_order_they_run() {
        // ovs-ofctl 3.1 refuses each of these ("invalid instruction ordering").
        for (flow, token) in [
            ("actions=goto_table:3,output:2", "output:2"),
            ("actions=write_metadata:1,output:2", "output:2"),
            ("actions=clear_actions,output:2", "output:2"),
            (
                "actions=write_actions(output:1),clear_actions",
                "clear_actions",
            ),
            ("actions=goto_table:3,meter:1", "meter:1"),
            ("actions=output:1,meter:2", "meter:2"),
            (
                "actions=write_metadata:1,write_actions(output:1)",
                "write_actions(output:1)",
            ),
            ("actions=goto_table:3,write_metadata:1", "write_metadata:1"),
        ] {
            let e = parse_flow_mod(flow).unwrap_err();
            assert_eq!(e.token, token, "{flow}");
            assert!(e.expected.contains("in the order"), "{e}");
        }
        assert!(
            parse_flow_mod("actions=meter:1,output:1,output:2,clear_actions,goto_table:3").is_ok()
        );
    }

    #[test]
    fn errors_name_the_token() {
        let e = parse_flow_mod("priority=70000,actions=drop").unwrap_err();
        assert_eq!(e.token, "70000");
        // A match alone keeps its fields (a flow leaves this one out).
        let e = parse_match("tp_dst=80").unwrap_err();
        assert_eq!(e.token, "tp_dst");
        let e = parse_flow_mod("in_port=1,actions=outptu:2").unwrap_err();
        assert_eq!(e.token, "outptu:2");
        let e = parse_flow_mod("nw_dst=10.0.0.300,actions=drop").unwrap_err();
        assert_eq!(e.token, "10.0.0.300");
        let e = parse_flow_mod("tcp,nw_proto=17,actions=drop").unwrap_err();
        assert_eq!(e.token, "nw_proto=17");
        assert!(e.to_string().contains("expected"));
    }

    #[test]
    fn action_only_fields_are_not_match_fields() {
        // Found by the text fuzzer: `vlaN_tci` and `in_port` in a Nicira
        // action's sense must not enter a match by another spelling.
        assert!(parse_match("vlaN_tci=00").is_err());
        assert!(parse_match("VLAN_TCI=0").is_err());
        let m = parse_match("vlan_tci=0").unwrap();
        assert_eq!(parse_match(&format_match(&m)).unwrap(), m);
    }

    #[test]
    fn vlan_and_reserved_ports() {
        let fm = parse_flow_mod(
            "dl_vlan=10,actions=push_vlan:0x8100,set_field:4116->vlan_vid,in_port,controller:128",
        )
        .unwrap();
        assert_eq!(fm.match_.get(OxmField::VlanVid).unwrap().value, 0x100a);
        let text = format_flow_mod(&fm);
        assert!(text.contains("dl_vlan=10"), "{text}");
        assert!(text.contains("set_field:4116->vlan_vid"), "{text}");
        assert!(text.contains("IN_PORT,CONTROLLER:128"), "{text}");
        assert_eq!(parse_flow_mod(&text).unwrap(), fm);
    }

    /// Reserved ports print as ovs-ofctl 3.1 prints them (golden strings
    /// from `ovs-ofctl -O OpenFlow13 dump-flows` against sluice) and parse
    /// in either case.
    #[test]
    fn reserved_ports_as_ovs_ofctl_prints_them() {
        for (input, printed) in [
            ("in_port=2,actions=normal", "in_port=2,actions=NORMAL"),
            (
                "in_port=local,actions=output:in_port",
                "in_port=LOCAL,actions=IN_PORT",
            ),
            (
                "in_port=LOCAL,actions=IN_PORT",
                "in_port=LOCAL,actions=IN_PORT",
            ),
            ("actions=controller", "actions=CONTROLLER:65535"),
            (
                "actions=CONTROLLER:128,in_port,local,flood,all",
                "actions=CONTROLLER:128,IN_PORT,LOCAL,FLOOD,ALL",
            ),
            ("actions=Normal,output:Local", "actions=NORMAL,LOCAL"),
            (
                "actions=set_field:4101->vlan_vid",
                "actions=set_field:4101->vlan_vid",
            ),
        ] {
            let fm = parse_flow_mod(input).unwrap();
            let text = format_flow_mod(&fm);
            let want = format!("table=0,priority=32768,{printed}");
            assert_eq!(text, want, "{input}");
            assert_eq!(parse_flow_mod(&text).unwrap(), fm, "{text}");
        }
        // Fields in ovs-ofctl's order and names, whatever the wire order
        // (golden: ovs-ofctl 3.1's dump of the same flows).
        for (input, printed) in [
            (
                "table=5,priority=2,metadata=0x5/0xff,icmp,icmp_type=8,actions=output:controller,clear_actions",
                "table=5,priority=2,icmp,metadata=0x5/0xff,icmp_type=8,actions=CONTROLLER:65535,clear_actions",
            ),
            (
                "table=5,priority=1,icmp6,icmp_type=135,nd_target=2001:db8::1,actions=set_field:2001:db8::2->nd_target,set_field:0x12345->ipv6_label,output:2",
                "table=5,priority=1,icmp6,icmp_type=135,nd_target=2001:db8::1,actions=set_field:2001:db8::2->nd_target,set_field:0x12345->ipv6_label,output:2",
            ),
            (
                "table=0,priority=1,eth_dst=02:00:00:00:00:02,eth_src=02:00:00:00:00:01,ip,ip_dscp=9,actions=mod_nw_ttl:7,dec_ttl,set_field:10.0.0.9->ipv4_dst",
                "table=0,priority=1,ip,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,nw_tos=36,actions=mod_nw_ttl:7,dec_ttl,set_field:10.0.0.9->ip_dst",
            ),
            (
                "table=6,priority=1,mpls,actions=set_mpls_ttl:9,dec_mpls_ttl,pop_mpls:0x0800,set_queue:3,output:1",
                "table=6,priority=1,mpls,actions=set_mpls_ttl(9),dec_mpls_ttl,pop_mpls:0x0800,set_queue:3,output:1",
            ),
        ] {
            let mut fm = parse_flow_mod(input).unwrap();
            assert_eq!(format_flow_mod(&fm), printed, "{input}");
            assert_eq!(parse_flow_mod(printed).unwrap(), fm, "{printed}");
            fm.match_.entries.reverse();
            assert_eq!(format_flow_mod(&fm), printed, "the wire order does not matter");
        }
        let fm = parse_flow_mod("in_port=LOCAL,actions=drop").unwrap();
        assert_eq!(
            fm.match_.get(OxmField::InPort).unwrap().value,
            port_no::LOCAL as u128
        );
        let e = parse_flow_mod("in_port=locale,actions=drop").unwrap_err();
        assert_eq!(e.token, "locale");
    }
}
