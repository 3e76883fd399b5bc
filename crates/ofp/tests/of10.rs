//! Property tests of the OpenFlow 1.0 translator (`ofp::of10`):
//!
//! * every internal message written as 1.0 is whole frames of version 1
//!   with right lengths (or nothing, for a message 1.0 has no form for),
//!   and what reads back is a 1.0-expressible message `m` for which
//!   `decode(encode(m)) == m`;
//! * 1.0 frames built field by field (FLOW_MOD with any wildcards, match
//!   values and actions; FLOW_REMOVED; flow stats) read, when they are
//!   accepted, into such an `m` as well;
//! * no byte string after a 1.0 header makes the decoder panic.

mod common;

use bytes::{BufMut, Bytes};
use proptest::collection::vec;
use proptest::prelude::*;

use ofp::msg::Message;
use ofp::Version;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 2048,
        ..ProptestConfig::default()
    }
}

/// The frames of a byte string written by `encode_as`, checked: each at
/// least a header long, its length field its length, version 1 (HELLO
/// carries its own).
fn frames(b: &[u8]) -> Result<Vec<Bytes>, TestCaseError> {
    let mut v = Vec::new();
    let mut rest = b;
    while !rest.is_empty() {
        prop_assert!(rest.len() >= 8, "a fragment shorter than a header");
        let len = u16::from_be_bytes([rest[2], rest[3]]) as usize;
        prop_assert!(len >= 8 && len <= rest.len(), "bad length field {}", len);
        if rest[1] != 0 {
            prop_assert_eq!(rest[0], 1);
        }
        v.push(Bytes::copy_from_slice(&rest[..len]));
        rest = &rest[len..];
    }
    Ok(v)
}

fn enc(m: &Message, xid: u32) -> Vec<u8> {
    let mut out = Vec::new();
    m.encode_as(Version::V1_0, xid, &mut out)
        .expect("a decoded 1.0 message fits");
    out
}

/// `m`, read from 1.0, survives another trip unchanged.
fn stable(m: &Message, xid: u32) -> Result<(), TestCaseError> {
    let again = enc(m, xid);
    let fs = frames(&again)?;
    prop_assert_eq!(fs.len(), 1, "one 1.0 message becomes one message");
    let (h, back) = Message::decode_as(&fs[0], Version::V1_0)
        .map_err(|e| TestCaseError::fail(format!("re-encoding refused: {e:?}")))?;
    prop_assert_eq!(h.xid, xid);
    prop_assert_eq!(&back, m);
    Ok(())
}

/// A 1.0 `ofp_match` with values that reach every normalisation rule.
fn match10() -> impl Strategy<Value = Vec<u8>> {
    let dl_type = prop_oneof![
        Just(0x0800u16),
        Just(0x0806),
        Just(0x86dd),
        Just(0x8035),
        any::<u16>()
    ];
    let proto = prop_oneof![
        Just(6u8),
        Just(17),
        Just(132),
        Just(1),
        Just(58),
        any::<u8>()
    ];
    let vlan = prop_oneof![Just(0xffffu16), 0u16..0x1000, any::<u16>()];
    (
        any::<u32>(),
        any::<u16>(),
        any::<[u8; 12]>(),
        vlan,
        any::<u8>(),
        dl_type,
        any::<u8>(),
        proto,
        any::<[u8; 12]>(),
    )
        .prop_map(|(w, in_port, dl, vlan, pcp, dl_type, tos, proto, rest)| {
            let mut b = Vec::with_capacity(40);
            b.put_u32(w);
            b.put_u16(in_port);
            b.extend_from_slice(&dl);
            b.put_u16(vlan);
            b.put_u8(pcp);
            b.put_u8(0);
            b.put_u16(dl_type);
            b.put_u8(tos);
            b.put_u8(proto);
            b.put_u16(0);
            b.extend_from_slice(&rest);
            b
        })
}

