//! Open vSwitch's connection-tracking actions: `ct(...)` (`NXAST_CT`,
//! subtype 35), `nat(...)` (`NXAST_NAT`, 36, only inside `ct`) and
//! `ct_clear` (`NXAST_CT_CLEAR`, 43), coded as Open vSwitch 3.1 codes them
//! under OpenFlow 1.3 (`lib/ofp-actions.c`).
//!
//! Contract:
//! * Decoding makes the checks Open vSwitch makes when it decodes these
//!   actions, in its order and with its codes (see [`decode`]); the
//!   nesting rules (only `nat` and writes of `ct_mark`/`ct_label` inside
//!   `ct`, `commit` for anything but a bare `nat`) are [`Ct::check`], which
//!   decoding runs and [`crate::Action::validate`] runs again for actions
//!   built from text.
//! * Re-encoding a decoded action gives back the bytes Open vSwitch would
//!   write for it: every field it keeps is kept (the flags word whole,
//!   unknown bits included, as Open vSwitch keeps it). Bytes Open vSwitch
//!   ignores (`ct`'s three pad bytes, `nat`'s two, trailing bytes after
//!   `nat`'s range) are not kept, as Open vSwitch does not keep them.
//! * What needs the flow's match (Open vSwitch's `check_CT`, `check_NAT`)
//!   is [`Ct::check_packets`], for the pipeline to call with what the match
//!   (or a PACKET_OUT's packet) says.
//!
//! The matching fields (`ct_state`, `ct_zone`, `ct_mark`, `ct_label`, the
//! original-direction tuple) are [`crate::oxm::OxmField`]s; [`state`]
//! holds the `ct_state` bits.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::BufMut;

use crate::action::{bac, decode_actions_nested, Action};
use crate::error::{BadActionCode, ErrorCode, OfpError, Result};
use crate::nicira::{field_of_header, Subfield, MAX_NESTING};
use crate::oxm::{Match, MatchEntry, OxmField};
use crate::wire::{zeros, Reader};

/// Nicira action subtype `NXAST_CT`.
pub const NXAST_CT: u16 = 35;
/// Nicira action subtype `NXAST_NAT`.
pub const NXAST_NAT: u16 = 36;
/// Nicira action subtype `NXAST_CT_CLEAR`.
pub const NXAST_CT_CLEAR: u16 = 43;

/// `NX_CT_F_COMMIT`: commit the connection to the tracker.
pub const NX_CT_F_COMMIT: u16 = 1 << 0;
/// `NX_CT_F_FORCE`: with commit, end a connection committed the other way
/// and start a new one in this packet's direction.
pub const NX_CT_F_FORCE: u16 = 1 << 1;
/// `NX_CT_RECIRC_NONE`: `ct` without `table=`.
pub const NX_CT_RECIRC_NONE: u8 = 255;
/// `alg=ftp`: the FTP helper (its port number).
pub const ALG_FTP: u16 = 21;
/// `alg=tftp`: the TFTP helper.
pub const ALG_TFTP: u16 = 69;

/// `NX_NAT_F_SRC`: source NAT (exclusive with `DST`).
pub const NX_NAT_F_SRC: u16 = 1 << 0;
/// `NX_NAT_F_DST`: destination NAT.
pub const NX_NAT_F_DST: u16 = 1 << 1;
/// `NX_NAT_F_PERSISTENT`: keep the mapping across restarts of the tracker.
pub const NX_NAT_F_PERSISTENT: u16 = 1 << 2;
/// `NX_NAT_F_PROTO_HASH`: pick the port by a hash (`hash`).
pub const NX_NAT_F_PROTO_HASH: u16 = 1 << 3;
/// `NX_NAT_F_PROTO_RANDOM`: pick the port at random (`random`).
pub const NX_NAT_F_PROTO_RANDOM: u16 = 1 << 4;
/// Every `NX_NAT_F_*` flag; others are `OFPBAC_BAD_ARGUMENT`.
pub const NX_NAT_F_MASK: u16 = 0x1f;

const NX_NAT_RANGE_IPV4_MIN: u16 = 1 << 0;
const NX_NAT_RANGE_IPV4_MAX: u16 = 1 << 1;
const NX_NAT_RANGE_IPV6_MIN: u16 = 1 << 2;
const NX_NAT_RANGE_IPV6_MAX: u16 = 1 << 3;
const NX_NAT_RANGE_PROTO_MIN: u16 = 1 << 4;
const NX_NAT_RANGE_PROTO_MAX: u16 = 1 << 5;

