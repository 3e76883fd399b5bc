//! The XDP program sluice loads on an AF_XDP port (through [`crate::bpf`]).
//! No compiler or loader library is needed: the program is five
//! instructions, written here as bytecode.
//!
//! ```text
//! r2 = *(u32 *)(r1 + 16)      ; ctx->rx_queue_index
//! r1 = map[xsks]              ; the XSKMAP (a map fd, patched in by the kernel)
//! r3 = XDP_PASS               ; what happens when no socket serves the queue
//! call bpf_redirect_map       ; to the AF_XDP socket of this queue
//! exit
//! ```
//!
//! Every frame arriving on the interface goes to the socket bound to its
//! receive queue; a queue without a socket passes frames to the kernel
//! stack. The program is attached through a BPF link, so it goes away when
//! the process ends, whatever way it ends; an interface that already has an
//! XDP program is refused (the link fails) rather than taken over.
//!
//! The link can be given another program ([`XdpProgram::replace`]: the
//! compiled fast path, which sends up through the same socket map what it
//! does not handle) and this one back ([`XdpProgram::restore`]); each
//! packet runs one program or the other.

use std::io;

use crate::bpf::{Link, Map, MapKind, Prog, XdpAttach};

const XDP_PASS: i32 = 2;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const BPF_PSEUDO_MAP_FD: u64 = 1;

/// How the program runs on the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver (native XDP).
    Native,
    /// After the kernel built its socket buffer (generic XDP): works on
    /// every interface, slower.
    Generic,
}

/// `struct bpf_insn` as the kernel reads it.
const fn insn(code: u8, dst: u8, src: u64, off: i16, imm: i32) -> u64 {
    code as u64
        | (dst as u64) << 8
        | src << 12
        | (off as u16 as u64) << 16
        | (imm as u32 as u64) << 32
}

/// The program, its socket map and its link on one interface. Dropping it
/// detaches whichever program the link runs.
pub struct XdpProgram {
    map: Map,
    prog: Prog,
    link: Link,
    pub ifindex: i32,
    pub mode: XdpMode,
}

impl XdpProgram {
    /// Loads the redirect program with a socket map of `queues` entries and
    /// attaches it to `ifindex`: natively if the driver can, else generic
    /// (unless `generic_only`).
    pub fn attach(ifindex: i32, queues: u32, generic_only: bool) -> io::Result<XdpProgram> {
        let map = Map::create(MapKind::XskMap, 4, 4, queues.max(1), "sluice_xsks")?;
        let prog = [
            insn(0x61, 2, 1, 16, 0),                       // ldxw r2, [r1 + 16]
            insn(0x18, 1, BPF_PSEUDO_MAP_FD, 0, map.fd()), // lddw r1, map
            insn(0, 0, 0, 0, 0),
            insn(0xb7, 3, 0, 0, XDP_PASS), // mov r3, XDP_PASS
            insn(0x85, 0, 0, 0, BPF_FUNC_REDIRECT_MAP), // call
            insn(0x95, 0, 0, 0, 0),        // exit
        ];
        let prog = Prog::load_xdp("sluice_xsk", &prog)?;
        let native = if generic_only {
            None
        } else {
            Link::attach_xdp(&prog, ifindex, XdpAttach::Native).ok()
        };
        let (link, mode) = match native {
            Some(l) => (l, XdpMode::Native),
            None => (
                Link::attach_xdp(&prog, ifindex, XdpAttach::Generic)?,
                XdpMode::Generic,
            ),
        };
        Ok(XdpProgram {
            map,
            prog,
            link,
            ifindex,
            mode,
        })
    }

    /// Sends the frames of receive queue `queue` to socket `xsk`.
    pub fn set_socket(&self, queue: u32, xsk: i32) -> io::Result<()> {
        self.map
            .update(&queue.to_le_bytes(), &(xsk as u32).to_le_bytes())
    }

    /// The socket map (queue -> AF_XDP socket): what a replacing program
    /// redirects to for the packets it sends up.
    pub fn xsk_map(&self) -> &Map {
        &self.map
    }

    /// Runs `prog` on the interface instead (atomically).
    pub fn replace(&self, prog: &Prog) -> io::Result<()> {
        self.link.update(prog)
    }

    /// Runs this redirect program again.
    pub fn restore(&self) -> io::Result<()> {
        self.link.update(&self.prog)
    }
}
