//! The streaming framer: bytes in from a connection, whole messages out.
//!
//! [`Framer::push`] appends what the socket delivered; [`Framer::next_frame`]
//! cuts one message at a time by its header length, without copying (the
//! returned [`Bytes`] is split off the internal buffer). Anything wrong with a
//! message becomes a [`Rejection`]: the error to answer, the xid to answer
//! with, and the first 64 bytes of the offending message, as the spec asks.
//!
//! Only one thing cannot be recovered from: a header whose length field is
//! below 8. The stream has then lost its framing, so the rejection is marked
//! `fatal` (answer it, then close the connection) and the framer yields no
//! more frames. Every other bad message is skipped whole and the stream goes on.

use bytes::{Bytes, BytesMut};

use crate::error::{ErrorCode, OfpError};
use crate::header::{Header, HEADER_LEN};
use crate::msg::simple::ErrorMsg;
use crate::msg::Message;

/// How many bytes of an offending message an error reply carries.
pub const ERROR_DATA_LEN: usize = 64;

/// A message the switch must answer with an OFPT_ERROR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The xid of the offending message (0 if it had no full header).
    pub xid: u32,
    /// Why: the code to send and a human detail.
    pub error: OfpError,
    /// The first [`ERROR_DATA_LEN`] bytes of the offending message.
    pub data: Bytes,
    /// The stream cannot continue (bad header length): close after answering.
    pub fatal: bool,
}

impl Rejection {
    /// A rejection of `frame` for `error`.
    pub fn new(frame: &Bytes, error: OfpError) -> Rejection {
        let xid = Header::parse(frame).map_or(0, |h| h.xid);
        Rejection {
            xid,
            error,
            data: frame.slice(..frame.len().min(ERROR_DATA_LEN)),
            fatal: false,
        }
    }

    /// The OFPT_ERROR message to send (with [`Rejection::xid`]).
    pub fn reply(&self) -> Message {
        Message::Error(ErrorMsg {
            code: self.error.code,
            data: self.data.clone(),
        })
    }
}

/// Cuts a byte stream into OpenFlow messages.
#[derive(Debug, Default)]
pub struct Framer {
    buf: BytesMut,
    broken: bool,
}

impl Framer {
    pub fn new() -> Self {
        Framer::default()
    }

    /// Appends bytes received from the peer. Ignored once the stream is broken.
    pub fn push(&mut self, data: &[u8]) {
        if !self.broken {
            self.buf.extend_from_slice(data);
        }
    }

    /// Bytes buffered but not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Whether [`Framer::next_frame`] would return something now: a whole
    /// frame, or a header whose length is the fatal error.
    pub fn has_frame(&self) -> bool {
        if self.broken || self.buf.len() < HEADER_LEN {
            return false;
        }
        let len = u16::from_be_bytes([self.buf[2], self.buf[3]]) as usize;
        len < HEADER_LEN || self.buf.len() >= len
    }

    /// True after a fatal rejection.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// The next whole frame, if one is buffered; `Err` only for the fatal
    /// bad-header-length case.
    pub fn next_frame(&mut self) -> Option<Result<Bytes, Rejection>> {
        if self.broken || self.buf.len() < HEADER_LEN {
            return None;
        }
        let len = u16::from_be_bytes([self.buf[2], self.buf[3]]) as usize;
        if len < HEADER_LEN {
            self.broken = true;
            let head = Bytes::copy_from_slice(&self.buf[..HEADER_LEN]);
            self.buf.clear();
            let mut r = Rejection::new(
                &head,
                OfpError::new(ErrorCode::BAD_LEN, "header length below 8"),
            );
            r.fatal = true;
            return Some(Err(r));
        }
        if self.buf.len() < len {
            self.buf.reserve(len - self.buf.len());
            return None;
        }
        Some(Ok(self.buf.split_to(len).freeze()))
    }

    /// The next frame, decoded; a message that does not decode is a
    /// (non-fatal) [`Rejection`] and the stream goes on.
    pub fn next_message(&mut self) -> Option<Result<(Header, Message), Rejection>> {
        Some(match self.next_frame()? {
            Ok(frame) => Message::decode(&frame).map_err(|e| Rejection::new(&frame, e)),
            Err(r) => Err(r),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadRequestCode;

    #[test]
    fn frames_split_across_pushes() {
        let a = Message::EchoRequest(Bytes::from_static(b"hi")).to_bytes(7);
        let b = Message::BarrierRequest.to_bytes(8);
        let mut all = a.clone();
        all.extend_from_slice(&b);
        let mut f = Framer::new();
        for chunk in all.chunks(3) {
            f.push(chunk);
        }
        let (h1, m1) = f.next_message().unwrap().unwrap();
        assert_eq!(
            (h1.xid, m1),
            (7, Message::EchoRequest(Bytes::from_static(b"hi")))
        );
        let (h2, m2) = f.next_message().unwrap().unwrap();
        assert_eq!((h2.xid, m2), (8, Message::BarrierRequest));
        assert!(f.next_message().is_none());
    }

    #[test]
    fn unknown_type_is_rejected_and_stream_continues() {
        let mut f = Framer::new();
        f.push(&[4, 99, 0, 8, 0, 0, 0, 5]);
        f.push(&Message::BarrierRequest.to_bytes(6));
        let r = f.next_message().unwrap().unwrap_err();
        assert_eq!(r.error.code, ErrorCode::BadRequest(BadRequestCode::BadType));
        assert_eq!(r.xid, 5);
        assert!(!r.fatal);
        assert!(matches!(
            f.next_message(),
            Some(Ok((_, Message::BarrierRequest)))
        ));
    }

    #[test]
    fn short_header_length_is_fatal() {
        let mut f = Framer::new();
        f.push(&[4, 0, 0, 4, 0, 0, 0, 1, 4, 0, 0, 8]);
        let r = f.next_frame().unwrap().unwrap_err();
        assert!(r.fatal);
        assert!(f.is_broken());
        assert!(f.next_frame().is_none());
    }

    #[test]
    fn body_longer_than_structure_is_bad_len() {
        // BARRIER_REQUEST with 4 bytes of body.
        let mut f = Framer::new();
        f.push(&[4, 20, 0, 12, 0, 0, 0, 9, 1, 2, 3, 4]);
        let r = f.next_message().unwrap().unwrap_err();
        assert_eq!(r.error.code, ErrorCode::BAD_LEN);
        assert_eq!(r.data.len(), 12);
    }
}
