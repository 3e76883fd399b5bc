//! What the tracker reads from a packet: its connection [`Key`] (zone,
//! addresses, protocol, ports or ICMP id/type) and the layer-4 facts the
//! protocol state machines need ([`L4`]), from the bytes of an IPv4 or
//! IPv6 packet. Parsing never panics and never reads past the slice: a
//! packet too short or inconsistent for its own headers is [`Parsed::Bad`].

use packet::wire::icmp::Icmp;
use packet::wire::ipv4::{self, Ipv4};
use packet::wire::ipv6::{self, Ipv6};
use packet::wire::tcp::{self, Tcp as TcpHdr};
use packet::wire::udp::Ports;

/// A connection's key in one direction. Addresses are IPv4 in the low 32
/// bits or IPv6 whole; for ICMP `sport` is the echo (or timestamp, info,
/// address mask) identifier and `dport` the message's type << 8 | code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Key {
    pub src: [u64; 2],
    pub dst: [u64; 2],
    pub sport: u16,
    pub dport: u16,
    pub zone: u16,
    pub proto: u8,
    pub v6: bool,
}

/// IP protocol numbers the tracker knows.
pub mod proto {
    pub const ICMP: u8 = 1;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    pub const ICMPV6: u8 = 58;
    pub const SCTP: u8 = 132;
    pub const UDPLITE: u8 = packet::parse::ipproto::UDPLITE;
}

/// Splits an address into the key's two words.
pub fn words(a: u128) -> [u64; 2] {
    [(a >> 64) as u64, a as u64]
}

/// The address of two words.
pub fn addr(w: [u64; 2]) -> u128 {
    ((w[0] as u128) << 64) | w[1] as u128
}

impl Key {
    /// The source address.
    pub fn src_addr(&self) -> u128 {
        addr(self.src)
    }

    /// The destination address.
    pub fn dst_addr(&self) -> u128 {
        addr(self.dst)
    }

    /// The key of the packets that answer this one (addresses and ports
    /// swapped; an ICMP request's reply type).
    pub fn reverse(&self) -> Key {
        let mut r = Key {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
            ..*self
        };
        if self.is_icmp() {
            r.sport = self.sport;
            let ty = (self.dport >> 8) as u8;
            let reply = icmp_reply_type(ty, self.v6).unwrap_or(ty);
            r.dport = (reply as u16) << 8 | (self.dport & 0xff);
        }
        r
    }

    /// Whether this is an ICMP or ICMPv6 key.
    pub fn is_icmp(&self) -> bool {
        (self.proto == proto::ICMP && !self.v6) || (self.proto == proto::ICMPV6 && self.v6)
    }

    /// Whether the protocol has ports (TCP, UDP, SCTP, UDP-Lite).
    pub fn has_ports(&self) -> bool {
        matches!(
            self.proto,
            proto::TCP | proto::UDP | proto::SCTP | proto::UDPLITE
        )
    }

    /// A hash that is the same for a key and its reverse (both directions
    /// of an untranslated connection land in one shard).
    pub fn symmetric_hash(&self) -> u64 {
        use std::hash::{BuildHasher, Hash, Hasher};
        let (a, b) = if (self.src, self.sport) <= (self.dst, self.dport) {
            ((self.src, self.sport), (self.dst, self.dport))
        } else {
            ((self.dst, self.dport), (self.src, self.sport))
        };
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        (a.0, b.0, self.zone, self.proto, self.v6).hash(&mut h);
        if self.is_icmp() {
            self.sport.hash(&mut h);
        } else {
            (a.1, b.1).hash(&mut h);
        }
        h.finish()
    }
}

/// The reply type of an ICMP query type, if it is one the tracker follows
/// (echo, timestamp, information, address mask; ICMPv6 echo).
pub fn icmp_reply_type(ty: u8, v6: bool) -> Option<u8> {
    if v6 {
        match ty {
            128 => Some(129),
            129 => Some(128),
            _ => None,
        }
    } else {
        match ty {
            8 => Some(0),
            0 => Some(8),
            13 => Some(14),
            14 => Some(13),
            15 => Some(16),
            16 => Some(15),
            17 => Some(18),
            18 => Some(17),
            _ => None,
        }
    }
}

/// Whether an ICMP type is a request (may open a connection).
pub fn icmp_is_request(ty: u8, v6: bool) -> bool {
    if v6 {
        ty == 128
    } else {
        matches!(ty, 8 | 13 | 15 | 17)
    }
}

/// Whether an ICMP type is an error that quotes the packet it is about.
pub fn icmp_is_error(ty: u8, v6: bool) -> bool {
    if v6 {
        matches!(ty, 1..=4)
    } else {
        matches!(ty, 3 | 4 | 5 | 11 | 12)
    }
}

/// TCP flag bits.
pub mod tcp_flags {
    pub const FIN: u16 = 0x01;
    pub const SYN: u16 = 0x02;
    pub const RST: u16 = 0x04;
    pub const PSH: u16 = 0x08;
    pub const ACK: u16 = 0x10;
    pub const URG: u16 = 0x20;
}

