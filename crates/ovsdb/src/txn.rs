//! `transact` (RFC 7047 sections 4.1.3 and 5.2): a list of operations run
//! against a database as one atomic transaction.
//!
//! Operations see the committed rows through an overlay of the rows this
//! transaction inserted, changed or deleted; nothing touches the database
//! until every operation succeeded and the commit-time checks pass
//! ([`Txn::finish`]): garbage collection of unreferenced rows in non-root
//! tables, removal of weak references to rows that are gone, referential
//! integrity of strong references, the number of elements of every
//! column, `maxRows`, and unique indexes. Results follow Open vSwitch:
//! one per operation, an error object where the first failure was and
//! `null` after it; a failure at commit is one more element.
//!
//! A `wait` that is not yet satisfied and has a timeout makes the whole
//! transaction [`Outcome::Blocked`]: the server runs it again after each
//! commit until it succeeds or its time is up.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::cond::{Col, Mutation, Where};
use crate::datum::{Atom, Datum};
use crate::db::{Change, Commit, Database, Row};
use crate::error::{Error, Result};
use crate::schema::{RefType, TableSchema};
use crate::uuid::{Uuid, UuidGen};

/// What the caller knows of the client.
pub struct Env<'a> {
    /// Whether the client holds a lock (for `assert`).
    pub owns_lock: &'a dyn Fn(&str) -> bool,
    /// Milliseconds since the transaction first arrived (for `wait`).
    pub elapsed_ms: u64,
    /// No operation may change anything (`_Server`).
    pub read_only: bool,
}

/// The outcome of running a transaction.
#[derive(Debug)]
pub enum Outcome {
    /// The reply's results, and the commit when anything changed.
    Done {
        results: Vec<Value>,
        commit: Option<Commit>,
    },
    /// A `wait` is not satisfied yet: try again after the next commit, or
    /// when `timeout_ms` (since arrival) has passed.
    Blocked { timeout_ms: u64 },
}

/// Runs the operations `ops` (the `transact` parameters after the
/// database name).
pub fn execute(db: &Database, gen: &mut UuidGen, ops: &[Value], env: &Env) -> Outcome {
    let mut t = Txn {
        db,
        overlay: BTreeMap::new(),
        symbols: HashMap::new(),
        gen,
        comments: Vec::new(),
        durable: false,
        blocked: None,
    };
    let mut results = Vec::with_capacity(ops.len() + 1);
    let mut failed = false;
    for op in ops {
        match t.op(op, env) {
            Ok(r) => results.push(r),
            Err(e) => {
                if let Some(timeout_ms) = t.blocked {
                    return Outcome::Blocked { timeout_ms };
                }
                results.push(e.to_json());
                failed = true;
                break;
            }
        }
    }
    if failed {
        results.resize(ops.len(), Value::Null);
        return Outcome::Done {
            results,
            commit: None,
        };
    }
    match t.finish() {
        Ok(commit) => Outcome::Done { results, commit },
        Err(e) => {
            results.push(e.to_json());
            Outcome::Done {
                results,
                commit: None,
            }
        }
    }
}

struct Txn<'a> {
    db: &'a Database,
    /// Per table: rows this transaction inserted or changed (Some) or
    /// deleted (None).
    overlay: BTreeMap<String, BTreeMap<Uuid, Option<Arc<Row>>>>,
    /// uuid-name -> (UUID, whether an insert defined it).
    symbols: HashMap<String, (Uuid, bool)>,
    gen: &'a mut UuidGen,
    comments: Vec<String>,
    durable: bool,
    blocked: Option<u64>,
}

fn member<'v>(op: &'v Map<String, Value>, k: &str) -> Result<&'v Value> {
    op.get(k)
        .ok_or_else(|| Error::syntax(format!("operation without \"{k}\"")))
}

fn str_member<'v>(op: &'v Map<String, Value>, k: &str) -> Result<&'v str> {
    member(op, k)?
        .as_str()
        .ok_or_else(|| Error::syntax(format!("\"{k}\" must be a string")))
}

impl<'a> Txn<'a> {
    fn get(&self, table: &str, u: Uuid) -> Option<Arc<Row>> {
        match self.overlay.get(table).and_then(|o| o.get(&u)) {
            Some(r) => r.clone(),
            None => self.db.row(table, u).cloned(),
        }
    }

