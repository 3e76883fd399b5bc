//! OpenFlow 1.0 (wire version 1, spec 1.0.0) onto the 1.3-shaped
//! [`Message`], and back.
//!
//! [`decode`] reads a whole 1.0 frame into the internal message and
//! [`encode`] writes an internal message as 1.0 says it. Open vSwitch is
//! the reference for every choice the two versions leave open; the files
//! beside this one each translate one part and say where they follow it:
//! `match10` (`ofp_match`), `action10` (actions, and instructions as
//! actions), `port10` (port numbers, `ofp_phy_port`, PORT_MOD,
//! PORT_STATUS), `stats10` (STATS_REQUEST/REPLY) and `error10` (error
//! codes).
//!
//! The messages, 1.0 type number -> internal message:
//! * HELLO 0, ECHO_REQUEST 2 / REPLY 3, FEATURES_REQUEST 5,
//!   GET_CONFIG_REQUEST 7 / REPLY 8, SET_CONFIG 9: laid out as in 1.3.
//! * ERROR 1: the codes translated (`error10`).
//! * VENDOR 4: `Experimenter` (vendor, then a 32-bit subtype: Nicira's
//!   `nicira_header` is 1.3's experimenter header, so Nicira extension
//!   messages decode as under 1.3). A VENDOR shorter than that is
//!   `OFPBRC_BAD_LEN`.
//! * FEATURES_REPLY 6: datapath id, buffers, tables, 3 pad, capabilities,
//!   `actions`, then `ofp_phy_port`s into `FeaturesReply.ports`.
//!   Capabilities keep the bits both versions share (flow, table, port
//!   and queue stats, IP reassembly); writing adds `OFPC_ARP_MATCH_IP`
//!   (sluice matches ARP's addresses, as Open vSwitch says it does) and
//!   drops 1.3's group stats and port-blocked bits. `actions` is written as
//!   every 1.0 action (`action10::SUPPORTED_ACTIONS`, 0xfff) and not read
//!   (`reserved` is 0); `auxiliary_id` is 0.
//! * PACKET_IN 10: buffer_id, total_len, a 16-bit in_port, reason, pad,
//!   data. The internal match holds `in_port` only; writing takes it from
//!   the internal match's `in_port` (`OFPP_NONE` if there is none) and
//!   leaves the other match fields, the table id and the cookie out (1.0
//!   has no room for them; Open vSwitch's 1.0 packet-in drops them too).
//!   The reason is written as it is, 1.3's `INVALID_TTL` (2) too, and
//!   1.4's `ACTION_SET`, `GROUP` and `PACKET_OUT` (3-5) as `ACTION`, as
//!   Open vSwitch's `encode_packet_in_reason` does for 1.0.
//! * FLOW_REMOVED 11: match, cookie, priority, reason, durations,
//!   idle_timeout, counters. Read: table_id 255 and hard_timeout 0, as
//!   Open vSwitch's `ofputil_decode_flow_removed`; written without them.
//!   The reason is written as it is (1.3's `GROUP_DELETE`, 3, too), as
//!   Open vSwitch's `ofputil_encode_flow_removed` does for 1.0.
//! * PORT_STATUS 12, PORT_MOD 15: `port10`.
//! * PACKET_OUT 13: buffer_id, 16-bit in_port, actions_len, actions,
//!   data; the actions read with what the packet says (its VLAN tag and IP
//!   protocol) for set_vlan_* and set_tp_*, as Open vSwitch checks a
//!   packet-out's actions against the packet's flow.
//! * FLOW_MOD 14: read as Open vSwitch's `ofputil_decode_flow_mod` reads
//!   `OFPT10_FLOW_MOD`: an ADD goes to table 0 and DELETE (strict or not)
//!   applies to every table (table_id 0xff). Open vSwitch's MODIFY applies
//!   to every table too, but the internal MODIFY names one table (sluice's
//!   pipeline answers a MODIFY of table 0xff `OFPFMFC_BAD_TABLE_ID`, as
//!   1.3 says), so a 1.0 MODIFY is table 0's: the table every 1.0 ADD
//!   goes to. Flows other controllers put in other tables are not
//!   modified by a 1.0 MODIFY, where Open vSwitch would. The cookie is kept and
//!   `cookie_mask` is 0 (1.0 has no cookie filter); `out_group` is
//!   `OFPG_ANY`; an exact-match flow (no wildcard bit) gets priority
//!   0xffff whatever the message says; a command above 4 is
//!   `OFPFMFC_BAD_COMMAND`; flags other than `SEND_FLOW_REM`,
//!   `CHECK_OVERLAP` and `EMERG` are `OFPFMFC_BAD_FLAGS`; `EMERG` (the
//!   emergency flow cache, gone from 1.0.1) is `OFPFMFC_BAD_EMERG_TIMEOUT`
//!   with a timeout and `OFPFMFC_ALL_TABLES_FULL` without, as Open vSwitch
//!   answers; an ADD gets 1.3's `RESET_COUNTS` flag (1.0's ADD always
//!   resets the counters of the flow it replaces, its other commands
//!   never, as Open vSwitch's `ofputil_decode_flow_mod_flags` says); the
//!   actions become one apply_actions instruction (`action10`). Writing
//!   does the reverse (the table id and the flags 1.0 lacks are not
//!   written).
//! * STATS_REQUEST 16 / REPLY 17: `stats10`.
//! * BARRIER_REQUEST 18 / REPLY 19.
//! * QUEUE_GET_CONFIG_REQUEST 20: a 16-bit port; REPLY 21: port, 6 pad,
//!   `ofp_packet_queue`s (queue_id, len, 2 pad, properties). 1.0 has one
//!   property, `MIN_RATE`; the others (`MAX_RATE`, experimenter) are
//!   left out when writing and unknown ones skipped when reading. Each
//!   queue's internal `port` is the reply's.
//!
//! What the two cannot say to each other:
//! * 1.0's MODIFY of every table (above): table 0 only.
//! * 1.0's FLOW_MOD MODIFY adds the flow when none matches (Open vSwitch
//!   does so for 1.0), and sets the cookie of the flows it modifies. The
//!   internal [`crate::FlowMod`] has no field for either (its MODIFY is
//!   1.3's, which does neither), and giving it one would change the agent
//!   and the pipeline: left out. A 1.0 MODIFY that matches nothing
//!   changes nothing, and modified flows keep their cookie.
//! * Internal messages 1.0 has no form for (GROUP_MOD, TABLE_MOD,
//!   ROLE_REQUEST/REPLY, GET_ASYNC/SET_ASYNC, METER_MOD, and multipart
//!   types other than `stats10`'s) are not written: [`encode`] appends
//!   nothing and succeeds. A 1.0 controller cannot send the requests they
//!   answer (Open vSwitch's Nicira role and async messages travel as
//!   VENDOR messages, which pass through as `Experimenter`).
//! * The internal match, actions and instructions hold more than 1.0's:
//!   what is left out is listed in `match10` and `action10`.
//!
//! Encoding (see [`crate::Message::encode_as`]): a stats reply too long
//! for one 1.0 message is split into several, each flagged
//! `OFPSF_REPLY_MORE` (1, as 1.3's flag) but the last, which carries the
//! original's flags; [`TooLong`] only when one indivisible part (a
//! flow stats entry, a FEATURES_REPLY, ...) cannot fit. On error `out` is
//! as it was.

