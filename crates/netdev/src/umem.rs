//! A UMEM: the memory AF_XDP sockets receive into and send from, shared
//! by the sockets of one worker so that forwarding a frame from one
//! AF_XDP port to another is a descriptor move, not a copy.
//!
//! The area is cut into [`FRAME`]-byte chunks. Each chunk is in exactly
//! one place, kept in [`Umem`]'s table: free; in socket `s`'s fill ring
//! (the kernel may receive into it); held by the worker (received, or
//! being filled to send); on socket `s`'s TX ring (until the kernel gives
//! it back through `s`'s completion ring). Every descriptor the kernel
//! hands back is checked against that table: a receive descriptor whose
//! chunk is not in that socket's fill ring, or a completion for a chunk
//! not on its TX ring, is refused (counted as a receive error by the
//! socket), so a bad index can never make two users share a chunk or point
//! outside the area.
//!
//! Borrowed receive: [`ZcBatch`] holds received chunks; the pipeline edits
//! a frame where it lies through [`UmemFrame`] (a [`packet::FrameBuf`]:
//! pushes take the headroom the kernel leaves in front of a received frame,
//! or the room behind it; a frame that outgrows its chunk moves to a `Vec`
//! of its own). [`ZcBatch::take`] hands a chunk on to a TX ring of the same
//! UMEM ([`crate::Port::send_zc`]); whatever is not taken goes back to the
//! free list when the batch is released. No chunk is zero-filled: a
//! received frame's bytes are the kernel's, and only bytes within a frame
//! are ever read.
//!
//! Threads: the worker that owns the UMEM's sockets does all the receiving
//! and sending; the control thread opens and closes sockets (which stocks
//! and reclaims fill rings). The table is atomics and the free list a
//! mutex taken once per receive or send call, never contended in steady
//! state.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use packet::FrameBuf;

/// Chunk size: a frame plus the kernel's 256-byte headroom.
pub const FRAME: u64 = 2048;
/// Chunks in a worker's shared UMEM (16 MiB).
pub const SHARED_CHUNKS: u32 = 8192;
/// The most chunks one socket keeps in its fill ring. A socket starts at
/// its even share of half the area, at most [`FILL_START`], and when it is
/// busy (the kernel had used three quarters of its fill ring by the next
/// receive) doubles its own target up to this, from what the free list
/// holds beyond [`Umem::busy_reserve`]; below [`FILL_FLOOR`] it refills
/// from the reserve too, so no socket is starved while chunks are free.
/// Measured (docs/PERFORMANCE.md): a fixed share of half the area split
/// evenly left the two busy ports of 32 (64 sockets) 64 chunks each, and
/// TCP lost a quarter of its throughput; stocking each new socket with
/// its share of the sockets open so far overcommitted the area (the first
/// sockets kept 512 each) and a 32-port bridge stalled.
pub const FILL_MAX: u32 = 512;
/// A socket's fill target before it is busy (at most).
pub const FILL_START: u32 = 64;
/// A socket refills up to this even from the reserve.
pub const FILL_FLOOR: u32 = 32;

const FREE: u32 = 0;
const HELD: u32 = 1;

fn in_fill(s: u32) -> u32 {
    2 + 2 * s
}
fn on_tx(s: u32) -> u32 {
    3 + 2 * s
}

/// A receive or transmit descriptor: where a frame's bytes start in the
/// UMEM (a chunk's base plus an offset) and how many.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    pub addr: u64,
    pub len: u32,
}

impl Desc {
    fn chunk(&self) -> u64 {
        self.addr / FRAME
    }
    fn offset(&self) -> usize {
        (self.addr % FRAME) as usize
    }
}

/// A hint to load the cache line at `p` (any address: a prefetch never
/// faults, and nothing is read through `p` here).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch has no effect on memory and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// One UMEM area and the place of each of its chunks.
pub struct Umem {
    area: *mut u8,
    len: usize,
    chunks: u32,
    state: Vec<AtomicU32>,
    free: Mutex<Vec<u32>>,
    /// The bound sockets (id, fd): a new socket shares the UMEM through
    /// the first one's descriptor, and registers it afresh when none is
    /// left (the kernel drops its registration with the last socket).
    pub(crate) sockets: Mutex<Vec<(u32, i32)>>,
    next_id: AtomicU32,
    /// Whether the registering socket bound zero-copy (sharers inherit it).
    zero_copy: AtomicBool,
    /// Each socket's fill target ([`Umem::fill_target`]).
    target: AtomicU32,
}

