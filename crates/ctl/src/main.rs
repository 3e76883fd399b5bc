//! # sluice-ctl: operate an OpenFlow 1.3 switch from the command line
//!
//! Shaped after ovs-ofctl: `sluice-ctl COMMAND SWITCH [ARGS]`, where SWITCH
//! is a bridge name (its management socket `/run/sluice/BRIDGE.mgmt`),
//! `unix:PATH`, `tcp:HOST:PORT` or `tls:HOST:PORT`. Flows, groups and
//! meters are written in the protocol crate's ovs-ofctl syntax; errors
//! from the switch are printed with their spec names and the exit status
//! is 1 (2 when the command line cannot be read). It speaks plain OpenFlow
//! 1.3, so it drives Open vSwitch too, except for the commands that are
//! sluice's experimenter messages (`trace`, `add-port`, `del-port`,
//! `fdb-show`, `fdb-flush`, `vlog`, and the connection tracker's:
//! `dump-conntrack`, `flush-conntrack`, `ct-*`).
//!
//! ## Commands
//!
//! `show`, `dump-desc`, `dump-flows`, `dump-aggregate`, `add-flow`,
//! `add-flows`, `mod-flows`, `del-flows`, `replace-flows`, `diff-flows`,
//! `dump-ports`, `dump-ports-desc`, `mod-port`, `queue-stats`,
//! `queue-get-config`, `dump-tables`, `dump-table-features`, `mod-table`,
//! `dump-groups`, `dump-group-stats`, `dump-group-features`, `add-group`,
//! `add-groups`, `mod-group`, `del-groups`, `insert-buckets`,
//! `remove-buckets`, `add-meter`, `mod-meter`,
//! `del-meters`, `dump-meters`, `meter-stats`, `meter-features`,
//! `packet-out`, `monitor`, `trace`, `add-port`, `del-port`, `fdb-show`,
//! `fdb-flush`, `vlog`, `dump-conntrack`, `flush-conntrack`,
//! `ct-set-limits`, `ct-get-limits`, `ct-del-limits`, `ct-set-maxconns`,
//! `ct-get-maxconns`, `ct-get-nconns`, `ct-set-timeouts`,
//! `ct-get-timeouts`, and `parse-flows FILE` and `offline-trace FILE...`,
//! which need no switch (`sluice-ctl help COMMAND`).
//!
//! ## What ovs-ofctl users can count on
//!
//! ovs-ofctl 3.1 is the yardstick, and an end-to-end test
//! (`test_ovs_ofctl_and_sluice_ctl_agree` in tests/e2e/test_ovs_tools.py) installs the
//! same flows and groups with both tools and compares what they print.
//! - `-O OpenFlow10,...,OpenFlow15` / `--protocols=...` offers those
//!   versions and the connection speaks the highest the switch speaks too
//!   (no common version: an error naming both sides' versions). Without
//!   `-O`, sluice-ctl offers OpenFlow13 (ovs-ofctl offers OpenFlow10 by
//!   default). OpenFlow11 is refused: sluice does not speak it.
//! - `add-flow` and `mod-flows` pick the protocol per flow, as ovs-ofctl
//!   does: OpenFlow 1.3 (or `-O`'s) when the switch would take the flow
//!   there, else, when `-O` is not given or offers OpenFlow10 (and no
//!   `--bundle`), OpenFlow 1.0 with Nicira's NXM flow format
//!   (NXT_SET_FLOW_FORMAT, NXT_FLOW_MOD_TABLE_ID when a table is named,
//!   NXT_FLOW_MOD) if that carries it: the cloud agent's
//!   `priority=100,ip,nw_dst=10.0.0.7,actions=strip_vlan,...` (a pop with
//!   no VLAN matched, which Open vSwitch and sluice take from 1.0 peers
//!   only) goes in as written. `-O OpenFlow13` is kept to: the switch
//!   refuses it (`OFPBAC_MATCH_INCONSISTENT`). `add-flows`,
//!   `replace-flows` and `--bundle` send by `-O`'s version (OpenFlow 1.3
//!   without it) whatever the flows: ovs-ofctl picks one protocol for a
//!   whole file, sluice-ctl does not pick one yet.
//! - A match field whose prerequisites the flow lacks (`nw_dst` without
//!   `ip`, `tp_dst` without `tcp`, `udp` or `sctp`) is left out, as
//!   ovs-ofctl's normalization leaves it out, and named on stderr.
//! - Options go before or after the command, as with ovs-ofctl's getopt:
//!   `sluice-ctl --strict del-flows br0 ...` and `sluice-ctl del-flows br0
//!   ... --strict` are the same.
//! - Output as ovs-ofctl prints it: reserved ports in upper case
//!   (`NORMAL`, `CONTROLLER:65535`, `LOCAL`, `IN_PORT`, `FLOOD`, `ALL`,
//!   `ANY`, `in_port=LOCAL`), read in either case; match fields in
//!   ovs-ofctl's order and names (`dl_src` before `dl_dst`, `nw_tos`,
//!   `icmp_type` for ICMPv6 too); actions by ovs-ofctl's names (`dec_ttl`,
//!   `mod_nw_ttl:N`, `set_mpls_ttl(N)`, `set_field:V->ip_dst`); the default
//!   priority (32768) left out; reply header lines with the request's xid
//!   (`OFPST_FLOW reply (OF1.3) (xid=0x2):`); durations as ovs-ofctl
//!   writes them (three decimals when the switch counts whole
//!   milliseconds, else the nanoseconds without trailing zeros:
//!   `duration=0.063306677s`); select-group buckets without `weight:1`.
//! - `dump-flows` prints the header only when ovs-ofctl does: with
//!   statistics, no sort and no names. `--no-stats` leaves out durations,
//!   counters, and the cookie and table when they are 0. `--sort[=FIELD]`
//!   and `--rsort[=FIELD]` (FIELD: `priority`, the default, or a match
//!   field; flows without the field come last either way; several sort
//!   options apply in order, all `--sort`s before all `--rsort`s). `--names`
//!   prints port names (from the port descriptions) and table names (from
//!   the table features) in `dump-flows`, and port names in `dump-ports`.
//! - `diff-flows SOURCE1 SOURCE2`: a source is a file when it starts with
//!   `/` or `.`, is `-`, or names an existing file without a `:` (ovs-ofctl's
//!   rule), else a switch. Flows are the same flow when table, priority and
//!   match agree, and equal when cookie, timeouts and actions do too;
//!   `-flow` / `+flow` lines as ovs-ofctl writes them; exit status 2 when
//!   the sources differ. The order of the lines is the first source's,
//!   then the second's (ovs-ofctl's follows its hash table).
//! - `add-flows SWITCH FILE`: a line may start with `add`, `modify`,
//!   `modify_strict`, `delete` or `delete_strict` (a prefix of one will
//!   do, as in ovs-ofctl: `mod` is `modify`), then the flow; a line
//!   without one is an add. Deletes without `table=` cover every table;
//!   modifies without `table=` apply to table 0, as `mod-flows` does (an
//!   OpenFlow 1.3 MODIFY names one table; ovs-ofctl's covers them all).
//!   An unknown first word that the flow syntax refuses is named, with
//!   its line, in the error.
//! - `replace-flows SWITCH FILE`: strict deletes of the switch's flows FILE
//!   lacks, then ADDs of FILE's flows that are missing or differ; equal
//!   flows are not touched (their counters keep counting).
//! - `--bundle` (with `add-flow`, `add-flows`, `mod-flows`, `del-flows`,
//!   `replace-flows`, `add-group`, `add-groups`, `mod-group`,
//!   `insert-buckets`, `remove-buckets`, `del-groups`): the changes go as one OpenFlow bundle, as ovs-ofctl
//!   `--bundle` sends them to an OpenFlow 1.3 switch (the ONF extension):
//!   OPEN with ATOMIC and ORDERED, an ADD per change, a BARRIER, then
//!   COMMIT if no error came, else DISCARD. The switch makes every change
//!   or none. Errors are named by file line as without `--bundle`, the
//!   message says nothing changed, a refused commit also shows
//!   `OFPET_EXPERIMENTER/OFPBFC_MSG_FAILED`, and the exit status is 1.
//!   Other commands refuse `--bundle`.
//! - Port and table names: `add-flow`, `add-flows`, `mod-flows` and
//!   `del-flows` take them where a port or table goes (`in_port=p1`,
//!   `output:"vm-1"`, `table=Classifier`, `goto_table:Output`,
//!   `resubmit(,Output)`, `learn(table=Learned,...)`), resolved from the
//!   switch's port descriptions and table features; `--names` prints them
//!   (quoted as ovs-ofctl quotes them); a name two ports or two tables
//!   share stands for neither. `dump-table-features` shows each table's
//!   name; `dump-tables` none, as OpenFlow 1.3's table statistics carry
//!   none (ovs-ofctl -O OpenFlow13 shows none either).
//! - `mod-table TABLE name:NAME` names a table as ovs-ofctl does (the
//!   switch's table features sent back with the name changed); a switch
//!   refuses to change a name its configuration gives (OFPTFFC_EPERM).
//!
//! ## Where sluice-ctl differs, and why
//!
//! - `mod-table TABLE controller|continue|drop|N` sends the table config
//!   (OpenFlow 1.1/1.2 names for the bits 1.3 keeps only as deprecated);
//!   ovs-ofctl refuses these with OpenFlow 1.3. sluice accepts bits 0-1
//!   and ignores them (1.3 defines no table config), and refuses others
//!   with OFPTMFC_BAD_CONFIG.
//! - `dump-group-features` also lists the actions ovs-ofctl has no name for
//!   (`copy_ttl_out`, `copy_ttl_in`, `push_pbb`, `pop_pbb`) when the switch
//!   supports them; ovs-ofctl leaves them out.
//! - `dump-table-features` lays tables out as ovs-ofctl does ("ditto" for
//!   a table like the previous one) but names fields and actions the
//!   OpenFlow way (`ipv4_src`, `dec_nw_ttl`), not ovs-ofctl's (`ip_{src,dst}`).
//! - Port and table names are printed with `--names` only (ovs-ofctl 3.x
//!   also picks them when writing to a terminal). `parse-flows` and
//!   `offline-trace`, which have no switch, take them from `--name-map
//!   FILE`.
//! - `parse-flows FILE` prints a verdict per line (`LINE: ok` or `LINE:
//!   error: ...`) instead of the parsed flows as ovs-ofctl does: `ok (by
//!   NXM+table_id)` for a flow that goes by OpenFlow 1.0 with NXM (as
//!   `add-flow` picks it; not when `-O` leaves OpenFlow10 out), `ok
//!   (leaves out ...)` naming fields left out for want of prerequisites;
//!   it also refuses what sluice would refuse when adding the flow (a
//!   `goto_table` that does not go forward, a `set_field` without its
//!   prerequisite), taking the groups and meters it names to exist.
//! - The xid in a header is the request's; ovs-ofctl sometimes sends other
//!   requests first (`show`, or a filter given to `dump-flows`), so its
//!   number can be higher.

