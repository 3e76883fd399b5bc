#!/usr/bin/env bash
# make conformance: the Ryu/os-ken switch test tool
# (os_ken/tests/switch/tester.py and its of10/, of13/ and of14/ cases,
# OpenFlow 1.0, 1.3 and 1.4, shipped in the os-ken
# version pinned in tests/interop/requirements.txt) against sluice, with
# Open vSwitch's userspace datapath as the tester switch, in a namespace of
# its own: sluice (datapath id 1, ports 1-3) and an Open vSwitch netdev
# bridge (datapath id 2, ports 1-3) joined by three veth pairs, both driven
# by the tool over TCP on the namespace's loopback. No settle delay (the
# tool's default interval, 0). Root only.
#
#   scripts/conformance.sh                 # all of of13/ (991 cases)
#   scripts/conformance.sh --of 10         # all of of10/ (192 cases), sluice
#                                          # speaking OpenFlow 1.0 only
#   scripts/conformance.sh --of 14         # all of of14/ (1 003 cases), 1.4
#   scripts/conformance.sh action          # one category (a directory of of13/)
#   scripts/conformance.sh match/00_IN_PORT.json   # one file
#   scripts/conformance.sh --quick         # the subset `make test` runs
#
# Options:
#   --of N        the version of the cases and of the target's connection
#                 (10, 13 or 14; default 13): the target bridge speaks only
#                 that version (`protocols`), the tester stays OpenFlow 1.3
#                 (Open vSwitch, as in the tool's own documentation).
#   --quick       every action file's first two cases and every match
#                 file's first case (190 cases, about 20 seconds): the
#                 subset the README's test command runs.
#   --fixed-tool  apply tests/controller/tool_fixes.py to the tool first
#                 (defects of the tool itself, shown in docs/CONFORMANCE.md);
#                 without it the tool runs exactly as published.
#   --record      append the result (date, commit, versions, table per
#                 category, every failure with the tool's reason) to
#                 docs/CONFORMANCE.md.
# Environment: CONFORMANCE_NO_BUILD=1 uses target/release/sluice as it is;
# CONFORMANCE_TARGET=ovs tests Open vSwitch (a second netdev bridge) in
# sluice's place, for comparison;
# CONFORMANCE_PCAP=1 also captures what sluice sends on port 2 (as the
# tester receives it: t2.pcap).
#
# Exits 0 only if every case selected passed. The tool's log and the
# switches' logs stay in the directory it names.
set -uo pipefail
cd "$(dirname "$0")/.."
quick=false fixed=false record=false what= of=13 want_of=false
for a in "$@"; do
    if $want_of; then
        of=$a want_of=false
        continue
    fi
    case $a in
        --of) want_of=true ;;
        --of=*) of=${a#--of=} ;;
        --quick) quick=true ;;
        --fixed-tool) fixed=true ;;
        --record) record=true ;;
        -*) echo "conformance: unknown option $a" >&2; exit 2 ;;
        *) what=$a ;;
    esac
done
case $of in
    10) ofname=OpenFlow10 ;;
    13) ofname=OpenFlow13 ;;
    14) ofname=OpenFlow14 ;;
    *) echo "conformance: --of $of: the tool has cases for 10, 13 and 14" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
    echo "conformance: needs root (network namespaces)" >&2
    exit 1
fi
scripts/setup.sh >/dev/null || exit 1
[ -n "${CONFORMANCE_NO_BUILD:-}" ] || cargo build -q --locked --release -p sluice || exit 1
. scripts/testbed.sh

