//! Open vSwitch's connection-tracking flush messages (Nicira experimenter
//! messages, as Open vSwitch 3.1 sends them under OpenFlow 1.3;
//! `include/openflow/nicira-ext.h`, `lib/ofp-ct.c`):
//!
//! * `NXT_CT_FLUSH_ZONE` (29): six zero bytes (else `NXBRC_MUST_BE_ZERO`)
//!   and a zone: flush every connection of the zone. Another body length
//!   is `OFPBRC_BAD_LEN`.
//! * `NXT_CT_FLUSH` (32): an IP protocol, seven zero bytes (else
//!   `NXBRC_MUST_BE_ZERO`), then properties (type, length, value, zero
//!   padding to 8): `NXT_CT_ORIG_TUPLE` (0) and `NXT_CT_REPLY_TUPLE` (1),
//!   each holding nested properties (after four bytes of padding) of a
//!   tuple, and `NXT_CT_ZONE_ID` (2, u16). A body that is not 8 bytes and
//!   a multiple of 8 is `OFPBRC_BAD_LEN`.
//!
//! Decoding is Open vSwitch's `ofp_ct_match_decode`: properties of types
//! it does not know are skipped (outer and nested); a property shorter
//! than its header or running past its container is `OFPBPC_BAD_LEN`, as
//! is a value shorter than its type (OpenFlow 1.3 carries it as
//! `OFPTFFC_BAD_LEN`); an address of the other family than one before it
//! in the message is `OFPBPC_BAD_VALUE` (`OFPTFFC_BAD_ARGUMENT`); an
//! experimenter property (type 0xffff) of experimenter 0 is
//! `OFPBPC_BAD_EXPERIMENTER`, another one is skipped. Encoding is Open
//! vSwitch's `ofp_ct_match_encode`: a tuple's addresses when not zero,
//! its ports when not zero (or, for ICMP and ICMPv6, its id, type and code
//! always), a tuple only when it has something, the zone when given.
//! Properties Open vSwitch skips are not kept.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::{BufMut, Bytes};

use crate::error::{ErrorCode, OfpError, Result, TableFeaturesFailedCode, OFPBPC_BAD_EXPERIMENTER};

/// `NXT_CT_ORIG_TUPLE`.
const ORIG_TUPLE: u16 = 0;
/// `NXT_CT_REPLY_TUPLE`.
const REPLY_TUPLE: u16 = 1;
/// `NXT_CT_ZONE_ID`.
const ZONE_ID: u16 = 2;

const TUPLE_SRC: u16 = 0;
const TUPLE_DST: u16 = 1;
const TUPLE_SRC_PORT: u16 = 2;
const TUPLE_DST_PORT: u16 = 3;
const TUPLE_ICMP_ID: u16 = 4;
const TUPLE_ICMP_TYPE: u16 = 5;
const TUPLE_ICMP_CODE: u16 = 6;

/// `OFPBPC_BAD_LEN` as OpenFlow 1.3 carries it.
pub const OFPBPC_BAD_LEN: ErrorCode =
    ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::BadLen);
/// `OFPBPC_BAD_VALUE` as OpenFlow 1.3 carries it.
pub const OFPBPC_BAD_VALUE: ErrorCode =
    ErrorCode::TableFeaturesFailed(TableFeaturesFailedCode::BadArgument);

/// One direction's tuple of the connections to flush (Open vSwitch's
/// `ofp_ct_tuple`): each part 0 when any will do. Addresses are IPv6, an
/// IPv4 one mapped (`::ffff:a.b.c.d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CtTuple {
    pub src: u128,
    pub dst: u128,
    pub src_port: u16,
    pub dst_port: u16,
    pub icmp_id: u16,
    pub icmp_type: u8,
    pub icmp_code: u8,
}

/// `NXT_CT_FLUSH`: flush the connections that match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CtFlush {
    /// The zone (`None`: every zone; NXT_CT_ZONE_ID absent).
    pub zone: Option<u16>,
    /// The IP protocol (0: any).
    pub ip_proto: u8,
    pub orig: CtTuple,
    pub reply: CtTuple,
}

fn is_icmp(proto: u8) -> bool {
    proto == 1 || proto == 58
}

/// An address's family: 4, 6, or 0 for zero.
fn family(a: u128) -> u8 {
    if a == 0 {
        0
    } else if Ipv6Addr::from(a).to_ipv4_mapped().is_some() {
        4
    } else {
        6
    }
}

