//! OpenFlow 1.5 (wire version 6) onto the 1.3-shaped message: what 1.5
//! changed again after 1.4 (everything else is [`super::v14`]'s).
//!
//! Contract and where it follows Open vSwitch (include/openflow/
//! openflow-1.5.h, lib/ofp-packet.c, lib/ofp-flow.c, lib/ofp-monitor.c,
//! lib/ofp-group.c, lib/ox-stat.c):
//!
//! * PACKET_OUT (`ofp15_packet_out`: buffer_id, actions_len, a match,
//!   the actions, the data): the match carries `in_port`. Read: a match
//!   without an exact `in_port` is `OFPBRC_BAD_PORT` (Open vSwitch's
//!   answer); any other field in it is `OFPBMC_BAD_FIELD` — Open vSwitch
//!   takes pipeline metadata there, the internal `PacketOut` holds only
//!   the port. Written: a match of `in_port` alone.
//! * FLOW_REMOVED (`ofp15_flow_removed`, the match, then OXS statistics):
//!   written with duration, packet and byte counts, in Open vSwitch's
//!   order (`oxs_put_stats`); read in any order, absent counts all-ones
//!   ("not available"), absent duration 0, fields of other classes or
//!   unknown fields skipped.
//! * Flow statistics: Open vSwitch answers OFPMP_FLOW_DESC (1) with
//!   `ofp15_flow_desc` entries (fixed part with `importance` — written 0,
//!   see `v14` — the match, OXS duration/packet/byte, the instructions);
//!   so does sluice. OFPMP_AGGREGATE_STATS replies carry OXS packet, byte
//!   and flow counts. OFPMP_FLOW_STATS (17), CONTROLLER_STATUS (18) and
//!   BUNDLE_FEATURES (19) are `OFPBRC_BAD_STAT`: Open vSwitch serves none
//!   of them either.
//! * GROUP_MOD and the GROUP_DESC reply: see `v15_groups` (bucket ids,
//!   INSERT_BUCKET and REMOVE_BUCKET, the selection method property).
//! * METER_FEATURES replies are 1.5's 24-byte `ofp_meter_features` (the
//!   1.3 fields, then `features`, written 0: sluice meters only as a
//!   flow's first step, no OFPMFF_* capability), as the 1.5 spec and
//!   os-ken lay it out; Open vSwitch writes the 16-byte 1.3 form there.
//! * `ofp_role_request`'s 1.5 `short_id` sits where 1.3 has padding:
//!   read and dropped, written 0 (Open vSwitch does not use it either).
//! * Matches in FLOW_REMOVED and flow descriptions write `tcp_flags` as
//!   1.5's basic OXM_OF_TCP_FLAGS (42), as Open vSwitch writes it to 1.5
//!   peers; `oxm/entry.rs` reads both that and 1.3's ONF form in every version
//!   (Open vSwitch too). 1.4's PBB_UCA (41) and 1.5's ACTSET_OUTPUT (43)
//!   and PACKET_TYPE (44) have no internal field: `OFPBMC_BAD_FIELD`.
//!   Other messages' matches (PACKET_IN, FLOW_MOD, statistics requests)
//!   keep the 1.3 writer.
//! * TABLE_FEATURES: 1.5 puts `command` and `features` where 1.3 has
//!   padding; they are read as padding (every request is a query or a
//!   whole replacement, 1.3's meaning, i.e. OFPTFC_REPLACE) and written 0
//!   (OFPTFC_REPLACE, no OFPTFF_* feature). MODIFY/ENABLE/DISABLE are
//!   left out.
//! * Errors: as 1.4 (`v14`). 1.5's table-features codes that sluice's
//!   agent sends as `NXBRC_UNENCODABLE_ERROR` stay so (the internal code
//!   no longer says which).
//! * GROUP_DESC and PORT_DESC requests carry a group id / port number in
//!   1.5; the internal requests select everything, so only `OFPG_ALL` /
//!   `OFPP_ANY` are read, another id is `OFPBRC_BAD_STAT`.
//! * The COPY_FIELD (28) and METER (29) actions in FLOW_MOD, PACKET_OUT,
//!   buckets and flow descriptions: see `v15_actions` (COPY_FIELD is the
//!   internal `RegMove`; METER first in apply-actions is the internal
//!   meter instruction). Packet registers (OXM class 0x8001) need
//!   nothing: the field table (`oxm/fields.rs`) knows them as `xreg0`-`xreg7`.

