//! Nicira's extensible match, `nx_match`: the match of Open vSwitch's
//! OpenFlow 1.0 flow messages (NXT_FLOW_MOD, NXST_FLOW, NXT_FLOW_REMOVED,
//! [`crate::msg::nx_flow`]). It is a bare list of TLVs (NXM or OXM
//! headers, no `ofp_match` header), `match_len` bytes long, then zero
//! padding to 8.
//!
//! Reading ([`decode`]) is Open vSwitch's `nx_pull_match` for requests
//! (strict: a header sluice does not know is `OFPBMC_BAD_FIELD`) and
//! `nx_pull_match_loose` for replies (such entries skipped). The
//! result is the internal match in the form OpenFlow 1.3 gives the same
//! flow, so that a flow reads the same whichever version added it:
//! * `NXM_OF_IN_PORT` (16 bits) is `in_port` (32 bits, 0xff00 and up the
//!   reserved ports);
//! * `NXM_OF_IP_TOS` (the DSCP bits of the TOS byte, not maskable; ECN
//!   bits set are `OFPBMC_BAD_VALUE`, as Open vSwitch's `mf_is_value_valid`)
//!   is `ip_dscp`;
//! * `NXM_OF_VLAN_TCI` is `vlan_vid` (CFI as `OFPVID_PRESENT`) and, when
//!   the PCP bits are matched whole on a tagged packet, `vlan_pcp`; a TCI
//!   those cannot say exactly (`vlan_tci=0`: no tag, all 16 bits; a part
//!   of the PCP) stays `NXM_OF_VLAN_TCI`, which the pipeline matches as it
//!   is, so that it is written back as it came;
//! * `NXM_NX_COOKIE` / `_W` is no field but the cookie and its mask
//!   ([`NxMatch::cookie`]); twice is `OFPBMC_DUP_FIELD`.
//!
//! Writing ([`encode`]) does the reverse, each field under the header
//! Open vSwitch writes in NXM (`nx_put_raw` with `oxm` 0): its NXM header
//! where it has one, else its OXM one (`OXM_OF_METADATA`,
//! `OXM_OF_MPLS_LABEL`, ...); `vlan_vid` and `vlan_pcp` together as one
//! `NXM_OF_VLAN_TCI`. The cookie goes first when its mask is not zero.
//! The order of the other fields is the match's (a prerequisite before
//! the field that needs it, as Open vSwitch's reader wants).
//!
//! Meaning (prerequisites, masks, values) is checked by
//! [`Match::validate`] afterwards, as for any match.

use bytes::BufMut;

use super::{Match, MatchEntry, Oxm, OxmField, OXM_CLASS_NXM_0, OXM_CLASS_NXM_1};
use crate::error::{BadMatchCode, ErrorCode, OfpError, Result};
use crate::resubmit::{port_to_u16, Resubmit};
use crate::wire::{pad8, zeros, Reader};

/// `NXM_NX_COOKIE`'s header without its hasmask bit and length (class
/// 1, field 30).
const COOKIE: u32 = (OXM_CLASS_NXM_1 as u32) << 16 | 30 << 9;
/// `NXM_OF_IP_TOS`'s header without its hasmask bit and length (class
/// 0, field 5).
const IP_TOS: u32 = (OXM_CLASS_NXM_0 as u32) << 16 | 5 << 9;
/// `NXM_OF_VLAN_TCI`'s, and `NXM_OF_IN_PORT`'s.
const VLAN_TCI: u32 = (OXM_CLASS_NXM_0 as u32) << 16 | 4 << 9;
const IN_PORT: u32 = (OXM_CLASS_NXM_0 as u32) << 16;

/// A decoded `nx_match`: the match and the cookie it asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NxMatch {
    pub match_: Match,
    /// `NXM_NX_COOKIE`'s value (masked), 0 without one.
    pub cookie: u64,
    /// Its mask: 0 without one, all ones for the exact form.
    pub cookie_mask: u64,
}

/// How strictly [`decode`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// A request: an unknown header is `OFPBMC_BAD_FIELD`.
    Strict,
    /// A reply: unknown headers are skipped.
    Loose,
}

fn bad(code: BadMatchCode, why: &'static str) -> OfpError {
    OfpError::new(ErrorCode::BadMatch(code), why)
}

