//! The learn section (issue 30's point 7): a flood of distinct packets
//! through Open vSwitch's MAC-learning flow, the flows they teach handed
//! to the control plane in the batches the daemon takes, and what the
//! control plane pays for each batch.
//!
//! The flows (table 1's miss sends to port 2):
//!
//! ```text
//! table=0,actions=learn(table=1,hard_timeout=300,NXM_OF_VLAN_TCI[0..11],
//!     NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]),resubmit(,1)
//! table=1,priority=0,actions=output:2
//! ```
//!
//! The model, one thread, each side timed apart:
//!
//! * the worker runs the packets in batches of 32 (the datapath's receive
//!   batch) from port 1, each with a source MAC and IPv4 source of its
//!   own, at a simulated 1 000 000 packets/s (the packets' time, which the
//!   rate limit and the worker's memory of recent flows see, advances
//!   1 us a packet); after each batch it hands what it taught
//!   (`Worker::take_learned`) to a queue;
//! * whenever the queue holds 4 096 flows (what the daemon takes in one
//!   round of its control loop, `sluice/src/openflow/mod.rs`), a control
//!   round: `Pipeline::learn` of each, then `Pipeline::snapshot` (the
//!   publication that follows), timed together; the worker runs the new
//!   snapshot from its next batch. What is left at the end is a last,
//!   shorter round.
//!
//! So every round is a full batch, the worst the daemon can see, and the
//! control side keeps up by construction: the queue never overflows here
//! (in the daemon, what does not fit is dropped and counted; the e2e test
//! `test_learn_storm` floods a real switch).
//!
//! Rows: `no-learn` (the same packets through `resubmit(,1)` alone: the
//! worker's cost without learning), `default` (`Config::default()`:
//! 10 000 learned flows/s per table in bursts of 10 000, at most 1 000 000
//! learned flows per table), `rate-off` (`learn_rate` 0: the cap alone
//! bounds what is learned). The flood is 1 200 000 packets, so that the
//! rate-off row passes the cap; `--quick`: 100 000 packets and a cap of
//! 50 000 for the rate-off row. Each row runs in a child process of its
//! own (this binary with a hidden flag), so that its memory figure (RSS
//! growth from before the pipeline is built to the end) is its own.

use std::process::Command;
use std::time::Instant;

use ofp::text::parse_flow_mod;
use pipeline::exec::Learned;
use pipeline::{Config, Pipeline, PortState, Worker};

use crate::ingest::rss_bytes;
use crate::rules::frame;

/// The hidden flag that makes this binary run one row.
pub const CHILD_FLAG: &str = "--learn-row";

/// The flows of the MAC-learning rows.
const LEARN_FLOWS: [&str; 2] = [
    "table=0,actions=learn(table=1,hard_timeout=300,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]),resubmit(,1)",
    "table=1,priority=0,actions=output:2",
];

/// The same without the learn action.
const PLAIN_FLOWS: [&str; 2] = [
    "table=0,actions=resubmit(,1)",
    "table=1,priority=0,actions=output:2",
];

/// Learned flows the daemon takes from the queue in one control round.
const ROUND: usize = 4096;
/// The datapath's receive batch.
const BATCH: usize = 32;
/// Simulated time between two packets: 1 000 000 packets/s.
const PACKET_NS: u64 = 1_000;

const ROWS: [&str; 3] = ["no-learn", "default", "rate-off"];

/// Packets in the flood.
fn packets(quick: bool) -> usize {
    if quick {
        100_000
    } else {
        1_200_000
    }
}

fn config(row: &str, quick: bool) -> Config {
    let d = Config {
        n_tables: 2,
        ..Config::default()
    };
    match row {
        "rate-off" => Config {
            learn_rate: 0,
            learned_max: if quick { 50_000 } else { d.learned_max },
            ..d
        },
        _ => d,
    }
}

/// Writes packet `i`'s source MAC and IPv4 source into `f`.
fn stamp(f: &mut [u8], i: usize) {
    let mac = 0x0200_0000_0000u64 | (i as u64 + 1);
    f[6..12].copy_from_slice(&mac.to_be_bytes()[2..]);
    f[26..30].copy_from_slice(&(0x0a00_0000u32 + i as u32 + 1).to_be_bytes());
}

