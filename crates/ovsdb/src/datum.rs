//! Values (RFC 7047 section 5.1): atoms, and the sets and maps of atoms
//! that every column holds, in their JSON notation.
//!
//! A [`Datum`] is kept sorted by key with no duplicate keys, so equality,
//! `includes` and differences are linear merges. A set's `values` is empty;
//! a map's has one value per key. JSON out follows Open vSwitch: a map is
//! `["map", [[k, v], ...]]`, a set of one element the bare atom, any other
//! set `["set", [...]]`.

use std::cmp::Ordering;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::schema::{AtomicType, BaseType, Type};
use crate::uuid::Uuid;

/// One atomic value.
#[derive(Debug, Clone)]
pub enum Atom {
    Integer(i64),
    Real(f64),
    Boolean(bool),
    String(String),
    Uuid(Uuid),
}

impl Atom {
    fn rank(&self) -> u8 {
        match self {
            Atom::Integer(_) => 0,
            Atom::Real(_) => 1,
            Atom::Boolean(_) => 2,
            Atom::String(_) => 3,
            Atom::Uuid(_) => 4,
        }
    }

    pub fn to_json(&self) -> Value {
        match self {
            Atom::Integer(n) => json!(n),
            Atom::Real(x) => json!(x),
            Atom::Boolean(b) => json!(b),
            Atom::String(s) => json!(s),
            Atom::Uuid(u) => json!(["uuid", u.to_string()]),
        }
    }

    /// Parses an atom of `base`'s type and checks its constraints.
    /// `named` resolves `["named-uuid", NAME]` (None: not allowed here).
    pub fn from_json(
        base: &BaseType,
        v: &Value,
        named: &mut dyn FnMut(&str) -> Option<Uuid>,
    ) -> Result<Atom> {
        let a = Atom::parse(base.atomic, v, named)?;
        base.check(&a)?;
        Ok(a)
    }

    fn parse(
        t: AtomicType,
        v: &Value,
        named: &mut dyn FnMut(&str) -> Option<Uuid>,
    ) -> Result<Atom> {
        let bad = || Error::syntax(format!("{v} is not a valid {}", t.name()));
        Ok(match t {
            AtomicType::Integer => Atom::Integer(v.as_i64().ok_or_else(bad)?),
            AtomicType::Real => Atom::Real(v.as_f64().ok_or_else(bad)?),
            AtomicType::Boolean => Atom::Boolean(v.as_bool().ok_or_else(bad)?),
            AtomicType::String => Atom::String(v.as_str().ok_or_else(bad)?.to_string()),
            AtomicType::Uuid => {
                let a = v.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
                let s = a[1].as_str().ok_or_else(bad)?;
                match a[0].as_str() {
                    Some("uuid") => Atom::Uuid(Uuid::parse(s).ok_or_else(bad)?),
                    Some("named-uuid") => Atom::Uuid(named(s).ok_or_else(|| {
                        Error::syntax(format!("named-uuid {s:?} is not allowed here"))
                    })?),
                    _ => return Err(bad()),
                }
            }
        })
    }

    pub fn as_uuid(&self) -> Option<Uuid> {
        match self {
            Atom::Uuid(u) => Some(*u),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Atom::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Atom::Integer(n) => Some(*n),
            _ => None,
        }
    }
}

impl PartialEq for Atom {
    fn eq(&self, o: &Atom) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Atom {}
impl PartialOrd for Atom {
    fn partial_cmp(&self, o: &Atom) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Atom {
    fn cmp(&self, o: &Atom) -> Ordering {
        match (self, o) {
            (Atom::Integer(a), Atom::Integer(b)) => a.cmp(b),
            (Atom::Real(a), Atom::Real(b)) => a.total_cmp(b),
            (Atom::Boolean(a), Atom::Boolean(b)) => a.cmp(b),
            (Atom::String(a), Atom::String(b)) => a.cmp(b),
            (Atom::Uuid(a), Atom::Uuid(b)) => a.cmp(b),
            _ => self.rank().cmp(&o.rank()),
        }
    }
}
impl std::hash::Hash for Atom {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match self {
            Atom::Integer(n) => n.hash(h),
            Atom::Real(x) => x.to_bits().hash(h),
            Atom::Boolean(b) => b.hash(h),
            Atom::String(s) => s.hash(h),
            Atom::Uuid(u) => u.hash(h),
        }
    }
}

/// A set or map of atoms, sorted by key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Datum {
    pub keys: Vec<Atom>,
    /// Empty for a set; one per key for a map.
    pub values: Vec<Atom>,
}

