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
mod frame;
mod manage;
mod print;
mod target;

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
    #[command(subcommand)]
    cmd: Cmd,
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
    /// Adds one flow.
    AddFlow { switch: String, flow: String },
    /// Adds the flows of FILE ("-": standard input), one per line; `#`
    /// starts a comment. All are sent, then one barrier.
    AddFlows { switch: String, file: String },
    /// Modifies the actions of the flows matching FLOW.
    ModFlows {
        switch: String,
        flow: String,
        /// Only the flow with exactly this match and priority.
        #[arg(long)]
        strict: bool,
    },
    /// Deletes the flows matching FLOWS (default: all).
    DelFlows {
        switch: String,
        flows: Option<String>,
        /// Only the flow with exactly this match and priority.
        #[arg(long)]
        strict: bool,
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
    /// Adds interface IFACE to the bridge while it runs (sluice only).
    /// Options: ofport=N (default: the number IFACE had last, else the
    /// lowest free), backend=afpacket|afpacket-mmsg|afxdp|afxdp-generic|pcap,
    /// pcap_in=FILE, pcap_out=FILE.
    AddPort {
        switch: String,
        iface: String,
        options: Vec<String>,
    },
    /// Removes a port (interface name or number) while the bridge runs
    /// (sluice only); flows that output to it stay and send nothing there.
    DelPort { switch: String, port: String },
    /// The NORMAL action's MAC table: port, VLAN, MAC, age in seconds
    /// (sluice only).
    FdbShow { switch: String },
    /// Empties the NORMAL action's MAC table (sluice only).
    FdbFlush { switch: String },
    /// Sets the daemon's log filter while it runs: a level (error, warn,
    /// info, debug, trace) or a RUST_LOG-style filter (sluice only).
    Vlog { switch: String, filter: String },
}

fn main() -> ExitCode {
    if let Some(code) = generate_docs::<Cli>() {
        return ExitCode::from(code as u8);
    }
    let cli = Cli::parse();
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
    match commands::run(cli.cmd, &cli.run_dir, timeout, identity.as_ref()) {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sluice-ctl: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--generate-man` or `--generate-completions SHELL` as the only
/// arguments (hidden; `make install` uses them): prints the man page or
/// the shell completion script made from the command-line definition.
fn generate_docs<C: clap::CommandFactory>() -> Option<i32> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cmd = C::command();
    let name = cmd.get_name().to_string();
    let mut buf = Vec::new();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["--generate-man"] => clap_mangen::Man::new(cmd)
            .render(&mut buf)
            .expect("writing to memory"),
        ["--generate-completions", shell] => match shell.parse::<clap_complete::Shell>() {
            Ok(sh) => clap_complete::generate(sh, &mut cmd, name.clone(), &mut buf),
            Err(_) => {
                eprintln!("{name}: --generate-completions: bash, zsh, fish, elvish or powershell");
                return Some(2);
            }
        },
        _ => return None,
    }
    match std::io::Write::write_all(&mut std::io::stdout(), &buf) {
        Ok(()) => Some(0),
        Err(e) => {
            eprintln!("{name}: {e}");
            Some(1)
        }
    }
}
