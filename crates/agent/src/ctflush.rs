//! Open vSwitch's connection-tracking flush messages from a controller:
//! NXT_CT_FLUSH_ZONE and NXT_CT_FLUSH ([`ofp::msg::ct_flush`]) remove
//! connections from the pipeline's tracker ([`pipeline::Pipeline::conntrack`],
//! the one every snapshot shares), selected as Open vSwitch 3.1 selects
//! them (`ofproto/ofproto.c` handle_nxt_ct_flush_zone and
//! handle_nxt_ct_flush, `lib/ct-dpif.c` ct_dpif_flush, the userspace
//! datapath's `conntrack_flush` and `conntrack_flush_tuple`):
//!
//! * NXT_CT_FLUSH_ZONE: every connection of the zone.
//! * NXT_CT_FLUSH with nothing to match (no protocol, no address, no port;
//!   an ICMP id, type or code does not count when the protocol is 0): every
//!   connection of its zone, of every zone without NXT_CT_ZONE_ID.
//! * NXT_CT_FLUSH whose original tuple has both addresses (and, but for
//!   ICMP and ICMPv6, both ports) and whose reply tuple has neither
//!   address nor port: the one connection whose key in either direction
//!   is that tuple (protocol, addresses, ports, or ICMP id, type and
//!   code), in the message's zone or zone 0 without one.
//! * Any other NXT_CT_FLUSH: every connection (of its zone if given, of
//!   every zone if not) whose original-direction key and reply-direction
//!   key match the tuples: the address family of the addresses given, the
//!   protocol if not 0, each address and port that is not 0; for ICMP and
//!   ICMPv6 the id, type and code compared whole, 0 included.
//!
//! Nothing is answered (as Open vSwitch, which sends no reply and no
//! error when nothing matched). A slave may flush, as in Open vSwitch.
//!
//! Where sluice's decoded message says less than Open vSwitch's: Open
//! vSwitch keeps a port and an ICMP id in one place (a C union), as it
//! does a port and an ICMP type and code; sluice keeps them apart and
//! reads the ports unless the protocol is ICMP or ICMPv6, the ICMP fields
//! when it is. And Open vSwitch forgets the address family when a zero
//! address follows a non-zero one in a message (its own encoder sends no
//! zero address); sluice takes the family of the non-zero addresses.

use conntrack::{Conn, Filter, Key, Tracker};
use ofp::msg::ct_flush::{CtFlush, CtTuple};

fn is_icmp(proto: u8) -> bool {
    proto == 1 || proto == 58
}

/// An IPv4 address is kept mapped (`::ffff:a.b.c.d`) in the message and
/// in the tracker's low 32 bits.
fn is_v4_mapped(a: u128) -> bool {
    a >> 32 == 0xffff
}

/// The address family of the message's addresses: 0 (none), 4 or 6.
fn family(f: &CtFlush) -> u8 {
    [f.orig.src, f.orig.dst, f.reply.src, f.reply.dst]
        .into_iter()
        .find(|&a| a != 0)
        .map_or(0, |a| if is_v4_mapped(a) { 4 } else { 6 })
}

/// A message address as the tracker keeps it.
fn tracker_addr(a: u128, fam: u8) -> u128 {
    if fam == 4 {
        a & 0xffff_ffff
    } else {
        a
    }
}

/// Open vSwitch's `ofp_ct_tuple_is_zero`.
fn tuple_is_zero(t: &CtTuple, proto: u8) -> bool {
    t.src == 0 && t.dst == 0 && (is_icmp(proto) || (t.src_port == 0 && t.dst_port == 0))
}

/// Open vSwitch's `ofp_ct_tuple_is_five_tuple`.
fn tuple_is_five(t: &CtTuple, proto: u8) -> bool {
    t.src != 0 && t.dst != 0 && (is_icmp(proto) || (t.src_port != 0 && t.dst_port != 0))
}

/// Open vSwitch's `ct_dpif_tuple_ip_cmp_partial`.
fn tuple_matches(k: &Key, t: &CtTuple, fam: u8, proto: u8) -> bool {
    let addr_ok = |partial: u128, have: u128| partial == 0 || tracker_addr(partial, fam) == have;
    if !addr_ok(t.src, k.src_addr()) || !addr_ok(t.dst, k.dst_addr()) {
        return false;
    }
    if is_icmp(proto) {
        t.icmp_id == k.sport && (u16::from(t.icmp_type) << 8 | u16::from(t.icmp_code)) == k.dport
    } else {
        (t.src_port == 0 || t.src_port == k.sport) && (t.dst_port == 0 || t.dst_port == k.dport)
    }
}

/// Runs NXT_CT_FLUSH_ZONE: returns how many connections went.
pub(crate) fn flush_zone(t: &Tracker, zone: u16) -> usize {
    t.flush(&Filter {
        zone: Some(zone),
        ..Filter::default()
    })
}

/// Runs NXT_CT_FLUSH: returns how many connections went.
pub(crate) fn flush(t: &Tracker, f: &CtFlush) -> usize {
    let fam = family(f);
    let proto = f.ip_proto;
    if proto == 0 && fam == 0 && tuple_is_zero(&f.orig, 0) && tuple_is_zero(&f.reply, 0) {
        return t.flush(&Filter {
            zone: f.zone,
            ..Filter::default()
        });
    }
    if tuple_is_five(&f.orig, proto) && tuple_is_zero(&f.reply, proto) {
        let o = &f.orig;
        let (sport, dport) = if is_icmp(proto) {
            (
                o.icmp_id,
                u16::from(o.icmp_type) << 8 | u16::from(o.icmp_code),
            )
        } else {
            (o.src_port, o.dst_port)
        };
        let key = Key {
            src: conntrack::key::words(tracker_addr(o.src, fam)),
            dst: conntrack::key::words(tracker_addr(o.dst, fam)),
            sport,
            dport,
            zone: f.zone.unwrap_or(0),
            proto,
            v6: fam == 6,
        };
        return t.flush_if(|c: &Conn| c.key[0] == key || c.key[1] == key);
    }
    t.flush_if(|c: &Conn| {
        let k = &c.key[0];
        f.zone.is_none_or(|z| z == k.zone)
            && (fam == 0 || (fam == 6) == k.v6)
            && (proto == 0 || proto == k.proto)
            && tuple_matches(&c.key[0], &f.orig, fam, proto)
            && tuple_matches(&c.key[1], &f.reply, fam, proto)
    })
}
