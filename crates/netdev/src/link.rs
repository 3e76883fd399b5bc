//! Link state from the kernel, as events: a `NETLINK_ROUTE` socket
//! subscribed to link changes (`RTMGRP_LINK`). Each RTM_NEWLINK/RTM_DELLINK
//! message says which interface changed and its operational state, so the
//! switch learns of a link going down as it happens instead of by polling.

use std::io;
use std::mem::{size_of, zeroed};

const RTMGRP_LINK: u32 = 1;
const RTM_NEWLINK: u16 = 16;
const RTM_DELLINK: u16 = 17;
const IFLA_IFNAME: u16 = 3;
const IFLA_MTU: u16 = 4;
const IFLA_OPERSTATE: u16 = 16;
const IF_OPER_UP: u8 = 6;
const IF_OPER_UNKNOWN: u8 = 0;

/// `SIOCETHTOOL` commands: read generic receive offload, read the device
/// flags (large receive offload is one).
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_GFLAGS: u32 = 0x25;
const ETH_FLAG_LRO: u32 = 1 << 15;

/// The receive offloads on interface `name` that make the kernel hand a
/// packet socket frames merged past the MTU (which sluice drops, counted
/// as truncated): `"gro"`, `"lro"`. Empty when none is on or they cannot
/// be read.
pub fn merging_offloads(name: &str) -> Vec<&'static str> {
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    // SAFETY: a datagram socket only used for the ioctl; checked, closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 || name.len() >= libc::IFNAMSIZ {
        if fd >= 0 {
            // SAFETY: closing the socket made above.
            unsafe { libc::close(fd) };
        }
        return Vec::new();
    }
    let get = |cmd: u32| -> Option<u32> {
        let mut v = EthtoolValue { cmd, data: 0 };
        // SAFETY: ifreq is plain data; the name fits (checked above) and
        // ifr_data points to `v`, alive for the call.
        let r = unsafe {
            let mut ifr: libc::ifreq = zeroed();
            for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
                *d = s as libc::c_char;
            }
            ifr.ifr_ifru.ifru_data = &mut v as *mut EthtoolValue as *mut libc::c_char;
            libc::ioctl(fd, libc::SIOCETHTOOL, &mut ifr)
        };
        (r >= 0).then_some(v.data)
    };
    let mut on = Vec::new();
    if get(ETHTOOL_GGRO).is_some_and(|v| v != 0) {
        on.push("gro");
    }
    if get(ETHTOOL_GFLAGS).is_some_and(|v| v & ETH_FLAG_LRO != 0) {
        on.push("lro");
    }
    // SAFETY: closing the socket made above, once.
    unsafe { libc::close(fd) };
    on
}

/// A subscription to link changes.
pub struct LinkWatcher {
    fd: libc::c_int,
    buf: Vec<u8>,
}

/// One interface's new state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkChange {
    pub name: String,
    pub up: bool,
    /// The interface was deleted (RTM_DELLINK).
    pub deleted: bool,
    /// Its index (a re-created interface has a new one; 0 if unknown).
    pub ifindex: u32,
    /// Its MTU (0 if the message did not say).
    pub mtu: u32,
}

