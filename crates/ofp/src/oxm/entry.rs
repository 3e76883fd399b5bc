//! One field of a match or set_field on the wire: [`Oxm`] (a field of the
//! table with its value and optional mask), [`OtherOxm`] (any other class,
//! kept verbatim) and [`MatchEntry`] (either), with their codec and the
//! check of one field on its own ([`Oxm::validate`]).

use bytes::{BufMut, Bytes};

use super::{
    OxmField, ONF_EXPERIMENTER, ONF_TCP_FLAGS, OXM_CLASS_BASIC, OXM_CLASS_EXPERIMENTER,
    OXM_CLASS_NXM_0, OXM_CLASS_NXM_1, OXM_CLASS_PACKET_REGS,
};
use crate::error::{BadMatchCode, ErrorCode, OfpError, Result};
use crate::wire::Reader;

/// One basic-class match field, with an optional mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Oxm {
    pub field: OxmField,
    /// Big-endian value in the field's width.
    pub value: u128,
    /// `None` for an exact match.
    pub mask: Option<u128>,
}

impl Oxm {
    /// An exact match.
    pub fn exact(field: OxmField, value: u128) -> Self {
        Oxm {
            field,
            value,
            mask: None,
        }
    }

    /// A masked match; a mask of all ones (in the wire width) is kept as given.
    pub fn masked(field: OxmField, value: u128, mask: u128) -> Self {
        Oxm {
            field,
            value,
            mask: Some(mask),
        }
    }

    /// The mask in effect (all ones in the wire width when exact).
    pub fn effective_mask(&self) -> u128 {
        self.mask.unwrap_or_else(|| self.field.width_mask())
    }

    /// Bytes this OXM takes on the wire.
    pub fn wire_len(&self) -> usize {
        if self.field.is_variable_len() {
            return 4 + (self.wire_width() << self.mask.is_some() as usize);
        }
        (self.field.header(self.mask.is_some()) & 0xff) as usize + 4
    }

    /// Bytes of the value (and of the mask) on the wire: the field's
    /// width, but for a `tun_metadataN` field the fewest that hold value
    /// and mask, leading zero bytes dropped (none for an exact zero), as
    /// ovs-ofctl writes it (`mf_field_len`). Open vSwitch's switch writes
    /// the mapped option's length instead; either reads the same.
    pub fn wire_width(&self) -> usize {
        if self.field.is_variable_len() {
            let bits = 128 - (self.value | self.mask.unwrap_or(0)).leading_zeros() as usize;
            return bits.div_ceil(8);
        }
        self.field.info().map_or(0, |i| i.width as usize)
    }

    /// Appends the OXM TLV.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let w = self.wire_width();
        let mut header = self.field.header(self.mask.is_some());
        if self.field.is_variable_len() {
            header = (header & !0xff) | (w << self.mask.is_some() as usize) as u32;
        }
        out.put_u32(header);
        if self.field == OxmField::TcpFlags {
            out.put_u32(ONF_EXPERIMENTER);
        }
        put_be(out, self.value, w);
        if let Some(m) = self.mask {
            put_be(out, m, w);
        }
    }

    /// Checks one field on its own: mask allowed, value in range, value bits
    /// inside the mask.
    pub fn validate(&self) -> Result<()> {
        let info = self.field.info().ok_or(OfpError::new(
            ErrorCode::BadMatch(BadMatchCode::BadField),
            "unknown OXM field",
        ))?;
        let full = self.field.full_mask();
        // ct_state is 32 bits on the wire with 8 defined: other value bits
        // are OFPBMC_BAD_VALUE (Open vSwitch's `mf_is_value_valid`), mask
        // bits are not checked.
        let values = if self.field == OxmField::CtState {
            crate::ct::state::ALL as u128
        } else {
            full
        };
        if self.value & !values != 0 {
            return Err(OfpError::new(
                ErrorCode::BadMatch(BadMatchCode::BadValue),
                "value out of range for field",
            ));
        }
        if let Some(m) = self.mask {
            if !info.maskable {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadMask),
                    "field cannot be masked",
                ));
            }
            if m & !full != 0 {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadMask),
                    "mask out of range for field",
                ));
            }
            if self.value & !m != 0 {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadWildcards),
                    "value has bits set outside its mask",
                ));
            }
        }
        Ok(())
    }
}

fn put_be(out: &mut Vec<u8>, v: u128, width: usize) {
    out.extend_from_slice(&v.to_be_bytes()[16 - width..]);
}

#[inline]
fn get_be(b: &[u8]) -> u128 {
    let mut a = [0u8; 16];
    let n = b.len().min(16);
    a[16 - n..].copy_from_slice(&b[b.len() - n..]);
    u128::from_be_bytes(a)
}

/// An OXM of a class other than OpenFlow basic, kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OtherOxm {
    pub class: u16,
    pub field: u8,
    pub has_mask: bool,
    /// The payload (for the experimenter class it starts with the experimenter id).
    pub body: Bytes,
}

