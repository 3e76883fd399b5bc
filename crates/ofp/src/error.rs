//! OpenFlow error types and codes (spec section 7.4.4) as a typed table, and
//! [`OfpError`], the cheap `Copy` error every decoder and validator returns.
//!
//! An [`OfpError`] is exactly what the switch must answer with: the
//! `(type, code)` pair as an [`ErrorCode`], plus a static detail for humans
//! and logs. Building the OFPT_ERROR reply (with the offending bytes) is the
//! caller's job, see [`crate::framer::Rejection`].

use crate::macros::wire_enum;

wire_enum! {
    /// `ofp_error_type`.
    pub enum ErrorType: u16 {
        HelloFailed = 0 => "OFPET_HELLO_FAILED",
        BadRequest = 1 => "OFPET_BAD_REQUEST",
        BadAction = 2 => "OFPET_BAD_ACTION",
        BadInstruction = 3 => "OFPET_BAD_INSTRUCTION",
        BadMatch = 4 => "OFPET_BAD_MATCH",
        FlowModFailed = 5 => "OFPET_FLOW_MOD_FAILED",
        GroupModFailed = 6 => "OFPET_GROUP_MOD_FAILED",
        PortModFailed = 7 => "OFPET_PORT_MOD_FAILED",
        TableModFailed = 8 => "OFPET_TABLE_MOD_FAILED",
        QueueOpFailed = 9 => "OFPET_QUEUE_OP_FAILED",
        SwitchConfigFailed = 10 => "OFPET_SWITCH_CONFIG_FAILED",
        RoleRequestFailed = 11 => "OFPET_ROLE_REQUEST_FAILED",
        MeterModFailed = 12 => "OFPET_METER_MOD_FAILED",
        TableFeaturesFailed = 13 => "OFPET_TABLE_FEATURES_FAILED",
        Experimenter = 0xffff => "OFPET_EXPERIMENTER",
    }
}

wire_enum! {
    /// `ofp_hello_failed_code`.
    pub enum HelloFailedCode: u16 {
        Incompatible = 0 => "OFPHFC_INCOMPATIBLE",
        Eperm = 1 => "OFPHFC_EPERM",
    }
}

wire_enum! {
    /// `ofp_bad_request_code`.
    pub enum BadRequestCode: u16 {
        BadVersion = 0 => "OFPBRC_BAD_VERSION",
        BadType = 1 => "OFPBRC_BAD_TYPE",
        BadMultipart = 2 => "OFPBRC_BAD_MULTIPART",
        BadExperimenter = 3 => "OFPBRC_BAD_EXPERIMENTER",
        BadExpType = 4 => "OFPBRC_BAD_EXP_TYPE",
        Eperm = 5 => "OFPBRC_EPERM",
        BadLen = 6 => "OFPBRC_BAD_LEN",
        BufferEmpty = 7 => "OFPBRC_BUFFER_EMPTY",
        BufferUnknown = 8 => "OFPBRC_BUFFER_UNKNOWN",
        BadTableId = 9 => "OFPBRC_BAD_TABLE_ID",
        IsSlave = 10 => "OFPBRC_IS_SLAVE",
        BadPort = 11 => "OFPBRC_BAD_PORT",
        BadPacket = 12 => "OFPBRC_BAD_PACKET",
        MultipartBufferOverflow = 13 => "OFPBRC_MULTIPART_BUFFER_OVERFLOW",
    }
}

wire_enum! {
    /// `ofp_bad_action_code`.
    pub enum BadActionCode: u16 {
        BadType = 0 => "OFPBAC_BAD_TYPE",
        BadLen = 1 => "OFPBAC_BAD_LEN",
        BadExperimenter = 2 => "OFPBAC_BAD_EXPERIMENTER",
        BadExpType = 3 => "OFPBAC_BAD_EXP_TYPE",
        BadOutPort = 4 => "OFPBAC_BAD_OUT_PORT",
        BadArgument = 5 => "OFPBAC_BAD_ARGUMENT",
        Eperm = 6 => "OFPBAC_EPERM",
        TooMany = 7 => "OFPBAC_TOO_MANY",
        BadQueue = 8 => "OFPBAC_BAD_QUEUE",
        BadOutGroup = 9 => "OFPBAC_BAD_OUT_GROUP",
        MatchInconsistent = 10 => "OFPBAC_MATCH_INCONSISTENT",
        UnsupportedOrder = 11 => "OFPBAC_UNSUPPORTED_ORDER",
        BadTag = 12 => "OFPBAC_BAD_TAG",
        BadSetType = 13 => "OFPBAC_BAD_SET_TYPE",
        BadSetLen = 14 => "OFPBAC_BAD_SET_LEN",
        BadSetArgument = 15 => "OFPBAC_BAD_SET_ARGUMENT",
    }
}

