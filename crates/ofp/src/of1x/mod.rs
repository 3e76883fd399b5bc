//! OpenFlow 1.2, 1.4 and 1.5 onto the 1.3-shaped [`Message`].
//!
//! Contract: [`decode`] reads one whole frame of the connection's version
//! into the internal message, or returns the error Open vSwitch answers
//! that version's peer with; [`encode`] writes an internal message as the
//! version lays it out. Messages whose layout did not change go through
//! the 1.3 codec with the header's version byte changed; the rest are
//! translated here, one module a version:
//!
//! * [`v12`]: OpenFlow 1.2 (no meters, no async config, no PORT_DESC or
//!   TABLE_FEATURES multipart, ports in FEATURES_REPLY, PACKET_IN without
//!   cookie, the 1.1/1.2 statistics records);
//! * [`v14`]: OpenFlow 1.4 (property-based ports, port mods, table mods,
//!   port and queue statistics, async config; native bundles; the new
//!   error types); also the base of 1.5;
//! * [`v15`]: OpenFlow 1.5 (PACKET_OUT with a match, OXS statistics in
//!   FLOW_REMOVED and flow/aggregate replies, the
//!   24-byte meter features, `tcp_flags` as a basic OXM), with
//!   `v15_actions` for the COPY_FIELD and METER actions and `v15_groups`
//!   for groups (bucket ids, INSERT/REMOVE_BUCKET, the selection method).
//!
//! Nothing here changes the internal types: what a version says that
//! they cannot hold is dropped or refused, each case in its module's doc
//! (1.4's flow `importance`, table eviction/vacancy properties, ...).
//! 1.5's group mods are the exception the internal `GroupMod` grew for
//! (bucket ids, INSERT/REMOVE_BUCKET, the selection method: `v15_groups`),
//! which the 1.3 codec cannot say (bundles keep such a group mod in its
//! 1.5 bytes, `msg::bundle::decode_held`). The one shared change is in
//! `oxm/entry.rs`: OpenFlow 1.5's basic OXM_OF_TCP_FLAGS is read in every
//! version, as Open vSwitch reads it.
//!
//! Multipart replies: [`encode`] writes a list reply too long for one
//! message as several, each flagged `OFPMPF_REPLY_MORE` but the last
//! (which keeps the original's flags); [`TooLong`] only when one entry,
//! or one non-list message, cannot fit 65 535 bytes. On error `out` is as
//! it was.
//!
//! Errors: an error code the version has no number for is written as
//! Open vSwitch writes it (`NXBRC_UNENCODABLE_ERROR` under 1.2; the ONF
//! extension's bundle and property errors become 1.4's native types 14
//! and 17); each version module lists its mapping.

pub mod v12;
pub mod v14;
pub mod v15;
mod v15_actions;
pub mod v15_groups;

use bytes::{BufMut, Bytes};

use crate::error::{BadRequestCode, ErrorCode, OfpError, Result};
use crate::header::{Header, HEADER_LEN, MAX_MSG_LEN};
use crate::msg::multipart::{MultipartReply, MultipartReplyBody, MPF_MORE};
use crate::msg::{check_frame, finish, Message, TooLong};
use crate::wire::{zeros, Reader};
use crate::Version;

/// Decodes a whole frame of `version` (1.2, 1.4 or 1.5).
pub fn decode(frame: &Bytes, version: Version) -> Result<(Header, Message)> {
    let h = check_frame(frame, version.wire())?;
    let mut r = Reader::new(frame, ErrorCode::BAD_LEN);
    r.skip(HEADER_LEN)?;
    let m = match version {
        Version::V1_2 => v12::decode_body(&h, &mut r)?,
        Version::V1_5 => v15::decode_body(&h, &mut r)?,
        Version::V1_4 => v14::decode_body(&h, &mut r, version)?,
        // 1.0 and 1.3 have their own codecs; reaching here is a caller's
        // slip, answered as the version it named.
        Version::V1_3 | Version::V1_0 => return Message::decode_as(frame, version),
    };
    r.finish(ErrorCode::BAD_LEN)?;
    Ok((h, m))
}

/// Appends `msg` as `version` (1.2, 1.4 or 1.5) writes it; on error `out`
/// is as it was.
pub fn encode(
    msg: &Message,
    version: Version,
    xid: u32,
    out: &mut Vec<u8>,
) -> std::result::Result<(), TooLong> {
    let start = out.len();
    let r = encode_inner(msg, version, xid, out);
    if r.is_err() {
        out.truncate(start);
    }
    r
}

fn encode_inner(
    msg: &Message,
    version: Version,
    xid: u32,
    out: &mut Vec<u8>,
) -> std::result::Result<(), TooLong> {
    if matches!(version, Version::V1_3 | Version::V1_0) {
        return msg.encode_as(version, xid, out);
    }
    if let Message::MultipartReply(m) = msg {
        return encode_multipart_reply(m, version, xid, out);
    }
    let start = out.len();
    out.put_u8(version.wire());
    out.put_u8(0);
    out.put_u16(0);
    out.put_u32(xid);
    let ty = match version {
        Version::V1_2 => v12::encode_body(msg, out),
        Version::V1_5 => v15::encode_body(msg, xid, out),
        _ => v14::encode_body(msg, version, xid, out),
    };
    match ty {
        Some(ty) => {
            out[start + 1] = ty;
            finish(out, start)
        }
        None => {
            out.truncate(start);
            msg.try_encode(xid, out)?;
            if !matches!(msg, Message::Hello(_)) {
                out[start] = version.wire();
            }
            Ok(())
        }
    }
}

