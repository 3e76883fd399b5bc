//! OpenFlow 1.5's COPY_FIELD (28) and METER (29) actions onto the
//! internal (1.3-shaped) actions and instructions, as byte-level
//! rewrites of an action or instruction list (the rest of each list is
//! copied as it is, and the 1.3 codec reads or wrote it).
//!
//! Contract, following Open vSwitch (lib/ofp-actions.c):
//!
//! * COPY_FIELD (`ofp15_action_copy_field`: n_bits, src_offset,
//!   dst_offset, two OXM headers, 24 bytes) is the internal
//!   `Action::RegMove`, whose 1.3 form is Nicira's NXAST_REG_MOVE (the
//!   same numbers and headers): read into it, and an `Action::RegMove`
//!   is written as COPY_FIELD to 1.5 peers (Open vSwitch's `encode_REG_MOVE`
//!   does the same). A COPY_FIELD naming experimenter OXMs, or of another
//!   length, is left as it is and the 1.3 decoder refuses it
//!   (`OFPBAC_BAD_TYPE`).
//! * SET_FIELD may carry a mask in 1.5, and Open vSwitch writes every
//!   partial `load:` that way (`set_field:0x1/0x1->reg10`). A masked
//!   SET_FIELD is read as the NXAST_REG_LOADs that write the same bits
//!   (one per run of ones, 64 bits at most each: the internal
//!   `Action::RegLoad`), or as the unmasked SET_FIELD when the mask is
//!   the whole field; for a variable-length field (`tun_metadataN`),
//!   which NXAST_REG_LOAD cannot name, as NXAST_REG_LOAD2s, one per run
//!   of ones. Written to 1.5 peers, every NXAST_REG_LOAD and
//!   NXAST_REG_LOAD2 is a SET_FIELD (masked unless it sets the whole
//!   field), as Open vSwitch writes them: so a flow dumps as Open vSwitch
//!   dumps it in either version.
//! * Nested lists (`ct(exec(...))`, `clone(...)`) are rewritten the same
//!   way, to the decoder's depth limit.
//! * METER (`ofp_action_meter`) is the internal `Instruction::Meter`:
//!   Open vSwitch writes the meter as the first action of the
//!   apply-actions list in 1.5 and refuses it elsewhere. Read: a METER
//!   first in APPLY_ACTIONS becomes a meter instruction placed where the
//!   apply-actions instruction is (an apply-actions left empty by it is
//!   dropped); a METER later in APPLY_ACTIONS is
//!   `OFPBAC_UNSUPPORTED_ORDER`; one in WRITE_ACTIONS, a bucket or a
//!   PACKET_OUT is `OFPBAC_BAD_TYPE` (Open vSwitch's "meter action not
//!   allowed here"). Written: the meter instruction's id goes first into
//!   the apply-actions list, or into an apply-actions list of its own
//!   where the flow has none. The 1.3 meter instruction (type 6) received
//!   from a 1.5 peer is `OFPBIC_UNKNOWN_INST`, as Open vSwitch answers.

use bytes::BufMut;

use crate::action::{Action, NX_VENDOR_ID};
use crate::ct::NXAST_CT;
use crate::error::{BadActionCode, BadInstructionCode, ErrorCode, OfpError, Result};
use crate::nicira::{MAX_NESTING, NXAST_CLONE};
use crate::oxm::{MatchEntry, Oxm, OxmField};

const OFPAT15_COPY_FIELD: u16 = 28;
const OFPAT15_METER: u16 = 29;
const NXAST_REG_MOVE: u16 = 6;
const NXAST_REG_LOAD: u16 = 7;
const OFPAT_SET_FIELD: u16 = 25;
const OFPIT_WRITE_ACTIONS: u16 = 3;
const OFPIT_APPLY_ACTIONS: u16 = 4;
const OFPIT_METER: u16 = 6;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// The TLVs of `src` (type, whole TLV); stops, handing back the rest, at
/// the first one whose length does not fit (the 1.3 decoder then reports
/// it).
fn tlvs(src: &[u8]) -> (Vec<(u16, &[u8])>, &[u8]) {
    let mut v = Vec::new();
    let mut i = 0;
    while src.len() - i >= 4 {
        let len = be16(src, i + 2) as usize;
        if len < 4 || len > src.len() - i {
            break;
        }
        v.push((be16(src, i), &src[i..i + len]));
        i += len;
    }
    (v, &src[i..])
}

fn is_experimenter_oxm(h: &[u8]) -> bool {
    h[0] == 0xff && h[1] == 0xff
}

