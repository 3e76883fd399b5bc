//! Flows as ovs-ofctl handles them in bulk: `dump-flows` with its options
//! (`--sort`/`--rsort`, `--names`, `--no-stats`), flow files, and the
//! comparison behind `diff-flows` and `replace-flows`.
//!
//! A flow is identified, as in ovs-ofctl, by its table, priority and
//! match; two flows with the same identity are equal when their cookie,
//! timeouts and instructions are (flags and counters are not compared).

use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::BufRead;

use ofp::instruction::Instruction;
use ofp::msg::multipart::{FlowStats, MultipartReplyBody as R, MultipartRequestBody as Q};
use ofp::oxm::{MatchEntry, OxmField};
use ofp::port::{group_no, port_no, NO_BUFFER};
use ofp::text::{format_instructions, format_match, Names};
use ofp::{FlowMod, FlowModCommand, Match, Message};

use crate::client::Client;
use crate::commands::{flow_filter, flow_mod, CmdError, Result};
use crate::{print, Opts};

/// The lines of FILE ("-": standard input) that hold something: comments
/// (`#` to the end of the line) and blank lines dropped, with their line
/// numbers (from 1).
pub fn read_lines(file: &str) -> Result<Vec<(usize, String)>> {
    let reader: Box<dyn BufRead> = if file == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin()))
    } else {
        let f = std::fs::File::open(file).map_err(|e| CmdError::Usage(format!("{file}: {e}")))?;
        Box::new(std::io::BufReader::with_capacity(1 << 20, f))
    };
    let mut out = Vec::new();
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| CmdError::Usage(format!("{file}: {e}")))?;
        let text = line.split('#').next().unwrap_or("").trim();
        if !text.is_empty() {
            out.push((i + 1, text.to_string()));
        }
    }
    Ok(out)
}

/// Every flow the switch has (or those matching `filter`), in the order
/// the switch sent them, with the xid of the request.
pub fn fetch(c: &mut Client, filter: &str) -> Result<(u32, Vec<FlowStats>)> {
    let req = flow_filter(filter)?;
    let parts = c.multipart(Q::Flow(req))?;
    let xid = c.last_xid();
    let mut v = Vec::new();
    for part in parts {
        if let R::Flow(f) = part.body {
            v.extend(f);
        }
    }
    Ok((xid, v))
}

/// The switch's port names, for `--names`.
pub fn port_names(c: &mut Client) -> Result<Names> {
    let mut names = Names::new();
    for p in crate::commands::port_descs(c)? {
        names.insert_port(p.port_no, p.name.as_str());
    }
    Ok(names)
}

/// The switch's port and table names (tables that have one), for
/// `--names` in dump-flows.
pub fn names(c: &mut Client) -> Result<Names> {
    let mut names = port_names(c)?;
    for part in c.multipart(Q::TableFeatures(Vec::new()))? {
        if let R::TableFeatures(v) = part.body {
            for t in v {
                if !t.name.as_str().is_empty() {
                    names.insert_table(t.table_id, t.name.as_str());
                }
            }
        }
    }
    Ok(names)
}

/// `dump-flows`: the reply header (unless `--no-stats`, `--names` or a
/// sort is asked for, as in ovs-ofctl), then one flow per line.
pub fn dump(c: &mut Client, filter: &str, opts: &Opts) -> Result<String> {
    let keys = sort_keys(&opts.sort)?;
    // The flows first: their request gets xid 2, as with ovs-ofctl.
    let (xid, mut flows) = fetch(c, filter)?;
    let names = if opts.names { names(c)? } else { Names::new() };
    if !keys.is_empty() {
        // Stable: flows equal under every key keep the switch's order.
        flows.sort_by(|a, b| compare(a, b, &keys));
    }
    let mut s = String::new();
    // ovs-ofctl prints the reply as it comes (with its header) only when
    // it has nothing to do to it: statistics shown, no sort, no names.
    if !opts.no_stats && keys.is_empty() && !opts.names {
        s.push_str(&print::header("OFPST_FLOW reply", xid));
        s.push('\n');
    }
    for f in &flows {
        s.push(' ');
        s.push_str(&print::flow(f, !opts.no_stats, &names));
        s.push('\n');
    }
    Ok(s)
}

/// What a sort criterion compares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum SortKey {
    Priority,
    /// A match field (any of these: `tp_dst` means the TCP, UDP or SCTP one).
    Field(Vec<OxmField>),
}

