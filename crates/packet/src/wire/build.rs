//! The one frame builder: well-formed frames and IP packets (right lengths
//! and checksums) for the code that makes packets (a flow described as a
//! match, `sluice-ctl`'s packets) and for tests, benchmarks and fuzz
//! seeds. Headers are written through the views of this module's
//! siblings.

use super::arp::{self, Arp};
use super::ethernet::{self, Ethernet};
use super::icmp::{self, Icmp};
use super::ipv4::{self, Ipv4};
use super::ipv6::{self, Ipv6};
use super::tcp::{self, Tcp};
use super::udp::{self, Sctp, Udp};
use crate::checksum;
use crate::parse::{ethertype, ipproto};

/// An address: IPv4 (4 bytes) or IPv6 (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ip {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl Ip {
    /// Whether this is an IPv6 address.
    pub fn is_v6(&self) -> bool {
        matches!(self, Ip::V6(_))
    }
}

/// The IP header's fields besides addresses and protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpFields {
    /// IPv4's TOS byte / IPv6's traffic class (DSCP << 2 | ECN).
    pub tos: u8,
    /// TTL / hop limit.
    pub ttl: u8,
    /// IPv6's flow label (low 20 bits).
    pub flow_label: u32,
}

impl Default for IpFields {
    /// TOS 0, TTL 64, no flow label (IPv4 goes with DF set, id 0).
    fn default() -> Self {
        IpFields {
            tos: 0,
            ttl: 64,
            flow_label: 0,
        }
    }
}

/// The transport header of a packet to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport<'a> {
    /// TCP with `options` (a multiple of 4 bytes) after the fixed header.
    Tcp {
        sport: u16,
        dport: u16,
        seq: u32,
        ack: u32,
        /// FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10.
        flags: u8,
        window: u16,
        options: &'a [u8],
    },
    /// UDP, its checksum computed (0 sent as 0xffff).
    Udp { sport: u16, dport: u16 },
    /// SCTP's common header; the CRC is left zero (no chunk is built).
    Sctp { sport: u16, dport: u16 },
    /// ICMP (`v6`: ICMPv6): type, code, and the four bytes after the
    /// checksum (an echo's id and sequence).
    Icmp {
        v6: bool,
        ty: u8,
        code: u8,
        rest: [u8; 4],
    },
    /// No transport header: the payload is protocol `proto`'s.
    Other(u8),
}

impl Transport<'_> {
    /// The IP protocol number.
    pub fn proto(&self) -> u8 {
        match self {
            Transport::Tcp { .. } => ipproto::TCP,
            Transport::Udp { .. } => ipproto::UDP,
            Transport::Sctp { .. } => ipproto::SCTP,
            Transport::Icmp { v6: true, .. } => ipproto::ICMPV6,
            Transport::Icmp { v6: false, .. } => ipproto::ICMP,
            Transport::Other(p) => *p,
        }
    }

    /// The header's bytes, checksum zero, and where its checksum is.
    fn header(&self, payload_len: usize) -> (Vec<u8>, Option<usize>) {
        match *self {
            Transport::Tcp {
                sport,
                dport,
                seq,
                ack,
                flags,
                window,
                options,
            } => {
                let len = tcp::LEN + options.len();
                let mut b = vec![0u8; len];
                let mut h = Tcp::at_mut(&mut b, 0).expect("a TCP header's room");
                h.set_src_port(sport);
                h.set_dst_port(dport);
                h.set_seq(seq);
                h.set_ack(ack);
                h.set_offset_flags(((len / 4) as u16) << 12 | flags as u16);
                h.set_window(window);
                b[tcp::LEN..].copy_from_slice(options);
                (b, Some(16))
            }
            Transport::Udp { sport, dport } => {
                let mut b = vec![0u8; udp::LEN];
                let mut h = Udp::at_mut(&mut b, 0).expect("a UDP header's room");
                h.set_src_port(sport);
                h.set_dst_port(dport);
                h.set_length((udp::LEN + payload_len) as u16);
                (b, Some(6))
            }
            Transport::Sctp { sport, dport } => {
                let mut b = vec![0u8; udp::SCTP_LEN];
                let mut h = Sctp::at_mut(&mut b, 0).expect("an SCTP header's room");
                h.set_src_port(sport);
                h.set_dst_port(dport);
                (b, None)
            }
            Transport::Icmp { ty, code, rest, .. } => {
                let mut b = vec![0u8; icmp::LEN + 4];
                let mut h = Icmp::at_mut(&mut b, 0).expect("an ICMP header's room");
                h.set_ty(ty);
                h.set_code(code);
                b[icmp::LEN..].copy_from_slice(&rest);
                (b, Some(2))
            }
            Transport::Other(_) => (Vec::new(), None),
        }
    }
}

