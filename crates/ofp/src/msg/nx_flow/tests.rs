//! The Nicira flow messages against the bytes ovs-ofctl 3.1 sends
//! (captured from `ovs-ofctl add-flow`, `del-flows`, `dump-flows` and
//! `dump-aggregate` against a listener that answered its barriers), and
//! round trips.

use super::*;
use crate::instruction::Instruction;
use crate::oxm::{Match, Oxm, OxmField};
use crate::{Action, FlowModCommand};

fn hex(s: &str) -> Bytes {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect::<Vec<u8>>()
        .into()
}

/// The body of a whole VENDOR message (after the vendor id and subtype).
fn body(msg: &str) -> Bytes {
    hex(msg).slice(16..)
}

/// `add-flow br0 in_port=1,dl_vlan=5,ip,nw_tos=16,reg0=1,ct_state=+trk,actions=drop`
const ADD: &str = "0104006000000008000023200000000d00000000000000000000000000008000ffffffffffff0000002d0000000000000000000200010000060208000000090410051fff00000a011000010004000000010001d3080000002000000020000000";
/// `add-flow br0 table=3,priority=100,ip,nw_dst=10.0.0.7,actions=strip_vlan,
/// load:21->NXM_NX_TUN_ID[],set_field:10.10.10.10->tun_dst,output:100`,
/// with NXT_FLOW_MOD_TABLE_ID on.
const CLOUD: &str = "010400800000000a000023200000000d00000000000000000300000000000064ffffffffffff0000000e000000000000000006020800000010040a00000700000003000800000000ffff0018000023200007003f000120080000000000000015ffff0018000023200007001f00014004000000000a0a0a0a0000000800640000";
/// `del-flows br0 cookie=0x5/0xff,reg1=2`
const DEL: &str = "0104005000000008000023200000000d00000000000000000003000000008000ffffffffffff0000001c000000000000000102040000000200013d10000000000000000500000000000000ff00000000";

#[test]
fn set_flow_format_and_table_id() {
    // ovs-ofctl's NXT_SET_FLOW_FORMAT(nxm) and NXT_FLOW_MOD_TABLE_ID(1).
    let nxm = body("0104001400000006000023200000000c00000002");
    assert_eq!(decode_set_flow_format(&nxm).unwrap(), FlowFormat::Nxm);
    let on = body("0104001800000008000023200000000f0100000000000000");
    assert!(decode_flow_mod_table_id(&on).unwrap());
    // OXM (1) is refused, as Open vSwitch refuses it.
    let e = decode_set_flow_format(&[0, 0, 0, 1]).unwrap_err();
    assert_eq!(e.code, ErrorCode::BadRequest(BadRequestCode::Eperm));
    assert_eq!(
        decode_set_flow_format(&[0, 0, 0, 0]).unwrap(),
        FlowFormat::OpenFlow10
    );
    assert_eq!(
        decode_set_flow_format(&[0, 0, 2]).unwrap_err().code,
        ErrorCode::BAD_LEN
    );
    for f in [FlowFormat::OpenFlow10, FlowFormat::Nxm] {
        let Message::Experimenter(e) = set_flow_format(f) else {
            panic!()
        };
        assert_eq!(decode_set_flow_format(&e.data).unwrap(), f);
    }
    let Message::Experimenter(e) = flow_mod_table_id(true) else {
        panic!()
    };
    assert_eq!(e.data, on);
}

#[test]
fn reads_ovs_ofctls_flow_mods() {
    let fm = decode_flow_mod(&body(ADD), false).unwrap();
    assert_eq!(
        (fm.command, fm.table_id, fm.priority),
        (FlowModCommand::Add, 0, 0x8000)
    );
    assert_eq!(
        fm.match_.get(OxmField::Reg(0)),
        Some(&Oxm::exact(OxmField::Reg(0), 1))
    );
    assert_eq!(
        fm.match_.get(OxmField::VlanVid),
        Some(&Oxm::exact(OxmField::VlanVid, 0x1005))
    );
    assert_eq!(fm.instructions, vec![]);
    fm.match_.validate().unwrap();

    let fm = decode_flow_mod(&body(CLOUD), true).unwrap();
    assert_eq!((fm.table_id, fm.priority), (3, 100));
    let [Instruction::ApplyActions(a)] = &fm.instructions[..] else {
        panic!("{:?}", fm.instructions)
    };
    assert_eq!(a[0], Action::PopVlan);
    assert_eq!(
        a.last(),
        Some(&Action::Output {
            port: 100,
            max_len: 0
        })
    );
    // Without the table id on, the high byte makes a bad command.
    let e = decode_flow_mod(&body(CLOUD), false).unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::FlowModFailed(crate::error::FlowModFailedCode::BadCommand)
    );

    let fm = decode_flow_mod(&body(DEL), false).unwrap();
    assert_eq!(
        (fm.command, fm.table_id),
        (FlowModCommand::Delete, TABLE_ALL)
    );
    assert_eq!((fm.cookie, fm.cookie_mask), (5, 0xff));
    assert_eq!(
        fm.match_,
        Match::new().with(Oxm::exact(OxmField::Reg(1), 2))
    );
}

