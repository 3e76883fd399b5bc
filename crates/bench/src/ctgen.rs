//! Packet sequences for the connection tracker's kernel oracle
//! (`scripts/ct_oracle.py`): `ct-gen` writes seeded, reproducible
//! scenarios, one packet a line, and `ct-replay` runs such lines through
//! a [`conntrack::Tracker`] (every packet committed, as a stateful
//! firewall confirms every connection it passes) and appends its verdict.
//!
//! A line is `SCENARIO INDEX FAMILY KIND HEX`: the scenario's number (the
//! tracker and the kernel's table are emptied between scenarios), the
//! packet's place in it, `4` or `6`, what the packet is (`tcp.syn`,
//! `tcp.ahead`, `icmp.err_tracked`, ...; the oracle's list of known
//! differences is keyed by it) and the IP packet in hex, as
//! `conntrack::build` built it. `ct-replay` appends `new`, `est`, `rel` or
//! `inv` (the `ct_state` bit; `rpl` is left out, the kernel's `ct state`
//! has no reply bit).

use conntrack::build::{self, Ip, Seg};
use conntrack::{state, Request, Tracker};

/// splitmix64: small, seeded, the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    fn u32(&mut self) -> u32 {
        self.next() as u32
    }
    fn port(&mut self) -> u16 {
        1024 + self.below(60000) as u16
    }
}

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const URG: u8 = 0x20;

/// One generated packet.
struct Pkt {
    kind: String,
    bytes: Vec<u8>,
}

/// The addresses of a scenario: a client, a server and a router between
/// them (the source of ICMP errors), all in 10.231.0.0/16 or fd31::/64.
struct Hosts {
    c: Ip,
    s: Ip,
    r: Ip,
}

fn hosts(rng: &mut Rng, v6: bool) -> Hosts {
    let (a, b, c) = (
        1 + rng.below(250) as u8,
        1 + rng.below(250) as u8,
        1 + rng.below(250) as u8,
    );
    if v6 {
        let ip = |net: u8, h: u8| {
            let mut x = [0u8; 16];
            x[..2].copy_from_slice(&[0xfd, 0x31]);
            x[13] = net;
            x[15] = h;
            Ip::V6(x)
        };
        Hosts {
            c: ip(1, a),
            s: ip(2, b),
            r: ip(3, c),
        }
    } else {
        Hosts {
            c: Ip::V4([10, 231, 1, a]),
            s: Ip::V4([10, 231, 2, b]),
            r: Ip::V4([10, 231, 3, c]),
        }
    }
}

/// One end of a TCP scenario: its next sequence number and the other's
/// data it has seen (what it acknowledges).
#[derive(Clone, Copy)]
struct End {
    nxt: u32,
    acked: u32,
}

struct TcpGen<'a> {
    h: &'a Hosts,
    cport: u16,
    sport: u16,
    end: [End; 2],
    win: u16,
    wscale: [Option<u8>; 2],
    /// Segments sent so far (for retransmissions): (from server, seg, len).
    sent: Vec<(bool, Seg, usize)>,
    out: Vec<Pkt>,
}

impl TcpGen<'_> {
    fn seg(&self, server: bool, seq: u32, ack: u32, flags: u8) -> Seg {
        let (sport, dport) = if server {
            (self.sport, self.cport)
        } else {
            (self.cport, self.sport)
        };
        Seg {
            sport,
            dport,
            seq,
            ack,
            flags,
            win: self.win,
            wscale: if flags & SYN != 0 {
                self.wscale[server as usize]
            } else {
                None
            },
        }
    }
    fn emit(&mut self, kind: &str, server: bool, s: Seg, len: usize) {
        let (a, b) = if server {
            (self.h.s, self.h.c)
        } else {
            (self.h.c, self.h.s)
        };
        self.out.push(Pkt {
            kind: format!("tcp.{kind}"),
            bytes: build::tcp(a, b, &s, len),
        });
        self.sent.push((server, s, len));
    }
    /// A segment of `len` bytes from one end, advancing its sequence.
    fn send(&mut self, kind: &str, server: bool, flags: u8, len: usize) {
        let i = server as usize;
        let (seq, ack) = (self.end[i].nxt, self.end[1 - i].nxt);
        let s = self.seg(server, seq, ack, flags);
        self.emit(kind, server, s, len);
        let grow = len as u32 + (flags & (SYN | FIN) != 0) as u32;
        self.end[i].nxt = seq.wrapping_add(grow);
        if flags & ACK != 0 {
            self.end[i].acked = ack;
        }
    }
}

