//! OpenFlow 1.0 actions (`ofp_action_*`, types 0-11 and VENDOR) to and
//! from the internal [`Action`] list, as Open vSwitch translates them
//! (lib/ofp-actions.c).
//!
//! Contract, reading 1.0 (each with the error Open vSwitch gives):
//! * `OUTPUT` (8 bytes): `output` with the port widened (port10).
//! * `SET_VLAN_VID` / `SET_VLAN_PCP`: `set_field` of `vlan_vid` (VID |
//!   `OFPVID_PRESENT`) / `vlan_pcp`, preceded by `push_vlan:0x8100` when
//!   the packet has no tag at that point, as Open vSwitch's `mod_vlan_vid`
//!   / `mod_vlan_pcp` ("push a tag when there is none"). Whether it has one
//!   is known from the flow's match (a tag only when the match asks for
//!   `OFPVID_PRESENT`, as ovs-ofctl and sluice's text parser decide it),
//!   or for PACKET_OUT from the packet, and follows the list (a strip or
//!   a push changes it). A VID above 4095 or a PCP above 7 is
//!   `OFPBAC_BAD_ARGUMENT`. Open vSwitch decides "push if needed" per
//!   packet; the internal list decides it once, so a flow whose match
//!   leaves the VLAN open pushes a second tag on tagged packets.
//! * `STRIP_VLAN`: `pop_vlan`.
//! * `SET_DL_SRC`/`DST`, `SET_NW_SRC`/`DST`: `set_field` of
//!   `eth_src`/`dst`, `ipv4_src`/`dst`.
//! * `SET_NW_TOS`: `set_field` of `ip_dscp` (tos >> 2); a TOS with the ECN
//!   bits set is `OFPBAC_BAD_ARGUMENT`, as Open vSwitch.
//! * `SET_TP_SRC`/`DST`: `set_field` of `tcp_*`, `udp_*` or `sctp_*`,
//!   chosen by the IP protocol the match (or, in PACKET_OUT, the packet)
//!   gives. With none of the three, Open vSwitch accepts the action under
//!   1.0 only ("inconsistent match") and sets whichever port the packet
//!   has at run time; the internal `set_field` must name one field, so
//!   this is `OFPBAC_MATCH_INCONSISTENT`, the code Open vSwitch gives the
//!   same action under 1.1 and later.
//! * `ENQUEUE`: `set_queue`, `output` (max_len 65535), `pop_queue`: the
//!   queue for that one output only, as Open vSwitch writes its enqueue to
//!   1.1 and later peers. A physical port number at or above `OFPP_MAX`
//!   other than `IN_PORT` and `LOCAL` is `OFPBAC_BAD_OUT_PORT`.
//! * `VENDOR`: the Nicira actions Open vSwitch uses under 1.0 for 1.1+
//!   actions are read into those: `NXAST_SET_QUEUE` (4), `NXAST_GROUP`
//!   (40), `NXAST_DEC_TTL` (18), `NXAST_SET_MPLS_TTL` (25),
//!   `NXAST_DEC_MPLS_TTL` (26), `NXAST_PUSH_MPLS` (23), `NXAST_POP_MPLS`
//!   (24), `NXAST_SET_MPLS_LABEL` (30), `NXAST_SET_MPLS_TC` (31); every
//!   other vendor action goes through the 1.3 decoder, which lays them out
//!   alike. Actions nested in a Nicira action (`clone`, `ct`'s `exec`) are
//!   read as 1.3 lays them out, where Open vSwitch uses the connection's
//!   version.
//! * Other types: `OFPBAC_BAD_TYPE`; a wrong length: `OFPBAC_BAD_LEN`.
//!
//! Writing 1.0 (Open vSwitch's `encode_*` for `OFP10_VERSION`): the
//! reverse of the above; `push_vlan` is left out (1.0's set_vlan_vid
//! pushes one itself, as Open vSwitch's `encode_PUSH_VLAN` says);
//! `set_queue`, `output` and `pop_queue` in a row are
//! `ENQUEUE`, other
//! `set_queue`s, `group`, `dec_nw_ttl` and the MPLS actions are the Nicira
//! actions above; `set_nw_ttl` and `set_field` of any other field are
//! `NXAST_REG_LOAD` of the whole field (`set_field_to_nxast`);
//! `copy_ttl_in`/`out`, `push_pbb`/`pop_pbb` and masked or unknown
//! `set_field`s have no 1.0 or Nicira form and are left out; Nicira and
//! other experimenter actions are written as they are.

