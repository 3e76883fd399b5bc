//! The ingest row: 1 000 000 FLOW_MOD adds through the real path, the
//! memory they take, and the classifier alone for comparison.
//!
//! Rate: the adds are validated, compiled, stored and published once; then
//! 10% are deleted (strict) and published; then one MODIFY changes every
//! flow left and one DELETE removes them all, each published while the
//! snapshot before is still held (as a worker holds it), the delete
//! timed until the other classifier copy is brought up to date too (an
//! add and a publication after that snapshot is let go): what the control
//! thread spends on them. The FLOW_MODs are built before
//! the clock starts, so the rate is the pipeline's alone.
//!
//! Memory (`rss_bytes_per_rule`): measured in a fresh child process (this
//! binary re-invoked with a hidden flag) that generates the FLOW_MODs one
//! at a time, so the pipeline's allocations cannot reuse memory freed just
//! before (building the FLOW_MODs first and freeing them made the growth
//! look near zero). The figure is the growth of the resident set from
//! before `Pipeline::new` to after the publish, per rule.
//! `classifier_bytes_per_rule` is the classifier's own heap count.

use std::process::Command;
use std::time::Instant;

use ofp::msg::flow::FlowMod;
use pipeline::{compile, Classifier, Pipeline, RuleId};

use crate::flows;
use crate::rules::big;

/// The hidden flag that makes this binary the memory probe.
pub const CHILD_FLAG: &str = "--ingest-rss-probe";

/// How the memory figure was taken (the `rss_method` field).
const RSS_METHOD: &str = "child process: resident set growth from before Pipeline::new to after the publish of the FLOW_MODs, generated one at a time";

/// Exact rules in the ingest (plus the table-miss rule).
const RULES: u32 = 1_000_000;

/// Resident set size now.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

/// The memory probe (in the child): builds and publishes the pipeline of
/// `n` exact rules and the table-miss rule, prints the RSS growth in bytes.
///
/// With `PIPELINE_BENCH_RSS_STAGE` set, one part of that instead (for
/// the breakdown in docs/PERFORMANCE.md, issue 32): `rules` the rules
/// alone, built as a FLOW_MOD ADD builds them, in a `Vec`; `table` the
/// pipeline before any publication (rules, the table's index, the log of
/// changes); `two` the pipeline published with the second classifier
/// copy made too (a change published while a snapshot holds the first).
pub fn child(n: u32) {
    let stage = std::env::var("PIPELINE_BENCH_RSS_STAGE").unwrap_or_default();
    let rss0 = rss_bytes();
    if stage == "rules" {
        let rules: Vec<std::sync::Arc<pipeline::Rule>> = (0..n)
            .map(|i| {
                let fm = flows::exact_flow_mod(i);
                let key = compile(&fm.match_).expect("valid");
                std::sync::Arc::new(pipeline::Rule {
                    id: i,
                    table_id: 0,
                    priority: fm.priority,
                    table_miss: false,
                    learned: false,
                    packed: pipeline::lookup::matchkey::PackedKey::pack(&key),
                    match_: pipeline::lookup::rule::StoredMatch::new(&fm.match_),
                    instructions: fm.instructions.into_boxed_slice(),
                    cookie: 0,
                    idle_timeout: 0,
                    hard_timeout: 0,
                    flags: 0,
                    created_ns: 0,
                    modified_ns: 0,
                    counters: std::sync::Arc::new(pipeline::lookup::rule::Counters::new(1)),
                })
            })
            .collect();
        let rss1 = rss_bytes();
        std::hint::black_box(&rules);
        println!("{}", rss1.saturating_sub(rss0));
        return;
    }
    let mut p = flows::exact_pipeline(n);
    if stage == "table" {
        let rss1 = rss_bytes();
        std::hint::black_box(&p);
        println!("{}", rss1.saturating_sub(rss0));
        return;
    }
    let snap = p.snapshot();
    let mut second = None;
    if stage == "two" {
        p.flow_mod(&flows::exact_flow_mod(n), 0).expect("valid");
        second = Some(p.snapshot());
    }
    let rss1 = rss_bytes();
    std::hint::black_box((&p, &snap, &second));
    println!("{}", rss1.saturating_sub(rss0));
}

/// RSS growth per rule from the probe, None if it failed.
fn probe(n: u32) -> Option<f64> {
    let exe = std::env::current_exe().ok()?;
    let out = Command::new(exe)
        .args([CHILD_FLAG, &n.to_string()])
        .output()
        .ok()?;
    let bytes: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().ok()?;
    Some(bytes as f64 / (n as f64 + 1.0))
}

