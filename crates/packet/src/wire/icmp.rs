//! ICMP (RFC 792) and ICMPv6 (RFC 4443): type, code, checksum; and
//! ICMPv6 neighbour discovery's target (RFC 4861).

use super::header;

/// Bytes of the common ICMP header.
pub const LEN: usize = 4;
/// Bytes of a neighbour solicitation or advertisement before its options.
pub const ND_LEN: usize = 24;
/// ICMPv6 neighbour solicitation.
pub const ND_SOLICIT: u8 = 135;
/// ICMPv6 neighbour advertisement.
pub const ND_ADVERT: u8 = 136;
/// ND option: source link-layer address.
pub const ND_OPT_SLL: u8 = 1;
/// ND option: target link-layer address.
pub const ND_OPT_TLL: u8 = 2;

header! {
    /// The common ICMP / ICMPv6 header.
    Icmp, 4;
    /// Message type.
    ty, set_ty: u8 @ 0;
    /// Code.
    code, set_code: u8 @ 1;
    /// Checksum (ICMPv6's covers the pseudo-header, ICMPv4's does not).
    checksum, set_checksum: u16 @ 2;
}

impl<T: core::borrow::BorrowMut<[u8; 4]>> Icmp<T> {
    /// Rewrites the bits of `mask` in the type/code word; returns it
    /// before and after (for the checksum).
    #[inline]
    pub fn set_type_code_bits(&mut self, mask: u16, bits: u16) -> (u16, u16) {
        let old = u16::from_be_bytes([self.ty(), self.code()]);
        let new = (old & !mask) | (bits & mask);
        [self.bytes_mut()[0], self.bytes_mut()[1]] = new.to_be_bytes();
        (old, new)
    }
}

header! {
    /// A neighbour solicitation or advertisement (its options follow).
    NeighbourDiscovery, 24;
    /// Message type (135 or 136).
    ty, set_ty: u8 @ 0;
    /// Checksum.
    checksum, set_checksum: u16 @ 2;
    /// The target address.
    target, set_target: addr6 @ 8;
}

header! {
    /// A link-layer address option of neighbour discovery (RFC 4861 4.6.1)
    /// on Ethernet: type (1 source, 2 target), length 1 (8 bytes), address.
    NdOption, 8;
    /// Option type.
    ty, set_ty: u8 @ 0;
    /// Length in 8-byte units.
    len8, set_len8: u8 @ 1;
    /// The link-layer address.
    mac, set_mac: mac @ 2;
}
