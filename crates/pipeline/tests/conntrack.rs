//! Open vSwitch's `ct` through the pipeline: the conntrack tutorial's
//! firewall (new connections from one side only, replies allowed), zones
//! from a register, ct_mark and ct_label set on commit and matched after,
//! the original-direction tuple fields, SNAT and DNAT with `ct(nat)` on
//! the way back, `ct_clear`, a packet that is not IP, and walks with `ct`
//! kept out of the walk cache; and how a trace through `ct` is told.

use conntrack::build::{self, Ip, Seg};
use ofp::text::parse_flow_mod;
use pipeline::{Pipeline, Worker};

mod common;

fn pipeline(flows: &[&str]) -> Pipeline {
    common::pipeline(16, 4, flows)
}

fn eth(ip: &[u8]) -> Vec<u8> {
    let ty = if ip[0] >> 4 == 6 { 0x86dd } else { 0x0800 };
    packet::wire::build::ethernet(0x0200_0000_0002, 0x0200_0000_0001, None, ty, ip)
}

const L: Ip = Ip::V4([10, 77, 0, 1]);
const R: Ip = Ip::V4([10, 77, 0, 2]);

fn tcp(src: Ip, dst: Ip, sport: u16, dport: u16, seq: u32, ack: u32, flags: u8) -> Vec<u8> {
    eth(&build::tcp(
        src,
        dst,
        &Seg {
            sport,
            dport,
            seq,
            ack,
            flags,
            win: 64000,
            wscale: None,
        },
        0,
    ))
}

/// The ports a frame goes out of (and the frame as it left).
fn run(p: &mut Pipeline, w: &mut Worker, in_port: u32, frame: &[u8]) -> (Vec<u32>, Vec<u8>) {
    let snap = p.snapshot();
    let mut f = frame.to_vec();
    let outs: Vec<u32> = w
        .process(&snap, in_port, &mut f, 1_000_000)
        .iter()
        .map(|o| o.port)
        .collect();
    (outs, f)
}

/// The conntrack tutorial's firewall (Open vSwitch's "Connection Tracking"
/// tutorial): TCP from port 1 may open connections to port 2; port 2 may
/// only answer.
const FIREWALL: &[&str] = &[
    "table=0,priority=1,actions=drop",
    "table=0,priority=10,arp,actions=normal",
    "table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1)",
    "table=1,in_port=1,ip,ct_state=+trk+new,actions=ct(commit),output:2",
    "table=1,in_port=1,ip,ct_state=+trk+est,actions=output:2",
    "table=1,in_port=2,ip,ct_state=+trk+new,actions=drop",
    "table=1,in_port=2,ip,ct_state=+trk+est,actions=output:1",
];

#[test]
fn tutorial_firewall() {
    let mut p = pipeline(FIREWALL);
    let mut w = Worker::new(0);
    let syn = tcp(L, R, 40000, 80, 100, 0, 0x02);
    assert_eq!(run(&mut p, &mut w, 1, &syn).0, vec![2]);
    let synack = tcp(R, L, 80, 40000, 700, 101, 0x12);
    assert_eq!(run(&mut p, &mut w, 2, &synack).0, vec![1]);
    let ack = tcp(L, R, 40000, 80, 101, 701, 0x10);
    for _ in 0..3 {
        assert_eq!(run(&mut p, &mut w, 1, &ack).0, vec![2]);
        assert_eq!(
            run(&mut p, &mut w, 2, &tcp(R, L, 80, 40000, 701, 101, 0x10)).0,
            vec![1]
        );
    }
    // The right side may not open a connection.
    let syn_back = tcp(R, L, 22, 5555, 1, 0, 0x02);
    assert_eq!(run(&mut p, &mut w, 2, &syn_back).0, Vec::<u32>::new());
    // An unsolicited SYN-ACK is invalid: no rule takes +inv, dropped.
    let stray = tcp(R, L, 80, 41000, 5, 5, 0x12);
    assert_eq!(run(&mut p, &mut w, 2, &stray).0, Vec::<u32>::new());
    assert_eq!(p.conntrack().len(), 1);
    // The walk cache never holds a walk through ct: after the connection
    // is flushed, the same ACK is new (and from port 2 dropped).
    p.conntrack().flush(&conntrack::Filter::default());
    assert_eq!(
        run(&mut p, &mut w, 2, &tcp(R, L, 80, 40000, 701, 101, 0x10)).0,
        Vec::<u32>::new()
    );
}

