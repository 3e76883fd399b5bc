//! One JSON-RPC connection: a non-blocking [`Stream`], a [`Framer`] for
//! what comes in, and a buffer for what goes out.
//!
//! Contract (no threads, no clock; the owner polls):
//! * [`Conn::receive`] reads what the socket has, at most
//!   [`ConnLimits::read_per_call`] bytes per call (fairness between
//!   connections on one thread), and returns the complete messages. When
//!   it stopped at that bound rather than because the socket was empty,
//!   [`Conn::has_more_input`] is true and the owner should call it again
//!   without waiting for `poll(2)` (a TLS stream may hold decrypted bytes
//!   the socket no longer signals).
//! * The end of the stream with messages still in the same read gives the
//!   messages first and [`ConnError::Closed`] on the next call, so a peer
//!   that half-closes after its request still gets served. So does a
//!   framing error or an invalid message: the complete messages before it
//!   are returned first (in order), with [`Conn::has_more_input`] true,
//!   and the error on the next call (and every call after it; nothing more
//!   is read). The owner answers them, then closes: a request followed by
//!   garbage on the same connection gets its reply, as from ovsdb-server.
//! * [`Conn::receive_split`] is the same, except that a message longer
//!   than the bound it is given comes back as its bytes
//!   ([`Incoming::Raw`], in its place among the others) for the owner to
//!   parse on another thread ([`Incoming::parse`], which gives the error
//!   `receive` would have given; the framer has already checked its
//!   length and depth, and found where it ends).
//! * [`Conn::send`] only queues (serializing into the output buffer);
//!   [`Conn::flush`] writes as far as the socket takes. The budget: a send
//!   while more than [`ConnLimits::max_backlog`] bytes are still unsent
//!   fails with [`ConnError::Backlog`] and the owner is to drop the
//!   connection: a peer that never reads costs at most the budget plus
//!   one message, and one large reply to a peer that does read still goes
//!   out whole.
//! * [`Conn::wants_write`] tells a poll loop to ask for POLLOUT.

use std::io;
use std::os::fd::RawFd;

use crate::framer::{FrameError, Framer, Limits};
use crate::{Message, Stream};

/// A connection's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnLimits {
    /// Of one incoming message.
    pub frame: Limits,
    /// Unsent bytes beyond which a send fails.
    pub max_backlog: usize,
    /// Most bytes one `receive` reads.
    pub read_per_call: usize,
}

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        ConnLimits {
            frame: Limits::default(),
            max_backlog: 16 << 20,
            read_per_call: 256 << 10,
        }
    }
}

/// Why a connection is over (every error means: close it).
#[derive(Debug)]
pub enum ConnError {
    /// The peer closed the stream.
    Closed,
    /// A socket (or TLS) error.
    Io(io::Error),
    /// The byte stream could not be cut into JSON values.
    Frame(FrameError),
    /// A JSON value that is not a JSON-RPC message (Open vSwitch's words).
    Invalid(String),
    /// The peer does not read: this many bytes wait, over the budget.
    Backlog { unsent: usize, limit: usize },
}

impl std::fmt::Display for ConnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnError::Closed => write!(f, "connection closed by peer"),
            ConnError::Io(e) => write!(f, "{e}"),
            ConnError::Frame(e) => write!(f, "{e}"),
            ConnError::Invalid(e) => write!(f, "received bad JSON-RPC message: {e}"),
            ConnError::Backlog { unsent, limit } => write!(
                f,
                "peer is not reading: {unsent} bytes unsent, over the {limit}-byte budget"
            ),
        }
    }
}

impl std::error::Error for ConnError {}

/// One connection (see the module docs).
pub struct Conn {
    stream: Stream,
    framer: Framer,
    limits: ConnLimits,
    out: Vec<u8>,
    /// Bytes of `out` already written.
    sent: usize,
    eof: bool,
    more_input: bool,
    /// An error met after messages that were returned first: the next
    /// `receive` gives it (then `Broken` for good).
    failed: Option<ConnError>,
    /// The stream is unusable past an error already returned.
    broken: bool,
}

