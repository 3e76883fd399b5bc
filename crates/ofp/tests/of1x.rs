//! OpenFlow 1.2, 1.4 and 1.5 (`ofp::of1x`): golden bytes (os-ken's
//! encodings of controller-to-switch messages, and switch-to-controller
//! messages laid out by hand from the specs' structures), the errors Open
//! vSwitch answers, multipart splitting, and a round trip per version.

mod common;

use bytes::Bytes;
use proptest::prelude::*;

use ofp::action::Action;
use ofp::error::{
    BadInstructionCode, BadMatchCode, BadRequestCode, BundleFailedCode, GroupModFailedCode,
    MeterModFailedCode,
};
use ofp::instruction::Instruction;
use ofp::msg::bundle::{BundleCtrlType, BundleMsg};
use ofp::msg::flow::{FlowRemoved, FlowRemovedReason, PacketIn, PacketInReason, PacketOut};
use ofp::msg::group::{GroupModCommand, GroupType};
use ofp::msg::multipart::{MultipartReply, MultipartReplyBody, MultipartRequestBody, MPF_MORE};
use ofp::msg::simple::{AsyncConfig, ErrorMsg, PortReason, PortStatus};
use ofp::msg::Message;
use ofp::oxm::{Match, Oxm, OxmField};
use ofp::port::{port_features, port_no, port_state, PortDesc, NO_BUFFER};
use ofp::wire::FixedStr;
use ofp::{ErrorCode, Version};

fn unhex(s: &str) -> Bytes {
    let s: String = s.split_whitespace().collect();
    Bytes::from(
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect::<Vec<_>>(),
    )
}

fn decode(hex: &str, v: Version) -> Message {
    Message::decode_as(&unhex(hex), v).expect("decodes").1
}

fn encode(m: &Message, v: Version, xid: u32) -> Vec<u8> {
    let mut out = Vec::new();
    m.encode_as(v, xid, &mut out).expect("fits");
    out
}

fn refused(hex: &str, v: Version) -> ErrorCode {
    Message::decode_as(&unhex(hex), v)
        .expect_err("refused")
        .code
}

/// Decodes os-ken's bytes and encodes them back to the same bytes.
fn decode_bytes(b: &[u8], v: Version) -> Message {
    Message::decode_as(&Bytes::copy_from_slice(b), v)
        .expect("decodes")
        .1
}

fn same_back(hex: &str, v: Version) -> Message {
    let m = decode(hex, v);
    let xid = u32::from_be_bytes(unhex(hex)[4..8].try_into().unwrap());
    assert_eq!(encode(&m, v, xid), unhex(hex).to_vec(), "{m:?}");
    m
}

fn in_port(p: u32) -> Match {
    Match::new().with(Oxm {
        field: OxmField::InPort,
        value: u128::from(p),
        mask: None,
    })
}

// os-ken 2.x, ofproto_v1_4_parser.OFPPortMod(port_no=1,
// hw_addr='02:00:00:00:00:01', config=0, mask=1,
// properties=[OFPPortModPropEthernet(advertise=0x20)]), xid 7.
const PORT_MOD_14: &str =
    "05100028000000070000000100000000020000000001000000000000000000010000000800000020";

#[test]
fn port_mod_14_carries_advertise_in_its_ethernet_property() {
    let Message::PortMod(p) = same_back(PORT_MOD_14, Version::V1_4) else {
        panic!()
    };
    assert_eq!(
        (p.port_no, p.hw_addr, p.config, p.mask, p.advertise),
        (1, [2, 0, 0, 0, 0, 1], 0, 1, 0x20)
    );
    // An optical property is Open vSwitch's OFPBPC_BAD_TYPE.
    let optical =
        "05100028000000070000000100000000020000000001000000000000000000010001000800000020";
    assert_eq!(
        refused(optical, Version::V1_4),
        ErrorCode::Unknown { ty: 14, code: 0 }
    );
    // A property running past the message: OFPBPC_BAD_LEN.
    let long = "05100028000000070000000100000000020000000001000000000000000000010000001000000020";
    assert_eq!(
        refused(long, Version::V1_4),
        ErrorCode::Unknown { ty: 14, code: 1 }
    );
}

// os-ken OFPSetAsync with properties 0..5 = 0, 7, 7, 7, 0, 15.
const SET_ASYNC_14: &str = "051c00380000000700000008000000000001000800000007000200080000000700030008000000070004000800000000000500080000000f";

#[test]
fn set_async_14_is_the_six_mask_properties() {
    let m = same_back(SET_ASYNC_14, Version::V1_4);
    assert_eq!(
        m,
        Message::SetAsync(AsyncConfig {
            packet_in_mask: [7, 0],
            port_status_mask: [7, 7],
            flow_removed_mask: [15, 0],
        })
    );
    // Only the master's packet-in mask: the rest take the defaults.
    let partial = "051c00100000000700010008 00000001";
    let Message::SetAsync(a) = decode(partial, Version::V1_4) else {
        panic!()
    };
    assert_eq!(a.packet_in_mask, [1, 0]);
    assert_eq!(a.port_status_mask, [0b111, 0b111]);
    // An unknown property type is OFPBPC_BAD_TYPE.
    let bad = "051c00100000000700200008 00000001";
    assert_eq!(
        refused(bad, Version::V1_4),
        ErrorCode::Unknown { ty: 14, code: 0 }
    );
}