/// COPY_FIELD as NXAST_REG_MOVE, when it is the plain 24-byte form.
fn copy_field_to_reg_move(a: &[u8], out: &mut Vec<u8>) -> bool {
    if a.len() != 24 || is_experimenter_oxm(&a[12..16]) || is_experimenter_oxm(&a[16..20]) {
        return false;
    }
    out.put_u16(0xffff);
    out.put_u16(24);
    out.put_u32(NX_VENDOR_ID);
    out.put_u16(NXAST_REG_MOVE);
    out.extend_from_slice(&a[4..10]); // n_bits, src_ofs, dst_ofs
    out.extend_from_slice(&a[12..20]); // src, dst headers
    true
}

/// NXAST_REG_MOVE as COPY_FIELD, when it is the plain 24-byte form.
fn reg_move_to_copy_field(a: &[u8], out: &mut Vec<u8>) -> bool {
    if a.len() != 24
        || be16(a, 0) != 0xffff
        || a[4..8] != NX_VENDOR_ID.to_be_bytes()
        || be16(a, 8) != NXAST_REG_MOVE
    {
        return false;
    }
    out.put_u16(OFPAT15_COPY_FIELD);
    out.put_u16(24);
    out.extend_from_slice(&a[10..16]);
    out.put_u16(0);
    out.extend_from_slice(&a[16..24]);
    out.put_u32(0);
    true
}

fn meter_not_here() -> OfpError {
    OfpError::new(
        ErrorCode::BadAction(BadActionCode::BadType),
        "meter action not allowed here",
    )
}

/// Where the nested action list of a Nicira `ct` (24-byte head) or
/// `clone` (16) starts; `None` for any other action.
fn nested_at(a: &[u8]) -> Option<usize> {
    if a.len() < 10 || be16(a, 0) != 0xffff || a[4..8] != NX_VENDOR_ID.to_be_bytes() {
        return None;
    }
    match be16(a, 8) {
        NXAST_CT if a.len() >= 24 => Some(24),
        NXAST_CLONE if a.len() >= 16 => Some(16),
        _ => None,
    }
}

/// Copies action `a` whose nested list starts at `at`, the list rewritten
/// by `each`, and sets the copy's length.
fn with_nested(
    a: &[u8],
    at: usize,
    out: &mut Vec<u8>,
    each: impl FnOnce(&[u8], &mut Vec<u8>) -> Result<()>,
) -> Result<()> {
    let start = out.len();
    out.extend_from_slice(&a[..at]);
    each(&a[at..], out)?;
    let len = (out.len() - start) as u16;
    out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
    Ok(())
}

fn get_be(b: &[u8]) -> u128 {
    b.iter().fold(0u128, |v, &x| (v << 8) | x as u128)
}

