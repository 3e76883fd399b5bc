//! The daemon's OVSDB server (`--ovsdb`) under the worst clients and a
//! crash: no root needed (no bridge is configured, so no interface is
//! touched).
//!
//! * kill -9 while transactions stream in, again and again: the database
//!   opens every time, every acknowledged transaction is there, and every
//!   transaction is whole or absent;
//! * malformed JSON, a document nested too deep, one over the size limit:
//!   that connection is closed, the others are served;
//! * a transaction of 200 000 operations is answered (a million takes
//!   about 3 s in a release build; docs/OVSDB.md);
//! * hundreds of monitors each get the update of a commit;
//! * a client that never reads its updates is dropped at its budget, and
//!   the daemon's memory stays bounded.
//! * out of descriptors, the server rests its listeners instead of
//!   spinning, and takes the waiting clients once descriptors are back.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;
use common::Daemon;

const SCHEMA: &str = "/usr/share/openvswitch/vswitch.ovsschema";

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sluice-ovsdb-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Starts the daemon on `dir/db.sock` with the database `dir/conf.db`;
/// returns once the socket answers (at most 10 s).
fn start(dir: &Path) -> std::process::Child {
    let sock = dir.join("db.sock");
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("--ovsdb")
        .arg(format!("punix:{}", sock.display()))
        .arg("--ovsdb-file")
        .arg(dir.join("conf.db"))
        .arg("--ovsdb-schema")
        .arg(SCHEMA)
        .arg("--run-dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while UnixStream::connect(&sock).is_err() {
        assert!(
            Instant::now() < deadline,
            "the OVSDB socket did not answer within 10 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child
}

struct Client {
    s: UnixStream,
    buf: Vec<u8>,
    next_id: u64,
}

impl Client {
    fn connect(dir: &Path) -> Client {
        let s = UnixStream::connect(dir.join("db.sock")).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Client {
            s,
            buf: Vec::new(),
            next_id: 1,
        }
    }

    fn send(&mut self, v: &Value) -> std::io::Result<()> {
        self.s.write_all(v.to_string().as_bytes())
    }

    /// The next message (None: closed or timed out).
    fn recv(&mut self) -> Option<Value> {
        loop {
            let mut it = serde_json::Deserializer::from_slice(&self.buf).into_iter::<Value>();
            if let Some(Ok(v)) = it.next() {
                let used = it.byte_offset();
                self.buf.drain(..used);
                return Some(v);
            }
            let mut chunk = [0u8; 65536];
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// A request and its reply (notifications before it are skipped).
    fn call(&mut self, method: &str, params: Value) -> Option<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}))
            .ok()?;
        loop {
            let m = self.recv()?;
            if m["id"] == json!(id) {
                return Some(m);
            }
        }
    }

    fn transact(&mut self, ops: Vec<Value>) -> Option<Value> {
        let mut p = vec![json!("Open_vSwitch")];
        p.extend(ops);
        self.call("transact", json!(p))
    }
}

/// One transaction: a Queue and a QoS that references it, both marked n.
fn pair(n: u64) -> Vec<Value> {
    pair_padded(n, 4000)
}

/// The same with `pad` bytes in the QoS row.
fn pair_padded(n: u64, pad: usize) -> Vec<Value> {
    vec![
        json!({"op": "insert", "table": "Queue", "uuid-name": "q",
               "row": {"external_ids": ["map", [["n", n.to_string()]]]}}),
        json!({"op": "insert", "table": "QoS",
               "row": {"type": "linux-htb", "queues": ["map", [[0, ["named-uuid", "q"]]]],
                       "external_ids": ["map", [["n", n.to_string()], ["pad", "x".repeat(pad)]]]}}),
    ]
}