    /// The rows of `table` matching `w`, in UUID order.
    fn scan(&self, table: &str, w: &Where) -> Vec<Arc<Row>> {
        if let Some(u) = w.uuid_eq() {
            return self
                .get(table, u)
                .filter(|r| w.eval(r.as_ref()))
                .into_iter()
                .collect();
        }
        let empty = BTreeMap::new();
        let ov = self.overlay.get(table).unwrap_or(&empty);
        let mut out: Vec<Arc<Row>> = Vec::new();
        if let Some(t) = self.db.table(table) {
            for (u, r) in &t.rows {
                if !ov.contains_key(u) && w.eval(r.as_ref()) {
                    out.push(r.clone());
                }
            }
        }
        for r in ov.values().flatten() {
            if w.eval(r.as_ref()) {
                out.push(r.clone());
            }
        }
        out.sort_by_key(|r| r.uuid);
        out
    }

    fn put(&mut self, table: &str, u: Uuid, r: Option<Arc<Row>>) {
        self.overlay
            .entry(table.to_string())
            .or_default()
            .insert(u, r);
    }

    fn table(&self, op: &Map<String, Value>) -> Result<(&'a TableSchema, String)> {
        let name = str_member(op, "table")?;
        let db: &'a Database = self.db;
        let ts = db.schema.tables.get(name).ok_or_else(|| {
            Error::syntax(format!(
                "no table named {name:?} in database {}",
                self.db.schema.name
            ))
        })?;
        Ok((ts, name.to_string()))
    }

    fn where_(&mut self, ts: &TableSchema, op: &Map<String, Value>) -> Result<Where> {
        let (symbols, gen) = (&mut self.symbols, &mut *self.gen);
        Where::parse(ts, member(op, "where")?, &mut |n| {
            Some(resolve(symbols, gen, n))
        })
    }

