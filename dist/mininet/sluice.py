"""sluice as a Mininet switch: `mn --custom dist/mininet/sluice.py --switch sluice`.

    sudo mn --custom dist/mininet/sluice.py --switch sluice \\
        --controller remote,ip=127.0.0.1,port=6653 --topo tree,2,3

or from Python (Mininet's own interpreter: Debian's `mn` runs
/usr/bin/python3):

    from mininet.net import Mininet
    from mininet.topolib import TreeTopo
    exec(open('dist/mininet/sluice.py').read())   # or import it
    net = Mininet(topo=TreeTopo(2, 3), switch=SluiceSwitch, controller=None)

Each switch is one sluice daemon with one bridge named after the switch:

- its ports are the switch's interfaces, numbered as Mininet numbers them
  (s1-eth1 is OpenFlow port 1);
- its datapath id is the one Mininet computes (from the switch's name, s12
  is 0xc, or `dpid=`);
- it connects to every controller Mininet gives it (`tcp:IP:PORT`) and, when
  Mininet gives it a listening port (`mn` does: 6654 for the first switch,
  6655 for the next, ...), listens there on the loopback (`ptcp:PORT`), so
  `ovs-ofctl -O OpenFlow13 dump-flows tcp:127.0.0.1:6654` works;
- its fail mode is Mininet's default for Open vSwitch, `secure` (only the
  controller's flows); `failMode=standalone` makes it a learning switch while
  no controller is connected;
- it has no LOCAL port (sluice's LOCAL port is a TAP device; Mininet's
  Open vSwitch bridges have one, down, that Mininet never uses):
  `local=True` adds it, named after the switch;
- its run directory (configuration `sluice.toml`, management socket
  `NAME.mgmt`, remembered port numbers, log `sluice.log`) is its own:
  DIR/NAME with `rundir=DIR`, else a new directory /tmp/sluice-mn-NAME-XXXXXX;
  it is left in place after the switch stops, so that its log can be read.

It is ready when sluice says so (READY=1 on $NOTIFY_SOCKET, the service
manager's protocol: every port open, every listener bound), within
`readyTimeout` seconds (15); `stop()` sends SIGTERM to that PID and waits
for it (SIGKILL after 10 s).

The binaries: $SLUICE (a path), else `sluice` on $PATH; sluice-ctl (for
`dpctl`, `attach` and `detach`): $SLUICE_CTL, else `sluice-ctl` next to
sluice, else on $PATH. `sluice=PATH` as a parameter overrides $SLUICE.

Offloads: sluice reads frames as the interface hands them (AF_PACKET), so
TCP segmentation and checksum offloads on a veth make the peer's kernel
hand over 64 KB frames with unfinished checksums, which a software switch
cannot forward (Mininet's TCULink exists for the same reason). Before it
starts, the switch turns them off on both ends of each of its links
(`ethtool -K IF tso off gso off gro off tx off rx off rxvlan off txvlan off`,
also on the host's end); `offloads=True` leaves them alone. It also turns
IPv6 off on its own interfaces, which live in the root namespace: a switch
port is not an interface of the machine.

Other parameters: `backend=NAME` (sluice's port back end: afpacket, the
default, afpacket-mmsg, afxdp, ...), `opts='...'` (more sluice flags, e.g.
`opts=--workers=2`), `protocols=` (accepted when it names OpenFlow13, the
one version sluice speaks, so command lines written for Open vSwitch work).

Left out: in-band control, STP, `batch` startup, `reconnectms` (sluice
reconnects with backoff from 1 s to 8 s) and TC queue reconfiguration of
OVSSwitch. `dpctl` runs sluice-ctl (ovs-ofctl's commands and output:
`mininet> dpctl dump-flows`).

Careful with `mn` itself on a shared machine: when it fails, and with
`mn -c`, it runs Mininet's global cleanup, which kills every process named
`ping` or `controller` on the machine, removes /tmp/*.log and deletes every
interface named like `*-ethN`.
"""

import json
import os
import select
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from mininet.log import debug, error, info, warn
from mininet.node import Switch


def _flag(value):
    "A parameter that may come from the command line as a string."
    if isinstance(value, str):
        return value.strip().lower() not in ("", "0", "false", "no", "off")
    return bool(value)


