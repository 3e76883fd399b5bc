//! Actions and instructions in ovs-ofctl text.
//!
//! Instructions are written the ovs-ofctl way, as one list: `meter:N`, plain
//! actions (the apply-actions instruction), `clear_actions`,
//! `write_actions(...)`, `write_metadata:V[/M]`, `goto_table:N`. They are
//! printed in that order, which is also the order the spec executes them.

use bytes::Bytes;

use super::flow::field_by_name;
use super::value::{format_masked, parse_masked, parse_num};
use super::{key_value, split_top, TextError};
use crate::action::{Action, OFPCML_NO_BUFFER};
use crate::instruction::Instruction;
use crate::oxm::{MatchEntry, Oxm, OxmField, OFPVID_PRESENT};
use crate::port::port_no;

/// Parses a port: a number or a reserved name (`in_port`, `controller`, ...).
pub fn parse_port(s: &str) -> Result<u32, TextError> {
    port_no::from_name(s).map_or_else(|| parse_num(s, "a port number or reserved port name"), Ok)
}

/// Port and table names to print instead of numbers (ovs-ofctl's
/// `--names`); the empty map prints numbers. Reserved ports always print
/// by their name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    ports: std::collections::BTreeMap<u32, String>,
    tables: std::collections::BTreeMap<u8, String>,
}

impl Names {
    /// No names: every port and table prints as its number.
    pub fn new() -> Names {
        Names::default()
    }

    /// Prints port `no` as `name`.
    pub fn insert_port(&mut self, no: u32, name: impl Into<String>) {
        self.ports.insert(no, name.into());
    }

    /// Prints table `id` as `name`.
    pub fn insert_table(&mut self, id: u8, name: impl Into<String>) {
        self.tables.insert(id, name.into());
    }

    /// Port `p` by name when it has one, else as [`format_port`] writes it.
    pub fn port(&self, p: u32) -> String {
        match self.ports.get(&p) {
            Some(n) if port_no::name(p).is_none() => n.clone(),
            _ => format_port(p),
        }
    }

    /// Table `t`'s name, if it has one.
    pub fn table_name(&self, t: u8) -> Option<&str> {
        self.tables.get(&t).map(String::as_str)
    }

    /// Table `t` by name when it has one, else its number.
    pub fn table(&self, t: u8) -> String {
        self.table_name(t)
            .map_or_else(|| t.to_string(), str::to_string)
    }
}

/// Writes a port: reserved ports by name in upper case (`LOCAL`,
/// `CONTROLLER`, `IN_PORT`, ...), as ovs-ofctl prints them; others as
/// numbers. [`parse_port`] reads either case.
pub fn format_port(p: u32) -> String {
    port_no::name(p).map_or_else(|| p.to_string(), str::to_ascii_uppercase)
}

