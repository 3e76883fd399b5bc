//! The flow commands: dump-flows, dump-aggregate, add-flow, mod-flows,
//! del-flows, replace-flows and diff-flows, and the flow text they read
//! ([`flow_mod`], [`flow_filter`]).
//!
//! Contract: the flow, filter or file is read and checked before
//! connecting. add-flow, mod-flows and del-flows send one FLOW_MOD as a
//! change (`changes`); `--strict` makes mod-flows and del-flows strict, and
//! a delete without `table=` covers every table. The work on many flows at
//! once (dumping with its options, flow files, comparing) is
//! `crate::flows`'s.

use ofp::msg::multipart::{FlowStatsRequest, MultipartReplyBody as R, MultipartRequestBody as Q};
use ofp::port::TABLE_ALL;
use ofp::text::parse_flow_mod;
use ofp::{FlowMod, FlowModCommand, Message};

use super::changes::change;
use super::parse_flows::NameMap;
use super::{usage, Connect, Output, Result};
use crate::client::ClientError;
use crate::{flows, print, Opts};

/// diff-flows: the flows of two sources (each a flow file or a switch);
/// exit status 2 when they differ.
pub(super) fn diff_flows(connect: &Connect<'_>, source1: &str, source2: &str) -> Result<Output> {
    let read = |src: &str| -> Result<Vec<flows::Entry>> {
        if flows::is_file(src) {
            flows::from_file(src)
        } else {
            flows::from_switch(&mut connect(src)?)
        }
    };
    let a = read(source1)?;
    let b = read(source2)?;
    let (text, differ) = flows::diff_text(&a, &b);
    Ok(Output {
        text,
        status: if differ { 2 } else { 0 },
    })
}

/// dump-flows: the flows matching `filter` (default: all).
pub(super) fn dump_flows(
    connect: &Connect<'_>,
    switch: &str,
    filter: Option<&str>,
    opts: &Opts,
) -> Result<String> {
    let filter = filter.unwrap_or_default();
    // A bad filter or sort field is reported before connecting.
    flow_filter(filter)?;
    flows::dump(&mut connect(switch)?, filter, opts)
}

/// dump-aggregate: the counts summed over the flows matching `filter`.
pub(super) fn dump_aggregate(
    connect: &Connect<'_>,
    switch: &str,
    filter: Option<&str>,
) -> Result<String> {
    let req = flow_filter(filter.unwrap_or(""))?;
    let mut c = connect(switch)?;
    let parts = c.multipart(Q::Aggregate(req))?;
    let xid = c.last_xid();
    match parts.into_iter().find_map(|p| match p.body {
        R::Aggregate(a) => Some(a),
        _ => None,
    }) {
        Some(a) => Ok(print::aggregate(&a, xid)),
        None => Err(ClientError::Unexpected("no AGGREGATE reply".into()).into()),
    }
}

/// replace-flows: makes the switch's flows those of `file`.
pub(super) fn replace_flows(
    connect: &Connect<'_>,
    switch: &str,
    file: &str,
    opts: &Opts,
) -> Result<String> {
    // The file is read (and every line checked) before connecting.
    flows::from_file(file)?;
    flows::replace(&mut connect(switch)?, file, opts.bundle)
}

/// add-flow: adds one flow.
pub(super) fn add_flow(
    connect: &Connect<'_>,
    switch: &str,
    flow: &str,
    opts: &Opts,
) -> Result<String> {
    let (mut c, fm) = named_flow_mod(connect, switch, flow, FlowModCommand::Add)?;
    change(&mut c, &Message::FlowMod(fm), opts)
}

/// A FLOW_MOD from flow text that may name ports and tables
/// (`in_port=tap0`, `output:"vm 1"`, `table=Classifier`,
/// `resubmit(,Output)`), and the connection: text that does not parse as
/// it is is tried again with the switch's names put in
/// ([`NameMap::from_switch`]), as ovs-ofctl resolves names.
fn named_flow_mod(
    connect: &Connect<'_>,
    switch: &str,
    flow: &str,
    cmd: FlowModCommand,
) -> Result<(crate::client::Client, FlowMod)> {
    match flow_mod(flow, cmd) {
        Ok(fm) => Ok((connect(switch)?, fm)),
        Err(e) => {
            let mut c = connect(switch)?;
            let named = NameMap::from_switch(&mut c)?.substitute(flow);
            if named == flow {
                return Err(e);
            }
            let fm = flow_mod(&named, cmd)?;
            Ok((c, fm))
        }
    }
}

/// mod-flows: modifies the actions of the flows matching `flow`.
pub(super) fn mod_flows(
    connect: &Connect<'_>,
    switch: &str,
    flow: &str,
    opts: &Opts,
) -> Result<String> {
    let cmd = if opts.strict {
        FlowModCommand::ModifyStrict
    } else {
        FlowModCommand::Modify
    };
    let (mut c, fm) = named_flow_mod(connect, switch, flow, cmd)?;
    change(&mut c, &Message::FlowMod(fm), opts)
}

/// del-flows: deletes the flows matching `flows` (default: all, in every
/// table).
pub(super) fn del_flows(
    connect: &Connect<'_>,
    switch: &str,
    flows: Option<&str>,
    opts: &Opts,
) -> Result<String> {
    let text = flows.unwrap_or_default();
    let cmd = if opts.strict {
        FlowModCommand::DeleteStrict
    } else {
        FlowModCommand::Delete
    };
    let (mut c, mut fm) = named_flow_mod(connect, switch, text, cmd)?;
    if !has_key(text, "table") {
        fm.table_id = TABLE_ALL;
    }
    change(&mut c, &Message::FlowMod(fm), opts)
}

/// Whether the flow text sets `key=` at top level.
pub(super) fn has_key(text: &str, key: &str) -> bool {
    text.split([',', ' '])
        .any(|t| t.split_once('=').is_some_and(|(k, _)| k.trim() == key))
}

/// A FLOW_MOD from flow text, with `command`.
pub(crate) fn flow_mod(text: &str, command: FlowModCommand) -> Result<FlowMod> {
    let mut fm = parse_flow_mod(text).or_else(|e| usage("flow", e))?;
    fm.command = command;
    Ok(fm)
}

/// A dump-flows filter: table (default all), cookie/mask, out_port,
/// out_group and the match.
pub(crate) fn flow_filter(text: &str) -> Result<FlowStatsRequest> {
    let fm = parse_flow_mod(text).or_else(|e| usage("flows", e))?;
    Ok(FlowStatsRequest {
        table_id: if has_key(text, "table") {
            fm.table_id
        } else {
            TABLE_ALL
        },
        out_port: fm.out_port,
        out_group: fm.out_group,
        cookie: fm.cookie,
        cookie_mask: fm.cookie_mask,
        match_: fm.match_,
    })
}
