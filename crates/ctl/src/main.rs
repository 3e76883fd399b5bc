//! # sluice-ctl: operate an OpenFlow 1.3 switch from the command line
//!
//! Shaped after ovs-ofctl: `sluice-ctl COMMAND SWITCH [ARGS]`, where SWITCH
//! is a bridge name (its management socket `/run/sluice/BRIDGE.mgmt`),
//! `unix:PATH` or `tcp:HOST:PORT`. Flows, groups and meters are written in
//! the protocol crate's ovs-ofctl syntax; output reads like ovs-ofctl's;
//! errors from the switch are printed with their spec names and the exit
//! status is 1. It speaks plain OpenFlow 1.3, so it drives Open vSwitch too
//! (except `trace`, which is sluice's experimenter message).

mod client;
mod commands;
mod features;
mod flows;
mod frame;
mod print;
mod target;

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "sluice-ctl",
    version,
    about = "Operate a sluice (or any OpenFlow 1.3) switch, the ovs-ofctl way"
)]
struct Cli {
    /// OpenFlow versions to offer, as ovs-ofctl's -O (OpenFlow13 is the
    /// only one sluice-ctl speaks; a list must include it).
    #[arg(short = 'O', long, global = true, value_name = "VERSIONS")]
    protocols: Option<String>,
    /// Seconds to wait for the switch to answer.
    #[arg(long, default_value_t = 10.0, global = true)]
    timeout: f64,
    /// Where bridge management sockets live (the daemon's --run-dir).
    #[arg(long, default_value = target::RUN_DIR, global = true)]
    run_dir: String,
    /// TLS (tls:HOST:PORT targets): our private key, PEM
    #[arg(short = 'p', long, global = true, value_name = "FILE")]
    private_key: Option<std::path::PathBuf>,
    /// TLS: our certificate, PEM
    #[arg(short = 'c', long, global = true, value_name = "FILE")]
    certificate: Option<std::path::PathBuf>,
    /// TLS: the CA certificate the switch's certificate must be signed by, PEM
    #[arg(short = 'C', long, global = true, value_name = "FILE")]
    ca_cert: Option<std::path::PathBuf>,
    /// mod-flows, del-flows: only the flow with exactly this match and
    /// priority.
    #[arg(long, global = true)]
    strict: bool,
    /// Print port names instead of numbers (from the switch's port
    /// descriptions).
    #[arg(long, global = true)]
    names: bool,
    /// Print port numbers (the default).
    #[arg(long, global = true)]
    no_names: bool,
    /// dump-flows: sort by FIELD ascending (priority when no FIELD);
    /// may be given several times.
    #[arg(long, global = true, value_name = "FIELD", num_args = 0..=1,
          require_equals = true, default_missing_value = "priority")]
    sort: Vec<String>,
    /// dump-flows: sort by FIELD descending (priority when no FIELD).
    #[arg(long, global = true, value_name = "FIELD", num_args = 0..=1,
          require_equals = true, default_missing_value = "priority")]
    rsort: Vec<String>,
    /// dump-flows, diff-flows: leave out the statistics (and the reply
    /// header, as ovs-ofctl).
    #[arg(long, global = true)]
    no_stats: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

/// How replies are printed (the options that shape output).
#[derive(Debug, Clone, Default)]
pub struct Opts {
    pub strict: bool,
    pub names: bool,
    pub no_stats: bool,
    /// Sort criteria in order: the field (`priority` or a match field)
    /// and whether descending.
    pub sort: Vec<(String, bool)>,
}

