//! add-flows and add-groups: a file of changes ("-": standard input), one
//! a line, `#` to the end of a line a comment.
//!
//! Contract: every line is parsed before anything is sent, so a typo sends
//! nothing and is reported with its line (`FILE:LINE: ...`). Then all the
//! changes go out back to back and one barrier collects the refusals, each
//! named by its line; with `--bundle` they go as one bundle instead
//! (`crate::bundle`: all of them or none). A line of an add-flows file may
//! start with ovs-ofctl's per-line command (`line_command`).

use std::io::BufRead;
use std::time::Instant;

use ofp::msg::group::GroupModCommand;
use ofp::port::TABLE_ALL;
use ofp::{FlowMod, FlowModCommand, Message};

use super::changes::refused_lines;
use super::flow::{flow_mod, has_key};
use super::group_meter::group_mod;
use super::parse_flows::NameMap;
use super::{usage, CmdError, Result};
use crate::client::Client;
use crate::{bundle, flows};

/// add-groups: every line is parsed before anything is sent; then all
/// group-mods go out, then one barrier (or, with `--bundle`, as one
/// bundle); refusals are named by line.
pub(super) fn add_groups(c: &mut Client, file: &str, in_bundle: bool) -> Result<String> {
    let mut msgs = Vec::new();
    for (line, text) in flows::read_lines(file)? {
        let gm = group_mod(&text, GroupModCommand::Add)
            .map_err(|e| CmdError::Usage(format!("{file}:{line}: {e}")))?;
        msgs.push((line, Message::GroupMod(gm)));
    }
    if in_bundle {
        let mut batch = bundle::Batch::new(c);
        for (line, m) in &msgs {
            if !batch.push(m) {
                return usage(&format!("{file}:{line}"), "too long for a bundle");
            }
        }
        return bundle::run(c, batch, "groups", &|i| format!("{file}:{}", msgs[i].0));
    }
    let sent: Vec<(u32, usize)> = msgs.iter().map(|(line, m)| (c.send(m), *line)).collect();
    c.barrier()?;
    let errors = c.take_errors();
    if errors.is_empty() {
        return Ok(String::new());
    }
    Err(refused_lines(file, &errors, sent.len(), "groups", |xid| {
        sent.iter().find(|(x, _)| *x == xid).map(|(_, line)| *line)
    }))
}

/// The commands a line of an add-flows file may start with, as ovs-ofctl
/// reads them (any non-empty prefix: the first in this order it begins).
const LINE_COMMANDS: [(&str, FlowModCommand); 5] = [
    ("add", FlowModCommand::Add),
    ("delete", FlowModCommand::Delete),
    ("delete_strict", FlowModCommand::DeleteStrict),
    ("modify", FlowModCommand::Modify),
    ("modify_strict", FlowModCommand::ModifyStrict),
];

/// The command a line of an add-flows file starts with, and the rest of
/// the line: `add`, `modify`, `modify_strict`, `delete` or `delete_strict`
/// (or a prefix of one, as ovs-ofctl takes them) as the first word, else
/// an ADD of the whole line. The first word ends at a comma, a space or a
/// tab, as in ovs-ofctl.
fn line_command(text: &str) -> (FlowModCommand, &str) {
    let text = text.trim_start();
    let end = text.find([',', ' ', '\t']).unwrap_or(text.len());
    let word = &text[..end];
    if !word.is_empty() {
        for (name, cmd) in LINE_COMMANDS {
            if name.starts_with(word) {
                return (cmd, &text[end..]);
            }
        }
    }
    (FlowModCommand::Add, text)
}

/// One line of an add-flows file as a FLOW_MOD: its command (see
/// `line_command`) and the flow. Deletes without `table=` cover every
/// table, as with del-flows. A first word the flow syntax does not know
/// and that is not a command is named in the error.
fn file_flow_mod(text: &str) -> Result<FlowMod> {
    let (cmd, flow) = line_command(text);
    let mut fm = flow_mod(flow, cmd).map_err(|e| {
        let word = flow.split([',', ' ', '\t']).next().unwrap_or("");
        let spaced = flow[word.len()..].starts_with([' ', '\t']);
        if cmd == FlowModCommand::Add && spaced && !word.contains('=') {
            CmdError::Usage(format!(
                "`{word}` is not a command (add, modify, modify_strict, delete, delete_strict): {e}"
            ))
        } else {
            e
        }
    })?;
    if matches!(cmd, FlowModCommand::Delete | FlowModCommand::DeleteStrict)
        && !has_key(flow, "table")
    {
        fm.table_id = TABLE_ALL;
    }
    Ok(fm)
}

