//! Open vSwitch's Nicira extension actions besides `load`, `move` and
//! `resubmit` (those are in [`crate::action`] and [`crate::resubmit`]):
//! `note`, `exit`, `output:FIELD`, `dec_ttl(ids)`, `push`/`pop`, `clone`,
//! `sample`, `controller(...)`, `multipath`, `bundle` and `bundle_load`.
//!
//! Each is coded as Open vSwitch 3.1 codes it (`lib/ofp-actions.c`): the
//! subtype ovs-ofctl writes under OpenFlow 1.3, the same checks on decode
//! in the same order with the same error codes, and a re-encoding that
//! gives back the bytes decoded (the form an action came in is kept where
//! Open vSwitch keeps it: `NXAST_OUTPUT_REG2`, `NXAST_SAMPLE2`/`3`,
//! `NXAST_CONTROLLER2`, `NXAST_DEC_TTL_CNT_IDS`). Where Open vSwitch
//! answers with an error code OpenFlow 1.3 has no number for (the property
//! codes `OFPBPC_*` of `NXAST_CONTROLLER2`), sluice answers
//! `OFPBAC_BAD_LEN` or `OFPBAC_BAD_ARGUMENT`.

use bytes::{BufMut, Bytes};

use crate::action::{
    bac, bits_mask, check_subfield, decode_actions_nested, loadable, pull_move_header, Action,
    NXBRC_MUST_BE_ZERO,
};
use crate::error::{BadActionCode, ErrorCode, OfpError, Result};
use crate::oxm::OxmField;
use crate::port::port_no;
use crate::resubmit::{port_to_u16, Resubmit};
use crate::wire::{zeros, Reader};

/// Nicira action subtype `NXAST_NOTE`.
pub const NXAST_NOTE: u16 = 8;
/// Nicira action subtype `NXAST_POP_QUEUE`.
pub const NXAST_POP_QUEUE: u16 = 5;
/// Nicira action subtype `NXAST_OUTPUT_TRUNC`.
pub const NXAST_OUTPUT_TRUNC: u16 = 39;
/// The least `max_len` of `output(port=N,max_len=M)`: an Ethernet header.
pub const OUTPUT_TRUNC_MIN: u32 = 14;
/// Nicira action subtype `NXAST_MULTIPATH`.
pub const NXAST_MULTIPATH: u16 = 10;
/// Nicira action subtype `NXAST_BUNDLE`.
pub const NXAST_BUNDLE: u16 = 12;
/// Nicira action subtype `NXAST_BUNDLE_LOAD`.
pub const NXAST_BUNDLE_LOAD: u16 = 13;
/// Nicira action subtype `NXAST_OUTPUT_REG`.
pub const NXAST_OUTPUT_REG: u16 = 15;
/// Nicira action subtype `NXAST_EXIT`.
pub const NXAST_EXIT: u16 = 17;
/// Nicira action subtype `NXAST_CONTROLLER`.
pub const NXAST_CONTROLLER: u16 = 20;
/// Nicira action subtype `NXAST_DEC_TTL_CNT_IDS`.
pub const NXAST_DEC_TTL_CNT_IDS: u16 = 21;
/// Nicira action subtype `NXAST_STACK_PUSH`.
pub const NXAST_STACK_PUSH: u16 = 27;
/// Nicira action subtype `NXAST_STACK_POP`.
pub const NXAST_STACK_POP: u16 = 28;
/// Nicira action subtype `NXAST_SAMPLE`.
pub const NXAST_SAMPLE: u16 = 29;
/// Nicira action subtype `NXAST_OUTPUT_REG2`.
pub const NXAST_OUTPUT_REG2: u16 = 32;
/// Nicira action subtype `NXAST_CONTROLLER2`.
pub const NXAST_CONTROLLER2: u16 = 37;
/// Nicira action subtype `NXAST_SAMPLE2`.
pub const NXAST_SAMPLE2: u16 = 38;
/// Nicira action subtype `NXAST_SAMPLE3`.
pub const NXAST_SAMPLE3: u16 = 41;
/// Nicira action subtype `NXAST_CLONE`.
pub const NXAST_CLONE: u16 = 42;
/// Nicira action subtype `NXAST_CHECK_PKT_LARGER`.
pub const NXAST_CHECK_PKT_LARGER: u16 = 49;

