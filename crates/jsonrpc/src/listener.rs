//! Listening sockets for the passive remotes (`punix:`, `ptcp:`,
//! `pssl:`), non-blocking.
//!
//! Contract: [`Listener::accept`] never blocks (`Ok(None)` when nobody
//! waits) and gives a non-blocking [`Stream`] (TLS wrapped for `pssl:`).
//! A Unix socket: a leftover socket file nobody answers on is replaced
//! (what a crashed daemon leaves behind), but a live socket or anything
//! that is not a socket is an error, never removed; the file gets the
//! mode asked for right after bind(2) (the umask's mode holds until then:
//! a daemon that must not have that moment binds the socket itself under
//! a umask and hands it over with [`Listener::from_unix`]); the file is
//! removed when the listener is dropped.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{Remote, Stream};

/// A listening socket.
pub enum Listener {
    Unix {
        listener: UnixListener,
        path: PathBuf,
    },
    Tcp {
        listener: TcpListener,
        /// Connections speak TLS.
        tls: Option<Arc<rustls::ServerConfig>>,
    },
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix { path, .. } = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Makes way for a Unix socket at `path`: removes a stale socket, refuses
/// a live one or a file that is not a socket.
pub fn clear_stale_socket(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::FileTypeExt;
    let shown = path.display();
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(format!("{shown}: another process answers on this socket"));
            }
            std::fs::remove_file(path).map_err(|e| format!("{shown}: removing a stale socket: {e}"))
        }
        Ok(_) => Err(format!(
            "{shown}: the path exists and is not a socket; not replacing it"
        )),
        Err(_) => Ok(()),
    }
}

