//! One port's transmit queue for one worker round.
//!
//! A frame is queued either as a copy, in a reusable buffer, or, for a port
//! whose UMEM holds the frame already (`netdev::umem`: an AF_XDP port of
//! the same worker), as the chunk it was received in, which the flush hands
//! to the port's TX ring without copying. Order is kept: entry k is a
//! chunk or a copy. The queue is flushed and emptied at the end of every
//! round, so a queued chunk never outlives the round it was received in.
//!
//! Bounds: at most [`TX_QUEUE_MAX`] frames a round (the rest dropped and
//! counted: a refused chunk stays with the receive batch, which gives it
//! back); at most [`TX_KEEP`] buffers kept once the round is sent.

use netdev::umem::{Desc, TxFrame};
use netdev::TunnelDst;

/// Frames one port's transmit queue holds in one round; more are dropped
/// and counted (the AF_PACKET TX ring has 256 slots: a round cannot send
/// more than that to one port anyway).
pub const TX_QUEUE_MAX: usize = 1024;
/// Buffers a transmit queue keeps between rounds (two receive batches'
/// worth); a burst's extra buffers are freed once it has been sent.
pub const TX_KEEP: usize = 64;
/// Buffers a transmit queue starts with, written once so that their pages
/// are mapped (a receive batch's worth: one port's batch to another).
/// Without them, the first burst of a run allocated its buffers and took
/// a page fault for each inside the in-switch delay's window: the worst
/// frame of a moderate load (docs/PERFORMANCE.md, "The worst frame under
/// a moderate load").
pub const TX_PREFAULT: usize = 32;

/// An empty buffer of `frame` bytes' capacity whose pages are mapped: written
/// once (through `black_box`, so that the write of zeros to fresh, zeroed
/// memory is not optimized away).
fn prefaulted(frame: usize) -> Vec<u8> {
    let mut b = vec![0; frame];
    std::hint::black_box(&mut b[..]).fill(0);
    b.clear();
    b
}

/// One port's frames to send this round: copies in reusable buffers or
/// UMEM chunks (and, for a tunnel port, each frame's tunnel metadata).
pub(crate) struct TxQueue {
    pub(crate) frames: Vec<Vec<u8>>,
    /// Entry k's chunk, when it is one (then `frames[k]` is not used).
    chunks: Vec<Option<Desc>>,
    /// Entries that are chunks.
    n_chunks: usize,
    /// Each frame's tunnel metadata and Geneve options (kept for tunnel
    /// ports only).
    pub(crate) meta: Vec<TunnelDst>,
    pub(crate) opts: netdev::TunnelOptions,
    pub(crate) tunnel: bool,
    /// Each frame's patch crossings so far (kept for patch ports only).
    pub(crate) hops: Vec<u8>,
    pub(crate) patch: bool,
    pub(crate) n: usize,
    /// Frames refused this round because the queue was full.
    pub(crate) overflow: u64,
    /// The largest frame the worker's ports take (a buffer's usual size).
    frame: usize,
}

impl TxQueue {
    pub(crate) fn new(frame: usize, tunnel: bool, patch: bool) -> TxQueue {
        TxQueue {
            frames: (0..TX_PREFAULT).map(|_| prefaulted(frame)).collect(),
            chunks: Vec::with_capacity(TX_PREFAULT),
            n_chunks: 0,
            meta: Vec::with_capacity(if tunnel { TX_PREFAULT } else { 0 }),
            opts: netdev::TunnelOptions::default(),
            tunnel,
            hops: Vec::new(),
            patch,
            n: 0,
            overflow: 0,
            frame,
        }
    }

