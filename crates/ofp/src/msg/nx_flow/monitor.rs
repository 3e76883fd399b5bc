//! Open vSwitch's flow monitor in Nicira's form (what plain `ovs-ofctl
//! monitor br0 watch:` speaks, OpenFlow 1.0) and in OpenFlow 1.4's
//! (`-O OpenFlow14`, [`decode_requests_14`], [`put_update_14`],
//! [`reply_14`]: `ofp14_flow_monitor_request` with its ADD, MODIFY and
//! DELETE commands and an OXM match, `ofp_flow_update_*` with the
//! INITIAL event, instructions, and PAUSED and RESUMED as events; read
//! and written as whole frames by the agent, since the 1.3-shaped
//! `Message` has no form for them): laid out as nicira-ext.h,
//! openflow-1.4.h and lib/ofp-monitor.c (Open vSwitch 3.1) lay them out.
//!
//! * `NXST_FLOW_MONITOR` request (Nicira stats subtype 2,
//!   [`decode_requests`]): zero or more `nx_flow_monitor_request` (id,
//!   `NXFMF_*` flags, a 16-bit out_port, match_len, table_id, 5 bytes that
//!   must be zero), each followed by its nx_match padded to 8 bytes.
//!   Refused as Open vSwitch refuses: no ADD, DELETE or MODIFY flag, or an
//!   unknown flag, `OFPMOFC_BAD_FLAGS`; non-zero padding
//!   `NXBRC_MUST_BE_ZERO`; a short entry `OFPBRC_BAD_LEN`; a cookie in the
//!   match `OFPBMC_BAD_FIELD` (the monitor's nx_match has no cookie).
//! * `NXST_FLOW_MONITOR` reply ([`put_update`], [`decode_updates`]): a
//!   list of updates, each a multiple of 8 bytes: `nx_flow_update_full`
//!   (length, event ADDED 0 / DELETED 1 / MODIFIED 2, reason, priority,
//!   idle and hard timeouts, match_len, table_id, pad, cookie; the
//!   nx_match padded to 8; 1.0 actions unless none were asked for or the
//!   flow was deleted) or `nx_flow_update_abbrev` (length 8, event
//!   ABBREV 3, the xid of the request that made the change). The reply to
//!   the request carries its xid and the initial flows (event ADDED);
//!   later updates come as more replies with xid 0.
//! * `NXT_FLOW_MONITOR_CANCEL` (21, [`decode_cancel`]): a monitor's id.
//! * `NXT_FLOW_MONITOR_PAUSED` (22) and `NXT_FLOW_MONITOR_RESUMED` (23):
//!   empty; what they mean is the agent's (`agent::monitor`).
//!
//! The errors only Open vSwitch names have Nicira codes under 1.0
//! (`NX1.0-1.1(1,517)` and so on, [`crate::of10::error10`]) and their
//! 1.2-1.3 experimenter codes here.

use bytes::{BufMut, Bytes};

use super::{nicira, NX_VENDOR_ID};
use crate::error::{BadMatchCode, ErrorCode, OfpError, Result};
use crate::instruction::Instruction;
use crate::msg::multipart::{
    MultipartReply, MultipartReplyBody, MultipartRequest, MultipartRequestBody,
};
use crate::msg::Message;
use crate::of10::action10::{self, Ctx};
use crate::of10::port10::{port_from_10, port_to_10};
use crate::oxm::nxm::{self, Strictness};
use crate::oxm::Match;
use crate::wire::{patch_len, zeros, Reader};

/// The Nicira stats subtype of NXST_FLOW_MONITOR.
pub const NXST_FLOW_MONITOR: u32 = 2;
/// exp_type of NXT_FLOW_MONITOR_CANCEL.
pub const NXT_FLOW_MONITOR_CANCEL: u32 = 21;
/// exp_type of NXT_FLOW_MONITOR_PAUSED.
pub const NXT_FLOW_MONITOR_PAUSED: u32 = 22;
/// exp_type of NXT_FLOW_MONITOR_RESUMED.
pub const NXT_FLOW_MONITOR_RESUMED: u32 = 23;

