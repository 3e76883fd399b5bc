# End-to-end tests of connection tracking (sourced by e2e.sh, which runs
# them): Open vSwitch's ct(...)/nat(...) flows with real traffic between
# hosts in namespaces, through sluice and, as a peer, through Open
# vSwitch 3.1's userspace datapath (its own conntrack) with the same flows
# and the same traffic.
#
# Each scenario (ct_scn_NAME KIND, KIND sluice or ovs) builds its testbed,
# starts the switch, adds its flows, runs its cases and removes all of it.
# A case is named, has an expected verdict (pass or drop) and a measured
# one; ct_case writes "NAME|EXPECTED|GOT" lines to $CT_RES. Waits for a
# drop are short (a connect or a ping bounded at about 1 s) and a pass
# returns as soon as the exchange is done.
#
#   scripts/e2e.sh test_ct_tutorial_firewall     (one test by name)
#   scripts/e2e.sh test_ct_tutorial_firewall test_ct_neutron_firewall \
#       test_ct_snat_gateway test_ct_dnat_port_forward test_ct_open_vswitch_peer

# The second subnet (the SNAT gateway's outside), checked as TESTBED_NET is.
CT_NET2=${CT_NET2:-10.213.78}
CT_GWMAC=02:00:00:00:00:fe
CT_RES=
CT_OVS_DIR=
CT_OVS_CTL=

ct_mac() { printf '02:00:00:00:00:%02x' "$1"; }

# ct_host_mac N MAC: host N's eth0 gets MAC.
ct_host_mac() { ip netns exec "$P-h$1" ip link set dev eth0 address "$2"; }

# ct_serve HOST LOG PORT...: the TCP echo server in HOST (bounded at 120 s),
# listening on every PORT when this returns.
ct_serve() {
    local h=$1 log=$2 port
    shift 2
    : >"$log"
    ip netns exec "$P-$h" timeout 120 python3 scripts/cttraffic.py serve "$log" "$@" &
    for port in "$@"; do
        wait_until 5 "the echo server in $h to listen on $port" tcp_listening "$P-$h" "$port" || return 1
    done
}

# ct_tcp FROM IP PORT SECS [SPORT]: one TCP exchange from host FROM.
ct_tcp() {
    local out
    out=$(ip netns exec "$P-$1" python3 scripts/cttraffic.py connect "$2" "$3" "$4" ${5:-})
    local rc=$?
    CT_LAST=$out
    return $rc
}

# ct_ping FROM IP SECS: at least one echo answered within SECS.
ct_ping() { ip netns exec "$P-$1" ping -c 2 -i 0.2 -W "$3" -q "$2" >/dev/null 2>&1; }

# ct_stray FROM TO SMAC DMAC SIP DIP DPORT: an unsolicited SYN-ACK (+inv
# in a tracker) from FROM; true if TO received it within 1 s.
ct_stray() {
    local got w
    got=$(mktemp)
    ip netns exec "$P-$2" python3 scripts/cttraffic.py sniff eth0 1.2 "$7" >"$got" &
    w=$!
    listening "$w" "$2's TCP listener" || { kill "$w" 2>/dev/null; wait "$w"; rm -f "$got"; return 1; }
    ip netns exec "$P-$1" python3 scripts/cttraffic.py stray eth0 "$3" "$4" "$5" "$6" "$7"
    wait "$w"
    local n
    n=$(cat "$got")
    rm -f "$got"
    [ "${n:-0}" -gt 0 ]
}

# ct_case NAME EXPECTED CMD...: runs CMD; passed if it succeeds, dropped if
# not; records the line and says so when it is not what was expected.
ct_case() {
    local name=$1 want=$2 got rc
    shift 2
    "$@"
    rc=$?
    if [ $rc = 0 ]; then got=pass; else got=drop; fi
    echo "$name|$want|$got" >>"$CT_RES"
    [ "$got" = "$want" ] || echo "     $CT_KIND: $name: $got, expected $want"
}