// SAFETY: the area is only reached through the chunk table's protocol
// (one owner per chunk); the table is atomics and the free list a mutex.
unsafe impl Send for Umem {}
unsafe impl Sync for Umem {}

impl Umem {
    /// Maps an area of `chunks` chunks (all free).
    pub fn new(chunks: u32) -> std::io::Result<Arc<Umem>> {
        let len = chunks as usize * FRAME as usize;
        // SAFETY: an anonymous private mapping; checked; unmapped in Drop.
        let area = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if area == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Arc::new(Umem {
            area: area as *mut u8,
            len,
            chunks,
            state: (0..chunks).map(|_| AtomicU32::new(FREE)).collect(),
            free: Mutex::new((0..chunks).rev().collect()),
            sockets: Mutex::new(Vec::new()),
            next_id: AtomicU32::new(0),
            zero_copy: AtomicBool::new(false),
            target: AtomicU32::new((chunks / 2).clamp(1, FILL_START)),
        }))
    }

    /// The area's address and length (for `XDP_UMEM_REG`).
    pub(crate) fn area(&self) -> (u64, u64) {
        (self.area as u64, self.len as u64)
    }

    pub(crate) fn is_zero_copy(&self) -> bool {
        self.zero_copy.load(Relaxed)
    }

    pub(crate) fn set_zero_copy(&self, zc: bool) {
        self.zero_copy.store(zc, Relaxed);
    }

    /// A fresh socket id.
    pub(crate) fn new_id(&self) -> u32 {
        self.next_id.fetch_add(1, Relaxed)
    }

    /// How many chunks a socket keeps in its fill ring until it is busy:
    /// [`FILL_START`], less when many sockets share the area (half of it
    /// is left for frames held and in flight).
    pub(crate) fn fill_target(&self) -> u32 {
        self.target.load(Relaxed)
    }

    /// Sockets bound now is `n`: each one's share of the fill is set.
    pub(crate) fn set_sockets(&self, n: usize) {
        self.target.store(self.fill_target_for(n), Relaxed);
    }

    /// [`Umem::fill_target`] with `n` sockets bound.
    pub(crate) fn fill_target_for(&self, n: usize) -> u32 {
        (self.chunks / 2 / n.max(1) as u32).clamp(1, FILL_START)
    }

    /// Chunks a busy socket's fill ring may not take from the free list:
    /// an eighth of the area stays for frames held, in flight and copied.
    pub(crate) fn busy_reserve(&self) -> usize {
        self.chunks as usize / 8
    }

    /// Chunks free now (for tests and metrics).
    pub fn free_chunks(&self) -> usize {
        self.free.lock().map(|f| f.len()).unwrap_or(0)
    }

    /// Up to `n` free chunks, now in socket `s`'s fill ring, leaving at
    /// least `keep` free: their base addresses go to `out`.
    pub(crate) fn to_fill(&self, s: u32, n: u32, keep: usize, out: &mut Vec<u64>) {
        let Ok(mut free) = self.free.lock() else {
            return;
        };
        let n = n.min(free.len().saturating_sub(keep) as u32);
        for _ in 0..n {
            let Some(c) = free.pop() else { break };
            self.state[c as usize].store(in_fill(s), Relaxed);
            out.push(c as u64 * FRAME);
        }
    }

    /// A receive descriptor from socket `s`'s RX ring: accepted (the chunk
    /// now held by the worker) if its chunk is in `s`'s fill ring and its
    /// bytes lie within the chunk.
    pub(crate) fn received(&self, s: u32, d: Desc) -> bool {
        d.chunk() < self.chunks as u64
            && (d.offset() as u64 + d.len as u64) <= FRAME
            && self.state[d.chunk() as usize]
                .compare_exchange(in_fill(s), HELD, Relaxed, Relaxed)
                .is_ok()
    }

    /// A free chunk, now held (to copy a frame into before sending).
    pub(crate) fn alloc(&self) -> Option<u64> {
        let c = self.free.lock().ok()?.pop()?;
        self.state[c as usize].store(HELD, Relaxed);
        Some(c as u64 * FRAME)
    }

    /// A held chunk goes on socket `s`'s TX ring.
    pub(crate) fn to_tx(&self, s: u32, d: Desc) -> bool {
        d.chunk() < self.chunks as u64
            && self.state[d.chunk() as usize]
                .compare_exchange(HELD, on_tx(s), Relaxed, Relaxed)
                .is_ok()
    }

    /// A completion from socket `s`: the chunk goes back to the free list
    /// if it was on `s`'s TX ring (else the address is ignored).
    pub(crate) fn completed(&self, s: u32, addr: u64) -> bool {
        self.release_if(addr / FRAME, on_tx(s))
    }

    /// Held chunks go back to the free list.
    pub fn free_held(&self, addrs: impl IntoIterator<Item = u64>) {
        let Ok(mut free) = self.free.lock() else {
            return;
        };
        for a in addrs {
            let c = a / FRAME;
            if c < self.chunks as u64
                && self.state[c as usize]
                    .compare_exchange(HELD, FREE, Relaxed, Relaxed)
                    .is_ok()
            {
                free.push(c as u32);
            }
        }
    }

    fn release_if(&self, c: u64, from: u32) -> bool {
        if c >= self.chunks as u64
            || self.state[c as usize]
                .compare_exchange(from, FREE, Relaxed, Relaxed)
                .is_err()
        {
            return false;
        }
        if let Ok(mut free) = self.free.lock() {
            free.push(c as u32);
        }
        true
    }

    /// Socket `s` is closed: the chunks in its fill ring and on its TX
    /// ring come back (the kernel let go of them with the socket).
    pub(crate) fn reclaim(&self, s: u32) {
        for c in 0..self.chunks as u64 {
            let st = self.state[c as usize].load(Relaxed);
            if st == in_fill(s) || st == on_tx(s) {
                self.release_if(c, st);
            }
        }
    }

    /// The whole chunk a held descriptor lies in.
    ///
    /// # Safety
    /// The chunk must be held by the caller (received or allocated, not
    /// yet freed or sent), with no other reference to it alive.
    #[allow(clippy::mut_from_ref)] // exclusive by the chunk table, not by the borrow
    pub(crate) unsafe fn chunk_mut(&self, d: Desc) -> &mut [u8] {
        debug_assert_eq!(self.state[d.chunk() as usize].load(Relaxed), HELD);
        // SAFETY: the chunk lies inside the area (checked when it was
        // received or allocated); the caller holds it alone.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.area.add((d.chunk() * FRAME) as usize),
                FRAME as usize,
            )
        }
    }

    /// [`Umem::chunk_mut`], to read.
    ///
    /// # Safety
    /// As for `chunk_mut`, with no mutable reference to the chunk alive.
    unsafe fn chunk(&self, d: Desc) -> &[u8] {
        // SAFETY: as in chunk_mut.
        unsafe {
            std::slice::from_raw_parts(self.area.add((d.chunk() * FRAME) as usize), FRAME as usize)
        }
    }

    fn is_held(&self, d: Desc) -> bool {
        d.chunk() < self.chunks as u64 && self.state[d.chunk() as usize].load(Relaxed) == HELD
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: unmapping the area mapped in new(); every socket that
        // used it holds an Arc, so none is left.
        unsafe { libc::munmap(self.area as *mut libc::c_void, self.len) };
    }
}

