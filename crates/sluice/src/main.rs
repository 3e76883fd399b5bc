//! `sluice`: the switch daemon.
//!
//! ```text
//! sluice --port veth-a --port veth-b              # standalone learning switch
//! sluice --config /etc/sluice.toml
//! ```
//!
//! Checks the whole configuration, opens every bridge's ports, builds each
//! pipeline (in standalone mode a table-miss rule sends everything to
//! NORMAL, the learning switch), runs each bridge on its worker threads,
//! and on the main thread serves the OpenFlow side ([`control`]), keeps
//! port liveness current and watches the workers. On SIGINT or SIGTERM it
//! stops cleanly, prints its counters and exits 0; when a worker dies it
//! stops the same way and exits 70 ([`health`] says why).

mod config;
mod control;
mod dial;
mod health;
mod metrics;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use clap::Parser;
use datapath::{BridgeCounters, BridgePort, BridgeWorker, MacTable, PortCounters};
use netdev::Port;
use pipeline::{Pipeline, PortState};

#[derive(Parser, Debug)]
#[command(
    name = "sluice",
    about = "sluice: an OpenFlow 1.3 software switch",
    version
)]
struct Args {
    /// A TOML configuration file.
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// A port: an interface name, optionally `=OFPORT` (repeatable).
    #[arg(long = "port", value_name = "NAME[=OFPORT]")]
    ports: Vec<String>,
    /// Stop after this many seconds (for tests and demos).
    #[arg(long)]
    duration: Option<f64>,
    /// Print counters every this many seconds (0: only at exit).
    #[arg(long, default_value_t = 0.0)]
    stats_interval: f64,
    /// Serve Prometheus metrics on this address (e.g. 127.0.0.1:9477).
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<std::net::SocketAddr>,
    /// Run a worker pinned to this CPU (repeatable: one worker per CPU).
    #[arg(long = "cpu", value_name = "CPU")]
    cpus: Vec<usize>,
    /// Number of (unpinned) workers for the bridge.
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
    /// Back end of the bridge's ports: afpacket (TPACKET_V2 rings),
    /// afpacket-mmsg (recvmmsg/sendmmsg), afxdp, afxdp-generic.
    #[arg(long, value_name = "NAME")]
    backend: Option<String>,
    /// Do not create the LOCAL port (the TAP device named after the bridge).
    #[arg(long)]
    no_local: bool,
    /// A controller to connect to, tcp:HOST:PORT or tls:HOST:PORT (repeatable).
    #[arg(long = "controller", value_name = "ENDPOINT")]
    controllers: Vec<String>,
    /// An OpenFlow endpoint to listen on: ptcp:PORT[:IP], ptls:PORT[:IP] or punix:PATH (repeatable).
    #[arg(long = "listen", value_name = "ENDPOINT")]
    listen: Vec<String>,
    /// TLS: this switch's private key (PEM), for tls:/ptls: endpoints
    #[arg(long, value_name = "FILE")]
    private_key: Option<std::path::PathBuf>,
    /// TLS: this switch's certificate (PEM)
    #[arg(long, value_name = "FILE")]
    certificate: Option<std::path::PathBuf>,
    /// TLS: the CA certificate that controllers' certificates must be signed by (PEM)
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<std::path::PathBuf>,
    /// Fail mode with no controller: standalone (NORMAL learning) or secure (keep the flows).
    #[arg(long, value_name = "MODE")]
    fail_mode: Option<String>,
    /// Where each bridge's management socket (BRIDGE.mgmt) goes.
    #[arg(long, value_name = "DIR", default_value = "/run/sluice")]
    run_dir: std::path::PathBuf,
    /// nullx mode: no pipeline, the first port's frames go to the second and
    /// back (third <-> fourth, ...). The floor for every benchmark.
    #[arg(long)]
    nullx: bool,
    /// Check the configuration (file, flags, TLS files) and exit: 0 and a
    /// summary when it is valid, 1 and the error otherwise. Touches no
    /// interface.
    #[arg(long)]
    check_config: bool,
}

/// Exit status when a thread of the daemon died (EX_SOFTWARE): the
/// service manager restarts the daemon.
const EXIT_THREAD_DIED: i32 = 70;

