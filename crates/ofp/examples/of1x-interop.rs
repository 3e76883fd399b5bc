//! Helper for the OpenFlow 1.2/1.4/1.5 cross-checks with os-ken and
//! ovs-ofctl (`tests/interop/osken_of1x.py`), after `ofp-interop`.
//!
//! * `of1x-interop decode V` (V: 1.2, 1.4 or 1.5): reads JSON lines
//!   `{"name", "hex"}` (messages os-ken encoded in that version), decodes
//!   each with `Message::decode_as` and writes `{"name", "ok", "error"
//!   (the error's name), "hex" (our `encode_as` of what we read), "xid",
//!   "summary"}`.
//! * `of1x-interop corpus V`: writes `{"name", "hex", "xid", "summary"}`
//!   for every switch-to-controller message, encoded with `encode_as`.
//!
//! A summary names fields as os-ken's classes of that version do.

use std::io::{BufRead, Write};

use bytes::Bytes;
use serde_json::{json, Map, Value};

use ofp::action::Action;
use ofp::instruction::Instruction;
use ofp::msg::bundle::{BundleCtrl, BundleCtrlType, BundleMsg};
use ofp::msg::flow::{FlowRemoved, FlowRemovedReason, PacketIn, PacketInReason};
use ofp::msg::group::{Bucket, GroupType};
use ofp::msg::meter::MeterBand;
use ofp::msg::multipart::*;
use ofp::msg::simple::*;
use ofp::msg::Message;
use ofp::oxm::{Match, MatchEntry};
use ofp::port::{port_features, PortDesc};
use ofp::wire::FixedStr;
use ofp::{ErrorCode, Version};

#[path = "interop_common/mod.rs"]
mod common;
use common::{hex, m, mac, match_summary, unhex};

fn action_summary(a: &Action) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!(a.action_type().value()));
    match a {
        Action::Output { port, max_len } => {
            m.insert("port".into(), json!(port));
            m.insert("max_len".into(), json!(max_len));
        }
        Action::SetQueue(q) => drop(m.insert("queue_id".into(), json!(q))),
        Action::RegMove(r) => {
            if V15.load(std::sync::atomic::Ordering::Relaxed) {
                m.insert("type".into(), json!(28));
            }
            m.insert("n_bits".into(), json!(r.n_bits));
            m.insert("src_offset".into(), json!(r.src_ofs));
            m.insert("dst_offset".into(), json!(r.dst_ofs));
        }
        Action::Group(g) => drop(m.insert("group_id".into(), json!(g))),
        Action::PushVlan(e) | Action::PushMpls(e) | Action::PopMpls(e) => {
            m.insert("ethertype".into(), json!(e));
        }
        Action::SetField(MatchEntry::Basic(o)) => {
            m.insert("key".into(), json!(o.field.name()));
            m.insert("value".into(), json!(format!("{:#x}", o.value)));
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
        Instruction::Meter(m) => json!({"type": t, "meter_id": m}),
        _ => json!({"type": t}),
    }
}

/// Whether summaries describe OpenFlow 1.5 (set once by `main`).
static V15: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn instructions(v: &[Instruction]) -> Value {
    if !V15.load(std::sync::atomic::Ordering::Relaxed) {
        return Value::Array(v.iter().map(instruction_summary).collect());
    }
    // 1.5: the meter is the first apply action (see of1x::v15_actions).
    let meter = v.iter().find_map(|i| match i {
        Instruction::Meter(m) => Some(*m),
        _ => None,
    });
    let has_apply = v.iter().any(|i| matches!(i, Instruction::ApplyActions(_)));
    let meter_action = |m: u32| json!({"type": 29, "meter_id": m});
    Value::Array(
        v.iter()
            .filter_map(|i| match (i, meter) {
                (Instruction::Meter(m), _) => {
                    (!has_apply).then(|| json!({"type": 4, "actions": [meter_action(*m)]}))
                }
                (Instruction::ApplyActions(a), Some(m)) => {
                    let mut acts = vec![meter_action(m)];
                    if let Value::Array(rest) = actions(a) {
                        acts.extend(rest);
                    }
                    Some(json!({"type": 4, "actions": acts}))
                }
                _ => Some(instruction_summary(i)),
            })
            .collect(),
    )
}

