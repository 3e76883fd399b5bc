//! `pipeline-bench`: lookup cost per packet for the standard rule sets, and
//! rule ingest, on one core.
//!
//! ```text
//! cargo run --release -p pipeline --bin pipeline-bench            # a table
//! cargo run --release -p pipeline --bin pipeline-bench -- --json  # JSON lines
//! ```
//!
//! What is measured: the pipeline's packet path (flow-key extraction,
//! classifier lookup and the actions, through `Worker::process`), and
//! extraction and lookup alone for the stage table. The ports and the
//! worker loop around it are the lab's to measure (`scripts/lab.sh`).
//! Each figure is the median of 5 rounds of at least 200 ms.
//! `32p200r-meter` is `32p200r` with every matched packet through one
//! meter whose band is never exceeded: the cost of checking and charging
//! a band's bucket.

use std::time::{Duration, Instant};

use ofp::msg::flow::FlowMod;
use ofp::oxm::{Match, MatchEntry, Oxm, OxmField as F};
use ofp::{Action, Instruction};
use packet::{extract, FlowKey};
use pipeline::{compile, Classifier, Pipeline, PortState, RuleId, Worker};

fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

/// An Ethernet/IPv4/TCP or UDP frame.
fn frame(
    in_vlan: Option<u16>,
    dst_mac: u64,
    src: u32,
    dst: u32,
    proto: u8,
    sport: u16,
    dport: u16,
) -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&dst_mac.to_be_bytes()[2..]);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 0x99]);
    if let Some(v) = in_vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 46, 0, 0, 0, 0, 64, proto, 0, 0]);
    f.extend_from_slice(&src.to_be_bytes());
    f.extend_from_slice(&dst.to_be_bytes());
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x10, 0, 0, 0, 0, 0, 0]);
    f.resize(64, 0);
    f
}

struct Config {
    name: &'static str,
    rules: Vec<(Match, u16)>,
    /// Instructions per rule (same order as `rules`).
    actions: Vec<Vec<Instruction>>,
    packets: Vec<(u32, Vec<u8>)>,
    /// Every rule meters its packets (meter 1) before its actions.
    metered: bool,
}

impl Config {
    /// The same rule set with every rule's packets through meter 1.
    fn metered(mut self, name: &'static str) -> Config {
        self.name = name;
        self.metered = true;
        for ins in &mut self.actions {
            if !ins.is_empty() {
                ins.insert(0, Instruction::Meter(1));
            }
        }
        self
    }

    /// A configuration whose rules end with the table-miss rule (drop).
    fn with_table_miss(
        name: &'static str,
        mut rules: Vec<(Match, u16)>,
        mut actions: Vec<Vec<Instruction>>,
        packets: Vec<(u32, Vec<u8>)>,
    ) -> Config {
        rules.push((m(), 0));
        actions.push(Vec::new());
        Config {
            name,
            rules,
            actions,
            packets,
            metered: false,
        }
    }
}

/// `output:port`, with a MAC rewrite first for every other rule.
fn actions_for(n: u32, port: u32) -> Vec<Instruction> {
    let mut a = Vec::with_capacity(2);
    if n.is_multiple_of(2) {
        a.push(Action::SetField(MatchEntry::Basic(Oxm::exact(
            F::EthDst,
            0x0200_0000_1000 | n as u128,
        ))));
    }
    a.push(Action::Output { port, max_len: 0 });
    vec![Instruction::ApplyActions(a)]
}

fn m() -> Match {
    Match::new()
}

fn exact(f: F, v: u128) -> Oxm {
    Oxm::exact(f, v)
}

