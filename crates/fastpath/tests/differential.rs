//! The generated XDP programs against the user-space pipeline, the
//! reference: random rule sets and random frames (tagged, untagged, IPv4
//! with options and fragments, IPv6 with and without extension headers,
//! ARP, MPLS, cut short anywhere), each frame run through the kernel
//! (BPF_PROG_TEST_RUN of the program loaded for real, the verifier
//! included) and through `pipeline::Worker::process`.
//!
//! For every frame: a packet the program keeps in the kernel must get the
//! pipeline's verdict (dropped, or out of the same port with the same
//! bytes) and count on the same rule; a packet it sends up must be one the
//! compiler's own account says goes up (the parser's [`goes_up`], or a
//! rule whose plan is `Up`) and must go up unchanged.
//!
//! Needs root (bpf(2)); in CI (`CI` set) it fails rather than skip.

use std::sync::Arc;

mod common;

use common::load::load;
use fastpath::compile::{compile, Compiled, Options};
use fastpath::model::verdict;
use fastpath::parse::goes_up;
use fastpath::Final;
use pipeline::{Config, Pipeline, PortState, Snapshot, Worker};

const XDP_DROP: u32 = 1;
const XDP_PASS: u32 = 2;
const XDP_TX: u32 = 3;
const XDP_REDIRECT: u32 = 4;

fn root() -> bool {
    if netdev::os::is_root() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("the XDP differential test needs root in CI");
    }
    eprintln!("skipped: the XDP differential test needs root");
    false
}

/// xorshift64*: reproducible from the seed printed on failure.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const MACS: [&str; 3] = [
    "02:00:00:00:00:01",
    "02:00:00:00:00:02",
    "ff:ff:ff:ff:ff:ff",
];
const V4: [&str; 4] = ["10.0.0.1", "10.0.0.2", "10.1.0.9", "192.168.7.7"];
const V6: [&str; 2] = ["fd00::1", "fd00::2"];
const TP: [u16; 3] = [80, 443, 5353];

fn mac_bytes(s: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (i, p) in s.split(':').enumerate() {
        m[i] = u8::from_str_radix(p, 16).unwrap();
    }
    m
}

fn v4_bytes(s: &str) -> [u8; 4] {
    s.parse::<std::net::Ipv4Addr>().unwrap().octets()
}

fn rand_mac(r: &mut Rng) -> [u8; 6] {
    mac_bytes(MACS[r.below(MACS.len() as u64) as usize])
}

fn rand_v4(r: &mut Rng) -> [u8; 4] {
    v4_bytes(V4[r.below(V4.len() as u64) as usize])
}

fn random_match(r: &mut Rng) -> String {
    let mut m: Vec<String> = Vec::new();
    if r.chance(40) {
        m.push(format!("in_port={}", 1 + r.below(4)));
    }
    if r.chance(20) {
        m.push(format!("dl_dst={}", r.pick(&MACS)));
    }
    if r.chance(15) {
        m.push(format!("dl_src={}", r.pick(&MACS)));
    }
    if r.chance(15) {
        m.push(
            r.pick(&[
                "dl_vlan=10",
                "vlan_tci=0/0x1000",
                "dl_vlan_pcp=3,dl_vlan=10",
            ])
            .to_string(),
        );
    }
    match r.below(7) {
        0 => {
            m.push(r.pick(&["tcp", "udp", "sctp"]).to_string());
            if r.chance(50) {
                m.push(format!("nw_dst={}/{}", r.pick(&V4), r.pick(&[8, 24, 32])));
            }
            if r.chance(60) {
                m.push(format!("tp_dst={}", r.pick(&TP)));
            }
            if r.chance(30) {
                m.push(format!("tp_src={}", r.pick(&TP)));
            }
        }
        1 => {
            m.push("ip".into());
            if r.chance(60) {
                m.push(format!("nw_src={}", r.pick(&V4)));
            }
            if r.chance(30) {
                m.push(format!("nw_tos={}", r.pick(&[0, 32])));
            }
            if r.chance(20) {
                m.push("nw_proto=1".into());
            }
        }
        2 => {
            m.push("arp".into());
            if r.chance(50) {
                m.push(format!("arp_tpa={}", r.pick(&V4)));
            }
            if r.chance(30) {
                m.push(format!("arp_op={}", 1 + r.below(2)));
            }
        }
        3 => {
            m.push(r.pick(&["tcp6", "udp6", "ipv6", "icmp6"]).to_string());
            if r.chance(50) {
                m.push(format!("ipv6_dst={}", r.pick(&V6)));
            }
        }
        4 => m.push(format!("icmp,icmp_type={}", r.pick(&[0, 8]))),
        _ => {}
    }
    m.join(",")
}