/// `check_pkt_larger(N)->DST`: sets the one bit `dst` to 1 when the
/// packet (its Ethernet frame, tags included) is longer than `pkt_len`
/// bytes, to 0 otherwise. OVN tests a gateway port's MTU with it.
/// `NXAST_CHECK_PKT_LARGER`: `pkt_len`, the bit's offset, the field's
/// header, zeros to 24 bytes (`NXBRC_MUST_BE_ZERO` otherwise), then
/// Open vSwitch's `mf_check_dst` of the one bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CheckPktLarger {
    pub pkt_len: u16,
    pub dst: Subfield,
}

impl CheckPktLarger {
    fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u16(NXAST_CHECK_PKT_LARGER);
        out.put_u16(self.pkt_len);
        out.put_u16(self.dst.ofs);
        out.put_u32(self.dst.header());
        zeros(out, 6);
    }

    fn decode(len: usize, mut b: Reader<'_>) -> Result<CheckPktLarger> {
        fixed_len(len, 24, "check_pkt_larger is 24 bytes")?;
        b.skip(2)?;
        let pkt_len = b.u16()?;
        let ofs = b.u16()?;
        let n = b.remaining();
        let mut h = b.sub(n, ErrorCode::BadMatch(crate::error::BadMatchCode::BadLen))?;
        let field = pull_move_header(&mut h)?;
        must_be_zero(h.slice(h.remaining())?, "check_pkt_larger padding not zero")?;
        let c = CheckPktLarger {
            pkt_len,
            dst: Subfield {
                field,
                ofs,
                n_bits: 1,
            },
        };
        c.dst.check_dst()?;
        Ok(c)
    }
}

/// How deep `clone` may nest action lists: Open vSwitch's
/// `MAX_OFPACT_PARSE_DEPTH` (its text parser's limit; its decoder has none
/// but the message size). The decoder refuses deeper nesting with
/// `OFPBAC_BAD_ARGUMENT`, so decoding (and running) never recurses without
/// bound.
pub const MAX_NESTING: u32 = 100;

/// Bits `[ofs, ofs + n_bits)` of a field, as Open vSwitch's
/// `FIELD[start..end]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subfield {
    pub field: OxmField,
    pub ofs: u16,
    pub n_bits: u16,
}

impl Subfield {
    /// All of `field`.
    pub fn whole(field: OxmField) -> Subfield {
        Subfield {
            field,
            ofs: 0,
            n_bits: field.subfield_bits(),
        }
    }

    /// Ones in the subfield's bits of the field.
    pub fn mask(&self) -> u128 {
        bits_mask(self.ofs, self.n_bits)
    }

    /// Open vSwitch's `mf_check_src`: a known field with an NXM header
    /// (`OFPBAC_BAD_SET_TYPE`), at least one bit and the bits inside the
    /// field (`OFPBAC_BAD_SET_LEN`).
    pub fn check_src(&self) -> Result<()> {
        if self.field.nxm_header().is_none() {
            return Err(bac(
                BadActionCode::BadSetType,
                "field has no NXM header for a Nicira action",
            ));
        }
        check_subfield(self.field, self.ofs, self.n_bits).map(|_| ())
    }

    /// Open vSwitch's `mf_check_dst`: [`Subfield::check_src`], and a
    /// writable field (`OFPBAC_BAD_SET_ARGUMENT`).
    pub fn check_dst(&self) -> Result<()> {
        self.check_src()?;
        if !loadable(self.field) {
            return Err(bac(
                BadActionCode::BadSetArgument,
                "destination field is not writable",
            ));
        }
        Ok(())
    }

