//! Open vSwitch's Nicira flow formats: how an OpenFlow 1.0 connection
//! says flows with more than 1.0's twelve fields. ovs-ofctl, which speaks
//! 1.0 unless told otherwise, asks for them before any flow command
//! that needs them (`table=`, registers, `ct_state`, masked MACs, ...)
//! and before any dump. Laid out as Open vSwitch 3.1 writes them
//! (nicira-ext.h, lib/ofp-flow.c, lib/ofp-monitor.c, lib/ofp-protocol.c);
//! the match is [`crate::oxm::nxm`], the actions 1.0's
//! ([`crate::of10::action10`]). All are Nicira VENDOR messages
//! (experimenter 0x00002320):
//!
//! * `NXT_SET_FLOW_FORMAT` (12, [`FlowFormat`]): a `u32`, 0 OpenFlow10 or
//!   2 NXM: the match the connection's flow messages carry from now on.
//!   Any other number (OXM's, 1) is `OFPBRC_EPERM`, as Open vSwitch
//!   answers (`ofputil_decode_nx_set_flow_format` knows only these two).
//! * `NXT_FLOW_MOD_TABLE_ID` (15): a `u8` (non-zero: on) and 7 bytes of
//!   padding: the high byte of a flow mod's 16-bit command is then its
//!   table id (0xff: none named).
//! * `NXT_FLOW_MOD` (13, [`decode_flow_mod`]): `nx_flow_mod` (cookie,
//!   command, idle and hard timeouts, priority, buffer_id, a 16-bit
//!   out_port, flags, match_len, 6 bytes of padding), the nx_match, 1.0
//!   actions. Read as Open vSwitch's `ofputil_decode_flow_mod`: the
//!   command and flags as OFPT_FLOW_MOD's (a command above 4
//!   `OFPFMFC_BAD_COMMAND`, `EMERG` refused), no exact-match priority
//!   rule; `NXM_NX_COOKIE` in the match is the cookie a MODIFY or DELETE
//!   matches (in an ADD, `NXBRC_NXM_INVALID`), and the message's cookie
//!   is an ADD's new cookie.
//! * `NXST_FLOW` (0) and `NXST_AGGREGATE` (1) requests
//!   ([`decode_stats_request`]): `nx_flow_stats_request` (a 16-bit
//!   out_port, match_len, table_id, 3 bytes of padding) and the
//!   nx_match, inside 1.0's vendor stats message.
//! * `NXST_FLOW` replies: `nx_flow_stats` entries ([`put_flow_stats`]:
//!   length, table_id, pad, durations, priority, timeouts, match_len,
//!   idle_age, hard_age, cookie, counters, the nx_match, 1.0 actions).
//!   The ages are seconds plus one, 0 meaning unknown, as Open vSwitch
//!   writes them.
//! * `NXST_AGGREGATE` replies: OFPST_AGGREGATE's body (packets, bytes,
//!   flows, 4 bytes of padding).
//! * `NXT_FLOW_REMOVED` (14, [`flow_removed`]): cookie, priority, reason,
//!   the table id plus one, durations, idle_timeout, match_len, counters,
//!   the nx_match. Sent instead of OFPT_FLOW_REMOVED to a 1.0 connection
//!   in the NXM format.
//!
//! * The flow monitor (NXST_FLOW_MONITOR, NXT_FLOW_MONITOR_CANCEL,
//!   _PAUSED, _RESUMED): [`monitor`].
//!
//! Which versions take them is Open vSwitch's (include/openvswitch/
//! ofp-msgs.h): NXT_SET_FLOW_FORMAT and the NXST requests 1.0 only,
//! NXT_FLOW_MOD_TABLE_ID and NXT_FLOW_MOD 1.0 and later (the agent
//! decides; see docs/OVS-DIALECT.md).

use bytes::{BufMut, Bytes};

use crate::error::{BadRequestCode, ErrorCode, OfpError, Result};
use crate::msg::flow::{FlowMod, FlowRemoved, FlowRemovedReason};
use crate::msg::multipart::{
    AggregateStats, FlowStats, FlowStatsRequest, MultipartReply, MultipartReplyBody,
    MultipartRequest, MultipartRequestBody,
};
use crate::msg::simple::ExperimenterMsg;
use crate::msg::Message;
use crate::of10::action10::{self, Ctx};
use crate::of10::port10::{port_from_10, port_to_10};
use crate::of10::{flow_mod_command_flags, set_table};
use crate::oxm::nxm::{self, Strictness};
use crate::port::{group_no, TABLE_ALL};
use crate::wire::{patch_len, zeros, Reader};

pub use crate::action::NX_VENDOR_ID;

