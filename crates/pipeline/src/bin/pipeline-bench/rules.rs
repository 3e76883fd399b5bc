//! The rule sets of the configs table, and the frames that hit them.
//!
//! `mixed` is L2/L3/L4 rules over a few masks (4p20r, 32p200r); `big` is
//! exact 5-tuple rules (see `flows.rs`) plus prefix rules (100k1k, 1m).
//! Each comes with one frame per rule (a sample of them for `big`): few
//! distinct packets, so the exact-match cache hits nearly always; the
//! scaling section (`scaling.rs`) is the many-flow case.

use ofp::msg::flow::FlowMod;
use ofp::oxm::{Match, MatchEntry, Oxm, OxmField as F};
use ofp::{Action, Instruction};
use pipeline::{compile, Classifier, Pipeline, PortState, RuleId};

use crate::flows;

/// An Ethernet/IPv4/TCP or UDP frame.
pub fn frame(
    in_vlan: Option<u16>,
    dst_mac: u64,
    src: u32,
    dst: u32,
    proto: u8,
    sport: u16,
    dport: u16,
) -> Vec<u8> {
    let mut f = Vec::with_capacity(64);
    f.extend_from_slice(&dst_mac.to_be_bytes()[2..]);
    f.extend_from_slice(&[2, 0, 0, 0, 0, 0x99]);
    if let Some(v) = in_vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&[0x08, 0x00, 0x45, 0, 0, 46, 0, 0, 0, 0, 64, proto, 0, 0]);
    f.extend_from_slice(&src.to_be_bytes());
    f.extend_from_slice(&dst.to_be_bytes());
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x10, 0, 0, 0, 0, 0, 0]);
    f.resize(64, 0);
    f
}

pub struct Config {
    pub name: &'static str,
    pub rules: Vec<(Match, u16)>,
    /// Instructions per rule (same order as `rules`).
    pub actions: Vec<Vec<Instruction>>,
    pub packets: Vec<(u32, Vec<u8>)>,
    /// Every rule meters its packets (meter 1) before its actions.
    pub metered: bool,
}

impl Config {
    /// The same rule set with every rule's packets through meter 1.
    pub fn metered(mut self, name: &'static str) -> Config {
        self.name = name;
        self.metered = true;
        for ins in &mut self.actions {
            if !ins.is_empty() {
                ins.insert(0, Instruction::Meter(1));
            }
        }
        self
    }

    /// A configuration whose rules end with the table-miss rule (drop).
    fn with_table_miss(
        name: &'static str,
        mut rules: Vec<(Match, u16)>,
        mut actions: Vec<Vec<Instruction>>,
        packets: Vec<(u32, Vec<u8>)>,
    ) -> Config {
        rules.push((m(), 0));
        actions.push(Vec::new());
        Config {
            name,
            rules,
            actions,
            packets,
            metered: false,
        }
    }
}

/// `output:port`, with a MAC rewrite first for every other rule.
pub fn actions_for(n: u32, port: u32) -> Vec<Instruction> {
    let mut a = Vec::with_capacity(2);
    if n.is_multiple_of(2) {
        a.push(Action::SetField(MatchEntry::Basic(Oxm::exact(
            F::EthDst,
            0x0200_0000_1000 | n as u128,
        ))));
    }
    a.push(Action::Output { port, max_len: 0 });
    vec![Instruction::ApplyActions(a)]
}

pub fn m() -> Match {
    Match::new()
}

pub fn exact(f: F, v: u128) -> Oxm {
    Oxm::exact(f, v)
}

