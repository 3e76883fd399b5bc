//! The churn section: cost per packet while the controller keeps changing
//! the table, one flow-mod and one publication per pass over the traffic.
//!
//! Each pass runs the rule set's distinct packets (`configs.rs`'s, a few
//! hundred) through one worker whose exact-match cache lives on; between
//! passes the control plane adds or deletes (alternately) one rule and
//! publishes a snapshot: about one publication per 500-850 packets, a
//! controller busy at ~1 000 flow-mods/s against 1 Mpps. The flow-mod and
//! the snapshot are timed with the packets (the same work in every row).
//! Rows, for each rule set:
//!
//! * `none`: no flow-mods (the cache's steady state);
//! * `elsewhere`: the rule changed matches none of the traffic (a rule for
//!   other hosts), so every cached answer still holds;
//! * `everywhere`: the rule changed overlaps every packet, so every cached
//!   answer must be looked up again.
//!
//! each with the change log on (`change_log` 16, the default: entries no
//! change touched are kept) and off (0: every publication empties the
//! cache, as before the log existed), timed in alternating rounds; `on/off`
//! is the median of the per-round ratios. `kept` is the share of packets
//! that hit an entry of an earlier version the log kept.

use std::sync::Arc;

use ofp::msg::flow::{FlowMod, FlowModCommand};
use ofp::text::parse_flow_mod;
use pipeline::{Pipeline, Snapshot, Worker};

use crate::measure::{rounds, Plan, Stat};
use crate::rules::{big, build_pipeline, mixed, Config};

/// What the flow-mods between passes touch.
#[derive(Clone, Copy)]
enum Churn {
    None,
    Elsewhere,
    Everywhere,
}

impl Churn {
    fn name(self) -> &'static str {
        match self {
            Churn::None => "none",
            Churn::Elsewhere => "elsewhere",
            Churn::Everywhere => "everywhere",
        }
    }

    /// The rule added and deleted in turn.
    fn rule(self) -> Option<FlowMod> {
        let text = match self {
            Churn::None => return None,
            // No packet of the rule sets has this in_port.
            Churn::Elsewhere => "priority=65000,in_port=4000,tcp,tp_dst=9,actions=drop",
            // Covers every IPv4 packet (priority aside: a change is
            // checked against cached keys by its match alone).
            Churn::Everywhere => "priority=1,ip,actions=drop",
        };
        Some(parse_flow_mod(text).expect("valid bench flow"))
    }
}

/// One side of a comparison: a pipeline with its change log set, and a
/// worker whose cache lives across the publications.
struct Side {
    p: Pipeline,
    w: Worker,
    snap: Arc<Snapshot>,
    frames: Vec<(u32, Vec<u8>)>,
    added: bool,
    now: u64,
}

impl Side {
    fn new(c: &Config, ports: u32, log: usize) -> Side {
        let mut p = build_pipeline(c, ports);
        p.config.change_log = log;
        let snap = p.snapshot();
        Side {
            p,
            w: Worker::new(0),
            snap,
            frames: c.packets.clone(),
            added: false,
            now: 0,
        }
    }

    /// One flow-mod and publication (unless `rule` is None), then every
    /// packet once.
    fn pass(&mut self, rule: Option<&FlowMod>) -> u64 {
        if let Some(r) = rule {
            let mut fm = r.clone();
            fm.command = if self.added {
                FlowModCommand::DeleteStrict
            } else {
                FlowModCommand::Add
            };
            self.p
                .flow_mod(&fm, self.now)
                .expect("valid bench flow-mod");
            self.added = !self.added;
            self.snap = self.p.snapshot();
        }
        self.now += 1;
        let mut acc = 0;
        for (port, f) in self.frames.iter_mut() {
            acc += self.w.process(&self.snap, *port, f, self.now).len() as u64;
        }
        acc
    }

    /// (hits, misses, kept) so far.
    fn counts(&self) -> (u64, u64, u64) {
        let (h, m) = self.w.cache_stats();
        (h, m, self.w.cache_kept())
    }
}

/// Every row, a table or JSON lines: for each rule set and churn, the log
/// on and off timed in alternating rounds (so both see the same noise).
pub fn run(plan: Plan, json: bool) {
    let sets = [
        ("32p200r", 32, mixed("32p200r", 32, 200)),
        ("100k1k", 3, big("100k1k", 100_000, 1_000)),
    ];
    if !json {
        println!(
            "\n{:<9} {:>11} {:>5} {:>8} {:>8} {:>8} {:>9} {:>6} {:>9}",
            "config", "churn", "log", "ns/pkt", "min_ns", "max_ns", "cache_hit", "kept", "on/off"
        );
    }
    let one = Plan { rounds: 1, ..plan };
    for (tag, ports, c) in &sets {
        for churn in [Churn::None, Churn::Elsewhere, Churn::Everywhere] {
            let rule = churn.rule();
            let n = c.packets.len();
            let mut sides = [Side::new(c, *ports, 16), Side::new(c, *ports, 0)];
            // Warm-up: the caches filled, the first publications made.
            for s in sides.iter_mut() {
                for _ in 0..8 {
                    s.pass(rule.as_ref());
                }
            }
            let before = sides.each_ref().map(Side::counts);
            let mut times = [Vec::new(), Vec::new()];
            for _ in 0..plan.rounds {
                for (s, t) in sides.iter_mut().zip(times.iter_mut()) {
                    t.push(rounds(one, n, || s.pass(rule.as_ref())).median);
                }
            }
            let ratio = Stat::of(times[0].iter().zip(&times[1]).map(|(a, b)| a / b).collect());
            for (i, log) in [16usize, 0].into_iter().enumerate() {
                let stat = Stat::of(times[i].clone());
                let (h1, m1, k1) = sides[i].counts();
                let (h0, m0, k0) = before[i];
                let (h, m) = ((h1 - h0) as f64, (m1 - m0) as f64);
                let hit = h / (h + m);
                let kept = (k1 - k0) as f64 / (h + m);
                if json {
                    println!(
                        "{{\"scenario\": \"churn\", \"config\": \"{tag}\", \"churn\": \"{}\", \"change_log\": {log}, \"ns_per_pkt\": {:.1}, \"min_ns\": {:.1}, \"max_ns\": {:.1}, \"cache_hit_rate\": {hit:.3}, \"kept_rate\": {kept:.3}, \"on_over_off\": {:.3}, \"packets_per_publication\": {n}}}",
                        churn.name(), stat.median, stat.min, stat.max, ratio.median
                    );
                } else {
                    println!(
                        "{:<9} {:>11} {:>5} {:>8.1} {:>8.1} {:>8.1} {:>9.3} {:>6.3} {:>9}",
                        tag,
                        churn.name(),
                        log,
                        stat.median,
                        stat.min,
                        stat.max,
                        hit,
                        kept,
                        if i == 0 {
                            format!("{:.3}", ratio.median)
                        } else {
                            String::new()
                        }
                    );
                }
            }
        }
    }
}
