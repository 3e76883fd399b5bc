//! Actions (spec 7.2.5): every OpenFlow 1.3 action, coded to and from the wire.
//!
//! Decoding checks structure (lengths, known types) and answers with the
//! `OFPET_BAD_ACTION` code the spec names; [`Action::validate`] checks what a
//! single action can be judged on alone (set_field arguments). Checks that
//! need the switch's state (ports, groups, queues, match consistency) belong
//! to the pipeline.

use bytes::{BufMut, Bytes};

use crate::error::{BadActionCode, BadMatchCode, ErrorCode, OfpError, Result};
use crate::macros::wire_enum;
use crate::oxm::{MatchEntry, Oxm, OxmField, OXM_CLASS_EXPERIMENTER};
use crate::wire::{len_placeholder, pad_to_8, patch_len, zeros, Reader};

pub use crate::conjunction::{Conjunction, NXAST_CONJUNCTION};
pub use crate::ct::{Ct, CtZone, Nat, NatRange};
pub use crate::learn::{Learn, LearnDst, LearnSpec, LearnSrc, NXAST_LEARN, NXAST_LEARN2};
pub use crate::multipath::{BdAlgorithm, Bundle, HashFields, MpAlgorithm, Multipath};
pub use crate::nicira::{
    CheckPktLarger, Controller, ControllerForm, OutputReg, OutputRegForm, Sample, SampleDirection,
    SampleForm, Subfield, NX_CTLR_NO_METER,
};
pub use crate::resubmit::{Resubmit, NXAST_RESUBMIT, NXAST_RESUBMIT_TABLE};

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
    /// NXAST_REG_LOAD (subtype 7) or NXAST_REG_LOAD2 (33): sets bits
    /// [ofs, ofs+n_bits) of `dst` to `value`.
    RegLoad(RegLoad),
    /// NXAST_REG_MOVE (subtype 6): copies n_bits from src[src_ofs..] to
    /// dst[dst_ofs..].
    RegMove(RegMove),
    /// NXAST_RESUBMIT (1) or NXAST_RESUBMIT_TABLE (14): look the packet up
    /// again ([`crate::resubmit`]).
    Resubmit(Resubmit),
    /// NXAST_CONJUNCTION (34): clause of a conjunctive match
    /// ([`crate::conjunction`]).
    Conjunction(Conjunction),
    /// NXAST_LEARN (16) or NXAST_LEARN2 (45): add a flow built from the
    /// packet ([`crate::learn`]).
    Learn(Box<Learn>),
    /// NXAST_NOTE (8): bytes that do nothing; as decoded, padding
    /// included (the text parser pads them as Open vSwitch does: to 6 more
    /// than a multiple of 8).
    Note(Bytes),
    /// NXAST_EXIT (17): no further action runs for this packet.
    Exit,
    /// NXAST_POP_QUEUE (5): the queue back to the packet's own (none set:
    /// the port's default), undoing `set_queue`; what closes Open
    /// vSwitch's `enqueue` in 1.1 and later.
    PopQueue,
    /// NXAST_OUTPUT_TRUNC (39), `output(port=N,max_len=M)`: output to
    /// `port` a copy cut to `max_len` bytes (at least 14); the packet
    /// itself goes on whole.
    OutputTrunc {
        port: u32,
        max_len: u32,
    },
    /// NXAST_OUTPUT_REG (15) / NXAST_OUTPUT_REG2 (32): output to the port
    /// a field's bits hold.
    OutputReg(OutputReg),
    /// NXAST_DEC_TTL_CNT_IDS (21): dec_ttl whose packet-ins on expiry go
    /// to the controllers with these connection ids.
    DecTtlIds(Vec<u16>),
    /// NXAST_STACK_PUSH (27): pushes the bits on the packet's stack.
    StackPush(Subfield),
    /// NXAST_STACK_POP (28): pops the stack's top into the bits.
    StackPop(Subfield),
    /// NXAST_CLONE (42): runs the actions on a copy of the packet and its
    /// metadata.
    Clone(Vec<Action>),
    /// NXAST_SAMPLE (29) / SAMPLE2 (38) / SAMPLE3 (41): IPFIX sampling.
    Sample(Sample),
    /// NXAST_CONTROLLER (20) / CONTROLLER2 (37): a packet-in with a reason,
    /// connection id, userdata, pause or meter.
    Controller(Box<Controller>),
    /// NXAST_MULTIPATH (10): a link number by a hash of the flow.
    Multipath(Multipath),
    /// NXAST_BUNDLE (12) / BUNDLE_LOAD (13): a member port by a hash of the
    /// flow and the ports' liveness.
    Bundle(Box<Bundle>),
    /// NXAST_CT (35): through the connection tracker ([`crate::ct`]).
    Ct(Box<Ct>),
    /// NXAST_NAT (36): only among a `ct`'s nested actions.
    Nat(Box<Nat>),
    /// NXAST_CT_CLEAR (43): forget what the tracker said of the packet.
    CtClear,
    /// NXAST_CHECK_PKT_LARGER (49): a bit says whether the packet is
    /// longer than a length ([`crate::nicira::CheckPktLarger`]).
    CheckPktLarger(CheckPktLarger),
    /// An experimenter action; `data` runs to the end of the action, so it
    /// includes the padding to 8 bytes once decoded. Nicira actions other
    /// than the ones above stay here.
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
            RegLoad(_)
            | RegMove(_)
            | Resubmit(_)
            | Conjunction(_)
            | Learn(_)
            | Experimenter { .. } => ActionType::Experimenter,
            Note(_)
            | Exit
            | PopQueue
            | OutputTrunc { .. }
            | OutputReg(_)
            | DecTtlIds(_)
            | StackPush(_)
            | StackPop(_)
            | Clone(_)
            | Sample(_)
            | Controller(_)
            | Multipath(_)
            | Bundle(_)
            | Ct(_)
            | Nat(_)
            | CtClear
            | CheckPktLarger(_) => ActionType::Experimenter,
        }
    }

    /// Appends the action TLV.
    pub fn encode(&self, out: &mut Vec<u8>) {
        if let Action::RegLoad(l) = self {
            if l.form == LoadForm::RegLoad && l.n_bits > 64 {
                // One NXAST_REG_LOAD carries 64 bits: write consecutive
                // ones, as Open vSwitch does.
                for seg in l.segments() {
                    Action::RegLoad(seg).encode(out);
                }
                return;
            }
        }
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
            RegLoad(l) => l.encode_body(out),
            RegMove(m) => m.encode_body(out),
            Resubmit(r) => r.encode_body(out),
            Conjunction(c) => c.encode_body(out),
            Learn(l) => l.encode_body(out),
            Experimenter { experimenter, data } => {
                out.put_u32(*experimenter);
                out.extend_from_slice(data);
            }
            other => {
                out.put_u32(NX_VENDOR_ID);
                crate::nicira::encode_body(other, out);
            }
        }
        pad_to_8(out, start);
        patch_len(out, at, start);
    }

    /// Decodes one action.
    pub fn decode(r: &mut Reader<'_>) -> Result<Action> {
        Action::decode_nested(r, 0)
    }

    /// Decodes one action of a list nested `depth` deep in clones.
    fn decode_nested(r: &mut Reader<'_>, depth: u32) -> Result<Action> {
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
                if experimenter == NX_VENDOR_ID && b.remaining() >= 2 {
                    match b.peek_u16(0)? {
                        NXAST_REG_LOAD => return decode_reg_load(len, b).map(RegLoad),
                        NXAST_REG_LOAD2 => return decode_reg_load2(b).map(RegLoad),
                        NXAST_REG_MOVE => return decode_reg_move(b).map(RegMove),
                        NXAST_RESUBMIT | NXAST_RESUBMIT_TABLE => {
                            return crate::resubmit::Resubmit::decode_body(len, b).map(Resubmit)
                        }
                        NXAST_LEARN | NXAST_LEARN2 => {
                            return crate::learn::Learn::decode_body(len, b)
                                .map(|l| Learn(Box::new(l)))
                        }
                        NXAST_CONJUNCTION => {
                            return crate::conjunction::Conjunction::decode_body(len, b)
                                .map(Conjunction)
                        }
                        sub => {
                            if let Some(a) = crate::nicira::decode(sub, len, b.clone(), depth) {
                                return a;
                            }
                        }
                    }
                }
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
    /// a value in range (`OFPBAC_BAD_SET_ARGUMENT`); reg_load and reg_move
    /// as [`RegLoad::check`] and [`RegMove::check`] say.
    ///
    /// These are the rules of a list not nested in `ct`: `nat` there, or a
    /// write (`set_field`, `load`, `move`) of `ct_mark` or `ct_label`, is
    /// `OFPBAC_BAD_SET_ARGUMENT`, as Open vSwitch answers; `ct` checks its
    /// own nested list ([`crate::ct::Ct::check`]).
    pub fn validate(&self) -> Result<()> {
        if matches!(self, Action::Nat(_)) {
            return Err(bac(
                BadActionCode::BadSetArgument,
                "nat is only allowed inside ct",
            ));
        }
        if crate::ct::write_dst(self).is_some_and(OxmField::requires_ct) {
            return Err(bac(
                BadActionCode::BadSetArgument,
                "ct_mark and ct_label are written only inside ct(commit,exec(...))",
            ));
        }
        self.validate_inner()
    }

    /// [`Action::validate`] without the rules of where an action may be.
    pub(crate) fn validate_inner(&self) -> Result<()> {
        match self {
            Action::Ct(c) => return c.check(),
            Action::Nat(n) => return n.check(),
            Action::RegLoad(l) => return l.check(),
            Action::RegMove(m) => return m.check(),
            Action::Conjunction(c) => return c.check(),
            Action::Learn(l) => return l.check(),
            Action::OutputReg(o) => return o.check(),
            Action::StackPush(s) => return s.check_src(),
            Action::StackPop(s) => return s.check_dst(),
            Action::Clone(list) => return list.iter().try_for_each(Action::validate),
            Action::Sample(s) => return s.check(),
            Action::Controller(c) => return c.check(),
            Action::Multipath(m) => return m.check(),
            Action::Bundle(b) => return b.check(),
            Action::CheckPktLarger(c) => return c.dst.check_dst(),
            _ => {}
        }
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

/// Nicira's experimenter id (`NX_VENDOR_ID`), for its actions and errors.
pub const NX_VENDOR_ID: u32 = 0x0000_2320;
/// Nicira action subtype `NXAST_REG_MOVE`.
pub const NXAST_REG_MOVE: u16 = 6;
/// Nicira action subtype `NXAST_REG_LOAD`.
pub const NXAST_REG_LOAD: u16 = 7;
/// Nicira action subtype `NXAST_REG_LOAD2`.
pub const NXAST_REG_LOAD2: u16 = 33;

/// How a [`RegLoad`] came, or goes, on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LoadForm {
    /// `NXAST_REG_LOAD`: `ofs_nbits`, a 32-bit header and a 64-bit value.
    /// What ovs-ofctl 3.1 writes for `load:` under OpenFlow 1.3, whether it
    /// sets the whole field or part of it. Loads wider than 64 bits go out
    /// as consecutive 64-bit pieces, as Open vSwitch writes them.
    RegLoad,
    /// `NXAST_REG_LOAD2`: an OXM TLV with value and (if not the whole
    /// field) mask.
    RegLoad2,
}

impl LoadForm {
    /// The form ovs-ofctl writes `load:` to `dst` in: `NXAST_REG_LOAD`,
    /// but `NXAST_REG_LOAD2` for a variable-length field (`tun_metadataN`),
    /// which `NXAST_REG_LOAD`'s fixed-length header cannot name.
    pub fn for_field(dst: OxmField) -> LoadForm {
        if dst.is_variable_len() {
            LoadForm::RegLoad2
        } else {
            LoadForm::RegLoad
        }
    }
}

/// `NXAST_REG_LOAD`/`NXAST_REG_LOAD2`: sets bits `[ofs, ofs + n_bits)` of
/// `dst` (bit 0 the least significant of the field's value) to `value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegLoad {
    pub dst: OxmField,
    pub ofs: u16,
    pub n_bits: u16,
    /// The bits to write, not shifted: `value < 2^n_bits`.
    pub value: u128,
    pub form: LoadForm,
}

