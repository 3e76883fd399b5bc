//! [`FlowKey`]: every OpenFlow 1.3 match field of a packet, and its tunnel
//! metadata (Open vSwitch's `tun_src`/`tun_dst` fields and their IPv6
//! forms), in a fixed layout of 64-bit words, so that a classifier can mask
//! and hash it word by word. The tunnel words are written by whoever knows
//! the metadata ([`FlowKey::set_tunnel`]), not by [`crate::extract`].
//!
//! Fields that can never be present together share a slot, as in Open
//! vSwitch: ARP's sender/target IPv4 addresses use the IPv4 source/destination
//! slot, ARP's hardware addresses the ND link-layer address slots, and the
//! TCP/UDP/SCTP ports and ICMP type/code the same two 16-bit transport slots.
//! A rule can only look at a shared slot together with the eth_type/ip_proto
//! that says which protocol it is (OpenFlow prerequisites), so sharing never
//! makes one rule match another protocol's packet.
//!
//! Absent headers read as zero. So that zero is never mistaken for a value
//! that was really on the wire, the key also carries [`flags`] saying which
//! layers were parsed whole; a classifier that matches a field also requires
//! the flag of its layer.

/// Number of 64-bit words in a key.
pub const KEY_WORDS: usize = 45;

/// The words [`crate::extract`] writes (the packet's headers, and the
/// tunnel words its caller sets after): the first [`PACKET_WORDS`]. The
/// words after them are the pipeline's metadata (registers, packet mark,
/// conjunction id, the connection-tracking fields): zero when a packet arrives, kept by `extract`, so that
/// re-reading the headers after an edit does not lose them. A fast path
/// that only sees arriving packets needs only these words.
pub const PACKET_WORDS: usize = 22;

/// How many `tun_metadataN` fields (`tun_metadata0` on) the key holds a
/// value for: OVN uses `tun_metadata0`. Any field may be mapped; a flow
/// naming a higher one is refused (`OFPBMC_BAD_FIELD`, `pipeline::tlv`).
pub const TUN_METADATA_KEY_FIELDS: usize = 2;

/// The position of a field in the key: word, lowest bit, width in bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    pub word: u8,
    pub shift: u8,
    pub bits: u8,
}

impl Slot {
    const fn new(word: u8, shift: u8, bits: u8) -> Slot {
        Slot { word, shift, bits }
    }

    /// The slot's mask within its word (fields wider than 64 bits use
    /// two slots, see [`slots`]).
    #[inline]
    pub const fn mask(self) -> u64 {
        if self.bits == 64 {
            u64::MAX
        } else {
            ((1u64 << self.bits) - 1) << self.shift
        }
    }
}