#[test]
fn zone_from_a_register_mark_label_and_tuple() {
    let mut p = pipeline(&[
        "table=0,priority=10,ip,ct_state=-trk,actions=load:7->NXM_NX_REG6[0..15],ct(zone=NXM_NX_REG6[0..15],table=1)",
        "table=1,priority=10,ip,ct_state=+new+trk,actions=ct(commit,zone=7,exec(set_field:0x2a->ct_mark,set_field:0x1/0x1->ct_label)),output:2",
        "table=1,priority=20,ip,ct_state=+est+trk,ct_zone=7,ct_mark=0x2a,ct_label=0x1/0x1,ct_nw_src=10.77.0.1,ct_nw_dst=10.77.0.2,ct_nw_proto=17,ct_tp_src=5000,ct_tp_dst=53,actions=output:3",
        "table=1,priority=15,ip,ct_state=+est+trk,actions=output:4",
    ]);
    let mut w = Worker::new(0);
    let q = eth(&build::udp(L, R, 5000, 53, 10));
    assert_eq!(run(&mut p, &mut w, 1, &q).0, vec![2]);
    let r = eth(&build::udp(R, L, 53, 5000, 10));
    // The reply matches the connection's mark, label and original tuple.
    assert_eq!(run(&mut p, &mut w, 2, &r).0, vec![3]);
    let e = p.conntrack().dump(&conntrack::Filter::default(), 10, 1);
    assert_eq!(e.len(), 1);
    assert_eq!(
        (e[0].conn.key[0].zone, e[0].conn.mark, e[0].conn.label()),
        (7, 0x2a, 1)
    );
}

#[test]
fn snat_and_dnat() {
    let mut p = pipeline(&[
        // Port 1: inside hosts, SNAT to 192.0.2.1; port 2: outside.
        "table=0,priority=10,ip,in_port=1,actions=ct(commit,zone=1,nat(src=192.0.2.1:20000-20099)),output:2",
        "table=0,priority=10,ip,in_port=2,ct_state=-trk,actions=ct(zone=1,nat,table=1)",
        "table=1,priority=10,ip,ct_state=+trk+est,actions=output:1",
        // Port 3: a port forward of 192.0.2.10:80 to 10.77.0.80:8080.
        "table=0,priority=20,tcp,in_port=3,nw_dst=192.0.2.10,tp_dst=80,actions=ct(commit,zone=2,nat(dst=10.77.0.80:8080)),output:4",
        "table=0,priority=20,tcp,in_port=4,ct_state=-trk,actions=ct(zone=2,nat,table=2)",
        "table=2,priority=10,tcp,ct_state=+trk+est+snat,actions=output:3",
    ]);
    let mut w = Worker::new(0);
    let server = Ip::V4([198, 51, 100, 9]);
    for h in 1..=5u8 {
        let host = Ip::V4([10, 77, 0, h]);
        let (outs, f) = run(
            &mut p,
            &mut w,
            1,
            &tcp(host, server, 33000, 443, 1, 0, 0x02),
        );
        assert_eq!(outs, vec![2]);
        assert_eq!(&f[26..30], &[192, 0, 2, 1], "source translated");
        let port = u16::from_be_bytes([f[34], f[35]]);
        assert!((20000..20100).contains(&port), "{port}");
        assert!(build::checksums_ok(&f[14..]));
        let back = tcp(server, Ip::V4([192, 0, 2, 1]), 443, port, 9, 2, 0x12);
        let (outs, f) = run(&mut p, &mut w, 2, &back);
        assert_eq!(outs, vec![1]);
        assert_eq!(&f[30..34], &[10, 77, 0, h], "reply to its own host");
        assert_eq!(u16::from_be_bytes([f[36], f[37]]), 33000);
        assert!(build::checksums_ok(&f[14..]));
    }
    let client = Ip::V4([203, 0, 113, 7]);
    let (outs, f) = run(
        &mut p,
        &mut w,
        3,
        &tcp(client, Ip::V4([192, 0, 2, 10]), 5000, 80, 1, 0, 0x02),
    );
    assert_eq!(outs, vec![4]);
    assert_eq!(&f[30..34], &[10, 77, 0, 80]);
    assert_eq!(u16::from_be_bytes([f[36], f[37]]), 8080);
    let back = tcp(Ip::V4([10, 77, 0, 80]), client, 8080, 5000, 9, 2, 0x12);
    let (outs, f) = run(&mut p, &mut w, 4, &back);
    assert_eq!(outs, vec![3]);
    assert_eq!(&f[26..30], &[192, 0, 2, 10]);
    assert_eq!(u16::from_be_bytes([f[34], f[35]]), 80);
    assert!(build::checksums_ok(&f[14..]));
}

