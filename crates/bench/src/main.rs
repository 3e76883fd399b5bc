//! sluice-bench: the peers sluice's benchmarks measure against.
//!
//! * `flows`: writes COUNT distinct 5-tuple flows in ovs-ofctl syntax,
//!   the load of the flow-add benchmark (`sluice-ctl add-flows`, and
//!   `ovs-ofctl add-flows` for Open vSwitch).
//! * `lab-rules`: writes one of the lab's rule sets (4p20r, 32p200r,
//!   100k1k, 1m; see `lab`), the table every switch of the lab gets.
//! * `traffic`: writes a capture of frames over many distinct flows
//!   (uniform or Zipf), which the 1m rule set's 5-tuple rules match.
//! * `arp-requests`: writes a capture of ARP requests, the load a pcap
//!   port (paced with `pcap_rate`) offers to the switch.
//! * `test-pki`: a throw-away CA and two identities it signs (`switch`,
//!   `controller`), as PEM files, for TLS tests against real controllers.
//! * `arp-responder`: an OpenFlow 1.3 controller that the switch dials; it
//!   installs a table-miss flow to the controller and answers every ARP
//!   request that arrives in a PACKET_IN with a PACKET_OUT carrying the ARP
//!   reply out of the port it came in on. It reports how many round trips
//!   it served and at what rate (first PACKET_IN to last PACKET_OUT).
//!
//! * `conn-server`, `conn-client`: TCP connections per second (handshake,
//!   small request and response, close) through a switch, for the lab's
//!   `conntrack` scenario (see `conns`).
//! * `ct-gen`, `ct-replay`: seeded packet sequences for the connection
//!   tracker's kernel oracle and the tracker's verdicts on them (see
//!   `ctgen`; `scripts/ct_oracle.py` compares them with Linux's).
//! * `gaps`: a spin loop that records every gap in its clock reads over a
//!   threshold, and the CPUs' steal time (see `gaps`): the time the
//!   machine, not the switch, takes from a thread.
//!
//! The responder is single-threaded and batches its writes: it reads
//! whatever the socket holds, answers every complete message, and writes
//! all the answers at once, so its own cost per round trip stays small
//! beside the switch's.

