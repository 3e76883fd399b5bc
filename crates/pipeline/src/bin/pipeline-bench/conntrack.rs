//! The conntrack section (issue 31, point 5): what a stateful firewall
//! costs per packet, with many connections in the tracker, and what a new
//! connection and its memory cost.
//!
//! The firewall is the Open vSwitch conntrack tutorial's (port 1 opens,
//! port 2 answers):
//!
//! ```text
//! table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1)
//! table=1,in_port=1,ip,ct_state=+trk+new,actions=ct(commit),output:2
//! table=1,in_port=1,ip,ct_state=+trk+est,actions=output:2
//! table=1,in_port=2,ip,ct_state=+trk+est,actions=output:1
//! ```
//!
//! and the untracked baseline sends the same packets by one flow
//! (`table=0,ip,in_port=1,actions=output:2`). Rows, for N connections
//! (1 000 and 1 000 000; `--quick`: 1 000 and 100 000):
//!
//! * `new`: N SYNs of distinct 5-tuples through the firewall, each
//!   committed (one pass, timed whole: ns per new connection);
//! * `established`: the originator's ACKs of those N connections in a
//!   random order through the firewall, against the same ACKs through
//!   the untracked flow, in alternating rounds (the median ns per packet
//!   of each side's batches, and the median of the rounds' differences);
//! * memory: the tracker's heap bytes per connection, and the process's
//!   resident growth per connection over the establishing pass.
//!
//! One worker on one core, no contention: the cost of tracking itself.

use conntrack::build::{self, Ip, Seg};
use ofp::text::parse_flow_mod;
use pipeline::{Config, Pipeline, PortState, Worker};

use crate::ingest::rss_bytes;
use crate::measure::{delta, Plan};
use crate::traffic::Rng;

const FIREWALL: [&str; 4] = [
    "table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1)",
    "table=1,in_port=1,ip,ct_state=+trk+new,actions=ct(commit),output:2",
    "table=1,in_port=1,ip,ct_state=+trk+est,actions=output:2",
    "table=1,in_port=2,ip,ct_state=+trk+est,actions=output:1",
];
const UNTRACKED: [&str; 1] = ["table=0,priority=100,ip,in_port=1,actions=output:2"];

/// Bytes of each frame: Ethernet, IPv4, TCP.
pub const LEN: usize = 54;

fn pipeline(flows: &[&str]) -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 4,
        ct_limits: conntrack::Limits {
            total: 0,
            zone_default: 0,
        },
        ..Config::default()
    });
    p.set_port(PortState::up(1));
    p.set_port(PortState::up(2));
    for f in flows {
        p.flow_mod(&parse_flow_mod(f).expect("bench flow"), 0)
            .expect("bench flow installs");
    }
    p
}

/// Connection `i`'s frame from the originator with `flags`.
fn frame(i: u32, flags: u8, seq: u32) -> Vec<u8> {
    let src = Ip::V4([10, 100 + (i >> 24) as u8, (i >> 16) as u8, (i >> 8) as u8]);
    let dst = Ip::V4([10, 200, 0, 1 + (i & 0x3f) as u8]);
    let ip = build::tcp(
        src,
        dst,
        &Seg {
            sport: 1024 + ((i & 0xff) as u16) * 8 + (i >> 29) as u16,
            dport: 80,
            seq,
            ack: if flags & 0x10 != 0 { 5001 } else { 0 },
            flags,
            win: 64000,
            wscale: None,
        },
        0,
    );
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    f.extend_from_slice(&ip);
    f
}

fn pool(n: u32, flags: u8, seq: u32) -> Vec<u8> {
    let mut v = Vec::with_capacity(n as usize * LEN);
    for i in 0..n {
        let f = frame(i, flags, seq);
        debug_assert_eq!(f.len(), LEN);
        v.extend_from_slice(&f);
    }
    v
}

/// The firewall with `n` connections established, and the originator's
/// ACK of each (`LEN` bytes apiece): for `--probe ct_established`.
pub fn established(n: u32) -> (Pipeline, Vec<u8>) {
    let mut fw = pipeline(&FIREWALL);
    let snap = fw.snapshot();
    let mut w = Worker::new(0);
    let mut buf = Vec::with_capacity(LEN);
    for i in 0..n {
        for (port, f) in [(1, frame(i, 0x02, 1000)), (2, reply(i))] {
            buf.clear();
            buf.extend_from_slice(&f);
            assert_eq!(w.process(&snap, port, &mut buf, 1_000_000).len(), 1);
        }
    }
    (fw, pool(n, 0x10, 1001))
}

/// The untracked pipeline (for `--probe ct_untracked`).
pub fn untracked() -> Pipeline {
    pipeline(&UNTRACKED)
}

