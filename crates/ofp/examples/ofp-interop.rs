//! Helper for the cross-implementation tests with os-ken (`tests/interop/`).
//!
//! * `ofp-interop decode`: reads JSON lines `{"name", "hex"}` (messages os-ken
//!   encoded), decodes each with this crate and writes `{"name", "ok",
//!   "error", "hex" (our re-encoding; of a Nicira message, of what
//!   `NxtMsg` read from it), "summary"}`.
//! * `ofp-interop corpus`: writes `{"name", "hex", "summary"}` for messages
//!   this crate encoded (every switch-to-controller message), for os-ken to
//!   decode.
//!
//! * `ofp-interop flows`: reads JSON lines `{"name", "hex", "flow"}`: a
//!   FLOW_MOD os-ken encoded (Open vSwitch's extension fields and Nicira
//!   actions) and the same flow in ovs-ofctl text. Writes `{"name", "ok",
//!   "error", "hex" (our re-encoding of os-ken's bytes), "printed" (the
//!   decoded flow as text), "text_ok", "text_error", "text_hex" (the text
//!   parsed and encoded), "same_match" (the decoded match has the text's
//!   fields, in any order), "same_instructions"}`.
//!
//! A summary names fields as os-ken does, so the Python side can compare
//! them field by field with os-ken's own view of the same bytes.

use std::io::{BufRead, Write};

use bytes::Bytes;
use serde_json::{json, Map, Value};

use ofp::action::Action;
use ofp::instruction::Instruction;
use ofp::msg::flow::{FlowRemoved, FlowRemovedReason, PacketIn, PacketInReason};
use ofp::msg::group::{Bucket, GroupType};
use ofp::msg::meter::MeterBand;
use ofp::msg::multipart::*;
use ofp::msg::nxt::{NxtMsg, PacketIn2};
use ofp::msg::simple::*;
use ofp::msg::table_features::{prop_type, OxmId, TableFeatureProp, TableFeatures, TypeId};
use ofp::msg::Message;
use ofp::oxm::{Match, MatchEntry, OxmField};
use ofp::port::PortDesc;
use ofp::wire::FixedStr;
use ofp::{ErrorCode, OfpError};

#[path = "interop_common/mod.rs"]
mod common;
use common::{hex, m, mac, match_summary, port, unhex};

/// A Nicira message as os-ken's classes hold it (`NXTSetPacketInFormatMsg`,
/// `NXTPacketIn2`: absent properties are absent here, None there).
fn nicira_summary(e: &ExperimenterMsg, n: &NxtMsg) -> Value {
    let mut m = Map::new();
    m.insert("experimenter".into(), json!(e.experimenter));
    m.insert("exp_type".into(), json!(e.exp_type));
    match n {
        NxtMsg::SetPacketInFormat(f) => {
            m.insert("packet_in_format".into(), json!(f.value()));
        }
        NxtMsg::PacketIn2(p) => {
            m.insert("data".into(), json!(hex(&p.data)));
            m.insert("total_len".into(), json!(p.total_len));
            if p.buffer_id != ofp::port::NO_BUFFER {
                m.insert("buffer_id".into(), json!(p.buffer_id));
            }
            m.insert("table_id".into(), json!(p.table_id));
            if p.cookie != u64::MAX {
                m.insert("cookie".into(), json!(p.cookie));
            }
            m.insert("reason".into(), json!(p.reason.value()));
            let mut oxm = Vec::new();
            for e in &p.metadata.entries {
                e.encode(&mut oxm);
            }
            m.insert("metadata".into(), json!(hex(&oxm)));
            if !p.userdata.is_empty() {
                m.insert("userdata".into(), json!(hex(&p.userdata)));
            }
        }
        _ => {
            m.insert("data".into(), json!(hex(&e.data)));
        }
    }
    Value::Object(m)
}

fn action_summary(a: &Action) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!(a.action_type().value()));
    match a {
        Action::Output { port, max_len } => {
            m.insert("port".into(), json!(port));
            m.insert("max_len".into(), json!(max_len));
        }
        Action::SetMplsTtl(t) => drop(m.insert("mpls_ttl".into(), json!(t))),
        Action::SetNwTtl(t) => drop(m.insert("nw_ttl".into(), json!(t))),
        Action::PushVlan(e) | Action::PushMpls(e) | Action::PopMpls(e) | Action::PushPbb(e) => {
            m.insert("ethertype".into(), json!(e));
        }
        Action::SetQueue(q) => drop(m.insert("queue_id".into(), json!(q))),
        Action::Group(g) => drop(m.insert("group_id".into(), json!(g))),
        Action::SetField(MatchEntry::Basic(o)) => {
            m.insert("key".into(), json!(o.field.name()));
            m.insert("value".into(), json!(format!("{:#x}", o.value)));
        }
        Action::Experimenter { experimenter, .. } => {
            drop(m.insert("experimenter".into(), json!(experimenter)))
        }
        // As os-ken's NXActionResubmitTable: the port in Open vSwitch's
        // 16 bits.
        Action::Resubmit(r) => {
            m.insert("experimenter".into(), json!(ofp::action::NX_VENDOR_ID));
            m.insert("subtype".into(), json!(ofp::action::NXAST_RESUBMIT_TABLE));
            m.insert("in_port".into(), json!(r.in_port & 0xffff));
            m.insert("table_id".into(), json!(r.table));
        }
        _ => {}
    }
    Value::Object(m)
}

