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
const XDP_STATISTICS: libc::c_int = 7;
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

/// The first fields of `struct xdp_statistics` (all the kernel needs to
/// be asked for: `struct xdp_statistics_v1`).
#[repr(C)]
#[derive(Default)]
struct XdpStatistics {
    rx_dropped: u64,
    rx_invalid_descs: u64,
    tx_invalid_descs: u64,
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
    /// TX ring index up to which every descriptor's fate (sent or dropped)
    /// is counted in `settled_tx`: the kernel's published consumer index
    /// passed it (or a purge was resolved past it).
    settled: u32,
    /// Frames the kernel took and dropped (`EBUSY`) that `settle` has not
    /// counted yet (they are among the descriptors it consumed).
    busy_drops: u32,
    /// Descriptors purged from the TX ring when the link went down, until
    /// the kernel has gone past them.
    purge: Option<Purge>,
    /// What `settle` counted since [`Port::take_tx_settled`] last ran.
    settled_tx: crate::TxSettled,
    /// When a purge last failed to resolve with the link up.
    purge_stalled: Option<std::time::Instant>,
}

/// How long a purge the kernel made no progress on waits before it is
/// kicked again.
const PURGE_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

/// Frames that were on the TX ring when the link went down (copy mode),
/// their descriptors overwritten with invalid ones so that the kernel skips
/// them instead of sending them when the link comes back.
///
/// The kernel may already have taken the first of them (it reads the ring
/// ahead of the consumer index it publishes): those were sent, and come
/// back on the completion ring as usual. It skips the others, counting
/// each in the socket's `tx_invalid_descs` statistic and never completing
/// it. It reads the ring in order, so once its published consumer index
/// has passed the range, the growth of that statistic (sluice never writes
/// an invalid descriptor otherwise) says how many of the range were
/// skipped: the last ones. Their chunks are sluice's again.
struct Purge {
    /// The ring index of the first purged descriptor.
    from: u32,
    /// The original descriptors, in ring order from `from`.
    descs: Vec<XdpDesc>,
    /// `tx_invalid_descs` when the range was purged.
    invalid_before: u64,
}

