//! From an OpenFlow match to a masked flow key.
//!
//! [`compile`] validates an [`ofp::Match`] (the spec's codes) and lays its
//! fields out as a `(value, mask)` pair of [`FlowKey`]s, so that a packet
//! matches iff `key & mask == value` word by word. Each field also requires
//! the layer flag that proves the packet really carried it (see
//! [`packet::flags`]), so a truncated packet's zeros never match.

use ofp::error::{BadMatchCode, ErrorCode};
use ofp::oxm::{MatchEntry, OxmField};
use ofp::{Match, OfpError};
use packet::{flags, slots as s, FlowKey, Slot};

/// A compiled match: `key & mask == value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MaskedKey {
    pub value: FlowKey,
    pub mask: FlowKey,
}

impl MaskedKey {
    /// Whether `key` matches.
    #[inline]
    pub fn matches(&self, key: &FlowKey) -> bool {
        key.w
            .iter()
            .zip(self.mask.w.iter())
            .zip(self.value.w.iter())
            .all(|((k, m), v)| k & m == *v)
    }

    /// Whether every packet this matches is also matched by `other` (this
    /// is at least as specific).
    pub fn is_subset_of(&self, other: &MaskedKey) -> bool {
        (0..packet::KEY_WORDS).all(|i| {
            other.mask.w[i] & !self.mask.w[i] == 0
                && self.value.w[i] & other.mask.w[i] == other.value.w[i]
        })
    }

    /// Whether some packet could match both (the masks agree where both care).
    pub fn overlaps(&self, other: &MaskedKey) -> bool {
        (0..packet::KEY_WORDS).all(|i| {
            let both = self.mask.w[i] & other.mask.w[i];
            self.value.w[i] & both == other.value.w[i] & both
        })
    }

    fn put(&mut self, slot: Slot, value: u64, mask: u64) {
        let m = (mask << slot.shift) & slot.mask();
        let w = slot.word as usize;
        self.mask.w[w] |= m;
        self.value.w[w] = (self.value.w[w] & !m) | ((value << slot.shift) & m);
    }

    fn require(&mut self, flag: u64) {
        self.put(s::FLAGS, flag, flag);
    }
}

/// Words a [`PackedKey`] holds without an allocation of its own.
const INLINE_WORDS: usize = 6;

/// A [`MaskedKey`] as a rule keeps it: only the words its mask touches,
/// as (value, mask) pairs, inline up to six words (a 5-tuple match uses
/// four or five). 112 bytes against the full key's 352: at a million
/// rules that is 240 MB less to allocate and fault in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedKey {
    /// Bit i set: word i has a non-zero mask.
    used: u64,
    words: Words,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Words {
    Inline([(u64, u64); INLINE_WORDS]),
    Heap(Box<[(u64, u64)]>),
}

impl PackedKey {
    /// Packs `k`.
    pub fn pack(k: &MaskedKey) -> PackedKey {
        let mut used = 0u64;
        let mut pairs = [(0u64, 0u64); packet::KEY_WORDS];
        let mut n = 0;
        for i in 0..packet::KEY_WORDS {
            if k.mask.w[i] != 0 {
                used |= 1 << i;
                pairs[n] = (k.value.w[i], k.mask.w[i]);
                n += 1;
            }
        }
        let words = if n <= INLINE_WORDS {
            let mut a = [(0, 0); INLINE_WORDS];
            a[..n].copy_from_slice(&pairs[..n]);
            Words::Inline(a)
        } else {
            Words::Heap(pairs[..n].into())
        };
        PackedKey { used, words }
    }

    fn pairs(&self) -> &[(u64, u64)] {
        let n = self.used.count_ones() as usize;
        match &self.words {
            Words::Inline(a) => &a[..n],
            Words::Heap(b) => b,
        }
    }

    /// The full key.
    pub fn unpack(&self) -> MaskedKey {
        let mut k = MaskedKey::default();
        let mut pairs = self.pairs().iter();
        for i in 0..packet::KEY_WORDS {
            if self.used & (1 << i) != 0 {
                if let Some(&(v, m)) = pairs.next() {
                    k.value.w[i] = v;
                    k.mask.w[i] = m;
                }
            }
        }
        k
    }

    /// Whether this is `k` (without unpacking).
    pub fn is(&self, k: &MaskedKey) -> bool {
        let mut pairs = self.pairs().iter();
        (0..packet::KEY_WORDS).all(|i| {
            if self.used & (1 << i) != 0 {
                pairs.next() == Some(&(k.value.w[i], k.mask.w[i]))
            } else {
                k.mask.w[i] == 0 && k.value.w[i] == 0
            }
        })
    }
}

