//! `sluice`: the switch daemon.
//!
//! ```text
//! sluice --port veth-a --port veth-b              # standalone learning switch
//! sluice --config /etc/sluice/sluice.toml         # the default file
//! ```
//!
//! Checks the whole configuration, builds each bridge ([`running`]: its
//! ports opened, its pipeline built; in standalone mode a table-miss rule
//! sends everything to NORMAL, the learning switch), runs each bridge on its
//! worker threads, and on the main thread serves the OpenFlow side
//! ([`openflow`]), follows interfaces coming, going and changing
//! ([`running::Running::apply_links`]) and watches the workers. SIGHUP
//! reloads the configuration ([`reload`]); the service manager hears READY,
//! RELOADING and STOPPING ([`notify`]). On SIGINT or SIGTERM it stops
//! cleanly, prints its counters and exits 0; when a worker dies it stops the
//! same way and exits 70 ([`health`] says why).

mod config;
mod database;
mod dial;
mod health;
mod launch;
mod metrics;
mod notify;
mod openflow;
mod reload;
mod running;
mod unixctl;

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use running::Running;

#[derive(Parser, Debug)]
#[command(
    name = "sluice",
    about = "sluice: an OpenFlow software switch (1.0, 1.2-1.5)",
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
    /// Zones with a series of their own in the metrics' per-zone
    /// connection counts (the busiest; the rest summed in zone="other").
    #[arg(long, value_name = "N", default_value_t = metrics::ZONE_SERIES)]
    metrics_zones: usize,
    /// Run a worker pinned to this CPU (repeatable: one worker per CPU).
    #[arg(long = "cpu", value_name = "CPU")]
    cpus: Vec<usize>,
    /// Number of (unpinned) workers for the bridge.
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
    /// Back end of the bridge's ports: afpacket (TPACKET_V2 rings),
    /// afpacket-mmsg (recvmmsg/sendmmsg), afxdp, afxdp-generic, xdp (AF_XDP
    /// with the flow table compiled to the XDP hook), xdp-generic (the same
    /// at the generic XDP hook).
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
    /// Where each bridge's management socket (BRIDGE.mgmt) goes
    /// [default: /run/sluice; with --ovs, Open vSwitch's: $OVS_RUNDIR or
    /// /var/run/openvswitch].
    #[arg(long, value_name = "DIR")]
    run_dir: Option<std::path::PathBuf>,
    /// Stand in for Open vSwitch's ovs-vswitchd: the run directory becomes
    /// Open vSwitch's (unless --run-dir is given), with the pidfile
    /// ovs-vswitchd.pid and the unixctl socket ovs-vswitchd.PID.ctl that
    /// ovs-appctl looks for; ovs-ofctl finds the bridges' BRIDGE.mgmt
    /// sockets there.
    #[arg(long)]
    ovs: bool,
    /// Serve Open vSwitch's unixctl (ovs-appctl -t PATH) on this socket
    /// (with --ovs, instead of RUN_DIR/ovs-vswitchd.PID.ctl).
    #[arg(long, value_name = "PATH")]
    unixctl: Option<std::path::PathBuf>,
    /// nullx mode: no pipeline, the first port's frames go to the second and
    /// back (third <-> fourth, ...). The floor for every benchmark.
    #[arg(long)]
    nullx: bool,
    /// Serve Open vSwitch's database (OVSDB, RFC 7047) on this remote, as
    /// ovsdb-server's --remote: punix:PATH, ptcp:PORT[:IP], pssl:PORT[:IP],
    /// or an active unix:PATH, tcp:IP:PORT, ssl:IP:PORT (repeatable). The
    /// database then configures every bridge (docs/OVSDB.md).
    #[arg(long = "ovsdb", value_name = "REMOTE")]
    ovsdb: Vec<String>,
    /// The database file (created if missing; kept crash-safe). Default:
    /// /var/lib/sluice/conf.db; with --ovs and OVS_DBDIR set,
    /// OVS_DBDIR/sluice-conf.db (never Open vSwitch's own conf.db).
    #[arg(long, value_name = "FILE")]
    ovsdb_file: Option<std::path::PathBuf>,
    /// The schema the database follows: Open vSwitch's.
    #[arg(long, value_name = "FILE", default_value = database::DEFAULT_SCHEMA)]
    ovsdb_schema: std::path::PathBuf,
    /// Database connections held at most. At the cap a newcomer takes the
    /// place of the connection idle longest (no monitor, lock or pending
    /// request); a connection with a monitor is never closed for one
    /// (docs/OVSDB.md, "Bounds against the worst client").
    #[arg(long, value_name = "N", default_value_t = database::MAX_CONNS,
          value_parser = at_least_one)]
    ovsdb_max_connections: usize,
    /// Check the configuration (file, flags, TLS files) and exit: 0 and a
    /// summary when it is valid, 1 and the error otherwise. Touches no
    /// interface.
    #[arg(long)]
    check_config: bool,
}

