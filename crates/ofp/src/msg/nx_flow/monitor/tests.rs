//! The flow monitor's Nicira messages against the bytes ovs-ofctl 3.1
//! sends (captured from `ovs-ofctl monitor` against a listener) and the
//! bytes `ovs-ofctl ofp-print` reads back as the text noted; round trips;
//! and the refusals Open vSwitch names.

use super::*;
use crate::msg::multipart::{MultipartReplyBody, MultipartRequestBody};
use crate::oxm::{Oxm, OxmField};
use crate::port::{port_no, TABLE_ALL};
use crate::{Action, Version};

fn hex(s: &str) -> Bytes {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect::<Vec<u8>>()
        .into()
}

/// `ovs-ofctl monitor br0 watch:` (OpenFlow 1.0).
const WATCH: &str =
    "0110002800000006ffff000000002320000000020000000000000000003fffff0000ff0000000000";
/// `ovs-ofctl monitor br0 'watch:table=3,!own,!actions,!initial,ip,nw_dst=10.0.0.1,out_port=5'`.
const FILTERED: &str = "0110003800000006ffff000000002320000000020000000000000000000e0005000e030000000000000006020800000010040a0000010000";

/// The monitors of a whole NXST_FLOW_MONITOR request.
fn requests_of(frame: &str) -> Vec<MonitorRequest> {
    let (h, m) = Message::decode_as(&hex(frame), Version::V1_0).unwrap();
    assert_eq!(h.xid, 6);
    let Message::MultipartRequest(MultipartRequest {
        body: MultipartRequestBody::Experimenter(e),
        ..
    }) = m
    else {
        panic!("{m:?}")
    };
    assert_eq!(
        (e.experimenter, e.exp_type),
        (NX_VENDOR_ID, NXST_FLOW_MONITOR)
    );
    decode_requests(&e.data).unwrap()
}

#[test]
fn reads_ovs_ofctls_requests() {
    let all = requests_of(WATCH);
    assert_eq!(
        all,
        vec![MonitorRequest {
            id: 0,
            flags: flags::ALL,
            out_port: port_no::ANY,
            table_id: TABLE_ALL,
            match_: Match::new(),
        }]
    );
    let f = requests_of(FILTERED);
    assert_eq!(f.len(), 1);
    let f = &f[0];
    assert_eq!(
        (f.flags, f.out_port, f.table_id),
        (flags::ADD | flags::DELETE | flags::MODIFY, 5, 3)
    );
    assert_eq!(
        f.match_.get(OxmField::Ipv4Dst),
        Some(&Oxm::exact(OxmField::Ipv4Dst, 0x0a00_0001))
    );
    // Written back, the same bytes.
    for (frame, reqs) in [(WATCH, all), (FILTERED, vec![f.clone()])] {
        let mut out = Vec::new();
        request(&reqs)
            .encode_as(Version::V1_0, 6, &mut out)
            .unwrap();
        assert_eq!(Bytes::from(out), hex(frame));
    }
}

#[test]
fn several_monitors_in_one_request_and_none() {
    let reqs = vec![
        MonitorRequest {
            id: 7,
            flags: flags::ADD,
            out_port: port_no::ANY,
            table_id: 1,
            match_: Match::new().with(Oxm::exact(OxmField::EthType, 0x0806)),
        },
        MonitorRequest {
            id: 8,
            flags: flags::DELETE | flags::INITIAL,
            out_port: 2,
            table_id: TABLE_ALL,
            match_: Match::new().with(Oxm::exact(OxmField::Reg(3), 9)),
        },
    ];
    let Message::MultipartRequest(MultipartRequest {
        body: MultipartRequestBody::Experimenter(e),
        ..
    }) = request(&reqs)
    else {
        panic!()
    };
    assert_eq!(decode_requests(&e.data).unwrap(), reqs);
    assert_eq!(decode_requests(&Bytes::new()).unwrap(), vec![]);
}

fn body_of(frame: &str) -> Bytes {
    hex(frame).slice(24..)
}

