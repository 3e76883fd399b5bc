//! Every OpenFlow 1.3 message as one [`Message`] enum, with encode and decode.
//!
//! `Message::decode` takes one whole frame (as cut by [`crate::Framer`]) and
//! returns the message or the [`OfpError`] the switch must answer with.
//! Payloads (packet data, echo data, experimenter data) are slices of the
//! frame's [`Bytes`], never copies.

pub mod bundle;
pub mod ct_flush;
pub mod flow;
pub mod group;
pub mod meter;
pub mod multipart;
pub mod nx_flow;
pub mod nxt;
pub mod selection;
pub mod simple;
pub mod sluice;
pub mod table_features;
pub mod tlv_table;

use bytes::{BufMut, Bytes};

use crate::error::{BadRequestCode, ErrorCode, OfpError, Result};
use crate::header::{Header, MsgType, HEADER_LEN, MAX_MSG_LEN, OFP_VERSION};
use crate::wire::{patch_len, Reader};

use flow::{FlowMod, FlowRemoved, PacketIn, PacketOut};
use group::GroupMod;
use meter::MeterMod;
use multipart::{MultipartReply, MultipartRequest};
use simple::{
    AsyncConfig, ErrorMsg, ExperimenterMsg, FeaturesReply, Hello, PortMod, PortStatus,
    QueueGetConfigReply, Role, SwitchConfig, TableMod,
};

/// One OpenFlow 1.3 message (the header's xid travels beside it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Hello(Hello),
    Error(ErrorMsg),
    EchoRequest(Bytes),
    EchoReply(Bytes),
    Experimenter(ExperimenterMsg),
    FeaturesRequest,
    FeaturesReply(FeaturesReply),
    GetConfigRequest,
    GetConfigReply(SwitchConfig),
    SetConfig(SwitchConfig),
    PacketIn(PacketIn),
    FlowRemoved(FlowRemoved),
    PortStatus(PortStatus),
    PacketOut(PacketOut),
    FlowMod(FlowMod),
    GroupMod(GroupMod),
    PortMod(PortMod),
    TableMod(TableMod),
    MultipartRequest(MultipartRequest),
    MultipartReply(MultipartReply),
    BarrierRequest,
    BarrierReply,
    QueueGetConfigRequest { port: u32 },
    QueueGetConfigReply(QueueGetConfigReply),
    RoleRequest(Role),
    RoleReply(Role),
    GetAsyncRequest,
    GetAsyncReply(AsyncConfig),
    SetAsync(AsyncConfig),
    MeterMod(MeterMod),
}

/// A message that does not fit OpenFlow's 16-bit length field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLong {
    /// The length it would have had, bytes.
    pub len: usize,
}

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes, more than an OpenFlow message can hold (65535)",
            self.len
        )
    }
}

impl std::error::Error for TooLong {}

impl Message {
    /// The message's `ofp_type`.
    pub fn msg_type(&self) -> MsgType {
        use Message as M;
        match self {
            M::Hello(_) => MsgType::Hello,
            M::Error(_) => MsgType::Error,
            M::EchoRequest(_) => MsgType::EchoRequest,
            M::EchoReply(_) => MsgType::EchoReply,
            M::Experimenter(_) => MsgType::Experimenter,
            M::FeaturesRequest => MsgType::FeaturesRequest,
            M::FeaturesReply(_) => MsgType::FeaturesReply,
            M::GetConfigRequest => MsgType::GetConfigRequest,
            M::GetConfigReply(_) => MsgType::GetConfigReply,
            M::SetConfig(_) => MsgType::SetConfig,
            M::PacketIn(_) => MsgType::PacketIn,
            M::FlowRemoved(_) => MsgType::FlowRemoved,
            M::PortStatus(_) => MsgType::PortStatus,
            M::PacketOut(_) => MsgType::PacketOut,
            M::FlowMod(_) => MsgType::FlowMod,
            M::GroupMod(_) => MsgType::GroupMod,
            M::PortMod(_) => MsgType::PortMod,
            M::TableMod(_) => MsgType::TableMod,
            M::MultipartRequest(_) => MsgType::MultipartRequest,
            M::MultipartReply(_) => MsgType::MultipartReply,
            M::BarrierRequest => MsgType::BarrierRequest,
            M::BarrierReply => MsgType::BarrierReply,
            M::QueueGetConfigRequest { .. } => MsgType::QueueGetConfigRequest,
            M::QueueGetConfigReply(_) => MsgType::QueueGetConfigReply,
            M::RoleRequest(_) => MsgType::RoleRequest,
            M::RoleReply(_) => MsgType::RoleReply,
            M::GetAsyncRequest => MsgType::GetAsyncRequest,
            M::GetAsyncReply(_) => MsgType::GetAsyncReply,
            M::SetAsync(_) => MsgType::SetAsync,
            M::MeterMod(_) => MsgType::MeterMod,
        }
    }

