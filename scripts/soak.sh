#!/usr/bin/env bash
# Soak test: traffic between three namespace hosts through sluice while its
# flow table churns, checked frame by frame (root only).
#
#   scripts/soak.sh                 60 s (the short form; e2e runs it)
#   scripts/soak.sh --minutes 30    the long form
#   scripts/soak.sh --seconds N
#
# The switch (fail_mode secure, so only flows forward) has one steady flow
# per host: priority=100,dl_dst=<host's MAC>,actions=output:<host's port>.
# Every host sends sequence-numbered frames (scripts/seqtraffic.py) to both
# others, round robin, 500 frames/s in all; every host receives for the
# whole run. Meanwhile the flow table churns at about 10 000 flow-mods/s:
# each second 5 000 flows are added and the same 5 000 re-added with other
# actions (ADD of an existing match replaces it), through sluice-ctl
# add-flows, and every 10 s they are deleted (3 non-strict deletes). The
# churn flows are of three kinds, all at a higher priority than the steady
# flows and none matching the test traffic if the classifier is right: TCP
# 5-tuples, the test EtherType with source MACs nobody uses, and
# destination MACs nobody uses.
#
# Passes when:
# * misdelivered = 0: no frame arrived at a host whose MAC it was not
#   addressed to; no frame of a stream (sender -> receiver) arrived twice
#   (duplicates = 0) or after a later frame of the same stream
#   (reordered = 0): the steady flows send a stream through one worker and
#   one port, so neither can happen unless the switch misbehaves;
# * lost <= 0.5% (frames sent that never arrived; reported exactly);
# * sluice's RSS after the warm-up (the first 20 s, or 10% of a longer run)
#   grows by less than 8 MB to the end;
# * its log has no ERROR, panic or stalled worker, and it exits 0.
# Prints a summary (date, command, figures) and exits 0 or 1.
set -uo pipefail
cd "$(dirname "$0")/.."

secs=60
while [ $# -gt 0 ]; do
    case "$1" in
    --minutes) secs=$(($2 * 60)); shift 2 ;;
    --seconds) secs=$2; shift 2 ;;
    *) echo "usage: scripts/soak.sh [--minutes N | --seconds N]" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" -ne 0 ]; then
    echo "soak: needs root (network namespaces)" >&2
    exit 1
fi

. scripts/testbed.sh
# The binaries from SLUICE_BIN_DIR if set (the e2e tests pass theirs),
# else built into target/release.
if [ -n "${SLUICE_BIN_DIR:-}" ]; then
    SLUICE=$SLUICE_BIN_DIR/sluice
    CTL=$SLUICE_BIN_DIR/sluice-ctl
else
    cargo build -q --release -p sluice -p ctl || exit 1
    SLUICE=target/release/sluice
    CTL=target/release/sluice-ctl
fi
P=slsoak$$
W=$(mktemp -d)
SPID=
cleanup() {
    [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
    testbed_down "$P"
    rm -rf "$W"
}
trap cleanup EXIT

TESTBED_HOSTS=3 testbed_up "$P" || exit 1
mac() { printf '02:00:00:00:00:%02x' "$1"; }
cat >"$W/sluice.toml" <<TOML
[bridge]
fail_mode = "secure"
local_port = false
flows = [
  "priority=100,dl_dst=$(mac 1),actions=output:1",
  "priority=100,dl_dst=$(mac 2),actions=output:2",
  "priority=100,dl_dst=$(mac 3),actions=output:3",
]
[[port]]
name = "p1"
ofport = 1
[[port]]
name = "p2"
ofport = 2
[[port]]
name = "p3"
ofport = 3
TOML
ip netns exec "$P-sw" "$SLUICE" --config "$W/sluice.toml" --run-dir "$W" >"$W/sluice.log" 2>&1 &
SPID=$!
wait_until 10 "sluice's management socket $W/br0.mgmt" test -S "$W/br0.mgmt" ||
    { echo "soak: sluice did not start"; cat "$W/sluice.log"; exit 1; }

# The churn: the same 5 000 matches with two different actions.
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
for name, port in (("a", 2), ("b", 3)):
    with open(f"{w}/churn-{name}.txt", "w") as f:
        for i in range(3000):
            f.write(f"priority=200,tcp,nw_src=10.{i >> 8 & 255}.{i & 255}.1,nw_dst=192.168.0.1,"
                    f"tp_dst=80,actions=output:{port}\n")
        for i in range(1000):
            f.write(f"priority=200,dl_type=0x88b5,dl_src=02:00:00:00:0b:{i & 255:02x},"
                    f"dl_dst=02:00:00:00:{i >> 8 & 255:02x}:0{1 + i % 3},actions=output:{port}\n")
        for i in range(1000):
            f.write(f"priority=200,dl_dst=02:00:00:00:0a:{i & 255:02x},dl_vlan={i >> 8},"
                    f"actions=output:{port}\n")
PY

# Traffic: each host to the two others, receivers for the whole run.
start=$(date +%s)
for i in 1 2 3; do
    ip netns exec "$P-h$i" python3 scripts/seqtraffic.py recv eth0 --me "$(mac "$i")" \
        --secs $((secs + 4)) --late-ms 1000 >"$W/recv$i.json" &
    rpid=$!
    wait_until 5 "the receiver on h$i to listen" has_packet_socket "$rpid" || exit 1
done
for i in 1 2 3; do
    others=$(for j in 1 2 3; do [ "$j" != "$i" ] && printf '%s,' "$(mac "$j")"; done)
    ip netns exec "$P-h$i" python3 scripts/seqtraffic.py send eth0 --src "$(mac "$i")" \
        --dst "${others%,}" --rate 167 --secs "$secs" --tag "$i" >"$W/send$i.json" &
done

# Churn and RSS samples until the senders are done.
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$SPID/status" 2>/dev/null; }
mods=0
ctl_errors=0
peak=0
: >"$W/rss"
t0=$(date +%s.%N)
second=0
while [ $second -lt "$secs" ]; do
    for f in a b; do
        if "$CTL" --run-dir "$W" add-flows br0 "$W/churn-$f.txt" >/dev/null 2>>"$W/ctl.err"; then
            mods=$((mods + 5000))
        else
            ctl_errors=$((ctl_errors + 1))
        fi
    done
    second=$((second + 1))
    if [ $second = $((secs / 2)) ]; then
        # How full the table is mid-run (5 000 churn flows + 3 steady).
        peak=$("$CTL" --run-dir "$W" --no-stats dump-flows br0 2>/dev/null | wc -l)
    fi
    if [ $((second % 10)) = 0 ]; then
        "$CTL" --run-dir "$W" del-flows br0 "tcp,nw_dst=192.168.0.1" >/dev/null 2>>"$W/ctl.err" || ctl_errors=$((ctl_errors + 1))
        "$CTL" --run-dir "$W" del-flows br0 "dl_type=0x88b5,dl_src=02:00:00:00:0b:00/ff:ff:ff:ff:ff:00" >/dev/null 2>>"$W/ctl.err" || ctl_errors=$((ctl_errors + 1))
        "$CTL" --run-dir "$W" del-flows br0 "dl_dst=02:00:00:00:0a:00/ff:ff:ff:ff:ff:00" >/dev/null 2>>"$W/ctl.err" || ctl_errors=$((ctl_errors + 1))
        mods=$((mods + 3))
    fi
    echo "$(($(date +%s) - start)) $(rss)" >>"$W/rss"
    # Pace to one round per second of the run.
    now=$(date +%s.%N)
    ahead=$(python3 -c "print(max(0.0, $t0 + $second - $now))")
    sleep "$ahead"
done
elapsed=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
wait_all() { local p; for p in $(jobs -p); do [ "$p" != "$SPID" ] && wait "$p"; done; }
wait_all
steady=$("$CTL" --run-dir "$W" dump-flows br0 "priority=100" 2>/dev/null | grep -c "priority=100")
kill "$SPID"
wait "$SPID"
rc=$?
SPID=

python3 - "$W" "$secs" "$mods" "$elapsed" "$ctl_errors" "$rc" "$steady" "$peak" <<'PY'
import json, re, sys, datetime
w, secs, mods, elapsed, ctl_errors, rc, steady, peak = sys.argv[1], int(sys.argv[2]), \
    int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7] or 0), \
    int(sys.argv[8] or 0)