/// Where a field lives, and the layer flag a packet needs for it to be real.
fn place(f: OxmField, eth_type: u64) -> (&'static [Slot], u64) {
    use OxmField as F;
    let ip = if eth_type == 0x86dd {
        flags::IPV6
    } else {
        flags::IPV4
    };
    match f {
        F::InPort => (&[s::IN_PORT], 0),
        F::InPhyPort => (&[s::IN_PHY_PORT], 0),
        F::Metadata => (&[s::METADATA], 0),
        F::EthDst => (&[s::ETH_DST], flags::ETH),
        F::EthSrc => (&[s::ETH_SRC], flags::ETH),
        F::EthType => (&[s::ETH_TYPE], flags::ETH),
        // VLAN_VID: an untagged packet reads OFPVID_NONE (0), as the spec wants.
        F::VlanVid => (&[s::VLAN_VID], flags::ETH),
        F::VlanPcp => (&[s::VLAN_PCP], flags::VLAN),
        F::IpDscp => (&[s::IP_DSCP], ip),
        F::IpEcn => (&[s::IP_ECN], ip),
        F::IpProto => (&[s::IP_PROTO], ip),
        F::Ipv4Src => (&[s::NW_SRC], flags::IPV4),
        F::Ipv4Dst => (&[s::NW_DST], flags::IPV4),
        F::TcpSrc | F::UdpSrc | F::SctpSrc | F::Icmpv4Type | F::Icmpv6Type => {
            (&[s::TP_SRC], flags::L4)
        }
        F::TcpDst | F::UdpDst | F::SctpDst | F::Icmpv4Code | F::Icmpv6Code => {
            (&[s::TP_DST], flags::L4)
        }
        F::ArpOp => (&[s::ARP_OP], flags::ARP),
        F::ArpSpa => (&[s::NW_SRC], flags::ARP),
        F::ArpTpa => (&[s::NW_DST], flags::ARP),
        F::ArpSha => (&[s::ARP_SHA], flags::ARP),
        F::ArpTha => (&[s::ARP_THA], flags::ARP),
        F::Ipv6Src => (&[s::IPV6_SRC_HI, s::IPV6_SRC_LO], flags::IPV6),
        F::Ipv6Dst => (&[s::IPV6_DST_HI, s::IPV6_DST_LO], flags::IPV6),
        F::Ipv6Flabel => (&[s::IPV6_FLABEL], flags::IPV6),
        F::Ipv6NdTarget => (&[s::ND_TARGET_HI, s::ND_TARGET_LO], flags::ND),
        F::Ipv6NdSll => (&[s::ARP_SHA], flags::ND),
        F::Ipv6NdTll => (&[s::ARP_THA], flags::ND),
        F::MplsLabel => (&[s::MPLS_LABEL], flags::MPLS),
        F::MplsTc => (&[s::MPLS_TC], flags::MPLS),
        F::MplsBos => (&[s::MPLS_BOS], flags::MPLS),
        F::PbbIsid => (&[s::PBB_ISID], flags::PBB),
        F::PbbUca => (&[s::PBB_UCA], flags::PBB),
        F::TunnelId => (&[s::TUNNEL_ID], 0),
        // Tunnel fields are metadata: zero when the packet has none.
        F::TunIpv4Src => (&[s::TUN_IPV4_SRC], 0),
        F::TunIpv4Dst => (&[s::TUN_IPV4_DST], 0),
        F::TunIpv6Src => (&[s::TUN_IPV6_SRC_HI, s::TUN_IPV6_SRC_LO], 0),
        F::TunIpv6Dst => (&[s::TUN_IPV6_DST_HI, s::TUN_IPV6_DST_LO], 0),
        F::Ipv6Exthdr => (&[s::IPV6_EXTHDR], flags::IPV6),
        F::NwTtl => (&[s::NW_TTL], ip),
        F::IpFrag => (&[s::IP_FRAG], ip),
        F::TcpFlags => (&[s::TCP_FLAGS], flags::L4),
        F::NxmInPort => (&[s::IN_PORT], 0),
        // Not one slot: see `compile_valid` and `read_field`.
        F::VlanTci => (&[], 0),
        // Metadata: zero when a packet arrives, no layer to prove.
        F::PktMark => (&[s::PKT_MARK], 0),
        F::ConjId => (&[s::CONJ_ID], 0),
        F::Reg(n) => (
            s::REGS
                .get(n as usize)
                .map_or(&[][..], std::slice::from_ref),
            0,
        ),
        F::XReg(n) => (
            s::XREGS
                .get(n as usize)
                .map_or(&[][..], std::slice::from_ref),
            0,
        ),
        F::XXReg(n) => (s::XXREGS.get(n as usize).map_or(&[][..], |p| &p[..]), 0),
        // Connection tracking: metadata a `ct` sets (zero before one ran,
        // which is what "untracked" reads as), no layer to prove.
        F::CtState => (&[s::CT_STATE], 0),
        F::CtZone => (&[s::CT_ZONE], 0),
        F::CtMark => (&[s::CT_MARK], 0),
        F::CtLabel => (&[s::CT_LABEL_HI, s::CT_LABEL_LO], 0),
        F::CtNwSrc => (&[s::CT_NW_SRC], 0),
        F::CtNwDst => (&[s::CT_NW_DST], 0),
        F::CtIpv6Src => (&[s::CT_IPV6_SRC_HI, s::CT_IPV6_SRC_LO], 0),
        F::CtIpv6Dst => (&[s::CT_IPV6_DST_HI, s::CT_IPV6_DST_LO], 0),
        F::CtNwProto => (&[s::CT_NW_PROTO], 0),
        F::CtTpSrc => (&[s::CT_TP_SRC], 0),
        F::CtTpDst => (&[s::CT_TP_DST], 0),
        // A Geneve option's value; its presence is a bit of its own
        // (`compile_valid`, `write_metadata`). Only the first
        // TUN_METADATA_KEY_FIELDS have a place (a flow naming another is
        // refused: `crate::tlv::TlvTable::check_flow`).
        F::TunMetadata(n) => (
            s::TUN_METADATA.get(n as usize).map_or(&[][..], |p| &p[..]),
            0,
        ),
        F::Unknown(_) => (&[], 0),
    }
}

