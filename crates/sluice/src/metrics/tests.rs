//! Rendering: every family well formed (checked line by line against the
//! format's rules), and what each reports.

use super::*;
use std::collections::HashMap;

/// A bridge of `workers` workers with no port and an empty pipeline
/// (the default 254 tables).
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
        fast: None,
        zone_series: ct::ZONE_SERIES,
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
        ("sluice_delay_worst_seconds", "gauge"),
        ("sluice_learn_flows_total", "counter"),
        ("sluice_learn_repeats_total", "counter"),
        ("sluice_learn_dropped_total", "counter"),
        ("sluice_learned_flows", "gauge"),
        ("sluice_learned_removed_with_learner_total", "counter"),
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
    s.control.store(Arc::new(openflow::View {
        ports: vec![(1, true), (2, true)],
        ..openflow::View::default()
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
    assert!(text.contains(
        "sluice_port_rx_bytes_total{bridge=\"br0\",ofport=\"4294967294\",interface=\"br0\"} 0\n"
    ));
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
            ctl: pipeline::ToController::new(ofp::msg::flow::PacketInReason::NoMatch, 0, 0, 0),
            frame: Vec::new(),
            tunnel: Default::default(),
        });
    }
    s.control.store(Arc::new(openflow::View {
        packet_in_limited: 11,
        ..openflow::View::default()
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
fn the_exact_match_caches_lookups_summed_over_workers() {
    let s = sources("br0", 2);
    s.counters[0].cache_hits.store(40, Relaxed);
    s.counters[1].cache_hits.store(2, Relaxed);
    s.counters[1].cache_misses.store(7, Relaxed);
    let text = render_at(&[s], 1);
    check_format(&text);
    assert_eq!(
        value(
            &text,
            "sluice_cache_lookups_total{bridge=\"br0\",result=\"hit\"}"
        ),
        42.0
    );
    assert_eq!(
        value(
            &text,
            "sluice_cache_lookups_total{bridge=\"br0\",result=\"miss\"}"
        ),
        7.0
    );
}

#[test]
fn what_became_of_learned_flows() {
    let s = sources("br0", 2);
    s.counters[0].learn_repeated.store(5, Relaxed);
    s.counters[1].learn_repeated.store(2, Relaxed);
    s.counters[1].learn_dropped.store(3, Relaxed);
    s.channels.learn_dropped.store(9, Relaxed);
    s.control.store(Arc::new(openflow::View {
        learn: pipeline::control::learn::LearnStats {
            added: 10,
            unchanged: 1,
            over_limit: 2,
            over_rate: 300,
            over_table: 40,
            refused: 4,
            deleted_with_learner: 6,
        },
        learned: vec![(1, 10)],
        ..openflow::View::default()
    }));
    let text = render_at(&[s], 1);
    check_format(&text);
    for (outcome, n) in [
        ("added", 10.0),
        ("unchanged", 1.0),
        ("over_limit", 2.0),
        ("over_rate", 300.0),
        ("over_table", 40.0),
        ("refused", 4.0),
    ] {
        let series = format!("sluice_learn_flows_total{{bridge=\"br0\",outcome=\"{outcome}\"}}");
        assert_eq!(value(&text, &series), n, "{outcome}");
    }
    assert_eq!(
        value(&text, "sluice_learn_repeats_total{bridge=\"br0\"}"),
        7.0
    );
    assert_eq!(
        value(
            &text,
            "sluice_learn_dropped_total{bridge=\"br0\",where=\"worker\"}"
        ),
        3.0
    );
    assert_eq!(
        value(
            &text,
            "sluice_learn_dropped_total{bridge=\"br0\",where=\"queue\"}"
        ),
        9.0
    );
    assert_eq!(
        value(&text, "sluice_learned_flows{bridge=\"br0\",table=\"1\"}"),
        10.0
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("sluice_learned_flows{"))
            .count(),
        1,
        "only tables with learned flows"
    );
    assert_eq!(
        value(
            &text,
            "sluice_learned_removed_with_learner_total{bridge=\"br0\"}"
        ),
        6.0
    );
}

#[test]
fn controllers_and_connections() {
    let s = sources("br0", 1);
    s.control.store(Arc::new(openflow::View {
        conns: vec![
            openflow::ConnView {
                id: 3,
                peer: "tcp:127.0.0.1:6653".into(),
                management: false,
                state: "open",
                role: "master",
                version: "OpenFlow13",
            },
            openflow::ConnView {
                id: 4,
                peer: "unix:/run/sluice/br0.mgmt".into(),
                management: true,
                state: "hello",
                role: "equal",
                version: "OpenFlow15",
            },
        ],
        controllers: vec![
            ("tcp:127.0.0.1:6653".into(), true),
            ("tls:ctl.example:6653".into(), false),
        ],
        ..openflow::View::default()
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
        value(&text, "sluice_connection_info{bridge=\"br0\",conn=\"3\",peer=\"tcp:127.0.0.1:6653\",kind=\"controller\",state=\"open\",role=\"master\",version=\"OpenFlow13\"}"),
        1.0
    );
    assert_eq!(
        value(&text, "sluice_connection_info{bridge=\"br0\",conn=\"4\",peer=\"unix:/run/sluice/br0.mgmt\",kind=\"management\",state=\"hello\",role=\"equal\",version=\"OpenFlow15\"}"),
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
    // No batch recorded as the slowest yet: no age.
    assert!(!text.contains("sluice_delay_worst_age_seconds{"));
    // No quantiles any more.
    assert!(!text.contains("quantile="));
}

#[test]
fn the_slowest_batch_and_the_targets_bound() {
    let s = sources("br0", 2);
    s.counters[0].delay.record(120_000, 1);
    s.counters[0].worst.see(120_000, 1, 1_000_000_000);
    s.counters[1].delay.record(180_000, 2);
    s.counters[1].worst.see(180_000, 2, 2_000_000_000);
    let text = render_at(&[s], 3_500_000_000);
    check_format(&text);
    let b = |le: &str| {
        value(
            &text,
            &format!("sluice_delay_seconds_bucket{{bridge=\"br0\",le=\"{le}\"}}"),
        )
    };
    // The target's bound: frames at or under 150 us.
    assert_eq!(b("0.00015"), 1.0);
    assert_eq!(b("0.0002"), 3.0);
    assert_eq!(
        value(&text, "sluice_delay_worst_seconds{bridge=\"br0\"}"),
        0.00018
    );
    assert_eq!(
        value(&text, "sluice_delay_worst_age_seconds{bridge=\"br0\"}"),
        1.5
    );
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

#[test]
fn connection_tracker_counts_states_and_counters() {
    use conntrack::build::{self, Ip, Seg};
    let s = sources("br0", 1);
    let t = s.pipeline.load().conntrack.clone();
    let (a, b) = (Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]));
    let commit = conntrack::Request {
        commit: true,
        ..Default::default()
    };
    let syn = Seg {
        sport: 1000,
        dport: 80,
        seq: 1,
        ack: 0,
        flags: 0x02,
        win: 1000,
        wscale: None,
    };
    t.track(&mut build::tcp(a, b, &syn, 0), false, &commit, 1000);
    for (sport, zone) in [(1, 0), (2, 5), (3, 5)] {
        let mut p = build::udp(a, b, sport, 53, 0);
        t.track(&mut p, false, &conntrack::Request { zone, ..commit }, 1000);
    }
    t.set_zone_limit(5, Some(2));
    // Zone 5 full: the newcomer evicts one of its unreplied (early drop).
    let mut p = build::udp(a, b, 4, 53, 0);
    t.track(
        &mut p,
        false,
        &conntrack::Request { zone: 5, ..commit },
        1000,
    );
    // Both zone-5 connections answered: assured, the next is refused.
    for sport in [1, 2, 3, 4] {
        let mut r = build::udp(b, a, 53, sport, 0);
        t.track(
            &mut r,
            false,
            &conntrack::Request {
                zone: 5,
                ..Default::default()
            },
            1000,
        );
    }
    let mut p = build::udp(a, b, 5, 53, 0);
    t.track(
        &mut p,
        false,
        &conntrack::Request { zone: 5, ..commit },
        1000,
    );
    // SYN and FIN together: invalid.
    let ack = Seg {
        flags: 0x03,
        sport: 7,
        ..syn
    };
    t.track(&mut build::tcp(a, b, &ack, 0), false, &commit, 1000);
    let text = render_at(&[s], 2_000_000_000);
    let fams = check_format(&text);
    for name in [
        "sluice_conntrack_connections",
        "sluice_conntrack_zone_connections",
        "sluice_conntrack_connections_by_state",
        "sluice_conntrack_limit",
        "sluice_conntrack_heap_bytes",
    ] {
        assert_eq!(fams.get(name).map(String::as_str), Some("gauge"), "{name}");
    }
    let v = |series: &str| value(&text, series);
    assert_eq!(v("sluice_conntrack_connections{bridge=\"br0\"}"), 4.0);
    assert_eq!(
        v("sluice_conntrack_zone_connections{bridge=\"br0\",zone=\"0\"}"),
        2.0
    );
    assert_eq!(
        v("sluice_conntrack_zone_connections{bridge=\"br0\",zone=\"5\"}"),
        2.0
    );
    assert_eq!(
        v("sluice_conntrack_connections_by_state{bridge=\"br0\",protocol=\"tcp\",state=\"SYN_SENT\"}"),
        1.0
    );
    assert_eq!(
        v("sluice_conntrack_connections_by_state{bridge=\"br0\",protocol=\"udp\",state=\"UNREPLIED\"}"),
        1.0
    );
    assert_eq!(
        v("sluice_conntrack_connections_by_state{bridge=\"br0\",protocol=\"udp\",state=\"REPLIED\"}"),
        2.0
    );
    assert_eq!(v("sluice_conntrack_committed_total{bridge=\"br0\"}"), 5.0);
    assert_eq!(v("sluice_conntrack_refused_total{bridge=\"br0\"}"), 1.0);
    assert_eq!(v("sluice_conntrack_early_drop_total{bridge=\"br0\"}"), 1.0);
    assert_eq!(
        v("sluice_conntrack_nat_exhausted_total{bridge=\"br0\"}"),
        0.0
    );
    assert_eq!(v("sluice_conntrack_zones{bridge=\"br0\"}"), 2.0);
    assert_eq!(v("sluice_conntrack_invalid_total{bridge=\"br0\"}"), 1.0);
    assert_eq!(v("sluice_conntrack_expired_total{bridge=\"br0\"}"), 0.0);
    assert_eq!(v("sluice_conntrack_packets_total{bridge=\"br0\"}"), 11.0);
    assert_eq!(v("sluice_conntrack_limit{bridge=\"br0\"}"), 1_048_576.0);
    assert!(v("sluice_conntrack_heap_bytes{bridge=\"br0\"}") > 0.0);
}

#[test]
fn per_zone_series_are_capped_with_an_other_aggregate() {
    use conntrack::build::{self, Ip};
    let mut s = sources("br0", 1);
    s.zone_series = 64;
    let t = s.pipeline.load().conntrack.clone();
    let (a, b) = (Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]));
    // 10 000 zones: zone z holds 1 + z % 7 connections, and zones
    // 9000-9009 hold 20 each (the busiest, which must keep their own).
    for zone in 0..10_000u16 {
        let n = if (9000..9010).contains(&zone) {
            20
        } else {
            1 + zone % 7
        };
        for sport in 0..n {
            let mut p = build::udp(a, b, 1000 + sport, 53, 0);
            let req = conntrack::Request {
                zone,
                commit: true,
                ..Default::default()
            };
            t.track(&mut p, false, &req, 1000);
        }
    }
    let total = t.len();
    let text = render_at(&[s], 2_000_000_000);
    check_format(&text);
    let series: Vec<(String, f64)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("sluice_conntrack_zone_connections{"))
        .map(|l| {
            let (labels, v) = l.rsplit_once(' ').unwrap();
            let zone = labels.split("zone=\"").nth(1).unwrap();
            (zone.trim_end_matches("\"}").to_string(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(series.len(), 65, "64 zones and other");
    let sum: f64 = series.iter().map(|s| s.1).sum();
    assert_eq!(sum, total as f64, "the series sum to the total");
    assert_eq!(
        value(&text, "sluice_conntrack_zones{bridge=\"br0\"}"),
        10_000.0
    );
    for z in 9000..9010 {
        let zone = z.to_string();
        assert!(
            series.iter().any(|s| s.0 == zone && s.1 == 20.0),
            "zone {z} has its own series"
        );
    }
    // The other 54 are zones of 7 (the most after the 20s), lowest first.
    let sevens = series.iter().filter(|s| s.1 == 7.0).count();
    assert_eq!(sevens, 54);
    assert!(series.iter().any(|s| s.0 == "6" && s.1 == 7.0));

    // Few zones: one series each, no aggregate.
    let (top, other) = ct::top_zones(vec![(3, 1), (1, 5)], 64);
    assert_eq!((top, other), (vec![(3, 1), (1, 5)], None));
    // No series of their own at all: just the aggregate.
    let (top, other) = ct::top_zones(vec![(3, 1), (1, 5)], 0);
    assert_eq!((top, other), (vec![], Some(6)));
    // Ties go to the lower zone; the result is in zone order.
    let (top, other) = ct::top_zones(vec![(9, 2), (4, 2), (2, 1), (7, 3)], 2);
    assert_eq!((top, other), (vec![(4, 2), (7, 3)], Some(3)));
}

#[test]
fn the_database_servers_connections_and_what_its_cap_did() {
    let c = crate::database::Counters::default();
    c.connections.store(7, Relaxed);
    c.evicted.store(3, Relaxed);
    c.refused.store(1, Relaxed);
    let text = render(&[sources("br0", 1)], Some(&c));
    let types = check_format(&text);
    assert_eq!(types["sluice_ovsdb_connections"], "gauge");
    assert_eq!(types["sluice_ovsdb_connections_evicted_total"], "counter");
    assert_eq!(value(&text, "sluice_ovsdb_connections"), 7.0);
    assert_eq!(value(&text, "sluice_ovsdb_connections_evicted_total"), 3.0);
    assert_eq!(value(&text, "sluice_ovsdb_connections_refused_total"), 1.0);
    // Without a database, no such family.
    let text = render(&[sources("br0", 1)], None);
    assert!(!text.contains("sluice_ovsdb_"), "{text}");
}