use bytes::{BufMut, Bytes};

use crate::action::{Action, LoadForm, RegLoad, NX_VENDOR_ID};
use crate::error::{BadActionCode, ErrorCode, OfpError, Result};
use crate::instruction::Instruction;
use crate::oxm::{MatchEntry, Oxm, OxmField, OFPVID_PRESENT};
use crate::wire::{zeros, Reader};

use super::port10::{port_from_10, port_to_10, OFPP10_IN_PORT, OFPP10_MAX};

pub const OFPAT10_OUTPUT: u16 = 0;
pub const OFPAT10_SET_VLAN_VID: u16 = 1;
pub const OFPAT10_SET_VLAN_PCP: u16 = 2;
pub const OFPAT10_STRIP_VLAN: u16 = 3;
pub const OFPAT10_SET_DL_SRC: u16 = 4;
pub const OFPAT10_SET_DL_DST: u16 = 5;
pub const OFPAT10_SET_NW_SRC: u16 = 6;
pub const OFPAT10_SET_NW_DST: u16 = 7;
pub const OFPAT10_SET_NW_TOS: u16 = 8;
pub const OFPAT10_SET_TP_SRC: u16 = 9;
pub const OFPAT10_SET_TP_DST: u16 = 10;
pub const OFPAT10_ENQUEUE: u16 = 11;
pub const OFPAT10_VENDOR: u16 = 0xffff;

/// Every 1.0 action type sluice supports, as FEATURES_REPLY's `actions`
/// bitmap writes them (bit n: type n; 0-11: all of them).
pub const SUPPORTED_ACTIONS: u32 = 0xfff;

const NXAST_SET_QUEUE: u16 = 4;
const NXAST_DEC_TTL: u16 = 18;
const NXAST_PUSH_MPLS: u16 = 23;
const NXAST_POP_MPLS: u16 = 24;
const NXAST_SET_MPLS_TTL: u16 = 25;
const NXAST_DEC_MPLS_TTL: u16 = 26;
const NXAST_SET_MPLS_LABEL: u16 = 30;
const NXAST_SET_MPLS_TC: u16 = 31;
const NXAST_GROUP: u16 = 40;
/// `NXAST_WRITE_METADATA`: what Open vSwitch writes for the
/// write_metadata instruction under 1.0 (see the flow codec in mod.rs).
pub const NXAST_WRITE_METADATA: u16 = 22;

/// What reading an action list knows of the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ctx {
    /// The IP protocol, when known (it picks set_tp_*'s field).
    pub proto: Option<u8>,
    /// Whether the packet has a VLAN tag at this point of the list.
    pub vlan: bool,
}

impl Ctx {
    /// What a flow's match says: its `ip_proto`, and a tag when it asks
    /// for `OFPVID_PRESENT`.
    pub fn of_match(m: &crate::Match) -> Ctx {
        Ctx {
            proto: m
                .get(OxmField::IpProto)
                .filter(|o| o.mask.is_none())
                .map(|o| o.value as u8),
            vlan: m.get(OxmField::VlanVid).is_some_and(|o| {
                let p = u128::from(OFPVID_PRESENT);
                o.value & o.effective_mask() & p != 0
            }),
        }
    }

    /// What an Ethernet frame says (PACKET_OUT): an 802.1Q tag first, and
    /// the IPv4 or IPv6 next header.
    pub fn of_packet(data: &[u8]) -> Ctx {
        let be16 = |o: usize| data.get(o..o + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
        let mut off = 12;
        let mut vlan = false;
        if matches!(be16(off), Some(0x8100) | Some(0x88a8)) {
            vlan = true;
            off += 4;
        }
        let proto = match be16(off) {
            Some(0x0800) => data.get(off + 2 + 9).copied(),
            Some(0x86dd) => data.get(off + 2 + 6).copied(),
            _ => None,
        };
        Ctx { proto, vlan }
    }
}

fn bad(code: BadActionCode, detail: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadAction(code), detail)
}

fn set(field: OxmField, value: u128) -> Action {
    Action::SetField(MatchEntry::Basic(Oxm::exact(field, value)))
}

