//! Open vSwitch's Nicira extension messages: OFPT_EXPERIMENTER with
//! experimenter [`NX_VENDOR_ID`] (0x00002320) and the Nicira subtype as
//! exp_type, the form Open vSwitch uses for them under OpenFlow 1.1 and
//! later. The ones a controller of an Open vSwitch bridge relies on for
//! its packet-ins:
//!
//! * `NXT_SET_PACKET_IN_FORMAT` (16): a `u32` format, [`PacketInFormat`]:
//!   0 the version's own OFPT_PACKET_IN, 1 `NXT_PACKET_IN`, 2
//!   `NXT_PACKET_IN2`. Another number is `OFPBRC_EPERM`, as Open vSwitch
//!   answers.
//! * `NXT_SET_CONTROLLER_ID` (20): six zero bytes (else Nicira's
//!   `NXBRC_MUST_BE_ZERO`) and the connection's new 16-bit controller id
//!   (0 until set); `controller(id=N)` and `dec_ttl(ids)` send their
//!   packet-ins to the connections of that id only.
//! * `NXT_PACKET_IN` (17, [`NxPacketIn`]): OFPT_PACKET_IN with NXM instead
//!   of OXM metadata: buffer_id, total_len, reason, table_id, cookie,
//!   match_len, 6 bytes of padding, the NXM fields padded to 8, two zero
//!   bytes, the frame.
//! * `NXT_PACKET_IN2` (30, [`PacketIn2`]): properties (type, length, value,
//!   zero padding to 8) after the 16-byte header: `NXPINT_PACKET` (0, the
//!   frame), `FULL_LEN` (1, u32, only when the frame was cut),
//!   `BUFFER_ID` (2, u32, only when it was buffered), `TABLE_ID` (3, u8),
//!   `COOKIE` (4, four zero bytes then a u64; left out when the cookie is
//!   all ones), `REASON` (5, u8), `METADATA` (6, OXM fields without an
//!   `ofp_match` header: in_port and the packet's non-zero pipeline
//!   fields), `USERDATA` (7, `controller(userdata=...)`'s bytes, only
//!   when there are some) and `CONTINUATION` (8, `controller(pause)`'s
//!   frozen walk, opaque bytes: four of padding then nested properties,
//!   see the pipeline's `continuation`). Written in Open vSwitch's
//!   order (`ofputil_put_packet_in` and `ofputil_encode_nx_packet_in2` in
//!   lib/ofp-packet.c; the buffer id after FULL_LEN as Open vSwitch wrote
//!   it while it still buffered, in 2.6).
//! * `NXT_TLV_TABLE_MOD`, `_REQUEST` and `_REPLY` (24-26): the Geneve
//!   option table, [`super::tlv_table`].
//! * `NXT_RESUME` (28): NXT_PACKET_IN2's properties as the controller
//!   sends a paused packet back ([`PacketIn2::decode`] reads them); the
//!   agent resumes the walk.
//!
//! Another Nicira subtype is `OFPBRC_BAD_EXP_TYPE`, the code Open vSwitch
//! names `OFPBRC_BAD_SUBTYPE` (1,4). Decoding is as loose as Open
//! vSwitch's own reading of a packet-in (`ofputil_decode_packet_in`):
//! unknown properties and NXM fields are skipped; a property whose length
//! is below 4 or runs past the message (its padding included), a packet
//! property missing, or `FULL_LEN` below the frame's length is
//! `OFPBRC_BAD_LEN`.
//!
//! Checked against Open vSwitch 3.1: its definitions (nicira-ext.h,
//! ofp-msgs.h), `ovs-ofctl ofp-print` and `ovs-ofctl monitor` reading what
//! this module writes (`crates/ofp/tests/ovs_nxt.rs`), os-ken's
//! `NXTPacketIn2` and `NXTSetPacketInFormatMsg` (the interop test), and
//! the bytes ovs-vswitchd itself sends (`tests/e2e/test_ovs_tools.py`,
//! `test_packet_ins_as_open_vswitch_sends_them`).

use bytes::{BufMut, Bytes};

