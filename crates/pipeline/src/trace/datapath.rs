//! The `Datapath actions:` of a trace: what a datapath that can only set
//! header fields, push and pop VLAN tags and send would do, in Open
//! vSwitch's datapath action syntax (`set(ipv4(ttl=63))`, `pop_vlan`,
//! `push_vlan(vid=30,pcp=0)`, then the port).
//!
//! Open vSwitch translates a flow into such a list by "committing" the
//! packet's changes each time the packet leaves (an output, a packet-in):
//! the headers it changed since the last commit become set actions, the
//! VLAN stack's difference becomes pops then pushes (odp-util's
//! `commit_odp_actions`, in its order: Ethernet, then the network layer,
//! then the transport ports, then ICMP, then VLAN). sluice's trace keeps
//! the bytes of the packet at each output, so the same list comes from
//! comparing, output by output, the headers [`Headers`] read from the
//! frame that left with those read from the one before it (the received
//! frame, at first). A field shows only when it changed, as Open
//! vSwitch's masked set actions show it; a changed TOS byte is masked to
//! the bits that changed (DSCP `0xfc`, ECN `0x3`).
//!
//! Not written (sluice's datapath has no such action to print, or the
//! trace keeps no frame for it): MPLS and PBB pushes and pops (a frame
//! whose network layer changed kind gets no set actions for it), the
//! tunnel header (the caller writes `set(tunnel(...))`), skb priority and
//! mark.

use std::net::{Ipv4Addr, Ipv6Addr};

use packet::{flags, slots as s, FlowKey, Slot};

/// What the datapath actions compare between two frames: the parsed
/// headers, and the VLAN stack as (TPID, TCI) from the outside in.
#[derive(Clone)]
pub(crate) struct Headers {
    key: FlowKey,
    pub(crate) vlans: Vec<(u16, u16)>,
}

/// The most VLAN tags read from a frame (Open vSwitch's flows hold 2).
const MAX_VLANS: usize = 2;

impl Headers {
    /// The headers of `frame`.
    pub(crate) fn of(frame: &[u8]) -> Headers {
        let mut key = FlowKey::default();
        packet::extract(frame, 0, &mut key);
        let mut vlans = Vec::new();
        let mut at = 12;
        while vlans.len() < MAX_VLANS && frame.len() >= at + 4 {
            let tpid = u16::from_be_bytes([frame[at], frame[at + 1]]);
            if tpid != 0x8100 && tpid != 0x88a8 {
                break;
            }
            vlans.push((tpid, u16::from_be_bytes([frame[at + 2], frame[at + 3]])));
            at += 4;
        }
        Headers { key, vlans }
    }

    fn get(&self, slot: Slot) -> u64 {
        self.key.get(slot)
    }

    fn has(&self, f: u64) -> bool {
        self.key.flags() & f != 0
    }

    fn v6(&self, hi: Slot, lo: Slot) -> Ipv6Addr {
        Ipv6Addr::from((self.get(hi) as u128) << 64 | self.get(lo) as u128)
    }
}

/// One `set(NAME(field=value,...))` of the fields that differ between
/// `was` and `now` (each field: its name and its text in either).
fn set(out: &mut Vec<String>, name: &str, fields: &[(&str, String, String)]) {
    let changed: Vec<String> = fields
        .iter()
        .filter(|(_, a, b)| a != b)
        .map(|(n, _, b)| format!("{n}={b}"))
        .collect();
    if !changed.is_empty() {
        out.push(format!("set({name}({}))", changed.join(",")));
    }
}

/// A TOS (or traffic class) byte as Open vSwitch writes a masked one:
/// the new value, with the mask of the parts (DSCP, ECN) that changed.
fn tos(was: u8, now: u8) -> (String, String) {
    if was == now {
        return (String::new(), String::new());
    }
    let dscp = (was ^ now) & 0xfc != 0;
    let ecn = (was ^ now) & 0x03 != 0;
    let text = match (dscp, ecn) {
        (true, true) => format!("{now:#x}"),
        (true, false) => format!("{:#x}/0xfc", now & 0xfc),
        _ => format!("{:#x}/0x3", now & 0x03),
    };
    ("-".into(), text)
}

