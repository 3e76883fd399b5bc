#!/usr/bin/env bash
# In-switch delay under a steady, moderate load: iperf3 UDP at DELAY_RATE
# (default 20M) with 1000-byte datagrams for 4 s through sluice standalone,
# unpinned and with the worker pinned (--cpu 1), RUNS times each (default 2).
# Prints sluice's own delay percentiles. Root only.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/testbed.sh
testbed_prepare delay
RATE=${DELAY_RATE:-20M}
RUNS=${RUNS:-2}
P=sldelay$$
SW_PID=
cleanup() {
    [ -n "$SW_PID" ] && kill "$SW_PID" 2>/dev/null && wait "$SW_PID" 2>/dev/null || true
    testbed_down "$P"
}
trap cleanup EXIT
for pin in "" "--cpu 1"; do
    for _ in $(seq 1 "$RUNS"); do
        testbed_up "$P"
        out=$(mktemp)
        # shellcheck disable=SC2086
        ip netns exec "$P-sw" target/release/sluice --port p1 --port p2 $pin >"$out" 2>&1 &
        SW_PID=$!
        sleep 0.5
        ip netns exec "$P-h2" iperf3 -s -1 -p 5501 >/dev/null 2>&1 &
        srv=$!
        sleep 0.3
        ip netns exec "$P-h1" iperf3 -c "$TESTBED_NET.2" -p 5501 -t 4 -u -b "$RATE" -l 1000 >/dev/null 2>&1 || true
        wait "$srv" 2>/dev/null || true
        kill "$SW_PID"
        wait "$SW_PID" 2>/dev/null || true
        SW_PID=
        echo "${pin:-unpinned}: $(sed -n 's/.*frames): //p' "$out")"
        rm -f "$out"
        testbed_down "$P"
    done
done
