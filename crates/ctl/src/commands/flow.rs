//! The flow commands: dump-flows, dump-aggregate, add-flow, mod-flows,
//! del-flows, replace-flows and diff-flows, and the flow text they read
//! ([`flow_mod`], [`flow_filter`]).
//!
//! Contract: the flow, filter or file is read and checked before
//! connecting. add-flow, mod-flows and del-flows send one FLOW_MOD as a
//! change (`changes`); add-flow and mod-flows by the protocol picked per
//! flow (`send_flow_change`: OpenFlow 1.0 with NXM for a flow only 1.0
//! carries, when `-O` allows it); `--strict` makes mod-flows and
//! del-flows strict, and a delete without `table=` covers every table. The work on many flows at
//! once (dumping with its options, flow files, comparing) is
//! `crate::flows`'s.

use ofp::msg::multipart::{FlowStatsRequest, MultipartReplyBody as R, MultipartRequestBody as Q};
use ofp::msg::nx_flow;
use ofp::port::TABLE_ALL;
use ofp::text::{parse_flow_mod, parse_flow_mod_noting};
use ofp::{FlowMod, FlowModCommand, Message, Version, Versions};

use super::changes::{change, modify_named};
use super::parse_flows::{pick_format, Format, NameMap};
use super::{usage, Connect, ConnectAs, Output, Result};
use crate::client::{Client, ClientError};
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

/// add-flow: adds one flow, by the protocol [`send_flow_change`] picks.
pub(super) fn add_flow(
    connect: &Connect<'_>,
    connect_as: &ConnectAs<'_>,
    switch: &str,
    flow: &str,
    opts: &Opts,
) -> Result<String> {
    let (c, fm) = named_flow_mod(connect, switch, flow, FlowModCommand::Add)?;
    send_flow_change(c, connect_as, switch, fm, opts)
}

/// Sends an add or modify as ovs-ofctl picks its protocol per flow:
/// OpenFlow 1.3 (the connection `-O` asks for) unless the switch would
/// refuse the flow there and OpenFlow 1.0 with NXM carries it (a
/// `strip_vlan` with no VLAN matched, which Open vSwitch takes from 1.0
/// peers only) and `-O` allows OpenFlow10 ([`Opts::of10_allowed`]; not
/// with `--bundle`, which 1.0 lacks). Then a new connection offers
/// OpenFlow10 alone and sends NXT_SET_FLOW_FORMAT(nxm), with a table
/// NXT_FLOW_MOD_TABLE_ID, and the NXT_FLOW_MOD, as plain ovs-ofctl does.
fn send_flow_change(
    c: Option<Client>,
    connect_as: &ConnectAs<'_>,
    switch: &str,
    fm: FlowMod,
    opts: &Opts,
) -> Result<String> {
    let of10 = opts.of10_allowed() && !opts.bundle;
    if of10 && pick_format(&fm, true) == Ok(Format::Nxm10) {
        drop(c);
        let mut c = connect_as(switch, Versions::only(Version::V1_0))?;
        let format = nx_flow::set_flow_format(nx_flow::FlowFormat::Nxm);
        let table_id = nx_flow::flow_mod_table_id(true);
        let table_named = fm.table_id != 0 && fm.table_id != TABLE_ALL;
        let flow_mod = nx_flow::flow_mod(&fm, table_named);
        let mut msgs = vec![&format];
        if table_named {
            msgs.push(&table_id);
        }
        msgs.push(&flow_mod);
        return modify_named(&mut c, &msgs, "NXT_FLOW_MOD");
    }
    let mut c = match c {
        Some(c) => c,
        None => connect_as(switch, opts.versions)?,
    };
    change(&mut c, &Message::FlowMod(fm), opts)
}

/// A FLOW_MOD from flow text that may name ports and tables
/// (`in_port=tap0`, `output:"vm 1"`, `table=Classifier`,
/// `resubmit(,Output)`), and the connection opened to read the names:
/// text that does not parse as it is is tried again with the switch's
/// names put in ([`NameMap::from_switch`]), as ovs-ofctl resolves names.
fn named_flow_mod(
    connect: &Connect<'_>,
    switch: &str,
    flow: &str,
    cmd: FlowModCommand,
) -> Result<(Option<Client>, FlowMod)> {
    match flow_mod(flow, cmd) {
        Ok(fm) => Ok((None, fm)),
        Err(e) => {
            let mut c = connect(switch)?;
            let named = NameMap::from_switch(&mut c)?.substitute(flow);
            if named == flow {
                return Err(e);
            }
            let fm = flow_mod(&named, cmd)?;
            Ok((Some(c), fm))
        }
    }
}

/// mod-flows: modifies the actions of the flows matching `flow`, by the
/// protocol [`send_flow_change`] picks.
pub(super) fn mod_flows(
    connect: &Connect<'_>,
    connect_as: &ConnectAs<'_>,
    switch: &str,
    flow: &str,
    opts: &Opts,
) -> Result<String> {
    let cmd = if opts.strict {
        FlowModCommand::ModifyStrict
    } else {
        FlowModCommand::Modify
    };
    let (c, fm) = named_flow_mod(connect, switch, flow, cmd)?;
    send_flow_change(c, connect_as, switch, fm, opts)
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
    let (c, mut fm) = named_flow_mod(connect, switch, text, cmd)?;
    if !has_key(text, "table") {
        fm.table_id = TABLE_ALL;
    }
    let mut c = match c {
        Some(c) => c,
        None => connect(switch)?,
    };
    change(&mut c, &Message::FlowMod(fm), opts)
}

/// Whether the flow text sets `key=` at top level.
pub(super) fn has_key(text: &str, key: &str) -> bool {
    text.split([',', ' '])
        .any(|t| t.split_once('=').is_some_and(|(k, _)| k.trim() == key))
}

/// A FLOW_MOD from flow text, with `command`. Fields the match lacks the
/// prerequisites of are left out, as ovs-ofctl leaves them out, with a
/// warning on stderr naming them (ovs-ofctl logs "normalization changed
/// ofp_match").
pub(crate) fn flow_mod(text: &str, command: FlowModCommand) -> Result<FlowMod> {
    let (mut fm, dropped) = parse_flow_mod_noting(text).or_else(|e| usage("flow", e))?;
    if !dropped.is_empty() {
        eprintln!(
            "sluice-ctl: the match leaves out {}: no prerequisite for it in `{text}` (as ovs-ofctl normalizes it)",
            dropped.join(" ")
        );
    }
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
