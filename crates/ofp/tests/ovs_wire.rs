//! Differential test against Open vSwitch's own encoder and printer.
//!
//! For each flow below, `ovs-ofctl -O OpenFlow13 add-flow` is pointed at a
//! switch this test plays (a unix socket that answers HELLO and BARRIER),
//! and the FLOW_MOD it sends is captured. Then:
//! - sluice's codec decodes those bytes and encodes them back unchanged;
//! - sluice's text parser, given the same flow, builds the same FLOW_MOD:
//!   the same match fields (as a set: the order of OXMs carries no
//!   meaning, and Open vSwitch's order is its own) and, byte for byte,
//!   the same instructions and actions;
//! - sluice prints the decoded flow as `ovs-ofctl parse-flow` prints it.
//!
//! Flows Open vSwitch refuses must be refused by sluice too.
//!
//! Needs `ovs-ofctl` (Debian's openvswitch-common, which `scripts/setup.sh`
//! installs): without it the test fails, it does not skip.

use std::os::unix::net::UnixListener;
use std::process::{Command, Stdio};

use bytes::Bytes;
use ofp::msg::Message;
use ofp::oxm::MatchEntry;
use ofp::text::{format_instructions, format_match, parse_flow_mod};

/// Flows with Open vSwitch's extension fields and actions, as the systems
/// that program it write them.
const FLOWS: &[&str] = &[
    // A field without its prerequisite: ovs-ofctl leaves it out (its
    // normalization) and so does sluice's parser, the rest kept (more
    // in NORMALIZED).
    "ip,tcp_flags=+syn,actions=drop",
    "ip,tp_dst=80,actions=drop",
    // A move of 12 bits to OXM_OF_VLAN_VID[], Open vSwitch's 12-bit field.
    "actions=push_vlan:0x8100,move:NXM_NX_CT_LABEL[64..75]->OXM_OF_VLAN_VID[],output:1",
    "dl_vlan=5,actions=move:OXM_OF_VLAN_VID[]->NXM_NX_REG0[0..11],load:0xfff->OXM_OF_VLAN_VID[]",
    // `0x` with no digits: 0.
    "ct_label=0x/0xffffffff,ct_mark=0x,actions=drop",
    // Registers: matches (xreg/xxreg split into registers), loads, moves.
    "table=1,reg0=1,actions=drop",
    "reg0=0x5/0xf,reg15=7,actions=drop",
    "xreg0=0x100000002,actions=drop",
    "xreg1=0x5/0xff,actions=drop",
    "xxreg0=0x1/0x1,actions=drop",
    "xxreg2=3,actions=drop",
    "xreg0=0x1/0xffffffff00000001,actions=drop",
    "reg6=0x3,reg5=0x4,actions=load:0x5->NXM_NX_REG3[0..7],resubmit(,3)",
    "actions=load:0x1->NXM_NX_REG13[],load:0x2->NXM_NX_REG11[],load:0x3->NXM_NX_REG12[],resubmit(,8)",
    "actions=move:NXM_NX_REG0[]->NXM_NX_XXREG1[10..41]",
    "actions=set_field:5->xreg3",
    "actions=set_field:0x1->reg4",
    "actions=set_field:0x5/0xff->reg3",
    "actions=load:0x1->NXM_NX_XXREG0[5..100]",
    "actions=move:OXM_OF_PKT_REG1[0..31]->NXM_NX_REG15[]",
    "actions=move:NXM_NX_REG14[]->NXM_NX_REG15[],move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[]",
    "actions=load:0xffffffffffffffffffffffffffffffff->NXM_NX_XXREG3[]",
    "actions=move:NXM_NX_XXREG0[]->NXM_NX_XXREG1[]",
    "actions=move:NXM_OF_IN_PORT[]->NXM_NX_REG14[0..15]",
    "ip,reg0=0x8000/0x8000,actions=move:NXM_OF_IP_SRC[]->NXM_NX_REG1[]",
    // Open vSwitch's names of 1.0 actions and its enqueue.
    "dl_vlan=3,actions=set_vlan_vid:5,set_vlan_pcp:3,output:1",
    "mpls,actions=set_mpls_label:5,set_mpls_tc:3,set_mpls_ttl:9,output:1",
    "actions=enqueue:1:2,output:3",
    "actions=enqueue(2,7)",
    "actions=set_queue:3,output:1,pop_queue,output:2",
    "actions=output(port=1,max_len=100),output:2",
    "actions=output(max_len=60,port=LOCAL)",
    // Masked transport ports (the Neutron firewall's port ranges).
    "tcp,tp_dst=0x40/0xfff0,actions=drop",
    "udp,udp_src=0x1000/0xf000,actions=drop",
    "sctp,sctp_dst=80/0xff00,actions=drop",
    "tcp6,tcp_src=0x8000/0x8000,tcp_dst=443/0xffff,actions=drop",
    // Packet mark, TTL, fragments, TCP flags.
    "pkt_mark=7,actions=drop",
    "pkt_mark=0x5/0xff,actions=set_field:0xff->pkt_mark",
    "actions=load:1->NXM_NX_PKT_MARK[3]",
    "ip,nw_ttl=3,actions=drop",
    "ipv6,nw_ttl=1,actions=drop",
    "ip,actions=set_field:3->nw_ttl",
    "ip,ip_frag=no,actions=drop",
    "ip,ip_frag=yes,actions=drop",
    "ip,ip_frag=first,actions=drop",
    "ip,ip_frag=later,actions=drop",
    "ip,ip_frag=not_later,actions=drop",
    "ipv6,nw_frag=later,actions=drop",
    "tcp,tcp_flags=+syn-ack,actions=drop",
    "tcp,tcp_flags=0x012/0x0ff,actions=drop",
    "tcp,tcp_flags=syn,actions=drop",
    "tcp,tcp_flags=syn|ack,actions=drop",
    "tcp,tcp_flags=0,actions=drop",
    "tcp6,tcp_flags=+ns,actions=drop",
    "tcp,tcp_flags=+fin+rst,tp_dst=80,actions=drop",
    // Conjunctive matches.
    "ip,nw_src=10.0.0.1,actions=conjunction(1234,1/2),conjunction(7,3/3)",
    "priority=5,ip,nw_dst=10.0.0.2,actions=conjunction(1234, 2/2)",
    "conj_id=1234,ip,actions=output:3",
    "actions=conjunction(1,64/64)",
    // learn, as Antrea, Neutron and the OVS tutorial write it.
    "tcp,actions=learn(table=12,hard_timeout=100,priority=200,delete_learned,cookie=0x1030000000064,eth_type=0x800,nw_proto=6,NXM_OF_TCP_DST[],NXM_OF_IP_DST[],NXM_OF_IP_SRC[],load:NXM_OF_IP_DST[]->NXM_NX_REG3[],load:NXM_OF_TCP_DST[]->NXM_NX_REG4[0..15],load:0x1->NXM_NX_REG4[16..18],load:0x1->NXM_NX_REG0[19])",
    "actions=learn(table=1,idle_timeout=10,fin_idle_timeout=5,fin_hard_timeout=6,send_flow_rem,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],output:NXM_OF_IN_PORT[],limit=10,result_dst=reg0[1])",
    "actions=learn(table=10,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:NXM_OF_IN_PORT[]->NXM_NX_REG0[0..15]),resubmit(,1)",
    "actions=learn(table=2,hard_timeout=300,priority=1,NXM_OF_VLAN_TCI[0..11],NXM_OF_ETH_DST[]=NXM_OF_ETH_SRC[],load:0->NXM_OF_VLAN_TCI[],load:NXM_NX_TUN_ID[]->NXM_NX_TUN_ID[],output:NXM_OF_IN_PORT[]),output:1",
    "actions=learn(table=0,dl_dst=01:02:03:04:05:06,reg1=0x5)",
    // ovs-ofctl's leniencies: `in_port` as a load destination, `actions=`
    // right after a value.
    "in_port=2,actions=load:0->in_port,2",
    "priority=4,in_port=6actions=drop",
    // The OpenFlow 1.0 VLAN spellings.
    "vlan_tci=0x1005/0x1fff,actions=drop",
    "vlan_tci=0x1000/0x1000,actions=drop",
    "vlan_tci=0/0x1000,actions=drop",
    "vlan_tci=0,actions=drop",
    "vlan_tci=0x3005,actions=drop",
    "dl_vlan=5,dl_vlan_pcp=3,actions=drop",
    // The Nicira actions: note, exit, output:FIELD, dec_ttl(ids), push and
    // pop, clone, sample, controller(...), multipath, bundle.
    "actions=note:01.02.03",
    "actions=note:",
    "actions=note:0102030405060708,output:1",
    "actions=conjunction(1,1/2),note:01.02",
    "actions=exit",
    "actions=exit:1",
    "actions=output:1,exit,output:2",
    "actions=output:NXM_NX_REG0[]",
    "actions=output:NXM_NX_REG0[0..15]",
    "actions=output:reg1[16..31]",
    "actions=output:NXM_NX_TUN_ID[0..31]",
    "actions=output:reg3",
    "ip,actions=dec_ttl",
    "ip,actions=dec_ttl()",
    "ip,actions=dec_ttl(1,2)",
    "ip,actions=dec_ttl(0)",
    "ip,actions=dec_ttl:7",
    "ip,actions=write_actions(dec_ttl(1))",
    "actions=push:NXM_NX_REG0[]",
    "actions=pop:NXM_NX_REG1[0..7]",
    "actions=push:NXM_NX_XXREG0[]",
    "actions=push:reg2[0..5],pop:reg3[8..13]",
    "actions=push:NXM_OF_ETH_SRC[],pop:NXM_NX_REG4[0..31]",
    "actions=clone(output:1)",
    "actions=clone(load:1->NXM_NX_REG0[],output:2),output:3",
    "actions=clone()",
    "actions=clone(drop)",
    "actions=clone(clone(output:1),resubmit(,2))",
    "actions=sample(probability=100)",
    "actions=sample(probability=100,collector_set_id=1,obs_domain_id=2,obs_point_id=3)",
    "actions=sample(probability=65535,collector_set_id=1,obs_domain_id=2,obs_point_id=3,sampling_port=4)",
    "actions=sample(probability=1,sampling_port=4,ingress)",
    "actions=sample(probability=1,egress)",
    "actions=sample(probability=1,sampling_port=local)",
    "actions=controller",
    "actions=controller:100",
    "actions=controller(max_len=100)",
    "actions=controller(reason=no_match)",
    "actions=controller(reason=invalid_ttl,max_len=10,id=3)",
    "actions=controller(id=3)",
    "actions=controller(userdata=01.02.03)",
    "actions=controller(pause)",
    "actions=controller(reason=action_set,max_len=20,id=5,userdata=0102,pause)",
    "actions=controller(meter_id=5)",
    "actions=controller(reason=group)",
    "actions=controller(reason=packet_out)",
    "actions=multipath(eth_src,50,modulo_n,1,0,NXM_NX_REG0[])",
    "actions=multipath(symmetric_l4,1024,hrw,2,0,reg0[0..1])",
    "actions=multipath(symmetric_l3l4+udp,0,iter_hash,5,8,NXM_NX_REG1[16..31])",
    "actions=multipath(nw_src,0,hash_threshold,3,0,reg2[0..1])",
    "actions=multipath(symmetric_l3,7,modulo_n,65536,0,reg5[0..15])",
    "actions=multipath(nw_dst,7,hrw,100,0,reg5)",
    "actions=multipath(symmetric_l3l4,7,hrw,4,0,reg5[2..3])",
    "actions=bundle(eth_src,0,hrw,ofport,members:4,8)",
    "actions=bundle(symmetric_l4,60,active_backup,ofport,slaves:2,3,4)",
    "actions=bundle_load(eth_src,0,hrw,ofport,NXM_NX_REG0[],members:4,8)",
    "actions=bundle_load(nw_src,5,active_backup,ofport,reg1[0..15],members:1)",
    "actions=bundle(eth_src,0,hrw,ofport,members:)",
    "actions=bundle(eth_src,0,hrw,ofport,members:local,in_port)",
    // Everything together, in ovs-ofctl's print order.
    "pkt_mark=0x9,tcp,reg1=0x5,tun_id=0x5,metadata=0x4,in_port=3,dl_vlan=4,dl_src=00:00:00:00:00:01,nw_src=1.2.3.4,nw_tos=4,nw_ecn=1,nw_ttl=4,nw_frag=no,tp_dst=80,tcp_flags=+syn,actions=drop",
    "table=1,reg0=1,xreg1=0x5/0xff,xxreg2=3,pkt_mark=7,nw_ttl=3,ip,ip_frag=first,vlan_tci=0x1005/0x1fff,actions=load:0x5->NXM_NX_REG3[0..7],move:NXM_NX_REG0[]->NXM_NX_XXREG1[10..41],set_field:5->xreg3,set_field:0x1->reg4,set_field:0xff->pkt_mark,resubmit(,3)",
    // Geneve options (tun_metadataN, variable length: ovs-ofctl writes
    // the fewest bytes), as OVN writes them.
    "tun_metadata0=0x2/0xffff,actions=drop",
    "tun_metadata0=0x10002,actions=drop",
    "tun_metadata0=0,actions=drop",
    "tun_metadata3=0x1/0x1,tun_metadata1=0xabcdef0123456789abcdef,actions=drop",
    "tun_id=0x1,in_port=5,actions=move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14],move:NXM_NX_TUN_METADATA0[0..15]->NXM_NX_REG15[0..15],resubmit(,38)",
    "table=37,reg15=0x2,metadata=0x1,actions=load:0x1->NXM_NX_TUN_ID[0..23],set_field:0x10002->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],output:5",
    "actions=load:0x5->NXM_NX_TUN_METADATA7[0..7],set_field:0->tun_metadata1",
];

