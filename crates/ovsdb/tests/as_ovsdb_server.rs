//! The engine answers as Open vSwitch's ovsdb-server answers: cases where
//! they differed, found by scripts/ovsdb_diff.py (the same `ovsdb-client
//! transact` requests to both servers), each kept here as a test of
//! sluice's side, on a small schema of its own.

use serde_json::{json, Value};

use ovsdb::schema::Schema;
use ovsdb::server::Server;

fn server() -> (Server, u64) {
    let schema = json!({
        "name": "T",
        "version": "1.0.0",
        "tables": {
            "R": {
                "isRoot": true,
                "columns": {
                    "name": {"type": "string"},
                    "e": {"type": {"key": {"type": "string", "enum": ["set", ["a", "b"]]}}},
                    "pos": {"type": {"key": {"type": "integer", "minInteger": 1}}},
                    "opt": {"type": {"key": {"type": "string", "enum": ["set", ["x"]]}, "min": 0, "max": 1}},
                    "s": {"type": {"key": "integer", "min": 0, "max": 2}},
                    "m": {"type": {"key": "string", "value": "integer", "min": 0, "max": "unlimited"}},
                    "r": {"type": "real"},
                    "n": {"type": "integer"}
                }
            }
        }
    });
    let (mut s, _) = Server::new(Schema::from_json(&schema).unwrap(), None).unwrap();
    let c = s.open_session();
    (s, c)
}

fn txn(s: &mut Server, c: u64, ops: Value) -> Vec<Value> {
    let mut p = vec![json!("T")];
    p.extend(ops.as_array().unwrap().iter().cloned());
    let out = s.handle(c, &json!({"id": 1, "method": "transact", "params": p}), 0);
    let reply = out
        .iter()
        .find(|(x, m)| *x == c && m["id"] == 1)
        .expect("a reply");
    reply.1["result"].as_array().unwrap().clone()
}

fn error_of(r: &[Value]) -> &str {
    r.iter()
        .find_map(|x| x.get("error").and_then(Value::as_str))
        .unwrap_or("(none)")
}

fn rows(s: &mut Server, c: u64) -> usize {
    let r = txn(
        s,
        c,
        json!([{"op": "select", "table": "R", "where": [], "columns": ["name"]}]),
    );
    r[0]["rows"].as_array().unwrap().len()
}

/// A column left out of an insert takes its default, which must meet
/// the column's constraints: ovsdb-server refuses a row whose enum column
/// is left at "" (not one of its values) or whose integer column is left
/// at 0 below its minimum. sluice committed such rows.
#[test]
fn defaults_that_break_constraints_refuse_the_insert() {
    let (mut s, c) = server();
    let r = txn(
        &mut s,
        c,
        json!([{"op": "insert", "table": "R", "row": {"name": "x", "pos": 1}}]),
    );
    assert_eq!(error_of(&r), "constraint violation", "{r:?}");
    assert!(
        r[0]["details"].as_str().unwrap().contains("column e"),
        "{r:?}"
    );
    let r = txn(
        &mut s,
        c,
        json!([{"op": "insert", "table": "R", "row": {"name": "x", "e": "a"}}]),
    );
    assert_eq!(error_of(&r), "constraint violation", "{r:?}");
    assert_eq!(rows(&mut s, c), 0);
    // Given, they pass; an optional column's default is the empty set.
    let r = txn(
        &mut s,
        c,
        json!([{"op": "insert", "table": "R", "row": {"name": "x", "e": "b", "pos": 3}}]),
    );
    assert!(r[0]["uuid"].is_array(), "{r:?}");
    assert_eq!(rows(&mut s, c), 1);
}

