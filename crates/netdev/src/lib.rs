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
//! dropped). A port with a UMEM also lends its frames instead
//! ([`Port::recv_zc`]): they stay in the UMEM, held by a
//! [`umem::ZcBatch`], until sent on by descriptor ([`Port::send_zc`]) or
//! given back. A frame the port did not take is never kept to go out later
//! (after a link comes back, say): what `send` does not take is gone.
//! Offsets and lengths the kernel writes into shared rings are checked
//! before they are followed; a bad one is skipped and reported through
//! [`Port::take_rx_errors`]. A frame longer than the buffers (which the
//! caller sizes to [`Port::max_frame`], from the MTU) is dropped and
//! reported through [`Port::take_rx_truncated`], never handed out cut.
//!
//! Back ends: [`afpacket::AfPacket`] (a raw `AF_PACKET` socket bound to a
//! Linux interface, with TPACKET_V2 rings and fanout groups) and [`memory::MemoryPort`] (queues in memory, for tests
//! and benchmarks), [`tap::Tap`] (a TAP device, the bridge's LOCAL port) and
//! [`pcap::PcapPort`] (frames replayed from and recorded to capture files),
//! [`afxdp::AfXdp`] (AF_XDP sockets fed by sluice's own XDP program,
//! [`xdp`], in UMEMs that one worker's sockets share, [`umem`]), and [`tunnel::Tunnel`] (VXLAN and Geneve over a UDP socket of
//! the host's IP stack). A tunnel port's frames carry tunnel metadata both
//! ways: [`Batch::tunnel`] on receive, [`Port::send_tunneled`] on send.
//! [`patch::Patch`] joins two bridges of this process back to back (no
//! system call carries a frame); its frames carry the patch ports they
//! crossed ([`Batch::hops`], [`Port::send_patched`]) so a loop ends.
//!
//! This crate is sluice's one OS layer: the ports' system calls, and in
//! [`os`] the others sluice makes (eventfd, epoll, poll, socket options, a
//! non-blocking connect, the umask, CPU affinity). It alone has `unsafe`
//! code; every other crate forbids it (the workspace's lints).

pub mod afpacket;
pub mod afxdp;
pub mod bpf;
pub mod link;
pub mod memory;
pub mod os;
pub mod patch;
pub mod pcap;
mod ring;
pub mod tap;
pub mod tunnel;
pub mod umem;
pub mod xdp;

use std::io;
use std::sync::Arc;

pub use packet::{TunnelDst, TunnelMeta};

/// The receive buffer of a port on a standard 1500-byte MTU (Ethernet
/// header, a few tags and room to spare); a port whose MTU needs more asks
/// for it with [`Port::max_frame`].
pub const MAX_FRAME: usize = 2048;

/// The receive buffer a frame of `mtu` bytes of payload needs: the
/// Ethernet header and two VLAN tags on top (never less than
/// [`MAX_FRAME`]).
pub fn frame_size_for_mtu(mtu: usize) -> usize {
    (mtu + 14 + 8).max(MAX_FRAME)
}