/// The index of interface `name` in this network namespace (None: no such
/// interface).
pub fn ifindex(name: &str) -> Option<u32> {
    let c = std::ffi::CString::new(name).ok()?;
    // SAFETY: a NUL-terminated string we own, for the duration of the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

impl LinkWatcher {
    /// Subscribes to link changes in the current network namespace.
    pub fn open() -> io::Result<LinkWatcher> {
        // SAFETY: socket(2); checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let w = LinkWatcher {
            fd,
            buf: vec![0; 32 * 1024],
        };
        // SAFETY: sockaddr_nl is plain data; bind with its exact size.
        let r = unsafe {
            let mut sa: libc::sockaddr_nl = zeroed();
            sa.nl_family = libc::AF_NETLINK as u16;
            sa.nl_groups = RTMGRP_LINK;
            libc::bind(
                fd,
                &sa as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(w)
    }

    /// The descriptor, to poll for readability.
    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// Waits up to `timeout_ms` for changes to arrive.
    pub fn wait(&self, timeout_ms: i32) {
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    }

    /// Every change queued since the last call (never blocks).
    pub fn changes(&mut self) -> Vec<LinkChange> {
        let mut out = Vec::new();
        loop {
            // SAFETY: receiving into a buffer we own, within its length.
            let n = unsafe {
                libc::recv(
                    self.fd,
                    self.buf.as_mut_ptr() as *mut libc::c_void,
                    self.buf.len(),
                    0,
                )
            };
            if n <= 0 {
                return out;
            }
            parse(&self.buf[..n as usize], &mut out);
        }
    }
}

/// Parses a netlink datagram of link messages. Malformed input ends parsing.
fn parse(mut b: &[u8], out: &mut Vec<LinkChange>) {
    let u16_at = |b: &[u8], i: usize| b.get(i..i + 2).map(|x| u16::from_ne_bytes([x[0], x[1]]));
    let u32_at = |b: &[u8], i: usize| {
        b.get(i..i + 4)
            .map(|x| u32::from_ne_bytes([x[0], x[1], x[2], x[3]]))
    };
    while let (Some(len), Some(ty)) = (u32_at(b, 0), u16_at(b, 4)) {
        let len = len as usize;
        if len < 16 || len > b.len() {
            return;
        }
        let msg = &b[16..len];
        if (ty == RTM_NEWLINK || ty == RTM_DELLINK) && msg.len() >= 16 {
            let ifindex = u32_at(msg, 4).unwrap_or(0);
            let flags = u32_at(msg, 8).unwrap_or(0);
            let mut name = None;
            let mut oper = None;
            let mut mtu = 0;
            let mut a = &msg[16..];
            while let (Some(alen), Some(aty)) = (u16_at(a, 0), u16_at(a, 2)) {
                let alen = alen as usize;
                if alen < 4 || alen > a.len() {
                    break;
                }
                let data = &a[4..alen];
                match aty {
                    IFLA_IFNAME => {
                        name = Some(
                            String::from_utf8_lossy(data.split(|&c| c == 0).next().unwrap_or(&[]))
                                .into_owned(),
                        )
                    }
                    IFLA_OPERSTATE => oper = data.first().copied(),
                    IFLA_MTU => mtu = u32_at(data, 0).unwrap_or(0),
                    _ => {}
                }
                a = &a[align4(alen).min(a.len())..];
            }
            if let Some(name) = name {
                let running = flags & libc::IFF_RUNNING as u32 != 0;
                let up = ty == RTM_NEWLINK
                    && match oper {
                        Some(IF_OPER_UP) => true,
                        Some(IF_OPER_UNKNOWN) | None => running,
                        Some(_) => false,
                    };
                out.push(LinkChange {
                    name,
                    up,
                    deleted: ty == RTM_DELLINK,
                    ifindex,
                    mtu,
                });
            }
        }
        b = &b[align4(len).min(b.len())..];
    }
}

impl Drop for LinkWatcher {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value owns, once.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(ty: u16, name: &str, oper: u8) -> Vec<u8> {
        let mut attrs = Vec::new();
        let n = name.len() + 1;
        attrs.extend_from_slice(&((4 + n) as u16).to_ne_bytes());
        attrs.extend_from_slice(&IFLA_IFNAME.to_ne_bytes());
        attrs.extend_from_slice(name.as_bytes());
        attrs.push(0);
        attrs.resize(align4(attrs.len()), 0);
        attrs.extend_from_slice(&5u16.to_ne_bytes());
        attrs.extend_from_slice(&IFLA_OPERSTATE.to_ne_bytes());
        attrs.push(oper);
        attrs.resize(align4(attrs.len()), 0);
        let mut m = vec![0u8; 16];
        m.extend_from_slice(&[0u8; 16]);
        m[20..24].copy_from_slice(&(name.len() as u32).to_ne_bytes());
        m.extend_from_slice(&attrs);
        let len = m.len() as u32;
        m[0..4].copy_from_slice(&len.to_ne_bytes());
        m[4..6].copy_from_slice(&ty.to_ne_bytes());
        m
    }

    #[test]
    fn parses_link_messages_and_survives_garbage() {
        let mut d = msg(RTM_NEWLINK, "p1", IF_OPER_UP);
        d.extend(msg(RTM_NEWLINK, "p2", 2));
        d.extend(msg(RTM_DELLINK, "p3", IF_OPER_UP));
        let mut out = Vec::new();
        parse(&d, &mut out);
        assert_eq!(
            out,
            vec![
                LinkChange {
                    name: "p1".into(),
                    up: true,
                    deleted: false,
                    ifindex: 2,
                    mtu: 0,
                },
                LinkChange {
                    name: "p2".into(),
                    up: false,
                    deleted: false,
                    ifindex: 2,
                    mtu: 0,
                },
                LinkChange {
                    name: "p3".into(),
                    up: false,
                    deleted: true,
                    ifindex: 2,
                    mtu: 0,
                },
            ]
        );
        for cut in 0..d.len() {
            let mut o = Vec::new();
            parse(&d[..cut], &mut o);
            let mut junk = d.clone();
            junk[cut] ^= 0xff;
            parse(&junk, &mut o);
        }
    }
}