/// Matches and actions for rule sets that mostly edit IPv4 and ports.
fn editing_rule(r: &mut Rng) -> (String, String) {
    let m = r
        .pick(&[
            "tcp",
            "udp",
            "ip",
            "tcp,tp_dst=80",
            "udp,nw_src=10.0.0.1",
            "ip,nw_proto=6",
            "dl_vlan=10",
            "dl_vlan=10,tcp",
            "vlan_tci=0/0x1000",
            "dl_vlan=11,udp",
        ])
        .to_string();
    let mut a = random_actions(r);
    for _ in 0..3 {
        if a.contains("set_field") {
            break;
        }
        a = random_actions(r);
    }
    (m, a)
}

fn random_actions(r: &mut Rng) -> String {
    let out = |r: &mut Rng| match r.below(10) {
        0 => "in_port".to_string(),
        1 => "output:5".to_string(),
        8 => "FLOOD".to_string(),
        9 => "ALL".to_string(),
        _ => format!("output:{}", 1 + r.below(4)),
    };
    match r.below(20) {
        16 => format!(
            "push_vlan:0x8100,set_field:{}->vlan_vid,{}",
            4096 + 11,
            out(r)
        ),
        17 => format!("pop_vlan,{}", out(r)),
        18 => format!(
            "write_actions({},set_field:{}->eth_dst,{})",
            r.pick(&["pop_vlan", "push_vlan:0x88a8"]),
            r.pick(&MACS),
            out(r)
        ),
        19 => format!(
            "set_field:{}->vlan_pcp,set_field:{}->vlan_vid,{}",
            r.below(8),
            4096 + r.pick(&[10u64, 12]),
            out(r)
        ),
        12 => format!("set_field:{}->ip_dst,{}", r.pick(&V4), out(r)),
        13 => format!(
            "set_field:{}->ip_src,set_field:{}->tcp_dst,{}",
            r.pick(&V4),
            r.pick(&TP),
            out(r)
        ),
        14 => format!(
            "set_field:{}->{},{}",
            r.pick(&TP),
            r.pick(&["udp_src", "udp_dst", "tcp_src"]),
            out(r)
        ),
        15 => format!(
            "write_actions(set_field:{}->ip_dst,set_field:{}->udp_dst,{})",
            r.pick(&V4),
            r.pick(&TP),
            out(r)
        ),
        0 | 1 => "drop".into(),
        2 => format!("mod_dl_dst:{},{}", r.pick(&MACS), out(r)),
        3 => format!(
            "mod_dl_src:{},mod_dl_dst:{},{}",
            r.pick(&MACS),
            r.pick(&MACS),
            out(r)
        ),
        4 => format!("write_actions({})", out(r)),
        5 => "CONTROLLER:128".into(),
        6 => format!("{},{}", out(r), out(r)),
        7 => format!("mod_nw_tos:32,{}", out(r)),
        8 => "goto_table:1".into(),
        9 => format!("{},mod_dl_dst:{}", out(r), r.pick(&MACS)),
        _ => out(r),
    }
}

fn rule_set(r: &mut Rng, n: usize, editing: bool) -> Pipeline {
    let mut p = Pipeline::new(Config::default());
    for port in 1..=4 {
        let mut s = PortState::up(port);
        if port == 3 {
            s.no_fwd = r.chance(30);
        }
        if port == 4 {
            s.live = r.chance(70);
            s.no_recv = r.chance(10);
        }
        p.set_port(s);
    }
    let mut added = 0;
    while added < n {
        let prio = *r.pick(&[0u16, 5, 10, 10, 100, 200, 300]);
        let (m, a) = if editing {
            editing_rule(r)
        } else {
            (random_match(r), random_actions(r))
        };
        let text = format!("priority={prio},{m},actions={a}");
        let Ok(fm) = ofp::text::parse_flow_mod(&text) else {
            continue;
        };
        if p.flow_mod(&fm, 0).is_ok() {
            added += 1;
        }
    }
    p
}