pub mod action10;
pub mod error10;
pub mod match10;
pub mod port10;
pub mod stats10;

use bytes::{BufMut, Bytes};

use crate::error::{BadRequestCode, ErrorCode, FlowModFailedCode, OfpError, Result};
use crate::header::{Header, HEADER_LEN, MAX_MSG_LEN};
use crate::instruction::Instruction;
use crate::msg::flow::{
    FlowMod, FlowModCommand, FlowRemoved, FlowRemovedReason, PacketIn, PacketInReason, PacketOut,
};
use crate::msg::multipart::MPF_MORE;
use crate::msg::simple::{
    capabilities, ExperimenterMsg, FeaturesReply, Hello, PacketQueue, QueueGetConfigReply,
    QueueProp, SwitchConfig,
};
use crate::msg::{check_frame, finish, Message, TooLong};
use crate::oxm::{Match, Oxm, OxmField};
use crate::port::{group_no, port_no, TABLE_ALL};
use crate::wire::{patch_len, zeros, Reader};

use action10::Ctx;
use match10::Match10;
use port10::{port_from_10, port_to_10};

/// OpenFlow 1.0's wire version.
pub const OFP10_VERSION: u8 = 1;

/// `ofp_type` of OpenFlow 1.0.
pub mod msg_type {
    pub const HELLO: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const ECHO_REQUEST: u8 = 2;
    pub const ECHO_REPLY: u8 = 3;
    pub const VENDOR: u8 = 4;
    pub const FEATURES_REQUEST: u8 = 5;
    pub const FEATURES_REPLY: u8 = 6;
    pub const GET_CONFIG_REQUEST: u8 = 7;
    pub const GET_CONFIG_REPLY: u8 = 8;
    pub const SET_CONFIG: u8 = 9;
    pub const PACKET_IN: u8 = 10;
    pub const FLOW_REMOVED: u8 = 11;
    pub const PORT_STATUS: u8 = 12;
    pub const PACKET_OUT: u8 = 13;
    pub const FLOW_MOD: u8 = 14;
    pub const PORT_MOD: u8 = 15;
    pub const STATS_REQUEST: u8 = 16;
    pub const STATS_REPLY: u8 = 17;
    pub const BARRIER_REQUEST: u8 = 18;
    pub const BARRIER_REPLY: u8 = 19;
    pub const QUEUE_GET_CONFIG_REQUEST: u8 = 20;
    pub const QUEUE_GET_CONFIG_REPLY: u8 = 21;
}