mod bundle;
mod client;
mod commands;
mod features;
mod flows;
mod manage;
mod print;
mod target;

/// The PACKET argument of `trace` and `packet-out` (shared with the daemon).
use pipeline::flow_packet as frame;

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
    /// OpenFlow versions to offer, as ovs-ofctl's -O: a comma-separated
    /// list of OpenFlow10, OpenFlow12, OpenFlow13, OpenFlow14, OpenFlow15
    /// (default OpenFlow13, and OpenFlow10 with NXM for a flow only it
    /// carries); the highest the switch speaks too is used.
    #[arg(short = 'O', long, global = true, value_name = "VERSIONS")]
    protocols: Option<String>,
    /// Seconds to wait for the switch to answer.
    #[arg(long, default_value_t = 10.0, global = true)]
    timeout: f64,
    /// Where bridge management sockets live (the daemon's --run-dir)
    /// [default: $OVS_RUNDIR if set, then /run/sluice, then
    /// /var/run/openvswitch: the first that has the bridge's socket]
    #[arg(long, global = true)]
    run_dir: Option<String>,
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
    /// dump-flows, dump-ports: print port and table names instead of
    /// numbers (from the switch's port descriptions and table features).
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
    /// dump-flows: leave out the statistics (and the reply header, as
    /// ovs-ofctl).
    #[arg(long, global = true)]
    no_stats: bool,
    /// add-flow(s), mod-flows, del-flows, replace-flows, add-group(s),
    /// mod-group, insert-buckets, remove-buckets, del-groups: send the changes as one OpenFlow bundle
    /// (atomic and ordered; the ONF extension for OpenFlow 1.3, as
    /// ovs-ofctl --bundle): the switch makes all of them or none.
    #[arg(long, global = true)]
    bundle: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