/// Checks `-O`/`--protocols`: a comma-separated list of OpenFlow version
/// names that includes OpenFlow13 (the version is then negotiated as 1.3,
/// as ovs-ofctl would with a 1.3 switch).
fn check_protocols(s: &str) -> Result<(), String> {
    const KNOWN: &[&str] = &[
        "OpenFlow10",
        "OpenFlow11",
        "OpenFlow12",
        "OpenFlow13",
        "OpenFlow14",
        "OpenFlow15",
    ];
    let mut has13 = false;
    for v in s.split(',').map(str::trim) {
        if !KNOWN.iter().any(|k| k.eq_ignore_ascii_case(v)) {
            return Err(format!(
                "-O/--protocols: `{v}`: expected an OpenFlow version name like OpenFlow13"
            ));
        }
        has13 |= v.eq_ignore_ascii_case("OpenFlow13");
    }
    if !has13 {
        return Err(format!(
            "-O/--protocols: `{s}`: sluice-ctl speaks OpenFlow13 only; give -O OpenFlow13"
        ));
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Features, ports and configuration.
    Show { switch: String },
    /// The switch's description (manufacturer, software, datapath).
    DumpDesc { switch: String },
    /// Flows matching FLOWS (default: every flow of every table).
    DumpFlows {
        switch: String,
        flows: Option<String>,
    },
    /// Packet, byte and flow counts summed over the flows matching FLOWS.
    DumpAggregate {
        switch: String,
        flows: Option<String>,
    },
    /// Adds one flow.
    AddFlow { switch: String, flow: String },
    /// Adds the flows of FILE ("-": standard input), one per line; `#`
    /// starts a comment. All are sent, then one barrier.
    AddFlows { switch: String, file: String },
    /// Makes the switch's flows those of FILE: deletes the flows FILE does
    /// not have, adds those it has that differ (actions, cookie, timeouts)
    /// or are missing, leaves equal ones (and their counters) alone.
    ReplaceFlows { switch: String, file: String },
    /// Compares the flows of two sources (each a flow file or a switch):
    /// `-flow` for one only in the first, `+flow` for one only in the
    /// second, both lines when they differ. Exits 2 when they differ.
    DiffFlows { source1: String, source2: String },
    /// Modifies the actions of the flows matching FLOW.
    ModFlows { switch: String, flow: String },
    /// Deletes the flows matching FLOWS (default: all).
    DelFlows {
        switch: String,
        flows: Option<String>,
    },
    /// Port counters (all ports, or PORT).
    DumpPorts {
        switch: String,
        port: Option<String>,
    },
    /// Port descriptions.
    DumpPortsDesc { switch: String },
    /// Egress queue counters (all ports or PORT; all queues or QUEUE).
    QueueStats {
        switch: String,
        port: Option<String>,
        queue: Option<u32>,
    },
    /// Sets a port's configuration: up, down, flood, no-flood, forward,
    /// no-forward, packet-in, no-packet-in.
    ModPort {
        switch: String,
        port: String,
        action: String,
    },
    /// Table counters.
    DumpTables { switch: String },
    /// Groups, in add-group syntax (all, or group_id=N).
    DumpGroups {
        switch: String,
        group: Option<String>,
    },
    /// Group counters.
    DumpGroupStats {
        switch: String,
        group: Option<String>,
    },
    /// Adds a group.
    AddGroup { switch: String, group: String },
    /// Adds the groups of FILE ("-": standard input), one per line.
    AddGroups { switch: String, file: String },
    /// What the switch's groups support (types, capabilities, actions).
    DumpGroupFeatures { switch: String },
    /// Replaces a group's type and buckets.
    ModGroup { switch: String, group: String },
    /// Deletes groups (default: all).
    DelGroups {
        switch: String,
        group: Option<String>,
    },
    /// Adds a meter.
    AddMeter { switch: String, meter: String },
    /// Replaces a meter's bands.
    ModMeter { switch: String, meter: String },
    /// Deletes meters (default: all).
    DelMeters {
        switch: String,
        meter: Option<String>,
    },
    /// Meters, in add-meter syntax.
    DumpMeters {
        switch: String,
        meter: Option<String>,
    },
    /// What the switch's meters support (bands, rates, capabilities).
    MeterFeatures { switch: String },
    /// Each table's features (name, size, instructions, actions, fields).
    DumpTableFeatures {
        switch: String,
        table: Option<String>,
    },
    /// Sets a table's configuration: TABLE is a number or all; SETTING is
    /// controller, continue, drop (OpenFlow 1.1 and 1.2 names; 1.3 keeps
    /// their bits only as deprecated) or a number (the config bits).
    ModTable {
        switch: String,
        table: String,
        setting: String,
    },
    /// The queues configured on PORT (default: all ports).
    QueueGetConfig {
        switch: String,
        port: Option<String>,
    },
    /// Meter counters.
    MeterStats {
        switch: String,
        meter: Option<String>,
    },
    /// Sends PACKET (hex, or a flow description) through ACTIONS as if it
    /// came in on IN_PORT (a number, local, controller or none).
    PacketOut {
        switch: String,
        in_port: String,
        actions: String,
        packet: String,
    },
    /// Prints asynchronous messages (packet-in, flow-removed, port-status)
    /// as they arrive.
    Monitor {
        switch: String,
        /// Stop after this many messages.
        #[arg(long)]
        count: Option<u64>,
        /// Stop after this many seconds.
        #[arg(long)]
        duration: Option<f64>,
    },
    /// What the switch does with PACKET arriving on IN_PORT: the table and
    /// rule of each step, what the actions did, where copies go. PACKET is
    /// hex or a flow description (`in_port=1,tcp,nw_dst=10.0.0.2,tp_dst=80`).
    Trace {
        switch: String,
        /// IN_PORT then PACKET, or PACKET alone with in_port= in it.
        #[arg(num_args = 1..=2, required = true)]
        args: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(p) = &cli.protocols {
        if let Err(e) = check_protocols(p) {
            eprintln!("sluice-ctl: {e}");
            return ExitCode::from(2);
        }
    }
    if !(cli.timeout.is_finite() && cli.timeout > 0.0) {
        eprintln!("sluice-ctl: --timeout: expected a positive number of seconds");
        return ExitCode::from(2);
    }
    let timeout = Duration::from_secs_f64(cli.timeout);
    let identity = match (cli.private_key, cli.certificate, cli.ca_cert) {
        (None, None, None) => None,
        (Some(private_key), Some(certificate), Some(ca_cert)) => match tls::Tls::load(&tls::Files {
            private_key,
            certificate,
            ca_cert,
        }) {
            Ok(t) => Some(t),
            Err(e) => {
                match e.what {
                    "tls" => eprintln!("sluice-ctl: TLS: {}", e.problem),
                    w => eprintln!("sluice-ctl: --{}: {}", w.replace('_', "-"), e.problem),
                }
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("sluice-ctl: --private-key, --certificate and --ca-cert go together");
            return ExitCode::from(2);
        }
    };
    let opts = Opts {
        strict: cli.strict,
        names: cli.names && !cli.no_names,
        no_stats: cli.no_stats,
        sort: cli
            .sort
            .into_iter()
            .map(|f| (f, false))
            .chain(cli.rsort.into_iter().map(|f| (f, true)))
            .collect(),
    };
    match commands::run(cli.cmd, &cli.run_dir, timeout, identity.as_ref(), &opts) {
        Ok(out) => {
            // A closed pipe (`| head`) is not an error worth a panic.
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(out.text.as_bytes());
            let _ = stdout.flush();
            ExitCode::from(out.status)
        }
        Err(e) => {
            eprintln!("sluice-ctl: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_as_ovs_ofctl_takes_them() {
        assert!(check_protocols("OpenFlow13").is_ok());
        assert!(check_protocols("OpenFlow10,OpenFlow13").is_ok());
        assert!(check_protocols("openflow13").is_ok());
        let e = check_protocols("OpenFlow10").unwrap_err();
        assert!(e.contains("OpenFlow13 only"), "{e}");
        let e = check_protocols("OpenFlow13,OF9").unwrap_err();
        assert!(e.contains("`OF9`"), "{e}");
    }

    #[test]
    fn options_before_or_after_the_verb() {
        for args in [
            &[
                "sluice-ctl",
                "-O",
                "OpenFlow13",
                "--strict",
                "del-flows",
                "br0",
                "in_port=1",
            ][..],
            &[
                "sluice-ctl",
                "del-flows",
                "br0",
                "in_port=1",
                "--strict",
                "-O",
                "OpenFlow13",
            ][..],
            &[
                "sluice-ctl",
                "del-flows",
                "--protocols=OpenFlow13",
                "br0",
                "--strict",
                "in_port=1",
            ][..],
        ] {
            let cli = Cli::try_parse_from(args).unwrap();
            assert!(cli.strict, "{args:?}");
            assert_eq!(cli.protocols.as_deref(), Some("OpenFlow13"));
            assert!(matches!(cli.cmd, Cmd::DelFlows { .. }));
        }
        let cli = Cli::try_parse_from([
            "sluice-ctl",
            "--sort",
            "dump-flows",
            "br0",
            "--rsort=tp_dst",
        ])
        .unwrap();
        assert_eq!(cli.sort, ["priority"]);
        assert_eq!(cli.rsort, ["tp_dst"]);
        assert!(matches!(cli.cmd, Cmd::DumpFlows { flows: None, .. }));
    }
}