/// exp_type of NXT_SET_FLOW_FORMAT.
pub const NXT_SET_FLOW_FORMAT: u32 = 12;
/// exp_type of NXT_FLOW_MOD.
pub const NXT_FLOW_MOD: u32 = 13;
/// exp_type of NXT_FLOW_REMOVED.
pub const NXT_FLOW_REMOVED: u32 = 14;
/// exp_type of NXT_FLOW_MOD_TABLE_ID.
pub const NXT_FLOW_MOD_TABLE_ID: u32 = 15;
/// The Nicira stats subtype of NXST_FLOW.
pub const NXST_FLOW: u32 = 0;
/// The Nicira stats subtype of NXST_AGGREGATE.
pub const NXST_AGGREGATE: u32 = 1;

/// Open vSwitch's `NXBRC_NXM_INVALID` ("NX1.2+(1)"; under 1.0 the Nicira
/// vendor error (1, 256)): an ADD that matches a cookie.
pub const NXBRC_NXM_INVALID: ErrorCode = ErrorCode::Experimenter {
    exp_type: 1,
    experimenter: NX_VENDOR_ID,
};

/// `nx_flow_stats`'s fixed part.
const FLOW_STATS_LEN: usize = 48;

crate::macros::wire_enum! {
    /// The flow formats of NXT_SET_FLOW_FORMAT (`NXFF_*`), named as
    /// ovs-ofctl names them.
    pub enum FlowFormat: u32 {
        OpenFlow10 = 0 => "openflow10",
        Nxm = 2 => "nxm",
    }
}

fn bad_len(why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BAD_LEN, why)
}

fn nicira(exp_type: u32, data: Vec<u8>) -> ExperimenterMsg {
    ExperimenterMsg {
        experimenter: NX_VENDOR_ID,
        exp_type,
        data: data.into(),
    }
}

/// Reads NXT_SET_FLOW_FORMAT's body.
pub fn decode_set_flow_format(data: &[u8]) -> Result<FlowFormat> {
    let b: [u8; 4] = data
        .try_into()
        .map_err(|_| bad_len("set_flow_format: body is not 4 bytes"))?;
    match FlowFormat::from(u32::from_be_bytes(b)) {
        FlowFormat::Unknown(_) => Err(OfpError::new(
            ErrorCode::BadRequest(BadRequestCode::Eperm),
            "set_flow_format: only openflow10 (0) and nxm (2)",
        )),
        f => Ok(f),
    }
}

/// NXT_SET_FLOW_FORMAT.
pub fn set_flow_format(f: FlowFormat) -> Message {
    Message::Experimenter(nicira(
        NXT_SET_FLOW_FORMAT,
        u32::from(f).to_be_bytes().to_vec(),
    ))
}

/// Reads NXT_FLOW_MOD_TABLE_ID's body: whether it turns the table id on.
pub fn decode_flow_mod_table_id(data: &[u8]) -> Result<bool> {
    match data {
        [set, _, _, _, _, _, _, _] => Ok(*set != 0),
        _ => Err(bad_len("flow_mod_table_id: body is not 8 bytes")),
    }
}

/// NXT_FLOW_MOD_TABLE_ID.
pub fn flow_mod_table_id(on: bool) -> Message {
    let mut b = vec![0; 8];
    b[0] = on as u8;
    Message::Experimenter(nicira(NXT_FLOW_MOD_TABLE_ID, b))
}

/// Reads NXT_FLOW_MOD's body (module doc) into the internal flow mod;
/// `table_id_on`: the connection turned NXT_FLOW_MOD_TABLE_ID on.
pub fn decode_flow_mod(data: &Bytes, table_id_on: bool) -> Result<FlowMod> {
    let mut r = Reader::new(data, ErrorCode::BAD_LEN);
    let cookie = r.u64()?;
    let command = r.u16()?;
    let idle_timeout = r.u16()?;
    let hard_timeout = r.u16()?;
    let priority = r.u16()?;
    let buffer_id = r.u32()?;
    let out_port = port_from_10(r.u16()?);
    let flags = r.u16()?;
    let match_len = r.u16()? as usize;
    r.skip(6)?;
    let m = nxm::decode(&mut r, match_len, Strictness::Strict)?;
    let (table, command) = if table_id_on {
        ((command >> 8) as u8, command & 0xff)
    } else {
        (TABLE_ALL, command)
    };
    let (command, flags) = flow_mod_command_flags(command, flags, idle_timeout, hard_timeout)?;
    let add = command == crate::FlowModCommand::Add;
    if add && m.cookie_mask != 0 {
        return Err(OfpError::new(
            NXBRC_NXM_INVALID,
            "an added flow cannot match a cookie",
        ));
    }
    let instructions = action10::decode_instructions(&mut r, Ctx::of_match(&m.match_))?;
    let delete = matches!(
        command,
        crate::FlowModCommand::Delete | crate::FlowModCommand::DeleteStrict
    );
    let mut fm = FlowMod {
        cookie: if add { cookie } else { m.cookie },
        cookie_mask: if add { 0 } else { m.cookie_mask },
        table_id: if delete { TABLE_ALL } else { 0 },
        command,
        idle_timeout,
        hard_timeout,
        priority,
        buffer_id,
        out_port,
        out_group: group_no::ANY,
        flags,
        match_: m.match_,
        instructions,
    };
    set_table(&mut fm, table);
    Ok(fm)
}