cases=$(.venv/bin/python -c 'import os, os_ken.tests.switch as t; print(os.path.join(os.path.dirname(t.__file__), "of'"$of"'"))')
work=$(mktemp -d /tmp/sluice-conformance.XXXXXX)
# The tool runs one directory (or file): a copy of the chosen cases. With
# --quick each file is cut to its first cases (the file's first element
# is its title). With --fixed-tool a file whose title repeats another
# file's gets its own name as title: the tool keeps one test per title,
# and of10 has two such copy-and-paste titles (action/10_SET_TP_DST_IPv6_TCP
# is titled "(IPv4/TCP)", as is match/10_TP_SRC_IPv6_TCP), whose 8 cases
# the published tool never runs (docs/CONFORMANCE.md).
copy=$work/of$of
[ -e "$cases/$what" ] || { echo "conformance: no $what in $cases" >&2; exit 1; }
.venv/bin/python - "$cases" "$copy" "$what" "$quick" "$fixed" <<'PY' || exit 1
import json, os, sys
src, dst, what, quick, fixed = sys.argv[1:6]
quick, fixed = quick == "true", fixed == "true"
titles = {}
picked = []
for root, _, files in os.walk(src):
    for f in sorted(files):
        if f.endswith(".json"):
            picked.append(os.path.relpath(os.path.join(root, f), src))
picked.sort()
for rel in picked:
    with open(os.path.join(src, rel)) as fh:
        body = json.load(fh)
    # Titles are counted over every file, chosen or not (a fix must not
    # depend on the selection).
    if isinstance(body[0], str):
        if body[0] in titles and fixed:
            top = rel.split(os.sep)[0]
            body[0] = "%s: %s" % (top, os.path.splitext(os.path.basename(rel))[0])
        titles.setdefault(body[0], rel)
    if what and not (rel == what or rel.startswith(what.rstrip("/") + "/")):
        continue
    top = rel.split(os.sep)[0]
    if quick:
        keep = {"action": 2, "match": 1}.get(top)
        if not keep:
            continue
        body = body[:1 + keep]
    os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
    with open(os.path.join(dst, rel), "w") as fh:
        json.dump(body, fh)
PY
target="$copy/$what"
NS=slcf$$
SLUICE_PID= OSKEN_PID= TCPDUMP_PID=
cleanup() {
    [ -n "$OSKEN_PID" ] && kill "$OSKEN_PID" 2>/dev/null
    [ -n "$TCPDUMP_PID" ] && kill "$TCPDUMP_PID" 2>/dev/null
    [ -n "$SLUICE_PID" ] && kill "$SLUICE_PID" 2>/dev/null
    ovs_stop
    ip netns del "$NS" 2>/dev/null
    # A quick run that passed leaves nothing; any other keeps its logs.
    [ "${passed:-}" = quick ] && rm -rf "$work"
}
trap cleanup EXIT

ip netns add "$NS"
ip netns exec "$NS" ip link set lo up
# No IPv6 on the test links: the kernel's router solicitations and MLD
# reports would reach the switches in the middle of a case.
ip netns exec "$NS" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
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
protocols = ["$ofname"]
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
if [ "${CONFORMANCE_TARGET:-sluice}" = sluice ]; then
    ip netns exec "$NS" target/release/sluice --config "$work/sluice.toml" --run-dir "$work" >"$work/sluice.log" 2>&1 &
    SLUICE_PID=$!
fi

mkdir -p "$work/ovs"
ovs_start "$NS" "$work/ovs"
vs() { ip netns exec "$NS" ovs-vsctl --timeout=30 --db="unix:$work/ovs/db.sock" "$@"; }
if [ "${CONFORMANCE_TARGET:-sluice}" = ovs ]; then
    # Open vSwitch as the target too, for comparison: a second netdev
    # bridge of the same ovs-vswitchd, set up as sluice is.
    vs add-br target -- set bridge target datapath_type=netdev protocols=$ofname \
        other-config:datapath-id=0000000000000001 other-config:disable-in-band=true fail-mode=secure
    for i in 1 2 3; do vs add-port target "t$i" -- set interface "t$i" ofport_request="$i"; done
    vs set-controller target tcp:127.0.0.1:6653 -- set controller target connection-mode=out-of-band
fi
vs add-br tester -- set bridge tester datapath_type=netdev protocols=OpenFlow13 \
    other-config:datapath-id=0000000000000002 other-config:disable-in-band=true fail-mode=secure
