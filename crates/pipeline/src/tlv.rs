//! The switch's Geneve option table (Open vSwitch's tunnel-metadata
//! table): which option (class, type, length) each `tun_metadataN` field
//! stands for. Changed by NXT_TLV_TABLE_MOD ([`ofp::msg::tlv_table`]), read
//! back by NXT_TLV_TABLE_REQUEST.
//!
//! A change applies whole or not at all, with Open vSwitch's checks in
//! its order (`tun_metadata_table_mod`): ADD refuses a field already
//! mapped (`NXTTMFC_ALREADY_MAPPED`), an option another field stands for
//! (`NXTTMFC_DUP_ENTRY`) and options that together need more than
//! [`MAX_OPTION_SPACE`] bytes (`NXTTMFC_TABLE_FULL`); DELETE forgets the
//! fields named (one not mapped is no error); CLEAR forgets them all.
//!
//! DELETE or CLEAR of a field a flow or group uses is
//! `NXTTMFC_INVALID_TLV_DEL` (the caller says which fields are in use:
//! [`fields_used`]). A flow naming a field that is not mapped is
//! `NXFMFC_INVALID_TLV_FIELD` ([`TlvTable::check`]).
//!
//! sluice's limits (docs/OVS-DIALECT.md): an option longer than
//! [`ofp::oxm::TUN_METADATA_MAX_LEN`] (16) bytes is refused where it is
//! mapped (`NXTTMFC_BAD_OPT_LEN`: Open vSwitch takes up to 124); any
//! field index may be mapped, but a flow naming one the flow key holds no
//! value for ([`packet::TUN_METADATA_KEY_FIELDS`]) is `OFPBMC_BAD_FIELD`.
//!
//! Frames: each snapshot carries the table as a [`GeneveMap`]. A frame a
//! Geneve port received has its options read into the key before its
//! first lookup ([`GeneveMap::read`]), as Open vSwitch translates them:
//! a mapped option of another length than its mapping's, an unmapped
//! critical option or options that run past their end drop the frame
//! (counted: `Worker::tun_options_refused`); other unmapped options are
//! passed over. A frame output with `tun_metadataN` fields present
//! carries them out as options ([`GeneveMap::write`]), in field order,
//! the C bit set by the port when one is critical.

use ofp::action::Action;
use ofp::msg::tlv_table::{
    TlvCommand, TlvMap, TlvTableMod, TlvTableReply, NXFMFC_INVALID_TLV_FIELD,
    NXTTMFC_ALREADY_MAPPED, NXTTMFC_BAD_OPT_LEN, NXTTMFC_DUP_ENTRY, NXTTMFC_INVALID_TLV_DEL,
    NXTTMFC_TABLE_FULL, TUN_METADATA_FIELDS,
};
use ofp::oxm::{MatchEntry, OxmField, TUN_METADATA_MAX_LEN};
use ofp::{ErrorCode, Instruction, Match, OfpError};
use packet::FlowKey;

/// The `tun_metadataN` fields a match and actions name, as a bitmap
/// (bit N: field N), as Open vSwitch's `tlv_bitmap` counts them: the
/// match's fields, and those actions read or write.
pub fn fields_used<'a>(m: &Match, actions: impl IntoIterator<Item = &'a Action>) -> u64 {
    let mut used = 0u64;
    let mut note = |f: OxmField| {
        if let Some(n) = f.tun_metadata_index() {
            used |= 1 << n;
        }
    };
    for e in &m.entries {
        if let MatchEntry::Basic(o) = e {
            note(o.field);
        }
    }
    fn walk(a: &Action, note: &mut dyn FnMut(OxmField)) {
        match a {
            Action::SetField(MatchEntry::Basic(o)) => note(o.field),
            Action::RegLoad(l) => note(l.dst),
            Action::RegMove(m) => {
                note(m.src);
                note(m.dst);
            }
            Action::StackPush(f) | Action::StackPop(f) => note(f.field),
            Action::OutputReg(o) => note(o.src.field),
            Action::Multipath(m) => note(m.dst.field),
            Action::Bundle(b) => {
                if let Some(d) = &b.dst {
                    note(d.field)
                }
            }
            Action::Clone(list) => list.iter().for_each(|a| walk(a, note)),
            Action::Ct(c) => c.actions.iter().for_each(|a| walk(a, note)),
            _ => {}
        }
    }
    for a in actions {
        walk(a, &mut note);
    }
    used
}

