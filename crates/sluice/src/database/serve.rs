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
//! Connections: at most `--ovsdb-max-connections` ([`MAX_CONNS`] by
//! default), and the cap never locks a new client out while a connection
//! is idle. A connection is idle when it holds nothing: no monitor, no
//! lock held or waited for, no transaction blocked in a `wait`
//! ([`Server::is_idle`]), nothing unsent, no message half received, and
//! it is not a manager connection sluice dialled itself. At the cap, a
//! newcomer takes the place of the connection idle longest (the longest
//! since it last sent a message), which is closed and counted
//! ([`Counters::evicted`], a log line); a connection with a monitor (a
//! live IDL client) or anything else in hand is never closed for one.
//! When none is idle, a newcomer on a Unix socket (a local administrator's
//! `ovs-vsctl`) may still take one of [`LOCAL_RESERVE`] places beyond the
//! cap; any other is accepted and closed at once (counted in
//! [`Counters::refused`]), so that it fails fast instead of hanging.
//!
//! Big messages and transactions: a message over [`BIG_MESSAGE`] bytes is
//! parsed on a second thread, `ovsdb-txn` (the framer found its end
//! here); a `transact` the server offloads
//! ([`ovsdb::server::Server::offload`]: a large one, or any once the
//! database is large) runs there too, one at a time in arrival order,
//! while this thread goes on answering every other
//! client (reads, echo, monitors; another client's writes commit too, and
//! the big one is then run again on the newer database: no client ever
//! sees half a transaction). The connection that sent it is not read
//! until it is parsed and its reply queued; messages it had already sent
//! wait, and a parse error closes it as one found here would
//! ([`Counters::jobs_running`]). After commits that changed
//! [`TRIM_ROWS`] rows, the C allocator's free memory is given back to
//! the system ([`netdev::os::trim_heap`]), so that RSS falls after big
//! deletes.
//!
//! Each connection has the `jsonrpc` crate's bounds (a message of at most
//! 64 MiB and 64 levels of nesting; 16 MiB of replies and updates it has
//! not read, past which it is dropped with a log line). A bad message
//! closes only its connection, and only after the requests that came
//! before it on that connection are answered: the connection reads no
//! more and is closed once its replies are written (or after [`LINGER`],
//! if the peer does not read them).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonrpc::{Conn, ConnLimits, Incoming, Listener, Remote, Stream};
use netdev::os::EventFd;
use ovsdb::server::{Finished, Job, Leftovers, Out, Ran, Server, SessionId};
use serde_json::Value;

/// Connections served at once unless `--ovsdb-max-connections` says
/// otherwise (see the module docs for what happens at the cap).
pub const MAX_CONNS: usize = 1024;

/// Places beyond the cap for newcomers on a Unix socket when no
/// connection is idle.
pub const LOCAL_RESERVE: usize = 16;

/// How long a connection that is over (a bad message, or the peer's
/// close) is kept to write the replies it still has queued.
pub const LINGER: Duration = Duration::from_secs(5);

/// How long listeners rest after an accept error (out of descriptors:
/// polling them again at once would spin).
const ACCEPT_REST: Duration = Duration::from_millis(200);

/// Connections accepted per listener per round (the rest wait for the
/// next round: accepting is bounded work too).
const ACCEPTS_PER_ROUND: usize = 256;

/// Log lines about the cap (evictions, refusals): at most this many per
/// [`LOG_WINDOW`], the counters keeping the full count.
const LOG_LINES: u32 = 20;
const LOG_WINDOW: Duration = Duration::from_secs(10);

/// Bytes of partial messages all connections may hold together; past it,
/// connections holding more than [`SMALL`] are not read until it falls
/// (they wait in their socket buffers: backpressure, not an error).
pub const INPUT_BUDGET: usize = 256 << 20;
const SMALL: usize = 1 << 20;

/// Messages longer than this are parsed on the worker thread.
const BIG_MESSAGE: usize = 1 << 20;

/// After commits changing this many rows in all, the C allocator is told
/// to give its free memory back ([`netdev::os::trim_heap`]).
const TRIM_ROWS: u64 = 50_000;

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
    /// What the server thread counts (read by the metrics endpoint).
    pub counters: Arc<Counters>,
}