#[test]
fn flow_mods_round_trip_and_an_add_may_not_match_a_cookie() {
    for (hexmsg, tid) in [(ADD, false), (CLOUD, true), (DEL, false)] {
        let fm = decode_flow_mod(&body(hexmsg), tid).unwrap();
        let Message::Experimenter(e) = flow_mod(&fm, tid) else {
            panic!()
        };
        assert_eq!(decode_flow_mod(&e.data, tid).unwrap(), fm, "{hexmsg}");
    }
    let mut add = decode_flow_mod(&body(DEL), false).unwrap();
    add.command = FlowModCommand::Modify;
    let Message::Experimenter(e) = flow_mod(&add, false) else {
        panic!()
    };
    let mut b = e.data.to_vec();
    b[9] = 0; // ADD
    let e = decode_flow_mod(&b.into(), false).unwrap_err();
    assert_eq!(e.code, NXBRC_NXM_INVALID);
}

#[test]
fn stats_requests() {
    // `dump-flows br0 table=2,reg1=2`, after the 24-byte vendor stats header.
    let m = hex("0110002800000008ffff0000000023200000000000000000ffff0008020000000001020400000002");
    let req = decode_stats_request(&m.slice(24..)).unwrap();
    assert_eq!((req.table_id, req.out_port), (2, crate::port::port_no::ANY));
    assert_eq!(
        req.match_,
        Match::new().with(Oxm::exact(OxmField::Reg(1), 2))
    );
    // `dump-aggregate br0`.
    let m = hex("0110002000000004ffff0000000023200000000100000000ffff0000ff000000");
    let agg = decode_stats_request(&m.slice(24..)).unwrap();
    assert_eq!(agg, FlowStatsRequest::default());
    let Message::MultipartRequest(r) = stats_request(NXST_FLOW, &req) else {
        panic!()
    };
    let MultipartRequestBody::Experimenter(e) = r.body else {
        panic!()
    };
    assert_eq!(decode_stats_request(&e.data).unwrap(), req);
}

#[test]
fn flow_stats_and_flow_removed_round_trip() {
    let fm = decode_flow_mod(&body(CLOUD), true).unwrap();
    let fs = FlowStats {
        idle_age: None,
        hard_age: None,
        table_id: 3,
        duration_sec: 7,
        duration_nsec: 8,
        priority: 100,
        idle_timeout: 10,
        hard_timeout: 20,
        flags: 0,
        cookie: 0x55,
        packet_count: 2,
        byte_count: 120,
        match_: fm.match_.clone(),
        instructions: fm.instructions.clone(),
    };
    let mut b = Vec::new();
    put_flow_stats(&fs, &mut b);
    put_flow_stats(&fs, &mut b);
    assert_eq!(b.len() % 8, 0);
    let b = Bytes::from(b);
    let mut r = Reader::new(&b, ErrorCode::BAD_LEN);
    assert_eq!(decode_flow_stats(&mut r).unwrap(), fs);
    assert_eq!(decode_flow_stats(&mut r).unwrap(), fs);
    assert!(r.is_empty());

    // The ages: seconds plus one on the wire, 0 unknown, saturating.
    for (age, wire, back) in [
        (None, 0u16, None),
        (Some(0), 1, Some(0)),
        (Some(41), 42, Some(41)),
        (Some(70_000), 65_535, Some(65_534)),
    ] {
        let aged = FlowStats {
            idle_age: age,
            hard_age: age.map(|a| a / 2),
            ..fs.clone()
        };
        let mut b = Vec::new();
        put_flow_stats(&aged, &mut b);
        assert_eq!(u16::from_be_bytes([b[20], b[21]]), wire);
        let b = Bytes::from(b);
        let got = decode_flow_stats(&mut Reader::new(&b, ErrorCode::BAD_LEN)).unwrap();
        assert_eq!(got.idle_age, back);
        assert_eq!(got.hard_age, age.map(|a| (a / 2).min(65_534)));
    }

    let fr = FlowRemoved {
        cookie: 1,
        priority: 2,
        reason: FlowRemovedReason::from(1),
        table_id: 3,
        duration_sec: 4,
        duration_nsec: 5,
        idle_timeout: 6,
        hard_timeout: 0,
        packet_count: 7,
        byte_count: 8,
        match_: fm.match_,
    };
    let Message::Experimenter(e) = flow_removed(&fr) else {
        panic!()
    };
    assert_eq!(e.data[11], 4, "the table id plus one");
    assert_eq!(decode_flow_removed(&e.data).unwrap(), fr);
}
