//! The ovs-ofctl text syntax for flows, matches, actions, groups and meters.
//!
//! ```text
//! table=0,priority=100,in_port=1,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=set_field:02:00:00:00:00:01->eth_dst,output:2
//! group_id=1,type=select,bucket=weight:10,actions=output:1
//! meter=1,kbps,burst,bands=type=drop,rate=1000,burst_size=100
//! ```
//!
//! Parsing accepts the names ovs-ofctl users know (`dl_dst`, `nw_src`,
//! `tp_dst`, `dl_vlan`, `tun_id`, `tun_src`, `tun_dst`, `tun_ipv6_src`,
//! `tun_ipv6_dst`, ...) as well as the OXM names (`eth_dst`, `ipv4_src`,
//! `tcp_dst`, `vlan_vid`, ...), and reserved ports in either case.
//!
//! Actions are OpenFlow 1.3's plus Open vSwitch's `load:VALUE->FIELD[BITS]`
//! and `move:SRC[BITS]->DST[BITS]` (NXAST_REG_LOAD and NXAST_REG_MOVE;
//! FIELD by its NXM/OXM name such as `NXM_NX_TUN_ID` or `OXM_OF_METADATA`,
//! or its short name; BITS `[]`, `[n]` or `[a..b]`), and the ovs-ofctl
//! aliases that map onto them: `strip_vlan` (pop_vlan), `mod_vlan_vid`,
//! `mod_vlan_pcp` (pushing a tag first when the match has none, as
//! ovs-ofctl does), `mod_dl_src`, `mod_dl_dst`, `mod_nw_src`, `mod_nw_dst`,
//! `mod_nw_tos` (the DSCP, tos >> 2), `mod_nw_ecn`, `mod_nw_ttl`,
//! `mod_tp_src`/`mod_tp_dst` (the port of the match's tcp, udp or sctp),
//! `set_tunnel`, `set_tunnel64`. A `load:` is an NXAST_REG_LOAD whether it
//! sets the whole field or part of it, as ovs-ofctl 3.1 sends it under
//! OpenFlow 1.3 (not set_field or reg_load2), in pieces of at most 64
//! bits; a masked `set_field:V/M->F` is the same load. Printing writes one canonical form, the one
//! ovs-ofctl 3.x prints: reserved ports in upper case (`NORMAL`,
//! `CONTROLLER:65535`, `in_port=LOCAL`), match fields in ovs-ofctl's order
//! and names (`tcp,in_port=1,dl_src=...,dl_dst=...,nw_tos=36`), actions by
//! ovs-ofctl's names (`dec_ttl`, `mod_nw_ttl:9`, `set_mpls_ttl(9)`,
//! `set_field:10.0.0.1->ip_dst`, `load:0x15->NXM_NX_TUN_ID[]`,
//! `move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]`), tunnel fields first in a
//! match (`tun_id=0x5,tun_src=1.2.3.4,in_port=3`), bucket weights only when
//! not the default. [`Names`] prints port and table names instead of numbers, as
//! `--names` does. Parsing the canonical form gives back the same message:
//! text -> message -> text is the identity on canonical text, and message ->
//! text -> message on canonical messages (match fields in OXM order, no
//! empty apply-actions instruction).
//!
//! Every error names the token that failed and what was expected there.

mod actions;
mod ct;
mod flow;
mod group;
mod learn;
mod meter;
mod names;
mod nicira;
mod value;

pub use actions::{
    format_action, format_action_named, format_actions, format_actions_named, format_instructions,
    format_instructions_named, parse_action, parse_actions, parse_instructions,
};
pub use flow::{
    field_by_name, format_flow_mod, format_match, format_match_named, parse_flow_mod,
    parse_flow_mod_noting, parse_match,
};
pub use group::{format_group_mod, parse_group_mod, parse_group_mod_for};
pub use meter::{format_meter_mod, parse_meter_mod};
pub use names::{format_port, parse_port, quote_name, Names};
pub use nicira::format_hex_dotted;
pub use value::{format_mac, format_masked, parse_masked, parse_num};

