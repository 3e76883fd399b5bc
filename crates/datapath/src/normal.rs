//! The NORMAL action: an Ethernet learning switch, VLAN-aware, with aging.
//!
//! Learns (VLAN, source MAC) -> ingress port from every frame it sees;
//! forwards to the learned port of (VLAN, destination MAC), floods unknown,
//! broadcast and multicast destinations, and never sends a frame back out of
//! its ingress port. Entries age out after `aging_ns` without traffic
//! (300 s by default, as in Open vSwitch and the Linux bridge).

use std::sync::atomic::{AtomicU64, Ordering};

use pipeline::trace::NormalHop;
use pipeline::PortTable;

/// Whether a MAC is a group (broadcast or multicast) address.
fn multicast(mac: u64) -> bool {
    mac & (1 << 40) != 0
}

/// Default aging time.
pub const DEFAULT_AGING_NS: u64 = 300 * 1_000_000_000;

/// Where NORMAL sends a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Port(u32),
    Flood,
    Drop,
}

/// The MAC learning table, shared by every worker of a bridge without a
/// lock.
///
/// Open addressing over a fixed array of slots, each a key word
/// (`vlan << 48 | mac`, plus one so that 0 means empty) and a value word
/// (`port << 32 | last seen in ms`, 0 while being written). Probes are
/// bounded ([`PROBES`]); when every slot of a probe window is live the new
/// address is not learned and its frames flood, which is always correct.
/// A reader checks the key before and after reading the value, so it never
/// takes another address's port; at worst a racing update makes one frame
/// flood. Refreshing an entry's time is written at most once a second, so
/// that workers do not bounce its cache line on every frame.
pub struct MacTable {
    slots: Box<[Slot]>,
    pub aging_ns: u64,
}

#[derive(Default)]
struct Slot {
    key: AtomicU64,
    value: AtomicU64,
}

/// Slots looked at per address.
pub const PROBES: usize = 8;

/// Default capacity in addresses (Open vSwitch's default is 2 048).
pub const DEFAULT_CAPACITY: usize = 8192;

impl Default for MacTable {
    fn default() -> Self {
        MacTable::with_capacity(DEFAULT_CAPACITY)
    }
}

