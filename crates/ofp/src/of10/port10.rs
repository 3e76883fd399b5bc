//! OpenFlow 1.0 ports: 16-bit port numbers, `ofp_phy_port` (48 bytes),
//! the 12-bit feature bitmaps, and PORT_MOD / PORT_STATUS.
//!
//! Contract:
//! * Port numbers: a 1.0 number below `OFPP_MAX` (0xff00) is the same
//!   number internally; 0xff00..=0xffff (the reserved ports, `OFPP_NONE`
//!   0xffff among them) are 0xffffff00..=0xffffffff, so `OFPP_NONE` is
//!   `OFPP_ANY`. This is Open vSwitch's `ofputil_port_to_ofp11` /
//!   `ofputil_port_from_ofp11` (lib/ofp-port.c) read the other way. An
//!   internal number with no 16-bit form (0xff00..0xffffff00) is written
//!   as `OFPP_NONE`; Open vSwitch's ports are 16-bit, so it never has one.
//! * Features: 1.0's bits 0-6 (speeds up to 10 Gb/s) are 1.3's bits 0-6;
//!   1.0's bits 7-11 (copper, fibre, autoneg, pause, asymmetric pause) are
//!   1.3's bits 11-15, as Open vSwitch's `netdev_port_features_from_ofp10`
//!   / `_to_ofp10`. 1.3's 40 Gb, 100 Gb, 1 Tb and "other" have no 1.0 bit
//!   and are dropped when writing 1.0.
//! * Config and state: 1.0's config bits (`OFPPC10_ALL`, 0x7f: port down,
//!   no STP, no receive, no receive STP, no flood, no forward, no
//!   packet-in) are kept as they are in the internal `u32` (1.3 names
//!   bits 0, 2, 5 and 6 alike and leaves 1, 3 and 4 unassigned), and so are
//!   1.0's state bits (`OFPPS10_ALL`: link down and the two STP bits 8-9).
//!   Writing 1.0 keeps only `OFPPC10_ALL` / `OFPPS10_ALL`, as Open
//!   vSwitch's `ofputil_encode_ofp10_phy_port` does: 1.3's `BLOCKED` and
//!   `LIVE` state bits have no 1.0 form.
//! * Speeds: 1.0 has no `curr_speed` / `max_speed`; reading 1.0 derives
//!   them (kb/s) from the fastest speed bit of `curr` and `supported`, as
//!   Open vSwitch's `ofputil_decode_ofp10_phy_port` does
//!   (`netdev_features_to_bps`).

use bytes::BufMut;

use crate::error::Result;
use crate::msg::simple::{PortMod, PortReason, PortStatus};
use crate::port::{port_features as pf, PortDesc};
use crate::wire::{zeros, FixedStr, Reader};

/// `OFPP_MAX` of OpenFlow 1.0: the first reserved 16-bit number.
pub const OFPP10_MAX: u16 = 0xff00;
/// `OFPP_IN_PORT` of OpenFlow 1.0.
pub const OFPP10_IN_PORT: u16 = 0xfff8;
/// `OFPP_ALL` of OpenFlow 1.0.
pub const OFPP10_ALL: u16 = 0xfffc;
/// `OFPP_CONTROLLER` of OpenFlow 1.0.
pub const OFPP10_CONTROLLER: u16 = 0xfffd;
/// `OFPP_NONE` of OpenFlow 1.0 (1.3's `OFPP_ANY`).
pub const OFPP10_NONE: u16 = 0xffff;
/// Internal (32-bit) number minus 1.0 number, for the reserved ports.
const OFFSET: u32 = 0xffff_0000;

/// `OFPPC10_ALL`: every port config bit 1.0 defines.
pub const OFPPC10_ALL: u32 = 0x7f;
/// `OFPPS10_ALL`: link down and the STP state bits.
pub const OFPPS10_ALL: u32 = 0x301;

/// A 1.0 port number as the internal (1.3) one.
pub fn port_from_10(p: u16) -> u32 {
    if p >= OFPP10_MAX {
        u32::from(p) + OFFSET
    } else {
        u32::from(p)
    }
}

/// An internal port number as 1.0 writes it (`OFPP_NONE` when it has no
/// 16-bit form).
pub fn port_to_10(p: u32) -> u16 {
    if p < u32::from(OFPP10_MAX) {
        p as u16
    } else if p >= OFFSET + u32::from(OFPP10_MAX) {
        (p - OFFSET) as u16
    } else {
        OFPP10_NONE
    }
}