impl Listener {
    /// Listens on a passive remote. `pssl:` needs a TLS identity;
    /// `unix_mode` is the socket file's mode (`punix:` only).
    pub fn bind(
        remote: &Remote,
        identity: Option<&tls::Tls>,
        unix_mode: u32,
    ) -> Result<Listener, String> {
        match remote {
            Remote::PUnix(path) => {
                use std::os::unix::fs::PermissionsExt;
                clear_stale_socket(path)?;
                let shown = path.display();
                let l = UnixListener::bind(path).map_err(|e| format!("{shown}: {e}"))?;
                let listener = Listener::from_unix(l, path.clone())?;
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(unix_mode))
                    .map_err(|e| format!("{shown}: {e}"))?;
                Ok(listener)
            }
            Remote::PTcp(a) => Listener::tcp(*a, None, remote),
            Remote::PSsl(a) => {
                let Some(id) = identity else {
                    return Err(format!(
                        "{remote}: needs a TLS identity (private key, certificate, CA)"
                    ));
                };
                Listener::tcp(*a, Some(id.server.clone()), remote)
            }
            _ => Err(format!("{remote}: an active remote cannot be listened on")),
        }
    }

    fn tcp(
        a: SocketAddr,
        tls: Option<Arc<rustls::ServerConfig>>,
        remote: &Remote,
    ) -> Result<Listener, String> {
        let listener = TcpListener::bind(a).map_err(|e| format!("{remote}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("{remote}: {e}"))?;
        Ok(Listener::Tcp { listener, tls })
    }

    /// Takes a Unix listener the caller bound (made non-blocking here);
    /// `path` is removed when the listener is dropped.
    pub fn from_unix(listener: UnixListener, path: PathBuf) -> Result<Listener, String> {
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Listener::Unix { listener, path })
    }

    /// The socket, for `poll(2)`.
    pub fn fd(&self) -> RawFd {
        match self {
            Listener::Unix { listener, .. } => listener.as_raw_fd(),
            Listener::Tcp { listener, .. } => listener.as_raw_fd(),
        }
    }

    /// The address a TCP listener got (its port, after binding port 0).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match self {
            Listener::Tcp { listener, .. } => listener.local_addr().ok(),
            Listener::Unix { .. } => None,
        }
    }

    /// One waiting connection, or `None`. Errors other than "nobody
    /// waits" (EMFILE, ENOBUFS...) are the caller's to back off from.
    pub fn accept(&self) -> io::Result<Option<Stream>> {
        let r = match self {
            Listener::Unix { listener, .. } => listener.accept().and_then(|(s, _)| {
                s.set_nonblocking(true)?;
                Ok(Stream::Unix(s))
            }),
            Listener::Tcp { listener, tls } => listener.accept().and_then(|(s, _)| {
                s.set_nonblocking(true)?;
                let _ = s.set_nodelay(true);
                Ok(match tls {
                    Some(config) => {
                        Stream::Tls(Box::new(tls::TlsStream::server(s, config.clone())?))
                    }
                    None => Stream::Tcp(s),
                })
            }),
        };
        match r {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Conn, ConnLimits, Message};
    use serde_json::json;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("jsonrpc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn punix_replaces_only_stale_sockets_sets_the_mode_and_cleans_up() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tmp("punix");
        let path = dir.join("db.sock");
        let remote = Remote::PUnix(path.clone());
        let l = Listener::bind(&remote, None, 0o750).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);
        assert!(l.accept().unwrap().is_none(), "non-blocking");
        let e = Listener::bind(&remote, None, 0o750).err().unwrap();
        assert!(e.contains("another process answers"), "{e}");
        drop(l);
        assert!(!path.exists(), "removed at drop");
        // A stale socket (its listener gone without removing the file).
        let stale = UnixListener::bind(&path).unwrap();
        drop(stale);
        let l = Listener::bind(&remote, None, 0o700).unwrap();
        drop(l);
        let file = dir.join("notes");
        std::fs::write(&file, "keep").unwrap();
        let e = Listener::bind(&Remote::PUnix(file.clone()), None, 0o700)
            .err()
            .unwrap();
        assert!(e.contains("not a socket"), "{e}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_request_over_ptcp() {
        let l = Listener::bind(&Remote::parse("ptcp:0:127.0.0.1").unwrap(), None, 0).unwrap();
        let port = l.local_addr().unwrap().port();
        let remote = Remote::parse(&format!("tcp:127.0.0.1:{port}")).unwrap();
        let mut client = Conn::new(
            Stream::connect(&remote, None).unwrap(),
            ConnLimits::default(),
        );
        let req = Message::Request {
            method: "list_dbs".into(),
            params: json!([]),
            id: json!(0),
        };
        client.send(&req).unwrap();
        client.flush().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut server = loop {
            if let Some(s) = l.accept().unwrap() {
                break Conn::new(s, ConnLimits::default());
            }
            assert!(std::time::Instant::now() < deadline, "no connection");
            std::thread::yield_now();
        };
        let got = loop {
            let m = server.receive().unwrap();
            if !m.is_empty() {
                break m;
            }
            assert!(std::time::Instant::now() < deadline, "no request");
            std::thread::yield_now();
        };
        assert_eq!(got, vec![req]);
        let e = Listener::bind(&Remote::parse("pssl:0").unwrap(), None, 0)
            .err()
            .unwrap();
        assert!(e.contains("needs a TLS identity"), "{e}");
    }

    /// Both ends non-blocking in one thread: each side is pumped until the
    /// handshake is done and the request has crossed.
    #[test]
    fn a_request_and_its_reply_over_pssl() {
        let dir = tmp("pssl");
        let ca = tls::testpki::Ca::new("ca");
        let server_id = tls::Tls::load(&ca.identity(&dir, "server")).unwrap();
        let client_id = tls::Tls::load(&ca.identity(&dir, "client")).unwrap();
        let l = Listener::bind(
            &Remote::parse("pssl:0:127.0.0.1").unwrap(),
            Some(&server_id),
            0,
        )
        .unwrap();
        let port = l.local_addr().unwrap().port();
        let remote = Remote::parse(&format!("ssl:127.0.0.1:{port}")).unwrap();
        let mut client = Conn::new(
            Stream::connect(&remote, Some(&client_id)).unwrap(),
            ConnLimits::default(),
        );
        let req = Message::Request {
            method: "echo".into(),
            params: json!(["over TLS"]),
            id: json!("a"),
        };
        client.send(&req).unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut server: Option<Conn> = None;
        let mut answered = false;
        let reply = loop {
            assert!(std::time::Instant::now() < deadline, "no reply over TLS");
            client.flush().unwrap();
            if server.is_none() {
                server = l
                    .accept()
                    .unwrap()
                    .map(|s| Conn::new(s, ConnLimits::default()));
            }
            if let Some(s) = server.as_mut() {
                for m in s.receive().unwrap() {
                    assert_eq!(m, req);
                    s.send(&Message::Reply {
                        result: json!(["over TLS"]),
                        id: json!("a"),
                    })
                    .unwrap();
                    answered = true;
                }
                s.flush().unwrap();
            }
            let got = client.receive().unwrap();
            if let Some(m) = got.into_iter().next() {
                break m;
            }
            std::thread::yield_now();
        };
        assert!(answered);
        assert_eq!(reply.id(), Some(&json!("a")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