fn hex_bytes(b: &[u8]) -> String {
    let mut s = String::from("0x");
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

fn parse_hex_bytes(s: &str) -> Result<Bytes, TextError> {
    let bad = || TextError::new(s, "hex bytes like 0x0102");
    let h = s.strip_prefix("0x").ok_or_else(bad)?;
    if h.len() % 2 != 0 {
        return Err(bad());
    }
    (0..h.len())
        .step_by(2)
        .map(|i| h.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .map(Bytes::from)
        .ok_or_else(bad)
}

/// Parses `name(k=v,k=v)` arguments.
fn paren_args<'a>(tok: &'a str, name: &str) -> Option<Vec<(&'a str, &'a str)>> {
    let inner = tok
        .strip_prefix(name)?
        .strip_prefix('(')?
        .strip_suffix(')')?;
    Some(
        split_top(inner)
            .into_iter()
            .map(|kv| kv.split_once('=').unwrap_or((kv, "")))
            .collect(),
    )
}

fn set_field(field: OxmField, value: u128, mask: Option<u128>) -> Action {
    Action::SetField(MatchEntry::Basic(Oxm { field, value, mask }))
}

/// Parses one action token.
pub fn parse_action(tok: &str) -> Result<Action, TextError> {
    if let Some(args) = paren_args(tok, "controller") {
        let mut max_len = OFPCML_NO_BUFFER;
        for (k, v) in args {
            match k {
                "max_len" => max_len = parse_num(v, "a max_len (0-65535)")?,
                _ => return Err(TextError::new(k, "max_len")),
            }
        }
        return Ok(Action::Output {
            port: port_no::CONTROLLER,
            max_len,
        });
    }
    if let Some(args) = paren_args(tok, "output") {
        let (mut port, mut max_len) = (None, 0);
        for (k, v) in args {
            match k {
                "port" => port = Some(parse_port(v)?),
                "max_len" => max_len = parse_num(v, "a max_len (0-65535)")?,
                _ => return Err(TextError::new(k, "port or max_len")),
            }
        }
        let port = port.ok_or_else(|| TextError::new(tok, "output(port=N[,max_len=M])"))?;
        return Ok(Action::Output { port, max_len });
    }
    if let Some(args) = paren_args(tok, "experimenter") {
        let (mut id, mut data) = (None, Bytes::new());
        for (k, v) in args {
            match k {
                "id" => id = Some(parse_num(v, "an experimenter id")?),
                "data" => data = parse_hex_bytes(v)?,
                _ => return Err(TextError::new(k, "id or data")),
            }
        }
        let experimenter =
            id.ok_or_else(|| TextError::new(tok, "experimenter(id=N[,data=0xHEX])"))?;
        return Ok(Action::Experimenter { experimenter, data });
    }
    if let Some(v) = tok
        .strip_prefix("set_mpls_ttl(")
        .and_then(|r| r.strip_suffix(')'))
    {
        return Ok(Action::SetMplsTtl(parse_num(v, "a TTL (0-255)")?));
    }
    if tok.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Action::Output {
            port: parse_port(tok)?,
            max_len: 0,
        });
    }
    let (key, arg) = key_value(tok);
    let need = |what: &str| arg.ok_or_else(|| TextError::new(tok, format!("{key}:{what}")));
    let a = match key.to_ascii_lowercase().as_str() {
        "output" => {
            let port = parse_port(need("PORT")?)?;
            // As ovs-ofctl: `output:controller` is `controller`, which
            // sends the whole packet.
            let max_len = if port == port_no::CONTROLLER {
                OFPCML_NO_BUFFER
            } else {
                0
            };
            Action::Output { port, max_len }
        }
        "controller" => Action::Output {
            port: port_no::CONTROLLER,
            max_len: match arg {
                Some(a) => parse_num(a, "a max_len (0-65535)")?,
                None => OFPCML_NO_BUFFER,
            },
        },
        "in_port" | "all" | "flood" | "normal" | "local" | "table" | "any" if arg.is_none() => {
            Action::Output {
                port: parse_port(key)?,
                max_len: 0,
            }
        }
        "group" => Action::Group(parse_num(need("GROUP_ID")?, "a group id")?),
        "set_queue" => Action::SetQueue(parse_num(need("QUEUE_ID")?, "a queue id")?),
        "push_vlan" => Action::PushVlan(parse_num(need("ETHERTYPE")?, "an ethertype like 0x8100")?),
        "pop_vlan" | "strip_vlan" => Action::PopVlan,
        "push_mpls" => Action::PushMpls(parse_num(need("ETHERTYPE")?, "an ethertype like 0x8847")?),
        "pop_mpls" => Action::PopMpls(parse_num(need("ETHERTYPE")?, "an ethertype like 0x0800")?),
        "push_pbb" => Action::PushPbb(parse_num(need("ETHERTYPE")?, "an ethertype like 0x88e7")?),
        "pop_pbb" => Action::PopPbb,
        "set_mpls_ttl" => Action::SetMplsTtl(parse_num(need("TTL")?, "a TTL (0-255)")?),
        "dec_mpls_ttl" => Action::DecMplsTtl,
        "set_nw_ttl" | "mod_nw_ttl" => Action::SetNwTtl(parse_num(need("TTL")?, "a TTL (0-255)")?),
        "dec_nw_ttl" | "dec_ttl" => Action::DecNwTtl,
        "copy_ttl_out" => Action::CopyTtlOut,
        "copy_ttl_in" => Action::CopyTtlIn,
        "set_field" | "load" => {
            let body = need("VALUE->FIELD")?;
            let (v, f) = body
                .split_once("->")
                .ok_or_else(|| TextError::new(body, "VALUE->FIELD"))?;
            let field = field_by_name(f)
                .ok_or_else(|| TextError::new(f, "a settable field name like eth_dst"))?;
            let (mut value, mask) = parse_masked(field, v)?;
            if field == OxmField::VlanVid && value <= 0xfff {
                value |= OFPVID_PRESENT as u128;
            }
            set_field(field, value, mask)
        }
        "mod_dl_src" | "mod_dl_dst" | "mod_nw_src" | "mod_nw_dst" | "mod_vlan_pcp" => {
            let field = match key {
                "mod_dl_src" => OxmField::EthSrc,
                "mod_dl_dst" => OxmField::EthDst,
                "mod_nw_src" => OxmField::Ipv4Src,
                "mod_nw_dst" => OxmField::Ipv4Dst,
                _ => OxmField::VlanPcp,
            };
            let (value, mask) = parse_masked(field, need("VALUE")?)?;
            set_field(field, value, mask)
        }
        "mod_vlan_vid" => {
            let vid: u16 = parse_num(need("VID")?, "a VLAN id (0-4095)")?;
            if vid > 0xfff {
                return Err(TextError::new(tok, "a VLAN id (0-4095)"));
            }
            set_field(OxmField::VlanVid, (vid | OFPVID_PRESENT) as u128, None)
        }
        _ => {
            return Err(TextError::new(
                tok,
                "an action (output:N, set_field:V->F, group:N, push_vlan:T, ...)",
            ))
        }
    };
    Ok(a)
}

/// Writes one action.
pub fn format_action(a: &Action) -> String {
    format_action_named(a, &Names::new())
}

