//! bpf(2): maps, XDP programs, links and test runs. The only place in
//! sluice that makes this system call.
//!
//! Contract: every object owns its file descriptor and closes it on drop
//! (a program stays attached as long as its [`Link`] lives, and goes away
//! with the process whatever way it ends); every error says what failed,
//! and a program the verifier refused carries the tail of its log.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const MAP_CREATE: libc::c_int = 0;
const MAP_LOOKUP_ELEM: libc::c_int = 1;
const MAP_UPDATE_ELEM: libc::c_int = 2;
const PROG_LOAD: libc::c_int = 5;
const PROG_TEST_RUN: libc::c_int = 10;
const MAP_LOOKUP_BATCH: libc::c_int = 24;
const MAP_UPDATE_BATCH: libc::c_int = 26;
const LINK_CREATE: libc::c_int = 28;
const LINK_UPDATE: libc::c_int = 29;
const PROG_TYPE_XDP: u32 = 6;
const ATTACH_XDP: u32 = 37;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// The map types sluice uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapKind {
    Hash,
    Array,
    PercpuArray,
    DevMap,
    XskMap,
}

impl MapKind {
    fn code(self) -> u32 {
        match self {
            MapKind::Hash => 1,
            MapKind::Array => 2,
            MapKind::PercpuArray => 6,
            MapKind::DevMap => 14,
            MapKind::XskMap => 17,
        }
    }
}

