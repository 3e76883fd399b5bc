//! The text of `ct(...)`, `nat(...)` and `ct_clear` ([`crate::ct`]), read
//! and printed as ovs-ofctl 3.1 does (`parse_CT`, `parse_NAT`,
//! `format_CT`, `format_NAT` in `lib/ofp-actions.c`):
//!
//! ```text
//! ct(commit,force,table=N,zone=N|FIELD[a..b],alg=ftp|tftp,nat(...),exec(ACTIONS))
//! nat(src|dst[=ADDR[-ADDR][:PORT[-PORT]]],persistent,hash|random)
//! ```
//!
//! Printing puts the arguments in ovs-ofctl's order: commit, force, table,
//! zone (left out when 0), a `nat` that comes first among the nested
//! actions, `exec(...)` with the rest, alg. The nesting rules are Open
//! vSwitch's and refused with its words: `nat` only inside `ct`, `ct_mark`
//! and `ct_label` written only inside `ct`'s `exec`, nothing else there.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::actions::{
    format_actions_named, format_subfield, parse_actions_ctx, parse_subfield, Ctx,
};
use super::names::Names;
use super::value::parse_num;
use super::{split_top, TextError};
use crate::action::{Action, Subfield};
use crate::ct::{
    Ct, CtZone, Nat, NatRange, ALG_FTP, ALG_TFTP, NX_CT_F_COMMIT, NX_CT_F_FORCE, NX_CT_RECIRC_NONE,
    NX_NAT_F_DST, NX_NAT_F_PERSISTENT, NX_NAT_F_PROTO_HASH, NX_NAT_F_PROTO_RANDOM, NX_NAT_F_SRC,
};
use crate::nicira::MAX_NESTING;

/// `KEY`, `KEY=VALUE`, `KEY:VALUE` or `KEY(VALUE)`, as Open vSwitch's
/// `ofputil_parse_key_value` splits an argument.
fn arg_key_value(tok: &str) -> (&str, &str) {
    let cut = tok.find(['=', ':', '(']);
    match cut {
        Some(i) if tok.as_bytes()[i] == b'(' => match tok[i + 1..].strip_suffix(')') {
            Some(v) => (&tok[..i], v),
            None => (tok, ""),
        },
        Some(i) => (&tok[..i], &tok[i + 1..]),
        None => (tok, ""),
    }
}

/// `ct(ARGS)` (or `ct` alone): see the module's description.
pub(crate) fn parse_ct(tok: &str, arg: &str, ctx: &Ctx) -> Result<Action, TextError> {
    if ctx.depth + 1 >= MAX_NESTING {
        return Err(TextError::new(
            tok,
            "actions nested at most 100 deep (Open vSwitch's limit)",
        ));
    }
    let mut ct = Ct::new();
    for a in split_top(arg) {
        let (key, value) = arg_key_value(a);
        match key {
            "commit" => ct.flags |= NX_CT_F_COMMIT,
            "force" => ct.flags |= NX_CT_F_FORCE,
            "table" => {
                let t: u8 = parse_num(value, "a table number (0-254)")?;
                if t == NX_CT_RECIRC_NONE {
                    return Err(TextError::new(a, "a table number (0-254): 255 is no table"));
                }
                ct.recirc_table = t;
            }
            "zone" => {
                ct.zone = match parse_num::<u16>(value, "") {
                    Ok(z) => CtZone::Imm(z),
                    Err(_) => {
                        let (field, ofs, n_bits) = parse_subfield(value).map_err(|_| {
                            TextError::new(a, "zone=N (0-65535) or zone=FIELD[a..b] of 16 bits")
                        })?;
                        CtZone::Field(Subfield { field, ofs, n_bits })
                    }
                }
            }
            "alg" => {
                ct.alg = match value {
                    "ftp" => ALG_FTP,
                    "tftp" => ALG_TFTP,
                    _ => return Err(TextError::new(a, "alg=ftp or alg=tftp (the conntrack helpers ovs-ofctl knows)")),
                }
            }
            "nat" => ct.actions.push(parse_nat(a, value)?),
            "exec" => {
                let mut inner = Ctx {
                    depth: ctx.depth + 1,
                    in_ct: true,
                    ..*ctx
                };
                if !value.is_empty() {
                    let list = parse_actions_ctx(value, &mut inner)?;
                    ct.actions.extend(list);
                }
            }
            _ => {
                return Err(TextError::new(
                    a,
                    "an argument of ct: commit, force, table=N, zone=N|FIELD[], alg=ftp|tftp, nat(...), exec(...)",
                ))
            }
        }
    }
    if ct.force() && !ct.commit() {
        return Err(TextError::new(
            tok,
            "\"force\" with \"commit\" (force needs commit)",
        ));
    }
    ct.check()
        .map_err(|e| TextError::new(tok, format!("a ct that Open vSwitch takes ({})", e.detail)))?;
    Ok(Action::Ct(Box::new(ct)))
}