/// 1.0's `ofp_flow_mod_flags`.
pub mod flow_mod_flags10 {
    pub const SEND_FLOW_REM: u16 = 1;
    pub const CHECK_OVERLAP: u16 = 2;
    pub const EMERG: u16 = 4;
}

/// 1.0's `OFPC_ARP_MATCH_IP` capability.
pub const OFPC10_ARP_MATCH_IP: u32 = 1 << 7;
/// The capability bits 1.0 and 1.3 share.
const SHARED_CAPABILITIES: u32 = capabilities::FLOW_STATS
    | capabilities::TABLE_STATS
    | capabilities::PORT_STATS
    | capabilities::IP_REASM
    | capabilities::QUEUE_STATS;

/// Decodes a whole OpenFlow 1.0 frame. The header's `msg_type` is the
/// internal message's type (1.0 numbers some differently).
pub fn decode(frame: &Bytes) -> Result<(Header, Message)> {
    let h = check_frame(frame, OFP10_VERSION)?;
    let raw_type = frame[1];
    let mut r = Reader::new(frame, ErrorCode::BAD_LEN);
    r.skip(HEADER_LEN)?;
    let m = decode_body(raw_type, h.version, &mut r)?;
    r.finish(ErrorCode::BAD_LEN)?;
    Ok((
        Header {
            msg_type: m.msg_type(),
            ..h
        },
        m,
    ))
}

