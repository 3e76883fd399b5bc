//! Action lists a hostile controller can install or send, over packets
//! they do not fit: nothing panics, what validation can know is refused
//! with the spec's error, and what only the packet tells is skipped and
//! counted.

use ofp::error::{BadActionCode, ErrorCode};
use ofp::msg::group::GroupModCommand;
use ofp::oxm::{MatchEntry, Oxm, OxmField};
use ofp::port::port_no;
use ofp::text::{parse_actions, parse_flow_mod, parse_group_mod};
use ofp::Action;
use packet::wire::build::{self as wb, Ip, IpFields, Transport};
use pipeline::{Config, Pipeline, PortState, Worker};
use proptest::prelude::*;

/// A 42-byte ARP request, the frame of the original report.
fn arp() -> Vec<u8> {
    let sha = 0x0200_0000_0001;
    let body = wb::arp(1, sha, 0x0a00_0001, 0, 0x0a00_0002);
    let f = wb::ethernet(0xffff_ffff_ffff, sha, None, 0x0806, &body);
    assert_eq!(f.len(), 42);
    f
}

fn pipeline() -> Pipeline {
    let mut p = Pipeline::new(Config::default());
    for n in 1..=3 {
        p.set_port(PortState::up(n));
    }
    p
}

fn add_group(p: &mut Pipeline, s: &str) -> Result<(), ofp::OfpError> {
    let mut g = parse_group_mod(s).unwrap();
    g.command = GroupModCommand::Add;
    p.group_mod(&g, 0).map(|_| ())
}

const TO_V6: &str = "set_field:0x86dd->eth_type,set_field:2001:db8::1->ipv6_src,output:2";

#[test]
fn the_reported_bucket_is_skipped_and_counted_not_a_panic() {
    let mut p = pipeline();
    add_group(&mut p, &format!("group_id=1,type=all,bucket={TO_V6}")).unwrap();
    p.flow_mod(&parse_flow_mod("priority=1,actions=group:1").unwrap(), 0)
        .unwrap();
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = arp();
    let outs = w.process(&snap, 1, &mut f, 0).to_vec();
    assert_eq!(outs.iter().map(|o| o.port).collect::<Vec<_>>(), [2]);
    assert_eq!(w.skipped_edits(), 1, "the ipv6_src edit had no header");
    let sent = outs[0].data.as_deref().unwrap_or(&f);
    assert_eq!(
        &sent[12..14],
        &[0x86, 0xdd],
        "the eth_type edit was applied"
    );
    // A trace of the same packet tells it and changes nothing.
    let t = pipeline::trace::trace(&snap, 1, &arp());
    let text = t.text(1);
    assert!(
        text.contains("skipped: the packet has no such header"),
        "{text}"
    );
}

#[test]
fn packet_out_actions_are_checked_against_the_packet() {
    let p = pipeline();
    let check = |acts: &str, frame: &[u8]| {
        p.check_packet_out(&parse_actions(acts).unwrap(), frame, port_no::CONTROLLER)
            .map_err(|e| e.code)
    };
    let inconsistent = Err(ErrorCode::BadAction(BadActionCode::MatchInconsistent));
    assert_eq!(
        check("set_field:2001:db8::1->ipv6_src,output:2", &arp()),
        inconsistent
    );
    assert_eq!(check("set_field:1->tcp_src,output:2", &arp()), inconsistent);
    assert_eq!(
        check("set_field:4101->vlan_vid,output:2", &arp()),
        inconsistent
    );
    assert_eq!(check("set_field:2->arp_op,output:2", &arp()), Ok(()));
    assert_eq!(
        check(
            "push_vlan:0x8100,set_field:4101->vlan_vid,output:table",
            &arp()
        ),
        Ok(())
    );
    // A truncated ARP body has no ARP fields to set.
    assert_eq!(
        check("set_field:2->arp_op,output:2", &arp()[..30]),
        inconsistent
    );
    // After a push, what is under the new header is out of reach.
    assert_eq!(
        check(
            "push_mpls:0x8847,set_field:1.2.3.4->arp_spa,output:2",
            &arp()
        ),
        inconsistent
    );
    // The reported list passes (the type is IPv6 by then); run, the edit
    // is skipped because the 42-byte frame has no IPv6 header.
    assert_eq!(check(TO_V6, &arp()), Ok(()));
    let snap = pipeline().snapshot();
    let mut w = Worker::new(0);
    let outs = w.packet_out(
        &snap,
        port_no::CONTROLLER,
        &parse_actions(TO_V6).unwrap(),
        &mut arp(),
        0,
    );
    assert_eq!(outs.len(), 1);
    assert_eq!(w.skipped_edits(), 1);
}

