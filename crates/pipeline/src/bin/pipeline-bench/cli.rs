//! The command line: which sections to run, at what size, in what format.
//!
//! Parsed by hand (the pipeline crate has no argument parser, and this
//! needs none). No section selector means today's sections (`--configs`
//! and `--ingest`), so existing users see no change.

use crate::measure::Plan;

pub const USAGE: &str = "\
pipeline-bench: the pipeline's cost per packet and per rule, on one core

usage: pipeline-bench [--json] [--quick] [SECTION...]

sections (none given: --configs --ingest):
  --configs   the standard rule sets (4p20r ... 1m), few distinct packets
  --ingest    1 000 000 FLOW_MOD adds: rate, deletes, memory per rule
  --scaling   many flows: rules installed and active flows grow
              (uniform and Zipf traffic through the exact-match cache)
  --flows-at K[,K...]
              --scaling's active-flows axis alone, at these K (with
              --threads: the K it runs)
  --threads N N threads, each its own worker, on one snapshot of the 1m
              rule set, against one thread, in alternating rounds:
              packets/s and scaling efficiency at K active flows
  --stages    ns added by each stage: parse, cache hit, classifier miss,
              and each action kind over a plain output
  --churn     one flow-mod and publication per pass over the traffic:
              the exact-match cache with its change log on and off
  --tables    five tables with registers and resubmits (Neutron's
              br-int shape) against one table, same traffic
  --learn     a flood of distinct packets through Open vSwitch's MAC
              learning flow: the worker's cost, the control plane's per
              batch of 4 096 learned flows, refusals, memory
  --conntrack the conntrack tutorial's stateful firewall with 1 000 and
              1 000 000 connections tracked (--quick: 100 000): ns per
              new connection, per established packet against the same
              packets untracked, bytes per connection
  --all       every section
  --probe SCENARIO PACKETS
              no timing: run PACKETS packets of one scenario (cache_hit,
              group_select, tables-flat, tables-br-int-resubmit,
              tables-br-int-goto, ct_established, ct_untracked) for an
              instruction count under callgrind
              (scripts/bench/icount.sh)

options:
  --json      one JSON object per line instead of tables
  --quick     smaller sizes, fewer and shorter rounds (--scaling --stages
              in about 10 s; configs and ingest keep their full sizes;
              --learn floods 100 000 packets instead of 1 200 000)
  --help      this text
";

/// What to run.
#[derive(Debug, Default)]
pub struct Opts {
    pub json: bool,
    pub quick: bool,
    pub configs: bool,
    pub ingest: bool,
    pub scaling: bool,
    pub stages: bool,
    pub churn: bool,
    pub tables: bool,
    pub learn: bool,
    pub conntrack: bool,
    /// Hidden: run this row of the learn section (see `learn.rs`).
    pub learn_row: Option<String>,
    /// Hidden: run the ingest memory probe for this many rules and print
    /// the RSS growth in bytes (see `ingest.rs`).
    pub rss_child: Option<u32>,
    /// `--threads N`.
    pub threads: Option<usize>,
    /// `--flows-at`: the active-flows axis alone, at these K.
    pub flows_at: Option<Vec<usize>>,
    /// `--probe SCENARIO PACKETS` (see `probe.rs`).
    pub probe: Option<(String, u64)>,
}

impl Opts {
    /// The timing plan for these options.
    pub fn plan(&self) -> Plan {
        if self.quick {
            Plan::QUICK
        } else {
            Plan::FULL
        }
    }
}

/// What the command line asks for: `Ok(None)` after `--help`, `Err` with
/// the message for an unknown flag.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Opts>, String> {
    let mut o = Opts::default();
    let mut any = false;
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => o.json = true,
            "--quick" => o.quick = true,
            "--configs" => (o.configs, any) = (true, true),
            "--ingest" => (o.ingest, any) = (true, true),
            "--scaling" => (o.scaling, any) = (true, true),
            "--stages" => (o.stages, any) = (true, true),
            "--flows-at" => {
                let v = args
                    .next()
                    .ok_or("a list of flow counts after --flows-at")?;
                let ks: Result<Vec<usize>, _> = v.split(',').map(str::parse).collect();
                o.flows_at =
                    Some(ks.map_err(|_| format!("--flows-at: not a list of counts: {v:?}"))?);
                any = true;
            }
            "--threads" => {
                let n = args
                    .next()
                    .and_then(|v| v.parse().ok())
                    .filter(|&n: &usize| (1..=256).contains(&n));
                o.threads = Some(n.ok_or("a thread count (1-256) after --threads")?);
                any = true;
            }
            "--churn" => (o.churn, any) = (true, true),
            "--tables" => (o.tables, any) = (true, true),
            "--learn" => (o.learn, any) = (true, true),
            "--conntrack" => (o.conntrack, any) = (true, true),
            "--all" => {
                (
                    o.configs,
                    o.ingest,
                    o.scaling,
                    o.stages,
                    o.churn,
                    o.tables,
                    o.learn,
                    o.conntrack,
                ) = (true, true, true, true, true, true, true, true);
                any = true;
            }
            "--help" | "-h" => return Ok(None),
            "--probe" => {
                let scenario = args.next().ok_or("a scenario after --probe")?;
                let n = args.next().and_then(|v| v.parse().ok());
                o.probe = Some((scenario, n.ok_or("a packet count after the scenario")?));
                any = true;
            }
            crate::learn::CHILD_FLAG => {
                o.learn_row = Some(args.next().ok_or("a row after the learn row flag")?);
            }
            crate::ingest::CHILD_FLAG => {
                let n = args.next().and_then(|v| v.parse().ok());
                o.rss_child = Some(n.ok_or("a rule count after the memory probe flag")?);
            }
            _ => return Err(format!("unknown flag: {a}")),
        }
    }
    if o.flows_at.is_some() && o.threads.is_none() {
        o.scaling = true;
    }
    if !any {
        (o.configs, o.ingest) = (true, true);
    }
    Ok(Some(o))
}
