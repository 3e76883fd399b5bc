//! A Prometheus endpoint: `GET /metrics` (or `/`) on the address given with
//! `--metrics` (e.g. `127.0.0.1:9477`), in the text exposition format
//! (`expo`), served by `http` (a thread per connection, each bounded in
//! time, so one slow or idle client delays no other).
//!
//! A scrape reads what the workers write (relaxed atomics), the published
//! pipeline and port set, and the small view the control thread publishes
//! of its OpenFlow side (`openflow::View`, at most 100 ms old): scraping
//! never takes a lock the packet path or the control thread waits on,
//! but for the connection tracker's heap size and states, bounded and
//! said in `ct`.
//! Every counter is cumulative since the daemon started (a Prometheus
//! counter; rates over a window are the scraper's job), and so is the delay
//! histogram. Each family is written once, with the samples of every
//! bridge. The README's "Metrics" section lists every metric.

mod ct;
mod expo;
mod http;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use arc_swap::ArcSwap;
use datapath::channel::Channels;
use datapath::queue::QueueCounters;
use datapath::{BridgeCounters, MacTable, PortCounters, PortView};
use pipeline::Snapshot;

use crate::openflow;
use crate::running::Running;
use expo::{Expo, Kind, Label};

pub use ct::ZONE_SERIES;
pub use http::serve;

/// What the endpoint reports of one bridge.
pub struct Sources {
    pub bridge: String,
    /// The port set, with each port's counters (one set per worker) and
    /// queues; ports added at run time included.
    pub ports: Arc<ArcSwap<Vec<PortView>>>,
    /// The bridge's counters, one set per worker.
    pub counters: Vec<Arc<BridgeCounters>>,
    pub pipeline: Arc<ArcSwap<Snapshot>>,
    /// The queues between workers and agent, with their drop counters.
    pub channels: Arc<Channels>,
    pub macs: Arc<MacTable>,
    /// The control thread's view of connections and link states.
    pub control: Arc<ArcSwap<openflow::View>>,
    /// The XDP fast path's figures, if the bridge runs one.
    pub fast: Option<Arc<datapath::fast::FastStats>>,
    /// Zones with a series of their own in
    /// `sluice_conntrack_zone_connections` (the busiest; the rest are
    /// summed in one `zone="other"` series): `--metrics-zones`.
    pub zone_series: usize,
}

impl Sources {
    /// What to read of a running bridge.
    pub fn of(r: &Running) -> Sources {
        let b = r.bridge();
        Sources {
            bridge: r.name.clone(),
            ports: b.view(),
            counters: b.counters.clone(),
            pipeline: b.pipeline.clone(),
            channels: b.channels.clone(),
            macs: b.macs.clone(),
            control: r.control.view(),
            fast: b.fast_stats(),
            zone_series: ct::ZONE_SERIES,
        }
    }
}

/// The delay histogram's bucket bounds: the label, and the bound in ns.
/// The recording histogram's buckets are 1/16 of a power of two wide, so a
/// bound counts the samples at or below the bucket edge under it (within
/// ~6% of the bound; `datapath::histogram::Histogram::cumulative`).
/// 150 us is the worst-case target (docs/PERFORMANCE.md, "Targets").
const DELAY_BOUNDS: [(&str, u64); 20] = [
    ("0.000001", 1_000),
    ("0.000002", 2_000),
    ("0.000005", 5_000),
    ("0.00001", 10_000),
    ("0.00002", 20_000),
    ("0.00005", 50_000),
    ("0.0001", 100_000),
    ("0.00015", 150_000),
    ("0.0002", 200_000),
    ("0.0005", 500_000),
    ("0.001", 1_000_000),
    ("0.002", 2_000_000),
    ("0.005", 5_000_000),
    ("0.01", 10_000_000),
    ("0.02", 20_000_000),
    ("0.05", 50_000_000),
    ("0.1", 100_000_000),
    ("0.2", 200_000_000),
    ("0.5", 500_000_000),
    ("1", 1_000_000_000),
];