#[test]
fn native_bundles_are_the_internal_onf_messages() {
    // os-ken OFPBundleCtrlMsg(7, OPEN_REQUEST, ATOMIC).
    let ctrl = "05210010000000070000000700000001";
    let Message::Experimenter(e) = same_back(ctrl, Version::V1_4) else {
        panic!()
    };
    let Some(Ok(BundleMsg::Control(c))) = BundleMsg::decode(&e) else {
        panic!()
    };
    assert_eq!(
        (c.bundle_id, c.ctrl_type, c.flags),
        (7, BundleCtrlType::OpenRequest, 1)
    );
    // os-ken OFPBundleAddMsg(7, ATOMIC, OFPBarrierRequest): the inner
    // message is held in its 1.3 form and goes back out as 1.4.
    let add = "052200180000000700000007000000010514000800000007";
    let Message::Experimenter(e) = same_back(add, Version::V1_4) else {
        panic!()
    };
    let Some(Ok(BundleMsg::Add(a))) = BundleMsg::decode(&e) else {
        panic!()
    };
    assert_eq!(&a.message[..], &unhex("0414000800000007")[..]);
    // An inner message of 1.5 in a 1.5 bundle too.
    let add15 = "062200180000000700000007000000010614000800000007";
    same_back(add15, Version::V1_5);
    // A 1.5 group mod the 1.3 form cannot say (a selection method) is
    // held as it came, and read back as 1.5 (`decode_held`); one it can
    // say is held in its 1.3 form.
    let mut add = unhex("06220000 00000006 00000007 00000001").to_vec();
    add.extend_from_slice(&unhex(SELECT_HASH_15));
    let n = add.len() as u16;
    add[2..4].copy_from_slice(&n.to_be_bytes());
    let Message::Experimenter(e) = decode_bytes(&add, Version::V1_5) else {
        panic!()
    };
    let Some(Ok(BundleMsg::Add(a))) = BundleMsg::decode(&e) else {
        panic!()
    };
    assert_eq!(&a.message[..], &unhex(SELECT_HASH_15)[..]);
    let (_, held) = ofp::msg::bundle::decode_held(&a.message, Version::V1_5).unwrap();
    assert!(matches!(held, Message::GroupMod(ref g) if g.selection.is_some()));
    assert_eq!(
        ofp::msg::bundle::decode_held(&a.message, Version::V1_3)
            .unwrap_err()
            .code,
        ErrorCode::BadRequest(ofp::error::BadRequestCode::BadVersion)
    );
    let mut add = unhex("06220000 00000007 00000007 00000001").to_vec();
    add.extend_from_slice(&unhex(GROUP_MOD_15_OVS));
    let n = add.len() as u16;
    add[2..4].copy_from_slice(&n.to_be_bytes());
    let Message::Experimenter(e) = decode_bytes(&add, Version::V1_5) else {
        panic!()
    };
    let Some(Ok(BundleMsg::Add(a))) = BundleMsg::decode(&e) else {
        panic!()
    };
    assert_eq!(a.message[0], 4, "the 1.3 form");
    // An inner message of another version (here 1.3's in a 1.4 bundle) is
    // refused, not kept to be read later as that version (the fuzz target
    // `versions` found it kept).
    assert_eq!(
        refused(
            "052200180000000700000007000000010414000800000007",
            Version::V1_4
        ),
        ErrorCode::BadRequest(ofp::error::BadRequestCode::BadVersion)
    );
    // Bundles nested 4 000 deep decode without exhausting the stack.
    let mut inner = unhex("0514000800000007").to_vec();
    while inner.len() + 16 <= 65_535 {
        let mut outer = vec![5, 34, 0, 0, 0, 0, 0, 7, 0, 0, 0, 7, 0, 0, 0, 1];
        let n = (outer.len() + inner.len()) as u16;
        outer[2..4].copy_from_slice(&n.to_be_bytes());
        outer.extend_from_slice(&inner);
        inner = outer;
    }
    let m = decode(&hex(&inner), Version::V1_4);
    assert_eq!(encode(&m, Version::V1_4, 7), inner);
    // OpenFlow 1.2 has no bundles (the ONF extension is 1.3's).
    let onf = ofp::msg::bundle::BundleCtrl {
        bundle_id: 1,
        ctrl_type: BundleCtrlType::OpenRequest,
        flags: 0,
        properties: Bytes::new(),
    }
    .message();
    let mut b = onf.to_bytes(1);
    b[0] = 3;
    assert_eq!(
        Message::decode_as(&Bytes::from(b), Version::V1_2)
            .unwrap_err()
            .code,
        ErrorCode::BadRequest(BadRequestCode::BadExpType)
    );
}

#[test]
fn table_mod_14_drops_eviction_and_flow_mod_14_importance() {
    // os-ken OFPTableMod(1, 0, [OFPTableModPropEviction(flags=1)]).
    let m = decode(
        "051100180000000701000000000000000002000800000001",
        Version::V1_4,
    );
    assert_eq!(
        encode(&m, Version::V1_4, 7),
        unhex("05110010000000070100000000000000").to_vec()
    );
    // os-ken OFPFlowMod(importance=5, match in_port=1): importance is
    // where 1.3 has padding; it goes back out as 0.
    let fm = "050e004000000007000000000000000000000000000000000000000000008000ffffffff0000000000000000000000050001000c800000040000000100000000";
    let m = decode(fm, Version::V1_4);
    let mut want = unhex(fm).to_vec();
    want[8 + 38..8 + 40].copy_from_slice(&[0, 0]);
    assert_eq!(encode(&m, Version::V1_4, 7), want);
}