/// `NXAST_REG_MOVE`: copies `n_bits` bits from `src` starting at bit
/// `src_ofs` to `dst` starting at bit `dst_ofs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegMove {
    pub src: OxmField,
    pub src_ofs: u16,
    pub dst: OxmField,
    pub dst_ofs: u16,
    pub n_bits: u16,
}

/// Ones in bits `[ofs, ofs + n_bits)` (of a 128-bit number; bits beyond 127
/// are dropped).
pub fn bits_mask(ofs: u16, n_bits: u16) -> u128 {
    let ones = if n_bits >= 128 {
        u128::MAX
    } else {
        (1u128 << n_bits) - 1
    };
    ones.checked_shl(ofs as u32).unwrap_or(0)
}

pub(crate) fn bac(code: BadActionCode, detail: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadAction(code), detail)
}

fn bmc(code: BadMatchCode, detail: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadMatch(code), detail)
}

/// Open vSwitch's `NXBRC_MUST_BE_ZERO` as OpenFlow 1.2+ carries it:
/// `OFPET_EXPERIMENTER`, experimenter Nicira, exp_type 4.
pub const NXBRC_MUST_BE_ZERO: ErrorCode = ErrorCode::Experimenter {
    exp_type: 4,
    experimenter: NX_VENDOR_ID,
};