/// What one row measured.
struct Row {
    packets: usize,
    worker_ns: f64,
    handed_over: u64,
    repeated: u64,
    dropped_at_worker: u64,
    /// Each round: ms, and flows it added.
    rounds: Vec<(f64, u64)>,
    learned: usize,
    stats: pipeline::control::learn::LearnStats,
    classifier_bytes: usize,
    learn_bytes: usize,
    worker_learn_bytes: usize,
    rss_growth: u64,
}

/// Runs one row (in the child) and prints it.
pub fn child(row: &str, quick: bool, json: bool) {
    let rss0 = rss_bytes();
    let learning = row != "no-learn";
    let mut p = Pipeline::new(config(row, quick));
    for port in 1..=4 {
        p.set_port(PortState::up(port));
    }
    let flows = if learning { LEARN_FLOWS } else { PLAIN_FLOWS };
    for f in flows {
        let fm = parse_flow_mod(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        p.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    let mut snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = frame(None, 0x02ff_ffff_fffe, 0, 0x0aff_fffe, 6, 1000, 80);
    let n = packets(quick);
    let mut queue: Vec<Learned> = Vec::with_capacity(ROUND + BATCH);
    let mut rounds = Vec::new();
    let mut handed_over = 0u64;
    let mut worker_ns = 0u128;
    let mut round = |p: &mut Pipeline, queue: &mut Vec<Learned>, now: u64| {
        let take = queue.len().min(ROUND);
        let added = p.learn_stats().added;
        let t = Instant::now();
        for l in queue.drain(..take) {
            p.learn(&l, now);
        }
        let s = p.snapshot();
        let ms = t.elapsed().as_secs_f64() * 1e3;
        rounds.push((ms, p.learn_stats().added - added));
        s
    };
    let mut i = 0;
    while i < n {
        let t = Instant::now();
        let end = (i + BATCH).min(n);
        let mut outs = 0;
        for k in i..end {
            stamp(&mut f, k);
            outs += w.process(&snap, 1, &mut f, k as u64 * PACKET_NS).len();
        }
        let learned = w.take_learned();
        worker_ns += t.elapsed().as_nanos();
        assert_eq!(outs, end - i, "{row}: one output per packet");
        handed_over += learned.len() as u64;
        queue.extend(learned);
        i = end;
        if queue.len() >= ROUND {
            snap = round(&mut p, &mut queue, i as u64 * PACKET_NS);
        }
    }
    while !queue.is_empty() {
        snap = round(&mut p, &mut queue, n as u64 * PACKET_NS);
    }
    let (repeated, dropped_at_worker) = w.learn_skipped();
    let r = Row {
        packets: n,
        worker_ns: worker_ns as f64 / n as f64,
        handed_over,
        repeated,
        dropped_at_worker,
        rounds,
        learned: p.tables()[1].len() - 1,
        stats: p.learn_stats(),
        classifier_bytes: p.classifier_bytes(),
        learn_bytes: p.learn_bytes(),
        worker_learn_bytes: w.learn_bytes(),
        rss_growth: rss_bytes().saturating_sub(rss0),
    };
    std::hint::black_box(&snap);
    print_row(row, &config(row, quick), &r, json);
}

/// The p-th quantile (0..=1) of sorted `v`, nearest rank.
fn quantile(v: &[f64], q: f64) -> f64 {
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// Median, p99 and max of some rounds' ms (NaN for none), and how many.
fn spread(rounds: impl Iterator<Item = f64>) -> (f64, f64, f64, usize) {
    let mut v: Vec<f64> = rounds.collect();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN, 0);
    }
    (
        quantile(&v, 0.5),
        quantile(&v, 0.99),
        v[v.len() - 1],
        v.len(),
    )
}

fn print_row(row: &str, c: &Config, r: &Row, json: bool) {
    let (med, p99, max, n) = spread(r.rounds.iter().map(|x| x.0));
    // Rounds whose every flow was refused (the rate, the cap).
    let (rmed, _, rmax, rn) = spread(r.rounds.iter().filter(|x| x.1 == 0).map(|x| x.0));
    let s = &r.stats;
    let rate = if c.learn_rate == 0 {
        "off".to_string()
    } else {
        format!("{}/s burst {}", c.learn_rate, c.learn_burst)
    };
    if json {
        let num = |x: f64| {
            if x.is_finite() {
                format!("{x:.3}")
            } else {
                "null".into()
            }
        };
        println!(
            "{{\"scenario\": \"learn\", \"config\": \"learn-{row}\", \"packets\": {}, \"learn_rate\": {}, \"learn_burst\": {}, \"learned_cap\": {}, \"worker_ns_per_pkt\": {:.1}, \"handed_over\": {}, \"repeated_at_worker\": {}, \"dropped_at_worker\": {}, \"rounds\": {}, \"round_ms_median\": {}, \"round_ms_p99\": {}, \"round_ms_max\": {}, \"refusing_rounds\": {}, \"refusing_round_ms_median\": {}, \"refusing_round_ms_max\": {}, \"learned_installed\": {}, \"added\": {}, \"unchanged\": {}, \"over_limit\": {}, \"over_rate\": {}, \"over_table\": {}, \"refused\": {}, \"classifier_bytes\": {}, \"learn_bytes\": {}, \"worker_learn_bytes\": {}, \"rss_growth_bytes\": {}}}",
            r.packets, c.learn_rate, c.learn_burst, c.learned_max, r.worker_ns, r.handed_over,
            r.repeated, r.dropped_at_worker, n, num(med), num(p99), num(max), rn, num(rmed), num(rmax), r.learned,
            s.added, s.unchanged, s.over_limit, s.over_rate, s.over_table, s.refused,
            r.classifier_bytes, r.learn_bytes, r.worker_learn_bytes, r.rss_growth
        );
        return;
    }
    println!(
        "\nlearn {row}: {} distinct packets, rate {rate}, cap {} learned flows per table",
        r.packets, c.learned_max
    );
    println!(
        "  worker: {:.1} ns/packet; handed over {}, repeated (not handed over) {}, dropped (pending full) {}",
        r.worker_ns, r.handed_over, r.repeated, r.dropped_at_worker
    );
    if n > 0 {
        let per = med * 1e6 / ROUND as f64;
        println!(
            "  control: {n} rounds of up to {ROUND} flows, learn + publish per round: median {med:.2} ms ({per:.0} ns/flow), p99 {p99:.2} ms, max {max:.2} ms"
        );
        if rn > 0 {
            println!(
                "           of which {rn} added nothing (every flow refused): median {rmed:.2} ms, max {rmax:.2} ms"
            );
        }
        println!(
            "  learned installed {}; added {}, unchanged {}, refused: limit {}, rate {}, table cap {}, table {}",
            r.learned, s.added, s.unchanged, s.over_limit, s.over_rate, s.over_table, s.refused
        );
    }
    println!(
        "  memory: classifier {:.1} MB (one copy of two), learn bookkeeping {:.1} MB, worker's {:.1} KB, RSS growth {:.1} MB",
        r.classifier_bytes as f64 / 1e6,
        r.learn_bytes as f64 / 1e6,
        r.worker_learn_bytes as f64 / 1e3,
        r.rss_growth as f64 / 1e6
    );
}

/// Every row, each in a child process.
pub fn run(quick: bool, json: bool) {
    let Ok(exe) = std::env::current_exe() else {
        eprintln!("pipeline-bench: learn: cannot find this binary");
        return;
    };
    for row in ROWS {
        let mut cmd = Command::new(&exe);
        cmd.args([CHILD_FLAG, row]);
        if quick {
            cmd.arg("--quick");
        }
        if json {
            cmd.arg("--json");
        }
        match cmd.output() {
            Ok(out) if out.status.success() => {
                print!("{}", String::from_utf8_lossy(&out.stdout));
            }
            Ok(out) => eprintln!(
                "pipeline-bench: learn {row} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(e) => eprintln!("pipeline-bench: learn {row}: {e}"),
        }
    }
}