/// An interface's MTU (None if it cannot be read).
pub fn mtu(name: &str) -> Option<usize> {
    std::fs::read_to_string(format!("/sys/class/net/{name}/mtu"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `recvmmsg(2)` without blocking into `msgs`, each set up by the caller
/// (buffers, names, control space, all alive for the call): how many
/// arrived. None waiting (EAGAIN, EINTR) is 0, and so is ENETDOWN (the
/// interface went down under us: nothing to receive); other errors are
/// named after port `name`.
pub(crate) fn recvmmsg(fd: i32, msgs: &mut [libc::mmsghdr], name: &str) -> io::Result<usize> {
    // SAFETY: the caller initialised every header in msgs, whose pointers
    // stay valid for the call; the kernel writes only within them.
    let r = unsafe {
        libc::recvmmsg(
            fd,
            msgs.as_mut_ptr(),
            msgs.len() as u32,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
        )
    };
    if r >= 0 {
        return Ok(r as usize);
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
        _ if e.raw_os_error() == Some(libc::ENETDOWN) => Ok(0),
        _ => Err(io::Error::new(e.kind(), format!("{name}: recvmmsg: {e}"))),
    }
}

/// Frames' Geneve options (each frame's raw option bytes, in order), one
/// frame's after another in one buffer: once grown, a batch of frames
/// with options allocates nothing. A frame with no entry has none.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TunnelOptions {
    bytes: Vec<u8>,
    /// Where each frame's options end in `bytes`.
    ends: Vec<u32>,
}

impl TunnelOptions {
    /// Appends the next frame's options.
    #[inline]
    pub fn push(&mut self, opts: &[u8]) {
        self.bytes.extend_from_slice(opts);
        self.ends.push(self.bytes.len() as u32);
    }

    /// Frame `i`'s options (empty when it has none or no entry).
    #[inline]
    pub fn get(&self, i: usize) -> &[u8] {
        let Some(&end) = self.ends.get(i) else {
            return &[];
        };
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start as usize..end as usize]
    }

    /// Frames with an entry.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Keeps the first `n` frames' entries.
    pub fn truncate(&mut self, n: usize) {
        if n < self.ends.len() {
            let end = if n == 0 { 0 } else { self.ends[n - 1] };
            self.bytes.truncate(end as usize);
            self.ends.truncate(n);
        }
    }

    /// Forgets every entry, giving back what a burst grew beyond `keep`
    /// frames (and as many full option blocks).
    pub fn clear(&mut self, keep: usize) {
        self.bytes.clear();
        self.ends.clear();
        self.bytes.shrink_to(keep * packet::tunnel::MAX_OPTIONS);
        self.ends.shrink_to(keep);
    }
}

/// Reusable receive buffers.
pub struct Batch {
    bufs: Vec<Vec<u8>>,
    lens: Vec<usize>,
    /// Each frame's tunnel metadata, when a tunnel port filled the batch.
    tun: Vec<TunnelMeta>,
    /// Each frame's Geneve options, when a Geneve port filled the batch.
    opts: TunnelOptions,
    tunneled: bool,
    /// Each frame's patch crossings, when a patch port filled the batch.
    hops: Vec<u8>,
    patched: bool,
    n: usize,
    frame: usize,
}

impl Batch {
    /// A batch of up to `size` frames of [`MAX_FRAME`] bytes.
    pub fn new(size: usize) -> Batch {
        Batch::with_frame_size(size, MAX_FRAME)
    }

    /// A batch of up to `size` frames of `frame` bytes each. The buffers
    /// are written once, so that their pages are mapped before the first
    /// receive (zeroed memory from the allocator is often not yet: the
    /// first frames would each take a page fault on the way in).
    pub fn with_frame_size(size: usize, frame: usize) -> Batch {
        Batch {
            bufs: (0..size)
                .map(|_| {
                    let mut b = vec![0u8; frame];
                    std::hint::black_box(&mut b[..]).fill(0);
                    b
                })
                .collect(),
            lens: vec![0; size],
            tun: vec![TunnelMeta::default(); size],
            opts: TunnelOptions::default(),
            tunneled: false,
            hops: vec![0; size],
            patched: false,
            n: 0,
            frame,
        }
    }

    /// The largest frame a buffer takes.
    pub fn frame_size(&self) -> usize {
        self.frame
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
        // From now on the Vec's length is the frame's (a push grows it):
        // [`Batch::frame`] follows it.
        self.lens[i] = usize::MAX;
        b
    }

    /// Frame `i`'s tunnel metadata: Some when a tunnel port received the
    /// batch (the VNI and outer addresses it came with), None otherwise.
    #[inline]
    pub fn tunnel(&self, i: usize) -> Option<&TunnelMeta> {
        self.tun.get(i).filter(|_| self.tunneled)
    }

    /// Frame `i` with its tunnel metadata and Geneve options (empty: none),
    /// when a tunnel port received the batch, for the pipeline to run it.
    #[inline]
    pub fn tunneled_frame(&mut self, i: usize) -> Option<(TunnelMeta, &[u8], &mut Vec<u8>)> {
        let t = *self.tun.get(i).filter(|_| self.tunneled)?;
        let b = &mut self.bufs[i];
        b.truncate(self.lens[i]);
        self.lens[i] = usize::MAX;
        Some((t, self.opts.get(i), b))
    }

    /// Frame `i`'s Geneve options (empty: none, or not from a Geneve port).
    #[inline]
    pub fn tunnel_options(&self, i: usize) -> &[u8] {
        if self.tunneled {
            self.opts.get(i)
        } else {
            &[]
        }
    }

    /// How many patch ports frame `i` crossed to get here (0: it came from
    /// no patch port; [`patch`]).
    #[inline]
    pub fn hops(&self, i: usize) -> u8 {
        if self.patched {
            self.hops.get(i).copied().unwrap_or(0)
        } else {
            0
        }
    }

    /// Frame `i`.
    pub fn frame(&self, i: usize) -> &[u8] {
        &self.bufs[i][..self.lens[i].min(self.bufs[i].len())]
    }

    /// Buffers for a back end to fill: the last batch's buffers (the only
    /// ones [`Batch::frame_mut`] can have shortened or grown) are brought
    /// back to the frame size, one grown far past it (by pushed headers)
    /// replaced; the others are untouched.
    pub(crate) fn slots(&mut self) -> (&mut [Vec<u8>], &mut [usize]) {
        let frame = self.frame;
        for b in &mut self.bufs[..self.n] {
            if b.capacity() > 2 * frame {
                *b = vec![0u8; frame];
            } else {
                b.resize(frame, 0);
            }
        }
        self.n = 0;
        self.tunneled = false;
        self.patched = false;
        (&mut self.bufs, &mut self.lens)
    }

    /// [`Batch::slots`] for a patch port, with each frame's crossings.
    pub(crate) fn patch_slots(&mut self) -> (&mut [Vec<u8>], &mut [usize], &mut [u8]) {
        self.slots();
        self.patched = true;
        (&mut self.bufs, &mut self.lens, &mut self.hops)
    }

    /// [`Batch::slots`] for a tunnel port, with each frame's metadata and
    /// (emptied) options, which the port pushes frame by frame in order.
    pub(crate) fn tunnel_slots(
        &mut self,
    ) -> (
        &mut [Vec<u8>],
        &mut [usize],
        &mut [TunnelMeta],
        &mut TunnelOptions,
    ) {
        self.slots();
        self.tunneled = true;
        let keep = self.bufs.len();
        self.opts.clear(keep);
        (
            &mut self.bufs,
            &mut self.lens,
            &mut self.tun,
            &mut self.opts,
        )
    }

    pub(crate) fn set_len(&mut self, n: usize) {
        self.n = n;
    }
}

/// Frames a port sent or dropped after the call that took them
/// ([`Port::take_tx_settled`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TxSettled {
    pub sent: u64,
    pub bytes: u64,
    pub dropped: u64,
}

