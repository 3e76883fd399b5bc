//! What the pipeline's integration tests share: pipelines built from
//! flows in Open vSwitch's text syntax.

// Each test binary uses some of these.
#![allow(dead_code)]

use ofp::text::parse_flow_mod;
use pipeline::{Config, Pipeline, PortState};

fn empty(n_tables: u8, ports: u32) -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables,
        ..Config::default()
    });
    for n in 1..=ports {
        p.set_port(PortState::up(n));
    }
    p
}

/// `n_tables` tables, ports 1 to `ports` up, and `flows` added in order;
/// a flow that does not parse, validate or apply panics, naming it.
pub fn pipeline(n_tables: u8, ports: u32, flows: &[&str]) -> Pipeline {
    let mut p = empty(n_tables, ports);
    for f in flows {
        let fm = parse_flow_mod(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        ofp::msg::Message::FlowMod(fm.clone())
            .validate()
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        p.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    p
}

/// The same for random flows (property tests): a flow that does not
/// validate or apply is left out.
pub fn pipeline_of_valid(n_tables: u8, ports: u32, flows: &[String]) -> Pipeline {
    let mut p = empty(n_tables, ports);
    for f in flows {
        let fm = parse_flow_mod(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        if ofp::msg::Message::FlowMod(fm.clone()).validate().is_ok() {
            let _ = p.flow_mod(&fm, 0);
        }
    }
    p
}

/// A TCP/IPv4 frame between hosts `src` and `dst` (MACs 02:..:src and
/// 02:..:dst, addresses 10.0.0.src and 10.0.dst_net.dst) to `dport`.
pub fn tcp_frame(src: u8, dst_net: u8, dst: u8, sport: u16, dport: u16) -> Vec<u8> {
    packet::wire::build::tcp_v4(
        [2, 0, 0, 0, 0, src],
        [2, 0, 0, 0, 0, dst],
        [10, 0, 0, src],
        [10, 0, dst_net, dst],
        sport,
        dport,
        2,
    )
}
