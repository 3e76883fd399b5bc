"""OVN on sluice: Debian's OVN 23.03 (ovn-northd, ovn-controller, the NB and
SB databases on Open vSwitch's ovsdb-server), unchanged, against chassis
whose switch is Open vSwitch 3.1 (ovs-vswitchd, br-int datapath_type=netdev)
or sluice (`sluice --ovsdb`). Every scenario runs on both; the two-host
ones also mixed (one chassis of each).

ovn_lab.py has the laboratory. One OVN central (NB, SB, northd) serves the
module; each test deletes its logical configuration after itself, and
starts only when none is left. Every test ends by asserting that no
ovn-controller logged an OpenFlow error or a dropped connection from its
switch, and every wait fails at once when one does.
"""
import os
from pathlib import Path

import pytest

import ovn_lab
from lab import wait_until
from ovn_lab import EXT, LS1, LS2, VIPS, Central, Ovn

SWITCHES = ("ovs", "sluice")

# Every scenario passes on both switches (no xfail marks); when one starts
# to fail on sluice, tests/e2e/ovn_replay.py on Open vSwitch's flows names
# every flow sluice refuses (tests/e2e/README.md).


@pytest.fixture(scope="module")
def central(tmp_path_factory):
    c = Central(tmp_path_factory.mktemp("ovn-central"))
    try:
        yield c.start()
    finally:
        c.stop()


@pytest.fixture
def ovn(request, central, make_testbed, bins, tmp_path):
    left = central.logical_rows()
    assert left == "", f"the northbound database is not empty at the start: {left}"
    o = Ovn(make_testbed(hosts=0), central, bins, tmp_path)
    request.node.e2e_logs = [("OVN", lambda: "\n\n".join(f"== {t}\n{r()}" for t, r in o.logs()))]
    try:
        yield o
    finally:
        try:
            if os.environ.get("OVN_E2E_DUMP"):
                o.dump(Path(os.environ["OVN_E2E_DUMP"]) / request.node.name)
            o.stop()
        finally:
            central.clean()


def mac(net, host):
    """The MAC of address NET.host (02:00:00:00:NN:HH, NN the third octet)."""
    return f"02:00:00:00:{int(net.split('.')[2]):02x}:{host:02x}"


def lsp(o, ls, name, net, host, ch=None, gw=None):
    """Logical port `name` on switch ls, addresses MAC NET.host; with ch, a
    VM on chassis ch with that address (default route via NET.gw)."""
    m = mac(net, host)
    o.nbctl("lsp-add", ls, name, "--", "lsp-set-addresses", name, f"{m} {net}.{host}")
    if ch is not None:
        o.vm(ch, name, m, f"{net}.{host}", gw=f"{net}.{gw}" if gw else None)
    return name


def one_switch(o, ch, ports=3):
    """Logical switch ls1 with ports vm1..vmN (LS1.11, .12, ...), each a VM
    on ch; ready."""
    o.nbctl("ls-add", "ls1")
    vms = [lsp(o, "ls1", f"vm{i}", LS1, 10 + i, ch) for i in range(1, ports + 1)]
    o.ready(*vms)
    return vms


def router_between(o, lr="lr1", switches=(("ls1", LS1), ("ls2", LS2)), chassis=None):
    """Logical router lr with port LR-LS (NET.1/24) on each switch ls; a
    gateway router (options:chassis) when chassis is given."""
    o.nbctl("lr-add", lr)
    if chassis:
        o.nbctl("set", "logical_router", lr, f"options:chassis={chassis}")
    for ls, net in switches:
        o.nbctl("--may-exist", "ls-add", ls)
        o.nbctl("lrp-add", lr, f"{lr}-{ls}", mac(net, 1), f"{net}.1/24")
        o.nbctl("lsp-add", ls, f"{ls}-{lr}", "--", "lsp-set-type", f"{ls}-{lr}", "router",
                "--", "lsp-set-addresses", f"{ls}-{lr}", "router",
                "--", "lsp-set-options", f"{ls}-{lr}", f"router-port={lr}-{ls}")


@pytest.mark.parametrize("switch", SWITCHES)
def test_ovn_logical_switch(ovn, switch):
    """One logical switch, three ports: every VM reaches every other."""
    ch = ovn.add_chassis(switch)
    one_switch(ovn, ch)
    for a, b in ((1, 2), (1, 3), (2, 3), (3, 1)):
        assert ovn.ping(f"vm{a}", f"{LS1}.{10 + b}"), f"no ping vm{a} -> vm{b}"
    ovn.check_switches(interfaces=True)


