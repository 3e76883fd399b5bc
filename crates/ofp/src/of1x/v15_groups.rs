//! OpenFlow 1.5's groups: GROUP_MOD (`ofp15_group_mod`), its buckets
//! (`ofp15_bucket`) and the GROUP_DESC reply (`ofp15_group_desc_stats`),
//! with bucket ids, INSERT_BUCKET and REMOVE_BUCKET, and the group
//! properties, as Open vSwitch 3.1 reads and writes them (lib/ofp-group.c).
//!
//! Contract:
//!
//! * A bucket's weight, watch_port and watch_group travel as properties,
//!   written as Open vSwitch writes them (the weight in a select group or
//!   when not 0, a watch when not ANY); absent when read: weight 1 in a
//!   select group else 0, watch port/group ANY. A weight property of 2
//!   bytes or more is read, a watch of other than 4 is `OFPBPC_BAD_LEN`;
//!   an experimenter bucket property `OFPBPC_BAD_EXPERIMENTER`, another
//!   `OFPBPC_BAD_TYPE`.
//! * Bucket ids are kept and written back; a bucket without one (text
//!   without `bucket_id:`) is written with the lowest id free
//!   ([`crate::msg::group::assign_bucket_ids`]). Read: above
//!   `OFPG15_BUCKET_MAX` or repeated `OFPGMFC_BAD_BUCKET`.
//! * `command_bucket_id`, checked as Open vSwitch checks it
//!   (`OFPGMFC_BAD_BUCKET` otherwise): INSERT_BUCKET takes FIRST, LAST or
//!   an id; REMOVE_BUCKET those or ALL; the other commands ALL only. An
//!   unknown command is `OFPGMFC_BAD_COMMAND`. `bucket_array_len` past the
//!   end is `OFPBRC_BAD_LEN`.
//! * Group properties: Open vSwitch's selection method
//!   ([`crate::msg::selection`]); another experimenter's property is
//!   `OFPBPC_BAD_EXPERIMENTER` (experimenter 0 too), another type
//!   `OFPBPC_BAD_TYPE`. Written after the buckets when the group has one.
//!   A group description's properties are read as an ADD's.

use bytes::BufMut;

use super::v15::{decode_actions15, encode_actions15};
use super::{bad_property, pull_prop};
use crate::error::{ErrorCode, GroupModFailedCode, OfpError, Result};
use crate::msg::group::{
    assign_bucket_ids, Bucket, GroupMod, GroupModCommand, GroupType, BUCKET_ALL, BUCKET_FIRST,
    BUCKET_LAST, BUCKET_MAX,
};
use crate::msg::multipart::GroupDesc;
use crate::msg::selection::{self, SelectionMethod};
use crate::port::{group_no, port_no};
use crate::wire::{len_placeholder, patch_len, zeros, Reader};

/// `ofp15_group_mod` after the header.
pub(crate) fn encode_group_mod(g: &GroupMod, out: &mut Vec<u8>) {
    out.put_u16(g.command.value());
    out.put_u8(g.group_type.value());
    zeros(out, 1);
    out.put_u32(g.group_id);
    let at = len_placeholder(out);
    zeros(out, 2);
    out.put_u32(g.command_bucket_id);
    let start = out.len();
    encode_buckets(&g.buckets, g.group_type, out);
    patch_len(out, at, start);
    if let Some(s) = &g.selection {
        selection::encode_prop(s, out);
    }
}

/// `ofp15_bucket`s, each with its id and the properties Open vSwitch
/// writes.
pub fn encode_buckets(buckets: &[Bucket], group_type: GroupType, out: &mut Vec<u8>) {
    let mut owned;
    let buckets = if buckets.iter().any(|b| b.bucket_id > BUCKET_MAX) {
        owned = buckets.to_vec();
        assign_bucket_ids(&mut owned, &[]);
        &owned[..]
    } else {
        buckets
    };
    for b in buckets {
        let start = out.len();
        let at = len_placeholder(out);
        let aat = len_placeholder(out);
        out.put_u32(b.bucket_id);
        let astart = out.len();
        encode_actions15(&b.actions, out);
        patch_len(out, aat, astart);
        if group_type == GroupType::Select || b.weight != 0 {
            out.put_u16(0); // OFPGBPT15_WEIGHT
            out.put_u16(8);
            out.put_u16(b.weight);
            zeros(out, 2);
        }
        if b.watch_port != port_no::ANY {
            out.put_u16(1); // OFPGBPT15_WATCH_PORT
            out.put_u16(8);
            out.put_u32(b.watch_port);
        }
        if b.watch_group != group_no::ANY {
            out.put_u16(2); // OFPGBPT15_WATCH_GROUP
            out.put_u16(8);
            out.put_u32(b.watch_group);
        }
        patch_len(out, at, start);
    }
}