/// A counter family read from summed counters: name, help, getter.
type Counter<C> = (&'static str, &'static str, fn(&C) -> u64);

const PORT_COUNTERS: [Counter<PortCounters>; 8] = [
    ("sluice_port_rx_packets_total", "Frames received", |c| {
        c.rx_packets.load(Relaxed)
    }),
    ("sluice_port_rx_bytes_total", "Bytes received", |c| {
        c.rx_bytes.load(Relaxed)
    }),
    ("sluice_port_tx_packets_total", "Frames sent", |c| {
        c.tx_packets.load(Relaxed)
    }),
    ("sluice_port_tx_bytes_total", "Bytes sent", |c| {
        c.tx_bytes.load(Relaxed)
    }),
    (
        "sluice_port_tx_dropped_total",
        "Frames the port did not take (transmit ring or queue full, send error)",
        |c| c.tx_dropped.load(Relaxed),
    ),
    (
        "sluice_port_rx_errors_total",
        "Receive errors (ring slots or descriptors skipped as malformed)",
        |c| c.rx_errors.load(Relaxed),
    ),
    (
        "sluice_port_rx_truncated_total",
        "Frames dropped for arriving longer than the port's buffers (GRO/TSO super-frames, above the MTU)",
        |c| c.rx_truncated.load(Relaxed),
    ),
    (
        "sluice_port_rx_csum_partial_total",
        "Frames received with an unfinished checksum (the sender offloads checksums)",
        |c| c.rx_csum_partial.load(Relaxed),
    ),
];

const QUEUE_COUNTERS: [Counter<QueueCounters>; 3] = [
    (
        "sluice_queue_tx_packets_total",
        "Frames sent from the egress queue",
        |c| c.tx_packets.load(Relaxed),
    ),
    (
        "sluice_queue_tx_bytes_total",
        "Bytes sent from the egress queue",
        |c| c.tx_bytes.load(Relaxed),
    ),
    (
        "sluice_queue_tx_errors_total",
        "Frames dropped because the egress queue was full",
        |c| c.tx_errors.load(Relaxed),
    ),
];

const BRIDGE_COUNTERS: [Counter<BridgeCounters>; 5] = [
    (
        "sluice_pipeline_dropped_total",
        "Frames the pipeline sent nowhere",
        |c| c.dropped.load(Relaxed),
    ),
    (
        "sluice_skipped_edits_total",
        "Header edits skipped because the packet had no such header",
        |c| c.skipped_edits.load(Relaxed),
    ),
    (
        "sluice_output_limit_drops_total",
        "Outputs and group buckets dropped over the per-packet limits",
        |c| c.over_limit.load(Relaxed),
    ),
    (
        "sluice_geneve_options_refused_total",
        "Frames from Geneve ports dropped for their options",
        |c| c.tun_opts_refused.load(Relaxed),
    ),
    (
        "sluice_to_controller_total",
        "Frames the pipeline sent to the controller",
        |c| c.to_controller.load(Relaxed),
    ),
];

/// One bridge's sources, each loaded once per scrape (so a scrape is
/// consistent within a family and across families).
struct Loaded<'a> {
    name: &'a String,
    src: &'a Sources,
    ports: Arc<Vec<PortView>>,
    /// Each port's counters summed over the workers (same order).
    port_totals: Vec<PortCounters>,
    snap: Arc<Snapshot>,
    control: Arc<openflow::View>,
    totals: BridgeCounters,
}