#[test]
fn header_fields_after_a_layout_change_are_refused_in_flows() {
    let mut p = pipeline();
    for (flow, ok) in [
        ("tcp,actions=set_field:1->tcp_src,output:2", true),
        (
            "tcp,actions=push_mpls:0x8847,set_field:1->tcp_src,output:2",
            false,
        ),
        (
            "tcp,actions=push_mpls:0x8847,set_field:1.2.3.4->ipv4_src,output:2",
            false,
        ),
        (
            "tcp,actions=set_field:0x0806->eth_type,set_field:1->tcp_src,output:2",
            false,
        ),
        (
            "tcp,actions=set_field:17->ip_proto,set_field:1->udp_src,output:2",
            true,
        ),
        (
            "tcp,actions=set_field:17->ip_proto,set_field:1->tcp_src,output:2",
            false,
        ),
        (
            "mpls,actions=pop_mpls:0x0800,set_field:1.2.3.4->ipv4_src,output:2",
            true,
        ),
        ("arp,actions=set_field:1->ip_dscp,output:2", false),
        // A pop needs tagged packets (Open vSwitch under OpenFlow 1.1+):
        // a tag in the match, or a push before it.
        ("actions=pop_vlan,output:2", false),
        ("dl_vlan=0xffff,actions=strip_vlan,output:2", false),
        ("actions=write_actions(pop_vlan,output:2)", false),
        ("dl_vlan=5,actions=pop_vlan,output:2", true),
        ("vlan_tci=0x1000/0x1000,actions=pop_vlan,output:2", true),
        ("actions=push_vlan:0x8100,pop_vlan,output:2", true),
        ("dl_vlan=5,actions=pop_vlan,pop_vlan,output:2", false),
    ] {
        let r = p.flow_mod(&parse_flow_mod(flow).unwrap(), 0);
        match ok {
            true => assert!(r.is_ok(), "{flow}: {r:?}"),
            false => assert_eq!(
                r.map(|_| ()).map_err(|e| e.code),
                Err(ErrorCode::BadAction(BadActionCode::MatchInconsistent)),
                "{flow}"
            ),
        }
    }
}

