//! A connection's life: handshake and versions, malformed and refused
//! messages, roles, buffers, barriers, split replies and the send budget.

use agent::PortInfo;
use bytes::Bytes;
use ofp::error::{BadActionCode, BadMatchCode, BadRequestCode, ErrorCode, HelloFailedCode};
use ofp::msg::multipart::{MultipartReplyBody, MultipartRequest, MultipartRequestBody};
use ofp::msg::simple::{ControllerRole, Hello, Role};
use ofp::{Message, OFP_VERSION};
use packet::wire::build as wb;
use pipeline::{Pipeline, ToController};

use crate::common::{self, replies};
use crate::fake::*;

#[test]
fn handshake_features_and_echo() {
    let mut a = agent();
    let id = open(&mut a);
    let r = send(&mut a, id, &Message::FeaturesRequest, 5);
    match &r[..] {
        [(5, Message::FeaturesReply(f))] => assert_eq!(f.datapath_id, 0x2a),
        other => panic!("{other:?}"),
    }
    let r = send(
        &mut a,
        id,
        &Message::EchoRequest(Bytes::from_static(b"hi")),
        6,
    );
    assert_eq!(r, vec![(6, Message::EchoReply(Bytes::from_static(b"hi")))]);
}

#[test]
fn a_peer_without_a_common_version_gets_hello_failed() {
    let mut a = agent();
    let id = a.connect(0);
    replies(&mut a, id);
    // A HELLO whose bitmap offers only OpenFlow 1.1 (wire version 2).
    let hello = Message::Hello(Hello {
        version: OFP_VERSION,
        elements: vec![ofp::msg::simple::HelloElem::VersionBitmap(vec![1 << 2])],
    });
    assert!(
        !a.handle_input(id, &hello.to_bytes(9), 0),
        "the connection closes"
    );
    let (xid, code, _) = error_of(&replies(&mut a, id));
    assert_eq!(xid, 9);
    assert_eq!(code, ErrorCode::HelloFailed(HelloFailedCode::Incompatible));
}

/// Our HELLO offers every version with a bitmap; the connection speaks
/// the highest both sides have, by bitmap or, without one, by the
/// peer's header; a bridge's `protocols` narrows what it offers.
#[test]
fn each_connection_speaks_the_highest_common_version() {
    use ofp::{Version, Versions};
    let mut a = agent();
    let id = a.connect(0);
    match &replies(&mut a, id)[..] {
        [(_, Message::Hello(h))] => {
            assert_eq!(h.version, 6, "our highest, OpenFlow 1.5");
            assert_eq!(
                h.elements,
                vec![ofp::msg::simple::HelloElem::VersionBitmap(vec![0b111_1010])]
            );
        }
        other => panic!("{other:?}"),
    }
    let cases: [(u8, Option<u32>, Option<Version>); 5] = [
        (1, None, Some(Version::V1_0)),
        (4, None, Some(Version::V1_3)),
        (6, Some(1 << 1 | 1 << 4 | 1 << 5), Some(Version::V1_4)),
        (3, None, Some(Version::V1_2)),
        (6, Some(1 << 2), None),
    ];
    for (peer, bitmap, want) in cases {
        let mut a = agent();
        let id = a.connect(0);
        replies(&mut a, id);
        let hello = Message::Hello(Hello {
            version: peer,
            elements: bitmap
                .map(|b| vec![ofp::msg::simple::HelloElem::VersionBitmap(vec![b])])
                .unwrap_or_default(),
        });
        let up = a.handle_input(id, &hello.to_bytes(1), 0);
        assert_eq!(up, want.is_some(), "peer {peer} {bitmap:?}");
        if let Some(v) = want {
            assert_eq!(
                a.conn(id).map(|c| c.version),
                Some(v),
                "peer {peer} {bitmap:?}"
            );
        }
    }
    // A bridge that speaks only 1.3 refuses a 1.0 peer.
    let mut a = agent();
    a.set_conn_config(agent::ConnConfig {
        versions: Versions::only(Version::V1_3),
        ..*a.conn_config()
    });
    let id = a.connect(0);
    match &replies(&mut a, id)[..] {
        [(_, Message::Hello(h))] => assert_eq!(h.version, 4),
        other => panic!("{other:?}"),
    }
    let hello = Message::Hello(Hello {
        version: 1,
        elements: Vec::new(),
    });
    assert!(!a.handle_input(id, &hello.to_bytes(1), 0));
}

