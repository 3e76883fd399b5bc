//! The tracker driven with whole packets: handshakes, replies, invalid
//! segments, ICMP errors, zones, limits, NAT with checksums, expiry, and
//! several threads sharing one table.

use conntrack::build::{self, Ip, Seg};
use conntrack::state::*;
use conntrack::{Filter, Limits, NatKind, NatRange, NatSpec, Request, Timeouts, Tracker};

const A: Ip = Ip::V4([10, 9, 0, 1]);
const B: Ip = Ip::V4([10, 9, 0, 2]);

fn seg(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8) -> Seg {
    Seg {
        sport,
        dport,
        seq,
        ack,
        flags,
        win: 64240,
        wscale: (flags & 2 != 0).then_some(7),
    }
}

fn commit(zone: u16) -> Request {
    Request {
        zone,
        commit: true,
        ..Request::default()
    }
}

fn track(t: &Tracker, p: &mut [u8], req: &Request) -> u32 {
    t.track(p, p[0] >> 4 == 6, req, 1_000).state
}

#[test]
fn tcp_handshake_data_close() {
    let t = Tracker::default();
    let look = Request::default();
    let mut syn = build::tcp(A, B, &seg(40000, 80, 100, 0, 0x02), 0);
    assert_eq!(track(&t, &mut syn, &look), TRK | NEW, "not committed");
    assert_eq!(t.len(), 0);
    assert_eq!(track(&t, &mut syn, &commit(0)), TRK | NEW);
    assert_eq!(t.len(), 1);
    let mut synack = build::tcp(B, A, &seg(80, 40000, 900, 101, 0x12), 0);
    assert_eq!(track(&t, &mut synack, &look), TRK | EST | RPL);
    let mut ack = build::tcp(A, B, &seg(40000, 80, 101, 901, 0x10), 0);
    assert_eq!(track(&t, &mut ack, &look), TRK | EST);
    let mut data = build::tcp(A, B, &seg(40000, 80, 101, 901, 0x18), 500);
    assert_eq!(track(&t, &mut data, &look), TRK | EST);
    // Far out of the window.
    let mut wild = build::tcp(A, B, &seg(40000, 80, 101 + 0x4000_0000, 901, 0x18), 10);
    assert_eq!(track(&t, &mut wild, &look), TRK | INV);
    // Bad flags.
    let mut synfin = build::tcp(A, B, &seg(40000, 80, 601, 901, 0x03), 0);
    assert_eq!(track(&t, &mut synfin, &look), TRK | INV);
    // In another zone the connection is unknown.
    assert_eq!(
        track(&t, &mut data, &Request { zone: 5, ..look }),
        TRK | NEW
    );
    let d = t.dump(&Filter::default(), 10, 1_000);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].conn.state_name(), "ESTABLISHED");
    // A SYN-ACK alone is not a new connection.
    let mut stray = build::tcp(A, B, &seg(5555, 80, 1, 1, 0x12), 0);
    assert_eq!(track(&t, &mut stray, &commit(0)), TRK | INV);
}

