//! The NORMAL action: an Ethernet learning switch, VLAN-aware, with aging.
//!
//! A frame is first admitted by its ingress port's VLAN settings, which
//! say which VLAN it is in ([`crate::vlan`]; a port without settings is a
//! trunk of every VLAN, a frame's VLAN its tag's, 0 untagged). Then NORMAL
//! learns (VLAN, source MAC) -> ingress port; forwards to the learned port
//! of (VLAN, destination MAC), floods unknown, broadcast and multicast
//! destinations to the ports that carry the VLAN, and never sends a frame
//! back out of its ingress port. Each output leaves with the VLAN header
//! its port gives the VLAN ([`Egress`]). Entries age out after `aging_ns`
//! without traffic (300 s by default, as in Open vSwitch and the Linux
//! bridge).
//!
//! [`switch`] is NORMAL, once: the workers run it (learning) and `trace`
//! runs it (not learning, [`MacTable::explain`]), so the two cannot
//! disagree.

use std::sync::atomic::{AtomicU64, Ordering};

use pipeline::trace::{NormalHop, VlanHeader};
use pipeline::PortTable;

#[cfg(doc)]
use crate::vlan::{PortVlan, TRUNK_ALL};
use crate::vlan::{PortVlans, Refused};

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

    /// NORMAL for `trace`: where [`switch`] would send `frame` from
    /// `in_port` as the table stands (nothing learned), each port with the
    /// VLAN header the frame leaves it with, and why, in words. None for
    /// a frame shorter than an Ethernet header.
    pub fn explain(
        &self,
        vlans: &PortVlans,
        ports: &PortTable,
        frame: &[u8],
        in_port: u32,
        now_ns: u64,
    ) -> Option<NormalHop> {
        let came = VlanHeader::of(frame);
        let mut outs = Vec::new();
        let verdict = switch(
            self,
            vlans,
            ports,
            frame,
            in_port,
            now_ns,
            false,
            |p, e, _| outs.push((p, e.header(came))),
        );
        let (_, _, dst) = packet::l2_addresses(frame)?;
        let dst_s = ofp::text::format_mac(dst);
        let vl = |vlan: u16| {
            if vlan == 0 {
                String::new()
            } else {
                format!(" in VLAN {vlan}")
            }
        };
        let mut why = String::new();
        if !vlans.is_plain() {
            why = format!("in_port {in_port} is {}", port_words(vlans, in_port));
            if let Some(v) = verdict.vlan() {
                why.push_str(&format!(": the frame is in VLAN {v}"));
            }
            why.push_str("; ");
        }
        why.push_str(&match verdict {
            Verdict::NotEthernet => return None,
            Verdict::Refused(r) => format!("{r}: dropped"),
            Verdict::Flood {
                multicast: true, ..
            } => format!("dst {dst_s} is broadcast/multicast: flooded"),
            Verdict::Flood { vlan, .. } => format!("dst {dst_s} not learned{}: flooded", vl(vlan)),
            Verdict::Hairpin { vlan } => {
                format!(
                    "dst {dst_s} learned on the ingress port{}: dropped",
                    vl(vlan)
                )
            }
            Verdict::Learned { vlan, port } => {
                format!("dst {dst_s} learned on port {port}{}", vl(vlan))
            }
        });
        if let (false, Verdict::Flood { vlan, .. }) = (vlans.is_plain(), verdict) {
            let left: Vec<String> = ports
                .flood_from(in_port)
                .filter(|&p| !vlans.get(p).carries(vlan))
                .map(|p| p.to_string())
                .collect();
            if !left.is_empty() {
                why.push_str(&format!(
                    " (not to port{} {}, which do{} not carry VLAN {vlan})",
                    if left.len() == 1 { "" } else { "s" },
                    left.join(","),
                    if left.len() == 1 { "es" } else { "" }
                ));
            }
        }
        for (p, h) in &outs {
            if *h != came && !vlans.is_plain() {
                let to = match h {
                    None => "untagged".to_string(),
                    Some(h) => format!("tagged VLAN {}", h.vid),
                };
                why.push_str(&format!(
                    "; out of port {p} ({}): {to}",
                    port_words(vlans, *p)
                ));
            }
        }
        Some(NormalHop { why, came, outs })
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

/// Port `p`'s VLAN settings in trace's words.
fn port_words(vlans: &PortVlans, p: u32) -> String {
    let v = vlans.get(p);
    match v.mode {
        crate::vlan::VlanMode::Access => format!("an {v}"),
        _ => format!("a {v}"),
    }
}

/// How a frame NORMAL sends out of one port differs from the frame it got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Egress {
    /// As it came.
    Keep,
    /// Its outer VLAN header taken off.
    Pop,
    /// A VLAN header put on (it came with none).
    Push(VlanHeader),
    /// Its outer VLAN header replaced.
    Set(VlanHeader),
}

