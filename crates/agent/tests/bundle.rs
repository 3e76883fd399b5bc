//! Bundles (the ONF extension for OpenFlow 1.3) against byte streams a
//! controller could send: every error the bundle state machine names,
//! commits that succeed and fail, idle timeouts, and a differential test
//! that the datapath never sees a bundle half applied.

use agent::{Agent, ConnId, PortInfo};
use bytes::Bytes;
use ofp::error::{
    BadActionCode, BadMatchCode, BadRequestCode, BundleFailedCode as B, ErrorCode,
    FlowModFailedCode,
};
use ofp::msg::bundle::{
    bundle_flags, BundleAdd, BundleCtrl, BundleCtrlType as T, BUNDLE_ADD_MESSAGE, BUNDLE_CONTROL,
    ONF_EXPERIMENTER,
};
use ofp::msg::simple::{ControllerRole, ExperimenterMsg, Hello, Role};
use ofp::{FlowModCommand, Message};
use pipeline::{Pipeline, PortState, Snapshot, Worker};

mod common;
use common::replies;

/// A datapath that keeps every snapshot it is given.
type FakeDp = common::Holding;

const PORTS: u32 = 4;

fn agent_with(config: pipeline::Config) -> Agent<FakeDp> {
    let mut a = Agent::new(0x2a, Pipeline::new(config), FakeDp::default(), "br0");
    // Keepalives would close a connection idle for the timeout tests.
    a.set_conn_config(agent::ConnConfig {
        probe_ns: u64::MAX / 4,
        ..*a.conn_config()
    });
    for n in 1..=PORTS {
        let p = PortInfo::new(n, &format!("p{n}"), [2, 0, 0, 0, 0, n as u8]);
        a.handle_add_port(p, 0).unwrap();
    }
    a
}

fn agent() -> Agent<FakeDp> {
    agent_with(pipeline::Config::default())
}

fn open(a: &mut Agent<FakeDp>) -> ConnId {
    let id = a.connect(0);
    replies(a, id);
    assert!(a.handle_input(id, &Message::Hello(Hello::ours()).to_bytes(1), 0));
    id
}

fn send_at(
    a: &mut Agent<FakeDp>,
    id: ConnId,
    m: &Message,
    xid: u32,
    now: u64,
) -> Vec<(u32, Message)> {
    assert!(
        a.handle_input(id, &m.to_bytes(xid), now),
        "connection stays up"
    );
    replies(a, id)
}

fn send(a: &mut Agent<FakeDp>, id: ConnId, m: &Message, xid: u32) -> Vec<(u32, Message)> {
    send_at(a, id, m, xid, 1)
}

fn errors(r: &[(u32, Message)]) -> Vec<(u32, ErrorCode, Bytes)> {
    r.iter()
        .map(|(xid, m)| match m {
            Message::Error(e) => (*xid, e.code, e.data.clone()),
            other => panic!("expected errors only, got {other:?}"),
        })
        .collect()
}

fn error_of(r: &[(u32, Message)]) -> (u32, ErrorCode) {
    match &errors(r)[..] {
        [(xid, code, _)] => (*xid, *code),
        other => panic!("expected one error, got {other:?}"),
    }
}

fn bfc(c: B) -> ErrorCode {
    ErrorCode::bundle(c)
}

const ALL: u16 = bundle_flags::ALL;

fn ctrl(bundle_id: u32, t: T, flags: u16) -> Message {
    BundleCtrl {
        bundle_id,
        ctrl_type: t,
        flags,
        properties: Bytes::new(),
    }
    .message()
}

fn ctrl_reply(r: &[(u32, Message)]) -> (u32, BundleCtrl) {
    match r {
        [(xid, Message::Experimenter(e))] => match ofp::msg::bundle::BundleMsg::decode(e) {
            Some(Ok(ofp::msg::bundle::BundleMsg::Control(c))) => (*xid, c),
            other => panic!("not a bundle control message: {other:?}"),
        },
        other => panic!("expected one bundle reply, got {other:?}"),
    }
}

fn flow_mod(cmd: FlowModCommand, text: &str) -> Message {
    let mut fm = ofp::text::parse_flow_mod(text).unwrap();
    fm.command = cmd;
    Message::FlowMod(fm)
}

fn add_flow(text: &str) -> Message {
    flow_mod(FlowModCommand::Add, text)
}

/// A BUNDLE_ADD_MESSAGE of `inner` for bundle `id`, to be sent with `xid`.
fn badd(id: u32, flags: u16, inner: &Message, xid: u32) -> Message {
    BundleAdd::new(id, flags, inner, xid).message()
}

/// Sends `msgs` as bundle adds (xids from `xid`): no reply expected.
fn add_all(a: &mut Agent<FakeDp>, id: ConnId, bundle: u32, msgs: &[Message], xid: u32) {
    for (i, m) in msgs.iter().enumerate() {
        let x = xid + i as u32;
        let r = send(a, id, &badd(bundle, ALL, m, x), x);
        assert!(r.is_empty(), "add {i}: {r:?}");
    }
}

