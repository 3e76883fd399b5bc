#!/usr/bin/env bash
# The lab: the two-host namespace testbed (scripts/testbed.sh) with each
# switch in turn, one round: every switch once, in the same order every
# round, so a driver that calls this several times (scripts/bench/report.py)
# gets interleaved runs (A B C A B C ...) and fair ratios. Root only.
#
#   scripts/lab.sh [--json] [forwarding|flows]
#
# forwarding (default): for the floor (nullx: sluice's I/O with no
#   pipeline, on each back end), the Linux bridge, and for each rule set of
#   LAB_SETS (`sluice-bench lab-rules`: 4p20r, 32p200r, 100k1k, 1m) sluice
#   on each back end of LAB_BACKENDS and Open vSwitch's userspace (netdev)
#   datapath with the same flows through the same client (sluice-ctl
#   add-flows), then sluice with 2 workers (LAB_WORKERS) on the first set
#   and the last back end: ping RTT (median of 100 pings, and every
#   sample), TCP throughput (iperf3), 64-byte and 1514-byte UDP frames per
#   second delivered, the switch's CPU during the TCP test (and per
#   delivered Gbit/s), its RSS, and sluice's in-switch delay percentiles
#   (p50/p99/p99.9/max over the whole run, as sluice prints them at exit).
#   On 2 cores the hosts' iperf3 share the CPUs with the switch: frame
#   rates measure the whole machine, and a switch that leaves the hosts
#   more CPU delivers more.
# flows: the active-flows scaling: nullx (no rules), then sluice (each
#   back end) and Open vSwitch with the 1m rule set (LAB_FLOWS_SET=100k1k
#   for a quick run), each fed by tcpreplay from host 1 with captures (`sluice-bench traffic`) of LAB_FRAMES frames over K distinct
#   flows for K in LAB_FLOWS, uniform, and Zipf for the largest K: frames
#   per second offered (tcpreplay's rate) and delivered (host 2's receive
#   counter), so the cost of cache misses shows. Each row carries the
#   capture's distinct flows (fewer than K when LAB_FRAMES < K, and with
#   Zipf's tail).
# conntrack: a stateful firewall between the two hosts (new TCP
#   connections only from host 1 to host 2, replies and established
#   traffic both ways, ARP passed, the rest dropped) in sluice (each back
#   end of LAB_CT_BACKENDS, default afpacket) and Open vSwitch's netdev
#   datapath with the Open vSwitch conntrack tutorial's flows (the same
#   client, sluice-ctl add-flows), and in the Linux kernel (a bridge with
#   br_netfilter and an nftables forward chain: `ct state
#   established,related accept`, `ct state new` from host 1 to host 2,
#   policy drop); each also without the firewall (sluice and Open vSwitch:
#   in_port=1 -> 2 and back; the bridge with no rules). Per switch: TCP
#   connections per second (`sluice-bench conn-client` for LAB_SECONDS
#   with each count of concurrent loops in LAB_CT_CONCURRENCY, default
#   "1 16", spread over 16 server ports so no 4-tuple repeats: handshake,
#   64-byte request, 256-byte response, close) with failures and
#   connect-to-close times, and the connections the tracker gained
#   (closed ones stay in TIME_WAIT, so about one per connection); iperf3
#   TCP; the switch's CPU and the machine's during each test; whether a
#   connection from host 2 to host 1 is dropped. LAB_CT_BACKENDS: sluice's
#   back ends (default "afpacket afxdp"). Switches rotate by one each
#   round (BENCH_ROUND).
#
# --json prints one JSON object per row on stdout (progress on stderr);
# otherwise a Markdown table. Knobs: LAB_SECONDS (each iperf3 test,
# default 3), LAB_SETS, LAB_BACKENDS (default "afpacket afxdp xdp
# xdp-generic"),
# LAB_WORKERS (default 2; 1 for none), LAB_OVS=0 to leave out Open vSwitch,
# LAB_FLOWS (default "1 1000 100000 1000000"), LAB_FRAMES (default
# 1000000), LAB_PINGS (default 100).
set -euo pipefail
cd "$(dirname "$0")/.."
JSON=0
SCENARIO=forwarding
for a in "$@"; do
    case $a in
        --json) JSON=1 ;;
        forwarding | flows | conntrack) SCENARIO=$a ;;
        *) echo "lab: unknown argument $a (--json, forwarding, flows, conntrack)" >&2; exit 2 ;;
    esac
