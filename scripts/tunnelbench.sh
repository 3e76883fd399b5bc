#!/usr/bin/env bash
# The overlay benchmarks (docs/PERFORMANCE.md, "Tunnel ports"). Root only.
#
# 1. Flow adds of the cloud agent's form: TUNBENCH_FLOWS (default 1 000 000)
#    neighbor flows (`sluice-bench flows --form agent`: VLAN + destination
#    MAC -> strip_vlan, load the VNI into NXM_NX_TUN_ID, set tun_dst, out of
#    VXLAN port 100), each distinct in MAC, VNI and endpoint, pushed over
#    one connection by `sluice-ctl add-flows` to BARRIER_REPLY into sluice
#    (TUNBENCH_RUNS times, default 3) with its RSS growth per flow, then into
#    Open vSwitch (netdev bridge with a flow-based VXLAN port 100) with the
#    same client, with `ovs-ofctl --bundle add-flows` and with plain
#    `ovs-ofctl add-flows` (wall time of the command for those two).
# 2. Forwarding through the overlay: two hosts and two VMs as in the e2e
#    overlay tests (tests/e2e/test_overlay.py; scripts/overlay_testbed.sh), VXLAN between the hosts, with
#    sluice on both hosts, the kernel's own path (a Linux bridge and a vxlan
#    device on each host) and Open vSwitch (netdev datapath, userspace
#    tunnels) on both: ping RTT, TCP throughput and 64-byte UDP frames/s
#    VM to VM, TUNBENCH_SECONDS (default 5) each.
#
#   TUNBENCH_RUNS=3 scripts/tunnelbench.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/testbed.sh
[ "$(id -u)" -eq 0 ] || { echo "tunnelbench: needs root" >&2; exit 1; }
RUNS=${TUNBENCH_RUNS:-3}
FLOWS=${TUNBENCH_FLOWS:-1000000}
SECS=${TUNBENCH_SECONDS:-5}
cargo build -q --release -p sluice -p ctl -p bench || exit 1
T=${CARGO_TARGET_DIR:-target}
SLUICE=$T/release/sluice
CTL=$T/release/sluice-ctl
BIN=$T/release
D=$(mktemp -d)
P=sltb$$
AUTO_RD=$D/rd
OUT=$D/sluice.log
SW=
OVS_PIDS_ALL=
cleanup() {
    [ -n "$SW" ] && kill "$SW" 2>/dev/null && wait "$SW" 2>/dev/null
    ov_down 2>/dev/null
    for p in $OVS_PIDS_ALL; do kill "$p" 2>/dev/null; done
    testbed_down "$P"
    rm -rf "$D"
}
trap cleanup EXIT
. scripts/overlay_testbed.sh

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
now() { date +%s.%N; }
# timed_add PID TARGET: sluice-ctl add-flows of the flows into TARGET; sets
# t (first byte to BARRIER_REPLY), t0/t1 (the command's start and end) and
# rss0/rss1 (PID's RSS before and after, kB).
timed_add() {
    rss0=$(rss_kb "$1")
    t0=$(now)
    t=$(SLUICE_CTL_TIMING=1 "$CTL" --timeout 900 add-flows "$2" "$D/flows.txt" 2>&1 >/dev/null |
        sed -n 's/.*first byte to BARRIER_REPLY \([0-9.]*\) s.*/\1/p')
    t1=$(now)
    rss1=$(rss_kb "$1")
}