/// add-flows: every line is parsed before anything is sent (a typo sends
/// nothing); then all flow-mods go out back to back, then one barrier
/// (or, with `--bundle`, as one bundle). Errors are reported with the
/// line they belong to.
pub(super) fn add_flows(c: &mut Client, file: &str, in_bundle: bool) -> Result<String> {
    let reader: Box<dyn BufRead> = if file == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(file).map_err(|e| CmdError::Usage(format!("{file}: {e}")))?;
        Box::new(std::io::BufReader::with_capacity(1 << 20, f))
    };
    let parse_start = Instant::now();
    let mut wire = Vec::new();
    let mut lines = Vec::new();
    let first_xid = c.reserve_xids(0);
    let mut names: Option<NameMap> = None;
    let mut batch = in_bundle.then(|| bundle::Batch::new(c));
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| CmdError::Usage(format!("{file}: {e}")))?;
        let text = line.split('#').next().unwrap_or("").trim();
        if text.is_empty() {
            continue;
        }
        // Port and table names: the switch's, read once, the first time
        // a line does not parse without them.
        let fm = match file_flow_mod(text) {
            Ok(fm) => fm,
            Err(e) => {
                if names.is_none() {
                    names = Some(NameMap::from_switch(c)?);
                }
                let named = names
                    .as_ref()
                    .map(|n| n.substitute(text))
                    .unwrap_or_default();
                let again = (named != text).then(|| file_flow_mod(&named));
                match again {
                    Some(Ok(fm)) => fm,
                    _ => return Err(CmdError::Usage(format!("{file}:{}: {e}", i + 1))),
                }
            }
        };
        let m = Message::FlowMod(fm);
        match &mut batch {
            Some(b) => {
                if !b.push(&m) {
                    return usage(&format!("{file}:{}", i + 1), "too long for a bundle");
                }
            }
            None => {
                let xid = first_xid.wrapping_add(lines.len() as u32);
                if m.encode_as(c.version(), xid, &mut wire).is_err() {
                    return usage(&format!("{file}:{}", i + 1), "too long for one message");
                }
            }
        }
        lines.push(i + 1);
    }
    if let Some(b) = batch {
        return bundle::run(c, b, "flows", &|i| format!("{file}:{}", lines[i]));
    }
    let parsed = parse_start.elapsed();
    c.reserve_xids(lines.len() as u32);
    let start = Instant::now();
    c.send_bytes(&wire)?;
    c.barrier()?;
    let took = start.elapsed();
    let errors = c.take_errors();
    if std::env::var_os("SLUICE_CTL_TIMING").is_some() {
        eprintln!(
            "add-flows: {} flow-mods, {} bytes; parsed in {:.3} s; first byte to BARRIER_REPLY {:.6} s ({:.0} flow-mods/s)",
            lines.len(),
            wire.len(),
            parsed.as_secs_f64(),
            took.as_secs_f64(),
            lines.len() as f64 / took.as_secs_f64()
        );
    }
    if errors.is_empty() {
        return Ok(String::new());
    }
    Err(refused_lines(file, &errors, lines.len(), "flows", |xid| {
        lines.get(xid.wrapping_sub(first_xid) as usize).copied()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_flows_lines_take_ovs_ofctl_commands() {
        let cmd = |t: &str| file_flow_mod(t).unwrap().command;
        let table = |t: &str| file_flow_mod(t).unwrap().table_id;
        use FlowModCommand as C;
        assert_eq!(cmd("priority=5,tcp,actions=output:2"), C::Add);
        assert_eq!(cmd("tcp priority=5 actions=output:2"), C::Add);
        assert_eq!(cmd("add priority=5,tcp,actions=output:2"), C::Add);
        assert_eq!(cmd("modify priority=5,tcp,actions=output:3"), C::Modify);
        assert_eq!(
            cmd("  modify_strict\tpriority=5,tcp,actions=output:3"),
            C::ModifyStrict
        );
        assert_eq!(cmd("mod,priority=5,tcp,actions=output:3"), C::Modify);
        assert_eq!(cmd("delete tcp"), C::Delete);
        assert_eq!(cmd("delete"), C::Delete);
        assert_eq!(cmd("delete_strict priority=5,tcp"), C::DeleteStrict);
        assert_eq!(table("delete_strict priority=5,tcp"), TABLE_ALL);
        assert_eq!(table("delete_strict table=3,priority=5,tcp"), 3);
        assert_eq!(table("modify_strict priority=5,tcp,actions=drop"), 0);
        let fm = file_flow_mod("modify_strict priority=5,tcp,tp_dst=80,actions=output:3").unwrap();
        assert_eq!(fm.priority, 5);
        assert_eq!(fm.instructions.len(), 1);
        let e = file_flow_mod("modfy priority=5,tcp,actions=drop").unwrap_err();
        assert!(e.to_string().starts_with("`modfy` is not a command"), "{e}");
    }
}