#[test]
fn refuses_what_open_vswitch_refuses() {
    let watch = body_of(WATCH);
    let with = |at: usize, b: u8| {
        let mut v = watch.to_vec();
        v[at] = b;
        Bytes::from(v)
    };
    // No add, delete or modify: only initial and actions.
    let e = decode_requests(&with(5, 0x11)).unwrap_err();
    assert_eq!(e.code, OFPMOFC_BAD_FLAGS);
    // An unknown flag (1 << 6: OpenFlow 1.4's ONLY_OWN has no Nicira bit).
    assert_eq!(
        decode_requests(&with(5, 0x4f)).unwrap_err().code,
        OFPMOFC_BAD_FLAGS
    );
    // The zeros.
    assert_eq!(
        decode_requests(&with(15, 1)).unwrap_err().code,
        crate::action::NXBRC_MUST_BE_ZERO
    );
    // Too short for a request, or for its match.
    assert_eq!(
        decode_requests(&watch.slice(..12)).unwrap_err().code,
        ErrorCode::BAD_LEN
    );
    assert_eq!(
        decode_requests(&with(9, 8)).unwrap_err().code,
        ErrorCode::BAD_LEN
    );
    // A cookie is no field a monitor matches.
    let mut m = Vec::new();
    let len = nxm::encode(&Match::new(), 5, u64::MAX, &mut m);
    let mut b = watch[..16].to_vec();
    b[8..10].copy_from_slice(&(len as u16).to_be_bytes());
    b.extend(m);
    assert_eq!(
        decode_requests(&Bytes::from(b)).unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadField)
    );
    // Under 1.0 the Nicira codes Open vSwitch writes.
    use crate::of10::error10::{to_10, Wire10};
    assert_eq!(to_10(OFPMOFC_MONITOR_EXISTS), Wire10::Nx(1, 517));
    assert_eq!(to_10(OFPMOFC_BAD_FLAGS), Wire10::Nx(1, 518));
    assert_eq!(to_10(OFPMOFC_UNKNOWN_MONITOR), Wire10::Nx(1, 519));
    assert_eq!(to_10(NXBRC_FM_BAD_EVENT), Wire10::Nx(1, 520));
}

fn added() -> FullUpdate {
    FullUpdate {
        event: UpdateEvent::Added,
        reason: 0,
        priority: 100,
        idle_timeout: 30,
        hard_timeout: 0,
        table_id: 2,
        cookie: 0x5,
        match_: Match::new()
            .with(Oxm::exact(OxmField::EthType, 0x0800))
            .with(Oxm::exact(OxmField::Ipv4Dst, 0x0a00_0007)),
        instructions: vec![Instruction::ApplyActions(vec![Action::Output {
            port: 2,
            max_len: 0,
        }])],
    }
}

/// An update reply as sluice writes it; `ovs-ofctl ofp-print` reads it as
///
/// ```text
/// NXST_FLOW_MONITOR reply (xid=0x0):
///  event=ADDED table=2 idle_timeout=30 cookie=0x5 ip,nw_dst=10.0.0.7 actions=output:2
///  event=DELETED reason=idle table=2 idle_timeout=30 cookie=0x5 ip,nw_dst=10.0.0.7
///  event=ABBREV xid=0x1234
/// ```
///
/// (ovs-ofctl prints no priority in a flow update, whatever it is.)
const UPDATES: &str =
    "0111007800000000ffff00000000232000000002000000000030000000000064001e0000000e0200\
0000000000000005000006020800000010040a000007000000000008000200000028000100000064\
001e0000000e02000000000000000005000006020800000010040a00000700000008000300001234";

#[test]
fn writes_updates_as_open_vswitch_reads_them() {
    let deleted = FullUpdate {
        event: UpdateEvent::Deleted,
        reason: 0,
        instructions: vec![],
        ..added()
    };
    let ups = vec![
        Update::Full(added()),
        Update::Full(deleted),
        Update::Abbrev { xid: 0x1234 },
    ];
    let mut body = Vec::new();
    for u in &ups {
        let at = body.len();
        put_update(u, &mut body);
        assert_eq!(body.len() - at, update_len(u));
        assert_eq!((body.len() - at) % 8, 0);
    }
    let mut out = Vec::new();
    reply(body, false)
        .encode_as(Version::V1_0, 0, &mut out)
        .unwrap();
    assert_eq!(Bytes::from(out), hex(UPDATES));
    // And read back.
    let (_, m) = Message::decode_as(&hex(UPDATES), Version::V1_0).unwrap();
    let Message::MultipartReply(MultipartReply {
        body: MultipartReplyBody::Experimenter(e),
        ..
    }) = m
    else {
        panic!("{m:?}")
    };
    assert_eq!(e.exp_type, NXST_FLOW_MONITOR);
    assert_eq!(decode_updates(&e.data).unwrap(), ups);
}

#[test]
fn bad_updates_are_refused() {
    let mut b = Vec::new();
    put_update(&Update::Abbrev { xid: 1 }, &mut b);
    b[3] = 9;
    assert_eq!(
        decode_updates(&Bytes::from(b.clone())).unwrap_err().code,
        NXBRC_FM_BAD_EVENT
    );
    b[3] = 3;
    b[1] = 12;
    assert_eq!(
        decode_updates(&Bytes::from(b)).unwrap_err().code,
        ErrorCode::BAD_LEN
    );
}

#[test]
fn cancel_paused_resumed() {
    let Message::Experimenter(e) = cancel(77) else {
        panic!()
    };
    assert_eq!(e.exp_type, NXT_FLOW_MONITOR_CANCEL);
    assert_eq!(decode_cancel(&e.data).unwrap(), 77);
    assert_eq!(decode_cancel(&[0, 1]).unwrap_err().code, ErrorCode::BAD_LEN);
    for (m, t) in [
        (paused(), NXT_FLOW_MONITOR_PAUSED),
        (resumed(), NXT_FLOW_MONITOR_RESUMED),
    ] {
        let mut out = Vec::new();
        m.encode_as(Version::V1_0, 0, &mut out).unwrap();
        let mut want = hex("0104001000000000000023200000").to_vec();
        want.extend((t as u16).to_be_bytes());
        assert_eq!(out, want);
    }
}

