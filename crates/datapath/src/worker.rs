//! One worker of a bridge, as a state machine: [`BridgeWorker::poll_once`]
//! does one round of bounded work at the time it is given, and
//! [`BridgeWorker::run`] is the short loop around it that a worker thread
//! runs (the time from the process clock, the idle wait on the ports'
//! descriptors).
//!
//! A round: apply the port changes posted to the worker's inbox (at this
//! batch boundary, never in the middle of one); pick up the current
//! pipeline snapshot; receive a batch from each port that has frames, look
//! ahead over it ([`pipeline::Worker::look_ahead`]) and run every frame
//! through the pipeline, queuing its outputs (`emit.rs`);
//! worker 0 runs up to [`PACKET_OUTS_PER_ROUND`] PACKET_OUTs; shaped
//! queues release what their rate allows; every port's queue is sent in
//! one call. A round that found no work readies the ports for a wait
//! ([`netdev::Port::before_wait`]) and says how long the worker may sleep
//! ([`Round::idle_wait_ms`]).
//!
//! Contract: `poll_once` never sleeps and never blocks; it reads the time
//! only through the worker's [`Clock`] (between a round's steps, for the
//! delay histogram), so a test with memory ports and a hand-set clock
//! drives a worker round by round, with no thread and no sleep. It
//! allocates nothing once its buffers have grown to the port set (the
//! packet-in queue's copies aside).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

use arc_swap::ArcSwap;
use netdev::umem::{TxFrame, ZcBatch};
use netdev::{Batch, Port};
use pipeline::lookup::lookahead::LOOKAHEAD;
use pipeline::{Snapshot, Worker};

use crate::bridge::{Inbox, WorkerCmd};
use crate::clock::Clock;
use crate::counters::{BridgeCounters, PortCounters};
use crate::emit::{same_umem, Emit, PortIndex};
use crate::normal::MacTable;
use crate::rx::Received;
use crate::tx::TxQueue;
use crate::vlan::PortVlans;
use crate::{channel, queue, sleep, ETH_HLEN};

/// Sets a worker's `running` flag back to false however its loop ends,
/// panics included.
struct RunningGuard<'a>(&'a AtomicBool);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Relaxed);
    }
}

/// One port of a bridge.
pub struct WorkerPort {
    pub port_no: u32,
    pub dev: Box<dyn Port>,
    pub counters: Arc<PortCounters>,
    /// Egress queues (set_queue); frames without a known queue go unshaped.
    pub queues: Vec<queue::Queue>,
}

impl WorkerPort {
    /// Counts a send call's result: `taken` of `total` frames, the first
    /// `taken` of them `bytes` long in all. A frame not taken is dropped;
    /// one taken is sent, unless the port settles later (AF_XDP: then
    /// [`WorkerPort::settle_tx`] counts it, sent or dropped).
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

    /// Counts what the device lost or marked since the last round: frames
    /// dropped by the kernel, cut to the buffers, or with an unfinished
    /// checksum.
    fn take_rx_losses(&mut self) {
        let c = &self.counters;
        let lost = self.dev.take_rx_errors();
        if lost > 0 {
            PortCounters::add(&c.rx_errors, lost);
        }
        let cut = self.dev.take_rx_truncated();
        if cut > 0 {
            PortCounters::add(&c.rx_truncated, cut);
        }
        let partial = self.dev.take_rx_csum_partial();
        if partial > 0 {
            PortCounters::add(&c.rx_csum_partial, partial);
        }
    }

