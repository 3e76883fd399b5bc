//! IPv4 (RFC 791), the fixed 20 bytes; options are the caller's (`ihl`).

use super::header;
use crate::checksum as ck;

/// Bytes of the header without options.
pub const LEN: usize = 20;

header! {
    /// An IPv4 header's fixed 20 bytes.
    Ipv4, 20;
    /// Version (high 4 bits) and header length in 32-bit words (low 4).
    version_ihl, set_version_ihl: u8 @ 0;
    /// DSCP (high 6 bits) and ECN (low 2).
    tos, set_tos: u8 @ 1;
    /// Length of the datagram, header included.
    total_len, set_total_len: u16 @ 2;
    /// Identification.
    ident, set_ident: u16 @ 4;
    /// Flags (3 bits) and fragment offset (13).
    frag, set_frag: u16 @ 6;
    /// Time to live.
    ttl, set_ttl: u8 @ 8;
    /// The protocol of the payload.
    proto, set_proto: u8 @ 9;
    /// The header checksum.
    checksum, set_checksum: u16 @ 10;
    /// Source address.
    src, set_src: u32 @ 12;
    /// Destination address.
    dst, set_dst: u32 @ 16;
}

impl<T: core::borrow::Borrow<[u8; 20]>> Ipv4<T> {
    /// The IP version (4 for a real IPv4 header).
    #[inline]
    pub fn version(&self) -> u8 {
        self.version_ihl() >> 4
    }

    /// Bytes of the header, options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        (self.version_ihl() & 0x0f) as usize * 4
    }

    /// More fragments follow.
    #[inline]
    pub fn more_fragments(&self) -> bool {
        self.frag() & 0x2000 != 0
    }

    /// The fragment offset (8-byte units).
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        self.frag() & 0x1fff
    }
}

impl<T: core::borrow::BorrowMut<[u8; 20]>> Ipv4<T> {
    /// Folds a change of a 16-bit word the header covers into its
    /// checksum.
    #[inline]
    pub fn fix_checksum16(&mut self, (old, new): (u16, u16)) {
        let c = ck::update16(self.checksum(), old, new);
        self.set_checksum(c);
    }

    /// Rewrites the bits of `mask` in the TOS byte, the checksum
    /// following; returns the first word (version, IHL, TOS) before and
    /// after.
    #[inline]
    pub fn set_tos_fix(&mut self, mask: u8, bits: u8) -> (u16, u16) {
        let old = u16::from_be_bytes([self.version_ihl(), self.tos()]);
        self.set_tos((self.tos() & !mask) | (bits & mask));
        let new = u16::from_be_bytes([self.version_ihl(), self.tos()]);
        self.fix_checksum16((old, new));
        (old, new)
    }

    /// Writes the TTL, the checksum following.
    #[inline]
    pub fn set_ttl_fix(&mut self, ttl: u8) {
        let old = u16::from_be_bytes([self.ttl(), self.proto()]);
        self.set_ttl(ttl);
        self.fix_checksum16((old, u16::from_be_bytes([ttl, self.proto()])));
    }

    /// Writes the protocol, the checksum following; returns the old one.
    #[inline]
    pub fn set_proto_fix(&mut self, proto: u8) -> u8 {
        let was = self.proto();
        self.set_proto(proto);
        let (o, n) = (
            u16::from_be_bytes([self.ttl(), was]),
            u16::from_be_bytes([self.ttl(), proto]),
        );
        self.fix_checksum16((o, n));
        was
    }

    /// Writes the source address, the checksum following; returns the old
    /// one.
    #[inline]
    pub fn set_src_fix(&mut self, a: u32) -> u32 {
        let was = self.src();
        self.set_src(a);
        let c = ck::update32(self.checksum(), was, a);
        self.set_checksum(c);
        was
    }

    /// Writes the destination address, the checksum following; returns
    /// the old one.
    #[inline]
    pub fn set_dst_fix(&mut self, a: u32) -> u32 {
        let was = self.dst();
        self.set_dst(a);
        let c = ck::update32(self.checksum(), was, a);
        self.set_checksum(c);
        was
    }
}
