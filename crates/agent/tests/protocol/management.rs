//! Ports through the datapath, management commands, Nicira settings and
//! packet-ins by controller id and format.

use std::sync::Arc;

use agent::Agent;
use bytes::Bytes;
use ofp::error::{BadRequestCode, ErrorCode};
use ofp::msg::simple::{ControllerRole, Hello, Role};
use ofp::Message;
use pipeline::ToController;

use crate::common::replies;
use crate::fake::*;

#[test]
fn ports_detached_reattached_and_set_go_through_the_datapath() {
    use ofp::msg::simple::PortReason;
    use ofp::port::port_state;
    let mut a = agent();
    let ctl = open(&mut a);
    let status = |r: &[(u32, Message)]| match r {
        [(_, Message::PortStatus(s))] => (s.reason, s.desc.port_no, s.desc.hw_addr, s.desc.state),
        other => panic!("expected one PORT_STATUS, got {other:?}"),
    };
    // Detached: link down, announced, the pipeline's port no longer live.
    assert!(a.handle_detach_port(1));
    let r = replies(&mut a, ctl);
    assert_eq!(
        status(&r),
        (
            PortReason::Modify,
            1,
            [2, 0, 0, 0, 0, 1],
            port_state::LINK_DOWN
        )
    );
    assert!(!a
        .pipeline()
        .ports()
        .iter()
        .any(|p| p.port_no == 1 && p.live));
    // A port with no devices open: nothing changes, nothing is sent.
    assert!(!a.handle_detach_port(2));
    assert!(a.ports()[&2].link_up);
    // Re-attached with another address: announced as the datapath says.
    let now = a.handle_reattach_port(1).unwrap();
    assert_eq!(now.hw_addr, [2, 0, 0, 0, 9, 1]);
    let r = replies(&mut a, ctl);
    assert_eq!(
        status(&r),
        (PortReason::Modify, 1, [2, 0, 0, 0, 9, 1], port_state::LIVE)
    );
    assert!(a
        .pipeline()
        .ports()
        .iter()
        .any(|p| p.port_no == 1 && p.live));
    // Refused: the datapath's reason, nothing changed.
    assert_eq!(
        a.handle_reattach_port(2).unwrap_err(),
        "no such interface yet"
    );
    // Link changes: the datapath hears the news only, before controllers.
    a.handle_link_change(2, true);
    assert!(replies(&mut a, ctl).is_empty());
    a.handle_link_change(2, false);
    assert_eq!(status(&replies(&mut a, ctl)).1, 2);
    assert_eq!(a.datapath().links, [(2, false)]);
    // Settings only the datapath sees: asked, not announced.
    assert!(a.handle_port_settings(1, ()));
    assert!(!a.handle_port_settings(7, ()));
    assert_eq!(a.datapath().settings, [1, 7]);
    // Deleting: a port the agent does not have is refused before the
    // datapath is asked; one the datapath refuses stays.
    assert_eq!(a.handle_del_port(9).unwrap_err(), "no port 9");
    assert_eq!(a.handle_del_port(2).unwrap_err(), "busy");
    assert!(a.ports().contains_key(&2));
    assert!(replies(&mut a, ctl).is_empty());
    a.handle_del_port(1).unwrap();
    let r = replies(&mut a, ctl);
    assert_eq!(status(&r).0, PortReason::Delete);
}

