//! One AF_XDP socket: its rings and UMEM binding, receiving, sending,
//! kicking the kernel, and settling what it took (the purge of a ring
//! the kernel stopped draining, counting at completion).
//!
//! One job in one file: everything that touches one socket's rings.

use super::*;

/// An `AF_XDP` socket on one receive queue of an interface.
pub(super) struct Socket {
    pub(super) name: String,
    pub(super) fd: i32,
    pub(super) umem: Arc<Umem>,
    /// This socket's id in its UMEM's chunk table.
    pub(super) id: u32,
    pub(super) rx: Ring<XdpDesc>,
    pub(super) tx: Ring<XdpDesc>,
    pub(super) fill: Ring<u64>,
    pub(super) comp: Ring<u64>,
    /// Chunks in the fill ring (given to the kernel, not yet received).
    pub(super) in_fill: u32,
    /// This socket's own fill target once it has been busy (0 before):
    /// above the UMEM's even share, up to [`umem::FILL_MAX`].
    pub(super) boost: u32,
    /// What the last refill aimed the fill ring at (a receive call has
    /// work to do while `in_fill` is below it: the UMEM was short).
    pub(super) aim: u32,
    /// Scratch for the chunks going to the fill ring.
    pub(super) stock: Vec<u64>,
    /// Descriptors refused since `take_rx_errors` last ran.
    pub(super) rx_errors: u64,
    pub(super) zero_copy: bool,
    /// TX ring index up to which every descriptor's fate (sent or dropped)
    /// is counted in `settled_tx`: the kernel's published consumer index
    /// passed it (or a purge was resolved past it).
    pub(super) settled: u32,
    /// Frames the kernel took and dropped (`EBUSY`) that `settle` has not
    /// counted yet (they are among the descriptors it consumed).
    pub(super) busy_drops: u32,
    /// Descriptors purged from the TX ring when the link went down, until
    /// the kernel has gone past them.
    pub(super) purge: Option<Purge>,
    /// What `settle` counted since [`Port::take_tx_settled`] last ran.
    pub(super) settled_tx: crate::TxSettled,
    /// When a purge last failed to resolve with the link up.
    pub(super) purge_stalled: Option<std::time::Instant>,
}

/// How long a purge the kernel made no progress on waits before it is
/// kicked again.
pub(super) const PURGE_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

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
pub(super) struct Purge {
    /// The ring index of the first purged descriptor.
    pub(super) from: u32,
    /// The original descriptors, in ring order from `from`.
    pub(super) descs: Vec<XdpDesc>,
    /// `tx_invalid_descs` when the range was purged.
    pub(super) invalid_before: u64,
}

/// The descriptor that takes a purged one's place: no chunk (an address
/// past any UMEM) and no length, which the kernel refuses and skips.
pub(super) const PURGED: XdpDesc = XdpDesc {
    addr: u64::MAX - (FRAME - 1),
    len: 0,
    options: 0,
};

/// What one kick of the TX ring did.
#[derive(Debug, PartialEq)]
pub(super) enum Kick {
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

pub(super) fn err(name: &str, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{name}: AF_XDP: {what}: {e}"))
}

pub(super) fn sockopt<T>(fd: i32, opt: libc::c_int, v: &T) -> io::Result<()> {
    crate::os::setsockopt(fd, SOL_XDP, opt, v)
}

/// `sockaddr_xdp` flag: bind to the UMEM of the socket `shared_umem_fd`.
pub(super) const XDP_SHARED_UMEM: u16 = 1 << 0;

impl Socket {
    /// A socket on queue `queue` of interface `ifindex`, in `umem`: it
    /// registers the UMEM if no bound socket has it, else shares it
    /// through the first one's descriptor.
    pub(super) fn open(
        name: &str,
        ifindex: i32,
        queue: u32,
        umem: &Arc<Umem>,
    ) -> io::Result<Socket> {
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
    pub(super) fn refill(&mut self, target: u32) {
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
    pub(super) fn reap(&mut self) {
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

    pub(super) fn kick(&self) -> io::Result<Kick> {
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
    pub(super) fn rx(&mut self, out: &mut Vec<Desc>, max: usize) -> usize {
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
    pub(super) fn rx_ready(&self) -> bool {
        self.rx.producer().load(Ordering::Acquire) != self.rx.cached
            || self.in_fill < self.aim
            || (self.zero_copy && self.fill.needs_wakeup())
    }

    /// What a `poll(2)` on the socket would have done before sleeping
    /// (the worker sleeps in epoll, which looks at a socket only when it
    /// signals): frames a kick left on the TX ring are kicked again (a
    /// purge is driven to its end), and a zero-copy driver that asks for it
    /// is woken for the fill ring. What the kicks settle is counted.
    pub(super) fn before_wait(&mut self) {
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
    pub(super) fn wake_fill(&self) {
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
    pub(super) fn tx(&mut self, frames: &[TxFrame]) -> io::Result<usize> {
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
    pub(super) fn settle(&mut self) {
        // A purge starts where counting stopped, and nothing goes on the
        // ring after it: until it is resolved there is nothing to count.
        if self.purge.is_none() {
            self.count_consumed(self.tx.consumer().load(Ordering::Acquire));
        }
    }

    /// Counts the ring's descriptors from `settled` to `upto` as taken by
    /// the kernel: sent, but for the `EBUSY` drops not yet counted.
    pub(super) fn count_consumed(&mut self, upto: u32) {
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
    pub(super) fn purge_ring(&mut self) {
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
    pub(super) fn resolve_purge(&mut self) {
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
    pub(super) fn close_tx(&mut self) {
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
    pub(super) fn tx_invalid_descs(&self) -> Option<u64> {
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
    pub(super) fn take_back(&mut self, from: u32, to: u32) {
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
