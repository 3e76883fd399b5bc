//! Meters through the pipeline, on the os-ken switch test tool's meter
//! cases (of13/meter/02_DSCP_REMARK_*): a DSCP_REMARK band remarks exactly
//! the traffic above its rate (AF21 becomes AF22), the rest passes as it
//! came, and headers stay valid. Time is fake: the arithmetic is checked,
//! not the clock.

use ofp::msg::meter::MeterModCommand;
use ofp::text::{parse_flow_mod, parse_meter_mod};
use packet::checksum;
use packet::wire::build::{self as wb, Ip, IpFields, Transport};
use pipeline::{Config, Pipeline, PortState, Worker};

const SRC: [u8; 6] = [0x12, 0x11, 0x11, 0x11, 0x11, 0x11];
const DST: [u8; 6] = [0x22; 6];
const MS: u64 = 1_000_000;
const S: u64 = 1_000_000_000;
/// The tool's throughput window.
const SECONDS: u64 = 30;

/// The tool's 1500-byte `ethernet/ipv4(proto=6, tos=TOS)/tcp`, or IPv6
/// with that traffic class: TCP 1 to 2, window 1000, padded with 0x11.
fn tcp_tos(src: Ip, dst: Ip, tos: u8) -> Vec<u8> {
    let t = Transport::Tcp {
        sport: 1,
        dport: 2,
        seq: 0,
        ack: 0,
        flags: 0,
        window: 1000,
        options: &[],
    };
    let fields = IpFields {
        tos,
        ..IpFields::default()
    };
    let headers = if src.is_v6() { 74 } else { 54 };
    let ip = wb::ip(src, dst, &fields, &t, &[0x11; 1500][headers..]);
    let ty = if src.is_v6() { 0x86dd } else { 0x0800 };
    let f = wb::ethernet(wb::mac(DST), wb::mac(SRC), None, ty, &ip);
    assert_eq!(f.len(), 1500);
    f
}

fn ipv4_tos(tos: u8) -> Vec<u8> {
    tcp_tos(Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]), tos)
}

/// DSCP 18 (AF21).
fn ipv4_dscp18() -> Vec<u8> {
    ipv4_tos(72)
}

/// The IPv6 one (traffic class 72).
fn ipv6_dscp18() -> Vec<u8> {
    tcp_tos(Ip::V6([1; 16]), Ip::V6([2; 16]), 72)
}

fn dscp(f: &[u8]) -> u8 {
    match f[12..14] {
        [0x08, 0x00] => f[15] >> 2,
        [0x86, 0xdd] => (((f[14] & 0x0f) << 4) | (f[15] >> 4)) >> 2,
        _ => panic!("not IP"),
    }
}

fn pipeline(meter: &str) -> Pipeline {
    let mut p = Pipeline::new(Config::default());
    for n in 1..=3 {
        p.set_port(PortState::up(n));
    }
    let mut m = parse_meter_mod(meter).unwrap();
    m.command = MeterModCommand::Add;
    p.meter_mod(&m, 0).unwrap();
    p.flow_mod(
        &parse_flow_mod("in_port=1,actions=meter:1,output:2").unwrap(),
        0,
    )
    .unwrap();
    p
}

/// Bytes and packets that left port 2, by DSCP (18 as sent, 20 remarked).
#[derive(Debug)]
struct Out {
    bytes: [u64; 64],
    packets: [u64; 64],
}

/// Sends `frame` as the tool does: every 10 ms, the whole packets its
/// running total of `pktps / 100` a tick has reached, back to back, for
/// the tool's 30 s.
fn send(p: &mut Pipeline, frame: &[u8], pktps: u64) -> Out {
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut out = Out {
        bytes: [0; 64],
        packets: [0; 64],
    };
    for k in 0..SECONDS * 100 {
        let now = S + k * 10 * MS;
        for _ in 0..(k + 1) * pktps / 100 - k * pktps / 100 {
            let mut f = frame.to_vec();
            let outs = w.process(&snap, 1, &mut f, now).to_vec();
            for o in outs.iter().filter(|o| o.port == 2) {
                let sent = o.data.as_deref().unwrap_or(&f);
                if sent[12..14] == [0x08, 0x00] {
                    assert_eq!(checksum::internet(&sent[14..34]), 0, "IPv4 header checksum");
                }
                let d = dscp(sent) as usize;
                out.bytes[d] += sent.len() as u64;
                out.packets[d] += 1;
            }
        }
    }
    out
}

