//! Criterion benchmarks of the packet path: flow-key extraction, classifier
//! lookup and the whole pipeline (with and without the exact-match cache)
//! on a 200-rule table; `pipeline-bench` covers the large tables and ingest.
//! Run with `cargo bench -p pipeline --bench pipeline`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use ofp::text::parse_flow_mod;
use packet::{extract, FlowKey};
use pipeline::{Config, Pipeline, PortState, Worker};

fn frame(dst_port: u16) -> Vec<u8> {
    let mut f = packet::wire::build::sample_tcp(dst_port, 0x10);
    f.resize(64, 0);
    f
}

fn bench(c: &mut Criterion) {
    let mut p = Pipeline::new(Config {
        n_tables: 1,
        ..Config::default()
    });
    for n in 1..=32 {
        p.set_port(PortState::up(n));
    }
    for i in 0..200u32 {
        let f = match i % 4 {
            0 => format!(
                "priority=100,tcp,tp_dst={},actions=set_field:02:00:00:00:10:00->eth_dst,output:{}",
                1000 + i,
                i % 32 + 1
            ),
            1 => format!(
                "priority=200,ip,nw_dst=10.{}.0.0/16,actions=output:{}",
                i,
                i % 32 + 1
            ),
            2 => format!(
                "priority=300,in_port={},dl_dst=02:00:00:00:{:02x}:{:02x},actions=output:1",
                i % 32 + 1,
                i >> 8,
                i & 0xff
            ),
            _ => format!("priority=50,udp,tp_dst={},actions=output:2", 2000 + i),
        };
        p.flow_mod(&parse_flow_mod(&f).unwrap(), 0).unwrap();
    }
    let snap = p.snapshot();
    let packets: Vec<Vec<u8>> = (0..64).map(|i| frame(1000 + 4 * i)).collect();
    let mut g = c.benchmark_group("pipeline_200_rules");
    g.throughput(Throughput::Elements(packets.len() as u64));
    let mut key = FlowKey::default();
    g.bench_function("extract", |b| {
        b.iter(|| {
            for f in &packets {
                extract(black_box(f), 3, &mut key);
            }
        })
    });
    let keys: Vec<FlowKey> = packets
        .iter()
        .map(|f| {
            let mut k = FlowKey::default();
            extract(f, 3, &mut k);
            k
        })
        .collect();
    g.bench_function("classifier_lookup", |b| {
        b.iter(|| {
            keys.iter()
                .filter(|k| snap.tables[0].lookup(black_box(k)).is_some())
                .count()
        })
    });
    for (name, mut w) in [
        ("process_with_cache", Worker::new(0)),
        ("process_no_cache", Worker::with_cache(0, 0)),
    ] {
        let mut frames = packets.clone();
        g.bench_function(name, |b| {
            b.iter(|| {
                frames
                    .iter_mut()
                    .map(|f| w.process(&snap, 3, f, 1).len())
                    .sum::<usize>()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
