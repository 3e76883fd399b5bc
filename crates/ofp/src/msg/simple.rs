//! Fixed-shape and small messages: HELLO, ERROR, EXPERIMENTER, FEATURES,
//! switch CONFIG, ROLE, ASYNC, TABLE_MOD, PORT_MOD, PORT_STATUS and
//! QUEUE_GET_CONFIG.

use bytes::{BufMut, Bytes};

use crate::error::{ErrorCode, OfpError, Result};
use crate::macros::wire_enum;
use crate::port::PortDesc;
use crate::wire::{len_placeholder, pad8, pad_to_8, patch_len, zeros, Reader};

/// `OFPHET_VERSIONBITMAP`.
pub const HELLO_ELEM_VERSIONBITMAP: u16 = 1;

/// One HELLO element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HelloElem {
    /// Bitmap of supported versions: bit `n` of word `n / 32` is version `n`.
    VersionBitmap(Vec<u32>),
    /// An element type we do not know, kept verbatim (spec: ignore it).
    Unknown { ty: u16, data: Bytes },
}

/// HELLO: the header's version and optional elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The version in the HELLO's header: the sender's highest version.
    pub version: u8,
    pub elements: Vec<HelloElem>,
}

impl Hello {
    /// A HELLO of version 1.3 with a bitmap that says only 1.3 (a client
    /// that speaks 1.3; the switch offers `Versions::hello`).
    pub fn ours() -> Hello {
        Hello {
            version: crate::OFP_VERSION,
            elements: vec![HelloElem::VersionBitmap(vec![1 << crate::OFP_VERSION])],
        }
    }

    /// Whether the peer supports `version`: by its bitmap when it sent one,
    /// else by the header (it supports everything up to its version, and we
    /// only speak one, so it must be at least ours).
    pub fn supports(&self, version: u8) -> bool {
        for e in &self.elements {
            if let HelloElem::VersionBitmap(words) = e {
                let (w, b) = (version as usize / 32, version as u32 % 32);
                return words.get(w).is_some_and(|x| x & (1 << b) != 0);
            }
        }
        self.version >= version
    }

    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        for e in &self.elements {
            let start = out.len();
            match e {
                HelloElem::VersionBitmap(words) => {
                    out.put_u16(HELLO_ELEM_VERSIONBITMAP);
                    out.put_u16((4 + 4 * words.len()) as u16);
                    for w in words {
                        out.put_u32(*w);
                    }
                }
                HelloElem::Unknown { ty, data } => {
                    out.put_u16(*ty);
                    out.put_u16((4 + data.len()) as u16);
                    out.extend_from_slice(data);
                }
            }
            pad_to_8(out, start);
        }
    }

    pub(crate) fn decode(version: u8, r: &mut Reader<'_>) -> Result<Hello> {
        let mut elements = Vec::new();
        // Spec: elements are optional and a receiver ignores what it cannot parse;
        // a trailing fragment shorter than an element header is ignored too.
        while r.remaining() >= 4 {
            let ty = r.u16()?;
            let len = r.u16()? as usize;
            if len < 4 {
                return Err(OfpError::new(
                    ErrorCode::BAD_LEN,
                    "hello element shorter than its header",
                ));
            }
            let mut b = r.sub(len - 4, ErrorCode::BAD_LEN)?;
            let pad = (pad8(len) - len).min(r.remaining());
            r.skip(pad)?;
            if ty == HELLO_ELEM_VERSIONBITMAP {
                let mut words = Vec::new();
                while b.remaining() >= 4 {
                    words.push(b.u32()?);
                }
                elements.push(HelloElem::VersionBitmap(words));
            } else {
                elements.push(HelloElem::Unknown { ty, data: b.rest() });
            }
        }
        Ok(Hello { version, elements })
    }
}

/// OFPT_ERROR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorMsg {
    pub code: ErrorCode,
    /// For most errors, at least the first 64 bytes of the offending message.
    pub data: Bytes,
}

impl ErrorMsg {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let (ty, code) = self.code.type_code();
        out.put_u16(ty);
        out.put_u16(code);
        if let ErrorCode::Experimenter { experimenter, .. } = self.code {
            out.put_u32(experimenter);
        }
        out.extend_from_slice(&self.data);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<ErrorMsg> {
        let ty = r.u16()?;
        let code = r.u16()?;
        let experimenter = if ty == 0xffff { r.u32()? } else { 0 };
        Ok(ErrorMsg {
            code: ErrorCode::from_wire(ty, code, experimenter),
            data: r.rest(),
        })
    }
}

/// OFPT_EXPERIMENTER (and the experimenter multipart bodies).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimenterMsg {
    pub experimenter: u32,
    pub exp_type: u32,
    pub data: Bytes,
}