/// `total` mixed L2/L3/L4 rules (the last one the table-miss rule) spread
/// over `ports` ports, and one packet per rule that hits it, plus one in ten
/// that hits nothing but the table-miss rule.
fn mixed(name: &'static str, ports: u32, total: u32) -> Config {
    let mut actions = Vec::new();
    let mut rules = Vec::new();
    let mut packets = Vec::new();
    for n in 0..total - 1 {
        let p = n % ports + 1;
        let i = n / ports;
        let (mm, prio, pkt) = match n % 5 {
            0 => (
                m().with(exact(F::InPort, p as u128))
                    .with(exact(F::EthDst, 0x0200_0000_0000 | n as u128)),
                300,
                frame(
                    None,
                    0x0200_0000_0000 | n as u64,
                    0x0c00_0001,
                    0x0d00_0001,
                    6,
                    1,
                    1,
                ),
            ),
            1 => (
                m().with(exact(F::InPort, p as u128))
                    .with(exact(F::EthType, 0x800))
                    .with(Oxm::masked(
                        F::Ipv4Dst,
                        (0x0a00_0000 | (n << 8)) as u128,
                        0xffff_ff00,
                    )),
                200,
                frame(
                    None,
                    0x0200_ffff_0000,
                    0x0c00_0001,
                    0x0a00_0000 | (n << 8) | 7,
                    6,
                    1,
                    1,
                ),
            ),
            2 => (
                m().with(exact(F::EthType, 0x800))
                    .with(exact(F::IpProto, 6))
                    .with(exact(F::Ipv4Src, (0x0b00_0000 | n) as u128))
                    .with(exact(F::TcpDst, (1000 + i) as u128)),
                400,
                frame(
                    None,
                    0x0200_ffff_0000,
                    0x0b00_0000 | n,
                    0x0d00_0001,
                    6,
                    5,
                    (1000 + i) as u16,
                ),
            ),
            3 => (
                m().with(exact(F::InPort, p as u128))
                    .with(exact(F::EthType, 0x800))
                    .with(exact(F::IpProto, 17))
                    .with(exact(F::UdpDst, (2000 + n) as u128)),
                250,
                frame(
                    None,
                    0x0200_ffff_0000,
                    0x0c00_0001,
                    0x0d00_0001,
                    17,
                    5,
                    (2000 + n) as u16,
                ),
            ),
            _ => (
                m().with(exact(F::InPort, p as u128)).with(Oxm::masked(
                    F::VlanVid,
                    0x1000 | n as u128 & 0xfff,
                    0x1fff,
                )),
                100,
                frame(
                    Some((n & 0xfff) as u16),
                    0x0200_ffff_0000,
                    0x0c00_0001,
                    0x0d00_0001,
                    17,
                    5,
                    9,
                ),
            ),
        };
        rules.push((mm, prio));
        packets.push((p, pkt));
        // Out of another port than it came in.
        actions.push(actions_for(n, p % ports + 1));
        if n % 10 == 9 {
            packets.push((
                p,
                frame(None, 0x0200_eeee_0000, 0x0e00_0001, 0x0e00_0002, 17, 7, 7),
            ));
        }
    }
    Config::with_table_miss(name, rules, actions, packets)
}

/// `exact` 5-tuple rules plus `wild` prefix rules; packets hit both.
fn big(name: &'static str, exact_n: u32, wild: u32) -> Config {
    let mut rules = Vec::with_capacity((exact_n + wild) as usize);
    let mut packets = Vec::new();
    for i in 0..exact_n {
        let (src, dst, sp, dp) = (
            0x0a00_0000 | i,
            0x1400_0000 | (i.wrapping_mul(7919) & 0xffffff),
            (i % 50000) as u16 + 1024,
            80,
        );
        rules.push((
            m().with(exact(F::InPort, 1))
                .with(exact(F::EthType, 0x800))
                .with(exact(F::IpProto, 6))
                .with(exact(F::Ipv4Src, src as u128))
                .with(exact(F::Ipv4Dst, dst as u128))
                .with(exact(F::TcpSrc, sp as u128))
                .with(exact(F::TcpDst, dp as u128)),
            1000,
        ));
        if i % (exact_n / 512).max(1) == 0 {
            packets.push((1, frame(None, 0x0200_0000_0001, src, dst, 6, sp, dp)));
        }
    }
    for j in 0..wild {
        let len = 8 + (j % 17);
        let mask = !0u32 << (32 - len);
        let v = (0x1e00_0000u32 | (j << 12)) & mask;
        rules.push((
            m().with(exact(F::EthType, 0x800)).with(Oxm::masked(
                F::Ipv4Dst,
                v as u128,
                mask as u128,
            )),
            (10 + len) as u16,
        ));
        if j % (wild / 256).max(1) == 0 {
            packets.push((
                2,
                frame(None, 0x0200_0000_0001, 0x0101_0101, v | 1, 17, 1, 1),
            ));
        }
    }
    let actions = (0..rules.len() as u32).map(|n| actions_for(n, 3)).collect();
    Config::with_table_miss(name, rules, actions, packets)
}

fn build(rules: &[(Match, u16)]) -> Classifier {
    let mut c: Classifier = Classifier::new();
    for (i, (mm, p)) in rules.iter().enumerate() {
        c.insert(i as RuleId, &compile(mm).expect("valid bench rule"), *p);
    }
    c
}

