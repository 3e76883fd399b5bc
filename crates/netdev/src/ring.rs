//! TPACKET_V2 memory-mapped RX and TX rings on an `AF_PACKET` socket.
//!
//! The kernel writes each received frame into a slot of a ring shared with
//! user space and flips the slot's status word to `TP_STATUS_USER`; the
//! worker copies the frame out and hands the slot back. No system call per
//! batch on receive. On transmit the worker fills slots, marks them
//! `TP_STATUS_SEND_REQUEST` and kicks the kernel with one `send(2)`; the
//! slots the kernel did not take in that kick (link down, no buffer) are
//! taken back at once and counted as dropped by the caller, never left to
//! leave with a later kick ([`Rings::tx_reclaim`]). `PACKET_LOSS` is on, so
//! a frame the kernel refuses is dropped rather than stopping the ring.
//!
//! The kernel's slot headers are not trusted to stay inside the slot: a
//! frame offset or length that would leave it is skipped, not followed.
//!
//! Why V2 and not V3: V3 hands whole blocks to user space, only when a block
//! is full or after its retire timer (at least 1 ms) fires, which adds up to
//! a millisecond of delay at light load; V2 hands out every frame as soon as
//! it is written. Slots are 2 KB for a standard MTU, larger (a power of
//! two) for a jumbo MTU; a frame longer than its slot arrives truncated
//! (`tp_len` > `tp_snaplen`), and is dropped and counted, never forwarded
//! cut ([`RxFrame::truncated`]).
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
const PACKET_LOSS: libc::c_int = 14;
const TPACKET_V2: libc::c_int = 1;

const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_SENDING: u32 = 2;
const TP_STATUS_WRONG_FORMAT: u32 = 4;
pub(crate) const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
pub(crate) const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
pub(crate) const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;

/// Slot size for a standard MTU: a frame plus the slot header fit in 2 KB.
pub(crate) const FRAME_SIZE: usize = 2048;
/// Blocks of at least 64 KB, a whole number of slots each, contiguous, so
/// slot i is at i * slot size.
const BLOCK_SIZE: usize = 1 << 16;
/// Room in a slot before the frame: the header, aligned, plus the offset
/// the kernel leaves so that the network header is aligned.
const SLOT_OVERHEAD: usize = 96;

/// The slot size for frames of up to `frame` bytes: a power of two, 2 KB
/// at least.
pub(crate) fn slot_size(frame: usize) -> usize {
    (frame + SLOT_OVERHEAD).next_power_of_two().max(FRAME_SIZE)
}
/// Where a TX frame's data starts in its slot (TPACKET2_HDRLEN minus
/// sizeof(sockaddr_ll), as the kernel expects without PACKET_TX_HAS_OFF).
const TX_DATA: usize = 32;

/// A received frame's metadata: where its bytes are and its VLAN tag.
pub(crate) struct RxFrame<'a> {
    pub data: &'a [u8],
    /// (TPID, TCI) of a tag the kernel took off the frame.
    pub vlan: Option<(u16, u16)>,
    /// The frame was longer than the slot (`data` is its start only).
    pub truncated: bool,
    /// The sender left the checksum for the hardware to finish
    /// (TP_STATUS_CSUMNOTREADY): the frame carries an unfinished one.
    pub csum_partial: bool,
}

/// The RX ring and, optionally, the TX ring of one socket.
pub(crate) struct Rings {
    base: *mut u8,
    size: usize,
    /// Bytes per slot.
    slot: usize,
    rx_nr: usize,
    rx_next: usize,
    tx_nr: usize,
    tx_next: usize,
}

// SAFETY: the mapping belongs to this value alone; it is used by one thread
// at a time (the port that owns it), the kernel being the only other party.
unsafe impl Send for Rings {}

fn setsockopt<T>(fd: i32, opt: libc::c_int, v: &T) -> io::Result<()> {
    crate::os::setsockopt(fd, libc::SOL_PACKET, opt, v)
}

