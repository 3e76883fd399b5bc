//! The engine against Open vSwitch's own schema: transactions, commit-time
//! checks, monitors and the log.

use serde_json::{json, Value};

use ovsdb::schema::Schema;
use ovsdb::server::{Server, LOCAL};

fn schema() -> Schema {
    // Open vSwitch's schema as Debian's openvswitch-common installs it
    // (scripts/setup.sh installs the package).
    let text = std::fs::read_to_string("/usr/share/openvswitch/vswitch.ovsschema")
        .expect("openvswitch-common's vswitch.ovsschema (scripts/setup.sh installs it)");
    Schema::from_json(&serde_json::from_str(&text).unwrap()).unwrap()
}

fn call(s: &mut Server, sid: u64, method: &str, params: Value) -> (Value, Vec<(u64, Value)>) {
    let out = s.handle(
        sid,
        &json!({"id": 7, "method": method, "params": params}),
        0,
    );
    let pos = out
        .iter()
        .position(|(x, m)| *x == sid && m["id"] == 7)
        .expect("a reply");
    let r = out[pos].1.clone();
    let rest = out
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != pos)
        .map(|(_, m)| m)
        .collect();
    (r, rest)
}

fn txn(s: &mut Server, sid: u64, ops: Value) -> Vec<Value> {
    let mut p = vec![json!("Open_vSwitch")];
    p.extend(ops.as_array().unwrap().iter().cloned());
    let (r, _) = call(s, sid, "transact", json!(p));
    r["result"].as_array().unwrap().clone()
}

fn init(s: &mut Server, sid: u64) {
    let r = txn(
        s,
        sid,
        json!([{"op": "insert", "table": "Open_vSwitch", "row": {}}]),
    );
    assert!(r[0]["uuid"].is_array(), "{r:?}");
}

fn add_bridge(s: &mut Server, sid: u64, name: &str, port: &str) -> Vec<Value> {
    txn(
        s,
        sid,
        json!([
            {"op": "insert", "table": "Interface", "row": {"name": port, "type": "internal"}, "uuid-name": "i"},
            {"op": "insert", "table": "Port", "row": {"name": port, "interfaces": ["named-uuid", "i"]}, "uuid-name": "p"},
            {"op": "insert", "table": "Bridge", "row": {"name": name, "ports": ["named-uuid", "p"]}, "uuid-name": "b"},
            {"op": "mutate", "table": "Open_vSwitch", "where": [], "mutations": [["bridges", "insert", ["set", [["named-uuid", "b"]]]]]}
        ]),
    )
}

#[test]
fn bridges_ports_and_garbage_collection() {
    let (mut s, _) = Server::new(schema(), None).unwrap();
    let c = s.open_session();
    init(&mut s, c);
    let r = add_bridge(&mut s, c, "br0", "br0");
    assert_eq!(r.len(), 4, "{r:?}");
    assert_eq!(r[3], json!({"count": 1}));
    assert_eq!(s.db().table("Port").unwrap().rows.len(), 1);
    // A second bridge of the same name breaks the index.
    let r = add_bridge(&mut s, c, "br0", "p9");
    assert_eq!(r.len(), 5, "{r:?}");
    assert_eq!(r[4]["error"], "constraint violation");
    // A port nobody references is collected at commit.
    let r = txn(
        &mut s,
        c,
        json!([{"op": "insert", "table": "Port", "row": {"name": "orphan"}}]),
    );
    assert!(r[0]["uuid"].is_array());
    let r = txn(
        &mut s,
        c,
        json!([{"op": "select", "table": "Port", "where": [["name", "==", "orphan"]]}]),
    );
    assert_eq!(r[0]["rows"], json!([]));
    // Removing the bridge from Open_vSwitch takes its ports and interfaces.
    let r = txn(
        &mut s,
        c,
        json!([{"op": "update", "table": "Open_vSwitch", "where": [], "row": {"bridges": ["set", []]}}]),
    );
    assert_eq!(r[0]["count"], 1);
    assert!(s.db().table("Bridge").unwrap().rows.is_empty());
    assert!(s.db().table("Interface").unwrap().rows.is_empty());
    // Deleting a root row that is referenced is refused.
    init(&mut s, c);
}