fn flow_count(a: &Agent<FakeDp>) -> usize {
    a.pipeline().flow_count()
}

fn publications(a: &Agent<FakeDp>) -> usize {
    a.datapath().held.borrow().len()
}

#[test]
fn a_committed_bundle_takes_effect_whole_and_at_once() {
    let mut a = agent();
    let id = open(&mut a);
    let (xid, c) = ctrl_reply(&send(&mut a, id, &ctrl(7, T::OpenRequest, ALL), 10));
    assert_eq!(
        (xid, c.bundle_id, c.ctrl_type, c.flags),
        (10, 7, T::OpenReply, ALL)
    );
    let before = publications(&a);
    add_all(
        &mut a,
        id,
        7,
        &[
            Message::GroupMod({
                let mut g =
                    ofp::text::parse_group_mod("group_id=1,type=all,bucket=output:2").unwrap();
                g.command = ofp::msg::group::GroupModCommand::Add;
                g
            }),
            add_flow("priority=5,in_port=1,actions=group:1"),
            add_flow("priority=5,in_port=2,actions=output:1"),
            Message::MeterMod({
                let mut m =
                    ofp::text::parse_meter_mod("meter=1,kbps,bands=type=drop,rate=1000").unwrap();
                m.command = ofp::msg::meter::MeterModCommand::Add;
                m
            }),
            add_flow("priority=6,in_port=3,actions=meter:1,output:1"),
        ],
        11,
    );
    // A barrier in between neither commits nor publishes the bundle.
    assert_eq!(
        send(&mut a, id, &Message::BarrierRequest, 20),
        vec![(20, Message::BarrierReply)]
    );
    assert_eq!(flow_count(&a), 0);
    assert!(a.pipeline().groups().is_empty());
    let in_bundle = a.conn(id).unwrap().bundles.get(7).unwrap();
    assert_eq!(in_bundle.len(), 5);
    let (xid, c) = ctrl_reply(&send(&mut a, id, &ctrl(7, T::CloseRequest, ALL), 21));
    assert_eq!((xid, c.ctrl_type), (21, T::CloseReply));
    let (xid, c) = ctrl_reply(&send(&mut a, id, &ctrl(7, T::CommitRequest, ALL), 22));
    assert_eq!(
        (xid, c.bundle_id, c.ctrl_type, c.flags),
        (22, 7, T::CommitReply, ALL)
    );
    assert_eq!(flow_count(&a), 3);
    assert_eq!(a.pipeline().groups().len(), 1);
    assert_eq!(a.pipeline().meters().len(), 1);
    assert!(publications(&a) > before, "published before the reply");
    assert!(!a.is_dirty());
    // The bundle is gone, and what it held is given back.
    assert!(a.conn(id).unwrap().bundles.is_empty());
    assert_eq!(
        (
            a.conn(id).unwrap().bundles.messages(),
            a.conn(id).unwrap().bundles.bytes()
        ),
        (0, 0)
    );
    let r = send(&mut a, id, &ctrl(7, T::CommitRequest, ALL), 23);
    assert_eq!(error_of(&r), (23, bfc(B::BadId)));
}

