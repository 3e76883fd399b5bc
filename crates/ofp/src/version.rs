//! The OpenFlow versions sluice speaks, sets of them, and the HELLO
//! negotiation.
//!
//! sluice speaks OpenFlow 1.0, 1.2, 1.3, 1.4 and 1.5 (wire versions 1, 3,
//! 4, 5 and 6); 1.1 (wire 2), which no controller of note uses, is not
//! offered. Every version maps onto one internal representation, the
//! OpenFlow 1.3-shaped [`crate::Message`]: [`crate::Message::decode_as`]
//! and [`crate::Message::encode_as`] translate at the connection's edge,
//! and nothing behind it learns about versions.
//!
//! Negotiation (OpenFlow 1.3.5 §6.3.1, and 1.5.1 §7.5.1): each side sends
//! a HELLO whose header carries its highest version and, from 1.3.1 on, a
//! bitmap of every version it speaks. When both sent a bitmap, the
//! version is the highest bit both have; when the peer sent none, it is
//! taken to speak every version up to its header's (as Open vSwitch takes
//! it), and the version is the highest of ours within that. No common
//! version is `OFPET_HELLO_FAILED`/`OFPHFC_INCOMPATIBLE`.

use crate::msg::simple::{Hello, HelloElem};

/// One OpenFlow version sluice speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Version {
    V1_0,
    V1_2,
    V1_3,
    V1_4,
    V1_5,
}

impl Version {
    /// Every version, oldest first.
    pub const ALL: [Version; 5] = [
        Version::V1_0,
        Version::V1_2,
        Version::V1_3,
        Version::V1_4,
        Version::V1_5,
    ];

    /// The header's version byte.
    pub const fn wire(self) -> u8 {
        match self {
            Version::V1_0 => 1,
            Version::V1_2 => 3,
            Version::V1_3 => 4,
            Version::V1_4 => 5,
            Version::V1_5 => 6,
        }
    }

    /// The version a header's byte names, if sluice speaks it.
    pub const fn from_wire(v: u8) -> Option<Version> {
        Some(match v {
            1 => Version::V1_0,
            3 => Version::V1_2,
            4 => Version::V1_3,
            5 => Version::V1_4,
            6 => Version::V1_5,
            _ => return None,
        })
    }

