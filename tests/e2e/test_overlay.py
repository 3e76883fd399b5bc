"""Tunnel ports.

Two "hosts" (namespaces P-a and P-b) joined by an underlay veth (ua
10.213.78.1 <-> ub 10.213.78.2, MTU 1600), each with a "VM" (P-va, P-vb:
eth0 10.213.79.1 / .2) on a veth into the host. Host a always runs sluice
with a flow-based tunnel port (ofport 100) and the cloud agent's flows; host
b runs sluice too, or the kernel's vxlan device, or Open vSwitch (netdev
datapath, userspace tunnels). Checksum offload is off on every veth: a veth
hands a frame over with its checksum unfinished (CHECKSUM_PARTIAL), which a
real NIC would fill in and a peer that checks the outer UDP sum (Open
vSwitch) or the inner TCP sum would drop."""
import json
import re
import time

import pytest

import subprocess

from lab import Ovs, check_subnet, has_packet_socket, run, wait_until

UNDER = "10.213.78"
OVER = "10.213.79"
MAC_A = "02:00:00:00:79:01"
MAC_B = "02:00:00:00:79:02"


def overlay_up(tb):
    check_subnet(UNDER)
    check_subnet(OVER)
    for n in ("a", "b", "va", "vb"):
        tb.add_ns(n)
    run(["ip", "link", "add", "ua", "netns", tb.ns("a"), "type", "veth", "peer", "name", "ub", "netns", tb.ns("b")])
    tb.x("a", "ip", "addr", "add", f"{UNDER}.1/24", "dev", "ua")
    tb.x("b", "ip", "addr", "add", f"{UNDER}.2/24", "dev", "ub")
    for h in ("a", "b"):
        tb.x(h, "ip", "link", "set", f"u{h}", "mtu", "1600", "up")
        tb.x(h, "ethtool", "-K", f"u{h}", "tx", "off", check=False)
        run(["ip", "link", "add", "vm", "netns", tb.ns(h), "type", "veth", "peer", "name", "eth0", "netns", tb.ns(f"v{h}")])
        tb.x(h, "ip", "link", "set", "vm", "up")
        tb.x(h, "ethtool", "-K", "vm", *"tso off gso off gro off tx off rx off".split(), check=False)
        tb.x(f"v{h}", "ethtool", "-K", "eth0", *"tso off gso off gro off tx off rx off".split(), check=False)
    tb.x("va", "ip", "link", "set", "eth0", "address", MAC_A, "up")
    tb.x("vb", "ip", "link", "set", "eth0", "address", MAC_B, "up")
    tb.x("va", "ip", "addr", "add", f"{OVER}.1/24", "dev", "eth0")
    tb.x("vb", "ip", "addr", "add", f"{OVER}.2/24", "dev", "eth0")
    # No flooding in these flows: the VMs know each other's MAC.
    tb.x("va", "ip", "neigh", "add", f"{OVER}.2", "lladdr", MAC_B, "dev", "eth0")
    tb.x("vb", "ip", "neigh", "add", f"{OVER}.1", "lladdr", MAC_A, "dev", "eth0")
    return tb


@pytest.fixture
def overlay(make_testbed):
    """overlay(): a fresh overlay testbed (one per round of a test)."""
    return lambda: overlay_up(make_testbed(hosts=0))


def ov_sluice(sluice, tb, tmp_path, h, me, peer, ty, tunnel_port=True):
    """sluice on host h (underlay address .me) with the agent's flows
    towards the VM behind .peer; its tunnel port of type ty is in the
    config unless tunnel_port is false (then add-port adds it). Listens on
    ptcp:1670<me>."""
    lmac, rmac = (MAC_A, MAC_B) if h == "a" else (MAC_B, MAC_A)
    cfg = f"""[bridge]
name = "br{h}"
local_port = false
fail_mode = "secure"
listen = ["ptcp:1670{me}"]
flows = [
  "priority=100,dl_dst={rmac},actions=load:21->NXM_NX_TUN_ID[],set_field:{UNDER}.{peer}->tun_dst,output:100",
  "priority=100,in_port=100,tun_id=21,tun_src={UNDER}.{peer},dl_dst={lmac},actions=output:1",
]
[[port]]
name = "vm"
ofport = 1
"""
    if tunnel_port:
        cfg += f"""[[port]]
name = "tun0"
type = "{ty}"
ofport = 100
options = {{ remote_ip = "flow", key = "flow", local_ip = "{UNDER}.{me}" }}
"""
    path = tmp_path / f"{tb.p}-{h}.toml"
    path.write_text(cfg)
    return sluice.start("--config", path, where=h, tb=tb)


