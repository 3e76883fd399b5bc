//! VXLAN (RFC 7348): flags (I: the VNI is valid) and a 24-bit VNI.

use super::header;

/// Bytes of the header.
pub const LEN: usize = 8;
/// The I flag: the VNI is valid.
pub const FLAG_VNI: u8 = 0x08;

header! {
    /// A VXLAN header.
    Vxlan, 8;
    /// Flags.
    flags, set_flags: u8 @ 0;
    /// The VNI (high 24 bits) and a reserved byte.
    vni_word, set_vni_word: u32 @ 4;
}

impl<T: core::borrow::Borrow<[u8; 8]>> Vxlan<T> {
    /// The VNI.
    #[inline]
    pub fn vni(&self) -> u32 {
        self.vni_word() >> 8
    }
}

/// The header that carries a frame with `vni` (its low 24 bits): flag I
/// only.
pub fn header(vni: u32) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    let mut h = Vxlan(&mut b);
    h.set_flags(FLAG_VNI);
    h.set_vni_word((vni & 0x00ff_ffff) << 8);
    b
}