impl Datum {
    pub fn empty() -> Datum {
        Datum::default()
    }

    /// A set from atoms in any order (duplicates dropped).
    pub fn set(mut keys: Vec<Atom>) -> Datum {
        keys.sort();
        keys.dedup();
        Datum {
            keys,
            values: Vec::new(),
        }
    }

    /// A map from pairs in any order (the last of duplicate keys wins).
    pub fn map(mut pairs: Vec<(Atom, Atom)>) -> Datum {
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut keys: Vec<Atom> = Vec::with_capacity(pairs.len());
        let mut values: Vec<Atom> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            if keys.last() == Some(&k) {
                *values.last_mut().unwrap_or(&mut Atom::Boolean(false)) = v;
            } else {
                keys.push(k);
                values.push(v);
            }
        }
        Datum { keys, values }
    }

    pub fn scalar(a: Atom) -> Datum {
        Datum::set(vec![a])
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn is_map(&self) -> bool {
        !self.values.is_empty()
    }

    /// The pairs of a map (or, for a set, nothing).
    pub fn pairs(&self) -> impl Iterator<Item = (&Atom, &Atom)> {
        self.keys.iter().zip(self.values.iter())
    }

    /// The value a map holds for a key.
    pub fn get(&self, k: &Atom) -> Option<&Atom> {
        self.keys
            .binary_search(k)
            .ok()
            .and_then(|i| self.values.get(i))
    }

    pub fn contains_key(&self, k: &Atom) -> bool {
        self.keys.binary_search(k).is_ok()
    }

    /// The only element of a scalar or optional column.
    pub fn first(&self) -> Option<&Atom> {
        self.keys.first()
    }

    pub fn to_json(&self, ty: &Type) -> Value {
        if ty.is_map() {
            let pairs: Vec<Value> = self
                .pairs()
                .map(|(k, v)| json!([k.to_json(), v.to_json()]))
                .collect();
            json!(["map", pairs])
        } else if self.keys.len() == 1 {
            self.keys[0].to_json()
        } else {
            json!([
                "set",
                self.keys.iter().map(Atom::to_json).collect::<Vec<_>>()
            ])
        }
    }

    /// Parses a value of type `ty`, checking every atom's constraints and
    /// the number of elements.
    pub fn from_json(
        ty: &Type,
        v: &Value,
        named: &mut dyn FnMut(&str) -> Option<Uuid>,
    ) -> Result<Datum> {
        let d = Datum::parse_unsized(ty, v, named)?;
        // A value of the wrong size is malformed, as ovsdb-server says
        // ("syntax error"); a mutation's result of the wrong size is a
        // "constraint violation" (checked where it is made).
        ty.check_size(&d).map_err(|e| Error::syntax(e.details))?;
        Ok(d)
    }

    /// Parses without checking the number of elements (a mutation's
    /// argument, a condition's value).
    pub fn parse_unsized(
        ty: &Type,
        v: &Value,
        named: &mut dyn FnMut(&str) -> Option<Uuid>,
    ) -> Result<Datum> {
        if let Some(vt) = &ty.value {
            let a = v
                .as_array()
                .filter(|a| a.len() == 2 && a[0] == "map")
                .and_then(|a| a[1].as_array())
                .ok_or_else(|| Error::syntax(format!("{v} is not a map")))?;
            let mut pairs = Vec::with_capacity(a.len());
            for p in a {
                let p = p
                    .as_array()
                    .filter(|p| p.len() == 2)
                    .ok_or_else(|| Error::syntax(format!("{p} is not a [key, value] pair")))?;
                pairs.push((
                    Atom::from_json(&ty.key, &p[0], named)?,
                    Atom::from_json(vt, &p[1], named)?,
                ));
            }
            let n = pairs.len();
            let d = Datum::map(pairs);
            if d.len() != n {
                return Err(Error::syntax(format!("{v}: a map with a duplicate key")));
            }
            return Ok(d);
        }
        if let Some(a) = v.as_array().filter(|a| a.len() == 2 && a[0] == "set") {
            let items = a[1]
                .as_array()
                .ok_or_else(|| Error::syntax(format!("{v}: [\"set\", X] needs a list")))?;
            let mut keys = Vec::with_capacity(items.len());
            for i in items {
                keys.push(Atom::from_json(&ty.key, i, named)?);
            }
            let n = keys.len();
            let d = Datum::set(keys);
            if d.len() != n {
                return Err(Error::syntax(format!(
                    "{v}: a set with a duplicate element"
                )));
            }
            return Ok(d);
        }
        Ok(Datum::scalar(Atom::from_json(&ty.key, v, named)?))
    }

    /// Parses a set of keys of a map type (the argument of a map
    /// `delete` mutation given as keys).
    pub fn parse_keys(
        ty: &Type,
        v: &Value,
        named: &mut dyn FnMut(&str) -> Option<Uuid>,
    ) -> Result<Datum> {
        let kt = Type {
            key: ty.key.clone(),
            value: None,
            min: 0,
            max: usize::MAX,
        };
        Datum::parse_unsized(&kt, v, named)
    }

    /// Whether every element (key, or key and value) of `o` is in self.
    pub fn includes(&self, o: &Datum) -> bool {
        o.keys
            .iter()
            .enumerate()
            .all(|(i, k)| match self.keys.binary_search(k) {
                Err(_) => false,
                Ok(j) => o
                    .values
                    .get(i)
                    .is_none_or(|v| self.values.get(j) == Some(v)),
            })
    }

    /// Whether no element of `o` is in self.
    pub fn excludes(&self, o: &Datum) -> bool {
        o.keys
            .iter()
            .enumerate()
            .all(|(i, k)| match self.keys.binary_search(k) {
                Err(_) => true,
                Ok(j) => o
                    .values
                    .get(i)
                    .is_some_and(|v| self.values.get(j) != Some(v)),
            })
    }

    /// Adds `o`'s elements; for a map, keys already present keep their
    /// value (RFC 7047 "insert").
    pub fn union(&self, o: &Datum) -> Datum {
        if self.is_map() || o.is_map() {
            let mut pairs: Vec<(Atom, Atom)> = o
                .pairs()
                .filter(|(k, _)| !self.contains_key(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            pairs.extend(self.pairs().map(|(k, v)| (k.clone(), v.clone())));
            Datum::map(pairs)
        } else {
            let mut k = self.keys.clone();
            k.extend(o.keys.iter().cloned());
            Datum::set(k)
        }
    }

    /// Removes `o`'s elements: for a set, its atoms; for a map, pairs equal
    /// to `o`'s pairs, or every pair whose key `o` (a set of keys) holds.
    pub fn subtract(&self, o: &Datum, keys_only: bool) -> Datum {
        let mut keys = Vec::new();
        let mut values = Vec::new();
        for (i, k) in self.keys.iter().enumerate() {
            let gone = match o.keys.binary_search(k) {
                Err(_) => false,
                Ok(j) => keys_only || !self.is_map() || o.values.get(j) == self.values.get(i),
            };
            if !gone {
                keys.push(k.clone());
                if let Some(v) = self.values.get(i) {
                    values.push(v.clone());
                }
            }
        }
        Datum { keys, values }
    }

    /// What `update2` sends for a change from `old` to `new`: the new
    /// value for a column of at most one element, otherwise the elements
    /// added or removed, and for a map's changed value the new pair.
    pub fn diff(old: &Datum, new: &Datum, ty: &Type) -> Datum {
        if !ty.is_composite() {
            return new.clone();
        }
        let mut keys = Vec::new();
        let mut values = Vec::new();
        let (mut i, mut j) = (0, 0);
        let push = |d: &Datum, x: usize, keys: &mut Vec<Atom>, values: &mut Vec<Atom>| {
            keys.push(d.keys[x].clone());
            if let Some(v) = d.values.get(x) {
                values.push(v.clone());
            }
        };
        while i < old.len() && j < new.len() {
            match old.keys[i].cmp(&new.keys[j]) {
                Ordering::Less => {
                    push(old, i, &mut keys, &mut values);
                    i += 1;
                }
                Ordering::Greater => {
                    push(new, j, &mut keys, &mut values);
                    j += 1;
                }
                Ordering::Equal => {
                    if old.values.get(i) != new.values.get(j) {
                        push(new, j, &mut keys, &mut values);
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
        for x in i..old.len() {
            push(old, x, &mut keys, &mut values);
        }
        for x in j..new.len() {
            push(new, x, &mut keys, &mut values);
        }
        Datum { keys, values }
    }

    /// Applies a difference made by [`Datum::diff`] (what a client does).
    pub fn apply_diff(&self, diff: &Datum, ty: &Type) -> Datum {
        if !ty.is_composite() {
            return diff.clone();
        }
        let mut out = self.clone();
        for (x, k) in diff.keys.iter().enumerate() {
            let v = diff.values.get(x);
            match out.keys.binary_search(k) {
                Ok(i) => {
                    if v.is_none() || out.values.get(i) == v {
                        out.keys.remove(i);
                        if !out.values.is_empty() {
                            out.values.remove(i);
                        }
                    } else if let Some(v) = v {
                        out.values[i] = v.clone();
                    }
                }
                Err(i) => {
                    out.keys.insert(i, k.clone());
                    if let Some(v) = v {
                        out.values.insert(i, v.clone());
                    }
                }
            }
        }
        out
    }

    /// Every UUID this datum holds in a key or value of a reference type
    /// pointing at `table`, with its strength.
    pub fn refs<'a>(
        &'a self,
        ty: &'a Type,
    ) -> impl Iterator<Item = (&'a str, crate::schema::RefType, Uuid)> + 'a {
        let k = ty
            .key
            .ref_table
            .as_deref()
            .map(|t| (t, ty.key.ref_type))
            .into_iter()
            .flat_map(move |(t, r)| {
                self.keys
                    .iter()
                    .filter_map(Atom::as_uuid)
                    .map(move |u| (t, r, u))
            });
        let v = ty
            .value
            .as_ref()
            .and_then(|v| v.ref_table.as_deref().map(|t| (t, v.ref_type)))
            .into_iter()
            .flat_map(move |(t, r)| {
                self.values
                    .iter()
                    .filter_map(Atom::as_uuid)
                    .map(move |u| (t, r, u))
            });
        k.chain(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Schema;

    fn ty(v: Value) -> Type {
        let s = Schema::from_json(
            &json!({"name": "t", "tables": {"T": {"columns": {"c": {"type": v}}}}}),
        )
        .unwrap();
        s.tables["T"].columns[0].ty.clone()
    }

    #[test]
    fn json_round_trip_and_constraints() {
        let set = ty(
            json!({"key": {"type": "integer", "minInteger": 1, "maxInteger": 9}, "min": 0, "max": "unlimited"}),
        );
        let d = Datum::from_json(&set, &json!(["set", [3, 1, 2]]), &mut |_| None).unwrap();
        assert_eq!(d.to_json(&set), json!(["set", [1, 2, 3]]));
        assert_eq!(
            Datum::from_json(&set, &json!(5), &mut |_| None)
                .unwrap()
                .to_json(&set),
            json!(5)
        );
        let e = Datum::from_json(&set, &json!(["set", [10]]), &mut |_| None).unwrap_err();
        assert_eq!(e.tag, "constraint violation");
        assert_eq!(
            Datum::from_json(&set, &json!(["set", [1, 1]]), &mut |_| None)
                .unwrap_err()
                .tag,
            "syntax error"
        );
        let map = ty(json!({"key": "string", "value": "string", "min": 0, "max": "unlimited"}));
        let m = Datum::from_json(&map, &json!(["map", [["b", "2"], ["a", "1"]]]), &mut |_| {
            None
        })
        .unwrap();
        assert_eq!(m.to_json(&map), json!(["map", [["a", "1"], ["b", "2"]]]));
        let one = ty(json!({"key": {"type": "string", "enum": ["set", ["x", "y"]]}}));
        assert!(Datum::from_json(&one, &json!("z"), &mut |_| None).is_err());
        assert!(Datum::from_json(&one, &json!(["set", []]), &mut |_| None).is_err());
    }

    #[test]
    fn diff_then_apply_gives_new() {
        let map = ty(json!({"key": "string", "value": "string", "min": 0, "max": "unlimited"}));
        let p = |v: Value| Datum::from_json(&map, &v, &mut |_| None).unwrap();
        let old = p(json!(["map", [["a", "1"], ["b", "2"], ["c", "3"]]]));
        let new = p(json!(["map", [["a", "1"], ["b", "9"], ["d", "4"]]]));
        let d = Datum::diff(&old, &new, &map);
        assert_eq!(
            d.to_json(&map),
            json!(["map", [["b", "9"], ["c", "3"], ["d", "4"]]])
        );
        assert_eq!(old.apply_diff(&d, &map), new);
    }
}