/// The bits of `ct_state` (Open vSwitch's `CS_*`), bit 0 first, and their
/// names as ovs-ofctl reads and prints them.
pub mod state {
    /// The start of a new connection.
    pub const NEW: u32 = 1 << 0;
    /// Part of an established connection.
    pub const EST: u32 = 1 << 1;
    /// Related to an established connection.
    pub const REL: u32 = 1 << 2;
    /// In the reply direction.
    pub const RPL: u32 = 1 << 3;
    /// Invalid: the tracker could not make sense of it.
    pub const INV: u32 = 1 << 4;
    /// Tracked: it went through `ct`.
    pub const TRK: u32 = 1 << 5;
    /// Source-NATed.
    pub const SNAT: u32 = 1 << 6;
    /// Destination-NATed.
    pub const DNAT: u32 = 1 << 7;
    /// Every defined bit; a match value with others is `OFPBMC_BAD_VALUE`.
    pub const ALL: u32 = 0xff;
    /// Names by bit number.
    pub const NAMES: [&str; 8] = ["new", "est", "rel", "rpl", "inv", "trk", "snat", "dnat"];
}

/// Where `ct` takes its zone from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CtZone {
    /// `zone=N` (0 when not given).
    Imm(u16),
    /// `zone=FIELD[a..b]`: 16 bits of a field, read when the action runs.
    Field(Subfield),
}

/// `ct(...)`: sends the packet through the connection tracker.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ct {
    /// `NX_CT_F_*` as on the wire ([`Ct::commit`], [`Ct::force`]); other
    /// bits are kept as Open vSwitch keeps them, and mean nothing.
    pub flags: u16,
    pub zone: CtZone,
    /// `table=N`: the table the tracked packet continues in (a copy: the
    /// packet itself goes on with the next action, untracked);
    /// [`NX_CT_RECIRC_NONE`] (255) when not given ([`Ct::table`]).
    pub recirc_table: u8,
    /// `alg=`: the helper's port number (0 none, [`ALG_FTP`],
    /// [`ALG_TFTP`], another number as given).
    pub alg: u16,
    /// The nested actions, in wire order: [`Action::Nat`] and writes of
    /// `ct_mark`/`ct_label` ([`Action::SetField`], [`Action::RegLoad`],
    /// [`Action::RegMove`]), run in the tracker's context when the
    /// connection is committed.
    pub actions: Vec<Action>,
}

impl Ct {
    /// `ct` with nothing set: zone 0, no table, no commit.
    pub fn new() -> Ct {
        Ct {
            flags: 0,
            zone: CtZone::Imm(0),
            recirc_table: NX_CT_RECIRC_NONE,
            alg: 0,
            actions: Vec::new(),
        }
    }

    /// `commit`.
    pub fn commit(&self) -> bool {
        self.flags & NX_CT_F_COMMIT != 0
    }

    /// `force` (only with commit).
    pub fn force(&self) -> bool {
        self.flags & NX_CT_F_FORCE != 0
    }

    /// The table the tracked copy goes to, if any.
    pub fn table(&self) -> Option<u8> {
        (self.recirc_table != NX_CT_RECIRC_NONE).then_some(self.recirc_table)
    }

    /// The first `nat` of the nested actions (the one ovs-ofctl prints
    /// outside `exec(...)` when it comes first).
    pub fn nat(&self) -> Option<&Nat> {
        self.actions.iter().find_map(|a| match a {
            Action::Nat(n) => Some(&**n),
            _ => None,
        })
    }

    /// The nested actions that are not `nat`: the writes of `ct_mark` and
    /// `ct_label` (`exec(...)`).
    pub fn exec(&self) -> impl Iterator<Item = &Action> {
        self.actions.iter().filter(|a| !matches!(a, Action::Nat(_)))
    }

