//! Golden-byte tests of whole 1.0 messages: the bytes are laid out by hand
//! from the 1.0.0 spec's structures (and checked against `ovs-ofctl
//! ofp-print` when written), not taken from this encoder.

use super::*;
use crate::action::Action;
use crate::msg::multipart::{FlowStats, MultipartReply, MultipartReplyBody, TableStats};
use crate::port::PortDesc;
use crate::wire::FixedStr;

fn dec(b: &[u8]) -> Result<Message> {
    decode(&Bytes::copy_from_slice(b)).map(|(_, m)| m)
}

fn enc(m: &Message) -> Vec<u8> {
    let mut out = Vec::new();
    encode(m, 0x1234, &mut out).unwrap();
    out
}

fn hdr(ty: u8, len: u16) -> Vec<u8> {
    let mut v = vec![1, ty];
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(&0x1234u32.to_be_bytes());
    v
}

/// FLOW_MOD ADD `in_port=1,actions=output:2` (priority 100, cookie 5,
/// idle 10, send_flow_rem): `ovs-ofctl ofp-print` shows "OFPT_FLOW_MOD
/// (xid=0x1234): ADD priority=100,in_port=1 cookie:0x5 idle:10
/// send_flow_rem actions=output:2".
#[test]
fn flow_mod_add_golden() {
    let mut b = hdr(14, 80);
    b.extend_from_slice(&[0x00, 0x38, 0x20, 0xfe, 0, 1]); // wildcards, in_port
    b.extend_from_slice(&[0; 34]); // rest of the match
    b.extend_from_slice(&5u64.to_be_bytes()); // cookie
    b.extend_from_slice(&[0, 0, 0, 10, 0, 0, 0, 100]); // ADD, idle, hard, priority
    b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 1]); // buffer, out_port, flags
    b.extend_from_slice(&[0, 0, 0, 8, 0, 2, 0, 0]); // output:2
    let m = dec(&b).unwrap();
    let want = FlowMod {
        cookie: 5,
        idle_timeout: 10,
        priority: 100,
        // send_flow_rem, and 1.0's ADD resets counters.
        flags: 1 | 4,
        match_: Match::new().with(Oxm::exact(OxmField::InPort, 1)),
        instructions: vec![Instruction::ApplyActions(vec![Action::Output {
            port: 2,
            max_len: 0,
        }])],
        ..FlowMod::default()
    };
    assert_eq!(m, Message::FlowMod(want));
    assert_eq!(enc(&m), b);
}

#[test]
fn flow_mod_delete_applies_to_all_tables_and_exact_gets_top_priority() {
    let mut b = hdr(14, 72);
    // Every field exact: dl_type IPv4, nw_proto TCP.
    b.extend_from_slice(&[0, 0, 0, 0, 0, 1]);
    b.extend_from_slice(&[0; 12]);
    b.extend_from_slice(&[0, 5, 0, 0, 0x08, 0x00, 0, 6, 0, 0]);
    b.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2, 0, 1, 0, 2]);
    b.extend_from_slice(&0u64.to_be_bytes());
    b.extend_from_slice(&[0, 3, 0, 0, 0, 0, 0, 7]); // DELETE, priority 7
    b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0]);
    let Message::FlowMod(f) = dec(&b).unwrap() else {
        panic!()
    };
    assert_eq!(f.command, FlowModCommand::Delete);
    assert_eq!(f.table_id, TABLE_ALL);
    assert_eq!(f.priority, 0xffff);
    assert_eq!(f.out_port, port_no::ANY);
    assert_eq!(f.out_group, group_no::ANY);
    assert!(f.instructions.is_empty());
    assert_eq!(
        f.match_.get(OxmField::VlanVid),
        Some(&Oxm::exact(OxmField::VlanVid, 0x1005))
    );
    assert_eq!(
        f.match_.get(OxmField::TcpDst),
        Some(&Oxm::exact(OxmField::TcpDst, 2))
    );
}