/// Appends the actions that turn `base` into `now` (the packet as it
/// leaves next), in Open vSwitch's commit order, and makes `base` `now`.
pub(crate) fn commit(base: &mut Headers, now: &Headers, out: &mut Vec<String>) {
    let mac = |h: &Headers, sl| ofp::text::format_mac(h.get(sl));
    set(
        out,
        "eth",
        &[
            ("src", mac(base, s::ETH_SRC), mac(now, s::ETH_SRC)),
            ("dst", mac(base, s::ETH_DST), mac(now, s::ETH_DST)),
        ],
    );
    // The network layer, when it is of the same kind in both.
    let same = |f: u64| base.has(f) && now.has(f) && base.get(s::ETH_TYPE) == now.get(s::ETH_TYPE);
    let dec = |h: &Headers, sl| h.get(sl).to_string();
    let tos_of = |h: &Headers| (h.get(s::IP_DSCP) << 2 | h.get(s::IP_ECN)) as u8;
    let ip_layer = same(flags::IPV4) || same(flags::IPV6);
    if same(flags::IPV4) {
        let ip = |h: &Headers, sl| Ipv4Addr::from(h.get(sl) as u32).to_string();
        let (a, b) = tos(tos_of(base), tos_of(now));
        set(
            out,
            "ipv4",
            &[
                ("src", ip(base, s::NW_SRC), ip(now, s::NW_SRC)),
                ("dst", ip(base, s::NW_DST), ip(now, s::NW_DST)),
                ("tos", a, b),
                ("ttl", dec(base, s::NW_TTL), dec(now, s::NW_TTL)),
            ],
        );
    } else if same(flags::IPV6) {
        let ip = |h: &Headers, hi, lo| h.v6(hi, lo).to_string();
        let (a, b) = tos(tos_of(base), tos_of(now));
        let label = |h: &Headers| format!("{:#x}", h.get(s::IPV6_FLABEL));
        set(
            out,
            "ipv6",
            &[
                (
                    "src",
                    ip(base, s::IPV6_SRC_HI, s::IPV6_SRC_LO),
                    ip(now, s::IPV6_SRC_HI, s::IPV6_SRC_LO),
                ),
                (
                    "dst",
                    ip(base, s::IPV6_DST_HI, s::IPV6_DST_LO),
                    ip(now, s::IPV6_DST_HI, s::IPV6_DST_LO),
                ),
                ("label", label(base), label(now)),
                ("tclass", a, b),
                ("hlimit", dec(base, s::NW_TTL), dec(now, s::NW_TTL)),
            ],
        );
    } else if same(flags::ARP) {
        let ip = |h: &Headers, sl| Ipv4Addr::from(h.get(sl) as u32).to_string();
        set(
            out,
            "arp",
            &[
                ("sip", ip(base, s::NW_SRC), ip(now, s::NW_SRC)),
                ("tip", ip(base, s::NW_DST), ip(now, s::NW_DST)),
                ("op", dec(base, s::ARP_OP), dec(now, s::ARP_OP)),
                ("sha", mac(base, s::ARP_SHA), mac(now, s::ARP_SHA)),
                ("tha", mac(base, s::ARP_THA), mac(now, s::ARP_THA)),
            ],
        );
    }
    let proto = now.get(s::IP_PROTO);
    if ip_layer && same(flags::L4) && base.get(s::IP_PROTO) == proto {
        let fields = |a: &'static str, b: &'static str| {
            [
                (a, dec(base, s::TP_SRC), dec(now, s::TP_SRC)),
                (b, dec(base, s::TP_DST), dec(now, s::TP_DST)),
            ]
        };
        match proto {
            6 => set(out, "tcp", &fields("src", "dst")),
            17 => set(out, "udp", &fields("src", "dst")),
            132 => set(out, "sctp", &fields("src", "dst")),
            1 => set(out, "icmp", &fields("type", "code")),
            58 => {
                set(out, "icmpv6", &fields("type", "code"));
                if same(flags::ND) {
                    set(
                        out,
                        "nd",
                        &[
                            (
                                "target",
                                base.v6(s::ND_TARGET_HI, s::ND_TARGET_LO).to_string(),
                                now.v6(s::ND_TARGET_HI, s::ND_TARGET_LO).to_string(),
                            ),
                            ("sll", mac(base, s::ARP_SHA), mac(now, s::ARP_SHA)),
                            ("tll", mac(base, s::ARP_THA), mac(now, s::ARP_THA)),
                        ],
                    );
                }
            }
            _ => {}
        }
    }
    vlans(&base.vlans, &now.vlans, out);
    *base = now.clone();
}