# The connections the switch's tracker lists, as ovs-appctl
# dpctl/dump-conntrack prints them.
ct_conns() {
    if [ "$CT_KIND" = ovs ]; then
        ovs-appctl -t "$CT_OVS_CTL" dpctl/dump-conntrack
    else
        ctl_rd dump-conntrack br0
    fi
}

# ct_lists PATTERN: true if a connection's line matches PATTERN (grep -E).
ct_lists() { ct_conns 2>/dev/null | grep -Eq "$1"; }

# ct_switch_up KIND NPORTS FLOWFILE: sluice or Open vSwitch (userspace
# datapath) on ports p1..pN of $P-sw, with the flows of FLOWFILE.
ct_switch_up() {
    local kind=$1 n=$2 f=$3 i args=()
    CT_KIND=$kind
    if [ "$kind" = sluice ]; then
        for i in $(seq 1 "$n"); do args+=(--port "p$i"); done
        start_sluice "${args[@]}" --fail-mode secure || return 1
        ctl_rd add-flows br0 "$f" >/dev/null || { echo "     sluice-ctl add-flows refused the flows"; return 1; }
        return 0
    fi
    CT_OVS_DIR=$(mktemp -d)
    ovs_start "$P-sw" "$CT_OVS_DIR" || return 1
    CT_OVS_CTL=$CT_OVS_DIR/ovs-vswitchd.$OVS_VS_PID.ctl
    args=(add-br br0 -- set bridge br0 datapath_type=netdev fail-mode=secure protocols=OpenFlow13)
    for i in $(seq 1 "$n"); do args+=(-- add-port br0 "p$i" -- set interface "p$i" "ofport_request=$i"); done
    ip netns exec "$P-sw" ovs-vsctl --timeout=30 --db="unix:$CT_OVS_DIR/db.sock" "${args[@]}" || return 1
    wait_until 10 "Open vSwitch's ports 1 to $n" \
        bash -c "ovs-ofctl -O OpenFlow13 show unix:$CT_OVS_DIR/br0.mgmt | grep -q ' $n(p$n)'" || return 1
    ovs-ofctl -O OpenFlow13 add-flows "unix:$CT_OVS_DIR/br0.mgmt" "$f" ||
        { echo "     ovs-ofctl add-flows refused the flows"; return 1; }
}

# ct_del_flows MATCH: deletes the flows matching MATCH (not strict).
ct_del_flows() {
    if [ "$CT_KIND" = ovs ]; then
        ovs-ofctl -O OpenFlow13 del-flows "unix:$CT_OVS_DIR/br0.mgmt" "$1"
    else
        ctl_rd del-flows br0 "$1"
    fi
}

ct_switch_down() {
    if [ "$CT_KIND" = ovs ]; then
        ovs_stop
        [ -n "$CT_OVS_DIR" ] && rm -rf "$CT_OVS_DIR"
        CT_OVS_DIR=
    else
        stop_sluice
    fi
}

# ---------------------------------------------------------------------------
# 1. The conntrack tutorial's firewall (Open vSwitch's "Connection
# Tracking" tutorial, Documentation/tutorials/ovs-conntrack.rst): h1 on
# port 1 may open connections to h2 on port 2, whose replies pass; h2 may
# not open any.
ct_scn_tutorial() { # kind
    P=sle2e$$ctt
    testbed_up "$P" || return 1
    local r=0 f log1 log2 A=$TESTBED_NET
    f=$(mktemp)
    cat >"$f" <<'FLOWS'
table=0,priority=1,actions=drop
table=0,priority=10,arp,actions=normal
table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1)
table=1,in_port=1,ip,ct_state=+trk+new,actions=ct(commit),output:2
table=1,in_port=1,ip,ct_state=+trk+est,actions=output:2
table=1,in_port=2,ip,ct_state=+trk+new,actions=drop
table=1,in_port=2,ip,ct_state=+trk+est,actions=output:1
FLOWS
    log1=$(mktemp)
    log2=$(mktemp)
    if ct_switch_up "$1" 2 "$f" && ct_serve h2 "$log2" 8080 && ct_serve h1 "$log1" 8080; then
        ct_case "tutorial: TCP h1 -> h2:8080 (new from the left)" pass ct_tcp h1 "$A.2" 8080 3
        ct_case "tutorial: h2 sees h1's own address" pass grep -q "^$A.1 " "$log2"
        ct_case "tutorial: ping h1 -> h2" pass ct_ping h1 "$A.2" 2
        ct_case "tutorial: the tracker lists h1 -> h2:8080" pass \
            ct_lists "^tcp,orig=\(src=$A.1,dst=$A.2,sport=[0-9]+,dport=8080\),reply=\(src=$A.2,dst=$A.1,sport=8080,"
        ct_case "tutorial: TCP h2 -> h1:8080 (new from the right)" drop ct_tcp h2 "$A.1" 8080 1
        ct_case "tutorial: ping h2 -> h1" drop ct_ping h2 "$A.1" 1
        ct_case "tutorial: a connection reached h1" drop test -s "$log1"
        ct_case "tutorial: UDP h1 -> h2:9, its port unreachable back (+rel: no flow)" drop \
            ip netns exec "$P-h1" python3 scripts/cttraffic.py refused "$A.2" 9 1 >/dev/null
    else
        r=1
    fi
    ct_switch_down
    rm -f "$f" "$log1" "$log2"
    testbed_down "$P"
    return $r
}