done
. scripts/testbed.sh
testbed_prepare lab >&2
# The peers beyond the demo's: Open vSwitch, tcpreplay.
scripts/setup.sh >&2
cargo build -q --release -p ctl -p bench >&2
SECS=${LAB_SECONDS:-3}
SETS=${LAB_SETS:-"4p20r 32p200r 100k1k 1m"}
BACKENDS=${LAB_BACKENDS:-"afpacket afxdp xdp xdp-generic"}
# The XDP fast path redirects into veths, which deliver only to a peer that
# takes XDP frames (GRO on at the hosts' ends): with xdp in the run, every
# switch of the run gets hosts with GRO on, so the rows stay comparable
# (xdp-generic needs no GRO: its redirects go through the transmit path).
HOST_GRO=0
case " $BACKENDS " in *" xdp "*) HOST_GRO=1 ;; esac
WORKERS=${LAB_WORKERS:-2}
BIN=${CARGO_TARGET_DIR:-target}/release
P=sllab$$
D=$(mktemp -d)
SW_PID=
SW_METRICS=
OVS_ON=0
cleanup() {
    [ -n "$SW_PID" ] && [ "$OVS_ON" = 0 ] && kill "$SW_PID" 2>/dev/null && wait "$SW_PID" 2>/dev/null || true
    [ "$OVS_ON" = 1 ] && ovs_stop
    testbed_down "$P"
    rm -rf "$D"
}
trap cleanup EXIT
have_ovs() { [ "${LAB_OVS:-1}" = 1 ] && command -v ovs-vswitchd >/dev/null 2>&1; }
progress() { echo "lab: $*" >&2; }

# A switch that died mid-measurement fails the round (no made-up CPU figure).
cpu_ticks() {
    awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null && return
    echo "lab: the switch (pid $1) is gone: $(tail -5 "$D/sluice.log" 2>/dev/null)" >&2
    exit 1
}
rss_mb() { awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status" 2>/dev/null || echo null; }

# The number of ports a rule set spans (`sluice-bench lab-rules`).
set_ports() { case $1 in 4p20r) echo 4 ;; 32p200r) echo 32 ;; *) echo 2 ;; esac; }
set_rules() { case $1 in 4p20r) echo 20 ;; 32p200r) echo 200 ;; 100k1k) echo 101000 ;; 1m) echo 1000000 ;; none) echo 0 ;; esac; }

# A testbed whose switch has PORTS ports: p1 and p2 to the two hosts, the
# rest veths whose other end stays in the switch's namespace (so the switch
# has the ports and their rings, and no host needs a namespace).
lab_up() { # ports
    testbed_up "$P"
    local i
    if [ "$HOST_GRO" = 1 ]; then
        for i in 1 2; do ip netns exec "$P-h$i" ethtool -K eth0 gro on >/dev/null; done
    fi
    for i in $(seq 3 "$1"); do
        ip netns exec "$P-sw" ip link add "p$i" type veth peer name "x$i"
        ip netns exec "$P-sw" ip link set "x$i" up
        ip netns exec "$P-sw" ip link set "p$i" up
    done
}

