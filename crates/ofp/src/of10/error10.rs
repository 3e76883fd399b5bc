//! OpenFlow 1.0 error types and codes to and from the internal
//! [`ErrorCode`] (1.3's numbering), as Open vSwitch's lib/ofp-errors.h
//! numbers each error per version.
//!
//! Contract:
//! * An error 1.0 has a code for (`OF1.0(t,c)` there) is written as that
//!   `(type, code)`: hello-failed, most bad-request and bad-action codes,
//!   flow-mod-failed (1.0's type 3: `ALL_TABLES_FULL` 0, `OVERLAP` 1,
//!   `EPERM` 2, `BAD_EMERG_TIMEOUT` 3, `BAD_COMMAND` 4, `UNSUPPORTED` 5),
//!   port-mod-failed (type 4) and queue-op-failed (type 5).
//! * An error Open vSwitch gives a Nicira 1.0 code (`NX1.0(t,c)`) is
//!   written as its vendor error: type `NXET_VENDOR` (0xb0c2), code
//!   `NXVC_VENDOR_ERROR` (0), then `nx_vendor_error` {vendor 0x00002320,
//!   type t, code c}, as `ofperr_encode_msg__` does for 1.0 (e.g.
//!   `OFPBAC_MATCH_INCONSISTENT` is NX(1,522), every group-mod error
//!   NX(6,c), `OFPBRC_BAD_TABLE_ID` NX(1,512)).
//! * An error with neither (meters, table-mod, switch-config, most
//!   bad-match and bad-instruction codes, bundle errors, unknown
//!   experimenter errors) is written as Open vSwitch writes what it cannot
//!   encode: `NXBRC_UNENCODABLE_ERROR`, NX(1,521).
//! * 1.0 has one code the internal form lacks: `OFPFMFC_BAD_EMERG_TIMEOUT`
//!   (3,3), which sluice's 1.0 FLOW_MOD decoder gives an emergency flow
//!   with a timeout, as Open vSwitch does. It is carried internally as
//!   `OFPFMFC_BAD_TIMEOUT` (1.3's (5,5)), which in turn has no 1.0 code of
//!   its own, so the two map onto each other. 1.0's `OFPFMFC_UNSUPPORTED`
//!   (3,5) is read as `OFPBAC_UNSUPPORTED_ORDER`, the 1.1+ error Open
//!   vSwitch gives in its place, and written back as (3,5).
//! * Reading: the reverse of the above; a pair with no meaning here is
//!   kept as [`ErrorCode::Unknown`] with its 1.0 numbers (and written back
//!   as they are); a vendor error of another vendor is
//!   [`ErrorCode::Experimenter`] with its vendor and the vendor's type as
//!   `exp_type`.

use bytes::{BufMut, Bytes};

use crate::action::NX_VENDOR_ID;
use crate::error::Result;
use crate::error::{
    BadActionCode as Bac, BadInstructionCode as Bic, BadMatchCode as Bmc, BadRequestCode as Brc,
    ErrorCode, FlowModFailedCode as Fmf, GroupModFailedCode, HelloFailedCode,
    PortModFailedCode as Pmf, QueueOpFailedCode, RoleRequestFailedCode,
    TableFeaturesFailedCode as Tff, NXBRC_UNENCODABLE_ERROR, OFPBPC_BAD_EXPERIMENTER,
    OFPBPC_BAD_EXP_TYPE,
};
use crate::msg::simple::ErrorMsg;
use crate::wire::Reader;

/// `NXET_VENDOR`: the error type of Nicira's vendor errors under 1.0.
pub const NXET_VENDOR: u16 = 0xb0c2;
/// `NXVC_VENDOR_ERROR`.
pub const NXVC_VENDOR_ERROR: u16 = 0;

/// How an error goes on a 1.0 wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire10 {
    /// `(type, code)` of the 1.0 spec.
    Std(u16, u16),
    /// A Nicira vendor error `(type, code)` (vendor 0x00002320).
    Nx(u16, u16),
    /// Another vendor's error: (vendor, type, code).
    Vendor(u32, u16, u16),
}