fn bucket(v: Version, t: GroupType, i: usize, b: &Bucket) -> Value {
    if v == Version::V1_5 {
        // The properties Open vSwitch writes (and sluice after it).
        let mut props = Vec::new();
        if t == GroupType::Select || b.weight != 0 {
            props.push(json!({"type": 0, "weight": b.weight}));
        }
        if b.watch_port != ofp::port::port_no::ANY {
            props.push(json!({"type": 1, "watch": b.watch_port}));
        }
        if b.watch_group != ofp::port::group_no::ANY {
            props.push(json!({"type": 2, "watch": b.watch_group}));
        }
        let id = if b.bucket_id <= ofp::msg::group::BUCKET_MAX {
            b.bucket_id
        } else {
            i as u32
        };
        json!({"bucket_id": id, "actions": actions(&b.actions), "properties": props})
    } else {
        json!({"weight": b.weight, "watch_port": b.watch_port, "watch_group": b.watch_group,
            "actions": actions(&b.actions)})
    }
}

fn buckets(v: Version, t: GroupType, bs: &[Bucket]) -> Value {
    Value::Array(
        bs.iter()
            .enumerate()
            .map(|(i, b)| bucket(v, t, i, b))
            .collect(),
    )
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
        } => json!({"type": 2, "rate": rate, "burst_size": burst_size, "prec_level": prec_level}),
        _ => json!({}),
    }
}

fn port_desc(v: Version, p: &PortDesc) -> Value {
    let mut o = json!({"port_no": p.port_no, "hw_addr": mac(&p.hw_addr), "name": p.name.to_string(),
        "config": p.config, "state": p.state});
    let feats = json!({"curr": p.curr, "advertised": p.advertised, "supported": p.supported,
        "peer": p.peer, "curr_speed": p.curr_speed, "max_speed": p.max_speed});
    let (Value::Object(a), Value::Object(mut f)) = (&mut o, feats) else {
        unreachable!()
    };
    if v >= Version::V1_4 {
        f.insert("type".into(), json!(0));
        a.insert("properties".into(), json!([f]));
    } else {
        a.extend(f);
    }
    o
}

fn oxs(duration: Option<(u32, u32)>, counts: &[(&str, u64)]) -> Value {
    let mut f = Vec::new();
    if let Some((s, n)) = duration {
        f.push(json!(["duration", [s, n]]));
    }
    for (k, v) in counts {
        f.push(json!([k, v]));
    }
    json!({ "fields": f })
}

