//! The connection tracker under any sequence of packets: raw bytes, and
//! well-formed packets from `conntrack::build` with fields and bytes
//! mutated by the input, both directions, several zones, commit or not,
//! NAT requests with small ranges, a connection limit of 8 (zone 1: 3),
//! the clock moving on. Checks: no panic; `len()` never over the limit;
//! never more index entries than two per connection (and at least one);
//! every verdict has TRK and the zone asked.
#![no_main]

use conntrack::build::{self, Ip, Seg};
use conntrack::state::TRK;
use conntrack::{Limits, NatKind, NatRange, NatSpec, Request, Timeouts, Tracker};
use libfuzzer_sys::fuzz_target;

struct In<'a>(&'a [u8]);

impl In<'_> {
    fn u8(&mut self) -> Option<u8> {
        let (b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*b)
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes([self.u8()?, self.u8()?]))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes([
            self.u8()?,
            self.u8()?,
            self.u8()?,
            self.u8()?,
        ]))
    }
}

const LIMIT: u64 = 8;

fn host(v6: bool, n: u8) -> Ip {
    if v6 {
        let mut a = [0u8; 16];
        a[0] = 0xfd;
        a[15] = n & 3;
        Ip::V6(a)
    } else {
        Ip::V4([10, 0, 0, n & 3])
    }
}

fuzz_target!(|data: &[u8]| {
    let t = Tracker::new(
        Timeouts::default(),
        Limits {
            total: LIMIT,
            zone_default: 0,
        },
    );
    t.set_zone_limit(1, Some(3));
    let mut inp = In(data);
    let mut now = 1_000u64;
    // Up to 64 packets.
    for _ in 0..64 {
        let Some(op) = inp.u8() else { break };
        let v6 = op & 0x80 != 0;
        let (a, b) = {
            let x = inp.u8().unwrap_or(0);
            (host(v6, x), host(v6, x >> 2))
        };
        let sport = 1000 + (inp.u8().unwrap_or(0) & 7) as u16;
        let dport = 80 + (inp.u8().unwrap_or(0) & 3) as u16;
        let mut pkt = match op & 0x7 {
            0 => {
                // Raw bytes.
                let n = inp.u8().unwrap_or(0) as usize;
                let n = n.min(inp.0.len());
                let p = inp.0[..n].to_vec();
                inp.0 = &inp.0[n..];
                p
            }
            1 | 2 => {
                let fl = inp.u8().unwrap_or(0x10);
                let s = Seg {
                    sport,
                    dport,
                    seq: inp.u32().unwrap_or(0),
                    ack: inp.u32().unwrap_or(0),
                    flags: fl & 0x3f,
                    win: inp.u16().unwrap_or(0),
                    wscale: (fl & 0x40 != 0).then(|| inp.u8().unwrap_or(7) & 0xf),
                };
                build::tcp(a, b, &s, (inp.u8().unwrap_or(0) & 0x3f) as usize)
            }
            3 => build::udp(a, b, sport, dport, (inp.u8().unwrap_or(0) & 0x1f) as usize),
            4 => build::echo(a, b, sport, dport, op & 0x08 != 0),
            5 => {
                let q = build::udp(b, a, dport, sport, 8);
                build::unreachable(a, b, &q)
            }
            6 => {
                let s = Seg {
                    sport: dport,
                    dport: sport,
                    seq: inp.u32().unwrap_or(0),
                    ack: 0,
                    flags: 0x02,
                    win: 1000,
                    wscale: None,
                };
                let q = build::tcp(b, a, &s, 0);
                build::unreachable(a, b, &q)
            }
            _ => {
                let ty = inp.u8().unwrap_or(0);
                build::icmp(a, b, ty, inp.u8().unwrap_or(0), [0, 1, 0, 1], &[0; 8])
            }
        };
        // Mutations of the well-formed packet: (offset, xor) pairs.
        if op & 0x40 != 0 && !pkt.is_empty() {
            for _ in 0..(inp.u8().unwrap_or(0) & 3) + 1 {
                let at = inp.u8().unwrap_or(0) as usize % pkt.len();
                pkt[at] ^= inp.u8().unwrap_or(0xff);
            }
        }
        if op & 0x20 != 0 {
            let cut = inp.u8().unwrap_or(0) as usize;
            pkt.truncate(pkt.len().saturating_sub(cut % 16));
        }
        let how = inp.u8().unwrap_or(0);
        let nat = match how >> 5 {
            1 | 2 => {
                let kind = if how >> 5 == 1 {
                    NatKind::Src
                } else {
                    NatKind::Dst
                };
                let lo = if v6 {
                    0xfd00_0000_0000_0000_0000_0000_0000_0008u128
                } else {
                    0x0a00_0008
                };
                Some(NatSpec {
                    range: Some(NatRange {
                        kind,
                        addr_min: lo,
                        addr_max: lo + (how & 1) as u128,
                        port_min: if how & 2 != 0 { 2000 } else { 0 },
                        port_max: if how & 2 != 0 { 2001 } else { 0 },
                        random: how & 8 != 0,
                        persistent: false,
                    }),
                })
            }
            3 => Some(NatSpec::default()),
            _ => None,
        };
        let req = Request {
            zone: (how & 0x3) as u16,
            commit: how & 0x4 != 0 || how & 0x10 != 0,
            force: how & 0x8 != 0,
            nat,
            mark: (how & 0x10 != 0).then_some((how as u32, 0xff)),
            label: None,
            prev_state: 0,
            prev_zone: 0,
        };
        let ipv6 = match op & 0x7 {
            0 => op & 0x10 != 0,
            _ => v6,
        };
        let v = t.track(&mut pkt, ipv6, &req, now);
        assert!(v.state & TRK != 0, "{v:?}");
        assert_eq!(v.zone, req.zone);
        assert!(t.len() <= LIMIT, "{} connections over {LIMIT}", t.len());
        let n = t.len() as usize;
        let idx = t.indexed();
        assert!(
            idx <= 2 * n && idx >= n,
            "{idx} index entries for {n} connections"
        );
        assert!(t.zone_usage(1).1 <= 3);
        now += match inp.u8().unwrap_or(0) {
            250..=255 => 200_000, // past most timeouts
            x => x as u64,
        };
    }
    t.sweep(now + 1_000_000_000);
    assert_eq!(t.len(), 0);
    assert_eq!(t.indexed(), 0);
});