impl Egress {
    /// From the header a frame came with to the one it leaves with.
    #[inline]
    pub fn between(came: Option<VlanHeader>, out: Option<VlanHeader>) -> Egress {
        match (came, out) {
            (a, b) if a == b => Egress::Keep,
            (Some(_), None) => Egress::Pop,
            (None, Some(h)) => Egress::Push(h),
            (_, Some(h)) => Egress::Set(h),
            (None, None) => Egress::Keep,
        }
    }

    /// The outer header a frame that came with `came` leaves with.
    pub fn header(self, came: Option<VlanHeader>) -> Option<VlanHeader> {
        match self {
            Egress::Keep => came,
            Egress::Pop => None,
            Egress::Push(h) | Egress::Set(h) => Some(h),
        }
    }

    /// `frame` as it leaves, into `buf` (emptied first). A frame a pop
    /// leaves shorter than Ethernet allows is padded with zeros, as the
    /// pipeline's pop_vlan does. `frame` must have the header it came
    /// with whole (as [`switch`] found it).
    pub fn write(self, frame: &[u8], buf: &mut Vec<u8>) {
        buf.clear();
        let tag = |h: VlanHeader| {
            let [a, b] = h.tpid.to_be_bytes();
            let [c, d] = h.tci().to_be_bytes();
            [a, b, c, d]
        };
        match self {
            Egress::Keep => buf.extend_from_slice(frame),
            Egress::Pop => {
                buf.extend_from_slice(&frame[..12]);
                buf.extend_from_slice(&frame[16..]);
                if buf.len() < pipeline::edit::MIN_FRAME {
                    buf.resize(pipeline::edit::MIN_FRAME, 0);
                }
            }
            Egress::Push(h) => {
                buf.extend_from_slice(&frame[..12]);
                buf.extend_from_slice(&tag(h));
                buf.extend_from_slice(&frame[12..]);
            }
            Egress::Set(h) => {
                buf.extend_from_slice(&frame[..12]);
                buf.extend_from_slice(&tag(h));
                buf.extend_from_slice(&frame[16..]);
            }
        }
    }
}

/// What NORMAL did with a frame (for `trace`'s words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Shorter than an Ethernet header (or its VLAN header cut short).
    NotEthernet,
    /// The ingress port does not admit it.
    Refused(Refused),
    /// Flooded to the ports that carry `vlan`: its destination is
    /// broadcast or multicast, or not learned.
    Flood { vlan: u16, multicast: bool },
    /// Sent to the port its destination was learned on.
    Learned { vlan: u16, port: u32 },
    /// Its destination was learned on the ingress port: dropped.
    Hairpin { vlan: u16 },
}

impl Verdict {
    /// The VLAN the frame was switched in, if it was admitted.
    pub fn vlan(&self) -> Option<u16> {
        match *self {
            Verdict::Flood { vlan, .. }
            | Verdict::Learned { vlan, .. }
            | Verdict::Hairpin { vlan } => Some(vlan),
            _ => None,
        }
    }
}

