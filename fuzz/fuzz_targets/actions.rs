//! Action lists a hostile controller can send, over frames they may not
//! fit: as a PACKET_OUT (validated against the packet, then run), as a
//! group bucket (validated, then reached by a flow and traced), and run
//! unvalidated as well, since a worker must survive whatever reaches it.
//! No panic, ever; every output's bytes are a frame the worker built.
//!
//! Input: byte 0 = how many bytes of action program follow; the program is
//! a list of 1-byte opcodes (set_field ones followed by a 16-byte value);
//! the rest is the frame. The other half of the time the program bytes are
//! decoded as OpenFlow wire actions instead.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use ofp::msg::group::{Bucket, GroupMod, GroupModCommand, GroupType};
use ofp::oxm::{MatchEntry, Oxm, OxmField as F};
use ofp::port::{group_no, port_no};
use ofp::Action;
use pipeline::{Config, Pipeline, PortState, Worker};

const FIELDS: &[F] = &[
    F::EthDst, F::EthSrc, F::EthType, F::VlanVid, F::VlanPcp, F::IpDscp, F::IpEcn, F::IpProto,
    F::Ipv4Src, F::Ipv4Dst, F::TcpSrc, F::TcpDst, F::UdpSrc, F::UdpDst, F::SctpSrc, F::SctpDst,
    F::Icmpv4Type, F::Icmpv4Code, F::ArpOp, F::ArpSpa, F::ArpTpa, F::ArpSha, F::ArpTha,
    F::Ipv6Src, F::Ipv6Dst, F::Ipv6Flabel, F::Icmpv6Type, F::Icmpv6Code, F::Ipv6NdTarget,
    F::Ipv6NdSll, F::Ipv6NdTll, F::MplsLabel, F::MplsTc, F::MplsBos, F::PbbIsid, F::Metadata,
    F::TunnelId,
];

/// Opcodes to actions; set_field takes the next 16 bytes as its value.
fn program(mut p: &[u8]) -> Vec<Action> {
    let mut v = Vec::new();
    while let Some((&op, rest)) = p.split_first() {
        p = rest;
        let a = match op % 24 {
            0..=7 => {
                let f = FIELDS[(op as usize / 24 + op as usize) % FIELDS.len()];
                let mut b = [0u8; 16];
                let n = p.len().min(16);
                b[16 - n..].copy_from_slice(&p[..n]);
                p = &p[n..];
                let raw = u128::from_be_bytes(b);
                // Keep the value inside the field's width, as the decoder does.
                let bits = f.info().map_or(128, |i| i.bits as u32);
                let value = if bits >= 128 { raw } else { raw & ((1u128 << bits) - 1) };
                Action::SetField(MatchEntry::Basic(Oxm::exact(f, value)))
            }
            8 => Action::PushVlan(if op & 0x80 != 0 { 0x88a8 } else { 0x8100 }),
            9 => Action::PopVlan,
            10 => Action::PushMpls(if op & 0x80 != 0 { 0x8848 } else { 0x8847 }),
            11 => Action::PopMpls([0x0800, 0x86dd, 0x0806, 0x8847][op as usize >> 6]),
            12 => Action::PushPbb(0x88e7),
            13 => Action::PopPbb,
            14 => Action::DecNwTtl,
            15 => Action::SetNwTtl(op >> 5),
            16 => Action::DecMplsTtl,
            17 => Action::SetMplsTtl(op >> 5),
            18 => Action::CopyTtlIn,
            19 => Action::CopyTtlOut,
            20 => Action::SetQueue((op >> 5) as u32),
            21 => Action::Output { port: [1, 2, port_no::IN_PORT, port_no::FLOOD, port_no::CONTROLLER, port_no::TABLE, port_no::ALL, 9][op as usize >> 5], max_len: 64 },
            22 => Action::Group(1 + (op as u32 >> 7)),
            // Open vSwitch's Nicira actions: the next byte says which.
            23 if !p.is_empty() => {
                let x = p[0];
                p = &p[1..];
                nicira(x, &mut p)
            }
            _ => Action::Output { port: 2, max_len: 0 },
        };
        v.push(a);
    }
    v
}

