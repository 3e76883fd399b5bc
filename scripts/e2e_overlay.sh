# End-to-end tests of tunnel ports (sourced by e2e.sh, which runs them).
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

# ov_begin PREFIX: a fresh testbed for one round of a test (false if it
# could not be built).
ov_begin() {
    P=$1
    AUTO_RD=$(mktemp -d)
    OUT=$(mktemp)
    ov_up
}

# ov_next: ends a round that passed, before the next one's ov_begin.
ov_next() {
    testbed_down "$P"
    rm -f "$OUT"
    rm -rf "$AUTO_RD"
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
    # listener bound), as start_sluice waits in e2e.sh.
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

# ov_path TO-IP: waits (at most 10 s) until an echo from VM a to TO-IP is
# answered, and says how long that took: for a peer that needs time
# before its tunnel forwards (Open vSwitch's userspace tunnel), so that
# what follows is asserted on a path that is up.
ov_path() {
    local t0=${EPOCHREALTIME/[.,]/} ms
    wait_until 10 "an echo answered across the tunnel to $1" \
        ip netns exec "$P-va" ping -c 1 -W 0.5 -q "$1" >/dev/null 2>&1 || return 1
    ms=$(((${EPOCHREALTIME/[.,]/} - t0) / 1000))
    echo "     path to $1 up after $ms ms"
}

# ov_traffic LABEL TO-IP IPERF-PORT SERVER-NS [first]: 3 echos from VM a,
# every one answered, then 2 s of TCP; prints the throughput. With
# "first", the first echo of the tunnel path must be answered too (no
# wait for the path: sluice must not lose the first frames of a new path).
ov_traffic() {
    local r=0 mbps
    if [ "${5:-}" = first ]; then
        ip netns exec "$P-va" ping -c 1 -W 2 -q "$2" >/dev/null 2>&1 ||
            { echo "     $1: the first echo was not answered"; r=1; }
    fi
    ip netns exec "$P-va" ping -c 3 -i 0.2 -W 2 -q "$2" 2>&1 | grep -q " 3 received" ||
        { echo "     $1: not every echo answered"; r=1; }
    ip netns exec "$P-$4" timeout 60 iperf3 -s -1 -p "$3" >/dev/null 2>&1 &
    local srv=$!
    wait_until 5 "iperf3 to listen on port $3 in $P-$4" tcp_listening "$P-$4" "$3" || r=1
    mbps=$(ip netns exec "$P-va" timeout 10 iperf3 -c "$2" -p "$3" -t 2 -J 2>/dev/null |
        python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e6))' 2>/dev/null)
    mbps=${mbps:-0}
    kill "$srv" 2>/dev/null
    wait "$srv" 2>/dev/null
    echo "     $1: TCP ${mbps} Mbit/s"
    [ "${mbps:-0}" -gt 0 ] || r=1
    return $r
}

test_overlay_between_two_sluice_hosts() {
    local ty r=0
    for ty in vxlan geneve; do
        ov_begin sle2e$$ov1 || { finish "overlay: two sluice hosts (testbed)" 1; return; }
        ov_sluice a 1 2 "$ty" || r=1
        # Host b's tunnel port comes at run time, as ovs-vsctl would add it.
        ov_sluice b 2 1 "$ty" none || r=1
        local out
        out=$("$CTL" --run-dir "$AUTO_RD/b" add-port brb tun0 "type=$ty" ofport=100 \
            options:remote_ip=flow options:key=flow "options:local_ip=$OV_UNDER.2" 2>&1) ||
            { echo "     add-port: $out"; r=1; }
        ov_traffic "sluice <-> sluice over $ty" "$OV_OVER.2" 5311 vb first || r=1
        # The frames on the underlay are the protocol's, with VNI 21.
        local port=4789
        [ "$ty" = geneve ] && port=6081
        ip netns exec "$P-b" timeout 3 tcpdump -c 1 -nn -i ub "udp dst port $port" 2>/dev/null >"$OUT.cap" &
        local td=$!
        wait_until 5 "tcpdump to listen on ub" has_packet_socket "$td" || r=1
        ip netns exec "$P-va" ping -c 2 -i 0.2 -W 1 -q "$OV_OVER.2" >/dev/null 2>&1
        wait $td
        grep -q -i -E "vni (21|0x15)" "$OUT.cap" || { echo "     $ty: no VNI 21 on the wire: $(cat "$OUT.cap")"; r=1; }
        rm -f "$OUT.cap"
        # dump-flows prints the agent's flow back as ovs-ofctl does.
        ip netns exec "$P-a" "$CTL" dump-flows tcp:127.0.0.1:16701 |
            grep -q "actions=load:0x15->NXM_NX_TUN_ID\[\],set_field:$OV_UNDER.2->tun_dst,output:100" ||
            { echo "     dump-flows does not print the agent's flow back"; r=1; }
        ov_down
        [ $r -eq 0 ] || break
        [ "$ty" = vxlan ] && ov_next
    done
    finish "overlay: VM to VM across two sluice hosts, VXLAN and Geneve (the agent's flows)" $r
}