/// Nicira's 1.0 codes for errors 1.3 carries as experimenter errors.
const NX_EXPERIMENTER_10: &[(ErrorCode, u16, u16)] = &[
    (crate::action::NXBRC_MUST_BE_ZERO, 1, 515),
    (NXBRC_UNENCODABLE_ERROR, 1, 521),
    (crate::msg::nx_flow::NXBRC_NXM_INVALID, 1, 256),
    (crate::msg::nx_flow::monitor::OFPMOFC_MONITOR_EXISTS, 1, 517),
    (crate::msg::nx_flow::monitor::OFPMOFC_BAD_FLAGS, 1, 518),
    (
        crate::msg::nx_flow::monitor::OFPMOFC_UNKNOWN_MONITOR,
        1,
        519,
    ),
    (crate::msg::nx_flow::monitor::NXBRC_FM_BAD_EVENT, 1, 520),
    // The Geneve option table's (ofp-errors.h: "NX1.0-1.1(1,527)"...).
    (crate::msg::tlv_table::NXTTMFC_BAD_COMMAND, 1, 527),
    (crate::msg::tlv_table::NXTTMFC_BAD_OPT_LEN, 1, 528),
    (crate::msg::tlv_table::NXTTMFC_BAD_FIELD_IDX, 1, 529),
    (crate::msg::tlv_table::NXTTMFC_TABLE_FULL, 1, 530),
    (crate::msg::tlv_table::NXTTMFC_ALREADY_MAPPED, 1, 531),
    (crate::msg::tlv_table::NXTTMFC_DUP_ENTRY, 1, 532),
    (crate::msg::tlv_table::NXFMFC_INVALID_TLV_FIELD, 1, 536),
    (crate::msg::tlv_table::NXTTMFC_INVALID_TLV_DEL, 1, 537),
    (OFPBPC_BAD_EXPERIMENTER, 14, 5),
    (OFPBPC_BAD_EXP_TYPE, 14, 6),
];

/// The 1.0 form of an internal error (module doc).
pub fn to_10(c: ErrorCode) -> Wire10 {
    use ErrorCode as E;
    use Wire10::{Nx, Std};
    let unencodable = Nx(1, 521);
    match c {
        E::HelloFailed(h) => match h {
            HelloFailedCode::Unknown(_) => unencodable,
            _ => Std(0, h.value()),
        },
        E::BadRequest(b) => match b {
            Brc::BadTableId => Nx(1, 512),
            Brc::IsSlave => Std(1, 5),
            Brc::BadPort => Nx(1, 514),
            Brc::BadPacket | Brc::MultipartBufferOverflow | Brc::Unknown(_) => unencodable,
            _ => Std(1, b.value()),
        },
        E::BadAction(a) => match a {
            Bac::BadOutGroup => Nx(2, 9),
            Bac::MatchInconsistent => Nx(1, 522),
            Bac::UnsupportedOrder => Std(3, 5),
            Bac::BadSetType => Nx(1, 523),
            Bac::BadSetLen => Nx(1, 524),
            Bac::BadSetArgument => Nx(1, 525),
            Bac::BadTag | Bac::Unknown(_) => unencodable,
            _ => Std(2, a.value()),
        },
        E::BadInstruction(Bic::UnsupInst) => Nx(2, 257),
        E::BadMatch(m) => match m {
            Bmc::BadWildcards => Nx(1, 262),
            Bmc::BadField => Nx(0, 263),
            Bmc::BadValue => Nx(1, 258),
            Bmc::BadMask => Nx(1, 259),
            Bmc::BadPrereq => Nx(1, 260),
            Bmc::DupField => Nx(1, 261),
            _ => unencodable,
        },
        E::FlowModFailed(f) => match f {
            Fmf::TableFull => Std(3, 0),
            Fmf::Overlap => Std(3, 1),
            Fmf::Eperm => Std(3, 2),
            Fmf::BadTimeout => Std(3, 3),
            Fmf::BadCommand => Std(3, 4),
            Fmf::BadFlags => Nx(3, 258),
            _ => unencodable,
        },
        E::GroupModFailed(g) => match g {
            GroupModFailedCode::Unknown(_) => unencodable,
            _ => Nx(6, g.value()),
        },
        E::PortModFailed(Pmf::BadPort) => Std(4, 0),
        E::PortModFailed(Pmf::BadHwAddr) => Std(4, 1),
        E::QueueOpFailed(q) => match q {
            QueueOpFailedCode::Unknown(_) => unencodable,
            _ => Std(5, q.value()),
        },
        E::RoleRequestFailed(RoleRequestFailedCode::BadRole) => Nx(1, 513),
        E::TableFeaturesFailed(t @ (Tff::BadType | Tff::BadLen | Tff::BadArgument)) => {
            Nx(13, t.value())
        }
        E::Experimenter {
            experimenter,
            exp_type,
        } => NX_EXPERIMENTER_10
            .iter()
            .find(|(e, _, _)| *e == c)
            .map(|&(_, t, code)| Nx(t, code))
            .unwrap_or(if experimenter == NX_VENDOR_ID {
                unencodable
            } else {
                Wire10::Vendor(experimenter, exp_type, 0)
            }),
        E::Unknown { ty, code } => Std(ty, code),
        _ => unencodable,
    }
}

