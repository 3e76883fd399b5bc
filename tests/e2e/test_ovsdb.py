"""sluice's Open vSwitch database (sluice --ovsdb): Open vSwitch's own
clients, unchanged, drive the switch.

Three hosts, h1..h3 on p1..p3; sluice starts with no bridge and the database
alone configures it. Every change a client makes is checked three ways: in
the database (the switch's write-back: ofport, link_state, error,
datapath_id, is_connected, cur_cfg through the clients' own waiting), in the
switch (ovs-ofctl on the bridge's management socket) and by traffic (frames
reach a port added within a second of the client returning; pings through
NORMAL learning, fail_mode standalone)."""
import re
import socket
import subprocess
import time

import pytest

from lab import REPO, VENV_PY, lines_after, run, wait_until

pytestmark = pytest.mark.hosts(3)


class Db:
    """The database's clients for one test: d is sluice's run directory
    (the database file, its socket, the bridges' management sockets)."""

    def __init__(self, testbed, s):
        self.tb, self.s, self.d = testbed, s, s.run_dir

    def vsctl(self, *args, check=False):
        return run(["ovs-vsctl", f"--db=unix:{self.d}/db.sock", "--timeout=10", *args], check=check)

    def ok(self, *args):
        p = self.vsctl(*args)
        assert p.returncode == 0, f"ovs-vsctl {' '.join(args)}: {p.stdout}{p.stderr}"
        return p.stdout

    def vsctl_is(self, want, *args):
        p = self.vsctl(*args)
        got = (p.stdout + p.stderr).rstrip("\n")
        assert got == want, f"ovs-vsctl {' '.join(args)}: got {got!r}, wanted {want!r}"

    def ofctl_br0(self, cmd, *args, check=False):
        return run(["ovs-ofctl", "-O", "OpenFlow13", cmd, f"unix:{self.d}/br0.mgmt", *args], check=check)

    def ports_shown(self):
        return "\n".join(l for l in self.ofctl_br0("show").stdout.splitlines() if re.match(r"^ [0-9A-Z]+\(", l))

    def timed_add(self, what, cmd):
        """Runs cmd, a client that adds h3's port p3, while h1 broadcasts a
        marked frame every 5 ms (from before cmd starts); cmd must succeed
        and h3 see a frame within a second of cmd returning. Returns cmd's
        output."""
        tb, d = self.tb, self.d
        lis = tb.bg("h3", "python3", REPO / "tests/ovsdb/first_frame.py", "first", "eth0", "5", stdout=d / "first")
        tb.listening(lis, "h3's frame listener")
        snd = tb.bg("h1", "python3", REPO / "tests/ovsdb/first_frame.py", "send", "eth0", "8", stdout=d / "sent")
        # Sending before the client starts: what is timed is the switch.
        wait_until(5, "h1 to send its first marked frame", lambda: (d / "sent").stat().st_size > 0)
        t_start = time.time()
        p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=60)
        t_end = time.time()
        heard = lis.wait(10)
        tb.procs.stop(snd)
        out = p.stdout + p.stderr
        assert p.returncode == 0, f"{what} failed ({p.returncode}): {out}"
        assert heard == 0, f"no frame reached p3 within 5 s of {what}"
        t_first = float((d / "first").read_text())
        print(f"{what}: returned after {(t_end - t_start) * 1000:.0f} ms; first frame on p3 at {(t_first - t_start) * 1000:.0f} ms")
        assert t_first - t_end < 1, f"the first frame came {(t_first - t_end) * 1000:.0f} ms after {what} returned (1 s allowed)"
        return out


@pytest.fixture
def db(testbed, sluice, need, tmp_path):
    """sluice serving its database in the switch namespace, no bridge yet."""
    need("ovs-vsctl", "openvswitch-common")
    rd = tmp_path / "run"
    rd.mkdir()
    # An empty configuration file: /etc/sluice/sluice.toml (make install
    # puts one there) must not add bridges of its own.
    (rd / "empty.toml").write_text("")
    s = sluice.start("--config", rd / "empty.toml", "--ovsdb", f"punix:{rd}/db.sock",
                     "--ovsdb-file", rd / "conf.db", "--run-dir", rd)
    return Db(testbed, s)