    /// `(ofs << 6) | (n_bits - 1)`, as Open vSwitch writes it (a subfield
    /// of more than 64 bits does not fit: see the checks of each action).
    pub(crate) fn ofs_nbits(&self) -> u16 {
        (self.ofs << 6) | (self.n_bits.wrapping_sub(1) & 0x3f)
    }

    pub(crate) fn from_ofs_nbits(field: OxmField, v: u16) -> Subfield {
        Subfield {
            field,
            ofs: v >> 6,
            n_bits: (v & 0x3f) + 1,
        }
    }

    pub(crate) fn header(&self) -> u32 {
        self.field.nxm_header().unwrap_or(0)
    }
}

/// Reads an `ofs_nbits` header: a known field by its exact NXM header
/// (`OFPBAC_BAD_SET_TYPE` otherwise, as Open vSwitch's
/// `mf_vl_mff_mf_from_nxm_header`).
pub(crate) fn field_of_header(header: u32) -> Result<OxmField> {
    OxmField::from_nxm_header(crate::action::exact_header(header)).ok_or(bac(
        BadActionCode::BadSetType,
        "Nicira action names a field sluice does not know",
    ))
}

fn must_be_zero(b: &[u8], what: &'static str) -> Result<()> {
    if b.iter().any(|&x| x != 0) {
        return Err(OfpError::new(NXBRC_MUST_BE_ZERO, what));
    }
    Ok(())
}

fn bad_len(what: &'static str) -> OfpError {
    OfpError::new(ErrorCode::ACTION_BAD_LEN, what)
}

fn fixed_len(len: usize, want: usize, what: &'static str) -> Result<()> {
    if len == want {
        Ok(())
    } else {
        Err(bad_len(what))
    }
}

fn min_len(len: usize, want: usize, what: &'static str) -> Result<()> {
    if len >= want {
        Ok(())
    } else {
        Err(bad_len(what))
    }
}

/// How an [`OutputReg`] goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutputRegForm {
    /// `NXAST_OUTPUT_REG`: what ovs-ofctl 3.1 writes for `output:FIELD`.
    OutputReg,
    /// `NXAST_OUTPUT_REG2` (room for an 8-byte header): kept when it came so.
    OutputReg2,
}

/// `output:FIELD[start..end]`: outputs to the port the bits hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OutputReg {
    pub src: Subfield,
    /// For output to the controller: bytes of the packet to send
    /// (ovs-ofctl's default is 65535, the whole packet).
    pub max_len: u16,
    pub form: OutputRegForm,
}

impl OutputReg {
    /// [`Subfield::check_src`], and at most 64 bits (what the wire's
    /// `ofs_nbits` can say: Open vSwitch 3.1 writes a wider one, such as
    /// `output:NXM_NX_XXREG0[]`, as bits `[1..64]` of it; sluice refuses it).
    pub fn check(&self) -> Result<()> {
        self.src.check_src()?;
        if self.src.n_bits > 64 {
            return Err(bac(
                BadActionCode::BadArgument,
                "output:FIELD reads at most 64 bits",
            ));
        }
        Ok(())
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        match self.form {
            OutputRegForm::OutputReg => {
                out.put_u16(NXAST_OUTPUT_REG);
                out.put_u16(self.src.ofs_nbits());
                out.put_u32(self.src.header());
                out.put_u16(self.max_len);
                zeros(out, 6);
            }
            OutputRegForm::OutputReg2 => {
                out.put_u16(NXAST_OUTPUT_REG2);
                out.put_u16(self.src.ofs_nbits());
                out.put_u16(self.max_len);
                out.put_u32(self.src.header());
                zeros(out, 6);
            }
        }
    }

