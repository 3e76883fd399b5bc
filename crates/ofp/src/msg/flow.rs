//! Flow-table messages: FLOW_MOD, FLOW_REMOVED, PACKET_IN and PACKET_OUT.

use bytes::{BufMut, Bytes};

use crate::action::{decode_actions, encode_actions, Action};
use crate::error::{ErrorCode, OfpError, Result};
use crate::instruction::{decode_instructions, encode_instructions, Instruction};
use crate::macros::wire_enum;
use crate::oxm::Match;
use crate::port::{group_no, port_no, NO_BUFFER};
use crate::wire::{len_placeholder, patch_len, zeros, Reader};

wire_enum! {
    /// `ofp_flow_mod_command`.
    pub enum FlowModCommand: u8 {
        Add = 0 => "add",
        Modify = 1 => "modify",
        ModifyStrict = 2 => "modify_strict",
        Delete = 3 => "delete",
        DeleteStrict = 4 => "delete_strict",
    }
}

/// `ofp_flow_mod_flags`.
pub mod flow_mod_flags {
    pub const SEND_FLOW_REM: u16 = 1 << 0;
    pub const CHECK_OVERLAP: u16 = 1 << 1;
    pub const RESET_COUNTS: u16 = 1 << 2;
    pub const NO_PKT_COUNTS: u16 = 1 << 3;
    pub const NO_BYT_COUNTS: u16 = 1 << 4;
    /// Every flag OpenFlow 1.3 defines.
    pub const ALL: u16 = 0x1f;
}

/// OFPT_FLOW_MOD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowMod {
    pub cookie: u64,
    pub cookie_mask: u64,
    pub table_id: u8,
    pub command: FlowModCommand,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub buffer_id: u32,
    pub out_port: u32,
    pub out_group: u32,
    pub flags: u16,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

/// `OFP_DEFAULT_PRIORITY`: the priority of a flow that names none.
pub const DEFAULT_PRIORITY: u16 = 0x8000;

impl Default for FlowMod {
    /// An ADD to table 0 at the spec's default priority, matching everything,
    /// with no instructions (drop), no buffer and no out_port/out_group filter.
    fn default() -> Self {
        FlowMod {
            cookie: 0,
            cookie_mask: 0,
            table_id: 0,
            command: FlowModCommand::Add,
            idle_timeout: 0,
            hard_timeout: 0,
            priority: DEFAULT_PRIORITY,
            buffer_id: NO_BUFFER,
            out_port: port_no::ANY,
            out_group: group_no::ANY,
            flags: 0,
            match_: Match::new(),
            instructions: Vec::new(),
        }
    }
}

impl FlowMod {
    /// The match of an encoded FLOW_MOD message (header included) as it
    /// lies there, padded to 8 bytes (its length field excludes the
    /// padding); None if the message is too short to hold it. For a
    /// receiver that keeps a validated match as the bytes it came in.
    /// None too for an OpenFlow 1.0 FLOW_MOD (version byte 1), whose match
    /// is no OXM match (its module, [`crate::of10`], translates it).
    pub fn match_bytes(message: &[u8]) -> Option<&[u8]> {
        // The header (8) and the fixed fields before the match (40).
        const AT: usize = 48;
        if message.first() == Some(&crate::of10::OFP10_VERSION) {
            return None;
        }
        let h = message.get(AT..AT + 4)?;
        let len = u16::from_be_bytes([h[2], h[3]]) as usize;
        message.get(AT..AT + len.div_ceil(8) * 8)
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.cookie);
        out.put_u64(self.cookie_mask);
        out.put_u8(self.table_id);
        out.put_u8(self.command.value());
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.priority);
        out.put_u32(self.buffer_id);
        out.put_u32(self.out_port);
        out.put_u32(self.out_group);
        out.put_u16(self.flags);
        zeros(out, 2);
        self.match_.encode(out);
        encode_instructions(&self.instructions, out);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<FlowMod> {
        let cookie = r.u64()?;
        let cookie_mask = r.u64()?;
        let table_id = r.u8()?;
        let command = FlowModCommand::from(r.u8()?);
        let idle_timeout = r.u16()?;
        let hard_timeout = r.u16()?;
        let priority = r.u16()?;
        let buffer_id = r.u32()?;
        let out_port = r.u32()?;
        let out_group = r.u32()?;
        let flags = r.u16()?;
        r.skip(2)?;
        let match_ = Match::decode(r)?;
        let instructions = decode_instructions(r)?;
        Ok(FlowMod {
            cookie,
            cookie_mask,
            table_id,
            command,
            idle_timeout,
            hard_timeout,
            priority,
            buffer_id,
            out_port,
            out_group,
            flags,
            match_,
            instructions,
        })
    }
}