#[test]
fn port_status_14_golden() {
    let m = Message::PortStatus(PortStatus {
        reason: PortReason::Modify,
        desc: PortDesc {
            port_no: 3,
            hw_addr: [2, 0, 0, 0, 0, 3],
            name: FixedStr::new("eth3"),
            config: 0,
            state: port_state::LIVE,
            curr: port_features::F_10GB_FD | port_features::COPPER,
            advertised: port_features::F_1GB_FD,
            supported: port_features::F_10GB_FD,
            peer: 0,
            curr_speed: 10_000_000,
            max_speed: 10_000_000,
        },
    });
    // ofp_port_status, then ofp14_port (40 bytes) and its
    // ofp14_port_desc_prop_ethernet (32 bytes).
    let want = unhex(
        "050c0058 00000009 02 00000000000000
         00000003 0048 0000 020000000003 0000 65746833000000000000000000000000
         00000000 00000004
         0000 0020 00000000 00000840 00000020 00000040 00000000 00989680 00989680",
    );
    assert_eq!(encode(&m, Version::V1_4, 9), want.to_vec());
    assert_eq!(decode(&hex(&want), Version::V1_4), m);
    // 1.2 keeps 1.3's 64-byte ofp_port.
    assert_eq!(encode(&m, Version::V1_2, 9).len(), 8 + 8 + 64);
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn flow_removed_15_carries_oxs_stats() {
    let m = Message::FlowRemoved(FlowRemoved {
        cookie: 0xc0ffee,
        priority: 100,
        reason: FlowRemovedReason::HardTimeout,
        table_id: 2,
        duration_sec: 61,
        duration_nsec: 5,
        idle_timeout: 0,
        hard_timeout: 60,
        packet_count: 7,
        byte_count: 700,
        match_: in_port(1),
    });
    // ofp15_flow_removed, the match, then ofp_oxs_stat (reserved, length
    // 40) with OXS_OF_DURATION, PACKET_COUNT, BYTE_COUNT (class 0x8002).
    let want = unhex(
        "060b0050 00000001
         02 01 0064 0000 003c 0000000000c0ffee
         0001000c 80000004 00000001 00000000
         0000 0028 80020008 0000003d 00000005 80020808 0000000000000007 80020a08 00000000000002bc",
    );
    assert_eq!(encode(&m, Version::V1_5, 1), want.to_vec());
    assert_eq!(decode(&hex(&want), Version::V1_5), m);
    // 1.4 keeps 1.3's layout.
    let mut v13 = m.to_bytes(1);
    v13[0] = 5;
    assert_eq!(encode(&m, Version::V1_4, 1), v13);
}

#[test]
fn flow_stats_15_carry_the_idle_time_and_1_3_drops_it() {
    let fs = ofp::msg::multipart::FlowStats {
        table_id: 1,
        duration_sec: 9,
        duration_nsec: 3,
        priority: 5,
        idle_timeout: 0,
        hard_timeout: 0,
        flags: 0,
        cookie: 0,
        packet_count: 2,
        byte_count: 120,
        match_: in_port(1),
        instructions: vec![],
        idle_age: Some(4),
        hard_age: Some(9),
    };
    let m = Message::MultipartReply(MultipartReply {
        flags: 0,
        body: MultipartReplyBody::Flow(vec![fs.clone()]),
    });
    // OXS_OF_IDLE_TIME (field 1, 8 bytes: the seconds, then 0 ns) after
    // the duration, as Open vSwitch writes it.
    let wire = encode(&m, Version::V1_5, 1);
    assert!(hex(&wire).contains(
        "80020008000000090000000380020208 0000000400000000"
            .replace(' ', "")
            .as_str()
    ));
    let want_15 = ofp::msg::multipart::FlowStats {
        hard_age: None,
        ..fs.clone()
    };
    let Message::MultipartReply(r) = decode(&hex(&wire), Version::V1_5) else {
        panic!()
    };
    assert_eq!(r.body, MultipartReplyBody::Flow(vec![want_15]));
    let Message::MultipartReply(r) = decode(&hex(&encode(&m, Version::V1_3, 1)), Version::V1_3)
    else {
        panic!()
    };
    let MultipartReplyBody::Flow(v) = r.body else {
        panic!()
    };
    assert_eq!((v[0].idle_age, v[0].hard_age), (None, None));
}

#[test]
fn tcp_flags_is_a_basic_field_in_1_5() {
    let m = Message::FlowRemoved(FlowRemoved {
        cookie: 0,
        priority: 1,
        reason: FlowRemovedReason::Delete,
        table_id: 0,
        duration_sec: 0,
        duration_nsec: 0,
        idle_timeout: 0,
        hard_timeout: 0,
        packet_count: 0,
        byte_count: 0,
        match_: ofp::text::parse_match("tcp,tcp_flags=+syn-ack").unwrap(),
    });
    let wire = encode(&m, Version::V1_5, 1);
    // OXM_OF_TCP_FLAGS with a mask: class 0x8000, field 42, length 4.
    assert!(hex(&wire).contains("80005504 0002 0012".replace(' ', "").as_str()));
    assert_eq!(decode(&hex(&wire), Version::V1_5), m);
    // 1.4 keeps the ONF form (experimenter class, ONF id).
    assert!(
        hex(&encode(&m, Version::V1_4, 1)).contains("ffff5508 4f4e4600".replace(' ', "").as_str())
    );
}

// os-ken OFPPacketOut(buffer_id=NO_BUFFER, match in_port=CONTROLLER,
// actions=[output:1], data=b"ab").
const PACKET_OUT_15: &str = "060d003200000007ffffffff001000000001000c80000004fffffffd00000000000000100000000100000000000000006162";

#[test]
fn packet_out_15_takes_in_port_from_its_match() {
    let m = same_back(PACKET_OUT_15, Version::V1_5);
    assert_eq!(
        m,
        Message::PacketOut(PacketOut {
            buffer_id: NO_BUFFER,
            in_port: port_no::CONTROLLER,
            actions: vec![Action::Output {
                port: 1,
                max_len: 0
            }],
            data: Bytes::from_static(b"ab"),
        })
    );
    // No in_port: OFPBRC_BAD_PORT; another field: OFPBMC_BAD_FIELD.
    let none =
        "060d002900000007ffffffff00100000 0001000400000000 00000010000000010000000000000000 78";
    assert_eq!(
        refused(none, Version::V1_5),
        ErrorCode::BadRequest(BadRequestCode::BadPort)
    );
    let meta = "060d0029 00000007 ffffffff 0000 0000 0001 0018 80000004 00000001 80000408 0000000000000005 78";
    assert_eq!(
        refused(meta, Version::V1_5),
        ErrorCode::BadMatch(BadMatchCode::BadField)
    );
}

// os-ken OFPGroupMod(ADD, SELECT, 1, [OFPBucket(bucket_id=0,
// [output:1], [weight 3, watch_port ANY, watch_group ANY])]).
const GROUP_MOD_15: &str = "060f004800000007000001000000000100300000ffffffff003000100000000000000010000000010000000000000000000000080003000000010008ffffffff00020008ffffffff";

// The same group as ovs-ofctl 3.1 writes it: watch_port and watch_group
// left out when ANY.
const GROUP_MOD_15_OVS: &str = "060f003800000007000001000000000100200000ffffffff002000100000000000000010000000010000000000000000000000080003 0000";

#[test]
fn group_mod_15_buckets_and_bucket_commands() {
    let Message::GroupMod(g) = decode(GROUP_MOD_15, Version::V1_5) else {
        panic!()
    };
    assert_eq!(
        (g.command, g.group_type, g.group_id),
        (GroupModCommand::Add, GroupType::Select, 1)
    );
    assert_eq!(g.buckets.len(), 1);
    assert_eq!((g.buckets[0].bucket_id, g.buckets[0].weight), (0, 3));
    assert_eq!(
        encode(&Message::GroupMod(g.clone()), Version::V1_5, 7),
        unhex(GROUP_MOD_15_OVS).to_vec()
    );
    assert_eq!(
        same_back(GROUP_MOD_15_OVS, Version::V1_5),
        Message::GroupMod(g)
    );
    // A command_bucket_id other than ALL with ADD: OFPGMFC_BAD_BUCKET.
    let first = GROUP_MOD_15.replace("00300000ffffffff0030", "00300000fffffffe0030");
    assert_eq!(
        refused(&first, Version::V1_5),
        ErrorCode::GroupModFailed(GroupModFailedCode::BadBucket)
    );
    // INSERT_BUCKET (3) after the last bucket.
    let insert = "060f004800000007000301000000000100300000fffffffe003000100000000000000010000000010000000000000000000000080003000000010008ffffffff00020008ffffffff";
    let Message::GroupMod(g) = decode(insert, Version::V1_5) else {
        panic!()
    };
    assert_eq!(
        (g.command, g.command_bucket_id),
        (GroupModCommand::InsertBucket, ofp::msg::group::BUCKET_LAST)
    );
    // A command 1.5 does not have (4): OFPGMFC_BAD_COMMAND.
    let four = insert.replacen("00030100", "00040100", 1);
    assert_eq!(
        refused(&four, Version::V1_5),
        ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand)
    );
    // OpenFlow 1.4 has no INSERT_BUCKET.
    let mut in14 = unhex(insert).to_vec();
    in14[0] = 5;
    in14.truncate(24);
    in14[2..4].copy_from_slice(&24u16.to_be_bytes());
    let hex14: String = in14.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(
        refused(&hex14, Version::V1_4),
        ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand)
    );
}