    fn decode(len: usize, subtype: u16, mut b: Reader<'_>) -> Result<OutputReg> {
        fixed_len(len, 24, "output:FIELD is 24 bytes")?;
        let ofs_nbits = b.u16()?;
        let (field, max_len, form) = if subtype == NXAST_OUTPUT_REG {
            let header = b.u32()?;
            let max_len = b.u16()?;
            if b.slice(6)?.iter().any(|&x| x != 0) {
                return Err(bac(
                    BadActionCode::BadArgument,
                    "output:FIELD reserved bytes not zero",
                ));
            }
            (field_of_header(header)?, max_len, OutputRegForm::OutputReg)
        } else {
            let max_len = b.u16()?;
            let n = b.remaining();
            let mut h = b.sub(n, ErrorCode::BadMatch(crate::error::BadMatchCode::BadLen))?;
            let f = pull_move_header(&mut h)?;
            must_be_zero(h.slice(h.remaining())?, "output_reg2 padding not zero")?;
            (f, max_len, OutputRegForm::OutputReg2)
        };
        let o = OutputReg {
            src: Subfield::from_ofs_nbits(field, ofs_nbits),
            max_len,
            form,
        };
        o.src.check_src()?;
        Ok(o)
    }
}

/// `push:FIELD` or `pop:FIELD` (`NXAST_STACK_PUSH`/`POP`, 24 bytes).
pub(crate) fn encode_stack(sub: u16, s: &Subfield, out: &mut Vec<u8>) {
    out.put_u16(sub);
    out.put_u16(s.ofs);
    out.put_u32(s.header());
    out.put_u16(s.n_bits);
    zeros(out, 6);
}

/// Reads `push:`/`pop:` after the experimenter id: the offset, a header
/// (Open vSwitch's `nx_pull_header`), `n_bits`, zeros
/// (`NXBRC_MUST_BE_ZERO`); then `mf_check_src` for a push, `mf_check_dst`
/// for a pop.
pub(crate) fn decode_stack(len: usize, pop: bool, mut b: Reader<'_>) -> Result<Subfield> {
    fixed_len(len, 24, "push and pop are 24 bytes")?;
    b.skip(2)?;
    let ofs = b.u16()?;
    let n = b.remaining();
    let mut h = b.sub(n, ErrorCode::BadMatch(crate::error::BadMatchCode::BadLen))?;
    let field = pull_move_header(&mut h)?;
    let n_bits = h.u16()?;
    must_be_zero(h.slice(h.remaining())?, "push/pop padding not zero")?;
    let s = Subfield { field, ofs, n_bits };
    if pop {
        s.check_dst()?;
    } else {
        s.check_src()?;
    }
    Ok(s)
}

/// Which way a [`Sample`] says the packet is sampled (`NXAST_SAMPLE3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleDirection {
    Default,
    Ingress,
    Egress,
}

/// How a [`Sample`] goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SampleForm {
    /// `NXAST_SAMPLE` (24 bytes): no sampling port, no direction.
    Sample,
    /// `NXAST_SAMPLE2` (32 bytes): with a sampling port.
    Sample2,
    /// `NXAST_SAMPLE3` (32 bytes): with a direction.
    Sample3,
}

/// `sample(...)`: sends one sample in `probability`/65535 packets to an
/// IPFIX collector set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sample {
    /// Packets sampled out of 65535; never 0.
    pub probability: u16,
    pub collector_set_id: u32,
    pub obs_domain_id: u32,
    pub obs_point_id: u32,
    /// An OpenFlow 1.3 port; [`port_no::ANY`] (Open vSwitch's `OFPP_NONE`)
    /// when none is named.
    pub sampling_port: u32,
    pub direction: SampleDirection,
    pub form: SampleForm,
}

impl Sample {
    /// The form Open vSwitch writes for these arguments: the oldest that
    /// holds them.
    pub fn least_form(&self) -> SampleForm {
        if self.direction != SampleDirection::Default {
            SampleForm::Sample3
        } else if self.sampling_port != port_no::ANY {
            SampleForm::Sample2
        } else {
            SampleForm::Sample
        }
    }