@pytest.mark.parametrize("switch", SWITCHES)
def test_ovn_acls(ovn, switch):
    """ACLs: a drop ACL (no IPv4 to vm2), an allow-related one above it
    (TCP to vm2's port 8080) whose replies pass only through conntrack (a
    from-lport ACL drops what vm2 sends to vm1), and a port group's ACL on
    an address set (no ICMP from the set's addresses to vm3), which follows
    the set when it changes."""
    o = ovn
    ch = o.add_chassis(switch)
    one_switch(o, ch)
    vm1, vm2, vm3 = (f"{LS1}.{10 + i}" for i in (1, 2, 3))
    assert o.ping("vm1", vm2) and o.ping("vm1", vm3), "no ping before the ACLs"
    o.nbctl("acl-add", "ls1", "to-lport", "1001", 'outport == "vm2" && ip4', "drop")
    o.nbctl("acl-add", "ls1", "to-lport", "1002", 'outport == "vm2" && tcp.dst == 8080', "allow-related")
    o.nbctl("acl-add", "ls1", "from-lport", "1001", f'inport == "vm2" && ip4.dst == {vm1}', "drop")
    o.nbctl("pg-add", "pg_web", "vm3")
    o.nbctl("create", "address_set", "name=as_clients", f'addresses="{vm1}"')
    o.nbctl("--type=port-group", "acl-add", "pg_web", "to-lport", "1003",
            "outport == @pg_web && ip4.src == $as_clients && icmp4", "drop")
    o.sync()
    o.serve("vm2", 8080, "vm2")
    got = o.fetch("vm1", vm2, 8080)
    assert got == [f"vm2 {vm1}"], f"vm1 -> vm2:8080 (allow-related, the reply through conntrack): {got}"
    assert o.no_ping("vm1", vm2), "the drop ACL lets vm1 ping vm2"
    assert o.no_ping("vm1", vm3), "the port group's ACL on $as_clients lets vm1 ping vm3"
    assert o.ping("vm2", vm3), "no ping vm2 -> vm3 (vm2 is not in $as_clients)"
    o.nbctl("clear", "address_set", "as_clients", "addresses")
    o.sync()
    assert o.ping("vm1", vm3), "vm1 -> vm3 still dropped once $as_clients is empty"
    o.check_switches(interfaces=True)


@pytest.mark.parametrize("switch", SWITCHES)
def test_ovn_logical_router(ovn, switch):
    """A logical router between two logical switches: vm1 (ls1) and vm2
    (ls2) reach their gateways and each other across it."""
    o = ovn
    ch = o.add_chassis(switch)
    router_between(o)
    lsp(o, "ls1", "vm1", LS1, 11, ch, gw=1)
    lsp(o, "ls2", "vm2", LS2, 11, ch, gw=1)
    o.ready("vm1", "vm2")
    assert o.ping("vm1", f"{LS1}.1"), "vm1 gets no answer from its router port"
    o.ping_eventually("vm1", f"{LS2}.11")
    assert o.ping("vm1", f"{LS2}.11"), "no ping vm1 -> vm2 across the router"
    assert o.ping("vm2", f"{LS1}.11"), "no ping vm2 -> vm1 across the router"
    o.check_switches(interfaces=True)


@pytest.mark.parametrize("switch", SWITCHES)
def test_ovn_acl_log_through_a_meter(ovn, switch):
    """An ACL that logs, through a meter (OVN's ACL log meters: a
    METER_MOD in OpenFlow 1.5 and controller(userdata=...,meter_id=N)):
    the pings it allows reach ovn-controller, which logs each as its
    acl_log line, named and with the verdict; the meter's band (10 packets
    a second) lets through no more than its burst allows."""
    o = ovn
    ch = o.add_chassis(switch)
    one_switch(o, ch, ports=2)
    vm2 = f"{LS1}.12"
    o.nbctl("meter-add", "acl-meter", "drop", "10", "pktps")
    o.nbctl("--log", "--name=ping-vm2", "--severity=info", "--meter=acl-meter", "acl-add", "ls1", "to-lport",
            "1001", 'outport == "vm2" && icmp4', "allow")
    o.sync()
    assert o.ping("vm1", vm2), "the logged ACL's allow lets no ping through"
    o.wait(10, "ovn-controller's acl_log line for the ping",
           lambda: 'name="ping-vm2", verdict=allow' in ch.log.read_text(errors="replace"))
    # A flood of 200 echos in 0.4 s: the meter lets about its rate (and a
    # burst) reach the log, not all 200.
    o.tb.x("vm1", "ping", "-c", "200", "-i", "0.002", "-q", vm2, check=False, timeout=30)
    logged = ch.log.read_text(errors="replace").count('name="ping-vm2", verdict=allow')
    assert 1 <= logged < 100, f"{logged} acl_log lines for 203 echos through a 10 pktps meter"
    o.check_switches(interfaces=True)


