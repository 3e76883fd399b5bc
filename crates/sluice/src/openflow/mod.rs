//! The OpenFlow side of the daemon: endpoints, sockets, and the loop that
//! moves bytes between them and each bridge's sans-IO [`agent::Agent`].
//! [`Control`] owns the agent; the rest of the daemon reads it and gives
//! it its other inputs (ports, links, commands, a reload's settings)
//! through `feed.rs`.
//!
//! Endpoints (as Open vSwitch spells them): `tcp:HOST:PORT` and
//! `tls:HOST:PORT` (or `ssl:`; connect to a controller, reconnecting with
//! exponential backoff from 1 s to 8 s), `ptcp:PORT[:IP]`,
//! `ptls:PORT[:IP]` (or `pssl:`) and `punix:PATH` (accept connections;
//! `sluice-ctl` and `ovs-ofctl` use the bridge's `punix` management
//! socket). TLS endpoints use the daemon's one identity (`[tls]`: key,
//! certificate, CA) with mutual authentication: see the `tls` crate.
//!
//! Everything here runs on the daemon's control thread; sockets are
//! non-blocking and waited on with one `poll(2)`.

mod endpoint;
mod feed;
mod listen;
mod loglimit;
mod view;

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use agent::{Agent, ConnId};
use arc_swap::ArcSwap;
use bytes::Bytes;
use datapath::channel::Channels;

pub use endpoint::Endpoint;
/// One connection's socket, whatever its transport (shared with the
/// JSON-RPC side: unixctl, OVSDB).
use jsonrpc::Stream;
use listen::{bind_unix, Listener, ListenerState, ACCEPT_BACKOFF_NS};
use loglimit::LogLimit;
pub use view::{ConnView, View};

use crate::dial;

/// How many times one round lets a connection go on after a write made
/// room (each adds about one message of a long reply, or the replies to
/// the requests that fit the budget): fairness between connections.
const MAX_PUMPS_PER_ROUND: usize = 16;

/// An active connection to a controller, with its backoff.
struct Active {
    target: String,
    tls: bool,
    conn: Option<ConnId>,
    /// On the way to a connection: resolving the name, or connecting.
    dialing: Option<Dialing>,
    next_try_ns: u64,
    backoff_ns: u64,
}

enum Dialing {
    Resolving,
    /// A non-blocking connect in progress, and when to give up on it.
    Connecting(TcpStream, u64),
}

/// How long a connect(2) to a controller may take.
const CONNECT_TIMEOUT_NS: u64 = 5_000_000_000;

/// Connections one listener holds at most, unless the configuration says
/// otherwise (`max_connections` in `[bridge]`).
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// One bridge's OpenFlow side.
pub struct Control {
    /// Private: the daemon reads it and feeds it through `feed.rs`.
    agent: Agent<datapath::Bridge>,
    listeners: Vec<Listener>,
    /// The endpoint each listener serves (same order as `listeners`).
    endpoints: Vec<Endpoint>,
    actives: Vec<Active>,
    streams: HashMap<ConnId, Stream>,
    /// Where each connection came from (for logs).
    peers: HashMap<ConnId, String>,
    pub channels: Arc<Channels>,
    bridge: String,
    /// The daemon's TLS identity, when it has one.
    tls: Option<tls::Tls>,
    read_buf: Vec<u8>,
    /// Per listener (same order as `listeners`).
    listener_state: Vec<ListenerState>,
    /// Which listener each accepted connection came from.
    origin: HashMap<ConnId, usize>,
    max_connections: usize,
    log_limit: LogLimit,
    /// Resolves controller names off this thread (only when a target is a
    /// name, not an address).
    resolver: Option<dial::Resolver>,
    now_ns: u64,
    /// What other threads see of this side (`view`), and when it was
    /// last published.
    view: Arc<ArcSwap<View>>,
    view_at_ns: u64,
    /// PACKET_INs closed connections did not take (their
    /// `packet_in_dropped`), so the view's total only grows.
    packet_in_limited_closed: u64,
}

/// Bytes read from a socket at a time.
const READ_BUF: usize = 256 * 1024;

impl Control {
    /// Opens the bridge's listening endpoints; active ones connect from the
    /// loop.
    pub fn new(
        bridge: &str,
        agent: Agent<datapath::Bridge>,
        channels: Arc<Channels>,
        endpoints: &[Endpoint],
        tls: Option<tls::Tls>,
        max_connections: usize,
    ) -> Result<Control, String> {
        let mut c = Control {
            agent,
            listeners: Vec::new(),
            endpoints: Vec::new(),
            actives: Vec::new(),
            streams: HashMap::new(),
            peers: HashMap::new(),
            channels,
            bridge: bridge.to_string(),
            tls,
            read_buf: vec![0u8; READ_BUF],
            listener_state: Vec::new(),
            origin: HashMap::new(),
            max_connections,
            log_limit: LogLimit::default(),
            resolver: None,
            now_ns: 0,
            view: Arc::default(),
            view_at_ns: 0,
            packet_in_limited_closed: 0,
        };
        for e in endpoints {
            c.open_endpoint(e)?;
        }
        Ok(c)
    }