# iperf3 in host 1 against a one-off server in host 2; prints the JSON.
iperf() { # port args...
    local port=$1
    shift
    ip netns exec "$P-h2" timeout $((SECS + 60)) iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
    local srv=$!
    sleep 0.2
    ip netns exec "$P-h1" timeout $((SECS + 20)) iperf3 -c "$TESTBED_NET.2" -p "$port" -t "$SECS" -J "$@" 2>/dev/null || true
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
}
udp_fps() { python3 -c 'import json,sys
try:
    e = json.load(sys.stdin)["end"]["sum"]
    print(round((e["packets"] - e["lost_packets"]) / e["seconds"]))
except Exception:
    print("null")'; }

# Measures the testbed as it is now; PID is the switch process (or "").
# Sets M_* for the row.
measure() { # pid
    local pid=$1 t0 t1
    # LAB_PINGS (100) pings 10 ms apart: the median RTT, and every sample
    # for the CDF.
    M_RTTS=$(ip netns exec "$P-h1" ping -c "${LAB_PINGS:-100}" -i 0.01 -W 2 "$TESTBED_NET.2" |
        sed -n 's/.*time=\([0-9.]*\) ms.*/\1/p' | paste -sd, -)
    M_RTT=$(python3 -c "import statistics; s = [$M_RTTS]; print(round(statistics.median(s), 3) if s else 'null')")
    # The switch's CPU over the TCP client's run only (server up first).
    ip netns exec "$P-h2" timeout $((SECS + 60)) iperf3 -s -1 -p 5401 >/dev/null 2>&1 &
    local srv=$! s0 s1 out
    sleep 0.2
    t0=$([ -n "$pid" ] && cpu_ticks "$pid" || echo 0)
    s0=$(date +%s.%N)
    out=$(ip netns exec "$P-h1" timeout $((SECS + 20)) iperf3 -c "$TESTBED_NET.2" -p 5401 -t "$SECS" -J 2>/dev/null || true)
    s1=$(date +%s.%N)
    t1=$([ -n "$pid" ] && cpu_ticks "$pid" || echo 0)
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
    M_TCP=$(echo "$out" | python3 -c 'import json,sys
try:
    print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))
except Exception:
    print("null")')
    # 18-byte UDP payloads: 60-byte frames on the wire (64 with the FCS);
    # 1472: 1514-byte frames.
    M_FPS=$(iperf 5402 -u -b 0 -l 18 | udp_fps)
    M_FPS1500=$(iperf 5403 -u -b 0 -l 1472 | udp_fps)
    # A figure every switch has: its absence means the test broke.
    if [ "$M_TCP" = null ] || [ "$M_FPS" = null ] || [ "$M_RTT" = null ]; then
        echo "lab: a test gave no figure (TCP $M_TCP, frames/s $M_FPS, RTT $M_RTT)" >&2
        [ -f "$D/sluice.log" ] && tail -5 "$D/sluice.log" >&2
        exit 1
    fi
    # The XDP fast path: the share of frames it kept in the kernel (its
    # counters are folded once a second).
    M_KSHARE=null
    if [ -n "${SW_METRICS:-}" ]; then
        sleep 1.2
        M_KSHARE=$(ip netns exec "$P-sw" bash -c "exec 3<>/dev/tcp/127.0.0.1/$SW_METRICS; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3" |
            python3 -c 'import re,sys
t = sys.stdin.read()
k = re.search(r"sluice_xdp_packets_total\{[^}]*path=\"kernel\"\} (\d+)", t)
u = re.search(r"sluice_xdp_packets_total\{[^}]*path=\"up\"\} (\d+)", t)
print(round(int(k[1]) / (int(k[1]) + int(u[1])), 4) if k and u and int(k[1]) + int(u[1]) else "null")')
    fi
    if [ -n "$pid" ]; then
        cpu_ticks "$pid" >/dev/null
        M_CPU=$(python3 -c "print(round(($t1 - $t0) / $(getconf CLK_TCK) / ($s1 - $s0) * 100, 1))")
        M_RSS=$(rss_mb "$pid")
    else
        M_CPU=null
        M_RSS=null
    fi
}

# One row: JSON or a Markdown line, from the M_* of the last measure.
row() { # switch backend set workers delay-json
    python3 - "$JSON" "$1" "$2" "$3" "$(set_ports "$3")" "$(set_rules "$3")" "$4" "$5" \
        "$M_TCP" "$M_FPS" "$M_FPS1500" "$M_RTT" "$M_CPU" "$M_RSS" "[$M_RTTS]" "$HOST_GRO" "${M_KSHARE:-null}" \
        "${M_READY:-null}" <<'PY'
import json, sys
a = sys.argv[1:]
as_json, sw, be, rset = a[0], a[1], a[2], a[3]
ports, rules, workers, delay = int(a[4]), int(a[5]), int(a[6]), json.loads(a[7])
tcp, fps, fps1500, rtt, cpu, rss = (json.loads(v) for v in a[8:14])
row = {"scenario": "forwarding", "switch": sw, "backend": be, "set": rset, "ports": ports,
       "rules": rules, "workers": workers, "tcp_mbit": tcp, "frames_per_s": fps,
       "frames_1500_per_s": fps1500, "rtt_ms": rtt, **delay, "cpu_pct": cpu,
       "cpu_pct_per_gbit": round(cpu / (tcp / 1000), 1) if cpu is not None and tcp else None,
       "rss_mb": rss, "rtt_samples_ms": json.loads(a[14]), "host_gro": a[15] == "1",
       "xdp_kernel_share": json.loads(a[16]), "xdp_ready_s": json.loads(a[17])}
if as_json == "1":
    print(json.dumps(row))
else:
    f = lambda v: "-" if v is None else str(v)
    print("| " + " | ".join(f(row[k]) for k in ("switch", "tcp_mbit", "frames_per_s", "frames_1500_per_s", "rtt_ms",
          "delay_p50_us", "delay_p99_us", "delay_max_us", "cpu_pct", "cpu_pct_per_gbit", "rss_mb")) + " |")
PY
}

# sluice's in-switch delay over the run, from the line it prints at exit.
delay_of() { # log
    python3 - "$1" <<'PY'
import json, re, sys
m = re.search(r"in-switch delay.*?p50 ([\d.]+) us\s+p99 ([\d.]+) us\s+p99.9 ([\d.]+) us\s+max ([\d.]+) us", open(sys.argv[1]).read())
keys = ("delay_p50_us", "delay_p99_us", "delay_p999_us", "delay_max_us")
print(json.dumps(dict(zip(keys, map(float, m.groups()))) if m else dict.fromkeys(keys)))
PY
}
NO_DELAY='{"delay_p50_us": null, "delay_p99_us": null, "delay_p999_us": null, "delay_max_us": null}'

# sluice on the testbed's PORTS ports with back end BE and the rules of SET
# (none: nullx) loaded through sluice-ctl; sets SW_PID.
start_sluice() { # set backend workers
    local set=$1 be=$2 workers=$3 ports i
    ports=$(set_ports "$set")
    {
        printf '[bridge]\nname = "lab"\nfail_mode = "secure"\nlocal_port = false\nbackend = "%s"\nworkers = %s\n' "$be" "$workers"
        for i in $(seq 1 "$ports"); do printf '[[port]]\nname = "p%s"\nofport = %s\n' "$i" "$i"; done
    } >"$D/lab.toml"
    local extra=()
    [ "$set" = none ] && extra=(--nullx)
    SW_METRICS=
    if [ "${be%-generic}" = xdp ] && [ "$set" != none ]; then
        SW_METRICS=9479
        extra+=(--metrics "127.0.0.1:$SW_METRICS")
    fi
    ip netns exec "$P-sw" "$BIN/sluice" --config "$D/lab.toml" --run-dir "$D" "${extra[@]}" >"$D/sluice.log" 2>&1 &
    SW_PID=$!
    if [ "$set" = none ]; then
        # nullx has no management socket: give its rings a moment.
        sleep 0.3
    else
        local tries=0
        while [ ! -S "$D/lab.mgmt" ] && [ $tries -lt 100 ] && kill -0 "$SW_PID" 2>/dev/null; do
            sleep 0.05
            tries=$((tries + 1))
        done
        [ -S "$D/lab.mgmt" ] && "$BIN/sluice-ctl" --timeout 600 add-flows "unix:$D/lab.mgmt" "$D/$set.rules" >/dev/null
    fi
    # The XDP fast path compiles the table once it is in: measure from
    # when its programs run it (the wait is a figure of its own).
    M_READY=null
    if [ -n "$SW_METRICS" ]; then
        local t0 tries=0
        t0=$(date +%s.%N)
        while [ $tries -lt 1200 ] && kill -0 "$SW_PID" 2>/dev/null; do
            ip netns exec "$P-sw" bash -c "exec 3<>/dev/tcp/127.0.0.1/$SW_METRICS; printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3; cat <&3" 2>/dev/null |
                grep -q '^sluice_xdp_current{bridge="lab"} 1$' && break
            sleep 0.1
            tries=$((tries + 1))
        done
        M_READY=$(python3 -c "print(round($(date +%s.%N) - $t0, 2))")
        [ $tries -lt 1200 ] || { echo "lab: the XDP fast path did not come up in 120 s" >&2; M_READY=null; }
    fi
    if ! kill -0 "$SW_PID" 2>/dev/null || { [ "$set" != none ] && [ ! -S "$D/lab.mgmt" ]; }; then
        echo "lab: sluice did not start: $(cat "$D/sluice.log")" >&2
        exit 1
    fi
}
stop_sluice() {
    SW_METRICS=
    kill -INT "$SW_PID" 2>/dev/null || true
    # Bounded: a switch that does not stop in 10 s is killed.
    local tries=0
    while kill -0 "$SW_PID" 2>/dev/null && [ $tries -lt 100 ]; do sleep 0.1; tries=$((tries + 1)); done
    kill -KILL "$SW_PID" 2>/dev/null || true
    wait "$SW_PID" 2>/dev/null || true
    SW_PID=
}

# Open vSwitch netdev with the testbed's ports and the rules of SET (none:
# NORMAL); sets SW_PID to ovs-vswitchd.
start_ovs() { # set
    local set=$1 ports i
    ports=$(set_ports "$set")
    mkdir -p "$D/ovs"
    ovs_start "$P-sw" "$D/ovs"
    OVS_ON=1
    local cmd=(add-br br0 -- set bridge br0 datapath_type=netdev fail-mode=secure protocols=OpenFlow13)
    for i in $(seq 1 "$ports"); do cmd+=(-- add-port br0 "p$i" -- set interface "p$i" "ofport_request=$i"); done
    ip netns exec "$P-sw" ovs-vsctl --timeout=30 --db="unix:$D/ovs/db.sock" "${cmd[@]}" >/dev/null
    local tries=0
    while [ ! -S "$D/ovs/br0.mgmt" ] && [ $tries -lt 100 ]; do sleep 0.05; tries=$((tries + 1)); done
    "$BIN/sluice-ctl" --timeout 600 add-flows "unix:$D/ovs/br0.mgmt" "$D/$set.rules" >/dev/null
    SW_PID=$(pgrep -P "$OVS_VS_PID" ovs-vswitchd || echo "$OVS_VS_PID")
}
stop_ovs() {
    ovs_stop
    OVS_ON=0
    SW_PID=
    rm -rf "$D/ovs"
}

# A row's name for sluice on back end BE.
sluice_label() { # be
    case $1 in xdp) echo "sluice xdp fast path" ;; xdp-generic) echo "sluice xdp-generic fast path" ;; *) echo "sluice $1" ;; esac
}

