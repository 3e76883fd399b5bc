//! OpenFlow 1.2 (wire version 3) onto the 1.3-shaped message.
//!
//! Contract: what 1.2 lays out as 1.3 passes through the 1.3 codec; the
//! rest is translated here, as Open vSwitch (include/openflow/
//! openflow-1.1.h and -1.2.h, lib/ofp-msgs.h, lib/ofp-packet.c,
//! lib/ofp-table.c, lib/ofp-port.c, lib/ofp-group.c, lib/ofp-errors.h)
//! handles it:
//!
//! * 1.2 has no meters and no async configuration: GET_ASYNC_REQUEST,
//!   GET_ASYNC_REPLY, SET_ASYNC and METER_MOD (types 26-29) are
//!   `OFPBRC_BAD_TYPE`; the METER, METER_CONFIG, METER_FEATURES,
//!   TABLE_FEATURES and PORT_DESC multipart types (9-13) are
//!   `OFPBRC_BAD_STAT`; a meter instruction in a FLOW_MOD is
//!   `OFPBIC_UNKNOWN_INST`. The 1.3 FLOW_MOD flags NO_PKT_COUNTS and
//!   NO_BYT_COUNTS are `OFPFMFC_BAD_FLAGS` (Open vSwitch's
//!   `ofputil_decode_flow_mod_flags`). The ONF bundle extension is OpenFlow 1.3's
//!   only (Open vSwitch's `ONFT 1.3`): its experimenter messages are
//!   `OFPBRC_BAD_EXP_TYPE`.
//! * FEATURES_REPLY lists the ports (`ofp11_port`, 64 bytes each, from
//!   `FeaturesReply::ports`).
//! * PACKET_IN (`ofp12_packet_in`) has no cookie: written without it,
//!   read with cookie all-ones (1.3's "none").
//! * Statistics records of 1.1/1.2: `ofp12_table_stats` (128 bytes: the
//!   internal counters; the name `table<N>`; match, wildcards and set-field
//!   bitmaps of every 1.2 field; the 1.2 actions and instructions sluice
//!   executes; metadata masks all-ones; config
//!   `OFPTC11_TABLE_MISS_CONTROLLER`, what sluice does on a miss while a
//!   1.0-1.2 controller is connected, as Open vSwitch writes its miss
//!   behaviour there; max_entries 1 000 000, Open vSwitch's default), port, queue
//!   and group statistics without durations (read as all-ones, Open
//!   vSwitch's "unknown"), flow statistics without flags (written as
//!   padding, read as 0).
//! * Errors: a code 1.2 has no number for (meter-mod and table-features
//!   failures, 1.3's `OFPBRC_MULTIPART_BUFFER_OVERFLOW`, the ONF
//!   extension's bundle and property errors) is written
//!   as Open vSwitch's `NXBRC_UNENCODABLE_ERROR`.
//! * 1.2's default on a table miss, to send the packet to the
//!   controller, is the agent's and the pipeline's business
//!   (`pipeline::Pipeline::miss_to_controller`, on while a 1.0-1.2
//!   controller is connected), not this module's.
//! * Replies of types 1.2 lacks (meters, table features, port
//!   descriptions) and GET_ASYNC_REPLY cannot arise (their requests are
//!   refused); if asked, they are written in the 1.3 form.

use bytes::BufMut;

use super::{bad_multipart, bad_type, entries, reply_body_13, v14, ReplyBody};
use crate::error::{
    BadInstructionCode, BadRequestCode, ErrorCode, FlowModFailedCode, OfpError, Result,
};
use crate::header::{Header, MsgType};
use crate::instruction::Instruction;
use crate::msg::bundle::BundleMsg;
use crate::msg::flow::{flow_mod_flags, PacketIn, PacketInReason};
use crate::msg::multipart::{
    BucketCounter, FlowStats, GroupStats, MultipartReply, MultipartReplyBody, MultipartRequest,
    MultipartType, PortStats, QueueStats, TableStats,
};
use crate::msg::simple::{ErrorMsg, FeaturesReply};
use crate::msg::Message;
use crate::oxm::Match;
use crate::port::PortDesc;
use crate::wire::{zeros, FixedStr, Reader};