/// Open vSwitch's `mf_check__` on one side of a load or move: a known
/// field (`OFPBAC_BAD_SET_TYPE`), at least one bit, and the bits inside
/// the field (`OFPBAC_BAD_SET_LEN`): its [`OxmField::subfield_bits`],
/// which are returned (12 for `OXM_OF_VLAN_VID`, as in Open vSwitch).
pub(crate) fn check_subfield(f: OxmField, ofs: u16, n_bits: u16) -> Result<u16> {
    f.info().ok_or(bac(
        BadActionCode::BadSetType,
        "unknown field in load or move",
    ))?;
    if n_bits == 0 {
        return Err(bac(BadActionCode::BadSetLen, "load or move of zero bits"));
    }
    if ofs as u32 + n_bits as u32 > f.subfield_bits() as u32 {
        return Err(bac(
            BadActionCode::BadSetLen,
            "load or move bits outside the field",
        ));
    }
    Ok(f.subfield_bits())
}

/// Whether a load or move may write `f`: the fields set_field may set, and
/// metadata, which Open vSwitch's reg_load writes although OpenFlow 1.3's
/// set_field may not.
pub(crate) fn loadable(f: OxmField) -> bool {
    f == OxmField::Metadata || f.info().is_some_and(|i| i.settable)
}

