//! The connection tracker's families: connections now (in all, per zone
//! that has any, and by protocol and state while there are few enough to
//! count at a scrape), its counters, its limit and its memory.
//!
//! Cardinality is bounded whatever the traffic: the per-zone family has
//! a series for each of the bridge's [`super::Sources::zone_series`] zones with
//! the most connections and one `zone="other"` series summing the rest
//! (so at most N+1 series, and their sum is the total), not one per zone
//! in use (a zone per port and a flood made that ~35 000 series).
//!
//! Cost, and the one place a scrape meets the packet path: the counts,
//! counters and limit are atomics, but the heap size and the states are
//! read shard by shard under each shard's lock (the lock a worker takes
//! to track a packet). The heap size holds each lock for a length read;
//! the states copy the connections, so they are counted only while the
//! tracker holds at most [`STATES_MAX`] (a copy of ~2 MB, each shard's
//! lock held for its part of it); above that the family has no samples
//! for the bridge (`sluice-ctl dump-conntrack` with a zone, or the
//! per-zone counts, tell more).

use std::sync::atomic::Ordering::Relaxed;

use conntrack::text::{proto_name, tcp_state};
use conntrack::{Filter, Tracker};

use super::expo::{Expo, Kind};
use super::Loaded;

/// Connections at most for `sluice_conntrack_connections_by_state`.
pub const STATES_MAX: u64 = 10_000;

/// The tracker's counters: name, help, getter.
const COUNTERS: [super::Counter<Tracker>; 7] = [
    (
        "sluice_conntrack_committed_total",
        "Connections committed (ct(commit))",
        |t| t.stats.committed.load(Relaxed),
    ),
    (
        "sluice_conntrack_refused_total",
        "New connections not committed: a limit reached (total or zone) and no unassured connection to evict, or no free NAT mapping",
        |t| t.stats.refused.load(Relaxed),
    ),
    (
        "sluice_conntrack_early_drop_total",
        "Connections not yet assured (TCP before its handshake completed, others before a reply, ICMP) evicted to make room for a new one at a limit",
        |t| t.stats.early_dropped.load(Relaxed),
    ),
    (
        "sluice_conntrack_nat_exhausted_total",
        "New connections not committed because NAT found no free address and port (also in refused)",
        |t| t.stats.nat_exhausted.load(Relaxed),
    ),
    (
        "sluice_conntrack_invalid_total",
        "Packets the tracker found invalid (+inv)",
        |t| t.stats.invalid.load(Relaxed),
    ),
    (
        "sluice_conntrack_expired_total",
        "Connections ended by their idle timeout",
        |t| t.stats.expired.load(Relaxed),
    ),
    (
        "sluice_conntrack_packets_total",
        "Packets sent through the tracker (ct actions)",
        |t| t.stats.packets.load(Relaxed),
    ),
];

/// Writes the conntrack families of every bridge at datapath time `now`
/// (ns).
pub(super) fn families(e: &mut Expo, bridges: &[Loaded<'_>], now: u64) {
    let trackers: Vec<(&str, &Tracker)> = bridges
        .iter()
        .map(|b| (b.name.as_str(), &*b.snap.conntrack))
        .collect();
    let zone_series: Vec<usize> = bridges.iter().map(|b| b.src.zone_series).collect();
    e.family(
        "sluice_conntrack_connections",
        Kind::Gauge,
        "Connections tracked now (committed and not yet expired or swept)",
    );
    for (name, t) in &trackers {
        e.sample("sluice_conntrack_connections", &[("bridge", name)], t.len());
    }
    e.family(
        "sluice_conntrack_zones",
        Kind::Gauge,
        "Zones that have connections now",
    );
    let mut per_zone = Vec::with_capacity(trackers.len());
    for (name, t) in &trackers {
        let zones = t.zones();
        e.sample("sluice_conntrack_zones", &[("bridge", name)], zones.len());
        per_zone.push(zones);
    }
    e.family(
        "sluice_conntrack_zone_connections",
        Kind::Gauge,
        "Connections tracked now, per zone: the zones with the most (up to --metrics-zones, default 64), the rest summed in zone=\"other\"",
    );
    for (((name, _), zones), n) in trackers.iter().zip(per_zone).zip(&zone_series) {
        let (top, other) = top_zones(zones, *n);
        for (zone, n) in top {
            e.sample(
                "sluice_conntrack_zone_connections",
                &[("bridge", name), ("zone", &zone)],
                n as u64,
            );
        }
        if let Some(n) = other {
            e.sample(
                "sluice_conntrack_zone_connections",
                &[("bridge", name), ("zone", &"other")],
                n,
            );
        }
    }
    e.family(
        "sluice_conntrack_connections_by_state",
        Kind::Gauge,
        "Connections by protocol and state (TCP: as dump-conntrack prints it; others: REPLIED or UNREPLIED), per pair that has any; counted only while the tracker holds at most 10000",
    );
    for (name, t) in &trackers {
        if t.len() > STATES_MAX {
            continue;
        }
        let mut counts: std::collections::BTreeMap<(String, &str), u64> = Default::default();
        for entry in t.dump(&Filter::default(), STATES_MAX as usize, now / 1_000_000) {
            let c = &entry.conn;
            let state = tcp_state(c).unwrap_or_else(|| c.state_name());
            *counts
                .entry((proto_name(c.key[0].proto).into_owned(), state))
                .or_default() += 1;
        }
        for ((proto, state), n) in counts {
            e.sample(
                "sluice_conntrack_connections_by_state",
                &[("bridge", name), ("protocol", &proto), ("state", &state)],
                n,
            );
        }
    }
    for (metric, help, get) in COUNTERS {
        e.family(metric, Kind::Counter, help);
        for (name, t) in &trackers {
            e.sample(metric, &[("bridge", name)], get(t));
        }
    }
    e.family(
        "sluice_conntrack_limit",
        Kind::Gauge,
        "Connections the tracker holds at most, all zones together (0: no limit)",
    );
    for (name, t) in &trackers {
        e.sample(
            "sluice_conntrack_limit",
            &[("bridge", name)],
            t.limits().total,
        );
    }
    e.family(
        "sluice_conntrack_heap_bytes",
        Kind::Gauge,
        "Heap bytes the tracker's table holds (slabs, indexes, per-zone limits)",
    );
    for (name, t) in &trackers {
        e.sample(
            "sluice_conntrack_heap_bytes",
            &[("bridge", name)],
            t.heap_bytes(),
        );
    }
}

/// The `n` zones of `zones` (zone, connections) with the most connections
/// (ties: the lower zone first), in zone order, and the sum of the
/// others' connections if any zone was left out.
pub(super) fn top_zones(mut zones: Vec<(u16, u32)>, n: usize) -> (Vec<(u16, u32)>, Option<u64>) {
    if zones.len() <= n {
        return (zones, None);
    }
    let most = |a: &(u16, u32), b: &(u16, u32)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    if n > 0 {
        zones.select_nth_unstable_by(n - 1, most);
    }
    let other = zones[n..].iter().map(|&(_, c)| c as u64).sum();
    zones.truncate(n);
    zones.sort_unstable_by_key(|&(z, _)| z);
    (zones, Some(other))
}

/// The default of [`super::Sources::zone_series`] (`--metrics-zones`).
pub const ZONE_SERIES: usize = 64;
