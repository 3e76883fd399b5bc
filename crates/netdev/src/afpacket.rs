//! A raw `AF_PACKET` socket bound to one interface: TPACKET_V2
//! memory-mapped rings ([`crate::ring`], the default) or batched
//! `recvmmsg`/`sendmmsg` ([`Options::rings`] off).
//!
//! Several sockets on one interface can share its traffic through a
//! `PACKET_FANOUT` group ([`AfPacket::open_fanout`]): the kernel spreads
//! frames by a symmetric flow hash (both directions of a flow land on the
//! same member) and reassembles IP fragments first, so a flow stays in
//! order on one worker.
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
const PACKET_FANOUT: libc::c_int = 18;
const PACKET_FANOUT_HASH: u32 = 0;
const PACKET_FANOUT_FLAG_UNIQUEID: u32 = 0x2000;
const PACKET_FANOUT_FLAG_DEFRAG: u32 = 0x8000;
use crate::ring::{Rings, TP_STATUS_CSUMNOTREADY, TP_STATUS_VLAN_TPID_VALID, TP_STATUS_VLAN_VALID};

/// How to open an `AF_PACKET` port.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Memory-mapped TPACKET_V2 RX and TX rings (else recvmmsg/sendmmsg).
    pub rings: bool,
    /// RX ring slots (rounded down to a multiple of 32).
    pub rx_slots: usize,
    /// TX ring slots (rounded down to a multiple of 32).
    pub tx_slots: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            rings: true,
            rx_slots: 1024,
            tx_slots: 256,
        }
    }
}

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
    rings: Option<Rings>,
    /// Ring slots skipped since `take_rx_errors` last ran.
    rx_errors: u64,
    /// Frames longer than the buffers since `take_rx_truncated` last ran.
    rx_truncated: u64,
    /// Frames with unfinished checksums since `take_rx_csum_partial`.
    rx_csum_partial: u64,
    /// The largest frame received whole (from the MTU at open).
    max_frame: usize,
}

fn last_err(what: &str, name: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{name}: {what}: {e}"))
}

impl AfPacket {
    /// Opens a port on interface `name` with the default options.
    pub fn open(name: &str) -> io::Result<AfPacket> {
        AfPacket::open_with(name, Options::default())
    }

    /// Opens `n` sockets on interface `name` that share its frames through
    /// one `PACKET_FANOUT` group (hash mode, fragments reassembled first).
    /// The group id is chosen by the kernel (unique), so no other process's
    /// sockets can join by accident.
    pub fn open_fanout(name: &str, opts: Options, n: usize) -> io::Result<Vec<AfPacket>> {
        let mut socks = Vec::with_capacity(n);
        let mut id = 0u32;
        for i in 0..n.max(1) {
            let s = AfPacket::open_with(name, opts)?;
            if n > 1 {
                let mode = PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_DEFRAG;
                if i == 0 {
                    s.setsockopt(PACKET_FANOUT, &((mode | PACKET_FANOUT_FLAG_UNIQUEID) << 16))?;
                    let mut v = 0u32;
                    let mut len = size_of::<u32>() as libc::socklen_t;
                    // SAFETY: reading a u32 option into a live u32.
                    let r = unsafe {
                        libc::getsockopt(
                            s.fd,
                            libc::SOL_PACKET,
                            PACKET_FANOUT,
                            &mut v as *mut u32 as *mut libc::c_void,
                            &mut len,
                        )
                    };
                    if r < 0 {
                        return Err(last_err("getsockopt(PACKET_FANOUT)", name));
                    }
                    id = v & 0xffff;
                } else {
                    s.setsockopt(PACKET_FANOUT, &(id | (mode << 16)))?;
                }
            }
            socks.push(s);
        }
        Ok(socks)
    }

    /// Opens a port on interface `name`.
    pub fn open_with(name: &str, opts: Options) -> io::Result<AfPacket> {
        let ifindex = ifindex(name)?;
        // Protocol 0: the socket takes no frame until `bind` names the
        // interface and ETH_P_ALL. With ETH_P_ALL here it would take every
        // interface's frames into its ring until then (another port's
        // frames, received as this one's), and each ring setsockopt and
        // the bind would first unhook it, waiting for the network stack's
        // readers (synchronize_net).
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if fd < 0 {
            return Err(last_err("socket(AF_PACKET)", name));
        }
        let mut port = AfPacket {
            name: name.to_string(),
            fd,
            ifindex,
            hw: hw_addr(fd, name),
            rings: None,
            rx_errors: 0,
            rx_truncated: 0,
            rx_csum_partial: 0,
            max_frame: crate::frame_size_for_mtu(crate::mtu(name).unwrap_or(1500)),
        };
        if opts.rings {
            // Slots big enough for the MTU; as many as keep the ring's
            // memory what 2 KB slots would take.
            let slot = crate::ring::slot_size(port.max_frame);
            let scale = |n: usize| n * crate::ring::FRAME_SIZE / slot;
            port.rings = Some(
                Rings::new(fd, scale(opts.rx_slots), scale(opts.tx_slots), slot).map_err(|e| {
                    io::Error::new(e.kind(), format!("{name}: TPACKET_V2 rings: {e}"))
                })?,
            );
        }
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
        crate::os::setsockopt(self.fd, libc::SOL_PACKET, opt, v)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: setsockopt: {e}", self.name)))
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }
}

/// The index of interface `name` (an error naming it if there is none).
pub(crate) fn ifindex(name: &str) -> io::Result<i32> {
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
    Ok(ifindex)
}

/// Whether interface `name` is up (sysfs operstate; unknown counts as up).
pub(crate) fn operstate_up(name: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{name}/operstate"))
        .map(|s| s.trim() != "down")
        .unwrap_or(true)
}

