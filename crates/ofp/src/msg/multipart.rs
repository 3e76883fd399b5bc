//! MULTIPART_REQUEST and MULTIPART_REPLY with every OpenFlow 1.3 body.
//!
//! An unknown multipart type is `OFPBRC_BAD_MULTIPART`. Replies longer than
//! one message are the sender's business: it sets `OFPMPF_REPLY_MORE` in
//! `flags` and splits the body list (see [`MultipartReplyBody::split`]).

use bytes::BufMut;

use crate::error::{BadRequestCode, ErrorCode, OfpError, Result};
use crate::instruction::{decode_instructions, encode_instructions, Instruction};
use crate::macros::wire_enum;
use crate::msg::group::{decode_buckets, Bucket, GroupType};
use crate::msg::meter::{decode_bands, MeterBand};
use crate::msg::simple::ExperimenterMsg;
use crate::msg::table_features::TableFeatures;
use crate::oxm::Match;
use crate::port::PortDesc;
use crate::wire::{len_placeholder, patch_len, zeros, FixedStr, Reader};

wire_enum! {
    /// `ofp_multipart_type`.
    pub enum MultipartType: u16 {
        Desc = 0 => "OFPMP_DESC",
        Flow = 1 => "OFPMP_FLOW",
        Aggregate = 2 => "OFPMP_AGGREGATE",
        Table = 3 => "OFPMP_TABLE",
        PortStats = 4 => "OFPMP_PORT_STATS",
        Queue = 5 => "OFPMP_QUEUE",
        Group = 6 => "OFPMP_GROUP",
        GroupDesc = 7 => "OFPMP_GROUP_DESC",
        GroupFeatures = 8 => "OFPMP_GROUP_FEATURES",
        Meter = 9 => "OFPMP_METER",
        MeterConfig = 10 => "OFPMP_METER_CONFIG",
        MeterFeatures = 11 => "OFPMP_METER_FEATURES",
        TableFeatures = 12 => "OFPMP_TABLE_FEATURES",
        PortDesc = 13 => "OFPMP_PORT_DESC",
        Experimenter = 0xffff => "OFPMP_EXPERIMENTER",
    }
}

/// `OFPMPF_REQ_MORE` / `OFPMPF_REPLY_MORE`.
pub const MPF_MORE: u16 = 1;

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
    fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.table_id);
        zeros(out, 3);
        out.put_u32(self.out_port);
        out.put_u32(self.out_group);
        zeros(out, 4);
        out.put_u64(self.cookie);
        out.put_u64(self.cookie_mask);
        self.match_.encode(out);
    }

    fn decode(r: &mut Reader<'_>) -> Result<FlowStatsRequest> {
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
        out.put_u16(self.mp_type().value());
        out.put_u16(self.flags);
        zeros(out, 4);
        use MultipartRequestBody as B;
        match &self.body {
            B::Desc
            | B::Table
            | B::GroupDesc
            | B::GroupFeatures
            | B::MeterFeatures
            | B::PortDesc => {}
            B::Flow(f) | B::Aggregate(f) => f.encode(out),
            B::PortStats { port_no } => {
                out.put_u32(*port_no);
                zeros(out, 4);
            }
            B::Queue { port_no, queue_id } => {
                out.put_u32(*port_no);
                out.put_u32(*queue_id);
            }
            B::Group { group_id: id }
            | B::Meter { meter_id: id }
            | B::MeterConfig { meter_id: id } => {
                out.put_u32(*id);
                zeros(out, 4);
            }
            B::TableFeatures(t) => t.iter().for_each(|t| t.encode(out)),
            B::Experimenter(e) => e.encode(out),
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MultipartRequest> {
        let ty = MultipartType::from(r.u16()?);
        let flags = r.u16()?;
        r.skip(4)?;
        use MultipartRequestBody as B;
        let id_pad = |r: &mut Reader<'_>| -> Result<u32> {
            let v = r.u32()?;
            r.skip(4)?;
            Ok(v)
        };
        let body = match ty {
            MultipartType::Desc => B::Desc,
            MultipartType::Flow => B::Flow(FlowStatsRequest::decode(r)?),
            MultipartType::Aggregate => B::Aggregate(FlowStatsRequest::decode(r)?),
            MultipartType::Table => B::Table,
            MultipartType::PortStats => B::PortStats {
                port_no: id_pad(r)?,
            },
            MultipartType::Queue => B::Queue {
                port_no: r.u32()?,
                queue_id: r.u32()?,
            },
            MultipartType::Group => B::Group {
                group_id: id_pad(r)?,
            },
            MultipartType::GroupDesc => B::GroupDesc,
            MultipartType::GroupFeatures => B::GroupFeatures,
            MultipartType::Meter => B::Meter {
                meter_id: id_pad(r)?,
            },
            MultipartType::MeterConfig => B::MeterConfig {
                meter_id: id_pad(r)?,
            },
            MultipartType::MeterFeatures => B::MeterFeatures,
            MultipartType::TableFeatures => {
                let mut v = Vec::new();
                while !r.is_empty() {
                    v.push(TableFeatures::decode(r)?);
                }
                B::TableFeatures(v)
            }
            MultipartType::PortDesc => B::PortDesc,
            MultipartType::Experimenter => B::Experimenter(ExperimenterMsg::decode(r)?),
            MultipartType::Unknown(_) => {
                return Err(OfpError::new(
                    ErrorCode::BadRequest(BadRequestCode::BadMultipart),
                    "unknown multipart type",
                ))
            }
        };
        r.finish(ErrorCode::BAD_LEN)?;
        Ok(MultipartRequest { flags, body })
    }
}