impl<'a> Loaded<'a> {
    fn new(src: &'a Sources) -> Loaded<'a> {
        let ports = src.ports.load_full();
        Loaded {
            name: &src.bridge,
            src,
            port_totals: ports
                .iter()
                .map(|v| PortCounters::sum(&v.counters))
                .collect(),
            ports,
            snap: src.pipeline.load_full(),
            control: src.control.load_full(),
            totals: BridgeCounters::sum(&src.counters),
        }
    }
}

/// Renders every metric of every bridge in the Prometheus text format,
/// and the database server's (`--ovsdb`) when given.
pub fn render(all: &[Sources], ovsdb: Option<&crate::database::Counters>) -> String {
    let mut text = render_at(all, datapath::clock::now_ns());
    if let Some(c) = ovsdb {
        text.push_str(&ovsdb_families(c));
    }
    text
}

/// The database server's families (`--ovsdb`): connections held, and
/// what its connection cap did (docs/OVSDB.md).
fn ovsdb_families(c: &crate::database::Counters) -> String {
    let mut e = Expo::default();
    for (name, kind, help, v) in [
        (
            "sluice_ovsdb_connections",
            Kind::Gauge,
            "OVSDB connections the database server holds",
            c.connections.load(Relaxed),
        ),
        (
            "sluice_ovsdb_connections_evicted_total",
            Kind::Counter,
            "Idle OVSDB connections closed to make room for a newcomer at the connection cap",
            c.evicted.load(Relaxed),
        ),
        (
            "sluice_ovsdb_connections_refused_total",
            Kind::Counter,
            "OVSDB newcomers closed at once: at the connection cap, none idle, no reserved place",
            c.refused.load(Relaxed),
        ),
    ] {
        e.family(name, kind, help);
        e.sample(name, &[], v);
    }
    e.finish()
}

/// [`render`] at datapath time `now` (ns).
fn render_at(all: &[Sources], now: u64) -> String {
    let bridges: Vec<Loaded> = all.iter().map(Loaded::new).collect();
    let mut e = Expo::default();

    e.family(
        "sluice_build_info",
        Kind::Gauge,
        "Always 1; the version of the running daemon in a label",
    );
    e.sample(
        "sluice_build_info",
        &[("version", &env!("CARGO_PKG_VERSION"))],
        1u64,
    );

    // Ports: counters summed over the workers, link state, queues.
    for (name, help, get) in PORT_COUNTERS {
        e.family(name, Kind::Counter, help);
        for b in &bridges {
            for (v, c) in b.ports.iter().zip(&b.port_totals) {
                e.sample(name, &port_labels(b.name, v), get(c));
            }
        }
    }
    e.family(
        "sluice_port_up",
        Kind::Gauge,
        "1 while the port's link is up and its interface attached, else 0",
    );
    for b in &bridges {
        for v in b.ports.iter() {
            // A port added within the control view's last 100 ms has no
            // link state yet: no sample rather than a guess.
            let link = b.control.ports.iter().find(|p| p.0 == v.port_no);
            if let Some(&(_, up)) = link {
                e.sample("sluice_port_up", &port_labels(b.name, v), up && v.attached);
            }
        }
    }
    for (name, help, get) in QUEUE_COUNTERS {
        e.family(name, Kind::Counter, help);
        for b in &bridges {
            for v in b.ports.iter() {
                for (q, c) in &v.queues {
                    let [l0, l1, l2] = port_labels(b.name, v);
                    e.sample(name, &[l0, l1, l2, ("queue", q)], get(c));
                }
            }
        }
    }

    // The pipeline.
    for (name, help, get) in BRIDGE_COUNTERS {
        e.family(name, Kind::Counter, help);
        for b in &bridges {
            e.sample(name, &[("bridge", b.name)], get(&b.totals));
        }
    }
    e.family(
        "sluice_flows",
        Kind::Gauge,
        "Flows installed, per table (every table, empty ones at 0)",
    );
    for b in &bridges {
        for (t, cls) in b.snap.tables.iter().enumerate() {
            e.sample(
                "sluice_flows",
                &[("bridge", b.name), ("table", &t)],
                cls.len(),
            );
        }
    }
    e.family(
        "sluice_pipeline_version",
        Kind::Gauge,
        "Published pipeline version (grows with every change)",
    );
    for b in &bridges {
        e.sample(
            "sluice_pipeline_version",
            &[("bridge", b.name)],
            b.snap.version,
        );
    }
    e.family(
        "sluice_mac_table_entries",
        Kind::Gauge,
        "Addresses the NORMAL action has learned and not aged out",
    );
    for b in &bridges {
        e.sample(
            "sluice_mac_table_entries",
            &[("bridge", b.name)],
            b.src.macs.len(now),
        );
    }

    // The connection tracker.
    ct::families(&mut e, &bridges, now);

    // The XDP fast path.
    xdp_families(&mut e, &bridges);

    // The controller channel.
    e.family(
        "sluice_packet_in_queue_full_total",
        Kind::Counter,
        "Frames for the controller dropped because the queue from the workers to the OpenFlow agent was full",
    );
    for b in &bridges {
        e.sample(
            "sluice_packet_in_queue_full_total",
            &[("bridge", b.name)],
            b.src.channels.packet_in_dropped.load(Relaxed),
        );
    }
    e.family(
        "sluice_packet_out_queue_full_total",
        Kind::Counter,
        "PACKET_OUTs dropped because the queue from the OpenFlow agent to the workers was full",
    );
    for b in &bridges {
        e.sample(
            "sluice_packet_out_queue_full_total",
            &[("bridge", b.name)],
            b.src.channels.packet_out_dropped.load(Relaxed),
        );
    }
    e.family(
        "sluice_packet_in_limited_total",
        Kind::Counter,
        "PACKET_INs not sent to a connection: over its rate limit, or its send buffer full (once per connection)",
    );
    for b in &bridges {
        e.sample(
            "sluice_packet_in_limited_total",
            &[("bridge", b.name)],
            b.control.packet_in_limited,
        );
    }
    learn_families(&mut e, &bridges);
    e.family(
        "sluice_controller_connected",
        Kind::Gauge,
        "Per configured controller: 1 while a connection to it has completed the OpenFlow handshake, else 0",
    );
    for b in &bridges {
        for (target, up) in &b.control.controllers {
            e.sample(
                "sluice_controller_connected",
                &[("bridge", b.name), ("target", target)],
                *up,
            );
        }
    }
    e.family(
        "sluice_connection_info",
        Kind::Gauge,
        "Always 1, one per OpenFlow connection: its peer, kind (controller or management), state (hello, open, closing), role (equal, master, slave) and OpenFlow version (OpenFlow10 ... OpenFlow15)",
    );
    for b in &bridges {
        for c in &b.control.conns {
            let kind = conn_kind(c);
            e.sample(
                "sluice_connection_info",
                &[
                    ("bridge", b.name),
                    ("conn", &c.id),
                    ("peer", &c.peer),
                    ("kind", &kind),
                    ("state", &c.state),
                    ("role", &c.role),
                    ("version", &c.version),
                ],
                1u64,
            );
        }
    }

    // Worker health: a dead worker reads 0; a stalled one (alive, not
    // looping) shows a heartbeat age well above the 10 ms of an idle round.
    e.family(
        "sluice_worker_up",
        Kind::Gauge,
        "1 while the worker's loop runs, 0 once it has ended or died",
    );
    for b in &bridges {
        for (w, c) in b.src.counters.iter().enumerate() {
            e.sample(
                "sluice_worker_up",
                &[("bridge", b.name), ("worker", &w)],
                c.running.load(Relaxed),
            );
        }
    }
    e.family(
        "sluice_worker_heartbeat_age_seconds",
        Kind::Gauge,
        "Time since the worker last started a loop round (absent before its first)",
    );
    for b in &bridges {
        for (w, c) in b.src.counters.iter().enumerate() {
            let beat = c.heartbeat_ns.load(Relaxed);
            if beat != 0 {
                e.sample(
                    "sluice_worker_heartbeat_age_seconds",
                    &[("bridge", b.name), ("worker", &w)],
                    now.saturating_sub(beat) as f64 / 1e9,
                );
            }
        }
    }
    e.family(
        "sluice_worker_rounds_total",
        Kind::Counter,
        "Loop rounds of the worker (one receive from every port)",
    );
    for b in &bridges {
        for (w, c) in b.src.counters.iter().enumerate() {
            e.sample(
                "sluice_worker_rounds_total",
                &[("bridge", b.name), ("worker", &w)],
                c.batches.load(Relaxed),
            );
        }
    }

    // The in-switch delay, a cumulative histogram.
    e.family(
        "sluice_delay_seconds",
        Kind::Histogram,
        "In-switch delay per frame, receive batch to transmit batch",
    );
    let bounds: Vec<u64> = DELAY_BOUNDS.iter().map(|&(_, ns)| ns).collect();
    for b in &bridges {
        let d = &b.totals.delay;
        let (counts, total) = d.cumulative(&bounds);
        for ((le, _), n) in DELAY_BOUNDS.iter().zip(counts) {
            e.sample(
                "sluice_delay_seconds_bucket",
                &[("bridge", b.name), ("le", le)],
                n,
            );
        }
        e.sample(
            "sluice_delay_seconds_bucket",
            &[("bridge", b.name), ("le", &"+Inf")],
            total,
        );
        e.sample(
            "sluice_delay_seconds_sum",
            &[("bridge", b.name)],
            d.sum() as f64 / 1e9,
        );
        e.sample("sluice_delay_seconds_count", &[("bridge", b.name)], total);
    }
    // The slowest batch (the histogram's maximum) and how long ago it was
    // handed on: the time to look at in a trace of the machine.
    e.family(
        "sluice_delay_worst_seconds",
        Kind::Gauge,
        "The longest in-switch delay of a batch so far",
    );
    for b in &bridges {
        e.sample(
            "sluice_delay_worst_seconds",
            &[("bridge", b.name)],
            b.totals.worst.delay_ns.load(Relaxed) as f64 / 1e9,
        );
    }
    e.family(
        "sluice_delay_worst_age_seconds",
        Kind::Gauge,
        "How long ago the slowest batch was handed to the kernel for transmission",
    );
    for b in &bridges {
        let w = &b.totals.worst;
        if w.frames.load(Relaxed) > 0 {
            e.sample(
                "sluice_delay_worst_age_seconds",
                &[("bridge", b.name)],
                now.saturating_sub(w.at_ns.load(Relaxed)) as f64 / 1e9,
            );
        }
    }
    e.finish()
}

/// Flows packets taught (Open vSwitch's `learn`): what the agent did with
/// them, what never reached it, what is installed.
fn learn_families(e: &mut expo::Expo, bridges: &[Loaded<'_>]) {
    e.family(
        "sluice_learn_flows_total",
        Kind::Counter,
        "Flows packets taught that reached the OpenFlow agent, by what it did: added, unchanged (an identical flow installed), refused over the learn action's limit, over the table's learn_rate, over the table's learned_max, or by the table",
    );
    for b in bridges {
        let s = &b.control.learn;
        for (outcome, n) in [
            ("added", s.added),
            ("unchanged", s.unchanged),
            ("over_limit", s.over_limit),
            ("over_rate", s.over_rate),
            ("over_table", s.over_table),
            ("refused", s.refused),
        ] {
            e.sample(
                "sluice_learn_flows_total",
                &[("bridge", b.name), ("outcome", &outcome)],
                n,
            );
        }
    }
    e.family(
        "sluice_cache_lookups_total",
        Kind::Counter,
        "Table lookups by the workers' exact-match caches: answered there (hit), or by the classifier (miss, a skip while the cache is bypassed included); ovs-appctl upcall/show's figures",
    );
    for b in bridges {
        for (result, n) in [
            ("hit", b.totals.cache_hits.load(Relaxed)),
            ("miss", b.totals.cache_misses.load(Relaxed)),
        ] {
            e.sample(
                "sluice_cache_lookups_total",
                &[("bridge", b.name), ("result", &result)],
                n,
            );
        }
    }
    e.family(
        "sluice_learn_repeats_total",
        Kind::Counter,
        "Flows packets taught that a worker did not hand to the agent: it had handed the same one over within the last second",
    );
    for b in bridges {
        e.sample(
            "sluice_learn_repeats_total",
            &[("bridge", b.name)],
            b.totals.learn_repeated.load(Relaxed),
        );
    }
    e.family(
        "sluice_learn_dropped_total",
        Kind::Counter,
        "Flows packets taught that were dropped before the agent: at the worker (too many in one round) or at the queue to the agent (full)",
    );
    for b in bridges {
        for (place, n) in [
            ("worker", b.totals.learn_dropped.load(Relaxed)),
            ("queue", b.src.channels.learn_dropped.load(Relaxed)),
        ] {
            e.sample(
                "sluice_learn_dropped_total",
                &[("bridge", b.name), ("where", &place)],
                n,
            );
        }
    }
    e.family(
        "sluice_learned_flows",
        Kind::Gauge,
        "Learned flows installed, per table that has any",
    );
    for b in bridges {
        for (t, n) in &b.control.learned {
            e.sample(
                "sluice_learned_flows",
                &[("bridge", b.name), ("table", t)],
                *n,
            );
        }
    }
    e.family(
        "sluice_learned_removed_with_learner_total",
        Kind::Counter,
        "Learned flows removed with the flow that taught them (delete_learned)",
    );
    for b in bridges {
        e.sample(
            "sluice_learned_removed_with_learner_total",
            &[("bridge", b.name)],
            b.control.learn.deleted_with_learner,
        );
    }
}

/// What a connection is, as its `kind` label says.
fn conn_kind(c: &openflow::ConnView) -> &'static str {
    if c.management {
        "management"
    } else {
        "controller"
    }
}

/// The labels of a port's samples.
fn port_labels<'a>(bridge: &'a dyn std::fmt::Display, v: &'a PortView) -> [Label<'a>; 3] {
    [
        ("bridge", bridge),
        ("ofport", &v.port_no),
        ("interface", &v.name),
    ]
}

