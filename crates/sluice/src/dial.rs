//! Reaching a controller without blocking the control thread: host names
//! are resolved on a helper thread (`getaddrinfo` can take seconds), and
//! connections are opened with a non-blocking `connect(2)` that the control
//! loop finishes once the socket is writable.

use std::io;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, FromRawFd};
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
    let domain = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: socket(2) takes no pointers; the result is checked.
    let fd = unsafe {
        libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a new socket nothing else owns; the stream closes it.
    let s = unsafe { TcpStream::from_raw_fd(fd) };
    // SAFETY: an all-zero sockaddr_storage is valid; it is large enough for
    // either family.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_in fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_in6 fits in sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    // SAFETY: ss holds a valid address of `len` bytes for the socket's family.
    let r = unsafe {
        libc::connect(
            s.as_raw_fd(),
            &ss as *const _ as *const libc::sockaddr,
            len as libc::socklen_t,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(e);
        }
    }
    Ok(s)
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