/// A random frame from the same pools as the rules, sometimes cut short.
fn random_frame(r: &mut Rng) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&rand_mac(&mut *r));
    f.extend_from_slice(&rand_mac(&mut *r));
    for _ in 0..*r.pick(&[0, 0, 0, 1, 1, 2, 3]) {
        f.extend_from_slice(&r.pick(&[0x8100u16, 0x88a8, 0x9100]).to_be_bytes());
        let tci = (*r.pick(&[10u16, 11]) | (*r.pick(&[0u16, 3]) << 13)).to_be_bytes();
        f.extend_from_slice(&tci);
    }
    match r.below(8) {
        0..=2 => {
            f.extend_from_slice(&0x0800u16.to_be_bytes());
            let opts = if r.chance(15) { 4 } else { 0 };
            let proto = *r.pick(&[6u8, 17, 132, 1, 47]);
            let l4len = match proto {
                6 => 20,
                17 => 8,
                132 => 12,
                1 => 8,
                _ => 4,
            };
            let total = (20 + opts + l4len) as u16;
            let total = if r.chance(10) { total - 6 } else { total };
            let version_ihl = if r.chance(5) {
                0x65
            } else {
                0x45 + (opts as u8 / 4)
            };
            let frag: u16 = *r.pick(&[0, 0, 0, 0x4000, 0x2000, 0x0010]);
            f.extend_from_slice(&[version_ihl, *r.pick(&[0u8, 32, 33])]);
            f.extend_from_slice(&total.to_be_bytes());
            f.extend_from_slice(&[0, 1]);
            f.extend_from_slice(&frag.to_be_bytes());
            // Checksums as they come: any value (the edits update them).
            f.extend_from_slice(&[64, proto, r.next() as u8, r.next() as u8]);
            f.extend_from_slice(&rand_v4(&mut *r));
            f.extend_from_slice(&rand_v4(&mut *r));
            f.extend(std::iter::repeat_n(1u8, opts));
            l4(r, &mut f, proto, l4len);
        }
        3 => {
            f.extend_from_slice(&0x86ddu16.to_be_bytes());
            let next = *r.pick(&[6u8, 17, 58, 58, 0, 44, 59]);
            let l4len: usize = if next == 58 { 24 } else { 20 };
            f.extend_from_slice(&[0x60 | (r.below(2) as u8 * 2), 0x12, 0x34, 0x56]);
            f.extend_from_slice(&(l4len as u16).to_be_bytes());
            f.extend_from_slice(&[next, 64]);
            for _ in 0..2 {
                f.extend_from_slice(&r.pick(&V6).parse::<std::net::Ipv6Addr>().unwrap().octets());
            }
            if next == 58 {
                f.extend_from_slice(&[*r.pick(&[128u8, 135, 136]), 0, 0, 0]);
                f.extend(std::iter::repeat_n(0u8, 20));
            } else {
                l4(r, &mut f, next, l4len);
            }
        }
        4 => {
            f.extend_from_slice(&r.pick(&[0x0806u16, 0x8035]).to_be_bytes());
            let bad = r.chance(10);
            f.extend_from_slice(&[0, 1, 8, 0, 6, if bad { 5 } else { 4 }]);
            f.extend_from_slice(&(1 + r.below(2) as u16).to_be_bytes());
            f.extend_from_slice(&rand_mac(&mut *r));
            f.extend_from_slice(&rand_v4(&mut *r));
            f.extend_from_slice(&rand_mac(&mut *r));
            f.extend_from_slice(&rand_v4(&mut *r));
        }
        5 => {
            f.extend_from_slice(&0x8847u16.to_be_bytes());
            f.extend_from_slice(&[0, 0x10, 0x11, 64]);
        }
        _ => {
            f.extend_from_slice(&r.pick(&[0x88ccu16, 0x0800, 0x86dd]).to_be_bytes());
            for _ in 0..r.below(40) {
                f.push(r.next() as u8);
            }
        }
    }
    if f.len() < 60 && r.chance(50) {
        f.resize(60, 0);
    }
    if r.chance(12) {
        let cut = r.below(f.len() as u64 + 1) as usize;
        f.truncate(cut);
    }
    f
}

