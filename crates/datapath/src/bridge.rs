//! A bridge: its ports, its workers, and everything they share (the
//! published pipeline, the controller channels, the MAC table, counters).
//!
//! The control thread owns the [`Bridge`] (through its OpenFlow agent,
//! whose [`agent::Datapath`] it is: once the agent has it, ports change
//! only through the agent, `for_agent.rs`); the workers own their port
//! handles. Ports come and go while the workers run: the bridge opens a
//! port's devices (one handle per worker) and posts each worker its handle
//! through the worker's [`Inbox`]; a worker looks at its inbox once per
//! round (one relaxed load of a flag, no lock unless something was posted)
//! and applies what it finds at that batch boundary, so a port is never
//! half-added to a round. Removing a port posts its removal; the bridge
//! can wait until every running worker has dropped its handle
//! ([`Bridge::wait_applied`]), which closes the device.
//!
//! A port whose interface disappeared is *detached*: its devices are
//! dropped but the port keeps its number, counters and queues, and is
//! attached again ([`Bridge::reattach`]) when an interface of that name
//! comes back.
//!
//! Readers on other threads (metrics, statistics) see the port set through
//! [`Bridge::view`], republished at every change.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use netdev::Port;
use pipeline::Snapshot;

use crate::channel::Channels;
use crate::open::{Backend, PortSpec};
use crate::queue::{Queue, QueueCounters};
use crate::vlan::{PortVlans, VlanConfig};
use crate::{BridgeCounters, BridgeWorker, MacTable, PortCounters, WorkerPort};

/// A change to one worker's port set.
pub enum WorkerCmd {
    /// Serve this port (replacing a port of the same number).
    Add(WorkerPort),
    /// Stop serving this port number (its handle is dropped).
    Remove(u32),
}

/// Where the control thread leaves port changes for one worker.
#[derive(Default)]
pub struct Inbox {
    pending: AtomicBool,
    cmds: Mutex<Vec<WorkerCmd>>,
    /// Commands the worker has applied.
    applied: AtomicU64,
}

impl Inbox {
    pub(crate) fn post(&self, c: WorkerCmd) {
        let mut q = self.cmds.lock().unwrap_or_else(|e| e.into_inner());
        q.push(c);
        self.pending.store(true, Relaxed);
    }

    /// Whether commands wait (one relaxed load: the worker asks every round).
    pub(crate) fn pending(&self) -> bool {
        self.pending.load(Relaxed)
    }

    /// Takes the waiting commands.
    pub(crate) fn take(&self) -> Vec<WorkerCmd> {
        let mut q = self.cmds.lock().unwrap_or_else(|e| e.into_inner());
        self.pending.store(false, Relaxed);
        std::mem::take(&mut *q)
    }

    /// Notes that `n` commands were applied.
    pub(crate) fn done(&self, n: usize) {
        self.applied.fetch_add(n as u64, Relaxed);
    }
}

/// A port as readers on other threads see it.
#[derive(Clone)]
pub struct PortView {
    pub port_no: u32,
    pub name: String,
    pub backend: Backend,
    /// One set per worker, and the XDP fast path's; summed when read.
    pub counters: Vec<Arc<PortCounters>>,
    /// Egress queues: id and counters (shared by the workers).
    pub queues: Vec<(u32, Arc<QueueCounters>)>,
    /// False while the interface is gone (the port waits for it).
    pub attached: bool,
}

/// What a port's devices said when they were opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attached {
    pub hw_addr: [u8; 6],
    pub link_up: bool,
}

struct Entry {
    spec: PortSpec,
    counters: Vec<Arc<PortCounters>>,
    /// What the XDP fast path counted for this port (its fold alone
    /// writes them).
    fast_counters: Arc<PortCounters>,
    /// The port's queues; each worker gets siblings sharing their rate
    /// budget and counters.
    queues: Vec<Queue>,
    attached: bool,
}

impl Entry {
    /// The workers' counter sets and the fast path's.
    fn all_counters(&self) -> Vec<Arc<PortCounters>> {
        let mut all = self.counters.clone();
        all.push(self.fast_counters.clone());
        all
    }
}

/// Frames the packet-in and packet-out queues hold.
pub const CHANNEL_DEPTH: usize = 4096;

