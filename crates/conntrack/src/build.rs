//! IP packets (from the IP header on, as [`crate::Tracker::track`] takes
//! them) for tests, benchmarks, fuzz seeds and the kernel-oracle
//! comparison, in the tracker's terms (a TCP segment's fields, an echo, an
//! error quoting a packet). The bytes are made by the one frame builder,
//! `packet::wire::build`.

use packet::wire::build::{self as wb, IpFields, Transport};

pub use packet::wire::build::{checksums_ok, Ip};

/// A TCP segment's header fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seg {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    /// TCP flags (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10).
    pub flags: u8,
    pub win: u16,
    /// A window scale option (SYNs).
    pub wscale: Option<u8>,
}

/// A TCP segment carrying `payload` bytes of zeros.
pub fn tcp(src: Ip, dst: Ip, s: &Seg, payload: usize) -> Vec<u8> {
    let ws;
    let options: &[u8] = match s.wscale {
        Some(w) => {
            ws = [1, 3, 3, w];
            &ws
        }
        None => &[],
    };
    let t = Transport::Tcp {
        sport: s.sport,
        dport: s.dport,
        seq: s.seq,
        ack: s.ack,
        flags: s.flags,
        window: s.win,
        options,
    };
    wb::ip(src, dst, &IpFields::default(), &t, &vec![0; payload])
}

/// A UDP datagram with `payload` bytes of zeros.
pub fn udp(src: Ip, dst: Ip, sport: u16, dport: u16, payload: usize) -> Vec<u8> {
    let t = Transport::Udp { sport, dport };
    wb::ip(src, dst, &IpFields::default(), &t, &vec![0; payload])
}

/// An ICMP (or ICMPv6, for IPv6 addresses) message: type, code, the four
/// bytes after the checksum (an echo's id and sequence) and a body.
pub fn icmp(src: Ip, dst: Ip, ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let t = Transport::Icmp {
        v6: src.is_v6(),
        ty,
        code,
        rest,
    };
    wb::ip(src, dst, &IpFields::default(), &t, body)
}

/// An echo request (`reply` false) or reply.
pub fn echo(src: Ip, dst: Ip, id: u16, seq: u16, reply: bool) -> Vec<u8> {
    let ty = match (src.is_v6(), reply) {
        (false, false) => 8,
        (false, true) => 0,
        (true, false) => 128,
        (true, true) => 129,
    };
    let i = id.to_be_bytes();
    let s = seq.to_be_bytes();
    icmp(src, dst, ty, 0, [i[0], i[1], s[0], s[1]], &[0; 8])
}

/// An ICMP error (destination unreachable, port unreachable; for IPv6
/// type 1 code 4) from `src` to `dst` quoting the first bytes of
/// `quoted` (its IP header and 8 more).
pub fn unreachable(src: Ip, dst: Ip, quoted: &[u8]) -> Vec<u8> {
    let v6 = src.is_v6();
    let ihl = if v6 {
        40
    } else {
        (quoted[0] & 0xf) as usize * 4
    };
    let cut = &quoted[..(ihl + 8).min(quoted.len())];
    if v6 {
        icmp(src, dst, 1, 4, [0; 4], cut)
    } else {
        icmp(src, dst, 3, 3, [0; 4], cut)
    }
}
