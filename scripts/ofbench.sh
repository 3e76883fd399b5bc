#!/usr/bin/env bash
# The OpenFlow benchmarks (docs/PERFORMANCE.md, "OpenFlow agent"):
#
# 1. Flow adds: OFBENCH_FLOWS (default 1 000 000) distinct 5-tuple flows
#    pushed over one connection by `sluice-ctl add-flows` (every FLOW_MOD
#    back to back, then one BARRIER_REQUEST), timed from the first byte
#    sent to the BARRIER_REPLY, OFBENCH_RUNS times (default 3), with the
#    switch's RSS after. The same client and the same flows against Open
#    vSwitch 3.1 (netdev bridge, no ports, in a namespace of its own) when
#    it is installed and we are root, with OFBENCH_OVS_FLOWS flows (default
#    100 000: Open vSwitch applies unbundled flow-mods one by one).
# 2. PACKET_IN -> PACKET_OUT round trips: OFBENCH_FRAMES ARP requests
#    (default 1 000 000) offered at a pcap port paced at each rate of
#    OFBENCH_RATES; the table-miss sends them to an ARP-responder
#    controller (sluice-bench arp-responder) over TCP on loopback, whose
#    PACKET_OUTs send the replies out of the same port. Reports the round
#    trips the controller served per second and how many replies left the
#    port.
#
#   OFBENCH_RUNS=3 scripts/ofbench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/testbed.sh
RUNS=${OFBENCH_RUNS:-3}
FLOWS=${OFBENCH_FLOWS:-1000000}
OVS_FLOWS=${OFBENCH_OVS_FLOWS:-100000}
FRAMES=${OFBENCH_FRAMES:-1000000}
RATES=${OFBENCH_RATES:-"300000 400000 600000 800000 0"}
CTL_PORT=${OFBENCH_PORT:-16699}
cargo build -q --release -p sluice -p ctl -p bench
BIN=target/release
D=$(mktemp -d)
SW=
NS=
cleanup() {
    [ -n "$SW" ] && kill "$SW" 2>/dev/null && wait "$SW" 2>/dev/null || true
    [ -n "$NS" ] && { ovs_stop; ip netns del "$NS" 2>/dev/null || true; }
    rm -rf "$D"
}
trap cleanup EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

bridge_config() { # extra-port-lines
    cat <<CFG
[bridge]
name = "bench"
fail_mode = "secure"
local_port = false
controllers = ["tcp:127.0.0.1:$CTL_PORT"]
packet_in_rate = 10000000
[[port]]
name = "p1"
ofport = 1
backend = "pcap"
$1
CFG
}

start_sluice() { # config
    "$BIN/sluice" --config "$1" --run-dir "$D" >"$D/sluice.log" 2>&1 &
    SW=$!
    local tries=0
    while [ ! -S "$D/bench.mgmt" ] && [ $tries -lt 100 ]; do sleep 0.05; tries=$((tries + 1)); done
}

stop_sluice() {
    kill -INT "$SW" 2>/dev/null || true
    wait "$SW" 2>/dev/null || true
    SW=
}

add_flows() { # target flows-file -> seconds
    SLUICE_CTL_TIMING=1 "$BIN/sluice-ctl" --timeout 600 add-flows "$1" "$2" 2>&1 >/dev/null |
        sed -n 's/.*first byte to BARRIER_REPLY \([0-9.]*\) s.*/\1/p'
}

