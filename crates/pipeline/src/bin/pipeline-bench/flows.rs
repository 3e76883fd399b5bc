//! The exact 5-tuple flows of the `1m` rule set, one at a time.
//!
//! Rule `i` matches one TCP/IPv4 5-tuple arriving on port 1; its frame is
//! the one packet that hits it. The configs table (`big` in `rules.rs`),
//! the scaling section and the ingest memory probe all use these, and the
//! last two generate them as they go rather than holding a million
//! `Match`es or `FlowMod`s: memory they hold would sit in the caches and
//! in the RSS being measured.

use ofp::msg::flow::FlowMod;
use ofp::oxm::{Match, OxmField as F};
use pipeline::{Pipeline, PortState};

use crate::rules::{actions_for, exact, frame, m};

/// Every exact rule's priority.
pub const EXACT_PRIORITY: u16 = 1000;
/// The port every exact flow arrives on.
pub const IN_PORT: u32 = 1;
/// The port every exact rule outputs to.
pub const OUT_PORT: u32 = 3;

/// Flow `i`'s addresses and ports: (src, dst, sport, dport).
fn tuple(i: u32) -> (u32, u32, u16, u16) {
    (
        0x0a00_0000 | i,
        0x1400_0000 | (i.wrapping_mul(7919) & 0xffffff),
        (i % 50000) as u16 + 1024,
        80,
    )
}

/// Rule `i`'s match.
pub fn exact_match(i: u32) -> Match {
    let (src, dst, sp, dp) = tuple(i);
    m().with(exact(F::InPort, IN_PORT as u128))
        .with(exact(F::EthType, 0x800))
        .with(exact(F::IpProto, 6))
        .with(exact(F::Ipv4Src, src as u128))
        .with(exact(F::Ipv4Dst, dst as u128))
        .with(exact(F::TcpSrc, sp as u128))
        .with(exact(F::TcpDst, dp as u128))
}

/// The 64-byte frame that hits rule `i`.
pub fn exact_frame(i: u32) -> Vec<u8> {
    let (src, dst, sp, dp) = tuple(i);
    frame(None, 0x0200_0000_0001, src, dst, 6, sp, dp)
}

/// Rule `i` as a FLOW_MOD add (the same instructions as `big`'s rule `i`).
pub fn exact_flow_mod(i: u32) -> FlowMod {
    FlowMod {
        priority: EXACT_PRIORITY,
        match_: exact_match(i),
        instructions: actions_for(i, OUT_PORT),
        ..FlowMod::default()
    }
}

/// The table-miss rule (drop) that ends every rule set.
pub fn table_miss() -> FlowMod {
    FlowMod {
        priority: 0,
        ..FlowMod::default()
    }
}

/// A one-table pipeline with ports 1-3 up, exact rules `0..n` and the
/// table-miss rule, added one FLOW_MOD at a time.
pub fn exact_pipeline(n: u32) -> Pipeline {
    exact_pipeline_for(n, 1)
}

/// [`exact_pipeline`] with counter slots for `workers` workers.
pub fn exact_pipeline_for(n: u32, workers: usize) -> Pipeline {
    let mut p = Pipeline::new(pipeline::Config {
        n_tables: 1,
        workers,
        ..Default::default()
    });
    for port in 1..=OUT_PORT {
        p.set_port(PortState::up(port));
    }
    for i in 0..n {
        p.flow_mod(&exact_flow_mod(i), 0).expect("valid bench flow");
    }
    p.flow_mod(&table_miss(), 0).expect("valid bench flow");
    p
}