/// A frame NORMAL admitted ([`admit`]): the VLAN it is in, its
/// addresses, and what it needs to say how it leaves each port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admitted {
    pub vlan: u16,
    pub src: u64,
    pub dst: u64,
    /// Its outer VLAN header as it came.
    came: Option<VlanHeader>,
    /// Its header inside the switch ([`PortVlan::admit`]).
    inside: VlanHeader,
    /// On a bridge whose ports have no VLAN settings: how it leaves
    /// every port.
    plain: Option<Egress>,
}

impl Admitted {
    /// How it leaves port `p`, the port its destination was learned on:
    /// with the header `p` gives its VLAN, whatever VLANs `p` carries (as
    /// Open vSwitch; a port's addresses are forgotten when its settings
    /// change).
    #[inline]
    pub fn to_port(&self, vlans: &PortVlans, p: u32) -> Egress {
        match self.plain {
            Some(e) => e,
            None => Egress::between(self.came, vlans.get(p).header_out(self.inside)),
        }
    }

    /// How a flood sends it out of port `p`: None if `p` does not carry
    /// its VLAN.
    #[inline]
    pub fn to_flood_port(&self, vlans: &PortVlans, p: u32) -> Option<Egress> {
        if let Some(e) = self.plain {
            return Some(e);
        }
        let v = vlans.get(p);
        v.carries(self.vlan)
            .then(|| Egress::between(self.came, v.header_out(self.inside)))
    }
}

/// What NORMAL reads of a frame: its addresses and its outer VLAN header
/// (None if it is shorter than an Ethernet header, or its tag cut short).
#[inline(always)]
pub fn l2(frame: &[u8]) -> Option<(u64, u64, Option<VlanHeader>)> {
    let h: &[u8; 14] = frame.get(..14)?.try_into().ok()?;
    let dst = u64::from_be_bytes([0, 0, h[0], h[1], h[2], h[3], h[4], h[5]]);
    let src = u64::from_be_bytes([0, 0, h[6], h[7], h[8], h[9], h[10], h[11]]);
    let tpid = u16::from_be_bytes([h[12], h[13]]);
    if tpid != 0x8100 && tpid != 0x88a8 {
        return Some((src, dst, None));
    }
    let t = frame.get(14..16)?;
    let tci = u16::from_be_bytes([t[0], t[1]]);
    let tag = VlanHeader {
        tpid,
        vid: tci & 0x0fff,
        pcp: (tci >> 13) as u8,
    };
    Some((src, dst, Some(tag)))
}

/// How a frame with outer header `came` leaves every port of a bridge
/// whose ports have no VLAN settings: as it came, but that a tag of VID 0
/// and PCP 0 goes (what [`PortVlan::header_out`] says for [`TRUNK_ALL`]).
#[inline(always)]
pub fn plain_egress(came: Option<VlanHeader>) -> Egress {
    match came {
        Some(h) if h.vid == 0 && h.pcp == 0 => Egress::Pop,
        _ => Egress::Keep,
    }
}

/// NORMAL's first step: whether `in_port` admits `frame`, and in which
/// VLAN. Err: why not ([`Verdict::NotEthernet`] or
/// [`Verdict::Refused`]). A bridge whose ports have no VLAN settings
/// takes the plain path: every port a trunk of every VLAN, the frame in
/// its tag's VLAN, leaving every port alike ([`plain_egress`]).
#[inline]
pub fn admit(vlans: &PortVlans, frame: &[u8], in_port: u32) -> Result<Admitted, Verdict> {
    let Some((src, dst, came)) = l2(frame) else {
        return Err(Verdict::NotEthernet);
    };
    if vlans.is_plain() {
        return Ok(Admitted {
            vlan: came.map_or(0, |h| h.vid),
            src,
            dst,
            came,
            inside: VlanHeader::default(),
            plain: Some(plain_egress(came)),
        });
    }
    let inside = vlans.get(in_port).admit(came).map_err(Verdict::Refused)?;
    Ok(Admitted {
        vlan: inside.vid,
        src,
        dst,
        came,
        inside,
        plain: None,
    })
}