/// Reads a 1.0 action list filling all of `r`.
pub fn decode_actions(r: &mut Reader<'_>, mut ctx: Ctx) -> Result<Vec<Action>> {
    let mut v = Vec::with_capacity(r.remaining() / 8);
    while !r.is_empty() {
        decode_action(r, &mut ctx, &mut v)?;
    }
    Ok(v)
}

fn decode_action(r: &mut Reader<'_>, ctx: &mut Ctx, out: &mut Vec<Action>) -> Result<()> {
    let ty = r.peek_u16(0)?;
    let len = r.peek_u16(2)? as usize;
    if len < 8 || !len.is_multiple_of(8) {
        return Err(bad(
            BadActionCode::BadLen,
            "action length not a positive multiple of 8",
        ));
    }
    if ty == OFPAT10_VENDOR {
        let mut whole = r.sub(len, ErrorCode::ACTION_BAD_LEN)?;
        if let Some(a) = decode_nx(&whole, len)? {
            out.push(a);
            return Ok(());
        }
        let a = Action::decode(&mut whole)?;
        out.push(a);
        return Ok(());
    }
    let want = match ty {
        OFPAT10_SET_DL_SRC | OFPAT10_SET_DL_DST | OFPAT10_ENQUEUE => 16,
        0..=10 => 8,
        _ => return Err(bad(BadActionCode::BadType, "unknown OpenFlow 1.0 action")),
    };
    if len != want {
        return Err(bad(BadActionCode::BadLen, "wrong length for action type"));
    }
    let mut b = r.sub(len, ErrorCode::ACTION_BAD_LEN)?;
    b.skip(4)?;
    use OxmField as F;
    match ty {
        OFPAT10_OUTPUT => {
            let port = port_from_10(b.u16()?);
            let max_len = b.u16()?;
            out.push(Action::Output { port, max_len });
        }
        OFPAT10_SET_VLAN_VID | OFPAT10_SET_VLAN_PCP => {
            let a = if ty == OFPAT10_SET_VLAN_VID {
                let vid = b.u16()?;
                if vid > 0xfff {
                    return Err(bad(BadActionCode::BadArgument, "VLAN id above 4095"));
                }
                set(F::VlanVid, u128::from(vid | OFPVID_PRESENT))
            } else {
                let pcp = b.u8()?;
                if pcp > 7 {
                    return Err(bad(BadActionCode::BadArgument, "VLAN priority above 7"));
                }
                set(F::VlanPcp, pcp.into())
            };
            if !ctx.vlan {
                out.push(Action::PushVlan(0x8100));
                ctx.vlan = true;
            }
            out.push(a);
        }
        OFPAT10_STRIP_VLAN => {
            out.push(Action::PopVlan);
            ctx.vlan = false;
        }
        OFPAT10_SET_DL_SRC | OFPAT10_SET_DL_DST => {
            let mac: [u8; 6] = b.array()?;
            let v = mac.iter().fold(0u128, |v, x| v << 8 | u128::from(*x));
            let f = if ty == OFPAT10_SET_DL_SRC {
                F::EthSrc
            } else {
                F::EthDst
            };
            out.push(set(f, v));
        }
        OFPAT10_SET_NW_SRC | OFPAT10_SET_NW_DST => {
            let v = b.u32()?;
            let f = if ty == OFPAT10_SET_NW_SRC {
                F::Ipv4Src
            } else {
                F::Ipv4Dst
            };
            out.push(set(f, v.into()));
        }
        OFPAT10_SET_NW_TOS => {
            let tos = b.u8()?;
            if tos & 3 != 0 {
                return Err(bad(
                    BadActionCode::BadArgument,
                    "set_nw_tos with the ECN bits set",
                ));
            }
            out.push(set(F::IpDscp, (tos >> 2).into()));
        }
        OFPAT10_SET_TP_SRC | OFPAT10_SET_TP_DST => {
            let port = b.u16()?;
            let src = ty == OFPAT10_SET_TP_SRC;
            let f = match ctx.proto {
                Some(6) => [F::TcpDst, F::TcpSrc][src as usize],
                Some(17) => [F::UdpDst, F::UdpSrc][src as usize],
                Some(132) => [F::SctpDst, F::SctpSrc][src as usize],
                _ => {
                    return Err(bad(
                        BadActionCode::MatchInconsistent,
                        "set_tp_src/dst without tcp, udp or sctp in the match",
                    ))
                }
            };
            out.push(set(f, port.into()));
        }
        _ => {
            // ENQUEUE: port, 6 pad, queue_id.
            let p = b.u16()?;
            b.skip(6)?;
            let queue = b.u32()?;
            if p >= OFPP10_MAX && p != OFPP10_IN_PORT && p != 0xfffe {
                return Err(bad(BadActionCode::BadOutPort, "enqueue to a reserved port"));
            }
            // max_len as Open vSwitch writes its enqueue's output to 1.1+.
            out.push(Action::SetQueue(queue));
            out.push(Action::Output {
                port: port_from_10(p),
                max_len: u16::MAX,
            });
            out.push(Action::PopQueue);
        }
    }
    Ok(())
}

