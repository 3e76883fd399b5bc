//! Builders of well-formed frames (valid lengths and checksums), for tests,
//! benchmarks and tools that need traffic without a capture.

use crate::checksum;

/// An Ethernet/IPv4/TCP frame with no payload and correct checksums.
pub fn tcp_v4(
    src_mac: [u8; 6],
    dst_mac: [u8; 6],
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    dport: u16,
    flags: u8,
) -> Vec<u8> {
    let mut f = Vec::with_capacity(54);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    let ip_start = f.len();
    f.extend_from_slice(&[0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    let ip_sum = checksum::internet(&f[ip_start..]);
    f[ip_start + 10..ip_start + 12].copy_from_slice(&ip_sum.to_be_bytes());
    let tcp_start = f.len();
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0x10, 0, 0, 0, 0, 0]);
    let pseudo = checksum::pseudo_v4(src, dst, 6, 20);
    let tcp_sum = checksum::finish(checksum::sum(&f[tcp_start..], pseudo));
    f[tcp_start + 16..tcp_start + 18].copy_from_slice(&tcp_sum.to_be_bytes());
    f
}

/// The sample TCP frame tests and benchmarks share: 02:00:00:00:00:01 /
/// 10.0.0.1:1234 to 02:00:00:00:00:02 / 10.0.0.2:`dport`.
pub fn sample_tcp(dport: u16, flags: u8) -> Vec<u8> {
    tcp_v4(
        [2, 0, 0, 0, 0, 1],
        [2, 0, 0, 0, 0, 2],
        [10, 0, 0, 1],
        [10, 0, 0, 2],
        1234,
        dport,
        flags,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_verify() {
        let f = tcp_v4(
            [2, 0, 0, 0, 0, 1],
            [2, 0, 0, 0, 0, 2],
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            1234,
            80,
            0x02,
        );
        assert_eq!(checksum::internet(&f[14..34]), 0);
        let pseudo = checksum::pseudo_v4([10, 0, 0, 1], [10, 0, 0, 2], 6, 20);
        assert_eq!(checksum::finish(checksum::sum(&f[34..], pseudo)), 0);
    }
}
