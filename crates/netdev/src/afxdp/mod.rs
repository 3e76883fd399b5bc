//! An `AF_XDP` port: the interface's XDP program ([`crate::xdp`]) hands
//! every received frame to a socket whose rings live in memory shared with
//! the kernel (the UMEM, [`crate::umem`]), bypassing the kernel stack.
//!
//! One socket per receive queue of the interface (a queue without a socket
//! would pass its frames to the kernel stack, away from the switch);
//! [`AfXdp::open_queues`] deals the queues out to the workers, each of which
//! owns its queues end to end (as with a fanout group) and sends through the
//! socket of its first queue. veth devices get one receive queue per CPU by
//! default. Zero-copy where the driver
//! supports it, copy mode otherwise (veth has no zero-copy); the program
//! runs natively where the driver can, generic otherwise.
//!
//! UMEMs: given one UMEM per worker ([`AfXdp::open_queues`] with
//! `shared`), every socket of that worker, on any interface, binds to it
//! (`XDP_SHARED_UMEM`, with a fill and a completion ring of its own), so a
//! frame received on one port is sent on another by moving its descriptor
//! ([`Port::recv_zc`], [`Port::send_zc`]); a socket the kernel will not
//! bind to the shared UMEM (a zero-copy interface sharing with a copy-mode
//! one) gets a UMEM of its own, and frames crossing to it are copied.
//! [`Port::recv`] and [`Port::send`] copy, for callers that want their own
//! buffers. The chunks' whereabouts are [`crate::umem::Umem`]'s to keep.
//!
//! Rings are single-producer/single-consumer with the kernel: the producer
//! index is published with Release after the descriptors are written, and
//! read with Acquire before they are read.

use std::io;
use std::mem::size_of;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::umem::{self, Desc, TxFrame, Umem, ZcBatch, FRAME};
use crate::xdp::{XdpMode, XdpProgram};
use crate::{Batch, Port};

mod abi;
mod socket;
#[cfg(test)]
mod tests;

use abi::*;
use socket::*;

/// An `AF_XDP` port as one worker sees it: the sockets of its receive
/// queues.
pub struct AfXdp {
    name: String,
    hw: [u8; 6],
    socks: Vec<Socket>,
    /// The UMEM of every socket of this handle, when they share one (the
    /// worker then receives and sends by descriptor).
    umem: Option<Arc<Umem>>,
    /// The interface's program; the last port handle dropped detaches it.
    program: Arc<XdpProgram>,
}

/// Receive queues of interface `name` (from sysfs; 1 if unknown).
pub fn rx_queues(name: &str) -> u32 {
    std::fs::read_dir(format!("/sys/class/net/{name}/queues"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().starts_with("rx-"))
                .count() as u32
        })
        .unwrap_or(1)
        .max(1)
}

impl AfXdp {
    /// Opens a socket on every receive queue of interface `name`, deals
    /// them out to `n` workers (queue q to worker q mod n) and attaches the
    /// redirect program (native if possible, unless `generic_only`). With
    /// `shared` (one UMEM per worker), worker w's sockets bind to
    /// `shared[w]`; without, each socket has a UMEM of its own. Fails,
    /// with the reason, where AF_XDP cannot run: the caller falls back to
    /// AF_PACKET.
    pub fn open_queues(
        name: &str,
        n: usize,
        generic_only: bool,
        shared: Option<&[Arc<Umem>]>,
    ) -> io::Result<Vec<AfXdp>> {
        let n = n.max(1);
        let queues = rx_queues(name);
        if (n as u32) > queues {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{name}: AF_XDP: {n} workers need {n} receive queues, the interface has {queues}"
                ),
            ));
        }
        // Frames live in 2 KB UMEM chunks (no multi-buffer): a jumbo MTU
        // is AF_PACKET's to serve.
        let mtu = crate::mtu(name).unwrap_or(1500);
        if crate::frame_size_for_mtu(mtu) > FRAME as usize {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{name}: AF_XDP: MTU {mtu} does not fit sluice's 2 KB AF_XDP frames"),
            ));
        }
        let ifindex = crate::afpacket::ifindex(name)?;
        let program = Arc::new(
            XdpProgram::attach(ifindex, queues, generic_only).map_err(|e| err(name, "XDP", e))?,
        );
        let hw = crate::afpacket::hw_addr(-1, name);
        let mut ports: Vec<AfXdp> = (0..n)
            .map(|_| AfXdp {
                name: name.to_string(),
                hw,
                socks: Vec::new(),
                umem: None,
                program: program.clone(),
            })
            .collect();
        for q in 0..queues {
            let w = q as usize % n;
            let s = match shared.and_then(|u| u.get(w)) {
                // A socket the kernel will not bind to the shared UMEM
                // gets one of its own.
                Some(u) => Socket::open(name, ifindex, q, u).or_else(|_| {
                    Socket::open(name, ifindex, q, &Umem::new(RX_FRAMES + TX_FRAMES)?)
                })?,
                None => Socket::open(name, ifindex, q, &Umem::new(RX_FRAMES + TX_FRAMES)?)?,
            };
            program
                .set_socket(q, s.fd)
                .map_err(|e| err(name, "map", e))?;
            ports[w].socks.push(s);
        }
        for p in &mut ports {
            let first = p.socks[0].umem.clone();
            if p.socks.iter().all(|s| Arc::ptr_eq(&s.umem, &first)) {
                p.umem = Some(first);
            }
        }
        Ok(ports)
    }

    /// The interface's XDP program (shared by its handles).
    pub fn program(&self) -> &Arc<XdpProgram> {
        &self.program
    }

    /// Whether the XDP program runs in the driver.
    pub fn native(&self) -> bool {
        self.program.mode == XdpMode::Native
    }

    /// Whether the sockets run zero-copy (else the kernel copies frames).
    pub fn zero_copy(&self) -> bool {
        self.socks.iter().all(|s| s.zero_copy)
    }
}

