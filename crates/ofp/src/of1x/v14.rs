//! OpenFlow 1.4 (wire version 5) onto the 1.3-shaped message; also the
//! base OpenFlow 1.5 builds on (`v15` calls `decode_body`,
//! `encode_body` and `reply_body` for what 1.5 did not change again).
//!
//! Contract: what 1.4 lays out as 1.3 passes through the 1.3 codec; the
//! rest is translated here, each case as Open vSwitch (lib/ofp-port.c,
//! lib/ofp-table.c, lib/ofp-async.c, lib/ofp-bundle.c, lib/ofp-errors.h,
//! include/openflow/openflow-1.4.h) handles it:
//!
//! * Ports (`ofp14_port`, 40 bytes and properties) in PORT_STATUS and
//!   the PORT_DESC reply: written with one `OFPPDPT14_ETHERNET` property
//!   carrying curr/advertised/supported/peer and the speeds; read from it
//!   (optical and experimenter properties are skipped, as Open vSwitch
//!   skips what it does not use; without an Ethernet property those
//!   fields are 0).
//! * PORT_MOD (`ofp14_port_mod` and properties): the Ethernet property
//!   carries `advertise` (absent: 0, as Open vSwitch reads it); any other
//!   property is `OFPBPC_BAD_TYPE` (`OFPBPC_BAD_EXPERIMENTER` for an
//!   experimenter one), as Open vSwitch's strict decoding answers.
//! * TABLE_MOD (`ofp14_table_mod` and properties): the eviction and
//!   vacancy properties are read and dropped (the internal form cannot
//!   hold them; sluice neither evicts nor reports vacancy — Open vSwitch
//!   would store them); any other is `OFPBPC_BAD_TYPE`. Written without
//!   properties.
//! * PORT_STATS (`ofp14_port_stats` with the Ethernet property holding
//!   the frame/overrun/CRC errors and collisions; absent: all-ones, Open
//!   vSwitch's "unknown") and QUEUE_STATS (`ofp14_queue_stats`, length
//!   prefixed).
//! * FLOW_MOD: 1.4 puts `importance` in what was padding. The internal
//!   `FlowMod` has no field for it and adding one is not additive for its
//!   users, so it is read and dropped; written as 0 (Open vSwitch keeps it
//!   for eviction, which sluice does not do). Flow stats replies likewise.
//! * New reasons of PACKET_IN (ACTION_SET, GROUP, PACKET_OUT),
//!   FLOW_REMOVED (METER_DELETE, EVICTION) and PORT_STATUS pass through
//!   as the numbers they are (the wire enums keep unknown values). The
//!   agent does not tell them apart: a packet sent to the controller from
//!   an action set, a group or a PACKET_OUT is reported as 1.3's ACTION
//!   (1), and a flow removed with its meter as DELETE, where Open vSwitch
//!   gives 1.4 peers the finer reason (the internal message carries no
//!   more than 1.3 does).
//! * SET_ASYNC / GET_ASYNC_REPLY as properties (types 0-5: packet-in,
//!   port-status, flow-removed, each slave then master). Written: the six
//!   the internal `AsyncConfig` holds. Read: a property absent from
//!   SET_ASYNC takes the spec's default (that of the agent's
//!   `default_async`: the internal message holds a whole configuration,
//!   where Open vSwitch would keep the connection's current value);
//!   the ROLE_STATUS, TABLE_STATUS, REQUESTFORWARD (6-11) and
//!   experimenter properties are accepted and dropped (sluice sends none
//!   of those messages); another type is `OFPBPC_BAD_TYPE`; a length
//!   other than 8 `OFPBPC_BAD_LEN`.
//! * QUEUE_GET_CONFIG_REQUEST/REPLY (22, 23) are gone from 1.4 (the
//!   QUEUE_DESC multipart replaced them): `OFPBRC_BAD_TYPE`, as Open
//!   vSwitch answers; the reply cannot arise (its request is refused).
//! * ROLE_STATUS (30), TABLE_STATUS (31), REQUESTFORWARD (32) are
//!   switch-to-controller messages sluice does not send (no internal
//!   form); received, they are `OFPBRC_BAD_TYPE`.
//! * BUNDLE_CONTROL (33) and BUNDLE_ADD_MESSAGE (34) are the internal
//!   ONF-experimenter bundle messages (`msg::bundle`), same body after the
//!   header. The added message must be of the connection's version (it is
//!   read with this version's decoder, and an error there is the answer
//!   to the add, as Open vSwitch decodes the inner message on arrival);
//!   internally it is held in its 1.3 form, and written back in the
//!   connection's version; a 1.5 group mod that form cannot say (bucket
//!   commands, ids, a selection method) is held as it came
//!   (`msg::bundle::decode_held`). A bundle message inside a bundle is kept as
//!   it came (the agent refuses it, `OFPBFC_MSG_UNSUP`).
//! * Multipart: TABLE_DESC (14), QUEUE_DESC (15) and FLOW_MONITOR (16)
//!   requests have no internal form: `OFPBRC_BAD_STAT`, Open vSwitch's
//!   answer to a statistics type it does not serve. FLOW_MONITOR from a
//!   1.4 connection never gets here: the agent reads it from the frame
//!   (`msg::nx_flow::monitor`, 1.4's form); from 1.5 it is refused so.
//! * The flow monitor's errors (experimenter codes internally, as
//!   Nicira's 1.2-1.3 ones) are `OFPET_FLOW_MONITOR_FAILED` (16) codes 1,
//!   3 and 5 — and back when read.
//! * Errors: the ONF extension's bundle errors (experimenter 2300+code)
//!   are native `OFPET_BUNDLE_FAILED` (17); `OFPBRC_MULTIPART_REQUEST_TIMEOUT`
//!   is bad-request code 14; `OFPBPC_BAD_EXPERIMENTER`/`BAD_EXP_TYPE` are
//!   `OFPET_BAD_PROPERTY` (14) codes 5 and 6 — and back when read. Types
//!   14-16 otherwise stay numbers (`ErrorCode::Unknown`).

