//! `pipeline-bench`: the pipeline's cost per packet and per rule, on one
//! core.
//!
//! ```text
//! cargo run --release -p pipeline --bin pipeline-bench              # configs + ingest, a table
//! cargo run --release -p pipeline --bin pipeline-bench -- --json    # the same as JSON lines
//! cargo run --release -p pipeline --bin pipeline-bench -- --all --quick
//! ```
//!
//! What is measured is the pipeline's packet path (flow-key extraction,
//! the exact-match cache, the classifier, the instructions and actions,
//! through `Worker::process`) and its rule ingest. The ports and the
//! worker loop around it are the lab's to measure (`scripts/lab.sh`).
//! Sections, one module each:
//!
//! * `configs.rs`: the standard rule sets with few distinct packets
//!   (the cache's friendly case);
//! * `ingest.rs`: 1 000 000 FLOW_MOD adds, and the memory they hold;
//! * `scaling.rs`: many rules, many active flows, uniform and Zipf;
//! * `stages.rs`: what each step and action adds per packet;
//! * `churn.rs`: the cost per packet while flow-mods keep coming, with
//!   the exact-match cache's change log on and off;
//! * `tables.rs`: five tables in Open vSwitch's dialect (registers,
//!   resubmit) against one, for the same traffic;
//! * `probe.rs`: one scenario's packets untimed, for instruction counts
//!   under callgrind;
//! * `learn.rs`: a flood of distinct packets through a MAC-learning
//!   flow, the worker's and the control plane's side;
//! * `threads.rs`: N threads on one snapshot against one thread;
//! * `conntrack.rs`: a stateful firewall (`ct`) with many connections
//!   tracked against the same packets untracked; new connections; memory
//!   per connection.
//!
//! `cli.rs` reads the flags, `measure.rs` times rounds, `rules.rs` and
//! `flows.rs` build the rule sets, `traffic.rs` the many-flow traffic.

mod churn;
mod cli;
mod configs;
mod conntrack;
mod flows;
mod ingest;
mod learn;
mod measure;
mod probe;
mod rules;
mod scaling;
mod stages;
mod tables;
mod threads;
mod traffic;

fn main() {
    let opts = match cli::parse(std::env::args().skip(1)) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{}", cli::USAGE);
            return;
        }
        Err(e) => {
            eprintln!("pipeline-bench: {e}\n\n{}", cli::USAGE);
            std::process::exit(2);
        }
    };
    if let Some(row) = &opts.learn_row {
        learn::child(row, opts.quick, opts.json);
        return;
    }
    if let Some(n) = opts.rss_child {
        ingest::child(n);
        return;
    }
    if let Some((scenario, n)) = &opts.probe {
        if let Err(e) = probe::run(scenario, *n) {
            eprintln!("pipeline-bench: {e}");
            std::process::exit(2);
        }
        return;
    }
    let plan = opts.plan();
    if opts.configs {
        configs::run(plan, opts.json);
    }
    if opts.ingest {
        ingest::run(opts.json);
    }
    if opts.scaling {
        scaling::run(plan, opts.quick, opts.json, opts.flows_at.as_deref());
    }
    if let Some(n) = opts.threads {
        threads::run(plan, opts.quick, opts.json, n, opts.flows_at.as_deref());
    }
    if opts.stages {
        stages::run(plan, opts.json);
    }
    if opts.churn {
        churn::run(plan, opts.json);
    }
    if opts.tables {
        tables::run(plan, opts.json);
    }
    if opts.learn {
        learn::run(opts.quick, opts.json);
    }
    if opts.conntrack {
        conntrack::run(plan, opts.quick, opts.json);
    }
}