/// Writes one action, output ports by name where `names` has one.
pub fn format_action_named(a: &Action, names: &Names) -> String {
    let name = a.action_type().name().unwrap_or("?");
    match a {
        // As ovs-ofctl: `CONTROLLER:65535` (OFPCML_NO_BUFFER) or
        // `CONTROLLER:128`, reserved ports by their upper-case name.
        Action::Output {
            port: port_no::CONTROLLER,
            max_len,
        } => format!("CONTROLLER:{max_len}"),
        Action::Output { port, max_len: 0 } => match port_no::name(*port) {
            Some(_) => format_port(*port),
            None => format!("output:{}", names.port(*port)),
        },
        Action::Output { port, max_len } => {
            format!("output(port={},max_len={max_len})", names.port(*port))
        }
        // ovs-ofctl's names for these three.
        Action::SetMplsTtl(v) => format!("set_mpls_ttl({v})"),
        Action::SetNwTtl(v) => format!("mod_nw_ttl:{v}"),
        Action::DecNwTtl => "dec_ttl".into(),
        Action::PushVlan(e) | Action::PushMpls(e) | Action::PopMpls(e) | Action::PushPbb(e) => {
            format!("{name}:{e:#06x}")
        }
        Action::SetQueue(v) | Action::Group(v) => format!("{name}:{v}"),
        Action::SetField(MatchEntry::Basic(o)) => {
            let fname = super::flow::ovs_field_name(o.field);
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
        Action::Experimenter { experimenter, data } => {
            format!(
                "experimenter(id={experimenter:#x},data={})",
                hex_bytes(data)
            )
        }
        _ => name.to_string(),
    }
}

/// Parses a comma-separated action list; `drop` alone is the empty list.
pub fn parse_actions(s: &str) -> Result<Vec<Action>, TextError> {
    let toks = split_top(s);
    if toks.len() == 1 && toks[0].eq_ignore_ascii_case("drop") {
        return Ok(Vec::new());
    }
    toks.into_iter()
        .map(|t| {
            if t.eq_ignore_ascii_case("drop") {
                Err(TextError::new(t, "drop only as the sole action"))
            } else {
                parse_action(t)
            }
        })
        .collect()
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

/// Parses the `actions=` part of a flow into instructions, in canonical order.
pub fn parse_instructions(s: &str) -> Result<Vec<Instruction>, TextError> {
    let toks = split_top(s);
    if toks.len() == 1 && toks[0].eq_ignore_ascii_case("drop") {
        return Ok(Vec::new());
    }
    let mut meter = None;
    let mut apply = Vec::new();
    let mut clear = false;
    let mut write: Option<Vec<Action>> = None;
    let mut metadata = None;
    let mut goto = None;
    let once = |tok: &str, taken: bool| {
        if taken {
            Err(TextError::new(tok, "each instruction at most once"))
        } else {
            Ok(())
        }
    };
    for tok in toks {
        let (key, arg) = key_value(tok);
        match key {
            "meter" => {
                once(tok, meter.is_some())?;
                meter = Some(parse_num(arg.unwrap_or(""), "meter:METER_ID")?);
            }
            "goto_table" => {
                once(tok, goto.is_some())?;
                goto = Some(parse_num(arg.unwrap_or(""), "goto_table:TABLE (0-254)")?);
            }
            "write_metadata" => {
                once(tok, metadata.is_some())?;
                let a = arg.unwrap_or("");
                let (v, m) = match a.split_once('/') {
                    Some((v, m)) => (v, Some(m)),
                    None => (a, None),
                };
                let v: u64 = parse_num(v, "write_metadata:VALUE[/MASK]")?;
                let m: u64 = m.map_or(Ok(u64::MAX), |m| parse_num(m, "a 64-bit mask"))?;
                metadata = Some((v, m));
            }
            "clear_actions" if arg.is_none() => {
                once(tok, clear)?;
                clear = true;
            }
            _ if tok.starts_with("write_actions(") && tok.ends_with(')') => {
                once(tok, write.is_some())?;
                write = Some(parse_actions(&tok["write_actions(".len()..tok.len() - 1])?);
            }
            "drop" => return Err(TextError::new(tok, "drop only as the sole action")),
            _ => apply.push(parse_action(tok)?),
        }
    }
    let mut v = Vec::new();
    if let Some(m) = meter {
        v.push(Instruction::Meter(m));
    }
    if !apply.is_empty() {
        v.push(Instruction::ApplyActions(apply));
    }
    if clear {
        v.push(Instruction::ClearActions);
    }
    if let Some(w) = write {
        v.push(Instruction::WriteActions(w));
    }
    if let Some((metadata, mask)) = metadata {
        v.push(Instruction::WriteMetadata { metadata, mask });
    }
    if let Some(t) = goto {
        v.push(Instruction::GotoTable(t));
    }
    Ok(v)
}

/// Writes instructions as an ovs-ofctl action list (`drop` when empty).
pub fn format_instructions(ins: &[Instruction]) -> String {
    format_instructions_named(ins, &Names::new())
}

/// Writes instructions, output ports by name where `names` has one.
pub fn format_instructions_named(ins: &[Instruction], names: &Names) -> String {
    let mut parts = Vec::new();
    for i in ins {
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