// ovs-ofctl -O OpenFlow15 add-group 'group_id=5,type=select,
// selection_method=hash,fields=ip_src,bucket=bucket_id:1,actions=output:1'
// (Open vSwitch 3.1, captured).
const SELECT_HASH_15: &str = "060f 0068 00000006 0000 0100 00000005 0020 0000 ffffffff \
    0020 0010 00000001 0000001000000001 0000000000000000 0000 0008 0001 0000 \
    ffff 0030 0000154d 00000001 00000000 68617368000000000000000000000000 0000000000000000 80001604ffffffff";

#[test]
fn group_mod_15_selection_method_as_open_vswitch_writes_it() {
    let Message::GroupMod(g) = same_back(SELECT_HASH_15, Version::V1_5) else {
        panic!()
    };
    let s = g.selection.expect("the selection method");
    assert_eq!(s.method, ofp::msg::selection::Method::Hash);
    assert_eq!(
        s.fields,
        vec![ofp::msg::selection::HashField::whole(OxmField::Ipv4Src)]
    );
    assert_eq!(g.buckets[0].bucket_id, 1);
    // In a group of another type: OFPBPC_BAD_VALUE (14, 2).
    let all = SELECT_HASH_15.replacen("0000 0100 00000005", "0000 0000 00000005", 1);
    assert_eq!(
        refused(&all, Version::V1_5),
        ErrorCode::Unknown { ty: 14, code: 2 }
    );
}

#[test]
fn packet_in_12_has_no_cookie() {
    let m = Message::PacketIn(PacketIn {
        buffer_id: NO_BUFFER,
        total_len: 6,
        reason: PacketInReason::Action,
        table_id: 3,
        cookie: u64::MAX,
        match_: in_port(7),
        data: Bytes::from_static(&[1, 2, 3, 4, 5, 6]),
    });
    // ofp12_packet_in: buffer_id, total_len, reason, table_id, match,
    // 2 bytes of padding, data.
    let want = unhex(
        "030a0028 00000004 ffffffff 0006 01 03
         0001000c 80000004 00000007 00000000 0000 010203040506",
    );
    assert_eq!(encode(&m, Version::V1_2, 4), want.to_vec());
    assert_eq!(decode(&hex(&want), Version::V1_2), m);
}

