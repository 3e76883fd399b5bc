"""Forwarding through one sluice between hosts: back ends, static flows,
flooding, VLANs, fast failover, the LOCAL port, two bridges, nullx."""
import json
import os
import re
import signal
import subprocess
import time

import pytest

from lab import PAD, SCRIPTS, wait_until


def two_port_config(tmp_path, *flows, backend=None):
    """A config file with two ports (ofport 1 and 2) and the given flows."""
    text = "[bridge]\n"
    if backend:
        text += f'backend = "{backend}"\n'
    text += "flows = [\n" + "".join(f'  "{f}",\n' for f in flows) + "]\n"
    text += '[[port]]\nname = "p1"\nofport = 1\n[[port]]\nname = "p2"\nofport = 2\n'
    path = tmp_path / "two_ports.toml"
    path.write_text(text)
    return path


def ping_tcp_arp(tb, sluice, *args):
    """Ping, TCP and ARP from h1 to h2 through sluice started with args."""
    s = sluice.start(*args)
    assert tb.ping_ok("h1", tb.ip(2)), "no ping"
    mbps = tb.tcp_mbps(5301)
    print(f"TCP through sluice ({' '.join(map(str, args))}): {mbps} Mbit/s")
    assert mbps > 0, "no TCP"
    # ARP went through too: h1 knows h2's MAC.
    assert "lladdr" in tb.x("h1", "ip", "neigh", "show", tb.ip(2)).stdout, "h1 has no ARP entry for h2"
    return s


def test_standalone_ping_and_tcp(testbed, sluice):
    """standalone: ping, TCP and ARP between two hosts."""
    ping_tcp_arp(testbed, sluice, "--port", "p1", "--port", "p2", "--cpu", "0")


@pytest.mark.parametrize("be", ["afpacket-mmsg", "afxdp"])
def test_backends_and_workers(testbed, sluice, be):
    """back end BE: ping, TCP and ARP."""
    s = ping_tcp_arp(testbed, sluice, "--port", "p1", "--port", "p2", "--backend", be)
    if be == "afxdp":
        # Really AF_XDP, not the fallback to AF_PACKET.
        s.stop()
        assert "AF_XDP port" in s.log
        assert "falling back" not in s.log


def test_backends_and_workers_two_workers(testbed, sluice):
    """two workers per bridge (PACKET_FANOUT): ping, TCP and ARP. Two
    workers share each port through a fanout group, and the MAC table."""
    s = ping_tcp_arp(testbed, sluice, "--port", "p1", "--port", "p2", "--workers", "2")
    s.stop()
    assert "workers=2" in s.log


def test_static_flow_table(testbed, sluice, tmp_path):
    """static flow table: drops ICMP, forwards TCP by in_port."""
    tb = testbed
    cfg = two_port_config(tmp_path, "priority=20,icmp,actions=drop",
                          "priority=10,in_port=1,actions=output:2", "priority=10,in_port=2,actions=output:1")
    sluice.start("--config", cfg)
    # The static table drops ICMP: ping must fail while TCP passes.
    assert not tb.ping_ok("h1", tb.ip(2)), "ping passed a drop rule"
    srv = tb.iperf3_server(5302)
    assert tb.x("h1", "iperf3", "-c", tb.ip(2), "-p", "5302", "-t", "1", check=False, timeout=60).returncode == 0
    srv.wait(10)


@pytest.mark.hosts(4)
def test_flood_to_four_ports(testbed, sluice):
    """flooding: broadcasts reach all four ports; learning between them."""
    tb = testbed
    s = sluice.start("--port", "p1", "--port", "p2", "--port", "p3", "--port", "p4")
    # An address nobody has: h1's ARP requests are broadcast and flooded.
    tb.x("h1", "ping", "-c", "1", "-W", "1", tb.ip(9), check=False)
    assert tb.ping_ok("h1", tb.ip(4))
    assert tb.ping_ok("h3", tb.ip(2))
    s.stop()
    for p in (2, 3, 4):
        tx = s.port_counter(p, 5)
        assert tx is not None and int(tx) >= 1, f"port {p} tx {tx}"