use bytes::{BufMut, Bytes};

use super::{bad_multipart, entries, v14, v15_actions, ReplyBody};
use crate::action::{decode_actions, encode_actions, Action};
use crate::error::{BadMatchCode, BadRequestCode, ErrorCode, OfpError, Result};
use crate::header::{Header, MsgType};
use crate::instruction::{decode_instructions, encode_instructions, Instruction};
use crate::msg::flow::{FlowMod, FlowRemoved, FlowRemovedReason, PacketOut};
use crate::msg::multipart::{
    AggregateStats, FlowStats, MeterFeatures, MultipartReply, MultipartReplyBody, MultipartRequest,
    MultipartRequestBody, MultipartType,
};
use crate::msg::Message;
use crate::oxm::{Match, MatchEntry, Oxm, OxmField};
use crate::port::{group_no, port_no};
use crate::wire::{len_placeholder, pad8, patch_len, zeros, Reader};
use crate::Version;

use super::v15_groups::decode_group_mod;
pub use super::v15_groups::{decode_buckets, decode_group_desc, encode_buckets, encode_group_desc};
pub use crate::msg::group::{BUCKET_ALL, BUCKET_MAX};
/// `OFPXSC_OPENFLOW_BASIC`: the OXS class.
pub const OXS_CLASS: u16 = 0x8002;

/// The body of a 1.5 message after its header.
pub(crate) fn decode_body(h: &Header, r: &mut Reader<'_>) -> Result<Message> {
    Ok(match h.msg_type {
        MsgType::PacketOut => Message::PacketOut(decode_packet_out(r)?),
        MsgType::FlowMod => Message::FlowMod(decode_flow_mod(r)?),
        MsgType::FlowRemoved => Message::FlowRemoved(decode_flow_removed(r)?),
        MsgType::GroupMod => Message::GroupMod(decode_group_mod(r)?),
        MsgType::MultipartRequest => match r.peek_u16(0)? {
            7 | 13 => {
                let ty = r.u16()?;
                let flags = r.u16()?;
                r.skip(4)?;
                let id = r.u32()?;
                r.skip(4)?;
                let body = if ty == 7 && id == group_no::ALL {
                    MultipartRequestBody::GroupDesc
                } else if ty == 13 && id == port_no::ANY {
                    MultipartRequestBody::PortDesc
                } else {
                    return Err(bad_multipart("description of one group/port not served"));
                };
                Message::MultipartRequest(MultipartRequest { flags, body })
            }
            17..=19 => {
                return Err(bad_multipart(
                    "FLOW_STATS/CONTROLLER_STATUS/BUNDLE_FEATURES not served",
                ))
            }
            _ => v14::decode_body(h, r, Version::V1_5)?,
        },
        MsgType::MultipartReply => {
            let ty = MultipartType::from(r.peek_u16(0)?);
            let body = match ty {
                MultipartType::Flow
                | MultipartType::Aggregate
                | MultipartType::GroupDesc
                | MultipartType::MeterFeatures => ty,
                _ => return v14::decode_body(h, r, Version::V1_5),
            };
            r.skip(2)?;
            let flags = r.u16()?;
            r.skip(4)?;
            let body = match body {
                MultipartType::Flow => {
                    MultipartReplyBody::Flow(v14::decode_all(r, decode_flow_desc)?)
                }
                MultipartType::Aggregate => {
                    let o = decode_oxs(r)?;
                    MultipartReplyBody::Aggregate(AggregateStats {
                        packet_count: o.packet.unwrap_or(u64::MAX),
                        byte_count: o.byte.unwrap_or(u64::MAX),
                        flow_count: o.flow_count.unwrap_or(u32::MAX),
                    })
                }
                // Open vSwitch's 16 bytes (1.3's layout), or the spec's 24
                // (a `features` word and padding after them).
                MultipartType::MeterFeatures => {
                    let mut b = r.sub(16, ErrorCode::BAD_LEN)?;
                    let m = MeterFeatures::decode(&mut b)?;
                    if !r.is_empty() {
                        r.skip(8)?;
                    }
                    MultipartReplyBody::MeterFeatures(m)
                }
                _ => MultipartReplyBody::GroupDesc(v14::decode_all(r, decode_group_desc)?),
            };
            Message::MultipartReply(MultipartReply { flags, body })
        }
        _ => v14::decode_body(h, r, Version::V1_5)?,
    })
}

