//! Instructions (spec 7.2.4): the six OpenFlow 1.3 instructions plus
//! experimenter passthrough.

use bytes::{BufMut, Bytes};

use crate::action::{decode_actions, encode_actions, Action};
use crate::error::{BadInstructionCode, ErrorCode, OfpError, Result};
use crate::macros::wire_enum;
use crate::wire::{len_placeholder, patch_len, zeros, Reader};

wire_enum! {
    /// `ofp_instruction_type`.
    pub enum InstructionType: u16 {
        GotoTable = 1 => "goto_table",
        WriteMetadata = 2 => "write_metadata",
        WriteActions = 3 => "write_actions",
        ApplyActions = 4 => "apply_actions",
        ClearActions = 5 => "clear_actions",
        Meter = 6 => "meter",
        Experimenter = 0xffff => "experimenter",
    }
}

/// One instruction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Instruction {
    GotoTable(u8),
    WriteMetadata { metadata: u64, mask: u64 },
    WriteActions(Vec<Action>),
    ApplyActions(Vec<Action>),
    ClearActions,
    Meter(u32),
    Experimenter { experimenter: u32, data: Bytes },
}

impl Instruction {
    /// Where this instruction runs among a rule's instructions, as the spec
    /// orders them (meter, apply-actions, clear-actions, write-actions,
    /// write-metadata, goto-table; an experimenter's last): ovs-ofctl
    /// prints and reads them in this order, whatever the message's.
    pub fn run_order(&self) -> u8 {
        match self {
            Instruction::Meter(_) => 0,
            Instruction::ApplyActions(_) => 1,
            Instruction::ClearActions => 2,
            Instruction::WriteActions(_) => 3,
            Instruction::WriteMetadata { .. } => 4,
            Instruction::GotoTable(_) => 5,
            Instruction::Experimenter { .. } => 6,
        }
    }

    /// The instruction's type.
    pub fn instruction_type(&self) -> InstructionType {
        match self {
            Instruction::GotoTable(_) => InstructionType::GotoTable,
            Instruction::WriteMetadata { .. } => InstructionType::WriteMetadata,
            Instruction::WriteActions(_) => InstructionType::WriteActions,
            Instruction::ApplyActions(_) => InstructionType::ApplyActions,
            Instruction::ClearActions => InstructionType::ClearActions,
            Instruction::Meter(_) => InstructionType::Meter,
            Instruction::Experimenter { .. } => InstructionType::Experimenter,
        }
    }

    /// Appends the instruction TLV.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.instruction_type().value());
        let at = len_placeholder(out);
        match self {
            Instruction::GotoTable(t) => {
                out.put_u8(*t);
                zeros(out, 3);
            }
            Instruction::WriteMetadata { metadata, mask } => {
                zeros(out, 4);
                out.put_u64(*metadata);
                out.put_u64(*mask);
            }
            Instruction::WriteActions(a) | Instruction::ApplyActions(a) => {
                zeros(out, 4);
                encode_actions(a, out);
            }
            Instruction::ClearActions => zeros(out, 4),
            Instruction::Meter(m) => out.put_u32(*m),
            Instruction::Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.extend_from_slice(data);
                crate::wire::pad_to_8(out, start);
            }
        }
        patch_len(out, at, start);
    }

    /// Decodes one instruction.
    pub fn decode(r: &mut Reader<'_>) -> Result<Instruction> {
        let bad_len = OfpError::new(ErrorCode::INST_BAD_LEN, "wrong instruction length");
        let ty = InstructionType::from(r.u16()?);
        let len = r.u16()? as usize;
        if len < 8 || !len.is_multiple_of(8) {
            return Err(bad_len);
        }
        let mut b = r.sub(len - 4, ErrorCode::INST_BAD_LEN)?;
        let fixed = |want: usize| if len == want { Ok(()) } else { Err(bad_len) };
        Ok(match ty {
            InstructionType::GotoTable => {
                fixed(8)?;
                Instruction::GotoTable(b.u8()?)
            }
            InstructionType::WriteMetadata => {
                fixed(24)?;
                b.skip(4)?;
                Instruction::WriteMetadata {
                    metadata: b.u64()?,
                    mask: b.u64()?,
                }
            }
            InstructionType::WriteActions | InstructionType::ApplyActions => {
                b.skip(4)?;
                let actions = decode_actions(&mut b)?;
                if ty == InstructionType::WriteActions {
                    Instruction::WriteActions(actions)
                } else {
                    Instruction::ApplyActions(actions)
                }
            }
            InstructionType::ClearActions => {
                fixed(8)?;
                Instruction::ClearActions
            }
            InstructionType::Meter => {
                fixed(8)?;
                Instruction::Meter(b.u32()?)
            }
            InstructionType::Experimenter => {
                let experimenter = b.u32()?;
                Instruction::Experimenter {
                    experimenter,
                    data: b.rest(),
                }
            }
            InstructionType::Unknown(_) => {
                return Err(OfpError::new(
                    ErrorCode::BadInstruction(BadInstructionCode::UnknownInst),
                    "unknown instruction type",
                ))
            }
        })
    }
}

/// Decodes instructions filling all of `r`.
pub fn decode_instructions(r: &mut Reader<'_>) -> Result<Vec<Instruction>> {
    // Most flows carry one or two instructions; do not size by bytes (an
    // apply-actions instruction is long but one entry).
    let mut v = Vec::with_capacity(2);
    while !r.is_empty() {
        v.push(Instruction::decode(r)?);
    }
    Ok(v)
}

/// Encodes a list of instructions.
pub fn encode_instructions(ins: &[Instruction], out: &mut Vec<u8>) {
    for i in ins {
        i.encode(out);
    }
}
