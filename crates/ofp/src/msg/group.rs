//! GROUP_MOD and buckets (also used by the GROUP_DESC reply).

use bytes::BufMut;

use crate::action::{decode_actions, encode_actions, Action};
use crate::error::{ErrorCode, GroupModFailedCode, OfpError, Result};
use crate::macros::wire_enum;
use crate::port::{group_no, port_no};
use crate::wire::{len_placeholder, patch_len, zeros, Reader};

wire_enum! {
    /// `ofp_group_mod_command`.
    pub enum GroupModCommand: u16 {
        Add = 0 => "add",
        Modify = 1 => "modify",
        Delete = 2 => "delete",
    }
}

wire_enum! {
    /// `ofp_group_type`.
    pub enum GroupType: u8 {
        All = 0 => "all",
        Select = 1 => "select",
        Indirect = 2 => "indirect",
        FastFailover = 3 => "ff",
    }
}

/// `ofp_bucket`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    pub weight: u16,
    pub watch_port: u32,
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            weight: 0,
            watch_port: port_no::ANY,
            watch_group: group_no::ANY,
            actions: Vec::new(),
        }
    }
}

impl Bucket {
    /// Its length on the wire (`ofp_bucket`: 16 bytes and the actions).
    pub fn wire_len(&self) -> usize {
        let mut v = Vec::new();
        self.encode(&mut v);
        v.len()
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let at = len_placeholder(out);
        out.put_u16(self.weight);
        out.put_u32(self.watch_port);
        out.put_u32(self.watch_group);
        zeros(out, 4);
        encode_actions(&self.actions, out);
        patch_len(out, at, start);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Bucket> {
        let len = r.u16()? as usize;
        if len < 16 || !len.is_multiple_of(8) {
            return Err(OfpError::new(
                ErrorCode::GroupModFailed(GroupModFailedCode::BadBucket),
                "bad bucket length",
            ));
        }
        let mut b = r.sub(len - 2, ErrorCode::BAD_LEN)?;
        let weight = b.u16()?;
        let watch_port = b.u32()?;
        let watch_group = b.u32()?;
        b.skip(4)?;
        Ok(Bucket {
            weight,
            watch_port,
            watch_group,
            actions: decode_actions(&mut b)?,
        })
    }
}

/// Decodes buckets filling all of `r`.
pub(crate) fn decode_buckets(r: &mut Reader<'_>) -> Result<Vec<Bucket>> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(Bucket::decode(r)?);
    }
    Ok(v)
}

/// OFPT_GROUP_MOD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMod {
    pub command: GroupModCommand,
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

impl GroupMod {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.command.value());
        out.put_u8(self.group_type.value());
        zeros(out, 1);
        out.put_u32(self.group_id);
        for b in &self.buckets {
            b.encode(out);
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<GroupMod> {
        let command = GroupModCommand::from(r.u16()?);
        let group_type = GroupType::from(r.u8()?);
        r.skip(1)?;
        let group_id = r.u32()?;
        Ok(GroupMod {
            command,
            group_type,
            group_id,
            buckets: decode_buckets(r)?,
        })
    }
}