/// Where each field lives. 128-bit fields are two slots (`_HI`, `_LO`).
pub mod slots {
    use super::Slot;
    pub const IN_PORT: Slot = Slot::new(0, 32, 32);
    pub const IN_PHY_PORT: Slot = Slot::new(0, 0, 32);
    pub const METADATA: Slot = Slot::new(1, 0, 64);
    pub const ETH_DST: Slot = Slot::new(2, 16, 48);
    pub const ETH_TYPE: Slot = Slot::new(2, 0, 16);
    pub const ETH_SRC: Slot = Slot::new(3, 16, 48);
    /// 13 bits: OFPVID_PRESENT (0x1000) | VID.
    pub const VLAN_VID: Slot = Slot::new(3, 3, 13);
    pub const VLAN_PCP: Slot = Slot::new(3, 0, 3);
    /// IPv4 source, or ARP SPA.
    pub const NW_SRC: Slot = Slot::new(4, 32, 32);
    /// IPv4 destination, or ARP TPA.
    pub const NW_DST: Slot = Slot::new(4, 0, 32);
    pub const ARP_OP: Slot = Slot::new(5, 48, 16);
    pub const IP_PROTO: Slot = Slot::new(5, 40, 8);
    pub const IP_DSCP: Slot = Slot::new(5, 32, 6);
    pub const IP_ECN: Slot = Slot::new(5, 24, 2);
    pub const IPV6_FLABEL: Slot = Slot::new(5, 0, 20);
    /// TCP/UDP/SCTP source port, or ICMP/ICMPv6 type.
    pub const TP_SRC: Slot = Slot::new(6, 48, 16);
    /// TCP/UDP/SCTP destination port, or ICMP/ICMPv6 code.
    pub const TP_DST: Slot = Slot::new(6, 32, 16);
    pub const IPV6_EXTHDR: Slot = Slot::new(6, 16, 9);
    /// Layer flags, see [`super::flags`].
    pub const FLAGS: Slot = Slot::new(6, 0, 16);
    pub const IPV6_SRC_HI: Slot = Slot::new(7, 0, 64);
    pub const IPV6_SRC_LO: Slot = Slot::new(8, 0, 64);
    pub const IPV6_DST_HI: Slot = Slot::new(9, 0, 64);
    pub const IPV6_DST_LO: Slot = Slot::new(10, 0, 64);
    pub const ND_TARGET_HI: Slot = Slot::new(11, 0, 64);
    pub const ND_TARGET_LO: Slot = Slot::new(12, 0, 64);
    /// ARP SHA, or ND source link-layer address.
    pub const ARP_SHA: Slot = Slot::new(13, 16, 48);
    /// TCP flags (12 bits; not an OpenFlow 1.3 match field, kept for tracing).
    pub const TCP_FLAGS: Slot = Slot::new(13, 0, 12);
    /// ARP THA, or ND target link-layer address.
    pub const ARP_THA: Slot = Slot::new(14, 16, 48);
    pub const MPLS_TC: Slot = Slot::new(14, 8, 3);
    pub const MPLS_BOS: Slot = Slot::new(14, 0, 1);
    pub const MPLS_LABEL: Slot = Slot::new(15, 40, 20);
    pub const PBB_ISID: Slot = Slot::new(15, 0, 24);
    /// The I-TAG's Use Customer Address bit (`pbb_uca`).
    pub const PBB_UCA: Slot = Slot::new(14, 1, 1);
    /// Tunnel id (`tun_id`: the VNI of a packet received from a tunnel
    /// port, or what a flow set for the tunnel it is sent into).
    pub const TUNNEL_ID: Slot = Slot::new(16, 0, 64);
    /// Outer IPv4 source of a tunnelled packet (`tun_src`).
    pub const TUN_IPV4_SRC: Slot = Slot::new(17, 32, 32);
    /// Outer IPv4 destination (`tun_dst`).
    pub const TUN_IPV4_DST: Slot = Slot::new(17, 0, 32);
    pub const TUN_IPV6_SRC_HI: Slot = Slot::new(18, 0, 64);
    pub const TUN_IPV6_SRC_LO: Slot = Slot::new(19, 0, 64);
    pub const TUN_IPV6_DST_HI: Slot = Slot::new(20, 0, 64);
    pub const TUN_IPV6_DST_LO: Slot = Slot::new(21, 0, 64);
    /// IPv4 TTL or IPv6 hop limit (`nw_ttl`).
    pub const NW_TTL: Slot = Slot::new(15, 24, 8);
    /// `ip_frag`: the [`super::flags::FRAG`] and [`super::flags::LATER_FRAG`]
    /// bits of the flags slot, read as one 2-bit field (bit 0 "a
    /// fragment", bit 1 "a later fragment", as Open vSwitch numbers them).
    pub const IP_FRAG: Slot = Slot::new(6, 8, 2);
    /// The 32-bit registers `reg0`-`reg15`, two to a word: `reg(2i)` in the
    /// high half of word 22 + i, so that `xreg i` is that whole word and
    /// `xxreg i` words 22 + 2i (high) and 23 + 2i.
    pub const REGS: [Slot; 16] = {
        let mut r = [Slot::new(0, 0, 0); 16];
        let mut i = 0;
        while i < 16 {
            r[i] = Slot::new(22 + (i / 2) as u8, if i % 2 == 0 { 32 } else { 0 }, 32);
            i += 1;
        }
        r
    };
    /// `xreg0`-`xreg7`: one word each.
    pub const XREGS: [Slot; 8] = {
        let mut r = [Slot::new(0, 0, 0); 8];
        let mut i = 0;
        while i < 8 {
            r[i] = Slot::new(22 + i as u8, 0, 64);
            i += 1;
        }
        r
    };
    /// `xxreg0`-`xxreg3`: two words each, high then low.
    pub const XXREGS: [[Slot; 2]; 4] = {
        let mut r = [[Slot::new(0, 0, 0); 2]; 4];
        let mut i = 0;
        while i < 4 {
            r[i] = [
                Slot::new(22 + 2 * i as u8, 0, 64),
                Slot::new(23 + 2 * i as u8, 0, 64),
            ];
            i += 1;
        }
        r
    };
    /// The packet mark (`pkt_mark`).
    pub const PKT_MARK: Slot = Slot::new(30, 32, 32);
    /// The conjunction id (`conj_id`).
    pub const CONJ_ID: Slot = Slot::new(30, 0, 32);
    /// The connection-tracking fields a `ct` action sets (zero until one
    /// ran, and again after `ct_clear`): `ct_state`, `ct_zone`,
    /// `ct_nw_proto`.
    pub const CT_STATE: Slot = Slot::new(31, 32, 32);
    pub const CT_ZONE: Slot = Slot::new(31, 16, 16);
    pub const CT_NW_PROTO: Slot = Slot::new(31, 8, 8);
    /// `ct_mark`, and the connection's original-direction ports
    /// (`ct_tp_src`, `ct_tp_dst`; ICMP type and code).
    pub const CT_MARK: Slot = Slot::new(32, 32, 32);
    pub const CT_TP_SRC: Slot = Slot::new(32, 16, 16);
    pub const CT_TP_DST: Slot = Slot::new(32, 0, 16);
    /// `ct_label`, 128 bits.
    pub const CT_LABEL_HI: Slot = Slot::new(33, 0, 64);
    pub const CT_LABEL_LO: Slot = Slot::new(34, 0, 64);
    /// The original direction's IPv6 addresses (`ct_ipv6_src`/`_dst`).
    pub const CT_IPV6_SRC_HI: Slot = Slot::new(35, 0, 64);
    pub const CT_IPV6_SRC_LO: Slot = Slot::new(36, 0, 64);
    pub const CT_IPV6_DST_HI: Slot = Slot::new(37, 0, 64);
    pub const CT_IPV6_DST_LO: Slot = Slot::new(38, 0, 64);
    /// The original direction's IPv4 addresses (`ct_nw_src`/`_dst`).
    pub const CT_NW_SRC: Slot = Slot::new(39, 32, 32);
    pub const CT_NW_DST: Slot = Slot::new(39, 0, 32);
    /// The first and last word of the connection-tracking fields.
    pub const CT_WORDS: std::ops::RangeInclusive<usize> = 31..=39;
    /// The Geneve options of the `tun_metadataN` fields: bit N set when
    /// field N is present (came in with the packet, or was set). Metadata
    /// words: zero when a packet arrives, written by the tunnel port that
    /// received it ([`super::FlowKey::set_tun_metadata`]).
    pub const TUN_METADATA_PRESENT: Slot = Slot::new(40, 0, 64);
    /// The values of the first [`super::TUN_METADATA_KEY_FIELDS`]
    /// `tun_metadataN` fields, 16 bytes each (high word, low word).
    pub const TUN_METADATA: [[Slot; 2]; super::TUN_METADATA_KEY_FIELDS] = {
        let mut r = [[Slot::new(0, 0, 0); 2]; super::TUN_METADATA_KEY_FIELDS];
        let mut i = 0;
        while i < super::TUN_METADATA_KEY_FIELDS {
            r[i] = [
                Slot::new(41 + 2 * i as u8, 0, 64),
                Slot::new(42 + 2 * i as u8, 0, 64),
            ];
            i += 1;
        }
        r
    };
}

