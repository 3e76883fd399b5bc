//! The datapath clock: monotonic nanoseconds from one process-wide epoch.
//!
//! Every worker and the control plane read time here, so that rule idle
//! timeouts, MAC aging and queue shaping agree across threads. A worker
//! is handed each round's time ([`crate::BridgeWorker::poll_once`]) and
//! reads the time between a round's steps (for its delay histogram) from
//! a [`Clock`]: the process clock, or a test's hand-set one.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds since the first call in this process.
#[inline]
pub fn now_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// Where a worker reads the time inside a round.
#[derive(Clone, Default)]
pub enum Clock {
    /// [`now_ns`].
    #[default]
    System,
    /// A time a test sets and advances.
    Manual(Arc<AtomicU64>),
}

impl Clock {
    /// A hand-set clock starting at `ns`, and the handle that moves it.
    pub fn manual(ns: u64) -> (Clock, Arc<AtomicU64>) {
        let t = Arc::new(AtomicU64::new(ns));
        (Clock::Manual(t.clone()), t)
    }

    /// The time, in ns.
    #[inline]
    pub fn now_ns(&self) -> u64 {
        match self {
            Clock::System => now_ns(),
            Clock::Manual(t) => t.load(Relaxed),
        }
    }
}
