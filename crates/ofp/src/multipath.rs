//! Open vSwitch's `multipath` (`NXAST_MULTIPATH`, 10) and `bundle` /
//! `bundle_load` (`NXAST_BUNDLE`, 12, and `NXAST_BUNDLE_LOAD`, 13): pick a
//! link, or a port among members, by a hash of the flow. The codec and
//! its checks are Open vSwitch 3.1's (`lib/ofp-actions.c`,
//! `lib/multipath.c`, `lib/bundle.c`); the hashing is the pipeline's.

use bytes::BufMut;

use crate::action::bac;
use crate::error::{BadActionCode, ErrorCode, OfpError, Result};
use crate::nicira::{Subfield, NXAST_BUNDLE, NXAST_BUNDLE_LOAD, NXAST_MULTIPATH};
use crate::oxm::OxmField;
use crate::port::port_no;
use crate::resubmit::{port_to_u16, Resubmit};
use crate::wire::{zeros, Reader};

/// `nx_hash_fields`: what of the flow is hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HashFields {
    /// Ethernet source.
    EthSrc = 0,
    /// Ethernet addresses and type, VLAN id, IP addresses and protocol,
    /// TCP and SCTP ports, each pair combined so both directions agree.
    SymmetricL4 = 1,
    /// IP addresses and protocol, TCP and SCTP ports (L2 for non-IP).
    SymmetricL3L4 = 2,
    /// As `SymmetricL3L4`, UDP ports too.
    SymmetricL3L4Udp = 3,
    /// IP source.
    NwSrc = 4,
    /// IP destination.
    NwDst = 5,
    /// IP addresses.
    SymmetricL3 = 6,
}

impl HashFields {
    /// Every value, in wire order.
    pub const ALL: [HashFields; 7] = [
        HashFields::EthSrc,
        HashFields::SymmetricL4,
        HashFields::SymmetricL3L4,
        HashFields::SymmetricL3L4Udp,
        HashFields::NwSrc,
        HashFields::NwDst,
        HashFields::SymmetricL3,
    ];

    /// The wire value's fields, if known.
    pub fn from_u16(v: u16) -> Option<HashFields> {
        Self::ALL.get(v as usize).copied()
    }

    /// ovs-ofctl's name.
    pub fn name(self) -> &'static str {
        match self {
            HashFields::EthSrc => "eth_src",
            HashFields::SymmetricL4 => "symmetric_l4",
            HashFields::SymmetricL3L4 => "symmetric_l3l4",
            HashFields::SymmetricL3L4Udp => "symmetric_l3l4+udp",
            HashFields::NwSrc => "nw_src",
            HashFields::NwDst => "nw_dst",
            HashFields::SymmetricL3 => "symmetric_l3",
        }
    }

    /// By ovs-ofctl's name, ASCII case-insensitive.
    pub fn from_name(s: &str) -> Option<HashFields> {
        Self::ALL
            .iter()
            .copied()
            .find(|f| f.name().eq_ignore_ascii_case(s))
    }
}

/// `nx_mp_algorithm`: how multipath turns the hash into a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MpAlgorithm {
    ModuloN = 0,
    HashThreshold = 1,
    Hrw = 2,
    IterHash = 3,
}

impl MpAlgorithm {
    const ALL: [MpAlgorithm; 4] = [
        MpAlgorithm::ModuloN,
        MpAlgorithm::HashThreshold,
        MpAlgorithm::Hrw,
        MpAlgorithm::IterHash,
    ];

    /// ovs-ofctl's name.
    pub fn name(self) -> &'static str {
        match self {
            MpAlgorithm::ModuloN => "modulo_n",
            MpAlgorithm::HashThreshold => "hash_threshold",
            MpAlgorithm::Hrw => "hrw",
            MpAlgorithm::IterHash => "iter_hash",
        }
    }

    /// By ovs-ofctl's name, ASCII case-insensitive.
    pub fn from_name(s: &str) -> Option<MpAlgorithm> {
        Self::ALL
            .iter()
            .copied()
            .find(|f| f.name().eq_ignore_ascii_case(s))
    }
}

/// `multipath(fields,basis,algorithm,n_links,arg,dst)`: writes a link
/// number in `[0, max_link]` chosen by a hash of `fields` into `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Multipath {
    pub fields: HashFields,
    pub basis: u16,
    pub algorithm: MpAlgorithm,
    /// Links minus one.
    pub max_link: u16,
    /// iter_hash's modulus.
    pub arg: u32,
    pub dst: Subfield,
}

/// `ceil(log2(n))`.
fn log2_ceil(n: u32) -> u16 {
    if n <= 1 {
        0
    } else {
        (32 - (n - 1).leading_zeros()) as u16
    }
}