/// A Nicira action by `x`; clone takes the next actions of the program.
fn nicira(x: u8, p: &mut &[u8]) -> Action {
    use ofp::action::*;
    let reg = |n: u8| Subfield::whole(F::Reg(n % 4));
    match x % 12 {
        0 => Action::Exit,
        1 => Action::Note(Bytes::from_static(&[1, 2, 3, 0, 0, 0])),
        2 => Action::OutputReg(OutputReg { src: reg(x >> 4), max_len: 64, form: OutputRegForm::OutputReg }),
        3 => Action::StackPush(reg(x >> 4)),
        4 => Action::StackPop(reg(x >> 4)),
        5 => {
            // The next (x >> 4) opcodes, at most what is left, run in a clone.
            let n = ((x >> 4) as usize).min(p.len());
            let (inner, rest) = p.split_at(n);
            *p = rest;
            Action::Clone(program(inner))
        }
        6 => Action::DecTtlIds(vec![(x >> 4) as u16 & 1]),
        7 => Action::Multipath(Multipath {
            fields: HashFields::ALL[(x >> 4) as usize % 7],
            basis: x as u16,
            algorithm: [MpAlgorithm::ModuloN, MpAlgorithm::HashThreshold, MpAlgorithm::Hrw, MpAlgorithm::IterHash][(x >> 5) as usize % 4],
            max_link: 3,
            arg: x as u32,
            dst: Subfield { field: F::Reg(0), ofs: 0, n_bits: 2 },
        }),
        8 => Action::Bundle(Box::new(Bundle {
            fields: HashFields::ALL[(x >> 4) as usize % 7],
            basis: 1,
            algorithm: if x & 0x80 != 0 { BdAlgorithm::Hrw } else { BdAlgorithm::ActiveBackup },
            members: vec![1, 2, 3, 7],
            dst: (x & 0x40 != 0).then(|| reg(1)),
        })),
        9 => Action::Controller(Box::new(Controller {
            max_len: 32,
            id: (x >> 7) as u16,
            reason: (x >> 4) & 7,
            userdata: Bytes::new(),
            pause: false,
            meter_id: NX_CTLR_NO_METER,
            form: ControllerForm::Controller,
        })),
        10 => Action::Sample(Sample {
            probability: 1,
            collector_set_id: 0,
            obs_domain_id: 0,
            obs_point_id: 0,
            sampling_port: port_no::ANY,
            direction: SampleDirection::Default,
            form: SampleForm::Sample,
        }),
        _ => Action::Resubmit(Resubmit::new(port_no::IN_PORT, (x >> 4) % 4)),
    }
}

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Config { n_tables: 4, ..Config::default() });
    for n in 1..=3 {
        p.set_port(PortState::up(n));
    }
    p
}

fn bucket_group(id: u32, actions: Vec<Action>) -> GroupMod {
    GroupMod::new(
        GroupModCommand::Add,
        GroupType::All,
        id,
        vec![Bucket { weight: 0, watch_port: port_no::ANY, watch_group: group_no::ANY, actions, ..Bucket::default() }],
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else { return };
    let n = (n as usize & 0x7f).min(rest.len());
    let (prog, frame) = rest.split_at(n);
    let actions = if data[0] & 0x80 == 0 {
        program(prog)
    } else {
        let b = Bytes::copy_from_slice(prog);
        let mut r = ofp::wire::Reader::new(&b, ofp::ErrorCode::BadAction(ofp::error::BadActionCode::BadLen));
        match ofp::action::decode_actions(&mut r) {
            Ok(a) => a,
            Err(_) => return,
        }
    };
    if actions.len() > 64 {
        return;
    }

    let mut p = pipeline();
    // Group 2 exists for group actions to reach (group 1 is added below).
    p.group_mod(&bucket_group(2, vec![Action::Output { port: 3, max_len: 0 }]), 0).unwrap();
    let mut w = Worker::new(0);

    // As a PACKET_OUT: validated against the packet, run if accepted.
    let accepted = p.check_packet_out(&actions, frame, 1).is_ok();
    let snap = p.snapshot();
    // Each action adds at most a PBB header (18 bytes).
    let most = frame.len() + 18 * actions.len();
    for _ in 0..1 + accepted as usize {
        let mut f = frame.to_vec();
        for o in w.packet_out(&snap, 1, &actions, &mut f, 0) {
            let len = o.data.as_ref().map_or(f.len(), |d| d.len());
            assert!(len <= most, "an output of {len} bytes from a {}-byte frame", frame.len());
        }
    }

    // As a bucket: validated by GROUP_MOD, then reached by a flow and traced.
    let g = bucket_group(1, actions);
    if p.group_mod(&g, 0).is_ok() {
        p.flow_mod(&ofp::text::parse_flow_mod("priority=1,actions=group:1").unwrap(), 0).unwrap();
        let snap = p.snapshot();
        for port in [1u32, 2] {
            let mut f = frame.to_vec();
            let _ = w.process(&snap, port, &mut f, 0);
        }
        let t = pipeline::trace::trace(&snap, 1, frame);
        let _ = t.text(1);
    }
});