    /// Sends what the round queued for this port in one call, counts it,
    /// and empties the queue. `slices` and `items` are the worker's one
    /// allocation for a send call's frame list, reused round after round.
    fn send_queued(
        &mut self,
        q: &mut TxQueue,
        slices: &mut Vec<&'static [u8]>,
        items: &mut Vec<TxFrame<'static>>,
    ) {
        if q.overflow > 0 {
            PortCounters::add(&self.counters.tx_dropped, q.overflow);
        }
        if q.n == 0 {
            // Untouched this round (still empty from the last reset)
            // unless frames were refused.
            if q.overflow > 0 {
                q.reset();
            }
            return;
        }
        if q.has_chunks() {
            // Chunks of the port's UMEM go by descriptor. The empty list
            // of 'static frames coerces to one of this round's frames and
            // goes back emptied (an in-place collect keeps the buffer).
            let mut list: Vec<TxFrame> = std::mem::take(items);
            list.extend(q.items());
            let r = self.dev.send_zc(&list);
            self.count_sent(r, list.len(), |n| (0..n).map(|k| q.len_of(k) as u64).sum());
            self.settle_tx();
            list.clear();
            *items = list
                .into_iter()
                .map(|_| -> TxFrame<'static> { TxFrame::Bytes(&[]) })
                .collect();
            q.reset();
            return;
        }
        let mut frames: Vec<&[u8]> = std::mem::take(slices);
        frames.extend(q.frames[..q.n].iter().map(|f| f.as_slice()));
        let r = if q.tunnel {
            self.dev.send_tunneled(&frames, &q.meta[..q.n], &q.opts)
        } else if q.patch {
            self.dev.send_patched(&frames, &q.hops[..q.n])
        } else {
            self.dev.send(&frames)
        };
        self.count_sent(r, frames.len(), |n| {
            frames[..n].iter().map(|f| f.len() as u64).sum()
        });
        self.settle_tx();
        frames.clear();
        *slices = frames
            .into_iter()
            .map(|_| -> &'static [u8] { &[] })
            .collect();
        q.reset();
    }

    /// Before the port is closed: every frame it took is settled and
    /// counted (`Port::close_tx`).
    fn finish_tx(&mut self) {
        self.dev.close_tx();
        self.settle_tx();
    }
}

/// One worker of a logical switch: its handles on the bridge's ports, the
/// published pipeline, its counters, the bridge's MAC table, and the
/// state it keeps from one round to the next.
pub struct BridgeWorker {
    /// Which worker of the bridge this is (0-based).
    pub worker: usize,
    pub(crate) ports: Vec<WorkerPort>,
    /// The published snapshot's handle (out of the worker only during a
    /// round, see `round`).
    pipeline: Option<Arc<ArcSwap<Snapshot>>>,
    pub(crate) counters: Arc<BridgeCounters>,
    macs: Arc<MacTable>,
    /// The ports' VLAN settings (NORMAL's), loaded once a round as the
    /// snapshot is.
    vlans: Arc<ArcSwap<PortVlans>>,
    /// The queues to and from the bridge's OpenFlow agent (None: frames
    /// for the controller are counted and dropped).
    channels: Option<Arc<channel::Channels>>,
    /// nullx: no pipeline; port 0's frames go to port 1 and back (2 <-> 3,
    /// ...). The same I/O code with zero switching work: the floor every
    /// other figure is compared with.
    nullx: bool,
    /// Fault injection, for tests only (the daemon sets it from
    /// `SLUICE_FAULT=worker-panic:N`): the worker panics in its N-th
    /// round that carried frames. None in normal operation.
    pub panic_after_batches: Option<u64>,
    /// Port changes from the control thread ([`crate::bridge`]), applied
    /// at the start of a round.
    inbox: Arc<Inbox>,
    /// Where the time between a round's steps is read.
    clock: Clock,
    /// What one round leaves for the next (taken out while a round runs).
    state: Option<Box<State>>,
}

/// PACKET_OUTs worker 0 runs in one round; the rest wait for the next
/// round, so a full packet-out queue cannot make one round unbounded.
pub const PACKET_OUTS_PER_ROUND: usize = 256;

/// What one round of a worker did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Round {
    /// Frames received and PACKET_OUTs run.
    pub work: usize,
    /// Frames wait in a shaped queue for their rate to allow them.
    pub shaped_waiting: bool,
}

impl Round {
    /// How long the worker may sleep on its ports' descriptors after this
    /// round: None after a round with work (go on at once); 1 ms while
    /// shaped frames wait, 10 ms otherwise (a descriptor wakes it sooner).
    pub fn idle_wait_ms(&self) -> Option<i32> {
        match (self.work, self.shaped_waiting) {
            (0, true) => Some(1),
            (0, false) => Some(10),
            _ => None,
        }
    }
}

/// A worker's per-port state derived from its port set: rebuilt when the
/// set changes.
#[derive(Default)]
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
                .map(|p| TxQueue::new(frame, p.dev.is_tunnel(), p.dev.is_patch()))
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

/// The buffers and derived state a worker keeps between rounds.
struct State {
    /// False until the first round has built the plumbing.
    built: bool,
    plumbing: Plumbing,
    /// Receive buffers (copying ports).
    batch: Batch,
    /// Frames lent by a UMEM (AF_XDP ports).
    zc: ZcBatch,
    /// The pipeline's per-worker state (caches, counters slot).
    exec: Worker,
    /// One allocation reused for each send call's frame list.
    slices: Vec<&'static [u8]>,
    items: Vec<TxFrame<'static>>,
    /// Rounds that carried frames (for fault injection).
    busy_rounds: u64,
}

impl BridgeWorker {
    /// Worker `worker` of a bridge: no ports yet (they arrive through
    /// `inbox`), the pipeline published in `pipeline`.
    pub fn new(
        worker: usize,
        pipeline: Arc<ArcSwap<Snapshot>>,
        counters: Arc<BridgeCounters>,
        macs: Arc<MacTable>,
        vlans: Arc<ArcSwap<PortVlans>>,
        channels: Option<Arc<channel::Channels>>,
        inbox: Arc<Inbox>,
    ) -> BridgeWorker {
        BridgeWorker {
            worker,
            ports: Vec::new(),
            pipeline: Some(pipeline),
            counters,
            macs,
            vlans,
            channels,
            nullx: false,
            panic_after_batches: None,
            inbox,
            clock: Clock::System,
            state: Some(Box::new(State {
                built: false,
                plumbing: Plumbing::default(),
                batch: Batch::new(32),
                zc: ZcBatch::default(),
                exec: Worker::new(worker),
                slices: Vec::with_capacity(64),
                items: Vec::with_capacity(64),
                busy_rounds: 0,
            })),
        }
    }

