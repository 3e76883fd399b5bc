//! One function per command: connect, ask, format. Each returns the text
//! to print and the exit status (monitor prints as it goes), or an error
//! naming what failed.
//!
//! [`run`] is the entry point; [`run_text`] is the dispatch, which only
//! picks the function for the command. The functions live in a module per
//! job:
//! - `flow`: dump-flows, dump-aggregate, add-flow, mod-flows, del-flows,
//!   replace-flows, diff-flows, and the flow text they read;
//! - `file_batches`: add-flows and add-groups, a file of changes sent as one
//!   batch (or one bundle);
//! - `group_meter`: the group and meter commands;
//! - `port_table`: the port, queue and table commands;
//! - `switch_desc`: show and dump-desc;
//! - `packets`: packet-out, monitor and trace;
//! - `changes`: how a change is sent and how its refusal is reported;
//! - `parse_flows`: parse-flows, a flow file checked offline (no switch);
//! - `offline_trace`: offline-trace, packets through a pipeline built from
//!   flow text in this process (no switch).
//!
//! The management commands (add-port, del-port, fdb-show, fdb-flush, vlog)
//! are `crate::manage`'s; `ct` checks the connection tracker's (dump-conntrack,
//! flush-conntrack, ct-*) before they go the same way.
//!
//! Contract shared by the command functions: one whose arguments can be
//! checked without the switch takes the connector ([`Connect`]) and connects
//! only once they are good (a typo opens no connection and is reported
//! first); one that needs the switch to check them is given the connection.
//! Only flow and group changes take `--bundle`; every other command refuses
//! it before connecting (diff-flows, which changes nothing, ignores it).

mod changes;
mod ct;
mod file_batches;
mod flow;
mod group_meter;
mod offline_trace;
mod packets;
mod parse_flows;
mod port_table;
mod switch_desc;

use std::time::Duration;

use crate::client::{Client, ClientError};
use crate::target::Target;
use crate::{manage, Cmd, Opts};
use file_batches::{add_flows, add_groups};
use flow::{add_flow, del_flows, dump_aggregate, dump_flows, mod_flows, replace_flows};
use group_meter::{
    add_group, add_meter, bucket_command, del_groups, del_meters, dump_group_features,
    dump_group_stats, dump_groups, dump_meters, meter_features, meter_stats, mod_group, mod_meter,
};
use packets::{monitor, packet_out, trace};
use port_table::{
    dump_ports, dump_ports_desc, dump_table_features, dump_tables, mod_port, mod_table,
    queue_get_config, queue_stats,
};
use switch_desc::{dump_desc, show};

// Shared with the modules beside this one (flows, bundle, manage).
pub(crate) use changes::refused_lines;
pub(crate) use flow::{flow_filter, flow_mod};
pub(crate) use port_table::port_descs;

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

/// Opens a connection to the switch a command names (a bridge name,
/// `unix:PATH`, `tcp:HOST:PORT` or `tls:HOST:PORT`).
type Connect<'a> = dyn Fn(&str) -> Result<Client> + 'a;

/// [`Connect`], offering other versions than `-O`'s (a flow only
/// OpenFlow 1.0 carries).
type ConnectAs<'a> = dyn Fn(&str, ofp::Versions) -> Result<Client> + 'a;

/// A usage error: "WHAT: E".
fn usage<T>(what: &str, e: impl std::fmt::Display) -> Result<T> {
    Err(CmdError::Usage(format!("{what}: {e}")))
}

