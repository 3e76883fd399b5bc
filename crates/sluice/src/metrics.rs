//! A Prometheus text-format endpoint: `GET /metrics` on the address given
//! with `--metrics` (e.g. `127.0.0.1:9477`). One small thread; each request
//! reads the counters the worker writes (relaxed atomics) and the current
//! pipeline snapshot, so scraping never slows the packet path.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use arc_swap::ArcSwap;
use datapath::{BridgeCounters, PortCounters};
use pipeline::Snapshot;

/// What the endpoint reports.
pub struct Sources {
    pub bridge: String,
    pub ports: Vec<(u32, String, Arc<PortCounters>)>,
    pub counters: Arc<BridgeCounters>,
    pub pipeline: Arc<ArcSwap<Snapshot>>,
}

/// A port counter metric: name, help, and how to read it.
type PortMetric = (&'static str, &'static str, fn(&PortCounters) -> u64);

/// Renders every metric in the Prometheus text format.
pub fn render(s: &Sources) -> String {
    let mut o = String::new();
    let b = &s.bridge;
    let port_metrics: [PortMetric; 6] = [
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
            "Frames the port did not take",
            |c| c.tx_dropped.load(Relaxed),
        ),
        ("sluice_port_rx_errors_total", "Receive errors", |c| {
            c.rx_errors.load(Relaxed)
        }),
    ];
    for (name, help, get) in port_metrics {
        let _ = writeln!(o, "# HELP {name} {help}.\n# TYPE {name} counter");
        for (no, ifname, c) in &s.ports {
            let _ = writeln!(
                o,
                "{name}{{bridge=\"{b}\",port=\"{no}\",name=\"{ifname}\"}} {}",
                get(c)
            );
        }
    }
    let c = &s.counters;
    let _ = writeln!(o, "# HELP sluice_pipeline_dropped_total Frames the pipeline sent nowhere.\n# TYPE sluice_pipeline_dropped_total counter");
    let _ = writeln!(
        o,
        "sluice_pipeline_dropped_total{{bridge=\"{b}\"}} {}",
        c.dropped.load(Relaxed)
    );
    let _ = writeln!(o, "# HELP sluice_to_controller_total Frames for the controller.\n# TYPE sluice_to_controller_total counter");
    let _ = writeln!(
        o,
        "sluice_to_controller_total{{bridge=\"{b}\"}} {}",
        c.to_controller.load(Relaxed)
    );
    let snap = s.pipeline.load();
    let _ = writeln!(
        o,
        "# HELP sluice_rules Rules installed per table.\n# TYPE sluice_rules gauge"
    );
    for (t, cls) in snap
        .tables
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.is_empty())
    {
        let _ = writeln!(
            o,
            "sluice_rules{{bridge=\"{b}\",table=\"{t}\"}} {}",
            cls.len()
        );
    }
    let _ = writeln!(o, "# HELP sluice_pipeline_version Published pipeline version.\n# TYPE sluice_pipeline_version gauge");
    let _ = writeln!(
        o,
        "sluice_pipeline_version{{bridge=\"{b}\"}} {}",
        snap.version
    );
    let d = &c.delay;
    let _ = writeln!(o, "# HELP sluice_delay_seconds In-switch delay, receive batch to transmit batch.\n# TYPE sluice_delay_seconds summary");
    for q in [0.5, 0.99, 0.999] {
        let _ = writeln!(
            o,
            "sluice_delay_seconds{{bridge=\"{b}\",quantile=\"{q}\"}} {:e}",
            d.quantile(q) as f64 / 1e9
        );
    }
    let _ = writeln!(
        o,
        "sluice_delay_seconds_count{{bridge=\"{b}\"}} {}",
        d.count()
    );
    let _ = writeln!(o, "# HELP sluice_delay_max_seconds Largest in-switch delay.\n# TYPE sluice_delay_max_seconds gauge");
    let _ = writeln!(
        o,
        "sluice_delay_max_seconds{{bridge=\"{b}\"}} {:e}",
        d.max() as f64 / 1e9
    );
    o
}

/// Serves `GET /metrics` on `listener` until the process ends.
pub fn serve(listener: TcpListener, sources: Sources) {
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(2)));
        let mut req = [0u8; 1024];
        let n = conn.read(&mut req).unwrap_or(0);
        let line = String::from_utf8_lossy(&req[..n]);
        let (status, body) = if line.starts_with("GET /metrics") || line.starts_with("GET / ") {
            ("200 OK", render(&sources))
        } else {
            ("404 Not Found", "only GET /metrics is served\n".to_string())
        };
        let _ = write!(
            conn,
            "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
    }
}
