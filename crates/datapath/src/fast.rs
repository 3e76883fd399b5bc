//! A bridge's XDP fast path: table 0 compiled ([`fastpath`]) into one
//! program per `xdp` port, run at the port's XDP hook in place of the
//! AF_XDP redirect program; what it does not handle it sends up through
//! that port's AF_XDP sockets to the user-space pipeline, unchanged.
//!
//! Publication: [`FastPath::publish`] (called with every new snapshot,
//! before the agent answers a barrier) first bumps the generation in the
//! control map, one system call: from then on the running programs send
//! every packet up, so a flow-mod takes effect at once. The fast path's
//! thread then compiles the new snapshot, loads it, and swaps each port's
//! program through its BPF link (a packet runs the old program or the
//! new one). Removing a port, and every build (which may give the device
//! map's slots to other ports), retire the running programs the same way
//! first. A failure to compile or load is logged with the reason and
//! the ports keep the redirect program: AF_XDP only.
//!
//! Counters: the programs count per rule and per port in a per-CPU map;
//! the thread folds them into the rules' counters (its own counter slot),
//! the ports' and table 0's about once a second and at every swap, so
//! statistics lag the kernel by up to a second (as Open vSwitch's do
//! theirs). A rule hit in the kernel also refreshes its idle timeout.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use fastpath::compile::{
    compile, Compiled, Options, COUNTER_SIZE, CTL_VALUE_SIZE, MAP_COUNTERS, MAP_CTL, MAP_DEV,
    MAP_FLOOD, MAP_TABLE0, MAP_XSK, TABLE_VALUE_SIZE,
};
use netdev::bpf::{Map, MapKind, Prog};
use netdev::xdp::XdpProgram;
use pipeline::Snapshot;

use crate::{clock, PortCounters};

/// Egress ports a bridge's fast path can redirect to.
pub const MAX_PORTS: u32 = 256;
/// How often counters are folded.
const FOLD_EVERY: Duration = Duration::from_secs(1);
/// How long to wait for more publications before compiling (a burst of
/// flow-mods compiles once).
const SETTLE: Duration = Duration::from_millis(20);

/// An `xdp` port as the fast path serves it.
#[derive(Clone)]
pub struct FastPort {
    pub port_no: u32,
    pub program: Arc<XdpProgram>,
    /// The port's counter set reserved for the fast path (not a worker's).
    pub counters: Arc<PortCounters>,
}

/// What the fast path has done, for logs and metrics.
#[derive(Debug, Default)]
pub struct FastStats {
    pub compiles: AtomicU64,
    pub failures: AtomicU64,
    /// Of the last compile and load, µs.
    pub last_build_us: AtomicU64,
    /// Packets the programs handled in the kernel, and sent up.
    pub kernel_packets: AtomicU64,
    pub up_packets: AtomicU64,
    /// Rules of the last compile whose packets go up.
    pub rules_up: AtomicU64,
    /// Programs attached now (0: AF_XDP only).
    pub attached: AtomicU64,
    /// 1 while the attached programs run the latest published tables; 0
    /// while everything goes up (a publication or a port change not
    /// compiled yet, or the fast path off).
    pub current: AtomicU64,
}

#[derive(Default)]
struct State {
    pending: Option<Arc<Snapshot>>,
    current: Option<Arc<Snapshot>>,
    ports: Vec<FastPort>,
    ports_changed: bool,
    stop: bool,
}

struct Shared {
    bridge: String,
    ctl: Map,
    dev: Map,
    generation: AtomicU64,
    state: Mutex<State>,
    wake: Condvar,
    /// The rules' and tables' counter slot the fold writes.
    slot: usize,
    stats: Arc<FastStats>,
}

/// The programs running now, and what is needed to fold their counters.
struct Live {
    compiled: Compiled,
    /// The tables' counters (not the whole snapshot: holding that would
    /// keep its classifiers from being reused, `pipeline::lookup::published`).
    table_counters: Arc<Vec<pipeline::lookup::rule::Counters>>,
    ports: Vec<FastPort>,
    counters: Map,
    _tables: Vec<Map>,
    _flood: Map,
    _progs: Vec<Prog>,
    last: Vec<u64>,
}

