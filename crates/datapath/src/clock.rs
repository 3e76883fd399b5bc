//! The datapath clock: monotonic nanoseconds from one process-wide epoch.
//!
//! Every worker and the control plane read time here, so that rule idle
//! timeouts, MAC aging and queue shaping agree across threads.

use std::sync::OnceLock;
use std::time::Instant;

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Nanoseconds since the first call in this process.
#[inline]
pub fn now_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}