/// From an OpenFlow 1.0 peer (the agent sets `of10_edits`), as Open
/// vSwitch: strip_vlan and the IP edits whatever the match, doing nothing
/// to packets without the header; a load (NXAST_REG_LOAD, strict in every
/// version in Open vSwitch) and transport ports still need the match.
#[test]
fn an_openflow_1_0_peers_ip_edits_need_nothing_in_the_match() {
    let mut p = pipeline();
    p.of10_edits = true;
    for (flow, ok) in [
        ("arp,actions=set_field:12->ip_dscp,output:2", true),
        (
            "arp,actions=set_field:1.2.3.4->ipv4_src,set_field:5.6.7.8->ipv4_dst,output:2",
            true,
        ),
        (
            "actions=set_field:1->ip_ecn,set_field:9->nw_ttl,output:2",
            true,
        ),
        ("actions=strip_vlan,output:2", true),
        (
            "arp,actions=load:0x1020304->NXM_OF_IP_SRC[],output:2",
            false,
        ),
        ("arp,actions=set_field:80->tcp_dst,output:2", false),
        (
            "arp,actions=set_field:1->arp_op,set_field:4->ip_proto,output:2",
            false,
        ),
    ] {
        let r = p.flow_mod(&parse_flow_mod(flow).unwrap(), 0);
        match ok {
            true => assert!(r.is_ok(), "{flow}: {r:?}"),
            false => assert_eq!(
                r.map(|_| ()).map_err(|e| e.code),
                Err(ErrorCode::BadAction(BadActionCode::MatchInconsistent)),
                "{flow}"
            ),
        }
    }
    p.of10_edits = false;
    assert!(p
        .flow_mod(
            &parse_flow_mod("arp,actions=set_field:12->ip_dscp,output:2").unwrap(),
            0
        )
        .is_err());
    // An ARP packet through the first flow: sent, unchanged.
    let mut p = pipeline();
    p.of10_edits = true;
    p.flow_mod(
        &parse_flow_mod("arp,actions=set_field:12->ip_dscp,output:2").unwrap(),
        0,
    )
    .unwrap();
    let snap = p.snapshot();
    let mut w = Worker::new(0);
    let mut f = arp();
    let outs: Vec<_> = w
        .process(&snap, 1, &mut f, 0)
        .iter()
        .map(|o| o.port)
        .collect();
    assert_eq!(outs, vec![2]);
    assert_eq!(f, arp());
    assert_eq!(w.skipped_edits(), 1);
}

#[test]
fn buckets_refuse_what_their_own_actions_rule_out() {
    let mut p = pipeline();
    // Unknown packets: the edit waits for run time.
    add_group(
        &mut p,
        "group_id=1,type=all,bucket=set_field:1->tcp_src,output:2",
    )
    .unwrap();
    // The bucket itself made the packet MPLS: a TCP port cannot follow.
    let r = add_group(
        &mut p,
        "group_id=2,type=all,bucket=push_mpls:0x8847,set_field:1->tcp_src,output:2",
    );
    assert_eq!(
        r.map_err(|e| e.code),
        Err(ErrorCode::BadAction(BadActionCode::MatchInconsistent))
    );
}

/// Frames of every kind the parser knows, whole and cut short.
fn frames() -> Vec<Vec<u8>> {
    use etherparse::PacketBuilder;
    let (s, d) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let mut v = vec![arp()];
    let mut b = Vec::new();
    PacketBuilder::ethernet2(s, d)
        .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 9)
        .tcp(1, 2, 3, 4)
        .write(&mut b, b"x")
        .unwrap();
    v.push(b);
    let mut b = Vec::new();
    PacketBuilder::ethernet2(s, d)
        .single_vlan(5.try_into().unwrap())
        .ipv4([1, 1, 1, 1], [2, 2, 2, 2], 9)
        .udp(1, 2)
        .write(&mut b, b"x")
        .unwrap();
    v.push(b);
    // A neighbour solicitation (target ::) with a source link-layer
    // address option.
    let t = Transport::Icmp {
        v6: true,
        ty: 135,
        code: 0,
        rest: [0; 4],
    };
    let body = wb::nd([0; 16], Some((1, wb::mac(s))));
    let fields = IpFields {
        ttl: 9,
        ..IpFields::default()
    };
    let ip = wb::ip(Ip::V6([0x20; 16]), Ip::V6([0x21; 16]), &fields, &t, &body);
    v.push(wb::ethernet(wb::mac(d), wb::mac(s), None, 0x86dd, &ip));
    // MPLS over IPv4 (label 1, bottom of stack, TTL 64), and a PBB frame
    // (I-SID 1) around the IPv4 one.
    let lse = wb::mpls(1, 0, true, 64);
    let m = [&lse[..], &v[1][14..]].concat();
    v.push(wb::ethernet(wb::mac(d), wb::mac(s), None, 0x8847, &m));
    let pbb = [&wb::itag(0, false, false, 1)[..], &v[1]].concat();
    v.push(wb::ethernet(
        0x0200_0000_0009,
        0x0200_0000_0008,
        None,
        0x88e7,
        &pbb,
    ));
    let cut: Vec<Vec<u8>> = v
        .iter()
        .flat_map(|f| (0..f.len()).step_by(3).map(|n| f[..n].to_vec()))
        .collect();
    v.extend(cut);
    v
}