impl Rings {
    /// Sets up rings of `rx_frames` and `tx_frames` slots of `slot` bytes
    /// (a power of two, 2 KB at least; counts rounded down to whole blocks,
    /// at least one; `tx_frames` may be 0) on `fd`, which must not be bound
    /// yet for the TX ring to take effect on all kernels.
    pub(crate) fn new(
        fd: i32,
        rx_frames: usize,
        tx_frames: usize,
        slot: usize,
    ) -> io::Result<Rings> {
        let block = BLOCK_SIZE.max(slot);
        let per_block = block / slot;
        setsockopt(fd, PACKET_VERSION, &TPACKET_V2)?;
        // A TX frame the kernel refuses (shorter than an Ethernet header,
        // longer than the MTU) is dropped by the kernel and the ring moves
        // on, instead of stopping there with the slot marked WRONG_FORMAT
        // (must be set before the rings exist).
        setsockopt(fd, PACKET_LOSS, &1 as &libc::c_int)?;
        let req = |n: usize| Req {
            block_size: block as u32,
            block_nr: (n / per_block) as u32,
            frame_size: slot as u32,
            frame_nr: (n / per_block * per_block) as u32,
        };
        let whole = |n: usize| (n / per_block).max(1) * per_block;
        let (rx_nr, tx_nr) = (
            whole(rx_frames),
            if tx_frames == 0 { 0 } else { whole(tx_frames) },
        );
        setsockopt(fd, PACKET_RX_RING, &req(rx_nr))?;
        if tx_nr > 0 {
            setsockopt(fd, PACKET_TX_RING, &req(tx_nr))?;
        }
        let size = (rx_nr + tx_nr) * slot;
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
            slot,
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
        unsafe { self.base.add(i * self.slot) as *mut Hdr2 }
    }

    fn status(&self, h: *mut Hdr2) -> &AtomicU32 {
        // SAFETY: tp_status is the first, 4-byte aligned field of a slot
        // inside the mapping, which lives as long as `self`; the kernel
        // writes it concurrently, hence atomic access.
        unsafe { AtomicU32::from_ptr(h as *mut u32) }
    }

    /// Whether the next RX slot holds a frame (one load of its status).
    pub(crate) fn rx_ready(&self) -> bool {
        self.status(self.slot(self.rx_next)).load(Ordering::Acquire) & TP_STATUS_USER != 0
    }

    /// Takes the next received slot, if any: `Some(Some(r))` with what `f`
    /// made of its frame (seen before the slot goes back to the kernel),
    /// `Some(None)` for a slot whose header places the frame outside the
    /// slot (skipped, never followed: the slot goes back unread).
    #[inline]
    pub(crate) fn rx<R>(&mut self, f: impl FnOnce(RxFrame) -> R) -> Option<Option<R>> {
        let h = self.slot(self.rx_next);
        let st = self.status(h);
        let s = st.load(Ordering::Acquire);
        if s & TP_STATUS_USER == 0 {
            return None;
        }
        // SAFETY: the slot is ours until we hand it back (status USER);
        // its header lies inside the mapping.
        let (mac, snaplen, len, tci, tpid) = unsafe {
            (
                (*h).tp_mac as usize,
                (*h).tp_snaplen as usize,
                (*h).tp_len as usize,
                (*h).tp_vlan_tci,
                (*h).tp_vlan_tpid,
            )
        };
        let truncated = len > snaplen;
        let r = frame_bounds(mac, snaplen, self.slot).map(|(start, len)| {
            let vlan = (s & TP_STATUS_VLAN_VALID != 0).then(|| {
                let tpid = if s & TP_STATUS_VLAN_TPID_VALID != 0 {
                    tpid
                } else {
                    0x8100
                };
                (tpid, tci)
            });
            // SAFETY: frame_bounds keeps start..start + len inside the
            // slot, which lies inside the mapping.
            let data = unsafe { std::slice::from_raw_parts((h as *const u8).add(start), len) };
            f(RxFrame {
                data,
                vlan,
                truncated,
                csum_partial: s & TP_STATUS_CSUMNOTREADY != 0,
            })
        });
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
        let len = frame.len().min(self.slot - TX_DATA);
        // SAFETY: the slot is free (status AVAILABLE or WRONG_FORMAT) and
        // TX_DATA + len <= the slot size.
        unsafe {
            std::ptr::copy_nonoverlapping(frame.as_ptr(), (h as *mut u8).add(TX_DATA), len);
            (*h).tp_len = len as u32;
        }
        st.store(TP_STATUS_SEND_REQUEST, Ordering::Release);
        self.tx_next = (self.tx_next + 1) % self.tx_nr;
        true
    }

    /// The next TX slot [`Rings::tx_put`] fills (to hand to
    /// [`Rings::tx_reclaim`] after the kick).
    pub(crate) fn tx_mark(&self) -> usize {
        self.tx_next
    }

