//! Monitors (RFC 7047 section 4.1.5, and Open vSwitch's `monitor_cond`
//! and `monitor_cond_since`): what a client asked to watch, the initial
//! contents it gets in the reply, and the update each commit gives it.
//!
//! Three dialects share one monitor:
//! * `monitor` replies and notifies with `update`: per row `{"old", "new"}`,
//!   where a modification's `old` holds only the columns that changed;
//! * `monitor_cond` with `update2`: per row one of `initial`, `insert`,
//!   `delete`, `modify`; an insert leaves out columns at their default
//!   value; a modify carries each changed column's difference
//!   ([`Datum::diff`]); each table may have a `where` clause (a row
//!   matches if it matches any of its conditions), and a row entering or
//!   leaving it is an insert or delete;
//! * `monitor_cond_since` with `update3`: as `update2`, with the id of the
//!   transaction that made it, so a client that comes back can ask for
//!   only what it missed.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::cond::Where;
use crate::datum::Datum;
use crate::db::{Change, Database, Row};
use crate::error::{Error, Result};
use crate::schema::TableSchema;
use crate::uuid::Uuid;

/// Which method made the monitor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Monitor,
    Cond,
    CondSince,
}

impl Kind {
    /// The notification's method.
    pub fn method(self) -> &'static str {
        match self {
            Kind::Monitor => "update",
            Kind::Cond => "update2",
            Kind::CondSince => "update3",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Select {
    initial: bool,
    insert: bool,
    delete: bool,
    modify: bool,
}

#[derive(Debug, Clone)]
struct TableMon {
    /// Monitored columns, in schema order.
    cols: Vec<usize>,
    select: Select,
    /// The condition: a row matching any of the requests' clauses (None:
    /// every row).
    cond: Option<Any>,
}

/// One monitor of one session.
#[derive(Debug, Clone)]
pub struct Monitor {
    pub id: Value,
    pub kind: Kind,
    tables: BTreeMap<String, TableMon>,
}

fn parse_select(v: Option<&Value>) -> Result<Select> {
    let mut s = Select {
        initial: true,
        insert: true,
        delete: true,
        modify: true,
    };
    let Some(v) = v else { return Ok(s) };
    let o = v
        .as_object()
        .ok_or_else(|| Error::syntax("\"select\" must be an object"))?;
    for (k, b) in o {
        let b = b
            .as_bool()
            .ok_or_else(|| Error::syntax(format!("\"select\" member {k} must be a boolean")))?;
        match k.as_str() {
            "initial" => s.initial = b,
            "insert" => s.insert = b,
            "delete" => s.delete = b,
            "modify" => s.modify = b,
            _ => return Err(Error::syntax(format!("unknown \"select\" member {k}"))),
        }
    }
    Ok(s)
}

impl Monitor {
    /// Parses a monitor request object `{TABLE: REQUEST or [REQUEST...]}`.
    pub fn parse(db: &Database, id: Value, kind: Kind, reqs: &Value) -> Result<Monitor> {
        let o = reqs
            .as_object()
            .ok_or_else(|| Error::syntax("monitor requests must be an object"))?;
        let mut tables = BTreeMap::new();
        for (tname, r) in o {
            let ts = table_of(db, tname)?;
            let list = requests(r);
            let mut mon = TableMon {
                cols: Vec::new(),
                select: Select {
                    initial: false,
                    insert: false,
                    delete: false,
                    modify: false,
                },
                cond: None,
            };
            let mut any_cond = false;
            let mut conds: Vec<Where> = Vec::new();
            for req in list {
                let req = req
                    .as_object()
                    .ok_or_else(|| Error::syntax("a monitor request must be an object"))?;
                match req.get("columns") {
                    None => mon.cols.extend(0..ts.columns.len()),
                    Some(c) => {
                        let c = c
                            .as_array()
                            .ok_or_else(|| Error::syntax("\"columns\" must be a list"))?;
                        for n in c {
                            let n = n.as_str().ok_or_else(|| {
                                Error::syntax("\"columns\" must be a list of names")
                            })?;
                            // _uuid is always sent; _version is not a column here.
                            if n == "_uuid" || n == "_version" {
                                continue;
                            }
                            mon.cols.push(ts.column(n).ok_or_else(|| {
                                Error::syntax(format!("table {tname} has no column {n:?}"))
                            })?);
                        }
                    }
                }
                let s = parse_select(req.get("select"))?;
                mon.select.initial |= s.initial;
                mon.select.insert |= s.insert;
                mon.select.delete |= s.delete;
                mon.select.modify |= s.modify;
                if kind != Kind::Monitor {
                    if let Some(w) = req.get("where") {
                        any_cond = true;
                        conds.extend(clauses(ts, w)?);
                    } else {
                        conds.push(Where::default());
                    }
                }
            }
            mon.cols.sort_unstable();
            mon.cols.dedup();
            if any_cond {
                mon.cond = Some(union(conds));
            }
            tables.insert(tname.clone(), mon);
        }
        Ok(Monitor { id, kind, tables })
    }

    /// Replaces the conditions of some tables (`monitor_cond_change`) and
    /// returns the update that brings the client's view in line: rows
    /// that now match are inserted, rows that no longer match deleted.
    /// (Only the conditions change: naming columns is refused.)
    pub fn change_conditions(&mut self, db: &Database, changes: &Value) -> Result<Option<Value>> {
        let o = changes
            .as_object()
            .ok_or_else(|| Error::syntax("condition changes must be an object"))?;
        let mut parsed = Vec::new();
        for (tname, r) in o {
            let ts = table_of(db, tname)?;
            if !self.tables.contains_key(tname) {
                return Err(Error::syntax(format!("table {tname} is not monitored")));
            }
            let list = requests(r);
            let mut conds = Vec::new();
            for req in list {
                if req.get("columns").is_some() {
                    return Err(Error::syntax(format!(
                        "table {tname}: changing columns is unsupported"
                    )));
                }
                match req.get("where") {
                    Some(w) => conds.extend(clauses(ts, w)?),
                    None => conds.push(Where::default()),
                }
            }
            parsed.push((tname.clone(), union(conds)));
        }
        // A `monitor` (update) has no conditions: the change is taken and
        // changes nothing, as with ovsdb-server.
        if self.kind == Kind::Monitor {
            return Ok(None);
        }
        let mut out = Map::new();
        for (tname, w) in parsed {
            let ts = &db.schema.tables[&tname];
            let Some(mon) = self.tables.get_mut(&tname) else {
                continue;
            };
            let old = mon.cond.replace(w);
            let mut rows = Map::new();
            if let Some(t) = db.table(&tname) {
                for r in t.rows.values() {
                    let was = old.as_ref().is_none_or(|c| c.eval(r));
                    let is = mon.cond.as_ref().is_none_or(|c| c.eval(r));
                    if was && !is {
                        rows.insert(r.uuid.to_string(), json!({"delete": null}));
                    } else if is && !was {
                        rows.insert(
                            r.uuid.to_string(),
                            json!({"insert": row2(r, ts, &mon.cols)}),
                        );
                    }
                }
            }
            if !rows.is_empty() {
                out.insert(tname, Value::Object(rows));
            }
        }
        Ok((!out.is_empty()).then_some(Value::Object(out)))
    }

    /// The monitor's initial contents, for its reply.
    pub fn initial(&self, db: &Database) -> Value {
        let mut out = Map::new();
        for (tname, mon) in &self.tables {
            if !mon.select.initial {
                continue;
            }
            let (Some(t), Some(ts)) = (db.table(tname), db.schema.tables.get(tname)) else {
                continue;
            };
            let mut rows = Map::new();
            for r in t.rows.values() {
                if mon.cond.as_ref().is_some_and(|c| !c.eval(r)) {
                    continue;
                }
                let v = match self.kind {
                    Kind::Monitor => json!({"new": cols_json(r, ts, &mon.cols)}),
                    _ => json!({"initial": row2(r, ts, &mon.cols)}),
                };
                rows.insert(r.uuid.to_string(), v);
            }
            if !rows.is_empty() {
                out.insert(tname.clone(), Value::Object(rows));
            }
        }
        Value::Object(out)
    }

    /// The table updates a set of changes gives this monitor (None when it
    /// does not care about any of them). For changes from several
    /// commits, give one change per row: its first old and last new.
    pub fn update(&self, db: &Database, changes: &[Change]) -> Option<Value> {
        let mut out = Map::new();
        for ch in changes {
            let Some(mon) = self.tables.get(&ch.table) else {
                continue;
            };
            let Some(ts) = db.schema.tables.get(&ch.table) else {
                continue;
            };
            let matches = |r: &Option<Arc<Row>>| {
                r.as_ref()
                    .is_some_and(|r| mon.cond.as_ref().is_none_or(|c| c.eval(r)))
            };
            let (was, is) = (matches(&ch.old), matches(&ch.new));
            let v = match (was, is, &ch.old, &ch.new) {
                (false, true, _, Some(new)) if mon.select.insert => match self.kind {
                    Kind::Monitor => json!({"new": cols_json(new, ts, &mon.cols)}),
                    _ => json!({"insert": row2(new, ts, &mon.cols)}),
                },
                (true, false, Some(old), _) if mon.select.delete => match self.kind {
                    Kind::Monitor => json!({"old": cols_json(old, ts, &mon.cols)}),
                    _ => json!({"delete": null}),
                },
                (true, true, Some(old), Some(new)) if mon.select.modify => {
                    let changed: Vec<usize> = mon
                        .cols
                        .iter()
                        .copied()
                        .filter(|&i| old.cols[i] != new.cols[i])
                        .collect();
                    if changed.is_empty() {
                        continue;
                    }
                    match self.kind {
                        Kind::Monitor => json!({
                            "old": cols_json(old, ts, &changed),
                            "new": cols_json(new, ts, &mon.cols),
                        }),
                        _ => {
                            let mut m = Map::new();
                            for i in changed {
                                let ty = &ts.columns[i].ty;
                                m.insert(
                                    ts.columns[i].name.clone(),
                                    Datum::diff(&old.cols[i], &new.cols[i], ty).to_json(ty),
                                );
                            }
                            json!({"modify": Value::Object(m)})
                        }
                    }
                }
                _ => continue,
            };
            let t = out
                .entry(ch.table.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(rows) = t {
                rows.insert(ch.uuid.to_string(), v);
            }
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }
}

/// A monitor request's `where`: a row matches if it matches any of its
/// clauses (unlike a transaction's, where it must match every one), and
/// every row if there is none; one single-clause [`Where`] per clause.
fn clauses(ts: &TableSchema, w: &Value) -> Result<Vec<Where>> {
    let all = Where::parse(ts, w, &mut |_| None)?;
    if all.0.is_empty() {
        return Ok(vec![Where::default()]);
    }
    Ok(all.0.into_iter().map(|c| Where(vec![c])).collect())
}

/// A monitored table's schema, or the error naming it.
fn table_of<'a>(db: &'a Database, tname: &str) -> Result<&'a TableSchema> {
    db.schema.tables.get(tname).ok_or_else(|| {
        Error::syntax(format!(
            "no table named {tname:?} in database {}",
            db.schema.name
        ))
    })
}

/// A table's monitor requests: one object, or a list of them.
fn requests(r: &Value) -> Vec<&Value> {
    match r {
        Value::Array(a) => a.iter().collect(),
        v => vec![v],
    }
}

/// Rows matching any of several requests' `where` clauses.
#[derive(Debug, Clone)]
struct Any(Vec<Where>);

impl Any {
    fn eval(&self, r: &Row) -> bool {
        self.0.iter().any(|w| w.eval(r))
    }
}

fn union(conds: Vec<Where>) -> Any {
    Any(conds)
}

fn cols_json(r: &Row, ts: &TableSchema, cols: &[usize]) -> Value {
    r.to_json(ts, Some(cols), false)
}

/// A row for `initial` and `insert` of update2: default values left out.
fn row2(r: &Row, ts: &TableSchema, cols: &[usize]) -> Value {
    let mut m = Map::new();
    for &i in cols {
        let c = &ts.columns[i];
        if r.cols[i] != c.ty.default_datum() {
            m.insert(c.name.clone(), r.cols[i].to_json(&c.ty));
        }
    }
    Value::Object(m)
}

/// Folds the changes of several commits into one per row: its first old
/// and last new.
pub fn fold(changes: impl IntoIterator<Item = Change>) -> Vec<Change> {
    let mut by: BTreeMap<(String, Uuid), Change> = BTreeMap::new();
    for ch in changes {
        match by.get_mut(&(ch.table.clone(), ch.uuid)) {
            Some(prev) => prev.new = ch.new,
            None => {
                by.insert((ch.table.clone(), ch.uuid), ch);
            }
        }
    }
    by.into_values()
        .filter(|c| c.old.is_some() || c.new.is_some())
        .collect()
}