echo "# Overlay benchmarks, $(date -u +%Y-%m-%d), $(nproc) CPUs, $(uname -r), commit $(git rev-parse --short HEAD)"
echo
echo "## $FLOWS flows of the agent's form over one connection, then one barrier"
echo
"$BIN/sluice-bench" flows --form agent --count "$FLOWS" --out "$D/flows.txt"
ip netns add "$P-f"
ip netns exec "$P-f" ip link set lo up
cat >"$D/flows.toml" <<TOML
[bridge]
name = "bench"
fail_mode = "secure"
local_port = false
[[port]]
name = "p1"
ofport = 1
backend = "pcap"
pcap_out = "/dev/null"
[[port]]
name = "vx0"
type = "vxlan"
ofport = 100
options = { remote_ip = "flow", key = "flow", local_ip = "127.0.0.1" }
TOML
echo "| switch, client | flows | first byte to BARRIER_REPLY (s) | command's wall time (s) | RSS growth (B/flow) |"
echo "|---|---|---|---|---|"
times=()
for r in $(seq 1 "$RUNS"); do
    mkdir -p "$D/run"
    ip netns exec "$P-f" "$SLUICE" --config "$D/flows.toml" --run-dir "$D/run" >"$D/f.log" 2>&1 &
    SW=$!
    tries=0
    while [ ! -S "$D/run/bench.mgmt" ] && [ $tries -lt 100 ]; do sleep 0.05; tries=$((tries + 1)); done
    timed_add "$SW" "unix:$D/run/bench.mgmt"
    n=$("$CTL" dump-tables "unix:$D/run/bench.mgmt" | awk '/table 0:/ {getline; sub(/.*active=/, ""); sub(/,.*/, ""); print}')
    kill -INT "$SW"
    wait "$SW" 2>/dev/null
    SW=
    [ "$n" = "$FLOWS" ] || { echo "sluice holds ${n:-?} flows, not $FLOWS" >&2; cat "$D/f.log" >&2; exit 1; }
    echo "| sluice, sluice-ctl (run $r) | $FLOWS | $t | $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b-a}') | $(( (rss1 - rss0) * 1024 / FLOWS )) |"
    times+=("$t")
done
echo "| **sluice, median of $RUNS** | $FLOWS | **$(printf '%s\n' "${times[@]}" | median)** | | |"

