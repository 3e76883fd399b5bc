//! VXLAN and Geneve tunnel ports over the host's IP stack.
//!
//! A tunnel port is a UDP socket bound to `local_ip` (or any address) and
//! the protocol's port. Receiving, the kernel has already routed,
//! reassembled and checksummed the outer packet: [`Tunnel::recv`] takes
//! the VNI from the VXLAN/Geneve header ([`packet::tunnel`]), the remote
//! endpoint from the datagram's source and the local one from its
//! `IP_PKTINFO`, and hands the inner Ethernet frame on with that
//! [`TunnelMeta`]. Sending, each frame's metadata says where it goes
//! (`tun_dst`, unless the port has a fixed `remote_ip`) and with which VNI
//! (`tun_id`, unless the port has a fixed `key` or `out_key`); the kernel
//! adds the outer UDP/IP/Ethernet headers, finds the route and the next
//! hop's MAC and fills in checksums (the IPv4 UDP checksum only with
//! `csum`, as Open vSwitch; IPv6 always). The socket carries the port's
//! other options: TTL, TOS, Don't Fragment (`df_default`) and the mark
//! (`egress_pkt_mark`).
//!
//! Why the host stack and not raw frames on an underlay interface: it
//! needs no ARP/ND, routing or IP fragment handling of sluice's own, works
//! over any interface (bonds, VLANs, the loopback) and interoperates with
//! the kernel's and Open vSwitch's endpoints by construction; batching
//! (`recvmmsg`/`sendmmsg`, the inner frame sent straight from its buffer
//! through a second `iovec`) keeps the cost per frame to the stack's. The
//! price is a fixed UDP source port (the port's own, `dst_port`): the
//! underlay sees one UDP flow per pair of endpoints, so ECMP cannot spread
//! one pair's traffic (RFC 7348 suggests a hash of the inner flow).
//!
//! Each worker opens its own socket on the same address with
//! `SO_REUSEPORT`; the kernel spreads datagrams over them by their 4-tuple
//! (so one pair of endpoints stays on one worker, in order). Two tunnel
//! ports cannot share an address and UDP port (the kernel would spread one
//! port's datagrams over both): a process-wide claim on each (address,
//! UDP port) refuses the second, whichever bridge it is on. Another
//! program's socket on the port makes the bind fail, unless that program
//! also sets `SO_REUSEPORT` under the same user: then the kernel shares
//! the port between both, which no socket option can prevent.
//!
//! A Geneve port hands each received frame's options on with it
//! ([`Batch::tunneled_frame`]) and sends each frame with the options the
//! pipeline gives it ([`TunnelOptions`]), the C bit set when one is
//! critical; which options are known, and what a frame with an unknown
//! critical one becomes, is the pipeline's to say (`pipeline::tlv`).
//!
//! What is refused on receive, each counted as a receive error: a header
//! that does not decode (VXLAN without its I flag; Geneve of another
//! version, a control message or a non-Ethernet payload), an inner frame shorter than an Ethernet header, a datagram
//! from another endpoint than a fixed `remote_ip`, or with another VNI
//! than a fixed `key` (`in_key`). On send, a frame with no destination (a flow-based
//! port and no `tun_dst`) or one the stack refuses (no route) is dropped
//! and counted by the caller as a transmit drop.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use packet::tunnel::{decode_fixed, Proto, HEADER_LEN, MAX_OPTIONS};

use crate::{Batch, Port, TunnelDst, TunnelMeta, TunnelOptions};

/// Default outer TTL / hop limit (Open vSwitch's).
pub const DEFAULT_TTL: u8 = 64;

/// Linux's `UDP_NO_CHECK6_RX` (include/uapi/linux/udp.h): accept IPv6
/// datagrams with a zero checksum.
const UDP_NO_CHECK6_RX: libc::c_int = 102;

/// An Ethernet header: the shortest inner frame taken.
const ETH_HLEN: usize = 14;

/// The largest frame a tunnel port carries: a 9000-byte MTU inside (the
/// underlay decides what really fits; a larger datagram is dropped and
/// counted as truncated).
pub const TUNNEL_MAX_FRAME: usize = 9000 + 14 + 8;