    /// Open vSwitch's checks of a decoded `ct`, in its order (its
    /// `decode_NXAST_RAW_CT` and `ofpacts_verify` of the nested list):
    /// `force` without `commit` (`OFPBAC_BAD_ARGUMENT`); a zone field
    /// ([`Subfield::check_src`], then 16 bits or `OFPBAC_BAD_SET_LEN`);
    /// each nested action ([`check_nested`]); then anything but a `nat`
    /// without arguments needs `commit` (`OFPBAC_BAD_ARGUMENT`).
    pub fn check(&self) -> Result<()> {
        if self.force() && !self.commit() {
            return Err(bac(BadActionCode::BadArgument, "ct: force needs commit"));
        }
        if let CtZone::Field(z) = &self.zone {
            z.check_src()?;
            if z.n_bits != 16 {
                return Err(bac(
                    BadActionCode::BadSetLen,
                    "ct: a zone field has 16 bits",
                ));
            }
        }
        check_nested(&self.actions)?;
        self.check_commit()
    }

    fn check_commit(&self) -> Result<()> {
        if self.commit() {
            return Ok(());
        }
        let bare_nat =
            |a: &Action| matches!(a, Action::Nat(n) if n.flags == 0 && n.range == NatRange::None);
        if self.actions.iter().all(bare_nat) {
            Ok(())
        } else {
            Err(bac(
                BadActionCode::BadArgument,
                "ct: actions other than a nat without arguments need commit",
            ))
        }
    }

    /// Open vSwitch's `check_CT` against what the flow's match says of its
    /// packets (`OFPBAC_MATCH_INCONSISTENT` for each): IPv4 or IPv6; not
    /// `commit` of packets matched `+inv`; `alg=ftp` only for TCP,
    /// `alg=tftp` only for UDP; a zone field's prerequisites. Then, unless
    /// the zone is a field (Open vSwitch 3.1 returns early there), each
    /// nested `nat` ([`Nat::check_packets`]).
    pub fn check_packets(&self, p: &CtPackets) -> Result<()> {
        let inconsistent =
            |why| OfpError::new(ErrorCode::BadAction(BadActionCode::MatchInconsistent), why);
        if !matches!(p.eth_type, Some(0x0800 | 0x86dd)) {
            return Err(inconsistent("ct: the match must say ip or ipv6"));
        }
        if self.commit() && p.ct_state & state::INV != 0 {
            return Err(inconsistent("ct: commit of packets matched +inv"));
        }
        if (self.alg == ALG_FTP && p.ip_proto != Some(6))
            || (self.alg == ALG_TFTP && p.ip_proto != Some(17))
        {
            return Err(inconsistent(
                "ct: alg=ftp needs tcp and alg=tftp udp in the match",
            ));
        }
        if let CtZone::Field(z) = &self.zone {
            return if p.meets(z.field) {
                Ok(())
            } else {
                Err(inconsistent(
                    "ct: the zone field's prerequisites are not in the match",
                ))
            };
        }
        for a in &self.actions {
            if let Action::Nat(n) = a {
                n.check_packets(p)?;
            }
        }
        Ok(())
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u16(NXAST_CT);
        out.put_u16(self.flags);
        match &self.zone {
            CtZone::Imm(z) => {
                out.put_u32(0);
                out.put_u16(*z);
            }
            CtZone::Field(f) => {
                out.put_u32(f.header());
                out.put_u16(f.ofs_nbits());
            }
        }
        out.put_u8(self.recirc_table);
        zeros(out, 3);
        out.put_u16(self.alg);
        crate::action::encode_actions(&self.actions, out);
    }
}

impl Default for Ct {
    fn default() -> Ct {
        Ct::new()
    }
}

/// The nesting rules for the actions inside `ct` (Open vSwitch's
/// `ofpacts_verify_nested` with `ct` around them), action by action:
/// `nat` and writes (`set_field`, `load`, `move`) of `ct_mark` or
/// `ct_label` go; any other action, or a write of another field, is
/// `OFPBAC_BAD_ARGUMENT`. Each action is checked on its own first
/// ([`Action::validate`] without the outer rules).
pub fn check_nested(list: &[Action]) -> Result<()> {
    for a in list {
        match a {
            Action::Nat(n) => n.check()?,
            a => match write_dst(a) {
                Some(f) if f.requires_ct() => a.validate_inner()?,
                Some(_) => {
                    return Err(bac(
                        BadActionCode::BadArgument,
                        "ct: nested actions may write ct_mark and ct_label only",
                    ))
                }
                None => {
                    return Err(bac(
                        BadActionCode::BadArgument,
                        "ct: only nat and writes of ct_mark or ct_label may be nested",
                    ))
                }
            },
        }
    }
    Ok(())
}