/// Connection tracking: `ct(...)`, `nat(...)`, `ct_clear` and the `ct_*`
/// fields, as the systems that program Open vSwitch write them (the
/// corpus has the published ones: `ct_flows_of_the_corpus_...` below).
const CT_FLOWS: &[&str] = &[
    "ip,actions=ct(commit,zone=1,exec(load:0x1->NXM_NX_CT_MARK[]),table=2)",
    "ip,actions=ct(table=2,zone=NXM_NX_REG0[0..15])",
    "ip,actions=ct(zone=reg6[16..31],table=3)",
    "ip,actions=ct(commit,force,zone=5,nat(src=10.0.0.1-10.0.0.5:100-200,persistent,random))",
    "ip,actions=ct(commit,nat(src=10.0.0.1:1000,hash))",
    "ip,actions=ct(commit,nat(dst=10.0.0.1-10.0.0.1))",
    "ip,actions=ct(commit,nat(dst=10.0.0.1:80-80))",
    "ip,actions=ct(nat)",
    "ip,actions=ct(exec(nat))",
    "ip,actions=ct(table=3,exec(nat,nat))",
    "ct_nw_src=10.0.0.1,ct_state=+est,ip,actions=drop",
    "ip,actions=ct(table=1,nat)",
    "ip,actions=ct(commit,nat(src))",
    "ip,actions=ct(commit,nat(dst),exec(set_field:1->ct_mark))",
    "ip,actions=ct(commit,nat(src=10.0.0.1),exec(set_field:1->ct_mark,set_field:0x5/0xff->ct_label))",
    "ip,actions=ct(commit,exec(set_field:1->ct_mark),nat(dst=10.0.0.1))",
    "ip,actions=ct(commit,exec(set_field:0x10/0x10->ct_mark))",
    "ip,actions=ct(commit,exec(set_field:0x700000000/0xffffffff00000000->ct_label))",
    "ip,actions=ct(commit,exec(set_field:0x1->ct_label))",
    "ip,actions=ct(commit,exec(load:0x1->NXM_NX_CT_LABEL[0..63],load:0x2->NXM_NX_CT_LABEL[64..127]))",
    "ip,actions=ct(commit,exec(load:0xffffffffffffffffffffffff->NXM_NX_CT_LABEL[]))",
    "ip,actions=ct(commit,exec(move:NXM_NX_REG0[]->NXM_NX_CT_MARK[]))",
    "ip,actions=ct(commit,exec(move:NXM_NX_XXREG0[]->NXM_NX_CT_LABEL[]))",
    "ip,actions=ct(commit,exec(move:NXM_OF_ETH_SRC[]->NXM_NX_CT_LABEL[0..47]))",
    "ip,actions=ct(commit,exec(nat(src=1.1.1.1)))",
    "tcp,actions=ct(commit,alg=ftp)",
    "udp,actions=ct(commit,alg=tftp)",
    "tcp6,actions=ct(commit,table=4,zone=65535,alg=ftp)",
    "ipv6,actions=ct(commit,nat(src=[fe80::1]-[fe80::5]:80))",
    "ipv6,actions=ct(commit,nat(dst=fe80::1))",
    "ipv6,actions=ct(commit,nat(dst=fe80::1-fe80::2))",
    "ipv6,actions=ct(commit,nat(src=[2001:db8::1]:1-65535,random))",
    "ip,actions=ct(),output:1",
    "ip,actions=ct",
    "ip,actions=ct(commit)",
    "ip,actions=ct_clear,ct(table=5)",
    "actions=ct_clear",
    "ip,actions=ct(commit),ct(table=1,zone=2),resubmit(,3)",
    "ip,actions=clone(ct(commit,zone=3))",
    "ip,actions=write_actions(ct(commit))",
    "ip,actions=write_actions(ct_clear)",
    "ip,actions=ct(commit,table=7,zone=NXM_NX_REG13[0..15],nat(dst=10.96.0.1:53),exec(set_field:0x20/0x20->ct_mark,move:NXM_NX_REG0[]->NXM_NX_CT_LABEL[32..63]))",
    // The ct_* fields.
    "ct_state=+trk-new,ip,actions=drop",
    "ct_state=trk|est,ip,actions=drop",
    "ct_state=0x21/0x21,actions=drop",
    "ct_state=0x21,actions=drop",
    "ct_state=0,actions=drop",
    "ct_state=-trk,actions=drop",
    "ct_state=+inv+trk,actions=drop",
    "ct_state=+new-est-rel-rpl-inv+trk-snat-dnat,actions=drop",
    "ct_state=new|est|rel|rpl|inv|trk|snat|dnat,actions=drop",
    "ct_state=+snat+dnat,actions=drop",
    "ct_state=0x80/0xc0,actions=drop",
    "ct_zone=5,ct_mark=0x5/0xff,ct_label=0x1/0x1,actions=drop",
    "ct_zone=65535,actions=drop",
    "ct_mark=5,actions=drop",
    "ct_mark=0/0x10,actions=drop",
    "ct_label=0x1,actions=drop",
    "ct_label=0,actions=drop",
    "ct_label=0x200000000/0xffffffff00000000,actions=drop",
    "ct_label=0x1/0xffffffffffffffffffffffffffffffff,actions=drop",
    "ct_state=+trk+est,ip,ct_nw_src=10.0.0.1,ct_tp_dst=80,ct_nw_proto=6,actions=drop",
    "ct_state=+est,ip,ct_nw_src=10.0.0.0/8,ct_nw_dst=192.168.1.1/255.255.0.255,actions=drop",
    "ct_state=+trk+est,ipv6,ct_ipv6_src=::1,ct_ipv6_dst=2001:db8::/32,actions=drop",
    "ct_state=+rpl,ct_nw_proto=17,ct_tp_src=53,ct_tp_dst=1024/0xfc00,actions=drop",
    "ct_state=+trk-inv,ct_nw_proto=6,actions=drop",
    "ct_state=+trk+est-rpl,ct_mark=0x1/0x1,ip,reg0=0x1,actions=ct(commit,table=1,exec(set_field:0->ct_mark))",
    "pkt_mark=1,conj_id=3,ct_state=+trk,ct_zone=3,ct_mark=3,ct_label=3,tcp,reg1=4,actions=drop",
];