    /// Opens a listening endpoint, or adds a controller to connect to.
    fn open_endpoint(&mut self, e: &Endpoint) -> Result<(), String> {
        if e.is_tls() && self.tls.is_none() {
            return Err(format!(
                "{e:?}: TLS endpoints need the daemon's [tls] private_key, certificate and ca_cert"
            ));
        }
        let bridge = self.bridge.as_str();
        match e {
            Endpoint::PTcp(addr) | Endpoint::PTls(addr) => {
                let kind = if e.is_tls() { "ptls" } else { "ptcp" };
                let l = TcpListener::bind(addr).map_err(|er| format!("{kind}:{addr}: {er}"))?;
                l.set_nonblocking(true).map_err(|er| er.to_string())?;
                if !e.is_tls() && !addr.ip().is_loopback() {
                    tracing::warn!(
                        bridge,
                        "{kind}:{addr}: OpenFlow in plaintext on a non-loopback address: \
                         anyone who reaches it controls the switch (ptls: authenticates)"
                    );
                }
                self.add_listener(Listener::Tcp(l, e.is_tls()), e);
            }
            Endpoint::PUnix(path) | Endpoint::Mgmt(path) => {
                let l = bind_unix(path)?;
                let service = matches!(e, Endpoint::Mgmt(_));
                self.add_listener(Listener::Unix(l, path.clone(), service), e);
            }
            Endpoint::Tcp(target) | Endpoint::Tls(target) => self.actives.push(Active {
                target: target.clone(),
                tls: e.is_tls(),
                conn: None,
                dialing: None,
                next_try_ns: 0,
                backoff_ns: 1_000_000_000,
            }),
        }
        Ok(())
    }

    fn add_listener(&mut self, l: Listener, e: &Endpoint) {
        self.listeners.push(l);
        self.endpoints.push(e.clone());
        self.listener_state.push(ListenerState::default());
    }

    /// Makes the bridge's endpoints `wanted` (a configuration reload):
    /// endpoints in both lists are untouched, with their connections;
    /// removed ones are closed, with their connections; new ones are
    /// opened. What could not be opened is returned, one line each (the
    /// rest is applied).
    pub fn set_endpoints(&mut self, wanted: &[Endpoint]) -> Vec<String> {
        let mut problems = Vec::new();
        // Listeners: keep, or close with the connections they accepted.
        let mut i = 0;
        while i < self.listeners.len() {
            if wanted.contains(&self.endpoints[i]) {
                i += 1;
                continue;
            }
            let gone: Vec<ConnId> = self
                .origin
                .iter()
                .filter(|(_, &o)| o == i)
                .map(|(&id, _)| id)
                .collect();
            for id in gone {
                self.close(id, "its listener was removed from the configuration");
            }
            tracing::info!(bridge = %self.bridge, endpoint = ?self.endpoints[i], "listener closed (configuration)");
            self.listeners.remove(i);
            self.endpoints.remove(i);
            self.listener_state.remove(i);
            for o in self.origin.values_mut() {
                if *o > i {
                    *o -= 1;
                }
            }
        }
        // Controllers: keep, or drop with their connection.
        let active = |a: &Active| {
            if a.tls {
                Endpoint::Tls(a.target.clone())
            } else {
                Endpoint::Tcp(a.target.clone())
            }
        };
        let (keep, drop): (Vec<Active>, Vec<Active>) = std::mem::take(&mut self.actives)
            .into_iter()
            .partition(|a| wanted.contains(&active(a)));
        self.actives = keep;
        for a in drop {
            if let Some(id) = a.conn {
                self.close(id, "its controller was removed from the configuration");
            }
            tracing::info!(bridge = %self.bridge, controller = %a.target, "controller removed (configuration)");
        }
        for e in wanted {
            let have = self.endpoints.contains(e) || self.actives.iter().any(|a| active(a) == *e);
            if have {
                continue;
            }
            match self.open_endpoint(e) {
                Ok(()) => {
                    tracing::info!(bridge = %self.bridge, endpoint = ?e, "endpoint added (configuration)")
                }
                Err(p) => problems.push(p),
            }
        }
        problems
    }

