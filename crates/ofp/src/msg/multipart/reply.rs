//! MULTIPART_REPLY: the header, then a body chosen by the multipart type.
//!
//! Contract: a list body (flows, tables, ports, queues, groups, meters,
//! table features, port descriptions) is its entries back to back, decoded
//! until the message ends; DESC, AGGREGATE, GROUP_FEATURES and
//! METER_FEATURES are one record; EXPERIMENTER is the experimenter
//! message. Decoding refuses an unknown type (`OFPBRC_BAD_MULTIPART`) and
//! bytes after the body (`OFPBRC_BAD_LEN`).

use super::descriptions::{Desc, GroupDesc, GroupFeatures, MeterConfig, MeterFeatures};
use super::stats::{
    AggregateStats, FlowStats, GroupStats, MeterStats, PortStats, QueueStats, TableStats,
};
use super::{decode_header, decode_list, encode_header, unknown_type, MultipartType};
use crate::error::{ErrorCode, Result};
use crate::msg::simple::ExperimenterMsg;
use crate::msg::table_features::TableFeatures;
use crate::port::PortDesc;
use crate::wire::Reader;

/// A multipart reply body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultipartReplyBody {
    Desc(Box<Desc>),
    Flow(Vec<FlowStats>),
    Aggregate(AggregateStats),
    Table(Vec<TableStats>),
    PortStats(Vec<PortStats>),
    Queue(Vec<QueueStats>),
    Group(Vec<GroupStats>),
    GroupDesc(Vec<GroupDesc>),
    GroupFeatures(GroupFeatures),
    Meter(Vec<MeterStats>),
    MeterConfig(Vec<MeterConfig>),
    MeterFeatures(MeterFeatures),
    TableFeatures(Vec<TableFeatures>),
    PortDesc(Vec<PortDesc>),
    Experimenter(ExperimenterMsg),
}

impl MultipartReplyBody {
    /// The body alone, after the multipart header.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use MultipartReplyBody as B;
        match self {
            B::Desc(d) => d.encode(out),
            B::Flow(v) => v.iter().for_each(|f| f.encode(out)),
            B::Aggregate(a) => a.encode(out),
            B::Table(v) => v.iter().for_each(|t| t.encode(out)),
            B::PortStats(v) => v.iter().for_each(|p| p.encode(out)),
            B::Queue(v) => v.iter().for_each(|q| q.encode(out)),
            B::Group(v) => v.iter().for_each(|g| g.encode(out)),
            B::GroupDesc(v) => v.iter().for_each(|g| g.encode(out)),
            B::GroupFeatures(g) => g.encode(out),
            B::Meter(v) => v.iter().for_each(|m| m.encode(out)),
            B::MeterConfig(v) => v.iter().for_each(|m| m.encode(out)),
            B::MeterFeatures(m) => m.encode(out),
            B::TableFeatures(v) => v.iter().for_each(|t| t.encode(out)),
            B::PortDesc(v) => v.iter().for_each(|p| p.encode(out)),
            B::Experimenter(e) => e.encode(out),
        }
    }

    /// The body of a reply of type `ty`, the rest of the message.
    pub(crate) fn decode(ty: MultipartType, r: &mut Reader<'_>) -> Result<MultipartReplyBody> {
        use MultipartReplyBody as B;
        Ok(match ty {
            MultipartType::Desc => B::Desc(Box::new(Desc::decode(r)?)),
            MultipartType::Flow => B::Flow(decode_list(r, FlowStats::decode)?),
            MultipartType::Aggregate => B::Aggregate(AggregateStats::decode(r)?),
            MultipartType::Table => B::Table(decode_list(r, TableStats::decode)?),
            MultipartType::PortStats => B::PortStats(decode_list(r, PortStats::decode)?),
            MultipartType::Queue => B::Queue(decode_list(r, QueueStats::decode)?),
            MultipartType::Group => B::Group(decode_list(r, GroupStats::decode)?),
            MultipartType::GroupDesc => B::GroupDesc(decode_list(r, GroupDesc::decode)?),
            MultipartType::GroupFeatures => B::GroupFeatures(GroupFeatures::decode(r)?),
            MultipartType::Meter => B::Meter(decode_list(r, MeterStats::decode)?),
            MultipartType::MeterConfig => B::MeterConfig(decode_list(r, MeterConfig::decode)?),
            MultipartType::MeterFeatures => B::MeterFeatures(MeterFeatures::decode(r)?),
            MultipartType::TableFeatures => {
                B::TableFeatures(decode_list(r, TableFeatures::decode)?)
            }
            MultipartType::PortDesc => B::PortDesc(decode_list(r, PortDesc::decode)?),
            MultipartType::Experimenter => B::Experimenter(ExperimenterMsg::decode(r)?),
            MultipartType::Unknown(_) => return Err(unknown_type()),
        })
    }
}

/// OFPT_MULTIPART_REPLY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultipartReply {
    pub flags: u16,
    pub body: MultipartReplyBody,
}

impl MultipartReply {
    /// A reply without flags.
    pub fn new(body: MultipartReplyBody) -> Self {
        MultipartReply { flags: 0, body }
    }

    /// The body's multipart type.
    pub fn mp_type(&self) -> MultipartType {
        use MultipartReplyBody as B;
        match &self.body {
            B::Desc(_) => MultipartType::Desc,
            B::Flow(_) => MultipartType::Flow,
            B::Aggregate(_) => MultipartType::Aggregate,
            B::Table(_) => MultipartType::Table,
            B::PortStats(_) => MultipartType::PortStats,
            B::Queue(_) => MultipartType::Queue,
            B::Group(_) => MultipartType::Group,
            B::GroupDesc(_) => MultipartType::GroupDesc,
            B::GroupFeatures(_) => MultipartType::GroupFeatures,
            B::Meter(_) => MultipartType::Meter,
            B::MeterConfig(_) => MultipartType::MeterConfig,
            B::MeterFeatures(_) => MultipartType::MeterFeatures,
            B::TableFeatures(_) => MultipartType::TableFeatures,
            B::PortDesc(_) => MultipartType::PortDesc,
            B::Experimenter(_) => MultipartType::Experimenter,
        }
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        encode_header(self.mp_type(), self.flags, out);
        self.body.encode(out);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MultipartReply> {
        let (ty, flags) = decode_header(r)?;
        let body = MultipartReplyBody::decode(ty, r)?;
        r.finish(ErrorCode::BAD_LEN)?;
        Ok(MultipartReply { flags, body })
    }
}
