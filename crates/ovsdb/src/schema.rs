//! Database schemas (RFC 7047 section 3.2): tables, columns and their
//! types, parsed from the schema's JSON (Open vSwitch's
//! `vswitch.ovsschema` as it ships), with every constraint a value must
//! meet.
//!
//! A schema is immutable once parsed; the database, transactions and
//! monitors share it behind an `Arc`. Columns are numbered in the order
//! of the schema's JSON object keys sorted by name (serde_json's map order),
//! and rows store their values in that order.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::datum::{Atom, Datum};
use crate::error::{Error, Result};

/// The five atomic types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicType {
    Integer,
    Real,
    Boolean,
    String,
    Uuid,
}

impl AtomicType {
    fn parse(s: &str) -> Option<AtomicType> {
        Some(match s {
            "integer" => AtomicType::Integer,
            "real" => AtomicType::Real,
            "boolean" => AtomicType::Boolean,
            "string" => AtomicType::String,
            "uuid" => AtomicType::Uuid,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            AtomicType::Integer => "integer",
            AtomicType::Real => "real",
            AtomicType::Boolean => "boolean",
            AtomicType::String => "string",
            AtomicType::Uuid => "uuid",
        }
    }
}

/// Strong references keep their target alive and may not dangle; weak
/// ones are removed when their target goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefType {
    Strong,
    Weak,
}

/// An atomic type with its constraints.
#[derive(Debug, Clone)]
pub struct BaseType {
    pub atomic: AtomicType,
    /// The allowed values, sorted, if constrained to a set.
    pub enumeration: Option<Vec<Atom>>,
    pub min_integer: i64,
    pub max_integer: i64,
    pub min_real: f64,
    pub max_real: f64,
    pub min_length: usize,
    pub max_length: usize,
    pub ref_table: Option<String>,
    pub ref_type: RefType,
}

impl BaseType {
    /// A base type of `atomic` with no constraint.
    pub fn plain(atomic: AtomicType) -> BaseType {
        BaseType {
            atomic,
            enumeration: None,
            min_integer: i64::MIN,
            max_integer: i64::MAX,
            min_real: f64::MIN,
            max_real: f64::MAX,
            min_length: 0,
            max_length: usize::MAX,
            ref_table: None,
            ref_type: RefType::Strong,
        }
    }

    fn parse(v: &Value, what: &str) -> Result<BaseType> {
        if let Some(s) = v.as_str() {
            let a = AtomicType::parse(s)
                .ok_or_else(|| Error::syntax(format!("{what}: unknown atomic type {s:?}")))?;
            return Ok(BaseType::plain(a));
        }
        let o = v
            .as_object()
            .ok_or_else(|| Error::syntax(format!("{what}: a type must be a string or object")))?;
        let t = o
            .get("type")
            .and_then(Value::as_str)
            .and_then(AtomicType::parse)
            .ok_or_else(|| Error::syntax(format!("{what}: missing or unknown \"type\"")))?;
        let mut b = BaseType::plain(t);
        let int = |k: &str| o.get(k).and_then(Value::as_i64);
        let real = |k: &str| o.get(k).and_then(Value::as_f64);
        if let Some(n) = int("minInteger") {
            b.min_integer = n;
        }
        if let Some(n) = int("maxInteger") {
            b.max_integer = n;
        }
        if let Some(n) = real("minReal") {
            b.min_real = n;
        }
        if let Some(n) = real("maxReal") {
            b.max_real = n;
        }
        if let Some(n) = int("minLength") {
            b.min_length = n.max(0) as usize;
        }
        if let Some(n) = int("maxLength") {
            b.max_length = n.max(0) as usize;
        }
        if let Some(r) = o.get("refTable") {
            let r = r
                .as_str()
                .ok_or_else(|| Error::syntax(format!("{what}: refTable must be a string")))?;
            b.ref_table = Some(r.to_string());
            b.ref_type = match o.get("refType").and_then(Value::as_str) {
                None | Some("strong") => RefType::Strong,
                Some("weak") => RefType::Weak,
                Some(x) => return Err(Error::syntax(format!("{what}: refType {x:?}"))),
            };
        }
        if let Some(e) = o.get("enum") {
            // The enumeration is a set of the base type (without the enum).
            let set_ty = Type {
                key: BaseType::plain(t),
                value: None,
                min: 0,
                max: usize::MAX,
            };
            let d = Datum::from_json(&set_ty, e, &mut |_| None)
                .map_err(|e| Error::syntax(format!("{what}: enum: {}", e.details)))?;
            b.enumeration = Some(d.keys);
        }
        Ok(b)
    }