/// `nx_flow_monitor_request` flags (`NXFMF_*`).
pub mod flags {
    /// The flows that match now, in the reply.
    pub const INITIAL: u16 = 1 << 0;
    /// Matching flows as they are added.
    pub const ADD: u16 = 1 << 1;
    /// Matching flows as they are removed.
    pub const DELETE: u16 = 1 << 2;
    /// Matching flows as they are changed.
    pub const MODIFY: u16 = 1 << 3;
    /// Updates carry the flows' actions.
    pub const ACTIONS: u16 = 1 << 4;
    /// The connection's own changes in full, not abbreviated.
    pub const OWN: u16 = 1 << 5;
    /// Every flag there is.
    pub const ALL: u16 = INITIAL | ADD | DELETE | MODIFY | ACTIONS | OWN;
}

/// `OFPMOFC_MONITOR_EXISTS` ("NX1.0-1.1(1,517), NX1.2-1.3(6)"): a monitor
/// of that id is already running on the connection.
pub const OFPMOFC_MONITOR_EXISTS: ErrorCode = ErrorCode::Experimenter {
    exp_type: 6,
    experimenter: NX_VENDOR_ID,
};
/// `OFPMOFC_BAD_FLAGS` ("NX1.0-1.1(1,518), NX1.2-1.3(7)").
pub const OFPMOFC_BAD_FLAGS: ErrorCode = ErrorCode::Experimenter {
    exp_type: 7,
    experimenter: NX_VENDOR_ID,
};
/// `OFPMOFC_UNKNOWN_MONITOR` ("NX1.0-1.1(1,519), NX1.2-1.3(8)"): a
/// cancel of a monitor that is not running.
pub const OFPMOFC_UNKNOWN_MONITOR: ErrorCode = ErrorCode::Experimenter {
    exp_type: 8,
    experimenter: NX_VENDOR_ID,
};
/// `NXBRC_FM_BAD_EVENT` ("NX1.0-1.1(1,520), NX1.2+(9)"): a reply's update
/// of an unknown event.
pub const NXBRC_FM_BAD_EVENT: ErrorCode = ErrorCode::Experimenter {
    exp_type: 9,
    experimenter: NX_VENDOR_ID,
};

/// `nx_flow_monitor_request`'s fixed part.
const REQUEST_LEN: usize = 16;
/// `nx_flow_update_full`'s fixed part.
const FULL_LEN: usize = 24;
/// `nx_flow_update_abbrev`.
const ABBREV_LEN: usize = 8;

/// One monitor a controller asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorRequest {
    /// The controller's id for it (unique among its running monitors).
    pub id: u32,
    /// [`flags`].
    pub flags: u16,
    /// Only flows that output to this port (internal numbering;
    /// `port_no::ANY` for any).
    pub out_port: u32,
    /// One table, or `TABLE_ALL`.
    pub table_id: u8,
    /// Flows whose match is as specific as this one or more.
    pub match_: Match,
}

crate::macros::wire_enum! {
    /// The events of a full update (`NXFME_*`), named as ovs-ofctl
    /// prints them.
    pub enum UpdateEvent: u16 {
        Added = 0 => "ADDED",
        Deleted = 1 => "DELETED",
        Modified = 2 => "MODIFIED",
    }
}

/// `NXFME_ABBREV`.
const NXFME_ABBREV: u16 = 3;

/// A flow as an update reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FullUpdate {
    pub event: UpdateEvent,
    /// Why it was deleted (`OFPRR_*`); 0 for the other events.
    pub reason: u16,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub table_id: u8,
    pub cookie: u64,
    pub match_: Match,
    /// Empty unless the monitor asked for actions (never for a deletion).
    pub instructions: Vec<Instruction>,
}

/// One entry of an NXST_FLOW_MONITOR reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    Full(FullUpdate),
    /// A change the connection made itself: the xid of its request.
    Abbrev {
        xid: u32,
    },
}

fn bad_len(why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BAD_LEN, why)
}