impl Port for AfXdp {
    fn name(&self) -> &str {
        &self.name
    }

    /// Copies the frames into the batch's buffers and gives their chunks
    /// straight back.
    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let (bufs, lens) = batch.slots();
        let mut n = 0;
        let mut descs = Vec::new();
        for s in &mut self.socks {
            descs.clear();
            s.rx(&mut descs, bufs.len() - n);
            for d in &descs {
                // SAFETY: just received, held by us alone until freed below.
                let chunk = unsafe { s.umem.chunk_mut(*d) };
                let at = (d.addr % FRAME) as usize;
                let len = (d.len as usize).min(bufs[n].len());
                bufs[n][..len].copy_from_slice(&chunk[at..at + len]);
                lens[n] = len;
                n += 1;
            }
            s.umem.free_held(descs.iter().map(|d| d.addr));
        }
        batch.set_len(n);
        Ok(n)
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        let items: Vec<TxFrame> = frames.iter().map(|f| TxFrame::Bytes(f)).collect();
        self.socks[0].tx(&items)
    }

    fn umem(&self) -> Option<&Arc<Umem>> {
        self.umem.as_ref()
    }

    fn recv_zc(&mut self, batch: &mut ZcBatch, max: usize) -> io::Result<usize> {
        let Some(umem) = &self.umem else {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{}: sockets in several UMEMs", self.name),
            ));
        };
        let descs = batch.begin(umem);
        let mut n = 0;
        for s in &mut self.socks {
            n += s.rx(descs, max - n);
        }
        batch.received();
        Ok(n)
    }

    fn send_zc(&mut self, frames: &[TxFrame]) -> io::Result<usize> {
        self.socks[0].tx(frames)
    }

    fn rx_ready(&self) -> bool {
        self.socks.iter().any(Socket::rx_ready)
    }

    fn before_wait(&mut self) {
        self.socks.iter_mut().for_each(Socket::before_wait);
    }

    fn tx_settles_later(&self) -> bool {
        true
    }

    fn close_tx(&mut self) {
        self.socks.iter_mut().for_each(Socket::close_tx);
    }

    fn take_tx_settled(&mut self) -> crate::TxSettled {
        let mut t = crate::TxSettled::default();
        for s in &mut self.socks {
            let d = std::mem::take(&mut s.settled_tx);
            t.sent += d.sent;
            t.bytes += d.bytes;
            t.dropped += d.dropped;
        }
        t
    }

    fn take_rx_errors(&mut self) -> u64 {
        self.socks
            .iter_mut()
            .map(|s| std::mem::take(&mut s.rx_errors))
            .sum()
    }

    fn fd(&self) -> Option<i32> {
        Some(self.socks[0].fd)
    }

    fn fds(&self) -> Vec<i32> {
        self.socks.iter().map(|s| s.fd).collect()
    }

    fn link_up(&self) -> bool {
        crate::afpacket::operstate_up(&self.name)
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.hw
    }
}