#[test]
fn udp_and_icmp() {
    let t = Tracker::default();
    let look = Request::default();
    let mut q = build::udp(A, B, 5353, 53, 20);
    assert_eq!(track(&t, &mut q, &commit(0)), TRK | NEW);
    assert_eq!(track(&t, &mut q, &look), TRK | NEW, "no reply yet");
    let mut r = build::udp(B, A, 53, 5353, 40);
    assert_eq!(track(&t, &mut r, &look), TRK | EST | RPL);
    assert_eq!(track(&t, &mut q, &look), TRK | EST);
    // An ICMP error about the query is related.
    let mut err = build::unreachable(B, A, &q);
    assert_eq!(track(&t, &mut err, &look), TRK | REL | RPL);
    // Sent to someone other than the quoted packet's sender: invalid (as
    // in Open vSwitch and Linux; found by the kernel oracle).
    let mut misdirected = build::unreachable(B, Ip::V4([10, 9, 0, 3]), &q);
    assert_eq!(track(&t, &mut misdirected, &look), TRK | INV);
    // About a packet of no connection: invalid.
    let other = build::udp(A, B, 1, 2, 0);
    let mut err2 = build::unreachable(B, A, &other);
    assert_eq!(track(&t, &mut err2, &look), TRK | INV);
    // Echo.
    let mut ping = build::echo(A, B, 7, 1, false);
    assert_eq!(track(&t, &mut ping, &commit(0)), TRK | NEW);
    let mut pong = build::echo(B, A, 7, 1, true);
    assert_eq!(track(&t, &mut pong, &look), TRK | EST | RPL);
    // A reply with no request is not a new connection.
    let mut lone = build::echo(B, A, 99, 1, true);
    assert_eq!(track(&t, &mut lone, &commit(0)), TRK | INV);
    // IPv6 echo.
    let a6 = Ip::V6([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let b6 = Ip::V6([0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    let mut p6 = build::echo(a6, b6, 3, 1, false);
    assert_eq!(track(&t, &mut p6, &commit(0)), TRK | NEW);
    let mut r6 = build::echo(b6, a6, 3, 1, true);
    assert_eq!(track(&t, &mut r6, &look), TRK | EST | RPL);
}

#[test]
fn garbage_is_invalid() {
    let t = Tracker::default();
    for p in [&[][..], &[0x45][..], &[0x60, 0, 0][..], &[0xff; 40][..]] {
        let mut p = p.to_vec();
        assert_eq!(t.track(&mut p, false, &commit(0), 0).state, TRK | INV);
        assert_eq!(t.track(&mut p, true, &commit(0), 0).state, TRK | INV);
    }
    assert!(t.is_empty());
}

#[test]
fn mark_and_label() {
    let t = Tracker::default();
    let mut q = build::udp(A, B, 1000, 2000, 0);
    let req = Request {
        mark: Some((0x12, 0xff)),
        label: Some((1 << 100, 1 << 100)),
        ..commit(3)
    };
    let v = t.track(&mut q, false, &req, 0);
    assert_eq!((v.mark, v.label, v.zone), (0x12, 1 << 100, 3));
    let mut r = build::udp(B, A, 2000, 1000, 0);
    let v = t.track(
        &mut r,
        false,
        &Request {
            zone: 3,
            ..Request::default()
        },
        0,
    );
    assert_eq!((v.mark, v.label), (0x12, 1 << 100));
    let o = v.orig.unwrap();
    assert_eq!((o.sport, o.dport, o.proto), (1000, 2000, 17));
}

#[test]
fn limits_refuse_new_but_keep_established() {
    let t = Tracker::new(
        Timeouts::default(),
        Limits {
            total: 0,
            zone_default: 0,
        },
    );
    t.set_zone_limit(7, Some(2));
    let z = commit(7);
    let look = Request {
        zone: 7,
        ..Request::default()
    };
    for p in 0..2u16 {
        let mut q = build::udp(A, B, 100 + p, 53, 0);
        t.track(&mut q, false, &z, 0);
    }
    assert_eq!(t.zone_usage(7), (2, 2));
    // Both replied: assured, so neither may be evicted.
    for p in 0..2u16 {
        let mut r = build::udp(B, A, 53, 100 + p, 0);
        assert_eq!(t.track(&mut r, false, &look, 0).state, TRK | EST | RPL);
    }
    let mut q = build::udp(A, B, 300, 53, 0);
    assert_eq!(t.track(&mut q, false, &z, 0).state, TRK | NEW);
    assert_eq!(t.zone_usage(7).1, 2, "refused");
    let n = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(n(&t.stats.refused), 1);
    assert_eq!(n(&t.stats.early_dropped), 0);
    // The first two go on.
    let mut r = build::udp(B, A, 53, 100, 0);
    assert_eq!(t.track(&mut r, false, &look, 0).state, TRK | EST | RPL);
    // Other zones are not limited.
    assert_eq!(t.track(&mut q, false, &commit(8), 0).state, TRK | NEW);
    assert_eq!(t.len(), 3);
    // An unreplied one in the zone is evicted for a newcomer (early drop).
    t.set_zone_limit(7, Some(3));
    let mut u = build::udp(A, B, 400, 53, 0);
    t.track(&mut u, false, &z, 0);
    let mut w = build::udp(A, B, 500, 53, 0);
    t.track(&mut w, false, &z, 0);
    assert_eq!(t.zone_usage(7), (3, 3));
    assert_eq!(n(&t.stats.early_dropped), 1);
    let mut wr = build::udp(B, A, 53, 500, 0);
    assert_eq!(t.track(&mut wr, false, &look, 0).state, TRK | EST | RPL);
    let mut ur = build::udp(B, A, 53, 400, 0);
    assert_eq!(
        t.track(&mut ur, false, &look, 0).state,
        TRK | NEW,
        "evicted"
    );
}

#[test]
fn expiry_and_flush() {
    let t = Tracker::default();
    let mut q = build::udp(A, B, 1, 2, 0);
    t.track(&mut q, false, &commit(0), 0);
    let mut r = build::udp(B, A, 2, 1, 0);
    // 30 s for UDP without a reply: gone at 31 s.
    assert_eq!(
        t.track(&mut r, false, &Request::default(), 31_000).state,
        TRK | NEW
    );
    assert!(t.is_empty());
    t.track(&mut q, false, &commit(1), 0);
    t.track(&mut q, false, &commit(2), 0);
    assert_eq!(
        t.flush(&Filter {
            zone: Some(1),
            ..Filter::default()
        }),
        1
    );
    assert_eq!(t.len(), 1);
    t.sweep(1_000_000);
    assert!(t.is_empty());
    assert_eq!(t.indexed(), 0);
}

fn snat(addr: [u8; 4], ports: (u16, u16)) -> Request {
    let a = u32::from_be_bytes(addr) as u128;
    Request {
        nat: Some(NatSpec {
            range: Some(NatRange {
                kind: NatKind::Src,
                addr_min: a,
                addr_max: a,
                port_min: ports.0,
                port_max: ports.1,
                random: false,
                persistent: false,
            }),
        }),
        ..commit(0)
    }
}

#[test]
fn snat_many_hosts_behind_one_address() {
    let t = Tracker::default();
    let gw = [192, 0, 2, 1];
    let server = Ip::V4([198, 51, 100, 7]);
    let mut seen = std::collections::HashSet::new();
    for h in 1..=50u8 {
        let host = Ip::V4([10, 9, 0, h]);
        // All hosts use the same source port.
        let mut syn = build::tcp(host, server, &seg(40000, 443, 7, 0, 0x02), 0);
        let v = t.track(&mut syn, false, &snat(gw, (1024, 65535)), 0);
        assert_eq!(v.state, TRK | NEW | SNAT);
        assert!(build::checksums_ok(&syn));
        assert_eq!(&syn[12..16], &gw);
        let port = u16::from_be_bytes([syn[20], syn[21]]);
        assert!(seen.insert(port), "port {port} used twice");
        // The server's reply goes back to this host.
        let mut synack = build::tcp(server, Ip::V4(gw), &seg(443, port, 99, 8, 0x12), 0);
        let v = t.track(
            &mut synack,
            false,
            &Request {
                nat: Some(NatSpec::default()),
                ..Request::default()
            },
            0,
        );
        assert_eq!(v.state, TRK | EST | RPL | DNAT);
        assert_eq!(&synack[16..20], &[10, 9, 0, h]);
        assert_eq!(u16::from_be_bytes([synack[22], synack[23]]), 40000);
        assert!(build::checksums_ok(&synack));
        // An ICMP error from the server about the host's packet is
        // translated back too.
        let mut err = build::unreachable(server, Ip::V4(gw), &syn);
        let v = t.track(
            &mut err,
            false,
            &Request {
                nat: Some(NatSpec::default()),
                ..Request::default()
            },
            0,
        );
        assert_eq!(v.state & (REL | RPL), REL | RPL);
        assert_eq!(&err[16..20], &[10, 9, 0, h], "outer destination");
        assert_eq!(&err[28 + 12..28 + 16], &[10, 9, 0, h], "quoted source");
        assert!(build::checksums_ok(&err));
    }
    assert_eq!(t.len(), 50);
}

#[test]
fn dnat_port_forward() {
    let t = Tracker::default();
    let backend = u32::from_be_bytes([10, 9, 0, 80]) as u128;
    let req = Request {
        nat: Some(NatSpec {
            range: Some(NatRange {
                kind: NatKind::Dst,
                addr_min: backend,
                addr_max: backend,
                port_min: 8080,
                port_max: 8080,
                random: false,
                persistent: false,
            }),
        }),
        ..commit(0)
    };
    let client = Ip::V4([203, 0, 113, 5]);
    let vip = Ip::V4([192, 0, 2, 10]);
    let mut q = build::udp(client, vip, 5000, 80, 10);
    assert_eq!(t.track(&mut q, false, &req, 0).state, TRK | NEW | DNAT);
    assert_eq!(&q[16..20], &[10, 9, 0, 80]);
    assert_eq!(u16::from_be_bytes([q[22], q[23]]), 8080);
    assert!(build::checksums_ok(&q));
    let mut r = build::udp(Ip::V4([10, 9, 0, 80]), client, 8080, 5000, 10);
    let v = t.track(
        &mut r,
        false,
        &Request {
            nat: Some(NatSpec::default()),
            ..Request::default()
        },
        0,
    );
    assert_eq!(v.state, TRK | EST | RPL | SNAT);
    assert_eq!(&r[12..16], &[192, 0, 2, 10]);
    assert_eq!(u16::from_be_bytes([r[20], r[21]]), 80);
    assert!(build::checksums_ok(&r));
}

#[test]
fn threads_share_the_table() {
    let t = std::sync::Arc::new(Tracker::default());
    let hs: Vec<_> = (0..4u16)
        .map(|w| {
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..2000u16 {
                    let mut q = build::udp(A, B, i, 1000 + w, 0);
                    t.track(&mut q, false, &commit(0), 0);
                    let mut r = build::udp(B, A, 1000 + w, i, 0);
                    let s = t.track(&mut r, false, &Request::default(), 0).state;
                    assert_eq!(s, TRK | EST | RPL);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(t.len(), 8000);
    assert_eq!(t.indexed(), 16000);
}

#[test]
fn peek_changes_nothing() {
    let t = Tracker::default();
    let mut syn = build::tcp(A, B, &seg(40000, 80, 100, 0, 0x02), 0);
    assert_eq!(t.peek(&mut syn, false, &commit(0), 0).state, TRK | NEW);
    assert!(t.is_empty());
    t.track(&mut syn, false, &commit(0), 0);
    let before = t.dump(&Filter::default(), 10, 0);
    let mut synack = build::tcp(B, A, &seg(80, 40000, 900, 101, 0x12), 0);
    assert_eq!(
        t.peek(&mut synack, false, &commit(0), 0).state,
        TRK | EST | RPL
    );
    assert_eq!(t.dump(&Filter::default(), 10, 0), before);
    // Expired connections are reported gone but stay until a real packet.
    assert_eq!(
        t.peek(&mut synack, false, &commit(0), 10_000_000).state,
        TRK | INV
    );
    assert_eq!(t.len(), 1);
}
