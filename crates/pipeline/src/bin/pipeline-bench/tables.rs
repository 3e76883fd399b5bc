//! Multi-table pipelines in Open vSwitch's dialect (issue 30's speed
//! point): the same traffic and forwarding decisions through one table,
//! and through five tables in the shape of Neutron's br-int with its OVS
//! firewall driver (classify the port into registers, port security,
//! the firewall's allow rules, forwarding by MAC within the network),
//! chained by `resubmit` and by `goto_table`.
//!
//! * `flat`: table 0 holds, for each pair of ports (P, Q), the rule
//!   `in_port=P,dl_src=MAC_P,ip,nw_src=IP_P,dl_dst=MAC_Q,actions=output:Q`.
//! * `br-int-resubmit`: table 0 `in_port=P` loads P and the network into
//!   reg5 and reg6, resubmits to 60; 60 `reg5=P` resubmits to 71; 71
//!   `reg5=P,dl_src=MAC_P,ip,nw_src=IP_P` (anti-spoofing) to 73; 73
//!   `reg6=1,ip` (the allow rules) to 94; 94 `reg6=1,dl_dst=MAC_Q`
//!   outputs to Q. Five lookups per packet.
//! * `br-int-goto`: the same tables with goto_table.
//!
//! Each row: pipeline ns per packet with the caches, the ratio to `flat`,
//! and the share of packets whose whole walk came from the cache of walks
//! (`pipeline::lookup::paths`). The traffic is one packet per ordered pair of ports
//! (32 ports: 992 packets), replayed, so the caches hold every flow.

use ofp::text::parse_flow_mod;
use pipeline::{Config, Pipeline, PortState, Worker};

use crate::measure::{measure, Plan};
use crate::rules::frame;

const PORTS: u32 = 32;

fn mac(p: u32) -> u64 {
    0x0200_0000_0000 | p as u64
}

fn mac_text(p: u32) -> String {
    format!("02:00:00:00:00:{p:02x}")
}

fn ip(p: u32) -> u32 {
    0x0a00_0000 | p
}

fn ip_text(p: u32) -> String {
    format!("10.0.0.{p}")
}

/// The flows of one variant.
fn flows(variant: &str) -> Vec<String> {
    let mut v = Vec::new();
    let ports = 1..=PORTS;
    match variant {
        "flat" => {
            for p in ports.clone() {
                for q in ports.clone().filter(|&q| q != p) {
                    v.push(format!(
                        "in_port={p},dl_src={},ip,nw_src={},dl_dst={},actions=output:{q}",
                        mac_text(p),
                        ip_text(p),
                        mac_text(q)
                    ));
                }
            }
        }
        _ => {
            let goto = variant == "br-int-goto";
            let next = |t: u8| {
                if goto {
                    format!("goto_table:{t}")
                } else {
                    format!("resubmit(,{t})")
                }
            };
            for p in ports.clone() {
                v.push(format!(
                    "table=0,priority=100,in_port={p},actions=load:{p}->NXM_NX_REG5[],load:0x1->NXM_NX_REG6[],{}",
                    next(60)
                ));
                v.push(format!(
                    "table=60,priority=100,reg5={p},actions={}",
                    next(71)
                ));
                v.push(format!(
                    "table=71,priority=95,reg5={p},dl_src={},ip,nw_src={},actions={}",
                    mac_text(p),
                    ip_text(p),
                    next(73)
                ));
                v.push(format!(
                    "table=94,priority=12,reg6=0x1,dl_dst={},actions=output:{p}",
                    mac_text(p)
                ));
            }
            v.push(format!(
                "table=73,priority=70,reg6=0x1,ip,actions={}",
                next(94)
            ));
            for t in [0, 60, 71, 73, 94] {
                v.push(format!("table={t},priority=0,actions=drop"));
            }
        }
    }
    v
}

pub(crate) fn pipeline(variant: &str) -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 254,
        ..Config::default()
    });
    for n in 1..=PORTS {
        p.set_port(PortState::up(n));
    }
    for f in flows(variant) {
        let fm = parse_flow_mod(&f).unwrap_or_else(|e| panic!("{f}: {e}"));
        p.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    p
}

/// One packet per ordered pair of ports.
pub(crate) fn traffic() -> Vec<(u32, Vec<u8>)> {
    let mut v = Vec::new();
    for p in 1..=PORTS {
        for q in (1..=PORTS).filter(|&q| q != p) {
            let mut f = frame(None, mac(q), ip(p), ip(q), 6, 1000 + q as u16, 80);
            f[6..12].copy_from_slice(&mac(p).to_be_bytes()[2..]);
            v.push((p, f));
        }
    }
    v
}

pub fn run(plan: Plan, json: bool) {
    let mut frames = traffic();
    let n = frames.len();
    if !json {
        println!(
            "{:<16} {:>7} {:>12} {:>8} {:>10}",
            "pipeline", "tables", "pipeline_ns", "ratio", "walk_hits"
        );
    }
    let mut flat = None;
    for (variant, tables) in [("flat", 1), ("br-int-resubmit", 5), ("br-int-goto", 5)] {
        let mut p = pipeline(variant);
        let snap = p.snapshot();
        let mut w = Worker::new(0);
        // Every packet goes where the flat table sends it.
        for (port, f) in &mut frames {
            let outs = w.process(&snap, *port, f, 0);
            assert_eq!(outs.len(), 1, "{variant}: one output per packet");
        }
        let mut now = 0;
        let ns = measure(plan, n, || {
            let mut acc = 0;
            now += 1;
            for (port, f) in frames.iter_mut() {
                acc += w.process(&snap, *port, f, now).len() as u64;
            }
            acc
        });
        let base = *flat.get_or_insert(ns);
        let ratio = ns / base;
        let (hits, misses) = w.path_stats();
        let walk_hits = hits as f64 / (hits + misses).max(1) as f64;
        if json {
            println!(
                "{{\"config\": \"tables-{variant}\", \"tables\": {tables}, \"ns_per_pkt\": {ns:.1}, \"ratio_to_flat\": {ratio:.2}, \"walk_cache_hits\": {walk_hits:.3}, \"packets\": {n}}}"
            );
        } else {
            println!("{variant:<16} {tables:>7} {ns:>12.1} {ratio:>8.2} {walk_hits:>10.3}");
        }
    }
}