/// `nat[(ARGS)]`: see the module's description.
pub(crate) fn parse_nat(tok: &str, arg: &str) -> Result<Action, TextError> {
    let mut nat = Nat {
        flags: 0,
        range: NatRange::None,
        proto_min: 0,
        proto_max: 0,
    };
    for a in split_top(arg) {
        let (key, value) = arg_key_value(a);
        match key {
            "src" | "dst" => {
                nat.flags |= if key == "src" {
                    NX_NAT_F_SRC
                } else {
                    NX_NAT_F_DST
                };
                parse_nat_range(value, &mut nat)?;
            }
            "persistent" => nat.flags |= NX_NAT_F_PERSISTENT,
            "hash" => nat.flags |= NX_NAT_F_PROTO_HASH,
            "random" => nat.flags |= NX_NAT_F_PROTO_RANDOM,
            _ => {
                return Err(TextError::new(
                    a,
                    "an argument of nat: src[=RANGE], dst[=RANGE], persistent, hash, random",
                ))
            }
        }
    }
    let (src, dst) = (nat.flags & NX_NAT_F_SRC != 0, nat.flags & NX_NAT_F_DST != 0);
    if src && dst {
        return Err(TextError::new(tok, "one of \"src\" or \"dst\", not both"));
    }
    if !src && !dst && nat.flags != 0 {
        return Err(TextError::new(tok, "flags only with \"src\" or \"dst\""));
    }
    if nat.flags & NX_NAT_F_PROTO_HASH != 0 && nat.flags & NX_NAT_F_PROTO_RANDOM != 0 {
        return Err(TextError::new(tok, "\"hash\" or \"random\", not both"));
    }
    Ok(Action::Nat(Box::new(nat)))
}

/// `ADDR[-ADDR][:PORT[-PORT]]`, IPv6 addresses bare or in brackets (in
/// brackets when ports follow), as `str_to_nat_range` reads it. An empty
/// range is none.
fn parse_nat_range(s: &str, nat: &mut Nat) -> Result<(), TextError> {
    let bad = || {
        TextError::new(
            s,
            "a nat range ADDR[-ADDR][:PORT[-PORT]] (IPv6 in [] before a port), low to high",
        )
    };
    nat.range = NatRange::None;
    if s.is_empty() {
        return Ok(());
    }
    // The addresses end where a port starts: after `]`, or for IPv4 at
    // the first `:`.
    let (addrs, ports) = if s.starts_with('[') || s.contains("-[") {
        match s.rfind(']') {
            Some(i) => match &s[i + 1..] {
                "" => (s, None),
                p => (&s[..=i], Some(p.strip_prefix(':').ok_or_else(bad)?)),
            },
            None => return Err(bad()),
        }
    } else if s.matches(':').count() == 1 || !s.contains(':') {
        match s.split_once(':') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        }
    } else {
        // A bare IPv6 address (or range): no port can follow.
        (s, None)
    };
    let (lo, hi) = match addrs.split_once('-') {
        Some((a, b)) => (a, Some(b)),
        None => (addrs, None),
    };
    let unbracket = |a: &'_ str| -> String {
        a.strip_prefix('[')
            .and_then(|a| a.strip_suffix(']'))
            .unwrap_or(a)
            .to_string()
    };
    if let Ok(min) = lo.parse::<Ipv4Addr>() {
        let min = u32::from(min);
        let max = match hi {
            Some(h) => u32::from(h.parse::<Ipv4Addr>().map_err(|_| bad())?),
            None => 0,
        };
        if hi.is_some() && max < min {
            return Err(bad());
        }
        nat.range = NatRange::V4 { min, max };
    } else if let Ok(min) = unbracket(lo).parse::<Ipv6Addr>() {
        let min = u128::from(min);
        let max = match hi {
            Some(h) => u128::from(unbracket(h).parse::<Ipv6Addr>().map_err(|_| bad())?),
            None => 0,
        };
        if hi.is_some() && max < min {
            return Err(bad());
        }
        nat.range = NatRange::V6 { min, max };
    } else {
        return Err(bad());
    }
    if let Some(p) = ports {
        let (lo, hi) = match p.split_once('-') {
            Some((a, b)) => (a, Some(b)),
            None => (p, None),
        };
        nat.proto_min = lo.parse().map_err(|_| bad())?;
        if let Some(h) = hi {
            nat.proto_max = h.parse().map_err(|_| bad())?;
            if nat.proto_max < nat.proto_min {
                return Err(bad());
            }
        }
    }
    Ok(())
}

