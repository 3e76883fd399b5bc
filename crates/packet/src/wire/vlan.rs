//! An 802.1Q / 802.1ad tag as it sits in a frame: its TPID, then the TCI
//! (PCP 3 bits, DEI 1, VID 12); the next EtherType follows.

use super::header;

/// Bytes of a tag (TPID and TCI).
pub const LEN: usize = 4;

header! {
    /// A tag: TPID and TCI (the next EtherType, or the next tag, follows).
    Vlan, 4;
    /// The tag protocol identifier (0x8100, 0x88a8, 0x9100).
    tpid, set_tpid: u16 @ 0;
    /// The tag control information.
    tci, set_tci: u16 @ 2;
}

impl<T: core::borrow::Borrow<[u8; 4]>> Vlan<T> {
    /// The VLAN id (12 bits).
    #[inline]
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }

    /// The priority code point (3 bits).
    #[inline]
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }
}

impl<T: core::borrow::BorrowMut<[u8; 4]>> Vlan<T> {
    /// Rewrites the bits of `mask` in the TCI; returns it before and after.
    #[inline]
    pub fn set_tci_bits(&mut self, mask: u16, bits: u16) -> (u16, u16) {
        let old = self.tci();
        let new = (old & !mask) | (bits & mask);
        self.set_tci(new);
        (old, new)
    }
}