/// A tunnel port as configured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TunnelSpec {
    pub proto: Proto,
    /// The remote endpoint; None: each packet's `tun_dst` ("flow").
    pub remote: Option<IpAddr>,
    /// The VNI received datagrams must carry (Open vSwitch's `in_key`);
    /// None: any, placed in `tun_id` ("flow").
    pub in_key: Option<u32>,
    /// The VNI sent (Open vSwitch's `out_key`); None: each packet's
    /// `tun_id` ("flow").
    pub out_key: Option<u32>,
    /// The local address to bind; None: any.
    pub local: Option<IpAddr>,
    /// The UDP port to listen on and send to.
    pub dst_port: u16,
    /// Outer TTL / hop limit.
    pub ttl: u8,
    /// Outer TOS / traffic class.
    pub tos: u8,
    /// A UDP checksum on outgoing IPv4 datagrams (Open vSwitch's `csum`,
    /// off by default as there). IPv6 datagrams always carry one (RFC
    /// 8200 wants it; Linux receivers drop those without by default);
    /// received ones without are taken.
    pub csum: bool,
    /// The Don't Fragment bit on outgoing IPv4 datagrams that fit the
    /// path MTU (Open vSwitch's `df_default`, on by default); off: never
    /// set, the stack fragments.
    pub df: bool,
    /// The socket mark (`SO_MARK`) of outgoing datagrams (Open vSwitch's
    /// `egress_pkt_mark`); None: unmarked.
    pub mark: Option<u32>,
}

impl TunnelSpec {
    /// A flow-based port of `proto` (remote and key from the flows) on
    /// the protocol's IANA port, bound to any address.
    pub fn flow(proto: Proto) -> TunnelSpec {
        TunnelSpec {
            proto,
            remote: None,
            in_key: None,
            out_key: None,
            local: None,
            dst_port: proto.default_port(),
            ttl: DEFAULT_TTL,
            tos: 0,
            csum: false,
            df: true,
            mark: None,
        }
    }
}

/// The (local address, UDP port) pairs this process's tunnel ports hold.
static CLAIMED: std::sync::Mutex<Vec<(Option<IpAddr>, u16)>> = std::sync::Mutex::new(Vec::new());

/// One tunnel port's claim on its address and UDP port, shared by its
/// workers' sockets and given back when the last one closes.
struct Claim(Option<IpAddr>, u16);

impl Claim {
    fn take(name: &str, spec: &TunnelSpec) -> io::Result<Claim> {
        let mut c = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
        let clash = c.iter().find(|(l, p)| {
            *p == spec.dst_port && (l.is_none() || spec.local.is_none() || *l == spec.local)
        });
        if let Some((l, p)) = clash {
            let at = l.map_or("any address".to_string(), |a| a.to_string());
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!("{name}: another tunnel port already uses UDP port {p} on {at}: give each its own local_ip or dst_port"),
            ));
        }
        c.push((spec.local, spec.dst_port));
        Ok(Claim(spec.local, spec.dst_port))
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        let mut c = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = c.iter().position(|x| *x == (self.0, self.1)) {
            c.swap_remove(i);
        }
    }
}

/// A tunnel port (one worker's socket).
pub struct Tunnel {
    name: String,
    spec: TunnelSpec,
    _claim: std::sync::Arc<Claim>,
    fd: i32,
    /// The socket is AF_INET6 (dual-stack unless bound to an IPv6 address).
    v6: bool,
    rx_errors: u64,
    rx_truncated: u64,
    hw: [u8; 6],
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        // SAFETY: fd is a socket this value owns.
        unsafe { libc::close(self.fd) };
    }
}

fn os_err(what: &str, name: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{name}: {what}: {e}"))
}

fn setopt<T>(fd: i32, level: i32, opt: i32, v: T) -> bool {
    crate::os::setsockopt(fd, level, opt, &v).is_ok()
}

/// The socket address of `ip:port` for a socket of family v6 (IPv4 as
/// an IPv4-mapped address) or v4; None for IPv6 on an IPv4 socket.
fn sockaddr(ip: IpAddr, port: u16, v6: bool) -> Option<(libc::sockaddr_storage, libc::socklen_t)> {
    // SAFETY: sockaddr_storage is plain data, large enough for either.
    let mut ss: libc::sockaddr_storage = unsafe { zeroed() };
    if v6 {
        let a = match ip {
            IpAddr::V4(a) => a.to_ipv6_mapped(),
            IpAddr::V6(a) => a,
        };
        let sin6 = libc::sockaddr_in6 {
            sin6_family: libc::AF_INET6 as libc::sa_family_t,
            sin6_port: port.to_be(),
            sin6_flowinfo: 0,
            sin6_addr: libc::in6_addr {
                s6_addr: a.octets(),
            },
            sin6_scope_id: 0,
        };
        // SAFETY: sockaddr_storage is larger than sockaddr_in6.
        unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in6, sin6) };
        Some((ss, size_of::<libc::sockaddr_in6>() as libc::socklen_t))
    } else {
        let IpAddr::V4(a) = ip else { return None };
        let sin = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(a).to_be(),
            },
            sin_zero: [0; 8],
        };
        // SAFETY: sockaddr_storage is larger than sockaddr_in.
        unsafe { std::ptr::write(&mut ss as *mut _ as *mut libc::sockaddr_in, sin) };
        Some((ss, size_of::<libc::sockaddr_in>() as libc::socklen_t))
    }
}

