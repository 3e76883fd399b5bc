//! `learn(...)` in ovs-ofctl text: its options, then its flow specs.
//!
//! Specs, as ovs-ofctl reads them: `DST[bits]=SRC[bits]` (the learned
//! flow matches DST against the packet's SRC), `FIELD[bits]` alone (the
//! same field on both sides), `FIELD=VALUE` (a constant match),
//! `load:SRC[bits]->DST[bits]` or `load:VALUE->DST[bits]` (a load action
//! in the learned flow) and `output:FIELD[bits]` (an output to the port
//! the packet's bits give). Printed back as ovs-ofctl prints them.

use std::fmt::Write;

use super::actions::{format_subfield, parse_subfield};
use super::flow::{field_by_name, ovs_field_name};
use super::value::{format_value, parse_num, parse_uint, parse_value};
use super::{split_top, TextError};
use crate::learn::{flags, Learn, LearnDst, LearnSpec, LearnSrc};
use crate::oxm::OxmField;

/// Parses the inside of `learn(...)`.
pub(crate) fn parse_learn(tok: &str, body: &str) -> Result<Learn, TextError> {
    let mut l = Learn::default();
    for arg in split_top(body) {
        match arg.split_once('=') {
            Some(("table", v)) => l.table_id = parse_num(v, "a table number (0-254)")?,
            Some(("priority", v)) => l.priority = parse_num(v, "a priority (0-65535)")?,
            Some(("idle_timeout", v)) => l.idle_timeout = parse_num(v, "seconds (0-65535)")?,
            Some(("hard_timeout", v)) => l.hard_timeout = parse_num(v, "seconds (0-65535)")?,
            Some(("fin_idle_timeout", v)) => {
                l.fin_idle_timeout = parse_num(v, "seconds (0-65535)")?
            }
            Some(("fin_hard_timeout", v)) => {
                l.fin_hard_timeout = parse_num(v, "seconds (0-65535)")?
            }
            Some(("cookie", v)) => l.cookie = parse_num(v, "a 64-bit cookie")?,
            Some(("limit", v)) => l.limit = parse_num(v, "a number of flows")?,
            Some(("result_dst", v)) => {
                let (f, ofs, n) = parse_subfield(v)?;
                if n != 1 {
                    return Err(TextError::new(v, "one bit, like NXM_NX_REG0[1]"));
                }
                l.result_dst = Some((f, ofs));
            }
            _ if arg == "send_flow_rem" => l.flags |= flags::SEND_FLOW_REM,
            _ if arg == "delete_learned" => l.flags |= flags::DELETE_LEARNED,
            _ => l.specs.push(parse_spec(arg)?),
        }
    }
    l.check().map_err(|e| TextError::new(tok, e.detail))?;
    Ok(l)
}

/// A source: a field's bits, or (`n_bits` given by the destination) a
/// value of the destination's kind.
fn parse_src(s: &str, dst: OxmField, n_bits: u16) -> Result<LearnSpecSrc, TextError> {
    // A field (`NXM_NX_REG4[0..15]`, `in_port`), not a value (an address
    // like `aa:bb:cc:00:00:01` or `10.0.0.1`, a number).
    let field = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && (s.contains('[') || !s.contains([':', '.']));
    if field {
        let (f, ofs, n) = parse_subfield(s)?;
        if n != n_bits {
            return Err(TextError::new(
                s,
                format!("{n_bits} bits, as many as the destination has"),
            ));
        }
        return Ok(LearnSrc::Field(f, ofs));
    }
    let kind = dst
        .info()
        .map(|i| i.kind)
        .ok_or_else(|| TextError::new(s, "a field"))?;
    let v = parse_value(kind, s, "a value for the field").or_else(|_| parse_uint(s, "a value"))?;
    if n_bits < 128 && v >> n_bits != 0 {
        return Err(TextError::new(
            s,
            format!("a value that fits {n_bits} bits"),
        ));
    }
    Ok(LearnSrc::Immediate(v))
}

type LearnSpecSrc = LearnSrc;