/// Every settable field, and every action that changes the layout.
fn every_action() -> Vec<Action> {
    use OxmField as F;
    let mut v: Vec<Action> = [
        F::EthDst,
        F::EthSrc,
        F::EthType,
        F::VlanVid,
        F::VlanPcp,
        F::IpDscp,
        F::IpEcn,
        F::IpProto,
        F::Ipv4Src,
        F::Ipv4Dst,
        F::TcpSrc,
        F::TcpDst,
        F::UdpSrc,
        F::UdpDst,
        F::SctpSrc,
        F::SctpDst,
        F::Icmpv4Type,
        F::Icmpv4Code,
        F::ArpOp,
        F::ArpSpa,
        F::ArpTpa,
        F::ArpSha,
        F::ArpTha,
        F::Ipv6Src,
        F::Ipv6Dst,
        F::Ipv6Flabel,
        F::Icmpv6Type,
        F::Icmpv6Code,
        F::Ipv6NdTarget,
        F::Ipv6NdSll,
        F::Ipv6NdTll,
        F::MplsLabel,
        F::MplsTc,
        F::MplsBos,
        F::PbbIsid,
    ]
    .into_iter()
    .map(|f| Action::SetField(MatchEntry::Basic(Oxm::exact(f, 1))))
    .collect();
    for t in [0x0800u128, 0x86dd, 0x0806, 0x8847, 0x88e7] {
        v.push(Action::SetField(MatchEntry::Basic(Oxm::exact(
            OxmField::EthType,
            t,
        ))));
    }
    v.extend([
        Action::PushVlan(0x8100),
        Action::PopVlan,
        Action::PushMpls(0x8847),
        Action::PopMpls(0x0800),
        Action::PopMpls(0x86dd),
        Action::PushPbb(0x88e7),
        Action::PopPbb,
        Action::DecNwTtl,
        Action::SetNwTtl(1),
        Action::DecMplsTtl,
        Action::SetMplsTtl(0),
        Action::CopyTtlIn,
        Action::CopyTtlOut,
    ]);
    v
}