/// Whether `f` is pipeline metadata held in the key's metadata words
/// (registers, packet mark, conjunction id): what [`write_metadata`]
/// writes.
pub fn is_key_metadata(f: OxmField) -> bool {
    matches!(
        f,
        OxmField::Reg(_)
            | OxmField::XReg(_)
            | OxmField::XXReg(_)
            | OxmField::PktMark
            | OxmField::ConjId
            | OxmField::TunMetadata(_)
    )
}

/// The key bit that says `tun_metadataN` is present.
fn tun_metadata_present(n: u8) -> Slot {
    Slot {
        word: s::TUN_METADATA_PRESENT.word,
        shift: n.min(63),
        bits: 1,
    }
}

/// Writes `value` into the bits of metadata field `f` that `mask` selects
/// (see [`is_key_metadata`]); other fields are left alone.
pub fn write_metadata(key: &mut FlowKey, f: OxmField, value: u128, mask: u128) {
    if !is_key_metadata(f) {
        return;
    }
    let mut put = |sl: &Slot, v: u64, m: u64| {
        let m = (m << sl.shift) & sl.mask();
        let w = &mut key.w[sl.word as usize];
        *w = (*w & !m) | ((v << sl.shift) & m);
    };
    match place(f, 0).0 {
        [one] => put(one, value as u64, mask as u64),
        [hi, lo] => {
            put(hi, (value >> 64) as u64, (mask >> 64) as u64);
            put(lo, value as u64, mask as u64);
        }
        _ => return,
    }
    // Writing any bits of a Geneve option makes it present (Open
    // vSwitch's `tun_metadata_write`; the rest of it reads as zero).
    if let Some(n) = f.tun_metadata_index() {
        put(&tun_metadata_present(n), 1, 1);
    }
}

/// `load:value->dst[ofs..ofs+n_bits]` into a metadata field of one
/// word or less (a register, an `xreg`, `pkt_mark`): the fast path of the
/// register loads multi-table pipelines run per table. False, having
/// written nothing, for any other destination (the caller takes the
/// general path). The load was checked at install (`RegLoad::check`):
/// `ofs + n_bits` is within the field and `value < 2^n_bits`.
#[inline]
pub fn load_metadata(key: &mut FlowKey, l: &ofp::action::RegLoad) -> bool {
    let sl = match l.dst {
        OxmField::Reg(n) => s::REGS.get(n as usize),
        OxmField::XReg(n) => s::XREGS.get(n as usize),
        OxmField::PktMark => Some(&s::PKT_MARK),
        _ => None,
    };
    let Some(sl) = sl else { return false };
    let (ofs, n) = (l.ofs as u32, l.n_bits as u32);
    if n == 0 || ofs + n > sl.bits as u32 {
        return false;
    }
    let bits = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    let at = sl.shift as u32 + ofs;
    let w = &mut key.w[sl.word as usize];
    *w = (*w & !(bits << at)) | (((l.value as u64) & bits) << at);
    true
}