fn main() {
    health::install_panic_hook();
    // The control thread is guarded like the workers: a panic in it is
    // logged and ends the daemon with the same status.
    let deaths = health::Deaths::default();
    let result = health::catch(&deaths, health::Who::Thread("control"), run);
    match result {
        Some(Ok(None)) => {}
        Some(Ok(Some(death))) => {
            eprintln!("sluice: {death}");
            std::process::exit(EXIT_THREAD_DIED);
        }
        Some(Err(e)) => {
            eprintln!("sluice: {e}");
            std::process::exit(1);
        }
        None => {
            eprintln!("sluice: {}", deaths.first().unwrap_or_default());
            std::process::exit(EXIT_THREAD_DIED);
        }
    }
}

/// Runs the daemon; `Some(reason)` if it stopped because one of its threads
/// died.
fn run() -> Result<Option<String>, Box<dyn std::error::Error>> {
    let args = Args::parse();
    // Structured logs on stderr; RUST_LOG overrides the level (default info).
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    let mut file = match &args.config {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).map_err(|e| format!("config: {}: {e}", p.display()))?;
            config::parse_file(&text)?
        }
        None => config::File::default(),
    };
    // Flags about the bridge's workers and ports apply to a single bridge.
    if !args.cpus.is_empty()
        || args.workers.is_some()
        || args.backend.is_some()
        || !args.controllers.is_empty()
        || !args.listen.is_empty()
        || args.fail_mode.is_some()
    {
        if !file.bridges.is_empty() {
            return Err("--cpu, --workers, --backend, --controller, --listen and --fail-mode apply to one bridge; with [[bridges]] set them per bridge".into());
        }
        let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
        if let Some(c) = args.cpus.iter().find(|&&c| c >= ncpu) {
            return Err(format!("--cpu {c}: this machine has CPUs 0-{}", ncpu - 1).into());
        }
        if !args.cpus.is_empty() {
            file.bridge.cpu = None;
            file.bridge.cpus = args.cpus.clone();
        }
        if args.workers.is_some() {
            file.bridge.workers = args.workers;
        }
        if args.backend.is_some() {
            file.bridge.backend = args.backend.clone();
        }
        file.bridge
            .controllers
            .extend(args.controllers.iter().cloned());
        file.bridge.listen.extend(args.listen.iter().cloned());
        match args.fail_mode.as_deref() {
            None => {}
            Some("standalone") => file.bridge.fail_mode = config::FailMode::Standalone,
            Some("secure") => file.bridge.fail_mode = config::FailMode::Secure,
            Some(m) => return Err(format!("--fail-mode {m}: expected standalone or secure").into()),
        }
    }
    if let (Some(k), Some(c), Some(ca)) = (&args.private_key, &args.certificate, &args.ca_cert) {
        file.tls = Some(config::TlsSection {
            private_key: k.clone(),
            certificate: c.clone(),
            ca_cert: ca.clone(),
        });
    } else if args.private_key.is_some() || args.certificate.is_some() || args.ca_cert.is_some() {
        return Err("--private-key, --certificate and --ca-cert go together".into());
    }
    let tls_identity = config::load_tls(&file.tls)?;
    let cfgs = config::check_all(file, &args.ports)?;
    if args.check_config {
        for c in &cfgs {
            println!(
                "bridge {}: {} port(s), {} flow(s), {} group(s), {} meter(s), {} endpoint(s)",
                c.name,
                c.ports.len() + c.pcap.len(),
                c.flows.len(),
                c.groups.len(),
                c.meters.len(),
                c.endpoints.len()
            );
        }
        println!("configuration ok");
        return Ok(None);
    }
    let fault = health::Fault::from_env()?;
    // Subscribe to link events before reading any port's state, so that no
    // change between the two is missed. Without netlink, poll sysfs.
    let mut links = match netdev::link::LinkWatcher::open() {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(error = %e, "no netlink link events; polling link state every 100 ms");
            None
        }
    };

    // Open every port of every bridge before anything runs: a port that
    // cannot open stops the start.
    let mut running = Vec::new();
    let mut bridges = Vec::new();
    for cfg in cfgs {
        let (r, b) = build(cfg, &args, tls_identity.clone())?;
        running.push(r);
        bridges.push(b);
    }

    // A thread of the daemon that dies (a panic) is never silent: it is
    // logged at error level, the other threads are stopped, and the daemon
    // exits with EXIT_THREAD_DIED so that its service manager restarts it
    // (the `health` module says why not a restart in place).
    let stop = Arc::new(AtomicBool::new(false));
    let deaths = Arc::new(health::Deaths::default());
    signal_hook::flag::register(signal_hook::consts::SIGINT, stop.clone())?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone())?;

    if let Some(addr) = args.metrics {
        let listener =
            std::net::TcpListener::bind(addr).map_err(|e| format!("--metrics {addr}: {e}"))?;
        let sources: Vec<metrics::Sources> = running.iter().map(Running::metrics_sources).collect();
        let deaths = deaths.clone();
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                health::guarded(&deaths, &stop, health::Who::Thread("metrics"), || {
                    metrics::serve(listener, sources)
                })
            })?;
    }

    let mut workers = Vec::new();
    for (i, (r, bridge)) in running.iter().zip(bridges).enumerate() {
        for (mut w, cpu) in bridge.into_iter().zip(r.cpus.clone()) {
            if i == 0 && w.worker == 0 {
                w.panic_after_batches = fault.worker_panic_after;
            }
            let (stop, deaths) = (stop.clone(), deaths.clone());
            let name = format!("{}-w{}", r.name, w.worker);
            let (bridge, worker) = (r.name.clone(), w.worker);
            workers.push(health::Thread {
                name: name.clone(),
                handle: std::thread::Builder::new().name(name).spawn(move || {
                    let who = health::Who::Worker {
                        bridge: &bridge,
                        worker,
                    };
                    health::guarded(&deaths, &stop, who, || {
                        if let Some(c) = cpu {
                            datapath::pin_to_cpu(c);
                        }
                        w.run(&stop)
                    })
                })?,
            });
        }
        let port_list = r
            .names
            .iter()
            .map(|(n, s)| format!("{s}={}", port_label(*n)))
            .collect::<Vec<_>>()
            .join(" ");
        tracing::info!(
            bridge = %r.name,
            datapath_id = %format!("{:#018x}", r.datapath_id),
            mode = if args.nullx { "nullx mode" } else { "pipeline" },
            workers = r.cpus.len(),
            ports = %port_list,
            "bridge running"
        );
    }

    let start = Instant::now();
    let mut last_stats = Instant::now();
    let mut last_link_poll = Instant::now();
    // The first round does not wait: controllers are dialled and listeners
    // served as soon as the bridges run.
    let mut timeout_ms = 0;
    while !stop.load(Relaxed) {
        // One poll over link events and every bridge's OpenFlow sockets
        // and packet-in queue; the 100 ms timeout keeps the loop serving
        // signals, statistics, keepalives and --duration.
        let mut fds = Vec::new();
        if let Some(w) = &links {
            fds.push(libc::pollfd {
                fd: w.fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        for r in &running {
            r.control.poll_fds(&mut fds);
        }
        // SAFETY: fds is a valid array of pollfd for the call.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        timeout_ms = 100;
        match &mut links {
            Some(w) => {
                let changes: Vec<(String, bool)> =
                    w.changes().into_iter().map(|c| (c.name, c.up)).collect();
                if !changes.is_empty() {
                    for r in &mut running {
                        r.apply_links(changes.iter().cloned());
                    }
                }
            }
            None => {
                if last_link_poll.elapsed() >= Duration::from_millis(100) {
                    running.iter_mut().for_each(Running::poll_links);
                    last_link_poll = Instant::now();
                }
            }
        }
        let now = datapath::clock::now_ns();
        for r in &mut running {
            r.control.service(now);
            r.watch_workers(now);
        }
        // A worker whose thread ended while the daemon runs has died, even
        // if its panic was not caught (belt and braces with `guarded`).
        if let Some(t) = workers.iter().find(|t| t.handle.is_finished()) {
            if !stop.load(Relaxed) {
                deaths.record(format!("thread {} ended on its own", t.name));
                stop.store(true, Relaxed);
            }
        }
        if args.stats_interval > 0.0 && last_stats.elapsed().as_secs_f64() >= args.stats_interval {
            running.iter().for_each(Running::print_stats);
            last_stats = Instant::now();
        }
        if args
            .duration
            .is_some_and(|d| start.elapsed().as_secs_f64() >= d)
        {
            stop.store(true, Relaxed);
        }
    }
    let death = deaths.first();
    // Workers see `stop` within one round (<= 10 ms idle); one that does
    // not (stalled) is left behind after 2 s so that a dead bridge cannot
    // hold the exit.
    let left = health::join_all(workers, Duration::from_secs(2));
    for name in &left {
        tracing::error!(thread = %name, "thread did not stop within 2 s; exiting without it");
    }
    for r in &running {
        r.print_stats();
        tracing::info!(bridge = %r.name, "stopped");
    }
    if let Some(d) = &death {
        tracing::error!(reason = %d, status = EXIT_THREAD_DIED, "exiting because a thread died");
    }
    Ok(death)
}

/// A bridge as the control thread keeps it.
struct Running {
    name: String,
    datapath_id: u64,
    /// Each worker's CPU, if pinned.
    cpus: Vec<Option<usize>>,
    control: control::Control,
    shared: Arc<ArcSwap<pipeline::Snapshot>>,
    names: Vec<(u32, String)>,
    link_probe: Vec<(u32, String)>,
    /// Per port, one set of counters per worker.
    counters: Vec<Vec<Arc<PortCounters>>>,
    /// One set per worker.
    bridge_counters: Vec<Arc<BridgeCounters>>,
    /// Per worker: whether it was last seen stalled (logged once).
    stalled: Vec<bool>,
    macs: Arc<MacTable>,
}

/// Opens one handle on port `name` per worker.
fn open_port(
    name: &str,
    backend: config::Backend,
    workers: usize,
) -> std::io::Result<Vec<Box<dyn Port>>> {
    use netdev::afpacket::{AfPacket, Options};
    let boxed = |v: Vec<AfPacket>| {
        v.into_iter()
            .map(|p| Box::new(p) as Box<dyn Port>)
            .collect()
    };
    match backend {
        config::Backend::AfPacket { rings } => {
            let opts = Options {
                rings,
                ..Options::default()
            };
            Ok(boxed(AfPacket::open_fanout(name, opts, workers)?))
        }
        config::Backend::AfXdp { generic } => {
            match netdev::afxdp::AfXdp::open_queues(name, workers, generic) {
                Ok(socks) => {
                    tracing::info!(
                        port = name,
                        xdp = if socks[0].native() {
                            "native"
                        } else {
                            "generic"
                        },
                        copy = if socks[0].zero_copy() {
                            "zero-copy"
                        } else {
                            "copy"
                        },
                        "AF_XDP port"
                    );
                    Ok(socks
                        .into_iter()
                        .map(|p| Box::new(p) as Box<dyn Port>)
                        .collect())
                }
                Err(e) => {
                    tracing::warn!(port = name, error = %e, "AF_XDP cannot be used; falling back to AF_PACKET");
                    Ok(boxed(AfPacket::open_fanout(
                        name,
                        Options::default(),
                        workers,
                    )?))
                }
            }
        }
        // Pcap ports are opened from their captures (config::check refuses
        // a pcap port without them).
        config::Backend::Pcap => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a pcap port needs pcap_in or pcap_out in its [[port]] entry",
        )),
    }
}