# ---------------------------------------------------------------------------
# 2. Neutron's OVS firewall driver (neutron/agent/linux/openvswitch_firewall,
# the flows of its devref, doc/source/contributor/internals/
# openvswitch_firewall.rst, in tests/corpus/neutron.flows): two ports of
# one network (local VLAN 0x284, which is also the conntrack zone, kept in
# reg6; the port's ofport in reg5), both in one security group: egress of
# any IPv4 allowed, ingress TCP 22 and ICMP allowed. Tables as the driver's
# (60 transient, 71/72/73 egress base/rules/accept-or-ingress, 81/82
# ingress base/rules, 91/92 accepted, 93 dropped, 94 normal); the rules'
# priorities are the driver's (70 + its flow_priority_offset: 74 any
# protocol, 75 ICMP, 77 TCP with ports, without a remote group). Adapted:
# the ports' MACs are the devref's, their IPv4 addresses the testbed's;
# no IPv6 (off on the testbed), no tunnel port 3 (its table-94 flows left
# out) and no strip_vlan (the devref's ingress outputs strip br-int's local
# VLAN tag, which a port-to-port path on one bridge never carries, and
# which Open vSwitch refuses under OpenFlow 1.3 on an untagged match);
# `ip` in the ct(commit) flows of tables 72, 73 and 82 (the driver installs
# them once per ethertype; the devref prints them without, and Open vSwitch
# refuses a ct without ip or ipv6 in the match).
CT_NMAC1=fa:16:3e:a4:22:10
CT_NMAC2=fa:16:3e:24:57:c7
ct_neutron_flows() { # file
    local A=$TESTBED_NET p mac ip
    {
        echo "table=0,priority=0,actions=resubmit(,60)"
        for p in 1 2; do
            mac=$([ $p = 1 ] && echo $CT_NMAC1 || echo $CT_NMAC2)
            ip=$A.$p
            cat <<EOF
table=60,priority=100,in_port=$p,actions=load:0x$p->NXM_NX_REG5[],load:0x284->NXM_NX_REG6[],resubmit(,71)
table=71,priority=95,arp,reg5=0x$p,in_port=$p,dl_src=$mac,arp_spa=$ip,actions=resubmit(,94)
table=71,priority=80,udp,reg5=0x$p,in_port=$p,tp_src=68,tp_dst=67,actions=resubmit(,73)
table=71,priority=70,udp,reg5=0x$p,in_port=$p,tp_src=67,tp_dst=68,actions=resubmit(,93)
table=71,priority=65,ip,reg5=0x$p,in_port=$p,dl_src=$mac,nw_src=$ip,actions=ct(table=72,zone=NXM_NX_REG6[0..15])
table=71,priority=10,reg5=0x$p,in_port=$p,actions=resubmit(,93)
table=72,priority=74,ct_state=+est-rel-rpl,ip,reg5=0x$p,actions=resubmit(,73)
table=72,priority=74,ct_state=+new-est,ip,reg5=0x$p,actions=resubmit(,73)
table=72,priority=50,ct_mark=0x1,reg5=0x$p,actions=resubmit(,93)
table=72,priority=50,ct_state=+est-rel+rpl,ct_zone=644,ct_mark=0,reg5=0x$p,actions=resubmit(,94)
table=72,priority=50,ct_state=-new-est+rel-inv,ct_zone=644,ct_mark=0,reg5=0x$p,actions=resubmit(,94)
table=72,priority=40,ct_state=-est,reg5=0x$p,actions=resubmit(,93)
table=72,priority=40,ct_state=+est,ip,reg5=0x$p,actions=ct(commit,zone=NXM_NX_REG6[0..15],exec(load:0x1->NXM_NX_CT_MARK[]))
table=73,priority=100,reg6=0x284,dl_dst=$mac,actions=load:0x$p->NXM_NX_REG5[],resubmit(,81)
table=73,priority=90,ct_state=+new-est,ip,reg5=0x$p,actions=ct(commit,zone=NXM_NX_REG6[0..15]),resubmit(,91)
table=73,priority=80,reg5=0x$p,actions=resubmit(,94)
table=81,priority=100,arp,reg5=0x$p,actions=output:$p
table=81,priority=95,udp,reg5=0x$p,tp_src=67,tp_dst=68,actions=output:$p
table=81,priority=90,ct_state=-trk,ip,reg5=0x$p,actions=ct(table=82,zone=NXM_NX_REG6[0..15])
table=81,priority=80,ct_state=+trk,reg5=0x$p,actions=resubmit(,82)
table=82,priority=77,ct_state=+est-rel-rpl,tcp,reg5=0x$p,tp_dst=22,actions=output:$p
table=82,priority=77,ct_state=+new-est,tcp,reg5=0x$p,tp_dst=22,actions=ct(commit,zone=NXM_NX_REG6[0..15]),output:$p,resubmit(,92)
table=82,priority=75,ct_state=+est-rel-rpl,icmp,reg5=0x$p,actions=output:$p
table=82,priority=75,ct_state=+new-est,icmp,reg5=0x$p,actions=ct(commit,zone=NXM_NX_REG6[0..15]),output:$p,resubmit(,92)
table=82,priority=50,ct_mark=0x1,reg5=0x$p,actions=resubmit(,93)
table=82,priority=50,ct_state=+est-rel+rpl,ct_zone=644,ct_mark=0,reg5=0x$p,actions=output:$p
table=82,priority=50,ct_state=-new-est+rel-inv,ct_zone=644,ct_mark=0,reg5=0x$p,actions=output:$p
table=82,priority=40,ct_state=-est,reg5=0x$p,actions=resubmit(,93)
table=82,priority=40,ct_state=+est,ip,reg5=0x$p,actions=ct(commit,zone=NXM_NX_REG6[0..15],exec(load:0x1->NXM_NX_CT_MARK[]))
table=94,priority=12,reg6=0x284,dl_dst=$mac,actions=output:$p
EOF
        done
        cat <<'EOF'
table=60,priority=0,actions=NORMAL
table=71,priority=110,ct_state=+trk,actions=ct_clear,resubmit(,71)
table=71,priority=0,actions=drop
table=72,priority=50,ct_state=+inv+trk,actions=resubmit(,93)
table=72,priority=0,actions=drop
table=73,priority=0,actions=drop
table=81,priority=0,actions=drop
table=82,priority=50,ct_state=+inv+trk,actions=resubmit(,93)
table=82,priority=0,actions=drop
table=91,priority=1,actions=resubmit(,94)
table=92,priority=0,actions=drop
table=93,priority=0,actions=drop
table=94,priority=1,actions=NORMAL
EOF
    } >"$1"
}