/// ct flows Open vSwitch refuses: sluice must refuse them too.
const CT_REFUSED: &[&str] = &[
    "ip,actions=ct(force)",
    "ip,actions=ct(zone=NXM_NX_REG0[0..7])",
    "ip,actions=ct(zone=NXM_NX_REG16[])",
    "ip,actions=ct(zone=65536)",
    "ip,actions=ct(table=255)",
    "ip,actions=ct(table=256)",
    "ip,actions=ct(alg=99)",
    "ip,actions=ct(alg=http)",
    "ip,actions=ct(bogus)",
    "ip,actions=ct(exec(set_field:1->ct_mark))",
    "ip,actions=ct(nat(src=10.0.0.1))",
    "ip,actions=ct(commit,exec(output:1))",
    "ip,actions=ct(commit,exec(set_field:1->reg0))",
    "ip,actions=ct(commit,exec(load:1->NXM_NX_REG0[]))",
    "ip,actions=ct(commit,exec(move:NXM_NX_CT_MARK[]->NXM_NX_REG0[]))",
    "ip,actions=ct(commit,exec(ct_clear))",
    "ip,actions=ct(commit,exec(ct(commit)))",
    "ip,actions=ct(commit,exec(set_field:1->ct_zone))",
    "ip,actions=ct(commit,exec(set_field:1->ct_state))",
    "ip,actions=nat(src=10.0.0.1)",
    "ip,actions=nat",
    "ip,actions=set_field:1->ct_mark",
    "ip,actions=load:1->NXM_NX_CT_LABEL[]",
    "ip,actions=move:NXM_NX_REG0[]->NXM_NX_CT_MARK[]",
    "ip,actions=clone(set_field:1->ct_mark)",
    "ip,actions=write_actions(nat)",
    "ip,actions=ct(commit,nat(src=10.0.0.1,dst=10.0.0.2))",
    "ip,actions=ct(commit,nat(src=10.0.0.5-10.0.0.1))",
    "ip,actions=ct(commit,nat(src=10.0.0.1:200-100))",
    "ip,actions=ct(commit,nat(src=10.0.0.1,hash,random))",
    "ip,actions=ct(commit,nat(persistent))",
    "ip,actions=ct(commit,nat(src=bogus))",
    "ip,actions=ct(commit,nat(src=10.0.0.1,bogus))",
    "ip,actions=ct(commit,nat(src=10.0.0.1:x))",
    "ct_state=+bogus,actions=drop",
    "ct_state=+trk+trk,actions=drop",
    "ct_state=0x100,actions=drop",
    "ct_zone=5/0xff,actions=drop",
    "ct_zone=65536,actions=drop",
    "ct_nw_proto=6/0xff,actions=drop",
    // What the flow's match must say (Open vSwitch's check_CT, check_NAT
    // and its FLOW_MOD decoder): OFPBAC_MATCH_INCONSISTENT.
    "ip,ct_state=+inv,actions=ct(commit)",
    "actions=ct(commit)",
    "actions=ct(table=1)",
    "arp,actions=ct(table=1,nat)",
    "ip,actions=ct(commit,alg=ftp)",
    "udp,actions=ct(commit,alg=ftp)",
    "tcp,actions=ct(commit,alg=tftp)",
    "ip,actions=ct(commit,nat(src=fe80::1))",
    "ipv6,actions=ct(commit,nat(src=1.1.1.1))",
    "ip,actions=ct(commit,zone=NXM_OF_TCP_SRC[])",
    "ct_state=+est,ct_nw_src=10.0.0.1,actions=drop",
    "ct_state=+est,ipv6,ct_nw_dst=10.0.0.1,actions=drop",
    "ct_state=+est,ip,ct_ipv6_src=::1,actions=drop",
    // A tuple field without a valid connection matched before it:
    // ovs-ofctl sends it, Open vSwitch's decoder refuses it
    // (OFPBMC_BAD_PREREQ).
    "ct_nw_src=10.0.0.1,ip,actions=drop",
    "ct_mark=0x100000000,actions=drop",
];