impl ExperimenterMsg {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.experimenter);
        out.put_u32(self.exp_type);
        out.extend_from_slice(&self.data);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<ExperimenterMsg> {
        Ok(ExperimenterMsg {
            experimenter: r.u32()?,
            exp_type: r.u32()?,
            data: r.rest(),
        })
    }
}

/// `ofp_capabilities` bits.
pub mod capabilities {
    pub const FLOW_STATS: u32 = 1 << 0;
    pub const TABLE_STATS: u32 = 1 << 1;
    pub const PORT_STATS: u32 = 1 << 2;
    pub const GROUP_STATS: u32 = 1 << 3;
    pub const IP_REASM: u32 = 1 << 5;
    pub const QUEUE_STATS: u32 = 1 << 6;
    pub const PORT_BLOCKED: u32 = 1 << 8;
}

/// OFPT_FEATURES_REPLY.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FeaturesReply {
    pub datapath_id: u64,
    pub n_buffers: u32,
    pub n_tables: u8,
    pub auxiliary_id: u8,
    pub capabilities: u32,
    pub reserved: u32,
    /// The switch's ports: OpenFlow 1.0 and 1.2 list them in the reply
    /// (1.3 on ask with PORT_DESC instead, and its codec leaves this
    /// empty and writes none). The agent always fills it.
    pub ports: Vec<PortDesc>,
}

impl FeaturesReply {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u64(self.datapath_id);
        out.put_u32(self.n_buffers);
        out.put_u8(self.n_tables);
        out.put_u8(self.auxiliary_id);
        zeros(out, 2);
        out.put_u32(self.capabilities);
        out.put_u32(self.reserved);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<FeaturesReply> {
        let datapath_id = r.u64()?;
        let n_buffers = r.u32()?;
        let n_tables = r.u8()?;
        let auxiliary_id = r.u8()?;
        r.skip(2)?;
        Ok(FeaturesReply {
            datapath_id,
            n_buffers,
            n_tables,
            auxiliary_id,
            capabilities: r.u32()?,
            reserved: r.u32()?,
            ports: Vec::new(),
        })
    }
}

/// `ofp_config_flags`: IP fragment handling.
pub mod config_flags {
    pub const FRAG_NORMAL: u16 = 0;
    pub const FRAG_DROP: u16 = 1;
    pub const FRAG_REASM: u16 = 2;
    pub const FRAG_MASK: u16 = 3;
}

/// `ofp_switch_config` (GET_CONFIG_REPLY, SET_CONFIG).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchConfig {
    pub flags: u16,
    pub miss_send_len: u16,
}

impl SwitchConfig {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u16(self.flags);
        out.put_u16(self.miss_send_len);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<SwitchConfig> {
        Ok(SwitchConfig {
            flags: r.u16()?,
            miss_send_len: r.u16()?,
        })
    }
}

wire_enum! {
    /// `ofp_controller_role`.
    pub enum ControllerRole: u32 {
        NoChange = 0 => "nochange",
        Equal = 1 => "equal",
        Master = 2 => "master",
        Slave = 3 => "slave",
    }
}

/// `ofp_role_request` (ROLE_REQUEST and ROLE_REPLY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Role {
    pub role: ControllerRole,
    pub generation_id: u64,
}

impl Role {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.role.value());
        zeros(out, 4);
        out.put_u64(self.generation_id);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<Role> {
        let role = ControllerRole::from(r.u32()?);
        r.skip(4)?;
        Ok(Role {
            role,
            generation_id: r.u64()?,
        })
    }
}

/// `ofp_async_config`: index 0 applies in master/equal role, 1 in slave role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AsyncConfig {
    pub packet_in_mask: [u32; 2],
    pub port_status_mask: [u32; 2],
    pub flow_removed_mask: [u32; 2],
}

impl AsyncConfig {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        for m in [
            self.packet_in_mask,
            self.port_status_mask,
            self.flow_removed_mask,
        ] {
            out.put_u32(m[0]);
            out.put_u32(m[1]);
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<AsyncConfig> {
        let mut m = [[0u32; 2]; 3];
        for pair in &mut m {
            *pair = [r.u32()?, r.u32()?];
        }
        Ok(AsyncConfig {
            packet_in_mask: m[0],
            port_status_mask: m[1],
            flow_removed_mask: m[2],
        })
    }
}

/// OFPT_TABLE_MOD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableMod {
    pub table_id: u8,
    pub config: u32,
}

impl TableMod {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.table_id);
        zeros(out, 3);
        out.put_u32(self.config);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<TableMod> {
        let table_id = r.u8()?;
        r.skip(3)?;
        Ok(TableMod {
            table_id,
            config: r.u32()?,
        })
    }
}

/// OFPT_PORT_MOD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortMod {
    pub port_no: u32,
    pub hw_addr: [u8; 6],
    pub config: u32,
    pub mask: u32,
    pub advertise: u32,
}