impl OtherOxm {
    /// The experimenter id, for the experimenter class.
    pub fn experimenter(&self) -> Option<u32> {
        (self.class == OXM_CLASS_EXPERIMENTER && self.body.len() >= 4)
            .then(|| u32::from_be_bytes([self.body[0], self.body[1], self.body[2], self.body[3]]))
    }
}

/// One entry of a match or a set_field action.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MatchEntry {
    Basic(Oxm),
    Other(OtherOxm),
}

impl MatchEntry {
    /// Bytes on the wire.
    pub fn wire_len(&self) -> usize {
        match self {
            MatchEntry::Basic(o) => o.wire_len(),
            MatchEntry::Other(o) => 4 + o.body.len(),
        }
    }

    /// Appends the TLV.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            MatchEntry::Basic(o) => o.encode(out),
            MatchEntry::Other(o) => {
                out.put_u16(o.class);
                out.put_u8((o.field << 1) | o.has_mask as u8);
                out.put_u8(o.body.len() as u8);
                out.extend_from_slice(&o.body);
            }
        }
    }

    /// Decodes one TLV; `bad_len` is the error for inconsistent lengths.
    #[inline]
    pub fn decode(r: &mut Reader<'_>, bad_len: ErrorCode) -> Result<MatchEntry> {
        let hdr = r.u32()?;
        let (class, field, has_mask, len) = (
            (hdr >> 16) as u16,
            ((hdr >> 9) & 0x7f) as u8,
            hdr & 0x100 != 0,
            (hdr & 0xff) as usize,
        );
        let mut body = r
            .slice(len)
            .map_err(|_| OfpError::new(bad_len, "OXM longer than its container"))?;
        let nicira = match class {
            // Open vSwitch reads NXM headers wherever it reads OXM ones
            // (`set_field:3->in_port` is NXM_OF_IN_PORT's header).
            OXM_CLASS_NXM_0 => OxmField::from_nxm_header_any_len(hdr & !0x1ff),
            // Class 1 holds both the fields whose own header it is and
            // the NXM names of basic ones (`NXM_NX_IPV6_SRC`, an nx_match's).
            OXM_CLASS_NXM_1 => OxmField::from_nxm_1(field)
                .or_else(|| OxmField::from_nxm_header_any_len(hdr & !0x1ff)),
            OXM_CLASS_PACKET_REGS => OxmField::from_packet_regs(field),
            // OpenFlow 1.5's OXM_OF_TCP_FLAGS: read in every version, as
            // Open vSwitch reads it (written in the ONF form but to 1.5
            // peers, see `of1x::v15`).
            OXM_CLASS_BASIC if field == ONF_TCP_FLAGS => Some(OxmField::TcpFlags),
            OXM_CLASS_EXPERIMENTER
                if field == ONF_TCP_FLAGS
                    && body.len() >= 4
                    && body[..4] == ONF_EXPERIMENTER.to_be_bytes() =>
            {
                body = &body[4..];
                Some(OxmField::TcpFlags)
            }
            _ => None,
        };
        let len = body.len();
        if class != OXM_CLASS_BASIC && nicira.is_none() {
            if class == OXM_CLASS_EXPERIMENTER && len < 4 {
                return Err(OfpError::new(
                    bad_len,
                    "experimenter OXM without experimenter id",
                ));
            }
            return Ok(MatchEntry::Other(OtherOxm {
                class,
                field,
                has_mask,
                body: Bytes::copy_from_slice(body),
            }));
        }
        // A 7-bit field number never names a Nicira field (values >= 128).
        let f = nicira.unwrap_or(OxmField::from(field));
        let Some(info) = f.info() else {
            return Err(OfpError::new(
                ErrorCode::BadMatch(BadMatchCode::BadField),
                "unknown OXM basic field",
            ));
        };
        let w = if f.is_variable_len() {
            // Any length up to Open vSwitch's 124 bytes, value and mask
            // alike: the value is the low bytes (Open vSwitch right-aligns
            // it), and sluice keeps 16 of them.
            let w = len >> has_mask as usize;
            if w > 124 || len != w << has_mask as usize {
                return Err(OfpError::new(bad_len, "OXM length does not fit its field"));
            }
            let high = w.saturating_sub(info.width as usize);
            let over = |b: &[u8]| b[..high].iter().any(|&x| x != 0);
            if over(body) || (has_mask && over(&body[w..])) {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadValue),
                    "tunnel metadata longer than 16 bytes",
                ));
            }
            w
        } else {
            info.width as usize
        };
        if len != w << has_mask as usize {
            return Err(OfpError::new(bad_len, "OXM length does not fit its field"));
        }
        let value = get_be(&body[..w]);
        let mask = if has_mask {
            Some(get_be(&body[w..2 * w]))
        } else {
            None
        };
        Ok(MatchEntry::Basic(Oxm {
            field: f,
            value,
            mask,
        }))
    }
}
