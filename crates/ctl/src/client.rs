//! A blocking OpenFlow client for one switch connection, of the version
//! negotiated from those `-O` offers ([`Client::version`]).
//!
//! [`Client::connect`] opens the endpoint and exchanges HELLOs. Requests
//! are queued with [`Client::send`] (which returns the xid) and written by
//! [`Client::pump`], which also reads whatever the switch sent: writing and
//! reading happen in one poll(2) loop, so a client pushing a million
//! flow-mods never deadlocks against a switch answering errors. Replies are
//! collected per xid; asynchronous messages (PACKET_IN, PORT_STATUS, ...)
//! are queued for [`Client::next_async`].
//!
//! Why not tokio: a command-line tool with one connection and no other
//! work gains nothing from an async runtime; poll(2) on one fd is enough.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ofp::msg::multipart::{MultipartReply, MultipartRequest, MultipartRequestBody, MPF_MORE};
use ofp::msg::simple::HelloElem;
use ofp::{ErrorCode, Framer, Message, MsgType, Version, Versions};

use crate::target::{Stream, Target};

/// What can go wrong talking to a switch.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{target}: {err}")]
    Connect { target: String, err: io::Error },
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    #[error("the switch closed the connection")]
    Closed,
    #[error("no answer from the switch within {0:?}")]
    Timeout(Duration),
    #[error("the switch refused: {0}")]
    Refused(ErrorCode),
    #[error("the switch sent a message sluice-ctl cannot read: {0}")]
    Undecodable(ofp::OfpError),
    #[error("no OpenFlow version in common with the switch: {0}")]
    Version(String),
    #[error("unexpected reply: {0}")]
    Unexpected(String),
}

/// Result alias.
pub type Result<T> = std::result::Result<T, ClientError>;

/// One connection to a switch.
pub struct Client {
    stream: Stream,
    framer: Framer,
    out: Vec<u8>,
    out_pos: usize,
    next_xid: u32,
    /// Replies and errors by xid, in arrival order.
    replies: HashMap<u32, Vec<Message>>,
    /// Asynchronous messages (xid 0 or not a reply to us), in arrival order.
    asyncs: VecDeque<(u32, Message)>,
    /// How long to wait for an answer.
    pub timeout: Duration,
    /// The versions offered in our HELLO.
    offered: Versions,
    /// The version negotiated (every message in and out is of it).
    version: Version,
}

const READ_CHUNK: usize = 256 * 1024;
/// Queue at most this much before writing some out.
const OUT_HIGH_WATER: usize = 4 << 20;

impl Client {
    /// Connects to `target` and completes the HELLO exchange, offering
    /// `versions`.
    pub fn connect(
        target: &Target,
        timeout: Duration,
        tls: Option<&tls::Tls>,
        versions: Versions,
    ) -> Result<Client> {
        let stream = target
            .open(timeout, tls)
            .map_err(|err| ClientError::Connect {
                target: target.to_string(),
                err,
            })?;
        let mut c = Client {
            stream,
            framer: Framer::new(),
            out: Vec::with_capacity(1 << 16),
            out_pos: 0,
            next_xid: 1,
            replies: HashMap::new(),
            asyncs: VecDeque::new(),
            timeout,
            offered: versions,
            version: versions.highest().unwrap_or(Version::V1_3),
        };
        c.hello()?;
        crate::print::set_version(c.version);
        Ok(c)
    }

    /// The OpenFlow version the connection speaks.
    pub fn version(&self) -> Version {
        self.version
    }

    fn hello(&mut self) -> Result<()> {
        let hello = Message::Hello(self.offered.hello());
        let xid = self.send(&hello);
        let deadline = Instant::now() + self.timeout;
        loop {
            // The switch's HELLO is queued as an async message (its xid is
            // the switch's own); an error to our HELLO ends it.
            if let Some(i) = self
                .asyncs
                .iter()
                .position(|(_, m)| matches!(m, Message::Hello(_)))
            {
                let (_, m) = self.asyncs.remove(i).expect("found above");
                if let Message::Hello(h) = m {
                    match self.offered.negotiate(&h) {
                        Some(v) => self.version = v,
                        None => {
                            let theirs = h
                                .elements
                                .iter()
                                .find_map(|e| match e {
                                    HelloElem::VersionBitmap(b) => b.first().copied(),
                                    _ => None,
                                })
                                .map_or_else(
                                    || format!("up to wire version {}", h.version),
                                    |b| {
                                        let names: Vec<String> = (0..32u8)
                                            .filter(|n| b & (1 << n) != 0)
                                            .map(|n| {
                                                Version::from_wire(n)
                                                    .map_or(format!("wire version {n}"), |v| {
                                                        v.name().to_string()
                                                    })
                                            })
                                            .collect();
                                        names.join(",")
                                    },
                                );
                            return Err(ClientError::Version(format!(
                                "we offered {}, the switch {theirs}",
                                self.offered.names()
                            )));
                        }
                    }
                }
                return Ok(());
            }
            if let Some(Message::Error(e)) = self.take_reply(xid).into_iter().next() {
                return Err(ClientError::Version(format!("{}", e.code)));
            }
            self.pump_until(deadline)?;
        }
    }