#[test]
fn what_1_2_lacks_is_refused_as_open_vswitch_refuses_it() {
    // METER_MOD and GET_ASYNC_REQUEST: no such message in 1.2.
    let bad_type = ErrorCode::BadRequest(BadRequestCode::BadType);
    assert_eq!(
        refused("031d0010000000010000000000000001", Version::V1_2),
        bad_type
    );
    assert_eq!(refused("031a000800000001", Version::V1_2), bad_type);
    // PORT_DESC and METER statistics: OFPBRC_BAD_STAT.
    let bad_stat = ErrorCode::BadRequest(BadRequestCode::BadMultipart);
    assert_eq!(
        refused("0312001000000001000d000000000000", Version::V1_2),
        bad_stat
    );
    // A meter instruction: OFPBIC_UNKNOWN_INST.
    let fm = Message::FlowMod(ofp::FlowMod {
        instructions: vec![Instruction::Meter(1)],
        ..ofp::FlowMod::default()
    });
    let mut b = fm.to_bytes(1);
    b[0] = 3;
    assert_eq!(
        Message::decode_as(&Bytes::from(b), Version::V1_2)
            .unwrap_err()
            .code,
        ErrorCode::BadInstruction(BadInstructionCode::UnknownInst)
    );
    // The 1.3 flags: OFPFMFC_BAD_FLAGS.
    let fm = Message::FlowMod(ofp::FlowMod {
        flags: ofp::msg::flow::flow_mod_flags::NO_PKT_COUNTS,
        ..ofp::FlowMod::default()
    });
    let mut b = fm.to_bytes(1);
    b[0] = 3;
    assert_eq!(
        Message::decode_as(&Bytes::from(b), Version::V1_2)
            .unwrap_err()
            .code,
        ErrorCode::FlowModFailed(ofp::error::FlowModFailedCode::BadFlags)
    );
    // An error 1.2 has no number for goes out as NXBRC_UNENCODABLE_ERROR.
    let e = Message::Error(ErrorMsg {
        code: ErrorCode::MeterModFailed(MeterModFailedCode::UnknownMeter),
        data: Bytes::new(),
    });
    assert_eq!(
        encode(&e, Version::V1_2, 1),
        unhex("0301001000000001ffff000a00002320").to_vec()
    );
}

#[test]
fn what_1_4_adds_that_sluice_does_not_serve_is_refused() {
    let bad_stat = ErrorCode::BadRequest(BadRequestCode::BadMultipart);
    for ty in ["000e", "000f", "0010"] {
        let req = format!("0512001000000001{ty}000000000000");
        assert_eq!(refused(&req, Version::V1_4), bad_stat, "{ty}");
    }
    // 1.5's FLOW_STATS (17) and CONTROLLER_STATUS (18).
    assert_eq!(
        refused("06120010000000010011000000000000", Version::V1_5),
        bad_stat
    );
    // QUEUE_GET_CONFIG_REQUEST is 1.1-1.3's only.
    assert_eq!(
        refused("0516001000000001fffffffd00000000", Version::V1_4),
        ErrorCode::BadRequest(BadRequestCode::BadType)
    );
    assert_eq!(
        decode("0316001000000001fffffffd00000000", Version::V1_2),
        Message::QueueGetConfigRequest {
            port: port_no::CONTROLLER
        }
    );
    // ROLE_STATUS (30) goes to controllers.
    assert_eq!(
        refused(
            "051e0018000000010000000200000000 0000000000000005",
            Version::V1_4
        ),
        ErrorCode::BadRequest(BadRequestCode::BadType)
    );
}

#[test]
fn bundle_errors_are_native_in_1_4() {
    let e = Message::Error(ErrorMsg {
        code: ErrorCode::bundle(BundleFailedCode::BadId),
        data: Bytes::from_static(&[1, 2]),
    });
    let wire = encode(&e, Version::V1_4, 1);
    assert_eq!(wire, unhex("050100 0e 00000001 0011 0002 0102").to_vec());
    assert_eq!(decode(&hex(&wire), Version::V1_4), e);
    // 1.3 keeps the ONF experimenter form.
    assert_eq!(&e.to_bytes(1)[8..12], &[0xff, 0xff, 0x08, 0xfe]);
}

#[test]
fn long_multipart_replies_are_split_with_reply_more() {
    let ports: Vec<PortDesc> = (1..=1000)
        .map(|n| PortDesc {
            port_no: n,
            name: FixedStr::new(&format!("p{n}")),
            ..PortDesc::default()
        })
        .collect();
    let m = Message::MultipartReply(MultipartReply::new(MultipartReplyBody::PortDesc(
        ports.clone(),
    )));
    for v in [Version::V1_4, Version::V1_5] {
        let out = encode(&m, v, 5);
        let mut at = 0;
        let mut seen = Vec::new();
        let mut flags = Vec::new();
        while at < out.len() {
            let len = u16::from_be_bytes([out[at + 2], out[at + 3]]) as usize;
            let frame = Bytes::copy_from_slice(&out[at..at + len]);
            let (h, msg) = Message::decode_as(&frame, v).unwrap();
            assert_eq!(h.xid, 5);
            let Message::MultipartReply(r) = msg else {
                panic!()
            };
            flags.push(r.flags);
            let MultipartReplyBody::PortDesc(p) = r.body else {
                panic!()
            };
            seen.extend(p);
            at += len;
        }
        assert_eq!(seen, ports);
        assert_eq!(flags, vec![MPF_MORE, 0], "{v}");
    }
    // One message that cannot fit: TooLong, `out` untouched.
    let big = Message::EchoReply(Bytes::from(vec![0u8; 70_000]));
    let mut out = vec![9];
    assert!(big.encode_as(Version::V1_4, 1, &mut out).is_err());
    assert_eq!(out, vec![9]);
}

#[test]
fn a_1_5_group_desc_request_for_all_groups_is_read() {
    // os-ken OFPGroupDescStatsRequest(group_id=OFPG_ALL).
    let m = same_back(
        "06120018 00000001 0007 0000 00000000 fffffffc 00000000",
        Version::V1_5,
    );
    let Message::MultipartRequest(r) = m else {
        panic!()
    };
    assert_eq!(r.body, MultipartRequestBody::GroupDesc);
    assert_eq!(
        refused(
            "06120018000000010007000000000000 0000000500000000",
            Version::V1_5
        ),
        ErrorCode::BadRequest(BadRequestCode::BadMultipart)
    );
}