/// One 1.0 action, valid or not.
fn action10() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (any::<u16>(), any::<u16>()).prop_map(|(p, m)| [
            vec![0, 0, 0, 8],
            p.to_be_bytes().to_vec(),
            m.to_be_bytes().to_vec()
        ]
        .concat()),
        (0u16..0x1100)
            .prop_map(|v| [vec![0, 1, 0, 8], v.to_be_bytes().to_vec(), vec![0, 0]].concat()),
        (0u8..9).prop_map(|v| vec![0, 2, 0, 8, v, 0, 0, 0]),
        Just(vec![0, 3, 0, 8, 0, 0, 0, 0]),
        (4u16..6, any::<[u8; 6]>()).prop_map(|(t, a)| [
            t.to_be_bytes().to_vec(),
            vec![0, 16],
            a.to_vec(),
            vec![0; 6]
        ]
        .concat()),
        (6u16..8, any::<u32>()).prop_map(|(t, a)| [
            t.to_be_bytes().to_vec(),
            vec![0, 8],
            a.to_be_bytes().to_vec()
        ]
        .concat()),
        any::<u8>().prop_map(|t| vec![0, 8, 0, 8, t & 0xfd, 0, 0, 0]),
        (9u16..11, any::<u16>()).prop_map(|(t, p)| [
            t.to_be_bytes().to_vec(),
            vec![0, 8],
            p.to_be_bytes().to_vec(),
            vec![0, 0]
        ]
        .concat()),
        (
            prop_oneof![0u16..0xff00, Just(0xfff8), Just(0xfffe)],
            any::<u32>()
        )
            .prop_map(|(p, q)| [
                vec![0, 11, 0, 16],
                p.to_be_bytes().to_vec(),
                vec![0; 6],
                q.to_be_bytes().to_vec()
            ]
            .concat()),
        // Open vSwitch's Nicira forms (set_queue, group, dec_ttl, push_mpls).
        (
            prop_oneof![
                Just(4u16),
                Just(40),
                Just(18),
                Just(23),
                Just(24),
                Just(25),
                Just(26),
                Just(30),
                Just(31)
            ],
            any::<[u8; 6]>()
        )
            .prop_map(|(s, a)| [
                vec![0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20],
                s.to_be_bytes().to_vec(),
                a.to_vec()
            ]
            .concat()),
        // NXAST_WRITE_METADATA.
        (any::<u64>(), any::<u64>()).prop_map(|(m, k)| [
            vec![0xff, 0xff, 0, 32, 0, 0, 0x23, 0x20, 0, 22, 0, 0, 0, 0, 0, 0],
            m.to_be_bytes().to_vec(),
            k.to_be_bytes().to_vec()
        ]
        .concat()),
    ]
}