fn tcp_scenario(rng: &mut Rng, v6: bool) -> Vec<Pkt> {
    let h = hosts(rng, v6);
    let scale = rng.chance(60);
    let mut g = TcpGen {
        h: &h,
        cport: rng.port(),
        sport: [80, 443, 22, 5201][rng.below(4) as usize],
        end: [
            End {
                nxt: rng.u32(),
                acked: 0,
            },
            End {
                nxt: rng.u32(),
                acked: 0,
            },
        ],
        win: if scale { 64240 } else { 65535 },
        wscale: if scale {
            [Some(rng.below(10) as u8), Some(rng.below(10) as u8)]
        } else {
            [None, None]
        },
        sent: Vec::new(),
        out: Vec::new(),
    };
    // How it opens.
    let opening = rng.below(100);
    let mut established = true;
    if opening < 60 {
        g.send("syn", false, SYN, 0);
        if rng.chance(20) {
            let s = g.sent[0].1;
            g.emit("syn_dup", false, s, 0);
        }
        if rng.chance(10) {
            // The originator acknowledges before the answer came.
            let seq = g.end[0].nxt;
            let s = g.seg(false, seq, rng.u32(), ACK);
            g.emit("ack_before_synack", false, s, 0);
        }
        if rng.chance(8) {
            // A second SYN with another initial sequence number.
            let s = g.seg(false, g.end[0].nxt.wrapping_add(rng.u32()), 0, SYN);
            g.emit("syn_other_isn", false, s, 0);
        }
        g.send("synack", true, SYN | ACK, 0);
        if rng.chance(15) {
            let s = g.sent.last().expect("the SYN-ACK").1;
            g.emit("synack_dup", true, s, 0);
        }
        g.send("ack3", false, ACK, 0);
    } else if opening < 70 {
        g.send("synack_alone", true, SYN | ACK, 0);
        established = false;
        if rng.chance(50) {
            g.send("ack_after_synack_alone", false, ACK, 0);
        }
    } else if opening < 85 {
        // Picked up in the middle (the tracker starts after the handshake).
        g.send(
            "midstream_first",
            false,
            ACK | PSH,
            1 + rng.below(500) as usize,
        );
    } else if opening < 92 {
        g.send("syn", false, SYN, 0);
        g.send("rst_answer", true, RST | ACK, 0);
        established = false;
    } else {
        // The first packet with other flags.
        let fl = [RST, RST | ACK, FIN | ACK, ACK | URG, FIN | PSH | ACK][rng.below(5) as usize];
        g.send(&format!("first_flags_{fl:02x}"), false, fl, 0);
        established = false;
    }
    let steps = if established {
        rng.below(10)
    } else {
        rng.below(3)
    };
    for _ in 0..steps {
        let server = rng.chance(40);
        let i = server as usize;
        match rng.below(100) {
            0..=29 => {
                let n = 1 + rng.below(1000) as usize;
                g.send("data", server, ACK | PSH, n);
            }
            30..=44 => g.send("ack", server, ACK, 0),
            45..=54 => {
                // Retransmission of an earlier data segment of this end.
                let old: Vec<_> = g
                    .sent
                    .iter()
                    .filter(|(sv, _, n)| *sv == server && *n > 0)
                    .copied()
                    .collect();
                if let Some(&(_, s, n)) = old.get(rng.below(old.len().max(1) as u64) as usize) {
                    g.emit("retransmit", server, s, n);
                }
            }
            55..=61 => {
                let s = g.seg(
                    server,
                    g.end[i].nxt.wrapping_add(0x4000_0000),
                    g.end[1 - i].nxt,
                    ACK | PSH,
                );
                g.emit("ahead", server, s, 100);
            }
            62..=66 => {
                let s = g.seg(
                    server,
                    g.end[i].nxt.wrapping_add(3 << 20),
                    g.end[1 - i].nxt,
                    ACK | PSH,
                );
                g.emit("ahead_near", server, s, 100);
            }
            67..=71 => {
                let s = g.seg(
                    server,
                    g.end[i].nxt.wrapping_sub(0x4000_0000),
                    g.end[1 - i].nxt,
                    ACK | PSH,
                );
                g.emit("behind", server, s, 100);
            }
            72..=74 => {
                let s = g.seg(
                    server,
                    g.end[i].nxt,
                    g.end[1 - i].nxt.wrapping_add(0x4000_0000),
                    ACK,
                );
                g.emit("ack_ahead", server, s, 0);
            }
            75..=82 => {
                let fl = [
                    SYN | FIN,
                    SYN | RST,
                    FIN,
                    0,
                    PSH,
                    URG,
                    FIN | RST | ACK,
                    SYN | FIN | ACK,
                    RST | FIN,
                ][rng.below(9) as usize];
                let s = g.seg(server, g.end[i].nxt, g.end[1 - i].nxt, fl);
                g.emit(&format!("badflags_{fl:02x}"), server, s, 0);
            }
            83..=86 => {
                let s = g.seg(server, g.end[i].nxt, 0, SYN);
                g.emit("syn_in_conn", server, s, 0);
            }
            87..=90 => {
                let s = g.seg(server, g.end[i].nxt.wrapping_add(0x2000_0000), 0, RST);
                g.emit("rst_out", server, s, 0);
            }
            _ => {
                let fl = if rng.chance(50) { RST } else { RST | ACK };
                g.send("rst_in", server, fl, 0);
            }
        }
    }
    if established && rng.chance(60) {
        let first = rng.chance(70);
        // FIN from one end, its ACK (maybe with the other's FIN), the last ACK.
        g.send("fin", !first, FIN | ACK, 0);
        if rng.chance(50) {
            g.send("finack_fin", first, FIN | ACK, 0);
        } else {
            g.send("fin_acked", first, ACK, 0);
            g.send("fin2", first, FIN | ACK, 0);
        }
        g.send("last_ack", !first, ACK, 0);
        if rng.chance(30) {
            g.send("after_close", !first, ACK | PSH, 10);
        }
        if rng.chance(30) {
            g.end[0].nxt = g.end[0].nxt.wrapping_add(100_000);
            g.send("reopen_syn", false, SYN, 0);
        }
    }
    g.out
}

