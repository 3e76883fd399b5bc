//! # netdev: ports
//!
//! Every back end implements [`Port`]: receive a batch of frames into
//! buffers the caller owns, send a batch of frames. Batches amortise system
//! calls (`recvmmsg`/`sendmmsg`), which is what lets a software switch keep
//! up (the Erlang switch this project descends from paid a message and a
//! process per frame).
//!
//! Ownership contract: `recv` fills the caller's [`Batch`]; the frames stay
//! the caller's until the next `recv` into the same batch. `send` copies the
//! frames into the kernel before it returns, so the caller may reuse them at
//! once. Neither blocks: an empty receive returns 0 and a full transmit queue
//! returns how many frames were taken (the rest are the caller's to count as
//! dropped). A frame the port did not take is never kept to go out later
//! (after a link comes back, say): what `send` does not take is gone.
//! Offsets and lengths the kernel writes into shared rings are checked
//! before they are followed; a bad one is skipped and reported through
//! [`Port::take_rx_errors`].
//!
//! Back ends: [`afpacket::AfPacket`] (a raw `AF_PACKET` socket bound to a
//! Linux interface, with TPACKET_V2 rings and fanout groups) and [`memory::MemoryPort`] (queues in memory, for tests
//! and benchmarks), [`tap::Tap`] (a TAP device, the bridge's LOCAL port) and
//! [`pcap::PcapPort`] (frames replayed from and recorded to capture files),
//! [`afxdp::AfXdp`] (AF_XDP sockets fed by sluice's own XDP program,
//! [`xdp`]).

pub mod afpacket;
pub mod afxdp;
pub mod link;
pub mod memory;
pub mod pcap;
mod ring;
pub mod tap;
pub mod xdp;

use std::io;

/// Largest frame a port hands out (Ethernet with a few tags, no jumbo frames).
pub const MAX_FRAME: usize = 2048;

/// Reusable receive buffers.
pub struct Batch {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    n: usize,
}

impl Batch {
    /// A batch of up to `size` frames.
    pub fn new(size: usize) -> Batch {
        Batch {
            bufs: (0..size).map(|_| vec![0u8; MAX_FRAME]).collect(),
            lens: vec![0; size],
            n: 0,
        }
    }

    /// Capacity in frames.
    pub fn capacity(&self) -> usize {
        self.bufs.len()
    }

    /// Frames received.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Frame `i` (mutable, so the pipeline can edit headers in place).
    /// Returned as a `Vec` so that pushes can grow it; its length is the
    /// frame's length.
    pub fn frame_mut(&mut self, i: usize) -> &mut Vec<u8> {
        let b = &mut self.bufs[i];
        b.truncate(self.lens[i]);
        b
    }

    /// Frame `i`.
    pub fn frame(&self, i: usize) -> &[u8] {
        &self.bufs[i][..self.lens[i].min(self.bufs[i].len())]
    }

    /// Buffers for a back end to fill: each is grown back to [`MAX_FRAME`]
    /// (and one that the pipeline grew far past it, by pushing headers, is
    /// given back for a new one).
    pub(crate) fn slots(&mut self) -> (&mut [Vec<u8>], &mut [usize]) {
        for b in &mut self.bufs {
            if b.capacity() > 2 * MAX_FRAME {
                *b = vec![0u8; MAX_FRAME];
            } else {
                b.resize(MAX_FRAME, 0);
            }
        }
        (&mut self.bufs, &mut self.lens)
    }

    pub(crate) fn set_len(&mut self, n: usize) {
        self.n = n;
    }
}

/// A switch port.
pub trait Port: Send {
    /// The interface or port name.
    fn name(&self) -> &str;

    /// Receives up to `batch.capacity()` frames without blocking; returns
    /// how many.
    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize>;

    /// Sends frames without blocking; returns how many were taken.
    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize>;

    /// Frames lost on receive since the last call that `recv` did not
    /// return (a ring slot whose offsets the kernel wrote outside the
    /// slot, a descriptor outside the UMEM): the caller counts them as
    /// receive errors.
    fn take_rx_errors(&mut self) -> u64 {
        0
    }

    /// A file descriptor that polls readable when frames wait (None: always poll).
    fn fd(&self) -> Option<i32> {
        None
    }

    /// Every descriptor that polls readable when frames wait (a port may
    /// have several, one per receive queue).
    fn fds(&self) -> Vec<i32> {
        self.fd().into_iter().collect()
    }

    /// Whether the link is up.
    fn link_up(&self) -> bool {
        true
    }

    /// The port's Ethernet address.
    fn hw_addr(&self) -> [u8; 6] {
        [0; 6]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_receive_buffer_grown_by_the_pipeline_is_given_back() {
        let mut b = Batch::new(2);
        b.set_len(1);
        b.frame_mut(0).resize(60_000, 0); // many pushed headers
        let (bufs, _) = b.slots();
        assert!(bufs
            .iter()
            .all(|b| b.len() == MAX_FRAME && b.capacity() <= 2 * MAX_FRAME));
    }
}
