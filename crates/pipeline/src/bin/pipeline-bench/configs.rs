//! The configs table: lookup cost per packet for the standard rule sets.
//!
//! What is measured: the pipeline's packet path (flow-key extraction,
//! classifier lookup and the actions, through `Worker::process`), and
//! extraction and lookup alone for the stage columns. Each rule set comes
//! with at most ~850 distinct packets replayed, so the exact-match cache
//! hits nearly always: the friendly case (the scaling section is the
//! many-flow one). `32p200r-meter` is `32p200r` with every matched packet
//! through one meter whose band is never exceeded: the cost of checking
//! and charging a band's bucket.

use packet::{extract, FlowKey};
use pipeline::Worker;

use crate::measure::{measure, Plan};
use crate::rules::{big, build, build_pipeline, mixed};

/// One row per rule set, a table or JSON lines.
pub fn run(plan: Plan, json: bool) {
    let configs = [
        ("4p20r", 4, mixed("4p20r", 4, 20)),
        ("32p200r", 32, mixed("32p200r", 32, 200)),
        (
            "32p200r-meter",
            32,
            mixed("32p200r", 32, 200).metered("32p200r-meter"),
        ),
        ("100k1k", 3, big("100k1k", 100_000, 1_000)),
        ("1m", 3, big("1m", 1_000_000, 0)),
    ];
    if !json {
        println!(
            "{:<9} {:>8} {:>6} {:>9} {:>10} {:>13} {:>12} {:>11} {:>9}",
            "config",
            "rules",
            "masks",
            "parse_ns",
            "lookup_ns",
            "parse+lookup",
            "pipeline_ns",
            "no_cache_ns",
            "hit_rate"
        );
    }
    for (tag, ports, c) in configs {
        let cls = build(&c.rules);
        let mut keys = vec![FlowKey::default(); c.packets.len()];
        for (k, (port, f)) in keys.iter_mut().zip(&c.packets) {
            extract(f, *port, k);
        }
        let hits = keys
            .iter()
            .filter(|k| {
                cls.lookup(k)
                    .is_some_and(|r| r as usize != c.rules.len() - 1)
            })
            .count();
        let n = c.packets.len();
        let mut scratch = FlowKey::default();
        let parse_ns = measure(plan, n, || {
            let mut acc = 0;
            for (port, f) in &c.packets {
                extract(std::hint::black_box(f), *port, &mut scratch);
                acc += scratch.w[2];
            }
            acc
        });
        let lookup_ns = measure(plan, n, || {
            keys.iter()
                .map(|k| cls.lookup(std::hint::black_box(k)).unwrap_or(0) as u64)
                .sum()
        });
        let both_ns = measure(plan, n, || {
            let mut acc = 0;
            for (port, f) in &c.packets {
                extract(std::hint::black_box(f), *port, &mut scratch);
                acc += cls.lookup(&scratch).unwrap_or(0) as u64;
            }
            acc
        });
        drop(cls);
        // The whole pipeline: parse, lookup, instructions and actions (MAC
        // rewrite on half the rules, output), counters.
        let mut p = build_pipeline(&c, ports);
        let snap = p.snapshot();
        let mut frames: Vec<(u32, Vec<u8>)> = c.packets.clone();
        let mut now = 0u64;
        let mut run = |w: &mut Worker| {
            measure(plan, n, || {
                let mut acc = 0;
                now += 1;
                for (port, f) in frames.iter_mut() {
                    acc += w.process(&snap, *port, f, now).len() as u64;
                }
                acc
            })
        };
        let pipeline_ns = run(&mut Worker::new(0));
        // The same without the exact-match cache (the classifier on every packet).
        let nocache_ns = run(&mut Worker::with_cache(0, 0));
        let hit_rate = hits as f64 / n as f64;
        let (rules, masks) = (snap.tables[0].len(), snap.tables[0].subtables());
        if json {
            println!(
                "{{\"config\": \"{tag}\", \"ns_per_pkt\": {pipeline_ns:.1}, \"parse_ns\": {parse_ns:.1}, \"lookup_ns\": {lookup_ns:.1}, \"parse_lookup_ns\": {both_ns:.1}, \"no_cache_ns\": {nocache_ns:.1}, \"rules\": {rules}, \"masks\": {masks}, \"packets\": {n}, \"hit_rate\": {hit_rate:.3}, \"actions\": true}}"
            );
        } else {
            println!(
                "{:<9} {:>8} {:>6} {:>9.1} {:>10.1} {:>13.1} {:>12.1} {:>11.1} {:>9.3}",
                c.name,
                rules,
                masks,
                parse_ns,
                lookup_ns,
                both_ns,
                pipeline_ns,
                nocache_ns,
                hit_rate
            );
        }
    }
}
