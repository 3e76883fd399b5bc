//! sluice's own experimenter messages (OFPT_EXPERIMENTER with
//! [`SLUICE_EXPERIMENTER`]): what ovs-appctl offers Open vSwitch users over
//! a separate channel, sluice offers over OpenFlow itself, so `sluice-ctl`
//! needs one connection only.
//!
//! * `TRACE_REQUEST` (exp_type 1): `in_port` (u32), 4 bytes of padding,
//!   then the Ethernet frame to trace. The switch answers with
//!   `TRACE_REPLY` (exp_type 2, same xid) whose data is the trace as UTF-8
//!   text. A request too short for its header is `OFPBRC_BAD_LEN`; an
//!   unknown exp_type is `OFPBRC_BAD_EXPTYPE`; another experimenter id
//!   `OFPBRC_BAD_EXPERIMENTER`, as the spec says.
//!
//! The id is the ASCII of "SLUC"; it is not an IEEE OUI, and the spec's
//! convention (top byte zero for an OUI) keeps it from clashing with one.

use bytes::{BufMut, Bytes};

use crate::error::{BadRequestCode, ErrorCode, OfpError, Result};
use crate::msg::simple::ExperimenterMsg;
use crate::msg::Message;

/// sluice's experimenter id.
pub const SLUICE_EXPERIMENTER: u32 = 0x534c_5543;
/// A trace request.
pub const TRACE_REQUEST: u32 = 1;
/// A trace reply.
pub const TRACE_REPLY: u32 = 2;

/// A request to trace `frame` as if received on `in_port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceRequest {
    pub in_port: u32,
    pub frame: Bytes,
}

impl TraceRequest {
    /// The request as a message.
    pub fn message(&self) -> Message {
        let mut data = Vec::with_capacity(8 + self.frame.len());
        data.put_u32(self.in_port);
        data.put_u32(0);
        data.extend_from_slice(&self.frame);
        Message::Experimenter(ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER,
            exp_type: TRACE_REQUEST,
            data: data.into(),
        })
    }

    /// Reads a trace request from a sluice experimenter message's data.
    pub fn decode(data: &Bytes) -> Result<TraceRequest> {
        if data.len() < 8 {
            return Err(OfpError::new(
                ErrorCode::BAD_LEN,
                "trace request shorter than its 8-byte header",
            ));
        }
        let in_port = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        Ok(TraceRequest {
            in_port,
            frame: data.slice(8..),
        })
    }
}

/// The reply to a trace request: the trace as text.
pub fn trace_reply(text: &str) -> Message {
    Message::Experimenter(ExperimenterMsg {
        experimenter: SLUICE_EXPERIMENTER,
        exp_type: TRACE_REPLY,
        data: Bytes::copy_from_slice(text.as_bytes()),
    })
}

/// The error for an experimenter message sluice does not know.
pub fn unknown(e: &ExperimenterMsg) -> ErrorCode {
    if e.experimenter == SLUICE_EXPERIMENTER {
        ErrorCode::BadRequest(BadRequestCode::BadExpType)
    } else {
        ErrorCode::BadRequest(BadRequestCode::BadExperimenter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_request_round_trips() {
        let r = TraceRequest {
            in_port: 7,
            frame: Bytes::from_static(&[1, 2, 3]),
        };
        let bytes = Bytes::from(r.message().to_bytes(9));
        let (_, m) = Message::decode(&bytes).unwrap();
        let Message::Experimenter(e) = m else {
            panic!("not an experimenter message")
        };
        assert_eq!(e.exp_type, TRACE_REQUEST);
        assert_eq!(TraceRequest::decode(&e.data).unwrap(), r);
        assert!(TraceRequest::decode(&Bytes::from_static(&[0; 7])).is_err());
    }
}