/// Flows with fields whose prerequisites the match lacks and no
/// eth_type: ovs-ofctl leaves those fields out and, since what is left
/// names no eth_type, sends OpenFlow 1.5's `packet_type=0` (Ethernet) in
/// the 1.3 match, which sluice does not decode. Compared by what
/// `ovs-ofctl parse-flow` prints after its normalization.
const NORMALIZED: &[&str] = &[
    "ip_frag=first,actions=drop",
    "nw_ttl=3,actions=drop",
    "nw_src=1.2.3.4,actions=drop",
    "nw_dst=192.168.1.10 actions=NORMAL",
    "metadata=0x222e0/0xfffffffe,nw_dst=10.0.123.2,tp_dst=8080,actions=write_metadata:0x200/0xfffffffe,goto_table:231",
    "nw_proto=6,tp_dst=80,in_port=3,actions=drop",
    "tp_dst=80,reg0=1,actions=drop",
];

/// ct's tuple fields without a valid connection (ct_state=+est, +new,
/// ..., or +trk-inv) matched before them: ovs-ofctl leaves them out,
/// sluice refuses them (OFPBMC_BAD_PREREQ): a deliberate difference,
/// listed in docs/OVS-DIALECT.md (connection tracking). Fields without
/// their OXM prerequisites are left out by both (in FLOWS).
const PREREQ_DEVIATIONS: &[&str] = &[
    "ct_tp_src=80,actions=drop",
    "ct_state=+trk,ct_tp_dst=80,actions=drop",
    "ct_state=-inv,ct_nw_proto=6,actions=drop",
];

