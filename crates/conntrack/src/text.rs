//! The tracker in text, as Open vSwitch's `ovs-appctl dpctl/*` commands
//! write and read it: a connection as `dump-conntrack` prints it
//! ([`format_entry`]), the tuples `flush-conntrack` takes
//! ([`parse_flush`]), the zone limits of `ct-set-limits`,
//! `ct-get-limits`, `ct-del-limits` ([`parse_zone_limit`],
//! [`parse_zones`], [`format_zone_limits`]) and the timeouts
//! (`NAME=SECS`, [`parse_timeout`]).
//!
//! Open vSwitch 3.1 (`lib/ct-dpif.c`, `lib/ofp-ct.c`, `lib/dpctl.c`) is the
//! reference for field order and spelling; where sluice differs on
//! purpose, docs/OVS-DIALECT.md says so. Parsers name the field and the
//! problem in their errors and never panic.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::key::{proto, Key};
use crate::tcp::PeerState;
use crate::{Conn, Entry, Filter, KeyFilter, ProtoState};

/// The protocol's name as `dump-conntrack` prints it (its number when it
/// has none).
pub fn proto_name(p: u8) -> std::borrow::Cow<'static, str> {
    match p {
        proto::ICMP => "icmp".into(),
        proto::ICMPV6 => "icmpv6".into(),
        proto::TCP => "tcp".into(),
        proto::UDP => "udp".into(),
        proto::SCTP => "sctp".into(),
        proto::UDPLITE => "udplite".into(),
        33 => "dccp".into(),
        2 => "igmp".into(),
        n => n.to_string().into(),
    }
}

/// A TCP connection's state as `dump-conntrack` prints it (Open vSwitch's:
/// the later of the two ends' states, FIN_WAIT_2 shown as TIME_WAIT); None
/// for other protocols, which Open vSwitch prints no state for.
pub fn tcp_state(c: &Conn) -> Option<&'static str> {
    let ProtoState::Tcp(t) = c.proto else {
        return None;
    };
    Some(match t.peer[0].state.max(t.peer[1].state) {
        PeerState::Closed => "CLOSED",
        PeerState::SynSent => "SYN_SENT",
        PeerState::Established => "ESTABLISHED",
        PeerState::Closing => "CLOSING",
        PeerState::FinWait2 | PeerState::TimeWait => "TIME_WAIT",
    })
}

fn put_addr(out: &mut String, a: u128, v6: bool) {
    if v6 {
        let _ = write!(out, "{}", Ipv6Addr::from(a));
    } else {
        let _ = write!(out, "{}", Ipv4Addr::from(a as u32));
    }
}

fn put_tuple(out: &mut String, k: &Key) {
    out.push_str("src=");
    put_addr(out, k.src_addr(), k.v6);
    out.push_str(",dst=");
    put_addr(out, k.dst_addr(), k.v6);
    if k.proto == proto::ICMP || k.proto == proto::ICMPV6 {
        let _ = write!(
            out,
            ",id={},type={},code={}",
            k.sport,
            k.dport >> 8,
            k.dport & 0xff
        );
    } else {
        let _ = write!(out, ",sport={},dport={}", k.sport, k.dport);
    }
}

/// One connection as `ovs-appctl dpctl/dump-conntrack` prints it (with
/// `stats`, `-s`: the seconds until it expires as `timeout=`; sluice keeps
/// no per-connection counters or start times, which Open vSwitch adds
/// there too).
///
/// `tcp,orig=(src=10.1.1.1,dst=10.1.1.2,sport=34567,dport=80),reply=(src=10.1.1.2,dst=10.1.1.1,sport=80,dport=34567),zone=1,mark=3,labels=0x200000001,protoinfo=(state=ESTABLISHED)`:
/// zone, mark and labels only when not zero, the state for TCP only.
pub fn format_entry(e: &Entry, stats: bool) -> String {
    let c = &e.conn;
    let mut out = String::with_capacity(160);
    out.push_str(&proto_name(c.key[0].proto));
    out.push_str(",orig=(");
    put_tuple(&mut out, &c.key[0]);
    out.push_str("),reply=(");
    put_tuple(&mut out, &c.key[1]);
    out.push(')');
    if c.key[0].zone != 0 {
        let _ = write!(out, ",zone={}", c.key[0].zone);
    }
    if stats {
        let _ = write!(out, ",timeout={}", e.remaining_ms / 1000);
    }
    if c.mark != 0 {
        let _ = write!(out, ",mark={}", c.mark);
    }
    if c.label() != 0 {
        let _ = write!(out, ",labels={:#x}", c.label());
    }
    if let Some(s) = tcp_state(c) {
        let _ = write!(out, ",protoinfo=(state={s})");
    }
    out
}