    /// A zero probability is `OFPBAC_BAD_ARGUMENT`; so is a form too old
    /// for the arguments.
    pub fn check(&self) -> Result<()> {
        if self.probability == 0 {
            return Err(bac(BadActionCode::BadArgument, "sample probability 0"));
        }
        let rank = |f: SampleForm| f as u8;
        if rank(self.form) < rank(self.least_form()) || !Resubmit::port_fits(self.sampling_port) {
            return Err(bac(
                BadActionCode::BadArgument,
                "sample arguments do not fit its form",
            ));
        }
        Ok(())
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u16(match self.form {
            SampleForm::Sample => NXAST_SAMPLE,
            SampleForm::Sample2 => NXAST_SAMPLE2,
            SampleForm::Sample3 => NXAST_SAMPLE3,
        });
        out.put_u16(self.probability);
        out.put_u32(self.collector_set_id);
        out.put_u32(self.obs_domain_id);
        out.put_u32(self.obs_point_id);
        if self.form != SampleForm::Sample {
            out.put_u16(port_to_u16(self.sampling_port));
            out.put_u8(match (self.form, self.direction) {
                (SampleForm::Sample2, _) | (_, SampleDirection::Default) => 0,
                (_, SampleDirection::Ingress) => 1,
                (_, SampleDirection::Egress) => 2,
            });
            zeros(out, 5);
        }
    }

    /// Open vSwitch's order: `NXAST_SAMPLE3`'s zeros
    /// (`NXBRC_MUST_BE_ZERO`) and direction, then the probability
    /// (`OFPBAC_BAD_ARGUMENT` both).
    fn decode(len: usize, subtype: u16, mut b: Reader<'_>) -> Result<Sample> {
        let form = match subtype {
            NXAST_SAMPLE => SampleForm::Sample,
            NXAST_SAMPLE2 => SampleForm::Sample2,
            _ => SampleForm::Sample3,
        };
        let want = if form == SampleForm::Sample { 24 } else { 32 };
        fixed_len(len, want, "sample is 24 bytes, sample2 and sample3 32")?;
        b.skip(2)?;
        let probability = b.u16()?;
        let collector_set_id = b.u32()?;
        let obs_domain_id = b.u32()?;
        let obs_point_id = b.u32()?;
        let (mut sampling_port, mut direction) = (port_no::ANY, SampleDirection::Default);
        if form != SampleForm::Sample {
            sampling_port = Resubmit::port_from_u16(b.u16()?);
            let d = b.u8()?;
            let z = b.slice(5)?;
            if form == SampleForm::Sample3 {
                must_be_zero(z, "sample3 padding not zero")?;
                direction = match d {
                    0 => SampleDirection::Default,
                    1 => SampleDirection::Ingress,
                    2 => SampleDirection::Egress,
                    _ => {
                        return Err(bac(
                            BadActionCode::BadArgument,
                            "sample direction not 0, 1 or 2",
                        ))
                    }
                };
            }
        }
        let s = Sample {
            probability,
            collector_set_id,
            obs_domain_id,
            obs_point_id,
            sampling_port,
            direction,
            form,
        };
        if probability == 0 {
            return Err(bac(BadActionCode::BadArgument, "sample probability 0"));
        }
        Ok(s)
    }
}

/// How a [`Controller`] goes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControllerForm {
    /// `NXAST_CONTROLLER` (16 bytes): max_len, id, reason.
    Controller,
    /// `NXAST_CONTROLLER2`: properties, for userdata, pause or a meter.
    Controller2,
}

/// Open vSwitch's `NX_CTLR_NO_METER`: a controller action without a meter.
pub const NX_CTLR_NO_METER: u32 = u32::MAX;

/// `controller(reason=..,max_len=..,id=..,userdata=..,pause,meter_id=..)`:
/// a packet-in with these attributes. `controller` and `controller:N`
/// with nothing else are OpenFlow's output to CONTROLLER instead, as
/// ovs-ofctl sends them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Controller {
    pub max_len: u16,
    /// The connection id the packet-in goes to (0: the default one).
    pub id: u16,
    /// `ofp_packet_in_reason`, Open vSwitch's numbering (0 no_match,
    /// 1 action, 2 invalid_ttl, 3 action_set, 4 group, 5 packet_out).
    pub reason: u8,
    /// Bytes for the controller (NXT_PACKET_IN2's userdata).
    pub userdata: Bytes,
    /// Freeze the pipeline into a continuation (NXT_PACKET_IN2).
    pub pause: bool,
    /// The meter packet-ins go through; [`NX_CTLR_NO_METER`]: none.
    pub meter_id: u32,
    pub form: ControllerForm,
}

