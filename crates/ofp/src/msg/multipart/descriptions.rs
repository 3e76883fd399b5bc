//! What multipart replies describe rather than count: the switch
//! (`ofp_desc`), its groups (`ofp_group_desc`) and meters
//! (`ofp_meter_config`) as configured, and what its groups
//! (`ofp_group_features`) and meters (`ofp_meter_features`) support, each
//! with its encode and decode side by side.
//!
//! Contract: `encode` appends the wire form; `decode` reads one record.
//! Group descriptions and meter configs carry their length: it is checked
//! (at least the 8-byte fixed part, `OFPBRC_BAD_LEN` otherwise) and their
//! buckets or bands are read within it. The others are fixed-size.

use bytes::BufMut;

use crate::error::{ErrorCode, OfpError, Result};
use crate::msg::group::{decode_buckets, Bucket, GroupType};
use crate::msg::meter::{decode_bands, MeterBand};
use crate::msg::selection::SelectionMethod;
use crate::wire::{len_placeholder, patch_len, zeros, FixedStr, Reader};

/// `ofp_desc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Desc {
    pub mfr_desc: FixedStr<256>,
    pub hw_desc: FixedStr<256>,
    pub sw_desc: FixedStr<256>,
    pub serial_num: FixedStr<32>,
    pub dp_desc: FixedStr<256>,
}

impl Desc {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.mfr_desc.0);
        out.extend_from_slice(&self.hw_desc.0);
        out.extend_from_slice(&self.sw_desc.0);
        out.extend_from_slice(&self.serial_num.0);
        out.extend_from_slice(&self.dp_desc.0);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Desc> {
        Ok(Desc {
            mfr_desc: FixedStr(r.array()?),
            hw_desc: FixedStr(r.array()?),
            sw_desc: FixedStr(r.array()?),
            serial_num: FixedStr(r.array()?),
            dp_desc: FixedStr(r.array()?),
        })
    }
}

/// `ofp_group_desc` (`ofp15_group_desc_stats` in 1.5, with bucket ids and
/// the selection method; 1.1-1.4 number the buckets 0, 1, ... and have no
/// selection method).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDesc {
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
    pub selection: Option<SelectionMethod>,
}

impl GroupDesc {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let at = len_placeholder(out);
        out.put_u8(self.group_type.value());
        zeros(out, 1);
        out.put_u32(self.group_id);
        self.buckets.iter().for_each(|b| b.encode(out));
        patch_len(out, at, start);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<GroupDesc> {
        let len = r.u16()? as usize;
        if len < 8 {
            return Err(OfpError::new(ErrorCode::BAD_LEN, "bad group desc length"));
        }
        let mut b = r.sub(len - 2, ErrorCode::BAD_LEN)?;
        let group_type = GroupType::from(b.u8()?);
        b.skip(1)?;
        let group_id = b.u32()?;
        Ok(GroupDesc {
            group_type,
            group_id,
            buckets: decode_buckets(&mut b)?,
            selection: None,
        })
    }
}

/// `ofp_group_features`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupFeatures {
    pub types: u32,
    pub capabilities: u32,
    pub max_groups: [u32; 4],
    pub actions: [u32; 4],
}

impl GroupFeatures {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.types);
        out.put_u32(self.capabilities);
        self.max_groups.iter().for_each(|x| out.put_u32(*x));
        self.actions.iter().for_each(|x| out.put_u32(*x));
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<GroupFeatures> {
        let types = r.u32()?;
        let capabilities = r.u32()?;
        let mut max_groups = [0u32; 4];
        let mut actions = [0u32; 4];
        for x in max_groups.iter_mut().chain(actions.iter_mut()) {
            *x = r.u32()?;
        }
        Ok(GroupFeatures {
            types,
            capabilities,
            max_groups,
            actions,
        })
    }
}

/// `ofp_meter_config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeterConfig {
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

impl MeterConfig {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let at = len_placeholder(out);
        out.put_u16(self.flags);
        out.put_u32(self.meter_id);
        self.bands.iter().for_each(|b| b.encode(out));
        patch_len(out, at, start);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MeterConfig> {
        let len = r.u16()? as usize;
        if len < 8 {
            return Err(OfpError::new(ErrorCode::BAD_LEN, "bad meter config length"));
        }
        let mut b = r.sub(len - 2, ErrorCode::BAD_LEN)?;
        let flags = b.u16()?;
        let meter_id = b.u32()?;
        Ok(MeterConfig {
            flags,
            meter_id,
            bands: decode_bands(&mut b)?,
        })
    }
}

/// `ofp_meter_features`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MeterFeatures {
    pub max_meter: u32,
    pub band_types: u32,
    pub capabilities: u32,
    pub max_bands: u8,
    pub max_color: u8,
}

impl MeterFeatures {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.max_meter);
        out.put_u32(self.band_types);
        out.put_u32(self.capabilities);
        out.put_u8(self.max_bands);
        out.put_u8(self.max_color);
        zeros(out, 2);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MeterFeatures> {
        let m = MeterFeatures {
            max_meter: r.u32()?,
            band_types: r.u32()?,
            capabilities: r.u32()?,
            max_bands: r.u8()?,
            max_color: r.u8()?,
        };
        r.skip(2)?;
        Ok(m)
    }
}