/// The TCP header fields the window tracking reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tcp {
    pub flags: u16,
    pub seq: u32,
    pub ack: u32,
    pub win: u16,
    /// The window scale option's shift, if the segment carries one.
    pub wscale: Option<u8>,
    /// Payload bytes after the TCP header.
    pub payload: u32,
}

/// The layer-4 part of a parsed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L4 {
    Tcp(Tcp),
    Udp,
    /// An ICMP query or reply the tracker follows.
    IcmpQuery {
        ty: u8,
    },
    /// An ICMP error quoting a packet whose key (as that packet travelled)
    /// is `inner`; `inner_l3` is where its IP header starts in the slice.
    IcmpError {
        inner: Key,
        inner_l3: usize,
    },
    /// Another IP protocol (or SCTP, UDP-Lite: tracked by addresses and
    /// ports without a state machine).
    Other,
}

/// Where the headers are, for NAT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    /// Offset of the layer-4 header in the slice.
    pub l4: usize,
    /// Length of the IP packet (headers and payload; less than the slice
    /// when the frame had Ethernet padding).
    pub ip_len: usize,
}

/// A parsed packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// A trackable packet (zone 0 in the key).
    Ok { key: Key, l4: L4, at: Layout },
    /// An IP fragment: not tracked (see the crate docs).
    Fragment,
    /// Malformed or truncated, or an ICMP message the tracker does not
    /// follow: invalid.
    Bad,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// The IP header: (protocol, layer-4 offset, IP length, addresses,
/// fragment?). `Err` when malformed.
struct Ip {
    proto: u8,
    l4: usize,
    len: usize,
    src: [u64; 2],
    dst: [u64; 2],
    fragment: bool,
}

fn ip_header(b: &[u8], v6: bool, quoted: bool) -> Option<Ip> {
    // A quoted packet (in an ICMP error) is cut short: its length field
    // says what it was.
    let room = |len: usize| {
        if quoted {
            Some(len.min(b.len()))
        } else {
            (len <= b.len()).then_some(len)
        }
    };
    if !v6 {
        let h = Ipv4::at(b, 0)?;
        let ihl = h.header_len();
        if h.version() != 4 || ihl < ipv4::LEN || b.len() < ihl {
            return None;
        }
        let len = h.total_len() as usize;
        if len < ihl {
            return None;
        }
        let len = room(len)?;
        Some(Ip {
            proto: h.proto(),
            l4: ihl,
            len,
            src: words(h.src() as u128),
            dst: words(h.dst() as u128),
            fragment: h.more_fragments() || h.frag_offset() != 0,
        })
    } else {
        let h = Ipv6::at(b, 0)?;
        if h.version() != 6 {
            return None;
        }
        let len = room(ipv6::LEN + h.payload_len() as usize)?;
        let (mut next, mut at) = (h.next_header(), ipv6::LEN);
        let mut fragment = false;
        // Extension headers: hop-by-hop, routing, destination options,
        // fragment, authentication; at most eight.
        for _ in 0..8 {
            match next {
                0 | 43 | 60 => {
                    let n = *b.get(at)?;
                    let l = (*b.get(at + 1)? as usize + 1) * 8;
                    next = n;
                    at += l;
                }
                44 => {
                    let n = *b.get(at)?;
                    let off = be16(b, at + 2)?;
                    // An atomic fragment (offset 0, no more) is whole.
                    if off & 0xfff9 != 0 {
                        fragment = true;
                    }
                    next = n;
                    at += 8;
                }
                51 => {
                    let n = *b.get(at)?;
                    let l = (*b.get(at + 1)? as usize + 2) * 4;
                    next = n;
                    at += l;
                }
                _ => break,
            }
            if at > len {
                return None;
            }
        }
        Some(Ip {
            proto: next,
            l4: at,
            len,
            src: words(h.src()),
            dst: words(h.dst()),
            fragment,
        })
    }
}

fn wscale_option(opts: &[u8]) -> Option<u8> {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return None,
            1 => i += 1,
            kind => {
                let l = *opts.get(i + 1)? as usize;
                if l < 2 {
                    return None;
                }
                if kind == 3 && l == 3 {
                    return Some((*opts.get(i + 2)?).min(14));
                }
                i += l;
            }
        }
    }
    None
}

/// Parses the IP packet at the start of `b` (IPv6 if `v6`).
pub fn parse(b: &[u8], v6: bool) -> Parsed {
    parse_inner(b, v6, false).unwrap_or(Parsed::Bad)
}