use crate::error::{BadRequestCode, ErrorCode, OfpError, Result};
use crate::msg::flow::{PacketIn, PacketInReason};
use crate::msg::simple::ExperimenterMsg;
use crate::msg::Message;
use crate::oxm::{Match, MatchEntry, Oxm, OxmField};
use crate::port::{port_no, NO_BUFFER};
use crate::wire::{pad8, pad_to_8, zeros, Reader};

use super::tlv_table as tlv;

pub use crate::action::{NXBRC_MUST_BE_ZERO, NX_VENDOR_ID};

/// exp_type of NXT_SET_PACKET_IN_FORMAT.
pub const NXT_SET_PACKET_IN_FORMAT: u32 = 16;
/// exp_type of NXT_PACKET_IN.
pub const NXT_PACKET_IN: u32 = 17;
/// exp_type of NXT_SET_CONTROLLER_ID.
pub const NXT_SET_CONTROLLER_ID: u32 = 20;
/// exp_type of NXT_RESUME.
pub const NXT_RESUME: u32 = 28;
/// exp_type of NXT_PACKET_IN2.
pub const NXT_PACKET_IN2: u32 = 30;
/// exp_type of NXT_CT_FLUSH_ZONE ([`super::ct_flush`]).
pub const NXT_CT_FLUSH_ZONE: u32 = 29;
/// exp_type of NXT_CT_FLUSH ([`super::ct_flush`]).
pub const NXT_CT_FLUSH: u32 = 32;

/// Open vSwitch's `NXR_NOT_SUPPORTED` (`OFPET_EXPERIMENTER`, Nicira,
/// exp_type 34): "this datapath doesn't support NXT_RESUME".
pub const NXR_NOT_SUPPORTED: ErrorCode = ErrorCode::Experimenter {
    exp_type: 34,
    experimenter: NX_VENDOR_ID,
};

/// `NXPINT_*`: the property types of NXT_PACKET_IN2.
pub mod prop {
    pub const PACKET: u16 = 0;
    pub const FULL_LEN: u16 = 1;
    pub const BUFFER_ID: u16 = 2;
    pub const TABLE_ID: u16 = 3;
    pub const COOKIE: u16 = 4;
    pub const REASON: u16 = 5;
    pub const METADATA: u16 = 6;
    pub const USERDATA: u16 = 7;
    pub const CONTINUATION: u16 = 8;
}

crate::macros::wire_enum! {
    /// The packet-in formats of NXT_SET_PACKET_IN_FORMAT (`NXPIF_*`),
    /// named as `ovs-ofctl -P` names them.
    pub enum PacketInFormat: u32 {
        Standard = 0 => "standard",
        Nxt = 1 => "nxt_packet_in",
        Nxt2 = 2 => "nxt_packet_in2",
    }
}

impl PacketInFormat {
    /// The format `ovs-ofctl -P` calls `s`, as exactly as it reads it
    /// (`openflow10` and `nxm` are its older names for the first two).
    pub fn parse(s: &str) -> Option<PacketInFormat> {
        Some(match s {
            "standard" | "openflow10" => PacketInFormat::Standard,
            "nxt_packet_in" | "nxm" => PacketInFormat::Nxt,
            "nxt_packet_in2" => PacketInFormat::Nxt2,
            _ => return None,
        })
    }
}

/// NXT_PACKET_IN: a packet-in with NXM metadata (format 1). `metadata`
/// holds the fields as sluice names them; they are written with their
/// NXM header ([`OxmField::nxm_header`]: `NXM_OF_IN_PORT` for
/// [`OxmField::NxmInPort`], `NXM_NX_REG0`, `OXM_OF_METADATA` where NXM has
/// none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NxPacketIn {
    pub buffer_id: u32,
    pub total_len: u16,
    pub reason: PacketInReason,
    pub table_id: u8,
    pub cookie: u64,
    pub metadata: Match,
    pub data: Bytes,
}

/// NXT_PACKET_IN2 (format 2). See the module's description for which
/// property each field is and when it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketIn2 {
    /// NXPINT_PACKET: the frame, or its first bytes.
    pub data: Bytes,
    /// NXPINT_FULL_LEN: the frame's whole length (written when it is not
    /// `data`'s).
    pub total_len: u32,
    /// NXPINT_BUFFER_ID ([`NO_BUFFER`]: not buffered, not written).
    pub buffer_id: u32,
    pub table_id: u8,
    /// NXPINT_COOKIE (all ones: none, not written).
    pub cookie: u64,
    pub reason: PacketInReason,
    /// NXPINT_METADATA: OXM fields.
    pub metadata: Match,
    /// NXPINT_USERDATA (empty: none, not written).
    pub userdata: Bytes,
    /// NXPINT_CONTINUATION's body as received (empty: none).
    pub continuation: Bytes,
}

