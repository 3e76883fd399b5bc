//! The OVSDB server's thread: its listeners and connections, the
//! [`ovsdb::server::Server`] they talk to, and the two doors to the
//! control thread (the database as each commit leaves it, out; the
//! switch's own write-back transactions, in).
//!
//! Why a thread of its own: a client may send a transaction of a million
//! operations or a monitor of every table; the switch's OpenFlow side and
//! the packet workers must not wait on it. The control thread only ever
//! sees whole snapshots (`Arc<ovsdb::Database>`, the rows shared).
//!
//! Connections: at most [`MAX_CONNS`]; each has the `jsonrpc` crate's
//! bounds (a message of at most 64 MiB and 127 levels of nesting; 16 MiB
//! of replies and updates it has not read, past which it is dropped with
//! a log line). A bad message closes only its connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonrpc::{Conn, ConnLimits, Listener, Remote, Stream};
use netdev::os::EventFd;
use ovsdb::server::{Out, Server, SessionId};
use serde_json::Value;

/// Connections served at once (more wait in the listen backlog).
pub const MAX_CONNS: usize = 1024;

/// Bytes of partial messages all connections may hold together; past it,
/// connections holding more than [`SMALL`] are not read until it falls
/// (they wait in their socket buffers: backpressure, not an error).
pub const INPUT_BUDGET: usize = 256 << 20;
const SMALL: usize = 1 << 20;

/// How often an active remote (a manager) is dialled again after a
/// failure.
const REDIAL: Duration = Duration::from_secs(1);

/// What the control thread and the server thread share.
pub struct Shared {
    /// The database as the last commit left it (taken by the control
    /// thread).
    pub latest: Mutex<Option<Arc<ovsdb::Database>>>,
    /// Bumped when `latest` is set.
    pub to_control: EventFd,
    /// Bumped when a write-back is queued or the server should stop.
    pub to_server: EventFd,
    pub stop: AtomicBool,
}

struct Client {
    conn: Conn,
    /// The remote's text, for logs.
    from: String,
}

/// An active remote (`tcp:`, `ssl:`, `unix:`): dialled, and again after
/// its connection ends.
struct Active {
    remote: Remote,
    /// Its connection's key in `clients`, while connected.
    conn: Option<SessionId>,
    next_try: Instant,
}

pub struct Serve {
    server: Server,
    shared: Arc<Shared>,
    local: Receiver<Vec<Value>>,
    listeners: Vec<(String, Listener)>,
    actives: Vec<Active>,
    /// By session.
    clients: HashMap<SessionId, Client>,
    identity: Option<tls::Tls>,
    started: Instant,
    commits_seen: u64,
    /// The listeners the database asks for (Open_vSwitch
    /// manager_options), by target.
    managed: HashMap<String, ManagedRemote>,
}

enum ManagedRemote {
    Passive(Listener),
    Active(usize),
}