    /// Appends the whole message to `out` if it fits OpenFlow's 16-bit
    /// length field; otherwise leaves `out` as it was and says how long the
    /// message would have been. Everything a switch sends goes through
    /// this, so no message with a clamped length (which would desynchronise
    /// the peer's stream) is ever emitted.
    pub fn try_encode(&self, xid: u32, out: &mut Vec<u8>) -> std::result::Result<(), TooLong> {
        let start = out.len();
        self.encode(xid, out);
        finish(out, start)
    }

    /// Appends the whole message (header included) to `out`. A message
    /// longer than 65 535 bytes gets a saturated length field: use
    /// [`Message::try_encode`] where that can happen.
    pub fn encode(&self, xid: u32, out: &mut Vec<u8>) {
        let start = out.len();
        let version = match self {
            Message::Hello(h) => h.version,
            _ => OFP_VERSION,
        };
        out.put_u8(version);
        out.put_u8(self.msg_type().value());
        out.put_u16(0);
        out.put_u32(xid);
        use Message as M;
        match self {
            M::Hello(h) => h.encode(out),
            M::Error(e) => e.encode(out),
            M::EchoRequest(d) | M::EchoReply(d) => out.extend_from_slice(d),
            M::Experimenter(e) => e.encode(out),
            M::FeaturesRequest
            | M::GetConfigRequest
            | M::BarrierRequest
            | M::BarrierReply
            | M::GetAsyncRequest => {}
            M::FeaturesReply(f) => f.encode(out),
            M::GetConfigReply(c) | M::SetConfig(c) => c.encode(out),
            M::PacketIn(p) => p.encode(out),
            M::FlowRemoved(f) => f.encode(out),
            M::PortStatus(p) => p.encode(out),
            M::PacketOut(p) => p.encode(out),
            M::FlowMod(f) => f.encode(out),
            M::GroupMod(g) => g.encode(out),
            M::PortMod(p) => p.encode(out),
            M::TableMod(t) => t.encode(out),
            M::MultipartRequest(m) => m.encode(out),
            M::MultipartReply(m) => m.encode(out),
            M::QueueGetConfigRequest { port } => {
                out.put_u32(*port);
                out.put_u32(0);
            }
            M::QueueGetConfigReply(q) => q.encode(out),
            M::RoleRequest(r) | M::RoleReply(r) => r.encode(out),
            M::GetAsyncReply(a) | M::SetAsync(a) => a.encode(out),
            M::MeterMod(m) => m.encode(out),
        }
        patch_len(out, start + 2, start);
    }

    /// Checks the parts of the message that can be judged without the
    /// switch's state: every match ([`crate::Match::validate`]) and every
    /// action ([`crate::Action::validate`]) it carries, with the spec's codes.
    pub fn validate(&self) -> Result<()> {
        fn actions(v: &[crate::Action]) -> Result<()> {
            v.iter().try_for_each(crate::Action::validate)
        }
        match self {
            Message::FlowMod(f) => {
                f.match_.validate()?;
                f.match_.check_ct_tuple_family()?;
                f.instructions.iter().try_for_each(|i| match i {
                    crate::Instruction::ApplyActions(a) => actions(a),
                    crate::Instruction::WriteActions(a) => {
                        if !a.iter().all(crate::Action::allowed_in_set) {
                            return Err(crate::OfpError::new(
                                crate::ErrorCode::BadAction(crate::error::BadActionCode::BadType),
                                "action not allowed in an action set (write_actions)",
                            ));
                        }
                        actions(a)
                    }
                    _ => Ok(()),
                })?;
                crate::conjunction::check_flow(&f.instructions).map(|_| ())
            }
            Message::PacketOut(p) => {
                actions(&p.actions)?;
                crate::conjunction::refuse_outside_flows(&p.actions)
            }
            Message::GroupMod(g) => g.buckets.iter().try_for_each(|b| {
                actions(&b.actions)?;
                crate::conjunction::refuse_outside_flows(&b.actions)
            }),
            Message::MultipartRequest(MultipartRequest {
                body:
                    multipart::MultipartRequestBody::Flow(f)
                    | multipart::MultipartRequestBody::Aggregate(f),
                ..
            }) => f.match_.validate(),
            _ => Ok(()),
        }
    }