#[test]
fn malformed_messages_get_the_named_error_and_the_connection_survives() {
    let mut a = agent();
    let id = open(&mut a);
    let good = flow("priority=5,ip,actions=output:2").to_bytes(20);
    // Truncated: the header says more than the body has... cut the frame's
    // length field to leave out the instructions.
    let mut short = good.clone();
    short.truncate(good.len() - 8);
    let l = short.len() as u16;
    short[2..4].copy_from_slice(&l.to_be_bytes());
    assert!(a.handle_input(id, &short, 1));
    let (xid, code, data) = error_of(&replies(&mut a, id));
    assert_eq!(xid, 20);
    assert!(
        matches!(
            code,
            ErrorCode::BadRequest(_) | ErrorCode::BadInstruction(_) | ErrorCode::BadAction(_)
        ),
        "{code:?}"
    );
    assert_eq!(
        &data[..],
        &short[..short.len().min(64)],
        "carries the offending bytes"
    );
    // An unknown message type.
    let mut unknown = Message::BarrierRequest.to_bytes(21);
    unknown[1] = 99;
    assert!(a.handle_input(id, &unknown, 1));
    assert_eq!(
        error_of(&replies(&mut a, id)).1,
        ErrorCode::BadRequest(BadRequestCode::BadType)
    );
    // A bad OXM prerequisite: tp_dst without ip_proto.
    let mut fm = ofp::text::parse_flow_mod("priority=5,tcp,tp_dst=80,actions=drop").unwrap();
    fm.match_
        .entries
        .retain(|e| !matches!(e, ofp::MatchEntry::Basic(o) if o.field == ofp::OxmField::IpProto));
    let r = send(&mut a, id, &Message::FlowMod(fm), 22);
    assert_eq!(error_of(&r).1, ErrorCode::BadMatch(BadMatchCode::BadPrereq));
    // A group that does not exist.
    let r = send(&mut a, id, &flow("priority=5,actions=group:7"), 23);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::BadAction(BadActionCode::BadOutGroup)
    );
    // An experimenter message nobody knows.
    let exp = Message::Experimenter(ofp::msg::simple::ExperimenterMsg {
        experimenter: 0x1234,
        exp_type: 1,
        data: Bytes::new(),
    });
    let r = send(&mut a, id, &exp, 24);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::BadRequest(BadRequestCode::BadExperimenter)
    );
    // A message only a switch sends.
    let r = send(&mut a, id, &Message::BarrierReply, 25);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::BadRequest(BadRequestCode::BadType)
    );
    // Nothing was half-applied, and the connection still works.
    assert_eq!(a.pipeline().tables()[0].len(), 0);
    let r = send(&mut a, id, &Message::BarrierRequest, 26);
    assert_eq!(r, vec![(26, Message::BarrierReply)]);
}

#[test]
fn barrier_reply_follows_publication() {
    let mut a = agent();
    let id = open(&mut a);
    let before = *a.datapath().published.borrow();
    let mut bytes = flow("priority=5,in_port=1,actions=output:2").to_bytes(1);
    bytes.extend(Message::BarrierRequest.to_bytes(2));
    assert!(a.handle_input(id, &bytes, 1));
    assert_eq!(replies(&mut a, id), vec![(2, Message::BarrierReply)]);
    assert!(
        *a.datapath().published.borrow() > before,
        "published before the reply"
    );
}

