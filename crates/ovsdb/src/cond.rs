//! Conditions (RFC 7047 section 5.1, `<condition>`) and mutations
//! (`<mutation>`), parsed against a table's schema and applied to rows.
//!
//! A condition names a column (or `_uuid`, `_version`), a function and a
//! value; a `where` clause is true when all of its conditions are (and a
//! bare `true` or `false`, which Open vSwitch's `monitor_cond` accepts, is
//! itself). Inequalities apply to integer and real columns of at most one
//! element; an empty one satisfies none.

use std::cmp::Ordering;

use serde_json::Value;

use crate::datum::{Atom, Datum};
use crate::error::{Error, Result};
use crate::schema::{AtomicType, BaseType, TableSchema, Type};
use crate::uuid::Uuid;

/// Which column a condition or update names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Uuid,
    Version,
    Column(usize),
}

/// The type of `_uuid` and `_version`.
pub fn uuid_type() -> Type {
    Type {
        key: BaseType::plain(AtomicType::Uuid),
        value: None,
        min: 1,
        max: 1,
    }
}

impl Col {
    pub fn parse(t: &TableSchema, name: &str) -> Result<Col> {
        match name {
            "_uuid" => Ok(Col::Uuid),
            "_version" => Ok(Col::Version),
            n => t.column(n).map(Col::Column).ok_or_else(|| {
                Error::new(
                    "unknown column",
                    format!("table {} has no column {n:?}", t.name),
                )
            }),
        }
    }

