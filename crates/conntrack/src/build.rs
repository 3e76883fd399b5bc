//! Builders of well-formed IP packets (valid lengths and checksums) for
//! tests, benchmarks, fuzz seeds and the kernel-oracle comparison: the
//! bytes from the IP header on, as [`crate::Tracker::track`] takes them.

use packet::checksum;

/// An address: IPv4 (4 bytes) or IPv6 (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ip {
    V4([u8; 4]),
    V6([u8; 16]),
}

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

fn ip_packet(src: Ip, dst: Ip, proto: u8, l4: &[u8]) -> Vec<u8> {
    match (src, dst) {
        (Ip::V4(s), Ip::V4(d)) => {
            let len = 20 + l4.len();
            let mut p = Vec::with_capacity(len);
            p.extend_from_slice(&[0x45, 0]);
            p.extend_from_slice(&(len as u16).to_be_bytes());
            p.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]);
            p.extend_from_slice(&s);
            p.extend_from_slice(&d);
            let sum = checksum::internet(&p[..20]);
            p[10..12].copy_from_slice(&sum.to_be_bytes());
            p.extend_from_slice(l4);
            p
        }
        (Ip::V6(s), Ip::V6(d)) => {
            let mut p = Vec::with_capacity(40 + l4.len());
            p.extend_from_slice(&[0x60, 0, 0, 0]);
            p.extend_from_slice(&(l4.len() as u16).to_be_bytes());
            p.extend_from_slice(&[proto, 64]);
            p.extend_from_slice(&s);
            p.extend_from_slice(&d);
            p.extend_from_slice(l4);
            p
        }
        _ => panic!("source and destination of different families"),
    }
}

fn l4_sum(src: Ip, dst: Ip, proto: u8, l4: &mut [u8], at: usize) {
    let pseudo = match (src, dst) {
        (Ip::V4(s), Ip::V4(d)) if proto != 1 => checksum::pseudo_v4(s, d, proto, l4.len() as u16),
        (Ip::V4(_), Ip::V4(_)) => 0,
        (Ip::V6(s), Ip::V6(d)) => checksum::pseudo_v6(s, d, proto, l4.len() as u32),
        _ => 0,
    };
    l4[at..at + 2].copy_from_slice(&[0, 0]);
    let mut sum = checksum::finish(checksum::sum(l4, pseudo));
    if proto == 17 && sum == 0 {
        sum = 0xffff;
    }
    l4[at..at + 2].copy_from_slice(&sum.to_be_bytes());
}

/// A TCP segment carrying `payload` bytes of zeros.
pub fn tcp(src: Ip, dst: Ip, s: &Seg, payload: usize) -> Vec<u8> {
    let opts: &[u8] = match s.wscale {
        Some(w) => &[1, 3, 3, w],
        None => &[],
    };
    let thl = 20 + opts.len();
    let mut l4 = Vec::with_capacity(thl + payload);
    l4.extend_from_slice(&s.sport.to_be_bytes());
    l4.extend_from_slice(&s.dport.to_be_bytes());
    l4.extend_from_slice(&s.seq.to_be_bytes());
    l4.extend_from_slice(&s.ack.to_be_bytes());
    l4.push(((thl / 4) as u8) << 4);
    l4.push(s.flags);
    l4.extend_from_slice(&s.win.to_be_bytes());
    l4.extend_from_slice(&[0, 0, 0, 0]);
    l4.extend_from_slice(opts);
    l4.resize(thl + payload, 0);
    l4_sum(src, dst, 6, &mut l4, 16);
    ip_packet(src, dst, 6, &l4)
}

/// A UDP datagram with `payload` bytes of zeros.
pub fn udp(src: Ip, dst: Ip, sport: u16, dport: u16, payload: usize) -> Vec<u8> {
    let mut l4 = Vec::with_capacity(8 + payload);
    l4.extend_from_slice(&sport.to_be_bytes());
    l4.extend_from_slice(&dport.to_be_bytes());
    l4.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    l4.extend_from_slice(&[0, 0]);
    l4.resize(8 + payload, 0);
    l4_sum(src, dst, 17, &mut l4, 6);
    ip_packet(src, dst, 17, &l4)
}

/// An ICMP (or ICMPv6, for IPv6 addresses) message: type, code, the four
/// bytes after the checksum (an echo's id and sequence) and a body.
pub fn icmp(src: Ip, dst: Ip, ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let proto = if matches!(src, Ip::V6(_)) { 58 } else { 1 };
    let mut l4 = vec![ty, code, 0, 0];
    l4.extend_from_slice(&rest);
    l4.extend_from_slice(body);
    l4_sum(src, dst, proto, &mut l4, 2);
    ip_packet(src, dst, proto, &l4)
}

/// An echo request (`reply` false) or reply.
pub fn echo(src: Ip, dst: Ip, id: u16, seq: u16, reply: bool) -> Vec<u8> {
    let v6 = matches!(src, Ip::V6(_));
    let ty = match (v6, reply) {
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
    let v6 = matches!(src, Ip::V6(_));
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

/// Whether `p`'s IPv4 header checksum and its TCP/UDP/ICMP checksum are
/// right (for tests of translation).
pub fn checksums_ok(p: &[u8]) -> bool {
    let v6 = p[0] >> 4 == 6;
    let (l4, proto, pseudo) = if v6 {
        let len = u16::from_be_bytes([p[4], p[5]]) as u32;
        let mut s = [0u8; 16];
        let mut d = [0u8; 16];
        s.copy_from_slice(&p[8..24]);
        d.copy_from_slice(&p[24..40]);
        (40, p[6], checksum::pseudo_v6(s, d, p[6], len))
    } else {
        if checksum::internet(&p[..20]) != 0 {
            return false;
        }
        let len = u16::from_be_bytes([p[2], p[3]]) - 20;
        let s = [p[12], p[13], p[14], p[15]];
        let d = [p[16], p[17], p[18], p[19]];
        let ps = if p[9] == 1 {
            0
        } else {
            checksum::pseudo_v4(s, d, p[9], len)
        };
        (20, p[9], ps)
    };
    let _ = proto;
    checksum::finish(checksum::sum(&p[l4..], pseudo)) == 0
}