fn parse_inner(b: &[u8], v6: bool, quoted: bool) -> Option<Parsed> {
    let ip = ip_header(b, v6, quoted)?;
    if ip.fragment {
        return Some(Parsed::Fragment);
    }
    // A quoted packet (inside an ICMP error) may be cut short after its
    // first 8 layer-4 bytes.
    let end = if quoted { b.len() } else { ip.len };
    let l4b = b.get(ip.l4..end)?;
    let mut key = Key {
        src: ip.src,
        dst: ip.dst,
        proto: ip.proto,
        v6,
        ..Key::default()
    };
    let at = Layout {
        l4: ip.l4,
        ip_len: ip.len,
    };
    let icmp = if v6 { proto::ICMPV6 } else { proto::ICMP };
    let l4 = match ip.proto {
        proto::TCP => {
            let ports = Ports::at(l4b, 0)?;
            (key.sport, key.dport) = (ports.src(), ports.dst());
            if quoted {
                L4::Other
            } else {
                let h = TcpHdr::at(l4b, 0)?;
                let off = h.header_len();
                if off < tcp::LEN || off > l4b.len() {
                    return None;
                }
                L4::Tcp(Tcp {
                    flags: h.offset_flags() & 0x1ff,
                    seq: h.seq(),
                    ack: h.ack(),
                    win: h.window(),
                    wscale: wscale_option(&l4b[tcp::LEN..off]),
                    payload: (l4b.len() - off) as u32,
                })
            }
        }
        proto::UDP | proto::UDPLITE | proto::SCTP => {
            let ports = Ports::at(l4b, 0)?;
            (key.sport, key.dport) = (ports.src(), ports.dst());
            if !quoted && ip.proto != proto::SCTP && l4b.len() < 8 {
                return None;
            }
            if ip.proto == proto::UDP {
                L4::Udp
            } else {
                L4::Other
            }
        }
        p if p == icmp => {
            let h = Icmp::at(l4b, 0)?;
            let (ty, code) = (h.ty(), h.code());
            if l4b.len() < 8 {
                return None;
            }
            if icmp_is_error(ty, v6) {
                if quoted {
                    // An error about an error is not followed.
                    return None;
                }
                let inner_l3 = ip.l4 + 8;
                let Parsed::Ok { key: inner, .. } = parse_inner(&b[inner_l3..end], v6, true)?
                else {
                    return None;
                };
                L4::IcmpError { inner, inner_l3 }
            } else if icmp_reply_type(ty, v6).is_some() {
                key.sport = be16(l4b, 4)?;
                key.dport = (ty as u16) << 8 | code as u16;
                L4::IcmpQuery { ty }
            } else {
                return None;
            }
        }
        _ => L4::Other,
    };
    Some(Parsed::Ok { key, l4, at })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::build::{self, Ip, Seg};

    /// 10.0.0.1:1234 to 10.0.0.2:80, sequence 100, window 500, no payload.
    fn v4_tcp(flags: u8, wscale: Option<u8>) -> Vec<u8> {
        let s = Seg {
            sport: 1234,
            dport: 80,
            seq: 100,
            ack: 0,
            flags,
            win: 500,
            wscale,
        };
        build::tcp(Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]), &s, 0)
    }

    #[test]
    fn tcp_with_window_scale() {
        let p = v4_tcp(0x02, Some(7));
        let Parsed::Ok {
            key,
            l4: L4::Tcp(t),
            ..
        } = parse(&p, false)
        else {
            panic!("{:?}", parse(&p, false));
        };
        assert_eq!((key.sport, key.dport, key.proto), (1234, 80, 6));
        assert_eq!(key.src_addr(), 0x0a00_0001);
        assert_eq!(t.wscale, Some(7));
        assert_eq!(t.flags, 2);
        assert_eq!(t.payload, 0);
        assert_eq!(key.reverse().reverse(), key);
    }

    #[test]
    fn truncated_is_bad_and_never_panics() {
        let p = v4_tcp(0x10, None);
        for n in 0..p.len() {
            assert_eq!(parse(&p[..n], false), Parsed::Bad, "{n}");
            let _ = parse(&p[..n], true);
        }
    }

    #[test]
    fn icmpv6_error_quoting_six_bytes_is_bad() {
        // An ICMPv6 error whose quoted packet is 6 bytes (found by the
        // conntrack fuzz target: the quoted header's next-header byte was
        // read unchecked).
        // The quoted IPv6 header's first 6 bytes (payload length 100).
        let quoted = [0x60, 0, 0, 0, 0, 100];
        let p = build::icmp(Ip::V6([0; 16]), Ip::V6([0; 16]), 1, 0, [0; 4], &quoted);
        assert_eq!(p.len(), 40 + 8 + 6);
        assert_eq!(parse(&p, true), Parsed::Bad);
    }

    #[test]
    fn icmp_echo_reverses_to_its_reply() {
        let (a, b) = (Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]));
        let p = build::icmp(a, b, 8, 0, [0, 77, 0, 0], &[]);
        let Parsed::Ok { key, .. } = parse(&p, false) else {
            panic!()
        };
        assert_eq!(key.sport, 77);
        assert_eq!(key.dport, 8 << 8);
        let r = key.reverse();
        assert_eq!(r.dport, 0);
        assert_eq!(r.sport, 77);
        assert_eq!(r.src, key.dst);
    }
}