    pub fn ty(self, t: &TableSchema) -> Type {
        match self {
            Col::Column(i) => t.columns[i].ty.clone(),
            _ => uuid_type(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Lt,
    Le,
    Eq,
    Ne,
    Ge,
    Gt,
    Includes,
    Excludes,
}

/// One condition, or a literal.
#[derive(Debug, Clone)]
pub enum Cond {
    Const(bool),
    Test { col: Col, func: Func, arg: Datum },
}

/// A row as conditions see it.
pub trait RowView {
    fn uuid(&self) -> Uuid;
    fn version(&self) -> Uuid;
    fn col(&self, i: usize) -> &Datum;
}

impl Cond {
    pub fn parse(
        t: &TableSchema,
        v: &Value,
        named: &mut dyn FnMut(&str) -> Option<Uuid>,
    ) -> Result<Cond> {
        if let Some(b) = v.as_bool() {
            return Ok(Cond::Const(b));
        }
        let a = v.as_array().filter(|a| a.len() == 3).ok_or_else(|| {
            Error::syntax(format!("{v}: a condition is [column, function, value]"))
        })?;
        let col = Col::parse(
            t,
            a[0].as_str()
                .ok_or_else(|| Error::syntax(format!("{v}: the column must be a string")))?,
        )?;
        let func = match a[1].as_str().unwrap_or("") {
            "<" => Func::Lt,
            "<=" => Func::Le,
            "==" => Func::Eq,
            "!=" => Func::Ne,
            ">=" => Func::Ge,
            ">" => Func::Gt,
            "includes" => Func::Includes,
            "excludes" => Func::Excludes,
            f => {
                return Err(Error::new(
                    "unknown function",
                    format!("{v}: unknown function {f:?}"),
                ))
            }
        };
        let ty = col.ty(t);
        if matches!(func, Func::Lt | Func::Le | Func::Ge | Func::Gt)
            && (ty.is_map()
                || ty.max != 1
                || !matches!(ty.key.atomic, AtomicType::Integer | AtomicType::Real))
        {
            return Err(Error::syntax(format!(
                "{v}: {} applies only to integer and real columns of one element",
                a[1]
            )));
        }
        // The value is of the column's type, without its size limits
        // (includes and excludes name a subset) or value constraints.
        let mut loose = ty.clone();
        loose.min = 0;
        loose.max = usize::MAX;
        loosen(&mut loose.key);
        if let Some(v) = &mut loose.value {
            loosen(v);
        }
        let arg = Datum::parse_unsized(&loose, &a[2], named)?;
        Ok(Cond::Test { col, func, arg })
    }

    pub fn eval(&self, row: &dyn RowView) -> bool {
        let (col, func, arg) = match self {
            Cond::Const(b) => return *b,
            Cond::Test { col, func, arg } => (col, func, arg),
        };
        let holder;
        let d: &Datum = match col {
            Col::Uuid => {
                holder = Datum::scalar(Atom::Uuid(row.uuid()));
                &holder
            }
            Col::Version => {
                holder = Datum::scalar(Atom::Uuid(row.version()));
                &holder
            }
            Col::Column(i) => row.col(*i),
        };
        match func {
            Func::Eq => d == arg,
            Func::Ne => d != arg,
            Func::Includes => d.includes(arg),
            Func::Excludes => d.excludes(arg),
            _ => {
                let (Some(x), Some(y)) = (d.first(), arg.first()) else {
                    return false;
                };
                let o = x.cmp(y);
                match func {
                    Func::Lt => o == Ordering::Less,
                    Func::Le => o != Ordering::Greater,
                    Func::Ge => o != Ordering::Less,
                    _ => o == Ordering::Greater,
                }
            }
        }
    }

    /// The row this condition names by `_uuid ==`, if it does (a lookup
    /// instead of a scan).
    pub fn uuid_eq(&self) -> Option<Uuid> {
        match self {
            Cond::Test {
                col: Col::Uuid,
                func: Func::Eq,
                arg,
            } => arg.first().and_then(Atom::as_uuid),
            _ => None,
        }
    }
}

fn loosen(b: &mut BaseType) {
    b.enumeration = None;
    b.min_integer = i64::MIN;
    b.max_integer = i64::MAX;
    b.min_real = f64::MIN;
    b.max_real = f64::MAX;
    b.min_length = 0;
    b.max_length = usize::MAX;
}

/// A `where` clause: all of its conditions.
#[derive(Debug, Clone, Default)]
pub struct Where(pub Vec<Cond>);

impl Where {
    pub fn parse(
        t: &TableSchema,
        v: &Value,
        named: &mut dyn FnMut(&str) -> Option<Uuid>,
    ) -> Result<Where> {
        let a = v
            .as_array()
            .ok_or_else(|| Error::syntax(format!("{v}: \"where\" must be a list of conditions")))?;
        let mut out = Vec::with_capacity(a.len());
        for c in a {
            out.push(Cond::parse(t, c, named)?);
        }
        Ok(Where(out))
    }

    pub fn eval(&self, row: &dyn RowView) -> bool {
        self.0.iter().all(|c| c.eval(row))
    }

    /// A row named by `_uuid ==` in the clause, if one is.
    pub fn uuid_eq(&self) -> Option<Uuid> {
        self.0.iter().find_map(Cond::uuid_eq)
    }
}

/// One mutation.
#[derive(Debug, Clone)]
pub struct Mutation {
    pub col: usize,
    op: MutOp,
    arg: Datum,
    /// For a map's `delete`: the argument is a set of keys.
    keys_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MutOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Insert,
    Delete,
}

impl Mutation {
    pub fn parse(
        t: &TableSchema,
        v: &Value,
        named: &mut dyn FnMut(&str) -> Option<Uuid>,
    ) -> Result<Mutation> {
        let a = v
            .as_array()
            .filter(|a| a.len() == 3)
            .ok_or_else(|| Error::syntax(format!("{v}: a mutation is [column, mutator, value]")))?;
        let name = a[0]
            .as_str()
            .ok_or_else(|| Error::syntax(format!("{v}: the column must be a string")))?;
        let col = match Col::parse(t, name)? {
            Col::Column(i) => i,
            _ => return Err(Error::constraint(format!("{name} cannot be mutated"))),
        };
        let c = &t.columns[col];
        if !c.mutable {
            return Err(Error::constraint(format!(
                "column {name} of table {} is not mutable",
                t.name
            )));
        }
        let op = match a[1].as_str().unwrap_or("") {
            "+=" => MutOp::Add,
            "-=" => MutOp::Sub,
            "*=" => MutOp::Mul,
            "/=" => MutOp::Div,
            "%=" => MutOp::Mod,
            "insert" => MutOp::Insert,
            "delete" => MutOp::Delete,
            m => {
                return Err(Error::new(
                    "unknown mutator",
                    format!("{v}: unknown mutator {m:?}"),
                ))
            }
        };
        let ty = &c.ty;
        let mut keys_only = false;
        let arg = match op {
            MutOp::Insert | MutOp::Delete if ty.is_scalar() => {
                // Only sets and maps grow and shrink (a malformed request,
                // as ovsdb-server says).
                return Err(Error::syntax(format!(
                    "{} cannot be applied to column {name} of one element",
                    a[1]
                )));
            }
            MutOp::Insert | MutOp::Delete => {
                let mut loose = ty.clone();
                loose.min = 0;
                loose.max = usize::MAX;
                if op == MutOp::Delete {
                    loosen(&mut loose.key);
                    if let Some(v) = &mut loose.value {
                        loosen(v);
                    }
                }
                match Datum::parse_unsized(&loose, &a[2], named) {
                    Ok(d) => d,
                    Err(e) if ty.is_map() && op == MutOp::Delete => {
                        keys_only = true;
                        Datum::parse_keys(&loose, &a[2], named).map_err(|_| e)?
                    }
                    Err(e) => return Err(e),
                }
            }
            _ => {
                if ty.is_map()
                    || !matches!(ty.key.atomic, AtomicType::Integer | AtomicType::Real)
                    || (op == MutOp::Mod && ty.key.atomic != AtomicType::Integer)
                {
                    return Err(Error::syntax(format!(
                        "{} cannot be applied to column {name}",
                        a[1]
                    )));
                }
                let mut b = ty.key.clone();
                loosen(&mut b);
                Datum::scalar(Atom::from_json(&b, &a[2], named)?)
            }
        };
        Ok(Mutation {
            col,
            op,
            arg,
            keys_only,
        })
    }

    /// The column's new value; errors as RFC 7047 names them.
    pub fn apply(&self, t: &TableSchema, d: &Datum) -> Result<Datum> {
        let ty = &t.columns[self.col].ty;
        let name = &t.columns[self.col].name;
        match self.op {
            MutOp::Insert => return Ok(d.union(&self.arg)),
            MutOp::Delete => return Ok(d.subtract(&self.arg, self.keys_only)),
            _ => {}
        }
        let Some(y) = self.arg.first() else {
            return Ok(d.clone());
        };
        let mut out = Vec::with_capacity(d.len());
        for x in &d.keys {
            let r = match (x, y) {
                (Atom::Integer(a), Atom::Integer(b)) => {
                    let (a, b) = (*a, *b);
                    if matches!(self.op, MutOp::Div | MutOp::Mod) && b == 0 {
                        return Err(Error::new(
                            "domain error",
                            format!("{name}: division by zero"),
                        ));
                    }
                    let r = match self.op {
                        MutOp::Add => a.checked_add(b),
                        MutOp::Sub => a.checked_sub(b),
                        MutOp::Mul => a.checked_mul(b),
                        MutOp::Div => a.checked_div(b),
                        _ => a.checked_rem(b),
                    };
                    Atom::Integer(r.ok_or_else(|| {
                        Error::new("range error", format!("{name}: integer overflow"))
                    })?)
                }
                (Atom::Real(a), Atom::Real(b)) => {
                    if self.op == MutOp::Div && *b == 0.0 {
                        return Err(Error::new(
                            "domain error",
                            format!("{name}: division by zero"),
                        ));
                    }
                    let r = match self.op {
                        MutOp::Add => a + b,
                        MutOp::Sub => a - b,
                        MutOp::Mul => a * b,
                        _ => a / b,
                    };
                    if !r.is_finite() {
                        return Err(Error::new(
                            "range error",
                            format!("{name}: result is not finite"),
                        ));
                    }
                    Atom::Real(r)
                }
                _ => return Err(Error::syntax(format!("{name}: mismatched types"))),
            };
            ty.key.check(&r)?;
            out.push(r);
        }
        let n = out.len();
        let r = Datum::set(out);
        if r.len() != n {
            return Err(Error::constraint(format!(
                "{name}: the result of the mutation contains duplicates"
            )));
        }
        Ok(r)
    }
}
