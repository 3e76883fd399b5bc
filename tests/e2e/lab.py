"""The end-to-end tests' laboratory: namespaces, a sluice daemon, Open
vSwitch and os-ken as peers, and waiting for conditions (never for a time).

conftest.py turns these into fixtures; a test uses them through those.
Everything started here is remembered by its PID and ended by it; every
namespace made here carries the test's own prefix and is deleted with
everything that runs in it (``Testbed.down``).
"""
import ipaddress
import json
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
VENV_PY = REPO / ".venv" / "bin" / "python"
# The testbed's subnet, checked against every address and route of the
# machine (testbed.check_subnet), as scripts/testbed.sh does.
NET = os.environ.get("TESTBED_NET", "10.213.77")
# 46 zero bytes in hex: a minimum Ethernet payload.
PAD = "00" * 46


class WaitTimeout(AssertionError):
    """A wait that ran out: the test fails, saying what it waited for."""


def wait_until(secs, what, fn, every=0.05):
    """Calls fn every `every` seconds until it returns something true, and
    returns that; after `secs` seconds fails the test, naming `what`."""
    t0 = time.monotonic()
    while True:
        got = fn()
        if got:
            return got
        if time.monotonic() - t0 >= secs:
            raise WaitTimeout(f"timed out after {secs} s waiting for: {what}")
        time.sleep(every)


def run(cmd, check=True, timeout=120, **kw):
    """Runs cmd (a list), text in and out, and returns the CompletedProcess;
    with check, a non-zero status fails the test with the command's output."""
    kw.setdefault("capture_output", True)
    p = subprocess.run([str(c) for c in cmd], text=True, timeout=timeout, **kw)
    if check and p.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stdout}{p.stderr}"
        )
    return p


def out_of(cmd, **kw):
    """The standard output of cmd, which must succeed."""
    return run(cmd, **kw).stdout


def lines_after(text, needle, n):
    """The lines holding `needle` and the n after each (grep -A n)."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if needle in line:
            out.extend(lines[i:i + n + 1])
    return "\n".join(out)


def check_subnet(net):
    """Fails if the /24 `net` (three octets) overlaps an address or route of
    this machine: no test frame may reach a real interface."""
    mine = ipaddress.ip_network(f"{net}.0/24")
    text = out_of(["ip", "-4", "-o", "addr"]) + out_of(["ip", "-4", "route"])
    for tok in text.split():
        if "/" in tok or tok[:1].isdigit():
            try:
                other = ipaddress.ip_network(tok, strict=False)
            except ValueError:
                continue
            if other.prefixlen > 0 and other.overlaps(mine):
                raise AssertionError(
                    f"testbed: {mine} overlaps {other} on this machine; set TESTBED_NET to a free /24"
                )


def tcp_listening(ns, port):
    """True if a socket listens on TCP `port` in namespace `ns`."""
    return bool(
        run(["ip", "netns", "exec", ns, "ss", "-Hltn", f"sport = :{port}"], check=False).stdout.strip()
    )


def _socket_inodes(pid):
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    except OSError:
        pass
    return inodes


def _children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def has_packet_socket(pid):
    """True if process `pid`, or one it started, holds a packet socket bound
    to an interface and receiving (from then on it sees every frame there).
    Bound, not just made: the bind takes a new socket off the receive path
    for a moment (issue 28)."""
    try:
        with open(f"/proc/{pid}/net/packet") as f:
            rows = f.read().splitlines()[1:]
    except OSError:
        rows = []
    bound = {r.split()[-1] for r in rows if len(r.split()) > 5 and r.split()[4] != "0" and r.split()[5] == "1"}
    if bound & _socket_inodes(pid):
        return True
    return any(has_packet_socket(c) for c in _children(pid))


def connected_to(pid, other):
    """True once process `other` holds the far end of one of `pid`'s Unix
    sockets (sluice has accepted a sluice-ctl's connection)."""
    mine = _socket_inodes(pid)
    theirs = _socket_inodes(other)
    for line in run(["ss", "-Hx"], check=False).stdout.splitlines():
        f = line.split()
        # ... LOCAL_ADDR LOCAL_INODE PEER_ADDR PEER_INODE
        for k in range(4, len(f) - 2):
            if f[k] in mine and f[k + 2] in theirs:
                return True
    return False


def need(tool, package):
    """Fails (never skips) if `tool` is not on PATH, naming what installs it."""
    from shutil import which

    if which(tool) is None:
        raise AssertionError(f"{tool} not found (scripts/setup.sh installs {package})")


class Procs:
    """Background processes of one test, ended by PID at its end."""

    def __init__(self):
        self.items = []

    def start(self, cmd, stdout=None, stderr=subprocess.STDOUT, **kw):
        if stdout is None:
            stdout = subprocess.DEVNULL
        p = subprocess.Popen([str(c) for c in cmd], stdout=stdout, stderr=stderr, **kw)
        self.items.append(p)
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout=10):
        if p.poll() is None:
            try:
                p.send_signal(sig)
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            except ProcessLookupError:
                pass
        return p.returncode

    def stop_all(self):
        for p in reversed(self.items):
            self.stop(p)
        self.items.clear()