/// Frames received into a UMEM and held by the worker until they are
/// sent on ([`ZcBatch::take`]) or released.
#[derive(Default)]
pub struct ZcBatch {
    umem: Option<Arc<Umem>>,
    descs: Vec<Desc>,
    /// A frame that outgrew its chunk, moved to a `Vec` of its own.
    spill: Vec<Option<Vec<u8>>>,
    taken: Vec<bool>,
}

impl ZcBatch {
    /// Frames held.
    pub fn len(&self) -> usize {
        self.descs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.descs.is_empty()
    }

    /// The UMEM the frames are in.
    pub fn umem(&self) -> Option<&Arc<Umem>> {
        self.umem.as_ref()
    }

    /// Frame `i`, to edit in place.
    pub fn frame(&mut self, i: usize) -> UmemFrame<'_> {
        let umem = self.umem.as_ref().expect("frames come with their UMEM");
        let d = &mut self.descs[i];
        // SAFETY: the batch holds every chunk in `descs` (received and
        // checked by the socket, not yet taken or released: a taken frame
        // is never edited again, as `take` is the last use), and `&mut
        // self` makes this the only reference to it.
        let chunk = unsafe { umem.chunk_mut(*d) };
        UmemFrame {
            chunk,
            desc: d,
            spill: &mut self.spill[i],
        }
    }

    /// Frame `i`'s bytes.
    pub fn bytes(&self, i: usize) -> &[u8] {
        if let Some(v) = &self.spill[i] {
            return v;
        }
        let umem = self.umem.as_ref().expect("frames come with their UMEM");
        // SAFETY: the batch holds the chunk (as in `frame`; a taken chunk
        // stays held until the round's flush, after its last read), and
        // `&self` rules out a `UmemFrame` of it meanwhile.
        let chunk = unsafe { umem.chunk(self.descs[i]) };
        let d = self.descs[i];
        &chunk[d.offset()..d.offset() + d.len as usize]
    }

    /// Hands frame `i`'s chunk on (to a TX ring of the same UMEM): None if
    /// it was taken already or outgrew its chunk (then send its bytes).
    pub fn take(&mut self, i: usize) -> Option<Desc> {
        if self.taken[i] || self.spill[i].is_some() {
            return None;
        }
        self.taken[i] = true;
        Some(self.descs[i])
    }

    /// Undoes [`ZcBatch::take`] for a chunk that was not sent on after
    /// all: it goes back with the batch.
    pub fn untake(&mut self, i: usize) {
        self.taken[i] = false;
    }

    /// Starts a new batch from `umem`: the chunks of the last batch that
    /// were not taken go back to the free list.
    pub(crate) fn begin(&mut self, umem: &Arc<Umem>) -> &mut Vec<Desc> {
        self.release();
        if !self.umem.as_ref().is_some_and(|u| Arc::ptr_eq(u, umem)) {
            self.umem = Some(umem.clone());
        }
        &mut self.descs
    }

    /// Marks the frames `begin` received as held by this batch, and asks
    /// the CPU to start loading each frame's headers (its first two cache
    /// lines): another CPU wrote them, and without this the parse of each
    /// frame in turn would wait for its own cache miss.
    pub(crate) fn received(&mut self) {
        let n = self.descs.len();
        self.spill.clear();
        self.spill.resize(n, None);
        self.taken.clear();
        self.taken.resize(n, false);
        if let Some(u) = &self.umem {
            for d in &self.descs {
                prefetch(u.area.wrapping_add(d.addr as usize));
                prefetch(u.area.wrapping_add(d.addr as usize + 64));
            }
        }
    }

    /// Gives back every chunk not taken; the batch is empty after.
    pub fn release(&mut self) {
        // Most ports of a large bridge receive nothing in a round: no
        // lock of the free list for them.
        if self.descs.is_empty() {
            self.spill.clear();
            self.taken.clear();
            return;
        }
        if let Some(u) = &self.umem {
            u.free_held(
                self.descs
                    .iter()
                    .zip(&self.taken)
                    .filter(|(_, t)| !**t)
                    .map(|(d, _)| d.addr),
            );
        }
        self.descs.clear();
        self.spill.clear();
        self.taken.clear();
    }
}

