//! Open vSwitch's `multipath` and `bundle`/`bundle_load` as a packet meets
//! them, with Open vSwitch's hashes (`lib/flow.c` `flow_hash_fields`,
//! `lib/jhash.c`, `lib/hash.h`) so that a flow picks the same link or
//! member here as in Open vSwitch.
//!
//! Open vSwitch computes these hashes over its `struct flow` in host
//! memory: values are read as the bytes lie there (network order for
//! addresses and ports) and words as an x86-64 host reads them
//! (little-endian); its `hash_add` is the portable murmur-style one, as in
//! builds without SSE 4.2 (Debian's, checked with `ofproto/trace`; a
//! build for SSE 4.2 uses CRC32 there and picks other links). The
//! symmetric hashes take the ids of the first two VLAN tags (0x8100 or
//! 0x88a8), XORed, as Open vSwitch's flow holds two tags (with
//! `other_config:vlan-limit=2`; Open vSwitch's default limit of 1 keeps
//! the outer tag alone).

use super::*;
use ofp::action::{BdAlgorithm, Bundle, HashFields, MpAlgorithm, Multipath};

fn rot(x: u32, k: u32) -> u32 {
    x.rotate_left(k)
}

/// `mhash_add`, Open vSwitch's portable `hash_add`.
pub fn hash_add(hash: u32, data: u32) -> u32 {
    let mut hash = hash;
    if data != 0 {
        let d = rot(data.wrapping_mul(0xcc9e_2d51), 15).wrapping_mul(0x1b87_3593);
        hash ^= d;
    }
    rot(hash, 13).wrapping_mul(5).wrapping_add(0xe654_6b64)
}

/// `hash_add64`.
pub fn hash_add64(hash: u32, data: u64) -> u32 {
    hash_add(hash_add(hash, data as u32), (data >> 32) as u32)
}