/// The address in a socket address the kernel wrote (IPv4-mapped IPv6
/// addresses as IPv4).
fn addr_of(ss: &libc::sockaddr_storage) -> Option<IpAddr> {
    match ss.ss_family as i32 {
        libc::AF_INET => {
            // SAFETY: the family says this is a sockaddr_in.
            let sin = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                sin.sin_addr.s_addr,
            ))))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says this is a sockaddr_in6.
            let sin6 = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(unmap(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
        }
        _ => None,
    }
}

fn unmap(a: Ipv6Addr) -> IpAddr {
    match a.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(a),
    }
}

/// The local (destination) address of a received datagram, from its
/// IP_PKTINFO / IPV6_PKTINFO control message.
fn local_of(h: &libc::msghdr) -> Option<IpAddr> {
    // SAFETY: the CMSG_* helpers walk the control buffer the kernel filled,
    // within msg_controllen; payloads are copied out unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(h);
        while !c.is_null() {
            let (level, ty) = ((*c).cmsg_level, (*c).cmsg_type);
            if level == libc::IPPROTO_IP && ty == libc::IP_PKTINFO {
                let p: libc::in_pktinfo = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const _);
                return Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(p.ipi_addr.s_addr))));
            }
            if level == libc::IPPROTO_IPV6 && ty == libc::IPV6_PKTINFO {
                let p: libc::in6_pktinfo = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const _);
                return Some(unmap(Ipv6Addr::from(p.ipi6_addr.s6_addr)));
            }
            c = libc::CMSG_NXTHDR(h, c);
        }
    }
    None
}

/// Room for both IPV6_PKTINFO (40 bytes) and IP_PKTINFO (32), which an
/// IPv4 datagram on a dual-stack socket brings.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct CmsgBuf([u8; 128]);

/// Frames handled per system call.
const CHUNK: usize = 64;

impl Tunnel {
    /// Opens `workers` sockets of one tunnel port named `name` (one per
    /// worker, sharing the address with `SO_REUSEPORT`). Refused if
    /// another tunnel port of this process holds the address and port.
    pub fn open_workers(name: &str, spec: TunnelSpec, workers: usize) -> io::Result<Vec<Tunnel>> {
        let claim = std::sync::Arc::new(Claim::take(name, &spec)?);
        (0..workers.max(1))
            .map(|_| Tunnel::open_one(name, spec, claim.clone()))
            .collect()
    }

    /// Opens a tunnel port served by one worker.
    pub fn open(name: &str, spec: TunnelSpec) -> io::Result<Tunnel> {
        let claim = std::sync::Arc::new(Claim::take(name, &spec)?);
        Tunnel::open_one(name, spec, claim)
    }

    fn open_one(name: &str, spec: TunnelSpec, claim: std::sync::Arc<Claim>) -> io::Result<Tunnel> {
        // The family: that of local_ip; else IPv4 for a fixed IPv4 remote;
        // else dual-stack IPv6 (both families on one socket), or IPv4 where
        // IPv6 is off.
        let want_v6 = match (spec.local, spec.remote) {
            (Some(l), _) => l.is_ipv6(),
            (None, Some(IpAddr::V4(_))) => false,
            _ => true,
        };
        let mut t = match Tunnel::socket(name, spec, want_v6, claim.clone()) {
            Err(e)
                if want_v6
                    && spec.local.is_none()
                    && spec.remote.is_none()
                    && e.kind() != io::ErrorKind::AddrInUse =>
            {
                // IPv6 off (no AF_INET6, or no [::] to bind): IPv4 only.
                // Not when [::] is someone else's: that is an error.
                Tunnel::socket(name, spec, false, claim)
                    .map_err(|e4| io::Error::new(e4.kind(), format!("{e4} (and over IPv6: {e})")))?
            }
            r => r?,
        };
        let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        let b = h.to_be_bytes();
        // Locally administered, unicast, stable per name.
        t.hw = [0x02 | (b[0] & 0xfc), b[1], b[2], b[3], b[4], b[5]];
        Ok(t)
    }