/// Reads an NXST_FLOW_MONITOR request's body (after the subtype and its
/// padding): every monitor it asks for, in order.
pub fn decode_requests(data: &Bytes) -> Result<Vec<MonitorRequest>> {
    let mut r = Reader::new(data, ErrorCode::BAD_LEN);
    let mut out = Vec::new();
    while !r.is_empty() {
        if r.remaining() < REQUEST_LEN {
            return Err(bad_len("nx_flow_monitor_request: leftover bytes at end"));
        }
        let id = r.u32()?;
        let flags = r.u16()?;
        let out_port = port_from_10(r.u16()?);
        let match_len = r.u16()? as usize;
        let table_id = r.u8()?;
        let pad = r.slice(5)?;
        if flags & (flags::ADD | flags::DELETE | flags::MODIFY) == 0 || flags & !flags::ALL != 0 {
            return Err(OfpError::new(
                OFPMOFC_BAD_FLAGS,
                "flow monitor: needs add, delete or modify, and no unknown flag",
            ));
        }
        if pad.iter().any(|&b| b != 0) {
            return Err(OfpError::new(
                crate::action::NXBRC_MUST_BE_ZERO,
                "flow monitor: padding is not zero",
            ));
        }
        let m = nxm::decode(&mut r, match_len, Strictness::Strict)?;
        if m.cookie_mask != 0 {
            return Err(OfpError::new(
                ErrorCode::BadMatch(BadMatchCode::BadField),
                "flow monitor: a monitor matches no cookie",
            ));
        }
        out.push(MonitorRequest {
            id,
            flags,
            out_port,
            table_id,
            match_: m.match_,
        });
    }
    Ok(out)
}

/// An NXST_FLOW_MONITOR request for `reqs` (as ovs-ofctl writes one).
pub fn request(reqs: &[MonitorRequest]) -> Message {
    let mut b = Vec::new();
    for q in reqs {
        b.put_u32(q.id);
        b.put_u16(q.flags);
        b.put_u16(port_to_10(q.out_port));
        let at = b.len();
        b.put_u16(0);
        b.put_u8(q.table_id);
        zeros(&mut b, 5);
        let len = nxm::encode(&q.match_, 0, 0, &mut b);
        b[at..at + 2].copy_from_slice(&(len as u16).to_be_bytes());
    }
    Message::MultipartRequest(MultipartRequest {
        flags: 0,
        body: MultipartRequestBody::Experimenter(nicira(NXST_FLOW_MONITOR, b)),
    })
}

/// Appends one update to a reply body.
pub fn put_update(u: &Update, out: &mut Vec<u8>) {
    let start = out.len();
    match u {
        Update::Abbrev { xid } => {
            out.put_u16(ABBREV_LEN as u16);
            out.put_u16(NXFME_ABBREV);
            out.put_u32(*xid);
        }
        Update::Full(f) => {
            out.put_u16(0);
            out.put_u16(f.event.value());
            out.put_u16(f.reason);
            out.put_u16(f.priority);
            out.put_u16(f.idle_timeout);
            out.put_u16(f.hard_timeout);
            let at = out.len();
            out.put_u16(0);
            out.put_u8(f.table_id);
            out.put_u8(0);
            out.put_u64(f.cookie);
            let len = nxm::encode(&f.match_, 0, 0, out);
            out[at..at + 2].copy_from_slice(&(len as u16).to_be_bytes());
            action10::encode_instructions(&f.instructions, out);
            patch_len(out, start, start);
        }
    }
}

/// The bytes [`put_update`] appends for `u`.
pub fn update_len(u: &Update) -> usize {
    let mut v = Vec::new();
    put_update(u, &mut v);
    v.len()
}

