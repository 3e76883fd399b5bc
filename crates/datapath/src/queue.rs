//! Per-port egress queues: `set_queue` + `output` put a frame in a queue
//! whose maximum rate is enforced by shaping in the worker.
//!
//! Shaping, not policing: frames wait in a bounded FIFO and leave when the
//! queue's token bucket allows (a [`pipeline::bucket::AtomicGcra`]: one
//! "theoretical departure time" in ns, shared by the queue's siblings on
//! every worker; a frame costs its bits at the maximum rate, and up to
//! ~2 ms of the rate may leave back to back); only a full FIFO drops
//! (counted as tx_errors, as OpenFlow's QUEUE stats report). The minimum
//! rate is recorded for QUEUE_GET_CONFIG but not guaranteed: with one
//! worker serving each port in turn there is nothing to take bandwidth
//! from.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use pipeline::bucket::AtomicGcra;

/// Spare frame buffers a queue keeps once it has drained.
const SPARE_KEEP: usize = 64;

/// Counters of one queue (OpenFlow `ofp_queue_stats`).
#[derive(Debug, Default)]
pub struct QueueCounters {
    pub tx_packets: AtomicU64,
    pub tx_bytes: AtomicU64,
    pub tx_errors: AtomicU64,
}

/// One shaped queue.
pub struct Queue {
    pub queue_id: u32,
    /// Maximum rate, bits per second (0: unlimited).
    pub max_rate_bps: u64,
    /// Minimum rate, bits per second (recorded only).
    pub min_rate_bps: u64,
    pub counters: Arc<QueueCounters>,
    fifo: VecDeque<Vec<u8>>,
    spare: Vec<Vec<u8>>,
    capacity: usize,
    /// When the queue may send next (its token bucket), ns on the
    /// datapath clock; shared by the queue's instances on every worker of
    /// the bridge, so the rate holds for the port as a whole.
    bucket: Arc<AtomicGcra>,
    /// Burst tolerance, ns.
    tolerance_ns: u64,
}

impl Queue {
    /// A queue with `max_rate_bps` (0 = unlimited) and room for `capacity` frames.
    pub fn new(queue_id: u32, max_rate_bps: u64, min_rate_bps: u64, capacity: usize) -> Queue {
        Queue {
            queue_id,
            max_rate_bps,
            min_rate_bps,
            counters: Arc::default(),
            fifo: VecDeque::with_capacity(capacity),
            spare: Vec::new(),
            capacity,
            bucket: Arc::default(),
            // Up to ~2 ms of line rate may leave back to back.
            tolerance_ns: 2_000_000,
        }
    }

    /// The same queue for another worker: its own FIFO, the same rate
    /// budget and counters.
    pub fn sibling(&self) -> Queue {
        Queue {
            queue_id: self.queue_id,
            max_rate_bps: self.max_rate_bps,
            min_rate_bps: self.min_rate_bps,
            counters: self.counters.clone(),
            fifo: VecDeque::with_capacity(self.capacity),
            spare: Vec::new(),
            capacity: self.capacity,
            bucket: self.bucket.clone(),
            tolerance_ns: self.tolerance_ns,
        }
    }

    /// Queues a copy of `frame`; false (and counted) if the queue is full.
    pub fn enqueue(&mut self, frame: &[u8]) -> bool {
        if self.fifo.len() >= self.capacity {
            self.counters.tx_errors.fetch_add(1, Relaxed);
            return false;
        }
        let mut b = self.spare.pop().unwrap_or_default();
        b.clear();
        b.extend_from_slice(frame);
        self.fifo.push_back(b);
        true
    }

    /// Whether frames are waiting.
    pub fn is_empty(&self) -> bool {
        self.fifo.is_empty()
    }

    /// Hands every frame the rate allows at `now_ns` to `out`.
    pub fn release(&mut self, now_ns: u64, mut out: impl FnMut(&[u8])) {
        // Unlimited: every frame conforms and costs nothing.
        let tolerance = if self.max_rate_bps > 0 {
            self.tolerance_ns
        } else {
            u64::MAX
        };
        while let Some(f) = self.fifo.front() {
            // The frame's bits at the rate, in ns (a frame's bits times
            // 10^9 stays far below u64::MAX).
            let bits = f.len() as u64 * 8;
            let cost = (bits * 1_000_000_000)
                .checked_div(self.max_rate_bps)
                .unwrap_or(0);
            if !self.bucket.take(now_ns, cost, tolerance) {
                break;
            }
            out(f);
            self.counters.tx_packets.fetch_add(1, Relaxed);
            self.counters.tx_bytes.fetch_add(f.len() as u64, Relaxed);
            if let Some(b) = self.fifo.pop_front() {
                self.spare.push(b);
            }
        }
        // After a burst, keep a few buffers for the next frames and give
        // the rest back.
        if self.fifo.is_empty() && self.spare.len() > SPARE_KEEP {
            self.spare.truncate(SPARE_KEEP);
            self.spare.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_to_the_rate_over_time() {
        // 8 Mbit/s = 1 000 000 bytes/s; 1000-byte frames: 1000 frames/s.
        let mut q = Queue::new(1, 8_000_000, 0, 10_000);
        let frame = vec![0u8; 1000];
        for _ in 0..5000 {
            assert!(q.enqueue(&frame));
        }
        let mut sent = 0u64;
        // Release every 100 us for 2 s of fake time.
        for t in (0..2_000_000_000u64).step_by(100_000) {
            q.release(t, |_| sent += 1);
        }
        // 2 s at 1000 frames/s, plus the 2 ms burst tolerance.
        assert!((2000..=2004).contains(&sent), "sent {sent}");
        assert_eq!(q.counters.tx_packets.load(Relaxed), sent);
    }

    #[test]
    fn siblings_share_the_rate() {
        let mut a = Queue::new(1, 8_000_000, 0, 10_000);
        let mut b = a.sibling();
        let frame = vec![0u8; 1000];
        for _ in 0..3000 {
            assert!(a.enqueue(&frame) && b.enqueue(&frame));
        }
        let mut sent = 0u64;
        for t in (0..2_000_000_000u64).step_by(100_000) {
            a.release(t, |_| sent += 1);
            b.release(t, |_| sent += 1);
        }
        assert!((2000..=2004).contains(&sent), "sent {sent}");
        assert_eq!(b.counters.tx_packets.load(Relaxed), sent);
    }

    #[test]
    fn a_drained_queue_gives_back_its_burst_buffers() {
        let mut q = Queue::new(1, 0, 0, 1024);
        for _ in 0..1024 {
            assert!(q.enqueue(&[0; 1500]));
        }
        let mut sent = 0;
        q.release(0, |_| sent += 1);
        assert_eq!(sent, 1024);
        assert!(q.spare.len() <= SPARE_KEEP);
        assert!(q.spare.capacity() <= SPARE_KEEP);
    }

    #[test]
    fn a_full_queue_drops_and_counts() {
        let mut q = Queue::new(1, 1000, 0, 2);
        assert!(q.enqueue(&[0; 10]) && q.enqueue(&[0; 10]));
        assert!(!q.enqueue(&[0; 10]));
        assert_eq!(q.counters.tx_errors.load(Relaxed), 1);
    }
}
