#!/usr/bin/env bash
# End-to-end tests still in bash: sluice between hosts in network
# namespaces (root only); the others are tests/e2e (pytest). Each test
# builds its own testbed and removes it. Ends with "e2e: N passed, M
# failed". scripts/e2e.sh TEST runs one.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    if [ "${CI:-}" = "true" ]; then
        echo "e2e: CI runs as root; refusing to skip" >&2
        exit 1
    fi
    echo "e2e: skipped (needs root for network namespaces): 0 passed, 0 failed"
    exit 0
fi

. scripts/testbed.sh
# Waits that time out (wait_until, scripts/testbed.sh) are recorded here,
# also from subshells: finish fails the test then.
WAIT_TIMEOUT_LOG=$(mktemp)
# Binaries from SLUICE_BIN_DIR if set (as the pytest suite, tests/e2e,
# takes them), else built into cargo's target directory (CARGO_TARGET_DIR
# if set).
if [ -n "${SLUICE_BIN_DIR:-}" ]; then
    B=$SLUICE_BIN_DIR
else
    B=${CARGO_TARGET_DIR:-target}/release
    cargo build -q --release -p sluice -p ctl -p bench || exit 1
fi
SLUICE=$B/sluice
CTL=$B/sluice-ctl
passed=0
failed=0
P=
SLUICE_PID=
OUT=
AUTO_RD=
SLUICE_RD=
NOTIFY_SOCK=
NOTIFY_LOG=

start_sluice() { # args for sluice
    OUT=$(mktemp)
    # A run directory of the test's own unless it names one: remembered
    # port numbers (RUN_DIR/BRIDGE.ports) never leak from test to test.
    # With --ovs and no --run-dir, the test sets OVS_RUNDIR.
    if [[ " $* " != *" --run-dir "* && " $* " != *" --ovs "* ]]; then
        [ -n "$AUTO_RD" ] || AUTO_RD=$(mktemp -d)
        set -- "$@" --run-dir "$AUTO_RD"
    fi
    # Its run directory, for sluice-ctl.
    [[ " $* " == *" --ovs "* ]] && SLUICE_RD=${OVS_RUNDIR:-/var/run/openvswitch}
    local a prev=
    for a in "$@"; do
        [ "$prev" = --run-dir ] && SLUICE_RD=$a
        prev=$a
    done
    # Ready when it says so, as it tells systemd (READY=1: every bridge
    # runs, its ports are open, its listeners and management socket bound);
    # NOTIFY_LOG has what it said, one state a line.
    notify_end
    NOTIFY_SOCK=$OUT.notify
    NOTIFY_LOG=$OUT.states
    notify_listen "$NOTIFY_SOCK" "$NOTIFY_LOG" || return 1
    ip netns exec "$P-sw" env NOTIFY_SOCKET="$NOTIFY_SOCK" "$SLUICE" "$@" >"$OUT" 2>&1 &
    SLUICE_PID=$!
    wait_until 15 "sluice to be ready (READY=1)" sluice_ready_or_gone || return 1
    if ! kill -0 "$SLUICE_PID" 2>/dev/null; then
        wait_failed "sluice exited before it was ready"
        return 1
    fi
}

sluice_ready_or_gone() { notify_says "$NOTIFY_LOG" READY=1 || ! kill -0 "$SLUICE_PID" 2>/dev/null; }

# Ends start_sluice's notify listener (sluice's STOPPING=1 ends it, a
# SIGKILL does not) and removes its files.
notify_end() {
    notify_stop
    [ -z "$NOTIFY_SOCK" ] || rm -f "$NOTIFY_SOCK" "$NOTIFY_LOG"
    NOTIFY_SOCK=
    NOTIFY_LOG=
}

stop_sluice() {
    if [ -n "$SLUICE_PID" ]; then
        kill "$SLUICE_PID" 2>/dev/null
        wait "$SLUICE_PID" 2>/dev/null
        SLUICE_PID=
    fi
    notify_end
}

# kill -HUP, then wait for sluice to have read the configuration again
# (READY=1 once more, after RELOADING=1), whether it took it or not.
hup_and_wait() {
    local n
    n=$(grep -cx READY=1 "$NOTIFY_LOG")
    kill -HUP "$SLUICE_PID"
    wait_until 5 "sluice to reload after SIGHUP (READY=1 again)" notify_says "$NOTIFY_LOG" READY=1 $((n + 1))
}

# sluice-ctl on the running sluice (its run directory).
ctl_rd() { "$CTL" --run-dir "$SLUICE_RD" "$@"; }

