"""The XDP fast path.

An XDP redirect into a veth is delivered only if the veth's peer takes XDP
frames (it needs NAPI: GRO on, or an XDP program of its own), so the hosts'
ends have GRO on here; a physical NIC needs nothing of the kind."""
import re
import time

import pytest

from lab import metric, scrape, wait_until

METRICS = 16697


def xdp_metric(tb, name, path=None):
    sel = 'bridge="br0"' + (f',path="{path}"' if path else "")
    return metric(scrape(tb, METRICS), f"{name}{{{sel}}}")


def xdp_packets(tb):
    """The fast path's kernel and up counters from one scrape."""
    text = scrape(tb, METRICS)
    return tuple(int(float(metric(text, f'sluice_xdp_packets_total{{bridge="br0",path="{p}"}}') or 0)) for p in ("kernel", "up"))


def tcp_in_kernel(tb, what, port, server_port=None):
    """TCP from h1 to h2 through the fast path: over 1000 frames through
    the kernel and at most one in 20 up (a few may while a program is
    replaced)."""
    # The fast path adds what its programs counted to these counters once
    # a second (FOLD_EVERY in crates/datapath/src/fast.rs), which shows in
    # nothing else: wait out one fold so that earlier traffic (pings) is
    # not counted as this stream's. (A scenario's sleep, not a wait for a
    # condition: no condition shows the fold.)
    time.sleep(1.2)
    k0, u0 = xdp_packets(tb)
    mbps = tb.tcp_mbps(port, server_port)
    print(f"{what}: {mbps} Mbit/s")
    assert mbps > 0, f"{what}: no TCP"
    # The stream's frames, once a fold has counted them.
    now = {}

    def above():
        now["k"], now["u"] = xdp_packets(tb)
        return now["k"] > k0 + 1000

    try:
        wait_until(5, "over 1000 frames through the kernel in the metrics", above)
    except AssertionError as e:
        raise AssertionError(f"{e}: kernel {k0} -> {now.get('k')}, up {u0} -> {now.get('u')}") from None
    k1, u1 = now["k"], now["u"]
    assert u1 - u0 <= (k1 - k0) // 20, f"kernel {k0} -> {k1}, up {u0} -> {u1}"


def xdp_started(s):
    """Waits for the fast path to start or give up (it is compiled and
    attached after sluice is ready); fails unless it runs."""
    wait_until(5, "the XDP fast path to start (or say why not)", lambda: re.search("XDP fast path (running|off)", s.log))
    assert "XDP fast path running" in s.log, "the fast path did not start: " + "".join(
        l for l in s.log.splitlines(True) if "XDP fast path off" in l)


def xdp_current(tb):
    """Waits for the programs to run the current tables (they are compiled
    in milliseconds)."""
    wait_until(5, "the XDP programs to run the current flow tables (sluice_xdp_current 1)",
               lambda: xdp_metric(tb, "sluice_xdp_current") == "1")


def xdp_pair(tb, sluice, backend):
    """sluice on p1 and p2 with back end `backend`, rules forwarding between
    them, a ping, and the fast path running the rules."""
    s = sluice.start("--port", "p1", "--port", "p2", "--backend", backend, "--fail-mode", "secure",
                     "--metrics", f"127.0.0.1:{METRICS}")
    xdp_started(s)
    s.ctl("add-flow", "br0", "priority=10,in_port=1,actions=output:2")
    s.ctl("add-flow", "br0", "priority=10,in_port=2,actions=output:1")
    assert tb.ping_ok("h1", tb.ip(2)), "no ping"
    xdp_current(tb)
    return s


def test_xdp_fast_path(testbed, sluice):
    """xdp fast path: forwards in the kernel, counts, follows flow-mods at
    once, sends up what it cannot run."""
    tb = testbed
    tb.gro_on(2)
    s = xdp_pair(tb, sluice, "xdp")
    tcp_in_kernel(tb, "TCP through the XDP fast path", 5341)
    # The rules and ports count what the kernel forwarded.
    out = s.ctl("dump-flows", "br0").stdout
    assert re.search(r"n_packets=[0-9]{4,}.*priority=10,in_port=1 actions=output:2", out), f"dump-flows: {out}"
    out = s.ctl("dump-ports", "br0", "2").stdout
    assert re.search(r"tx pkts=[0-9]{4,}", out), f"dump-ports: {out}"
    # trace says where a packet is handled.
    out = s.ctl("trace", "br0", "1", f"tcp,nw_src={tb.ip(1)},nw_dst={tb.ip(2)},tp_dst=80").stdout
    assert "XDP fast path: stays in the kernel: out of port 2" in out, f"trace: {out}"
    # A flow-mod takes effect at once, before the new program is built.
    s.ctl("add-flow", "br0", "priority=20,icmp,actions=drop")
    assert tb.no_ping("h1", tb.ip(2)), "ping passed a drop rule"
    # A rule the fast path does not run (an IP header edit) goes up to the
    # user-space pipeline, which runs it.
    s.ctl("add-flow", "br0", "priority=30,icmp,in_port=1,actions=mod_nw_tos:32,output:2")
    s.ctl("add-flow", "br0", "priority=30,icmp,in_port=2,actions=mod_nw_tos:32,output:1")
    assert tb.ping_ok("h1", tb.ip(2)), "no ping through user space"
    up = xdp_metric(tb, "sluice_xdp_rules_up")
    assert up == "2", f"rules up: {up}"
    out = s.ctl("trace", "br0", "1", f"icmp,nw_src={tb.ip(1)},nw_dst={tb.ip(2)}").stdout
    assert "XDP fast path: goes up to the user-space pipeline: the rule has action set_field:8->ip_dscp" in out, f"trace: {out}"
    assert xdp_metric(tb, "sluice_xdp_programs_attached") == "2"