/// Reads `match_len` bytes of `nx_match` and the zero padding after
/// them (module doc).
pub fn decode(r: &mut Reader<'_>, match_len: usize, how: Strictness) -> Result<NxMatch> {
    let mut body = r
        .sub(match_len, ErrorCode::MATCH_BAD_LEN)
        .map_err(|_| OfpError::new(ErrorCode::BAD_LEN, "nx_match longer than the message"))?;
    r.skip(pad8(match_len) - match_len)
        .map_err(|_| OfpError::new(ErrorCode::BAD_LEN, "nx_match padding missing"))?;
    let mut out = NxMatch::default();
    let mut seen_cookie = false;
    while !body.is_empty() {
        let h = (body.peek_u16(0)? as u32) << 16 | body.peek_u16(2)? as u32;
        let (masked, len) = (h & 0x100 != 0, (h & 0xff) as usize);
        match h & !0x1ff {
            COOKIE => {
                body.skip(4)?;
                if len != 8 << masked as usize {
                    return Err(bad(BadMatchCode::BadLen, "NXM_NX_COOKIE of another length"));
                }
                let v = body.u64()?;
                let m = if masked { body.u64()? } else { u64::MAX };
                if seen_cookie {
                    return Err(bad(BadMatchCode::DupField, "NXM_NX_COOKIE twice"));
                }
                seen_cookie = true;
                (out.cookie, out.cookie_mask) = (v & m, m);
            }
            IP_TOS => {
                body.skip(4)?;
                if masked {
                    return Err(bad(BadMatchCode::BadMask, "NXM_OF_IP_TOS cannot be masked"));
                }
                if len != 1 {
                    return Err(bad(BadMatchCode::BadLen, "NXM_OF_IP_TOS of another length"));
                }
                let v = body.u8()?;
                if v & 3 != 0 {
                    return Err(bad(BadMatchCode::BadValue, "NXM_OF_IP_TOS with ECN bits"));
                }
                let o = Oxm::exact(OxmField::IpDscp, (v >> 2) as u128);
                out.match_.entries.push(MatchEntry::Basic(o));
            }
            _ => match MatchEntry::decode(&mut body, ErrorCode::MATCH_BAD_LEN)? {
                MatchEntry::Basic(o) => push_normal(&mut out.match_, o),
                MatchEntry::Other(_) if how == Strictness::Loose => {}
                MatchEntry::Other(_) => {
                    return Err(bad(
                        BadMatchCode::BadField,
                        "NXM field sluice does not know",
                    ))
                }
            },
        }
    }
    Ok(out)
}

/// Appends `o` in the form OpenFlow 1.3 gives it (module doc).
fn push_normal(m: &mut Match, o: Oxm) {
    let v = match o.field {
        OxmField::NxmInPort => {
            let p = Resubmit::port_from_u16(o.value as u16) as u128;
            vec![Oxm::exact(OxmField::InPort, p)]
        }
        OxmField::VlanTci => {
            let mask = o.mask.map_or(0xffff, |m| m as u16);
            tci_to_oxm(o.value as u16, mask).unwrap_or_else(|| vec![o])
        }
        _ => vec![o],
    };
    m.entries.extend(v.into_iter().map(MatchEntry::Basic));
}

/// `vlan_vid` (and `vlan_pcp`) saying exactly what TCI `v`/`m` says, or
/// None when they cannot.
fn tci_to_oxm(v: u16, m: u16) -> Option<Vec<Oxm>> {
    let (vid, vid_mask, pcp_mask) = (v & 0x1fff, m & 0x1fff, m >> 13);
    let mut out = Vec::new();
    if vid_mask == 0x1fff {
        out.push(Oxm::exact(OxmField::VlanVid, vid as u128));
    } else if vid_mask != 0 {
        out.push(Oxm::masked(
            OxmField::VlanVid,
            vid as u128,
            vid_mask as u128,
        ));
    }
    if pcp_mask != 0 {
        // OpenFlow's PCP is all three bits, on a packet with a tag.
        if pcp_mask != 7 || vid & vid_mask & 0x1000 == 0 {
            return None;
        }
        out.push(Oxm::exact(OxmField::VlanPcp, (v >> 13) as u128));
    }
    Some(out)
}