wire_enum! {
    /// `ofp_bad_instruction_code`.
    pub enum BadInstructionCode: u16 {
        UnknownInst = 0 => "OFPBIC_UNKNOWN_INST",
        UnsupInst = 1 => "OFPBIC_UNSUP_INST",
        BadTableId = 2 => "OFPBIC_BAD_TABLE_ID",
        UnsupMetadata = 3 => "OFPBIC_UNSUP_METADATA",
        UnsupMetadataMask = 4 => "OFPBIC_UNSUP_METADATA_MASK",
        BadExperimenter = 5 => "OFPBIC_BAD_EXPERIMENTER",
        BadExpType = 6 => "OFPBIC_BAD_EXP_TYPE",
        BadLen = 7 => "OFPBIC_BAD_LEN",
        Eperm = 8 => "OFPBIC_EPERM",
    }
}

wire_enum! {
    /// `ofp_bad_match_code`.
    pub enum BadMatchCode: u16 {
        BadType = 0 => "OFPBMC_BAD_TYPE",
        BadLen = 1 => "OFPBMC_BAD_LEN",
        BadTag = 2 => "OFPBMC_BAD_TAG",
        BadDlAddrMask = 3 => "OFPBMC_BAD_DL_ADDR_MASK",
        BadNwAddrMask = 4 => "OFPBMC_BAD_NW_ADDR_MASK",
        BadWildcards = 5 => "OFPBMC_BAD_WILDCARDS",
        BadField = 6 => "OFPBMC_BAD_FIELD",
        BadValue = 7 => "OFPBMC_BAD_VALUE",
        BadMask = 8 => "OFPBMC_BAD_MASK",
        BadPrereq = 9 => "OFPBMC_BAD_PREREQ",
        DupField = 10 => "OFPBMC_DUP_FIELD",
        Eperm = 11 => "OFPBMC_EPERM",
    }
}

wire_enum! {
    /// `ofp_flow_mod_failed_code`.
    pub enum FlowModFailedCode: u16 {
        Unknown0 = 0 => "OFPFMFC_UNKNOWN",
        TableFull = 1 => "OFPFMFC_TABLE_FULL",
        BadTableId = 2 => "OFPFMFC_BAD_TABLE_ID",
        Overlap = 3 => "OFPFMFC_OVERLAP",
        Eperm = 4 => "OFPFMFC_EPERM",
        BadTimeout = 5 => "OFPFMFC_BAD_TIMEOUT",
        BadCommand = 6 => "OFPFMFC_BAD_COMMAND",
        BadFlags = 7 => "OFPFMFC_BAD_FLAGS",
    }
}

wire_enum! {
    /// `ofp_group_mod_failed_code`.
    pub enum GroupModFailedCode: u16 {
        GroupExists = 0 => "OFPGMFC_GROUP_EXISTS",
        InvalidGroup = 1 => "OFPGMFC_INVALID_GROUP",
        WeightUnsupported = 2 => "OFPGMFC_WEIGHT_UNSUPPORTED",
        OutOfGroups = 3 => "OFPGMFC_OUT_OF_GROUPS",
        OutOfBuckets = 4 => "OFPGMFC_OUT_OF_BUCKETS",
        ChainingUnsupported = 5 => "OFPGMFC_CHAINING_UNSUPPORTED",
        WatchUnsupported = 6 => "OFPGMFC_WATCH_UNSUPPORTED",
        Loop = 7 => "OFPGMFC_LOOP",
        UnknownGroup = 8 => "OFPGMFC_UNKNOWN_GROUP",
        ChainedGroup = 9 => "OFPGMFC_CHAINED_GROUP",
        BadType = 10 => "OFPGMFC_BAD_TYPE",
        BadCommand = 11 => "OFPGMFC_BAD_COMMAND",
        BadBucket = 12 => "OFPGMFC_BAD_BUCKET",
        BadWatch = 13 => "OFPGMFC_BAD_WATCH",
        Eperm = 14 => "OFPGMFC_EPERM",
        /// OpenFlow 1.5: INSERT_BUCKET or REMOVE_BUCKET names a bucket
        /// the group does not have.
        UnknownBucket = 15 => "OFPGMFC_UNKNOWN_BUCKET",
        /// OpenFlow 1.5: INSERT_BUCKET brings a bucket id the group has.
        BucketExists = 16 => "OFPGMFC_BUCKET_EXISTS",
    }
}