/// Writes `nat(...)` as `format_NAT` does.
pub(crate) fn format_nat(n: &Nat, s: &mut String) {
    use std::fmt::Write;
    s.push_str("nat");
    if n.flags & (NX_NAT_F_SRC | NX_NAT_F_DST) == 0 {
        return;
    }
    s.push('(');
    s.push_str(if n.flags & NX_NAT_F_SRC != 0 {
        "src"
    } else {
        "dst"
    });
    if n.range != NatRange::None {
        s.push('=');
        let bracket = n.proto_min != 0;
        let v6 = |a: u128, s: &mut String| {
            let _ = if bracket {
                write!(s, "[{}]", Ipv6Addr::from(a))
            } else {
                write!(s, "{}", Ipv6Addr::from(a))
            };
        };
        match n.range {
            NatRange::V4 { min, max } => {
                let _ = write!(s, "{}", Ipv4Addr::from(min));
                if max != 0 && max != min {
                    let _ = write!(s, "-{}", Ipv4Addr::from(max));
                }
            }
            NatRange::V6 { min, max } => {
                v6(min, s);
                if max != 0 && max != min {
                    s.push('-');
                    v6(max, s);
                }
            }
            NatRange::None => {}
        }
        if n.proto_min != 0 {
            let _ = write!(s, ":{}", n.proto_min);
            if n.proto_max != 0 && n.proto_max != n.proto_min {
                let _ = write!(s, "-{}", n.proto_max);
            }
        }
        s.push(',');
        if n.flags & NX_NAT_F_PERSISTENT != 0 {
            s.push_str("persistent,");
        }
        if n.flags & NX_NAT_F_PROTO_HASH != 0 {
            s.push_str("hash,");
        }
        if n.flags & NX_NAT_F_PROTO_RANDOM != 0 {
            s.push_str("random,");
        }
    }
    if s.ends_with(',') {
        s.pop();
    }
    s.push(')');
}

/// Writes `ct(...)` as `format_CT` does.
pub(crate) fn format_ct(c: &Ct, names: &Names, s: &mut String) {
    use std::fmt::Write;
    s.push_str("ct(");
    if c.commit() {
        s.push_str("commit,");
    }
    if c.force() {
        s.push_str("force,");
    }
    if let Some(t) = c.table() {
        let _ = write!(s, "table={},", names.table(t));
    }
    match &c.zone {
        CtZone::Field(f) => {
            s.push_str("zone=");
            format_subfield(f.field, f.ofs, f.n_bits, s);
            s.push(',');
        }
        CtZone::Imm(0) => {}
        CtZone::Imm(z) => {
            let _ = write!(s, "zone={z},");
        }
    }
    let mut rest = &c.actions[..];
    if let Some((Action::Nat(n), tail)) = rest.split_first() {
        format_nat(n, s);
        s.push(',');
        rest = tail;
    }
    if !rest.is_empty() {
        let _ = write!(s, "exec({}),", format_actions_named(rest, names));
    }
    match c.alg {
        0 => {}
        ALG_FTP => s.push_str("alg=ftp,"),
        ALG_TFTP => s.push_str("alg=tftp,"),
        n => {
            let _ = write!(s, "alg={n},");
        }
    }
    if s.ends_with(',') {
        s.pop();
    }
    s.push(')');
}