ct_scn_neutron() { # kind
    P=sle2e$$ctn
    testbed_up "$P" || return 1
    local r=0 f log1 log2 A=$TESTBED_NET
    ct_host_mac 1 $CT_NMAC1
    ct_host_mac 2 $CT_NMAC2
    f=$(mktemp)
    ct_neutron_flows "$f"
    log1=$(mktemp)
    log2=$(mktemp)
    if ct_switch_up "$1" 2 "$f" && ct_serve h2 "$log2" 22 8080 && ct_serve h1 "$log1" 22 8080; then
        ct_case "neutron: ping h1 -> h2 (ingress ICMP)" pass ct_ping h1 "$A.2" 2
        ct_case "neutron: TCP h1 -> h2:22 (ingress SSH)" pass ct_tcp h1 "$A.2" 22 3
        ct_case "neutron: TCP h2 -> h1:22 (the other way)" pass ct_tcp h2 "$A.1" 22 3
        ct_case "neutron: the tracker lists h1 -> h2:22 in zone 644" pass \
            ct_lists "^tcp,orig=\(src=$A.1,dst=$A.2,sport=[0-9]+,dport=22\),.*zone=644"
        ct_case "neutron: TCP h1 -> h2:8080 (no ingress rule)" drop ct_tcp h1 "$A.2" 8080 1
        ct_case "neutron: TCP h2 -> h1:8080 (no ingress rule)" drop ct_tcp h2 "$A.1" 8080 1
        ct_case "neutron: a connection to 8080 reached h1 or h2" drop grep -q " 8080$" "$log1" "$log2"
        ct_case "neutron: unsolicited SYN-ACK h1 -> h2:22 (+inv)" drop \
            ct_stray h1 h2 $CT_NMAC1 $CT_NMAC2 "$A.1" "$A.2" 22
        # A rule taken away, as Neutron does it: its flows deleted; the
        # connections it allowed are then marked (ct_mark=1, the +est
        # flow's commit) and dropped from then on.
        local flag cw
        flag=$(mktemp -u)
        ip netns exec "$P-h1" python3 scripts/cttraffic.py twice "$A.2" 22 1 "$flag" >"$flag.out" &
        cw=$!
        wait_until 5 "h1's first exchange on a held SSH connection" test -e "$flag.ready"
        ct_del_flows "table=82,tcp,reg5=0x2,tp_dst=22" || r=1
        touch "$flag.go"
        wait "$cw"
        ct_case "neutron: a held SSH connection, first exchange" pass grep -q "^first ok" "$flag.out"
        ct_case "neutron: the same after its rule is deleted (ct_mark=1)" drop grep -q "second ok" "$flag.out"
        ct_case "neutron: the tracker lists it with mark=1" pass \
            ct_lists "^tcp,orig=\(src=$A.1,dst=$A.2,sport=[0-9]+,dport=22\),.*zone=644,mark=1,"
        rm -f "$flag" "$flag.ready" "$flag.go" "$flag.out"
    else
        r=1
    fi
    ct_switch_down
    rm -f "$f" "$log1" "$log2"
    testbed_down "$P"
    return $r
}