fn actions(v: &[Action]) -> Value {
    Value::Array(v.iter().map(action_summary).collect())
}

fn instruction_summary(i: &Instruction) -> Value {
    let t = i.instruction_type().value();
    match i {
        Instruction::GotoTable(n) => json!({"type": t, "table_id": n}),
        Instruction::WriteMetadata { metadata, mask } => {
            json!({"type": t, "metadata": metadata, "metadata_mask": mask})
        }
        Instruction::WriteActions(a) | Instruction::ApplyActions(a) => {
            json!({"type": t, "actions": actions(a)})
        }
        Instruction::ClearActions => json!({"type": t}),
        Instruction::Meter(m) => json!({"type": t, "meter_id": m}),
        Instruction::Experimenter { experimenter, .. } => {
            json!({"type": t, "experimenter": experimenter})
        }
    }
}

fn bucket(b: &Bucket) -> Value {
    json!({"weight": b.weight, "watch_port": b.watch_port, "watch_group": b.watch_group, "actions": actions(&b.actions)})
}

fn band(b: &MeterBand) -> Value {
    match b {
        MeterBand::Drop { rate, burst_size } => {
            json!({"type": 1, "rate": rate, "burst_size": burst_size})
        }
        MeterBand::DscpRemark {
            rate,
            burst_size,
            prec_level,
        } => {
            json!({"type": 2, "rate": rate, "burst_size": burst_size, "prec_level": prec_level})
        }
        MeterBand::Experimenter {
            rate,
            burst_size,
            experimenter,
            ..
        } => {
            json!({"type": 0xffff, "rate": rate, "burst_size": burst_size, "experimenter": experimenter})
        }
    }
}

fn port_desc(p: &PortDesc) -> Value {
    json!({
        "port_no": p.port_no, "hw_addr": mac(&p.hw_addr), "name": p.name.to_string(), "config": p.config,
        "state": p.state, "curr": p.curr, "advertised": p.advertised, "supported": p.supported, "peer": p.peer,
        "curr_speed": p.curr_speed, "max_speed": p.max_speed,
    })
}

fn table_features(t: &TableFeatures) -> Value {
    let props: Vec<Value> = t
        .properties
        .iter()
        .map(|p| match p {
            TableFeatureProp::Instructions { ty, .. }
            | TableFeatureProp::NextTables { ty, .. }
            | TableFeatureProp::Actions { ty, .. }
            | TableFeatureProp::Oxms { ty, .. }
            | TableFeatureProp::Experimenter { ty, .. } => json!({"type": ty}),
        })
        .collect();
    json!({
        "table_id": t.table_id, "name": t.name.to_string(), "metadata_match": t.metadata_match,
        "metadata_write": t.metadata_write, "config": t.config, "max_entries": t.max_entries, "properties": props,
    })
}

