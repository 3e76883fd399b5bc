#!/usr/bin/env bash
# The Nicira action cases of crates/pipeline/tests/nicira_actions.rs run
# through Open vSwitch 3.1 itself: a netdev bridge in a private run
# directory (/tmp/ovs-nicira-cases), five internal ports (OpenFlow 1-5),
# each case's flows added with ovs-ofctl and a frame from port 1 traced
# with `ovs-appctl ofproto/trace`. Prints each case's trace; OVS names
# ports in "Datapath actions" by its datapath numbers (OpenFlow port N is
# N+1 here). Root only; stops what it started and deletes its ports.
#
#   sudo scripts/ovs_nicira_cases.sh
set -u
D=/tmp/ovs-nicira-cases
export OVS_RUNDIR=$D OVS_DBDIR=$D OVS_LOGDIR=$D
V="ovs-vsctl --db=unix:$D/db.sock"
stop() {
    for p in ovs-vswitchd ovsdb-server; do
        [ -f "$D/$p.pid" ] && kill "$(cat "$D/$p.pid")" 2>/dev/null
    done
    sleep 0.5
    for i in 1 2 3 4 5; do ip link del nxc$i 2>/dev/null; done
}
trap stop EXIT
rm -rf "$D"; mkdir -p "$D"
ovsdb-tool create "$D/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$D/conf.db" --remote=punix:"$D/db.sock" --pidfile --detach --log-file="$D/ovsdb.log"
$V --no-wait init
ovs-vswitchd unix:"$D/db.sock" --pidfile --detach --log-file="$D/vswitchd.log"
$V add-br brn -- set bridge brn datapath_type=netdev fail-mode=secure protocols=OpenFlow13
for i in 1 2 3 4 5; do $V add-port brn nxc$i -- set interface nxc$i type=internal ofport_request=$i; done
# Links up: bundle takes live members only.
sleep 1; for i in 1 2 3 4 5; do ip link set nxc$i up; done; sleep 2
FLOW=in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,dl_type=0x88b5
trace() {
    echo "== $1"; shift
    ovs-ofctl -O OpenFlow13 del-flows brn
    printf '%s\n' "$@" > "$D/flows.txt"
    ovs-ofctl -O OpenFlow13 add-flows brn "$D/flows.txt" || return
    ovs-appctl ofproto/trace brn "$FLOW" | grep -v '^$'
}
# One flow, several packets: prints the registers each ends with.
regs() {
    echo "== $1"; shift
    ovs-ofctl -O OpenFlow13 del-flows brn
    ovs-ofctl -O OpenFlow13 add-flow brn "$1"; shift
    for pkt in "$@"; do
        echo "-- $pkt"
        ovs-appctl ofproto/trace brn "$pkt" | grep '^Final flow' | sed 's/,in_port=.*//'
    done
}
trace "exit in a resubmitted flow" "priority=1,actions=resubmit(,1),output:3" \
    "table=1,actions=output:4,exit,output:5"
trace "exit before write_actions and goto" "priority=1,actions=exit,write_actions(output:2),goto_table:1" \
    "table=1,actions=output:3"
trace "exit and the action set" "priority=1,actions=write_actions(output:2),goto_table:1" "table=1,actions=exit"
trace "exit in a clone" "priority=1,actions=clone(output:2,exit,output:4),output:3"
trace "clone(exit)" "priority=1,actions=load:1->NXM_NX_REG0[],clone(exit),output:3"
trace "clone and the action set" "priority=1,actions=write_actions(output:2),goto_table:1" \
    "table=1,actions=clone(output:3),output:4"
