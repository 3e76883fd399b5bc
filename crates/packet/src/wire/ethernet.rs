//! Ethernet II (IEEE 802.3): destination and source MAC, EtherType.

use super::header;

/// Bytes of the header (no tags).
pub const LEN: usize = 14;

header! {
    /// The 14 bytes of an Ethernet header (the EtherType here is the
    /// outermost one: a VLAN tag's TPID when the frame is tagged).
    Ethernet, 14;
    /// Destination MAC.
    dst, set_dst: mac @ 0;
    /// Source MAC.
    src, set_src: mac @ 6;
    /// EtherType (or the first tag's TPID).
    ethertype, set_ethertype: u16 @ 12;
}

/// The two MAC addresses, the first 12 bytes of a frame.
pub const ADDRS_LEN: usize = 12;

header! {
    /// A frame's two MAC addresses (what a frame whose EtherType lies
    /// after tags begins with).
    Addrs, 12;
    /// Destination MAC.
    dst, set_dst: mac @ 0;
    /// Source MAC.
    src, set_src: mac @ 6;
}

header! {
    /// An EtherType (or a tag's TPID) where the parser found one.
    EtherType, 2;
    /// Its value.
    value, set_value: u16 @ 0;
}