fn near(got: u64, want: f64, pct: f64) -> bool {
    (got as f64 - want).abs() <= want * pct / 100.0
}

/// 02_DSCP_REMARK_00_KBPS_{00_1M,01_10M,02_100M}: 1500-byte frames at
/// 175, 1750, 17 500 packets/s into a 1, 10, 100 Mb/s band (no flags in
/// the file: os-ken's default OFPMF_KBPS, no burst). The band's rate
/// (1000 bits per kb) leaves with DSCP 18, to within 1 %; every other
/// frame leaves with DSCP 20. The tool wants each at the band's rate in
/// its kilobits (1024 bits) within 10 %, which both are.
#[test]
fn the_tool_kbps_remark_cases() {
    for (kbps, pktps) in [(1_000u64, 175u64), (10_000, 1_750), (100_000, 17_500)] {
        for frame in [ipv4_dscp18(), ipv6_dscp18()] {
            let mut p = pipeline(&format!(
                "meter=1,kbps,bands=type=dscp_remark,rate={kbps},prec_level=1"
            ));
            let o = send(&mut p, &frame, pktps);
            let sent = pktps * SECONDS * 1500;
            assert_eq!(o.bytes[18] + o.bytes[20], sent, "{kbps}: {o:?}");
            let rate = kbps as f64 * 1000.0 / 8.0 * SECONDS as f64;
            assert!(near(o.bytes[18], rate, 1.0), "{kbps}: {:?}", o.bytes[18]);
            let tool = kbps as f64 * 1024.0 / 8.0 * SECONDS as f64;
            assert!(near(o.bytes[18], tool, 10.0), "{kbps}");
            assert!(near(o.bytes[20], tool, 10.0), "{kbps}: {:?}", o.bytes[20]);
        }
    }
}

/// 02_DSCP_REMARK_01_PKTPS_*: twice the band's rate; half leaves as it
/// came and half remarked, each to within 1 %.
#[test]
fn the_tool_pktps_remark_cases() {
    for rate in [100u64, 1_000, 10_000] {
        for frame in [ipv4_dscp18(), ipv6_dscp18()] {
            let mut p = pipeline(&format!(
                "meter=1,pktps,bands=type=dscp_remark,rate={rate},prec_level=1"
            ));
            let o = send(&mut p, &frame, 2 * rate);
            let want = (rate * SECONDS) as f64;
            assert!(
                near(o.packets[18], want, 1.0),
                "{rate}: {:?}",
                o.packets[18]
            );
            assert!(
                near(o.packets[20], want, 1.0),
                "{rate}: {:?}",
                o.packets[20]
            );
        }
    }
}

/// The drop precedence rises by prec_level and stops at 3 (AF x3); the
/// class and the ECN bits stay.
#[test]
fn remark_raises_the_drop_precedence_only() {
    for (tos, prec, want) in [
        (18u8 << 2, 1u8, 20u8), // AF21 -> AF22
        (18 << 2, 2, 22),       // AF21 -> AF23
        ((20 << 2) | 1, 5, 22), // AF22 -> AF23, ECN kept
        (22 << 2, 1, 22),       // AF23 stays
        (10 << 2, 1, 12),       // AF11 -> AF12
    ] {
        let mut p = pipeline(&format!(
            "meter=1,pktps,burst,bands=type=dscp_remark,rate=1,burst_size=1,prec_level={prec}"
        ));
        let snap = p.snapshot();
        let mut w = Worker::new(0);
        let mut f = ipv4_tos(tos);
        // The first fills the bucket, the second is over the rate.
        w.process(&snap, 1, &mut f.clone(), S);
        assert_eq!(w.process(&snap, 1, &mut f, S).len(), 1);
        assert_eq!(dscp(&f), want, "tos {tos} prec {prec}");
        assert_eq!(f[15] & 3, tos & 3, "ECN");
        assert_eq!(checksum::internet(&f[14..34]), 0);
    }
}
