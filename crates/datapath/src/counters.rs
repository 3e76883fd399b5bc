//! The datapath's counters: per port ([`PortCounters`]) and per bridge
//! ([`BridgeCounters`]), one set per worker.
//!
//! Contract: a set is written by one thread alone (its worker, or the XDP
//! fast path's fold) with plain relaxed stores, never a read-modify-write
//! on the packet path; anyone may read it at any time, and a reader sums
//! the sets of every writer ([`PortCounters::sum`], [`BridgeCounters::sum`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use crate::histogram;

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
    pub(crate) fn add(c: &AtomicU64, v: u64) {
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
            t.worst.absorb(&c.worst);
            for (a, b) in [
                (&t.to_controller, &c.to_controller),
                (&t.dropped, &c.dropped),
                (&t.batches, &c.batches),
                (&t.skipped_edits, &c.skipped_edits),
                (&t.over_limit, &c.over_limit),
                (&t.tun_opts_refused, &c.tun_opts_refused),
                (&t.learn_repeated, &c.learn_repeated),
                (&t.learn_dropped, &c.learn_dropped),
                (&t.cache_hits, &c.cache_hits),
                (&t.cache_misses, &c.cache_misses),
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
    /// The batch that waited longest (the delay histogram's maximum): when
    /// it was handed on and how many frames it held, to find what it
    /// waited for in a trace of the same time.
    pub worst: WorstBatch,
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
    /// Frames from a Geneve port dropped for their options: a critical
    /// option the option table does not map, a mapped one of another
    /// length, options that run past their end (`pipeline::tlv`).
    pub tun_opts_refused: AtomicU64,
    /// Flows packets taught (`learn`) that the worker did not hand to the
    /// agent because it had handed the same one over within the last
    /// second (`pipeline::exec::RELEARN_NS`).
    pub learn_repeated: AtomicU64,
    /// Flows packets taught that the worker dropped because more than
    /// `pipeline::exec::LEARN_PENDING_MAX` waited in one round (the
    /// queue to the agent being full is `Channels::learn_dropped`).
    pub learn_dropped: AtomicU64,
    /// Table lookups the worker's exact-match cache answered
    /// (`pipeline::lookup::emc`), copied from the worker's own count once
    /// a round, as the other counters the worker's `Worker` keeps.
    pub cache_hits: AtomicU64,
    /// Table lookups the exact-match cache missed or skipped while
    /// bypassed, so the classifier answered (copied once a round; with
    /// the cache disabled, both stay 0).
    pub cache_misses: AtomicU64,
    /// When the worker's current loop round started ([`crate::clock`] ns; 0
    /// before the first). A round takes at most the 10 ms of an idle
    /// wait plus one batch, so an old heartbeat means a stalled
    /// worker (not summed: one worker's health).
    pub heartbeat_ns: AtomicU64,
    /// True while the worker's loop runs; false once it has returned or
    /// unwound (not summed).
    pub running: AtomicBool,
}

/// The slowest batch a worker handed on: its delay, its frames and when
/// (single writer, written only when a batch is slower than every one
/// before it; a reader may see the fields of two such batches mixed).
#[derive(Default)]
pub struct WorstBatch {
    /// Its delay, ns.
    pub delay_ns: AtomicU64,
    /// Its frames.
    pub frames: AtomicU64,
    /// When it was handed to the kernel for transmission
    /// ([`crate::clock`] ns).
    pub at_ns: AtomicU64,
}

impl WorstBatch {
    /// Records a batch of `frames` frames handed on at `at_ns` after
    /// `delay_ns`, if it is the slowest so far (single writer).
    #[inline]
    pub fn see(&self, delay_ns: u64, frames: u64, at_ns: u64) {
        if delay_ns > self.delay_ns.load(Relaxed) {
            self.delay_ns.store(delay_ns, Relaxed);
            self.frames.store(frames, Relaxed);
            self.at_ns.store(at_ns, Relaxed);
        }
    }

    /// Takes `other`'s batch if it was slower (to sum workers' records).
    pub fn absorb(&self, other: &WorstBatch) {
        let d = other.delay_ns.load(Relaxed);
        if d > self.delay_ns.load(Relaxed) {
            self.delay_ns.store(d, Relaxed);
            self.frames.store(other.frames.load(Relaxed), Relaxed);
            self.at_ns.store(other.at_ns.load(Relaxed), Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worst_batch_is_the_slowest_of_every_worker() {
        let (a, b) = (
            Arc::new(BridgeCounters::default()),
            Arc::new(BridgeCounters::default()),
        );
        a.worst.see(5_000, 3, 100);
        a.worst.see(4_000, 1, 200); // faster: not kept
        b.worst.see(9_000, 2, 150);
        assert_eq!(a.worst.delay_ns.load(Relaxed), 5_000);
        assert_eq!(a.worst.at_ns.load(Relaxed), 100);
        let t = BridgeCounters::sum(&[a, b]);
        assert_eq!(t.worst.delay_ns.load(Relaxed), 9_000);
        assert_eq!(t.worst.frames.load(Relaxed), 2);
        assert_eq!(t.worst.at_ns.load(Relaxed), 150);
    }
}