    /// After the kick of the `n` frames put since `mark`: how many the
    /// kernel took. The kernel takes TX slots in order from where it left
    /// off and stops at the first it cannot send (device down, no buffer,
    /// a queue full), leaving it and every later one marked SEND_REQUEST;
    /// left there they would leave with the next kick, however much later
    /// that is. So every slot it did not take is handed back here (status
    /// AVAILABLE) and the ring's position rewound to the first of them,
    /// which is where the kernel will look next: the caller counts those
    /// frames as dropped and nothing goes out late.
    pub(crate) fn tx_reclaim(&mut self, mark: usize, n: usize) -> usize {
        let mut taken = n;
        for k in 0..n {
            let i = (mark + k) % self.tx_nr;
            let st = self.status(self.slot(self.rx_nr + i));
            let s = st.load(Ordering::Acquire);
            if s & TP_STATUS_SENDING == 0
                && s & (TP_STATUS_SEND_REQUEST | TP_STATUS_WRONG_FORMAT) != 0
            {
                if taken == n {
                    taken = k;
                }
                // Only this thread kicks the ring, and the kick has
                // returned: the kernel is not looking at the slot.
                st.store(TP_STATUS_KERNEL, Ordering::Release);
            }
        }
        if taken < n {
            self.tx_next = (mark + taken) % self.tx_nr;
        }
        taken
    }
}

/// Where a received frame lies in its slot, from the kernel's `tp_mac`
/// and `tp_snaplen`: after the slot header and wholly inside the slot, or
/// None (the slot is skipped, not followed).
fn frame_bounds(mac: usize, snaplen: usize, slot: usize) -> Option<(usize, usize)> {
    let end = mac.checked_add(snaplen)?;
    (mac >= std::mem::size_of::<Hdr2>() && end <= slot).then_some((mac, snaplen))
}