impl RegLoad {
    /// The load as a masked value in the field's width: `(value << ofs,
    /// mask of bits ofs..ofs+n_bits)`.
    pub fn masked(&self) -> Oxm {
        let mask = bits_mask(self.ofs, self.n_bits);
        let value = self.value.checked_shl(self.ofs as u32).unwrap_or(0) & mask;
        Oxm::masked(self.dst, value, mask)
    }

    /// Checks the load as Open vSwitch decodes `NXAST_REG_LOAD`, in its
    /// order and with its codes: a known destination (`OFPBAC_BAD_SET_TYPE`),
    /// `1 <= n_bits` and `ofs + n_bits` within the field's bits
    /// (`OFPBAC_BAD_SET_LEN`), a writable destination
    /// (`OFPBAC_BAD_SET_ARGUMENT`), and a value that fits in `n_bits`
    /// (`OFPBAC_BAD_ARGUMENT`).
    pub fn check(&self) -> Result<()> {
        check_subfield(self.dst, self.ofs, self.n_bits)?;
        if !loadable(self.dst) {
            return Err(bac(
                BadActionCode::BadSetArgument,
                "load destination is not writable",
            ));
        }
        if self.n_bits < 128 && self.value >> self.n_bits != 0 {
            return Err(bac(
                BadActionCode::BadArgument,
                "load value wider than n_bits",
            ));
        }
        Ok(())
    }

