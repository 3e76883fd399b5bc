//! Open vSwitch's tunnel-option table messages (Nicira experimenter
//! messages; `include/openflow/nicira-ext.h`, `lib/ofp-switch.c`): which
//! Geneve option (class, type, length) each `tun_metadataN` field stands
//! for. OVN asks for the table when it connects and maps its option
//! (class 0x0102, type 0x80, 4 bytes) to a free field: that option is how
//! a logical datapath and port cross a tunnel.
//!
//! * `NXT_TLV_TABLE_MOD` (24): a command (`u16`: ADD 0, DELETE 1, CLEAR
//!   2; another is `NXTTMFC_BAD_COMMAND`), six bytes of padding, then
//!   8-byte maps: option class (`u16`), type (`u8`), length (`u8`, a
//!   multiple of 4 up to 124, else `NXTTMFC_BAD_OPT_LEN`), field index
//!   (`u16`, below 64, else `NXTTMFC_BAD_FIELD_IDX`), two bytes of
//!   padding. A body that is not 8 bytes and a multiple of 8 is
//!   `OFPBRC_BAD_LEN`.
//! * `NXT_TLV_TABLE_REQUEST` (25): no body (else `OFPBRC_BAD_LEN`).
//! * `NXT_TLV_TABLE_REPLY` (26): the option space (`u32`) and field count
//!   (`u16`) the switch has, ten bytes of padding, the maps as above.
//!
//! What a switch does with a table mod (the checks that need its table)
//! is the pipeline's: [`TlvCommand`] and [`TlvMap`] are only the wire.

use bytes::BufMut;

use crate::error::{BadRequestCode, ErrorCode, OfpError, Result};
use crate::macros::wire_enum;

pub use crate::action::NX_VENDOR_ID;

/// exp_type of NXT_TLV_TABLE_MOD.
pub const NXT_TLV_TABLE_MOD: u32 = 24;
/// exp_type of NXT_TLV_TABLE_REQUEST.
pub const NXT_TLV_TABLE_REQUEST: u32 = 25;
/// exp_type of NXT_TLV_TABLE_REPLY.
pub const NXT_TLV_TABLE_REPLY: u32 = 26;

/// How many `tun_metadataN` fields there are (Open vSwitch's
/// `TUN_METADATA_NUM_OPTS`).
pub const TUN_METADATA_FIELDS: u16 = 64;
/// The longest option a field may stand for, in bytes (`TLV_MAX_OPT_SIZE`).
pub const TLV_MAX_OPT_SIZE: u8 = 124;

const fn nx_error(exp_type: u16) -> ErrorCode {
    ErrorCode::Experimenter {
        exp_type,
        experimenter: NX_VENDOR_ID,
    }
}

/// `NXTTMFC_BAD_COMMAND`: not ADD, DELETE or CLEAR.
pub const NXTTMFC_BAD_COMMAND: ErrorCode = nx_error(16);
/// `NXTTMFC_BAD_OPT_LEN`: an option length not a multiple of 4 or over 124.
pub const NXTTMFC_BAD_OPT_LEN: ErrorCode = nx_error(17);
/// `NXTTMFC_BAD_FIELD_IDX`: a field index of 64 or more.
pub const NXTTMFC_BAD_FIELD_IDX: ErrorCode = nx_error(18);
/// `NXTTMFC_TABLE_FULL`: the options mapped would need more space than
/// the switch has.
pub const NXTTMFC_TABLE_FULL: ErrorCode = nx_error(19);
/// `NXTTMFC_ALREADY_MAPPED`: ADD of a field that is mapped.
pub const NXTTMFC_ALREADY_MAPPED: ErrorCode = nx_error(20);
/// `NXTTMFC_DUP_ENTRY`: ADD of an option another field stands for.
pub const NXTTMFC_DUP_ENTRY: ErrorCode = nx_error(21);
/// `NXTTMFC_INVALID_TLV_DEL`: DELETE or CLEAR of a field a flow uses.
pub const NXTTMFC_INVALID_TLV_DEL: ErrorCode = nx_error(38);
/// `NXFMFC_INVALID_TLV_FIELD`: a flow (match or action) names a
/// `tun_metadataN` field the option table does not map.
pub const NXFMFC_INVALID_TLV_FIELD: ErrorCode = nx_error(37);

wire_enum! {
    /// `nx_tlv_table_mod_command`.
    pub enum TlvCommand: u16 {
        Add = 0 => "add",
        Delete = 1 => "delete",
        Clear = 2 => "clear",
    }
}

/// `nx_tlv_map`: field `tun_metadata<index>` stands for the Geneve option
/// of this class and type, `len` bytes long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TlvMap {
    pub class: u16,
    pub ty: u8,
    pub len: u8,
    pub index: u16,
}

/// NXT_TLV_TABLE_MOD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlvTableMod {
    pub command: TlvCommand,
    pub maps: Vec<TlvMap>,
}