/// Bits of the [`slots::FLAGS`] slot: which layers were parsed whole.
pub mod flags {
    /// A VLAN tag was present (outermost one is in the key).
    pub const VLAN: u64 = 1 << 0;
    /// An IPv4 header was complete.
    pub const IPV4: u64 = 1 << 1;
    /// An IPv6 header was complete.
    pub const IPV6: u64 = 1 << 2;
    /// An ARP (or RARP) body for Ethernet/IPv4 was complete.
    pub const ARP: u64 = 1 << 3;
    /// The transport header (TCP, UDP, SCTP, ICMP, ICMPv6) was complete.
    pub const L4: u64 = 1 << 4;
    /// An ICMPv6 neighbour solicitation/advertisement body was complete.
    pub const ND: u64 = 1 << 5;
    /// An MPLS label stack entry was complete.
    pub const MPLS: u64 = 1 << 6;
    /// A PBB I-TAG was complete.
    pub const PBB: u64 = 1 << 7;
    /// The IPv4 packet is a fragment (any: first or later).
    pub const FRAG: u64 = 1 << 8;
    /// The IPv4/IPv6 packet is a later fragment (no transport header here).
    pub const LATER_FRAG: u64 = 1 << 9;
    /// The Ethernet header was complete (14 bytes, plus any VLAN tags).
    pub const ETH: u64 = 1 << 10;
}

/// A packet's match fields.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct FlowKey {
    pub w: [u64; KEY_WORDS],
}

impl Default for FlowKey {
    fn default() -> FlowKey {
        FlowKey { w: [0; KEY_WORDS] }
    }
}

impl FlowKey {
    /// Reads a slot.
    #[inline]
    pub fn get(&self, s: Slot) -> u64 {
        (self.w[s.word as usize] & s.mask()) >> s.shift
    }