/// A Nicira message sluice reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NxtMsg {
    SetPacketInFormat(PacketInFormat),
    SetControllerId(u16),
    PacketIn(NxPacketIn),
    PacketIn2(PacketIn2),
    /// NXT_RESUME, its body unread.
    Resume(Bytes),
    /// NXT_CT_FLUSH_ZONE: flush the zone's connections.
    CtFlushZone(u16),
    /// NXT_CT_FLUSH: flush the connections that match.
    CtFlush(super::ct_flush::CtFlush),
    /// NXT_TLV_TABLE_MOD ([`super::tlv_table`]).
    TlvTableMod(super::tlv_table::TlvTableMod),
    /// NXT_TLV_TABLE_REQUEST.
    TlvTableRequest,
    /// NXT_TLV_TABLE_REPLY.
    TlvTableReply(super::tlv_table::TlvTableReply),
}

fn bad_len(why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BAD_LEN, why)
}

fn experimenter(exp_type: u32, data: Vec<u8>) -> Message {
    Message::Experimenter(ExperimenterMsg {
        experimenter: NX_VENDOR_ID,
        exp_type,
        data: data.into(),
    })
}

impl NxtMsg {
    /// Reads a Nicira message from an experimenter message: None when it
    /// is not Nicira's, else the message or the error to answer.
    pub fn decode(e: &ExperimenterMsg) -> Option<Result<NxtMsg>> {
        if e.experimenter != NX_VENDOR_ID {
            return None;
        }
        Some(Self::decode_body(e.exp_type, &e.data))
    }

    fn decode_body(subtype: u32, data: &Bytes) -> Result<NxtMsg> {
        match subtype {
            NXT_SET_PACKET_IN_FORMAT => {
                let b: [u8; 4] = data[..]
                    .try_into()
                    .map_err(|_| bad_len("set_packet_in_format: body is not 4 bytes"))?;
                match PacketInFormat::from(u32::from_be_bytes(b)) {
                    PacketInFormat::Unknown(_) => Err(OfpError::new(
                        ErrorCode::BadRequest(BadRequestCode::Eperm),
                        "set_packet_in_format: no such format",
                    )),
                    f => Ok(NxtMsg::SetPacketInFormat(f)),
                }
            }
            NXT_SET_CONTROLLER_ID => {
                let b: [u8; 8] = data[..]
                    .try_into()
                    .map_err(|_| bad_len("set_controller_id: body is not 8 bytes"))?;
                if b[..6] != [0; 6] {
                    return Err(OfpError::new(
                        NXBRC_MUST_BE_ZERO,
                        "set_controller_id: padding not zero",
                    ));
                }
                Ok(NxtMsg::SetControllerId(u16::from_be_bytes([b[6], b[7]])))
            }
            NXT_PACKET_IN => NxPacketIn::decode(data).map(NxtMsg::PacketIn),
            NXT_PACKET_IN2 => PacketIn2::decode(data).map(NxtMsg::PacketIn2),
            NXT_RESUME => Ok(NxtMsg::Resume(data.clone())),
            NXT_CT_FLUSH_ZONE => super::ct_flush::decode_flush_zone(data).map(NxtMsg::CtFlushZone),
            NXT_CT_FLUSH => super::ct_flush::CtFlush::decode(data).map(NxtMsg::CtFlush),
            tlv::NXT_TLV_TABLE_MOD => tlv::TlvTableMod::decode(data).map(NxtMsg::TlvTableMod),
            tlv::NXT_TLV_TABLE_REQUEST => {
                tlv::decode_request(data).map(|_| NxtMsg::TlvTableRequest)
            }
            tlv::NXT_TLV_TABLE_REPLY => tlv::TlvTableReply::decode(data).map(NxtMsg::TlvTableReply),
            _ => Err(OfpError::new(
                ErrorCode::BadRequest(BadRequestCode::BadExpType),
                "unknown Nicira message subtype",
            )),
        }
    }