fn parse_spec(arg: &str) -> Result<LearnSpec, TextError> {
    if let Some(rest) = arg.strip_prefix("load:") {
        let (src, dst) = rest
            .split_once("->")
            .ok_or_else(|| TextError::new(arg, "load:SRC->DST[BITS]"))?;
        let (f, ofs, n_bits) = parse_subfield(dst)?;
        return Ok(LearnSpec {
            src: parse_src(src, f, n_bits)?,
            dst: LearnDst::Load(f, ofs),
            n_bits,
        });
    }
    if let Some(rest) = arg.strip_prefix("output:") {
        let (f, ofs, n_bits) = parse_subfield(rest)?;
        return Ok(LearnSpec {
            src: LearnSrc::Field(f, ofs),
            dst: LearnDst::Output,
            n_bits,
        });
    }
    let (dst, src) = match arg.split_once('=') {
        Some((d, s)) => (d, Some(s)),
        None => (arg, None),
    };
    // `eth_type=0x800`: a match field by its name, whole.
    let (f, ofs, n_bits) = match field_by_name(dst) {
        Some(f) if !dst.contains('[') => (f, 0, f.subfield_bits()),
        _ => parse_subfield(dst)?,
    };
    let src = match src {
        None => LearnSrc::Field(f, ofs),
        Some(s) => parse_src(s, f, n_bits)?,
    };
    Ok(LearnSpec {
        src,
        dst: LearnDst::Match(f, ofs),
        n_bits,
    })
}

/// Writes `learn(...)` as ovs-ofctl prints it.
pub(crate) fn format_learn(l: &Learn, s: &mut String, names: &super::Names) {
    let mut parts: Vec<String> = vec![format!("table={}", names.table(l.table_id))];
    for (name, v) in [
        ("idle_timeout", l.idle_timeout),
        ("hard_timeout", l.hard_timeout),
        ("fin_idle_timeout", l.fin_idle_timeout),
        ("fin_hard_timeout", l.fin_hard_timeout),
    ] {
        if v != 0 {
            parts.push(format!("{name}={v}"));
        }
    }
    if l.priority != 0x8000 {
        parts.push(format!("priority={}", l.priority));
    }
    if l.flags & flags::SEND_FLOW_REM != 0 {
        parts.push("send_flow_rem".into());
    }
    if l.flags & flags::DELETE_LEARNED != 0 {
        parts.push("delete_learned".into());
    }
    if l.cookie != 0 {
        parts.push(format!("cookie={:#x}", l.cookie));
    }
    if l.limit != 0 {
        parts.push(format!("limit={}", l.limit));
    }
    if let Some((f, ofs)) = l.result_dst {
        let mut r = String::from("result_dst=");
        format_subfield(f, ofs, 1, &mut r);
        parts.push(r);
    }
    for spec in &l.specs {
        parts.push(format_spec(spec));
    }
    let _ = write!(s, "learn({})", parts.join(","));
}

fn hex(v: u128) -> String {
    if v == 0 {
        "0".into()
    } else {
        format!("{v:#x}")
    }
}

fn format_spec(spec: &LearnSpec) -> String {
    let mut out = String::new();
    let sub = |f: OxmField, ofs: u16, out: &mut String| format_subfield(f, ofs, spec.n_bits, out);
    match (spec.src, spec.dst) {
        (LearnSrc::Field(sf, so), LearnDst::Match(df, d_o)) => {
            sub(df, d_o, &mut out);
            if (sf, so) != (df, d_o) {
                out.push('=');
                sub(sf, so, &mut out);
            }
        }
        (LearnSrc::Immediate(v), LearnDst::Match(df, d_o)) => {
            let whole = d_o == 0 && df.subfield_bits() == spec.n_bits;
            if whole {
                let kind = df.info().map(|i| i.kind).expect("checked");
                let _ = write!(out, "{}={}", ovs_field_name(df), format_value(kind, v));
            } else {
                sub(df, d_o, &mut out);
                let _ = write!(out, "={}", hex(v));
            }
        }
        (src, LearnDst::Load(df, d_o)) => {
            out.push_str("load:");
            match src {
                LearnSrc::Field(sf, so) => sub(sf, so, &mut out),
                LearnSrc::Immediate(v) => out.push_str(&hex(v)),
            }
            out.push_str("->");
            sub(df, d_o, &mut out);
        }
        (LearnSrc::Field(sf, so), LearnDst::Output) => {
            out.push_str("output:");
            sub(sf, so, &mut out);
        }
        (LearnSrc::Immediate(v), LearnDst::Output) => {
            let _ = write!(out, "output:{}", hex(v));
        }
    }
    out
}
