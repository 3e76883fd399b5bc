//! The one follow-up of a transport checksum after bytes it covers changed
//! (a NAT, a set_field), for every transport the switch edits: TCP, UDP
//! (and UDP-Lite), ICMP and ICMPv6. SCTP's CRC32c cannot be updated
//! incrementally: whoever changes what it covers recomputes it.

use super::icmp::Icmp;
use super::tcp::Tcp;
use super::udp::Udp;
use crate::checksum as ck;
use crate::parse::ipproto;

/// Folds a change of covered bytes, from `old` to `new` (same length, at
/// most 16), into the checksum of the transport header `proto` at `at` in
/// `frame`. `pseudo`: the bytes are in the IP pseudo-header (addresses,
/// protocol), which ICMPv4's checksum does not cover. A UDP datagram
/// without a checksum (0) stays without (an update of zero would be
/// wrong; Open vSwitch leaves it too); a UDP checksum that comes out zero
/// is sent as 0xffff (RFC 768). A header the frame does not hold whole,
/// or another protocol, changes nothing.
#[inline]
pub fn fix_checksum(frame: &mut [u8], at: usize, proto: u8, old: &[u8], new: &[u8], pseudo: bool) {
    match proto {
        ipproto::TCP => {
            if let Some(mut h) = Tcp::at_mut(frame, at) {
                let c = ck::update_bytes(h.checksum(), old, new);
                h.set_checksum(c);
            }
        }
        ipproto::UDP => {
            if let Some(mut h) = Udp::at_mut(frame, at) {
                let c = h.checksum();
                if c == 0 {
                    return;
                }
                let n = ck::update_bytes(c, old, new);
                h.set_checksum(if n == 0 { 0xffff } else { n });
            }
        }
        // UDP-Lite's checksum is mandatory: always updated.
        ipproto::UDPLITE => {
            if let Some(mut h) = Udp::at_mut(frame, at) {
                let c = ck::update_bytes(h.checksum(), old, new);
                h.set_checksum(c);
            }
        }
        ipproto::ICMP if pseudo => {}
        ipproto::ICMP | ipproto::ICMPV6 => {
            if let Some(mut h) = Icmp::at_mut(frame, at) {
                let c = ck::update_bytes(h.checksum(), old, new);
                h.set_checksum(c);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::build::{self, Ip, IpFields, Transport};

    /// After a change and its fix-up, the segment's checksum verifies.
    #[test]
    fn a_fixed_checksum_verifies() {
        let (s, d) = (Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]));
        for t in [
            Transport::Tcp {
                sport: 1,
                dport: 2,
                seq: 7,
                ack: 0,
                flags: 2,
                window: 100,
                options: &[],
            },
            Transport::Udp { sport: 1, dport: 2 },
            Transport::Icmp {
                v6: false,
                ty: 8,
                code: 0,
                rest: [0, 1, 0, 1],
            },
        ] {
            let mut p = build::ip(s, d, &IpFields::default(), &t, &[1, 2, 3]);
            assert!(build::checksums_ok(&p));
            let proto = p[9];
            // A port (or the ICMP id) changes: not in the pseudo-header.
            let old = [p[24], p[25]];
            [p[24], p[25]] = [0x12, 0x34];
            fix_checksum(&mut p, 20, proto, &old, &[0x12, 0x34], false);
            assert!(build::checksums_ok(&p), "{t:?}");
        }
    }

    #[test]
    fn a_udp_datagram_without_checksum_stays_without() {
        let (s, d) = (Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]));
        let mut p = build::ip(
            s,
            d,
            &IpFields::default(),
            &Transport::Udp { sport: 1, dport: 2 },
            &[],
        );
        [p[26], p[27]] = [0, 0];
        fix_checksum(&mut p, 20, ipproto::UDP, &[0, 1], &[0, 9], false);
        assert_eq!([p[26], p[27]], [0, 0]);
    }
}
