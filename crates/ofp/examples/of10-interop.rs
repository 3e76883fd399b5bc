//! Helper for the OpenFlow 1.0 cross-checks with os-ken and ovs-ofctl
//! (`tests/interop/osken_of10.py`).
//!
//! * `of10-interop decode`: reads JSON lines `{"name", "hex"}` (1.0
//!   messages os-ken encoded), decodes each as OpenFlow 1.0 and writes
//!   `{"name", "ok", "error", "hex" (our 1.0 re-encoding), "xid",
//!   "summary"}`.
//! * `of10-interop corpus`: writes `{"name", "hex", "xid", "summary"}` for
//!   every switch-to-controller message this crate encodes as 1.0, for
//!   os-ken and ovs-ofctl to read.
//!
//! A summary is the internal (1.3-shaped) message's fields: match fields
//! by their OXM names, port numbers 32-bit, port features in 1.3's bits,
//! error codes in 1.3's numbering. The Python side turns what os-ken reads
//! into the same view by the rules Open vSwitch follows, written there a
//! second time, so the two are compared field by field.

use std::io::{BufRead, Write};

use bytes::Bytes;
use serde_json::{json, Map, Value};

use ofp::action::Action;
use ofp::error::{BadActionCode, BadRequestCode, FlowModFailedCode};
use ofp::instruction::Instruction;
use ofp::msg::flow::{FlowRemoved, FlowRemovedReason, PacketIn, PacketInReason};
use ofp::msg::multipart::*;
use ofp::msg::simple::*;
use ofp::msg::Message;
use ofp::oxm::{Match, MatchEntry, Oxm, OxmField};
use ofp::port::{port_features as pf, PortDesc};
use ofp::wire::FixedStr;
use ofp::{ErrorCode, Version};

#[path = "interop_common/mod.rs"]
mod common;
use common::{hex, unhex};

fn match_view(m: &Match) -> Value {
    let mut o = Map::new();
    for e in &m.entries {
        match e {
            MatchEntry::Basic(x) => {
                let name = x.field.name().unwrap_or("?").to_string();
                o.insert(name, json!([x.value as u64, x.mask.map(|m| m as u64)]));
            }
            MatchEntry::Other(x) => {
                o.insert(
                    format!("other:{}:{}", x.class, x.field),
                    json!(hex(&x.body)),
                );
            }
        }
    }
    Value::Object(o)
}

fn action_view(a: &Action) -> Value {
    match a {
        Action::Output { port, max_len } => json!(["output", port, max_len]),
        Action::SetField(MatchEntry::Basic(o)) => {
            json!(["set_field", o.field.name().unwrap_or("?"), o.value as u64])
        }
        Action::PushVlan(e) => json!(["push_vlan", e]),
        Action::PopVlan => json!(["pop_vlan"]),
        Action::SetQueue(q) => json!(["set_queue", q]),
        Action::PopQueue => json!(["pop_queue"]),
        Action::Group(g) => json!(["group", g]),
        Action::DecNwTtl => json!(["dec_nw_ttl"]),
        Action::Experimenter { experimenter, data } => {
            json!(["experimenter", experimenter, hex(data)])
        }
        Action::Resubmit(r) => json!(["resubmit", r.in_port, r.table]),
        other => json!(["other", format!("{other:?}")]),
    }
}

fn actions_view(v: &[Action]) -> Value {
    Value::Array(v.iter().map(action_view).collect())
}

fn instructions_view(v: &[Instruction]) -> Value {
    Value::Array(
        v.iter()
            .map(|i| match i {
                Instruction::ApplyActions(a) => json!(["apply_actions", actions_view(a)]),
                Instruction::WriteMetadata { metadata, mask } => {
                    json!(["write_metadata", metadata, mask])
                }
                other => json!(["other", format!("{other:?}")]),
            })
            .collect(),
    )
}

fn mac(a: [u8; 6]) -> u64 {
    a.iter().fold(0u64, |v, b| v << 8 | u64::from(*b))
}

fn port_view(p: &PortDesc) -> Value {
    json!({
        "port_no": p.port_no, "hw_addr": mac(p.hw_addr), "name": p.name.as_str(),
        "config": p.config, "state": p.state, "curr": p.curr,
        "advertised": p.advertised, "supported": p.supported, "peer": p.peer,
        "curr_speed": p.curr_speed, "max_speed": p.max_speed,
    })
}

fn flow_req_view(f: &FlowStatsRequest) -> Value {
    json!({
        "table_id": f.table_id, "out_port": f.out_port, "out_group": f.out_group,
        "cookie": f.cookie, "cookie_mask": f.cookie_mask, "match": match_view(&f.match_),
    })
}