/// Connection `i`'s SYN-ACK from the responder.
fn reply(i: u32) -> Vec<u8> {
    let mut f = frame(i, 0x12, 5000);
    let (s, d) = (f[26..30].to_vec(), f[30..34].to_vec());
    f[26..30].copy_from_slice(&d);
    f[30..34].copy_from_slice(&s);
    let (sp, dp) = (f[34..36].to_vec(), f[36..38].to_vec());
    f[34..36].copy_from_slice(&dp);
    f[36..38].copy_from_slice(&sp);
    f[42..46].copy_from_slice(&1001u32.to_be_bytes());
    f
}

pub fn run(plan: Plan, quick: bool, json: bool) {
    let sizes: [u32; 2] = if quick {
        [1_000, 100_000]
    } else {
        [1_000, 1_000_000]
    };
    if !json {
        println!(
            "{:>9} {:>10} {:>12} {:>12} {:>10} {:>12} {:>12}",
            "conns",
            "new_ns",
            "tracked_ns",
            "untracked_ns",
            "delta_ns",
            "heap_B/conn",
            "rss_B/conn"
        );
    }
    for n in sizes {
        let mut fw = pipeline(&FIREWALL);
        let snap = fw.snapshot();
        let mut w = Worker::new(0);
        let syns = pool(n, 0x02, 1000);
        let rss0 = rss_bytes();
        let t = std::time::Instant::now();
        let mut buf = Vec::with_capacity(LEN);
        for i in 0..n as usize {
            buf.clear();
            buf.extend_from_slice(&syns[i * LEN..(i + 1) * LEN]);
            let outs = w.process(&snap, 1, &mut buf, 1_000_000);
            debug_assert_eq!(outs.len(), 1);
        }
        let new_ns = t.elapsed().as_nanos() as f64 / n as f64;
        let rss = rss_bytes().saturating_sub(rss0) as f64 / n as f64;
        drop(syns);
        assert_eq!(fw.conntrack().len(), n as u64, "every SYN committed");
        let heap = fw.conntrack().heap_bytes() as f64 / n as f64;
        // The responder's SYN-ACKs make the connections established.
        let mut replies = Vec::with_capacity(n as usize * LEN);
        for i in 0..n {
            replies.extend_from_slice(&reply(i));
        }
        for i in 0..n as usize {
            buf.clear();
            buf.extend_from_slice(&replies[i * LEN..(i + 1) * LEN]);
            let outs = w.process(&snap, 2, &mut buf, 2_000_000);
            assert_eq!(outs.len(), 1, "the reply passes");
        }
        drop(replies);
        // The originator's ACKs, in a random order.
        let acks = pool(n, 0x10, 1001);
        let mut order: Vec<u32> = (0..n).collect();
        Rng::new(7).shuffle(&mut order);
        let mut plain = pipeline(&UNTRACKED);
        let plain_snap = plain.snapshot();
        let mut pw = Worker::new(0);
        let batch = (n as usize).min(100_000);
        let mut at = 0usize;
        let (mut tracked_ns, mut untracked_ns) = (Vec::new(), Vec::new());
        let st = delta(plan, batch, |tracked| {
            let t0 = std::time::Instant::now();
            let mut acc = 0u64;
            for k in 0..batch {
                let i = order[(at + k) % order.len()] as usize;
                buf.clear();
                buf.extend_from_slice(&acks[i * LEN..(i + 1) * LEN]);
                acc += if tracked {
                    w.process(&snap, 1, &mut buf, 3_000_000).len() as u64
                } else {
                    pw.process(&plain_snap, 1, &mut buf, 3_000_000).len() as u64
                };
            }
            let ns = t0.elapsed().as_nanos() as f64 / batch as f64;
            if tracked {
                tracked_ns.push(ns);
                at = (at + batch) % order.len();
            } else {
                untracked_ns.push(ns);
            }
            acc
        });
        assert_eq!(fw.conntrack().len(), n as u64);
        let median = |mut v: Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        let (tracked, untracked) = (median(tracked_ns), median(untracked_ns));
        if json {
            println!(
                "{{\"section\": \"conntrack\", \"conns\": {n}, \"new_ns\": {new_ns:.1}, \"tracked_ns\": {tracked:.1}, \"untracked_ns\": {untracked:.1}, \"delta_ns\": {:.1}, \"delta_min\": {:.1}, \"delta_max\": {:.1}, \"heap_bytes_per_conn\": {heap:.0}, \"rss_bytes_per_conn\": {rss:.0}}}",
                st.median, st.min, st.max
            );
        } else {
            println!(
                "{n:>9} {new_ns:>10.1} {tracked:>12.1} {untracked:>12.1} {:>10.1} {heap:>12.0} {rss:>12.0}",
                st.median
            );
        }
    }
}