def ov_path(tb, to):
    """Waits (at most 10 s) until an echo from VM a to `to` is answered, and
    says how long that took: for a peer that needs time before its tunnel
    forwards (Open vSwitch's userspace tunnel)."""
    t0 = time.monotonic()
    wait_until(10, f"an echo answered across the tunnel to {to}",
               lambda: tb.x("va", "ping", "-c", "1", "-W", "0.5", "-q", to, check=False).returncode == 0)
    print(f"path to {to} up after {(time.monotonic() - t0) * 1000:.0f} ms")


def ov_traffic(tb, label, to, port, server, first=False):
    """3 echos from VM a, every one answered, then 2 s of TCP. With first,
    the first echo of the tunnel path must be answered too (no wait for
    the path: sluice must not lose the first frames of a new path)."""
    if first:
        assert tb.x("va", "ping", "-c", "1", "-W", "2", "-q", to, check=False).returncode == 0, \
            f"{label}: the first echo was not answered"
    out = tb.x("va", "ping", "-c", "3", "-i", "0.2", "-W", "2", "-q", to, check=False).stdout
    assert " 3 received" in out, f"{label}: not every echo answered: {out}"
    srv = tb.bg(server, "timeout", "60", "iperf3", "-s", "-1", "-p", port)
    wait_until(5, f"iperf3 to listen on port {port} in {tb.ns(server)}", lambda: tb.tcp_listening(server, port))
    p = tb.x("va", "timeout", "10", "iperf3", "-c", to, "-p", port, "-t", "2", "-J", check=False, timeout=30)
    try:
        mbps = int(json.loads(p.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6)
    except (ValueError, KeyError, TypeError):
        mbps = 0
    tb.procs.stop(srv)
    print(f"{label}: TCP {mbps} Mbit/s")
    assert mbps > 0, f"{label}: no TCP"


def test_overlay_between_two_sluice_hosts(overlay, sluice, bins, tmp_path):
    """overlay: VM to VM across two sluice hosts, VXLAN and Geneve (the
    agent's flows)."""
    for ty in ("vxlan", "geneve"):
        tb = overlay()
        ov_sluice(sluice, tb, tmp_path, "a", 1, 2, ty)
        # Host b's tunnel port comes at run time, as ovs-vsctl would add it.
        b = ov_sluice(sluice, tb, tmp_path, "b", 2, 1, ty, tunnel_port=False)
        b.ctl("add-port", "brb", "tun0", f"type={ty}", "ofport=100", "options:remote_ip=flow",
              "options:key=flow", f"options:local_ip={UNDER}.2")
        ov_traffic(tb, f"sluice <-> sluice over {ty}", f"{OVER}.2", 5311, "vb", first=True)
        # The frames on the underlay are the protocol's, with VNI 21.
        port = 6081 if ty == "geneve" else 4789
        cap = tmp_path / f"{ty}.cap"
        td = tb.bg("b", "timeout", "3", "tcpdump", "-c", "1", "-nn", "-i", "ub", f"udp dst port {port}", stdout=cap,
                   stderr=subprocess.DEVNULL)
        wait_until(5, "tcpdump to listen on ub", lambda: has_packet_socket(td.pid))
        tb.x("va", "ping", "-c", "2", "-i", "0.2", "-W", "1", "-q", f"{OVER}.2", check=False)
        td.wait(10)
        assert re.search(r"vni (21|0x15)", cap.read_text(), re.I), f"{ty}: no VNI 21 on the wire: {cap.read_text()}"
        # dump-flows prints the agent's flow back as ovs-ofctl does.
        out = tb.x("a", bins / "sluice-ctl", "dump-flows", "tcp:127.0.0.1:16701").stdout
        want = f"actions=load:0x15->NXM_NX_TUN_ID[],set_field:{UNDER}.2->tun_dst,output:100"
        assert want in out, f"dump-flows does not print the agent's flow back: {out}"
        for s in sluice.all:
            s.stop()
        tb.down()


def test_overlay_with_the_linux_vxlan_device(overlay, sluice, tmp_path):
    """overlay: sluice and the Linux vxlan device decapsulate each other.
    (Geneve: this kernel has no geneve device (CONFIG_GENEVE is off); Open
    vSwitch's userspace Geneve is the peer instead, in the next test.)"""
    tb = overlay()
    ov_sluice(sluice, tb, tmp_path, "a", 1, 2, "vxlan")
    # Host b: the kernel's own VXLAN endpoint, holding VM b's address.
    tb.x("b", "ip", "link", "add", "vxl0", "type", "vxlan", "id", "21", "remote", f"{UNDER}.1", "local", f"{UNDER}.2",
         "dstport", "4789")
    tb.x("b", "ip", "link", "set", "vxl0", "address", MAC_B, "mtu", "1500", "up")
    tb.x("b", "ethtool", "-K", "vxl0", "tx", "off", check=False)
    tb.x("b", "ip", "addr", "add", f"{OVER}.12/24", "dev", "vxl0")
    tb.x("b", "ip", "neigh", "add", f"{OVER}.1", "lladdr", MAC_A, "dev", "vxl0")
    tb.x("va", "ip", "neigh", "add", f"{OVER}.12", "lladdr", MAC_B, "dev", "eth0")
    ov_traffic(tb, "sluice <-> Linux vxlan", f"{OVER}.12", 5312, "b", first=True)


def test_overlay_with_open_vswitch(overlay, sluice, need, tmp_path):
    """overlay: sluice and Open vSwitch tunnel ports decapsulate each other,
    VXLAN and Geneve."""
    need("ovs-vswitchd", "openvswitch-switch")
    for ty in ("vxlan", "geneve"):
        tb = overlay()
        ov_sluice(sluice, tb, tmp_path, "a", 1, 2, ty)
        # Host b: Open vSwitch's netdev datapath with a userspace tunnel
        # port (the underlay address on br-phy, which owns ub, as OVS's
        # userspace tunnelling needs) and VM b on br-int.
        d = tmp_path / f"ovs-{ty}"
        d.mkdir()
        o = Ovs(tb.ns("b"), d)
        try:
            o.start()
            # ub keeps answering ARP for the address moved to br-phy
            # (Linux answers for any local address on any interface) with
            # its own MAC, racing br-phy's answer through Open vSwitch:
            # host a then sends the first tunnel frames to ub's MAC, which
            # Open vSwitch does not decapsulate, until an ARP through
            # br-phy corrects it. arp_ignore=1 leaves the answer to br-phy
            # (docs/RELIABILITY.md, "The overlay flake").
            tb.x("b", "sysctl", "-qw", "net.ipv4.conf.ub.arp_ignore=1")
            o.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev")
            o.vsctl("add-port", "br-phy", "ub")
            tb.x("b", "ip", "addr", "flush", "dev", "ub")
            tb.x("b", "ip", "addr", "add", f"{UNDER}.2/24", "dev", "br-phy")
            tb.x("b", "ip", "link", "set", "br-phy", "up")
            o.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev")
            o.vsctl("add-port", "br-int", "vm")
            o.vsctl("add-port", "br-int", "tun0", "--", "set", "interface", "tun0", f"type={ty}",
                    f"options:remote_ip={UNDER}.1", "options:key=21")
            try:
                ov_path(tb, f"{OVER}.2")
                ov_traffic(tb, f"sluice <-> Open vSwitch over {ty}", f"{OVER}.2", 5313, "vb")
            except AssertionError as e:
                log = (d / "vswitchd.log").read_text(errors="replace").splitlines()
                bad = [l for l in log if re.search("warn|err", l, re.I)][-5:]
                raise AssertionError(f"{e}\novs: " + "\novs: ".join(bad)) from None
        finally:
            o.stop()
        for s in sluice.all:
            s.stop()
        tb.down()
