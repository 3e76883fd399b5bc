//! IPv6 (RFC 8200), the fixed 40 bytes; of the extension headers, the
//! first two bytes most begin with and the fragment header (walking the
//! chain is the parser's).

use super::header;

/// Bytes of the fixed header.
pub const LEN: usize = 40;
/// Bytes of a fragment header.
pub const FRAGMENT_LEN: usize = 8;

header! {
    /// An IPv6 header's fixed 40 bytes.
    Ipv6, 40;
    /// Version (4 bits), traffic class (8) and flow label (20).
    vtcfl, set_vtcfl: u32 @ 0;
    /// Length of what follows the fixed header.
    payload_len, set_payload_len: u16 @ 4;
    /// The header that follows.
    next_header, set_next_header: u8 @ 6;
    /// Hop limit.
    hop_limit, set_hop_limit: u8 @ 7;
    /// Source address.
    src, set_src: addr6 @ 8;
    /// Destination address.
    dst, set_dst: addr6 @ 24;
}

impl<T: core::borrow::Borrow<[u8; 40]>> Ipv6<T> {
    /// The IP version (6 for a real IPv6 header).
    #[inline]
    pub fn version(&self) -> u8 {
        self.bytes()[0] >> 4
    }

    /// The traffic class (DSCP in the high 6 bits, ECN in the low 2).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        (self.vtcfl() >> 20) as u8
    }

    /// The flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        self.vtcfl() & 0x000f_ffff
    }
}

impl<T: core::borrow::BorrowMut<[u8; 40]>> Ipv6<T> {
    /// Rewrites the bits of `mask` in the traffic class.
    #[inline]
    pub fn set_traffic_class_bits(&mut self, mask: u8, bits: u8) {
        let w = self.vtcfl();
        let (m, b) = ((mask as u32) << 20, (bits as u32) << 20);
        self.set_vtcfl((w & !m) | (b & m));
    }

    /// Writes the flow label (its low 20 bits).
    #[inline]
    pub fn set_flow_label(&mut self, label: u32) {
        let w = (self.vtcfl() & 0xfff0_0000) | (label & 0x000f_ffff);
        self.set_vtcfl(w);
    }
}

header! {
    /// The first two bytes of a hop-by-hop, routing or destination options
    /// header (RFC 8200 4.3, 4.4, 4.6; AH counts its length otherwise).
    ExtHeader, 2;
    /// The header that follows.
    next_header, set_next_header: u8 @ 0;
    /// Length in 8-byte units, the first 8 not counted.
    len8, set_len8: u8 @ 1;
}

header! {
    /// A fragment header (RFC 8200 4.5).
    Fragment, 8;
    /// The header that follows.
    next_header, set_next_header: u8 @ 0;
    /// Fragment offset (13 bits, 8-byte units), 2 reserved bits, and M
    /// (more fragments, the low bit).
    offset_more, set_offset_more: u16 @ 2;
    /// Identification.
    ident, set_ident: u32 @ 4;
}
