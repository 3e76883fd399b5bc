//! The scaling section: cost per packet as the rules installed and the
//! active flows grow, through `Worker::process` and its exact-match cache.
//!
//! The configs table replays a few hundred distinct packets, so the cache
//! (8192 entries, direct-mapped) answers nearly every one; users with many
//! flows see it miss. Two axes, exact 5-tuple rules (`flows.rs`) with the
//! table-miss rule after them:
//!
//! * `rules`: 20 to 1 000 000 rules; traffic spread uniformly over
//!   min(rules, 65 536) of them picked at random.
//! * `active_flows`: the 1m rule set (200k with `--quick`), traffic over
//!   K flows, uniform or Zipf (exponent 1.0) over them.
//!
//! The arrival order is a precomputed sequence of max(4 K, 262 144) flow
//! indices (at most 4 Mi); each packet is copied from a pool of K distinct
//! 64-byte frames (`traffic.rs`), so the per-packet cost includes walking
//! the pool and the sequence, which stop fitting in the CPU's caches as K
//! grows. Before the timed rounds 131 072 packets warm the cache up; the
//! rounds continue along the sequence where the last stopped. Reported:
//! the median round with the fastest and slowest, the same without the
//! cache (`no_cache_ns`, the classifier on every packet), and the cache's
//! own hit rate over the timed rounds (`Worker::cache_stats`). `rules`
//! counts the exact rules (the table-miss rule comes on top);
//! `active_flows` the distinct frames the traffic is drawn from.

use pipeline::{Snapshot, Worker};

use crate::flows::{exact_frame, exact_pipeline, IN_PORT};
use crate::measure::{rounds, Plan, Stat};
use crate::traffic::{pick, sequence, Dist, Pool, Rng};

/// Packets per timed call (the clock is read between calls).
const BATCH: usize = 1024;
/// Packets run before timing.
const WARM_UP: usize = 131_072;
/// Longest arrival sequence.
const MAX_SEQ: usize = 4 << 20;
/// Most distinct frames on the rules axis.
const MAX_POOL: usize = 65_536;

/// One point of an axis.
struct Point {
    axis: &'static str,
    rules: u32,
    flows: usize,
    dist: Dist,
    cached: Stat,
    no_ahead: Stat,
    no_cache: Stat,
    hit_rate: f64,
}

/// Frames handed to the worker at once, as the datapath's receive batch
/// (each batch is looked ahead over, `Worker::look_ahead`).
const RX_BATCH: usize = pipeline::lookup::lookahead::LOOKAHEAD;

/// Walks `count` packets of `seq` from `cursor` (wrapping) through `w`,
/// [`RX_BATCH`] at a time: copied into the batch's buffers, looked ahead
/// over, then run one by one.
#[allow(clippy::too_many_arguments)] // the worker, what it runs, and where
fn walk(
    w: &mut Worker,
    snap: &Snapshot,
    pool: &Pool,
    seq: &[u32],
    cursor: &mut usize,
    count: usize,
    bufs: &mut [Vec<u8>],
    now: u64,
) -> u64 {
    let mut acc = 0;
    let mut left = count;
    while left > 0 {
        let n = left.min(bufs.len());
        for buf in &mut bufs[..n] {
            let i = seq[*cursor] as usize;
            *cursor += 1;
            if *cursor == seq.len() {
                *cursor = 0;
            }
            buf.clear();
            buf.extend_from_slice(pool.frame(i));
        }
        w.look_ahead(snap, bufs[..n].iter().map(|b| (IN_PORT, &b[..])));
        for buf in &mut bufs[..n] {
            acc += w.process(snap, IN_PORT, buf, now).len() as u64;
        }
        left -= n;
    }
    acc
}

/// ns per packet of `w` along `seq`, and its cache hit rate while timed.
fn timed(plan: Plan, mut w: Worker, snap: &Snapshot, pool: &Pool, seq: &[u32]) -> (Stat, f64) {
    let mut bufs: Vec<Vec<u8>> = (0..RX_BATCH).map(|_| Vec::with_capacity(128)).collect();
    let mut cursor = 0;
    let mut now = 1;
    walk(
        &mut w,
        snap,
        pool,
        seq,
        &mut cursor,
        WARM_UP,
        &mut bufs,
        now,
    );
    let (h0, m0) = w.cache_stats();
    let stat = rounds(plan, BATCH, || {
        now += 1;
        walk(&mut w, snap, pool, seq, &mut cursor, BATCH, &mut bufs, now)
    });
    let (h1, m1) = w.cache_stats();
    let (h, m) = ((h1 - h0) as f64, (m1 - m0) as f64);
    (stat, h / (h + m))
}

