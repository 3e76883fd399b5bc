//! Checks of instructions and actions that need the pipeline's state
//! (tables, groups, meters), each answering with the code the spec names.

use std::collections::HashMap;

use ofp::error::{BadActionCode, BadInstructionCode, ErrorCode, MeterModFailedCode};
use ofp::oxm::{MatchEntry, OxmField};
use ofp::port::port_no;
use ofp::{Action, Instruction, Match, OfpError};

/// What validation needs to know about the pipeline.
pub struct Context<'a, G, M> {
    pub n_tables: u8,
    pub groups: &'a HashMap<u32, G>,
    pub meters: &'a HashMap<u32, M>,
}

fn err(code: ErrorCode, detail: &'static str) -> OfpError {
    OfpError::new(code, detail)
}

/// A port an output action may name in a flow entry or group bucket.
pub fn valid_output_port(p: u32) -> bool {
    (p != 0 && p <= port_no::MAX)
        || matches!(
            p,
            port_no::IN_PORT
                | port_no::NORMAL
                | port_no::FLOOD
                | port_no::ALL
                | port_no::CONTROLLER
                | port_no::LOCAL
        )
}

/// Validates an action list. `match_` is the flow's match (None for group
/// buckets, whose packets are unknown), used for OFPBAC_MATCH_INCONSISTENT.
pub fn actions<G, M>(
    list: &[Action],
    match_: Option<&Match>,
    cx: &Context<'_, G, M>,
) -> Result<(), OfpError> {
    let mut vlan = match_
        .and_then(|m| m.get(OxmField::VlanVid))
        .is_some_and(|o| o.value & 0x1000 != 0);
    let mut eth_type_changed = false;
    for a in list {
        a.validate()?;
        match a {
            Action::Output { port, .. } if !valid_output_port(*port) => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadOutPort),
                    "invalid output port",
                ))
            }
            Action::Group(g) if !cx.groups.contains_key(g) => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadOutGroup),
                    "group does not exist",
                ))
            }
            Action::PushVlan(t) => {
                if !matches!(t, 0x8100 | 0x88a8) {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::BadArgument),
                        "push_vlan ethertype",
                    ));
                }
                vlan = true;
            }
            Action::PopVlan => vlan = false,
            Action::PushMpls(t) | Action::PopMpls(t) => {
                if matches!(a, Action::PushMpls(_)) && !matches!(t, 0x8847 | 0x8848) {
                    return Err(err(
                        ErrorCode::BadAction(BadActionCode::BadArgument),
                        "push_mpls ethertype",
                    ));
                }
                eth_type_changed = true;
            }
            Action::PushPbb(t) if *t != 0x88e7 => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadArgument),
                    "push_pbb ethertype",
                ))
            }
            Action::PushPbb(_) | Action::PopPbb => eth_type_changed = true,
            Action::Experimenter { .. } => {
                return Err(err(
                    ErrorCode::BadAction(BadActionCode::BadExperimenter),
                    "no experimenter actions known",
                ))
            }
            Action::SetField(MatchEntry::Basic(o)) => {
                if matches!(o.field, OxmField::VlanVid | OxmField::VlanPcp) {
                    if !vlan {
                        return Err(err(
                            ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                            "set_field of a VLAN field on packets without a VLAN tag",
                        ));
                    }
                } else if let (Some(m), false) = (match_, eth_type_changed) {
                    for (need, values) in o.field.prerequisites() {
                        let ok = m
                            .get(*need)
                            .is_some_and(|p| p.mask.is_none() && values.contains(&p.value));
                        if !ok {
                            return Err(err(
                                ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                                "set_field prerequisites not in the match",
                            ));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Validates a flow entry's instructions for table `table_id`.
pub fn instructions<G, M>(
    table_id: u8,
    list: &[Instruction],
    match_: &Match,
    cx: &Context<'_, G, M>,
) -> Result<(), OfpError> {
    let mut seen = 0u32;
    for i in list {
        let bit = 1u32 << (i.instruction_type().value() & 15);
        if seen & bit != 0 {
            return Err(err(
                ErrorCode::BadInstruction(BadInstructionCode::UnsupInst),
                "instruction given twice",
            ));
        }
        seen |= bit;
        match i {
            Instruction::GotoTable(t) if *t <= table_id || *t >= cx.n_tables => {
                return Err(err(
                    ErrorCode::BadInstruction(BadInstructionCode::BadTableId),
                    "goto_table must go forward to an existing table",
                ))
            }
            Instruction::Meter(m) if !cx.meters.contains_key(m) => {
                return Err(err(
                    ErrorCode::MeterModFailed(MeterModFailedCode::UnknownMeter),
                    "meter does not exist",
                ))
            }
            Instruction::ApplyActions(a) | Instruction::WriteActions(a) => {
                actions(a, Some(match_), cx)?
            }
            Instruction::Experimenter { .. } => {
                return Err(err(
                    ErrorCode::BadInstruction(BadInstructionCode::BadExperimenter),
                    "no experimenter instructions known",
                ))
            }
            _ => {}
        }
    }
    Ok(())
}