/// Reads properties of 8-byte alignment from `b`: (type, value) or the
/// error Open vSwitch's `ofpprop_pull` gives. Experimenter properties of
/// a non-zero experimenter come back with type `None`.
fn props(mut b: &[u8]) -> Result<Vec<(Option<u16>, &[u8])>> {
    let mut v = Vec::new();
    while !b.is_empty() {
        let bad = || OfpError::new(OFPBPC_BAD_LEN, "ct flush: property length");
        if b.len() < 4 {
            return Err(bad());
        }
        let ty = u16::from_be_bytes([b[0], b[1]]);
        let len = u16::from_be_bytes([b[2], b[3]]) as usize;
        let padded = len.div_ceil(8) * 8;
        if len < 4 || padded > b.len() {
            return Err(bad());
        }
        if ty == 0xffff {
            if len < 12 {
                return Err(bad());
            }
            if b[4..8] == [0; 4] {
                return Err(OfpError::new(
                    OFPBPC_BAD_EXPERIMENTER,
                    "ct flush: experimenter property of experimenter 0",
                ));
            }
            v.push((None, &b[12..len]));
        } else {
            v.push((Some(ty), &b[4..len]));
        }
        b = &b[padded..];
    }
    Ok(v)
}

fn short() -> OfpError {
    OfpError::new(OFPBPC_BAD_LEN, "ct flush: property value too short")
}

fn be16(v: &[u8]) -> Result<u16> {
    v.get(..2)
        .map(|x| u16::from_be_bytes([x[0], x[1]]))
        .ok_or_else(short)
}

impl CtTuple {
    /// The tuple of a nested property (after its header), `family` the
    /// address family seen so far in the message (0: none).
    fn decode(v: &[u8], fam: &mut u8) -> Result<CtTuple> {
        // Nested properties start 8 bytes into the property.
        let nested = v.get(4..).ok_or_else(short)?;
        let mut t = CtTuple::default();
        for (ty, v) in props(nested)? {
            match ty {
                Some(TUPLE_SRC | TUPLE_DST) => {
                    let a: [u8; 16] = v
                        .get(..16)
                        .ok_or_else(short)?
                        .try_into()
                        .map_err(|_| short())?;
                    let a = u128::from_be_bytes(a);
                    let f = family(a);
                    if *fam != 0 && f != 0 && *fam != f {
                        return Err(OfpError::new(
                            OFPBPC_BAD_VALUE,
                            "ct flush: IPv4 and IPv6 addresses together",
                        ));
                    }
                    *fam = f;
                    if ty == Some(TUPLE_SRC) {
                        t.src = a;
                    } else {
                        t.dst = a;
                    }
                }
                Some(TUPLE_SRC_PORT) => t.src_port = be16(v)?,
                Some(TUPLE_DST_PORT) => t.dst_port = be16(v)?,
                Some(TUPLE_ICMP_ID) => t.icmp_id = be16(v)?,
                Some(TUPLE_ICMP_TYPE) => t.icmp_type = *v.first().ok_or_else(short)?,
                Some(TUPLE_ICMP_CODE) => t.icmp_code = *v.first().ok_or_else(short)?,
                _ => {}
            }
        }
        Ok(t)
    }

    fn encode(&self, ty: u16, ip_proto: u8, out: &mut Vec<u8>) {
        let mut n = Vec::new();
        if self.src != 0 {
            put_prop(&mut n, TUPLE_SRC, &self.src.to_be_bytes());
        }
        if self.dst != 0 {
            put_prop(&mut n, TUPLE_DST, &self.dst.to_be_bytes());
        }
        if is_icmp(ip_proto) {
            put_prop(
                &mut n,
                TUPLE_ICMP_ID,
                &[&self.icmp_id.to_be_bytes()[..], &[0, 0]].concat(),
            );
            put_prop(&mut n, TUPLE_ICMP_TYPE, &[self.icmp_type]);
            put_prop(&mut n, TUPLE_ICMP_CODE, &[self.icmp_code]);
        } else {
            if self.src_port != 0 {
                put_prop(
                    &mut n,
                    TUPLE_SRC_PORT,
                    &[&self.src_port.to_be_bytes()[..], &[0, 0]].concat(),
                );
            }
            if self.dst_port != 0 {
                put_prop(
                    &mut n,
                    TUPLE_DST_PORT,
                    &[&self.dst_port.to_be_bytes()[..], &[0, 0]].concat(),
                );
            }
        }
        if !n.is_empty() {
            out.put_u16(ty);
            out.put_u16((8 + n.len()) as u16);
            out.put_u32(0);
            out.extend_from_slice(&n);
        }
    }
}

fn put_prop(out: &mut Vec<u8>, ty: u16, v: &[u8]) {
    let start = out.len();
    out.put_u16(ty);
    out.put_u16((4 + v.len()) as u16);
    out.extend_from_slice(v);
    crate::wire::pad_to_8(out, start);
}

impl CtFlush {
    /// The body of NXT_CT_FLUSH (after the experimenter header).
    pub fn decode(data: &Bytes) -> Result<CtFlush> {
        if data.len() < 8 || !data.len().is_multiple_of(8) {
            return Err(OfpError::new(
                ErrorCode::BAD_LEN,
                "ct_flush: body is 8 bytes and properties",
            ));
        }
        if data[1..8] != [0; 7] {
            return Err(OfpError::new(
                super::nxt::NXBRC_MUST_BE_ZERO,
                "ct_flush: padding not zero",
            ));
        }
        let mut f = CtFlush {
            ip_proto: data[0],
            ..CtFlush::default()
        };
        let mut fam = 0;
        for (ty, v) in props(&data[8..])? {
            match ty {
                Some(ORIG_TUPLE) => f.orig = CtTuple::decode(v, &mut fam)?,
                Some(REPLY_TUPLE) => f.reply = CtTuple::decode(v, &mut fam)?,
                Some(ZONE_ID) => f.zone = Some(be16(v)?),
                _ => {}
            }
        }
        Ok(f)
    }

