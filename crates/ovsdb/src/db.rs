//! A database's committed contents: tables of rows, the strong reference
//! count of every row, and each table's unique indexes.
//!
//! Rows are immutable and shared (`Arc<Row>`): a transaction builds new
//! rows beside the committed ones ([`crate::txn`]) and a [`Commit`] swaps
//! them in whole, so monitors and the log see the same old and new rows.
//! [`Database::apply`] trusts its commit (the transaction checked it, or
//! the log it came from was written by a checked one); it never panics.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::cond::RowView;
use crate::datum::Datum;
use crate::schema::{RefType, Schema, TableSchema};
use crate::uuid::Uuid;

/// One row: its UUID, its version (a fresh UUID at every change) and its
/// columns' values in the schema's column order.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub uuid: Uuid,
    pub version: Uuid,
    pub cols: Vec<Datum>,
}

impl RowView for Row {
    fn uuid(&self) -> Uuid {
        self.uuid
    }
    fn version(&self) -> Uuid {
        self.version
    }
    fn col(&self, i: usize) -> &Datum {
        &self.cols[i]
    }
}

impl Row {
    /// The row as JSON, the columns `cols` (None: every column), with
    /// `_uuid` and `_version` when `meta`.
    pub fn to_json(
        &self,
        t: &TableSchema,
        cols: Option<&[usize]>,
        meta: bool,
    ) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        let mut put = |i: usize| {
            let c = &t.columns[i];
            m.insert(c.name.clone(), self.cols[i].to_json(&c.ty));
        };
        match cols {
            Some(cs) => cs.iter().for_each(|&i| put(i)),
            None => (0..t.columns.len()).for_each(put),
        }
        if meta {
            m.insert(
                "_uuid".into(),
                serde_json::json!(["uuid", self.uuid.to_string()]),
            );
            m.insert(
                "_version".into(),
                serde_json::json!(["uuid", self.version.to_string()]),
            );
        }
        serde_json::Value::Object(m)
    }
}

/// A table's rows and unique indexes.
#[derive(Debug, Default, Clone)]
pub struct Table {
    pub rows: BTreeMap<Uuid, Arc<Row>>,
    /// Per index of the schema: the indexed columns' values -> the row.
    indexes: Vec<HashMap<Vec<Datum>, Uuid>>,
}

impl Table {
    /// The row holding these values in index `i`'s columns.
    pub fn index_lookup(&self, i: usize, key: &[Datum]) -> Option<Uuid> {
        self.indexes.get(i).and_then(|m| m.get(key)).copied()
    }
}

/// One row's change in a commit: inserted (no old), deleted (no new) or
/// modified.
#[derive(Debug, Clone)]
pub struct Change {
    pub table: String,
    pub uuid: Uuid,
    pub old: Option<Arc<Row>>,
    pub new: Option<Arc<Row>>,
}

/// A committed transaction.
#[derive(Debug, Clone)]
pub struct Commit {
    /// The transaction's id (`monitor_cond_since`'s last-txn-id).
    pub id: Uuid,
    pub changes: Vec<Change>,
    pub comment: Option<String>,
    /// Whether a client asked for it to be on disk before the reply
    /// (every commit is written and synced anyway).
    pub durable: bool,
}

/// A database.
#[derive(Debug, Clone)]
pub struct Database {
    pub schema: Arc<Schema>,
    pub tables: BTreeMap<String, Table>,
    /// Strong references to each row that has any.
    refs: HashMap<Uuid, u32>,
    /// The last commit's id.
    pub last_txn: Uuid,
}

impl Database {
    /// Rows in all tables.
    pub fn row_count(&self) -> usize {
        self.tables.values().map(|t| t.rows.len()).sum()
    }

    pub fn new(schema: Arc<Schema>) -> Database {
        let tables = schema
            .tables
            .iter()
            .map(|(n, t)| {
                (
                    n.clone(),
                    Table {
                        rows: BTreeMap::new(),
                        indexes: vec![HashMap::new(); t.indexes.len()],
                    },
                )
            })
            .collect();
        Database {
            schema,
            tables,
            refs: HashMap::new(),
            last_txn: Uuid::ZERO,
        }
    }

    pub fn row(&self, table: &str, uuid: Uuid) -> Option<&Arc<Row>> {
        self.tables.get(table).and_then(|t| t.rows.get(&uuid))
    }

    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.get(name)
    }

    /// How many strong references point at a row.
    pub fn ref_count(&self, uuid: Uuid) -> u32 {
        self.refs.get(&uuid).copied().unwrap_or(0)
    }

    /// Applies a commit.
    pub fn apply(&mut self, c: &Commit) {
        for ch in &c.changes {
            let Some(ts) = self.schema.tables.get(&ch.table) else {
                continue;
            };
            if let Some(old) = &ch.old {
                for (i, col) in ts.columns.iter().enumerate() {
                    for (_, r, u) in old.cols[i].refs(&col.ty) {
                        if r == RefType::Strong {
                            if let Some(n) = self.refs.get_mut(&u) {
                                *n -= 1;
                                if *n == 0 {
                                    self.refs.remove(&u);
                                }
                            }
                        }
                    }
                }
            }
            if let Some(new) = &ch.new {
                for (i, col) in ts.columns.iter().enumerate() {
                    for (_, r, u) in new.cols[i].refs(&col.ty) {
                        if r == RefType::Strong {
                            *self.refs.entry(u).or_insert(0) += 1;
                        }
                    }
                }
            }
            let Some(t) = self.tables.get_mut(&ch.table) else {
                continue;
            };
            for (ix, cols) in ts.indexes.iter().enumerate() {
                if let Some(old) = &ch.old {
                    let k: Vec<Datum> = cols.iter().map(|&i| old.cols[i].clone()).collect();
                    if t.indexes[ix].get(&k) == Some(&ch.uuid) {
                        t.indexes[ix].remove(&k);
                    }
                }
            }
            match &ch.new {
                Some(n) => {
                    t.rows.insert(ch.uuid, n.clone());
                }
                None => {
                    t.rows.remove(&ch.uuid);
                }
            }
        }
        // Index insertions after every removal: a commit may move a name
        // from one row to another.
        for ch in &c.changes {
            let (Some(ts), Some(new)) = (self.schema.tables.get(&ch.table), &ch.new) else {
                continue;
            };
            let Some(t) = self.tables.get_mut(&ch.table) else {
                continue;
            };
            for (ix, cols) in ts.indexes.iter().enumerate() {
                let k: Vec<Datum> = cols.iter().map(|&i| new.cols[i].clone()).collect();
                t.indexes[ix].insert(k, ch.uuid);
            }
        }
        self.last_txn = c.id;
    }
}