/// The actions of a flow entry's instructions.
pub fn instruction_actions(ins: &[Instruction]) -> impl Iterator<Item = &Action> {
    ins.iter().flat_map(|i| match i {
        Instruction::ApplyActions(l) | Instruction::WriteActions(l) => &l[..],
        _ => &[][..],
    })
}

/// The bytes of options all mapped fields may need together (Open
/// vSwitch's `TUN_METADATA_TOT_OPT_SIZE`).
pub const MAX_OPTION_SPACE: u32 = 256;

/// The table: one optional mapping per field index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlvTable {
    fields: [Option<TlvMap>; TUN_METADATA_FIELDS as usize],
}

impl Default for TlvTable {
    fn default() -> Self {
        TlvTable {
            fields: [None; TUN_METADATA_FIELDS as usize],
        }
    }
}

impl TlvTable {
    /// Applies `m` whole, or changes nothing and names the error.
    /// `in_use`: the fields flows and groups use ([`fields_used`]), which
    /// DELETE and CLEAR may not unmap.
    pub fn apply(&mut self, m: &TlvTableMod, in_use: u64) -> Result<(), ErrorCode> {
        let mut next = self.clone();
        match m.command {
            TlvCommand::Add => {
                for map in &m.maps {
                    let i = map.index as usize;
                    // sluice's limit: the value a field holds.
                    if map.len > TUN_METADATA_MAX_LEN {
                        return Err(NXTTMFC_BAD_OPT_LEN);
                    }
                    if next.fields[i].is_some() {
                        return Err(NXTTMFC_ALREADY_MAPPED);
                    }
                    if next
                        .fields
                        .iter()
                        .flatten()
                        .any(|f| (f.class, f.ty) == (map.class, map.ty))
                    {
                        return Err(NXTTMFC_DUP_ENTRY);
                    }
                    next.fields[i] = Some(*map);
                    if next.space() > MAX_OPTION_SPACE {
                        return Err(NXTTMFC_TABLE_FULL);
                    }
                }
            }
            TlvCommand::Delete => {
                for map in &m.maps {
                    let i = map.index as usize;
                    if next.fields[i].is_some() && in_use >> i & 1 != 0 {
                        return Err(NXTTMFC_INVALID_TLV_DEL);
                    }
                    next.fields[i] = None;
                }
            }
            TlvCommand::Clear | TlvCommand::Unknown(_) => {
                if in_use != 0 {
                    return Err(NXTTMFC_INVALID_TLV_DEL);
                }
                next = TlvTable::default()
            }
        }
        *self = next;
        Ok(())
    }

    /// The option bytes the mapped fields take.
    fn space(&self) -> u32 {
        self.fields.iter().flatten().map(|f| f.len as u32).sum()
    }

    /// Checks that every field in `used` ([`fields_used`]) is mapped:
    /// else `NXFMFC_INVALID_TLV_FIELD`, as Open vSwitch answers a flow
    /// naming an unmapped variable-length field.
    pub fn check(&self, used: u64) -> Result<(), OfpError> {
        let mapped = self
            .fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.is_some())
            .fold(0u64, |a, (i, _)| a | 1 << i);
        if used & !mapped != 0 {
            return Err(OfpError::new(
                NXFMFC_INVALID_TLV_FIELD,
                "a tun_metadata field the option table does not map",
            ));
        }
        if used >> packet::TUN_METADATA_KEY_FIELDS != 0 {
            return Err(OfpError::new(
                ErrorCode::BadMatch(ofp::error::BadMatchCode::BadField),
                "sluice's flow key holds tun_metadata0 and tun_metadata1 only",
            ));
        }
        Ok(())
    }

    /// The field `index` stands for, if mapped.
    pub fn get(&self, index: u16) -> Option<TlvMap> {
        self.fields.get(index as usize).copied().flatten()
    }

    /// NXT_TLV_TABLE_REPLY: the limits and the mappings, by field index.
    pub fn reply(&self) -> TlvTableReply {
        TlvTableReply {
            max_option_space: MAX_OPTION_SPACE,
            max_fields: TUN_METADATA_FIELDS,
            maps: self.fields.iter().flatten().copied().collect(),
        }
    }
}