def test_ovsdb_ovs_vsctl_monitor_and_ofctl(testbed, db):
    tb, d = testbed, db.d
    mon = d / "monitor.out"
    # ovsdb-client monitor, in the background for the whole test: the
    # Interface rows added and removed must show in what it prints.
    mproc = tb.bg("sw", "ovsdb-client", "monitor", f"unix:{d}/db.sock", "Open_vSwitch", "Interface", "name", "ofport", stdout=mon)

    # A bridge with a datapath id, its protocols and fail mode.
    db.ok("add-br", "br0", "--", "set", "bridge", "br0", "other-config:datapath-id=0000000000000042")
    db.vsctl_is("br0", "list-br")
    db.ok("br-exists", "br0")
    db.vsctl_is('"0000000000000042"', "get", "bridge", "br0", "datapath_id")
    db.ok("set", "bridge", "br0", "protocols=OpenFlow10,OpenFlow13")
    db.vsctl_is("[OpenFlow10, OpenFlow13]", "get", "bridge", "br0", "protocols")
    db.ok("set-fail-mode", "br0", "standalone")
    db.vsctl_is("standalone", "get-fail-mode", "br0")
    out = db.ofctl_br0("show").stdout
    assert "dpid:0000000000000042" in out, f"ovs-ofctl show: {out}"
    # The bridge's own interface, written back as Open vSwitch does.
    db.vsctl_is("65534", "get", "interface", "br0", "ofport")
    wait_until(5, "ovsdb-client monitor to show br0's Interface", lambda: " br0 " in mon.read_text())

    # Ports with the numbers asked for; the switch writes back what runs.
    db.ok("add-port", "br0", "p1", "--", "set", "interface", "p1", "ofport_request=5")
    db.ok("add-port", "br0", "p2", "--", "set", "interface", "p2", "ofport_request=6")
    db.vsctl_is("5", "get", "interface", "p1", "ofport")
    db.vsctl_is("6", "get", "interface", "p2", "ofport")
    db.vsctl_is("up", "get", "interface", "p1", "link_state")
    db.vsctl_is("up", "get", "interface", "p1", "admin_state")
    db.vsctl_is("[]", "get", "interface", "p1", "error")
    db.vsctl_is("1500", "get", "interface", "p1", "mtu")
    mac = tb.mac("sw", "p1")
    db.vsctl_is(f'"{mac}"', "get", "interface", "p1", "mac_in_use")
    db.vsctl_is("p1\np2", "list-ports", "br0")
    db.vsctl_is("br0", "port-to-br", "p2")
    out = db.ports_shown()
    assert re.search(f"^ 5\\(p1\\): addr:{mac}", out, re.M) and re.search(r"^ 6\(p2\):", out, re.M), f"ovs-ofctl show: {out}"
    assert tb.ping_ok("h1", tb.ip(2)), "no ping h1 -> h2"

    # list, find, get.
    out = db.ok("list", "interface", "p1")
    assert re.search(r"^ofport_request +: 5$", out, re.M), f"list interface p1: {out}"
    db.vsctl_is("p2", "--bare", "--columns=name", "find", "interface", "ofport=6")
    out = db.ok("--bare", "--columns=name", "find", "interface", "link_state=up", 'type=""')
    assert sorted(l for l in out.splitlines() if l) == ["p1", "p2"], f'find interface link_state=up type="": {out}'
    db.vsctl_is('"0000000000000042"', "get", "bridge", "br0", "other-config:datapath-id")

    # link_state follows the peer: wait-until sees it go down and up.
    tb.x("h2", "ip", "link", "set", "eth0", "down")
    p = db.vsctl("--timeout=5", "wait-until", "interface", "p2", "link_state=down")
    assert p.returncode == 0, f"p2 never down: {db.vsctl('get', 'interface', 'p2', 'link_state').stdout}"
    out = db.ofctl_br0("dump-ports-desc").stdout
    assert "LINK_DOWN" in lines_after(out, " 6(p2)", 2), f"ovs-ofctl: p2 not LINK_DOWN: {out}"
    tb.x("h2", "ip", "link", "set", "eth0", "up")
    assert db.vsctl("--timeout=5", "wait-until", "interface", "p2", "link_state=up").returncode == 0, "p2 never up again"

    # A port added while h1 broadcasts: frames reach it within a second.
    db.timed_add("ovs-vsctl add-port p3", ["ovs-vsctl", f"--db=unix:{d}/db.sock", "--timeout=10",
                                           "add-port", "br0", "p3", "--", "set", "interface", "p3", "ofport_request=7"])
    db.vsctl_is("7", "get", "interface", "p3", "ofport")
    assert re.search(r"^ 7\(p3\):", db.ports_shown(), re.M), f"ovs-ofctl show lacks 7(p3): {db.ports_shown()}"
    assert tb.ping_ok("h1", tb.ip(3)), "no ping h1 -> h3"
    db.ok("del-port", "br0", "p3")
    assert "(p3)" not in db.ports_shown(), "ovs-ofctl show still lists p3"
    p = db.vsctl("get", "interface", "p3", "ofport")
    assert p.returncode != 0, f"p3's Interface row is still there: {p.stdout}"
    assert tb.no_ping("h1", tb.ip(3)), "h3 still answers after del-port"

    # --id=@ references in one transaction: a QoS with a queue on p1
    # (OpenFlow shows the queue), a passive controller (a listener).
    out = db.ok("--", "set", "port", "p1", "qos=@q", "--", "--id=@q", "create", "qos", "type=linux-htb", "queues:1=@q1",
                "--", "--id=@q1", "create", "queue", "other-config:max-rate=10000000")
    assert len(re.findall(r"^[0-9a-f-]{36}$", out, re.M)) == 2, f"QoS: two UUIDs expected: {out}"
    out = db.ofctl_br0("queue-get-config", "5").stdout
    assert "queue 1:" in out, f"queue-get-config 5: {out}"
    db.ok("--", "--id=@c", "create", "controller", 'target="ptcp:6654:127.0.0.1"', "--", "set", "bridge", "br0", "controller=@c")
    db.vsctl_is("ptcp:6654:127.0.0.1", "get-controller", "br0")
    wait_until(5, "the bridge to listen on its ptcp controller target", lambda: tb.tcp_listening("sw", 6654))
    out = tb.x("sw", "ovs-ofctl", "-O", "OpenFlow13", "show", "tcp:127.0.0.1:6654", check=False).stdout
    assert "dpid:0000000000000042" in out, f"ovs-ofctl over the ptcp target: {out}"

    # set-controller to an active target: the switch connects, and writes
    # is_connected and the role the controller asked for.
    cproc = tb.bg("sw", "python3", REPO / "tests/ovsdb/controller.py", "6699", "20", stdout=d / "controller.out")
    wait_until(5, "the test controller to listen", lambda: tb.tcp_listening("sw", 6699))
    db.ok("set-controller", "br0", "tcp:127.0.0.1:6699")
    db.vsctl_is("tcp:127.0.0.1:6699", "get-controller", "br0")
    cuuid = db.ok("--bare", "--columns=_uuid", "find", "controller", 'target="tcp:127.0.0.1:6699"').strip()
    p = db.vsctl("--timeout=5", "wait-until", "controller", cuuid, "is_connected=true", "role=master")
    assert p.returncode == 0, f"controller: {db.vsctl('--columns=target,is_connected,role', 'list', 'controller').stdout}"
    seen = (d / "controller.out").read_text()
    assert "role master" in seen, f"controller saw: {seen}"
    db.ok("del-controller", "br0")
    db.vsctl_is("", "get-controller", "br0")
    # The Controller rows are gone with their references.
    db.vsctl_is("", "list", "controller")
    tb.procs.stop(cproc)

    # A VXLAN interface with options; one whose options do not hold gets
    # ofport -1 and its error, and ovs-vsctl says so.
    db.ok("add-port", "br0", "vx0", "--", "set", "interface", "vx0", "type=vxlan", f"options:remote_ip={tb.ip(250)}",
          "options:key=5000", "options:dst_port=4789", "ofport_request=10")
    db.vsctl_is("10", "get", "interface", "vx0", "ofport")
    db.vsctl_is("[]", "get", "interface", "vx0", "error")
    db.vsctl_is('"5000"', "get", "interface", "vx0", "options:key")
    assert re.search(r"^ 10\(vx0\):", db.ports_shown(), re.M), "ovs-ofctl show lacks 10(vx0)"
    p = db.vsctl("add-port", "br0", "vx9", "--", "set", "interface", "vx9", "type=vxlan", "options:key=abc")
    assert "Error detected while setting up 'vx9'" in p.stdout + p.stderr, f"add-port vx9 said: {p.stdout}{p.stderr}"
    db.vsctl_is("-1", "get", "interface", "vx9", "ofport")
    out = db.vsctl("get", "interface", "vx9", "error").stdout
    assert "abc" in out, f"vx9 error: {out}"
    db.ok("del-port", "vx9", "--", "del-port", "br0", "vx0")
    assert "(vx" not in db.ports_shown(), "ovs-ofctl still lists a vx port"

    # fail_mode secure rebuilds the bridge: no flow, no traffic, until a
    # flow from ovs-ofctl; the port numbers stay.
    db.ok("set-fail-mode", "br0", "secure")
    db.vsctl_is("secure", "get-fail-mode", "br0")
    assert tb.no_ping("h1", tb.ip(2)), "secure bridge without flows forwards"
    assert db.ofctl_br0("add-flow", "priority=0,actions=NORMAL").returncode == 0, "ovs-ofctl add-flow"
    out = db.ofctl_br0("dump-flows").stdout
    assert "actions=NORMAL" in out, f"dump-flows: {out}"
    assert tb.ping_ok("h1", tb.ip(2)), "no ping h1 -> h2 with a NORMAL flow"
    db.vsctl_is("5", "get", "interface", "p1", "ofport")

    # del-br: the bridge, its rows and its management socket go.
    db.ok("del-br", "br0")
    db.vsctl_is("", "list-br")
    db.vsctl_is("", "--bare", "--columns=name", "list", "interface")
    assert db.ofctl_br0("show").returncode != 0, "br0's management socket still answers"
    assert tb.no_ping("h1", tb.ip(2)), "traffic after del-br"
    # QoS and Queue are root tables: they outlive the bridge, as in Open
    # vSwitch, until destroyed.
    db.vsctl_is("linux-htb", "--bare", "--columns=type", "list", "qos")
    db.ok("--", "--all", "destroy", "qos", "--", "--all", "destroy", "queue")
    db.vsctl_is("", "list", "queue")

    # What ovsdb-client monitor saw: p3 inserted, given its number,
    # deleted; everything deleted with the bridge.
    wait_until(5, "ovsdb-client monitor to show br0's deletion", lambda: re.search(r"delete +br0 +65534", mon.read_text()))
    tb.procs.stop(mproc)
    m = mon.read_text()
    for pat in [r"insert +p3 ", r"new +p3 +7$", r"delete +p3 +7$", r"delete +p1 +5$"]:
        assert re.search(pat, m, re.M), f"ovsdb-client monitor lacks /{pat}/:\n{m}"