#[test]
fn flow_mod_modify_is_table_0s_and_keeps_no_oxm_bytes() {
    let mut b = hdr(14, 72);
    b.extend_from_slice(&[0x00, 0x38, 0x20, 0xfe, 0, 1]);
    b.extend_from_slice(&[0; 34]);
    b.extend_from_slice(&9u64.to_be_bytes());
    b.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0x80, 0]); // MODIFY
    b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0]);
    let Message::FlowMod(f) = dec(&b).unwrap() else {
        panic!()
    };
    assert_eq!(f.command, FlowModCommand::Modify);
    assert_eq!(f.table_id, 0);
    assert_eq!((f.cookie, f.cookie_mask), (9, 0));
    // The 1.3 codec's raw-match shortcut must not read a 1.0 frame.
    assert_eq!(FlowMod::match_bytes(&b), None);
}

#[test]
fn flow_mod_refusals_as_ovs() {
    let base = |command: u16, flags: u16, idle: u16| {
        let mut b = hdr(14, 72);
        b.extend_from_slice(&[0x00, 0x3f, 0xff, 0xff]);
        b.extend_from_slice(&[0; 36]);
        b.extend_from_slice(&0u64.to_be_bytes());
        b.extend_from_slice(&command.to_be_bytes());
        b.extend_from_slice(&idle.to_be_bytes());
        b.extend_from_slice(&[0, 0, 0x80, 0]);
        b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        b.extend_from_slice(&flags.to_be_bytes());
        b
    };
    let code = |b: Vec<u8>| dec(&b).unwrap_err().code;
    assert_eq!(
        code(base(5, 0, 0)),
        ErrorCode::FlowModFailed(FlowModFailedCode::BadCommand)
    );
    assert_eq!(
        code(base(0, 8, 0)),
        ErrorCode::FlowModFailed(FlowModFailedCode::BadFlags)
    );
    assert_eq!(
        code(base(0, 4, 0)),
        ErrorCode::FlowModFailed(FlowModFailedCode::TableFull)
    );
    assert_eq!(
        code(base(0, 4, 3)),
        ErrorCode::FlowModFailed(FlowModFailedCode::BadTimeout)
    );
    assert!(dec(&base(0, 2, 0)).is_ok());
}

/// FEATURES_REPLY with one port: `ovs-ofctl ofp-print` shows
/// "OFPT_FEATURES_REPLY (xid=0x1234): dpid:0000000000000001 /
/// n_tables:254, n_buffers:256 / capabilities: FLOW_STATS TABLE_STATS
/// PORT_STATS QUEUE_STATS ARP_MATCH_IP / actions: output enqueue
/// set_vlan_vid ... / 1(p1): addr:00:00:00:00:00:01 ... current: 1GB-FD".
#[test]
fn features_reply_golden() {
    let mut b = hdr(6, 32 + 48);
    b.extend_from_slice(&1u64.to_be_bytes());
    b.extend_from_slice(&[0, 0, 1, 0, 254, 0, 0, 0]); // n_buffers, n_tables, pad
    b.extend_from_slice(&[0, 0, 0, 0xc7]); // capabilities
    b.extend_from_slice(&[0, 0, 0x0f, 0xff]); // actions
    b.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 1]);
    let mut name = [0u8; 16];
    name[..2].copy_from_slice(b"p1");
    b.extend_from_slice(&name);
    b.extend_from_slice(&[0; 8]); // config, state
    b.extend_from_slice(&[0, 0, 0, 0x20]); // curr 1GB_FD
    b.extend_from_slice(&[0; 12]);
    let f = FeaturesReply {
        datapath_id: 1,
        n_buffers: 256,
        n_tables: 254,
        capabilities: capabilities::FLOW_STATS
            | capabilities::TABLE_STATS
            | capabilities::PORT_STATS
            | capabilities::QUEUE_STATS
            | capabilities::GROUP_STATS,
        ports: vec![PortDesc {
            port_no: 1,
            hw_addr: [0, 0, 0, 0, 0, 1],
            name: FixedStr::new("p1"),
            curr: crate::port::port_features::F_1GB_FD,
            curr_speed: 1_000_000,
            ..Default::default()
        }],
        ..Default::default()
    };
    let out = enc(&Message::FeaturesReply(f.clone()));
    assert_eq!(out, b);
    let Message::FeaturesReply(back) = dec(&out).unwrap() else {
        panic!()
    };
    // Group stats has no 1.0 bit.
    assert_eq!(
        back.capabilities,
        f.capabilities & !capabilities::GROUP_STATS
    );
    assert_eq!(back.ports, f.ports);
}