/// A message from [`Conn::receive_split`].
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// A long message's bytes, framed but not parsed.
    Raw(Vec<u8>),
}

impl Incoming {
    /// Parses a raw message (on any thread); the error is the one
    /// [`Conn::receive`] would have given.
    pub fn parse(bytes: &[u8]) -> Result<Message, ConnError> {
        crate::framer::parse(bytes)
            .map_err(ConnError::Frame)
            .and_then(|v| Message::from_value(v).map_err(ConnError::Invalid))
    }
}

/// Bytes read per `read(2)`.
const CHUNK: usize = 16 << 10;

impl Conn {
    pub fn new(stream: Stream, limits: ConnLimits) -> Conn {
        Conn {
            stream,
            framer: Framer::new(limits.frame),
            limits,
            out: Vec::new(),
            sent: 0,
            eof: false,
            more_input: false,
            failed: None,
            broken: false,
        }
    }

    /// The socket, for `poll(2)`.
    pub fn fd(&self) -> RawFd {
        self.stream.fd()
    }

    /// Reads and returns the complete messages (see the module docs).
    pub fn receive(&mut self) -> Result<Vec<Message>, ConnError> {
        Ok(self
            .receive_split(usize::MAX)?
            .into_iter()
            .filter_map(|m| match m {
                Incoming::Message(m) => Some(m),
                Incoming::Raw(_) => None,
            })
            .collect())
    }

    /// As [`Conn::receive`], but a message longer than `big` bytes comes
    /// back unparsed ([`Incoming::Raw`]), for the owner to parse off its
    /// thread with [`Incoming::parse`]; a parse error there is the
    /// connection's end, as it would have been here.
    pub fn receive_split(&mut self, big: usize) -> Result<Vec<Incoming>, ConnError> {
        self.more_input = false;
        if let Some(e) = self.failed.take() {
            self.broken = true;
            return Err(e);
        }
        if self.broken {
            return Err(ConnError::Invalid(
                "the stream is unusable after an earlier error".into(),
            ));
        }
        if self.eof {
            return Err(ConnError::Closed);
        }
        let mut msgs = Vec::new();
        let mut left = self.limits.read_per_call.max(1);
        let mut buf = [0u8; CHUNK];
        while left > 0 {
            let want = left.min(CHUNK);
            match self.stream.read(&mut buf[..want]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => {
                    left -= n;
                    self.framer.push(&buf[..n]);
                    loop {
                        if self.framer.next_len().is_some_and(|l| l > big) {
                            if let Some(bytes) = self.framer.next_raw() {
                                msgs.push(Incoming::Raw(bytes));
                            }
                            continue;
                        }
                        let Some(v) = self.framer.next() else {
                            break;
                        };
                        let m = v
                            .map_err(ConnError::Frame)
                            .and_then(|v| Message::from_value(v).map_err(ConnError::Invalid));
                        match m {
                            Ok(m) => msgs.push(Incoming::Message(m)),
                            Err(e) => return self.fail(msgs, e),
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(msgs),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(msgs, ConnError::Io(e)),
            }
        }
        if self.eof {
            return if msgs.is_empty() {
                Err(ConnError::Closed)
            } else {
                Ok(msgs)
            };
        }
        self.more_input = true;
        Ok(msgs)
    }

    /// An error after `msgs`: those first (the error kept for the next
    /// call), or the error now when there are none.
    fn fail(&mut self, msgs: Vec<Incoming>, e: ConnError) -> Result<Vec<Incoming>, ConnError> {
        if msgs.is_empty() {
            self.broken = true;
            return Err(e);
        }
        self.failed = Some(e);
        self.more_input = true;
        Ok(msgs)
    }

    /// Whether the last `receive` stopped at its byte bound (call it again
    /// soon, without waiting for the socket to signal).
    pub fn has_more_input(&self) -> bool {
        self.more_input
    }

    /// Whether the peer has closed its side (replies may still be flushed).
    pub fn peer_closed(&self) -> bool {
        self.eof
    }

    /// Queues a message; fails when the unsent backlog is already over the
    /// budget (the message is then not queued).
    pub fn send(&mut self, m: &Message) -> Result<(), ConnError> {
        self.send_value(&m.to_value())
    }

    /// Queues a message already in JSON form (the caller vouches that it
    /// is one), under the same budget as [`Conn::send`].
    pub fn send_value(&mut self, v: &serde_json::Value) -> Result<(), ConnError> {
        let unsent = self.backlog();
        if unsent > self.limits.max_backlog {
            return Err(ConnError::Backlog {
                unsent,
                limit: self.limits.max_backlog,
            });
        }
        if self.sent > 0 && self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        }
        let _ = serde_json::to_writer(&mut self.out, v);
        Ok(())
    }

    /// Bytes of a message received in part (held until it is whole).
    pub fn buffered(&self) -> usize {
        self.framer.buffered()
    }

    /// Bytes queued and not yet written to the socket.
    pub fn backlog(&self) -> usize {
        self.out.len() - self.sent
    }

    /// Writes queued bytes until done or the socket would block.
    pub fn flush(&mut self) -> Result<(), ConnError> {
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return Err(ConnError::Io(io::ErrorKind::WriteZero.into())),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(ConnError::Io(e)),
            }
        }
        if self.sent == self.out.len() {
            self.out.clear();
            self.sent = 0;
        } else if self.sent > (1 << 20) && self.sent * 2 > self.out.len() {
            self.out.drain(..self.sent);
            self.sent = 0;
        }
        self.stream.flush_transport().map_err(ConnError::Io)
    }

