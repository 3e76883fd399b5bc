//! MULTIPART_REQUEST and MULTIPART_REPLY with every OpenFlow 1.3 body.
//!
//! An unknown multipart type is `OFPBRC_BAD_MULTIPART`. Replies longer than
//! one message are the sender's business: it sets `OFPMPF_REPLY_MORE` in
//! `flags` and splits the body list over several replies (sluice's agent
//! does so for its list replies).
//!
//! Each body type encodes and decodes itself, the two side by side, and
//! [`MultipartRequest`] and [`MultipartReply`] only add the multipart
//! header and pick the body by its type:
//! - `request`: the requests and their bodies ([`FlowStatsRequest`], the
//!   ids that select a port, queue, group or meter);
//! - `reply`: the replies, a list of entries or one record a type;
//! - `stats`: the counters a reply carries (flows, aggregate, tables,
//!   ports, queues, groups, meters);
//! - `descriptions`: what a reply describes rather than counts (the
//!   switch, its groups and meters, what groups and meters support).
//!
//! Contract: every `encode` appends the OpenFlow 1.3 wire form to `out`
//! and its `decode` reads back exactly what it wrote, so a value survives
//! encode then decode unchanged (`crates/ofp/tests/roundtrip.rs`). An
//! entry's `decode` reads one entry and leaves the rest; one that carries
//! its length reads within it and refuses a wrong one (`OFPBRC_BAD_LEN`).
//! The request and reply refuse an unknown type (`OFPBRC_BAD_MULTIPART`)
//! and bytes left after their body (`OFPBRC_BAD_LEN`).

mod descriptions;
mod reply;
mod request;
mod stats;

use bytes::BufMut;

use crate::error::{BadRequestCode, ErrorCode, OfpError, Result};
use crate::macros::wire_enum;
use crate::wire::{zeros, Reader};

pub use descriptions::{Desc, GroupDesc, GroupFeatures, MeterConfig, MeterFeatures};
pub use reply::{MultipartReply, MultipartReplyBody};
pub use request::{FlowStatsRequest, MultipartRequest, MultipartRequestBody};
pub use stats::{
    AggregateStats, BucketCounter, FlowStats, GroupStats, MeterBandStats, MeterStats, PortStats,
    QueueStats, TableStats,
};

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

/// The multipart header of a request or reply: type, flags, 4 bytes of
/// padding.
fn encode_header(mp_type: MultipartType, flags: u16, out: &mut Vec<u8>) {
    out.put_u16(mp_type.value());
    out.put_u16(flags);
    zeros(out, 4);
}

/// Reads what [`encode_header`] writes: the type and the flags.
fn decode_header(r: &mut Reader<'_>) -> Result<(MultipartType, u16)> {
    let ty = MultipartType::from(r.u16()?);
    let flags = r.u16()?;
    r.skip(4)?;
    Ok((ty, flags))
}

/// The error for a multipart type this crate does not know.
fn unknown_type() -> OfpError {
    OfpError::new(
        ErrorCode::BadRequest(BadRequestCode::BadMultipart),
        "unknown multipart type",
    )
}

/// Entries decoded with `f` until the reader is empty.
fn decode_list<T>(r: &mut Reader<'_>, f: impl Fn(&mut Reader<'_>) -> Result<T>) -> Result<Vec<T>> {
    let mut v = Vec::new();
    while !r.is_empty() {
        v.push(f(r)?);
    }
    Ok(v)
}