    fn socket(
        name: &str,
        spec: TunnelSpec,
        v6: bool,
        claim: std::sync::Arc<Claim>,
    ) -> io::Result<Tunnel> {
        let family = if v6 { libc::AF_INET6 } else { libc::AF_INET };
        // SAFETY: plain socket(2).
        let fd = unsafe {
            libc::socket(
                family,
                libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::IPPROTO_UDP,
            )
        };
        if fd < 0 {
            return Err(os_err("socket", name));
        }
        let t = Tunnel {
            name: name.to_string(),
            spec,
            _claim: claim,
            fd,
            v6,
            rx_errors: 0,
            rx_truncated: 0,
            hw: [0; 6],
        };
        let one: libc::c_int = 1;
        setopt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, one);
        if v6 {
            // Dual-stack unless bound to an IPv6 address.
            let only: libc::c_int = matches!(spec.local, Some(IpAddr::V6(_))) as libc::c_int;
            setopt(fd, libc::IPPROTO_IPV6, libc::IPV6_V6ONLY, only);
            setopt(fd, libc::IPPROTO_IPV6, libc::IPV6_RECVPKTINFO, one);
            setopt(
                fd,
                libc::IPPROTO_IPV6,
                libc::IPV6_UNICAST_HOPS,
                spec.ttl as libc::c_int,
            );
            setopt(
                fd,
                libc::IPPROTO_IPV6,
                libc::IPV6_TCLASS,
                spec.tos as libc::c_int,
            );
        }
        if v6 {
            // Take datagrams without a checksum (Open vSwitch sends IPv6
            // ones so unless `csum` is set); always send one.
            setopt(fd, libc::IPPROTO_UDP, UDP_NO_CHECK6_RX, one);
            let pmtu = if spec.df {
                libc::IPV6_PMTUDISC_WANT
            } else {
                libc::IPV6_PMTUDISC_DONT
            };
            setopt(fd, libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER, pmtu);
        }
        // IPv4 datagrams without a UDP checksum unless `csum`.
        setopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_NO_CHECK,
            (!spec.csum) as libc::c_int,
        );
        let pmtu = if spec.df {
            libc::IP_PMTUDISC_WANT
        } else {
            libc::IP_PMTUDISC_DONT
        };
        if let Some(m) = spec.mark {
            if crate::os::setsockopt(fd, libc::SOL_SOCKET, libc::SO_MARK, &m).is_err() {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(
                    e.kind(),
                    format!("{name}: egress_pkt_mark {m}: SO_MARK: {e}"),
                ));
            }
        }
        // On a dual-stack socket these apply to its IPv4 traffic.
        setopt(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, pmtu);
        setopt(fd, libc::IPPROTO_IP, libc::IP_PKTINFO, one);
        setopt(fd, libc::IPPROTO_IP, libc::IP_TTL, spec.ttl as libc::c_int);
        setopt(fd, libc::IPPROTO_IP, libc::IP_TOS, spec.tos as libc::c_int);
        let any = if v6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        };
        let (ss, len) =
            sockaddr(spec.local.unwrap_or(any), spec.dst_port, v6).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{name}: local_ip is not IPv4"),
                )
            })?;
        // SAFETY: ss holds a socket address of length len.
        if unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) } < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!(
                    "{name}: cannot bind UDP port {} on {}: {e} (another tunnel endpoint, such as a Linux {} device, may hold it)",
                    spec.dst_port,
                    spec.local.unwrap_or(any),
                    spec.proto.name()
                ),
            ));
        }
        Ok(t)
    }

    /// Where a frame with metadata `m` goes, and with which VNI.
    fn route(&self, m: &TunnelDst) -> Option<(IpAddr, u32)> {
        let dst = match self.spec.remote {
            Some(r) => r,
            None if m.ipv4_dst != 0 => IpAddr::V4(Ipv4Addr::from(m.ipv4_dst)),
            None if m.ipv6_dst != [0; 16] => IpAddr::V6(Ipv6Addr::from(m.ipv6_dst)),
            None => return None,
        };
        Some((dst, self.spec.out_key.unwrap_or(m.id as u32)))
    }

    fn send_with(
        &mut self,
        frames: &[&[u8]],
        meta: impl Fn(usize) -> TunnelDst,
        opts: &TunnelOptions,
    ) -> io::Result<usize> {
        let mut sent = 0;
        let mut base = 0;
        while base < frames.len() {
            let end = (base + CHUNK).min(frames.len());
            // SAFETY: plain data, filled below before use.
            let mut names: [libc::sockaddr_storage; CHUNK] = unsafe { zeroed() };
            let mut iov: [[libc::iovec; 3]; CHUNK] = unsafe { zeroed() };
            let mut msgs: [libc::mmsghdr; CHUNK] = unsafe { zeroed() };
            let mut hdrs = [[0u8; HEADER_LEN]; CHUNK];
            let geneve = self.spec.proto == Proto::Geneve;
            let mut m = 0;
            for (i, f) in frames[base..end].iter().enumerate() {
                let Some((dst, vni)) = self.route(&meta(base + i)) else {
                    continue;
                };
                let Some((ss, len)) = sockaddr(dst, self.spec.dst_port, self.v6) else {
                    continue;
                };
                names[m] = ss;
                // Whole options only, at most what a header announces.
                let o = if geneve { opts.get(base + i) } else { &[] };
                let o = &o[..o.len().min(MAX_OPTIONS) & !3];
                hdrs[m] = self.spec.proto.header_with(vni, o);
                iov[m] = [
                    libc::iovec {
                        iov_base: hdrs[m].as_mut_ptr() as *mut libc::c_void,
                        iov_len: HEADER_LEN,
                    },
                    libc::iovec {
                        iov_base: o.as_ptr() as *mut libc::c_void,
                        iov_len: o.len(),
                    },
                    libc::iovec {
                        iov_base: f.as_ptr() as *mut libc::c_void,
                        iov_len: f.len(),
                    },
                ];
                msgs[m].msg_hdr.msg_name = &mut names[m] as *mut _ as *mut libc::c_void;
                msgs[m].msg_hdr.msg_namelen = len;
                msgs[m].msg_hdr.msg_iov = iov[m].as_mut_ptr();
                msgs[m].msg_hdr.msg_iovlen = 3;
                m += 1;
            }
            let mut at = 0;
            while at < m {
                // SAFETY: msgs[at..m] point into names/iov/hdrs, the
                // options and the frames, all alive for the call; the
                // kernel only reads them.
                let r = unsafe {
                    libc::sendmmsg(
                        self.fd,
                        msgs[at..].as_mut_ptr(),
                        (m - at) as u32,
                        libc::MSG_DONTWAIT,
                    )
                };
                if r > 0 {
                    at += r as usize;
                    sent += r as usize;
                    continue;
                }
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    // The socket's buffer is full: the rest is dropped.
                    Some(libc::EAGAIN) | Some(libc::ENOBUFS) => return Ok(sent),
                    Some(libc::EINTR) => continue,
                    // This datagram cannot go (no route, unreachable,
                    // too big): skip it, send the others.
                    Some(
                        libc::ENETUNREACH
                        | libc::EHOSTUNREACH
                        | libc::EMSGSIZE
                        | libc::EINVAL
                        | libc::EADDRNOTAVAIL
                        | libc::ENETDOWN
                        | libc::ECONNREFUSED
                        | libc::EPERM
                        | libc::EACCES,
                    ) => at += 1,
                    _ => {
                        return if sent > 0 {
                            Ok(sent)
                        } else {
                            Err(io::Error::new(
                                e.kind(),
                                format!("{}: sendmmsg: {e}", self.name),
                            ))
                        }
                    }
                }
            }
            base = end;
        }
        Ok(sent)
    }
}