impl Serve {
    pub fn new(
        server: Server,
        shared: Arc<Shared>,
        local: Receiver<Vec<Value>>,
        remotes: &[Remote],
        identity: Option<tls::Tls>,
    ) -> Result<Serve, String> {
        let mut listeners = Vec::new();
        let mut actives = Vec::new();
        for r in remotes {
            if r.is_passive() {
                listeners.push((r.to_string(), Listener::bind(r, identity.as_ref(), 0o770)?));
            } else {
                actives.push(Active {
                    remote: r.clone(),
                    conn: None,
                    next_try: Instant::now(),
                });
            }
        }
        let mut s = Serve {
            server,
            shared,
            local,
            listeners,
            actives,
            clients: HashMap::new(),
            identity,
            started: Instant::now(),
            commits_seen: u64::MAX,
            managed: HashMap::new(),
        };
        s.publish();
        Ok(s)
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Serves until `shared.stop`.
    pub fn run(mut self) {
        while !self.shared.stop.load(Relaxed) {
            let mut fds = vec![libc::pollfd {
                fd: self.shared.to_server.fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            let nl = self.listeners.len();
            for (_, l) in &self.listeners {
                fds.push(pollin(l.fd()));
            }
            let managed: Vec<i32> = self
                .managed
                .values()
                .filter_map(|m| match m {
                    ManagedRemote::Passive(l) => Some(l.fd()),
                    ManagedRemote::Active(_) => None,
                })
                .collect();
            for &fd in &managed {
                fds.push(pollin(fd));
            }
            let keys: Vec<u64> = self.clients.keys().copied().collect();
            let mut busy = false;
            let held: usize = self.clients.values().map(|c| c.conn.buffered()).sum();
            for k in &keys {
                let c = &self.clients[k];
                let mut p = pollin(c.conn.fd());
                if held > INPUT_BUDGET && c.conn.buffered() > SMALL {
                    p.events = 0;
                }
                if c.conn.wants_write() {
                    p.events |= libc::POLLOUT;
                }
                busy |= c.conn.has_more_input();
                fds.push(p);
            }
            let now = self.now_ms();
            let mut timeout: u64 = if busy { 0 } else { 200 };
            if let Some(d) = self.server.next_deadline() {
                timeout = timeout.min(d.saturating_sub(now));
            }
            let _ = netdev::os::poll(&mut fds, timeout as i32);
            self.shared.to_server.clear();
            self.drain_local();
            for (i, (name, l)) in self.listeners.iter().enumerate() {
                if fds[1 + i].revents != 0 {
                    accept_all(l, name, &mut self.clients, &mut self.server);
                }
            }
            for m in self.managed.iter() {
                if let (t, ManagedRemote::Passive(l)) = m {
                    accept_all(l, t, &mut self.clients, &mut self.server);
                }
            }
            self.dial();
            let base = 1 + nl + managed.len();
            for (i, k) in keys.iter().enumerate() {
                let gated = fds[base + i].events == 0;
                let ready = !gated
                    && ((fds[base + i].revents & !libc::POLLOUT) != 0
                        || self.clients.get(k).is_some_and(|c| c.conn.has_more_input()));
                if ready {
                    self.serve_client(*k);
                }
            }
            let now = self.now_ms();
            let outs = self.server.tick(now);
            self.route(outs);
            self.flush_all();
            self.publish();
        }
        // Replies already queued go out before the sockets close.
        self.flush_all();
    }

    /// The switch's own transactions.
    fn drain_local(&mut self) {
        loop {
            match self.local.try_recv() {
                Ok(ops) => {
                    let now = self.now_ms();
                    let (results, outs) = self.server.transact_local(&ops, now);
                    if let Some(e) = results.iter().find(|r| r.get("error").is_some()) {
                        tracing::warn!(error = %e, "ovsdb: the switch's status write was refused");
                    }
                    self.route(outs);
                }
                Err(TryRecvError::Empty) | Err(TryRecvError::Disconnected) => return,
            }
        }
    }

    fn serve_client(&mut self, k: u64) {
        let Some(c) = self.clients.get_mut(&k) else {
            return;
        };
        let (session, from) = (k, c.from.clone());
        match c.conn.receive() {
            Ok(msgs) => {
                for m in msgs {
                    let now = self.now_ms();
                    let outs = self.server.handle(session, &m.into_value(), now);
                    self.route(outs);
                }
            }
            Err(jsonrpc::ConnError::Closed) => self.close(k, None),
            Err(e) => {
                tracing::warn!(client = %from, error = %e, "ovsdb: closing the connection");
                self.close(k, None);
            }
        }
    }

    fn close(&mut self, k: u64, _why: Option<&str>) {
        if self.clients.remove(&k).is_some() {
            let outs = self.server.close_session(k);
            self.route(outs);
            for a in &mut self.actives {
                if a.conn == Some(k) {
                    a.conn = None;
                    a.next_try = Instant::now() + REDIAL;
                }
            }
        }
    }

    fn route(&mut self, outs: Vec<Out>) {
        let mut dead = Vec::new();
        for (session, v) in outs {
            let Some(c) = self.clients.get_mut(&session) else {
                continue;
            };
            if let Err(e) = c.conn.send_value(&v) {
                tracing::warn!(client = %c.from, error = %e, "ovsdb: closing the connection");
                dead.push(session);
            }
        }
        for k in dead {
            self.close(k, None);
        }
    }

    fn flush_all(&mut self) {
        let mut dead = Vec::new();
        for (k, c) in self.clients.iter_mut() {
            if let Err(e) = c.conn.flush() {
                tracing::debug!(client = %c.from, error = %e, "ovsdb: connection ended");
                dead.push(*k);
            } else if c.conn.peer_closed() && c.conn.backlog() == 0 {
                dead.push(*k);
            }
        }
        for k in dead {
            self.close(k, None);
        }
    }

    /// Dials the active remotes that are not connected.
    fn dial(&mut self) {
        let now = Instant::now();
        for i in 0..self.actives.len() {
            if self.actives[i].conn.is_some() || now < self.actives[i].next_try {
                continue;
            }
            let r = self.actives[i].remote.clone();
            match Stream::connect(&r, self.identity.as_ref()) {
                Ok(s) => {
                    let k = self.server.open_session();
                    self.clients.insert(
                        k,
                        Client {
                            conn: Conn::new(s, limits()),
                            from: r.to_string(),
                        },
                    );
                    self.actives[i].conn = Some(k);
                    tracing::info!(remote = %r, "ovsdb: connected to manager");
                }
                Err(e) => {
                    tracing::debug!(remote = %r, error = %e, "ovsdb: dialling failed; retrying");
                    self.actives[i].next_try = now + REDIAL;
                }
            }
        }
    }

    /// After a commit: the database for the control thread, and the
    /// remotes Open_vSwitch's manager_options name.
    fn publish(&mut self) {
        let commits = self.server.stats().commits;
        if commits == self.commits_seen {
            return;
        }
        self.commits_seen = commits;
        let db = Arc::new(self.server.db().clone());
        self.follow_managers(&db);
        if let Ok(mut l) = self.shared.latest.lock() {
            *l = Some(db);
        }
        self.shared.to_control.wake();
    }

    /// Opens and closes the Manager table's remotes (as ovsdb-server's
    /// `--remote=db:Open_vSwitch,Open_vSwitch,manager_options` does for
    /// Open vSwitch).
    fn follow_managers(&mut self, db: &ovsdb::Database) {
        let targets = super::desired::manager_targets(db);
        let gone: Vec<String> = self
            .managed
            .keys()
            .filter(|t| !targets.contains(*t))
            .cloned()
            .collect();
        for t in gone {
            if let Some(ManagedRemote::Active(i)) = self.managed.remove(&t) {
                if let Some(k) = self.actives[i].conn.take() {
                    self.close(k, None);
                }
                // Never dialled again.
                self.actives[i].next_try = Instant::now() + Duration::from_secs(u32::MAX as u64);
            }
        }
        for t in targets {
            if self.managed.contains_key(&t) {
                continue;
            }
            let r = match Remote::parse(&t) {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(target = %t, error = %e, "ovsdb: Manager target ignored");
                    continue;
                }
            };
            if r.is_passive() {
                match Listener::bind(&r, self.identity.as_ref(), 0o770) {
                    Ok(l) => {
                        self.managed.insert(t, ManagedRemote::Passive(l));
                    }
                    Err(e) => {
                        tracing::warn!(target = %t, error = %e, "ovsdb: Manager target cannot listen")
                    }
                }
            } else {
                self.actives.push(Active {
                    remote: r,
                    conn: None,
                    next_try: Instant::now(),
                });
                self.managed
                    .insert(t, ManagedRemote::Active(self.actives.len() - 1));
            }
        }
    }
}

fn pollin(fd: i32) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

fn limits() -> ConnLimits {
    ConnLimits::default()
}

fn accept_all(
    l: &Listener,
    name: &str,
    clients: &mut HashMap<SessionId, Client>,
    server: &mut Server,
) {
    while clients.len() < MAX_CONNS {
        match l.accept() {
            Ok(Some(s)) => {
                clients.insert(
                    server.open_session(),
                    Client {
                        conn: Conn::new(s, limits()),
                        from: name.to_string(),
                    },
                );
            }
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(listener = %name, error = %e, "ovsdb: accept failed");
                return;
            }
        }
    }
}