/// Changes the daemon's log filter (`vlog`): the new filter's text, or why
/// the given one was refused.
pub type SetLog = Arc<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// Runs a worker thread's body (`worker`, body): the daemon's wrapper
/// pins nothing and catches a panic to record the death.
pub type WorkerGuard = Arc<dyn Fn(usize, Box<dyn FnOnce()>) + Send + Sync>;

/// One bridge: its ports and what its workers share.
pub struct Bridge {
    pub name: String,
    /// The back end of a port added without `backend=`.
    pub default_backend: Backend,
    /// Stable port numbers.
    pub numbers: crate::numbers::PortNumbers,
    /// `vlog`; None where the log level is fixed.
    pub set_log: Option<SetLog>,
    /// Workers made with the bridge and not yet started or taken.
    unstarted: Vec<BridgeWorker>,
    pub pipeline: Arc<ArcSwap<Snapshot>>,
    pub channels: Arc<Channels>,
    pub macs: Arc<MacTable>,
    /// The ports' VLAN settings, as NORMAL reads them (republished whole
    /// at each change).
    vlans: Arc<ArcSwap<PortVlans>>,
    /// One set per worker.
    pub counters: Vec<Arc<BridgeCounters>>,
    ports: Vec<Entry>,
    inboxes: Vec<Arc<Inbox>>,
    /// Commands posted to each worker.
    posted: Vec<u64>,
    view: Arc<ArcSwap<Vec<PortView>>>,
    /// The XDP fast path, for a bridge with `xdp` ports.
    fast: Option<crate::fast::FastPath>,
    /// One UMEM per worker, shared by the worker's AF_XDP sockets on
    /// every port (mapped with the first AF_XDP port; unset before, or if
    /// it could not be mapped: then each socket has its own). Set once,
    /// from `&self`, so that [`Bridge::opener`] only reads the bridge.
    umems: std::sync::OnceLock<Vec<Arc<netdev::umem::Umem>>>,
}

impl Bridge {
    /// A bridge of `workers` workers with no ports yet, running `snap`.
    /// The workers wait to be taken ([`Bridge::take_workers`]), then
    /// started ([`spawn_workers`]) or driven round by round; ports added
    /// before they run are served from their first round.
    pub fn new(
        name: &str,
        workers: usize,
        snap: Arc<Snapshot>,
        nullx: bool,
    ) -> std::io::Result<Bridge> {
        let workers = workers.max(1);
        let pipeline = Arc::new(ArcSwap::new(snap));
        let channels = Arc::new(Channels::new(CHANNEL_DEPTH)?);
        let macs = Arc::new(MacTable::default());
        let vlans: Arc<ArcSwap<PortVlans>> = Arc::default();
        let counters: Vec<Arc<BridgeCounters>> = (0..workers).map(|_| Arc::default()).collect();
        let inboxes: Vec<Arc<Inbox>> = (0..workers).map(|_| Arc::default()).collect();
        let ws = (0..workers)
            .map(|w| {
                let mut x = BridgeWorker::new(
                    w,
                    pipeline.clone(),
                    counters[w].clone(),
                    macs.clone(),
                    vlans.clone(),
                    Some(channels.clone()),
                    inboxes[w].clone(),
                );
                x.set_nullx(nullx);
                x
            })
            .collect();
        let bridge = Bridge {
            name: name.to_string(),
            default_backend: Backend::AfPacket { rings: true },
            numbers: Default::default(),
            set_log: None,
            unstarted: ws,
            pipeline,
            channels,
            macs,
            vlans,
            counters,
            ports: Vec::new(),
            posted: vec![0; workers],
            inboxes,
            view: Arc::default(),
            fast: None,
            umems: std::sync::OnceLock::new(),
        };
        Ok(bridge)
    }

    /// The workers not yet taken, to be run by the caller: on threads
    /// ([`spawn_workers`]), or round by round ([`BridgeWorker::poll_once`],
    /// as tests do). The bridge keeps what they share.
    pub fn take_workers(&mut self) -> Vec<BridgeWorker> {
        std::mem::take(&mut self.unstarted)
    }

    /// How many workers the bridge has.
    pub fn workers(&self) -> usize {
        self.inboxes.len()
    }

