//! Looking ahead over a batch (`Worker::look_ahead`) and the exact-match
//! cache's admission while it thrashes change no result: random tables
//! (one or several, with resubmits and edits), traffic of many more
//! distinct packets than a small cache holds, run in batches through a
//! worker that looks ahead, one that does not, and one without a cache.
//! Outputs and bytes must be the same for all three, the first two must
//! count the same cache hits, misses, refusals and bypasses, and the look
//! ahead must
//! have run.

use pipeline::{Pipeline, Snapshot, Worker};
use proptest::prelude::*;

mod common;

fn frame(src: u8, dport: u16) -> Vec<u8> {
    common::tcp_frame(src, 1, src / 3, 1000 + src as u16, dport)
}

fn flow() -> impl Strategy<Value = String> {
    let matches = prop_oneof![
        Just(String::new()),
        (1u8..4).prop_map(|p| format!("in_port={p},")),
        (0u8..60).prop_map(|s| format!("ip,nw_src=10.0.0.{s},")),
        (0u8..20).prop_map(|s| format!("ip,nw_dst=10.0.1.{s},")),
        (80u16..84).prop_map(|d| format!("tcp,tp_dst={d},")),
        (0u8..60, 80u16..84).prop_map(|(s, d)| format!("tcp,nw_src=10.0.0.{s},tp_dst={d},")),
    ];
    let action = prop_oneof![
        (1u32..5).prop_map(|p| format!("output:{p}")),
        (0u8..4).prop_map(|v| format!("load:{v}->NXM_NX_REG0[]")),
        (1u8..3).prop_map(|t| format!("resubmit(,{t})")),
        (1u8..60).prop_map(|s| format!("mod_nw_src:10.0.0.{s}")),
        Just("dec_ttl".to_string()),
    ];
    (
        0u8..3,
        0u16..5,
        matches,
        proptest::collection::vec(action, 0..3),
    )
        .prop_map(|(t, prio, m, acts)| {
            let a = if acts.is_empty() {
                "drop".to_string()
            } else {
                acts.join(",")
            };
            format!("table={t},priority={prio},{m}actions={a}")
        })
}

fn build(flows: &[String]) -> Pipeline {
    common::pipeline_of_valid(3, 4, flows)
}

type Seen = Vec<Vec<(u32, Vec<u8>)>>;

/// Runs `packets` in batches of 32 through `w`, looking ahead first.
fn run(w: &mut Worker, snap: &Snapshot, packets: &[(u32, Vec<u8>)]) -> Seen {
    let mut seen = Vec::new();
    for batch in packets.chunks(pipeline::lookup::lookahead::LOOKAHEAD) {
        w.look_ahead(snap, batch.iter().map(|(port, f)| (*port, &f[..])));
        for (port, f) in batch {
            let mut f = f.clone();
            let outs = w.process(snap, *port, &mut f, 0).to_vec();
            seen.push(
                outs.into_iter()
                    .map(|o| (o.port, o.data.unwrap_or_else(|| f.clone())))
                    .collect(),
            );
        }
    }
    seen
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn looking_ahead_changes_nothing(
        flows in proptest::collection::vec(flow(), 1..40),
        order in proptest::collection::vec((1u32..4, 0u8..60, 80u16..84), 600..1200),
    ) {
        let snap = build(&flows).snapshot();
        let packets: Vec<(u32, Vec<u8>)> =
            order.iter().map(|&(port, s, d)| (port, frame(s, d))).collect();
        // 16 entries for up to 720 distinct packets: the cache thrashes.
        let mut ahead = Worker::with_cache(0, 16);
        let mut plain = Worker::with_cache(0, 16);
        plain.set_lookahead(false);
        let mut none = Worker::with_cache(0, 0);
        for _ in 0..2 {
            let want = run(&mut none, &snap, &packets);
            prop_assert_eq!(&run(&mut ahead, &snap, &packets), &want);
            prop_assert_eq!(&run(&mut plain, &snap, &packets), &want);
        }
        prop_assert_eq!(ahead.cache_stats(), plain.cache_stats());
        prop_assert_eq!(ahead.cache_refused(), plain.cache_refused());
        prop_assert_eq!(ahead.cache_bypassed(), plain.cache_bypassed());
        prop_assert!(ahead.lookahead_batches() > 0);
        prop_assert_eq!(plain.lookahead_batches(), 0);
    }
}

/// A cache that thrashes refuses most misses (and, hitting almost never,
/// is bypassed), and one that does not refuses none.
#[test]
fn admission_only_while_thrashing() {
    let snap = build(&["priority=1,actions=output:2".to_string()]).snapshot();
    let many: Vec<(u32, Vec<u8>)> = (0..4000u32)
        .map(|i| (1, frame((i % 60) as u8, 80 + (i / 60 % 4) as u16)))
        .collect();
    let mut w = Worker::with_cache(0, 16);
    run(&mut w, &snap, &many);
    let (_, misses) = w.cache_stats();
    // The first window's misses are all cached; after it, one in 16.
    let window = pipeline::lookup::emc::WINDOW;
    let admitted = misses - window - w.cache_refused();
    assert!(
        misses > window && admitted <= (misses - window) / 16 + 1,
        "{admitted} of {misses}"
    );
    // Almost nothing hits: most lookups skip the cache.
    assert!(w.cache_bypassed() > 2000, "{}", w.cache_bypassed());
    let few: Vec<(u32, Vec<u8>)> = (0..4000u32)
        .map(|i| (1, frame((i % 4) as u8, 80)))
        .collect();
    let mut w = Worker::new(0);
    run(&mut w, &snap, &few);
    assert_eq!(w.cache_refused(), 0);
    assert_eq!(w.cache_bypassed(), 0);
    assert_eq!(w.cache_stats().1, 4);
}

/// After a flood the cache bypasses itself; when the traffic is a few
/// flows again, it is consulted again and answers them.
#[test]
fn the_cache_comes_back_after_a_flood() {
    let snap = build(&["priority=1,actions=output:2".to_string()]).snapshot();
    let flood: Vec<(u32, Vec<u8>)> = (0..20_000u32)
        .map(|i| (1, frame((i % 60) as u8, 80 + (i / 60 % 4) as u16)))
        .collect();
    let few: Vec<(u32, Vec<u8>)> = (0..20_000u32)
        .map(|i| (1, frame((i % 4) as u8, 80)))
        .collect();
    let mut w = Worker::with_cache(0, 16);
    run(&mut w, &snap, &flood);
    assert!(w.cache_bypassed() > 10_000, "{}", w.cache_bypassed());
    run(&mut w, &snap, &few);
    let (bypassed, (hits, _)) = (w.cache_bypassed(), w.cache_stats());
    run(&mut w, &snap, &few);
    assert_eq!(w.cache_bypassed(), bypassed, "still bypassed");
    assert_eq!(w.cache_stats().0 - hits, 20_000, "every packet a hit again");
}