fn sort_keys(spec: &[(String, bool)]) -> Result<Vec<(SortKey, bool)>> {
    spec.iter()
        .map(|(name, desc)| {
            use OxmField as F;
            let key = match name.as_str() {
                "priority" => SortKey::Priority,
                "tp_src" => SortKey::Field(vec![F::TcpSrc, F::UdpSrc, F::SctpSrc]),
                "tp_dst" => SortKey::Field(vec![F::TcpDst, F::UdpDst, F::SctpDst]),
                n => match ofp::text::field_by_name(n) {
                    Some(f) => SortKey::Field(vec![f]),
                    None => {
                        let opt = if *desc { "--rsort" } else { "--sort" };
                        return Err(CmdError::Usage(format!(
                            "{opt}: `{n}`: expected priority or a match field name like nw_src"
                        )));
                    }
                },
            };
            Ok((key, *desc))
        })
        .collect()
}

/// The value a flow matches `fields` on (masked), if it matches on one.
fn field_value(m: &Match, fields: &[OxmField]) -> Option<u128> {
    fields
        .iter()
        .find_map(|f| m.get(*f))
        .map(|o| o.mask.map_or(o.value, |mask| o.value & mask))
}

/// ovs-ofctl's order: by each key in turn, ascending or descending; a
/// flow that does not match on a key's field comes after those that do,
/// in either direction.
fn compare(a: &FlowStats, b: &FlowStats, keys: &[(SortKey, bool)]) -> Ordering {
    for (key, desc) in keys {
        let ord = match key {
            SortKey::Priority => a.priority.cmp(&b.priority),
            SortKey::Field(fields) => {
                match (
                    field_value(&a.match_, fields),
                    field_value(&b.match_, fields),
                ) {
                    (Some(x), Some(y)) => x.cmp(&y),
                    (Some(_), None) => return Ordering::Less,
                    (None, Some(_)) => return Ordering::Greater,
                    (None, None) => Ordering::Equal,
                }
            }
        };
        let ord = if *desc { ord.reverse() } else { ord };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// What makes two flows the same flow: table, priority, match (as text).
type Identity = (u8, u16, String);

/// One flow of a source, reduced to what diff-flows and replace-flows
/// compare.
#[derive(Debug, Clone)]
pub struct Entry {
    pub table_id: u8,
    pub priority: u16,
    pub match_: Match,
    pub cookie: u64,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: u16,
    pub instructions: Vec<Instruction>,
    /// The line of the flow file it came from (0: from a switch).
    pub line: usize,
}

impl Entry {
    fn from_stats(f: &FlowStats) -> Entry {
        Entry {
            table_id: f.table_id,
            priority: f.priority,
            match_: f.match_.clone(),
            cookie: f.cookie,
            idle_timeout: f.idle_timeout,
            hard_timeout: f.hard_timeout,
            flags: f.flags,
            instructions: f.instructions.clone(),
            line: 0,
        }
    }

    fn from_flow_mod(fm: &FlowMod, line: usize) -> Entry {
        Entry {
            table_id: fm.table_id,
            priority: fm.priority,
            match_: fm.match_.clone(),
            cookie: fm.cookie,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            flags: fm.flags,
            instructions: fm.instructions.clone(),
            line,
        }
    }

    /// Table, priority and match (fields in OXM order, so the order a
    /// switch keeps them in does not matter).
    fn identity(&self) -> Identity {
        let mut m = self.match_.clone();
        m.entries.sort_by_key(|e| match e {
            MatchEntry::Basic(o) => (0u8, o.field.value() as u32),
            MatchEntry::Other(o) => (1u8, ((o.class as u32) << 8) | o.field as u32),
        });
        (self.table_id, self.priority, format_match(&m))
    }

    /// Cookie, timeouts and instructions (in the order the spec runs them).
    fn version(&self) -> (u64, u16, u16, String) {
        let mut ins = self.instructions.clone();
        ins.sort_by_key(Instruction::run_order);
        (
            self.cookie,
            self.idle_timeout,
            self.hard_timeout,
            format_instructions(&ins),
        )
    }

    /// The flow as ovs-ofctl's diff-flows writes it: `table=N ` (when not
    /// 0), the rule, then cookie and timeouts when set, then the actions.
    pub fn diff_line(&self) -> String {
        let mut s = String::new();
        if self.table_id != 0 {
            s.push_str(&format!("table={} ", self.table_id));
        }
        s.push_str(&print::rule(self.priority, &self.match_, &Names::new()));
        if self.cookie != 0 {
            s.push_str(&format!(" cookie={:#x}", self.cookie));
        }
        if self.idle_timeout != 0 {
            s.push_str(&format!(" idle_timeout={}", self.idle_timeout));
        }
        if self.hard_timeout != 0 {
            s.push_str(&format!(" hard_timeout={}", self.hard_timeout));
        }
        s.push_str(&format!(
            " actions={}",
            format_instructions(&self.instructions)
        ));
        s
    }

    /// An ADD (or DELETE_STRICT) of exactly this flow.
    fn flow_mod(&self, command: FlowModCommand) -> FlowMod {
        FlowMod {
            cookie: self.cookie,
            cookie_mask: 0,
            table_id: self.table_id,
            command,
            idle_timeout: self.idle_timeout,
            hard_timeout: self.hard_timeout,
            priority: self.priority,
            buffer_id: NO_BUFFER,
            out_port: port_no::ANY,
            out_group: group_no::ANY,
            flags: self.flags,
            match_: self.match_.clone(),
            instructions: if command == FlowModCommand::Add {
                self.instructions.clone()
            } else {
                Vec::new()
            },
        }
    }
}

/// The flows of a flow file, as add-flows reads it; a flow given twice
/// counts once (the last, as the switch would keep it).
pub fn from_file(file: &str) -> Result<Vec<Entry>> {
    let mut v: Vec<Entry> = Vec::new();
    let mut at: HashMap<Identity, usize> = HashMap::new();
    for (line, text) in read_lines(file)? {
        let fm = flow_mod(&text, FlowModCommand::Add)
            .map_err(|e| CmdError::Usage(format!("{file}:{line}: {e}")))?;
        let e = Entry::from_flow_mod(&fm, line);
        match at.entry(e.identity()) {
            std::collections::hash_map::Entry::Occupied(o) => v[*o.get()] = e,
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(v.len());
                v.push(e);
            }
        }
    }
    Ok(v)
}

/// The flows a switch has.
pub fn from_switch(c: &mut Client) -> Result<Vec<Entry>> {
    Ok(fetch(c, "")?.1.iter().map(Entry::from_stats).collect())
}

/// Whether a diff-flows SOURCE is a file rather than a switch, by
/// ovs-ofctl's rule: it starts with `/` or `.`, is `-`, or has no `:` and
/// names an existing file.
pub fn is_file(source: &str) -> bool {
    source.starts_with(['/', '.'])
        || source == "-"
        || (!source.contains(':') && std::path::Path::new(source).is_file())
}

/// The differences between two flow sets: for each identity in `a` then
/// those only in `b`, the version in `a` and the version in `b` when they
/// are not equal.
pub fn differences<'a>(
    a: &'a [Entry],
    b: &'a [Entry],
) -> Vec<(Option<&'a Entry>, Option<&'a Entry>)> {
    let index = |v: &'a [Entry]| -> HashMap<Identity, &'a Entry> {
        v.iter().map(|e| (e.identity(), e)).collect()
    };
    let (in_a, in_b) = (index(a), index(b));
    let mut out = Vec::new();
    for x in a {
        match in_b.get(&x.identity()) {
            Some(y) if y.version() == x.version() => {}
            y => out.push((Some(x), y.copied())),
        }
    }
    for y in b {
        if !in_a.contains_key(&y.identity()) {
            out.push((None, Some(y)));
        }
    }
    out
}

