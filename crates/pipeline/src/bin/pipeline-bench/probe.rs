//! `--probe SCENARIO PACKETS`: runs PACKETS packets of one scenario,
//! untimed, and prints how many outputs they made. For instruction counts
//! under callgrind (`scripts/bench/icount.sh` runs two packet counts and
//! takes the difference): exact and repeatable where a timing on this
//! 2-core machine is not, so a change to the fast path can be compared
//! with the commit before it while other work runs.
//!
//! Scenarios:
//! * `cache_hit`, `group_select`, `set_field_ipv4_dst`,
//!   `set_field_tcp_dst`: the stages rule set (`stages.rs`), one TCP flow,
//!   its rule `output:2`, a select group of 4 buckets, or a rewrite of the
//!   IPv4 destination or the TCP destination port (checksums following)
//!   before `output:2`;
//! * `tables-flat`, `tables-br-int-resubmit`, `tables-br-int-goto`: the
//!   tables section's pipelines (`tables.rs`) and its 992 packets, in turn;
//! * `ct_established`, `ct_untracked`: the conntrack section's firewall
//!   (`conntrack.rs`) with 1 000 connections established, their
//!   originator's ACKs in turn; the same ACKs through one plain flow.

use pipeline::Worker;

/// The scenarios `--probe` knows.
pub const SCENARIOS: &[&str] = &[
    "cache_hit",
    "group_select",
    "set_field_ipv4_dst",
    "set_field_tcp_dst",
    "tables-flat",
    "tables-br-int-resubmit",
    "tables-br-int-goto",
    "ct_established",
    "ct_untracked",
];

/// Runs `packets` packets of `scenario`.
pub fn run(scenario: &str, packets: u64) -> Result<(), String> {
    let mut w = Worker::new(0);
    let mut outs = 0u64;
    if let Some(which) = scenario.strip_prefix("ct_") {
        let (mut fw, acks) = crate::conntrack::established(1000);
        let mut plain = crate::conntrack::untracked();
        let snap = match which {
            "established" => fw.snapshot(),
            "untracked" => plain.snapshot(),
            _ => {
                return Err(format!(
                    "unknown scenario {scenario:?}: one of {SCENARIOS:?}"
                ))
            }
        };
        let len = crate::conntrack::LEN;
        let n = acks.len() / len;
        let mut buf = Vec::with_capacity(len);
        for i in 0..packets as usize {
            buf.clear();
            buf.extend_from_slice(&acks[(i % n) * len..(i % n + 1) * len]);
            outs += w.process(&snap, 1, &mut buf, 3_000_000).len() as u64;
        }
    } else if let Some(variant) = scenario.strip_prefix("tables-") {
        let snap = crate::tables::pipeline(variant).snapshot();
        let mut frames = crate::tables::traffic();
        let n = frames.len();
        for i in 0..packets as usize {
            let (port, f) = &mut frames[i % n];
            outs += w.process(&snap, *port, f, 0).len() as u64;
        }
    } else {
        let actions = match scenario {
            "cache_hit" => "output:2",
            "group_select" => "group:1",
            "set_field_ipv4_dst" => "set_field:10.0.0.9->ip_dst,output:2",
            "set_field_tcp_dst" => "set_field:8080->tcp_dst,output:2",
            _ => {
                return Err(format!(
                    "unknown scenario {scenario:?}: one of {SCENARIOS:?}"
                ))
            }
        };
        let snap = crate::stages::rig(actions);
        let pristine = crate::stages::test_frame(false);
        let mut frame = pristine.clone();
        // A rewrite changes the frame: each of its packets starts from the
        // same bytes (the copy is counted in those scenarios only).
        let reset = scenario.starts_with("set_field");
        for _ in 0..packets {
            if reset {
                frame.copy_from_slice(&pristine);
            }
            outs += w
                .process(&snap, 1, std::hint::black_box(&mut frame), 0)
                .len() as u64;
        }
    }
    println!("{outs}");
    Ok(())
}