fn bpf<T>(cmd: libc::c_int, attr: &mut T) -> io::Result<i32> {
    // SAFETY: bpf(2) reads (and for some commands writes) `attr`, a live
    // value of the size passed; pointers inside it are the caller's live
    // buffers of the sizes it states.
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

fn owned(fd: i32) -> OwnedFd {
    // SAFETY: `fd` was just returned by bpf(2) and is owned by no one else.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn context(e: io::Error, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

fn name16(name: &str) -> [u8; 16] {
    let mut n = [0u8; 16];
    for (d, s) in n.iter_mut().zip(
        name.bytes()
            .filter(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .take(15),
    ) {
        *d = s;
    }
    n
}

#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
#[derive(Default)]
struct ElemAttr {
    map_fd: u32,
    pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct BatchAttr {
    in_batch: u64,
    out_batch: u64,
    keys: u64,
    values: u64,
    count: u32,
    map_fd: u32,
    elem_flags: u64,
    flags: u64,
}

/// A BPF map.
#[derive(Debug)]
pub struct Map {
    fd: OwnedFd,
    kind: MapKind,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
}

impl Map {
    /// Creates a map (`name`: up to 15 characters, for diagnostics).
    pub fn create(
        kind: MapKind,
        key_size: u32,
        value_size: u32,
        max_entries: u32,
        name: &str,
    ) -> io::Result<Map> {
        let mut a = MapCreateAttr {
            map_type: kind.code(),
            key_size,
            value_size,
            max_entries,
            map_name: name16(name),
            ..Default::default()
        };
        let fd = bpf(MAP_CREATE, &mut a).map_err(|e| {
            context(
                e,
                format_args!("creating BPF map {name} ({kind:?}, {max_entries} entries)"),
            )
        })?;
        Ok(Map {
            fd: owned(fd),
            kind,
            key_size,
            value_size,
            max_entries,
        })
    }

    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    pub fn kind(&self) -> MapKind {
        self.kind
    }

    pub fn key_size(&self) -> u32 {
        self.key_size
    }

    pub fn value_size(&self) -> u32 {
        self.value_size
    }

    pub fn max_entries(&self) -> u32 {
        self.max_entries
    }

    fn percpu(&self) -> bool {
        self.kind == MapKind::PercpuArray
    }

    /// Bytes the kernel reads or writes for one value.
    fn value_buf_len(&self) -> io::Result<usize> {
        Ok(if self.percpu() {
            possible_cpus()? * (self.value_size as usize).next_multiple_of(8)
        } else {
            self.value_size as usize
        })
    }

    fn check(&self, key: &[u8], value: usize) -> io::Result<()> {
        if key.len() != self.key_size as usize || value != self.value_size as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "BPF map entry of {}+{} bytes for a map of {}+{}",
                    key.len(),
                    value,
                    self.key_size,
                    self.value_size
                ),
            ));
        }
        Ok(())
    }

    /// Sets `key` to `value` (for a per-CPU map, on every CPU).
    pub fn update(&self, key: &[u8], value: &[u8]) -> io::Result<()> {
        self.check(key, value.len())?;
        let buf;
        let v = if self.percpu() {
            let stride = (self.value_size as usize).next_multiple_of(8);
            let mut b = vec![0u8; self.value_buf_len()?];
            for c in b.chunks_mut(stride) {
                c[..value.len()].copy_from_slice(value);
            }
            buf = b;
            &buf[..]
        } else {
            value
        };
        let mut a = ElemAttr {
            map_fd: self.fd() as u32,
            key: key.as_ptr() as u64,
            value: v.as_ptr() as u64,
            ..Default::default()
        };
        bpf(MAP_UPDATE_ELEM, &mut a)
            .map(|_| ())
            .map_err(|e| context(e, format_args!("updating BPF map ({:?})", self.kind)))
    }

    /// Sets many entries: `keys` and `values` hold n of each, back to back.
    pub fn update_many(&self, keys: &[u8], values: &[u8]) -> io::Result<()> {
        let (ks, vs) = (self.key_size as usize, self.value_size as usize);
        if ks == 0
            || vs == 0
            || !keys.len().is_multiple_of(ks)
            || values.len() / vs != keys.len() / ks
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "BPF map batch: keys and values do not pair up",
            ));
        }
        let n = keys.len() / ks;
        if !self.percpu() {
            const CHUNK: usize = 65_536;
            let mut done = 0;
            while done < n {
                let m = (n - done).min(CHUNK);
                let mut a = BatchAttr {
                    keys: keys[done * ks..].as_ptr() as u64,
                    values: values[done * vs..].as_ptr() as u64,
                    count: m as u32,
                    map_fd: self.fd() as u32,
                    ..Default::default()
                };
                match bpf(MAP_UPDATE_BATCH, &mut a) {
                    Ok(_) => done += m,
                    Err(e)
                        if done == 0
                            && matches!(
                                e.raw_os_error(),
                                Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)
                            ) =>
                    {
                        break
                    }
                    Err(e) => return Err(context(e, "updating a BPF map in a batch")),
                }
            }
            if done == n {
                return Ok(());
            }
        }
        for i in 0..n {
            self.update(&keys[i * ks..(i + 1) * ks], &values[i * vs..(i + 1) * vs])?;
        }
        Ok(())
    }

    /// Reads `key`'s value; Ok(false) when absent. For a per-CPU map,
    /// `value` receives every CPU's copy (see [`possible_cpus`]).
    pub fn lookup(&self, key: &[u8], value: &mut [u8]) -> io::Result<bool> {
        let need = self.value_buf_len()?;
        if key.len() != self.key_size as usize || value.len() != need {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "BPF map lookup: buffers of {}+{}, map of {}+{need}",
                    key.len(),
                    value.len(),
                    self.key_size
                ),
            ));
        }
        let mut a = ElemAttr {
            map_fd: self.fd() as u32,
            key: key.as_ptr() as u64,
            value: value.as_mut_ptr() as u64,
            ..Default::default()
        };
        match bpf(MAP_LOOKUP_ELEM, &mut a) {
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
            Err(e) => Err(context(e, "reading a BPF map")),
        }
    }

    /// A per-CPU array of u64 fields: element `index`'s fields summed
    /// over the CPUs.
    pub fn percpu_sum(&self, index: u32) -> io::Result<Vec<u64>> {
        let fields = self.value_size as usize / 8;
        let stride = (self.value_size as usize).next_multiple_of(8);
        let mut buf = vec![0u8; self.value_buf_len()?];
        self.lookup(&index.to_le_bytes(), &mut buf)?;
        let mut out = vec![0u64; fields];
        for cpu in buf.chunks(stride) {
            for (f, o) in out.iter_mut().enumerate() {
                *o += u64::from_le_bytes(cpu[8 * f..8 * f + 8].try_into().unwrap_or([0; 8]));
            }
        }
        Ok(out)
    }

    /// A per-CPU array of u64 fields: every element's fields summed over
    /// the CPUs, element after element (read in batches).
    pub fn percpu_sum_all(&self) -> io::Result<Vec<u64>> {
        let fields = self.value_size as usize / 8;
        let stride = (self.value_size as usize).next_multiple_of(8);
        let cpus = possible_cpus()?;
        let n = self.max_entries as usize;
        let mut out = vec![0u64; n * fields];
        // In batches (one system call per 4096 entries, not one each).
        const CHUNK: usize = 4096;
        let mut keys = vec![0u32; CHUNK];
        let mut vals = vec![0u8; CHUNK * cpus * stride];
        let mut next: u32 = 0;
        let mut done = 0usize;
        while done < n {
            let mut out_batch: u32 = 0;
            let mut a = BatchAttr {
                in_batch: if done == 0 {
                    0
                } else {
                    &next as *const u32 as u64
                },
                out_batch: &mut out_batch as *mut u32 as u64,
                keys: keys.as_mut_ptr() as u64,
                values: vals.as_mut_ptr() as u64,
                count: CHUNK.min(n - done) as u32,
                map_fd: self.fd() as u32,
                ..Default::default()
            };
            let r = bpf(MAP_LOOKUP_BATCH, &mut a);
            let got = a.count as usize;
            let last = r.is_err();
            match r {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) if done == 0 && e.raw_os_error() == Some(libc::EINVAL) => {
                    // No batch operations here: one element at a time.
                    out.clear();
                    for i in 0..self.max_entries {
                        out.extend(self.percpu_sum(i)?);
                    }
                    return Ok(out);
                }
                Err(e) => return Err(context(e, "reading a BPF map in a batch")),
            }
            for (j, &k) in keys[..got].iter().enumerate() {
                let k = k as usize;
                if k >= n {
                    continue;
                }
                for cpu in 0..cpus {
                    let v = &vals[(j * cpus + cpu) * stride..];
                    for f in 0..fields {
                        out[k * fields + f] +=
                            u64::from_le_bytes(v[8 * f..8 * f + 8].try_into().unwrap_or([0; 8]));
                    }
                }
            }
            done += got;
            next = out_batch;
            if got == 0 || last {
                break;
            }
        }
        Ok(out)
    }
}

