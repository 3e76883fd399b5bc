//! An `AF_XDP` port: the interface's XDP program ([`crate::xdp`]) hands
//! every received frame to a socket whose rings live in memory shared with
//! the kernel (the UMEM, [`crate::umem`]), bypassing the kernel stack.
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
//! UMEMs: given one UMEM per worker ([`AfXdp::open_queues`] with
//! `shared`), every socket of that worker, on any interface, binds to it
//! (`XDP_SHARED_UMEM`, with a fill and a completion ring of its own), so a
//! frame received on one port is sent on another by moving its descriptor
//! ([`Port::recv_zc`], [`Port::send_zc`]); a socket the kernel will not
//! bind to the shared UMEM (a zero-copy interface sharing with a copy-mode
//! one) gets a UMEM of its own, and frames crossing to it are copied.
//! [`Port::recv`] and [`Port::send`] copy, for callers that want their own
//! buffers. The chunks' whereabouts are [`crate::umem::Umem`]'s to keep.
//!
//! Rings are single-producer/single-consumer with the kernel: the producer
//! index is published with Release after the descriptors are written, and
//! read with Acquire before they are read.

use std::io;
use std::mem::size_of;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::umem::{self, Desc, TxFrame, Umem, ZcBatch, FRAME};
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

/// Ring entries for receiving and for sending (and the chunks of a UMEM a
/// socket has to itself: as many again).
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
struct XdpDesc {
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

impl<T> Ring<T> {
    /// Unmaps the ring (once; the ring must not be used after).
    fn unmap(&mut self) {
        if !self.map.is_null() {
            // SAFETY: unmapping exactly what map() mapped, once.
            unsafe { libc::munmap(self.map as *mut libc::c_void, self.map_len) };
            self.map = std::ptr::null_mut();
        }
    }
}

impl<T> Drop for Ring<T> {
    fn drop(&mut self) {
        self.unmap();
    }
}

/// An `AF_XDP` port as one worker sees it: the sockets of its receive
/// queues.
pub struct AfXdp {
    name: String,
    hw: [u8; 6],
    socks: Vec<Socket>,
    /// The UMEM of every socket of this handle, when they share one (the
    /// worker then receives and sends by descriptor).
    umem: Option<Arc<Umem>>,
    /// The interface's program; the last port handle dropped detaches it.
    program: Arc<XdpProgram>,
}

/// An `AF_XDP` socket on one receive queue of an interface.
struct Socket {
    name: String,
    fd: i32,
    umem: Arc<Umem>,
    /// This socket's id in its UMEM's chunk table.
    id: u32,
    rx: Ring<XdpDesc>,
    tx: Ring<XdpDesc>,
    fill: Ring<u64>,
    comp: Ring<u64>,
    /// Chunks in the fill ring (given to the kernel, not yet received).
    in_fill: u32,
    /// This socket's own fill target once it has been busy (0 before):
    /// above the UMEM's even share, up to [`umem::FILL_MAX`].
    boost: u32,
    /// What the last refill aimed the fill ring at (a receive call has
    /// work to do while `in_fill` is below it: the UMEM was short).
    aim: u32,
    /// Scratch for the chunks going to the fill ring.
    stock: Vec<u64>,
    /// Descriptors refused since `take_rx_errors` last ran.
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

// SAFETY: the ring mappings belong to this value alone and are used by the
// one thread that owns it (the kernel being the other party); the UMEM is
// Sync.
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
    /// redirect program (native if possible, unless `generic_only`). With
    /// `shared` (one UMEM per worker), worker w's sockets bind to
    /// `shared[w]`; without, each socket has a UMEM of its own. Fails,
    /// with the reason, where AF_XDP cannot run: the caller falls back to
    /// AF_PACKET.
    pub fn open_queues(
        name: &str,
        n: usize,
        generic_only: bool,
        shared: Option<&[Arc<Umem>]>,
    ) -> io::Result<Vec<AfXdp>> {
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
                umem: None,
                program: program.clone(),
            })
            .collect();
        for q in 0..queues {
            let w = q as usize % n;
            let s = match shared.and_then(|u| u.get(w)) {
                // A socket the kernel will not bind to the shared UMEM
                // gets one of its own.
                Some(u) => Socket::open(name, ifindex, q, u).or_else(|_| {
                    Socket::open(name, ifindex, q, &Umem::new(RX_FRAMES + TX_FRAMES)?)
                })?,
                None => Socket::open(name, ifindex, q, &Umem::new(RX_FRAMES + TX_FRAMES)?)?,
            };
            program
                .set_socket(q, s.fd)
                .map_err(|e| err(name, "map", e))?;
            ports[w].socks.push(s);
        }
        for p in &mut ports {
            let first = p.socks[0].umem.clone();
            if p.socks.iter().all(|s| Arc::ptr_eq(&s.umem, &first)) {
                p.umem = Some(first);
            }
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

/// `sockaddr_xdp` flag: bind to the UMEM of the socket `shared_umem_fd`.
const XDP_SHARED_UMEM: u16 = 1 << 0;

impl Socket {
    /// A socket on queue `queue` of interface `ifindex`, in `umem`: it
    /// registers the UMEM if no bound socket has it, else shares it
    /// through the first one's descriptor.
    fn open(name: &str, ifindex: i32, queue: u32, umem: &Arc<Umem>) -> io::Result<Socket> {
        // SAFETY: socket(2); checked; owned by the Socket built below, or
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
        // Held until this socket is bound and listed: the socket shared
        // through stays open meanwhile.
        let mut sockets = umem
            .sockets
            .lock()
            .map_err(|_| err(name, "UMEM", io::Error::other("poisoned")))?;
        let owner = sockets.first().map(|&(_, fd)| fd);
        if owner.is_none() {
            let (addr, len) = umem.area();
            let reg = UmemReg {
                addr,
                len,
                chunk_size: FRAME as u32,
                headroom: 0,
                flags: 0,
                tx_metadata_len: 0,
            };
            sockopt(fd, XDP_UMEM_REG, &reg).map_err(|e| err(name, "UMEM registration", e))?;
        }
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
        let rx = Ring::<XdpDesc>::map(fd, &off.rx, RX_FRAMES, XDP_PGOFF_RX_RING)
            .map_err(|e| err(name, "mmap RX", e))?;
        let tx = Ring::<XdpDesc>::map(fd, &off.tx, TX_FRAMES, XDP_PGOFF_TX_RING)
            .map_err(|e| err(name, "mmap TX", e))?;
        let fill = Ring::<u64>::map(fd, &off.fr, RX_FRAMES, XDP_UMEM_PGOFF_FILL_RING)
            .map_err(|e| err(name, "mmap fill", e))?;
        let comp = Ring::<u64>::map(fd, &off.cr, TX_FRAMES, XDP_UMEM_PGOFF_COMPLETION_RING)
            .map_err(|e| err(name, "mmap completion", e))?;
        let bind = |flags: u16, shared_fd: i32| {
            let sa = SockaddrXdp {
                family: libc::AF_XDP as u16,
                flags,
                ifindex: ifindex as u32,
                queue_id: queue,
                shared_umem_fd: shared_fd as u32,
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
        let mut s = Socket {
            name: name.to_string(),
            fd,
            umem: umem.clone(),
            id: umem.new_id(),
            rx,
            tx,
            fill,
            comp,
            in_fill: 0,
            boost: 0,
            aim: 0,
            stock: Vec::with_capacity(RX_FRAMES as usize),
            rx_errors: 0,
            zero_copy: false,
        };
        // The fill ring is stocked before the bind, so that the first
        // frames find room; a failed bind gives the chunks back.
        s.refill(umem.fill_target_for(sockets.len() + 1));
        let bound = match owner {
            // The mode and wake-up flags are the owner's.
            Some(owner) => bind(XDP_SHARED_UMEM, owner).map(|()| umem.is_zero_copy()),
            None => bind(XDP_ZEROCOPY | XDP_USE_NEED_WAKEUP, 0)
                .map(|()| true)
                .or_else(|_| bind(XDP_COPY | XDP_USE_NEED_WAKEUP, 0).map(|()| false))
                .inspect(|zc| umem.set_zero_copy(*zc)),
        };
        match bound {
            Ok(zc) => s.zero_copy = zc,
            Err(e) => {
                // The socket's Drop closes the descriptor and takes its
                // chunks back (it was never listed).
                drop(sockets);
                guard.0 = -1;
                drop(s);
                return Err(err(name, "bind", e));
            }
        }
        sockets.push((s.id, fd));
        umem.set_sockets(sockets.len());
        guard.0 = -1;
        Ok(s)
    }

    /// Tops the fill ring up to `target` chunks from the UMEM's free list
    /// (past [`umem::FILL_FLOOR`], only from what exceeds the reserve).
    fn refill(&mut self, target: u32) {
        if self.in_fill >= target {
            return;
        }
        let cons = self.fill.consumer().load(Ordering::Acquire);
        let room = RX_FRAMES - self.fill.cached.wrapping_sub(cons).min(RX_FRAMES);
        let want = (target - self.in_fill).min(room);
        if want == 0 {
            return;
        }
        self.stock.clear();
        // Up to the floor from anything free; the rest leaves the reserve.
        let floor = want.min(umem::FILL_FLOOR.saturating_sub(self.in_fill));
        if floor > 0 {
            self.umem.to_fill(self.id, floor, 0, &mut self.stock);
        }
        if want > floor {
            let keep = self.umem.busy_reserve();
            self.umem
                .to_fill(self.id, want - floor, keep, &mut self.stock);
        }
        for &a in &self.stock {
            // SAFETY: a free slot of the fill ring (room counted above),
            // which we produce.
            unsafe { *self.fill.slot(self.fill.cached) = a };
            self.fill.cached = self.fill.cached.wrapping_add(1);
        }
        self.in_fill += self.stock.len() as u32;
        self.fill
            .producer()
            .store(self.fill.cached, Ordering::Release);
    }

    /// Takes back the chunks the kernel has finished sending; an address
    /// that is not a chunk on this socket's TX ring is ignored.
    fn reap(&mut self) {
        let prod = self.comp.producer().load(Ordering::Acquire);
        let mut cons = self.comp.cached;
        while cons != prod {
            // SAFETY: entries between our consumer index and the producer
            // index are the kernel's finished addresses.
            let addr = unsafe { *self.comp.slot(cons) };
            self.umem.completed(self.id, addr);
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

    /// Receives up to `max` frames: their descriptors, each checked
    /// against the UMEM's table (a chunk in this socket's fill ring, bytes
    /// within it), go to `out`, held by the caller; a refused one is
    /// counted in `rx_errors`. The fill ring is topped up after.
    fn rx(&mut self, out: &mut Vec<Desc>, max: usize) -> usize {
        let prod = self.rx.producer().load(Ordering::Acquire);
        let mut cons = self.rx.cached;
        let mut n = 0;
        while cons != prod && n < max {
            // SAFETY: entries between our consumer index and the producer
            // index are frames the kernel has written.
            let d = unsafe { *self.rx.slot(cons) };
            cons = cons.wrapping_add(1);
            let d = Desc {
                addr: d.addr,
                len: d.len,
            };
            if self.umem.received(self.id, d) {
                self.in_fill = self.in_fill.saturating_sub(1);
                out.push(d);
                n += 1;
            } else {
                self.rx_errors += 1;
            }
        }
        if cons != self.rx.cached {
            self.rx.cached = cons;
            self.rx.consumer().store(cons, Ordering::Release);
        }
        // Busy: the kernel had taken three quarters of the fill ring since
        // the last refill; this socket's target doubles.
        let share = self.umem.fill_target();
        let target = self.boost.max(share);
        // (What the kernel has not taken yet from the fill ring: the
        // chunks it filled wait in the RX ring, which a receive call may
        // read only in part.)
        let left = self
            .fill
            .cached
            .wrapping_sub(self.fill.consumer().load(Ordering::Acquire));
        if n > 0 && left <= target / 4 && target < umem::FILL_MAX {
            self.boost = (target * 2).min(umem::FILL_MAX);
        }
        self.aim = self.boost.max(share);
        self.refill(self.aim);
        if self.fill.needs_wakeup() {
            self.wake_fill();
        }
        n
    }

    /// Whether [`Socket::rx`] has anything to do: frames wait on the RX
    /// ring, the last refill fell short (the UMEM had too few free
    /// chunks), or a zero-copy driver asks to be woken for the fill ring.
    /// Reads one shared index (two in zero-copy mode) and this struct:
    /// the worker asks every port every round, and most ports of a large
    /// bridge are idle.
    fn rx_ready(&self) -> bool {
        self.rx.producer().load(Ordering::Acquire) != self.rx.cached
            || self.in_fill < self.aim
            || (self.zero_copy && self.fill.needs_wakeup())
    }

    /// What a `poll(2)` on the socket would have done before sleeping
    /// (the worker sleeps in epoll, which looks at a socket only when it
    /// signals): frames a kick left on the TX ring are kicked again, and a
    /// zero-copy driver that asks for it is woken for the fill ring.
    fn before_wait(&self) {
        if self.tx.consumer().load(Ordering::Acquire) != self.tx.cached {
            let _ = self.kick();
        }
        if self.zero_copy && self.fill.needs_wakeup() {
            self.wake_fill();
        }
    }

    /// Wakes the driver to take chunks from the fill ring.
    fn wake_fill(&self) {
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

    /// Puts frames on the TX ring and kicks the kernel; returns how many
    /// were sent (the caller counts the rest as dropped). Bytes are copied
    /// into chunks of the UMEM; a chunk of it is handed over as it is.
    /// Every chunk passed is this socket's from then on, sent or not (one
    /// not sent goes back to the free list).
    ///
    /// Frames the kernel cannot send are dropped, never left on the ring to
    /// leave later: a kick that finds the device not running drops one
    /// frame (`EBUSY`), so the kicks go on until the ring is empty; a first
    /// kick that finds the interface down has not looked at the ring (the
    /// kernel checks `IFF_UP` first), and in copy mode nothing else reads
    /// the TX ring but this thread's own calls, so the frames just
    /// published are taken back. Frames still on the ring after kicks the
    /// kernel did read (it said "again" until the budget ran out) cannot be
    /// taken back: the kernel has cached the producer index past them and
    /// will send them at a later kick (the one case where a frame can
    /// leave late, if the link goes down just then). In zero-copy mode the
    /// driver reads the ring on its own and frames stay (sluice's test
    /// links, veth, are copy-only).
    fn tx(&mut self, frames: &[TxFrame]) -> io::Result<usize> {
        self.reap();
        let entry = self.tx.cached;
        let mut prod = entry;
        let cons = self.tx.consumer().load(Ordering::Acquire);
        let mut n = 0usize;
        let mut left = Vec::new();
        for f in frames {
            let full = prod.wrapping_sub(cons) >= TX_FRAMES;
            let d = match f {
                TxFrame::Chunk(d) if !full && umem::held(&self.umem, *d) => *d,
                TxFrame::Chunk(d) => {
                    left.push(d.addr);
                    continue;
                }
                TxFrame::Bytes(_) if full => continue,
                TxFrame::Bytes(b) => {
                    let Some(addr) = self.umem.alloc() else {
                        continue;
                    };
                    let len = b.len().min(FRAME as usize);
                    let d = Desc {
                        addr,
                        len: len as u32,
                    };
                    // SAFETY: a chunk just allocated, held by us alone.
                    let chunk = unsafe { self.umem.chunk_mut(d) };
                    chunk[..len].copy_from_slice(&b[..len]);
                    d
                }
            };
            self.umem.to_tx(self.id, d);
            // SAFETY: the TX slot at `prod` is ours (ring not full).
            unsafe {
                *self.tx.slot(prod) = XdpDesc {
                    addr: d.addr,
                    len: d.len,
                    options: 0,
                }
            };
            prod = prod.wrapping_add(1);
            n += 1;
        }
        self.umem.free_held(left);
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
                // Only a first kick: the kernel checks IFF_UP before it
                // reads the ring, so it has not seen (nor cached the
                // producer index past) what this call published. Frames an
                // earlier call left on the ring are past taking back: the
                // kernel has read the producer index beyond them.
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
    /// has not looked at them) and their chunks back into the free list.
    fn take_back(&mut self, from: u32, to: u32) {
        let mut i = from;
        while i != to {
            // SAFETY: a slot of the TX ring we wrote in this call.
            let d = unsafe { *self.tx.slot(i) };
            self.umem.completed(self.id, d.addr);
            i = i.wrapping_add(1);
        }
        self.tx.cached = from;
        self.tx.producer().store(from, Ordering::Release);
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // Unlisted first, so that no new socket shares through a closed
        // descriptor; then closed, and the chunks the kernel had come
        // back (it lets go of them with the socket).
        if let Ok(mut l) = self.umem.sockets.lock() {
            l.retain(|&(id, _)| id != self.id);
            self.umem.set_sockets(l.len());
        }
        // The rings hold the socket's file too: unmapped before the close,
        // so that the close releases the socket (unbinds it, takes it out
        // of the XSKMAP, and the kernel lets go of its chunks) before they
        // go back to the free list for other sockets to use.
        self.rx.unmap();
        self.tx.unmap();
        self.fill.unmap();
        self.comp.unmap();
        // SAFETY: closing our socket, once.
        unsafe { libc::close(self.fd) };
        self.umem.reclaim(self.id);
    }
}

impl Port for AfXdp {
    fn name(&self) -> &str {
        &self.name
    }

    /// Copies the frames into the batch's buffers and gives their chunks
    /// straight back.
    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let (bufs, lens) = batch.slots();
        let mut n = 0;
        let mut descs = Vec::new();
        for s in &mut self.socks {
            descs.clear();
            s.rx(&mut descs, bufs.len() - n);
            for d in &descs {
                // SAFETY: just received, held by us alone until freed below.
                let chunk = unsafe { s.umem.chunk_mut(*d) };
                let at = (d.addr % FRAME) as usize;
                let len = (d.len as usize).min(bufs[n].len());
                bufs[n][..len].copy_from_slice(&chunk[at..at + len]);
                lens[n] = len;
                n += 1;
            }
            s.umem.free_held(descs.iter().map(|d| d.addr));
        }
        batch.set_len(n);
        Ok(n)
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let items: Vec<TxFrame> = frames.iter().map(|f| TxFrame::Bytes(f)).collect();
        self.socks[0].tx(&items)
    }

    fn umem(&self) -> Option<&Arc<Umem>> {
        self.umem.as_ref()
    }

    fn recv_zc(&mut self, batch: &mut ZcBatch, max: usize) -> io::Result<usize> {
        let Some(umem) = &self.umem else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{}: sockets in several UMEMs", self.name),
            ));
        };
        let descs = batch.begin(umem);
        let mut n = 0;
        for s in &mut self.socks {
            n += s.rx(descs, max - n);
        }
        batch.received();
        Ok(n)
    }

    fn send_zc(&mut self, frames: &[TxFrame]) -> io::Result<usize> {
        self.socks[0].tx(frames)
    }

    fn rx_ready(&self) -> bool {
        self.socks.iter().any(Socket::rx_ready)
    }

    fn before_wait(&mut self) {
        self.socks.iter().for_each(Socket::before_wait);
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