fn frame(ty: u8, xid: u32, body: &[u8]) -> Bytes {
    let mut b = vec![1, ty];
    b.put_u16((8 + body.len()) as u16);
    b.put_u32(xid);
    b.extend_from_slice(body);
    Bytes::from(b)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn internal_messages_written_as_1_0_read_back_stable(m in common::message(), xid in any::<u32>()) {
        let mut out = vec![0xee];
        match m.encode_as(Version::V1_0, xid, &mut out) {
            Err(e) => {
                prop_assert!(e.len > 65_535);
                prop_assert_eq!(out, vec![0xee]);
            }
            Ok(()) => {
                for f in frames(&out[1..])? {
                    prop_assert_eq!(u32::from_be_bytes([f[4], f[5], f[6], f[7]]), xid);
                    // What reads back (if 1.0 accepts what was written) is
                    // 1.0-expressible: another trip changes nothing.
                    if let Ok((_, m1)) = Message::decode_as(&f, Version::V1_0) {
                        stable(&m1, xid)?;
                    }
                }
            }
        }
    }

    #[test]
    fn flow_mods_built_from_1_0_fields_read_back_stable(
        m in match10(),
        cookie in any::<u64>(),
        command in 0u16..5,
        timeouts in any::<[u16; 3]>(),
        buffer in any::<u32>(),
        out_port in any::<u16>(),
        flags in 0u16..4,
        actions in vec(action10(), 0..6),
        xid in any::<u32>(),
    ) {
        let mut body = m;
        body.put_u64(cookie);
        body.put_u16(command);
        for t in timeouts { body.put_u16(t); }
        body.put_u32(buffer);
        body.put_u16(out_port);
        body.put_u16(flags);
        for a in &actions { body.extend_from_slice(a); }
        if let Ok((_, msg)) = Message::decode_as(&frame(14, xid, &body), Version::V1_0) {
            let Message::FlowMod(f) = &msg else { panic!("not a flow mod: {msg:?}") };
            prop_assert_eq!(f.cookie_mask, 0);
            prop_assert_eq!(f.table_id, if command >= 3 { 0xff } else { 0 });
            stable(&msg, xid)?;
        }
    }

    #[test]
    fn flow_removed_and_flow_stats_from_1_0_fields_read_back_stable(
        m in match10(),
        counters in any::<[u64; 3]>(),
        shorts in any::<[u16; 4]>(),
        actions in vec(action10(), 0..4),
        xid in any::<u32>(),
    ) {
        // FLOW_REMOVED.
        let mut body = m.clone();
        body.put_u64(counters[0]);
        body.put_u16(shorts[0]);
        body.put_u8(shorts[1] as u8 & 3);
        body.put_u8(0);
        body.put_u64(counters[1]);
        body.put_u16(shorts[2]);
        body.put_u16(0);
        body.put_u64(counters[1]);
        body.put_u64(counters[2]);
        if let Ok((_, msg)) = Message::decode_as(&frame(11, xid, &body), Version::V1_0) {
            stable(&msg, xid)?;
        }
        // OFPST_FLOW reply with one entry.
        let acts: Vec<u8> = actions.concat();
        let mut e = Vec::new();
        e.put_u16((88 + acts.len()) as u16);
        e.put_u8(shorts[3] as u8);
        e.put_u8(0);
        e.extend_from_slice(&m);
        e.put_u64(counters[0]);
        for s in shorts { e.put_u16(s); }
        e.put_u16(0);
        e.put_u32(0);
        for c in counters { e.put_u64(c); }
        e.extend_from_slice(&acts);
        let mut body = vec![0, 1, 0, 0];
        body.extend_from_slice(&e);
        if let Ok((_, msg)) = Message::decode_as(&frame(17, xid, &body), Version::V1_0) {
            stable(&msg, xid)?;
        }
    }

    #[test]
    fn no_bytes_after_a_1_0_header_panic(ty in 0u8..24, body in vec(any::<u8>(), 0..300), xid in any::<u32>()) {
        let f = frame(ty, xid, &body);
        if let Ok((_, m)) = Message::decode_as(&f, Version::V1_0) {
            let mut out = Vec::new();
            let _ = m.encode_as(Version::V1_0, xid, &mut out);
        }
    }
}

// ---- internal messages that OpenFlow 1.0 can say exactly ----

use ofp::action::Action;
use ofp::error::{BadActionCode, BadRequestCode, ErrorCode, FlowModFailedCode};
use ofp::instruction::Instruction;
use ofp::msg::flow::{
    FlowMod, FlowModCommand, FlowRemoved, FlowRemovedReason, PacketIn, PacketInReason, PacketOut,
};
use ofp::msg::multipart::*;
use ofp::msg::simple::*;
use ofp::oxm::{Match, MatchEntry, Oxm, OxmField as F};
use ofp::port::{port_features as pf, PortDesc};

/// A port number with a 16-bit form.
fn port32() -> impl Strategy<Value = u32> {
    prop_oneof![
        0u32..0xff00,
        (0xff00u32..=0xffff).prop_map(|p| p + 0xffff_0000)
    ]
}

/// The 1.3 feature bits 1.0 has.
fn features() -> impl Strategy<Value = u32> {
    any::<u32>().prop_map(|f| f & (0x7f | 0xf800))
}

fn speed(f: u32) -> u32 {
    [
        (pf::F_10GB_FD, 10_000_000),
        (pf::F_1GB_FD | pf::F_1GB_HD, 1_000_000),
        (pf::F_100MB_FD | pf::F_100MB_HD, 100_000),
        (pf::F_10MB_FD | pf::F_10MB_HD, 10_000),
    ]
    .iter()
    .find(|(b, _)| f & b != 0)
    .map_or(0, |(_, s)| *s)
}

fn port_desc10() -> impl Strategy<Value = PortDesc> {
    (
        port32(),
        any::<[u8; 6]>(),
        common::fixed::<16>(),
        any::<[u32; 2]>(),
        features(),
        features(),
        features(),
        features(),
    )
        .prop_map(
            |(port_no, hw_addr, name, cs, curr, advertised, supported, peer)| PortDesc {
                port_no,
                hw_addr,
                name,
                config: cs[0] & 0x7f,
                state: cs[1] & 0x301,
                curr,
                advertised,
                supported,
                peer,
                curr_speed: speed(curr),
                max_speed: speed(supported),
            },
        )
}

