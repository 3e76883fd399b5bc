//! `--threads N`: the packet path on N cores at once, against one.
//!
//! N threads, each with its own `Worker` (its own exact-match cache and
//! counter slot, as the datapath's workers), run packets through one
//! published snapshot of the `1m` exact rule set (200 000 with `--quick`),
//! each along its own arrival sequence over the same K active flows
//! (uniform; the frames are shared, read-only). Rounds alternate one
//! thread and N threads, so both see the same machine; a round lasts the
//! plan's round length for every thread. Reported per K: packets per
//! second of one thread and of N, the ratio, and the scaling efficiency
//! (N threads' rate over N times one thread's), medians over the rounds.
//!
//! What it shows: what the threads share on the packet path. Every write
//! a packet makes goes to the worker's own memory (its cache, its
//! cache-line-padded counter slot of each rule and table), so the
//! efficiency stays near 1 unless something shared is written: K = 1
//! sends every thread to the same rule and the same table counters (the
//! case that would expose a counter shared between workers), K = 1M
//! spreads them over the table (the case bound by memory). On a machine
//! with fewer idle cores than N, the figure measures the machine instead.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;

use pipeline::{Snapshot, Worker};

use crate::flows::{exact_frame, exact_pipeline_for, IN_PORT};
use crate::measure::{Plan, Stat};
use crate::traffic::{pick, sequence, Dist, Pool, Rng};

/// Packets a thread runs between two looks at the clock.
const CHUNK: usize = 1024;
/// Frames handed to the worker at once (the receive batch).
const RX_BATCH: usize = pipeline::lookup::lookahead::LOOKAHEAD;

/// One thread's worker and where it is along its sequence.
struct Lane {
    w: Worker,
    bufs: Vec<Vec<u8>>,
    cursor: usize,
}

/// Packets of `seq` through the lane's worker until `stop`; how many.
fn run_one(lane: &mut Lane, snap: &Snapshot, pool: &Pool, seq: &[u32], stop: &AtomicBool) -> u64 {
    let Lane { w, bufs, cursor } = lane;
    let mut done = 0u64;
    let mut sink = 0u64;
    while !stop.load(Relaxed) {
        for _ in 0..CHUNK / RX_BATCH {
            for buf in bufs.iter_mut() {
                buf.clear();
                buf.extend_from_slice(pool.frame(seq[*cursor] as usize));
                *cursor = (*cursor + 1) % seq.len();
            }
            w.look_ahead(snap, bufs.iter().map(|b| (IN_PORT, &b[..])));
            for buf in bufs.iter_mut() {
                sink += w.process(snap, IN_PORT, buf, 1).len() as u64;
            }
        }
        done += CHUNK as u64;
    }
    std::hint::black_box(sink);
    done
}

/// Packets per second of `n` threads for `plan.round` (after a warm-up
/// of a quarter round each, not counted).
fn round(plan: Plan, n: usize, snap: &Snapshot, pool: &Pool, seqs: &[Vec<u32>]) -> f64 {
    let stop = AtomicBool::new(false);
    let warm = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|t| {
                let (stop, warm, seq) = (&stop, &warm, &seqs[t]);
                s.spawn(move || {
                    let mut lane = Lane {
                        w: Worker::new(t),
                        bufs: (0..RX_BATCH).map(|_| Vec::with_capacity(128)).collect(),
                        cursor: 0,
                    };
                    run_one(&mut lane, snap, pool, seq, warm);
                    let start = Instant::now();
                    let done = run_one(&mut lane, snap, pool, seq, stop);
                    done as f64 / start.elapsed().as_secs_f64()
                })
            })
            .collect();
        std::thread::sleep(plan.round / 4);
        warm.store(true, Relaxed);
        std::thread::sleep(plan.round);
        stop.store(true, Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .sum()
    })
}

/// The section: for each K, one thread against `n`.
pub fn run(plan: Plan, quick: bool, json: bool, n: usize, only: Option<&[usize]>) {
    let rules: u32 = if quick { 200_000 } else { 1_000_000 };
    let default: &[usize] = if quick {
        &[1, 1_000, 200_000]
    } else {
        &[1, 1_000, 100_000, 1_000_000]
    };
    let ks = only.unwrap_or(default);
    let mut p = exact_pipeline_for(rules, n);
    let snap = p.snapshot();
    let mut rng = Rng::new(0x7ead_5eed);
    let order = pick(rules, rules as usize, &mut rng);
    if !json {
        println!(
            "\n{:<8} {:>8} {:>8} {:>12} {:>12} {:>8} {:>10}",
            "threads", "rules", "flows", "1_thread_pps", "n_thread_pps", "ratio", "efficiency"
        );
    }
    for &k in ks.iter().filter(|&&k| k >= 1 && k <= rules as usize) {
        let pool = Pool::new(order[..k].iter().map(|&i| exact_frame(i)));
        let len = (4 * k).clamp(262_144, 4 << 20);
        let seqs: Vec<Vec<u32>> = (0..n)
            .map(|_| sequence(Dist::Uniform, k, len, &mut rng))
            .collect();
        let (mut one, mut many) = (Vec::new(), Vec::new());
        for _ in 0..plan.rounds {
            one.push(round(plan, 1, &snap, &pool, &seqs));
            many.push(round(plan, n, &snap, &pool, &seqs));
        }
        let ratios: Vec<f64> = one.iter().zip(&many).map(|(a, b)| b / a).collect();
        let (one, many, ratio) = (Stat::of(one), Stat::of(many), Stat::of(ratios));
        let eff = ratio.median / n as f64;
        if json {
            println!(
                "{{\"scenario\": \"threads\", \"threads\": {n}, \"rules\": {rules}, \"active_flows\": {k}, \"one_thread_pps\": {:.0}, \"n_thread_pps\": {:.0}, \"ratio\": {:.3}, \"ratio_min\": {:.3}, \"ratio_max\": {:.3}, \"efficiency\": {eff:.3}}}",
                one.median, many.median, ratio.median, ratio.min, ratio.max
            );
        } else {
            println!(
                "{:<8} {:>8} {:>8} {:>12.0} {:>12.0} {:>8.3} {:>10.3}",
                n, rules, k, one.median, many.median, ratio.median, eff
            );
        }
    }
}