/// A switch port.
pub trait Port: Send {
    /// The interface or port name.
    fn name(&self) -> &str;

    /// Receives up to `batch.capacity()` frames without blocking; returns
    /// how many.
    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize>;

    /// Sends frames without blocking; returns how many were taken (sent,
    /// or for a port whose [`Port::tx_settles_later`], queued: the caller
    /// counts the rest as dropped).
    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize>;

    /// Whether frames a send call takes may leave after it returns (a ring
    /// the kernel reads later: AF_XDP): their fate, sent or dropped, then
    /// comes from [`Port::take_tx_settled`], once each, and the caller
    /// counts only what a send call did not take. False: a frame taken is
    /// a frame sent.
    fn tx_settles_later(&self) -> bool {
        false
    }

    /// For a port whose [`Port::tx_settles_later`]: the frames whose fate
    /// became known since the last call (sent, with their bytes, or
    /// dropped: the kernel refused them, or they were purged from the ring
    /// when the link went down).
    fn take_tx_settled(&mut self) -> TxSettled {
        TxSettled::default()
    }

    /// The port is about to be closed (removed, replaced, or its worker
    /// ends): a port whose [`Port::tx_settles_later`] settles every frame
    /// it took, so that the next [`Port::take_tx_settled`] has them all.
    fn close_tx(&mut self) {}

    /// The UMEM this port receives into and sends from, when all its
    /// queues share one (AF_XDP): the caller may then receive with
    /// [`Port::recv_zc`] and send with [`Port::send_zc`], moving frames
    /// between ports of the same UMEM without copying them.
    fn umem(&self) -> Option<&Arc<umem::Umem>> {
        None
    }

