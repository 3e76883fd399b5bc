//! `ofp_header` and the message type numbers.

use crate::macros::wire_enum;

/// The one protocol version sluice speaks: OpenFlow 1.3 (wire version 4).
pub const OFP_VERSION: u8 = 0x04;
/// Size of `ofp_header`.
pub const HEADER_LEN: usize = 8;
/// Largest OpenFlow message (the length field is 16 bits).
pub const MAX_MSG_LEN: usize = 0xffff;

wire_enum! {
    /// `ofp_type`.
    pub enum MsgType: u8 {
        Hello = 0 => "OFPT_HELLO",
        Error = 1 => "OFPT_ERROR",
        EchoRequest = 2 => "OFPT_ECHO_REQUEST",
        EchoReply = 3 => "OFPT_ECHO_REPLY",
        Experimenter = 4 => "OFPT_EXPERIMENTER",
        FeaturesRequest = 5 => "OFPT_FEATURES_REQUEST",
        FeaturesReply = 6 => "OFPT_FEATURES_REPLY",
        GetConfigRequest = 7 => "OFPT_GET_CONFIG_REQUEST",
        GetConfigReply = 8 => "OFPT_GET_CONFIG_REPLY",
        SetConfig = 9 => "OFPT_SET_CONFIG",
        PacketIn = 10 => "OFPT_PACKET_IN",
        FlowRemoved = 11 => "OFPT_FLOW_REMOVED",
        PortStatus = 12 => "OFPT_PORT_STATUS",
        PacketOut = 13 => "OFPT_PACKET_OUT",
        FlowMod = 14 => "OFPT_FLOW_MOD",
        GroupMod = 15 => "OFPT_GROUP_MOD",
        PortMod = 16 => "OFPT_PORT_MOD",
        TableMod = 17 => "OFPT_TABLE_MOD",
        MultipartRequest = 18 => "OFPT_MULTIPART_REQUEST",
        MultipartReply = 19 => "OFPT_MULTIPART_REPLY",
        BarrierRequest = 20 => "OFPT_BARRIER_REQUEST",
        BarrierReply = 21 => "OFPT_BARRIER_REPLY",
        QueueGetConfigRequest = 22 => "OFPT_QUEUE_GET_CONFIG_REQUEST",
        QueueGetConfigReply = 23 => "OFPT_QUEUE_GET_CONFIG_REPLY",
        RoleRequest = 24 => "OFPT_ROLE_REQUEST",
        RoleReply = 25 => "OFPT_ROLE_REPLY",
        GetAsyncRequest = 26 => "OFPT_GET_ASYNC_REQUEST",
        GetAsyncReply = 27 => "OFPT_GET_ASYNC_REPLY",
        SetAsync = 28 => "OFPT_SET_ASYNC",
        MeterMod = 29 => "OFPT_METER_MOD",
    }
}

/// `ofp_header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub msg_type: MsgType,
    /// Length of the whole message, header included.
    pub length: u16,
    pub xid: u32,
}

impl Header {
    /// Reads a header from the first 8 bytes; `None` if fewer are given.
    pub fn parse(b: &[u8]) -> Option<Header> {
        let h: &[u8; 8] = b.get(..HEADER_LEN)?.try_into().ok()?;
        Some(Header {
            version: h[0],
            msg_type: MsgType::from(h[1]),
            length: u16::from_be_bytes([h[2], h[3]]),
            xid: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
        })
    }

    /// The 8 header bytes.
    pub fn to_bytes(&self) -> [u8; 8] {
        let mut h = [0u8; 8];
        h[0] = self.version;
        h[1] = self.msg_type.value();
        h[2..4].copy_from_slice(&self.length.to_be_bytes());
        h[4..8].copy_from_slice(&self.xid.to_be_bytes());
        h
    }
}