/// NXT_FLOW_MOD for `fm`, as ovs-ofctl writes it (the table id in the
/// command when `table_id_on`; a MODIFY's or DELETE's cookie as
/// `NXM_NX_COOKIE`).
pub fn flow_mod(fm: &FlowMod, table_id_on: bool) -> Message {
    let mut b = Vec::new();
    let add = fm.command == crate::FlowModCommand::Add;
    b.put_u64(if add { fm.cookie } else { u64::MAX });
    let cmd = u16::from(fm.command.value());
    b.put_u16(if table_id_on {
        (fm.table_id as u16) << 8 | cmd
    } else {
        cmd
    });
    b.put_u16(fm.idle_timeout);
    b.put_u16(fm.hard_timeout);
    b.put_u16(fm.priority);
    b.put_u32(fm.buffer_id);
    b.put_u16(port_to_10(fm.out_port));
    b.put_u16(fm.flags & 3);
    let at = b.len();
    b.put_u16(0);
    zeros(&mut b, 6);
    let (c, m) = if add {
        (0, 0)
    } else {
        (fm.cookie, fm.cookie_mask)
    };
    let len = nxm::encode(&fm.match_, c, m, &mut b);
    b[at..at + 2].copy_from_slice(&(len as u16).to_be_bytes());
    action10::encode_instructions(&fm.instructions, &mut b);
    Message::Experimenter(nicira(NXT_FLOW_MOD, b))
}

/// Reads an NXST_FLOW or NXST_AGGREGATE request's body (after the
/// subtype and its padding).
pub fn decode_stats_request(data: &Bytes) -> Result<FlowStatsRequest> {
    let mut r = Reader::new(data, ErrorCode::BAD_LEN);
    let out_port = port_from_10(r.u16()?);
    let match_len = r.u16()? as usize;
    let table_id = r.u8()?;
    r.skip(3)?;
    let m = nxm::decode(&mut r, match_len, Strictness::Strict)?;
    r.finish(ErrorCode::BAD_LEN)?;
    Ok(FlowStatsRequest {
        table_id,
        out_port,
        out_group: group_no::ANY,
        cookie: m.cookie,
        cookie_mask: m.cookie_mask,
        match_: m.match_,
    })
}

/// An NXST_FLOW (`subtype` [`NXST_FLOW`]) or NXST_AGGREGATE request.
pub fn stats_request(subtype: u32, req: &FlowStatsRequest) -> Message {
    let mut b = Vec::new();
    b.put_u16(port_to_10(req.out_port));
    let at = b.len();
    b.put_u16(0);
    b.put_u8(req.table_id);
    zeros(&mut b, 3);
    let len = nxm::encode(&req.match_, req.cookie, req.cookie_mask, &mut b);
    b[at..at + 2].copy_from_slice(&(len as u16).to_be_bytes());
    Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::Experimenter(nicira(subtype, b)),
    })
}

/// Appends one `nx_flow_stats` entry (module doc).
pub fn put_flow_stats(fs: &FlowStats, out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u16(0);
    out.put_u8(fs.table_id);
    out.put_u8(0);
    out.put_u32(fs.duration_sec);
    out.put_u32(fs.duration_nsec);
    out.put_u16(fs.priority);
    out.put_u16(fs.idle_timeout);
    out.put_u16(fs.hard_timeout);
    let at = out.len();
    out.put_u16(0);
    out.put_u16(age_on_wire(fs.idle_age));
    out.put_u16(age_on_wire(fs.hard_age));
    out.put_u64(fs.cookie);
    out.put_u64(fs.packet_count);
    out.put_u64(fs.byte_count);
    let len = nxm::encode(&fs.match_, 0, 0, out);
    out[at..at + 2].copy_from_slice(&(len as u16).to_be_bytes());
    action10::encode_instructions(&fs.instructions, out);
    patch_len(out, start, start);
}