fn udp_scenario(rng: &mut Rng, v6: bool) -> Vec<Pkt> {
    let h = hosts(rng, v6);
    let (cp, sp) = (rng.port(), [53, 123, 4789, 9999][rng.below(4) as usize]);
    let both = rng.chance(60);
    let mut out = Vec::new();
    for k in 0..1 + rng.below(4) {
        let reply = both && k % 2 == 1;
        let (a, b, x, y) = if reply {
            (h.s, h.c, sp, cp)
        } else {
            (h.c, h.s, cp, sp)
        };
        let n = rng.below(200) as usize;
        out.push(Pkt {
            kind: if reply { "udp.reply" } else { "udp.send" }.into(),
            bytes: build::udp(a, b, x, y, n),
        });
    }
    if rng.chance(20) {
        out.push(Pkt {
            kind: "udp.reply_only".into(),
            bytes: build::udp(h.s, h.c, sp, cp.wrapping_add(1).max(1024), 10),
        });
    }
    out
}

fn icmp_scenario(rng: &mut Rng, v6: bool) -> Vec<Pkt> {
    let h = hosts(rng, v6);
    let id = rng.below(65536) as u16;
    let mut out = Vec::new();
    match rng.below(3) {
        0 => {
            for k in 0..1 + rng.below(3) as u16 {
                out.push(Pkt {
                    kind: "icmp.echo_req".into(),
                    bytes: build::echo(h.c, h.s, id, k, false),
                });
                if rng.chance(70) {
                    out.push(Pkt {
                        kind: "icmp.echo_rep".into(),
                        bytes: build::echo(h.s, h.c, id, k, true),
                    });
                }
            }
        }
        1 => out.push(Pkt {
            kind: "icmp.reply_alone".into(),
            bytes: build::echo(h.s, h.c, id, 1, true),
        }),
        _ => {
            out.push(Pkt {
                kind: "icmp.echo_req".into(),
                bytes: build::echo(h.c, h.s, id, 1, false),
            });
            out.push(Pkt {
                kind: "icmp.reply_other_id".into(),
                bytes: build::echo(h.s, h.c, id.wrapping_add(1), 1, true),
            });
        }
    }
    out
}