fn ex(f: F, v: u64) -> Oxm {
    Oxm::exact(f, v.into())
}

/// A match 1.0 can say, its fields in the order 1.0's reading gives them.
fn match_expressible() -> impl Strategy<Value = Match> {
    let vlan = prop_oneof![
        Just(None),
        Just(Some((Some(0u16), None))),
        (0u16..0x1000, proptest::option::of(0u8..8)).prop_map(|(v, p)| Some((Some(v | 0x1000), p))),
        (0u8..8).prop_map(|p| Some((None, Some(p)))),
    ];
    let prefix = proptest::option::of((any::<u32>(), 1u32..=32));
    let l3 = prop_oneof![
        Just(None),
        any::<u16>()
            .prop_filter("not IP or ARP", |t| ![0x0800, 0x0806, 0x8035, 0x86dd]
                .contains(t))
            .prop_map(|t| Some((t, None, None, None, None, None, None))),
        (
            proptest::option::of(0u8..64),
            proptest::option::of(prop_oneof![
                Just(6u8),
                Just(17),
                Just(132),
                Just(1),
                any::<u8>()
            ]),
            prefix.clone(),
            prefix.clone(),
            proptest::option::of(any::<u16>()),
            proptest::option::of(any::<u16>())
        )
            .prop_map(|(d, p, s, t, a, b)| Some((0x0800, d, p, s, t, a, b))),
        (proptest::option::of(any::<u8>()), prefix.clone(), prefix)
            .prop_map(|(op, s, t)| Some((0x0806, None, op, s, t, None, None))),
    ];
    (
        proptest::option::of(port32()),
        proptest::option::of(0u64..1 << 48),
        proptest::option::of(0u64..1 << 48),
        vlan,
        l3,
    )
        .prop_map(|(in_port, dst, src, vlan, l3)| {
            let mut m = Match::new();
            if let Some(p) = in_port {
                m = m.with(ex(F::InPort, p.into()));
            }
            if let Some(d) = dst {
                m = m.with(ex(F::EthDst, d));
            }
            if let Some(s) = src {
                m = m.with(ex(F::EthSrc, s));
            }
            if let Some((t, ..)) = l3 {
                m = m.with(ex(F::EthType, t.into()));
            }
            match vlan {
                None => {}
                Some((Some(v), p)) => {
                    m = m.with(ex(F::VlanVid, v.into()));
                    if let (true, Some(p)) = (v != 0, p) {
                        m = m.with(ex(F::VlanPcp, p.into()));
                    }
                }
                Some((None, Some(p))) => {
                    m = m
                        .with(Oxm::masked(F::VlanVid, 0x1000, 0x1000))
                        .with(ex(F::VlanPcp, p.into()));
                }
                Some((None, None)) => {}
            }
            let addr = |m: Match, f, a: Option<(u32, u32)>| match a {
                None => m,
                Some((v, 32)) => m.with(ex(f, v.into())),
                Some((v, n)) => {
                    let mask = u32::MAX << (32 - n);
                    m.with(Oxm::masked(f, (v & mask).into(), mask.into()))
                }
            };
            if let Some((t, dscp, proto, s, d, tp_src, tp_dst)) = l3 {
                if t == 0x0800 {
                    if let Some(x) = dscp {
                        m = m.with(ex(F::IpDscp, x.into()));
                    }
                    if let Some(p) = proto {
                        m = m.with(ex(F::IpProto, p.into()));
                    }
                    m = addr(m, F::Ipv4Src, s);
                    m = addr(m, F::Ipv4Dst, d);
                    let fields = match proto {
                        Some(6) => Some((F::TcpSrc, F::TcpDst, 0xffff)),
                        Some(17) => Some((F::UdpSrc, F::UdpDst, 0xffff)),
                        Some(132) => Some((F::SctpSrc, F::SctpDst, 0xffff)),
                        Some(1) => Some((F::Icmpv4Type, F::Icmpv4Code, 0xff)),
                        _ => None,
                    };
                    if let Some((fs, fd, cut)) = fields {
                        if let Some(x) = tp_src {
                            m = m.with(ex(fs, u64::from(x & cut)));
                        }
                        if let Some(x) = tp_dst {
                            m = m.with(ex(fd, u64::from(x & cut)));
                        }
                    }
                } else if t == 0x0806 {
                    if let Some(p) = proto {
                        m = m.with(ex(F::ArpOp, p.into()));
                    }
                    m = addr(m, F::ArpSpa, s);
                    m = addr(m, F::ArpTpa, d);
                }
            }
            m
        })
}