    /// The name ovs-ofctl and Open vSwitch's `protocols` column use:
    /// `OpenFlow13`.
    pub const fn name(self) -> &'static str {
        match self {
            Version::V1_0 => "OpenFlow10",
            Version::V1_2 => "OpenFlow12",
            Version::V1_3 => "OpenFlow13",
            Version::V1_4 => "OpenFlow14",
            Version::V1_5 => "OpenFlow15",
        }
    }

    /// Reads a name as [`Version::name`] writes it (any case).
    pub fn parse(s: &str) -> Option<Version> {
        Version::ALL
            .into_iter()
            .find(|v| v.name().eq_ignore_ascii_case(s.trim()))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A set of versions: bit `n` is wire version `n`, as in the HELLO
/// bitmap's first word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Versions(u32);

impl Default for Versions {
    fn default() -> Self {
        Versions::ALL
    }
}

impl Versions {
    /// Every version sluice speaks (a bridge's default).
    pub const ALL: Versions = Versions(0b111_1010);
    /// No version.
    pub const NONE: Versions = Versions(0);

    /// The set holding only `v`.
    pub const fn only(v: Version) -> Versions {
        Versions(1 << v.wire())
    }

    /// The set with `v` added.
    pub const fn with(self, v: Version) -> Versions {
        Versions(self.0 | 1 << v.wire())
    }

    pub const fn contains(self, v: Version) -> bool {
        self.0 & (1 << v.wire()) != 0
    }

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The highest version of the set.
    pub fn highest(self) -> Option<Version> {
        Version::ALL.into_iter().rev().find(|v| self.contains(*v))
    }

    /// The lowest version of the set.
    pub fn lowest(self) -> Option<Version> {
        Version::ALL.into_iter().find(|v| self.contains(*v))
    }

    /// The set's versions, oldest first.
    pub fn iter(self) -> impl Iterator<Item = Version> {
        Version::ALL.into_iter().filter(move |v| self.contains(*v))
    }

    /// The HELLO bitmap's first word.
    pub const fn bitmap(self) -> u32 {
        self.0
    }

    /// Reads a comma-separated list of names (`OpenFlow10,OpenFlow13`), as
    /// ovs-ofctl's `-O` and the `protocols` column take it. The error names
    /// the entry it could not read.
    pub fn parse_list(s: &str) -> Result<Versions, String> {
        let mut set = Versions::NONE;
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let v = Version::parse(part).ok_or_else(|| {
                format!(
                    "unknown OpenFlow version {part:?} (expected one of {})",
                    Versions::ALL.names()
                )
            })?;
            set = set.with(v);
        }
        if set.is_empty() {
            return Err("no OpenFlow version given".into());
        }
        Ok(set)
    }

    /// The names, comma-separated, oldest first.
    pub fn names(self) -> String {
        self.iter().map(Version::name).collect::<Vec<_>>().join(",")
    }

    /// Our HELLO offering this set: the header carries the highest
    /// version, and a bitmap names every one (a peer of 1.3.1 or later
    /// reads it, an older one ignores it as the spec says it must).
    pub fn hello(self) -> Hello {
        let version = self.highest().unwrap_or(Version::V1_3).wire();
        Hello {
            version,
            elements: vec![HelloElem::VersionBitmap(vec![self.0])],
        }
    }

    /// The version to speak with a peer whose HELLO is `peer`, or None
    /// when there is none in common (the module doc gives the rule).
    pub fn negotiate(self, peer: &Hello) -> Option<Version> {
        let theirs = peer.elements.iter().find_map(|e| match e {
            HelloElem::VersionBitmap(words) => Some(words.first().copied().unwrap_or(0)),
            _ => None,
        });
        let theirs = theirs.unwrap_or_else(|| {
            // Every version up to the header's.
            let top = u32::from(peer.version.min(31));
            ((1u64 << (top + 1)) - 1) as u32
        });
        Versions(self.0 & theirs).highest()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(version: u8, bitmap: Option<u32>) -> Hello {
        Hello {
            version,
            elements: bitmap
                .map(|b| vec![HelloElem::VersionBitmap(vec![b])])
                .unwrap_or_default(),
        }
    }

    #[test]
    fn wire_numbers_and_names_round_trip() {
        for v in Version::ALL {
            assert_eq!(Version::from_wire(v.wire()), Some(v));
            assert_eq!(Version::parse(v.name()), Some(v));
            assert_eq!(Version::parse(&v.name().to_lowercase()), Some(v));
        }
        assert_eq!(Version::from_wire(2), None);
        assert_eq!(Version::from_wire(7), None);
        assert_eq!(
            Versions::ALL.names(),
            "OpenFlow10,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15"
        );
    }

    #[test]
    fn negotiation_takes_the_highest_common_version() {
        let all = Versions::ALL;
        // A 1.0-only peer (no bitmap).
        assert_eq!(all.negotiate(&hello(1, None)), Some(Version::V1_0));
        // A 1.1 peer without bitmap speaks 1.0 and 1.1: we meet at 1.0.
        assert_eq!(all.negotiate(&hello(2, None)), Some(Version::V1_0));
        // A newer peer than us without bitmap: our highest.
        assert_eq!(all.negotiate(&hello(9, None)), Some(Version::V1_5));
        // A bitmap wins over the header.
        assert_eq!(
            all.negotiate(&hello(6, Some(1 << 4 | 1 << 1))),
            Some(Version::V1_3)
        );
        assert_eq!(all.negotiate(&hello(6, Some(1 << 2))), None);
        // Our set restricted.
        let only13 = Versions::only(Version::V1_3);
        assert_eq!(only13.negotiate(&hello(1, None)), None);
        assert_eq!(only13.negotiate(&hello(4, None)), Some(Version::V1_3));
        assert_eq!(
            only13.negotiate(&hello(6, Some(0b111_0010))),
            Some(Version::V1_3)
        );
    }

    #[test]
    fn lists_parse_with_clear_errors() {
        assert_eq!(
            Versions::parse_list("OpenFlow10, openflow15").unwrap(),
            Versions::only(Version::V1_0).with(Version::V1_5)
        );
        let e = Versions::parse_list("OpenFlow11").unwrap_err();
        assert!(e.contains("OpenFlow11"), "{e}");
        assert!(Versions::parse_list("").is_err());
    }

    #[test]
    fn our_hello_names_every_version() {
        let h = Versions::ALL.hello();
        assert_eq!(h.version, 6);
        assert_eq!(Versions::ALL.negotiate(&h), Some(Version::V1_5));
    }
}