/// Decodes a whole OpenFlow 1.0 frame from a connection that turned
/// Nicira's NXT_FLOW_MOD_TABLE_ID on: as [`decode`], but an
/// OFPT_FLOW_MOD's command carries the table id in its high byte, as Open
/// vSwitch reads it then ([`set_table`]).
pub fn decode_table_id(frame: &Bytes) -> Result<(Header, Message)> {
    // The command's high byte: after the header, the match and
    // the cookie.
    const AT: usize = HEADER_LEN + match10::MATCH10_LEN + 8;
    if frame.len() <= AT || frame[1] != msg_type::FLOW_MOD {
        return decode(frame);
    }
    let table = frame[AT];
    let mut v = frame.to_vec();
    v[AT] = 0;
    let (h, mut m) = decode(&Bytes::from(v))?;
    if let Message::FlowMod(fm) = &mut m {
        set_table(fm, table);
    }
    Ok((h, m))
}

/// Puts a 1.0 flow mod (OFPT_FLOW_MOD or NXT_FLOW_MOD) in the table its
/// command's high byte names when NXT_FLOW_MOD_TABLE_ID is on. 0xff
/// (ovs-ofctl's "no `table=`") leaves the 1.0 default: an ADD or a
/// MODIFY goes to table 0, a DELETE to every table.
pub fn set_table(fm: &mut FlowMod, table: u8) {
    if table != TABLE_ALL {
        fm.table_id = table;
    }
}

fn decode_body(ty: u8, version: u8, r: &mut Reader<'_>) -> Result<Message> {
    use msg_type as T;
    use Message as M;
    Ok(match ty {
        T::HELLO => M::Hello(Hello::decode(version, r)?),
        T::ERROR => M::Error(error10::decode_error(r)?),
        T::ECHO_REQUEST => M::EchoRequest(r.rest()),
        T::ECHO_REPLY => M::EchoReply(r.rest()),
        T::VENDOR => M::Experimenter(ExperimenterMsg::decode(r)?),
        T::FEATURES_REQUEST => M::FeaturesRequest,
        T::FEATURES_REPLY => M::FeaturesReply(decode_features(r)?),
        T::GET_CONFIG_REQUEST => M::GetConfigRequest,
        T::GET_CONFIG_REPLY => M::GetConfigReply(SwitchConfig::decode(r)?),
        T::SET_CONFIG => M::SetConfig(SwitchConfig::decode(r)?),
        T::PACKET_IN => M::PacketIn(decode_packet_in(r)?),
        T::FLOW_REMOVED => M::FlowRemoved(decode_flow_removed(r)?),
        T::PORT_STATUS => M::PortStatus(port10::decode_port_status(r)?),
        T::PACKET_OUT => M::PacketOut(decode_packet_out(r)?),
        T::FLOW_MOD => M::FlowMod(decode_flow_mod(r)?),
        T::PORT_MOD => M::PortMod(port10::decode_port_mod(r)?),
        T::STATS_REQUEST => M::MultipartRequest(stats10::decode_request(r)?),
        T::STATS_REPLY => M::MultipartReply(stats10::decode_reply(r)?),
        T::BARRIER_REQUEST => M::BarrierRequest,
        T::BARRIER_REPLY => M::BarrierReply,
        T::QUEUE_GET_CONFIG_REQUEST => {
            let port = port_from_10(r.u16()?);
            r.skip(2)?;
            M::QueueGetConfigRequest { port }
        }
        T::QUEUE_GET_CONFIG_REPLY => M::QueueGetConfigReply(decode_queue_reply(r)?),
        _ => {
            return Err(OfpError::new(
                ErrorCode::BadRequest(BadRequestCode::BadType),
                "unknown OpenFlow 1.0 message type",
            ))
        }
    })
}

/// Appends `msg` as OpenFlow 1.0 writes it (module doc): nothing for a
/// message 1.0 has no form for; several messages for a stats reply too
/// long for one. On error `out` is as it was.
pub fn encode(msg: &Message, xid: u32, out: &mut Vec<u8>) -> std::result::Result<(), TooLong> {
    if let Message::Hello(_) = msg {
        return msg.try_encode(xid, out);
    }
    if let Message::MultipartReply(m) = msg {
        return encode_stats_reply(m, xid, out);
    }
    let start = out.len();
    let ty = match encode_body(msg, xid, out) {
        Some(t) => t,
        None => {
            out.truncate(start);
            return Ok(());
        }
    };
    out[start + 1] = ty;
    finish(out, start)
}

