#!/usr/bin/env bash
# The OpenFlow benchmarks (docs/PERFORMANCE.md, "OpenFlow agent"), the
# "control" scenario of the benchmark report.
#
#   scripts/ofbench.sh [--json]
#
# With --json: ONE round (each switch once, sluice then Open vSwitch for
# each measurement), only JSON objects on stdout, one per line, every one
# with "scenario":"control"; progress on stderr. A driver runs it several
# times and takes medians. Without --json: OFBENCH_RUNS rounds (default 3)
# and Markdown tables of the medians, from the same rows.
#
# Needs root (namespaces) for the Open vSwitch rows and the update latency;
# Open vSwitch 3.1 is started by hand (scripts/testbed.sh, ovs_start), a
# fresh ovs-vswitchd in a namespace of its own for every variant, and is
# skipped (with a note on stderr) when not installed or not root.
#
# 1. flow_add: OFBENCH_FLOWS (default 1 000 000) distinct 5-tuple flows
#    (`sluice-bench flows`, `tcp,nw_src=10.A.B.C,...,actions=output:2`)
#    into an empty table, then a check that the switch holds them all
#    (sluice: dump-tables; Open vSwitch: dump-aggregate flow_count):
#    - sluice, client `sluice-ctl add-flows` (every FLOW_MOD back to back
#      over the unix management socket, then one BARRIER_REQUEST); seconds
#      = first byte sent -> BARRIER_REPLY (SLUICE_CTL_TIMING=1);
#    - Open vSwitch (netdev bridge, no ports), OFBENCH_OVS_FLOWS flows
#      (default OFBENCH_FLOWS), with the same client and timing;
#    - Open vSwitch with `ovs-ofctl -O OpenFlow13 --bundle add-flows`, and
#      with plain `ovs-ofctl -O OpenFlow13 add-flows` (OFBENCH_PLAIN_FLOWS,
#      default 100 000: it applies them one by one, ~51 s for 1M); seconds
#      = the command's wall time.
#    rss_mb is the switch's RSS after (sluice, or ovs-vswitchd);
#    bytes_per_flow its RSS growth from before the adds to after / flows.
# 2. flow_modify_10pct: then every 10th flow's actions output:2 -> output:3,
#    one FLOW_MOD MODIFY_STRICT each (`modify_strict FLOW` lines of an
#    add-flows file), back to back, then a barrier; same clients and
#    timings as 1 (sluice-ctl for both switches, ovs-ofctl --bundle for
#    Open vSwitch); checked with dump-aggregate out_port=3.
# 3. flow_delete_all: then `sluice-ctl del-flows` (one FLOW_MOD DELETE of
#    every table, then a barrier), its wall time (connect included), for
#    sluice and Open vSwitch; checked: 0 flows left.
# 4. packet_in_out (sluice only): OFBENCH_FRAMES ARP requests (default
#    1 000 000) offered at a pcap port paced at each rate of OFBENCH_RATES
#    (0: unpaced); the table-miss sends them to an ARP-responder controller
#    (sluice-bench arp-responder) over TCP on loopback, whose PACKET_OUTs
#    send the replies out of the same port. Rows: round trips served and
#    per second (responder's count), replies out of the port, loss_pct =
#    100 * (offered - replies out) / offered, the switch's packet-in and
#    packet-out queue-full counts, and missed_before_controller: frames
#    dropped before the responder's table-miss flow was in (they count in
#    the loss too). Open vSwitch is left out: it has no
#    pcap-like port to offer frames at a set rate, only real interfaces.
# 5. update_latency: FLOW_MOD sent -> first frame forwarded by the new
#    rule, on the namespace testbed (h1 - p1 [switch] p2 - h2, fail mode
#    secure, no flow: nothing reaches h2). h1 sends 20 000 UDP frames/s
#    to h2 (static ARP entries); scripts/update_latency.py adds
#    `priority=100,in_port=1,actions=output:2` over the management socket
#    and takes the first arrival's kernel timestamp in h2 minus the send
#    time (CLOCK_REALTIME), OFBENCH_SAMPLES times (default 10), deleting
#    the rule and waiting for 200 ms of silence before each. Median and max
#    latency, median time to the BARRIER_REPLY (read by the tool, so
#    it can come after the first frame). Resolution: the frame interval,
#    50 us. sluice (afpacket ports) and Open vSwitch (netdev bridge on the
#    same veths, so its datapath's cached drop flow must be revalidated).
#    Then, with OFBENCH_LAT_PREFILL flows (default 100 000; 0: skip)
#    installed first (the 5-tuple TCP flows of 1, which the UDP stream
#    does not match), the same with both FLOW_MODs sent alone, no
#    barrier, and 50 ms of silence: how long the switch takes to apply
#    changes in a row that nobody forces (`flows_installed`, `barrier`:
#    false in the row; `delete_ms_*`: DELETE_STRICT sent -> last frame).
#
# Knobs: OFBENCH_FLOWS, OFBENCH_OVS_FLOWS, OFBENCH_PLAIN_FLOWS,
# OFBENCH_FRAMES, OFBENCH_RATES, OFBENCH_SAMPLES, OFBENCH_LAT_PREFILL,
# OFBENCH_RUNS (Markdown only), OFBENCH_PORT (the responder's TCP port,
# default 16699), OFBENCH_PARTS (default "flows packet_in latency": the
# parts 1-3, 4 and 5 to run), OFBENCH_OVS=0 (sluice only), OFBENCH_BIN
# (a directory of built sluice, sluice-ctl and sluice-bench to use instead
# of building this checkout: a before/after runs this script on both), and
# OFBENCH_QUICK=1: 100 000 flows, 10 000 plain ovs-ofctl flows, 200 000
# frames, rates "100000 0", 3 samples (under a minute).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/testbed.sh

