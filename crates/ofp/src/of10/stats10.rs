//! OpenFlow 1.0 OFPT_STATS_REQUEST / OFPT_STATS_REPLY (types 16 and 17)
//! to and from the internal MULTIPART_REQUEST / MULTIPART_REPLY.
//!
//! Contract: the 1.0 stats header is `type` and `flags` (no padding; the
//! body starts 12 bytes in), `OFPSF_REPLY_MORE` being 1 as 1.3's
//! `OFPMPF_REPLY_MORE`. The types 1.0 has and their bodies:
//! * DESC (0): the same 1056-byte `ofp_desc` as 1.3.
//! * FLOW (1) / AGGREGATE (2): request `ofp_match` (match10), `table_id`
//!   (0xff: all), pad, a 16-bit `out_port` (`OFPP_NONE`: any). Internally
//!   `out_group` is `OFPG_ANY` and the cookie and its mask 0, as Open
//!   vSwitch's `ofputil_decode_flow_stats_request` for 1.0. The request's
//!   match is read like a flow's, normalised (match10): Open vSwitch does
//!   not normalise a stats request's match, but the internal OXM match
//!   cannot hold a field without its prerequisites. A reply entry
//!   is 88 bytes plus its actions: length, table_id, pad, match,
//!   durations, priority, timeouts, 6 pad, cookie, counters, the flow's
//!   instructions as a 1.0 action list (action10: goto_table and
//!   write_metadata as Nicira actions, write_actions, clear_actions and
//!   meter left out, as Open vSwitch writes a flow for a 1.0 controller);
//!   1.0 has no `flags`, read as 0. A flow's match fields 1.0 cannot say
//!   are left out (match10).
//! * TABLE (3): 1.0's 64-byte `ofp_table_stats` adds a name, the
//!   wildcards the table supports and its maximum size: written as Open
//!   vSwitch's defaults ("table" and the number, `OFPFW10_ALL`,
//!   1 000 000), dropped when read.
//! * PORT (4): request a 16-bit port (`OFPP_NONE`: all); entry 104 bytes
//!   (1.3's without the duration, read as 0).
//! * QUEUE (5): request port and queue; 1.0's "all ports" is `OFPP_ALL`,
//!   1.3's `OFPP_ANY`, and they map onto each other as Open vSwitch's
//!   `ofputil_decode_queue_stats_request` does; entry 32 bytes (no
//!   duration).
//! * VENDOR (0xffff): the vendor id, then for Nicira (as Open vSwitch's
//!   `nicira10_stats_msg`) a 32-bit subtype and 4 bytes of padding, for
//!   any other vendor a 32-bit type; internally the experimenter body
//!   (experimenter, exp_type, data), so Nicira stats work as under 1.3.
//! * Any other type is `OFPBRC_BAD_STAT` (1.3's `OFPBRC_BAD_MULTIPART`,
//!   the same numbers). The internal types 1.0 has no form for (group,
//!   meter, table features, port description) are not written: a 1.0
//!   controller cannot ask for them.

use bytes::BufMut;

use crate::error::{ErrorCode, OfpError, Result};
use crate::msg::multipart::{
    AggregateStats, Desc, FlowStats, FlowStatsRequest, MultipartReply, MultipartReplyBody,
    MultipartRequest, MultipartRequestBody, PortStats, QueueStats, TableStats,
};
use crate::msg::simple::ExperimenterMsg;
use crate::port::{group_no, port_no};
use crate::wire::{zeros, FixedStr, Reader};

use super::action10::{decode_instructions, encode_instructions, Ctx};
use super::match10::{from_10, to_10, Match10, OFPFW10_ALL};
use super::port10::{port_from_10, port_to_10, OFPP10_ALL};

pub const OFPST10_DESC: u16 = 0;
pub const OFPST10_FLOW: u16 = 1;
pub const OFPST10_AGGREGATE: u16 = 2;
pub const OFPST10_TABLE: u16 = 3;
pub const OFPST10_PORT: u16 = 4;
pub const OFPST10_QUEUE: u16 = 5;
pub const OFPST10_VENDOR: u16 = 0xffff;

/// What Open vSwitch's tables say of their size to a 1.0 controller.
pub const TABLE_MAX_ENTRIES: u32 = 1_000_000;

fn bad_stat() -> OfpError {
    OfpError::new(
        ErrorCode::BadRequest(crate::error::BadRequestCode::BadMultipart),
        "unknown OpenFlow 1.0 stats type",
    )
}