#[cfg(test)]
mod tests;

/// The XDP fast path's families (bridges without one have no samples).
fn xdp_families(e: &mut expo::Expo, bridges: &[Loaded<'_>]) {
    let fast: Vec<(&str, &datapath::fast::FastStats)> = bridges
        .iter()
        .filter_map(|b| Some((b.name.as_str(), b.src.fast.as_deref()?)))
        .collect();
    e.family(
        "sluice_xdp_packets_total",
        Kind::Counter,
        "Frames the XDP fast path handled in the kernel (path=kernel) or sent up to the user-space pipeline (path=up); folded about once a second",
    );
    for (name, f) in &fast {
        for (path, v) in [("kernel", &f.kernel_packets), ("up", &f.up_packets)] {
            e.sample(
                "sluice_xdp_packets_total",
                &[("bridge", name), ("path", &path)],
                v.load(Relaxed),
            );
        }
    }
    for (metric, kind, help, get) in [
        (
            "sluice_xdp_programs_attached",
            Kind::Gauge,
            "Ports running the compiled fast path now (0: AF_XDP only)",
            (|f| f.attached.load(Relaxed)) as fn(&datapath::fast::FastStats) -> u64,
        ),
        (
            "sluice_xdp_current",
            Kind::Gauge,
            "1 while the XDP programs run the latest published flow tables; 0 while every packet goes up (a change not compiled yet, or the fast path off)",
            |f| f.current.load(Relaxed),
        ),
        (
            "sluice_xdp_rules_up",
            Kind::Gauge,
            "Rules of the compiled table whose packets go up to user space",
            |f| f.rules_up.load(Relaxed),
        ),
        (
            "sluice_xdp_compiles_total",
            Kind::Counter,
            "Compilations of the flow tables into XDP programs",
            |f| f.compiles.load(Relaxed),
        ),
        (
            "sluice_xdp_compile_failures_total",
            Kind::Counter,
            "Compilations that could not be loaded or attached (the ports then run AF_XDP only; the log says why)",
            |f| f.failures.load(Relaxed),
        ),
    ] {
        e.family(metric, kind, help);
        for (name, f) in &fast {
            e.sample(metric, &[("bridge", name)], get(f));
        }
    }
}