#[test]
fn ct_clear_and_fields_after_ct() {
    let mut p = pipeline(&[
        "table=0,priority=20,ip,in_port=2,actions=resubmit(,3)",
        "table=0,priority=10,ip,ct_state=-trk,actions=ct(table=1)",
        // After ct_clear the packet is untracked again: back to table 0's
        // first flow would loop, so table 2 tells.
        "table=1,priority=10,ip,ct_state=+trk,actions=ct_clear,resubmit(,2)",
        "table=2,priority=10,ip,ct_state=-trk,actions=output:4",
        "table=2,priority=5,ip,actions=output:3",
        // ct without table: the fields are cleared after it.
        "table=3,priority=10,ip,actions=ct(commit),resubmit(,2)",
    ]);
    let mut w = Worker::new(0);
    let q = eth(&build::udp(L, R, 1, 2, 0));
    assert_eq!(run(&mut p, &mut w, 1, &q).0, vec![4]);
    assert_eq!(p.conntrack().len(), 0);
    let q = eth(&build::udp(R, L, 1, 2, 0));
    assert_eq!(run(&mut p, &mut w, 2, &q).0, vec![4]);
    assert_eq!(p.conntrack().len(), 1, "committed");
}

#[test]
fn ct_needs_ip_in_the_match_and_refuses_alg() {
    let mut p = pipeline(&[]);
    for (f, why) in [
        ("actions=ct(commit)", "ip or ipv6"),
        ("arp,actions=ct(table=1)", "ip or ipv6"),
        ("tcp,actions=ct(commit,alg=ftp)", "alg"),
        ("ip,ct_state=+inv+trk,actions=ct(commit)", "+inv"),
    ] {
        let fm = parse_flow_mod(f).unwrap();
        let e = ofp::msg::Message::FlowMod(fm.clone())
            .validate()
            .and_then(|()| p.flow_mod(&fm, 0).map(|_| ()))
            .expect_err(f);
        assert!(e.to_string().contains(why), "{f}: {e}");
    }
}

#[test]
fn trace_splits_at_each_recirculation_and_commits_nothing() {
    let mut p = pipeline(FIREWALL);
    let snap = p.snapshot();
    let syn = tcp(L, R, 40000, 80, 100, 0, 0x02);
    let t = pipeline::trace::trace(&snap, 1, &syn);
    assert_eq!(t.blocks(), 2, "{}", t.text(1));
    let text = t.text(1);
    // The first pass ends at the ct, the recirculation is a block of its
    // own, resumed as Open vSwitch's trace resumes it.
    let (first, rest) = text.split_once(&"=".repeat(79)).expect("a separator");
    assert!(
        first.contains("The forked pipeline will be resumed at table 1."),
        "{text}"
    );
    assert!(
        first.contains("Datapath actions: ct,recirc(0x1)\n"),
        "{text}"
    );
    assert!(
        rest.starts_with("\nrecirc(0x1) - resume conntrack with default ct_state=trk|new (use --ct-next to customize)\n"),
        "{text}"
    );
    assert!(
        rest.contains("Flow: recirc_id=0x1,ct_state=new|trk,eth,tcp,"),
        "{text}"
    );
    assert!(
        rest.contains("\nthaw\n    Resuming from table 1\n"),
        "{text}"
    );
    assert!(rest.ends_with("Datapath actions: ct(commit),2\n"), "{text}");
    assert_eq!(p.conntrack().len(), 0, "a trace commits nothing");
    // --ct-next: the recirculation resumes with the state given.
    let opts = pipeline::trace::Options {
        ct_next: vec![pipeline::trace::parse_ct_state("trk,est").unwrap()],
        ..Default::default()
    };
    let t = pipeline::trace::trace_with(&snap, 1, &syn, &opts);
    let text = t.text(1);
    assert!(
        text.contains("recirc(0x1) - resume conntrack with ct_state=est|trk\n"),
        "{text}"
    );
    assert!(
        text.contains("Flow: recirc_id=0x1,ct_state=est|trk,eth,"),
        "{text}"
    );
}

