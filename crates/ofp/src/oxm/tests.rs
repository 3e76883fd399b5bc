//! The field table, the codec and match validation against the spec.

use super::*;
use bytes::Bytes;

use crate::error::{BadMatchCode, ErrorCode};
use crate::wire::Reader;

fn m(fields: &[Oxm]) -> Match {
    fields.iter().fold(Match::new(), |m, o| m.with(*o))
}

#[test]
fn header_layout_matches_spec() {
    // OXM_OF_IN_PORT = 0x80000004, OXM_OF_ETH_DST_W = 0x8000070c.
    assert_eq!(OxmField::InPort.header(false), 0x8000_0004);
    assert_eq!(OxmField::EthDst.header(true), 0x8000_070c);
    assert_eq!(OxmField::Ipv6Src.header(false), 0x8000_3410);
}

#[test]
fn all_forty_fields_have_info() {
    for v in 0..40u8 {
        assert!(OxmField::from(v).info().is_some(), "field {v}");
    }
    assert!(OxmField::from(40).info().is_none());
}

#[test]
fn prerequisites_are_checked() {
    use OxmField as F;
    let tcp = m(&[
        Oxm::exact(F::EthType, 0x800),
        Oxm::exact(F::IpProto, 6),
        Oxm::exact(F::TcpDst, 80),
    ]);
    assert!(tcp.validate().is_ok());
    // A prerequisite comes before the field that needs it, as the spec
    // and Open vSwitch want (os-ken writes Nicira fields such as
    // nw_ttl first).
    for late in [
        m(&[
            Oxm::exact(F::EthType, 0x800),
            Oxm::exact(F::TcpDst, 80),
            Oxm::exact(F::IpProto, 6),
        ]),
        m(&[Oxm::exact(F::NwTtl, 3), Oxm::exact(F::EthType, 0x800)]),
    ] {
        assert_eq!(
            late.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::BadPrereq)
        );
    }
    let no_proto = m(&[Oxm::exact(F::EthType, 0x800), Oxm::exact(F::TcpDst, 80)]);
    assert_eq!(
        no_proto.validate().unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadPrereq)
    );
    let udp = m(&[
        Oxm::exact(F::EthType, 0x800),
        Oxm::exact(F::IpProto, 17),
        Oxm::exact(F::TcpDst, 80),
    ]);
    assert_eq!(
        udp.validate().unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadPrereq)
    );
    let masked_type = m(&[
        Oxm::masked(F::EthType, 0x800, 0xff00),
        Oxm::exact(F::IpProto, 6),
    ]);
    // eth_type is not maskable: that is reported first.
    assert_eq!(
        masked_type.validate().unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadMask)
    );
    let pcp = m(&[Oxm::exact(F::VlanVid, 0), Oxm::exact(F::VlanPcp, 3)]);
    assert_eq!(
        pcp.validate().unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadPrereq)
    );
    let pcp_ok = m(&[Oxm::exact(F::VlanVid, 0x1005), Oxm::exact(F::VlanPcp, 3)]);
    assert!(pcp_ok.validate().is_ok());
    // Open vSwitch's extension fields have theirs.
    let ttl = m(&[Oxm::exact(F::NwTtl, 3)]);
    assert!(ttl.validate().is_err());
    let flags = m(&[
        Oxm::exact(F::EthType, 0x86dd),
        Oxm::exact(F::IpProto, 6),
        Oxm::masked(F::TcpFlags, 2, 2),
    ]);
    assert!(flags.validate().is_ok());
}

