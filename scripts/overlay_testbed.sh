# The two-host tunnel testbed (sourced by scripts/tunnelbench.sh; the
# end-to-end tests of tunnel ports, tests/e2e/test_overlay.py, build the
# same one in Python).
#
# Two "hosts" (namespaces P-a and P-b) joined by an underlay veth
# (ua 10.213.78.1 <-> ub 10.213.78.2, MTU 1600), each with a "VM" (P-va,
# P-vb: eth0 10.213.79.1 / .2) on a veth into the host. Host a always runs
# sluice with a flow-based tunnel port (ofport 100) and the cloud agent's
# flows; host b runs sluice too, or the kernel's vxlan device, or Open
# vSwitch (netdev datapath, userspace tunnels). Checksum offload is off on
# every veth: a veth hands a frame over with its checksum unfinished
# (CHECKSUM_PARTIAL), which a real NIC would fill in and a peer that checks
# the outer UDP sum (Open vSwitch) or the inner TCP sum would drop.

OV_UNDER=10.213.78
OV_OVER=10.213.79
OV_MAC_A=02:00:00:00:79:01
OV_MAC_B=02:00:00:00:79:02
OV_PIDS=

ov_up() {
    TESTBED_NET=$OV_UNDER testbed_check_subnet || return 1
    TESTBED_NET=$OV_OVER testbed_check_subnet || return 1
    local n h
    for n in a b va vb; do
        ip netns add "$P-$n"
        ip netns exec "$P-$n" ip link set lo up
        ip netns exec "$P-$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    done
    ip link add ua netns "$P-a" type veth peer name ub netns "$P-b"
    ip netns exec "$P-a" ip addr add "$OV_UNDER.1/24" dev ua
    ip netns exec "$P-b" ip addr add "$OV_UNDER.2/24" dev ub
    for h in a b; do
        ip netns exec "$P-$h" ip link set "u$h" mtu 1600 up
        ip netns exec "$P-$h" ethtool -K "u$h" tx off >/dev/null 2>&1
        ip link add vm netns "$P-$h" type veth peer name eth0 netns "$P-v$h"
        ip netns exec "$P-$h" ip link set vm up
        ip netns exec "$P-$h" ethtool -K vm tso off gso off gro off tx off rx off >/dev/null 2>&1
        ip netns exec "$P-v$h" ethtool -K eth0 tso off gso off gro off tx off rx off >/dev/null 2>&1
    done
    ip netns exec "$P-va" ip link set eth0 address $OV_MAC_A up
    ip netns exec "$P-vb" ip link set eth0 address $OV_MAC_B up
    ip netns exec "$P-va" ip addr add "$OV_OVER.1/24" dev eth0
    ip netns exec "$P-vb" ip addr add "$OV_OVER.2/24" dev eth0
    # No flooding in these flows: the VMs know each other's MAC.
    ip netns exec "$P-va" ip neigh add "$OV_OVER.2" lladdr $OV_MAC_B dev eth0
    ip netns exec "$P-vb" ip neigh add "$OV_OVER.1" lladdr $OV_MAC_A dev eth0
}

ov_down() {
    ovs_stop
    local p
    for p in $OV_PIDS; do
        kill "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    OV_PIDS=
}

# ov_sluice HOST ME PEER TYPE [tunnel-port]: sluice on host HOST (underlay
# address .ME) with the agent's flows towards the VM behind .PEER; its
# tunnel port of TYPE is in the config unless the fifth argument is "none"
# (then `add-port` adds it). Listens on ptcp:1670ME.
ov_sluice() {
    local h=$1 me=$2 peer=$3 ty=$4 lmac rmac cfg log
    if [ "$h" = a ]; then lmac=$OV_MAC_A rmac=$OV_MAC_B; else lmac=$OV_MAC_B rmac=$OV_MAC_A; fi
    cfg=$(mktemp)
    cat >"$cfg" <<TOML
[bridge]
name = "br$h"
local_port = false
fail_mode = "secure"
listen = ["ptcp:1670$me"]
flows = [
  "priority=100,dl_dst=$rmac,actions=load:21->NXM_NX_TUN_ID[],set_field:$OV_UNDER.$peer->tun_dst,output:100",
  "priority=100,in_port=100,tun_id=21,tun_src=$OV_UNDER.$peer,dl_dst=$lmac,actions=output:1",
]
[[port]]
name = "vm"
ofport = 1
TOML
    if [ "${5:-}" != none ]; then
        printf '[[port]]\nname = "tun0"\ntype = "%s"\nofport = 100\noptions = { remote_ip = "flow", key = "flow", local_ip = "%s" }\n' \
            "$ty" "$OV_UNDER.$me" >>"$cfg"
    fi
    log=${OUT:-/dev/null}
    mkdir -p "$AUTO_RD/$h"
    # Ready when it says so (READY=1: its bridge runs, ports open,
    # listener bound), as the e2e tests' sluice fixture waits (tests/e2e/lab.py).
    local sock=$AUTO_RD/$h.notify pid r=0
    notify_listen "$sock" "$sock.log" || return 1
    ip netns exec "$P-$h" env NOTIFY_SOCKET="$sock" "$SLUICE" --config "$cfg" --run-dir "$AUTO_RD/$h" >>"$log" 2>&1 &
    pid=$!
    OV_PIDS="$OV_PIDS $pid"
    wait_until 15 "sluice on host $h to be ready (READY=1)" ov_ready "$sock.log" "$pid" || r=1
    kill -0 "$pid" 2>/dev/null || { wait_failed "sluice on host $h exited before it was ready"; r=1; }
    notify_stop
    rm -f "$cfg"
    return $r
}

ov_ready() { notify_says "$1" READY=1 || ! kill -0 "$2" 2>/dev/null; } # log pid