impl PortMod {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port_no);
        zeros(out, 4);
        out.extend_from_slice(&self.hw_addr);
        zeros(out, 2);
        out.put_u32(self.config);
        out.put_u32(self.mask);
        out.put_u32(self.advertise);
        zeros(out, 4);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<PortMod> {
        let port_no = r.u32()?;
        r.skip(4)?;
        let hw_addr = r.array()?;
        r.skip(2)?;
        let m = PortMod {
            port_no,
            hw_addr,
            config: r.u32()?,
            mask: r.u32()?,
            advertise: r.u32()?,
        };
        r.skip(4)?;
        Ok(m)
    }
}

wire_enum! {
    /// `ofp_port_reason`.
    pub enum PortReason: u8 {
        Add = 0 => "ADD",
        Delete = 1 => "DELETE",
        Modify = 2 => "MODIFY",
    }
}

/// OFPT_PORT_STATUS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortStatus {
    pub reason: PortReason,
    pub desc: PortDesc,
}

impl PortStatus {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u8(self.reason.value());
        zeros(out, 7);
        self.desc.encode(out);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<PortStatus> {
        let reason = PortReason::from(r.u8()?);
        r.skip(7)?;
        Ok(PortStatus {
            reason,
            desc: PortDesc::decode(r)?,
        })
    }
}

/// A queue property (`ofp_queue_prop_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueueProp {
    /// Guaranteed rate, in 1/10 of a percent of the port's speed; >1000 disables.
    MinRate(u16),
    /// Maximum rate, same unit.
    MaxRate(u16),
    Experimenter {
        experimenter: u32,
        data: Bytes,
    },
}

/// `ofp_packet_queue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PacketQueue {
    pub queue_id: u32,
    pub port: u32,
    pub properties: Vec<QueueProp>,
}

impl PacketQueue {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u32(self.queue_id);
        out.put_u32(self.port);
        let at = len_placeholder(out);
        zeros(out, 6);
        for p in &self.properties {
            let ps = out.len();
            let ty = match p {
                QueueProp::MinRate(_) => 1,
                QueueProp::MaxRate(_) => 2,
                QueueProp::Experimenter { .. } => 0xffff,
            };
            out.put_u16(ty);
            let pl = len_placeholder(out);
            zeros(out, 4);
            match p {
                QueueProp::MinRate(rate) | QueueProp::MaxRate(rate) => {
                    out.put_u16(*rate);
                    zeros(out, 6);
                }
                QueueProp::Experimenter { experimenter, data } => {
                    out.put_u32(*experimenter);
                    zeros(out, 4);
                    out.extend_from_slice(data);
                }
            }
            pad_to_8(out, ps);
            patch_len(out, pl, ps);
        }
        patch_len(out, at, start);
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<PacketQueue> {
        let queue_id = r.u32()?;
        let port = r.u32()?;
        let len = r.u16()? as usize;
        r.skip(6)?;
        if len < 16 {
            return Err(OfpError::new(
                ErrorCode::BAD_LEN,
                "queue shorter than its header",
            ));
        }
        let mut b = r.sub(len - 16, ErrorCode::BAD_LEN)?;
        let mut properties = Vec::new();
        while !b.is_empty() {
            let ty = b.u16()?;
            let plen = b.u16()? as usize;
            if plen < 8 {
                return Err(OfpError::new(
                    ErrorCode::BAD_LEN,
                    "queue property shorter than its header",
                ));
            }
            b.skip(4)?;
            let mut p = b.sub(plen - 8, ErrorCode::BAD_LEN)?;
            properties.push(match ty {
                1 | 2 => {
                    let rate = p.u16()?;
                    if ty == 1 {
                        QueueProp::MinRate(rate)
                    } else {
                        QueueProp::MaxRate(rate)
                    }
                }
                0xffff => {
                    let experimenter = p.u32()?;
                    p.skip(4)?;
                    QueueProp::Experimenter {
                        experimenter,
                        data: p.rest(),
                    }
                }
                _ => return Err(OfpError::new(ErrorCode::BAD_LEN, "unknown queue property")),
            });
        }
        Ok(PacketQueue {
            queue_id,
            port,
            properties,
        })
    }
}

/// OFPT_QUEUE_GET_CONFIG_REPLY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueGetConfigReply {
    pub port: u32,
    pub queues: Vec<PacketQueue>,
}

impl QueueGetConfigReply {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.put_u32(self.port);
        zeros(out, 4);
        for q in &self.queues {
            q.encode(out);
        }
    }

    pub(crate) fn decode(r: &mut Reader<'_>) -> Result<QueueGetConfigReply> {
        let port = r.u32()?;
        r.skip(4)?;
        let mut queues = Vec::new();
        while !r.is_empty() {
            queues.push(PacketQueue::decode(r)?);
        }
        Ok(QueueGetConfigReply { port, queues })
    }
}
