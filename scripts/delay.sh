#!/usr/bin/env bash
# In-switch delay under a steady, moderate load: iperf3 UDP at DELAY_RATE
# (default 20M) with 1000-byte datagrams for DELAY_SECONDS (default 4) through sluice standalone,
# unpinned and with the worker pinned (--cpu 1), RUNS times each (default 2).
# Prints sluice's own delay percentiles; with --json, one JSON object per
# run on stdout (a scenario of scripts/bench/report.py). Root only.
# SLUICE=PATH runs that binary instead of the build's (before/after runs).
set -euo pipefail
cd "$(dirname "$0")/.."
JSON=0
[ "${1:-}" = --json ] && JSON=1
. scripts/testbed.sh
testbed_prepare delay >&2
RATE=${DELAY_RATE:-20M}
BIN=${CARGO_TARGET_DIR:-target}/release
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
        ip netns exec "$P-sw" "${SLUICE:-$BIN/sluice}" --port p1 --port p2 $pin >"$out" 2>&1 &
        SW_PID=$!
        sleep 0.5
        ip netns exec "$P-h2" timeout 300 iperf3 -s -1 -p 5501 >/dev/null 2>&1 &
        srv=$!
        sleep 0.3
        ip netns exec "$P-h1" iperf3 -c "$TESTBED_NET.2" -p 5501 -t "${DELAY_SECONDS:-4}" -u -b "$RATE" -l 1000 >/dev/null 2>&1 || true
        wait "$srv" 2>/dev/null || true
        kill "$SW_PID"
        wait "$SW_PID" 2>/dev/null || true
        SW_PID=
        if [ "$JSON" = 1 ]; then
            python3 - "${pin:-unpinned}" "$RATE" "$out" <<'PY'
import json, re, sys
pin, rate, log = sys.argv[1:4]
m = re.search(r"in-switch delay \(.*?, (\d+) frames\): p50 ([\d.]+) us\s+p99 ([\d.]+) us\s+p99.9 ([\d.]+) us\s+max ([\d.]+) us",
              open(log).read())
row = {"scenario": "delay", "switch": "sluice afpacket, " + ("worker pinned to CPU 1" if pin != "unpinned" else "unpinned"),
       "load": f"iperf3 UDP {rate}bit/s, 1000-byte datagrams"}
if not m:
    sys.exit(f"delay: no in-switch delay line in sluice's output ({log})")
if m:
    row.update(frames_measured=int(m[1]), delay_p50_us=float(m[2]), delay_p99_us=float(m[3]),
               delay_p999_us=float(m[4]), delay_max_us=float(m[5]))
print(json.dumps(row))
PY
        else
            echo "${pin:-unpinned}: $(sed -n 's/.*frames): //p' "$out"); slowest batch $(sed -n 's/^slowest batch: \([^,]*, [0-9]* frames\).*/\1/p' "$out")"
        fi
        rm -f "$out"
        testbed_down "$P"
    done
done
