//! The XDP program sluice loads on an AF_XDP port, and the `bpf(2)` calls
//! that load and attach it. No compiler or loader library is needed: the
//! program is five instructions, written here as bytecode.
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

use std::io;
use std::mem::size_of;

const BPF_MAP_CREATE: libc::c_int = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_LINK_CREATE: libc::c_int = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
const XDP_PASS: i32 = 2;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
const BPF_PSEUDO_MAP_FD: u8 = 1;

/// `union bpf_attr` for BPF_MAP_CREATE.
#[repr(C)]
#[derive(Default)]
struct MapCreate {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
}

/// `union bpf_attr` for BPF_MAP_UPDATE_ELEM.
#[repr(C)]
#[derive(Default)]
struct MapUpdate {
    map_fd: u32,
    pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// `union bpf_attr` for BPF_PROG_LOAD.
#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// `union bpf_attr` for BPF_LINK_CREATE.
#[repr(C)]
#[derive(Default)]
struct LinkCreate {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// `struct bpf_insn`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    regs: u8,
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

fn bpf<T>(cmd: libc::c_int, attr: &mut T) -> io::Result<i32> {
    // SAFETY: bpf(2) reads (and for some commands writes) `attr`, a live
    // value of the size passed.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            attr as *mut T as *mut libc::c_void,
            size_of::<T>() as u32,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as i32)
    }
}

struct Fd(i32);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: closing a descriptor this value owns, once.
        unsafe { libc::close(self.0) };
    }
}

/// How the program runs on the interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver (native XDP).
    Native,
    /// After the kernel built its socket buffer (generic XDP): works on
    /// every interface, slower.
    Generic,
}

/// The program, its socket map and its link on one interface. Dropping it
/// detaches the program.
pub struct XdpProgram {
    map: Fd,
    _prog: Fd,
    _link: Fd,
    pub mode: XdpMode,
}

impl XdpProgram {
    /// Loads the redirect program with a socket map of `queues` entries and
    /// attaches it to `ifindex`: natively if the driver can, else generic
    /// (unless `generic_only`).
    pub fn attach(ifindex: i32, queues: u32, generic_only: bool) -> io::Result<XdpProgram> {
        let mut mc = MapCreate {
            map_type: BPF_MAP_TYPE_XSKMAP,
            key_size: 4,
            value_size: 4,
            max_entries: queues.max(1),
            ..Default::default()
        };
        let map = Fd(bpf(BPF_MAP_CREATE, &mut mc)
            .map_err(|e| io::Error::new(e.kind(), format!("creating the XSKMAP: {e}")))?);
        let prog = [
            insn(0x61, 2, 1, 16, 0),                    // ldxw r2, [r1 + 16]
            insn(0x18, 1, BPF_PSEUDO_MAP_FD, 0, map.0), // lddw r1, map
            insn(0, 0, 0, 0, 0),
            insn(0xb7, 3, 0, 0, XDP_PASS), // mov r3, XDP_PASS
            insn(0x85, 0, 0, 0, BPF_FUNC_REDIRECT_MAP), // call
            insn(0x95, 0, 0, 0, 0),        // exit
        ];
        let license = b"GPL\0";
        let mut log = vec![0u8; 4096];
        let mut name = [0u8; 16];
        name[..12].copy_from_slice(b"sluice_xsk\0\0");
        let mut pl = ProgLoad {
            prog_type: BPF_PROG_TYPE_XDP,
            insn_cnt: prog.len() as u32,
            insns: prog.as_ptr() as u64,
            license: license.as_ptr() as u64,
            log_level: 1,
            log_size: log.len() as u32,
            log_buf: log.as_mut_ptr() as u64,
            prog_name: name,
            expected_attach_type: BPF_XDP,
            ..Default::default()
        };
        let prog = Fd(bpf(BPF_PROG_LOAD, &mut pl).map_err(|e| {
            let text = String::from_utf8_lossy(&log);
            let text = text.trim_end_matches('\0').trim();
            io::Error::new(e.kind(), format!("loading the XDP program: {e} {text}"))
        })?);
        let link = |flags| {
            let mut lc = LinkCreate {
                prog_fd: prog.0 as u32,
                target_ifindex: ifindex as u32,
                attach_type: BPF_XDP,
                flags,
            };
            bpf(BPF_LINK_CREATE, &mut lc)
        };
        let native = if generic_only {
            None
        } else {
            link(XDP_FLAGS_DRV_MODE).ok()
        };
        let (link, mode) = match native {
            Some(fd) => (fd, XdpMode::Native),
            None => match link(XDP_FLAGS_SKB_MODE) {
                Ok(fd) => (fd, XdpMode::Generic),
                Err(e) => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!("attaching the XDP program: {e}"),
                    ))
                }
            },
        };
        Ok(XdpProgram {
            map,
            _prog: prog,
            _link: Fd(link),
            mode,
        })
    }

    /// Sends the frames of receive queue `queue` to socket `xsk`.
    pub fn set_socket(&self, queue: u32, xsk: i32) -> io::Result<()> {
        let (key, value) = (queue, xsk as u32);
        let mut mu = MapUpdate {
            map_fd: self.map.0 as u32,
            key: &key as *const u32 as u64,
            value: &value as *const u32 as u64,
            ..Default::default()
        };
        bpf(BPF_MAP_UPDATE_ELEM, &mut mu)
            .map(|_| ())
            .map_err(|e| io::Error::new(e.kind(), format!("XSKMAP update: {e}")))
    }
}