def test_ovsdb_python_idl_and_ovsdbapp(testbed, db):
    """The Python IDL (PyPI and Debian) and ovsdbapp add and remove ports."""
    tb, d = testbed, db.d
    url = f"unix:{d}/db.sock"
    clients = REPO / "tests/ovsdb/clients.py"
    db.ok("add-br", "br0", "--", "add-port", "br0", "p1", "--", "set", "interface", "p1", "ofport_request=5")
    assert VENV_PY.exists(), f"{VENV_PY} missing (scripts/setup.sh makes it)"
    py = VENV_PY

    # The Python IDL (PyPI's ovs, pinned in tests/ovsdb/requirements.txt).
    out = db.timed_add("the Python IDL's insert of p3", [py, clients, "idl-add-port", url, "br0", "p3", "8"])
    assert "p3: ofport=8 link_state=up" in out.splitlines(), f"IDL: {out}"
    assert re.search(r"^ 8\(p3\):", db.ports_shown(), re.M), f"ovs-ofctl show lacks 8(p3): {db.ports_shown()}"
    assert tb.ping_ok("h1", tb.ip(3)), "no ping h1 -> h3 (IDL)"
    run([py, clients, "idl-del-port", url, "br0", "p3"])
    assert "(p3)" not in db.ports_shown(), "ovs-ofctl show still lists p3 (IDL)"
    assert tb.no_ping("h1", tb.ip(3)), "h3 still answers after the IDL's delete"

    # Debian's python3-openvswitch, the same transactions (for h2).
    run(["/usr/bin/python3", clients, "idl-add-port", url, "br0", "p2", "12"])
    assert re.search(r"^ 12\(p2\):", db.ports_shown(), re.M), f"ovs-ofctl show lacks 12(p2): {db.ports_shown()}"
    assert tb.ping_ok("h1", tb.ip(2)), "no ping h1 -> h2 (Debian IDL)"
    run(["/usr/bin/python3", clients, "idl-del-port", url, "br0", "p2"])
    assert "(p2)" not in db.ports_shown(), "ovs-ofctl show still lists p2"

    # ovsdbapp, as Neutron's agent adds and removes a VM's port.
    out = db.timed_add("ovsdbapp's add_port p3", [py, clients, "ovsdbapp-add-port", url, "br0", "p3", "9"])
    assert "p3: ofport=9 link_state=up ports=p1,p3" in out.splitlines(), f"ovsdbapp: {out}"
    assert re.search(r"^ 9\(p3\):", db.ports_shown(), re.M), f"ovs-ofctl show lacks 9(p3): {db.ports_shown()}"
    assert tb.ping_ok("h1", tb.ip(3)), "no ping h1 -> h3 (ovsdbapp)"
    db.vsctl_is("9", "get", "interface", "p3", "ofport")
    run([py, clients, "ovsdbapp-del-port", url, "br0", "p3"])
    assert "(p3)" not in db.ports_shown(), "ovs-ofctl show still lists p3 (ovsdbapp)"
    assert tb.no_ping("h1", tb.ip(3)), "h3 still answers after del_port"
    db.vsctl_is("p1", "list-ports", "br0")