test_overlay_with_the_linux_vxlan_device() {
    ov_begin sle2e$$ov2 || { finish "overlay: Linux vxlan device (testbed)" 1; return; }
    local r=0
    ov_sluice a 1 2 vxlan || r=1
    # Host b: the kernel's own VXLAN endpoint, holding VM b's address.
    ip netns exec "$P-b" ip link add vxl0 type vxlan id 21 remote "$OV_UNDER.1" local "$OV_UNDER.2" dstport 4789
    ip netns exec "$P-b" ip link set vxl0 address $OV_MAC_B mtu 1500 up
    ip netns exec "$P-b" ethtool -K vxl0 tx off >/dev/null 2>&1
    ip netns exec "$P-b" ip addr add "$OV_OVER.12/24" dev vxl0
    ip netns exec "$P-b" ip neigh add "$OV_OVER.1" lladdr $OV_MAC_A dev vxl0
    ip netns exec "$P-va" ip neigh add "$OV_OVER.12" lladdr $OV_MAC_B dev eth0
    ov_traffic "sluice <-> Linux vxlan" "$OV_OVER.12" 5312 b first || r=1
    ov_down
    # Geneve: this kernel has no geneve device (CONFIG_GENEVE is off);
    # Open vSwitch's userspace Geneve is the peer instead (next test).
    finish "overlay: sluice and the Linux vxlan device decapsulate each other" $r
}

test_overlay_with_open_vswitch() {
    if ! command -v ovs-vswitchd >/dev/null; then
        echo "FAIL overlay with Open vSwitch: ovs-vswitchd not found (scripts/setup.sh installs openvswitch-switch)"
        failed=$((failed + 1))
        return
    fi
    local ty r=0
    for ty in vxlan geneve; do
        ov_begin sle2e$$ov3 || { finish "overlay: Open vSwitch (testbed)" 1; return; }
        ov_sluice a 1 2 "$ty" || r=1
        # Host b: Open vSwitch's netdev datapath with a userspace tunnel port
        # (the underlay address on br-phy, which owns ub, as OVS's
        # userspace tunnelling needs) and VM b on br-int.
        local d
        d=$(mktemp -d)
        ovs_start "$P-b" "$d" || r=1
        local vs="ip netns exec $P-b ovs-vsctl --timeout=30 --db=unix:$d/db.sock"
        # ub keeps answering ARP for the address moved to br-phy (Linux
        # answers for any local address on any interface) with its own
        # MAC, racing br-phy's answer through Open vSwitch: host a then
        # sends the first tunnel frames to ub's MAC, which Open vSwitch
        # does not decapsulate (the kernel answers "port unreachable"),
        # until an ARP through br-phy corrects it. arp_ignore=1 leaves the
        # answer to br-phy (docs/RELIABILITY.md, "The overlay flake").
        ip netns exec "$P-b" sysctl -qw net.ipv4.conf.ub.arp_ignore=1
        $vs add-br br-phy -- set bridge br-phy datapath_type=netdev &&
            $vs add-port br-phy ub &&
            ip netns exec "$P-b" ip addr flush dev ub &&
            ip netns exec "$P-b" ip addr add "$OV_UNDER.2/24" dev br-phy &&
            ip netns exec "$P-b" ip link set br-phy up &&
            $vs add-br br-int -- set bridge br-int datapath_type=netdev &&
            $vs add-port br-int vm &&
            $vs add-port br-int tun0 -- set interface tun0 "type=$ty" \
                "options:remote_ip=$OV_UNDER.1" options:key=21 || r=1
        { ov_path "$OV_OVER.2" && ov_traffic "sluice <-> Open vSwitch over $ty" "$OV_OVER.2" 5313 vb; } || {
            r=1
            sed 's/^/     ovs: /' "$d/vswitchd.log" | grep -i -E "warn|err" | tail -5
        }
        ov_down
        rm -rf "$d"
        [ $r -eq 0 ] || break
        [ "$ty" = vxlan ] && ov_next
    done
    finish "overlay: sluice and Open vSwitch tunnel ports decapsulate each other, VXLAN and Geneve" $r
}
