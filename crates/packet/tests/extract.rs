//! Flow-key extraction against packets built by an independent library
//! (etherparse) or by hand from the RFC layouts, plus properties: no input
//! panics, and a truncated packet's key holds only what the prefix carried.

use etherparse::{PacketBuilder, VlanId};
use proptest::prelude::*;

use packet::checksum;
use packet::parse::exthdr;
use packet::{extract, flags, slots as s, FlowKey};

const SRC: [u8; 6] = [2, 0, 0, 0, 0, 1];
const DST: [u8; 6] = [2, 0, 0, 0, 0, 2];

fn key(frame: &[u8]) -> FlowKey {
    let mut k = FlowKey::default();
    extract(frame, 7, &mut k);
    k
}

fn ipv4_tcp() -> Vec<u8> {
    let b = PacketBuilder::ethernet2(SRC, DST)
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .tcp(1234, 80, 1, 1000)
        .syn();
    let payload = [1u8, 2, 3, 4, 5];
    let mut v = Vec::new();
    b.write(&mut v, &payload).unwrap();
    v
}

fn ipv4_udp_vlan() -> Vec<u8> {
    let b = PacketBuilder::ethernet2(SRC, DST)
        .single_vlan(VlanId::try_new(10).unwrap())
        .ipv4([192, 168, 1, 1], [192, 168, 1, 2], 64)
        .udp(53, 5353);
    let mut v = Vec::new();
    b.write(&mut v, &[9u8; 20]).unwrap();
    v
}

fn qinq_icmp() -> Vec<u8> {
    let b = PacketBuilder::ethernet2(SRC, DST)
        .double_vlan(VlanId::try_new(100).unwrap(), VlanId::try_new(200).unwrap())
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .icmpv4_echo_request(1, 2);
    let mut v = Vec::new();
    b.write(&mut v, &[0u8; 8]).unwrap();
    v
}

fn eth(ty: u16) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&DST);
    v.extend_from_slice(&SRC);
    v.extend_from_slice(&ty.to_be_bytes());
    v
}

fn arp_request() -> Vec<u8> {
    let mut v = eth(0x0806);
    v.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
    v.extend_from_slice(&SRC);
    v.extend_from_slice(&[10, 0, 0, 1]);
    v.extend_from_slice(&[0; 6]);
    v.extend_from_slice(&[10, 0, 0, 2]);
    v
}

fn ipv6_header(next: u8, payload_len: u16) -> Vec<u8> {
    let mut v = eth(0x86dd);
    // version 6, traffic class 0xb8 (dscp 46, ecn 0), flow label 0x12345
    v.extend_from_slice(&[0x6b, 0x81, 0x23, 0x45]);
    v.extend_from_slice(&payload_len.to_be_bytes());
    v.extend_from_slice(&[next, 64]);
    v.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    v.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    v
}

/// IPv6 / hop-by-hop / destination options / UDP.
fn ipv6_ext_udp() -> Vec<u8> {
    let mut body = vec![60, 0, 1, 4, 0, 0, 0, 0]; // hop-by-hop, next = dest opts, PadN
    body.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]); // dest opts, next = UDP
    body.extend_from_slice(&[0x04, 0xd2, 0x00, 0x35, 0, 12, 0, 0, 1, 2, 3, 4]); // UDP 1234 -> 53
    let mut v = ipv6_header(0, body.len() as u16);
    v.extend(body);
    v
}

/// IPv6 / fragment header (offset 8, a later fragment) / data.
fn ipv6_later_fragment() -> Vec<u8> {
    let body = [17, 0, 0x00, 0x40, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8];
    let mut v = ipv6_header(44, body.len() as u16);
    v.extend_from_slice(&body);
    v
}

/// ICMPv6 neighbour solicitation with a source link-layer address option.
fn ipv6_nd_ns() -> Vec<u8> {
    let mut body = vec![135, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]);
    body.extend_from_slice(&[1, 1]);
    body.extend_from_slice(&SRC);
    let mut v = ipv6_header(58, body.len() as u16);
    v.extend(body);
    v
}

fn mpls() -> Vec<u8> {
    let mut v = eth(0x8847);
    // label 100, tc 5, bos 1, ttl 64
    v.extend_from_slice(&((100u32 << 12) | (5 << 9) | (1 << 8) | 64).to_be_bytes());
    v.extend_from_slice(&[0x45; 20]);
    v
}

fn pbb() -> Vec<u8> {
    let mut v = eth(0x88e7);
    v.extend_from_slice(&[0x00, 0x12, 0x34, 0x56]);
    v.extend_from_slice(&DST);
    v.extend_from_slice(&SRC);
    v.extend_from_slice(&0x0800u16.to_be_bytes());
    v
}

