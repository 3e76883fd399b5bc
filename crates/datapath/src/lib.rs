//! # datapath: ports -> pipeline -> ports
//!
//! A bridge ([`bridge::Bridge`]) runs on one or more workers. A
//! [`BridgeWorker`] owns its own handle on every port of the bridge (with
//! several workers, one member of each port's `PACKET_FANOUT` group, or one
//! queue of the LOCAL TAP device; ports added and removed while it runs
//! reach it through its [`Inbox`] at a batch boundary) and serves them end
//! to end on its thread: receive a batch from each
//! port, run every frame through the current pipeline snapshot, queue the
//! outputs per port, flush each port once per batch. Workers share only
//! what must be shared, all without locks: the published pipeline, the MAC
//! table (atomics, [`normal`]) and the shaping budget of each egress queue
//! (an atomic timestamp). Counters are per worker and summed when read.
//! The snapshot is picked up once per batch from an [`ArcSwap`] that the
//! control plane replaces (never a lock on the packet path). Packets for
//! NORMAL go through the MAC learning switch ([`normal`]); packets for the
//! controller go to the agent through [`channel`] (a full queue drops and
//! counts).
//!
//! A round looks at each port once (an AF_XDP port: one load of its RX
//! ring's index, so idle ports cost little) and receives only from those
//! with frames. When no port had a frame, the worker sleeps on the ports'
//! descriptors (an epoll set made once per port set, [`sleep`]; up to
//! 10 ms) instead of spinning: this machine class has two cores.
//!
//! Bounded work and memory per round: receive buffers are as long as the
//! longest frame a port takes (from its MTU); a frame shorter than an
//! Ethernet header is dropped and counted as a receive error, one longer
//! than the buffers dropped and counted as truncated; a port's transmit
//! queue takes at most [`TX_QUEUE_MAX`] frames a round (the rest dropped and
//! counted) and keeps at most [`TX_KEEP`] buffers once the round is sent;
//! worker 0 runs at most [`PACKET_OUTS_PER_ROUND`] PACKET_OUTs a round.
//!
//! Health: a worker writes a heartbeat at the start of every round and
//! holds `running` true while its loop runs ([`BridgeCounters`]); the
//! daemon reads both for its metrics and to notice a stalled worker. The
//! loop does not catch panics: whoever runs it decides what a dead worker
//! means (the daemon stops and exits, see its `health` module).

pub mod bridge;
pub mod channel;
pub mod clock;
pub mod fast;
pub mod histogram;
pub mod normal;
pub mod open;
pub mod queue;
mod rx;
mod sleep;
mod tx;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use arc_swap::ArcSwap;
use netdev::umem::{Desc, TxFrame, Umem, ZcBatch};
use netdev::{Batch, Port};
use ofp::port::port_no;
use pipeline::{Snapshot, Worker};
use rx::Received;

pub use bridge::{Attached, Bridge, Inbox, PortView};
pub use normal::{Decision, MacTable};
pub use open::{
    tunnel_proto, tunnel_spec, Backend, PcapSpec, PortSpec, QueueSpec, BACKENDS, TUNNEL_OPTIONS,
    TUNNEL_TYPES,
};
pub use packet::tunnel::Proto as TunnelProto;
use tx::TxQueue;
pub use tx::{TX_KEEP, TX_QUEUE_MAX};

/// Shortest frame the worker takes: an Ethernet header.
pub const ETH_HLEN: usize = 14;

/// Counters of one port (written by the worker, read by anyone).
#[derive(Debug, Default)]
pub struct PortCounters {
    pub rx_packets: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub tx_packets: AtomicU64,
    pub tx_bytes: AtomicU64,
    pub tx_dropped: AtomicU64,
    pub rx_errors: AtomicU64,
    /// Frames that arrived longer than the port's buffers (GRO/TSO
    /// super-frames, frames above the MTU): dropped.
    pub rx_truncated: AtomicU64,
    /// Frames received with an unfinished checksum (the sender offloads
    /// checksums): forwarded as they are.
    pub rx_csum_partial: AtomicU64,
}