/// The Nicira actions that stand for 1.1+ actions under 1.0 (module doc),
/// or None for any other vendor action. `b` is the whole action.
fn decode_nx(b: &Reader<'_>, len: usize) -> Result<Option<Action>> {
    if len < 16 || b.remaining() < 16 {
        return Ok(None);
    }
    let mut h = b.clone();
    h.skip(4)?;
    if h.u32()? != NX_VENDOR_ID {
        return Ok(None);
    }
    let sub = h.u16()?;
    let fixed = |want: usize| {
        if len == want {
            Ok(())
        } else {
            Err(bad(BadActionCode::BadLen, "wrong length for Nicira action"))
        }
    };
    // The argument: a u8/u16 at offset 10, a u32 at offset 12.
    let mut a8 = h.clone();
    let mut a32 = h.clone();
    a32.skip(2)?;
    use OxmField as F;
    let a = match sub {
        NXAST_SET_QUEUE => Action::SetQueue(a32.u32()?),
        NXAST_GROUP => Action::Group(a32.u32()?),
        NXAST_DEC_TTL => Action::DecNwTtl,
        NXAST_DEC_MPLS_TTL => Action::DecMplsTtl,
        NXAST_SET_MPLS_TTL => Action::SetMplsTtl(a8.u8()?),
        NXAST_PUSH_MPLS => Action::PushMpls(a8.u16()?),
        NXAST_POP_MPLS => Action::PopMpls(a8.u16()?),
        NXAST_SET_MPLS_LABEL => set(F::MplsLabel, a32.u32()?.into()),
        NXAST_SET_MPLS_TC => set(F::MplsTc, a8.u8()?.into()),
        _ => return Ok(None),
    };
    fixed(16)?;
    Ok(Some(a))
}

/// Appends a Nicira action of 16 bytes with a simple argument, laid out
/// as Open vSwitch's `ofpact_put_raw` does (header 10 bytes, the argument
/// aligned to its size).
fn put_nx(out: &mut Vec<u8>, sub: u16, arg: NxArg) {
    let start = out.len();
    out.put_u16(OFPAT10_VENDOR);
    out.put_u16(16);
    out.put_u32(NX_VENDOR_ID);
    out.put_u16(sub);
    match arg {
        NxArg::None => {}
        NxArg::U8(v) => out.put_u8(v),
        NxArg::U16(v) => out.put_u16(v),
        NxArg::U32(v) => {
            zeros(out, 2);
            out.put_u32(v);
        }
    }
    zeros(out, 16 - (out.len() - start));
}

enum NxArg {
    None,
    U8(u8),
    U16(u16),
    U32(u32),
}

fn put_std(out: &mut Vec<u8>, ty: u16, body: &[u8]) {
    out.put_u16(ty);
    out.put_u16((4 + body.len()) as u16);
    out.extend_from_slice(body);
}