JSON=0
for arg in "$@"; do
    case $arg in
    --json) JSON=1 ;;
    -h | --help)
        sed -n '2,/^set -euo/p' scripts/ofbench.sh | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "ofbench: unknown argument $arg (--json)" >&2
        exit 2
        ;;
    esac
done

if [ "${OFBENCH_QUICK:-0}" = 1 ]; then
    d_flows=100000 d_plain=10000 d_frames=200000 d_rates="100000 0" d_samples=3
else
    d_flows=1000000 d_plain=100000 d_frames=1000000 d_rates="300000 400000 600000 800000 0" d_samples=10
fi
FLOWS=${OFBENCH_FLOWS:-$d_flows}
OVS_FLOWS=${OFBENCH_OVS_FLOWS:-$FLOWS}
PLAIN_FLOWS=${OFBENCH_PLAIN_FLOWS:-$d_plain}
FRAMES=${OFBENCH_FRAMES:-$d_frames}
RATES=${OFBENCH_RATES:-$d_rates}
SAMPLES=${OFBENCH_SAMPLES:-$d_samples}
LAT_PREFILL=${OFBENCH_LAT_PREFILL:-100000}
PARTS=${OFBENCH_PARTS:-flows packet_in latency}
RUNS=${OFBENCH_RUNS:-3}
CTL_PORT=${OFBENCH_PORT:-16699}

log() { echo "ofbench: $*" >&2; }
die() {
    log "$*"
    exit 1
}

# Rows go to fd 3 (stdout), everything else to stderr.
exec 3>&1 1>&2
if [ -n "${OFBENCH_BIN:-}" ]; then
    BIN=$OFBENCH_BIN # prebuilt (another checkout's, for a before/after)
else
    cargo build -q --release -p sluice -p ctl -p bench
    BIN=${CARGO_TARGET_DIR:-target}/release