/// Runs one command.
pub fn run(
    cmd: Cmd,
    run_dirs: &[std::path::PathBuf],
    timeout: Duration,
    tls: Option<&tls::Tls>,
    opts: &Opts,
) -> Result<Output> {
    let connect_as = |switch: &str, versions: ofp::Versions| -> Result<Client> {
        let t = Target::parse(switch, run_dirs).map_err(CmdError::Usage)?;
        Ok(Client::connect(&t, timeout, tls, versions)?)
    };
    let connect = |switch: &str| connect_as(switch, opts.versions);
    // diff-flows alone has an exit status of its own (and two sources).
    if let Cmd::DiffFlows { source1, source2 } = &cmd {
        return flow::diff_flows(&connect, source1, source2);
    }
    // parse-flows needs no switch and has an exit status of its own.
    if let Cmd::ParseFlows { file, name_map } = &cmd {
        check_bundle(&cmd, opts)?;
        return parse_flows::parse_flows(file, name_map.as_deref(), opts.of10_allowed());
    }
    // So does offline-trace.
    if let Cmd::OfflineTrace {
        files,
        ports,
        name_map,
        steps,
        normal,
    } = &cmd
    {
        check_bundle(&cmd, opts)?;
        return offline_trace::offline_trace(files, ports, name_map.as_deref(), *steps, *normal);
    }
    let text = run_text(cmd, &connect, &connect_as, opts)?;
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
            | Cmd::InsertBuckets { .. }
            | Cmd::RemoveBuckets { .. }
            | Cmd::DelGroups { .. }
    )
}

/// Refuses `--bundle` for a command that does not take it.
fn check_bundle(cmd: &Cmd, opts: &Opts) -> Result<()> {
    if opts.bundle && !takes_bundle(cmd) {
        return usage(
            "--bundle",
            "only add-flow, add-flows, mod-flows, del-flows, replace-flows, add-group, \
             add-groups, mod-group, insert-buckets, remove-buckets and del-groups take it",
        );
    }
    Ok(())
}

