//! What the switch writes back into the database, as Open vSwitch's
//! `ovs-vswitchd` does: per Interface its `ofport` (-1 when it could not
//! be had), `error`, `admin_state`, `link_state`, `mtu`, `mac_in_use`,
//! `ifindex` and, every 5 s, `statistics`; per Bridge its `datapath_id`; per Controller `is_connected`
//! and `role`; in Open_vSwitch the versions and types sluice supports and,
//! once a configuration is applied, `cur_cfg` (what `ovs-vsctl` waits for
//! unless `--no-wait`).
//!
//! Only values that differ from the database's are written, in one
//! transaction per round, so a quiet switch writes nothing.

use std::collections::{BTreeMap, HashMap};

use ovsdb::{Atom, Database, Datum, Uuid};
use serde_json::{json, Map, Value};

use super::desired::R;

/// One port of a running bridge, as the database shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct PortState {
    /// The OpenFlow port number (LOCAL is 65534, as Open vSwitch shows it).
    pub ofport: i64,
    /// Whether its interface is open (a port waiting for its interface
    /// shows ofport -1 and an error, as in Open vSwitch, though sluice
    /// keeps its number for it).
    pub attached: bool,
    pub admin_up: bool,
    pub link_up: bool,
    pub mac: [u8; 6],
    pub mtu: Option<u32>,
    pub ifindex: Option<u32>,
    /// Counters for the `statistics` column (`rx_packets`, `tx_bytes`,
    /// ...), as Open vSwitch names them.
    pub stats: Vec<(&'static str, u64)>,
}