/// NORMAL: `frame` received on `in_port`, admitted by its VLAN settings
/// (`vlans`), learned (if `learn`) and sent: `out(port, egress, flooded)`
/// for each port, in `ports`' flood order. `trace` runs it; the workers
/// run the same steps ([`admit`] or, on a plain bridge, [`plain_egress`];
/// [`MacTable::forward`]; [`Admitted::to_port`],
/// [`Admitted::to_flood_port`]) written out in `emit.rs`, where the plain
/// path costs what NORMAL cost before VLAN settings existed (measured:
/// `datapath/tests/normal_speed.rs`).
#[allow(clippy::too_many_arguments)]
pub fn switch(
    macs: &MacTable,
    vlans: &PortVlans,
    ports: &PortTable,
    frame: &[u8],
    in_port: u32,
    now_ns: u64,
    learn: bool,
    mut out: impl FnMut(u32, Egress, bool),
) -> Verdict {
    let a = match admit(vlans, frame, in_port) {
        Ok(a) => a,
        Err(v) => return v,
    };
    let d = if learn {
        macs.forward(a.vlan, a.src, a.dst, in_port, now_ns)
    } else {
        macs.decide(a.vlan, a.dst, in_port, now_ns)
    };
    let vlan = a.vlan;
    match d {
        Decision::Port(p) => {
            out(p, a.to_port(vlans, p), false);
            Verdict::Learned { vlan, port: p }
        }
        Decision::Drop => Verdict::Hairpin { vlan },
        Decision::Flood => {
            for p in ports.flood_from(in_port) {
                if let Some(e) = a.to_flood_port(vlans, p) {
                    out(p, e, true);
                }
            }
            Verdict::Flood {
                vlan,
                multicast: multicast(a.dst),
            }
        }
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

    use crate::vlan::VlanConfig;
    use pipeline::PortState;

    /// A port's settings as a user writes them: number, tag, trunks, mode.
    type Settings<'a> = (u32, Option<i64>, &'a [i64], Option<&'a str>);

    fn vlans(cfgs: &[Settings]) -> PortVlans {
        cfgs.iter()
            .fold(PortVlans::default(), |t, (p, tag, trunks, mode)| {
                t.with(*p, &VlanConfig::check(*tag, trunks, *mode).unwrap())
            })
    }

    fn frame(dst: u64, src: u64, tag: Option<(u16, u16)>) -> Vec<u8> {
        packet::wire::build::ethernet_tags(dst, src, tag.as_slice(), 0x88b5, &[0xee; 50])
    }

    /// Where [`switch`] sends a frame: (port, VID it leaves with, or None
    /// untagged), and the verdict.
    fn run(
        t: &MacTable,
        v: &PortVlans,
        ports: &PortTable,
        f: &[u8],
        in_port: u32,
    ) -> (Vec<(u32, Option<u16>)>, Verdict) {
        let mut outs = Vec::new();
        let verdict = switch(t, v, ports, f, in_port, 1_000, true, |p, e, _| {
            let mut b = Vec::new();
            e.write(f, &mut b);
            outs.push((p, VlanHeader::of(&b).map(|h| h.vid)));
        });
        (outs, verdict)
    }

    const B: u64 = 0xffff_ffff_ffff;

    #[test]
    fn flooding_and_learning_are_per_vlan() {
        // 1, 2: access VLAN 10; 3: access VLAN 20; 4: trunk of 10 and 20;
        // 5: native-untagged VLAN 20, trunk of 10; 6: no settings.
        let v = vlans(&[
            (1, Some(10), &[], None),
            (2, Some(10), &[], None),
            (3, Some(20), &[], None),
            (4, None, &[10, 20], None),
            (5, Some(20), &[10], Some("native-untagged")),
        ]);
        let ports = PortTable::new((1..=6).map(PortState::up).collect());
        let t = MacTable::default();
        let (a, b, c) = (0x0200_0000_000a, 0x0200_0000_000b, 0x0200_0000_000c);
        // A broadcast from access port 1: VLAN 10's ports, tagged on the
        // trunks, untagged on the access ports.
        let (outs, verdict) = run(&t, &v, &ports, &frame(B, a, None), 1);
        assert_eq!(
            verdict,
            Verdict::Flood {
                vlan: 10,
                multicast: true
            }
        );
        assert_eq!(
            outs,
            [(2, None), (4, Some(10)), (5, Some(10)), (6, Some(10))]
        );
        // VLAN 20 from the trunk: 3 untagged, 5 (its native VLAN)
        // untagged, not back to 4.
        let (outs, _) = run(&t, &v, &ports, &frame(B, b, Some((0x8100, 20))), 4);
        assert_eq!(outs, [(3, None), (5, None), (6, Some(20))]);
        // a was learned in VLAN 10 only.
        let (outs, verdict) = run(&t, &v, &ports, &frame(a, c, Some((0x8100, 10))), 4);
        assert_eq!(verdict, Verdict::Learned { vlan: 10, port: 1 });
        assert_eq!(outs, [(1, None)]);
        let (outs, verdict) = run(&t, &v, &ports, &frame(a, c, None), 5);
        assert_eq!(
            verdict,
            Verdict::Flood {
                vlan: 20,
                multicast: false
            },
            "a is unknown in VLAN 20"
        );
        assert_eq!(outs, [(3, None), (4, Some(20)), (6, Some(20))]);
        // c is now known in VLAN 10 on 4 and in VLAN 20 on 5.
        assert_eq!(t.lookup(10, c, 1_000), Some(4));
        assert_eq!(t.lookup(20, c, 1_000), Some(5));
        // Refused frames are not learned.
        let (outs, verdict) = run(
            &t,
            &v,
            &ports,
            &frame(B, 0x0200_0000_00dd, Some((0x8100, 30))),
            4,
        );
        assert_eq!(verdict, Verdict::Refused(Refused::NotTrunked { vid: 30 }));
        assert!(outs.is_empty());
        assert_eq!(t.lookup(30, 0x0200_0000_00dd, 1_000), None);
        let (_, verdict) = run(&t, &v, &ports, &frame(B, a, Some((0x8100, 10))), 1);
        assert_eq!(
            verdict,
            Verdict::Refused(Refused::TaggedOnAccess { vid: 10, vlan: 10 })
        );
        // A port with no settings carries every VLAN, tagged; its
        // untagged frames are VLAN 0, which only it carries here.
        let (outs, verdict) = run(&t, &v, &ports, &frame(B, a, None), 6);
        assert_eq!(verdict.vlan(), Some(0));
        assert!(outs.is_empty(), "{outs:?}");
    }

    #[test]
    fn frames_leave_with_their_ports_header() {
        let f = frame(B, 0x0200_0000_000a, Some((0x88a8, 3 << 13)));
        let mut b = Vec::new();
        // Popped: the rest moves up.
        Egress::Pop.write(&f, &mut b);
        assert_eq!(b[..12], f[..12]);
        assert_eq!(b[12..], f[16..]);
        // Set: TPID and TCI replaced, DEI clear.
        let h = VlanHeader {
            tpid: 0x88a8,
            vid: 10,
            pcp: 3,
        };
        Egress::Set(h).write(&f, &mut b);
        assert_eq!(b[12..16], [0x88, 0xa8, 0x60, 0x0a]);
        assert_eq!(b[16..], f[16..]);
        // Pushed onto an untagged frame.
        let u = frame(B, 0x0200_0000_000a, None);
        Egress::Push(VlanHeader {
            tpid: 0x8100,
            vid: 4095,
            pcp: 7,
        })
        .write(&u, &mut b);
        assert_eq!(b[12..16], [0x81, 0x00, 0xef, 0xff]);
        assert_eq!(b[16..], u[12..]);
        // A short frame popped is padded to Ethernet's minimum.
        let mut short = f[..20].to_vec();
        short[12..14].copy_from_slice(&[0x81, 0x00]);
        Egress::Pop.write(&short, &mut b);
        assert_eq!(b.len(), 60);
        // Between headers: only a change is an edit.
        let q = |vid, pcp| {
            Some(VlanHeader {
                tpid: 0x8100,
                vid,
                pcp,
            })
        };
        assert_eq!(Egress::between(q(5, 0), q(5, 0)), Egress::Keep);
        assert_eq!(Egress::between(None, None), Egress::Keep);
        assert_eq!(Egress::between(q(5, 0), None), Egress::Pop);
        assert_eq!(
            Egress::between(None, q(5, 0)),
            Egress::Push(q(5, 0).unwrap())
        );
        assert_eq!(
            Egress::between(q(5, 0), q(6, 0)),
            Egress::Set(q(6, 0).unwrap())
        );
    }

    #[test]
    fn a_plain_bridge_switches_as_before_but_drops_empty_priority_tags() {
        let v = PortVlans::default();
        let ports = PortTable::new((1..=3).map(PortState::up).collect());
        let t = MacTable::default();
        let a = 0x0200_0000_000a;
        for tag in [
            None,
            Some((0x8100, 7)),
            Some((0x88a8, 4095)),
            Some((0x8100, 5 << 13)),
        ] {
            let f = frame(B, a, tag);
            let mut seen = Vec::new();
            switch(&t, &v, &ports, &f, 1, 1_000, true, |p, e, _| {
                seen.push((p, e))
            });
            assert_eq!(seen, [(2, Egress::Keep), (3, Egress::Keep)], "{tag:?}");
        }
        assert_eq!(t.lookup(7, a, 1_000), Some(1));
        // A tag of VID 0 and PCP 0 says nothing: it goes (Open vSwitch's
        // priority-tags "never"), whatever its DEI.
        for tci in [0, 1 << 12] {
            let f = frame(B, a, Some((0x8100, tci)));
            let mut seen = Vec::new();
            switch(&t, &v, &ports, &f, 1, 1_000, true, |p, e, _| {
                seen.push((p, e))
            });
            assert_eq!(seen, [(2, Egress::Pop), (3, Egress::Pop)]);
        }
    }

    #[test]
    fn trace_says_what_vlans_did() {
        let v = vlans(&[
            (1, Some(10), &[], None),
            (2, Some(10), &[], None),
            (3, Some(20), &[], None),
            (4, None, &[10, 20], None),
        ]);
        let ports = PortTable::new((1..=4).map(PortState::up).collect());
        let t = MacTable::default();
        let hop = t
            .explain(&v, &ports, &frame(B, 0x0200_0000_000a, None), 1, 0)
            .unwrap();
        assert_eq!(
            hop.why,
            "in_port 1 is an access port of VLAN 10: the frame is in VLAN 10; \
             dst ff:ff:ff:ff:ff:ff is broadcast/multicast: flooded \
             (not to port 3, which does not carry VLAN 10); \
             out of port 4 (a trunk of VLANs 10,20): tagged VLAN 10"
        );
        let q10 = VlanHeader {
            tpid: 0x8100,
            vid: 10,
            pcp: 0,
        };
        assert_eq!(hop.outs, [(2, None), (4, Some(q10))]);
        assert_eq!(
            pipeline::trace::normal_actions(&hop).join(","),
            "2,push_vlan(vid=10,pcp=0),4"
        );
        let hop = t
            .explain(
                &v,
                &ports,
                &frame(B, 0x0200_0000_000a, Some((0x8100, 30))),
                4,
                0,
            )
            .unwrap();
        assert_eq!(
            hop.why,
            "in_port 4 is a trunk of VLANs 10,20; \
             a VLAN 30 frame on a port that does not trunk VLAN 30: dropped"
        );
        assert!(hop.outs.is_empty());
        let hop = t
            .explain(
                &v,
                &ports,
                &frame(B, 0x0200_0000_000a, Some((0x8100, 20))),
                4,
                0,
            )
            .unwrap();
        assert_eq!(
            pipeline::trace::normal_actions(&hop).join(","),
            "pop_vlan,3"
        );
        // A plain bridge says what it always said.
        let hop = t
            .explain(
                &PortVlans::default(),
                &ports,
                &frame(0x0200_0000_000b, 1, None),
                1,
                0,
            )
            .unwrap();
        assert_eq!(hop.why, "dst 02:00:00:00:00:0b not learned: flooded");
    }
}