    /// The pieces of at most 64 bits a wide `NXAST_REG_LOAD` is written as.
    fn segments(&self) -> impl Iterator<Item = RegLoad> + '_ {
        (0..self.n_bits).step_by(64).map(|k| {
            let n = (self.n_bits - k).min(64);
            RegLoad {
                ofs: self.ofs.wrapping_add(k),
                n_bits: n,
                value: self.value.checked_shr(k as u32).unwrap_or(0) & bits_mask(0, n),
                ..*self
            }
        })
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u32(NX_VENDOR_ID);
        let header = self.dst.nxm_header().unwrap_or(0);
        match self.form {
            LoadForm::RegLoad => {
                out.put_u16(NXAST_REG_LOAD);
                out.put_u16((self.ofs << 6) | (self.n_bits.wrapping_sub(1) & 0x3f));
                out.put_u32(header);
                out.put_u64(self.value as u64);
            }
            LoadForm::RegLoad2 => {
                out.put_u16(NXAST_REG_LOAD2);
                let m = self.masked();
                // A variable-length field takes the fewest bytes that hold
                // value and mask, as ovs-ofctl writes it.
                let w = if self.dst.is_variable_len() {
                    crate::oxm::Oxm::masked(self.dst, m.value, m.mask.unwrap_or(0)).wire_width()
                } else {
                    (header & 0xff) as usize
                };
                let mask = m.mask.unwrap_or(0);
                if mask == self.dst.width_mask() || mask == self.dst.full_mask() {
                    out.put_u32(header);
                    put_be(out, m.value, w);
                } else {
                    out.put_u32((header & !0xff) | 0x100 | (2 * w as u32));
                    put_be(out, m.value, w);
                    put_be(out, mask, w);
                }
            }
        }
    }
}

fn put_be(out: &mut Vec<u8>, v: u128, width: usize) {
    out.extend_from_slice(&v.to_be_bytes()[16 - width.min(16)..]);
}

impl RegMove {
    /// Checks the move as Open vSwitch decodes `NXAST_REG_MOVE`: each side
    /// a known field (`OFPBAC_BAD_SET_TYPE`) with `1 <= n_bits` and the
    /// bits inside it (`OFPBAC_BAD_SET_LEN`), source first; a writable
    /// destination (`OFPBAC_BAD_SET_ARGUMENT`).
    pub fn check(&self) -> Result<()> {
        check_subfield(self.src, self.src_ofs, self.n_bits)?;
        check_subfield(self.dst, self.dst_ofs, self.n_bits)?;
        if !loadable(self.dst) {
            return Err(bac(
                BadActionCode::BadSetArgument,
                "move destination is not writable",
            ));
        }
        Ok(())
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u32(NX_VENDOR_ID);
        out.put_u16(NXAST_REG_MOVE);
        out.put_u16(self.n_bits);
        out.put_u16(self.src_ofs);
        out.put_u16(self.dst_ofs);
        out.put_u32(self.src.nxm_header().unwrap_or(0));
        out.put_u32(self.dst.nxm_header().unwrap_or(0));
    }
}