    /// The xid of the message sent last (reply headers print it, as
    /// ovs-ofctl does).
    pub fn last_xid(&self) -> u32 {
        self.next_xid.wrapping_sub(1)
    }

    /// Queues `msg` with a fresh xid and returns the xid. Writes out when
    /// much is queued.
    pub fn send(&mut self, msg: &Message) -> u32 {
        let xid = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        // A message too long for OpenFlow is not sent; the caller's wait
        // for its answer ends in a timeout.
        if let Err(e) = msg.encode_as(self.version, xid, &mut self.out) {
            eprintln!("sluice-ctl: a {:?} not sent: {e}", msg.msg_type());
        }
        xid
    }

    /// Takes `n` consecutive xids for messages the caller encodes itself;
    /// returns the first.
    pub fn reserve_xids(&mut self, n: u32) -> u32 {
        let first = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(n).max(1);
        first
    }

    /// Queues already-encoded messages and writes them out, reading what
    /// the switch answers meanwhile; returns when all but a bounded tail
    /// is written.
    pub fn send_bytes(&mut self, wire: &[u8]) -> Result<()> {
        for chunk in wire.chunks(1 << 20) {
            self.out.extend_from_slice(chunk);
            while self.out.len() - self.out_pos > OUT_HIGH_WATER {
                if !self.pump(Some(self.timeout))? {
                    return Err(ClientError::Timeout(self.timeout));
                }
            }
        }
        Ok(())
    }

    /// Whether everything queued has been written.
    pub fn flushed(&self) -> bool {
        self.out_pos == self.out.len()
    }