/// update2 leaves out the columns at their default, and every IDL fills
/// them in with the type's default (0, "", false): so the default may
/// not depend on the constraints. sluice took an enum's first value and
/// an integer's minimum as the default, so a row with e = "a" and pos = 1
/// reached the Python IDL as e = "" and pos = 0.
#[test]
fn update2_leaves_out_only_the_types_defaults() {
    let (mut s, c) = server();
    let watcher = s.open_session();
    let out = s.handle(
        watcher,
        &json!({"id": 5, "method": "monitor_cond", "params": ["T", "m", {"R": [{}]}]}),
        0,
    );
    assert_eq!(out[0].1["result"], json!({}), "{out:?}");
    let mut p = vec![json!("T")];
    p.push(json!({"op": "insert", "table": "R", "row": {"name": "x", "e": "a", "pos": 1, "n": 0}}));
    let out = s.handle(c, &json!({"id": 1, "method": "transact", "params": p}), 0);
    let u2 = &out
        .iter()
        .find(|(x, m)| *x == watcher && m["method"] == "update2")
        .expect("an update2")
        .1;
    let rows = u2["params"][1]["R"].as_object().unwrap();
    let row = &rows.values().next().unwrap()["insert"];
    assert_eq!(row["e"], "a", "{row}");
    assert_eq!(row["pos"], 1, "{row}");
    assert!(row.get("n").is_none(), "0 is the default: left out: {row}");
    assert!(row.get("opt").is_none(), "{row}");
}

/// The error's name for each malformed request, as ovsdb-server names it
/// (clients show it; scripts/ovsdb_diff.py compares it). sluice said
/// "constraint violation" for values of the wrong size and mutators on
/// the wrong type, "syntax error" for unknown functions and mutators,
/// "unknown column" for a select's unknown `columns`, and took duplicate
/// `columns` and members an operation does not have.
#[test]
fn errors_named_as_ovsdb_server_names_them() {
    let (mut s, c) = server();
    let r = txn(
        &mut s,
        c,
        json!([{"op": "insert", "table": "R", "row": {"name": "a", "e": "a", "pos": 1}}]),
    );
    assert!(r[0]["uuid"].is_array(), "{r:?}");
    let w = json!([["name", "==", "a"]]);
    let cases = [
        (
            json!({"op": "insert", "table": "R", "row": {"s": ["set", [1, 2, 3]]}}),
            "syntax error",
        ),
        (
            json!({"op": "insert", "table": "R", "row": {"n": ["set", [1, 2]]}}),
            "syntax error",
        ),
        (
            json!({"op": "mutate", "table": "R", "where": w, "mutations": [["e", "insert", "b"]]}),
            "syntax error",
        ),
        (
            json!({"op": "mutate", "table": "R", "where": w, "mutations": [["name", "+=", "x"]]}),
            "syntax error",
        ),
        (
            json!({"op": "mutate", "table": "R", "where": w, "mutations": [["m", "+=", 1]]}),
            "syntax error",
        ),
        (
            json!({"op": "mutate", "table": "R", "where": w, "mutations": [["r", "%=", 2.0]]}),
            "syntax error",
        ),
        (
            json!({"op": "mutate", "table": "R", "where": w, "mutations": [["n", "^=", 1]]}),
            "unknown mutator",
        ),
        (
            json!({"op": "select", "table": "R", "where": [["n", "~=", 1]]}),
            "unknown function",
        ),
        (
            json!({"op": "select", "table": "R", "where": [], "columns": ["nope"]}),
            "syntax error",
        ),
        (
            json!({"op": "select", "table": "R", "where": [], "columns": ["name", "name"]}),
            "syntax error",
        ),
        (
            json!({"op": "select", "table": "R", "where": [], "frob": 1}),
            "syntax error",
        ),
        (
            json!({"op": "commit", "durable": false, "table": "R"}),
            "syntax error",
        ),
        // Unchanged: these were already named as ovsdb-server names them.
        (
            json!({"op": "select", "table": "R", "where": [["nope", "==", 1]]}),
            "unknown column",
        ),
        (
            json!({"op": "mutate", "table": "R", "where": w, "mutations": [["s", "insert", ["set", [1, 2, 3]]]]}),
            "constraint violation",
        ),
    ];
    for (op, want) in cases {
        let r = txn(&mut s, c, json!([op.clone()]));
        assert_eq!(error_of(&r), want, "{op} -> {r:?}");
    }
    // Members an operation has are taken.
    let r = txn(
        &mut s,
        c,
        json!([{"op": "wait", "table": "R", "where": w, "columns": ["name"], "until": "==", "rows": [{"name": "a"}], "timeout": 0}]),
    );
    assert_eq!(r, vec![json!({})]);
}