/// The Ethernet address of interface `name`, asked through the ioctl of an
/// ordinary socket (`fd`, or a temporary one if `fd` is negative).
pub(crate) fn hw_addr(fd: libc::c_int, name: &str) -> [u8; 6] {
    if fd < 0 {
        // SAFETY: socket(2), checked, closed after use.
        let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if s < 0 {
            return [0; 6];
        }
        let hw = hw_addr(s, name);
        // SAFETY: closing the socket opened above.
        unsafe { libc::close(s) };
        return hw;
    }
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

/// A send error that means "not now" (the frames not taken are dropped
/// and counted by the caller): a full queue, a signal, the link or the
/// device gone, no buffer.
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAGAIN)
            | Some(libc::EINTR)
            | Some(libc::ENETDOWN)
            | Some(libc::ENXIO)
            | Some(libc::ENOBUFS)
    )
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

/// Copies the frames waiting in the RX ring into `batch`, putting back the
/// VLAN tag the kernel took off; slots the kernel described out of bounds
/// are skipped and added to `skipped`, frames longer than their slot or
/// the batch's buffers dropped and added to `truncated`; frames with an
/// unfinished checksum are taken and added to `partial`.
fn recv_ring(
    rings: &mut Rings,
    batch: &mut Batch,
    skipped: &mut u64,
    truncated: &mut u64,
    partial: &mut u64,
) -> usize {
    let (bufs, lens) = batch.slots();
    let mut n = 0;
    while n < bufs.len() {
        let b = &mut bufs[n];
        let got = rings.rx(|f| {
            let tag = if f.vlan.is_some() { 4 } else { 0 };
            if f.truncated || f.data.len() + tag > b.len() {
                return None;
            }
            *partial += u64::from(f.csum_partial);
            let len = f.data.len();
            Some(match f.vlan {
                Some((tpid, tci)) if len >= 12 => {
                    b[..12].copy_from_slice(&f.data[..12]);
                    b[12..14].copy_from_slice(&tpid.to_be_bytes());
                    b[14..16].copy_from_slice(&tci.to_be_bytes());
                    b[16..len + 4].copy_from_slice(&f.data[12..len]);
                    len + 4
                }
                _ => {
                    b[..len].copy_from_slice(&f.data[..len]);
                    len
                }
            })
        });
        match got {
            Some(Some(Some(len))) => lens[n] = len,
            Some(Some(None)) => {
                *truncated += 1;
                continue;
            }
            Some(None) => {
                *skipped += 1;
                continue;
            }
            None => break,
        }
        n += 1;
    }
    batch.set_len(n);
    n
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
        if let Some(rings) = &mut self.rings {
            return Ok(recv_ring(
                rings,
                batch,
                &mut self.rx_errors,
                &mut self.rx_truncated,
                &mut self.rx_csum_partial,
            ));
        }
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
        let r = crate::recvmmsg(self.fd, &mut msgs[..n], &self.name)?;
        // Frames longer than the buffer come truncated (MSG_TRUNC): dropped
        // and counted; the others are moved down over them.
        let mut kept = 0;
        for i in 0..r {
            if msgs[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                self.rx_truncated += 1;
                continue;
            }
            let mut len = (msgs[i].msg_len as usize).min(bufs[i].len() - 4);
            if let Some(aux) = auxdata(&msgs[i].msg_hdr) {
                self.rx_csum_partial += u64::from(aux.tp_status & TP_STATUS_CSUMNOTREADY != 0);
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
            bufs.swap(kept, i);
            lens[kept] = len;
            kept += 1;
        }
        batch.set_len(kept);
        Ok(kept)
    }

    /// With rings: whether the next RX slot holds a frame.
    fn rx_ready(&self) -> bool {
        self.rings.as_ref().is_none_or(Rings::rx_ready)
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        if let Some(rings) = self.rings.as_mut().filter(|r| r.has_tx()) {
            let mark = rings.tx_mark();
            let mut n = 0;
            for f in frames {
                if !rings.tx_put(f) {
                    break;
                }
                n += 1;
            }
            if n == 0 {
                return Ok(0);
            }
            // SAFETY: send(2) with no data kicks the TX ring.
            let r = unsafe { libc::send(self.fd, std::ptr::null(), 0, libc::MSG_DONTWAIT) };
            let e = (r < 0).then(io::Error::last_os_error);
            // What the kick did not send is taken back now, whatever it
            // returned: frames are dropped (and counted by the caller),
            // never sent late by a later kick.
            let taken = rings.tx_reclaim(mark, n);
            if let Some(e) = e {
                if taken == 0 && !is_transient(&e) {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{}: send: {e}", self.name),
                    ));
                }
            }
            return Ok(taken);
        }
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
                return if is_transient(&e) {
                    Ok(sent)
                } else {
                    Err(io::Error::new(
                        e.kind(),
                        format!("{}: sendmmsg: {e}", self.name),
                    ))
                };
            }
            sent += r as usize;
            if (r as usize) < chunk.len() {
                break;
            }
        }
        Ok(sent)
    }

    fn take_rx_errors(&mut self) -> u64 {
        std::mem::take(&mut self.rx_errors)
    }

    fn take_rx_truncated(&mut self) -> u64 {
        std::mem::take(&mut self.rx_truncated)
    }

    fn take_rx_csum_partial(&mut self) -> u64 {
        std::mem::take(&mut self.rx_csum_partial)
    }

    fn max_frame(&self) -> usize {
        self.max_frame
    }

    fn fd(&self) -> Option<i32> {
        Some(self.fd)
    }

    fn link_up(&self) -> bool {
        operstate_up(&self.name)
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.hw
    }
}