    /// Descriptors to poll, with the events wanted.
    pub fn poll_fds(&self, out: &mut Vec<libc::pollfd>) {
        let mut add = |fd, events| {
            out.push(libc::pollfd {
                fd,
                events,
                revents: 0,
            })
        };
        add(self.channels.packet_in_wake.fd(), libc::POLLIN);
        for (l, st) in self.listeners.iter().zip(&self.listener_state) {
            if st.resting_until_ns > self.now_ns {
                continue;
            }
            match l {
                Listener::Tcp(l, _) => add(l.as_raw_fd(), libc::POLLIN),
                Listener::Unix(l, _, _) => add(l.as_raw_fd(), libc::POLLIN),
            }
        }
        for a in &self.actives {
            if let Some(Dialing::Connecting(s, _)) = &a.dialing {
                add(s.as_raw_fd(), libc::POLLOUT);
            }
        }
        for (id, s) in &self.streams {
            let c = self.agent.conn(*id);
            // Writable also wakes a connection with work left over from a
            // round's share (see MAX_PUMPS_PER_ROUND).
            let want_out =
                s.wants_write() || c.is_some_and(|c| !c.outbox.is_empty() || c.has_work());
            // Over its budget, a connection is not read: its requests wait
            // in the kernel until the peer takes its replies.
            let want_in = c.is_none_or(|c| c.wants_input());
            let events =
                if want_in { libc::POLLIN } else { 0 } | if want_out { libc::POLLOUT } else { 0 };
            add(s.fd(), events);
        }
    }

    fn adopt(&mut self, s: Stream, peer: String, service: bool, now_ns: u64) -> ConnId {
        let id = self.agent.connect(now_ns);
        if service {
            self.agent.set_service(id);
            tracing::debug!(bridge = %self.bridge, peer = %peer, conn = id, "management connection");
        } else if self.log_limit.allow(&self.bridge, now_ns) {
            tracing::info!(bridge = %self.bridge, peer = %peer, conn = id, "controller connection");
        }
        self.streams.insert(id, s);
        self.peers.insert(id, peer);
        id
    }

    fn close(&mut self, id: ConnId, why: &str) {
        let service = self.agent.conn(id).is_some_and(|c| c.service);
        if let Some(peer) = self.peers.remove(&id) {
            // Management clients (sluice-ctl) come and go all day: debug
            // level, as their arrival.
            if service {
                tracing::debug!(bridge = %self.bridge, peer = %peer, conn = id, why, "management connection closed");
            } else if self.log_limit.allow(&self.bridge, self.now_ns) {
                tracing::info!(bridge = %self.bridge, peer = %peer, conn = id, why, "controller connection closed");
            }
        }
        if let Some(i) = self.origin.remove(&id) {
            if let Some(st) = self.listener_state.get_mut(i) {
                st.live = st.live.saturating_sub(1);
            }
        }
        self.streams.remove(&id);
        if let Some(c) = self.agent.conn(id) {
            self.packet_in_limited_closed += c.packet_in_dropped;
        }
        self.agent.disconnect(id);
        for a in &mut self.actives {
            if a.conn == Some(id) {
                a.conn = None;
            }
        }
    }