fn reply_body(v: Version, b: &MultipartReplyBody) -> Value {
    use MultipartReplyBody as B;
    let list = |x: Vec<Value>| Value::Array(x);
    match b {
        B::Desc(d) => json!({"mfr_desc": d.mfr_desc.to_string(), "hw_desc": d.hw_desc.to_string(),
            "sw_desc": d.sw_desc.to_string(), "serial_num": d.serial_num.to_string(), "dp_desc": d.dp_desc.to_string()}),
        B::Flow(fs) => list(fs.iter().map(|f| if v == Version::V1_5 {
            json!({"table_id": f.table_id, "priority": f.priority, "idle_timeout": f.idle_timeout,
                "hard_timeout": f.hard_timeout, "flags": f.flags, "importance": 0, "cookie": f.cookie,
                "match": match_summary(&f.match_),
                "stats": oxs(Some((f.duration_sec, f.duration_nsec)), &[("packet_count", f.packet_count), ("byte_count", f.byte_count)]),
                "instructions": instructions(&f.instructions)})
        } else {
            json!({"table_id": f.table_id, "duration_sec": f.duration_sec, "duration_nsec": f.duration_nsec,
                "priority": f.priority, "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout,
                "cookie": f.cookie, "packet_count": f.packet_count, "byte_count": f.byte_count,
                "match": match_summary(&f.match_), "instructions": instructions(&f.instructions)})
                .as_object().cloned().map(|mut o| {
                    if v != Version::V1_2 {
                        o.insert("flags".into(), json!(f.flags));
                    }
                    Value::Object(o)
                }).unwrap_or_default()
        }).collect()),
        B::Aggregate(a) => if v == Version::V1_5 {
            json!({"stats": oxs(None, &[("packet_count", a.packet_count), ("byte_count", a.byte_count), ("flow_count", u64::from(a.flow_count))])})
        } else {
            json!({"packet_count": a.packet_count, "byte_count": a.byte_count, "flow_count": a.flow_count})
        },
        B::Table(ts) => list(ts.iter().map(|t| {
            let mut o = json!({"table_id": t.table_id, "active_count": t.active_count,
                "lookup_count": t.lookup_count, "matched_count": t.matched_count});
            if v == Version::V1_2 {
                if let Value::Object(m) = &mut o {
                    m.insert("name".into(), json!(t.name.as_str()));
                    m.insert("config".into(), json!(0));
                    m.insert("max_entries".into(), json!(1_000_000));
                    m.insert("instructions".into(), json!(0x3e));
                    m.insert("metadata_match".into(), json!(u64::MAX));
                }
            }
            o
        }).collect()),
        B::PortStats(ps) => list(ps.iter().map(|p| {
            let mut o = json!({"port_no": p.port_no, "rx_packets": p.rx_packets,
                "tx_packets": p.tx_packets, "rx_bytes": p.rx_bytes, "tx_bytes": p.tx_bytes, "rx_dropped": p.rx_dropped,
                "tx_dropped": p.tx_dropped, "rx_errors": p.rx_errors, "tx_errors": p.tx_errors});
            let eth = json!({"rx_frame_err": p.rx_frame_err, "rx_over_err": p.rx_over_err,
                "rx_crc_err": p.rx_crc_err, "collisions": p.collisions});
            let Value::Object(m) = &mut o else { unreachable!() };
            if v >= Version::V1_4 {
                let Value::Object(mut e) = eth else { unreachable!() };
                e.insert("type".into(), json!(0));
                m.insert("properties".into(), json!([e]));
            } else if let Value::Object(e) = eth {
                m.extend(e);
            }
            if v != Version::V1_2 {
                m.insert("duration_sec".into(), json!(p.duration_sec));
                m.insert("duration_nsec".into(), json!(p.duration_nsec));
            }
            o
        }).collect()),
        B::Queue(qs) => list(qs.iter().map(|q| {
            let mut o = json!({"port_no": q.port_no, "queue_id": q.queue_id,
                "tx_bytes": q.tx_bytes, "tx_packets": q.tx_packets, "tx_errors": q.tx_errors});
            if v != Version::V1_2 {
                if let Value::Object(m) = &mut o {
                    m.insert("duration_sec".into(), json!(q.duration_sec));
                    m.insert("duration_nsec".into(), json!(q.duration_nsec));
                }
            }
            o
        }).collect()),
        B::Group(gs) => list(gs.iter().map(|g| {
            let counters = g.bucket_stats.iter().map(|b| json!({"packet_count": b.packet_count, "byte_count": b.byte_count})).collect::<Vec<_>>();
            let mut o = json!({"group_id": g.group_id, "ref_count": g.ref_count,
                "packet_count": g.packet_count, "byte_count": g.byte_count});
            if let Value::Object(m) = &mut o {
                let key = if v == Version::V1_2 { "bucket_counters" } else { "bucket_stats" };
                m.insert(key.into(), json!(counters));
            }
            if v != Version::V1_2 {
                if let Value::Object(m) = &mut o {
                    m.insert("duration_sec".into(), json!(g.duration_sec));
                    m.insert("duration_nsec".into(), json!(g.duration_nsec));
                }
            }
            o
        }).collect()),
        B::GroupDesc(gs) => list(gs.iter().map(|g| json!({"type": g.group_type.value(), "group_id": g.group_id,
            "buckets": buckets(v, g.group_type, &g.buckets)})).collect()),
        B::GroupFeatures(g) => json!({"types": g.types, "capabilities": g.capabilities, "max_groups": g.max_groups,
            "actions": g.actions}),
        B::Meter(ms) => list(ms.iter().map(|m| json!({"meter_id": m.meter_id,
            (if v == Version::V1_5 { "ref_count" } else { "flow_count" }): m.flow_count,
            "packet_in_count": m.packet_in_count, "byte_in_count": m.byte_in_count, "duration_sec": m.duration_sec,
            "duration_nsec": m.duration_nsec})).collect()),
        B::MeterConfig(ms) => list(ms.iter().map(|m| json!({"flags": m.flags, "meter_id": m.meter_id,
            "bands": m.bands.iter().map(band).collect::<Vec<_>>()})).collect()),
        B::MeterFeatures(m) => json!({"max_meter": m.max_meter, "band_types": m.band_types,
            "capabilities": m.capabilities, "max_bands": m.max_bands, "max_color": m.max_color}),
        B::PortDesc(ps) => list(ps.iter().map(|p| port_desc(v, p)).collect()),
        B::TableFeatures(_) => json!([]),
        B::Experimenter(e) => json!({"experimenter": e.experimenter, "exp_type": e.exp_type}),
    }
}