/// Appends `m` (and the cookie when `cookie_mask` is not 0) as
/// `nx_match`, then zero padding to 8. Returns `match_len` (without the
/// padding).
pub fn encode(m: &Match, cookie: u64, cookie_mask: u64, out: &mut Vec<u8>) -> usize {
    let start = out.len();
    if cookie_mask != 0 {
        if cookie_mask == u64::MAX {
            out.put_u32(COOKIE | 8);
            out.put_u64(cookie);
        } else {
            out.put_u32(COOKIE | 0x100 | 16);
            out.put_u64(cookie & cookie_mask);
            out.put_u64(cookie_mask);
        }
    }
    let pcp = m.get(OxmField::VlanPcp).map(|o| o.value as u16);
    for e in &m.entries {
        let MatchEntry::Basic(o) = e else {
            // Other classes have no NXM form; a stored match holds none.
            continue;
        };
        match o.field {
            OxmField::InPort => {
                out.put_u32(IN_PORT | 2);
                out.put_u16(port_to_u16(o.value as u32));
            }
            OxmField::IpDscp => {
                out.put_u32(IP_TOS | 1);
                out.put_u8((o.value as u8) << 2);
            }
            OxmField::VlanVid => {
                let (mut v, mut mask) = (o.value as u16, o.effective_mask() as u16 & 0x1fff);
                if let Some(p) = pcp {
                    (v, mask) = (v | p << 13, mask | 0xe000);
                }
                put_tlv(
                    out,
                    VLAN_TCI,
                    2,
                    v as u128,
                    (mask != 0xffff).then_some(mask as u128),
                );
            }
            OxmField::VlanPcp => {}
            _ => put_field(out, o),
        }
    }
    let len = out.len() - start;
    zeros(out, pad8(len) - len);
    len
}

/// The NXM form of one field: its NXM header where it has one, else its
/// OXM one.
fn put_field(out: &mut Vec<u8>, o: &Oxm) {
    match o.field.row().and_then(|r| r.nxm) {
        Some((class, field, _)) => {
            let base = (class as u32) << 16 | (field as u32) << 9;
            put_tlv(out, base, o.wire_width(), o.value, o.mask);
        }
        None => o.encode(out),
    }
}

