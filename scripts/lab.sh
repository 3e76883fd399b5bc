#!/usr/bin/env bash
# The lab: the same two-host namespace testbed with each switch in turn, in
# one run: nullx (sluice's I/O with no pipeline), sluice standalone (NORMAL),
# sluice with a 200-rule table, and the Linux bridge (and Open vSwitch's
# userspace datapath when LAB_OVS=1 and it is installed). For each: ping RTT,
# TCP throughput (iperf3), 64-byte UDP frames per second delivered, and for
# sluice its CPU time and RSS. Prints a Markdown table. Root only.
# LAB_BACKENDS lists sluice's port back ends to compare (nullx and the
# 200-rule table on each; default: afpacket afpacket-mmsg afxdp);
# LAB_WORKERS=2 adds rows with two workers per bridge.
#   LAB_SECONDS=5 scripts/lab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/testbed.sh
testbed_prepare lab
SECS=${LAB_SECONDS:-5}
P=sllab$$
SW_PID=
cleanup() {
    [ -n "$SW_PID" ] && kill "$SW_PID" 2>/dev/null && wait "$SW_PID" 2>/dev/null || true
    testbed_down "$P"
}
trap cleanup EXIT

rules_200() {
    local f
    f=$(mktemp)
    {
        echo "[bridge]"
        echo "fail_mode = \"standalone\""
        echo "flows = ["
        local i
        for i in $(seq 0 197); do
            case $((i % 4)) in
                0) echo "  \"priority=$((300 + i)),tcp,tp_dst=$((10000 + i)),actions=drop\"," ;;
                1) echo "  \"priority=$((300 + i)),ip,nw_dst=172.$((16 + i % 16)).$i.0/24,actions=drop\"," ;;
                2) echo "  \"priority=$((300 + i)),dl_dst=02:ff:00:00:00:$(printf %02x $i),actions=drop\"," ;;
                3) echo "  \"priority=$((300 + i)),udp,tp_src=$((20000 + i)),actions=drop\"," ;;
            esac
        done
        echo "  \"priority=10,in_port=1,actions=output:2\","
        echo "  \"priority=10,in_port=2,actions=output:1\","
        echo "]"
        printf '[[port]]\nname = "p1"\nofport = 1\n[[port]]\nname = "p2"\nofport = 2\n'
    } >"$f"
    echo "$f"
}

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

