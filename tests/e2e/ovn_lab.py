"""OVN's laboratory (tests/e2e/test_ovn.py): Debian's OVN 23.03, unchanged,
on chassis whose switch is Open vSwitch or sluice.

  Central   the northbound and southbound databases (Open vSwitch's
            ovsdb-server on databases made with ovsdb-tool create) and
            ovn-northd, in a private directory, by hand (no systemd)
  Chassis   one hypervisor in a namespace of its own: its local
            Open_vSwitch database and switch (ovsdb-server + ovs-vswitchd
            with datapath_type=netdev, or `sluice --ovsdb`), and
            ovn-controller, which makes br-int itself and programs it
  Ovn       one test's chassis and "VMs" (namespaces whose veth's switch
            end is on br-int with external_ids:iface-id=LSP), its waits
            (bounded, each also failing at once on an OpenFlow error in an
            ovn-controller's log) and its traffic

Every process is remembered by its PID and ended by it; the namespaces are
the test's testbed's (lab.Testbed), deleted with it.
"""
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import lab
from lab import check_subnet, run, wait_until

OVN_SHARE = Path("/usr/share/ovn")
VSWITCH_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")

# The subnets of these tests, each checked against the machine's addresses
# and routes (lab.check_subnet) before a test uses it.
LS1 = "10.213.81"  # logical switch 1
LS2 = "10.213.82"  # logical switch 2 (behind the logical router)
EXT = "10.213.83"  # the outside network (localnet, gateway router)
UNDER = "10.213.84"  # the chassis' underlay (Geneve between them)
VIPS = "10.213.85"  # load balancers' virtual addresses
SUBNETS = (LS1, LS2, EXT, UNDER, VIPS)

# How long a wait for OVN may take: ovn-controller has the state within a
# second or two on Open vSwitch; a wait that runs out fails the test.
WAIT = 20

# A tiny TCP server: each connection gets "NAME PEER_ADDRESS\n".
NAME_SERVER = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1])))
s.listen(64)
while True:
    c, a = s.accept()
    try:
        c.sendall(("%s %s\n" % (sys.argv[2], a[0])).encode())
    finally:
        c.close()
"""

# Its client: up to N connections to HOST:PORT, one line each (the answer,
# or "ERR why"), stopping once `want` distinct names (0: never) were seen.
NAME_CLIENT = r"""
import socket, sys
host, port, n, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
seen = set()
for i in range(n):
    try:
        c = socket.create_connection((host, port), timeout=2)
        c.settimeout(2)
        line = c.makefile().readline().strip()
        c.close()
        print(line or "ERR empty", flush=True)
        if line:
            seen.add(line.split()[0])
    except OSError as e:
        print("ERR %s" % e, flush=True)
    if want and len(seen) >= want:
        break
