//! The JSON-RPC methods of an OVSDB server (RFC 7047 section 4, and the
//! Open vSwitch extensions its IDLs use), without sockets: messages in,
//! messages out, per session.
//!
//! The caller opens a session per connection, hands [`Server::handle`]
//! each JSON-RPC message it reads, and sends what comes back to the
//! sessions named (a reply to the caller, update notifications to every
//! session whose monitor a commit touched, `locked` to a lock's next
//! owner). [`Server::tick`] times out blocked `wait`s; the switch writes
//! its own state with [`Server::transact_local`].
//!
//! Order, as Open vSwitch's IDLs expect: a commit's update notifications
//! go out before the reply to the transaction that made it, so a client
//! that sees the reply already holds the change.
//!
//! Big transactions off the serving thread: [`Server::offload`] turns a
//! `transact` worth it (operations of [`OFFLOAD_WEIGHT`] JSON values or
//! more, or any on a database of [`OFFLOAD_ROWS`] rows or more) into a
//! [`Job`] holding the database as it is (shared, not copied). The job
//! runs anywhere ([`Job::run`]: the checks, the database after the
//! commit, its log record, a compacted log when due) while the server
//! answers others; [`Server::finish`] takes the result in. Atomicity:
//! nobody sees a job's changes before `finish`, which swaps in its
//! database whole; and it does so only if no commit came between (the
//! same database `Arc`), otherwise the job is handed back to run again on
//! the newer database, and after [`RETRIES`] such tries it is run by
//! `finish` itself. The caller keeps a session's later messages until its
//! job is finished (replies in request order).
//!
//! History (for `monitor_cond_since`): at most 256 commits, and no more
//! changed rows than the database holds (at least 10 000), as
//! ovsdb-server bounds its own; a huge commit is not kept, and a client
//! asking to catch up from before it gets the whole state.
//!
//! Databases: the one served (its schema given, kept in a [`Log`]) and
//! `_Server`, read-only, with one row per database, its own included (a
//! standalone server, always connected and leader), which the IDLs
//! monitor first.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::db::{Change, Commit, Database, Row};
use crate::error::Error;
use crate::monitor::{fold, Kind, Monitor};
use crate::schema::{server_schema, Schema};
use crate::storage::{Log, OpenReport, StorageError};
use crate::txn::{execute, Env, Outcome};
use crate::uuid::{Uuid, UuidGen};
use crate::Datum;

/// A client connection's handle.
pub type SessionId = u64;

/// The session of the switch's own transactions (no replies).
pub const LOCAL: SessionId = 0;

/// How many commits `monitor_cond_since` can catch a client up over.
const HISTORY: usize = 256;

/// A message for a session.
pub type Out = (SessionId, Value);

/// A `transact` whose operations hold at least this many JSON values is
/// run off the serving thread ([`Server::offload`])...
pub const OFFLOAD_WEIGHT: usize = 20_000;
/// ...and so is every `transact` on a database of at least this many rows
/// (a small request may still change them all: a `delete` of a table).
pub const OFFLOAD_ROWS: usize = 20_000;
/// How many times a [`Job`] is run again because another commit came
/// first, before it is run on the serving thread.
pub const RETRIES: u32 = 2;
/// The history keeps at least this many changed rows (see `committed`).
const HISTORY_ROWS: usize = 10_000;

/// A transaction to run on another thread ([`Job::run`]) against the
/// database as it was when it was made ([`Server::offload`]); what it
/// makes goes back to [`Server::finish`]. It holds no reference into the
/// server: the database is shared (`Arc`), the rest owned.
pub struct Job {
    session: SessionId,
    id: Value,
    dbname: String,
    ops: Vec<Value>,
    arrived_ms: u64,
    attempts: u32,
    base: Arc<Database>,
    /// The locks the session held when the job was made.
    owned: HashSet<String>,
    /// The log's size, base and file for a compacted copy, when there is
    /// a log.
    log: Option<(u64, u64, std::path::PathBuf)>,
    gen: UuidGen,
}

/// What [`Server::finish`] did with a [`Job`].
pub enum Finished {
    /// The messages to send, and what is left of the job to drop (see
    /// [`Leftovers`]).
    Done { out: Vec<Out>, leftovers: Leftovers },
    /// Another commit came first: run it again.
    Again(Box<Job>),
}

/// What a finished [`Job`] leaves: its operations, the database before
/// it, the commits it pushed out of the history. Dropping them frees as
/// many allocations as the job made (seconds for a million rows): the
/// caller may drop them on another thread.
#[derive(Default)]
pub struct Leftovers {
    ops: Vec<Value>,
    db: Option<Arc<Database>>,
    commits: Vec<Arc<Commit>>,
}

/// What a [`Job`] made.
pub struct Ran {
    job: Job,
    outcome: JobOutcome,
}

enum JobOutcome {
    Blocked {
        timeout_ms: u64,
    },
    Done {
        results: Vec<Value>,
        made: Option<Made>,
    },
}

/// A commit made by a job, with what the serving thread would otherwise
/// spend its time on: the database after it, its log record, and, when
/// the record makes the log due for compaction, the compacted log written
/// and synced aside (its length; an error leaves the compaction to
/// `finish`).
struct Made {
    commit: Commit,
    db: Box<Database>,
    record: Vec<u8>,
    fresh: Option<Result<u64, StorageError>>,
}