wire_enum! {
    /// `ofp_port_mod_failed_code`.
    pub enum PortModFailedCode: u16 {
        BadPort = 0 => "OFPPMFC_BAD_PORT",
        BadHwAddr = 1 => "OFPPMFC_BAD_HW_ADDR",
        BadConfig = 2 => "OFPPMFC_BAD_CONFIG",
        BadAdvertise = 3 => "OFPPMFC_BAD_ADVERTISE",
        Eperm = 4 => "OFPPMFC_EPERM",
    }
}

wire_enum! {
    /// `ofp_table_mod_failed_code`.
    pub enum TableModFailedCode: u16 {
        BadTable = 0 => "OFPTMFC_BAD_TABLE",
        BadConfig = 1 => "OFPTMFC_BAD_CONFIG",
        Eperm = 2 => "OFPTMFC_EPERM",
    }
}

wire_enum! {
    /// `ofp_queue_op_failed_code`.
    pub enum QueueOpFailedCode: u16 {
        BadPort = 0 => "OFPQOFC_BAD_PORT",
        BadQueue = 1 => "OFPQOFC_BAD_QUEUE",
        Eperm = 2 => "OFPQOFC_EPERM",
    }
}

wire_enum! {
    /// `ofp_switch_config_failed_code`.
    pub enum SwitchConfigFailedCode: u16 {
        BadFlags = 0 => "OFPSCFC_BAD_FLAGS",
        BadLen = 1 => "OFPSCFC_BAD_LEN",
        Eperm = 2 => "OFPSCFC_EPERM",
    }
}

wire_enum! {
    /// `ofp_role_request_failed_code`.
    pub enum RoleRequestFailedCode: u16 {
        Stale = 0 => "OFPRRFC_STALE",
        Unsup = 1 => "OFPRRFC_UNSUP",
        BadRole = 2 => "OFPRRFC_BAD_ROLE",
    }
}

wire_enum! {
    /// `ofp_meter_mod_failed_code`.
    pub enum MeterModFailedCode: u16 {
        Unknown0 = 0 => "OFPMMFC_UNKNOWN",
        MeterExists = 1 => "OFPMMFC_METER_EXISTS",
        InvalidMeter = 2 => "OFPMMFC_INVALID_METER",
        UnknownMeter = 3 => "OFPMMFC_UNKNOWN_METER",
        BadCommand = 4 => "OFPMMFC_BAD_COMMAND",
        BadFlags = 5 => "OFPMMFC_BAD_FLAGS",
        BadRate = 6 => "OFPMMFC_BAD_RATE",
        BadBurst = 7 => "OFPMMFC_BAD_BURST",
        BadBand = 8 => "OFPMMFC_BAD_BAND",
        BadBandValue = 9 => "OFPMMFC_BAD_BAND_VALUE",
        OutOfMeters = 10 => "OFPMMFC_OUT_OF_METERS",
        OutOfBands = 11 => "OFPMMFC_OUT_OF_BANDS",
    }
}

wire_enum! {
    /// `ofp_table_features_failed_code`.
    pub enum TableFeaturesFailedCode: u16 {
        BadTable = 0 => "OFPTFFC_BAD_TABLE",
        BadMetadata = 1 => "OFPTFFC_BAD_METADATA",
        BadType = 2 => "OFPTFFC_BAD_TYPE",
        BadLen = 3 => "OFPTFFC_BAD_LEN",
        BadArgument = 4 => "OFPTFFC_BAD_ARGUMENT",
        Eperm = 5 => "OFPTFFC_EPERM",
    }
}