fi
CTL=$BIN/sluice-ctl
D=$(mktemp -d)
SW=
NS=
P=
cleanup() {
    if [ -n "$SW" ]; then
        kill "$SW" 2>/dev/null || true
        wait "$SW" 2>/dev/null || true
    fi
    ovs_stop
    if [ -n "$NS" ]; then ip netns del "$NS" 2>/dev/null || true; fi
    if [ -n "$P" ]; then testbed_down "$P"; fi
    rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

OVS=0
if [ "${OFBENCH_OVS:-1}" = 0 ]; then
    log "Open vSwitch not measured: OFBENCH_OVS=0"
elif command -v ovs-vswitchd >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    OVS=1
else
    log "Open vSwitch not measured: needs root and openvswitch-switch installed"
fi

# One JSON object from NAME VALUE pairs: a value that is a number is
# written as one, anything else as a string; an empty value is an error.
row() {
    local out="" k v
    while [ $# -gt 0 ]; do
        k=$1 v=$2
        shift 2
        [ -n "$v" ] || die "no value for $k"
        if [[ $v =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; then
            out+="${out:+,}\"$k\":$v"
        else
            out+="${out:+,}\"$k\":\"$v\""
        fi
    done
    echo "{$out}" >&3
}

now_ns() { date +%s%N; }
secs_since() { awk -v a="$1" -v b="$(now_ns)" 'BEGIN {printf "%.6f", (b - a) / 1e9}'; }
per_s() { awk -v n="$1" -v t="$2" 'BEGIN {printf "%.0f", (t > 0) ? n / t : 0}'; }
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
mb() { awk -v k="$1" 'BEGIN {printf "%.0f", k / 1024}'; }
per_flow() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN {printf "%.0f", (b - a) * 1024 / n}'; }

# sluice-ctl add-flows TARGET FILE; prints first byte -> BARRIER_REPLY (s).
ctl_timed() {
    if ! SLUICE_CTL_TIMING=1 timeout 900 "$CTL" --timeout 600 add-flows "$1" "$2" >/dev/null 2>"$D/ctl.err"; then
        cat "$D/ctl.err" >&2
        die "sluice-ctl add-flows $1 $2 failed"
    fi
    sed -n 's/.*first byte to BARRIER_REPLY \([0-9.]*\) s.*/\1/p' "$D/ctl.err"
}

# That SWITCH ("sluice": sluice-ctl, else ovs-ofctl) at TARGET holds WANT
# flows (matching FILTER): dump-aggregate's flow_count.
expect_count() { # switch target want [filter]
    local n tool=(timeout 120 ovs-ofctl -O OpenFlow13 -t 100)
    [ "$1" = sluice ] && tool=(timeout 120 "$CTL" --timeout 100)
    n=$("${tool[@]}" dump-aggregate "$2" ${4:+"$4"} | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p')
    [ "$n" = "$3" ] || die "$1 holds ${n:-?} flows${4:+ with $4}, not $3"
}

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

start_sluice() { # config [netns]
    local sock
    sock="$D/$(sed -n 's/^name = "\(.*\)"/\1/p' "$1" | head -n 1).mgmt"
    rm -f "$sock"
    if [ -n "${2:-}" ]; then
        ip netns exec "$2" "$BIN/sluice" --config "$1" --run-dir "$D" >"$D/sluice.log" 2>&1 &
    else
        "$BIN/sluice" --config "$1" --run-dir "$D" >"$D/sluice.log" 2>&1 &
    fi
    SW=$!
    local tries=0
    while [ ! -S "$sock" ]; do
        tries=$((tries + 1))
        [ $tries -lt 200 ] || { cat "$D/sluice.log" >&2; die "sluice did not start"; }
        sleep 0.05
    done
}

stop_sluice() {
    kill -INT "$SW" 2>/dev/null || true
    wait "$SW" 2>/dev/null || true
    SW=
}

# A fresh Open vSwitch in namespace $1 with an empty netdev bridge br0
# (fail mode secure, OpenFlow 1.3); its socket is $D/ovs/br0.mgmt.
OVSD=$D/ovs
ovs_fresh() { # netns
    rm -rf "$OVSD"
    mkdir -p "$OVSD"
    ovs_start "$1" "$OVSD" >&2
    ip netns exec "$1" ovs-vsctl --db="unix:$OVSD/db.sock" --timeout=30 add-br br0 -- set bridge br0 datapath_type=netdev fail-mode=secure protocols=OpenFlow13 >&2
    local tries=0
    while [ ! -S "$OVSD/br0.mgmt" ]; do
        tries=$((tries + 1))
        [ $tries -lt 100 ] || die "Open vSwitch did not create br0 (see $OVSD/vswitchd.log)"
        sleep 0.1
    done
}

ovs_pid() { pgrep -P "$OVS_VS_PID" ovs-vswitchd || echo "$OVS_VS_PID"; }

ovs_netns_up() {
    NS=slcp$$-ovs
    ip netns add "$NS"
    ovs_fresh "$NS"
}

ovs_netns_down() {
    ovs_stop
    ip netns del "$NS"
    NS=
}

# 1-3 for sluice and Open vSwitch.
flow_benchmarks() {
    log "flows: $FLOWS 5-tuple flows"
    "$BIN/sluice-bench" flows --count "$FLOWS" --out "$D/flows.txt"
    awk 'NR % 10 == 1 {sub(/output:2$/, "output:3"); print "modify_strict " $0}' "$D/flows.txt" >"$D/mod.txt"
    local mods t r0 r1 pid
    mods=$(wc -l <"$D/mod.txt")

    log "flows: sluice"
    bridge_config 'pcap_out = "/dev/null"' | sed '/^controllers/d' >"$D/flows.toml"
    start_sluice "$D/flows.toml"
    local tgt=unix:$D/bench.mgmt
    r0=$(rss_kb "$SW")
    t=$(ctl_timed "$tgt" "$D/flows.txt")
    r1=$(rss_kb "$SW")
    local n
    n=$("$CTL" dump-tables "$tgt" | awk '/table 0:/ {getline; sub(/.*active=/, ""); sub(/,.*/, ""); print}')
    [ "$n" = "$FLOWS" ] || die "sluice holds ${n:-?} flows, not $FLOWS"
    row scenario control test flow_add switch sluice client sluice-ctl flows "$FLOWS" seconds "$t" \
        flow_mods_per_s "$(per_s "$FLOWS" "$t")" rss_mb "$(mb "$r1")" bytes_per_flow "$(per_flow "$r0" "$r1" "$FLOWS")"
    t=$(ctl_timed "$tgt" "$D/mod.txt")
    expect_count sluice "$tgt" "$mods" out_port=3
    row scenario control test flow_modify_10pct switch sluice client sluice-ctl flows "$mods" seconds "$t" \
        flow_mods_per_s "$(per_s "$mods" "$t")"
    r0=$(now_ns)
    timeout 300 "$CTL" --timeout 200 del-flows "$tgt"
    t=$(secs_since "$r0")
    expect_count sluice "$tgt" 0
    row scenario control test flow_delete_all switch sluice client sluice-ctl flows "$FLOWS" seconds "$t"
    stop_sluice

    [ "$OVS" = 1 ] || return 0
    local of=(ovs-ofctl -O OpenFlow13 -t 900)
    head -n "$OVS_FLOWS" "$D/flows.txt" >"$D/ovs-flows.txt"
    awk 'NR % 10 == 1 {sub(/output:2$/, "output:3"); print "modify_strict " $0}' "$D/ovs-flows.txt" >"$D/ovs-mod.txt"
    mods=$(wc -l <"$D/ovs-mod.txt")
    tgt=unix:$OVSD/br0.mgmt

    log "flows: Open vSwitch, sluice-ctl"
    ovs_netns_up
    pid=$(ovs_pid)
    r0=$(rss_kb "$pid")
    t=$(ctl_timed "$tgt" "$D/ovs-flows.txt")
    r1=$(rss_kb "$pid")
    expect_count "Open vSwitch" "$tgt" "$OVS_FLOWS"
    row scenario control test flow_add switch "Open vSwitch" client sluice-ctl flows "$OVS_FLOWS" seconds "$t" \
        flow_mods_per_s "$(per_s "$OVS_FLOWS" "$t")" rss_mb "$(mb "$r1")" bytes_per_flow "$(per_flow "$r0" "$r1" "$OVS_FLOWS")"
    t=$(ctl_timed "$tgt" "$D/ovs-mod.txt")
    expect_count "Open vSwitch" "$tgt" "$mods" out_port=3
    row scenario control test flow_modify_10pct switch "Open vSwitch" client sluice-ctl flows "$mods" seconds "$t" \
        flow_mods_per_s "$(per_s "$mods" "$t")"
    r0=$(now_ns)
    timeout 300 "$CTL" --timeout 200 del-flows "$tgt"
    t=$(secs_since "$r0")
    expect_count "Open vSwitch" "$tgt" 0
    row scenario control test flow_delete_all switch "Open vSwitch" client sluice-ctl flows "$OVS_FLOWS" seconds "$t"
    ovs_netns_down

    log "flows: Open vSwitch, ovs-ofctl --bundle"
    ovs_netns_up
    pid=$(ovs_pid)
    r0=$(rss_kb "$pid")
    t=$(now_ns)
    timeout 900 "${of[@]}" --bundle add-flows "$tgt" "$D/ovs-flows.txt"
    t=$(secs_since "$t")
    r1=$(rss_kb "$pid")
    expect_count "Open vSwitch" "$tgt" "$OVS_FLOWS"
    row scenario control test flow_add switch "Open vSwitch (ovs-ofctl --bundle)" client "ovs-ofctl --bundle" \
        flows "$OVS_FLOWS" seconds "$t" flow_mods_per_s "$(per_s "$OVS_FLOWS" "$t")" rss_mb "$(mb "$r1")" \
        bytes_per_flow "$(per_flow "$r0" "$r1" "$OVS_FLOWS")"
    t=$(now_ns)
    timeout 900 "${of[@]}" --bundle add-flows "$tgt" "$D/ovs-mod.txt"
    t=$(secs_since "$t")
    expect_count "Open vSwitch" "$tgt" "$mods" out_port=3
    row scenario control test flow_modify_10pct switch "Open vSwitch (ovs-ofctl --bundle)" client "ovs-ofctl --bundle" \
        flows "$mods" seconds "$t" flow_mods_per_s "$(per_s "$mods" "$t")"
    ovs_netns_down

    log "flows: Open vSwitch, plain ovs-ofctl ($PLAIN_FLOWS flows)"
    head -n "$PLAIN_FLOWS" "$D/flows.txt" >"$D/plain-flows.txt"
    ovs_netns_up
    pid=$(ovs_pid)
    r0=$(rss_kb "$pid")
    t=$(now_ns)
    timeout 900 "${of[@]}" add-flows "$tgt" "$D/plain-flows.txt"
    t=$(secs_since "$t")
    r1=$(rss_kb "$pid")
    expect_count "Open vSwitch" "$tgt" "$PLAIN_FLOWS"
    row scenario control test flow_add switch "Open vSwitch (ovs-ofctl)" client ovs-ofctl \
        flows "$PLAIN_FLOWS" seconds "$t" flow_mods_per_s "$(per_s "$PLAIN_FLOWS" "$t")" rss_mb "$(mb "$r1")" \
        bytes_per_flow "$(per_flow "$r0" "$r1" "$PLAIN_FLOWS")"
    ovs_netns_down
}

# 4: sluice only (see the header).
packet_in_benchmarks() {
    log "PACKET_IN -> PACKET_OUT: $FRAMES ARP requests at each of: $RATES"
    [ -s "$D/arp.pcap" ] || "$BIN/sluice-bench" arp-requests --count "$FRAMES" --out "$D/arp.pcap"
    local rate pace resp served per out qin qout missed
    for rate in $RATES; do
        pace=""
        [ "$rate" != 0 ] && pace="pcap_rate = $rate"
        bridge_config "pcap_in = \"$D/arp.pcap\"
pcap_out = \"$D/out.pcap\"
$pace" >"$D/pio.toml"
        timeout 300 "$BIN/sluice-bench" arp-responder --listen "127.0.0.1:$CTL_PORT" --idle 1 --wait 30 --json >"$D/resp.json" &
        resp=$!
        sleep 0.2
        start_sluice "$D/pio.toml"
        wait "$resp" || die "arp-responder failed at rate $rate"
        stop_sluice
        served=$(sed -n 's/.*"packet_outs": \([0-9]*\).*/\1/p' "$D/resp.json")
        per=$(sed -n 's/.*"round_trips_per_s": \([0-9]*\).*/\1/p' "$D/resp.json")
        out=$(awk '$1 == "1" && $2 == "p1" {print $5}' "$D/sluice.log")
        qin=$(sed -n 's/.*packet-in queue full \([0-9]*\).*/\1/p' "$D/sluice.log")
        qout=$(sed -n 's/.*packet-out queue full \([0-9]*\).*/\1/p' "$D/sluice.log")
        missed=$(sed -n 's/^pipeline: dropped \([0-9]*\).*/\1/p' "$D/sluice.log")
        row scenario control test packet_in_out switch sluice offered_fps "$rate" round_trips "$served" \
            round_trips_per_s "$per" replies_out "$out" \
            loss_pct "$(awk -v f="$FRAMES" -v o="$out" 'BEGIN {printf "%.2f", 100 * (f - o) / f}')" \
            pin_queue_full "$qin" pout_queue_full "$qout" missed_before_controller "$missed"
    done
}

# 5: sluice, then Open vSwitch, on one testbed.
update_latency() {
    [ "$(id -u)" -eq 0 ] || {
        log "update latency not measured: needs root"
        return 0
    }
    log "update latency: $SAMPLES samples per switch"
    P=slcp$$
    testbed_up "$P" >&2
    local m1 m2
    m1=$(ip netns exec "$P-h1" cat /sys/class/net/eth0/address)
    m2=$(ip netns exec "$P-h2" cat /sys/class/net/eth0/address)
    ip netns exec "$P-h1" ip neigh replace "$TESTBED_NET.2" lladdr "$m2" dev eth0 nud permanent
    ip netns exec "$P-h2" ip neigh replace "$TESTBED_NET.1" lladdr "$m1" dev eth0 nud permanent
    local lat=(timeout 300 python3 scripts/update_latency.py measure --h1 "$P-h1" --h2 "$P-h2"
        --dst "$TESTBED_NET.2" --samples "$SAMPLES")

    cat >"$D/lat.toml" <<CFG
[bridge]
name = "lat"
fail_mode = "secure"
local_port = false
[[port]]
name = "p1"
ofport = 1
[[port]]
name = "p2"
ofport = 2
CFG
    if [ "$LAT_PREFILL" -gt 0 ]; then
        "$BIN/sluice-bench" flows --count "$LAT_PREFILL" --out "$D/lat-flows.txt"
    fi
    start_sluice "$D/lat.toml" "$P-sw"
    sleep 0.5
    "${lat[@]}" --switch sluice --socket "$D/lat.mgmt" >&3
    if [ "$LAT_PREFILL" -gt 0 ]; then
        ctl_timed "unix:$D/lat.mgmt" "$D/lat-flows.txt" >/dev/null
        "${lat[@]}" --switch sluice --socket "$D/lat.mgmt" --no-barrier --quiet-ms 50 --prefill "$LAT_PREFILL" >&3
    fi
    stop_sluice

    if [ "$OVS" = 1 ]; then
        ovs_fresh "$P-sw"
        ip netns exec "$P-sw" ovs-vsctl --db="unix:$OVSD/db.sock" --timeout=30 \
            add-port br0 p1 -- set interface p1 ofport_request=1 -- \
            add-port br0 p2 -- set interface p2 ofport_request=2 >&2
        sleep 1
        "${lat[@]}" --switch "Open vSwitch" --socket "$OVSD/br0.mgmt" >&3
        if [ "$LAT_PREFILL" -gt 0 ]; then
            ctl_timed "unix:$OVSD/br0.mgmt" "$D/lat-flows.txt" >/dev/null
            "${lat[@]}" --switch "Open vSwitch" --socket "$OVSD/br0.mgmt" --no-barrier --quiet-ms 50 --prefill "$LAT_PREFILL" >&3
        fi
        ovs_stop
    fi
    testbed_down "$P"
    P=
}

one_round() {
    local part
    for part in $PARTS; do
        case $part in
        flows) flow_benchmarks ;;
        packet_in) packet_in_benchmarks ;;
        latency) update_latency ;;
        *) die "OFBENCH_PARTS: unknown part $part (flows packet_in latency)" ;;
        esac
    done
}

if [ "$JSON" = 1 ]; then
    one_round
    exit 0
fi

for r in $(seq 1 "$RUNS"); do
    log "round $r of $RUNS"
    one_round
done 3>"$D/rows.json"
python3 - "$D/rows.json" "$RUNS" >&3 <<'PY'
import json, statistics, subprocess, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
runs = sys.argv[2]
uname = subprocess.run(["uname", "-r"], capture_output=True, text=True).stdout.strip()
nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
date = subprocess.run(["date", "-u", "+%Y-%m-%d"], capture_output=True, text=True).stdout.strip()
print(f"# OpenFlow benchmarks, {date}, {nproc} CPUs, {uname}; medians of {runs} rounds")

def num(x):
    if isinstance(x, int) or abs(x) >= 100:
        return str(round(x))
    return f"{x:.4g}"

def table(test, title, keys, cols, main):
    groups = {}
    for r in rows:
        if r["test"] == test:
            groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
    if not groups:
        return
    print(f"\n## {title}\n")
    print("| " + " | ".join(c for c, _ in cols) + f" | {main} per round |")
    print("|" + "---|" * (len(cols) + 1))
    for g in groups.values():
        cells = []
        for _, f in cols:
            v = [r.get(f) for r in g]
            if v[0] is None:
                cells.append("-")
            elif isinstance(v[0], (str, bool)):
                cells.append(str(v[0]).lower() if isinstance(v[0], bool) else v[0])
            else:
                cells.append(num(statistics.median(v)))
        cells.append(" / ".join(num(r[main]) for r in g))
        print("| " + " | ".join(cells) + " |")

base = [("switch", "switch"), ("client", "client"), ("flows", "flows"), ("seconds", "seconds"), ("flow-mods/s", "flow_mods_per_s")]
table("flow_add", "Flow adds, then a barrier (sluice-ctl: first byte to BARRIER_REPLY; ovs-ofctl: wall time)",
      ["switch"], base + [("RSS after (MB)", "rss_mb"), ("RSS growth (B/flow)", "bytes_per_flow")], "seconds")
table("flow_modify_10pct", "MODIFY_STRICT of every 10th flow, then a barrier", ["switch"], base, "seconds")
table("flow_delete_all", "Delete all flows (sluice-ctl del-flows, wall time)", ["switch"], base[:4], "seconds")
table("packet_in_out", "PACKET_IN -> PACKET_OUT round trips (sluice, ARP responder, pcap port; offered 0 = unpaced)",
      ["offered_fps"], [("offered (frames/s)", "offered_fps"), ("round trips", "round_trips"), ("round trips/s", "round_trips_per_s"),
                        ("replies out", "replies_out"), ("loss %", "loss_pct"), ("packet-in queue full", "pin_queue_full"),
                        ("packet-out queue full", "pout_queue_full"), ("missed before the controller", "missed_before_controller")],
      "round_trips_per_s")
table("update_latency", "FLOW_MOD sent -> first frame forwarded by the rule (20 000 frames/s offered)", ["switch", "flows_installed", "barrier"],
      [("switch", "switch"), ("flows installed", "flows_installed"), ("barrier", "barrier"), ("samples", "samples"),
       ("latency p50 (ms)", "latency_ms_p50"), ("latency max (ms)", "latency_ms_max"),
       ("BARRIER_REPLY p50 (ms)", "barrier_ms_p50"), ("delete p50 (ms)", "delete_ms_p50"), ("delete max (ms)", "delete_ms_max")], "latency_ms_p50")
PY