/// The field an action writes (Open vSwitch's `ofpact_get_mf_dst`: a
/// set_field, load or move).
pub fn write_dst(a: &Action) -> Option<OxmField> {
    match a {
        Action::SetField(MatchEntry::Basic(o)) => Some(o.field),
        Action::RegLoad(l) => Some(l.dst),
        Action::RegMove(m) => Some(m.dst),
        _ => None,
    }
}

/// The address range of a [`Nat`], as Open vSwitch holds it: a bound of 0
/// is absent (`max` 0: the range is `min` alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NatRange {
    /// No address given (`nat`, `nat(src)`).
    None,
    V4 {
        min: u32,
        max: u32,
    },
    V6 {
        min: u128,
        max: u128,
    },
}

/// `nat(src|dst[=ADDR[-ADDR][:PORT[-PORT]]][,persistent][,hash|random])`,
/// only inside `ct`. A `nat` without arguments applies to the packet the
/// NAT its connection already has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Nat {
    /// `NX_NAT_F_*`.
    pub flags: u16,
    pub range: NatRange,
    /// The first port of the range; 0: none (then there is no range at
    /// all). Only with an address range.
    pub proto_min: u16,
    /// The last port; 0: `proto_min` alone.
    pub proto_max: u16,
}

impl Nat {
    /// `src`.
    pub fn src(&self) -> bool {
        self.flags & NX_NAT_F_SRC != 0
    }

    /// `dst`.
    pub fn dst(&self) -> bool {
        self.flags & NX_NAT_F_DST != 0
    }

    /// The addresses to map to, first and last (the same when one is
    /// given); `None` without a range.
    pub fn addrs(&self) -> Option<(IpAddr, IpAddr)> {
        match self.range {
            NatRange::None => None,
            NatRange::V4 { min, max } => {
                let max = if max == 0 { min } else { max };
                Some((Ipv4Addr::from(min).into(), Ipv4Addr::from(max).into()))
            }
            NatRange::V6 { min, max } => {
                let max = if max == 0 { min } else { max };
                Some((Ipv6Addr::from(min).into(), Ipv6Addr::from(max).into()))
            }
        }
    }

    /// The ports to map to, first and last; `None` when not given.
    pub fn ports(&self) -> Option<(u16, u16)> {
        if self.range == NatRange::None || self.proto_min == 0 {
            return None;
        }
        let max = if self.proto_max == 0 {
            self.proto_min
        } else {
            self.proto_max
        };
        Some((self.proto_min, max))
    }

    /// What Open vSwitch's `decode_NXAST_RAW_NAT` refuses
    /// (`OFPBAC_BAD_ARGUMENT` for each): unknown flags, `src` with `dst`,
    /// `hash` with `random`, a range whose maximum is below its minimum, a
    /// zero minimum, ports without addresses.
    pub fn check(&self) -> Result<()> {
        let bad = |why| Err(bac(BadActionCode::BadArgument, why));
        let f = self.flags;
        if f & !NX_NAT_F_MASK != 0
            || (f & NX_NAT_F_SRC != 0 && f & NX_NAT_F_DST != 0)
            || (f & NX_NAT_F_PROTO_HASH != 0 && f & NX_NAT_F_PROTO_RANDOM != 0)
        {
            return bad("nat: unknown flags, src with dst, or hash with random");
        }
        match self.range {
            NatRange::None if self.proto_min != 0 || self.proto_max != 0 => {
                return bad("nat: ports without addresses")
            }
            NatRange::V4 { min, max } if min == 0 || (max != 0 && max < min) => {
                return bad("nat: an IPv4 range from 0 or backwards")
            }
            NatRange::V6 { min, max } if min == 0 || (max != 0 && max < min) => {
                return bad("nat: an IPv6 range from :: or backwards")
            }
            _ => {}
        }
        // A maximum needs a minimum (not 0) at or below it.
        if self.proto_max != 0 && self.proto_max < self.proto_min.max(1) {
            return bad("nat: a port range from 0 or backwards");
        }
        Ok(())
    }

