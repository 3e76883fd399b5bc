//! `ofp_table_features` and its properties (multipart TABLE_FEATURES).

use bytes::{BufMut, Bytes};

use crate::error::{ErrorCode, OfpError, Result, TableFeaturesFailedCode};
use crate::wire::{len_placeholder, pad8, pad_to_8, patch_len, zeros, FixedStr, Reader};

/// An instruction or action id in a property: its type and, for experimenter
/// ids, the bytes after the 4-byte header (the experimenter id and more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeId {
    pub ty: u16,
    pub data: Bytes,
}

/// An OXM id: the 32-bit OXM header, plus the experimenter id for
/// experimenter-class fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OxmId {
    pub header: u32,
    pub experimenter: Option<u32>,
}

/// Property type numbers (`ofp_table_feature_prop_type`).
pub mod prop_type {
    pub const INSTRUCTIONS: u16 = 0;
    pub const INSTRUCTIONS_MISS: u16 = 1;
    pub const NEXT_TABLES: u16 = 2;
    pub const NEXT_TABLES_MISS: u16 = 3;
    pub const WRITE_ACTIONS: u16 = 4;
    pub const WRITE_ACTIONS_MISS: u16 = 5;
    pub const APPLY_ACTIONS: u16 = 6;
    pub const APPLY_ACTIONS_MISS: u16 = 7;
    pub const MATCH: u16 = 8;
    pub const WILDCARDS: u16 = 10;
    pub const WRITE_SETFIELD: u16 = 12;
    pub const WRITE_SETFIELD_MISS: u16 = 13;
    pub const APPLY_SETFIELD: u16 = 14;
    pub const APPLY_SETFIELD_MISS: u16 = 15;
    pub const EXPERIMENTER: u16 = 0xfffe;
    pub const EXPERIMENTER_MISS: u16 = 0xffff;
}

/// One table feature property; the property's wire type is kept so that
/// `_MISS` variants round-trip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableFeatureProp {
    /// INSTRUCTIONS / INSTRUCTIONS_MISS.
    Instructions { ty: u16, ids: Vec<TypeId> },
    /// NEXT_TABLES / NEXT_TABLES_MISS.
    NextTables { ty: u16, tables: Vec<u8> },
    /// WRITE_ACTIONS / APPLY_ACTIONS and their _MISS variants.
    Actions { ty: u16, ids: Vec<TypeId> },
    /// MATCH, WILDCARDS, WRITE_SETFIELD, APPLY_SETFIELD and their _MISS variants.
    Oxms { ty: u16, ids: Vec<OxmId> },
    /// EXPERIMENTER / EXPERIMENTER_MISS.
    Experimenter {
        ty: u16,
        experimenter: u32,
        exp_type: u32,
        data: Bytes,
    },
}

impl TableFeatureProp {
    fn ty(&self) -> u16 {
        match self {
            TableFeatureProp::Instructions { ty, .. }
            | TableFeatureProp::NextTables { ty, .. }
            | TableFeatureProp::Actions { ty, .. }
            | TableFeatureProp::Oxms { ty, .. }
            | TableFeatureProp::Experimenter { ty, .. } => *ty,
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.ty());
        let at = len_placeholder(out);
        match self {
            TableFeatureProp::Instructions { ids, .. } | TableFeatureProp::Actions { ids, .. } => {
                for id in ids {
                    out.put_u16(id.ty);
                    out.put_u16((4 + id.data.len()) as u16);
                    out.extend_from_slice(&id.data);
                }
            }
            TableFeatureProp::NextTables { tables, .. } => out.extend_from_slice(tables),
            TableFeatureProp::Oxms { ids, .. } => {
                for id in ids {
                    out.put_u32(id.header);
                    if let Some(e) = id.experimenter {
                        out.put_u32(e);
                    }
                }
            }
            TableFeatureProp::Experimenter {
                experimenter,
                exp_type,
                data,
                ..
            } => {
                out.put_u32(*experimenter);
                out.put_u32(*exp_type);
                out.extend_from_slice(data);
            }
        }
        patch_len(out, at, start);
        pad_to_8(out, start);
    }