#[test]
fn ipv4_tcp_fields() {
    let k = key(&ipv4_tcp());
    assert_eq!(k.get(s::IN_PORT), 7);
    assert_eq!(k.get(s::ETH_SRC), 0x0200_0000_0001);
    assert_eq!(k.get(s::ETH_DST), 0x0200_0000_0002);
    assert_eq!(k.get(s::ETH_TYPE), 0x0800);
    assert_eq!(k.get(s::IP_PROTO), 6);
    assert_eq!(k.get(s::NW_SRC), 0x0a00_0001);
    assert_eq!(k.get(s::NW_DST), 0x0a00_0002);
    assert_eq!((k.get(s::TP_SRC), k.get(s::TP_DST)), (1234, 80));
    assert_eq!(k.get(s::TCP_FLAGS) & 0x02, 0x02, "SYN");
    assert_eq!(k.flags(), flags::ETH | flags::IPV4 | flags::L4);
    assert_eq!(k.get(s::VLAN_VID), 0, "no tag reads as OFPVID_NONE");
}

#[test]
fn vlan_and_qinq() {
    let k = key(&ipv4_udp_vlan());
    assert_eq!(k.get(s::VLAN_VID), 0x1000 | 10);
    assert_eq!(k.get(s::ETH_TYPE), 0x0800);
    assert_eq!((k.get(s::TP_SRC), k.get(s::TP_DST)), (53, 5353));
    assert!(k.flags() & flags::VLAN != 0);
    let k = key(&qinq_icmp());
    assert_eq!(k.get(s::VLAN_VID), 0x1000 | 100, "outer tag");
    assert_eq!(k.get(s::ETH_TYPE), 0x0800);
    assert_eq!(
        (k.get(s::IP_PROTO), k.get(s::TP_SRC), k.get(s::TP_DST)),
        (1, 8, 0)
    );
}

#[test]
fn arp_fields() {
    let k = key(&arp_request());
    assert_eq!(k.get(s::ETH_TYPE), 0x0806);
    assert_eq!(k.get(s::ARP_OP), 1);
    assert_eq!(k.get(s::NW_SRC), 0x0a00_0001);
    assert_eq!(k.get(s::NW_DST), 0x0a00_0002);
    assert_eq!(k.get(s::ARP_SHA), 0x0200_0000_0001);
    assert_eq!(k.get(s::ARP_THA), 0);
    assert_eq!(k.flags(), flags::ETH | flags::ARP);
}

#[test]
fn ipv6_extension_headers() {
    let k = key(&ipv6_ext_udp());
    assert_eq!(k.get(s::ETH_TYPE), 0x86dd);
    assert_eq!(k.get(s::IP_PROTO), 17);
    assert_eq!(k.get(s::IP_DSCP), 46);
    assert_eq!(k.get(s::IPV6_FLABEL), 0x12345);
    assert_eq!(
        k.get128(s::IPV6_SRC_HI, s::IPV6_SRC_LO),
        0x2001_0db8_0000_0000_0000_0000_0000_0001
    );
    assert_eq!(k.get(s::IPV6_EXTHDR) as u16, exthdr::HOP | exthdr::DEST);
    assert_eq!((k.get(s::TP_SRC), k.get(s::TP_DST)), (1234, 53));
    assert!(k.flags() & flags::L4 != 0);

    let k = key(&ipv6_later_fragment());
    assert_eq!(k.get(s::IPV6_EXTHDR) as u16, exthdr::FRAG);
    assert_eq!(k.get(s::IP_PROTO), 17);
    assert!(k.flags() & flags::LATER_FRAG != 0);
    assert_eq!(
        k.flags() & flags::L4,
        0,
        "a later fragment has no transport header"
    );
}

#[test]
fn neighbour_discovery() {
    let k = key(&ipv6_nd_ns());
    assert_eq!((k.get(s::IP_PROTO), k.get(s::TP_SRC)), (58, 135));
    assert_eq!(
        k.get128(s::ND_TARGET_HI, s::ND_TARGET_LO),
        0x2001_0db8_0000_0000_0000_0000_0000_0009
    );
    assert_eq!(k.get(s::ARP_SHA), 0x0200_0000_0001, "nd_sll");
    assert!(k.flags() & flags::ND != 0);
}

#[test]
fn mpls_and_pbb() {
    let k = key(&mpls());
    assert_eq!(
        (k.get(s::MPLS_LABEL), k.get(s::MPLS_TC), k.get(s::MPLS_BOS)),
        (100, 5, 1)
    );
    assert_eq!(k.flags(), flags::ETH | flags::MPLS);
    let k = key(&pbb());
    assert_eq!(k.get(s::PBB_ISID), 0x123456);
    assert_eq!(k.flags(), flags::ETH | flags::PBB);
}

#[test]
fn checksums_agree_with_etherparse() {
    let f = ipv4_tcp();
    let ip = &f[14..34];
    assert_eq!(
        checksum::internet(ip),
        0,
        "a correct IPv4 header sums to zero"
    );
    let seg = &f[34..];
    let pseudo = checksum::pseudo_v4([10, 0, 0, 1], [10, 0, 0, 2], 6, seg.len() as u16);
    assert_eq!(
        checksum::finish(checksum::sum(seg, pseudo)),
        0,
        "etherparse's TCP checksum verifies"
    );
    let u = ipv4_udp_vlan();
    let seg = &u[18 + 20..];
    let pseudo = checksum::pseudo_v4([192, 168, 1, 1], [192, 168, 1, 2], 17, seg.len() as u16);
    let mut zeroed = seg.to_vec();
    zeroed[6..8].copy_from_slice(&[0, 0]);
    assert_eq!(
        checksum::udp_full(pseudo, &zeroed).to_be_bytes(),
        [seg[6], seg[7]]
    );
}

