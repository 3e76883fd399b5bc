//! TPACKET_V2 memory-mapped RX and TX rings on an `AF_PACKET` socket.
//!
//! The kernel writes each received frame into a slot of a ring shared with
//! user space and flips the slot's status word to `TP_STATUS_USER`; the
//! worker copies the frame out and hands the slot back. No system call per
//! batch on receive. On transmit the worker fills slots, marks them
//! `TP_STATUS_SEND_REQUEST` and kicks the kernel with one `send(2)`.
//!
//! Why V2 and not V3: V3 hands whole blocks to user space, only when a block
//! is full or after its retire timer (at least 1 ms) fires, which adds up to
//! a millisecond of delay at light load; V2 hands out every frame as soon as
//! it is written. Slots are 2 KB (frames up to [`crate::MAX_FRAME`] minus the
//! slot header; longer frames arrive truncated, as with `recvmmsg`).
//!
//! Memory ordering: the status word is the hand-over; it is read with
//! Acquire before the slot's contents and written with Release after them.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

/// `struct tpacket2_hdr` (32 bytes).
#[repr(C)]
struct Hdr2 {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

/// `struct tpacket_req`.
#[repr(C)]
struct Req {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_TX_RING: libc::c_int = 13;
const TPACKET_V2: libc::c_int = 1;

const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_SENDING: u32 = 2;
const TP_STATUS_WRONG_FORMAT: u32 = 4;
pub(crate) const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
pub(crate) const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

/// Slot size: a frame plus the slot header fits in 2 KB.
const FRAME_SIZE: usize = 2048;
/// Blocks of 64 KB: 32 slots each, contiguous, so slot i is at i * FRAME_SIZE.
const BLOCK_SIZE: usize = 1 << 16;
/// Where a TX frame's data starts in its slot (TPACKET2_HDRLEN minus
/// sizeof(sockaddr_ll), as the kernel expects without PACKET_TX_HAS_OFF).
const TX_DATA: usize = 32;

/// A received frame's metadata: where its bytes are and its VLAN tag.
pub(crate) struct RxFrame<'a> {
    pub data: &'a [u8],
    /// (TPID, TCI) of a tag the kernel took off the frame.
    pub vlan: Option<(u16, u16)>,
}

/// The RX ring and, optionally, the TX ring of one socket.
pub(crate) struct Rings {
    base: *mut u8,
    size: usize,
    rx_nr: usize,
    rx_next: usize,
    tx_nr: usize,
    tx_next: usize,
}

// SAFETY: the mapping belongs to this value alone; it is used by one thread
// at a time (the port that owns it), the kernel being the only other party.
unsafe impl Send for Rings {}

fn setsockopt<T>(fd: i32, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` points to a live T of the size passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            opt,
            v as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as u32,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

impl Rings {
    /// Sets up rings of `rx_frames` and `tx_frames` slots (multiples of 32;
    /// `tx_frames` may be 0) on `fd`, which must not be bound yet for the TX
    /// ring to take effect on all kernels.
    pub(crate) fn new(fd: i32, rx_frames: usize, tx_frames: usize) -> io::Result<Rings> {
        let per_block = BLOCK_SIZE / FRAME_SIZE;
        setsockopt(fd, PACKET_VERSION, &TPACKET_V2)?;
        let req = |n: usize| Req {
            block_size: BLOCK_SIZE as u32,
            block_nr: (n / per_block) as u32,
            frame_size: FRAME_SIZE as u32,
            frame_nr: (n / per_block * per_block) as u32,
        };
        let (rx_nr, tx_nr) = (
            rx_frames / per_block * per_block,
            tx_frames / per_block * per_block,
        );
        setsockopt(fd, PACKET_RX_RING, &req(rx_nr))?;
        if tx_nr > 0 {
            setsockopt(fd, PACKET_TX_RING, &req(tx_nr))?;
        }
        let size = (rx_nr + tx_nr) * FRAME_SIZE;
        // SAFETY: mapping the socket's rings, as packet(7) describes; the
        // result is checked and unmapped in Drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Rings {
            base: base as *mut u8,
            size,
            rx_nr,
            rx_next: 0,
            tx_nr,
            tx_next: 0,
        })
    }

    pub(crate) fn has_tx(&self) -> bool {
        self.tx_nr > 0
    }

    /// The header of slot `i` (RX slots first, then TX slots).
    fn slot(&self, i: usize) -> *mut Hdr2 {
        debug_assert!(i < self.rx_nr + self.tx_nr);
        // SAFETY: i < rx_nr + tx_nr, so the slot lies inside the mapping.
        unsafe { self.base.add(i * FRAME_SIZE) as *mut Hdr2 }
    }

    fn status(&self, h: *mut Hdr2) -> &AtomicU32 {
        // SAFETY: tp_status is the first, 4-byte aligned field of a slot
        // inside the mapping, which lives as long as `self`; the kernel
        // writes it concurrently, hence atomic access.
        unsafe { AtomicU32::from_ptr(h as *mut u32) }
    }

    /// Takes the next received frame, if any; `f` sees it before its slot
    /// goes back to the kernel.
    #[inline]
    pub(crate) fn rx<R>(&mut self, f: impl FnOnce(RxFrame) -> R) -> Option<R> {
        let h = self.slot(self.rx_next);
        let st = self.status(h);
        let s = st.load(Ordering::Acquire);
        if s & TP_STATUS_USER == 0 {
            return None;
        }
        // SAFETY: the slot is ours until we hand it back (status USER);
        // tp_mac + tp_snaplen stays inside the slot (the kernel wrote them).
        let r = unsafe {
            let mac = (*h).tp_mac as usize;
            let len = ((*h).tp_snaplen as usize).min(FRAME_SIZE.saturating_sub(mac));
            let vlan = (s & TP_STATUS_VLAN_VALID != 0).then(|| {
                let tpid = if s & TP_STATUS_VLAN_TPID_VALID != 0 {
                    (*h).tp_vlan_tpid
                } else {
                    0x8100
                };
                (tpid, (*h).tp_vlan_tci)
            });
            let data = std::slice::from_raw_parts((h as *const u8).add(mac), len);
            f(RxFrame { data, vlan })
        };
        st.store(TP_STATUS_KERNEL, Ordering::Release);
        self.rx_next = (self.rx_next + 1) % self.rx_nr;
        Some(r)
    }

    /// Puts a frame in the next free TX slot; false when the ring is full.
    #[inline]
    pub(crate) fn tx_put(&mut self, frame: &[u8]) -> bool {
        let h = self.slot(self.rx_nr + self.tx_next);
        let st = self.status(h);
        let s = st.load(Ordering::Acquire);
        if s & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING) != 0 {
            return false;
        }
        let _ = s & TP_STATUS_WRONG_FORMAT; // a refused frame's slot is free again
        let len = frame.len().min(FRAME_SIZE - TX_DATA);
        // SAFETY: the slot is free (status AVAILABLE or WRONG_FORMAT) and
        // TX_DATA + len <= FRAME_SIZE.
        unsafe {
            std::ptr::copy_nonoverlapping(frame.as_ptr(), (h as *mut u8).add(TX_DATA), len);
            (*h).tp_len = len as u32;
        }
        st.store(TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.tx_next = (self.tx_next + 1) % self.tx_nr;
        true
    }
}

impl Drop for Rings {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in new().
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.size) };
    }
}
