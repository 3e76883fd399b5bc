//! METER_MOD and meter bands (also used by the METER_CONFIG reply).

use bytes::{BufMut, Bytes};

use crate::error::{ErrorCode, MeterModFailedCode, OfpError, Result};
use crate::macros::wire_enum;
use crate::wire::{zeros, Reader};

wire_enum! {
    /// `ofp_meter_mod_command`.
    pub enum MeterModCommand: u16 {
        Add = 0 => "add",
        Modify = 1 => "modify",
        Delete = 2 => "delete",
    }
}

/// `ofp_meter_flags`.
pub mod meter_flags {
    pub const KBPS: u16 = 1 << 0;
    pub const PKTPS: u16 = 1 << 1;
    pub const BURST: u16 = 1 << 2;
    pub const STATS: u16 = 1 << 3;
}

/// `ofp_meter_band_type` values.
pub mod band_type {
    pub const DROP: u16 = 1;
    pub const DSCP_REMARK: u16 = 2;
    pub const EXPERIMENTER: u16 = 0xffff;
}

/// One meter band.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MeterBand {
    Drop {
        rate: u32,
        burst_size: u32,
    },
    DscpRemark {
        rate: u32,
        burst_size: u32,
        prec_level: u8,
    },
    Experimenter {
        rate: u32,
        burst_size: u32,
        experimenter: u32,
        data: Bytes,
    },
}

impl MeterBand {
    /// Rate (kb/s or packets/s, per the meter's flags).
    pub fn rate(&self) -> u32 {
        match self {
            MeterBand::Drop { rate, .. }
            | MeterBand::DscpRemark { rate, .. }
            | MeterBand::Experimenter { rate, .. } => *rate,
        }
    }

    /// Burst size (kb or packets).
    pub fn burst_size(&self) -> u32 {
        match self {
            MeterBand::Drop { burst_size, .. }
            | MeterBand::DscpRemark { burst_size, .. }
            | MeterBand::Experimenter { burst_size, .. } => *burst_size,
        }
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let (ty, len) = match self {
            MeterBand::Drop { .. } => (band_type::DROP, 16),
            MeterBand::DscpRemark { .. } => (band_type::DSCP_REMARK, 16),
            MeterBand::Experimenter { data, .. } => (band_type::EXPERIMENTER, 16 + data.len()),
        };
        out.put_u16(ty);
        out.put_u16(len as u16);
        out.put_u32(self.rate());
        out.put_u32(self.burst_size());
        match self {
            MeterBand::Drop { .. } => zeros(out, 4),
            MeterBand::DscpRemark { prec_level, .. } => {
                out.put_u8(*prec_level);
                zeros(out, 3);
            }
            MeterBand::Experimenter {
                experimenter, data, ..
            } => {
                out.put_u32(*experimenter);
                out.extend_from_slice(data);
            }
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MeterBand> {
        let bad_band = ErrorCode::MeterModFailed(MeterModFailedCode::BadBand);
        let ty = r.u16()?;
        let len = r.u16()? as usize;
        if len < 16 {
            return Err(OfpError::new(
                ErrorCode::BAD_LEN,
                "meter band shorter than 16 bytes",
            ));
        }
        let mut b = r.sub(len - 4, ErrorCode::BAD_LEN)?;
        let rate = b.u32()?;
        let burst_size = b.u32()?;
        let band = match ty {
            band_type::DROP => MeterBand::Drop { rate, burst_size },
            band_type::DSCP_REMARK => MeterBand::DscpRemark {
                rate,
                burst_size,
                prec_level: b.u8()?,
            },
            band_type::EXPERIMENTER => {
                let experimenter = b.u32()?;
                return Ok(MeterBand::Experimenter {
                    rate,
                    burst_size,
                    experimenter,
                    data: b.rest(),
                });
            }
            _ => return Err(OfpError::new(bad_band, "unknown meter band type")),
        };
        if len != 16 {
            return Err(OfpError::new(
                ErrorCode::BAD_LEN,
                "meter band of wrong length",
            ));
        }
        Ok(band)
    }
}

/// Decodes bands filling all of `r`.
pub(crate) fn decode_bands(r: &mut Reader<'_>) -> Result<Vec<MeterBand>> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(MeterBand::decode(r)?);
    }
    Ok(v)
}

/// OFPT_METER_MOD.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeterMod {
    pub command: MeterModCommand,
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

impl MeterMod {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.command.value());
        out.put_u16(self.flags);
        out.put_u32(self.meter_id);
        for b in &self.bands {
            b.encode(out);
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MeterMod> {
        let command = MeterModCommand::from(r.u16()?);
        let flags = r.u16()?;
        let meter_id = r.u32()?;
        Ok(MeterMod {
            command,
            flags,
            meter_id,
            bands: decode_bands(r)?,
        })
    }
}
