"""Ports at run time: added, deleted, re-created, their VLAN settings."""
import re
import time

import pytest

from lab import PAD, connected_to, run, wait_until


def rx_frames(tb, h):
    """Frames the host's eth0 has received (what the switch sent to it)."""
    return int(tb.x(h, "cat", "/sys/class/net/eth0/statistics/rx_packets").stdout)


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@pytest.mark.hosts(3)
def test_add_and_del_port_at_run_time(testbed, sluice, tmp_path):
    """add-port/del-port at run time under traffic; port numbers stable."""
    tb = testbed
    rd = tmp_path / "rd"
    rd.mkdir()
    s = sluice.start("--port", "p1", "--port", "p2", "--run-dir", rd)
    C = s.ctl
    assert tb.ping_ok("h1", tb.ip(2)), "no ping h1 -> h2"
    mon = tmp_path / "monitor.out"
    with open(mon, "w") as mf:
        m = tb.procs.start([s.bins / "sluice-ctl", "--run-dir", rd, "monitor", "br0", "--count", "2", "--duration", "10"],
                           stdout=mf)
    wait_until(5, "sluice to accept sluice-ctl monitor's connection", lambda: connected_to(m.pid, s.pid))
    # Added while h1 broadcasts a frame every 20 ms: they reach h3 within a
    # second of add-port returning.
    before = rx_frames(tb, "h2")
    pinger = tb.bg("h1", "ping", "-b", "-i", "0.02", "-w", "8", "-q", tb.ip(255))
    wait_until(5, "h1's broadcasts to reach h2", lambda: rx_frames(tb, "h2") >= before + 2)
    before = rx_frames(tb, "h3")
    p = C("add-port", "br0", "p3", check=False)
    t0 = time.monotonic()
    out = p.stdout + p.stderr
    assert p.returncode == 0 and "added p3 as port 3" in out, f"add-port said: {out}"
    while rx_frames(tb, "h3") == before and time.monotonic() - t0 < 3:
        time.sleep(0.01)
    ms = (time.monotonic() - t0) * 1000
    print(f"first frame on the added port {ms:.0f} ms after add-port")
    assert ms < 1000, "took a second or more"
    assert tb.ping_ok("h1", tb.ip(3)), "no ping h1 -> h3 after add-port"
    assert " 3(p3)" in C("dump-ports-desc", "br0").stdout, "dump-ports-desc lacks p3"
    assert " 3(p3)" in C("show", "br0").stdout, "show lacks p3"
    # Refusals name the problem.
    for args, want in [(("p3",), "p3 is already port 3"),
                       (("nosuch9",), "add-port nosuch9: nosuch9: no such interface"),
                       (("nosuch8", "ofport=2"), "ofport=2: the number is taken")]:
        p = C("add-port", "br0", *args, check=False)
        assert p.returncode != 0 and want in p.stdout + p.stderr, f"add-port {args} said: {p.stdout}{p.stderr}"
    # Deleted under traffic: nothing reaches h3 from then on.
    assert "deleted port 3" in C("del-port", "br0", "p3").stdout, "del-port"
    # Frames already in flight land first (grace), then 1.5 s in which none
    # may come (the scenario's times).
    time.sleep(0.3)
    before = rx_frames(tb, "h3")
    time.sleep(1.5)
    after = rx_frames(tb, "h3")
    assert before == after, f"h3 got {after - before} frames after del-port"
    tb.procs.stop(pinger)
    m.wait(15)
    text = mon.read_text()
    assert "ADD" in text and "DELETE" in text, f"monitor saw:\n{text}"
    assert "(p3)" not in C("dump-ports-desc", "br0").stdout, "p3 still described"
    # The number is stable: p3 comes back as 3, also after a restart with
    # another port list (RUN_DIR/br0.ports).
    assert "as port 3" in C("add-port", "br0", "p3").stdout, "re-added p3 is not port 3"
    s.stop()
    s = sluice.start("--port", "p3", "--port", "p1", "--run-dir", rd)
    C = s.ctl
    out = C("dump-ports-desc", "br0").stdout
    assert " 3(p3)" in out and " 1(p1)" in out, f"after restart: {out}"
    assert tb.ping_ok("h1", tb.ip(3)), "no ping h1 -> h3 after restart"
    # The MAC table, the way Open vSwitch shows it; trace follows NORMAL to
    # the learned port.
    mac3 = tb.mac("h3")
    out = C("fdb-show", "br0").stdout
    assert re.search(rf"^ +3 +0  {mac3} ", out, re.M), f"fdb-show: {out}"
    out = C("trace", "br0", "1", f"dl_src=02:00:00:00:00:aa,dl_dst={mac3},dl_type=0x88b5").stdout
    assert f"NORMAL: dst {mac3} learned on port 3" in out and "Datapath actions: 3" in out.splitlines(), f"trace: {out}"
    C("fdb-flush", "br0")
    out = C("fdb-show", "br0").stdout
    assert len(out.splitlines()) == 1, f"fdb-flush left: {out}"
    # The log level changes at run time.
    assert "log filter: debug" in C("vlog", "br0", "debug").stdout, "vlog debug"
    p = C("vlog", "br0", "x=[", check=False)
    assert p.returncode != 0 and "vlog" in p.stdout + p.stderr, f"vlog refusal: {p.stdout}{p.stderr}"


