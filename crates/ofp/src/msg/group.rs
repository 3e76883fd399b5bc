//! GROUP_MOD and buckets (also used by the GROUP_DESC reply), in
//! OpenFlow 1.3's layout; 1.5's (bucket ids, INSERT_BUCKET and
//! REMOVE_BUCKET, the selection method) is `of1x::v15_groups`'s.
//!
//! Bucket ids: OpenFlow 1.5 carries them; here (1.1-1.4) a group mod's or
//! description's buckets are numbered 0, 1, ... in order, as Open vSwitch
//! numbers them. INSERT_BUCKET and REMOVE_BUCKET, which 1.3 does not have,
//! are `OFPGMFC_BAD_COMMAND` when read here (Open vSwitch takes them in
//! every version, with `command_bucket_id` ALL).

use bytes::BufMut;

use crate::action::{decode_actions, encode_actions, Action};
use crate::error::{ErrorCode, GroupModFailedCode, OfpError, Result};
use crate::macros::wire_enum;
use crate::msg::selection::SelectionMethod;
use crate::port::{group_no, port_no};
use crate::wire::{len_placeholder, patch_len, zeros, Reader};

wire_enum! {
    /// `ofp_group_mod_command`.
    pub enum GroupModCommand: u16 {
        Add = 0 => "add",
        Modify = 1 => "modify",
        Delete = 2 => "delete",
        /// OpenFlow 1.5: adds the buckets at `command_bucket_id`.
        InsertBucket = 3 => "insert_bucket",
        /// OpenFlow 1.5: removes the bucket `command_bucket_id` names.
        RemoveBucket = 5 => "remove_bucket",
    }
}

/// `OFPG15_BUCKET_MAX`: the highest bucket id.
pub const BUCKET_MAX: u32 = 0xffff_ff00;
/// `OFPG15_BUCKET_FIRST`: a `command_bucket_id` naming the first bucket.
pub const BUCKET_FIRST: u32 = 0xffff_fffd;
/// `OFPG15_BUCKET_LAST`: a `command_bucket_id` naming the last bucket.
pub const BUCKET_LAST: u32 = 0xffff_fffe;
/// `OFPG15_BUCKET_ALL`: a `command_bucket_id` naming every bucket; as a
/// bucket's own id, none given yet ([`assign_bucket_ids`] gives one).
pub const BUCKET_ALL: u32 = 0xffff_ffff;

wire_enum! {
    /// `ofp_group_type`.
    pub enum GroupType: u8 {
        All = 0 => "all",
        Select = 1 => "select",
        Indirect = 2 => "indirect",
        FastFailover = 3 => "ff",
    }
}

/// `ofp_bucket` (`ofp15_bucket` in 1.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    /// The bucket's id, at most [`BUCKET_MAX`]; [`BUCKET_ALL`] when none
    /// was given (text without `bucket_id:`).
    pub bucket_id: u32,
    pub weight: u16,
    pub watch_port: u32,
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

impl Default for Bucket {
    fn default() -> Self {
        Bucket {
            bucket_id: BUCKET_ALL,
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
            bucket_id: BUCKET_ALL,
            weight,
            watch_port,
            watch_group,
            actions: decode_actions(&mut b)?,
        })
    }
}

/// Decodes buckets filling all of `r`, numbered 0, 1, ... as Open vSwitch
/// numbers the buckets of versions without ids.
pub(crate) fn decode_buckets(r: &mut Reader<'_>) -> Result<Vec<Bucket>> {
    let mut v = Vec::new();
    while !r.is_empty() {
        let mut b = Bucket::decode(r)?;
        b.bucket_id = v.len() as u32;
        v.push(b);
    }
    Ok(v)
}

/// Gives each bucket without an id ([`BUCKET_ALL`]) the lowest id no other
/// bucket of `buckets` or `taken` has, in order (all without ids: 0, 1,
/// ...). Ids already given stay.
pub fn assign_bucket_ids(buckets: &mut [Bucket], taken: &[u32]) {
    if buckets.iter().all(|b| b.bucket_id <= BUCKET_MAX) {
        return;
    }
    let mut used: std::collections::BTreeSet<u32> = taken
        .iter()
        .copied()
        .chain(buckets.iter().map(|b| b.bucket_id))
        .filter(|&id| id <= BUCKET_MAX)
        .collect();
    let mut next = 0u32;
    for b in buckets.iter_mut().filter(|b| b.bucket_id > BUCKET_MAX) {
        while used.contains(&next) {
            next += 1;
        }
        b.bucket_id = next;
        used.insert(next);
    }
}