/// Whether an internal port number has a 16-bit form.
pub fn port_fits_10(p: u32) -> bool {
    p < u32::from(OFPP10_MAX) || p >= OFFSET + u32::from(OFPP10_MAX)
}

/// 1.0 port features as 1.3's.
pub fn features_from_10(f: u32) -> u32 {
    (f & 0x7f) | ((f & 0xf80) << 4)
}

/// 1.3 port features as 1.0's (40G, 100G, 1T and OTHER dropped).
pub fn features_to_10(f: u32) -> u32 {
    (f & 0x7f) | ((f >> 4) & 0xf80)
}

/// The fastest speed a (1.3) feature bitmap names, in kb/s (0: none).
fn speed_kbps(f: u32) -> u32 {
    const SPEEDS: [(u32, u32); 10] = [
        (pf::F_1TB_FD, 1_000_000_000),
        (pf::F_100GB_FD, 100_000_000),
        (pf::F_40GB_FD, 40_000_000),
        (pf::F_10GB_FD, 10_000_000),
        (pf::F_1GB_FD, 1_000_000),
        (pf::F_1GB_HD, 1_000_000),
        (pf::F_100MB_FD, 100_000),
        (pf::F_100MB_HD, 100_000),
        (pf::F_10MB_FD, 10_000),
        (pf::F_10MB_HD, 10_000),
    ];
    SPEEDS
        .iter()
        .find(|(bit, _)| f & bit != 0)
        .map_or(0, |(_, s)| *s)
}

/// Size of `ofp_phy_port`.
pub const PHY_PORT_LEN: usize = 48;

/// Appends `ofp_phy_port`.
pub fn encode_phy_port(p: &PortDesc, out: &mut Vec<u8>) {
    out.put_u16(port_to_10(p.port_no));
    out.extend_from_slice(&p.hw_addr);
    out.extend_from_slice(&p.name.0);
    out.put_u32(p.config & OFPPC10_ALL);
    out.put_u32(p.state & OFPPS10_ALL);
    for f in [p.curr, p.advertised, p.supported, p.peer] {
        out.put_u32(features_to_10(f));
    }
}

/// Reads `ofp_phy_port`.
pub fn decode_phy_port(r: &mut Reader<'_>) -> Result<PortDesc> {
    let port_no = port_from_10(r.u16()?);
    let hw_addr = r.array()?;
    let name = FixedStr(r.array()?);
    let config = r.u32()? & OFPPC10_ALL;
    let state = r.u32()? & OFPPS10_ALL;
    let curr = features_from_10(r.u32()?);
    let advertised = features_from_10(r.u32()?);
    let supported = features_from_10(r.u32()?);
    let peer = features_from_10(r.u32()?);
    Ok(PortDesc {
        port_no,
        hw_addr,
        name,
        config,
        state,
        curr,
        advertised,
        supported,
        peer,
        curr_speed: speed_kbps(curr),
        max_speed: speed_kbps(supported),
    })
}

/// The port as reading it back from 1.0 gives it: what 1.0 cannot carry
/// dropped, the speeds derived.
pub fn as_seen_by_10(p: &PortDesc) -> PortDesc {
    let mut b = Vec::with_capacity(PHY_PORT_LEN);
    encode_phy_port(p, &mut b);
    let b = bytes::Bytes::from(b);
    let mut r = Reader::new(&b, crate::ErrorCode::BAD_LEN);
    decode_phy_port(&mut r).unwrap_or_default()
}

/// Appends the OFPT_PORT_STATUS body (reason, 7 pad, phy_port).
pub fn encode_port_status(p: &PortStatus, out: &mut Vec<u8>) {
    out.put_u8(p.reason.value());
    zeros(out, 7);
    encode_phy_port(&p.desc, out);
}

/// Reads the OFPT_PORT_STATUS body.
pub fn decode_port_status(r: &mut Reader<'_>) -> Result<PortStatus> {
    let reason = PortReason::from(r.u8()?);
    r.skip(7)?;
    Ok(PortStatus {
        reason,
        desc: decode_phy_port(r)?,
    })
}

/// Appends the OFPT_PORT_MOD body (24 bytes).
pub fn encode_port_mod(m: &PortMod, out: &mut Vec<u8>) {
    out.put_u16(port_to_10(m.port_no));
    out.extend_from_slice(&m.hw_addr);
    out.put_u32(m.config & OFPPC10_ALL);
    out.put_u32(m.mask & OFPPC10_ALL);
    out.put_u32(features_to_10(m.advertise));
    zeros(out, 4);
}

