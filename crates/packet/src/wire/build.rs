//! The one frame builder: well-formed frames and IP packets (right lengths
//! and checksums) for the code that makes packets (a flow described as a
//! match, `sluice-ctl`'s packets) and for tests, benchmarks and fuzz
//! seeds: Ethernet behind any stack of tags ([`ethernet_tags`]), ARP,
//! MPLS label stack entries, PBB I-TAGs, IPv4 with options and fragment
//! fields ([`ipv4_options`]), IPv6 with extension headers ([`ipv6_ext`]),
//! TCP, UDP, SCTP, ICMP and neighbour discovery ([`nd`]). Headers are
//! written through the views of this module's siblings.

use super::arp::{self, Arp};
use super::ethernet::{self, Addrs};
use super::icmp::{self, Icmp, NdOption};
use super::ipv4::{self, Ipv4};
use super::ipv6::{self, ExtHeader, Fragment, Ipv6};
use super::mpls::{self, Itag, Mpls};
use super::tcp::{self, Tcp};
use super::udp::{self, Sctp, Udp};
use super::vlan::{self, Vlan};
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
    /// IPv4's identification.
    pub ident: u16,
    /// IPv4's flags (DF 0x4000, MF 0x2000) and fragment offset (the low
    /// 13 bits, 8-byte units); IPv6 says it in a fragment header
    /// ([`Ext::fragment`]).
    pub frag: u16,
}

impl Default for IpFields {
    /// TOS 0, TTL 64, no flow label; IPv4 goes with id 0 and DF set.
    fn default() -> Self {
        IpFields {
            tos: 0,
            ttl: 64,
            flow_label: 0,
            ident: 0,
            frag: 0x4000,
        }
    }
}

/// An IPv6 extension header to build (RFC 8200 4.3-4.6): the number that
/// names it and its bytes after the first two, which the builder writes
/// (the next header, chaining each to the one after it, and the length in
/// 8-byte units past the first 8; a fragment header's reserved byte, zero,
/// sits where the length would). `2 + body.len()` is a multiple of 8; AH,
/// whose length counts 4-byte units, is not built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ext {
    /// Its type: `ipproto::HOPOPTS`, `ROUTING`, `FRAGMENT`, `DSTOPTS`.
    pub kind: u8,
    /// What follows the first two bytes.
    pub body: Vec<u8>,
}

impl Ext {
    /// Hop-by-hop or destination options (`kind`) holding one PadN option:
    /// 8 bytes that say nothing.
    pub fn padding(kind: u8) -> Ext {
        Ext {
            kind,
            body: vec![1, 4, 0, 0, 0, 0],
        }
    }

