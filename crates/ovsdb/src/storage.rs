//! The database on disk: an append-only log of commits, crash-safe.
//!
//! A file is a sequence of records, each a header line
//! `OVSDB-SLUICE <length> <crc32>\n` and then `<length>` bytes of JSON and
//! a newline. The first record is `{"schema": SCHEMA}`; each later one a
//! commit, `{"_id": UUID, "_date": MS, "_comment": TEXT, TABLE: {UUID: ROW
//! or null}}`, where a row is every column not at its default for an
//! insert and the changed columns for a modification (ephemeral columns
//! are never written).
//!
//! Each record goes to the file in one `write`. A process killed in the
//! middle of one leaves a short or damaged last record: opening the file
//! checks every record's length and checksum, drops the damaged tail
//! (truncating the file there, and saying how many bytes it dropped), and
//! so the database holds every commit whole or not at all. A durable
//! commit (`"commit"` with `"durable": true`) is also synced before the
//! reply; others are synced at the next durable one or compaction (a kill
//! loses nothing written; a power loss may lose the last of them, as with
//! Open vSwitch).
//!
//! When the log has grown past four times the size of the database it
//! holds (and past 1 MiB), it is compacted: the whole database is written
//! as one record to `FILE.tmp`, synced, and renamed over the log.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::datum::Datum;
use crate::db::{Change, Commit, Database, Row};
use crate::schema::Schema;
use crate::uuid::{Uuid, UuidGen};

const MAGIC: &str = "OVSDB-SLUICE";
/// The largest record read back (a database of a million rows fits).
const MAX_RECORD: usize = 1 << 30;

/// What opening a log found.
#[derive(Debug, Default, Clone)]
pub struct OpenReport {
    /// Commits replayed.
    pub commits: u64,
    /// Bytes of a damaged tail dropped (a record cut short by a crash).
    pub dropped_bytes: u64,
    /// Set when the file's schema version differed and its rows were
    /// converted to the schema given.
    pub converted_from: Option<String>,
}

/// An open log.
pub struct Log {
    path: PathBuf,
    file: File,
    size: u64,
    /// The size of the last compacted database (or of the schema record).
    base: u64,
    unsynced: bool,
}

/// Errors opening or writing the log.
#[derive(Debug)]
pub enum StorageError {
    Io(std::io::Error),
    Corrupt(String),
}