/// Runs every command but diff-flows: refuses `--bundle` where it does not
/// apply, then hands the command to its function.
fn run_text(
    cmd: Cmd,
    connect: &Connect<'_>,
    connect_as: &ConnectAs<'_>,
    opts: &Opts,
) -> Result<String> {
    check_bundle(&cmd, opts)?;
    if let Some(checked) = ct::words(&cmd) {
        let (switch, words) = checked?;
        return management(connect, &switch, words);
    }
    match cmd {
        Cmd::Show { switch } => show(&mut connect(&switch)?),
        Cmd::DumpDesc { switch } => dump_desc(&mut connect(&switch)?),
        Cmd::DumpFlows { switch, flows } => dump_flows(connect, &switch, flows.as_deref(), opts),
        Cmd::DumpAggregate { switch, flows } => dump_aggregate(connect, &switch, flows.as_deref()),
        Cmd::AddFlow { switch, flow } => add_flow(connect, connect_as, &switch, &flow, opts),
        Cmd::AddFlows { switch, file } => add_flows(&mut connect(&switch)?, &file, opts.bundle),
        Cmd::ModFlows { switch, flow } => mod_flows(connect, connect_as, &switch, &flow, opts),
        Cmd::DelFlows { switch, flows } => del_flows(connect, &switch, flows.as_deref(), opts),
        Cmd::ReplaceFlows { switch, file } => replace_flows(connect, &switch, &file, opts),
        Cmd::DiffFlows { .. } | Cmd::ParseFlows { .. } | Cmd::OfflineTrace { .. } => {
            unreachable!("handled in run")
        }
        Cmd::DumpConntrack { .. }
        | Cmd::FlushConntrack { .. }
        | Cmd::CtSetLimits { .. }
        | Cmd::CtGetLimits { .. }
        | Cmd::CtDelLimits { .. }
        | Cmd::CtSetMaxconns { .. }
        | Cmd::CtGetMaxconns { .. }
        | Cmd::CtGetNconns { .. }
        | Cmd::CtSetTimeouts { .. }
        | Cmd::CtGetTimeouts { .. } => unreachable!("handled above (ct::words)"),
        Cmd::DumpGroups { switch, group } => dump_groups(connect, &switch, group.as_deref()),
        Cmd::DumpGroupStats { switch, group } => {
            dump_group_stats(connect, &switch, group.as_deref())
        }
        Cmd::DumpGroupFeatures { switch } => dump_group_features(&mut connect(&switch)?),
        Cmd::AddGroup { switch, group } => add_group(connect, &switch, &group, opts),
        Cmd::AddGroups { switch, file } => add_groups(&mut connect(&switch)?, &file, opts.bundle),
        Cmd::ModGroup { switch, group } => mod_group(connect, &switch, &group, opts),
        Cmd::InsertBuckets { switch, group } => bucket_command(
            connect,
            &switch,
            &group,
            ofp::msg::group::GroupModCommand::InsertBucket,
            opts,
        ),
        Cmd::RemoveBuckets { switch, group } => bucket_command(
            connect,
            &switch,
            &group,
            ofp::msg::group::GroupModCommand::RemoveBucket,
            opts,
        ),
        Cmd::DelGroups { switch, group } => del_groups(connect, &switch, group.as_deref(), opts),
        Cmd::AddMeter { switch, meter } => add_meter(connect, &switch, &meter),
        Cmd::ModMeter { switch, meter } => mod_meter(connect, &switch, &meter),
        Cmd::DelMeters { switch, meter } => del_meters(connect, &switch, meter.as_deref()),
        Cmd::DumpMeters { switch, meter } => dump_meters(connect, &switch, meter.as_deref()),
        Cmd::MeterStats { switch, meter } => meter_stats(connect, &switch, meter.as_deref()),
        Cmd::MeterFeatures { switch } => meter_features(&mut connect(&switch)?),
        Cmd::DumpPorts { switch, port } => dump_ports(connect, &switch, port.as_deref(), opts),
        Cmd::DumpPortsDesc { switch } => dump_ports_desc(&mut connect(&switch)?),
        Cmd::ModPort {
            switch,
            port,
            action,
        } => mod_port(&mut connect(&switch)?, &port, &action),
        Cmd::QueueStats {
            switch,
            port,
            queue,
        } => queue_stats(connect, &switch, port.as_deref(), queue),
        Cmd::QueueGetConfig { switch, port } => queue_get_config(connect, &switch, port.as_deref()),
        Cmd::DumpTables { switch } => dump_tables(&mut connect(&switch)?),
        Cmd::DumpTableFeatures { switch, table } => {
            dump_table_features(connect, &switch, table.as_deref())
        }
        Cmd::ModTable {
            switch,
            table,
            setting,
        } => mod_table(connect, &switch, &table, &setting),
        Cmd::PacketOut {
            switch,
            in_port,
            actions,
            packet,
        } => packet_out(connect, &switch, &in_port, &actions, &packet),
        Cmd::Monitor {
            switch,
            packet_in_format,
            count,
            duration,
        } => {
            let format = match packet_in_format.as_deref() {
                None => None,
                Some(f) => Some(ofp::msg::nxt::PacketInFormat::parse(f).ok_or_else(|| {
                    CmdError::Usage(format!(
                        "{f}: not a packet-in format (standard, nxt_packet_in, nxt_packet_in2)"
                    ))
                })?),
            };
            monitor(&mut connect(&switch)?, format, count, duration)
        }
        Cmd::Trace { switch, args } => trace(connect, &switch, &args),
        Cmd::AddPort {
            switch,
            iface,
            options,
        } => {
            let words = [vec!["add-port".into(), iface], options].concat();
            management(connect, &switch, words)
        }
        Cmd::DelPort { switch, port } => {
            management(connect, &switch, vec!["del-port".into(), port])
        }
        Cmd::FdbShow { switch } => management(connect, &switch, vec!["fdb-show".into()]),
        Cmd::FdbFlush { switch } => management(connect, &switch, vec!["fdb-flush".into()]),
        Cmd::Vlog { switch, filter } => management(connect, &switch, vec!["vlog".into(), filter]),
    }
}

/// A management command (`crate::manage`): `words` as the switch takes them.
fn management(connect: &Connect<'_>, switch: &str, words: Vec<String>) -> Result<String> {
    manage::command(&mut connect(switch)?, words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_is_taken_by_flow_and_group_changes_only() {
        let opts = Opts {
            bundle: true,
            ..Default::default()
        };
        let no_switch = |_: &str| -> Result<Client> { panic!("connected") };
        let no_switch_as = |_: &str, _| -> Result<Client> { panic!("connected") };
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
            match run_text(cmd, &no_switch, &no_switch_as, &opts) {
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