/// The body of a 1.2 message after its header.
pub(crate) fn decode_body(h: &Header, r: &mut Reader<'_>) -> Result<Message> {
    Ok(match h.msg_type {
        MsgType::GetAsyncRequest
        | MsgType::GetAsyncReply
        | MsgType::SetAsync
        | MsgType::MeterMod => return Err(bad_type("OpenFlow 1.2 has no meters or async config")),
        MsgType::PacketIn => {
            let buffer_id = r.u32()?;
            let total_len = r.u16()?;
            let reason = PacketInReason::from(r.u8()?);
            let table_id = r.u8()?;
            let match_ = Match::decode(r)?;
            r.skip(2)?;
            Message::PacketIn(PacketIn {
                buffer_id,
                total_len,
                reason,
                table_id,
                cookie: u64::MAX,
                match_,
                data: r.rest(),
            })
        }
        MsgType::FeaturesReply => {
            let mut f = FeaturesReply::decode(r)?;
            f.ports = v14::decode_all(r, PortDesc::decode)?;
            Message::FeaturesReply(f)
        }
        MsgType::MultipartRequest | MsgType::MultipartReply => {
            let ty = r.peek_u16(0)?;
            if matches!(ty, 9..=13) {
                return Err(bad_multipart("OpenFlow 1.2 has no such statistics"));
            }
            if h.msg_type == MsgType::MultipartRequest {
                Message::MultipartRequest(MultipartRequest::decode(r)?)
            } else {
                Message::MultipartReply(decode_reply(r)?)
            }
        }
        _ => {
            let m = crate::msg::decode_body(h, r)?;
            match &m {
                Message::FlowMod(f)
                    if f.instructions
                        .iter()
                        .any(|i| matches!(i, Instruction::Meter(_))) =>
                {
                    return Err(OfpError::new(
                        ErrorCode::BadInstruction(BadInstructionCode::UnknownInst),
                        "OpenFlow 1.2 has no meter instruction",
                    ))
                }
                Message::FlowMod(f)
                    if f.flags
                        & (flow_mod_flags::NO_PKT_COUNTS | flow_mod_flags::NO_BYT_COUNTS)
                        != 0 =>
                {
                    return Err(OfpError::new(
                        ErrorCode::FlowModFailed(FlowModFailedCode::BadFlags),
                        "OpenFlow 1.2 has no NO_PKT_COUNTS/NO_BYT_COUNTS",
                    ))
                }
                Message::Experimenter(e) if BundleMsg::is_bundle(e) => {
                    return Err(OfpError::new(
                        ErrorCode::BadRequest(BadRequestCode::BadExpType),
                        "bundles are not offered to OpenFlow 1.2",
                    ))
                }
                _ => {}
            }
            m
        }
    })
}

/// Writes the body of `msg` if 1.2 lays it out differently from 1.3,
/// returning its type; None: the 1.3 codec writes it.
pub(crate) fn encode_body(msg: &Message, out: &mut Vec<u8>) -> Option<u8> {
    Some(match msg {
        Message::PacketIn(p) => {
            out.put_u32(p.buffer_id);
            out.put_u16(p.total_len);
            out.put_u8(p.reason.value());
            out.put_u8(p.table_id);
            p.match_.encode(out);
            zeros(out, 2);
            out.extend_from_slice(&p.data);
            MsgType::PacketIn.value()
        }
        Message::FeaturesReply(f) => {
            f.encode(out);
            f.ports.iter().for_each(|p| p.encode(out));
            MsgType::FeaturesReply.value()
        }
        Message::Error(e) => {
            let code = error_code(e.code);
            ErrorMsg {
                code,
                data: e.data.clone(),
            }
            .encode(out);
            MsgType::Error.value()
        }
        _ => return None,
    })
}

/// The code a 1.2 peer gets for an internal one.
pub(crate) fn error_code(code: ErrorCode) -> ErrorCode {
    let onf = matches!(
        code,
        ErrorCode::Experimenter {
            experimenter: crate::error::ONF_EXPERIMENTER,
            ..
        }
    );
    match code {
        ErrorCode::MeterModFailed(_)
        | ErrorCode::TableFeaturesFailed(_)
        | ErrorCode::BadRequest(BadRequestCode::MultipartBufferOverflow) => {
            crate::error::NXBRC_UNENCODABLE_ERROR
        }
        _ if onf => crate::error::NXBRC_UNENCODABLE_ERROR,
        c => c,
    }
}