fn l4(r: &mut Rng, f: &mut Vec<u8>, proto: u8, len: usize) {
    let start = f.len();
    f.extend(std::iter::repeat_n(0u8, len));
    let h = &mut f[start..];
    if proto == 1 {
        h[0] = *r.pick(&[0u8, 8]);
        return;
    }
    if len >= 4 {
        h[0..2].copy_from_slice(&r.pick(&TP).to_be_bytes());
        h[2..4].copy_from_slice(&r.pick(&TP).to_be_bytes());
    }
    if proto == 6 && len >= 20 {
        h[12] = if r.chance(5) { 0x40 } else { 0x50 };
        h[16] = r.next() as u8;
        h[17] = r.next() as u8;
    }
    // UDP: a checksum, or none (0), which must stay none.
    if proto == 17 && len >= 8 && r.chance(75) {
        h[6] = r.next() as u8;
        h[7] = r.next() as u8;
    }
}

/// Which counter went up between two reads (exactly one of the rule
/// counters may, plus exactly one per-program kind).
fn changed(before: &[u64], after: &[u64]) -> Vec<usize> {
    (0..before.len() / 2)
        .filter(|&i| after[2 * i] != before[2 * i])
        .collect()
}

fn expect_up(snap: &Snapshot, c: &Compiled, prog: usize, frame: &[u8]) -> Option<String> {
    match verdict(snap, c.programs[prog].in_port, &c.egress, frame) {
        Final::Up(u) => Some(u.to_string()),
        _ => None,
    }
}

fn explain(snap: &Snapshot, c: &Compiled, prog: usize, frame: &[u8]) -> String {
    let p = &c.programs[prog];
    let mut key = packet::FlowKey::default();
    packet::extract(frame, p.in_port, &mut key);
    let all: Vec<String> = c
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            format!(
                "\n  id {} prio {} {} {:?}",
                r.id,
                r.priority,
                ofp::text::format_match(&r.match_.get()),
                p.finals[c.rule_action[i] as usize]
            )
        })
        .collect();
    let found = match snap.tables[0].lookup_data(&key) {
        None => "no rule".into(),
        Some(rule) => {
            let i = c.rules.iter().position(|r| Arc::ptr_eq(r, rule)).unwrap();
            format!(
                "rule {} prio {} {:?} -> {:?}",
                rule.id,
                rule.priority,
                ofp::text::format_match(&rule.match_.get()),
                p.finals[c.rule_action[i] as usize]
            )
        }
    };
    format!("{found}; the rules for this port:{}", all.concat())
}

/// What the frames of some cases exercised in the kernel.
#[derive(Default)]
struct Seen {
    /// Frames kept in the kernel and checked against the pipeline.
    checked: usize,
    /// Of them: IPv4, transport or VLAN header edited in place (bytes
    /// past the Ethernet addresses changed).
    edited: usize,
    /// A tag pushed or popped (the length changed).
    tagged: usize,
    flooded: usize,
}