/// A text the parser could not read: which token, and what it expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{token}`: expected {expected}")]
pub struct TextError {
    /// The offending token, as typed.
    pub token: String,
    /// What would have been accepted there.
    pub expected: String,
}

impl TextError {
    pub fn new(token: &str, expected: impl Into<String>) -> TextError {
        TextError {
            token: token.to_string(),
            expected: expected.into(),
        }
    }
}

/// Splits `s` at top-level separators (commas and white space), not inside
/// parentheses; empty pieces are dropped.
pub(crate) fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' | ' ' | '\t' | '\n' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

/// Finds `key` (like `actions=`) at top level, at a token start; returns the
/// text before it and after it.
pub(crate) fn split_at_key<'a>(s: &'a str, key: &str) -> Option<(&'a str, &'a str)> {
    let mut depth = 0i32;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            // Anywhere at the top level, as ovs-ofctl looks for it
            // (`priority=6actions=...` is read as `priority=6`).
            _ if depth == 0 && s[i..].starts_with(key) => {
                return Some((&s[..i], &s[i + key.len()..]));
            }
            _ => {}
        }
    }
    None
}

/// Splits `key=value` or `key:value` at the first `=` or `:`.
pub(crate) fn key_value(tok: &str) -> (&str, Option<&str>) {
    match tok.find(['=', ':']) {
        Some(i) => (&tok[..i], Some(&tok[i + 1..])),
        None => (tok, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `OXM_OF_VLAN_VID[]` in `move`/`load`/`learn` is Open vSwitch's
    /// 12 bits (antrea's `move:NXM_NX_CT_LABEL[64..75]->OXM_OF_VLAN_VID[]`),
    /// printed back as ovs-ofctl prints it; a 13th bit is refused.
    #[test]
    fn vlan_vid_subfields_are_twelve_bits() {
        use crate::action::Action;
        use crate::oxm::OxmField;
        let fm = parse_flow_mod(
            "actions=push_vlan:0x8100,move:NXM_NX_CT_LABEL[64..75]->OXM_OF_VLAN_VID[],\
             move:OXM_OF_VLAN_VID[0..11]->NXM_NX_REG0[0..11],load:0xfff->OXM_OF_VLAN_VID[]",
        )
        .unwrap();
        let crate::Instruction::ApplyActions(acts) = &fm.instructions[0] else {
            panic!("{:?}", fm.instructions)
        };
        match &acts[1] {
            Action::RegMove(m) => assert_eq!((m.dst, m.n_bits), (OxmField::VlanVid, 12)),
            a => panic!("{a:?}"),
        }
        assert_eq!(
            format_instructions(&fm.instructions),
            "push_vlan:0x8100,move:NXM_NX_CT_LABEL[64..75]->OXM_OF_VLAN_VID[],\
             move:OXM_OF_VLAN_VID[]->NXM_NX_REG0[0..11],load:0xfff->OXM_OF_VLAN_VID[]"
        );
        for bad in [
            "actions=move:NXM_NX_CT_LABEL[64..76]->OXM_OF_VLAN_VID[]",
            "actions=move:NXM_NX_REG0[0..12]->OXM_OF_VLAN_VID[0..12]",
            "actions=load:0x1005->OXM_OF_VLAN_VID[]",
        ] {
            assert!(parse_flow_mod(bad).is_err(), "{bad}");
        }
        // The match and set_field keep the OXM's 13 bits.
        assert!(parse_flow_mod("vlan_vid=0x1005,actions=set_field:0x1006->vlan_vid").is_ok());
    }

    #[test]
    fn split_respects_parentheses() {
        assert_eq!(split_top("a,b(c,d) e"), vec!["a", "b(c,d)", "e"]);
        assert_eq!(
            split_at_key("x=1,actions=y,z", "actions="),
            Some(("x=1,", "y,z"))
        );
        assert_eq!(split_at_key("write_actions(a),b", "actions="), None);
    }
}