    /// Parses a row object: (column number, value) pairs.
    fn parse_row(&mut self, ts: &TableSchema, v: &Value) -> Result<Vec<(usize, Datum)>> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::syntax(format!("{v}: a row must be an object")))?;
        let mut out = Vec::with_capacity(o.len());
        for (name, val) in o {
            let i = match Col::parse(ts, name)? {
                Col::Column(i) => i,
                _ => return Err(Error::constraint(format!("{name} cannot be written"))),
            };
            let (symbols, gen) = (&mut self.symbols, &mut *self.gen);
            let d = Datum::from_json(&ts.columns[i].ty, val, &mut |n| {
                Some(resolve(symbols, gen, n))
            })
            .map_err(|e| Error::new(e.tag, format!("column {name}: {}", e.details)))?;
            out.push((i, d));
        }
        Ok(out)
    }

    fn op(&mut self, v: &Value, env: &Env) -> Result<Value> {
        let op = v
            .as_object()
            .ok_or_else(|| Error::syntax(format!("{v}: an operation must be an object")))?;
        let name = str_member(op, "op")?;
        let writes = !matches!(
            name,
            "select" | "wait" | "comment" | "assert" | "commit" | "abort"
        );
        if writes && env.read_only {
            return Err(Error::new(
                "not allowed",
                format!(
                    "{name} operation not allowed on database {}",
                    self.db.schema.name
                ),
            ));
        }
        let allowed: &[&str] = match name {
            "insert" => &["uuid", "uuid-name", "row"],
            "select" => &["where", "columns"],
            "update" => &["where", "row"],
            "mutate" => &["where", "mutations"],
            "delete" => &["where"],
            "wait" => &["timeout", "where", "columns", "until", "rows"],
            "commit" => &["durable"],
            "comment" => &["comment"],
            "assert" => &["lock"],
            _ => &[],
        };
        let r = self.run_op(name, op, env)?;
        // A member the operation does not have is an error (once the
        // operation is otherwise fine), as ovsdb-server says.
        let table = !matches!(name, "commit" | "abort" | "comment" | "assert");
        if let Some(k) = op
            .keys()
            .find(|k| *k != "op" && !(table && *k == "table") && !allowed.contains(&k.as_str()))
        {
            return Err(Error::syntax(format!(
                "member {k:?} is not allowed in a {name} operation"
            )));
        }
        Ok(r)
    }

    fn run_op(&mut self, name: &str, op: &Map<String, Value>, env: &Env) -> Result<Value> {
        match name {
            "insert" => self.insert(op),
            "select" => self.select(op),
            "update" => self.update(op),
            "mutate" => self.mutate(op),
            "delete" => self.delete(op),
            "wait" => self.wait(op, env),
            "commit" => {
                self.durable = member(op, "durable")?
                    .as_bool()
                    .ok_or_else(|| Error::syntax("\"durable\" must be a boolean"))?;
                Ok(json!({}))
            }
            "abort" => Err(Error::new("aborted", "aborted by request")),
            "comment" => {
                self.comments.push(str_member(op, "comment")?.to_string());
                Ok(json!({}))
            }
            "assert" => {
                let lock = str_member(op, "lock")?;
                if (env.owns_lock)(lock) {
                    Ok(json!({}))
                } else {
                    Err(Error::new(
                        "not owner",
                        format!("asserted lock {lock:?} not held"),
                    ))
                }
            }
            n => Err(Error::syntax(format!("no operation {n:?}"))),
        }
    }

    fn insert(&mut self, op: &Map<String, Value>) -> Result<Value> {
        let db = self.db;
        let (ts, tname) = self.table(op)?;
        let given = match op.get("uuid") {
            None => None,
            Some(v) => Some(
                v.as_str()
                    .and_then(Uuid::parse)
                    .ok_or_else(|| Error::syntax(format!("{v}: bad uuid")))?,
            ),
        };
        let uuid = match op.get("uuid-name") {
            Some(n) => {
                let n = n
                    .as_str()
                    .ok_or_else(|| Error::syntax("\"uuid-name\" must be a string"))?;
                let u = match given {
                    Some(u) => u,
                    None => resolve(&mut self.symbols, self.gen, n),
                };
                let s = self.symbols.entry(n.to_string()).or_insert((u, false));
                if s.1 {
                    return Err(Error::new(
                        "duplicate uuid-name",
                        format!("{n:?} named an earlier insert"),
                    ));
                }
                *s = (u, true);
                u
            }
            None => match given {
                Some(u) => u,
                None => self.gen.fresh(),
            },
        };
        let exists = self
            .overlay
            .get(&tname)
            .is_some_and(|o| o.contains_key(&uuid))
            || db.row(&tname, uuid).is_some();
        if exists {
            return Err(Error::new(
                "duplicate uuid",
                format!("{uuid} is already a row of table {tname}"),
            ));
        }
        let mut cols: Vec<Datum> = ts.columns.iter().map(|c| c.ty.default_datum()).collect();
        let mut given = vec![false; cols.len()];
        let row = member(op, "row")?;
        for (i, d) in self.parse_row(ts, row)? {
            cols[i] = d;
            given[i] = true;
        }
        // A column left out takes its type's default (0, "", false, or
        // the empty set), which must meet the column's constraints too: a
        // row that leaves out an enum column whose values do not include
        // "" is refused, as ovsdb-server refuses it.
        for (i, c) in ts.columns.iter().enumerate() {
            if !given[i] {
                c.ty.check_atoms(&cols[i]).map_err(|e| {
                    Error::new(
                        e.tag,
                        format!("column {} (its default): {}", c.name, e.details),
                    )
                })?;
            }
        }
        let version = self.gen.fresh();
        self.put(
            &tname,
            uuid,
            Some(Arc::new(Row {
                uuid,
                version,
                cols,
            })),
        );
        Ok(json!({"uuid": ["uuid", uuid.to_string()]}))
    }

    fn select(&mut self, op: &Map<String, Value>) -> Result<Value> {
        let (ts, tname) = self.table(op)?;
        let w = self.where_(ts, op)?;
        let cols = columns(ts, op.get("columns"))?;
        let rows: Vec<Value> = self
            .scan(&tname, &w)
            .iter()
            .map(|r| project(r, ts, cols.as_deref()))
            .collect();
        Ok(json!({"rows": rows}))
    }

    fn update(&mut self, op: &Map<String, Value>) -> Result<Value> {
        let (ts, tname) = self.table(op)?;
        let w = self.where_(ts, op)?;
        let new = self.parse_row(ts, member(op, "row")?)?;
        for (i, _) in &new {
            if !ts.columns[*i].mutable {
                return Err(Error::constraint(format!(
                    "column {} of table {tname} is not mutable",
                    ts.columns[*i].name
                )));
            }
        }
        let rows = self.scan(&tname, &w);
        for r in &rows {
            let mut row = Row::clone(r);
            for (i, d) in &new {
                row.cols[*i] = d.clone();
            }
            row.version = self.gen.fresh();
            self.put(&tname, r.uuid, Some(Arc::new(row)));
        }
        Ok(json!({"count": rows.len()}))
    }

    fn mutate(&mut self, op: &Map<String, Value>) -> Result<Value> {
        let (ts, tname) = self.table(op)?;
        let w = self.where_(ts, op)?;
        let ms = member(op, "mutations")?
            .as_array()
            .ok_or_else(|| Error::syntax("\"mutations\" must be a list"))?;
        let mut muts = Vec::with_capacity(ms.len());
        for m in ms {
            let (symbols, gen) = (&mut self.symbols, &mut *self.gen);
            muts.push(Mutation::parse(ts, m, &mut |n| {
                Some(resolve(symbols, gen, n))
            })?);
        }
        let rows = self.scan(&tname, &w);
        for r in &rows {
            let mut row = Row::clone(r);
            for m in &muts {
                row.cols[m.col] = m.apply(ts, &row.cols[m.col])?;
            }
            for m in &muts {
                let c = &ts.columns[m.col];
                c.ty.check_size(&row.cols[m.col])
                    .map_err(|e| Error::new(e.tag, format!("column {}: {}", c.name, e.details)))?;
            }
            row.version = self.gen.fresh();
            self.put(&tname, r.uuid, Some(Arc::new(row)));
        }
        Ok(json!({"count": rows.len()}))
    }

    fn delete(&mut self, op: &Map<String, Value>) -> Result<Value> {
        let (ts, tname) = self.table(op)?;
        let w = self.where_(ts, op)?;
        let rows = self.scan(&tname, &w);
        for r in &rows {
            self.put(&tname, r.uuid, None);
        }
        Ok(json!({"count": rows.len()}))
    }

    fn wait(&mut self, op: &Map<String, Value>, env: &Env) -> Result<Value> {
        let (ts, tname) = self.table(op)?;
        let timeout = match op.get("timeout") {
            None => None,
            Some(v) => Some(
                v.as_u64()
                    .ok_or_else(|| Error::syntax("\"timeout\" must be a non-negative integer"))?,
            ),
        };
        let w = self.where_(ts, op)?;
        let cols = columns(ts, Some(member(op, "columns")?))?.unwrap_or_default();
        let until = str_member(op, "until")?;
        let want_equal = match until {
            "==" => true,
            "!=" => false,
            u => return Err(Error::syntax(format!("\"until\" {u:?}: expected == or !="))),
        };
        let given = member(op, "rows")?
            .as_array()
            .ok_or_else(|| Error::syntax("\"rows\" must be a list"))?;
        let mut expected: Vec<Vec<Datum>> = Vec::with_capacity(given.len());
        for g in given {
            let parsed = self.parse_row_for_wait(ts, g)?;
            let mut row = Vec::with_capacity(cols.len());
            for &c in &cols {
                match parsed.iter().find(|(i, _)| *i == c) {
                    Some((_, d)) => row.push(d.clone()),
                    None => {
                        return Err(Error::syntax(format!(
                            "a row of \"rows\" lacks column {}",
                            col_name(ts, c)
                        )))
                    }
                }
            }
            expected.push(row);
        }
        let mut actual: Vec<Vec<Datum>> = self
            .scan(&tname, &w)
            .iter()
            .map(|r| cols.iter().map(|&c| col_value(r, c)).collect())
            .collect();
        expected.sort_by(|a, b| cmp_rows(a, b));
        actual.sort_by(|a, b| cmp_rows(a, b));
        if (expected == actual) == want_equal {
            return Ok(json!({}));
        }
        match timeout {
            Some(t) if t > env.elapsed_ms => {
                self.blocked = Some(t);
                Err(Error::new("not supported", "blocked"))
            }
            _ => Err(Error::new(
                "timed out",
                format!("\"wait\" timed out on table {tname}"),
            )),
        }
    }

    /// A `wait` row may name `_uuid` and `_version` too.
    fn parse_row_for_wait(&mut self, ts: &TableSchema, v: &Value) -> Result<Vec<(usize, Datum)>> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::syntax(format!("{v}: a row must be an object")))?;
        let mut out = Vec::new();
        for (name, val) in o {
            let col = Col::parse(ts, name)?;
            let ty = col.ty(ts);
            let (symbols, gen) = (&mut self.symbols, &mut *self.gen);
            let d = Datum::from_json(&ty, val, &mut |n| Some(resolve(symbols, gen, n)))?;
            out.push((col_code(col), d));
        }
        Ok(out)
    }

    /// The commit-time checks, then the commit (None if nothing changed).
    fn finish(mut self) -> Result<Option<Commit>> {
        let schema = self.db.schema.clone();
        // Strong reference counts as this transaction leaves them.
        let mut delta: HashMap<Uuid, i64> = HashMap::new();
        let count = |delta: &mut HashMap<Uuid, i64>, ts: &TableSchema, r: &Row, by: i64| {
            for (i, c) in ts.columns.iter().enumerate() {
                for (_, k, u) in r.cols[i].refs(&c.ty) {
                    if k == RefType::Strong {
                        *delta.entry(u).or_insert(0) += by;
                    }
                }
            }
        };
        for (tname, rows) in &self.overlay {
            let ts = &schema.tables[tname];
            for (u, new) in rows {
                if let Some(old) = self.db.row(tname, *u) {
                    count(&mut delta, ts, old, -1);
                }
                if let Some(new) = new {
                    count(&mut delta, ts, new, 1);
                }
            }
        }
        let refs_after = |db: &Database, delta: &HashMap<Uuid, i64>, u: Uuid| {
            db.ref_count(u) as i64 + delta.get(&u).copied().unwrap_or(0)
        };

        // Garbage collection: rows of non-root tables that nothing
        // references strongly any more, and what only they referenced.
        let mut work: Vec<(String, Uuid)> = Vec::new();
        for (tname, rows) in &self.overlay {
            if !schema.tables[tname].is_root {
                work.extend(rows.keys().map(|u| (tname.clone(), *u)));
            }
        }
        // Targets whose count went down.
        let mut lowered: Vec<(String, Uuid)> = Vec::new();
        for (tname, rows) in &self.overlay {
            let ts = &schema.tables[tname];
            for u in rows.keys() {
                if let Some(old) = self.db.row(tname, *u) {
                    for (i, c) in ts.columns.iter().enumerate() {
                        for (rt, k, v) in old.cols[i].refs(&c.ty) {
                            if k == RefType::Strong && !schema.tables[rt].is_root {
                                lowered.push((rt.to_string(), v));
                            }
                        }
                    }
                }
            }
        }
        work.extend(lowered);
        let mut seen: HashSet<Uuid> = HashSet::new();
        while let Some((tname, u)) = work.pop() {
            let Some(row) = self.get(&tname, u) else {
                continue;
            };
            if refs_after(self.db, &delta, u) > 0 || !seen.insert(u) {
                continue;
            }
            let ts = &schema.tables[&tname];
            count(&mut delta, ts, &row, -1);
            for (i, c) in ts.columns.iter().enumerate() {
                for (rt, k, v) in row.cols[i].refs(&c.ty) {
                    if k == RefType::Strong && !schema.tables[rt].is_root {
                        work.push((rt.to_string(), v));
                    }
                }
            }
            self.put(&tname, u, None);
        }

        // Weak references to rows that do not exist afterwards are
        // removed: in every row of a table whose target table lost rows,
        // and in the rows this transaction wrote.
        let lost: HashSet<&str> = self
            .overlay
            .iter()
            .filter(|(_, rows)| rows.values().any(Option::is_none))
            .map(|(t, _)| t.as_str())
            .collect();
        let mut fixed: Vec<(String, Arc<Row>)> = Vec::new();
        for ts in schema.tables.values() {
            let weak: Vec<usize> = (0..ts.columns.len())
                .filter(|&i| {
                    let ty = &ts.columns[i].ty;
                    std::iter::once(&ty.key)
                        .chain(ty.value.as_ref())
                        .any(|b| b.ref_type == RefType::Weak && b.ref_table.is_some())
                })
                .collect();
            if weak.is_empty() {
                continue;
            }
            let all = weak.iter().any(|&i| {
                let ty = &ts.columns[i].ty;
                std::iter::once(&ty.key)
                    .chain(ty.value.as_ref())
                    .any(|b| b.ref_table.as_deref().is_some_and(|t| lost.contains(t)))
            });
            let rows: Vec<Arc<Row>> = if all {
                self.scan(&ts.name, &Where::default())
            } else {
                self.overlay
                    .get(&ts.name)
                    .map(|o| o.values().flatten().cloned().collect())
                    .unwrap_or_default()
            };
            for r in rows {
                let mut row: Option<Row> = None;
                for &i in &weak {
                    let ty = &ts.columns[i].ty;
                    let d = &r.cols[i];
                    let dead = |b: &crate::schema::BaseType, a: &Atom| {
                        b.ref_type == RefType::Weak
                            && match (b.ref_table.as_deref(), a.as_uuid()) {
                                (Some(t), Some(u)) => self.get(t, u).is_none(),
                                _ => false,
                            }
                    };
                    let keep: Vec<usize> = (0..d.len())
                        .filter(|&x| {
                            !dead(&ty.key, &d.keys[x])
                                && !ty.value.as_ref().is_some_and(|vt| dead(vt, &d.values[x]))
                        })
                        .collect();
                    if keep.len() != d.len() {
                        let nd = Datum {
                            keys: keep.iter().map(|&x| d.keys[x].clone()).collect(),
                            values: if d.values.is_empty() {
                                Vec::new()
                            } else {
                                keep.iter().map(|&x| d.values[x].clone()).collect()
                            },
                        };
                        row.get_or_insert_with(|| Row::clone(&r)).cols[i] = nd;
                    }
                }
                if let Some(mut row) = row {
                    row.version = self.gen.fresh();
                    fixed.push((ts.name.clone(), Arc::new(row)));
                }
            }
        }
        for (t, r) in fixed {
            self.put(&t, r.uuid, Some(r));
        }

        // Referential integrity, sizes, maxRows, indexes.
        for (tname, rows) in &self.overlay {
            let ts = &schema.tables[tname];
            for (u, new) in rows {
                let Some(new) = new else {
                    let n = refs_after(self.db, &delta, *u);
                    if n > 0 && self.db.row(tname, *u).is_some() {
                        return Err(Error::new(
                            "referential integrity violation",
                            format!(
                                "cannot delete {tname} row {u} because of {n} remaining reference(s)"
                            ),
                        ));
                    }
                    continue;
                };
                for (i, c) in ts.columns.iter().enumerate() {
                    for (rt, k, v) in new.cols[i].refs(&c.ty) {
                        if k == RefType::Strong && self.get(rt, v).is_none() {
                            return Err(Error::new(
                                "referential integrity violation",
                                format!(
                                    "table {tname} column {} row {u} references nonexistent row {v} in table {rt}",
                                    c.name
                                ),
                            ));
                        }
                    }
                    c.ty.check_size(&new.cols[i]).map_err(|e| {
                        Error::constraint(format!(
                            "table {tname} column {} row {u}: {}",
                            c.name, e.details
                        ))
                    })?;
                }
            }
            if let Some(max) = ts.max_rows {
                let before = self.db.table(tname).map_or(0, |t| t.rows.len());
                let mut after = before as i64;
                for (u, new) in rows {
                    let had = self.db.row(tname, *u).is_some();
                    after += i64::from(new.is_some()) - i64::from(had);
                }
                if after > max as i64 {
                    return Err(Error::constraint(format!(
                        "transaction causes table {tname} to have {after} rows, greater than the schema-defined limit of {max} row(s)"
                    )));
                }
            }
            for (ix, cols) in ts.indexes.iter().enumerate() {
                let mut mine: HashMap<Vec<Datum>, Uuid> = HashMap::new();
                for (u, new) in rows {
                    let Some(new) = new else { continue };
                    let key: Vec<Datum> = cols.iter().map(|&c| new.cols[c].clone()).collect();
                    if let Some(other) = mine.insert(key.clone(), *u) {
                        return Err(index_error(ts, cols, &key, other, *u));
                    }
                    if let Some(other) = self.db.table(tname).and_then(|t| t.index_lookup(ix, &key))
                    {
                        if other != *u && !rows.contains_key(&other) {
                            return Err(index_error(ts, cols, &key, other, *u));
                        }
                    }
                }
            }
        }

        // The changes, without rows left as they were.
        let mut changes = Vec::new();
        for (tname, rows) in std::mem::take(&mut self.overlay) {
            for (u, new) in rows {
                let old = self.db.row(&tname, u).cloned();
                match (&old, &new) {
                    (None, None) => continue,
                    (Some(o), Some(n)) if o.cols == n.cols => continue,
                    _ => {}
                }
                changes.push(Change {
                    table: tname.clone(),
                    uuid: u,
                    old,
                    new,
                });
            }
        }
        if changes.is_empty() {
            return Ok(None);
        }
        Ok(Some(Commit {
            id: self.gen.fresh(),
            changes,
            comment: (!self.comments.is_empty()).then(|| self.comments.join("\n")),
            durable: self.durable,
        }))
    }
}