def load_balanced(o, ch1, ch2):
    """Load balancer lb1 on ls1: VIP:80 -> vm2:8080 (on ch1), vm3:8080 (on
    ch2), both behind router lr1; 40 connections from vm1 (ls1, ch1) to
    the VIP reach both backends. The answers, one line per connection."""
    router_between(o)
    lsp(o, "ls1", "vm1", LS1, 11, ch1, gw=1)
    lsp(o, "ls2", "vm2", LS2, 11, ch1, gw=1)
    lsp(o, "ls2", "vm3", LS2, 12, ch2, gw=1)
    o.nbctl("lb-add", "lb1", f"{VIPS}.10:80", f"{LS2}.11:8080,{LS2}.12:8080", "tcp")
    o.nbctl("ls-lb-add", "ls1", "lb1")
    o.ready("vm1", "vm2", "vm3")
    o.serve("vm2", 8080, "vm2")
    o.serve("vm3", 8080, "vm3")
    o.ping_eventually("vm1", f"{LS2}.11")
    o.ping_eventually("vm1", f"{LS2}.12")
    got = o.fetch("vm1", f"{VIPS}.10", 80, n=40, want=2)
    names = {l.split()[0] for l in got if not l.startswith("ERR")}
    assert names == {"vm2", "vm3"}, f"vm1 -> {VIPS}.10:80 reached {sorted(names)}: {got}"
    return got


@pytest.mark.parametrize("switch", SWITCHES)
def test_ovn_load_balancer(ovn, switch):
    """A load balancer on vm1's switch: VIP:80 -> vm2:8080, vm3:8080 (ls2,
    behind the router); TCP from vm1 to the VIP reaches both backends, and
    each answer comes back from the VIP."""
    o = ovn
    ch = o.add_chassis(switch)
    got = load_balanced(o, ch, ch)
    assert all(l.split()[1] == f"{LS1}.11" for l in got if not l.startswith("ERR")), f"backends saw: {got}"
    assert not any(l.startswith("ERR") for l in got), f"connections failed: {got}"
    o.check_switches(interfaces=True)


DHCLIENT_SCRIPT = """#!/bin/sh
# dhclient's -sf script: logs what it was told, configures eth0 alone (the
# machine's resolv.conf is never touched).
echo "$reason ip=$new_ip_address mask=$new_subnet_mask routers=$new_routers" \\
    "lease=$new_dhcp_lease_time server=$new_dhcp_server_identifier" >> "$(dirname "$0")/dhcp.log"
case "$reason" in
PREINIT) ip link set dev "$interface" up ;;
BOUND|RENEW|REBIND|REBOOT)
    ip addr add "$new_ip_address/$new_subnet_mask" dev "$interface"
    [ -z "$new_routers" ] || ip route replace default via "${new_routers%% *}" ;;
esac
exit 0
"""


