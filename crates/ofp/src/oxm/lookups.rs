//! What is read from the field table ([`super::fields`]): the lists a
//! switch advertises, the per-field facts, and every lookup by value,
//! header or name. The lookups decoding uses on every field go through
//! tables built from the rows at compile time (one load each).

use super::fields::{FieldInfo, Listed};
use super::{
    OxmField, OXM_CLASS_BASIC, OXM_CLASS_EXPERIMENTER, OXM_CLASS_NXM_0, OXM_CLASS_NXM_1,
    OXM_CLASS_PACKET_REGS,
};

/// Every field that has a row, in value order: what the tables below and
/// the lists a switch advertises are built from.
const fn field_at(i: usize) -> Option<OxmField> {
    let f = OxmField::from_value(i as u8);
    match f.row() {
        Some(_) => Some(f),
        None => None,
    }
}

/// How many fields a list holds.
const fn count_listed(l: Listed) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < 256 {
        if let Some(f) = field_at(i) {
            if same_list(f, l) {
                n += 1;
            }
        }
        i += 1;
    }
    n
}

const fn same_list(f: OxmField, l: Listed) -> bool {
    match f.row() {
        Some(r) => r.listed as u8 == l as u8,
        None => false,
    }
}

/// A list's fields, in value order.
const fn listed<const N: usize>(l: Listed) -> [OxmField; N] {
    let mut out = [OxmField::Unknown(0); N];
    let (mut n, mut i) = (0, 0);
    while i < 256 {
        if let Some(f) = field_at(i) {
            if same_list(f, l) {
                out[n] = f;
                n += 1;
            }
        }
        i += 1;
    }
    out
}

const N_BASIC: usize = count_listed(Listed::Basic);
const N_NICIRA: usize = count_listed(Listed::Nicira);
const N_CT: usize = count_listed(Listed::Ct);
const N_TUN_METADATA: usize = count_listed(Listed::TunMetadata);
const BASIC_LIST: [OxmField; N_BASIC] = listed(Listed::Basic);
const NICIRA_LIST: [OxmField; N_NICIRA] = listed(Listed::Nicira);
const CT_LIST: [OxmField; N_CT] = listed(Listed::Ct);
const TUN_METADATA_LIST: [OxmField; N_TUN_METADATA] = listed(Listed::TunMetadata);

/// The Nicira-style classes a header table covers: NXM_0, NXM_1 and
/// OpenFlow 1.5's packet registers.
const fn class_slot(class: u16) -> Option<usize> {
    match class {
        OXM_CLASS_NXM_0 => Some(0),
        OXM_CLASS_NXM_1 => Some(1),
        OXM_CLASS_PACKET_REGS => Some(2),
        _ => None,
    }
}

type HeaderTable = [[Option<OxmField>; 128]; 3];

/// By (class, field number): the field a match or set_field header of
/// those classes names (its `oxm` or `oxm_alias`), or, with `legacy`, the
/// field a Nicira action's NXM header names (its `nxm`).
const fn header_table(legacy: bool) -> HeaderTable {
    let mut t: HeaderTable = [[None; 128]; 3];
    let mut i = 0;
    while i < 256 {
        if let Some(f) = field_at(i) {
            if let Some(r) = f.row() {
                let mut names = [None; 2];
                if legacy {
                    if let Some((c, n, _)) = r.nxm {
                        names[0] = Some((c, n));
                    }
                } else {
                    names[0] = Some(r.oxm);
                    names[1] = r.oxm_alias;
                }
                let mut k = 0;
                while k < 2 {
                    if let Some((c, n)) = names[k] {
                        if let Some(s) = class_slot(c) {
                            if n < 128 && t[s][n as usize].is_none() {
                                t[s][n as usize] = Some(f);
                            }
                        }
                    }
                    k += 1;
                }
            }
        }
        i += 1;
    }
    t
}