    /// One round of I/O: waits up to `wait` (None: forever) until the
    /// socket can be written (if anything is queued) or read, then does
    /// both as far as they go without blocking. Returns whether anything
    /// moved.
    pub fn pump(&mut self, wait: Option<Duration>) -> Result<bool> {
        let fd: RawFd = self.stream.as_raw_fd();
        let mut events = libc::POLLIN;
        if !self.flushed() || self.stream.wants_write() {
            events |= libc::POLLOUT;
        }
        let mut pfd = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        let ms = wait.map_or(-1, |d| d.as_millis().min(i32::MAX as u128) as i32);
        let n = match netdev::os::poll(std::slice::from_mut(&mut pfd), ms) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            return Ok(false);
        }
        let mut moved = false;
        if pfd.revents & libc::POLLOUT != 0 || self.stream.wants_write() {
            moved |= self.write_some()?;
        }
        if pfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            moved |= self.read_some()?;
        }
        Ok(moved)
    }

    fn write_some(&mut self) -> Result<bool> {
        let mut moved = false;
        while self.out_pos < self.out.len() {
            match self.stream.write(&self.out[self.out_pos..]) {
                Ok(0) => return Err(ClientError::Closed),
                Ok(n) => {
                    self.out_pos += n;
                    moved = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        if self.out_pos == self.out.len() {
            self.out.clear();
            self.out_pos = 0;
        }
        self.stream.flush_tls()?;
        Ok(moved)
    }

    fn read_some(&mut self) -> Result<bool> {
        let mut buf = vec![0u8; READ_CHUNK];
        let mut moved = false;
        loop {
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    if moved {
                        break;
                    }
                    return Err(ClientError::Closed);
                }
                Ok(n) => {
                    self.framer.push(&buf[..n]);
                    moved = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        self.sort_frames()?;
        Ok(moved)
    }

    /// Files every whole frame received under its xid (replies) or as an
    /// asynchronous message.
    fn sort_frames(&mut self) -> Result<()> {
        while let Some(next) = self.framer.next_frame() {
            let decoded = next
                .map_err(|rej| rej.error)
                .and_then(|frame| Message::decode_as(&frame, self.version));
            let (h, m) = match decoded {
                Ok(x) => x,
                Err(e) => return Err(ClientError::Undecodable(e)),
            };
            let asynchronous = matches!(
                h.msg_type,
                MsgType::Hello
                    | MsgType::PacketIn
                    | MsgType::FlowRemoved
                    | MsgType::PortStatus
                    | MsgType::EchoRequest
            ) || h.xid == 0
                || h.xid >= self.next_xid
                || is_nicira_packet_in(&m);
            if let Message::EchoRequest(d) = &m {
                // Keepalive from the switch: answer at once.
                let _ = Message::EchoReply(d.clone()).encode_as(self.version, h.xid, &mut self.out);
            }
            if asynchronous {
                self.asyncs.push_back((h.xid, m));
            } else {
                self.replies.entry(h.xid).or_default().push(m);
            }
        }
        Ok(())
    }

    fn pump_until(&mut self, deadline: Instant) -> Result<()> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ClientError::Timeout(self.timeout));
        }
        self.pump(Some(left))?;
        Ok(())
    }

    /// Everything received so far for `xid` (removed).
    pub fn take_reply(&mut self, xid: u32) -> Vec<Message> {
        self.replies.remove(&xid).unwrap_or_default()
    }

    /// Errors received for any xid in `xids` so far: (xid, error), removed.
    pub fn take_errors(&mut self) -> Vec<(u32, ErrorCode, Bytes)> {
        let mut errs = Vec::new();
        self.replies.retain(|xid, msgs| {
            msgs.retain(|m| match m {
                Message::Error(e) => {
                    errs.push((*xid, e.code, e.data.clone()));
                    false
                }
                _ => true,
            });
            !msgs.is_empty()
        });
        errs.sort_by_key(|e| e.0);
        errs
    }

    /// Sends `msg` and waits for its one reply; an OFPT_ERROR becomes
    /// [`ClientError::Refused`].
    pub fn request(&mut self, msg: &Message) -> Result<Message> {
        let xid = self.send(msg);
        let deadline = Instant::now() + self.timeout;
        loop {
            let mut got = self.take_reply(xid);
            if !got.is_empty() {
                return match got.remove(0) {
                    Message::Error(e) => Err(ClientError::Refused(e.code)),
                    m => Ok(m),
                };
            }
            self.pump_until(deadline)?;
        }
    }

    /// Sends a multipart request and gathers every part of the reply (until
    /// one without OFPMPF_REPLY_MORE).
    pub fn multipart(&mut self, body: MultipartRequestBody) -> Result<Vec<MultipartReply>> {
        self.multipart_parts(vec![body])
    }

    /// Sends one multipart request in several messages (`bodies`, one xid,
    /// OFPMPF_REQ_MORE on all but the last), as a request too long for one
    /// message goes, and waits for the whole reply.
    pub fn multipart_parts(
        &mut self,
        bodies: Vec<MultipartRequestBody>,
    ) -> Result<Vec<MultipartReply>> {
        let xid = self.reserve_xids(1);
        let n = bodies.len();
        for (i, body) in bodies.into_iter().enumerate() {
            let flags = if i + 1 < n { MPF_MORE } else { 0 };
            let _ = Message::MultipartRequest(MultipartRequest { flags, body }).encode_as(
                self.version,
                xid,
                &mut self.out,
            );
        }
        let mut parts = Vec::new();
        let mut deadline = Instant::now() + self.timeout;
        loop {
            for m in self.take_reply(xid) {
                match m {
                    Message::Error(e) => return Err(ClientError::Refused(e.code)),
                    Message::MultipartReply(r) => {
                        let more = r.flags & MPF_MORE != 0;
                        parts.push(r);
                        if !more {
                            return Ok(parts);
                        }
                        deadline = Instant::now() + self.timeout;
                    }
                    other => {
                        return Err(ClientError::Unexpected(format!("{:?}", other.msg_type())))
                    }
                }
            }
            self.pump_until(deadline)?;
        }
    }

    /// Sends a barrier and waits for its reply, writing everything queued
    /// before it. Errors for earlier requests stay for [`Client::take_errors`].
    pub fn barrier(&mut self) -> Result<()> {
        let xid = self.send(&Message::BarrierRequest);
        let mut deadline = Instant::now() + self.timeout;
        loop {
            let got = self.take_reply(xid);
            if got.iter().any(|m| matches!(m, Message::BarrierReply)) {
                return Ok(());
            }
            if let Some(Message::Error(e)) = got.into_iter().next() {
                return Err(ClientError::Refused(e.code));
            }
            // While the queue drains, progress resets the clock: a million
            // flow-mods may take longer than one timeout to write.
            if self.pump(Some(deadline.saturating_duration_since(Instant::now())))? {
                deadline = Instant::now() + self.timeout;
            } else if Instant::now() >= deadline {
                return Err(ClientError::Timeout(self.timeout));
            }
        }
    }

    /// The next asynchronous message, waiting up to `wait` (None: forever).
    pub fn next_async(&mut self, wait: Option<Duration>) -> Result<Option<(u32, Message)>> {
        let deadline = wait.map(|w| Instant::now() + w);
        loop {
            if let Some(m) = self.asyncs.pop_front() {
                return Ok(Some(m));
            }
            // Replies nobody waits for (e.g. echo replies) are dropped here.
            self.replies.clear();
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|l| l.is_zero()) {
                return Ok(None);
            }
            self.pump(left)?;
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read_bytes(buf)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_bytes(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Whether `m` is one of Open vSwitch's packet-ins (NXT_PACKET_IN,
/// NXT_PACKET_IN2): asynchronous whatever its xid.
fn is_nicira_packet_in(m: &Message) -> bool {
    use ofp::msg::nxt;
    matches!(m, Message::Experimenter(e) if e.experimenter == nxt::NX_VENDOR_ID
        && matches!(e.exp_type, nxt::NXT_PACKET_IN | nxt::NXT_PACKET_IN2))
}