# ---------------------------------------------------------------------------
# 3. A SNAT gateway: h1, h2, h3 (TESTBED_NET.1-3, default route through a
# gateway MAC nobody has) reach h4, the outside server (CT_NET2.4), through
# sluice, which translates their source to CT_NET2.1 (nat(src=...) without
# a port range: the tracker keeps each source port while it is free, else
# finds another) and routes (MAC rewrites); the replies go back through
# ct(nat) to each host, and so do ICMP errors related to a connection
# (their quoted packet translated back too: the host's kernel takes the
# error only if it quotes the datagram it sent). All three connect from the
# same source port.
ct_scn_snat() { # kind
    P=sle2e$$cts
    TESTBED_HOSTS=4 testbed_up "$P" || return 1
    local r=0 f log i A=$TESTBED_NET B=$CT_NET2
    TESTBED_NET=$B testbed_check_subnet || { testbed_down "$P"; return 1; }
    for i in 1 2 3 4; do ct_host_mac $i "$(ct_mac $i)"; done
    for i in 1 2 3; do
        ip netns exec "$P-h$i" ip neigh replace "$A.254" lladdr $CT_GWMAC dev eth0 nud permanent
        ip netns exec "$P-h$i" ip route add default via "$A.254"
    done
    ip netns exec "$P-h4" ip addr flush dev eth0
    ip netns exec "$P-h4" ip addr add "$B.4/24" dev eth0
    ip netns exec "$P-h4" ip neigh replace "$B.1" lladdr $CT_GWMAC dev eth0 nud permanent
    ip netns exec "$P-h4" ip route add "$A.0/24" via "$B.1"
    f=$(mktemp)
    {
        echo "table=0,priority=10,ip,nw_src=$A.0/24,nw_dst=$B.0/24,actions=ct(commit,zone=5,nat(src=$B.1)),set_field:$CT_GWMAC->eth_src,set_field:$(ct_mac 4)->eth_dst,output:4"
        echo "table=0,priority=10,ip,in_port=4,nw_dst=$B.1,ct_state=-trk,actions=ct(zone=5,nat,table=1)"
        for i in 1 2 3; do
            echo "table=1,priority=10,ip,ct_state=+trk+est,nw_dst=$A.$i,actions=set_field:$CT_GWMAC->eth_src,set_field:$(ct_mac $i)->eth_dst,output:$i"
            echo "table=1,priority=10,ip,ct_state=+trk+rel,nw_dst=$A.$i,actions=set_field:$CT_GWMAC->eth_src,set_field:$(ct_mac $i)->eth_dst,output:$i"
        done
        echo "table=0,priority=0,actions=drop"
    } >"$f"
    log=$(mktemp)
    if ct_switch_up "$1" 4 "$f" && ct_serve h4 "$log" 8080; then
        for i in 1 2 3; do
            ct_case "snat: TCP h$i -> outside:8080 from port 33333" pass ct_tcp "h$i" "$B.4" 8080 3 33333
            ct_case "snat: ping h$i -> outside" pass ct_ping "h$i" "$B.4" 2
        done
        ct_case "snat: UDP h2 -> outside:9, its port unreachable back (+rel, inner packet translated)" pass \
            ip netns exec "$P-h2" python3 scripts/cttraffic.py refused "$B.4" 9 2 >/dev/null
        ct_case "snat: the server saw 3 connections, all from $B.1" pass \
            test "$(awk -v g="$B.1" '$1 == g' "$log" | wc -l)/$(wc -l <"$log")" = 3/3
        ct_case "snat: the first host's port kept (33333)" pass grep -q "^$B.1 33333 8080$" "$log"
        ct_case "snat: from 3 different ports" pass test "$(awk '{print $2}' "$log" | sort -u | wc -l)" = 3
        ct_case "snat: the tracker lists h1's connection translated" pass \
            ct_lists "^tcp,orig=\(src=$A.1,dst=$B.4,sport=33333,dport=8080\),reply=\(src=$B.4,dst=$B.1,sport=8080,"
        ct_case "snat: outside -> h1 directly" drop ct_ping h4 "$A.1" 1
    else
        r=1
    fi
    ct_switch_down
    rm -f "$f" "$log"
    testbed_down "$P"
    return $r
}