fn hash(k: u64) -> u64 {
    // A multiplicative mix (Fibonacci hashing) of the key's bits.
    (k ^ (k >> 29)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

impl MacTable {
    /// A table for about `capacity` addresses (twice as many slots).
    pub fn with_capacity(capacity: usize) -> MacTable {
        let n = (capacity * 2).next_power_of_two().max(PROBES);
        MacTable {
            slots: (0..n).map(|_| Slot::default()).collect(),
            aging_ns: DEFAULT_AGING_NS,
        }
    }

    fn window(&self, key: u64) -> impl Iterator<Item = &Slot> {
        let mask = self.slots.len() - 1;
        let h = (hash(key) >> 32) as usize;
        (0..PROBES).map(move |i| &self.slots[(h + i) & mask])
    }

    fn fresh(&self, v: u64, now_ms: u32) -> bool {
        // Ages wrap with the 32-bit millisecond clock (49 days); a time a
        // little ahead of ours (another worker's) counts as fresh.
        let age = now_ms.wrapping_sub(v as u32) as i32 as i64;
        v != 0 && age < (self.aging_ns / 1_000_000) as i64
    }

    /// The port `mac` was last seen on in `vlan`, if learned and not aged out.
    pub fn lookup(&self, vlan: u16, mac: u64, now_ns: u64) -> Option<u32> {
        let key = ((vlan as u64) << 48 | mac) + 1;
        let now_ms = (now_ns / 1_000_000) as u32;
        for s in self.window(key) {
            if s.key.load(Ordering::Acquire) != key {
                continue;
            }
            let v = s.value.load(Ordering::Acquire);
            if s.key.load(Ordering::Acquire) == key && self.fresh(v, now_ms) {
                return Some((v >> 32) as u32);
            }
        }
        None
    }

    /// Learns that `mac` is on `port` in `vlan`.
    pub fn learn(&self, vlan: u16, mac: u64, port: u32, now_ns: u64) {
        let key = ((vlan as u64) << 48 | mac) + 1;
        let now_ms = (now_ns / 1_000_000) as u32;
        let value = (port as u64) << 32 | now_ms.max(1) as u64;
        let mut free = None;
        for s in self.window(key) {
            let k = s.key.load(Ordering::Acquire);
            if k == key {
                let v = s.value.load(Ordering::Relaxed);
                if (v >> 32) as u32 != port || now_ms.wrapping_sub(v as u32) >= 1000 {
                    s.value.store(value, Ordering::Release);
                }
                return;
            }
            if free.is_none() && (k == 0 || !self.fresh(s.value.load(Ordering::Relaxed), now_ms)) {
                free = Some((s, k));
            }
        }
        let Some((s, old)) = free else {
            return; // the window is full of live addresses: flood instead
        };
        s.value.store(0, Ordering::Release);
        if s.key
            .compare_exchange(old, key, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            s.value.store(value, Ordering::Release);
        }
    }

    /// Learns `src` on `port` and decides where a frame to `dst` goes.
    pub fn forward(&self, vlan: u16, src: u64, dst: u64, port: u32, now_ns: u64) -> Decision {
        if !multicast(src) && src != 0 {
            self.learn(vlan, src, port, now_ns);
        }
        self.decide(vlan, dst, port, now_ns)
    }

    /// Where a frame to `dst` in `vlan` that came in on `port` goes, as
    /// the table stands (nothing learned).
    pub fn decide(&self, vlan: u16, dst: u64, port: u32, now_ns: u64) -> Decision {
        if multicast(dst) {
            return Decision::Flood;
        }
        match self.lookup(vlan, dst, now_ns) {
            Some(p) if p == port => Decision::Drop,
            Some(p) => Decision::Port(p),
            None => Decision::Flood,
        }
    }

    /// [`MacTable::decide`] for `trace`: the ports (FLOOD's from `ports`)
    /// and why, in words.
    pub fn explain(
        &self,
        ports: &PortTable,
        frame: &[u8],
        in_port: u32,
        now_ns: u64,
    ) -> Option<NormalHop> {
        let (vlan, _, dst) = packet::l2_addresses(frame)?;
        let flood = || ports.flood_from(in_port).collect::<Vec<u32>>();
        let dst_s = ofp::text::format_mac(dst);
        let vl = if vlan == 0 {
            String::new()
        } else {
            format!(" in VLAN {vlan}")
        };
        let (why, ports) = match self.decide(vlan, dst, in_port, now_ns) {
            Decision::Flood if multicast(dst) => (
                format!("dst {dst_s} is broadcast/multicast: flooded"),
                flood(),
            ),
            Decision::Flood => (format!("dst {dst_s} not learned{vl}: flooded"), flood()),
            Decision::Drop => (
                format!("dst {dst_s} learned on the ingress port{vl}: dropped"),
                Vec::new(),
            ),
            Decision::Port(p) => (format!("dst {dst_s} learned on port {p}{vl}"), vec![p]),
        };
        Some(NormalHop { why, ports })
    }

    /// Forgets every address learned on `port` (its link went away).
    pub fn forget_port(&self, port: u32) {
        for s in self.slots.iter() {
            let v = s.value.load(Ordering::Acquire);
            if v != 0 && (v >> 32) as u32 == port {
                s.value.store(0, Ordering::Release);
            }
        }
    }

    /// Every live address at `now_ns`: (VLAN, MAC, port, age in seconds),
    /// by port, VLAN and MAC (what `fdb-show` prints). A racing update
    /// may make one entry show its old or new port.
    pub fn entries(&self, now_ns: u64) -> Vec<(u16, u64, u32, u32)> {
        let now_ms = (now_ns / 1_000_000) as u32;
        let mut out: Vec<(u16, u64, u32, u32)> = self
            .slots
            .iter()
            .filter_map(|s| {
                let k = s.key.load(Ordering::Acquire);
                let v = s.value.load(Ordering::Acquire);
                if k == 0 || !self.fresh(v, now_ms) || s.key.load(Ordering::Acquire) != k {
                    return None;
                }
                let k = k - 1;
                let age = now_ms.wrapping_sub(v as u32) as i32 as i64;
                Some((
                    (k >> 48) as u16,
                    k & 0xffff_ffff_ffff,
                    (v >> 32) as u32,
                    (age.max(0) / 1000) as u32,
                ))
            })
            .collect();
        out.sort_by_key(|&(vlan, mac, port, _)| (port, vlan, mac));
        out
    }

    /// Forgets every address (`fdb-flush`).
    pub fn flush(&self) {
        for s in self.slots.iter() {
            s.value.store(0, Ordering::Release);
        }
    }

    /// Live (learned, not aged out) addresses at `now_ns`.
    pub fn len(&self, now_ns: u64) -> usize {
        let now_ms = (now_ns / 1_000_000) as u32;
        self.slots
            .iter()
            .filter(|s| s.key.load(Ordering::Relaxed) != 0)
            .filter(|s| self.fresh(s.value.load(Ordering::Relaxed), now_ms))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_list_live_addresses_and_flush_forgets_them() {
        let t = MacTable::default();
        t.learn(0, 0x0200_0000_000b, 2, 1_000_000_000);
        t.learn(7, 0x0200_0000_000a, 1, 3_000_000_000);
        assert_eq!(
            t.entries(5_500_000_000),
            vec![(7, 0x0200_0000_000a, 1, 2), (0, 0x0200_0000_000b, 2, 4)]
        );
        assert!(t.entries(DEFAULT_AGING_NS + 2_000_000_000).len() == 1);
        t.flush();
        assert!(t.entries(5_500_000_000).is_empty());
        assert_eq!(t.lookup(0, 0x0200_0000_000b, 5_500_000_000), None);
    }

    #[test]
    fn learns_floods_and_ages() {
        let t = MacTable::default();
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
        assert_eq!(t.len(5), 3, "a and b in VLAN 0, a in VLAN 5");
        assert_eq!(t.len(DEFAULT_AGING_NS + 10_000_000), 0, "aged out");
        assert_eq!(
            t.forward(0, a, b, 1, DEFAULT_AGING_NS + 10_000_000),
            Decision::Flood
        );
        t.forget_port(1);
        assert_eq!(
            t.lookup(0, a, DEFAULT_AGING_NS + 20_000_000),
            None,
            "forgotten"
        );
    }

    #[test]
    fn full_window_floods_and_workers_share() {
        let t = std::sync::Arc::new(MacTable::with_capacity(4));
        // 8 slots: the ninth address cannot be learned, and its frames flood.
        for m in 1..=64u64 {
            t.learn(0, 0x0200_0000_0000 + m, m as u32, 1_000_000);
        }
        assert!(t.len(1_000_000) <= 8);
        // Two threads learning and looking up at once agree afterwards.
        let t = std::sync::Arc::new(MacTable::default());
        let hs: Vec<_> = (0..2u64)
            .map(|w| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for i in 0..500u64 {
                        t.learn(0, 0x0200_0000_0000 + (i * 2 + w), (w + 1) as u32, 5_000_000);
                        let _ = t.lookup(0, 0x0200_0000_0000 + i, 5_000_000);
                    }
                })
            })
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        for i in 0..1000u64 {
            let want = (i % 2 + 1) as u32;
            assert_eq!(
                t.lookup(0, 0x0200_0000_0000 + i, 5_000_000),
                Some(want),
                "address {i}"
            );
        }
    }
}