/// A packet's value of field `f` as its key holds it (None for fields
/// without a slot). Whether the packet really carried the field is the
/// caller's to check, by compiling a match and testing the key.
pub fn read_field(key: &FlowKey, f: OxmField) -> Option<u128> {
    let read = |sl: &Slot| ((key.w[sl.word as usize] & sl.mask()) >> sl.shift) as u128;
    if f == OxmField::VlanTci {
        // PCP, CFI (a tag: OFPVID_PRESENT), VID; zero without a tag.
        let vid = read(&s::VLAN_VID);
        let pcp = if vid & 0x1000 != 0 {
            read(&s::VLAN_PCP)
        } else {
            0
        };
        return Some(pcp << 13 | vid);
    }
    match place(f, key.get(s::ETH_TYPE)).0 {
        [one] => Some(read(one)),
        [hi, lo] => Some(read(hi) << 64 | read(lo)),
        _ => None,
    }
}

/// Validates `m` and compiles it.
pub fn compile(m: &Match) -> Result<MaskedKey, OfpError> {
    m.validate()?;
    compile_valid(m)
}

/// [`compile`] for a match already validated (`Match::validate`, as
/// `Message::validate` does): the validation is not repeated.
pub(crate) fn compile_valid(m: &Match) -> Result<MaskedKey, OfpError> {
    let eth_type = m.get(OxmField::EthType).map_or(0, |o| o.value as u64);
    let mut k = MaskedKey::default();
    for e in &m.entries {
        let MatchEntry::Basic(o) = e else {
            return Err(OfpError::new(
                ErrorCode::BadMatch(BadMatchCode::BadField),
                "unsupported OXM class",
            ));
        };
        if o.field == OxmField::VlanTci {
            // TCI bits 0-12 are vlan_vid's (CFI is OFPVID_PRESENT), 13-15
            // the PCP, which a packet without a tag does not have.
            let (v, mut m) = (o.value as u64, o.effective_mask() as u64);
            // No tag (CFI matched clear) and PCP 0: the PCP bits say
            // nothing more (an untagged packet's read 0), and left out
            // this is the key of vlan_vid=NONE, OpenFlow 1.0's
            // dl_vlan=0xffff (`vlan_tci=0` from NXM, strictly, is the
            // flow 1.0's `dl_vlan=0xffff` names).
            if m & 0x1000 != 0 && v & 0xf000 == 0 {
                m &= 0x1fff;
            }
            k.put(s::VLAN_VID, v & 0x1fff, m & 0x1fff);
            k.require(flags::ETH);
            if m & 0xe000 != 0 {
                k.put(s::VLAN_PCP, v >> 13, m >> 13);
                k.require(flags::VLAN);
            }
            continue;
        }
        let (slots, flag) = place(o.field, eth_type);
        let mask = o.effective_mask();
        match slots {
            [one] => k.put(*one, o.value as u64, mask as u64),
            [hi, lo] => {
                k.put(*hi, (o.value >> 64) as u64, (mask >> 64) as u64);
                k.put(*lo, o.value as u64, mask as u64);
            }
            _ => {
                return Err(OfpError::new(
                    ErrorCode::BadMatch(BadMatchCode::BadField),
                    "unknown field",
                ))
            }
        }
        if flag != 0 {
            k.require(flag);
        }
        // A Geneve option matches only a packet that carries it (or had it
        // set), whatever the mask: Open vSwitch's `present` bit.
        if let Some(n) = o.field.tun_metadata_index() {
            k.put(tun_metadata_present(n), 1, 1);
        }
    }
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ofp::text::parse_match;

    proptest::proptest! {
        /// The register-load fast path writes what the general path
        /// (the load as a masked value, through `write_metadata`) writes,
        /// for every one-word metadata field, offset and width, over a
        /// key whose metadata words are random.
        #[test]
        fn load_fast_path_agrees_with_the_general_writer(
            which in 0u8..25,
            ofs in 0u16..64,
            n_bits in 1u16..=64,
            value: u64,
            words: [u64; packet::KEY_WORDS - packet::PACKET_WORDS],
        ) {
            let dst = match which {
                0..=15 => OxmField::Reg(which),
                16..=23 => OxmField::XReg(which - 16),
                _ => OxmField::PktMark,
            };
            let width = if which < 16 || which == 24 { 32 } else { 64 };
            proptest::prop_assume!(ofs + n_bits <= width);
            let value = if n_bits == 64 { value } else { value & ((1 << n_bits) - 1) };
            let l = ofp::action::RegLoad {
                dst,
                ofs,
                n_bits,
                value: value as u128,
                form: ofp::action::LoadForm::RegLoad,
            };
            let mut key = FlowKey::default();
            key.w[packet::PACKET_WORDS..].copy_from_slice(&words);
            let mut fast = key;
            proptest::prop_assert!(load_metadata(&mut fast, &l));
            let o = l.masked();
            write_metadata(&mut key, o.field, o.value, o.mask.unwrap_or(u128::MAX));
            proptest::prop_assert_eq!(fast.w, key.w);
        }
    }

    #[test]
    fn load_fast_path_leaves_other_destinations_to_the_general_path() {
        let mut key = FlowKey::default();
        for dst in [
            OxmField::XXReg(0),
            OxmField::Metadata,
            OxmField::EthDst,
            OxmField::Reg(16),
        ] {
            let l = ofp::action::RegLoad {
                dst,
                ofs: 0,
                n_bits: 8,
                value: 7,
                form: ofp::action::LoadForm::RegLoad,
            };
            assert!(!load_metadata(&mut key, &l), "{dst:?}");
        }
        assert_eq!(key, FlowKey::default());
    }

    fn key_of(frame: &[u8]) -> FlowKey {
        let mut k = FlowKey::default();
        packet::extract(frame, 1, &mut k);
        k
    }

    fn tcp_frame(dst_port: u16) -> Vec<u8> {
        packet::wire::build::sample_tcp(dst_port, 0x02)
    }

    #[test]
    fn a_tcp_match_matches_its_packets_only() {
        let m =
            compile(&parse_match("in_port=1,tcp,nw_dst=10.0.0.0/8,tp_dst=80").unwrap()).unwrap();
        assert!(m.matches(&key_of(&tcp_frame(80))));
        assert!(!m.matches(&key_of(&tcp_frame(81))));
        // The same packet cut before its TCP header: the port reads 0 and the
        // L4 flag is missing, so a rule for tp_dst=0 must not match either.
        let m0 = compile(&parse_match("tcp,tp_dst=0").unwrap()).unwrap();
        assert!(!m0.matches(&key_of(&tcp_frame(0)[..36])));
        assert!(m0.matches(&key_of(&tcp_frame(0))));
    }

    #[test]
    fn invalid_matches_get_the_spec_error() {
        let e = compile(&parse_match("tcp_dst=80").unwrap()).unwrap_err();
        assert_eq!(e.code, ErrorCode::BadMatch(BadMatchCode::BadPrereq));
    }

    #[test]
    fn packed_keys_round_trip_inline_and_on_the_heap() {
        let tuple = compile(
            &ofp::text::parse_match("tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1,tp_dst=80")
                .unwrap(),
        )
        .unwrap();
        let p = PackedKey::pack(&tuple);
        assert!(matches!(p.words, Words::Inline(_)), "a 5-tuple fits inline");
        assert_eq!(p.unpack(), tuple);
        assert!(p.is(&tuple));
        let mut wide = MaskedKey::default();
        for i in 0..packet::KEY_WORDS {
            wide.mask.w[i] = 0xff << i;
            wide.value.w[i] = (i as u64) << i;
        }
        let p = PackedKey::pack(&wide);
        assert!(matches!(p.words, Words::Heap(_)));
        assert_eq!(p.unpack(), wide);
        assert!(p.is(&wide) && !p.is(&tuple));
        let empty = PackedKey::pack(&MaskedKey::default());
        assert!(empty.is(&MaskedKey::default()) && !empty.is(&tuple));
    }

    #[test]
    fn untagged_packets_match_vlan_none() {
        let none = compile(&parse_match("vlan_vid=0").unwrap()).unwrap();
        let any_tag = compile(&parse_match("vlan_vid=0x1000/0x1000").unwrap()).unwrap();
        let k = key_of(&tcp_frame(80));
        assert!(none.matches(&k));
        assert!(!any_tag.matches(&k));
    }
}
