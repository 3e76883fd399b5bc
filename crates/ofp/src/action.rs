//! Actions (spec 7.2.5): every OpenFlow 1.3 action, coded to and from the wire.
//!
//! Decoding checks structure (lengths, known types) and answers with the
//! `OFPET_BAD_ACTION` code the spec names; [`Action::validate`] checks what a
//! single action can be judged on alone (set_field arguments). Checks that
//! need the switch's state (ports, groups, queues, match consistency) belong
//! to the pipeline.

use bytes::{BufMut, Bytes};

use crate::error::{BadActionCode, ErrorCode, OfpError, Result};
use crate::macros::wire_enum;
use crate::oxm::{MatchEntry, OxmField};
use crate::wire::{len_placeholder, pad_to_8, patch_len, zeros, Reader};

wire_enum! {
    /// `ofp_action_type`.
    pub enum ActionType: u16 {
        Output = 0 => "output",
        CopyTtlOut = 11 => "copy_ttl_out",
        CopyTtlIn = 12 => "copy_ttl_in",
        SetMplsTtl = 15 => "set_mpls_ttl",
        DecMplsTtl = 16 => "dec_mpls_ttl",
        PushVlan = 17 => "push_vlan",
        PopVlan = 18 => "pop_vlan",
        PushMpls = 19 => "push_mpls",
        PopMpls = 20 => "pop_mpls",
        SetQueue = 21 => "set_queue",
        Group = 22 => "group",
        SetNwTtl = 23 => "set_nw_ttl",
        DecNwTtl = 24 => "dec_nw_ttl",
        SetField = 25 => "set_field",
        PushPbb = 26 => "push_pbb",
        PopPbb = 27 => "pop_pbb",
        Experimenter = 0xffff => "experimenter",
    }
}

/// `ofp_controller_max_len`: send the whole packet, do not buffer.
pub const OFPCML_NO_BUFFER: u16 = 0xffff;
/// `ofp_controller_max_len`: largest max_len that may buffer.
pub const OFPCML_MAX: u16 = 0xffe5;

/// One action.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Action {
    Output {
        port: u32,
        max_len: u16,
    },
    CopyTtlOut,
    CopyTtlIn,
    SetMplsTtl(u8),
    DecMplsTtl,
    PushVlan(u16),
    PopVlan,
    PushMpls(u16),
    PopMpls(u16),
    SetQueue(u32),
    Group(u32),
    SetNwTtl(u8),
    DecNwTtl,
    SetField(MatchEntry),
    PushPbb(u16),
    PopPbb,
    /// An experimenter action; `data` runs to the end of the action, so it
    /// includes the padding to 8 bytes once decoded.
    Experimenter {
        experimenter: u32,
        data: Bytes,
    },
}

impl Action {
    /// The action's type.
    pub fn action_type(&self) -> ActionType {
        use Action::*;
        match self {
            Output { .. } => ActionType::Output,
            CopyTtlOut => ActionType::CopyTtlOut,
            CopyTtlIn => ActionType::CopyTtlIn,
            SetMplsTtl(_) => ActionType::SetMplsTtl,
            DecMplsTtl => ActionType::DecMplsTtl,
            PushVlan(_) => ActionType::PushVlan,
            PopVlan => ActionType::PopVlan,
            PushMpls(_) => ActionType::PushMpls,
            PopMpls(_) => ActionType::PopMpls,
            SetQueue(_) => ActionType::SetQueue,
            Group(_) => ActionType::Group,
            SetNwTtl(_) => ActionType::SetNwTtl,
            DecNwTtl => ActionType::DecNwTtl,
            SetField(_) => ActionType::SetField,
            PushPbb(_) => ActionType::PushPbb,
            PopPbb => ActionType::PopPbb,
            Experimenter { .. } => ActionType::Experimenter,
        }
    }