/// What `m` reads back as after `v` (None: `v` refuses it or cannot say
/// it, each case checked by a test above).
fn expected(m: &Message, v: Version) -> Option<Message> {
    use Message as M;
    if let M::Experimenter(e) = m {
        if BundleMsg::is_bundle(e) {
            return None;
        }
    }
    if let M::Error(e) = m {
        let (ty, code) = e.code.type_code();
        if matches!(ty, 12..=17) || (ty, code) == (1, 14) || e.code.bundle_code().is_some() {
            return None;
        }
        if v == Version::V1_2
            && (matches!(e.code, ErrorCode::Experimenter { .. }) || (ty, code) == (1, 13))
        {
            return None;
        }
    }
    match v {
        Version::V1_2 => match m {
            M::GetAsyncRequest | M::GetAsyncReply(_) | M::SetAsync(_) | M::MeterMod(_) => None,
            M::FlowMod(f)
                if f.flags & 0x18 != 0
                    || f.instructions
                        .iter()
                        .any(|i| matches!(i, Instruction::Meter(_))) =>
            {
                None
            }
            M::MultipartRequest(r) if (9..=13).contains(&r.mp_type().value()) => None,
            M::MultipartReply(r) if (9..=13).contains(&r.mp_type().value()) => None,
            M::PacketIn(p) => Some(M::PacketIn(PacketIn {
                cookie: u64::MAX,
                ..p.clone()
            })),
            M::MultipartReply(r) => {
                let mut r = r.clone();
                match &mut r.body {
                    MultipartReplyBody::PortStats(v) => v.iter_mut().for_each(|p| {
                        p.duration_sec = u32::MAX;
                        p.duration_nsec = u32::MAX;
                    }),
                    MultipartReplyBody::Queue(v) => v.iter_mut().for_each(|p| {
                        p.duration_sec = u32::MAX;
                        p.duration_nsec = u32::MAX;
                    }),
                    MultipartReplyBody::Group(v) => v.iter_mut().for_each(|p| {
                        p.duration_sec = u32::MAX;
                        p.duration_nsec = u32::MAX;
                    }),
                    MultipartReplyBody::Flow(v) => v.iter_mut().for_each(|f| f.flags = 0),
                    _ => {}
                }
                Some(M::MultipartReply(r))
            }
            other => Some(other.clone()),
        },
        Version::V1_5 => match m {
            M::GroupMod(g) if matches!(g.command, GroupModCommand::Unknown(_)) => None,
            M::QueueGetConfigRequest { .. } | M::QueueGetConfigReply(_) => None,
            M::FlowMod(f) => Some(M::FlowMod(ofp::FlowMod {
                instructions: meter_as_15_reads_it(&loads_in_instructions(&f.instructions))?,
                ..f.clone()
            })),
            M::PacketOut(p) => Some(M::PacketOut(PacketOut {
                actions: loads_as_15_reads_them(&p.actions),
                ..p.clone()
            })),
            M::GroupMod(g) => {
                let mut g = g.clone();
                for b in &mut g.buckets {
                    b.actions = loads_as_15_reads_them(&b.actions);
                }
                Some(M::GroupMod(g))
            }
            M::MultipartReply(r) => {
                let mut r = r.clone();
                match &mut r.body {
                    MultipartReplyBody::Flow(v) => {
                        for f in v {
                            f.instructions =
                                meter_as_15_reads_it(&loads_in_instructions(&f.instructions))?;
                        }
                    }
                    MultipartReplyBody::GroupDesc(v) => {
                        for b in v.iter_mut().flat_map(|g| g.buckets.iter_mut()) {
                            b.actions = loads_as_15_reads_them(&b.actions);
                        }
                    }
                    _ => {}
                }
                Some(M::MultipartReply(r))
            }
            other => Some(other.clone()),
        },
        _ => match m {
            M::QueueGetConfigRequest { .. } | M::QueueGetConfigReply(_) => None,
            other => Some(other.clone()),
        },
    }
}

/// Loads as a 1.5 peer's bytes read back: a SET_FIELD, masked unless the
/// load sets the whole field, which is read as NXAST_REG_LOAD pieces of
/// at most 64 bits (or the unmasked SET_FIELD), nested lists too.
fn loads_as_15_reads_them(acts: &[Action]) -> Vec<Action> {
    use ofp::action::{LoadForm, RegLoad};
    let mut out = Vec::new();
    for a in acts {
        match a {
            Action::RegLoad(l) => {
                let m = l.masked();
                let mask = m.mask.unwrap_or(0);
                if mask & l.dst.width_mask() == l.dst.width_mask() {
                    out.push(Action::SetField(ofp::oxm::MatchEntry::Basic(Oxm::exact(
                        l.dst, m.value,
                    ))));
                    continue;
                }
                let mut k = 0;
                while k < l.n_bits {
                    let n = (l.n_bits - k).min(64);
                    out.push(Action::RegLoad(RegLoad {
                        ofs: l.ofs + k,
                        n_bits: n,
                        value: (l.value >> k) & ofp::action::bits_mask(0, n),
                        form: LoadForm::RegLoad,
                        ..*l
                    }));
                    k += n;
                }
            }
            // A masked SET_FIELD is read as the loads of its runs of ones
            // (the codec carries masks the validation refuses).
            Action::SetField(ofp::oxm::MatchEntry::Basic(o))
                if o.mask.is_some_and(|m| {
                    m != 0
                        && o.value & !m == 0
                        && (m == o.field.width_mask() || m & !o.field.full_mask() == 0)
                }) && o.field != OxmField::TcpFlags
                    && o.field.info().is_some_and(|i| i.settable) =>
            {
                let mut m = o.mask.unwrap_or(0);
                if m == o.field.width_mask() {
                    out.push(Action::SetField(ofp::oxm::MatchEntry::Basic(Oxm::exact(
                        o.field, o.value,
                    ))));
                    continue;
                }
                while m != 0 {
                    let ofs = m.trailing_zeros() as u16;
                    let run = (m >> ofs).trailing_ones() as u16;
                    out.extend(loads_as_15_reads_them(&[Action::RegLoad(RegLoad {
                        dst: o.field,
                        ofs,
                        n_bits: run,
                        value: (o.value >> ofs) & ofp::action::bits_mask(0, run),
                        form: LoadForm::RegLoad,
                    })]));
                    m &= !ofp::action::bits_mask(ofs, run);
                }
            }
            Action::Ct(c) => {
                let mut c = c.clone();
                c.actions = loads_as_15_reads_them(&c.actions);
                out.push(Action::Ct(c));
            }
            Action::Clone(v) => out.push(Action::Clone(loads_as_15_reads_them(v))),
            other => out.push(other.clone()),
        }
    }
    out
}