    /// nullx mode (see the field).
    pub fn set_nullx(&mut self, on: bool) {
        self.nullx = on;
    }

    /// Reads the time inside a round from `clock` (a test's hand-set one).
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// Applies the port changes posted to this worker: an added port
    /// replaces one of the same number; a removed port's handle is dropped
    /// (closing its device).
    fn apply_inbox(&mut self) {
        let cmds = self.inbox.take();
        let n = cmds.len();
        for c in cmds {
            match c {
                WorkerCmd::Add(p) => match self.ports.iter().position(|x| x.port_no == p.port_no) {
                    Some(i) => {
                        self.ports[i].finish_tx();
                        self.ports[i] = p
                    }
                    None => self.ports.push(p),
                },
                WorkerCmd::Remove(no) => {
                    for p in self.ports.iter_mut().filter(|x| x.port_no == no) {
                        p.finish_tx();
                    }
                    self.ports.retain(|x| x.port_no != no)
                }
            }
        }
        self.inbox.done(n);
    }

    /// Runs the worker until `stop` is set: rounds at the process clock's
    /// time, and an idle wait on the ports' descriptors after a round
    /// without work. `counters.running` is true while it runs and false
    /// once it returns or unwinds; every round writes the heartbeat.
    pub fn run(mut self, stop: &AtomicBool) {
        let counters = self.counters.clone();
        counters.running.store(true, Relaxed);
        let _running = RunningGuard(&counters.running);
        while !stop.load(Relaxed) {
            // Port changes first, so the round's time is read after them
            // (closing a replaced port's socket takes a while).
            if let Some(mut st) = self.state.take() {
                self.take_port_changes(&mut st);
                self.state = Some(st);
            }
            let round = self.poll_once(crate::clock::now_ns());
            if let (Some(ms), Some(st)) = (round.idle_wait_ms(), self.state.as_mut()) {
                st.plumbing.sleeper.wait(ms);
            }
        }
        self.close();
    }