#[test]
fn roles_generation_ids_and_slaves() {
    let mut a = agent();
    let (c1, c2) = (open(&mut a), open(&mut a));
    let role = |r, g| {
        Message::RoleRequest(Role {
            role: r,
            generation_id: g,
        })
    };
    let r = send(&mut a, c1, &role(ControllerRole::Master, 5), 1);
    assert_eq!(
        r,
        vec![(
            1,
            Message::RoleReply(Role {
                role: ControllerRole::Master,
                generation_id: 5
            })
        )]
    );
    let r = send(&mut a, c2, &role(ControllerRole::Master, 4), 2);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::RoleRequestFailed(ofp::error::RoleRequestFailedCode::Stale)
    );
    // A newer master demotes the old one, which may no longer modify.
    send(&mut a, c2, &role(ControllerRole::Master, 6), 3);
    assert_eq!(a.conn(c1).unwrap().role, ControllerRole::Slave);
    let r = send(&mut a, c1, &flow("actions=drop"), 4);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::BadRequest(BadRequestCode::IsSlave)
    );
    // Slaves get no PACKET_IN by default; the master does.
    a.handle_packet_in(
        1,
        ToController::new(ofp::msg::flow::PacketInReason::NoMatch, 0, 0, 0xffff),
        Bytes::from(vec![0u8; 60]),
        10,
    );
    assert!(replies(&mut a, c1).is_empty());
    assert!(matches!(
        replies(&mut a, c2)[..],
        [(_, Message::PacketIn(_))]
    ));
}

#[test]
fn buffered_packet_in_and_packet_out() {
    let mut a = agent();
    let id = open(&mut a);
    let frame = Bytes::from(vec![0xab; 300]);
    let pin = table_miss(&mut a, id, &frame);
    assert_eq!(pin.data.len(), 128, "miss_send_len");
    assert_eq!(pin.total_len, 300);
    let po = |buffer_id| {
        Message::PacketOut(ofp::PacketOut {
            buffer_id,
            in_port: 1,
            actions: vec![ofp::Action::Output {
                port: 2,
                max_len: 0,
            }],
            data: Bytes::new(),
        })
    };
    assert!(send(&mut a, id, &po(pin.buffer_id), 7).is_empty());
    assert_eq!(
        a.datapath().outs.borrow()[0].2,
        frame,
        "the whole frame goes out"
    );
    let r = send(&mut a, id, &po(pin.buffer_id), 8);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::BadRequest(BadRequestCode::BufferEmpty)
    );
    let r = send(&mut a, id, &po(0x00ff_0042), 9);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::BadRequest(BadRequestCode::BufferUnknown)
    );
}

#[test]
fn large_replies_are_split_with_reply_more() {
    let mut a = agent();
    let id = open(&mut a);
    let mut bytes = Vec::new();
    for i in 0..3000u32 {
        bytes
            .extend(flow(&format!("priority=5,tcp,tp_dst={},actions=output:2", i + 1)).to_bytes(i));
    }
    assert!(a.handle_input(id, &bytes, 1));
    assert!(replies(&mut a, id).is_empty(), "no errors");
    let req = Message::MultipartRequest(MultipartRequest::new(MultipartRequestBody::Flow(
        Default::default(),
    )));
    let r = send(&mut a, id, &req, 77);
    assert!(r.len() > 1, "several parts");
    let mut n = 0;
    for (i, (xid, m)) in r.iter().enumerate() {
        assert_eq!(*xid, 77);
        let Message::MultipartReply(rep) = m else {
            panic!("{m:?}")
        };
        assert_eq!(
            rep.flags & 1 != 0,
            i + 1 < r.len(),
            "REPLY_MORE on all but the last"
        );
        if let MultipartReplyBody::Flow(v) = &rep.body {
            n += v.len();
        }
    }
    assert_eq!(n, 3000);
}

