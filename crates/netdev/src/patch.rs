//! Patch ports: two ports of this process's bridges joined back to back,
//! as Open vSwitch's `type=patch` interfaces (`options:peer=NAME`). A
//! frame sent to one is received by the peer's bridge on the peer port,
//! and goes through that bridge's pipeline like any other received frame.
//!
//! No system call carries a frame: each end has one bounded lock-free
//! queue per worker of its bridge (a *lane*: `crossbeam_queue::ArrayQueue`,
//! [`LANE_FRAMES`] frames), and a sender's worker i pushes into the
//! peer's lane `i % lanes` (so one flow, which the sending bridge keeps on
//! one worker, stays in order). A frame is copied once, into a buffer the
//! lane recycles; the receiver swaps that buffer into its receive batch
//! instead of copying again. A full lane drops (the sender counts it as a
//! transmit drop), never blocks.
//!
//! Waking: each lane has an eventfd that the receiving worker sleeps on
//! with its other ports. The receiver arms the lane just before it
//! sleeps ([`Port::before_wait`]) and the sender writes the eventfd only
//! if the lane is armed, so a busy pair makes no system call at all.
//!
//! Loops: a frame carries how many patch ports it has crossed
//! ([`Batch::hops`]); one that would cross more than [`MAX_HOPS`] is
//! dropped (counted as a transmit drop of the port it was sent to), so
//! two bridges that send each other's frames back cannot spin forever.
//! Open vSwitch counts patch crossings in its translation depth (64) for
//! the same reason.
//!
//! Pairing: the ends meet by name in a process-wide registry. An end is
//! paired when the port named by its `peer` is open and names it back;
//! until then (or once the peer closes) what it is sent is dropped and
//! counted, and it receives nothing.

use std::io;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use arc_swap::ArcSwapOption;
use crossbeam_queue::ArrayQueue;

use crate::os::EventFd;
use crate::{Batch, Port, MAX_FRAME};

/// The most patch ports one frame crosses; the crossing past it drops
/// the frame (Open vSwitch's translation depth, which patch ports count
/// in, is 64 too).
pub const MAX_HOPS: u8 = 64;

/// Frames a lane holds (one receiving worker's queue from one peer).
pub const LANE_FRAMES: usize = 1024;

/// One receiving worker's queue.
struct Lane {
    /// Frames waiting, with the patch crossings each has made.
    frames: ArrayQueue<(u8, Vec<u8>)>,
    /// Buffers the receiver gave back, for the sender to fill again.
    free: ArrayQueue<Vec<u8>>,
    wake: EventFd,
    /// The receiver may be asleep: the next sender writes `wake`.
    armed: AtomicBool,
}

impl Lane {
    fn new() -> io::Result<Lane> {
        Ok(Lane {
            frames: ArrayQueue::new(LANE_FRAMES),
            free: ArrayQueue::new(LANE_FRAMES),
            wake: EventFd::new()?,
            armed: AtomicBool::new(false),
        })
    }
}

/// One end of a patch pair: its receive lanes and, while paired, the
/// peer's.
struct End {
    name: String,
    peer: String,
    lanes: Arc<Vec<Lane>>,
    link: ArcSwapOption<Vec<Lane>>,
    hw: [u8; 6],
    /// Frames dropped on the way out for having crossed too many patch
    /// ports (all workers).
    over_hops: AtomicU64,
}

/// Every open end, by name (several of one name while a port is replaced).
static ENDS: Mutex<Vec<Weak<End>>> = Mutex::new(Vec::new());

impl Drop for End {
    fn drop(&mut self) {
        let mut ends = ENDS.lock().unwrap_or_else(|e| e.into_inner());
        ends.retain(|w| w.strong_count() > 0);
        for e in ends.iter().filter_map(Weak::upgrade) {
            let mine = e
                .link
                .load()
                .as_ref()
                .is_some_and(|l| Arc::ptr_eq(l, &self.lanes));
            if mine {
                e.link.store(None);
            }
        }
    }
}

/// One worker's handle on a patch port.
pub struct Patch {
    end: Arc<End>,
    lane: usize,
}