impl Port for Tunnel {
    fn name(&self) -> &str {
        &self.name
    }

    fn recv(&mut self, batch: &mut Batch) -> io::Result<usize> {
        let (bufs, lens, tun, options) = batch.tunnel_slots();
        let n = bufs.len().min(CHUNK);
        // SAFETY: plain data; each iovec points into a distinct buffer we
        // own (or its header scratch), valid for the duration of the call.
        let mut names: [libc::sockaddr_storage; CHUNK] = unsafe { zeroed() };
        let mut iov: [[libc::iovec; 2]; CHUNK] = unsafe { zeroed() };
        let mut msgs: [libc::mmsghdr; CHUNK] = unsafe { zeroed() };
        let mut hdrs = [[0u8; HEADER_LEN]; CHUNK];
        let mut cmsg = [CmsgBuf([0; 128]); CHUNK];
        for i in 0..n {
            iov[i] = [
                libc::iovec {
                    iov_base: hdrs[i].as_mut_ptr() as *mut libc::c_void,
                    iov_len: HEADER_LEN,
                },
                libc::iovec {
                    iov_base: bufs[i].as_mut_ptr() as *mut libc::c_void,
                    iov_len: bufs[i].len(),
                },
            ];
            msgs[i].msg_hdr.msg_name = &mut names[i] as *mut _ as *mut libc::c_void;
            msgs[i].msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            msgs[i].msg_hdr.msg_iov = iov[i].as_mut_ptr();
            msgs[i].msg_hdr.msg_iovlen = 2;
            msgs[i].msg_hdr.msg_control = cmsg[i].0.as_mut_ptr() as *mut libc::c_void;
            msgs[i].msg_hdr.msg_controllen = cmsg[i].0.len();
        }
        let r = crate::recvmmsg(self.fd, &mut msgs[..n], &self.name)?;
        let mut kept = 0;
        for i in 0..r {
            let h = &msgs[i].msg_hdr;
            if h.msg_flags & libc::MSG_TRUNC != 0 {
                self.rx_truncated += 1;
                continue;
            }
            let total = msgs[i].msg_len as usize;
            let Some(body) = total.checked_sub(HEADER_LEN) else {
                self.rx_errors += 1;
                continue;
            };
            let Ok(d) = decode_fixed(self.spec.proto, &hdrs[i]) else {
                self.rx_errors += 1;
                continue;
            };
            // Geneve options sit at the start of the buffer: kept apart.
            let opts = d.len - HEADER_LEN;
            if body < opts + ETH_HLEN {
                self.rx_errors += 1;
                continue;
            }
            let (Some(src), Some(dst)) = (addr_of(&names[i]), local_of(h)) else {
                self.rx_errors += 1;
                continue;
            };
            if self.spec.remote.is_some_and(|r| r != src)
                || self.spec.in_key.is_some_and(|k| k != d.vni)
            {
                self.rx_errors += 1;
                continue;
            }
            let mut m = TunnelMeta {
                id: d.vni as u64,
                ..TunnelMeta::default()
            };
            match (src, dst) {
                (IpAddr::V4(s), IpAddr::V4(d)) => {
                    m.ipv4_src = s.into();
                    m.ipv4_dst = d.into();
                }
                (IpAddr::V6(s), IpAddr::V6(d)) => {
                    m.ipv6_src = s.into();
                    m.ipv6_dst = d.into();
                }
                _ => {
                    self.rx_errors += 1;
                    continue;
                }
            }
            options.push(&bufs[i][..opts]);
            if opts > 0 {
                bufs[i].copy_within(opts..body, 0);
            }
            bufs.swap(kept, i);
            lens[kept] = body - opts;
            tun[kept] = m;
            kept += 1;
        }
        batch.set_len(kept);
        Ok(kept)
    }