    /// Whether anything waits for the socket to become writable.
    pub fn wants_write(&self) -> bool {
        self.sent < self.out.len() || self.stream.wants_write()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;

    fn pair(limits: ConnLimits) -> (Conn, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        (Conn::new(Stream::Unix(a), limits), b)
    }

    fn req(id: u64) -> Message {
        Message::Request {
            method: "echo".into(),
            params: json!([id]),
            id: json!(id),
        }
    }

    #[test]
    fn requests_in_and_replies_out() {
        let (mut c, mut peer) = pair(ConnLimits::default());
        assert!(c.receive().unwrap().is_empty(), "nothing yet");
        peer.write_all(&req(1).to_bytes()).unwrap();
        peer.write_all(b" \n").unwrap();
        peer.write_all(&req(2).to_bytes()[..5]).unwrap();
        assert_eq!(c.receive().unwrap(), vec![req(1)]);
        peer.write_all(&req(2).to_bytes()[5..]).unwrap();
        assert_eq!(c.receive().unwrap(), vec![req(2)]);
        let reply = Message::Reply {
            result: json!([2]),
            id: json!(2),
        };
        c.send(&reply).unwrap();
        assert!(c.wants_write());
        c.flush().unwrap();
        assert!(!c.wants_write());
        let mut got = vec![0u8; 100];
        let n = peer.read(&mut got).unwrap();
        assert_eq!(
            Message::from_value(serde_json::from_slice(&got[..n]).unwrap()),
            Ok(reply)
        );
    }

    #[test]
    fn a_half_close_after_a_request_delivers_it_then_closed() {
        let (mut c, mut peer) = pair(ConnLimits::default());
        peer.write_all(&req(7).to_bytes()).unwrap();
        peer.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(c.receive().unwrap(), vec![req(7)]);
        assert!(c.peer_closed());
        assert!(matches!(c.receive(), Err(ConnError::Closed)));
    }

    #[test]
    fn reads_are_bounded_per_call() {
        let limits = ConnLimits {
            read_per_call: 64,
            ..ConnLimits::default()
        };
        let (mut c, mut peer) = pair(limits);
        let one = req(1).to_bytes();
        for _ in 0..10 {
            peer.write_all(&one).unwrap();
        }
        let mut n = 0;
        let mut calls = 0;
        while n < 10 {
            n += c.receive().unwrap().len();
            calls += 1;
            assert!(
                calls <= 10 * one.len() / 64 + 2,
                "bounded reads make progress"
            );
        }
        assert!(calls > 1, "more than one call for {} bytes", 10 * one.len());
    }

    #[test]
    fn garbage_and_non_messages_are_errors() {
        let (mut c, mut peer) = pair(ConnLimits::default());
        peer.write_all(b"hello").unwrap();
        assert!(matches!(
            c.receive(),
            Err(ConnError::Frame(FrameError::Syntax(_)))
        ));
        let (mut c, mut peer) = pair(ConnLimits::default());
        peer.write_all(b"{\"id\":1}").unwrap();
        let e = c.receive().unwrap_err();
        assert!(matches!(e, ConnError::Invalid(_)), "{e}");
    }

    /// A valid request then garbage, in one read: the request first, the
    /// error on the next call, and nothing after it.
    #[test]
    fn messages_before_garbage_come_first_then_the_error() {
        let (mut c, mut peer) = pair(ConnLimits::default());
        let mut bytes = req(1).to_bytes();
        bytes.extend(req(2).to_bytes());
        bytes.extend(b"garbage");
        bytes.extend(req(3).to_bytes());
        peer.write_all(&bytes).unwrap();
        assert_eq!(c.receive().unwrap(), vec![req(1), req(2)]);
        assert!(c.has_more_input(), "the owner is told to call again");
        assert!(matches!(
            c.receive(),
            Err(ConnError::Frame(FrameError::Syntax(_)))
        ));
        assert!(!c.has_more_input());
        assert!(c.receive().is_err(), "nothing is read past the garbage");
        // The same for a JSON value that is not a JSON-RPC message.
        let (mut c, mut peer) = pair(ConnLimits::default());
        let mut bytes = req(4).to_bytes();
        bytes.extend(b"{\"id\":1}");
        peer.write_all(&bytes).unwrap();
        assert_eq!(c.receive().unwrap(), vec![req(4)]);
        assert!(matches!(c.receive(), Err(ConnError::Invalid(_))));
    }

    #[test]
    fn long_messages_come_back_unparsed_in_their_place() {
        let (mut c, mut peer) = pair(ConnLimits::default());
        let long = Message::Request {
            id: json!(2),
            method: "echo".into(),
            params: json!(["x".repeat(100)]),
        };
        let bad = b"{\"id\":1}".repeat(20);
        let mut bytes = req(1).to_bytes();
        bytes.extend(long.to_bytes());
        bytes.extend(req(3).to_bytes());
        bytes.extend(
            json!((0..60).collect::<Vec<u32>>())
                .to_string()
                .into_bytes(),
        );
        peer.write_all(&bytes).unwrap();
        let got = c.receive_split(100).unwrap();
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(matches!(&got[0], Incoming::Message(m) if *m == req(1)));
        let Incoming::Raw(raw) = &got[1] else {
            panic!("the long one parsed: {:?}", got[1]);
        };
        assert_eq!(Incoming::parse(raw).unwrap(), long);
        assert!(matches!(&got[2], Incoming::Message(m) if *m == req(3)));
        // Not a JSON-RPC message: the error receive would have given.
        let Incoming::Raw(raw) = &got[3] else {
            panic!("the long bad one parsed");
        };
        assert!(matches!(Incoming::parse(raw), Err(ConnError::Invalid(_))));
        assert!(matches!(Incoming::parse(&bad), Err(ConnError::Frame(_))));
    }

    #[test]
    fn a_peer_that_never_reads_hits_the_budget() {
        let limits = ConnLimits {
            max_backlog: 1 << 20,
            ..ConnLimits::default()
        };
        let (mut c, _peer) = pair(limits);
        let big = Message::Notify {
            method: "update".into(),
            params: json!(["x".repeat(64 << 10)]),
        };
        let mut sent = 0usize;
        let err = loop {
            match c.send(&big) {
                Ok(()) => sent += 1,
                Err(e) => break e,
            }
            c.flush().unwrap();
            assert!(sent < 1000, "the budget must stop a peer that never reads");
        };
        let ConnError::Backlog { unsent, limit } = err else {
            panic!("{err}");
        };
        assert_eq!(limit, 1 << 20);
        assert!(unsent > limit && unsent <= limit + (65 << 10), "{unsent}");
    }
}
