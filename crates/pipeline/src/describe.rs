//! Text of what the pipeline looks at, as Open vSwitch's traces write it:
//! a packet's flow key as a match, a rule, a tunnel's metadata. Used by
//! the interpreter's trace notes ([`crate::exec`]) and by [`crate::trace`];
//! it reads keys and rules and knows nothing of how a packet runs.

use ofp::oxm::{MatchEntry, Oxm, OxmField};
use ofp::Match;
use packet::{FlowKey, TunnelMeta};

use crate::lookup::matchkey::{compile, read_field};
use crate::lookup::rule::Rule;

/// Tunnel metadata as Open vSwitch's datapath actions write it
/// (`tun_id=0x15,dst=10.10.10.10`), the fields that are set.
pub fn describe_tunnel(t: &TunnelMeta) -> String {
    use std::net::{Ipv4Addr, Ipv6Addr};
    let mut parts = vec![format!("tun_id={:#x}", t.id)];
    if t.ipv4_src != 0 {
        parts.push(format!("src={}", Ipv4Addr::from(t.ipv4_src)));
    }
    if t.ipv4_dst != 0 {
        parts.push(format!("dst={}", Ipv4Addr::from(t.ipv4_dst)));
    }
    if t.ipv6_src != 0 {
        parts.push(format!("ipv6_src={}", Ipv6Addr::from(t.ipv6_src)));
    }
    if t.ipv6_dst != 0 {
        parts.push(format!("ipv6_dst={}", Ipv6Addr::from(t.ipv6_dst)));
    }
    parts.join(",")
}

/// A packet's flow key as an ovs-ofctl match: every field the packet
/// really carries (its layer was parsed whole), in OXM order.
pub fn describe_key(key: &FlowKey) -> String {
    let mut m = Match::new();
    let tunnel = [
        OxmField::TunIpv4Src,
        OxmField::TunIpv4Dst,
        OxmField::TunIpv6Src,
        OxmField::TunIpv6Dst,
    ];
    let extension = [
        OxmField::PktMark,
        OxmField::NwTtl,
        OxmField::IpFrag,
        OxmField::TcpFlags,
    ];
    let regs = (0u8..16).map(OxmField::Reg);
    for f in (0u8..40)
        .map(OxmField::from)
        .chain(tunnel)
        .chain(extension)
        .chain(regs)
    {
        if matches!(f, OxmField::Unknown(_) | OxmField::InPhyPort) {
            continue;
        }
        let Some(value) = read_field(key, f) else {
            continue;
        };
        // Zero metadata, tunnel fields and VLAN (untagged) say nothing.
        if value == 0
            && (matches!(
                f,
                OxmField::Metadata
                    | OxmField::TunnelId
                    | OxmField::VlanVid
                    | OxmField::PktMark
                    | OxmField::Reg(_)
            ) || tunnel.contains(&f))
        {
            continue;
        }
        m.entries.push(MatchEntry::Basic(Oxm::exact(f, value)));
        // Keep the field only if its prerequisites hold and the packet
        // really had that layer (a compiled match checks both).
        let keep = compile(&m).is_ok_and(|c| c.matches(key));
        if !keep {
            m.entries.pop();
        }
    }
    ofp::text::format_match(&m)
}

/// A rule as the trace shows it: match, priority, cookie, instructions.
pub fn describe_rule(r: &Rule) -> String {
    let m = ofp::text::format_match(&r.match_.get());
    // As Open vSwitch: `priority 0` alone for a rule that matches all.
    let mut s = if m.is_empty() {
        format!("priority {}", r.priority)
    } else {
        format!("{m}, priority {}", r.priority)
    };
    if r.cookie != 0 {
        s.push_str(&format!(", cookie {:#x}", r.cookie));
    }
    s
}