sent = {i: json.load(open(f"{w}/send{i}.json")) for i in (1, 2, 3)}
recv = {i: json.load(open(f"{w}/recv{i}.json")) for i in (1, 2, 3)}
total_sent = sum(s["sent"] for s in sent.values())
received = sum(sum(st["count"] for st in r["streams"].values()) for r in recv.values())
misdelivered = sum(r["misdelivered"] for r in recv.values())
dups = sum(r["duplicates"] for r in recv.values())
reordered = sum(r["reordered"] for r in recv.values())
# Lost: per stream, frames sent minus distinct frames received.
lost = 0
for i in (1, 2, 3):
    others = [j for j in (1, 2, 3) if j != i]
    for k, j in enumerate(others):
        st = recv[j]["streams"].get(f"{i}/{k}", {"count": 0, "duplicates": 0})
        lost += sent[i]["per_destination"][k] - (st["count"] - st["duplicates"])
max_delay = max(r["max_delay_ms"] for r in recv.values())
samples = [tuple(map(int, l.split())) for l in open(f"{w}/rss") if len(l.split()) == 2]
warm = max(20, secs // 10)
base = [kb for t, kb in samples if t <= warm]
after = [kb for t, kb in samples if t > warm]
growth = (max(after) - base[-1]) if base and after else 0
log = open(f"{w}/sluice.log").read()
bad_lines = [l for l in log.splitlines() if re.search(r"ERROR|panicked|stalled", l)]
counters = [l for l in log.splitlines() if re.match(r"^(\d+ |port |pipeline:)", l)]
checks = {
    "misdelivered == 0 (wrong host, duplicated or reordered)": misdelivered + dups + reordered == 0,
    "lost <= 0.5%": lost <= 0.005 * total_sent,
    "RSS growth after warm-up < 8 MB": growth < 8192,
    "no ERROR, panic or stalled worker in the log": not bad_lines,
    "sluice exited 0": rc == 0,
    "flow-mods accepted (sluice-ctl errors == 0)": ctl_errors == 0,
    "steady flows intact": steady == 3,
}
print(f"soak {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}: "
      f"scripts/soak.sh --seconds {secs}")
print(f"  traffic: {total_sent} frames sent, {received} received, {lost} lost, "
      f"misdelivered {misdelivered}, duplicates {dups}, reordered {reordered}, "
      f"max delay {max_delay} ms")
print(f"  churn: {mods} flow-mods in {elapsed} s ({round(mods / max(elapsed, 0.1))}/s), "
      f"sluice-ctl errors {ctl_errors}, {peak} flows in the table mid-run")
if samples:
    print(f"  RSS: {samples[0][1]} kB at start, {base[-1] if base else '?'} kB after warm-up ({warm} s), "
          f"max {max(kb for _, kb in samples)} kB, growth after warm-up {growth} kB")
for l in counters:
    print(f"  {l}")
for l in bad_lines[:10]:
    print(f"  log: {l}")
ok = True
for name, good in checks.items():
    print(f"  {'ok  ' if good else 'FAIL'} {name}")
    ok &= good
sys.exit(0 if ok else 1)
PY
