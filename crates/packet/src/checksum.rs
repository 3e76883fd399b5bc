//! Checksums: the Internet checksum (RFC 1071) in full and updated
//! incrementally (RFC 1624), the pseudo-headers of TCP/UDP/ICMPv6, the UDP
//! zero-checksum rule, and CRC32c for SCTP (RFC 4960 / RFC 3309).
//!
//! Incremental updates are what the fast path uses when an action rewrites
//! an address or port: the cost is a few additions, independent of the
//! packet's length (the Erlang switch this project descends from spent 70% of
//! its time recomputing checksums from scratch).

/// One's-complement sum of `data` added to `acc`, not yet folded. Odd
/// lengths are padded with a zero byte, as RFC 1071 says.
#[inline]
pub fn sum(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u64) << 8;
    }
    acc
}

/// Folds a sum to 16 bits and complements it: the checksum field's value.
#[inline]
pub fn finish(mut acc: u64) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The Internet checksum of `data` (with its checksum field zeroed, or
/// included: then a correct packet gives 0).
#[inline]
pub fn internet(data: &[u8]) -> u16 {
    finish(sum(data, 0))
}

/// The IPv4 pseudo-header sum for TCP/UDP.
pub fn pseudo_v4(src: [u8; 4], dst: [u8; 4], proto: u8, len: u16) -> u64 {
    sum(&src, 0) + sum(&dst, 0) + proto as u64 + len as u64
}

/// The IPv6 pseudo-header sum for TCP/UDP/ICMPv6.
pub fn pseudo_v6(src: [u8; 16], dst: [u8; 16], next: u8, len: u32) -> u64 {
    sum(&src, 0) + sum(&dst, 0) + (len >> 16) as u64 + (len & 0xffff) as u64 + next as u64
}

/// RFC 1624 eqn. 3: the new checksum after a 16-bit word changed from `old`
/// to `new`: HC' = ~(~HC + ~m + m').
#[inline]
pub fn update16(check: u16, old: u16, new: u16) -> u16 {
    finish((!check) as u64 + (!old) as u64 + new as u64)
}

/// Like [`update16`] for a 32-bit field (an IPv4 address).
#[inline]
pub fn update32(check: u16, old: u32, new: u32) -> u16 {
    let acc = (!check) as u64
        + (!(old >> 16) as u16) as u64
        + (!(old as u16)) as u64
        + (new >> 16) as u64
        + (new & 0xffff) as u64;
    finish(acc)
}

/// Like [`update16`] for any even-length field (IPv6 addresses, MACs).
pub fn update_bytes(check: u16, old: &[u8], new: &[u8]) -> u16 {
    debug_assert_eq!(old.len(), new.len());
    let mut acc = (!check) as u64;
    for (o, n) in old.chunks(2).zip(new.chunks(2)) {
        let ov = u16::from_be_bytes([o[0], *o.get(1).unwrap_or(&0)]);
        let nv = u16::from_be_bytes([n[0], *n.get(1).unwrap_or(&0)]);
        acc += (!ov) as u64 + nv as u64;
    }
    finish(acc)
}

/// The UDP rule for IPv4: a checksum of 0 means "none" and stays 0 under
/// updates; a computed 0 is sent as 0xffff.
#[inline]
pub fn udp_update16(check: u16, old: u16, new: u16) -> u16 {
    if check == 0 {
        return 0;
    }
    match update16(check, old, new) {
        0 => 0xffff,
        c => c,
    }
}

/// [`udp_update16`] for a 32-bit field.
#[inline]
pub fn udp_update32(check: u16, old: u32, new: u32) -> u16 {
    if check == 0 {
        return 0;
    }
    match update32(check, old, new) {
        0 => 0xffff,
        c => c,
    }
}

/// A full UDP checksum over `segment` (header with zero checksum + data):
/// a computed 0 becomes 0xffff.
pub fn udp_full(pseudo: u64, segment: &[u8]) -> u16 {
    match finish(sum(segment, pseudo)) {
        0 => 0xffff,
        c => c,
    }
}

const fn crc32c_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static CRC32C: [u32; 256] = crc32c_table();

/// CRC32c (Castagnoli), as SCTP uses it.
pub fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = CRC32C[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

/// The SCTP checksum field for `packet` (common header + chunks, with its
/// checksum field, bytes 8..12, zeroed): CRC32c stored least significant
/// byte first, as RFC 4960 appendix B and every stack do.
pub fn sctp(packet: &[u8]) -> [u8; 4] {
    crc32c(packet).to_le_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rfc1071_example_and_crc32c_vector() {
        // RFC 1071 section 3 example: sum 0xddf2, checksum 0x220d.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(internet(&data), !0xddf2);
        // The standard CRC32c check value.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn ipv4_header_checksum_of_a_real_header() {
        // A header captured from the wire (checksum 0xb861).
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(internet(&h), 0xb861);
        h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert_eq!(internet(&h), 0);
    }

    proptest! {
        #[test]
        fn incremental_equals_full(mut data in proptest::collection::vec(any::<u8>(), 4..200), at in any::<prop::sample::Index>(), new16 in any::<u16>(), new32 in any::<u32>()) {
            let len = data.len() & !1;
            let i = at.index(len / 2 - 1) * 2;
            let before = internet(&data);
            let old = u16::from_be_bytes([data[i], data[i + 1]]);
            data[i..i + 2].copy_from_slice(&new16.to_be_bytes());
            let updated = update16(before, old, new16);
            // One's complement has two zeros; compare as sums (both fold alike).
            prop_assert_eq!(finish(!updated as u64), finish(!internet(&data) as u64));
            if i + 4 <= len {
                let before = internet(&data);
                let old = u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
                data[i..i + 4].copy_from_slice(&new32.to_be_bytes());
                let u = update32(before, old, new32);
                prop_assert_eq!(finish(!u as u64), finish(!internet(&data) as u64));
                let old_b = data[i..i + 4].to_vec();
                let before = internet(&data);
                let newb = [1u8, 2, 3, 4];
                data[i..i + 4].copy_from_slice(&newb);
                prop_assert_eq!(finish(!update_bytes(before, &old_b, &newb) as u64), finish(!internet(&data) as u64));
            }
        }
    }

    #[test]
    fn udp_zero_rule() {
        assert_eq!(udp_update16(0, 1, 2), 0);
        // ~0x1234 + ~0 + 0x1234 folds to 0xffff, so the plain update gives 0...
        assert_eq!(update16(0x1234, 0, 0x1234), 0);
        // ...which UDP must send as 0xffff (0 would mean "no checksum").
        assert_eq!(udp_update16(0x1234, 0, 0x1234), 0xffff);
    }
}
