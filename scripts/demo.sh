#!/usr/bin/env bash
# The README's first command: two hosts in network namespaces joined only
# through sluice (standalone learning switch), a ping and a TCP throughput
# test between them, sluice's counters, and clean-up even on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/testbed.sh
testbed_prepare demo
P=sldemo$$
SLUICE_PID=
NOTE=/tmp/$P-notify
cleanup() {
    [ -n "$SLUICE_PID" ] && kill "$SLUICE_PID" 2>/dev/null && wait "$SLUICE_PID" 2>/dev/null || true
    notify_stop
    rm -f "$NOTE.sock" "$NOTE.states"
    testbed_down "$P"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

testbed_up "$P"
echo "== hosts $P-h1 ($TESTBED_NET.1) and $P-h2 ($TESTBED_NET.2), joined by sluice in $P-sw"
# Ready when it says so, as to systemd (READY=1).
notify_listen "$NOTE.sock" "$NOTE.states"
ip netns exec "$P-sw" env NOTIFY_SOCKET="$NOTE.sock" target/release/sluice --port p1 --port p2 > "/tmp/$P-sluice.out" 2>&1 &
SLUICE_PID=$!
wait_until 15 "sluice to be ready (READY=1)" notify_says "$NOTE.states" READY=1 ||
    { cat "/tmp/$P-sluice.out"; exit 1; }

echo "== ping"
ip netns exec "$P-h1" ping -c 5 -i 0.2 -W 2 "$TESTBED_NET.2" | tail -n 2

echo "== TCP throughput (iperf3, 5 s)"
ip netns exec "$P-h2" timeout 300 iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
IPERF_PID=$!
wait_until 10 "iperf3 to listen on port 5201 in $P-h2" tcp_listening "$P-h2" 5201
ip netns exec "$P-h1" iperf3 -c "$TESTBED_NET.2" -p 5201 -t 5 -f m | grep -E "sender|receiver" || true
wait "$IPERF_PID" 2>/dev/null || true

echo "== sluice counters"
kill "$SLUICE_PID"
wait "$SLUICE_PID" 2>/dev/null || true
SLUICE_PID=
cat "/tmp/$P-sluice.out"
rm -f "/tmp/$P-sluice.out"