trace "clone and the stack" "priority=1,actions=load:5->NXM_NX_REG0[],clone(load:2->NXM_NX_REG0[],push:NXM_NX_REG0[]),pop:NXM_NX_REG1[],output:NXM_NX_REG1[]"
trace "pop of an empty stack" "priority=1,actions=pop:NXM_NX_REG0[],output:3"
trace "push and pop widths" "priority=1,actions=load:0xffff->NXM_NX_REG0[],push:NXM_NX_REG0[],pop:NXM_NX_REG1[0..7],push:NXM_NX_REG0[0..3],pop:NXM_NX_REG2[],load:3->NXM_NX_REG3[],output:NXM_NX_REG3[]"
trace "a pop into vlan_tci (CFI set: a tag)" "priority=1,actions=load:0x1064->NXM_NX_REG0[0..15],push:NXM_NX_REG0[0..15],pop:NXM_OF_VLAN_TCI[],output:2"
trace "a move into vlan_tci (CFI set: a tag)" "priority=1,actions=load:0x1064->NXM_NX_REG0[0..15],move:NXM_NX_REG0[0..15]->NXM_OF_VLAN_TCI[],output:2"
trace "a zero popped into vlan_tci (no tag)" "priority=1,actions=load:0x1064->NXM_OF_VLAN_TCI[],push:NXM_NX_REG0[0..15],pop:NXM_OF_VLAN_TCI[],output:2"

# Multipath hashes (each in a register: low half by modulo_n, high half by
# hash_threshold, over 65536 links), hrw/iter_hash picks, bundle_load
# picks among live ports 1-5 and absent 7-9: the
# multipath_and_bundle_pick_what_open_vswitch_picks case.
MP=""
i=0
for f in eth_src symmetric_l4 symmetric_l3l4 symmetric_l3l4+udp nw_src nw_dst symmetric_l3; do
    MP="$MP,multipath($f,1234,modulo_n,65536,0,NXM_NX_REG$i[0..15]),multipath($f,1234,hash_threshold,65536,0,NXM_NX_REG$i[16..31])"
    i=$((i+1))
done
i=8
for f in eth_src symmetric_l4; do
    MP="$MP,multipath($f,0,modulo_n,65536,0,NXM_NX_REG$i[0..15]),multipath($f,0,hash_threshold,65536,0,NXM_NX_REG$i[16..31])"
    i=$((i+1))
done
MP="$MP,multipath(symmetric_l4,7,hrw,10,0,NXM_NX_REG10[0..3]),multipath(symmetric_l4,7,iter_hash,10,12,NXM_NX_REG10[4..7])"
MP="$MP,multipath(symmetric_l4,7,hrw,100,0,NXM_NX_REG10[8..15]),multipath(symmetric_l4,7,iter_hash,100,0,NXM_NX_REG10[16..23])"
MP="$MP,multipath(eth_src,7,hash_threshold,7,0,NXM_NX_REG10[24..26]),multipath(eth_src,7,modulo_n,7,0,NXM_NX_REG10[27..29])"
MP="$MP,bundle_load(symmetric_l4,9,hrw,ofport,NXM_NX_REG11[0..15],members:1,2,3,4,5),bundle_load(eth_src,9,hrw,ofport,NXM_NX_REG11[16..31],members:2,4,7)"
MP="$MP,bundle_load(nw_src,0,active_backup,ofport,NXM_NX_REG12[0..15],members:9,3,2),bundle_load(nw_dst,3,hrw,ofport,NXM_NX_REG12[16..31],members:8,9)"
E=in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02
regs "multipath and bundle hashes" "actions=${MP#,}" \
    "$E,dl_type=0x88b5" \
    "$E,tcp,nw_src=10.0.0.1,nw_dst=10.0.0.2,tp_src=1234,tp_dst=80" \
    "in_port=1,dl_src=52:54:00:12:34:56,dl_dst=f0:0d:00:ab:cd:ef,udp,nw_src=10.1.2.3,nw_dst=192.168.7.9,udp_src=5000,udp_dst=53" \
    "$E,tcp6,ipv6_src=2001:db8::1,ipv6_dst=2001:db8::2:3,tp_src=443,tp_dst=5555" \
    "$E,dl_vlan=5,icmp,nw_src=1.2.3.4,nw_dst=5.6.7.8" \
    "$E,sctp,nw_src=1.2.3.4,nw_dst=5.6.7.8,sctp_src=9,sctp_dst=10" \
    "$E,udp6,ipv6_src=fe80::1,ipv6_dst=ff02::1:2,udp_src=546,udp_dst=547" \
    "$E,arp,arp_spa=1.2.3.4,arp_tpa=5.6.7.8,arp_op=1"