    /// Queues a copy of `data`; a full queue drops it (counted at the flush).
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.push_meta(data, &TunnelDst::default(), &[], 0);
    }

    /// Keeps the next entry's tunnel metadata and options (a tunnel port)
    /// or patch crossings (a patch port).
    fn note(&mut self, tun: &TunnelDst, opts: &[u8], hops: u8) {
        if self.n >= TX_QUEUE_MAX {
            return;
        }
        if self.tunnel {
            self.meta.truncate(self.n);
            self.meta.push(*tun);
            self.opts.truncate(self.n);
            self.opts.push(opts);
        }
        if self.patch {
            self.hops.truncate(self.n);
            self.hops.push(hops);
        }
    }

    /// The next entry's buffer, or None (queue full, counted).
    fn slot(&mut self) -> Option<&mut Vec<u8>> {
        if self.n == TX_QUEUE_MAX {
            self.overflow += 1;
            return None;
        }
        if self.n == self.frames.len() {
            self.frames.push(Vec::with_capacity(self.frame));
        }
        self.chunks.truncate(self.n);
        self.chunks.push(None);
        self.n += 1;
        Some(&mut self.frames[self.n - 1])
    }

    /// [`TxQueue::push`] with the frame's tunnel metadata and Geneve
    /// options (kept only when the port is a tunnel) and the patch ports
    /// it crossed (kept only when the port is a patch port).
    pub(crate) fn push_meta(&mut self, data: &[u8], tun: &TunnelDst, opts: &[u8], hops: u8) {
        self.note(tun, opts, hops);
        if let Some(b) = self.slot() {
            b.clear();
            b.extend_from_slice(data);
        }
    }

    /// [`TxQueue::push_meta`] of `data` as NORMAL's `egress` makes it.
    pub(crate) fn push_edited(
        &mut self,
        data: &[u8],
        egress: crate::normal::Egress,
        tun: &TunnelDst,
        opts: &[u8],
        hops: u8,
    ) {
        self.note(tun, opts, hops);
        if let Some(b) = self.slot() {
            egress.write(data, b);
        }
    }

    /// Queues a chunk of the port's UMEM; false if the queue is full (the
    /// chunk is still the caller's; the drop is counted).
    pub(crate) fn push_chunk(&mut self, d: Desc) -> bool {
        if self.tunnel || self.patch || self.slot().is_none() {
            return false;
        }
        self.chunks[self.n - 1] = Some(d);
        self.n_chunks += 1;
        true
    }

    /// Whether some entries are chunks (the port sends with `send_zc`).
    pub(crate) fn has_chunks(&self) -> bool {
        self.n_chunks > 0
    }

    /// The entries to send, in order, for `send_zc`.
    pub(crate) fn items(&self) -> impl Iterator<Item = TxFrame<'_>> {
        self.frames[..self.n]
            .iter()
            .zip(&self.chunks[..self.n])
            .map(|(f, c)| match c {
                Some(d) => TxFrame::Chunk(*d),
                None => TxFrame::Bytes(f),
            })
    }

    /// Entry k's length.
    pub(crate) fn len_of(&self, k: usize) -> usize {
        match self.chunks.get(k).copied().flatten() {
            Some(d) => d.len as usize,
            None => self.frames[k].len(),
        }
    }

    /// Empties the queue after its frames were handed to the port, and
    /// gives back what a burst made it grow: buffers beyond [`TX_KEEP`],
    /// and any kept buffer grown past two maximum frames.
    pub(crate) fn reset(&mut self) {
        for b in &mut self.frames[..self.n.min(TX_KEEP)] {
            if b.capacity() > 2 * self.frame {
                *b = Vec::with_capacity(self.frame);
            }
        }
        if self.frames.len() > TX_KEEP {
            self.frames.truncate(TX_KEEP);
            self.frames.shrink_to_fit();
        }
        self.meta.clear();
        if self.meta.capacity() > TX_KEEP {
            self.meta.shrink_to(TX_KEEP);
        }
        self.opts.clear(TX_KEEP);
        self.hops.clear();
        if self.hops.capacity() > TX_KEEP {
            self.hops.shrink_to(TX_KEEP);
        }
        self.chunks.clear();
        if self.chunks.capacity() > TX_KEEP {
            self.chunks.shrink_to(TX_KEEP);
        }
        self.n_chunks = 0;
        self.n = 0;
        self.overflow = 0;
    }

    /// Bytes held in buffers (for tests of the shrinking).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.frames.iter().map(Vec::capacity).sum::<usize>()
            + self.frames.capacity() * std::mem::size_of::<Vec<u8>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transmit_queue_gives_back_what_a_burst_made_it_grow() {
        let mut q = TxQueue::new(netdev::MAX_FRAME, false, false);
        q.push(&[0; 60]);
        q.reset();
        let idle = q.held();
        // A burst: more than a queue holds in a round, some frames grown
        // far past the usual size.
        for i in 0..TX_QUEUE_MAX + 10 {
            q.push(&vec![0; if i % 2 == 0 { 60 } else { 9000 }]);
        }
        assert_eq!(q.n, TX_QUEUE_MAX);
        assert_eq!(q.overflow, 10);
        assert!(q.held() > 1024 * netdev::MAX_FRAME);
        q.reset();
        assert_eq!((q.n, q.overflow), (0, 0));
        assert!(q.frames.len() <= TX_KEEP);
        assert!(
            q.held() <= TX_KEEP * netdev::MAX_FRAME * 2,
            "after the burst the queue still holds {} bytes (idle: {idle})",
            q.held()
        );
        // And it works as before.
        q.push(&[7; 60]);
        assert_eq!(q.frames[0], vec![7; 60]);
    }

    #[test]
    fn a_new_queue_has_a_batch_of_buffers_ready() {
        let mut q = TxQueue::new(netdev::MAX_FRAME, false, false);
        assert_eq!(q.frames.len(), TX_PREFAULT);
        assert!(q
            .frames
            .iter()
            .all(|b| b.is_empty() && b.capacity() >= netdev::MAX_FRAME));
        let before: Vec<*const u8> = q.frames.iter().map(|b| b.as_ptr()).collect();
        for _ in 0..TX_PREFAULT {
            q.push(&[5; 1500]);
        }
        // A batch's worth of frames goes into the buffers made up front.
        let after: Vec<*const u8> = q.frames.iter().map(|b| b.as_ptr()).collect();
        assert_eq!(before, after);
        assert_eq!(q.n, TX_PREFAULT);
        q.reset();
        assert_eq!(q.frames.len(), TX_PREFAULT);
    }

    #[test]
    fn chunks_and_copies_keep_their_order() {
        let mut q = TxQueue::new(netdev::MAX_FRAME, false, false);
        let d = Desc {
            addr: 2048 + 256,
            len: 60,
        };
        q.push(&[1; 61]);
        assert!(q.push_chunk(d));
        q.push(&[2; 62]);
        assert!(q.has_chunks());
        let lens: Vec<usize> = (0..q.n).map(|k| q.len_of(k)).collect();
        assert_eq!(lens, [61, 60, 62]);
        let kinds: Vec<bool> = q.items().map(|f| matches!(f, TxFrame::Chunk(_))).collect();
        assert_eq!(kinds, [false, true, false]);
        q.reset();
        assert!(!q.has_chunks());
        q.push(&[3; 63]);
        assert_eq!(q.items().count(), 1);
        // A full queue refuses a chunk (the caller keeps it), and a tunnel
        // port never takes one (it needs the bytes to encapsulate).
        for _ in 1..TX_QUEUE_MAX {
            q.push(&[0; 60]);
        }
        assert!(!q.push_chunk(d));
        assert_eq!(q.overflow, 1);
        let mut t = TxQueue::new(netdev::MAX_FRAME, true, false);
        assert!(!t.push_chunk(d));
        let mut p = TxQueue::new(netdev::MAX_FRAME, false, true);
        assert!(!p.push_chunk(d), "nor a patch port (it copies)");
    }

    #[test]
    fn a_patch_port_queue_keeps_each_frames_crossings() {
        let mut q = TxQueue::new(netdev::MAX_FRAME, false, true);
        q.push(&[1; 60]);
        q.push_meta(&[2; 60], &TunnelDst::default(), &[], 3);
        assert_eq!(q.hops, [0, 3]);
        q.reset();
        assert!(q.hops.is_empty());
        let mut other = TxQueue::new(netdev::MAX_FRAME, false, false);
        other.push_meta(&[2; 60], &TunnelDst::default(), &[], 3);
        assert!(other.hops.is_empty());
    }
}
