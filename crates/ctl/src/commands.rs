//! One function per command: connect, ask, format. Each returns the text
//! to print and the exit status (monitor prints as it goes), or an error
//! naming what failed.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ofp::msg::group::{GroupMod, GroupModCommand};
use ofp::msg::meter::{MeterMod, MeterModCommand};
use ofp::msg::multipart::{FlowStatsRequest, MultipartReplyBody as R, MultipartRequestBody as Q};
use ofp::msg::simple::PortMod;
use ofp::msg::sluice::{TraceRequest, SLUICE_EXPERIMENTER, TRACE_REPLY};
use ofp::port::{group_no, meter_no, port_no, NO_BUFFER, TABLE_ALL};
use ofp::text::{parse_actions, parse_flow_mod, parse_group_mod, parse_meter_mod, parse_port};
use ofp::{ErrorCode, FlowMod, FlowModCommand, Message, PacketOut};

use crate::client::{Client, ClientError};
use crate::target::Target;
use crate::{bundle, flows, frame, manage, print, Cmd, Opts};

/// What to print and the exit status.
#[derive(Debug)]
pub struct Output {
    pub text: String,
    /// 0, or 2 when diff-flows found differences (as ovs-ofctl).
    pub status: u8,
}

/// What a command failed on.
#[derive(Debug, thiserror::Error)]
pub enum CmdError {
    #[error("{0}")]
    Client(#[from] ClientError),
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Refused(String),
}

pub type Result<T> = std::result::Result<T, CmdError>;

fn usage<T>(what: &str, e: impl std::fmt::Display) -> Result<T> {
    Err(CmdError::Usage(format!("{what}: {e}")))
}

/// Runs one command.
pub fn run(
    cmd: Cmd,
    run_dir: &str,
    timeout: Duration,
    tls: Option<&tls::Tls>,
    opts: &Opts,
) -> Result<Output> {
    let connect = |switch: &str| -> Result<Client> {
        let t = Target::parse(switch, run_dir).map_err(CmdError::Usage)?;
        Ok(Client::connect(&t, timeout, tls)?)
    };
    if let Cmd::DiffFlows { source1, source2 } = &cmd {
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
        return Ok(Output {
            text,
            status: if differ { 2 } else { 0 },
        });
    }
    let text = run_text(cmd, &connect, opts)?;
    Ok(Output { text, status: 0 })
}

/// Whether `cmd` takes `--bundle`: the flow and group changes (as
/// ovs-ofctl's `--bundle`).
fn takes_bundle(cmd: &Cmd) -> bool {
    matches!(
        cmd,
        Cmd::AddFlow { .. }
            | Cmd::AddFlows { .. }
            | Cmd::ModFlows { .. }
            | Cmd::DelFlows { .. }
            | Cmd::ReplaceFlows { .. }
            | Cmd::AddGroup { .. }
            | Cmd::AddGroups { .. }
            | Cmd::ModGroup { .. }
            | Cmd::DelGroups { .. }
    )
}

fn run_text(cmd: Cmd, connect: &dyn Fn(&str) -> Result<Client>, opts: &Opts) -> Result<String> {
    if opts.bundle && !takes_bundle(&cmd) {
        return usage(
            "--bundle",
            "only add-flow, add-flows, mod-flows, del-flows, replace-flows, add-group, \
             add-groups, mod-group and del-groups take it",
        );
    }
    match cmd {
        Cmd::Show { switch } => show(&mut connect(&switch)?),
        Cmd::DumpDesc { switch } => {
            let mut c = connect(&switch)?;
            let parts = c.multipart(Q::Desc)?;
            let mut s = print::header("OFPST_DESC reply", c.last_xid());
            s.push('\n');
            for part in parts {
                if let R::Desc(d) = part.body {
                    s.push_str(&format!(
                        "Manufacturer: {}\nHardware: {}\nSoftware: {}\nSerial Num: {}\nDP Description: {}\n",
                        d.mfr_desc.as_str(),
                        d.hw_desc.as_str(),
                        d.sw_desc.as_str(),
                        d.serial_num.as_str(),
                        d.dp_desc.as_str()
                    ));
                }
            }
            Ok(s)
        }
        Cmd::DumpFlows { switch, flows } => {
            let filter = flows.unwrap_or_default();
            // A bad filter or sort field is reported before connecting.
            flow_filter(&filter)?;
            flows::dump(&mut connect(&switch)?, &filter, opts)
        }
        Cmd::DumpAggregate { switch, flows } => {
            let req = flow_filter(flows.as_deref().unwrap_or(""))?;
            let mut c = connect(&switch)?;
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
        Cmd::ReplaceFlows { switch, file } => {
            // The file is read (and every line checked) before connecting.
            flows::from_file(&file)?;
            flows::replace(&mut connect(&switch)?, &file, opts.bundle)
        }
        Cmd::DiffFlows { .. } => unreachable!("handled in run"),
        Cmd::AddFlow { switch, flow } => {
            let fm = flow_mod(&flow, FlowModCommand::Add)?;
            change(&mut connect(&switch)?, &Message::FlowMod(fm), opts)
        }
        Cmd::AddFlows { switch, file } => add_flows(&mut connect(&switch)?, &file, opts.bundle),
        Cmd::ModFlows { switch, flow } => {
            let cmd = if opts.strict {
                FlowModCommand::ModifyStrict
            } else {
                FlowModCommand::Modify
            };
            let fm = flow_mod(&flow, cmd)?;
            change(&mut connect(&switch)?, &Message::FlowMod(fm), opts)
        }
        Cmd::DelFlows { switch, flows } => {
            let text = flows.unwrap_or_default();
            let cmd = if opts.strict {
                FlowModCommand::DeleteStrict
            } else {
                FlowModCommand::Delete
            };
            let mut fm = flow_mod(&text, cmd)?;
            if !has_key(&text, "table") {
                fm.table_id = TABLE_ALL;
            }
            change(&mut connect(&switch)?, &Message::FlowMod(fm), opts)
        }
        Cmd::DumpPorts { switch, port } => {
            let port_no = match port {
                Some(p) => parse_port(&p).or_else(|e| usage("port", e))?,
                None => port_no::ANY,
            };
            let mut c = connect(&switch)?;
            let mut v = Vec::new();
            for part in c.multipart(Q::PortStats { port_no })? {
                if let R::PortStats(p) = part.body {
                    v.extend(p);
                }
            }
            let xid = c.last_xid();
            let names = if opts.names {
                flows::port_names(&mut c)?
            } else {
                ofp::text::Names::new()
            };
            Ok(print::port_stats(&v, xid, &names))
        }
        Cmd::QueueStats {
            switch,
            port,
            queue,
        } => {
            let port_no = match port.as_deref() {
                Some("ALL" | "all" | "any" | "ANY") | None => port_no::ANY,
                Some(p) => parse_port(p).or_else(|e| usage("port", e))?,
            };
            let queue_id = queue.unwrap_or(ofp::port::QUEUE_ALL);
            let mut c = connect(&switch)?;
            let mut v = Vec::new();
            for part in c.multipart(Q::Queue { port_no, queue_id })? {
                if let R::Queue(q) = part.body {
                    v.extend(q);
                }
            }
            Ok(print::queue_stats(&v, c.last_xid()))
        }
        Cmd::DumpPortsDesc { switch } => {
            let mut c = connect(&switch)?;
            let ports = port_descs(&mut c)?;
            let mut s = print::header("OFPST_PORT_DESC reply", c.last_xid());
            s.push('\n');
            for p in ports {
                s.push_str(&print::port_desc(&p));
            }
            Ok(s)
        }
        Cmd::ModPort {
            switch,
            port,
            action,
        } => mod_port(&mut connect(&switch)?, &port, &action),
        Cmd::DumpTables { switch } => {
            let mut c = connect(&switch)?;
            let mut v = Vec::new();
            for part in c.multipart(Q::Table)? {
                if let R::Table(t) = part.body {
                    v.extend(t);
                }
            }
            Ok(print::table_stats(&v, c.last_xid()))
        }
        Cmd::DumpGroups { switch, group } => {
            let id = group_id(group.as_deref())?;
            let mut c = connect(&switch)?;
            let mut v = Vec::new();
            for part in c.multipart(Q::GroupDesc)? {
                if let R::GroupDesc(g) = part.body {
                    v.extend(
                        g.into_iter()
                            .filter(|g| id == group_no::ALL || g.group_id == id),
                    );
                }
            }
            Ok(print::group_desc(&v, c.last_xid()))
        }
        Cmd::DumpGroupStats { switch, group } => {
            let group_id = group_id(group.as_deref())?;
            let mut c = connect(&switch)?;
            let mut v = Vec::new();
            for part in c.multipart(Q::Group { group_id })? {
                if let R::Group(g) = part.body {
                    v.extend(g);
                }
            }
            Ok(print::group_stats(&v, c.last_xid()))
        }
        Cmd::AddGroup { switch, group } => {
            let gm = group_mod(&group, GroupModCommand::Add)?;
            change(&mut connect(&switch)?, &Message::GroupMod(gm), opts)
        }
        Cmd::AddGroups { switch, file } => add_groups(&mut connect(&switch)?, &file, opts.bundle),
        Cmd::DumpGroupFeatures { switch } => {
            let mut c = connect(&switch)?;
            let parts = c.multipart(Q::GroupFeatures)?;
            let xid = c.last_xid();
            match parts.into_iter().find_map(|p| match p.body {
                R::GroupFeatures(g) => Some(g),
                _ => None,
            }) {
                Some(g) => Ok(print::group_features(&g, xid)),
                None => Err(ClientError::Unexpected("no GROUP_FEATURES reply".into()).into()),
            }
        }
        Cmd::MeterFeatures { switch } => {
            let mut c = connect(&switch)?;
            let parts = c.multipart(Q::MeterFeatures)?;
            let xid = c.last_xid();
            match parts.into_iter().find_map(|p| match p.body {
                R::MeterFeatures(m) => Some(m),
                _ => None,
            }) {
                Some(m) => Ok(print::meter_features(&m, xid)),
                None => Err(ClientError::Unexpected("no METER_FEATURES reply".into()).into()),
            }
        }
        Cmd::DumpTableFeatures { switch, table } => {
            let only = match table.as_deref() {
                None | Some("all") => None,
                Some(t) => Some(t.parse::<u8>().or_else(|_| {
                    usage(
                        "table",
                        format!("`{t}`: expected a table number (0-254) or all"),
                    )
                })?),
            };
            let mut c = connect(&switch)?;
            let parts = c.multipart(Q::TableFeatures(Vec::new()))?;
            let xid = c.last_xid();
            let mut v = Vec::new();
            for part in parts {
                if let R::TableFeatures(t) = part.body {
                    v.extend(
                        t.into_iter()
                            .filter(|t| only.is_none_or(|n| t.table_id == n)),
                    );
                }
            }
            Ok(crate::features::table_features(&v, xid))
        }
        Cmd::ModTable {
            switch,
            table,
            setting,
        } => {
            let tm = table_mod(&table, &setting)?;
            modify(&mut connect(&switch)?, &Message::TableMod(tm))
        }
        Cmd::QueueGetConfig { switch, port } => {
            let port = match port.as_deref() {
                None => port_no::ANY,
                Some(p) => parse_port(p).or_else(|e| usage("port", e))?,
            };
            let mut c = connect(&switch)?;
            match c.request(&Message::QueueGetConfigRequest { port })? {
                Message::QueueGetConfigReply(q) => Ok(print::queue_config(&q, c.last_xid())),
                m => Err(ClientError::Unexpected(format!("{:?}", m.msg_type())).into()),
            }
        }
        Cmd::ModGroup { switch, group } => {
            let gm = group_mod(&group, GroupModCommand::Modify)?;
            change(&mut connect(&switch)?, &Message::GroupMod(gm), opts)
        }
        Cmd::DelGroups { switch, group } => {
            let gm = GroupMod {
                command: GroupModCommand::Delete,
                group_type: ofp::msg::group::GroupType::All,
                group_id: group_id(group.as_deref())?,
                buckets: Vec::new(),
            };
            change(&mut connect(&switch)?, &Message::GroupMod(gm), opts)
        }
        Cmd::AddMeter { switch, meter } => {
            let mm = meter_mod(&meter, MeterModCommand::Add)?;
            modify(&mut connect(&switch)?, &Message::MeterMod(mm))
        }
        Cmd::ModMeter { switch, meter } => {
            let mm = meter_mod(&meter, MeterModCommand::Modify)?;
            modify(&mut connect(&switch)?, &Message::MeterMod(mm))
        }
        Cmd::DelMeters { switch, meter } => {
            let mm = MeterMod {
                command: MeterModCommand::Delete,
                flags: 0,
                meter_id: meter_id(meter.as_deref())?,
                bands: Vec::new(),
            };
            modify(&mut connect(&switch)?, &Message::MeterMod(mm))
        }
        Cmd::DumpMeters { switch, meter } => {
            let meter_id = meter_id(meter.as_deref())?;
            let mut c = connect(&switch)?;
            let mut v = Vec::new();
            for part in c.multipart(Q::MeterConfig { meter_id })? {
                if let R::MeterConfig(m) = part.body {
                    v.extend(m);
                }
            }
            Ok(print::meter_config(&v, c.last_xid()))
        }
        Cmd::MeterStats { switch, meter } => {
            let meter_id = meter_id(meter.as_deref())?;
            let mut c = connect(&switch)?;
            let mut v = Vec::new();
            for part in c.multipart(Q::Meter { meter_id })? {
                if let R::Meter(m) = part.body {
                    v.extend(m);
                }
            }
            Ok(print::meter_stats(&v, c.last_xid()))
        }
        Cmd::PacketOut {
            switch,
            in_port,
            actions,
            packet,
        } => {
            let in_port = parse_port(&in_port).or_else(|e| usage("in_port", e))?;
            let actions = parse_actions(&actions).or_else(|e| usage("actions", e))?;
            let frame = frame::parse(&packet).map_err(CmdError::Usage)?.frame;
            let po = PacketOut {
                buffer_id: NO_BUFFER,
                in_port,
                actions,
                data: Bytes::from(frame),
            };
            modify(&mut connect(&switch)?, &Message::PacketOut(po))
        }
        Cmd::Monitor {
            switch,
            count,
            duration,
        } => monitor(&mut connect(&switch)?, count, duration),
        Cmd::Trace { switch, args } => {
            let (port, packet) = match args.as_slice() {
                [p, pkt] => (Some(p.as_str()), pkt.as_str()),
                [pkt] => (None, pkt.as_str()),
                _ => return usage("trace", "expected [IN_PORT] PACKET"),
            };
            let d = frame::parse(packet).map_err(CmdError::Usage)?;
            let in_port = match (port, d.in_port) {
                (Some(p), _) => parse_port(p).or_else(|e| usage("in_port", e))?,
                (None, Some(p)) => p,
                (None, None) => return usage("trace", "give IN_PORT, or in_port= in the packet"),
            };
            trace(&mut connect(&switch)?, in_port, d.frame)
        }
        Cmd::AddPort {
            switch,
            iface,
            options,
        } => {
            let words = ["add-port".to_string(), iface]
                .into_iter()
                .chain(options)
                .collect();
            manage::command(&mut connect(&switch)?, words)
        }
        Cmd::DelPort { switch, port } => {
            manage::command(&mut connect(&switch)?, vec!["del-port".into(), port])
        }
        Cmd::FdbShow { switch } => manage::command(&mut connect(&switch)?, vec!["fdb-show".into()]),
        Cmd::FdbFlush { switch } => {
            manage::command(&mut connect(&switch)?, vec!["fdb-flush".into()])
        }
        Cmd::Vlog { switch, filter } => {
            manage::command(&mut connect(&switch)?, vec!["vlog".into(), filter])
        }
    }
}

/// Whether the flow text sets `key=` at top level.
fn has_key(text: &str, key: &str) -> bool {
    text.split([',', ' '])
        .any(|t| t.split_once('=').is_some_and(|(k, _)| k.trim() == key))
}

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

fn group_mod(text: &str, command: GroupModCommand) -> Result<GroupMod> {
    let mut g = parse_group_mod(text).or_else(|e| usage("group", e))?;
    g.command = command;
    Ok(g)
}

fn meter_mod(text: &str, command: MeterModCommand) -> Result<MeterMod> {
    let mut m = parse_meter_mod(text).or_else(|e| usage("meter", e))?;
    m.command = command;
    Ok(m)
}

/// `group_id=N`, `N` or nothing (all).
fn group_id(s: Option<&str>) -> Result<u32> {
    let Some(s) = s else {
        return Ok(group_no::ALL);
    };
    let v = s.strip_prefix("group_id=").unwrap_or(s);
    match v {
        "all" => Ok(group_no::ALL),
        _ => v
            .parse()
            .or_else(|_| usage("group", format!("`{s}`: expected group_id=N or all"))),
    }
}

/// `meter=N`, `N` or nothing (all).
fn meter_id(s: Option<&str>) -> Result<u32> {
    let Some(s) = s else {
        return Ok(meter_no::ALL);
    };
    let v = s.strip_prefix("meter=").unwrap_or(s);
    match v {
        "all" => Ok(meter_no::ALL),
        _ => v
            .parse()
            .or_else(|_| usage("meter", format!("`{s}`: expected meter=N or all"))),
    }
}

/// The refusals of a batch of messages from `file`, each named by the
/// line its message came from (`line_of(xid)`: None if unknown, 0 for a
/// message no line asked for, a deletion `replace-flows` made): "N of
/// TOTAL WHAT refused:" and one line per refusal.
pub(crate) fn refused_lines(
    file: &str,
    errors: &[(u32, ErrorCode, bytes::Bytes)],
    total: usize,
    what: &str,
    line_of: impl Fn(u32) -> Option<usize>,
) -> CmdError {
    let mut msg = String::new();
    for (xid, code, _) in errors {
        msg.push_str(&match line_of(*xid) {
            Some(0) => format!("deleting a flow: the switch answered {code}\n"),
            Some(line) => format!("{file}:{line}: the switch answered {code}\n"),
            None => format!("xid {xid}: the switch answered {code}\n"),
        });
    }
    CmdError::Refused(format!(
        "{} of {total} {what} refused:\n{}",
        errors.len(),
        msg.trim_end()
    ))
}

fn refused(what: &str, code: ErrorCode) -> CmdError {
    CmdError::Refused(format!("{what}: the switch answered {code}"))
}

/// One flow or group change: alone ([`modify`]) or, with `--bundle`, as
/// a bundle of one.
fn change(c: &mut Client, msg: &Message, opts: &Opts) -> Result<String> {
    if !opts.bundle {
        return modify(c, msg);
    }
    let what = format!("{:?}", msg.msg_type());
    let mut batch = bundle::Batch::new(c);
    if !batch.push(msg) {
        return usage(&what, "too long for a bundle");
    }
    bundle::run(c, batch, "changes", &|_| what.clone())
}

/// Sends one modification, then a barrier: the error, if any, is printed
/// by name.
fn modify(c: &mut Client, msg: &Message) -> Result<String> {
    c.send(msg);
    c.barrier()?;
    match c.take_errors().into_iter().next() {
        Some((_, code, _)) => Err(refused(&format!("{:?}", msg.msg_type()), code)),
        None => Ok(String::new()),
    }
}

pub(crate) fn port_descs(c: &mut Client) -> Result<Vec<ofp::port::PortDesc>> {
    let mut v = Vec::new();
    for part in c.multipart(Q::PortDesc)? {
        if let R::PortDesc(p) = part.body {
            v.extend(p);
        }
    }
    Ok(v)
}

fn show(c: &mut Client) -> Result<String> {
    let Message::FeaturesReply(f) = c.request(&Message::FeaturesRequest)? else {
        return Err(ClientError::Unexpected("not a FEATURES_REPLY".into()).into());
    };
    let features_xid = c.last_xid();
    let ports = port_descs(c)?;
    let ports_xid = c.last_xid();
    let Message::GetConfigReply(cfg) = c.request(&Message::GetConfigRequest)? else {
        return Err(ClientError::Unexpected("not a GET_CONFIG_REPLY".into()).into());
    };
    Ok(print::features(
        &f,
        &ports,
        &cfg,
        [features_xid, ports_xid, c.last_xid()],
    ))
}

/// mod-table's TABLE and SETTING: the OpenFlow 1.1/1.2 names of the
/// table-miss bits (controller 0, continue 1, drop 2), which OpenFlow 1.3
/// keeps only as deprecated bits, or the config as a number.
fn table_mod(table: &str, setting: &str) -> Result<ofp::msg::simple::TableMod> {
    let table_id = match table {
        "all" => ofp::port::TABLE_ALL,
        t => match t.parse::<u8>() {
            Ok(n) if n != ofp::port::TABLE_ALL => n,
            _ => {
                return usage(
                    "table",
                    format!("`{t}`: expected a table number (0-254) or all"),
                )
            }
        },
    };
    let config = match setting {
        "controller" => 0,
        "continue" => 1,
        "drop" => 2,
        n => ofp::text::parse_num::<u32>(n, "controller, continue, drop or a number")
            .or_else(|e| usage("setting", e))?,
    };
    Ok(ofp::msg::simple::TableMod { table_id, config })
}

/// add-groups: every line is parsed before anything is sent; then all
/// group-mods go out, then one barrier (or, with `--bundle`, as one
/// bundle); refusals are named by line.
fn add_groups(c: &mut Client, file: &str, in_bundle: bool) -> Result<String> {
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

fn mod_port(c: &mut Client, port: &str, action: &str) -> Result<String> {
    use ofp::port::port_config as pc;
    const NO_FLOOD: u32 = 1 << 4;
    let (bit, set) = match action {
        "up" => (pc::PORT_DOWN, false),
        "down" => (pc::PORT_DOWN, true),
        "flood" => (NO_FLOOD, false),
        "no-flood" => (NO_FLOOD, true),
        "forward" => (pc::NO_FWD, false),
        "no-forward" => (pc::NO_FWD, true),
        "packet-in" => (pc::NO_PACKET_IN, false),
        "no-packet-in" => (pc::NO_PACKET_IN, true),
        "receive" => (pc::NO_RECV, false),
        "no-receive" => (pc::NO_RECV, true),
        _ => {
            return usage(
                "mod-port",
                format!("`{action}`: expected up, down, flood, no-flood, forward, no-forward, packet-in, no-packet-in, receive or no-receive"),
            )
        }
    };
    let ports = port_descs(c)?;
    let p = ports
        .iter()
        .find(|p| p.name.as_str() == port || ofp::text::format_port(p.port_no) == port)
        .ok_or_else(|| CmdError::Usage(format!("mod-port: `{port}`: no such port")))?;
    let pm = PortMod {
        port_no: p.port_no,
        hw_addr: p.hw_addr,
        config: if set { bit } else { 0 },
        mask: bit,
        advertise: 0,
    };
    modify(c, &Message::PortMod(pm))
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
fn add_flows(c: &mut Client, file: &str, in_bundle: bool) -> Result<String> {
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
    let mut batch = in_bundle.then(|| bundle::Batch::new(c));
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| CmdError::Usage(format!("{file}: {e}")))?;
        let text = line.split('#').next().unwrap_or("").trim();
        if text.is_empty() {
            continue;
        }
        let fm =
            file_flow_mod(text).map_err(|e| CmdError::Usage(format!("{file}:{}: {e}", i + 1)))?;
        let m = Message::FlowMod(fm);
        match &mut batch {
            Some(b) => {
                if !b.push(&m) {
                    return usage(&format!("{file}:{}", i + 1), "too long for a bundle");
                }
            }
            None => m.encode(first_xid.wrapping_add(lines.len() as u32), &mut wire),
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

fn monitor(c: &mut Client, count: Option<u64>, duration: Option<f64>) -> Result<String> {
    let deadline = duration.map(|d| Instant::now() + Duration::from_secs_f64(d.max(0.0)));
    let mut seen = 0u64;
    let stdout = std::io::stdout();
    while count.is_none_or(|n| seen < n) {
        let wait = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if wait.is_some_and(|w| w.is_zero()) {
            break;
        }
        let Some((_, m)) = c.next_async(wait)? else {
            break;
        };
        let text = match &m {
            Message::PacketIn(p) => print::packet_in(p),
            Message::FlowRemoved(f) => print::flow_removed(f),
            Message::PortStatus(p) => print::port_status(p),
            _ => continue,
        };
        seen += 1;
        let mut out = stdout.lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
    Ok(String::new())
}

fn trace(c: &mut Client, in_port: u32, frame: Vec<u8>) -> Result<String> {
    let req = TraceRequest {
        in_port,
        frame: Bytes::from(frame),
    };
    match c.request(&req.message()) {
        Ok(Message::Experimenter(e))
            if e.experimenter == SLUICE_EXPERIMENTER && e.exp_type == TRACE_REPLY =>
        {
            Ok(String::from_utf8_lossy(&e.data).into_owned())
        }
        Ok(m) => Err(ClientError::Unexpected(format!("{:?}", m.msg_type())).into()),
        Err(ClientError::Refused(code)) => Err(CmdError::Refused(format!(
            "trace: the switch answered {code} (trace is a sluice extension)"
        ))),
        Err(e) => Err(e.into()),
    }
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

    #[test]
    fn bundle_is_taken_by_flow_and_group_changes_only() {
        let opts = Opts {
            bundle: true,
            ..Default::default()
        };
        let no_switch = |_: &str| -> Result<Client> { panic!("connected") };
        for cmd in [
            Cmd::DumpFlows {
                switch: "br0".into(),
                flows: None,
            },
            Cmd::AddMeter {
                switch: "br0".into(),
                meter: "meter=1,kbps,bands=type=drop,rate=1".into(),
            },
        ] {
            match run_text(cmd, &no_switch, &opts) {
                Err(CmdError::Usage(e)) => assert!(e.starts_with("--bundle: only add-flow"), "{e}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(takes_bundle(&Cmd::ReplaceFlows {
            switch: "br0".into(),
            file: "f".into()
        }));
        assert!(takes_bundle(&Cmd::DelGroups {
            switch: "br0".into(),
            group: None
        }));
    }
}