echo "# OpenFlow benchmarks, $(date -u +%Y-%m-%d), $(nproc) CPUs, $(uname -r)"
echo
echo "## Flow adds over one connection, then one barrier (sluice-ctl add-flows)"
echo
"$BIN/sluice-bench" flows --count "$FLOWS" --out "$D/flows.txt"
bridge_config 'pcap_out = "/dev/null"' | sed '/^controllers/d' >"$D/flows.toml"
echo "| switch | flows | first byte to BARRIER_REPLY (s) | flow-mods/s | switch RSS after (MB) |"
echo "|---|---|---|---|---|"
times=()
for r in $(seq 1 "$RUNS"); do
    start_sluice "$D/flows.toml"
    t=$(add_flows "unix:$D/bench.mgmt" "$D/flows.txt")
    rss=$(awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$SW/status")
    n=$("$BIN/sluice-ctl" dump-tables "unix:$D/bench.mgmt" | awk '/table 0:/ {getline; sub(/.*active=/, ""); sub(/,.*/, ""); print}')
    stop_sluice
    [ "$n" = "$FLOWS" ] || { echo "sluice holds ${n:-?} flows, not $FLOWS" >&2; exit 1; }
    echo "| sluice (run $r) | $FLOWS | $t | $(awk -v n="$FLOWS" -v t="$t" 'BEGIN {printf "%.0f", n/t}') | $rss |"
    times+=("$t")
done
m=$(printf '%s\n' "${times[@]}" | median)
echo "| **sluice, median of $RUNS** | $FLOWS | **$m** | $(awk -v n="$FLOWS" -v t="$m" 'BEGIN {printf "%.0f", n/t}') | |"

if command -v ovs-vswitchd >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    NS=slofb$$
    ip netns add "$NS"
    mkdir -p "$D/ovs"
    ovs_start "$NS" "$D/ovs"
    ip netns exec "$NS" ovs-vsctl --db="unix:$D/ovs/db.sock" add-br br0 -- set bridge br0 datapath_type=netdev fail-mode=secure protocols=OpenFlow13
    head -n "$OVS_FLOWS" "$D/flows.txt" >"$D/ovs-flows.txt"
    t=$(add_flows "unix:$D/ovs/br0.mgmt" "$D/ovs-flows.txt")
    rss=$(awk '/VmRSS/ {printf "%.0f", $2/1024}' "/proc/$(pgrep -P "$OVS_VS_PID" ovs-vswitchd || echo "$OVS_VS_PID")/status")
    echo "| Open vSwitch $(ovs-vswitchd --version | awk 'NR==1 {print $NF}') netdev | $OVS_FLOWS | $t | $(awk -v n="$OVS_FLOWS" -v t="$t" 'BEGIN {printf "%.0f", n/t}') | $rss |"
    ovs_stop
    ip netns del "$NS"
    NS=
else
    echo
    echo "(Open vSwitch not measured: needs root and openvswitch-switch installed)"
fi

echo
echo "## PACKET_IN -> PACKET_OUT round trips (ARP responder, $FRAMES requests offered at a pcap port)"
echo
"$BIN/sluice-bench" arp-requests --count "$FRAMES" --out "$D/arp.pcap"
echo "| offered (frames/s) | round trips served | round trips/s | replies out of the port | packet-in queue full | packet-out queue full | missed before the controller connected |"
echo "|---|---|---|---|---|---|---|"
for rate in $RATES; do
    pace=""
    [ "$rate" != 0 ] && pace="pcap_rate = $rate"
    bridge_config "pcap_in = \"$D/arp.pcap\"
pcap_out = \"$D/out.pcap\"
$pace" >"$D/pio.toml"
    "$BIN/sluice-bench" arp-responder --listen "127.0.0.1:$CTL_PORT" --idle 1 --json >"$D/resp.json" &
    resp=$!
    sleep 0.2
    start_sluice "$D/pio.toml"
    wait "$resp"
    stop_sluice
    served=$(sed -n 's/.*"packet_outs": \([0-9]*\).*/\1/p' "$D/resp.json")
    per_s=$(sed -n 's/.*"round_trips_per_s": \([0-9]*\).*/\1/p' "$D/resp.json")
    out=$(awk '$1 == "1" && $2 == "p1" {print $5}' "$D/sluice.log")
    qin=$(sed -n 's/.*packet-in queue full \([0-9]*\).*/\1/p' "$D/sluice.log")
    qout=$(sed -n 's/.*packet-out queue full \([0-9]*\).*/\1/p' "$D/sluice.log")
    missed=$(sed -n 's/^pipeline: dropped \([0-9]*\).*/\1/p' "$D/sluice.log")
    label=$rate
    [ "$rate" = 0 ] && label="unpaced"
    echo "| $label | $served | **$per_s** | $out | $qin | $qout | $missed |"
done
