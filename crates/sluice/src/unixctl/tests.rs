//! The server on a real socket, with no bridges: requests and replies in
//! order on one connection, what closes a connection and what does not,
//! the client limit, and a client that sends without reading.

use super::*;
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

/// A directory removed at the end of the test.
struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Bed {
    dir: Dir,
    server: Server,
    sock: PathBuf,
}

impl Bed {
    fn new(name: &str) -> Bed {
        let dir =
            std::env::temp_dir().join(format!("sluice-unixctl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let sock = dir.join("ctl");
        let server = Server::start(&sock, Some(&dir.join("x.pid")), None).unwrap();
        Bed {
            dir: Dir(dir),
            server,
            sock,
        }
    }

    fn connect(&self) -> UnixStream {
        let s = UnixStream::connect(&self.sock).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        s
    }

    fn round(&mut self) -> After {
        self.server.service(&mut [], datapath::clock::now_ns())
    }

    /// Serves until `done` says so, for at most 10 s.
    fn until(&mut self, what: &str, mut done: impl FnMut(&mut Bed) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out waiting for: {what}");
            self.round();
        }
    }
}

fn request(method: &str, id: u64) -> Vec<u8> {
    serde_json::to_vec(&json!({"method": method, "params": [], "id": id})).unwrap()
}

/// Reads whatever values have arrived (one short read).
fn read_values(s: &mut UnixStream, f: &mut jsonrpc::Framer) -> Option<Vec<Value>> {
    let mut buf = [0u8; 65536];
    match s.read(&mut buf) {
        Ok(0) => None,
        Ok(n) => {
            f.push(&buf[..n]);
            Some(
                std::iter::from_fn(|| f.next())
                    .map(|v| v.unwrap())
                    .collect(),
            )
        }
        Err(_) => Some(Vec::new()),
    }
}

#[test]
fn answers_in_order_and_an_unknown_command_keeps_the_connection() {
    let mut bed = Bed::new("order");
    assert!(bed.dir.0.join("x.pid").exists());
    let mut c = bed.connect();
    c.write_all(&request("foo/bar", 1)).unwrap();
    c.write_all(&request("version", 2)).unwrap();
    let mut f = jsonrpc::Framer::new(Default::default());
    let mut got = Vec::new();
    bed.until("two replies", |_| {
        got.extend(read_values(&mut c, &mut f).expect("open"));
        got.len() >= 2
    });
    assert_eq!(got[0]["id"], 1);
    assert!(got[0]["error"]
        .as_str()
        .unwrap()
        .contains("is not a valid command"));
    assert_eq!(got[1]["id"], 2);
    assert!(got[1]["error"].is_null());
    assert!(got[1]["result"]
        .as_str()
        .unwrap()
        .starts_with("ovs-vswitchd (sluice)"));
}

#[test]
fn exit_is_answered_and_asks_the_daemon_to_stop() {
    let mut bed = Bed::new("exit");
    let mut c = bed.connect();
    c.write_all(&request("exit", 9)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while bed.round() != After::Exit {
        assert!(Instant::now() < deadline, "exit not seen");
    }
    let mut f = jsonrpc::Framer::new(Default::default());
    let got = read_values(&mut c, &mut f).unwrap();
    assert_eq!(got, vec![json!({"id": 9, "result": "", "error": null})]);
    let (sock, pid) = (bed.sock.clone(), bed.dir.0.join("x.pid"));
    drop(bed.server);
    assert!(!sock.exists() && !pid.exists(), "both removed");
}

#[test]
fn a_bad_request_closes_the_connection() {
    let mut bed = Bed::new("bad");
    for bad in [
        &b"hello"[..],
        b"{\"method\":\"version\",\"params\":{},\"id\":1}",
    ] {
        let mut c = bed.connect();
        c.write_all(bad).unwrap();
        let mut f = jsonrpc::Framer::new(Default::default());
        bed.until("the connection to close", |_| {
            read_values(&mut c, &mut f).is_none()
        });
    }
}

#[test]
fn a_request_before_garbage_is_answered_then_the_connection_closes() {
    let mut bed = Bed::new("garbage");
    let mut c = bed.connect();
    let mut bytes = request("version", 4);
    bytes.extend_from_slice(b"garbage");
    c.write_all(&bytes).unwrap();
    let mut f = jsonrpc::Framer::new(Default::default());
    let mut got = Vec::new();
    bed.until("the reply, then the close", |_| {
        match read_values(&mut c, &mut f) {
            Some(v) => {
                got.extend(v);
                false
            }
            None => true,
        }
    });
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["id"], 4);
    assert!(got[0]["error"].is_null(), "{got:?}");
}

#[test]
fn clients_past_the_limit_are_closed_at_once() {
    let mut bed = Bed::new("limit");
    let clients: Vec<UnixStream> = (0..MAX_CLIENTS).map(|_| bed.connect()).collect();
    bed.until("every client accepted", |b| {
        b.server.clients.len() == MAX_CLIENTS
    });
    let mut extra = bed.connect();
    let mut f = jsonrpc::Framer::new(Default::default());
    bed.until("the extra client to be closed", |_| {
        read_values(&mut extra, &mut f).is_none()
    });
    assert_eq!(bed.server.clients.len(), MAX_CLIENTS);
    drop(clients);
    bed.until("the clients to go", |b| b.server.clients.is_empty());
}

#[test]
fn a_client_that_sends_without_reading_is_read_no_more_then_served() {
    let mut bed = Bed::new("flood");
    let mut c = bed.connect();
    // 20 000 requests (~1 MB) whose replies (~1 KB each) are 20 MB: more
    // than the socket holds either way. A thread writes them (it blocks
    // when the server stops reading).
    let n = 20_000u64;
    let mut all = Vec::new();
    for i in 0..n {
        all.extend(request("list-commands", i));
    }
    let mut w = c.try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&all).unwrap());
    // Never more held than the bounds: requests waiting (one read's worth
    // past MAX_PENDING) and unsent replies (one reply past PAUSE_OUTPUT).
    let read_worth = (64 << 10) / request("list-commands", 0).len() + 1;
    for _ in 0..300 {
        bed.round();
        let cl = &bed.server.clients[0];
        assert!(
            cl.pending.len() <= MAX_PENDING + read_worth,
            "{}",
            cl.pending.len()
        );
        assert!(
            cl.conn.backlog() <= PAUSE_OUTPUT + 4096,
            "{}",
            cl.conn.backlog()
        );
    }
    assert!(
        !writer.is_finished(),
        "the server stopped reading the client"
    );
    let mut f = jsonrpc::Framer::new(Default::default());
    let mut ids = Vec::new();
    bed.until("every request answered", |_| {
        ids.extend(
            read_values(&mut c, &mut f)
                .unwrap()
                .iter()
                .map(|v| v["id"].as_u64().unwrap()),
        );
        ids.len() as u64 == n
    });
    writer.join().unwrap();
    assert_eq!(ids, (0..n).collect::<Vec<_>>(), "in order");
}

