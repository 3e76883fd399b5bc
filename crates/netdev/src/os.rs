//! The operating system calls sluice makes besides its ports': waking and
//! waiting (eventfd, epoll, poll), socket options, a non-blocking TCP
//! connect, the file-creation mask, CPU affinity, the monotonic clock as
//! systemd reads it, and resource limits.
//!
//! This crate is sluice's one OS layer: every system call that needs
//! `unsafe` is made here (ports in their own modules, the rest in this
//! one), behind a safe function or a type that owns its descriptor (closed
//! once, on drop). Every other crate forbids `unsafe_code`.

use std::io;
use std::mem::size_of;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The result of a call that returns -1 and sets errno on failure.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// An eventfd: a counter one side bumps ([`EventFd::wake`]) and the other
/// waits on (readable while non-zero) and clears.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A non-blocking eventfd (close-on-exec).
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd(2) takes no pointers; checked.
        let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: a descriptor just created, owned by nothing else.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The descriptor, to wait on (it stays this value's).
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Wakes the waiter (the counter cannot overflow in practice; a full
    /// counter already wakes it).
    pub fn wake(&self) {
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.fd(), &one as *const u64 as *const libc::c_void, 8) };
    }

    /// Clears pending wake-ups.
    pub fn clear(&self) {
        let mut v: u64 = 0;
        // SAFETY: reading 8 bytes into a live u64 from our eventfd.
        unsafe { libc::read(self.fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    }
}

/// An epoll set, each of its descriptors registered for readability.
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// A set holding `fds` (each must stay open while it is in the set: a
    /// closed descriptor leaves the set by itself).
    pub fn new(fds: &[RawFd]) -> io::Result<Epoll> {
        // SAFETY: epoll_create1(2) takes no pointers; checked.
        let ep = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: a descriptor just created, owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(ep) };
        for &f in fds {
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: f as u64,
            };
            // SAFETY: `ev` is valid for the call; epoll checks `f` itself.
            check(unsafe { libc::epoll_ctl(fd.as_raw_fd(), libc::EPOLL_CTL_ADD, f, &mut ev) })?;
        }
        Ok(Epoll {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; fds.len().clamp(1, 64)],
        })
    }

    /// Waits until a descriptor is readable or `timeout_ms` has passed
    /// (-1: no limit); returns how many are ready (an interruption is a
    /// wake-up with none).
    pub fn wait(&mut self, timeout_ms: i32) -> usize {
        // SAFETY: `events` is a valid array of its length for the call.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        n.max(0) as usize
    }
}

/// poll(2) over `fds`: waits until one has an event it asks for, or
/// `timeout_ms` has passed (-1: no limit); `revents` are filled in.
/// Returns how many have events (0 on timeout); an interruption is
/// `ErrorKind::Interrupted`.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> io::Result<usize> {
    // SAFETY: `fds` is a valid array of pollfd of its length for the call.
    let n = check(unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) })?;
    Ok(n as usize)
}

/// Gives the C allocator's free memory back to the system
/// (malloc_trim(3) with no padding): after a large free, glibc keeps the
/// freed pages in its arenas otherwise, and the process's RSS stays where
/// the peak was. It walks the heap: call it after big frees, not often.
/// Returns whether any memory was released.
pub fn trim_heap() -> bool {
    // SAFETY: malloc_trim takes no pointer and only works on the
    // allocator's own state, under its locks.
    unsafe { libc::malloc_trim(0) != 0 }
}

/// setsockopt(2) of `v`, a value of the size the option takes.
pub fn setsockopt<T>(fd: RawFd, level: libc::c_int, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a live T of the size passed.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            opt,
            v as *const T as *const libc::c_void,
            size_of::<T>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// Starts a non-blocking TCP connection to `addr` (close-on-exec): the
/// stream is returned at once, connected or still connecting (`EINPROGRESS`
/// is not an error); the caller learns how it went when the socket becomes
/// writable (`TcpStream::take_error`).
pub fn connect_nonblocking(addr: &SocketAddr) -> io::Result<TcpStream> {
    let domain = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: socket(2) takes no pointers; checked.
    let fd = check(unsafe {
        libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    })?;
    // SAFETY: a socket just created, owned by nothing else; the stream
    // closes it.
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
            // SAFETY: a sockaddr_in fits in a sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
            size_of::<libc::sockaddr_in>()
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
            // SAFETY: a sockaddr_in6 fits in a sockaddr_storage.
            unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    // SAFETY: `ss` holds a valid address of `len` bytes of the socket's
    // family.
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

/// Runs `f` with the process's file-creation mask set to `mask`, then puts
/// the old one back. The mask is the process's: the caller must be the
/// only thread creating files meanwhile.
pub fn with_umask<T>(mask: libc::mode_t, f: impl FnOnce() -> T) -> T {
    // SAFETY: umask(2) cannot fail and takes no pointers.
    let old = unsafe { libc::umask(mask) };
    let r = f();
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    r
}

/// A POSIX record lock (fcntl(2) `F_SETLK`, `F_WRLCK`) on the whole of
/// `file` (open for writing), as Open vSwitch locks its pidfiles: its
/// tools (`ovs-appctl`) trust a pidfile only while the process it names
/// holds this lock (they ask with `F_GETLK`; a flock(2) lock is invisible
/// to that). Err `WouldBlock` when another process holds it. The lock is
/// the process's, released when it exits or closes *any* descriptor of
/// that file.
pub fn lock_record(file: &std::fs::File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock is plain data (all-zero is a valid value).
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = libc::F_WRLCK as libc::c_short;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: fcntl(F_SETLK) reads one flock we own; the descriptor is
    // open (borrowed from `file`).
    match check(unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLK, &l) }) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EACCES | libc::EAGAIN)) => {
            Err(io::ErrorKind::WouldBlock.into())
        }
        r => r.map(|_| ()),
    }
}

