//! A Prometheus text-format endpoint: `GET /metrics` on the address given
//! with `--metrics` (e.g. `127.0.0.1:9477`). One small thread; each request
//! reads the counters the worker writes (relaxed atomics) and the current
//! pipeline snapshot, so scraping never slows the packet path. Worker
//! health is reported per worker: `sluice_worker_up` and
//! `sluice_worker_heartbeat_age_seconds` (see `health`).

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
    /// Each port's counters, one set per worker.
    pub ports: Arc<ArcSwap<Vec<datapath::PortView>>>,
    /// The bridge's counters, one set per worker.
    pub counters: Vec<Arc<BridgeCounters>>,
    pub pipeline: Arc<ArcSwap<Snapshot>>,
}

/// A port counter metric: name, help, and how to read it.
type PortMetric = (&'static str, &'static str, fn(&PortCounters) -> u64);

/// Renders every metric of every bridge in the Prometheus text format, each
/// family once with all bridges' samples together.
pub fn render(all: &[Sources]) -> String {
    render_at(all, datapath::clock::now_ns())
}

/// [`render`] at datapath time `now` (ns).
fn render_at(all: &[Sources], now: u64) -> String {
    let mut o = String::new();
    let mut family =
        |name: &str, kind: &str, help: &str, samples: &mut dyn FnMut(&Sources, &mut String)| {
            let _ = writeln!(o, "# HELP {name} {help}.\n# TYPE {name} {kind}");
            for s in all {
                samples(s, &mut o);
            }
        };
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
        family(name, "counter", help, &mut |s, o| {
            for v in s.ports.load().iter() {
                let _ = writeln!(
                    o,
                    "{name}{{bridge=\"{}\",port=\"{}\",name=\"{}\"}} {}",
                    s.bridge,
                    v.port_no,
                    v.name,
                    get(&PortCounters::sum(&v.counters))
                );
            }
        });
    }
    // Bridge-wide pipeline counters, summed over the workers.
    type BridgeMetric = (&'static str, &'static str, fn(&BridgeCounters) -> u64);
    let bridge_metrics: [BridgeMetric; 4] = [
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
            "Frames for the controller",
            |c| c.to_controller.load(Relaxed),
        ),
    ];
    for (name, help, get) in bridge_metrics {
        family(name, "counter", help, &mut |s, o| {
            let _ = writeln!(
                o,
                "{name}{{bridge=\"{}\"}} {}",
                s.bridge,
                get(&BridgeCounters::sum(&s.counters))
            );
        });
    }
    family(
        "sluice_rules",
        "gauge",
        "Rules installed per table",
        &mut |s, o| {
            let snap = s.pipeline.load();
            for (t, cls) in snap
                .tables
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.is_empty())
            {
                let _ = writeln!(
                    o,
                    "sluice_rules{{bridge=\"{}\",table=\"{t}\"}} {}",
                    s.bridge,
                    cls.len()
                );
            }
        },
    );
    family(
        "sluice_pipeline_version",
        "gauge",
        "Published pipeline version",
        &mut |s, o| {
            let _ = writeln!(
                o,
                "sluice_pipeline_version{{bridge=\"{}\"}} {}",
                s.bridge,
                s.pipeline.load().version
            );
        },
    );
    // Worker health: a dead worker reads 0; a stalled one (alive, not
    // looping) shows a heartbeat age well above the 10 ms of an idle round.
    family(
        "sluice_worker_up",
        "gauge",
        "1 while the worker's loop runs, 0 once it has ended or died",
        &mut |s, o| {
            for (w, c) in s.counters.iter().enumerate() {
                let _ = writeln!(
                    o,
                    "sluice_worker_up{{bridge=\"{}\",worker=\"{w}\"}} {}",
                    s.bridge,
                    u8::from(c.running.load(Relaxed))
                );
            }
        },
    );
    family(
        "sluice_worker_heartbeat_age_seconds",
        "gauge",
        "Time since the worker last started a loop round (absent before its first)",
        &mut |s, o| {
            for (w, c) in s.counters.iter().enumerate() {
                let beat = c.heartbeat_ns.load(Relaxed);
                if beat != 0 {
                    let _ = writeln!(
                        o,
                        "sluice_worker_heartbeat_age_seconds{{bridge=\"{}\",worker=\"{w}\"}} {:e}",
                        s.bridge,
                        now.saturating_sub(beat) as f64 / 1e9
                    );
                }
            }
        },
    );
    family(
        "sluice_worker_rounds_total",
        "counter",
        "Loop rounds of the worker (one receive from every port)",
        &mut |s, o| {
            for (w, c) in s.counters.iter().enumerate() {
                let _ = writeln!(
                    o,
                    "sluice_worker_rounds_total{{bridge=\"{}\",worker=\"{w}\"}} {}",
                    s.bridge,
                    c.batches.load(Relaxed)
                );
            }
        },
    );
    family(
        "sluice_delay_seconds",
        "summary",
        "In-switch delay, receive batch to transmit batch",
        &mut |s, o| {
            let d = &BridgeCounters::sum(&s.counters).delay;
            for q in [0.5, 0.99, 0.999] {
                let _ = writeln!(
                    o,
                    "sluice_delay_seconds{{bridge=\"{}\",quantile=\"{q}\"}} {:e}",
                    s.bridge,
                    d.quantile(q) as f64 / 1e9
                );
            }
            let _ = writeln!(
                o,
                "sluice_delay_seconds_count{{bridge=\"{}\"}} {}",
                s.bridge,
                d.count()
            );
        },
    );
    family(
        "sluice_delay_max_seconds",
        "gauge",
        "Largest in-switch delay",
        &mut |s, o| {
            let _ = writeln!(
                o,
                "sluice_delay_max_seconds{{bridge=\"{}\"}} {:e}",
                s.bridge,
                BridgeCounters::sum(&s.counters).delay.max() as f64 / 1e9
            );
        },
    );
    o
}

/// Serves `GET /metrics` on `listener` until the process ends.
pub fn serve(listener: TcpListener, sources: Vec<Sources>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_health_is_reported_per_worker() {
        let mut p = pipeline::Pipeline::new(pipeline::Config::default());
        let counters: Vec<Arc<BridgeCounters>> = (0..2).map(|_| Arc::default()).collect();
        // Worker 0 runs and looped 5 s ago (stalled); worker 1 has died.
        counters[0].running.store(true, Relaxed);
        let now = 7_000_000_000;
        counters[0].heartbeat_ns.store(2_000_000_000, Relaxed);
        counters[0].batches.store(42, Relaxed);
        counters[1].heartbeat_ns.store(now, Relaxed);
        let text = render_at(
            &[Sources {
                bridge: "br0".into(),
                ports: Arc::default(),
                counters,
                pipeline: Arc::new(ArcSwap::new(p.snapshot())),
            }],
            now,
        );
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