@pytest.mark.parametrize("be", ["afpacket", "afxdp", "xdp"])
def test_vlan_push_pop(testbed, sluice, tmp_path, be):
    """VLAN (BE): push on the way in, pop on the way out. On AF_XDP the
    frame is edited where it was received (its UMEM chunk): the push takes
    the kernel's headroom, the pop gives it back. With xdp the XDP program
    pushes and pops in the kernel (the hosts' GRO on: a veth takes XDP
    redirects only then)."""
    tb = testbed
    if be == "xdp":
        tb.gro_on(2)
    cfg = two_port_config(tmp_path, "priority=10,in_port=1,actions=push_vlan:0x8100,set_field:4106->vlan_vid,output:2",
                          "priority=10,in_port=2,dl_vlan=10,actions=pop_vlan,output:1", backend=be)
    s = sluice.start("--config", cfg)
    src = "020000000099"
    # h1 -> h2: the frame arrives tagged with VID 10.
    assert tb.frame_arrives("h1", "h2", f"{src}8100000a88b5", f"ffffffffffff{src}88b5{PAD}"), "no tagged frame at h2"
    # h2 -> h1: a frame tagged with VID 10 arrives untagged.
    assert tb.frame_arrives("h2", "h1", f"{src}88b5", f"ffffffffffff{src}8100000a88b5{PAD}"), "no untagged frame at h1"
    if be == "afxdp":
        s.stop()
        assert re.search('AF_XDP port.*umem="shared', s.log)
    if be == "xdp":
        s.stop()
        assert "XDP fast path running" in s.log, "the fast path did not run"
        off = [l for l in s.log.splitlines() if "XDP fast path off" in l]
        assert not off, off


@pytest.mark.hosts(3)
def test_fast_failover_on_link_down(testbed, sluice, tmp_path):
    """fast-failover: link down on the watched port moves traffic to the
    next bucket."""
    tb = testbed
    cfg = tmp_path / "ff.toml"
    cfg.write_text("""[bridge]
groups = ["group_id=1,type=ff,bucket=watch_port:2,output:2,bucket=watch_port:3,output:3"]
flows = ["priority=10,in_port=1,actions=group:1"]
[[port]]
name = "p1"
[[port]]
name = "p2"
[[port]]
name = "p3"
""")
    s = sluice.start("--config", cfg)
    src = "020000000077"
    frame = f"ffffffffffff{src}88b5{PAD}"
    # While p2 is up, the first bucket (p2) carries the traffic.
    assert tb.frame_arrives("h1", "h2", src, frame)
    # Link down on p2: sluice sees it and fails over to p3.
    tb.x("sw", "ip", "link", "set", "p2", "down")
    wait_until(5, "sluice to see p2 down (LINK_DOWN)", lambda: s.port_desc(2, "p2", "LINK_DOWN"))
    assert tb.frame_arrives("h1", "h3", src, frame)


def test_local_port(testbed, sluice):
    """LOCAL port: the bridge's TAP device takes part in switching. It is
    named after the bridge, in the switch's namespace: given an address,
    a host reaches it."""
    tb = testbed
    sluice.start("--port", "p1", "--port", "p2")
    assert tb.x("sw", "ip", "link", "show", "br0", check=False).returncode == 0, "no br0 device"
    tb.x("sw", "ip", "addr", "add", f"{tb.ip(254)}/24", "dev", "br0")
    assert tb.ping_ok("h1", tb.ip(254))


@pytest.mark.hosts(4)
def test_two_bridges(testbed, sluice, tmp_path):
    """two bridges in one daemon, each switching its own ports only."""
    tb = testbed
    cfg = tmp_path / "two.toml"
    cfg.write_text("""[[bridges]]
name = "bra"
datapath_id = "0xa"
ports = [{ name = "p1" }, { name = "p2" }]

[[bridges]]
name = "brb"
datapath_id = "0xb"
ports = [{ name = "p3" }, { name = "p4" }]
""")
    sluice.start("--config", cfg)
    assert tb.ping_ok("h1", tb.ip(2))
    assert tb.ping_ok("h3", tb.ip(4))
    # The bridges share nothing: h1 cannot reach h3.
    assert not tb.ping_ok("h1", tb.ip(3)), "h1 reached h3 across bridges"


def test_nullx(testbed, sluice):
    """nullx: port 1 <-> port 2 with no pipeline."""
    tb = testbed
    s = sluice.start("--nullx", "--port", "p1", "--port", "p2")
    assert tb.ping_ok("h1", tb.ip(2))
    assert "nullx mode" in s.log