/// A count of at least 1 (clap's parser for `--ovsdb-max-connections`).
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// Exit status when a thread of the daemon died (EX_SOFTWARE): the
/// service manager restarts the daemon.
const EXIT_THREAD_DIED: i32 = 70;

fn main() {
    if let Some(code) = clidocs::generate::<Args>() {
        std::process::exit(code);
    }
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
    let log = init_logging();
    let run_dir = unixctl::run_dir(args.ovs, args.run_dir.as_deref());
    let (cfgs, tls_identity) = load_config(&args)?;
    if args.check_config {
        for c in &cfgs {
            println!(
                "bridge {}: {} port(s), {} flow(s), {} group(s), {} meter(s), {} endpoint(s)",
                c.name,
                c.ports.len(),
                c.flows.len(),
                c.groups.len(),
                c.meters.len(),
                c.endpoints.len()
            );
        }
        println!("configuration ok");
        return Ok(None);
    }
    // Connections and ports are descriptors: the kernel's default soft
    // limit (1 024) must not be the cap (docs/OVSDB.md).
    match netdev::os::raise_nofile_limit() {
        // The database's connections, its reserve, and room for ports,
        // sockets and files.
        Ok((soft, _))
            if uses_database(&args)
                && soft < (args.ovsdb_max_connections + database::LOCAL_RESERVE + 256) as u64 =>
        {
            tracing::warn!(limit = soft, ovsdb_max_connections = args.ovsdb_max_connections,
                "the open-file limit is below what --ovsdb-max-connections needs: the kernel's limit, not the cap, may refuse database clients (raise LimitNOFILE)")
        }
        Ok((soft, _)) => tracing::debug!(limit = soft, "open files"),
        Err(e) => tracing::warn!(error = %e, "cannot raise the open-file limit"),
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
    for cfg in cfgs {
        let r = running::build(
            cfg,
            running::Options {
                nullx: args.nullx,
                no_local: args.no_local,
                run_dir: &run_dir,
                tls: tls_identity.clone(),
                set_log: Some(log.set.clone()),
            },
        )?;
        running.push(r);
    }

    // A thread of the daemon that dies (a panic) is never silent: it is
    // logged at error level, the other threads are stopped, and the daemon
    // exits with EXIT_THREAD_DIED so that its service manager restarts it
    // (the `health` module says why not a restart in place).
    let stop = Arc::new(AtomicBool::new(false));
    let deaths = Arc::new(health::Deaths::default());
    signal_hook::flag::register(signal_hook::consts::SIGINT, stop.clone())?;
    signal_hook::flag::register(signal_hook::consts::SIGTERM, stop.clone())?;
    // SIGHUP: read the configuration again (`reload`).
    let reload = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, reload.clone())?;

    // The database server's figures (`--ovsdb`), for the metrics endpoint.
    let ovsdb_counters = Arc::new(database::Counters::default());
    if let Some(addr) = args.metrics {
        let listener =
            std::net::TcpListener::bind(addr).map_err(|e| format!("--metrics {addr}: {e}"))?;
        let sources: Vec<metrics::Sources> = running
            .iter()
            .map(|r| metrics::Sources {
                zone_series: args.metrics_zones,
                ..r.metrics_sources()
            })
            .collect();
        let ovsdb = uses_database(&args).then(|| ovsdb_counters.clone());
        let deaths = deaths.clone();
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                health::guarded(&deaths, &stop, health::Who::Thread("metrics"), || {
                    metrics::serve(listener, sources, ovsdb)
                })
            })?;
    }

    let launcher = launch::Launcher {
        nullx: args.nullx,
        no_local: args.no_local,
        run_dir: run_dir.clone(),
        tls: tls_identity.clone(),
        set_log: log.set.clone(),
        stop: stop.clone(),
        deaths: deaths.clone(),
    };
    let mut workers = Vec::new();
    for (i, r) in running.iter_mut().enumerate() {
        if i == 0 {
            r.inject_worker_panic(fault.worker_panic_after);
        }
        launcher.spawn(r, &mut workers)?;
    }

    // The database's bridges (`--ovsdb`), started as it describes them.
    let mut db = match uses_database(&args) {
        false => None,
        true => Some(start_database(
            &args,
            &run_dir,
            tls_identity.clone(),
            ovsdb_counters.clone(),
        )?),
    };
    let mut base = config_file(&args).unwrap_or_default();
    let mut last_status = Instant::now();
    if let Some(h) = &mut db {
        sync_database(h, &base, &mut running, &mut workers, &launcher, true);
    }

    // ovs-appctl's socket (and, with --ovs, the pidfile it reads).
    let mut ctl = match (&args.unixctl, args.ovs) {
        (Some(path), _) => Some(unixctl::Server::start(
            path,
            args.ovs
                .then(|| unixctl::ovs::pidfile_path(&run_dir))
                .as_deref(),
            Some(log.clone()),
        )?),
        (None, true) => Some(unixctl::Server::start(
            &unixctl::ovs::ctl_path(&run_dir),
            Some(&unixctl::ovs::pidfile_path(&run_dir)),
            Some(log.clone()),
        )?),
        (None, false) => None,
    };

    // Every bridge runs: tell the service manager.
    let mut notify = notify::Notify::from_env();
    notify.send("READY=1");
    let start = Instant::now();
    let mut last_stats = Instant::now();
    let mut last_link_poll = Instant::now();
    // The first round does not wait: controllers are dialled and listeners
    // served as soon as the bridges run.
    let mut timeout_ms = 0;
    while !stop.load(Relaxed) {
        // One poll over link events and every bridge's OpenFlow sockets
        // and packet-in queue, until the soonest time an agent asked for
        // (flow expiry, keepalives, a publication that waits for the
        // workers to leave an old version); at most 100 ms, which keeps
        // the loop serving signals, statistics and --duration.
        if timeout_ms > 0 {
            let now = datapath::clock::now_ns();
            if let Some(next) = running
                .iter()
                .filter_map(|r| r.control.agent().poll_timeout())
                .min()
            {
                let ms = next.saturating_sub(now).div_ceil(1_000_000);
                timeout_ms = timeout_ms.min(ms.min(100) as i32);
            }
        }
        if ctl.as_ref().is_some_and(unixctl::Server::busy) {
            timeout_ms = 0;
        }
        let mut fds = Vec::new();
        if let Some(c) = &ctl {
            c.poll_fds(&mut fds, datapath::clock::now_ns());
        }
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
        if let Some(h) = &db {
            fds.push(libc::pollfd {
                fd: h.fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        // An error (EINTR: a signal) is a wake-up like any other.
        let _ = netdev::os::poll(&mut fds, timeout_ms);
        timeout_ms = 100;
        match &mut links {
            Some(w) => {
                let changes = w.changes();
                if !changes.is_empty() {
                    for r in &mut running {
                        r.apply_links(&changes);
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
        if reload.swap(false, Relaxed) {
            notify.reloading();
            match &mut db {
                // The database configures the bridges: the file gives
                // only what the schema has no place for.
                Some(h) => {
                    match load_config(&args) {
                        Ok(_) => {
                            base = config_file(&args).unwrap_or_default();
                            h.force();
                            tracing::info!("SIGHUP: [conntrack] and [tls] read again; bridges follow the database");
                        }
                        Err(e) => tracing::error!(error = %e, "configuration NOT reloaded"),
                    }
                }
                None => reload_config(&args, &mut running),
            }
            notify.send("READY=1");
        }
        if let Some(h) = &mut db {
            let periodic = last_status.elapsed() >= Duration::from_secs(1);
            if periodic {
                last_status = Instant::now();
            }
            sync_database(h, &base, &mut running, &mut workers, &launcher, periodic);
        }
        notify.watchdog();
        let now = datapath::clock::now_ns();
        for r in &mut running {
            r.control.service(now);
            r.watch_workers(now);
            r.retry_detached();
        }
        if let Some(c) = &mut ctl {
            if c.service(&mut running, now) == unixctl::After::Exit {
                tracing::info!("exit asked for (unixctl): stopping");
                stop.store(true, Relaxed);
            }
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
    notify.send("STOPPING=1");
    for r in &running {
        r.stop.store(true, Relaxed);
    }
    if let Some(mut h) = db.take() {
        h.stop();
    }
    drop(ctl);
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

/// Structured logs on stderr; RUST_LOG sets the first filter (default
/// info), `sluice-ctl vlog` and `ovs-appctl vlog/set` change it while the
/// daemon runs.
fn init_logging() -> unixctl::Logging {
    use tracing_subscriber::{fmt, prelude::*, reload, EnvFilter};
    let initial = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let (filter, handle) = reload::Layer::new(initial);
    tracing_subscriber::registry()
        .with(filter)
        .with(
            fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_target(false),
        )
        .init();
    let reader = handle.clone();
    unixctl::Logging {
        set: Arc::new(move |spec: &str| {
            let f = EnvFilter::try_new(spec).map_err(|e| format!("vlog {spec:?}: {e}"))?;
            let text = f.to_string();
            handle.reload(f).map_err(|e| format!("vlog: {e}"))?;
            tracing::info!(filter = %text, "log filter changed");
            Ok(text)
        }),
        get: Arc::new(move || reader.with_current(|f| f.to_string()).unwrap_or_default()),
    }
}

/// Where the configuration comes from: `--config`, else the default
/// file when no port is given on the command line and it exists.
fn config_path(args: &Args) -> Option<std::path::PathBuf> {
    match &args.config {
        Some(p) => Some(p.clone()),
        None if args.ports.is_empty() => {
            let d = std::path::PathBuf::from(DEFAULT_CONFIG);
            d.exists().then_some(d)
        }
        None => None,
    }
}

/// The default configuration file.
const DEFAULT_CONFIG: &str = "/etc/sluice/sluice.toml";

/// Reads and checks the configuration (file and flags): one config per
/// bridge, and the TLS identity. Used at start and on SIGHUP.
fn load_config(
    args: &Args,
) -> Result<(Vec<config::Config>, Option<tls::Tls>), Box<dyn std::error::Error>> {
    let mut file = match config_path(args) {
        Some(p) => {
            let text =
                std::fs::read_to_string(&p).map_err(|e| format!("config: {}: {e}", p.display()))?;
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
    if uses_database(args) {
        // One source of truth: the database configures the bridges.
        if !args.ports.is_empty()
            || !file.bridges.is_empty()
            || !file.ports.is_empty()
            || !args.cpus.is_empty()
            || args.workers.is_some()
            || args.backend.is_some()
            || !args.controllers.is_empty()
            || !args.listen.is_empty()
            || args.fail_mode.is_some()
        {
            return Err("with --ovsdb (and --ovs) the database configures the bridges: --port, --cpu, --workers, --backend, --controller, --listen, --fail-mode and the file's [bridge]/[[bridges]]/[[port]] do not apply (the file may give [conntrack] and [tls]; docs/OVSDB.md)".into());
        }
        config::check_shared(&file)?;
        return Ok((Vec::new(), tls_identity));
    }
    if config_path(args).is_none() && args.ports.is_empty() {
        return Err(format!(
            "no ports: give --port NAME, --config FILE, or write {DEFAULT_CONFIG}"
        )
        .into());
    }
    Ok((config::check_all(file, &args.ports)?, tls_identity))
}

/// Opens the database and starts serving it (`--ovsdb`).
fn start_database(
    args: &Args,
    run_dir: &std::path::Path,
    identity: Option<tls::Tls>,
    counters: Arc<database::Counters>,
) -> Result<database::Handle, Box<dyn std::error::Error>> {
    let mut remotes = Vec::new();
    for r in &args.ovsdb {
        remotes.push(jsonrpc::Remote::parse(r).map_err(|e| format!("--ovsdb {r}: {e}"))?);
    }
    // Standing in for Open vSwitch: where its tools look for the database.
    if remotes.is_empty() && args.ovs {
        remotes.push(jsonrpc::Remote::PUnix(run_dir.join("db.sock")));
    }
    let file = match (&args.ovsdb_file, std::env::var_os("OVS_DBDIR")) {
        (Some(f), _) => f.clone(),
        (None, Some(d)) if args.ovs => std::path::Path::new(&d).join("sluice-conf.db"),
        _ => std::path::PathBuf::from("/var/lib/sluice/conf.db"),
    };
    Ok(database::Handle::start(database::Options {
        remotes,
        schema: args.ovsdb_schema.clone(),
        file,
        identity,
        max_connections: args.ovsdb_max_connections,
        counters,
    })?)
}

/// Whether the database configures the bridges: `--ovsdb`, or `--ovs`
/// (which serves it where Open vSwitch's tools look).
fn uses_database(args: &Args) -> bool {
    !args.ovsdb.is_empty() || args.ovs
}

/// The database side's round: a changed database is applied to the
/// bridges and `cur_cfg` written back; with `status`, the switch's state
/// (link, MTU, controllers) is written back even when nothing changed.
fn sync_database(
    h: &mut database::Handle,
    base: &config::File,
    running: &mut Vec<Running>,
    workers: &mut Vec<health::Thread>,
    launcher: &launch::Launcher,
    status: bool,
) {
    let changed = h.changed();
    if let Some(db) = &changed {
        let applied =
            database::apply::reconcile(db, base, running, workers, launcher, &mut h.applied);
        if let Some(e) = applied.errors {
            h.errors = e;
        }
        h.applied_cfg = Some(applied.next_cfg);
    }
    if changed.is_none() && !status {
        return;
    }
    let Some(db) = h.current.clone() else { return };
    // Statistics every 5 s, as Open vSwitch writes them.
    let stats = h.stats_due();
    let ops = database::status::ops(
        &db,
        &database::apply::state(running),
        &h.errors,
        h.applied_cfg,
        stats,
    );
    h.write(ops);
}

/// The configuration file's contents (None: no file, or it does not
/// parse; `load_config` has said why).
fn config_file(args: &Args) -> Option<config::File> {
    let p = config_path(args)?;
    config::parse_file(&std::fs::read_to_string(p).ok()?).ok()
}

/// SIGHUP: applies the configuration file's changes, or keeps everything
/// as it is if the file is refused (see `reload`).
fn reload_config(args: &Args, running: &mut [Running]) {
    let Some(path) = config_path(args) else {
        tracing::warn!("SIGHUP: no configuration file to read again (started with --port only)");
        return;
    };
    tracing::info!(file = %path.display(), "SIGHUP: reading the configuration again");
    let applied = load_config(args)
        .map_err(|e| e.to_string())
        .and_then(|(cfgs, _)| reload::apply(running, cfgs));
    match applied {
        Ok(problems) => {
            for p in &problems {
                tracing::warn!("reload: {p}");
            }
            tracing::info!(problems = problems.len(), "configuration reloaded");
        }
        Err(e) => {
            tracing::error!(error = %e, "configuration NOT reloaded; the running configuration stays")
        }
    }
}
