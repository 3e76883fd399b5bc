# End-to-end test of the XDP fast path (sourced by e2e.sh, which runs it).
#
# An XDP redirect into a veth is delivered only if the veth's peer takes
# XDP frames (it needs NAPI: GRO on, or an XDP program of its own), so the
# hosts' ends have GRO on here; a physical NIC needs nothing of the kind.

xdp_metric() { # name path|-
    local sel='bridge="br0"'
    [ "$2" != - ] && sel="$sel,path=\"$2\""
    scrape 16697 | awk -v m="$1{$sel}" '$1 == m { print $2 }'
}

# The fast path's kernel and up counters from one scrape, as "KERNEL UP".
xdp_packets() {
    scrape 16697 | awk '$1 == "sluice_xdp_packets_total{bridge=\"br0\",path=\"kernel\"}" { k = $2 }
        $1 == "sluice_xdp_packets_total{bridge=\"br0\",path=\"up\"}" { u = $2 }
        END { print k + 0, u + 0 }'
}

# True once the kernel counter has passed N (sets k1 and u1).
xdp_kernel_above() { # n
    read -r k1 u1 < <(xdp_packets)
    [ "$k1" -gt "$1" ]
}

# TCP from h1 to h2 through the fast path (to client-port; h2 listens on
# server-port): prints the rate; false unless over 1000 frames went
# through the kernel and at most one in 20 up (a few may while a program
# is replaced).
xdp_tcp_in_kernel() { # what client-port [server-port]
    local k0 u0 k1 u1 mbps
    # The fast path adds what its programs counted to these counters once
    # a second (FOLD_EVERY in crates/datapath/src/fast.rs), which shows in
    # nothing else: wait out one fold so that earlier traffic (pings) is
    # not counted as this stream's.
    sleep 1.2
    read -r k0 u0 < <(xdp_packets)
    mbps=$(tcp_mbps "$2" "${3:-$2}")
    echo "     $1: ${mbps} Mbit/s"
    [ "${mbps:-0}" -gt 0 ] || return 1
    # The stream's frames, once a fold has counted them.
    wait_until 5 "over 1000 frames through the kernel in the metrics" xdp_kernel_above $((k0 + 1000)) ||
        { echo "     kernel $k0 -> $k1, up $u0 -> $u1"; return 1; }
    if [ $((u1 - u0)) -gt $(((k1 - k0) / 20)) ]; then
        echo "     kernel $k0 -> $k1, up $u0 -> $u1"
        return 1
    fi
}

# GRO on at hosts 1..N: a veth takes XDP redirects only then.
xdp_hosts_gro() { # N
    local i
    for i in $(seq 1 "$1"); do ip netns exec "$P-h$i" ethtool -K eth0 gro on >/dev/null 2>&1; done
}

# Waits (up to 5 s) for the programs to run the current tables (they are
# compiled in milliseconds); false, saying so, if they do not.
xdp_current() {
    wait_until 5 "the XDP programs to run the current flow tables (sluice_xdp_current 1)" xdp_is_current
}
xdp_is_current() { [ "$(xdp_metric sluice_xdp_current -)" = 1 ]; }

# Waits (up to 5 s) for the fast path to start or give up (it is compiled
# and attached after sluice is ready); false, saying so, unless it runs.
xdp_started() {
    wait_until 5 "the XDP fast path to start (or say why not)" grep -Eq "XDP fast path (running|off)" "$OUT" || return 1
    grep -q "XDP fast path running" "$OUT" || { echo "     the fast path did not start: $(grep 'XDP fast path off' "$OUT")"; return 1; }
}

# Starts sluice on p1 and p2 with back end BE (metrics on 16697) and
# rules forwarding between them, then waits for a ping and for the fast
# path to run the rules; sets RD (its run directory) and C (sluice-ctl
# for it). False, saying why, if a step fails.
xdp_pair() { # backend
    local ok=0
    RD=$(mktemp -d)
    start_sluice --port p1 --port p2 --backend "$1" --fail-mode secure --run-dir "$RD" \
        --metrics 127.0.0.1:16697
    C="$CTL --run-dir $RD"
    xdp_started || ok=1
    $C add-flow br0 "priority=10,in_port=1,actions=output:2" || ok=1
    $C add-flow br0 "priority=10,in_port=2,actions=output:1" || ok=1
    ping_ok h1 "$TESTBED_NET.2" || { echo "     no ping"; ok=1; }
    xdp_current || { echo "     the fast path is not current"; ok=1; }
    return $ok
}