/// `OFPR_ACTION`, the reason a controller action has unless told.
pub const OFPR_ACTION: u8 = 1;

/// The names Open vSwitch gives packet-in reasons (`reason=`), by number.
pub const PACKET_IN_REASONS: [&str; 6] = [
    "no_match",
    "action",
    "invalid_ttl",
    "action_set",
    "group",
    "packet_out",
];

const NXAC2PT_MAX_LEN: u16 = 0;
const NXAC2PT_CONTROLLER_ID: u16 = 1;
const NXAC2PT_REASON: u16 = 2;
const NXAC2PT_USERDATA: u16 = 3;
const NXAC2PT_PAUSE: u16 = 4;
const NXAC2PT_METER_ID: u16 = 5;

impl Controller {
    /// Whether the arguments need `NXAST_CONTROLLER2`.
    pub fn needs_controller2(&self) -> bool {
        !self.userdata.is_empty() || self.pause || self.meter_id != NX_CTLR_NO_METER
    }

    /// A controller action in the older form with arguments it cannot
    /// carry is `OFPBAC_BAD_ARGUMENT`; so is userdata too long for a
    /// property.
    pub fn check(&self) -> Result<()> {
        if self.form == ControllerForm::Controller && self.needs_controller2() {
            return Err(bac(
                BadActionCode::BadArgument,
                "controller userdata, pause and meter_id need NXAST_CONTROLLER2",
            ));
        }
        if self.userdata.len() > 0xfff0 {
            return Err(bac(
                BadActionCode::BadArgument,
                "controller userdata too long",
            ));
        }
        Ok(())
    }

    fn encode_body(&self, out: &mut Vec<u8>) {
        match self.form {
            ControllerForm::Controller => {
                out.put_u16(NXAST_CONTROLLER);
                out.put_u16(self.max_len);
                out.put_u16(self.id);
                out.put_u8(self.reason);
                out.put_u8(0);
            }
            ControllerForm::Controller2 => {
                out.put_u16(NXAST_CONTROLLER2);
                zeros(out, 6);
                let prop = |out: &mut Vec<u8>, ty: u16, v: &[u8]| {
                    let start = out.len();
                    out.put_u16(ty);
                    out.put_u16((4 + v.len()) as u16);
                    out.extend_from_slice(v);
                    crate::wire::pad_to_8(out, start);
                };
                if self.max_len != u16::MAX {
                    prop(
                        out,
                        NXAC2PT_MAX_LEN,
                        &[&self.max_len.to_be_bytes()[..], &[0, 0]].concat(),
                    );
                }
                if self.id != 0 {
                    prop(
                        out,
                        NXAC2PT_CONTROLLER_ID,
                        &[&self.id.to_be_bytes()[..], &[0, 0]].concat(),
                    );
                }
                if self.reason != OFPR_ACTION {
                    prop(out, NXAC2PT_REASON, &[self.reason]);
                }
                if !self.userdata.is_empty() {
                    prop(out, NXAC2PT_USERDATA, &self.userdata);
                }
                if self.pause {
                    prop(out, NXAC2PT_PAUSE, &[]);
                }
                if self.meter_id != NX_CTLR_NO_METER {
                    prop(out, NXAC2PT_METER_ID, &self.meter_id.to_be_bytes());
                }
            }
        }
    }

