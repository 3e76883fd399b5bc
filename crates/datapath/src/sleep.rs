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

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// One worker's wait on its descriptors.
pub(crate) enum Sleeper {
    Epoll {
        fd: OwnedFd,
        events: Vec<libc::epoll_event>,
    },
    Poll(Vec<libc::pollfd>),
    /// No descriptor to wait on.
    Nothing,
}

impl Sleeper {
    /// A wait on `fds` (each: readable).
    pub(crate) fn new(fds: &[i32]) -> Sleeper {
        if fds.is_empty() {
            return Sleeper::Nothing;
        }
        match epoll_of(fds) {
            Ok(fd) => Sleeper::Epoll {
                fd,
                events: vec![libc::epoll_event { events: 0, u64: 0 }; fds.len().min(64)],
            },
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
    /// (with no descriptor: sleeps 1 ms).
    pub(crate) fn wait(&mut self, timeout_ms: i32) {
        match self {
            Sleeper::Epoll { fd, events } => {
                // SAFETY: events is a valid array of its length for the
                // call; an error (EINTR) is a wake-up like any other.
                unsafe {
                    libc::epoll_wait(
                        fd.as_raw_fd(),
                        events.as_mut_ptr(),
                        events.len() as i32,
                        timeout_ms,
                    )
                };
            }
            Sleeper::Poll(pollfds) => {
                // SAFETY: pollfds is a valid array of pollfd for the call.
                unsafe {
                    libc::poll(
                        pollfds.as_mut_ptr(),
                        pollfds.len() as libc::nfds_t,
                        timeout_ms,
                    )
                };
            }
            Sleeper::Nothing => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}

/// An epoll set with each of `fds` registered for readability.
fn epoll_of(fds: &[i32]) -> std::io::Result<OwnedFd> {
    // SAFETY: plain syscall; the descriptor is owned from here on.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor we just created and own alone.
    let ep = unsafe { OwnedFd::from_raw_fd(ep) };
    for &fd in fds {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        // SAFETY: ev is valid for the call; fd is a port's descriptor,
        // open while the worker holds the port (the set is rebuilt when
        // the ports change, and a closed descriptor leaves the set).
        if unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(ep)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn pipe() -> (OwnedFd, OwnedFd) {
        let mut p = [0i32; 2];
        // SAFETY: p is valid for the call.
        assert_eq!(unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fresh descriptors, owned here.
        unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) }
    }

    #[test]
    fn wakes_when_a_descriptor_is_readable_and_times_out_otherwise() {
        let (r1, _w1) = pipe();
        let (r2, w2) = pipe();
        let mut s = Sleeper::new(&[r1.as_raw_fd(), r2.as_raw_fd()]);
        assert!(matches!(s, Sleeper::Epoll { .. }));
        let t = Instant::now();
        s.wait(30);
        assert!(
            t.elapsed() >= Duration::from_millis(25),
            "nothing readable: waits the timeout"
        );
        // SAFETY: writing one byte from a valid buffer to our pipe.
        assert_eq!(
            unsafe { libc::write(w2.as_raw_fd(), b"x".as_ptr().cast(), 1) },
            1
        );
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