measure() { # label
    local label=$1 rtt mbps pps t0 t1 cpu rss
    rtt=$(ip netns exec "$P-h1" ping -c 10 -i 0.2 -W 2 -q "$TESTBED_NET.2" | awk -F/ '/rtt/ {print $5}')
    ip netns exec "$P-h2" iperf3 -s -1 -p 5401 >/dev/null 2>&1 &
    local srv=$!
    sleep 0.3
    t0=$([ -n "$SW_PID" ] && cpu_ticks "$SW_PID" || echo 0)
    mbps=$(ip netns exec "$P-h1" iperf3 -c "$TESTBED_NET.2" -p 5401 -t "$SECS" -J |
        python3 -c 'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e6))')
    t1=$([ -n "$SW_PID" ] && cpu_ticks "$SW_PID" || echo 0)
    wait "$srv" 2>/dev/null || true
    ip netns exec "$P-h2" iperf3 -s -1 -p 5402 >/dev/null 2>&1 &
    srv=$!
    sleep 0.3
    # 18-byte UDP payloads: 60-byte frames on the wire (64 with the FCS).
    pps=$(ip netns exec "$P-h1" iperf3 -c "$TESTBED_NET.2" -p 5402 -u -b 0 -l 18 -t "$SECS" -J |
        python3 -c 'import json,sys
e = json.load(sys.stdin)["end"]["sum"]
print(round((e["packets"] - e["lost_packets"]) / e["seconds"]))')
    wait "$srv" 2>/dev/null || true
    if [ -n "$SW_PID" ]; then
        cpu=$(python3 -c "print(round(($t1 - $t0) / $(getconf CLK_TCK) / $SECS * 100))")
        rss=$(( $(rss_kb "$SW_PID") / 1024 ))
    else
        cpu="-"
        rss="-"
    fi
    printf '| %s | %s | %s | %s | %s | %s |' "$label" "$rtt" "$mbps" "$pps" "$cpu" "$rss"
}

run_sluice() { # label args...
    local label=$1
    shift
    testbed_up "$P"
    local out
    out=$(mktemp)
    ip netns exec "$P-sw" target/release/sluice "$@" >"$out" 2>&1 &
    SW_PID=$!
    sleep 0.5
    measure "$label"
    kill "$SW_PID"
    wait "$SW_PID" 2>/dev/null || true
    SW_PID=
    # In-switch delay over the whole run, as sluice reports it at exit.
    awk '/in-switch delay/ { printf " %s / %s / %s |\n", $(NF-10), $(NF-7), $(NF-1) }' "$out"
    rm -f "$out"
    testbed_down "$P"
}

echo "| switch | ping avg RTT (ms) | TCP (Mbit/s) | 64-byte UDP frames/s delivered | switch CPU (% of a core, TCP test) | switch RSS (MB) | in-switch delay p50 / p99 / max (us) |"
echo "|---|---|---|---|---|---|---|"
cfg=$(rules_200)
for be in ${LAB_BACKENDS:-afpacket afpacket-mmsg afxdp}; do
    run_sluice "nullx, $be (sluice I/O, no pipeline)" --backend "$be" --nullx --port p1 --port p2
    run_sluice "sluice standalone (NORMAL), $be" --backend "$be" --port p1 --port p2
    run_sluice "sluice, 200-rule table, $be" --backend "$be" --config "$cfg"
    if [ "${LAB_WORKERS:-1}" != 1 ]; then
        run_sluice "sluice, 200-rule table, $be, ${LAB_WORKERS} workers" --backend "$be" --workers "$LAB_WORKERS" --config "$cfg"
    fi
done
rm -f "$cfg"
testbed_up "$P"
ip netns exec "$P-sw" ip link add br0 type bridge
ip netns exec "$P-sw" ip link set p1 master br0
ip netns exec "$P-sw" ip link set p2 master br0
ip netns exec "$P-sw" ip link set br0 up
sleep 1
measure "Linux bridge (kernel)"
echo " - |"
testbed_down "$P"

# Open vSwitch, userspace (netdev) datapath, started by hand with a private
# run directory inside the switch namespace (PEERS.md).
run_ovs() { # label flows-file
    local label=$1 flows=$2 d
    d=$(mktemp -d)
    testbed_up "$P"
    ovs_start "$P-sw" "$d"
    ip netns exec "$P-sw" ovs-vsctl --db="unix:$d/db.sock" add-br br0 -- set bridge br0 datapath_type=netdev fail-mode=secure protocols=OpenFlow13 \
        -- add-port br0 p1 -- set interface p1 ofport_request=1 \
        -- add-port br0 p2 -- set interface p2 ofport_request=2 >/dev/null 2>&1
    ip netns exec "$P-sw" ovs-ofctl -O OpenFlow13 add-flows "unix:$d/br0.mgmt" "$flows" >/dev/null 2>&1
    SW_PID=$(pgrep -P "$OVS_VS_PID" ovs-vswitchd || echo "$OVS_VS_PID")
    sleep 1
    measure "$label"
    echo " - |"
    ovs_stop
    SW_PID=
    testbed_down "$P"
    rm -rf "$d"
}

if command -v ovs-vswitchd >/dev/null 2>&1 && [ "${LAB_OVS:-1}" = 1 ]; then
    f=$(mktemp)
    echo "priority=0,actions=normal" >"$f"
    run_ovs "Open vSwitch netdev (NORMAL)" "$f"
    cfg=$(rules_200)
    # The same 200 flows, one per line, for ovs-ofctl.
    sed -n 's/^  "\(.*\)",$/\1/p' "$cfg" >"$f"
    rm -f "$cfg"
    run_ovs "Open vSwitch netdev, 200 rules" "$f"
    rm -f "$f"
fi