use bytes::{BufMut, Bytes};

use super::{bad_multipart, bad_property, bad_type, entries, pull_prop, reply_body_13, ReplyBody};
use crate::error::{
    BadRequestCode, BundleFailedCode, ErrorCode, OfpError, Result, ONF_EXPERIMENTER,
};
use crate::header::{Header, MsgType};
use crate::msg::bundle::{BundleMsg, BUNDLE_ADD_MESSAGE, BUNDLE_CONTROL};
use crate::msg::multipart::{
    MultipartReply, MultipartReplyBody, MultipartRequest, MultipartType, PortStats, QueueStats,
};
use crate::msg::nx_flow::monitor;
use crate::msg::simple::{
    AsyncConfig, ErrorMsg, ExperimenterMsg, PortMod, PortReason, PortStatus, TableMod,
};
use crate::msg::Message;
use crate::port::PortDesc;
use crate::wire::{zeros, FixedStr, Reader};
use crate::Version;

/// OFPT_BUNDLE_CONTROL.
pub const OFPT_BUNDLE_CONTROL: u8 = 33;
/// OFPT_BUNDLE_ADD_MESSAGE.
pub const OFPT_BUNDLE_ADD_MESSAGE: u8 = 34;
/// `ofp14_port`'s length with its Ethernet property.
pub const PORT_LEN: usize = 72;

/// The body of a 1.4 (or, from `v15`, 1.5) message after its header.
pub(crate) fn decode_body(h: &Header, r: &mut Reader<'_>, version: Version) -> Result<Message> {
    Ok(match h.msg_type {
        MsgType::PortStatus => {
            let reason = PortReason::from(r.u8()?);
            r.skip(7)?;
            Message::PortStatus(PortStatus {
                reason,
                desc: decode_port(r)?,
            })
        }
        MsgType::PortMod => Message::PortMod(decode_port_mod(r)?),
        MsgType::TableMod => Message::TableMod(decode_table_mod(r)?),
        MsgType::GetAsyncReply => Message::GetAsyncReply(decode_async(r)?),
        MsgType::SetAsync => Message::SetAsync(decode_async(r)?),
        MsgType::Error => Message::Error(decode_error(r)?),
        MsgType::MultipartRequest => {
            let ty = r.peek_u16(0)?;
            if matches!(ty, 14..=16) {
                return Err(bad_multipart(
                    "TABLE_DESC/QUEUE_DESC/FLOW_MONITOR have no internal form",
                ));
            }
            Message::MultipartRequest(MultipartRequest::decode(r)?)
        }
        MsgType::MultipartReply => Message::MultipartReply(decode_reply(r)?),
        MsgType::QueueGetConfigRequest | MsgType::QueueGetConfigReply => {
            return Err(bad_type(
                "QUEUE_GET_CONFIG is gone in 1.4 (OFPMP_QUEUE_DESC replaced it)",
            ))
        }
        MsgType::Unknown(30..=32) => {
            return Err(bad_type(
                "ROLE_STATUS/TABLE_STATUS/REQUESTFORWARD go to controllers",
            ))
        }
        MsgType::Unknown(OFPT_BUNDLE_CONTROL) => Message::Experimenter(ExperimenterMsg {
            experimenter: ONF_EXPERIMENTER,
            exp_type: BUNDLE_CONTROL,
            data: r.rest(),
        }),
        MsgType::Unknown(OFPT_BUNDLE_ADD_MESSAGE) => decode_bundle_add(r, h.xid, version)?,
        _ => crate::msg::decode_body(h, r)?,
    })
}