/// `ofp_desc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Desc {
    pub mfr_desc: FixedStr<256>,
    pub hw_desc: FixedStr<256>,
    pub sw_desc: FixedStr<256>,
    pub serial_num: FixedStr<32>,
    pub dp_desc: FixedStr<256>,
}

/// `ofp_flow_stats`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowStats {
    pub table_id: u8,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub priority: u16,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: u16,
    pub cookie: u64,
    pub packet_count: u64,
    pub byte_count: u64,
    pub match_: Match,
    pub instructions: Vec<Instruction>,
}

impl FlowStats {
    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let at = len_placeholder(out);
        out.put_u8(self.table_id);
        zeros(out, 1);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        out.put_u16(self.priority);
        out.put_u16(self.idle_timeout);
        out.put_u16(self.hard_timeout);
        out.put_u16(self.flags);
        zeros(out, 4);
        out.put_u64(self.cookie);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        self.match_.encode(out);
        encode_instructions(&self.instructions, out);
        patch_len(out, at, start);
    }

    fn decode(r: &mut Reader<'_>) -> Result<FlowStats> {
        let len = r.u16()? as usize;
        if len < 56 {
            return Err(OfpError::new(
                ErrorCode::BAD_LEN,
                "flow stats entry too short",
            ));
        }
        let mut b = r.sub(len - 2, ErrorCode::BAD_LEN)?;
        let table_id = b.u8()?;
        b.skip(1)?;
        let duration_sec = b.u32()?;
        let duration_nsec = b.u32()?;
        let priority = b.u16()?;
        let idle_timeout = b.u16()?;
        let hard_timeout = b.u16()?;
        let flags = b.u16()?;
        b.skip(4)?;
        let cookie = b.u64()?;
        let packet_count = b.u64()?;
        let byte_count = b.u64()?;
        let match_ = Match::decode(&mut b)?;
        let instructions = decode_instructions(&mut b)?;
        Ok(FlowStats {
            table_id,
            duration_sec,
            duration_nsec,
            priority,
            idle_timeout,
            hard_timeout,
            flags,
            cookie,
            packet_count,
            byte_count,
            match_,
            instructions,
        })
    }
}

/// `ofp_aggregate_stats_reply`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AggregateStats {
    pub packet_count: u64,
    pub byte_count: u64,
    pub flow_count: u32,
}

/// `ofp_table_stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableStats {
    pub table_id: u8,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

/// `ofp_port_stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortStats {
    pub port_no: u32,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_dropped: u64,
    pub tx_dropped: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
    pub rx_frame_err: u64,
    pub rx_over_err: u64,
    pub rx_crc_err: u64,
    pub collisions: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

impl PortStats {
    fn counters(&self) -> [u64; 12] {
        [
            self.rx_packets,
            self.tx_packets,
            self.rx_bytes,
            self.tx_bytes,
            self.rx_dropped,
            self.tx_dropped,
            self.rx_errors,
            self.tx_errors,
            self.rx_frame_err,
            self.rx_over_err,
            self.rx_crc_err,
            self.collisions,
        ]
    }
}

/// `ofp_queue_stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueStats {
    pub port_no: u32,
    pub queue_id: u32,
    pub tx_bytes: u64,
    pub tx_packets: u64,
    pub tx_errors: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
}