/// How replies are printed (the options that shape output).
#[derive(Debug, Clone, Default)]
pub struct Opts {
    pub strict: bool,
    /// Send flow and group changes as one bundle (`--bundle`).
    pub bundle: bool,
    pub names: bool,
    pub no_stats: bool,
    /// Sort criteria in order: the field (`priority` or a match field)
    /// and whether descending.
    pub sort: Vec<(String, bool)>,
    /// The OpenFlow versions to offer (`-O`; OpenFlow13 if not given).
    pub versions: ofp::Versions,
    /// Whether `-O` was given: without it, a flow OpenFlow 1.3 cannot
    /// carry goes by OpenFlow 1.0 with NXM, as ovs-ofctl picks a
    /// protocol per flow ([`Opts::of10_allowed`]).
    pub versions_given: bool,
}

impl Opts {
    /// Whether a flow may go by OpenFlow 1.0 with NXM: `-O` not given
    /// (ovs-ofctl's default, OpenFlow10, allows it), or given with
    /// OpenFlow10 among the versions.
    pub fn of10_allowed(&self) -> bool {
        !self.versions_given || self.versions.iter().any(|v| v == ofp::Version::V1_0)
    }
}

/// Reads `-O`/`--protocols`: a comma-separated list of OpenFlow version
/// names, as ovs-ofctl takes it; the connection speaks the highest one the
/// switch speaks too. OpenFlow11, which sluice does not speak, is refused
/// with the reason.
fn check_protocols(s: &str) -> Result<ofp::Versions, String> {
    if s.split(',')
        .any(|v| v.trim().eq_ignore_ascii_case("OpenFlow11"))
    {
        return Err(format!(
            "-O/--protocols: `{s}`: sluice-ctl does not speak OpenFlow11 (it speaks {})",
            ofp::Versions::ALL.names()
        ));
    }
    ofp::Versions::parse_list(s).map_err(|e| format!("-O/--protocols: {e}"))
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
    /// starts a comment. A line may start with a command, as with
    /// ovs-ofctl: `add`, `modify`, `modify_strict`, `delete` or
    /// `delete_strict` (or a prefix of one), then the flow; without one
    /// the line is an add. All are sent, then one barrier (with --bundle:
    /// as one bundle, all of them or none).
    AddFlows { switch: String, file: String },
    /// Makes the switch's flows those of FILE: deletes the flows FILE does
    /// not have, adds those it has that differ (actions, cookie, timeouts)
    /// or are missing, leaves equal ones (and their counters) alone
    /// (with --bundle: all of these changes or none).
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
    /// Adds the groups of FILE ("-": standard input), one per line (with
    /// --bundle: all of them or none).
    AddGroups { switch: String, file: String },
    /// What the switch's groups support (types, capabilities, actions).
    DumpGroupFeatures { switch: String },
    /// Replaces a group's type and buckets.
    ModGroup { switch: String, group: String },
    /// Adds buckets to a group (OpenFlow 1.5): group_id=N,
    /// command_bucket_id=first|last|ID, then the buckets (bucket_id:ID).
    InsertBuckets { switch: String, group: String },
    /// Removes buckets from a group (OpenFlow 1.5): group_id=N,
    /// command_bucket_id=first|last|all|ID (default all).
    RemoveBuckets { switch: String, group: String },
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
    /// their bits only as deprecated) or a number (the config bits); or
    /// names a table: SETTING name:NAME (TABLE a number or the table's
    /// name; name: alone takes the name away), sent as ovs-ofctl sends it,
    /// a TABLE_FEATURES request with every table's features.
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
        /// The packet-in format to ask for: standard, nxt_packet_in or
        /// nxt_packet_in2 (refused: an error). Without it, as ovs-ofctl:
        /// nxt_packet_in2 if the switch takes it (it carries
        /// `controller(userdata=...)`), else the standard one.
        #[arg(short = 'P', long = "packet-in-format", value_name = "FORMAT")]
        packet_in_format: Option<String>,
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
    /// pcap_in=FILE, pcap_out=FILE; NORMAL's VLANs: tag=VLAN,
    /// trunks=VLAN,..., vlan_mode=access|trunk|native-tagged|native-untagged.
    /// Other ports, named IFACE: type=vxlan|geneve with Open vSwitch's
    /// tunnel options (remote_ip=IP|flow, key=VNI|flow, local_ip=IP,
    /// dst_port=N, csum=true, ...), type=internal (a TAP device),
    /// type=patch peer=PORT (joined to another bridge's patch port).
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
    /// The connection tracker's connections, a line each as `ovs-appctl
    /// dpctl/dump-conntrack` prints them (`tcp,orig=(src=...,dst=...,
    /// sport=...,dport=...),reply=(...),zone=N,mark=M,labels=0x...,
    /// protoinfo=(state=ESTABLISHED)`; zone, mark and labels when not 0).
    /// At most 1000 connections (what one reply holds): a last line says
    /// how many were left out (sluice only).
    DumpConntrack {
        switch: String,
        /// zone=N: only the connections of zone N.
        zone: Option<String>,
        /// Add each connection's seconds until it expires (`timeout=`).
        #[arg(short = 's', long = "statistics")]
        statistics: bool,
    },
    /// Removes connections from the tracker and prints how many: all of
    /// them, a zone's (zone=N), or those matching Open vSwitch 3.1's
    /// tuples: `ct_nw_src=A,ct_nw_dst=A,ct_nw_proto=P,ct_tp_src=N,
    /// ct_tp_dst=N` (`ct_ipv6_src`/`ct_ipv6_dst`; `icmp_id`, `icmp_type`,
    /// `icmp_code` for ICMP), original direction first, then reply ("" for
    /// no original tuple); any field may be left out; with a tuple and no
    /// zone, zone 0 (sluice only).
    FlushConntrack {
        switch: String,
        /// [zone=N] [CT_ORIG_TUPLE [CT_REPLY_TUPLE]]
        args: Vec<String>,
    },
    /// Sets connection limits per zone: default=N (zones without their
    /// own) and zone=N,limit=M (0: no limit); past a zone's limit new
    /// connections are not committed (sluice only).
    CtSetLimits {
        switch: String,
        /// [default=N] [zone=N,limit=M]...
        #[arg(required = true)]
        limits: Vec<String>,
    },
    /// Prints `default limit=N`, then `zone=N,limit=M,count=C` for the
    /// zones asked (zone=N1,N2,...), else for every zone with a limit of
    /// its own (sluice only).
    CtGetLimits {
        switch: String,
        /// zone=N1[,N2]...
        zones: Option<String>,
    },
    /// Puts zones back to the default limit (zone=N1,N2,...), the default
    /// back to none (`default`) (sluice only).
    CtDelLimits {
        switch: String,
        /// [default] [zone=N1[,N2]...]
        #[arg(required = true)]
        args: Vec<String>,
    },
    /// Sets how many connections the tracker holds in all (0: no limit)
    /// (sluice only).
    CtSetMaxconns { switch: String, maxconns: String },
    /// Prints how many connections the tracker holds at most (sluice only).
    CtGetMaxconns { switch: String },
    /// Prints how many connections the tracker holds now (sluice only).
    CtGetNconns { switch: String },
    /// Sets idle timeouts in seconds by name: tcp_syn_sent,
    /// tcp_established, tcp_fin_wait, tcp_time_wait, tcp_close, udp,
    /// udp_stream, icmp, other (`udp=60 icmp=10`); connections take them
    /// at their next packet (sluice only).
    CtSetTimeouts {
        switch: String,
        /// NAME=SECONDS...
        #[arg(required = true)]
        timeouts: Vec<String>,
    },
    /// Prints the idle timeouts, NAME=SECONDS a line (sluice only).
    CtGetTimeouts { switch: String },
    /// Checks the flows of FILE ("-": standard input) offline, one per line
    /// (`#` comments): each is parsed, checked as sluice checks a flow
    /// before adding it (groups and meters it names taken to exist), and
    /// encoded as OpenFlow 1.3. Prints
    /// `LINE: ok` or `LINE: error: MESSAGE` per flow; exits 1 if any has an
    /// error. No switch is contacted.
    ParseFlows {
        file: String,
        /// Port and table names to replace by numbers, a stand-in until
        /// sluice-ctl reads them from the switch: lines `port NAME NUMBER`
        /// and `table NAME NUMBER`. Applies to `in_port=`, `out_port=`,
        /// `output:`, `output(port=`, `enqueue:`, `table=`, `goto_table:`,
        /// `resubmit` and a port name alone among the actions; other names
        /// are left as written.
        #[arg(long, value_name = "FILE")]
        name_map: Option<String>,
    },
    /// Runs packets through a pipeline built from flow text, in this
    /// process (no switch): FILEs ("-": standard input) are read in order,
    /// a line each: `case NAME` (a new, empty pipeline), `group_id=...` (a
    /// group), `packet IN_PORT PACKET` (PACKET in hex or as a match, as
    /// `trace` takes it), or a flow; `#` comments. Each case's groups are
    /// added, then its flows, as the switch takes them from a controller,
    /// then its packets run as the datapath runs them. Prints JSON, a line
    /// per refused flow or group (`"error"`) and per packet (`"outputs"`
    /// in order, each with its port and the frame as it left, in hex).
    OfflineTrace {
        #[arg(required = true)]
        files: Vec<String>,
        /// The ports that exist and are up (an output elsewhere goes
        /// nowhere): N for 1..=N, or a list of numbers and ranges
        /// (`1-4,10,20`).
        #[arg(long, default_value = "8", value_name = "PORTS")]
        ports: String,
        /// Port and table names to replace by numbers, as parse-flows
        /// takes them (the packets' IN_PORT too).
        #[arg(long, value_name = "FILE")]
        name_map: Option<String>,
        /// Adds each packet's trace, as `trace` prints it (`"steps"`).
        #[arg(long)]
        steps: bool,
        /// Resolves NORMAL as the datapath does: the case's `port N
        /// tag=.. trunks=.. vlan_mode=..` lines give ports' VLAN settings
        /// and its `fdb PORT VLAN MAC` lines the learned addresses; each
        /// NORMAL output becomes the ports it goes to, each frame with the
        /// VLAN header it leaves with (`"normal"`: why).
        #[arg(long)]
        normal: bool,
    },
}