forwarding_sluice() { # label set backend workers
    local label=$1 set=$2 be=$3 workers=$4
    progress "$label"
    lab_up "$(set_ports "$set")"
    start_sluice "$set" "$be" "$workers"
    sleep 0.3
    measure "$SW_PID"
    stop_sluice
    row "$label" "$be" "$set" "$workers" "$(delay_of "$D/sluice.log")"
    testbed_down "$P"
}

forwarding_ovs() { # set
    M_READY=null
    local set=$1 label="Open vSwitch netdev $(set_rules "$1") rules"
    progress "$label"
    lab_up "$(set_ports "$set")"
    start_ovs "$set"
    sleep 1
    measure "$SW_PID"
    stop_ovs
    row "$label" netdev "$set" 1 "$NO_DELAY"
    testbed_down "$P"
}

forwarding_bridge() {
    M_READY=null
    progress "Linux bridge"
    lab_up 2
    ip netns exec "$P-sw" ip link add br0 type bridge
    ip netns exec "$P-sw" ip link set p1 master br0
    ip netns exec "$P-sw" ip link set p2 master br0
    ip netns exec "$P-sw" ip link set br0 up
    sleep 1
    measure ""
    row "Linux bridge" kernel none 1 "$NO_DELAY"
    testbed_down "$P"
}