#[test]
fn control_errors_are_named() {
    let mut a = agent();
    let id = open(&mut a);
    let err = |a: &mut Agent<FakeDp>, m: &Message, xid| error_of(&send(a, id, m, xid));
    // OPEN with a flag that does not exist.
    assert_eq!(
        err(&mut a, &ctrl(1, T::OpenRequest, 4), 1),
        (1, bfc(B::BadFlags))
    );
    // OPEN of an id in use: refused, and the bundle that had it discarded.
    send(&mut a, id, &ctrl(1, T::OpenRequest, 0), 2);
    assert_eq!(
        err(&mut a, &ctrl(1, T::OpenRequest, 0), 3),
        (3, bfc(B::BadId))
    );
    assert_eq!(
        err(&mut a, &ctrl(1, T::CommitRequest, 0), 4),
        (4, bfc(B::BadId))
    );
    // CLOSE, COMMIT and DISCARD of an unknown id.
    assert_eq!(
        err(&mut a, &ctrl(9, T::CloseRequest, 0), 5),
        (5, bfc(B::BadId))
    );
    assert_eq!(
        err(&mut a, &ctrl(9, T::CommitRequest, 0), 6),
        (6, bfc(B::BadId))
    );
    assert_eq!(
        err(&mut a, &ctrl(9, T::DiscardRequest, 0), 7),
        (7, bfc(B::BadId))
    );
    // CLOSE twice.
    send(&mut a, id, &ctrl(2, T::OpenRequest, ALL), 8);
    let (_, c) = ctrl_reply(&send(&mut a, id, &ctrl(2, T::CloseRequest, ALL), 9));
    assert_eq!(c.ctrl_type, T::CloseReply);
    assert_eq!(
        err(&mut a, &ctrl(2, T::CloseRequest, ALL), 10),
        (10, bfc(B::BundleClosed))
    );
    // COMMIT with other flags: refused and discarded.
    send(&mut a, id, &ctrl(3, T::OpenRequest, ALL), 11);
    assert_eq!(
        err(&mut a, &ctrl(3, T::CommitRequest, 0), 12),
        (12, bfc(B::BadFlags))
    );
    assert_eq!(
        err(&mut a, &ctrl(3, T::DiscardRequest, ALL), 13),
        (13, bfc(B::BadId))
    );
    // DISCARD.
    send(&mut a, id, &ctrl(4, T::OpenRequest, 0), 14);
    let (xid, c) = ctrl_reply(&send(&mut a, id, &ctrl(4, T::DiscardRequest, 0), 15));
    assert_eq!((xid, c.bundle_id, c.ctrl_type), (15, 4, T::DiscardReply));
    // A reply, or a type that does not exist, from a controller.
    assert_eq!(
        err(&mut a, &ctrl(5, T::OpenReply, 0), 16),
        (16, bfc(B::BadType))
    );
    assert_eq!(
        err(&mut a, &ctrl(5, T::Unknown(8), 0), 17),
        (17, bfc(B::BadType))
    );
    // Too short, and properties not in 8-byte units.
    let raw = |exp_type, data: &'static [u8]| {
        Message::Experimenter(ExperimenterMsg {
            experimenter: ONF_EXPERIMENTER,
            exp_type,
            data: Bytes::from_static(data),
        })
    };
    assert_eq!(
        err(&mut a, &raw(BUNDLE_CONTROL, &[0; 6]), 18),
        (18, ErrorCode::BAD_LEN)
    );
    assert_eq!(
        err(&mut a, &raw(BUNDLE_CONTROL, &[0; 12]), 19),
        (19, ErrorCode::BAD_LEN)
    );
    // Another ONF message: not one sluice knows.
    assert_eq!(
        err(&mut a, &raw(2302, &[0; 8]), 20),
        (20, ErrorCode::BadRequest(BadRequestCode::BadExpType))
    );
}

#[test]
fn too_many_bundles_messages_or_bytes() {
    let mut a = agent_with(pipeline::Config {
        max_flows: 3,
        ..Default::default()
    });
    let mut c = *a.conn_config();
    (c.bundles.max_open, c.bundles.max_bytes) = (2, 1000);
    a.set_conn_config(c);
    let id = open(&mut a);
    send(&mut a, id, &ctrl(1, T::OpenRequest, 0), 1);
    send(&mut a, id, &ctrl(2, T::OpenRequest, 0), 2);
    let r = send(&mut a, id, &ctrl(3, T::OpenRequest, 0), 3);
    assert_eq!(error_of(&r), (3, bfc(B::OutOfBundles)));
    // An add to an unknown id would open a third.
    let f = add_flow("priority=1,actions=drop");
    let r = send(&mut a, id, &badd(3, 0, &f, 4), 4);
    assert_eq!(error_of(&r), (4, bfc(B::OutOfBundles)));
    // Messages: as many as the bridge holds flows, over all bundles.
    for (b, x) in [(1, 5), (2, 6), (1, 7)] {
        assert!(send(&mut a, id, &badd(b, 0, &f, x), x).is_empty());
    }
    let r = send(&mut a, id, &badd(2, 0, &f, 8), 8);
    assert_eq!(error_of(&r), (8, bfc(B::MsgTooMany)));
    // The bundle stays open: discarding one makes room.
    send(&mut a, id, &ctrl(1, T::DiscardRequest, 0), 9);
    assert!(send(&mut a, id, &badd(2, 0, &f, 10), 10).is_empty());
    // Bytes: a flow-mod of ~900 bytes does not fit beside the others.
    let actions: Vec<String> = (0..100)
        .map(|i| format!("set_field:{}->ip_dscp", i % 64))
        .collect();
    let big = add_flow(&format!("priority=2,ip,actions={}", actions.join(",")));
    let r = send(&mut a, id, &badd(2, 0, &big, 11), 11);
    assert_eq!(error_of(&r), (11, bfc(B::MsgTooMany)));
    assert_eq!(a.conn(id).unwrap().bundles.messages(), 2);
}

