//! What NORMAL costs a worker per frame: a bridge of memory ports running
//! `actions=normal`, its worker driven round by round, only `poll_once`
//! timed. Not a test of correctness and ignored by default; run it in
//! release mode to compare two versions of the NORMAL path:
//!
//!     cargo test --release -p datapath --test normal_speed -- --ignored --nocapture

use std::time::{Duration, Instant};

use datapath::{Backend, Bridge, BridgeWorker, PortSpec};
use netdev::memory::{MemoryPort, Wire};
use packet::wire::build as wb;
use packet::wire::ethernet::Addrs;
use pipeline::{Config, Pipeline, PortState};

const PORTS: u32 = 4;
const BATCH: usize = 32;
const ROUNDS: usize = 20_000;

fn mac(b: u8) -> u64 {
    0x0200_0000_0000 | b as u64
}

/// 64 bytes from `src`, of EtherType IPv4 but zeros after the header.
fn frame_to(dst: u64, src: u8) -> Vec<u8> {
    let mut f = wb::ethernet(dst, mac(src), None, 0x0800, &[]);
    f.resize(64, 0);
    f
}

fn frame(dst: u8, src: u8) -> Vec<u8> {
    frame_to(mac(dst), src)
}

fn broadcast(src: u8) -> Vec<u8> {
    frame_to(0xffff_ffff_ffff, src)
}

/// The bridge's worker and its ports' wires, ports 1..=PORTS.
fn bridge() -> (Bridge, BridgeWorker, Vec<Wire>) {
    let mut p = Pipeline::new(Config::default());
    for no in 1..=PORTS {
        p.set_port(PortState::up(no));
    }
    p.flow_mod(
        &ofp::text::parse_flow_mod("priority=0,actions=normal").unwrap(),
        0,
    )
    .unwrap();
    let mut bridge = Bridge::new("br0", 1, p.snapshot(), false).unwrap();
    let worker = bridge.take_workers().remove(0);
    let mut wires = Vec::new();
    for no in 1..=PORTS {
        let (dev, wire) = MemoryPort::new(&format!("m{no}"));
        let spec = PortSpec::new(no, &format!("m{no}"), Backend::AfPacket { rings: true });
        bridge.add_port_devices(spec, vec![Box::new(dev)]);
        wires.push(wire);
    }
    (bridge, worker, wires)
}

/// ns per frame through `poll_once`: every port sends a batch a round to
/// the next port's address (learned), one round in 8 broadcasts; `tag`
/// may rewrite port i's frames (a trunk's come tagged).
fn measure(
    worker: &mut BridgeWorker,
    wires: &[Wire],
    tag: &dyn Fn(Vec<u8>, usize) -> Vec<u8>,
) -> f64 {
    let mut now = 1_000_000_000u64;
    // Every address learned first.
    for (i, w) in wires.iter().enumerate() {
        w.inject(&tag(broadcast(i as u8 + 1), i));
        now += 1_000;
        worker.poll_once(now);
    }
    wires.iter().for_each(|w| drop(w.take_sent()));
    let unicast: Vec<Vec<u8>> = (0..PORTS as u8)
        .map(|i| tag(frame((i + 1) % PORTS as u8 + 1, i + 1), i as usize))
        .collect();
    let flood: Vec<Vec<u8>> = (0..PORTS as u8)
        .map(|i| tag(broadcast(i + 1), i as usize))
        .collect();
    let mut spent = Duration::ZERO;
    let mut frames = 0u64;
    for r in 0..ROUNDS {
        for (i, w) in wires.iter().enumerate() {
            let f = if r % 8 == 7 { &flood[i] } else { &unicast[i] };
            for _ in 0..BATCH {
                w.inject(f);
            }
            frames += BATCH as u64;
        }
        now += 1_000;
        let t = Instant::now();
        worker.poll_once(now);
        spent += t.elapsed();
        let sent: usize = wires.iter().map(|w| w.take_sent().len()).sum();
        assert!(sent > 0);
    }
    spent.as_nanos() as f64 / frames as f64
}

#[test]
#[ignore]
fn normal_ns_per_frame() {
    let (_bridge, mut worker, wires) = bridge();
    let mut runs: Vec<f64> = (0..5)
        .map(|_| measure(&mut worker, &wires, &|f, _| f))
        .collect();
    runs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "NORMAL, no VLAN configuration: {:.1} ns/frame (median of 5; runs {:?})",
        runs[2],
        runs.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>()
    );
}

#[test]
#[ignore]
fn normal_with_vlans_ns_per_frame() {
    // Ports 1-3 access ports of VLAN 10, 4 a trunk: every frame from or to
    // port 4 is tagged or untagged on the way.
    let (mut bridge, mut worker, wires) = bridge();
    for no in 1..PORTS {
        bridge.set_port_vlan(
            no,
            datapath::VlanConfig::check(Some(10), &[], None).unwrap(),
        );
    }
    bridge.set_port_vlan(
        PORTS,
        datapath::VlanConfig::check(None, &[10], None).unwrap(),
    );
    // Port 4's frames come tagged.
    let tag = |f: Vec<u8>, i: usize| {
        if i == PORTS as usize - 1 {
            let a = Addrs::at(&f, 0).unwrap();
            wb::ethernet(a.dst(), a.src(), Some(10), 0x0800, &f[14..])
        } else {
            f
        }
    };
    let mut runs: Vec<f64> = (0..5).map(|_| measure(&mut worker, &wires, &tag)).collect();
    runs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "NORMAL, access ports and a trunk: {:.1} ns/frame (median of 5; runs {:?})",
        runs[2],
        runs.iter().map(|x| format!("{x:.1}")).collect::<Vec<_>>()
    );
}