/// `ovs-ofctl -O OpenFlow14 monitor br0 watch:`'s request as
/// lib/ofp-monitor.c writes it (monitor id 1, out_port and out_group ANY,
/// flags INITIAL|ADD|REMOVED|MODIFY|INSTRUCTIONS|ONLY_OWN, all tables, ADD,
/// the empty OXM match); `ovs-ofctl ofp-print` reads it as
/// `OFPST_FLOW_MONITOR request (OF1.4) (xid=0x5): id=1
/// flags=initial,add,delete,modify,actions,own`.
const WATCH14: &str =
    "0512002800000005001000000000000000000001ffffffffffffffff005fff000001000400000000";

#[test]
fn reads_and_writes_openflow_14_requests() {
    let frame = hex(WATCH14);
    let body = frame.slice(16..);
    let reqs = decode_requests_14(&body).unwrap();
    assert_eq!(
        reqs,
        vec![Request14 {
            command: MonitorCommand::Add,
            monitor: MonitorRequest {
                id: 1,
                flags: flags::ALL,
                out_port: port_no::ANY,
                table_id: TABLE_ALL,
                match_: Match::new(),
            },
            out_group: crate::port::group_no::ANY,
        }]
    );
    let mut out = frame[..16].to_vec();
    put_request_14(&reqs[0], &mut out);
    assert_eq!(Bytes::from(out), frame);
    // A DELETE carries no flags to judge; NO_ABBREV is refused, as are no
    // event flag and an unknown command.
    let with = |at: usize, b: u8| {
        let mut v = body.to_vec();
        v[at] = b;
        Bytes::from(v)
    };
    let del = decode_requests_14(&with(15, 2)).unwrap();
    assert_eq!(del[0].command, MonitorCommand::Delete);
    for bad in [0x20 | 0x02, 0x11, 0x80 | 0x02] {
        assert_eq!(
            decode_requests_14(&with(13, bad)).unwrap_err().code,
            OFPMOFC_BAD_FLAGS,
            "{bad:#x}"
        );
    }
    assert_eq!(
        decode_requests_14(&with(15, 3)).unwrap_err().code,
        ErrorCode::Unknown { ty: 16, code: 2 }
    );
    assert_eq!(
        decode_requests_14(&body.slice(..12)).unwrap_err().code,
        ErrorCode::BAD_LEN
    );
    // Under 1.4 the monitor errors are OFPET_FLOW_MONITOR_FAILED's.
    for (code, want) in [
        (OFPMOFC_MONITOR_EXISTS, (16, 1)),
        (OFPMOFC_UNKNOWN_MONITOR, (16, 3)),
        (OFPMOFC_BAD_FLAGS, (16, 5)),
    ] {
        let e = Message::Error(crate::msg::simple::ErrorMsg {
            code,
            data: Bytes::new(),
        });
        let mut out = Vec::new();
        e.encode_as(Version::V1_4, 1, &mut out).unwrap();
        assert_eq!(out[8..12], [0, want.0 as u8, 0, want.1 as u8]);
        let (_, back) = Message::decode_as(&Bytes::from(out), Version::V1_4).unwrap();
        assert_eq!(back, e);
    }
}

/// A 1.4 reply as sluice writes it; `ovs-ofctl ofp-print` reads it as
///
/// ```text
/// OFPST_FLOW_MONITOR reply (OF1.4) (xid=0x0):
///  event=INITIAL table=2 idle_timeout=30 cookie=0x5 ip,nw_dst=10.0.0.7 actions=output:2
///  event=DELETED reason=idle table=2 idle_timeout=30 cookie=0x5 ip,nw_dst=10.0.0.7
///  event=ABBREV xid=0x1234
///  event=PAUSED
///  event=RESUMED
/// ```
const UPDATES14: &str =
    "051300a0000000000010000000000000004800000200001e00000064000000000000000000000005\
0001001280000a020800800018040a00000700000000000000040018000000000000001000000002\
0000000000000000003000020200001e000000640000000000000000000000050001001280000a02\
0800800018040a000007000000000000000800040000123400080005000000000008000600000000";

#[test]
fn writes_openflow_14_updates_as_open_vswitch_reads_them() {
    let deleted = FullUpdate {
        event: UpdateEvent::Deleted,
        instructions: vec![],
        ..added()
    };
    let ups = vec![
        Update14::Full {
            update: added(),
            initial: true,
        },
        Update14::Full {
            update: deleted,
            initial: false,
        },
        Update14::Abbrev { xid: 0x1234 },
        Update14::Paused,
        Update14::Resumed,
    ];
    let mut body = Vec::new();
    for u in &ups {
        let at = body.len();
        put_update_14(u, &mut body);
        assert_eq!((body.len() - at) % 8, 0);
    }
    let mut out = Vec::new();
    reply_14(5, 0, &body, false, &mut out);
    assert_eq!(Bytes::from(out), hex(UPDATES14));
    assert_eq!(decode_updates_14(&Bytes::from(body)).unwrap(), ups);
}
