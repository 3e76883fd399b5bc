//! UDP (RFC 768) and SCTP's common header (RFC 9260): ports first, then
//! each protocol's own.

use super::header;

/// Bytes of a UDP header.
pub const LEN: usize = 8;
/// Bytes of SCTP's common header.
pub const SCTP_LEN: usize = 12;

header! {
    /// A UDP header.
    Udp, 8;
    /// Source port.
    src_port, set_src_port: u16 @ 0;
    /// Destination port.
    dst_port, set_dst_port: u16 @ 2;
    /// Length of the datagram, header included.
    length, set_length: u16 @ 4;
    /// Checksum; 0: none (IPv4, and IPv6 tunnels under RFC 6935).
    checksum, set_checksum: u16 @ 6;
}

header! {
    /// SCTP's common header.
    Sctp, 12;
    /// Source port.
    src_port, set_src_port: u16 @ 0;
    /// Destination port.
    dst_port, set_dst_port: u16 @ 2;
    /// Verification tag.
    vtag, set_vtag: u32 @ 4;
    /// CRC32c of the whole packet (this field zero while computed).
    crc, set_crc: u32 @ 8;
}

header! {
    /// The two ports every transport header that has them begins with
    /// (TCP, UDP, SCTP).
    Ports, 4;
    /// Source port.
    src, set_src: u16 @ 0;
    /// Destination port.
    dst, set_dst: u16 @ 2;
}