/// Reads a STATS_REQUEST after the message header.
pub fn decode_request(r: &mut Reader<'_>) -> Result<MultipartRequest> {
    let ty = r.u16()?;
    let flags = r.u16()?;
    use MultipartRequestBody as B;
    let body = match ty {
        OFPST10_DESC => B::Desc,
        OFPST10_FLOW | OFPST10_AGGREGATE => {
            let m = Match10::decode(r)?;
            let table_id = r.u8()?;
            r.skip(1)?;
            let out_port = port_from_10(r.u16()?);
            let f = FlowStatsRequest {
                table_id,
                out_port,
                out_group: group_no::ANY,
                cookie: 0,
                cookie_mask: 0,
                match_: from_10(&m),
            };
            if ty == OFPST10_FLOW {
                B::Flow(f)
            } else {
                B::Aggregate(f)
            }
        }
        OFPST10_TABLE => B::Table,
        OFPST10_PORT => {
            let port_no = port_from_10(r.u16()?);
            r.skip(6)?;
            B::PortStats { port_no }
        }
        OFPST10_QUEUE => {
            let p = r.u16()?;
            r.skip(2)?;
            let queue_id = r.u32()?;
            let port_no = if p == OFPP10_ALL {
                port_no::ANY
            } else {
                port_from_10(p)
            };
            B::Queue { port_no, queue_id }
        }
        OFPST10_VENDOR => B::Experimenter(decode_vendor(r)?),
        _ => return Err(bad_stat()),
    };
    r.finish(ErrorCode::BAD_LEN)?;
    Ok(MultipartRequest { flags, body })
}

/// The 1.0 stats type of an internal request or reply type, if 1.0 has it.
fn type_10(t: crate::msg::multipart::MultipartType) -> Option<u16> {
    use crate::msg::multipart::MultipartType as T;
    Some(match t {
        T::Desc => OFPST10_DESC,
        T::Flow => OFPST10_FLOW,
        T::Aggregate => OFPST10_AGGREGATE,
        T::Table => OFPST10_TABLE,
        T::PortStats => OFPST10_PORT,
        T::Queue => OFPST10_QUEUE,
        T::Experimenter => OFPST10_VENDOR,
        _ => return None,
    })
}

/// Appends a STATS_REQUEST's body (stats header included); false, with
/// nothing written, for a type 1.0 does not have.
pub fn encode_request(m: &MultipartRequest, out: &mut Vec<u8>) -> bool {
    let Some(ty) = type_10(m.mp_type()) else {
        return false;
    };
    out.put_u16(ty);
    out.put_u16(m.flags);
    use MultipartRequestBody as B;
    match &m.body {
        B::Flow(f) | B::Aggregate(f) => {
            to_10(&f.match_).encode(out);
            out.put_u8(f.table_id);
            out.put_u8(0);
            out.put_u16(port_to_10(f.out_port));
        }
        B::PortStats { port_no } => {
            out.put_u16(port_to_10(*port_no));
            zeros(out, 6);
        }
        B::Queue {
            port_no: p,
            queue_id,
        } => {
            let p = if *p == port_no::ANY {
                OFPP10_ALL
            } else {
                port_to_10(*p)
            };
            out.put_u16(p);
            zeros(out, 2);
            out.put_u32(*queue_id);
        }
        B::Experimenter(e) => encode_vendor(e, out),
        _ => {}
    }
    true
}

fn decode_vendor(r: &mut Reader<'_>) -> Result<ExperimenterMsg> {
    let experimenter = r.u32()?;
    let exp_type = r.u32()?;
    if experimenter == crate::action::NX_VENDOR_ID {
        r.skip(4)?;
    }
    Ok(ExperimenterMsg {
        experimenter,
        exp_type,
        data: r.rest(),
    })
}

fn encode_vendor(e: &ExperimenterMsg, out: &mut Vec<u8>) {
    out.put_u32(e.experimenter);
    out.put_u32(e.exp_type);
    if e.experimenter == crate::action::NX_VENDOR_ID {
        zeros(out, 4);
    }
    out.extend_from_slice(&e.data);
}

/// A reply's 1.0 stats type and its body as indivisible parts (one per
/// entry of a list; one for the others), for the caller to spread over
/// as many messages as it takes. None for a type 1.0 does not have.
pub fn reply_parts(m: &MultipartReply) -> Option<(u16, Vec<Vec<u8>>)> {
    let ty = type_10(m.mp_type())?;
    use MultipartReplyBody as B;
    let one = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut v = Vec::new();
        f(&mut v);
        vec![v]
    };
    let each = |n: usize, f: &dyn Fn(usize, &mut Vec<u8>)| {
        (0..n)
            .map(|i| {
                let mut v = Vec::new();
                f(i, &mut v);
                v
            })
            .collect::<Vec<_>>()
    };
    let parts = match &m.body {
        B::Desc(d) => one(&|o| d.encode(o)),
        B::Aggregate(a) => one(&|o| a.encode(o)),
        B::Experimenter(e) => one(&|o| encode_vendor(e, o)),
        B::Flow(v) => each(v.len(), &|i, o| encode_flow_stats(&v[i], o)),
        B::Table(v) => each(v.len(), &|i, o| encode_table_stats(&v[i], o)),
        B::PortStats(v) => each(v.len(), &|i, o| encode_port_stats(&v[i], o)),
        B::Queue(v) => each(v.len(), &|i, o| encode_queue_stats(&v[i], o)),
        _ => return None,
    };
    Some((ty, parts))
}

