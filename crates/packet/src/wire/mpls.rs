//! An MPLS label stack entry (RFC 3032) and a PBB I-TAG (IEEE 802.1ah),
//! the 4-byte headers between Ethernet and IP.

use super::header;

/// Bytes of a label stack entry, and of an I-TAG's TCI and I-SID.
pub const LEN: usize = 4;

header! {
    /// A label stack entry: label (20 bits), traffic class (3), bottom of
    /// stack (1), TTL (8).
    Mpls, 4;
    /// The whole entry.
    lse, set_lse: u32 @ 0;
    /// Time to live.
    ttl, set_ttl: u8 @ 3;
}

impl<T: core::borrow::BorrowMut<[u8; 4]>> Mpls<T> {
    /// Rewrites the bits of `mask` in the entry.
    #[inline]
    pub fn set_lse_bits(&mut self, mask: u32, bits: u32) {
        let w = self.lse();
        self.set_lse((w & !mask) | (bits & mask));
    }
}

impl<T: core::borrow::Borrow<[u8; 4]>> Mpls<T> {
    /// Bottom of stack: no entry follows.
    #[inline]
    pub fn bos(&self) -> bool {
        self.lse() & 0x100 != 0
    }
}

header! {
    /// A PBB I-TAG after its TPID: priority, DEI, UCA (bit 27), I-SID (24).
    Itag, 4;
    /// The whole word.
    word, set_word: u32 @ 0;
}

impl<T: core::borrow::BorrowMut<[u8; 4]>> Itag<T> {
    /// Rewrites the bits of `mask` in the word.
    #[inline]
    pub fn set_bits(&mut self, mask: u32, bits: u32) {
        let w = self.word();
        self.set_word((w & !mask) | (bits & mask));
    }
}
