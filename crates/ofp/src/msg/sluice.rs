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
//! * `COMMAND_REQUEST` (exp_type 3): a management command as its words
//!   (`add-port br0 tap7 ofport=7`, without the bridge), each followed by
//!   a NUL byte. The switch answers with `COMMAND_REPLY` (exp_type 4, same
//!   xid): a status byte (0 done, 1 refused), three bytes of padding, then
//!   UTF-8 text (the output, or why it was refused). Commands change the
//!   switch itself (its ports, its log level), so the switch takes them
//!   only from its management socket: from any other connection they are
//!   `OFPBRC_EPERM`. Words that are not UTF-8, or a request without its
//!   final NUL, are `OFPBRC_BAD_LEN`.
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
/// A management command.
pub const COMMAND_REQUEST: u32 = 3;
/// The answer to a management command.
pub const COMMAND_REPLY: u32 = 4;

/// A management command: its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRequest {
    pub words: Vec<String>,
}

impl CommandRequest {
    /// The request as a message.
    pub fn message(&self) -> Message {
        let mut data = Vec::new();
        for w in &self.words {
            data.extend_from_slice(w.as_bytes());
            data.push(0);
        }
        Message::Experimenter(ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER,
            exp_type: COMMAND_REQUEST,
            data: data.into(),
        })
    }

    /// Reads a command from a sluice experimenter message's data.
    pub fn decode(data: &[u8]) -> Result<CommandRequest> {
        let bad = |why: &'static str| OfpError::new(ErrorCode::BAD_LEN, why);
        let Some(body) = data.strip_suffix(&[0]) else {
            return Err(bad("command request: not a list of NUL-terminated words"));
        };
        let words = body
            .split(|&b| b == 0)
            .map(|w| std::str::from_utf8(w).map(str::to_string))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| bad("command request: a word is not UTF-8"))?;
        Ok(CommandRequest { words })
    }
}

/// The answer to a command: done (`ok`) or refused, with text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandReply {
    pub ok: bool,
    pub text: String,
}

impl CommandReply {
    /// The reply as a message.
    pub fn message(&self) -> Message {
        let mut data = vec![u8::from(!self.ok), 0, 0, 0];
        data.extend_from_slice(self.text.as_bytes());
        Message::Experimenter(ExperimenterMsg {
            experimenter: SLUICE_EXPERIMENTER,
            exp_type: COMMAND_REPLY,
            data: data.into(),
        })
    }

    /// Reads a reply (text that is not UTF-8 is replaced, not refused).
    pub fn decode(data: &[u8]) -> Result<CommandReply> {
        if data.len() < 4 {
            return Err(OfpError::new(
                ErrorCode::BAD_LEN,
                "command reply shorter than its 4-byte header",
            ));
        }
        Ok(CommandReply {
            ok: data[0] == 0,
            text: String::from_utf8_lossy(&data[4..]).into_owned(),
        })
    }
}

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

    #[test]
    fn commands_round_trip_and_bad_ones_are_refused() {
        let r = CommandRequest {
            words: vec!["add-port".into(), "tap 7".into(), "".into()],
        };
        let Message::Experimenter(e) = r.message() else {
            panic!("not an experimenter message")
        };
        assert_eq!(CommandRequest::decode(&e.data).unwrap(), r);
        for bad in [&b""[..], b"add-port", b"\xff\0"] {
            assert!(CommandRequest::decode(bad).is_err(), "{bad:?}");
        }
        let reply = CommandReply {
            ok: false,
            text: "no such port".into(),
        };
        let Message::Experimenter(e) = reply.message() else {
            panic!("not an experimenter message")
        };
        assert_eq!(CommandReply::decode(&e.data).unwrap(), reply);
        assert!(CommandReply::decode(&[0, 0]).is_err());
    }
}