mod arp;
mod conns;
mod ctgen;
mod gaps;
mod lab;
mod responder;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "sluice-bench",
    version,
    about = "Peers and load for sluice's benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write COUNT distinct exact 5-tuple flows, one per line (ovs-ofctl
    /// syntax); with `--form agent`, the cloud agent's overlay "neighbor"
    /// flows instead (VLAN + destination MAC to a VNI and tunnel endpoint
    /// out of tunnel port 100).
    Flows {
        #[arg(long)]
        count: u64,
        #[arg(long)]
        out: std::path::PathBuf,
        /// `5tuple` (default) or `agent`.
        #[arg(long, default_value = "5tuple")]
        form: String,
    },
    /// Write one of the lab's rule sets (ovs-ofctl syntax): 4p20r, 32p200r,
    /// 100k1k or 1m.
    LabRules {
        #[arg(long)]
        set: String,
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Write a capture of FRAMES 60-byte TCP frames over FLOWS flows (those
    /// of `flows`' 5-tuple rules), spread `uniform` or `zipf`; prints the
    /// number of distinct flows the capture holds.
    Traffic {
        #[arg(long)]
        flows: u64,
        #[arg(long)]
        frames: u64,
        #[arg(long, default_value = "uniform")]
        dist: lab::Dist,
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Write a capture of COUNT ARP requests (who-has 10.99.0.2 tell 10.99.0.1).
    ArpRequests {
        #[arg(long)]
        count: u64,
        #[arg(long)]
        out: std::path::PathBuf,
    },
    /// Write a throw-away CA and the identities `switch` and `controller`
    /// it signs (DIR/NAME-key.pem, NAME-cert.pem, NAME-ca.pem), for tests.
    TestPki {
        #[arg(long)]
        dir: std::path::PathBuf,
    },
    /// An ARP-responder controller: listen, let the switch connect, answer.
    ArpResponder {
        /// Address to listen on (the switch's `tcp:` controller).
        #[arg(long, default_value = "127.0.0.1:6653")]
        listen: String,
        /// Stop after this many round trips.
        #[arg(long)]
        expect: Option<u64>,
        /// Stop when no PACKET_IN came for this many seconds (after the first).
        #[arg(long, default_value_t = 2.0)]
        idle: f64,
        /// Give up if the switch has not connected within this many seconds.
        #[arg(long, default_value_t = 30.0)]
        wait: f64,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Serve short TCP exchanges: read REQUEST bytes, write RESPONSE bytes,
    /// close (the server first); THREADS connections at a time; ends after
    /// MAX_SECONDS.
    ConnServer {
        #[arg(long)]
        listen: std::net::SocketAddr,
        /// Listen on PORTS consecutive ports from LISTEN's.
        #[arg(long, default_value_t = 1)]
        ports: u16,
        #[arg(long, default_value_t = 64)]
        threads: usize,
        #[arg(long, default_value_t = 64)]
        request: usize,
        #[arg(long, default_value_t = 256)]
        response: usize,
        #[arg(long, default_value_t = 600.0)]
        max_seconds: f64,
    },
    /// Open connections to a conn-server in CONCURRENCY loops for SECONDS
    /// (connect, request, response, close); prints one JSON object:
    /// connections completed, failures, connections/s, connect-to-close
    /// time percentiles.
    ConnClient {
        #[arg(long)]
        connect: std::net::SocketAddr,
        /// Spread the loops over PORTS consecutive server ports from
        /// CONNECT's (loop i on port + i mod PORTS).
        #[arg(long, default_value_t = 1)]
        ports: u16,
        #[arg(long, default_value_t = 16)]
        concurrency: usize,
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
        #[arg(long, default_value_t = 64)]
        request: usize,
        #[arg(long, default_value_t = 256)]
        response: usize,
        /// Seconds each connect and each read may take before the
        /// connection counts as failed.
        #[arg(long, default_value_t = 3.0)]
        timeout: f64,
    },
    /// Write SCENARIOS seeded packet sequences for the conntrack oracle,
    /// one packet a line: SCENARIO INDEX FAMILY KIND HEX.
    CtGen {
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 100)]
        scenarios: u64,
    },
    /// Read `ct-gen` lines on standard input and print each with sluice's
    /// tracker's verdict appended (new, est, rel or inv; every packet
    /// committed; a fresh tracker for each scenario).
    CtReplay,
    /// Spin SECONDS reading the clock; report the gaps between reads over
    /// THRESHOLD_US (counts over 50/150/500/1000/10000 us, the longest)
    /// and each CPU's steal time meanwhile. Pin it with `taskset -c N`,
    /// e.g. `taskset -c 1 sluice-bench gaps --seconds 10`.
    Gaps {
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        #[arg(long, default_value_t = 50)]
        threshold_us: u64,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Flows { count, out, form } => match form.as_str() {
            "5tuple" => write_flows(&out, count),
            "agent" => write_agent_flows(&out, count),
            _ => Err(format!("--form {form}: 5tuple or agent")),
        }
        .map(|()| String::new()),
        Cmd::LabRules { set, out } => lab::write_rules(&out, &set).map(|()| String::new()),
        Cmd::Traffic {
            flows,
            frames,
            dist,
            out,
        } => lab::write_traffic(&out, flows, frames, dist).map(|n| format!("{n}\n")),
        Cmd::TestPki { dir } => std::fs::create_dir_all(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))
            .map(|()| {
                let ca = tls::testpki::Ca::new("sluice test CA");
                for name in ["switch", "controller"] {
                    ca.identity(&dir, name);
                }
                String::new()
            }),
        Cmd::ConnServer {
            listen,
            ports,
            threads,
            request,
            response,
            max_seconds,
        } => conns::serve(&conns::ServerOptions {
            listen,
            ports,
            threads,
            request,
            response,
            max_seconds,
        }),
        Cmd::ConnClient {
            connect,
            ports,
            concurrency,
            seconds,
            request,
            response,
            timeout,
        } => conns::client(&conns::ClientOptions {
            connect,
            ports,
            concurrency,
            seconds,
            request,
            response,
            timeout: std::time::Duration::from_secs_f64(timeout.max(0.01)),
        }),
        Cmd::Gaps {
            seconds,
            threshold_us,
            json,
        } => Ok(gaps::run(seconds, threshold_us, json)),
        Cmd::CtGen { seed, scenarios } => Ok(ctgen::generate(seed, scenarios)),
        Cmd::CtReplay => {
            let mut input = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut input)
                .map_err(|e| format!("standard input: {e}"))
                .and_then(|_| ctgen::replay(&input))
        }
        Cmd::ArpRequests { count, out } => arp::write_requests(&out, count).map(|()| String::new()),
        Cmd::ArpResponder {
            listen,
            expect,
            idle,
            wait,
            json,
        } => responder::run(&responder::Options {
            listen,
            expect,
            idle: std::time::Duration::from_secs_f64(idle.max(0.01)),
            wait: std::time::Duration::from_secs_f64(wait.max(0.01)),
        })
        .map(|report| if json { report.json() } else { report.text() }),
    };
    match r {
        Ok(s) => {
            print!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("sluice-bench: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The cloud agent's neighbor flows, each distinct in VLAN, destination
/// MAC, VNI and tunnel endpoint:
/// `priority=100,dl_vlan=V,dl_dst=MAC,actions=strip_vlan,load:VNI->NXM_NX_TUN_ID[],set_field:IP->tun_dst,output:100`
/// (VLAN 1-4094 and VNI from the flow's number; the MAC and the endpoint
/// 10.A.B.C carry it whole, for up to 2^24 flows).
fn write_agent_flows(path: &std::path::Path, count: u64) -> Result<(), String> {
    write_lines(path, count, |i| {
        let (a, b, c) = ((i >> 16) & 255, (i >> 8) & 255, i & 255);
        format!(
            "priority=100,dl_vlan={},dl_dst=fa:16:3e:{a:02x}:{b:02x}:{c:02x},actions=strip_vlan,load:{}->NXM_NX_TUN_ID[],set_field:10.{a}.{b}.{c}->tun_dst,output:100",
            1 + i % 4094,
            1 + i % 16_000_000
        )
    })
}

/// `table=0,priority=100,tcp,nw_src=10.A.B.C,nw_dst=192.168.0.1,tp_dst=80,actions=output:2`
/// with a distinct source for each of up to 2^24 flows.
fn write_flows(path: &std::path::Path, count: u64) -> Result<(), String> {
    write_lines(path, count, lab::five_tuple_rule)
}

/// Writes `line(i)` for i in 0..count (at most 2^24: the flows make
/// their addresses distinct from i's low 24 bits), one per line.
fn write_lines(
    path: &std::path::Path,
    count: u64,
    line: impl Fn(u64) -> String,
) -> Result<(), String> {
    use std::io::Write;
    if count > 1 << 24 {
        return Err(format!(
            "--count {count}: at most {} distinct flows",
            1u64 << 24
        ));
    }
    let f = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    for i in 0..count {
        writeln!(w, "{}", line(i)).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    w.flush().map_err(|e| format!("{}: {e}", path.display()))
}