impl Patch {
    /// Opens patch port `name`, peer `peer`, with one lane per worker
    /// (`workers`, at least one): one handle per worker. It pairs with the
    /// open port named `peer` if that one names `name` back.
    pub fn open_workers(name: &str, peer: &str, workers: usize) -> io::Result<Vec<Patch>> {
        if peer.is_empty() || peer == name {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name}: a patch port's peer is another port's name"),
            ));
        }
        let lanes = Arc::new(
            (0..workers.max(1))
                .map(|_| Lane::new())
                .collect::<io::Result<Vec<_>>>()?,
        );
        let h = name.bytes().fold(0x811c_9dc5_u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        let b = h.to_be_bytes();
        let end = Arc::new(End {
            name: name.to_string(),
            peer: peer.to_string(),
            lanes: lanes.clone(),
            link: ArcSwapOption::empty(),
            // Locally administered, unicast, stable per name.
            hw: [0x02 | (b[2] & 0xfc), b[3], b[4], b[5], b[6], b[7]],
            over_hops: AtomicU64::new(0),
        });
        let mut ends = ENDS.lock().unwrap_or_else(|e| e.into_inner());
        ends.retain(|w| w.strong_count() > 0);
        // The newest open end of the peer's name, if it names us.
        let other = ends
            .iter()
            .rev()
            .filter_map(Weak::upgrade)
            .find(|e| e.name == peer);
        if let Some(o) = other.filter(|o| o.peer == name) {
            end.link.store(Some(o.lanes.clone()));
            o.link.store(Some(lanes));
        }
        ends.push(Arc::downgrade(&end));
        drop(ends);
        Ok((0..workers.max(1))
            .map(|lane| Patch {
                end: end.clone(),
                lane,
            })
            .collect())
    }

    /// Whether the port is paired (its peer is open and names it back).
    pub fn paired(&self) -> bool {
        self.end.link.load().is_some()
    }

    /// Frames dropped for crossing more than [`MAX_HOPS`] patch ports,
    /// by every worker's handle on this port.
    pub fn over_hops(&self) -> u64 {
        self.end.over_hops.load(Ordering::Relaxed)
    }

    fn lane(&self) -> &Lane {
        &self.end.lanes[self.lane]
    }
}