/// Reads an NXST_FLOW_MONITOR reply's body (as loosely as ovs-ofctl
/// reads one: unknown match fields skipped).
pub fn decode_updates(data: &Bytes) -> Result<Vec<Update>> {
    let mut r = Reader::new(data, ErrorCode::BAD_LEN);
    let mut out = Vec::new();
    while !r.is_empty() {
        if r.remaining() < 4 {
            return Err(bad_len("nx_flow_update: leftover bytes at end"));
        }
        let len = r.peek_u16(0)? as usize;
        if len > r.remaining() || !len.is_multiple_of(8) || len < 4 {
            return Err(bad_len("nx_flow_update: bad length"));
        }
        let mut e = r.sub(len, ErrorCode::BAD_LEN)?;
        e.skip(2)?;
        let event = e.u16()?;
        if event == NXFME_ABBREV {
            if len != ABBREV_LEN {
                return Err(bad_len("nx_flow_update_abbrev is not 8 bytes"));
            }
            out.push(Update::Abbrev { xid: e.u32()? });
            continue;
        }
        let event = match UpdateEvent::from(event) {
            UpdateEvent::Unknown(_) => {
                return Err(OfpError::new(
                    NXBRC_FM_BAD_EVENT,
                    "nx_flow_update: unknown event",
                ))
            }
            ev => ev,
        };
        if len < FULL_LEN {
            return Err(bad_len("nx_flow_update_full shorter than its header"));
        }
        let reason = e.u16()?;
        let priority = e.u16()?;
        let idle_timeout = e.u16()?;
        let hard_timeout = e.u16()?;
        let match_len = e.u16()? as usize;
        let table_id = e.u8()?;
        e.skip(1)?;
        let cookie = e.u64()?;
        let m = nxm::decode(&mut e, match_len, Strictness::Loose)?;
        let instructions = action10::decode_instructions(&mut e, Ctx::of_match(&m.match_))?;
        out.push(Update::Full(FullUpdate {
            event,
            reason,
            priority,
            idle_timeout,
            hard_timeout,
            table_id,
            cookie,
            match_: m.match_,
            instructions,
        }));
    }
    Ok(out)
}

/// An NXST_FLOW_MONITOR reply of `body` (updates from [`put_update`];
/// they must fit one message), REPLY_MORE set when `more`.
pub fn reply(body: Vec<u8>, more: bool) -> Message {
    Message::MultipartReply(MultipartReply {
        flags: more as u16,
        body: MultipartReplyBody::Experimenter(nicira(NXST_FLOW_MONITOR, body)),
    })
}

/// The most update bytes one 1.0 reply carries: 65 535 less the headers
/// (8 of OpenFlow, 4 of stats type and flags, 4 vendor, 4 subtype, 4 pad).
pub const MAX_REPLY_BODY: usize = crate::header::MAX_MSG_LEN - 24;

/// Reads NXT_FLOW_MONITOR_CANCEL's body: the monitor's id.
pub fn decode_cancel(data: &[u8]) -> Result<u32> {
    let b: [u8; 4] = data
        .try_into()
        .map_err(|_| bad_len("flow_monitor_cancel: body is not 4 bytes"))?;
    Ok(u32::from_be_bytes(b))
}

/// NXT_FLOW_MONITOR_CANCEL of monitor `id`.
pub fn cancel(id: u32) -> Message {
    Message::Experimenter(nicira(NXT_FLOW_MONITOR_CANCEL, id.to_be_bytes().to_vec()))
}

/// NXT_FLOW_MONITOR_PAUSED.
pub fn paused() -> Message {
    Message::Experimenter(nicira(NXT_FLOW_MONITOR_PAUSED, Vec::new()))
}

/// NXT_FLOW_MONITOR_RESUMED.
pub fn resumed() -> Message {
    Message::Experimenter(nicira(NXT_FLOW_MONITOR_RESUMED, Vec::new()))
}

/// OpenFlow 1.4's multipart type of the flow monitor (OFPMP_FLOW_MONITOR).
pub const OFPMP_FLOW_MONITOR: u16 = 16;

/// `OFPFMF_*`: OpenFlow 1.4's flags. The first five are Nicira's
/// ([`flags`]); the last two are 1.4's own.
pub mod flags14 {
    /// `OFPFMF_NO_ABBREV`: refused, as Open vSwitch refuses it.
    pub const NO_ABBREV: u16 = 1 << 5;
    /// `OFPFMF_ONLY_OWN`, which Open vSwitch reads as Nicira's
    /// `NXFMF_OWN` (own changes in full; ovs-ofctl sets it by default)
    /// and sluice too.
    pub const ONLY_OWN: u16 = 1 << 6;
}

crate::macros::wire_enum! {
    /// `ofp14_flow_monitor_request`'s command (`OFPFMC_*`).
    pub enum MonitorCommand: u8 {
        Add = 0 => "add",
        Modify = 1 => "modify",
        Delete = 2 => "delete",
    }
}

/// `OFPMOFC_BAD_COMMAND` (OF1.4 (16,2)): a command 1.4 does not define.
pub const OFPMOFC_BAD_COMMAND_14: (u16, u16) = (16, 2);