/// An IP packet (from the IP header on) from `src` to `dst` (one family)
/// carrying `t` and `payload`, every length and checksum right.
pub fn ip(src: Ip, dst: Ip, fields: &IpFields, t: &Transport<'_>, payload: &[u8]) -> Vec<u8> {
    let proto = t.proto();
    let (mut seg, sum_at) = t.header(payload.len());
    seg.extend_from_slice(payload);
    if let Some(at) = sum_at {
        let pseudo = match (src, dst) {
            (Ip::V4(_), Ip::V4(_)) if proto == ipproto::ICMP => 0,
            (Ip::V4(s), Ip::V4(d)) => checksum::pseudo_v4(s, d, proto, seg.len() as u16),
            (Ip::V6(s), Ip::V6(d)) => checksum::pseudo_v6(s, d, proto, seg.len() as u32),
            _ => panic!("source and destination of different families"),
        };
        let mut sum = checksum::finish(checksum::sum(&seg, pseudo));
        if proto == ipproto::UDP && sum == 0 {
            sum = 0xffff;
        }
        seg[at..at + 2].copy_from_slice(&sum.to_be_bytes());
    }
    let mut p = match (src, dst) {
        (Ip::V4(s), Ip::V4(d)) => {
            let mut b = vec![0u8; ipv4::LEN];
            let mut h = Ipv4::at_mut(&mut b, 0).expect("an IPv4 header's room");
            h.set_version_ihl(0x45);
            h.set_tos(fields.tos);
            h.set_total_len((ipv4::LEN + seg.len()) as u16);
            h.set_frag(0x4000);
            h.set_ttl(fields.ttl);
            h.set_proto(proto);
            h.set_src(u32::from_be_bytes(s));
            h.set_dst(u32::from_be_bytes(d));
            let sum = checksum::internet(&b);
            Ipv4::at_mut(&mut b, 0)
                .expect("an IPv4 header's room")
                .set_checksum(sum);
            b
        }
        (Ip::V6(s), Ip::V6(d)) => {
            let mut b = vec![0u8; ipv6::LEN];
            let mut h = Ipv6::at_mut(&mut b, 0).expect("an IPv6 header's room");
            h.set_vtcfl(6 << 28 | (fields.tos as u32) << 20 | fields.flow_label & 0x000f_ffff);
            h.set_payload_len(seg.len() as u16);
            h.set_next_header(proto);
            h.set_hop_limit(fields.ttl);
            h.set_src(u128::from_be_bytes(s));
            h.set_dst(u128::from_be_bytes(d));
            b
        }
        _ => panic!("source and destination of different families"),
    };
    p.extend_from_slice(&seg);
    p
}

/// An Ethernet frame: the two addresses, a VLAN tag with `tci` (0x8100)
/// if given, `ethertype`, then `body`; not padded.
pub fn ethernet(dst: u64, src: u64, tci: Option<u16>, ethertype: u16, body: &[u8]) -> Vec<u8> {
    let tag = if tci.is_some() { 4 } else { 0 };
    let mut f = vec![0u8; ethernet::LEN + tag];
    let mut h = Ethernet::at_mut(&mut f, 0).expect("an Ethernet header's room");
    h.set_dst(dst);
    h.set_src(src);
    match tci {
        Some(t) => {
            h.set_ethertype(ethertype::VLAN);
            f[14..16].copy_from_slice(&t.to_be_bytes());
            f[16..18].copy_from_slice(&ethertype.to_be_bytes());
        }
        None => h.set_ethertype(ethertype),
    }
    f.extend_from_slice(body);
    f
}

