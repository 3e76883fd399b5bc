#!/usr/bin/env bash
# The namespace testbed used by the demo and the end-to-end tests:
#
#   ns H1: eth0 10.213.77.1  <->  p1 [ns SW: sluice] p2  <->  ns H2: eth0 10.213.77.2
#   (and with TESTBED_HOSTS=4: H3 .3 on p3, H4 .4 on p4)
#
# Source it, then: testbed_up PREFIX; ...; testbed_down PREFIX.
# The switch runs in a namespace of its own, its ports have no address, and
# the subnet is checked against every address and route of the machine, so no
# test frame can reach a real interface. Offloads are off and IPv6 is
# disabled on every test interface (DESIGN.md, "The testbed").

TESTBED_NET=${TESTBED_NET:-10.213.77}
TESTBED_HOSTS=${TESTBED_HOSTS:-2}

# Waiting for a condition, never for a fixed time.
#
# wait_until SECONDS WHAT CMD...: runs CMD every 50 ms until it succeeds.
# If it has not after SECONDS (fractions allowed), says so on stderr
# ("timed out after SECONDS s waiting for: WHAT"), appends WHAT to the file
# WAIT_TIMEOUT_LOG if that is set (a caller can fail its test then, even if the
# caller ignored the status) and returns 1.
wait_until() { # seconds what cmd...
    local secs=$1 what=$2 t0 now whole frac=
    shift 2
    whole=${secs%%.*}
    [[ $secs == *.* ]] && frac=${secs#*.}
    frac=${frac}000000
    local limit_us=$((${whole:-0} * 1000000 + 10#${frac:0:6}))
    t0=${EPOCHREALTIME/[.,]/}
    until "$@"; do
        now=${EPOCHREALTIME/[.,]/}
        if [ $((now - t0)) -ge "$limit_us" ]; then
            wait_failed "timed out after $secs s waiting for: $what"
            return 1
        fi
        sleep 0.05
    done
}

# wait_failed MESSAGE: a wait that failed (said on stderr, and recorded in
# WAIT_TIMEOUT_LOG if set).
wait_failed() {
    echo "     $1" >&2
    if [ -n "${WAIT_TIMEOUT_LOG:-}" ]; then echo "$1" >>"$WAIT_TIMEOUT_LOG"; fi
}

# tcp_listening NS PORT: true if a socket listens on TCP PORT in namespace NS.
tcp_listening() {
    [ -n "$(ip netns exec "$1" ss -Hltn "sport = :$2")" ]
}

# has_packet_socket PID: true if process PID, or one it started, holds a
# packet socket bound to an interface and receiving (a raw listener such as
# scripts/rawframe.py: from then on it sees every frame of that interface).
# Bound, not just made: a socket made for every protocol receives at once,
# but its bind to the interface takes it off the receive path for a moment
# (a frame sent then is missed: it happened, issue 28).
has_packet_socket() {
    local ino child
    while read -r ino; do
        [ -n "$(find "/proc/$1/fd" -lname "socket:\\[$ino\\]" 2>/dev/null)" ] && return 0
    done < <(awk 'NR > 1 && $5 != 0 && $6 == 1 { print $NF }' "/proc/$1/net/packet" 2>/dev/null)
    for child in $(pgrep -P "$1"); do
        has_packet_socket "$child" && return 0
    done
    return 1
}

# The readiness of a daemon that speaks the service manager's protocol
# (sd_notify: sluice sends READY=1 once every bridge runs, its ports open
# and its listeners bound). notify_listen SOCK LOG binds the datagram
# socket SOCK (a path: not tied to a network namespace) and writes each
# message to LOG, one a line (newlines inside one become spaces), until
# STOPPING=1; NOTIFY_PID is the listener. Start the daemon with
# NOTIFY_SOCKET=SOCK, then wait_until ... notify_says LOG READY=1;
# notify_stop ends the listener.
notify_listen() { # sock log
    rm -f "$1"
    python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
while True:
    m = s.recv(4096).decode(errors="replace")
    print(m.replace("\n", " "), flush=True)
    if m.startswith("STOPPING"):
        break
' "$1" >"$2" 2>&1 &
    NOTIFY_PID=$!
    wait_until 5 "the sd_notify listener's socket $1" test -S "$1"
}

# notify_says LOG STATE [N]: true once LOG holds the line STATE N times (1).
notify_says() {
    [ "$(grep -cx "$2" "$1" 2>/dev/null)" -ge "${3:-1}" ]
}

notify_stop() { # safe without a listener, and under set -e
    if [ -n "${NOTIFY_PID:-}" ]; then
        kill "$NOTIFY_PID" 2>/dev/null || true
        wait "$NOTIFY_PID" 2>/dev/null || true
        NOTIFY_PID=
    fi
}

testbed_check_subnet() {
    python3 - "$TESTBED_NET.0/24" <<'PY'
import ipaddress, subprocess, sys
net = ipaddress.ip_network(sys.argv[1])
out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
out += subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
for tok in out.split():
    if "/" in tok or tok[:1].isdigit():
        try:
            other = ipaddress.ip_network(tok, strict=False)
        except ValueError:
            continue
        if other.prefixlen > 0 and other.overlaps(net):
            sys.exit(f"testbed: {net} overlaps {other} on this machine; set TESTBED_NET to a free /24")
PY
}

testbed_up() {
    local p=$1
    testbed_check_subnet || return 1
    ip netns add "$p-sw"
    ip netns exec "$p-sw" ip link set lo up
    ip netns exec "$p-sw" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    local i
    for i in $(seq 1 "$TESTBED_HOSTS"); do
        ip netns add "$p-h$i"
        ip link add "p$i" netns "$p-sw" type veth peer name eth0 netns "$p-h$i"
        ip netns exec "$p-h$i" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
        ip netns exec "$p-h$i" ip addr add "$TESTBED_NET.$i/24" dev eth0
        ip netns exec "$p-h$i" ip link set eth0 up
        ip netns exec "$p-h$i" ip link set lo up
        ip netns exec "$p-sw" ip link set "p$i" up
        ip netns exec "$p-h$i" ethtool -K eth0 tso off gso off gro off tx off rx off rxvlan off txvlan off >/dev/null 2>&1 || true
        ip netns exec "$p-sw" ethtool -K "p$i" tso off gso off gro off tx off rx off rxvlan off txvlan off >/dev/null 2>&1 || true
    done
    # The kernel reports a new veth as operationally up only after up to a
    # second (link watch); a switch that honours link state (sluice does)
    # would drop frames to a port it still sees down. Wait for all of them.
    local tries=0
    while [ $tries -lt 50 ]; do
        local down=0
        for i in $(seq 1 "$TESTBED_HOSTS"); do
            [ "$(ip netns exec "$p-sw" cat "/sys/class/net/p$i/operstate")" = up ] || down=1
        done
        [ $down -eq 0 ] && return 0
        sleep 0.1
        tries=$((tries + 1))
    done
    echo "testbed: switch ports did not come up" >&2
    return 1
}

testbed_down() {
    local p=$1 ns
    for ns in $(ip netns list | awk '{print $1}' | grep "^$p-" || true); do
        # End only what runs inside our own namespaces.
        local pids
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -n "$pids" ] && kill $pids 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
}

# For the demo and the lab: root, the tools, a release build of sluice.
testbed_prepare() { # who
    if [ "$(id -u)" -ne 0 ]; then
        echo "$1: needs root (network namespaces); run it with sudo" >&2
        exit 1
    fi
    scripts/setup.sh --demo
    cargo build -q --release -p sluice
}

# Open vSwitch started by hand (PEERS.md): a private run directory DIR,
# ovsdb-server and ovs-vswitchd in the foreground of background jobs inside
# namespace NS so that we end them by PID. Sets OVS_DB_PID and OVS_VS_PID;
# the bridge's management socket is DIR/BRIDGE.mgmt.
ovs_start() { # NS DIR
    local ns=$1 d=$2
    export OVS_RUNDIR=$d OVS_DBDIR=$d OVS_LOGDIR=$d OVS_SYSCONFDIR=$d
    ovsdb-tool create "$d/conf.db" /usr/share/openvswitch/vswitch.ovsschema
    ip netns exec "$ns" ovsdb-server "$d/conf.db" --remote="punix:$d/db.sock" --log-file="$d/ovsdb.log" >/dev/null 2>&1 &
    OVS_DB_PID=$!
    wait_until 10 "ovsdb-server's socket $d/db.sock" test -S "$d/db.sock" || return 1
    ip netns exec "$ns" ovs-vsctl --db="unix:$d/db.sock" --no-wait init
    ip netns exec "$ns" ovs-vswitchd "unix:$d/db.sock" --log-file="$d/vswitchd.log" >/dev/null 2>&1 &
    OVS_VS_PID=$!
    # Its control socket (OVS_RUNDIR/ovs-vswitchd.PID.ctl; ip netns exec
    # runs it as this PID) answers once it runs.
    wait_until 10 "ovs-vswitchd to answer on $d/ovs-vswitchd.$OVS_VS_PID.ctl" \
        ovs_answers "$d/ovs-vswitchd.$OVS_VS_PID.ctl"
}

# True if ovs-vswitchd answers on its control socket CTL.
ovs_answers() { ovs-appctl -t "$1" version >/dev/null 2>&1; }

ovs_stop() { # safe before ovs_start (nothing to stop)
    local p
    for p in ${OVS_VS_PID:-} ${OVS_DB_PID:-}; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    OVS_VS_PID= OVS_DB_PID=
    unset OVS_RUNDIR OVS_DBDIR OVS_LOGDIR OVS_SYSCONFDIR
}