impl PortCounters {
    /// Adds to a counter this thread alone writes (no atomic read-modify-write).
    fn add(c: &AtomicU64, v: u64) {
        c.store(c.load(Relaxed) + v, Relaxed);
    }

    /// The sum of several workers' counters of one port.
    pub fn sum(list: &[Arc<PortCounters>]) -> PortCounters {
        let t = PortCounters::default();
        for c in list {
            for (a, b) in [
                (&t.rx_packets, &c.rx_packets),
                (&t.rx_bytes, &c.rx_bytes),
                (&t.tx_packets, &c.tx_packets),
                (&t.tx_bytes, &c.tx_bytes),
                (&t.tx_dropped, &c.tx_dropped),
                (&t.rx_errors, &c.rx_errors),
                (&t.rx_truncated, &c.rx_truncated),
                (&t.rx_csum_partial, &c.rx_csum_partial),
            ] {
                a.fetch_add(b.load(Relaxed), Relaxed);
            }
        }
        t
    }
}

impl BridgeCounters {
    /// The sum of several workers' counters.
    pub fn sum(list: &[Arc<BridgeCounters>]) -> BridgeCounters {
        let t = BridgeCounters::default();
        for c in list {
            t.delay.absorb(&c.delay);
            for (a, b) in [
                (&t.to_controller, &c.to_controller),
                (&t.dropped, &c.dropped),
                (&t.batches, &c.batches),
                (&t.skipped_edits, &c.skipped_edits),
                (&t.over_limit, &c.over_limit),
            ] {
                a.fetch_add(b.load(Relaxed), Relaxed);
            }
        }
        t
    }
}

/// Bridge-wide counters of one worker, and its health.
#[derive(Default)]
pub struct BridgeCounters {
    /// Delay from a frame's batch being received (recvmmsg returned) to the
    /// moment its batch is handed to the kernel for transmission (sendmmsg
    /// called), per frame, in ns: the time the frame spends in the switch.
    pub delay: histogram::Histogram,
    /// Packets for the controller.
    pub to_controller: AtomicU64,
    /// Packets that left the pipeline with no output.
    pub dropped: AtomicU64,
    /// Rounds of the worker loop (one receive from every port, idle or
    /// not).
    pub batches: AtomicU64,
    /// Header edits skipped because the packet had no such header (a
    /// group bucket's set_field on a packet it does not fit; see
    /// `pipeline::edit`).
    pub skipped_edits: AtomicU64,
    /// Outputs and group buckets dropped because one packet asked for more
    /// than the pipeline's per-packet limits (chained groups).
    pub over_limit: AtomicU64,
    /// When the worker's current loop round started ([`clock`] ns; 0
    /// before the first). A round takes at most the 10 ms of an idle
    /// wait plus one batch, so an old heartbeat means a stalled
    /// worker (not summed: one worker's health).
    pub heartbeat_ns: AtomicU64,
    /// True while the worker's loop runs; false once it has returned or
    /// unwound (not summed).
    pub running: AtomicBool,
}

/// Sets a worker's `running` flag back to false however its loop ends,
/// panics included.
struct RunningGuard<'a>(&'a AtomicBool);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Relaxed);
    }
}

/// One port of a bridge.
pub struct BridgePort {
    pub port_no: u32,
    pub dev: Box<dyn Port>,
    pub counters: Arc<PortCounters>,
    /// Egress queues (set_queue); frames without a known queue go unshaped.
    pub queues: Vec<queue::Queue>,
}

impl BridgePort {
    /// Counts a send call's result: `taken` of `total` frames, the first
    /// `taken` of them `bytes` long in all. A frame not taken is dropped;
    /// one taken is sent, unless the port settles later (AF_XDP: then
    /// [`BridgePort::settle_tx`] counts it, sent or dropped).
    fn count_sent(&self, r: std::io::Result<usize>, total: usize, bytes: impl Fn(usize) -> u64) {
        let c = &self.counters;
        let taken = match r {
            Ok(n) => n.min(total),
            Err(_) => 0,
        };
        if taken > 0 && !self.dev.tx_settles_later() {
            PortCounters::add(&c.tx_packets, taken as u64);
            PortCounters::add(&c.tx_bytes, bytes(taken));
        }
        if total > taken {
            PortCounters::add(&c.tx_dropped, (total - taken) as u64);
        }
    }