    /// Does everything that is ready: accepts, reads, hands over
    /// PACKET_INs, writes, reconnects, keepalives.
    pub fn service(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
        // Accept.
        let mut accepted = Vec::new();
        for (i, l) in self.listeners.iter().enumerate() {
            if self.listener_state[i].resting_until_ns > now_ns {
                continue;
            }
            loop {
                let got = match l {
                    Listener::Tcp(l, tls) => l.accept().map(|(s, a)| {
                        let ready = s.set_nodelay(true).and(s.set_nonblocking(true));
                        let stream = match (&self.tls, tls) {
                            (Some(t), true) => ready
                                .and_then(|_| tls::TlsStream::server(s, t.server.clone()))
                                .map(|t| Stream::Tls(Box::new(t))),
                            _ => ready.map(|_| Stream::Tcp(s)),
                        };
                        let scheme = if *tls { "tls" } else { "tcp" };
                        (stream, format!("{scheme}:{a}"), false)
                    }),
                    Listener::Unix(l, p, service) => l.accept().map(|(s, _)| {
                        (
                            s.set_nonblocking(true).map(|_| Stream::Unix(s)),
                            format!("unix:{}", p.display()),
                            *service,
                        )
                    }),
                };
                match got {
                    Ok((Ok(s), peer, service)) => {
                        let st = &mut self.listener_state[i];
                        if st.live >= self.max_connections {
                            // Refused: the stream is dropped (closed) here.
                            if self.log_limit.allow(&self.bridge, now_ns) {
                                tracing::warn!(bridge = %self.bridge, peer = %peer, max = self.max_connections,
                                    "connection refused: the listener holds its maximum");
                            }
                            continue;
                        }
                        st.live += 1;
                        accepted.push((s, peer, service, i));
                    }
                    Ok((Err(_), _, _)) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        // EMFILE and the like: rest instead of spinning.
                        if self.log_limit.allow(&self.bridge, now_ns) {
                            tracing::warn!(bridge = %self.bridge, "accept: {e}; not accepting for 200 ms");
                        }
                        self.listener_state[i].resting_until_ns = now_ns + ACCEPT_BACKOFF_NS;
                        break;
                    }
                }
            }
        }
        for (s, peer, service, i) in accepted {
            let id = self.adopt(s, peer, service, now_ns);
            self.origin.insert(id, i);
        }
        // Connect: names resolved off this thread, connect(2) non-blocking.
        if let Some(r) = &self.resolver {
            for (target, addr) in r.answers() {
                for i in 0..self.actives.len() {
                    let a = &self.actives[i];
                    if a.target != target || !matches!(a.dialing, Some(Dialing::Resolving)) {
                        continue;
                    }
                    match &addr {
                        Ok(ad) => self.start_dial(i, ad, now_ns),
                        Err(e) => {
                            tracing::debug!(bridge = %self.bridge, target = %target, "resolving: {e}");
                            self.dial_failed(i, now_ns);
                        }
                    }
                }
            }
        }
        for i in 0..self.actives.len() {
            let a = &self.actives[i];
            if a.conn.is_some() {
                continue;
            }
            match &a.dialing {
                None if now_ns >= a.next_try_ns => match dial::literal(&a.target) {
                    Some(ad) => self.start_dial(i, &ad, now_ns),
                    None => {
                        if self.resolver.is_none() {
                            self.resolver = dial::Resolver::new().ok();
                        }
                        match &self.resolver {
                            Some(r) => {
                                r.ask(&a.target);
                                self.actives[i].dialing = Some(Dialing::Resolving);
                            }
                            None => self.dial_failed(i, now_ns),
                        }
                    }
                },
                Some(Dialing::Connecting(s, deadline)) => match dial::progress(s) {
                    dial::Progress::Done => {
                        let Some(Dialing::Connecting(s, _)) = self.actives[i].dialing.take() else {
                            continue;
                        };
                        let (target, use_tls) =
                            (self.actives[i].target.clone(), self.actives[i].tls);
                        match self.client_stream(s, &target, use_tls) {
                            Ok(st) => {
                                let scheme = if use_tls { "tls" } else { "tcp" };
                                let id =
                                    self.adopt(st, format!("{scheme}:{target}"), false, now_ns);
                                let a = &mut self.actives[i];
                                a.conn = Some(id);
                                a.backoff_ns = 1_000_000_000;
                            }
                            Err(_) => self.dial_failed(i, now_ns),
                        }
                    }
                    dial::Progress::Pending if now_ns < *deadline => {}
                    dial::Progress::Pending => {
                        tracing::debug!(bridge = %self.bridge, target = %a.target, "connect: timed out");
                        self.dial_failed(i, now_ns);
                    }
                    dial::Progress::Failed(e) => {
                        tracing::debug!(bridge = %self.bridge, target = %a.target, "connect: {e}");
                        self.dial_failed(i, now_ns);
                    }
                },
                _ => {}
            }
        }
        // Read (into one buffer kept for the daemon's life: allocating
        // and clearing 256 KB per round showed in the flow-push profile).
        let mut buf = std::mem::take(&mut self.read_buf);
        if buf.len() != READ_BUF {
            buf = vec![0u8; READ_BUF];
        }
        let ids: Vec<ConnId> = self.streams.keys().copied().collect();
        for id in ids {
            while let Some(s) = self.streams.get_mut(&id) {
                if !self.agent.conn(id).is_none_or(|c| c.wants_input()) {
                    break;
                }
                match s.read(&mut buf) {
                    Ok(0) => {
                        self.close(id, "peer closed");
                        break;
                    }
                    Ok(n) => {
                        if !self.agent.handle_input(id, &buf[..n], now_ns) {
                            self.flush(id);
                            self.close(id, "protocol error");
                            break;
                        }
                        if n < buf.len() {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.close(id, &e.to_string());
                        break;
                    }
                }
            }
        }
        self.read_buf = buf;
        // Frames for the controller.
        self.channels.packet_in_wake.clear();
        let mut n = 0;
        while let Some(m) = self.channels.packet_in.pop() {
            self.agent.handle_packet_in_tunneled(
                m.in_port,
                &m.tunnel,
                m.ctl,
                Bytes::from(m.frame),
                now_ns,
            );
            n += 1;
            if n >= 4096 {
                self.channels.packet_in_wake.wake();
                break;
            }
        }
        // Flows packets taught.
        let mut learned = Vec::new();
        while learned.len() < 4096 {
            match self.channels.learn.pop() {
                Some(l) => learned.push(l),
                None => break,
            }
        }
        if !learned.is_empty() {
            self.agent.handle_learned(&learned, now_ns);
            if learned.len() == 4096 {
                self.channels.packet_in_wake.wake();
            }
        }
        // Write, and let each connection go on as far as what was written
        // makes room; close a peer that lets its backlog pass the hard cap.
        let ids: Vec<ConnId> = self.streams.keys().copied().collect();
        for id in ids {
            let before = self.agent.conn(id).map_or(0, |c| c.outbox.len());
            self.flush(id);
            if self.agent.conn(id).is_some_and(|c| c.outbox.len() < before) {
                // The peer takes what we send: it is alive even while its
                // own requests wait behind a long reply.
                self.agent.peer_alive(id, now_ns);
            }
            for _ in 0..MAX_PUMPS_PER_ROUND {
                let Some(c) = self.agent.conn(id) else {
                    break;
                };
                if !c.has_work() {
                    break;
                }
                let before = c.outbox.len();
                if !self.agent.pump(id, now_ns) {
                    self.flush(id);
                    self.close(id, "protocol error");
                    break;
                }
                let Some(c) = self.agent.conn(id) else {
                    break;
                };
                if c.in_rounds() {
                    // One round of a big FLOW_MOD per turn of the loop:
                    // the other connections, packet-ins and timers come
                    // between rounds.
                    self.flush(id);
                    break;
                }
                if c.outbox.len() == before {
                    break; // only part of a message waiting
                }
                self.flush(id);
                if self.agent.conn(id).is_some_and(|c| !c.outbox.is_empty()) {
                    break; // the socket is full: POLLOUT will bring us back
                }
            }
            if let Some(c) = self.agent.conn(id) {
                if c.over_hard_cap() {
                    let n = c.outbox.len();
                    let why =
                        format!("{n} bytes unsent, past the hard cap: the peer does not read");
                    tracing::warn!(bridge = %self.bridge, conn = id, unsent = n, "closing a connection that does not read");
                    self.close(id, &why);
                }
            }
        }
        self.agent.handle_timeout(now_ns);
        while let Some(e) = self.agent.poll_event() {
            match e {
                agent::Event::Close { conn, why } => {
                    self.flush(conn);
                    self.close(conn, why)
                }
            }
        }
        self.refresh_view(now_ns);
    }

