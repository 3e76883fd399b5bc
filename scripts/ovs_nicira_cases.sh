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
FLOW=in_port=1,dl_src=02:00:00:00:00:01,dl_dst=02:00:00:00:00:02,dl_type=0x88b5
trace() {
    echo "== $1"; shift
    ovs-ofctl -O OpenFlow13 del-flows brn
    printf '%s\n' "$@" > "$D/flows.txt"
    ovs-ofctl -O OpenFlow13 add-flows brn "$D/flows.txt" || return
    ovs-appctl ofproto/trace brn "$FLOW" | grep -v '^$'
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