/// Writes the body of `msg` if 1.5 lays it out differently from 1.4,
/// returning its type; None: the 1.3 codec writes it.
pub(crate) fn encode_body(msg: &Message, xid: u32, out: &mut Vec<u8>) -> Option<u8> {
    Some(match msg {
        Message::PacketOut(p) => {
            encode_packet_out(p, out);
            MsgType::PacketOut.value()
        }
        Message::FlowMod(f) => {
            let mut tmp = Vec::new();
            f.encode(&mut tmp);
            // The fixed part (40 bytes), then the match padded to 8.
            let at = (40 + pad8(u16::from_be_bytes([tmp[42], tmp[43]]) as usize)).min(tmp.len());
            out.extend_from_slice(&tmp[..at]);
            v15_actions::instructions_out(&tmp[at..], out);
            MsgType::FlowMod.value()
        }
        Message::FlowRemoved(f) => {
            encode_flow_removed(f, out);
            MsgType::FlowRemoved.value()
        }
        Message::GroupMod(g) => {
            super::v15_groups::encode_group_mod(g, out);
            MsgType::GroupMod.value()
        }
        Message::MultipartRequest(m)
            if matches!(
                m.body,
                MultipartRequestBody::GroupDesc | MultipartRequestBody::PortDesc
            ) =>
        {
            let (ty, id) = if m.body == MultipartRequestBody::GroupDesc {
                (7, group_no::ALL)
            } else {
                (13, port_no::ANY)
            };
            out.put_u16(ty);
            out.put_u16(m.flags);
            zeros(out, 4);
            out.put_u32(id);
            zeros(out, 4);
            MsgType::MultipartRequest.value()
        }
        _ => return v14::encode_body(msg, Version::V1_5, xid, out),
    })
}

/// A reply body as 1.5 writes it.
pub(crate) fn reply_body(body: &MultipartReplyBody) -> ReplyBody {
    use MultipartReplyBody as B;
    match body {
        B::Flow(v) => entries(v, encode_flow_desc),
        B::GroupDesc(v) => entries(v, encode_group_desc),
        B::Aggregate(a) => {
            let mut b = Vec::new();
            encode_oxs(
                &Oxs {
                    duration: None,
                    idle_time: None,
                    packet: Some(a.packet_count),
                    byte: Some(a.byte_count),
                    flow_count: Some(a.flow_count),
                },
                &mut b,
            );
            ReplyBody::One(b)
        }
        other => v14::reply_body(other),
    }
}