/// Both workers along `seq`.
/// The worker as the datapath runs it, the same without looking ahead,
/// and without the cache (looking ahead).
fn point(plan: Plan, snap: &Snapshot, pool: &Pool, seq: &[u32]) -> (Stat, Stat, Stat, f64) {
    let (cached, hit_rate) = timed(plan, Worker::new(0), snap, pool, seq);
    let mut plain = Worker::new(0);
    plain.set_lookahead(false);
    let (no_ahead, _) = timed(plan, plain, snap, pool, seq);
    let (no_cache, _) = timed(plan, Worker::with_cache(0, 0), snap, pool, seq);
    (cached, no_ahead, no_cache, hit_rate)
}

fn seq_len(k: usize) -> usize {
    (4 * k).clamp(262_144, MAX_SEQ)
}

fn header(json: bool) {
    if !json {
        println!(
            "\n{:<12} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>11} {:>11} {:>9} {:>7}",
            "axis",
            "rules",
            "flows",
            "dist",
            "ns/pkt",
            "min_ns",
            "max_ns",
            "no_ahead_ns",
            "no_cache_ns",
            "cache_hit",
            "Mpps"
        );
    }
}

fn print(p: &Point, json: bool) {
    let mpps = 1e3 / p.cached.median;
    if json {
        println!(
            "{{\"scenario\": \"scaling\", \"axis\": \"{}\", \"rules\": {}, \"active_flows\": {}, \"dist\": \"{}\", \"ns_per_pkt\": {:.1}, \"min_ns\": {:.1}, \"max_ns\": {:.1}, \"no_ahead_ns\": {:.1}, \"no_cache_ns\": {:.1}, \"cache_hit_rate\": {:.3}, \"mpps\": {mpps:.2}}}",
            p.axis, p.rules, p.flows, p.dist.name(), p.cached.median, p.cached.min, p.cached.max, p.no_ahead.median, p.no_cache.median, p.hit_rate
        );
    } else {
        println!(
            "{:<12} {:>8} {:>8} {:>8} {:>8.1} {:>8.1} {:>8.1} {:>11.1} {:>11.1} {:>9.3} {:>7.2}",
            p.axis,
            p.rules,
            p.flows,
            p.dist.name(),
            p.cached.median,
            p.cached.min,
            p.cached.max,
            p.no_ahead.median,
            p.no_cache.median,
            p.hit_rate,
            mpps
        );
    }
}

/// Both axes, a table or JSON lines; with `only`, the active-flows axis
/// alone at those K.
pub fn run(plan: Plan, quick: bool, json: bool, only: Option<&[usize]>) {
    let mut rng = Rng::new(0x5eed_cafe);
    header(json);
    let rule_counts: &[u32] = if quick {
        &[20, 2_000, 200_000]
    } else {
        &[20, 200, 2_000, 20_000, 200_000, 1_000_000]
    };
    for &n in rule_counts.iter().filter(|_| only.is_none()) {
        let mut p = exact_pipeline(n);
        let snap = p.snapshot();
        let k = (n as usize).min(MAX_POOL);
        let pool = Pool::new(pick(n, k, &mut rng).into_iter().map(exact_frame));
        let seq = sequence(Dist::Uniform, k, seq_len(k), &mut rng);
        let (cached, no_ahead, no_cache, hit_rate) = point(plan, &snap, &pool, &seq);
        print(
            &Point {
                axis: "rules",
                rules: n,
                flows: k,
                dist: Dist::Uniform,
                cached,
                no_ahead,
                no_cache,
                hit_rate,
            },
            json,
        );
    }

    let (n, ks): (u32, &[usize]) = if quick {
        (200_000, &[1, 100, 10_000, 200_000])
    } else {
        (1_000_000, &[1, 10, 100, 1_000, 10_000, 100_000, 1_000_000])
    };
    let ks = only.unwrap_or(ks);
    let mut p = exact_pipeline(n);
    let snap = p.snapshot();
    // The active flows are the first K of the rules in a random order.
    let order = pick(n, n as usize, &mut rng);
    for &k in ks.iter().filter(|&&k| k >= 1 && k <= n as usize) {
        let pool = Pool::new(order[..k].iter().map(|&i| exact_frame(i)));
        for dist in [Dist::Uniform, Dist::Zipf] {
            let seq = sequence(dist, pool.len(), seq_len(k), &mut rng);
            let (cached, no_ahead, no_cache, hit_rate) = point(plan, &snap, &pool, &seq);
            print(
                &Point {
                    axis: "active_flows",
                    rules: n,
                    flows: k,
                    dist,
                    cached,
                    no_ahead,
                    no_cache,
                    hit_rate,
                },
                json,
            );
        }
    }
}