fn run_case(seed: u64, rules: usize, frames: usize, editing: bool, seen: &mut Seen) {
    let mut r = Rng(seed | 1);
    let mut pl = rule_set(&mut r, rules, editing);
    let snap = pl.snapshot();
    let inputs = [1u32, 2, 3, 4];
    let egress = [1u32, 2, 3];
    let inline_max = *r.pick(&[0usize, 1, 2, 8]);
    let c = compile(
        &snap,
        &inputs,
        &egress,
        7,
        &Options {
            inline_max,
            ..Options::default()
        },
    )
    .unwrap();
    let l = load(&c).unwrap();
    let mut worker = Worker::new(0);
    for _ in 0..frames {
        let frame = random_frame(&mut r);
        if frame.len() < 14 {
            // BPF_PROG_TEST_RUN refuses frames shorter than an Ethernet
            // header; the program sends them up (its first check).
            assert!(goes_up(&frame).is_some());
            continue;
        }
        let k = r.below(inputs.len() as u64) as usize;
        let in_port = inputs[k];
        let before = l.counters.percpu_sum_all().unwrap();
        let (code, out) = l.progs[k]
            .test_run(&frame)
            .unwrap_or_else(|e| panic!("{e}: port {in_port}, frame {frame:02x?}"));
        let after = l.counters.percpu_sum_all().unwrap();
        let ctx = format!(
            "seed {seed:#x}, inline_max {inline_max}, in_port {in_port}, frame {:02x?}",
            frame
        );
        let moved = changed(&before, &after);
        let base = c.programs[k].counter_base as usize;
        let kind: Vec<usize> = moved
            .iter()
            .filter(|&&i| i >= base)
            .map(|i| i - base)
            .collect();
        let rule_hit: Vec<usize> = moved
            .iter()
            .copied()
            .filter(|&i| i < c.rules.len())
            .collect();
        assert_eq!(kind.len(), 1, "one kind counter moves: {moved:?}; {ctx}");
        let kind = kind[0];
        let up = expect_up(&snap, &c, k, &frame);
        if kind == 3 {
            assert_eq!(code, XDP_PASS, "up: to the (absent) socket; {ctx}");
            assert_eq!(out, frame, "up unchanged; {ctx}");
            assert!(
                up.is_some(),
                "went up without a reason; {}; {ctx}",
                explain(&snap, &c, k, &frame)
            );
            continue;
        }
        assert!(
            up.is_none(),
            "stayed in the kernel, expected up ({up:?}); {ctx}"
        );
        // The reference.
        let mut f = frame.clone();
        let totals = |c: &Compiled| -> Vec<u64> {
            c.rules
                .iter()
                .map(|r| r.counters.totals().packets)
                .collect()
        };
        let t0 = totals(&c);
        let outputs = worker.process(&snap, in_port, &mut f, 1).to_vec();
        let t1 = totals(&c);
        let ref_hit: Vec<usize> = (0..t0.len()).filter(|&i| t1[i] != t0[i]).collect();
        assert_eq!(rule_hit, ref_hit, "the same rule counts; {ctx}");
        match kind {
            0 | 1 => {
                assert_eq!(code, XDP_DROP, "{ctx}");
                assert!(outputs.is_empty(), "pipeline output {outputs:?}; {ctx}");
            }
            2 => {
                assert_eq!(code, XDP_TX, "{ctx}");
                assert_eq!(outputs.len(), 1, "{ctx}");
                assert_eq!(outputs[0].port, in_port, "{ctx}");
                let bytes = outputs[0].data.clone().unwrap_or(f.clone());
                assert_eq!(out, bytes, "{ctx}");
            }
            k if k == 4 + egress.len() => {
                // Flooded: one copy per flood port but the ingress, all
                // the same bytes.
                assert_eq!(code, XDP_REDIRECT, "{ctx}");
                let mut to: Vec<u32> = outputs.iter().map(|o| o.port).collect();
                to.sort_unstable();
                let want: Vec<u32> = c.flood.iter().copied().filter(|&p| p != in_port).collect();
                assert_eq!(to, want, "{ctx}");
                for o in &outputs {
                    assert_eq!(out, o.data.clone().unwrap_or(f.clone()), "{ctx}");
                }
                seen.flooded += 1;
            }
            k => {
                assert_eq!(code, XDP_REDIRECT, "{ctx}");
                assert_eq!(outputs.len(), 1, "{ctx}: {outputs:?}");
                assert_eq!(outputs[0].port, egress[k - 4], "{ctx}");
                let bytes = outputs[0].data.clone().unwrap_or(f.clone());
                assert_eq!(out, bytes, "{ctx}");
            }
        }
        seen.checked += 1;
        if out.len() == frame.len() && out[12..] != frame[12..] {
            seen.edited += 1;
        }
        if out.len() != frame.len() {
            seen.tagged += 1;
        }
    }
}

#[test]
fn xdp_programs_agree_with_the_pipeline() {
    if !root() {
        return;
    }
    let seed0: u64 = std::env::var("FASTPATH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_1234);
    let mut seen = Seen::default();
    let mut total = 0;
    // Random rule sets, then sets that mostly edit IPv4 and ports.
    for i in 0..120u64 {
        let rules = [1usize, 4, 12, 40][i as usize % 4];
        let editing = i >= 60;
        run_case(
            seed0.wrapping_add(i * 0x9e37_79b9),
            rules,
            150,
            editing,
            &mut seen,
        );
        total += 150;
    }
    let Seen {
        checked: in_kernel,
        edited,
        tagged,
        flooded,
    } = seen;
    eprintln!(
        "{total} frames, {in_kernel} kept in the kernel and checked against the pipeline, \
         {edited} of them with IPv4, TCP/UDP or VLAN fields set, {tagged} with a tag pushed or popped, \
         {flooded} flooded"
    );
    assert!(
        in_kernel > total / 5,
        "too few frames exercised the kernel path"
    );
    assert!(
        edited > 100,
        "too few frames exercised the IPv4 and port edits"
    );
    assert!(
        tagged > 50,
        "too few frames exercised push_vlan and pop_vlan"
    );
    assert!(flooded > 20, "too few frames exercised FLOOD and ALL");
}