impl Drop for Rings {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in new().
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.size) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rings over anonymous memory, playing the kernel's part by hand.
    fn anonymous(rx_nr: usize, tx_nr: usize) -> Rings {
        let size = (rx_nr + tx_nr) * FRAME_SIZE;
        // SAFETY: an anonymous mapping, checked; unmapped by Drop.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        Rings {
            base: base as *mut u8,
            size,
            slot: FRAME_SIZE,
            rx_nr,
            rx_next: 0,
            tx_nr,
            tx_next: 0,
        }
    }

    /// The kernel's side: a received frame in RX slot `i`.
    fn kernel_rx(r: &Rings, i: usize, mac: u16, snaplen: u32, byte: u8) {
        let h = r.slot(i);
        // SAFETY: slot i is inside the test mapping.
        unsafe {
            (*h).tp_mac = mac;
            (*h).tp_snaplen = snaplen;
            let start = (mac as usize).min(FRAME_SIZE);
            let len = (snaplen as usize).min(FRAME_SIZE - start);
            std::ptr::write_bytes((h as *mut u8).add(start), byte, len);
        }
        r.status(h).store(TP_STATUS_USER, Ordering::Release);
    }

    #[test]
    fn a_frame_longer_than_its_slot_is_reported_truncated() {
        let mut r = anonymous(32, 0);
        kernel_rx(&r, 0, 66, 100, 0xaa);
        // The kernel copied what fits and says how long the frame was.
        kernel_rx(&r, 1, 66, (FRAME_SIZE - 66) as u32, 0xbb);
        // SAFETY: slot 1 is inside the test mapping.
        unsafe { (*r.slot(1)).tp_len = 60_000 };
        let got: Vec<(usize, bool)> = std::iter::from_fn(|| r.rx(|f| (f.data.len(), f.truncated)))
            .map(Option::unwrap)
            .collect();
        assert_eq!(got, vec![(100, false), (FRAME_SIZE - 66, true)]);
    }

    fn tx_status(r: &Rings, i: usize) -> u32 {
        r.status(r.slot(r.rx_nr + i)).load(Ordering::Acquire)
    }

    #[test]
    fn a_slot_whose_offsets_leave_it_is_skipped_and_handed_back() {
        let mut r = anonymous(32, 0);
        kernel_rx(&r, 0, 66, 60, 0xaa);
        kernel_rx(&r, 1, 65_000, 60, 0); // tp_mac past the slot
        kernel_rx(&r, 2, 66, 4000, 0); // tp_snaplen past the slot
        kernel_rx(&r, 3, 4, 60, 0); // inside the slot header
        kernel_rx(&r, 4, 66, 60, 0xbb);
        let mut got = Vec::new();
        while let Some(x) = r.rx(|f| f.data.to_vec()) {
            got.push(x);
        }
        assert_eq!(got.len(), 5);
        assert_eq!(got[0], Some(vec![0xaa; 60]));
        assert!(got[1..4].iter().all(Option::is_none));
        assert_eq!(got[4], Some(vec![0xbb; 60]));
        // Every slot went back to the kernel.
        for i in 0..5 {
            assert_eq!(
                r.status(r.slot(i)).load(Ordering::Acquire),
                TP_STATUS_KERNEL
            );
        }
    }

    #[test]
    fn frames_the_kernel_did_not_take_are_reclaimed_and_the_ring_rewound() {
        let mut r = anonymous(32, 32);
        // A first batch the kernel sends whole.
        let mark = r.tx_mark();
        for _ in 0..3 {
            assert!(r.tx_put(&[1; 60]));
        }
        for i in 0..3 {
            r.status(r.slot(32 + i))
                .store(TP_STATUS_KERNEL, Ordering::Release);
        }
        assert_eq!(r.tx_reclaim(mark, 3), 3);
        // A second batch: the kernel takes two (one still SENDING) and
        // stops at the third (link down, no buffer...).
        let mark = r.tx_mark();
        assert_eq!(mark, 3);
        for _ in 0..5 {
            assert!(r.tx_put(&[2; 60]));
        }
        r.status(r.slot(32 + 3))
            .store(TP_STATUS_KERNEL, Ordering::Release);
        r.status(r.slot(32 + 4))
            .store(TP_STATUS_SENDING, Ordering::Release);
        r.status(r.slot(32 + 5))
            .store(TP_STATUS_WRONG_FORMAT, Ordering::Release);
        assert_eq!(r.tx_reclaim(mark, 5), 2);
        // Nothing is left to leave with a later kick...
        for i in 5..8 {
            assert_eq!(tx_status(&r, i), TP_STATUS_KERNEL, "slot {i}");
        }
        assert_eq!(tx_status(&r, 4), TP_STATUS_SENDING);
        // ...and the next frame goes where the kernel will look next.
        assert_eq!(r.tx_mark(), 5);
        assert!(r.tx_put(&[3; 60]));
        assert_eq!(tx_status(&r, 5), TP_STATUS_SEND_REQUEST);
    }

    #[test]
    fn reclaim_wraps_around_the_ring() {
        let mut r = anonymous(32, 32);
        for _ in 0..30 {
            assert!(r.tx_put(&[0; 60]));
        }
        for i in 0..30 {
            r.status(r.slot(32 + i))
                .store(TP_STATUS_KERNEL, Ordering::Release);
        }
        let mark = r.tx_mark();
        for _ in 0..4 {
            assert!(r.tx_put(&[0; 60]));
        }
        // The kernel took slots 30 and 31, not 0 and 1.
        r.status(r.slot(32 + 30))
            .store(TP_STATUS_KERNEL, Ordering::Release);
        r.status(r.slot(32 + 31))
            .store(TP_STATUS_KERNEL, Ordering::Release);
        assert_eq!(r.tx_reclaim(mark, 4), 2);
        assert_eq!(r.tx_mark(), 0);
        assert_eq!(tx_status(&r, 0), TP_STATUS_KERNEL);
        assert_eq!(tx_status(&r, 1), TP_STATUS_KERNEL);
    }

    #[test]
    fn frame_offsets_outside_the_slot_are_refused() {
        assert_eq!(frame_bounds(66, 60, FRAME_SIZE), Some((66, 60)));
        assert_eq!(
            frame_bounds(66, FRAME_SIZE - 66, FRAME_SIZE),
            Some((66, FRAME_SIZE - 66))
        );
        // Inside the slot header, past the slot's end, or wrapping.
        assert_eq!(frame_bounds(8, 60, FRAME_SIZE), None);
        assert_eq!(frame_bounds(66, FRAME_SIZE, FRAME_SIZE), None);
        assert_eq!(frame_bounds(65_535, 0, FRAME_SIZE), None);
        assert_eq!(frame_bounds(66, usize::MAX, FRAME_SIZE), None);
    }
}