impl Drop for ZcBatch {
    fn drop(&mut self) {
        self.release();
    }
}

/// A frame in its UMEM chunk, as the pipeline edits it.
pub struct UmemFrame<'a> {
    chunk: &'a mut [u8],
    desc: &'a mut Desc,
    spill: &'a mut Option<Vec<u8>>,
}

impl UmemFrame<'_> {
    fn start(&self) -> usize {
        self.desc.offset()
    }

    fn set(&mut self, start: usize, len: usize) {
        self.desc.addr = self.desc.chunk() * FRAME + start as u64;
        self.desc.len = len as u32;
    }

    /// Moves the frame to a `Vec` of its own (no room left in the chunk).
    fn spilled(&mut self) -> &mut Vec<u8> {
        if self.spill.is_none() {
            let (s, l) = (self.start(), self.desc.len as usize);
            *self.spill = Some(self.chunk[s..s + l].to_vec());
        }
        self.spill.as_mut().expect("just set")
    }
}

impl Deref for UmemFrame<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self.spill.as_deref() {
            Some(v) => v,
            None => {
                let s = self.start();
                &self.chunk[s..s + self.desc.len as usize]
            }
        }
    }
}

impl DerefMut for UmemFrame<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        let (s, l) = (self.start(), self.desc.len as usize);
        match self.spill.as_deref_mut() {
            Some(v) => v,
            None => &mut self.chunk[s..s + l],
        }
    }
}