fn initial_names(s: &mut Server, c: u64, method: &str, id: &str, reqs: Value) -> Vec<String> {
    let out = s.handle(
        c,
        &json!({"id": 9, "method": method, "params": ["T", id, reqs]}),
        0,
    );
    let r = &out.iter().find(|(x, m)| *x == c && m["id"] == 9).unwrap().1;
    assert!(r["error"].is_null(), "{r}");
    let mut names: Vec<String> = r["result"]["R"]
        .as_object()
        .map(|rows| {
            rows.values()
                .map(|v| v["initial"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A monitor_cond request's `where` holds clauses of which a row must
/// match any (ovsdb-server(7): "every row ... that matches one of the
/// conditions"; the IDLs send one clause per value they want, OVN's one
/// per datapath), where a transaction's must all match. sluice required
/// every clause, so a client asking for rows x or y got none.
#[test]
fn monitor_conditions_match_any_clause() {
    let (mut s, c) = server();
    for (name, n) in [("x", 1), ("y", 2), ("z", 3)] {
        let r = txn(
            &mut s,
            c,
            json!([{"op": "insert", "table": "R", "row": {"name": name, "e": "a", "pos": 1, "n": n}}]),
        );
        assert!(r[0]["uuid"].is_array(), "{r:?}");
    }
    let cols = json!(["name"]);
    let w = json!([["name", "==", "x"], ["name", "==", "y"]]);
    assert_eq!(
        initial_names(
            &mut s,
            c,
            "monitor_cond",
            "a",
            json!({"R": [{"columns": cols, "where": w}]})
        ),
        ["x", "y"]
    );
    assert_eq!(
        initial_names(
            &mut s,
            c,
            "monitor_cond",
            "b",
            json!({"R": [{"columns": cols, "where": []}]})
        ),
        ["x", "y", "z"]
    );
    assert_eq!(
        initial_names(
            &mut s,
            c,
            "monitor_cond",
            "c",
            json!({"R": [{"columns": cols, "where": [false]}]})
        ),
        Vec::<String>::new()
    );
    // Two requests: either's clauses.
    assert_eq!(
        initial_names(
            &mut s,
            c,
            "monitor_cond",
            "d",
            json!({"R": [{"columns": cols, "where": [["n", ">", 2]]}, {"columns": cols, "where": [["name", "==", "x"]]}]})
        ),
        ["x", "z"]
    );
    // monitor_cond_change: the same; z enters, x and y leave.
    let out = s.handle(
        c,
        &json!({"id": 10, "method": "monitor_cond_change", "params": ["a", "a", {"R": [{"where": [["n", "==", 3], ["name", "==", "nobody"]]}]}]}),
        0,
    );
    let u = &out
        .iter()
        .find(|(_, m)| m["method"] == "update2")
        .expect("an update2")
        .1;
    let rows = u["params"][1]["R"].as_object().unwrap();
    let mut kinds: Vec<String> = rows
        .values()
        .map(|v| v.as_object().unwrap().keys().next().unwrap().clone())
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["delete", "delete", "insert"], "{u}");
}

/// _Server's Database table lists every database, _Server too, as
/// ovsdb-server's does.
#[test]
fn server_database_lists_itself() {
    let (mut s, c) = server();
    let out = s.handle(
        c,
        &json!({"id": 1, "method": "transact", "params": ["_Server", {"op": "select", "table": "Database", "where": [], "columns": ["name", "model", "connected", "leader"]}]}),
        0,
    );
    let mut rows: Vec<String> = out[0].1["result"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.to_string())
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            r#"{"connected":true,"leader":true,"model":"standalone","name":"T"}"#,
            r#"{"connected":true,"leader":true,"model":"standalone","name":"_Server"}"#
        ]
    );
}

/// RFC 7047's monitor_cancel (section 4.1.7) ends a monitor; sluice knew
/// it as "cancel" and answered monitor_cancel "unknown method". "cancel"
/// is the notification that gives up a request still pending (section
/// 4.1.4): a transaction blocked in a wait is answered "canceled".
#[test]
fn monitor_cancel_and_cancel() {
    let (mut s, c) = server();
    let call = |s: &mut Server, method: &str, params: Value| {
        let out = s.handle(c, &json!({"id": 3, "method": method, "params": params}), 0);
        out.into_iter()
            .find(|(x, m)| *x == c && m["id"] == 3)
            .expect("a reply")
            .1
    };
    let r = call(
        &mut s,
        "monitor",
        json!(["T", "m", {"R": {"columns": ["name"]}}]),
    );
    assert_eq!(r["result"], json!({}), "{r}");
    // An id in use: a malformed request, as ovsdb-server says.
    let r = call(&mut s, "monitor", json!(["T", "m", {"R": {}}]));
    assert_eq!(r["error"]["error"], "syntax error", "{r}");
    let r = call(&mut s, "monitor_cancel", json!(["m"]));
    assert_eq!(r["result"], json!({}), "{r}");
    // Gone: no update for a commit; a second cancel is refused.
    let out = s.handle(
        c,
        &json!({"id": 4, "method": "transact", "params": ["T", {"op": "insert", "table": "R", "row": {"name": "x", "e": "a", "pos": 1}}]}),
        0,
    );
    assert!(out.iter().all(|(_, m)| m["method"].is_null()), "{out:?}");
    let r = call(&mut s, "monitor_cancel", json!(["m"]));
    assert_eq!(r["error"], "unknown monitor", "{r}");
    let r = call(&mut s, "monitor_cond_change", json!(["nope", "x", {}]));
    assert_eq!(r["error"]["error"], "syntax error", "{r}");
    // A wait that blocks, then is canceled.
    let out = s.handle(
        c,
        &json!({"id": "w", "method": "transact", "params": ["T", {"op": "wait", "table": "R", "where": [], "columns": ["name"], "until": "==", "rows": [], "timeout": 60000}]}),
        0,
    );
    assert!(out.is_empty(), "blocked: {out:?}");
    let out = s.handle(
        c,
        &json!({"id": null, "method": "cancel", "params": ["w"]}),
        0,
    );
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].1["id"], "w");
    assert_eq!(out[0].1["error"]["error"], "canceled", "{out:?}");
    assert_eq!(s.next_deadline(), None);
}