    /// Counts what the port settled since the last call: frames sent (and
    /// their bytes) or dropped after the send call that took them.
    fn settle_tx(&mut self) {
        if !self.dev.tx_settles_later() {
            return;
        }
        let s = self.dev.take_tx_settled();
        let c = &self.counters;
        if s.sent > 0 {
            PortCounters::add(&c.tx_packets, s.sent);
            PortCounters::add(&c.tx_bytes, s.bytes);
        }
        if s.dropped > 0 {
            PortCounters::add(&c.tx_dropped, s.dropped);
        }
    }

    /// Before the port is closed: every frame it took is settled and
    /// counted (`Port::close_tx`).
    fn finish_tx(&mut self) {
        self.dev.close_tx();
        self.settle_tx();
    }
}

/// One worker of a logical switch: its handles on the bridge's ports, the
/// published pipeline, its counters, the bridge's MAC table.
pub struct BridgeWorker {
    /// Which worker of the bridge this is (0-based).
    pub worker: usize,
    pub ports: Vec<BridgePort>,
    pub pipeline: Arc<ArcSwap<Snapshot>>,
    pub counters: Arc<BridgeCounters>,
    pub macs: Arc<MacTable>,
    /// The queues to and from the bridge's OpenFlow agent (None: frames
    /// for the controller are counted and dropped).
    pub channels: Option<Arc<channel::Channels>>,
    /// nullx: no pipeline; port 0's frames go to port 1 and back (2 <-> 3,
    /// ...). The same I/O code with zero switching work: the floor every
    /// other figure is compared with.
    pub nullx: bool,
    /// Fault injection, for tests only (the daemon sets it from
    /// `SLUICE_FAULT=worker-panic:N`): the worker panics in its N-th
    /// batch that carried frames. None in normal operation.
    pub panic_after_batches: Option<u64>,
    /// Port changes from the control thread ([`bridge`]), applied at the
    /// start of a round.
    pub inbox: Arc<Inbox>,
}

/// PACKET_OUTs worker 0 runs in one round; the rest wait for the next
/// round, so a full packet-out queue cannot make one round unbounded.
pub const PACKET_OUTS_PER_ROUND: usize = 256;

/// A worker's per-port state derived from its port set: rebuilt when the
/// set changes.
struct Plumbing {
    /// One transmit queue per port, in port order.
    tx: Vec<TxQueue>,
    /// Port number -> position.
    index: PortIndex,
    /// Waits on the ports' descriptors (and, for worker 0, the
    /// packet-out wake-up).
    sleeper: sleep::Sleeper,
    /// The receive buffer size: the largest frame any port takes.
    frame: usize,
}

/// Port number -> position in a worker's port list, asked once per
/// output: a table for the small numbers ports usually have (one load), a
/// map for the rest.
struct PortIndex {
    small: Vec<Option<u32>>,
    rest: std::collections::HashMap<u32, usize>,
}

impl PortIndex {
    /// Numbers below this are in the table.
    const SMALL: u32 = 1024;

    fn of(ports: impl Iterator<Item = u32>) -> PortIndex {
        let mut x = PortIndex {
            small: Vec::new(),
            rest: Default::default(),
        };
        for (i, p) in ports.enumerate() {
            if p < Self::SMALL {
                let p = p as usize;
                if x.small.len() <= p {
                    x.small.resize(p + 1, None);
                }
                x.small[p] = Some(i as u32);
            } else {
                x.rest.insert(p, i);
            }
        }
        x
    }

    fn get(&self, p: u32) -> Option<usize> {
        if p < Self::SMALL {
            self.small
                .get(p as usize)
                .copied()
                .flatten()
                .map(|i| i as usize)
        } else {
            self.rest.get(&p).copied()
        }
    }
}

