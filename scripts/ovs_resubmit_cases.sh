#!/usr/bin/env bash
# The resubmit cases of crates/pipeline/tests/resubmit.rs run through Open
# vSwitch 3.1 itself: a netdev bridge in a private run directory
# (/tmp/ovs-resubmit-cases), four internal ports (OpenFlow 1-4), each
# case's flows added with ovs-ofctl and a frame from port 1 traced with
# `ovs-appctl ofproto/trace`. Prints each case's trace; OVS names ports in
# "Datapath actions" by its datapath numbers (OpenFlow port N is N+1 here).
# Root only; stops what it started and deletes its ports.
#
#   sudo scripts/ovs_resubmit_cases.sh
set -u
D=/tmp/ovs-resubmit-cases
export OVS_RUNDIR=$D OVS_DBDIR=$D OVS_LOGDIR=$D
V="ovs-vsctl --db=unix:$D/db.sock"
stop() {
    for p in ovs-vswitchd ovsdb-server; do
        [ -f "$D/$p.pid" ] && kill "$(cat "$D/$p.pid")" 2>/dev/null
    done
    sleep 0.5
    for i in 1 2 3 4; do ip link del rsx$i 2>/dev/null; done
}
trap stop EXIT
rm -rf "$D"; mkdir -p "$D"
ovsdb-tool create "$D/conf.db" /usr/share/openvswitch/vswitch.ovsschema
ovsdb-server "$D/conf.db" --remote=punix:"$D/db.sock" --pidfile --detach --log-file="$D/ovsdb.log"
$V --no-wait init
ovs-vswitchd unix:"$D/db.sock" --pidfile --detach --log-file="$D/vswitchd.log"
$V add-br brx -- set bridge brx datapath_type=netdev fail-mode=secure protocols=OpenFlow13
for i in 1 2 3 4; do $V add-port brx rsx$i -- set interface rsx$i type=internal ofport_request=$i; done
trace() {
    echo "== $1"; shift
    ovs-ofctl -O OpenFlow13 del-flows brx
    printf '%s\n' "$@" > "$D/flows.txt"
    ovs-ofctl -O OpenFlow13 add-flows brx "$D/flows.txt"
    ovs-appctl ofproto/trace brx in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,dl_type=0x88b5 |
        grep -v '^$'
}
trace "a later table" "priority=1,actions=resubmit(,1),output:3" "table=1,priority=1,actions=output:2"
trace "an earlier table and the current one" "priority=1,actions=goto_table:2" \
    "table=1,priority=1,actions=output:2" \
    "table=2,priority=5,in_port=1,actions=resubmit(,1),resubmit(4),output:3" \
    "table=2,priority=5,in_port=4,actions=output:1"
trace "the port named" "priority=1,in_port=1,actions=resubmit(3,1),output:in_port" \
    "table=1,priority=1,in_port=3,actions=output:in_port,output:2" "table=1,priority=1,in_port=1,actions=output:4"
trace "no flow" "priority=1,actions=resubmit(,5),output:2"
trace "write_actions and goto" "priority=1,actions=resubmit(,1),output:3" \
    "table=1,priority=1,actions=write_actions(output:4),goto_table:3" "table=3,priority=1,actions=output:2"
trace "a loop" "priority=1,actions=output:2,resubmit(,0)"
chain=()
for t in $(seq 0 99); do chain+=("table=$t,priority=1,actions=resubmit(,$((t + 1)))"); done
trace "a forward chain of 100 resubmits (not nested: output:2)" "${chain[@]}" "table=100,priority=1,actions=output:2" |
    tail -3
loop=()
for t in $(seq 0 252); do loop+=("table=$t,priority=1,actions=resubmit(,$((t + 1)))"); done
trace "254 tables in a loop (over 4096 resubmit actions: drop)" "${loop[@]}" \
    "table=253,priority=1,actions=output:2,resubmit(,0)" | grep -E '^==|over|Datapath actions'
