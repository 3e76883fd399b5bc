//! MULTIPART_REQUEST: the header, then a body chosen by the multipart type.
//!
//! Contract: most bodies are empty or a fixed record (an id, padded to 8
//! bytes); FLOW and AGGREGATE carry a [`FlowStatsRequest`]; TABLE_FEATURES
//! carries zero or more table features (none asks, some set);
//! EXPERIMENTER carries the experimenter message. Decoding refuses an
//! unknown type (`OFPBRC_BAD_MULTIPART`) and bytes after the body
//! (`OFPBRC_BAD_LEN`).

use bytes::BufMut;

use super::{decode_header, decode_list, encode_header, unknown_type, MultipartType};
use crate::error::{ErrorCode, Result};
use crate::msg::simple::ExperimenterMsg;
use crate::msg::table_features::TableFeatures;
use crate::oxm::Match;
use crate::wire::{zeros, Reader};

/// `ofp_flow_stats_request` (also the aggregate request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowStatsRequest {
    pub table_id: u8,
    pub out_port: u32,
    pub out_group: u32,
    pub cookie: u64,
    pub cookie_mask: u64,
    pub match_: Match,
}

impl Default for FlowStatsRequest {
    /// Every flow of every table.
    fn default() -> Self {
        FlowStatsRequest {
            table_id: crate::port::TABLE_ALL,
            out_port: crate::port::port_no::ANY,
            out_group: crate::port::group_no::ANY,
            cookie: 0,
            cookie_mask: 0,
            match_: Match::new(),
        }
    }
}

impl FlowStatsRequest {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.table_id);
        zeros(out, 3);
        out.put_u32(self.out_port);
        out.put_u32(self.out_group);
        zeros(out, 4);
        out.put_u64(self.cookie);
        out.put_u64(self.cookie_mask);
        self.match_.encode(out);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<FlowStatsRequest> {
        let table_id = r.u8()?;
        r.skip(3)?;
        let out_port = r.u32()?;
        let out_group = r.u32()?;
        r.skip(4)?;
        Ok(FlowStatsRequest {
            table_id,
            out_port,
            out_group,
            cookie: r.u64()?,
            cookie_mask: r.u64()?,
            match_: Match::decode(r)?,
        })
    }
}

/// A multipart request body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultipartRequestBody {
    Desc,
    Flow(FlowStatsRequest),
    Aggregate(FlowStatsRequest),
    Table,
    PortStats {
        port_no: u32,
    },
    Queue {
        port_no: u32,
        queue_id: u32,
    },
    Group {
        group_id: u32,
    },
    GroupDesc,
    GroupFeatures,
    Meter {
        meter_id: u32,
    },
    MeterConfig {
        meter_id: u32,
    },
    MeterFeatures,
    /// Empty to ask, non-empty to set the tables' features.
    TableFeatures(Vec<TableFeatures>),
    PortDesc,
    Experimenter(ExperimenterMsg),
}

impl MultipartRequestBody {
    /// The body alone, after the multipart header.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        use MultipartRequestBody as B;
        match self {
            B::Desc
            | B::Table
            | B::GroupDesc
            | B::GroupFeatures
            | B::MeterFeatures
            | B::PortDesc => {}
            B::Flow(f) | B::Aggregate(f) => f.encode(out),
            B::PortStats { port_no } => encode_padded_id(*port_no, out),
            B::Queue { port_no, queue_id } => {
                out.put_u32(*port_no);
                out.put_u32(*queue_id);
            }
            B::Group { group_id: id }
            | B::Meter { meter_id: id }
            | B::MeterConfig { meter_id: id } => encode_padded_id(*id, out),
            B::TableFeatures(t) => t.iter().for_each(|t| t.encode(out)),
            B::Experimenter(e) => e.encode(out),
        }
    }

    /// The body of a request of type `ty`, the rest of the message.
    pub(crate) fn decode(ty: MultipartType, r: &mut Reader<'_>) -> Result<MultipartRequestBody> {
        use MultipartRequestBody as B;
        Ok(match ty {
            MultipartType::Desc => B::Desc,
            MultipartType::Flow => B::Flow(FlowStatsRequest::decode(r)?),
            MultipartType::Aggregate => B::Aggregate(FlowStatsRequest::decode(r)?),
            MultipartType::Table => B::Table,
            MultipartType::PortStats => B::PortStats {
                port_no: decode_padded_id(r)?,
            },
            MultipartType::Queue => B::Queue {
                port_no: r.u32()?,
                queue_id: r.u32()?,
            },
            MultipartType::Group => B::Group {
                group_id: decode_padded_id(r)?,
            },
            MultipartType::GroupDesc => B::GroupDesc,
            MultipartType::GroupFeatures => B::GroupFeatures,
            MultipartType::Meter => B::Meter {
                meter_id: decode_padded_id(r)?,
            },
            MultipartType::MeterConfig => B::MeterConfig {
                meter_id: decode_padded_id(r)?,
            },
            MultipartType::MeterFeatures => B::MeterFeatures,
            MultipartType::TableFeatures => {
                B::TableFeatures(decode_list(r, TableFeatures::decode)?)
            }
            MultipartType::PortDesc => B::PortDesc,
            MultipartType::Experimenter => B::Experimenter(ExperimenterMsg::decode(r)?),
            MultipartType::Unknown(_) => return Err(unknown_type()),
        })
    }
}

/// A port, group or meter id as a request selects it: the id, then 4
/// bytes of padding.
fn encode_padded_id(id: u32, out: &mut Vec<u8>) {
    out.put_u32(id);
    zeros(out, 4);
}

/// Reads what [`encode_padded_id`] writes.
fn decode_padded_id(r: &mut Reader<'_>) -> Result<u32> {
    let v = r.u32()?;
    r.skip(4)?;
    Ok(v)
}

/// OFPT_MULTIPART_REQUEST.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultipartRequest {
    pub flags: u16,
    pub body: MultipartRequestBody,
}

impl MultipartRequest {
    /// A request without flags.
    pub fn new(body: MultipartRequestBody) -> Self {
        MultipartRequest { flags: 0, body }
    }

    /// The body's multipart type.
    pub fn mp_type(&self) -> MultipartType {
        use MultipartRequestBody as B;
        match &self.body {
            B::Desc => MultipartType::Desc,
            B::Flow(_) => MultipartType::Flow,
            B::Aggregate(_) => MultipartType::Aggregate,
            B::Table => MultipartType::Table,
            B::PortStats { .. } => MultipartType::PortStats,
            B::Queue { .. } => MultipartType::Queue,
            B::Group { .. } => MultipartType::Group,
            B::GroupDesc => MultipartType::GroupDesc,
            B::GroupFeatures => MultipartType::GroupFeatures,
            B::Meter { .. } => MultipartType::Meter,
            B::MeterConfig { .. } => MultipartType::MeterConfig,
            B::MeterFeatures => MultipartType::MeterFeatures,
            B::TableFeatures(_) => MultipartType::TableFeatures,
            B::PortDesc => MultipartType::PortDesc,
            B::Experimenter(_) => MultipartType::Experimenter,
        }
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        encode_header(self.mp_type(), self.flags, out);
        self.body.encode(out);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MultipartRequest> {
        let (ty, flags) = decode_header(r)?;
        let body = MultipartRequestBody::decode(ty, r)?;
        r.finish(ErrorCode::BAD_LEN)?;
        Ok(MultipartRequest { flags, body })
    }
}