/// The internal error a 1.0 one means (module doc).
pub fn from_10(w: Wire10) -> ErrorCode {
    use ErrorCode as E;
    match w {
        Wire10::Std(ty, code) => match (ty, code) {
            (0, 0..=1) => E::HelloFailed(code.into()),
            (1, 0..=8) => E::BadRequest(code.into()),
            (2, 0..=8) => E::BadAction(code.into()),
            (3, 0) => E::FlowModFailed(Fmf::TableFull),
            (3, 1) => E::FlowModFailed(Fmf::Overlap),
            (3, 2) => E::FlowModFailed(Fmf::Eperm),
            (3, 3) => E::FlowModFailed(Fmf::BadTimeout),
            (3, 4) => E::FlowModFailed(Fmf::BadCommand),
            (3, 5) => E::BadAction(Bac::UnsupportedOrder),
            (4, 0) => E::PortModFailed(Pmf::BadPort),
            (4, 1) => E::PortModFailed(Pmf::BadHwAddr),
            (5, 0..=2) => E::QueueOpFailed(code.into()),
            _ => E::Unknown { ty, code },
        },
        Wire10::Nx(ty, code) => {
            if let Some(&(e, _, _)) = NX_EXPERIMENTER_10
                .iter()
                .find(|(_, t, c)| (*t, *c) == (ty, code))
            {
                return e;
            }
            match (ty, code) {
                (1, 512) => E::BadRequest(Brc::BadTableId),
                (1, 514) => E::BadRequest(Brc::BadPort),
                (2, 9) => E::BadAction(Bac::BadOutGroup),
                (1, 522) => E::BadAction(Bac::MatchInconsistent),
                (1, 523) => E::BadAction(Bac::BadSetType),
                (1, 524) => E::BadAction(Bac::BadSetLen),
                (1, 525) => E::BadAction(Bac::BadSetArgument),
                (2, 257) => E::BadInstruction(Bic::UnsupInst),
                (1, 262) => E::BadMatch(Bmc::BadWildcards),
                (0, 263) => E::BadMatch(Bmc::BadField),
                (1, 258) => E::BadMatch(Bmc::BadValue),
                (1, 259) => E::BadMatch(Bmc::BadMask),
                (1, 260) => E::BadMatch(Bmc::BadPrereq),
                (1, 261) => E::BadMatch(Bmc::DupField),
                (3, 258) => E::FlowModFailed(Fmf::BadFlags),
                (6, 0..=14) => E::GroupModFailed(code.into()),
                (1, 513) => E::RoleRequestFailed(RoleRequestFailedCode::BadRole),
                (13, 2..=4) => E::TableFeaturesFailed(code.into()),
                _ => NXBRC_UNENCODABLE_ERROR,
            }
        }
        Wire10::Vendor(experimenter, ty, _) => E::Experimenter {
            exp_type: ty,
            experimenter,
        },
    }
}