/// Flows Open vSwitch refuses: sluice must refuse them too.
const REFUSED: &[&str] = &[
    "reg16=1,actions=drop",
    "xreg8=1,actions=drop",
    "xxreg4=1,actions=drop",
    "reg0=0x100000000,actions=drop",
    "ip,ip_frag=sometimes,actions=drop",
    "tcp,tcp_flags=+bogus,actions=drop",
    "actions=load:0x1->NXM_NX_REG0[0..32]",
    "actions=load:0x100->NXM_NX_REG0[0..7]",
    "actions=move:NXM_NX_REG0[0..7]->NXM_NX_REG1[0..8]",
    "actions=move:NXM_NX_REG0[]->NXM_NX_REG16[]",
    "actions=conjunction(1,1/1)",
    "actions=conjunction(1,1/65)",
    "actions=conjunction(1,3/2)",
    "actions=conjunction(1,0/2)",
    "actions=conjunction(1,1/2),output:1",
    "conj_id=1/0xf,actions=drop",
    "actions=note:1",
    "actions=note:0x01",
    "actions=output:NXM_NX_REG16[]",
    "actions=output:reg0[0..32]",
    "ip,actions=dec_ttl(,)",
    "actions=push:NXM_NX_REG0[5..40]",
    "actions=pop:reg16",
    "actions=sample(probability=0)",
    "actions=sample(collector_set_id=1)",
    "actions=sample(probability=1,bogus=2)",
    "actions=controller(reason=bogus)",
    "actions=controller(userdata=0g)",
    "actions=controller(bogus)",
    "actions=multipath(eth_src,50,modulo_n,5,0,reg0[0..1])",
    "actions=multipath(eth_src,50,modulo_n,0,0,reg0)",
    "actions=multipath(bogus,50,modulo_n,1,0,reg0)",
    "actions=multipath(eth_src,50,bogus,1,0,reg0)",
    "actions=multipath(eth_src,50,modulo_n,1,0)",
    "actions=bundle(eth_src,0,hrw,ofport,members:controller)",
    "actions=bundle(eth_src,0,bogus,ofport,members:1)",
    "actions=bundle(eth_src,0,hrw,port,members:1)",
    "actions=bundle(eth_src,0,hrw,ofport,1,2)",
    "actions=bundle(eth_src,0,hrw,ofport,members:bogus)",
    "actions=clone(goto_table:1)",
    "actions=conjunction(1,1/2),exit",
];

mod ovs_ofctl;
use ovs_ofctl::{accept_ovs_ofctl, answer_keepalive, ovs_ofctl, read_msg};

/// What ovs-ofctl did with `flow`: the FLOW_MOD it sent, or its error.
fn ovs_flow_mod(flow: &str, dir: &std::path::Path, n: usize) -> Result<Vec<u8>, String> {
    let path = dir.join(format!("sw{n}.sock"));
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path).expect("bind the test switch's socket");
    listener.set_nonblocking(true).unwrap();
    let mut child = Command::new(ovs_ofctl())
        .args(["--no-names", "-O", "OpenFlow13", "add-flow"])
        .arg(format!("unix:{}", path.display()))
        .arg(flow)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ovs-ofctl");
    let mut conn = match accept_ovs_ofctl(&listener, &mut child) {
        Ok(c) => c,
        Err((st, err)) => {
            assert!(!st.success(), "ovs-ofctl exited without connecting: {flow}");
            return Err(err);
        }
    };
    let mut flow_mod = None;
    while let Some(m) = read_msg(&mut conn) {
        // FLOW_MOD; ECHO_REQUEST and BARRIER_REQUEST answered.
        if !answer_keepalive(&mut conn, &m) && m[1] == 14 {
            flow_mod = Some(m);
        }
    }
    let st = child.wait().unwrap();
    assert!(st.success(), "ovs-ofctl failed after connecting: {flow}");
    Ok(flow_mod.unwrap_or_else(|| panic!("ovs-ofctl sent no FLOW_MOD for {flow}")))
}

