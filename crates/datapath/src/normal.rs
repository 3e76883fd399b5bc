//! The NORMAL action: an Ethernet learning switch, VLAN-aware, with aging.
//!
//! Learns (VLAN, source MAC) -> ingress port from every frame it sees;
//! forwards to the learned port of (VLAN, destination MAC), floods unknown,
//! broadcast and multicast destinations, and never sends a frame back out of
//! its ingress port. Entries age out after `aging_ns` without traffic
//! (300 s by default, as in Open vSwitch and the Linux bridge).

use std::collections::HashMap;

/// Default aging time.
pub const DEFAULT_AGING_NS: u64 = 300 * 1_000_000_000;

/// Where NORMAL sends a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Port(u32),
    Flood,
    Drop,
}

/// The MAC learning table.
#[derive(Debug)]
pub struct MacTable {
    entries: HashMap<(u16, u64), (u32, u64)>,
    pub aging_ns: u64,
    pub max_entries: usize,
}

impl Default for MacTable {
    fn default() -> Self {
        MacTable {
            entries: HashMap::new(),
            aging_ns: DEFAULT_AGING_NS,
            max_entries: 8192,
        }
    }
}

impl MacTable {
    /// Learns `src` on `port` and decides where a frame to `dst` goes.
    pub fn forward(&mut self, vlan: u16, src: u64, dst: u64, port: u32, now_ns: u64) -> Decision {
        let multicast = |m: u64| m & (1 << 40) != 0;
        if !multicast(src)
            && src != 0
            && (self.entries.len() < self.max_entries || self.entries.contains_key(&(vlan, src)))
        {
            self.entries.insert((vlan, src), (port, now_ns));
        }
        if multicast(dst) {
            return Decision::Flood;
        }
        match self.entries.get(&(vlan, dst)) {
            Some(&(p, seen)) if now_ns.saturating_sub(seen) < self.aging_ns => {
                if p == port {
                    Decision::Drop
                } else {
                    Decision::Port(p)
                }
            }
            _ => Decision::Flood,
        }
    }

    /// Drops entries older than the aging time, and those on `gone_port`.
    pub fn expire(&mut self, now_ns: u64, gone_port: Option<u32>) {
        let aging = self.aging_ns;
        self.entries
            .retain(|_, (p, seen)| now_ns.saturating_sub(*seen) < aging && Some(*p) != gone_port);
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_floods_and_ages() {
        let mut t = MacTable::default();
        let (a, b) = (0x0200_0000_000a, 0x0200_0000_000b);
        assert_eq!(
            t.forward(0, a, b, 1, 0),
            Decision::Flood,
            "unknown destination floods"
        );
        assert_eq!(
            t.forward(0, b, a, 2, 1),
            Decision::Port(1),
            "learned from the first frame"
        );
        assert_eq!(t.forward(0, a, b, 1, 2), Decision::Port(2));
        assert_eq!(
            t.forward(5, a, b, 1, 3),
            Decision::Flood,
            "VLANs learn apart"
        );
        assert_eq!(
            t.forward(0, a, 0xffff_ffff_ffff, 1, 4),
            Decision::Flood,
            "broadcast floods"
        );
        assert_eq!(
            t.forward(0, b, a, 1, 5),
            Decision::Drop,
            "never back out of the ingress port"
        );
        t.expire(DEFAULT_AGING_NS + 10, None);
        assert!(t.is_empty());
    }
}
