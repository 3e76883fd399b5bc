//! A Prometheus endpoint: `GET /metrics` (or `/`) on the address given with
//! `--metrics` (e.g. `127.0.0.1:9477`), in the text exposition format
//! (`expo`), served by `http` (a thread per connection, each bounded in
//! time, so one slow or idle client delays no other).
//!
//! A scrape reads what the workers write (relaxed atomics), the published
//! pipeline and port set, and the small view the control thread publishes
//! of its OpenFlow side (`control::View`, at most 100 ms old): scraping
//! never takes a lock the packet path or the control thread waits on.
//! Every counter is cumulative since the daemon started (a Prometheus
//! counter; rates over a window are the scraper's job), and so is the delay
//! histogram. Each family is written once, with the samples of every
//! bridge. The README's "Metrics" section lists every metric.

mod expo;
mod http;

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use arc_swap::ArcSwap;
use datapath::channel::Channels;
use datapath::queue::QueueCounters;
use datapath::{BridgeCounters, MacTable, PortCounters, PortView};
use pipeline::Snapshot;

use crate::bridge::Running;
use crate::control;
use expo::{Expo, Kind, Label};

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
    pub control: Arc<ArcSwap<control::View>>,
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
        }
    }
}

/// The delay histogram's bucket bounds: the label, and the bound in ns.
/// The recording histogram's buckets are 1/16 of a power of two wide, so a
/// bound counts the samples at or below the bucket edge under it (within
/// ~6% of the bound; `datapath::histogram::Histogram::cumulative`).
const DELAY_BOUNDS: [(&str, u64); 19] = [
    ("0.000001", 1_000),
    ("0.000002", 2_000),
    ("0.000005", 5_000),
    ("0.00001", 10_000),
    ("0.00002", 20_000),
    ("0.00005", 50_000),
    ("0.0001", 100_000),
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

const PORT_COUNTERS: [Counter<PortCounters>; 6] = [
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

const BRIDGE_COUNTERS: [Counter<BridgeCounters>; 4] = [
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
    control: Arc<control::View>,
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

/// Renders every metric of every bridge in the Prometheus text format.
pub fn render(all: &[Sources]) -> String {
    render_at(all, datapath::clock::now_ns())
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
        "Always 1, one per OpenFlow connection: its peer, kind (controller or management), state (hello, open, closing) and role (equal, master, slave)",
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
    e.finish()
}

/// What a connection is, as its `kind` label says.
fn conn_kind(c: &control::ConnView) -> &'static str {
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
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A bridge of `workers` workers with no port, an empty pipeline of
    /// `tables` tables.
    fn sources(name: &str, workers: usize) -> Sources {
        let mut p = pipeline::Pipeline::new(pipeline::Config {
            workers,
            ..pipeline::Config::default()
        });
        Sources {
            bridge: name.into(),
            ports: Arc::default(),
            counters: (0..workers).map(|_| Arc::default()).collect(),
            pipeline: Arc::new(ArcSwap::new(p.snapshot())),
            channels: Arc::new(Channels::new(4).unwrap()),
            macs: Arc::default(),
            control: Arc::default(),
        }
    }

    fn port(no: u32, name: &str, workers: usize) -> PortView {
        PortView {
            port_no: no,
            name: name.into(),
            backend: datapath::Backend::AfPacket { rings: true },
            counters: (0..workers).map(|_| Arc::default()).collect(),
            queues: Vec::new(),
            attached: true,
        }
    }

    /// The value of the one sample written exactly as `series`.
    fn value(text: &str, series: &str) -> f64 {
        let mut found = text
            .lines()
            .filter_map(|l| l.strip_prefix(series)?.strip_prefix(' '));
        let v = found
            .next()
            .unwrap_or_else(|| panic!("no {series} in\n{text}"));
        assert!(found.next().is_none(), "{series} twice");
        v.parse().unwrap()
    }

    /// Checks the text against the exposition format's rules as the
    /// endpoint uses them: each family's HELP then TYPE once, its samples
    /// right after (a histogram's `_bucket`/`_sum`/`_count`), label
    /// values quoted with only the three escapes, no series twice,
    /// histogram buckets cumulative and ending at `+Inf` == `_count`.
    /// Returns the families and their types.
    fn check_format(text: &str) -> HashMap<String, String> {
        let mut families = HashMap::new();
        let mut current: Option<(String, String)> = None;
        let mut series = std::collections::HashSet::new();
        let mut buckets: HashMap<String, Vec<(f64, f64)>> = HashMap::new();
        let mut counts: HashMap<String, f64> = HashMap::new();
        let mut lines = text.lines().peekable();
        assert!(text.ends_with('\n'));
        while let Some(l) = lines.next() {
            if let Some(rest) = l.strip_prefix("# HELP ") {
                let (name, _) = rest.split_once(' ').unwrap();
                let t = lines.next().unwrap();
                let kind = t
                    .strip_prefix(&format!("# TYPE {name} "))
                    .unwrap_or_else(|| panic!("{t}"));
                assert!(["counter", "gauge", "histogram"].contains(&kind));
                if kind == "counter" {
                    assert!(name.ends_with("_total"), "{name}");
                }
                assert!(
                    families
                        .insert(name.to_string(), kind.to_string())
                        .is_none(),
                    "{name} twice"
                );
                current = Some((name.to_string(), kind.to_string()));
                continue;
            }
            assert!(!l.starts_with('#'), "{l}");
            let (fam, kind) = current.clone().expect("a sample before any family");
            let (head, val) = l.rsplit_once(' ').unwrap();
            let val: f64 = match val {
                "+Inf" => f64::INFINITY,
                v => v.parse().unwrap_or_else(|_| panic!("{l}")),
            };
            let (name, labels) = match head.split_once('{') {
                Some((n, rest)) => (n, rest.strip_suffix('}').unwrap()),
                None => (head, ""),
            };
            let ok_names: Vec<String> = if kind == "histogram" {
                ["_bucket", "_sum", "_count"]
                    .iter()
                    .map(|s| format!("{fam}{s}"))
                    .collect()
            } else {
                vec![fam.clone()]
            };
            assert!(ok_names.iter().any(|n| n == name), "{l} under {fam}");
            // Labels: name="value" with \\, \" and \n escapes only.
            let mut pairs = Vec::new();
            let mut rest = labels;
            while !rest.is_empty() {
                let (k, v) = rest.split_once("=\"").unwrap();
                assert!(k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
                let mut value = String::new();
                let mut chars = v.char_indices();
                let end = loop {
                    match chars.next().expect("unterminated label value") {
                        (_, '\\') => match chars.next().unwrap().1 {
                            '\\' => value.push('\\'),
                            '"' => value.push('"'),
                            'n' => value.push('\n'),
                            c => panic!("escape \\{c} in {l}"),
                        },
                        (i, '"') => break i,
                        (_, '\n') => panic!("raw newline"),
                        (_, c) => value.push(c),
                    }
                };
                pairs.push((k.to_string(), value));
                rest = &v[end + 1..];
                rest = rest.strip_prefix(',').unwrap_or(rest);
            }
            assert!(series.insert(head.to_string()), "{head} twice");
            if name.ends_with("_bucket") && kind == "histogram" {
                let le = pairs.iter().find(|p| p.0 == "le").unwrap().1.clone();
                let others: Vec<_> = pairs.iter().filter(|p| p.0 != "le").collect();
                let le = if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                };
                buckets
                    .entry(format!("{fam}{others:?}"))
                    .or_default()
                    .push((le, val));
            } else if name.ends_with("_count") && kind == "histogram" {
                counts.insert(format!("{fam}{:?}", pairs.iter().collect::<Vec<_>>()), val);
            }
        }
        for (k, b) in &buckets {
            assert!(
                b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
                "{k}: {b:?}"
            );
            let last = b.last().unwrap();
            assert_eq!(last.0, f64::INFINITY, "{k}");
            assert_eq!(Some(&last.1), counts.get(k), "{k}");
        }
        families
    }

    #[test]
    fn every_family_is_well_formed_and_typed() {
        let a = sources("br0", 2);
        let b = sources("br\"1\\\n", 1);
        let version_b = b.pipeline.load().version;
        let text = render_at(&[a, b], 1);
        let fams = check_format(&text);
        for (name, kind) in [
            ("sluice_build_info", "gauge"),
            ("sluice_port_rx_packets_total", "counter"),
            ("sluice_port_up", "gauge"),
            ("sluice_queue_tx_errors_total", "counter"),
            ("sluice_flows", "gauge"),
            ("sluice_mac_table_entries", "gauge"),
            ("sluice_packet_in_queue_full_total", "counter"),
            ("sluice_packet_out_queue_full_total", "counter"),
            ("sluice_packet_in_limited_total", "counter"),
            ("sluice_controller_connected", "gauge"),
            ("sluice_connection_info", "gauge"),
            ("sluice_delay_seconds", "histogram"),
        ] {
            assert_eq!(fams.get(name).map(String::as_str), Some(kind), "{name}");
        }
        assert!(!fams.contains_key("sluice_rules"));
        let version = env!("CARGO_PKG_VERSION");
        assert_eq!(
            value(
                &text,
                &format!("sluice_build_info{{version=\"{version}\"}}")
            ),
            1.0
        );
        // The second bridge's name, escaped.
        assert_eq!(
            value(&text, "sluice_pipeline_version{bridge=\"br\\\"1\\\\\\n\"}"),
            version_b as f64
        );
    }

    #[test]
    fn ports_queues_and_link_state() {
        let s = sources("br0", 2);
        let p1 = port(1, "p1", 2);
        let mut p2 = port(2, "we\"ird", 2);
        let local = port(ofp::port::port_no::LOCAL, "br0", 2);
        p1.counters[0].rx_packets.store(3, Relaxed);
        p1.counters[1].rx_packets.store(4, Relaxed);
        p1.counters[1].tx_dropped.store(9, Relaxed);
        let q = Arc::new(QueueCounters::default());
        q.tx_packets.store(5, Relaxed);
        q.tx_bytes.store(500, Relaxed);
        q.tx_errors.store(1, Relaxed);
        p2.queues.push((7, q));
        p2.attached = false;
        s.ports.store(Arc::new(vec![p1, p2, local]));
        // The control view knows ports 1 and 2 (LOCAL was added since).
        s.control.store(Arc::new(control::View {
            ports: vec![(1, true), (2, true)],
            ..control::View::default()
        }));
        let text = render_at(&[s], 1);
        check_format(&text);
        let l1 = "{bridge=\"br0\",ofport=\"1\",interface=\"p1\"}";
        let l2 = "{bridge=\"br0\",ofport=\"2\",interface=\"we\\\"ird\"}";
        assert_eq!(
            value(&text, &format!("sluice_port_rx_packets_total{l1}")),
            7.0
        );
        assert_eq!(
            value(&text, &format!("sluice_port_tx_dropped_total{l1}")),
            9.0
        );
        assert_eq!(
            value(&text, &format!("sluice_port_rx_packets_total{l2}")),
            0.0
        );
        assert_eq!(value(&text, &format!("sluice_port_up{l1}")), 1.0);
        // Link up, but the interface is gone: down.
        assert_eq!(value(&text, &format!("sluice_port_up{l2}")), 0.0);
        // No link state known yet: no sample.
        assert!(!text.contains("sluice_port_up{bridge=\"br0\",ofport=\"4294967294\""));
        assert!(text.contains("sluice_port_rx_bytes_total{bridge=\"br0\",ofport=\"4294967294\",interface=\"br0\"} 0\n"));
        let q = "{bridge=\"br0\",ofport=\"2\",interface=\"we\\\"ird\",queue=\"7\"}";
        assert_eq!(
            value(&text, &format!("sluice_queue_tx_packets_total{q}")),
            5.0
        );
        assert_eq!(
            value(&text, &format!("sluice_queue_tx_bytes_total{q}")),
            500.0
        );
        assert_eq!(
            value(&text, &format!("sluice_queue_tx_errors_total{q}")),
            1.0
        );
    }

    #[test]
    fn flows_in_every_table_mac_table_and_channel_drops() {
        let mut p = pipeline::Pipeline::new(pipeline::Config::default());
        for f in [
            "table=0,priority=1,actions=drop",
            "table=3,priority=1,ip,actions=drop",
            "table=3,priority=2,actions=drop",
        ] {
            p.flow_mod(&ofp::text::parse_flow_mod(f).unwrap(), 0)
                .unwrap();
        }
        let s = sources("br0", 1);
        s.pipeline.store(p.snapshot());
        s.macs.learn(0, 0x0200_0000_0001, 1, 1_000_000_000);
        s.macs.learn(5, 0x0200_0000_0002, 2, 1_000_000_000);
        for _ in 0..6 {
            s.channels.to_agent(datapath::channel::ToAgent {
                in_port: 1,
                ctl: pipeline::ToController {
                    reason: ofp::msg::flow::PacketInReason::NoMatch,
                    table_id: 0,
                    cookie: 0,
                    max_len: 0,
                },
                frame: Vec::new(),
            });
        }
        s.control.store(Arc::new(control::View {
            packet_in_limited: 11,
            ..control::View::default()
        }));
        let text = render_at(&[s], 2_000_000_000);
        check_format(&text);
        let tables = text
            .lines()
            .filter(|l| l.starts_with("sluice_flows{"))
            .count();
        assert_eq!(tables, pipeline::Config::default().n_tables as usize);
        assert_eq!(
            value(&text, "sluice_flows{bridge=\"br0\",table=\"0\"}"),
            1.0
        );
        assert_eq!(
            value(&text, "sluice_flows{bridge=\"br0\",table=\"1\"}"),
            0.0
        );
        assert_eq!(
            value(&text, "sluice_flows{bridge=\"br0\",table=\"3\"}"),
            2.0
        );
        assert_eq!(
            value(&text, "sluice_mac_table_entries{bridge=\"br0\"}"),
            2.0
        );
        // A queue of 4: two of the six frames did not fit.
        assert_eq!(
            value(&text, "sluice_packet_in_queue_full_total{bridge=\"br0\"}"),
            2.0
        );
        assert_eq!(
            value(&text, "sluice_packet_out_queue_full_total{bridge=\"br0\"}"),
            0.0
        );
        assert_eq!(
            value(&text, "sluice_packet_in_limited_total{bridge=\"br0\"}"),
            11.0
        );
    }

    #[test]
    fn controllers_and_connections() {
        let s = sources("br0", 1);
        s.control.store(Arc::new(control::View {
            conns: vec![
                control::ConnView {
                    id: 3,
                    peer: "tcp:127.0.0.1:6653".into(),
                    management: false,
                    state: "open",
                    role: "master",
                },
                control::ConnView {
                    id: 4,
                    peer: "unix:/run/sluice/br0.mgmt".into(),
                    management: true,
                    state: "hello",
                    role: "equal",
                },
            ],
            controllers: vec![
                ("tcp:127.0.0.1:6653".into(), true),
                ("tls:ctl.example:6653".into(), false),
            ],
            ..control::View::default()
        }));
        let text = render_at(&[s], 1);
        check_format(&text);
        assert_eq!(
            value(
                &text,
                "sluice_controller_connected{bridge=\"br0\",target=\"tcp:127.0.0.1:6653\"}"
            ),
            1.0
        );
        assert_eq!(
            value(
                &text,
                "sluice_controller_connected{bridge=\"br0\",target=\"tls:ctl.example:6653\"}"
            ),
            0.0
        );
        assert_eq!(
            value(&text, "sluice_connection_info{bridge=\"br0\",conn=\"3\",peer=\"tcp:127.0.0.1:6653\",kind=\"controller\",state=\"open\",role=\"master\"}"),
            1.0
        );
        assert_eq!(
            value(&text, "sluice_connection_info{bridge=\"br0\",conn=\"4\",peer=\"unix:/run/sluice/br0.mgmt\",kind=\"management\",state=\"hello\",role=\"equal\"}"),
            1.0
        );
    }

    #[test]
    fn delay_is_a_cumulative_histogram_over_the_workers() {
        let s = sources("br0", 2);
        s.counters[0].delay.record(800, 3); // under 1 us
        s.counters[1].delay.record(3_000, 2); // under 5 us
        s.counters[1].delay.record(40_000_000, 1); // 40 ms
        s.counters[0].delay.record(5_000_000_000, 1); // 5 s: +Inf only
        let text = render_at(&[s], 1);
        check_format(&text);
        let b = |le: &str| {
            value(
                &text,
                &format!("sluice_delay_seconds_bucket{{bridge=\"br0\",le=\"{le}\"}}"),
            )
        };
        assert_eq!(b("0.000001"), 3.0);
        assert_eq!(b("0.000002"), 3.0);
        assert_eq!(b("0.000005"), 5.0);
        assert_eq!(b("0.02"), 5.0);
        assert_eq!(b("0.05"), 6.0);
        assert_eq!(b("1"), 6.0);
        assert_eq!(b("+Inf"), 7.0);
        assert_eq!(
            value(&text, "sluice_delay_seconds_count{bridge=\"br0\"}"),
            7.0
        );
        let sum = value(&text, "sluice_delay_seconds_sum{bridge=\"br0\"}");
        assert!((sum - 5.040008400).abs() < 1e-9, "{sum}");
        // No quantiles any more.
        assert!(!text.contains("quantile="));
    }

    #[test]
    fn worker_health_is_reported_per_worker() {
        let s = sources("br0", 2);
        let counters = &s.counters;
        // Worker 0 runs and looped 5 s ago (stalled); worker 1 has died.
        counters[0].running.store(true, Relaxed);
        let now = 7_000_000_000;
        counters[0].heartbeat_ns.store(2_000_000_000, Relaxed);
        counters[0].batches.store(42, Relaxed);
        counters[1].heartbeat_ns.store(now, Relaxed);
        let text = render_at(&[s], now);
        check_format(&text);
        assert!(text.contains("sluice_worker_up{bridge=\"br0\",worker=\"0\"} 1\n"));
        assert!(text.contains("sluice_worker_up{bridge=\"br0\",worker=\"1\"} 0\n"));
        assert!(text.contains("sluice_worker_rounds_total{bridge=\"br0\",worker=\"0\"} 42\n"));
        let age: f64 = text
            .lines()
            .find_map(|l| {
                l.strip_prefix("sluice_worker_heartbeat_age_seconds{bridge=\"br0\",worker=\"0\"} ")
            })
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(age, 5.0);
    }
}