fn loads_in_instructions(insts: &[Instruction]) -> Vec<Instruction> {
    insts
        .iter()
        .map(|i| match i {
            Instruction::ApplyActions(a) => Instruction::ApplyActions(loads_as_15_reads_them(a)),
            Instruction::WriteActions(a) => Instruction::WriteActions(loads_as_15_reads_them(a)),
            other => other.clone(),
        })
        .collect()
}

/// Instructions as a 1.5 peer's bytes read back: the meter travels as
/// the first apply action, so it comes back just before the
/// apply-actions instruction (which is dropped if that left it empty).
/// None: more than one meter or apply-actions (not checked here).
fn meter_as_15_reads_it(insts: &[Instruction]) -> Option<Vec<Instruction>> {
    let meters: Vec<u32> = insts
        .iter()
        .filter_map(|i| match i {
            Instruction::Meter(m) => Some(*m),
            _ => None,
        })
        .collect();
    let applies = insts
        .iter()
        .filter(|i| matches!(i, Instruction::ApplyActions(_)))
        .count();
    match (meters.len(), applies) {
        (0, _) | (1, 0) => Some(insts.to_vec()),
        (1, 1) => {
            let mut out = Vec::new();
            for i in insts {
                match i {
                    Instruction::Meter(_) => {}
                    Instruction::ApplyActions(a) => {
                        out.push(Instruction::Meter(meters[0]));
                        if !a.is_empty() {
                            out.push(i.clone());
                        }
                    }
                    other => out.push(other.clone()),
                }
            }
            Some(out)
        }
        _ => None,
    }
}

// os-ken OFPFlowMod(apply [OFPActionCopyField(16 bits reg0[0] -> reg1[0])]).
const COPY_FIELD_15: &str = "060e005800000007000000000000000000000000000000000000000000008000ffffffff00000000000000000000000000010004000000000004002000000000001c00180010000000000000000100040001020400000000";
// os-ken OFPFlowMod(apply [OFPActionMeter(9), output:1]).
const METER_ACTION_15: &str = "060e005800000007000000000000000000000000000000000000000000008000ffffffff00000000000000000000000000010004000000000004002000000000001d00080000000900000010000000010000000000000000";

#[test]
fn copy_field_and_meter_actions_of_1_5() {
    let Message::FlowMod(f) = same_back(COPY_FIELD_15, Version::V1_5) else {
        panic!()
    };
    let Instruction::ApplyActions(a) = &f.instructions[0] else {
        panic!()
    };
    assert_eq!(
        a[0],
        Action::RegMove(ofp::action::RegMove {
            src: OxmField::Reg(0),
            src_ofs: 0,
            dst: OxmField::Reg(1),
            dst_ofs: 0,
            n_bits: 16,
        })
    );
    let Message::FlowMod(f) = same_back(METER_ACTION_15, Version::V1_5) else {
        panic!()
    };
    assert_eq!(
        f.instructions,
        vec![
            Instruction::Meter(9),
            Instruction::ApplyActions(vec![Action::Output {
                port: 1,
                max_len: 0
            }])
        ]
    );
    // The same flow in 1.4 carries the meter instruction and reg_move.
    let b14 = encode(&Message::FlowMod(f.clone()), Version::V1_4, 7);
    assert_eq!(&b14[56..64], &unhex("0006000800000009")[..]);
    // A meter after another apply action: OFPBAC_UNSUPPORTED_ORDER; in
    // write-actions: OFPBAC_BAD_TYPE; the 1.3 meter instruction:
    // OFPBIC_UNKNOWN_INST.
    let late = METER_ACTION_15.replace(
        "001d00080000000900000010000000010000000000000000",
        "00000010000000010000000000000000001d000800000009",
    );
    assert_eq!(
        refused(&late, Version::V1_5),
        ErrorCode::BadAction(ofp::error::BadActionCode::UnsupportedOrder)
    );
    let write = METER_ACTION_15.replace("00040020000000", "00030020000000");
    assert_eq!(
        refused(&write, Version::V1_5),
        ErrorCode::BadAction(ofp::error::BadActionCode::BadType)
    );
    let mut inst = Message::FlowMod(f).to_bytes(7);
    inst[0] = 6;
    assert_eq!(
        Message::decode_as(&Bytes::from(inst), Version::V1_5)
            .unwrap_err()
            .code,
        ErrorCode::BadInstruction(BadInstructionCode::UnknownInst)
    );
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 1024,
        ..ProptestConfig::default()
    }
}