wire_enum! {
    /// `ofp_bundle_failed_code`: the bundle errors of OpenFlow 1.4 (type
    /// 17), which OpenFlow 1.3 peers get as the ONF extension's
    /// experimenter errors: `OFPET_EXPERIMENTER` with experimenter
    /// [`ONF_EXPERIMENTER`] and exp_type 2300 + code (Open vSwitch's
    /// `ONF1.3(2300..2315)` in lib/ofp-errors.h). See
    /// [`ErrorCode::bundle`].
    pub enum BundleFailedCode: u16 {
        Unknown0 = 0 => "OFPBFC_UNKNOWN",
        Eperm = 1 => "OFPBFC_EPERM",
        BadId = 2 => "OFPBFC_BAD_ID",
        BundleExist = 3 => "OFPBFC_BUNDLE_EXIST",
        BundleClosed = 4 => "OFPBFC_BUNDLE_CLOSED",
        OutOfBundles = 5 => "OFPBFC_OUT_OF_BUNDLES",
        BadType = 6 => "OFPBFC_BAD_TYPE",
        BadFlags = 7 => "OFPBFC_BAD_FLAGS",
        MsgBadLen = 8 => "OFPBFC_MSG_BAD_LEN",
        MsgBadXid = 9 => "OFPBFC_MSG_BAD_XID",
        MsgUnsup = 10 => "OFPBFC_MSG_UNSUP",
        MsgConflict = 11 => "OFPBFC_MSG_CONFLICT",
        MsgTooMany = 12 => "OFPBFC_MSG_TOO_MANY",
        MsgFailed = 13 => "OFPBFC_MSG_FAILED",
        Timeout = 14 => "OFPBFC_TIMEOUT",
        BundleInProgress = 15 => "OFPBFC_BUNDLE_IN_PROGRESS",
    }
}

/// The Open Networking Foundation's experimenter id (its OUI, 00:4f:4e,
/// shifted left a byte: "ONF\0"), under which OpenFlow 1.3 carries the
/// 1.4 features it back-ports, bundles among them.
pub const ONF_EXPERIMENTER: u32 = 0x4f4e_4600;

/// Where the ONF extension's bundle error codes start (exp_type of
/// `OFPBFC_UNKNOWN`).
const ONF_BUNDLE_ERROR_BASE: u16 = 2300;

/// Nicira's experimenter id, under which Open vSwitch sends its own
/// errors to OpenFlow 1.2+ peers.
const NX_EXPERIMENTER: u32 = crate::action::NX_VENDOR_ID;

/// Open vSwitch's `NXBRC_UNENCODABLE_ERROR` (Nicira exp_type 10): what it
/// sends in place of an error the peer's version has no code for (under
/// OpenFlow 1.3, OpenFlow 1.5's `OFPTFFC_TOO_MANY` and
/// `OFPTFFC_BAD_FEATURES`).
pub const NXBRC_UNENCODABLE_ERROR: ErrorCode = ErrorCode::Experimenter {
    exp_type: 10,
    experimenter: NX_EXPERIMENTER,
};

/// Open vSwitch's `NXTFFC_DUP_TABLE` (Nicira exp_type 44): a
/// TABLE_FEATURES request that names a table twice.
pub const NXTFFC_DUP_TABLE: ErrorCode = ErrorCode::Experimenter {
    exp_type: 44,
    experimenter: NX_EXPERIMENTER,
};

/// `OFPBRC_MULTIPART_REQUEST_TIMEOUT` as OpenFlow 1.3 carries it (the ONF
/// extension's exp_type 2640; OpenFlow 1.4's bad-request code 14): a
/// multipart request whose next part did not come in time.
pub const OFPBRC_MULTIPART_REQUEST_TIMEOUT: ErrorCode = ErrorCode::Experimenter {
    exp_type: 2640,
    experimenter: ONF_EXPERIMENTER,
};

/// `OFPBPC_BAD_EXPERIMENTER` as OpenFlow 1.3 carries it (the ONF
/// extension's exp_type 4445): an experimenter property with experimenter
/// id 0.
pub const OFPBPC_BAD_EXPERIMENTER: ErrorCode = ErrorCode::Experimenter {
    exp_type: 4445,
    experimenter: ONF_EXPERIMENTER,
};

