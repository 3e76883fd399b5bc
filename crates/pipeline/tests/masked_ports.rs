//! Masked transport ports (`tcp,tp_dst=0x40/0xfff0`, the Neutron
//! firewall's port ranges), which Open vSwitch takes and the spec's table
//! 11 does not: a packet matches when its port agrees on the mask's bits.

use ofp::text::parse_flow_mod;
use packet::wire::build;
use pipeline::{Config, Pipeline, PortState, Worker};

fn out_for(p: &mut Pipeline, frame: Vec<u8>) -> Vec<u32> {
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = frame;
    w.process(&snap, 1, &mut f, 1_000)
        .iter()
        .map(|o| o.port)
        .collect()
}

#[test]
fn a_port_range_as_a_mask_matches_the_range_and_nothing_else() {
    let mut p = Pipeline::new(Config::default());
    for n in [1, 2, 3, 4] {
        p.set_port(PortState::up(n));
    }
    for f in [
        "priority=10,tcp,tp_dst=0x40/0xfff0,actions=output:2",
        "priority=10,udp,udp_src=0x1000/0xf000,actions=output:3",
        "priority=0,actions=output:4",
    ] {
        p.flow_mod(&parse_flow_mod(f).unwrap(), 0).unwrap();
    }
    let tcp = |dst: u16| build::sample_tcp(dst, 0x02);
    let udp = |sport: u16| {
        let t = build::Transport::Udp { sport, dport: 53 };
        let (a, b) = (build::Ip::V4([10, 0, 0, 1]), build::Ip::V4([10, 0, 0, 2]));
        let body = build::ip(a, b, &build::IpFields::default(), &t, b"q");
        build::ethernet(2, 1, None, 0x0800, &body)
    };
    for port in 0x40..=0x4f {
        assert_eq!(out_for(&mut p, tcp(port)), vec![2], "tcp {port:#x}");
    }
    for port in [0x3f, 0x50, 0x140, 80] {
        assert_eq!(out_for(&mut p, tcp(port)), vec![4], "tcp {port:#x}");
    }
    assert_eq!(out_for(&mut p, udp(0x1abc)), vec![3]);
    assert_eq!(out_for(&mut p, udp(0x2abc)), vec![4]);
}
