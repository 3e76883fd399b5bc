//! One bridge as the daemon's control thread runs it: built from its
//! checked configuration ([`build`]), then kept current ([`Running`]):
//! its OpenFlow side, its ports' interfaces coming, going and changing
//! state, and its workers' health.
//!
//! The daemon only feeds the bridge's agent: every port is added,
//! detached, re-attached (and, by a reload, deleted or set) through the
//! agent's inputs, which ask the bridge (the agent's datapath) and tell
//! controllers; the bridge itself is read only here ([`Running::bridge`]).
//! What stays the daemon's: whether an interface exists, which devices to
//! open at once (on threads, with the bridge's opener, which reads the
//! bridge and maps its shared UMEMs once), the interfaces' indexes and
//! MTUs, its own log lines (the bridge logs what it does to a port: the
//! slow detach warning is the `datapath` module's).
//!
//! Interfaces: a port whose interface is deleted is detached (its devices
//! closed, so no worker polls a dead socket; link down, PORT_STATUS
//! MODIFY) and keeps its number; when an interface of that name appears
//! again (netlink RTM_NEWLINK, or a retry every second) the port is
//! attached to it again. An interface re-created between two looks (a new
//! ifindex) is re-attached the same way.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};

use datapath::{Backend, BridgeCounters, PortCounters, PortSpec};
use pipeline::Pipeline;

use crate::openflow;
use crate::{config, health, metrics};

/// What the daemon's flags add to a bridge's configuration.
pub struct Options<'a> {
    pub nullx: bool,
    pub no_local: bool,
    pub run_dir: &'a std::path::Path,
    pub tls: Option<tls::Tls>,
    pub set_log: Option<datapath::SetLog>,
}