@pytest.mark.hosts(4)
def test_vlan_access_and_trunk_ports(need, testbed, sluice, tmp_path):
    """VLANs: access ports, a trunk, a tag changed with ovs-vsctl. NORMAL
    and the ports' VLAN settings, configured through Open vSwitch's
    database as ovs-vsctl writes it: p1 and p2 access ports of VLAN 10, p3
    of VLAN 20, p4 a trunk of 10 and 20."""
    need("ovs-vsctl", "openvswitch-common")
    tb = testbed
    rd = tmp_path / "rd"
    rd.mkdir()
    src, src4 = "0200000000a1", "0200000000a4"
    s = sluice.start("--ovsdb", f"punix:{rd}/db.sock", "--ovsdb-file", rd / "conf.db", "--run-dir", rd)

    def vs(*args, check=True):
        return run(["ovs-vsctl", "--timeout=10", f"--db=unix:{rd}/db.sock", *args], check=check)

    # ovs-vsctl returns once sluice has applied the change (cur_cfg).
    vs("add-br", "br0",
       "--", "add-port", "br0", "p1", "tag=10", "--", "set", "interface", "p1", "ofport_request=1",
       "--", "add-port", "br0", "p2", "tag=10", "--", "set", "interface", "p2", "ofport_request=2",
       "--", "add-port", "br0", "p3", "tag=20", "--", "set", "interface", "p3", "ofport_request=3",
       "--", "add-port", "br0", "p4", "trunks=10,20", "--", "set", "interface", "p4", "ofport_request=4")
    wait_until(10, "br0's management socket", lambda: (rd / "br0.mgmt").is_socket())
    # The two access ports of VLAN 10 reach each other; VLAN 20 does not
    # reach them.
    assert tb.ping_ok("h1", tb.ip(2)), "no ping h1 -> h2 (both VLAN 10)"
    assert not tb.ping_ok("h3", tb.ip(1)), "h3 (VLAN 20) reached h1 (VLAN 10)"
    # The trunk gets VLAN 10's broadcasts tagged; its VLAN 20 frames reach
    # h3 untagged.
    assert tb.frame_arrives("h1", "h4", f"{src}8100000a88b5", f"ffffffffffff{src}88b5{PAD}"), \
        "the trunk did not get h1's broadcast tagged VID 10"
    assert tb.frame_arrives("h4", "h3", f"{src4}88b5", f"ffffffffffff{src4}8100001488b5{PAD}"), \
        "h3 did not get the trunk's VLAN 20 frame untagged"
    # trace says it: the VLAN, the port left out, the tag pushed; and an
    # access port drops a tagged frame.
    out = s.ctl("trace", "br0", "1", "dl_src=02:00:00:00:00:aa,dl_dst=ff:ff:ff:ff:ff:ff,dl_type=0x88b5").stdout
    assert re.search("NORMAL: in_port 1 is an access port of VLAN 10: the frame is in VLAN 10;.*not to port 3", out) \
        and re.search(r"^Datapath actions: 2,push_vlan\(vid=10,pcp=0\),4", out, re.M), f"trace: {out}"
    out = s.ctl("trace", "br0", "1", "dl_src=02:00:00:00:00:aa,dl_dst=ff:ff:ff:ff:ff:ff,dl_vlan=10,dl_type=0x88b5").stdout
    assert "a VLAN 10 tagged frame on an access port of VLAN 10: dropped" in out \
        and re.search("^Datapath actions: drop", out, re.M), f"trace of a tagged frame: {out}"
    # p3 moves to VLAN 10 in place (same port number, no re-add): h3 now
    # reaches h1.
    vs("set", "port", "p3", "tag=10")
    assert tb.ping_ok("h3", tb.ip(1)), "no ping h3 -> h1 after tag=10"
    ofport = vs("get", "interface", "p3", "ofport").stdout.strip()
    assert ofport == "3", f"p3's ofport: {ofport}"
    assert "port VLAN settings changed" in s.log, "no in-place change logged"
    assert "port deleted" not in s.log, "a port was deleted"
    # A setting sluice refuses is the Interface's error.
    vs("set", "port", "p2", "vlan_mode=dot1q-tunnel", check=False)
    wait_until(5, "p2's error", lambda: "dot1q-tunnel" in vs("get", "interface", "p2", "error", check=False).stdout)


