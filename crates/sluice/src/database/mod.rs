//! The Open vSwitch database side of the daemon (`--ovsdb REMOTE`): an
//! OVSDB server (RFC 7047) serving Open vSwitch's own `Open_vSwitch`
//! schema, whose contents configure the bridges, and into which the
//! switch writes its state back, so that `ovs-vsctl`, `ovsdb-client`,
//! the Python IDL and ovsdbapp (OpenStack's library), Open vSwitch's own
//! clients, drive sluice unchanged.
//!
//! * [`serve`]: the server's thread (sockets, the engine of the `ovsdb`
//!   crate, the log on disk).
//! * [`desired`]: the database read into one checked configuration per
//!   bridge.
//! * [`status`]: what the switch writes back (ofport, link state, MTU,
//!   MAC, errors, `cur_cfg`, the versions and types it supports).
//! * [`Handle`]: the control thread's end: a descriptor to poll, the
//!   latest database when it changed, and a queue of write-backs.
//!
//! One source of truth: with `--ovsdb`, the database configures every
//! bridge and port; the configuration file may only give what the schema
//! has no place for (`[conntrack]`, `[tls]`), and a reload (SIGHUP)
//! re-reads those sections alone, so it cannot undo an `ovs-vsctl`
//! change. docs/OVSDB.md says it for users.

pub mod apply;
pub mod desired;
mod serve;
pub mod status;

pub use serve::{Counters, LOCAL_RESERVE, MAX_CONNS};

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};

use netdev::os::EventFd;
use serde_json::Value;

/// Where the schema is read from unless `--ovsdb-schema` says otherwise:
/// Open vSwitch's as Debian's openvswitch-common installs it.
pub const DEFAULT_SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

/// What the database side needs to start.
pub struct Options {
    pub remotes: Vec<jsonrpc::Remote>,
    pub schema: PathBuf,
    /// The database file (created if missing).
    pub file: PathBuf,
    pub identity: Option<tls::Tls>,
    /// Connections held at most (`--ovsdb-max-connections`; at the cap a
    /// newcomer takes an idle connection's place: `serve`'s docs).
    pub max_connections: usize,
    /// The server thread's figures, shared with the metrics endpoint.
    pub counters: Arc<Counters>,
}

/// The control thread's end of the database side.
pub struct Handle {
    shared: Arc<serve::Shared>,
    to_server: Sender<Vec<Value>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The database as the control thread last read it.
    pub current: Option<Arc<ovsdb::Database>>,
    /// Problems of Interface rows found applying it (written back).
    pub errors: std::collections::BTreeMap<ovsdb::Uuid, String>,
    /// The `next_cfg` of the last database applied (`cur_cfg` to write).
    pub applied_cfg: Option<i64>,
    /// Apply `current` again at the next round (a reload).
    forced: bool,
    /// The fingerprint of the configuration last applied (None: apply
    /// the next one whatever it is).
    pub applied: Option<u64>,
    /// When Interface statistics were last written.
    stats_at: std::time::Instant,
}

impl Handle {
    /// Opens (or creates) the database, binds the remotes and starts the
    /// server's thread.
    pub fn start(o: Options) -> Result<Handle, String> {
        let text = std::fs::read_to_string(&o.schema)
            .map_err(|e| format!("--ovsdb-schema {}: {e}", o.schema.display()))?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| format!("--ovsdb-schema {}: {e}", o.schema.display()))?;
        let schema = ovsdb::Schema::from_json(&json)
            .map_err(|e| format!("--ovsdb-schema {}: {e}", o.schema.display()))?;
        if let Some(dir) = o.file.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("--ovsdb-file {}: {e}", dir.display()))?;
        }
        let (mut server, report) = ovsdb::server::Server::new(schema, Some(&o.file))
            .map_err(|e| format!("--ovsdb-file {}: {e}", o.file.display()))?;
        // A new database gets its one Open_vSwitch row (what `ovs-vsctl
        // init` makes), so that clients find the switch at once.
        if server
            .db()
            .table("Open_vSwitch")
            .is_some_and(|t| t.rows.is_empty())
        {
            let (r, _) = server.transact_local(
                &[serde_json::json!({"op": "insert", "table": "Open_vSwitch", "row": {}})],
                0,
            );
            if let Some(e) = r.iter().find(|r| r.get("error").is_some()) {
                return Err(format!("ovsdb: creating the Open_vSwitch row: {e}"));
            }
        }
        if report.dropped_bytes > 0 {
            tracing::warn!(file = %o.file.display(), bytes = report.dropped_bytes,
                "ovsdb: the database's last record was cut short (a crash while writing it); that transaction is dropped");
        }
        if let Some(v) = &report.converted_from {
            tracing::info!(file = %o.file.display(), from = %v, "ovsdb: database converted to the schema's version");
        }
        tracing::info!(file = %o.file.display(), commits = report.commits, "ovsdb: database opened");
        let shared = Arc::new(serve::Shared {
            latest: Mutex::new(None),
            to_control: EventFd::new().map_err(|e| format!("ovsdb: eventfd: {e}"))?,
            to_server: EventFd::new().map_err(|e| format!("ovsdb: eventfd: {e}"))?,
            stop: AtomicBool::new(false),
            counters: o.counters,
        });
        let (tx, rx) = channel();
        let serve = serve::Serve::new(
            server,
            shared.clone(),
            rx,
            &o.remotes,
            o.identity,
            o.max_connections,
        )?;
        let thread = std::thread::Builder::new()
            .name("ovsdb".into())
            .spawn(move || serve.run())
            .map_err(|e| format!("ovsdb: thread: {e}"))?;
        for r in &o.remotes {
            tracing::info!(remote = %r, "ovsdb: serving");
        }
        Ok(Handle {
            shared,
            to_server: tx,
            thread: Some(thread),
            current: None,
            errors: Default::default(),
            applied_cfg: None,
            forced: false,
            applied: None,
            stats_at: std::time::Instant::now(),
        })
    }

    /// The descriptor that is readable when the database changed.
    pub fn fd(&self) -> i32 {
        self.shared.to_control.fd()
    }

    /// The database if it changed since the last call.
    pub fn changed(&mut self) -> Option<Arc<ovsdb::Database>> {
        self.shared.to_control.clear();
        let latest = self.shared.latest.lock().ok().and_then(|mut l| l.take());
        match latest {
            Some(db) => {
                self.forced = false;
                self.current = Some(db.clone());
                Some(db)
            }
            None if std::mem::take(&mut self.forced) => self.current.clone(),
            None => None,
        }
    }

    /// Whether Interface statistics are due (every 5 s).
    pub fn stats_due(&mut self) -> bool {
        if self.stats_at.elapsed() < std::time::Duration::from_secs(5) {
            return false;
        }
        self.stats_at = std::time::Instant::now();
        true
    }

    /// Makes the next round apply the current database again.
    pub fn force(&mut self) {
        self.forced = true;
        self.applied = None;
    }

    /// Queues a transaction of the switch's own (results are logged when
    /// refused).
    pub fn write(&self, ops: Vec<Value>) {
        if ops.is_empty() {
            return;
        }
        if self.to_server.send(ops).is_ok() {
            self.shared.to_server.wake();
        }
    }

    /// Stops the server's thread (queued replies flushed) and waits.
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Relaxed);
        self.shared.to_server.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.stop();
    }
}