/// `ofp_bucket_counter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BucketCounter {
    pub packet_count: u64,
    pub byte_count: u64,
}

/// `ofp_group_stats`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GroupStats {
    pub group_id: u32,
    pub ref_count: u32,
    pub packet_count: u64,
    pub byte_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub bucket_stats: Vec<BucketCounter>,
}

/// `ofp_group_desc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDesc {
    pub group_type: GroupType,
    pub group_id: u32,
    pub buckets: Vec<Bucket>,
}

/// `ofp_group_features`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupFeatures {
    pub types: u32,
    pub capabilities: u32,
    pub max_groups: [u32; 4],
    pub actions: [u32; 4],
}

/// `ofp_meter_band_stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MeterBandStats {
    pub packet_band_count: u64,
    pub byte_band_count: u64,
}

/// `ofp_meter_stats`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MeterStats {
    pub meter_id: u32,
    pub flow_count: u32,
    pub packet_in_count: u64,
    pub byte_in_count: u64,
    pub duration_sec: u32,
    pub duration_nsec: u32,
    pub band_stats: Vec<MeterBandStats>,
}

/// `ofp_meter_config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MeterConfig {
    pub flags: u16,
    pub meter_id: u32,
    pub bands: Vec<MeterBand>,
}

/// `ofp_meter_features`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MeterFeatures {
    pub max_meter: u32,
    pub band_types: u32,
    pub capabilities: u32,
    pub max_bands: u8,
    pub max_color: u8,
}

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

/// OFPT_MULTIPART_REPLY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultipartReply {
    pub flags: u16,
    pub body: MultipartReplyBody,
}