    /// Appends the message as OpenFlow `version` writes it: one whole
    /// message, or, in 1.0, 1.2, 1.4 and 1.5, for a multipart reply too
    /// long for that version's message, several, each flagged
    /// `OFPMPF_REPLY_MORE` but the last (as the original's flag says for
    /// the last). In 1.3 the message is written as it is (the agent makes
    /// its replies fit: [`Message::try_encode`]). What the version cannot
    /// express is left out or approximated as Open vSwitch does (the
    /// version's module says what). On error `out` is as it was.
    ///
    /// OpenFlow 1.0 ([`crate::of10`]): a STATS_REPLY too long for one
    /// message is split between its entries into several, each flagged
    /// `OFPSF_REPLY_MORE` (1, as 1.3's flag) but the last, which carries
    /// the original's flags; [`TooLong`] only when one indivisible part
    /// (one entry, or a message that is not a list, such as a
    /// FEATURES_REPLY with its ports) cannot fit. A message 1.0 has no
    /// form for appends nothing and succeeds.
    pub fn encode_as(
        &self,
        version: crate::Version,
        xid: u32,
        out: &mut Vec<u8>,
    ) -> std::result::Result<(), TooLong> {
        match version {
            crate::Version::V1_3 => self.try_encode(xid, out),
            crate::Version::V1_0 => crate::of10::encode(self, xid, out),
            v => crate::of1x::encode(self, v, xid, out),
        }
    }

    /// Decodes one whole frame of OpenFlow `version` (the connection's):
    /// a header of another version is `OFPBRC_BAD_VERSION`, except HELLO.
    /// The result is the internal (1.3-shaped) message; what the version
    /// says that the internal form cannot hold is refused with the error
    /// Open vSwitch gives.
    pub fn decode_as(frame: &Bytes, version: crate::Version) -> Result<(Header, Message)> {
        match version {
            crate::Version::V1_3 => Message::decode(frame),
            crate::Version::V1_0 => crate::of10::decode(frame),
            v => crate::of1x::decode(frame, v),
        }
    }

    /// The whole message as a new buffer, if it fits 65 535 bytes.
    pub fn try_to_bytes(&self, xid: u32) -> std::result::Result<Vec<u8>, TooLong> {
        let mut v = Vec::with_capacity(64);
        self.try_encode(xid, &mut v)?;
        Ok(v)
    }

    /// The whole message as a new buffer.
    pub fn to_bytes(&self, xid: u32) -> Vec<u8> {
        let mut v = Vec::with_capacity(64);
        self.encode(xid, &mut v);
        v
    }

    /// Decodes one whole frame: `frame` must hold exactly the header's length
    /// (the framer guarantees it). Returns the header and the message, or the
    /// error to answer with.
    ///
    /// Version: anything but 1.3 is `OFPBRC_BAD_VERSION`, except HELLO, which
    /// carries the peer's highest version by design. Unknown types are
    /// `OFPBRC_BAD_TYPE`; structures too short, too long or with inner lengths
    /// that do not add up are `OFPBRC_BAD_LEN` or the specific `*_BAD_LEN` of
    /// the inner structure.
    pub fn decode(frame: &Bytes) -> Result<(Header, Message)> {
        let h = check_frame(frame, OFP_VERSION)?;
        let mut r = Reader::new(frame, ErrorCode::BAD_LEN);
        r.skip(HEADER_LEN)?;
        let m = decode_body(&h, &mut r)?;
        r.finish(ErrorCode::BAD_LEN)?;
        Ok((h, m))
    }
}

/// Ends the message begun at `start` in `out`: its length field set, or,
/// when it does not fit OpenFlow's 16 bits, `out` as it was and the
/// length it would have had.
pub(crate) fn finish(out: &mut Vec<u8>, start: usize) -> std::result::Result<(), TooLong> {
    let len = out.len() - start;
    if len > MAX_MSG_LEN {
        out.truncate(start);
        return Err(TooLong { len });
    }
    patch_len(out, start + 2, start);
    Ok(())
}