fn set(f: F, v: u64) -> Action {
    Action::SetField(MatchEntry::Basic(ex(f, v)))
}

/// An action list 1.0 can say, for a flow whose match is `m`.
fn actions_for(m: &Match) -> BoxedStrategy<Vec<Action>> {
    let proto = m.get(F::IpProto).map(|o| o.value as u8);
    let tagged = m.get(F::VlanVid).is_some_and(|o| o.value & 0x1000 != 0);
    let tp = match proto {
        Some(6) => Some((F::TcpSrc, F::TcpDst)),
        Some(17) => Some((F::UdpSrc, F::UdpDst)),
        Some(132) => Some((F::SctpSrc, F::SctpDst)),
        _ => None,
    };
    let one = prop_oneof![
        (port32(), any::<u16>()).prop_map(|(port, max_len)| vec![Action::Output { port, max_len }]),
        (0u64..1 << 48, any::<bool>())
            .prop_map(|(a, s)| vec![set(if s { F::EthSrc } else { F::EthDst }, a)]),
        (any::<u32>(), any::<bool>())
            .prop_map(|(a, s)| vec![set(if s { F::Ipv4Src } else { F::Ipv4Dst }, a.into())]),
        (0u64..64).prop_map(|d| vec![set(F::IpDscp, d)]),
        (any::<u32>(), 0u32..0xff00).prop_map(|(q, p)| vec![
            Action::SetQueue(q),
            Action::Output {
                port: p,
                max_len: 0
            }
        ]),
        any::<u32>().prop_map(|g| vec![Action::Group(g)]),
        Just(vec![Action::DecNwTtl]),
        (0u64..0x1000, 0u64..8, any::<bool>()).prop_map(|(v, p, vid)| vec![if vid {
            set(F::VlanVid, v | 0x1000)
        } else {
            set(F::VlanPcp, p)
        }]),
        Just(vec![Action::PopVlan]),
        (any::<u16>(), any::<bool>()).prop_map(move |(v, s)| match tp {
            Some((fs, fd)) => vec![set(if s { fs } else { fd }, v.into())],
            None => vec![Action::DecNwTtl],
        }),
    ];
    vec(one, 0..5)
        .prop_map(move |lists| {
            // Push a tag where 1.0's set_vlan_* would: when there is none.
            let mut vlan = tagged;
            let mut out = Vec::new();
            for a in lists.into_iter().flatten() {
                match &a {
                    Action::SetField(MatchEntry::Basic(o))
                        if !vlan && matches!(o.field, F::VlanVid | F::VlanPcp) =>
                    {
                        out.push(Action::PushVlan(0x8100));
                        vlan = true;
                    }
                    Action::PopVlan => vlan = false,
                    _ => {}
                }
                out.push(a);
            }
            out
        })
        .boxed()
}

fn flow_mod_expressible() -> impl Strategy<Value = FlowMod> {
    match_expressible()
        .prop_flat_map(|m| {
            let acts = actions_for(&m);
            (
                Just(m),
                acts,
                0u8..5,
                any::<(u64, u16, u16, u16, u32)>(),
                port32(),
                0u16..4,
            )
        })
        .prop_map(
            |(match_, actions, c, (cookie, idle, hard, priority, buffer_id), out_port, flags)| {
                let command = FlowModCommand::from(c);
                FlowMod {
                    cookie,
                    cookie_mask: 0,
                    table_id: if c >= 3 { 0xff } else { 0 },
                    command,
                    idle_timeout: idle,
                    hard_timeout: hard,
                    // Not every field matched: the priority is kept.
                    priority,
                    buffer_id,
                    out_port,
                    out_group: 0xffff_ffff,
                    // 1.0's ADD resets counters (RESET_COUNTS).
                    flags: if c == 0 { flags | 4 } else { flags },
                    match_,
                    instructions: if actions.is_empty() {
                        vec![]
                    } else {
                        vec![Instruction::ApplyActions(actions)]
                    },
                }
            },
        )
}