/// The option table as a worker reads it: the mapped fields, to read a
/// received frame's Geneve options into the flow key's `tun_metadataN`
/// words and to write the options a frame sent to a Geneve port carries.
/// Published in each snapshot; built from the [`TlvTable`] when it
/// changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GeneveMap {
    /// The mapped fields, by index.
    entries: Vec<TlvMap>,
}

/// Why a received frame's Geneve options were refused (as Open vSwitch
/// refuses them when it translates a frame's options into its fields:
/// the frame is dropped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionsError {
    /// An option runs past the options' end.
    Malformed,
    /// A mapped option with another length than its mapping's.
    Length,
    /// A critical option (type's high bit) the table does not map.
    UnknownCritical,
}

impl GeneveMap {
    /// The map of `t`.
    pub fn of(t: &TlvTable) -> GeneveMap {
        GeneveMap {
            entries: t.fields.iter().flatten().copied().collect(),
        }
    }

    /// Whether no option is mapped.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Reads a received frame's options (`opts`, the bytes after the
    /// fixed header) into `key`: each mapped option whose field the key
    /// holds ([`packet::TUN_METADATA_KEY_FIELDS`]) becomes that field,
    /// present, its bytes right-aligned in the field's 16; an option not
    /// mapped is passed over unless it is critical. On an error the key
    /// may hold some fields: the frame is to be dropped.
    pub fn read(&self, opts: &[u8], key: &mut FlowKey) -> Result<(), OptionsError> {
        let mut rest = opts;
        while !rest.is_empty() {
            let h: &[u8; 4] = rest
                .get(..4)
                .and_then(|h| h.try_into().ok())
                .ok_or(OptionsError::Malformed)?;
            let len = 4 * (h[3] & 0x1f) as usize;
            let data = rest.get(4..4 + len).ok_or(OptionsError::Malformed)?;
            let (class, ty) = (u16::from_be_bytes([h[0], h[1]]), h[2]);
            match self.entries.iter().find(|e| (e.class, e.ty) == (class, ty)) {
                Some(e) if e.len as usize != len => return Err(OptionsError::Length),
                Some(e) => {
                    let mut v = [0u8; 16];
                    v[16 - len..].copy_from_slice(data);
                    key.set_tun_metadata(e.index as usize, u128::from_be_bytes(v));
                }
                None if ty & 0x80 != 0 => return Err(OptionsError::UnknownCritical),
                None => {}
            }
            rest = &rest[4 + len..];
        }
        Ok(())
    }

    /// The options a frame with `key` carries out of a Geneve port: one
    /// per present field the table maps, in field order, its mapping's
    /// length of the value's low bytes. None when no field is present
    /// (the usual frame: nothing allocated).
    #[inline]
    pub fn write(&self, key: &FlowKey) -> Option<Box<[u8]>> {
        if key.get(packet::slots::TUN_METADATA_PRESENT) == 0 {
            return None;
        }
        self.write_present(key)
    }

