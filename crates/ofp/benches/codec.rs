//! Codec throughput: FLOW_MOD decode and encode, PACKET_IN encode.
//!
//! The "typical" FLOW_MOD has 5 match fields and 2 actions:
//! `priority=100,in_port=1,tcp,nw_dst=10.0.0.0/8,tp_dst=80,
//!  actions=set_field:02:00:00:00:00:01->eth_dst,output:2`
//! (in_port, eth_type, ip_proto, ipv4_dst, tcp_dst). Run with
//! `cargo bench -p ofp --bench codec`.

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

use ofp::msg::flow::{PacketIn, PacketInReason};
use ofp::text::{parse_flow_mod, parse_match};
use ofp::{Framer, Message};

fn typical_flow_mod() -> Message {
    Message::FlowMod(
        parse_flow_mod(
            "priority=100,in_port=1,tcp,nw_dst=10.0.0.0/8,tp_dst=80,\
             actions=set_field:02:00:00:00:00:01->eth_dst,output:2",
        )
        .expect("bench flow"),
    )
}

fn bench(c: &mut Criterion) {
    let fm = typical_flow_mod();
    let wire = Bytes::from(fm.to_bytes(7));
    let mut g = c.benchmark_group("ofp");
    g.throughput(Throughput::Elements(1));
    g.bench_function("flow_mod_decode", |b| {
        b.iter(|| black_box(Message::decode(black_box(&wire)).expect("decodes")))
    });
    let mut out = Vec::with_capacity(256);
    g.bench_function("flow_mod_encode", |b| {
        b.iter(|| {
            out.clear();
            black_box(&fm).encode(7, &mut out);
            black_box(out.len())
        })
    });
    let pin = Message::PacketIn(PacketIn {
        buffer_id: 0xffff_ffff,
        total_len: 128,
        reason: PacketInReason::NoMatch,
        table_id: 0,
        cookie: 0,
        match_: parse_match("in_port=3").expect("bench match"),
        data: Bytes::from(vec![0x5a; 128]),
    });
    g.bench_function("packet_in_encode_128B", |b| {
        b.iter(|| {
            out.clear();
            black_box(&pin).encode(9, &mut out);
            black_box(out.len())
        })
    });
    // A stream of 1 000 typical FLOW_MODs framed and decoded, per message.
    let stream: Vec<u8> = (0..1000).flat_map(|i| fm.to_bytes(i)).collect();
    g.throughput(Throughput::Elements(1000));
    g.bench_function("flow_mod_stream_frame_and_decode_x1000", |b| {
        b.iter(|| {
            let mut f = Framer::new();
            f.push(&stream);
            let mut n = 0;
            while let Some(Ok(_)) = f.next_message() {
                n += 1;
            }
            assert_eq!(n, 1000);
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