/// A masked SET_FIELD (OpenFlow 1.5 allows the mask; Open vSwitch writes
/// every partial `load:` this way) as the NXAST_REG_LOADs that set the
/// same bits: one per run of ones in the mask, 64 bits at most each, the
/// form Open vSwitch gives such a write when it dumps it to an older
/// version. A mask of the whole field is the unmasked SET_FIELD. `false`
/// (the action left as it is, for the decoder to judge) for an unmasked
/// one, an experimenter, unknown or read-only field, an empty mask, value bits
/// outside the mask, mask bits beyond the field's or non-zero padding.
fn masked_set_field_in(a: &[u8], out: &mut Vec<u8>) -> bool {
    if a.len() < 8 {
        return false;
    }
    let h = u32::from_be_bytes([a[4], a[5], a[6], a[7]]);
    let n = (h & 0xff) as usize;
    if h & 0x100 == 0 || !n.is_multiple_of(2) || n > 32 || 8 + n > a.len() {
        return false;
    }
    let w = n / 2;
    let exact = (h & !0x1ff) | w as u32;
    let Some(f) = OxmField::from_nxm_header(exact).filter(|&f| crate::action::loadable(f)) else {
        return false;
    };
    let (value, mask) = (get_be(&a[8..8 + w]), get_be(&a[8 + w..8 + n]));
    if mask == 0 || value & !mask != 0 || a[8 + n..].iter().any(|&x| x != 0) {
        return false;
    }
    // A variable-length field (`tun_metadataN`) has no NXAST_REG_LOAD
    // header: an NXAST_REG_LOAD2 of the same OXM for each run of ones, as
    // Open vSwitch dumps such a write to 1.3 peers
    // (`set_field:0x70/0x70->tun_metadata0`).
    if f.is_variable_len() {
        let mut m = mask;
        while m != 0 {
            let ofs = m.trailing_zeros();
            let run = (m >> ofs).trailing_ones();
            let bits = crate::action::bits_mask(ofs as u16, run as u16);
            let start = out.len();
            out.put_u16(0xffff);
            out.put_u16(0);
            out.put_u32(NX_VENDOR_ID);
            out.put_u16(crate::action::NXAST_REG_LOAD2);
            out.put_u32(h);
            out.extend_from_slice(&(value & bits).to_be_bytes()[16 - w..]);
            out.extend_from_slice(&bits.to_be_bytes()[16 - w..]);
            out.resize(start + (out.len() - start).div_ceil(8) * 8, 0);
            let len = (out.len() - start) as u16;
            out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
            m &= !bits;
        }
        return true;
    }
    if mask == f.width_mask() {
        let start = out.len();
        out.put_u16(OFPAT_SET_FIELD);
        out.put_u16(0);
        out.put_u32(exact);
        out.extend_from_slice(&a[8..8 + w]);
        out.resize(start + (out.len() - start).div_ceil(8) * 8, 0);
        let len = (out.len() - start) as u16;
        out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
        return true;
    }
    if mask & !f.full_mask() != 0 {
        return false;
    }
    let mut m = mask;
    while m != 0 {
        let ofs = m.trailing_zeros();
        let run = (m >> ofs).trailing_ones();
        let mut k = 0;
        while k < run {
            let nb = (run - k).min(64);
            out.put_u16(0xffff);
            out.put_u16(24);
            out.put_u32(NX_VENDOR_ID);
            out.put_u16(NXAST_REG_LOAD);
            out.put_u16((((ofs + k) as u16) << 6) | (nb as u16 - 1));
            out.put_u32(exact);
            out.put_u64((value >> (ofs + k)) as u64 & (u64::MAX >> (64 - nb)));
            k += nb;
        }
        m &= !crate::action::bits_mask(ofs as u16, run as u16);
    }
    true
}

/// NXAST_REG_LOAD and NXAST_REG_LOAD2 as the SET_FIELD Open vSwitch
/// writes for them to 1.5 peers (it has no reg_load there): masked unless
/// the load sets the whole field. `false` for any other action, or a load
/// of a header sluice does not know.
fn load_to_set_field(a: &[u8], out: &mut Vec<u8>) -> bool {
    if a.len() < 14 || be16(a, 0) != 0xffff || a[4..8] != NX_VENDOR_ID.to_be_bytes() {
        return false;
    }
    let b = bytes::Bytes::copy_from_slice(a);
    let mut r = crate::wire::Reader::new(&b, ErrorCode::ACTION_BAD_LEN);
    let Ok(Action::RegLoad(l)) = Action::decode(&mut r) else {
        return false;
    };
    let m = l.masked();
    let o = if m
        .mask
        .is_some_and(|x| x & l.dst.width_mask() == l.dst.width_mask())
    {
        Oxm::exact(l.dst, m.value)
    } else {
        m
    };
    Action::SetField(MatchEntry::Basic(o)).encode(out);
    true
}

/// Whether instructions the 1.3 codec read from 1.5 bytes are what the
/// translation would give: no meter instruction (1.5 refuses it) and no
/// masked SET_FIELD at any depth (the translation reads it as loads).
pub(crate) fn read_as_they_lie(insts: &[crate::Instruction]) -> bool {
    fn plain(acts: &[Action]) -> bool {
        acts.iter().all(|a| match a {
            Action::SetField(MatchEntry::Basic(o)) => o.mask.is_none(),
            Action::Ct(c) => plain(&c.actions),
            Action::Clone(l) => plain(l),
            _ => true,
        })
    }
    insts.iter().all(|i| match i {
        crate::Instruction::Meter(_) => false,
        crate::Instruction::ApplyActions(a) | crate::Instruction::WriteActions(a) => plain(a),
        _ => true,
    })
}

/// An action list of 1.5 in its 1.3 form (no METER allowed: see the
/// module doc), nested lists (`ct`'s, `clone`'s) too.
pub(crate) fn actions_in(src: &[u8], out: &mut Vec<u8>) -> Result<()> {
    actions_in_nested(src, out, 0)
}

