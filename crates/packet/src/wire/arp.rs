//! ARP (RFC 826) for Ethernet and IPv4, the 28 bytes OpenFlow matches.

use super::header;

/// Bytes of an Ethernet/IPv4 ARP packet.
pub const LEN: usize = 28;

/// Hardware type Ethernet, protocol IPv4, lengths 6 and 4: the only ARP
/// whose fields OpenFlow matches.
pub const ETHERNET_IPV4: [u8; 6] = [0, 1, 8, 0, 6, 4];

header! {
    /// An Ethernet/IPv4 ARP packet.
    Arp, 28;
    /// The operation (1 request, 2 reply; RARP 3 and 4).
    op, set_op: u16 @ 6;
    /// Sender hardware address.
    sha, set_sha: mac @ 8;
    /// Sender protocol address.
    spa, set_spa: u32 @ 14;
    /// Target hardware address.
    tha, set_tha: mac @ 18;
    /// Target protocol address.
    tpa, set_tpa: u32 @ 24;
}

impl<T: core::borrow::Borrow<[u8; 28]>> Arp<T> {
    /// Whether this is Ethernet/IPv4 ARP ([`ETHERNET_IPV4`]).
    #[inline]
    pub fn is_ethernet_ipv4(&self) -> bool {
        self.bytes()[..6] == ETHERNET_IPV4
    }
}