/// The process holding a record lock that conflicts with a write lock on
/// the whole of `file` (fcntl(2) `F_GETLK`), if any.
pub fn record_lock_holder(file: &std::fs::File) -> io::Result<Option<u32>> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock is plain data (all-zero is a valid value).
    let mut l: libc::flock = unsafe { std::mem::zeroed() };
    l.l_type = libc::F_WRLCK as libc::c_short;
    l.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: fcntl(F_GETLK) reads and writes one flock we own.
    check(unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &mut l) })?;
    Ok((l.l_type != libc::F_UNLCK as libc::c_short).then_some(l.l_pid as u32))
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= 8 * size_of::<libc::cpu_set_t>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is past the CPU set"),
        ));
    }
    // SAFETY: cpu_set_t is plain data (all-zero is the empty set); CPU_SET
    // stays within the set (checked above); sched_setaffinity(0, ...)
    // applies to this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(
            0,
            size_of::<libc::cpu_set_t>(),
            &set,
        ))
        .map(|_| ())
    }
}

/// CLOCK_MONOTONIC in microseconds (the clock systemd's
/// `MONOTONIC_USEC=` is read on).
pub fn monotonic_usec() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// Whether this process runs as root (effective user id 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Process `pid`'s limit on open descriptors: (soft, hard).
pub fn nofile_limit(pid: u32) -> io::Result<(u64, u64)> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit(2) reads nothing (new limit null) and writes one
    // rlimit we own.
    check(unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            std::ptr::null(),
            &mut old,
        )
    })?;
    Ok((old.rlim_cur, old.rlim_max))
}

/// Sets process `pid`'s limit on open descriptors to (soft, hard).
pub fn set_nofile_limit(pid: u32, soft: u64, hard: u64) -> io::Result<()> {
    let new = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: prlimit(2) reads one live rlimit and writes nothing.
    check(unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &new,
            std::ptr::null_mut(),
        )
    })
    .map(|_| ())
}

/// The open-file limit a switch wants: Open vSwitch's units set 1 048 576
/// (Linux's default `nr_open`), so a connection or port count, not the
/// kernel's default soft limit of 1 024, is the cap.
pub const NOFILE_WANTED: u64 = 1 << 20;

/// Raises this process's open-file limit: the soft limit to the hard one,
/// and both to [`NOFILE_WANTED`] when allowed (root, or a hard limit
/// already that high); never lowers either. Returns the limits now.
pub fn raise_nofile_limit() -> io::Result<(u64, u64)> {
    let pid = std::process::id();
    let (soft, hard) = nofile_limit(pid)?;
    let want = NOFILE_WANTED.max(hard);
    if soft < want && set_nofile_limit(pid, want, want).is_ok() {
        return Ok((want, want));
    }
    if soft < hard {
        set_nofile_limit(pid, hard, hard)?;
        return Ok((hard, hard));
    }
    Ok((soft, hard))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    #[test]
    fn an_eventfd_wakes_a_wait_until_cleared() {
        let e = EventFd::new().unwrap();
        let mut p = [libc::pollfd {
            fd: e.fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        assert_eq!(poll(&mut p, 0).unwrap(), 0);
        e.wake();
        assert_eq!(poll(&mut p, 0).unwrap(), 1);
        e.clear();
        assert_eq!(poll(&mut p, 0).unwrap(), 0);
    }

    #[test]
    fn epoll_wakes_when_a_descriptor_is_readable_and_times_out_otherwise() {
        let (_a1, b1) = UnixStream::pair().unwrap();
        let (mut a2, b2) = UnixStream::pair().unwrap();
        let mut ep = Epoll::new(&[b1.as_raw_fd(), b2.as_raw_fd()]).unwrap();
        let t = Instant::now();
        assert_eq!(ep.wait(30), 0);
        assert!(t.elapsed() >= Duration::from_millis(25));
        a2.write_all(b"x").unwrap();
        assert_eq!(ep.wait(5_000), 1);
    }

    #[test]
    fn a_refused_connection_is_an_error_now_or_later() {
        // A port nothing listens on (bound, then closed). Another process
        // may take the port between the close and the connect: then the
        // connection succeeds, and another port is tried.
        for _ in 0..10 {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            drop(l);
            match connect_nonblocking(&addr) {
                Err(_) => return,
                Ok(s) => {
                    let mut p = [libc::pollfd {
                        fd: s.as_raw_fd(),
                        events: libc::POLLOUT,
                        revents: 0,
                    }];
                    poll(&mut p, 5_000).unwrap();
                    if s.take_error().unwrap().is_some() {
                        return;
                    }
                }
            }
        }
        panic!("ten closed ports in a row accepted a connection");
    }

    #[test]
    fn files_are_created_with_the_mask_given() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("netdev-umask-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (mask, mode) in [(0o177, 0o600), (0o133, 0o644)] {
            let p = dir.join(format!("{mask:o}"));
            with_umask(mask, || std::fs::File::create(&p)).unwrap();
            let got = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
            assert_eq!(got, mode, "mask {mask:o}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_monotonic_clock_moves_forward() {
        let a = monotonic_usec();
        std::thread::sleep(Duration::from_millis(2));
        assert!(monotonic_usec() >= a + 1_000);
    }

    #[test]
    fn this_process_has_a_descriptor_limit() {
        let (soft, hard) = nofile_limit(std::process::id()).unwrap();
        assert!(soft > 0 && soft <= hard);
    }
}
