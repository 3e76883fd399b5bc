#!/usr/bin/env bash
# make conformance: the Ryu/os-ken OpenFlow 1.3 switch test tool
# (os_ken/tests/switch/tester.py and its of13/ cases, shipped in the os-ken
# version pinned in tests/interop/requirements.txt) against sluice, with
# Open vSwitch's userspace datapath as the tester switch, in a namespace of
# its own: sluice (datapath id 1, ports 1-3) and an Open vSwitch netdev
# bridge (datapath id 2, ports 1-3) joined by three veth pairs, both driven
# by the tool over TCP on the namespace's loopback. Root only; not part of
# `make test`.
#
#   scripts/conformance.sh                 # all of of13/ (991 cases)
#   scripts/conformance.sh action          # one category (a directory of of13/)
#   scripts/conformance.sh match/00_IN_PORT.json   # one file
#
# Prints the tool's report and a table per category; the log is kept in
# the directory it names.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
    echo "conformance: needs root (network namespaces)" >&2
    exit 1
fi
scripts/setup.sh >/dev/null || exit 1
if ! command -v ovs-vswitchd >/dev/null; then
    echo "conformance: installing openvswitch-switch (the tester switch)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openvswitch-switch >/dev/null || exit 1
fi
[ -n "${CONFORMANCE_NO_BUILD:-}" ] || cargo build -q --release -p sluice || exit 1
. scripts/testbed.sh

cases=$(.venv/bin/python -c 'import os, os_ken.tests.switch as t; print(os.path.join(os.path.dirname(t.__file__), "of13"))')
what=${1:-}
target="$cases/$what"
[ -e "$target" ] || { echo "conformance: no $what in $cases" >&2; exit 1; }
work=$(mktemp -d /tmp/sluice-conformance.XXXXXX)
NS=slcf$$
SLUICE_PID=
OSKEN_PID=
cleanup() {
    [ -n "$OSKEN_PID" ] && kill "$OSKEN_PID" 2>/dev/null
    [ -n "$SLUICE_PID" ] && kill "$SLUICE_PID" 2>/dev/null
    ovs_stop
    ip netns del "$NS" 2>/dev/null
}
trap cleanup EXIT

ip netns add "$NS"
ip netns exec "$NS" ip link set lo up
for i in 1 2 3; do
    ip netns exec "$NS" ip link add "t$i" type veth peer name "u$i"
    for d in "t$i" "u$i"; do
        ip netns exec "$NS" ip link set "$d" up
        ip netns exec "$NS" ethtool -K "$d" tso off gso off gro off tx off rx off rxvlan off txvlan off >/dev/null 2>&1
    done
done

cat >"$work/sluice.toml" <<TOML
[bridge]
name = "target"
datapath_id = "1"
fail_mode = "secure"
local_port = false
controllers = ["tcp:127.0.0.1:6653"]
[[port]]
name = "t1"
ofport = 1
[[port]]
name = "t2"
ofport = 2
[[port]]
name = "t3"
ofport = 3
TOML
ip netns exec "$NS" target/release/sluice --config "$work/sluice.toml" --run-dir "$work" >"$work/sluice.log" 2>&1 &
SLUICE_PID=$!

mkdir -p "$work/ovs"
ovs_start "$NS" "$work/ovs"
vs() { ip netns exec "$NS" ovs-vsctl --db="unix:$work/ovs/db.sock" "$@"; }
vs add-br tester -- set bridge tester datapath_type=netdev protocols=OpenFlow13 \
    other-config:datapath-id=0000000000000002 other-config:disable-in-band=true fail-mode=secure
for i in 1 2 3; do vs add-port tester "u$i" -- set interface "u$i" ofport_request="$i"; done
vs set-controller tester tcp:127.0.0.1:6653 -- set controller tester connection-mode=out-of-band

started=$(date +%s)
ip netns exec "$NS" env OSKEN_HUB_TYPE=eventlet .venv/bin/python tests/controller/run_osken.py 6653 os_ken.tests.switch.tester -- \
    --test-switch-dir "$target" --test-switch-target 0000000000000001 \
    --test-switch-tester 0000000000000002 >"$work/tester.log" 2>&1 &
OSKEN_PID=$!
wait "$OSKEN_PID"
OSKEN_PID=
echo "conformance: $(( $(date +%s) - started )) s; logs in $work"
sed -n '/--- Test report ---/,$p' "$work/tester.log" | sed 's/^[^:]*: //'
.venv/bin/python scripts/conformance_table.py "$work/tester.log"
