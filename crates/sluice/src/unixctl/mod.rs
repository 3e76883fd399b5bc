//! Open vSwitch's unixctl in the daemon: `ovs-appctl` works against sluice.
//!
//! unixctl is JSON-RPC 1.0 on a Unix socket (the `jsonrpc` crate): each
//! request's method is a command (`version`, `fdb/show`...), its params
//! the command's arguments as strings; the reply's result is the text
//! ovs-appctl prints, an error's the text it prints before exiting 2.
//! The commands are [`commands`]'; [`ovs`] is `--ovs`, where the socket
//! and the pidfile go so that Open vSwitch's tools find them.
//!
//! Contract: the server runs on the daemon's control thread like the
//! OpenFlow side ([`Server::poll_fds`], then [`Server::service`]), never
//! blocks, and bounds what a client costs:
//! * at most [`MAX_CLIENTS`] connections (one more is accepted and closed
//!   at once, so it fails fast instead of hanging);
//! * a request of at most [`MAX_REQUEST`] bytes (a longer one, or one
//!   that is not JSON-RPC, closes the connection, as Open vSwitch does,
//!   once the requests before it are answered);
//! * at most [`PER_ROUND`] commands per client per round; a client's
//!   further requests wait, and nothing more is read from it, while
//!   [`MAX_PENDING`] wait or its unsent replies pass [`PAUSE_OUTPUT`]
//!   bytes (a client that sends without reading stops being read; its
//!   memory is one read, the requests waiting and the replies);
//! * a client that neither sends nor has anything to receive for
//!   [`IDLE_NS`] is closed.
//!
//! `exit` answers first, then the daemon stops as on SIGTERM.

mod commands;
mod coverage;
mod host;
pub mod ovs;
mod vlog;

use std::collections::VecDeque;
use std::path::{Path, PathBuf};

use jsonrpc::{Conn, ConnLimits, Listener, Message};

pub use commands::After;
pub use host::Logging;

use crate::running::Running;

/// Connections served at once.
pub const MAX_CLIENTS: usize = 32;
/// Longest request, bytes (a trace with a packet in hex is a few KB).
pub const MAX_REQUEST: usize = 1 << 20;
/// Commands run per client per round of the control loop.
pub const PER_ROUND: usize = 4;
/// Requests a client may have waiting before it is read no more.
pub const MAX_PENDING: usize = 16;
/// Unsent reply bytes past which a client's requests wait.
pub const PAUSE_OUTPUT: usize = 1 << 20;
/// A silent client with nothing to receive is closed after this long.
pub const IDLE_NS: u64 = 300_000_000_000;
/// After an accept error other than "nobody waits" (EMFILE...), the
/// listener rests this long rather than spin the control thread.
const ACCEPT_BACKOFF_NS: u64 = 200_000_000;

/// The run directory: `--run-dir` when given, else Open vSwitch's with
/// `--ovs`, else sluice's own.
pub fn run_dir(ovs: bool, explicit: Option<&Path>) -> PathBuf {
    match explicit {
        Some(d) => d.to_path_buf(),
        None if ovs => ovs::rundir(),
        None => PathBuf::from("/run/sluice"),
    }
}

struct Client {
    conn: Conn,
    /// Requests read and not yet run.
    pending: VecDeque<(String, Vec<serde_json::Value>, serde_json::Value)>,
    last_active_ns: u64,
    /// Closing once its replies are sent (the peer closed its side).
    closing: bool,
}

/// The unixctl server.
pub struct Server {
    listener: Listener,
    clients: Vec<Client>,
    /// Written after the socket is bound; removed at drop.
    pidfile: Option<ovs::Pidfile>,
    state: commands::State,
    log: Option<Logging>,
    resting_until_ns: u64,
    /// Whether the last round left work for the next (requests waiting,
    /// input not read up to its bound).
    busy: bool,
}

impl Server {
    /// Listens on `socket` (its directory made if missing, a stale socket
    /// replaced, the socket 0750 as Open vSwitch makes its own), then
    /// writes `pidfile` if given.
    pub fn start(
        socket: &Path,
        pidfile: Option<&Path>,
        log: Option<Logging>,
    ) -> Result<Server, String> {
        if let Some(dir) = socket.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        jsonrpc::clear_stale_socket(socket)?;
        // Born 0750: never a moment with the umask's mode. Only the
        // control thread creates files, so the umask is not raced.
        let bound =
            netdev::os::with_umask(0o027, || std::os::unix::net::UnixListener::bind(socket));
        let l = bound.map_err(|e| format!("{}: {e}", socket.display()))?;
        let listener = Listener::from_unix(l, socket.to_path_buf())?;
        let pidfile = pidfile.map(ovs::Pidfile::create).transpose()?;
        tracing::info!(socket = %socket.display(), pidfile = ?pidfile.as_ref().map(|p| p.path().display().to_string()), "unixctl: listening");
        Ok(Server {
            listener,
            clients: Vec::new(),
            pidfile,
            state: commands::State::default(),
            log,
            resting_until_ns: 0,
            busy: false,
        })
    }

    /// Whether the next round should not wait for the sockets.
    pub fn busy(&self) -> bool {
        self.busy
    }