/// A multipart reply's body as `version` writes it: a list of entries
/// (each whole), or one record.
pub(crate) enum ReplyBody {
    List(Vec<Vec<u8>>),
    One(Vec<u8>),
}

/// Entries of a list body written by `f` one by one.
pub(crate) fn entries<T>(v: &[T], f: impl Fn(&T, &mut Vec<u8>)) -> ReplyBody {
    ReplyBody::List(
        v.iter()
            .map(|e| {
                let mut b = Vec::new();
                f(e, &mut b);
                b
            })
            .collect(),
    )
}

/// The 1.3 form of a reply body (what the versions share).
pub(crate) fn reply_body_13(body: &MultipartReplyBody) -> ReplyBody {
    use MultipartReplyBody as B;
    match body {
        B::Flow(v) => entries(v, |e, o| e.encode(o)),
        B::Table(v) => entries(v, |e, o| e.encode(o)),
        B::PortStats(v) => entries(v, |e, o| e.encode(o)),
        B::Queue(v) => entries(v, |e, o| e.encode(o)),
        B::Group(v) => entries(v, |e, o| e.encode(o)),
        B::GroupDesc(v) => entries(v, |e, o| e.encode(o)),
        B::Meter(v) => entries(v, |e, o| e.encode(o)),
        B::MeterConfig(v) => entries(v, |e, o| e.encode(o)),
        B::TableFeatures(v) => entries(v, |e, o| e.encode(o)),
        B::PortDesc(v) => entries(v, |e, o| e.encode(o)),
        other => {
            let mut b = Vec::new();
            other.encode(&mut b);
            ReplyBody::One(b)
        }
    }
}

/// Writes a multipart reply, split over several messages when its list
/// is too long for one.
fn encode_multipart_reply(
    m: &MultipartReply,
    version: Version,
    xid: u32,
    out: &mut Vec<u8>,
) -> std::result::Result<(), TooLong> {
    let body = match version {
        Version::V1_2 => v12::reply_body(&m.body),
        Version::V1_5 => v15::reply_body(&m.body),
        _ => v14::reply_body(&m.body),
    };
    let ty = m.mp_type().value();
    let head = |flags: u16, out: &mut Vec<u8>| {
        let start = out.len();
        out.put_u8(version.wire());
        out.put_u8(crate::header::MsgType::MultipartReply.value());
        out.put_u16(0);
        out.put_u32(xid);
        out.put_u16(ty);
        out.put_u16(flags);
        zeros(out, 4);
        start
    };
    const FIXED: usize = HEADER_LEN + 8;
    match body {
        ReplyBody::One(b) => {
            let start = head(m.flags, out);
            out.extend_from_slice(&b);
            finish(out, start)
        }
        ReplyBody::List(list) => {
            if let Some(big) = list.iter().find(|e| FIXED + e.len() > MAX_MSG_LEN) {
                return Err(TooLong {
                    len: FIXED + big.len(),
                });
            }
            // Greedy packing: as many whole entries as fit each message.
            let mut chunks: Vec<&[Vec<u8>]> = Vec::new();
            let (mut from, mut len) = (0, FIXED);
            for (i, e) in list.iter().enumerate() {
                if len + e.len() > MAX_MSG_LEN {
                    chunks.push(&list[from..i]);
                    from = i;
                    len = FIXED;
                }
                len += e.len();
            }
            chunks.push(&list[from..]);
            let n = chunks.len();
            for (i, c) in chunks.into_iter().enumerate() {
                let flags = if i + 1 < n {
                    m.flags | MPF_MORE
                } else {
                    m.flags
                };
                let start = head(flags, out);
                c.iter().for_each(|e| out.extend_from_slice(e));
                finish(out, start)?;
            }
            Ok(())
        }
    }
}

/// `OFPBRC_BAD_STAT` (1.3's `OFPBRC_BAD_MULTIPART`): what Open vSwitch
/// answers a multipart type it does not implement for the version.
pub(crate) fn bad_multipart(why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadRequest(BadRequestCode::BadMultipart), why)
}

/// `OFPBRC_BAD_TYPE`: a message type the version does not have.
pub(crate) fn bad_type(why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadRequest(BadRequestCode::BadType), why)
}

/// OpenFlow 1.4's `OFPET_BAD_PROPERTY` (type 14) with `code`
/// (`OFPBPC_BAD_TYPE` 0, `OFPBPC_BAD_LEN` 1, `OFPBPC_BAD_EXPERIMENTER` 5).
pub(crate) fn bad_property(code: u16, why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::Unknown { ty: 14, code }, why)
}

/// One TLV property (`ofp_prop_header`: type, length including the
/// header, then the body, padded to 8 bytes) read from `r`: its type and
/// a reader over its body. Open vSwitch's `ofpprop_pull`: a length below
/// 4 or beyond what is left is `OFPBPC_BAD_LEN`.
pub(crate) fn pull_prop<'a>(r: &mut Reader<'a>) -> Result<(u16, Reader<'a>)> {
    let bad = || bad_property(1, "property length inconsistent");
    if r.remaining() < 4 {
        return Err(bad());
    }
    let ty = r.u16()?;
    let len = r.u16()? as usize;
    if len < 4 || len - 4 > r.remaining() {
        return Err(bad());
    }
    let body = r.sub(len - 4, ErrorCode::Unknown { ty: 14, code: 1 })?;
    let pad = (crate::wire::pad8(len) - len).min(r.remaining());
    r.skip(pad)?;
    Ok((ty, body))
}