/// Opens a bridge's ports (one handle per worker) and builds its pipeline;
/// nothing runs yet.
fn build(
    cfg: config::Config,
    args: &Args,
    tls: Option<tls::Tls>,
) -> Result<(Running, Vec<BridgeWorker>), Box<dyn std::error::Error>> {
    let cpus = cfg.workers.clone();
    let n = cpus.len();
    // devs[port][worker]
    let mut devs: Vec<(u32, Vec<Box<dyn Port>>)> = Vec::new();
    for (no, name) in &cfg.ports {
        let backend = cfg
            .backends
            .iter()
            .find(|(n, _)| n == no)
            .map_or(config::Backend::AfPacket { rings: true }, |(_, b)| *b);
        let handles: Vec<Box<dyn Port>> = match cfg.pcap.iter().find(|p| p.port_no == *no) {
            Some(p) => {
                let mut port =
                    netdev::pcap::PcapPort::open(name, p.input.as_deref(), p.output.as_deref());
                if let Some(rate) = p.rate {
                    port = port.and_then(|x| x.paced(rate));
                }
                vec![Box::new(
                    port.map_err(|e| format!("port {name} (ofport {no}): {e}"))?,
                )]
            }
            None => open_port(name, backend, n)
                .map_err(|e| format!("port {name} (ofport {no}): {e}"))?,
        };
        devs.push((*no, handles));
    }
    // The LOCAL port, as in Open vSwitch: a TAP device named after the bridge
    // (one queue per worker).
    if cfg.local_port && !args.no_local && !args.nullx {
        let taps = netdev::tap::Tap::create_queues(&cfg.name, n)
            .map_err(|e| format!("LOCAL port of bridge {}: {e}", cfg.name))?;
        devs.push((
            ofp::port::port_no::LOCAL,
            taps.into_iter()
                .map(|t| Box::new(t) as Box<dyn Port>)
                .collect(),
        ));
    }
    let mut p = Pipeline::new(pipeline::Config {
        workers: n,
        max_flows: cfg.max_flows,
        ..pipeline::Config::default()
    });
    for (no, handles) in &devs {
        p.set_port(PortState {
            port_no: *no,
            live: handles[0].link_up(),
            no_flood: false,
            no_fwd: false,
            no_recv: false,
        });
    }
    // Standalone: NORMAL learning while no controller is connected (the
    // flow's cookie marks it as the switch's own).
    let standalone_flow = (cfg.fail_mode == config::FailMode::Standalone).then(|| {
        ofp::text::parse_flow_mod("cookie=0x736c75696365,priority=0,actions=normal")
            .expect("built-in flow")
    });
    if let Some(f) = &standalone_flow {
        p.flow_mod(f, 0)?;
    }
    for (i, m) in cfg.meters.iter().enumerate() {
        p.meter_mod(m, 0)
            .map_err(|e| format!("config: bridge {}: meters[{i}]: {e}", cfg.name))?;
    }
    for (i, g) in cfg.groups.iter().enumerate() {
        p.group_mod(g, 0)
            .map_err(|e| format!("config: bridge {}: groups[{i}]: {e}", cfg.name))?;
    }
    for (i, fm) in cfg.flows.iter().enumerate() {
        p.flow_mod(fm, 0)
            .map_err(|e| format!("config: bridge {}: flows[{i}]: {e}", cfg.name))?;
    }
    let shared = Arc::new(ArcSwap::new(p.snapshot()));
    let channels = Arc::new(datapath::channel::Channels::new(4096)?);
    let hw_addrs: Vec<[u8; 6]> = devs.iter().map(|(_, d)| d[0].hw_addr()).collect();
    let link_states: Vec<(u32, bool)> = devs.iter().map(|(no, d)| (*no, d[0].link_up())).collect();
    let counters: Vec<Vec<Arc<PortCounters>>> = devs
        .iter()
        .map(|_| (0..n).map(|_| Arc::default()).collect())
        .collect();
    let bridge_counters: Vec<Arc<BridgeCounters>> = (0..n).map(|_| Arc::default()).collect();
    let names: Vec<(u32, String)> = devs
        .iter()
        .map(|(no, d)| (*no, d[0].name().to_string()))
        .collect();
    // Links to watch: interfaces only (not LOCAL, not pcap files).
    let link_probe = names
        .iter()
        .filter(|(no, _)| {
            *no != ofp::port::port_no::LOCAL && !cfg.pcap.iter().any(|p| p.port_no == *no)
        })
        .cloned()
        .collect();
    let macs = Arc::new(MacTable::default());
    // Each port's queues once; the other workers get siblings sharing the
    // rate budget and counters.
    let queues: Vec<Vec<datapath::queue::Queue>> = devs
        .iter()
        .map(|(port_no, _)| {
            cfg.queues
                .iter()
                .filter(|(no, _)| no == port_no)
                .map(|(_, q)| {
                    datapath::queue::Queue::new(q.id, q.max_rate * 1000, q.min_rate * 1000, 1024)
                })
                .collect()
        })
        .collect();
    let queue_counters: Vec<(u32, u32, Arc<datapath::queue::QueueCounters>)> = devs
        .iter()
        .zip(&queues)
        .flat_map(|((port_no, _), qs)| {
            qs.iter()
                .map(|q| (*port_no, q.queue_id, q.counters.clone()))
        })
        .collect();
    let mut per_worker: Vec<Vec<BridgePort>> = (0..n).map(|_| Vec::new()).collect();
    for (x, (port_no, handles)) in devs.into_iter().enumerate() {
        for (w, dev) in handles.into_iter().enumerate() {
            per_worker[w].push(BridgePort {
                port_no,
                dev,
                counters: counters[x][w].clone(),
                queues: queues[x].iter().map(|q| q.sibling()).collect(),
            });
        }
    }
    let workers = per_worker
        .into_iter()
        .enumerate()
        .map(|(w, ports)| BridgeWorker {
            worker: w,
            ports,
            pipeline: shared.clone(),
            counters: bridge_counters[w].clone(),
            macs: macs.clone(),
            channels: Some(channels.clone()),
            nullx: args.nullx,
            panic_after_batches: None,
        })
        .collect();
    let mut agent = agent::Agent::new(
        cfg.datapath_id,
        p,
        control::DpHandle {
            shared: shared.clone(),
            channels: channels.clone(),
            counters: names
                .iter()
                .zip(&counters)
                .map(|((no, _), c)| (*no, c.clone()))
                .collect(),
            queues: queue_counters,
        },
        &cfg.name,
    );
    if let Some(r) = cfg.packet_in_rate {
        agent.conn_config.packet_in_rate = r;
    }
    let now = datapath::clock::now_ns();
    for ((no, name), hw) in names.iter().zip(&hw_addrs) {
        agent.add_port(agent::PortInfo {
            port_no: *no,
            name: name.clone(),
            hw_addr: *hw,
            config: 0,
            link_up: agent_link_up(*no, &link_states),
            queues: cfg
                .queues
                .iter()
                .filter(|(n, _)| n == no)
                .map(|(_, q)| (q.id, q.min_rate, q.max_rate))
                .collect(),
            since_ns: now,
        });
    }
    let mut endpoints = cfg.endpoints.clone();
    if !args.nullx {
        endpoints.push(control::Endpoint::Mgmt(
            args.run_dir.join(format!("{}.mgmt", cfg.name)),
        ));
    }
    let mut control = control::Control::new(
        &cfg.name,
        agent,
        channels,
        &endpoints,
        tls,
        cfg.max_connections,
    )
    .map_err(|e| format!("bridge {}: {e}", cfg.name))?;
    control.standalone_flow = standalone_flow;
    let running = Running {
        name: cfg.name,
        datapath_id: cfg.datapath_id,
        cpus,
        control,
        shared,
        names,
        link_probe,
        counters,
        stalled: vec![false; bridge_counters.len()],
        bridge_counters,
        macs,
    };
    Ok((running, workers))
}