/// OFPT_GROUP_MOD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMod {
    pub command: GroupModCommand,
    pub group_type: GroupType,
    pub group_id: u32,
    /// OpenFlow 1.5's: the bucket INSERT_BUCKET inserts after
    /// ([`BUCKET_FIRST`], [`BUCKET_LAST`] or an id) or REMOVE_BUCKET
    /// removes (those, or [`BUCKET_ALL`]); [`BUCKET_ALL`] with the other
    /// commands.
    pub command_bucket_id: u32,
    pub buckets: Vec<Bucket>,
    /// A select group's selection method (OpenFlow 1.5's only group
    /// property, Open vSwitch's); None: the switch's default.
    pub selection: Option<SelectionMethod>,
}

impl GroupMod {
    /// A group mod without `command_bucket_id` or selection method.
    pub fn new(
        command: GroupModCommand,
        group_type: GroupType,
        group_id: u32,
        buckets: Vec<Bucket>,
    ) -> GroupMod {
        GroupMod {
            command,
            group_type,
            group_id,
            command_bucket_id: BUCKET_ALL,
            buckets,
            selection: None,
        }
    }

    /// Whether OpenFlow 1.3's layout says all of it: a command 1.3 has (or
    /// an unknown one, carried as it is), `command_bucket_id` ALL, no
    /// selection method, and buckets numbered 0, 1, ... as 1.3's decoder
    /// numbers them.
    pub fn fits_1_3(&self) -> bool {
        !matches!(
            self.command,
            GroupModCommand::InsertBucket | GroupModCommand::RemoveBucket
        ) && self.command_bucket_id == BUCKET_ALL
            && self.selection.is_none()
            && self
                .buckets
                .iter()
                .enumerate()
                .all(|(i, b)| b.bucket_id == i as u32)
    }

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
        if matches!(
            command,
            GroupModCommand::InsertBucket | GroupModCommand::RemoveBucket
        ) {
            return Err(OfpError::new(
                ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand),
                "INSERT_BUCKET and REMOVE_BUCKET are OpenFlow 1.5's",
            ));
        }
        let group_type = GroupType::from(r.u8()?);
        r.skip(1)?;
        let group_id = r.u32()?;
        Ok(GroupMod::new(
            command,
            group_type,
            group_id,
            decode_buckets(r)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn ids_given_where_missing() {
        let b = |id| Bucket {
            bucket_id: id,
            ..Bucket::default()
        };
        let mut v = vec![b(BUCKET_ALL), b(0), b(BUCKET_ALL), b(2), b(BUCKET_ALL)];
        assign_bucket_ids(&mut v, &[3]);
        let ids: Vec<u32> = v.iter().map(|b| b.bucket_id).collect();
        assert_eq!(ids, vec![1, 0, 4, 2, 5]);
        let mut v = vec![b(BUCKET_ALL), b(BUCKET_ALL)];
        assign_bucket_ids(&mut v, &[]);
        assert_eq!((v[0].bucket_id, v[1].bucket_id), (0, 1));
    }

    #[test]
    fn open_flow_1_3_numbers_buckets_and_has_no_bucket_commands() {
        let g = GroupMod::new(
            GroupModCommand::Add,
            GroupType::All,
            1,
            vec![
                Bucket {
                    bucket_id: 9,
                    ..Bucket::default()
                };
                3
            ],
        );
        let mut out = Vec::new();
        g.encode(&mut out);
        let b = Bytes::from(out);
        let got = GroupMod::decode(&mut Reader::new(&b, ErrorCode::BAD_LEN)).unwrap();
        let ids: Vec<u32> = got.buckets.iter().map(|b| b.bucket_id).collect();
        assert_eq!(ids, vec![0, 1, 2]);
        for c in [3u8, 5] {
            let mut raw = b.to_vec();
            raw[1] = c;
            let raw = Bytes::from(raw);
            assert_eq!(
                GroupMod::decode(&mut Reader::new(&raw, ErrorCode::BAD_LEN))
                    .unwrap_err()
                    .code,
                ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand)
            );
        }
    }
}