/// An Ethernet/IPv4 ARP packet's 28 bytes.
pub fn arp(op: u16, sha: u64, spa: u32, tha: u64, tpa: u32) -> [u8; arp::LEN] {
    let mut b = [0u8; arp::LEN];
    b[..6].copy_from_slice(&arp::ETHERNET_IPV4);
    let mut h = Arp::at_mut(&mut b, 0).expect("an ARP packet's room");
    h.set_op(op);
    h.set_sha(sha);
    h.set_spa(spa);
    h.set_tha(tha);
    h.set_tpa(tpa);
    b
}

/// A MAC address's six bytes as the number views use.
pub fn mac(b: [u8; 6]) -> u64 {
    u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
}

/// Whether IP packet `p`'s IPv4 header checksum and its TCP/UDP/ICMP
/// checksum are right (for tests of rewrites).
pub fn checksums_ok(p: &[u8]) -> bool {
    let Some(&first) = p.first() else {
        return false;
    };
    let (l4, pseudo) = if first >> 4 == 6 {
        let Some(h) = Ipv6::at(p, 0) else {
            return false;
        };
        let next = h.next_header();
        let pseudo = checksum::pseudo_v6(
            h.src().to_be_bytes(),
            h.dst().to_be_bytes(),
            next,
            h.payload_len() as u32,
        );
        (ipv6::LEN, pseudo)
    } else {
        let Some(h) = Ipv4::at(p, 0) else {
            return false;
        };
        if checksum::internet(&p[..ipv4::LEN]) != 0 {
            return false;
        }
        let len = h.total_len().saturating_sub(ipv4::LEN as u16);
        let pseudo = if h.proto() == ipproto::ICMP {
            0
        } else {
            checksum::pseudo_v4(h.src().to_be_bytes(), h.dst().to_be_bytes(), h.proto(), len)
        };
        (ipv4::LEN, pseudo)
    };
    checksum::finish(checksum::sum(&p[l4..], pseudo)) == 0
}

/// An Ethernet/IPv4/TCP frame with no payload and correct checksums
/// (sequence 1, window 4096, DF, TTL 64).
pub fn tcp_v4(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    flags: u8,
) -> Vec<u8> {
    let t = Transport::Tcp {
        sport,
        dport,
        seq: 1,
        ack: 0,
        flags,
        window: 0x1000,
        options: &[],
    };
    let body = ip(Ip::V4(src), Ip::V4(dst), &IpFields::default(), &t, &[]);
    ethernet(mac(dst_mac), mac(src_mac), None, ethertype::IPV4, &body)
}

/// The sample TCP frame tests and benchmarks share: 02:00:00:00:00:01 /
/// 10.0.0.1:1234 to 02:00:00:00:00:02 / 10.0.0.2:`dport`.
pub fn sample_tcp(dport: u16, flags: u8) -> Vec<u8> {
    tcp_v4(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        1234,
        dport,
        flags,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_frame_has_right_checksums() {
        let f = sample_tcp(80, 0x02);
        assert_eq!(f.len(), 54);
        assert!(checksums_ok(&f[14..]));
    }

    #[test]
    fn packets_of_every_transport_have_right_checksums() {
        let v4 = (Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]));
        let v6 = (Ip::V6([0xfd; 16]), Ip::V6([0xfe; 16]));
        for (s, d) in [v4, v6] {
            for t in [
                Transport::Tcp {
                    sport: 1,
                    dport: 2,
                    seq: 3,
                    ack: 4,
                    flags: 0x12,
                    window: 5,
                    options: &[1, 3, 3, 7],
                },
                Transport::Udp { sport: 1, dport: 2 },
                Transport::Icmp {
                    v6: s.is_v6(),
                    ty: 8,
                    code: 0,
                    rest: [0, 1, 0, 2],
                },
            ] {
                let p = ip(s, d, &IpFields::default(), &t, &[9; 13]);
                assert!(checksums_ok(&p), "{s:?} {t:?}");
            }
        }
    }
}