/// A number in decimal or `0x` hexadecimal, as Open vSwitch's parsers
/// take them.
fn number<T: TryFrom<u64>>(v: &str) -> Option<T> {
    let n = match v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => v.parse::<u64>().ok()?,
    };
    T::try_from(n).ok()
}

fn bad_number(key: &str, v: &str, what: &str) -> String {
    format!("{key}: {v:?} is not {what}")
}

/// `KEY=VALUE` pairs separated by commas (a value may be empty, which
/// the callers refuse with the key's name).
fn pairs(s: &str) -> impl Iterator<Item = (&str, &str)> {
    s.split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
}

/// The fields a tuple sets, before they are checked together.
#[derive(Default)]
struct Tuple {
    src: Option<u128>,
    dst: Option<u128>,
    sport: Option<u16>,
    dport: Option<u16>,
    icmp_id: Option<u16>,
    icmp_type: Option<u8>,
    icmp_code: Option<u8>,
}

/// What the tuples of one `flush-conntrack` share: the IP version and the
/// protocol (Open vSwitch's `ct_nw_proto` covers both tuples).
#[derive(Default)]
struct Shared {
    v6: Option<bool>,
    proto: Option<u8>,
}

const TUPLE_FIELDS: &str = "ct_nw_src, ct_nw_dst, ct_ipv6_src, ct_ipv6_dst, ct_nw_proto, ct_tp_src, ct_tp_dst, icmp_type, icmp_code, icmp_id";

fn parse_tuple(s: &str, shared: &mut Shared) -> Result<Tuple, String> {
    let mut t = Tuple::default();
    for (key, v) in pairs(s) {
        if v.is_empty() {
            return Err(format!("{key}: missing value"));
        }
        let once = |set: bool| {
            if set {
                Err(format!("{key} is set more than once"))
            } else {
                Ok(())
            }
        };
        match key {
            "ct_nw_src" | "ct_nw_dst" | "ct_ipv6_src" | "ct_ipv6_dst" => {
                let v6 = key.starts_with("ct_ipv6");
                if shared.v6.is_some_and(|x| x != v6) {
                    return Err(format!(
                        "{key}: the tuple's other addresses are IPv{}",
                        if v6 { 4 } else { 6 }
                    ));
                }
                let a = if v6 {
                    v.parse::<Ipv6Addr>()
                        .map(u128::from)
                        .map_err(|_| bad_number(key, v, "an IPv6 address"))?
                } else {
                    v.parse::<Ipv4Addr>()
                        .map(|a| u32::from(a) as u128)
                        .map_err(|_| bad_number(key, v, "an IPv4 address"))?
                };
                shared.v6 = Some(v6);
                let slot = if key.ends_with("src") {
                    &mut t.src
                } else {
                    &mut t.dst
                };
                once(slot.is_some())?;
                *slot = Some(a);
            }
            "ct_nw_proto" => {
                let p: u8 = number(v).ok_or_else(|| bad_number(key, v, "a protocol (0-255)"))?;
                if shared.proto.is_some_and(|q| q != p) {
                    return Err(format!("{key} is set more than once, differently"));
                }
                shared.proto = Some(p);
            }
            "ct_tp_src" | "ct_tp_dst" => {
                let p: u16 = number(v).ok_or_else(|| bad_number(key, v, "a port (0-65535)"))?;
                let slot = if key == "ct_tp_src" {
                    &mut t.sport
                } else {
                    &mut t.dport
                };
                once(slot.is_some())?;
                *slot = Some(p);
            }
            "icmp_id" => {
                once(t.icmp_id.is_some())?;
                t.icmp_id = Some(number(v).ok_or_else(|| bad_number(key, v, "an id (0-65535)"))?);
            }
            "icmp_type" | "icmp_code" => {
                let n: u8 = number(v).ok_or_else(|| bad_number(key, v, "a number (0-255)"))?;
                let slot = if key == "icmp_type" {
                    &mut t.icmp_type
                } else {
                    &mut t.icmp_code
                };
                once(slot.is_some())?;
                *slot = Some(n);
            }
            _ => {
                return Err(format!(
                    "{key}: not a conntrack tuple field (one of {TUPLE_FIELDS})"
                ))
            }
        }
    }
    Ok(t)
}