/// The descriptor that takes a purged one's place: no chunk (an address
/// past any UMEM) and no length, which the kernel refuses and skips.
const PURGED: XdpDesc = XdpDesc {
    addr: u64::MAX - (FRAME - 1),
    len: 0,
    options: 0,
};

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
    crate::os::setsockopt(fd, SOL_XDP, opt, v)
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
            settled: 0,
            busy_drops: 0,
            purge: None,
            settled_tx: crate::TxSettled::default(),
            purge_stalled: None,
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
    /// signals): frames a kick left on the TX ring are kicked again (a
    /// purge is driven to its end), and a zero-copy driver that asks for it
    /// is woken for the fill ring. What the kicks settle is counted.
    fn before_wait(&mut self) {
        if self.purge.is_some() {
            self.resolve_purge();
        } else if self.tx.consumer().load(Ordering::Acquire) != self.tx.cached {
            // Frames left on the ring while the link went down are purged
            // here too: the worker stops sending to a port it sees down,
            // so no `tx` call may come to find it.
            if matches!(self.kick(), Ok(Kick::Down)) && !self.zero_copy {
                self.purge_ring();
            }
        }
        self.settle();
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
    /// were put on the ring (the caller counts the rest as dropped). Bytes
    /// are copied into chunks of the UMEM; a chunk of it is handed over as
    /// it is. Every chunk passed is this socket's from then on, sent or not
    /// (one not sent goes back to the free list).
    ///
    /// Whether a frame on the ring was sent is known only once the kernel
    /// has published a consumer index past it: [`Socket::settle`] counts
    /// it then (in `settled_tx`), sent or dropped, once.
    ///
    /// Frames the kernel cannot send are dropped, never left on the ring to
    /// leave later: a kick that finds the device not running drops one
    /// frame (`EBUSY`), so the kicks go on until the ring is empty. A kick
    /// that finds the interface down (`ENETDOWN`: the kernel checks
    /// `IFF_UP` before it reads the ring) leaves the ring as it is, and in
    /// copy mode nothing but this thread's own calls reads the TX ring: the
    /// frames this call published, which the kernel has not seen, are taken
    /// back, and those earlier kicks left behind are purged ([`Purge`]).
    /// Until a purge is resolved nothing more is put on the ring (the
    /// frames are dropped): resolving it needs the kernel to go past it,
    /// which it does once the link is up again. In zero-copy mode the
    /// driver reads the ring on its own and frames stay (sluice's test
    /// links, veth, are copy-only).
    fn tx(&mut self, frames: &[TxFrame]) -> io::Result<usize> {
        self.reap();
        if self.purge.is_some() {
            self.resolve_purge();
        }
        self.settle();
        if self.purge.is_some() {
            // The link is still down: nothing goes on the ring.
            self.umem.free_held(frames.iter().filter_map(|f| match f {
                TxFrame::Chunk(d) => Some(d.addr),
                TxFrame::Bytes(_) => None,
            }));
            return Ok(0);
        }
        let entry = self.tx.cached;
        let mut prod = entry;
        // Room up to what `settle` has counted (a zero-copy driver may have
        // moved the consumer index on since): a slot is written again only
        // once its frame is counted.
        let cons = self.settled;
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
                // An empty descriptor is one the kernel refuses (and never
                // completes): an empty frame is not sent.
                TxFrame::Bytes(b) if full || b.is_empty() => continue,
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
        let mut dropped = 0u32;
        let mut first = true;
        while budget > 0 && self.tx.consumer().load(Ordering::Acquire) != prod {
            // A kick that fails otherwise leaves the frames on the ring:
            // they are counted when the kernel has gone past them.
            let Ok(kick) = self.kick() else {
                break;
            };
            match kick {
                // Only a first kick: the kernel checks IFF_UP before it
                // reads the ring, so it has not seen (nor cached the
                // producer index past) what this call published; what
                // earlier calls left there is purged.
                Kick::Down if first && !self.zero_copy => {
                    self.take_back(entry, prod);
                    self.purge_ring();
                    return Ok(0);
                }
                // Down after the kernel read the ring in this call: all
                // that is left is purged, this call's frames included.
                Kick::Down if !self.zero_copy => {
                    self.purge_ring();
                    break;
                }
                Kick::Down => break,
                // One frame dropped by the kernel; kick on for the others
                // (at most one drop per frame on the ring).
                Kick::Dropped if dropped < TX_FRAMES => {
                    dropped += 1;
                    self.busy_drops += 1;
                }
                Kick::Dropped => break,
                Kick::Sent | Kick::Again => budget -= 1,
            }
            first = false;
        }
        self.settle();
        Ok(n)
    }

    /// Counts the descriptors the kernel has gone past since the last
    /// call, in ring order (a purge is counted by `resolve_purge`). Frames the kernel dropped (`EBUSY`)
    /// are counted dropped, as the last ones it took.
    fn settle(&mut self) {
        // A purge starts where counting stopped, and nothing goes on the
        // ring after it: until it is resolved there is nothing to count.
        if self.purge.is_none() {
            self.count_consumed(self.tx.consumer().load(Ordering::Acquire));
        }
    }

    /// Counts the ring's descriptors from `settled` to `upto` as taken by
    /// the kernel: sent, but for the `EBUSY` drops not yet counted.
    fn count_consumed(&mut self, upto: u32) {
        let n = upto.wrapping_sub(self.settled);
        if n == 0 || n > TX_FRAMES {
            return;
        }
        let drops = self.busy_drops.min(n);
        let mut i = self.settled;
        for k in 0..n {
            // SAFETY: a slot we wrote, not yet reused: the producer comes
            // back to it only after `settle` has run past it.
            let len = unsafe { (*self.tx.slot(i)).len } as u64;
            if k < n - drops {
                self.settled_tx.sent += 1;
                self.settled_tx.bytes += len;
            } else {
                self.settled_tx.dropped += 1;
            }
            i = i.wrapping_add(1);
        }
        self.busy_drops -= drops;
        self.settled = upto;
    }

    /// Overwrites every descriptor the kernel has not been seen to go past
    /// (from its published consumer index to ours) with [`PURGED`], and
    /// remembers the originals. Nothing to do if none is left.
    fn purge_ring(&mut self) {
        self.settle();
        if self.purge.is_some() {
            return;
        }
        let from = self.settled;
        let to = self.tx.cached;
        let n = to.wrapping_sub(from);
        if n == 0 || n > TX_FRAMES {
            return;
        }
        let Some(invalid_before) = self.tx_invalid_descs() else {
            // Without the statistic a purge could not be resolved: the
            // frames stay (and may leave late), as before purges existed.
            return;
        };
        let mut descs = Vec::with_capacity(n as usize);
        let mut i = from;
        while i != to {
            // SAFETY: a slot we wrote, between the kernel's published
            // consumer index and ours; in copy mode the kernel reads it only
            // in this thread's own calls, and reads it whole then.
            unsafe {
                descs.push(*self.tx.slot(i));
                *self.tx.slot(i) = PURGED;
            }
            i = i.wrapping_add(1);
        }
        self.purge = Some(Purge {
            from,
            descs,
            invalid_before,
        });
    }

    /// Kicks the kernel through a purged range (it skips one invalid
    /// descriptor per kick, and publishes its consumer index once it has
    /// run out) and, once it has gone past it, counts the range: the first
    /// ones the kernel had taken before the purge were sent (their chunks
    /// come back on the completion ring), the ones it skipped were dropped
    /// and their chunks are freed here. While the interface is down the
    /// kernel does not look at the ring, and the purge stays.
    fn resolve_purge(&mut self) {
        let Some(p) = &self.purge else {
            return;
        };
        let from = p.from;
        let len = p.descs.len() as u32;
        let passed = |s: &Self| {
            s.tx.consumer()
                .load(Ordering::Acquire)
                .wrapping_sub(from)
                .wrapping_sub(len)
                <= TX_FRAMES
        };
        // A kernel that made no progress at the last try (it cannot send
        // on this queue at all) is not kicked again for a while: the
        // worker's rounds must not turn into kick loops.
        if self
            .purge_stalled
            .is_some_and(|t| t.elapsed() < PURGE_RETRY)
        {
            return;
        }
        // One kick per skipped descriptor (recent kernels skip one per
        // call, older ones a run of them), one to publish, a spare.
        let mut kicks = len + 2;
        while !passed(self) && kicks > 0 {
            match self.kick() {
                Ok(Kick::Down) | Err(_) => return,
                Ok(_) => kicks -= 1,
            }
        }
        if !passed(self) {
            self.purge_stalled = Some(std::time::Instant::now());
            return;
        }
        self.purge_stalled = None;
        let Some(invalid_now) = self.tx_invalid_descs() else {
            return;
        };
        let Some(p) = self.purge.take() else {
            return;
        };
        let skipped = (invalid_now.saturating_sub(p.invalid_before) as usize).min(p.descs.len());
        let taken = p.descs.len() - skipped;
        let drops = self.busy_drops.min(taken as u32) as usize;
        for (k, d) in p.descs.iter().enumerate() {
            if k < taken - drops {
                self.settled_tx.sent += 1;
                self.settled_tx.bytes += d.len as u64;
            } else {
                self.settled_tx.dropped += 1;
                if k >= taken {
                    self.umem.completed(self.id, d.addr);
                }
            }
        }
        self.busy_drops -= drops as u32;
        self.settled = from.wrapping_add(len);
        self.settle();
    }

    /// Before the socket is closed: what is left on the ring is kicked
    /// out (as many kicks as a full ring needs, unless the interface is
    /// down), then every frame not yet counted is: those the kernel has
    /// gone past as [`Socket::settle`] counts them, the rest (and a purge
    /// not resolved) as dropped, since they go with the socket. (A frame
    /// the kernel took without publishing so is counted dropped then:
    /// at most one kick's worth, and only at a close.)
    fn close_tx(&mut self) {
        if self.purge.is_some() {
            self.purge_stalled = None;
            self.resolve_purge();
        }
        let mut kicks = TX_FRAMES / 32 + 2;
        while self.purge.is_none()
            && kicks > 0
            && self.tx.consumer().load(Ordering::Acquire) != self.tx.cached
        {
            match self.kick() {
                Ok(Kick::Down) | Err(_) => break,
                Ok(_) => kicks -= 1,
            }
        }
        self.settle();
        if let Some(p) = self.purge.take() {
            self.settled_tx.dropped += p.descs.len() as u64;
            self.settled = p.from.wrapping_add(p.descs.len() as u32);
        }
        let left = self.tx.cached.wrapping_sub(self.settled);
        if left <= TX_FRAMES {
            self.settled_tx.dropped += left as u64;
        }
        self.settled = self.tx.cached;
        self.busy_drops = 0;
    }

    /// The socket's count of invalid TX descriptors the kernel skipped
    /// (`XDP_STATISTICS`), or None if it cannot be read.
    fn tx_invalid_descs(&self) -> Option<u64> {
        let mut st = XdpStatistics::default();
        let mut len = size_of::<XdpStatistics>() as libc::socklen_t;
        // SAFETY: reading the statistics into a live struct of that size.
        let r = unsafe {
            libc::getsockopt(
                self.fd,
                SOL_XDP,
                XDP_STATISTICS,
                &mut st as *mut XdpStatistics as *mut libc::c_void,
                &mut len,
            )
        };
        (r == 0).then_some(st.tx_invalid_descs)
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
        self.socks.iter_mut().for_each(Socket::before_wait);
    }

    fn tx_settles_later(&self) -> bool {
        true
    }

    fn close_tx(&mut self) {
        self.socks.iter_mut().for_each(Socket::close_tx);
    }

    fn take_tx_settled(&mut self) -> crate::TxSettled {
        let mut t = crate::TxSettled::default();
        for s in &mut self.socks {
            let d = std::mem::take(&mut s.settled_tx);
            t.sent += d.sent;
            t.bytes += d.bytes;
            t.dropped += d.dropped;
        }
        t
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
    //! The purge against the kernel: a veth pair in a network namespace of
    //! the test's own (needs root; in CI, `CI` set, it fails rather than
    //! skip).

    use super::*;
    use std::process::Command;
    use std::time::{Duration, Instant};

    const ETHERTYPE: u16 = 0x88b5;

    fn root() -> bool {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            return true;
        }
        assert!(
            std::env::var_os("CI").is_none(),
            "the AF_XDP purge test needs root in CI"
        );
        eprintln!("skipped: the AF_XDP purge test needs root");
        false
    }

    fn run(args: &[&str]) {
        let st = Command::new(args[0]).args(&args[1..]).status().unwrap();
        assert!(st.success(), "{args:?}: {st}");
    }

    /// Waits (at most 5 s) until `name`'s operational state is `want`
    /// (sysfs shows the namespace it was mounted in, so `ip` is asked).
    fn wait_oper(name: &str, want: &str) {
        let t = Instant::now();
        loop {
            let out = Command::new("ip")
                .args(["-o", "link", "show", name])
                .output()
                .unwrap();
            if String::from_utf8_lossy(&out.stdout).contains(&format!("state {want}")) {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "{name} not {want} after 5 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn frame(seq: u32) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&[2, 0, 0, 0, 0x77, 1]);
        f.extend_from_slice(&ETHERTYPE.to_be_bytes());
        f.extend_from_slice(&seq.to_be_bytes());
        f.resize(60, 0);
        f
    }

    /// An AF_PACKET socket receiving `ETHERTYPE` frames on `name`.
    fn listener(name: &str) -> i32 {
        let proto = ETHERTYPE.to_be();
        // SAFETY: socket(2), checked; closed by the test.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, proto as i32) };
        assert!(fd >= 0);
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = crate::afpacket::ifindex(name).unwrap();
        // SAFETY: binding our socket to a live sockaddr_ll.
        let r = unsafe {
            libc::bind(
                fd,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        assert_eq!(r, 0);
        fd
    }

    /// The sequence numbers `fd` receives until `last` arrives (at most
    /// 5 s).
    fn received_until(fd: i32, last: u32) -> Vec<u32> {
        let t = Instant::now();
        let mut got = Vec::new();
        let mut buf = [0u8; 128];
        while got.last() != Some(&last) {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "frame {last} not received after 5 s (got {got:?})"
            );
            // SAFETY: receiving into a live buffer of that size.
            let n = unsafe {
                libc::recv(
                    fd,
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    libc::MSG_DONTWAIT,
                )
            };
            if n >= 18 {
                got.push(u32::from_be_bytes(buf[14..18].try_into().unwrap()));
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        got
    }

    /// A veth pair `A`-`B` in a network namespace of this thread's own (the
    /// test harness's other threads keep theirs; `ip` inherits it), an
    /// AF_XDP port on A, a listener on B, and 100 frames on A's TX ring
    /// of which one kick (stopped at the kernel's batch limit) sent 32:
    /// the rest would leave whenever the kernel is kicked again.
    struct Left {
        ports: Vec<AfXdp>,
        rx: i32,
        /// Free chunks before the 100 frames.
        free: usize,
    }

    const A: &str = "slxpa";
    const N: u32 = 100;

    impl Left {
        fn new() -> Left {
            // SAFETY: unshare(2) of the calling thread's network namespace.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
            run(&["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"]);
            let q = ["numtxqueues", "1", "numrxqueues", "1"];
            let mut add = vec!["ip", "link", "add", A];
            add.extend(q);
            add.extend(["type", "veth", "peer", "name", "slxpb"]);
            add.extend(q);
            run(&add);
            run(&["ip", "link", "set", A, "up"]);
            run(&["ip", "link", "set", "slxpb", "up"]);
            wait_oper(A, "UP");
            let rx = listener("slxpb");
            let mut ports = AfXdp::open_queues(A, 1, true, None).unwrap();
            let s = &mut ports[0].socks[0];
            assert!(!s.zero_copy, "veth is copy-only");
            let free = s.umem.free_chunks();
            for seq in 0..N {
                let f = frame(seq);
                let addr = s.umem.alloc().unwrap();
                let d = Desc {
                    addr,
                    len: f.len() as u32,
                };
                // SAFETY: a chunk just allocated, held by us alone.
                unsafe { s.umem.chunk_mut(d)[..f.len()].copy_from_slice(&f) };
                s.umem.to_tx(s.id, d);
                // SAFETY: a free slot of the TX ring (it is empty).
                unsafe {
                    *s.tx.slot(s.tx.cached) = XdpDesc {
                        addr,
                        len: d.len,
                        options: 0,
                    }
                };
                s.tx.cached = s.tx.cached.wrapping_add(1);
            }
            s.tx.producer().store(s.tx.cached, Ordering::Release);
            assert_eq!(s.kick().unwrap(), Kick::Again);
            assert_eq!(received_until(rx, 31), (0..32).collect::<Vec<_>>());
            Left { ports, rx, free }
        }

        /// The fixture with A then set down (None: not root, the test is
        /// skipped).
        fn down() -> Option<Left> {
            if !root() {
                return None;
            }
            let t = Left::new();
            run(&["ip", "link", "set", A, "down"]);
            Some(t)
        }

        fn sock(&mut self) -> &mut Socket {
            &mut self.ports[0].socks[0]
        }

        /// The purge starts at the consumer index the kernel published:
        /// past the 32 it sent, or (a kernel that publishes it only once
        /// it runs out) before them.
        fn assert_purged(&mut self) {
            let purged = self.sock().purge.as_ref().map_or(0, |p| p.descs.len()) as u32;
            assert!(purged == N - 32 || purged == N, "{purged} purged");
        }

        /// The link comes back; `settle` resolves the purge: nothing of it
        /// reaches B before the frame `tx` then sends, exactly 32 were
        /// counted sent (with the new one, 33) and 68 dropped, and every
        /// chunk comes back.
        fn up_and_check(&mut self, settle: fn(&mut Socket)) {
            run(&["ip", "link", "set", A, "up"]);
            wait_oper(A, "UP");
            settle(self.sock());
            assert_eq!(self.sock().tx(&[TxFrame::Bytes(&frame(2000))]).unwrap(), 1);
            assert!(self.sock().purge.is_none());
            assert_eq!(
                received_until(self.rx, 2000),
                [2000],
                "purged frames were sent late"
            );
            self.sock().settle();
            assert_eq!(
                std::mem::take(&mut self.sock().settled_tx),
                crate::TxSettled {
                    sent: 33,
                    bytes: 33 * 60,
                    dropped: (N - 32) as u64,
                }
            );
            let (free, t) = (self.free, Instant::now());
            while self.sock().umem.free_chunks() != free {
                assert!(
                    t.elapsed() < Duration::from_secs(5),
                    "{} chunks free, {free} before",
                    self.sock().umem.free_chunks()
                );
                self.sock().reap();
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    impl Drop for Left {
        fn drop(&mut self) {
            // SAFETY: closing the listener opened in `new`.
            unsafe { libc::close(self.rx) };
        }
    }

    /// Link down: the next send is refused (its frame taken back) and
    /// what is left is purged, not sent when the link comes back.
    #[test]
    fn frames_left_on_the_ring_when_the_link_goes_down_are_purged_not_sent_late() {
        let Some(mut t) = Left::down() else {
            return;
        };
        assert_eq!(t.sock().tx(&[TxFrame::Bytes(&frame(1000))]).unwrap(), 0);
        t.assert_purged();
        t.up_and_check(|_| {});
    }

    /// The same when no send comes while the link is down (the worker
    /// stops sending to a port it sees down): the kick before the worker
    /// sleeps purges, and the one after the link is back resolves it.
    #[test]
    fn the_idle_kick_purges_too() {
        let Some(mut t) = Left::down() else {
            return;
        };
        t.sock().before_wait();
        t.assert_purged();
        t.up_and_check(Socket::before_wait);
    }

    /// A port closed while frames are left on its ring and the link is
    /// down counts each of them once: sent or dropped.
    #[test]
    fn a_port_closed_with_frames_left_counts_each_once() {
        let Some(mut t) = Left::down() else {
            return;
        };
        t.ports[0].close_tx();
        let c = t.ports[0].take_tx_settled();
        assert_eq!(c.sent + c.dropped, N as u64, "{c:?}");
        assert!(c.dropped >= (N - 32) as u64, "{c:?}");
    }
}