    /// Receives up to `max` frames without blocking, left where they
    /// arrived in the port's UMEM and held by `batch` (which first gives
    /// back what it held); returns how many. Only for a port with a UMEM.
    fn recv_zc(&mut self, batch: &mut umem::ZcBatch, max: usize) -> io::Result<usize> {
        let _ = (batch, max);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{}: no UMEM", self.name()),
        ))
    }

    /// Sends frames given as bytes (copied) or as chunks of this port's
    /// UMEM (handed over: the port owns them from then on, sent or not);
    /// returns how many were taken, as [`Port::send`]. Only for a port
    /// with a UMEM.
    fn send_zc(&mut self, frames: &[umem::TxFrame]) -> io::Result<usize> {
        let _ = frames;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{}: no UMEM", self.name()),
        ))
    }

    /// Whether frames sent here need their tunnel metadata (a tunnel
    /// port: the caller sends with [`Port::send_tunneled`]).
    fn is_tunnel(&self) -> bool {
        false
    }

    /// Sends frames each with where its tunnel goes and the Geneve
    /// options it carries (`meta[i]` and `opts.get(i)` go with
    /// `frames[i]`); returns how many were sent. A port that is not a
    /// tunnel ignores both; a VXLAN port ignores the options.
    fn send_tunneled(
        &mut self,
        frames: &[&[u8]],
        meta: &[TunnelDst],
        opts: &TunnelOptions,
    ) -> io::Result<usize> {
        let _ = (meta, opts);
        self.send(frames)
    }

    /// Whether this is a patch port ([`patch`]): the caller sends with
    /// [`Port::send_patched`], giving each frame's patch crossings.
    fn is_patch(&self) -> bool {
        false
    }

    /// Sends frames each with the patch ports it has crossed so far
    /// (`hops[i]` goes with `frames[i]`); returns how many were taken. A
    /// port that is not a patch port ignores the counts.
    fn send_patched(&mut self, frames: &[&[u8]], hops: &[u8]) -> io::Result<usize> {
        let _ = hops;
        self.send(frames)
    }

    /// Whether a receive call may find frames or has other work to do
    /// (true unless the port can tell cheaply that it has none): the
    /// worker asks every port every round and skips the idle ones.
    fn rx_ready(&self) -> bool {
        true
    }

    /// The caller is about to sleep until a descriptor of [`Port::fds`]
    /// signals: the port does what a `poll(2)` on them would have done
    /// besides waiting (an AF_XDP socket's poll kicks its TX ring).
    fn before_wait(&mut self) {}

    /// Frames lost on receive since the last call that `recv` did not
    /// return (a ring slot whose offsets the kernel wrote outside the
    /// slot, a descriptor outside the UMEM): the caller counts them as
    /// receive errors.
    fn take_rx_errors(&mut self) -> u64 {
        0
    }

    /// Frames that arrived longer than the port's buffers since the last
    /// call (GRO/TSO super-frames, or a frame above the MTU): dropped, not
    /// forwarded cut; the caller counts them apart so that the user can be
    /// told which offload to turn off.
    fn take_rx_truncated(&mut self) -> u64 {
        0
    }

    /// Frames received since the last call whose sender left the checksum
    /// unfinished for hardware to complete (checksum offload on a virtual
    /// link): forwarded as they are, counted so that the user can be told.
    fn take_rx_csum_partial(&mut self) -> u64 {
        0
    }

    /// The largest frame this port receives whole (the receive buffers
    /// the caller gives it must be at least this long).
    fn max_frame(&self) -> usize {
        MAX_FRAME
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
    fn a_frame_grown_or_shrunk_in_place_reads_back_whole() {
        let mut b = Batch::with_frame_size(1, 64);
        let (bufs, lens) = b.slots();
        bufs[0][..4].copy_from_slice(&[1, 2, 3, 4]);
        lens[0] = 4;
        b.set_len(1);
        assert_eq!(b.frame(0), [1, 2, 3, 4]);
        b.frame_mut(0).splice(2..2, [9, 9]);
        assert_eq!(b.frame(0), [1, 2, 9, 9, 3, 4]);
        b.frame_mut(0).drain(0..3);
        assert_eq!(b.frame(0), [9, 3, 4]);
    }

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
