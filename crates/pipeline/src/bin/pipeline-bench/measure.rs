//! Timing: rounds of a fixed wall-clock length, and what to report of them.
//!
//! A figure is the median of the rounds' ns per item (the machine is shared
//! and noisy: the median ignores a round that was interrupted), with the
//! fastest and slowest round beside it so the spread is visible. Deltas
//! (what one stage adds) are measured in alternating rounds, base then
//! variant, so both see the same noise, and reported as the median of the
//! per-pair differences.

use std::time::{Duration, Instant};

/// How many rounds, and how long each.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub rounds: usize,
    pub round: Duration,
}

impl Plan {
    /// Today's plan: 5 rounds of at least 200 ms.
    pub const FULL: Plan = Plan {
        rounds: 5,
        round: Duration::from_millis(200),
    };
    /// `--quick`: 3 rounds of at least 50 ms.
    pub const QUICK: Plan = Plan {
        rounds: 3,
        round: Duration::from_millis(50),
    };
}

/// The median, fastest and slowest of some rounds (ns per item).
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    pub fn of(mut v: Vec<f64>) -> Stat {
        assert!(!v.is_empty(), "no rounds");
        v.sort_by(|a, b| a.total_cmp(b));
        Stat {
            median: v[v.len() / 2],
            min: v[0],
            max: v[v.len() - 1],
        }
    }
}

/// One round: `f` (which handles `n` items per call) called until the
/// round's time is up; ns per item.
fn round(len: Duration, n: usize, f: &mut impl FnMut() -> u64, sink: &mut u64) -> f64 {
    let start = Instant::now();
    let mut iters = 0u64;
    while start.elapsed() < len {
        *sink = sink.wrapping_add(f());
        iters += 1;
    }
    start.elapsed().as_nanos() as f64 / (iters as f64 * n as f64)
}

/// ns per item of `f` (handling `n` items per call) in each round.
pub fn rounds(plan: Plan, n: usize, mut f: impl FnMut() -> u64) -> Stat {
    let mut sink = 0u64;
    let v = (0..plan.rounds)
        .map(|_| round(plan.round, n, &mut f, &mut sink))
        .collect();
    std::hint::black_box(sink);
    Stat::of(v)
}

/// Median ns per item of `f` run over `n` items (the configs table).
pub fn measure(plan: Plan, n: usize, f: impl FnMut() -> u64) -> f64 {
    rounds(plan, n, f).median
}

/// `variant` minus `base` in ns per item, in alternating rounds (one
/// warm-up round of each first, not counted). `f(false)` runs the base,
/// `f(true)` the variant, `n` items per call: one closure, so both sides
/// can share their buffers (a different frame address alone can move a
/// round by a few ns).
pub fn delta(plan: Plan, n: usize, mut f: impl FnMut(bool) -> u64) -> Stat {
    let mut sink = 0u64;
    let warm = plan.round / 4;
    round(warm, n, &mut || f(false), &mut sink);
    round(warm, n, &mut || f(true), &mut sink);
    let v = (0..plan.rounds)
        .map(|_| {
            let b = round(plan.round, n, &mut || f(false), &mut sink);
            round(plan.round, n, &mut || f(true), &mut sink) - b
        })
        .collect();
    std::hint::black_box(sink);
    Stat::of(v)
}