impl Multipath {
    /// Open vSwitch's checks after decoding: the destination holds every
    /// link (`OFPBAC_BAD_ARGUMENT`), then `mf_check_dst` (and at most 64
    /// bits, what `ofs_nbits` can say).
    pub fn check(&self) -> Result<()> {
        if self.dst.n_bits < log2_ceil(self.max_link as u32 + 1) {
            return Err(bac(
                BadActionCode::BadArgument,
                "multipath destination too narrow for its links",
            ));
        }
        self.dst.check_dst()?;
        if self.dst.n_bits > 64 {
            return Err(bac(
                BadActionCode::BadArgument,
                "multipath destination wider than 64 bits",
            ));
        }
        Ok(())
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u16(NXAST_MULTIPATH);
        out.put_u16(self.fields as u16);
        out.put_u16(self.basis);
        zeros(out, 2);
        out.put_u16(self.algorithm as u16);
        out.put_u16(self.max_link);
        out.put_u32(self.arg);
        zeros(out, 2);
        out.put_u16(ofs_nbits(&self.dst));
        out.put_u32(self.dst.field.nxm_header().unwrap_or(0));
    }

    /// After the experimenter id; Open vSwitch's order: the destination's
    /// header (`OFPBAC_BAD_SET_TYPE`), fields, algorithm, width
    /// (`OFPBAC_BAD_ARGUMENT`), `mf_check_dst`.
    pub(crate) fn decode(len: usize, mut b: Reader<'_>) -> Result<Multipath> {
        if len != 32 {
            return Err(OfpError::new(
                ErrorCode::ACTION_BAD_LEN,
                "multipath is 32 bytes",
            ));
        }
        b.skip(2)?;
        let fields = b.u16()?;
        let basis = b.u16()?;
        b.skip(2)?;
        let algorithm = b.u16()?;
        let max_link = b.u16()?;
        let arg = b.u32()?;
        b.skip(2)?;
        let ofs_nbits = b.u16()?;
        let field = field_of_header(b.u32()?)?;
        let fields = HashFields::from_u16(fields).ok_or(bac(
            BadActionCode::BadArgument,
            "multipath hashes unknown fields",
        ))?;
        let algorithm = MpAlgorithm::ALL
            .get(algorithm as usize)
            .copied()
            .ok_or(bac(
                BadActionCode::BadArgument,
                "multipath algorithm unknown",
            ))?;
        let m = Multipath {
            fields,
            basis,
            algorithm,
            max_link,
            arg,
            dst: subfield(field, ofs_nbits),
        };
        m.check()?;
        Ok(m)
    }
}

fn ofs_nbits(s: &Subfield) -> u16 {
    (s.ofs << 6) | (s.n_bits.wrapping_sub(1) & 0x3f)
}

fn subfield(field: OxmField, v: u16) -> Subfield {
    Subfield {
        field,
        ofs: v >> 6,
        n_bits: (v & 0x3f) + 1,
    }
}

fn field_of_header(h: u32) -> Result<OxmField> {
    OxmField::from_nxm_header(crate::action::exact_header(h)).ok_or(bac(
        BadActionCode::BadSetType,
        "Nicira action names a field sluice does not know",
    ))
}

/// `nx_bd_algorithm`: how bundle picks a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BdAlgorithm {
    /// The first live member.
    ActiveBackup = 0,
    /// Highest random weight among the live members.
    Hrw = 1,
}

impl BdAlgorithm {
    /// ovs-ofctl's name.
    pub fn name(self) -> &'static str {
        match self {
            BdAlgorithm::ActiveBackup => "active_backup",
            BdAlgorithm::Hrw => "hrw",
        }
    }
}

/// Members one bundle may list (Open vSwitch's `BUNDLE_MAX_MEMBERS`).
pub const BUNDLE_MAX_MEMBERS: usize = 2048;

/// `NXM_OF_IN_PORT`'s header: the only member type (16-bit ports).
const MEMBER_TYPE: u32 = 0x0000_0002;

/// `bundle(fields,basis,algorithm,ofport,members:P,...)` outputs to the
/// member chosen; `bundle_load(...,dst,members:...)` writes its number to
/// `dst` instead (`OFPP_NONE`, 65535, when no member is live).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bundle {
    pub fields: HashFields,
    pub basis: u16,
    pub algorithm: BdAlgorithm,
    /// OpenFlow 1.3 port numbers (each with a 16-bit form).
    pub members: Vec<u32>,
    /// `Some` for `bundle_load`.
    pub dst: Option<Subfield>,
}