#[test]
fn bundle_bounds_hold_across_connections() {
    // A peer with many connections pins no more than the switch-wide
    // bounds: messages (max_flows) and bytes (max_total_bytes).
    let mut a = agent_with(pipeline::Config {
        max_flows: 3,
        ..Default::default()
    });
    let mut c = *a.conn_config();
    c.bundles.max_total_bytes = 500;
    a.set_conn_config(c);
    let (x, y) = (open(&mut a), open(&mut a));
    let f = add_flow("priority=1,actions=drop");
    for (c, xid) in [(x, 1), (x, 2), (y, 3)] {
        assert!(send(&mut a, c, &badd(1, 0, &f, xid), xid).is_empty());
    }
    let r = send(&mut a, y, &badd(1, 0, &f, 4), 4);
    assert_eq!(
        error_of(&r),
        (4, bfc(B::MsgTooMany)),
        "a fourth message anywhere"
    );
    // Closing a connection gives its share back.
    a.disconnect(x);
    assert!(send(&mut a, y, &badd(1, 0, &f, 5), 5).is_empty());
    // Bytes: ~900 bytes fit no connection once the total is 500.
    let actions: Vec<String> = (0..100)
        .map(|i| format!("set_field:{}->ip_dscp", i % 64))
        .collect();
    let big = add_flow(&format!("priority=2,ip,actions={}", actions.join(",")));
    let z = open(&mut a);
    let r = send(&mut a, z, &badd(1, 0, &big, 6), 6);
    assert_eq!(error_of(&r), (6, bfc(B::MsgTooMany)));
}

#[test]
fn add_errors_are_named_and_a_refused_message_leaves_the_bundle_open() {
    let mut a = agent();
    let id = open(&mut a);
    let good = add_flow("priority=5,in_port=1,actions=output:2");
    // An unknown id is opened by the add (with the add's flags).
    assert!(send(&mut a, id, &badd(1, ALL, &good, 1), 1).is_empty());
    assert_eq!(a.conn(id).unwrap().bundles.get(1).unwrap().flags(), ALL);
    // The inner xid must be the outer one.
    let r = send(&mut a, id, &badd(1, ALL, &good, 99), 2);
    assert_eq!(error_of(&r), (2, bfc(B::MsgBadXid)));
    // Only FLOW_MOD, GROUP_MOD and METER_MOD may be bundled.
    for (x, m) in [
        (3, Message::BarrierRequest),
        (4, Message::EchoRequest(Bytes::new())),
        (
            5,
            Message::PacketOut(ofp::PacketOut {
                buffer_id: ofp::port::NO_BUFFER,
                in_port: 1,
                actions: vec![],
                data: Bytes::from_static(&[0; 60]),
            }),
        ),
        (6, ctrl(1, T::CommitRequest, ALL)),
    ] {
        let r = send(&mut a, id, &badd(1, ALL, &m, x), x);
        assert_eq!(error_of(&r), (x, bfc(B::MsgUnsup)), "{m:?}");
    }
    // A flow-mod that would release a buffered packet.
    let mut buffered = ofp::text::parse_flow_mod("priority=5,actions=output:2").unwrap();
    buffered.buffer_id = 5;
    let r = send(&mut a, id, &badd(1, ALL, &Message::FlowMod(buffered), 7), 7);
    assert_eq!(error_of(&r), (7, bfc(B::MsgUnsup)));
    // A message that fails its own checks gets its own error.
    let mut fm = ofp::text::parse_flow_mod("priority=5,tcp,tp_dst=80,actions=drop").unwrap();
    fm.match_
        .entries
        .retain(|e| !matches!(e, ofp::MatchEntry::Basic(o) if o.field == ofp::OxmField::IpProto));
    let r = send(&mut a, id, &badd(1, ALL, &Message::FlowMod(fm), 8), 8);
    let (xid, code, data) = errors(&r).remove(0);
    assert_eq!(
        (xid, code),
        (8, ErrorCode::BadMatch(BadMatchCode::BadPrereq))
    );
    assert_eq!(data.len(), 64, "the first bytes of the add message");
    assert_eq!(
        u32::from_be_bytes([data[8], data[9], data[10], data[11]]),
        ONF_EXPERIMENTER
    );
    // The inner message's length is not what its header says.
    let mut wire = badd(1, ALL, &good, 9).to_bytes(9);
    let inner_len = u16::from_be_bytes([wire[26], wire[27]]);
    wire[26..28].copy_from_slice(&(inner_len + 8).to_be_bytes());
    assert!(a.handle_input(id, &wire, 1));
    assert_eq!(error_of(&replies(&mut a, id)), (9, bfc(B::MsgBadLen)));
    wire[26..28].copy_from_slice(&4u16.to_be_bytes());
    assert!(a.handle_input(id, &wire, 1));
    assert_eq!(error_of(&replies(&mut a, id)), (9, bfc(B::MsgBadLen)));
    // Other flags than the bundle's: refused, and the bundle discarded.
    assert!(send(&mut a, id, &badd(2, 0, &good, 10), 10).is_empty());
    let r = send(&mut a, id, &badd(2, ALL, &good, 11), 11);
    assert_eq!(error_of(&r), (11, bfc(B::BadFlags)));
    assert!(a.conn(id).unwrap().bundles.get(2).is_none());
    // A closed bundle takes no more: refused, and discarded.
    send(&mut a, id, &ctrl(3, T::OpenRequest, 0), 12);
    send(&mut a, id, &ctrl(3, T::CloseRequest, 0), 13);
    let r = send(&mut a, id, &badd(3, 0, &good, 14), 14);
    assert_eq!(error_of(&r), (14, bfc(B::BundleClosed)));
    assert!(a.conn(id).unwrap().bundles.get(3).is_none());
    // Bundle 1 kept its one good message through all of that.
    assert_eq!(a.conn(id).unwrap().bundles.get(1).unwrap().len(), 1);
    ctrl_reply(&send(&mut a, id, &ctrl(1, T::CommitRequest, ALL), 15));
    assert_eq!(flow_count(&a), 1);
}