/// A bridge as the control thread keeps it.
pub struct Running {
    pub name: String,
    pub datapath_id: u64,
    /// Each worker's CPU, if pinned.
    pub cpus: Vec<Option<usize>>,
    pub control: openflow::Control,
    /// The bridge's workers until they are started.
    workers: Vec<datapath::BridgeWorker>,
    /// Per worker: whether it was last seen stalled (logged once).
    stalled: Vec<bool>,
    /// Each attached port's interface index when it was opened.
    ifindex: HashMap<u32, u32>,
    /// Each attached port's MTU when it was opened.
    mtus: HashMap<u32, u32>,
    last_retry: Instant,
    /// (port, problem) already named by [`Running::warn_offloads`].
    offload_warned: std::collections::HashSet<(u32, &'static str)>,
    /// The configuration the bridge runs (what a reload compares with).
    pub config: config::Config,
    /// The management socket's endpoint (None in nullx mode).
    pub mgmt: Option<openflow::Endpoint>,
    /// Stops this bridge's workers (the daemon's stop sets it too; a
    /// bridge removed at run time sets it alone).
    pub stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// Ports whose devices [`Running::add_ports`] opens at once.
pub const OPEN_AT_ONCE: usize = 32;

/// How often detached ports look for their interface.
const RETRY: Duration = Duration::from_secs(1);

/// Opens a bridge's ports (one handle per worker) and builds its pipeline;
/// nothing runs yet. A port that cannot be opened stops the build.
pub fn build(cfg: config::Config, opts: Options) -> Result<Running, Box<dyn std::error::Error>> {
    let cpus = cfg.workers.clone();
    let n = cpus.len();
    // The XDP fast path folds its counts into a counter slot of its own,
    // past the workers' (only when a port may use it: a slot is 64 bytes
    // per rule).
    let fast = cfg.uses_xdp() && !opts.nullx;
    let mut pc = pipeline::Config {
        workers: n + usize::from(fast),
        max_flows: cfg.max_flows,
        ..pipeline::Config::default()
    };
    cfg.learn.apply(&mut pc);
    cfg.conntrack.apply(&mut pc);
    let mut p = Pipeline::new(pc);
    // What a big FLOW_MOD leaves to free (a million rules: ~1 s) is freed
    // off the control thread (pipeline::garbage).
    if let Some(d) = pipeline::garbage::on_thread(&format!("free-{}", cfg.name)) {
        p.set_disposer(d);
    }
    cfg.conntrack.apply_zones(p.conntrack());
    let mut bridge = datapath::Bridge::new(&cfg.name, n, p.snapshot(), opts.nullx)?;
    if fast {
        bridge.enable_fast_path(n);
    }

    bridge.numbers = if opts.nullx {
        datapath::numbers::PortNumbers::default()
    } else {
        datapath::numbers::PortNumbers::load(&opts.run_dir.join(format!("{}.ports", cfg.name)))
    };
    let mut specs = cfg.port_specs();
    bridge.numbers.assign(&mut specs, &cfg.pinned);
    // The LOCAL port, as in Open vSwitch: a TAP device named after the
    // bridge (one queue per worker).
    if cfg.local_port && !opts.no_local && !opts.nullx {
        specs.push(PortSpec::new(
            ofp::port::port_no::LOCAL,
            &cfg.name,
            Backend::Local,
        ));
    }
    let channels = bridge.channels.clone();
    bridge.default_backend = cfg.default_backend;
    bridge.set_log = opts.set_log;
    // The daemon starts the workers; the agent owns the rest of the bridge.
    let workers = bridge.take_workers();
    let mut agent = agent::Agent::new(cfg.datapath_id, p, bridge, &cfg.name);
    agent.set_table_names(&cfg.tables);
    let defaults = *agent.conn_config();
    agent.set_conn_config(agent::ConnConfig {
        packet_in_rate: cfg.packet_in_rate.unwrap_or(defaults.packet_in_rate),
        versions: cfg.protocols,
        ..defaults
    });
    // Standalone: NORMAL learning while no controller is connected, the
    // flow Open vSwitch's bridge shows in that case (cookie 0, priority
    // 0, `actions=NORMAL`).
    let standalone_flow = (cfg.fail_mode == config::FailMode::Standalone)
        .then(|| ofp::text::parse_flow_mod("priority=0,actions=normal").expect("built-in flow"));
    agent.handle_fail_mode(standalone_flow, 0);
    // Meters, groups and flows go in before the ports: the pipeline checks
    // no output port against the ports there are.
    let (labels, changes): (Vec<String>, Vec<agent::LocalChange>) = cfg
        .meters
        .iter()
        .enumerate()
        .map(|(i, m)| (format!("meters[{i}]"), agent::LocalChange::Meter(m.clone())))
        .chain(
            cfg.groups
                .iter()
                .enumerate()
                .map(|(i, g)| (format!("groups[{i}]"), agent::LocalChange::Group(g.clone()))),
        )
        .chain(
            cfg.flows
                .iter()
                .enumerate()
                .map(|(i, f)| (format!("flows[{i}]"), agent::LocalChange::Flow(f.clone()))),
        )
        .unzip();
    agent
        .handle_local_changes(&changes, 0)
        .map_err(|e| format!("config: bridge {}: {}: {}", cfg.name, labels[e.at], e.why))?;
    let mgmt = (!opts.nullx)
        .then(|| openflow::Endpoint::Mgmt(opts.run_dir.join(format!("{}.mgmt", cfg.name))));
    let mut endpoints = cfg.endpoints.clone();
    endpoints.extend(mgmt.iter().cloned());
    let control = openflow::Control::new(
        &cfg.name,
        agent,
        channels,
        &endpoints,
        opts.tls,
        cfg.max_connections,
    )
    .map_err(|e| format!("bridge {}: {e}", cfg.name))?;
    let mut running = Running {
        name: cfg.name.clone(),
        datapath_id: cfg.datapath_id,
        config: cfg,
        mgmt,
        stalled: vec![false; cpus.len()],
        cpus,
        control,
        workers,
        ifindex: HashMap::new(),
        mtus: HashMap::new(),
        last_retry: Instant::now(),
        offload_warned: Default::default(),
        stop: Default::default(),
    };
    for r in running.add_ports(specs) {
        r?;
    }
    Ok(running)
}

/// Whether a port is a network interface whose coming and going the
/// daemon follows (not LOCAL or an internal port, whose TAP device the
/// bridge creates, nor a capture, a tunnel or a patch port).
fn is_interface(spec: &PortSpec) -> bool {
    !matches!(
        spec.backend,
        Backend::Local | Backend::Internal | Backend::Pcap | Backend::Tunnel(_) | Backend::Patch
    )
}

impl Running {
    /// A port's interface index and MTU as last seen (None: not an
    /// interface, or not there).
    pub fn link_facts(&self, port_no: u32) -> (Option<u32>, Option<u32>) {
        (
            self.ifindex.get(&port_no).copied(),
            self.mtus.get(&port_no).copied(),
        )
    }

    /// The bridge, read only: it changes through the agent.
    pub fn bridge(&self) -> &datapath::Bridge {
        self.control.agent().datapath()
    }

    /// The bridge's workers, to be started ([`datapath::spawn_workers`]);
    /// empty once taken.
    pub fn take_workers(&mut self) -> Vec<datapath::BridgeWorker> {
        std::mem::take(&mut self.workers)
    }

    /// Makes worker 0 panic in its `after`-th round with frames (fault
    /// injection for the daemon's tests; before the workers start).
    pub fn inject_worker_panic(&mut self, after: Option<u64>) {
        if let Some(w) = self.workers.first_mut() {
            w.panic_after_batches = after;
        }
    }

    /// Adds ports from their specs (at start, or a reload), through the
    /// agent: opened, handed to the workers, announced to controllers, its
    /// number remembered. An interface that does not exist yet gives a
    /// port that is down and waits for it (as in Open vSwitch: a VM's tap
    /// before the VM).
    ///
    /// Their devices are opened in parallel (at most [`OPEN_AT_ONCE`] at a
    /// time: each AF_PACKET ring waits on the kernel, not the CPU), then
    /// the ports are added in order. One result per spec.
    pub fn add_ports(&mut self, specs: Vec<PortSpec>) -> Vec<Result<(), String>> {
        let mut openers = Vec::with_capacity(specs.len());
        for spec in &specs {
            let exists = !is_interface(spec) || netdev::link::ifindex(&spec.name).is_some();
            let dp = self.bridge();
            openers.push(if exists { dp.opener(spec).ok() } else { None });
        }
        let mut opened: Vec<Option<std::io::Result<datapath::open::Opened>>> =
            (0..specs.len()).map(|_| None).collect();
        for chunk in (0..specs.len()).collect::<Vec<_>>().chunks(OPEN_AT_ONCE) {
            let done: Vec<(usize, std::io::Result<datapath::open::Opened>)> =
                std::thread::scope(|sc| {
                    let hs: Vec<_> = chunk
                        .iter()
                        .filter_map(|&i| {
                            let o = openers[i].as_ref()?;
                            let spec = &specs[i];
                            Some((i, sc.spawn(move || o.open(spec))))
                        })
                        .collect();
                    hs.into_iter()
                        .map(|(i, h)| {
                            let r = h.join().unwrap_or_else(|_| {
                                Err(std::io::Error::other("opening the port panicked"))
                            });
                            (i, r)
                        })
                        .collect()
                });
            for (i, r) in done {
                opened[i] = Some(r);
            }
        }
        specs
            .into_iter()
            .zip(opened)
            .map(|(spec, o)| self.add_port_with(spec, o))
            .collect()
    }

    /// Adds a port through the agent (which announces it), its devices
    /// opened already (`opened`) or opened by the bridge; an interface
    /// that does not exist yet gives a detached port.
    fn add_port_with(
        &mut self,
        spec: PortSpec,
        opened: Option<std::io::Result<datapath::open::Opened>>,
    ) -> Result<(), String> {
        let (no, name) = (spec.port_no, spec.name.clone());
        let watched = is_interface(&spec);
        let local = spec.backend == Backend::Local;
        let missing = watched && netdev::link::ifindex(&name).is_none();
        let port = match opened {
            _ if missing => datapath::NewPort::detached(spec),
            Some(o) => datapath::NewPort::opened(spec, o),
            None => datapath::NewPort::to_open(spec),
        };
        let now = datapath::clock::now_ns();
        if let Err(e) = self.control.handle_add_port(port, now) {
            return Err(match local {
                true => format!("LOCAL port of bridge {}: {e}", self.name),
                false => format!("port {name} (ofport {no}): {e}"),
            });
        }
        if missing {
            tracing::warn!(bridge = %self.name, port = no, name = %name,
                "no such interface (yet): the port is down and waits for it");
        }
        if watched {
            if let Some(i) = netdev::link::ifindex(&name) {
                self.ifindex.insert(no, i);
            }
            if let Some(m) = netdev::mtu(&name) {
                self.mtus.insert(no, m as u32);
            }
        }
        Ok(())
    }

    /// Applies link events to this bridge's ports.
    pub fn apply_links(&mut self, changes: &[netdev::link::LinkChange]) {
        for c in changes {
            let Some(no) = self
                .bridge()
                .port_named(&c.name)
                .filter(|s| is_interface(s))
                .map(|s| s.port_no)
            else {
                continue;
            };
            if c.deleted {
                self.detach(no);
                continue;
            }
            let recreated =
                c.ifindex != 0 && self.ifindex.get(&no).is_some_and(|&i| i != c.ifindex);
            // A new MTU needs buffers of another size: the devices are
            // opened again, sized for it.
            let mtu_changed = c.mtu != 0
                && self.bridge().is_attached(no)
                && self.mtus.get(&no).is_some_and(|&m| m != c.mtu);
            if mtu_changed {
                tracing::info!(bridge = %self.name, port = no, name = %c.name, mtu = c.mtu, "MTU changed: port opened again for it");
                self.reattach(no);
                continue;
            }
            if recreated {
                // The old devices belong to an interface that is gone.
                self.detach(no);
            }
            if !self.bridge().is_attached(no) {
                // Opened once it is up, as at start (an AF_PACKET socket
                // bound to a down interface starts with ENETDOWN pending,
                // and a fanout group takes only running sockets).
                if c.up {
                    self.reattach(no);
                }
                continue;
            }
            self.set_link(no, &c.name, c.up);
        }
    }

    fn set_link(&mut self, no: u32, name: &str, up: bool) {
        if self
            .control
            .agent()
            .ports()
            .get(&no)
            .is_some_and(|p| p.link_up != up)
        {
            tracing::info!(bridge = %self.name, port = no, name = %name, up, "link state changed");
            // The bridge forgets the addresses learned on a port whose
            // link went down; the agent republishes the pipeline and tells
            // controllers.
            self.control.handle_link_change(no, up);
        }
    }

    /// The port's interface is gone: the agent has its devices closed
    /// and its link down.
    fn detach(&mut self, no: u32) {
        if !self.control.handle_detach_port(no) {
            return;
        }
        self.ifindex.remove(&no);
        tracing::warn!(bridge = %self.name, port = no, "interface deleted: port detached until an interface of its name comes back");
    }

    /// Opens the port's interface again (through the agent, which tells
    /// controllers); false if it cannot be opened yet.
    fn reattach(&mut self, no: u32) -> bool {
        let Some(name) = self.bridge().port(no).map(|s| s.name.clone()) else {
            return false;
        };
        match self.control.handle_reattach_port(no) {
            Ok(a) => {
                if let Some(i) = netdev::link::ifindex(&name) {
                    self.ifindex.insert(no, i);
                }
                if let Some(m) = netdev::mtu(&name) {
                    self.mtus.insert(no, m as u32);
                }
                tracing::info!(bridge = %self.name, port = no, name = %name, up = a.link_up, "interface back: port attached again");
                true
            }
            Err(e) => {
                tracing::debug!(bridge = %self.name, port = no, name = %name, error = %e, "port cannot be attached yet");
                false
            }
        }
    }

    /// Every second: detached ports whose interface exists try to attach
    /// again (an event can come before the interface can be opened), and
    /// a port that started dropping truncated frames is named, once.
    pub fn retry_detached(&mut self) {
        if self.last_retry.elapsed() < RETRY {
            return;
        }
        self.last_retry = Instant::now();
        self.warn_offloads();
        let waiting: Vec<u32> = self
            .bridge()
            .ports()
            .filter(|s| is_interface(s) && oper_up(&s.name))
            .map(|s| s.port_no)
            .filter(|&no| !self.bridge().is_attached(no))
            .collect();
        for no in waiting {
            self.reattach(no);
        }
    }

    /// Names, once per port and problem, a port whose frames arrive longer
    /// than its buffers (dropped, rx_truncated) or with unfinished
    /// checksums (forwarded as they are, rx_csum_partial): both come from
    /// offloads, and the warning says which to turn off.
    fn warn_offloads(&mut self) {
        for v in self.bridge().view().load().iter() {
            let c = PortCounters::sum(&v.counters);
            let (cut, partial) = (
                c.rx_truncated.load(Relaxed),
                c.rx_csum_partial.load(Relaxed),
            );
            if cut > 0 && self.offload_warned.insert((v.port_no, "truncated")) {
                tracing::warn!(bridge = %self.name, port = v.port_no, name = %v.name, frames = cut,
                    "frames arrive longer than the port's MTU allows and are dropped: a sender offloads segmentation \
                     (TSO/GSO; for a veth, on its peer: ethtool -K PEER tso off gso off) or the interface merges frames \
                     (ethtool -K {} gro off lro off)", v.name);
            }
            if partial > 0 && self.offload_warned.insert((v.port_no, "partial")) {
                tracing::warn!(bridge = %self.name, port = v.port_no, name = %v.name, frames = partial,
                    "frames arrive with unfinished checksums (the sender offloads them; for a veth, on its peer: \
                     ethtool -K PEER tx off) and leave that way: receivers that check will drop them");
            }
        }
    }

    /// Reads every watched port's state from sysfs (the fallback when
    /// netlink events are not available): a missing interface is a
    /// deleted one.
    pub fn poll_links(&mut self) {
        let changes: Vec<netdev::link::LinkChange> = self
            .bridge()
            .ports()
            .filter(|s| is_interface(s))
            .map(|s| {
                let state = std::fs::read_to_string(format!("/sys/class/net/{}/operstate", s.name));
                netdev::link::LinkChange {
                    name: s.name.clone(),
                    up: state.as_ref().is_ok_and(|s| s.trim() != "down"),
                    deleted: state.is_err(),
                    ifindex: netdev::link::ifindex(&s.name).unwrap_or(0),
                    mtu: netdev::mtu(&s.name).unwrap_or(0) as u32,
                }
            })
            .collect();
        self.apply_links(&changes);
    }

    /// Logs a worker whose heartbeat is more than a second old (stalled:
    /// alive but not looping), once per stall, and its recovery.
    pub fn watch_workers(&mut self, now: u64) {
        let counters = self.bridge().counters.clone();
        for (w, c) in counters.iter().enumerate() {
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

    pub fn metrics_sources(&self) -> metrics::Sources {
        metrics::Sources::of(self)
    }

    pub fn print_stats(&self) {
        let b = self.bridge();
        println!("bridge {}", self.name);
        println!(
            "port  name             rx_pkts    rx_bytes    tx_pkts    tx_bytes  tx_drop   rx_err rx_trunc"
        );
        for v in b.view().load().iter() {
            let c = PortCounters::sum(&v.counters);
            println!(
                "{:<5} {:<12} {:>11} {:>11} {:>10} {:>11} {:>8} {:>8} {:>8}",
                port_label(v.port_no),
                v.name,
                c.rx_packets.load(Relaxed),
                c.rx_bytes.load(Relaxed),
                c.tx_packets.load(Relaxed),
                c.tx_bytes.load(Relaxed),
                c.tx_dropped.load(Relaxed),
                c.rx_errors.load(Relaxed),
                c.rx_truncated.load(Relaxed)
            );
        }
        let t = &BridgeCounters::sum(&b.counters);
        println!(
            "pipeline: dropped {}  to_controller {}  skipped_edits {}  over_limit {}  geneve_options_refused {}",
            t.dropped.load(Relaxed),
            t.to_controller.load(Relaxed),
            t.skipped_edits.load(Relaxed),
            t.over_limit.load(Relaxed),
            t.tun_opts_refused.load(Relaxed)
        );
        let us = |ns: u64| ns as f64 / 1000.0;
        println!(
            "in-switch delay (rx batch -> handed to tx, {} frames): p50 {:.1} us  p99 {:.1} us  p99.9 {:.1} us  max {:.1} us",
            t.delay.count(),
            us(t.delay.quantile(0.5)),
            us(t.delay.quantile(0.99)),
            us(t.delay.quantile(0.999)),
            us(t.delay.max())
        );
        let w = &t.worst;
        if w.frames.load(Relaxed) > 0 {
            // When, as Unix time: to find it in a trace of the machine
            // (`perf record -k CLOCK_REALTIME`, `sluice-bench gaps`).
            let ago = datapath::clock::now_ns().saturating_sub(w.at_ns.load(Relaxed));
            let unix = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                .saturating_sub(ago);
            println!(
                "slowest batch: {:.1} us, {} frames, handed on at {}.{:06} (Unix time), {:.3} s before exit",
                us(w.delay_ns.load(Relaxed)),
                w.frames.load(Relaxed),
                unix / 1_000_000_000,
                unix % 1_000_000_000 / 1_000,
                ago as f64 / 1e9
            );
        }
        let ch = &self.control.channels;
        let limited: u64 = self
            .control
            .agent()
            .conns()
            .map(|(_, c)| c.packet_in_dropped)
            .sum();
        println!(
            "controller channel: packet-in queue full {}  packet-out queue full {}  packet-in rate-limited {}",
            ch.packet_in_dropped.load(Relaxed),
            ch.packet_out_dropped.load(Relaxed),
            limited
        );
    }
}

/// Whether interface `name` exists and is operationally up (or reports no
/// state, as some virtual devices do).
fn oper_up(name: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{name}/operstate"))
        .is_ok_and(|s| matches!(s.trim(), "up" | "unknown"))
}

/// A port number as people read it ("local" for OFPP_LOCAL).
pub fn port_label(no: u32) -> String {
    ofp::port::port_no::name(no).map_or_else(|| no.to_string(), str::to_string)
}