/// Writes the body of `msg` if 1.4 lays it out differently from 1.3,
/// returning its type; None: the 1.3 codec writes it.
pub(crate) fn encode_body(
    msg: &Message,
    version: Version,
    xid: u32,
    out: &mut Vec<u8>,
) -> Option<u8> {
    Some(match msg {
        Message::PortStatus(p) => {
            out.put_u8(p.reason.value());
            zeros(out, 7);
            encode_port(&p.desc, out);
            MsgType::PortStatus.value()
        }
        Message::PortMod(p) => {
            encode_port_mod(p, out);
            MsgType::PortMod.value()
        }
        Message::TableMod(t) => {
            out.put_u8(t.table_id);
            zeros(out, 3);
            out.put_u32(t.config);
            MsgType::TableMod.value()
        }
        Message::GetAsyncReply(a) | Message::SetAsync(a) => {
            encode_async(a, out);
            msg.msg_type().value()
        }
        Message::Error(e) => {
            encode_error(e, out);
            MsgType::Error.value()
        }
        Message::Experimenter(e) if BundleMsg::is_bundle(e) => {
            return encode_bundle(e, version, xid, out);
        }
        _ => return None,
    })
}

/// A reply body as 1.4 writes it.
pub(crate) fn reply_body(body: &MultipartReplyBody) -> ReplyBody {
    use MultipartReplyBody as B;
    match body {
        B::PortDesc(v) => entries(v, encode_port),
        B::PortStats(v) => entries(v, encode_port_stats),
        B::Queue(v) => entries(v, encode_queue_stats),
        other => reply_body_13(other),
    }
}

/// A multipart reply of 1.4 (the types 1.4 lays out anew; the rest as 1.3).
pub(crate) fn decode_reply(r: &mut Reader<'_>) -> Result<MultipartReply> {
    let ty = MultipartType::from(r.peek_u16(0)?);
    let list = |r: &mut Reader<'_>, f: fn(&mut Reader<'_>) -> Result<MultipartReplyBody>| {
        let _ = r.u16()?;
        let flags = r.u16()?;
        r.skip(4)?;
        Ok(MultipartReply { flags, body: f(r)? })
    };
    match ty {
        MultipartType::PortDesc => list(r, |r| {
            Ok(MultipartReplyBody::PortDesc(decode_all(r, decode_port)?))
        }),
        MultipartType::PortStats => list(r, |r| {
            Ok(MultipartReplyBody::PortStats(decode_all(
                r,
                decode_port_stats,
            )?))
        }),
        MultipartType::Queue => list(r, |r| {
            Ok(MultipartReplyBody::Queue(decode_all(
                r,
                decode_queue_stats,
            )?))
        }),
        _ => MultipartReply::decode(r),
    }
}

/// Entries read with `f` until `r` is empty.
pub(crate) fn decode_all<T>(
    r: &mut Reader<'_>,
    f: fn(&mut Reader<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(f(r)?);
    }
    Ok(v)
}

/// A length-prefixed entry: reads a u16 length at `off` bytes into the
/// entry (checked against `min` and what is left: `OFPBRC_BAD_LEN`) and
/// returns a reader over the whole entry.
fn entry<'a>(r: &mut Reader<'a>, off: usize, min: usize) -> Result<Reader<'a>> {
    let len = r.peek_u16(off)? as usize;
    if len < min || len > r.remaining() {
        return Err(crate::OfpError::new(
            ErrorCode::BAD_LEN,
            "entry length inconsistent",
        ));
    }
    r.sub(len, ErrorCode::BAD_LEN)
}