#[test]
fn register_views_overlap() {
    use OxmField as F;
    let ok = m(&[Oxm::exact(F::Reg(0), 1), Oxm::exact(F::XReg(1), 2)]);
    assert!(ok.validate().is_ok());
    for other in [F::XReg(0), F::XXReg(0)] {
        let dup = m(&[Oxm::exact(F::Reg(1), 1), Oxm::exact(other, 2)]);
        assert_eq!(
            dup.validate().unwrap_err().code,
            ErrorCode::BadMatch(BadMatchCode::DupField),
            "{other:?}"
        );
    }
    assert!(OxmField::Reg(16).info().is_none());
    assert_eq!(OxmField::from(OxmField::Reg(15).value()), OxmField::Reg(15));
    assert_eq!(
        OxmField::from(OxmField::XXReg(3).value()),
        OxmField::XXReg(3)
    );
}

#[test]
fn value_and_mask_checks() {
    use OxmField as F;
    let dup = m(&[Oxm::exact(F::InPort, 1), Oxm::exact(F::InPort, 2)]);
    assert_eq!(
        dup.validate().unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::DupField)
    );
    let wild = m(&[Oxm::masked(F::EthDst, 0xff, 0xf0)]);
    assert_eq!(
        wild.validate().unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadWildcards)
    );
    let range = m(&[Oxm::exact(F::VlanPcp, 8)]);
    assert_eq!(
        range.validate().unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadValue)
    );
    let mask = m(&[Oxm::masked(F::InPort, 1, 1)]);
    assert_eq!(
        mask.validate().unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadMask)
    );
}

#[test]
fn decode_rejects_bad_lengths() {
    // in_port with length 5
    let raw = Bytes::from_static(&[0, 1, 0, 13, 0x80, 0, 0, 5, 0, 0, 0, 1, 9, 0, 0, 0]);
    let mut r = Reader::new(&raw, ErrorCode::BAD_LEN);
    assert_eq!(
        Match::decode(&mut r).unwrap_err().code,
        ErrorCode::MATCH_BAD_LEN
    );
    // unknown basic field 45
    let raw = Bytes::from_static(&[0, 1, 0, 8, 0x80, 0, 45 << 1, 0]);
    let mut r = Reader::new(&raw, ErrorCode::BAD_LEN);
    assert_eq!(
        Match::decode(&mut r).unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadField)
    );
}

/// Every row of the field table agrees with itself: its value names it
/// back, its headers decode to it, its names find it, and an OXM of it
/// (exact and, where allowed, masked) round-trips through the codec.
#[test]
fn every_row_round_trips() {
    let mut rows = 0;
    for v in 0..=255u8 {
        let f = OxmField::from(v);
        let Some(r) = f.row() else { continue };
        rows += 1;
        assert_eq!(r.value, v);
        assert_eq!(u8::from(f), v);
        // (PBB_UCA is not an Open vSwitch field: no name of it is read back.)
        if f != OxmField::PbbUca {
            let name = f.nxm_name().map(|n| n.to_string());
            assert_eq!(
                name.and_then(|n| OxmField::from_nxm_name(&n)),
                f.nxm_name().map(|_| f),
                "{f:?}"
            );
        }
        if let Some(h) = f.nxm_header() {
            assert_eq!(OxmField::from_nxm_header(h), Some(f), "{f:?} {h:#x}");
        }
        if let Some(n) = r.ovs_name {
            assert_eq!(OxmField::from_ovs_name(n), Some(f), "{n}");
        }
        for a in r.aliases {
            assert_eq!(OxmField::from_ovs_name(a), Some(f), "{a}");
        }
        if r.listed != Listed::None || f == OxmField::PbbUca {
            let by_name = OxmField::from_name(r.name).unwrap();
            // `in_port` names both the OXM field and NXM_OF_IN_PORT.
            assert!(by_name == f || by_name.name() == Some(r.name), "{f:?}");
        }
        // NXM_0's fields (`NXM_OF_IN_PORT`, `NXM_OF_VLAN_TCI`) are Nicira
        // actions' only: a match never holds them.
        if r.oxm.0 == OXM_CLASS_NXM_0 {
            continue;
        }
        let masks = if r.info.maskable {
            vec![None, Some(f.full_mask())]
        } else {
            vec![None]
        };
        for mask in masks {
            let o = Oxm {
                field: f,
                value: 1 & f.full_mask(),
                mask,
            };
            let mut out = Vec::new();
            o.encode(&mut out);
            assert_eq!(out.len(), o.wire_len());
            let raw = Bytes::from(out);
            let mut rd = Reader::new(&raw, ErrorCode::BAD_LEN);
            let back = MatchEntry::decode(&mut rd, ErrorCode::BAD_LEN).unwrap();
            assert_eq!(back, MatchEntry::Basic(o), "{f:?}");
        }
    }
    assert_eq!(
        rows,
        OxmField::KNOWN.len()
            + 1
            + OxmField::NICIRA.len()
            + OxmField::CT.len()
            + OxmField::TUN_METADATA.len()
    );
}