    /// Settles and counts every frame the ports took (before the worker's
    /// handles are dropped).
    pub fn close(&mut self) {
        for p in &mut self.ports {
            p.finish_tx();
        }
    }

    /// One round at time `now_ns` (rule timeouts, meters, shaping, MAC
    /// ages, the heartbeat): bounded work, no sleep, no wait.
    pub fn poll_once(&mut self, now_ns: u64) -> Round {
        let mut st = self.state.take().expect("a round at a time");
        let round = self.round(&mut st, now_ns);
        self.state = Some(st);
        round
    }

    /// Applies the port changes posted since the last round, and builds
    /// what depends on the port set (before the first round too).
    fn take_port_changes(&mut self, st: &mut State) {
        if self.inbox.pending() || !st.built {
            self.apply_inbox();
            st.plumbing = Plumbing::of(self);
            st.built = true;
        }
    }

    fn round(&mut self, st: &mut State, now: u64) -> Round {
        self.take_port_changes(st);
        // Receive buffers as long as the longest frame a port takes.
        if st.batch.frame_size() != st.plumbing.frame {
            st.batch = Batch::with_frame_size(32, st.plumbing.frame);
        }
        let State {
            plumbing,
            batch,
            zc,
            exec,
            slices,
            items,
            ..
        } = st;
        let Plumbing { tx, index, .. } = plumbing;
        // The handle leaves the worker for the round so that the snapshot
        // can be borrowed through arc-swap's guard (`load`), which writes
        // only this thread's own slot; `load_full` would add to and take
        // from the snapshot's one reference count, a cache line every
        // worker wrote once a round.
        let handle = self.pipeline.take().expect("a round at a time");
        let snap = handle.load();
        let vlans = self.vlans.load();
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
                self.ports[i].dev.recv_zc(zc, batch.capacity())
            } else {
                self.ports[i].dev.recv(batch)
            };
            let n = match r {
                Ok(n) => n,
                Err(_) => {
                    PortCounters::add(&self.ports[i].counters.rx_errors, 1);
                    0
                }
            };
            self.ports[i].take_rx_losses();
            got += n;
            if n > 0 {
                if let Some(slot) = rx_batches.get_mut(i) {
                    *slot = (self.clock.now_ns(), n as u64);
                }
            }
            let mut at = Serve {
                worker: exec,
                snap: &snap,
                vlans: &vlans,
                tx,
                index,
                now,
            };
            woke |= if lends {
                self.serve(i, zc, n, &mut at)
            } else {
                self.serve(i, batch, n, &mut at)
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
                    let outs = match &job.resume {
                        Some(r) => exec.resume(&snap, job.in_port, &r.0, &r.1, &mut job.frame, now),
                        None => {
                            exec.packet_out(&snap, job.in_port, &job.actions, &mut job.frame, now)
                        }
                    };
                    let mut out = Emit {
                        ports: &mut self.ports,
                        tx,
                        index,
                        macs: &self.macs,
                        vlans: &vlans,
                        counters: &self.counters,
                        channels: Some(&ch),
                        snap: &snap,
                        now,
                        umem: None,
                        hops: 0,
                    };
                    for o in &outs {
                        woke |= out.emit(job.in_port, o, &job.frame, &mut None);
                    }
                    got += 1;
                }
            }
        }
        // Flows packets taught, for the agent to add.
        let learned = exec.take_learned();
        if !learned.is_empty() {
            if let Some(ch) = &self.channels {
                for l in learned {
                    if ch.learn.push(l).is_err() {
                        ch.learn_dropped.fetch_add(1, Relaxed);
                    }
                }
                woke = true;
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
            let done = self.clock.now_ns();
            for &(t, n) in rx_batches.iter().take(self.ports.len()).filter(|b| b.1 > 0) {
                let d = done.saturating_sub(t);
                self.counters.delay.record(d, n);
                self.counters.worst.see(d, n, done);
            }
        }
        for (i, q) in tx.iter_mut().enumerate() {
            self.ports[i].send_queued(q, slices, items);
        }
        // The agent's wake-up (a write to an eventfd, which may also let
        // the agent's thread take this CPU) after the frames are handed
        // on, not inside their delay.
        if woke {
            if let Some(ch) = &self.channels {
                ch.packet_in_wake.wake();
            }
        }
        PortCounters::add(&self.counters.batches, 1);
        self.counters
            .skipped_edits
            .store(exec.skipped_edits(), Relaxed);
        self.counters.over_limit.store(exec.over_limit(), Relaxed);
        self.counters
            .tun_opts_refused
            .store(exec.tun_options_refused(), Relaxed);
        let (repeated, dropped) = exec.learn_skipped();
        self.counters.learn_repeated.store(repeated, Relaxed);
        self.counters.learn_dropped.store(dropped, Relaxed);
        let (hits, misses) = exec.cache_stats();
        self.counters.cache_hits.store(hits, Relaxed);
        self.counters
            .cache_misses
            .store(misses + exec.cache_bypassed(), Relaxed);
        if got > 0 {
            st.busy_rounds += 1;
            if self.panic_after_batches == Some(st.busy_rounds) {
                panic!(
                    "injected fault (SLUICE_FAULT=worker-panic:{})",
                    st.busy_rounds
                );
            }
        }
        // Not held past the round: an idle worker must not keep the
        // control plane from reusing the classifiers of an old version
        // (`pipeline::lookup::published`).
        drop(snap);
        drop(vlans);
        self.pipeline = Some(handle);
        if got == 0 {
            for p in &mut self.ports {
                p.dev.before_wait();
                p.settle_tx();
            }
        }
        Round {
            work: got,
            shaped_waiting: waiting,
        }
    }
}

