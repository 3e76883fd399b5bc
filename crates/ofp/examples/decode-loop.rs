//! Decodes the benchmark's typical FLOW_MOD N times (default 100 000): a
//! steady workload for `valgrind --tool=callgrind` instruction counts, which
//! are repeatable where wall-clock times on a small shared machine are not.

use bytes::Bytes;
use ofp::text::parse_flow_mod;
use ofp::Message;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let fm = parse_flow_mod(
        "priority=100,in_port=1,tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=set_field:02:00:00:00:00:01->eth_dst,output:2",
    )
    .expect("flow");
    let wire = Bytes::from(Message::FlowMod(fm).to_bytes(7));
    let mut ok = 0usize;
    for _ in 0..n {
        if let Ok((_, m)) = Message::decode(std::hint::black_box(&wire)) {
            ok += matches!(m, Message::FlowMod(_)) as usize;
        }
    }
    println!("decoded {ok} of {n}");
}