impl Job {
    /// The session that sent the transaction.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Runs the transaction (on any thread): its checks, and on success
    /// the database after it, its log record and, when due, the
    /// compacted log.
    pub fn run(mut self) -> Ran {
        let owned = std::mem::take(&mut self.owned);
        let owns = |n: &str| owned.contains(n);
        let env = Env {
            owns_lock: &owns,
            elapsed_ms: 0,
            read_only: false,
        };
        let outcome = match execute(&self.base, &mut self.gen, &self.ops, &env) {
            Outcome::Blocked { timeout_ms } => JobOutcome::Blocked { timeout_ms },
            Outcome::Done { results, commit } => JobOutcome::Done {
                results,
                made: commit.map(|commit| {
                    let record = self
                        .log
                        .as_ref()
                        .map(|_| Log::commit_record(&self.base, &commit))
                        .unwrap_or_default();
                    let mut db = Box::new((*self.base).clone());
                    db.apply(&commit);
                    let fresh = self
                        .log
                        .as_ref()
                        .filter(|(size, base, _)| {
                            crate::storage::would_compact(size + record.len() as u64, *base)
                        })
                        .map(|(_, _, aside)| Log::write_aside(aside, &Log::fresh_bytes(&db)));
                    Made {
                        commit,
                        db,
                        record,
                        fresh,
                    }
                }),
            },
        };
        self.owned = owned;
        Ran { job: self, outcome }
    }
}

impl Ran {
    /// The session that sent the transaction.
    pub fn session(&self) -> SessionId {
        self.job.session
    }
}

/// How many JSON values `v` holds, counted up to `cap`.
fn weight(v: &Value, cap: usize) -> usize {
    let mut n = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        n += 1;
        if n >= cap {
            return n;
        }
        match v {
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    n
}

struct DbState {
    /// Shared with a [`Job`] running against it, and with
    /// [`Server::db_shared`]'s callers: a commit made here while it is
    /// shared copies it first (`Arc::make_mut`).
    db: Arc<Database>,
    log: Option<Log>,
    history: VecDeque<Arc<Commit>>,
    read_only: bool,
}

#[derive(Default)]
struct Session {
    /// By the monitor id's JSON text, per database name.
    monitors: BTreeMap<String, (String, Monitor)>,
}

struct Lock {
    owner: SessionId,
    waiting: VecDeque<SessionId>,
}

struct Blocked {
    session: SessionId,
    id: Value,
    db: String,
    ops: Vec<Value>,
    arrived_ms: u64,
    timeout_ms: u64,
}

/// Counters for the daemon's metrics and tests.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    pub transactions: u64,
    pub commits: u64,
    pub monitors: u64,
    /// Rows inserted, changed or deleted by all commits.
    pub rows_changed: u64,
}

/// An OVSDB server's state.
pub struct Server {
    dbs: BTreeMap<String, DbState>,
    name: String,
    gen: UuidGen,
    sessions: HashMap<SessionId, Session>,
    next_session: SessionId,
    locks: HashMap<String, Lock>,
    blocked: Vec<Blocked>,
    server_id: Uuid,
    stats: Stats,
    /// The timeout of the transaction that last blocked.
    last_block: u64,
}

/// A JSON-RPC reply, `result` moved in (`json!` would copy it, which
/// for a transaction of a million results is seconds).
fn reply(id: &Value, result: Value) -> Value {
    response(id, result, Value::Null)
}

fn error_reply(id: &Value, e: Value) -> Value {
    response(id, Value::Null, e)
}

fn response(id: &Value, result: Value, error: Value) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("id".into(), id.clone());
    m.insert("result".into(), result);
    m.insert("error".into(), error);
    Value::Object(m)
}

impl Server {
    /// A server of the database with `schema`, kept in the log at `path`
    /// (opened, or created), or in memory only.
    pub fn new(schema: Schema, path: Option<&Path>) -> Result<(Server, OpenReport), StorageError> {
        let mut gen = UuidGen::new();
        let schema = Arc::new(schema);
        let name = schema.name.clone();
        let (db, log, report) = match path {
            Some(p) => {
                let (log, db, r) = Log::open(p, schema, &mut gen)?;
                (db, Some(log), r)
            }
            None => (Database::new(schema), None, OpenReport::default()),
        };
        let mut server = Server {
            dbs: BTreeMap::new(),
            name: name.clone(),
            server_id: gen.fresh(),
            gen,
            sessions: HashMap::new(),
            next_session: LOCAL + 1,
            locks: HashMap::new(),
            blocked: Vec::new(),
            stats: Stats::default(),
            last_block: 0,
        };
        let schema_text = db.schema.json.to_string();
        server.dbs.insert(
            name.clone(),
            DbState {
                db: Arc::new(db),
                log,
                history: VecDeque::new(),
                read_only: false,
            },
        );
        let mut sdb = Database::new(Arc::new(server_schema()));
        // One row per database, _Server's own included (as ovsdb-server
        // lists it).
        let server_text = sdb.schema.json.to_string();
        let ts = &sdb.schema.tables["Database"];
        let mut changes = Vec::new();
        for (dbname, text) in [(name, schema_text), ("_Server".to_string(), server_text)] {
            let mut cols: Vec<Datum> = ts.columns.iter().map(|c| c.ty.default_datum()).collect();
            let set = |cols: &mut Vec<Datum>, n: &str, a: crate::Atom| {
                if let Some(i) = ts.column(n) {
                    cols[i] = Datum::scalar(a);
                }
            };
            set(&mut cols, "name", crate::Atom::String(dbname));
            set(&mut cols, "model", crate::Atom::String("standalone".into()));
            set(&mut cols, "connected", crate::Atom::Boolean(true));
            set(&mut cols, "leader", crate::Atom::Boolean(true));
            set(&mut cols, "schema", crate::Atom::String(text));
            let uuid = server.gen.fresh();
            let row = Row {
                uuid,
                version: server.gen.fresh(),
                cols,
            };
            changes.push(Change {
                table: "Database".into(),
                uuid,
                old: None,
                new: Some(Arc::new(row)),
            });
        }
        let c = Commit {
            id: server.gen.fresh(),
            changes,
            comment: None,
            durable: false,
        };
        sdb.apply(&c);
        server.dbs.insert(
            "_Server".into(),
            DbState {
                db: Arc::new(sdb),
                log: None,
                history: VecDeque::new(),
                read_only: true,
            },
        );
        Ok((server, report))
    }