fn put_tlv(out: &mut Vec<u8>, base: u32, width: usize, value: u128, mask: Option<u128>) {
    let masked = mask.is_some();
    out.put_u32(base | (masked as u32) << 8 | (width << masked as usize) as u32);
    out.extend_from_slice(&value.to_be_bytes()[16 - width..]);
    if let Some(m) = mask {
        out.extend_from_slice(&m.to_be_bytes()[16 - width..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    /// Reads `b` as a whole nx_match (padded here).
    fn read(b: &[u8], how: Strictness) -> Result<NxMatch> {
        let mut v = b.to_vec();
        v.resize(pad8(b.len()), 0);
        let v = Bytes::from(v);
        let mut r = Reader::new(&v, ErrorCode::BAD_LEN);
        decode(&mut r, b.len(), how)
    }

    fn round(m: &Match, cookie: u64, mask: u64) -> NxMatch {
        let mut v = Vec::new();
        let len = encode(m, cookie, mask, &mut v);
        let b = Bytes::from(v);
        let mut r = Reader::new(&b, ErrorCode::BAD_LEN);
        let got = decode(&mut r, len, Strictness::Strict).unwrap();
        assert!(r.is_empty());
        got
    }

    /// The bytes ovs-ofctl 3.1 sends for
    /// `add-flow br0 in_port=1,dl_vlan=5,ip,nw_tos=16,reg0=1,ct_state=+trk,actions=drop`
    /// (its NXT_FLOW_MOD's nx_match, captured with -vvconn): in_port,
    /// vlan_tci, eth_type, ip_tos, reg0, ct_state.
    #[test]
    fn reads_what_ovs_ofctl_sends() {
        let b = [
            0x00, 0x00, 0x00, 0x02, 0x00, 0x01, // NXM_OF_IN_PORT 1
            0x00, 0x00, 0x09, 0x04, 0x10, 0x05, 0x1f, 0xff, // VLAN_TCI_W 0x1005/0x1fff
            0x00, 0x00, 0x06, 0x02, 0x08, 0x00, // ETH_TYPE 0x800
            0x00, 0x00, 0x0a, 0x01, 0x10, // IP_TOS 0x10
            0x00, 0x01, 0x00, 0x04, 0x00, 0x00, 0x00, 0x01, // REG0 1
            0x00, 0x01, 0xd3, 0x08, 0, 0, 0, 0x20, 0, 0, 0, 0x20, // CT_STATE_W +trk
        ];
        let m = read(&b, Strictness::Strict).unwrap();
        let want = Match::new()
            .with(Oxm::exact(OxmField::InPort, 1))
            .with(Oxm::exact(OxmField::VlanVid, 0x1005))
            .with(Oxm::exact(OxmField::EthType, 0x800))
            .with(Oxm::exact(OxmField::IpDscp, 4))
            .with(Oxm::exact(OxmField::Reg(0), 1))
            .with(Oxm::masked(OxmField::CtState, 0x20, 0x20));
        assert_eq!(m.match_, want);
        m.match_.validate().unwrap();
        let mut v = Vec::new();
        let len = encode(&m.match_, 0, 0, &mut v);
        assert_eq!(&v[..len], &b[..]);
    }

    #[test]
    fn a_tci_the_oxm_fields_cannot_say_stays() {
        // vlan_tci=0: no tag, all 16 bits.
        let m = read(&[0, 0, 8, 2, 0, 0], Strictness::Strict).unwrap();
        assert_eq!(
            m.match_,
            Match::new().with(Oxm::exact(OxmField::VlanTci, 0))
        );
        assert_eq!(round(&m.match_, 0, 0).match_, m.match_);
        // dl_vlan_pcp=3 alone: any tag, PCP 3.
        let m = read(&[0, 0, 9, 4, 0x70, 0, 0xf0, 0], Strictness::Strict).unwrap();
        let want = Match::new()
            .with(Oxm::masked(OxmField::VlanVid, 0x1000, 0x1000))
            .with(Oxm::exact(OxmField::VlanPcp, 3));
        assert_eq!(m.match_, want);
        let mut v = Vec::new();
        encode(&want, 0, 0, &mut v);
        assert_eq!(&v[..8], &[0, 0, 9, 4, 0x70, 0, 0xf0, 0]);
    }

    #[test]
    fn cookies_and_refusals() {
        let m = round(&Match::new(), 0x1234, 0xffff);
        assert_eq!((m.cookie, m.cookie_mask), (0x1234, 0xffff));
        let m = round(&Match::new(), 7, u64::MAX);
        assert_eq!((m.cookie, m.cookie_mask), (7, u64::MAX));
        let code = |b: &[u8]| read(b, Strictness::Strict).unwrap_err().code;
        // ECN bits in NXM_OF_IP_TOS.
        assert_eq!(
            code(&[0, 0, 0x0a, 1, 0x11]),
            ErrorCode::BadMatch(BadMatchCode::BadValue)
        );
        // An NXM field sluice lacks (NXM_NX_DP_HASH, class 1 field 35).
        let dp_hash = [0, 1, 0x46, 4, 0, 0, 0, 1];
        assert_eq!(code(&dp_hash), ErrorCode::BadMatch(BadMatchCode::BadField));
        assert_eq!(
            read(&dp_hash, Strictness::Loose).unwrap().match_,
            Match::new()
        );
        // Two cookies.
        let two = [[0, 1, 0x3c, 8, 0, 0, 0, 0, 0, 0, 0, 1]; 2].concat();
        assert_eq!(code(&two), ErrorCode::BadMatch(BadMatchCode::DupField));
    }

    /// Every field under its NXM (or OXM) header reads back as it was.
    #[test]
    fn fields_round_trip() {
        let m = Match::new()
            .with(Oxm::exact(OxmField::InPort, 0xffff_fffe))
            .with(Oxm::masked(
                OxmField::EthDst,
                0x0100_0000_0000,
                0x0100_0000_0000,
            ))
            .with(Oxm::exact(OxmField::EthType, 0x86dd))
            .with(Oxm::masked(OxmField::Ipv6Src, 1 << 120, 0xff << 120))
            .with(Oxm::exact(OxmField::TunnelId, 0x15))
            .with(Oxm::masked(OxmField::Metadata, 1, 1))
            .with(Oxm::exact(OxmField::TunIpv4Dst, 0x0a0a_0a0a))
            .with(Oxm::exact(OxmField::CtZone, 3))
            .with(Oxm::masked(OxmField::CtMark, 1, 1))
            .with(Oxm::exact(OxmField::PktMark, 9));
        m.validate().unwrap();
        assert_eq!(round(&m, 0, 0).match_, m);
    }
}
