//! What the database asks of the switch: Open vSwitch's `Open_vSwitch`
//! schema read into sluice's own configuration (one checked
//! [`config::Config`] per bridge), with the problems of each row that
//! could not be had.
//!
//! The mapping (docs/OVSDB.md has the full table):
//! * Bridge: `name`; `other_config:datapath-id` (16 hex digits), else an
//!   id derived from the name (as Open vSwitch derives one from the
//!   bridge's MAC: stable across restarts, locally administered);
//!   `fail_mode` (`secure`, else standalone); `controller` (active
//!   targets dialled, passive ones listened on); `flow_tables` (names);
//!   `protocols` (the OpenFlow versions offered: [`protocols`]).
//! * Port and Interface: every Interface of every Port; the Interface
//!   named like its bridge is the bridge's LOCAL port; `type` ``""``,
//!   `system` (an interface), `internal` (a TAP device the switch
//!   creates), `patch` (with `options:peer`), `vxlan`, `geneve` (with
//!   `options`); `ofport_request`. A Port with several Interfaces (a
//!   bond) and other types are refused on the Interface's `error`. A
//!   patch port whose peer is not a patch port naming it back runs
//!   unpaired and says so ([`unpaired`]); a tunnel option sluice does not
//!   carry out is said on the `error` of a port that runs without it.
//! * Port `qos` -> QoS `queues` -> Queue `other_config:max-rate` and
//!   `min-rate` (bit/s; sluice's queues count kbit/s).
//! * Port `tag`, `trunks`, `vlan_mode`, read as Open vSwitch runs them
//!   ([`vlan_keys`]): what it ignores is left out, so that the
//!   configuration check, which refuses such contradictions in a file,
//!   takes them.
//!
//! A row that cannot be had is left out and named in [`Desired::errors`]
//! (written back to the Interface's `error` column); the rest applies.

use std::collections::{BTreeMap, HashSet};

use ovsdb::db::Row;
use ovsdb::{Database, Datum, Uuid};

use crate::config::{self, BridgeSection, FailMode, PortSection, QueueSection};

/// A row of a table, read by column name.
#[derive(Clone, Copy)]
pub struct R<'a> {
    pub db: &'a Database,
    pub table: &'a str,
    pub row: &'a Row,
}