    /// Writes a slot (the value is truncated to the slot's width).
    #[inline]
    pub fn set(&mut self, s: Slot, v: u64) {
        let w = &mut self.w[s.word as usize];
        *w = (*w & !s.mask()) | ((v << s.shift) & s.mask());
    }

    /// Reads a 128-bit field stored in two slots.
    #[inline]
    pub fn get128(&self, hi: Slot, lo: Slot) -> u128 {
        ((self.get(hi) as u128) << 64) | self.get(lo) as u128
    }

    /// Writes a 128-bit field stored in two slots.
    #[inline]
    pub fn set128(&mut self, hi: Slot, lo: Slot, v: u128) {
        self.set(hi, (v >> 64) as u64);
        self.set(lo, v as u64);
    }

    /// Writes a packet's tunnel metadata (tunnel fields are metadata, not
    /// headers: no layer flag goes with them, and zero means "none").
    #[inline]
    pub fn set_tunnel(&mut self, t: &crate::TunnelMeta) {
        self.set(slots::TUNNEL_ID, t.id);
        self.w[slots::TUN_IPV4_SRC.word as usize] = (t.ipv4_src as u64) << 32 | t.ipv4_dst as u64;
        self.set128(slots::TUN_IPV6_SRC_HI, slots::TUN_IPV6_SRC_LO, t.ipv6_src);
        self.set128(slots::TUN_IPV6_DST_HI, slots::TUN_IPV6_DST_LO, t.ipv6_dst);
    }

    /// Sets `tun_metadataN` (N below [`TUN_METADATA_KEY_FIELDS`]) present
    /// with `value`; a higher N is ignored.
    #[inline]
    pub fn set_tun_metadata(&mut self, n: usize, value: u128) {
        if let Some([hi, lo]) = slots::TUN_METADATA.get(n) {
            self.set128(*hi, *lo, value);
            self.w[slots::TUN_METADATA_PRESENT.word as usize] |= 1 << n;
        }
    }

    /// `tun_metadataN`'s value, if the packet has it.
    #[inline]
    pub fn tun_metadata(&self, n: usize) -> Option<u128> {
        let present = self.w[slots::TUN_METADATA_PRESENT.word as usize] >> n & 1 != 0;
        let [hi, lo] = slots::TUN_METADATA.get(n)?;
        present.then(|| self.get128(*hi, *lo))
    }

    /// Layer flags.
    #[inline]
    pub fn flags(&self) -> u64 {
        self.get(slots::FLAGS)
    }

    /// Whether `self` and `other` are the same key.
    #[inline]
    pub fn same(&self, other: &FlowKey) -> bool {
        self.w == other.w
    }

    /// Whether the packet words (the first [`PACKET_WORDS`]: headers,
    /// ingress port, tunnel) of `self` and `other` are the same.
    #[inline]
    pub fn same_packet(&self, other: &FlowKey) -> bool {
        self.packet_words() == other.packet_words()
    }

    /// The packet words as an array: a compare of fixed length is one
    /// `memcmp` call (a slice compare checks the lengths first, and a
    /// word-by-word fold compiled to twice the instructions on x86-64's
    /// baseline, which has no 64-bit lane compare).
    #[inline]
    fn packet_words(&self) -> &[u64; PACKET_WORDS] {
        self.w
            .first_chunk::<PACKET_WORDS>()
            .expect("the key holds the packet words")
    }

    /// Whether every metadata word (registers, packet mark, conjunction
    /// id) is zero, as it is when a packet arrives: the caches then
    /// compare and hash the packet words alone.
    #[inline]
    pub fn metadata_zero(&self) -> bool {
        self.w[PACKET_WORDS..].iter().fold(0, |a, w| a | w) == 0
    }

    /// Zeroes the metadata words (registers, packet mark, conjunction
    /// id, connection tracking): a packet arriving.
    #[inline]
    pub fn clear_metadata(&mut self) {
        self.w[PACKET_WORDS..].fill(0);
    }

    /// Zeroes the connection-tracking fields (`ct_clear`, and after a
    /// `ct` whose recirculation returned).
    #[inline]
    pub fn clear_ct(&mut self) {
        self.w[slots::CT_WORDS].fill(0);
    }

    #[inline]
    pub(crate) fn add_flags(&mut self, f: u64) {
        self.w[slots::FLAGS.word as usize] |= f << slots::FLAGS.shift;
    }
}