scenario_forwarding() {
    local set be
    for set in $SETS; do "$BIN/sluice-bench" lab-rules --set "$set" --out "$D/$set.rules"; done
    if [ "$JSON" = 0 ]; then
        echo "| switch | TCP (Mbit/s) | 64-byte frames/s | 1514-byte frames/s | ping RTT (ms) | delay p50 (us) | p99 | max | CPU (% of a core) | CPU % per Gbit/s | RSS (MB) |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|"
    fi
    for be in $BACKENDS; do
        # nullx on xdp ports is nullx on AF_XDP: the afxdp row.
        [ "${be%-generic}" = xdp ] || forwarding_sluice "nullx $be" none "$be" 1
    done
    forwarding_bridge
    # Within a rule set, the switches' order turns by one each round
    # (BENCH_ROUND, from the report's driver), so no switch always runs
    # first or last.
    local turn=${BENCH_ROUND:-1} items item i n
    for set in $SETS; do
        items=()
        for be in $BACKENDS; do items+=("sluice:$be"); done
        have_ovs && items+=("ovs:")
        n=${#items[@]}
        for i in $(seq 0 $((n - 1))); do
            item=${items[$(((i + turn - 1) % n))]}
            case $item in
                sluice:*) forwarding_sluice "$(sluice_label "${item#sluice:}") $(set_rules "$set") rules" "$set" "${item#sluice:}" 1 ;;
                ovs:) forwarding_ovs "$set" ;;
            esac
        done
    done
    if [ "$WORKERS" != 1 ]; then
        # The testbed's veths have one receive queue: AF_XDP cannot give
        # two workers a queue each, so the 2-worker row is AF_PACKET's.
        set=${SETS%% *}
        be=${BACKENDS%% *}
        forwarding_sluice "$(sluice_label "$be") $(set_rules "$set") rules, $WORKERS workers" "$set" "$be" "$WORKERS"
    fi
    have_ovs || progress "Open vSwitch: skipped (LAB_OVS=0 or ovs-vswitchd not installed)"
}

# tcpreplay in host 1 of a capture; prints "offered delivered" frames/s,
# delivered counted by host 2's interface.
replay() { # pcap
    local rx0 rx1 out secs
    rx0=$(ip netns exec "$P-h2" cat /sys/class/net/eth0/statistics/rx_packets)
    out=$(ip netns exec "$P-h1" timeout 120 tcpreplay -i eth0 -K --topspeed "$1" 2>&1) || true
    sleep 0.2
    rx1=$(ip netns exec "$P-h2" cat /sys/class/net/eth0/statistics/rx_packets)
    secs=$(echo "$out" | sed -n 's/.*Actual: [0-9]* packets ([0-9]* bytes) sent in \([0-9.]*\) seconds.*/\1/p')
    local sent
    sent=$(echo "$out" | sed -n 's/.*Actual: \([0-9]*\) packets.*/\1/p')
    if [ -z "$secs" ] || [ -z "$sent" ] || ! awk -v s="$secs" 'BEGIN {exit !(s > 0)}'; then
        echo "lab: tcpreplay gave no rate: $out" >&2
        exit 1
    fi
    python3 -c "print(round($sent / $secs), round(($rx1 - $rx0) / $secs))"
}