/// The server thread's connection figures.
#[derive(Debug, Default)]
pub struct Counters {
    /// Connections held now.
    pub connections: AtomicU64,
    /// Idle connections closed to make room for a newcomer at the cap.
    pub evicted: AtomicU64,
    /// Newcomers closed at once: at the cap, none idle, no reserve.
    pub refused: AtomicU64,
    /// Transactions running on the worker thread now (0 or 1).
    pub jobs_running: AtomicU64,
    /// Transactions run on the worker thread so far (a run again counts
    /// again).
    pub jobs: AtomicU64,
}

struct Client {
    conn: Conn,
    /// The remote's text, for logs.
    from: String,
    /// Dialled by sluice (a manager): never closed for a newcomer.
    dialled: bool,
    /// When it last sent a message (or was accepted).
    last_heard: Instant,
    /// Reading is over: closed once its queued replies are written, or at
    /// this time.
    closing: Option<Instant>,
    /// Messages received and not handled yet: those after a transaction
    /// that is queued for, or running on, the worker (the connection is
    /// not read meanwhile).
    held: VecDeque<Incoming>,
    /// A transaction of its is queued for, or running on, the worker, or
    /// a message of its is being parsed there.
    offloaded: bool,
}

impl Client {
    fn new(conn: Conn, from: &str, dialled: bool) -> Client {
        Client {
            conn,
            from: from.to_string(),
            dialled,
            last_heard: Instant::now(),
            closing: None,
            held: VecDeque::new(),
            offloaded: false,
        }
    }
}

/// Which connection gives its place to a newcomer: among the idle ones
/// (`(session, idle, last heard)`), the one heard from longest ago.
fn pick_victim(clients: impl Iterator<Item = (SessionId, bool, Instant)>) -> Option<SessionId> {
    clients
        .filter(|&(_, idle, _)| idle)
        .min_by_key(|&(k, _, heard)| (heard, k))
        .map(|(k, _, _)| k)
}

/// A budget of log lines per window.
#[derive(Default)]
struct LogLimit {
    window_start: Option<Instant>,
    lines: u32,
    left_out: u64,
}

impl LogLimit {
    fn allow(&mut self, now: Instant) -> bool {
        if self
            .window_start
            .is_none_or(|t| now.duration_since(t) >= LOG_WINDOW)
        {
            if self.left_out > 0 {
                tracing::warn!(
                    left_out = self.left_out,
                    "ovsdb: connection-cap log lines left out"
                );
            }
            self.window_start = Some(now);
            self.lines = 0;
            self.left_out = 0;
        }
        if self.lines < LOG_LINES {
            self.lines += 1;
            true
        } else {
            self.left_out += 1;
            false
        }
    }
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
    /// Connections held at most (beyond it: see the module docs).
    max_conns: usize,
    cap_log: LogLimit,
    /// Listeners are not polled until then (after an accept error).
    resting_until: Option<Instant>,
    worker: Worker,
    /// Transactions waiting for the worker, in arrival order.
    jobs: VecDeque<Box<Job>>,
    /// `rows_changed` when the heap was last trimmed.
    trimmed_at: u64,
}