#[test]
fn incremental_update_matches_recompute_on_a_real_packet() {
    let mut f = ipv4_tcp();
    // Rewrite the IPv4 source address and fix both checksums incrementally.
    let old = u32::from_be_bytes(f[26..30].try_into().unwrap());
    let new = 0xc0a8_0101u32;
    f[26..30].copy_from_slice(&new.to_be_bytes());
    let ipc = u16::from_be_bytes([f[24], f[25]]);
    f[24..26].copy_from_slice(&checksum::update32(ipc, old, new).to_be_bytes());
    let tcpc = u16::from_be_bytes([f[50], f[51]]);
    f[50..52].copy_from_slice(&checksum::update32(tcpc, old, new).to_be_bytes());
    assert_eq!(checksum::internet(&f[14..34]), 0);
    let seg = &f[34..];
    let pseudo = checksum::pseudo_v4([192, 168, 1, 1], [10, 0, 0, 2], 6, seg.len() as u16);
    assert_eq!(checksum::finish(checksum::sum(seg, pseudo)), 0);
}

/// Which key slots a layer flag vouches for.
fn layer_slots(flag: u64) -> &'static [packet::Slot] {
    match flag {
        flags::ETH => &[s::ETH_DST, s::ETH_SRC, s::ETH_TYPE],
        flags::VLAN => &[s::VLAN_VID, s::VLAN_PCP],
        flags::IPV4 => &[s::NW_SRC, s::NW_DST, s::IP_PROTO, s::IP_DSCP, s::IP_ECN],
        flags::IPV6 => &[
            s::IPV6_SRC_HI,
            s::IPV6_SRC_LO,
            s::IPV6_DST_HI,
            s::IPV6_DST_LO,
            s::IPV6_FLABEL,
        ],
        flags::ARP => &[s::ARP_OP, s::NW_SRC, s::NW_DST, s::ARP_SHA, s::ARP_THA],
        flags::L4 => &[s::TP_SRC, s::TP_DST],
        flags::ND => &[s::ND_TARGET_HI, s::ND_TARGET_LO],
        flags::MPLS => &[s::MPLS_LABEL, s::MPLS_TC, s::MPLS_BOS],
        flags::PBB => &[s::PBB_ISID],
        _ => &[],
    }
}

const PRIVATE: [u64; 6] = [
    flags::VLAN,
    flags::IPV6,
    flags::L4,
    flags::ND,
    flags::MPLS,
    flags::PBB,
];

fn samples() -> Vec<Vec<u8>> {
    vec![
        ipv4_tcp(),
        ipv4_udp_vlan(),
        qinq_icmp(),
        arp_request(),
        ipv6_ext_udp(),
        ipv6_later_fragment(),
        ipv6_nd_ns(),
        mpls(),
        pbb(),
    ]
}

#[test]
fn truncated_packets_keep_only_what_was_present() {
    for full in samples() {
        let whole = key(&full);
        for cut in 0..full.len() {
            let k = key(&full[..cut]);
            let f = k.flags() & !(flags::FRAG | flags::LATER_FRAG);
            assert_eq!(
                f & !whole.flags(),
                0,
                "prefix {cut} claims a layer the whole packet lacks"
            );
            for bit in 0..16 {
                let flag = 1u64 << bit;
                let slots = layer_slots(flag);
                if f & flag != 0 {
                    for sl in slots {
                        assert_eq!(
                            k.get(*sl),
                            whole.get(*sl),
                            "prefix {cut}: layer {flag:#x} field {sl:?}"
                        );
                    }
                } else if PRIVATE.contains(&flag) {
                    // Layers whose slots no other layer shares read zero when absent.
                    for sl in slots {
                        assert_eq!(
                            k.get(*sl),
                            0,
                            "prefix {cut}: absent layer {flag:#x} left {sl:?}"
                        );
                    }
                }
            }
        }
    }
}

proptest! {
    #[test]
    fn any_bytes_parse_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200), port in any::<u32>()) {
        let mut k = FlowKey::default();
        let off = extract(&bytes, port, &mut k);
        prop_assert_eq!(k.get(s::IN_PORT), port as u64);
        for o in [off.vlan, off.eth_type, off.l2_5, off.l3, off.l4].into_iter().flatten() {
            prop_assert!((o as usize) < bytes.len());
        }
    }

    #[test]
    fn mutated_samples_parse_without_panic(i in 0usize..9, pos in any::<prop::sample::Index>(), b in any::<u8>()) {
        let mut f = samples().swap_remove(i);
        let p = pos.index(f.len());
        f[p] = b;
        let _ = key(&f);
    }
}