/// Appends the 1.0 form of an internal action list (module doc).
pub fn encode_actions(list: &[Action], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < list.len() {
        let a = &list[i];
        i += 1;
        use OxmField as F;
        match a {
            Action::Output { port, max_len } => {
                let mut b = Vec::with_capacity(4);
                b.put_u16(port_to_10(*port));
                b.put_u16(*max_len);
                put_std(out, OFPAT10_OUTPUT, &b);
            }
            Action::SetQueue(q) => {
                if let (Some(Action::Output { port, .. }), Some(Action::PopQueue)) =
                    (list.get(i), list.get(i + 1))
                {
                    i += 2;
                    let mut b = Vec::with_capacity(12);
                    b.put_u16(port_to_10(*port));
                    zeros(&mut b, 6);
                    b.put_u32(*q);
                    put_std(out, OFPAT10_ENQUEUE, &b);
                } else {
                    put_nx(out, NXAST_SET_QUEUE, NxArg::U32(*q));
                }
            }
            Action::PushVlan(_) => {}
            Action::PopVlan => put_std(out, OFPAT10_STRIP_VLAN, &[0; 4]),
            Action::Group(g) => put_nx(out, NXAST_GROUP, NxArg::U32(*g)),
            Action::DecNwTtl => put_nx(out, NXAST_DEC_TTL, NxArg::None),
            Action::DecMplsTtl => put_nx(out, NXAST_DEC_MPLS_TTL, NxArg::None),
            Action::SetMplsTtl(t) => put_nx(out, NXAST_SET_MPLS_TTL, NxArg::U8(*t)),
            Action::PushMpls(e) => put_nx(out, NXAST_PUSH_MPLS, NxArg::U16(*e)),
            Action::PopMpls(e) => put_nx(out, NXAST_POP_MPLS, NxArg::U16(*e)),
            Action::SetNwTtl(t) => Action::RegLoad(RegLoad {
                dst: F::NwTtl,
                ofs: 0,
                n_bits: 8,
                value: (*t).into(),
                form: LoadForm::RegLoad,
            })
            .encode(out),
            Action::CopyTtlIn | Action::CopyTtlOut | Action::PushPbb(_) | Action::PopPbb => {}
            Action::SetField(MatchEntry::Basic(o)) if o.mask.is_none() => encode_set(o, out),
            Action::SetField(_) => {}
            other => other.encode(out),
        }
    }
}

fn encode_set(o: &Oxm, out: &mut Vec<u8>) {
    use OxmField as F;
    let v = o.value;
    let b16 = |x: u16| {
        let mut b = x.to_be_bytes().to_vec();
        b.extend_from_slice(&[0, 0]);
        b
    };
    match o.field {
        F::VlanVid => put_std(out, OFPAT10_SET_VLAN_VID, &b16(v as u16 & 0xfff)),
        F::VlanPcp => put_std(out, OFPAT10_SET_VLAN_PCP, &[v as u8, 0, 0, 0]),
        F::EthSrc | F::EthDst => {
            let m = (v as u64).to_be_bytes();
            let mut b = m[2..].to_vec();
            zeros(&mut b, 6);
            let ty = if o.field == F::EthSrc {
                OFPAT10_SET_DL_SRC
            } else {
                OFPAT10_SET_DL_DST
            };
            put_std(out, ty, &b);
        }
        F::Ipv4Src => put_std(out, OFPAT10_SET_NW_SRC, &(v as u32).to_be_bytes()),
        F::Ipv4Dst => put_std(out, OFPAT10_SET_NW_DST, &(v as u32).to_be_bytes()),
        F::IpDscp => put_std(out, OFPAT10_SET_NW_TOS, &[(v as u8) << 2, 0, 0, 0]),
        F::TcpSrc | F::UdpSrc | F::SctpSrc => put_std(out, OFPAT10_SET_TP_SRC, &b16(v as u16)),
        F::TcpDst | F::UdpDst | F::SctpDst => put_std(out, OFPAT10_SET_TP_DST, &b16(v as u16)),
        F::MplsLabel => put_nx(out, NXAST_SET_MPLS_LABEL, NxArg::U32(v as u32)),
        F::MplsTc => put_nx(out, NXAST_SET_MPLS_TC, NxArg::U8(v as u8)),
        f => {
            if let (Some(info), Some(_)) = (f.info(), f.nxm_header()) {
                Action::RegLoad(RegLoad {
                    dst: f,
                    ofs: 0,
                    n_bits: info.bits.into(),
                    value: v,
                    form: LoadForm::RegLoad,
                })
                .encode(out);
            }
        }
    }
}