/// The thread that runs big transactions ([`Server::offload`]): jobs in,
/// what they made out (the server thread woken through `to_server`).
struct Worker {
    jobs: Option<Sender<Task>>,
    done: Receiver<Back>,
    busy: bool,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The worker's work: a transaction to run, or what one left, to drop
/// (freeing a million rows takes seconds this thread does not spend).
enum Task {
    Run(Box<Job>),
    Drop(Leftovers),
    /// A long message's bytes, from a session.
    Parse(SessionId, Vec<u8>),
}

/// What the worker gives back.
enum Back {
    Ran(Box<Ran>),
    Parsed(SessionId, Result<jsonrpc::Message, jsonrpc::ConnError>),
}

impl Worker {
    fn spawn(shared: Arc<Shared>) -> Result<Worker, String> {
        let (jobs, inbox) = channel::<Task>();
        let (outbox, done) = channel();
        let thread = std::thread::Builder::new()
            .name("ovsdb-txn".into())
            .spawn(move || {
                for task in inbox {
                    match task {
                        Task::Run(job) => {
                            if outbox.send(Back::Ran(Box::new(job.run()))).is_err() {
                                return;
                            }
                            shared.to_server.wake();
                        }
                        Task::Parse(k, bytes) => {
                            let m = Incoming::parse(&bytes);
                            drop(bytes);
                            if outbox.send(Back::Parsed(k, m)).is_err() {
                                return;
                            }
                            shared.to_server.wake();
                        }
                        Task::Drop(left) => {
                            drop(left);
                            netdev::os::trim_heap();
                        }
                    }
                }
            })
            .map_err(|e| format!("ovsdb: cannot start the transaction thread: {e}"))?;
        Ok(Worker {
            jobs: Some(jobs),
            done,
            busy: false,
            thread: Some(thread),
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
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
        max_conns: usize,
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
        let worker = Worker::spawn(shared.clone())?;
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
            max_conns: max_conns.max(1),
            cap_log: LogLimit::default(),
            resting_until: None,
            worker,
            jobs: VecDeque::new(),
            trimmed_at: 0,
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
            // After an accept error (EMFILE...), listeners rest rather
            // than wake every round.
            let resting = self.resting_until.is_some_and(|t| Instant::now() < t);
            let listen = |fd| {
                let mut p = pollin(fd);
                if resting {
                    p.events = 0;
                }
                p
            };
            for (_, l) in &self.listeners {
                fds.push(listen(l.fd()));
            }
            let managed: Vec<String> = self
                .managed
                .iter()
                .filter(|(_, m)| matches!(m, ManagedRemote::Passive(_)))
                .map(|(t, _)| t.clone())
                .collect();
            for t in &managed {
                if let Some(ManagedRemote::Passive(l)) = self.managed.get(t) {
                    fds.push(listen(l.fd()));
                }
            }
            let keys: Vec<u64> = self.clients.keys().copied().collect();
            let mut busy = false;
            let held: usize = self.clients.values().map(|c| c.conn.buffered()).sum();
            for k in &keys {
                let c = &self.clients[k];
                let mut p = pollin(c.conn.fd());
                if c.closing.is_some()
                    || c.offloaded
                    || !c.held.is_empty()
                    || (held > INPUT_BUDGET && c.conn.buffered() > SMALL)
                {
                    p.events = 0;
                } else {
                    busy |= c.conn.has_more_input();
                }
                if c.conn.wants_write() {
                    p.events |= libc::POLLOUT;
                }
                fds.push(p);
            }
            let now = self.now_ms();
            let mut timeout: u64 = if busy { 0 } else { 200 };
            if let Some(d) = self.server.next_deadline() {
                timeout = timeout.min(d.saturating_sub(now));
            }
            let _ = netdev::os::poll(&mut fds, timeout as i32);
            self.shared.to_server.clear();
            self.take_done();
            self.drain_local();
            for i in 0..nl {
                if fds[1 + i].revents != 0 {
                    self.accept_from(Some(i), None);
                }
            }
            for (j, t) in managed.iter().enumerate() {
                if fds[1 + nl + j].revents != 0 {
                    self.accept_from(None, Some(t));
                }
            }
            self.dial();
            let base = 1 + nl + managed.len();
            for (i, k) in keys.iter().enumerate() {
                let gated = fds[base + i].events & libc::POLLIN == 0;
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
            self.dispatch();
            self.flush_all();
            self.publish();
            self.trim();
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
        if c.closing.is_some() {
            return;
        }
        let (session, from) = (k, c.from.clone());
        match c.conn.receive_split(BIG_MESSAGE) {
            Ok(msgs) => {
                if !msgs.is_empty() {
                    c.last_heard = Instant::now();
                }
                // In order, each answered before the next is read: a bad
                // message after them closes the connection only on the
                // next call, once these have their replies.
                c.held.extend(msgs);
                self.advance(session);
            }
            Err(jsonrpc::ConnError::Closed) => self.finish(k),
            Err(e) => {
                tracing::warn!(client = %from, error = %e, "ovsdb: closing the connection");
                self.finish(k);
            }
        }
    }

    /// Handles `k`'s held messages in order, up to one that goes to the
    /// worker (the rest wait for its reply).
    fn advance(&mut self, k: SessionId) {
        loop {
            let now = self.now_ms();
            let Some(c) = self.clients.get_mut(&k) else {
                return;
            };
            if c.offloaded {
                return;
            }
            let m = match c.held.pop_front() {
                None => return,
                Some(Incoming::Message(m)) => m.into_value(),
                Some(Incoming::Raw(bytes)) => {
                    // Parsed on the worker; the rest waits for it.
                    c.offloaded = true;
                    if let Some(tx) = &self.worker.jobs {
                        let _ = tx.send(Task::Parse(k, bytes));
                    }
                    return;
                }
            };
            match self.server.offload(k, m, now) {
                Ok(job) => {
                    c.offloaded = true;
                    self.jobs.push_back(Box::new(job));
                }
                Err(m) => {
                    let outs = self.server.handle(k, &m, now);
                    self.route(outs);
                }
            }
        }
    }

    /// Starts the next waiting transaction when the worker is free.
    fn dispatch(&mut self) {
        if self.worker.busy {
            return;
        }
        let Some(mut job) = self.jobs.pop_front() else {
            return;
        };
        self.server.rebase(&mut job);
        if let Some(tx) = &self.worker.jobs {
            if tx.send(Task::Run(job)).is_ok() {
                self.worker.busy = true;
                self.shared.counters.jobs_running.store(1, Relaxed);
                self.shared.counters.jobs.fetch_add(1, Relaxed);
            }
        }
    }

    /// What the worker made: committed (or run again when another commit
    /// came first), replied to, and the connection's held messages
    /// handled.
    fn take_done(&mut self) {
        while let Ok(back) = self.worker.done.try_recv() {
            let ran = match back {
                Back::Ran(ran) => *ran,
                Back::Parsed(k, m) => {
                    let Some(c) = self.clients.get_mut(&k) else {
                        continue;
                    };
                    c.offloaded = false;
                    if c.closing.is_some() {
                        continue;
                    }
                    match m {
                        Ok(m) => {
                            c.held.push_front(Incoming::Message(m));
                            self.advance(k);
                        }
                        Err(e) => {
                            tracing::warn!(client = %c.from, error = %e, "ovsdb: closing the connection");
                            c.held.clear();
                            self.finish(k);
                        }
                    }
                    continue;
                }
            };
            self.worker.busy = false;
            self.shared.counters.jobs_running.store(0, Relaxed);
            let k = ran.session();
            let now = self.now_ms();
            match self.server.finish(ran, now) {
                Finished::Done { out, leftovers } => {
                    if let Some(tx) = &self.worker.jobs {
                        let _ = tx.send(Task::Drop(leftovers));
                    }
                    // The worker trims once it has freed them.
                    self.trimmed_at = self.server.stats().rows_changed;
                    self.route(out);
                    if let Some(c) = self.clients.get_mut(&k) {
                        c.offloaded = false;
                    }
                    self.advance(k);
                }
                Finished::Again(job) => self.jobs.push_front(job),
            }
            self.dispatch();
        }
    }

    /// Gives the allocator's free memory back after big changes made
    /// here (the worker trims after freeing what a job left).
    fn trim(&mut self) {
        let changed = self.server.stats().rows_changed;
        if changed.saturating_sub(self.trimmed_at) >= TRIM_ROWS && !self.worker.busy {
            self.trimmed_at = changed;
            netdev::os::trim_heap();
        }
    }

    /// Reading from `k` is over: its session goes now (monitors, locks,
    /// blocked transactions), the connection once the replies it has
    /// queued are written (at most [`LINGER`] from now).
    fn finish(&mut self, k: u64) {
        let Some(c) = self.clients.get_mut(&k) else {
            return;
        };
        if !c.conn.wants_write() {
            self.close(k);
            return;
        }
        c.closing = Some(Instant::now() + LINGER);
        let outs = self.server.close_session(k);
        self.route(outs);
    }

    fn close(&mut self, k: u64) {
        if self.clients.remove(&k).is_some() {
            let outs = self.server.close_session(k);
            self.route(outs);
            for a in &mut self.actives {
                if a.conn == Some(k) {
                    a.conn = None;
                    a.next_try = Instant::now() + REDIAL;
                }
            }
            self.count_connections();
        }
    }

    fn count_connections(&self) {
        self.shared
            .counters
            .connections
            .store(self.clients.len() as u64, Relaxed);
    }

    /// Accepts what waits on a listener (by index in `listeners`, or a
    /// Manager target's), each newcomer admitted as [`Serve::admit`] says.
    fn accept_from(&mut self, listener: Option<usize>, managed: Option<&str>) {
        for _ in 0..ACCEPTS_PER_ROUND {
            let (name, l) = match (listener, managed) {
                (Some(i), _) => (self.listeners[i].0.as_str(), &self.listeners[i].1),
                (None, Some(t)) => match self.managed.get(t) {
                    Some(ManagedRemote::Passive(l)) => (t, l),
                    _ => return,
                },
                (None, None) => return,
            };
            let local = matches!(l, Listener::Unix { .. });
            match l.accept() {
                Ok(Some(s)) => {
                    let name = name.to_string();
                    self.admit(s, &name, local);
                }
                Ok(None) => return,
                Err(e) => {
                    if self.cap_log.allow(Instant::now()) {
                        tracing::warn!(listener = %name, error = %e,
                            "ovsdb: accept failed; listeners rest 200 ms");
                    }
                    self.resting_until = Some(Instant::now() + ACCEPT_REST);
                    return;
                }
            }
        }
    }

    /// A newcomer: served, making room at the cap by closing the
    /// connection idle longest, or from the local reserve, or refused
    /// (see the module docs).
    fn admit(&mut self, s: Stream, from: &str, local: bool) {
        if self.clients.len() >= self.max_conns {
            let server = &self.server;
            let victim = pick_victim(self.clients.iter().map(|(&k, c)| {
                let idle = !c.dialled
                    && c.closing.is_none()
                    && !c.offloaded
                    && c.held.is_empty()
                    && !c.conn.wants_write()
                    && c.conn.buffered() == 0
                    && server.is_idle(k);
                (k, idle, c.last_heard)
            }));
            let now = Instant::now();
            match victim {
                Some(v) => {
                    let n = self.shared.counters.evicted.fetch_add(1, Relaxed) + 1;
                    if self.cap_log.allow(now) {
                        let c = &self.clients[&v];
                        tracing::info!(
                            client = %c.from,
                            idle_s = now.duration_since(c.last_heard).as_secs(),
                            cap = self.max_conns,
                            evicted_total = n,
                            "ovsdb: at the connection cap; closing the connection idle longest for a newcomer"
                        );
                    }
                    self.close(v);
                }
                None if local && self.clients.len() < self.max_conns + LOCAL_RESERVE => {
                    if self.cap_log.allow(now) {
                        tracing::warn!(
                            listener = %from,
                            cap = self.max_conns,
                            "ovsdb: at the connection cap and none idle; a local client takes a reserved place"
                        );
                    }
                }
                None => {
                    let n = self.shared.counters.refused.fetch_add(1, Relaxed) + 1;
                    if self.cap_log.allow(now) {
                        tracing::warn!(
                            listener = %from,
                            cap = self.max_conns,
                            refused_total = n,
                            "ovsdb: at the connection cap and none idle; newcomer closed"
                        );
                    }
                    return;
                }
            }
        }
        let k = self.server.open_session();
        self.clients
            .insert(k, Client::new(Conn::new(s, limits()), from, false));
        self.count_connections();
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
            self.close(k);
        }
    }

    fn flush_all(&mut self) {
        let mut dead = Vec::new();
        let now = Instant::now();
        for (k, c) in self.clients.iter_mut() {
            if let Err(e) = c.conn.flush() {
                tracing::debug!(client = %c.from, error = %e, "ovsdb: connection ended");
                dead.push(*k);
            } else if (c.conn.peer_closed() && c.conn.backlog() == 0)
                || (c.closing.is_some() && !c.conn.wants_write())
            {
                dead.push(*k);
            } else if c.closing.is_some_and(|t| now >= t) {
                tracing::debug!(client = %c.from, unsent = c.conn.backlog(),
                    "ovsdb: closing connection did not read its replies in time");
                dead.push(*k);
            }
        }
        for k in dead {
            self.close(k);
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
                    self.clients
                        .insert(k, Client::new(Conn::new(s, limits()), &r.to_string(), true));
                    self.count_connections();
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
        let db = self.server.db_shared();
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
                    self.close(k);
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::os::unix::net::UnixStream;
    use std::path::PathBuf;
    use std::sync::mpsc::channel;

    /// A server thread on `punix:DIR/db.sock` (and `ptcp:0:127.0.0.1` with
    /// `tcp`) holding at most `cap` connections.
    struct Running {
        dir: PathBuf,
        shared: Arc<Shared>,
        tcp_port: Option<u16>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Running {
        fn start(name: &str, cap: usize, tcp: bool) -> Running {
            let dir =
                std::env::temp_dir().join(format!("sluice-serve-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let schema = ovsdb::Schema::from_json(&json!({
                "name": "T",
                "version": "1.0.0",
                "tables": {"A": {"columns": {"x": {"type": "integer"}}, "isRoot": true}}
            }))
            .unwrap();
            let (server, _) = Server::new(schema, None).unwrap();
            let shared = Arc::new(Shared {
                latest: Mutex::new(None),
                to_control: EventFd::new().unwrap(),
                to_server: EventFd::new().unwrap(),
                stop: AtomicBool::new(false),
                counters: Arc::new(Counters::default()),
            });
            let mut remotes = vec![Remote::PUnix(dir.join("db.sock"))];
            if tcp {
                remotes.push(Remote::parse("ptcp:0:127.0.0.1").unwrap());
            }
            let (_tx, rx) = channel();
            let serve = Serve::new(server, shared.clone(), rx, &remotes, None, cap).unwrap();
            let tcp_port = serve
                .listeners
                .iter()
                .find_map(|(_, l)| l.local_addr().map(|a| a.port()));
            let thread = std::thread::spawn(move || serve.run());
            Running {
                dir,
                shared,
                tcp_port,
                thread: Some(thread),
            }
        }

        fn unix(&self) -> Peer<UnixStream> {
            Peer::new(UnixStream::connect(self.dir.join("db.sock")).unwrap())
        }

        fn tcp(&self) -> Peer<TcpStream> {
            Peer::new(TcpStream::connect(("127.0.0.1", self.tcp_port.unwrap())).unwrap())
        }
    }

    impl Drop for Running {
        fn drop(&mut self) {
            self.shared.stop.store(true, Relaxed);
            self.shared.to_server.wake();
            if let Some(t) = self.thread.take() {
                let _ = t.join();
            }
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    trait Sock: Read + Write {
        fn timeout(&self, d: Duration);
    }
    impl Sock for UnixStream {
        fn timeout(&self, d: Duration) {
            self.set_read_timeout(Some(d)).unwrap();
        }
    }
    impl Sock for TcpStream {
        fn timeout(&self, d: Duration) {
            self.set_read_timeout(Some(d)).unwrap();
        }
    }

    /// A client: JSON values in, bytes out, every read bounded (10 s).
    struct Peer<S: Sock> {
        s: S,
        buf: Vec<u8>,
    }

    enum Got {
        Value(Value),
        Closed,
        TimedOut,
    }

    impl<S: Sock> Peer<S> {
        fn new(s: S) -> Peer<S> {
            s.timeout(Duration::from_secs(10));
            Peer { s, buf: Vec::new() }
        }

        fn next(&mut self) -> Got {
            loop {
                let mut it = serde_json::Deserializer::from_slice(&self.buf).into_iter::<Value>();
                if let Some(Ok(v)) = it.next() {
                    let used = it.byte_offset();
                    self.buf.drain(..used);
                    return Got::Value(v);
                }
                let mut chunk = [0u8; 4096];
                match self.s.read(&mut chunk) {
                    Ok(0) => return Got::Closed,
                    Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                        return Got::Closed
                    }
                    Err(_) => return Got::TimedOut,
                }
            }
        }

        fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
            let m = json!({"id": id, "method": method, "params": params});
            self.s.write_all(m.to_string().as_bytes()).unwrap();
            loop {
                match self.next() {
                    Got::Value(v) if v["id"] == json!(id) => return v,
                    Got::Value(_) => {}
                    Got::Closed => panic!("{method}: closed unanswered"),
                    Got::TimedOut => panic!("{method}: no answer within 10 s"),
                }
            }
        }

        fn echo(&mut self, id: u64) {
            let r = self.call(id, "echo", json!([id]));
            assert_eq!(r["result"], json!([id]), "{r}");
        }

        fn is_closed(&mut self) -> bool {
            matches!(self.next(), Got::Closed)
        }
    }

    #[test]
    fn requests_before_garbage_are_answered_in_order_then_the_connection_closes() {
        let r = Running::start("garbage", 8, false);
        let mut p = r.unix();
        p.s.write_all(
            br#"{"id":1,"method":"echo","params":["first"]}{"id":2,"method":"list_dbs","params":[]}"#,
        )
        .unwrap();
        p.s.write_all(b"this is not JSON").unwrap();
        let Got::Value(a) = p.next() else {
            panic!("the first request unanswered");
        };
        assert_eq!(a, json!({"id": 1, "result": ["first"], "error": null}));
        let Got::Value(b) = p.next() else {
            panic!("the second request unanswered");
        };
        assert_eq!(b["id"], 2);
        assert_eq!(b["result"], json!(["T", "_Server"]));
        assert!(p.is_closed(), "closed after the replies, for the garbage");
        // Others are served, and the place is given back.
        let mut q = r.unix();
        q.echo(3);
        assert_eq!(r.shared.counters.connections.load(Relaxed), 1);
    }

    #[test]
    fn at_the_cap_a_newcomer_takes_the_place_of_the_connection_idle_longest() {
        let r = Running::start("evict", 3, false);
        let mut oldest = r.unix();
        oldest.echo(1);
        let mut monitoring = r.unix();
        let m = monitoring.call(2, "monitor", json!(["T", null, {"A": {}}]));
        assert!(m["error"].is_null(), "{m}");
        let mut idle = r.unix();
        idle.echo(3);

        // The cap is reached: the newcomer is served, the connection idle
        // longest closed, the one with a monitor (older still) kept.
        let mut first = r.unix();
        first.echo(4);
        assert!(oldest.is_closed(), "the connection idle longest is closed");
        monitoring.echo(5);
        idle.echo(6);
        // Heard from last: `idle` is now the one idle longest.
        first.echo(7);
        let mut second = r.unix();
        second.echo(8);
        assert!(idle.is_closed(), "then the next idle longest");
        monitoring.echo(9);
        first.echo(10);
        assert_eq!(r.shared.counters.evicted.load(Relaxed), 2);
        assert_eq!(r.shared.counters.refused.load(Relaxed), 0);
        assert_eq!(r.shared.counters.connections.load(Relaxed), 3);
    }

    #[test]
    fn with_none_idle_a_local_newcomer_gets_a_reserved_place_and_a_remote_one_is_refused() {
        let r = Running::start("reserve", 1, true);
        let mut busy = r.unix();
        let m = busy.call(1, "monitor", json!(["T", null, {"A": {}}]));
        assert!(m["error"].is_null(), "{m}");
        let mut remote = r.tcp();
        assert!(remote.is_closed(), "a TCP newcomer is closed at once");
        assert_eq!(r.shared.counters.refused.load(Relaxed), 1);
        let mut admin = r.unix();
        admin.echo(2);
        busy.echo(3);
        // A lock is something in hand too.
        let l = admin.call(4, "lock", json!(["x"]));
        assert_eq!(l["result"], json!({"locked": true}), "{l}");
        // Both hold something now: a newcomer from the reserve again,
        // nobody closed for it.
        let mut admin2 = r.unix();
        admin2.echo(5);
        admin.echo(6);
        busy.echo(7);
        assert_eq!(r.shared.counters.evicted.load(Relaxed), 0);
        assert_eq!(r.shared.counters.connections.load(Relaxed), 3);
    }

    #[test]
    fn others_are_answered_while_a_big_transaction_runs() {
        let r = Running::start("big", 8, false);
        let mut big = r.unix();
        let mut other = r.unix();
        other.echo(1);
        // 30 000 inserts (about 1.2 MB), then an echo on the same
        // connection: answered after the transaction, in order.
        let mut ops = vec![json!("T")];
        ops.extend((0..30_000).map(|i| json!({"op": "insert", "table": "A", "row": {"x": i}})));
        let mut bytes = json!({"id": 10, "method": "transact", "params": ops}).to_string();
        bytes.push_str(r#"{"id":11,"method":"echo","params":["after"]}"#);
        let mut w = big.s.try_clone().unwrap();
        let writer = std::thread::spawn(move || w.write_all(bytes.as_bytes()).unwrap());
        let deadline = Instant::now() + Duration::from_secs(10);
        while r.shared.counters.jobs_running.load(Relaxed) == 0 {
            assert!(
                Instant::now() < deadline,
                "the transaction never went to the worker"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // While it runs: another client's requests are answered, and the
        // big one's reply has not come (nor the echo queued behind it).
        let l = other.call(2, "list_dbs", json!([]));
        assert_eq!(l["result"], json!(["T", "_Server"]), "{l}");
        big.s.set_nonblocking(true).unwrap();
        let mut b = [0u8; 1];
        assert!(
            matches!(big.s.read(&mut b), Err(ref e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "the small request was answered before the big one"
        );
        big.s.set_nonblocking(false).unwrap();
        writer.join().unwrap();
        let Got::Value(t) = big.next() else {
            panic!("the big transaction unanswered");
        };
        assert_eq!(t["id"], 10);
        assert_eq!(
            t["result"].as_array().map(Vec::len),
            Some(30_000),
            "{}",
            t["error"]
        );
        assert_eq!(t["result"][0]["uuid"][0], "uuid");
        let Got::Value(e) = big.next() else {
            panic!("the echo after it unanswered");
        };
        assert_eq!(e["result"], json!(["after"]));
        // The database (as the control thread gets it) holds them all.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let n = r
                .shared
                .latest
                .lock()
                .unwrap()
                .as_ref()
                .map(|d| d.row_count());
            if n == Some(30_000) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the commit never reached the control thread"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // On a database this big, a small delete of every row goes to the
        // worker too.
        let d = other.call(
            3,
            "transact",
            json!(["T", {"op": "delete", "table": "A", "where": []}]),
        );
        assert_eq!(d["result"][0]["count"], 30_000, "{d}");
        assert_eq!(r.shared.counters.jobs.load(Relaxed), 2);
        assert_eq!(r.shared.counters.jobs_running.load(Relaxed), 0);
    }

    #[test]
    fn a_long_bad_message_is_parsed_aside_and_closes_only_its_connection() {
        let r = Running::start("longbad", 8, false);
        let mut p = r.unix();
        // A request, then 2 MB that frame but are no JSON-RPC message.
        let mut bytes = br#"{"id":1,"method":"echo","params":["first"]}"#.to_vec();
        bytes.push(b'[');
        bytes.extend(b"1,".repeat(1 << 20));
        bytes.extend(b"1]");
        bytes.extend(br#"{"id":2,"method":"echo","params":["never"]}"#);
        let mut w = p.s.try_clone().unwrap();
        let writer = std::thread::spawn(move || {
            let _ = w.write_all(&bytes);
        });
        let Got::Value(a) = p.next() else {
            panic!("the request before it unanswered");
        };
        assert_eq!(a["result"], json!(["first"]));
        assert!(
            p.is_closed(),
            "closed for the bad message, the one after it unanswered"
        );
        writer.join().unwrap();
        let mut q = r.unix();
        q.echo(3);
    }

    #[test]
    fn the_victim_is_the_idle_one_heard_from_longest_ago() {
        let t = Instant::now();
        let s = |n: u64| t + Duration::from_millis(n);
        assert_eq!(
            pick_victim([(1, false, s(0)), (2, true, s(5)), (3, true, s(2))].into_iter()),
            Some(3)
        );
        assert_eq!(
            pick_victim([(1, false, s(0)), (2, false, s(1))].into_iter()),
            None
        );
        assert_eq!(pick_victim(std::iter::empty()), None);
    }
}