impl FrameBuf for UmemFrame<'_> {
    fn insert(&mut self, at: usize, bytes: &[u8]) {
        if let Some(v) = self.spill.as_mut() {
            return FrameBuf::insert(v, at, bytes);
        }
        let (s, l, n) = (self.start(), self.desc.len as usize, bytes.len());
        assert!(at <= l, "insert past the frame's end");
        if s >= n {
            // Into the headroom: the bytes before `at` move n back.
            self.chunk.copy_within(s..s + at, s - n);
            self.chunk[s - n + at..s + at].copy_from_slice(bytes);
            self.set(s - n, l + n);
        } else if s + l + n <= self.chunk.len() {
            // Into the tailroom: the bytes from `at` move n on.
            self.chunk.copy_within(s + at..s + l, s + at + n);
            self.chunk[s + at..s + at + n].copy_from_slice(bytes);
            self.set(s, l + n);
        } else {
            FrameBuf::insert(self.spilled(), at, bytes);
        }
    }

    fn remove(&mut self, at: usize, n: usize) {
        if let Some(v) = self.spill.as_mut() {
            return FrameBuf::remove(v, at, n);
        }
        let (s, l) = (self.start(), self.desc.len as usize);
        assert!(at + n <= l, "remove past the frame's end");
        if at < l - at - n {
            // Fewer bytes in front: they move n on.
            self.chunk.copy_within(s..s + at, s + n);
            self.set(s + n, l - n);
        } else {
            self.chunk.copy_within(s + at + n..s + l, s + at);
            self.set(s, l - n);
        }
    }

    fn pad_to(&mut self, len: usize) {
        if let Some(v) = self.spill.as_mut() {
            return v.pad_to(len);
        }
        let (s, l) = (self.start(), self.desc.len as usize);
        if l >= len {
            return;
        }
        if s + len <= self.chunk.len() {
            self.chunk[s + l..s + len].fill(0);
            self.set(s, len);
        } else {
            self.spilled().pad_to(len);
        }
    }
}

/// A frame to send on a UMEM port: bytes to copy in, or a chunk of the
/// port's own UMEM to hand over.
pub enum TxFrame<'a> {
    Bytes(&'a [u8]),
    Chunk(Desc),
}