    /// The message, as Open vSwitch writes it.
    pub fn message(&self) -> Message {
        match self {
            NxtMsg::SetPacketInFormat(f) => experimenter(
                NXT_SET_PACKET_IN_FORMAT,
                u32::from(*f).to_be_bytes().to_vec(),
            ),
            NxtMsg::SetControllerId(id) => {
                let mut b = vec![0; 6];
                b.put_u16(*id);
                experimenter(NXT_SET_CONTROLLER_ID, b)
            }
            NxtMsg::PacketIn(p) => p.message(),
            NxtMsg::PacketIn2(p) => p.message(),
            NxtMsg::Resume(b) => experimenter(NXT_RESUME, b.to_vec()),
            NxtMsg::CtFlushZone(z) => {
                let mut b = vec![0; 6];
                b.put_u16(*z);
                experimenter(NXT_CT_FLUSH_ZONE, b)
            }
            NxtMsg::CtFlush(f) => experimenter(NXT_CT_FLUSH, f.encode()),
            NxtMsg::TlvTableMod(m) => {
                let mut b = Vec::new();
                m.encode(&mut b);
                experimenter(tlv::NXT_TLV_TABLE_MOD, b)
            }
            NxtMsg::TlvTableRequest => experimenter(tlv::NXT_TLV_TABLE_REQUEST, Vec::new()),
            NxtMsg::TlvTableReply(r) => {
                let mut b = Vec::new();
                r.encode(&mut b);
                experimenter(tlv::NXT_TLV_TABLE_REPLY, b)
            }
        }
    }
}

/// Appends one property: header, `value`, zero padding to 8.
fn put_prop(out: &mut Vec<u8>, ty: u16, value: &[u8]) {
    let start = out.len();
    out.put_u16(ty);
    out.put_u16((4 + value.len()).min(u16::MAX as usize) as u16);
    out.extend_from_slice(value);
    pad_to_8(out, start);
}

/// Appends the NXM form of `o` (header from [`OxmField::nxm_header`]);
/// nothing for a field that has none.
fn put_nxm(out: &mut Vec<u8>, o: &Oxm) {
    let (Some(h), Some(info)) = (o.field.nxm_header(), o.field.info()) else {
        return;
    };
    let w = info.width as usize;
    let h = match o.mask {
        Some(_) => (h & !0xff) | 0x100 | (2 * w as u32),
        None => h,
    };
    out.put_u32(h);
    out.extend_from_slice(&o.value.to_be_bytes()[16 - w..]);
    if let Some(m) = o.mask {
        out.extend_from_slice(&m.to_be_bytes()[16 - w..]);
    }
}

/// Reads NXM fields, skipping the ones sluice has no name for (as Open
/// vSwitch's loose reading of a packet-in does).
fn decode_nxm(r: &mut Reader<'_>) -> Result<Match> {
    let mut entries = Vec::new();
    while !r.is_empty() {
        let h = r.u32()?;
        let body = r.slice((h & 0xff) as usize)?;
        let Some(f) = OxmField::from_nxm_header_any_len(h) else {
            continue;
        };
        let Some(info) = f.info() else { continue };
        let w = info.width as usize;
        let masked = h & 0x100 != 0;
        if body.len() != w << masked as usize {
            return Err(OfpError::new(
                ErrorCode::MATCH_BAD_LEN,
                "NXM length does not fit its field",
            ));
        }
        let be = |b: &[u8]| b.iter().fold(0u128, |v, &x| (v << 8) | x as u128);
        entries.push(MatchEntry::Basic(Oxm {
            field: f,
            value: be(&body[..w]),
            mask: masked.then(|| be(&body[w..])),
        }));
    }
    Ok(Match { entries })
}

impl NxPacketIn {
    /// NXT_PACKET_IN carrying what `p` carries: its OXM fields written as
    /// NXM (in_port in the 16-bit form, `NXM_OF_IN_PORT`).
    pub fn from_packet_in(p: &PacketIn) -> NxPacketIn {
        let entries = p
            .match_
            .entries
            .iter()
            .map(|e| match e {
                MatchEntry::Basic(o) if o.field == OxmField::InPort => {
                    MatchEntry::Basic(Oxm::exact(
                        OxmField::NxmInPort,
                        crate::resubmit::port_to_u16(o.value as u32) as u128,
                    ))
                }
                e => e.clone(),
            })
            .collect();
        NxPacketIn {
            buffer_id: p.buffer_id,
            total_len: p.total_len,
            reason: p.reason,
            table_id: p.table_id,
            cookie: p.cookie,
            metadata: Match { entries },
            data: p.data.clone(),
        }
    }