impl Plumbing {
    fn of(w: &BridgeWorker) -> Plumbing {
        let frame = w
            .ports
            .iter()
            .map(|p| p.dev.max_frame())
            .max()
            .unwrap_or(netdev::MAX_FRAME)
            .max(netdev::MAX_FRAME);
        Plumbing {
            tx: w
                .ports
                .iter()
                .map(|p| TxQueue::new(frame, p.dev.is_tunnel()))
                .collect(),
            index: PortIndex::of(w.ports.iter().map(|p| p.port_no)),
            sleeper: sleep::Sleeper::new(
                &w.ports
                    .iter()
                    .flat_map(|p| p.dev.fds())
                    .chain(
                        w.channels
                            .iter()
                            .filter(|_| w.worker == 0)
                            .map(|c| c.packet_out_wake.fd()),
                    )
                    .collect::<Vec<_>>(),
            ),
            frame,
        }
    }
}

impl BridgeWorker {
    /// Applies the port changes posted to this worker: an added port
    /// replaces one of the same number; a removed port's handle is dropped
    /// (closing its device).
    fn apply_inbox(&mut self) {
        let cmds = self.inbox.take();
        let n = cmds.len();
        for c in cmds {
            match c {
                bridge::WorkerCmd::Add(p) => {
                    match self.ports.iter().position(|x| x.port_no == p.port_no) {
                        Some(i) => {
                            self.ports[i].finish_tx();
                            self.ports[i] = p
                        }
                        None => self.ports.push(p),
                    }
                }
                bridge::WorkerCmd::Remove(no) => {
                    for p in self.ports.iter_mut().filter(|x| x.port_no == no) {
                        p.finish_tx();
                    }
                    self.ports.retain(|x| x.port_no != no)
                }
            }
        }
        self.inbox.done(n);
    }