fn decode_one(b: &[u8]) -> crate::error::Result<MatchEntry> {
    let raw = Bytes::copy_from_slice(b);
    let mut rd = Reader::new(&raw, ErrorCode::BAD_LEN);
    MatchEntry::decode(&mut rd, ErrorCode::BAD_LEN)
}

#[test]
fn tun_metadata_is_variable_length_on_the_wire() {
    let f = OxmField::TunMetadata(0);
    assert_eq!(
        OxmField::from_name("tun_metadata63"),
        Some(OxmField::TunMetadata(63))
    );
    assert_eq!(OxmField::from_nxm_name("NXM_NX_TUN_METADATA0"), Some(f));
    // NXM_NX_TUN_METADATA0 is class 0x0001 field 40; any length names it.
    assert_eq!(OxmField::from_nxm_1(40), Some(f));
    assert_eq!(OxmField::from_nxm_1(103), Some(OxmField::TunMetadata(63)));
    assert_eq!(f.nxm_header(), Some(0x0001_507c));
    assert_eq!(OxmField::from_nxm_header(0x0001_5004), Some(f));
    // What Open vSwitch's switch writes for a 4-byte option, value/mask.
    let four = decode_one(&[0, 1, 0x51, 8, 0, 0, 0, 2, 0, 0, 0xff, 0xff]).unwrap();
    assert_eq!(four, MatchEntry::Basic(Oxm::masked(f, 2, 0xffff)));
    // What sluice (and ovs-ofctl) write: the fewest bytes.
    let mut out = Vec::new();
    Oxm::masked(f, 2, 0xffff).encode(&mut out);
    assert_eq!(out, [0, 1, 0x51, 4, 0, 2, 0xff, 0xff]);
    out.clear();
    Oxm::exact(f, 0).encode(&mut out);
    assert_eq!(out, [0, 1, 0x50, 0]);
    assert_eq!(
        decode_one(&out).unwrap(),
        MatchEntry::Basic(Oxm::exact(f, 0))
    );
    // Up to 124 bytes are read; more than the 16 sluice holds only as
    // leading zeros.
    let mut long = vec![0, 1, 0x50, 124];
    long.extend([0u8; 123]);
    long.push(7);
    assert_eq!(
        decode_one(&long).unwrap(),
        MatchEntry::Basic(Oxm::exact(f, 7))
    );
    long[10] = 1;
    assert_eq!(
        decode_one(&long).unwrap_err().code,
        ErrorCode::BadMatch(BadMatchCode::BadValue)
    );
    // A masked one's halves are equal.
    assert!(decode_one(&[0, 1, 0x51, 3, 1, 2, 3]).is_err());
}

proptest::proptest! {
    #[test]
    fn tun_metadata_round_trips(n in 0u8..64, value: u128, mask: Option<u128>) {
        let f = OxmField::TunMetadata(n);
        let o = Oxm { field: f, value: value & mask.unwrap_or(u128::MAX), mask };
        let mut out = Vec::new();
        o.encode(&mut out);
        proptest::prop_assert_eq!(out.len(), o.wire_len());
        proptest::prop_assert_eq!(decode_one(&out).unwrap(), MatchEntry::Basic(o));
    }
}
