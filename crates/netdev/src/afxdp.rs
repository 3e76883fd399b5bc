//! An `AF_XDP` port: the interface's XDP program ([`crate::xdp`]) hands
//! every received frame to a socket whose rings live in memory shared with
//! the kernel (the UMEM), bypassing the kernel stack.
//!
//! One socket per receive queue of the interface (a queue without a socket
//! would pass its frames to the kernel stack, away from the switch);
//! [`AfXdp::open_queues`] deals the queues out to the workers, each of which
//! owns its queues end to end (as with a fanout group) and sends through the
//! socket of its first queue. veth devices get one receive queue per CPU by
//! default. Zero-copy where the driver
//! supports it, copy mode otherwise (veth has no zero-copy); the program
//! runs natively where the driver can, generic otherwise.
//!
//! The UMEM of each socket is split in two: frames for receiving circulate
//! between the fill ring, the RX ring and back; frames for sending go from a
//! free list to the TX ring and come back through the completion ring.
//! Received frames are copied into the caller's [`Batch`] (the pipeline
//! edits and grows frames in place), which is what hands their UMEM frames
//! straight back to the fill ring.
//!
//! Rings are single-producer/single-consumer with the kernel: the producer
//! index is published with Release after the descriptors are written, and
//! read with Acquire before they are read.

use std::io;
use std::mem::size_of;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::xdp::{XdpMode, XdpProgram};
use crate::{Batch, Port};

const SOL_XDP: libc::c_int = 283;
const XDP_MMAP_OFFSETS: libc::c_int = 1;
const XDP_RX_RING: libc::c_int = 2;
const XDP_TX_RING: libc::c_int = 3;
const XDP_UMEM_REG: libc::c_int = 4;
const XDP_UMEM_FILL_RING: libc::c_int = 5;
const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
const XDP_PGOFF_RX_RING: i64 = 0;
const XDP_PGOFF_TX_RING: i64 = 0x8000_0000;
const XDP_UMEM_PGOFF_FILL_RING: i64 = 0x1_0000_0000;
const XDP_UMEM_PGOFF_COMPLETION_RING: i64 = 0x1_8000_0000;
const XDP_COPY: u16 = 1 << 1;
const XDP_ZEROCOPY: u16 = 1 << 2;
const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;
const XDP_RING_NEED_WAKEUP: u32 = 1;

/// UMEM frame size (a frame plus the kernel's 256-byte headroom).
const FRAME: u64 = 2048;
/// Frames (and ring entries) for receiving and for sending.
const RX_FRAMES: u32 = 512;
const TX_FRAMES: u32 = 512;

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct RingOffset {
    producer: u64,
    consumer: u64,
    desc: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct MmapOffsets {
    rx: RingOffset,
    tx: RingOffset,
    fr: RingOffset,
    cr: RingOffset,
}

#[repr(C)]
struct UmemReg {
    addr: u64,
    len: u64,
    chunk_size: u32,
    headroom: u32,
    flags: u32,
    tx_metadata_len: u32,
}

/// `struct xdp_desc`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Desc {
    addr: u64,
    len: u32,
    options: u32,
}

#[repr(C)]
struct SockaddrXdp {
    family: u16,
    flags: u16,
    ifindex: u32,
    queue_id: u32,
    shared_umem_fd: u32,
}

/// One mapped ring of `T` descriptors.
struct Ring<T> {
    map: *mut u8,
    map_len: usize,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    desc: *mut T,
    mask: u32,
    /// Our copy of the index we own (the producer's or the consumer's).
    cached: u32,
}

impl<T> Ring<T> {
    fn map(fd: i32, off: &RingOffset, entries: u32, pgoff: i64) -> io::Result<Ring<T>> {
        let len = off.desc as usize + entries as usize * size_of::<T>();
        // SAFETY: mapping a ring of the socket at the offset the kernel
        // documents; checked; unmapped in Drop.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = map as *mut u8;
        // SAFETY: the offsets come from the kernel and lie inside the mapping.
        unsafe {
            Ok(Ring {
                map,
                map_len: len,
                producer: map.add(off.producer as usize) as *const AtomicU32,
                consumer: map.add(off.consumer as usize) as *const AtomicU32,
                flags: map.add(off.flags as usize) as *const AtomicU32,
                desc: map.add(off.desc as usize) as *mut T,
                mask: entries - 1,
                cached: 0,
            })
        }
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into the mapping, which lives as long as self.
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as above.
        unsafe { &*self.consumer }
    }