test_xdp_fast_path() {
    P=sle2e$$x
    testbed_up "$P" || return 1
    local r=0 out
    xdp_hosts_gro 2
    xdp_pair xdp || r=1
    local rd=$RD
    xdp_tcp_in_kernel "TCP through the XDP fast path" 5341 || r=1
    # The rules and ports count what the kernel forwarded.
    out=$($C dump-flows br0)
    echo "$out" | grep -Eq 'n_packets=[0-9]{4,}.*priority=10,in_port=1 actions=output:2' ||
        { echo "     dump-flows: $out"; r=1; }
    $C dump-ports br0 2 | grep -Eq 'tx pkts=[0-9]{4,}' || { echo "     dump-ports: $($C dump-ports br0 2)"; r=1; }
    # trace says where a packet is handled.
    out=$($C trace br0 1 "tcp,nw_src=$TESTBED_NET.1,nw_dst=$TESTBED_NET.2,tp_dst=80")
    echo "$out" | grep -q "XDP fast path: stays in the kernel: out of port 2" ||
        { echo "     trace: $out"; r=1; }
    # A flow-mod takes effect at once, before the new program is built.
    $C add-flow br0 "priority=20,icmp,actions=drop" || r=1
    ip netns exec "$P-h1" ping -c 1 -W 1 -q "$TESTBED_NET.2" >/dev/null 2>&1 &&
        { echo "     ping passed a drop rule"; r=1; }
    # A rule the fast path does not run (an IP header edit) goes up to
    # the user-space pipeline, which runs it.
    $C add-flow br0 "priority=30,icmp,in_port=1,actions=mod_nw_tos:32,output:2" || r=1
    $C add-flow br0 "priority=30,icmp,in_port=2,actions=mod_nw_tos:32,output:1" || r=1
    ping_ok h1 "$TESTBED_NET.2" || { echo "     no ping through user space"; r=1; }
    [ "$(xdp_metric sluice_xdp_rules_up -)" = 2 ] || { echo "     rules up: $(xdp_metric sluice_xdp_rules_up -)"; r=1; }
    out=$($C trace br0 1 "icmp,nw_src=$TESTBED_NET.1,nw_dst=$TESTBED_NET.2")
    echo "$out" | grep -q "XDP fast path: goes up to the user-space pipeline: the rule has action set_field:8->ip_dscp" ||
        { echo "     trace: $out"; r=1; }
    [ "$(xdp_metric sluice_xdp_programs_attached -)" = 2 ] || r=1
    rm -rf "$rd"
    finish "xdp fast path: forwards in the kernel, counts, follows flow-mods at once, sends up what it cannot run" $r
}