/// ICMP errors quoting a packet of a tracked connection (from the server
/// or from a router on the way, back to the quoted packet's sender), of
/// no connection, or sent to someone else.
fn icmp_error_scenario(rng: &mut Rng, v6: bool) -> Vec<Pkt> {
    let h = hosts(rng, v6);
    let (cp, sp) = (rng.port(), 80);
    let mut out = Vec::new();
    let first = if rng.chance(50) {
        build::udp(h.c, h.s, cp, sp, 20)
    } else {
        let s = Seg {
            sport: cp,
            dport: sp,
            seq: rng.u32(),
            ack: 0,
            flags: SYN,
            win: 64240,
            wscale: Some(7),
        };
        build::tcp(h.c, h.s, &s, 0)
    };
    let tcp = first[if v6 { 6 } else { 9 }] == 6;
    let track_first = rng.chance(80);
    if track_first {
        out.push(Pkt {
            kind: if tcp { "tcp.syn" } else { "udp.send" }.into(),
            bytes: first.clone(),
        });
    }
    let from = if rng.chance(50) { h.s } else { h.r };
    let kind = match (track_first, rng.below(100)) {
        (true, 0..=79) => "icmp.err_tracked",
        (true, _) => "icmp.err_wrong_dst",
        (false, _) => "icmp.err_untracked",
    };
    let to = if kind == "icmp.err_wrong_dst" {
        h.r
    } else {
        h.c
    };
    let from = if kind == "icmp.err_wrong_dst" {
        h.s
    } else {
        from
    };
    out.push(Pkt {
        kind: kind.into(),
        bytes: build::unreachable(from, to, &first),
    });
    if track_first && rng.chance(30) {
        // An error about the quoted packet's reply, back to the server.
        let reply = if tcp {
            let s = Seg {
                sport: sp,
                dport: cp,
                seq: rng.u32(),
                ack: 0,
                flags: RST | ACK,
                win: 0,
                wscale: None,
            };
            build::tcp(h.s, h.c, &s, 0)
        } else {
            build::udp(h.s, h.c, sp, cp, 20)
        };
        out.push(Pkt {
            kind: "icmp.err_about_reply".into(),
            bytes: build::unreachable(h.c, h.s, &reply),
        });
    }
    out
}

/// `scenarios` scenarios from `seed`, as lines.
pub fn generate(seed: u64, scenarios: u64) -> String {
    let mut rng = Rng(seed);
    let mut s = String::new();
    for n in 0..scenarios {
        let v6 = rng.chance(35);
        let pkts = match rng.below(100) {
            0..=59 => tcp_scenario(&mut rng, v6),
            60..=74 => udp_scenario(&mut rng, v6),
            75..=87 => icmp_scenario(&mut rng, v6),
            _ => icmp_error_scenario(&mut rng, v6),
        };
        for (i, p) in pkts.iter().enumerate() {
            let hex: String = p.bytes.iter().map(|b| format!("{b:02x}")).collect();
            s.push_str(&format!(
                "{n} {i} {} {} {hex}\n",
                if v6 { 6 } else { 4 },
                p.kind
            ));
        }
    }
    s
}

/// The verdict's name: new, est, rel or inv (what the kernel's `ct state`
/// says; the reply bit is left out).
pub fn verdict_name(st: u32) -> &'static str {
    if st & state::INV != 0 {
        "inv"
    } else if st & state::REL != 0 {
        "rel"
    } else if st & state::EST != 0 {
        "est"
    } else if st & state::NEW != 0 {
        "new"
    } else {
        "none"
    }
}

/// Each line of `input` with the tracker's verdict appended; a new
/// tracker for each scenario, every packet committed in zone 0, the clock
/// one millisecond further at each packet.
pub fn replay(input: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut tracker = Tracker::default();
    let mut scenario = None;
    let mut now = 1_000u64;
    for (ln, line) in input.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let [sc, _, fam, _, hex] = f[..] else {
            return Err(format!(
                "line {}: want SCENARIO INDEX FAMILY KIND HEX",
                ln + 1
            ));
        };
        if scenario != Some(sc) {
            tracker = Tracker::default();
            scenario = Some(sc);
        }
        let mut b = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2).unwrap_or("zz"), 16))
            .collect::<Result<Vec<u8>, _>>()
            .map_err(|e| format!("line {}: {e}", ln + 1))?;
        now += 1;
        let req = Request {
            commit: true,
            ..Request::default()
        };
        let v = tracker.track(&mut b, fam == "6", &req, now);
        out.push_str(line);
        out.push(' ');
        out.push_str(verdict_name(v.state));
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reproducible_and_replayable() {
        let a = generate(7, 50);
        assert_eq!(a, generate(7, 50));
        assert_ne!(a, generate(8, 50));
        let r = replay(&a).unwrap();
        assert_eq!(r.lines().count(), a.lines().count());
        assert!(r.lines().all(|l| !l.ends_with(" none")));
        // A handshake is new, then established.
        assert!(
            r.contains("tcp.syn ")
                && r.lines()
                    .any(|l| l.contains("tcp.ack3") && l.ends_with("est"))
        );
    }
}