/// A bridge's fast path; dropping it stops its thread and puts the
/// redirect programs back.
pub struct FastPath {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl FastPath {
    /// Starts the fast path of bridge `bridge`, folding rule counters into
    /// slot `slot` (one the pipeline reserved past the workers').
    pub fn start(bridge: &str, slot: usize) -> std::io::Result<FastPath> {
        let ctl = Map::create(MapKind::Array, 4, CTL_VALUE_SIZE, 1, "sluice_ctl")?;
        let dev = Map::create(MapKind::DevMap, 4, 4, MAX_PORTS, "sluice_dev")?;
        let shared = Arc::new(Shared {
            bridge: bridge.to_string(),
            ctl,
            dev,
            generation: AtomicU64::new(0),
            state: Mutex::default(),
            wake: Condvar::new(),
            slot,
            stats: Arc::default(),
        });
        shared.set_generation(0)?;
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("{bridge}-xdp"))
            .spawn(move || run(&s))?;
        Ok(FastPath {
            shared,
            thread: Some(thread),
        })
    }

    pub fn stats(&self) -> Arc<FastStats> {
        self.shared.stats.clone()
    }

    /// A new pipeline version: the running programs send everything up
    /// from now on; the new one is compiled shortly.
    pub fn publish(&self, snap: Arc<Snapshot>) {
        self.shared.retire();
        let mut st = self.shared.lock();
        st.pending = Some(snap);
        self.shared.wake.notify_one();
    }

    /// Serves `port` (replacing a port of the same number).
    pub fn add_port(&self, port: FastPort) {
        let mut st = self.shared.lock();
        st.ports.retain(|p| p.port_no != port.port_no);
        st.ports.push(port);
        st.ports.sort_by_key(|p| p.port_no);
        st.ports_changed = true;
        self.shared.wake.notify_one();
    }

    /// The ports served.
    pub fn ports(&self) -> Vec<u32> {
        self.shared.lock().ports.iter().map(|p| p.port_no).collect()
    }

    /// Stops serving port `port_no` (its program goes with its devices).
    /// The running programs are retired at once: until the next build
    /// nothing is forwarded in the kernel, to or from that port either.
    pub fn remove_port(&self, port_no: u32) {
        self.shared.retire();
        let mut st = self.shared.lock();
        let before = st.ports.len();
        st.ports.retain(|p| p.port_no != port_no);
        if st.ports.len() != before {
            st.ports_changed = true;
            self.shared.wake.notify_one();
        }
    }
}