fn round_trip(m: Message, v: Version, xid: u32) -> Result<(), TestCaseError> {
    let Some(want) = expected(&m, v) else {
        return Ok(());
    };
    let mut out = Vec::new();
    if m.encode_as(v, xid, &mut out).is_err() {
        prop_assert!(out.is_empty());
        return Ok(());
    }
    let len = u16::from_be_bytes([out[2], out[3]]) as usize;
    if len != out.len() {
        // Split (multipart): checked by the splitting test.
        return Ok(());
    }
    let decoded = Message::decode_as(&Bytes::from(out.clone()), v);
    // A 1.5 masked SET_FIELD of vlan_vid that touches OFPVID_PRESENT is
    // read as a load of bit 12, outside Open vSwitch's 12-bit vlan_vid:
    // refused (docs/OVS-DIALECT.md, the 12-bit OXM_OF_VLAN_VID).
    if let Err(e) = &decoded {
        let d = format!("{m:?}");
        if v == Version::V1_5
            && e.code == ErrorCode::BadAction(ofp::error::BadActionCode::BadSetLen)
            && d.contains("field: VlanVid")
        {
            return Ok(());
        }
    }
    let (h, got) = decoded.map_err(|e| TestCaseError::fail(format!("{e:?} on {m:?}")))?;
    prop_assert_eq!(h.xid, xid);
    prop_assert_eq!(&got, &want);
    // And the bytes are stable: at once, or (a masked SET_FIELD of
    // several runs of bits, read in 1.5 as one load per run) after the
    // first pass.
    let mut again = Vec::new();
    got.encode_as(v, xid, &mut again).unwrap();
    if again != out {
        prop_assert_eq!(v, Version::V1_5);
        let (_, got2) = Message::decode_as(&Bytes::from(again.clone()), v)
            .map_err(|e| TestCaseError::fail(format!("{e:?} on {got:?}")))?;
        prop_assert_eq!(&got2, &got);
        let mut third = Vec::new();
        got2.encode_as(v, xid, &mut third).unwrap();
        prop_assert_eq!(third, again);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn round_trip_1_2(m in common::message(), xid in any::<u32>()) {
        round_trip(m, Version::V1_2, xid)?;
    }

    #[test]
    fn round_trip_1_4(m in common::message(), xid in any::<u32>()) {
        round_trip(m, Version::V1_4, xid)?;
    }

    #[test]
    fn round_trip_1_5(m in common::message(), xid in any::<u32>()) {
        round_trip(m, Version::V1_5, xid)?;
    }

    /// OpenFlow 1.5's group mods (five commands, bucket ids, selection
    /// methods) read back as written, a bucket without an id with the
    /// lowest id free; in 1.2 and 1.4 buckets come back numbered in order,
    /// without selection method, and the bucket commands are refused.
    #[test]
    fn group_mods_of_1_5(g in common::group_mod15_with(common::canonical_bucket().boxed()), xid in any::<u32>()) {
        let mut want = g.clone();
        ofp::msg::group::assign_bucket_ids(&mut want.buckets, &[]);
        for b in &mut want.buckets {
            b.actions = loads_as_15_reads_them(&b.actions);
        }
        let m = Message::GroupMod(g.clone());
        let mut out = Vec::new();
        if m.encode_as(Version::V1_5, xid, &mut out).is_ok() && out.len() <= 65_535 {
            let (_, got) = Message::decode_as(&Bytes::from(out), Version::V1_5)
                .map_err(|e| TestCaseError::fail(format!("{e:?} on {g:?}")))?;
            let Message::GroupMod(got) = got else { panic!() };
            prop_assert_eq!(got.buckets.len(), want.buckets.len());
            // The actions' own 1.5 forms are round_trip_1_5's business.
            let ids = |g: &ofp::msg::group::GroupMod| g.buckets.iter().map(|b| b.bucket_id).collect::<Vec<_>>();
            prop_assert_eq!(ids(&got), ids(&want));
            let strip = |mut g: ofp::msg::group::GroupMod| {
                g.buckets.iter_mut().for_each(|b| b.actions.clear());
                g
            };
            prop_assert_eq!(strip(got), strip(want));
        }
        for v in [Version::V1_2, Version::V1_4] {
            let mut out = Vec::new();
            if m.encode_as(v, xid, &mut out).is_err() || out.len() > 65_535 {
                continue;
            }
            let back = Message::decode_as(&Bytes::from(out), v);
            match g.command {
                GroupModCommand::InsertBucket | GroupModCommand::RemoveBucket => {
                    prop_assert_eq!(
                        back.map(|_| ()).unwrap_err().code,
                        ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand)
                    );
                }
                _ => {
                    let (_, Message::GroupMod(got)) = back.map_err(|e| TestCaseError::fail(format!("{e:?}")))? else {
                        panic!()
                    };
                    prop_assert_eq!(got.selection, None);
                    prop_assert_eq!(got.command_bucket_id, ofp::msg::group::BUCKET_ALL);
                    let ids: Vec<u32> = got.buckets.iter().map(|b| b.bucket_id).collect();
                    prop_assert_eq!(ids, (0..g.buckets.len() as u32).collect::<Vec<_>>());
                }
            }
        }
    }

    /// A 1.5 group description reads back with its ids and selection method.
    #[test]
    fn group_descs_of_1_5(d in common::group_desc15(), xid in any::<u32>()) {
        let m = Message::MultipartReply(MultipartReply::new(MultipartReplyBody::GroupDesc(vec![d.clone()])));
        let mut out = Vec::new();
        if m.encode_as(Version::V1_5, xid, &mut out).is_ok() && u16::from_be_bytes([out[2], out[3]]) as usize == out.len() {
            let (_, got) = Message::decode_as(&Bytes::from(out), Version::V1_5)
                .map_err(|e| TestCaseError::fail(format!("{e:?} on {d:?}")))?;
            let Message::MultipartReply(MultipartReply { body: MultipartReplyBody::GroupDesc(v), .. }) = got else { panic!() };
            let mut want = d.clone();
            ofp::msg::group::assign_bucket_ids(&mut want.buckets, &[]);
            prop_assert_eq!(v.len(), 1);
            prop_assert_eq!(&v[0].selection, &want.selection);
            let ids = |b: &[ofp::msg::group::Bucket]| b.iter().map(|b| (b.bucket_id, b.weight, b.watch_port, b.watch_group)).collect::<Vec<_>>();
            prop_assert_eq!(ids(&v[0].buckets), ids(&want.buckets));
        }
    }

    #[test]
    fn no_input_makes_the_decoders_panic(body in proptest::collection::vec(any::<u8>(), 0..200), ty in 0u8..40, v in 0usize..3) {
        let v = [Version::V1_2, Version::V1_4, Version::V1_5][v];
        let mut frame = vec![v.wire(), ty, 0, 0, 0, 0, 0, 1];
        frame.extend_from_slice(&body);
        let n = frame.len() as u16;
        frame[2..4].copy_from_slice(&n.to_be_bytes());
        let _ = Message::decode_as(&Bytes::from(frame), v);
    }
}