#[test]
fn slaves_get_is_slave_and_bundles_belong_to_their_connection() {
    let mut a = agent();
    let (c1, c2) = (open(&mut a), open(&mut a));
    let role = |r| {
        Message::RoleRequest(Role {
            role: r,
            generation_id: 1,
        })
    };
    send(&mut a, c2, &role(ControllerRole::Slave), 1);
    let is_slave = ErrorCode::BadRequest(BadRequestCode::IsSlave);
    let f = add_flow("priority=1,actions=drop");
    assert_eq!(
        error_of(&send(&mut a, c2, &ctrl(1, T::OpenRequest, 0), 2)),
        (2, is_slave)
    );
    assert_eq!(
        error_of(&send(&mut a, c2, &badd(1, 0, &f, 3), 3)),
        (3, is_slave)
    );
    // c1's bundle is not c2's.
    send(&mut a, c1, &ctrl(1, T::OpenRequest, 0), 4);
    send(&mut a, c2, &role(ControllerRole::Equal), 5);
    assert_eq!(
        error_of(&send(&mut a, c2, &ctrl(1, T::CommitRequest, 0), 6)),
        (6, bfc(B::BadId))
    );
    // A connection that goes takes its bundles with it.
    a.disconnect(c1);
    assert!(a.conns().map(|(_, c)| c).all(|c| c.bundles.is_empty()));
}

#[test]
fn a_failed_commit_leaves_everything_as_it_was() {
    let mut a = agent();
    let id = open(&mut a);
    for (x, f) in [
        (1, "priority=5,in_port=1,actions=output:2"),
        (2, "priority=5,in_port=2,send_flow_rem,actions=output:1"),
    ] {
        assert!(send(&mut a, id, &add_flow(f), x).is_empty());
    }
    send(&mut a, id, &Message::BarrierRequest, 3);
    let published = publications(&a);
    let version = a.datapath().held.borrow().back().unwrap().version;
    let bad = add_flow("priority=9,in_port=3,actions=group:42");
    add_all(
        &mut a,
        id,
        5,
        &[
            add_flow("priority=7,in_port=4,actions=output:1"),
            // Removes a flow that asked for FLOW_REMOVED.
            flow_mod(FlowModCommand::DeleteStrict, "priority=5,in_port=2"),
            flow_mod(FlowModCommand::Modify, "in_port=1,actions=output:3"),
            // Refused at commit: no group 42.
            bad.clone(),
            add_flow("priority=8,in_port=3,actions=output:1"),
        ],
        10,
    );
    let r = send(&mut a, id, &ctrl(5, T::CommitRequest, ALL), 20);
    let errs = errors(&r);
    assert_eq!(errs.len(), 2, "{r:?}");
    // The failing message's own error: its xid, its bytes.
    assert_eq!(
        (errs[0].0, errs[0].1),
        (13, ErrorCode::BadAction(BadActionCode::BadOutGroup))
    );
    assert_eq!(&errs[0].2[..], &bad.to_bytes(13)[..64]);
    // Then the commit's.
    assert_eq!((errs[1].0, errs[1].1), (20, bfc(B::MsgFailed)));
    assert_eq!(
        &errs[1].2[..],
        &ctrl(5, T::CommitRequest, ALL).to_bytes(20)[..]
    );
    // Nothing changed, nothing was published, no FLOW_REMOVED went out.
    assert_eq!(flow_count(&a), 2);
    let rules: Vec<String> = a.pipeline().tables()[0]
        .rules()
        .map(|r| format!("{} {:?}", r.priority, r.instructions))
        .collect();
    assert!(rules.iter().all(|r| !r.contains("port: 3")), "{rules:?}");
    assert!(!a.is_dirty());
    assert_eq!(publications(&a), published);
    assert_eq!(a.datapath().held.borrow().back().unwrap().version, version);
    // The bundle is gone.
    let r = send(&mut a, id, &ctrl(5, T::CommitRequest, ALL), 21);
    assert_eq!(error_of(&r), (21, bfc(B::BadId)));
    // A bundle that fills the switch fails the same way.
    let mut small = agent_with(pipeline::Config {
        max_flows: 2,
        ..Default::default()
    });
    let id = open(&mut small);
    send(
        &mut small,
        id,
        &add_flow("priority=1,in_port=4,actions=drop"),
        1,
    );
    add_all(
        &mut small,
        id,
        1,
        &[
            add_flow("priority=1,in_port=1,actions=drop"),
            add_flow("priority=1,in_port=2,actions=drop"),
        ],
        2,
    );
    let r = send(&mut small, id, &ctrl(1, T::CommitRequest, ALL), 9);
    let errs = errors(&r);
    assert_eq!(
        (errs[0].0, errs[0].1),
        (3, ErrorCode::FlowModFailed(FlowModFailedCode::TableFull))
    );
    assert_eq!((errs[1].0, errs[1].1), (9, bfc(B::MsgFailed)));
    assert_eq!(small.pipeline().flow_count(), 1);
}