#[test]
fn ovs_shape_lays_out_each_recirculation_as_a_block_of_its_own() {
    let rule = "=".repeat(79);
    let text = format!(
        "Bridge: dpid 0000000000000001, in_port 1 (p1)\n\
         Flow: tcp,in_port=1\n \
         0. ct_state=-trk,tcp, priority 50\n    ct(table=0)\n    drop\n     \
         -> A clone of the packet is forked to recirculate. The forked pipeline will be resumed at table 0.\n\n\
         Final flow: unchanged\nDatapath actions: ct,recirc(0x1)\n\
         \n{rule}\nrecirc(0x1) - resume conntrack with default ct_state=trk|new (use --ct-next to customize)\n{rule}\n\n\
         Flow: recirc_id=0x1,ct_state=new|trk,eth,tcp,in_port=1\nthaw\n    Resuming from table 0\n \
         0. ct_state=+new+trk,tcp, priority 50\n    output:2\n\n\
         Final flow: unchanged\nDatapath actions: 2\n"
    );
    let out = super::commands::ovs_shape("br0", &text);
    let want = format!(
        "Flow: tcp,in_port=1\n\nbridge(\"br0\")\n-------------\n \
         0. ct_state=-trk,tcp, priority 50\n    ct(table=0)\n    drop\n     \
         -> A clone of the packet is forked to recirculate. The forked pipeline will be resumed at table 0.\n\n\
         Final flow: unchanged\nDatapath actions: ct,recirc(0x1)\n\
         \n{rule}\nrecirc(0x1) - resume conntrack with default ct_state=trk|new (use --ct-next to customize)\n{rule}\n\n\
         Flow: recirc_id=0x1,ct_state=new|trk,eth,tcp,in_port=1\n\nbridge(\"br0\")\n-------------\n    \
         thaw\n        Resuming from table 0\n \
         0. ct_state=+new+trk,tcp, priority 50\n    output:2\n\n\
         Final flow: unchanged\nDatapath actions: 2\n"
    );
    assert_eq!(out, want);
}
