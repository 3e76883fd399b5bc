//! Open vSwitch's `enqueue` (set_queue, output, pop_queue: the queue for
//! that one output) and its truncating output (`output(port=N,max_len=M)`:
//! a copy cut to M bytes, the packet itself going on whole).

use ofp::text::parse_flow_mod;
use packet::wire::build;
use pipeline::{Config, Pipeline, PortState, Worker};

fn run(flow: &str) -> Vec<(u32, Option<u32>, usize)> {
    let mut p = Pipeline::new(Config::default());
    for n in [1, 2, 3, 4] {
        p.set_port(PortState::up(n));
    }
    p.flow_mod(&parse_flow_mod(flow).unwrap(), 0).unwrap();
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = build::sample_tcp(80, 0x02);
    f.resize(200, 0);
    let len = f.len();
    w.process(&snap, 1, &mut f, 1_000)
        .iter()
        .map(|o| (o.port, o.queue, o.data.as_ref().map_or(len, Vec::len)))
        .collect()
}

#[test]
fn enqueue_sets_the_queue_for_its_one_output() {
    assert_eq!(
        run("in_port=1,actions=enqueue:2:7,output:3"),
        vec![(2, Some(7), 200), (3, None, 200)]
    );
    // set_queue alone stays set; pop_queue takes it back.
    assert_eq!(
        run("in_port=1,actions=set_queue:5,output:2,output:3,pop_queue,output:4"),
        vec![(2, Some(5), 200), (3, Some(5), 200), (4, None, 200)]
    );
}

#[test]
fn a_truncating_output_cuts_its_copy_only() {
    assert_eq!(
        run("in_port=1,actions=output(port=2,max_len=64),output:3"),
        vec![(2, None, 64), (3, None, 200)]
    );
    // Longer than the packet: the packet as it is.
    assert_eq!(
        run("in_port=1,actions=output(port=2,max_len=1500)"),
        vec![(2, None, 200)]
    );
}