fn bad_bucket(why: &'static str) -> OfpError {
    OfpError::new(
        ErrorCode::GroupModFailed(GroupModFailedCode::BadBucket),
        why,
    )
}

/// Reads `ofp15_bucket`s filling all of `r`.
pub fn decode_buckets(r: &mut Reader<'_>, group_type: GroupType) -> Result<Vec<Bucket>> {
    let mut v: Vec<Bucket> = Vec::new();
    while !r.is_empty() {
        let len = r.peek_u16(0)? as usize;
        if len < 8 || len > r.remaining() {
            return Err(bad_bucket("bucket length"));
        }
        let mut b = r.sub(len, ErrorCode::BAD_LEN)?;
        b.skip(2)?;
        let alen = b.u16()? as usize;
        let bucket_id = b.u32()?;
        if alen > b.remaining() {
            return Err(bad_bucket("bucket action_array_len"));
        }
        let mut a = b.sub(alen, ErrorCode::ACTION_BAD_LEN)?;
        let mut bucket = Bucket {
            bucket_id,
            weight: u16::from(group_type == GroupType::Select),
            actions: decode_actions15(a.slice(alen)?)?,
            ..Bucket::default()
        };
        while !b.is_empty() {
            let (ty, mut p) = pull_prop(&mut b)?;
            let short = |n| {
                bad_property(
                    1,
                    if n == 2 {
                        "bucket weight"
                    } else {
                        "bucket watch"
                    },
                )
            };
            match ty {
                0 if p.remaining() >= 2 => bucket.weight = p.u16()?,
                1 | 2 if p.remaining() == 4 => {
                    let x = p.u32()?;
                    if ty == 1 {
                        bucket.watch_port = x;
                    } else {
                        bucket.watch_group = x;
                    }
                }
                0 => return Err(short(2)),
                1 | 2 => return Err(short(4)),
                0xffff => return Err(bad_property(5, "experimenter bucket property")),
                _ => return Err(bad_property(0, "bucket property sluice does not know")),
            }
        }
        if bucket_id > BUCKET_MAX {
            return Err(bad_bucket("bucket id above OFPG15_BUCKET_MAX"));
        }
        v.push(bucket);
    }
    // Open vSwitch looks for repeated ids once all are read.
    let mut ids: Vec<u32> = v.iter().map(|b| b.bucket_id).collect();
    ids.sort_unstable();
    if ids.windows(2).any(|w| w[0] == w[1]) {
        return Err(bad_bucket("bucket id repeated"));
    }
    Ok(v)
}

/// Reads the group properties filling all of `r`: the selection method,
/// or the error Open vSwitch gives.
fn decode_group_props(
    r: &mut Reader<'_>,
    group_type: GroupType,
    command: GroupModCommand,
) -> Result<Option<SelectionMethod>> {
    let mut s = None;
    while !r.is_empty() {
        let (ty, mut p) = pull_prop(r)?;
        if ty != 0xffff {
            return Err(bad_property(0, "group property sluice does not know"));
        }
        if p.remaining() < 8 {
            return Err(bad_property(
                1,
                "experimenter property shorter than 12 bytes",
            ));
        }
        let body = p.slice(p.remaining())?;
        let experimenter = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        let exp_type = u32::from_be_bytes([body[4], body[5], body[6], body[7]]);
        if !selection::is_selection_method(experimenter, exp_type) {
            return Err(bad_property(5, "experimenter group property"));
        }
        // The property whole, as Open vSwitch reads it.
        let mut whole = Vec::with_capacity(4 + body.len());
        whole.put_u16(ty);
        whole.put_u16((4 + body.len()) as u16);
        whole.extend_from_slice(body);
        s = Some(selection::decode_prop(&whole, group_type, command)?);
    }
    Ok(s)
}

/// Reads `ofp15_group_mod` after the header.
pub(crate) fn decode_group_mod(r: &mut Reader<'_>) -> Result<GroupMod> {
    let command = GroupModCommand::from(r.u16()?);
    if matches!(command, GroupModCommand::Unknown(_)) {
        return Err(OfpError::new(
            ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand),
            "unknown group command",
        ));
    }
    let group_type = GroupType::from(r.u8()?);
    r.skip(1)?;
    let group_id = r.u32()?;
    let blen = r.u16()? as usize;
    r.skip(2)?;
    let command_bucket_id = r.u32()?;
    let named = command_bucket_id <= BUCKET_MAX
        || command_bucket_id == BUCKET_FIRST
        || command_bucket_id == BUCKET_LAST;
    let ok = match command {
        GroupModCommand::InsertBucket => named,
        GroupModCommand::RemoveBucket => named || command_bucket_id == BUCKET_ALL,
        _ => command_bucket_id == BUCKET_ALL,
    };
    if !ok {
        return Err(bad_bucket("command_bucket_id the command does not take"));
    }
    if blen > r.remaining() {
        return Err(OfpError::new(
            ErrorCode::BAD_LEN,
            "bucket_array_len beyond message end",
        ));
    }
    let mut b = r.sub(blen, ErrorCode::BAD_LEN)?;
    let buckets = decode_buckets(&mut b, group_type)?;
    let selection = decode_group_props(r, group_type, command)?;
    Ok(GroupMod {
        command,
        group_type,
        group_id,
        command_bucket_id,
        buckets,
        selection,
    })
}