impl Running {
    /// Republishes the pipeline when a port's link goes up or down.
    /// Applies link states (interface name, up) to this bridge's ports and
    /// republishes the pipeline if any port changed.
    fn apply_links(&mut self, states: impl IntoIterator<Item = (String, bool)>) {
        for (name, up) in states {
            let Some((no, _)) = self.link_probe.iter().find(|(_, n)| *n == name) else {
                continue;
            };
            let no = *no;
            if self
                .control
                .agent
                .ports
                .get(&no)
                .is_some_and(|p| p.link_up != up)
            {
                tracing::info!(bridge = %self.name, port = no, name = %name, up, "link state changed");
                if !up {
                    self.macs.forget_port(no);
                }
                // The agent republishes the pipeline and tells controllers.
                self.control.agent.link_changed(no, up);
            }
        }
    }

    /// Reads every watched port's state from sysfs (the fallback when
    /// netlink events are not available).
    fn poll_links(&mut self) {
        let states: Vec<(String, bool)> = self
            .link_probe
            .iter()
            .map(|(_, name)| {
                let up = std::fs::read_to_string(format!("/sys/class/net/{name}/operstate"))
                    .map(|s| s.trim() != "down")
                    .unwrap_or(false);
                (name.clone(), up)
            })
            .collect();
        self.apply_links(states);
    }