/// The exact-match form of a header: hasmask cleared, length halved.
pub(crate) fn exact_header(h: u32) -> u32 {
    if h & 0x100 != 0 {
        (h & !0x1ff) | ((h & 0xff) / 2)
    } else {
        h
    }
}

/// `NXAST_REG_LOAD` after the experimenter id. Open vSwitch's codes:
/// `OFPBAC_BAD_LEN` unless 24 bytes, `OFPBAC_BAD_SET_TYPE` for a header it
/// has no field for (Open vSwitch: `mf_vl_mff_mf_from_nxm_header`), then
/// [`RegLoad::check`].
fn decode_reg_load(len: usize, mut b: Reader<'_>) -> Result<RegLoad> {
    if len != 24 {
        return Err(OfpError::new(
            ErrorCode::ACTION_BAD_LEN,
            "NXAST_REG_LOAD is 24 bytes",
        ));
    }
    b.skip(2)?;
    let ofs_nbits = b.u16()?;
    let header = b.u32()?;
    let value = b.u64()?;
    let dst = OxmField::from_nxm_header(exact_header(header)).ok_or(bac(
        BadActionCode::BadSetType,
        "reg_load to a field sluice does not know",
    ))?;
    let l = RegLoad {
        dst,
        ofs: ofs_nbits >> 6,
        n_bits: (ofs_nbits & 0x3f) + 1,
        value: value as u128,
        form: LoadForm::RegLoad,
    };
    l.check()?;
    Ok(l)
}

/// `NXAST_REG_LOAD2` after the experimenter id: an OXM TLV and zero
/// padding. Open vSwitch's codes: a truncated TLV is `OFPBMC_BAD_LEN`, an
/// unknown field `OFPBAC_BAD_SET_TYPE`, a known one with the wrong length
/// `OFPBAC_BAD_SET_LEN`, value bits outside the mask
/// `OFPBMC_BAD_WILDCARDS`, non-zero padding or a read-only field
/// `OFPBAC_BAD_SET_ARGUMENT`. sluice holds loads as one run of bits: a
/// mask that is empty or not contiguous is `OFPBAC_BAD_SET_ARGUMENT` too
/// (Open vSwitch takes any mask).
fn decode_reg_load2(mut b: Reader<'_>) -> Result<RegLoad> {
    b.skip(2)?;
    let n = b.remaining();
    let mut b = b.sub(n, ErrorCode::BadMatch(BadMatchCode::BadLen))?;
    let header = b.u32()?;
    let class = (header >> 16) as u16;
    if class == OXM_CLASS_EXPERIMENTER {
        b.u32()?;
        if header & 0xff < 4 {
            return Err(bmc(BadMatchCode::BadLen, "experimenter OXM too short"));
        }
        return Err(bac(
            BadActionCode::BadSetType,
            "reg_load2 of an experimenter OXM",
        ));
    }
    if header & 0x100 != 0 && header & 0x01 != 0 {
        // A masked TLV holds value and mask of equal widths.
        return Err(bmc(BadMatchCode::BadLen, "masked OXM of odd length"));
    }
    let exact = exact_header(header);
    let dst = match OxmField::from_nxm_header(exact) {
        Some(f) => f,
        None if exact & 0xff != 0 && OxmField::from_nxm_header_any_len(exact).is_some() => {
            return Err(bac(
                BadActionCode::BadSetLen,
                "reg_load2 OXM length does not fit its field",
            ))
        }
        None => {
            return Err(bac(
                BadActionCode::BadSetType,
                "reg_load2 to a field sluice does not know",
            ))
        }
    };
    let w = (exact & 0xff) as usize;
    let has_mask = header & 0x100 != 0;
    let payload = b.slice(header as usize & 0xff)?;
    let value = get_be(&payload[..w]);
    let mask = if has_mask {
        get_be(&payload[w..])
    } else {
        dst.width_mask()
    };
    if value & !mask != 0 {
        return Err(bmc(
            BadMatchCode::BadWildcards,
            "reg_load2 value has bits outside its mask",
        ));
    }
    if b.slice(b.remaining())?.iter().any(|&x| x != 0) {
        return Err(bac(
            BadActionCode::BadSetArgument,
            "reg_load2 padding not zero",
        ));
    }
    if !loadable(dst) {
        return Err(bac(
            BadActionCode::BadSetArgument,
            "load destination is not writable",
        ));
    }
    let (ofs, n_bits) = if mask == dst.width_mask() {
        (0, dst.info().map_or(0, |i| i.bits as u16))
    } else {
        let ofs = mask.trailing_zeros() as u16;
        let n = (128 - mask.leading_zeros() as u16).saturating_sub(ofs);
        if mask == 0 || mask != bits_mask(ofs, n) {
            return Err(bac(
                BadActionCode::BadSetArgument,
                "reg_load2 mask is not one run of bits",
            ));
        }
        (ofs, n)
    };
    let l = RegLoad {
        dst,
        ofs,
        n_bits,
        value: value >> ofs,
        form: LoadForm::RegLoad2,
    };
    l.check()?;
    Ok(l)
}

