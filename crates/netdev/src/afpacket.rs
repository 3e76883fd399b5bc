//! A raw `AF_PACKET` socket bound to one interface, with batched
//! `recvmmsg`/`sendmmsg`.
//!
//! Set-up: promiscuous membership (a switch port sees every frame),
//! `PACKET_IGNORE_OUTGOING` (the port does not see what it sends itself) and
//! `PACKET_QDISC_BYPASS` (frames skip the qdisc layer, as a switch port
//! should), and `PACKET_AUXDATA`: Linux always moves a received frame's
//! outer VLAN tag into packet metadata, so the tag is put back into the frame
//! from the auxiliary data (as libpcap does); a switch must see it. Offloads
//! must be off on the interface (the demo and tests turn
//! off TSO/GSO/GRO and checksum offload): with them on, the kernel hands out
//! 64 KB super-frames with unfinished checksums.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed};

use crate::{Batch, Port};

const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

/// `struct tpacket_auxdata`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct AuxData {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
}

/// Room for one cmsg carrying `AuxData` (aligned as the kernel wants).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct CmsgBuf([u8; 64]);

/// An `AF_PACKET` port.
pub struct AfPacket {
    name: String,
    fd: libc::c_int,
    ifindex: i32,
    hw: [u8; 6],
}

fn last_err(what: &str, name: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{name}: {what}: {e}"))
}

impl AfPacket {
    /// Opens a port on interface `name`.
    pub fn open(name: &str) -> io::Result<AfPacket> {
        let cname = CString::new(name)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL"))?;
        // SAFETY: if_nametoindex reads a valid NUL-terminated string.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
        if ifindex == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{name}: no such interface"),
            ));
        }
        let proto = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                proto,
            )
        };
        if fd < 0 {
            return Err(last_err("socket(AF_PACKET)", name));
        }
        let port = AfPacket {
            name: name.to_string(),
            fd,
            ifindex,
            hw: hw_addr(fd, name),
        };
        // SAFETY: sockaddr_ll is plain data; zeroed is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
        sll.sll_ifindex = ifindex;
        // SAFETY: binding a socket we own to a correctly sized sockaddr_ll.
        let r = unsafe {
            libc::bind(
                fd,
                &sll as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(last_err("bind", name));
        }
        // SAFETY: packet_mreq is plain data.
        let mut mr: libc::packet_mreq = unsafe { zeroed() };
        mr.mr_ifindex = ifindex;
        mr.mr_type = libc::PACKET_MR_PROMISC as u16;
        port.setsockopt(libc::PACKET_ADD_MEMBERSHIP, &mr)?;
        let one: libc::c_int = 1;
        port.setsockopt(PACKET_IGNORE_OUTGOING, &one)?;
        port.setsockopt(libc::PACKET_AUXDATA, &one)?;
        // Older kernels lack qdisc bypass; it is an optimisation, not a need.
        let _ = port.setsockopt(PACKET_QDISC_BYPASS, &one);
        Ok(port)
    }

    fn setsockopt<T>(&self, opt: libc::c_int, v: &T) -> io::Result<()> {
        // SAFETY: `v` points to a live T of the size passed.
        let r = unsafe {
            libc::setsockopt(
                self.fd,
                libc::SOL_PACKET,
                opt,
                v as *const T as *const libc::c_void,
                size_of::<T>() as u32,
            )
        };
        if r < 0 {
            Err(last_err("setsockopt", &self.name))
        } else {
            Ok(())
        }
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
}

fn hw_addr(fd: libc::c_int, name: &str) -> [u8; 6] {
    // SAFETY: ifreq is plain data; the name is copied in bounds (at most 15 bytes).
    unsafe {
        let mut ifr: libc::ifreq = zeroed();
        for (i, b) in name.bytes().take(libc::IFNAMSIZ - 1).enumerate() {
            ifr.ifr_name[i] = b as libc::c_char;
        }
        if libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut ifr) < 0 {
            return [0; 6];
        }
        let sa = ifr.ifr_ifru.ifru_hwaddr.sa_data;
        [
            sa[0] as u8,
            sa[1] as u8,
            sa[2] as u8,
            sa[3] as u8,
            sa[4] as u8,
            sa[5] as u8,
        ]
    }
}