/// PACKET_IN: buffer 0x100, total_len 60, in_port 3, reason ACTION.
#[test]
fn packet_in_golden() {
    let mut b = hdr(10, 18 + 4);
    b.extend_from_slice(&[0, 0, 1, 0, 0, 60, 0, 3, 1, 0, 0xde, 0xad, 0xbe, 0xef]);
    let p = PacketIn {
        buffer_id: 0x100,
        total_len: 60,
        reason: PacketInReason::Action,
        table_id: 0,
        cookie: 0,
        match_: Match::new().with(Oxm::exact(OxmField::InPort, 3)),
        data: Bytes::from_static(&[0xde, 0xad, 0xbe, 0xef]),
    };
    assert_eq!(enc(&Message::PacketIn(p.clone())), b);
    assert_eq!(dec(&b).unwrap(), Message::PacketIn(p.clone()));
    // Other match fields, the table and the cookie have no room in 1.0.
    let mut q = p.clone();
    q.table_id = 3;
    q.cookie = 9;
    q.match_ = q.match_.with(Oxm::exact(OxmField::Metadata, 1));
    assert_eq!(enc(&Message::PacketIn(q)), b);
}

#[test]
fn flow_removed_reads_as_ovs() {
    let mut b = hdr(11, 88);
    b.extend_from_slice(&[0x00, 0x38, 0x20, 0xff]);
    b.extend_from_slice(&[0; 36]);
    b.extend_from_slice(&7u64.to_be_bytes());
    b.extend_from_slice(&[0x80, 0, 2, 0, 0, 0, 0, 5, 0, 0, 0, 6, 0, 10, 0, 0]);
    b.extend_from_slice(&11u64.to_be_bytes());
    b.extend_from_slice(&12u64.to_be_bytes());
    let want = FlowRemoved {
        cookie: 7,
        priority: 0x8000,
        reason: FlowRemovedReason::Delete,
        table_id: 255,
        duration_sec: 5,
        duration_nsec: 6,
        idle_timeout: 10,
        hard_timeout: 0,
        packet_count: 11,
        byte_count: 12,
        match_: Match::new(),
    };
    assert_eq!(dec(&b).unwrap(), Message::FlowRemoved(want.clone()));
    assert_eq!(enc(&Message::FlowRemoved(want)), b);
}

#[test]
fn type_numbers_and_version() {
    // BARRIER_REQUEST is 18 in 1.0 (1.3's MULTIPART_REQUEST).
    let (h, m) = decode(&Bytes::from(hdr(18, 8))).unwrap();
    assert_eq!(m, Message::BarrierRequest);
    assert_eq!(h.msg_type, crate::MsgType::BarrierRequest);
    assert_eq!(enc(&Message::BarrierReply), hdr(19, 8));
    assert_eq!(
        enc(&Message::QueueGetConfigRequest { port: 2 }),
        [hdr(20, 12), vec![0, 2, 0, 0]].concat()
    );
    // 22 is no 1.0 type.
    assert_eq!(
        dec(&hdr(22, 8)).unwrap_err().code,
        ErrorCode::BadRequest(BadRequestCode::BadType)
    );
    // A 1.3 header on a 1.0 connection.
    let mut b = hdr(18, 8);
    b[0] = 4;
    assert_eq!(
        dec(&b).unwrap_err().code,
        ErrorCode::BadRequest(BadRequestCode::BadVersion)
    );
    // Truncated bodies.
    assert_eq!(dec(&hdr(9, 8)).unwrap_err().code, ErrorCode::BAD_LEN);
    assert_eq!(dec(&hdr(4, 8)).unwrap_err().code, ErrorCode::BAD_LEN);
}

#[test]
fn messages_without_a_1_0_form_write_nothing() {
    let mut out = vec![9];
    encode(&Message::GetAsyncRequest, 1, &mut out).unwrap();
    encode(
        &Message::MultipartReply(MultipartReply::new(MultipartReplyBody::PortDesc(vec![]))),
        1,
        &mut out,
    )
    .unwrap();
    assert_eq!(out, [9]);
}