/// The n marks of a table's rows.
fn marks(c: &mut Client, table: &str) -> Vec<u64> {
    let r = c
        .transact(vec![
            json!({"op": "select", "table": table, "where": [], "columns": ["external_ids"]}),
        ])
        .expect("select answered");
    let mut v: Vec<u64> = r["result"][0]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| {
            row["external_ids"][1]
                .as_array()?
                .iter()
                .find(|p| p[0] == "n")
                .and_then(|p| p[1].as_str()?.parse().ok())
        })
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn kill_9_mid_stream_leaves_every_transaction_whole_or_absent() {
    if !Path::new(SCHEMA).exists() {
        panic!("{SCHEMA} is missing: scripts/setup.sh installs openvswitch-common");
    }
    let dir = temp_dir("crash");
    let mut acked: u64 = 0;
    for round in 0..6u64 {
        let mut child = start(&dir);
        let mut c = Client::connect(&dir);
        // Every transaction acknowledged before is there, whole.
        let q = marks(&mut c, "Queue");
        let s = marks(&mut c, "QoS");
        assert_eq!(
            q, s,
            "round {round}: a transaction is torn: queues {q:?} vs qos {s:?}"
        );
        assert!(
            q.len() as u64 >= acked,
            "round {round}: {acked} acknowledged, {} present",
            q.len()
        );
        assert_eq!(
            q,
            (0..q.len() as u64).collect::<Vec<_>>(),
            "in order, no gap"
        );
        let next = q.len() as u64;
        // Stream transactions from another thread and kill the daemon at
        // a time that varies by round.
        let d2 = dir.clone();
        let start_n = next;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(start_n));
        let seen = done.clone();
        let writer = std::thread::spawn(move || {
            let mut c = Client::connect(&d2);
            let mut n = start_n;
            loop {
                match c.transact(pair(n)) {
                    Some(r) if r["result"][1]["uuid"].is_array() => {
                        n += 1;
                        seen.store(n, std::sync::atomic::Ordering::Relaxed);
                    }
                    _ => return n,
                }
            }
        });
        // Once the first transaction is through (however loaded the
        // machine), a delay that varies by round.
        let deadline = Instant::now() + Duration::from_secs(30);
        while done.load(std::sync::atomic::Ordering::Relaxed) == start_n {
            assert!(
                Instant::now() < deadline,
                "round {round}: no transaction acknowledged within 30 s"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(10 + 37 * round));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        acked = writer.join().unwrap();
        assert!(
            acked > start_n,
            "round {round}: no transaction went through"
        );
    }
    // The last round's database opens too.
    let mut child = start(&dir);
    let mut c = Client::connect(&dir);
    let q = marks(&mut c, "Queue");
    assert_eq!(q, marks(&mut c, "QoS"));
    assert!(q.len() as u64 >= acked);
    let _ = child.kill();
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

#[test]
fn hostile_clients_get_clear_answers_and_others_are_served() {
    let dir = temp_dir("hostile");
    let d = Daemon {
        child: start(&dir),
        dir: dir.clone(),
    };
    let mut good = Client::connect(&dir);
    assert_eq!(
        good.call("list_dbs", json!([])).unwrap()["result"],
        json!(["Open_vSwitch", "_Server"])
    );

    // An unknown method: an error, the connection stays.
    let r = good.call("frobnicate", json!([])).unwrap();
    assert_eq!(r["error"], "unknown method");
    // A malformed transaction: its error in the results.
    let r = good
        .call("transact", json!(["Open_vSwitch", {"op": "insert"}]))
        .unwrap();
    assert_eq!(r["result"][0]["error"], "syntax error", "{r}");
    let r = good.call("transact", json!(["Nope"])).unwrap();
    assert_eq!(r["error"]["error"], "unknown database", "{r}");

    // Malformed JSON closes that connection only.
    let mut bad = Client::connect(&dir);
    bad.s.write_all(b"{\"id\": 1, \"method\": ]]]").unwrap();
    assert!(bad.recv().is_none(), "malformed JSON: closed");
    // Nested too deep.
    let mut deep = Client::connect(&dir);
    let _ = deep.s.write_all("[".repeat(100_000).as_bytes());
    assert!(deep.recv().is_none(), "too deep: closed");
    // Over the size limit (64 MiB): closed without holding it all.
    let mut big = Client::connect(&dir);
    big.s
        .set_write_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut payload = b"[\"".to_vec();
    payload.extend(std::iter::repeat_n(b'x', 65 << 20));
    let _ = big.s.write_all(&payload);
    assert!(big.recv().is_none(), "oversized: closed");
    assert!(good.call("echo", json!(["still here"])).is_some());

    // Hundreds of monitors each get the update of one commit.
    let mut watchers: Vec<Client> = (0..300)
        .map(|i| {
            let mut c = Client::connect(&dir);
            let r = c
                .call(
                    "monitor_cond",
                    json!(["Open_vSwitch", i, {"Queue": [{"columns": ["external_ids"]}]}]),
                )
                .unwrap();
            assert!(r["error"].is_null(), "{r}");
            c
        })
        .collect();
    good.transact(pair(7)).unwrap();
    for w in &mut watchers {
        let u = w.recv().expect("an update");
        assert_eq!(u["method"], "update2");
    }
    drop(watchers);

    // A client that monitors and never reads: dropped at its budget, the
    // daemon's memory bounded.
    let mut sink = Client::connect(&dir);
    sink.call("monitor", json!(["Open_vSwitch", null, {"QoS": {}}]))
        .unwrap();
    let before = rss_kb(d.child.id());
    let mut peak = before;
    // 600 commits of ~64 KB: 38 MB of updates the sink never reads; its
    // backlog budget is 16 MiB, past which it is dropped.
    let t = Instant::now();
    for n in 0..600u64 {
        good.transact(pair_padded(1000 + n, 64 << 10)).unwrap();
        peak = peak.max(rss_kb(d.child.id()));
    }
    eprintln!(
        "600 commits with a sink: {:?}, RSS {before} -> {peak} kB",
        t.elapsed()
    );
    assert!(
        peak < before + 150 * 1024,
        "RSS grew from {before} kB to {peak} kB with a client that never reads"
    );
    // The sink was dropped: its socket reads what was sent, then ends.
    sink.s
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut total = 0usize;
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        match sink.s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => total += n,
            Err(e) => panic!("the sink was not disconnected ({total} bytes read): {e}"),
        }
    }
    assert!(total < 40 << 20, "the sink got {total} bytes");
    assert!(good.call("echo", json!([])).is_some());
    drop(sink);

    // A transaction of 200 000 operations is answered (a million in
    // release builds: docs/OVSDB.md).
    let ops: Vec<Value> = (0..200_000)
        .map(|_| json!({"op": "comment", "comment": "x"}))
        .collect();
    let t = Instant::now();
    let r = good.transact(ops).expect("answered");
    assert_eq!(r["result"].as_array().unwrap().len(), 200_000);
    eprintln!("200 000 operations: {:?}", t.elapsed());

    drop(d);
}