/// `ofp14_port` with an Ethernet property (72 bytes).
pub fn encode_port(p: &PortDesc, out: &mut Vec<u8>) {
    out.put_u32(p.port_no);
    out.put_u16(PORT_LEN as u16);
    zeros(out, 2);
    out.extend_from_slice(&p.hw_addr);
    zeros(out, 2);
    out.extend_from_slice(&p.name.0);
    out.put_u32(p.config);
    out.put_u32(p.state);
    out.put_u16(0); // OFPPDPT14_ETHERNET
    out.put_u16(32);
    zeros(out, 4);
    for v in [
        p.curr,
        p.advertised,
        p.supported,
        p.peer,
        p.curr_speed,
        p.max_speed,
    ] {
        out.put_u32(v);
    }
}

/// Reads one `ofp14_port` (see the module doc for its properties).
pub fn decode_port(r: &mut Reader<'_>) -> Result<PortDesc> {
    let mut e = entry(r, 4, 40)?;
    let port_no = e.u32()?;
    e.skip(4)?;
    let hw_addr = e.array()?;
    e.skip(2)?;
    let name = FixedStr(e.array()?);
    let mut p = PortDesc {
        port_no,
        hw_addr,
        name,
        config: e.u32()?,
        state: e.u32()?,
        ..PortDesc::default()
    };
    while !e.is_empty() {
        let (ty, mut b) = pull_prop(&mut e)?;
        if ty == 0 {
            if b.remaining() != 28 {
                return Err(bad_property(1, "ethernet port property length"));
            }
            b.skip(4)?;
            p.curr = b.u32()?;
            p.advertised = b.u32()?;
            p.supported = b.u32()?;
            p.peer = b.u32()?;
            p.curr_speed = b.u32()?;
            p.max_speed = b.u32()?;
        }
    }
    Ok(p)
}

fn encode_port_mod(p: &PortMod, out: &mut Vec<u8>) {
    out.put_u32(p.port_no);
    zeros(out, 4);
    out.extend_from_slice(&p.hw_addr);
    zeros(out, 2);
    out.put_u32(p.config);
    out.put_u32(p.mask);
    out.put_u16(0); // OFPPMPT14_ETHERNET
    out.put_u16(8);
    out.put_u32(p.advertise);
}

fn decode_port_mod(r: &mut Reader<'_>) -> Result<PortMod> {
    let port_no = r.u32()?;
    r.skip(4)?;
    let hw_addr = r.array()?;
    r.skip(2)?;
    let mut p = PortMod {
        port_no,
        hw_addr,
        config: r.u32()?,
        mask: r.u32()?,
        advertise: 0,
    };
    while !r.is_empty() {
        let (ty, mut b) = pull_prop(r)?;
        match ty {
            0 => {
                if b.remaining() != 4 {
                    return Err(bad_property(1, "ethernet port-mod property length"));
                }
                p.advertise = b.u32()?;
            }
            0xffff => return Err(bad_property(5, "experimenter port-mod property")),
            _ => return Err(bad_property(0, "port-mod property sluice does not know")),
        }
    }
    Ok(p)
}

fn decode_table_mod(r: &mut Reader<'_>) -> Result<TableMod> {
    let table_id = r.u8()?;
    r.skip(3)?;
    let config = r.u32()?;
    while !r.is_empty() {
        let (ty, b) = pull_prop(r)?;
        match ty {
            2 | 3 => {
                if b.remaining() != 4 {
                    return Err(bad_property(1, "table-mod property length"));
                }
            }
            0xffff => return Err(bad_property(5, "experimenter table-mod property")),
            _ => return Err(bad_property(0, "table-mod property sluice does not know")),
        }
    }
    Ok(TableMod { table_id, config })
}

/// `ofp14_port_stats` with its Ethernet property (120 bytes).
pub fn encode_port_stats(s: &PortStats, out: &mut Vec<u8>) {
    out.put_u16(120);
    zeros(out, 2);
    out.put_u32(s.port_no);
    out.put_u32(s.duration_sec);
    out.put_u32(s.duration_nsec);
    // The first eight counters in the record, the last four (frame,
    // overrun and CRC errors, collisions) in its Ethernet property.
    let c = s.counters();
    for v in &c[..8] {
        out.put_u64(*v);
    }
    out.put_u16(0); // OFPPSPT14_ETHERNET
    out.put_u16(40);
    zeros(out, 4);
    for v in &c[8..] {
        out.put_u64(*v);
    }
}

