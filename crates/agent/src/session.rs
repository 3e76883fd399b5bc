//! One connection's life: the handshake (HELLO, then FEATURES), the
//! bytes in ([`Agent::handle_input`]) framed and handled a message at a time
//! within the connection's output budget ([`Agent::pump`]), and the bytes
//! out ([`Agent::poll_transmit`], [`Agent::transmitted`]).
//!
//! Contract: a connection's unsent bytes stay within its budget except
//! for asynchronous messages; only a broken stream or a failed HELLO
//! closes it.

use super::*;

impl<D: Datapath> Agent<D> {
    /// A new controller connection (our HELLO is queued).
    pub fn connect(&mut self, now_ns: u64) -> ConnId {
        let id = self.next_conn;
        self.next_conn += 1;
        self.conns.insert(id, Conn::new(now_ns, self.conn_config));
        id
    }

    /// The connection is gone.
    pub fn disconnect(&mut self, id: ConnId) {
        let job = self.conns.remove(&id).and_then(|c| c.job);
        if let Some(Job::FlowMod(rounds)) = job {
            // A FLOW_MOD the controller sent is applied whole, whether or
            // not it stays to hear of it: what is left, now.
            self.finish_rounds(rounds, self.now_ns);
        }
        if self.follow_fail_mode(self.now_ns) {
            self.publish();
        }
        self.report_flow_changes(None);
        self.rewatch();
    }

    /// The bytes waiting to be written to connection `id`, oldest first
    /// (None: nothing, or no such connection). Tell the agent how many
    /// the socket took with [`Agent::transmitted`].
    pub fn poll_transmit(&self, id: ConnId) -> Option<&[u8]> {
        self.conns
            .get(&id)
            .map(|c| &c.outbox[..])
            .filter(|b| !b.is_empty())
    }