    /// The standard packet-in this one says (in_port as a 32-bit port).
    pub fn to_packet_in(&self) -> PacketIn {
        PacketIn {
            buffer_id: self.buffer_id,
            total_len: self.total_len,
            reason: self.reason,
            table_id: self.table_id,
            cookie: self.cookie,
            match_: in_port_as_oxm(&self.metadata),
            data: self.data.clone(),
        }
    }

    /// The message.
    pub fn message(&self) -> Message {
        let mut b = Vec::with_capacity(64 + self.data.len());
        b.put_u32(self.buffer_id);
        b.put_u16(self.total_len);
        b.put_u8(self.reason.value());
        b.put_u8(self.table_id);
        b.put_u64(self.cookie);
        let at = b.len();
        b.put_u16(0);
        zeros(&mut b, 6);
        let start = b.len();
        for e in &self.metadata.entries {
            match e {
                MatchEntry::Basic(o) => put_nxm(&mut b, o),
                MatchEntry::Other(_) => e.encode(&mut b),
            }
        }
        let match_len = (b.len() - start) as u16;
        b[at..at + 2].copy_from_slice(&match_len.to_be_bytes());
        pad_to_8(&mut b, start);
        zeros(&mut b, 2);
        b.extend_from_slice(&self.data);
        experimenter(NXT_PACKET_IN, b)
    }

    fn decode(data: &Bytes) -> Result<NxPacketIn> {
        let mut r = Reader::new(data, ErrorCode::BAD_LEN);
        let buffer_id = r.u32()?;
        let total_len = r.u16()?;
        let reason = PacketInReason::from(r.u8()?);
        let table_id = r.u8()?;
        let cookie = r.u64()?;
        let match_len = r.u16()? as usize;
        r.skip(6)?;
        let mut m = r.sub(match_len, ErrorCode::MATCH_BAD_LEN)?;
        let metadata = decode_nxm(&mut m)?;
        r.skip(pad8(match_len) - match_len + 2)?;
        Ok(NxPacketIn {
            buffer_id,
            total_len,
            reason,
            table_id,
            cookie,
            metadata,
            data: r.rest(),
        })
    }
}

/// `m` with a 16-bit `NXM_OF_IN_PORT` made the OXM `in_port`.
fn in_port_as_oxm(m: &Match) -> Match {
    let entries = m
        .entries
        .iter()
        .map(|e| match e {
            MatchEntry::Basic(o) if o.field == OxmField::NxmInPort => MatchEntry::Basic(
                Oxm::exact(OxmField::InPort, port_from_u16(o.value as u16) as u128),
            ),
            e => e.clone(),
        })
        .collect();
    Match { entries }
}

/// A 16-bit Open vSwitch port number as an OpenFlow 1.3 one.
fn port_from_u16(p: u16) -> u32 {
    if p >= 0xff00 {
        (port_no::MAX & 0xffff_0000) | p as u32
    } else {
        p as u32
    }
}

impl PacketIn2 {
    /// NXT_PACKET_IN2 carrying what `p` carries, and `userdata`.
    pub fn from_packet_in(p: &PacketIn, userdata: Bytes) -> PacketIn2 {
        PacketIn2 {
            data: p.data.clone(),
            total_len: p.total_len as u32,
            buffer_id: p.buffer_id,
            table_id: p.table_id,
            cookie: p.cookie,
            reason: p.reason,
            metadata: p.match_.clone(),
            userdata,
            continuation: Bytes::new(),
        }
    }

    /// The standard packet-in this one says (without its userdata).
    pub fn to_packet_in(&self) -> PacketIn {
        PacketIn {
            buffer_id: self.buffer_id,
            total_len: self.total_len.min(u16::MAX as u32) as u16,
            reason: self.reason,
            table_id: self.table_id,
            cookie: self.cookie,
            match_: self.metadata.clone(),
            data: self.data.clone(),
        }
    }