    /// Runs the worker until `stop` is set. `counters.running` is true
    /// while it runs and false once it returns or unwinds; its heartbeat
    /// is written at the start of every round.
    pub fn run(mut self, stop: &AtomicBool) {
        let counters = self.counters.clone();
        counters.running.store(true, Relaxed);
        let _running = RunningGuard(&counters.running);
        let mut busy_batches = 0u64;
        let mut batch = Batch::new(32);
        let mut worker = Worker::new(self.worker);
        let mut plumbing = Plumbing::of(&self);
        let mut slice_buf: Vec<&'static [u8]> = Vec::with_capacity(64);
        let mut item_buf: Vec<TxFrame<'static>> = Vec::with_capacity(64);
        let mut zc = ZcBatch::default();
        while !stop.load(Relaxed) {
            if self.inbox.pending() {
                self.apply_inbox();
                plumbing = Plumbing::of(&self);
            }
            // Receive buffers as long as the longest frame a port takes.
            if batch.frame_size() != plumbing.frame {
                batch = Batch::with_frame_size(32, plumbing.frame);
            }
            let Plumbing {
                tx, index, sleeper, ..
            } = &mut plumbing;
            let snap = self.pipeline.load_full();
            let now = clock::now_ns();
            self.counters.heartbeat_ns.store(now, Relaxed);
            let mut got = 0;
            let mut woke = false;
            let mut rx_batches: [(u64, u64); 64] = [(0, 0); 64];
            for i in 0..self.ports.len() {
                // Most ports of a large bridge are idle in a given round:
                // one look at each one's ring.
                if !self.ports[i].dev.rx_ready() {
                    continue;
                }
                // A port with a UMEM lends its frames where they lie.
                let lends = self.ports[i].dev.umem().is_some();
                let r = if lends {
                    self.ports[i].dev.recv_zc(&mut zc, batch.capacity())
                } else {
                    self.ports[i].dev.recv(&mut batch)
                };
                let n = match r {
                    Ok(n) => n,
                    Err(_) => {
                        PortCounters::add(&self.ports[i].counters.rx_errors, 1);
                        0
                    }
                };
                let lost = self.ports[i].dev.take_rx_errors();
                if lost > 0 {
                    PortCounters::add(&self.ports[i].counters.rx_errors, lost);
                }
                let cut = self.ports[i].dev.take_rx_truncated();
                if cut > 0 {
                    PortCounters::add(&self.ports[i].counters.rx_truncated, cut);
                }
                let partial = self.ports[i].dev.take_rx_csum_partial();
                if partial > 0 {
                    PortCounters::add(&self.ports[i].counters.rx_csum_partial, partial);
                }
                got += n;
                if n > 0 {
                    if let Some(slot) = rx_batches.get_mut(i) {
                        *slot = (clock::now_ns(), n as u64);
                    }
                }
                let mut at = Serve {
                    worker: &mut worker,
                    snap: &snap,
                    tx,
                    index,
                    now,
                };
                woke |= if lends {
                    self.serve(i, &mut zc, n, &mut at)
                } else {
                    self.serve(i, &mut batch, n, &mut at)
                };
            }
            // Received chunks not sent on go back to the UMEM.
            zc.release();
            // PACKET_OUTs from the agent (worker 0 runs them).
            if let Some(ch) = self.channels.clone().filter(|_| self.worker == 0) {
                if !ch.packet_out.is_empty() {
                    ch.packet_out_wake.clear();
                    let mut jobs = 0;
                    while jobs < PACKET_OUTS_PER_ROUND {
                        let Some(mut job) = ch.packet_out.pop() else {
                            break;
                        };
                        jobs += 1;
                        let outs = worker.packet_out(
                            &snap,
                            job.in_port,
                            &job.actions,
                            &mut job.frame,
                            now,
                        );
                        let mut out = Emit {
                            ports: &mut self.ports,
                            tx,
                            index,
                            macs: &self.macs,
                            counters: &self.counters,
                            channels: Some(&ch),
                            snap: &snap,
                            now,
                            umem: None,
                        };
                        for o in &outs {
                            woke |= out.emit(job.in_port, o, &job.frame, &mut None);
                        }
                        got += 1;
                    }
                }
            }
            if woke {
                if let Some(ch) = &self.channels {
                    ch.packet_in_wake.wake();
                }
            }
            // Shaped queues release what their rate allows.
            let mut waiting = false;
            for (x, port) in self.ports.iter_mut().enumerate() {
                for q in &mut port.queues {
                    q.release(now, |f| tx[x].push(f));
                    waiting |= !q.is_empty();
                }
            }
            // In-switch delay: from a frame's batch being received to the
            // moment its batch is handed to the kernel for transmission.
            if got > 0 {
                let done = clock::now_ns();
                for &(t, n) in rx_batches.iter().take(self.ports.len()).filter(|b| b.1 > 0) {
                    self.counters.delay.record(done.saturating_sub(t), n);
                }
            }
            for (i, q) in tx.iter_mut().enumerate() {
                if q.overflow > 0 {
                    PortCounters::add(&self.ports[i].counters.tx_dropped, q.overflow);
                }
                if q.n == 0 {
                    // Untouched this round (still empty from the last
                    // reset) unless frames were refused.
                    if q.overflow > 0 {
                        q.reset();
                    }
                    continue;
                }
                let port = &mut self.ports[i];
                if q.has_chunks() {
                    // Chunks of the port's UMEM go by descriptor (the list
                    // reuses one allocation, as the slices below).
                    let mut items: Vec<TxFrame> = std::mem::take(&mut item_buf);
                    items.extend(q.items());
                    let r = port.dev.send_zc(&items);
                    port.count_sent(r, items.len(), |n| (0..n).map(|k| q.len_of(k) as u64).sum());
                    port.settle_tx();
                    items.clear();
                    item_buf = items
                        .into_iter()
                        .map(|_| -> TxFrame<'static> { TxFrame::Bytes(&[]) })
                        .collect();
                    q.reset();
                    continue;
                }
                // Reuse one allocation for the slice list across batches: the
                // empty list of 'static slices coerces to one of this batch's
                // slices, and goes back emptied (an in-place collect keeps
                // the buffer).
                let mut frames: Vec<&[u8]> = std::mem::take(&mut slice_buf);
                frames.extend(q.frames[..q.n].iter().map(|f| f.as_slice()));
                let r = if q.tunnel {
                    port.dev.send_tunneled(&frames, &q.meta[..q.n])
                } else {
                    port.dev.send(&frames)
                };
                port.count_sent(r, frames.len(), |n| {
                    frames[..n].iter().map(|f| f.len() as u64).sum()
                });
                port.settle_tx();
                frames.clear();
                slice_buf = frames
                    .into_iter()
                    .map(|_| -> &'static [u8] { &[] })
                    .collect();
                q.reset();
            }
            PortCounters::add(&self.counters.batches, 1);
            self.counters
                .skipped_edits
                .store(worker.skipped_edits(), Relaxed);
            self.counters.over_limit.store(worker.over_limit(), Relaxed);
            if got > 0 {
                busy_batches += 1;
                if self.panic_after_batches == Some(busy_batches) {
                    panic!("injected fault (SLUICE_FAULT=worker-panic:{busy_batches})");
                }
            }
            // Not held while waiting: an idle worker must not keep the
            // control plane from reusing the classifiers of an old version
            // (`pipeline::published`).
            drop(snap);
            if got == 0 {
                for p in &mut self.ports {
                    p.dev.before_wait();
                    p.settle_tx();
                }
                // Frames waiting in a shaped queue need the worker back soon.
                sleeper.wait(if waiting { 1 } else { 10 });
            }
        }
        for p in &mut self.ports {
            p.finish_tx();
        }
    }
}

/// What serving one port's frames needs from the worker's round.
struct Serve<'a> {
    worker: &'a mut Worker,
    snap: &'a Snapshot,
    tx: &'a mut [TxQueue],
    index: &'a PortIndex,
    now: u64,
}

impl BridgeWorker {
    /// Runs the `n` frames port `i` just received through the pipeline
    /// and queues their outputs; true if a frame went to the agent. A
    /// frame in a UMEM goes on by descriptor to the first output that is
    /// a port of the same UMEM (its final bytes, not a copy made on the
    /// way); every other output gets a copy.
    fn serve<R: Received>(&mut self, i: usize, rx: &mut R, n: usize, at: &mut Serve) -> bool {
        if n == 0 {
            return false;
        }
        let in_port = self.ports[i].port_no;
        let c = self.ports[i].counters.clone();
        // OFPPC_NO_RECV: counted as received, then dropped.
        if at
            .snap
            .ports
            .iter()
            .any(|p| p.port_no == in_port && p.no_recv)
        {
            PortCounters::add(&c.rx_packets, n as u64);
            let bytes = (0..n).map(|j| rx.bytes(j).len() as u64).sum();
            PortCounters::add(&c.rx_bytes, bytes);
            PortCounters::add(&self.counters.dropped, n as u64);
            return false;
        }
        let mut woke = false;
        for j in 0..n {
            let len = rx.bytes(j).len();
            if len < ETH_HLEN {
                // A runt: not an Ethernet frame (no link delivers one; a
                // capture or a test can). Dropped, counted as a receive
                // error.
                PortCounters::add(&c.rx_errors, 1);
                continue;
            }
            PortCounters::add(&c.rx_packets, 1);
            PortCounters::add(&c.rx_bytes, len as u64);
            if self.nullx {
                if let Some(q) = at.tx.get_mut(i ^ 1) {
                    let same = same_umem(rx.umem(), self.ports[i ^ 1].dev.umem());
                    // Taken only when it can move: a taken chunk that
                    // is copied instead would never go back.
                    match if same { rx.take(j) } else { None } {
                        Some(d) if q.push_chunk(d) => {}
                        Some(_) => rx.untake(j),
                        None => q.push(rx.bytes(j)),
                    }
                }
                continue;
            }
            let outs = rx.run(j, at.worker, at.snap, in_port, at.now);
            if outs.is_empty() {
                PortCounters::add(&self.counters.dropped, 1);
            }
            let mut own = rx.take(j);
            let mut out = Emit {
                ports: &mut self.ports,
                tx: at.tx,
                index: at.index,
                macs: &self.macs,
                counters: &self.counters,
                channels: self.channels.as_deref(),
                snap: at.snap,
                now: at.now,
                umem: rx.umem(),
            };
            for o in outs {
                woke |= out.emit(in_port, o, rx.bytes(j), &mut own);
            }
            if own.is_some() {
                rx.untake(j);
            }
        }
        woke
    }
}

/// Whether two ports' UMEMs are one (a chunk of one is the other's).
fn same_umem(a: Option<&Arc<Umem>>, b: Option<&Arc<Umem>>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
}

/// Where one worker's outputs go: the pieces of the worker it needs.
struct Emit<'a> {
    ports: &'a mut [BridgePort],
    tx: &'a mut [TxQueue],
    index: &'a PortIndex,
    macs: &'a MacTable,
    counters: &'a BridgeCounters,
    channels: Option<&'a channel::Channels>,
    snap: &'a Snapshot,
    now: u64,
    /// The UMEM the frame lies in, if it does.
    umem: Option<&'a Arc<Umem>>,
}