"""

# What in an ovn-controller's log says the switch refused or dropped it:
# an OpenFlow error (ofctrl, pinctrl and the feature probes log "OpenFlow
# error: OFPT_ERROR ..." and reconnect; "switch refused ..."), a message of
# the switch's that Open vSwitch's library cannot decode (ofp_msgs WARN
# "received ... with incorrect length"; vconn "decode error"), any other
# warning or error, or trouble on a connection to br-int's management
# socket once it was up. Before the first "br-int.mgmt: connected",
# "connection failed (No such file or directory)" and "waiting N seconds
# before reconnect" are ovn-controller starting before the switch has made
# br-int, and the representor plug provider's warning is Debian's build:
# that is Open vSwitch's baseline, which has nothing else.
OPENFLOW_ERROR = re.compile(r"OFPT_ERROR|OpenFlow error|Protocol error|decode error|refused", re.I)
MGMT_TROUBLE = re.compile(r"\.mgmt: .*(dropped|reconnect|closed|failed|reset|Broken pipe|timed out|disconnect)",
                          re.I)
MGMT_UP = re.compile(r"br-int\.mgmt: connected")
WARNING = re.compile(r"\|(WARN|ERR|EMER)\|")
DEBUG = re.compile(r"\|DBG\|")
BASELINE_WARNING = re.compile(r"vif_plug_provider\|WARN\|failed to initialize representor")
ERROR_XID = re.compile(r"OFPT_ERROR \(OF1\.\d\) \((xid=0x[0-9a-f]+)\): (\S+)")


def switch_trouble(text):
    """The lines of an ovn-controller log that are trouble from the switch
    (see OPENFLOW_ERROR and what follows)."""
    out = []
    up = False
    for line in text.splitlines():
        if MGMT_UP.search(line):
            up = True
        before_up = not up and ".mgmt:" in line
        if DEBUG.search(line) and not OPENFLOW_ERROR.search(line):
            continue
        if (OPENFLOW_ERROR.search(line)
                or (WARNING.search(line) and not BASELINE_WARNING.search(line) and not before_up)
                or (up and MGMT_TROUBLE.search(line))):
            out.append(line)
    return out


def refused_requests(text):
    """For each distinct OFPT_ERROR in the log: the error and the request it
    answers (the message ovn-controller sent earlier on the same connection
    with that xid, as vconn's debug log decodes it: a bundled flow_mod or
    group_mod with its actions). vconn rate-limits its debug lines, so a
    request may be missing ("not logged"); tests/e2e/ovn_replay.py lists
    every refused flow."""
    lines = text.splitlines()
    sent = {}
    out = []
    for i, line in enumerate(lines):
        tag = re.search(r"\|(vconn(?:\([^)]*\))?)\|DBG\|", line)
        if not tag:
            continue
        m = re.search(r"sent \(Success\): (.*)\((xid=0x[0-9a-f]+)\):(.*)", line)
        if m and "ECHO" not in m.group(1):
            body = [m.group(1).strip() + m.group(3)]
            for nxt in lines[i + 1:i + 4]:
                if re.match(r"^\d{4}-\d\d-\d\dT", nxt):
                    break
                body.append(nxt.strip())
            sent[(tag.group(1), m.group(2))] = " | ".join(b for b in body if b)
            continue
        m = ERROR_XID.search(line)
        if m and "received" in line:
            req = sent.get((tag.group(1), m.group(1)), "(request not logged: vconn's debug log is rate-limited)")
            item = f"{m.group(2)} <- {req}"
            item = re.sub(r" \(xid=0x[0-9a-f]+\)| ?bundle_id=(0x)?[0-9a-f]+", "", item)
            if item not in out:
                out.append(item)
    return out


# ovn-controller logs every OpenFlow message it sends and receives (vconn at
# debug level, a few hundred lines a test): a refused request is then named
# with its error (refused_requests). OVN_E2E_VLOG overrides, e.g.
# "-vvconn:file:dbg -vofctrl:file:dbg" for the flows ofctrl computes too.
VLOG = os.environ.get("OVN_E2E_VLOG", "-vvconn:file:dbg").split()


# OVN_E2E_LENIENT=1: trouble from a switch fails nothing (check_switches
# returns), so a scenario goes on to its traffic: how far it gets despite
# the errors (a debugging aid; never for the suite's verdict).
LENIENT = os.environ.get("OVN_E2E_LENIENT") == "1"


def ovn_env(d):
    """Open vSwitch's and OVN's directories all in d: br-int's management
    socket is OVS_RUNDIR/br-int.mgmt for ovn-controller."""
    keys = ("OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR",
            "OVN_RUNDIR", "OVN_DBDIR", "OVN_LOGDIR", "OVN_SYSCONFDIR")
    return {**os.environ, **{k: str(d) for k in keys}}


def stop_proc(p, ctl=None, timeout=5):
    """Ends process p: `ovs-appctl -t ctl exit` first when a control socket
    is given (a clean exit), then SIGTERM, then SIGKILL; by its PID."""
    if p is None or p.poll() is not None:
        return
    if ctl is not None and Path(ctl).exists():
        run(["ovs-appctl", "-t", ctl, "exit"], check=False, timeout=timeout)
        try:
            p.wait(timeout)
            return
        except subprocess.TimeoutExpired:
            pass
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def tail(path, lines=80):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(none)"


class Central:
    """The northbound and southbound databases and ovn-northd in directory d
    (root namespace: the chassis reach them through Unix sockets)."""

    def __init__(self, d):
        self.d = Path(d)
        self.env = ovn_env(self.d)
        self.procs = {}
        self.nb = f"unix:{self.d}/nb.sock"
        self.sb = f"unix:{self.d}/sb.sock"

    def start(self):
        lab.need("ovn-northd", "ovn-central")
        lab.need("ovsdb-server", "openvswitch-switch")
        d = self.d
        for db, schema in (("nb", "ovn-nb"), ("sb", "ovn-sb")):
            run(["ovsdb-tool", "create", d / f"{db}.db", OVN_SHARE / f"{schema}.ovsschema"], env=self.env)
            self.procs[db] = subprocess.Popen(
                ["ovsdb-server", d / f"{db}.db", f"--remote=punix:{d}/{db}.sock", f"--unixctl={d}/{db}.ctl",
                 f"--log-file={d}/{db}-ovsdb.log"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
        for db in ("nb", "sb"):
            wait_until(10, f"the {db} ovsdb-server's socket", lambda: (d / f"{db}.sock").is_socket())
        self.nbctl("init")
        self.sbctl("init")
        self.procs["northd"] = subprocess.Popen(
            ["ovn-northd", f"--ovnnb-db={self.nb}", f"--ovnsb-db={self.sb}", f"--unixctl={d}/northd.ctl",
             f"--log-file={d}/northd.log"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env)
        # northd has the southbound database once it answers a sync.
        self.nbctl("--wait=sb", "sync", timeout=WAIT)
        return self

    def stop(self):
        d = self.d
        stop_proc(self.procs.get("northd"), d / "northd.ctl")
        for db in ("sb", "nb"):
            stop_proc(self.procs.get(db), d / f"{db}.ctl")

    def nbctl(self, *args, check=True, timeout=WAIT):
        return run(["ovn-nbctl", f"--db={self.nb}", f"--timeout={timeout}", *args],
                   check=check, env=self.env, timeout=timeout + 10).stdout

    def sbctl(self, *args, check=True, timeout=WAIT):
        return run(["ovn-sbctl", f"--db={self.sb}", f"--timeout={timeout}", *args],
                   check=check, env=self.env, timeout=timeout + 10).stdout

    def clean(self):
        """Deletes every logical row of the northbound database (all but
        NB_Global and its Connection and SSL) in one transaction, and waits
        for northd to take the southbound database along."""
        schema = json.loads((OVN_SHARE / "ovn-nb.ovsschema").read_text())
        keep = {"NB_Global", "Connection", "SSL"}
        ops = [{"op": "delete", "table": t, "where": []} for t in schema["tables"] if t not in keep]
        run(["ovsdb-client", "transact", self.nb, json.dumps([schema["name"], *ops])], env=self.env)
        self.nbctl("--wait=sb", "sync")

    def logical_rows(self):
        """The logical rows left (what clean() deletes): '' when none."""
        out = []
        for t in ("Logical_Switch", "Logical_Router", "Load_Balancer", "ACL", "Address_Set", "Port_Group",
                  "DHCP_Options", "NAT"):
            rows = self.nbctl("--bare", "--columns=_uuid", "list", t).split()
            if rows:
                out.append(f"{t}: {len(rows)}")
        return ", ".join(out)

    def logs(self):
        return [(f"ovn-northd ({self.d}/northd.log)", lambda: tail(self.d / "northd.log"))]


class Chassis:
    """One hypervisor in namespace `ns`: its local database and switch
    (`kind` "ovs" or "sluice") in directory d, and ovn-controller."""

    def __init__(self, tb, central, where, name, kind, d, bins, encap_ip):
        self.tb, self.central, self.where, self.name, self.kind = tb, central, where, name, kind
        self.ns = tb.ns(where)
        self.d = Path(d)
        self.d.mkdir(parents=True, exist_ok=True)
        self.bins = bins
        self.encap_ip = encap_ip
        self.env = ovn_env(self.d)
        self.sw = None
        self.controller = None
        self.log = self.d / "ovn-controller.log"

    def start_switch(self):
        if self.kind == "ovs":
            self.sw = lab.Ovs(self.ns, self.d).start()
        else:
            (self.d / "empty.toml").write_text("")
            self.sw = lab.Sluice(self.bins, self.ns,
                                 ["--config", self.d / "empty.toml", "--ovsdb", f"punix:{self.d}/db.sock",
                                  "--ovsdb-file", self.d / "conf.db", "--run-dir", self.d],
                                 self.d, env=ovn_env(self.d)).start()
        return self

    def start_controller(self, mappings=None):
        ids = [f"external_ids:system-id={self.name}", f"external_ids:ovn-remote={self.central.sb}",
               "external_ids:ovn-encap-type=geneve", f"external_ids:ovn-encap-ip={self.encap_ip}",
               "external_ids:ovn-bridge-datapath-type=netdev"]
        if mappings:
            ids.append(f"external_ids:ovn-bridge-mappings={mappings}")
        self.vsctl("set", "open_vswitch", ".", *ids)
        with open(self.d / "ovn-controller.out", "w") as out:
            self.controller = subprocess.Popen(
                ["ip", "netns", "exec", self.ns, "ovn-controller", f"unix:{self.d}/db.sock",
                 f"--log-file={self.log}", *VLOG],
                stdout=out, stderr=subprocess.STDOUT, env=self.env)
        wait_until(WAIT, f"ovn-controller on {self.name} to make br-int",
                   lambda: self.vsctl("br-exists", "br-int", check=False).returncode == 0 or self.died())
        wait_until(WAIT, f"chassis {self.name} in the southbound database",
                   lambda: self.name in self.central.sbctl("--bare", "--columns=name", "list", "chassis")
                   or self.died())
        if self.died():
            raise AssertionError(
                f"ovn-controller on {self.name} exited ({self.controller.returncode}):\n{tail(self.log)}")
        return self

    def died(self):
        return self.controller is not None and self.controller.poll() is not None

    @property
    def ctl(self):
        return self.d / f"ovn-controller.{self.controller.pid}.ctl"

    def appctl(self, *args, check=True):
        return run(["ovn-appctl", "-t", self.ctl, *args], check=check, env=self.env, timeout=20).stdout

    def vsctl(self, *args, check=True, timeout=WAIT):
        return run(["ip", "netns", "exec", self.ns, "ovs-vsctl", f"--db=unix:{self.d}/db.sock", f"--timeout={timeout}",
                    *args], check=check, env=self.env, timeout=timeout + 10)

    def ofctl(self, cmd, *args, bridge="br-int", check=False):
        """ovs-ofctl CMD [--options...] on the bridge's management socket."""
        opts = [a for a in args if a.startswith("--")]
        rest = [a for a in args if not a.startswith("--")]
        p = run(["ovs-ofctl", "-O", "OpenFlow15", *opts, cmd, f"unix:{self.d}/{bridge}.mgmt", *rest],
                check=check, env=self.env, timeout=30)
        return p.stdout + p.stderr

    def trouble(self):
        """The lines of ovn-controller's log that say the switch refused or
        dropped it (switch_trouble)."""
        try:
            text = self.log.read_text(errors="replace")
        except FileNotFoundError:
            return []
        return switch_trouble(text)

    def refused(self):
        try:
            return refused_requests(self.log.read_text(errors="replace"))
        except FileNotFoundError:
            return []

    def interface_errors(self):
        """Interfaces of the local database whose `error` is set (a port the
        switch could not make: name and error)."""
        p = self.vsctl("--bare", "--columns=name,error", "find", "interface", "error!=[]", check=False, timeout=5)
        rows = [r for r in p.stdout.strip().split("\n\n") if r.strip()]
        return [" ".join(r.split("\n")) for r in rows]

    def stop(self):
        """ovn-controller exits cleanly (`exit`: it removes its chassis from
        the southbound database), then the switch stops; the chassis row
        goes in any case (ovn-sbctl chassis-del)."""
        if self.controller is not None:
            stop_proc(self.controller, self.ctl)
            self.central.sbctl("--if-exists", "chassis-del", self.name, check=False, timeout=5)
        if self.sw is not None:
            self.sw.stop()

    def logs(self):
        sw = self.d / ("vswitchd.log" if self.kind == "ovs" else "sluice.out")
        return [(f"ovn-controller on {self.name} ({self.kind})", lambda: tail(self.log, 120)),
                (f"{'ovs-vswitchd' if self.kind == 'ovs' else 'sluice'} on {self.name}", lambda: tail(sw))]