    fn decode(len: usize, subtype: u16, mut b: Reader<'_>) -> Result<Controller> {
        b.skip(2)?;
        if subtype == NXAST_CONTROLLER {
            fixed_len(len, 16, "NXAST_CONTROLLER is 16 bytes")?;
            let max_len = b.u16()?;
            let id = b.u16()?;
            let reason = b.u8()?;
            return Ok(Controller {
                max_len,
                id,
                reason,
                userdata: Bytes::new(),
                pause: false,
                meter_id: NX_CTLR_NO_METER,
                form: ControllerForm::Controller,
            });
        }
        min_len(len, 16, "NXAST_CONTROLLER2 is at least 16 bytes")?;
        must_be_zero(b.slice(6)?, "controller2 padding not zero")?;
        let mut c = Controller {
            max_len: u16::MAX,
            id: 0,
            reason: OFPR_ACTION,
            userdata: Bytes::new(),
            pause: false,
            meter_id: NX_CTLR_NO_METER,
            form: ControllerForm::Controller2,
        };
        let prop_len = || bad_len("controller2 property length");
        while !b.is_empty() {
            if b.remaining() < 4 {
                return Err(prop_len());
            }
            let ty = b.u16()?;
            let plen = b.u16()? as usize;
            let padded = plen.div_ceil(8) * 8;
            if plen < 4 || padded - 4 > b.remaining() {
                return Err(prop_len());
            }
            let mut p = b.sub(padded - 4, ErrorCode::ACTION_BAD_LEN)?;
            let v = p.slice(plen - 4)?;
            match ty {
                NXAC2PT_MAX_LEN | NXAC2PT_CONTROLLER_ID => {
                    let x = v.get(..2).ok_or_else(prop_len)?;
                    let x = u16::from_be_bytes([x[0], x[1]]);
                    if ty == NXAC2PT_MAX_LEN {
                        c.max_len = x;
                    } else {
                        c.id = x;
                    }
                }
                NXAC2PT_REASON => c.reason = *v.first().ok_or_else(prop_len)?,
                NXAC2PT_USERDATA => c.userdata = Bytes::copy_from_slice(v),
                NXAC2PT_PAUSE => c.pause = true,
                NXAC2PT_METER_ID => {
                    let x: [u8; 4] = v.try_into().map_err(|_| prop_len())?;
                    c.meter_id = u32::from_be_bytes(x);
                }
                _ => {
                    return Err(bac(
                        BadActionCode::BadArgument,
                        "unknown controller2 property",
                    ))
                }
            }
        }
        Ok(c)
    }
}

/// `dec_ttl(id,...)` (`NXAST_DEC_TTL_CNT_IDS`) after the experimenter id:
/// zeros (`NXBRC_MUST_BE_ZERO`), then room for the ids
/// (`OFPBAC_BAD_LEN`), as Open vSwitch checks them.
fn decode_cnt_ids(len: usize, mut b: Reader<'_>) -> Result<Vec<u16>> {
    min_len(len, 16, "dec_ttl_cnt_ids is at least 16 bytes")?;
    b.skip(2)?;
    let n = b.u16()? as usize;
    must_be_zero(b.slice(4)?, "dec_ttl_cnt_ids zeros not zero")?;
    if b.remaining() < 2 * n {
        return Err(bad_len("dec_ttl_cnt_ids has no room for its ids"));
    }
    (0..n).map(|_| b.u16()).collect()
}

fn encode_cnt_ids(ids: &[u16], out: &mut Vec<u8>) {
    out.put_u16(NXAST_DEC_TTL_CNT_IDS);
    out.put_u16(ids.len() as u16);
    zeros(out, 4);
    for i in ids {
        out.put_u16(*i);
    }
}

