//! Packets through the pipeline: any frame, on any port, through flows that
//! between them edit every field and push/pop every header: no panic, and
//! the flow key extractor's offsets always lie inside the frame.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use pipeline::{Config, Pipeline, PortState, Snapshot, Worker};

include!("../../crates/pipeline/tests/edit_flows.rs");

fn snapshot() -> Arc<Snapshot> {
    static SNAP: OnceLock<Arc<Snapshot>> = OnceLock::new();
    SNAP.get_or_init(|| {
        let mut p = Pipeline::new(Config { n_tables: 8, ..Config::default() });
        for n in 1..=4 {
            p.set_port(PortState::up(n));
        }
        let mut g = ofp::text::parse_group_mod("group_id=1,type=all,bucket=pop_vlan,output:3,bucket=push_mpls:0x8847,output:4").unwrap();
        g.command = ofp::msg::group::GroupModCommand::Add;
        p.group_mod(&g, 0).unwrap();
        for f in EDIT_EVERYTHING {
            p.flow_mod(&ofp::text::parse_flow_mod(f).unwrap(), 0).unwrap();
        }
        p.invalid_ttl_to_controller = true;
        p.snapshot()
    })
    .clone()
}

fuzz_target!(|data: &[u8]| {
    let mut key = packet::FlowKey::default();
    let off = packet::extract(data, 1, &mut key);
    for o in [off.vlan, off.eth_type, off.l2_5, off.l3, off.l4].into_iter().flatten() {
        assert!((o as usize) < data.len());
    }
    let snap = snapshot();
    let mut w = Worker::new(0);
    for port in [1u32, 2, 5] {
        let mut f = data.to_vec();
        w.process(&snap, port, &mut f, 7);
    }
});