def _held(sock, i):
    """A connection to the database that has been answered once (so the
    server holds it) and then stays idle."""
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(10)
    c.connect(str(sock))
    c.sendall(b'{"id":%d,"method":"echo","params":[]}' % i)
    got = b""
    while b"}" not in got:
        b = c.recv(4096)
        assert b, f"idle connection {i} closed before its echo was answered"
        got += b
    return c


def _closed_by_server(c):
    c.setblocking(False)
    try:
        return c.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.hosts(1)
def test_ovsdb_connection_cap_never_locks_out_ovs_vsctl(testbed, sluice, need, tmp_path):
    """Issue 48: at the connection cap (16 here, --ovsdb-max-connections),
    held by idle connections and one live IDL client (ovsdb-client monitor),
    `ovs-vsctl show` is answered within its timeout: it takes the place of
    the connection idle longest; the monitoring client is never closed for
    it and still gets its updates."""
    need("ovs-vsctl", "openvswitch-common")
    need("ovsdb-client", "openvswitch-common")
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "empty.toml").write_text("")
    cap = 16
    s = sluice.start("--config", rd / "empty.toml", "--ovsdb", f"punix:{rd}/db.sock",
                     "--ovsdb-file", rd / "conf.db", "--run-dir", rd,
                     "--ovsdb-max-connections", cap)
    sock = rd / "db.sock"
    mon_out = rd / "monitor.out"
    with open(mon_out, "w") as f:
        mon = subprocess.Popen(["ovsdb-client", "monitor", f"unix:{sock}", "Open_vSwitch", "Open_vSwitch",
                                "external_ids"], stdout=f, stderr=subprocess.STDOUT)
    try:
        wait_until(10, "ovsdb-client monitor's first table", lambda: "external_ids" in mon_out.read_text())
        idle = [_held(sock, i) for i in range(cap - 1)]
        t0 = time.monotonic()
        p = run(["ovs-vsctl", f"--db=unix:{sock}", "--timeout=10", "show"], check=False, timeout=30)
        took = time.monotonic() - t0
        assert p.returncode == 0, f"ovs-vsctl show at the cap ({took:.1f} s): {p.stdout}{p.stderr}"
        assert re.match(r"^[0-9a-f]{8}-", p.stdout), f"ovs-vsctl show: {p.stdout!r}"
        print(f"ovs-vsctl show with {cap} connections held (the cap): answered in {took * 1000:.0f} ms")
        assert took < 10, f"ovs-vsctl show took {took:.1f} s"
        closed = [i for i, c in enumerate(idle) if _closed_by_server(c)]
        assert closed and closed[0] == 0, f"the idle connection heard from longest ago goes first: {closed}"
        assert s.logged("closing the connection idle longest"), "the eviction is logged"

        # The live IDL client was not closed: it sees the next change.
        assert mon.poll() is None, f"ovsdb-client monitor ended: {mon_out.read_text()}"
        run(["ovs-vsctl", f"--db=unix:{sock}", "--timeout=10", "--no-wait",
             "set", "Open_vSwitch", ".", "external_ids:issue=48"])
        wait_until(10, "ovsdb-client monitor to see the change", lambda: "issue" in mon_out.read_text())
        for c in idle:
            c.close()
    finally:
        mon.terminate()
        mon.wait(10)