    fn paused(c: &Client) -> bool {
        c.pending.len() >= MAX_PENDING || c.conn.backlog() > PAUSE_OUTPUT || c.closing
    }

    /// The descriptors to wait on.
    pub fn poll_fds(&self, out: &mut Vec<libc::pollfd>, now_ns: u64) {
        if now_ns >= self.resting_until_ns {
            out.push(libc::pollfd {
                fd: self.listener.fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        for c in &self.clients {
            let mut events = 0;
            if !Self::paused(c) {
                events |= libc::POLLIN;
            }
            if c.conn.wants_write() {
                events |= libc::POLLOUT;
            }
            out.push(libc::pollfd {
                fd: c.conn.fd(),
                events,
                revents: 0,
            });
        }
    }

    /// Accepts, reads, runs commands and writes replies; `After::Exit`
    /// once an `exit` has been answered.
    pub fn service(&mut self, bridges: &mut [Running], now_ns: u64) -> After {
        self.accept(now_ns);
        let mut after = After::Nothing;
        let mut busy = false;
        let mut host = host::Host {
            bridges,
            log: self.log.as_ref(),
        };
        if self.state.coverage.due(now_ns) {
            use commands::Switch;
            let totals = host.counters();
            self.state.coverage.sample(now_ns, totals);
        }
        self.clients.retain_mut(|c| {
            if !Self::paused(c) {
                match c.conn.receive() {
                    Ok(msgs) => {
                        if !msgs.is_empty() {
                            c.last_active_ns = now_ns;
                        }
                        for m in msgs {
                            match m {
                                Message::Request { method, params, id } => {
                                    let params = match params {
                                        serde_json::Value::Array(a) => a,
                                        _ => Vec::new(),
                                    };
                                    c.pending.push_back((method, params, id));
                                }
                                other => {
                                    tracing::debug!("unixctl: unexpected {other:?}; closing");
                                    return false;
                                }
                            }
                        }
                        busy |= c.conn.has_more_input();
                    }
                    Err(jsonrpc::ConnError::Closed) => c.closing = true,
                    // The requests before the bad bytes are answered first
                    // (as Open vSwitch does), then the connection closes.
                    Err(e) => {
                        tracing::debug!("unixctl: {e}; closing");
                        c.closing = true;
                    }
                }
            }
            for _ in 0..PER_ROUND {
                if c.conn.backlog() > PAUSE_OUTPUT {
                    break;
                }
                let Some((method, params, id)) = c.pending.pop_front() else {
                    break;
                };
                let (r, a) = commands::run(&mut host, &self.state, &method, &params, now_ns);
                match &r {
                    Ok(_) => tracing::debug!(command = %method, "unixctl: done"),
                    Err(e) => tracing::debug!(command = %method, error = %e.trim_end(), "unixctl: refused"),
                }
                let reply = match r {
                    Ok(text) => Message::Reply {
                        result: text.into(),
                        id,
                    },
                    Err(text) => Message::Error {
                        error: text.into(),
                        id,
                    },
                };
                if let Err(e) = c.conn.send(&reply) {
                    tracing::debug!("unixctl: {e}; closing");
                    return false;
                }
                if a == After::Exit {
                    after = After::Exit;
                }
            }
            busy |= !c.pending.is_empty() && c.conn.backlog() <= PAUSE_OUTPUT;
            if let Err(e) = c.conn.flush() {
                tracing::debug!("unixctl: {e}; closing");
                return false;
            }
            if c.closing && c.pending.is_empty() && !c.conn.wants_write() {
                return false;
            }
            if c.conn.wants_write() || !c.pending.is_empty() {
                c.last_active_ns = now_ns;
            }
            now_ns.saturating_sub(c.last_active_ns) < IDLE_NS
        });
        self.busy = busy;
        after
    }

    fn accept(&mut self, now_ns: u64) {
        if now_ns < self.resting_until_ns {
            return;
        }
        // At most a few per round: accepting is bounded work too.
        for _ in 0..MAX_CLIENTS {
            match self.listener.accept() {
                Ok(Some(stream)) => {
                    if self.clients.len() >= MAX_CLIENTS {
                        tracing::warn!(
                            "unixctl: {MAX_CLIENTS} clients connected already; closing a new one"
                        );
                        drop(stream);
                        continue;
                    }
                    self.clients.push(Client {
                        conn: Conn::new(stream, client_limits()),
                        pending: VecDeque::new(),
                        last_active_ns: now_ns,
                        closing: false,
                    });
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "unixctl: accept failed; resting 200 ms");
                    self.resting_until_ns = now_ns + ACCEPT_BACKOFF_NS;
                    break;
                }
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The pidfile goes before the socket (the listener's drop removes
        // it): a tool that finds the pidfile finds the socket.
        self.pidfile.take();
    }
}

fn client_limits() -> ConnLimits {
    ConnLimits {
        frame: jsonrpc::Limits {
            max_message: MAX_REQUEST,
            max_depth: 16,
        },
        // Replies are queued only below PAUSE_OUTPUT: this is a safety net.
        max_backlog: PAUSE_OUTPUT,
        read_per_call: 64 << 10,
    }
}

#[cfg(test)]
mod tests;