fn put_header(out: &mut Vec<u8>, ty: u8, xid: u32) {
    out.put_u8(OFP10_VERSION);
    out.put_u8(ty);
    out.put_u16(0);
    out.put_u32(xid);
}

/// Writes the header (type patched by the caller) and the body; the 1.0
/// type, or None when 1.0 has no form for the message.
fn encode_body(msg: &Message, xid: u32, out: &mut Vec<u8>) -> Option<u8> {
    use msg_type as T;
    use Message as M;
    put_header(out, 0, xid);
    Some(match msg {
        M::Hello(h) => {
            h.encode(out);
            T::HELLO
        }
        M::Error(e) => {
            error10::encode_error(e, out);
            T::ERROR
        }
        M::EchoRequest(d) => {
            out.extend_from_slice(d);
            T::ECHO_REQUEST
        }
        M::EchoReply(d) => {
            out.extend_from_slice(d);
            T::ECHO_REPLY
        }
        M::Experimenter(e) => {
            e.encode(out);
            T::VENDOR
        }
        M::FeaturesRequest => T::FEATURES_REQUEST,
        M::FeaturesReply(f) => {
            encode_features(f, out);
            T::FEATURES_REPLY
        }
        M::GetConfigRequest => T::GET_CONFIG_REQUEST,
        M::GetConfigReply(c) => {
            c.encode(out);
            T::GET_CONFIG_REPLY
        }
        M::SetConfig(c) => {
            c.encode(out);
            T::SET_CONFIG
        }
        M::PacketIn(p) => {
            encode_packet_in(p, out);
            T::PACKET_IN
        }
        M::FlowRemoved(f) => {
            encode_flow_removed(f, out);
            T::FLOW_REMOVED
        }
        M::PortStatus(p) => {
            port10::encode_port_status(p, out);
            T::PORT_STATUS
        }
        M::PacketOut(p) => {
            encode_packet_out(p, out);
            T::PACKET_OUT
        }
        M::FlowMod(f) => {
            encode_flow_mod(f, out);
            T::FLOW_MOD
        }
        M::PortMod(p) => {
            port10::encode_port_mod(p, out);
            T::PORT_MOD
        }
        M::MultipartRequest(m) => {
            if !stats10::encode_request(m, out) {
                return None;
            }
            T::STATS_REQUEST
        }
        M::BarrierRequest => T::BARRIER_REQUEST,
        M::BarrierReply => T::BARRIER_REPLY,
        M::QueueGetConfigRequest { port } => {
            out.put_u16(port_to_10(*port));
            zeros(out, 2);
            T::QUEUE_GET_CONFIG_REQUEST
        }
        M::QueueGetConfigReply(q) => {
            encode_queue_reply(q, out);
            T::QUEUE_GET_CONFIG_REPLY
        }
        M::MultipartReply(_)
        | M::GroupMod(_)
        | M::TableMod(_)
        | M::RoleRequest(_)
        | M::RoleReply(_)
        | M::GetAsyncRequest
        | M::GetAsyncReply(_)
        | M::SetAsync(_)
        | M::MeterMod(_) => return None,
    })
}