/// `total` mixed L2/L3/L4 rules (the last one the table-miss rule) spread
/// over `ports` ports, and one packet per rule that hits it, plus one in ten
/// that hits nothing but the table-miss rule.
pub fn mixed(name: &'static str, ports: u32, total: u32) -> Config {
    let mut actions = Vec::new();
    let mut rules = Vec::new();
    let mut packets = Vec::new();
    for n in 0..total - 1 {
        let p = n % ports + 1;
        let i = n / ports;
        let (mm, prio, pkt) = match n % 5 {
            0 => (
                m().with(exact(F::InPort, p as u128))
                    .with(exact(F::EthDst, 0x0200_0000_0000 | n as u128)),
                300,
                frame(
                    None,
                    0x0200_0000_0000 | n as u64,
                    0x0c00_0001,
                    0x0d00_0001,
                    6,
                    1,
                    1,
                ),
            ),
            1 => (
                m().with(exact(F::InPort, p as u128))
                    .with(exact(F::EthType, 0x800))
                    .with(Oxm::masked(
                        F::Ipv4Dst,
                        (0x0a00_0000 | (n << 8)) as u128,
                        0xffff_ff00,
                    )),
                200,
                frame(
                    None,
                    0x0200_ffff_0000,
                    0x0c00_0001,
                    0x0a00_0000 | (n << 8) | 7,
                    6,
                    1,
                    1,
                ),
            ),
            2 => (
                m().with(exact(F::EthType, 0x800))
                    .with(exact(F::IpProto, 6))
                    .with(exact(F::Ipv4Src, (0x0b00_0000 | n) as u128))
                    .with(exact(F::TcpDst, (1000 + i) as u128)),
                400,
                frame(
                    None,
                    0x0200_ffff_0000,
                    0x0b00_0000 | n,
                    0x0d00_0001,
                    6,
                    5,
                    (1000 + i) as u16,
                ),
            ),
            3 => (
                m().with(exact(F::InPort, p as u128))
                    .with(exact(F::EthType, 0x800))
                    .with(exact(F::IpProto, 17))
                    .with(exact(F::UdpDst, (2000 + n) as u128)),
                250,
                frame(
                    None,
                    0x0200_ffff_0000,
                    0x0c00_0001,
                    0x0d00_0001,
                    17,
                    5,
                    (2000 + n) as u16,
                ),
            ),
            _ => (
                m().with(exact(F::InPort, p as u128)).with(Oxm::masked(
                    F::VlanVid,
                    0x1000 | n as u128 & 0xfff,
                    0x1fff,
                )),
                100,
                frame(
                    Some((n & 0xfff) as u16),
                    0x0200_ffff_0000,
                    0x0c00_0001,
                    0x0d00_0001,
                    17,
                    5,
                    9,
                ),
            ),
        };
        rules.push((mm, prio));
        packets.push((p, pkt));
        // Out of another port than it came in.
        actions.push(actions_for(n, p % ports + 1));
        if n % 10 == 9 {
            packets.push((
                p,
                frame(None, 0x0200_eeee_0000, 0x0e00_0001, 0x0e00_0002, 17, 7, 7),
            ));
        }
    }
    Config::with_table_miss(name, rules, actions, packets)
}

/// `exact` 5-tuple rules plus `wild` prefix rules; packets hit both.
pub fn big(name: &'static str, exact_n: u32, wild: u32) -> Config {
    let mut rules = Vec::with_capacity((exact_n + wild) as usize);
    let mut packets = Vec::new();
    for i in 0..exact_n {
        rules.push((flows::exact_match(i), flows::EXACT_PRIORITY));
        if i % (exact_n / 512).max(1) == 0 {
            packets.push((flows::IN_PORT, flows::exact_frame(i)));
        }
    }
    for j in 0..wild {
        let len = 8 + (j % 17);
        let mask = !0u32 << (32 - len);
        let v = (0x1e00_0000u32 | (j << 12)) & mask;
        rules.push((
            m().with(exact(F::EthType, 0x800)).with(Oxm::masked(
                F::Ipv4Dst,
                v as u128,
                mask as u128,
            )),
            (10 + len) as u16,
        ));
        if j % (wild / 256).max(1) == 0 {
            packets.push((
                2,
                frame(None, 0x0200_0000_0001, 0x0101_0101, v | 1, 17, 1, 1),
            ));
        }
    }
    let actions = (0..rules.len() as u32).map(|n| actions_for(n, 3)).collect();
    Config::with_table_miss(name, rules, actions, packets)
}

pub fn build(rules: &[(Match, u16)]) -> Classifier {
    let mut c: Classifier = Classifier::new();
    for (i, (mm, p)) in rules.iter().enumerate() {
        c.insert(i as RuleId, &compile(mm).expect("valid bench rule"), *p);
    }
    c
}

pub fn build_pipeline(c: &Config, ports: u32) -> Pipeline {
    let mut p = Pipeline::new(pipeline::Config {
        n_tables: 1,
        ..Default::default()
    });
    for n in 1..=ports {
        p.set_port(PortState::up(n));
    }
    if c.metered {
        // Every rule's packets through meter 1: a DSCP remark band at a
        // rate nothing here exceeds (the bucket is checked and charged on
        // every packet, the band never applies).
        let mut mm = ofp::text::parse_meter_mod(
            "meter=1,pktps,bands=type=dscp_remark,rate=1000000000,prec_level=1",
        )
        .expect("valid bench meter");
        mm.command = ofp::msg::meter::MeterModCommand::Add;
        p.meter_mod(&mm, 0).expect("valid bench meter");
    }
    for ((mm, prio), ins) in c.rules.iter().zip(&c.actions) {
        let fm = FlowMod {
            priority: *prio,
            match_: mm.clone(),
            instructions: ins.clone(),
            ..FlowMod::default()
        };
        p.flow_mod(&fm, 0).expect("valid bench flow");
    }
    p
}