fn index_error(ts: &TableSchema, cols: &[usize], key: &[Datum], a: Uuid, b: Uuid) -> Error {
    let desc: Vec<String> = cols
        .iter()
        .zip(key)
        .map(|(&c, d)| format!("{}={}", ts.columns[c].name, d.to_json(&ts.columns[c].ty)))
        .collect();
    Error::constraint(format!(
        "transaction causes rows {a} and {b} of table {} to have identical values ({}) for index on columns {}",
        ts.name,
        desc.join(", "),
        cols.iter()
            .map(|&c| ts.columns[c].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The UUID of a uuid-name, drawn (not yet defined) at first use: an
/// operation may name a row an insert later in the transaction creates.
fn resolve(symbols: &mut HashMap<String, (Uuid, bool)>, gen: &mut UuidGen, name: &str) -> Uuid {
    symbols
        .entry(name.to_string())
        .or_insert_with(|| (gen.fresh(), false))
        .0
}

const UUID_COL: usize = usize::MAX;
const VERSION_COL: usize = usize::MAX - 1;

fn col_code(c: Col) -> usize {
    match c {
        Col::Uuid => UUID_COL,
        Col::Version => VERSION_COL,
        Col::Column(i) => i,
    }
}

fn col_name(ts: &TableSchema, c: usize) -> &str {
    match c {
        UUID_COL => "_uuid",
        VERSION_COL => "_version",
        i => &ts.columns[i].name,
    }
}

fn col_value(r: &Row, c: usize) -> Datum {
    match c {
        UUID_COL => Datum::scalar(Atom::Uuid(r.uuid)),
        VERSION_COL => Datum::scalar(Atom::Uuid(r.version)),
        i => r.cols[i].clone(),
    }
}

fn cmp_rows(a: &[Datum], b: &[Datum]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = x.keys.cmp(&y.keys).then_with(|| x.values.cmp(&y.values));
        if o.is_ne() {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// A `columns` member: column codes (None when absent: every column,
/// `_uuid` and `_version`).
fn columns(ts: &TableSchema, v: Option<&Value>) -> Result<Option<Vec<usize>>> {
    let Some(v) = v else { return Ok(None) };
    let a = v
        .as_array()
        .ok_or_else(|| Error::syntax("\"columns\" must be a list of column names"))?;
    let mut out = Vec::with_capacity(a.len());
    for c in a {
        let n = c
            .as_str()
            .ok_or_else(|| Error::syntax("\"columns\" must be a list of column names"))?;
        // Malformed, not an "unknown column" (that is for conditions,
        // rows and mutations), as ovsdb-server says.
        let code = col_code(Col::parse(ts, n).map_err(|e| Error::syntax(e.details))?);
        if out.contains(&code) {
            return Err(Error::syntax(format!("\"columns\" names {n} twice")));
        }
        out.push(code);
    }
    Ok(Some(out))
}

fn project(r: &Row, ts: &TableSchema, cols: Option<&[usize]>) -> Value {
    match cols {
        None => r.to_json(ts, None, true),
        Some(cs) => {
            let mut m = Map::new();
            for &c in cs {
                let v = match c {
                    UUID_COL | VERSION_COL => col_value(r, c).to_json(&crate::cond::uuid_type()),
                    i => r.cols[i].to_json(&ts.columns[i].ty),
                };
                m.insert(col_name(ts, c).to_string(), v);
            }
            Value::Object(m)
        }
    }
}