/// Encodes the body (after the experimenter id) of a Nicira action of
/// this module; `false` if `a` is none of them.
pub(crate) fn encode_body(a: &Action, out: &mut Vec<u8>) -> bool {
    match a {
        Action::Note(n) => {
            out.put_u16(NXAST_NOTE);
            out.extend_from_slice(n);
        }
        Action::Exit => {
            out.put_u16(NXAST_EXIT);
            zeros(out, 6);
        }
        Action::PopQueue => {
            out.put_u16(NXAST_POP_QUEUE);
            zeros(out, 6);
        }
        Action::OutputTrunc { port, max_len } => {
            out.put_u16(NXAST_OUTPUT_TRUNC);
            out.put_u16(crate::resubmit::port_to_u16(*port));
            out.put_u32(*max_len);
        }
        Action::OutputReg(o) => o.encode_body(out),
        Action::DecTtlIds(ids) => encode_cnt_ids(ids, out),
        Action::StackPush(s) => encode_stack(NXAST_STACK_PUSH, s, out),
        Action::StackPop(s) => encode_stack(NXAST_STACK_POP, s, out),
        Action::Clone(list) => {
            out.put_u16(NXAST_CLONE);
            zeros(out, 6);
            crate::action::encode_actions(list, out);
        }
        Action::Sample(s) => s.encode_body(out),
        Action::Controller(c) => c.encode_body(out),
        Action::Multipath(m) => m.encode_body(out),
        Action::Bundle(b) => b.encode_body(out),
        Action::CheckPktLarger(c) => c.encode_body(out),
        a => return crate::ct::encode_body(a, out),
    }
    true
}

/// Decodes a Nicira action of this module from `b` (after the
/// experimenter id; `len` the whole action's length), `None` if the
/// subtype is none of them.
pub(crate) fn decode(
    subtype: u16,
    len: usize,
    mut b: Reader<'_>,
    depth: u32,
) -> Option<Result<Action>> {
    Some(match subtype {
        NXAST_NOTE => min_len(len, 16, "note is at least 16 bytes").and_then(|_| {
            b.skip(2)?;
            Ok(Action::Note(b.rest()))
        }),
        NXAST_EXIT => fixed_len(len, 16, "exit is 16 bytes").map(|_| Action::Exit),
        NXAST_POP_QUEUE => fixed_len(len, 16, "pop_queue is 16 bytes").map(|_| Action::PopQueue),
        NXAST_OUTPUT_TRUNC => fixed_len(len, 16, "output_trunc is 16 bytes").and_then(|_| {
            b.skip(2)?;
            let port = crate::resubmit::Resubmit::port_from_u16(b.u16()?);
            let max_len = b.u32()?;
            if max_len < OUTPUT_TRUNC_MIN {
                return Err(bac(
                    BadActionCode::BadArgument,
                    "output_trunc's max_len is less than an Ethernet header",
                ));
            }
            Ok(Action::OutputTrunc { port, max_len })
        }),
        NXAST_OUTPUT_REG | NXAST_OUTPUT_REG2 => {
            b.skip(2).ok();
            OutputReg::decode(len, subtype, b).map(Action::OutputReg)
        }
        NXAST_DEC_TTL_CNT_IDS => decode_cnt_ids(len, b).map(Action::DecTtlIds),
        NXAST_STACK_PUSH => decode_stack(len, false, b).map(Action::StackPush),
        NXAST_STACK_POP => decode_stack(len, true, b).map(Action::StackPop),
        NXAST_CLONE => min_len(len, 16, "clone is at least 16 bytes").and_then(|_| {
            b.skip(8)?;
            if depth + 1 >= MAX_NESTING {
                return Err(bac(
                    BadActionCode::BadArgument,
                    "clone nested deeper than 100 action lists",
                ));
            }
            decode_actions_nested(&mut b, depth + 1).map(Action::Clone)
        }),
        NXAST_SAMPLE | NXAST_SAMPLE2 | NXAST_SAMPLE3 => {
            Sample::decode(len, subtype, b).map(Action::Sample)
        }
        NXAST_CONTROLLER | NXAST_CONTROLLER2 => {
            Controller::decode(len, subtype, b).map(|c| Action::Controller(Box::new(c)))
        }
        NXAST_MULTIPATH => crate::multipath::Multipath::decode(len, b).map(Action::Multipath),
        NXAST_CHECK_PKT_LARGER => CheckPktLarger::decode(len, b).map(Action::CheckPktLarger),
        NXAST_BUNDLE | NXAST_BUNDLE_LOAD => {
            crate::multipath::Bundle::decode(len, subtype, b).map(|x| Action::Bundle(Box::new(x)))
        }
        _ => return crate::ct::decode(subtype, len, b, depth),
    })
}