@pytest.mark.parametrize("switch", SWITCHES)
def test_ovn_dhcp(ovn, switch, need, tmp_path):
    """OVN's native DHCP: vm1 has no address; dhclient gets the one of its
    logical port, with the router and lease time of the DHCP_Options, and
    then reaches vm2."""
    need("dhclient", "isc-dhcp-client")
    o = ovn
    ch = o.add_chassis(switch)
    o.nbctl("ls-add", "ls1")
    m = mac(LS1, 11)
    o.nbctl("lsp-add", "ls1", "vm1", "--", "lsp-set-addresses", "vm1", f"{m} {LS1}.11")
    o.vm(ch, "vm1", m)
    lsp(o, "ls1", "vm2", LS1, 12, ch)
    opts = o.nbctl("create", "dhcp_options", f"cidr={LS1}.0/24",
                   f'options="lease_time"="3600" "router"="{LS1}.1" "server_id"="{LS1}.1" '
                   f'"server_mac"="{mac(LS1, 1)}"').strip()
    o.nbctl("lsp-set-dhcpv4-options", "vm1", opts)
    o.ready("vm1", "vm2")
    d = tmp_path / "dhcp"
    d.mkdir()
    script = d / "script"
    script.write_text(DHCLIENT_SCRIPT)
    script.chmod(0o755)
    (d / "dhclient.conf").write_text("")
    p = o.tb.x("vm1", "timeout", "30", "dhclient", "-1", "-v", "-cf", d / "dhclient.conf", "-sf", script,
               "-lf", d / "leases", "-pf", d / "pid", "eth0", check=False, timeout=60)
    log = (d / "dhcp.log").read_text() if (d / "dhcp.log").exists() else ""
    assert p.returncode == 0, f"dhclient got no lease ({p.returncode}): {p.stdout}{p.stderr}\n{log}"
    # dhclient went on in the background (it renews): ended by its PID,
    # which it writes once it has forked.
    pid = wait_until(5, "dhclient's pid file", lambda: (d / "pid").exists() and (d / "pid").read_text().strip())
    o.tb.x("vm1", "kill", pid, check=False)
    bound = [l for l in log.splitlines() if l.startswith("BOUND")]
    assert bound == [f"BOUND ip={LS1}.11 mask=255.255.255.0 routers={LS1}.1 lease=3600 server={LS1}.1"], log
    addrs = o.tb.x("vm1", "ip", "-4", "-o", "addr", "show", "dev", "eth0").stdout
    assert f"{LS1}.11/24" in addrs, f"vm1's eth0: {addrs}"
    assert o.ping("vm1", f"{LS1}.12"), "no ping vm1 -> vm2 with the leased address"
    o.check_switches(interfaces=True)


@pytest.mark.parametrize("switch", SWITCHES)
def test_ovn_localnet(ovn, switch):
    """A localnet port: ls1's traffic leaves through the patch port
    ovn-controller makes to br-ex (ovn-bridge-mappings physnet:br-ex) and
    reaches a namespace outside, on br-ex, in ls1's subnet."""
    o = ovn
    ch = o.add_chassis(switch, mappings="physnet:br-ex")  # br-ex made first
    o.veth_into(ch, "br-ex", "ext0", "outside", mac=mac(LS1, 200), cidr=f"{LS1}.200/24")
    o.nbctl("ls-add", "ls1")
    lsp(o, "ls1", "vm1", LS1, 11, ch)
    o.nbctl("lsp-add", "ls1", "ln1", "--", "lsp-set-type", "ln1", "localnet", "--", "lsp-set-addresses", "ln1",
            "unknown", "--", "lsp-set-options", "ln1", "network_name=physnet")
    o.ready("vm1")
    o.wait(ovn_lab.WAIT, "the patch port from br-int to br-ex",
           lambda: "patch-" in ch.vsctl("list-ports", "br-ex").stdout)
    o.ping_eventually("vm1", f"{LS1}.200")
    assert o.ping("vm1", f"{LS1}.200"), "no ping vm1 -> outside through the localnet port"
    assert o.ping("outside", f"{LS1}.11"), "no ping outside -> vm1"
    o.check_switches(interfaces=True)


@pytest.mark.parametrize("switch", SWITCHES)
def test_ovn_gateway_router_nat(ovn, switch):
    """A gateway router (options:chassis) between ls1 (vm1, vm2) and the
    outside network (a namespace on logical switch ext): SNAT of ls1 to the
    router's outside address, DNAT of EXT.10 to vm2."""
    o = ovn
    ch = o.add_chassis(switch)
    router_between(o, lr="gw1", switches=(("ls1", LS1), ("ext", EXT)), chassis=ch.name)
    lsp(o, "ls1", "vm1", LS1, 11, ch, gw=1)
    lsp(o, "ls1", "vm2", LS1, 12, ch, gw=1)
    lsp(o, "ext", "out", EXT, 2, ch)
    o.nbctl("lr-nat-add", "gw1", "snat", f"{EXT}.1", f"{LS1}.0/24")
    o.nbctl("lr-nat-add", "gw1", "dnat", f"{EXT}.10", f"{LS1}.12")
    o.ready("vm1", "vm2", "out")
    o.serve("out", 8080, "out")
    o.serve("vm2", 8080, "vm2")
    o.ping_eventually("vm1", f"{EXT}.2")
    got = o.fetch("vm1", f"{EXT}.2", 8080)
    assert got == [f"out {EXT}.1"], f"vm1 -> outside:8080 (SNAT to {EXT}.1): {got}"
    got = o.fetch("out", f"{EXT}.10", 8080)
    assert got == [f"vm2 {EXT}.2"], f"outside -> {EXT}.10:8080 (DNAT to vm2): {got}"
    o.check_switches(interfaces=True)


