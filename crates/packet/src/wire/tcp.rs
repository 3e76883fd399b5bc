//! TCP (RFC 9293), the fixed 20 bytes.

use super::header;

/// Bytes of the header without options.
pub const LEN: usize = 20;

header! {
    /// A TCP header's fixed 20 bytes.
    Tcp, 20;
    /// Source port.
    src_port, set_src_port: u16 @ 0;
    /// Destination port.
    dst_port, set_dst_port: u16 @ 2;
    /// Sequence number.
    seq, set_seq: u32 @ 4;
    /// Acknowledgement number.
    ack, set_ack: u32 @ 8;
    /// Data offset (4 bits, 32-bit words), reserved bits and the 12 flag
    /// bits (`tcp_flags`).
    offset_flags, set_offset_flags: u16 @ 12;
    /// Receive window.
    window, set_window: u16 @ 14;
    /// Checksum (pseudo-header, header and data).
    checksum, set_checksum: u16 @ 16;
    /// Urgent pointer.
    urgent, set_urgent: u16 @ 18;
}

impl<T: core::borrow::Borrow<[u8; 20]>> Tcp<T> {
    /// Bytes of the header, options included (data offset).
    #[inline]
    pub fn header_len(&self) -> usize {
        (self.offset_flags() >> 12) as usize * 4
    }

    /// The 12 flag bits (`tcp_flags`).
    #[inline]
    pub fn flags(&self) -> u16 {
        self.offset_flags() & 0x0fff
    }
}
