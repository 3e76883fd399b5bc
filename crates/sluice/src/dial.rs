//! Reaching a controller without blocking the control thread: host names
//! are resolved on a helper thread (`getaddrinfo` can take seconds), and
//! connections are opened with a non-blocking `connect(2)` that the control
//! loop finishes once the socket is writable.

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::mpsc;

/// A thread that resolves `HOST:PORT` names, one at a time.
pub struct Resolver {
    tx: mpsc::Sender<String>,
    rx: mpsc::Receiver<(String, io::Result<SocketAddr>)>,
}

impl Resolver {
    pub fn new() -> io::Result<Resolver> {
        let (tx, jobs) = mpsc::channel::<String>();
        let (done, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("sluice-resolve".into())
            .spawn(move || {
                for target in jobs {
                    let r = target.to_socket_addrs().and_then(|mut a| {
                        a.next().ok_or_else(|| {
                            io::Error::new(io::ErrorKind::NotFound, "the name has no address")
                        })
                    });
                    if done.send((target, r)).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Resolver { tx, rx })
    }

    /// Asks for `target` (`HOST:PORT`); the answer comes from [`Resolver::answers`].
    pub fn ask(&self, target: &str) {
        let _ = self.tx.send(target.to_string());
    }

    /// The answers so far, without waiting.
    pub fn answers(&self) -> Vec<(String, io::Result<SocketAddr>)> {
        self.rx.try_iter().collect()
    }
}

/// `target` as an address when it is a literal (`192.0.2.1:6653`,
/// `[2001:db8::1]:6653`): no resolution needed.
pub fn literal(target: &str) -> Option<SocketAddr> {
    target.parse().ok()
}

/// Starts a non-blocking connection to `addr`.
pub fn start(addr: &SocketAddr) -> io::Result<TcpStream> {
    netdev::os::connect_nonblocking(addr)
}

/// Where a connection started with [`start`] stands.
pub enum Progress {
    Done,
    Pending,
    Failed(io::Error),
}

/// Checks a connection started with [`start`] (without waiting).
pub fn progress(s: &TcpStream) -> Progress {
    match s.take_error() {
        Ok(Some(e)) | Err(e) => Progress::Failed(e),
        Ok(None) => match s.peer_addr() {
            Ok(_) => Progress::Done,
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Progress::Pending,
            Err(e) => Progress::Failed(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    #[test]
    fn a_connection_is_started_without_waiting_and_finished_later() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = start(&l.local_addr().unwrap()).unwrap();
        let t0 = Instant::now();
        loop {
            match progress(&s) {
                Progress::Done => break,
                Progress::Pending => {
                    assert!(t0.elapsed() < Duration::from_secs(5));
                    std::thread::sleep(Duration::from_millis(5));
                }
                Progress::Failed(e) => panic!("{e}"),
            }
        }
        assert!(l.accept().is_ok());
    }

    #[test]
    fn a_refused_connection_is_reported() {
        // A port nothing listens on: bind, learn it, close.
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let t0 = Instant::now();
        let failed = match start(&addr) {
            Err(_) => true,
            Ok(s) => loop {
                match progress(&s) {
                    Progress::Failed(_) => break true,
                    Progress::Done => break false,
                    Progress::Pending => {
                        assert!(t0.elapsed() < Duration::from_secs(5));
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
            },
        };
        assert!(failed);
    }

    #[test]
    fn names_are_resolved_off_the_calling_thread() {
        let r = Resolver::new().unwrap();
        r.ask("localhost:6653");
        let t0 = Instant::now();
        loop {
            if let Some((t, a)) = r.answers().pop() {
                assert_eq!(t, "localhost:6653");
                assert_eq!(a.unwrap().port(), 6653);
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(literal("192.0.2.1:6653").unwrap().port(), 6653);
        assert!(literal("controller:6653").is_none());
    }
}