if command -v ovs-vswitchd >/dev/null; then
    mkdir -p "$D/ovs"
    ovs_start "$P-f" "$D/ovs"
    OVS_PIDS_ALL="$OVS_PIDS_ALL $OVS_VS_PID $OVS_DB_PID"
    vs="ip netns exec $P-f ovs-vsctl --timeout=60 --db=unix:$D/ovs/db.sock"
    vswitchd=$(pgrep -P "$OVS_VS_PID" ovs-vswitchd || echo "$OVS_VS_PID")
    ovs_bridge() {
        $vs --if-exists del-br br0
        $vs add-br br0 -- set bridge br0 datapath_type=netdev fail-mode=secure protocols=OpenFlow13 \
            -- add-port br0 vx0 -- set interface vx0 type=vxlan options:remote_ip=flow options:key=flow ofport_request=100
    }
    ver=$(ovs-vswitchd --version | awk 'NR==1 {print $NF}')
    ovs_bridge
    timed_add "$vswitchd" "unix:$D/ovs/br0.mgmt"
    n=$(ip netns exec "$P-f" ovs-ofctl -O OpenFlow13 dump-aggregate "unix:$D/ovs/br0.mgmt" | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p')
    echo "| Open vSwitch $ver netdev, sluice-ctl ($n flows held) | $FLOWS | $t | $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b-a}') | $(( (rss1 - rss0) * 1024 / FLOWS )) |"
    for how in "--bundle" ""; do
        ovs_bridge
        t0=$(now)
        ip netns exec "$P-f" ovs-ofctl -O OpenFlow13 $how add-flows "unix:$D/ovs/br0.mgmt" "$D/flows.txt" || echo "ovs-ofctl $how failed" >&2
        t1=$(now)
        n=$(ip netns exec "$P-f" ovs-ofctl -O OpenFlow13 dump-aggregate "unix:$D/ovs/br0.mgmt" | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p')
        echo "| Open vSwitch $ver netdev, ovs-ofctl ${how:-(plain)} ($n flows held) | $FLOWS | | $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b-a}') | |"
    done
    ovs_stop
fi
ip netns del "$P-f"

echo
echo "## Forwarding VM to VM through a VXLAN overlay ($SECS s each)"
echo
echo "| switches on both hosts | ping avg RTT (ms) | TCP (Mbit/s) | 64-byte UDP frames/s delivered |"
echo "|---|---|---|---|"
measure() { # label
    local rtt mbps pps
    rtt=$(ip netns exec "$P-va" ping -c 20 -i 0.05 -q "$OV_OVER.2" | awk -F/ '/rtt/ {print $5}')
    ip netns exec "$P-vb" timeout $((SECS + 60)) iperf3 -s -1 -p 5401 >/dev/null 2>&1 &
    local srv=$!
    sleep 0.5
    mbps=$(ip netns exec "$P-va" iperf3 -c "$OV_OVER.2" -p 5401 -t "$SECS" -J |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e6))')
    wait "$srv"
    ip netns exec "$P-vb" timeout $((SECS + 60)) iperf3 -s -1 -p 5402 >/dev/null 2>&1 &
    srv=$!
    sleep 0.5
    # 18-byte UDP payloads: 60-byte inner frames (64 with the FCS).
    pps=$(ip netns exec "$P-va" iperf3 -c "$OV_OVER.2" -p 5402 -u -b 0 -l 18 -t "$SECS" -J |
        python3 -c 'import json,sys
e = json.load(sys.stdin)["end"]["sum"]
print(round((e["packets"] - e["lost_packets"]) / e["seconds"]))')
    wait "$srv"
    echo "| $1 | $rtt | $mbps | $pps |"
}

# sluice on both hosts, the agent's flows.
mkdir -p "$AUTO_RD"
ov_up >/dev/null
ov_sluice a 1 2 vxlan
ov_sluice b 2 1 vxlan
measure "sluice (flow-based VXLAN port, the agent's flows)"
ov_down
testbed_down "$P"

# The kernel's own path: a Linux bridge joining the VM's veth and a vxlan
# device on each host.
ov_up >/dev/null
for h in a b; do
    me=1 peer=2
    [ $h = b ] && me=2 peer=1
    ip netns exec "$P-$h" ip link add vxl0 type vxlan id 21 remote "$OV_UNDER.$peer" local "$OV_UNDER.$me" dstport 4789
    ip netns exec "$P-$h" ip link add br0 type bridge
    ip netns exec "$P-$h" ip link set vxl0 master br0
    ip netns exec "$P-$h" ip link set vm master br0
    ip netns exec "$P-$h" ethtool -K vxl0 tx off >/dev/null 2>&1
    ip netns exec "$P-$h" ip link set vxl0 up
    ip netns exec "$P-$h" ip link set br0 up
done
sleep 1
measure "Linux bridge + vxlan device (the kernel's own path)"
testbed_down "$P"

# Open vSwitch on both hosts.
if command -v ovs-vswitchd >/dev/null; then
    ov_up >/dev/null
    for h in a b; do
        me=1 peer=2
        [ $h = b ] && me=2 peer=1
        mkdir -p "$D/ovs-$h"
        ovs_start "$P-$h" "$D/ovs-$h"
        OVS_PIDS_ALL="$OVS_PIDS_ALL $OVS_VS_PID $OVS_DB_PID"
        vs="ip netns exec $P-$h ovs-vsctl --timeout=30 --db=unix:$D/ovs-$h/db.sock"
        $vs add-br br-phy -- set bridge br-phy datapath_type=netdev
        $vs add-port br-phy "u$h"
        ip netns exec "$P-$h" ip addr flush dev "u$h"
        ip netns exec "$P-$h" ip addr add "$OV_UNDER.$me/24" dev br-phy
        ip netns exec "$P-$h" ip link set br-phy up
        $vs add-br br-int -- set bridge br-int datapath_type=netdev
        $vs add-port br-int vm
        $vs add-port br-int tun0 -- set interface tun0 type=vxlan "options:remote_ip=$OV_UNDER.$peer" options:key=21
        OVS_VS_PID= OVS_DB_PID=
    done
    sleep 2
    measure "Open vSwitch $(ovs-vswitchd --version | awk 'NR==1 {print $NF}') netdev (userspace VXLAN)"
    for p in $OVS_PIDS_ALL; do kill "$p" 2>/dev/null; done
    OVS_PIDS_ALL=
    testbed_down "$P"
fi
