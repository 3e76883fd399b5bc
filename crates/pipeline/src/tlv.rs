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
//! What is absent: the `tun_metadataN` fields themselves (matching and
//! setting them, and carrying them in and out of Geneve ports); until
//! they are, no flow uses a mapping, so DELETE and CLEAR never answer
//! `NXTTMFC_INVALID_TLV_DEL`.

use ofp::msg::tlv_table::{
    TlvCommand, TlvMap, TlvTableMod, TlvTableReply, NXTTMFC_ALREADY_MAPPED, NXTTMFC_DUP_ENTRY,
    NXTTMFC_TABLE_FULL, TUN_METADATA_FIELDS,
};
use ofp::ErrorCode;

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
    pub fn apply(&mut self, m: &TlvTableMod) -> Result<(), ErrorCode> {
        let mut next = self.clone();
        match m.command {
            TlvCommand::Add => {
                for map in &m.maps {
                    let i = map.index as usize;
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
                    next.fields[map.index as usize] = None;
                }
            }
            TlvCommand::Clear | TlvCommand::Unknown(_) => next = TlvTable::default(),
        }
        *self = next;
        Ok(())
    }

    /// The option bytes the mapped fields take.
    fn space(&self) -> u32 {
        self.fields.iter().flatten().map(|f| f.len as u32).sum()
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
        t.apply(&add(vec![map(0x0102, 0x80, 4, 0)])).unwrap();
        assert_eq!(t.reply().maps, vec![map(0x0102, 0x80, 4, 0)]);
        assert_eq!(
            t.apply(&add(vec![map(1, 1, 4, 0)])),
            Err(NXTTMFC_ALREADY_MAPPED)
        );
        assert_eq!(
            t.apply(&add(vec![map(0x0102, 0x80, 8, 1)])),
            Err(NXTTMFC_DUP_ENTRY)
        );
        // All or nothing: the first map of a refused mod is not kept.
        assert_eq!(
            t.apply(&add(vec![map(1, 1, 4, 1), map(1, 1, 4, 2)])),
            Err(NXTTMFC_DUP_ENTRY)
        );
        assert_eq!(t.get(1), None);
        // 4 + 124 + 124 = 252 fits; 4 more does not.
        t.apply(&add(vec![map(1, 1, 124, 1), map(1, 2, 124, 2)]))
            .unwrap();
        assert_eq!(
            t.apply(&add(vec![map(1, 3, 8, 3)])),
            Err(NXTTMFC_TABLE_FULL)
        );
        t.apply(&TlvTableMod {
            command: TlvCommand::Delete,
            maps: vec![map(0, 0, 0, 1), map(0, 0, 0, 40)],
        })
        .unwrap();
        assert_eq!(t.reply().maps.len(), 2);
        t.apply(&TlvTableMod {
            command: TlvCommand::Clear,
            maps: vec![],
        })
        .unwrap();
        assert_eq!(t.reply().maps, vec![]);
        assert_eq!(
            (t.reply().max_option_space, t.reply().max_fields),
            (256, 64)
        );
    }
}