/// What serving one port's frames needs from the worker's round.
struct Serve<'a> {
    worker: &'a mut Worker,
    snap: &'a Snapshot,
    vlans: &'a PortVlans,
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
        if at.snap.ports.no_recv(in_port) {
            PortCounters::add(&c.rx_packets, n as u64);
            let bytes = (0..n).map(|j| rx.bytes(j).len() as u64).sum();
            PortCounters::add(&c.rx_bytes, bytes);
            PortCounters::add(&self.counters.dropped, n as u64);
            return false;
        }
        let mut woke = false;
        for j in 0..n {
            if j % LOOKAHEAD == 0 && !self.nullx {
                // While the exact-match cache misses, what the next
                // packets' lookups read is loaded for all of them at once
                // (`pipeline::lookup::lookahead`).
                let next = j..n.min(j + LOOKAHEAD);
                at.worker
                    .look_ahead(at.snap, next.map(|k| (in_port, rx.bytes(k))));
            }
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
                vlans: at.vlans,
                counters: &self.counters,
                channels: self.channels.as_deref(),
                snap: at.snap,
                now: at.now,
                umem: rx.umem(),
                hops: rx.hops(j),
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
#[cfg(test)]
mod tests {
    use super::*;
    use netdev::memory::{MemoryPort, Wire};
    use pipeline::{Config, Pipeline, PortState};

    /// Worker 0 of a bridge of memory ports `1..=n` running `flow`, without
    /// a controller; and the ports' wires.
    fn bridge_of(n: u32, flow: &str) -> (BridgeWorker, Vec<Wire>, Vec<Arc<PortCounters>>) {
        let mut p = Pipeline::new(Config::default());
        let inbox: Arc<Inbox> = Arc::default();
        let mut wires = Vec::new();
        let mut counters = Vec::new();
        for no in 1..=n {
            let (dev, wire) = MemoryPort::new(&format!("m{no}"));
            p.set_port(PortState::up(no));
            let c: Arc<PortCounters> = Arc::default();
            inbox.post(WorkerCmd::Add(WorkerPort {
                port_no: no,
                dev: Box::new(dev),
                counters: c.clone(),
                queues: Vec::new(),
            }));
            wires.push(wire);
            counters.push(c);
        }
        p.flow_mod(&ofp::text::parse_flow_mod(flow).unwrap(), 0)
            .unwrap();
        let w = BridgeWorker::new(
            0,
            Arc::new(ArcSwap::new(p.snapshot())),
            Arc::default(),
            Arc::default(),
            Arc::default(),
            None,
            inbox,
        );
        (w, wires, counters)
    }

    fn frame(dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
        use packet::wire::build::{ethernet, mac};
        let mut f = ethernet(mac(dst), mac(src), None, 0x88b5, &[]);
        f.resize(60, 0);
        f
    }

    #[test]
    fn runts_are_dropped_and_counted_as_receive_errors() {
        let (mut w, wires, c) = bridge_of(2, "priority=0,actions=output:2");
        for len in [0, 1, 13, 14, 60] {
            wires[0].inject(&vec![0xab; len]);
        }
        let r = w.poll_once(1_000);
        assert_eq!(r.work, 5);
        let lens: Vec<usize> = wires[1].take_sent().iter().map(Vec::len).collect();
        assert_eq!(lens, vec![14, 60]);
        assert_eq!(c[0].rx_errors.load(Relaxed), 3);
        assert_eq!(c[0].rx_packets.load(Relaxed), 2);
        assert_eq!(w.counters.heartbeat_ns.load(Relaxed), 1_000);
    }

    #[test]
    fn standalone_bridge_learns_and_forwards() {
        let (mut w, wires, _) = bridge_of(3, "priority=0,actions=normal");
        let (a, b) = ([2, 0, 0, 0, 0, 0xa], [2, 0, 0, 0, 0, 0xb]);
        wires[0].inject(&frame(b, a));
        w.poll_once(1_000);
        // Unknown destination: flooded to 2 and 3.
        assert_eq!(wires[1].take_sent().len(), 1);
        assert_eq!(wires[2].take_sent().len(), 1);
        // The reply goes only to port 1, where a was learned.
        wires[1].inject(&frame(a, b));
        w.poll_once(2_000);
        assert_eq!(wires[0].take_sent().len(), 1);
        assert!(wires[2].take_sent().is_empty());
    }

    #[test]
    fn an_idle_round_says_how_long_to_wait() {
        let (mut w, wires, _) = bridge_of(2, "priority=0,actions=output:2");
        assert_eq!(w.poll_once(1).idle_wait_ms(), Some(10));
        wires[0].inject(&frame([2; 6], [4; 6]));
        let r = w.poll_once(2);
        assert_eq!(r.idle_wait_ms(), None);
        assert_eq!(w.counters.batches.load(Relaxed), 2);
    }

    #[test]
    fn the_delay_histogram_reads_the_workers_clock() {
        let (mut w, wires, _) = bridge_of(2, "priority=0,actions=output:2");
        let (clock, _t) = Clock::manual(5_000);
        w.set_clock(clock);
        wires[0].inject(&frame([2; 6], [4; 6]));
        w.poll_once(5_000);
        // A clock that stands still: every frame took 0 ns.
        assert_eq!(w.counters.delay.count(), 1);
        assert_eq!(w.counters.delay.max(), 0);
    }

    #[test]
    fn the_worst_batch_is_the_histograms_maximum_with_its_time() {
        let (mut w, wires, _) = bridge_of(2, "priority=0,actions=output:2");
        for _ in 0..2 {
            wires[0].inject(&frame([2; 6], [4; 6]));
        }
        let before = crate::clock::now_ns();
        w.poll_once(before);
        let worst = &w.counters.worst;
        assert!(worst.delay_ns.load(Relaxed) > 0);
        assert_eq!(worst.delay_ns.load(Relaxed), w.counters.delay.max());
        assert_eq!(worst.frames.load(Relaxed), 2);
        let at = worst.at_ns.load(Relaxed);
        assert!(at >= before && at <= crate::clock::now_ns());
    }
}