/// Reads the OFPT_PORT_MOD body: config and mask keep 1.0's bits
/// (`OFPPC10_ALL`), as Open vSwitch's `ofputil_decode_ofp10_port_mod`.
pub fn decode_port_mod(r: &mut Reader<'_>) -> Result<PortMod> {
    let port_no = port_from_10(r.u16()?);
    let hw_addr = r.array()?;
    let config = r.u32()? & OFPPC10_ALL;
    let mask = r.u32()? & OFPPC10_ALL;
    let advertise = features_from_10(r.u32()?);
    r.skip(4)?;
    Ok(PortMod {
        port_no,
        hw_addr,
        config,
        mask,
        advertise,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::port::port_no;

    #[test]
    fn port_numbers_map_reserved_ranges() {
        assert_eq!(port_from_10(1), 1);
        assert_eq!(port_from_10(0xfeff), 0xfeff);
        assert_eq!(port_from_10(0xff00), port_no::MAX);
        assert_eq!(port_from_10(0xfff8), port_no::IN_PORT);
        assert_eq!(port_from_10(0xfffd), port_no::CONTROLLER);
        assert_eq!(port_from_10(0xfffe), port_no::LOCAL);
        assert_eq!(port_from_10(0xffff), port_no::ANY);
        assert_eq!(port_to_10(port_no::ANY), 0xffff);
        assert_eq!(port_to_10(port_no::NORMAL), 0xfffa);
        assert_eq!(port_to_10(7), 7);
        // No 16-bit form.
        assert_eq!(port_to_10(0x1_0000), OFPP10_NONE);
        assert!(!port_fits_10(0x1_0000));
        for p in [0u16, 1, 0xfeff, 0xff00, 0xfff8, 0xffff] {
            assert_eq!(port_to_10(port_from_10(p)), p);
        }
    }

    #[test]
    fn feature_bits_move_between_layouts() {
        // 1.0: 1GB_FD (bit 5), COPPER (bit 7), AUTONEG (bit 9), PAUSE_ASYM (bit 11).
        let f10 = (1 << 5) | (1 << 7) | (1 << 9) | (1 << 11);
        let f13 = features_from_10(f10);
        assert_eq!(
            f13,
            pf::F_1GB_FD | pf::COPPER | pf::AUTONEG | pf::PAUSE_ASYM
        );
        assert_eq!(features_to_10(f13), f10);
        // 40G, 100G, 1T and OTHER have no 1.0 bit.
        assert_eq!(
            features_to_10(pf::F_40GB_FD | pf::F_100GB_FD | pf::F_1TB_FD | pf::OTHER),
            0
        );
    }

    /// An `ofp_phy_port` laid out by hand from the 1.0.0 spec (§5.2.1).
    #[test]
    fn phy_port_golden_bytes() {
        let mut golden = vec![0x00, 0x03, 2, 0, 0, 0, 0, 9];
        let mut name = [0u8; 16];
        name[..4].copy_from_slice(b"eth3");
        golden.extend_from_slice(&name);
        golden.extend_from_slice(&[0, 0, 0, 0x11]); // config: PORT_DOWN | NO_FLOOD
        golden.extend_from_slice(&[0, 0, 0x02, 0x01]); // state: LINK_DOWN | STP_FORWARD
        golden.extend_from_slice(&[0, 0, 0x02, 0xa0]); // curr: 1GB_FD COPPER AUTONEG
        golden.extend_from_slice(&[0, 0, 0x0f, 0xff]); // advertised: all
        golden.extend_from_slice(&[0, 0, 0, 0x40]); // supported: 10GB_FD
        golden.extend_from_slice(&[0, 0, 0, 0]); // peer
        assert_eq!(golden.len(), PHY_PORT_LEN);
        let b = bytes::Bytes::from(golden.clone());
        let mut r = Reader::new(&b, crate::ErrorCode::BAD_LEN);
        let p = decode_phy_port(&mut r).unwrap();
        assert_eq!(p.port_no, 3);
        assert_eq!(p.name.as_str(), "eth3");
        assert_eq!(p.config, 0x11);
        assert_eq!(p.state, 0x201);
        assert_eq!(p.curr, pf::F_1GB_FD | pf::COPPER | pf::AUTONEG);
        assert_eq!(p.curr_speed, 1_000_000);
        assert_eq!(p.max_speed, 10_000_000);
        let mut out = Vec::new();
        encode_phy_port(&p, &mut out);
        assert_eq!(out, golden);
    }
}