/// Writes a stats reply as one message or several (module doc).
fn encode_stats_reply(
    m: &crate::msg::multipart::MultipartReply,
    xid: u32,
    out: &mut Vec<u8>,
) -> std::result::Result<(), TooLong> {
    const FIXED: usize = HEADER_LEN + 4;
    let Some((ty, parts)) = stats10::reply_parts(m) else {
        return Ok(());
    };
    if let Some(p) = parts.iter().find(|p| FIXED + p.len() > MAX_MSG_LEN) {
        return Err(TooLong {
            len: FIXED + p.len(),
        });
    }
    // Group the parts into messages.
    let mut chunks: Vec<std::ops::Range<usize>> = Vec::new();
    let (mut from, mut size) = (0, FIXED);
    for (i, p) in parts.iter().enumerate() {
        if size + p.len() > MAX_MSG_LEN {
            chunks.push(from..i);
            from = i;
            size = FIXED;
        }
        size += p.len();
    }
    chunks.push(from..parts.len());
    let last = chunks.len() - 1;
    for (n, c) in chunks.into_iter().enumerate() {
        let start = out.len();
        put_header(out, msg_type::STATS_REPLY, xid);
        out.put_u16(ty);
        out.put_u16(if n == last {
            m.flags
        } else {
            m.flags | MPF_MORE
        });
        for p in &parts[c] {
            out.extend_from_slice(p);
        }
        patch_len(out, start + 2, start);
    }
    Ok(())
}

fn decode_features(r: &mut Reader<'_>) -> Result<FeaturesReply> {
    let datapath_id = r.u64()?;
    let n_buffers = r.u32()?;
    let n_tables = r.u8()?;
    r.skip(3)?;
    let capabilities = r.u32()? & SHARED_CAPABILITIES;
    let _actions = r.u32()?;
    let mut ports = Vec::with_capacity(r.remaining() / port10::PHY_PORT_LEN);
    while !r.is_empty() {
        ports.push(port10::decode_phy_port(r)?);
    }
    Ok(FeaturesReply {
        datapath_id,
        n_buffers,
        n_tables,
        auxiliary_id: 0,
        capabilities,
        reserved: 0,
        ports,
    })
}

fn encode_features(f: &FeaturesReply, out: &mut Vec<u8>) {
    out.put_u64(f.datapath_id);
    out.put_u32(f.n_buffers);
    out.put_u8(f.n_tables);
    zeros(out, 3);
    out.put_u32(f.capabilities & SHARED_CAPABILITIES | OFPC10_ARP_MATCH_IP);
    out.put_u32(action10::SUPPORTED_ACTIONS);
    for p in &f.ports {
        port10::encode_phy_port(p, out);
    }
}

fn decode_packet_in(r: &mut Reader<'_>) -> Result<PacketIn> {
    let buffer_id = r.u32()?;
    let total_len = r.u16()?;
    let in_port = port_from_10(r.u16()?);
    let reason = PacketInReason::from(r.u8()?);
    r.skip(1)?;
    Ok(PacketIn {
        buffer_id,
        total_len,
        reason,
        table_id: 0,
        cookie: 0,
        match_: Match::new().with(Oxm::exact(OxmField::InPort, in_port.into())),
        data: r.rest(),
    })
}

fn encode_packet_in(p: &PacketIn, out: &mut Vec<u8>) {
    out.put_u32(p.buffer_id);
    out.put_u16(p.total_len);
    let in_port = p
        .match_
        .get(OxmField::InPort)
        .map_or(port_no::ANY, |o| o.value as u32);
    out.put_u16(port_to_10(in_port));
    // 1.4's ACTION_SET, GROUP and PACKET_OUT are ACTION before 1.4
    // (Open vSwitch's `encode_packet_in_reason`).
    out.put_u8(match p.reason.value() {
        3..=5 => PacketInReason::Action.value(),
        r => r,
    });
    out.put_u8(0);
    out.extend_from_slice(&p.data);
}

fn decode_flow_removed(r: &mut Reader<'_>) -> Result<FlowRemoved> {
    let m = Match10::decode(r)?;
    let cookie = r.u64()?;
    let priority = r.u16()?;
    let reason = FlowRemovedReason::from(r.u8()?);
    r.skip(1)?;
    let duration_sec = r.u32()?;
    let duration_nsec = r.u32()?;
    let idle_timeout = r.u16()?;
    r.skip(2)?;
    Ok(FlowRemoved {
        cookie,
        priority,
        reason,
        table_id: TABLE_ALL,
        duration_sec,
        duration_nsec,
        idle_timeout,
        hard_timeout: 0,
        packet_count: r.u64()?,
        byte_count: r.u64()?,
        match_: match10::from_10(&m),
    })
}