#[test]
fn a_commit_sends_flow_removed_as_the_mods_alone_would() {
    let mut a = agent();
    let id = open(&mut a);
    send(
        &mut a,
        id,
        &add_flow("priority=5,in_port=2,send_flow_rem,actions=output:1"),
        1,
    );
    add_all(
        &mut a,
        id,
        1,
        &[flow_mod(
            FlowModCommand::DeleteStrict,
            "priority=5,in_port=2",
        )],
        2,
    );
    assert_eq!(flow_count(&a), 1, "not before the commit");
    let r = send(&mut a, id, &ctrl(1, T::CommitRequest, ALL), 3);
    match &r[..] {
        [(_, Message::FlowRemoved(f)), (3, Message::Experimenter(_))] => {
            assert_eq!(f.priority, 5);
            assert_eq!(f.reason, ofp::msg::flow::FlowRemovedReason::Delete);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(flow_count(&a), 0);
}

#[test]
fn idle_bundles_time_out_with_the_message_that_opened_them() {
    let mut a = agent();
    let id = open(&mut a);
    let s = 1_000_000_000u64;
    let open_msg = ctrl(1, T::OpenRequest, 0);
    send_at(&mut a, id, &open_msg, 40, 0);
    let f = add_flow("priority=1,actions=drop");
    // Bundle 2 is opened by an add at 2 s.
    assert!(send_at(&mut a, id, &badd(2, 0, &f, 41), 41, 2 * s).is_empty());
    // An add at 5 s keeps bundle 1 alive for 10 s more.
    assert!(send_at(&mut a, id, &badd(1, 0, &f, 42), 42, 5 * s).is_empty());
    assert!(common::tick(&mut a, 10 * s).is_empty());
    assert!(replies(&mut a, id).is_empty());
    common::tick(&mut a, 12 * s);
    let errs = errors(&replies(&mut a, id));
    assert_eq!(errs.len(), 1);
    assert_eq!((errs[0].0, errs[0].1), (41, bfc(B::Timeout)));
    assert_eq!(&errs[0].2[..], &badd(2, 0, &f, 41).to_bytes(41)[..64]);
    common::tick(&mut a, 15 * s - 1);
    assert!(replies(&mut a, id).is_empty());
    common::tick(&mut a, 15 * s);
    let errs = errors(&replies(&mut a, id));
    assert_eq!((errs[0].0, errs[0].1), (40, bfc(B::Timeout)));
    assert_eq!(&errs[0].2[..], &open_msg.to_bytes(40)[..]);
    assert!(a.conn(id).unwrap().bundles.is_empty());
    let r = send_at(&mut a, id, &ctrl(1, T::CommitRequest, 0), 43, 15 * s);
    assert_eq!(error_of(&r), (43, bfc(B::BadId)));
    assert_eq!(flow_count(&a), 0);
}

#[test]
fn an_add_message_shorter_than_its_fixed_part_is_bad_len() {
    let mut a = agent();
    let id = open(&mut a);
    let m = Message::Experimenter(ExperimenterMsg {
        experimenter: ONF_EXPERIMENTER,
        exp_type: BUNDLE_ADD_MESSAGE,
        data: Bytes::from_static(&[0; 5]),
    });
    assert_eq!(error_of(&send(&mut a, id, &m, 3)), (3, ErrorCode::BAD_LEN));
}

// --- The datapath never sees a bundle half applied ---------------------

/// Probe frames: TCP to 10.0.0.i and 10.0.1.i for i < 64, and one to
/// 10.0.2.1.
fn probes() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for net in 0..2u8 {
        for i in 0..64u8 {
            v.push(packet::wire::build::tcp_v4(
                [2, 0, 0, 0, 0, 1],
                [2, 0, 0, 0, 0, 2],
                [10, 9, 9, 9],
                [10, 0, net, i],
                1000,
                80,
                0x02,
            ));
        }
    }
    v.push(packet::wire::build::tcp_v4(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [10, 9, 9, 9],
        [10, 0, 2, 1],
        1000,
        80,
        0x02,
    ));
    v
}

/// What the datapath does with each probe under `snap`: the ports each
/// goes out of.
fn behaviour(snap: &Snapshot) -> Vec<Vec<u32>> {
    let mut w = Worker::with_cache(0, 0);
    probes()
        .into_iter()
        .map(|mut f| {
            w.process(snap, 1, &mut f, 0)
                .iter()
                .map(|o| o.port)
                .collect()
        })
        .collect()
}

fn reference(mods: &[Message]) -> Vec<Vec<u32>> {
    let mut p = Pipeline::new(pipeline::Config::default());
    for n in 1..=PORTS {
        p.set_port(PortState::up(n));
    }
    for m in mods {
        let r = match m {
            Message::FlowMod(fm) => p.flow_mod(fm, 0),
            Message::GroupMod(gm) => p.group_mod(gm, 0),
            other => panic!("{other:?}"),
        };
        r.unwrap();
    }
    behaviour(&p.snapshot())
}

#[test]
fn the_datapath_sees_the_state_before_the_commit_or_after_it_never_between() {
    // Before: 64 flows to output 1.
    let initial: Vec<Message> = (0..64)
        .map(|i| {
            add_flow(&format!(
                "priority=100,ip,nw_dst=10.0.0.{i},actions=output:1"
            ))
        })
        .collect();
    // The bundle: a group, 64 adds (to the group), a delete of 16 old
    // flows, a modify of 16 others, a table-miss, and an add that
    // replaces an old flow.
    let mut bundle = vec![Message::GroupMod({
        let mut g =
            ofp::text::parse_group_mod("group_id=3,type=all,bucket=output:2,bucket=output:4")
                .unwrap();
        g.command = ofp::msg::group::GroupModCommand::Add;
        g
    })];
    bundle.extend((0..64).map(|i| {
        add_flow(&format!(
            "priority=100,ip,nw_dst=10.0.1.{i},actions=group:3"
        ))
    }));
    bundle.push(flow_mod(FlowModCommand::Delete, "ip,nw_dst=10.0.0.0/28"));
    bundle.push(flow_mod(
        FlowModCommand::Modify,
        "ip,nw_dst=10.0.0.32/28,actions=output:3",
    ));
    bundle.push(add_flow("priority=0,actions=output:4"));
    bundle.push(add_flow(
        "priority=100,ip,nw_dst=10.0.0.63,actions=output:2",
    ));
    let before = reference(&initial);
    let after = reference(&[initial.clone(), bundle.clone()].concat());
    assert_ne!(before, after);

    let mut a = agent();
    let id = open(&mut a);
    for (i, m) in initial.iter().enumerate() {
        send(&mut a, id, m, 1000 + i as u32);
    }
    send(&mut a, id, &Message::BarrierRequest, 1999);
    assert_eq!(
        behaviour(a.datapath().held.borrow().back().unwrap()),
        before
    );
    let seen_before = publications(&a);

    // The whole conversation as one byte stream: OPEN, the adds with
    // barriers, echoes and changes outside the bundle among them (flows
    // in table 1, which no packet reaches: they make the barriers publish
    // while the bundle is open), COMMIT, a barrier.
    let mut wire = ctrl(9, T::OpenRequest, ALL).to_bytes(2000);
    for (i, m) in bundle.iter().enumerate() {
        let x = 2001 + i as u32;
        wire.extend(badd(9, ALL, m, x).to_bytes(x));
        if i % 10 == 0 {
            let aside = add_flow(&format!(
                "table=1,priority=1,in_port={},actions=drop",
                i + 1
            ));
            wire.extend(aside.to_bytes(6000 + i as u32));
            wire.extend(Message::BarrierRequest.to_bytes(3000 + i as u32));
            wire.extend(Message::EchoRequest(Bytes::new()).to_bytes(4000 + i as u32));
        }
    }
    wire.extend(ctrl(9, T::CommitRequest, ALL).to_bytes(5000));
    wire.extend(Message::BarrierRequest.to_bytes(5001));
    // Fed in pieces of odd sizes, time passing (flow expiry and publication
    // intervals run) between them.
    let mut now = 10;
    let mut committed_at = None;
    for (k, piece) in wire.chunks(37).enumerate() {
        now += 3_000_000;
        assert!(a.handle_input(id, piece, now));
        common::tick(&mut a, now);
        for (xid, m) in replies(&mut a, id) {
            if xid == 5000 {
                assert!(matches!(m, Message::Experimenter(_)), "{m:?}");
                committed_at = Some(k);
            } else {
                assert!(!matches!(m, Message::Error(_)), "{xid}: {m:?}");
            }
        }
    }
    let committed_at = committed_at.expect("the commit was answered");
    assert!(committed_at > 10, "the commit came late in the stream");
    let snaps: Vec<_> = a.datapath().held.borrow().iter().cloned().collect();
    assert!(
        snaps.len() > seen_before + 3,
        "published while the bundle was open, and at the commit"
    );
    let mut seen_after = false;
    for s in &snaps[seen_before - 1..] {
        let b = behaviour(s);
        if b == after {
            seen_after = true;
        } else {
            assert_eq!(b, before, "version {}: neither before nor after", s.version);
            assert!(!seen_after, "back to before after the commit");
        }
    }
    assert!(seen_after);
    assert_eq!(behaviour(snaps.last().unwrap()), after);
}

/// OpenFlow 1.5's group mods in a native 1.5 bundle, as ovn-controller
/// sends them: what the 1.3 form cannot say (bucket ids, the selection
/// method, INSERT_BUCKET and REMOVE_BUCKET) survives to the commit, and
/// GROUP_DESC in 1.5 reports it.
#[test]
fn a_1_5_bundle_keeps_bucket_ids_selection_methods_and_bucket_commands() {
    use ofp::msg::group::GroupModCommand as C;
    use ofp::msg::multipart::{MultipartReplyBody, MultipartRequest, MultipartRequestBody};
    use ofp::text::parse_group_mod_for;
    use ofp::Version;
    let v15 = |m: &Message, xid: u32| {
        let mut out = Vec::new();
        m.encode_as(Version::V1_5, xid, &mut out).unwrap();
        out
    };
    let read15 = |out: &[u8]| {
        let mut at = 0;
        let mut v = Vec::new();
        while at < out.len() {
            let len = u16::from_be_bytes([out[at + 2], out[at + 3]]) as usize;
            let (h, m) =
                Message::decode_as(&Bytes::copy_from_slice(&out[at..at + len]), Version::V1_5)
                    .expect("valid 1.5");
            v.push((h.xid, m));
            at += len;
        }
        v
    };
    let mut a = agent();
    let id = a.connect(0);
    replies(&mut a, id);
    let hello = Message::Hello(Hello {
        version: 6,
        elements: Vec::new(),
    });
    assert!(a.handle_input(id, &hello.to_bytes(1), 0));
    assert_eq!(a.conn(id).map(|c| c.version), Some(Version::V1_5));
    let flags = bundle_flags::ATOMIC | bundle_flags::ORDERED;
    let mods = [
        (C::Add, "group_id=1,type=select,selection_method=dp_hash,bucket=bucket_id:0,weight:100,actions=output:2,bucket=bucket_id:1,weight:100,actions=output:3"),
        (C::Add, "group_id=2,type=select,selection_method=hash,fields(ip_src,tcp_dst),bucket=bucket_id:4,actions=output:2"),
        (C::InsertBucket, "group_id=1,command_bucket_id=first,bucket=bucket_id:5,weight:3,actions=output:4"),
        (C::RemoveBucket, "group_id=1,command_bucket_id=0"),
    ];
    let mut input = v15(&ctrl(7, T::OpenRequest, flags), 10);
    for (i, (c, text)) in mods.iter().enumerate() {
        let g = Message::GroupMod(parse_group_mod_for(text, *c).unwrap());
        let inner = Bytes::from(v15(&g, 20 + i as u32));
        let add = BundleAdd {
            message: inner,
            ..BundleAdd::new(7, flags, &Message::BarrierRequest, 20 + i as u32)
        };
        input.extend(v15(&add.message(), 20 + i as u32));
    }
    input.extend(v15(&ctrl(7, T::CommitRequest, flags), 30));
    assert!(a.handle_input(id, &input, 1));
    let out = a.poll_transmit(id).unwrap_or_default().to_vec();
    a.transmitted(id, out.len());
    let got = read15(&out);
    assert!(
        got.iter().all(|(_, m)| !matches!(m, Message::Error(_))),
        "{got:?}"
    );
    let g = &a.pipeline().groups()[&1];
    let ids: Vec<u32> = g.rt.buckets.iter().map(|b| b.bucket_id).collect();
    assert_eq!(ids, vec![5, 1]);
    assert!(g.rt.selection.is_some());
    // GROUP_DESC in 1.5: ids and the methods.
    let req = Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::GroupDesc,
    });
    assert!(a.handle_input(id, &v15(&req, 40), 2));
    let out = a.poll_transmit(id).unwrap_or_default().to_vec();
    a.transmitted(id, out.len());
    let descs: Vec<_> = read15(&out)
        .into_iter()
        .flat_map(|(_, m)| match m {
            Message::MultipartReply(r) => match r.body {
                MultipartReplyBody::GroupDesc(v) => v,
                _ => vec![],
            },
            _ => vec![],
        })
        .collect();
    let two = descs.iter().find(|d| d.group_id == 2).unwrap();
    assert_eq!(two.buckets[0].bucket_id, 4);
    let s = two.selection.as_ref().unwrap();
    assert_eq!(s.method, ofp::msg::selection::Method::Hash);
    assert_eq!(s.fields.len(), 2);
    // The same INSERT_BUCKET in an ONF bundle of a 1.3 connection in 1.5's
    // bytes: another version than the connection's, OFPBRC_BAD_VERSION.
    let id13 = open(&mut a);
    let g = Message::GroupMod(parse_group_mod_for(mods[2].1, C::InsertBucket).unwrap());
    let add = BundleAdd {
        message: Bytes::from(v15(&g, 50)),
        ..BundleAdd::new(8, flags, &Message::BarrierRequest, 50)
    };
    let r = send(&mut a, id13, &add.message(), 50);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::BadRequest(BadRequestCode::BadVersion)
    );
}