    fn decode(r: &mut Reader<'_>) -> Result<TableFeatureProp> {
        let bad_len = ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::BadLen);
        let ty = r.u16()?;
        let len = r.u16()? as usize;
        if len < 4 {
            return Err(OfpError::new(
                bad_len,
                "table feature property shorter than its header",
            ));
        }
        let mut b = r.sub(len - 4, bad_len)?;
        r.skip(pad8(len) - len)?;
        use prop_type::*;
        Ok(match ty {
            INSTRUCTIONS | INSTRUCTIONS_MISS | WRITE_ACTIONS | WRITE_ACTIONS_MISS
            | APPLY_ACTIONS | APPLY_ACTIONS_MISS => {
                let mut ids = Vec::new();
                while !b.is_empty() {
                    let t = b.u16()?;
                    let l = b.u16()? as usize;
                    if l < 4 {
                        return Err(OfpError::new(bad_len, "id shorter than its header"));
                    }
                    ids.push(TypeId {
                        ty: t,
                        data: b.bytes(l - 4)?,
                    });
                }
                if ty <= INSTRUCTIONS_MISS {
                    TableFeatureProp::Instructions { ty, ids }
                } else {
                    TableFeatureProp::Actions { ty, ids }
                }
            }
            NEXT_TABLES | NEXT_TABLES_MISS => TableFeatureProp::NextTables {
                ty,
                tables: b.rest().to_vec(),
            },
            MATCH | WILDCARDS | WRITE_SETFIELD | WRITE_SETFIELD_MISS | APPLY_SETFIELD
            | APPLY_SETFIELD_MISS => {
                let mut ids = Vec::new();
                while !b.is_empty() {
                    let header = b.u32()?;
                    let experimenter = if header >> 16 == 0xffff {
                        Some(b.u32()?)
                    } else {
                        None
                    };
                    ids.push(OxmId {
                        header,
                        experimenter,
                    });
                }
                TableFeatureProp::Oxms { ty, ids }
            }
            EXPERIMENTER | EXPERIMENTER_MISS => TableFeatureProp::Experimenter {
                ty,
                experimenter: b.u32()?,
                exp_type: b.u32()?,
                data: b.rest(),
            },
            _ => {
                return Err(OfpError::new(
                    ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::BadType),
                    "unknown table feature property",
                ))
            }
        })
    }
}

/// `ofp_table_features`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableFeatures {
    pub table_id: u8,
    pub name: FixedStr<32>,
    pub metadata_match: u64,
    pub metadata_write: u64,
    pub config: u32,
    pub max_entries: u32,
    pub properties: Vec<TableFeatureProp>,
}

impl TableFeatures {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let at = len_placeholder(out);
        out.put_u8(self.table_id);
        zeros(out, 5);
        out.extend_from_slice(&self.name.0);
        out.put_u64(self.metadata_match);
        out.put_u64(self.metadata_write);
        out.put_u32(self.config);
        out.put_u32(self.max_entries);
        for p in &self.properties {
            p.encode(out);
        }
        patch_len(out, at, start);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<TableFeatures> {
        let bad_len = ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::BadLen);
        let len = r.u16()? as usize;
        if len < 64 {
            return Err(OfpError::new(
                bad_len,
                "table features shorter than 64 bytes",
            ));
        }
        let mut b = r.sub(len - 2, bad_len)?;
        let table_id = b.u8()?;
        b.skip(5)?;
        let name = FixedStr(b.array()?);
        let metadata_match = b.u64()?;
        let metadata_write = b.u64()?;
        let config = b.u32()?;
        let max_entries = b.u32()?;
        let mut properties = Vec::new();
        while !b.is_empty() {
            properties.push(TableFeatureProp::decode(&mut b)?);
        }
        Ok(TableFeatures {
            table_id,
            name,
            metadata_match,
            metadata_write,
            config,
            max_entries,
            properties,
        })
    }
}
