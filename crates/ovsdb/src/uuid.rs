//! UUIDs as OVSDB writes them (`["uuid", "8-4-4-4-12"]`), and a source of
//! fresh random ones.
//!
//! Fresh UUIDs are version 4: a xorshift generator seeded once from
//! `/dev/urandom` (with the clock and pid mixed in, should it be absent).
//! They name rows and transactions; nothing here is a secret, so a fast
//! generator is enough, but two daemons must not draw the same sequence.

use std::fmt;

/// A 128-bit UUID.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Uuid(pub u128);

impl Uuid {
    pub const ZERO: Uuid = Uuid(0);

    /// Parses the 36-character form `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`.
    pub fn parse(s: &str) -> Option<Uuid> {
        let b = s.as_bytes();
        if b.len() != 36 {
            return None;
        }
        let mut v: u128 = 0;
        for (i, &c) in b.iter().enumerate() {
            if matches!(i, 8 | 13 | 18 | 23) {
                if c != b'-' {
                    return None;
                }
                continue;
            }
            let d = (c as char).to_digit(16)?;
            v = (v << 4) | d as u128;
        }
        Some(Uuid(v))
    }
}

impl fmt::Display for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = format!("{:032x}", self.0);
        write!(
            f,
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }
}

impl fmt::Debug for Uuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A generator of fresh version-4 UUIDs.
pub struct UuidGen {
    state: [u64; 2],
}

impl UuidGen {
    /// Seeded from the system's randomness.
    pub fn new() -> UuidGen {
        let mut seed = [0u8; 16];
        let got = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut seed));
        let mut a = u64::from_le_bytes(seed[..8].try_into().unwrap_or_default());
        let mut b = u64::from_le_bytes(seed[8..].try_into().unwrap_or_default());
        if got.is_err() || (a == 0 && b == 0) {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            a ^= t;
            b ^= (std::process::id() as u64) << 32 | 0x9e37_79b9;
        }
        UuidGen::seeded(a, b)
    }

    /// A fixed sequence (tests).
    pub fn seeded(a: u64, b: u64) -> UuidGen {
        UuidGen {
            state: [a | 1, b ^ 0x5851_f42d_4c95_7f2d],
        }
    }

    fn next_u64(&mut self) -> u64 {
        // xorshift128+
        let mut s1 = self.state[0];
        let s0 = self.state[1];
        self.state[0] = s0;
        s1 ^= s1 << 23;
        self.state[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
        self.state[1].wrapping_add(s0)
    }

    /// A fresh UUID (version 4, variant 1).
    pub fn fresh(&mut self) -> Uuid {
        let v = ((self.next_u64() as u128) << 64) | self.next_u64() as u128;
        let v = (v & !(0xf << 76)) | (0x4 << 76);
        let v = (v & !(0x3 << 62)) | (0x2 << 62);
        Uuid(v)
    }
}

impl Default for UuidGen {
    fn default() -> Self {
        UuidGen::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut g = UuidGen::seeded(1, 2);
        for _ in 0..100 {
            let u = g.fresh();
            let s = u.to_string();
            assert_eq!(s.len(), 36);
            assert_eq!(&s[14..15], "4");
            assert_eq!(Uuid::parse(&s), Some(u));
        }
        assert_eq!(Uuid::parse("not-a-uuid"), None);
        assert_eq!(
            Uuid::parse("0123456789abcdef0123456789abcdef0123"),
            None,
            "dashes are required"
        );
    }
}