    /// Open vSwitch's `check_NAT` (`OFPBAC_MATCH_INCONSISTENT`): the match
    /// says IPv4 or IPv6, and the one of the address range if there is one.
    pub fn check_packets(&self, p: &CtPackets) -> Result<()> {
        let ok = matches!(
            (p.eth_type, self.range),
            (Some(0x0800), NatRange::None | NatRange::V4 { .. })
                | (Some(0x86dd), NatRange::None | NatRange::V6 { .. })
        );
        if ok {
            Ok(())
        } else {
            Err(OfpError::new(
                ErrorCode::BadAction(BadActionCode::MatchInconsistent),
                "nat: the match must say ip or ipv6, the family of the range",
            ))
        }
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u16(NXAST_NAT);
        zeros(out, 2);
        out.put_u16(self.flags);
        let at = out.len();
        out.put_u16(0);
        let mut present = 0;
        match self.range {
            NatRange::None => {}
            NatRange::V4 { min, max } => {
                if min != 0 {
                    out.put_u32(min);
                    present |= NX_NAT_RANGE_IPV4_MIN;
                }
                if max != 0 {
                    out.put_u32(max);
                    present |= NX_NAT_RANGE_IPV4_MAX;
                }
            }
            NatRange::V6 { min, max } => {
                if min != 0 {
                    out.put_u128(min);
                    present |= NX_NAT_RANGE_IPV6_MIN;
                }
                if max != 0 {
                    out.put_u128(max);
                    present |= NX_NAT_RANGE_IPV6_MAX;
                }
            }
        }
        if self.range != NatRange::None {
            if self.proto_min != 0 {
                out.put_u16(self.proto_min);
                present |= NX_NAT_RANGE_PROTO_MIN;
            }
            if self.proto_max != 0 {
                out.put_u16(self.proto_max);
                present |= NX_NAT_RANGE_PROTO_MAX;
            }
        }
        out[at..at + 2].copy_from_slice(&present.to_be_bytes());
    }

    /// `NXAST_NAT` after the subtype, as Open vSwitch's
    /// `decode_NXAST_RAW_NAT` reads it: the flags ([`Nat::check`]'s first
    /// rule), then each range part `range_present` names, in order, each
    /// there (else `OFPBAC_BAD_ARGUMENT`) and in order (min before max,
    /// IPv4 or IPv6 but not both, ports only with addresses).
    fn decode(mut b: Reader<'_>) -> Result<Nat> {
        let bad = |why| bac(BadActionCode::BadArgument, why);
        b.skip(2)?;
        let flags = b.u16()?;
        let present = b.u16()?;
        let mut nat = Nat {
            flags,
            range: NatRange::None,
            proto_min: 0,
            proto_max: 0,
        };
        if flags & !NX_NAT_F_MASK != 0
            || (flags & NX_NAT_F_SRC != 0 && flags & NX_NAT_F_DST != 0)
            || (flags & NX_NAT_F_PROTO_HASH != 0 && flags & NX_NAT_F_PROTO_RANDOM != 0)
        {
            return Err(bad("nat: unknown flags, src with dst, or hash with random"));
        }
        let missing = || bad("nat: a range part range_present names is missing");
        if present & NX_NAT_RANGE_IPV4_MIN != 0 {
            if present & (NX_NAT_RANGE_IPV6_MIN | NX_NAT_RANGE_IPV6_MAX) != 0 {
                return Err(bad("nat: IPv4 and IPv6 ranges together"));
            }
            let min = b.u32().map_err(|_| missing())?;
            if min == 0 {
                return Err(bad("nat: IPv4 range from 0.0.0.0"));
            }
            let mut max = 0;
            if present & NX_NAT_RANGE_IPV4_MAX != 0 {
                max = b.u32().map_err(|_| missing())?;
                if max < min {
                    return Err(bad("nat: IPv4 range backwards"));
                }
            }
            nat.range = NatRange::V4 { min, max };
        } else if present & NX_NAT_RANGE_IPV4_MAX != 0 {
            return Err(bad("nat: IPv4 maximum without minimum"));
        } else if present & NX_NAT_RANGE_IPV6_MIN != 0 {
            let min = u128::from_be_bytes(b.array::<16>().map_err(|_| missing())?);
            if min == 0 {
                return Err(bad("nat: IPv6 range from ::"));
            }
            let mut max = 0;
            if present & NX_NAT_RANGE_IPV6_MAX != 0 {
                max = u128::from_be_bytes(b.array::<16>().map_err(|_| missing())?);
                if max < min {
                    return Err(bad("nat: IPv6 range backwards"));
                }
            }
            nat.range = NatRange::V6 { min, max };
        } else if present & NX_NAT_RANGE_IPV6_MAX != 0 {
            return Err(bad("nat: IPv6 maximum without minimum"));
        }
        if present & NX_NAT_RANGE_PROTO_MIN != 0 {
            if nat.range == NatRange::None {
                return Err(bad("nat: ports without addresses"));
            }
            let min = b.u16().map_err(|_| missing())?;
            if min == 0 {
                return Err(bad("nat: port range from 0"));
            }
            nat.proto_min = min;
            if present & NX_NAT_RANGE_PROTO_MAX != 0 {
                let max = b.u16().map_err(|_| missing())?;
                if max < min {
                    return Err(bad("nat: port range backwards"));
                }
                nat.proto_max = max;
            }
        } else if present & NX_NAT_RANGE_PROTO_MAX != 0 {
            return Err(bad("nat: port maximum without minimum"));
        }
        Ok(nat)
    }
}