    /// The bytes of one of these messages beyond `data` and `userdata`'s
    /// own, at most (headers, the other properties, padding): what a
    /// sender keeps free when it cuts a frame to fit 65 535 bytes.
    pub fn overhead(metadata: &Match) -> usize {
        let fields: usize = metadata.entries.iter().map(MatchEntry::wire_len).sum();
        // Header 16; PACKET 4 + 7 padding; FULL_LEN, BUFFER_ID, TABLE_ID,
        // REASON 8 each; COOKIE 16; METADATA 4 + fields + 7; USERDATA
        // 4 + 7.
        16 + 11 + 32 + 16 + pad8(4 + fields) + 11
    }

    /// The message, as Open vSwitch writes it.
    pub fn message(&self) -> Message {
        let mut b = Vec::with_capacity(128 + self.data.len() + self.userdata.len());
        put_prop(&mut b, prop::PACKET, &self.data);
        if self.total_len as usize != self.data.len() {
            put_prop(&mut b, prop::FULL_LEN, &self.total_len.to_be_bytes());
        }
        if self.buffer_id != NO_BUFFER {
            put_prop(&mut b, prop::BUFFER_ID, &self.buffer_id.to_be_bytes());
        }
        put_prop(&mut b, prop::TABLE_ID, &[self.table_id]);
        if self.cookie != u64::MAX {
            let mut v = [0u8; 12];
            v[4..].copy_from_slice(&self.cookie.to_be_bytes());
            put_prop(&mut b, prop::COOKIE, &v);
        }
        put_prop(&mut b, prop::REASON, &[self.reason.value()]);
        let mut fields = Vec::with_capacity(64);
        for e in &self.metadata.entries {
            e.encode(&mut fields);
        }
        put_prop(&mut b, prop::METADATA, &fields);
        if !self.continuation.is_empty() {
            put_prop(&mut b, prop::CONTINUATION, &self.continuation);
        }
        if !self.userdata.is_empty() {
            put_prop(&mut b, prop::USERDATA, &self.userdata);
        }
        experimenter(NXT_PACKET_IN2, b)
    }