class Testbed:
    """Namespaces PREFIX-sw (the switch, ports p1..pN, no addresses) and
    PREFIX-h1..hN (eth0 NET.i/24 on the other end of pi), offloads off and
    IPv6 disabled on every test interface, as scripts/testbed.sh builds it.
    """

    def __init__(self, prefix, hosts=2, net=NET):
        self.p = prefix
        self.hosts = hosts
        self.net = net
        self.procs = Procs()
        self.extra = []  # namespaces made by a test beyond sw and hosts

    def ns(self, name):
        return f"{self.p}-{name}"

    def ip(self, i):
        return f"{self.net}.{i}"

    def add_ns(self, name):
        ns = self.ns(name)
        run(["ip", "netns", "add", ns])
        run(["ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up"])
        run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
        return ns

    def up(self):
        check_subnet(self.net)
        if self.hosts == 0:
            return self  # a topology of the test's own (add_ns)
        sw = self.add_ns("sw")
        for i in range(1, self.hosts + 1):
            h = self.ns(f"h{i}")
            run(["ip", "netns", "add", h])
            run(["ip", "link", "add", f"p{i}", "netns", sw, "type", "veth", "peer", "name", "eth0", "netns", h])
            self.x(f"h{i}", "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
            self.x(f"h{i}", "ip", "addr", "add", f"{self.ip(i)}/24", "dev", "eth0")
            self.x(f"h{i}", "ip", "link", "set", "eth0", "up")
            self.x(f"h{i}", "ip", "link", "set", "lo", "up")
            self.x("sw", "ip", "link", "set", f"p{i}", "up")
            off = "tso off gso off gro off tx off rx off rxvlan off txvlan off".split()
            self.x(f"h{i}", "ethtool", "-K", "eth0", *off, check=False)
            self.x("sw", "ethtool", "-K", f"p{i}", *off, check=False)

        # A new veth is operationally up only after up to a second (link
        # watch); sluice honours link state, so wait for all of them.
        def all_up():
            return all(
                self.x("sw", "cat", f"/sys/class/net/p{i}/operstate").stdout.strip() == "up"
                for i in range(1, self.hosts + 1)
            )

        wait_until(5, "the switch ports to come up", all_up, every=0.1)
        return self

    def down(self):
        self.procs.stop_all()
        listed = run(["ip", "netns", "list"], check=False).stdout.split("\n")
        for line in listed:
            ns = line.split(" ")[0]
            if not ns.startswith(self.p + "-"):
                continue
            # End only what runs inside our own namespaces.
            pids = run(["ip", "netns", "pids", ns], check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            run(["ip", "netns", "del", ns], check=False)

    # Commands in a namespace of the testbed ("sw", "h1", ...).
    def cmd(self, where, *cmd):
        return ["ip", "netns", "exec", self.ns(where), *map(str, cmd)]

    def x(self, where, *cmd, check=True, timeout=120, **kw):
        """Runs cmd in namespace `where` and returns the CompletedProcess."""
        return run(self.cmd(where, *cmd), check=check, timeout=timeout, **kw)

    def bg(self, where, *cmd, stdout=None, **kw):
        """Starts cmd in namespace `where` in the background (ended with the
        testbed); `stdout` a path or file."""
        if isinstance(stdout, (str, Path)):
            with open(stdout, "w") as f:
                return self.procs.start(self.cmd(where, *cmd), stdout=f, **kw)
        return self.procs.start(self.cmd(where, *cmd), stdout=stdout, **kw)

    def ping_ok(self, frm, ip, count=3):
        return self.x(frm, "ping", "-c", count, "-i", "0.2", "-W", "2", "-q", ip, check=False).returncode == 0

    def no_ping(self, frm, ip):
        """True if one ping from `frm` to ip gets no answer within a second."""
        return self.x(frm, "ping", "-c", "1", "-W", "1", "-q", ip, check=False).returncode != 0

    def gro_on(self, n):
        """GRO on at hosts 1..n: a veth takes XDP redirects only then."""
        for i in range(1, n + 1):
            self.x(f"h{i}", "ethtool", "-K", "eth0", "gro", "on", check=False)

    def mac(self, where, dev="eth0"):
        return self.x(where, "cat", f"/sys/class/net/{dev}/address").stdout.strip()

    def tcp_listening(self, where, port):
        return tcp_listening(self.ns(where), port)

    def listening(self, proc, what):
        """Waits for the raw listener `proc` to hold its packet socket."""
        wait_until(5, f"{what} to listen (its packet socket)", lambda: has_packet_socket(proc.pid))

    def iperf3_server(self, port, where="h2"):
        """A one-shot iperf3 server in `where` on `port`, listening on return."""
        srv = self.bg(where, "timeout", "60", "iperf3", "-s", "-1", "-p", port)
        wait_until(10, f"iperf3 to listen on port {port} in {where}", lambda: self.tcp_listening(where, port))
        return srv

    def tcp_mbps(self, port, server_port=None, secs=2, digits=0):
        """TCP throughput in Mbit/s from h1 to h2 (0 if it failed); h2
        listens on server_port when a rule translates the port."""
        srv = self.iperf3_server(server_port or port)
        p = self.x("h1", "iperf3", "-c", self.ip(2), "-p", port, "-t", secs, "-J", check=False, timeout=60)
        try:
            bps = json.loads(p.stdout)["end"]["sum_received"]["bits_per_second"]
            mbps = round(bps / 1e6, digits) if digits else int(bps / 1e6)
        except (ValueError, KeyError, TypeError):
            mbps = 0
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:
            self.procs.stop(srv)
        return mbps

    def frame_arrives(self, frm, to, match, frame):
        """`frm` sends `frame` (hex) a few times once `to` listens; true if
        `to` sees a frame whose bytes from the source MAC on start with
        `match` within 3 s."""
        w = self.bg(to, "python3", SCRIPTS / "rawframe.py", "expect", "eth0", match, "3")
        self.listening(w, f"{to}'s frame listener")
        self.x(frm, "python3", SCRIPTS / "rawframe.py", "send", "eth0", frame, "5")
        return w.wait(10) == 0


def scrape(testbed, port, where="sw"):
    """GET /metrics from 127.0.0.1:port inside the testbed's namespace."""
    return testbed.x(where, "bash", "-c",
                     f"exec 3<>/dev/tcp/127.0.0.1/{port}; printf 'GET /metrics HTTP/1.0\\r\\n\\r\\n' >&3; cat <&3",
                     check=False).stdout


def metric(text, key):
    """The value of the sample named `key` (name{labels}, exactly as
    printed) in a Prometheus scrape, as a string; None if absent."""
    for line in text.splitlines():
        f = line.split()
        if len(f) >= 2 and f[0] == key:
            return f[1]
    return None


class Notify:
    """The service manager's side of sd_notify: a datagram socket at `path`
    (a path: not tied to a network namespace) whose messages are kept, one
    state a line (newlines inside one become spaces)."""

    def __init__(self, path):
        self.path = str(path)
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.states = []
        self._stop = False
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        while not self._stop:
            r, _, _ = select.select([self.sock], [], [], 0.1)
            if r:
                m = self.sock.recv(4096).decode(errors="replace")
                self.states.append(m.replace("\n", " "))

    def count(self, state):
        return sum(1 for s in list(self.states) if s == state)

    def close(self):
        self._stop = True
        self.thread.join(2)
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class Sluice:
    """A sluice daemon in namespace `ns`: started with `args`, ready when it
    says READY=1 on its notify socket; its output in `out` (shown when the
    test fails); stopped by its PID."""

    def __init__(self, bins, ns, args, workdir, run_dir=None, env=None):
        self.bins = Path(bins)
        self.ns = ns
        self.args = [str(a) for a in args]
        self.workdir = Path(workdir)
        self.out = self.workdir / "sluice.out"
        self.env = dict(env or {})
        # A run directory of the test's own unless it names one (remembered
        # port numbers never leak from test to test); --ovs takes
        # OVS_RUNDIR (or Open vSwitch's default).
        if "--run-dir" in self.args:
            self.run_dir = Path(self.args[self.args.index("--run-dir") + 1])
        elif "--ovs" in self.args:
            self.run_dir = Path(self.env.get("OVS_RUNDIR") or os.environ.get("OVS_RUNDIR") or "/var/run/openvswitch")
        else:
            self.run_dir = Path(run_dir) if run_dir else self.workdir / "run"
            self.run_dir.mkdir(exist_ok=True)
            self.args += ["--run-dir", str(self.run_dir)]
        self.proc = None
        self.notify = None
        self.returncode = None

    @property
    def pid(self):
        return self.proc.pid

    def start(self, ready_secs=15):
        self.notify = Notify(self.workdir / "notify.sock")
        env = {**os.environ, **self.env, "NOTIFY_SOCKET": self.notify.path}
        with open(self.out, "a") as f:
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", self.ns, str(self.bins / "sluice"), *self.args],
                stdout=f,
                stderr=subprocess.STDOUT,
                env=env,
            )
        wait_until(ready_secs, "sluice to be ready (READY=1)", lambda: self.notify.count("READY=1") or not self.alive())
        if not self.alive():
            raise AssertionError(f"sluice exited ({self.proc.returncode}) before it was ready:\n{self.log}")
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM):
        """Stops the daemon (its counters are in `log` then); its status."""
        if self.proc is not None and self.returncode is None:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
                try:
                    self.proc.wait(20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.returncode = self.proc.returncode
        if self.notify is not None:
            self.notify.close()
            self.notify = None
        return self.returncode

    def hup_and_wait(self):
        """SIGHUP, then wait until sluice has read its configuration again
        (READY=1 once more), whether it took it or not."""
        n = self.notify.count("READY=1")
        self.proc.send_signal(signal.SIGHUP)
        wait_until(5, "sluice to reload after SIGHUP (READY=1 again)", lambda: self.notify.count("READY=1") > n)

    @property
    def log(self):
        try:
            return self.out.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def logged(self, text):
        return text in self.log

    def ctl(self, *args, check=True, run_dir=True, timeout=60):
        """sluice-ctl on this daemon's run directory; the CompletedProcess."""
        pre = ["--run-dir", str(self.run_dir)] if run_dir else []
        return run([self.bins / "sluice-ctl", *pre, *args], check=check, timeout=timeout)

    def flows(self, bridge="br0"):
        return self.ctl("--no-stats", "dump-flows", bridge, check=False).stdout

    def port_desc(self, no, name, word, bridge="br0"):
        """True if dump-ports-desc shows `word` (LIVE, LINK_DOWN) for port
        `no` named `name`."""
        text = self.ctl("dump-ports-desc", bridge, check=False).stdout
        return word in lines_after(text, f" {no}({name})", 2)

    def port_counter(self, port, column):
        """A column of a port's line in the counters printed at exit (the
        daemon stopped): `column` 5 is tx packets, as the daemon prints its port counters."""
        for line in self.log.splitlines():
            f = line.split()
            if f and f[0] == str(port) and len(f) >= column:
                return f[column - 1]
        return None


class Ovs:
    """Open vSwitch started by hand (docs of PEERS.md): ovsdb-server and
    ovs-vswitchd with a private run directory `d`, in namespace `ns`, ended
    by PID. The bridge's management socket is d/BRIDGE.mgmt; with `env`
    (OVS_RUNDIR=d), Open vSwitch's tools find it unaided: ovs-vsctl its
    database, ovs-ofctl BRIDGE its socket, ovs-appctl its pidfile."""

    def __init__(self, ns, d):
        self.ns = ns
        self.d = Path(d)
        self.env = {**os.environ, **{k: str(self.d) for k in ("OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR")}}
        self.db = self.vs = None

    def start(self):
        need("ovs-vswitchd", "openvswitch-switch")
        d = self.d
        run(["ovsdb-tool", "create", d / "conf.db", "/usr/share/openvswitch/vswitch.ovsschema"], env=self.env)
        self.db = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, "ovsdb-server", d / "conf.db", f"--remote=punix:{d}/db.sock", f"--log-file={d}/ovsdb.log"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env,
        )
        wait_until(10, f"ovsdb-server's socket {d}/db.sock", lambda: (d / "db.sock").is_socket())
        run(["ip", "netns", "exec", self.ns, "ovs-vsctl", f"--db=unix:{d}/db.sock", "--no-wait", "init"], env=self.env)
        self.vs = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, "ovs-vswitchd", f"unix:{d}/db.sock", f"--log-file={d}/vswitchd.log",
             f"--pidfile={d}/ovs-vswitchd.pid"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env,
        )
        # Its control socket (RUNDIR/ovs-vswitchd.PID.ctl; ip netns exec
        # runs it as this PID) answers once it runs.
        wait_until(10, f"ovs-vswitchd to answer on {self.ctl}", lambda: self.appctl("version", check=False).returncode == 0)
        return self

    @property
    def ctl(self):
        return self.d / f"ovs-vswitchd.{self.vs.pid}.ctl"

    def vsctl(self, *args, check=True, timeout=30):
        return run(["ip", "netns", "exec", self.ns, "ovs-vsctl", f"--db=unix:{self.d}/db.sock", f"--timeout={timeout}", *args],
                   check=check, env=self.env, timeout=timeout + 10)

    def appctl(self, *args, check=True):
        return run(["ovs-appctl", "-t", self.ctl, *args], check=check, env=self.env)

    def mgmt(self, bridge="br0"):
        return f"unix:{self.d}/{bridge}.mgmt"

    def stop(self):
        for p in (self.vs, self.db):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