/// Reads a 1.0 action list as the instructions of a flow: one
/// apply_actions (none for an empty list: drop), and a trailing
/// `NXAST_WRITE_METADATA` as the write_metadata instruction, as Open
/// vSwitch reads it.
pub fn decode_instructions(r: &mut Reader<'_>, ctx: Ctx) -> Result<Vec<Instruction>> {
    let mut actions = decode_actions(r, ctx)?;
    let mut meta = None;
    if let Some(Action::Experimenter { experimenter, data }) = actions.last() {
        if *experimenter == NX_VENDOR_ID
            && data.len() == 24
            && data[..2] == NXAST_WRITE_METADATA.to_be_bytes()
        {
            let word = |o: usize| {
                let mut a = [0u8; 8];
                a.copy_from_slice(&data[o..o + 8]);
                u64::from_be_bytes(a)
            };
            meta = Some(Instruction::WriteMetadata {
                metadata: word(8),
                mask: word(16),
            });
        }
    }
    let mut v = Vec::with_capacity(2);
    if meta.is_some() {
        actions.pop();
    }
    if !actions.is_empty() {
        v.push(Instruction::ApplyActions(actions));
    }
    v.extend(meta);
    Ok(v)
}

/// Appends a flow's instructions as a 1.0 action list, as Open vSwitch
/// does for 1.0: apply_actions' actions, write_metadata as
/// `NXAST_WRITE_METADATA`, goto_table as `resubmit(,TABLE)`
/// (`NXAST_RESUBMIT_TABLE` with in_port `OFPP_IN_PORT`); write_actions,
/// clear_actions, meter and experimenter instructions have no 1.0 form
/// and are left out (Open vSwitch's `encode_WRITE_ACTIONS`,
/// `encode_CLEAR_ACTIONS` and `encode_METER` write nothing for 1.0).
pub fn encode_instructions(list: &[Instruction], out: &mut Vec<u8>) {
    for i in list {
        match i {
            Instruction::ApplyActions(a) => encode_actions(a, out),
            Instruction::WriteMetadata { metadata, mask } => {
                out.put_u16(OFPAT10_VENDOR);
                out.put_u16(32);
                out.put_u32(NX_VENDOR_ID);
                out.put_u16(NXAST_WRITE_METADATA);
                zeros(out, 6);
                out.put_u64(*metadata);
                out.put_u64(*mask);
            }
            Instruction::GotoTable(t) => Action::Resubmit(crate::resubmit::Resubmit {
                in_port: crate::port::port_no::IN_PORT,
                table: *t,
                form: crate::resubmit::ResubmitForm::ResubmitTable,
            })
            .encode(out),
            _ => {}
        }
    }
}