    fn needs_wakeup(&self) -> bool {
        // SAFETY: as above.
        unsafe { &*self.flags }.load(Ordering::Relaxed) & XDP_RING_NEED_WAKEUP != 0
    }

    fn slot(&self, i: u32) -> *mut T {
        // SAFETY: masked index within the ring's entries.
        unsafe { self.desc.add((i & self.mask) as usize) }
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what map() mapped.
        unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
    }
}

/// An `AF_XDP` port as one worker sees it: the sockets of its receive
/// queues.
pub struct AfXdp {
    name: String,
    hw: [u8; 6],
    socks: Vec<Socket>,
    /// The interface's program; the last port handle dropped detaches it.
    program: Arc<XdpProgram>,
}

/// An `AF_XDP` socket on one receive queue of an interface.
struct Socket {
    name: String,
    fd: i32,
    umem: *mut u8,
    umem_len: usize,
    rx: Ring<Desc>,
    tx: Ring<Desc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    free_tx: Vec<u64>,
    /// Per TX frame: whether the kernel has it (on the TX ring, not yet
    /// back through the completion ring). A completion for a frame the
    /// kernel does not have is ignored, so a bad address can never make
    /// two descriptors share a frame or point outside the UMEM.
    tx_out: Vec<bool>,
    /// Descriptors skipped since `take_rx_errors` last ran.
    rx_errors: u64,
    zero_copy: bool,
}

/// What one kick of the TX ring did.
#[derive(Debug, PartialEq)]
enum Kick {
    /// The kernel sent what it could (or had nothing to do).
    Sent,
    /// The kernel could not take a frame now (device queue busy, no
    /// buffer, its batch limit reached): try again later.
    Again,
    /// The kernel took a frame and dropped it (`EBUSY`: the device is not
    /// running or has no carrier): the frame is gone, the rest waits.
    Dropped,
    /// The interface is down or gone (`ENETDOWN`, `ENXIO`): the kernel did
    /// not look at the ring.
    Down,
}

// SAFETY: the UMEM and ring mappings belong to this value alone and are
// used by the one thread that owns it (the kernel being the other party).
unsafe impl Send for Socket {}

fn err(name: &str, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{name}: AF_XDP: {what}: {e}"))
}

fn sockopt<T>(fd: i32, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a live T of the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            SOL_XDP,
            opt,
            v as *const T as *const libc::c_void,
            size_of::<T>() as u32,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Receive queues of interface `name` (from sysfs; 1 if unknown).
pub fn rx_queues(name: &str) -> u32 {
    std::fs::read_dir(format!("/sys/class/net/{name}/queues"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(1)
        .max(1)
}

impl AfXdp {
    /// Opens a socket on every receive queue of interface `name`, deals
    /// them out to `n` workers (queue q to worker q mod n) and attaches the
    /// redirect program (native if possible, unless `generic_only`). Fails,
    /// with the reason, where AF_XDP cannot run: the caller falls back to
    /// AF_PACKET.
    pub fn open_queues(name: &str, n: usize, generic_only: bool) -> io::Result<Vec<AfXdp>> {
        let n = n.max(1);
        let queues = rx_queues(name);
        if (n as u32) > queues {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{name}: AF_XDP: {n} workers need {n} receive queues, the interface has {queues}"
                ),
            ));
        }
        // Frames live in 2 KB UMEM chunks (no multi-buffer): a jumbo MTU
        // is AF_PACKET's to serve.
        let mtu = crate::mtu(name).unwrap_or(1500);
        if crate::frame_size_for_mtu(mtu) > FRAME as usize {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{name}: AF_XDP: MTU {mtu} does not fit sluice's 2 KB AF_XDP frames"),
            ));
        }
        let ifindex = crate::afpacket::ifindex(name)?;
        let program = Arc::new(
            XdpProgram::attach(ifindex, queues, generic_only).map_err(|e| err(name, "XDP", e))?,
        );
        let hw = crate::afpacket::hw_addr(-1, name);
        let mut ports: Vec<AfXdp> = (0..n)
            .map(|_| AfXdp {
                name: name.to_string(),
                hw,
                socks: Vec::new(),
                program: program.clone(),
            })
            .collect();
        for q in 0..queues {
            let s = Socket::open(name, ifindex, q)?;
            program
                .set_socket(q, s.fd)
                .map_err(|e| err(name, "map", e))?;
            ports[q as usize % n].socks.push(s);
        }
        Ok(ports)
    }

    /// The interface's XDP program (shared by its handles).
    pub fn program(&self) -> &Arc<XdpProgram> {
        &self.program
    }

    /// Whether the XDP program runs in the driver.
    pub fn native(&self) -> bool {
        self.program.mode == XdpMode::Native
    }

    /// Whether the sockets run zero-copy (else the kernel copies frames).
    pub fn zero_copy(&self) -> bool {
        self.socks.iter().all(|s| s.zero_copy)
    }
}