/// Names a row gives besides [`OxmField::name`]: ovs-ofctl's own
/// (`ovs_name`, `aliases`) or, with `legacy`, the NXM header's name.
/// Counted (`out` None) or written.
const fn other_names(legacy: bool, mut out: Option<&mut [(&'static str, OxmField)]>) -> usize {
    let (mut n, mut i) = (0, 0);
    while i < 256 {
        if let Some(f) = field_at(i) {
            if let Some(r) = f.row() {
                let mut names: [Option<&'static str>; 4] = [None; 4];
                if legacy {
                    if let Some((_, _, name)) = r.nxm {
                        names[0] = Some(name);
                    }
                } else {
                    names[0] = r.ovs_name;
                    let mut k = 0;
                    while k < r.aliases.len() && k < 3 {
                        names[k + 1] = Some(r.aliases[k]);
                        k += 1;
                    }
                }
                let mut k = 0;
                while k < 4 {
                    if let Some(name) = names[k] {
                        if let Some(o) = &mut out {
                            o[n] = (name, f);
                        }
                        n += 1;
                    }
                    k += 1;
                }
            }
        }
        i += 1;
    }
    n
}

const fn names_of<const N: usize>(legacy: bool) -> [(&'static str, OxmField); N] {
    let mut out = [("", OxmField::Unknown(0)); N];
    other_names(legacy, Some(&mut out));
    out
}

const N_OVS_NAMES: usize = other_names(false, None);
const N_NXM_NAMES: usize = other_names(true, None);
/// ovs-ofctl's own names of fields, each with its field.
const OVS_NAMES: [(&str, OxmField); N_OVS_NAMES] = names_of(false);
/// The legacy NXM headers' names, each with its field.
const NXM_NAMES: [(&str, OxmField); N_NXM_NAMES] = names_of(true);

const BY_OXM_HEADER: HeaderTable = header_table(false);
const BY_NXM_HEADER: HeaderTable = header_table(true);

const fn header_lookup(t: &HeaderTable, class: u16, field: u8) -> Option<OxmField> {
    match class_slot(class) {
        Some(s) if field < 128 => t[s][field as usize],
        _ => None,
    }
}

impl OxmField {
    /// The 40 OpenFlow basic fields, in field-number order: what an
    /// `OFPXMC_OPENFLOW_BASIC` header can name (table features list these).
    pub const KNOWN: &'static [OxmField] = &BASIC_LIST;

    /// The extension fields sluice knows beyond the basic ones (Nicira's,
    /// and the packet registers).
    pub const NICIRA: &'static [OxmField] = &NICIRA_LIST;

    /// Open vSwitch's connection-tracking fields (class `NXM_1`, fields
    /// 105-108 and 119-125), in ovs-ofctl's print order. Kept apart from
    /// [`OxmField::NICIRA`]: a switch advertises them (TABLE_FEATURES) only
    /// once its pipeline tracks connections.
    pub const CT: &'static [OxmField] = &CT_LIST;

    /// `tun_metadata0`-`63`, in index order. Advertised in no list: what
    /// they mean is the option table's.
    pub const TUN_METADATA: &'static [OxmField] = &TUN_METADATA_LIST;

    /// For `tun_metadataN`, N.
    #[inline]
    pub const fn tun_metadata_index(self) -> Option<u8> {
        match self {
            OxmField::TunMetadata(n) if n < 64 => Some(n),
            _ => None,
        }
    }

    /// Whether the field's length on the wire is not fixed (Open
    /// vSwitch's `variable_len`): the `tun_metadataN` fields, whose
    /// length is their mapped option's.
    #[inline]
    pub const fn is_variable_len(self) -> bool {
        self.tun_metadata_index().is_some()
    }

    /// Facts about this field; `None` for unknown field numbers.
    #[inline]
    pub const fn info(self) -> Option<FieldInfo> {
        match self.row() {
            Some(r) => Some(r.info),
            None => None,
        }
    }

    /// Whether this is one of the connection-tracking fields
    /// ([`OxmField::CT`]).
    pub const fn is_ct(self) -> bool {
        same_list(self, Listed::Ct)
    }

    /// Whether writing this field needs to be inside `ct(...)`'s nested
    /// actions: `ct_mark` and `ct_label` (Open vSwitch's
    /// `field_requires_ct`). Anywhere else a write of them is
    /// `OFPBAC_BAD_SET_ARGUMENT`.
    pub const fn requires_ct(self) -> bool {
        matches!(self.row(), Some(r) if r.write_in_ct_only)
    }

    /// Whether matching this field needs a valid connection matched
    /// before it (Open vSwitch's prerequisite `CT`): the original
    /// direction's tuple fields.
    pub const fn needs_ct_valid(self) -> bool {
        matches!(self.row(), Some(r) if r.needs_ct_valid)
    }

    /// For a register field, the 32-bit registers it covers: first and
    /// count (`reg3`: (3, 1); `xreg1`: (2, 2); `xxreg1`: (4, 4)).
    pub const fn regs(self) -> Option<(u8, u8)> {
        match self {
            OxmField::Reg(n) if n < 16 => Some((n, 1)),
            OxmField::XReg(n) if n < 8 => Some((2 * n, 2)),
            OxmField::XXReg(n) if n < 4 => Some((4 * n, 4)),
            _ => None,
        }
    }

    /// The spec's name, lower case (`eth_dst`), or ovs-ofctl's for the
    /// Nicira fields (`tun_src`); `None` for unknown values.
    pub fn name(self) -> Option<&'static str> {
        self.row().map(|r| r.name)
    }

    /// Looks a field up by [`OxmField::name`] (ASCII case-insensitive).
    pub fn from_name(s: &str) -> Option<Self> {
        Self::KNOWN
            .iter()
            .chain(&[OxmField::PbbUca])
            .chain(Self::NICIRA)
            .chain(Self::CT)
            .chain(Self::TUN_METADATA)
            .copied()
            .find(|v| v.name().is_some_and(|n| n.eq_ignore_ascii_case(s)))
    }

    /// A field by a name ovs-ofctl reads whatever the match around it:
    /// [`OxmField::name`] (any case) or one of ovs-ofctl's own (`dl_dst`,
    /// `nw_src`, `tun_id`, `nd_target`; exact case).
    pub fn from_ovs_name(s: &str) -> Option<Self> {
        OVS_NAMES
            .iter()
            .find(|(n, _)| *n == s)
            .map(|(_, f)| *f)
            .or_else(|| Self::from_name(s).filter(|f| f.info().is_some()))
    }

    /// The name ovs-ofctl gives a field where no context changes it (in
    /// `set_field:V->FIELD`): its own name where it has one (`ip_dst`,
    /// `tun_id`, `nd_target`, ...), else [`OxmField::name`].
    pub fn ovs_name(self) -> &'static str {
        match self.row() {
            Some(r) => r.ovs_name.unwrap_or(r.name),
            None => "?",
        }
    }

    /// True for the OpenFlow basic fields (field numbers 0..=39, and
    /// 1.4's PBB_UCA, 41).
    #[inline]
    pub fn is_basic(self) -> bool {
        !matches!(self, OxmField::Unknown(_)) && (self.value() < 40 || self == OxmField::PbbUca)
    }

    /// A dense index below [`FIELD_SLOTS`](super::FIELD_SLOTS) for every
    /// known field (basic fields by number, then the Nicira ones, then
    /// PBB_UCA); `None` for unknown ones.
    #[inline]
    pub fn index(self) -> Option<usize> {
        match self {
            OxmField::Unknown(_) => None,
            OxmField::PbbUca => Some(super::FIELD_SLOTS - 1),
            f if f.info().is_none() => None,
            f if f.value() < 40 => Some(f.value() as usize),
            f => Some(40 + (f.value() - 128) as usize),
        }
    }

    /// The bits a load, a move or a learn spec addresses in the field
    /// (`FIELD[]` is bits 0 to this minus one): Open vSwitch's width for
    /// it. `OXM_OF_VLAN_VID` is 12 bits there (its `MFF_VLAN_VID`, "be16
    /// (low 12 bits)": the VLAN id, without `OFPVID_PRESENT`), although
    /// its OXM value (matches, `set_field`) has 13; every other field's
    /// is its [`FieldInfo::bits`](super::FieldInfo). 0 for unknown
    /// fields.
    pub fn subfield_bits(self) -> u16 {
        match self {
            OxmField::VlanVid => 12,
            f => f.info().map_or(0, |i| i.bits as u16),
        }
    }

    /// The field's value mask (all significant bits set).
    pub fn full_mask(self) -> u128 {
        match self.info() {
            Some(i) if i.bits == 128 => u128::MAX,
            Some(i) => (1u128 << i.bits) - 1,
            None => 0,
        }
    }

    /// All-ones in the field's wire width (what an "exact" mask looks like).
    pub fn width_mask(self) -> u128 {
        match self.info() {
            Some(i) if i.width == 16 => u128::MAX,
            Some(i) => (1u128 << (8 * i.width as u32)) - 1,
            None => 0,
        }
    }

    /// The spec's prerequisites: each listed field must be present, exactly
    /// matched, with one of the listed values (spec table 12).
    pub fn prerequisites(self) -> &'static [(OxmField, &'static [u128])] {
        self.row().map_or(&[], |r| r.prereq)
    }

    /// The 32-bit OXM header for this field in a match or set_field
    /// (`has_mask` selects the length): class `OPENFLOW_BASIC` for the basic
    /// fields, `NXM_1` for the Nicira fields (as Open vSwitch sends them
    /// under OpenFlow 1.3), ONF's experimenter OXM for `tcp_flags`.
    pub fn header(self, has_mask: bool) -> u32 {
        let (w, (class, field)) = match self.row() {
            Some(r) => (r.info.width as u32, r.oxm),
            None => (0, (OXM_CLASS_BASIC, self.value() & 0x7f)),
        };
        let mut len = if has_mask { 2 * w } else { w };
        // An experimenter OXM's length counts its experimenter id.
        if class == OXM_CLASS_EXPERIMENTER {
            len += 4;
        }
        ((class as u32) << 16) | ((field as u32) << 9) | ((has_mask as u32) << 8) | len
    }

    /// The field a class `NXM_1` OXM names in a match or set_field, for the
    /// Nicira fields that have an [`OxmField`]: the tunnel addresses and
    /// `NXM_NX_TUN_ID` (field 16, which is [`OxmField::TunnelId`]).
    #[inline]
    pub const fn from_nxm_1(field: u8) -> Option<OxmField> {
        header_lookup(&BY_OXM_HEADER, OXM_CLASS_NXM_1, field)
    }

    /// The field a class `OFPXMC_PACKET_REGS` OXM names (`xreg0`-`7`).
    #[inline]
    pub const fn from_packet_regs(field: u8) -> Option<OxmField> {
        header_lookup(&BY_OXM_HEADER, OXM_CLASS_PACKET_REGS, field)
    }

    /// The 32-bit header Open vSwitch writes for this field in a Nicira
    /// action (reg_load, reg_move) and prints in `load:`/`move:`: the
    /// legacy NXM header where the field has one (`NXM_OF_ETH_DST`,
    /// `NXM_NX_TUN_ID`), else the OXM basic one (`OXM_OF_METADATA`).
    /// Exact-match length. `None` for unknown fields.
    pub fn nxm_header(self) -> Option<u32> {
        let r = self.row()?;
        // A variable-length field's header says 124 bytes, Open vSwitch's
        // most, as ovs-ofctl writes it.
        let width = if self.is_variable_len() {
            124
        } else {
            r.info.width as u32
        };
        match r.nxm {
            Some((class, field, _)) => Some(((class as u32) << 16) | ((field as u32) << 9) | width),
            None => self.is_basic().then(|| self.header(false)),
        }
    }

    /// The name of [`OxmField::nxm_header`] (`NXM_NX_TUN_ID`,
    /// `OXM_OF_METADATA`), as ovs-ofctl prints it in `load:` and `move:`.
    pub fn nxm_name(self) -> Option<NxmName> {
        if let Some((_, _, n)) = self.row().and_then(|r| r.nxm) {
            return Some(NxmName::Nxm(n));
        }
        self.is_basic().then_some(NxmName::Oxm(self))
    }

    /// The field an exact-match (hasmask 0) NXM or OXM header names in a
    /// Nicira action: every OXM basic header, and the NXM headers whose
    /// field is the same as one of sluice's ([`OxmField::nxm_header`]).
    /// The length must be the field's. `None` for any other header
    /// (`NXM_OF_IP_TOS`, ...).
    pub fn from_nxm_header(header: u32) -> Option<OxmField> {
        if header & 0x100 != 0 {
            return None;
        }
        let f = Self::from_nxm_header_any_len(header)?;
        // A variable-length field's header may say any length (Open
        // vSwitch's client writes 124, a switch the mapped length).
        (f.is_variable_len() || f.info()?.width as u32 == header & 0xff).then_some(f)
    }

    /// As [`OxmField::from_nxm_header`], whatever the header's hasmask bit
    /// and length say.
    #[inline]
    pub fn from_nxm_header_any_len(header: u32) -> Option<OxmField> {
        let class = (header >> 16) as u16;
        let field = ((header >> 9) & 0x7f) as u8;
        match class {
            OXM_CLASS_BASIC => Some(OxmField::from(field)).filter(|f| f.info().is_some()),
            _ => header_lookup(&BY_NXM_HEADER, class, field),
        }
    }

    /// Looks a field up by its NXM or OXM name, ASCII case-insensitive:
    /// `NXM_NX_TUN_ID`, `NXM_OF_ETH_DST`, `OXM_OF_METADATA`,
    /// `OXM_OF_TUNNEL_ID`, `NXM_NX_TUN_IPV4_DST`, ...
    pub fn from_nxm_name(s: &str) -> Option<OxmField> {
        if let Some((_, f)) = NXM_NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
            return Some(*f);
        }
        let rest = s
            .get(..7)
            .filter(|p| p.eq_ignore_ascii_case("OXM_OF_"))
            .map(|_| &s[7..])?;
        Self::KNOWN
            .iter()
            .copied()
            .find(|v| v.name().is_some_and(|n| n.eq_ignore_ascii_case(rest)))
    }
}

impl From<u8> for OxmField {
    #[inline]
    fn from(v: u8) -> Self {
        OxmField::from_value(v)
    }
}

impl From<OxmField> for u8 {
    #[inline]
    fn from(f: OxmField) -> u8 {
        f.value()
    }
}

impl std::fmt::Display for OxmField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(n) => f.write_str(n),
            None => write!(f, "{}", self.value()),
        }
    }
}

/// The name of a field's NXM or OXM header, written without allocating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NxmName {
    /// A legacy NXM name such as `NXM_NX_TUN_ID`.
    Nxm(&'static str),
    /// `OXM_OF_` and the basic field's spec name in upper case.
    Oxm(OxmField),
}

impl std::fmt::Display for NxmName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NxmName::Nxm(n) => f.write_str(n),
            NxmName::Oxm(o) => {
                f.write_str("OXM_OF_")?;
                for c in o.name().unwrap_or("?").chars() {
                    std::fmt::Write::write_char(f, c.to_ascii_uppercase())?;
                }
                Ok(())
            }
        }
    }
}