/// An age as `nx_flow_stats` carries it: 0 unknown, else seconds plus
/// one, saturating at 65 535.
fn age_on_wire(age: Option<u32>) -> u16 {
    age.map_or(0, |a| a.saturating_add(1).min(u16::MAX as u32) as u16)
}

/// An age read from `nx_flow_stats` ([`age_on_wire`]'s inverse).
fn age_from_wire(v: u16) -> Option<u32> {
    v.checked_sub(1).map(u32::from)
}

/// Reads one `nx_flow_stats` entry (its match as loosely as ovs-ofctl
/// reads a reply).
pub fn decode_flow_stats(r: &mut Reader<'_>) -> Result<FlowStats> {
    let len = r.u16()? as usize;
    if len < FLOW_STATS_LEN {
        return Err(bad_len("nx_flow_stats shorter than its header"));
    }
    let mut e = r.sub(len - 2, ErrorCode::BAD_LEN)?;
    let table_id = e.u8()?;
    e.skip(1)?;
    let duration_sec = e.u32()?;
    let duration_nsec = e.u32()?;
    let priority = e.u16()?;
    let idle_timeout = e.u16()?;
    let hard_timeout = e.u16()?;
    let match_len = e.u16()? as usize;
    let idle_age = age_from_wire(e.u16()?);
    let hard_age = age_from_wire(e.u16()?);
    let cookie = e.u64()?;
    let packet_count = e.u64()?;
    let byte_count = e.u64()?;
    let m = nxm::decode(&mut e, match_len, Strictness::Loose)?;
    let instructions = action10::decode_instructions(&mut e, Ctx::of_match(&m.match_))?;
    Ok(FlowStats {
        idle_age,
        hard_age,
        table_id,
        duration_sec,
        duration_nsec,
        priority,
        idle_timeout,
        hard_timeout,
        flags: 0,
        cookie,
        packet_count,
        byte_count,
        match_: m.match_,
        instructions,
    })
}

/// An NXST_FLOW reply of `entries` (each from [`put_flow_stats`]; they
/// must fit one message), REPLY_MORE set when `more`.
pub fn flow_stats_reply(entries: Vec<u8>, more: bool) -> Message {
    Message::MultipartReply(MultipartReply {
        flags: more as u16,
        body: MultipartReplyBody::Experimenter(nicira(NXST_FLOW, entries)),
    })
}

/// An NXST_AGGREGATE reply.
pub fn aggregate_reply(a: &AggregateStats) -> Message {
    let mut b = Vec::new();
    a.encode(&mut b);
    Message::MultipartReply(MultipartReply {
        flags: 0,
        body: MultipartReplyBody::Experimenter(nicira(NXST_AGGREGATE, b)),
    })
}

/// NXT_FLOW_REMOVED for `f`.
pub fn flow_removed(f: &FlowRemoved) -> Message {
    let mut b = Vec::new();
    b.put_u64(f.cookie);
    b.put_u16(f.priority);
    b.put_u8(f.reason.value());
    b.put_u8(f.table_id.wrapping_add(1));
    b.put_u32(f.duration_sec);
    b.put_u32(f.duration_nsec);
    b.put_u16(f.idle_timeout);
    let at = b.len();
    b.put_u16(0);
    b.put_u64(f.packet_count);
    b.put_u64(f.byte_count);
    let len = nxm::encode(&f.match_, 0, 0, &mut b);
    b[at..at + 2].copy_from_slice(&(len as u16).to_be_bytes());
    Message::Experimenter(nicira(NXT_FLOW_REMOVED, b))
}

/// Reads NXT_FLOW_REMOVED's body: a table id of 0 ("unknown", Open
/// vSwitch before 1.11) is `TABLE_ALL`; hard_timeout is 0 (not sent).
pub fn decode_flow_removed(data: &Bytes) -> Result<FlowRemoved> {
    let mut r = Reader::new(data, ErrorCode::BAD_LEN);
    let cookie = r.u64()?;
    let priority = r.u16()?;
    let reason = FlowRemovedReason::from(r.u8()?);
    let table_id = r.u8()?.wrapping_sub(1);
    let duration_sec = r.u32()?;
    let duration_nsec = r.u32()?;
    let idle_timeout = r.u16()?;
    let match_len = r.u16()? as usize;
    let packet_count = r.u64()?;
    let byte_count = r.u64()?;
    let m = nxm::decode(&mut r, match_len, Strictness::Loose)?;
    r.finish(ErrorCode::BAD_LEN)?;
    Ok(FlowRemoved {
        cookie,
        priority,
        reason,
        table_id,
        duration_sec,
        duration_nsec,
        idle_timeout,
        hard_timeout: 0,
        packet_count,
        byte_count,
        match_: m.match_,
    })
}

pub mod monitor;

#[cfg(test)]
mod tests;