flows_switch() { # label kind(sluice|ovs|nullx) backend
    local label=$1 kind=$2 be=$3
    progress "$label, active flows"
    lab_up 2
    case $kind in
        sluice) start_sluice "$FSET" "$be" 1 ;;
        nullx) start_sluice none "$be" 1 ;;
        ovs) start_ovs "$FSET" ;;
    esac
    sleep 0.5
    local k dist
    for k in $FLOWS; do
        for dist in uniform $([ "$k" = "$MAXK" ] && echo zipf); do
            local rates
            rates=$(replay "$D/traffic-$k-$dist.pcap")
            read -r off del <<<"$rates"
            local rules
            rules=$(set_rules "$FSET")
            [ "$kind" = nullx ] && rules=0
            if [ "$JSON" = 1 ]; then
                echo "{\"scenario\": \"flows\", \"switch\": \"$label\", \"backend\": \"$be\", \"rules\": $rules, \"active_flows\": $k, \"dist\": \"$dist\", \"frames\": $FRAMES, \"distinct_flows\": ${DISTINCT[$k-$dist]}, \"offered_per_s\": $off, \"frames_per_s\": $del}"
            else
                echo "| $label | $k | $dist | $off | $del |"
            fi
        done
    done
    case $kind in ovs) stop_ovs ;; *) stop_sluice ;; esac
    testbed_down "$P"
}

scenario_flows() {
    command -v tcpreplay >/dev/null 2>&1 || { echo "lab: flows needs tcpreplay (scripts/setup.sh installs it)" >&2; exit 1; }
    FLOWS=${LAB_FLOWS:-"1 1000 100000 1000000"}
    FRAMES=${LAB_FRAMES:-1000000}
    MAXK=$(printf '%s\n' $FLOWS | sort -n | tail -1)
    FSET=${LAB_FLOWS_SET:-1m}
    case $FSET in 1m) ;; 100k1k) [ "$MAXK" -le 100000 ] || { echo "lab: LAB_FLOWS_SET=100k1k has 100 000 5-tuple rules: LAB_FLOWS up to 100000" >&2; exit 2; } ;;
        *) echo "lab: LAB_FLOWS_SET: 1m or 100k1k" >&2; exit 2 ;; esac
    "$BIN/sluice-bench" lab-rules --set "$FSET" --out "$D/$FSET.rules"
    # Each capture's distinct flows (fewer than K with fewer frames than K,
    # or with Zipf's tail) go into its rows.
    local k
    declare -gA DISTINCT
    for k in $FLOWS; do
        DISTINCT[$k-uniform]=$("$BIN/sluice-bench" traffic --flows "$k" --frames "$FRAMES" --dist uniform --out "$D/traffic-$k-uniform.pcap")
    done
    DISTINCT[$MAXK-zipf]=$("$BIN/sluice-bench" traffic --flows "$MAXK" --frames "$FRAMES" --dist zipf --out "$D/traffic-$MAXK-zipf.pcap")
    if [ "$JSON" = 0 ]; then
        echo "| switch ($(set_rules "$FSET") rules) | active flows | spread | offered frames/s | delivered frames/s |"
        echo "|---|---|---|---|---|"
    fi
    local be
    for be in $BACKENDS; do [ "${be%-generic}" = xdp ] || flows_switch "nullx $be" nullx "$be"; done
    for be in $BACKENDS; do flows_switch "$(sluice_label "$be") $(set_rules "$FSET") rules" sluice "$be"; done
    if have_ovs; then flows_switch "Open vSwitch netdev $(set_rules "$FSET") rules" ovs netdev; else progress "Open vSwitch: skipped"; fi
}

# The conntrack scenario (see the top). The firewall: Open vSwitch's
# conntrack tutorial's flows (crates/pipeline/tests/conntrack.rs,
# FIREWALL), ARP by NORMAL.
CT_FIREWALL='table=0,priority=1,actions=drop
table=0,priority=10,arp,actions=normal
table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1)
table=1,in_port=1,ip,ct_state=+trk+new,actions=ct(commit),output:2
table=1,in_port=1,ip,ct_state=+trk+est,actions=output:2
table=1,in_port=2,ip,ct_state=+trk+new,actions=drop
table=1,in_port=2,ip,ct_state=+trk+est,actions=output:1'
CT_PLAIN='in_port=1,actions=output:2
in_port=2,actions=output:1'

# The machine's busy CPU time (all CPUs, in ticks) from /proc/stat.
machine_busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }

# The connections the firewall's tracker holds now.
ct_nconns() { # kind
    case $1 in
        sluice) "$BIN/sluice-ctl" ct-get-nconns "unix:$D/lab.mgmt" 2>/dev/null | tr -dc 0-9 ;;
        ovs) ovs-appctl -t "$D/ovs/ovs-vswitchd.$OVS_VS_PID.ctl" dpctl/ct-get-nconns 2>/dev/null | tr -dc 0-9 ;;
        kernel) ip netns exec "$P-sw" cat /proc/sys/net/netfilter/nf_conntrack_count 2>/dev/null | tr -dc 0-9 ;;
    esac
}