/// A summary of `m` as os-ken's classes of version `v` name the fields.
fn summary(v: Version, m: &Message) -> Value {
    use Message as M;
    match m {
        M::Error(e) => {
            let (t, c) = match v {
                Version::V1_2 => ofp_error_12(e.code),
                _ => ofp_error_14(e.code),
            };
            json!({"type": t, "code": c, "data": hex(&e.data)})
        }
        M::EchoRequest(d) | M::EchoReply(d) => json!({"data": hex(d)}),
        M::Experimenter(e) => match BundleMsg::decode(e) {
            Some(Ok(BundleMsg::Control(c))) if v >= Version::V1_4 => {
                json!({"bundle_id": c.bundle_id, "type": c.ctrl_type.value(), "flags": c.flags})
            }
            Some(Ok(BundleMsg::Add(a))) if v >= Version::V1_4 => {
                json!({"bundle_id": a.bundle_id, "flags": a.flags})
            }
            _ => {
                json!({"experimenter": e.experimenter, "exp_type": e.exp_type, "data": hex(&e.data)})
            }
        },
        M::Hello(_)
        | M::FeaturesRequest
        | M::GetConfigRequest
        | M::BarrierRequest
        | M::BarrierReply
        | M::GetAsyncRequest => json!({}),
        M::FeaturesReply(f) => {
            let mut o = json!({"datapath_id": f.datapath_id, "n_buffers": f.n_buffers, "n_tables": f.n_tables,
                "capabilities": f.capabilities});
            if v == Version::V1_2 {
                let ports: Map<String, Value> = f
                    .ports
                    .iter()
                    .map(|p| (p.port_no.to_string(), port_desc(v, p)))
                    .collect();
                if let Value::Object(m) = &mut o {
                    m.insert("ports".into(), Value::Object(ports));
                }
            }
            o
        }
        M::GetConfigReply(c) | M::SetConfig(c) => {
            json!({"flags": c.flags, "miss_send_len": c.miss_send_len})
        }
        M::PacketIn(p) => {
            let mut o = json!({"buffer_id": p.buffer_id, "total_len": p.total_len, "reason": p.reason.value(),
                "table_id": p.table_id, "match": match_summary(&p.match_), "data": hex(&p.data)});
            if v != Version::V1_2 {
                if let Value::Object(m) = &mut o {
                    m.insert("cookie".into(), json!(p.cookie));
                }
            }
            o
        }
        M::FlowRemoved(f) => {
            if v == Version::V1_5 {
                json!({"cookie": f.cookie, "priority": f.priority, "reason": f.reason.value(),
                "table_id": f.table_id, "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout,
                "match": match_summary(&f.match_),
                "stats": oxs(Some((f.duration_sec, f.duration_nsec)), &[("packet_count", f.packet_count), ("byte_count", f.byte_count)])})
            } else {
                json!({"cookie": f.cookie, "priority": f.priority, "reason": f.reason.value(),
                "table_id": f.table_id, "duration_sec": f.duration_sec, "duration_nsec": f.duration_nsec,
                "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout, "packet_count": f.packet_count,
                "byte_count": f.byte_count, "match": match_summary(&f.match_)})
            }
        }
        M::PortStatus(p) => json!({"reason": p.reason.value(), "desc": port_desc(v, &p.desc)}),
        M::PacketOut(p) => {
            if v == Version::V1_5 {
                json!({"buffer_id": p.buffer_id, "match": [["in_port", format!("{:#x}", p.in_port), null]],
                    "actions": actions(&p.actions), "data": hex(&p.data)})
            } else {
                json!({"buffer_id": p.buffer_id, "in_port": p.in_port, "actions": actions(&p.actions),
                    "data": hex(&p.data)})
            }
        }
        M::FlowMod(f) => {
            json!({"cookie": f.cookie, "cookie_mask": f.cookie_mask, "table_id": f.table_id,
            "command": f.command.value(), "idle_timeout": f.idle_timeout, "hard_timeout": f.hard_timeout,
            "priority": f.priority, "buffer_id": f.buffer_id, "out_port": f.out_port, "out_group": f.out_group,
            "flags": f.flags, "match": match_summary(&f.match_), "instructions": instructions(&f.instructions)})
        }
        M::GroupMod(g) => {
            let mut o = json!({"command": g.command.value(), "type": g.group_type.value(), "group_id": g.group_id,
            "buckets": buckets(v, g.group_type, &g.buckets)});
            if let (Value::Object(m), Version::V1_5) = (&mut o, v) {
                m.insert("command_bucket_id".into(), json!(g.command_bucket_id));
            }
            o
        }
        M::PortMod(p) => {
            let mut o = json!({"port_no": p.port_no, "hw_addr": mac(&p.hw_addr), "config": p.config, "mask": p.mask});
            if let Value::Object(m) = &mut o {
                if v >= Version::V1_4 {
                    m.insert(
                        "properties".into(),
                        json!([{"type": 0, "advertise": p.advertise}]),
                    );
                } else {
                    m.insert("advertise".into(), json!(p.advertise));
                }
            }
            o
        }
        M::TableMod(t) => json!({"table_id": t.table_id, "config": t.config}),
        M::MultipartRequest(r) => {
            use MultipartRequestBody as B;
            let mut o = json!({"type": r.mp_type().value(), "flags": r.flags});
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
                _ => json!({}),
            };
            if let (Value::Object(a), Value::Object(b)) = (&mut o, extra) {
                a.extend(b);
            }
            o
        }
        M::MultipartReply(r) => {
            json!({"type": r.mp_type().value(), "flags": r.flags, "body": reply_body(v, &r.body)})
        }
        M::QueueGetConfigRequest { port } => json!({"port": port}),
        M::QueueGetConfigReply(q) => {
            json!({"port": q.port, "queues": q.queues.iter().map(|q| json!({
            "queue_id": q.queue_id, "port": q.port})).collect::<Vec<_>>()})
        }
        M::RoleRequest(r) | M::RoleReply(r) => {
            json!({"role": r.role.value(), "generation_id": r.generation_id})
        }
        M::GetAsyncReply(a) | M::SetAsync(a) => json!({"properties": [
            {"type": 0, "mask": a.packet_in_mask[1]}, {"type": 1, "mask": a.packet_in_mask[0]},
            {"type": 2, "mask": a.port_status_mask[1]}, {"type": 3, "mask": a.port_status_mask[0]},
            {"type": 4, "mask": a.flow_removed_mask[1]}, {"type": 5, "mask": a.flow_removed_mask[0]}]}),
        M::MeterMod(m) => {
            json!({"command": m.command.value(), "flags": m.flags, "meter_id": m.meter_id,
            "bands": m.bands.iter().map(band).collect::<Vec<_>>()})
        }
    }
}

