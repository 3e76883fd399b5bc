//! Geneve (RFC 8926): version, options length, O and C bits, protocol
//! type, 24-bit VNI, then options (class, type, length in 4-byte words),
//! which [`options`] walks.

use super::header;

/// Bytes of the header without options.
pub const LEN: usize = 8;
/// Protocol type of an Ethernet payload (transparent Ethernet bridging).
pub const ETH_BRIDGING: u16 = 0x6558;

header! {
    /// A Geneve header's fixed 8 bytes.
    Geneve, 8;
    /// Version (2 bits) and options length (6 bits, 4-byte words).
    ver_optlen, set_ver_optlen: u8 @ 0;
    /// O (control message) and C (critical options) bits, reserved bits.
    flags, set_flags: u8 @ 1;
    /// The payload's protocol type.
    protocol, set_protocol: u16 @ 2;
    /// The VNI (high 24 bits) and a reserved byte.
    vni_word, set_vni_word: u32 @ 4;
}

impl<T: core::borrow::Borrow<[u8; 8]>> Geneve<T> {
    /// The version (0).
    #[inline]
    pub fn version(&self) -> u8 {
        self.ver_optlen() >> 6
    }

    /// Bytes of options after the fixed header.
    #[inline]
    pub fn options_len(&self) -> usize {
        4 * (self.ver_optlen() & 0x3f) as usize
    }

    /// A control message (O bit).
    #[inline]
    pub fn is_control(&self) -> bool {
        self.flags() & 0x80 != 0
    }

    /// Critical options present (C bit).
    #[inline]
    pub fn has_critical(&self) -> bool {
        self.flags() & 0x40 != 0
    }

    /// The VNI.
    #[inline]
    pub fn vni(&self) -> u32 {
        self.vni_word() >> 8
    }
}

/// The header (no options) that carries an Ethernet frame with `vni` (its
/// low 24 bits): version 0, O and C clear.
pub fn header(vni: u32) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    let mut h = Geneve(&mut b);
    h.set_protocol(ETH_BRIDGING);
    h.set_vni_word((vni & 0x00ff_ffff) << 8);
    b
}

/// One Geneve option: its class, type (the high bit: critical) and data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeneveOption<'a> {
    pub class: u16,
    pub ty: u8,
    pub data: &'a [u8],
}

/// The options of a header's option bytes (what follows the fixed 8, as
/// long as [`Geneve::options_len`] says), in order; ends at the first
/// option that does not fit.
pub fn options(mut b: &[u8]) -> impl Iterator<Item = GeneveOption<'_>> {
    std::iter::from_fn(move || {
        let h: &[u8; 4] = b.get(..4)?.try_into().ok()?;
        let len = 4 * (h[3] & 0x1f) as usize;
        let data = b.get(4..4 + len)?;
        let o = GeneveOption {
            class: u16::from_be_bytes([h[0], h[1]]),
            ty: h[2],
            data,
        };
        b = &b[4 + len..];
        Some(o)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_walked_and_a_short_one_ends_the_walk() {
        // class 0x0102 type 0x80 (critical) 4 bytes; class 0xffff type 1
        // no data; then one that claims 8 bytes but has 4.
        let b = [
            1, 2, 0x80, 1, 9, 9, 9, 9, 0xff, 0xff, 1, 0, 0, 0, 0, 2, 1, 2, 3, 4,
        ];
        let v: Vec<_> = options(&b).collect();
        assert_eq!(v.len(), 2);
        assert_eq!(
            (v[0].class, v[0].ty, v[0].data),
            (0x0102, 0x80, &[9u8; 4][..])
        );
        assert_eq!((v[1].class, v[1].ty, v[1].data.len()), (0xffff, 1, 0));
    }
}