# The Linux bridge between p1 and p2; with fw, br_netfilter hands bridged
# IPv4 to an nftables forward chain with the firewall's policy.
start_kernel_ct() { # fw|none
    ip netns exec "$P-sw" ip link add br0 type bridge
    ip netns exec "$P-sw" ip link set p1 master br0
    ip netns exec "$P-sw" ip link set p2 master br0
    ip netns exec "$P-sw" ip link set br0 up
    if [ "$1" = fw ]; then
        ip netns exec "$P-sw" sysctl -qw net.bridge.bridge-nf-call-iptables=1
        printf '%s\n' "table ip ctlab {" \
            "    chain forward {" \
            "        type filter hook forward priority filter; policy drop;" \
            "        ct state established,related accept" \
            "        ct state new ip saddr $TESTBED_NET.1 ip daddr $TESTBED_NET.2 accept" \
            "    }" "}" | ip netns exec "$P-sw" nft -f -
    fi
}

host1_reaches_host2() { ip netns exec "$P-h1" ping -c 1 -W 1 "$TESTBED_NET.2" >/dev/null 2>&1; }

# One row: switch KIND (sluice, ovs, kernel) with back end BE, with the
# firewall (fw) or without (none).
conntrack_row() { # kind backend fw|none
    local kind=$1 be=$2 fw=$3 label
    case $kind in
        sluice) label="sluice $be" ;;
        ovs) label="Open vSwitch netdev" ;;
        kernel) label="Linux bridge" ;;
    esac
    case $fw in fw) label="$label, ct firewall" ;; none) label="$label, no firewall" ;; esac
    progress "$label"
    lab_up 2
    # Source ports: the widest range, so a run never reuses one.
    ip netns exec "$P-h1" sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
    local set=ctplain
    [ "$fw" = fw ] && set=ctfw
    SW_PID=
    case $kind in
        sluice) start_sluice "$set" "$be" 1 ;;
        ovs) start_ovs "$set" ;;
        kernel) start_kernel_ct "$fw" ;;
    esac
    wait_until 20 "host 1 to reach host 2 through $label" host1_reaches_host2 || exit 1
    ip netns exec "$P-h2" "$BIN/sluice-bench" conn-server --listen "$TESTBED_NET.2:5500" --ports "$CT_PORTS" \
        --max-seconds $((SECS * 6 + 120)) >/dev/null 2>&1 &
    local srv=$!
    wait_until 10 "conn-server listening in host 2" tcp_listening "$P-h2" $((5500 + CT_PORTS - 1)) || exit 1
    local n0 n1 t0 t1 m0 m1 s0 s1 out conc conn_rows=()
    for conc in $CT_CONC; do
        n0=$(ct_nconns "$kind")
        t0=$([ -n "$SW_PID" ] && cpu_ticks "$SW_PID" || echo 0)
        m0=$(machine_busy)
        s0=$(date +%s.%N)
        out=$(ip netns exec "$P-h1" timeout $((SECS + 60)) "$BIN/sluice-bench" conn-client \
            --connect "$TESTBED_NET.2:5500" --ports "$CT_PORTS" --concurrency "$conc" --seconds "$SECS") || {
            echo "lab: conn-client failed through $label" >&2
            exit 1
        }
        s1=$(date +%s.%N)
        m1=$(machine_busy)
        t1=$([ -n "$SW_PID" ] && cpu_ticks "$SW_PID" || echo 0)
        n1=$(ct_nconns "$kind")
        local conn_cpu=null machine_cpu
        [ -n "$SW_PID" ] && conn_cpu=$(python3 -c "print(round(($t1 - $t0) / $(getconf CLK_TCK) / ($s1 - $s0) * 100, 1))")
        machine_cpu=$(python3 -c "print(round(($m1 - $m0) / $(getconf CLK_TCK) / ($s1 - $s0) * 100, 1))")
        conn_rows+=("$conc|$out|${n0:-null}|${n1:-null}|$conn_cpu|$machine_cpu")
    done
    kill "$srv" 2>/dev/null || true
    wait "$srv" 2>/dev/null || true
    # Established throughput, and the switch's CPU over the client's run.
    ip netns exec "$P-h2" timeout $((SECS + 60)) iperf3 -s -1 -p 5401 >/dev/null 2>&1 &
    local isrv=$! tout
    wait_until 10 "iperf3 listening in host 2" tcp_listening "$P-h2" 5401 || exit 1
    t0=$([ -n "$SW_PID" ] && cpu_ticks "$SW_PID" || echo 0)
    s0=$(date +%s.%N)
    tout=$(ip netns exec "$P-h1" timeout $((SECS + 20)) iperf3 -c "$TESTBED_NET.2" -p 5401 -t "$SECS" -J 2>/dev/null || true)
    s1=$(date +%s.%N)
    t1=$([ -n "$SW_PID" ] && cpu_ticks "$SW_PID" || echo 0)
    kill "$isrv" 2>/dev/null || true
    wait "$isrv" 2>/dev/null || true
    local tcp tcp_cpu=null rss=null
    tcp=$(echo "$tout" | python3 -c 'import json,sys
try:
    print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e6))
