//! [`Match`]: `ofp_match` of type OXM, an ordered list of fields; its codec
//! and [`Match::validate`], which checks meaning: masks on unmaskable
//! fields, values out of range, value bits outside the mask, duplicates and
//! prerequisites (from the field table's rows), each with the code the
//! spec names.

use bytes::BufMut;

use super::{MatchEntry, Oxm, OxmField, FIELD_SLOTS, OFPVID_NONE};
use crate::error::{BadMatchCode, ErrorCode, OfpError, Result};
use crate::wire::{len_placeholder, pad_to_8, patch_len, Reader};

/// `OFPMT_OXM`.
pub const OFPMT_OXM: u16 = 1;

/// `ofp_match` of type OXM: an ordered list of fields.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Match {
    pub entries: Vec<MatchEntry>,
}

impl Match {
    /// The match-all match.
    pub fn new() -> Self {
        Match::default()
    }

    /// Adds a basic field (builder style).
    pub fn with(mut self, oxm: Oxm) -> Self {
        self.entries.push(MatchEntry::Basic(oxm));
        self
    }

    /// The basic field `f`, if present.
    pub fn get(&self, f: OxmField) -> Option<&Oxm> {
        self.basic().find(|o| o.field == f)
    }

    /// The basic fields, in order.
    pub fn basic(&self) -> impl Iterator<Item = &Oxm> {
        self.entries.iter().filter_map(|e| match e {
            MatchEntry::Basic(o) => Some(o),
            MatchEntry::Other(_) => None,
        })
    }

    /// Wire length including padding.
    pub fn wire_len(&self) -> usize {
        crate::wire::pad8(4 + self.entries.iter().map(MatchEntry::wire_len).sum::<usize>())
    }

    /// Appends `ofp_match` (header, fields, padding to 8).
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.put_u16(OFPMT_OXM);
        let at = len_placeholder(out);
        for e in &self.entries {
            e.encode(out);
        }
        patch_len(out, at, start);
        pad_to_8(out, start);
    }

    /// Decodes `ofp_match` including its padding.
    pub fn decode(r: &mut Reader<'_>) -> Result<Match> {
        let ty = r.u16()?;
        let len = r.u16()? as usize;
        if ty != OFPMT_OXM {
            return Err(OfpError::new(
                ErrorCode::BadMatch(BadMatchCode::BadType),
                "match type is not OXM",
            ));
        }
        if len < 4 {
            return Err(OfpError::new(
                ErrorCode::MATCH_BAD_LEN,
                "match length below 4",
            ));
        }
        let mut body = r
            .sub(len - 4, ErrorCode::MATCH_BAD_LEN)
            .map_err(|_| OfpError::new(ErrorCode::MATCH_BAD_LEN, "match longer than message"))?;
        let pad = crate::wire::pad8(len) - len;
        r.skip(pad)
            .map_err(|_| OfpError::new(ErrorCode::MATCH_BAD_LEN, "match padding missing"))?;
        let mut entries = Vec::with_capacity(body.remaining() / 8 + 1);
        while !body.is_empty() {
            entries.push(MatchEntry::decode(&mut body, ErrorCode::MATCH_BAD_LEN)?);
        }
        Ok(Match { entries })
    }

    /// Checks the match as a whole, with the spec's codes, field by field
    /// in order as Open vSwitch does: the field on its own
    /// ([`Oxm::validate`]), its prerequisites among the fields before it
    /// (`OFPBMC_BAD_PREREQ`: OpenFlow 1.3 wants a prerequisite earlier in
    /// the match than the field that needs it), including VLAN_PCP's
    /// "VLAN_VID != NONE", then `OFPBMC_DUP_FIELD`. Non-basic classes are
    /// reported as `OFPBMC_BAD_FIELD` (we know none).
    pub fn validate(&self) -> Result<()> {
        let mut seen: [Option<&Oxm>; FIELD_SLOTS] = [None; FIELD_SLOTS];
        let mut regs = 0u32;
        let slot = |f: OxmField| f.index().unwrap_or(0);
        let bad_prereq = OfpError::new(
            ErrorCode::BadMatch(BadMatchCode::BadPrereq),
            "prerequisite not met (or not before the field that needs it)",
        );
        for e in &self.entries {
            let o = match e {
                MatchEntry::Basic(o) => o,
                MatchEntry::Other(_) => {
                    return Err(OfpError::new(
                        ErrorCode::BadMatch(BadMatchCode::BadField),
                        "unsupported OXM class",
                    ))
                }
            };
            o.validate()?;
            if o.field.needs_ct_valid() && !ct_valid(seen[slot(OxmField::CtState)]) {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadPrereq),
                    "ct_nw_src, ct_tp_dst and the other tuple fields need a ct_state \
                     that says the connection is valid (+est, +new, ... or +trk-inv) before them",
                ));
            }
            for (need, values) in o.field.prerequisites() {
                match seen[slot(*need)] {
                    Some(p)
                        if p.effective_mask() == need.width_mask() && values.contains(&p.value) => {
                    }
                    _ => return Err(bad_prereq),
                }
            }
            if o.field == OxmField::VlanPcp {
                match seen[slot(OxmField::VlanVid)] {
                    Some(v) if !(v.mask.is_none() && v.value == OFPVID_NONE as u128) => {}
                    _ => return Err(bad_prereq),
                }
            }
            // reg, xreg and xxreg views of one register are one field.
            if let Some((first, n)) = o.field.regs() {
                let bits = ((1u32 << n) - 1) << first;
                if regs & bits != 0 {
                    return Err(OfpError::new(
                        ErrorCode::BadMatch(BadMatchCode::DupField),
                        "register matched twice (reg, xreg and xxreg overlap)",
                    ));
                }
                regs |= bits;
            }
            let slot = &mut seen[slot(o.field)];
            if slot.is_some() {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::DupField),
                    "field appears twice",
                ));
            }
            *slot = Some(o);
        }
        Ok(())
    }
}