    /// The database served.
    pub fn db(&self) -> &Database {
        &self.dbs[&self.name].db
    }

    /// The database served, shared (no copy is made).
    pub fn db_shared(&self) -> Arc<Database> {
        self.dbs[&self.name].db.clone()
    }

    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.monitors = self
            .sessions
            .values()
            .map(|x| x.monitors.len() as u64)
            .sum();
        s
    }

    pub fn open_session(&mut self) -> SessionId {
        let s = self.next_session;
        self.next_session += 1;
        self.sessions.insert(s, Session::default());
        s
    }

    /// Whether a session holds nothing on the server: no monitor, no lock
    /// (held or waited for), no transaction blocked in a `wait`. A session
    /// that does is a live client (an IDL keeps a monitor for its whole
    /// life); one that does not loses only its connection if closed. An
    /// unknown session is not idle (there is nothing to close).
    pub fn is_idle(&self, s: SessionId) -> bool {
        let Some(x) = self.sessions.get(&s) else {
            return false;
        };
        x.monitors.is_empty()
            && !self.blocked.iter().any(|b| b.session == s)
            && !self
                .locks
                .values()
                .any(|l| l.owner == s || l.waiting.contains(&s))
    }

    /// Forgets a session: its monitors, blocked transactions and locks
    /// (the next waiter of each lock gets it).
    pub fn close_session(&mut self, s: SessionId) -> Vec<Out> {
        self.sessions.remove(&s);
        self.blocked.retain(|b| b.session != s);
        let names: Vec<String> = self.locks.keys().cloned().collect();
        let mut out = Vec::new();
        for n in names {
            self.unlock(s, &n, &mut out);
        }
        out
    }

    /// The soonest time (ms, the clock `handle` is given) a blocked
    /// transaction times out.
    pub fn next_deadline(&self) -> Option<u64> {
        self.blocked
            .iter()
            .map(|b| b.arrived_ms + b.timeout_ms)
            .min()
    }

    /// Times out blocked transactions whose time is up.
    pub fn tick(&mut self, now_ms: u64) -> Vec<Out> {
        let mut out = Vec::new();
        if self
            .blocked
            .iter()
            .any(|b| now_ms >= b.arrived_ms + b.timeout_ms)
        {
            self.retry_blocked(now_ms, &mut out);
        }
        out
    }

    /// Runs a transaction of the switch's own (writing back state); the
    /// results, and the updates it gives monitors.
    pub fn transact_local(&mut self, ops: &[Value], now_ms: u64) -> (Vec<Value>, Vec<Out>) {
        let mut out = Vec::new();
        let name = self.name.clone();
        let results = match self.run(LOCAL, &name, ops, 0, &mut out) {
            Some(r) => r,
            None => vec![Error::new("timed out", "a local transaction may not wait").to_json()],
        };
        self.retry_blocked(now_ms, &mut out);
        (results, out)
    }

    /// Handles one JSON-RPC message from a session.
    pub fn handle(&mut self, s: SessionId, msg: &Value, now_ms: u64) -> Vec<Out> {
        let mut out = Vec::new();
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            // A reply (to our echo): nothing to do.
            return out;
        };
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let empty = json!([]);
        let params = msg.get("params").unwrap_or(&empty);
        let p = params.as_array().map(Vec::as_slice).unwrap_or(&[]);
        if id.is_null() {
            // A notification: "cancel" [ID] (RFC 7047 section 4.1.4) gives
            // up a transaction still blocked in a "wait"; it is answered
            // with the error "canceled". Others are ignored.
            if method == "cancel" && p.len() == 1 {
                if let Some(i) = self
                    .blocked
                    .iter()
                    .position(|b| b.session == s && b.id == p[0])
                {
                    let b = self.blocked.remove(i);
                    out.push((
                        s,
                        error_reply(
                            &b.id,
                            Error::new("canceled", "canceled by the client").to_json(),
                        ),
                    ));
                }
            }
            return out;
        }
        let r: Result<Value, Value> = match method {
            "echo" => Ok(params.clone()),
            "list_dbs" => Ok(json!(self.dbs.keys().collect::<Vec<_>>())),
            "get_schema" => self.db_of(p).map(|d| d.db.schema.json.clone()),
            "get_server_id" => Ok(json!(self.server_id.to_string())),
            "set_db_change_aware" => Ok(json!({})),
            "transact" => {
                let Some(dbname) = p.first().and_then(Value::as_str) else {
                    out.push((
                        s,
                        error_reply(
                            &id,
                            Error::syntax("transact: database name expected as first parameter")
                                .to_json(),
                        ),
                    ));
                    return out;
                };
                if !self.dbs.contains_key(dbname) {
                    out.push((s, error_reply(&id, unknown_db(dbname))));
                    return out;
                }
                let dbname = dbname.to_string();
                match self.run(s, &dbname, &p[1..], 0, &mut out) {
                    Some(results) => {
                        self.retry_blocked(now_ms, &mut out);
                        Ok(Value::Array(results))
                    }
                    None => {
                        let timeout_ms = self.last_block;
                        self.blocked.push(Blocked {
                            session: s,
                            id: id.clone(),
                            db: dbname,
                            ops: p[1..].to_vec(),
                            arrived_ms: now_ms,
                            timeout_ms,
                        });
                        return out;
                    }
                }
            }
            "monitor" => self.monitor(s, &id, p, Kind::Monitor),
            "monitor_cond" => self.monitor(s, &id, p, Kind::Cond),
            "monitor_cond_since" => self.monitor(s, &id, p, Kind::CondSince),
            "monitor_cond_change" => self.cond_change(s, p, &mut out),
            // RFC 7047 section 4.1.7; the errors are plain strings, as
            // ovsdb-server sends them.
            "monitor_cancel" if p.len() != 1 => Err(json!("invalid parameters")),
            "monitor_cancel" => {
                let key = p[0].to_string();
                match self
                    .sessions
                    .get_mut(&s)
                    .and_then(|x| x.monitors.remove(&key))
                {
                    Some(_) => Ok(json!({})),
                    None => Err(json!("unknown monitor")),
                }
            }
            "lock" | "steal" | "unlock" => {
                let Some(name) = p.first().and_then(Value::as_str).map(String::from) else {
                    out.push((
                        s,
                        error_reply(
                            &id,
                            Error::syntax(format!("{method}: a lock name expected")).to_json(),
                        ),
                    ));
                    return out;
                };
                match method {
                    "lock" => {
                        let l = self.locks.entry(name).or_insert(Lock {
                            owner: s,
                            waiting: VecDeque::new(),
                        });
                        if l.owner == s {
                            Ok(json!({"locked": true}))
                        } else {
                            if !l.waiting.contains(&s) {
                                l.waiting.push_back(s);
                            }
                            Ok(json!({"locked": false}))
                        }
                    }
                    "steal" => {
                        let l = self.locks.entry(name.clone()).or_insert(Lock {
                            owner: s,
                            waiting: VecDeque::new(),
                        });
                        if l.owner != s {
                            let prev = l.owner;
                            l.owner = s;
                            l.waiting.retain(|&w| w != s);
                            // The one it was stolen from waits again.
                            l.waiting.push_front(prev);
                            out.push((
                                prev,
                                json!({"id": null, "method": "stolen", "params": [name]}),
                            ));
                        }
                        Ok(json!({"locked": true}))
                    }
                    _ => {
                        self.unlock(s, &name, &mut out);
                        Ok(json!({}))
                    }
                }
            }
            _ => Err(json!("unknown method")),
        };
        out.push((
            s,
            match r {
                Ok(v) => reply(&id, v),
                Err(e) => error_reply(&id, e),
            },
        ));
        out
    }

    fn unlock(&mut self, s: SessionId, name: &str, out: &mut Vec<Out>) {
        let Some(l) = self.locks.get_mut(name) else {
            return;
        };
        l.waiting.retain(|&w| w != s);
        if l.owner != s {
            return;
        }
        match l.waiting.pop_front() {
            Some(next) => {
                l.owner = next;
                out.push((
                    next,
                    json!({"id": null, "method": "locked", "params": [name]}),
                ));
            }
            None => {
                self.locks.remove(name);
            }
        }
    }

    fn db_of(&self, p: &[Value]) -> Result<&DbState, Value> {
        let name = p
            .first()
            .and_then(Value::as_str)
            .ok_or_else(|| Error::syntax("database name expected").to_json())?;
        self.dbs.get(name).ok_or_else(|| unknown_db(name))
    }

    fn monitor(
        &mut self,
        s: SessionId,
        _id: &Value,
        p: &[Value],
        kind: Kind,
    ) -> Result<Value, Value> {
        let want = if kind == Kind::CondSince { 4 } else { 3 };
        if p.len() < 3 || (kind == Kind::CondSince && p.len() < want) {
            return Err(
                Error::syntax(format!("{}: {want} parameters expected", kind.method())).to_json(),
            );
        }
        let dbname = p[0].as_str().unwrap_or("").to_string();
        let st = self.dbs.get(&dbname).ok_or_else(|| unknown_db(&dbname))?;
        let key = p[1].to_string();
        if self
            .sessions
            .get(&s)
            .is_some_and(|x| x.monitors.contains_key(&key))
        {
            return Err(Error::syntax(format!("duplicate monitor ID {key}")).to_json());
        }
        let m = Monitor::parse(&st.db, p[1].clone(), kind, &p[2]).map_err(|e| e.to_json())?;
        let result = match kind {
            Kind::CondSince => {
                let last = p[3].as_str().and_then(Uuid::parse).unwrap_or(Uuid::ZERO);
                let since: Option<Vec<Change>> = if last != Uuid::ZERO && last == st.db.last_txn {
                    Some(Vec::new())
                } else {
                    st.history.iter().position(|c| c.id == last).map(|i| {
                        fold(
                            st.history
                                .iter()
                                .skip(i + 1)
                                .flat_map(|c| c.changes.iter().cloned()),
                        )
                    })
                };
                match since {
                    Some(ch) => json!([
                        true,
                        st.db.last_txn.to_string(),
                        m.update(&st.db, &ch).unwrap_or(json!({}))
                    ]),
                    None => json!([false, st.db.last_txn.to_string(), m.initial(&st.db)]),
                }
            }
            _ => m.initial(&st.db),
        };
        self.stats.monitors += 1;
        if let Some(x) = self.sessions.get_mut(&s) {
            x.monitors.insert(key, (dbname, m));
        }
        Ok(result)
    }

    fn cond_change(
        &mut self,
        s: SessionId,
        p: &[Value],
        out: &mut Vec<Out>,
    ) -> Result<Value, Value> {
        if p.len() < 3 {
            return Err(Error::syntax("monitor_cond_change: 3 parameters expected").to_json());
        }
        let old = p[0].to_string();
        let new = p[1].to_string();
        let Some(sess) = self.sessions.get_mut(&s) else {
            return Err(json!("unknown session"));
        };
        let Some((dbname, mut m)) = sess.monitors.remove(&old) else {
            return Err(Error::syntax(format!("unknown monitor session {old}")).to_json());
        };
        if new != old && sess.monitors.contains_key(&new) {
            sess.monitors.insert(old, (dbname, m));
            return Err(Error::syntax(format!("duplicate monitor ID {new}")).to_json());
        }
        let st = &self.dbs[&dbname];
        let r = m.change_conditions(&st.db, &p[2]);
        m.id = p[1].clone();
        let kind = m.kind;
        let last = st.db.last_txn;
        sess.monitors.insert(new, (dbname, m));
        match r {
            Ok(Some(u)) => {
                let params = match kind {
                    Kind::CondSince => json!([p[1], last.to_string(), u]),
                    _ => json!([p[1], u]),
                };
                out.push((
                    s,
                    json!({"id": null, "method": kind.method(), "params": params}),
                ));
                Ok(json!({}))
            }
            Ok(None) => Ok(json!({})),
            Err(e) => Err(e.to_json()),
        }
    }

    /// Runs a transaction; None if it blocked (its timeout left in
    /// `last_block`). On commit: written to the log, applied, monitors
    /// told (into `out`), before the caller's reply.
    fn run(
        &mut self,
        s: SessionId,
        dbname: &str,
        ops: &[Value],
        elapsed_ms: u64,
        out: &mut Vec<Out>,
    ) -> Option<Vec<Value>> {
        self.stats.transactions += 1;
        let locks = &self.locks;
        let owns = |n: &str| locks.get(n).is_some_and(|l| l.owner == s);
        let st = self.dbs.get(dbname)?;
        let env = Env {
            owns_lock: &owns,
            elapsed_ms,
            read_only: st.read_only,
        };
        match execute(&st.db, &mut self.gen, ops, &env) {
            Outcome::Blocked { timeout_ms } => {
                self.last_block = timeout_ms;
                None
            }
            Outcome::Done {
                mut results,
                commit,
            } => {
                if let Some(c) = commit {
                    let st = self.dbs.get_mut(dbname)?;
                    if let Some(log) = &mut st.log {
                        if let Err(e) = log.append(&st.db, &c) {
                            results.push(
                                Error::new("I/O error", format!("writing the database: {e}"))
                                    .to_json(),
                            );
                            return Some(results);
                        }
                    }
                    Arc::make_mut(&mut st.db).apply(&c);
                    if let Some(log) = &mut st.log {
                        if let Err(e) = log.maybe_compact(&st.db) {
                            tracing::warn!(error = %e, "compacting the database failed");
                        }
                    }
                    self.committed(dbname, c, out);
                }
                Some(results)
            }
        }
    }

    /// After commit `c` is in `dbname`'s database (and log): counted, kept
    /// in the history, monitors told (into `out`).
    /// Returns the commits it dropped from the history.
    fn committed(&mut self, dbname: &str, c: Commit, out: &mut Vec<Out>) -> Vec<Arc<Commit>> {
        self.stats.commits += 1;
        self.stats.rows_changed += c.changes.len() as u64;
        let mut gone = Vec::new();
        let Some(st) = self.dbs.get_mut(dbname) else {
            return gone;
        };
        let c = Arc::new(c);
        st.history.push_back(c.clone());
        // At most HISTORY commits, and no more changed rows than the
        // database holds (as ovsdb-server bounds its history): a huge
        // commit does not keep every row it inserted or deleted alive
        // (monitor_cond_since then sends the whole state, as for a
        // transaction id it does not know).
        let limit = st.db.row_count().max(HISTORY_ROWS);
        let mut held: usize = st.history.iter().map(|c| c.changes.len()).sum();
        while st.history.len() > HISTORY || (held > limit && !st.history.is_empty()) {
            if let Some(old) = st.history.pop_front() {
                held -= old.changes.len();
                gone.push(old);
            }
        }
        self.notify(dbname, &c, out);
        gone
    }

    /// A `transact` worth running off the serving thread (see the module
    /// docs): a [`Job`] against the database as it is now, or the message
    /// back when it is not one (the caller then [`Server::handle`]s it).
    pub fn offload(&mut self, s: SessionId, msg: Value, now_ms: u64) -> Result<Job, Value> {
        let worth = msg.get("method").and_then(Value::as_str) == Some("transact")
            && !msg.get("id").is_none_or(Value::is_null)
            && msg
                .get("params")
                .and_then(Value::as_array)
                .and_then(|p| p.first())
                .and_then(Value::as_str)
                .and_then(|n| self.dbs.get(n))
                .is_some_and(|st| {
                    !st.read_only
                        && (st.db.row_count() >= OFFLOAD_ROWS
                            || weight(&msg["params"], OFFLOAD_WEIGHT) >= OFFLOAD_WEIGHT)
                });
        if !worth {
            return Err(msg);
        }
        let Value::Object(mut m) = msg else {
            return Err(msg);
        };
        let id = m.remove("id").unwrap_or(Value::Null);
        let Some(Value::Array(mut ops)) = m.remove("params") else {
            return Err(Value::Null);
        };
        let dbname = match ops.remove(0) {
            Value::String(n) => n,
            _ => String::new(),
        };
        let mut job = Job {
            session: s,
            id,
            dbname,
            ops,
            arrived_ms: now_ms,
            attempts: 0,
            base: Arc::new(Database::new(Arc::new(server_schema()))),
            owned: HashSet::new(),
            log: None,
            gen: UuidGen::new(),
        };
        self.rebase(&mut job);
        Ok(job)
    }

    /// Points `job` at the database as it is now (call it when the job is
    /// about to run, if it waited).
    pub fn rebase(&self, job: &mut Job) {
        if let Some(st) = self.dbs.get(&job.dbname) {
            job.base = st.db.clone();
            job.log = st.log.as_ref().map(|l| {
                let (size, base) = l.sizes();
                (size, base, l.aside_path())
            });
        }
        job.owned = self
            .locks
            .iter()
            .filter(|(_, l)| l.owner == job.session)
            .map(|(n, _)| n.clone())
            .collect();
    }

    /// Takes in what a [`Job`] made: the commit when the database has not
    /// changed since the job started (log, database, monitors, reply: as
    /// for a transaction run here), otherwise the job to run again
    /// (`Err`), or, after [`RETRIES`] such tries, run here.
    pub fn finish(&mut self, ran: Ran, now_ms: u64) -> Finished {
        let mut leftovers = Leftovers::default();
        match self.take_in(ran, now_ms, &mut leftovers) {
            Ok(out) => Finished::Done { out, leftovers },
            Err(job) => Finished::Again(job),
        }
    }

    fn take_in(
        &mut self,
        ran: Ran,
        now_ms: u64,
        left: &mut Leftovers,
    ) -> Result<Vec<Out>, Box<Job>> {
        let Ran { mut job, outcome } = ran;
        let mut out = Vec::new();
        let s = job.session;
        let results = match outcome {
            JobOutcome::Blocked { .. } if !self.sessions.contains_key(&s) => return Ok(out),
            JobOutcome::Blocked { timeout_ms } => {
                self.stats.transactions += 1;
                self.blocked.push(Blocked {
                    session: s,
                    id: job.id,
                    db: job.dbname,
                    ops: job.ops,
                    arrived_ms: job.arrived_ms,
                    timeout_ms,
                });
                return Ok(out);
            }
            JobOutcome::Done {
                results,
                made: None,
            } => {
                self.stats.transactions += 1;
                left.ops = std::mem::take(&mut job.ops);
                results
            }
            JobOutcome::Done {
                mut results,
                made:
                    Some(Made {
                        commit,
                        db,
                        record,
                        fresh,
                    }),
            } => {
                let Some(st) = self.dbs.get_mut(&job.dbname) else {
                    return Ok(out);
                };
                if !Arc::ptr_eq(&st.db, &job.base) {
                    // Someone committed meanwhile: the job's checks were
                    // made against a database that is gone.
                    if job.attempts < RETRIES {
                        job.attempts += 1;
                        self.rebase(&mut job);
                        return Err(Box::new(job));
                    }
                    let elapsed = now_ms.saturating_sub(job.arrived_ms);
                    match self.run(s, &job.dbname, &job.ops, elapsed, &mut out) {
                        Some(results) => {
                            self.retry_blocked(now_ms, &mut out);
                            out.push((s, reply(&job.id, Value::Array(results))));
                        }
                        None => {
                            let timeout_ms = self.last_block;
                            self.blocked.push(Blocked {
                                session: s,
                                id: job.id,
                                db: job.dbname,
                                ops: job.ops,
                                arrived_ms: job.arrived_ms,
                                timeout_ms,
                            });
                        }
                    }
                    return Ok(out);
                }
                self.stats.transactions += 1;
                let aside = match fresh {
                    Some(Ok(len)) => Some(len),
                    Some(Err(e)) => {
                        tracing::warn!(error = %e, "compacting the database failed");
                        None
                    }
                    None => None,
                };
                if let Some(log) = st.log.as_mut().filter(|_| aside.is_none()) {
                    if let Err(e) = log.append_record(&record, commit.durable) {
                        results.push(
                            Error::new("I/O error", format!("writing the database: {e}")).to_json(),
                        );
                        out.push((s, reply(&job.id, Value::Array(results))));
                        return Ok(out);
                    }
                }
                left.db = Some(std::mem::replace(&mut st.db, Arc::new(*db)));
                left.ops = std::mem::take(&mut job.ops);
                if let Some(log) = &mut st.log {
                    // The compacted log written aside holds this commit
                    // already (synced): renamed over the log, it stands
                    // for the record.
                    let done = match aside {
                        Some(len) => log.install_aside(len).map(|_| true),
                        None => log.maybe_compact(&st.db),
                    };
                    if let Err(e) = done {
                        tracing::warn!(error = %e, "compacting the database failed");
                    }
                }
                left.commits = self.committed(&job.dbname, commit, &mut out);
                results
            }
        };
        self.retry_blocked(now_ms, &mut out);
        out.push((s, reply(&job.id, Value::Array(results))));
        Ok(out)
    }

    fn notify(&self, dbname: &str, c: &Commit, out: &mut Vec<Out>) {
        let db = &self.dbs[dbname].db;
        let mut ids: Vec<&SessionId> = self.sessions.keys().collect();
        ids.sort();
        for sid in ids {
            for (d, m) in self.sessions[sid].monitors.values() {
                if d != dbname {
                    continue;
                }
                if let Some(u) = m.update(db, &c.changes) {
                    let params = match m.kind {
                        Kind::CondSince => json!([m.id, c.id.to_string(), u]),
                        _ => json!([m.id, u]),
                    };
                    out.push((
                        *sid,
                        json!({"id": null, "method": m.kind.method(), "params": params}),
                    ));
                }
            }
        }
    }

    /// Runs blocked transactions again (after a commit, or when one's time
    /// is up).
    fn retry_blocked(&mut self, now_ms: u64, out: &mut Vec<Out>) {
        let mut progress = true;
        while progress && !self.blocked.is_empty() {
            progress = false;
            let pending = std::mem::take(&mut self.blocked);
            for b in pending {
                let elapsed = now_ms.saturating_sub(b.arrived_ms);
                let commits = self.stats.commits;
                match self.run(b.session, &b.db, &b.ops, elapsed, out) {
                    Some(results) => {
                        out.push((b.session, reply(&b.id, Value::Array(results))));
                        progress |= self.stats.commits != commits;
                    }
                    None => self.blocked.push(b),
                }
            }
        }
    }
}

