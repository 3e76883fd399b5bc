//! Frames received from one port, wherever they lie: copied into the
//! worker's buffers ([`netdev::Batch`]) or left in the port's UMEM
//! ([`netdev::umem::ZcBatch`], an AF_XDP port). The worker serves both
//! through this one trait, so the per-frame path is written once.

use std::sync::Arc;

use netdev::umem::{Desc, Umem, ZcBatch};
use netdev::Batch;
use pipeline::{Output, Snapshot, Worker};

/// A port's received frames, as the worker sees them.
pub(crate) trait Received {
    /// The UMEM the frames lie in (None: the worker's own buffers).
    fn umem(&self) -> Option<&Arc<Umem>>;
    /// Frame `j`'s bytes.
    fn bytes(&self, j: usize) -> &[u8];
    /// The patch ports frame `j` crossed to get here.
    fn hops(&self, j: usize) -> u8;
    /// Runs frame `j` through `snap`, editing it where it lies.
    fn run<'w>(
        &mut self,
        j: usize,
        w: &'w mut Worker,
        snap: &Snapshot,
        in_port: u32,
        now: u64,
    ) -> &'w [Output];
    /// Frame `j`'s chunk, to hand to a port of the same UMEM (None for a
    /// copied frame, or one that outgrew its chunk).
    fn take(&mut self, j: usize) -> Option<Desc>;
    /// Gives a taken chunk back to the batch (it was not sent on).
    fn untake(&mut self, j: usize);
}

impl Received for Batch {
    fn umem(&self) -> Option<&Arc<Umem>> {
        None
    }

    fn bytes(&self, j: usize) -> &[u8] {
        self.frame(j)
    }

    fn hops(&self, j: usize) -> u8 {
        Batch::hops(self, j)
    }

    fn run<'w>(
        &mut self,
        j: usize,
        w: &'w mut Worker,
        snap: &Snapshot,
        in_port: u32,
        now: u64,
    ) -> &'w [Output] {
        match self.tunneled_frame(j) {
            Some((t, opts, frame)) => w.process_tunneled(snap, in_port, &t, opts, frame, now),
            None => w.process(snap, in_port, self.frame_mut(j), now),
        }
    }

    fn take(&mut self, _: usize) -> Option<Desc> {
        None
    }

    fn untake(&mut self, _: usize) {}
}

impl Received for ZcBatch {
    fn umem(&self) -> Option<&Arc<Umem>> {
        ZcBatch::umem(self)
    }

    fn bytes(&self, j: usize) -> &[u8] {
        ZcBatch::bytes(self, j)
    }

    fn hops(&self, _: usize) -> u8 {
        0
    }

    fn run<'w>(
        &mut self,
        j: usize,
        w: &'w mut Worker,
        snap: &Snapshot,
        in_port: u32,
        now: u64,
    ) -> &'w [Output] {
        w.process(snap, in_port, &mut self.frame(j), now)
    }

    fn take(&mut self, j: usize) -> Option<Desc> {
        ZcBatch::take(self, j)
    }

    fn untake(&mut self, j: usize) {
        ZcBatch::untake(self, j)
    }
}