finish() { # name result
    stop_sluice
    testbed_down "$P"
    local res=$2
    if [ -s "$WAIT_TIMEOUT_LOG" ]; then
        res=1
        : >"$WAIT_TIMEOUT_LOG"
    fi
    if [ "$res" = 0 ]; then
        echo "ok   $1"
        passed=$((passed + 1))
    else
        echo "FAIL $1"
        [ -n "$OUT" ] && sed 's/^/     sluice: /' "$OUT"
        failed=$((failed + 1))
    fi
    [ -n "$OUT" ] && rm -f "$OUT"
    OUT=
    [ -n "$AUTO_RD" ] && rm -rf "$AUTO_RD"
    AUTO_RD=
}
trap 'stop_sluice; [ -n "$P" ] && testbed_down "$P"; rm -f "$WAIT_TIMEOUT_LOG"' EXIT

# make install and the service manager's protocol (sd_notify), as
# systemd runs sluice. In bash still: make install builds the release
# binaries (cargo), which the pytest suite never does itself.
test_service_install_and_notify() {
    P=sle2e$$sv
    testbed_up "$P" || return 1
    local r=0 rd dest note lis out
    rd=$(mktemp -d)
    dest=$(mktemp -d)
    # make install into a staging root: binaries, man pages, completions,
    # the unit (its paths filled in) and the example config, which checks.
    make -s install DESTDIR="$dest" PREFIX=/usr >/dev/null 2>&1 || { echo "     make install failed"; r=1; }
    for f in usr/bin/sluice usr/bin/sluice-ctl usr/share/man/man1/sluice.1 usr/share/man/man1/sluice-ctl.1 \
        usr/share/bash-completion/completions/sluice-ctl etc/systemd/system/sluice.service etc/sluice/sluice.toml; do
        [ -s "$dest/$f" ] || { echo "     missing $f"; r=1; }
    done
    grep -q "^ExecStart=/usr/bin/sluice --config /etc/sluice/sluice.toml$" "$dest/etc/systemd/system/sluice.service" ||
        { echo "     unit paths not filled in"; r=1; }
    if command -v systemd-analyze >/dev/null; then
        out=$(systemd-analyze verify "$dest/etc/systemd/system/sluice.service" 2>&1)
        echo "$out" | grep -Eiq "unknown|invalid|failed to parse|ignoring" && { echo "     unit: $out"; r=1; }
    fi
    "$dest/usr/bin/sluice" --check-config --config "$dest/etc/sluice/sluice.toml" >/dev/null ||
        { echo "     the example config does not check"; r=1; }
    man -l "$dest/usr/share/man/man1/sluice-ctl.1" 2>/dev/null | grep -q "add-port" || { echo "     man page lacks add-port"; r=1; }
    # The service protocol: READY=1 once running, RELOADING=1 and READY=1
    # around SIGHUP, STOPPING=1 at the end.
    note="$rd/notify"
    python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(15)
try:
    while True:
        m = s.recv(4096).decode()
        print(m.replace("\n", " "), flush=True)
        if m.startswith("STOPPING"):
            break
except socket.timeout:
    pass
' "$note" >"$rd/states" &
    lis=$!
    wait_until 5 "the notify listener's socket" test -S "$note" || r=1
    printf '[bridge]\n[[port]]\nname = "p1"\n[[port]]\nname = "p2"\n' >"$rd/c.toml"
    OUT=$(mktemp)
    ip netns exec "$P-sw" env NOTIFY_SOCKET="$note" "$SLUICE" --config "$rd/c.toml" --run-dir "$rd" >"$OUT" 2>&1 &
    SLUICE_PID=$!
    wait_until 10 "READY=1 from sluice" notify_says "$rd/states" READY=1 || r=1
    kill -HUP "$SLUICE_PID"
    wait_until 5 "READY=1 again after SIGHUP" notify_says "$rd/states" READY=1 2 || r=1
    stop_sluice
    wait "$lis"
    out=$(tr '\n' '|' <"$rd/states")
    echo "$out" | grep -Eq "^READY=1\|RELOADING=1 MONOTONIC_USEC=[0-9]+\|READY=1\|STOPPING=1\|$" ||
        { echo "     states: $out"; r=1; }
    rm -rf "$rd" "$dest"
    finish "make install (unit, man pages, completions, example config); sd_notify states" $r
}


for t in ${*:-$(declare -F | awk '$3 ~ /^test_/ {print $3}')}; do
    "$t"
done
echo "e2e: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