/// What [`Ct::check_packets`] and [`Nat::check_packets`] need to know of
/// the packets an action list meets, as Open vSwitch's `ofpacts_check`
/// reads them off the flow's match: the EtherType and IP protocol matched
/// exactly (`None`: not matched), and the `ct_state` bits matched set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CtPackets {
    pub eth_type: Option<u16>,
    pub ip_proto: Option<u8>,
    /// `ct_state` value & mask (bits matched set).
    pub ct_state: u32,
}

impl CtPackets {
    /// What a flow's match says.
    pub fn of_match(m: &Match) -> CtPackets {
        let exact = |f| m.get(f).filter(|o| o.mask.is_none()).map(|o| o.value);
        CtPackets {
            eth_type: exact(OxmField::EthType).map(|v| v as u16),
            ip_proto: exact(OxmField::IpProto).map(|v| v as u8),
            ct_state: m
                .get(OxmField::CtState)
                .map_or(0, |o| (o.value & o.effective_mask()) as u32),
        }
    }

    /// Whether the packets meet `f`'s prerequisites (EtherType and IP
    /// protocol ones; others are taken as met).
    fn meets(&self, f: OxmField) -> bool {
        f.prerequisites().iter().all(|(need, values)| match *need {
            OxmField::EthType => self.eth_type.is_some_and(|v| values.contains(&(v as u128))),
            OxmField::IpProto => self.ip_proto.is_some_and(|v| values.contains(&(v as u128))),
            _ => true,
        })
    }
}

fn bad_len(what: &'static str) -> OfpError {
    OfpError::new(ErrorCode::ACTION_BAD_LEN, what)
}

/// Decodes `ct`, `nat` or `ct_clear` from `b` (after the experimenter id;
/// `len` the whole action's length, `depth` how deep in nested action
/// lists it is); `None` for another subtype. Lengths as Open vSwitch
/// wants them (`OFPBAC_BAD_LEN`): `ct` at least 24 bytes, `nat` at least
/// 16, `ct_clear` exactly 16. `ct` is then checked as [`Ct::check`] says,
/// its nested actions decoded first (their own errors come before the
/// nesting rules), as Open vSwitch does.
pub(crate) fn decode(
    subtype: u16,
    len: usize,
    mut b: Reader<'_>,
    depth: u32,
) -> Option<Result<Action>> {
    Some(match subtype {
        NXAST_CT_CLEAR => {
            if len == 16 {
                Ok(Action::CtClear)
            } else {
                Err(bad_len("ct_clear is 16 bytes"))
            }
        }
        NXAST_NAT => {
            if len < 16 {
                Err(bad_len("nat is at least 16 bytes"))
            } else {
                b.skip(2)
                    .and_then(|_| Nat::decode(b))
                    .map(|n| Action::Nat(Box::new(n)))
            }
        }
        NXAST_CT => {
            if len < 24 {
                Err(bad_len("ct is at least 24 bytes"))
            } else {
                decode_ct(b, depth).map(|c| Action::Ct(Box::new(c)))
            }
        }
        _ => return None,
    })
}