/// `ofp_match` as 1.5 writes it: `tcp_flags` as the basic
/// OXM_OF_TCP_FLAGS (42) rather than 1.3's ONF experimenter form.
pub fn encode_match(m: &Match, out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u16(crate::oxm::OFPMT_OXM);
    let at = len_placeholder(out);
    for e in &m.entries {
        match e {
            MatchEntry::Basic(o) if o.field == OxmField::TcpFlags => {
                let has_mask = o.mask.is_some();
                let len = if has_mask { 4 } else { 2 };
                out.put_u32(0x8000_0000 | 42 << 9 | u32::from(has_mask) << 8 | len);
                out.put_u16(o.value as u16);
                if let Some(mask) = o.mask {
                    out.put_u16(mask as u16);
                }
            }
            other => other.encode(out),
        }
    }
    patch_len(out, at, start);
    let n = out.len() - start;
    zeros(out, pad8(n) - n);
}

/// An action list of 1.5 read (COPY_FIELD and METER: `v15_actions`).
pub(super) fn decode_actions15(raw: &[u8]) -> Result<Vec<Action>> {
    let mut v = Vec::with_capacity(raw.len());
    v15_actions::actions_in(raw, &mut v)?;
    let b = Bytes::from(v);
    decode_actions(&mut Reader::new(&b, ErrorCode::ACTION_BAD_LEN))
}

pub(super) fn encode_actions15(actions: &[Action], out: &mut Vec<u8>) {
    let mut tmp = Vec::new();
    encode_actions(actions, &mut tmp);
    v15_actions::actions_out(&tmp, out);
}

fn decode_instructions15(raw: &[u8]) -> Result<Vec<Instruction>> {
    let mut v = Vec::with_capacity(raw.len());
    v15_actions::instructions_in(raw, &mut v)?;
    let b = Bytes::from(v);
    decode_instructions(&mut Reader::new(&b, ErrorCode::BAD_LEN))
}

/// FLOW_MOD: 1.4's layout, the instructions through `v15_actions`.
///
/// Most flow-mods hold nothing of 1.5's own (no COPY_FIELD or METER
/// action, which the 1.3 codec refuses as unknown types, no meter
/// instruction, which 1.5 refuses, and no masked SET_FIELD, which 1.5
/// reads as loads): those are read by the 1.3 codec as
/// they lie, without the copy the translation makes (a million flow-mods
/// in 1.5 cost that copy a million times). The rest, and anything the
/// 1.3 codec refuses, go through the translation, which gives the same
/// result or 1.5's error.
fn decode_flow_mod(r: &mut Reader<'_>) -> Result<FlowMod> {
    let mut direct = r.clone();
    if let Ok(f) = FlowMod::decode(&mut direct) {
        if direct.is_empty() && v15_actions::read_as_they_lie(&f.instructions) {
            *r = direct;
            return Ok(f);
        }
    }
    let body = r.rest();
    let at = match body.get(42..44) {
        Some(l) => 40 + pad8(u16::from_be_bytes([l[0], l[1]]) as usize),
        None => body.len(),
    }
    .min(body.len());
    let mut v = body[..at].to_vec();
    v15_actions::instructions_in(&body[at..], &mut v)?;
    let b = Bytes::from(v);
    let mut rr = Reader::new(&b, ErrorCode::BAD_LEN);
    let f = FlowMod::decode(&mut rr)?;
    rr.finish(ErrorCode::BAD_LEN)?;
    Ok(f)
}

/// The OXS statistics sluice reads and writes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Oxs {
    pub duration: Option<(u32, u32)>,
    /// OXS `idle_time`: whole seconds (Open vSwitch writes the seconds
    /// only, the nanoseconds 0).
    pub idle_time: Option<u32>,
    pub packet: Option<u64>,
    pub byte: Option<u64>,
    pub flow_count: Option<u32>,
}