fn cpu_ticks(pid: u32) -> u64 {
    // utime + stime, fields 14 and 15 of /proc/PID/stat (after the comm).
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// Out of descriptors, accept(2) fails while clients wait: the server
/// rests its listeners (it used to poll them again at once and spin),
/// serves the connections it has, and takes the waiting clients once
/// descriptors are back.
#[test]
fn out_of_descriptors_the_server_rests_its_listeners_instead_of_spinning() {
    let dir = temp_dir("emfile");
    let d = Daemon {
        child: start(&dir),
        dir: dir.clone(),
    };
    let pid = d.child.id();
    let mut good = Client::connect(&dir);
    assert!(good.call("echo", json!(["first"])).is_some());
    let used = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count() as u64;
    let (soft, hard) = netdev::os::nofile_limit(pid).unwrap();
    netdev::os::set_nofile_limit(pid, used, hard).unwrap();
    let mut waiting: Vec<Client> = (0..10).map(|_| Client::connect(&dir)).collect();
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let ticks = cpu_ticks(pid) - before;
    eprintln!("CPU in 2 s out of descriptors: {ticks} ticks (100 a second)");
    assert!(ticks < 40, "{ticks} ticks in 2 s: the server thread spins");
    assert!(
        good.call("echo", json!(["meanwhile"])).is_some(),
        "the connection it has is served"
    );
    netdev::os::set_nofile_limit(pid, soft, hard).unwrap();
    let last = waiting.last_mut().unwrap();
    assert!(
        last.call("echo", json!(["at last"])).is_some(),
        "a waiting client is taken once descriptors are back"
    );
}
