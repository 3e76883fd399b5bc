#!/usr/bin/env bash
# The control plane's million flow-mods in each OpenFlow version: 1M
# distinct 5-tuple flows (`sluice-bench flows`) added by `sluice-ctl -O V
# add-flows` (every FLOW_MOD back to back over the management socket, then
# one BARRIER_REQUEST; seconds = first byte sent -> BARRIER_REPLY), then
# deleted, for V = OpenFlow10, OpenFlow13, OpenFlow15 in turn, ROUNDS
# rounds interleaved (default 3), one sluice for all. Prints one line per
# measurement and the medians per version (docs/PERFORMANCE.md,
# "Every OpenFlow version").
#
#   scripts/versions_bench.sh [ROUNDS] [FLOWS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
FLOWS=${2:-1000000}
cargo build -q --release -p sluice -p ctl -p bench
BIN=${CARGO_TARGET_DIR:-target}/release
D=$(mktemp -d)
SW=
cleanup() {
    [ -z "$SW" ] || { kill -INT "$SW" 2>/dev/null; wait "$SW" 2>/dev/null; }
    rm -rf "$D"
}
trap cleanup EXIT
"$BIN/sluice-bench" flows --count "$FLOWS" --out "$D/flows.txt"
cat >"$D/b.toml" <<CFG
[bridge]
name = "bench"
fail_mode = "secure"
local_port = false
[[port]]
name = "p1"
ofport = 1
backend = "pcap"
pcap_out = "/dev/null"
CFG
"$BIN/sluice" --config "$D/b.toml" --run-dir "$D" >"$D/sluice.log" 2>&1 &
SW=$!
for _ in $(seq 200); do [ -S "$D/bench.mgmt" ] && break; sleep 0.05; done
[ -S "$D/bench.mgmt" ] || { cat "$D/sluice.log"; exit 1; }
T=unix:$D/bench.mgmt
declare -A all
for round in $(seq "$ROUNDS"); do
    for v in OpenFlow10 OpenFlow13 OpenFlow15; do
        SLUICE_CTL_TIMING=1 timeout 900 "$BIN/sluice-ctl" -O $v --timeout 600 add-flows "$T" "$D/flows.txt" \
            >/dev/null 2>"$D/ctl.err" || { cat "$D/ctl.err"; exit 1; }
        s=$(sed -n 's/.*first byte to BARRIER_REPLY \([0-9.]*\) s.*/\1/p' "$D/ctl.err")
        n=$("$BIN/sluice-ctl" -O $v dump-aggregate "$T" | sed -n 's/.*flow_count=\([0-9]*\).*/\1/p')
        [ "$n" = "$FLOWS" ] || { echo "after $v: $n flows, not $FLOWS"; exit 1; }
        echo "round $round $v: $FLOWS flow adds in $s s ($(awk -v n="$FLOWS" -v t="$s" 'BEGIN {printf "%.0f", n / t}')/s)"
        all[$v]+="$s "
        timeout 300 "$BIN/sluice-ctl" -O $v --timeout 200 del-flows "$T"
    done
done
for v in OpenFlow10 OpenFlow13 OpenFlow15; do
    # shellcheck disable=SC2086
    med=$(printf '%s\n' ${all[$v]} | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
    echo "median $v: $med s (${all[$v]% })"
done