/// Reads a STATS_REPLY after the message header.
pub fn decode_reply(r: &mut Reader<'_>) -> Result<MultipartReply> {
    let ty = r.u16()?;
    let flags = r.u16()?;
    fn list<T>(r: &mut Reader<'_>, f: fn(&mut Reader<'_>) -> Result<T>) -> Result<Vec<T>> {
        let mut v = Vec::new();
        while !r.is_empty() {
            v.push(f(r)?);
        }
        Ok(v)
    }
    use MultipartReplyBody as B;
    let body = match ty {
        OFPST10_DESC => B::Desc(Box::new(Desc::decode(r)?)),
        OFPST10_FLOW => B::Flow(list(r, decode_flow_stats)?),
        OFPST10_AGGREGATE => B::Aggregate(AggregateStats::decode(r)?),
        OFPST10_TABLE => B::Table(list(r, decode_table_stats)?),
        OFPST10_PORT => B::PortStats(list(r, decode_port_stats)?),
        OFPST10_QUEUE => B::Queue(list(r, decode_queue_stats)?),
        OFPST10_VENDOR => B::Experimenter(decode_vendor(r)?),
        _ => return Err(bad_stat()),
    };
    r.finish(ErrorCode::BAD_LEN)?;
    Ok(MultipartReply { flags, body })
}

/// Fixed part of a 1.0 `ofp_flow_stats`.
pub const FLOW_STATS10_LEN: usize = 88;

fn encode_flow_stats(f: &FlowStats, out: &mut Vec<u8>) {
    let start = out.len();
    out.put_u16(0);
    out.put_u8(f.table_id);
    out.put_u8(0);
    to_10(&f.match_).encode(out);
    out.put_u32(f.duration_sec);
    out.put_u32(f.duration_nsec);
    out.put_u16(f.priority);
    out.put_u16(f.idle_timeout);
    out.put_u16(f.hard_timeout);
    zeros(out, 6);
    out.put_u64(f.cookie);
    out.put_u64(f.packet_count);
    out.put_u64(f.byte_count);
    encode_instructions(&f.instructions, out);
    crate::wire::patch_len(out, start, start);
}

fn decode_flow_stats(r: &mut Reader<'_>) -> Result<FlowStats> {
    let len = r.peek_u16(0)? as usize;
    if len < FLOW_STATS10_LEN {
        return Err(OfpError::new(
            ErrorCode::BAD_LEN,
            "flow stats entry too short",
        ));
    }
    let mut b = r.sub(len, ErrorCode::BAD_LEN)?;
    b.skip(2)?;
    let table_id = b.u8()?;
    b.skip(1)?;
    let m = from_10(&Match10::decode(&mut b)?);
    let duration_sec = b.u32()?;
    let duration_nsec = b.u32()?;
    let priority = b.u16()?;
    let idle_timeout = b.u16()?;
    let hard_timeout = b.u16()?;
    b.skip(6)?;
    let cookie = b.u64()?;
    let packet_count = b.u64()?;
    let byte_count = b.u64()?;
    let instructions = decode_instructions(&mut b, Ctx::of_match(&m))?;
    Ok(FlowStats {
        idle_age: None,
        hard_age: None,
        table_id,
        duration_sec,
        duration_nsec,
        priority,
        idle_timeout,
        hard_timeout,
        flags: 0,
        cookie,
        packet_count,
        byte_count,
        match_: m,
        instructions,
    })
}

/// Size of 1.0's `ofp_table_stats`.
pub const TABLE_STATS10_LEN: usize = 64;

fn encode_table_stats(t: &TableStats, out: &mut Vec<u8>) {
    out.put_u8(t.table_id);
    zeros(out, 3);
    out.extend_from_slice(&t.name.0);
    out.put_u32(OFPFW10_ALL);
    out.put_u32(TABLE_MAX_ENTRIES);
    out.put_u32(t.active_count);
    out.put_u64(t.lookup_count);
    out.put_u64(t.matched_count);
}

fn decode_table_stats(r: &mut Reader<'_>) -> Result<TableStats> {
    let table_id = r.u8()?;
    r.skip(3)?;
    let name = FixedStr(r.array::<32>()?);
    r.skip(8)?;
    Ok(TableStats {
        table_id,
        name,
        active_count: r.u32()?,
        lookup_count: r.u64()?,
        matched_count: r.u64()?,
    })
}