/// A checked tuple as the filter's fields.
fn tuple_filter(t: &Tuple, shared: &Shared) -> Result<KeyFilter, String> {
    let icmp = matches!(shared.proto, Some(proto::ICMP | proto::ICMPV6));
    let has_icmp = t.icmp_id.is_some() || t.icmp_type.is_some() || t.icmp_code.is_some();
    if has_icmp && !icmp {
        return Err(
            "icmp_id, icmp_type, icmp_code: need ct_nw_proto=1 (ICMP) or 58 (ICMPv6)".into(),
        );
    }
    let has_ports = t.sport.is_some() || t.dport.is_some();
    if has_ports && shared.proto.is_none() {
        return Err("ct_tp_src, ct_tp_dst: a port needs ct_nw_proto".into());
    }
    if has_ports && icmp {
        return Err(
            "ct_tp_src, ct_tp_dst: ICMP has no ports (icmp_id, icmp_type, icmp_code)".into(),
        );
    }
    // A port of 0 matches any, as in Open vSwitch.
    let nonzero = |p: Option<u16>| p.filter(|&p| p != 0);
    Ok(if icmp {
        KeyFilter {
            src: t.src,
            dst: t.dst,
            proto: shared.proto,
            sport: t.icmp_id,
            // Type and code are one field of the key; one given alone
            // takes the other as 0, as Open vSwitch compares them.
            dport: (t.icmp_type.is_some() || t.icmp_code.is_some())
                .then(|| (t.icmp_type.unwrap_or(0) as u16) << 8 | t.icmp_code.unwrap_or(0) as u16),
        }
    } else {
        KeyFilter {
            src: t.src,
            dst: t.dst,
            proto: shared.proto,
            sport: nonzero(t.sport),
            dport: nonzero(t.dport),
        }
    })
}

/// `zone=N` (0-65535).
pub fn parse_zone(s: &str) -> Result<u16, String> {
    let v = s
        .strip_prefix("zone=")
        .ok_or_else(|| format!("{s:?}: expected zone=N"))?;
    number(v).ok_or_else(|| bad_number("zone", v, "a zone (0-65535)"))
}