def test_recreated_interface_is_attached_again(testbed, sluice, tmp_path):
    """an interface deleted and re-created under traffic is attached again;
    one missing at start is attached when it comes."""
    tb = testbed
    s = sluice.start("--port", "p1", "--port", "p2", "--port", "late9")
    assert tb.ping_ok("h1", tb.ip(2)), "no ping before"
    # A port whose interface did not exist at start is attached when it
    # appears (a VM's tap made after the switch started).
    assert s.port_desc(3, "late9", "LINK_DOWN"), "late9 not down"
    tb.x("sw", "ip", "link", "add", "late9", "type", "veth", "peer", "name", "late9p")
    tb.x("sw", "ip", "link", "set", "late9p", "up")
    tb.x("sw", "ip", "link", "set", "late9", "up")
    wait_until(3, "late9 to be attached (LIVE)", lambda: s.port_desc(3, "late9", "LIVE"))
    tb.bg("h1", "ping", "-i", "0.1", "-w", "12", "-q", tb.ip(2))
    # The VM goes away: its interface is deleted under traffic.
    mac = tb.mac("h2")
    tb.x("sw", "ip", "link", "del", "p2")
    wait_until(5, "sluice to log p2 detached", lambda: "port detached" in s.log)
    assert s.port_desc(2, "p2", "LINK_DOWN"), "p2 not down"
    # ... and the worker does not spin on the dead socket (2 s measured).
    c0 = cpu_ticks(s.pid)
    time.sleep(2)
    c1 = cpu_ticks(s.pid)
    print(f"CPU while the interface is gone: {c1 - c0} ticks in 2 s")
    assert c1 - c0 < 60, "spinning"
    # It comes back under the same name (the VM with its MAC address):
    # attached again, same number.
    run(["ip", "link", "add", "p2", "netns", tb.ns("sw"), "type", "veth", "peer", "name", "eth0", "netns", tb.ns("h2")])
    tb.x("h2", "ip", "link", "set", "eth0", "address", mac)
    tb.x("h2", "ip", "addr", "add", f"{tb.ip(2)}/24", "dev", "eth0")
    tb.x("h2", "ip", "link", "set", "eth0", "up")
    tb.x("sw", "ip", "link", "set", "p2", "up")
    t0 = time.monotonic()
    ok = any(tb.x("h1", "ping", "-c", "1", "-W", "0.2", "-q", tb.ip(2), check=False).returncode == 0 for _ in range(30))
    assert ok, "no ping after re-creation"
    print(f"ping through the re-created interface after {(time.monotonic() - t0) * 1000:.0f} ms")
    assert "attached again" in s.log, "no re-attach logged"
    assert s.port_desc(2, "p2", "LIVE"), f"p2 after: {s.ctl('dump-ports-desc', 'br0').stdout}"