fn actions_in_nested(src: &[u8], out: &mut Vec<u8>, depth: u32) -> Result<()> {
    let (list, rest) = tlvs(src);
    for (ty, a) in list {
        match ty {
            OFPAT15_METER => return Err(meter_not_here()),
            OFPAT15_COPY_FIELD if copy_field_to_reg_move(a, out) => {}
            OFPAT_SET_FIELD if masked_set_field_in(a, out) => {}
            _ => match nested_at(a) {
                // Deeper than the decoder goes: it refuses the list.
                Some(at) if depth + 1 < MAX_NESTING => {
                    with_nested(a, at, out, |l, o| actions_in_nested(l, o, depth + 1))?
                }
                _ => out.extend_from_slice(a),
            },
        }
    }
    out.extend_from_slice(rest);
    Ok(())
}

/// An action list of 1.3 in its 1.5 form, nested lists too.
pub(crate) fn actions_out(src: &[u8], out: &mut Vec<u8>) {
    let (list, rest) = tlvs(src);
    for (_, a) in list {
        if reg_move_to_copy_field(a, out) || load_to_set_field(a, out) {
            continue;
        }
        match nested_at(a) {
            Some(at) => {
                let _ = with_nested(a, at, out, |l, o| {
                    actions_out(l, o);
                    Ok(())
                });
            }
            None => out.extend_from_slice(a),
        }
    }
    out.extend_from_slice(rest);
}

/// An instruction list of 1.5 in its 1.3 form.
pub(crate) fn instructions_in(src: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let (list, rest) = tlvs(src);
    for (ty, inst) in list {
        match ty {
            OFPIT_METER => {
                return Err(OfpError::new(
                    ErrorCode::BadInstruction(BadInstructionCode::UnknownInst),
                    "meter is an action, not an instruction, in OpenFlow 1.5",
                ))
            }
            OFPIT_WRITE_ACTIONS | OFPIT_APPLY_ACTIONS if inst.len() >= 8 => {
                let mut acts = &inst[8..];
                if ty == OFPIT_APPLY_ACTIONS && acts.len() >= 8 && be16(acts, 0) == OFPAT15_METER {
                    if be16(acts, 2) != 8 {
                        return Err(OfpError::new(
                            ErrorCode::ACTION_BAD_LEN,
                            "meter action length",
                        ));
                    }
                    out.put_u16(OFPIT_METER);
                    out.put_u16(8);
                    out.extend_from_slice(&acts[4..8]);
                    acts = &acts[8..];
                    if acts.is_empty() {
                        continue;
                    }
                }
                let start = out.len();
                out.extend_from_slice(&inst[..8]);
                if let Err(e) = actions_in(acts, out) {
                    return Err(if ty == OFPIT_APPLY_ACTIONS {
                        OfpError::new(
                            ErrorCode::BadAction(BadActionCode::UnsupportedOrder),
                            "meter action not first in apply-actions",
                        )
                    } else {
                        e
                    });
                }
                let len = (out.len() - start) as u16;
                out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
            }
            _ => out.extend_from_slice(inst),
        }
    }
    out.extend_from_slice(rest);
    Ok(())
}

/// An instruction list of 1.3 in its 1.5 form.
pub(crate) fn instructions_out(src: &[u8], out: &mut Vec<u8>) {
    let (list, rest) = tlvs(src);
    let meter = list
        .iter()
        .find(|(ty, i)| *ty == OFPIT_METER && i.len() == 8)
        .map(|(_, i)| [i[4], i[5], i[6], i[7]]);
    let has_apply = list
        .iter()
        .any(|(ty, i)| *ty == OFPIT_APPLY_ACTIONS && i.len() >= 8);
    for (ty, inst) in list {
        match ty {
            OFPIT_METER if inst.len() == 8 => {
                if !has_apply {
                    out.put_u16(OFPIT_APPLY_ACTIONS);
                    out.put_u16(16);
                    out.put_u32(0);
                    out.put_u16(OFPAT15_METER);
                    out.put_u16(8);
                    out.extend_from_slice(&inst[4..8]);
                }
            }
            OFPIT_WRITE_ACTIONS | OFPIT_APPLY_ACTIONS if inst.len() >= 8 => {
                let start = out.len();
                out.extend_from_slice(&inst[..8]);
                if let (OFPIT_APPLY_ACTIONS, Some(m)) = (ty, meter) {
                    out.put_u16(OFPAT15_METER);
                    out.put_u16(8);
                    out.extend_from_slice(&m);
                }
                actions_out(&inst[8..], out);
                let len = (out.len() - start) as u16;
                out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
            }
            _ => out.extend_from_slice(inst),
        }
    }
    out.extend_from_slice(rest);
}