class Osken:
    """os-ken (from .venv) running `app` (a module of tests/controller, or
    one on `pythonpath`) on TCP port `port` of namespace `ns`'s loopback;
    its output in `log`."""

    def __init__(self, testbed, app, log, where="sw", port=6653, env=None, pythonpath=()):
        self.tb = testbed
        self.app = app
        self.log_path = Path(log)
        self.where = where
        self.port = port
        self.env = dict(env or {})
        self.pythonpath = [str(REPO / "tests" / "controller"), *map(str, pythonpath)]
        self.proc = None

    def start(self):
        if not VENV_PY.exists():
            raise AssertionError(f"{VENV_PY} missing (scripts/setup.sh makes it)")
        self.tb.x(self.where, "ip", "link", "set", "lo", "up")
        env = {**os.environ, "PYTHONPATH": ":".join(self.pythonpath), **self.env}
        with open(self.log_path, "w") as f:
            self.proc = self.tb.procs.start(
                self.tb.cmd(self.where, VENV_PY, REPO / "tests" / "controller" / "run_osken.py", self.port, self.app),
                stdout=f, env=env, cwd=REPO,
            )
        wait_until(60, f"os-ken ({self.app}) to listen on port {self.port}", lambda: self.tb.tcp_listening(self.where, self.port))
        return self

    @property
    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def stop(self):
        if self.proc is not None:
            self.tb.procs.stop(self.proc)


