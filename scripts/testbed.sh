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
    local tries=0
    while [ ! -S "$d/db.sock" ] && [ $tries -lt 50 ]; do sleep 0.1; tries=$((tries + 1)); done
    ip netns exec "$ns" ovs-vsctl --db="unix:$d/db.sock" --no-wait init
    ip netns exec "$ns" ovs-vswitchd "unix:$d/db.sock" --log-file="$d/vswitchd.log" >/dev/null 2>&1 &
    OVS_VS_PID=$!
    sleep 0.5
}

ovs_stop() { # safe before ovs_start (nothing to stop)
    local p
    for p in ${OVS_VS_PID:-} ${OVS_DB_PID:-}; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    OVS_VS_PID= OVS_DB_PID=
    unset OVS_RUNDIR OVS_DBDIR OVS_LOGDIR OVS_SYSCONFDIR
}