/// Reads one `ofp14_port_stats`.
pub fn decode_port_stats(r: &mut Reader<'_>) -> Result<PortStats> {
    let mut e = entry(r, 0, 80)?;
    e.skip(4)?;
    let port_no = e.u32()?;
    let duration_sec = e.u32()?;
    let duration_nsec = e.u32()?;
    let mut c = [0u64; 8];
    for v in &mut c {
        *v = e.u64()?;
    }
    let mut s = PortStats {
        port_no,
        rx_packets: c[0],
        tx_packets: c[1],
        rx_bytes: c[2],
        tx_bytes: c[3],
        rx_dropped: c[4],
        tx_dropped: c[5],
        rx_errors: c[6],
        tx_errors: c[7],
        rx_frame_err: u64::MAX,
        rx_over_err: u64::MAX,
        rx_crc_err: u64::MAX,
        collisions: u64::MAX,
        duration_sec,
        duration_nsec,
    };
    while !e.is_empty() {
        let (ty, mut b) = pull_prop(&mut e)?;
        if ty == 0 {
            if b.remaining() != 36 {
                return Err(bad_property(1, "ethernet port-stats property length"));
            }
            b.skip(4)?;
            s.rx_frame_err = b.u64()?;
            s.rx_over_err = b.u64()?;
            s.rx_crc_err = b.u64()?;
            s.collisions = b.u64()?;
        }
    }
    Ok(s)
}

/// `ofp14_queue_stats` (48 bytes).
pub fn encode_queue_stats(q: &QueueStats, out: &mut Vec<u8>) {
    out.put_u16(48);
    zeros(out, 6);
    q.encode(out);
}

/// Reads one `ofp14_queue_stats` (properties, none defined, skipped).
pub fn decode_queue_stats(r: &mut Reader<'_>) -> Result<QueueStats> {
    let mut e = entry(r, 0, 48)?;
    e.skip(8)?;
    let q = QueueStats::decode(&mut e)?;
    Ok(q)
}

/// Property types of the async configuration: (slave, master) for
/// packet-in, port-status, flow-removed.
const ASYNC_PROPS: [(u16, u16); 3] = [(0, 1), (2, 3), (4, 5)];

fn encode_async(a: &AsyncConfig, out: &mut Vec<u8>) {
    let masks = [a.packet_in_mask, a.port_status_mask, a.flow_removed_mask];
    for ((slave, master), m) in ASYNC_PROPS.iter().zip(masks) {
        for (ty, v) in [(*slave, m[1]), (*master, m[0])] {
            out.put_u16(ty);
            out.put_u16(8);
            out.put_u32(v);
        }
    }
}

/// The spec's default asynchronous configuration (the agent's).
pub fn default_async() -> AsyncConfig {
    AsyncConfig {
        packet_in_mask: [0b111, 0],
        port_status_mask: [0b111, 0b111],
        flow_removed_mask: [0b1111, 0],
    }
}

fn decode_async(r: &mut Reader<'_>) -> Result<AsyncConfig> {
    let mut a = default_async();
    while !r.is_empty() {
        let (ty, mut b) = pull_prop(r)?;
        let slot = match ty {
            0..=5 => {
                let m = match ty / 2 {
                    0 => &mut a.packet_in_mask,
                    1 => &mut a.port_status_mask,
                    _ => &mut a.flow_removed_mask,
                };
                // Odd types are the master's (index 0), even the slave's.
                Some(&mut m[usize::from(ty % 2 == 0)])
            }
            6..=11 | 0xfffe | 0xffff => None,
            _ => return Err(bad_property(0, "async property sluice does not know")),
        };
        if ty < 0xfffe && b.remaining() != 4 {
            return Err(bad_property(1, "async property length"));
        }
        if let Some(slot) = slot {
            *slot = b.u32()?;
        }
    }
    Ok(a)
}

fn decode_error(r: &mut Reader<'_>) -> Result<ErrorMsg> {
    let mut e = ErrorMsg::decode(r)?;
    e.code = match e.code.type_code() {
        (17, c) => ErrorCode::bundle(BundleFailedCode::from(c)),
        (1, 14) => crate::error::OFPBRC_MULTIPART_REQUEST_TIMEOUT,
        (14, 5) => crate::error::OFPBPC_BAD_EXPERIMENTER,
        (14, 6) => crate::error::OFPBPC_BAD_EXP_TYPE,
        (16, 1) => monitor::OFPMOFC_MONITOR_EXISTS,
        (16, 3) => monitor::OFPMOFC_UNKNOWN_MONITOR,
        (16, 5) => monitor::OFPMOFC_BAD_FLAGS,
        _ => e.code,
    };
    Ok(e)
}