fn reply_body(b: &MultipartReplyBody) -> Value {
    use MultipartReplyBody as B;
    match b {
        B::Desc(d) => json!({"mfr_desc": d.mfr_desc.to_string(), "hw_desc": d.hw_desc.to_string(),
            "sw_desc": d.sw_desc.to_string(), "serial_num": d.serial_num.to_string(), "dp_desc": d.dp_desc.to_string()}),
        B::Flow(v) => Value::Array(v.iter().map(|f| json!({
            "table_id": f.table_id, "duration_sec": f.duration_sec, "duration_nsec": f.duration_nsec,
            "priority": f.priority, "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout, "flags": f.flags,
            "cookie": f.cookie, "packet_count": f.packet_count, "byte_count": f.byte_count,
            "match": match_summary(&f.match_),
            "instructions": f.instructions.iter().map(instruction_summary).collect::<Vec<_>>(),
        })).collect()),
        B::Aggregate(a) => json!({"packet_count": a.packet_count, "byte_count": a.byte_count, "flow_count": a.flow_count}),
        B::Table(v) => Value::Array(v.iter().map(|t| json!({"table_id": t.table_id, "active_count": t.active_count,
            "lookup_count": t.lookup_count, "matched_count": t.matched_count})).collect()),
        B::PortStats(v) => Value::Array(v.iter().map(|p| json!({"port_no": p.port_no, "rx_packets": p.rx_packets,
            "tx_packets": p.tx_packets, "rx_bytes": p.rx_bytes, "tx_bytes": p.tx_bytes, "rx_dropped": p.rx_dropped,
            "tx_dropped": p.tx_dropped, "rx_errors": p.rx_errors, "tx_errors": p.tx_errors,
            "rx_frame_err": p.rx_frame_err, "rx_over_err": p.rx_over_err, "rx_crc_err": p.rx_crc_err,
            "collisions": p.collisions, "duration_sec": p.duration_sec, "duration_nsec": p.duration_nsec})).collect()),
        B::Queue(v) => Value::Array(v.iter().map(|q| json!({"port_no": q.port_no, "queue_id": q.queue_id,
            "tx_bytes": q.tx_bytes, "tx_packets": q.tx_packets, "tx_errors": q.tx_errors,
            "duration_sec": q.duration_sec, "duration_nsec": q.duration_nsec})).collect()),
        B::Group(v) => Value::Array(v.iter().map(|g| json!({"group_id": g.group_id, "ref_count": g.ref_count,
            "packet_count": g.packet_count, "byte_count": g.byte_count, "duration_sec": g.duration_sec,
            "duration_nsec": g.duration_nsec,
            "bucket_stats": g.bucket_stats.iter().map(|b| json!({"packet_count": b.packet_count, "byte_count": b.byte_count})).collect::<Vec<_>>(),
        })).collect()),
        B::GroupDesc(v) => Value::Array(v.iter().map(|g| json!({"type": g.group_type.value(), "group_id": g.group_id,
            "buckets": g.buckets.iter().map(bucket).collect::<Vec<_>>()})).collect()),
        B::GroupFeatures(g) => json!({"types": g.types, "capabilities": g.capabilities, "max_groups": g.max_groups,
            "actions": g.actions}),
        B::Meter(v) => Value::Array(v.iter().map(|m| json!({"meter_id": m.meter_id, "flow_count": m.flow_count,
            "packet_in_count": m.packet_in_count, "byte_in_count": m.byte_in_count, "duration_sec": m.duration_sec,
            "duration_nsec": m.duration_nsec,
            "band_stats": m.band_stats.iter().map(|b| json!({"packet_band_count": b.packet_band_count, "byte_band_count": b.byte_band_count})).collect::<Vec<_>>(),
        })).collect()),
        B::MeterConfig(v) => Value::Array(v.iter().map(|m| json!({"flags": m.flags, "meter_id": m.meter_id,
            "bands": m.bands.iter().map(band).collect::<Vec<_>>()})).collect()),
        B::MeterFeatures(m) => json!({"max_meter": m.max_meter, "band_types": m.band_types,
            "capabilities": m.capabilities, "max_bands": m.max_bands, "max_color": m.max_color}),
        B::TableFeatures(v) => Value::Array(v.iter().map(table_features).collect()),
        B::PortDesc(v) => Value::Array(v.iter().map(port_desc).collect()),
        B::Experimenter(e) => json!({"experimenter": e.experimenter, "exp_type": e.exp_type, "data": hex(&e.data)}),
    }
}