fn encode_flow_removed(f: &FlowRemoved, out: &mut Vec<u8>) {
    match10::to_10(&f.match_).encode(out);
    out.put_u64(f.cookie);
    out.put_u16(f.priority);
    out.put_u8(f.reason.value());
    out.put_u8(0);
    out.put_u32(f.duration_sec);
    out.put_u32(f.duration_nsec);
    out.put_u16(f.idle_timeout);
    zeros(out, 2);
    out.put_u64(f.packet_count);
    out.put_u64(f.byte_count);
}

fn decode_packet_out(r: &mut Reader<'_>) -> Result<PacketOut> {
    let buffer_id = r.u32()?;
    let in_port = port_from_10(r.u16()?);
    let actions_len = r.u16()? as usize;
    let mut a = r
        .sub(actions_len, ErrorCode::ACTION_BAD_LEN)
        .map_err(|_| OfpError::new(ErrorCode::BAD_LEN, "actions_len beyond message end"))?;
    let data = r.rest();
    let actions = action10::decode_actions(&mut a, Ctx::of_packet(&data))?;
    Ok(PacketOut {
        buffer_id,
        in_port,
        actions,
        data,
    })
}

fn encode_packet_out(p: &PacketOut, out: &mut Vec<u8>) {
    out.put_u32(p.buffer_id);
    out.put_u16(port_to_10(p.in_port));
    let at = out.len();
    out.put_u16(0);
    let start = out.len();
    action10::encode_actions(&p.actions, out);
    patch_len(out, at, start);
    out.extend_from_slice(&p.data);
}

fn decode_flow_mod(r: &mut Reader<'_>) -> Result<FlowMod> {
    let m10 = Match10::decode(r)?;
    let cookie = r.u64()?;
    let command = r.u16()?;
    let idle_timeout = r.u16()?;
    let hard_timeout = r.u16()?;
    let priority = r.u16()?;
    let buffer_id = r.u32()?;
    let out_port = port_from_10(r.u16()?);
    let flags = r.u16()?;
    let (command, flags) = flow_mod_command_flags(command, flags, idle_timeout, hard_timeout)?;
    let match_ = match10::from_10(&m10);
    let instructions: Vec<Instruction> = action10::decode_instructions(r, Ctx::of_match(&match_))?;
    Ok(FlowMod {
        cookie,
        cookie_mask: 0,
        // ADD and MODIFY: table 0; DELETE: every table (module doc).
        table_id: if matches!(
            command,
            FlowModCommand::Delete | FlowModCommand::DeleteStrict
        ) {
            TABLE_ALL
        } else {
            0
        },
        command,
        idle_timeout,
        hard_timeout,
        priority: if match10::is_exact(&m10) {
            u16::MAX
        } else {
            priority
        },
        buffer_id,
        out_port,
        out_group: group_no::ANY,
        flags,
        match_,
        instructions,
    })
}

