//! What an OVSDB client can send the daemon's database server: a byte
//! stream cut into JSON-RPC messages by the `jsonrpc` framer (bounded size
//! and depth), each handed to the `ovsdb` server's methods (transact with
//! every operation, monitors, locks, cancel, echo) of two sessions over
//! Open vSwitch's schema. No panic, ever; every reply is JSON-RPC; the
//! database stays consistent (every strong reference resolves).
//!
//! Input: the stream, as bytes. Messages alternate between two sessions,
//! so locks, monitors and blocked transactions cross.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use ovsdb::schema::{RefType, Schema};
use ovsdb::server::Server;

fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| {
        let text = std::fs::read_to_string("/usr/share/openvswitch/vswitch.ovsschema")
            .expect("Open vSwitch's schema (openvswitch-common)");
        Schema::from_json(&serde_json::from_str(&text).unwrap()).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let (mut server, _) = Server::new(schema().clone(), None).unwrap();
    let sessions = [server.open_session(), server.open_session()];
    let mut framer = jsonrpc::Framer::new(jsonrpc::Limits {
        max_message: 1 << 16,
        max_depth: 32,
    });
    framer.push(data);
    let mut i = 0;
    while let Some(v) = framer.next() {
        let Ok(v) = v else { break };
        let Ok(m) = jsonrpc::Message::from_value(v) else { continue };
        let s = sessions[i % 2];
        i += 1;
        for (_, out) in server.handle(s, &m.into_value(), i as u64 * 10) {
            assert!(
                jsonrpc::Message::from_value(out.clone()).is_ok(),
                "not JSON-RPC: {out}"
            );
        }
    }
    let _ = server.tick(u64::MAX / 2);
    let _ = server.close_session(sessions[0]);
    // Every strong reference resolves.
    let db = server.db();
    for (tname, t) in &db.tables {
        let ts = &db.schema.tables[tname];
        for r in t.rows.values() {
            for (c, col) in ts.columns.iter().enumerate() {
                for (rt, k, u) in r.cols[c].refs(&col.ty) {
                    if k == RefType::Strong {
                        assert!(db.row(rt, u).is_some(), "{tname}.{} -> {rt} {u} dangles", col.name);
                    }
                }
            }
        }
    }
});