fn get_be(b: &[u8]) -> u128 {
    let mut a = [0u8; 16];
    let n = b.len().min(16);
    a[16 - n..].copy_from_slice(&b[b.len() - n..]);
    u128::from_be_bytes(a)
}

/// One header of `NXAST_REG_MOVE`, as Open vSwitch's `nx_pull_header`
/// reads it: truncated `OFPBMC_BAD_LEN`, unknown `OFPBMC_BAD_FIELD`,
/// masked `OFPBMC_BAD_MASK`.
pub(crate) fn pull_move_header(b: &mut Reader<'_>) -> Result<OxmField> {
    let header = b.u32()?;
    if (header >> 16) as u16 == OXM_CLASS_EXPERIMENTER {
        b.u32()?;
        if header & 0xff < 4 {
            return Err(bmc(BadMatchCode::BadLen, "experimenter OXM too short"));
        }
        return Err(bmc(
            BadMatchCode::BadField,
            "reg_move of an experimenter OXM",
        ));
    }
    let f = OxmField::from_nxm_header(exact_header(header)).ok_or(bmc(
        BadMatchCode::BadField,
        "reg_move of a field sluice does not know",
    ))?;
    if header & 0x100 != 0 {
        return Err(bmc(BadMatchCode::BadMask, "reg_move header with a mask"));
    }
    Ok(f)
}

/// `NXAST_REG_MOVE` after the experimenter id: 16 fixed bytes, two headers
/// ([`pull_move_header`]), zero padding (else Open vSwitch's
/// `NXBRC_MUST_BE_ZERO`), then [`RegMove::check`].
fn decode_reg_move(mut b: Reader<'_>) -> Result<RegMove> {
    b.skip(2)?;
    let n_bits = b.u16()?;
    let src_ofs = b.u16()?;
    let dst_ofs = b.u16()?;
    let n = b.remaining();
    let mut b = b.sub(n, ErrorCode::BadMatch(BadMatchCode::BadLen))?;
    let src = pull_move_header(&mut b)?;
    let dst = pull_move_header(&mut b)?;
    if b.slice(b.remaining())?.iter().any(|&x| x != 0) {
        return Err(OfpError::new(
            NXBRC_MUST_BE_ZERO,
            "reg_move padding not zero",
        ));
    }
    let m = RegMove {
        src,
        src_ofs,
        dst,
        dst_ofs,
        n_bits,
    };
    m.check()?;
    Ok(m)
}

/// Decodes a list of actions filling all of `r`.
pub fn decode_actions(r: &mut Reader<'_>) -> Result<Vec<Action>> {
    decode_actions_nested(r, 0)
}

/// Decodes a list of actions nested `depth` deep in clones.
pub(crate) fn decode_actions_nested(r: &mut Reader<'_>, depth: u32) -> Result<Vec<Action>> {
    let mut v = Vec::with_capacity(r.remaining() / 16);
    while !r.is_empty() {
        v.push(Action::decode_nested(r, depth)?);
    }
    Ok(v)
}