/// Size of 1.0's `ofp_port_stats`.
pub const PORT_STATS10_LEN: usize = 104;

fn encode_port_stats(p: &PortStats, out: &mut Vec<u8>) {
    out.put_u16(port_to_10(p.port_no));
    zeros(out, 6);
    for c in p.counters() {
        out.put_u64(c);
    }
}

fn decode_port_stats(r: &mut Reader<'_>) -> Result<PortStats> {
    let port = port_from_10(r.u16()?);
    r.skip(6)?;
    let mut c = [0u64; 12];
    for x in &mut c {
        *x = r.u64()?;
    }
    Ok(PortStats::with_counters(port, c, (0, 0)))
}

/// Size of 1.0's `ofp_queue_stats`.
pub const QUEUE_STATS10_LEN: usize = 32;

fn encode_queue_stats(q: &QueueStats, out: &mut Vec<u8>) {
    out.put_u16(port_to_10(q.port_no));
    zeros(out, 2);
    out.put_u32(q.queue_id);
    out.put_u64(q.tx_bytes);
    out.put_u64(q.tx_packets);
    out.put_u64(q.tx_errors);
}

fn decode_queue_stats(r: &mut Reader<'_>) -> Result<QueueStats> {
    let port_no = port_from_10(r.u16()?);
    r.skip(2)?;
    Ok(QueueStats {
        port_no,
        queue_id: r.u32()?,
        tx_bytes: r.u64()?,
        tx_packets: r.u64()?,
        tx_errors: r.u64()?,
        duration_sec: 0,
        duration_nsec: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn read_req(b: &[u8]) -> Result<MultipartRequest> {
        let b = Bytes::copy_from_slice(b);
        let mut r = Reader::new(&b, ErrorCode::BAD_LEN);
        decode_request(&mut r)
    }

    /// A 1.0 port stats request for all ports (spec §5.3.5: port_no
    /// OFPP_NONE) and a queue request for all ports and queues (OFPP_ALL,
    /// OFPQ_ALL).
    #[test]
    fn golden_requests() {
        let r = read_req(&[0, 4, 0, 0, 0xff, 0xff, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(
            r.body,
            MultipartRequestBody::PortStats {
                port_no: port_no::ANY
            }
        );
        let r = read_req(&[0, 5, 0, 0, 0xff, 0xfc, 0, 0, 0xff, 0xff, 0xff, 0xff]).unwrap();
        assert_eq!(
            r.body,
            MultipartRequestBody::Queue {
                port_no: port_no::ANY,
                queue_id: 0xffff_ffff
            }
        );
        let mut out = Vec::new();
        assert!(encode_request(&r, &mut out));
        assert_eq!(out, [0, 5, 0, 0, 0xff, 0xfc, 0, 0, 0xff, 0xff, 0xff, 0xff]);
        // A type 1.0 has not (6: 1.3's group stats).
        assert_eq!(
            read_req(&[0, 6, 0, 0]).unwrap_err().code,
            ErrorCode::BadRequest(crate::error::BadRequestCode::BadMultipart)
        );
        // Trailing bytes.
        assert_eq!(
            read_req(&[0, 3, 0, 0, 0]).unwrap_err().code,
            ErrorCode::BAD_LEN
        );
    }

    #[test]
    fn table_stats_entry_is_64_bytes_with_ovs_defaults() {
        let t = TableStats {
            table_id: 2,
            name: FixedStr::new("Output"),
            active_count: 5,
            lookup_count: 6,
            matched_count: 7,
        };
        let mut out = Vec::new();
        encode_table_stats(&t, &mut out);
        assert_eq!(out.len(), TABLE_STATS10_LEN);
        assert_eq!(&out[4..11], b"Output\0");
        assert_eq!(&out[36..40], &OFPFW10_ALL.to_be_bytes());
        assert_eq!(&out[40..44], &TABLE_MAX_ENTRIES.to_be_bytes());
        let b = Bytes::from(out);
        let mut r = Reader::new(&b, ErrorCode::BAD_LEN);
        assert_eq!(decode_table_stats(&mut r).unwrap(), t);
    }

    #[test]
    fn an_unnamed_table_has_an_empty_name_as_in_open_vswitch() {
        // Open vSwitch names no table unless told to, and ovs-ofctl
        // --names then prints `table=0`, not a made-up `table=table0`.
        let t = TableStats {
            table_id: 0,
            ..TableStats::default()
        };
        let mut out = Vec::new();
        encode_table_stats(&t, &mut out);
        assert_eq!(&out[4..36], &[0u8; 32]);
        let b = Bytes::from(out);
        let mut r = Reader::new(&b, ErrorCode::BAD_LEN);
        assert_eq!(decode_table_stats(&mut r).unwrap().name.as_str(), "");
    }
}
