#!/usr/bin/env bash
# Flow-mod rate and memory as the table fills, one round: CURVE_FLOWS
# (default 1 000 000) distinct 5-tuple flows (`sluice-bench flows`) added to
# sluice, then to Open vSwitch 3.1 (netdev bridge, no ports, a namespace of
# its own; needs root), with the same client (sluice-ctl add-flows), in
# CURVE_STEPS (default 10) equal steps, each its own connection ending in
# a barrier. After each step: the flows installed, that step's rate (first
# byte to BARRIER_REPLY) and the switch's RSS.
#
#   scripts/flowcurve.sh [--json]
#
# --json: one JSON object per step on stdout, progress on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/testbed.sh
JSON=0
[ "${1:-}" = --json ] && JSON=1
FLOWS=${CURVE_FLOWS:-1000000}
STEPS=${CURVE_STEPS:-10}
cargo build -q --release -p sluice -p ctl -p bench >&2
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

"$BIN/sluice-bench" flows --count "$FLOWS" --out "$D/flows.txt"
split -n "l/$STEPS" -d -a 3 "$D/flows.txt" "$D/step."

# Adds each step's file to the switch at TARGET whose process is PID.
curve() { # label target pid
    local label=$1 target=$2 pid=$3 installed=0 f n t rss
    [ "$JSON" = 0 ] && echo "| switch | flows installed | step flow-mods/s | RSS (MB) |" && echo "|---|---|---|---|"
    for f in "$D"/step.*; do
        n=$(wc -l <"$f")
        if ! SLUICE_CTL_TIMING=1 "$BIN/sluice-ctl" --timeout 600 add-flows "$target" "$f" >/dev/null 2>"$D/ctl.err"; then
            echo "flowcurve: add-flows into $label failed: $(cat "$D/ctl.err")" >&2
            exit 1
        fi
        t=$(sed -n 's/.*first byte to BARRIER_REPLY \([0-9.]*\) s.*/\1/p' "$D/ctl.err")
        [ -n "$t" ] || { echo "flowcurve: no timing from sluice-ctl for $label: $(cat "$D/ctl.err")" >&2; exit 1; }
        installed=$((installed + n))
        rss=$(awk '/VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$pid/status")
        if [ "$JSON" = 1 ]; then
            echo "{\"scenario\": \"flowcurve\", \"switch\": \"$label\", \"client\": \"sluice-ctl\", \"installed\": $installed, \"step_flows\": $n, \"step_seconds\": $t, \"flow_mods_per_s\": $(awk -v n="$n" -v t="$t" 'BEGIN {printf "%.0f", n / t}'), \"rss_mb\": $rss}"
        else
            echo "| $label | $installed | $(awk -v n="$n" -v t="$t" 'BEGIN {printf "%.0f", n / t}') | $rss |"
        fi
    done
    # The switch must hold every flow sent.
    local held
    held=$("$BIN/sluice-ctl" dump-aggregate "$target" | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p')
    [ "$held" = "$installed" ] || { echo "flowcurve: $label holds ${held:-?} flows, not $installed" >&2; exit 1; }
}

echo "flowcurve: sluice, $FLOWS flows in $STEPS steps" >&2
# One pcap port writing to /dev/null: a bridge needs a port, and this one
# touches no interface.
printf '[bridge]\nname = "curve"\nfail_mode = "secure"\nlocal_port = false\n[[port]]\nname = "p1"\nofport = 1\nbackend = "pcap"\npcap_out = "/dev/null"\n' >"$D/curve.toml"
"$BIN/sluice" --config "$D/curve.toml" --run-dir "$D" >"$D/sluice.log" 2>&1 &
SW=$!
tries=0
while [ ! -S "$D/curve.mgmt" ] && [ $tries -lt 100 ]; do sleep 0.05; tries=$((tries + 1)); done
[ -S "$D/curve.mgmt" ] || { echo "flowcurve: sluice did not start: $(cat "$D/sluice.log")" >&2; exit 1; }
curve sluice "unix:$D/curve.mgmt" "$SW"
kill -INT "$SW"
wait "$SW" 2>/dev/null || true
SW=

if command -v ovs-vswitchd >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "flowcurve: Open vSwitch, $FLOWS flows in $STEPS steps" >&2
    NS=slcurve$$
    ip netns add "$NS"
    mkdir -p "$D/ovs"
    ovs_start "$NS" "$D/ovs"
    ip netns exec "$NS" ovs-vsctl --timeout=30 --db="unix:$D/ovs/db.sock" add-br br0 -- set bridge br0 datapath_type=netdev fail-mode=secure protocols=OpenFlow13
    tries=0
    while [ ! -S "$D/ovs/br0.mgmt" ] && [ $tries -lt 100 ]; do sleep 0.05; tries=$((tries + 1)); done
    curve "Open vSwitch" "unix:$D/ovs/br0.mgmt" "$(pgrep -P "$OVS_VS_PID" ovs-vswitchd || echo "$OVS_VS_PID")"
else
    echo "flowcurve: Open vSwitch skipped (needs root and openvswitch-switch)" >&2
fi