/// Every action of `list` and, after each `clone`, the actions it holds
/// (depth first): what "the actions of a flow" means to Open vSwitch's
/// out_port/out_group filters and group references.
pub fn flattened(list: &[Action]) -> Flattened<'_> {
    Flattened {
        cur: list.iter(),
        outer: Vec::new(),
    }
}

/// The iterator of [`flattened`] (it allocates only inside a clone).
pub struct Flattened<'a> {
    cur: std::slice::Iter<'a, Action>,
    outer: Vec<std::slice::Iter<'a, Action>>,
}

impl<'a> Iterator for Flattened<'a> {
    type Item = &'a Action;

    fn next(&mut self) -> Option<&'a Action> {
        loop {
            match self.cur.next() {
                Some(a) => {
                    if let Action::Clone(inner) = a {
                        let rest = std::mem::replace(&mut self.cur, inner.iter());
                        self.outer.push(rest);
                    }
                    return Some(a);
                }
                None => self.cur = self.outer.pop()?,
            }
        }
    }
}

impl Action {
    /// Whether Open vSwitch lets the action into an action set
    /// (`write_actions`): not note, exit, pop_queue, output:FIELD, push, pop, clone,
    /// sample, controller(...), multipath, bundle, learn, conjunction or
    /// check_pkt_larger
    /// (`OFPBAC_BAD_TYPE` otherwise, as Open vSwitch answers).
    pub fn allowed_in_set(&self) -> bool {
        !matches!(
            self,
            Action::Learn(_)
                | Action::Conjunction(_)
                | Action::Note(_)
                | Action::Exit
                | Action::PopQueue
                | Action::OutputTrunc { .. }
                | Action::OutputReg(_)
                | Action::StackPush(_)
                | Action::StackPop(_)
                | Action::Clone(_)
                | Action::Sample(_)
                | Action::Controller(_)
                | Action::Multipath(_)
                | Action::Bundle(_)
                | Action::Nat(_)
                | Action::CheckPktLarger(_)
        )
    }
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

    /// `OXM_OF_VLAN_VID` in a load or move is Open vSwitch's 12-bit
    /// `MFF_VLAN_VID` (the VLAN id without `OFPVID_PRESENT`): 12 bits
    /// decode and check, a 13th is `OFPBAC_BAD_SET_LEN`, as Open vSwitch
    /// answers; the field's OXM value keeps its 13 bits.
    #[test]
    fn vlan_vid_is_twelve_bits_in_loads_and_moves() {
        let mv = |n_bits| RegMove {
            src: OxmField::CtLabel,
            src_ofs: 64,
            dst: OxmField::VlanVid,
            dst_ofs: 0,
            n_bits,
        };
        assert_eq!(mv(12).check(), Ok(()));
        roundtrip(Action::RegMove(mv(12)));
        let e = mv(13).check().unwrap_err();
        assert_eq!(e.code, ErrorCode::BadAction(BadActionCode::BadSetLen));
        // As a source too.
        let from = RegMove {
            src: OxmField::VlanVid,
            src_ofs: 0,
            dst: OxmField::Reg(0),
            dst_ofs: 0,
            n_bits: 13,
        };
        assert!(from.check().is_err());
        let load = |value, n_bits| RegLoad {
            dst: OxmField::VlanVid,
            ofs: 0,
            n_bits,
            value,
            form: LoadForm::RegLoad,
        };
        assert_eq!(load(0xfff, 12).check(), Ok(()));
        assert!(load(0x1005, 13).check().is_err());
        assert_eq!(OxmField::VlanVid.subfield_bits(), 12);
        assert_eq!(OxmField::VlanVid.full_mask(), 0x1fff);
        assert_eq!(OxmField::Reg(0).subfield_bits(), 32);
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