fn unknown_db(name: &str) -> Value {
    json!({"error": "unknown database", "details": format!("{name} is not a valid database name")})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> Server {
        let schema = Schema::from_json(&json!({
            "name": "T",
            "version": "1.0.0",
            "tables": {"A": {"columns": {"x": {"type": "integer"}}, "isRoot": true}}
        }))
        .unwrap();
        Server::new(schema, None).unwrap().0
    }

    fn call(s: &mut Server, sid: SessionId, method: &str, params: Value) -> Vec<Out> {
        s.handle(
            sid,
            &json!({"id": 1, "method": method, "params": params}),
            0,
        )
    }

    #[test]
    fn a_session_is_idle_until_it_holds_a_monitor_a_lock_or_a_blocked_wait() {
        let mut s = server();
        let a = s.open_session();
        assert!(s.is_idle(a), "a new session");
        assert!(!s.is_idle(a + 100), "an unknown session");
        call(&mut s, a, "echo", json!([]));
        call(
            &mut s,
            a,
            "transact",
            json!(["T", {"op": "insert", "table": "A", "row": {"x": 1}}]),
        );
        assert!(s.is_idle(a), "answered requests leave nothing behind");

        call(&mut s, a, "monitor", json!(["T", "m", {"A": {}}]));
        assert!(!s.is_idle(a), "a monitor");
        call(&mut s, a, "monitor_cancel", json!(["m"]));
        assert!(s.is_idle(a), "the monitor cancelled");

        let b = s.open_session();
        call(&mut s, a, "lock", json!(["l"]));
        assert!(!s.is_idle(a), "a lock held");
        call(&mut s, b, "lock", json!(["l"]));
        assert!(!s.is_idle(b), "a lock waited for");
        call(&mut s, a, "unlock", json!(["l"]));
        assert!(s.is_idle(a));
        call(&mut s, b, "unlock", json!(["l"]));
        assert!(s.is_idle(b));

        let out = call(
            &mut s,
            b,
            "transact",
            json!(["T", {"op": "wait", "table": "A", "where": [], "columns": ["x"],
                         "until": "==", "rows": [], "timeout": 10000}]),
        );
        assert!(out.is_empty(), "the wait blocks: {out:?}");
        assert!(!s.is_idle(b), "a transaction blocked in a wait");
        let out = s.handle(
            b,
            &json!({"id": null, "method": "cancel", "params": [1]}),
            1,
        );
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(s.is_idle(b), "the wait cancelled");
    }

    fn inserts(n: i64) -> Value {
        let mut ops = vec![json!("T")];
        ops.extend((0..n).map(|i| json!({"op": "insert", "table": "A", "row": {"x": i}})));
        json!({"id": 7, "method": "transact", "params": ops})
    }

    fn done(f: Finished) -> Vec<Out> {
        match f {
            Finished::Done { out, .. } => out,
            Finished::Again(_) => panic!("run again, though no commit came first"),
        }
    }

    #[test]
    fn a_small_transaction_is_not_offloaded() {
        let mut s = server();
        let a = s.open_session();
        let m = inserts(3);
        assert_eq!(s.offload(a, m.clone(), 0).err(), Some(m));
        let r = json!({"id": 1, "method": "list_dbs", "params": []});
        assert_eq!(s.offload(a, r.clone(), 0).err(), Some(r));
    }

    #[test]
    fn a_job_commits_as_a_transaction_run_here_would() {
        let mut s = server();
        let (a, m) = (s.open_session(), s.open_session());
        call(&mut s, m, "monitor", json!(["T", "mon", {"A": {}}]));
        let job = s.offload(a, inserts(5_000), 0).expect("offloaded");
        // Others are served meanwhile (the job holds no borrow).
        let l = call(&mut s, m, "list_dbs", json!([]));
        assert_eq!(l[0].1["result"], json!(["T", "_Server"]));
        let ran = std::thread::spawn(move || job.run()).join().unwrap();
        let out = done(s.finish(ran, 0));
        // The update first, then the reply.
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!((out[0].0, &out[0].1["method"]), (m, &json!("update")));
        assert_eq!(
            out[0].1["params"][1]["A"].as_object().map(|o| o.len()),
            Some(5_000)
        );
        assert_eq!(out[1].0, a);
        assert_eq!(out[1].1["id"], 7);
        assert_eq!(out[1].1["result"].as_array().map(Vec::len), Some(5_000));
        assert_eq!(s.db().row_count(), 5_000);
        assert_eq!(s.stats().commits, 1);
        assert_eq!(s.stats().transactions, 1);
    }

    #[test]
    fn a_job_that_makes_the_log_due_writes_it_compacted_and_it_reopens_whole() {
        let dir = std::env::temp_dir().join(format!("ovsdb-job-log-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("conf.db");
        let schema = || server().db().schema.as_ref().clone();
        let (mut s, _) = Server::new(schema(), Some(&path)).unwrap();
        let a = s.open_session();
        // Over 2 MB of record on a log of a few hundred bytes: due.
        let job = s.offload(a, inserts(40_000), 0).expect("offloaded");
        let ran = job.run();
        let aside = dir.join("conf.db.job");
        assert!(
            aside.exists(),
            "the compacted log is written aside by the job"
        );
        let out = done(s.finish(ran, 0));
        assert!(out[0].1["error"].is_null());
        assert!(!aside.exists(), "and renamed over the log");
        let size = std::fs::metadata(&path).unwrap().len();
        call(
            &mut s,
            a,
            "transact",
            json!(["T", {"op": "insert", "table": "A", "row": {"x": -1}}]),
        );
        assert!(
            std::fs::metadata(&path).unwrap().len() > size,
            "appended to after"
        );
        drop(s);
        let (s, _) = Server::new(schema(), Some(&path)).unwrap();
        assert_eq!(s.db().row_count(), 40_001);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_job_overtaken_by_another_commit_runs_again_and_both_count() {
        let mut s = server();
        let (a, b) = (s.open_session(), s.open_session());
        let job = s.offload(a, inserts(5_000), 0).expect("offloaded");
        let r = call(
            &mut s,
            b,
            "transact",
            json!(["T", {"op": "insert", "table": "A", "row": {"x": -1}}]),
        );
        assert!(r[0].1["error"].is_null(), "{r:?}");
        let ran = job.run();
        let job = match s.finish(ran, 0) {
            Finished::Again(job) => job,
            Finished::Done { out, .. } => panic!("committed over a newer database: {out:?}"),
        };
        let out = done(s.finish(job.run(), 0));
        assert_eq!(out[0].1["result"].as_array().map(Vec::len), Some(5_000));
        assert_eq!(s.db().row_count(), 5_001);
        assert_eq!(s.stats().commits, 2);
    }

    #[test]
    fn a_failing_job_changes_nothing() {
        let mut s = server();
        let a = s.open_session();
        let mut m = inserts(5_000);
        m["params"]
            .as_array_mut()
            .unwrap()
            .push(json!({"op": "insert", "table": "A", "row": {"x": "not a number"}}));
        let job = s.offload(a, m, 0).expect("offloaded");
        let out = done(s.finish(job.run(), 0));
        let res = out[0].1["result"].as_array().unwrap();
        assert_eq!(res.len(), 5_001);
        assert!(res[5_000]["error"].is_string(), "{}", res[5_000]);
        assert_eq!(s.db().row_count(), 0);
        assert_eq!(s.stats().commits, 0);
    }

    #[test]
    fn the_history_holds_no_more_changed_rows_than_the_database_holds() {
        let mut s = server();
        let a = s.open_session();
        let out = s.handle(a, &inserts(HISTORY_ROWS as i64 * 3), 0);
        assert!(out[0].1["error"].is_null());
        let held =
            |s: &Server| -> usize { s.dbs["T"].history.iter().map(|c| c.changes.len()).sum() };
        assert_eq!(
            held(&s),
            HISTORY_ROWS * 3,
            "the rows are in the database: kept"
        );
        call(
            &mut s,
            a,
            "transact",
            json!(["T", {"op": "delete", "table": "A", "where": []}]),
        );
        assert_eq!(s.db().row_count(), 0);
        // Neither the insert nor the delete is kept: they would hold every
        // deleted row alive.
        assert_eq!(held(&s), 0);
        call(
            &mut s,
            a,
            "transact",
            json!(["T", {"op": "insert", "table": "A", "row": {"x": 1}}]),
        );
        assert_eq!(held(&s), 1);
    }
}
