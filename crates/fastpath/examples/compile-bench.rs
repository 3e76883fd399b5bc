//! How long compiling and loading a table takes: for each rule file given
//! (ovs-ofctl flow syntax, one flow per line, as `sluice-bench lab-rules`
//! and `sluice-bench flows` write them), installs the rules in a pipeline,
//! compiles table 0 for ingress ports 1 and 2 (egress 1 and 2), then, as
//! root, creates the maps and loads the programs (the kernel's verifier
//! included). Prints one JSON object per file and round.
//!
//! ```text
//! cargo run --release -p fastpath --example compile-bench -- [--rounds N] FILE...
//! ```
//!
//! `scripts/xdp_compile_bench.sh` makes the standard files (20, 200 and
//! 20 000 rules) and runs this.

use std::time::Instant;

#[path = "../tests/common/load.rs"]
mod load;

use fastpath::compile::{compile, Options};
use pipeline::{Config, Pipeline, PortState};

fn run(path: &str, round: u32) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let mut p = Pipeline::new(Config::default());
    for port in 1..=32 {
        p.set_port(PortState::up(port));
    }
    let mut rules = 0;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fm = ofp::text::parse_flow_mod(line).map_err(|e| format!("{path}:{}: {e}", n + 1))?;
        p.flow_mod(&fm, 0)
            .map_err(|e| format!("{path}:{}: {e:?}", n + 1))?;
        rules += 1;
    }
    let snap = p.snapshot();
    let t = Instant::now();
    let c = compile(&snap, &[1, 2], &[1, 2], 1, &Options::default()).map_err(|e| e.to_string())?;
    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let loaded = load::load(&c).map_err(|e| e.to_string())?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    let insns: Vec<String> = c
        .programs
        .iter()
        .map(|p| p.code.insns.len().to_string())
        .collect();
    let entries: usize = c.tables.iter().map(|t| t.len()).sum();
    // The lab's own traffic: TCP 10.213.77.1 -> 10.213.77.2, from port 1
    // (it misses every rule but `in_port=1 -> 2`), 64-byte frame.
    let (code, _, ns) = loaded.progs[0]
        .test_run_repeat(&lab_frame(), 1_000_000)
        .map_err(|e| e.to_string())?;
    drop(loaded);
    Ok(format!(
        "{{\"file\":\"{path}\",\"round\":{round},\"rules\":{rules},\"compile_ms\":{compile_ms:.2},\"load_ms\":{load_ms:.2},\"insns_per_port\":[{}],\"hash_tables\":{},\"hash_entries\":{entries},\"rules_up\":{},\"lab_frame_ns\":{ns},\"lab_frame_verdict\":{code}}}",
        insns.join(","),
        c.tables.len(),
        c.up_rules
    ))
}

fn lab_frame() -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&[10, 213, 77, 1, 10, 213, 77, 2]);
    f.extend_from_slice(&[
        0xc3, 0x50, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0x01, 0, 0, 0, 0, 0,
    ]);
    f.resize(60, 0);
    f
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut rounds = 3;
    if let Some(i) = args.iter().position(|a| a == "--rounds") {
        rounds = match args.get(i + 1).and_then(|s| s.parse().ok()) {
            Some(n) => n,
            None => {
                eprintln!("--rounds: a number of rounds");
                std::process::exit(2);
            }
        };
        args.drain(i..i + 2);
    }
    if args.is_empty() {
        eprintln!("usage: compile-bench [--rounds N] FILE...");
        std::process::exit(2);
    }
    for round in 1..=rounds {
        for f in &args {
            match run(f, round) {
                Ok(line) => println!("{line}"),
                Err(e) => {
                    eprintln!("compile-bench: {e}");
                    std::process::exit(1);
                }
            }
        }
    }
}
