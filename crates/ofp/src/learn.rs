//! Open vSwitch's `learn` (Nicira `NXAST_LEARN`, subtype 16, and
//! `NXAST_LEARN2`, subtype 45): a flow whose action adds another flow,
//! built from the packet that runs it (MAC learning, connection pinning,
//! "reply to where the request came from").
//!
//! Wire form: the experimenter header and subtype; idle and hard timeouts,
//! priority, cookie, flags, table, fin idle and fin hard timeouts (32
//! bytes in all); `NXAST_LEARN2` adds a limit, the offset of the result
//! bit and, with `NX_LEARN_F_WRITE_RESULT`, its field's header. Then flow
//! specs until the action's end or a zero spec header, padded to 8 bytes.
//! A spec's header packs the source kind (bit 13: an immediate value, or
//! a field), the destination kind (bits 11-12: a match field of the new
//! flow, a load action, an output action) and the number of bits (0-9).
//! A field source is its NXM header and an offset; an immediate one
//! `ceil(n_bits / 16)` 16-bit words; match and load destinations a header
//! and an offset. `ovs-ofctl -O OpenFlow13` 3.1 writes `NXAST_LEARN`
//! unless a limit or a result bit asks for `NXAST_LEARN2`.
//!
//! Decoding checks what Open vSwitch's decoder checks, with
//! `OFPBAC_BAD_ARGUMENT`: known fields, bits inside them, a writable load
//! destination, an immediate value that fits its bits.

use bytes::BufMut;

use crate::error::{BadActionCode, ErrorCode, OfpError};
use crate::oxm::OxmField;
use crate::wire::Reader;

type Result<T> = std::result::Result<T, OfpError>;

/// Nicira action subtype `NXAST_LEARN`.
pub const NXAST_LEARN: u16 = 16;
/// Nicira action subtype `NXAST_LEARN2`.
pub const NXAST_LEARN2: u16 = 45;

/// `NX_LEARN_F_*`.
pub mod flags {
    /// The learned flow has OFPFF_SEND_FLOW_REM.
    pub const SEND_FLOW_REM: u16 = 1;
    /// Deleting the learning flow deletes the flows it learned.
    pub const DELETE_LEARNED: u16 = 2;
    /// Whether the flow was learned is written to `result_dst`.
    pub const WRITE_RESULT: u16 = 4;
}

/// Where a spec's bits come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LearnSrc {
    /// Bits `[ofs, ofs + n_bits)` of the packet's field.
    Field(OxmField, u16),
    /// A constant (`< 2^n_bits`).
    Immediate(u128),
}

/// Where a spec's bits go in the learned flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LearnDst {
    /// Its match: bits `[ofs, ofs + n_bits)` of the field.
    Match(OxmField, u16),
    /// A load action into bits `[ofs, ofs + n_bits)` of the field.
    Load(OxmField, u16),
    /// An output action to the port the bits give.
    Output,
}

/// One flow spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LearnSpec {
    pub src: LearnSrc,
    pub dst: LearnDst,
    pub n_bits: u16,
}

/// A `learn(...)` action.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Learn {
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub priority: u16,
    pub cookie: u64,
    /// [`flags`].
    pub flags: u16,
    pub table_id: u8,
    pub fin_idle_timeout: u16,
    pub fin_hard_timeout: u16,
    /// Most flows this action may have in its table (0: no limit).
    pub limit: u32,
    /// With [`flags::WRITE_RESULT`]: the bit that gets 1 if the flow was
    /// learned, 0 if not (a limit reached).
    pub result_dst: Option<(OxmField, u16)>,
    pub specs: Vec<LearnSpec>,
}

impl Default for Learn {
    fn default() -> Self {
        Learn {
            idle_timeout: 0,
            hard_timeout: 0,
            priority: 0x8000,
            cookie: 0,
            flags: 0,
            table_id: 1,
            fin_idle_timeout: 0,
            fin_hard_timeout: 0,
            limit: 0,
            result_dst: None,
            specs: Vec::new(),
        }
    }
}