/// CPUs the kernel sizes per-CPU values for (`/sys/devices/system/cpu/possible`).
pub fn possible_cpus() -> io::Result<usize> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .map_err(|e| context(e, "reading /sys/devices/system/cpu/possible"))?;
    parse_cpu_list(s.trim()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("/sys/devices/system/cpu/possible: cannot read {s:?}"),
        )
    })
}

/// "0-3,5" -> 6 (the highest CPU plus one).
fn parse_cpu_list(s: &str) -> Option<usize> {
    let mut max = None;
    for part in s.split(',') {
        let last = part.rsplit('-').next()?;
        let n: usize = last.trim().parse().ok()?;
        max = Some(max.map_or(n, |m: usize| m.max(n)));
    }
    max.map(|m| m + 1)
}

#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
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

#[repr(C)]
#[derive(Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    /// Explicit, so it is zero: the kernel refuses non-zero bytes past
    /// the fields it knows, and Rust leaves padding undefined.
    _pad: u32,
}

/// A loaded XDP program.
#[derive(Debug)]
pub struct Prog {
    fd: OwnedFd,
}

impl Prog {
    /// Loads an XDP program: raw instructions with map fds patched in.
    pub fn load_xdp(name: &str, insns: &[u64]) -> io::Result<Prog> {
        let license = b"GPL\0";
        let attempt = |log: &mut [u8], level: u32| {
            let mut a = ProgLoadAttr {
                prog_type: PROG_TYPE_XDP,
                insn_cnt: insns.len() as u32,
                insns: insns.as_ptr() as u64,
                license: license.as_ptr() as u64,
                log_level: level,
                log_size: log.len() as u32,
                log_buf: if log.is_empty() {
                    0
                } else {
                    log.as_mut_ptr() as u64
                },
                prog_name: name16(name),
                expected_attach_type: ATTACH_XDP,
                ..Default::default()
            };
            bpf(PROG_LOAD, &mut a)
        };
        match attempt(&mut [], 0) {
            Ok(fd) => return Ok(Prog { fd: owned(fd) }),
            Err(e)
                if e.raw_os_error() != Some(libc::EACCES)
                    && e.raw_os_error() != Some(libc::EINVAL) =>
            {
                return Err(context(e, format_args!("loading XDP program {name}")))
            }
            Err(_) => {}
        }
        // Refused: again with the verifier's log.
        let mut size = 1 << 20;
        loop {
            let mut log = vec![0u8; size];
            match attempt(&mut log, 1) {
                Ok(fd) => return Ok(Prog { fd: owned(fd) }),
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) && size < 16 << 20 => size *= 4,
                Err(e) => {
                    let text = String::from_utf8_lossy(&log);
                    let text = text.trim_end_matches('\0').trim_end();
                    let mut from = text.len().saturating_sub(4000);
                    while !text.is_char_boundary(from) {
                        from += 1;
                    }
                    let tail = &text[from..];
                    return Err(context(
                        e,
                        format_args!(
                            "loading XDP program {name} ({} instructions); verifier: {tail}",
                            insns.len()
                        ),
                    ));
                }
            }
        }
    }

    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Runs the program once on `data` (BPF_PROG_TEST_RUN): its return
    /// code and the frame as it left it.
    pub fn test_run(&self, data: &[u8]) -> io::Result<(u32, Vec<u8>)> {
        self.test_run_repeat(data, 1)
            .map(|(code, out, _)| (code, out))
    }

    /// Runs the program `repeat` times on `data`, in the kernel: its
    /// return code, the frame as the last run left it, and the mean time
    /// of a run in ns as the kernel measured it.
    pub fn test_run_repeat(&self, data: &[u8], repeat: u32) -> io::Result<(u32, Vec<u8>, u32)> {
        let mut out = vec![0u8; data.len() + 512];
        let mut a = TestRunAttr {
            prog_fd: self.fd() as u32,
            data_size_in: data.len() as u32,
            data_size_out: out.len() as u32,
            data_in: data.as_ptr() as u64,
            data_out: out.as_mut_ptr() as u64,
            repeat,
            ..Default::default()
        };
        bpf(PROG_TEST_RUN, &mut a)
            .map_err(|e| context(e, "running an XDP program on a test frame"))?;
        out.truncate(a.data_size_out as usize);
        Ok((a.retval, out, a.duration))
    }
}