    /// Appends the action TLV.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(self.action_type().value());
        let at = len_placeholder(out);
        use Action::*;
        match self {
            Output { port, max_len } => {
                out.put_u32(*port);
                out.put_u16(*max_len);
                zeros(out, 6);
            }
            CopyTtlOut | CopyTtlIn | DecMplsTtl | PopVlan | DecNwTtl | PopPbb => zeros(out, 4),
            SetMplsTtl(t) | SetNwTtl(t) => {
                out.put_u8(*t);
                zeros(out, 3);
            }
            PushVlan(e) | PushMpls(e) | PopMpls(e) | PushPbb(e) => {
                out.put_u16(*e);
                zeros(out, 2);
            }
            SetQueue(v) | Group(v) => out.put_u32(*v),
            SetField(e) => e.encode(out),
            Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.extend_from_slice(data);
            }
        }
        pad_to_8(out, start);
        patch_len(out, at, start);
    }

    /// Decodes one action.
    pub fn decode(r: &mut Reader<'_>) -> Result<Action> {
        let bad_len = |d| OfpError::new(ErrorCode::ACTION_BAD_LEN, d);
        let ty = ActionType::from(r.u16()?);
        let len = r.u16()? as usize;
        if len < 8 || !len.is_multiple_of(8) {
            return Err(bad_len("action length not a positive multiple of 8"));
        }
        let mut b = r.sub(len - 4, ErrorCode::ACTION_BAD_LEN)?;
        let fixed = |b: &Reader<'_>, want: usize| {
            if len == want {
                Ok(())
            } else {
                let _ = b;
                Err(bad_len("wrong length for action type"))
            }
        };
        use Action::*;
        let a = match ty {
            ActionType::Output => {
                fixed(&b, 16)?;
                let port = b.u32()?;
                let max_len = b.u16()?;
                Output { port, max_len }
            }
            ActionType::CopyTtlOut => fixed(&b, 8).map(|_| CopyTtlOut)?,
            ActionType::CopyTtlIn => fixed(&b, 8).map(|_| CopyTtlIn)?,
            ActionType::DecMplsTtl => fixed(&b, 8).map(|_| DecMplsTtl)?,
            ActionType::PopVlan => fixed(&b, 8).map(|_| PopVlan)?,
            ActionType::DecNwTtl => fixed(&b, 8).map(|_| DecNwTtl)?,
            ActionType::PopPbb => fixed(&b, 8).map(|_| PopPbb)?,
            ActionType::SetMplsTtl => {
                fixed(&b, 8)?;
                SetMplsTtl(b.u8()?)
            }
            ActionType::SetNwTtl => {
                fixed(&b, 8)?;
                SetNwTtl(b.u8()?)
            }
            ActionType::PushVlan
            | ActionType::PushMpls
            | ActionType::PopMpls
            | ActionType::PushPbb => {
                fixed(&b, 8)?;
                let e = b.u16()?;
                match ty {
                    ActionType::PushVlan => PushVlan(e),
                    ActionType::PushMpls => PushMpls(e),
                    ActionType::PopMpls => PopMpls(e),
                    _ => PushPbb(e),
                }
            }
            ActionType::SetQueue => {
                fixed(&b, 8)?;
                SetQueue(b.u32()?)
            }
            ActionType::Group => {
                fixed(&b, 8)?;
                Group(b.u32()?)
            }
            ActionType::SetField => {
                let set_len = ErrorCode::BadAction(BadActionCode::BadSetLen);
                let mut body = b.sub(b.remaining(), set_len)?;
                let e = MatchEntry::decode(&mut body, set_len)?;
                // What follows the OXM is padding: it must fit in fewer than 8 bytes.
                if 4 + e.wire_len() + 7 < len {
                    return Err(OfpError::new(set_len, "set_field longer than its OXM"));
                }
                SetField(e)
            }
            ActionType::Experimenter => {
                let experimenter = b.u32()?;
                Experimenter {
                    experimenter,
                    data: b.rest(),
                }
            }
            ActionType::Unknown(_) => {
                return Err(OfpError::new(
                    ErrorCode::BadAction(BadActionCode::BadType),
                    "unknown action type",
                ))
            }
        };
        Ok(a)
    }

    /// Checks what this action can be judged on alone: set_field must name a
    /// known settable basic field (`OFPBAC_BAD_SET_TYPE`), carry no mask and
    /// a value in range (`OFPBAC_BAD_SET_ARGUMENT`).
    pub fn validate(&self) -> Result<()> {
        if let Action::SetField(e) = self {
            let o = match e {
                MatchEntry::Basic(o) => o,
                MatchEntry::Other(_) => {
                    return Err(OfpError::new(
                        ErrorCode::BadAction(BadActionCode::BadSetType),
                        "set_field of an unsupported OXM class",
                    ))
                }
            };
            match o.field.info() {
                Some(i) if i.settable => {}
                _ => {
                    return Err(OfpError::new(
                        ErrorCode::BadAction(BadActionCode::BadSetType),
                        "field cannot be set",
                    ))
                }
            }
            if o.mask.is_some() || o.value & !o.field.full_mask() != 0 {
                return Err(OfpError::new(
                    ErrorCode::BadAction(BadActionCode::BadSetArgument),
                    "set_field value masked or out of range",
                ));
            }
            if o.field == OxmField::VlanVid && o.value & 0x1000 == 0 {
                // Writing VLAN_VID needs OFPVID_PRESENT: it sets a tag's VID.
                return Err(OfpError::new(
                    ErrorCode::BadAction(BadActionCode::BadSetArgument),
                    "set_field vlan_vid without OFPVID_PRESENT",
                ));
            }
        }
        Ok(())
    }
}

