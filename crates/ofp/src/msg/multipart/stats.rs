//! The counters multipart replies carry: `ofp_flow_stats`,
//! `ofp_aggregate_stats_reply`, `ofp_table_stats`, `ofp_port_stats`,
//! `ofp_queue_stats`, `ofp_group_stats` (with `ofp_bucket_counter`) and
//! `ofp_meter_stats` (with `ofp_meter_band_stats`), each with its encode
//! and decode side by side.
//!
//! Contract: `encode` appends the entry's wire form; `decode` reads one
//! entry. Flow, group and meter stats carry their length: it is checked
//! (at least the fixed part; for groups and meters, the fixed part plus
//! whole 16-byte counters) and the entry is read within it, a wrong one
//! being `OFPBRC_BAD_LEN`. The other entries are fixed-size.

use bytes::BufMut;

use super::decode_list;
use crate::error::{ErrorCode, OfpError, Result};
use crate::instruction::{decode_instructions, encode_instructions, Instruction};
use crate::oxm::Match;
use crate::wire::{len_placeholder, patch_len, zeros, FixedStr, Reader};

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
    /// Whole seconds since the flow last matched a packet, or since it
    /// was added or modified if later (Open vSwitch's `idle_age`). Only
    /// Nicira's NXST_FLOW and OpenFlow 1.5's OXS `idle_time` carry it;
    /// `None`: unknown (every other form).
    pub idle_age: Option<u32>,
    /// Whole seconds since the flow was added or last modified (Open
    /// vSwitch's `hard_age`); NXST_FLOW only. `None`: unknown.
    pub hard_age: Option<u32>,
}

impl FlowStats {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
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

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<FlowStats> {
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
            idle_age: None,
            hard_age: None,
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

impl AggregateStats {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u32(self.flow_count);
        zeros(out, 4);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<AggregateStats> {
        let a = AggregateStats {
            packet_count: r.u64()?,
            byte_count: r.u64()?,
            flow_count: r.u32()?,
        };
        r.skip(4)?;
        Ok(a)
    }
}

/// `ofp_table_stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TableStats {
    pub table_id: u8,
    /// The table's name, which OpenFlow 1.0 and 1.2 carry here (1.3 and
    /// later only in TABLE_FEATURES): empty for a table nobody named, as
    /// Open vSwitch sends it (ovs-ofctl then prints the table's number).
    pub name: FixedStr<32>,
    pub active_count: u32,
    pub lookup_count: u64,
    pub matched_count: u64,
}

impl TableStats {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.table_id);
        zeros(out, 3);
        out.put_u32(self.active_count);
        out.put_u64(self.lookup_count);
        out.put_u64(self.matched_count);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<TableStats> {
        let table_id = r.u8()?;
        r.skip(3)?;
        Ok(TableStats {
            table_id,
            name: FixedStr::default(),
            active_count: r.u32()?,
            lookup_count: r.u64()?,
            matched_count: r.u64()?,
        })
    }
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
    /// A port's statistics from its twelve counters in wire order
    /// (rx/tx packets, rx/tx bytes, rx/tx dropped, rx/tx errors, frame,
    /// overrun and CRC errors, collisions) and its duration (s, ns).
    pub fn with_counters(port_no: u32, c: [u64; 12], duration: (u32, u32)) -> PortStats {
        PortStats {
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
            duration_sec: duration.0,
            duration_nsec: duration.1,
        }
    }

    /// The twelve counters in wire order (every version's layout).
    pub fn counters(&self) -> [u64; 12] {
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

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        zeros(out, 4);
        self.counters().iter().for_each(|c| out.put_u64(*c));
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<PortStats> {
        let port_no = r.u32()?;
        r.skip(4)?;
        let mut c = [0u64; 12];
        for x in &mut c {
            *x = r.u64()?;
        }
        Ok(PortStats::with_counters(port_no, c, (r.u32()?, r.u32()?)))
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

impl QueueStats {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        out.put_u32(self.queue_id);
        out.put_u64(self.tx_bytes);
        out.put_u64(self.tx_packets);
        out.put_u64(self.tx_errors);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<QueueStats> {
        Ok(QueueStats {
            port_no: r.u32()?,
            queue_id: r.u32()?,
            tx_bytes: r.u64()?,
            tx_packets: r.u64()?,
            tx_errors: r.u64()?,
            duration_sec: r.u32()?,
            duration_nsec: r.u32()?,
        })
    }
}

/// `ofp_bucket_counter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BucketCounter {
    pub packet_count: u64,
    pub byte_count: u64,
}

impl BucketCounter {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<BucketCounter> {
        Ok(BucketCounter {
            packet_count: r.u64()?,
            byte_count: r.u64()?,
        })
    }
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

impl GroupStats {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16((40 + 16 * self.bucket_stats.len()) as u16);
        zeros(out, 2);
        out.put_u32(self.group_id);
        out.put_u32(self.ref_count);
        zeros(out, 4);
        out.put_u64(self.packet_count);
        out.put_u64(self.byte_count);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        self.bucket_stats.iter().for_each(|b| b.encode(out));
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<GroupStats> {
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
        let bucket_stats = decode_list(&mut b, BucketCounter::decode)?;
        Ok(GroupStats {
            group_id,
            ref_count,
            packet_count,
            byte_count,
            duration_sec,
            duration_nsec,
            bucket_stats,
        })
    }
}

/// `ofp_meter_band_stats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MeterBandStats {
    pub packet_band_count: u64,
    pub byte_band_count: u64,
}

impl MeterBandStats {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.packet_band_count);
        out.put_u64(self.byte_band_count);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MeterBandStats> {
        Ok(MeterBandStats {
            packet_band_count: r.u64()?,
            byte_band_count: r.u64()?,
        })
    }
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

impl MeterStats {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.meter_id);
        out.put_u16((40 + 16 * self.band_stats.len()) as u16);
        zeros(out, 6);
        out.put_u32(self.flow_count);
        out.put_u64(self.packet_in_count);
        out.put_u64(self.byte_in_count);
        out.put_u32(self.duration_sec);
        out.put_u32(self.duration_nsec);
        self.band_stats.iter().for_each(|b| b.encode(out));
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<MeterStats> {
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
        let band_stats = decode_list(&mut b, MeterBandStats::decode)?;
        Ok(MeterStats {
            meter_id,
            flow_count,
            packet_in_count,
            byte_in_count,
            duration_sec,
            duration_nsec,
            band_stats,
        })
    }
}