/// Reads a 1.0 action list from bytes (tests and tools).
pub fn decode_bytes(b: &[u8], ctx: Ctx) -> Result<Vec<Action>> {
    let b = Bytes::copy_from_slice(b);
    let mut r = Reader::new(&b, ErrorCode::ACTION_BAD_LEN);
    decode_actions(&mut r, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: Ctx = Ctx {
        proto: Some(6),
        vlan: false,
    };

    /// Every 1.0 action as the 1.0.0 spec lays it out (§5.2.4), read and
    /// written back byte for byte.
    #[test]
    fn golden_actions_round_trip() {
        let golden: &[u8] = &[
            0, 0, 0, 8, 0, 2, 0xff, 0xff, // output:2 max_len 65535
            0, 1, 0, 8, 0, 10, 0, 0, // set_vlan_vid 10
            0, 2, 0, 8, 3, 0, 0, 0, // set_vlan_pcp 3
            0, 3, 0, 8, 0, 0, 0, 0, // strip_vlan
            0, 4, 0, 16, 0, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, // set_dl_src
            0, 5, 0, 16, 6, 7, 8, 9, 10, 11, 0, 0, 0, 0, 0, 0, // set_dl_dst
            0, 6, 0, 8, 10, 0, 0, 1, // set_nw_src
            0, 7, 0, 8, 10, 0, 0, 2, // set_nw_dst
            0, 8, 0, 8, 0xb8, 0, 0, 0, // set_nw_tos 184 (EF)
            0, 9, 0, 8, 0x1f, 0x90, 0, 0, // set_tp_src 8080
            0, 10, 0, 8, 0, 80, 0, 0, // set_tp_dst 80
            0, 11, 0, 16, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, // enqueue 3:7
        ];
        let got = decode_bytes(golden, TCP).unwrap();
        use OxmField as F;
        assert_eq!(
            got,
            vec![
                Action::Output {
                    port: 2,
                    max_len: 0xffff
                },
                Action::PushVlan(0x8100),
                set(F::VlanVid, 0x100a),
                set(F::VlanPcp, 3),
                Action::PopVlan,
                set(F::EthSrc, 0x0001_0203_0405),
                set(F::EthDst, 0x0607_0809_0a0b),
                set(F::Ipv4Src, 0x0a00_0001),
                set(F::Ipv4Dst, 0x0a00_0002),
                set(F::IpDscp, 46),
                set(F::TcpSrc, 8080),
                set(F::TcpDst, 80),
                Action::SetQueue(7),
                Action::Output {
                    port: 3,
                    max_len: u16::MAX
                },
                Action::PopQueue,
            ]
        );
        let mut out = Vec::new();
        encode_actions(&got, &mut out);
        assert_eq!(out, golden);
        // A set_queue the output does not close with pop_queue stays set
        // for the outputs after it: not an ENQUEUE.
        let mut out = Vec::new();
        encode_actions(&got[..got.len() - 1], &mut out);
        assert_ne!(out[out.len() - 16..], golden[golden.len() - 16..]);
        let again = decode_bytes(
            &out,
            Ctx {
                proto: Some(6),
                vlan: false,
            },
        )
        .unwrap();
        assert_eq!(again[..], got[..got.len() - 1]);
    }

    #[test]
    fn tp_port_follows_the_protocol() {
        let b = [0u8, 9, 0, 8, 0, 53, 0, 0];
        let udp = Ctx {
            proto: Some(17),
            vlan: false,
        };
        assert_eq!(
            decode_bytes(&b, udp).unwrap(),
            vec![set(OxmField::UdpSrc, 53)]
        );
        let e = decode_bytes(
            &b,
            Ctx {
                proto: None,
                vlan: false,
            },
        )
        .unwrap_err();
        assert_eq!(
            e.code,
            ErrorCode::BadAction(BadActionCode::MatchInconsistent)
        );
    }

    #[test]
    fn bad_arguments_lengths_and_types() {
        let code = |b: &[u8]| decode_bytes(b, TCP).unwrap_err().code;
        assert_eq!(
            code(&[0, 1, 0, 8, 0x10, 0, 0, 0]),
            ErrorCode::BadAction(BadActionCode::BadArgument)
        );
        assert_eq!(
            code(&[0, 8, 0, 8, 0x01, 0, 0, 0]),
            ErrorCode::BadAction(BadActionCode::BadArgument)
        );
        assert_eq!(
            code(&[0, 0, 0, 16, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            ErrorCode::ACTION_BAD_LEN
        );
        assert_eq!(
            code(&[0, 12, 0, 8, 0, 0, 0, 0]),
            ErrorCode::BadAction(BadActionCode::BadType)
        );
        assert_eq!(code(&[0, 0, 0, 8, 0, 1]), ErrorCode::ACTION_BAD_LEN);
    }

    /// Open vSwitch's Nicira forms of 1.1+ actions: `ovs-ofctl ofp-print`
    /// reads a 1.0 FLOW_MOD with this list as
    /// `actions=group:5,dec_ttl,push_mpls:0x8847,set_queue:9`.
    #[test]
    fn nicira_forms_of_newer_actions() {
        let golden: &[u8] = &[
            0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 40, 0, 0, 0, 0, 0, 5, // group:5
            0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 18, 0, 0, 0, 0, 0, 0, // dec_ttl
            0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 23, 0x88, 0x47, 0, 0, 0, 0, // push_mpls
            0xff, 0xff, 0, 16, 0, 0, 0x23, 0x20, 0, 4, 0, 0, 0, 0, 0, 9, // set_queue:9
        ];
        let got = decode_bytes(golden, TCP).unwrap();
        assert_eq!(
            got,
            vec![
                Action::Group(5),
                Action::DecNwTtl,
                Action::PushMpls(0x8847),
                Action::SetQueue(9)
            ]
        );
        let mut out = Vec::new();
        encode_actions(&got, &mut out);
        assert_eq!(out, golden);
    }

    #[test]
    fn packet_context() {
        let mut pkt = vec![0u8; 12];
        pkt.extend_from_slice(&[0x81, 0, 0, 5, 0x08, 0]);
        pkt.extend_from_slice(&[0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17]);
        assert_eq!(
            Ctx::of_packet(&pkt),
            Ctx {
                proto: Some(17),
                vlan: true
            }
        );
        assert_eq!(
            Ctx::of_packet(&[]),
            Ctx {
                proto: None,
                vlan: false
            }
        );
    }
}