    /// Logs a worker whose heartbeat is more than a second old (stalled:
    /// alive but not looping), once per stall, and its recovery.
    fn watch_workers(&mut self, now: u64) {
        for (w, c) in self.bridge_counters.iter().enumerate() {
            let beat = c.heartbeat_ns.load(Relaxed);
            let stalled = health::stalled(c.running.load(Relaxed), beat, now);
            if stalled != self.stalled[w] {
                self.stalled[w] = stalled;
                if stalled {
                    tracing::warn!(bridge = %self.name, worker = w,
                        heartbeat_age_ms = now.saturating_sub(beat) / 1_000_000,
                        "worker stalled: no loop round for over a second");
                } else {
                    tracing::info!(bridge = %self.name, worker = w, "worker resumed");
                }
            }
        }
    }

    fn metrics_sources(&self) -> metrics::Sources {
        metrics::Sources {
            bridge: self.name.clone(),
            ports: self
                .names
                .iter()
                .zip(&self.counters)
                .map(|((no, n), c)| (*no, n.clone(), c.clone()))
                .collect(),
            counters: self.bridge_counters.clone(),
            pipeline: self.shared.clone(),
        }
    }

    fn print_stats(&self) {
        print_stats(
            &self.name,
            &self.names,
            &self.counters,
            &self.bridge_counters,
        );
        let ch = &self.control.channels;
        let limited: u64 = self
            .control
            .agent
            .conns
            .values()
            .map(|c| c.packet_in_dropped)
            .sum();
        println!(
            "controller channel: packet-in queue full {}  packet-out queue full {}  packet-in rate-limited {}",
            ch.packet_in_dropped.load(Relaxed),
            ch.packet_out_dropped.load(Relaxed),
            limited
        );
    }
}

