//! OXM match fields (spec 7.2.3): the 40 basic fields of OpenFlow 1.3,
//! PBB_UCA of 1.4, and Open vSwitch's extension fields (tunnel addresses,
//! registers, `pkt_mark`, `ip_frag`, `tcp_flags`, `conj_id`, connection
//! tracking), [`Oxm`] (one such field with optional mask), passthrough of
//! other OXM classes (experimenter, other NXM fields), and [`Match`]
//! (`ofp_match`, type OXM). The NXM and OXM headers Nicira actions
//! (reg_load, reg_move) name fields by are mapped here too
//! ([`OxmField::nxm_header`]).
//!
//! Values are held as `u128` big-endian numbers in the field's width: one
//! uniform, `Copy` representation for a 1-bit `mpls_bos` and a 128-bit IPv6
//! address alike, so coding, validation and printing are table driven.
//!
//! The rooms: `fields.rs` is the field table, one row per field
//! ([`FieldRow`]: ids, width, mask, prerequisites, writability, names),
//! and `lookups.rs` every per-field fact and lookup read from it; `entry.rs` one
//! field on the wire ([`Oxm`], [`MatchEntry`]); `matching.rs` the match
//! and its validation. Decoding checks only structure (header lengths);
//! [`Match::validate`] checks meaning, each error with the code the spec
//! names.

mod entry;
mod fields;
mod lookups;
mod matching;
pub mod nxm;
#[cfg(test)]
mod tests;

pub use entry::{MatchEntry, OtherOxm, Oxm};
pub use fields::{FieldInfo, FieldRow, Listed, OxmField, ValueKind, TUN_METADATA_MAX_LEN};
pub use lookups::NxmName;
pub use matching::{Match, OFPMT_OXM};

/// `OFPXMC_OPENFLOW_BASIC`.
pub const OXM_CLASS_BASIC: u16 = 0x8000;
/// `OFPXMC_EXPERIMENTER`.
pub const OXM_CLASS_EXPERIMENTER: u16 = 0xffff;
/// `OFPVID_PRESENT`: the VLAN_VID bit meaning "a VLAN tag is present".
pub const OFPVID_PRESENT: u16 = 0x1000;
/// `OFPVID_NONE`: VLAN_VID value meaning "no VLAN tag".
pub const OFPVID_NONE: u16 = 0x0000;
/// `NXM_1`: the OXM class of Nicira's extension fields.
pub const OXM_CLASS_NXM_1: u16 = 0x0001;
/// `NXM_0`: the OXM class of the Nicira names of the OpenFlow 1.0 fields.
pub const OXM_CLASS_NXM_0: u16 = 0x0000;
/// `OFPXMC_PACKET_REGS`: the OXM class of OpenFlow 1.5's packet registers.
pub const OXM_CLASS_PACKET_REGS: u16 = 0x8001;
/// ONF's experimenter id, for its experimenter OXMs (`tcp_flags`).
pub const ONF_EXPERIMENTER: u32 = 0x4f4e_4600;
/// ONF's experimenter OXM field number for TCP flags.
const ONF_TCP_FLAGS: u8 = 42;

/// Number of slots [`OxmField::index`] hands out.
pub const FIELD_SLOTS: usize = 156;