fn flow_stats(n_actions: usize) -> FlowStats {
    FlowStats {
        idle_age: None,
        hard_age: None,
        table_id: 0,
        duration_sec: 1,
        duration_nsec: 2,
        priority: 3,
        idle_timeout: 0,
        hard_timeout: 0,
        flags: 0,
        cookie: 4,
        packet_count: 5,
        byte_count: 6,
        match_: Match::new(),
        instructions: vec![Instruction::ApplyActions(vec![
            Action::Output {
                port: 1,
                max_len: 0
            };
            n_actions
        ])],
    }
}

#[test]
fn long_stats_replies_are_split_with_reply_more() {
    // 1000 entries of 96 bytes: 96 000 bytes, two messages.
    let m = MultipartReply::new(MultipartReplyBody::Flow(vec![flow_stats(1); 1000]));
    let mut out = vec![0xaa];
    encode(&Message::MultipartReply(m), 7, &mut out).unwrap();
    let mut rest = &out[1..];
    let mut entries = 0;
    let mut flags = Vec::new();
    while !rest.is_empty() {
        let len = u16::from_be_bytes([rest[2], rest[3]]) as usize;
        assert!(len <= MAX_MSG_LEN);
        let (Header { .. }, msg) = decode(&Bytes::copy_from_slice(&rest[..len])).unwrap();
        let Message::MultipartReply(r) = msg else {
            panic!()
        };
        let MultipartReplyBody::Flow(v) = r.body else {
            panic!()
        };
        entries += v.len();
        flags.push(r.flags);
        rest = &rest[len..];
    }
    assert_eq!(entries, 1000);
    assert_eq!(flags, [MPF_MORE, 0]);
    // One entry too big for any message: TooLong, out untouched.
    let m = MultipartReply::new(MultipartReplyBody::Flow(vec![flow_stats(8200)]));
    let mut out = vec![0xaa];
    let e = encode(&Message::MultipartReply(m), 7, &mut out).unwrap_err();
    assert!(e.len > MAX_MSG_LEN);
    assert_eq!(out, [0xaa]);
}

#[test]
fn table_stats_reply_golden_layout() {
    let m = MultipartReply::new(MultipartReplyBody::Table(vec![TableStats {
        table_id: 0,
        name: Default::default(),
        active_count: 1,
        lookup_count: 2,
        matched_count: 3,
    }]));
    let out = enc(&Message::MultipartReply(m));
    assert_eq!(out.len(), 12 + 64);
    assert_eq!(&out[..12], &[1, 17, 0, 76, 0, 0, 0x12, 0x34, 0, 3, 0, 0]);
}

#[test]
fn queue_config_reply_keeps_min_rate_only() {
    let q = QueueGetConfigReply {
        port: 1,
        queues: vec![PacketQueue {
            queue_id: 2,
            port: 1,
            properties: vec![QueueProp::MinRate(500), QueueProp::MaxRate(900)],
        }],
    };
    let out = enc(&Message::QueueGetConfigReply(q));
    let mut want = hdr(21, 16 + 8 + 16);
    want.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    want.extend_from_slice(&[0, 0, 0, 2, 0, 24, 0, 0]);
    want.extend_from_slice(&[0, 1, 0, 16, 0, 0, 0, 0, 0x01, 0xf4, 0, 0, 0, 0, 0, 0]);
    assert_eq!(out, want);
    let Message::QueueGetConfigReply(back) = dec(&out).unwrap() else {
        panic!()
    };
    assert_eq!(back.queues[0].properties, [QueueProp::MinRate(500)]);
}

#[test]
fn packet_out_reads_actions_with_the_packet() {
    // set_tp_dst with a UDP packet: udp_dst.
    let mut pkt = vec![0u8; 12];
    pkt.extend_from_slice(&[0x08, 0]);
    pkt.extend_from_slice(&[0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0]);
    let mut b = hdr(13, (16 + 8 + pkt.len()) as u16);
    b.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xfd, 0, 8]);
    b.extend_from_slice(&[0, 10, 0, 8, 0, 53, 0, 0]);
    b.extend_from_slice(&pkt);
    let Message::PacketOut(p) = dec(&b).unwrap() else {
        panic!()
    };
    assert_eq!(p.in_port, port_no::CONTROLLER);
    assert_eq!(
        p.actions,
        [Action::SetField(crate::oxm::MatchEntry::Basic(Oxm::exact(
            OxmField::UdpDst,
            53
        )))]
    );
    assert_eq!(enc(&Message::PacketOut(p)), b);
}