fn print_stats(
    bridge: &str,
    names: &[(u32, String)],
    counters: &[Vec<Arc<PortCounters>>],
    b: &[Arc<BridgeCounters>],
) {
    let b = &BridgeCounters::sum(b);
    println!("bridge {bridge}");
    println!("port  name             rx_pkts    rx_bytes    tx_pkts    tx_bytes  tx_drop   rx_err");
    for ((no, name), c) in names.iter().zip(counters) {
        let c = PortCounters::sum(c);
        let no = port_label(*no);
        println!(
            "{:<5} {:<12} {:>11} {:>11} {:>10} {:>11} {:>8} {:>8}",
            no,
            name,
            c.rx_packets.load(Relaxed),
            c.rx_bytes.load(Relaxed),
            c.tx_packets.load(Relaxed),
            c.tx_bytes.load(Relaxed),
            c.tx_dropped.load(Relaxed),
            c.rx_errors.load(Relaxed)
        );
    }
    println!(
        "pipeline: dropped {}  to_controller {}  skipped_edits {}  over_limit {}",
        b.dropped.load(Relaxed),
        b.to_controller.load(Relaxed),
        b.skipped_edits.load(Relaxed),
        b.over_limit.load(Relaxed)
    );
    let us = |ns: u64| ns as f64 / 1000.0;
    println!(
        "in-switch delay (rx batch -> handed to tx, {} frames): p50 {:.1} us  p99 {:.1} us  p99.9 {:.1} us  max {:.1} us",
        b.delay.count(),
        us(b.delay.quantile(0.5)),
        us(b.delay.quantile(0.99)),
        us(b.delay.quantile(0.999)),
        us(b.delay.max())
    );
}

/// A port's link state as read when it was opened.
fn agent_link_up(no: u32, states: &[(u32, bool)]) -> bool {
    states
        .iter()
        .find(|(n, _)| *n == no)
        .is_none_or(|(_, up)| *up)
}

/// A port number as people read it ("local" for OFPP_LOCAL).
fn port_label(no: u32) -> String {
    ofp::port::port_no::name(no).map_or_else(|| no.to_string(), str::to_string)
}