def test_nullx_afxdp_to_afpacket(testbed, sluice, tmp_path):
    """nullx: AF_XDP port 1 <-> AF_PACKET port 2, 20 000 frames. Every frame
    is copied across, and each chunk must go back to the UMEM (a leak stops
    receive after a few thousand frames)."""
    tb = testbed
    cfg = tmp_path / "nullx.toml"
    cfg.write_text('[bridge]\nflows = [\n]\n[[port]]\nname = "p1"\nofport = 1\nbackend = "afxdp"\n'
                   '[[port]]\nname = "p2"\nofport = 2\n')
    s = sluice.start("--nullx", "--config", cfg, "--no-local")
    recv = tmp_path / "recv.json"
    rp = tb.bg("h2", "python3", SCRIPTS / "seqtraffic.py", "recv", "eth0", "--me", "02:00:00:00:00:02",
               "--secs", "5", "--late-ms", "1000", stdout=recv)
    tb.listening(rp, "h2's receiver")
    tb.x("h1", "python3", SCRIPTS / "seqtraffic.py", "send", "eth0", "--src", "02:00:00:00:00:01",
         "--dst", "02:00:00:00:00:02", "--rate", "5000", "--secs", "4", timeout=60)
    rp.wait(30)
    got = recv.read_text()
    print(f"received: {got[:200]}")
    assert json.loads(got)["received"] > 19000
    assert "AF_XDP port" in s.log, "not AF_XDP"


def test_malformed_frames_through_a_bridge(testbed, sluice, tmp_path):
    """malformed frames through a bridge: forwarded as sent, switching goes
    on. Malformed frames from h1 (broadcast: flooded by the learning
    switch) reach h2 as they were sent."""
    tb = testbed
    s = sluice.start("--port", "p1", "--port", "p2", "--no-local")
    got = tmp_path / "got.json"
    w = tb.bg("h2", "python3", SCRIPTS / "malformed.py", "expect", "eth0", "3", stdout=got)
    tb.listening(w, "h2's frame listener")
    tb.x("h1", "python3", SCRIPTS / "malformed.py", "send", "eth0")
    w.wait(15)
    print(f"arrived: {got.read_text()}")
    arrived = json.loads(got.read_text())
    assert len(arrived) == 14 and all(arrived.values()), arrived
    assert tb.ping_ok("h1", tb.ip(2)), "no ping after the malformed frames"
    s.stop()
    assert not re.search("panicked|ERROR", s.log), "error in the log"


def seq_recv(tb, out, secs, late_ms):
    """seqtraffic's receiver in h2 for secs (frames over late_ms counted
    late), listening on return."""
    rp = tb.bg("h2", "python3", SCRIPTS / "seqtraffic.py", "recv", "eth0", "--me", "02:00:00:00:00:02",
               "--secs", secs, "--late-ms", late_ms, stdout=out)
    tb.listening(rp, "the receiver on h2")
    return rp


def seq_send(tb, out, rate, secs):
    """seqtraffic's sender in h1 at rate frames/s for secs, in the background."""
    return tb.bg("h1", "python3", SCRIPTS / "seqtraffic.py", "send", "eth0", "--src", "02:00:00:00:00:01",
                 "--dst", "02:00:00:00:00:02", "--rate", rate, "--secs", secs, stdout=out)


# Every back end that sends through a link: user space on AF_PACKET
# (rings, mmsg) and AF_XDP (native and generic program), and the XDP fast
# path (native and generic), whose frames never leave the kernel.
LINK_FLAP_ALL = "afpacket afpacket-mmsg afxdp afxdp-generic xdp xdp-generic"