# Two chassis, Geneve between them: both Open vSwitch, both sluice, or one
# of each ("mixed": ch1 Open vSwitch, ch2 sluice).
PAIRS = {"ovs": ("ovs", "ovs"), "sluice": ("sluice", "sluice"), "mixed": ("ovs", "sluice")}


def two_chassis(o, pair):
    """Chassis ch1 and ch2 joined by the underlay, each with its encap IP
    there; both have their Geneve tunnel to the other."""
    a, b = PAIRS[pair]
    ip_a, ip_b = o.underlay("ch1", "ch2")
    ch1 = o.add_chassis(a, "ch1", encap_ip=ip_a, underlay="ul")
    ch2 = o.add_chassis(b, "ch2", encap_ip=ip_b, underlay="ul")
    for ch, other in ((ch1, ip_b), (ch2, ip_a)):
        o.wait(ovn_lab.WAIT, f"{ch.name}'s Geneve port to {other}",
               lambda: f'remote_ip="{other}"' in ch.vsctl("--columns=options", "find", "interface",
                                                           "type=geneve").stdout)
    return ch1, ch2


@pytest.mark.parametrize("pair", PAIRS)
def test_ovn_two_hosts_ping(ovn, pair):
    """One logical switch across two chassis: vm1 (ch1) and vm2 (ch2)
    reach each other through Geneve."""
    o = ovn
    ch1, ch2 = two_chassis(o, pair)
    o.nbctl("ls-add", "ls1")
    lsp(o, "ls1", "vm1", LS1, 11, ch1)
    lsp(o, "ls1", "vm2", LS1, 12, ch2)
    o.ready("vm1", "vm2")
    o.ping_eventually("vm1", f"{LS1}.12")
    assert o.ping("vm1", f"{LS1}.12"), "no ping vm1 (ch1) -> vm2 (ch2)"
    assert o.ping("vm2", f"{LS1}.11"), "no ping vm2 (ch2) -> vm1 (ch1)"
    o.check_switches(interfaces=True)


@pytest.mark.parametrize("pair", PAIRS)
def test_ovn_two_hosts_acl(ovn, pair):
    """ACLs across two chassis: vm2 (ch2) takes no IPv4 but TCP to its port
    8080 (allow-related), and answers vm1 (ch1) only through conntrack."""
    o = ovn
    ch1, ch2 = two_chassis(o, pair)
    o.nbctl("ls-add", "ls1")
    lsp(o, "ls1", "vm1", LS1, 11, ch1)
    lsp(o, "ls1", "vm2", LS1, 12, ch2)
    o.ready("vm1", "vm2")
    vm1, vm2 = f"{LS1}.11", f"{LS1}.12"
    o.ping_eventually("vm1", vm2)
    o.nbctl("acl-add", "ls1", "to-lport", "1001", 'outport == "vm2" && ip4', "drop")
    o.nbctl("acl-add", "ls1", "to-lport", "1002", 'outport == "vm2" && tcp.dst == 8080', "allow-related")
    o.nbctl("acl-add", "ls1", "from-lport", "1001", f'inport == "vm2" && ip4.dst == {vm1}', "drop")
    o.sync()
    o.serve("vm2", 8080, "vm2")
    got = o.fetch("vm1", vm2, 8080)
    assert got == [f"vm2 {vm1}"], f"vm1 -> vm2:8080 across the tunnel (allow-related): {got}"
    assert o.no_ping("vm1", vm2), "the drop ACL lets vm1 ping vm2"
    assert o.no_ping("vm2", vm1), "the from-lport drop ACL lets vm2 ping vm1"
    o.check_switches(interfaces=True)


@pytest.mark.parametrize("pair", PAIRS)
def test_ovn_two_hosts_load_balancer(ovn, pair):
    """A load balancer whose backends are on both chassis: vm1 (ch1, ls1)
    reaches VIP:80 -> vm2:8080 (ch1, ls2) and vm3:8080 (ch2, ls2) through
    the distributed router, both backends answering."""
    o = ovn
    ch1, ch2 = two_chassis(o, pair)
    got = load_balanced(o, ch1, ch2)
    assert not any(l.startswith("ERR") for l in got), f"connections failed: {got}"
    o.check_switches(interfaces=True)