/// One `ofp14_flow_monitor_request`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request14 {
    pub command: MonitorCommand,
    /// Its monitor, flags in Nicira's bits ([`flags`]; `ONLY_OWN` as
    /// `OWN`). A DELETE's carries only the id.
    pub monitor: MonitorRequest,
    /// `out_group` (only `OFPG_ANY` is followed: module doc).
    pub out_group: u32,
}

/// Reads an OFPMP_FLOW_MONITOR request's body (after the multipart
/// header): `ofp14_flow_monitor_request`s (monitor id, out_port,
/// out_group, flags, table_id, command) each followed by an OXM match.
/// Refused as Open vSwitch refuses (`ofputil_decode_flow_monitor_request`):
/// an ADD or MODIFY with no ADD/REMOVED/MODIFY flag or an unknown flag
/// (`NO_ABBREV` too) `OFPMOFC_BAD_FLAGS`; an unknown command
/// `OFPMOFC_BAD_COMMAND` (Open vSwitch ignores it).
pub fn decode_requests_14(data: &Bytes) -> Result<Vec<Request14>> {
    let mut r = Reader::new(data, ErrorCode::BAD_LEN);
    let mut out = Vec::new();
    while !r.is_empty() {
        if r.remaining() < REQUEST_LEN {
            return Err(bad_len("ofp14_flow_monitor_request: leftover bytes at end"));
        }
        let id = r.u32()?;
        let out_port = r.u32()?;
        let out_group = r.u32()?;
        let f = r.u16()?;
        let table_id = r.u8()?;
        let command = MonitorCommand::from(r.u8()?);
        let match_ = Match::decode(&mut r)?;
        let known = flags::INITIAL
            | flags::ADD
            | flags::DELETE
            | flags::MODIFY
            | flags::ACTIONS
            | flags14::ONLY_OWN;
        let nx = match command {
            MonitorCommand::Delete => 0,
            MonitorCommand::Add | MonitorCommand::Modify => {
                if f & (flags::ADD | flags::DELETE | flags::MODIFY) == 0 || f & !known != 0 {
                    return Err(OfpError::new(
                        OFPMOFC_BAD_FLAGS,
                        "flow monitor: needs add, removed or modify, and no unknown flag",
                    ));
                }
                (f & 0x1f)
                    | if f & flags14::ONLY_OWN != 0 {
                        flags::OWN
                    } else {
                        0
                    }
            }
            MonitorCommand::Unknown(_) => {
                let (t, c) = OFPMOFC_BAD_COMMAND_14;
                return Err(OfpError::new(
                    ErrorCode::Unknown { ty: t, code: c },
                    "flow monitor: unknown command",
                ));
            }
        };
        out.push(Request14 {
            command,
            monitor: MonitorRequest {
                id,
                flags: nx,
                out_port,
                table_id,
                match_,
            },
            out_group,
        });
    }
    Ok(out)
}

/// Appends one `ofp14_flow_monitor_request` (flags back in 1.4's bits).
pub fn put_request_14(q: &Request14, out: &mut Vec<u8>) {
    let m = &q.monitor;
    out.put_u32(m.id);
    out.put_u32(m.out_port);
    out.put_u32(q.out_group);
    let own = if m.flags & flags::OWN != 0 {
        flags14::ONLY_OWN
    } else {
        0
    };
    out.put_u16((m.flags & 0x1f) | own);
    out.put_u8(m.table_id);
    out.put_u8(q.command.value());
    m.match_.encode(out);
}

/// One entry of an OFPMP_FLOW_MONITOR reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update14 {
    /// A full update; `initial`: a flow listed in the reply to the
    /// request (`OFPFME_INITIAL`), else its event.
    Full {
        update: FullUpdate,
        initial: bool,
    },
    Abbrev {
        xid: u32,
    },
    /// `OFPFME_PAUSED`.
    Paused,
    /// `OFPFME_RESUMED`.
    Resumed,
}