/// The (type, code) a 1.4/1.5 peer reads (see `of1x::v14`).
fn ofp_error_14(c: ErrorCode) -> (u16, u16) {
    let mut v = Vec::new();
    let m = Message::Error(ErrorMsg {
        code: c,
        data: Bytes::new(),
    });
    m.encode_as(Version::V1_4, 0, &mut v).expect("fits");
    (
        u16::from_be_bytes([v[8], v[9]]),
        u16::from_be_bytes([v[10], v[11]]),
    )
}

fn ofp_error_12(c: ErrorCode) -> (u16, u16) {
    let mut v = Vec::new();
    let m = Message::Error(ErrorMsg {
        code: c,
        data: Bytes::new(),
    });
    m.encode_as(Version::V1_2, 0, &mut v).expect("fits");
    (
        u16::from_be_bytes([v[8], v[9]]),
        u16::from_be_bytes([v[10], v[11]]),
    )
}

/// `common::port`, advertising 1 Gb/s full duplex.
fn port(n: u32, name: &str) -> PortDesc {
    PortDesc {
        advertised: port_features::F_1GB_FD,
        ..common::port(n, name)
    }
}

/// Every switch-to-controller message `v` has, as the agent fills them.
fn corpus(v: Version) -> Vec<(String, Message)> {
    use MultipartReplyBody as B;
    let mut out: Vec<(String, Message)> = Vec::new();
    let mut add = |n: &str, msg: Message| out.push((n.to_string(), msg));
    let full = m("in_port=1,dl_dst=02:00:00:00:00:02,dl_src=02:00:00:00:00:01,tcp,nw_src=10.0.0.0/8,nw_dst=10.1.2.3,tp_dst=80");
    let insts = ofp::text::parse_instructions(match v {
        Version::V1_2 => "set_field:02:00:00:00:00:03->eth_dst,output:2,group:3,write_metadata:0x1/0xff,goto_table:2",
        _ => "meter:1,set_field:02:00:00:00:00:03->eth_dst,output:2,group:3,write_metadata:0x1/0xff,goto_table:2",
    })
    .expect("instructions");
    let reply = |body| Message::MultipartReply(MultipartReply::new(body));
    add(
        "error",
        Message::Error(ErrorMsg {
            code: ErrorCode::BadMatch(ofp::error::BadMatchCode::BadPrereq),
            data: Bytes::from_static(&[4, 14, 0, 8, 0, 0, 0, 1]),
        }),
    );
    add("echo_reply", Message::EchoReply(Bytes::from_static(b"yes")));
    add(
        "features_reply",
        Message::FeaturesReply(FeaturesReply {
            datapath_id: 0x1234,
            n_buffers: 0,
            n_tables: 254,
            auxiliary_id: 0,
            capabilities: 0x4f,
            reserved: 0,
            ports: if v == Version::V1_2 {
                vec![port(1, "eth1"), port(2, "eth2")]
            } else {
                Vec::new()
            },
        }),
    );
    add(
        "get_config_reply",
        Message::GetConfigReply(SwitchConfig {
            flags: 0,
            miss_send_len: 128,
        }),
    );
    add(
        "packet_in",
        Message::PacketIn(PacketIn {
            buffer_id: 0xffff_ffff,
            total_len: 6,
            reason: PacketInReason::Action,
            table_id: 3,
            cookie: 0xfeed,
            match_: m("in_port=7"),
            data: Bytes::from_static(&[1, 2, 3, 4, 5, 6]),
        }),
    );
    add(
        "flow_removed",
        Message::FlowRemoved(FlowRemoved {
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
            match_: full.clone(),
        }),
    );
    add(
        "port_status",
        Message::PortStatus(PortStatus {
            reason: PortReason::Modify,
            desc: port(3, "eth3"),
        }),
    );
    add("barrier_reply", Message::BarrierReply);
    add(
        "role_reply",
        Message::RoleReply(Role {
            role: ControllerRole::Master,
            generation_id: 9,
        }),
    );
    add(
        "desc_reply",
        reply(B::Desc(Box::new(Desc {
            mfr_desc: FixedStr::new("sluice"),
            hw_desc: FixedStr::new("hw"),
            sw_desc: FixedStr::new("sw"),
            serial_num: FixedStr::new("1"),
            dp_desc: FixedStr::new("br0"),
        }))),
    );
    add(
        "flow_stats_reply",
        reply(B::Flow(vec![FlowStats {
            idle_age: None,
            hard_age: None,
            table_id: 1,
            duration_sec: 10,
            duration_nsec: 500,
            priority: 100,
            idle_timeout: 30,
            hard_timeout: 60,
            flags: if v == Version::V1_2 { 0 } else { 1 },
            cookie: 0xabcd,
            packet_count: 12,
            byte_count: 3400,
            match_: full.clone(),
            instructions: insts,
        }])),
    );
    add(
        "aggregate_reply",
        reply(B::Aggregate(AggregateStats {
            packet_count: 5,
            byte_count: 500,
            flow_count: 2,
        })),
    );
    add(
        "table_stats_reply",
        reply(B::Table(vec![TableStats {
            table_id: 0,
            name: ofp::wire::FixedStr::new("table0"),
            active_count: 4,
            lookup_count: 100,
            matched_count: 90,
        }])),
    );
    add(
        "port_stats_reply",
        reply(B::PortStats(vec![PortStats {
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
        }])),
    );
    add(
        "queue_stats_reply",
        reply(B::Queue(vec![QueueStats {
            port_no: 1,
            queue_id: 2,
            tx_bytes: 3,
            tx_packets: 4,
            tx_errors: 5,
            duration_sec: 6,
            duration_nsec: 7,
        }])),
    );
    add(
        "group_stats_reply",
        reply(B::Group(vec![GroupStats {
            group_id: 1,
            ref_count: 2,
            packet_count: 3,
            byte_count: 4,
            duration_sec: 5,
            duration_nsec: 6,
            bucket_stats: vec![BucketCounter {
                packet_count: 7,
                byte_count: 8,
            }],
        }])),
    );
    add(
        "group_desc_reply",
        reply(B::GroupDesc(vec![GroupDesc {
            group_type: GroupType::Select,
            group_id: 5,
            buckets: vec![
                Bucket {
                    weight: 3,
                    actions: vec![Action::Output {
                        port: 1,
                        max_len: 0,
                    }],
                    ..Bucket::default()
                },
                Bucket {
                    weight: 1,
                    actions: vec![Action::Output {
                        port: 2,
                        max_len: 0,
                    }],
                    ..Bucket::default()
                },
            ]
            .into_iter()
            .take(if v == Version::V1_5 { 1 } else { 2 })
            .collect(),
            selection: None,
        }])),
    );
    add(
        "group_features_reply",
        reply(B::GroupFeatures(GroupFeatures {
            types: 0xf,
            capabilities: 0x7,
            max_groups: [1, 2, 3, 4],
            actions: [1, 1, 1, 1],
        })),
    );
    if v == Version::V1_2 {
        add(
            "queue_get_config_reply",
            Message::QueueGetConfigReply(QueueGetConfigReply {
                port: 1,
                queues: vec![PacketQueue {
                    queue_id: 7,
                    port: 1,
                    properties: vec![QueueProp::MinRate(100)],
                }],
            }),
        );
    }
    if v == Version::V1_5 {
        add(
            "flow_removed_tcp_flags",
            Message::FlowRemoved(FlowRemoved {
                cookie: 1,
                priority: 100,
                reason: FlowRemovedReason::Delete,
                table_id: 0,
                duration_sec: 61,
                duration_nsec: 5,
                idle_timeout: 0,
                hard_timeout: 0,
                packet_count: 7,
                byte_count: 700,
                match_: m("tcp,tcp_flags=+syn-ack"),
            }),
        );
        let copy =
            ofp::text::parse_instructions("move:NXM_NX_REG0[0..15]->NXM_NX_REG1[8..23],output:2")
                .expect("instructions");
        add(
            "flow_stats_reply_copy_field",
            reply(B::Flow(vec![FlowStats {
                idle_age: None,
                hard_age: None,
                table_id: 1,
                duration_sec: 1,
                duration_nsec: 0,
                priority: 7,
                idle_timeout: 0,
                hard_timeout: 0,
                flags: 0,
                cookie: 0,
                packet_count: 0,
                byte_count: 0,
                match_: Match::new(),
                instructions: copy,
            }])),
        );
        add(
            "group_desc_reply_2b",
            reply(B::GroupDesc(vec![GroupDesc {
                group_type: GroupType::Select,
                group_id: 5,
                buckets: vec![
                    Bucket {
                        weight: 3,
                        actions: vec![Action::Output {
                            port: 1,
                            max_len: 0,
                        }],
                        ..Bucket::default()
                    },
                    Bucket {
                        weight: 1,
                        actions: vec![Action::Output {
                            port: 2,
                            max_len: 0,
                        }],
                        ..Bucket::default()
                    },
                ],
                selection: None,
            }])),
        );
    }
    if v >= Version::V1_4 {
        add(
            "port_desc_reply",
            reply(B::PortDesc(vec![port(1, "eth1"), port(2, "eth2")])),
        );
        add(
            "meter_stats_reply",
            reply(B::Meter(vec![MeterStats {
                meter_id: 1,
                flow_count: 2,
                packet_in_count: 3,
                byte_in_count: 4,
                duration_sec: 5,
                duration_nsec: 6,
                band_stats: vec![MeterBandStats {
                    packet_band_count: 1,
                    byte_band_count: 2,
                }],
            }])),
        );
        add(
            "meter_config_reply",
            reply(B::MeterConfig(vec![MeterConfig {
                flags: 1,
                meter_id: 1,
                bands: vec![MeterBand::Drop {
                    rate: 1000,
                    burst_size: 10,
                }],
            }])),
        );
        add(
            "meter_features_reply",
            reply(B::MeterFeatures(MeterFeatures {
                max_meter: 100,
                band_types: 6,
                capabilities: 0xf,
                max_bands: 2,
                max_color: 8,
            })),
        );
        add(
            "get_async_reply",
            Message::GetAsyncReply(AsyncConfig {
                packet_in_mask: [7, 1],
                port_status_mask: [7, 7],
                flow_removed_mask: [15, 0],
            }),
        );
        add(
            "bundle_ctrl_reply",
            BundleCtrl {
                bundle_id: 7,
                ctrl_type: BundleCtrlType::CommitReply,
                flags: 3,
                properties: Bytes::new(),
            }
            .message(),
        );
        add(
            "bundle_error",
            Message::Error(ErrorMsg {
                code: ErrorCode::bundle(ofp::error::BundleFailedCode::BadId),
                data: Bytes::from_static(&[5, 33, 0, 8, 0, 0, 0, 1]),
            }),
        );
    }
    out
}