    /// `n` bytes of [`Agent::poll_transmit`]'s were written.
    pub fn transmitted(&mut self, id: ConnId, n: usize) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.outbox.consume(n);
            if c.outbox.is_empty() && c.monitors.is_paused() {
                self.resume_monitors(id);
            }
        }
    }

    /// The connection's socket failed: what waits for it is dropped.
    pub fn transmit_failed(&mut self, id: ConnId) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.outbox.clear();
        }
    }

    /// Whether any controller has completed the handshake: HELLO and a
    /// FEATURES_REQUEST (a bare TCP connect, or a HELLO alone, does not
    /// end standalone fail mode).
    pub fn has_controller(&self) -> bool {
        self.conns
            .values()
            .any(|c| c.phase == Phase::Open && c.features_seen && !c.service)
    }

    /// Marks `id` a service connection (a management tool such as
    /// sluice-ctl or ovs-ofctl): it speaks OpenFlow like any other, but does
    /// not count as a controller for the fail mode.
    pub fn set_service(&mut self, id: ConnId) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.service = true;
        }
    }

    /// Feeds bytes received on connection `id`, handling every complete
    /// message. Returns false when the connection must be closed (after its
    /// outbox is written).
    pub fn handle_input(&mut self, id: ConnId, data: &[u8], now_ns: u64) -> bool {
        self.now_ns = self.now_ns.max(now_ns);
        let Some(c) = self.conns.get_mut(&id) else {
            return false;
        };
        c.framer.push(data);
        c.last_rx_ns = now_ns;
        c.probe_sent = false;
        self.pump(id, now_ns)
    }

    /// Notes that the peer of `id` took bytes we sent: as good as input
    /// for the inactivity probe (its requests may be waiting, unread,
    /// behind a long reply).
    pub fn peer_alive(&mut self, id: ConnId, now_ns: u64) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.last_rx_ns = c.last_rx_ns.max(now_ns);
            c.probe_sent = false;
        }
    }

    /// Moves connection `id` on as far as its budget allows: the next
    /// messages of a long reply in progress, then the requests waiting in
    /// its input, one at a time, stopping when the unsent bytes pass the
    /// budget ([`ConnConfig::max_outbox`]). The daemon calls this after
    /// each write that made room. Returns false when the connection must
    /// be closed (after its outbox is written).
    pub fn pump(&mut self, id: ConnId, now_ns: u64) -> bool {
        loop {
            let Some(c) = self.conns.get_mut(&id) else {
                return false;
            };
            if c.phase == Phase::Closing || !c.within_budget() {
                break;
            }
            if c.job.is_some() {
                // A FLOW_MOD in rounds does one per call: the daemon turns
                // to its other connections and work between them.
                if self.continue_job(id, now_ns) == Progress::Yield {
                    break;
                }
                continue;
            }
            let Some(next) = c.framer.next_frame() else {
                break;
            };
            match next {
                Err(rej) => {
                    c.send(&rej.reply(), rej.xid);
                    if rej.fatal {
                        c.phase = Phase::Closing;
                    }
                }
                Ok(frame) => self.handle_frame(id, &frame, now_ns),
            }
        }
        if let Some(c) = self.conns.get_mut(&id) {
            // A started message, while we read: its deadline runs.
            let partial = c.framer.buffered() > 0 && !c.framer.has_frame() && c.wants_input();
            c.partial_since_ns = match (partial, c.partial_since_ns) {
                (false, _) => None,
                (true, None) => Some(now_ns),
                (true, since) => since,
            };
        }
        // A controller that completed the handshake ends standalone mode.
        if self.follow_fail_mode(now_ns) {
            self.publish();
        }
        self.report_flow_changes(None);
        self.publish_due(now_ns);
        self.conns
            .get(&id)
            .is_some_and(|c| c.phase != Phase::Closing)
    }

    pub(crate) fn send(&mut self, id: ConnId, msg: &Message, xid: u32) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.send(msg, xid);
        }
    }

    pub(crate) fn error(&mut self, id: ConnId, xid: u32, code: ErrorCode, frame: &Bytes) {
        let data = frame.slice(..frame.len().min(ofp::framer::ERROR_DATA_LEN));
        self.send(id, &Message::Error(ErrorMsg { code, data }), xid);
    }

    pub(crate) fn handle_frame(&mut self, id: ConnId, frame: &Bytes, now_ns: u64) {
        let phase = self.conns[&id].phase;
        let xid = ofp::Header::parse(frame).map_or(0, |h| h.xid);
        let version = frame.first().copied().unwrap_or(0);
        if phase == Phase::AwaitHello {
            self.hello(id, xid, version, frame);
            return;
        }
        let (version, table_id) = {
            let c = &self.conns[&id];
            (c.version, c.flow_mod_table_id)
        };
        // OpenFlow 1.4's flow monitor has no internal message: read here
        // (crate::monitor).
        if version == Version::V1_4
            && frame.get(1) == Some(&ofp::header::MsgType::MultipartRequest.value())
            && frame.get(8..10)
                == Some(&ofp::msg::nx_flow::monitor::OFPMP_FLOW_MONITOR.to_be_bytes()[..])
        {
            if let Err(code) = self.flow_monitor_request_14(id, xid, frame) {
                self.error(id, xid, code, frame);
            }
            return;
        }
        // An empty part of a multipart request with more to come: held
        // as it is (a request of its type may need a body to decode).
        if let Some(mp_type) = empty_part(frame, version) {
            if let Err(code) = self.multipart_request(id, xid, mp_type, true, None, frame, now_ns) {
                self.error(id, xid, code, frame);
            }
            return;
        }
        let decoded = if version == Version::V1_0 && table_id {
            ofp::of10::decode_table_id(frame)
        } else {
            Message::decode_as(frame, version)
        };
        let (_, msg) = match decoded {
            Ok(m) => m,
            Err(e) => {
                self.error(id, xid, e.code, frame);
                return;
            }
        };
        if let Err(e) = msg.validate() {
            self.error(id, xid, e.code, frame);
            return;
        }
        if let Err(code) = self.dispatch(id, xid, msg, frame, now_ns) {
            self.error(id, xid, code, frame);
        }
        self.report_flow_changes(Some((id, xid)));
    }

    /// The peer's first message: it must be a HELLO, and the version is
    /// the highest both speak ([`ofp::Versions::negotiate`]); none in
    /// common is HELLO_FAILED/INCOMPATIBLE, sent in the peer's version
    /// when we know it (else our lowest), and the connection closes.
    pub(crate) fn hello(&mut self, id: ConnId, xid: u32, version: u8, frame: &Bytes) {
        let c = self.conns.get_mut(&id).expect("live connection");
        let offered = c.config.versions;
        let is_hello = ofp::Header::parse(frame).is_some_and(|h| h.msg_type == ofp::MsgType::Hello);
        let agreed = match Message::decode(frame) {
            Ok((_, Message::Hello(h))) => offered.negotiate(&h),
            // A HELLO whose elements do not parse: its header's version
            // is still what the peer speaks up to (the spec says to
            // ignore what cannot be parsed).
            _ if is_hello => offered.negotiate(&ofp::msg::simple::Hello {
                version,
                elements: Vec::new(),
            }),
            _ => None,
        };
        if let Some(v) = agreed {
            c.version = v;
            c.phase = Phase::Open;
            tracing::info!(conn = id, version = v.name(), "OpenFlow version agreed");
        } else {
            c.version = Version::from_wire(version)
                .or(offered.lowest())
                .unwrap_or(Version::V1_3);
            let data = Bytes::from(format!(
                "this bridge speaks {} (protocols); the peer offered none of them",
                offered.names()
            ));
            c.send(
                &Message::Error(ErrorMsg {
                    code: ErrorCode::HelloFailed(HelloFailedCode::Incompatible),
                    data,
                }),
                xid,
            );
            c.phase = Phase::Closing;
        }
    }
}

/// The multipart type of `frame` if it is a MULTIPART_REQUEST of a known
/// type with OFPMPF_REQ_MORE and an empty body (OpenFlow 1.3 and 1.4:
/// 1.0 and 1.2 have no REQ_MORE, and 1.5 numbers the types otherwise).
fn empty_part(frame: &[u8], version: Version) -> Option<ofp::msg::multipart::MultipartType> {
    let h = ofp::Header::parse(frame)?;
    if !matches!(version, Version::V1_3 | Version::V1_4)
        || h.version != version.wire()
        || h.msg_type != ofp::MsgType::MultipartRequest
        || frame.len() != ofp::header::HEADER_LEN + 8
        || u16::from_be_bytes([frame[10], frame[11]]) & ofp::msg::multipart::MPF_MORE == 0
    {
        return None;
    }
    let t = ofp::msg::multipart::MultipartType::from(u16::from_be_bytes([frame[8], frame[9]]));
    (!matches!(t, ofp::msg::multipart::MultipartType::Unknown(_))).then_some(t)
}