/// The pops and pushes that turn VLAN stack `was` into `now` (outermost
/// first): the tags both share at the inside stay, the others of `was`
/// are popped and those of `now` pushed, innermost first (as Open
/// vSwitch's `commit_vlan_action`).
pub(crate) fn vlans(was: &[(u16, u16)], now: &[(u16, u16)], out: &mut Vec<String>) {
    let common = was
        .iter()
        .rev()
        .zip(now.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    for _ in 0..was.len() - common {
        out.push("pop_vlan".into());
    }
    for &(tpid, tci) in now[..now.len() - common].iter().rev() {
        out.push(push_vlan(tpid, tci));
    }
}

/// `push_vlan(vid=10,pcp=0)`, with `tpid=0x88a8,` first for 802.1ad.
pub(crate) fn push_vlan(tpid: u16, tci: u16) -> String {
    let tpid = if tpid == 0x8100 {
        String::new()
    } else {
        format!("tpid={tpid:#06x},")
    };
    format!("push_vlan({tpid}vid={},pcp={})", tci & 0xfff, tci >> 13)
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::wire::build::{self as wb, Ip, IpFields, Transport};

    fn tcp(tci: Option<u16>, src: [u8; 4], ttl: u8, tos: u8, dport: u16) -> Vec<u8> {
        let t = Transport::Tcp {
            sport: 1000,
            dport,
            seq: 1,
            ack: 0,
            flags: 2,
            window: 100,
            options: &[],
        };
        let f = IpFields {
            ttl,
            tos,
            ..IpFields::default()
        };
        let body = wb::ip(Ip::V4(src), Ip::V4([10, 0, 0, 2]), &f, &t, &[]);
        wb::ethernet(2, 1, tci, 0x0800, &body)
    }

    fn actions(a: &[u8], b: &[u8]) -> String {
        let mut base = Headers::of(a);
        let mut out = Vec::new();
        commit(&mut base, &Headers::of(b), &mut out);
        out.join(",")
    }

    #[test]
    fn only_what_changed_in_open_vswitch_order() {
        let a = tcp(None, [10, 0, 0, 1], 64, 0, 80);
        assert_eq!(actions(&a, &a), "");
        let b = tcp(Some(30), [10, 0, 0, 9], 63, 0x20, 8080);
        assert_eq!(
            actions(&a, &b),
            "set(ipv4(src=10.0.0.9,tos=0x20/0xfc,ttl=63)),set(tcp(dst=8080)),push_vlan(vid=30,pcp=0)"
        );
        assert_eq!(actions(&b, &a).split(',').next_back(), Some("pop_vlan"));
        let mut c = b.clone();
        c[6..12].copy_from_slice(&[0, 0, 0, 0, 0, 7]);
        assert_eq!(actions(&b, &c), "set(eth(src=00:00:00:00:00:07))");
    }

    #[test]
    fn vlan_stacks_keep_their_common_inside() {
        let mut out = Vec::new();
        vlans(&[(0x88a8, 5), (0x8100, 10)], &[(0x8100, 10)], &mut out);
        assert_eq!(out, ["pop_vlan"]);
        out.clear();
        vlans(&[(0x8100, 10)], &[(0x8100, 20 | 3 << 13)], &mut out);
        assert_eq!(out, ["pop_vlan", "push_vlan(vid=20,pcp=3)"]);
        out.clear();
        vlans(&[], &[(0x88a8, 7), (0x8100, 10)], &mut out);
        assert_eq!(
            out,
            [
                "push_vlan(vid=10,pcp=0)",
                "push_vlan(tpid=0x88a8,vid=7,pcp=0)"
            ]
        );
    }
}