fn bad(detail: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadAction(BadActionCode::BadArgument), detail)
}

fn width(f: OxmField) -> u16 {
    f.subfield_bits()
}

fn fits(f: OxmField, ofs: u16, n_bits: u16) -> bool {
    f.info().is_some() && ofs as u32 + n_bits as u32 <= width(f) as u32
}

const SRC_IMMEDIATE: u16 = 1 << 13;
const DST_LOAD: u16 = 1 << 11;
const DST_OUTPUT: u16 = 2 << 11;
const N_BITS: u16 = 0x3ff;

impl Learn {
    /// Whether the wire form is `NXAST_LEARN2`.
    pub fn is_learn2(&self) -> bool {
        self.limit != 0 || self.result_dst.is_some()
    }

    /// Open vSwitch's checks of a learn action on its own.
    pub fn check(&self) -> Result<()> {
        if let Some((f, ofs)) = self.result_dst {
            if !fits(f, ofs, 1) || !f.info().is_some_and(|i| i.settable) {
                return Err(bad("learn result_dst is not a writable bit"));
            }
        }
        if self.table_id == 0xff {
            return Err(bad("learn table 255 is not a table"));
        }
        for s in &self.specs {
            if s.n_bits == 0 || s.n_bits > N_BITS {
                return Err(bad("learn spec of no bits"));
            }
            match s.src {
                LearnSrc::Field(f, ofs) if !fits(f, ofs, s.n_bits) => {
                    return Err(bad("learn source bits outside the field"))
                }
                LearnSrc::Immediate(v) if s.n_bits < 128 && v >> s.n_bits != 0 => {
                    return Err(bad("learn immediate value wider than its bits"))
                }
                _ => {}
            }
            match s.dst {
                LearnDst::Match(f, ofs) if !fits(f, ofs, s.n_bits) => {
                    return Err(bad("learn match bits outside the field"))
                }
                LearnDst::Load(f, ofs)
                    if !fits(f, ofs, s.n_bits) || !f.info().is_some_and(|i| i.settable) =>
                {
                    return Err(bad("learn load destination not writable bits of a field"))
                }
                LearnDst::Output if matches!(s.src, LearnSrc::Immediate(_)) => {
                    return Err(bad("learn output takes a field"))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The body after the action header: experimenter id onwards.
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u32(crate::action::NX_VENDOR_ID);
        out.put_u16(if self.is_learn2() {
            NXAST_LEARN2
        } else {
            NXAST_LEARN
        });
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.priority);
        out.put_u64(self.cookie);
        let write_result = if self.result_dst.is_some() {
            flags::WRITE_RESULT
        } else {
            0
        };
        out.put_u16((self.flags & !flags::WRITE_RESULT) | write_result);
        out.put_u8(self.table_id);
        out.put_u8(0);
        out.put_u16(self.fin_idle_timeout);
        out.put_u16(self.fin_hard_timeout);
        if self.is_learn2() {
            out.put_u32(self.limit);
            out.put_u16(self.result_dst.map_or(0, |r| r.1));
            out.put_u16(0);
            if let Some((f, _)) = self.result_dst {
                out.put_u32(f.nxm_header().unwrap_or(0));
            }
        }
        for s in &self.specs {
            let (src_bit, dst_bits) = (
                match s.src {
                    LearnSrc::Immediate(_) => SRC_IMMEDIATE,
                    LearnSrc::Field(..) => 0,
                },
                match s.dst {
                    LearnDst::Match(..) => 0,
                    LearnDst::Load(..) => DST_LOAD,
                    LearnDst::Output => DST_OUTPUT,
                },
            );
            out.put_u16(src_bit | dst_bits | (s.n_bits & N_BITS));
            match s.src {
                LearnSrc::Field(f, ofs) => {
                    out.put_u32(f.nxm_header().unwrap_or(0));
                    out.put_u16(ofs);
                }
                LearnSrc::Immediate(v) => {
                    let words = s.n_bits.div_ceil(16) as usize;
                    let bytes = v.to_be_bytes();
                    let n = (2 * words).min(16);
                    out.put_bytes(0, 2 * words - n);
                    out.extend_from_slice(&bytes[16 - n..]);
                }
            }
            if let LearnDst::Match(f, ofs) | LearnDst::Load(f, ofs) = s.dst {
                out.put_u32(f.nxm_header().unwrap_or(0));
                out.put_u16(ofs);
            }
        }
        // The caller pads to 8 with zeros: a zero spec header ends the list.
    }

    /// Reads the body after the experimenter id (`len`: the whole action's).
    pub(crate) fn decode_body(len: usize, mut b: Reader<'_>) -> Result<Learn> {
        if len < 32 || !len.is_multiple_of(8) {
            return Err(OfpError::new(
                ErrorCode::ACTION_BAD_LEN,
                "learn is at least 32 bytes, in 8-byte units",
            ));
        }
        let subtype = b.u16()?;
        let mut l = Learn {
            idle_timeout: b.u16()?,
            hard_timeout: b.u16()?,
            priority: b.u16()?,
            cookie: b.u64()?,
            flags: b.u16()?,
            table_id: b.u8()?,
            ..Learn::default()
        };
        b.u8()?;
        l.fin_idle_timeout = b.u16()?;
        l.fin_hard_timeout = b.u16()?;
        if l.flags & !(flags::SEND_FLOW_REM | flags::DELETE_LEARNED | flags::WRITE_RESULT) != 0 {
            return Err(bad("learn flags unknown"));
        }
        let field = |h: u32| {
            OxmField::from_nxm_header_any_len(h)
                .filter(|f| f.info().is_some())
                .ok_or_else(|| bad("learn names a field sluice does not know"))
        };
        if subtype == NXAST_LEARN2 {
            l.limit = b.u32()?;
            let ofs = b.u16()?;
            b.u16()?;
            if l.flags & flags::WRITE_RESULT != 0 {
                l.result_dst = Some((field(b.u32()?)?, ofs));
            }
        } else if l.flags & flags::WRITE_RESULT != 0 {
            return Err(bad("learn result needs NXAST_LEARN2"));
        }
        l.flags &= !flags::WRITE_RESULT;
        while b.remaining() >= 2 {
            let h = b.u16()?;
            if h == 0 {
                break;
            }
            let n_bits = h & N_BITS;
            if h & 0xc000 != 0 || (h >> 11) & 3 == 3 {
                return Err(bad("learn spec header unknown"));
            }
            let src = if h & SRC_IMMEDIATE != 0 {
                let words = n_bits.div_ceil(16) as usize;
                let raw = b.slice(2 * words)?;
                if raw.len() > 16 && raw[..raw.len() - 16].iter().any(|&x| x != 0) {
                    return Err(bad("learn immediate value wider than its bits"));
                }
                let tail = &raw[raw.len().saturating_sub(16)..];
                let mut a = [0u8; 16];
                a[16 - tail.len()..].copy_from_slice(tail);
                LearnSrc::Immediate(u128::from_be_bytes(a))
            } else {
                let f = field(b.u32()?)?;
                LearnSrc::Field(f, b.u16()?)
            };
            let dst = match h & (3 << 11) {
                0 => LearnDst::Match(field(b.u32()?)?, b.u16()?),
                DST_LOAD => LearnDst::Load(field(b.u32()?)?, b.u16()?),
                _ => LearnDst::Output,
            };
            l.specs.push(LearnSpec { src, dst, n_bits });
        }
        if b.rest().iter().any(|&x| x != 0) {
            return Err(bad("learn padding not zero"));
        }
        l.check()?;
        Ok(l)
    }
}