/// A summary of `m` with os-ken's attribute names.
fn summary(m: &Message) -> Value {
    use Message as M;
    match m {
        M::Hello(h) => {
            let elems: Vec<Value> = h
                .elements
                .iter()
                .filter_map(|e| match e {
                    HelloElem::VersionBitmap(words) => {
                        let versions: Vec<u32> = (0..32 * words.len() as u32)
                            .filter(|v| words[(v / 32) as usize] & (1 << (v % 32)) != 0)
                            .collect();
                        Some(json!({"versions": versions}))
                    }
                    HelloElem::Unknown { .. } => None,
                })
                .collect();
            json!({"elements": elems})
        }
        M::Error(e) => {
            let (t, c) = e.code.type_code();
            json!({"type": t, "code": c, "data": hex(&e.data)})
        }
        M::EchoRequest(d) | M::EchoReply(d) => json!({"data": hex(d)}),
        M::Experimenter(e) => match NxtMsg::decode(e) {
            Some(Ok(n)) => nicira_summary(e, &n),
            _ => {
                json!({"experimenter": e.experimenter, "exp_type": e.exp_type, "data": hex(&e.data)})
            }
        },
        M::FeaturesRequest
        | M::GetConfigRequest
        | M::BarrierRequest
        | M::BarrierReply
        | M::GetAsyncRequest => {
            json!({})
        }
        M::FeaturesReply(f) => {
            json!({"datapath_id": f.datapath_id, "n_buffers": f.n_buffers, "n_tables": f.n_tables,
            "auxiliary_id": f.auxiliary_id, "capabilities": f.capabilities})
        }
        M::GetConfigReply(c) | M::SetConfig(c) => {
            json!({"flags": c.flags, "miss_send_len": c.miss_send_len})
        }
        M::PacketIn(p) => {
            json!({"buffer_id": p.buffer_id, "total_len": p.total_len, "reason": p.reason.value(),
            "table_id": p.table_id, "cookie": p.cookie, "match": match_summary(&p.match_), "data": hex(&p.data)})
        }
        M::FlowRemoved(f) => {
            json!({"cookie": f.cookie, "priority": f.priority, "reason": f.reason.value(),
            "table_id": f.table_id, "duration_sec": f.duration_sec, "duration_nsec": f.duration_nsec,
            "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout, "packet_count": f.packet_count,
            "byte_count": f.byte_count, "match": match_summary(&f.match_)})
        }
        M::PortStatus(p) => json!({"reason": p.reason.value(), "desc": port_desc(&p.desc)}),
        M::PacketOut(p) => {
            json!({"buffer_id": p.buffer_id, "in_port": p.in_port, "actions": actions(&p.actions),
            "data": hex(&p.data)})
        }
        M::FlowMod(f) => {
            json!({"cookie": f.cookie, "cookie_mask": f.cookie_mask, "table_id": f.table_id,
            "command": f.command.value(), "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout,
            "priority": f.priority, "buffer_id": f.buffer_id, "out_port": f.out_port, "out_group": f.out_group,
            "flags": f.flags, "match": match_summary(&f.match_),
            "instructions": f.instructions.iter().map(instruction_summary).collect::<Vec<_>>()})
        }
        M::GroupMod(g) => {
            json!({"command": g.command.value(), "type": g.group_type.value(), "group_id": g.group_id,
            "buckets": g.buckets.iter().map(bucket).collect::<Vec<_>>()})
        }
        M::PortMod(p) => {
            json!({"port_no": p.port_no, "hw_addr": mac(&p.hw_addr), "config": p.config, "mask": p.mask,
            "advertise": p.advertise})
        }
        M::TableMod(t) => json!({"table_id": t.table_id, "config": t.config}),
        M::MultipartRequest(r) => {
            use MultipartRequestBody as B;
            let mut v = json!({"type": r.mp_type().value(), "flags": r.flags});
            let extra = match &r.body {
                B::Flow(f) | B::Aggregate(f) => {
                    json!({"table_id": f.table_id, "out_port": f.out_port,
                    "out_group": f.out_group, "cookie": f.cookie, "cookie_mask": f.cookie_mask,
                    "match": match_summary(&f.match_)})
                }
                B::PortStats { port_no } => json!({"port_no": port_no}),
                B::Queue { port_no, queue_id } => json!({"port_no": port_no, "queue_id": queue_id}),
                B::Group { group_id } => json!({"group_id": group_id}),
                B::Meter { meter_id } | B::MeterConfig { meter_id } => {
                    json!({"meter_id": meter_id})
                }
                B::TableFeatures(t) => {
                    json!({"body": t.iter().map(table_features).collect::<Vec<_>>()})
                }
                B::Experimenter(e) => {
                    json!({"experimenter": e.experimenter, "exp_type": e.exp_type, "data": hex(&e.data)})
                }
                _ => json!({}),
            };
            if let (Value::Object(a), Value::Object(b)) = (&mut v, extra) {
                a.extend(b);
            }
            v
        }
        M::MultipartReply(r) => {
            json!({"type": r.mp_type().value(), "flags": r.flags, "body": reply_body(&r.body)})
        }
        M::QueueGetConfigRequest { port } => json!({"port": port}),
        M::QueueGetConfigReply(q) => {
            json!({"port": q.port, "queues": q.queues.iter().map(|q| json!({
            "queue_id": q.queue_id, "port": q.port,
            "properties": q.properties.iter().map(|p| match p {
                QueueProp::MinRate(r) => json!({"property": 1, "rate": r}),
                QueueProp::MaxRate(r) => json!({"property": 2, "rate": r}),
                QueueProp::Experimenter { experimenter, .. } => json!({"property": 0xffff, "experimenter": experimenter}),
            }).collect::<Vec<_>>()})).collect::<Vec<_>>()})
        }
        M::RoleRequest(r) | M::RoleReply(r) => {
            json!({"role": r.role.value(), "generation_id": r.generation_id})
        }
        M::GetAsyncReply(a) | M::SetAsync(a) => json!({"packet_in_mask": a.packet_in_mask,
            "port_status_mask": a.port_status_mask, "flow_removed_mask": a.flow_removed_mask}),
        M::MeterMod(m) => {
            json!({"command": m.command.value(), "flags": m.flags, "meter_id": m.meter_id,
            "bands": m.bands.iter().map(band).collect::<Vec<_>>()})
        }
    }
}