impl Emit<'_> {
    /// Sends one pipeline output of a frame received on `in_port` (`frame`
    /// unless the output carries its own bytes). `own` is the frame's
    /// UMEM chunk while no output has taken it. True if a frame went to
    /// the agent.
    fn emit(
        &mut self,
        in_port: u32,
        o: &pipeline::Output,
        frame: &[u8],
        own: &mut Option<Desc>,
    ) -> bool {
        let data: &[u8] = o.data.as_deref().unwrap_or(frame);
        let whole = o.data.is_none();
        match o.port {
            port_no::CONTROLLER => {
                PortCounters::add(&self.counters.to_controller, 1);
                if let (Some(ch), Some(ctl)) = (self.channels, o.controller) {
                    return ch.to_agent(channel::ToAgent {
                        in_port,
                        ctl,
                        frame: data.to_vec(),
                        tunnel: o.tunnel,
                    });
                }
            }
            port_no::NORMAL => {
                let Some((vlan, src, dst)) = packet::l2_addresses(data) else {
                    return false;
                };
                match self.macs.forward(vlan, src, dst, in_port, self.now) {
                    Decision::Port(p) => {
                        if let Some(x) = self.index.get(p) {
                            self.queue(x, data, whole, own, &o.tunnel);
                        }
                    }
                    Decision::Flood => {
                        for p in &self.snap.ports {
                            if p.port_no != in_port && p.live && !p.no_flood && !p.no_fwd {
                                if let Some(y) = self.index.get(p.port_no) {
                                    self.tx[y].push_meta(data, &o.tunnel);
                                }
                            }
                        }
                    }
                    Decision::Drop => {}
                }
            }
            p => {
                if let Some(x) = self.index.get(p) {
                    let q = o
                        .queue
                        .and_then(|id| self.ports[x].queues.iter_mut().find(|q| q.queue_id == id));
                    match q {
                        Some(q) => {
                            q.enqueue(data);
                        }
                        None => self.queue(x, data, whole, own, &o.tunnel),
                    }
                }
            }
        }
        false
    }

    /// Queues `data` on port x: the frame's chunk itself when `data` is
    /// the whole frame and the port shares its UMEM, else a copy.
    fn queue(
        &mut self,
        x: usize,
        data: &[u8],
        whole: bool,
        own: &mut Option<Desc>,
        tun: &netdev::TunnelDst,
    ) {
        if whole && same_umem(self.umem, self.ports[x].dev.umem()) {
            if let Some(d) = own.take() {
                if !self.tx[x].push_chunk(d) {
                    // Queue full (counted): the chunk stays the batch's.
                    *own = Some(d);
                }
                return;
            }
        }
        self.tx[x].push_meta(data, tun);
    }
}