/// `diff-flows` output: `-` lines for the first source, `+` for the second.
pub fn diff_text(a: &[Entry], b: &[Entry]) -> (String, bool) {
    let diffs = differences(a, b);
    let mut s = String::new();
    for (x, y) in &diffs {
        if let Some(x) = x {
            s.push_str(&format!("-{}\n", x.diff_line()));
        }
        if let Some(y) = y {
            s.push_str(&format!("+{}\n", y.diff_line()));
        }
    }
    (s, !diffs.is_empty())
}

/// `replace-flows`: the switch's flows that FILE lacks are deleted (strict
/// deletes), then FILE's flows that the switch lacks or has in another
/// version are added (an ADD replaces a flow with the same identity), as
/// ovs-ofctl does. Flows equal on both sides are not touched, so their
/// counters keep counting. All messages go out, then one barrier (or,
/// with `in_bundle`, all of them as one bundle: every change or none);
/// refused ones are reported by file line.
pub fn replace(c: &mut Client, file: &str, in_bundle: bool) -> Result<String> {
    let want = from_file(file)?;
    let have = from_switch(c)?;
    let diffs = differences(&have, &want);
    // Each change and the file line it comes from (0: a deletion).
    let mut changes: Vec<(Message, usize)> = Vec::new();
    for (old, new) in &diffs {
        if let (Some(old), None) = (old, new) {
            let m = Message::FlowMod(old.flow_mod(FlowModCommand::DeleteStrict));
            changes.push((m, 0));
        }
    }
    for (_, new) in &diffs {
        if let Some(new) = new {
            changes.push((
                Message::FlowMod(new.flow_mod(FlowModCommand::Add)),
                new.line,
            ));
        }
    }
    if in_bundle {
        if changes.is_empty() {
            return Ok(String::new());
        }
        let mut batch = crate::bundle::Batch::new(c);
        for (m, line) in &changes {
            if !batch.push(m) {
                return Err(CmdError::Usage(format!(
                    "{file}:{line}: too long for a bundle"
                )));
            }
        }
        return crate::bundle::run(c, batch, "changes", &|i| match changes[i].1 {
            0 => "deleting a flow".to_string(),
            line => format!("{file}:{line}"),
        });
    }
    let sent: Vec<(u32, usize)> = changes.iter().map(|(m, line)| (c.send(m), *line)).collect();
    c.barrier()?;
    let errors = c.take_errors();
    if errors.is_empty() {
        return Ok(String::new());
    }
    Err(crate::commands::refused_lines(
        file,
        &errors,
        sent.len(),
        "changes",
        |xid| sent.iter().find(|(x, _)| *x == xid).map(|(_, line)| *line),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(lines: &[&str]) -> Vec<Entry> {
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| Entry::from_flow_mod(&ofp::text::parse_flow_mod(l).unwrap(), i + 1))
            .collect()
    }

    /// The lines ovs-ofctl 3.1's diff-flows printed for the same two sets.
    #[test]
    fn diff_lines_as_ovs_ofctl() {
        let file = entries(&[
            "table=0,priority=10,in_port=1,actions=output:2",
            "table=0,in_port=2,actions=output:1",
            "table=1,cookie=0x5,priority=0,actions=CONTROLLER:65535",
        ]);
        let switch = entries(&[
            "in_port=2,actions=NORMAL",
            "priority=10,in_port=1,actions=output:2",
            "priority=3,in_port=LOCAL,actions=IN_PORT",
            "table=1,priority=7,cookie=0x6,tcp,tp_dst=80,actions=CONTROLLER:128,IN_PORT,LOCAL,FLOOD,ALL",
            "table=1,cookie=0x5,priority=0,actions=controller",
            "table=2,priority=3,actions=write_actions(output:1),goto_table:3",
            "table=3,actions=drop",
        ]);
        let (text, differ) = diff_text(&switch, &file);
        assert!(differ);
        assert_eq!(
            text,
            "-in_port=2 actions=NORMAL\n\
             +in_port=2 actions=output:1\n\
             -priority=3,in_port=LOCAL actions=IN_PORT\n\
             -table=1 priority=7,tcp,tp_dst=80 cookie=0x6 actions=CONTROLLER:128,IN_PORT,LOCAL,FLOOD,ALL\n\
             -table=2 priority=3 actions=write_actions(output:1),goto_table:3\n\
             -table=3  actions=drop\n"
        );
        let (text, differ) = diff_text(&file, &file);
        assert!(!differ);
        assert_eq!(text, "");
    }

    #[test]
    fn identity_ignores_field_order_and_version_instruction_order() {
        let a = entries(&["tcp,nw_dst=10.0.0.1,tp_dst=80,actions=output:1,goto_table:2"]);
        let mut b = a.clone();
        b[0].match_.entries.reverse();
        b[0].instructions.reverse();
        assert!(differences(&a, &b).is_empty());
        b[0].cookie = 7;
        assert_eq!(
            differences(&a, &b).len(),
            1,
            "a cookie is part of the version"
        );
    }

    fn stats(text: &str) -> FlowStats {
        let fm = ofp::text::parse_flow_mod(text).unwrap();
        FlowStats {
            idle_age: None,
            hard_age: None,
            table_id: fm.table_id,
            duration_sec: 0,
            duration_nsec: 0,
            priority: fm.priority,
            idle_timeout: 0,
            hard_timeout: 0,
            flags: 0,
            cookie: 0,
            packet_count: 0,
            byte_count: 0,
            match_: fm.match_,
            instructions: fm.instructions,
        }
    }

    #[test]
    fn sort_as_ovs_ofctl() {
        let flows = [
            stats("priority=5,tcp,tp_dst=80,actions=drop"),
            stats("priority=7,actions=drop"),
            stats("priority=1,udp,tp_dst=53,actions=drop"),
            stats("priority=9,tcp,tp_dst=22,actions=drop"),
        ];
        let order = |spec: &[(&str, bool)]| -> Vec<u16> {
            let spec: Vec<(String, bool)> = spec.iter().map(|(f, d)| (f.to_string(), *d)).collect();
            let keys = sort_keys(&spec).unwrap();
            let mut v = flows.to_vec();
            v.sort_by(|a, b| compare(a, b, &keys));
            v.iter().map(|f| f.priority).collect()
        };
        assert_eq!(order(&[("priority", false)]), [1, 5, 7, 9]);
        assert_eq!(order(&[("priority", true)]), [9, 7, 5, 1]);
        // Flows without the field go last in both directions.
        assert_eq!(order(&[("tp_dst", false)]), [9, 1, 5, 7]);
        assert_eq!(order(&[("tp_dst", true)]), [5, 1, 9, 7]);
        let e = sort_keys(&[("nosuch".into(), true)]).unwrap_err();
        assert!(e.to_string().contains("--rsort: `nosuch`"), "{e}");
    }
}