    /// Starts the XDP fast path (for `xdp` ports), folding rule counters
    /// into `slot`, a counter slot the pipeline reserved past the
    /// workers'. If it cannot start, `xdp` ports run AF_XDP only (logged).
    pub fn enable_fast_path(&mut self, slot: usize) {
        if self.fast.is_some() {
            return;
        }
        match crate::fast::FastPath::start(&self.name, slot) {
            Ok(f) => {
                f.publish(self.pipeline.load_full());
                self.fast = Some(f);
            }
            Err(e) => {
                tracing::warn!(bridge = %self.name, error = %e, "XDP fast path cannot start: xdp ports run AF_XDP only")
            }
        }
    }

    /// The ports the fast path serves, if it runs.
    pub fn fast_path_ports(&self) -> Option<Vec<u32>> {
        self.fast.as_ref().map(|f| f.ports())
    }

    /// The fast path's figures, if it runs.
    pub fn fast_stats(&self) -> Option<Arc<crate::fast::FastStats>> {
        self.fast.as_ref().map(|f| f.stats())
    }

    /// Publishes a new pipeline version to the workers and the fast path.
    pub fn publish(&self, snap: Arc<Snapshot>) {
        if let Some(f) = &self.fast {
            f.publish(snap.clone());
        }
        self.pipeline.store(snap);
    }

    /// Opens `spec`'s devices and adds the port. Refused if its number or
    /// name is taken.
    pub fn add_port(&mut self, spec: PortSpec) -> std::io::Result<Attached> {
        let opener = self.opener(&spec)?;
        let opened = opener.open(&spec)?;
        Ok(self.add_port_opened(spec, opened))
    }

    /// What opening `spec`'s devices needs, checked and prepared here (its
    /// number and name free, the shared UMEMs mapped): the opening itself
    /// ([`Opener::open`]) may then run on any thread, several at once.
    /// Opening an AF_PACKET ring waits on the kernel (two network-stack
    /// grace periods a socket, ~30 ms here), so many ports open in
    /// parallel in about the time of one.
    pub fn opener(&self, spec: &PortSpec) -> std::io::Result<Opener> {
        self.check_free(spec)?;
        Ok(Opener {
            workers: self.workers(),
            umems: self.umems_for(spec),
        })
    }

    /// Adds a port from what [`Opener::open`] opened for `spec`.
    pub fn add_port_opened(&mut self, spec: PortSpec, opened: crate::open::Opened) -> Attached {
        let (devs, program) = opened;
        let port_no = spec.port_no;
        let a = self.add_port_devices(spec, devs);
        self.serve_fast(port_no, program);
        a
    }

    /// The workers' shared UMEMs, for a port that may open AF_XDP sockets
    /// (mapped on first use; None if that fails, logged).
    fn umems_for(&self, spec: &PortSpec) -> Option<Vec<Arc<netdev::umem::Umem>>> {
        if !matches!(spec.backend, Backend::AfXdp { .. } | Backend::Xdp { .. }) {
            return None;
        }
        if let Some(u) = self.umems.get() {
            return Some(u.clone());
        }
        let made: std::io::Result<Vec<_>> = (0..self.workers())
            .map(|_| netdev::umem::Umem::new(netdev::umem::SHARED_CHUNKS))
            .collect();
        match made {
            Ok(u) => Some(self.umems.get_or_init(|| u).clone()),
            Err(e) => {
                tracing::warn!(bridge = %self.name, error = %e, "cannot map the workers' shared UMEMs: each AF_XDP socket gets its own, and frames are copied between ports");
                None
            }
        }
    }

    /// Hands an `xdp` port's program to the fast path.
    fn serve_fast(&mut self, port_no: u32, program: Option<Arc<netdev::xdp::XdpProgram>>) {
        let Some(e) = self.ports.iter().find(|e| e.spec.port_no == port_no) else {
            return;
        };
        if !matches!(e.spec.backend, Backend::Xdp { .. }) {
            return;
        }
        match (&self.fast, program) {
            (Some(f), Some(program)) => f.add_port(crate::fast::FastPort {
                port_no,
                program,
                counters: e.fast_counters.clone(),
            }),
            (None, _) => {
                tracing::warn!(bridge = %self.name, port = port_no, "the XDP fast path is not running on this bridge: the port runs AF_XDP only")
            }
            (Some(_), None) => {}
        }
    }