/// The PACKET_AUXDATA control message of a received message, if any.
fn auxdata(h: &libc::msghdr) -> Option<AuxData> {
    // SAFETY: the CMSG_* helpers walk the control buffer the kernel filled,
    // within msg_controllen; the payload is copied out unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == libc::PACKET_AUXDATA {
                let p = libc::CMSG_DATA(c) as *const AuxData;
                return Some(std::ptr::read_unaligned(p));
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

impl Drop for AfPacket {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this value owns, once.
        unsafe { libc::close(self.fd) };
    }
}

impl Port for AfPacket {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let (bufs, lens) = batch.slots();
        let n = bufs.len().min(64);
        // SAFETY: iovec/mmsghdr/cmsg buffers are plain data; each iovec points
        // into a distinct buffer we own (4 bytes short of its end, to leave
        // room for a VLAN tag), valid for the duration of the call.
        let mut iov: [libc::iovec; 64] = unsafe { zeroed() };
        let mut msgs: [libc::mmsghdr; 64] = unsafe { zeroed() };
        let mut cmsg = [CmsgBuf([0; 64]); 64];
        for i in 0..n {
            iov[i] = libc::iovec {
                iov_base: bufs[i].as_mut_ptr() as *mut libc::c_void,
                iov_len: bufs[i].len() - 4,
            };
            msgs[i].msg_hdr.msg_iov = &mut iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
            msgs[i].msg_hdr.msg_control = cmsg[i].0.as_mut_ptr() as *mut libc::c_void;
            msgs[i].msg_hdr.msg_controllen = cmsg[i].0.len();
        }
        // SAFETY: msgs[..n] are initialised above and outlive the call.
        let r = unsafe {
            libc::recvmmsg(
                self.fd,
                msgs.as_mut_ptr(),
                n as u32,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            batch.set_len(0);
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                // The interface went down under us: nothing to receive.
                _ if e.raw_os_error() == Some(libc::ENETDOWN) => Ok(0),
                _ => Err(io::Error::new(
                    e.kind(),
                    format!("{}: recvmmsg: {e}", self.name),
                )),
            };
        }
        let r = r as usize;
        for i in 0..r {
            // Frames longer than the buffer are truncated by the kernel (MSG_TRUNC).
            let mut len = (msgs[i].msg_len as usize).min(bufs[i].len() - 4);
            if let Some(aux) = auxdata(&msgs[i].msg_hdr) {
                if aux.tp_status & TP_STATUS_VLAN_VALID != 0 && len >= 12 {
                    let tpid = if aux.tp_status & TP_STATUS_VLAN_TPID_VALID != 0 {
                        aux.tp_vlan_tpid
                    } else {
                        0x8100
                    };
                    let b = &mut bufs[i];
                    b.copy_within(12..len, 16);
                    b[12..14].copy_from_slice(&tpid.to_be_bytes());
                    b[14..16].copy_from_slice(&aux.tp_vlan_tci.to_be_bytes());
                    len += 4;
                }
            }
            lens[i] = len;
        }
        batch.set_len(r);
        Ok(r)
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let mut sent = 0;
        for chunk in frames.chunks(64) {
            // SAFETY: as in recv; the kernel only reads the frames.
            let mut iov: [libc::iovec; 64] = unsafe { zeroed() };
            let mut msgs: [libc::mmsghdr; 64] = unsafe { zeroed() };
            for (i, f) in chunk.iter().enumerate() {
                iov[i] = libc::iovec {
                    iov_base: f.as_ptr() as *mut libc::c_void,
                    iov_len: f.len(),
                };
                msgs[i].msg_hdr.msg_iov = &mut iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
            }
            // SAFETY: msgs[..chunk.len()] are initialised and outlive the call.
            let r = unsafe {
                libc::sendmmsg(
                    self.fd,
                    msgs.as_mut_ptr(),
                    chunk.len() as u32,
                    libc::MSG_DONTWAIT,
                )
            };
            if r < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(sent),
                    _ if matches!(
                        e.raw_os_error(),
                        Some(libc::ENETDOWN) | Some(libc::ENXIO) | Some(libc::ENOBUFS)
                    ) =>
                    {
                        Ok(sent)
                    }
                    _ => Err(io::Error::new(
                        e.kind(),
                        format!("{}: sendmmsg: {e}", self.name),
                    )),
                };
            }
            sent += r as usize;
            if (r as usize) < chunk.len() {
                break;
            }
        }
        Ok(sent)
    }

    fn fd(&self) -> Option<i32> {
        Some(self.fd)
    }

    fn link_up(&self) -> bool {
        let path = format!("/sys/class/net/{}/operstate", self.name);
        std::fs::read_to_string(path)
            .map(|s| s.trim() != "down")
            .unwrap_or(true)
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.hw
    }
}