impl<'a> R<'a> {
    pub fn col(&self, name: &str) -> Option<&'a Datum> {
        let ts = self.db.schema.tables.get(self.table)?;
        ts.column(name).map(|i| &self.row.cols[i])
    }

    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.col(name)
            .and_then(|d| d.first())
            .and_then(|a| a.as_str())
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        self.col(name)
            .and_then(|d| d.first())
            .and_then(|a| a.as_i64())
    }

    /// A string set column (empty if absent).
    pub fn strs(&self, name: &str) -> Vec<&'a str> {
        self.col(name)
            .map(|d| d.keys.iter().filter_map(|a| a.as_str()).collect())
            .unwrap_or_default()
    }

    /// An integer set column (empty if absent).
    pub fn ints(&self, name: &str) -> Vec<i64> {
        self.col(name)
            .map(|d| d.keys.iter().filter_map(|a| a.as_i64()).collect())
            .unwrap_or_default()
    }

    /// A string-to-string map column.
    pub fn map(&self, name: &str) -> BTreeMap<String, String> {
        self.col(name)
            .map(|d| {
                d.pairs()
                    .filter_map(|(k, v)| Some((k.as_str()?.to_string(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The rows a reference column (a set of UUIDs) points at, in `table`.
    pub fn refs(&self, name: &str, table: &'a str) -> Vec<R<'a>> {
        self.col(name)
            .map(|d| {
                d.keys
                    .iter()
                    .filter_map(|a| a.as_uuid())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_iter()
            .filter_map(|u| {
                self.db.row(table, u).map(|row| R {
                    db: self.db,
                    table,
                    row,
                })
            })
            .collect()
    }

    pub fn uuid(&self) -> Uuid {
        self.row.uuid
    }
}

/// The only row of Open_vSwitch, if there is one.
pub fn root(db: &Database) -> Option<R<'_>> {
    db.table("Open_vSwitch")
        .and_then(|t| t.rows.values().next())
        .map(|row| R {
            db,
            table: "Open_vSwitch",
            row,
        })
}

/// The Manager targets Open_vSwitch's `manager_options` names.
pub fn manager_targets(db: &Database) -> Vec<String> {
    root(db)
        .map(|r| {
            r.refs("manager_options", "Manager")
                .iter()
                .filter_map(|m| m.str("target").map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The switch the database describes.
#[derive(Default)]
pub struct Desired {
    /// One configuration per bridge that could be had.
    pub bridges: Vec<config::Config>,
    /// Problems by Interface row (its `error` column).
    pub errors: BTreeMap<Uuid, String>,
    /// Open_vSwitch's `next_cfg`: what `cur_cfg` becomes once applied.
    pub next_cfg: i64,
}

/// The database's bridges as configuration sections, before any check.
pub struct Sections {
    /// Each bridge's section and its Interface rows by name.
    pub bridges: Vec<(BridgeSection, BTreeMap<String, Uuid>)>,
    pub errors: BTreeMap<Uuid, String>,
    pub next_cfg: i64,
    /// A hash of all of the above but `next_cfg`: equal when nothing the
    /// switch reads changed (a commit of status only, an `ovs-vsctl` that
    /// changed nothing but `next_cfg`).
    pub fingerprint: u64,
}

/// Reads the database into sections (a walk of its rows; no check).
pub fn sections(db: &Database) -> Sections {
    let mut out = Sections {
        bridges: Vec::new(),
        errors: BTreeMap::new(),
        next_cfg: 0,
        fingerprint: 0,
    };
    if let Some(ovs) = root(db) {
        out.next_cfg = ovs.int("next_cfg").unwrap_or(0);
        let mut bridges = ovs.refs("bridges", "Bridge");
        bridges.sort_by(|a, b| a.str("name").cmp(&b.str("name")));
        let mut taken: HashSet<String> = HashSet::new();
        let mut patches = Vec::new();
        for b in bridges {
            if b.str("name").is_none() {
                continue;
            }
            out.bridges.push(bridge_section(
                &b,
                &mut out.errors,
                &mut taken,
                &mut patches,
            ));
        }
        unpaired(&patches, &mut out.errors);
    }
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{:?}{:?}", out.bridges, out.errors).hash(&mut h);
    out.fingerprint = h.finish();
    out
}

/// Checks the sections into configurations. `base` gives what the
/// daemon's own configuration file adds to every bridge (`[conntrack]`,
/// `[tls]`).
pub fn check(read: Sections, base: &config::File) -> Desired {
    let mut out = Desired {
        bridges: Vec::new(),
        errors: read.errors,
        next_cfg: read.next_cfg,
    };
    let mut dpids = HashSet::new();
    for (mut section, ifaces) in read.bridges {
        let name = section.name.clone();
        // Check; a port the check refuses is left out and named, and the
        // check runs again without it.
        let cfg = loop {
            let file = config::File {
                bridges: vec![section.clone()],
                conntrack: base.conntrack.clone(),
                tls: base.tls.clone(),
                ..config::File::default()
            };
            match config::check_all(file, &[]) {
                Ok(mut c) => break c.pop(),
                Err(e) => {
                    let port = e
                        .key
                        .strip_prefix("bridges[0].ports[")
                        .and_then(|r| r.split(']').next())
                        .and_then(|i| i.parse::<usize>().ok())
                        .filter(|&i| i < section.ports.len());
                    match port {
                        Some(i) => {
                            let p = section.ports.remove(i);
                            if let Some(u) = ifaces.get(&p.name) {
                                out.errors.insert(*u, e.problem.clone());
                            }
                        }
                        None => {
                            tracing::warn!(bridge = %name, error = %e, "ovsdb: bridge left out");
                            for u in ifaces.values() {
                                out.errors
                                    .insert(*u, format!("bridge {name}: {}", e.problem));
                            }
                            break None;
                        }
                    }
                }
            }
        };
        let Some(cfg) = cfg else { continue };
        if !dpids.insert(cfg.datapath_id) {
            for u in ifaces.values() {
                out.errors.insert(
                    *u,
                    format!(
                        "bridge {name}: datapath id {:016x} is another bridge's",
                        cfg.datapath_id
                    ),
                );
            }
            continue;
        }
        out.bridges.push(cfg);
    }
    out
}

/// A patch Interface of the database: its row, name and `options`.
struct PatchRow {
    uuid: Uuid,
    name: String,
    options: BTreeMap<String, String>,
}

/// Open vSwitch's word on a patch port whose peer is not a patch port
/// naming it back (it runs, carrying nothing): "No usable peer 'PEER'
/// exists in 'netdev' datapath." (sluice's bridges are all of the
/// `netdev` type). Ports whose `options` the check refuses (no peer, the
/// port itself, other options) get the check's word instead.
fn unpaired(patches: &[PatchRow], errors: &mut BTreeMap<Uuid, String>) {
    let by_name: BTreeMap<&str, &PatchRow> = patches.iter().map(|p| (p.name.as_str(), p)).collect();
    for p in patches {
        let Some(peer) = p.options.get("peer") else {
            continue;
        };
        if p.options.len() != 1 || *peer == p.name || peer.is_empty() {
            continue;
        }
        let back = by_name
            .get(peer.as_str())
            .is_some_and(|q| q.options.get("peer") == Some(&p.name));
        if !back {
            errors.insert(
                p.uuid,
                format!("No usable peer '{peer}' exists in 'netdev' datapath."),
            );
        }
    }
}

/// The notes of a tunnel port's options ([`datapath::open::tunnel_options`]):
/// what Open vSwitch documents and sluice does not carry out, for the
/// Interface's `error` (the port runs without it); options neither knows
/// are logged, as Open vSwitch logs them. None: nothing to say, or the
/// options are refused (the check says why).
fn tunnel_notes(name: &str, ty: &str, options: &BTreeMap<String, String>) -> Option<String> {
    let proto = datapath::tunnel_proto(ty)?;
    let (_, notes) = datapath::open::tunnel_options(
        proto,
        options.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    )
    .ok()?;
    let mut said = Vec::new();
    for n in notes {
        if n.unknown {
            tracing::warn!(port = name, option = %n.option, "ovsdb: unknown {ty} argument, ignored (as Open vSwitch ignores it)");
        } else {
            tracing::warn!(port = name, "ovsdb: {n}");
            said.push(n.to_string());
        }
    }
    (!said.is_empty()).then(|| said.join("; "))
}

/// A bridge's section, and its Interfaces' rows by name.
fn bridge_section(
    b: &R,
    errors: &mut BTreeMap<Uuid, String>,
    taken: &mut HashSet<String>,
    patches: &mut Vec<PatchRow>,
) -> (BridgeSection, BTreeMap<String, Uuid>) {
    let name = b.str("name").unwrap_or_default().to_string();
    let other = b.map("other_config");
    let datapath_id = Some(match other.get("datapath-id") {
        Some(h) if h.len() == 16 && h.bytes().all(|c| c.is_ascii_hexdigit()) => format!("0x{h}"),
        _ => format!("{:#x}", derived_dpid(&name)),
    });
    let mut controllers = Vec::new();
    let mut listen = Vec::new();
    for c in b.refs("controller", "Controller") {
        let Some(t) = c.str("target") else { continue };
        if t.starts_with('p') {
            listen.push(t.to_string());
        } else {
            controllers.push(t.to_string());
        }
    }
    let mut tables = BTreeMap::new();
    if let Some(d) = b.col("flow_tables") {
        for (k, v) in d.pairs() {
            let (Some(no), Some(u)) = (k.as_i64(), v.as_uuid()) else {
                continue;
            };
            if let Some(row) = b.db.row("Flow_Table", u) {
                let ft = R {
                    db: b.db,
                    table: "Flow_Table",
                    row,
                };
                if let Some(n) = ft.str("name") {
                    tables.insert(no.to_string(), n.to_string());
                }
            }
        }
    }
    let mut ports = Vec::new();
    let mut ifaces = BTreeMap::new();
    let mut plist = b.refs("ports", "Port");
    plist.sort_by(|x, y| x.str("name").cmp(&y.str("name")));
    for p in plist {
        let is = p.refs("interfaces", "Interface");
        if is.len() > 1 {
            for i in &is {
                errors.insert(
                    i.uuid(),
                    "bonds (a port of several interfaces) are not supported by sluice".into(),
                );
            }
            continue;
        }
        let queues = queues(&p);
        let (tag, trunks, vlan_mode) = vlan_keys(&p);
        for i in is {
            let Some(iname) = i.str("name") else { continue };
            if iname == name {
                // The bridge's own interface: its LOCAL port.
                ifaces.insert(iname.to_string(), i.uuid());
                continue;
            }
            if !taken.insert(iname.to_string()) {
                errors.insert(i.uuid(), format!("{iname} is a port of another bridge"));
                continue;
            }
            ifaces.insert(iname.to_string(), i.uuid());
            let ty = i.str("type").unwrap_or("");
            let port_type = match ty {
                "" | "system" => None,
                "vxlan" | "geneve" | "internal" | "patch" => Some(ty.to_string()),
                t => {
                    errors.insert(
                        i.uuid(),
                        format!("interface type {t:?} is not supported by sluice (system, internal, patch, vxlan, geneve)"),
                    );
                    continue;
                }
            };
            let opts = i.map("options");
            if ty == "patch" {
                patches.push(PatchRow {
                    uuid: i.uuid(),
                    name: iname.to_string(),
                    options: opts.clone(),
                });
            }
            if let Some(note) = tunnel_notes(iname, ty, &opts) {
                errors.insert(i.uuid(), note);
            }
            let options = opts
                .into_iter()
                .map(|(k, v)| (k, toml::Value::String(v)))
                .collect();
            ports.push(PortSection {
                name: iname.to_string(),
                ofport: i.int("ofport_request").and_then(|n| u32::try_from(n).ok()),
                backend: None,
                queues: queues.clone(),
                pcap_in: None,
                pcap_out: None,
                pcap_rate: None,
                r#type: port_type,
                options,
                tag,
                trunks: trunks.clone(),
                vlan_mode: vlan_mode.clone(),
            });
        }
    }
    let section = BridgeSection {
        name,
        datapath_id,
        fail_mode: match b.str("fail_mode") {
            Some("secure") => FailMode::Secure,
            _ => FailMode::Standalone,
        },
        ports,
        controllers,
        listen,
        tables,
        protocols: protocols(b),
        ..BridgeSection::default()
    };
    (section, ifaces)
}

/// A Bridge's `protocols`: the versions named that sluice speaks (a
/// name it does not, such as `OpenFlow11`, is left out with a warning,
/// as Open vSwitch leaves out names it does not know); none: all.
fn protocols(b: &R) -> Option<Vec<String>> {
    let (known, unknown): (Vec<&str>, Vec<&str>) = b
        .strs("protocols")
        .into_iter()
        .partition(|p| ofp::Version::parse(p).is_some());
    if !unknown.is_empty() {
        tracing::warn!(
            bridge = b.str("name").unwrap_or(""),
            ?unknown,
            "ovsdb: protocols sluice does not speak are left out"
        );
    }
    (!known.is_empty()).then(|| known.into_iter().map(str::to_string).collect())
}

/// A Port's VLAN settings as Open vSwitch runs them (vswitchd/bridge.c,
/// ofproto-dpif.c `bundle_set`): `tag`, `trunks`, `vlan_mode` as given,
/// but for what it ignores. A trunk's `tag` is ignored; an access port's
/// `trunks` too (with a warning when no `vlan_mode` made it one: "ignoring
/// trunks in favor of implicit vlan"); an access or native port without a
/// `tag` is in VLAN 0. A `vlan_mode` sluice does not have
/// (`dot1q-tunnel`) is passed on for the check to refuse, on the
/// Interface's `error`.
fn vlan_keys(p: &R) -> (Option<i64>, Vec<i64>, Option<String>) {
    let tag = p.int("tag");
    let trunks = p.ints("trunks");
    let mode = p.str("vlan_mode").map(str::to_string);
    match mode.as_deref() {
        None if tag.is_some() => {
            if !trunks.is_empty() {
                tracing::warn!(port = p.str("name").unwrap_or(""), "ovsdb: port has a tag and trunks: ignoring trunks in favor of implicit vlan (as Open vSwitch)");
            }
            (tag, Vec::new(), None)
        }
        None => (None, trunks, None),
        Some("trunk") => (None, trunks, mode),
        Some("access") => (Some(tag.unwrap_or(0)), Vec::new(), mode),
        Some("native-tagged" | "native-untagged") => (Some(tag.unwrap_or(0)), trunks, mode),
        Some(_) => (tag, trunks, mode),
    }
}

/// A Port's queues: QoS `queues` -> Queue `other_config` max-rate and
/// min-rate, bit/s to kbit/s (rounded up, so a limit never vanishes).
fn queues(p: &R) -> Vec<QueueSection> {
    let mut out = Vec::new();
    for q in p.refs("qos", "QoS") {
        let Some(d) = q.col("queues") else { continue };
        for (k, v) in d.pairs() {
            let (Some(id), Some(u)) = (k.as_i64(), v.as_uuid()) else {
                continue;
            };
            let Some(row) = q.db.row("Queue", u) else {
                continue;
            };
            let qr = R {
                db: q.db,
                table: "Queue",
                row,
            };
            let oc = qr.map("other_config");
            let rate = |k: &str| {
                oc.get(k)
                    .and_then(|v| v.parse::<u64>().ok())
                    .map_or(0, |b| b.div_ceil(1000))
            };
            if let Ok(id) = u32::try_from(id) {
                out.push(QueueSection {
                    id,
                    max_rate: rate("max-rate"),
                    min_rate: rate("min-rate"),
                });
            }
        }
    }
    out
}

/// A datapath id for a bridge the database gives none: 48 bits of a hash
/// of its name, locally administered (as a MAC would be).
pub fn derived_dpid(name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h & 0x0000_feff_ffff_ffff) | 0x0000_0200_0000_0000
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use ovsdb::schema::Schema;
    use ovsdb::server::Server;

    /// A database of Open vSwitch's schema (as Debian's openvswitch-common
    /// installs it) holding bridge br0 with one port per `(name, columns)`.
    fn db_with_ports(ports: &[(&str, Value)]) -> Server {
        let ifaces: Vec<(&str, Value, Value)> = ports
            .iter()
            .map(|(n, c)| (*n, c.clone(), json!({})))
            .collect();
        db_with_ifaces(&ifaces)
    }

    /// [`db_with_ports`], each port's Interface with its own columns too.
    fn db_with_ifaces(ports: &[(&str, Value, Value)]) -> Server {
        let text = std::fs::read_to_string(super::super::DEFAULT_SCHEMA)
            .expect("openvswitch-common's vswitch.ovsschema (scripts/setup.sh installs it)");
        let schema = Schema::from_json(&serde_json::from_str(&text).unwrap()).unwrap();
        let (mut s, _) = Server::new(schema, None).unwrap();
        let sid = s.open_session();
        let mut ops = vec![json!("Open_vSwitch")];
        let mut refs = Vec::new();
        for (i, (name, cols, icols)) in ports.iter().enumerate() {
            let mut irow = icols.clone();
            irow["name"] = json!(name);
            ops.push(json!({"op": "insert", "table": "Interface", "row": irow, "uuid-name": format!("i{i}")}));
            let mut row = cols.clone();
            row["name"] = json!(name);
            row["interfaces"] = json!(["named-uuid", format!("i{i}")]);
            ops.push(
                json!({"op": "insert", "table": "Port", "row": row, "uuid-name": format!("p{i}")}),
            );
            refs.push(json!(["named-uuid", format!("p{i}")]));
        }
        ops.push(json!({"op": "insert", "table": "Bridge", "row": {"name": "br0", "ports": ["set", refs]}, "uuid-name": "b"}));
        ops.push(json!({"op": "insert", "table": "Open_vSwitch", "row": {"bridges": ["named-uuid", "b"]}}));
        let out = s.handle(
            sid,
            &json!({"id": 1, "method": "transact", "params": ops}),
            0,
        );
        let reply = &out
            .iter()
            .find(|(x, m)| *x == sid && m["id"] == 1)
            .unwrap()
            .1;
        assert!(
            reply["result"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| r.get("error").is_none()),
            "{reply}"
        );
        s
    }

    /// The error each Interface gets, by name (absent: none).
    fn errors_by_name(
        s: &Server,
        d: &super::Desired,
    ) -> std::collections::BTreeMap<String, String> {
        let t = s.db().table("Interface").unwrap();
        d.errors
            .iter()
            .map(|(u, e)| {
                let row = super::R {
                    db: s.db(),
                    table: "Interface",
                    row: &t.rows[u],
                };
                (row.str("name").unwrap().to_string(), e.clone())
            })
            .collect()
    }

    #[test]
    fn patch_internal_and_tunnel_interfaces_and_their_errors() {
        let map = |kv: &[(&str, &str)]| {
            json!([
                "map",
                kv.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>()
            ])
        };
        let patch = |peer: &[(&str, &str)]| json!({"type": "patch", "options": map(peer)});
        let s = db_with_ifaces(&[
            (
                "patch-br-int-to-ln-public",
                json!({}),
                patch(&[("peer", "pb")]),
            ),
            (
                "pb",
                json!({}),
                patch(&[("peer", "patch-br-int-to-ln-public")]),
            ),
            ("lone", json!({}), patch(&[("peer", "nobody")])),
            ("wrong", json!({}), patch(&[("peer", "pb")])),
            ("nopeer", json!({}), json!({"type": "patch"})),
            ("selfp", json!({}), patch(&[("peer", "selfp")])),
            ("extra", json!({}), patch(&[("peer", "x"), ("foo", "1")])),
            ("mgmt0", json!({}), json!({"type": "internal"})),
            (
                "gv0",
                json!({}),
                json!({"type": "geneve", "options": map(&[("csum", "true"), ("key", "flow"), ("remote_ip", "192.0.2.9"), ("ttl", "inherit"), ("colour", "red")])}),
            ),
            ("gre0", json!({}), json!({"type": "gre"})),
        ]);
        let d = super::check(super::sections(s.db()), &crate::config::File::default());
        let cfg = &d.bridges[0];
        let specs = cfg.port_specs();
        let spec = |n: &str| specs.iter().find(|s| s.name == n);
        use datapath::Backend;
        let p = spec("patch-br-int-to-ln-public").unwrap();
        assert_eq!((p.backend, p.peer.as_deref()), (Backend::Patch, Some("pb")));
        // Unpaired ones run (carrying nothing); malformed ones do not.
        for n in ["lone", "wrong", "pb"] {
            assert_eq!(spec(n).map(|s| s.backend), Some(Backend::Patch), "{n}");
        }
        for n in ["nopeer", "selfp", "extra", "gre0"] {
            assert!(spec(n).is_none(), "{n}");
        }
        assert_eq!(spec("mgmt0").unwrap().backend, Backend::Internal);
        let Backend::Tunnel(t) = spec("gv0").unwrap().backend else {
            panic!("gv0 is a tunnel port")
        };
        assert!(t.csum && t.in_key.is_none());
        let e = errors_by_name(&s, &d);
        let no_peer = |p: &str| format!("No usable peer '{p}' exists in 'netdev' datapath.");
        assert_eq!(e["lone"], no_peer("nobody"));
        assert_eq!(e["wrong"], no_peer("pb"));
        assert_eq!(
            e["nopeer"],
            "nopeer: patch type requires valid 'peer' argument"
        );
        assert_eq!(e["selfp"], "selfp: patch peer must not be self");
        assert_eq!(e["extra"], "extra: patch type takes only a 'peer' argument");
        assert!(
            e["gv0"].starts_with("options:ttl: \"inherit\" is not supported"),
            "{}",
            e["gv0"]
        );
        assert!(
            !e["gv0"].contains("colour"),
            "unknown options are logged only"
        );
        assert!(e["gre0"].contains("\"gre\" is not supported"));
        for n in ["patch-br-int-to-ln-public", "pb", "mgmt0"] {
            assert!(!e.contains_key(n), "{n}: {e:?}");
        }
    }

    #[test]
    fn vlan_columns_are_read_as_open_vswitch_runs_them() {
        let s = db_with_ports(&[
            ("a1", json!({"tag": 10})),
            ("a2", json!({"tag": 10, "trunks": ["set", [20, 30]]})),
            ("t1", json!({"trunks": ["set", [30, 20]]})),
            ("t2", json!({"tag": 5, "vlan_mode": "trunk"})),
            (
                "n1",
                json!({"tag": 7, "trunks": 8, "vlan_mode": "native-untagged"}),
            ),
            ("x0", json!({"vlan_mode": "access", "trunks": 9})),
            ("q1", json!({"tag": 3, "vlan_mode": "dot1q-tunnel"})),
        ]);
        let d = super::check(super::sections(s.db()), &crate::config::File::default());
        let cfg = &d.bridges[0];
        let by_name = |n: &str| {
            let no = cfg.ports.iter().find(|(_, m)| m == n).map(|(no, _)| *no);
            no.map(|no| {
                cfg.port_specs()
                    .into_iter()
                    .find(|s| s.port_no == no)
                    .unwrap()
                    .vlan
                    .to_string()
            })
        };
        assert_eq!(by_name("a1").unwrap(), "tag=10");
        assert_eq!(by_name("a2").unwrap(), "tag=10", "trunks ignored");
        assert_eq!(by_name("t1").unwrap(), "trunks=20,30");
        assert_eq!(by_name("t2").unwrap(), "vlan_mode=trunk", "tag ignored");
        assert_eq!(
            by_name("n1").unwrap(),
            "tag=7 trunks=8 vlan_mode=native-untagged"
        );
        assert_eq!(by_name("x0").unwrap(), "tag=0 vlan_mode=access");
        assert_eq!(by_name("q1"), None, "dot1q-tunnel is refused");
        let errors: Vec<&String> = d.errors.values().collect();
        assert!(
            errors.len() == 1 && errors[0].contains("dot1q-tunnel is not supported"),
            "{errors:?}"
        );
    }
}