/// `ofp_oxs_stat` and its fields, padded to 8 bytes (Open vSwitch's
/// `oxs_put_stats` order: duration, idle time, packet, byte, flow count).
pub fn encode_oxs(s: &Oxs, out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u16(0);
    let at = len_placeholder(out);
    let field = |out: &mut Vec<u8>, f: u8, len: u8| {
        out.put_u16(OXS_CLASS);
        out.put_u8(f << 1);
        out.put_u8(len);
    };
    if let Some((sec, nsec)) = s.duration {
        field(out, 0, 8);
        out.put_u32(sec);
        out.put_u32(nsec);
    }
    if let Some(idle) = s.idle_time {
        field(out, 1, 8);
        out.put_u32(idle);
        out.put_u32(0);
    }
    if let Some(p) = s.packet {
        field(out, 4, 8);
        out.put_u64(p);
    }
    if let Some(b) = s.byte {
        field(out, 5, 8);
        out.put_u64(b);
    }
    if let Some(c) = s.flow_count {
        field(out, 3, 4);
        out.put_u32(c);
    }
    patch_len(out, at, start);
    let n = out.len() - start;
    zeros(out, pad8(n) - n);
}

/// Reads `ofp_oxs_stat` and its padding.
pub fn decode_oxs(r: &mut Reader<'_>) -> Result<Oxs> {
    let bad = || OfpError::new(ErrorCode::BadMatch(BadMatchCode::BadLen), "OXS length");
    r.skip(2)?;
    let len = r.u16()? as usize;
    if len < 4 || len - 4 > r.remaining() {
        return Err(bad());
    }
    let mut b = r.sub(len - 4, ErrorCode::BadMatch(BadMatchCode::BadLen))?;
    r.skip((pad8(len) - len).min(r.remaining()))?;
    let mut s = Oxs::default();
    while !b.is_empty() {
        let class = b.u16()?;
        let f = b.u8()? >> 1;
        let flen = b.u8()? as usize;
        let mut v = b.sub(flen, ErrorCode::BadMatch(BadMatchCode::BadLen))?;
        if class != OXS_CLASS {
            continue;
        }
        match (f, flen) {
            (0, 8) => s.duration = Some((v.u32()?, v.u32()?)),
            (1, 8) => s.idle_time = Some(v.u32()?),
            (3, 4) => s.flow_count = Some(v.u32()?),
            (4, 8) => s.packet = Some(v.u64()?),
            (5, 8) => s.byte = Some(v.u64()?),
            _ => {}
        }
    }
    Ok(s)
}

fn encode_packet_out(p: &PacketOut, out: &mut Vec<u8>) {
    out.put_u32(p.buffer_id);
    let at = len_placeholder(out);
    zeros(out, 2);
    Match::new()
        .with(Oxm {
            field: OxmField::InPort,
            value: u128::from(p.in_port),
            mask: None,
        })
        .encode(out);
    let start = out.len();
    encode_actions15(&p.actions, out);
    patch_len(out, at, start);
    out.extend_from_slice(&p.data);
}

fn decode_packet_out(r: &mut Reader<'_>) -> Result<PacketOut> {
    let buffer_id = r.u32()?;
    let actions_len = r.u16()? as usize;
    r.skip(2)?;
    let m = Match::decode(r)?;
    let mut in_port = None;
    for e in &m.entries {
        match e {
            MatchEntry::Basic(o) if o.field == OxmField::InPort && o.mask.is_none() => {
                in_port = Some(o.value as u32)
            }
            _ => {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadField),
                    "packet-out match field other than in_port",
                ))
            }
        }
    }
    let in_port = in_port.ok_or(OfpError::new(
        ErrorCode::BadRequest(BadRequestCode::BadPort),
        "packet-out without in_port",
    ))?;
    let mut a = r
        .sub(actions_len, ErrorCode::ACTION_BAD_LEN)
        .map_err(|_| OfpError::new(ErrorCode::BAD_LEN, "actions_len beyond message end"))?;
    let n = a.remaining();
    let actions = decode_actions15(a.slice(n)?)?;
    Ok(PacketOut {
        buffer_id,
        in_port,
        actions,
        data: r.rest(),
    })
}