/// `OFPBPC_BAD_EXP_TYPE` as OpenFlow 1.3 carries it (the ONF extension's
/// exp_type 4446): an experimenter property the switch does not know.
pub const OFPBPC_BAD_EXP_TYPE: ErrorCode = ErrorCode::Experimenter {
    exp_type: 4446,
    experimenter: ONF_EXPERIMENTER,
};

/// The experimenter errors outside the bundle range that have names:
/// (experimenter, exp_type, name), as Open vSwitch's lib/ofp-errors.h
/// numbers them for OpenFlow 1.3.
const NAMED_EXPERIMENTER_ERRORS: &[(u32, u16, &str)] = &[
    (NX_EXPERIMENTER, 4, "NXBRC_MUST_BE_ZERO"),
    (NX_EXPERIMENTER, 10, "NXBRC_UNENCODABLE_ERROR"),
    (NX_EXPERIMENTER, 44, "NXTFFC_DUP_TABLE"),
    (ONF_EXPERIMENTER, 2640, "OFPBRC_MULTIPART_REQUEST_TIMEOUT"),
    (ONF_EXPERIMENTER, 4445, "OFPBPC_BAD_EXPERIMENTER"),
    (ONF_EXPERIMENTER, 4446, "OFPBPC_BAD_EXP_TYPE"),
];

/// A typed `(type, code)` pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    HelloFailed(HelloFailedCode),
    BadRequest(BadRequestCode),
    BadAction(BadActionCode),
    BadInstruction(BadInstructionCode),
    BadMatch(BadMatchCode),
    FlowModFailed(FlowModFailedCode),
    GroupModFailed(GroupModFailedCode),
    PortModFailed(PortModFailedCode),
    TableModFailed(TableModFailedCode),
    QueueOpFailed(QueueOpFailedCode),
    SwitchConfigFailed(SwitchConfigFailedCode),
    RoleRequestFailed(RoleRequestFailedCode),
    MeterModFailed(MeterModFailedCode),
    TableFeaturesFailed(TableFeaturesFailedCode),
    /// `OFPET_EXPERIMENTER`: `exp_type` sits where the code would be.
    Experimenter {
        exp_type: u16,
        experimenter: u32,
    },
    /// An error type this implementation has no name for.
    Unknown {
        ty: u16,
        code: u16,
    },
}

impl ErrorCode {
    /// Builds from the wire pair (`experimenter` only used for type 0xffff).
    pub fn from_wire(ty: u16, code: u16, experimenter: u32) -> Self {
        match ErrorType::from(ty) {
            ErrorType::HelloFailed => Self::HelloFailed(code.into()),
            ErrorType::BadRequest => Self::BadRequest(code.into()),
            ErrorType::BadAction => Self::BadAction(code.into()),
            ErrorType::BadInstruction => Self::BadInstruction(code.into()),
            ErrorType::BadMatch => Self::BadMatch(code.into()),
            ErrorType::FlowModFailed => Self::FlowModFailed(code.into()),
            ErrorType::GroupModFailed => Self::GroupModFailed(code.into()),
            ErrorType::PortModFailed => Self::PortModFailed(code.into()),
            ErrorType::TableModFailed => Self::TableModFailed(code.into()),
            ErrorType::QueueOpFailed => Self::QueueOpFailed(code.into()),
            ErrorType::SwitchConfigFailed => Self::SwitchConfigFailed(code.into()),
            ErrorType::RoleRequestFailed => Self::RoleRequestFailed(code.into()),
            ErrorType::MeterModFailed => Self::MeterModFailed(code.into()),
            ErrorType::TableFeaturesFailed => Self::TableFeaturesFailed(code.into()),
            ErrorType::Experimenter => Self::Experimenter {
                exp_type: code,
                experimenter,
            },
            ErrorType::Unknown(ty) => Self::Unknown { ty, code },
        }
    }