    /// The body, as Open vSwitch writes it.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![self.ip_proto, 0, 0, 0, 0, 0, 0, 0];
        self.orig.encode(ORIG_TUPLE, self.ip_proto, &mut out);
        self.reply.encode(REPLY_TUPLE, self.ip_proto, &mut out);
        if let Some(z) = self.zone {
            put_prop(&mut out, ZONE_ID, &[&z.to_be_bytes()[..], &[0, 0]].concat());
        }
        out
    }
}

/// The body of NXT_CT_FLUSH_ZONE: the zone, or Open vSwitch's error.
pub fn decode_flush_zone(data: &Bytes) -> Result<u16> {
    let b: [u8; 8] = data[..]
        .try_into()
        .map_err(|_| OfpError::new(ErrorCode::BAD_LEN, "ct_flush_zone: body is not 8 bytes"))?;
    if b[..6] != [0; 6] {
        return Err(OfpError::new(
            super::nxt::NXBRC_MUST_BE_ZERO,
            "ct_flush_zone: padding not zero",
        ));
    }
    Ok(u16::from_be_bytes([b[6], b[7]]))
}

/// Parses a tuple as `ovs-appctl dpctl/flush-conntrack` takes one
/// (Open vSwitch's `ofp_ct_tuple_parse`): `ct_nw_src=`, `ct_nw_dst=`
/// (IPv4), `ct_ipv6_src=`, `ct_ipv6_dst=`, `ct_nw_proto=`, `ct_tp_src=`,
/// `ct_tp_dst=`, and for ICMP `icmp_type=`, `icmp_code=`, `icmp_id=`,
/// comma-separated. `ip_proto` and `family` (0 none, 4, 6) carry what an
/// earlier tuple of the same flush said, as in Open vSwitch (one protocol
/// and one family for both tuples).
pub fn parse_ct_tuple(
    s: &str,
    ip_proto: &mut u8,
    fam: &mut u8,
) -> std::result::Result<CtTuple, String> {
    let mut t = CtTuple::default();
    for kv in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("field {kv} missing value"))?;
        if v.is_empty() {
            return Err(format!("field {k} missing value"));
        }
        let failed = || format!("failed to parse field {k}");
        match k {
            "ct_nw_src" | "ct_nw_dst" | "ct_ipv6_src" | "ct_ipv6_dst" => {
                let v6 = k.starts_with("ct_ipv6");
                let want = if v6 { 6 } else { 4 };
                if *fam != 0 && *fam != want {
                    return Err(format!("the L3 protocol does not match {v}"));
                }
                let a = if v6 {
                    v.parse::<Ipv6Addr>().map_err(|_| failed())?
                } else {
                    v.parse::<Ipv4Addr>()
                        .map_err(|_| failed())?
                        .to_ipv6_mapped()
                };
                let slot = if k.ends_with("src") {
                    &mut t.src
                } else {
                    &mut t.dst
                };
                if *slot != 0 {
                    return Err(format!("{k} is set multiple times"));
                }
                *slot = u128::from(a);
                *fam = want;
            }
            "ct_nw_proto" => *ip_proto = v.parse().map_err(|_| failed())?,
            "ct_tp_src" => t.src_port = v.parse().map_err(|_| failed())?,
            "ct_tp_dst" => t.dst_port = v.parse().map_err(|_| failed())?,
            "icmp_type" | "icmp_code" | "icmp_id" => {
                if !is_icmp(*ip_proto) {
                    return Err("invalid L4 fields".into());
                }
                match k {
                    "icmp_type" => t.icmp_type = v.parse().map_err(|_| failed())?,
                    "icmp_code" => t.icmp_code = v.parse().map_err(|_| failed())?,
                    _ => t.icmp_id = v.parse().map_err(|_| failed())?,
                }
            }
            _ => return Err(format!("invalid conntrack tuple field: {k}")),
        }
    }
    if *ip_proto == 0 && (t.src_port != 0 || t.dst_port != 0) {
        return Err("port is set without protocol".into());
    }
    Ok(t)
}

impl CtTuple {
    /// The source address, if given (an IPv4-mapped one as IPv4).
    pub fn src_addr(&self) -> Option<IpAddr> {
        addr(self.src)
    }

    /// The destination address, if given.
    pub fn dst_addr(&self) -> Option<IpAddr> {
        addr(self.dst)
    }
}

fn addr(a: u128) -> Option<IpAddr> {
    let a6 = Ipv6Addr::from(a);
    match family(a) {
        0 => None,
        4 => a6.to_ipv4_mapped().map(IpAddr::V4),
        _ => Some(IpAddr::V6(a6)),
    }
}