/// A reply body as 1.2 writes it.
pub(crate) fn reply_body(body: &MultipartReplyBody) -> ReplyBody {
    use MultipartReplyBody as B;
    match body {
        B::Table(v) => entries(v, encode_table_stats),
        B::PortStats(v) => entries(v, encode_port_stats),
        B::Queue(v) => entries(v, encode_queue_stats),
        B::Group(v) => entries(v, encode_group_stats),
        B::Flow(v) => entries(v, encode_flow_stats),
        other => reply_body_13(other),
    }
}

fn decode_reply(r: &mut Reader<'_>) -> Result<MultipartReply> {
    let ty = MultipartType::from(r.peek_u16(0)?);
    let body: fn(&mut Reader<'_>) -> Result<MultipartReplyBody> = match ty {
        MultipartType::Table => |r| {
            Ok(MultipartReplyBody::Table(v14::decode_all(
                r,
                decode_table_stats,
            )?))
        },
        MultipartType::PortStats => |r| {
            Ok(MultipartReplyBody::PortStats(v14::decode_all(
                r,
                decode_port_stats,
            )?))
        },
        MultipartType::Queue => |r| {
            Ok(MultipartReplyBody::Queue(v14::decode_all(
                r,
                decode_queue_stats,
            )?))
        },
        MultipartType::Group => |r| {
            Ok(MultipartReplyBody::Group(v14::decode_all(
                r,
                decode_group_stats,
            )?))
        },
        _ => return MultipartReply::decode(r),
    };
    r.skip(2)?;
    let flags = r.u16()?;
    r.skip(4)?;
    Ok(MultipartReply {
        flags,
        body: body(r)?,
    })
}

/// Every OpenFlow 1.2 basic match field (OFPXMT12_OFB_IN_PORT ..
/// OFPXMT12_OFB_IPV6_ND_TLL).
pub const FIELDS_12: u64 = (1 << 34) - 1;
/// The 1.2 actions sluice executes: OUTPUT, COPY_TTL_OUT/IN, SET_MPLS_TTL
/// .. SET_FIELD.
pub const ACTIONS_12: u32 = 1 | 1 << 11 | 1 << 12 | 0x07ff << 15;
/// GOTO_TABLE, WRITE_METADATA, WRITE/APPLY/CLEAR_ACTIONS.
pub const INSTRUCTIONS_12: u32 = 0x3e;

/// `ofp12_table_stats` (128 bytes).
pub fn encode_table_stats(t: &TableStats, out: &mut Vec<u8>) {
    out.put_u8(t.table_id);
    zeros(out, 7);
    out.extend_from_slice(&t.name.0);
    out.put_u64(FIELDS_12); // match
    out.put_u64(FIELDS_12); // wildcards
    out.put_u32(ACTIONS_12); // write_actions
    out.put_u32(ACTIONS_12); // apply_actions
    out.put_u64(FIELDS_12); // write_setfields
    out.put_u64(FIELDS_12); // apply_setfields
    out.put_u64(u64::MAX); // metadata_match
    out.put_u64(u64::MAX); // metadata_write
    out.put_u32(INSTRUCTIONS_12);
    out.put_u32(0); // OFPTC11_TABLE_MISS_CONTROLLER: a 1.2 controller gets misses
    out.put_u32(1_000_000); // max_entries
    out.put_u32(t.active_count);
    out.put_u64(t.lookup_count);
    out.put_u64(t.matched_count);
}

/// Reads one `ofp12_table_stats` (the counters).
pub fn decode_table_stats(r: &mut Reader<'_>) -> Result<TableStats> {
    let table_id = r.u8()?;
    r.skip(7)?;
    let name = FixedStr(r.array::<32>()?);
    r.skip(8 * 2 + 4 * 2 + 8 * 4 + 4 * 3)?;
    Ok(TableStats {
        table_id,
        name,
        active_count: r.u32()?,
        lookup_count: r.u64()?,
        matched_count: r.u64()?,
    })
}