# Backend xdp-generic: the same programs at the generic XDP hook. Its
# redirects leave through the target's transmit path, so the hosts' veths
# need no GRO (it is off here, where a native redirect would be dropped).
test_xdp_generic_fast_path() {
    P=sle2e$$g
    testbed_up "$P" || return 1
    local r=0 i
    for i in 1 2; do ip netns exec "$P-h$i" ethtool -K eth0 gro off >/dev/null 2>&1; done
    xdp_pair xdp-generic || r=1
    local rd=$RD
    [ "$(grep -c 'AF_XDP port.*xdp="\?generic' "$OUT")" = 2 ] ||
        { echo "     ports not at the generic hook: $(grep 'AF_XDP port' "$OUT")"; r=1; }
    xdp_tcp_in_kernel "TCP through the generic XDP fast path, hosts' GRO off" 5344 || r=1
    [ "$(xdp_metric sluice_xdp_programs_attached -)" = 2 ] || r=1
    rm -rf "$rd"
    finish "xdp-generic: the fast path at the generic hook forwards in the kernel without GRO at the hosts" $r
}

# The fast path rewrites IPv4 addresses and TCP ports in the kernel, with
# the checksums the receiving hosts verify (their checksum offloads are
# off, so a wrong one would be dropped): a port translation for TCP and an
# address translation for ICMP, both ways.
test_xdp_fast_path_edits() {
    P=sle2e$$y
    testbed_up "$P" || return 1
    local r=0 rd out m2
    xdp_hosts_gro 2
    m2=$(ip netns exec "$P-h2" cat /sys/class/net/eth0/address)
    ip netns exec "$P-h1" ip neigh replace "$TESTBED_NET.77" lladdr "$m2" dev eth0 nud permanent
    rd=$(mktemp -d)
    start_sluice --port p1 --port p2 --backend xdp --fail-mode secure --run-dir "$rd" \
        --metrics 127.0.0.1:16697
    local C="$CTL --run-dir $rd"
    xdp_started || r=1
    $C add-flow br0 "priority=10,in_port=1,actions=output:2" || r=1
    $C add-flow br0 "priority=10,in_port=2,actions=output:1" || r=1
    $C add-flow br0 "priority=40,tcp,in_port=1,tp_dst=5398,actions=set_field:5342->tcp_dst,output:2" || r=1
    $C add-flow br0 "priority=40,tcp,in_port=2,tp_src=5342,actions=set_field:5398->tcp_src,output:1" || r=1
    $C add-flow br0 "priority=40,icmp,in_port=1,nw_dst=$TESTBED_NET.77,actions=set_field:$TESTBED_NET.2->ip_dst,output:2" || r=1
    $C add-flow br0 "priority=40,icmp,in_port=2,nw_dst=$TESTBED_NET.1,actions=set_field:$TESTBED_NET.77->ip_src,output:1" || r=1
    xdp_current || { echo "     the fast path is not current"; r=1; }
    [ "$(xdp_metric sluice_xdp_rules_up -)" = 0 ] || { echo "     rules up: $(xdp_metric sluice_xdp_rules_up -)"; r=1; }
    out=$($C trace br0 1 "tcp,nw_src=$TESTBED_NET.1,nw_dst=$TESTBED_NET.2,tp_dst=5398")
    echo "$out" | grep -q "XDP fast path: stays in the kernel: out of port 2" ||
        { echo "     trace: $out"; r=1; }
    ping_ok h1 "$TESTBED_NET.77" || { echo "     no ping to the translated address"; r=1; }
    xdp_tcp_in_kernel "TCP to a translated port through the XDP fast path" 5398 5342 || r=1
    out=$($C dump-flows br0)
    echo "$out" | grep -Eq 'n_packets=[0-9]{4,}.*tp_dst=5398 actions=set_field:5342->tcp_dst' ||
        { echo "     dump-flows: $out"; r=1; }
    rm -rf "$rd"
    finish "xdp fast path: rewrites IPv4 addresses and TCP ports in the kernel, checksums the hosts accept" $r
}

# FLOOD in the kernel: a DEVMAP broadcast that leaves out the ingress port.
test_xdp_fast_path_flood() {
    P=sle2e$$z
    TESTBED_HOSTS=3 testbed_up "$P" || return 1
    local r=0 rd out
    xdp_hosts_gro 3
    rd=$(mktemp -d)
    start_sluice --port p1 --port p2 --port p3 --backend xdp --fail-mode secure --no-local --run-dir "$rd" \
        --metrics 127.0.0.1:16697
    local C="$CTL --run-dir $rd"
    xdp_started || r=1
    $C add-flow br0 "priority=10,actions=FLOOD" || r=1
    xdp_current || r=1
    [ "$(xdp_metric sluice_xdp_rules_up -)" = 0 ] || { echo "     rules up: $(xdp_metric sluice_xdp_rules_up -)"; r=1; }
    out=$($C trace br0 1 "udp,nw_src=$TESTBED_NET.1,nw_dst=$TESTBED_NET.3")
    echo "$out" | grep -q "XDP fast path: stays in the kernel: out of ports 2,3" ||
        { echo "     trace: $out"; r=1; }
    ping_ok h1 "$TESTBED_NET.2" || { echo "     no ping h1 -> h2"; r=1; }
    ping_ok h3 "$TESTBED_NET.1" || { echo "     no ping h3 -> h1"; r=1; }
    local tx0 rx0 tx1 rx1
    read -r rx0 tx0 < <(ip netns exec "$P-h1" cat /sys/class/net/eth0/statistics/rx_packets /sys/class/net/eth0/statistics/tx_packets | xargs)
    xdp_tcp_in_kernel "TCP flooded by the XDP fast path" 5343 || r=1
    read -r rx1 tx1 < <(ip netns exec "$P-h1" cat /sys/class/net/eth0/statistics/rx_packets /sys/class/net/eth0/statistics/tx_packets | xargs)
    # Not back out of the ingress port: h1 gets h2's ACKs, not its own data.
    [ $((rx1 - rx0)) -lt $((tx1 - tx0)) ] || { echo "     h1 sent $((tx1 - tx0)), received $((rx1 - rx0))"; r=1; }
    # Every flooded frame reaches the third host too.
    ip netns exec "$P-h3" ip -s link show eth0 | awk '/RX:/ {getline; print $2}' | {
        read -r n
        [ "${n:-0}" -gt 1000 ] || { echo "     h3 received $n packets"; exit 1; }
    } || r=1
    rm -rf "$rd"
    finish "xdp fast path: FLOOD in the kernel reaches every other port" $r
}
