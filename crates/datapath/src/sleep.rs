//! Where an idle worker waits: until a descriptor of its ports (or its
//! packet-out wake-up) signals, or a timeout.
//!
//! The descriptors are registered once, in an epoll set, when the worker's
//! port set is built: a wait then costs the same with 2 ports or 64, where
//! a `poll(2)` would look at every socket and hook and unhook a wait queue
//! on each, every time (measured: with 32 AF_XDP ports, poll(2) was the
//! largest share of the worker's own kernel time). What `poll(2)` did on
//! the way besides waiting (an AF_XDP socket kicks its TX ring) the ports
//! do themselves before the worker waits (`Port::before_wait`).
//!
//! If the epoll set cannot be made (no descriptors left), the worker falls
//! back to `poll(2)` over the same descriptors: slower, same behaviour.

use netdev::os::Epoll;

/// One worker's wait on its descriptors.
#[derive(Default)]
pub(crate) enum Sleeper {
    Epoll(Epoll),
    Poll(Vec<libc::pollfd>),
    /// No descriptor to wait on.
    #[default]
    Nothing,
}

impl Sleeper {
    /// A wait on `fds` (each: readable).
    pub(crate) fn new(fds: &[i32]) -> Sleeper {
        if fds.is_empty() {
            return Sleeper::Nothing;
        }
        match Epoll::new(fds) {
            Ok(ep) => Sleeper::Epoll(ep),
            Err(e) => {
                tracing::warn!("worker: no epoll set ({e}); waiting in poll(2)");
                Sleeper::Poll(
                    fds.iter()
                        .map(|&fd| libc::pollfd {
                            fd,
                            events: libc::POLLIN,
                            revents: 0,
                        })
                        .collect(),
                )
            }
        }
    }

    /// Waits until a descriptor is readable or `timeout_ms` has passed
    /// (with no descriptor: sleeps 1 ms). An interruption (EINTR) is a
    /// wake-up like any other.
    pub(crate) fn wait(&mut self, timeout_ms: i32) {
        match self {
            Sleeper::Epoll(ep) => {
                ep.wait(timeout_ms);
            }
            Sleeper::Poll(pollfds) => {
                let _ = netdev::os::poll(pollfds, timeout_ms);
            }
            Sleeper::Nothing => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    #[test]
    fn wakes_when_a_descriptor_is_readable_and_times_out_otherwise() {
        let (_w1, r1) = UnixStream::pair().unwrap();
        let (mut w2, r2) = UnixStream::pair().unwrap();
        let mut s = Sleeper::new(&[r1.as_raw_fd(), r2.as_raw_fd()]);
        assert!(matches!(s, Sleeper::Epoll(_)));
        let t = Instant::now();
        s.wait(30);
        assert!(
            t.elapsed() >= Duration::from_millis(25),
            "nothing readable: waits the timeout"
        );
        w2.write_all(b"x").unwrap();
        let t = Instant::now();
        s.wait(5_000);
        assert!(
            t.elapsed() < Duration::from_secs(4),
            "a readable descriptor wakes the wait"
        );
    }

    #[test]
    fn no_descriptor_sleeps_briefly() {
        let mut s = Sleeper::new(&[]);
        assert!(matches!(s, Sleeper::Nothing));
        let t = Instant::now();
        s.wait(10);
        assert!(t.elapsed() >= Duration::from_millis(1));
    }
}
