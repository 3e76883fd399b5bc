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
//! Databases: the one served (its schema given, kept in a [`Log`]) and
//! `_Server`, read-only, with one row per database, its own included (a
//! standalone server, always connected and leader), which the IDLs
//! monitor first.

use std::collections::{BTreeMap, HashMap, VecDeque};
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

struct DbState {
    db: Database,
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

fn reply(id: &Value, result: Value) -> Value {
    json!({"id": id, "result": result, "error": null})
}

fn error_reply(id: &Value, e: Value) -> Value {
    json!({"id": id, "result": null, "error": e})
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
                db,
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
                db: sdb,
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
                        Ok(json!(results))
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
                    st.db.apply(&c);
                    if let Some(log) = &mut st.log {
                        if let Err(e) = log.maybe_compact(&st.db) {
                            tracing::warn!(error = %e, "compacting the database failed");
                        }
                    }
                    self.stats.commits += 1;
                    let c = Arc::new(c);
                    st.history.push_back(c.clone());
                    if st.history.len() > HISTORY {
                        st.history.pop_front();
                    }
                    self.notify(dbname, &c, out);
                }
                Some(results)
            }
        }
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
                        out.push((b.session, reply(&b.id, json!(results))));
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
}
