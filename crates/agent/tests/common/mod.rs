//! What the agent's protocol tests share: reading back what it sent.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use agent::{Agent, ConnId, Datapath};
use bytes::Bytes;
use ofp::Message;
use pipeline::Snapshot;

/// Every message in `out`, with its xid; each must be whole and decode.
pub fn decode_all(out: &[u8]) -> Vec<(u32, Message)> {
    let mut at = 0;
    let mut v = Vec::new();
    while at < out.len() {
        let len = u16::from_be_bytes([out[at + 2], out[at + 3]]) as usize;
        assert!(len >= 8 && at + len <= out.len(), "length {len} at {at}");
        let (h, m) = Message::decode(&Bytes::copy_from_slice(&out[at..at + len]))
            .expect("the agent sends valid messages");
        v.push((h.xid, m));
        at += len;
    }
    v
}

/// Everything the agent sent on `id` since the last call, decoded.
pub fn replies<D: Datapath>(a: &mut Agent<D>, id: ConnId) -> Vec<(u32, Message)> {
    let out = a.poll_transmit(id).unwrap_or_default().to_vec();
    a.transmitted(id, out.len());
    decode_all(&out)
}

/// Runs the agent's timers at `now` and returns the connections it says
/// to close, with why.
#[allow(dead_code)]
pub fn tick<D: Datapath>(a: &mut Agent<D>, now: u64) -> Vec<(ConnId, &'static str)> {
    a.handle_timeout(now);
    std::iter::from_fn(|| a.poll_event())
        .map(|e| match e {
            agent::Event::Close { conn, why } => (conn, why),
        })
        .collect()
}

/// A datapath that only keeps the snapshots published: the last `hold`
/// of them (as workers that have not all moved on would; all of them by
/// default).
#[allow(dead_code)]
pub struct Holding {
    pub hold: RefCell<usize>,
    pub held: RefCell<VecDeque<Arc<Snapshot>>>,
}

impl Default for Holding {
    fn default() -> Holding {
        Holding {
            hold: RefCell::new(usize::MAX),
            held: RefCell::default(),
        }
    }
}

#[allow(dead_code)]
impl Holding {
    pub fn version(&self) -> u64 {
        self.held.borrow().back().map_or(0, |s| s.version)
    }
    pub fn set_hold(&self, n: usize) {
        *self.hold.borrow_mut() = n;
        let mut h = self.held.borrow_mut();
        while h.len() > n {
            h.pop_front();
        }
    }
}

impl Datapath for Holding {
    type Port = agent::PortInfo;
    type PortSettings = ();
    fn publish(&self, snap: Arc<Snapshot>) {
        let mut h = self.held.borrow_mut();
        h.push_back(snap);
        while h.len() > *self.hold.borrow() {
            h.pop_front();
        }
    }
    fn packet_out(&self, _: u32, _: Vec<ofp::Action>, _: Bytes) -> bool {
        true
    }
    fn port_stats(&self, _: u32) -> Option<ofp::msg::multipart::PortStats> {
        None
    }
    fn queue_stats(&self, _: u32, _: u32) -> Option<(u64, u64, u64)> {
        None
    }
    /// A port is as the test describes it.
    fn port_add(&mut self, port: agent::PortInfo) -> Result<agent::PortInfo, String> {
        Ok(port)
    }
}

/// Runs `ovs-ofctl -O OpenFlow13 ARGS` (SW: the agent's socket) against
/// the agent, serving its connection in this thread until it exits.
#[allow(dead_code)]
pub fn ovs_ofctl<D: Datapath>(
    a: &mut Agent<D>,
    sock: &std::path::Path,
    args: &[&str],
) -> (bool, String, String) {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;
    use std::time::{Duration, Instant};
    let _ = std::fs::remove_file(sock);
    let l = UnixListener::bind(sock).unwrap();
    l.set_nonblocking(true).unwrap();
    let target = format!("unix:{}", sock.display());
    let args: Vec<&str> = args
        .iter()
        .map(|&x| if x == "SW" { target.as_str() } else { x })
        .collect();
    let mut child = std::process::Command::new("ovs-ofctl")
        .arg("-O")
        .arg("OpenFlow13")
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ovs-ofctl (scripts/setup.sh installs openvswitch-common)");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut conns: Vec<(std::os::unix::net::UnixStream, ConnId)> = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut now = 1_000_000_000u64;
    loop {
        assert!(
            Instant::now() < deadline,
            "ovs-ofctl {args:?} did not finish"
        );
        if let Ok((s, _)) = l.accept() {
            s.set_nonblocking(true).unwrap();
            let id = a.connect(now);
            a.set_service(id);
            conns.push((s, id));
        }
        for (s, id) in conns.iter_mut() {
            while let Some(out) = a.poll_transmit(*id) {
                match s.write(out) {
                    Ok(n) => a.transmitted(*id, n),
                    Err(_) => break,
                }
            }
            match s.read(&mut buf) {
                Ok(0) => {}
                Ok(n) => {
                    a.handle_input(*id, &buf[..n], now);
                }
                Err(_) => {}
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            for (_, id) in conns.drain(..) {
                a.disconnect(id);
            }
            let mut out = String::new();
            let mut err = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.success(), out, err);
        }
        now += 1_000_000;
        std::thread::sleep(Duration::from_millis(1));
    }
}
