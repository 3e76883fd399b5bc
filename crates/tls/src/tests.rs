//! Real handshakes over loopback TCP with non-blocking sockets.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::testpki::Ca;
use crate::{server_name, Tls, TlsStream};

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("sluice-tls-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn pair(client: &Tls, server: &Tls) -> (TlsStream, TlsStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (s, _) = l.accept().unwrap();
    c.set_nonblocking(true).unwrap();
    s.set_nonblocking(true).unwrap();
    (
        TlsStream::client(c, client.client.clone(), server_name("127.0.0.1").unwrap()).unwrap(),
        TlsStream::server(s, server.server.clone()).unwrap(),
    )
}

/// Moves data both ways until `want` bytes reached the server or an error.
fn pump(c: &mut TlsStream, s: &mut TlsStream, msg: &[u8]) -> io::Result<Vec<u8>> {
    let mut sent = 0;
    let mut got = Vec::new();
    let t0 = Instant::now();
    let mut buf = [0u8; 4096];
    while got.len() < msg.len() {
        if t0.elapsed() > Duration::from_secs(5) {
            return Err(io::ErrorKind::TimedOut.into());
        }
        if sent < msg.len() {
            sent += c.write(&msg[sent..])?;
        }
        let _ = c.flush_tls();
        for side in [&mut *s, &mut *c] {
            match side.read(&mut buf) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            let _ = side.flush_tls();
        }
    }
    Ok(got)
}

#[test]
fn peers_with_certificates_from_the_ca_talk() {
    let dir = tempdir("ok");
    let ca = Ca::new("test CA");
    let switch = Tls::load(&ca.identity(&dir, "switch")).unwrap();
    let controller = Tls::load(&ca.identity(&dir, "controller")).unwrap();
    let (mut c, mut s) = pair(&switch, &controller);
    let msg = vec![7u8; 100_000];
    assert_eq!(pump(&mut c, &mut s, &msg).unwrap(), msg);
    assert!(!c.is_handshaking() && !s.is_handshaking());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_peer_from_another_ca_is_refused_both_ways() {
    let dir = tempdir("other");
    let ca = Ca::new("test CA");
    let rogue = Ca::new("rogue CA");
    let switch = Tls::load(&ca.identity(&dir, "switch")).unwrap();
    let intruder = Tls::load(&rogue.identity(&dir, "intruder")).unwrap();
    // The switch dials a controller it cannot trust.
    let (mut c, mut s) = pair(&switch, &intruder);
    let e = pump(&mut c, &mut s, b"hello").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    // A client the switch cannot trust dials the switch.
    let (mut c, mut s) = pair(&intruder, &switch);
    let e = pump(&mut c, &mut s, b"hello").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_files_are_named() {
    let dir = tempdir("files");
    let ca = Ca::new("test CA");
    let a = ca.identity(&dir, "a");
    let b = ca.identity(&dir, "b");
    let e = Tls::load(&crate::Files {
        private_key: dir.join("missing.pem"),
        ..a.clone()
    })
    .unwrap_err();
    assert_eq!(e.what, "private_key");
    assert!(e.problem.contains("missing.pem"), "{e}");
    let e = Tls::load(&crate::Files {
        certificate: a.private_key.clone(),
        ..a.clone()
    })
    .unwrap_err();
    assert_eq!(e.what, "certificate", "{e}");
    let e = Tls::load(&crate::Files {
        private_key: b.private_key.clone(),
        ..a.clone()
    })
    .unwrap_err();
    assert_eq!(e.what, "private_key", "{e}");
    assert!(e.problem.contains("does not fit"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}