impl Socket {
    fn open(name: &str, ifindex: i32, queue: u32) -> io::Result<Socket> {
        // SAFETY: socket(2); checked; owned by the AfXdp built below, or
        // closed on the error paths through `guard`.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(err(name, "socket", io::Error::last_os_error()));
        }
        struct Guard(i32);
        impl Drop for Guard {
            fn drop(&mut self) {
                if self.0 >= 0 {
                    // SAFETY: closing the descriptor opened above, once.
                    unsafe { libc::close(self.0) };
                }
            }
        }
        let mut guard = Guard(fd);
        let frames = (RX_FRAMES + TX_FRAMES) as u64;
        let umem_len = (frames * FRAME) as usize;
        // SAFETY: an anonymous private mapping; checked.
        let umem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                umem_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if umem == libc::MAP_FAILED {
            return Err(err(name, "UMEM", io::Error::last_os_error()));
        }
        struct Umem(*mut libc::c_void, usize);
        impl Drop for Umem {
            fn drop(&mut self) {
                if !self.0.is_null() {
                    // SAFETY: unmapping the UMEM mapped above.
                    unsafe { libc::munmap(self.0, self.1) };
                }
            }
        }
        let mut umem_guard = Umem(umem, umem_len);
        let reg = UmemReg {
            addr: umem as u64,
            len: umem_len as u64,
            chunk_size: FRAME as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        sockopt(fd, XDP_UMEM_REG, &reg).map_err(|e| err(name, "UMEM registration", e))?;
        sockopt(fd, XDP_UMEM_FILL_RING, &RX_FRAMES).map_err(|e| err(name, "fill ring", e))?;
        sockopt(fd, XDP_UMEM_COMPLETION_RING, &TX_FRAMES)
            .map_err(|e| err(name, "completion ring", e))?;
        sockopt(fd, XDP_RX_RING, &RX_FRAMES).map_err(|e| err(name, "RX ring", e))?;
        sockopt(fd, XDP_TX_RING, &TX_FRAMES).map_err(|e| err(name, "TX ring", e))?;
        let mut off = MmapOffsets::default();
        let mut len = size_of::<MmapOffsets>() as libc::socklen_t;
        // SAFETY: reading the ring offsets into a live struct of that size.
        let r = unsafe {
            libc::getsockopt(
                fd,
                SOL_XDP,
                XDP_MMAP_OFFSETS,
                &mut off as *mut MmapOffsets as *mut libc::c_void,
                &mut len,
            )
        };
        if r < 0 {
            return Err(err(name, "ring offsets", io::Error::last_os_error()));
        }
        let rx = Ring::<Desc>::map(fd, &off.rx, RX_FRAMES, XDP_PGOFF_RX_RING)
            .map_err(|e| err(name, "mmap RX", e))?;
        let tx = Ring::<Desc>::map(fd, &off.tx, TX_FRAMES, XDP_PGOFF_TX_RING)
            .map_err(|e| err(name, "mmap TX", e))?;
        let mut fill = Ring::<u64>::map(fd, &off.fr, RX_FRAMES, XDP_UMEM_PGOFF_FILL_RING)
            .map_err(|e| err(name, "mmap fill", e))?;
        let comp = Ring::<u64>::map(fd, &off.cr, TX_FRAMES, XDP_UMEM_PGOFF_COMPLETION_RING)
            .map_err(|e| err(name, "mmap completion", e))?;
        // Every receive frame starts in the fill ring.
        for i in 0..RX_FRAMES {
            // SAFETY: slot i of the fill ring, which we produce.
            unsafe { *fill.slot(i) = i as u64 * FRAME };
        }
        fill.cached = RX_FRAMES;
        fill.producer().store(RX_FRAMES, Ordering::Release);
        let free_tx = (RX_FRAMES..RX_FRAMES + TX_FRAMES)
            .map(|i| i as u64 * FRAME)
            .collect();
        let bind = |flags: u16| {
            let sa = SockaddrXdp {
                family: libc::AF_XDP as u16,
                flags: flags | XDP_USE_NEED_WAKEUP,
                ifindex: ifindex as u32,
                queue_id: queue,
                shared_umem_fd: 0,
            };
            // SAFETY: binding our socket to a live sockaddr_xdp.
            let r = unsafe {
                libc::bind(
                    fd,
                    &sa as *const SockaddrXdp as *const libc::sockaddr,
                    size_of::<SockaddrXdp>() as u32,
                )
            };
            if r < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(())
            }
        };
        let zero_copy = match bind(XDP_ZEROCOPY) {
            Ok(()) => true,
            Err(_) => {
                bind(XDP_COPY).map_err(|e| err(name, "bind", e))?;
                false
            }
        };
        guard.0 = -1;
        umem_guard.0 = std::ptr::null_mut();
        Ok(Socket {
            name: name.to_string(),
            fd,
            umem: umem as *mut u8,
            umem_len,
            rx,
            tx,
            fill,
            comp,
            free_tx,
            tx_out: vec![false; TX_FRAMES as usize],
            rx_errors: 0,
            zero_copy,
        })
    }

    /// The bytes of a received descriptor: inside one receive frame of the
    /// UMEM, or None (the descriptor is skipped, not followed).
    fn rx_frame(&self, addr: u64, len: u32) -> Option<&[u8]> {
        let (start, len) = rx_bounds(addr, len)?;
        // SAFETY: rx_bounds keeps start..start + len inside one receive
        // frame, and receive frames lie inside the UMEM.
        Some(unsafe { std::slice::from_raw_parts(self.umem.add(start), len) })
    }

    /// Takes back the frames the kernel has finished sending; an address
    /// that is not a TX frame the kernel has is ignored.
    fn reap(&mut self) {
        let prod = self.comp.producer().load(Ordering::Acquire);
        let mut cons = self.comp.cached;
        while cons != prod {
            // SAFETY: entries between our consumer index and the producer
            // index are the kernel's finished addresses.
            let addr = unsafe { *self.comp.slot(cons) };
            if let Some(i) = tx_index(addr) {
                if std::mem::replace(&mut self.tx_out[i], false) {
                    self.free_tx.push(tx_addr(i));
                }
            }
            cons = cons.wrapping_add(1);
        }
        self.comp.cached = cons;
        self.comp.consumer().store(cons, Ordering::Release);
    }

    fn kick(&self) -> io::Result<Kick> {
        // SAFETY: a zero-length sendto on our socket tells the kernel to
        // process the TX ring.
        let r = unsafe {
            libc::sendto(
                self.fd,
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if r >= 0 {
            return Ok(Kick::Sent);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => Ok(Kick::Again),
            Some(libc::EBUSY) => Ok(Kick::Dropped),
            Some(libc::ENETDOWN) | Some(libc::ENXIO) => Ok(Kick::Down),
            _ => Err(io::Error::new(
                e.kind(),
                format!("{}: sendto: {e}", self.name),
            )),
        }
    }
}

/// Where a received descriptor's bytes lie in the UMEM: wholly inside one
/// receive frame, or None.
fn rx_bounds(addr: u64, len: u32) -> Option<(usize, usize)> {
    let base = addr & !(FRAME - 1);
    let end = (addr - base).checked_add(len as u64)?;
    (base / FRAME < RX_FRAMES as u64 && end <= FRAME).then_some((addr as usize, len as usize))
}

/// The index of the TX frame at `addr` (any address inside it), if it is
/// one.
fn tx_index(addr: u64) -> Option<usize> {
    let i = (addr / FRAME).checked_sub(RX_FRAMES as u64)?;
    (i < TX_FRAMES as u64).then_some(i as usize)
}

/// The address of TX frame `i`.
fn tx_addr(i: usize) -> u64 {
    (RX_FRAMES as u64 + i as u64) * FRAME
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: closing our socket, then unmapping the UMEM (rings unmap
        // themselves); the kernel holds its own reference until the socket
        // is gone.
        unsafe {
            libc::close(self.fd);
            libc::munmap(self.umem as *mut libc::c_void, self.umem_len);
        }
    }
}

impl Socket {
    /// Copies waiting frames into `bufs` (lengths into `lens`); returns how
    /// many. A descriptor outside the receive frames is skipped (counted in
    /// `rx_errors`) and nothing of it goes back to the fill ring.
    fn rx(&mut self, bufs: &mut [Vec<u8>], lens: &mut [usize]) -> usize {
        let prod = self.rx.producer().load(Ordering::Acquire);
        let fill_cons = self.fill.consumer().load(Ordering::Acquire);
        let mut cons = self.rx.cached;
        let mut n = 0;
        let mut taken = 0;
        while cons != prod && n < bufs.len() {
            // SAFETY: entries between our consumer index and the producer
            // index are frames the kernel has written.
            let d = unsafe { *self.rx.slot(cons) };
            cons = cons.wrapping_add(1);
            taken += 1;
            let Some(f) = self.rx_frame(d.addr, d.len) else {
                self.rx_errors += 1;
                continue;
            };
            let len = f.len().min(bufs[n].len());
            bufs[n][..len].copy_from_slice(&f[..len]);
            lens[n] = len;
            n += 1;
            // The frame goes straight back to the fill ring, if there is
            // room (there always is unless the kernel handed a frame out
            // twice).
            if self.fill.cached.wrapping_sub(fill_cons) < RX_FRAMES {
                // SAFETY: a free slot of the fill ring, which we produce.
                unsafe { *self.fill.slot(self.fill.cached) = d.addr & !(FRAME - 1) };
                self.fill.cached = self.fill.cached.wrapping_add(1);
            }
        }
        if taken > 0 {
            self.rx.cached = cons;
            self.rx.consumer().store(cons, Ordering::Release);
            self.fill
                .producer()
                .store(self.fill.cached, Ordering::Release);
        }
        if self.fill.needs_wakeup() {
            // SAFETY: a zero-length, non-blocking recvfrom wakes the driver.
            unsafe {
                libc::recvfrom(
                    self.fd,
                    std::ptr::null_mut(),
                    0,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
        }
        n
    }

    /// Puts frames on the TX ring and kicks the kernel; returns how many
    /// were taken (the caller counts the rest as dropped).
    ///
    /// Frames the kernel cannot send are dropped, never left on the ring to
    /// leave later: a kick that finds the device not running drops one
    /// frame (`EBUSY`), so the kicks go on until the ring is empty; a first
    /// kick that finds the interface down has not looked at the ring (the
    /// kernel checks `IFF_UP` first), and in copy mode nothing else reads
    /// the TX ring but this thread's own calls, so the frames just
    /// published are taken back. In zero-copy mode the driver reads the
    /// ring on its own and they stay (sluice's test links, veth, are
    /// copy-only).
    fn tx(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        self.reap();
        let entry = self.tx.cached;
        let mut prod = entry;
        let cons = self.tx.consumer().load(Ordering::Acquire);
        let mut n = 0usize;
        for f in frames {
            if prod.wrapping_sub(cons) >= TX_FRAMES {
                break;
            }
            let Some(addr) = self.free_tx.pop() else {
                break;
            };
            let len = f.len().min(FRAME as usize);
            if let Some(i) = tx_index(addr) {
                self.tx_out[i] = true;
            }
            // SAFETY: `addr` is a free TX frame of FRAME bytes in the UMEM
            // (free_tx only ever holds tx_addr values); the TX slot at
            // `prod` is ours (ring not full).
            unsafe {
                std::ptr::copy_nonoverlapping(f.as_ptr(), self.umem.add(addr as usize), len);
                *self.tx.slot(prod) = Desc {
                    addr,
                    len: len as u32,
                    options: 0,
                };
            }
            prod = prod.wrapping_add(1);
            n += 1;
        }
        if n == 0 {
            return Ok(0);
        }
        self.tx.cached = prod;
        self.tx.producer().store(prod, Ordering::Release);
        // In copy mode the kernel sends at most 32 frames per kick.
        let mut budget = n.div_ceil(32) + 1;
        let mut dropped = 0usize;
        let mut first = true;
        while budget > 0 && self.tx.consumer().load(Ordering::Acquire) != prod {
            match self.kick()? {
                Kick::Down if first && !self.zero_copy => {
                    self.take_back(entry, prod);
                    return Ok(0);
                }
                Kick::Down => break,
                // One frame dropped by the kernel; kick on for the others
                // (at most one drop per frame on the ring).
                Kick::Dropped if dropped < TX_FRAMES as usize => dropped += 1,
                Kick::Dropped => break,
                Kick::Sent | Kick::Again => budget -= 1,
            }
            first = false;
        }
        Ok(n.saturating_sub(dropped))
    }

    /// Takes the descriptors `from..to` back off the TX ring (the kernel
    /// has not looked at them) and their frames back into the free list.
    fn take_back(&mut self, from: u32, to: u32) {
        let mut i = from;
        while i != to {
            // SAFETY: a slot of the TX ring we wrote in this call.
            let d = unsafe { *self.tx.slot(i) };
            if let Some(k) = tx_index(d.addr) {
                if std::mem::replace(&mut self.tx_out[k], false) {
                    self.free_tx.push(tx_addr(k));
                }
            }
            i = i.wrapping_add(1);
        }
        self.tx.cached = from;
        self.tx.producer().store(from, Ordering::Release);
    }
}

impl Port for AfXdp {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let (bufs, lens) = batch.slots();
        let mut n = 0;
        for s in &mut self.socks {
            n += s.rx(&mut bufs[n..], &mut lens[n..]);
        }
        batch.set_len(n);
        Ok(n)
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        self.socks[0].tx(frames)
    }

    fn take_rx_errors(&mut self) -> u64 {
        self.socks
            .iter_mut()
            .map(|s| std::mem::take(&mut s.rx_errors))
            .sum()
    }

    fn fd(&self) -> Option<i32> {
        Some(self.socks[0].fd)
    }

    fn fds(&self) -> Vec<i32> {
        self.socks.iter().map(|s| s.fd).collect()
    }

    fn link_up(&self) -> bool {
        crate::afpacket::operstate_up(&self.name)
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.hw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_descriptors_outside_the_receive_frames_are_refused() {
        assert_eq!(rx_bounds(256, 60), Some((256, 60)));
        assert_eq!(
            rx_bounds(5 * FRAME + 256, 1792),
            Some((5 * FRAME as usize + 256, 1792))
        );
        // Past the frame's end, into the TX half, past the UMEM, wrapping.
        assert_eq!(rx_bounds(256, 1793), None);
        assert_eq!(rx_bounds(RX_FRAMES as u64 * FRAME, 60), None);
        assert_eq!(rx_bounds(u64::MAX - 10, 60), None);
        assert_eq!(rx_bounds(FRAME - 1, u32::MAX), None);
    }

    #[test]
    fn only_tx_frames_come_back_from_the_completion_ring() {
        assert_eq!(tx_index(tx_addr(0)), Some(0));
        assert_eq!(tx_index(tx_addr(7) + 256), Some(7));
        assert_eq!(
            tx_index(tx_addr(TX_FRAMES as usize - 1)),
            Some(TX_FRAMES as usize - 1)
        );
        assert_eq!(tx_index(0), None);
        assert_eq!(tx_index(tx_addr(TX_FRAMES as usize)), None);
        assert_eq!(tx_index(u64::MAX), None);
    }
}