/// `ofp11_port_stats` (104 bytes: no durations).
pub fn encode_port_stats(s: &PortStats, out: &mut Vec<u8>) {
    out.put_u32(s.port_no);
    zeros(out, 4);
    for v in s.counters() {
        out.put_u64(v);
    }
}

/// Reads one `ofp11_port_stats`.
pub fn decode_port_stats(r: &mut Reader<'_>) -> Result<PortStats> {
    let port_no = r.u32()?;
    r.skip(4)?;
    let mut c = [0u64; 12];
    for v in &mut c {
        *v = r.u64()?;
    }
    // No durations in 1.2: all-ones, Open vSwitch's "unknown".
    Ok(PortStats::with_counters(port_no, c, (u32::MAX, u32::MAX)))
}

/// `ofp11_queue_stats` (32 bytes).
pub fn encode_queue_stats(q: &QueueStats, out: &mut Vec<u8>) {
    out.put_u32(q.port_no);
    out.put_u32(q.queue_id);
    out.put_u64(q.tx_bytes);
    out.put_u64(q.tx_packets);
    out.put_u64(q.tx_errors);
}

/// Reads one `ofp11_queue_stats`.
pub fn decode_queue_stats(r: &mut Reader<'_>) -> Result<QueueStats> {
    Ok(QueueStats {
        port_no: r.u32()?,
        queue_id: r.u32()?,
        tx_bytes: r.u64()?,
        tx_packets: r.u64()?,
        tx_errors: r.u64()?,
        duration_sec: u32::MAX,
        duration_nsec: u32::MAX,
    })
}

/// `ofp11_group_stats` (32 bytes and the bucket counters).
pub fn encode_group_stats(g: &GroupStats, out: &mut Vec<u8>) {
    out.put_u16((32 + 16 * g.bucket_stats.len()).min(0xffff) as u16);
    zeros(out, 2);
    out.put_u32(g.group_id);
    out.put_u32(g.ref_count);
    zeros(out, 4);
    out.put_u64(g.packet_count);
    out.put_u64(g.byte_count);
    g.bucket_stats.iter().for_each(|b| b.encode(out));
}

/// Reads one `ofp11_group_stats`.
pub fn decode_group_stats(r: &mut Reader<'_>) -> Result<GroupStats> {
    let len = r.peek_u16(0)? as usize;
    if len < 32 || !(len - 32).is_multiple_of(16) || len > r.remaining() {
        return Err(OfpError::new(ErrorCode::BAD_LEN, "bad group stats length"));
    }
    let mut b = r.sub(len, ErrorCode::BAD_LEN)?;
    b.skip(4)?;
    let group_id = b.u32()?;
    let ref_count = b.u32()?;
    b.skip(4)?;
    let (packet_count, byte_count) = (b.u64()?, b.u64()?);
    let bucket_stats = v14::decode_all(&mut b, BucketCounter::decode)?;
    Ok(GroupStats {
        group_id,
        ref_count,
        packet_count,
        byte_count,
        duration_sec: u32::MAX,
        duration_nsec: u32::MAX,
        bucket_stats,
    })
}

/// `ofp11_flow_stats`: 1.3's layout with the flags as padding.
pub fn encode_flow_stats(f: &FlowStats, out: &mut Vec<u8>) {
    let start = out.len();
    f.encode(out);
    // length(2) table_id(1) pad(1) duration(8) priority idle hard (6): flags.
    let at = start + 18;
    if let Some(b) = out.get_mut(at..at + 2) {
        b.copy_from_slice(&[0, 0]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_stats_carry_the_name_or_none_as_open_vswitch() {
        for name in ["", "Classifier"] {
            let t = TableStats {
                table_id: 3,
                name: FixedStr::new(name),
                active_count: 1,
                lookup_count: 2,
                matched_count: 3,
            };
            let mut out = Vec::new();
            encode_table_stats(&t, &mut out);
            assert_eq!(out.len(), 128);
            let mut want = [0u8; 32];
            want[..name.len()].copy_from_slice(name.as_bytes());
            assert_eq!(&out[8..40], &want);
            let b = bytes::Bytes::from(out);
            let mut r = Reader::new(&b, crate::error::ErrorCode::BAD_LEN);
            assert_eq!(decode_table_stats(&mut r).unwrap(), t);
        }
    }
}