impl Port for Patch {
    fn name(&self) -> &str {
        &self.end.name
    }

    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let lane = &self.end.lanes[self.lane];
        let (bufs, lens, hops) = batch.patch_slots();
        let mut n = 0;
        while n < bufs.len() {
            let Some((h, mut b)) = lane.frames.pop() else {
                break;
            };
            // The frame's buffer becomes the batch's; the batch's goes
            // back to the senders.
            std::mem::swap(&mut bufs[n], &mut b);
            lens[n] = bufs[n].len();
            hops[n] = h;
            b.clear();
            let _ = lane.free.push(b);
            n += 1;
        }
        batch.set_len(n);
        Ok(n)
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        self.send_patched(frames, &[])
    }

    fn is_patch(&self) -> bool {
        true
    }

    fn send_patched(&mut self, frames: &[&[u8]], hops: &[u8]) -> io::Result<usize> {
        let link = self.end.link.load();
        let Some(peer) = link.as_ref() else {
            return Ok(0);
        };
        let lane = &peer[self.lane % peer.len()];
        let mut taken = 0;
        for (i, f) in frames.iter().enumerate() {
            let h = hops.get(i).copied().unwrap_or(0).saturating_add(1);
            if h > MAX_HOPS {
                self.end.over_hops.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            let mut b = lane
                .free
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(f.len().max(MAX_FRAME)));
            b.clear();
            b.extend_from_slice(f);
            if lane.frames.push((h, b)).is_ok() {
                taken += 1;
            }
        }
        if taken > 0 {
            // Pairs with the fence in `before_wait`: either the receiver
            // sees the frames before it sleeps or we see it armed.
            fence(Ordering::SeqCst);
            if lane.armed.load(Ordering::Relaxed) && lane.armed.swap(false, Ordering::SeqCst) {
                lane.wake.wake();
            }
        }
        Ok(taken)
    }

    fn rx_ready(&self) -> bool {
        !self.lane().frames.is_empty()
    }

    fn before_wait(&mut self) {
        let lane = self.lane();
        lane.wake.clear();
        lane.armed.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !lane.frames.is_empty() {
            lane.armed.store(false, Ordering::Relaxed);
            lane.wake.wake();
        }
    }

    fn fd(&self) -> Option<i32> {
        Some(self.lane().wake.fd())
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.end.hw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(tag: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[14] = tag;
        f
    }

    fn readable(fd: i32) -> bool {
        let mut p = [libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }];
        crate::os::poll(&mut p, 0).unwrap() > 0
    }

    #[test]
    fn a_pair_carries_frames_both_ways_with_their_crossings() {
        let mut a = Patch::open_workers("pt-a0", "pt-b0", 1).unwrap();
        assert!(!a[0].paired(), "no peer yet");
        assert_eq!(
            a[0].send(&[&frame(1)]).unwrap(),
            0,
            "unpaired: nothing taken"
        );
        let mut b = Patch::open_workers("pt-b0", "pt-a0", 2).unwrap();
        assert!(a[0].paired() && b[0].paired() && b[1].paired());
        let mut batch = Batch::new(8);
        assert_eq!(
            a[0].send_patched(&[&frame(2), &frame(3)], &[0, 5]).unwrap(),
            2
        );
        // Worker 0 of a sends to lane 0 of b.
        assert!(b[0].rx_ready() && !b[1].rx_ready());
        assert_eq!(b[0].recv(&mut batch).unwrap(), 2);
        assert_eq!(batch.frame(0), &frame(2)[..]);
        assert_eq!((batch.hops(0), batch.hops(1)), (1, 6));
        // And back, from b's second worker into a's only lane.
        assert_eq!(b[1].send(&[&frame(4)]).unwrap(), 1);
        assert_eq!(a[0].recv(&mut batch).unwrap(), 1);
        assert_eq!((batch.frame(0), batch.hops(0)), (&frame(4)[..], 1));
        // Another port's batch after a patch's has no crossings.
        let (mut m, wire) = crate::memory::MemoryPort::new("m");
        wire.inject(&frame(5));
        assert_eq!(m.recv(&mut batch).unwrap(), 1);
        assert_eq!(batch.hops(0), 0);
    }

    #[test]
    fn a_loop_ends_at_the_hop_limit() {
        let mut a = Patch::open_workers("pt-a1", "pt-b1", 1).unwrap();
        let mut b = Patch::open_workers("pt-b1", "pt-a1", 1).unwrap();
        let mut batch = Batch::new(4);
        a[0].send(&[&frame(1)]).unwrap();
        let mut crossings = 1;
        let mut at_b = true;
        // Each side sends back what it received, with its crossings.
        loop {
            let p = if at_b { &mut b[0] } else { &mut a[0] };
            if p.recv(&mut batch).unwrap() == 0 {
                break;
            }
            let h = batch.hops(0);
            assert_eq!(h as usize, crossings);
            let f = batch.frame(0).to_vec();
            if p.send_patched(&[&f], &[h]).unwrap() == 0 {
                break;
            }
            crossings += 1;
            at_b = !at_b;
        }
        assert_eq!(crossings, MAX_HOPS as usize);
        assert_eq!(a[0].over_hops() + b[0].over_hops(), 1);
    }

    #[test]
    fn a_peer_that_does_not_name_us_back_or_closes_unpairs() {
        let a = Patch::open_workers("pt-a2", "pt-b2", 1).unwrap();
        let c = Patch::open_workers("pt-b2", "pt-other", 1).unwrap();
        assert!(!a[0].paired() && !c[0].paired());
        drop(c);
        let b = Patch::open_workers("pt-b2", "pt-a2", 1).unwrap();
        assert!(a[0].paired());
        // A replacement of a pairs with b; the old a closing leaves it so.
        let a2 = Patch::open_workers("pt-a2", "pt-b2", 1).unwrap();
        drop(a);
        assert!(a2[0].paired() && b[0].paired());
        drop(a2);
        assert!(!b[0].paired());
        assert!(Patch::open_workers("pt-self", "pt-self", 1).is_err());
    }

    #[test]
    fn a_sleeping_receiver_is_woken_and_a_busy_one_is_not() {
        let mut a = Patch::open_workers("pt-a3", "pt-b3", 1).unwrap();
        let mut b = Patch::open_workers("pt-b3", "pt-a3", 1).unwrap();
        let fd = b[0].fd().unwrap();
        // Not armed: no wake-up written.
        a[0].send(&[&frame(1)]).unwrap();
        assert!(!readable(fd));
        // Frames wait when it arms: it does not sleep.
        b[0].before_wait();
        assert!(readable(fd));
        let mut batch = Batch::new(4);
        assert_eq!(b[0].recv(&mut batch).unwrap(), 1);
        b[0].before_wait();
        assert!(!readable(fd));
        a[0].send(&[&frame(2)]).unwrap();
        assert!(readable(fd), "an armed receiver is woken");
        // The buffer given back is reused by the next send.
        assert_eq!(b[0].recv(&mut batch).unwrap(), 1);
        assert_eq!(b[0].lane().free.len(), 1);
    }
}
