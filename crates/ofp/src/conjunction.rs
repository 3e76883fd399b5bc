//! Open vSwitch's `conjunction(id, k/n)` (Nicira `NXAST_CONJUNCTION`,
//! subtype 34): the flow that carries it is clause `k` of the `n`-clause
//! conjunctive match `id`. Such a flow is never the result of a lookup; a
//! packet that matches a flow of every clause of `id` is looked up again
//! with `conj_id=id` (the pipeline's `conjunction` module does that).
//!
//! Wire form (16 bytes): experimenter header, subtype, the clause (k - 1),
//! the number of clauses, the id. Open vSwitch's rules, checked here with
//! `OFPBAC_BAD_ARGUMENT`: 2 to 64 clauses, k within them. A flow's
//! actions may mix conjunctions only with notes ([`check_flow_actions`]).

use bytes::BufMut;

use crate::error::{BadActionCode, ErrorCode, OfpError};
use crate::wire::Reader;

type Result<T> = std::result::Result<T, OfpError>;

/// Nicira action subtype `NXAST_CONJUNCTION`.
pub const NXAST_CONJUNCTION: u16 = 34;

/// Most clauses a conjunctive match may have (Open vSwitch's limit).
pub const MAX_CLAUSES: u8 = 64;

/// One `conjunction(id, k/n)` action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Conjunction {
    pub id: u32,
    /// The clause, 1-based as written (`k`); the wire carries k - 1.
    pub clause: u8,
    pub n_clauses: u8,
}

fn bad(detail: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadAction(BadActionCode::BadArgument), detail)
}

impl Conjunction {
    /// Open vSwitch's checks (its error texts, shortened).
    pub fn check(&self) -> Result<()> {
        if self.n_clauses < 2 {
            return Err(bad("conjunction must have at least 2 clauses"));
        }
        if self.n_clauses > MAX_CLAUSES {
            return Err(bad("conjunction must have at most 64 clauses"));
        }
        if self.clause == 0 {
            return Err(bad("conjunction clause index must be positive"));
        }
        if self.clause > self.n_clauses {
            return Err(bad(
                "conjunction clause index must be at most the number of clauses",
            ));
        }
        Ok(())
    }

    /// The body after the action header: experimenter id onwards.
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u32(crate::action::NX_VENDOR_ID);
        out.put_u16(NXAST_CONJUNCTION);
        out.put_u8(self.clause.wrapping_sub(1));
        out.put_u8(self.n_clauses);
        out.put_u32(self.id);
    }

    /// Reads the body after the experimenter id (`len`: the whole action's).
    pub(crate) fn decode_body(len: usize, mut b: Reader<'_>) -> Result<Conjunction> {
        if len != 16 {
            return Err(OfpError::new(
                ErrorCode::ACTION_BAD_LEN,
                "conjunction is 16 bytes long",
            ));
        }
        let _subtype = b.u16()?;
        let clause = b.u8()?;
        let n_clauses = b.u8()?;
        let id = b.u32()?;
        let c = Conjunction {
            id,
            clause: clause
                .checked_add(1)
                .ok_or_else(|| bad("conjunction clause out of range"))?,
            n_clauses,
        };
        c.check()?;
        Ok(c)
    }
}

/// Open vSwitch's rule for a flow with conjunction actions: only
/// conjunctions and notes, in one apply-actions, and no other instruction.
/// Returns whether the flow is conjunctive (has any conjunction).
pub fn check_flow(instructions: &[crate::instruction::Instruction]) -> Result<bool> {
    use crate::action::Action;
    use crate::instruction::Instruction;
    let has = instructions.iter().any(|i| match i {
        Instruction::ApplyActions(a) | Instruction::WriteActions(a) => {
            a.iter().any(|a| matches!(a, Action::Conjunction(_)))
        }
        _ => false,
    });
    if !has {
        return Ok(false);
    }
    let only = matches!(instructions, [Instruction::ApplyActions(list)]
        if list.iter().all(|a| matches!(a, Action::Conjunction(_)) || is_note(a)));
    if !only {
        return Err(bad(
            "conjunction actions may be used along with note but not any other kind of action",
        ));
    }
    Ok(true)
}

/// Conjunctions belong in flows only: not in a packet-out or a group.
pub fn refuse_outside_flows(actions: &[crate::action::Action]) -> Result<()> {
    if actions
        .iter()
        .any(|a| matches!(a, crate::action::Action::Conjunction(_)))
    {
        return Err(bad("conjunction is only meaningful in a flow"));
    }
    Ok(())
}

/// Whether `a` is Open vSwitch's `note` (NXAST_NOTE, subtype 8), kept as
/// an experimenter action or its own variant.
fn is_note(a: &crate::action::Action) -> bool {
    match a {
        crate::action::Action::Note(_) => true,
        crate::action::Action::Experimenter { experimenter, data } => {
            *experimenter == crate::action::NX_VENDOR_ID
                && data.len() >= 2
                && u16::from_be_bytes([data[0], data[1]]) == 8
        }
        _ => false,
    }
}