impl Bundle {
    /// Open vSwitch's `bundle_check`: a writable destination
    /// (`mf_check_dst`), members that are output ports (`OFPP_NONE`
    /// allowed, `OFPP_CONTROLLER` not: `OFPBAC_BAD_OUT_PORT`); at most
    /// [`BUNDLE_MAX_MEMBERS`] members and a destination of at least 16
    /// bits (`OFPBAC_BAD_ARGUMENT`).
    pub fn check(&self) -> Result<()> {
        if self.members.len() > BUNDLE_MAX_MEMBERS {
            return Err(bac(
                BadActionCode::BadArgument,
                "bundle has too many members",
            ));
        }
        if let Some(d) = &self.dst {
            if d.n_bits < 16 || d.n_bits > 64 {
                return Err(bac(
                    BadActionCode::BadArgument,
                    "bundle_load needs a destination of 16 to 64 bits",
                ));
            }
            d.check_dst()?;
        }
        for &p in &self.members {
            let ok = match p {
                port_no::CONTROLLER => false,
                port_no::IN_PORT
                | port_no::TABLE
                | port_no::NORMAL
                | port_no::FLOOD
                | port_no::ALL
                | port_no::LOCAL
                | port_no::ANY => true,
                p => p < 0xff00,
            };
            if !ok {
                return Err(bac(
                    BadActionCode::BadOutPort,
                    "bundle member is not an output port",
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        out.put_u16(if self.dst.is_some() {
            NXAST_BUNDLE_LOAD
        } else {
            NXAST_BUNDLE
        });
        out.put_u16(self.algorithm as u16);
        out.put_u16(self.fields as u16);
        out.put_u16(self.basis);
        out.put_u32(MEMBER_TYPE);
        out.put_u16(self.members.len() as u16);
        match &self.dst {
            Some(d) => {
                out.put_u16(ofs_nbits(d));
                out.put_u32(d.field.nxm_header().unwrap_or(0));
            }
            None => zeros(out, 6),
        }
        zeros(out, 4);
        for &m in &self.members {
            out.put_u16(port_to_u16(m));
        }
    }

    /// After the experimenter id, in Open vSwitch's order (`decode_bundle`):
    /// the last of these failures is the answer: unknown fields or
    /// algorithm, too many members or another member type, non-zero
    /// reserved bytes (`OFPBAC_BAD_ARGUMENT`); for `bundle_load` an unknown
    /// destination (`OFPBAC_BAD_SET_TYPE`, at once) or one under 16 bits,
    /// for `bundle` a destination given (`OFPBAC_BAD_ARGUMENT`); no room
    /// for the members (`OFPBAC_BAD_LEN`). Then [`Bundle::check`].
    pub(crate) fn decode(len: usize, subtype: u16, mut b: Reader<'_>) -> Result<Bundle> {
        if len < 32 {
            return Err(OfpError::new(
                ErrorCode::ACTION_BAD_LEN,
                "bundle is at least 32 bytes",
            ));
        }
        let load = subtype == NXAST_BUNDLE_LOAD;
        b.skip(2)?;
        let algorithm = b.u16()?;
        let fields = b.u16()?;
        let basis = b.u16()?;
        let member_type = b.u32()?;
        let n = b.u16()? as usize;
        let ofs_nbits = b.u16()?;
        let dst_header = b.u32()?;
        let zero = b.u32()?;
        let bad_arg = bac(BadActionCode::BadArgument, "bundle arguments");
        let fields_v = HashFields::from_u16(fields);
        let alg = match algorithm {
            0 => Some(BdAlgorithm::ActiveBackup),
            1 => Some(BdAlgorithm::Hrw),
            _ => None,
        };
        let mut err = None;
        if fields_v.is_none()
            || n > BUNDLE_MAX_MEMBERS
            || alg.is_none()
            || member_type != MEMBER_TYPE
        {
            err = Some(bad_arg);
        }
        if zero != 0 {
            err = Some(bad_arg);
        }
        let dst = if load {
            let d = subfield(field_of_header(dst_header)?, ofs_nbits);
            if d.n_bits < 16 {
                err = Some(bac(
                    BadActionCode::BadArgument,
                    "bundle_load needs a destination of at least 16 bits",
                ));
            }
            Some(d)
        } else {
            if ofs_nbits != 0 || dst_header != 0 {
                err = Some(bac(BadActionCode::BadArgument, "bundle has a destination"));
            }
            None
        };
        let mut members = Vec::new();
        if b.remaining() < 2 * n {
            err = Some(OfpError::new(
                ErrorCode::ACTION_BAD_LEN,
                "bundle has no room for its members",
            ));
        } else {
            members.reserve(n);
            for _ in 0..n {
                members.push(Resubmit::port_from_u16(b.u16()?));
            }
        }
        if let Some(e) = err {
            return Err(e);
        }
        let (Some(fields), Some(algorithm)) = (fields_v, alg) else {
            return Err(bad_arg);
        };
        let bd = Bundle {
            fields,
            basis,
            algorithm,
            members,
            dst,
        };
        bd.check()?;
        Ok(bd)
    }
}