fn decode_list<T>(r: &mut Reader<'_>, f: impl Fn(&mut Reader<'_>) -> Result<T>) -> Result<Vec<T>> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(f(r)?);
    }
    Ok(v)
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
        out.put_u16(self.mp_type().value());
        out.put_u16(self.flags);
        zeros(out, 4);
        use MultipartReplyBody as B;
        match &self.body {
            B::Desc(d) => {
                out.extend_from_slice(&d.mfr_desc.0);
                out.extend_from_slice(&d.hw_desc.0);
                out.extend_from_slice(&d.sw_desc.0);
                out.extend_from_slice(&d.serial_num.0);
                out.extend_from_slice(&d.dp_desc.0);
            }
            B::Flow(v) => v.iter().for_each(|f| f.encode(out)),
            B::Aggregate(a) => {
                out.put_u64(a.packet_count);
                out.put_u64(a.byte_count);
                out.put_u32(a.flow_count);
                zeros(out, 4);
            }
            B::Table(v) => {
                for t in v {
                    out.put_u8(t.table_id);
                    zeros(out, 3);
                    out.put_u32(t.active_count);
                    out.put_u64(t.lookup_count);
                    out.put_u64(t.matched_count);
                }
            }
            B::PortStats(v) => {
                for p in v {
                    out.put_u32(p.port_no);
                    zeros(out, 4);
                    p.counters().iter().for_each(|c| out.put_u64(*c));
                    out.put_u32(p.duration_sec);
                    out.put_u32(p.duration_nsec);
                }
            }
            B::Queue(v) => {
                for q in v {
                    out.put_u32(q.port_no);
                    out.put_u32(q.queue_id);
                    out.put_u64(q.tx_bytes);
                    out.put_u64(q.tx_packets);
                    out.put_u64(q.tx_errors);
                    out.put_u32(q.duration_sec);
                    out.put_u32(q.duration_nsec);
                }
            }
            B::Group(v) => {
                for g in v {
                    out.put_u16((40 + 16 * g.bucket_stats.len()) as u16);
                    zeros(out, 2);
                    out.put_u32(g.group_id);
                    out.put_u32(g.ref_count);
                    zeros(out, 4);
                    out.put_u64(g.packet_count);
                    out.put_u64(g.byte_count);
                    out.put_u32(g.duration_sec);
                    out.put_u32(g.duration_nsec);
                    for b in &g.bucket_stats {
                        out.put_u64(b.packet_count);
                        out.put_u64(b.byte_count);
                    }
                }
            }
            B::GroupDesc(v) => {
                for g in v {
                    let start = out.len();
                    let at = len_placeholder(out);
                    out.put_u8(g.group_type.value());
                    zeros(out, 1);
                    out.put_u32(g.group_id);
                    g.buckets.iter().for_each(|b| b.encode(out));
                    patch_len(out, at, start);
                }
            }
            B::GroupFeatures(g) => {
                out.put_u32(g.types);
                out.put_u32(g.capabilities);
                g.max_groups.iter().for_each(|x| out.put_u32(*x));
                g.actions.iter().for_each(|x| out.put_u32(*x));
            }
            B::Meter(v) => {
                for m in v {
                    out.put_u32(m.meter_id);
                    out.put_u16((40 + 16 * m.band_stats.len()) as u16);
                    zeros(out, 6);
                    out.put_u32(m.flow_count);
                    out.put_u64(m.packet_in_count);
                    out.put_u64(m.byte_in_count);
                    out.put_u32(m.duration_sec);
                    out.put_u32(m.duration_nsec);
                    for b in &m.band_stats {
                        out.put_u64(b.packet_band_count);
                        out.put_u64(b.byte_band_count);
                    }
                }
            }
            B::MeterConfig(v) => {
                for m in v {
                    let start = out.len();
                    let at = len_placeholder(out);
                    out.put_u16(m.flags);
                    out.put_u32(m.meter_id);
                    m.bands.iter().for_each(|b| b.encode(out));
                    patch_len(out, at, start);
                }
            }
            B::MeterFeatures(m) => {
                out.put_u32(m.max_meter);
                out.put_u32(m.band_types);
                out.put_u32(m.capabilities);
                out.put_u8(m.max_bands);
                out.put_u8(m.max_color);
                zeros(out, 2);
            }
            B::TableFeatures(v) => v.iter().for_each(|t| t.encode(out)),
            B::PortDesc(v) => v.iter().for_each(|p| p.encode(out)),
            B::Experimenter(e) => e.encode(out),
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MultipartReply> {
        let ty = MultipartType::from(r.u16()?);
        let flags = r.u16()?;
        r.skip(4)?;
        use MultipartReplyBody as B;
        let body = match ty {
            MultipartType::Desc => B::Desc(Box::new(Desc {
                mfr_desc: FixedStr(r.array()?),
                hw_desc: FixedStr(r.array()?),
                sw_desc: FixedStr(r.array()?),
                serial_num: FixedStr(r.array()?),
                dp_desc: FixedStr(r.array()?),
            })),
            MultipartType::Flow => B::Flow(decode_list(r, FlowStats::decode)?),
            MultipartType::Aggregate => {
                let a = AggregateStats {
                    packet_count: r.u64()?,
                    byte_count: r.u64()?,
                    flow_count: r.u32()?,
                };
                r.skip(4)?;
                B::Aggregate(a)
            }
            MultipartType::Table => B::Table(decode_list(r, |r| {
                let table_id = r.u8()?;
                r.skip(3)?;
                Ok(TableStats {
                    table_id,
                    active_count: r.u32()?,
                    lookup_count: r.u64()?,
                    matched_count: r.u64()?,
                })
            })?),
            MultipartType::PortStats => B::PortStats(decode_list(r, |r| {
                let port_no = r.u32()?;
                r.skip(4)?;
                let mut c = [0u64; 12];
                for x in &mut c {
                    *x = r.u64()?;
                }
                Ok(PortStats {
                    port_no,
                    rx_packets: c[0],
                    tx_packets: c[1],
                    rx_bytes: c[2],
                    tx_bytes: c[3],
                    rx_dropped: c[4],
                    tx_dropped: c[5],
                    rx_errors: c[6],
                    tx_errors: c[7],
                    rx_frame_err: c[8],
                    rx_over_err: c[9],
                    rx_crc_err: c[10],
                    collisions: c[11],
                    duration_sec: r.u32()?,
                    duration_nsec: r.u32()?,
                })
            })?),
            MultipartType::Queue => B::Queue(decode_list(r, |r| {
                Ok(QueueStats {
                    port_no: r.u32()?,
                    queue_id: r.u32()?,
                    tx_bytes: r.u64()?,
                    tx_packets: r.u64()?,
                    tx_errors: r.u64()?,
                    duration_sec: r.u32()?,
                    duration_nsec: r.u32()?,
                })
            })?),
            MultipartType::Group => B::Group(decode_list(r, |r| {
                let len = r.u16()? as usize;
                if len < 40 || !(len - 40).is_multiple_of(16) {
                    return Err(OfpError::new(ErrorCode::BAD_LEN, "bad group stats length"));
                }
                let mut b = r.sub(len - 2, ErrorCode::BAD_LEN)?;
                b.skip(2)?;
                let group_id = b.u32()?;
                let ref_count = b.u32()?;
                b.skip(4)?;
                let (packet_count, byte_count) = (b.u64()?, b.u64()?);
                let (duration_sec, duration_nsec) = (b.u32()?, b.u32()?);
                let bucket_stats = decode_list(&mut b, |b| {
                    Ok(BucketCounter {
                        packet_count: b.u64()?,
                        byte_count: b.u64()?,
                    })
                })?;
                Ok(GroupStats {
                    group_id,
                    ref_count,
                    packet_count,
                    byte_count,
                    duration_sec,
                    duration_nsec,
                    bucket_stats,
                })
            })?),
            MultipartType::GroupDesc => B::GroupDesc(decode_list(r, |r| {
                let len = r.u16()? as usize;
                if len < 8 {
                    return Err(OfpError::new(ErrorCode::BAD_LEN, "bad group desc length"));
                }
                let mut b = r.sub(len - 2, ErrorCode::BAD_LEN)?;
                let group_type = GroupType::from(b.u8()?);
                b.skip(1)?;
                let group_id = b.u32()?;
                Ok(GroupDesc {
                    group_type,
                    group_id,
                    buckets: decode_buckets(&mut b)?,
                })
            })?),
            MultipartType::GroupFeatures => {
                let types = r.u32()?;
                let capabilities = r.u32()?;
                let mut max_groups = [0u32; 4];
                let mut actions = [0u32; 4];
                for x in max_groups.iter_mut().chain(actions.iter_mut()) {
                    *x = r.u32()?;
                }
                B::GroupFeatures(GroupFeatures {
                    types,
                    capabilities,
                    max_groups,
                    actions,
                })
            }
            MultipartType::Meter => B::Meter(decode_list(r, |r| {
                let meter_id = r.u32()?;
                let len = r.u16()? as usize;
                if len < 40 || !(len - 40).is_multiple_of(16) {
                    return Err(OfpError::new(ErrorCode::BAD_LEN, "bad meter stats length"));
                }
                let mut b = r.sub(len - 6, ErrorCode::BAD_LEN)?;
                b.skip(6)?;
                let flow_count = b.u32()?;
                let (packet_in_count, byte_in_count) = (b.u64()?, b.u64()?);
                let (duration_sec, duration_nsec) = (b.u32()?, b.u32()?);
                let band_stats = decode_list(&mut b, |b| {
                    Ok(MeterBandStats {
                        packet_band_count: b.u64()?,
                        byte_band_count: b.u64()?,
                    })
                })?;
                Ok(MeterStats {
                    meter_id,
                    flow_count,
                    packet_in_count,
                    byte_in_count,
                    duration_sec,
                    duration_nsec,
                    band_stats,
                })
            })?),
            MultipartType::MeterConfig => B::MeterConfig(decode_list(r, |r| {
                let len = r.u16()? as usize;
                if len < 8 {
                    return Err(OfpError::new(ErrorCode::BAD_LEN, "bad meter config length"));
                }
                let mut b = r.sub(len - 2, ErrorCode::BAD_LEN)?;
                let flags = b.u16()?;
                let meter_id = b.u32()?;
                Ok(MeterConfig {
                    flags,
                    meter_id,
                    bands: decode_bands(&mut b)?,
                })
            })?),
            MultipartType::MeterFeatures => {
                let m = MeterFeatures {
                    max_meter: r.u32()?,
                    band_types: r.u32()?,
                    capabilities: r.u32()?,
                    max_bands: r.u8()?,
                    max_color: r.u8()?,
                };
                r.skip(2)?;
                B::MeterFeatures(m)
            }
            MultipartType::TableFeatures => {
                B::TableFeatures(decode_list(r, TableFeatures::decode)?)
            }
            MultipartType::PortDesc => B::PortDesc(decode_list(r, PortDesc::decode)?),
            MultipartType::Experimenter => B::Experimenter(ExperimenterMsg::decode(r)?),
            MultipartType::Unknown(_) => {
                return Err(OfpError::new(
                    ErrorCode::BadRequest(BadRequestCode::BadMultipart),
                    "unknown multipart type",
                ))
            }
        };
        r.finish(ErrorCode::BAD_LEN)?;
        Ok(MultipartReply { flags, body })
    }
}