fn summary(m: &Message) -> Value {
    match m {
        Message::Hello(h) => json!({"type": "hello", "version": h.version}),
        Message::Error(e) => {
            let (t, c) = e.code.type_code();
            let exp = match e.code {
                ErrorCode::Experimenter { experimenter, .. } => experimenter,
                _ => 0,
            };
            json!({"type": "error", "err_type": t, "code": c, "experimenter": exp, "data": hex(&e.data)})
        }
        Message::EchoRequest(d) => json!({"type": "echo_request", "data": hex(d)}),
        Message::EchoReply(d) => json!({"type": "echo_reply", "data": hex(d)}),
        Message::Experimenter(e) => json!({
            "type": "vendor", "experimenter": e.experimenter, "exp_type": e.exp_type,
            "data": hex(&e.data)
        }),
        Message::FeaturesRequest => json!({"type": "features_request"}),
        Message::FeaturesReply(f) => json!({
            "type": "features_reply", "datapath_id": f.datapath_id, "n_buffers": f.n_buffers,
            "n_tables": f.n_tables, "capabilities": f.capabilities,
            "ports": f.ports.iter().map(port_view).collect::<Vec<_>>(),
        }),
        Message::GetConfigRequest => json!({"type": "get_config_request"}),
        Message::GetConfigReply(c) => {
            json!({"type": "get_config_reply", "flags": c.flags, "miss_send_len": c.miss_send_len})
        }
        Message::SetConfig(c) => {
            json!({"type": "set_config", "flags": c.flags, "miss_send_len": c.miss_send_len})
        }
        Message::PacketIn(p) => json!({
            "type": "packet_in", "buffer_id": p.buffer_id, "total_len": p.total_len,
            "reason": p.reason.value(), "table_id": p.table_id, "cookie": p.cookie,
            "match": match_view(&p.match_), "data": hex(&p.data),
        }),
        Message::FlowRemoved(f) => json!({
            "type": "flow_removed", "cookie": f.cookie, "priority": f.priority,
            "reason": f.reason.value(), "table_id": f.table_id,
            "duration_sec": f.duration_sec, "duration_nsec": f.duration_nsec,
            "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout,
            "packet_count": f.packet_count, "byte_count": f.byte_count,
            "match": match_view(&f.match_),
        }),
        Message::PortStatus(p) => json!({
            "type": "port_status", "reason": p.reason.value(), "desc": port_view(&p.desc)
        }),
        Message::PacketOut(p) => json!({
            "type": "packet_out", "buffer_id": p.buffer_id, "in_port": p.in_port,
            "actions": actions_view(&p.actions), "data": hex(&p.data),
        }),
        Message::FlowMod(f) => json!({
            "type": "flow_mod", "cookie": f.cookie, "cookie_mask": f.cookie_mask,
            "table_id": f.table_id, "command": f.command.value(),
            "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout,
            "priority": f.priority, "buffer_id": f.buffer_id, "out_port": f.out_port,
            "out_group": f.out_group, "flags": f.flags, "match": match_view(&f.match_),
            "instructions": instructions_view(&f.instructions),
        }),
        Message::PortMod(p) => json!({
            "type": "port_mod", "port_no": p.port_no, "hw_addr": mac(p.hw_addr),
            "config": p.config, "mask": p.mask, "advertise": p.advertise,
        }),
        Message::MultipartRequest(r) => {
            use MultipartRequestBody as B;
            let body = match &r.body {
                B::Desc => json!({"mp": "desc"}),
                B::Flow(f) => json!({"mp": "flow", "req": flow_req_view(f)}),
                B::Aggregate(f) => json!({"mp": "aggregate", "req": flow_req_view(f)}),
                B::Table => json!({"mp": "table"}),
                B::PortStats { port_no } => json!({"mp": "port", "port_no": port_no}),
                B::Queue { port_no, queue_id } => {
                    json!({"mp": "queue", "port_no": port_no, "queue_id": queue_id})
                }
                B::Experimenter(e) => json!({
                    "mp": "vendor", "experimenter": e.experimenter, "exp_type": e.exp_type,
                    "data": hex(&e.data)
                }),
                other => json!({"mp": format!("{other:?}")}),
            };
            json!({"type": "stats_request", "flags": r.flags, "body": body})
        }
        Message::MultipartReply(r) => {
            use MultipartReplyBody as B;
            let body = match &r.body {
                B::Desc(d) => json!({"mp": "desc", "mfr_desc": d.mfr_desc.as_str(),
                    "hw_desc": d.hw_desc.as_str(), "sw_desc": d.sw_desc.as_str(),
                    "serial_num": d.serial_num.as_str(), "dp_desc": d.dp_desc.as_str()}),
                B::Flow(v) => json!({"mp": "flow", "flows": v.iter().map(|f| json!({
                    "table_id": f.table_id, "duration_sec": f.duration_sec,
                    "duration_nsec": f.duration_nsec, "priority": f.priority,
                    "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout,
                    "cookie": f.cookie, "packet_count": f.packet_count,
                    "byte_count": f.byte_count, "match": match_view(&f.match_),
                    "instructions": instructions_view(&f.instructions),
                })).collect::<Vec<_>>()}),
                B::Aggregate(a) => json!({"mp": "aggregate", "packet_count": a.packet_count,
                    "byte_count": a.byte_count, "flow_count": a.flow_count}),
                B::Table(v) => json!({"mp": "table", "tables": v.iter().map(|t| json!({
                    "table_id": t.table_id, "active_count": t.active_count,
                    "lookup_count": t.lookup_count, "matched_count": t.matched_count,
                })).collect::<Vec<_>>()}),
                B::PortStats(v) => json!({"mp": "port", "ports": v.iter().map(|p| json!({
                    "port_no": p.port_no, "rx_packets": p.rx_packets, "tx_packets": p.tx_packets,
                    "rx_bytes": p.rx_bytes, "tx_bytes": p.tx_bytes, "rx_dropped": p.rx_dropped,
                    "tx_dropped": p.tx_dropped, "rx_errors": p.rx_errors, "tx_errors": p.tx_errors,
                    "rx_frame_err": p.rx_frame_err, "rx_over_err": p.rx_over_err,
                    "rx_crc_err": p.rx_crc_err, "collisions": p.collisions,
                })).collect::<Vec<_>>()}),
                B::Queue(v) => json!({"mp": "queue", "queues": v.iter().map(|q| json!({
                    "port_no": q.port_no, "queue_id": q.queue_id, "tx_bytes": q.tx_bytes,
                    "tx_packets": q.tx_packets, "tx_errors": q.tx_errors,
                })).collect::<Vec<_>>()}),
                B::Experimenter(e) => json!({"mp": "vendor", "experimenter": e.experimenter,
                    "exp_type": e.exp_type, "data": hex(&e.data)}),
                other => json!({"mp": format!("{other:?}")}),
            };
            json!({"type": "stats_reply", "flags": r.flags, "body": body})
        }
        Message::BarrierRequest => json!({"type": "barrier_request"}),
        Message::BarrierReply => json!({"type": "barrier_reply"}),
        Message::QueueGetConfigRequest { port } => {
            json!({"type": "queue_get_config_request", "port": port})
        }
        Message::QueueGetConfigReply(q) => json!({
            "type": "queue_get_config_reply", "port": q.port,
            "queues": q.queues.iter().map(|x| json!({
                "queue_id": x.queue_id, "port": x.port,
                "properties": x.properties.iter().map(|p| match p {
                    QueueProp::MinRate(r) => json!(["min_rate", r]),
                    other => json!(["other", format!("{other:?}")]),
                }).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        }),
        other => json!({"type": format!("{:?}", other.msg_type())}),
    }
}

fn decode_mode() {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.expect("stdin");
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&line).expect("json line");
        let name = v["name"].as_str().unwrap_or("?").to_string();
        let raw = unhex(v["hex"].as_str().unwrap_or("")).unwrap_or_default();
        let res = match Message::decode_as(&Bytes::from(raw), Version::V1_0) {
            Ok((h, m)) => {
                let mut b = Vec::new();
                match m.encode_as(Version::V1_0, h.xid, &mut b) {
                    Ok(()) => json!({"name": name, "ok": true, "hex": hex(&b),
                        "xid": h.xid, "summary": summary(&m)}),
                    Err(e) => json!({"name": name, "ok": false, "error": e.to_string()}),
                }
            }
            Err(e) => json!({"name": name, "ok": false,
                "error": format!("{} ({})", e.code.type_code().0, e)}),
        };
        writeln!(out, "{res}").expect("stdout");
    }
}

fn port(no: u32, name: &str) -> PortDesc {
    PortDesc {
        port_no: no,
        hw_addr: [0x02, 0, 0, 0, 0, no as u8],
        name: FixedStr::new(name),
        config: 0x11,
        state: 0x201,
        curr: pf::F_1GB_FD | pf::COPPER | pf::AUTONEG,
        advertised: pf::F_100MB_FD | pf::F_1GB_FD | pf::PAUSE,
        supported: pf::F_10GB_FD | pf::FIBER | pf::PAUSE_ASYM,
        peer: pf::F_10MB_HD,
        curr_speed: 1_000_000,
        max_speed: 10_000_000,
    }
}

fn tcp_match() -> Match {
    Match::new()
        .with(Oxm::exact(OxmField::InPort, 1))
        .with(Oxm::exact(OxmField::EthDst, 0x0200_0000_0002))
        .with(Oxm::exact(OxmField::EthSrc, 0x0200_0000_0001))
        .with(Oxm::exact(OxmField::EthType, 0x0800))
        .with(Oxm::exact(OxmField::VlanVid, 0x1000 | 10))
        .with(Oxm::exact(OxmField::VlanPcp, 3))
        .with(Oxm::exact(OxmField::IpDscp, 46))
        .with(Oxm::exact(OxmField::IpProto, 6))
        .with(Oxm::masked(OxmField::Ipv4Src, 0x0a00_0000, 0xff00_0000))
        .with(Oxm::exact(OxmField::Ipv4Dst, 0x0a00_0002))
        .with(Oxm::exact(OxmField::TcpSrc, 1234))
        .with(Oxm::exact(OxmField::TcpDst, 80))
}

fn corpus() -> Vec<(&'static str, Message)> {
    let sf = |f, v| Action::SetField(MatchEntry::Basic(Oxm::exact(f, v)));
    let flow = FlowStats {
        idle_age: None,
        hard_age: None,
        table_id: 0,
        duration_sec: 10,
        duration_nsec: 500,
        priority: 100,
        idle_timeout: 30,
        hard_timeout: 60,
        flags: 0,
        cookie: 0xabcd,
        packet_count: 7,
        byte_count: 700,
        match_: tcp_match(),
        instructions: vec![Instruction::ApplyActions(vec![
            sf(OxmField::EthDst, 0x0200_0000_0009),
            sf(OxmField::TcpDst, 8080),
            Action::Output {
                port: 2,
                max_len: 0,
            },
            Action::Output {
                port: ofp::port::port_no::CONTROLLER,
                max_len: 128,
            },
        ])],
    };
    let mut drop_flow = flow.clone();
    drop_flow.match_ = Match::new().with(Oxm::exact(OxmField::VlanVid, 0));
    drop_flow.instructions = vec![];
    drop_flow.priority = 1;
    // A flow 1.0 cannot say all of: what a 1.0 controller sees of it.
    let beyond = FlowStats {
        idle_age: None,
        hard_age: None,
        table_id: 1,
        match_: Match::new()
            .with(Oxm::exact(OxmField::InPort, 1))
            .with(Oxm::exact(OxmField::Metadata, 5))
            .with(Oxm::exact(OxmField::EthType, 0x0800)),
        instructions: vec![
            Instruction::ApplyActions(vec![
                Action::Group(3),
                Action::DecNwTtl,
                sf(OxmField::TunnelId, 0x77),
                Action::PushVlan(0x8100),
                sf(OxmField::VlanVid, 0x1005),
                Action::SetQueue(4),
                Action::Output {
                    port: 2,
                    max_len: u16::MAX,
                },
                Action::PopQueue,
            ]),
            Instruction::Meter(1),
            Instruction::ClearActions,
            Instruction::GotoTable(2),
        ],
        ..flow.clone()
    };
    let mp = |body| Message::MultipartReply(MultipartReply::new(body));
    vec![
        (
            "features_reply",
            Message::FeaturesReply(FeaturesReply {
                datapath_id: 0x0000_0000_0000_00aa,
                n_buffers: 256,
                n_tables: 254,
                auxiliary_id: 0,
                capabilities: capabilities::FLOW_STATS
                    | capabilities::TABLE_STATS
                    | capabilities::PORT_STATS
                    | capabilities::QUEUE_STATS,
                reserved: 0,
                ports: vec![
                    port(1, "eth1"),
                    port(2, "eth2"),
                    port(ofp::port::port_no::LOCAL, "br0"),
                ],
            }),
        ),
        (
            "packet_in",
            Message::PacketIn(PacketIn {
                buffer_id: 0xffff_ffff,
                total_len: 16,
                reason: PacketInReason::NoMatch,
                table_id: 0,
                cookie: 0,
                match_: Match::new().with(Oxm::exact(OxmField::InPort, 3)),
                data: Bytes::from_static(&[
                    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1,
                ]),
            }),
        ),
        (
            "flow_removed",
            Message::FlowRemoved(FlowRemoved {
                cookie: 0x1234,
                priority: 100,
                reason: FlowRemovedReason::HardTimeout,
                table_id: 255,
                duration_sec: 60,
                duration_nsec: 1000,
                idle_timeout: 30,
                hard_timeout: 0,
                packet_count: 10,
                byte_count: 1000,
                match_: tcp_match(),
            }),
        ),
        (
            "port_status",
            Message::PortStatus(PortStatus {
                reason: PortReason::Modify,
                desc: port(4, "eth4"),
            }),
        ),
        (
            "desc_stats_reply",
            mp(MultipartReplyBody::Desc(Box::new(Desc {
                mfr_desc: FixedStr::new("sluice project"),
                hw_desc: FixedStr::new("software"),
                sw_desc: FixedStr::new("sluice"),
                serial_num: FixedStr::new("none"),
                dp_desc: FixedStr::new("br0"),
            }))),
        ),
        (
            "flow_stats_reply",
            mp(MultipartReplyBody::Flow(vec![flow, drop_flow])),
        ),
        (
            "aggregate_stats_reply",
            mp(MultipartReplyBody::Aggregate(AggregateStats {
                packet_count: 100,
                byte_count: 6400,
                flow_count: 3,
            })),
        ),
        (
            "table_stats_reply",
            mp(MultipartReplyBody::Table(vec![
                TableStats {
                    table_id: 0,
                    name: ofp::wire::FixedStr::new("table0"),
                    active_count: 3,
                    lookup_count: 1000,
                    matched_count: 900,
                },
                TableStats {
                    table_id: 1,
                    name: ofp::wire::FixedStr::new("table1"),
                    active_count: 0,
                    lookup_count: 0,
                    matched_count: 0,
                },
            ])),
        ),
        (
            "port_stats_reply",
            mp(MultipartReplyBody::PortStats(vec![
                PortStats::with_counters(1, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], (0, 0)),
            ])),
        ),
        (
            "queue_stats_reply",
            mp(MultipartReplyBody::Queue(vec![QueueStats {
                port_no: 1,
                queue_id: 2,
                tx_bytes: 3,
                tx_packets: 4,
                tx_errors: 5,
                duration_sec: 0,
                duration_nsec: 0,
            }])),
        ),
        (
            "vendor_stats_reply",
            mp(MultipartReplyBody::Experimenter(ExperimenterMsg {
                experimenter: 0x00ab_cdef,
                exp_type: 7,
                data: Bytes::from_static(&[1, 2, 3, 4]),
            })),
        ),
        (
            "error_bad_len",
            Message::Error(ErrorMsg {
                code: ErrorCode::BadRequest(BadRequestCode::BadLen),
                data: Bytes::from_static(&[1, 2, 0, 8, 0, 0, 0, 1]),
            }),
        ),
        (
            "error_overlap",
            Message::Error(ErrorMsg {
                code: ErrorCode::FlowModFailed(FlowModFailedCode::Overlap),
                data: Bytes::from_static(&[1, 2, 0, 8, 0, 0, 0, 2]),
            }),
        ),
        (
            "error_match_inconsistent",
            Message::Error(ErrorMsg {
                code: ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                data: Bytes::from_static(&[1, 2, 0, 8, 0, 0, 0, 3]),
            }),
        ),
        (
            "get_config_reply",
            Message::GetConfigReply(SwitchConfig {
                flags: 1,
                miss_send_len: 128,
            }),
        ),
        ("barrier_reply", Message::BarrierReply),
        (
            "echo_reply",
            Message::EchoReply(Bytes::from_static(b"ping")),
        ),
        (
            "queue_get_config_reply",
            Message::QueueGetConfigReply(QueueGetConfigReply {
                port: 1,
                queues: vec![
                    PacketQueue {
                        queue_id: 1,
                        port: 1,
                        properties: vec![QueueProp::MinRate(100)],
                    },
                    PacketQueue {
                        queue_id: 2,
                        port: 1,
                        properties: vec![],
                    },
                ],
            }),
        ),
        (
            "flow_stats_reply_beyond_1_0",
            mp(MultipartReplyBody::Flow(vec![beyond])),
        ),
    ]
}

fn corpus_mode() {
    let mut out = std::io::stdout().lock();
    for (i, (name, m)) in corpus().into_iter().enumerate() {
        let xid = 2000 + i as u32;
        let mut b = Vec::new();
        m.encode_as(Version::V1_0, xid, &mut b).expect("fits");
        let line = json!({"name": name, "hex": hex(&b), "xid": xid, "summary": summary(&m)});
        writeln!(out, "{line}").expect("stdout");
    }
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("decode") => decode_mode(),
        Some("corpus") => corpus_mode(),
        _ => {
            eprintln!("usage: of10-interop decode|corpus");
            std::process::exit(2);
        }
    }
}