impl std::fmt::Display for StorageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorageError::Io(e) => write!(f, "{e}"),
            StorageError::Corrupt(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for StorageError {}

impl From<std::io::Error> for StorageError {
    fn from(e: std::io::Error) -> Self {
        StorageError::Io(e)
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xedb8_8320
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn record(v: &Value) -> Vec<u8> {
    let body = v.to_string();
    let mut out = format!("{MAGIC} {} {:08x}\n", body.len(), crc32(body.as_bytes())).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out.push(b'\n');
    out
}

/// Splits a file's bytes into records; returns them and where the last
/// whole record ends.
fn records(bytes: &[u8]) -> (Vec<Value>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(nl) = bytes[at..].iter().take(64).position(|&b| b == b'\n') else {
            break;
        };
        let header = String::from_utf8_lossy(&bytes[at..at + nl]);
        let mut parts = header.split(' ');
        let (Some(MAGIC), Some(len), Some(crc), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            break;
        };
        let (Ok(len), Ok(crc)) = (len.parse::<usize>(), u32::from_str_radix(crc, 16)) else {
            break;
        };
        let start = at + nl + 1;
        if len > MAX_RECORD || start + len + 1 > bytes.len() {
            break;
        }
        let body = &bytes[start..start + len];
        if crc32(body) != crc || bytes[start + len] != b'\n' {
            break;
        }
        let Ok(v) = serde_json::from_slice::<Value>(body) else {
            break;
        };
        out.push(v);
        at = start + len + 1;
    }
    (out, at)
}

impl Log {
    /// Opens the log at `path`, creating it with `schema` if it does not
    /// exist, and returns the database it holds under `schema`.
    pub fn open(
        path: &Path,
        schema: Arc<Schema>,
        gen: &mut UuidGen,
    ) -> Result<(Log, Database, OpenReport), StorageError> {
        if !path.exists() {
            let db = Database::new(schema.clone());
            let log = Log::write_fresh(path, &db)?;
            return Ok((log, db, OpenReport::default()));
        }
        let mut file = OpenOptions::new().read(true).append(true).open(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (recs, end) = records(&bytes);
        let mut report = OpenReport {
            dropped_bytes: (bytes.len() - end) as u64,
            ..OpenReport::default()
        };
        let first = recs.first().ok_or_else(|| {
            StorageError::Corrupt(format!(
                "{}: no schema record (not a database file, or empty)",
                path.display()
            ))
        })?;
        let file_schema = first
            .get("schema")
            .ok_or_else(|| {
                StorageError::Corrupt(format!("{}: first record is not a schema", path.display()))
            })
            .and_then(|s| {
                Schema::from_json(s)
                    .map_err(|e| StorageError::Corrupt(format!("{}: schema: {e}", path.display())))
            })?;
        if file_schema.name != schema.name {
            return Err(StorageError::Corrupt(format!(
                "{}: holds database {}, not {}",
                path.display(),
                file_schema.name,
                schema.name
            )));
        }
        let mut db = Database::new(Arc::new(file_schema));
        for r in &recs[1..] {
            replay(&mut db, r, gen).map_err(|e| {
                StorageError::Corrupt(format!(
                    "{}: commit {}: {e}",
                    path.display(),
                    report.commits + 1
                ))
            })?;
            report.commits += 1;
        }
        if report.dropped_bytes > 0 {
            file.set_len(end as u64)?;
            file.sync_all()?;
        }
        file.seek(SeekFrom::End(0))?;
        let mut log = Log {
            path: path.to_path_buf(),
            file,
            size: end as u64,
            base: recs.first().map_or(0, |r| r.to_string().len() as u64),
            unsynced: false,
        };
        if db.schema.version != schema.version || db.schema.json != schema.json {
            report.converted_from = Some(db.schema.version.clone());
            db = convert(&db, schema, gen).map_err(|e| {
                StorageError::Corrupt(format!("{}: converting: {e}", path.display()))
            })?;
            log.compact(&db)?;
        }
        Ok((log, db, report))
    }

    fn write_fresh(path: &Path, db: &Database) -> Result<Log, StorageError> {
        Log::write_bytes(path, Log::fresh_bytes(db))
    }

    /// The bytes of a compacted log holding `db` (the schema, then one
    /// record of every row): pure, so that another thread can make them.
    pub fn fresh_bytes(db: &Database) -> Vec<u8> {
        let mut bytes = record(&json!({"schema": db.schema.json}));
        let all = snapshot(db);
        if all.as_object().is_some_and(|o| o.len() > 2) {
            bytes.extend(record(&all));
        }
        bytes
    }

    /// The file a compacted log made on another thread is written to
    /// ([`Log::write_aside`]) before [`Log::install_aside`] (not the one
    /// [`Log::compact`] uses: both may be written at once).
    pub fn aside_path(&self) -> PathBuf {
        let mut s = self.path.as_os_str().to_owned();
        s.push(".job");
        PathBuf::from(s)
    }

    /// Writes and syncs `bytes` (from [`Log::fresh_bytes`]) to `aside`
    /// (from [`Log::aside_path`]), on any thread; returns their length.
    pub fn write_aside(aside: &Path, bytes: &[u8]) -> Result<u64, StorageError> {
        let mut f = File::create(aside)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        Ok(bytes.len() as u64)
    }

    /// Replaces the log with the file [`Log::write_aside`] wrote (`len`
    /// bytes): renamed over it, the directory synced.
    pub fn install_aside(&mut self, len: u64) -> Result<(), StorageError> {
        let aside = self.aside_path();
        *self = Log::rename_over(&aside, &self.path, len)?;
        Ok(())
    }

    fn write_bytes(path: &Path, bytes: Vec<u8>) -> Result<Log, StorageError> {
        let tmp = tmp_path(path);
        let mut f = File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        drop(f);
        Log::rename_over(&tmp, path, bytes.len() as u64)
    }

    fn rename_over(tmp: &Path, path: &Path, len: u64) -> Result<Log, StorageError> {
        std::fs::rename(tmp, path)?;
        if let Some(dir) = path.parent() {
            if let Ok(d) = File::open(if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            }) {
                let _ = d.sync_all();
            }
        }
        let file = OpenOptions::new().append(true).open(path)?;
        Ok(Log {
            path: path.to_path_buf(),
            file,
            size: len,
            base: len,
            unsynced: false,
        })
    }

    /// Writes a commit (synced first if it is durable).
    pub fn append(&mut self, db: &Database, c: &Commit) -> Result<(), StorageError> {
        self.append_record(&Log::commit_record(db, c), c.durable)
    }

    /// The record of commit `c` made on `db` (the database before it):
    /// pure, so that another thread can make it.
    pub fn commit_record(db: &Database, c: &Commit) -> Vec<u8> {
        record(&commit_json(db, c))
    }

    /// Writes a record from [`Log::commit_record`] (synced if `durable`).
    pub fn append_record(&mut self, bytes: &[u8], durable: bool) -> Result<(), StorageError> {
        self.file.write_all(bytes)?;
        self.size += bytes.len() as u64;
        self.unsynced = true;
        if durable {
            self.sync()?;
        }
        Ok(())
    }

    /// The log's size and its size when it was last compacted (for
    /// [`would_compact`]).
    pub fn sizes(&self) -> (u64, u64) {
        (self.size, self.base)
    }

    pub fn sync(&mut self) -> Result<(), StorageError> {
        if self.unsynced {
            self.file.sync_data()?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Compacts when the log is four times what it holds; returns whether
    /// it did.
    pub fn maybe_compact(&mut self, db: &Database) -> Result<bool, StorageError> {
        if !would_compact(self.size, self.base) {
            return Ok(false);
        }
        self.compact(db)?;
        Ok(true)
    }

    /// Rewrites the log as the schema and one record of the database.
    pub fn compact(&mut self, db: &Database) -> Result<(), StorageError> {
        let fresh = Log::write_fresh(&self.path, db)?;
        *self = fresh;
        Ok(())
    }

    /// The log's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }
}

/// Whether a log of `size` bytes, `base` bytes when last compacted, is
/// due for compaction: over 1 MiB and four times its base.
pub fn would_compact(size: u64, base: u64) -> bool {
    size >= (1 << 20) && size >= base.saturating_mul(4)
}

fn tmp_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// A row's columns to write: all non-default ones (`old` None) or the
/// changed ones; ephemeral columns never.
fn row_json(db: &Database, table: &str, old: Option<&Row>, new: &Row) -> Value {
    let mut m = Map::new();
    let Some(ts) = db.schema.tables.get(table) else {
        return Value::Object(m);
    };
    for (i, c) in ts.columns.iter().enumerate() {
        if c.ephemeral {
            continue;
        }
        let write = match old {
            None => new.cols[i] != c.ty.default_datum(),
            Some(o) => o.cols[i] != new.cols[i],
        };
        if write {
            m.insert(c.name.clone(), new.cols[i].to_json(&c.ty));
        }
    }
    Value::Object(m)
}

fn commit_json(db: &Database, c: &Commit) -> Value {
    let mut m = Map::new();
    m.insert("_id".into(), json!(c.id.to_string()));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    m.insert("_date".into(), json!(now));
    if let Some(t) = &c.comment {
        m.insert("_comment".into(), json!(t));
    }
    for ch in &c.changes {
        let t = m
            .entry(ch.table.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        let v = match &ch.new {
            None => Value::Null,
            Some(n) => row_json(db, &ch.table, ch.old.as_deref(), n),
        };
        if let Value::Object(t) = t {
            t.insert(ch.uuid.to_string(), v);
        }
    }
    Value::Object(m)
}

/// The whole database as one commit record.
fn snapshot(db: &Database) -> Value {
    let mut m = Map::new();
    m.insert("_id".into(), json!(db.last_txn.to_string()));
    m.insert("_comment".into(), json!("compacted"));
    for (tname, t) in &db.tables {
        if t.rows.is_empty() {
            continue;
        }
        let mut rows = Map::new();
        for (u, r) in &t.rows {
            rows.insert(u.to_string(), row_json(db, tname, None, r));
        }
        m.insert(tname.clone(), Value::Object(rows));
    }
    Value::Object(m)
}

/// Applies one commit record.
fn replay(db: &mut Database, v: &Value, gen: &mut UuidGen) -> Result<(), String> {
    let o = v.as_object().ok_or("not an object")?;
    let mut changes = Vec::new();
    for (tname, rows) in o {
        if tname.starts_with('_') {
            continue;
        }
        let ts = db
            .schema
            .tables
            .get(tname)
            .ok_or_else(|| format!("unknown table {tname}"))?;
        let rows = rows.as_object().ok_or("a table's rows must be an object")?;
        for (u, r) in rows {
            let uuid = Uuid::parse(u).ok_or_else(|| format!("bad uuid {u}"))?;
            let old = db.row(tname, uuid).cloned();
            let new = match r {
                Value::Null => None,
                Value::Object(cols) => {
                    let mut row = match &old {
                        Some(o) => Row::clone(o),
                        None => Row {
                            uuid,
                            version: Uuid::ZERO,
                            cols: ts.columns.iter().map(|c| c.ty.default_datum()).collect(),
                        },
                    };
                    row.version = gen.fresh();
                    for (c, val) in cols {
                        let i = ts
                            .column(c)
                            .ok_or_else(|| format!("table {tname}: unknown column {c}"))?;
                        row.cols[i] = Datum::from_json(&ts.columns[i].ty, val, &mut |_| None)
                            .map_err(|e| format!("table {tname} column {c}: {e}"))?;
                    }
                    Some(Arc::new(row))
                }
                _ => return Err(format!("table {tname} row {u}: not an object or null")),
            };
            changes.push(Change {
                table: tname.clone(),
                uuid,
                old,
                new,
            });
        }
    }
    let id = o
        .get("_id")
        .and_then(Value::as_str)
        .and_then(Uuid::parse)
        .unwrap_or_else(|| gen.fresh());
    db.apply(&Commit {
        id,
        changes,
        comment: None,
        durable: false,
    });
    Ok(())
}

/// The database's rows under another version of its schema: tables and
/// columns the new schema lacks are dropped, new ones take defaults.
fn convert(db: &Database, schema: Arc<Schema>, gen: &mut UuidGen) -> Result<Database, String> {
    let mut out = Database::new(schema.clone());
    let mut changes = Vec::new();
    for (tname, t) in &db.tables {
        let (Some(old_ts), Some(new_ts)) = (db.schema.tables.get(tname), schema.tables.get(tname))
        else {
            continue;
        };
        for r in t.rows.values() {
            let mut cols: Vec<Datum> = new_ts
                .columns
                .iter()
                .map(|c| c.ty.default_datum())
                .collect();
            for (i, c) in old_ts.columns.iter().enumerate() {
                if let Some(j) = new_ts.column(&c.name) {
                    let v = r.cols[i].to_json(&c.ty);
                    cols[j] = Datum::from_json(&new_ts.columns[j].ty, &v, &mut |_| None)
                        .map_err(|e| format!("table {tname} column {}: {e}", c.name))?;
                }
            }
            changes.push(Change {
                table: tname.clone(),
                uuid: r.uuid,
                old: None,
                new: Some(Arc::new(Row {
                    uuid: r.uuid,
                    version: gen.fresh(),
                    cols,
                })),
            });
        }
    }
    out.apply(&Commit {
        id: db.last_txn,
        changes,
        comment: None,
        durable: false,
    });
    Ok(out)
}