/// `ofp15_group_desc_stats` with its buckets and properties.
pub fn encode_group_desc(g: &GroupDesc, out: &mut Vec<u8>) {
    let start = out.len();
    let at = len_placeholder(out);
    out.put_u8(g.group_type.value());
    zeros(out, 1);
    out.put_u32(g.group_id);
    let bat = len_placeholder(out);
    zeros(out, 6);
    let bstart = out.len();
    encode_buckets(&g.buckets, g.group_type, out);
    patch_len(out, bat, bstart);
    if let Some(s) = &g.selection {
        selection::encode_prop(s, out);
    }
    patch_len(out, at, start);
}

/// Reads one `ofp15_group_desc_stats`.
pub fn decode_group_desc(r: &mut Reader<'_>) -> Result<GroupDesc> {
    let len = r.peek_u16(0)? as usize;
    if len < 16 || len > r.remaining() {
        return Err(OfpError::new(ErrorCode::BAD_LEN, "group desc length"));
    }
    let mut e = r.sub(len, ErrorCode::BAD_LEN)?;
    e.skip(2)?;
    let group_type = GroupType::from(e.u8()?);
    e.skip(1)?;
    let group_id = e.u32()?;
    let blen = e.u16()? as usize;
    e.skip(6)?;
    if blen > e.remaining() {
        return Err(OfpError::new(ErrorCode::BAD_LEN, "bucket_list_len"));
    }
    let mut b = e.sub(blen, ErrorCode::BAD_LEN)?;
    let buckets = decode_buckets(&mut b, group_type)?;
    let selection = decode_group_props(&mut e, group_type, GroupModCommand::Add)?;
    Ok(GroupDesc {
        group_type,
        group_id,
        buckets,
        selection,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::action::Action;
    use crate::msg::selection::{HashField, Method};
    use crate::oxm::OxmField;
    use bytes::Bytes;

    /// A group mod's body as bytes.
    fn body(g: &GroupMod) -> Bytes {
        let mut v = Vec::new();
        encode_group_mod(g, &mut v);
        Bytes::from(v)
    }

    fn bucket(id: u32, weight: u16, port: u32) -> Bucket {
        Bucket {
            bucket_id: id,
            weight,
            actions: vec![Action::Output { port, max_len: 0 }],
            ..Bucket::default()
        }
    }

    fn read(b: &Bytes) -> Result<GroupMod> {
        let mut r = Reader::new(b, ErrorCode::BAD_LEN);
        let g = decode_group_mod(&mut r)?;
        r.finish(ErrorCode::BAD_LEN)?;
        Ok(g)
    }

    fn code(b: &Bytes) -> ErrorCode {
        read(b).unwrap_err().code
    }

    const BAD_BUCKET: ErrorCode = ErrorCode::GroupModFailed(GroupModFailedCode::BadBucket);

    #[test]
    fn ids_and_selection_round_trip() {
        let mut g = GroupMod::new(
            GroupModCommand::Add,
            GroupType::Select,
            1,
            vec![bucket(7, 100, 1), bucket(3, 0, 2)],
        );
        g.selection = Some(SelectionMethod {
            method: Method::Hash,
            param: 9,
            fields: vec![
                HashField::whole(OxmField::Ipv4Src),
                HashField::whole(OxmField::TcpDst),
            ],
        });
        assert_eq!(read(&body(&g)).unwrap(), g);
        // INSERT_BUCKET and REMOVE_BUCKET with the ids they take.
        for (c, id) in [
            (GroupModCommand::InsertBucket, BUCKET_FIRST),
            (GroupModCommand::InsertBucket, BUCKET_LAST),
            (GroupModCommand::InsertBucket, 7),
            (GroupModCommand::RemoveBucket, BUCKET_ALL),
            (GroupModCommand::RemoveBucket, 0),
        ] {
            let mut m = GroupMod::new(c, GroupType::All, 2, vec![bucket(4, 0, 3)]);
            m.command_bucket_id = id;
            assert_eq!(read(&body(&m)).unwrap(), m);
        }
    }

    #[test]
    fn bucket_properties_as_open_vswitch_writes_them() {
        // ovs-ofctl 3.1: a select bucket with weight 1 and output:1,
        // bucket_id 0 (OFPGBPT15_WEIGHT only; no watch properties).
        let mut v = Vec::new();
        encode_buckets(&[bucket(0, 1, 1)], GroupType::Select, &mut v);
        assert_eq!(
            v,
            [
                0, 0x20, 0, 0x10, 0, 0, 0, 0, // len, action_array_len, bucket_id
                0, 0, 0, 0x10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, // output:1
                0, 0, 0, 8, 0, 1, 0, 0, // weight 1
            ]
        );
        // Not select, weight 0: no property; read back with weight 0.
        let mut v = Vec::new();
        encode_buckets(&[bucket(5, 0, 1)], GroupType::All, &mut v);
        assert_eq!(v.len(), 24);
        let b = Bytes::from(v);
        let got = decode_buckets(&mut Reader::new(&b, ErrorCode::BAD_LEN), GroupType::All).unwrap();
        assert_eq!(got, vec![bucket(5, 0, 1)]);
        // Buckets without ids get the lowest free ones.
        let mut v = Vec::new();
        encode_buckets(
            &[
                bucket(BUCKET_ALL, 1, 1),
                bucket(0, 1, 2),
                bucket(BUCKET_ALL, 1, 3),
            ],
            GroupType::Select,
            &mut v,
        );
        let b = Bytes::from(v);
        let ids: Vec<u32> =
            decode_buckets(&mut Reader::new(&b, ErrorCode::BAD_LEN), GroupType::Select)
                .unwrap()
                .iter()
                .map(|b| b.bucket_id)
                .collect();
        assert_eq!(ids, vec![1, 0, 2]);
    }

    #[test]
    fn refused_as_open_vswitch_refuses() {
        // command_bucket_id the command does not take.
        for (c, id) in [
            (GroupModCommand::Add, 0),
            (GroupModCommand::Modify, BUCKET_LAST),
            (GroupModCommand::Delete, BUCKET_FIRST),
            (GroupModCommand::InsertBucket, BUCKET_ALL),
            (GroupModCommand::InsertBucket, BUCKET_MAX + 1),
            (GroupModCommand::RemoveBucket, 0xffff_fff0),
        ] {
            let mut m = GroupMod::new(c, GroupType::All, 2, vec![]);
            m.command_bucket_id = id;
            assert_eq!(code(&body(&m)), BAD_BUCKET, "{c:?} {id:#x}");
        }
        // Repeated ids, an id above MAX.
        let m = GroupMod::new(
            GroupModCommand::Add,
            GroupType::All,
            2,
            vec![bucket(1, 0, 1), bucket(1, 0, 2)],
        );
        assert_eq!(code(&body(&m)), BAD_BUCKET);
        let m = GroupMod::new(
            GroupModCommand::Add,
            GroupType::All,
            2,
            vec![bucket(BUCKET_MAX + 1, 0, 1)],
        );
        let mut b = body(&m).to_vec();
        b[20..24].copy_from_slice(&(BUCKET_MAX + 1).to_be_bytes());
        assert_eq!(code(&Bytes::from(b)), BAD_BUCKET);
        // Unknown commands.
        let mut b = body(&GroupMod::new(
            GroupModCommand::Add,
            GroupType::All,
            2,
            vec![],
        ))
        .to_vec();
        b[1] = 4;
        assert_eq!(
            code(&Bytes::from(b)),
            ErrorCode::GroupModFailed(GroupModFailedCode::BadCommand)
        );
        // Properties: another experimenter's, another type, experimenter 0.
        let base = body(&GroupMod::new(
            GroupModCommand::Add,
            GroupType::Select,
            2,
            vec![],
        ));
        for (prop, want) in [
            (
                &[0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 0, 0, 1, 0, 0, 0, 0][..],
                5,
            ),
            (&[0, 1, 0, 8, 0, 0, 0, 0][..], 0),
            (
                &[0xff, 0xff, 0, 16, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0][..],
                5,
            ),
            (&[0xff, 0xff, 0, 8, 0, 0, 0x15, 0x4d][..], 1),
        ] {
            let mut b = base.to_vec();
            b.extend_from_slice(prop);
            assert_eq!(
                code(&Bytes::from(b)),
                ErrorCode::Unknown { ty: 14, code: want },
                "{prop:?}"
            );
        }
        // The selection method of a DELETE.
        let mut m = GroupMod::new(GroupModCommand::Delete, GroupType::Select, 2, vec![]);
        m.selection = Some(SelectionMethod::new(Method::DpHash));
        assert_eq!(code(&body(&m)), ErrorCode::Unknown { ty: 14, code: 2 });
    }
}