#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

#[repr(C)]
#[derive(Default)]
struct LinkUpdateAttr {
    link_fd: u32,
    new_prog_fd: u32,
    flags: u32,
    old_prog_fd: u32,
}

/// How an XDP program runs on an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpAttach {
    /// In the driver.
    Native,
    /// After the socket buffer is built: every interface, slower.
    Generic,
}

/// A program attached to an interface's XDP hook; detached on drop.
#[derive(Debug)]
pub struct Link {
    fd: OwnedFd,
}

impl Link {
    pub fn attach_xdp(prog: &Prog, ifindex: i32, mode: XdpAttach) -> io::Result<Link> {
        let mut a = LinkCreateAttr {
            prog_fd: prog.fd() as u32,
            target_ifindex: ifindex as u32,
            attach_type: ATTACH_XDP,
            flags: match mode {
                XdpAttach::Native => XDP_FLAGS_DRV_MODE,
                XdpAttach::Generic => XDP_FLAGS_SKB_MODE,
            },
        };
        let fd = bpf(LINK_CREATE, &mut a).map_err(|e| {
            context(
                e,
                format_args!("attaching an XDP program ({mode:?}) to ifindex {ifindex}"),
            )
        })?;
        Ok(Link { fd: owned(fd) })
    }

    /// Replaces the link's program atomically: each packet runs the old
    /// program or the new one.
    pub fn update(&self, prog: &Prog) -> io::Result<()> {
        let mut a = LinkUpdateAttr {
            link_fd: self.fd.as_raw_fd() as u32,
            new_prog_fd: prog.fd() as u32,
            ..Default::default()
        };
        bpf(LINK_UPDATE, &mut a)
            .map(|_| ())
            .map_err(|e| context(e, "replacing an XDP program"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-1"), Some(2));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("0,2-3"), Some(4));
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn names_are_cut_to_what_the_kernel_takes() {
        assert_eq!(&name16("sluice-table.0")[..12], b"sluicetable0");
        assert_eq!(name16("a_very_long_name_indeed")[15], 0);
    }
}