#[test]
fn queue_stats_report_each_queue_and_name_unknown_ones() {
    use ofp::error::QueueOpFailedCode;
    use ofp::msg::multipart::{
        MultipartReplyBody as R, MultipartRequest, MultipartRequestBody as Q,
    };
    let mut a = agent();
    a.handle_add_port(
        PortInfo {
            port_no: 3,
            name: "p3".into(),
            hw_addr: [2, 0, 0, 0, 0, 3],
            config: 0,
            link_up: true,
            queues: vec![(1, 0, 20_000), (7, 1_000, 0)],
            since_ns: 0,
        },
        0,
    )
    .unwrap();
    let id = open(&mut a);
    let ask = |port_no, queue_id| {
        Message::MultipartRequest(MultipartRequest {
            flags: 0,
            body: Q::Queue { port_no, queue_id },
        })
    };
    let r = send(
        &mut a,
        id,
        &ask(ofp::port::port_no::ANY, ofp::port::QUEUE_ALL),
        40,
    );
    let [(40, Message::MultipartReply(rep))] = &r[..] else {
        panic!("{r:?}")
    };
    let R::Queue(v) = &rep.body else {
        panic!("{rep:?}")
    };
    let got: Vec<(u32, u32, u64, u64)> = v
        .iter()
        .map(|q| (q.port_no, q.queue_id, q.tx_bytes, q.tx_packets))
        .collect();
    assert_eq!(
        got,
        vec![(3, 1, 3001, 3), (3, 7, 3007, 3)],
        "the datapath's counters"
    );
    let r = send(&mut a, id, &ask(3, 7), 41);
    assert!(
        matches!(&r[..], [(41, Message::MultipartReply(m))] if matches!(&m.body, R::Queue(v) if v.len() == 1))
    );
    let (_, code, _) = error_of(&send(&mut a, id, &ask(3, 9), 42));
    assert_eq!(code, ErrorCode::QueueOpFailed(QueueOpFailedCode::BadQueue));
    let (_, code, _) = error_of(&send(&mut a, id, &ask(9, 1), 43));
    assert_eq!(code, ErrorCode::QueueOpFailed(QueueOpFailedCode::BadPort));
    // A port without queues, every queue: an empty reply, not an error.
    let r = send(&mut a, id, &ask(1, ofp::port::QUEUE_ALL), 44);
    assert!(
        matches!(&r[..], [(44, Message::MultipartReply(m))] if matches!(&m.body, R::Queue(v) if v.is_empty()))
    );
}

#[test]
fn packet_out_actions_are_checked_against_the_packet_and_a_refusal_keeps_the_buffer() {
    let mut a = agent();
    let id = open(&mut a);
    // An ARP request padded past miss_send_len, so a PACKET_IN buffers it.
    let sha = 0x0200_0000_0001;
    let body = wb::arp(1, sha, 0x0a00_0001, 0, 0x0a00_0002);
    let mut arp = wb::ethernet(0xffff_ffff_ffff, sha, None, 0x0806, &body);
    arp.resize(200, 0);
    let frame = Bytes::from(arp);
    let buffer_id = table_miss(&mut a, id, &frame).buffer_id;
    let po = |acts: &str, buffer_id, data: Bytes| {
        Message::PacketOut(ofp::PacketOut {
            buffer_id,
            in_port: 1,
            actions: ofp::text::parse_actions(acts).unwrap(),
            data,
        })
    };
    let inconsistent = ErrorCode::BadAction(BadActionCode::MatchInconsistent);
    // An IPv6 field on an ARP packet: refused, in data and from a buffer.
    let bad = "set_field:2001:db8::1->ipv6_src,output:2";
    let r = send(&mut a, id, &po(bad, u32::MAX, frame.clone()), 7);
    assert_eq!(error_of(&r).1, inconsistent);
    let r = send(&mut a, id, &po(bad, buffer_id, Bytes::new()), 8);
    assert_eq!(error_of(&r).1, inconsistent);
    // A refused flow-mod naming the buffer does not use it up either.
    let r = send(
        &mut a,
        id,
        &Message::FlowMod(ofp::FlowMod {
            buffer_id,
            ..ofp::text::parse_flow_mod("table=0,actions=goto_table:0").unwrap()
        }),
        9,
    );
    assert!(
        matches!(error_of(&r).1, ErrorCode::BadInstruction(_)),
        "{r:?}"
    );
    assert!(a.datapath().outs.borrow().is_empty(), "nothing was sent");
    // The corrected request gets the packet.
    let r = send(
        &mut a,
        id,
        &po("set_field:2->arp_op,output:2", buffer_id, Bytes::new()),
        10,
    );
    assert!(r.is_empty(), "{r:?}");
    assert_eq!(a.datapath().outs.borrow()[0].2, frame);
    let r = send(&mut a, id, &po("output:2", buffer_id, Bytes::new()), 11);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::BadRequest(BadRequestCode::BufferEmpty)
    );
}