    /// The wire `(type, code)` pair.
    pub fn type_code(self) -> (u16, u16) {
        match self {
            Self::HelloFailed(c) => (0, c.value()),
            Self::BadRequest(c) => (1, c.value()),
            Self::BadAction(c) => (2, c.value()),
            Self::BadInstruction(c) => (3, c.value()),
            Self::BadMatch(c) => (4, c.value()),
            Self::FlowModFailed(c) => (5, c.value()),
            Self::GroupModFailed(c) => (6, c.value()),
            Self::PortModFailed(c) => (7, c.value()),
            Self::TableModFailed(c) => (8, c.value()),
            Self::QueueOpFailed(c) => (9, c.value()),
            Self::SwitchConfigFailed(c) => (10, c.value()),
            Self::RoleRequestFailed(c) => (11, c.value()),
            Self::MeterModFailed(c) => (12, c.value()),
            Self::TableFeaturesFailed(c) => (13, c.value()),
            Self::Experimenter { exp_type, .. } => (0xffff, exp_type),
            Self::Unknown { ty, code } => (ty, code),
        }
    }

    /// The error type.
    pub fn error_type(self) -> ErrorType {
        ErrorType::from(self.type_code().0)
    }

    /// The ONF extension's bundle error `code` (OpenFlow 1.3's form of
    /// OpenFlow 1.4's OFPET_BUNDLE_FAILED).
    pub fn bundle(code: BundleFailedCode) -> Self {
        Self::Experimenter {
            exp_type: ONF_BUNDLE_ERROR_BASE.wrapping_add(code.value()),
            experimenter: ONF_EXPERIMENTER,
        }
    }

    /// The bundle error this is, if it is one of the ONF extension's
    /// (exp_type 2300-2315 under [`ONF_EXPERIMENTER`]).
    pub fn bundle_code(self) -> Option<BundleFailedCode> {
        match self {
            Self::Experimenter {
                exp_type,
                experimenter: ONF_EXPERIMENTER,
            } => {
                let c = BundleFailedCode::from(exp_type.checked_sub(ONF_BUNDLE_ERROR_BASE)?);
                c.name().map(|_| c)
            }
            _ => None,
        }
    }

    /// The code's spec name (`OFPBRC_BAD_LEN`), if it has one.
    pub fn code_name(self) -> Option<&'static str> {
        match self {
            Self::HelloFailed(c) => c.name(),
            Self::BadRequest(c) => c.name(),
            Self::BadAction(c) => c.name(),
            Self::BadInstruction(c) => c.name(),
            Self::BadMatch(c) => c.name(),
            Self::FlowModFailed(c) => c.name(),
            Self::GroupModFailed(c) => c.name(),
            Self::PortModFailed(c) => c.name(),
            Self::TableModFailed(c) => c.name(),
            Self::QueueOpFailed(c) => c.name(),
            Self::SwitchConfigFailed(c) => c.name(),
            Self::RoleRequestFailed(c) => c.name(),
            Self::MeterModFailed(c) => c.name(),
            Self::TableFeaturesFailed(c) => c.name(),
            Self::Experimenter {
                exp_type,
                experimenter,
            } => self
                .bundle_code()
                .and_then(BundleFailedCode::name)
                .or_else(|| {
                    NAMED_EXPERIMENTER_ERRORS
                        .iter()
                        .find(|(e, t, _)| (*e, *t) == (experimenter, exp_type))
                        .map(|(_, _, n)| *n)
                }),
            Self::Unknown { .. } => None,
        }
    }
}

impl std::fmt::Display for ErrorCode {
    /// `OFPET_BAD_REQUEST/OFPBRC_BAD_LEN`, or numbers where there is no
    /// name; the experimenter errors with names (the ONF bundle errors,
    /// Open vSwitch's) as `OFPET_EXPERIMENTER/OFPBFC_MSG_FAILED`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (ty, code) = self.type_code();
        if let (Self::Experimenter { .. }, Some(n)) = (self, self.code_name()) {
            return write!(f, "{}/{n}", ErrorType::Experimenter);
        }
        match self {
            Self::Experimenter {
                exp_type,
                experimenter,
            } => {
                write!(
                    f,
                    "OFPET_EXPERIMENTER(experimenter=0x{experimenter:x},exp_type={exp_type})"
                )
            }
            _ => {
                write!(f, "{}/", ErrorType::from(ty))?;
                match self.code_name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{code}"),
                }
            }
        }
    }
}

