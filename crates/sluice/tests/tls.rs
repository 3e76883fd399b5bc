//! TLS endpoints of the daemon, for real (no root needed: one pcap port):
//! a controller with a certificate from the switch's CA completes the
//! handshake both ways (`ptls:` and `tls:`) and speaks OpenFlow; a peer
//! from another CA is refused and the daemon keeps serving; a TLS
//! endpoint without an identity is refused at start-up, naming the key.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ofp::msg::simple::Hello;
use ofp::{Framer, Message};
use tls::testpki::Ca;
use tls::{Files, Tls, TlsStream};

mod common;
use common::Daemon;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn config(dir: &Path, switch: &Files, endpoints: &str) -> PathBuf {
    let cfg = dir.join("sluice.toml");
    std::fs::write(
        &cfg,
        format!(
            "[tls]\nprivate_key = {:?}\ncertificate = {:?}\nca_cert = {:?}\n\
             [bridge]\nname = \"t\"\nlocal_port = false\nfail_mode = \"secure\"\n{endpoints}\n\
             [[port]]\nname = \"out\"\nofport = 1\nbackend = \"pcap\"\npcap_out = {:?}\n",
            switch.private_key,
            switch.certificate,
            switch.ca_cert,
            dir.join("out.pcap")
        ),
    )
    .unwrap();
    cfg
}

fn start(dir: PathBuf, cfg: &Path) -> Daemon {
    let child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap(), "--run-dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let d = Daemon { child, dir };
    let t0 = Instant::now();
    while !d.dir.join("t.mgmt").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "daemon did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    d
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-tls-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// An OpenFlow peer over TLS with a deadline on every wait.
struct Peer {
    s: TlsStream,
    framer: Framer,
}

impl Peer {
    fn send(&mut self, m: &Message, xid: u32) -> io::Result<()> {
        let bytes = m.to_bytes(xid);
        let mut at = 0;
        let t0 = Instant::now();
        while at < bytes.len() || self.s.wants_write() {
            if at < bytes.len() {
                at += self.s.write(&bytes[at..])?;
            }
            match self.s.flush_tls() {
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
                _ => {}
            }
            if t0.elapsed() > Duration::from_secs(5) {
                return Err(io::ErrorKind::TimedOut.into());
            }
        }
        Ok(())
    }

    fn recv(&mut self) -> io::Result<Message> {
        let t0 = Instant::now();
        let mut buf = [0u8; 65536];
        loop {
            if let Some(f) = self.framer.next_message() {
                return Ok(f.expect("the switch sends well-formed messages").1);
            }
            match self.s.read(&mut buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => self.framer.push(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let _ = self.s.flush_tls();
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => return Err(e),
            }
            if t0.elapsed() > Duration::from_secs(5) {
                return Err(io::ErrorKind::TimedOut.into());
            }
        }
    }

    /// HELLO both ways, then FEATURES: the datapath id comes back.
    fn handshake(&mut self) -> io::Result<u64> {
        self.send(&Message::Hello(Hello::ours()), 1)?;
        let m = self.recv()?;
        assert!(matches!(m, Message::Hello(_)), "{m:?}");
        self.send(&Message::FeaturesRequest, 2)?;
        loop {
            if let Message::FeaturesReply(f) = self.recv()? {
                return Ok(f.datapath_id);
            }
        }
    }
}

fn dial(port: u16, id: &Tls) -> Peer {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nonblocking(true).unwrap();
    let name = tls::server_name("127.0.0.1").unwrap();
    Peer {
        s: TlsStream::client(s, id.client.clone(), name).unwrap(),
        framer: Framer::new(),
    }
}

#[test]
fn ptls_serves_controllers_of_its_ca_and_refuses_others() {
    let dir = tempdir("ptls");
    let ca = Ca::new("sluice test CA");
    let switch = ca.identity(&dir, "switch");
    let controller = Tls::load(&ca.identity(&dir, "controller")).unwrap();
    let rogue = Tls::load(&Ca::new("rogue CA").identity(&dir, "rogue")).unwrap();
    let port = free_port();
    let cfg = config(
        &dir,
        &switch,
        &format!("listen = [\"ptls:{port}:127.0.0.1\"]"),
    );
    let _d = start(dir, &cfg);

    let mut c = dial(port, &controller);
    assert_eq!(c.handshake().unwrap(), 1);

    let mut r = dial(port, &rogue);
    let e = r.handshake().unwrap_err();
    assert!(
        matches!(
            e.kind(),
            io::ErrorKind::InvalidData
                | io::ErrorKind::UnexpectedEof
                | io::ErrorKind::ConnectionReset
        ),
        "a peer from another CA gets no OpenFlow: {e}"
    );

    // The trusted controller is still served, and a new one too.
    c.send(&Message::EchoRequest(bytes::Bytes::from_static(b"hi")), 9)
        .unwrap();
    loop {
        if let Message::EchoReply(d) = c.recv().unwrap() {
            assert_eq!(&d[..], b"hi");
            break;
        }
    }
    assert_eq!(dial(port, &controller).handshake().unwrap(), 1);
}

#[test]
fn tls_controller_endpoint_connects_with_mutual_authentication() {
    let dir = tempdir("active");
    let ca = Ca::new("sluice test CA");
    let switch = ca.identity(&dir, "switch");
    let controller = Tls::load(&ca.identity(&dir, "controller")).unwrap();
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let cfg = config(
        &dir,
        &switch,
        &format!("controllers = [\"tls:127.0.0.1:{port}\"]"),
    );
    let _d = start(dir, &cfg);

    l.set_nonblocking(true).unwrap();
    let t0 = Instant::now();
    let s = loop {
        match l.accept() {
            Ok((s, _)) => break s,
            Err(_) if t0.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("the switch did not dial its controller: {e}"),
        }
    };
    s.set_nonblocking(true).unwrap();
    let mut p = Peer {
        s: TlsStream::server(s, controller.server.clone()).unwrap(),
        framer: Framer::new(),
    };
    assert_eq!(p.handshake().unwrap(), 1);
}

#[test]
fn tls_endpoint_without_identity_is_refused_naming_the_key() {
    let dir = tempdir("noid");
    let cfg = dir.join("sluice.toml");
    std::fs::write(
        &cfg,
        "[bridge]\nname = \"t\"\nlocal_port = false\nlisten = [\"ptls:6653\"]\n\
         [[port]]\nname = \"out\"\nbackend = \"pcap\"\npcap_out = \"/dev/null\"\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["--config", cfg.to_str().unwrap(), "--run-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("bridge.listen[0]") && err.contains("[tls]"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}