/// The header of a whole frame of wire version `version`: its length
/// must be the frame's (`OFPBRC_BAD_LEN`), its version `version`
/// (`OFPBRC_BAD_VERSION`) unless it is a HELLO, which carries the
/// sender's highest version by design. The type byte is read as 1.3
/// numbers them (OpenFlow 1.0's differ from STATS_REQUEST on: its module
/// renumbers).
pub(crate) fn check_frame(frame: &Bytes, version: u8) -> Result<Header> {
    let h =
        Header::parse(frame).ok_or(OfpError::new(ErrorCode::BAD_LEN, "shorter than a header"))?;
    if h.length as usize != frame.len() {
        return Err(OfpError::new(
            ErrorCode::BAD_LEN,
            "frame length differs from header length",
        ));
    }
    if h.version != version && h.msg_type != MsgType::Hello {
        return Err(OfpError::new(
            ErrorCode::BadRequest(BadRequestCode::BadVersion),
            "version is not the connection's",
        ));
    }
    Ok(h)
}

/// Decodes the body after the header as OpenFlow 1.3 lays it out (the
/// other versions' modules call it for the messages they share).
pub(crate) fn decode_body(h: &Header, r: &mut Reader<'_>) -> Result<Message> {
    use Message as M;
    Ok(match h.msg_type {
        MsgType::Hello => M::Hello(Hello::decode(h.version, r)?),
        MsgType::Error => M::Error(ErrorMsg::decode(r)?),
        MsgType::EchoRequest => M::EchoRequest(r.rest()),
        MsgType::EchoReply => M::EchoReply(r.rest()),
        MsgType::Experimenter => M::Experimenter(ExperimenterMsg::decode(r)?),
        MsgType::FeaturesRequest => M::FeaturesRequest,
        MsgType::FeaturesReply => M::FeaturesReply(FeaturesReply::decode(r)?),
        MsgType::GetConfigRequest => M::GetConfigRequest,
        MsgType::GetConfigReply => M::GetConfigReply(SwitchConfig::decode(r)?),
        MsgType::SetConfig => M::SetConfig(SwitchConfig::decode(r)?),
        MsgType::PacketIn => M::PacketIn(PacketIn::decode(r)?),
        MsgType::FlowRemoved => M::FlowRemoved(FlowRemoved::decode(r)?),
        MsgType::PortStatus => M::PortStatus(PortStatus::decode(r)?),
        MsgType::PacketOut => M::PacketOut(PacketOut::decode(r)?),
        MsgType::FlowMod => M::FlowMod(FlowMod::decode(r)?),
        MsgType::GroupMod => M::GroupMod(GroupMod::decode(r)?),
        MsgType::PortMod => M::PortMod(PortMod::decode(r)?),
        MsgType::TableMod => M::TableMod(TableMod::decode(r)?),
        MsgType::MultipartRequest => M::MultipartRequest(MultipartRequest::decode(r)?),
        MsgType::MultipartReply => M::MultipartReply(MultipartReply::decode(r)?),
        MsgType::BarrierRequest => M::BarrierRequest,
        MsgType::BarrierReply => M::BarrierReply,
        MsgType::QueueGetConfigRequest => {
            let port = r.u32()?;
            r.skip(4)?;
            M::QueueGetConfigRequest { port }
        }
        MsgType::QueueGetConfigReply => M::QueueGetConfigReply(QueueGetConfigReply::decode(r)?),
        MsgType::RoleRequest => M::RoleRequest(Role::decode(r)?),
        MsgType::RoleReply => M::RoleReply(Role::decode(r)?),
        MsgType::GetAsyncRequest => M::GetAsyncRequest,
        MsgType::GetAsyncReply => M::GetAsyncReply(AsyncConfig::decode(r)?),
        MsgType::SetAsync => M::SetAsync(AsyncConfig::decode(r)?),
        MsgType::MeterMod => M::MeterMod(MeterMod::decode(r)?),
        MsgType::Unknown(_) => {
            return Err(OfpError::new(
                ErrorCode::BadRequest(BadRequestCode::BadType),
                "unknown message type",
            ))
        }
    })
}