/// NXT_TLV_TABLE_REPLY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlvTableReply {
    pub max_option_space: u32,
    pub max_fields: u16,
    pub maps: Vec<TlvMap>,
}

fn bad_len(why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadRequest(BadRequestCode::BadLen), why)
}

fn decode_maps(b: &[u8]) -> Vec<TlvMap> {
    b.chunks_exact(8)
        .map(|m| TlvMap {
            class: u16::from_be_bytes([m[0], m[1]]),
            ty: m[2],
            len: m[3],
            index: u16::from_be_bytes([m[4], m[5]]),
        })
        .collect()
}

fn encode_maps(maps: &[TlvMap], out: &mut Vec<u8>) {
    for m in maps {
        out.put_u16(m.class);
        out.put_u8(m.ty);
        out.put_u8(m.len);
        out.put_u16(m.index);
        out.put_u16(0);
    }
}

impl TlvTableMod {
    /// Reads the body, with Open vSwitch's checks of each map on its own.
    pub fn decode(data: &[u8]) -> Result<TlvTableMod> {
        if data.len() < 8 || !data.len().is_multiple_of(8) {
            return Err(bad_len(
                "tlv_table_mod: body not 8 bytes and a multiple of 8",
            ));
        }
        let command = match TlvCommand::from(u16::from_be_bytes([data[0], data[1]])) {
            TlvCommand::Unknown(_) => {
                return Err(OfpError::new(
                    NXTTMFC_BAD_COMMAND,
                    "tlv_table_mod: command not add, delete or clear",
                ))
            }
            c => c,
        };
        let maps = decode_maps(&data[8..]);
        for m in &maps {
            if !m.len.is_multiple_of(4) || m.len > TLV_MAX_OPT_SIZE {
                return Err(OfpError::new(
                    NXTTMFC_BAD_OPT_LEN,
                    "tlv_table_mod: option length not a multiple of 4 up to 124",
                ));
            }
            if m.index >= TUN_METADATA_FIELDS {
                return Err(OfpError::new(
                    NXTTMFC_BAD_FIELD_IDX,
                    "tlv_table_mod: field index not below 64",
                ));
            }
        }
        Ok(TlvTableMod { command, maps })
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.command.value());
        out.extend_from_slice(&[0; 6]);
        encode_maps(&self.maps, out);
    }
}

impl TlvTableReply {
    pub fn decode(data: &[u8]) -> Result<TlvTableReply> {
        if data.len() < 16 || !data.len().is_multiple_of(8) {
            return Err(bad_len(
                "tlv_table_reply: body not 16 bytes and a multiple of 8",
            ));
        }
        Ok(TlvTableReply {
            max_option_space: u32::from_be_bytes([data[0], data[1], data[2], data[3]]),
            max_fields: u16::from_be_bytes([data[4], data[5]]),
            maps: decode_maps(&data[16..]),
        })
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.max_option_space);
        out.put_u16(self.max_fields);
        out.extend_from_slice(&[0; 10]);
        encode_maps(&self.maps, out);
    }
}

/// NXT_TLV_TABLE_REQUEST's body must be empty.
pub fn decode_request(data: &[u8]) -> Result<()> {
    if data.is_empty() {
        Ok(())
    } else {
        Err(bad_len("tlv_table_request has no body"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mod_and_reply_round_trip_and_bad_maps_get_open_vswitchs_codes() {
        let m = TlvTableMod {
            command: TlvCommand::Add,
            maps: vec![TlvMap {
                class: 0x0102,
                ty: 0x80,
                len: 4,
                index: 0,
            }],
        };
        let mut b = Vec::new();
        m.encode(&mut b);
        assert_eq!(b.len(), 16);
        assert_eq!(TlvTableMod::decode(&b).unwrap(), m);
        let r = TlvTableReply {
            max_option_space: 256,
            max_fields: 64,
            maps: m.maps.clone(),
        };
        let mut b = Vec::new();
        r.encode(&mut b);
        assert_eq!(TlvTableReply::decode(&b).unwrap(), r);

        let code = |cmd: u16, len: u8, index: u16| {
            let mut b = Vec::new();
            TlvTableMod {
                command: TlvCommand::from(cmd),
                maps: vec![TlvMap {
                    class: 1,
                    ty: 1,
                    len,
                    index,
                }],
            }
            .encode(&mut b);
            TlvTableMod::decode(&b).err().map(|e| e.code)
        };
        assert_eq!(code(3, 4, 0), Some(NXTTMFC_BAD_COMMAND));
        assert_eq!(code(0, 6, 0), Some(NXTTMFC_BAD_OPT_LEN));
        assert_eq!(code(0, 128, 0), Some(NXTTMFC_BAD_OPT_LEN));
        assert_eq!(code(0, 4, 64), Some(NXTTMFC_BAD_FIELD_IDX));
        assert_eq!(code(1, 124, 63), None);
        assert!(TlvTableMod::decode(&[0; 12]).is_err());
        assert!(decode_request(&[0]).is_err());
    }
}