class Ovn:
    """One test's OVN: its chassis, VMs, waits and traffic, on testbed tb
    (namespaces PREFIX-NAME) and central."""

    def __init__(self, tb, central, bins, tmp):
        self.tb, self.central, self.bins, self.tmp = tb, central, bins, Path(tmp)
        self.chassis = []
        self.vms = {}
        for net in SUBNETS:
            check_subnet(net)

    # -- the logical side ------------------------------------------------
    def nbctl(self, *args, **kw):
        return self.central.nbctl(*args, **kw)

    def sbctl(self, *args, **kw):
        return self.central.sbctl(*args, **kw)

    # -- chassis ----------------------------------------------------------
    def add_chassis(self, kind, where="ch1", encap_ip=None, mappings=None, underlay=None):
        """A chassis in namespace `where`; with underlay (an interface of
        that namespace holding encap_ip), Geneve to other chassis goes
        there: on Open vSwitch through br-phy (its userspace tunnels route
        through a bridge of its own, which takes the interface and the
        address), on sluice from the interface itself. The bridges
        `mappings` names (ovn-bridge-mappings, "physnet:br-ex") are made
        before ovn-controller starts, as on a host: one made after it
        reads the mappings makes it warn "Bridge 'br-ex' not found",
        which check_switches takes for trouble (a race whose outcome
        depends on how soon the switch has br-int up)."""
        n = len(self.chassis) + 1
        if not any(c.where == where for c in self.chassis) and self.tb.ns(where) not in _netns():
            self.tb.add_ns(where)
        ch = Chassis(self.tb, self.central, where, f"{self.tb.p}-{where}", kind, self.tmp / f"{where}-{kind}",
                     self.bins, encap_ip or f"{UNDER}.{100 + n}")
        self.chassis.append(ch)
        ch.start_switch()
        if underlay and kind == "ovs":
            self.tb.x(where, "sysctl", "-qw", f"net.ipv4.conf.{underlay}.arp_ignore=1")
            ch.vsctl("add-br", "br-phy", "--", "set", "bridge", "br-phy", "datapath_type=netdev")
            ch.vsctl("add-port", "br-phy", underlay)
            self.tb.x(where, "ip", "addr", "flush", "dev", underlay)
            self.tb.x(where, "ip", "addr", "add", f"{ch.encap_ip}/24", "dev", "br-phy")
            self.tb.x(where, "ip", "link", "set", "br-phy", "up")
        for m in (mappings or "").split(","):
            if ":" in m:
                br = m.split(":", 1)[1]
                ch.vsctl("--may-exist", "add-br", br, "--", "set", "bridge", br, "datapath_type=netdev")
        return ch.start_controller(mappings=mappings)

    def underlay(self, a, b):
        """Two chassis namespaces joined by a veth (ul on each side,
        UNDER.1 and UNDER.2, MTU 1600 for Geneve's headers)."""
        for w in (a, b):
            self.tb.add_ns(w)
        run(["ip", "link", "add", "ul", "netns", self.tb.ns(a), "type", "veth", "peer", "name", "ul", "netns",
             self.tb.ns(b)])
        for i, w in enumerate((a, b), 1):
            self.tb.x(w, "ip", "addr", "add", f"{UNDER}.{i}/24", "dev", "ul")
            self.tb.x(w, "ip", "link", "set", "ul", "mtu", "1600", "up")
            self.tb.x(w, "ethtool", "-K", "ul", *"tso off gso off gro off tx off rx off".split(), check=False)
        return f"{UNDER}.1", f"{UNDER}.2"

    def veth_into(self, ch, bridge, ifname, ns_name, mac=None, cidr=None, gw=None, iface_id=None):
        """A namespace `ns_name` whose eth0 is the far end of interface
        ifname of `bridge` on chassis ch."""
        tb = self.tb
        tb.add_ns(ns_name)
        run(["ip", "link", "add", ifname, "netns", ch.ns, "type", "veth", "peer", "name", "eth0", "netns",
             tb.ns(ns_name)])
        off = "tso off gso off gro off tx off rx off".split()
        tb.x(ch.where, "ethtool", "-K", ifname, *off, check=False)
        tb.x(ns_name, "ethtool", "-K", "eth0", *off, check=False)
        if mac:
            tb.x(ns_name, "ip", "link", "set", "eth0", "address", mac)
        tb.x(ns_name, "ip", "link", "set", "eth0", "up")
        tb.x(ch.where, "ip", "link", "set", ifname, "up")
        if cidr:
            tb.x(ns_name, "ip", "addr", "add", cidr, "dev", "eth0")
        if gw:
            tb.x(ns_name, "ip", "route", "add", "default", "via", gw)
        extra = ["--", "set", "interface", ifname, f"external_ids:iface-id={iface_id}"] if iface_id else []
        ch.vsctl("add-port", bridge, ifname, *extra)

    def vm(self, ch, lsp, mac, ip=None, prefix=24, gw=None):
        """A VM: namespace PREFIX-LSP whose eth0 (mac, ip/prefix, default
        route gw) is plugged into br-int of chassis ch as logical port lsp."""
        self.veth_into(ch, "br-int", lsp, lsp, mac=mac, cidr=f"{ip}/{prefix}" if ip else None, gw=gw,
                       iface_id=lsp)
        self.vms[lsp] = ch
        return lsp

    # -- waiting ------------------------------------------------------------
    def check_switches(self, what="", interfaces=False):
        """Fails at once, quoting it, if an ovn-controller logged trouble
        from its switch (an OpenFlow error, a dropped connection; the
        requests the switch refused), or exited; with interfaces, also if a
        local database holds an interface the switch could not make."""
        if LENIENT:
            return
        for ch in self.chassis:
            bad = ch.trouble()
            if bad or ch.died():
                raise AssertionError(f"{what + ': ' if what else ''}{self.diagnosis()}")
            if interfaces and ch.interface_errors():
                raise AssertionError(f"{what + ': ' if what else ''}{self.diagnosis()}")

    def diagnosis(self):
        """What each chassis' switch refused: the trouble in ovn-controller's
        log, the requests its OpenFlow errors answer, the interfaces with an
        error."""
        out = []
        for ch in self.chassis:
            bad, refused = ch.trouble(), ch.refused()
            errs = ch.interface_errors() if ch.sw is not None else []
            if not (bad or refused or errs or ch.died()):
                continue
            out.append(f"chassis {ch.where} ({ch.kind}):")
            if ch.died():
                out.append(f"  ovn-controller exited ({ch.controller.returncode})")
            out += [f"  log: {l}" for l in _dedup(bad)[:12]]
            out += [f"  refused: {r}" for r in refused[:8]]
            out += [f"  interface error: {e}" for e in errs]
        return "\n".join(out) or "no trouble logged by any ovn-controller"

    def wait(self, secs, what, fn, every=0.1):
        """wait_until, also failing as soon as a switch refuses its
        ovn-controller (check_switches); a wait that runs out says what
        the switches refused."""
        def poll():
            self.check_switches(f"waiting for {what}")
            return fn()
        try:
            return wait_until(secs, what, poll, every=every)
        except lab.WaitTimeout as e:
            raise lab.WaitTimeout(f"{e}\n{self.diagnosis()}") from None

    def wait_up(self, *lsps):
        """Each logical port bound to a chassis and up (ovn-controller set
        Port_Binding up once it installed the port's flows)."""
        for lsp in lsps:
            self.wait(WAIT, f"logical port {lsp} up",
                      lambda: self.nbctl("get", "logical_switch_port", lsp, "up", check=False).strip() == "true")

    def sync(self, secs=WAIT):
        """`ovn-nbctl --wait=hv sync`: every chassis has applied the
        northbound database; failing early on a switch's refusal."""
        p = subprocess.Popen(["ovn-nbctl", f"--db={self.central.nb}", f"--timeout={secs}", "--wait=hv", "sync"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.central.env)
        try:
            self.wait(secs + 5, "ovn-nbctl --wait=hv sync (every chassis has the northbound state)",
                      lambda: p.poll() is not None)
        finally:
            if p.poll() is None:
                p.kill()
            out = p.communicate()[0]
        if p.returncode != 0:
            self.check_switches("ovn-nbctl --wait=hv sync")
            raise AssertionError(f"ovn-nbctl --wait=hv sync exited {p.returncode}: {out}")

    def ready(self, *lsps):
        self.wait_up(*lsps)
        self.sync()

    # -- traffic ------------------------------------------------------------
    def ping(self, frm, ip, count=3):
        """True if `frm` gets an answer from ip (count echos, 0.2 s apart)."""
        return self.tb.x(frm, "ping", "-c", count, "-i", "0.2", "-W", "2", "-q", ip, check=False).returncode == 0

    def no_ping(self, frm, ip):
        return self.tb.x(frm, "ping", "-c", "1", "-W", "1", "-q", ip, check=False).returncode != 0

    def ping_eventually(self, frm, ip, secs=10):
        """A path whose first frames take ovn-controller's slow path (ARP
        resolution, MAC learning of a router) may lose its first echo: one
        answer within secs."""
        self.wait(secs, f"an echo from {frm} to {ip} answered",
                  lambda: self.tb.x(frm, "ping", "-c", "1", "-W", "1", "-q", ip, check=False).returncode == 0, every=0)

    def serve(self, where, port, name):
        """NAME_SERVER on TCP `port` in namespace `where`, listening."""
        p = self.tb.bg(where, "python3", "-c", NAME_SERVER, port, name)
        wait_until(10, f"{where}'s TCP server on port {port}", lambda: self.tb.tcp_listening(where, port))
        return p

    def fetch(self, frm, ip, port, n=1, want=0):
        """NAME_CLIENT from `frm`: the answers, one line per connection."""
        p = self.tb.x(frm, "python3", "-c", NAME_CLIENT, ip, port, n, want, check=False, timeout=60)
        return p.stdout.splitlines()

    # -- the end --------------------------------------------------------------
    def dump(self, d):
        """What each chassis' ovn-controller installed, as Open vSwitch's
        tools print it (OVN_E2E_DUMP=DIR: test_ovn.py keeps it per test):
        CHASSIS.{flows,groups,meters,tlv,ports}."""
        d = Path(d)
        d.mkdir(parents=True, exist_ok=True)
        for ch in self.chassis:
            for what, cmd in (("flows", ("dump-flows", "--no-stats")), ("groups", ("dump-groups",)),
                              ("meters", ("dump-meters",)), ("tlv", ("dump-tlv-map",)), ("ports", ("show",))):
                (d / f"{ch.where}-{ch.kind}.{what}").write_text(ch.ofctl(*cmd))

    def stop(self):
        for ch in reversed(self.chassis):
            ch.stop()

    def logs(self):
        out = []
        for ch in self.chassis:
            out += ch.logs()
        return out + self.central.logs()


def _dedup(lines):
    """Log lines without their timestamps and sequence numbers, each once."""
    out = []
    for l in lines:
        t = re.sub(r"^\S+\|\d+\|", "", l)
        if t not in out:
            out.append(t)
    return out


def _netns():
    return {l.split(" ")[0] for l in run(["ip", "netns", "list"], check=False).stdout.splitlines()}