/// Every switch-to-controller message, as sluice will send them.
fn corpus() -> Vec<(&'static str, Message)> {
    use MultipartReplyBody as B;
    let full = m("in_port=1,dl_dst=02:00:00:00:00:02,dl_src=02:00:00:00:00:01/ff:ff:ff:00:00:00,\
                  dl_vlan=10,vlan_pcp=3,tcp,ip_dscp=46,nw_ecn=1,nw_src=10.0.0.0/8,nw_dst=10.1.2.3,tp_src=1234,tp_dst=80,\
                  metadata=0x1234/0xffff,tun_id=0x99");
    let v6 = m("icmp6,ipv6_src=2001:db8::/32,ipv6_dst=2001:db8::1,ipv6_label=0x12345,icmpv6_type=135,icmpv6_code=0,\
                nd_target=2001:db8::2,nd_sll=02:00:00:00:00:09,ipv6_exthdr=0x1");
    let arp = m("arp,arp_op=1,arp_spa=10.0.0.1,arp_tpa=10.0.0.2,arp_sha=02:00:00:00:00:01,arp_tha=00:00:00:00:00:00");
    let mpls = m("mpls,mpls_label=100,mpls_tc=3,mpls_bos=1");
    let other = m("udp6,udp_src=53,udp_dst=5353");
    let sctp = m("sctp,sctp_src=1,sctp_dst=2");
    let icmp = m("icmp,icmp_type=8,icmp_code=0,in_phy_port=3,in_port=3");
    let pbb = m("dl_type=0x88e7,pbb_isid=0x123456");
    let flow_stats = |match_: Match, instructions: Vec<Instruction>| FlowStats {
        idle_age: None,
        hard_age: None,
        table_id: 1,
        duration_sec: 10,
        duration_nsec: 500,
        priority: 100,
        idle_timeout: 30,
        hard_timeout: 60,
        flags: 1,
        cookie: 0xabcd,
        packet_count: 12,
        byte_count: 3400,
        match_,
        instructions,
    };
    let insts = ofp::text::parse_instructions(
        "meter:1,set_field:02:00:00:00:00:03->eth_dst,push_vlan:0x8100,set_field:4101->vlan_vid,output:2,\
         controller:128,group:3,set_queue:1,dec_nw_ttl,set_nw_ttl:9,copy_ttl_out,copy_ttl_in,set_mpls_ttl:5,\
         dec_mpls_ttl,push_mpls:0x8847,pop_mpls:0x0800,pop_vlan,push_pbb:0x88e7,pop_pbb,\
         resubmit(7,2),resubmit:LOCAL,resubmit(,4),clear_actions,\
         write_actions(output:1,set_field:10.0.0.9->ipv4_dst),write_metadata:0x1/0xff,goto_table:2",
    )
    .expect("corpus instructions");
    let tf = TableFeatures {
        table_id: 0,
        name: FixedStr::new("table0"),
        metadata_match: u64::MAX,
        metadata_write: u64::MAX,
        config: 0,
        max_entries: 1_000_000,
        properties: vec![
            TableFeatureProp::Instructions {
                ty: prop_type::INSTRUCTIONS,
                ids: (1..=6)
                    .map(|t| TypeId {
                        ty: t,
                        data: Bytes::new(),
                    })
                    .collect(),
            },
            TableFeatureProp::NextTables {
                ty: prop_type::NEXT_TABLES,
                tables: vec![1, 2, 3],
            },
            TableFeatureProp::Actions {
                ty: prop_type::APPLY_ACTIONS,
                ids: [0u16, 17, 18, 25]
                    .iter()
                    .map(|t| TypeId {
                        ty: *t,
                        data: Bytes::new(),
                    })
                    .collect(),
            },
            TableFeatureProp::Oxms {
                ty: prop_type::MATCH,
                ids: [OxmField::InPort, OxmField::EthDst]
                    .iter()
                    .map(|f| OxmId {
                        header: f.header(false),
                        experimenter: None,
                    })
                    .collect(),
            },
            TableFeatureProp::Oxms {
                ty: prop_type::APPLY_SETFIELD,
                ids: vec![OxmId {
                    header: OxmField::Ipv4Dst.header(false),
                    experimenter: None,
                }],
            },
        ],
    };
    vec![
        ("hello", Message::Hello(Hello::ours())),
        (
            "error",
            Message::Error(ErrorMsg {
                code: ErrorCode::BadMatch(ofp::error::BadMatchCode::BadPrereq),
                data: Bytes::from_static(&[4, 14, 0, 8, 0, 0, 0, 1]),
            }),
        ),
        (
            "echo_request",
            Message::EchoRequest(Bytes::from_static(b"are you there")),
        ),
        ("echo_reply", Message::EchoReply(Bytes::from_static(b"yes"))),
        (
            "features_reply",
            Message::FeaturesReply(FeaturesReply {
                datapath_id: 0x0000_0242_ac11_0002,
                n_buffers: 256,
                n_tables: 254,
                auxiliary_id: 0,
                capabilities: capabilities::FLOW_STATS
                    | capabilities::TABLE_STATS
                    | capabilities::PORT_STATS,
                reserved: 0,
                ports: Vec::new(),
            }),
        ),
        (
            "get_config_reply",
            Message::GetConfigReply(SwitchConfig {
                flags: 0,
                miss_send_len: 128,
            }),
        ),
        (
            "packet_in",
            Message::PacketIn(PacketIn {
                buffer_id: 0xffff_ffff,
                total_len: 42,
                reason: PacketInReason::NoMatch,
                table_id: 0,
                cookie: 0x1122,
                match_: m("in_port=3"),
                data: Bytes::from(vec![0xab; 42]),
            }),
        ),
        (
            "packet_in_full_match",
            Message::PacketIn(PacketIn {
                buffer_id: 17,
                total_len: 1500,
                reason: PacketInReason::Action,
                table_id: 4,
                cookie: 7,
                match_: full.clone(),
                data: Bytes::from(vec![1; 128]),
            }),
        ),
        (
            "flow_removed",
            Message::FlowRemoved(FlowRemoved {
                cookie: 0xdead,
                priority: 10,
                reason: FlowRemovedReason::IdleTimeout,
                table_id: 2,
                duration_sec: 100,
                duration_nsec: 5,
                idle_timeout: 10,
                hard_timeout: 0,
                packet_count: 1000,
                byte_count: 64000,
                match_: v6.clone(),
            }),
        ),
        (
            "port_status",
            Message::PortStatus(PortStatus {
                reason: PortReason::Modify,
                desc: port(1, "p1"),
            }),
        ),
        (
            "desc_reply",
            Message::MultipartReply(MultipartReply::new(B::Desc(Box::new(Desc {
                mfr_desc: FixedStr::new("sluice project"),
                hw_desc: FixedStr::new("software"),
                sw_desc: FixedStr::new("sluice 0.1"),
                serial_num: FixedStr::new("none"),
                dp_desc: FixedStr::new("br0"),
            })))),
        ),
        (
            "flow_stats_reply",
            Message::MultipartReply(MultipartReply {
                flags: 1,
                body: B::Flow(vec![
                    flow_stats(full, insts.clone()),
                    flow_stats(arp, vec![]),
                    flow_stats(mpls, vec![Instruction::GotoTable(5)]),
                    flow_stats(other, vec![]),
                    flow_stats(sctp, vec![]),
                    flow_stats(icmp, vec![]),
                    flow_stats(pbb, vec![]),
                ]),
            }),
        ),
        (
            "aggregate_reply",
            Message::MultipartReply(MultipartReply::new(B::Aggregate(AggregateStats {
                packet_count: 5,
                byte_count: 600,
                flow_count: 3,
            }))),
        ),
        (
            "table_stats_reply",
            Message::MultipartReply(MultipartReply::new(B::Table(vec![
                TableStats {
                    table_id: 0,
                    name: ofp::wire::FixedStr::new("table0"),
                    active_count: 3,
                    lookup_count: 100,
                    matched_count: 90,
                },
                TableStats {
                    table_id: 1,
                    name: ofp::wire::FixedStr::new("table1"),
                    active_count: 0,
                    lookup_count: 0,
                    matched_count: 0,
                },
            ]))),
        ),
        (
            "port_stats_reply",
            Message::MultipartReply(MultipartReply::new(B::PortStats(vec![PortStats {
                port_no: 1,
                rx_packets: 1,
                tx_packets: 2,
                rx_bytes: 3,
                tx_bytes: 4,
                rx_dropped: 5,
                tx_dropped: 6,
                rx_errors: 7,
                tx_errors: 8,
                rx_frame_err: 9,
                rx_over_err: 10,
                rx_crc_err: 11,
                collisions: 12,
                duration_sec: 13,
                duration_nsec: 14,
            }]))),
        ),
        (
            "queue_stats_reply",
            Message::MultipartReply(MultipartReply::new(B::Queue(vec![QueueStats {
                port_no: 1,
                queue_id: 2,
                tx_bytes: 3,
                tx_packets: 4,
                tx_errors: 5,
                duration_sec: 6,
                duration_nsec: 7,
            }]))),
        ),
        (
            "group_stats_reply",
            Message::MultipartReply(MultipartReply::new(B::Group(vec![GroupStats {
                group_id: 1,
                ref_count: 2,
                packet_count: 3,
                byte_count: 4,
                duration_sec: 5,
                duration_nsec: 6,
                bucket_stats: vec![
                    BucketCounter {
                        packet_count: 7,
                        byte_count: 8,
                    },
                    BucketCounter {
                        packet_count: 9,
                        byte_count: 10,
                    },
                ],
            }]))),
        ),
        (
            "group_desc_reply",
            Message::MultipartReply(MultipartReply::new(B::GroupDesc(vec![GroupDesc {
                group_type: GroupType::Select,
                group_id: 5,
                buckets: vec![
                    Bucket {
                        weight: 10,
                        actions: vec![Action::Output {
                            port: 1,
                            max_len: 0,
                        }],
                        ..Bucket::default()
                    },
                    Bucket {
                        weight: 20,
                        watch_port: 2,
                        actions: vec![Action::Output {
                            port: 2,
                            max_len: 0,
                        }],
                        ..Bucket::default()
                    },
                ],
                selection: None,
            }]))),
        ),
        (
            "group_features_reply",
            Message::MultipartReply(MultipartReply::new(B::GroupFeatures(GroupFeatures {
                types: 0xf,
                capabilities: 0x7,
                max_groups: [1000, 1000, 1000, 1000],
                actions: [0x3ffff01, 0, 0, 0],
            }))),
        ),
        (
            "meter_stats_reply",
            Message::MultipartReply(MultipartReply::new(B::Meter(vec![MeterStats {
                meter_id: 1,
                flow_count: 2,
                packet_in_count: 3,
                byte_in_count: 4,
                duration_sec: 5,
                duration_nsec: 6,
                band_stats: vec![MeterBandStats {
                    packet_band_count: 7,
                    byte_band_count: 8,
                }],
            }]))),
        ),
        (
            "meter_config_reply",
            Message::MultipartReply(MultipartReply::new(B::MeterConfig(vec![MeterConfig {
                flags: 1 | 4,
                meter_id: 1,
                bands: vec![
                    MeterBand::Drop {
                        rate: 1000,
                        burst_size: 100,
                    },
                    MeterBand::DscpRemark {
                        rate: 500,
                        burst_size: 50,
                        prec_level: 1,
                    },
                ],
            }]))),
        ),
        (
            "meter_features_reply",
            Message::MultipartReply(MultipartReply::new(B::MeterFeatures(MeterFeatures {
                max_meter: 1024,
                band_types: 0b110,
                capabilities: 0xf,
                max_bands: 4,
                max_color: 0,
            }))),
        ),
        (
            "table_features_reply",
            Message::MultipartReply(MultipartReply::new(B::TableFeatures(vec![tf]))),
        ),
        (
            "port_desc_reply",
            Message::MultipartReply(MultipartReply::new(B::PortDesc(vec![
                port(1, "p1"),
                port(2, "veth-b"),
            ]))),
        ),
        ("barrier_reply", Message::BarrierReply),
        (
            "queue_get_config_reply",
            Message::QueueGetConfigReply(QueueGetConfigReply {
                port: 1,
                queues: vec![PacketQueue {
                    queue_id: 1,
                    port: 1,
                    properties: vec![QueueProp::MinRate(100), QueueProp::MaxRate(500)],
                }],
            }),
        ),
        (
            "role_reply",
            Message::RoleReply(Role {
                role: ControllerRole::Master,
                generation_id: 42,
            }),
        ),
        (
            "get_async_reply",
            Message::GetAsyncReply(AsyncConfig {
                packet_in_mask: [3, 0],
                port_status_mask: [7, 7],
                flow_removed_mask: [15, 0],
            }),
        ),
        // Open vSwitch's NXT_PACKET_IN2: whole, with userdata and
        // registers; cut and buffered, without a cookie.
        (
            "nxt_packet_in2",
            PacketIn2::from_packet_in(
                &PacketIn {
                    buffer_id: ofp::port::NO_BUFFER,
                    total_len: 42,
                    reason: PacketInReason::Action,
                    table_id: 3,
                    cookie: 0x1122,
                    match_: m("in_port=3,reg0=5,metadata=0xab00"),
                    data: Bytes::from(vec![0xab; 42]),
                },
                Bytes::from_static(&[1, 2, 3]),
            )
            .message(),
        ),
        (
            "nxt_packet_in2_cut",
            PacketIn2::from_packet_in(
                &PacketIn {
                    buffer_id: 9,
                    total_len: 1500,
                    reason: PacketInReason::NoMatch,
                    table_id: 0,
                    cookie: u64::MAX,
                    match_: m("in_port=1"),
                    data: Bytes::from(vec![1; 128]),
                },
                Bytes::new(),
            )
            .message(),
        ),
    ]
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match mode.as_str() {
        "corpus" => {
            for (i, (name, msg)) in corpus().into_iter().enumerate() {
                let wire = msg.to_bytes(100 + i as u32);
                let line = json!({"name": name, "hex": hex(&wire), "xid": 100 + i, "summary": summary(&msg)});
                writeln!(out, "{line}").expect("stdout");
            }
        }
        "decode" => {
            for line in std::io::stdin().lock().lines() {
                let line = line.expect("stdin");
                let v: Value = serde_json::from_str(&line).expect("json line");
                let name = v["name"].as_str().unwrap_or("?").to_string();
                let raw = unhex(v["hex"].as_str().unwrap_or("")).unwrap_or_default();
                // A Nicira message is read as sluice reads it (NxtMsg) and
                // encoded again from what it read.
                let nicira = |msg: &Message| match msg {
                    Message::Experimenter(e) => NxtMsg::decode(e),
                    _ => None,
                };
                let res = match Message::decode(&Bytes::from(raw)) {
                    Ok((h, msg)) => match nicira(&msg) {
                        Some(Err(OfpError { code, detail })) => json!({"name": name, "ok": false,
                            "error": format!("as a Nicira message: {code}: {detail}")}),
                        n => {
                            let again = n.map_or_else(|| msg.clone(), |n| n.expect("ok").message());
                            json!({"name": name, "ok": true, "xid": h.xid,
                                "hex": hex(&again.to_bytes(h.xid)), "summary": summary(&msg)})
                        }
                    },
                    Err(OfpError { code, detail }) => json!({"name": name, "ok": false,
                        "error": format!("{code}: {detail}")}),
                };
                writeln!(out, "{res}").expect("stdout");
            }
        }
        "flows" => {
            for line in std::io::stdin().lock().lines() {
                let line = line.expect("stdin");
                writeln!(out, "{}", flows_line(&line)).expect("stdout");
            }
        }
        _ => {
            eprintln!("usage: ofp-interop corpus | decode | flows < messages.jsonl");
            std::process::exit(2);
        }
    }
}