    fn start_dial(&mut self, i: usize, addr: &SocketAddr, now_ns: u64) {
        match dial::start(addr) {
            Ok(s) => {
                self.actives[i].dialing = Some(Dialing::Connecting(s, now_ns + CONNECT_TIMEOUT_NS))
            }
            Err(_) => self.dial_failed(i, now_ns),
        }
    }

    /// Tries again after the backoff (1 s doubling to 8 s).
    fn dial_failed(&mut self, i: usize, now_ns: u64) {
        let a = &mut self.actives[i];
        a.dialing = None;
        a.next_try_ns = now_ns + a.backoff_ns;
        a.backoff_ns = (a.backoff_ns * 2).min(8_000_000_000);
    }

    /// A connected socket to a controller as the stream its endpoint asks
    /// for: non-blocking, no Nagle delay, TLS on top for `tls:`.
    fn client_stream(&self, s: TcpStream, target: &str, use_tls: bool) -> std::io::Result<Stream> {
        s.set_nonblocking(true)?;
        let _ = s.set_nodelay(true);
        match (&self.tls, use_tls) {
            (Some(t), true) => {
                let host = target.rsplit_once(':').map_or(target, |(h, _)| h);
                let name = tls::server_name(host)
                    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
                let t = tls::TlsStream::client(s, t.client.clone(), name)?;
                Ok(Stream::Tls(Box::new(t)))
            }
            _ => Ok(Stream::Tcp(s)),
        }
    }

    fn flush(&mut self, id: ConnId) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        // A transport error shows at the next write.
        let _ = s.flush_transport();
        while let Some(out) = self.agent.poll_transmit(id) {
            match s.write(out) {
                Ok(0) => break,
                Ok(n) => self.agent.transmitted(id, n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.agent.transmit_failed(id);
                    break;
                }
            }
        }
    }
}