    /// Adds a port from devices already open: one per worker, or a single
    /// one served by worker 0 (a pcap or memory port).
    pub fn add_port_devices(&mut self, spec: PortSpec, devs: Vec<Box<dyn Port>>) -> Attached {
        let at = self.insert(spec);
        let a = self.hand_out(at, devs);
        self.publish_view();
        a
    }

    /// Adds a port whose interface does not exist yet: detached, it waits
    /// for [`Bridge::reattach`]. Refused if its number or name is taken.
    pub fn add_port_detached(&mut self, spec: PortSpec) -> std::io::Result<()> {
        self.check_free(&spec)?;
        self.insert(spec);
        self.publish_view();
        Ok(())
    }

    /// Puts a new port's entry in place, detached, in number order; its
    /// index.
    fn insert(&mut self, spec: PortSpec) -> usize {
        self.publish_vlan(spec.port_no, &spec.vlan);
        let n = self.workers();
        let queues: Vec<Queue> = spec
            .queues
            .iter()
            .map(|q| Queue::new(q.id, q.max_rate * 1000, q.min_rate * 1000, 1024))
            .collect();
        let entry = Entry {
            spec,
            counters: (0..n).map(|_| Arc::default()).collect(),
            fast_counters: Arc::default(),
            queues,
            attached: false,
        };
        let at = self
            .ports
            .partition_point(|e| e.spec.port_no < entry.spec.port_no);
        self.ports.insert(at, entry);
        at
    }