fn decode_ct(mut b: Reader<'_>, depth: u32) -> Result<Ct> {
    b.skip(2)?;
    let flags = b.u16()?;
    let zone_src = b.u32()?;
    let zone_v = b.u16()?;
    let recirc_table = b.u8()?;
    b.skip(3)?;
    let alg = b.u16()?;
    if flags & NX_CT_F_FORCE != 0 && flags & NX_CT_F_COMMIT == 0 {
        return Err(bac(BadActionCode::BadArgument, "ct: force needs commit"));
    }
    let zone = if zone_src == 0 {
        CtZone::Imm(zone_v)
    } else {
        let z = Subfield::from_ofs_nbits(field_of_header(zone_src)?, zone_v);
        z.check_src()?;
        if z.n_bits != 16 {
            return Err(bac(
                BadActionCode::BadSetLen,
                "ct: a zone field has 16 bits",
            ));
        }
        CtZone::Field(z)
    };
    if depth + 1 >= MAX_NESTING {
        return Err(bac(
            BadActionCode::BadArgument,
            "ct nested deeper than 100 action lists",
        ));
    }
    let actions = decode_actions_nested(&mut b, depth + 1)?;
    let ct = Ct {
        flags,
        zone,
        recirc_table,
        alg,
        actions,
    };
    check_nested(&ct.actions)?;
    ct.check_commit()?;
    Ok(ct)
}