# ---------------------------------------------------------------------------
# 4. A DNAT port forward: h1 connects to VIP:80 (TESTBED_NET.100, whose MAC
# h1 has statically as h2's); sluice translates to h2:8080 (the backend),
# and the replies back to VIP:80.
ct_scn_dnat() { # kind
    P=sle2e$$ctd
    testbed_up "$P" || return 1
    local r=0 f log A=$TESTBED_NET
    ct_host_mac 1 "$(ct_mac 1)"
    ct_host_mac 2 "$(ct_mac 2)"
    ip netns exec "$P-h1" ip neigh replace "$A.100" lladdr "$(ct_mac 2)" dev eth0 nud permanent
    f=$(mktemp)
    cat >"$f" <<EOF
table=0,priority=20,tcp,in_port=1,nw_dst=$A.100,tp_dst=80,actions=ct(commit,zone=2,nat(dst=$A.2:8080)),output:2
table=0,priority=20,tcp,in_port=2,ct_state=-trk,actions=ct(zone=2,nat,table=2)
table=2,priority=10,tcp,ct_state=+trk+est,actions=output:1
table=0,priority=10,arp,actions=NORMAL
table=0,priority=0,actions=drop
EOF
    log=$(mktemp)
    if ct_switch_up "$1" 2 "$f" && ct_serve h2 "$log" 8080; then
        ct_case "dnat: TCP h1 -> VIP:80" pass ct_tcp h1 "$A.100" 80 3
        ct_case "dnat: h1's peer is VIP:80" pass eval '[[ "$CT_LAST" == "ok $A.1:"*" $A.100:80" ]]'
        ct_case "dnat: the backend saw h1 on 8080" pass grep -q "^$A.1 [0-9]* 8080$" "$log"
        ct_case "dnat: TCP h1 -> h2:8080 directly" drop ct_tcp h1 "$A.2" 8080 1
    else
        r=1
    fi
    ct_switch_down
    rm -f "$f" "$log"
    testbed_down "$P"
    return $r
}

