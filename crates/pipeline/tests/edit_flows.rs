// Shared by tests/exec.rs and the `pipeline` fuzz target (via include!).

/// Flows that, between them, edit every settable field and push/pop every
/// header, so that arbitrary packets exercise every edit path.
#[allow(dead_code)]
pub const EDIT_EVERYTHING: &[&str] = &[
    "table=0,priority=9,tcp,actions=set_field:1.2.3.4->ipv4_src,set_field:5.6.7.8->ipv4_dst,set_field:1->tcp_src,set_field:2->tcp_dst,set_field:9->ip_dscp,set_field:1->ip_ecn,dec_nw_ttl,goto_table:1",
    "table=0,priority=9,udp,actions=set_field:1->udp_src,set_field:2->udp_dst,set_nw_ttl:3,push_vlan:0x88a8,set_field:4103->vlan_vid,set_field:2->vlan_pcp,goto_table:1",
    "table=0,priority=9,sctp,actions=set_field:1->sctp_src,set_field:2->sctp_dst,goto_table:1",
    "table=0,priority=9,icmp,actions=set_field:3->icmpv4_type,set_field:4->icmpv4_code,push_mpls:0x8847,set_field:5->mpls_label,set_field:1->mpls_tc,set_mpls_ttl:9,dec_mpls_ttl,copy_ttl_out,copy_ttl_in,goto_table:1",
    "table=0,priority=9,icmp6,icmpv6_type=135,actions=set_field:2001:db8::5->ipv6_nd_target,set_field:02:00:00:00:00:05->ipv6_nd_sll,set_field:2001:db8::7->ipv6_src,goto_table:1",
    "table=0,priority=9,icmp6,icmpv6_type=136,actions=set_field:02:00:00:00:00:05->ipv6_nd_tll,set_field:136->icmpv6_type,set_field:0x12345->ipv6_flabel,goto_table:1",
    "table=0,priority=8,tcp6,actions=set_field:2001:db8::1->ipv6_dst,set_field:7->tcp_dst,dec_nw_ttl,goto_table:1",
    "table=0,priority=9,arp,actions=set_field:2->arp_op,set_field:1.1.1.1->arp_spa,set_field:2.2.2.2->arp_tpa,set_field:02:00:00:00:00:01->arp_sha,set_field:02:00:00:00:00:02->arp_tha,goto_table:1",
    "table=0,priority=9,mpls,actions=set_field:9->mpls_label,set_field:1->mpls_bos,pop_mpls:0x0800,goto_table:1",
    "table=0,priority=9,dl_type=0x88e7,actions=set_field:0x1234->pbb_isid,pop_pbb,goto_table:1",
    "table=0,priority=9,dl_vlan=5,actions=set_field:4102->vlan_vid,pop_vlan,push_pbb:0x88e7,goto_table:1",
    "table=0,priority=1,actions=push_vlan:0x8100,set_field:02:00:00:00:00:09->eth_dst,set_field:02:00:00:00:00:08->eth_src,output:2,group:1",
    // A pop needs tagged packets in the match (as Open vSwitch asks).
    "table=1,priority=2,vlan_tci=0x1000/0x1000,actions=output:in_port,flood,write_actions(pop_vlan,push_mpls:0x8848,dec_mpls_ttl,set_field:3->mpls_tc,output:3)",
    "table=1,priority=1,actions=output:in_port,flood,write_actions(push_mpls:0x8848,dec_mpls_ttl,set_field:3->mpls_tc,output:3)",
];