/// Appends the OFPT_ERROR body of `e` as 1.0 writes it.
pub fn encode_error(e: &ErrorMsg, out: &mut Vec<u8>) {
    match to_10(e.code) {
        Wire10::Std(ty, code) => {
            out.put_u16(ty);
            out.put_u16(code);
        }
        Wire10::Nx(ty, code) => {
            out.put_u16(NXET_VENDOR);
            out.put_u16(NXVC_VENDOR_ERROR);
            out.put_u32(NX_VENDOR_ID);
            out.put_u16(ty);
            out.put_u16(code);
        }
        Wire10::Vendor(vendor, ty, code) => {
            out.put_u16(NXET_VENDOR);
            out.put_u16(NXVC_VENDOR_ERROR);
            out.put_u32(vendor);
            out.put_u16(ty);
            out.put_u16(code);
        }
    }
    out.extend_from_slice(&e.data);
}

/// Reads a 1.0 OFPT_ERROR body.
pub fn decode_error(r: &mut Reader<'_>) -> Result<ErrorMsg> {
    let ty = r.u16()?;
    let code = r.u16()?;
    let w = if ty == NXET_VENDOR && code == NXVC_VENDOR_ERROR && r.remaining() >= 8 {
        let vendor = r.u32()?;
        let (t, c) = (r.u16()?, r.u16()?);
        if vendor == NX_VENDOR_ID {
            Wire10::Nx(t, c)
        } else {
            Wire10::Vendor(vendor, t, c)
        }
    } else {
        Wire10::Std(ty, code)
    };
    let data: Bytes = r.rest();
    Ok(ErrorMsg {
        code: from_10(w),
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_codes_keep_their_numbers() {
        let cases = [
            (ErrorCode::BadRequest(Brc::BadLen), Wire10::Std(1, 6)),
            (ErrorCode::BadRequest(Brc::BadMultipart), Wire10::Std(1, 2)),
            (ErrorCode::BadAction(Bac::BadOutPort), Wire10::Std(2, 4)),
            (ErrorCode::FlowModFailed(Fmf::TableFull), Wire10::Std(3, 0)),
            (ErrorCode::FlowModFailed(Fmf::Overlap), Wire10::Std(3, 1)),
            (ErrorCode::FlowModFailed(Fmf::BadCommand), Wire10::Std(3, 4)),
            (ErrorCode::PortModFailed(Pmf::BadHwAddr), Wire10::Std(4, 1)),
            (
                ErrorCode::QueueOpFailed(QueueOpFailedCode::BadQueue),
                Wire10::Std(5, 1),
            ),
            (
                ErrorCode::BadAction(Bac::MatchInconsistent),
                Wire10::Nx(1, 522),
            ),
            (ErrorCode::BadRequest(Brc::BadTableId), Wire10::Nx(1, 512)),
            (
                ErrorCode::GroupModFailed(GroupModFailedCode::Loop),
                Wire10::Nx(6, 7),
            ),
            (NXBRC_UNENCODABLE_ERROR, Wire10::Nx(1, 521)),
        ];
        for (c, w) in cases {
            assert_eq!(to_10(c), w, "{c:?}");
            assert_eq!(from_10(w), c, "{w:?}");
        }
        // The slave error is 1.0's bad-request EPERM.
        assert_eq!(
            to_10(ErrorCode::BadRequest(Brc::IsSlave)),
            Wire10::Std(1, 5)
        );
        // No 1.0 form: unencodable, as Open vSwitch.
        assert_eq!(
            to_10(ErrorCode::MeterModFailed(
                crate::error::MeterModFailedCode::BadRate
            )),
            Wire10::Nx(1, 521)
        );
    }

    /// `ovs-ofctl ofp-print` reads 01 01 00 18 .. b0 c2 00 00 00 00 23 20
    /// 00 01 02 0a as OFPBAC_MATCH_INCONSISTENT (NX1.0(1,522)).
    #[test]
    fn vendor_error_golden_bytes() {
        let e = ErrorMsg {
            code: ErrorCode::BadAction(Bac::MatchInconsistent),
            data: Bytes::from_static(&[1, 2, 3, 4]),
        };
        let mut out = Vec::new();
        encode_error(&e, &mut out);
        assert_eq!(
            out,
            [0xb0, 0xc2, 0, 0, 0, 0, 0x23, 0x20, 0, 1, 0x02, 0x0a, 1, 2, 3, 4]
        );
        let b = Bytes::from(out);
        let mut r = Reader::new(&b, ErrorCode::BAD_LEN);
        assert_eq!(decode_error(&mut r).unwrap(), e);
    }
}