def test_xdp_generic_fast_path(testbed, sluice):
    """xdp-generic: the same programs at the generic XDP hook forward in the
    kernel without GRO at the hosts. Its redirects leave through the
    target's transmit path, so the hosts' veths need no GRO (it is off
    here, where a native redirect would be dropped)."""
    tb = testbed
    for i in (1, 2):
        tb.x(f"h{i}", "ethtool", "-K", "eth0", "gro", "off", check=False)
    s = xdp_pair(tb, sluice, "xdp-generic")
    generic = re.findall(r'AF_XDP port.*xdp="?generic', s.log)
    assert len(generic) == 2, "ports not at the generic hook: " + "".join(
        l for l in s.log.splitlines(True) if "AF_XDP port" in l)
    tcp_in_kernel(tb, "TCP through the generic XDP fast path, hosts' GRO off", 5344)
    assert xdp_metric(tb, "sluice_xdp_programs_attached") == "2"


def test_xdp_fast_path_edits(testbed, sluice):
    """xdp fast path: rewrites IPv4 addresses and TCP ports in the kernel,
    with the checksums the receiving hosts verify (their checksum offloads
    are off, so a wrong one would be dropped): a port translation for TCP
    and an address translation for ICMP, both ways."""
    tb = testbed
    tb.gro_on(2)
    m2 = tb.mac("h2")
    tb.x("h1", "ip", "neigh", "replace", tb.ip(77), "lladdr", m2, "dev", "eth0", "nud", "permanent")
    s = sluice.start("--port", "p1", "--port", "p2", "--backend", "xdp", "--fail-mode", "secure",
                     "--metrics", f"127.0.0.1:{METRICS}")
    xdp_started(s)
    for f in ["priority=10,in_port=1,actions=output:2",
              "priority=10,in_port=2,actions=output:1",
              "priority=40,tcp,in_port=1,tp_dst=5398,actions=set_field:5342->tcp_dst,output:2",
              "priority=40,tcp,in_port=2,tp_src=5342,actions=set_field:5398->tcp_src,output:1",
              f"priority=40,icmp,in_port=1,nw_dst={tb.ip(77)},actions=set_field:{tb.ip(2)}->ip_dst,output:2",
              f"priority=40,icmp,in_port=2,nw_dst={tb.ip(1)},actions=set_field:{tb.ip(77)}->ip_src,output:1"]:
        s.ctl("add-flow", "br0", f)
    xdp_current(tb)
    up = xdp_metric(tb, "sluice_xdp_rules_up")
    assert up == "0", f"rules up: {up}"
    out = s.ctl("trace", "br0", "1", f"tcp,nw_src={tb.ip(1)},nw_dst={tb.ip(2)},tp_dst=5398").stdout
    assert "XDP fast path: stays in the kernel: out of port 2" in out, f"trace: {out}"
    assert tb.ping_ok("h1", tb.ip(77)), "no ping to the translated address"
    tcp_in_kernel(tb, "TCP to a translated port through the XDP fast path", 5398, 5342)
    out = s.ctl("dump-flows", "br0").stdout
    assert re.search(r"n_packets=[0-9]{4,}.*tp_dst=5398 actions=set_field:5342->tcp_dst", out), f"dump-flows: {out}"


def _rx_tx(tb, where):
    out = tb.x(where, "cat", "/sys/class/net/eth0/statistics/rx_packets", "/sys/class/net/eth0/statistics/tx_packets").stdout
    rx, tx = out.split()
    return int(rx), int(tx)


@pytest.mark.hosts(3)
def test_xdp_fast_path_flood(testbed, sluice):
    """xdp fast path: FLOOD in the kernel (a DEVMAP broadcast that leaves
    out the ingress port) reaches every other port."""
    tb = testbed
    tb.gro_on(3)
    s = sluice.start("--port", "p1", "--port", "p2", "--port", "p3", "--backend", "xdp", "--fail-mode", "secure",
                     "--no-local", "--metrics", f"127.0.0.1:{METRICS}")
    xdp_started(s)
    s.ctl("add-flow", "br0", "priority=10,actions=FLOOD")
    xdp_current(tb)
    up = xdp_metric(tb, "sluice_xdp_rules_up")
    assert up == "0", f"rules up: {up}"
    out = s.ctl("trace", "br0", "1", f"udp,nw_src={tb.ip(1)},nw_dst={tb.ip(3)}").stdout
    assert "XDP fast path: stays in the kernel: out of ports 2,3" in out, f"trace: {out}"
    assert tb.ping_ok("h1", tb.ip(2)), "no ping h1 -> h2"
    assert tb.ping_ok("h3", tb.ip(1)), "no ping h3 -> h1"
    rx0, tx0 = _rx_tx(tb, "h1")
    tcp_in_kernel(tb, "TCP flooded by the XDP fast path", 5343)
    rx1, tx1 = _rx_tx(tb, "h1")
    # Not back out of the ingress port: h1 gets h2's ACKs, not its own data.
    assert rx1 - rx0 < tx1 - tx0, f"h1 sent {tx1 - tx0}, received {rx1 - rx0}"
    # Every flooded frame reaches the third host too.
    n = int(tb.x("h3", "cat", "/sys/class/net/eth0/statistics/rx_packets").stdout)
    assert n > 1000, f"h3 received {n} packets"