wire_enum! {
    /// `ofp_flow_removed_reason`.
    pub enum FlowRemovedReason: u8 {
        IdleTimeout = 0 => "idle",
        HardTimeout = 1 => "hard",
        Delete = 2 => "delete",
        GroupDelete = 3 => "group_delete",
    }
}

/// OFPT_FLOW_REMOVED.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowRemoved {
    pub cookie: u64,
    pub priority: u16,
    pub reason: FlowRemovedReason,
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub packet_count: u64,
    pub byte_count: u64,
    pub match_: Match,
}

impl FlowRemoved {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.cookie);
        out.put_u16(self.priority);
        out.put_u8(self.reason.value());
        out.put_u8(self.table_id);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        self.match_.encode(out);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<FlowRemoved> {
        Ok(FlowRemoved {
            cookie: r.u64()?,
            priority: r.u16()?,
            reason: FlowRemovedReason::from(r.u8()?),
            table_id: r.u8()?,
            duration_sec: r.u32()?,
            duration_nsec: r.u32()?,
            idle_timeout: r.u16()?,
            hard_timeout: r.u16()?,
            packet_count: r.u64()?,
            byte_count: r.u64()?,
            match_: Match::decode(r)?,
        })
    }
}

wire_enum! {
    /// `ofp_packet_in_reason`.
    pub enum PacketInReason: u8 {
        NoMatch = 0 => "no_match",
        Action = 1 => "action",
        InvalidTtl = 2 => "invalid_ttl",
    }
}

/// OFPT_PACKET_IN. `data` shares the frame's buffer when decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketIn {
    pub buffer_id: u32,
    pub total_len: u16,
    pub reason: PacketInReason,
    pub table_id: u8,
    pub cookie: u64,
    pub match_: Match,
    pub data: Bytes,
}

impl PacketIn {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.buffer_id);
        out.put_u16(self.total_len);
        out.put_u8(self.reason.value());
        out.put_u8(self.table_id);
        out.put_u64(self.cookie);
        self.match_.encode(out);
        zeros(out, 2);
        out.extend_from_slice(&self.data);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<PacketIn> {
        let buffer_id = r.u32()?;
        let total_len = r.u16()?;
        let reason = PacketInReason::from(r.u8()?);
        let table_id = r.u8()?;
        let cookie = r.u64()?;
        let match_ = Match::decode(r)?;
        r.skip(2)?;
        Ok(PacketIn {
            buffer_id,
            total_len,
            reason,
            table_id,
            cookie,
            match_,
            data: r.rest(),
        })
    }
}

/// OFPT_PACKET_OUT. `data` shares the frame's buffer when decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketOut {
    pub buffer_id: u32,
    pub in_port: u32,
    pub actions: Vec<Action>,
    pub data: Bytes,
}

impl PacketOut {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.buffer_id);
        out.put_u32(self.in_port);
        let at = len_placeholder(out);
        zeros(out, 6);
        let start = out.len();
        encode_actions(&self.actions, out);
        patch_len(out, at, start);
        out.extend_from_slice(&self.data);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<PacketOut> {
        let buffer_id = r.u32()?;
        let in_port = r.u32()?;
        let actions_len = r.u16()? as usize;
        r.skip(6)?;
        let mut a = r
            .sub(actions_len, ErrorCode::ACTION_BAD_LEN)
            .map_err(|_| OfpError::new(ErrorCode::BAD_LEN, "actions_len beyond message end"))?;
        let actions = decode_actions(&mut a)?;
        Ok(PacketOut {
            buffer_id,
            in_port,
            actions,
            data: r.rest(),
        })
    }
}