/// Decodes a list of actions filling all of `r`.
pub fn decode_actions(r: &mut Reader<'_>) -> Result<Vec<Action>> {
    let mut v = Vec::with_capacity(r.remaining() / 8);
    while !r.is_empty() {
        v.push(Action::decode(r)?);
    }
    Ok(v)
}

/// Encodes a list of actions.
pub fn encode_actions(actions: &[Action], out: &mut Vec<u8>) {
    for a in actions {
        a.encode(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oxm::Oxm;

    fn roundtrip(a: Action) {
        let mut out = Vec::new();
        a.encode(&mut out);
        assert_eq!(out.len() % 8, 0);
        let b = Bytes::from(out);
        let mut r = Reader::new(&b, ErrorCode::ACTION_BAD_LEN);
        assert_eq!(Action::decode(&mut r).unwrap(), a);
        assert!(r.is_empty());
    }

    #[test]
    fn every_action_round_trips() {
        roundtrip(Action::Output {
            port: 3,
            max_len: 128,
        });
        roundtrip(Action::SetField(MatchEntry::Basic(Oxm::exact(
            OxmField::EthDst,
            0x0200_0000_0001,
        ))));
        roundtrip(Action::SetField(MatchEntry::Basic(Oxm::exact(
            OxmField::Ipv6Src,
            1,
        ))));
        roundtrip(Action::Experimenter {
            experimenter: 0x2320,
            data: Bytes::from_static(&[1, 2, 3, 4, 5, 6, 7, 8]),
        });
        roundtrip(Action::PushVlan(0x8100));
    }

    #[test]
    fn bad_lengths_and_types() {
        let raw = Bytes::from_static(&[0, 0, 0, 8, 0, 0, 0, 1]);
        let mut r = Reader::new(&raw, ErrorCode::ACTION_BAD_LEN);
        assert_eq!(
            Action::decode(&mut r).unwrap_err().code,
            ErrorCode::ACTION_BAD_LEN
        );
        let raw = Bytes::from_static(&[0, 99, 0, 8, 0, 0, 0, 0]);
        let mut r = Reader::new(&raw, ErrorCode::ACTION_BAD_LEN);
        assert_eq!(
            Action::decode(&mut r).unwrap_err().code,
            ErrorCode::BadAction(BadActionCode::BadType)
        );
        let raw = Bytes::from_static(&[0, 0, 0, 16, 0, 0, 0, 1]);
        let mut r = Reader::new(&raw, ErrorCode::ACTION_BAD_LEN);
        assert_eq!(
            Action::decode(&mut r).unwrap_err().code,
            ErrorCode::ACTION_BAD_LEN
        );
    }

    #[test]
    fn set_field_validation() {
        let bad = Action::SetField(MatchEntry::Basic(Oxm::exact(OxmField::InPort, 1)));
        assert_eq!(
            bad.validate().unwrap_err().code,
            ErrorCode::BadAction(BadActionCode::BadSetType)
        );
        let masked = Action::SetField(MatchEntry::Basic(Oxm::masked(OxmField::EthDst, 1, 1)));
        assert_eq!(
            masked.validate().unwrap_err().code,
            ErrorCode::BadAction(BadActionCode::BadSetArgument)
        );
    }
}