@pytest.mark.parametrize("be", os.environ.get("LINK_FLAP_BACKENDS", LINK_FLAP_ALL).split())
def test_link_flap_drops_never_delays(testbed, sluice, tmp_path, be):
    """link flaps (BE, 20 under traffic): frames that cannot be sent are
    dropped and counted, none delivered late."""
    tb = testbed
    cfg = two_port_config(tmp_path, "priority=10,in_port=1,actions=output:2", "priority=10,in_port=2,actions=output:1",
                          backend=be)
    # A native redirect into a veth needs GRO at its peer (test_xdp.py).
    if be == "xdp":
        tb.gro_on(2)
    s = sluice.start("--config", cfg, "--no-local")
    if be.startswith("xdp"):
        # The rules compiled and attached: the frames stay in the kernel.
        wait_until(10, "the XDP fast path to run", lambda: "XDP fast path running" in s.log)
    recv, sent = tmp_path / "recv.json", tmp_path / "sent.json"
    rp = seq_recv(tb, recv, 13.5, 100)
    # 5 000 frames/s from h1 to h2 for 12 s while p2 goes down for 0.2 s
    # and up again 20 times, twice of three set down on the switch (the
    # kernel then refuses to read an AF_XDP TX ring: what is on it is
    # purged), once by its peer losing the carrier (the kernel drops what it
    # reads): frames the switch could not send while p2 was down must be
    # dropped and counted, never sent when it comes back. The sleeps are
    # the scenario's: the flaps' rhythm.
    sp = seq_send(tb, sent, 5000, 12)
    time.sleep(0.5)
    for i in range(1, 21):
        where, dev = ("h2", "eth0") if i % 3 == 0 else ("sw", "p2")
        tb.x(where, "ip", "link", "set", dev, "down")
        time.sleep(0.2)  # the link stays down that long
        tb.x(where, "ip", "link", "set", dev, "up")
        time.sleep(0.3)  # and up that long, under traffic
    sp.wait(60)
    rp.wait(60)
    s.stop()
    print(f"sent: {sent.read_text()}")
    print(f"received: {recv.read_text()[:300]}")
    # The XDP fast path may reorder at a program swap (every link change
    # publishes a new snapshot: until the new program runs, packets go up to
    # user space, and one there can be overtaken by the next that the new
    # program forwards in the kernel): reported, at most three a flap (seen
    # on 2026-11-27 at xdp-generic: 2, 22 and 24 in runs of 20 flaps;
    # docs/RELIABILITY.md).
    r = json.loads(recv.read_text())
    st = r["streams"].get("0/0", {})
    reorder_ok = 60 if be.startswith("xdp") else 0
    if r["late_count"]:
        print(f"{r['late_count']} frames arrived late, up to {r['max_delay_ms']} ms after they were sent")
    if r["reordered"]:
        print(f"{r['reordered']} frames reordered (at most {reorder_ok} allowed)")
    assert r["late_count"] == 0 and r["misdelivered"] == 0 and st.get("count", 0) > 20000 \
        and r["duplicates"] == 0 and r["reordered"] <= reorder_ok, r
    if be.startswith("xdp"):
        # In the kernel a redirect to a link that is down fails there and
        # then: nothing is kept to count.
        assert "XDP fast path running" in s.log, "the fast path did not run"
    else:
        # Every frame received on p1 is accounted for, once: sent on p2,
        # dropped by p2 (not taken while down, refused by the kernel, or
        # purged from an AF_XDP ring) or dropped by the pipeline (p2 seen
        # down).
        rx, tx, drop = s.port_counter(1, 3), s.port_counter(2, 5), s.port_counter(2, 7)
        m = re.search(r"^pipeline: dropped ([0-9]*)", s.log, re.M)
        pdrop = int(m.group(1)) if m else 0
        print(f"p1 rx {rx} = p2 tx {tx} + p2 tx_drop {drop} + pipeline dropped {pdrop}")
        assert rx is not None and int(rx) == int(tx) + int(drop) + pdrop
        assert int(drop) + pdrop > 0
    if be.startswith("afxdp"):
        assert "AF_XDP port" in s.log and "falling back" not in s.log, "not AF_XDP"


def test_sigkill_and_restart(testbed, sluice, tmp_path, bins):
    """SIGKILL and restart (afpacket, afxdp): ports, LOCAL and management
    socket come back; standalone forwards, secure does not."""
    tb = testbed
    rd = tmp_path / "rd"
    rd.mkdir()
    for be in ("afpacket", "afxdp"):
        s = sluice.start("--port", "p1", "--port", "p2", "--backend", be, "--run-dir", rd)
        assert tb.ping_ok("h1", tb.ip(2)), f"{be}: no ping at first"
        # Killed with no chance to clean up: its sockets, TAP device and
        # XDP program go with the process; the management socket stays.
        s.stop(sig=signal.SIGKILL)
        # The kernel releases a dead process's XDP program and sockets
        # asynchronously; a restart before that falls back to AF_PACKET.
        wait_until(3, "the kernel to release the killed sluice's XDP programs",
                   lambda: " xdp" not in tb.x("sw", "ip", "link", "show").stdout)
        s = sluice.start("--port", "p1", "--port", "p2", "--backend", be, "--run-dir", rd)
        assert tb.ping_ok("h1", tb.ip(2)), f"{be}: no ping after the restart"
        assert "p2" in s.ctl("show", "br0", check=False).stdout, f"{be}: no management socket"
        assert tb.x("sw", "ip", "link", "show", "br0", check=False).returncode == 0, f"{be}: no LOCAL port"
        if be == "afxdp":
            assert "AF_XDP port" in s.log and "falling back" not in s.log, "not AF_XDP after the restart"
        s.stop()
        assert not re.search("panicked|ERROR", s.log), f"{be}: error in the log"
    # Secure mode holds across a SIGKILL too: no controller, no flows,
    # nothing forwarded before or after.
    tb.x("h1", "ip", "neigh", "flush", "all")
    s = sluice.start("--port", "p1", "--port", "p2", "--fail-mode", "secure", "--run-dir", rd)
    s.stop(sig=signal.SIGKILL)
    sluice.start("--port", "p1", "--port", "p2", "--fail-mode", "secure", "--run-dir", rd)
    assert not tb.ping_ok("h1", tb.ip(2)), "secure mode forwarded after the restart"