impl std::fmt::Debug for FlowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use slots::*;
        let mut d = f.debug_struct("FlowKey");
        d.field("in_port", &self.get(IN_PORT))
            .field("eth_dst", &format_args!("{:012x}", self.get(ETH_DST)))
            .field("eth_src", &format_args!("{:012x}", self.get(ETH_SRC)))
            .field("eth_type", &format_args!("{:#06x}", self.get(ETH_TYPE)))
            .field("vlan_vid", &format_args!("{:#x}", self.get(VLAN_VID)))
            .field("flags", &format_args!("{:#x}", self.flags()))
            .field("ip_proto", &self.get(IP_PROTO))
            .field("nw_src", &format_args!("{:#010x}", self.get(NW_SRC)))
            .field("nw_dst", &format_args!("{:#010x}", self.get(NW_DST)))
            .field("tp_src", &self.get(TP_SRC))
            .field("tp_dst", &self.get(TP_DST));
        d.finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_do_not_overlap_within_a_word() {
        use slots::*;
        let all = [
            IN_PORT,
            IN_PHY_PORT,
            METADATA,
            ETH_DST,
            ETH_TYPE,
            ETH_SRC,
            VLAN_VID,
            VLAN_PCP,
            NW_SRC,
            NW_DST,
            ARP_OP,
            IP_PROTO,
            IP_DSCP,
            IP_ECN,
            IPV6_FLABEL,
            TP_SRC,
            TP_DST,
            IPV6_EXTHDR,
            FLAGS,
            IPV6_SRC_HI,
            IPV6_SRC_LO,
            IPV6_DST_HI,
            IPV6_DST_LO,
            ND_TARGET_HI,
            ND_TARGET_LO,
            ARP_SHA,
            TCP_FLAGS,
            ARP_THA,
            MPLS_TC,
            MPLS_BOS,
            MPLS_LABEL,
            PBB_ISID,
            PBB_UCA,
            TUNNEL_ID,
            TUN_IPV4_SRC,
            TUN_IPV4_DST,
            TUN_IPV6_SRC_HI,
            TUN_IPV6_SRC_LO,
            TUN_IPV6_DST_HI,
            TUN_IPV6_DST_LO,
            NW_TTL,
            PKT_MARK,
            CONJ_ID,
            CT_STATE,
            CT_ZONE,
            CT_NW_PROTO,
            CT_MARK,
            CT_TP_SRC,
            CT_TP_DST,
            CT_LABEL_HI,
            CT_LABEL_LO,
            CT_IPV6_SRC_HI,
            CT_IPV6_SRC_LO,
            CT_IPV6_DST_HI,
            CT_IPV6_DST_LO,
            CT_NW_SRC,
            CT_NW_DST,
        ];
        let all: Vec<Slot> = all.into_iter().chain(REGS).collect();
        let mut used = [0u64; KEY_WORDS];
        for s in all {
            assert!(s.shift as u32 + s.bits as u32 <= 64, "{s:?}");
            assert_eq!(used[s.word as usize] & s.mask(), 0, "{s:?} overlaps");
            used[s.word as usize] |= s.mask();
        }
    }

    #[test]
    fn set_and_get() {
        let mut k = FlowKey::default();
        k.set(slots::VLAN_VID, 0x1005);
        k.set(slots::VLAN_PCP, 7);
        k.set(slots::ETH_SRC, 0x0200_0000_0001);
        assert_eq!(k.get(slots::VLAN_VID), 0x1005);
        assert_eq!(k.get(slots::VLAN_PCP), 7);
        assert_eq!(k.get(slots::ETH_SRC), 0x0200_0000_0001);
        let t = crate::TunnelMeta {
            id: 21,
            ipv4_src: 0x0a00_0001,
            ipv4_dst: 0x0a00_0002,
            ipv6_src: 7,
            ipv6_dst: u128::MAX,
        };
        k.set_tunnel(&t);
        assert_eq!(k.get(slots::TUNNEL_ID), 21);
        assert_eq!(k.get(slots::TUN_IPV4_SRC), 0x0a00_0001);
        assert_eq!(k.get(slots::TUN_IPV4_DST), 0x0a00_0002);
        assert_eq!(k.get128(slots::TUN_IPV6_SRC_HI, slots::TUN_IPV6_SRC_LO), 7);
        assert_eq!(
            k.get128(slots::TUN_IPV6_DST_HI, slots::TUN_IPV6_DST_LO),
            u128::MAX
        );
        k.set128(slots::IPV6_SRC_HI, slots::IPV6_SRC_LO, u128::MAX - 5);
        assert_eq!(
            k.get128(slots::IPV6_SRC_HI, slots::IPV6_SRC_LO),
            u128::MAX - 5
        );
    }
}