impl Match {
    /// Open vSwitch's check of a FLOW_MOD's match (`ofputil_decode_flow_mod`):
    /// `ct_nw_src`/`ct_nw_dst` need `eth_type` IPv4 in the match and
    /// `ct_ipv6_src`/`ct_ipv6_dst` IPv6, wherever it is among the fields;
    /// else `OFPBAC_MATCH_INCONSISTENT` (an action error, as Open vSwitch
    /// answers).
    pub fn check_ct_tuple_family(&self) -> Result<()> {
        let eth = self
            .get(OxmField::EthType)
            .filter(|o| o.mask.is_none())
            .map(|o| o.value);
        let has = |f| self.get(f).is_some_and(|o| o.effective_mask() != 0);
        if ((has(OxmField::CtNwSrc) || has(OxmField::CtNwDst)) && eth != Some(0x0800))
            || ((has(OxmField::CtIpv6Src) || has(OxmField::CtIpv6Dst)) && eth != Some(0x86dd))
        {
            return Err(OfpError::new(
                ErrorCode::BadAction(crate::error::BadActionCode::MatchInconsistent),
                "ct_nw_src and ct_nw_dst need ip in the match, ct_ipv6_src and ct_ipv6_dst ipv6",
            ));
        }
        Ok(())
    }
}

/// Open vSwitch's prerequisite `CT` (`is_ct_valid` on a match): the
/// `ct_state` matched says the connection is valid, by one of the bits new,
/// est, rel, rpl, snat, dnat set, or by trk set and inv matched clear.
fn ct_valid(ct_state: Option<&Oxm>) -> bool {
    use crate::ct::state as cs;
    let Some(o) = ct_state else { return false };
    // Open vSwitch holds the state in 8 bits: an exact match is mask 0xff.
    let mask = (o.effective_mask() as u32) & cs::ALL;
    let value = (o.value as u32) & mask;
    value & (cs::NEW | cs::EST | cs::REL | cs::RPL | cs::SNAT | cs::DNAT) != 0
        || (value & cs::TRK != 0 && mask & cs::INV != 0 && value & cs::INV == 0)
}