def test_local_port_down_drops_never_delays(testbed, sluice, tmp_path):
    """LOCAL port (TAP) down: frames dropped and counted, none delivered
    late. Every frame from h1 goes to LOCAL (the bridge's TAP device)."""
    tb = testbed
    cfg = two_port_config(tmp_path, "priority=10,in_port=1,actions=LOCAL")
    s = sluice.start("--config", cfg)
    recv = tmp_path / "recv.json"
    rp = tb.bg("sw", "python3", SCRIPTS / "seqtraffic.py", "recv", "br0", "--me", "02:00:00:00:00:02",
               "--secs", "4.5", "--late-ms", "100", stdout=recv)
    tb.listening(rp, "the receiver on LOCAL")
    sp = seq_send(tb, None, 2000, 3.5)
    # The TAP device down for half a second: writes fail (EIO) and the
    # frames are dropped and counted; nothing waits to go out later. (The
    # sleeps are the scenario's.)
    time.sleep(1)
    tb.x("sw", "ip", "link", "set", "br0", "down")
    time.sleep(0.5)
    tb.x("sw", "ip", "link", "set", "br0", "up")
    sp.wait(30)
    rp.wait(30)
    s.stop()
    print(f"received on LOCAL: {recv.read_text()[:200]}")
    drop = s.port_counter("local", 7)
    print(f"LOCAL tx_drop: {drop}")
    r = json.loads(recv.read_text())
    assert r["late_count"] == 0 and r["received"] > 4000, r
    assert drop is not None and int(drop) > 0


def test_refused_frame_does_not_stall_the_port(testbed, sluice, tmp_path):
    """a frame the kernel refuses (longer than the MTU) is dropped; the port
    does not stall. Frames from 02:00:00:00:00:77 get an MPLS label: a
    full-size one becomes 4 bytes longer than p2's MTU allows, and the
    kernel refuses it on the TX ring. The frames after it must go on at
    once."""
    tb = testbed
    cfg = two_port_config(tmp_path, "priority=20,in_port=1,dl_src=02:00:00:00:00:77,actions=push_mpls:0x8847,output:2",
                          "priority=10,in_port=1,actions=output:2")
    sluice.start("--config", cfg, "--no-local")
    recv = tmp_path / "recv.json"
    rp = seq_recv(tb, recv, 5, 50)
    big = "ffffffffffff02000000007788b5" + "00" * 1500
    tb.x("h1", "python3", SCRIPTS / "rawframe.py", "send", "eth0", big, "3")
    tb.x("h1", "python3", SCRIPTS / "seqtraffic.py", "send", "eth0", "--src", "02:00:00:00:00:01",
         "--dst", "02:00:00:00:00:02", "--rate", "1000", "--secs", "1.5")
    rp.wait(30)
    print(f"received: {recv.read_text()[:200]}")
    r = json.loads(recv.read_text())
    st = r["streams"].get("0/0", {})
    assert r["late_count"] == 0 and st.get("count", 0) >= 1490 and st.get("lost", 1) == 0, r


def test_soak_short(bins):
    """soak, 60 s: traffic between three hosts while flows churn at ~10 000
    mods/s; none misdelivered, RSS flat, no error (scripts/soak.sh makes
    and removes its own namespaces)."""
    p = subprocess.run(["scripts/soak.sh", "--seconds", "60"], capture_output=True, text=True, timeout=400,
                       env={**os.environ, "SLUICE_BIN_DIR": str(bins)})
    print(p.stdout + p.stderr)
    assert p.returncode == 0, "scripts/soak.sh failed (above)"