#[test]
fn errors_and_results_shape() {
    let (mut s, _) = Server::new(schema(), None).unwrap();
    let c = s.open_session();
    init(&mut s, c);
    // A failing operation: its error, then null for the rest.
    let r = txn(
        &mut s,
        c,
        json!([
            {"op": "select", "table": "Bridge", "where": []},
            {"op": "insert", "table": "Nope", "row": {}},
            {"op": "select", "table": "Bridge", "where": []}
        ]),
    );
    assert_eq!(r.len(), 3);
    assert_eq!(r[1]["error"], "syntax error");
    assert_eq!(r[2], Value::Null);
    // Strong reference to nothing.
    let r = txn(
        &mut s,
        c,
        json!([
            {"op": "insert", "table": "Bridge", "row": {"name": "x", "ports": ["uuid", "01234567-89ab-cdef-0123-456789abcdef"]}, "uuid-name": "b"},
            {"op": "mutate", "table": "Open_vSwitch", "where": [], "mutations": [["bridges", "insert", ["named-uuid", "b"]]]}
        ]),
    );
    assert_eq!(
        r.last().unwrap()["error"],
        "referential integrity violation",
        "{r:?}"
    );
    // maxRows of Open_vSwitch is 1.
    let r = txn(
        &mut s,
        c,
        json!([{"op": "insert", "table": "Open_vSwitch", "row": {}}]),
    );
    assert_eq!(r.last().unwrap()["error"], "constraint violation");
    // wait with timeout 0 that fails.
    let r = txn(
        &mut s,
        c,
        json!([{"op": "wait", "table": "Bridge", "where": [], "columns": ["name"], "until": "==", "rows": [{"name": "zz"}], "timeout": 0}]),
    );
    assert_eq!(r[0]["error"], "timed out");
    // Mutation errors.
    add_bridge(&mut s, c, "br0", "br0");
    let r = txn(
        &mut s,
        c,
        json!([{"op": "mutate", "table": "Open_vSwitch", "where": [], "mutations": [["next_cfg", "/=", 0]]}]),
    );
    assert_eq!(r[0]["error"], "domain error");
    let r = txn(
        &mut s,
        c,
        json!([{"op": "mutate", "table": "Open_vSwitch", "where": [], "mutations": [["next_cfg", "+=", 1]]}, {"op": "select", "table": "Open_vSwitch", "where": [], "columns": ["next_cfg"]}]),
    );
    assert_eq!(r[1]["rows"][0]["next_cfg"], 1);
    // abort, assert without the lock.
    let r = txn(&mut s, c, json!([{"op": "abort"}]));
    assert_eq!(r[0]["error"], "aborted");
    let r = txn(&mut s, c, json!([{"op": "assert", "lock": "l"}]));
    assert_eq!(r[0]["error"], "not owner");
    let (r, _) = call(&mut s, c, "lock", json!(["l"]));
    assert_eq!(r["result"]["locked"], true);
    let r = txn(&mut s, c, json!([{"op": "assert", "lock": "l"}]));
    assert_eq!(r[0], json!({}));
    let (r, _) = call(&mut s, c, "nonsense", json!([]));
    assert_eq!(r["error"], "unknown method");
}

#[test]
fn monitors_see_commits_before_the_reply() {
    let (mut s, _) = Server::new(schema(), None).unwrap();
    let a = s.open_session();
    let b = s.open_session();
    init(&mut s, a);
    let (r, _) = call(
        &mut s,
        b,
        "monitor_cond",
        json!(["Open_vSwitch", "m", {"Bridge": [{"columns": ["name", "ports", "external_ids"]}]}]),
    );
    assert_eq!(r["result"], json!({}));
    let (r, _) = call(
        &mut s,
        b,
        "monitor",
        json!(["Open_vSwitch", "v1", {"Port": {"columns": ["name"]}}]),
    );
    assert_eq!(r["result"], json!({}));
    let mut p = vec![json!("Open_vSwitch")];
    let ops = add_bridge_ops("br0");
    p.extend(ops);
    let out = s.handle(a, &json!({"id": 1, "method": "transact", "params": p}), 0);
    let methods: Vec<(u64, String)> = out
        .iter()
        .map(|(x, m)| (*x, m["method"].as_str().unwrap_or("reply").to_string()))
        .collect();
    assert_eq!(methods.last().unwrap(), &(a, "reply".to_string()));
    assert!(methods.contains(&(b, "update2".to_string())));
    assert!(methods.contains(&(b, "update".to_string())));
    let u2 = &out
        .iter()
        .find(|(_, m)| m["method"] == "update2")
        .unwrap()
        .1;
    let rows = u2["params"][1]["Bridge"].as_object().unwrap();
    let (uuid, row) = rows.iter().next().unwrap();
    assert_eq!(row["insert"]["name"], "br0");
    assert!(
        row["insert"].get("external_ids").is_none(),
        "defaults left out"
    );
    // A change: a modify with the difference.
    let out = s.handle(a, &json!({"id": 2, "method": "transact", "params": ["Open_vSwitch",
        {"op": "mutate", "table": "Bridge", "where": [["_uuid", "==", ["uuid", uuid]]], "mutations": [["external_ids", "insert", ["map", [["k", "v"]]]]]}]}), 0);
    let u2 = &out
        .iter()
        .find(|(_, m)| m["method"] == "update2")
        .unwrap()
        .1;
    assert_eq!(
        u2["params"][1]["Bridge"][uuid]["modify"],
        json!({"external_ids": ["map", [["k", "v"]]]})
    );
    // monitor_cancel stops updates.
    let (r, _) = call(&mut s, b, "monitor_cancel", json!(["m"]));
    assert_eq!(r["result"], json!({}));
}

