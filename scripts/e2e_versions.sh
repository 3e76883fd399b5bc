# End-to-end tests of the OpenFlow versions besides 1.3 (sourced by
# scripts/e2e.sh, whose helpers it uses): real controllers of each
# version drive sluice, and Open vSwitch's ovs-ofctl of each version
# programs it.

# os-ken's own learning switches, one per version, unchanged (from os-ken
# 1.4.1's sample apps, as the Mininet test takes simple_switch_13: see
# scripts/setup.sh): simple_switch (OpenFlow 1.0: no table-miss flow, the
# switch's own table miss sends to the controller), simple_switch_12,
# simple_switch_14 and simple_switch_15. Each offers only its version;
# sluice offers all, and must agree on the app's; then ping and TCP.
test_osken_apps_of_every_version() {
    P=sle2e$$vv
    testbed_up "$P" || return 1
    local r=0 app ver log ctl apps
    apps=$(pwd)/.venv/os-ken-1.4.1/os_ken/app
    for app in simple_switch:OpenFlow10 simple_switch_12:OpenFlow12 simple_switch_14:OpenFlow14 simple_switch_15:OpenFlow15; do
        ver=${app#*:} app=${app%%:*}
        log=$(mktemp)
        ip netns exec "$P-sw" ip link set lo up
        ip netns exec "$P-sw" env PYTHONPATH="tests/controller:$apps" .venv/bin/python \
            tests/controller/run_osken.py 6653 "$app" >"$log" 2>&1 &
        ctl=$!
        wait_until 60 "os-ken ($app) to listen on port 6653" tcp_listening "$P-sw" 6653 || r=1
        start_sluice --port p1 --port p2 --controller tcp:127.0.0.1:6653 --fail-mode secure || r=1
        wait_until 15 "$app's connection to agree on $ver" grep -q "version=\"\?$ver" "$OUT" || r=1
        ping_ok h1 "$TESTBED_NET.2" || { echo "     $app: ping failed"; r=1; }
        local mbps
        mbps=$(tcp_mbps 5309)
        echo "     $app ($ver): TCP ${mbps} Mbit/s"
        [ "${mbps:-0}" -gt 0 ] || r=1
        # The app learned and installed flows (it matches on the
        # destination MAC, in each version's own form).
        flows_show "dl_dst=|eth_dst=" || { echo "     $app: no learned flow"; ctl_rd --no-stats dump-flows br0 | sed 's/^/       /'; r=1; }
        stop_osken "$ctl"
        grep -q "packet in" "$log" || { echo "     $app saw no packet-in"; r=1; }
        if grep -qE "Traceback|Error" "$log"; then
            echo "     $app:"
            grep -E -A3 "Traceback|Error" "$log" | head -20 | sed 's/^/       /'
            r=1
        fi
        rm -f "$log"
    done
    finish "os-ken's simple_switch (OpenFlow 1.0), _12, _14 and _15 drive sluice: ping and TCP" $r
}

# ovs-ofctl of each version (-O OpenFlow10, 12, 14, 15) installs the same
# flows and groups in sluice and in an Open vSwitch netdev bridge (1.4 and
# 1.5 into sluice as one native bundle); what it dumps back from each
# (flows without counters, groups, the aggregate) must be the same text. Open vSwitch's own encoder and parser, of each version, on
# both sides of sluice's translation; and sluice-ctl -O of the version
# reads the flows back too.
test_ovs_ofctl_of_every_version_agrees_with_open_vswitch() {
    P=sle2e$$vo
    local r=0 rd od v f g out a b bundle
    need_ovs_ofctl "ovs-ofctl of every version" || return
    testbed_up "$P" || return 1
    rd=$(mktemp -d) od=$(mktemp -d) f=$(mktemp) g=$(mktemp)
    start_sluice --port p1 --port p2 --fail-mode secure --run-dir "$rd" || r=1
    ovs_start "$P-sw" "$od" || r=1
    ip netns exec "$P-sw" ovs-vsctl --db="unix:$od/db.sock" --timeout=30 add-br ref -- \
        set bridge ref datapath_type=netdev fail-mode=secure \
        protocols=OpenFlow10,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15 || r=1
    local S="unix:$rd/br0.mgmt" R="unix:$od/ref.mgmt"
    for v in OpenFlow10 OpenFlow12 OpenFlow14 OpenFlow15; do
        if [ $v = OpenFlow10 ]; then
            # What OpenFlow 1.0's own match and actions hold (ovs-ofctl
            # sends them as OFPT_FLOW_MOD of 1.0).
            cat >"$f" <<'FLOWS'
priority=10,in_port=1,actions=output:2
priority=20,dl_vlan=5,actions=strip_vlan,output:1
tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=mod_nw_tos:8,mod_tp_dst:8080,output:2
udp,nw_src=192.168.1.1,tp_src=53,actions=mod_tp_src:5353,mod_nw_src:10.1.1.1,output:1
priority=5,dl_src=02:00:00:00:00:01,actions=mod_dl_dst:02:00:00:00:00:02,CONTROLLER:128
priority=6,dl_vlan_pcp=3,actions=mod_vlan_pcp:5,mod_vlan_vid:7,output:2
cookie=0x77,priority=7,arp,actions=NORMAL
icmp,icmp_type=8,actions=enqueue:1:0,output:1
FLOWS
            : >"$g"
        else
            cat >"$f" <<'FLOWS'
priority=10,in_port=1,actions=output:2
table=0,priority=3,tcp,tp_dst=80,actions=set_field:10.0.0.9->ip_dst,goto_table:2
cookie=0x5,table=2,priority=7,ip,nw_dst=10.0.0.0/8,actions=dec_ttl,group:1
table=2,priority=4,ipv6,ipv6_dst=2001:db8::/32,actions=write_actions(output:1),write_metadata:0x5/0xff,goto_table:3
table=3,priority=2,metadata=0x5/0xff,icmp6,icmp_type=135,actions=push_vlan:0x8100,set_field:4101->vlan_vid,output:2
table=3,priority=1,udp,tp_src=53,actions=CONTROLLER:128
FLOWS
            cat >"$g" <<'GROUPS'
group_id=1,type=select,bucket=output:1,bucket=weight:5,watch_port:2,actions=output:2
group_id=2,type=all,bucket=actions=output:1,bucket=actions=NORMAL
GROUPS
        fi
        for sw in "$S" "$R"; do
            ovs-ofctl -O $v del-flows "$sw" || { echo "     $v: del-flows refused by $sw"; r=1; }
            if [ $v != OpenFlow10 ]; then
                ovs-ofctl -O $v del-groups "$sw" || { echo "     $v: del-groups refused by $sw"; r=1; }
            fi
            if [ -s "$g" ]; then
                ovs-ofctl -O $v add-groups "$sw" "$g" || { echo "     $v: add-groups refused by $sw"; r=1; }
            fi
            # 1.4 and 1.5 into sluice as one native bundle (OFPT_BUNDLE_*:
            # all or nothing), the rest as plain FLOW_MODs.
            bundle=
            [ "$sw" = "$S" ] && [[ $v == OpenFlow1[45] ]] && bundle=--bundle
            ovs-ofctl -O $v $bundle add-flows "$sw" "$f" || { echo "     $v: add-flows $bundle refused by $sw"; r=1; }
        done
        for what in "--no-stats dump-flows" "dump-groups" "dump-aggregate"; do
            [ "$what" = dump-groups ] && [ $v = OpenFlow10 ] && continue
            # shellcheck disable=SC2086
            # In OpenFlow 1.0 ovs-ofctl first asks for Open vSwitch's NXM
            # flow format (NXT_SET_FLOW_FORMAT), which sluice does not
            # speak: it then asks for the standard OFPST_ statistics, and
            # the replies are named so (docs/OPENFLOW-VERSIONS.md).
            a=$(ovs-ofctl -O $v $what "$R" 2>&1 | sed -E 's/\(xid=0x[0-9a-f]+\)//; s/^NXST_/OFPST_/' | sort)
            # shellcheck disable=SC2086
            b=$(ovs-ofctl -O $v $what "$S" 2>&1 | sed -E 's/\(xid=0x[0-9a-f]+\)//' | sort)
            if [ "$a" != "$b" ] || [ -z "$a" ]; then
                echo "     $v $what differs (< Open vSwitch, > sluice):"
                diff <(echo "$a") <(echo "$b") | sed 's/^/       /'
                r=1
            fi
        done
        # sluice-ctl of the version reads back as many flows.
        a=$(ovs-ofctl -O $v --no-stats dump-flows "$S" | grep -c actions=)
        b=$("$CTL" -O $v --no-stats dump-flows "$S" | grep -c actions=)
        [ "$a" = "$b" ] && [ "$a" -ge 6 ] || { echo "     $v: ovs-ofctl dumps $a flows, sluice-ctl $b"; r=1; }
        out=$("$CTL" -O $v dump-flows "$S" | head -1)
        [[ $out == *"(OF1.${v#OpenFlow1})"* ]] || { echo "     $v: sluice-ctl's header: $out"; r=1; }
    done
    ovs_stop
    rm -rf "$rd" "$od" "$f" "$g"
    finish "ovs-ofctl -O OpenFlow10/12/14/15 installs and dumps the same flows and groups in sluice and Open vSwitch" $r
}