except Exception:
    print("null")')
    if [ -n "$SW_PID" ]; then
        tcp_cpu=$(python3 -c "print(round(($t1 - $t0) / $(getconf CLK_TCK) / ($s1 - $s0) * 100, 1))")
        rss=$(rss_mb "$SW_PID")
    fi
    # The policy: host 2 may not open a connection to host 1 (dropped: the
    # connect hangs until the bound; passed: host 1 answers with a RST).
    local rc=0 blocked=false
    ip netns exec "$P-h2" timeout 1 bash -c "exec 3<>/dev/tcp/$TESTBED_NET.1/5999" 2>/dev/null || rc=$?
    [ "$rc" = 124 ] && blocked=true
    case $kind in
        sluice) stop_sluice ;;
        ovs) stop_ovs ;;
    esac
    testbed_down "$P"
    [ "$tcp" = null ] && { echo "lab: iperf3 gave no figure through $label" >&2; exit 1; }
    python3 - "$JSON" "$label" "$kind" "$be" "$fw" "$tcp" "$tcp_cpu" "$rss" "$blocked" "${conn_rows[@]}" <<'PY'
import json, sys
a = sys.argv[1:]
base = {"scenario": "conntrack", "switch": a[1], "kind": a[2], "backend": a[3], "firewall": a[4],
        "reverse_blocked": a[8] == "true"}
rows = []
for cr in a[9:]:
    conc, out, n0, n1, cpu, mcpu = cr.split("|")
    c = json.loads(out)
    n0, n1 = json.loads(n0), json.loads(n1)
    rows.append({**base, "test": "connections", "concurrency": int(conc), "conns_per_s": c["conns_per_s"],
                 "connections": c["connections"], "conn_failures": c["conn_failures"],
                 "conn_p50_ms": c["conn_p50_ms"], "conn_p99_ms": c["conn_p99_ms"],
                 "conn_max_ms": c["conn_max_ms"], "ct_conns_after": n1,
                 "ct_conns_added": n1 - n0 if n0 is not None and n1 is not None else None,
                 "cpu_pct": json.loads(cpu), "machine_cpu_pct": json.loads(mcpu)})
tcp, tcp_cpu = json.loads(a[5]), json.loads(a[6])
rows.append({**base, "test": "tcp", "tcp_mbit": tcp, "cpu_pct": tcp_cpu,
             "cpu_pct_per_gbit": round(tcp_cpu / (tcp / 1000), 1) if tcp_cpu is not None and tcp else None,
             "rss_mb": json.loads(a[7])})
for row in rows:
    if a[0] == "1":
        print(json.dumps(row))
    else:
        f = lambda v: "-" if v is None else str(v)
        print("| " + " | ".join(f(row.get(k)) for k in ("switch", "test", "concurrency", "conns_per_s", "conn_failures",
              "conn_p50_ms", "conn_p99_ms", "ct_conns_added", "tcp_mbit", "cpu_pct", "machine_cpu_pct",
              "reverse_blocked")) + " |")
PY
}

scenario_conntrack() {
    command -v nft >/dev/null 2>&1 || { echo "lab: conntrack needs nft (Debian nftables)" >&2; exit 1; }
    CT_CONC=${LAB_CT_CONCURRENCY:-"1 16"}
    CT_PORTS=16
    local ct_backends=${LAB_CT_BACKENDS:-"afpacket afxdp"}
    printf '%s\n' "$CT_FIREWALL" >"$D/ctfw.rules"
    printf '%s\n' "$CT_PLAIN" >"$D/ctplain.rules"
    if [ "$JSON" = 0 ]; then
        echo "| switch | test | loops | connections/s | failures | connect-to-close p50 (ms) | p99 | tracked connections added | TCP (Mbit/s) | switch CPU (%) | machine CPU (% of 200) | host 2 -> host 1 dropped |"
        echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
    fi
    local items=() be
    for be in $ct_backends; do items+=("sluice:$be:fw" "sluice:$be:none"); done
    have_ovs && items+=("ovs:netdev:fw" "ovs:netdev:none")
    items+=("kernel:kernel:fw" "kernel:kernel:none")
    local turn=${BENCH_ROUND:-1} n=${#items[@]} i item k b f
    for i in $(seq 0 $((n - 1))); do
        item=${items[$(((i + turn - 1) % n))]}
        IFS=: read -r k b f <<<"$item"
        conntrack_row "$k" "$b" "$f"
    done
    have_ovs || progress "Open vSwitch: skipped (LAB_OVS=0 or ovs-vswitchd not installed)"
}

"scenario_$SCENARIO"