fn build_pipeline(c: &Config, ports: u32) -> Pipeline {
    let mut p = Pipeline::new(pipeline::Config {
        n_tables: 1,
        ..Default::default()
    });
    for n in 1..=ports {
        p.set_port(PortState::up(n));
    }
    if c.metered {
        // Every rule's packets through meter 1: a DSCP remark band at a
        // rate nothing here exceeds (the bucket is checked and charged on
        // every packet, the band never applies).
        let mut mm = ofp::text::parse_meter_mod(
            "meter=1,pktps,bands=type=dscp_remark,rate=1000000000,prec_level=1",
        )
        .expect("valid bench meter");
        mm.command = ofp::msg::meter::MeterModCommand::Add;
        p.meter_mod(&mm, 0).expect("valid bench meter");
    }
    for ((mm, prio), ins) in c.rules.iter().zip(&c.actions) {
        let fm = FlowMod {
            priority: *prio,
            match_: mm.clone(),
            instructions: ins.clone(),
            ..FlowMod::default()
        };
        p.flow_mod(&fm, 0).expect("valid bench flow");
    }
    p
}

/// Median ns per item of `f` run over `n` items, 5 rounds of >= 200 ms.
fn measure(n: usize, mut f: impl FnMut() -> u64) -> f64 {
    let mut results = Vec::new();
    let mut sink = 0u64;
    for _ in 0..5 {
        let start = Instant::now();
        let mut iters = 0u64;
        while start.elapsed() < Duration::from_millis(200) {
            sink = sink.wrapping_add(f());
            iters += 1;
        }
        results.push(start.elapsed().as_nanos() as f64 / (iters as f64 * n as f64));
    }
    std::hint::black_box(sink);
    results.sort_by(|a, b| a.total_cmp(b));
    results[2]
}

fn main() {
    let json = std::env::args().any(|a| a == "--json");
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
        let parse_ns = measure(n, || {
            let mut acc = 0;
            for (port, f) in &c.packets {
                extract(std::hint::black_box(f), *port, &mut scratch);
                acc += scratch.w[2];
            }
            acc
        });
        let lookup_ns = measure(n, || {
            keys.iter()
                .map(|k| cls.lookup(std::hint::black_box(k)).unwrap_or(0) as u64)
                .sum()
        });
        let both_ns = measure(n, || {
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
            measure(n, || {
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

    // Ingest through the real path: 1 000 000 FLOW_MOD adds (validated,
    // compiled, stored) and one publish; then 10% deleted (strict) and
    // published.
    let c = big("ingest", 1_000_000, 0);
    let mods: Vec<FlowMod> = c
        .rules
        .iter()
        .zip(&c.actions)
        .map(|((mm, prio), ins)| FlowMod {
            priority: *prio,
            match_: mm.clone(),
            instructions: ins.clone(),
            ..FlowMod::default()
        })
        .collect();
    drop(c);
    let rss0 = rss_bytes();
    let t = Instant::now();
    let mut p = Pipeline::new(pipeline::Config {
        n_tables: 1,
        ..Default::default()
    });
    for fm in &mods {
        p.flow_mod(fm, 0).expect("valid");
    }
    let snap = p.snapshot();
    let add_s = t.elapsed().as_secs_f64();
    let rss1 = rss_bytes();
    std::hint::black_box(&snap);
    drop(snap);
    let t = Instant::now();
    for fm in mods.iter().step_by(10) {
        let del = FlowMod {
            command: ofp::FlowModCommand::DeleteStrict,
            ..fm.clone()
        };
        p.flow_mod(&del, 0).expect("valid");
    }
    let snap = p.snapshot();
    let del_ms = t.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(&snap);
    let rss_per_rule = rss1.saturating_sub(rss0) as f64 / mods.len() as f64;
    let cls_per_rule = p.tables()[0].classifier().heap_bytes() as f64 / p.tables()[0].len() as f64;
    drop((snap, p));

    // The classifier alone, for comparison.
    let t = Instant::now();
    let mut cls: Classifier = Classifier::new();
    for (i, fm) in mods.iter().enumerate() {
        cls.insert(
            i as RuleId,
            &compile(&fm.match_).expect("valid"),
            fm.priority,
        );
    }
    let cls_add_s = t.elapsed().as_secs_f64();
    drop(cls);
    if json {
        println!(
            "{{\"config\": \"flow-adds-1m\", \"flow_adds_per_s\": {:.0}, \"seconds\": {add_s:.3}, \"delete_10pct_ms\": {del_ms:.1}, \"rss_bytes_per_rule\": {rss_per_rule:.0}, \"classifier_bytes_per_rule\": {cls_per_rule:.0}, \"classifier_only_seconds\": {cls_add_s:.3}}}",
            mods.len() as f64 / add_s
        );
    } else {
        println!(
            "\ningest: 1 000 000 FLOW_MOD adds applied and published in {add_s:.3} s ({:.0}/s); \
             10% deleted (strict) and published in {del_ms:.1} ms",
            mods.len() as f64 / add_s
        );
        println!("        (classifier alone: compile + insert in {cls_add_s:.3} s)");
        println!(
            "memory: RSS growth {rss_per_rule:.0} B/rule for the pipeline; of which classifier {cls_per_rule:.0} B/rule"
        );
    }
}