impl Drop for FastPath {
    fn drop(&mut self) {
        self.shared.lock().stop = true;
        self.shared.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new generation: every running program sends all packets up from
    /// now on. Returns it.
    fn retire(&self) -> u64 {
        self.stats.current.store(0, Relaxed);
        let g = self.generation.fetch_add(1, Relaxed) + 1;
        if let Err(e) = self.set_generation(g) {
            // Cannot happen with a live map; if it did, the old programs
            // would keep running the old tables: take them off.
            tracing::error!(bridge = %self.bridge, error = %e, "XDP fast path: cannot retire the running programs");
            for p in &self.lock().ports {
                let _ = p.program.restore();
            }
        }
        g
    }

    fn set_generation(&self, g: u64) -> std::io::Result<()> {
        let mut v = [0u8; CTL_VALUE_SIZE as usize];
        v[..8].copy_from_slice(&g.to_le_bytes());
        self.ctl.update(&0u32.to_le_bytes(), &v)
    }
}

fn run(s: &Shared) {
    let mut live: Option<Live> = None;
    let mut last_fold = Instant::now();
    let mut last_error = String::new();
    loop {
        let (snap, ports) = {
            let mut st = s.lock();
            while st.pending.is_none() && !st.ports_changed && !st.stop {
                let wait = FOLD_EVERY.saturating_sub(last_fold.elapsed());
                if wait.is_zero() {
                    break;
                }
                st = s
                    .wake
                    .wait_timeout(st, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            if st.stop {
                for p in &st.ports {
                    let _ = p.program.restore();
                }
                drop(st);
                if let Some(l) = &mut live {
                    fold(s, l);
                }
                return;
            }
            if st.pending.is_none() && !st.ports_changed {
                (None, Vec::new())
            } else {
                drop(st);
                std::thread::sleep(SETTLE);
                let mut st = s.lock();
                if let Some(p) = st.pending.take() {
                    st.current = Some(p);
                }
                st.ports_changed = false;
                (st.current.clone(), st.ports.clone())
            }
        };
        if let Some(snap) = snap {
            let t = Instant::now();
            let built = build(s, &snap, &ports);
            s.stats.compiles.fetch_add(1, Relaxed);
            s.stats
                .last_build_us
                .store(t.elapsed().as_micros() as u64, Relaxed);
            // Fold what the outgoing programs counted (after the swap,
            // anything still in flight in them is lost: a few packets).
            if let Some(l) = &mut live {
                fold(s, l);
            }
            match built {
                Ok(l) => {
                    // Current unless a publication came while building.
                    let now_current =
                        s.generation.load(Relaxed) == l.compiled.generation && !l.ports.is_empty();
                    s.stats.current.store(u64::from(now_current), Relaxed);
                    s.stats.rules_up.store(l.compiled.up_rules as u64, Relaxed);
                    s.stats.attached.store(l.ports.len() as u64, Relaxed);
                    if live.as_ref().is_none_or(|o| o.ports.is_empty()) && !l.ports.is_empty() {
                        tracing::info!(
                            bridge = %s.bridge,
                            ports = l.ports.len(),
                            rules = l.compiled.rules.len(),
                            up = l.compiled.up_rules,
                            "XDP fast path running"
                        );
                    }
                    last_error.clear();
                    tracing::debug!(
                        bridge = %s.bridge,
                        rules = l.compiled.rules.len(),
                        up = l.compiled.up_rules,
                        us = t.elapsed().as_micros() as u64,
                        "XDP fast path compiled"
                    );
                    live = Some(l);
                }
                Err(e) => {
                    s.stats.failures.fetch_add(1, Relaxed);
                    s.stats.attached.store(0, Relaxed);
                    for p in &ports {
                        let _ = p.program.restore();
                    }
                    if e != last_error {
                        tracing::warn!(bridge = %s.bridge, error = %e, "XDP fast path off, the ports run AF_XDP only");
                        last_error = e;
                    }
                    live = None;
                }
            }
        }
        if last_fold.elapsed() >= FOLD_EVERY {
            if let Some(l) = &mut live {
                fold(s, l);
            }
            last_fold = Instant::now();
        }
    }
}

/// Slot i of DEVMAP `map` sends to the i-th of `ports`.
fn fill_devmap<'a>(map: &Map, ports: impl Iterator<Item = &'a FastPort>) -> Result<(), String> {
    for (slot, p) in ports.enumerate() {
        map.update(
            &(slot as u32).to_le_bytes(),
            &(p.program.ifindex as u32).to_le_bytes(),
        )
        .map_err(|e| format!("port {}: {e}", p.port_no))?;
    }
    Ok(())
}

/// Compiles `snap` for `ports`, loads it and attaches it.
fn build(s: &Shared, snap: &Arc<Snapshot>, ports: &[FastPort]) -> Result<Live, String> {
    let nos: Vec<u32> = ports.iter().map(|p| p.port_no).collect();
    if nos.len() > MAX_PORTS as usize {
        return Err(format!("more than {MAX_PORTS} xdp ports"));
    }
    // The running programs are retired before the device map changes
    // under them (a slot may now mean another port).
    let gen = s.retire();
    let compiled =
        compile(snap, &nos, &nos, gen, &Options::default()).map_err(|e| e.to_string())?;
    fill_devmap(&s.dev, ports.iter())?;
    // The ports FLOOD and ALL send to (a map of this build's own: the
    // programs it replaces keep theirs).
    let flood = Map::create(
        MapKind::DevMap,
        4,
        4,
        compiled.flood.len().max(1) as u32,
        "sluice_flood",
    )
    .map_err(|e| e.to_string())?;
    fill_devmap(
        &flood,
        compiled
            .flood
            .iter()
            .filter_map(|no| ports.iter().find(|p| p.port_no == *no)),
    )?;
    let counters = Map::create(
        MapKind::PercpuArray,
        4,
        COUNTER_SIZE,
        compiled.counters,
        "sluice_ctr",
    )
    .map_err(|e| e.to_string())?;
    let mut tables = Vec::with_capacity(compiled.tables.len());
    for t in &compiled.tables {
        let m = Map::create(
            MapKind::Hash,
            t.key_size,
            TABLE_VALUE_SIZE,
            t.len().max(1) as u32,
            "sluice_tbl",
        )
        .map_err(|e| e.to_string())?;
        m.update_many(&t.keys, &t.values)
            .map_err(|e| e.to_string())?;
        tables.push(m);
    }
    let mut progs = Vec::with_capacity(ports.len());
    for (p, code) in ports.iter().zip(&compiled.programs) {
        let raw = code.code.link(|n| match n {
            MAP_CTL => s.ctl.fd(),
            MAP_COUNTERS => counters.fd(),
            MAP_DEV => s.dev.fd(),
            MAP_FLOOD => flood.fd(),
            MAP_XSK => p.program.xsk_map().fd(),
            t => tables.get((t - MAP_TABLE0) as usize).map_or(-1, |m| m.fd()),
        });
        let prog =
            Prog::load_xdp("sluice_fast", &raw).map_err(|e| format!("port {}: {e}", p.port_no))?;
        progs.push(prog);
    }
    for (p, prog) in ports.iter().zip(&progs) {
        p.program
            .replace(prog)
            .map_err(|e| format!("port {}: {e}", p.port_no))?;
    }
    let last = vec![0; compiled.counters as usize * 2];
    // The maps hold the tables now.
    let mut compiled = compiled;
    compiled.tables = Vec::new();
    Ok(Live {
        compiled,
        table_counters: snap.table_counters.clone(),
        ports: ports.to_vec(),
        counters,
        _tables: tables,
        _flood: flood,
        _progs: progs,
        last,
    })
}

/// Adds what the programs counted since the last fold to the rules',
/// ports' and table 0's counters.
fn fold(s: &Shared, l: &mut Live) {
    let Ok(sums) = l.counters.percpu_sum_all() else {
        return;
    };
    let delta: Vec<u64> = sums
        .iter()
        .zip(l.last.iter())
        .map(|(a, b)| a.saturating_sub(*b))
        .collect();
    l.last = sums;
    let f = l.compiled.fold(&delta);
    let now = clock::now_ns();
    for (r, c) in l.compiled.rules.iter().zip(&f.rules) {
        if c.packets > 0 {
            r.counters.add(s.slot, c.packets, c.bytes, now);
        }
    }
    if let Some(t) = l.table_counters.first() {
        t.add(s.slot, f.lookups, f.matched, now);
    }
    let add = |c: &AtomicU64, v: u64| c.store(c.load(Relaxed) + v, Relaxed);
    for p in &l.ports {
        if let Some((_, c)) = f.rx.iter().find(|(n, _)| *n == p.port_no) {
            add(&p.counters.rx_packets, c.packets);
            add(&p.counters.rx_bytes, c.bytes);
        }
        if let Some((_, c)) = f.tx.iter().find(|(n, _)| *n == p.port_no) {
            add(&p.counters.tx_packets, c.packets);
            add(&p.counters.tx_bytes, c.bytes);
        }
    }
    s.stats.kernel_packets.fetch_add(f.kernel.packets, Relaxed);
    s.stats.up_packets.fetch_add(f.up.packets, Relaxed);
}