/// The 1.4 `(type, code)` of an internal error code.
pub(crate) fn error_type_code(code: ErrorCode) -> (u16, u16) {
    if let Some(b) = code.bundle_code() {
        return (17, b.value());
    }
    match code {
        c if c == crate::error::OFPBRC_MULTIPART_REQUEST_TIMEOUT => (1, 14),
        c if c == crate::error::OFPBPC_BAD_EXPERIMENTER => (14, 5),
        c if c == crate::error::OFPBPC_BAD_EXP_TYPE => (14, 6),
        c if c == monitor::OFPMOFC_MONITOR_EXISTS => (16, 1),
        c if c == monitor::OFPMOFC_UNKNOWN_MONITOR => (16, 3),
        c if c == monitor::OFPMOFC_BAD_FLAGS => (16, 5),
        c => c.type_code(),
    }
}

fn encode_error(e: &ErrorMsg, out: &mut Vec<u8>) {
    let (ty, code) = error_type_code(e.code);
    out.put_u16(ty);
    out.put_u16(code);
    if ty == 0xffff {
        if let ErrorCode::Experimenter { experimenter, .. } = e.code {
            out.put_u32(experimenter);
        }
    }
    out.extend_from_slice(&e.data);
}

fn decode_bundle_add(r: &mut Reader<'_>, xid: u32, version: Version) -> Result<Message> {
    let e = ExperimenterMsg {
        experimenter: ONF_EXPERIMENTER,
        exp_type: BUNDLE_ADD_MESSAGE,
        data: r.rest(),
    };
    let Some(Ok(BundleMsg::Add(mut a))) = BundleMsg::decode(&e) else {
        // The structure is wrong: the internal decoder's error is the answer.
        return match BundleMsg::decode(&e) {
            Some(Err(err)) => Err(err),
            _ => Ok(Message::Experimenter(e)),
        };
    };
    let _ = xid;
    // A bundle message inside a bundle is the agent's to refuse
    // (OFPBFC_MSG_UNSUP); it is kept as it is, which also bounds the
    // recursion.
    let nested = matches!(
        a.message.get(1),
        Some(&OFPT_BUNDLE_CONTROL) | Some(&OFPT_BUNDLE_ADD_MESSAGE)
    );
    // The inner message must be of the outer one's version (Open vSwitch
    // answers its extension error OFPBFC_BAD_VERSION; sluice the spec's
    // OFPBRC_BAD_VERSION, as a 1.3 bundle's inner message of another
    // version gets).
    if a.message.first() != Some(&version.wire()) {
        return Err(OfpError::new(
            ErrorCode::BadRequest(BadRequestCode::BadVersion),
            "the bundled message's version is not the bundle's",
        ));
    }
    if !nested {
        let (ih, inner) = super::decode(&a.message, version)?;
        // What the 1.3 form cannot say (1.5's bucket commands, bucket ids,
        // selection methods) is held as it came (`bundle::decode_held`).
        if !matches!(&inner, Message::GroupMod(g) if !g.fits_1_3()) {
            a.message = Bytes::from(inner.to_bytes(ih.xid));
        }
    }
    Ok(BundleMsg::Add(a).message())
}

/// Writes an ONF bundle message as native 33/34; None when it does not
/// parse (then it goes out as the experimenter message it is).
fn encode_bundle(
    e: &ExperimenterMsg,
    version: Version,
    _xid: u32,
    out: &mut Vec<u8>,
) -> Option<u8> {
    match BundleMsg::decode(e)? {
        Ok(BundleMsg::Control(_)) => {
            debug_assert_eq!(e.exp_type, BUNDLE_CONTROL);
            out.extend_from_slice(&e.data);
            Some(OFPT_BUNDLE_CONTROL)
        }
        Ok(BundleMsg::Add(a)) => {
            let inner = match Message::decode(&a.message) {
                Ok((_, Message::Experimenter(ref ie))) if BundleMsg::is_bundle(ie) => {
                    a.message.to_vec()
                }
                Ok((ih, m)) => {
                    let mut v = Vec::new();
                    super::encode(&m, version, ih.xid, &mut v).ok()?;
                    v
                }
                Err(_) => a.message.to_vec(),
            };
            out.put_u32(a.bundle_id);
            zeros(out, 2);
            out.put_u16(a.flags);
            let at = out.len();
            out.extend_from_slice(&inner);
            if !a.properties.is_empty() {
                let n = out.len() - at;
                zeros(out, crate::wire::pad8(n) - n);
                out.extend_from_slice(&a.properties);
            }
            Some(OFPT_BUNDLE_ADD_MESSAGE)
        }
        Err(_) => None,
    }
}