/// Pins the calling thread to `cpu` (best effort: a refusal is reported and
/// the thread runs unpinned).
pub fn pin_to_cpu(cpu: usize) -> bool {
    match netdev::os::pin_to_cpu(cpu) {
        Ok(()) => true,
        // A CPU past the set: refused without a word, as before.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => false,
        Err(e) => {
            eprintln!("sluice: could not pin the worker to CPU {cpu}: {e}");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_index_finds_small_and_large_numbers() {
        let x = PortIndex::of([3, 1, 0xffff_fff0, 1023, 1024].into_iter());
        assert_eq!(x.get(3), Some(0));
        assert_eq!(x.get(1), Some(1));
        assert_eq!(x.get(0xffff_fff0), Some(2));
        assert_eq!(x.get(1023), Some(3));
        assert_eq!(x.get(1024), Some(4));
        for absent in [0, 2, 4, 1022, 1025, port_no::LOCAL, port_no::CONTROLLER] {
            assert_eq!(x.get(absent), None, "{absent}");
        }
    }

    /// Worker 0 of a bridge of `ports` running `p`, without a controller.
    fn test_bridge(ports: Vec<BridgePort>, p: &mut Pipeline) -> BridgeWorker {
        BridgeWorker {
            worker: 0,
            ports,
            pipeline: Arc::new(ArcSwap::new(p.snapshot())),
            counters: Arc::default(),
            macs: Arc::default(),
            channels: None,
            nullx: false,
            panic_after_batches: None,
            inbox: Arc::default(),
        }
    }
    use netdev::memory::MemoryPort;
    use pipeline::{Config, Pipeline, PortState};

    fn frame(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0x88, 0xb5]);
        f.resize(60, 0);
        f
    }

    #[test]
    fn runts_are_dropped_and_counted_as_receive_errors() {
        let mut p = Pipeline::new(Config::default());
        let (a, wa) = MemoryPort::new("a");
        let (b, wb) = MemoryPort::new("b");
        let mut ports = Vec::new();
        for (n, dev) in [(1u32, a), (2, b)] {
            p.set_port(PortState::up(n));
            ports.push(BridgePort {
                port_no: n,
                dev: Box::new(dev),
                counters: Arc::default(),
                queues: Vec::new(),
            });
        }
        p.flow_mod(
            &ofp::text::parse_flow_mod("priority=0,actions=output:2").unwrap(),
            0,
        )
        .unwrap();
        let c1 = ports[0].counters.clone();
        let bridge = test_bridge(ports, &mut p);
        for len in [0, 1, 13, 14, 60] {
            wa.inject(&vec![0xab; len]);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let h = std::thread::spawn(move || bridge.run(&s2));
        let mut sent = Vec::new();
        for _ in 0..200 {
            sent.extend(wb.take_sent());
            if sent.len() >= 2 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        stop.store(true, Relaxed);
        h.join().unwrap();
        let lens: Vec<usize> = sent.iter().map(Vec::len).collect();
        assert_eq!(lens, vec![14, 60]);
        assert_eq!(c1.rx_errors.load(Relaxed), 3);
        assert_eq!(c1.rx_packets.load(Relaxed), 2);
    }

    #[test]
    fn standalone_bridge_learns_and_forwards() {
        let mut p = Pipeline::new(Config::default());
        let mut ports = Vec::new();
        let mut wires = Vec::new();
        for n in 1..=3u32 {
            let (dev, wire) = MemoryPort::new(&format!("m{n}"));
            p.set_port(PortState::up(n));
            ports.push(BridgePort {
                port_no: n,
                dev: Box::new(dev),
                counters: Arc::default(),
                queues: Vec::new(),
            });
            wires.push(wire);
        }
        p.flow_mod(
            &ofp::text::parse_flow_mod("priority=0,actions=normal").unwrap(),
            0,
        )
        .unwrap();
        let bridge = test_bridge(ports, &mut p);
        let (a, b) = ([2, 0, 0, 0, 0, 0xa], [2, 0, 0, 0, 0, 0xb]);
        wires[0].inject(&frame(b, a));
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let h = std::thread::spawn(move || bridge.run(&s2));
        let wait = |w: &netdev::memory::Wire| {
            for _ in 0..200 {
                let f = w.take_sent();
                if !f.is_empty() {
                    return f;
                }
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Vec::new()
        };
        // Unknown destination: flooded to 2 and 3.
        assert_eq!(wait(&wires[1]).len(), 1);
        assert_eq!(wait(&wires[2]).len(), 1);
        // The reply goes only to port 1, where a was learned.
        wires[1].inject(&frame(a, b));
        assert_eq!(wait(&wires[0]).len(), 1);
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert!(wires[2].take_sent().is_empty());
        stop.store(true, Relaxed);
        h.join().unwrap();
    }
}