fn add_bridge_ops(name: &str) -> Vec<Value> {
    json!([
        {"op": "insert", "table": "Interface", "row": {"name": name, "type": "internal"}, "uuid-name": "i"},
        {"op": "insert", "table": "Port", "row": {"name": name, "interfaces": ["named-uuid", "i"]}, "uuid-name": "p"},
        {"op": "insert", "table": "Bridge", "row": {"name": name, "ports": ["named-uuid", "p"]}, "uuid-name": "b"},
        {"op": "mutate", "table": "Open_vSwitch", "where": [], "mutations": [["bridges", "insert", ["set", [["named-uuid", "b"]]]]]}
    ])
    .as_array()
    .unwrap()
    .clone()
}

#[test]
fn blocked_wait_runs_after_the_commit_it_waits_for() {
    let (mut s, _) = Server::new(schema(), None).unwrap();
    let a = s.open_session();
    init(&mut s, a);
    let out = s.handle(a, &json!({"id": 5, "method": "transact", "params": ["Open_vSwitch",
        {"op": "wait", "table": "Bridge", "where": [["name", "==", "br0"]], "columns": ["name"], "until": "==", "rows": [{"name": "br0"}], "timeout": 1000}]}), 0);
    assert!(out.is_empty(), "blocked: no reply yet");
    assert_eq!(s.next_deadline(), Some(1000));
    let mut p = vec![json!("Open_vSwitch")];
    p.extend(add_bridge_ops("br0"));
    let out = s.handle(a, &json!({"id": 6, "method": "transact", "params": p}), 10);
    assert!(
        out.iter()
            .any(|(_, m)| m["id"] == 5 && m["result"][0] == json!({})),
        "{out:?}"
    );
    // One that never holds times out.
    s.handle(a, &json!({"id": 8, "method": "transact", "params": ["Open_vSwitch",
        {"op": "wait", "table": "Bridge", "where": [], "columns": ["name"], "until": "==", "rows": [], "timeout": 50}]}), 100);
    assert!(s.tick(120).is_empty());
    let out = s.tick(151);
    assert_eq!(out[0].1["result"][0]["error"], "timed out");
}

#[test]
fn the_log_survives_reopening_and_a_torn_tail() {
    let dir = std::env::temp_dir().join(format!("ovsdb-log-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("conf.db");
    {
        let (mut s, _) = Server::new(schema(), Some(&path)).unwrap();
        let a = s.open_session();
        init(&mut s, a);
        add_bridge(&mut s, a, "br0", "br0");
        add_bridge(&mut s, a, "br1", "br1");
        let (r, _) = s.transact_local(&[json!({"op": "update", "table": "Interface", "where": [["name", "==", "br1"]], "row": {"ofport": 65534}})], 0);
        assert_eq!(r[0]["count"], 1);
        let _ = LOCAL;
    }
    let full = std::fs::read(&path).unwrap();
    let (s, rep) = Server::new(schema(), Some(&path)).unwrap();
    assert_eq!(rep.dropped_bytes, 0);
    assert_eq!(s.db().table("Bridge").unwrap().rows.len(), 2);
    drop(s);
    // Cut the file in the middle of its last record: that commit is gone,
    // the rest opens.
    std::fs::write(&path, &full[..full.len() - 20]).unwrap();
    let (s, rep) = Server::new(schema(), Some(&path)).unwrap();
    assert!(rep.dropped_bytes > 0);
    assert_eq!(s.db().table("Bridge").unwrap().rows.len(), 2);
    let i = s.db().schema.tables["Interface"].column("ofport").unwrap();
    assert!(s
        .db()
        .table("Interface")
        .unwrap()
        .rows
        .values()
        .all(|r| r.cols[i].is_empty()));
    let _ = std::fs::remove_dir_all(&dir);
}