    pub(crate) fn check_free(&self, spec: &PortSpec) -> std::io::Result<()> {
        let taken =
            |what: String| Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, what));
        if let Some(e) = self.ports.iter().find(|e| e.spec.port_no == spec.port_no) {
            return taken(format!(
                "port number {} is taken by {}",
                spec.port_no, e.spec.name
            ));
        }
        if self.ports.iter().any(|e| e.spec.name == spec.name) {
            return taken(format!("{} is already a port of {}", spec.name, self.name));
        }
        Ok(())
    }

    /// Gives each worker its handle on port `at`'s devices.
    fn hand_out(&mut self, at: usize, devs: Vec<Box<dyn Port>>) -> Attached {
        let e = &mut self.ports[at];
        let a = Attached {
            hw_addr: devs.first().map_or([0; 6], |d| d.hw_addr()),
            link_up: devs.first().is_some_and(|d| d.link_up()),
        };
        for (w, dev) in devs.into_iter().enumerate().take(self.inboxes.len()) {
            self.inboxes[w].post(WorkerCmd::Add(WorkerPort {
                port_no: e.spec.port_no,
                dev,
                counters: e.counters[w].clone(),
                queues: e.queues.iter().map(Queue::sibling).collect(),
            }));
            self.posted[w] += 1;
        }
        e.attached = true;
        a
    }

    /// Tells every worker to drop its handle on `port_no`.
    fn withdraw(&mut self, port_no: u32) {
        for (w, inbox) in self.inboxes.iter().enumerate() {
            inbox.post(WorkerCmd::Remove(port_no));
            self.posted[w] += 1;
        }
    }

    /// Removes a port: the workers drop its handles at their next round.
    /// Its spec, or None if there is no such port.
    pub fn remove_port(&mut self, port_no: u32) -> Option<PortSpec> {
        let at = self.ports.iter().position(|e| e.spec.port_no == port_no)?;
        self.withdraw(port_no);
        if let Some(f) = &self.fast {
            f.remove_port(port_no);
        }
        let e = self.ports.remove(at);
        self.publish_vlan(port_no, &VlanConfig::default());
        self.macs.forget_port(port_no);
        self.publish_view();
        Some(e.spec)
    }

    /// Detaches a port whose interface is gone: the workers drop its
    /// handles; number, counters and queues stay. False if there is no
    /// such attached port.
    pub fn detach(&mut self, port_no: u32) -> bool {
        let Some(at) = self
            .ports
            .iter()
            .position(|e| e.spec.port_no == port_no && e.attached)
        else {
            return false;
        };
        self.withdraw(port_no);
        if let Some(f) = &self.fast {
            f.remove_port(port_no);
        }
        self.ports[at].attached = false;
        self.macs.forget_port(port_no);
        self.publish_view();
        true
    }

    /// Opens a port's devices again (its interface is back, or was
    /// re-created) and hands them to the workers, replacing any old ones.
    pub fn reattach(&mut self, port_no: u32) -> std::io::Result<Attached> {
        let Some(at) = self.ports.iter().position(|e| e.spec.port_no == port_no) else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no port {port_no}"),
            ));
        };
        let spec = self.ports[at].spec.clone();
        let umems = self.umems_for(&spec);
        let (devs, program) = crate::open::open_xdp(&spec, self.workers(), umems.as_deref())?;
        let a = self.hand_out(at, devs);
        self.publish_view();
        self.serve_fast(port_no, program);
        Ok(a)
    }

    /// Changes a port's VLAN settings in place (the port stays open):
    /// NORMAL follows them from the workers' next round, and forgets the
    /// addresses learned on the port (as Open vSwitch does when a port's
    /// VLAN settings change). False if there is no such port.
    pub fn set_port_vlan(&mut self, port_no: u32, vlan: VlanConfig) -> bool {
        let Some(e) = self.ports.iter_mut().find(|e| e.spec.port_no == port_no) else {
            return false;
        };
        if e.spec.vlan == vlan {
            return true;
        }
        e.spec.vlan = vlan.clone();
        self.publish_vlan(port_no, &vlan);
        self.macs.forget_port(port_no);
        true
    }

    /// Publishes the VLAN settings with port `port_no`'s replaced.
    fn publish_vlan(&self, port_no: u32, vlan: &VlanConfig) {
        let cur = self.vlans.load();
        if cur.is_plain() && vlan.is_default() {
            return;
        }
        self.vlans.store(Arc::new(cur.with(port_no, vlan)));
    }

    /// The ports' VLAN settings as NORMAL runs them now.
    pub fn vlans(&self) -> Arc<PortVlans> {
        self.vlans.load_full()
    }

    /// Waits until every running worker has applied what was posted to it,
    /// at most `timeout`. A worker that is not running (not yet started,
    /// or ended) is not waited for: it applies its inbox when it starts.
    /// False if a running worker did not get there in time.
    pub fn wait_applied(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        loop {
            let behind = self
                .inboxes
                .iter()
                .zip(&self.posted)
                .zip(&self.counters)
                .any(|((i, &p), c)| c.running.load(Relaxed) && i.applied.load(Relaxed) < p);
            if !behind {
                return true;
            }
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The port with this number.
    pub fn port(&self, port_no: u32) -> Option<&PortSpec> {
        self.ports
            .iter()
            .find(|e| e.spec.port_no == port_no)
            .map(|e| &e.spec)
    }

    /// The port on this interface.
    pub fn port_named(&self, name: &str) -> Option<&PortSpec> {
        self.ports
            .iter()
            .find(|e| e.spec.name == name)
            .map(|e| &e.spec)
    }

    /// Every port, by number.
    pub fn ports(&self) -> impl Iterator<Item = &PortSpec> {
        self.ports.iter().map(|e| &e.spec)
    }

    /// Whether the port's devices are open.
    pub fn is_attached(&self, port_no: u32) -> bool {
        self.ports
            .iter()
            .any(|e| e.spec.port_no == port_no && e.attached)
    }

    /// The port set as other threads read it.
    pub fn view(&self) -> Arc<ArcSwap<Vec<PortView>>> {
        self.view.clone()
    }

    fn publish_view(&self) {
        let v = self
            .ports
            .iter()
            .map(|e| PortView {
                port_no: e.spec.port_no,
                name: e.spec.name.clone(),
                backend: e.spec.backend,
                counters: e.all_counters(),
                queues: e
                    .queues
                    .iter()
                    .map(|q| (q.queue_id, q.counters.clone()))
                    .collect(),
                attached: e.attached,
            })
            .collect();
        self.view.store(Arc::new(v));
    }

    /// A port's counters summed over the workers.
    pub fn port_counters(&self, port_no: u32) -> Option<PortCounters> {
        let e = self.ports.iter().find(|e| e.spec.port_no == port_no)?;
        Some(PortCounters::sum(&e.all_counters()))
    }

    /// A queue's counters.
    pub fn queue_counters(&self, port_no: u32, queue_id: u32) -> Option<Arc<QueueCounters>> {
        let e = self.ports.iter().find(|e| e.spec.port_no == port_no)?;
        let q = e.queues.iter().find(|q| q.queue_id == queue_id)?;
        Some(q.counters.clone())
    }
}

/// Starts `workers` (a bridge's, taken with [`Bridge::take_workers`]),
/// each on a thread of its own, named `BRIDGE-wN`, pinned to `cpus[N]` if
/// given, running until `stop` is set; `guard` runs each thread's body
/// (the daemon's catches a panic). The threads, by name.
pub fn spawn_workers(
    bridge: &str,
    workers: Vec<BridgeWorker>,
    cpus: &[Option<usize>],
    stop: &Arc<AtomicBool>,
    guard: &WorkerGuard,
) -> std::io::Result<Vec<(String, std::thread::JoinHandle<()>)>> {
    let mut threads = Vec::new();
    for w in workers {
        let n = w.worker;
        let cpu = cpus.get(n).copied().flatten();
        let (stop, guard) = (stop.clone(), guard.clone());
        let name = format!("{bridge}-w{n}");
        let handle = std::thread::Builder::new()
            .name(name.clone())
            .stack_size(pipeline::WALK_STACK)
            .spawn(move || {
                guard(
                    n,
                    Box::new(move || {
                        if let Some(c) = cpu {
                            crate::pin_to_cpu(c);
                        }
                        w.run(&stop)
                    }),
                )
            })?;
        threads.push((name, handle));
    }
    Ok(threads)
}

/// Opens a port's devices away from its bridge (see [`Bridge::opener`]).
pub struct Opener {
    workers: usize,
    umems: Option<Vec<Arc<netdev::umem::Umem>>>,
}

impl Opener {
    /// Opens the devices of `spec` (the spec the opener was made for).
    pub fn open(&self, spec: &PortSpec) -> std::io::Result<crate::open::Opened> {
        crate::open::open_xdp(spec, self.workers, self.umems.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netdev::memory::{MemoryPort, Wire};
    use pipeline::{Config, Pipeline, PortState};

    fn frame(dst: u8, src: u8) -> Vec<u8> {
        let mac = |b: u8| 0x0200_0000_0000 | b as u64;
        let mut f = packet::wire::build::ethernet(mac(dst), mac(src), None, 0x88b5, &[]);
        f.resize(60, 0);
        f
    }

    fn memory(bridge: &mut Bridge, p: &mut Pipeline, no: u32) -> Wire {
        let (dev, wire) = MemoryPort::new(&format!("m{no}"));
        p.set_port(PortState::up(no));
        bridge.add_port_devices(
            PortSpec::new(no, &format!("m{no}"), Backend::AfPacket { rings: true }),
            vec![Box::new(dev)],
        );
        bridge.pipeline.store(p.snapshot());
        wire
    }

    #[test]
    fn ports_come_and_go_while_the_worker_runs() {
        let mut p = Pipeline::new(Config::default());
        p.flow_mod(
            &ofp::text::parse_flow_mod("priority=0,actions=flood").unwrap(),
            0,
        )
        .unwrap();
        let mut bridge = Bridge::new("br", 1, p.snapshot(), false).unwrap();
        // The worker runs round by round here: each change reaches it at
        // its next round, as it would on its thread.
        let mut worker = bridge.take_workers().remove(0);
        let mut t = 0;
        let mut round = |w: &mut BridgeWorker| {
            t += 1_000;
            w.poll_once(t);
        };
        let w1 = memory(&mut bridge, &mut p, 1);
        let w2 = memory(&mut bridge, &mut p, 2);
        w1.inject(&frame(9, 1));
        round(&mut worker);
        assert_eq!(w2.take_sent().len(), 1);

        // A port added at run time is flooded to from the next round.
        let w3 = memory(&mut bridge, &mut p, 3);
        assert!(bridge.wait_applied(Duration::from_secs(2)));
        w1.inject(&frame(9, 1));
        round(&mut worker);
        assert_eq!(w3.take_sent().len(), 1);
        assert_eq!(w2.take_sent().len(), 1);
        assert_eq!(bridge.port_counters(3).unwrap().tx_packets.load(Relaxed), 1);

        // A removed port gets nothing more, and its frames are not read.
        p.remove_port(2);
        bridge.pipeline.store(p.snapshot());
        assert!(bridge.remove_port(2).is_some());
        assert!(bridge.wait_applied(Duration::from_secs(2)));
        w2.inject(&frame(9, 2));
        w1.inject(&frame(9, 1));
        round(&mut worker);
        assert_eq!(w3.take_sent().len(), 1);
        assert!(w2.take_sent().is_empty());
        assert!(bridge.port(2).is_none());
        assert_eq!(
            bridge
                .view()
                .load()
                .iter()
                .map(|v| v.port_no)
                .collect::<Vec<_>>(),
            vec![1, 3]
        );

        // Detached: no frames out, number and counters kept.
        assert!(bridge.detach(3));
        assert!(!bridge.detach(3));
        assert!(bridge.wait_applied(Duration::from_secs(2)));
        w1.inject(&frame(9, 1));
        round(&mut worker);
        assert!(w3.take_sent().is_empty());
        assert!(!bridge.is_attached(3));
        assert_eq!(bridge.port_counters(3).unwrap().tx_packets.load(Relaxed), 2);
    }

    #[test]
    fn vlan_settings_change_in_place_while_the_worker_runs() {
        let mut p = Pipeline::new(Config::default());
        p.flow_mod(
            &ofp::text::parse_flow_mod("priority=0,actions=normal").unwrap(),
            0,
        )
        .unwrap();
        let mut bridge = Bridge::new("br", 1, p.snapshot(), false).unwrap();
        let mut worker = bridge.take_workers().remove(0);
        let t = 1_000;
        let round = |w: &mut BridgeWorker| {
            w.poll_once(t);
        };
        let wires: Vec<Wire> = (1..=3).map(|n| memory(&mut bridge, &mut p, n)).collect();
        let access = |tag| VlanConfig::check(Some(tag), &[], None).unwrap();
        assert!(bridge.set_port_vlan(1, access(10)));
        assert!(bridge.set_port_vlan(2, access(10)));
        assert!(bridge.set_port_vlan(3, access(20)));
        assert!(!bridge.set_port_vlan(9, access(20)));
        // 1 -> 2 in VLAN 10; 3 (VLAN 20) gets nothing.
        wires[0].inject(&frame(9, 1));
        round(&mut worker);
        assert_eq!(wires[1].take_sent().len(), 1);
        assert!(wires[2].take_sent().is_empty());
        assert_eq!(bridge.macs.lookup(10, 0x0200_0000_0001, t), Some(1));
        // Port 1 moves to VLAN 20: from the next round it reaches 3, and
        // what it had learned is forgotten.
        assert!(bridge.set_port_vlan(1, access(20)));
        assert_eq!(bridge.macs.lookup(10, 0x0200_0000_0001, t), None);
        wires[0].inject(&frame(9, 1));
        round(&mut worker);
        assert!(wires[1].take_sent().is_empty());
        assert_eq!(wires[2].take_sent().len(), 1);
        assert_eq!(bridge.port(1).unwrap().vlan, access(20));
        // A removed port's settings go with it.
        bridge.remove_port(3);
        bridge.set_port_vlan(1, VlanConfig::default());
        bridge.set_port_vlan(2, VlanConfig::default());
        assert!(bridge.vlans().is_plain());
    }

    #[test]
    fn a_taken_number_or_name_is_refused() {
        let mut p = Pipeline::new(Config::default());
        let mut bridge = Bridge::new("br", 1, p.snapshot(), false).unwrap();
        let (dev, _wire) = MemoryPort::new("a");
        bridge.add_port_devices(
            PortSpec::new(1, "a", Backend::AfPacket { rings: true }),
            vec![Box::new(dev)],
        );
        let e = bridge
            .add_port(PortSpec::new(1, "b", Backend::AfPacket { rings: true }))
            .unwrap_err();
        assert!(e.to_string().contains("port number 1 is taken by a"), "{e}");
        let e = bridge
            .add_port(PortSpec::new(2, "a", Backend::AfPacket { rings: true }))
            .unwrap_err();
        assert!(e.to_string().contains("already a port"), "{e}");
    }
}