/// Whether `d` is a chunk of `umem` the worker holds (for sockets to check
/// what they are asked to send).
pub(crate) fn held(umem: &Umem, d: Desc) -> bool {
    umem.is_held(d) && d.offset() as u64 + d.len as u64 <= FRAME
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_of(umem: &Arc<Umem>, frames: &[&[u8]], headroom: usize) -> ZcBatch {
        let mut b = ZcBatch::default();
        let mut addrs = Vec::new();
        umem.to_fill(0, frames.len() as u32, 0, &mut addrs);
        let descs = b.begin(umem);
        for (a, f) in addrs.iter().zip(frames) {
            let d = Desc {
                addr: a + headroom as u64,
                len: f.len() as u32,
            };
            assert!(umem.received(0, d));
            // SAFETY: just received, held by this test alone.
            let c = unsafe { umem.chunk_mut(d) };
            c[headroom..headroom + f.len()].copy_from_slice(f);
            descs.push(d);
        }
        b.received();
        b
    }

    #[test]
    fn a_chunk_is_in_one_place_and_comes_back_once() {
        let u = Umem::new(4).unwrap();
        let mut addrs = Vec::new();
        u.to_fill(7, 2, 0, &mut addrs);
        assert_eq!(u.free_chunks(), 2);
        let d = Desc {
            addr: addrs[0] + 256,
            len: 60,
        };
        // Another socket's descriptor, a chunk past the area, bytes past
        // the chunk: refused.
        assert!(!u.received(8, d));
        assert!(!u.received(
            7,
            Desc {
                addr: 9 * FRAME,
                len: 60
            }
        ));
        assert!(!u.received(
            7,
            Desc {
                addr: addrs[1] + 256,
                len: 1800
            }
        ));
        assert!(u.received(7, d));
        assert!(!u.received(7, d), "received twice");
        assert!(u.to_tx(7, d));
        assert!(!u.completed(8, d.addr));
        assert!(u.completed(7, d.addr));
        assert!(!u.completed(7, d.addr), "completed twice");
        assert_eq!(u.free_chunks(), 3);
        u.reclaim(7);
        assert_eq!(u.free_chunks(), 4);
    }

    #[test]
    fn pushes_use_the_headroom_then_the_tailroom_then_a_vec() {
        let u = Umem::new(2).unwrap();
        let mut b = batch_of(&u, &[&[1, 2, 3, 4]], 4);
        let mut f = b.frame(0);
        f.insert(2, &[9, 9]); // headroom 4 -> 2
        assert_eq!(&*f, &[1, 2, 9, 9, 3, 4]);
        f.insert(0, &[7, 7, 7]); // headroom 2 < 3: tailroom
        assert_eq!(&*f, &[7, 7, 7, 1, 2, 9, 9, 3, 4]);
        f.remove(3, 2);
        assert_eq!(&*f, &[7, 7, 7, 9, 9, 3, 4]);
        f.remove(5, 2);
        assert_eq!(&*f, &[7, 7, 7, 9, 9]);
        f.pad_to(8);
        assert_eq!(&*f, &[7, 7, 7, 9, 9, 0, 0, 0]);
        let big = vec![5u8; FRAME as usize];
        f.insert(8, &big);
        assert_eq!(f.len(), 8 + FRAME as usize);
        assert_eq!(&f[..8], &[7, 7, 7, 9, 9, 0, 0, 0]);
        assert_eq!(b.take(0), None, "a spilled frame is sent as bytes");
        b.release();
        assert_eq!(u.free_chunks(), 2);
    }

    #[test]
    fn a_taken_chunk_stays_held_and_the_rest_go_back() {
        let u = Umem::new(4).unwrap();
        let mut b = batch_of(&u, &[&[1; 60], &[2; 60]], 256);
        let d = b.take(1).unwrap();
        assert_eq!(b.take(1), None);
        assert_eq!(b.bytes(1), &[2; 60]);
        b.release();
        assert_eq!(u.free_chunks(), 3);
        assert!(held(&u, d));
        u.free_held([d.addr]);
        assert_eq!(u.free_chunks(), 4);
    }

    #[test]
    fn edits_match_a_vec() {
        // The same random edits on a Vec and on a UMEM frame give the same
        // bytes, whatever the headroom.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n.max(1) as u64) as usize
        };
        for round in 0..300 {
            let u = Umem::new(1).unwrap();
            let len = 14 + rnd(200);
            let head = [0, 4, 18, 256][round % 4];
            let init: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut b = batch_of(&u, &[&init], head);
            let mut v = init.clone();
            for _ in 0..20 {
                let mut f = b.frame(0);
                match rnd(3) {
                    0 => {
                        let at = rnd(v.len() + 1);
                        let bytes: Vec<u8> = (0..rnd(40)).map(|_| rnd(256) as u8).collect();
                        f.insert(at, &bytes);
                        FrameBuf::insert(&mut v, at, &bytes);
                    }
                    1 if !v.is_empty() => {
                        let at = rnd(v.len());
                        let n = rnd(v.len() - at + 1);
                        f.remove(at, n);
                        FrameBuf::remove(&mut v, at, n);
                    }
                    _ => {
                        let n = rnd(300);
                        f.pad_to(n);
                        v.pad_to(n);
                    }
                }
                assert_eq!(&*f, &v[..]);
            }
        }
    }
}