fn version(s: &str) -> Version {
    match s {
        "1.2" => Version::V1_2,
        "1.4" => Version::V1_4,
        "1.5" => Version::V1_5,
        _ => panic!("version must be 1.2, 1.4 or 1.5"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(mode), Some(v)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: of1x-interop decode|corpus 1.2|1.4|1.5");
        std::process::exit(2);
    };
    let v = version(v);
    V15.store(v == Version::V1_5, std::sync::atomic::Ordering::Relaxed);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match mode.as_str() {
        "decode" => {
            for line in std::io::stdin().lock().lines() {
                let line = line.expect("stdin");
                if line.trim().is_empty() {
                    continue;
                }
                let req: Value = serde_json::from_str(&line).expect("json line");
                let name = req["name"].as_str().unwrap_or("").to_string();
                let bytes = Bytes::from(unhex(req["hex"].as_str().unwrap_or("")).expect("hex"));
                let res = match Message::decode_as(&bytes, v) {
                    Ok((h, msg)) => {
                        let mut enc = Vec::new();
                        let e = msg.encode_as(v, h.xid, &mut enc);
                        json!({"name": name, "ok": true, "error": e.err().map(|e| e.to_string()),
                            "hex": hex(&enc), "xid": h.xid, "summary": summary(v, &msg)})
                    }
                    Err(e) => json!({"name": name, "ok": false, "error": e.code.to_string()}),
                };
                writeln!(out, "{res}").expect("stdout");
            }
        }
        "corpus" => {
            for (i, (name, msg)) in corpus(v).into_iter().enumerate() {
                let xid = 2000 + i as u32;
                let mut enc = Vec::new();
                msg.encode_as(v, xid, &mut enc)
                    .expect("corpus message fits");
                let res = json!({"name": name, "hex": hex(&enc), "xid": xid, "summary": summary(v, &msg)});
                writeln!(out, "{res}").expect("stdout");
            }
        }
        _ => {
            eprintln!("unknown mode {mode}");
            std::process::exit(2);
        }
    }
}