/// `flush-conntrack`'s arguments, Open vSwitch 3.1's: `[zone=N]
/// [ct-orig-tuple [ct-reply-tuple]]`, a tuple being
/// `ct_nw_src=A,ct_nw_dst=A,ct_nw_proto=P,ct_tp_src=N,ct_tp_dst=N`
/// (`ct_ipv6_src`/`ct_ipv6_dst` for IPv6; `icmp_id`, `icmp_type`,
/// `icmp_code` for ICMP), any field left out, an empty original tuple to
/// give only the reply's. With a tuple and no zone, zone 0 (as Open
/// vSwitch documents it); with neither, every connection.
pub fn parse_flush<S: AsRef<str>>(args: &[S]) -> Result<Filter, String> {
    let mut args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let mut filter = Filter::default();
    if args.first().is_some_and(|a| a.starts_with("zone=")) {
        filter.zone = Some(parse_zone(args.remove(0))?);
    }
    if let Some(a) = args
        .first()
        .filter(|a| a.starts_with("mark=") || a.starts_with("labels="))
    {
        return Err(format!(
            "{a}: flushing by mark or labels (Open vSwitch 3.2) is not supported; give a zone or tuples"
        ));
    }
    if args.len() > 2 {
        return Err(format!(
            "{:?}: unexpected (at most [zone=N] [ct-orig-tuple [ct-reply-tuple]])",
            args[2]
        ));
    }
    let mut shared = Shared::default();
    let tuples = args
        .iter()
        .map(|a| parse_tuple(a, &mut shared))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(t) = tuples.first() {
        filter.orig = tuple_filter(t, &shared)?;
    }
    if let Some(t) = tuples.get(1) {
        filter.reply = tuple_filter(t, &shared)?;
        // The protocol is the connection's, checked once.
        filter.reply.proto = None;
    }
    if !args.iter().all(|a| a.is_empty()) {
        filter.zone.get_or_insert(0);
    }
    Ok(filter)
}

/// `zone=N,limit=M` (either order; a limit of 0: none), as
/// `ct-set-limits` takes it.
pub fn parse_zone_limit(s: &str) -> Result<(u16, u32), String> {
    let (mut zone, mut limit) = (None, None);
    for (key, v) in pairs(s) {
        if v.is_empty() {
            return Err(format!("{s}: {key}: missing value"));
        }
        match key {
            "zone" => zone = Some(number(v).ok_or_else(|| bad_number(key, v, "a zone (0-65535)"))?),
            "limit" => {
                limit = Some(
                    number(v)
                        .ok_or_else(|| bad_number(key, v, "a limit (0-4294967295; 0: no limit)"))?,
                )
            }
            _ => {
                return Err(format!(
                    "{s}: {key}: not a zone limit field (zone=N,limit=M)"
                ))
            }
        }
    }
    match (zone, limit) {
        (Some(z), Some(l)) => Ok((z, l)),
        _ => Err(format!("{s}: give zone=N,limit=M")),
    }
}

/// `default=N` (the limit of zones without their own; 0: none).
pub fn parse_default_limit(s: &str) -> Result<u32, String> {
    let v = s
        .strip_prefix("default=")
        .ok_or_else(|| format!("{s:?}: expected default=N"))?;
    number(v).ok_or_else(|| bad_number("default", v, "a limit (0-4294967295; 0: no limit)"))
}

/// `zone=N1[,N2]...`, as `ct-get-limits` and `ct-del-limits` take it.
pub fn parse_zones(s: &str) -> Result<Vec<u16>, String> {
    let list = s
        .strip_prefix("zone=")
        .ok_or_else(|| format!("{s:?}: expected zone=N1[,N2]..."))?;
    list.split(',')
        .map(|v| number(v).ok_or_else(|| bad_number("zone", v, "a zone (0-65535)")))
        .collect()
}

/// `ct-get-limits`'s answer, as Open vSwitch prints it: `default
/// limit=N`, then `zone=Z,limit=L,count=C` per zone (`zones`: zone,
/// limit, count), each on its own line.
pub fn format_zone_limits(default: u32, zones: &[(u16, u32, u32)]) -> String {
    let mut out = format!("default limit={default}\n");
    for (z, l, c) in zones {
        let _ = writeln!(out, "zone={z},limit={l},count={c}");
    }
    out
}

/// `NAME=SECS` (a name of [`crate::TIMEOUT_NAMES`], at least 1 second).
pub fn parse_timeout(s: &str) -> Result<(&str, u32), String> {
    let (name, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected NAME=SECONDS"))?;
    let secs = v
        .parse::<u32>()
        .map_err(|_| bad_number(name, v, "a number of seconds"))?;
    // The name and the value, checked where they are kept.
    crate::Timeouts::default().set(name, secs)?;
    Ok((name, secs))
}

#[cfg(test)]
mod tests;
