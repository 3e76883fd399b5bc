//! Tunnel metadata through the pipeline: matching `tun_id`, `tun_src`,
//! `tun_dst` of a packet from a tunnel port, setting them (set_field,
//! Nicira load and move) for the tunnel port an output goes to, and the
//! metadata staying with its copy of the packet (group buckets).

use etherparse::PacketBuilder;
use ofp::action::{LoadForm, RegLoad, RegMove};
use ofp::error::{BadActionCode, ErrorCode};
use ofp::oxm::OxmField;
use ofp::text::parse_flow_mod;
use ofp::{Action, Instruction};
use packet::TunnelMeta;
use pipeline::{Config, Output, Pipeline, PortState, Worker};

fn tagged_udp() -> Vec<u8> {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .single_vlan(etherparse::VlanId::try_new(5).unwrap())
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(5000, 53);
    let mut v = Vec::new();
    b.write(&mut v, b"query").unwrap();
    v
}

fn pipeline(flows: &[&str]) -> Pipeline {
    let mut p = Pipeline::new(Config {
        n_tables: 4,
        ..Config::default()
    });
    for n in [1, 2, 100] {
        p.set_port(PortState::up(n));
    }
    for f in flows {
        let fm = parse_flow_mod(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        p.flow_mod(&fm, 0).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    p
}

fn run(p: &mut Pipeline, in_port: u32, tun: &TunnelMeta, frame: &mut Vec<u8>) -> Vec<Output> {
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    w.process_tunneled(&snap, in_port, tun, &[], frame, 1_000)
        .to_vec()
}

fn load(dst: OxmField, ofs: u16, n_bits: u16, value: u128) -> Action {
    Action::RegLoad(RegLoad {
        dst,
        ofs,
        n_bits,
        value,
        form: LoadForm::RegLoad,
    })
}

/// Adds a flow whose actions are `actions` (built, not parsed).
fn add(p: &mut Pipeline, head: &str, actions: Vec<Action>) -> Result<(), ofp::OfpError> {
    let mut fm = parse_flow_mod(&format!("{head},actions=drop")).unwrap();
    fm.instructions = vec![Instruction::ApplyActions(actions)];
    p.flow_mod(&fm, 0).map(|_| ())
}

const V4: fn([u8; 4]) -> u32 = u32::from_be_bytes;

#[test]
fn a_packet_from_a_tunnel_matches_its_vni_and_endpoints() {
    let mut p = pipeline(&[
        "priority=10,in_port=100,tun_id=21,tun_src=192.0.2.2,tun_dst=192.0.2.1,actions=output:1",
        "priority=5,in_port=100,tun_id=22,actions=output:2",
        "priority=0,actions=drop",
    ]);
    let t = |id, src| TunnelMeta {
        id,
        ipv4_src: V4(src),
        ipv4_dst: V4([192, 0, 2, 1]),
        ..TunnelMeta::default()
    };
    let ports = |o: Vec<Output>| o.iter().map(|o| o.port).collect::<Vec<_>>();
    let f = tagged_udp();
    assert_eq!(
        ports(run(&mut p, 100, &t(21, [192, 0, 2, 2]), &mut f.clone())),
        [1]
    );
    assert_eq!(
        ports(run(&mut p, 100, &t(21, [192, 0, 2, 3]), &mut f.clone())),
        Vec::<u32>::new()
    );
    assert_eq!(
        ports(run(&mut p, 100, &t(22, [192, 0, 2, 3]), &mut f.clone())),
        [2]
    );
    // The same frame from a plain port carries no tunnel metadata.
    assert_eq!(
        ports(run(&mut p, 1, &TunnelMeta::default(), &mut f.clone())),
        Vec::<u32>::new()
    );
}

#[test]
fn the_agents_flow_sets_the_vni_and_endpoint_of_its_output() {
    // strip_vlan,load:21->NXM_NX_TUN_ID[],set_field:10.10.10.10->tun_dst,output:100
    let mut p = pipeline(&[]);
    add(
        &mut p,
        "priority=100,dl_vlan=5,dl_dst=02:00:00:00:00:02",
        vec![
            Action::PopVlan,
            load(OxmField::TunnelId, 0, 64, 21),
            parse_action("set_field:10.10.10.10->tun_dst"),
            Action::Output {
                port: 100,
                max_len: 0,
            },
        ],
    )
    .unwrap();
    let mut f = tagged_udp();
    let outs = run(&mut p, 1, &TunnelMeta::default(), &mut f);
    assert_eq!(outs.len(), 1);
    assert_eq!(outs[0].port, 100);
    assert_eq!(outs[0].tunnel.id, 21);
    assert_eq!(outs[0].tunnel.ipv4_dst, V4([10, 10, 10, 10]));
    // The tag is gone.
    assert_eq!(&f[12..14], &[0x08, 0x00]);
}

fn parse_action(s: &str) -> Action {
    ofp::text::parse_action(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

#[test]
fn partial_loads_and_moves_write_only_their_bits() {
    let mut p = pipeline(&[]);
    add(
        &mut p,
        "priority=1,ip",
        vec![
            load(OxmField::TunIpv4Dst, 0, 8, 9),
            // eth_src -> the low 48 bits of tun_id.
            Action::RegMove(RegMove {
                src: OxmField::EthSrc,
                src_ofs: 0,
                dst: OxmField::TunnelId,
                dst_ofs: 0,
                n_bits: 48,
            }),
            // The low byte of ipv4_src into the low byte of ipv4_dst.
            Action::RegMove(RegMove {
                src: OxmField::Ipv4Src,
                src_ofs: 0,
                dst: OxmField::Ipv4Dst,
                dst_ofs: 0,
                n_bits: 8,
            }),
            Action::Output {
                port: 100,
                max_len: 0,
            },
        ],
    )
    .unwrap();
    let mut f = tagged_udp();
    let tun = TunnelMeta {
        ipv4_dst: V4([10, 1, 1, 1]),
        ..TunnelMeta::default()
    };
    let outs = run(&mut p, 2, &tun, &mut f);
    assert_eq!(outs[0].tunnel.ipv4_dst, V4([10, 1, 1, 9]));
    assert_eq!(outs[0].tunnel.id, 0x0200_0000_0001);
    // ipv4_dst 10.0.0.2 took ipv4_src's low byte (1); the IP sum follows.
    let ip = 18; // after the VLAN tag
    assert_eq!(&f[ip + 16..ip + 20], &[10, 0, 0, 1]);
    assert_eq!(packet::checksum::internet(&f[ip..ip + 20]), 0);
}

#[test]
fn a_load_in_an_action_set_and_a_bucket_keep_their_own_metadata() {
    let mut p = pipeline(&[]);
    let mut gm = ofp::text::parse_group_mod(
        "group_id=1,type=all,bucket=set_field:10.0.0.9->tun_dst,output:100,bucket=output:2",
    )
    .unwrap();
    gm.command = ofp::msg::group::GroupModCommand::Add;
    p.group_mod(&gm, 0).unwrap();
    let mut fm = parse_flow_mod("priority=1,actions=group:1").unwrap();
    fm.instructions = vec![Instruction::WriteActions(vec![
        load(OxmField::TunnelId, 0, 24, 0x77),
        Action::Group(1),
    ])];
    p.flow_mod(&fm, 0).unwrap();
    let outs = run(&mut p, 1, &TunnelMeta::default(), &mut tagged_udp());
    assert_eq!(outs.len(), 2);
    assert_eq!(
        (outs[0].port, outs[0].tunnel.id, outs[0].tunnel.ipv4_dst),
        (100, 0x77, V4([10, 0, 0, 9]))
    );
    // The second bucket does not see the first one's tun_dst.
    assert_eq!(
        (outs[1].port, outs[1].tunnel.id, outs[1].tunnel.ipv4_dst),
        (2, 0x77, 0)
    );
}

#[test]
fn loads_and_moves_are_checked_against_the_match() {
    let mut p = pipeline(&[]);
    // ipv4_dst needs an IPv4 match.
    let e = add(&mut p, "priority=1", vec![load(OxmField::Ipv4Dst, 0, 8, 1)]).unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::BadAction(BadActionCode::MatchInconsistent)
    );
    let mv = Action::RegMove(RegMove {
        src: OxmField::Ipv4Src,
        src_ofs: 0,
        dst: OxmField::TunnelId,
        dst_ofs: 0,
        n_bits: 32,
    });
    let e = add(&mut p, "priority=1", vec![mv.clone()]).unwrap_err();
    assert_eq!(
        e.code,
        ErrorCode::BadAction(BadActionCode::MatchInconsistent)
    );
    add(&mut p, "priority=1,ip", vec![mv.clone()]).unwrap();
    // A move may be in an action set, as in Open vSwitch.
    let mut fm = parse_flow_mod("priority=2,ip,actions=drop").unwrap();
    fm.instructions = vec![Instruction::WriteActions(vec![mv])];
    p.flow_mod(&fm, 0).unwrap();
    // Tunnel fields need nothing.
    add(
        &mut p,
        "priority=3",
        vec![load(OxmField::TunIpv6Dst, 0, 128, 1)],
    )
    .unwrap();
}

#[test]
fn trace_shows_the_tunnel_an_output_goes_into() {
    let mut p = pipeline(&["priority=1,tun_id=5,actions=set_field:192.0.2.9->tun_dst,output:100"]);
    let snap = p.snapshot();
    let tun = TunnelMeta {
        id: 5,
        ..TunnelMeta::default()
    };
    let t = pipeline::trace::trace_tunneled(&snap, 2, &tun, &tagged_udp());
    let text = t.text(2);
    assert!(text.contains("tun_id=0x5"), "{text}");
    assert_eq!(
        t.datapath_actions(),
        "set(tunnel(tun_id=0x5,dst=192.0.2.9)),100"
    );
}

#[test]
fn an_action_set_keeps_every_load_in_order() {
    // A 128-bit load is two 64-bit REG_LOADs to the same field (as
    // ovs-ofctl writes it): both must apply.
    let mut p = pipeline(&[]);
    let mut fm = parse_flow_mod("priority=1,actions=drop").unwrap();
    fm.instructions = vec![Instruction::WriteActions(vec![
        load(OxmField::TunIpv6Dst, 64, 64, 0x2001_0db8_0000_0000),
        load(OxmField::TunIpv6Dst, 0, 64, 0x99),
        Action::RegMove(RegMove {
            src: OxmField::TunIpv6Dst,
            src_ofs: 0,
            dst: OxmField::TunnelId,
            dst_ofs: 8,
            n_bits: 8,
        }),
        Action::Output {
            port: 100,
            max_len: 0,
        },
    ])];
    p.flow_mod(&fm, 0).unwrap();
    let outs = run(&mut p, 1, &TunnelMeta::default(), &mut tagged_udp());
    let want: u128 = 0x2001_0db8_0000_0000_0000_0000_0000_0099;
    assert_eq!(outs[0].tunnel.ipv6_dst, want.to_be_bytes());
    assert_eq!(outs[0].tunnel.id, 0x9900);
}

#[test]
fn a_packet_is_never_tunnelled_back_to_the_address_it_arrived_at() {
    // Flooding between two flow-based tunnel ports would otherwise loop
    // through this host for ever.
    let mut p = pipeline(&["priority=1,actions=output:100,output:1"]);
    let tun = TunnelMeta {
        id: 7,
        ipv4_src: V4([192, 0, 2, 2]),
        ipv4_dst: V4([192, 0, 2, 1]),
        ..TunnelMeta::default()
    };
    let outs = run(&mut p, 2, &tun, &mut tagged_udp());
    assert_eq!(outs.len(), 2);
    assert_eq!((outs[0].tunnel.id, outs[0].tunnel.ipv4_dst), (7, 0));
    // A flow that names a destination is obeyed.
    let mut p = pipeline(&["priority=1,actions=set_field:192.0.2.3->tun_dst,output:100"]);
    let outs = run(&mut p, 2, &tun, &mut tagged_udp());
    assert_eq!(outs[0].tunnel.ipv4_dst, V4([192, 0, 2, 3]));
}

#[test]
fn a_bucket_leaves_the_key_as_the_next_table_needs_it() {
    // The bucket's move re-extracts the key from its copy of the packet;
    // the outer packet (ip_dst already rewritten) must be looked up as it
    // is, and the bucket's metadata stays in the bucket.
    let mut p = pipeline(&[
        "table=1,priority=2,ip,nw_dst=10.0.0.9,metadata=0,actions=output:1",
        "table=1,priority=0,actions=output:2",
    ]);
    let mut gm = ofp::text::parse_group_mod("group_id=1,type=all,bucket=output:100").unwrap();
    gm.buckets[0].actions.insert(
        0,
        Action::RegMove(RegMove {
            src: OxmField::Ipv4Src,
            src_ofs: 0,
            dst: OxmField::TunIpv4Dst,
            dst_ofs: 0,
            n_bits: 32,
        }),
    );
    gm.buckets[0]
        .actions
        .insert(0, load(OxmField::Metadata, 0, 8, 1));
    p.group_mod(&gm, 0).unwrap();
    let mut fm = parse_flow_mod("priority=1,ip,actions=drop").unwrap();
    fm.instructions = vec![
        Instruction::ApplyActions(vec![
            parse_action("set_field:10.0.0.9->ip_dst"),
            Action::Group(1),
        ]),
        Instruction::GotoTable(1),
    ];
    p.flow_mod(&fm, 0).unwrap();
    let outs = run(&mut p, 2, &TunnelMeta::default(), &mut tagged_udp());
    let ports: Vec<u32> = outs.iter().map(|o| o.port).collect();
    assert_eq!(ports, [100, 1]);
    assert_eq!(outs[0].tunnel.ipv4_dst, V4([10, 0, 0, 1]));
}