/// A running bridge, as the database shows it.
#[derive(Debug, Clone, Default)]
pub struct BridgeState {
    pub name: String,
    pub datapath_id: u64,
    /// By interface name.
    pub ports: HashMap<String, PortState>,
    /// Controllers by target: connected, role (`master`, `slave`, `other`).
    pub controllers: HashMap<String, (bool, &'static str)>,
    /// Whether it has its LOCAL port (not with `--no-local`).
    pub local: bool,
}

/// The interface types sluice opens (Open_vSwitch `iface_types`).
pub const IFACE_TYPES: &[&str] = &["geneve", "internal", "patch", "system", "vxlan"];

/// What to write: update operations (empty: nothing differs). With
/// `stats`, the Interface `statistics` column too (Open vSwitch writes it
/// every 5 s; every commit wakes every monitor of the column).
pub fn ops(
    db: &Database,
    bridges: &[BridgeState],
    errors: &BTreeMap<Uuid, String>,
    cur_cfg: Option<i64>,
    stats: bool,
) -> Vec<Value> {
    let mut ops = Vec::new();
    let ports: HashMap<&str, &PortState> = bridges
        .iter()
        .flat_map(|b| b.ports.iter().map(|(n, p)| (n.as_str(), p)))
        .collect();
    if let Some(t) = db.table("Interface") {
        for row in t.rows.values() {
            let r = R {
                db,
                table: "Interface",
                row,
            };
            let mut w = Map::new();
            let name = r.str("name").unwrap_or_default();
            let p = ports.get(name).copied();
            let s = |x: &str| Datum::scalar(Atom::String(x.to_string()));
            let opt = |x: Option<Datum>| x.unwrap_or_default();
            want(
                &r,
                "ofport",
                Datum::scalar(Atom::Integer(
                    p.filter(|p| p.attached).map_or(-1, |p| p.ofport),
                )),
                &mut w,
            );
            // A bridge's own interface when the daemon runs it without
            // its LOCAL port says so (ofport -1 alone reads as a failure).
            let no_local = p.is_none() && bridges.iter().any(|b| b.name == name && !b.local);
            let detached = p.is_some_and(|p| !p.attached);
            let error = match errors.get(&row.uuid) {
                Some(e) => Some(s(e)),
                None if detached => Some(s(&format!(
                    "could not open network device {name} (No such device)"
                ))),
                None if no_local => Some(s(
                    "sluice runs this bridge without its LOCAL port (--no-local)",
                )),
                None => None,
            };
            want(&r, "error", opt(error), &mut w);
            want(
                &r,
                "admin_state",
                opt(p.map(|p| s(if p.admin_up { "up" } else { "down" }))),
                &mut w,
            );
            want(
                &r,
                "link_state",
                opt(p.map(|p| s(if p.link_up { "up" } else { "down" }))),
                &mut w,
            );
            want(
                &r,
                "mtu",
                opt(p
                    .and_then(|p| p.mtu)
                    .map(|m| Datum::scalar(Atom::Integer(m as i64)))),
                &mut w,
            );
            want(&r, "mac_in_use", opt(p.map(|p| s(&mac(p.mac)))), &mut w);
            if stats {
                let d = Datum::map(
                    p.map(|p| p.stats.as_slice())
                        .unwrap_or_default()
                        .iter()
                        .map(|(k, v)| {
                            (
                                Atom::String(k.to_string()),
                                Atom::Integer(i64::try_from(*v).unwrap_or(i64::MAX)),
                            )
                        })
                        .collect(),
                );
                want(&r, "statistics", d, &mut w);
            }
            want(
                &r,
                "ifindex",
                opt(p
                    .and_then(|p| p.ifindex)
                    .map(|i| Datum::scalar(Atom::Integer(i as i64)))),
                &mut w,
            );
            push(&mut ops, "Interface", row.uuid, w);
        }
    }
    let by_name: HashMap<&str, &BridgeState> =
        bridges.iter().map(|b| (b.name.as_str(), b)).collect();
    let mut controllers: HashMap<Uuid, (bool, &'static str)> = HashMap::new();
    if let Some(t) = db.table("Bridge") {
        for row in t.rows.values() {
            let r = R {
                db,
                table: "Bridge",
                row,
            };
            let b = r.str("name").and_then(|n| by_name.get(n).copied());
            let mut w = Map::new();
            want(
                &r,
                "datapath_id",
                b.map(|b| Datum::scalar(Atom::String(format!("{:016x}", b.datapath_id))))
                    .unwrap_or_default(),
                &mut w,
            );
            push(&mut ops, "Bridge", row.uuid, w);
            for c in r.refs("controller", "Controller") {
                let st = b
                    .and_then(|b| c.str("target").and_then(|t| b.controllers.get(t)))
                    .copied()
                    .unwrap_or((false, "other"));
                controllers.insert(c.uuid(), st);
            }
        }
    }
    if let Some(t) = db.table("Controller") {
        for row in t.rows.values() {
            let r = R {
                db,
                table: "Controller",
                row,
            };
            let (up, role) = controllers
                .get(&row.uuid)
                .copied()
                .unwrap_or((false, "other"));
            let mut w = Map::new();
            want(&r, "is_connected", Datum::scalar(Atom::Boolean(up)), &mut w);
            want(
                &r,
                "role",
                if up {
                    Datum::scalar(Atom::String(role.into()))
                } else {
                    Datum::empty()
                },
                &mut w,
            );
            push(&mut ops, "Controller", row.uuid, w);
        }
    }
    if let Some(root) = super::desired::root(db) {
        let mut w = Map::new();
        let strs = |v: &[&str]| Datum::set(v.iter().map(|s| Atom::String(s.to_string())).collect());
        want(
            &root,
            "ovs_version",
            strs(&[env!("CARGO_PKG_VERSION")]),
            &mut w,
        );
        want(&root, "db_version", strs(&[&db.schema.version]), &mut w);
        want(&root, "datapath_types", strs(&["netdev"]), &mut w);
        want(&root, "iface_types", strs(IFACE_TYPES), &mut w);
        if let Some(c) = cur_cfg {
            want(&root, "cur_cfg", Datum::scalar(Atom::Integer(c)), &mut w);
        }
        push(&mut ops, "Open_vSwitch", root.uuid(), w);
    }
    ops
}

fn want(r: &R, col: &str, d: Datum, w: &mut Map<String, Value>) {
    let Some(ts) = r.db.schema.tables.get(r.table) else {
        return;
    };
    let Some(i) = ts.column(col) else { return };
    if r.row.cols[i] != d && ts.columns[i].ty.check_size(&d).is_ok() {
        w.insert(col.to_string(), d.to_json(&ts.columns[i].ty));
    }
}

fn push(ops: &mut Vec<Value>, table: &str, u: Uuid, w: Map<String, Value>) {
    if !w.is_empty() {
        ops.push(json!({
            "op": "update",
            "table": table,
            "where": [["_uuid", "==", ["uuid", u.to_string()]]],
            "row": Value::Object(w),
        }));
    }
}

fn mac(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}