fn flow_stats_expressible() -> impl Strategy<Value = FlowStats> {
    (
        flow_mod_expressible(),
        any::<(u8, u32, u32, u64, u64)>(),
        proptest::option::of(any::<(u64, u64)>()),
    )
        .prop_map(|(f, (table_id, ds, dn, pc, bc), meta)| {
            let mut instructions = f.instructions;
            if let Some((metadata, mask)) = meta {
                instructions.push(Instruction::WriteMetadata { metadata, mask });
            }
            FlowStats {
                idle_age: None,
                hard_age: None,
                table_id,
                duration_sec: ds,
                duration_nsec: dn,
                priority: f.priority,
                idle_timeout: f.idle_timeout,
                hard_timeout: f.hard_timeout,
                flags: 0,
                cookie: f.cookie,
                packet_count: pc,
                byte_count: bc,
                match_: f.match_,
                instructions,
            }
        })
}

fn error10() -> impl Strategy<Value = ErrorCode> {
    prop_oneof![
        Just(ErrorCode::BadRequest(BadRequestCode::BadLen)),
        Just(ErrorCode::BadRequest(BadRequestCode::BadTableId)),
        Just(ErrorCode::BadAction(BadActionCode::MatchInconsistent)),
        Just(ErrorCode::BadAction(BadActionCode::BadOutPort)),
        Just(ErrorCode::FlowModFailed(FlowModFailedCode::Overlap)),
        Just(ErrorCode::FlowModFailed(FlowModFailedCode::BadTimeout)),
        Just(ofp::error::NXBRC_UNENCODABLE_ERROR),
    ]
}