/// The row, a paragraph or one JSON line.
pub fn run(json: bool) {
    // First, while this process holds little: the child's numbers do not
    // depend on it, but the machine's free memory does.
    let rss_per_rule = probe(RULES).unwrap_or(f64::NAN);

    let c = big("ingest", RULES, 0);
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
    let t = Instant::now();
    let mut p = Pipeline::new(pipeline::Config {
        n_tables: 1,
        ..Default::default()
    });
    // As the daemon: what a big change leaves to free is freed on a
    // thread of its own.
    if let Some(d) = pipeline::garbage::on_thread("ingest-garbage") {
        p.set_disposer(d);
    }
    for fm in &mods {
        p.flow_mod(fm, 0).expect("valid");
    }
    let snap = p.snapshot();
    let add_s = t.elapsed().as_secs_f64();
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
    let cls_per_rule = p.classifier_bytes() as f64 / p.tables()[0].len() as f64;
    // The second classifier copy is made (by copying: once, at the first
    // change published while a snapshot holds the only one; a running
    // switch has made it long before), here rather than in the MODIFY.
    p.flow_mod(&mods[0], 0).expect("valid");
    let next = p.snapshot();
    drop(snap);
    let snap = next;
    // A MODIFY of every flow (output:2 -> 3 as ofbench's), then a DELETE
    // of every flow, each applied and published, with a worker still
    // holding the snapshot before (as a running switch's would).
    let t = Instant::now();
    let modify = FlowMod {
        command: ofp::FlowModCommand::Modify,
        instructions: vec![ofp::Instruction::ApplyActions(vec![ofp::Action::Output {
            port: 3,
            max_len: 0,
        }])],
        ..FlowMod::default()
    };
    let (snap2, modify_round_ms) = in_rounds(&mut p, &modify, snap);
    let modify_ms = t.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(&snap2);
    let t = Instant::now();
    let delete = FlowMod {
        command: ofp::FlowModCommand::Delete,
        table_id: ofp::port::TABLE_ALL,
        ..FlowMod::default()
    };
    let (snap3, delete_round_ms) = in_rounds(&mut p, &delete, snap2);
    // The workers move on: the next publication brings the other copy
    // up to date (what the delete left to free is freed by then).
    let t4 = Instant::now();
    p.flow_mod(&mods[0], 0).expect("valid");
    let snap4 = p.snapshot();
    let delete_round_ms = delete_round_ms.max(t4.elapsed().as_secs_f64() * 1e3);
    let delete_all_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(p.tables()[0].len(), 1);
    std::hint::black_box((&snap3, &snap4));
    drop((snap3, snap4, p));

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
    // JSON has no NaN: a failed probe is null.
    let rss = if rss_per_rule.is_finite() {
        format!("{rss_per_rule:.0}")
    } else {
        "null".to_string()
    };
    if json {
        println!(
            "{{\"config\": \"flow-adds-1m\", \"flow_adds_per_s\": {:.0}, \"seconds\": {add_s:.3}, \"delete_10pct_ms\": {del_ms:.1}, \"modify_all_ms\": {modify_ms:.1}, \"modify_round_max_ms\": {modify_round_ms:.1}, \"delete_all_ms\": {delete_all_ms:.1}, \"delete_round_max_ms\": {delete_round_ms:.1}, \"rss_bytes_per_rule\": {rss}, \"rss_method\": \"{RSS_METHOD}\", \"classifier_bytes_per_rule\": {cls_per_rule:.0}, \"classifier_only_seconds\": {cls_add_s:.3}}}",
            mods.len() as f64 / add_s
        );
    } else {
        println!(
            "\ningest: 1 000 000 FLOW_MOD adds applied and published in {add_s:.3} s ({:.0}/s); \
             10% deleted (strict) and published in {del_ms:.1} ms; \
             the rest modified (one MODIFY) in {modify_ms:.1} ms (longest round {modify_round_ms:.1} ms), \
             deleted (one DELETE) in {delete_all_ms:.1} ms (longest round {delete_round_ms:.1} ms)",
            mods.len() as f64 / add_s
        );
        println!("        (classifier alone: compile + insert in {cls_add_s:.3} s)");
        println!(
            "memory: RSS growth {rss} B/rule for the pipeline; of which classifier {cls_per_rule:.0} B/rule"
        );
        println!("        ({RSS_METHOD})");
    }
}

/// Applies `fm` as the agent does: a round at a time, each published
/// while the workers hold the snapshot of the round before (`held`, let
/// go once the next is out), what each round removed handed to the
/// disposer. The last snapshot, and the longest round in ms (the round
/// and its publication: what holds the control thread).
fn in_rounds(
    p: &mut Pipeline,
    fm: &FlowMod,
    mut held: std::sync::Arc<pipeline::Snapshot>,
) -> (std::sync::Arc<pipeline::Snapshot>, f64) {
    std::hint::black_box(&held);
    let t = Instant::now();
    let mut longest = 0f64;
    let mut round = |p: &mut Pipeline, removed: Vec<pipeline::Removed>, t: Instant| {
        p.disposer().dispose(removed);
        let next = p.snapshot();
        longest = longest.max(t.elapsed().as_secs_f64() * 1e3);
        next
    };
    match p.flow_mod_rounds(fm, None, 0).expect("valid") {
        pipeline::control::Applied::Done(removed) => held = round(p, removed, t),
        pipeline::control::Applied::Rounds(mut job) => {
            let mut t = t;
            loop {
                let (removed, done) = p.flow_mod_round(&mut job);
                held = round(p, removed, t);
                t = Instant::now();
                if done {
                    break;
                }
            }
        }
    }
    (held, longest)
}
