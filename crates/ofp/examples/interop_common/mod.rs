//! Helpers shared by the cross-check examples (`ofp-interop`,
//! `of10-interop`, `of1x-interop`): hex in and out, the summary of a MAC
//! address and of a match as os-ken's 1.3-and-later classes name them, and
//! the corpus shorthands. Each example includes this file with
//! `#[path = "interop_common/mod.rs"] mod common;` (a subdirectory, so
//! cargo does not build it as an example of its own) and keeps its
//! version-specific summaries to itself.

// Not every example uses every helper.
#![allow(dead_code)]

use serde_json::{json, Value};

use ofp::oxm::{Match, MatchEntry};
use ofp::port::{port_features, port_state, PortDesc};
use ofp::text::parse_match;
use ofp::wire::FixedStr;

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len())
        .step_by(2)
        .map(|i| s.get(i..i + 2).and_then(|b| u8::from_str_radix(b, 16).ok()))
        .collect()
}

pub fn mac(a: &[u8; 6]) -> String {
    a.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

pub fn match_summary(m: &Match) -> Value {
    Value::Array(
        m.entries
            .iter()
            .map(|e| match e {
                MatchEntry::Basic(o) => json!([
                    o.field.name(),
                    format!("{:#x}", o.value),
                    o.mask.map(|m| format!("{m:#x}"))
                ]),
                MatchEntry::Other(o) => json!(["other", o.class, o.field]),
            })
            .collect(),
    )
}

/// A match in ovs-ofctl text, for the corpora.
pub fn m(s: &str) -> Match {
    parse_match(s).expect("corpus match")
}

/// A live 10 Gb/s copper port `n` that advertises nothing.
pub fn port(n: u32, name: &str) -> PortDesc {
    PortDesc {
        port_no: n,
        hw_addr: [2, 0, 0, 0, 0, n as u8],
        name: FixedStr::new(name),
        config: 0,
        state: port_state::LIVE,
        curr: port_features::F_10GB_FD | port_features::COPPER,
        advertised: 0,
        supported: port_features::F_10GB_FD,
        peer: 0,
        curr_speed: 10_000_000,
        max_speed: 10_000_000,
    }
}