fn message_expressible() -> impl Strategy<Value = Message> {
    use Message as M;
    let mp = |b: BoxedStrategy<MultipartReplyBody>| {
        (b, 0u16..2).prop_map(|(body, flags)| M::MultipartReply(MultipartReply { flags, body }))
    };
    prop_oneof![
        flow_mod_expressible().prop_map(M::FlowMod),
        (
            any::<(u64, u16, u32, u32, u16, u64, u64)>(),
            0u8..3,
            match_expressible()
        )
            .prop_map(|((cookie, priority, ds, dn, idle, pc, bc), r, match_)| {
                M::FlowRemoved(FlowRemoved {
                    cookie,
                    priority,
                    reason: FlowRemovedReason::from(r),
                    table_id: 0xff,
                    duration_sec: ds,
                    duration_nsec: dn,
                    idle_timeout: idle,
                    hard_timeout: 0,
                    packet_count: pc,
                    byte_count: bc,
                    match_,
                })
            }),
        (any::<(u32, u16)>(), 0u8..3, port32(), common::bytes_any(64)).prop_map(
            |((buffer_id, total_len), r, p, data)| M::PacketIn(PacketIn {
                buffer_id,
                total_len,
                reason: PacketInReason::from(r),
                table_id: 0,
                cookie: 0,
                match_: Match::new().with(ex(F::InPort, p.into())),
                data,
            })
        ),
        (0u8..3, port_desc10()).prop_map(|(r, desc)| M::PortStatus(PortStatus {
            reason: PortReason::from(r),
            desc
        })),
        (
            any::<(u64, u32, u8)>(),
            any::<u32>(),
            vec(port_desc10(), 0..4)
        )
            .prop_map(
                |((datapath_id, n_buffers, n_tables), caps, ports)| M::FeaturesReply(
                    FeaturesReply {
                        datapath_id,
                        n_buffers,
                        n_tables,
                        auxiliary_id: 0,
                        capabilities: caps & 0x67,
                        reserved: 0,
                        ports,
                    }
                )
            ),
        (port32(), any::<[u8; 6]>(), any::<[u32; 2]>(), features()).prop_map(
            |(port_no, hw_addr, cm, advertise)| M::PortMod(PortMod {
                port_no,
                hw_addr,
                config: cm[0] & 0x7f,
                mask: cm[1] & 0x7f,
                advertise,
            })
        ),
        (port32(), vec(common::bytes_any(8), 0..3)).prop_map(|(p, d)| M::PacketOut(PacketOut {
            buffer_id: 0xffff_ffff,
            in_port: p,
            actions: d
                .iter()
                .map(|_| Action::Output {
                    port: p,
                    max_len: 0
                })
                .collect(),
            data: Bytes::new(),
        })),
        (error10(), common::bytes_any(16))
            .prop_map(|(code, data)| M::Error(ErrorMsg { code, data })),
        mp(vec(flow_stats_expressible(), 0..3)
            .prop_map(MultipartReplyBody::Flow)
            .boxed()),
        mp(vec(
            any::<(u8, u32, u64, u64)>().prop_map(|(table_id, a, l, m)| TableStats {
                table_id,
                name: Default::default(),
                active_count: a,
                lookup_count: l,
                matched_count: m
            }),
            0..4
        )
        .prop_map(MultipartReplyBody::Table)
        .boxed()),
        mp(vec(
            (port32(), any::<[u64; 12]>()).prop_map(|(p, c)| PortStats::with_counters(
                p,
                c,
                (0, 0)
            )),
            0..3
        )
        .prop_map(MultipartReplyBody::PortStats)
        .boxed()),
        mp(vec(
            (port32(), any::<(u32, u64, u64, u64)>()).prop_map(
                |(port_no, (queue_id, tb, tp, te))| QueueStats {
                    port_no,
                    queue_id,
                    tx_bytes: tb,
                    tx_packets: tp,
                    tx_errors: te,
                    duration_sec: 0,
                    duration_nsec: 0
                }
            ),
            0..3
        )
        .prop_map(MultipartReplyBody::Queue)
        .boxed()),
        mp(any::<(u64, u64, u32)>()
            .prop_map(|(p, b, f)| MultipartReplyBody::Aggregate(AggregateStats {
                packet_count: p,
                byte_count: b,
                flow_count: f
            }))
            .boxed()),
        (match_expressible(), any::<u8>(), port32(), any::<bool>()).prop_map(
            |(match_, table_id, out_port, agg)| {
                let f = FlowStatsRequest {
                    table_id,
                    out_port,
                    out_group: 0xffff_ffff,
                    cookie: 0,
                    cookie_mask: 0,
                    match_,
                };
                M::MultipartRequest(MultipartRequest::new(if agg {
                    MultipartRequestBody::Aggregate(f)
                } else {
                    MultipartRequestBody::Flow(f)
                }))
            }
        ),
        (
            port32().prop_filter("1.0 says all ports as OFPP_ALL, read as OFPP_ANY", |p| *p
                != 0xffff_fffc),
            any::<u32>()
        )
            .prop_map(
                |(port_no, queue_id)| M::MultipartRequest(MultipartRequest::new(
                    MultipartRequestBody::Queue { port_no, queue_id }
                ))
            ),
        (
            any::<u32>().prop_filter("not Nicira", |v| *v != 0x2320),
            any::<u32>(),
            common::bytes_any(16)
        )
            .prop_map(
                |(experimenter, exp_type, data)| M::Experimenter(ExperimenterMsg {
                    experimenter,
                    exp_type,
                    data
                })
            ),
        (
            port32(),
            vec((any::<u32>(), proptest::option::of(any::<u16>())), 0..3)
        )
            .prop_map(|(port, qs)| M::QueueGetConfigReply(QueueGetConfigReply {
                port,
                queues: qs
                    .into_iter()
                    .map(|(queue_id, r)| PacketQueue {
                        queue_id,
                        port,
                        properties: r.map(QueueProp::MinRate).into_iter().collect()
                    })
                    .collect(),
            })),
        port32().prop_map(|port| M::QueueGetConfigRequest { port }),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// decode(encode(m)) == m for every message 1.0 can say exactly.
    #[test]
    fn expressible_messages_round_trip(m in message_expressible(), xid in any::<u32>()) {
        let b = enc(&m, xid);
        let fs = frames(&b)?;
        prop_assert_eq!(fs.len(), 1);
        let (h, back) = Message::decode_as(&fs[0], Version::V1_0)
            .map_err(|e| TestCaseError::fail(format!("refused: {e:?}")))?;
        prop_assert_eq!(h.xid, xid);
        prop_assert_eq!(back, m);
    }
}