fn main() -> ExitCode {
    if let Some(code) = clidocs::generate::<Cli>() {
        return ExitCode::from(code as u8);
    }
    let cli = Cli::parse();
    let versions = match cli.protocols.as_deref().map(check_protocols) {
        None => ofp::Versions::only(ofp::Version::V1_3),
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            eprintln!("sluice-ctl: {e}");
            return ExitCode::from(2);
        }
    };
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
    let run_dirs = target::run_dirs(
        cli.run_dir.as_deref(),
        std::env::var("OVS_RUNDIR").ok().as_deref(),
    );
    let opts = Opts {
        strict: cli.strict,
        bundle: cli.bundle,
        names: cli.names && !cli.no_names,
        no_stats: cli.no_stats,
        sort: cli
            .sort
            .into_iter()
            .map(|f| (f, false))
            .chain(cli.rsort.into_iter().map(|f| (f, true)))
            .collect(),
        versions,
        versions_given: cli.protocols.is_some(),
    };
    match commands::run(cli.cmd, &run_dirs, timeout, identity.as_ref(), &opts) {
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

    /// OpenFlow 1.0 with NXM may carry a flow without -O (ovs-ofctl's
    /// default is OpenFlow10) or when -O offers OpenFlow10; an -O without
    /// it is kept to.
    #[test]
    fn of10_is_allowed_without_o_or_when_o_offers_it() {
        use ofp::{Version as V, Versions};
        let opts = |given, versions| Opts {
            versions,
            versions_given: given,
            ..Opts::default()
        };
        assert!(opts(false, Versions::only(V::V1_3)).of10_allowed());
        assert!(opts(true, Versions::only(V::V1_0).with(V::V1_3)).of10_allowed());
        assert!(!opts(true, Versions::only(V::V1_3)).of10_allowed());
        assert!(!opts(true, Versions::only(V::V1_5)).of10_allowed());
    }

    #[test]
    fn protocols_as_ovs_ofctl_takes_them() {
        use ofp::{Version as V, Versions};
        assert_eq!(check_protocols("OpenFlow13"), Ok(Versions::only(V::V1_3)));
        assert_eq!(
            check_protocols("OpenFlow10,OpenFlow13"),
            Ok(Versions::only(V::V1_0).with(V::V1_3))
        );
        assert_eq!(check_protocols("openflow15"), Ok(Versions::only(V::V1_5)));
        let e = check_protocols("OpenFlow10,OpenFlow11").unwrap_err();
        assert!(e.contains("does not speak OpenFlow11"), "{e}");
        let e = check_protocols("OpenFlow13,OF9").unwrap_err();
        assert!(e.contains("\"OF9\""), "{e}");
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
        assert!(!cli.bundle);
        assert_eq!(cli.rsort, ["tp_dst"]);
        assert!(matches!(cli.cmd, Cmd::DumpFlows { flows: None, .. }));
        let cli = Cli::try_parse_from(["sluice-ctl", "add-flows", "br0", "f", "--bundle"]).unwrap();
        assert!(cli.bundle, "--bundle after the verb, as ovs-ofctl takes it");
    }
}
