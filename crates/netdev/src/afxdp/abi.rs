//! The kernel's AF_XDP interface as this crate uses it: socket options,
//! `mmap` offsets, the descriptor and statistics layouts (`linux/if_xdp.h`),
//! and [`Ring`], one single-producer/single-consumer ring shared with the
//! kernel.

use super::*;

pub(super) const SOL_XDP: libc::c_int = 283;
pub(super) const XDP_MMAP_OFFSETS: libc::c_int = 1;
pub(super) const XDP_RX_RING: libc::c_int = 2;
pub(super) const XDP_TX_RING: libc::c_int = 3;
pub(super) const XDP_UMEM_REG: libc::c_int = 4;
pub(super) const XDP_UMEM_FILL_RING: libc::c_int = 5;
pub(super) const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
pub(super) const XDP_STATISTICS: libc::c_int = 7;
pub(super) const XDP_PGOFF_RX_RING: i64 = 0;
pub(super) const XDP_PGOFF_TX_RING: i64 = 0x8000_0000;
pub(super) const XDP_UMEM_PGOFF_FILL_RING: i64 = 0x1_0000_0000;
pub(super) const XDP_UMEM_PGOFF_COMPLETION_RING: i64 = 0x1_8000_0000;
pub(super) const XDP_COPY: u16 = 1 << 1;
pub(super) const XDP_ZEROCOPY: u16 = 1 << 2;
pub(super) const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;
pub(super) const XDP_RING_NEED_WAKEUP: u32 = 1;

/// Ring entries for receiving and for sending (and the chunks of a UMEM a
/// socket has to itself: as many again).
pub(super) const RX_FRAMES: u32 = 512;
pub(super) const TX_FRAMES: u32 = 512;

#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(super) struct RingOffset {
    pub(super) producer: u64,
    pub(super) consumer: u64,
    pub(super) desc: u64,
    pub(super) flags: u64,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
pub(super) struct MmapOffsets {
    pub(super) rx: RingOffset,
    pub(super) tx: RingOffset,
    pub(super) fr: RingOffset,
    pub(super) cr: RingOffset,
}

#[repr(C)]
pub(super) struct UmemReg {
    pub(super) addr: u64,
    pub(super) len: u64,
    pub(super) chunk_size: u32,
    pub(super) headroom: u32,
    pub(super) flags: u32,
    pub(super) tx_metadata_len: u32,
}

/// The first fields of `struct xdp_statistics` (all the kernel needs to
/// be asked for: `struct xdp_statistics_v1`).
#[repr(C)]
#[derive(Default)]
pub(super) struct XdpStatistics {
    pub(super) rx_dropped: u64,
    pub(super) rx_invalid_descs: u64,
    pub(super) tx_invalid_descs: u64,
}

/// `struct xdp_desc`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct XdpDesc {
    pub(super) addr: u64,
    pub(super) len: u32,
    pub(super) options: u32,
}

#[repr(C)]
pub(super) struct SockaddrXdp {
    pub(super) family: u16,
    pub(super) flags: u16,
    pub(super) ifindex: u32,
    pub(super) queue_id: u32,
    pub(super) shared_umem_fd: u32,
}

/// One mapped ring of `T` descriptors.
pub(super) struct Ring<T> {
    pub(super) map: *mut u8,
    pub(super) map_len: usize,
    pub(super) producer: *const AtomicU32,
    pub(super) consumer: *const AtomicU32,
    pub(super) flags: *const AtomicU32,
    pub(super) desc: *mut T,
    pub(super) mask: u32,
    /// Our copy of the index we own (the producer's or the consumer's).
    pub(super) cached: u32,
}

impl<T> Ring<T> {
    pub(super) fn map(fd: i32, off: &RingOffset, entries: u32, pgoff: i64) -> io::Result<Ring<T>> {
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

    pub(super) fn producer(&self) -> &AtomicU32 {
        // SAFETY: points into the mapping, which lives as long as self.
        unsafe { &*self.producer }
    }

    pub(super) fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as above.
        unsafe { &*self.consumer }
    }

    pub(super) fn needs_wakeup(&self) -> bool {
        // SAFETY: as above.
        unsafe { &*self.flags }.load(Ordering::Relaxed) & XDP_RING_NEED_WAKEUP != 0
    }

    pub(super) fn slot(&self, i: u32) -> *mut T {
        // SAFETY: masked index within the ring's entries.
        unsafe { self.desc.add((i & self.mask) as usize) }
    }
}

impl<T> Ring<T> {
    /// Unmaps the ring (once; the ring must not be used after).
    pub(super) fn unmap(&mut self) {
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