/// Shorthands for the codes decoders use most.
impl ErrorCode {
    pub const BAD_LEN: ErrorCode = ErrorCode::BadRequest(BadRequestCode::BadLen);
    pub const MATCH_BAD_LEN: ErrorCode = ErrorCode::BadMatch(BadMatchCode::BadLen);
    pub const ACTION_BAD_LEN: ErrorCode = ErrorCode::BadAction(BadActionCode::BadLen);
    pub const INST_BAD_LEN: ErrorCode = ErrorCode::BadInstruction(BadInstructionCode::BadLen);
}

/// The error every decoder and validator returns: what to answer, and why.
///
/// `Copy` and allocation-free so that it is cheap on hot paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {detail}")]
pub struct OfpError {
    /// The OpenFlow error the switch must send.
    pub code: ErrorCode,
    /// A short human explanation (never sent on the wire).
    pub detail: &'static str,
}

impl OfpError {
    pub const fn new(code: ErrorCode, detail: &'static str) -> Self {
        OfpError { code, detail }
    }
}

/// Result alias for this crate.
pub type Result<T, E = OfpError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_pair_round_trips_for_every_named_code() {
        for ty in ErrorType::KNOWN {
            for code in 0..20u16 {
                let c = ErrorCode::from_wire(ty.value(), code, 0x2320);
                let (t2, c2) = c.type_code();
                assert_eq!((t2, c2), (ty.value(), code));
            }
        }
    }

    #[test]
    fn display_names_type_and_code() {
        let c = ErrorCode::BadMatch(BadMatchCode::BadPrereq);
        assert_eq!(c.to_string(), "OFPET_BAD_MATCH/OFPBMC_BAD_PREREQ");
        assert_eq!(
            ErrorCode::from_wire(1, 99, 0).to_string(),
            "OFPET_BAD_REQUEST/99"
        );
    }

    #[test]
    fn bundle_errors_are_onf_experimenter_errors_with_names() {
        for (i, c) in BundleFailedCode::KNOWN.iter().enumerate() {
            let e = ErrorCode::bundle(*c);
            // Type 0xffff, exp_type 2300 + code, experimenter "ONF\0".
            assert_eq!(e.type_code(), (0xffff, 2300 + i as u16));
            assert_eq!(
                ErrorCode::from_wire(0xffff, 2300 + i as u16, ONF_EXPERIMENTER),
                e
            );
            assert_eq!(e.bundle_code(), Some(*c));
            assert_eq!(e.code_name(), c.name());
        }
        let failed = ErrorCode::bundle(BundleFailedCode::MsgFailed);
        assert_eq!(failed.to_string(), "OFPET_EXPERIMENTER/OFPBFC_MSG_FAILED");
        // Another experimenter's 2313, or an ONF code past the table, has no name.
        let other = ErrorCode::from_wire(0xffff, 2313, 0x2320);
        assert_eq!(other.bundle_code(), None);
        assert_eq!(
            other.to_string(),
            "OFPET_EXPERIMENTER(experimenter=0x2320,exp_type=2313)"
        );
        assert_eq!(
            ErrorCode::from_wire(0xffff, 2316, ONF_EXPERIMENTER).bundle_code(),
            None
        );
        assert_eq!(
            ErrorCode::from_wire(0xffff, 7, ONF_EXPERIMENTER).bundle_code(),
            None
        );
    }

    #[test]
    fn open_vswitch_experimenter_errors_have_names() {
        assert_eq!(
            NXTFFC_DUP_TABLE.to_string(),
            "OFPET_EXPERIMENTER/NXTFFC_DUP_TABLE"
        );
        assert_eq!(
            ErrorCode::from_wire(0xffff, 10, 0x2320),
            NXBRC_UNENCODABLE_ERROR
        );
        assert_eq!(
            OFPBRC_MULTIPART_REQUEST_TIMEOUT.code_name(),
            Some("OFPBRC_MULTIPART_REQUEST_TIMEOUT")
        );
        assert_eq!(OFPBPC_BAD_EXP_TYPE.type_code(), (0xffff, 4446));
        // The same exp_type under another experimenter has none.
        assert_eq!(
            ErrorCode::from_wire(0xffff, 44, ONF_EXPERIMENTER).code_name(),
            None
        );
    }
}