#[test]
fn every_pair_of_actions_over_every_frame_runs_without_panic() {
    let snap = pipeline().snapshot();
    let mut w = Worker::new(0);
    let acts = every_action();
    let frames = frames();
    for a in &acts {
        for b in &acts {
            let list = [
                a.clone(),
                b.clone(),
                Action::Output {
                    port: 2,
                    max_len: 0,
                },
            ];
            for f in &frames {
                let mut f = f.clone();
                let _ = w.packet_out(&snap, 1, &list, &mut f, 0);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
    #[test]
    fn random_action_lists_over_random_frames_run_without_panic(
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        value in any::<u128>(),
        fi in any::<prop::sample::Index>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let acts = every_action();
        let list: Vec<Action> = picks
            .iter()
            .map(|i| match acts[i.index(acts.len())].clone() {
                Action::SetField(MatchEntry::Basic(o)) if o.field != OxmField::EthType => {
                    Action::SetField(MatchEntry::Basic(Oxm::exact(o.field, value)))
                }
                a => a,
            })
            .chain([Action::Output { port: 2, max_len: 0 }])
            .collect();
        let frames = frames();
        let mut f = frames[fi.index(frames.len())].clone();
        for (at, b) in flips {
            if !f.is_empty() {
                let n = at.index(f.len());
                f[n] = b;
            }
        }
        let snap = pipeline().snapshot();
        let mut w = Worker::new(0);
        let _ = w.packet_out(&snap, 1, &list, &mut f.clone(), 0);
        // The same list as a bucket, reached by a flow, and traced.
        let mut p = pipeline();
        let g = ofp::msg::group::GroupMod::new(
            GroupModCommand::Add,
            ofp::msg::group::GroupType::All,
            1,
            vec![ofp::msg::group::Bucket {
                actions: list,
                ..Default::default()
            }],
        );
        if p.group_mod(&g, 0).is_ok() {
            p.flow_mod(&parse_flow_mod("priority=1,actions=group:1").unwrap(), 0).unwrap();
            let snap = p.snapshot();
            let _ = w.process(&snap, 1, &mut f.clone(), 0);
            let _ = pipeline::trace::trace(&snap, 1, &f);
        }
    }
}

fn set(field: OxmField, v: u128) -> Vec<Action> {
    vec![
        Action::SetField(MatchEntry::Basic(Oxm::exact(field, v))),
        Action::Output {
            port: 2,
            max_len: 0,
        },
    ]
}

fn run_out(acts: &[Action], f: &[u8]) -> (Vec<u8>, u64) {
    let snap = pipeline().snapshot();
    let mut w = Worker::new(0);
    let mut f = f.to_vec();
    let outs = w.packet_out(&snap, 1, acts, &mut f, 0);
    (outs[0].data.clone().unwrap_or(f), w.skipped_edits())
}

#[test]
fn sctp_crc_covers_the_segment_not_the_ethernet_padding() {
    // IPv4 + SCTP common header + SHUTDOWN_COMPLETE chunk (16 bytes),
    // padded to 60 bytes as Ethernet does.
    let t = Transport::Sctp { sport: 7, dport: 9 };
    let (a, b) = (Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]));
    let ip = wb::ip(a, b, &IpFields::default(), &t, &[14, 0, 0, 4]);
    let mut f = wb::ethernet(0x0200_0000_0002, 0x0200_0000_0001, None, 0x0800, &ip);
    f.resize(60, 0);
    let (out, skipped) = run_out(&set(OxmField::SctpSrc, 99), &f);
    assert_eq!(skipped, 0);
    let seg = &out[34..50];
    assert_eq!(&seg[..2], &[0, 99]);
    let mut zeroed = seg.to_vec();
    zeroed[8..12].fill(0);
    assert_eq!(
        &seg[8..12],
        &packet::checksum::sctp(&zeroed),
        "CRC over the 16-byte segment"
    );
}

#[test]
fn nd_fields_are_only_set_on_neighbour_discovery_messages() {
    use etherparse::PacketBuilder;
    let mut echo = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv6([0x20; 16], [0x21; 16], 9)
        .icmpv6_echo_request(1, 2)
        .write(&mut echo, &[1u8; 32])
        .unwrap();
    for field in [
        OxmField::Ipv6NdTarget,
        OxmField::Ipv6NdSll,
        OxmField::Ipv6NdTll,
    ] {
        let (out, skipped) = run_out(
            &set(field, 0xfe80_0000_0000_0000_0000_0000_0000_0001),
            &echo,
        );
        assert_eq!((out.as_slice(), skipped), (echo.as_slice(), 1), "{field:?}");
    }
}

#[test]
fn a_udp_datagram_without_a_checksum_keeps_none_over_ipv6() {
    use etherparse::PacketBuilder;
    let mut f = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv6([0x20; 16], [0x21; 16], 9)
        .udp(4789, 4789)
        .write(&mut f, b"tunnel")
        .unwrap();
    f[60..62].fill(0); // no checksum (RFC 6935)
    let (out, _) = run_out(&set(OxmField::UdpSrc, 1), &f);
    assert_eq!(&out[54..56], &[0, 1]);
    assert_eq!(&out[60..62], &[0, 0]);
}