fn encode_flow_removed(f: &FlowRemoved, out: &mut Vec<u8>) {
    out.put_u8(f.table_id);
    out.put_u8(f.reason.value());
    out.put_u16(f.priority);
    out.put_u16(f.idle_timeout);
    out.put_u16(f.hard_timeout);
    out.put_u64(f.cookie);
    encode_match(&f.match_, out);
    encode_oxs(
        &Oxs {
            duration: Some((f.duration_sec, f.duration_nsec)),
            idle_time: None,
            packet: Some(f.packet_count),
            byte: Some(f.byte_count),
            flow_count: None,
        },
        out,
    );
}

fn decode_flow_removed(r: &mut Reader<'_>) -> Result<FlowRemoved> {
    let table_id = r.u8()?;
    let reason = FlowRemovedReason::from(r.u8()?);
    let priority = r.u16()?;
    let idle_timeout = r.u16()?;
    let hard_timeout = r.u16()?;
    let cookie = r.u64()?;
    let match_ = Match::decode(r)?;
    let s = decode_oxs(r)?;
    let (duration_sec, duration_nsec) = s.duration.unwrap_or((0, 0));
    Ok(FlowRemoved {
        cookie,
        priority,
        reason,
        table_id,
        duration_sec,
        duration_nsec,
        idle_timeout,
        hard_timeout,
        packet_count: s.packet.unwrap_or(u64::MAX),
        byte_count: s.byte.unwrap_or(u64::MAX),
        match_,
    })
}

/// `ofp15_flow_desc` with its match, OXS statistics and instructions.
pub fn encode_flow_desc(f: &FlowStats, out: &mut Vec<u8>) {
    let start = out.len();
    let at = len_placeholder(out);
    zeros(out, 2);
    out.put_u8(f.table_id);
    zeros(out, 1);
    out.put_u16(f.priority);
    out.put_u16(f.idle_timeout);
    out.put_u16(f.hard_timeout);
    out.put_u16(f.flags);
    out.put_u16(0); // importance
    out.put_u64(f.cookie);
    encode_match(&f.match_, out);
    encode_oxs(
        &Oxs {
            duration: Some((f.duration_sec, f.duration_nsec)),
            idle_time: f.idle_age,
            packet: Some(f.packet_count),
            byte: Some(f.byte_count),
            flow_count: None,
        },
        out,
    );
    let mut tmp = Vec::new();
    encode_instructions(&f.instructions, &mut tmp);
    v15_actions::instructions_out(&tmp, out);
    patch_len(out, at, start);
}

/// Reads one `ofp15_flow_desc`.
pub fn decode_flow_desc(r: &mut Reader<'_>) -> Result<FlowStats> {
    let len = r.peek_u16(0)? as usize;
    if len < 24 || len > r.remaining() {
        return Err(OfpError::new(ErrorCode::BAD_LEN, "flow desc length"));
    }
    let mut e = r.sub(len, ErrorCode::BAD_LEN)?;
    e.skip(4)?;
    let table_id = e.u8()?;
    e.skip(1)?;
    let priority = e.u16()?;
    let idle_timeout = e.u16()?;
    let hard_timeout = e.u16()?;
    let flags = e.u16()?;
    let _importance = e.u16()?;
    let cookie = e.u64()?;
    let match_ = Match::decode(&mut e)?;
    let s = decode_oxs(&mut e)?;
    let n = e.remaining();
    let instructions = decode_instructions15(e.slice(n)?)?;
    let (duration_sec, duration_nsec) = s.duration.unwrap_or((0, 0));
    Ok(FlowStats {
        idle_age: s.idle_time,
        hard_age: None,
        table_id,
        duration_sec,
        duration_nsec,
        priority,
        idle_timeout,
        hard_timeout,
        flags,
        cookie,
        packet_count: s.packet.unwrap_or(u64::MAX),
        byte_count: s.byte.unwrap_or(u64::MAX),
        match_,
        instructions,
    })
}