# ct_expected: true if every case of $CT_RES went as expected.
ct_expected() { awk -F'|' '$2 != $3 { bad = 1 } END { exit bad }' "$CT_RES"; }

ct_test() { # scenario title
    CT_RES=$(mktemp)
    local r=0
    "ct_scn_$1" sluice || r=1
    ct_expected || r=1
    [ "$(wc -l <"$CT_RES")" -gt 0 ] || r=1
    rm -f "$CT_RES"
    finish "$2" $r
}

test_ct_tutorial_firewall() {
    ct_test tutorial "conntrack: the OVS conntrack tutorial's firewall (TCP and ping open from the left only, replies pass, dump-conntrack lists the connection)"
}
test_ct_neutron_firewall() {
    ct_test neutron "conntrack: Neutron's OVS firewall flows for two ports (egress any, ingress SSH and ICMP, zone from reg6, other TCP and +inv dropped)"
}
test_ct_snat_gateway() {
    ct_test snat "conntrack: a SNAT gateway (three hosts behind one address, TCP from one source port and ping, each reply to its host)"
}
test_ct_dnat_port_forward() {
    ct_test dnat "conntrack: a DNAT port forward (VIP:80 to backend:8080, replies from VIP:80)"
}

# 5. The same scenarios through Open vSwitch 3.1's userspace datapath and
# through sluice: every case the same on both (a table of them).
test_ct_open_vswitch_peer() {
    local r=0 s res_s res_o
    if ! command -v ovs-vswitchd >/dev/null || ! command -v ovs-ofctl >/dev/null; then
        echo "     Open vSwitch not found (scripts/setup.sh installs openvswitch-switch)"
        finish "conntrack: Open vSwitch's userspace conntrack as a peer" 1
        return
    fi
    res_s=$(mktemp)
    res_o=$(mktemp)
    for s in tutorial neutron snat dnat; do
        CT_RES=$res_s
        "ct_scn_$s" sluice || r=1
        CT_RES=$res_o
        "ct_scn_$s" ovs || r=1
    done
    python3 - "$res_s" "$res_o" <<'PY' || r=1
import sys
rows_s = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
rows_o = [l.rstrip("\n").split("|") for l in open(sys.argv[2])]
so = {n: g for n, _, g in rows_s}
oo = {n: g for n, _, g in rows_o}
names = [n for n, _, _ in rows_s] + [n for n, _, _ in rows_o if n not in so]
w = max(len(n) for n in names)
print(f"     {'case':<{w}}  sluice  Open vSwitch")
bad = 0
same = 0
for n in names:
    a, b = so.get(n, "-"), oo.get(n, "-")
    if a == b:
        same += 1
    else:
        bad = 1
    print(f"     {n:<{w}}  {a:<6}  {b}" + ("" if a == b else "  <- differs"))
print(f"     {same} of {len(names)} cases the same")
sys.exit(bad)
PY
    rm -f "$res_s" "$res_o"
    finish "conntrack: the same flows and traffic through Open vSwitch 3.1's userspace conntrack and through sluice pass or drop the same (tutorial, Neutron, SNAT, DNAT)" $r
}