    /// Checks an atom of this base type against its constraints (not
    /// referential integrity).
    pub fn check(&self, a: &Atom) -> Result<()> {
        if let Some(e) = &self.enumeration {
            if e.binary_search(a).is_err() {
                return Err(Error::constraint(format!(
                    "{} is not one of the allowed values ({})",
                    a.to_json(),
                    e.iter()
                        .map(|x| x.to_json().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            return Ok(());
        }
        match a {
            Atom::Integer(n) if *n < self.min_integer || *n > self.max_integer => {
                Err(Error::constraint(format!(
                    "{n} is not in the range {}..{}",
                    self.min_integer, self.max_integer
                )))
            }
            Atom::Real(x) if *x < self.min_real || *x > self.max_real => {
                Err(Error::constraint(format!(
                    "{x} is not in the range {}..{}",
                    self.min_real, self.max_real
                )))
            }
            Atom::String(s) => {
                let n = s.chars().count();
                if n < self.min_length || n > self.max_length {
                    Err(Error::constraint(format!(
                        "{s:?} length {n} is not in the range {}..{}",
                        self.min_length, self.max_length
                    )))
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }
}

/// A column's type: a key, an optional value (a map), and the number of
/// elements allowed.
#[derive(Debug, Clone)]
pub struct Type {
    pub key: BaseType,
    pub value: Option<BaseType>,
    pub min: usize,
    /// `usize::MAX` for "unlimited".
    pub max: usize,
}

impl Type {
    fn parse(v: &Value, what: &str) -> Result<Type> {
        if v.is_string() {
            return Ok(Type {
                key: BaseType::parse(v, what)?,
                value: None,
                min: 1,
                max: 1,
            });
        }
        let o = v
            .as_object()
            .ok_or_else(|| Error::syntax(format!("{what}: a type must be a string or object")))?;
        let key = BaseType::parse(
            o.get("key")
                .ok_or_else(|| Error::syntax(format!("{what}: type without \"key\"")))?,
            what,
        )?;
        let value = o
            .get("value")
            .map(|v| BaseType::parse(v, what))
            .transpose()?;
        let min = match o.get("min") {
            None => 1,
            Some(v) => v
                .as_u64()
                .filter(|&n| n <= 1)
                .ok_or_else(|| Error::syntax(format!("{what}: min must be 0 or 1")))?
                as usize,
        };
        let max = match o.get("max") {
            None => 1,
            Some(Value::String(s)) if s == "unlimited" => usize::MAX,
            Some(v) => v.as_u64().filter(|&n| n >= 1).ok_or_else(|| {
                Error::syntax(format!("{what}: max must be >= 1 or \"unlimited\""))
            })? as usize,
        };
        if max < min {
            return Err(Error::syntax(format!("{what}: max < min")));
        }
        Ok(Type {
            key,
            value,
            min,
            max,
        })
    }

    pub fn is_map(&self) -> bool {
        self.value.is_some()
    }

    /// Exactly one element, no value (written as a bare atom).
    pub fn is_scalar(&self) -> bool {
        self.value.is_none() && self.min == 1 && self.max == 1
    }

    /// More than one element allowed: updates carry differences
    /// (`update2`) rather than the whole value.
    pub fn is_composite(&self) -> bool {
        self.max > 1
    }

    /// The value a new row's column takes when not given.
    pub fn default_datum(&self) -> Datum {
        if self.min == 0 {
            return Datum::empty();
        }
        let k = self.key.default_atom();
        match &self.value {
            Some(v) => Datum::map(vec![(k, v.default_atom())]),
            None => Datum::set(vec![k]),
        }
    }

    /// Checks every atom of `d` (keys, and values of a map) against its
    /// base type's constraints.
    pub fn check_atoms(&self, d: &Datum) -> Result<()> {
        for k in &d.keys {
            self.key.check(k)?;
        }
        if let Some(vt) = &self.value {
            for v in &d.values {
                vt.check(v)?;
            }
        }
        Ok(())
    }

    /// Checks the number of elements.
    pub fn check_size(&self, d: &Datum) -> Result<()> {
        let n = d.len();
        if n < self.min || n > self.max {
            let max = if self.max == usize::MAX {
                "unlimited".to_string()
            } else {
                self.max.to_string()
            };
            return Err(Error::constraint(format!(
                "{n} elements where {}..{max} are allowed",
                self.min
            )));
        }
        Ok(())
    }
}

impl BaseType {
    /// The type's default atom (RFC 7047 section 5.1), whatever the
    /// constraints: what every client's IDL assumes for a column an update
    /// leaves out, so it must not depend on the constraints. An insert
    /// that leaves such a column at a default its constraints refuse is
    /// refused (as ovsdb-server does).
    fn default_atom(&self) -> Atom {
        match self.atomic {
            AtomicType::Integer => Atom::Integer(0),
            AtomicType::Real => Atom::Real(0.0),
            AtomicType::Boolean => Atom::Boolean(false),
            AtomicType::String => Atom::String(String::new()),
            AtomicType::Uuid => Atom::Uuid(crate::Uuid::ZERO),
        }
    }
}

/// One column.
#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    pub ty: Type,
    pub ephemeral: bool,
    pub mutable: bool,
}

/// One table.
#[derive(Debug, Clone)]
pub struct TableSchema {
    pub name: String,
    pub columns: Vec<Column>,
    by_name: HashMap<String, usize>,
    pub max_rows: Option<usize>,
    pub is_root: bool,
    /// Each index: the column numbers whose values together are unique.
    pub indexes: Vec<Vec<usize>>,
}

impl TableSchema {
    /// A column's number, by name (not `_uuid` or `_version`).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }
}

/// A database schema.
#[derive(Debug, Clone)]
pub struct Schema {
    pub name: String,
    pub version: String,
    pub cksum: Option<String>,
    pub tables: BTreeMap<String, TableSchema>,
    /// The schema as given, for `get_schema`.
    pub json: Value,
}

impl Schema {
    /// Parses and checks a schema.
    pub fn from_json(v: &Value) -> Result<Schema> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::syntax("a schema must be an object"))?;
        let name = o
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::syntax("schema without \"name\""))?
            .to_string();
        let version = o
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("0.0.0")
            .to_string();
        let cksum = o.get("cksum").and_then(Value::as_str).map(String::from);
        let tabs = o
            .get("tables")
            .and_then(Value::as_object)
            .ok_or_else(|| Error::syntax("schema without \"tables\""))?;
        let mut tables = BTreeMap::new();
        for (tname, t) in tabs {
            let what = |c: &str| format!("table {tname}{c}");
            let t = t
                .as_object()
                .ok_or_else(|| Error::syntax(what(": not an object")))?;
            let cols = t
                .get("columns")
                .and_then(Value::as_object)
                .ok_or_else(|| Error::syntax(what(": no \"columns\"")))?;
            let mut columns = Vec::new();
            let mut by_name = HashMap::new();
            for (cname, c) in cols {
                if cname.starts_with('_') {
                    return Err(Error::syntax(what(&format!(
                        " column {cname}: names starting with _ are reserved"
                    ))));
                }
                let cw = what(&format!(" column {cname}"));
                let ty = Type::parse(
                    c.get("type")
                        .ok_or_else(|| Error::syntax(format!("{cw}: no type")))?,
                    &cw,
                )?;
                by_name.insert(cname.clone(), columns.len());
                columns.push(Column {
                    name: cname.clone(),
                    ty,
                    ephemeral: c.get("ephemeral").and_then(Value::as_bool).unwrap_or(false),
                    mutable: c.get("mutable").and_then(Value::as_bool).unwrap_or(true),
                });
            }
            let mut indexes = Vec::new();
            if let Some(ix) = t.get("indexes").and_then(Value::as_array) {
                for i in ix {
                    let cols = i
                        .as_array()
                        .ok_or_else(|| Error::syntax(what(": an index is a list of columns")))?;
                    let mut v = Vec::new();
                    for c in cols {
                        let c = c.as_str().and_then(|c| by_name.get(c)).ok_or_else(|| {
                            Error::syntax(what(&format!(": index column {c} unknown")))
                        })?;
                        v.push(*c);
                    }
                    indexes.push(v);
                }
            }
            tables.insert(
                tname.clone(),
                TableSchema {
                    name: tname.clone(),
                    columns,
                    by_name,
                    max_rows: t.get("maxRows").and_then(Value::as_u64).map(|n| n as usize),
                    is_root: t.get("isRoot").and_then(Value::as_bool).unwrap_or(false),
                    indexes,
                },
            );
        }
        // RFC 7047: when no table says isRoot, every table is a root (no
        // garbage collection).
        if !tables.values().any(|t| t.is_root) {
            tables.values_mut().for_each(|t| t.is_root = true);
        }
        for t in tables.values() {
            for c in &t.columns {
                for b in std::iter::once(&c.ty.key).chain(c.ty.value.as_ref()) {
                    if let Some(r) = &b.ref_table {
                        if !tables.contains_key(r) {
                            return Err(Error::syntax(format!(
                                "table {} column {}: refTable {r} is not a table",
                                t.name, c.name
                            )));
                        }
                    }
                }
            }
        }
        Ok(Schema {
            name,
            version,
            cksum,
            tables,
            json: v.clone(),
        })
    }

    pub fn table(&self, name: &str) -> Result<&TableSchema> {
        self.tables
            .get(name)
            .ok_or_else(|| Error::syntax(format!("unknown table {name:?}")))
    }
}

/// The `_Server` database's schema, which Open vSwitch's IDLs read first
/// (a standalone server: one row per database).
pub fn server_schema() -> Schema {
    let v = serde_json::json!({
        "name": "_Server",
        "version": "1.2.0",
        "tables": {
            "Database": {
                "columns": {
                    "name": {"type": "string"},
                    "model": {"type": {"key": {"type": "string",
                        "enum": ["set", ["standalone", "clustered", "relay"]]}}},
                    "connected": {"type": "boolean"},
                    "leader": {"type": "boolean"},
                    "schema": {"type": {"key": {"type": "string"}, "min": 0, "max": 1}},
                    "cid": {"type": {"key": {"type": "uuid"}, "min": 0, "max": 1}},
                    "sid": {"type": {"key": {"type": "uuid"}, "min": 0, "max": 1}},
                    "index": {"type": {"key": {"type": "integer"}, "min": 0, "max": 1}}
                },
                "isRoot": true
            }
        }
    });
    Schema::from_json(&v).expect("the _Server schema is valid")
}