#[test]
fn no_reply_is_ever_longer_than_an_openflow_message() {
    let mut a = agent();
    let id = open(&mut a);
    // The longest flow whose FLOW_STATS entry fits: 48 + match + instructions <= 65 519.
    let long_flow = |n_actions: usize| {
        let acts = vec!["set_field:02:00:00:00:00:01->eth_dst"; n_actions].join(",");
        let mut fm =
            ofp::text::parse_flow_mod(&format!("priority=9,in_port=1,actions={acts},output:2"))
                .unwrap();
        fm.command = ofp::FlowModCommand::Add;
        fm
    };
    // Each set_field of eth_dst is 16 bytes; output 16; apply header 8;
    // match (in_port) 16; 48 fixed: 48 + 16 + 8 + 16 * (n + 1).
    let fits = (65_519 - 48 - 16 - 8) / 16 - 1;
    let r = send(&mut a, id, &Message::FlowMod(long_flow(fits + 1)), 5);
    assert_eq!(
        error_of(&r).1,
        ErrorCode::FlowModFailed(ofp::error::FlowModFailedCode::Unknown0)
    );
    assert!(send(&mut a, id, &Message::FlowMod(long_flow(fits)), 6).is_empty());
    let req = Message::MultipartRequest(MultipartRequest::new(MultipartRequestBody::Flow(
        Default::default(),
    )));
    a.handle_input(id, &req.to_bytes(7), 1);
    let r = replies(&mut a, id);
    assert!(
        matches!(&r[..], [(7, Message::MultipartReply(_))]),
        "{}",
        r.len()
    );

    // A trace longer than a message is cut, and says so.
    let mut g = ofp::text::parse_group_mod(&format!(
        "group_id=1,type=all,{}",
        vec!["bucket=dec_ttl,output:2"; 1500].join(",")
    ))
    .unwrap();
    g.command = ofp::msg::group::GroupModCommand::Add;
    assert!(send(&mut a, id, &Message::GroupMod(g), 8).is_empty());
    assert!(send(&mut a, id, &flow("table=0,priority=20,actions=group:1"), 9).is_empty());
    a.publish();
    let text = a.trace(1, &[0xff; 64]);
    assert!(text.len() > 65_535, "the trace is long: {}", text.len());
    let tr = ofp::msg::sluice::TraceRequest {
        in_port: 1,
        frame: Bytes::from_static(&[0xff; 64]),
    }
    .message();
    a.handle_input(id, &tr.to_bytes(10), 1);
    match &replies(&mut a, id)[..] {
        [(10, Message::Experimenter(e))] => {
            let t = std::str::from_utf8(&e.data).unwrap();
            assert!(
                t.ends_with("(truncated: longer than one OpenFlow message)\n"),
                "{}",
                &t[t.len() - 80..]
            );
        }
        other => panic!("{other:?}"),
    }

    // A 65 535-byte frame to the controller without buffering: the
    // PACKET_IN carries what fits and buffers the frame.
    let ctl = ToController::new(ofp::msg::flow::PacketInReason::Action, 0, 0, 0xffff);
    a.handle_packet_in(1, ctl, Bytes::from(vec![0xab; 65_535]), 5);
    match &replies(&mut a, id)[..] {
        [(_, Message::PacketIn(p))] => {
            assert_ne!(p.buffer_id, u32::MAX, "the whole frame waits in a buffer");
            assert_eq!(p.total_len, 65_535);
            assert!(p.data.len() < 65_535 - 40);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn groups_whose_stats_could_not_be_sent_are_refused() {
    let mut p = Pipeline::new(pipeline::Config::default());
    let mut g = ofp::text::parse_group_mod("group_id=1,type=all,bucket=output:2").unwrap();
    g.command = ofp::msg::group::GroupModCommand::Add;
    g.buckets = vec![g.buckets[0].clone(); pipeline::control::GROUP_BUCKETS_MAX + 1];
    assert_eq!(
        p.group_mod(&g, 0).unwrap_err().code,
        ErrorCode::GroupModFailed(ofp::error::GroupModFailedCode::OutOfBuckets)
    );
    // As many buckets as fit, each without actions (16 bytes): both
    // replies fit.
    g.buckets.truncate(pipeline::control::GROUP_BUCKETS_MAX);
    for b in &mut g.buckets {
        b.actions.clear();
    }
    assert!(p.group_mod(&g, 0).is_ok());
    // The same count with an output each: GROUP_DESC would be too long.
    g.group_id = 2;
    for b in &mut g.buckets {
        b.actions = vec![ofp::Action::Output {
            port: 2,
            max_len: 0,
        }];
    }
    assert_eq!(
        p.group_mod(&g, 0).unwrap_err().code,
        ErrorCode::GroupModFailed(ofp::error::GroupModFailedCode::BadBucket)
    );
}

#[test]
fn a_peer_that_does_not_read_is_held_to_its_budget() {
    let mut a = agent();
    let id = open(&mut a);
    let budget = a.conn(id).unwrap().config.max_outbox;
    // 100 TABLE_FEATURES requests (16 bytes each, ~390 KB of reply each)
    // and 20 000 ECHO_REQUESTs in one read: 39 MB of replies if all were
    // answered at once, ten times the budget.
    let tf = Message::MultipartRequest(MultipartRequest::new(MultipartRequestBody::TableFeatures(
        vec![],
    )));
    let mut input = Vec::new();
    for i in 0..100 {
        input.extend(tf.to_bytes(i));
    }
    for i in 0..20_000 {
        input.extend(Message::EchoRequest(Bytes::from_static(b"0123456789abcdef")).to_bytes(i));
    }
    assert!(a.handle_input(id, &input, 1));
    let c = &a.conn(id).unwrap();
    assert!(!c.wants_input(), "over budget: the daemon stops reading");
    assert!(
        c.outbox.len() <= budget + 400_000,
        "{} unsent",
        c.outbox.len()
    );
    assert!(!c.over_hard_cap());
    // Read by the peer a budget at a time, everything is answered in order.
    let (mut last_parts, mut echoes, mut max_unsent) = (0, 0, 0);
    loop {
        let r = drain(&mut a, id);
        if r.is_empty() {
            break;
        }
        for (_, m) in r {
            match m {
                Message::MultipartReply(p) if p.flags & 1 == 0 => last_parts += 1,
                Message::EchoReply(_) => {
                    assert_eq!(last_parts, 100, "echo replies after every earlier request");
                    echoes += 1
                }
                _ => {}
            }
        }
        assert!(a.pump(id, 2));
        max_unsent = max_unsent.max(a.conn(id).unwrap().outbox.len());
    }
    assert_eq!((last_parts, echoes), (100, 20_000));
    assert!(max_unsent <= budget + 400_000);
    assert!(a.conn(id).unwrap().wants_input());
    assert!(a.conn(id).unwrap().outbox.capacity() <= agent::outbox::KEEP_CAPACITY);
}

#[test]
fn flow_stats_are_sent_a_message_at_a_time_within_the_budget() {
    let mut a = agent();
    a.set_conn_config(agent::ConnConfig {
        max_outbox: 100_000,
        ..*a.conn_config()
    });
    let id = open(&mut a);
    let mut bytes = Vec::new();
    for i in 0..20_000u32 {
        bytes.extend(
            flow(&format!(
                "priority=5,tcp,nw_src=10.0.{}.{},tp_dst=80,actions=output:2",
                i / 256,
                i % 256
            ))
            .to_bytes(i),
        );
    }
    assert!(a.handle_input(id, &bytes, 1));
    while !drain(&mut a, id).is_empty() {
        a.pump(id, 1);
    }
    let req = Message::MultipartRequest(MultipartRequest::new(MultipartRequestBody::Flow(
        Default::default(),
    )));
    let mut input = req.to_bytes(77);
    input.extend(Message::BarrierRequest.to_bytes(78));
    assert!(a.handle_input(id, &input, 1));
    assert!(
        !a.conn(id).unwrap().wants_input(),
        "the reply is in progress"
    );
    let (mut n, mut parts, mut barrier_seen) = (0, 0, false);
    loop {
        assert!(a.conn(id).unwrap().outbox.len() <= 100_000 + 65_535);
        let r = drain(&mut a, id);
        if r.is_empty() {
            break;
        }
        for (xid, m) in r {
            match m {
                Message::MultipartReply(p) => {
                    assert_eq!(xid, 77);
                    assert!(!barrier_seen);
                    parts += 1;
                    if let MultipartReplyBody::Flow(v) = p.body {
                        n += v.len();
                    }
                    assert_eq!(
                        p.flags & 1 == 0,
                        n == 20_000,
                        "REPLY_MORE on all but the last"
                    );
                }
                Message::BarrierReply => {
                    assert_eq!(n, 20_000, "the barrier reply follows the whole reply");
                    barrier_seen = true;
                }
                other => panic!("{other:?}"),
            }
        }
        a.pump(id, 2);
    }
    assert_eq!(n, 20_000);
    assert!(parts > 20, "{parts} parts");
    assert!(barrier_seen);
}

#[test]
fn asynchronous_messages_past_the_hard_cap_are_seen() {
    let mut a = agent();
    a.set_conn_config(agent::ConnConfig {
        outbox_hard_cap: 50_000,
        ..*a.conn_config()
    });
    let id = open(&mut a);
    for i in 0..2000 {
        a.handle_link_change(1, i % 2 == 0);
    }
    assert!(
        a.conn(id).unwrap().over_hard_cap(),
        "PORT_STATUS to a peer that never reads"
    );
}

#[test]
fn a_controller_counts_only_after_hello_and_features_request() {
    let mut a = agent();
    let id = a.connect(0);
    assert!(!a.has_controller());
    assert!(a.handle_input(id, &Message::Hello(Hello::ours()).to_bytes(1), 0));
    assert!(
        !a.has_controller(),
        "a HELLO alone does not end standalone mode"
    );
    send(&mut a, id, &Message::FeaturesRequest, 2);
    assert!(a.has_controller());
}

#[test]
fn connections_that_stall_the_handshake_or_a_message_are_closed() {
    let mut a = agent();
    let sec = 1_000_000_000u64;
    // No HELLO within 10 s.
    let silent = a.connect(0);
    // HELLO, then the first bytes of a message, a byte every 3 s.
    let slow = a.connect(0);
    assert!(a.handle_input(slow, &Message::Hello(Hello::ours()).to_bytes(1), 0));
    let echo = Message::EchoRequest(Bytes::from_static(b"x")).to_bytes(2);
    for (i, b) in echo[..4].iter().enumerate() {
        let now = i as u64 * 3 * sec;
        assert!(a.handle_input(slow, &[*b], now));
        let dead = common::tick(&mut a, now);
        assert!(dead.iter().all(|(id, _)| *id != slow), "{dead:?} at {i}");
    }
    assert!(common::tick(&mut a, 11 * sec).contains(&(silent, "no HELLO in time")));
    a.disconnect(silent);
    // The message was started at 0 s: past 10 s it is closed, although
    // bytes keep coming.
    assert!(a.handle_input(slow, &echo[4..5], 11 * sec));
    let dead = common::tick(&mut a, 11 * sec);
    assert!(
        dead.contains(&(slow, "a message left unfinished")),
        "{dead:?}"
    );
}