/// `hash_finish`.
pub fn hash_finish(hash: u32, fin: u32) -> u32 {
    let mut h = hash ^ fin;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// `hash_2words`.
pub fn hash_2words(x: u32, y: u32) -> u32 {
    hash_finish(hash_add(hash_add(x, 0), y), 8)
}

fn jhash_mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= rot(*c, 4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= rot(*a, 6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= rot(*b, 8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= rot(*c, 16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= rot(*a, 19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= rot(*b, 4);
    *b = b.wrapping_add(*a);
}

fn jhash_final(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(rot(*b, 14));
    *a ^= *c;
    *a = a.wrapping_sub(rot(*c, 11));
    *b ^= *a;
    *b = b.wrapping_sub(rot(*a, 25));
    *c ^= *b;
    *c = c.wrapping_sub(rot(*b, 16));
    *a ^= *c;
    *a = a.wrapping_sub(rot(*c, 4));
    *b ^= *a;
    *b = b.wrapping_sub(rot(*a, 14));
    *c ^= *b;
    *c = c.wrapping_sub(rot(*b, 24));
}

fn le32(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w[..b.len().min(4)].copy_from_slice(&b[..b.len().min(4)]);
    u32::from_le_bytes(w)
}

/// `jhash_bytes`: Bob Jenkins' lookup3 over bytes, words read
/// little-endian.
pub fn jhash_bytes(p: &[u8], basis: u32) -> u32 {
    let n = p.len() as u32;
    let (mut a, mut b, mut c) = (0u32, 0u32, 0u32);
    let init = 0xdead_beefu32.wrapping_add(n).wrapping_add(basis);
    (a, b, c) = (
        a.wrapping_add(init),
        b.wrapping_add(init),
        c.wrapping_add(init),
    );
    let mut rest = p;
    while rest.len() >= 12 {
        a = a.wrapping_add(le32(&rest[0..4]));
        b = b.wrapping_add(le32(&rest[4..8]));
        c = c.wrapping_add(le32(&rest[8..12]));
        jhash_mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    if !rest.is_empty() {
        let mut t = [0u8; 12];
        t[..rest.len()].copy_from_slice(rest);
        a = a.wrapping_add(le32(&t[0..4]));
        b = b.wrapping_add(le32(&t[4..8]));
        c = c.wrapping_add(le32(&t[8..12]));
        jhash_final(&mut a, &mut b, &mut c);
    }
    c
}

/// What of a packet Open vSwitch's flow hashes read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HashInput {
    pub eth_src: [u8; 6],
    pub eth_dst: [u8; 6],
    /// The EtherType after any VLAN tags.
    pub eth_type: u16,
    /// The ids of the first two VLAN tags, XORed (0 without a tag).
    pub vlan_vid: u16,
    /// IPv4 addresses in the low 32 bits, or IPv6 ones.
    pub nw_src: u128,
    pub nw_dst: u128,
    pub nw_proto: u8,
    /// A fragment (first or later).
    pub frag: bool,
    pub tp_src: u16,
    pub tp_dst: u16,
}

const ETH_TYPE_IP: u16 = 0x0800;
const ETH_TYPE_IPV6: u16 = 0x86dd;

impl HashInput {
    fn ip_bytes(&self) -> Option<[u8; 16]> {
        let x = self.nw_src ^ self.nw_dst;
        match self.eth_type {
            ETH_TYPE_IP => {
                let mut b = [0u8; 16];
                b[..4].copy_from_slice(&(x as u32).to_be_bytes());
                Some(b)
            }
            ETH_TYPE_IPV6 => Some(x.to_be_bytes()),
            _ => None,
        }
    }

    fn eth_xor(&self) -> [u8; 6] {
        let mut e = [0u8; 6];
        for (i, b) in e.iter_mut().enumerate() {
            *b = self.eth_src[i] ^ self.eth_dst[i];
        }
        e
    }

    fn symmetric_ports(&self, udp: bool) -> bool {
        matches!(self.nw_proto, 6 | 132) || (udp && self.nw_proto == 17)
    }

    /// `flow_hash_symmetric_l4`: jhash of a 32-byte structure.
    pub(crate) fn symmetric_l4(&self, basis: u32) -> u32 {
        let mut s = [0u8; 32];
        s[16..18].copy_from_slice(&self.eth_type.to_be_bytes());
        s[18..20].copy_from_slice(&(self.vlan_vid & 0x0fff).to_be_bytes());
        s[22..28].copy_from_slice(&self.eth_xor());
        if let Some(ip) = self.ip_bytes() {
            let n = if self.eth_type == ETH_TYPE_IP { 4 } else { 16 };
            s[..n].copy_from_slice(&ip[..n]);
            s[28] = self.nw_proto;
            if self.symmetric_ports(false) {
                s[20..22].copy_from_slice(&(self.tp_src ^ self.tp_dst).to_be_bytes());
            }
        }
        jhash_bytes(&s, basis)
    }

    /// `flow_hash_symmetric_l2`.
    fn symmetric_l2(&self, basis: u32) -> u32 {
        let mut w = [0u8; 12];
        w[0..2].copy_from_slice(&self.eth_type.to_be_bytes());
        w[2..4].copy_from_slice(&(self.vlan_vid & 0x0fff).to_be_bytes());
        w[4..10].copy_from_slice(&self.eth_xor());
        let mut h = basis;
        for i in 0..3 {
            h = hash_add(h, le32(&w[4 * i..4 * i + 4]));
        }
        hash_finish(h, basis)
    }

    /// `flow_hash_symmetric_l3l4`.
    fn symmetric_l3l4(&self, basis: u32, udp: bool) -> u32 {
        let mut h = basis;
        match self.eth_type {
            ETH_TYPE_IP => {
                let x = ((self.nw_src ^ self.nw_dst) as u32).to_be_bytes();
                h = hash_add(h, u32::from_le_bytes(x));
            }
            ETH_TYPE_IPV6 => {
                let x = (self.nw_src ^ self.nw_dst).to_be_bytes();
                for half in x.chunks(8) {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(half);
                    h = hash_add64(h, u64::from_le_bytes(w));
                }
            }
            _ => return self.symmetric_l2(basis),
        }
        h = hash_add(h, self.nw_proto as u32);
        if !self.frag && self.symmetric_ports(udp) {
            let p = (self.tp_src ^ self.tp_dst).to_be_bytes();
            h = hash_add(h, u16::from_le_bytes(p) as u32);
        }
        hash_finish(h, basis)
    }

    /// `flow_hash_symmetric_l3`: jhash of a 20-byte structure.
    fn symmetric_l3(&self, basis: u32) -> u32 {
        let mut s = [0u8; 20];
        s[16..18].copy_from_slice(&self.eth_type.to_be_bytes());
        if let Some(ip) = self.ip_bytes() {
            let n = if self.eth_type == ETH_TYPE_IP { 4 } else { 16 };
            s[..n].copy_from_slice(&ip[..n]);
        }
        jhash_bytes(&s, basis)
    }

    fn nw(&self, v: u128, basis: u32) -> u32 {
        match self.eth_type {
            ETH_TYPE_IP => jhash_bytes(&(v as u32).to_be_bytes(), basis),
            ETH_TYPE_IPV6 => jhash_bytes(&v.to_be_bytes(), basis),
            _ => basis,
        }
    }

    /// `flow_hash_fields`.
    pub fn hash(&self, fields: HashFields, basis: u16) -> u32 {
        let basis = basis as u32;
        match fields {
            HashFields::EthSrc => jhash_bytes(&self.eth_src, basis),
            HashFields::SymmetricL4 => self.symmetric_l4(basis),
            HashFields::SymmetricL3L4 => self.symmetric_l3l4(basis, false),
            HashFields::SymmetricL3L4Udp => self.symmetric_l3l4(basis, true),
            HashFields::NwSrc => self.nw(self.nw_src, basis),
            HashFields::NwDst => self.nw(self.nw_dst, basis),
            HashFields::SymmetricL3 => self.symmetric_l3(basis),
        }
    }
}

/// Iterations iter_hash tries before it settles for `hash % n_links`
/// (each try succeeds with odds of one half or better: never reached in
/// practice, it bounds the work whatever the hash).
const ITER_HASH_TRIES: u32 = 1 << 16;

fn iter_hash(hash: u32, n_links: u32, modulo: u32) -> u32 {
    let mut modulo = modulo;
    if modulo < n_links || modulo / 2 > n_links {
        modulo = n_links.next_power_of_two();
    }
    for i in 0..ITER_HASH_TRIES {
        let link = hash_2words(hash, i) % modulo;
        if link < n_links {
            return link;
        }
    }
    hash % n_links
}

/// `multipath_algorithm`: the link, in `[0, n_links)`.
pub fn multipath_link(hash: u32, alg: MpAlgorithm, n_links: u32, arg: u32) -> u32 {
    let n_links = n_links.max(1);
    match alg {
        MpAlgorithm::ModuloN => hash % n_links,
        MpAlgorithm::HashThreshold if n_links == 1 => 0,
        MpAlgorithm::HashThreshold => hash / (u32::MAX / n_links + 1),
        MpAlgorithm::Hrw if n_links <= 64 => {
            let mut best = (0, hash_2words(hash, 0));
            for link in 1..n_links {
                let w = hash_2words(hash, link);
                if w > best.1 {
                    best = (link, w);
                }
            }
            best.0
        }
        MpAlgorithm::Hrw => iter_hash(hash, n_links, 0),
        MpAlgorithm::IterHash => iter_hash(hash, n_links, arg),
    }
}

/// Open vSwitch's `OFPP_NONE` as a 16-bit port: what bundle_load writes
/// when no member is live.
const OFPP_NONE16: u32 = 0xffff;

impl Exec {
    pub(super) fn hash_input(&mut self, frame: &[u8], cx: &mut Ctx<'_>) -> HashInput {
        let mut get = |f| self.field_value(f, frame, cx);
        let eth_type = get(OxmField::EthType) as u16;
        let nw_proto = get(OxmField::IpProto) as u8;
        let mac = |v: u128| {
            let b = (v as u64).to_be_bytes();
            [b[2], b[3], b[4], b[5], b[6], b[7]]
        };
        let (nw_src, nw_dst) = match eth_type {
            ETH_TYPE_IP => (get(OxmField::Ipv4Src), get(OxmField::Ipv4Dst)),
            ETH_TYPE_IPV6 => (get(OxmField::Ipv6Src), get(OxmField::Ipv6Dst)),
            _ => (0, 0),
        };
        let ports = match (eth_type, nw_proto) {
            (ETH_TYPE_IP | ETH_TYPE_IPV6, 6) => Some((OxmField::TcpSrc, OxmField::TcpDst)),
            (ETH_TYPE_IP | ETH_TYPE_IPV6, 17) => Some((OxmField::UdpSrc, OxmField::UdpDst)),
            (ETH_TYPE_IP | ETH_TYPE_IPV6, 132) => Some((OxmField::SctpSrc, OxmField::SctpDst)),
            _ => None,
        };
        let (tp_src, tp_dst) = ports.map_or((0, 0), |(s, d)| (get(s) as u16, get(d) as u16));
        // The tags as they are in the frame now (the key holds the outer
        // one only).
        let mut vlan_vid = 0u16;
        for i in 0..2 {
            let at = 12 + 4 * i;
            match frame.get(at..at + 4) {
                Some(&[a, b, c, d]) if matches!(u16::from_be_bytes([a, b]), 0x8100 | 0x88a8) => {
                    vlan_vid ^= u16::from_be_bytes([c, d]) & 0x0fff;
                }
                _ => break,
            }
        }
        HashInput {
            eth_src: mac(get(OxmField::EthSrc)),
            eth_dst: mac(get(OxmField::EthDst)),
            eth_type,
            vlan_vid,
            nw_src,
            nw_dst,
            nw_proto: if ports.is_some() || matches!(eth_type, ETH_TYPE_IP | ETH_TYPE_IPV6) {
                nw_proto
            } else {
                0
            },
            frag: matches!(eth_type, ETH_TYPE_IP | ETH_TYPE_IPV6) && get(OxmField::IpFrag) != 0,
            tp_src,
            tp_dst,
        }
    }

    pub(super) fn multipath<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        m: &Multipath,
        frame: &mut B,
        cx: &mut Ctx<'_>,
    ) {
        let h = self.hash_input(frame, cx).hash(m.fields, m.basis);
        let link = multipath_link(h, m.algorithm, m.max_link as u32 + 1, m.arg);
        if T {
            self.note(format!("    hash {h:#010x} -> link {link}"));
        }
        self.write_subfield::<T, _>(&m.dst, link as u128, frame, cx);
    }

    /// Whether bundle may pick `p`: Open vSwitch's `member_enabled_cb`,
    /// liveness (link up, not administratively down) from the port table.
    fn member_live(snap: &Snapshot, p: u32) -> bool {
        match p {
            port_no::IN_PORT
            | port_no::TABLE
            | port_no::NORMAL
            | port_no::FLOOD
            | port_no::ALL
            | port_no::ANY => true,
            port_no::CONTROLLER => false,
            p => snap.ports.get(p).is_some_and(|s| s.live),
        }
    }

    pub(super) fn bundle<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        b: &Bundle,
        frame: &mut B,
        cx: &mut Ctx<'_>,
    ) {
        let snap = cx.snap;
        let chosen = match b.algorithm {
            BdAlgorithm::ActiveBackup => b
                .members
                .iter()
                .copied()
                .find(|&p| Self::member_live(snap, p)),
            BdAlgorithm::Hrw => {
                let h = self.hash_input(frame, cx).hash(b.fields, b.basis);
                let mut best: Option<(u32, u32)> = None;
                for (i, &p) in b.members.iter().enumerate() {
                    if Self::member_live(snap, p) {
                        let w = hash_2words(i as u32, h);
                        if best.is_none_or(|(_, bw)| w > bw) {
                            best = Some((p, w));
                        }
                    }
                }
                best.map(|(p, _)| p)
            }
        };
        if T {
            self.note(match chosen {
                Some(p) => format!("    -> member {}", ofp::text::format_port(p)),
                None => "    -> no live member".into(),
            });
        }
        match &b.dst {
            Some(d) => {
                let v = chosen.map_or(OFPP_NONE16, |p| ofp::resubmit::port_to_u16(p) as u32);
                self.write_subfield::<T, _>(d, v as u128, frame, cx);
            }
            None => {
                if let Some(p) = chosen.filter(|&p| crate::validate::valid_output_port(p)) {
                    self.output::<T>(p, 0, cx);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jhash_of_nothing_and_a_word() {
        // lookup3's published values for hashlittle("", 0) and the
        // sluice form (little-endian words) of the same construction.
        assert_eq!(jhash_bytes(&[], 0), 0xdead_beef);
        assert_eq!(jhash_bytes(&[], 0xdead_beef), 0xbd5b_7dde);
    }

    #[test]
    fn iter_hash_and_hrw_stay_in_range() {
        for h in [0u32, 1, 0xdead_beef, u32::MAX] {
            for n in [1u32, 2, 3, 63, 64, 65, 1000, 65536] {
                for alg in [
                    MpAlgorithm::ModuloN,
                    MpAlgorithm::HashThreshold,
                    MpAlgorithm::Hrw,
                    MpAlgorithm::IterHash,
                ] {
                    assert!(multipath_link(h, alg, n, 0) < n);
                }
            }
        }
    }
}