/// Appends one `ofp_flow_update_*` of OpenFlow 1.4: full (length, event
/// INITIAL 0 / ADDED 1 / REMOVED 2 / MODIFIED 3, table_id, reason,
/// timeouts, priority, 4 zeros, cookie, the OXM match, the
/// instructions), abbreviated (8 bytes, event 4, xid), or paused and
/// resumed (8 bytes, event 5 or 6, 4 zeros).
pub fn put_update_14(u: &Update14, out: &mut Vec<u8>) {
    let start = out.len();
    match u {
        Update14::Abbrev { xid } => {
            out.put_u16(8);
            out.put_u16(4);
            out.put_u32(*xid);
        }
        Update14::Paused | Update14::Resumed => {
            out.put_u16(8);
            out.put_u16(if *u == Update14::Paused { 5 } else { 6 });
            zeros(out, 4);
        }
        Update14::Full { update: f, initial } => {
            let event = match (initial, f.event) {
                (true, _) => 0,
                (_, UpdateEvent::Added) => 1,
                (_, UpdateEvent::Deleted) => 2,
                _ => 3,
            };
            out.put_u16(0);
            out.put_u16(event);
            out.put_u8(f.table_id);
            out.put_u8(f.reason as u8);
            out.put_u16(f.idle_timeout);
            out.put_u16(f.hard_timeout);
            out.put_u16(f.priority);
            zeros(out, 4);
            out.put_u64(f.cookie);
            f.match_.encode(out);
            crate::instruction::encode_instructions(&f.instructions, out);
            patch_len(out, start, start);
        }
    }
}

/// Reads an OFPMP_FLOW_MONITOR reply's body (after the multipart header).
pub fn decode_updates_14(data: &Bytes) -> Result<Vec<Update14>> {
    let mut r = Reader::new(data, ErrorCode::BAD_LEN);
    let mut out = Vec::new();
    while !r.is_empty() {
        let len = r.peek_u16(0)? as usize;
        if len > r.remaining() || !len.is_multiple_of(8) || len < 8 {
            return Err(bad_len("ofp_flow_update: bad length"));
        }
        let mut e = r.sub(len, ErrorCode::BAD_LEN)?;
        e.skip(2)?;
        let event = e.u16()?;
        let fixed = |what: Update14| {
            if len == 8 {
                Ok(what)
            } else {
                Err(bad_len("ofp_flow_update: not 8 bytes"))
            }
        };
        out.push(match event {
            4 => fixed(Update14::Abbrev { xid: e.u32()? })?,
            5 => fixed(Update14::Paused)?,
            6 => fixed(Update14::Resumed)?,
            0..=3 => {
                if len < FULL_LEN {
                    return Err(bad_len("ofp_flow_update_full shorter than its header"));
                }
                let table_id = e.u8()?;
                let reason = u16::from(e.u8()?);
                let idle_timeout = e.u16()?;
                let hard_timeout = e.u16()?;
                let priority = e.u16()?;
                e.skip(4)?;
                let cookie = e.u64()?;
                let match_ = Match::decode(&mut e)?;
                let instructions = crate::instruction::decode_instructions(&mut e)?;
                let ev = match event {
                    2 => UpdateEvent::Deleted,
                    3 => UpdateEvent::Modified,
                    _ => UpdateEvent::Added,
                };
                Update14::Full {
                    update: FullUpdate {
                        event: ev,
                        reason,
                        priority,
                        idle_timeout,
                        hard_timeout,
                        table_id,
                        cookie,
                        match_,
                        instructions,
                    },
                    initial: event == 0,
                }
            }
            _ => {
                return Err(OfpError::new(
                    NXBRC_FM_BAD_EVENT,
                    "ofp_flow_update: unknown event",
                ))
            }
        });
    }
    Ok(out)
}

/// The most update bytes one 1.4 reply carries (65 535 less the 16 bytes
/// of the multipart header).
pub const MAX_REPLY_BODY_14: usize = crate::header::MAX_MSG_LEN - 16;

/// Appends a whole OFPMP_FLOW_MONITOR reply of OpenFlow `version` (wire
/// number) with `body` (at most [`MAX_REPLY_BODY_14`] bytes).
pub fn reply_14(version: u8, xid: u32, body: &[u8], more: bool, out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u8(version);
    out.put_u8(crate::header::MsgType::MultipartReply.value());
    out.put_u16(0);
    out.put_u32(xid);
    out.put_u16(OFPMP_FLOW_MONITOR);
    out.put_u16(more as u16);
    zeros(out, 4);
    out.extend_from_slice(body);
    patch_len(out, start + 2, start);
}

#[cfg(test)]
mod tests;