def _which(env, name, near=None):
    "The binary: $env, else NAME next to `near`, else NAME on $PATH."
    path = os.environ.get(env)
    if path:
        return path
    if near:
        beside = os.path.join(os.path.dirname(near), name)
        if os.access(beside, os.X_OK):
            return beside
    return shutil.which(name)


# What `ethtool -K` turns off on both ends of each link (see the module doc).
OFFLOADS = ["tso", "off", "gso", "off", "gro", "off", "tx", "off", "rx", "off",
            "rxvlan", "off", "txvlan", "off"]


class SluiceSwitch(Switch):
    "A Mininet switch that is one sluice daemon (OpenFlow 1.3)."

    def __init__(self, name, failMode="secure", rundir=None, sluice=None,
                 readyTimeout=15, offloads=False, local=False, backend=None,
                 protocols=None, **params):
        Switch.__init__(self, name, **params)
        if failMode not in ("secure", "standalone"):
            raise ValueError("%s: failMode %r: secure or standalone" % (name, failMode))
        if protocols and "OpenFlow13" not in str(protocols).split(","):
            raise ValueError("%s: sluice speaks OpenFlow13 only, not %s" % (name, protocols))
        self.failMode = failMode
        self.runbase = rundir
        self.rundir = None
        self.sluice = sluice
        self.readyTimeout = float(readyTimeout)
        self.offloads = _flag(offloads)
        self.local = _flag(local)
        self.backend = backend
        self.proc = None
        self.logfile = None
        self.controllerPeers = []

    @classmethod
    def setup(cls):
        "Warns early (before the network is built) if sluice is not found."
        if not _which("SLUICE", "sluice"):
            warn("sluice not found: set $SLUICE to its path, put it on $PATH "
                 "or give the switches sluice=PATH\n")

    # The pieces of the configuration.

    def dataPorts(self):
        "(interface, OpenFlow port) of each data port, as OVSSwitch picks them."
        return [(intf, self.ports[intf]) for intf in self.intfList()
                if self.ports[intf] and not intf.IP()]

    def mgmt(self):
        "The management socket, a sluice-ctl target."
        return "unix:" + os.path.join(self.rundir, self.name + ".mgmt")

    def config(self, controllers):
        "The TOML configuration of this switch's bridge."
        q = json.dumps  # a JSON string is a TOML basic string
        lines = ["[bridge]",
                 "name = %s" % q(self.name),
                 "datapath_id = %s" % q("0x" + self.dpid),
                 "fail_mode = %s" % q(self.failMode),
                 "local_port = %s" % ("true" if self.local else "false"),
                 "controllers = [%s]" % ", ".join(
                     q("%s:%s:%d" % (c.protocol, c.IP(), c.port)) for c in controllers)]
        if self.listenPort:
            lines.append("listen = [%s]" % q("ptcp:%d" % int(self.listenPort)))
        if self.backend:
            lines.append("backend = %s" % q(self.backend))
        for intf, port in self.dataPorts():
            lines += ["", "[[port]]", "name = %s" % q(intf.name), "ofport = %d" % port]
        return "\n".join(lines) + "\n"

    def quietOffloads(self, intf):
        "Turns off the offloads of both ends of intf's link (module doc)."
        ends = [intf]
        link = getattr(intf, "link", None)
        if link:
            ends = [link.intf1, link.intf2]
        for end in ends:
            if end is None or end.node is None:
                continue
            out, err, code = end.node.pexec(["ethtool", "-K", end.name] + OFFLOADS)
            debug("%s: ethtool -K %s: %s%s (%s)\n" % (self.name, end.name, out, err, code))

    # Starting and stopping.

    def start(self, controllers):
        "Starts sluice and waits until it is ready."
        binary = self.sluice or _which("SLUICE", "sluice")
        if not binary:
            raise Exception("sluice not found: set $SLUICE to its path or put it on $PATH")
        if self.runbase:
            self.rundir = os.path.join(str(self.runbase), self.name)
            os.makedirs(self.rundir, exist_ok=True)
        elif not self.rundir:
            self.rundir = tempfile.mkdtemp(prefix="sluice-mn-%s-" % self.name)
        for intf, _port in self.dataPorts():
            if not self.offloads:
                self.quietOffloads(intf)
            self.cmd("sysctl -qw net.ipv6.conf.%s.disable_ipv6=1" % intf.name.replace(".", "/"))
            self.cmd("ip link set", intf, "up")
        self.controllerPeers = ["%s:%d" % (c.IP(), c.port) for c in controllers]
        conf = os.path.join(self.rundir, "sluice.toml")
        with open(conf, "w") as f:
            f.write(self.config(controllers))
        # The service manager's protocol: sluice sends READY=1 here.
        notify = os.path.join(self.rundir, "notify")
        if os.path.exists(notify):
            os.unlink(notify)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(notify)
        env = dict(os.environ, NOTIFY_SOCKET=notify)
        env.pop("WATCHDOG_USEC", None)
        self.logfile = os.path.join(self.rundir, "sluice.log")
        cmd = [binary, "--config", conf, "--run-dir", self.rundir] + shlex.split(self.opts or "")
        debug("%s: %s\n" % (self.name, " ".join(cmd)))
        try:
            with open(self.logfile, "ab") as log:
                # In the switch's namespaces (mnexec -a: the root namespace
                # unless --innamespace), in a session of its own (-d): a
                # Ctrl-C at the CLI is not for it. Popen's PID is sluice's.
                self.proc = self.popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                       stderr=subprocess.STDOUT, env=env)
            self.waitReady(sock)
        except BaseException:
            self.stopDaemon()
            raise
        finally:
            sock.close()
            if os.path.exists(notify):
                os.unlink(notify)
        info("(sluice pid %d, log %s) " % (self.proc.pid, self.logfile))

    def waitReady(self, sock):
        "Until sluice says READY=1, it exits, or readyTimeout passes."
        deadline = time.monotonic() + self.readyTimeout
        while True:
            if self.proc.poll() is not None:
                raise Exception("%s: sluice exited (status %s) before it was ready:\n%s"
                                % (self.name, self.proc.returncode, self.logTail()))
            left = deadline - time.monotonic()
            if left <= 0:
                raise Exception("%s: sluice not ready after %g s:\n%s"
                                % (self.name, self.readyTimeout, self.logTail()))
            ready, _, _ = select.select([sock], [], [], min(left, 0.1))
            if ready and b"READY=1" in sock.recv(4096).split(b"\n"):
                return

    def logTail(self, lines=30):
        "The end of sluice's log."
        try:
            with open(self.logfile, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def stopDaemon(self, timeout=10):
        "Ends sluice by its PID and waits for it."
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            error("%s: sluice did not stop within %g s; killing it\n" % (self.name, timeout))
            proc.kill()
            proc.wait()

    def stop(self, deleteIntfs=True):
        "Stops sluice, then removes the interfaces (Mininet's part)."
        self.stopDaemon()
        super(SluiceSwitch, self).stop(deleteIntfs)

    def terminate(self):
        "Mininet ends a node this way too (also when start failed)."
        self.stopDaemon()
        super(SluiceSwitch, self).terminate()

    # Mininet's hooks.

    def connected(self):
        "Whether sluice has a TCP connection to one of its controllers."
        if self.proc is None or self.proc.poll() is not None:
            return False
        # ss -Htnp: Recv-Q Send-Q LOCAL PEER users:(("sluice",pid=N,fd=M))
        mine = "pid=%d," % self.proc.pid
        for line in self.cmd("ss -Htnp state established").splitlines():
            cols = line.split()
            if len(cols) >= 5 and mine in line and cols[3] in self.controllerPeers:
                return True
        return self.failMode == "standalone"

    def ctl(self):
        "sluice-ctl's path."
        near = self.sluice or _which("SLUICE", "sluice")
        path = _which("SLUICE_CTL", "sluice-ctl", near)
        if not path:
            raise Exception("sluice-ctl not found: set $SLUICE_CTL or put it on $PATH")
        return path

    def dpctl(self, *args):
        "sluice-ctl COMMAND SWITCH ARGS (ovs-ofctl's commands)."
        return self.cmd(self.ctl(), args[0], self.mgmt(), *args[1:])

    def attach(self, intf):
        "Adds a port at run time (its Mininet number)."
        if not self.offloads:
            self.quietOffloads(intf)
        self.cmd("ip link set", intf, "up")
        self.cmd(self.ctl(), "add-port", self.mgmt(), intf, "ofport=%d" % self.ports[intf])

    def detach(self, intf):
        "Removes a port at run time."
        self.cmd(self.ctl(), "del-port", self.mgmt(), intf)


# `mn --custom dist/mininet/sluice.py --switch sluice`
switches = {"sluice": SluiceSwitch}