/// A 1.0 flow mod's command and flags (OFPT_FLOW_MOD's, and NXT_FLOW_MOD's,
/// [`crate::msg::nx_flow`]) as the internal ones, with Open vSwitch's
/// refusals (module doc): a command above 4, unknown flags, `EMERG`; an
/// ADD gets `RESET_COUNTS`.
pub(crate) fn flow_mod_command_flags(
    command: u16,
    flags: u16,
    idle_timeout: u16,
    hard_timeout: u16,
) -> Result<(FlowModCommand, u16)> {
    let fmf = |c, d| OfpError::new(ErrorCode::FlowModFailed(c), d);
    if command > 4 {
        return Err(fmf(
            FlowModFailedCode::BadCommand,
            "unknown flow_mod command",
        ));
    }
    let command = FlowModCommand::from(command as u8);
    if flags & !7 != 0 {
        return Err(fmf(
            FlowModFailedCode::BadFlags,
            "unknown OpenFlow 1.0 flow_mod flag",
        ));
    }
    if flags & flow_mod_flags10::EMERG != 0 {
        return Err(if idle_timeout != 0 || hard_timeout != 0 {
            fmf(
                FlowModFailedCode::BadTimeout,
                "emergency flow with a timeout (OFPFMFC_BAD_EMERG_TIMEOUT)",
            )
        } else {
            fmf(
                FlowModFailedCode::TableFull,
                "emergency flow cache not supported",
            )
        });
    }
    // 1.0's ADD always resets the counters of a flow it replaces, and
    // its other commands never do (Open vSwitch's
    // `ofputil_decode_flow_mod_flags`): 1.3's RESET_COUNTS says the same.
    let flags = if command == FlowModCommand::Add {
        flags | crate::msg::flow::flow_mod_flags::RESET_COUNTS
    } else {
        flags
    };
    Ok((command, flags))
}

fn encode_flow_mod(f: &FlowMod, out: &mut Vec<u8>) {
    match10::to_10(&f.match_).encode(out);
    out.put_u64(f.cookie);
    out.put_u16(f.command.value().into());
    out.put_u16(f.idle_timeout);
    out.put_u16(f.hard_timeout);
    out.put_u16(f.priority);
    out.put_u32(f.buffer_id);
    out.put_u16(port_to_10(f.out_port));
    out.put_u16(f.flags & (flow_mod_flags10::SEND_FLOW_REM | flow_mod_flags10::CHECK_OVERLAP));
    action10::encode_instructions(&f.instructions, out);
}

/// 1.0's `OFPQT_MIN_RATE`.
const OFPQT10_MIN_RATE: u16 = 1;

fn decode_queue_reply(r: &mut Reader<'_>) -> Result<QueueGetConfigReply> {
    let port = port_from_10(r.u16()?);
    r.skip(6)?;
    let mut queues = Vec::new();
    while !r.is_empty() {
        let queue_id = r.u32()?;
        let len = r.u16()? as usize;
        r.skip(2)?;
        if len < 8 {
            return Err(OfpError::new(
                ErrorCode::BAD_LEN,
                "queue shorter than its header",
            ));
        }
        let mut b = r.sub(len - 8, ErrorCode::BAD_LEN)?;
        let mut properties = Vec::new();
        while !b.is_empty() {
            let ty = b.u16()?;
            let plen = b.u16()? as usize;
            if plen < 8 {
                return Err(OfpError::new(
                    ErrorCode::BAD_LEN,
                    "queue property shorter than its header",
                ));
            }
            b.skip(4)?;
            let mut p = b.sub(plen - 8, ErrorCode::BAD_LEN)?;
            if ty == OFPQT10_MIN_RATE {
                properties.push(QueueProp::MinRate(p.u16()?));
            }
        }
        queues.push(PacketQueue {
            queue_id,
            port,
            properties,
        });
    }
    Ok(QueueGetConfigReply { port, queues })
}

fn encode_queue_reply(q: &QueueGetConfigReply, out: &mut Vec<u8>) {
    out.put_u16(port_to_10(q.port));
    zeros(out, 6);
    for queue in &q.queues {
        let start = out.len();
        out.put_u32(queue.queue_id);
        let at = out.len();
        out.put_u16(0);
        zeros(out, 2);
        for p in &queue.properties {
            if let QueueProp::MinRate(rate) = p {
                out.put_u16(OFPQT10_MIN_RATE);
                out.put_u16(16);
                zeros(out, 4);
                out.put_u16(*rate);
                zeros(out, 6);
            }
        }
        patch_len(out, at, start);
    }
}

#[cfg(test)]
mod tests;