/// monitor_cond_change on a `monitor` (update, no conditions) is taken
/// and changes nothing, as with ovsdb-server; sluice applied the
/// condition and sent an "update" whose rows were in update2's form
/// ({"delete": null}), which no update client reads. Changing columns is
/// refused.
#[test]
fn condition_change_of_a_plain_monitor_changes_nothing() {
    let (mut s, c) = server();
    let r = txn(
        &mut s,
        c,
        json!([{"op": "insert", "table": "R", "row": {"name": "x", "e": "a", "pos": 1}}]),
    );
    assert!(r[0]["uuid"].is_array(), "{r:?}");
    let out = s.handle(
        c,
        &json!({"id": 1, "method": "monitor", "params": ["T", "m", {"R": {"columns": ["name"]}}]}),
        0,
    );
    assert!(out[0].1["result"]["R"].is_object(), "{out:?}");
    let out = s.handle(
        c,
        &json!({"id": 2, "method": "monitor_cond_change", "params": ["m", "m2", {"R": [{"where": [false]}]}]}),
        0,
    );
    assert_eq!(out.len(), 1, "only the reply: {out:?}");
    assert_eq!(out[0].1["result"], json!({}), "{out:?}");
    // Renamed, and still sending every row's changes.
    let out = s.handle(
        c,
        &json!({"id": 3, "method": "transact", "params": ["T", {"op": "update", "table": "R", "where": [], "row": {"name": "y"}}]}),
        0,
    );
    let u = &out
        .iter()
        .find(|(_, m)| m["method"] == "update")
        .expect("an update")
        .1;
    assert_eq!(u["params"][0], "m2", "{u}");
    let out = s.handle(
        c,
        &json!({"id": 4, "method": "monitor_cond", "params": ["T", "c", {"R": [{"columns": ["name"]}]}]}),
        0,
    );
    assert!(out[0].1["error"].is_null(), "{out:?}");
    let out = s.handle(
        c,
        &json!({"id": 5, "method": "monitor_cond_change", "params": ["c", "c", {"R": [{"columns": ["n"]}]}]}),
        0,
    );
    assert_eq!(out[0].1["error"]["error"], "syntax error", "{out:?}");
}