    pub fn decode(data: &Bytes) -> Result<PacketIn2> {
        let mut r = Reader::new(data, ErrorCode::BAD_LEN);
        let mut p = PacketIn2 {
            data: Bytes::new(),
            total_len: 0,
            buffer_id: NO_BUFFER,
            table_id: 0,
            cookie: u64::MAX,
            reason: PacketInReason::NoMatch,
            metadata: Match::new(),
            userdata: Bytes::new(),
            continuation: Bytes::new(),
        };
        let u32_of = |v: &Bytes| -> Result<u32> {
            let b: [u8; 4] = v[..]
                .try_into()
                .map_err(|_| bad_len("packet_in2: a 32-bit property is not 4 bytes"))?;
            Ok(u32::from_be_bytes(b))
        };
        let u8_of = |v: &Bytes| -> Result<u8> {
            v.first()
                .copied()
                .ok_or(bad_len("packet_in2: an 8-bit property is empty"))
        };
        while !r.is_empty() {
            if r.remaining() < 4 {
                return Err(bad_len("packet_in2: a property shorter than its header"));
            }
            let ty = r.u16()?;
            let len = r.u16()? as usize;
            if len < 4 || pad8(len) - 4 > r.remaining() {
                return Err(bad_len("packet_in2: a property's length is wrong"));
            }
            let v = r.bytes(len - 4)?;
            r.skip(pad8(len) - len)?;
            match ty {
                prop::PACKET => p.data = v,
                prop::FULL_LEN => p.total_len = u32_of(&v)?,
                prop::BUFFER_ID => p.buffer_id = u32_of(&v)?,
                prop::TABLE_ID => p.table_id = u8_of(&v)?,
                prop::COOKIE => {
                    let b: [u8; 12] = v[..]
                        .try_into()
                        .map_err(|_| bad_len("packet_in2: the cookie property is not 16 bytes"))?;
                    p.cookie = u64::from_be_bytes(b[4..].try_into().unwrap_or_default());
                }
                prop::REASON => p.reason = PacketInReason::from(u8_of(&v)?),
                prop::METADATA => {
                    let mut m = Reader::new(&v, ErrorCode::MATCH_BAD_LEN);
                    let mut entries = Vec::new();
                    while !m.is_empty() {
                        entries.push(MatchEntry::decode(&mut m, ErrorCode::MATCH_BAD_LEN)?);
                    }
                    p.metadata = Match { entries };
                }
                prop::USERDATA => p.userdata = v,
                prop::CONTINUATION => p.continuation = v,
                _ => {}
            }
        }
        if p.data.is_empty() {
            return Err(bad_len("packet_in2 without a packet"));
        }
        if p.total_len == 0 {
            p.total_len = p.data.len() as u32;
        } else if (p.total_len as usize) < p.data.len() {
            return Err(bad_len("packet_in2: full_len below the packet's length"));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn decoded(wire: &[u8]) -> Result<NxtMsg> {
        let (_, m) = Message::decode(&Bytes::from(wire.to_vec())).unwrap();
        let Message::Experimenter(e) = m else {
            panic!("not an experimenter message")
        };
        NxtMsg::decode(&e).expect("a Nicira message")
    }

    /// The bytes `ovs-ofctl -O OpenFlow13 monitor -P nxt_packet_in2`
    /// sends, and ovs-ofctl's NXT_SET_CONTROLLER_ID.
    #[test]
    fn settings_as_open_vswitch_writes_them() {
        let spif = hex("04 04 0014 00000002 00002320 00000010 00000002");
        let m = NxtMsg::SetPacketInFormat(PacketInFormat::Nxt2);
        assert_eq!(decoded(&spif).unwrap(), m);
        assert_eq!(m.message().to_bytes(2), spif);
        let sci = hex("04 04 0018 00000007 00002320 00000014 000000000000 0102");
        let m = NxtMsg::SetControllerId(0x102);
        assert_eq!(decoded(&sci).unwrap(), m);
        assert_eq!(m.message().to_bytes(7), sci);
    }

    #[test]
    fn bad_settings_get_open_vswitchs_errors() {
        let code = |w: &str| decoded(&hex(w)).unwrap_err().code;
        assert_eq!(
            code("04 04 0014 00000002 00002320 00000010 00000003"),
            ErrorCode::BadRequest(BadRequestCode::Eperm)
        );
        assert_eq!(
            code("04 04 0018 00000002 00002320 00000010 00000002 00000000"),
            ErrorCode::BAD_LEN
        );
        assert_eq!(
            code("04 04 0018 00000007 00002320 00000014 000000000100 0102"),
            NXBRC_MUST_BE_ZERO
        );
        assert_eq!(
            code("04 04 0014 00000007 00002320 00000014 00000000"),
            ErrorCode::BAD_LEN
        );
        assert_eq!(
            code("04 04 0010 00000007 00002320 00000063"),
            ErrorCode::BadRequest(BadRequestCode::BadExpType)
        );
        let other = ExperimenterMsg {
            experimenter: 0x1234,
            exp_type: 16,
            data: Bytes::new(),
        };
        assert!(NxtMsg::decode(&other).is_none());
    }

    fn sample() -> PacketIn {
        PacketIn {
            buffer_id: NO_BUFFER,
            total_len: 6,
            reason: PacketInReason::Action,
            table_id: 3,
            cookie: 0x77,
            match_: Match::new()
                .with(Oxm::exact(OxmField::InPort, 1))
                .with(Oxm::exact(OxmField::Reg(0), 5))
                .with(Oxm::exact(OxmField::Metadata, 0xab00)),
            data: Bytes::from_static(&[1, 2, 3, 4, 5, 6]),
        }
    }

    /// Property by property, as `ofputil_encode_nx_packet_in2` lays them
    /// out: no FULL_LEN or BUFFER_ID for a whole unbuffered frame, the
    /// cookie after four zero bytes, OXM metadata without a match header,
    /// userdata last.
    #[test]
    fn packet_in2_is_laid_out_as_open_vswitch_lays_it_out() {
        let p = PacketIn2::from_packet_in(&sample(), Bytes::from_static(&[1, 2, 3]));
        let wire = p.message().to_bytes(0);
        let want = hex("04 04 0068 00000000 00002320 0000001e
             0000 000a 010203040506 0000 00000000
             0003 0005 03 000000
             0004 0010 00000000 0000000000000077
             0005 0005 01 000000
             0006 0020 80000004 00000001 00010004 00000005 80000408 000000000000ab00
             0007 0007 010203 00");
        assert_eq!(wire, want);
        let NxtMsg::PacketIn2(back) = decoded(&wire).unwrap() else {
            panic!()
        };
        assert_eq!(back, p);
        assert_eq!(back.to_packet_in(), sample());
    }

    #[test]
    fn a_cut_buffered_packet_in2_says_so_and_no_cookie_is_left_out() {
        let mut pin = sample();
        pin.total_len = 1500;
        pin.buffer_id = 9;
        pin.cookie = u64::MAX;
        pin.match_ = Match::new().with(Oxm::exact(OxmField::InPort, 2));
        let p = PacketIn2::from_packet_in(&pin, Bytes::new());
        let wire = p.message().to_bytes(0);
        let want = hex("04 04 0050 00000000 00002320 0000001e
             0000 000a 010203040506 0000 00000000
             0001 0008 000005dc
             0002 0008 00000009
             0003 0005 03 000000
             0005 0005 01 000000
             0006 000c 80000004 00000002 00000000");
        assert_eq!(wire, want);
        let NxtMsg::PacketIn2(back) = decoded(&wire).unwrap() else {
            panic!()
        };
        assert_eq!(back, p);
        assert!(p.message().to_bytes(0).len() <= PacketIn2::overhead(&pin.match_) + 6);
    }

    #[test]
    fn malformed_packet_in2_is_refused() {
        let code = |body: &str| {
            let mut w = hex("04 04 0000 00000000 00002320 0000001e");
            w.extend(hex(body));
            let n = w.len() as u16;
            w[2..4].copy_from_slice(&n.to_be_bytes());
            decoded(&w).map(|_| ()).map_err(|e| e.code)
        };
        // No packet; a length below 4; padding missing; full_len too small;
        // a cookie of the wrong size.
        assert_eq!(code("0003 0005 03 000000"), Err(ErrorCode::BAD_LEN));
        assert_eq!(code("0000 0002 00000000"), Err(ErrorCode::BAD_LEN));
        assert_eq!(code("0000 0006 0102"), Err(ErrorCode::BAD_LEN));
        assert_eq!(
            code("0000 0006 0102 0000 0001 0008 00000001"),
            Err(ErrorCode::BAD_LEN)
        );
        assert_eq!(
            code("0000 0006 0102 0000 0004 000c 0000000000000077"),
            Err(ErrorCode::BAD_LEN)
        );
        // Unknown properties are skipped.
        assert_eq!(code("0000 0006 0102 0000 0063 0005 01 000000"), Ok(()));
    }

    /// NXT_PACKET_IN: NXM_OF_IN_PORT (16 bits), registers, OXM_OF_METADATA,
    /// padded to 8, then two zero bytes and the frame.
    #[test]
    fn nxt_packet_in_writes_its_metadata_as_nxm() {
        let p = NxPacketIn::from_packet_in(&sample());
        let wire = p.message().to_bytes(0);
        let want = hex("04 04 0050 00000000 00002320 00000011
             ffffffff 0006 01 03 0000000000000077 001a 000000000000
             00000002 0001 00010004 00000005 80000408 000000000000ab00 000000000000
             0000 010203040506");
        assert_eq!(wire, want);
        let NxtMsg::PacketIn(back) = decoded(&wire).unwrap() else {
            panic!()
        };
        assert_eq!(back, p);
        assert_eq!(back.to_packet_in(), sample());
        // LOCAL in 16 bits.
        let mut local = sample();
        local.match_ = Match::new().with(Oxm::exact(OxmField::InPort, port_no::LOCAL as u128));
        let p = NxPacketIn::from_packet_in(&local);
        assert_eq!(
            p.metadata.get(OxmField::NxmInPort).map(|o| o.value),
            Some(0xfffe)
        );
        assert_eq!(p.to_packet_in(), local);
    }

    #[test]
    fn resume_is_read_as_bytes() {
        let w = hex("04 04 0018 00000000 00002320 0000001c 0000 0006 0102 0000");
        assert!(matches!(decoded(&w).unwrap(), NxtMsg::Resume(b) if b.len() == 8));
    }
}