#[test]
fn management_commands_only_on_the_management_socket() {
    let mut a = agent();
    let ctl = open(&mut a);
    // A controller cannot change the switch's ports.
    let r = command(&mut a, ctl, &["del-port", "p1"]);
    assert_eq!(error_of(&r).1, ErrorCode::BadRequest(BadRequestCode::Eperm));
    assert!(a.ports().contains_key(&1));
    let mgmt = open(&mut a);
    a.set_service(mgmt);
    // A controller hears the deletion; flows to the port stay.
    send(&mut a, ctl, &flow("priority=1,actions=output:1"), 3);
    let r = command(&mut a, mgmt, &["del-port", "p1"]);
    let (ok, text) = command_reply(&r[r.len() - 1..]);
    assert!(ok, "{text}");
    assert_eq!(text, "deleted port 1 (p1)\n");
    assert!(!a.ports().contains_key(&1));
    assert!(!a.pipeline().ports().iter().any(|p| p.port_no == 1));
    match &replies(&mut a, ctl)[..] {
        [(_, Message::PortStatus(s))] => {
            assert_eq!(s.reason, ofp::msg::simple::PortReason::Delete);
            assert_eq!(s.desc.port_no, 1);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(a.pipeline().tables()[0].len(), 1);
    // add-port: the controller hears PORT_STATUS ADD; the number is the
    // datapath's choice.
    let r = command(&mut a, mgmt, &["add-port", "tap7"]);
    let (ok, text) = command_reply(&r[r.len() - 1..]);
    assert!(ok, "{text}");
    assert_eq!(text, "added tap7 as port 1 (link up)\n");
    match &replies(&mut a, ctl)[..] {
        [(_, Message::PortStatus(s))] => {
            assert_eq!(s.reason, ofp::msg::simple::PortReason::Add);
            assert_eq!(s.desc.name.as_str(), "tap7");
        }
        other => panic!("{other:?}"),
    }
    assert!(a
        .pipeline()
        .ports()
        .iter()
        .any(|p| p.port_no == 1 && p.live));
    // Refusals say why, change nothing, and the connection stays up.
    let before: Vec<u32> = a.ports().keys().copied().collect();
    for (words, why) in [
        (
            &["del-port", "p1"][..],
            "del-port: p1 is not a port of this bridge",
        ),
        (&["add-port", "p2"], "add-port: p2 is already port 2"),
        (
            &["add-port", "eth9"],
            "add-port eth9: eth9: no such interface",
        ),
        (&["del-port", "2"], "del-port 2: busy"),
        (
            &["del-port", "local"],
            "del-port: local is not a port of this bridge",
        ),
        (&["add-port"], "add-port: which interface?"),
        (&["frobnicate"], "\"frobnicate\": no such command"),
    ] {
        let (ok, text) = command_reply(&command(&mut a, mgmt, words));
        assert!(!ok);
        assert_eq!(text, why, "{words:?}");
    }
    assert_eq!(a.ports().keys().copied().collect::<Vec<_>>(), before);
    assert!(
        replies(&mut a, ctl).is_empty(),
        "no PORT_STATUS for a refusal"
    );
    // A malformed request is the spec's error.
    let bad = Message::Experimenter(ofp::msg::simple::ExperimenterMsg {
        experimenter: ofp::msg::sluice::SLUICE_EXPERIMENTER,
        exp_type: ofp::msg::sluice::COMMAND_REQUEST,
        data: Bytes::from_static(b"no-nul"),
    });
    assert_eq!(
        error_of(&send(&mut a, mgmt, &bad, 4)).1,
        ErrorCode::BadRequest(BadRequestCode::BadLen)
    );
}

#[test]
fn a_new_packet_in_rate_reaches_open_connections_too() {
    let mut a = agent();
    let id = open(&mut a);
    a.set_packet_in_rate(7);
    assert_eq!(a.conn(id).unwrap().config.packet_in_rate, 7);
    let later = open(&mut a);
    assert_eq!(a.conn(later).unwrap().config.packet_in_rate, 7);
}

/// The Nicira settings are taken quietly (by a slave too); what Open
/// vSwitch refuses is refused with its code: an unknown format
/// (OFPBRC_EPERM), non-zero padding (NXBRC_MUST_BE_ZERO), a wrong length
/// (OFPBRC_BAD_LEN), NXT_RESUME (NXR_NOT_SUPPORTED: sluice makes no
/// continuations), a packet-in (OFPBRC_BAD_TYPE: only switches send
/// them), an unknown subtype (OFPBRC_BAD_SUBTYPE, OpenFlow 1.3's
/// OFPBRC_BAD_EXP_TYPE).
#[test]
fn nicira_settings_and_refusals() {
    use ofp::msg::nxt::{self, NxtMsg, PacketInFormat};
    let mut a = agent();
    let id = open(&mut a);
    assert_eq!(
        a.conn(id).unwrap().packet_in_format,
        PacketInFormat::Standard
    );
    assert_eq!(a.conn(id).unwrap().controller_id, 0);
    let slave = Message::RoleRequest(Role {
        role: ControllerRole::Slave,
        generation_id: 1,
    });
    send(&mut a, id, &slave, 1);
    for (m, fmt, cid) in [
        (
            NxtMsg::SetPacketInFormat(PacketInFormat::Nxt2),
            PacketInFormat::Nxt2,
            0,
        ),
        (NxtMsg::SetControllerId(9), PacketInFormat::Nxt2, 9),
        (
            NxtMsg::SetPacketInFormat(PacketInFormat::Nxt),
            PacketInFormat::Nxt,
            9,
        ),
        (NxtMsg::SetControllerId(0), PacketInFormat::Nxt, 0),
        (
            NxtMsg::SetPacketInFormat(PacketInFormat::Standard),
            PacketInFormat::Standard,
            0,
        ),
    ] {
        assert!(send(&mut a, id, &nxt(m.clone()), 2).is_empty(), "{m:?}");
        let c = a.conn(id).unwrap();
        assert_eq!((c.packet_in_format, c.controller_id), (fmt, cid), "{m:?}");
    }
    let eperm = ErrorCode::BadRequest(BadRequestCode::Eperm);
    for (m, code) in [
        (nx_raw(nxt::NXT_SET_PACKET_IN_FORMAT, &[0, 0, 0, 3]), eperm),
        (
            nx_raw(nxt::NXT_SET_PACKET_IN_FORMAT, &[0, 0, 2]),
            ErrorCode::BAD_LEN,
        ),
        (
            nx_raw(nxt::NXT_SET_CONTROLLER_ID, &[0, 0, 0, 0, 0, 1, 0, 5]),
            nxt::NXBRC_MUST_BE_ZERO,
        ),
        (
            nx_raw(nxt::NXT_SET_CONTROLLER_ID, &[0, 5]),
            ErrorCode::BAD_LEN,
        ),
        // A property of length 0: not NXT_PACKET_IN2's properties.
        (nx_raw(nxt::NXT_RESUME, &[0; 8]), ErrorCode::BAD_LEN),
        // A packet without a continuation: nothing to resume.
        (
            nx_raw(nxt::NXT_RESUME, &[0, 0, 0, 5, 0xaa, 0, 0, 0]),
            ErrorCode::BAD_LEN,
        ),
        (
            nx_raw(nxt::NXT_PACKET_IN2, &[0; 8]),
            ErrorCode::BadRequest(BadRequestCode::BadType),
        ),
        (
            nx_raw(nxt::NXT_PACKET_IN, &[]),
            ErrorCode::BadRequest(BadRequestCode::BadType),
        ),
        (
            nx_raw(99, &[]),
            ErrorCode::BadRequest(BadRequestCode::BadExpType),
        ),
    ] {
        let r = send(&mut a, id, &m, 3);
        assert_eq!(error_of(&r).1, code, "{m:?}");
    }
    let c = a.conn(id).unwrap();
    assert_eq!(
        (c.packet_in_format, c.controller_id),
        (PacketInFormat::Standard, 0)
    );
    // Each connection has its own.
    let other = open(&mut a);
    send(&mut a, id, &nxt(NxtMsg::SetControllerId(4)), 4);
    assert_eq!(a.conn(other).unwrap().controller_id, 0);
}

/// A packet-in goes to the connections of its controller id only, each
/// in its own format; userdata reaches NXT_PACKET_IN2 connections only
/// (the other formats have no room for it, and Open vSwitch drops it
/// there too); the metadata lists in_port and the non-zero pipeline
/// fields, in Open vSwitch's order.
#[test]
fn packet_ins_by_controller_id_and_format() {
    use ofp::msg::nxt::{NxtMsg, PacketInFormat};
    use ofp::{Oxm, OxmField as F};
    let mut a = agent();
    let std0 = open(&mut a);
    let nx0 = open(&mut a);
    let nx2_0 = open(&mut a);
    let nx2_7 = open(&mut a);
    for (id, f, cid) in [
        (nx0, PacketInFormat::Nxt, 0),
        (nx2_0, PacketInFormat::Nxt2, 0),
        (nx2_7, PacketInFormat::Nxt2, 7),
    ] {
        send(&mut a, id, &nxt(NxtMsg::SetPacketInFormat(f)), 1);
        send(&mut a, id, &nxt(NxtMsg::SetControllerId(cid)), 2);
    }
    let extra = pipeline::PacketInExtra {
        userdata: Bytes::from_static(&[1, 2, 3]),
        regs: std::array::from_fn(|i| if i == 3 { 0x33 } else { 0 }),
        metadata: 0xab,
        ..Default::default()
    };
    let ctl = ToController {
        controller_id: 0,
        extra: Some(Arc::new(extra)),
        ..ToController::new(ofp::msg::flow::PacketInReason::Action, 2, 0x77, 0xffff)
    };
    let frame = Bytes::from(vec![0xab; 60]);
    a.handle_packet_in(1, ctl.clone(), frame.clone(), 5);
    let want = ofp::Match::new()
        .with(Oxm::exact(F::InPort, 1))
        .with(Oxm::exact(F::Reg(3), 0x33))
        .with(Oxm::exact(F::Metadata, 0xab));
    let pin = match &replies(&mut a, std0)[..] {
        [(_, Message::PacketIn(p))] => p.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(pin.match_, want);
    assert_eq!(
        (pin.table_id, pin.cookie, pin.data.clone()),
        (2, 0x77, frame.clone())
    );
    let nx_of = |r: Vec<(u32, Message)>| match &r[..] {
        [(_, Message::Experimenter(e))] => ofp::msg::nxt::NxtMsg::decode(e).unwrap().unwrap(),
        other => panic!("{other:?}"),
    };
    let NxtMsg::PacketIn(p) = nx_of(replies(&mut a, nx0)) else {
        panic!()
    };
    assert_eq!(p.to_packet_in(), pin);
    let NxtMsg::PacketIn2(p) = nx_of(replies(&mut a, nx2_0)) else {
        panic!()
    };
    assert_eq!(p.to_packet_in(), pin);
    assert_eq!(&p.userdata[..], &[1, 2, 3]);
    assert!(
        replies(&mut a, nx2_7).is_empty(),
        "controller id 7 is not 0"
    );
    // For id 7: that connection alone.
    a.handle_packet_in(
        1,
        ToController {
            controller_id: 7,
            ..ctl
        },
        frame.clone(),
        6,
    );
    for id in [std0, nx0, nx2_0] {
        assert!(replies(&mut a, id).is_empty());
    }
    let NxtMsg::PacketIn2(p) = nx_of(replies(&mut a, nx2_7)) else {
        panic!()
    };
    assert_eq!(&p.userdata[..], &[1, 2, 3]);
    // A cut, buffered packet-in says so in NXT_PACKET_IN2 too.
    let small = ToController::new(ofp::msg::flow::PacketInReason::NoMatch, 0, 0, 20);
    a.handle_packet_in(1, small, frame, 7);
    let NxtMsg::PacketIn2(p) = nx_of(replies(&mut a, nx2_0)) else {
        panic!()
    };
    assert_eq!((p.data.len(), p.total_len), (20, 60));
    assert_ne!(p.buffer_id, ofp::port::NO_BUFFER);
    assert!(p.userdata.is_empty());
    assert_eq!(p.metadata, ofp::Match::new().with(Oxm::exact(F::InPort, 1)));
}

/// OpenFlow 1.0-1.2's table miss: while a controller of those versions
/// is connected, a packet no rule matches is a packet-in for it (and not
/// for a 1.3 controller beside it); when it goes, misses are dropped
/// again.
#[test]
fn a_table_miss_goes_to_controllers_of_1_0_to_1_2_only() {
    use pipeline::ToController;
    let mut a = agent();
    let v13 = open(&mut a);
    assert!(!a.pipeline().miss_to_controller);
    let v10 = a.connect(0);
    a.poll_transmit(v10).map(|b| b.len()).unwrap_or(0);
    let hello10 = Message::Hello(Hello {
        version: 1,
        elements: Vec::new(),
    });
    assert!(a.handle_input(v10, &hello10.to_bytes(1), 0));
    assert_eq!(a.conn(v10).map(|c| c.version), Some(ofp::Version::V1_0));
    assert!(
        a.pipeline().miss_to_controller,
        "a 1.0 controller turns it on"
    );
    let pending = |a: &Agent<FakeDp>, id| a.poll_transmit(id).map_or(0, |b| b.len());
    let (b13, b10) = (pending(&a, v13), pending(&a, v10));
    let miss = ToController {
        implicit_miss: true,
        ..ToController::new(ofp::msg::flow::PacketInReason::NoMatch, 0, 0, 0)
    };
    a.handle_packet_in(1, miss, Bytes::from(vec![0u8; 60]), 1);
    assert_eq!(pending(&a, v13), b13, "not for the 1.3 controller");
    assert!(pending(&a, v10) > b10, "for the 1.0 controller");
    a.disconnect(v10);
    assert!(!a.pipeline().miss_to_controller, "off when it goes");
}