    fn send(&mut self, frames: &[&[u8]]) -> io::Result<usize> {
        self.send_with(frames, |_| TunnelDst::default(), &TunnelOptions::default())
    }

    fn is_tunnel(&self) -> bool {
        true
    }

    fn send_tunneled(
        &mut self,
        frames: &[&[u8]],
        meta: &[TunnelDst],
        opts: &TunnelOptions,
    ) -> io::Result<usize> {
        self.send_with(frames, |i| meta.get(i).copied().unwrap_or_default(), opts)
    }

    fn take_rx_errors(&mut self) -> u64 {
        std::mem::take(&mut self.rx_errors)
    }

    fn take_rx_truncated(&mut self) -> u64 {
        std::mem::take(&mut self.rx_truncated)
    }

    fn max_frame(&self) -> usize {
        TUNNEL_MAX_FRAME
    }

    fn fd(&self) -> Option<i32> {
        Some(self.fd)
    }

    fn hw_addr(&self) -> [u8; 6] {
        self.hw
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    fn frame(tag: u8) -> Vec<u8> {
        let mut f =
            packet::wire::build::ethernet(0x0200_0000_0002, 0x0200_0000_0001, None, 0x88b5, &[tag]);
        f.resize(60, 0);
        f
    }

    fn free_port() -> u16 {
        UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    fn recv_some(t: &mut Tunnel, b: &mut Batch) -> usize {
        for _ in 0..200 {
            let n = t.recv(b).unwrap();
            if n > 0 {
                return n;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        0
    }

    #[test]
    fn frames_cross_a_loopback_tunnel_with_their_metadata() {
        for proto in [Proto::Vxlan, Proto::Geneve] {
            let port = free_port();
            let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
            let spec = TunnelSpec {
                local: Some(lo),
                dst_port: port,
                ..TunnelSpec::flow(proto)
            };
            let mut t = Tunnel::open("t0", spec).unwrap();
            let meta = TunnelDst {
                id: 0x0100_0015, // only the low 24 bits are a VNI
                ipv4_dst: 0x7f00_0001,
                ..TunnelDst::default()
            };
            let none = TunnelDst::default();
            let (a, b) = (frame(1), frame(2));
            // The second frame has no destination: not sent.
            let n = t
                .send_tunneled(&[&a, &b], &[meta, none], &TunnelOptions::default())
                .unwrap();
            assert_eq!(n, 1);
            let mut batch = Batch::with_frame_size(4, t.max_frame());
            assert_eq!(recv_some(&mut t, &mut batch), 1);
            assert_eq!(batch.frame(0), &a[..]);
            let m = batch.tunnel(0).unwrap();
            assert_eq!(m.id, 0x15);
            assert_eq!(m.ipv4_src, 0x7f00_0001);
            assert_eq!(m.ipv4_dst, 0x7f00_0001);
        }
    }

    #[test]
    fn fixed_key_and_remote_filter_what_is_received() {
        let port = free_port();
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let spec = TunnelSpec {
            local: Some(lo),
            dst_port: port,
            in_key: Some(7),
            out_key: Some(7),
            remote: Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1))),
            ..TunnelSpec::flow(Proto::Vxlan)
        };
        let mut t = Tunnel::open("t1", spec).unwrap();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = format!("127.0.0.1:{port}");
        let mut d = Proto::Vxlan.header(8).to_vec();
        d.extend_from_slice(&frame(1));
        peer.send_to(&d, &to).unwrap(); // wrong VNI
        let mut d = Proto::Vxlan.header(7).to_vec();
        d.extend_from_slice(&frame(2));
        peer.send_to(&d, &to).unwrap(); // right one
        peer.send_to(&[8, 0, 0, 0, 0, 0, 7, 0, 1, 2], &to).unwrap(); // runt inside
        let mut d = vec![0u8, 0, 0, 0, 0, 0, 7, 0]; // no I flag
        d.extend_from_slice(&frame(3));
        peer.send_to(&d, &to).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut batch = Batch::with_frame_size(8, t.max_frame());
        assert_eq!(recv_some(&mut t, &mut batch), 1);
        assert_eq!(batch.frame(0)[14], 2);
        assert_eq!(batch.tunnel(0).unwrap().id, 7);
        assert_eq!(t.take_rx_errors(), 3);
        // A fixed key and remote need no metadata to send.
        assert_eq!(t.send(&[&frame(4)]).unwrap(), 1);
        let mut buf = [0u8; 128];
        let _ = t.recv(&mut batch); // our own datagram comes back to us
        let _ = peer.set_nonblocking(true);
        let _ = peer.recv_from(&mut buf);
    }

    #[test]
    fn geneve_options_come_in_with_the_frame_and_go_out_with_it() {
        let port = free_port();
        let spec = TunnelSpec {
            local: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            dst_port: port,
            ..TunnelSpec::flow(Proto::Geneve)
        };
        let mut t = Tunnel::open("g0", spec).unwrap();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = format!("127.0.0.1:{port}");
        // One 8-byte option (opt_len 2 words).
        let opt = [0x01, 0x02, 0x03, 0x01, 0xaa, 0xbb, 0xcc, 0xdd];
        let mut d = vec![2u8, 0, 0x65, 0x58, 0, 0, 9, 0];
        d.extend_from_slice(&opt);
        d.extend_from_slice(&frame(5));
        peer.send_to(&d, &to).unwrap();
        // The C bit is no reason to refuse here (the pipeline judges).
        d[1] = 0x40;
        peer.send_to(&d, &to).unwrap();
        let mut batch = Batch::with_frame_size(8, t.max_frame());
        let mut got = Vec::new();
        for _ in 0..2 {
            let n = recv_some(&mut t, &mut batch);
            for j in 0..n {
                got.push((batch.frame(j).to_vec(), batch.tunnel_options(j).to_vec()));
            }
            if got.len() == 2 {
                break;
            }
        }
        assert_eq!(got, vec![(frame(5), opt.to_vec()); 2]);
        assert_eq!(t.take_rx_errors(), 0);
        // Sent with OVN's option (critical), to this port itself: the
        // options come back as they went.
        let ovn = [0x01, 0x02, 0x80, 0x01, 0x00, 0x01, 0x00, 0x02];
        let mut opts = TunnelOptions::default();
        opts.push(&ovn);
        opts.push(&[]);
        let meta = TunnelDst {
            id: 3,
            ipv4_dst: 0x7f00_0001,
            ..TunnelDst::default()
        };
        let n = t
            .send_tunneled(&[&frame(6), &frame(7)], &[meta, meta], &opts)
            .unwrap();
        assert_eq!(n, 2);
        let mut back = Vec::new();
        while back.len() < 2 {
            let n = recv_some(&mut t, &mut batch);
            assert!(n > 0, "the datagrams sent came back");
            for j in 0..n {
                let (m, o, f) = batch.tunneled_frame(j).unwrap();
                back.push((m.id, o.to_vec(), f.clone()));
            }
        }
        assert_eq!(
            back,
            vec![(3, ovn.to_vec(), frame(6)), (3, vec![], frame(7))]
        );
    }

    #[test]
    fn two_tunnel_ports_cannot_share_a_udp_port() {
        let port = free_port();
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let spec = TunnelSpec {
            local: Some(lo),
            dst_port: port,
            ..TunnelSpec::flow(Proto::Vxlan)
        };
        let a = Tunnel::open_workers("a", spec, 2).unwrap();
        let e = Tunnel::open("b", spec).err().unwrap().to_string();
        assert!(e.contains("another tunnel port"), "{e}");
        // Any address overlaps every address.
        let any = TunnelSpec {
            local: None,
            ..spec
        };
        assert!(Tunnel::open("c", any).is_err());
        drop(a);
        // Given back with the last socket.
        assert!(Tunnel::open("b", spec).is_ok());
    }

    #[test]
    fn a_dual_stack_port_takes_ipv4_too() {
        let port = free_port();
        let spec = TunnelSpec {
            dst_port: port,
            ..TunnelSpec::flow(Proto::Vxlan)
        };
        let mut t = Tunnel::open("d0", spec).unwrap();
        let meta = TunnelDst {
            id: 3,
            ipv4_dst: 0x7f00_0001,
            ..TunnelDst::default()
        };
        assert_eq!(
            t.send_tunneled(&[&frame(9)], &[meta], &TunnelOptions::default())
                .unwrap(),
            1
        );
        let mut batch = Batch::with_frame_size(4, t.max_frame());
        assert_eq!(recv_some(&mut t, &mut batch), 1);
        let m = batch.tunnel(0).unwrap();
        assert_eq!(
            (m.id, m.ipv4_src, m.ipv4_dst),
            (3, 0x7f00_0001, 0x7f00_0001)
        );
    }

    fn sockopt(t: &Tunnel, level: i32, opt: i32) -> i32 {
        let mut v: libc::c_int = -1;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt(2) into a live int of the length given.
        let r = unsafe {
            libc::getsockopt(
                t.fd,
                level,
                opt,
                &mut v as *mut _ as *mut libc::c_void,
                &mut len,
            )
        };
        assert_eq!(r, 0);
        v
    }

    #[test]
    fn csum_and_df_default_reach_the_socket() {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        for (csum, df) in [(false, true), (true, false)] {
            let spec = TunnelSpec {
                local: Some(lo),
                dst_port: free_port(),
                csum,
                df,
                ..TunnelSpec::flow(Proto::Geneve)
            };
            let t = Tunnel::open("c0", spec).unwrap();
            assert_eq!(
                sockopt(&t, libc::SOL_SOCKET, libc::SO_NO_CHECK),
                !csum as i32
            );
            let pmtu = sockopt(&t, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER);
            let want = if df {
                libc::IP_PMTUDISC_WANT
            } else {
                libc::IP_PMTUDISC_DONT
            };
            assert_eq!(pmtu, want);
        }
    }

    /// The UDP checksum field of the next IPv4 datagram to `port` a raw
    /// socket sees (None: no raw socket, which needs CAP_NET_RAW).
    fn outer_udp_checksum(send: impl FnOnce(), port: u16) -> Option<u16> {
        // SAFETY: plain socket(2); closed below.
        let fd = unsafe {
            libc::socket(
                libc::AF_INET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::IPPROTO_UDP,
            )
        };
        if fd < 0 {
            return None;
        }
        send();
        let mut buf = [0u8; 2048];
        let mut got = None;
        for _ in 0..200 {
            // SAFETY: reading into a live buffer of its length.
            let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
            if n <= 0 {
                std::thread::sleep(std::time::Duration::from_millis(5));
                continue;
            }
            let ihl = (buf[0] & 0x0f) as usize * 4;
            let udp = &buf[ihl..n as usize];
            if u16::from_be_bytes([udp[2], udp[3]]) == port {
                got = Some(u16::from_be_bytes([udp[6], udp[7]]));
                break;
            }
        }
        // SAFETY: closing the socket opened above.
        unsafe { libc::close(fd) };
        got
    }

    #[test]
    fn csum_puts_a_udp_checksum_on_the_outer_header() {
        let lo = IpAddr::V4(Ipv4Addr::LOCALHOST);
        for csum in [false, true] {
            let port = free_port();
            let spec = TunnelSpec {
                local: Some(lo),
                dst_port: port,
                remote: Some(lo),
                out_key: Some(5),
                csum,
                ..TunnelSpec::flow(Proto::Geneve)
            };
            let mut t = Tunnel::open("k0", spec).unwrap();
            let sum = outer_udp_checksum(|| assert_eq!(t.send(&[&frame(1)]).unwrap(), 1), port);
            let Some(sum) = sum else {
                eprintln!("no raw socket (CAP_NET_RAW): the outer checksum is not looked at");
                return;
            };
            assert_eq!(sum != 0, csum, "csum={csum}: checksum field {sum:#06x}");
        }
    }

    #[test]
    fn a_port_in_use_is_a_clear_error() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = s.local_addr().unwrap().port();
        let spec = TunnelSpec {
            local: Some(IpAddr::V4(Ipv4Addr::LOCALHOST)),
            dst_port: port,
            ..TunnelSpec::flow(Proto::Vxlan)
        };
        let e = Tunnel::open("t2", spec).err().unwrap().to_string();
        assert!(e.contains(&format!("UDP port {port}")), "{e}");
    }
}
