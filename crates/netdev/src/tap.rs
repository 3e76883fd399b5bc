//! A TAP device as a port: frames written to it enter the host's network
//! stack as if received on that interface, and what the host sends out of
//! it is received here. sluice uses one per bridge as the OpenFlow LOCAL
//! port, named after the bridge, as Open vSwitch does.

use std::ffi::CString;
use std::io;
use std::mem::zeroed;

use crate::{Batch, Port};

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_MULTI_QUEUE: libc::c_short = 0x0100;

/// A TAP port.
pub struct Tap {
    name: String,
    fd: libc::c_int,
    hw: [u8; 6],
}

fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain data; the name is copied in bounds.
    let mut ifr: libc::ifreq = unsafe { zeroed() };
    for (i, b) in name.bytes().take(libc::IFNAMSIZ - 1).enumerate() {
        ifr.ifr_name[i] = b as libc::c_char;
    }
    ifr
}

impl Tap {
    /// Creates (or attaches to) the TAP device `name` and brings it up.
    pub fn create(name: &str) -> io::Result<Tap> {
        Tap::open(name, false)
    }

    /// Creates the TAP device `name` with `n` queues, one per worker: the
    /// kernel spreads what the host sends over them by flow.
    pub fn create_queues(name: &str, n: usize) -> io::Result<Vec<Tap>> {
        if n <= 1 {
            return Ok(vec![Tap::create(name)?]);
        }
        (0..n).map(|_| Tap::open(name, true)).collect()
    }

    fn open(name: &str, multi_queue: bool) -> io::Result<Tap> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?}: not a usable interface name"),
            ));
        }
        let path = CString::new("/dev/net/tun").expect("no NUL");
        // SAFETY: open(2) with a valid path; the result is checked.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("{name}: /dev/net/tun: {e}"),
            ));
        }
        let mut tap = Tap {
            name: name.to_string(),
            fd,
            hw: [0; 6],
        };
        let mut ifr = ifreq(name);
        ifr.ifr_ifru.ifru_flags =
            IFF_TAP | IFF_NO_PI | if multi_queue { IFF_MULTI_QUEUE } else { 0 };
        // SAFETY: TUNSETIFF takes a pointer to a live ifreq.
        if unsafe { libc::ioctl(fd, TUNSETIFF as _, &mut ifr) } < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("{name}: TUNSETIFF: {e}")));
        }
        // Bring it up, and read its MAC, through an ordinary socket.
        // SAFETY: socket(2); checked; closed below.
        let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if s < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ifr = ifreq(name);
        // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS/SIOCGIFHWADDR take a live ifreq.
        let r = unsafe {
            let mut r = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut ifr);
            if r >= 0 {
                ifr.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
                r = libc::ioctl(s, libc::SIOCSIFFLAGS, &mut ifr);
            }
            let mut hw = ifreq(name);
            if libc::ioctl(s, libc::SIOCGIFHWADDR, &mut hw) >= 0 {
                let d = hw.ifr_ifru.ifru_hwaddr.sa_data;
                tap.hw = [
                    d[0] as u8, d[1] as u8, d[2] as u8, d[3] as u8, d[4] as u8, d[5] as u8,
                ];
            }
            libc::close(s);
            r
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("{name}: set up: {e}")));
        }
        Ok(tap)
    }
}

impl Drop for Tap {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value owns, once (the device goes with it).
        unsafe { libc::close(self.fd) };
    }
}

impl Port for Tap {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let (bufs, lens) = batch.slots();
        let mut n = 0;
        while n < bufs.len() {
            // SAFETY: reading into a buffer we own, within its length.
            let r = unsafe {
                libc::read(
                    self.fd,
                    bufs[n].as_mut_ptr() as *mut libc::c_void,
                    bufs[n].len(),
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                if n == 0
                    && !matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    )
                {
                    batch.set_len(0);
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{}: read: {e}", self.name),
                    ));
                }
                break;
            }
            lens[n] = r as usize;
            n += 1;
        }
        batch.set_len(n);
        Ok(n)
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let mut sent = 0;
        for f in frames {
            // SAFETY: writing from a live slice, within its length.
            let r = unsafe { libc::write(self.fd, f.as_ptr() as *const libc::c_void, f.len()) };
            if r < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(sent),
                    // Nobody has the interface up: frames are simply not taken.
                    _ if matches!(e.raw_os_error(), Some(libc::EIO) | Some(libc::ENETDOWN)) => {
                        Ok(sent)
                    }
                    _ => Err(io::Error::new(
                        e.kind(),
                        format!("{}: write: {e}", self.name),
                    )),
                };
            }
            sent += 1;
        }
        Ok(sent)
    }

    fn fd(&self) -> Option<i32> {
        Some(self.fd)
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.hw
    }
}