for i in 1 2 3; do vs add-port tester "u$i" -- set interface "u$i" ofport_request="$i"; done
vs set-controller tester tcp:127.0.0.1:6653 -- set controller tester connection-mode=out-of-band
# No datapath flow cache on the tester (flow-limit 0: every frame is
# classified against its OpenFlow tables as they are now). The tool
# deletes and re-adds the tester's flows before every case and many cases
# send byte-identical frames; a datapath flow cached for an earlier case
# still carries the controller action of a rule that is gone until Open
# vSwitch's revalidator catches up, and the packet-in is silently dropped
# ("Receiving timeout: increment in rx_packets in tester"). A target that
# answers within milliseconds hits that window; see docs/CONFORMANCE.md.
vs set Open_vSwitch . other_config:flow-limit=0

if [ -n "${CONFORMANCE_PCAP:-}" ]; then
    ip netns exec "$NS" tcpdump -U -q -i u2 -w "$work/t2.pcap" -Q in >/dev/null 2>&1 &
    TCPDUMP_PID=$!
    sleep 0.5
fi
started=$(date +%s)
commit="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates scripts tests Cargo.lock || echo ' with uncommitted changes')"
# os-ken 4.2's default hub ("native", threads) never starts the tool's
# hub.Timeout and stalls its test thread; the tool is written for eventlet.
# Bounded: the tool waits without a timeout for switches that never
# (re)connect, e.g. a target that failed to start.
limit=3600
$quick && limit=300
ip netns exec "$NS" env OSKEN_HUB_TYPE=eventlet OSKEN_TOOL_FIXES=$($fixed && echo 1 || echo 0) \
    timeout "$limit" .venv/bin/python tests/controller/run_osken.py 6653 os_ken.tests.switch.tester -- \
    --test-switch-dir "$target" --test-switch-target 0000000000000001 \
    --test-switch-target-version "openflow$of" --test-switch-tester-version openflow13 \
    --test-switch-tester 0000000000000002 >"$work/tester.log" 2>&1 &
OSKEN_PID=$!
wait "$OSKEN_PID"
tool_rc=$?
OSKEN_PID=
seconds=$(( $(date +%s) - started ))
if [ -n "$SLUICE_PID" ] && ! kill -0 "$SLUICE_PID" 2>/dev/null; then
    echo "conformance: sluice is not running any more (see $work/sluice.log)" >&2
    exit 1
fi
if ! grep -q -- '---  Test end  ---' "$work/tester.log"; then
    echo "conformance: the tool did not finish (exit $tool_rc; limit $limit s); see $work/tester.log" >&2
    exit 1
fi
ip netns exec "$NS" ovs-appctl -t "$(echo "$work"/ovs/ovs-vswitchd.*.ctl)" coverage/show >"$work/ovs/coverage.txt" 2>&1
echo "conformance: $seconds s; logs in $work"
sel=${what:-all of of$of}
$quick && sel="the quick subset"
tool="the tool as published"
$fixed && tool="the tool with tests/controller/tool_fixes.py"
title="$sel, $tool"
.venv/bin/python scripts/conformance_table.py "$work/tester.log" --title "$title" >"$work/result.md" || exit 1
cat "$work/result.md"
if $record; then
    osken=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("os-ken"))')
    ovs=$(ovs-vswitchd --version | head -1 | awk '{print $NF}')
    {
        echo
        echo "### $(date -u +%Y-%m-%d\ %H:%M) UTC: $title"
        echo
        echo "Commit $commit (at the start), os-ken $osken, Open vSwitch $ovs (tester), $(nproc) cores, $seconds s."
        echo "Command: \`sudo scripts/conformance.sh$([ "$of" = 13 ] || echo " --of $of")$($fixed && echo ' --fixed-tool')$($quick && echo ' --quick') --record${what:+ $what}\`."
        echo
        cat "$work/result.md"
    } >>docs/CONFORMANCE.md
    echo "conformance: recorded in docs/CONFORMANCE.md"
fi
grep -q '^| all .* | 0 |$' "$work/result.md" || exit 1
$quick && passed=quick
exit 0