/// Writes the body (after the experimenter id) of `ct`, `nat` or
/// `ct_clear`; `false` for another action.
pub(crate) fn encode_body(a: &Action, out: &mut Vec<u8>) -> bool {
    match a {
        Action::Ct(c) => c.encode_body(out),
        Action::Nat(n) => n.encode_body(out),
        Action::CtClear => {
            out.put_u16(NXAST_CT_CLEAR);
            zeros(out, 6);
        }
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn hex(s: &str) -> Bytes {
        let s: String = s.split_whitespace().collect();
        Bytes::from(
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect::<Vec<_>>(),
        )
    }

    fn decode(s: &str) -> Result<Action> {
        let b = hex(s);
        let mut r = Reader::new(&b, ErrorCode::ACTION_BAD_LEN);
        let a = Action::decode(&mut r)?;
        let mut out = Vec::new();
        a.encode(&mut out);
        assert_eq!(out, b.to_vec(), "{s}: re-encoded");
        Ok(a)
    }

    fn code(s: &str) -> ErrorCode {
        let b = hex(s);
        let mut r = Reader::new(&b, ErrorCode::ACTION_BAD_LEN);
        Action::decode(&mut r).unwrap_err().code
    }

    const ARG: ErrorCode = ErrorCode::BadAction(BadActionCode::BadArgument);
    const LEN: ErrorCode = ErrorCode::ACTION_BAD_LEN;

    #[test]
    fn wire_forms_ovs_ofctl_writes() {
        // ct(commit,table=2,zone=1,exec(load:0x1->NXM_NX_CT_MARK[])), as
        // ovs-ofctl 3.1 writes it.
        let a = decode(
            "ffff 0030 00002320 0023 0001 00000000 0001 02 000000 0000 \
             ffff 0018 00002320 0007 001f 0001d604 0000000000000001",
        )
        .unwrap();
        let Action::Ct(c) = a else { panic!() };
        assert!(c.commit() && !c.force());
        assert_eq!((c.table(), c.zone, c.alg), (Some(2), CtZone::Imm(1), 0));
        assert_eq!(c.exec().count(), 1);
        // ct(table=2,zone=NXM_NX_REG0[0..15]) and ct_clear.
        let a = decode("ffff 0018 00002320 0023 0000 00010004 000f 02 000000 0000").unwrap();
        assert!(matches!(a, Action::Ct(c) if matches!(c.zone, CtZone::Field(_))));
        assert_eq!(
            decode("ffff 0010 00002320 002b 000000000000").unwrap(),
            Action::CtClear
        );
        // nat(src=10.0.0.1-10.0.0.5:100-200,persistent,random) in ct.
        let a = decode(
            "ffff 0038 00002320 0023 0001 00000000 0000 ff 000000 0000 \
             ffff 0020 00002320 0024 0000 0015 0033 0a000001 0a000005 0064 00c8 00000000",
        )
        .unwrap();
        let Action::Ct(c) = a else { panic!() };
        let n = c.nat().unwrap();
        assert_eq!(n.ports(), Some((100, 200)));
        assert_eq!(
            n.addrs(),
            Some(("10.0.0.1".parse().unwrap(), "10.0.0.5".parse().unwrap()))
        );
    }

    #[test]
    fn wire_refusals_as_open_vswitch_decodes_them() {
        // Lengths: ct under 24, ct_clear not 16.
        assert_eq!(code("ffff 0010 00002320 0023 000000000000"), LEN);
        assert_eq!(
            code("ffff 0018 00002320 002b 000000000000 0000000000000000"),
            LEN
        );
        // force without commit.
        assert_eq!(
            code("ffff 0018 00002320 0023 0002 00000000 0000 ff 000000 0000"),
            ARG
        );
        // A zone field of 8 bits; of a field sluice has no name for.
        assert_eq!(
            code("ffff 0018 00002320 0023 0000 00010004 0007 ff 000000 0000"),
            ErrorCode::BadAction(BadActionCode::BadSetLen)
        );
        assert_eq!(
            code("ffff 0018 00002320 0023 0000 0001fe04 000f ff 000000 0000"),
            ErrorCode::BadAction(BadActionCode::BadSetType)
        );
        // Nested: an output; a load of reg0; a load without commit; a
        // nat with a range without commit.
        for inner in [
            "0000 0010 00000001 ffff 000000000000",
            "ffff 0018 00002320 0007 001f 00010004 0000000000000001",
        ] {
            let len = 24 + hex(inner).len();
            assert_eq!(
                code(&format!(
                    "ffff {len:04x} 00002320 0023 0001 00000000 0000 ff 000000 0000 {inner}"
                )),
                ARG,
                "{inner}"
            );
        }
        assert_eq!(
            code(
                "ffff 0030 00002320 0023 0000 00000000 0000 ff 000000 0000 \
                 ffff 0018 00002320 0007 001f 0001d604 0000000000000001"
            ),
            ARG
        );
        assert_eq!(
            code(
                "ffff 0028 00002320 0023 0000 00000000 0000 ff 000000 0000 \
                 ffff 0010 00002320 0024 0000 0001 0000"
            ),
            ARG
        );
        // nat: src with dst, hash with random, unknown flags, a range part
        // missing, backwards, IPv4 max alone, ports without addresses.
        for body in [
            "0003 0000 00000000",
            "0019 0000 00000000",
            "0020 0000 00000000",
            "0001 0001 00000000",
            "0001 0003 0a000005 0a000001",
            "0001 0002 0a000001",
            "0001 0010 00640000",
            "0001 0031 0a000001 00c8 0064",
        ] {
            let b = hex(body);
            let len = 12 + b.len();
            let pad = (8 - len % 8) % 8;
            let s = format!(
                "ffff {:04x} 00002320 0024 0000 {body} {}",
                len + pad,
                "00".repeat(pad)
            );
            let inner = Bytes::from(hex(&s).to_vec());
            let mut r = Reader::new(&inner, ErrorCode::ACTION_BAD_LEN);
            assert_eq!(Action::decode(&mut r).unwrap_err().code, ARG, "{body}");
        }
    }

    #[test]
    fn outside_ct_refusals() {
        let bad_set_arg = ErrorCode::BadAction(BadActionCode::BadSetArgument);
        let nat = Action::Nat(Box::new(Nat {
            flags: 0,
            range: NatRange::None,
            proto_min: 0,
            proto_max: 0,
        }));
        assert_eq!(nat.validate().unwrap_err().code, bad_set_arg);
        let mark = Action::SetField(MatchEntry::Basic(crate::oxm::Oxm::exact(
            OxmField::CtMark,
            1,
        )));
        assert_eq!(mark.validate().unwrap_err().code, bad_set_arg);
        assert_eq!(
            Action::Clone(vec![mark.clone()])
                .validate()
                .unwrap_err()
                .code,
            bad_set_arg
        );
        let mut ct = Ct::new();
        ct.flags = NX_CT_F_COMMIT;
        ct.actions = vec![mark, nat];
        assert!(Action::Ct(Box::new(ct)).validate().is_ok());
    }
}