#[test]
fn ct_in_the_action_set_is_a_final_action() {
    // Open vSwitch ranks the action set's final actions: group, output,
    // ct_clear, ct; one runs.
    let mut p = pipeline(&[
        "table=0,priority=10,ip,ct_state=-trk,in_port=1,actions=write_actions(ct(commit,table=1))",
        "table=0,priority=10,ip,ct_state=-trk,in_port=2,actions=write_actions(ct(commit,table=1),output:3)",
        "table=1,priority=10,ip,ct_state=+trk+new,actions=output:4",
    ]);
    let mut w = Worker::new(0);
    let q = eth(&build::udp(L, R, 1, 2, 0));
    assert_eq!(run(&mut p, &mut w, 1, &q).0, vec![4]);
    assert_eq!(p.conntrack().len(), 1);
    let q = eth(&build::udp(L, R, 7, 8, 0));
    assert_eq!(run(&mut p, &mut w, 2, &q).0, vec![3], "output wins over ct");
    assert_eq!(p.conntrack().len(), 1);
}

#[test]
fn trace_blocks_and_ct_next_states_follow_open_vswitchs_queue() {
    // Two forks in the first pass (A to table 1, B to table 2), and A
    // forks again (C to table 3): Open vSwitch traces A, B, C in that
    // order and gives them the --ct-next states in that order, where
    // sluice runs C inside A, before B.
    let mut p = pipeline(&[
        "table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1,zone=1),ct(table=2,zone=2)",
        "table=1,ip,ct_state=+trk+est,actions=ct(table=3,zone=3)",
        "table=1,ip,ct_state=+trk+new,actions=output:1",
        "table=2,ip,ct_state=+trk+new,actions=output:2",
        "table=2,ip,ct_state=+trk+est,actions=output:3",
        "table=3,ip,actions=output:4",
    ]);
    let snap = p.snapshot();
    let syn = tcp(L, R, 40000, 80, 100, 0, 0x02);
    let st = |s| pipeline::trace::parse_ct_state(s).unwrap();
    let opts = pipeline::trace::Options {
        ct_next: vec![st("trk,est"), st("trk,new"), st("trk,est")],
        ..Default::default()
    };
    let t = pipeline::trace::trace_with(&snap, 5, &syn, &opts);
    let text = t.text(5);
    let heads: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("recirc(") || l.starts_with("Datapath actions:"))
        .collect();
    assert_eq!(
        heads,
        [
            "Datapath actions: ct(zone=1),recirc(0x1),ct(zone=2),recirc(0x2)",
            "recirc(0x1) - resume conntrack with ct_state=est|trk",
            "Datapath actions: ct(zone=3),recirc(0x3)",
            "recirc(0x2) - resume conntrack with ct_state=new|trk",
            "Datapath actions: 2",
            "recirc(0x3) - resume conntrack with ct_state=est|trk",
            "Datapath actions: 4",
        ],
        "{text}"
    );
    // Without states: trk|new for each, so A outputs and does not fork.
    let t = pipeline::trace::trace(&snap, 5, &syn);
    assert_eq!(t.blocks(), 3);
    let text = t.text(5);
    assert_eq!(
        text.matches("default ct_state=trk|new (use --ct-next to customize)")
            .count(),
        2,
        "{text}"
    );
}

#[test]
fn trace_datapath_actions_leave_out_ports_the_switch_lacks() {
    // The switch has ports 1 to 4: output:9 goes nowhere, as Open
    // vSwitch's translation drops it, in the first pass and after a ct.
    let mut p = pipeline(&[
        "table=0,priority=10,ip,ct_state=-trk,actions=output:9,ct(table=1),output:2",
        "table=1,priority=10,ip,actions=output:9,output:3",
    ]);
    let snap = p.snapshot();
    let syn = tcp(L, R, 40000, 80, 100, 0, 0x02);
    let mut t = pipeline::trace::trace(&snap, 1, &syn);
    assert_eq!(
        t.datapath_actions_blocks(),
        ["9,ct,recirc(0x1),2", "9,3"],
        "without the ports, every output is written"
    );
    t.set_ports(vec![1, 2, 3, 4]);
    assert_eq!(t.datapath_actions_blocks(), ["ct,recirc(0x1),2", "3"]);
}