    /// A fragment header: `offset` in 8-byte units (13 bits), whether more
    /// fragments follow, identification `id`.
    pub fn fragment(offset: u16, more: bool, id: u32) -> Ext {
        let mut b = [0u8; ipv6::FRAGMENT_LEN];
        let mut h = Fragment::at_mut(&mut b, 0).expect("a fragment header's room");
        h.set_offset_more(offset << 3 | more as u16);
        h.set_ident(id);
        Ext {
            kind: ipproto::FRAGMENT,
            body: b[2..].to_vec(),
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
    match (src, dst) {
        (Ip::V4(s), Ip::V4(d)) => ipv4_options(s, d, fields, &[], t, payload),
        (Ip::V6(s), Ip::V6(d)) => ipv6_ext(s, d, fields, &[], t, payload),
        _ => panic!("source and destination of different families"),
    }
}

/// `t`'s header and `payload`, its checksum over the pseudo-header whose
/// sum `pseudo` gives for the segment's length.
fn segment(t: &Transport<'_>, payload: &[u8], pseudo: impl FnOnce(usize) -> u64) -> Vec<u8> {
    let (mut seg, sum_at) = t.header(payload.len());
    seg.extend_from_slice(payload);
    if let Some(at) = sum_at {
        let mut sum = checksum::finish(checksum::sum(&seg, pseudo(seg.len())));
        if t.proto() == ipproto::UDP && sum == 0 {
            sum = 0xffff;
        }
        seg[at..at + 2].copy_from_slice(&sum.to_be_bytes());
    }
    seg
}

/// An IPv4 packet as [`ip`] makes it, with `options` (a multiple of 4
/// bytes, at most 40) after the fixed header, the IHL and the header
/// checksum counting them.
pub fn ipv4_options(
    src: [u8; 4],
    dst: [u8; 4],
    fields: &IpFields,
    options: &[u8],
    t: &Transport<'_>,
    payload: &[u8],
) -> Vec<u8> {
    assert!(
        options.len().is_multiple_of(4) && options.len() <= 40,
        "IPv4 options of {} bytes",
        options.len()
    );
    let proto = t.proto();
    let seg = segment(t, payload, |len| {
        if proto == ipproto::ICMP {
            0
        } else {
            checksum::pseudo_v4(src, dst, proto, len as u16)
        }
    });
    let hl = ipv4::LEN + options.len();
    let mut p = vec![0u8; ipv4::LEN];
    let mut h = Ipv4::at_mut(&mut p, 0).expect("an IPv4 header's room");
    h.set_version_ihl(0x40 | (hl / 4) as u8);
    h.set_tos(fields.tos);
    h.set_total_len((hl + seg.len()) as u16);
    h.set_ident(fields.ident);
    h.set_frag(fields.frag);
    h.set_ttl(fields.ttl);
    h.set_proto(proto);
    h.set_src(u32::from_be_bytes(src));
    h.set_dst(u32::from_be_bytes(dst));
    p.extend_from_slice(options);
    let sum = checksum::internet(&p);
    Ipv4::at_mut(&mut p, 0)
        .expect("an IPv4 header's room")
        .set_checksum(sum);
    p.extend_from_slice(&seg);
    p
}

/// An IPv6 packet as [`ip`] makes it, with extension headers `exts`
/// (in order, each naming the next, the last naming the transport)
/// between the fixed header and the transport header; the payload length
/// counts them, the transport checksum does not.
pub fn ipv6_ext(
    src: [u8; 16],
    dst: [u8; 16],
    fields: &IpFields,
    exts: &[Ext],
    t: &Transport<'_>,
    payload: &[u8],
) -> Vec<u8> {
    let proto = t.proto();
    let seg = segment(t, payload, |len| {
        checksum::pseudo_v6(src, dst, proto, len as u32)
    });
    let mut p = vec![0u8; ipv6::LEN];
    let nexts = exts.iter().map(|e| e.kind).skip(1).chain([proto]);
    for (e, next) in exts.iter().zip(nexts) {
        let len = 2 + e.body.len();
        assert!(len.is_multiple_of(8), "an extension header of {len} bytes");
        let at = p.len();
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(&e.body);
        let mut h = ExtHeader::at_mut(&mut p, at).expect("an extension header's room");
        h.set_next_header(next);
        h.set_len8((len / 8 - 1) as u8);
    }
    let first = exts.first().map_or(proto, |e| e.kind);
    let ext_len = p.len() - ipv6::LEN;
    let mut h = Ipv6::at_mut(&mut p, 0).expect("an IPv6 header's room");
    h.set_vtcfl(6 << 28 | (fields.tos as u32) << 20 | fields.flow_label & 0x000f_ffff);
    h.set_payload_len((ext_len + seg.len()) as u16);
    h.set_next_header(first);
    h.set_hop_limit(fields.ttl);
    h.set_src(u128::from_be_bytes(src));
    h.set_dst(u128::from_be_bytes(dst));
    p.extend_from_slice(&seg);
    p
}

/// An Ethernet frame: the two addresses, a VLAN tag with `tci` (0x8100)
/// if given, `ethertype`, then `body`; not padded.
pub fn ethernet(dst: u64, src: u64, tci: Option<u16>, ethertype: u16, body: &[u8]) -> Vec<u8> {
    let tag = tci.map(|t| (ethertype::VLAN, t));
    ethernet_tags(dst, src, tag.as_slice(), ethertype, body)
}

/// An Ethernet frame behind a stack of tags, outermost first, each a TPID
/// (0x8100, 0x88a8, 0x9100, or any other) and its TCI; then `ethertype`
/// and `body`; not padded.
pub fn ethernet_tags(
    dst: u64,
    src: u64,
    tags: &[(u16, u16)],
    ethertype: u16,
    body: &[u8],
) -> Vec<u8> {
    let mut f = vec![0u8; ethernet::ADDRS_LEN];
    let mut h = Addrs::at_mut(&mut f, 0).expect("an Ethernet header's room");
    h.set_dst(dst);
    h.set_src(src);
    for &(tpid, tci) in tags {
        let at = f.len();
        f.resize(at + vlan::LEN, 0);
        let mut t = Vlan::at_mut(&mut f, at).expect("a tag's room");
        t.set_tpid(tpid);
        t.set_tci(tci);
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(body);
    f
}

/// An MPLS label stack entry: `label` (20 bits), traffic class `tc` (3),
/// bottom of stack, TTL.
pub fn mpls(label: u32, tc: u8, bos: bool, ttl: u8) -> [u8; mpls::LEN] {
    let mut b = [0u8; mpls::LEN];
    let mut h = Mpls::at_mut(&mut b, 0).expect("a label stack entry's room");
    h.set_lse((label & 0xf_ffff) << 12 | ((tc & 7) as u32) << 9 | (bos as u32) << 8 | ttl as u32);
    b
}

/// A PBB I-TAG's four bytes after its TPID (0x88e7): priority `pcp` (3
/// bits), DEI, UCA (use customer addresses), I-SID (24 bits). The
/// customer's frame follows it.
pub fn itag(pcp: u8, dei: bool, uca: bool, isid: u32) -> [u8; mpls::LEN] {
    let mut b = [0u8; mpls::LEN];
    let mut h = Itag::at_mut(&mut b, 0).expect("an I-TAG's room");
    h.set_word(
        ((pcp & 7) as u32) << 29 | (dei as u32) << 28 | (uca as u32) << 27 | isid & 0xff_ffff,
    );
    b
}

/// What follows the first 8 bytes of a neighbour solicitation or
/// advertisement (RFC 4861 4.3, 4.4): the `target` address, then a
/// link-layer address option if given (its type, `icmp::ND_OPT_SLL` or
/// `ND_OPT_TLL`, and the MAC): the payload of a `Transport::Icmp` of
/// type 135 or 136 (whose `rest` is the reserved word, or an
/// advertisement's flags).
pub fn nd(target: [u8; 16], option: Option<(u8, u64)>) -> Vec<u8> {
    let mut b = target.to_vec();
    if let Some((ty, mac)) = option {
        let at = b.len();
        b.resize(at + 8, 0);
        let mut o = NdOption::at_mut(&mut b, at).expect("an ND option's room");
        o.set_ty(ty);
        o.set_len8(1);
        o.set_mac(mac);
    }
    b
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

/// Whether IP packet `p`'s IPv4 header checksum (options included) and
/// its TCP/UDP/ICMP checksum are right (for tests of rewrites); under
/// IPv6, past the extension headers [`ipv6_ext`] builds.
pub fn checksums_ok(p: &[u8]) -> bool {
    let Some(&first) = p.first() else {
        return false;
    };
    let (l4, pseudo) = if first >> 4 == 6 {
        let Some(h) = Ipv6::at(p, 0) else {
            return false;
        };
        let mut next = h.next_header();
        let mut at = ipv6::LEN;
        loop {
            let len = match next {
                ipproto::HOPOPTS | ipproto::ROUTING | ipproto::DSTOPTS => {
                    ExtHeader::at(p, at).map(|e| (e.next_header(), (e.len8() as usize + 1) * 8))
                }
                ipproto::FRAGMENT => {
                    Fragment::at(p, at).map(|e| (e.next_header(), ipv6::FRAGMENT_LEN))
                }
                _ => break,
            };
            let Some((n, len)) = len else {
                return false;
            };
            (next, at) = (n, at + len);
        }
        let Some(len) = (ipv6::LEN + h.payload_len() as usize).checked_sub(at) else {
            return false;
        };
        let pseudo = checksum::pseudo_v6(
            h.src().to_be_bytes(),
            h.dst().to_be_bytes(),
            next,
            len as u32,
        );
        (at, pseudo)
    } else {
        let Some(h) = Ipv4::at(p, 0) else {
            return false;
        };
        let hl = h.header_len();
        match p.get(..hl) {
            Some(b) if hl >= ipv4::LEN && checksum::internet(b) == 0 => {}
            _ => return false,
        }
        let len = h.total_len().saturating_sub(hl as u16);
        let pseudo = if h.proto() == ipproto::ICMP {
            0
        } else {
            checksum::pseudo_v4(h.src().to_be_bytes(), h.dst().to_be_bytes(), h.proto(), len)
        };
        (hl, pseudo)
    };
    match p.get(l4..) {
        Some(seg) => checksum::finish(checksum::sum(seg, pseudo)) == 0,
        None => false,
    }
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
    #[test]
    fn ipv4_identification_and_fragment_field_as_given() {
        let fields = IpFields {
            ident: 0x1234,
            frag: 0x2000 | 5,
            ..IpFields::default()
        };
        let t = Transport::Udp { sport: 1, dport: 2 };
        let p = ip(Ip::V4([1; 4]), Ip::V4([2; 4]), &fields, &t, &[7; 3]);
        let h = Ipv4::at(&p, 0).unwrap();
        assert_eq!((h.ident(), h.frag()), (0x1234, 0x2005));
        assert!(h.more_fragments() && h.frag_offset() == 5);
        assert!(checksums_ok(&p));
        let d = ip(
            Ip::V4([1; 4]),
            Ip::V4([2; 4]),
            &IpFields::default(),
            &t,
            &[],
        );
        assert_eq!(Ipv4::at(&d, 0).unwrap().frag(), 0x4000, "DF by default");
    }

    #[test]
    fn ipv4_options_are_counted_by_the_ihl_and_both_checksums() {
        let t = Transport::Tcp {
            sport: 1,
            dport: 2,
            seq: 3,
            ack: 4,
            flags: 0x10,
            window: 5,
            options: &[],
        };
        let opts = [1, 1, 1, 1, 0x94, 4, 0, 0];
        let f = IpFields::default();
        let p = ipv4_options([10, 0, 0, 1], [10, 0, 0, 2], &f, &opts, &t, &[9; 5]);
        let h = Ipv4::at(&p, 0).unwrap();
        assert_eq!((h.header_len(), h.total_len() as usize), (28, p.len()));
        assert_eq!(p[20..28], opts);
        assert!(checksums_ok(&p));
        // The segment is the one without options.
        let plain = ip(
            Ip::V4([10, 0, 0, 1]),
            Ip::V4([10, 0, 0, 2]),
            &f,
            &t,
            &[9; 5],
        );
        assert_eq!(p[28..], plain[20..]);
        assert_eq!(
            ipv4_options([10, 0, 0, 1], [10, 0, 0, 2], &f, &[], &t, &[9; 5]),
            plain
        );
        let mut bad = p.clone();
        bad[21] ^= 1;
        assert!(
            !checksums_ok(&bad),
            "an option byte is under the header checksum"
        );
    }

    #[test]
    fn ipv6_extension_headers_are_chained_and_counted() {
        let (s, d) = ([0xfd; 16], [0xfe; 16]);
        let t = Transport::Udp { sport: 1, dport: 2 };
        let exts = [
            Ext::padding(ipproto::HOPOPTS),
            Ext::fragment(0x1234, true, 7),
            Ext::padding(ipproto::DSTOPTS),
        ];
        let f = IpFields::default();
        let p = ipv6_ext(s, d, &f, &exts, &t, b"abc");
        assert_eq!(Ipv6::at(&p, 0).unwrap().next_header(), ipproto::HOPOPTS);
        assert_eq!(p[40..48], [ipproto::FRAGMENT, 0, 1, 4, 0, 0, 0, 0]);
        let frag = Fragment::at(&p, 48).unwrap();
        assert_eq!(frag.next_header(), ipproto::DSTOPTS);
        assert_eq!((frag.offset_more(), frag.ident()), (0x1234 << 3 | 1, 7));
        assert_eq!(p[49], 0, "the reserved byte");
        assert_eq!(p[56..64], [ipproto::UDP, 0, 1, 4, 0, 0, 0, 0]);
        assert_eq!(
            Ipv6::at(&p, 0).unwrap().payload_len() as usize,
            p.len() - 40
        );
        assert!(checksums_ok(&p));
        // The transport segment (and its checksum) as without them.
        let plain = ip(Ip::V6(s), Ip::V6(d), &f, &t, b"abc");
        assert_eq!(p[64..], plain[40..]);
        assert_eq!(ipv6_ext(s, d, &f, &[], &t, b"abc"), plain);
        // A longer header: its length counts the 8-byte units past 8.
        let long = Ext {
            kind: ipproto::DSTOPTS,
            body: vec![1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        };
        let p = ipv6_ext(s, d, &f, &[long], &t, &[]);
        assert_eq!(p[40..42], [ipproto::UDP, 1]);
        assert!(checksums_ok(&p));
    }

    #[test]
    fn tags_of_any_tpid_outermost_first() {
        let f = ethernet_tags(
            0x0200_0000_0002,
            0x0200_0000_0001,
            &[(0x88a8, 5), (0x8100, 0x2007)],
            ethertype::IPV4,
            &[0xaa],
        );
        assert_eq!(f[..12], [2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        assert_eq!(f[12..], [0x88, 0xa8, 0, 5, 0x81, 0, 0x20, 7, 8, 0, 0xaa]);
        assert_eq!(
            ethernet(1, 2, Some(9), ethertype::ARP, &[]),
            ethernet_tags(1, 2, &[(ethertype::VLAN, 9)], ethertype::ARP, &[])
        );
        assert_eq!(ethernet(1, 2, None, ethertype::ARP, &[]).len(), 14);
    }

    #[test]
    fn a_label_stack_entry_and_an_i_tag() {
        // Label 100, TC 3, bottom of stack, TTL 64.
        assert_eq!(mpls(100, 3, true, 64), [0x00, 0x06, 0x47, 0x40]);
        let e = mpls(0xf_ffff, 7, false, 1);
        let h = Mpls::at(&e, 0).unwrap();
        assert_eq!((h.lse() >> 12, h.bos(), h.ttl()), (0xf_ffff, false, 1));
        // Priority 5, UCA, I-SID 100.
        assert_eq!(itag(5, false, true, 100), [0xa8, 0, 0, 100]);
        assert_eq!(itag(0, true, false, 0x12_3456), [0x10, 0x12, 0x34, 0x56]);
    }

    #[test]
    fn a_neighbour_solicitation_with_its_source_address() {
        use super::super::icmp::NeighbourDiscovery;
        let target = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5];
        let t = Transport::Icmp {
            v6: true,
            ty: icmp::ND_SOLICIT,
            code: 0,
            rest: [0; 4],
        };
        let body = nd(target, Some((icmp::ND_OPT_SLL, 0x0200_0000_0001)));
        assert_eq!(body.len(), 24);
        let p = ip(
            Ip::V6([0xfd; 16]),
            Ip::V6([0xfe; 16]),
            &IpFields::default(),
            &t,
            &body,
        );
        assert!(checksums_ok(&p));
        let h = NeighbourDiscovery::at(&p, ipv6::LEN).unwrap();
        assert_eq!(h.target(), u128::from_be_bytes(target));
        let o = NdOption::at(&p, ipv6::LEN + icmp::ND_LEN).unwrap();
        assert_eq!((o.ty(), o.len8(), o.mac()), (1, 1, 0x0200_0000_0001));
        assert_eq!(nd(target, None), target);
    }

    #[test]
    fn checksums_ok_refuses_what_it_cannot_walk() {
        let t = Transport::Udp { sport: 1, dport: 2 };
        let f = IpFields::default();
        let p = ipv6_ext([1; 16], [2; 16], &f, &[Ext::padding(0)], &t, &[]);
        assert!(checksums_ok(&p));
        assert!(!checksums_ok(&p[..44]), "the chain cut short");
        let mut v4 = ip(Ip::V4([1; 4]), Ip::V4([2; 4]), &f, &t, &[]);
        v4[0] = 0x4f;
        assert!(!checksums_ok(&v4), "an IHL past the packet");
        v4[0] = 0x44;
        assert!(!checksums_ok(&v4), "an IHL below 5");
    }
}