/// One line of `flows`: os-ken's FLOW_MOD decoded and encoded again, the
/// text parsed and encoded, and whether the two agree.
fn flows_line(line: &str) -> Value {
    let v: Value = serde_json::from_str(line).expect("json line");
    let name = v["name"].as_str().unwrap_or("?").to_string();
    let raw = unhex(v["hex"].as_str().unwrap_or("")).unwrap_or_default();
    let mut out = Map::new();
    out.insert("name".into(), json!(name));
    let decoded = match Message::decode(&Bytes::from(raw)) {
        Ok((h, msg)) => {
            out.insert("ok".into(), json!(true));
            out.insert("hex".into(), json!(hex(&msg.to_bytes(h.xid))));
            match msg {
                Message::FlowMod(fm) => {
                    if let Err(e) = Message::FlowMod(fm.clone()).validate() {
                        out.insert("invalid".into(), json!(e.to_string()));
                    }
                    out.insert("printed".into(), json!(ofp::text::format_flow_mod(&fm)));
                    Some((h.xid, fm))
                }
                other => {
                    out.insert(
                        "error".into(),
                        json!(format!("not a FLOW_MOD: {:?}", other.msg_type())),
                    );
                    None
                }
            }
        }
        Err(OfpError { code, detail }) => {
            out.insert("ok".into(), json!(false));
            out.insert("error".into(), json!(format!("{code}: {detail}")));
            None
        }
    };
    match ofp::text::parse_flow_mod(v["flow"].as_str().unwrap_or("")) {
        Ok(fm) => {
            let xid = decoded.as_ref().map_or(1, |(x, _)| *x);
            out.insert("text_ok".into(), json!(true));
            out.insert(
                "text_hex".into(),
                json!(hex(&Message::FlowMod(fm.clone()).to_bytes(xid))),
            );
            out.insert(
                "text_printed".into(),
                json!(ofp::text::format_flow_mod(&fm)),
            );
            if let Some((_, d)) = &decoded {
                let set = |m: &Match| {
                    let mut v: Vec<String> = m.entries.iter().map(|e| format!("{e:?}")).collect();
                    v.sort();
                    v
                };
                out.insert(
                    "same_match".into(),
                    json!(set(&d.match_) == set(&fm.match_)),
                );
                out.insert(
                    "same_instructions".into(),
                    json!(d.instructions == fm.instructions),
                );
            }
        }
        Err(e) => {
            out.insert("text_ok".into(), json!(false));
            out.insert("text_error".into(), json!(e.to_string()));
        }
    }
    Value::Object(out)
}