def mkdtemp(base, name):
    return Path(tempfile.mkdtemp(prefix=name + ".", dir=base))


def beside_ovs(sluice, ovs, protocols):
    """sluice (ports p1 and p2, fail-mode secure) and a private Open
    vSwitch with a netdev bridge `ref` (fail-mode secure) speaking
    `protocols` (its `protocols` column), for one test to drive both with
    the same client: (sluice, ovs, sluice's target, Open vSwitch's)."""
    s = sluice.start("--port", "p1", "--port", "p2", "--fail-mode", "secure")
    o = ovs.start()
    o.vsctl("add-br", "ref", "--", "set", "bridge", "ref", "datapath_type=netdev", "fail-mode=secure",
            f"protocols={protocols}")
    return s, o, f"unix:{s.run_dir}/br0.mgmt", o.mgmt("ref")


def tutorial_bridges(sluice, ovs, tmp_path):
    """The ovs-advanced tutorial's bridge br0 (fail-mode secure, ports
    p1-p4 as OpenFlow 1-4) on sluice --ovs, set up through its own
    database with plain ovs-vsctl found by OVS_RUNDIR, and on a private
    Open vSwitch in namespace h1 (a userspace datapath, internal ports):
    (sluice, ovs, sluice's target, Open vSwitch's, the environment that
    points the OVS tools at sluice)."""
    rd = tmp_path / "ovsrun"
    rd.mkdir()
    env = {"OVS_RUNDIR": str(rd), "OVS_DBDIR": str(rd)}
    senv = {**os.environ, **env}
    s = sluice.start("--ovs", "--no-local", env=env)
    run(["ovs-vsctl", "--timeout=20", "add-br", "br0", "--", "set", "Bridge", "br0", "fail-mode=secure"], env=senv)
    for i in range(1, 5):
        run(["ovs-vsctl", "--timeout=20", "add-port", "br0", f"p{i}", "--", "set", "Interface", f"p{i}",
             f"ofport_request={i}"], env=senv)
    o = ovs.start(where="h1")
    o.vsctl("add-br", "br0", "--", "set", "Bridge", "br0", "fail-mode=secure", "datapath_type=netdev")
    for i in range(1, 5):
        o.vsctl("add-port", "br0", f"p{i}", "--", "set", "Interface", f"p{i}", "type=internal",
                f"ofport_request={i}")
    return s, o, f"unix:{s.run_dir}/br0.mgmt", o.mgmt("br0"), senv
