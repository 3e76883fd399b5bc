//! Writing actions and instructions as ovs-ofctl 3.x prints them: one
//! canonical form per action (its name, reserved ports in upper case,
//! ports and tables by name where [`Names`] has one), instructions in the
//! order they run ([`Instruction::run_order`]).

use crate::action::{bits_mask, Action, LoadForm, RegLoad, Resubmit};
use crate::instruction::Instruction;
use crate::oxm::{MatchEntry, OxmField};
use crate::port::port_no;
use crate::text::names::{format_port, Names};
use crate::text::nicira;
use crate::text::value::format_masked;

fn hex_bytes(b: &[u8]) -> String {
    let mut s = String::from("0x");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// Writes `FIELD[...]` as ovs-ofctl does: `[]` for the whole field,
/// `[n]` for one bit, `[a..b]` otherwise.
pub(crate) fn format_subfield(f: OxmField, ofs: u16, n_bits: u16, s: &mut String) {
    use std::fmt::Write;
    match f.nxm_name() {
        Some(n) => {
            let _ = write!(s, "{n}");
        }
        None => {
            let _ = write!(s, "{}", f.value());
        }
    }
    let width = f.subfield_bits();
    let _ = if ofs == 0 && n_bits == width {
        write!(s, "[]")
    } else if n_bits == 1 {
        write!(s, "[{ofs}]")
    } else {
        write!(s, "[{ofs}..{}]", ofs as u32 + n_bits as u32 - 1)
    };
}

fn format_load(l: &RegLoad, s: &mut String) {
    use std::fmt::Write;
    // ovs-ofctl prints the value with C's %#x: 0 is `0`.
    let seg = |ofs: u16, n: u16, v: u128, s: &mut String| {
        if !s.is_empty() {
            s.push(',');
        }
        let _ = if v == 0 {
            write!(s, "load:0->")
        } else {
            write!(s, "load:{v:#x}->")
        };
        format_subfield(l.dst, ofs, n, s);
    };
    let mut rest = *l;
    while rest.n_bits > 64 {
        seg(rest.ofs, 64, rest.value & bits_mask(0, 64), s);
        rest.ofs = rest.ofs.wrapping_add(64);
        rest.n_bits -= 64;
        rest.value >>= 64;
    }
    seg(rest.ofs, rest.n_bits, rest.value, s);
}

/// Writes one action.
pub fn format_action(a: &Action) -> String {
    format_action_named(a, &Names::new())
}

/// Writes one action, output ports by name where `names` has one.
pub fn format_action_named(a: &Action, names: &Names) -> String {
    if let Some(s) = nicira::format(a, names) {
        return s;
    }
    let name = a.action_type().name().unwrap_or("?");
    match a {
        // As ovs-ofctl: `CONTROLLER:65535` (OFPCML_NO_BUFFER) or
        // `CONTROLLER:128`, reserved ports by their upper-case name.
        Action::Output {
            port: port_no::CONTROLLER,
            max_len,
        } => format!("CONTROLLER:{max_len}"),
        // As ovs-ofctl: max_len means something to CONTROLLER only.
        Action::Output { port, .. } => match port_no::name(*port) {
            Some(_) => format_port(*port),
            None => format!("output:{}", names.port(*port)),
        },
        // ovs-ofctl's names for these three.
        Action::SetMplsTtl(v) => format!("set_mpls_ttl({v})"),
        Action::SetNwTtl(v) => format!("mod_nw_ttl:{v}"),
        Action::DecNwTtl => "dec_ttl".into(),
        Action::PushVlan(e) | Action::PushMpls(e) | Action::PopMpls(e) | Action::PushPbb(e) => {
            format!("{name}:{e:#06x}")
        }
        Action::SetQueue(v) | Action::Group(v) => format!("{name}:{v}"),
        Action::SetField(MatchEntry::Basic(o)) => {
            let fname = crate::text::flow::ovs_field_name(o.field);
            format!(
                "set_field:{}->{fname}",
                format_masked(o.field, o.value, o.mask)
            )
        }
        Action::SetField(MatchEntry::Other(o)) => format!(
            "set_field:{}->oxm(class={:#06x},field={},hasmask={})",
            hex_bytes(&o.body),
            o.class,
            o.field,
            o.has_mask
        ),
        Action::RegLoad(l) if l.form == LoadForm::RegLoad => {
            let mut s = String::new();
            format_load(l, &mut s);
            s
        }
        // As ovs-ofctl prints NXAST_REG_LOAD2: a set_field, masked unless
        // it covers the whole field.
        Action::RegLoad(l) => {
            let m = l.masked();
            let whole = l.ofs == 0 && l.n_bits as u32 == l.dst.info().map_or(0, |i| i.bits as u32);
            let fname = crate::text::flow::ovs_field_name(l.dst);
            let mask = if whole { None } else { m.mask };
            format!("set_field:{}->{fname}", format_masked(l.dst, m.value, mask))
        }
        Action::RegMove(m) => {
            let mut s = String::from("move:");
            format_subfield(m.src, m.src_ofs, m.n_bits, &mut s);
            s.push_str("->");
            format_subfield(m.dst, m.dst_ofs, m.n_bits, &mut s);
            s
        }
        // As ovs-ofctl prints it: `resubmit:PORT` for another port in the
        // current table, else `resubmit(PORT,TABLE)` leaving out the
        // ingress port and the current table.
        Action::Resubmit(r) => {
            let port = (r.in_port != port_no::IN_PORT).then(|| match port_no::name(r.in_port) {
                Some(n) => n.to_ascii_uppercase(),
                // Unnamed reserved ports as Open vSwitch's 16-bit numbers.
                None if r.in_port >= 0xffff_0000 => (r.in_port & 0xffff).to_string(),
                None => names.port(r.in_port),
            });
            let table = (r.table != Resubmit::CURRENT_TABLE).then(|| names.table(r.table));
            match (port, table) {
                (Some(p), None) => format!("resubmit:{p}"),
                (p, t) => format!(
                    "resubmit({},{})",
                    p.unwrap_or_default(),
                    t.unwrap_or_default()
                ),
            }
        }
        Action::Conjunction(c) => format!("conjunction({},{}/{})", c.id, c.clause, c.n_clauses),
        Action::Learn(l) => {
            let mut s = String::new();
            crate::text::learn::format_learn(l, &mut s, names);
            s
        }
        Action::Experimenter { experimenter, data } => {
            format!(
                "experimenter(id={experimenter:#x},data={})",
                hex_bytes(data)
            )
        }
        _ => name.to_string(),
    }
}

/// Writes an action list (`drop` when empty).
pub fn format_actions(actions: &[Action]) -> String {
    format_actions_named(actions, &Names::new())
}

/// Writes an action list, output ports by name where `names` has one.
pub fn format_actions_named(actions: &[Action], names: &Names) -> String {
    if actions.is_empty() {
        return "drop".into();
    }
    actions
        .iter()
        .map(|a| format_action_named(a, names))
        .collect::<Vec<_>>()
        .join(",")
}

/// Writes instructions as an ovs-ofctl action list (`drop` when empty).
pub fn format_instructions(ins: &[Instruction]) -> String {
    format_instructions_named(ins, &Names::new())
}

/// Writes instructions, output ports by name where `names` has one.
pub fn format_instructions_named(ins: &[Instruction], names: &Names) -> String {
    // In the order they run (and are read back), whatever the message's.
    let mut ordered: Vec<&Instruction> = ins.iter().collect();
    ordered.sort_by_key(|i| i.run_order());
    let mut parts = Vec::new();
    for i in ordered {
        match i {
            Instruction::Meter(m) => parts.push(format!("meter:{m}")),
            Instruction::ApplyActions(a) => {
                parts.extend(a.iter().map(|a| format_action_named(a, names)))
            }
            Instruction::ClearActions => parts.push("clear_actions".into()),
            Instruction::WriteActions(a) => {
                let inner = if a.is_empty() {
                    String::new()
                } else {
                    format_actions_named(a, names)
                };
                parts.push(format!("write_actions({inner})"))
            }
            Instruction::WriteMetadata { metadata, mask } => {
                if *mask == u64::MAX {
                    parts.push(format!("write_metadata:{metadata:#x}"))
                } else {
                    parts.push(format!("write_metadata:{metadata:#x}/{mask:#x}"))
                }
            }
            Instruction::GotoTable(t) => parts.push(format!("goto_table:{}", names.table(*t))),
            Instruction::Experimenter { experimenter, data } => parts.push(format!(
                "experimenter_instruction(id={experimenter:#x},data={})",
                hex_bytes(data)
            )),
        }
    }
    if parts.is_empty() {
        "drop".into()
    } else {
        parts.join(",")
    }
}