    #[cold]
    fn write_present(&self, key: &FlowKey) -> Option<Box<[u8]>> {
        let mut out = Vec::new();
        let mut fields: Vec<&TlvMap> = self.entries.iter().collect();
        fields.sort_by_key(|e| e.index);
        for e in fields {
            let Some(v) = key.tun_metadata(e.index as usize) else {
                continue;
            };
            let len = e.len as usize;
            out.extend_from_slice(&e.class.to_be_bytes());
            out.push(e.ty);
            out.push((len / 4) as u8);
            out.extend_from_slice(&v.to_be_bytes()[16 - len..]);
        }
        (!out.is_empty()).then(|| out.into_boxed_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(class: u16, ty: u8, len: u8, index: u16) -> TlvMap {
        TlvMap {
            class,
            ty,
            len,
            index,
        }
    }

    fn add(maps: Vec<TlvMap>) -> TlvTableMod {
        TlvTableMod {
            command: TlvCommand::Add,
            maps,
        }
    }

    #[test]
    fn adds_deletes_and_clears_as_open_vswitch_does() {
        let mut t = TlvTable::default();
        t.apply(&add(vec![map(0x0102, 0x80, 4, 0)]), 0).unwrap();
        assert_eq!(t.reply().maps, vec![map(0x0102, 0x80, 4, 0)]);
        assert_eq!(
            t.apply(&add(vec![map(1, 1, 4, 0)]), 0),
            Err(NXTTMFC_ALREADY_MAPPED)
        );
        assert_eq!(
            t.apply(&add(vec![map(0x0102, 0x80, 8, 1)]), 0),
            Err(NXTTMFC_DUP_ENTRY)
        );
        // All or nothing: the first map of a refused mod is not kept.
        assert_eq!(
            t.apply(&add(vec![map(1, 1, 4, 1), map(1, 1, 4, 0)]), 0),
            Err(NXTTMFC_ALREADY_MAPPED)
        );
        assert_eq!(t.get(1), None);
        t.apply(
            &TlvTableMod {
                command: TlvCommand::Delete,
                maps: vec![map(0, 0, 0, 1), map(0, 0, 0, 40)],
            },
            0,
        )
        .unwrap();
        assert_eq!(t.reply().maps.len(), 1);
        t.apply(
            &TlvTableMod {
                command: TlvCommand::Clear,
                maps: vec![],
            },
            0,
        )
        .unwrap();
        assert_eq!(t.reply().maps, vec![]);
        assert_eq!(
            (t.reply().max_option_space, t.reply().max_fields),
            (256, 64)
        );
    }

    #[test]
    fn sluices_limits_are_refused_where_an_option_is_mapped() {
        let mut t = TlvTable::default();
        // 16 bytes is the most a field holds here (Open vSwitch: 124).
        assert_eq!(
            t.apply(&add(vec![map(1, 1, 20, 0)]), 0),
            Err(NXTTMFC_BAD_OPT_LEN)
        );
        t.apply(&add(vec![map(1, 1, 16, 0)]), 0).unwrap();
        // Any index is mapped; the key holds the first
        // TUN_METADATA_KEY_FIELDS fields, and a flow may name only those.
        let past = packet::TUN_METADATA_KEY_FIELDS as u16;
        t.apply(&add(vec![map(1, 2, 4, past)]), 0).unwrap();
        assert_eq!(
            t.check(1 << past).unwrap_err().code,
            ErrorCode::BadMatch(ofp::error::BadMatchCode::BadField)
        );
        t.check(1).unwrap();
    }

    #[test]
    fn a_field_in_use_is_not_unmapped_and_an_unmapped_one_not_used() {
        let mut t = TlvTable::default();
        let fm = ofp::text::parse_flow_mod(
            "tun_id=1,actions=move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14]",
        )
        .unwrap();
        let used = fields_used(&fm.match_, instruction_actions(&fm.instructions));
        assert_eq!(used, 1);
        let fm = ofp::text::parse_flow_mod(
            "tun_metadata1=0x2/0xffff,actions=clone(set_field:1->tun_metadata0)",
        )
        .unwrap();
        assert_eq!(
            fields_used(&fm.match_, instruction_actions(&fm.instructions)),
            3
        );
        assert_eq!(t.check(used).unwrap_err().code, NXFMFC_INVALID_TLV_FIELD);
        t.apply(&add(vec![map(0x0102, 0x80, 4, 0), map(1, 1, 4, 1)]), 0)
            .unwrap();
        t.check(used).unwrap();
        let del = |i| TlvTableMod {
            command: TlvCommand::Delete,
            maps: vec![map(0, 0, 0, i)],
        };
        let clear = TlvTableMod {
            command: TlvCommand::Clear,
            maps: vec![],
        };
        assert_eq!(t.apply(&del(0), used), Err(NXTTMFC_INVALID_TLV_DEL));
        assert_eq!(t.apply(&clear, used), Err(NXTTMFC_INVALID_TLV_DEL));
        t.apply(&del(1), used).unwrap();
        assert_eq!(t.get(0).map(|m| m.len), Some(4));
        t.apply(&clear, 0).unwrap();
        assert_eq!(t.get(0), None);
    }
}