/// What `ovs-ofctl parse-flow` prints for `flow`: (match, actions).
fn ovs_printed(flow: &str) -> (String, String) {
    let out = Command::new(ovs_ofctl())
        .args(["-O", "OpenFlow13", "parse-flow", flow])
        .output()
        .expect("run ovs-ofctl parse-flow");
    assert!(out.status.success(), "parse-flow {flow}");
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text.lines().last().unwrap();
    let body = line.split_once(": ADD ").expect("an ADD line").1;
    // "table:1 " comes first when the table is not 0.
    let body = match body.strip_prefix("table:") {
        Some(rest) => rest.split_once(' ').unwrap().1,
        None => body,
    };
    let (m, a) = body.rsplit_once("actions=").unwrap();
    // The flow's other attributes (`cookie:0x5`, `idle_timeout:10`,
    // `send_flow_rem`) print beside the match: only the match is compared.
    let m = m
        .split_whitespace()
        .filter(|w| w.contains('=') || !w.contains(':'))
        .filter(|w| {
            !matches!(
                *w,
                "send_flow_rem"
                    | "check_overlap"
                    | "reset_counts"
                    | "no_packet_counts"
                    | "no_byte_counts"
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    (m, a.to_string())
}

fn sorted_match(fm: &ofp::msg::flow::FlowMod) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = fm
        .match_
        .entries
        .iter()
        .map(|e| {
            let mut b = Vec::new();
            e.encode(&mut b);
            b
        })
        .collect();
    v.sort();
    v
}

fn instruction_bytes(fm: &ofp::msg::flow::FlowMod) -> Vec<u8> {
    let mut b = Vec::new();
    for i in &fm.instructions {
        i.encode(&mut b);
    }
    b
}

/// Compares sluice with ovs-ofctl on one flow Open vSwitch takes: the
/// bytes decode and encode back unchanged, the text parses to the same
/// match and instructions, and prints as ovs-ofctl prints it.
fn compare_with_ovs(flow: &str, dir: &std::path::Path, n: usize, failures: &mut Vec<String>) {
    let raw = match ovs_flow_mod(flow, dir, n) {
        Ok(r) => r,
        Err(e) => {
            panic!("Open vSwitch refuses a flow this test expects it to take: {flow}: {e}")
        }
    };
    let theirs = match Message::decode(&Bytes::from(raw.clone())) {
        Ok((_, Message::FlowMod(f))) => f,
        Ok(_) => panic!("not a FLOW_MOD: {flow}"),
        Err(e) => {
            failures.push(format!(
                "{flow}: sluice cannot decode ovs-ofctl's FLOW_MOD: {e}"
            ));
            return;
        }
    };
    let mut again = Vec::new();
    Message::FlowMod(theirs.clone()).encode(
        u32::from_be_bytes([raw[4], raw[5], raw[6], raw[7]]),
        &mut again,
    );
    if again != raw {
        failures.push(format!(
            "{flow}: re-encoding ovs-ofctl's bytes changes them\n{}\n{}",
            raw.iter().map(|b| format!("{b:02x}")).collect::<String>(),
            again.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ));
    }
    let ours = match parse_flow_mod(flow) {
        Ok(f) => f,
        Err(e) => {
            failures.push(format!("{flow}: sluice refuses it: {e}"));
            return;
        }
    };
    if sorted_match(&ours) != sorted_match(&theirs) {
        failures.push(format!(
            "{flow}: match differs\n   ovs:    {:?}\n   sluice: {:?}",
            theirs.match_.entries, ours.match_.entries
        ));
    }
    if instruction_bytes(&ours) != instruction_bytes(&theirs) {
        failures.push(format!(
            "{flow}: instructions differ\n   ovs:    {:?}\n   sluice: {:?}",
            theirs.instructions, ours.instructions
        ));
    }
    let (m, a) = ovs_printed(flow);
    let m = m
        .split(',')
        .filter(|t| !t.starts_with("priority="))
        .collect::<Vec<_>>()
        .join(",");
    let (pm, pa) = (
        format_match(&theirs.match_),
        format_instructions(&theirs.instructions),
    );
    if pm != m {
        failures.push(format!(
            "{flow}: printed match\n   ovs:    {m}\n   sluice: {pm}"
        ));
    }
    if pa != a {
        failures.push(format!(
            "{flow}: printed actions\n   ovs:    {a}\n   sluice: {pa}"
        ));
    }
}

#[test]
fn sluice_encodes_decodes_and_prints_open_vswitch_extension_fields_as_ovs_ofctl() {
    let dir = std::env::temp_dir().join(format!("sluice-ovs-wire-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    for (n, flow) in FLOWS.iter().enumerate() {
        compare_with_ovs(flow, &dir, n, &mut failures);
    }
    for (n, flow) in REFUSED.iter().enumerate() {
        assert!(
            ovs_flow_mod(flow, &dir, 1000 + n).is_err(),
            "Open vSwitch takes a flow this test expects it to refuse: {flow}"
        );
        let sluice = parse_flow_mod(flow).and_then(|fm| {
            Message::FlowMod(fm)
                .validate()
                .map_err(|e| ofp::text::TextError::new(flow, e.to_string()))
        });
        if sluice.is_ok() {
            failures.push(format!("{flow}: Open vSwitch refuses it, sluice takes it"));
        }
    }
    for flow in NORMALIZED {
        let (ovs_match, ovs_actions) = ovs_printed(flow);
        match parse_flow_mod(flow) {
            Ok(fm) => {
                let m = ofp::text::format_match(&fm.match_);
                if m != ovs_match {
                    failures.push(format!(
                        "{flow}: normalized match\n   ovs:    {ovs_match}\n   sluice: {m}"
                    ));
                }
                let a = ofp::text::format_instructions(&fm.instructions);
                if a != ovs_actions {
                    failures.push(format!(
                        "{flow}: actions\n   ovs:    {ovs_actions}\n   sluice: {a}"
                    ));
                }
                if let Err(e) = Message::FlowMod(fm).validate() {
                    failures.push(format!("{flow}: sluice refuses what is left: {e}"));
                }
            }
            Err(e) => failures.push(format!("{flow}: sluice refuses it: {e}")),
        }
    }
    for flow in PREREQ_DEVIATIONS {
        let err = parse_flow_mod(flow)
            .map_err(|e| e.to_string())
            .and_then(|fm| Message::FlowMod(fm).validate().map_err(|e| e.to_string()));
        match err {
            Err(e) if e.contains("PREREQ") || e.contains("prerequisite") => {}
            other => failures.push(format!(
                "{flow}: expected a prerequisite error, got {other:?}"
            )),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn decoded_extension_fields_keep_their_headers() {
    // OXM headers ovs-ofctl 3.1 writes under OpenFlow 1.3 (captured).
    use ofp::oxm::OxmField as F;
    let cases: &[(F, u32)] = &[
        (F::Reg(0), 0x0001_0004),
        (F::Reg(15), 0x0001_1e04),
        (F::XReg(3), 0x8001_0608),
        (F::XXReg(1), 0x0001_e010),
        (F::PktMark, 0x0001_4204),
        (F::NwTtl, 0x0001_3a01),
        (F::IpFrag, 0x0001_3401),
        (F::ConjId, 0x0001_4a04),
        // ONF's experimenter OXM: the length counts the experimenter id.
        (F::TcpFlags, 0xffff_5406),
    ];
    for (f, h) in cases {
        assert_eq!(f.header(false), *h, "{f:?}");
    }
    let _ = MatchEntry::Basic; // the entries compared above are Basic ones
}

#[test]
fn sluice_encodes_decodes_and_prints_connection_tracking_as_ovs_ofctl() {
    let dir = std::env::temp_dir().join(format!("sluice-ovs-ct-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    for (n, flow) in CT_FLOWS.iter().enumerate() {
        compare_with_ovs(flow, &dir, n, &mut failures);
        if let Err(e) = sluice_ct_verdict(flow) {
            failures.push(format!(
                "{flow}: Open vSwitch takes it, sluice's validation refuses it: {e}"
            ));
        }
    }
    for (n, flow) in CT_REFUSED.iter().enumerate() {
        if let Ok(raw) = ovs_flow_mod(flow, &dir, 1000 + n) {
            // ovs-ofctl may write what its own switch refuses on decoding
            // (a `ct` without commit, a tuple field before its ct_state):
            // then the bytes must be refused by sluice's decoder too.
            let verdict = Message::decode(&Bytes::from(raw))
                .and_then(|(_, m)| m.validate().map(|_| m))
                .and_then(|m| match m {
                    Message::FlowMod(fm) => ct_packets_check(&fm),
                    _ => Ok(()),
                });
            if verdict.is_ok() {
                failures.push(format!(
                    "{flow}: ovs-ofctl sends it and sluice takes the bytes (is it in CT_REFUSED by mistake?)"
                ));
            }
        }
        if sluice_ct_verdict(flow).is_ok() {
            failures.push(format!("{flow}: Open vSwitch refuses it, sluice takes it"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// What the pipeline will check of a flow's ct actions against its match
/// (Open vSwitch's `check_CT` and `check_NAT`): [`ofp::ct::Ct::check_packets`].
fn ct_packets_check(fm: &ofp::msg::flow::FlowMod) -> Result<(), ofp::OfpError> {
    let p = ofp::ct::CtPackets::of_match(&fm.match_);
    for i in &fm.instructions {
        if let ofp::Instruction::ApplyActions(a) | ofp::Instruction::WriteActions(a) = i {
            for a in ofp::action::flattened(a) {
                if let ofp::Action::Ct(c) = a {
                    c.check_packets(&p)?;
                }
            }
        }
    }
    Ok(())
}

/// sluice's verdict on a ct flow's text: parsed, validated as a message,
/// and its ct actions checked against its match.
fn sluice_ct_verdict(flow: &str) -> Result<(), String> {
    let fm = parse_flow_mod(flow).map_err(|e| e.to_string())?;
    Message::FlowMod(fm.clone())
        .validate()
        .map_err(|e| e.to_string())?;
    ct_packets_check(&fm).map_err(|e| e.to_string())
}

/// ct flows of the corpus Open vSwitch takes where sluice differs for a
/// reason that is not connection tracking's (each listed with it); the
/// corpus test checks that each still differs, so a fix shows here.
const CORPUS_KNOWN: &[(&str, &str)] = &[
    // strip_vlan without a tag in the match: refused by sluice's pipeline (OFPBAC_MATCH_INCONSISTENT), which this test does not run
    ("neutron.flows:97", "STRIP_VLAN"),
    ("neutron.flows:98", "STRIP_VLAN"),
    ("neutron.flows:118", "STRIP_VLAN"),
    ("neutron.flows:119", "STRIP_VLAN"),
    ("neutron.flows:120", "STRIP_VLAN"),
    ("neutron.flows:121", "STRIP_VLAN"),
    ("neutron.flows:215", "STRIP_VLAN"),
    ("neutron.flows:216", "STRIP_VLAN"),
    ("neutron.flows:217", "STRIP_VLAN"),
    ("neutron.flows:218", "STRIP_VLAN"),
    ("neutron.flows:219", "STRIP_VLAN"),
    ("neutron.flows:245", "STRIP_VLAN"),
    ("neutron.flows:261", "STRIP_VLAN"),
    ("neutron.flows:262", "STRIP_VLAN"),
    ("neutron.flows:285", "STRIP_VLAN"),
    ("neutron.flows:286", "STRIP_VLAN"),
    ("neutron.flows:287", "STRIP_VLAN"),
    ("neutron.flows:288", "STRIP_VLAN"),
    ("neutron.flows:289", "STRIP_VLAN"),
    ("neutron.flows:290", "STRIP_VLAN"),
    ("neutron.flows:306", "STRIP_VLAN"),
    ("neutron.flows:307", "STRIP_VLAN"),
    // tp_dst=V/M: transport ports are not maskable in sluice (not ct's)
    ("neutron.flows:100", "PORT_MASK"),
    ("neutron.flows:101", "PORT_MASK"),
    ("neutron.flows:102", "PORT_MASK"),
    ("neutron.flows:103", "PORT_MASK"),
    ("neutron.flows:104", "PORT_MASK"),
    ("neutron.flows:105", "PORT_MASK"),
    ("neutron.flows:106", "PORT_MASK"),
    ("neutron.flows:107", "PORT_MASK"),
    ("neutron.flows:108", "PORT_MASK"),
    ("neutron.flows:109", "PORT_MASK"),
];

/// Whether a flow uses connection tracking (scripts/corpus.py's `CT_RE`).
fn is_ct(flow: &str) -> bool {
    const KEYS: &[&str] = &[
        "ct(", "ct_state", "ct_mark", "ct_label", "ct_zone", "ct_nw_", "ct_ipv6_", "ct_tp_",
        "ct_clear", "nat(",
    ];
    KEYS.iter().any(|k| {
        flow.match_indices(k).any(|(i, _)| {
            !flow[..i]
                .chars()
                .next_back()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    })
}

/// `flow` with the port and table names of a corpus `.names` file
/// replaced by their numbers, where a port or a table is expected (as
/// `sluice-ctl parse-flows --name-map` does): `table=`, `goto_table:`,
/// `resubmit(PORT,TABLE)`, `in_port=`, `output:`, and a port alone among
/// the actions.
fn substitute_names(flow: &str, names: &[(String, String, String)]) -> String {
    let lookup = |kind: &str, w: &str| {
        let w = w.trim_matches('"');
        names
            .iter()
            .find(|(k, n, _)| k == kind && n == w)
            .map(|(_, _, no)| no.clone())
    };
    let word_end = |s: &str| s.find([',', ')', ' ']).unwrap_or(s.len());
    let actions_at = flow.find("actions=").map_or(usize::MAX, |a| a + 8);
    let mut out = String::new();
    let mut i = 0;
    'scan: while i < flow.len() {
        let rest = &flow[i..];
        let prev = flow[..i].chars().next_back();
        if prev.is_none_or(|c| matches!(c, ',' | ' ' | '(' | '=')) {
            for (key, kind) in [
                ("table=", "table"),
                ("goto_table:", "table"),
                ("in_port=", "port"),
                ("output:", "port"),
            ] {
                if let Some(after) = rest.strip_prefix(key) {
                    let n = word_end(after);
                    out.push_str(key);
                    out.push_str(&lookup(kind, &after[..n]).unwrap_or_else(|| after[..n].into()));
                    i += key.len() + n;
                    continue 'scan;
                }
            }
            if let Some(after) = rest.strip_prefix("resubmit(") {
                let end = after.find(')').unwrap_or(after.len());
                let mut parts: Vec<String> = after[..end].split(',').map(String::from).collect();
                if let Some(p) = parts.first_mut() {
                    *p = lookup("port", p).unwrap_or_else(|| p.clone());
                }
                if let Some(t) = parts.get_mut(1) {
                    *t = lookup("table", t).unwrap_or_else(|| t.clone());
                }
                out.push_str("resubmit(");
                out.push_str(&parts.join(","));
                i += "resubmit(".len() + end;
                continue;
            }
            if i >= actions_at {
                let n = word_end(rest);
                if let Some(no) = lookup("port", &rest[..n]) {
                    out.push_str(&no);
                    i += n;
                    continue;
                }
            }
        }
        let c = rest.chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// Every flow of the corpus (tests/corpus) that uses connection tracking
/// and that Open vSwitch 3.1 takes under OpenFlow 1.3 (its verdict in the
/// `.ovs` file): ovs-ofctl's bytes decode and encode back unchanged in
/// sluice, sluice's text gives the same match and instructions, prints as
/// ovs-ofctl prints it and passes sluice's checks (the pipeline's ct
/// checks included). The ones Open vSwitch refuses, sluice refuses too.
#[test]
fn ct_flows_of_the_corpus_as_open_vswitch_takes_them() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus");
    let dir = std::env::temp_dir().join(format!("sluice-ovs-ct-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let (mut taken, mut refused) = (0, 0);
    let mut systems: Vec<_> = std::fs::read_dir(&corpus)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|f| f.strip_suffix(".flows").map(String::from))
        .collect();
    systems.sort();
    for system in systems {
        let read = |ext: &str| std::fs::read_to_string(corpus.join(format!("{system}.{ext}")));
        let flows = read("flows").unwrap();
        let verdicts: std::collections::HashMap<usize, String> = read("ovs")
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let w: Vec<&str> = l.split('\t').collect();
                Some((w.first()?.parse().ok()?, w.get(2)?.to_string()))
            })
            .collect();
        let names: Vec<(String, String, String)> = read("names")
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                let w: Vec<&str> = l.split('#').next()?.split_whitespace().collect();
                (w.len() == 3).then(|| (w[0].into(), w[1].trim_matches('"').into(), w[2].into()))
            })
            .collect();
        for (n, line) in flows.lines().enumerate() {
            let line_no = n + 1;
            let flow = line.trim();
            if flow.is_empty() || flow.starts_with('#') || !is_ct(flow) {
                continue;
            }
            let flow = substitute_names(flow, &names);
            match verdicts.get(&line_no).map(String::as_str) {
                Some("ok") => {
                    taken += 1;
                    let before = failures.len();
                    compare_with_ovs(&flow, &dir, 5000 + taken, &mut failures);
                    if let Err(e) = sluice_ct_verdict(&flow) {
                        failures.push(format!("{flow}: sluice refuses it: {e}"));
                    }
                    for f in &mut failures[before..] {
                        *f = format!("{system}.flows:{line_no}: {f}");
                    }
                }
                Some(_) => {
                    refused += 1;
                    if sluice_ct_verdict(&flow).is_ok()
                        && ovs_flow_mod(&flow, &dir, 9000 + refused).is_err()
                    {
                        failures.push(format!(
                            "{system}.flows:{line_no}: {flow}: Open vSwitch refuses it, sluice takes it"
                        ));
                    }
                }
                None => failures.push(format!("{system}.flows:{line_no}: no Open vSwitch verdict")),
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(taken > 500, "only {taken} ct flows in the corpus");
    let key = |f: &String| f.split(": ").next().unwrap_or_default().to_string();
    let failed: std::collections::HashSet<String> = failures.iter().map(key).collect();
    for (k, why) in CORPUS_KNOWN {
        if !failed.contains(*k) {
            failures.push(format!(
                "{k}: listed in CORPUS_KNOWN ({why}) but sluice agrees now: take it out"
            ));
        }
    }
    failures.retain(|f| !CORPUS_KNOWN.iter().any(|(k, _)| *k == key(f)));
    assert!(
        failures.is_empty(),
        "{} of {taken} ct flows Open vSwitch takes, {refused} it refuses:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
