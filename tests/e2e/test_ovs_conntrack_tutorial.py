"""Open vSwitch's conntrack tutorial (Documentation/tutorials/ovs-conntrack.rst)
run with its own commands, in its order, against sluice --ovs and against a
private Open vSwitch in the same test: the namespaces `left` and `right`
on veth pairs, the bridge br0 made with ovs-vsctl, flows #1 to #5 added
with plain `ovs-ofctl add-flow br0 ...`, each TCP segment sent with scapy
exactly as the tutorial types it (SYN, SYN-ACK, ACK, one byte of data,
its ACK, FIN, FIN-ACK, the last ACK; and, as its two notes say, the SYN
sent again and the data sent again in TIME_WAIT), and `ovs-appctl
dpctl/dump-conntrack` read after each.

Compared after each segment: the tracker's entry for 192.168.0.2 as
dpctl/dump-conntrack prints it (the same text; nothing differs
legitimately here: the plain dump has no ids, counters or times), and
every flow as `ovs-ofctl --names dump-flows br0` prints it with its
n_packets and n_bytes. The tutorial says which two flows each segment
hits; Open vSwitch must agree (a check on the test), and sluice then must
too. The timeouts under `-s` are the one deliberate difference: sluice
keeps Linux's (those of the kernel datapath the tutorial was written on),
Open vSwitch's userspace datapath its own; each switch is checked against
its own values (TIMEOUTS).

What the test does that the tutorial does not, each marked where it
happens:
- each switch has its own three namespaces (PREFIX-sw, where the switch
  runs and the tutorial's root-namespace commands run, PREFIX-left,
  PREFIX-right): the tutorial's `left` and `right` are named with the
  test's prefix, and its veths live in PREFIX-sw, not the machine's own
  namespace;
- `datapath_type=netdev` on Open vSwitch's add-br (sluice's is the
  tutorial's): the tutorial uses the kernel
  datapath, which needs the openvswitch module (none here); Open
  vSwitch's userspace datapath has its own conntrack, whose TCP states
  the tutorial's kernel output names differently at the teardown
  (userspace prints CLOSING where the kernel prints FIN_WAIT_1 and
  LAST_ACK; lib/ct-dpif.c). The test compares sluice with the userspace
  datapath and checks the tutorial's own lines against it where they
  name the same states;
- `ovs-vsctl --timeout=20`: every wait of the test is bounded;
- the veths are set up (`ip link set ... up`) and each namespace's `lo`
  (the tutorial's note for scapy): the tutorial leaves that implicit;
- the scapy sessions are Python processes reading the tutorial's
  `sendp(...)` lines on standard input (`from scapy.all import *`, as the
  scapy shell), one per namespace, as the tutorial keeps two open.

The addresses 192.168.0.x and 10.0.0.x are the tutorial's: no interface
has them (the frames carry them between namespaces only); the test checks
that no address or route of the machine overlaps them all the same.
"""
import os
import re
import select
import subprocess

from lab import VENV_PY, WaitTimeout, check_subnet, run, wait_until

# The tutorial's flows, numbered as it numbers them, in its own words.
FLOWS = {
    1: "table=0, priority=50, ct_state=-trk, tcp, in_port=veth_l0, actions=ct(table=0)",
    2: "table=0, priority=50, ct_state=+trk+new, tcp, in_port=veth_l0, actions=ct(commit),veth_r0",
    3: "table=0, priority=50, ct_state=-trk, tcp, in_port=veth_r0, actions=ct(table=0)",
    4: "table=0, priority=50, ct_state=+trk+est, tcp, in_port=veth_r0, actions=veth_l0",
    5: "table=0, priority=50, ct_state=+trk+est, tcp, in_port=veth_l0, actions=veth_r0",
}

L = "left"
R = "right"

# The tutorial's course: flows added ("flow", N) and segments sent
# ("send", namespace, scapy line, the flows it hits as the tutorial says,
# the entry it shows after, if it shows one). The scapy lines are the
# tutorial's, character for character; its two notes on retransmissions
# send a segment again.
SYN = 'sendp(Ether()/IP(src="192.168.0.2", dst="10.0.0.2")/TCP(sport=1024, dport=2048, flags=0x02, seq=100), iface="veth_l1")'
DATA = 'sendp(Ether()/IP(src="192.168.0.2", dst="10.0.0.2")/TCP(sport=1024, dport=2048, flags=0x10, seq=101, ack=201)/"X", iface="veth_l1")'
COURSE = [
    ("flow", 1),
    ("flow", 2),
    ("send", L, SYN,
     "SYN", (1, 2), "SYN_SENT"),
    # Its note: "if the TCP syn packet is re-transmitted, it will again
    # match flow #1 ... and it will match flow #2".
    ("send", L, SYN, "SYN again", (1, 2), "SYN_SENT"),
    ("flow", 3),
    ("flow", 4),
    ("send", R, 'sendp(Ether()/IP(src="10.0.0.2", dst="192.168.0.2")/TCP(sport=2048, dport=1024, flags=0x12, seq=200, ack=101), iface="veth_r1")',
     "SYN-ACK", (3, 4), "ESTABLISHED"),
    ("flow", 5),
    ("send", L, 'sendp(Ether()/IP(src="192.168.0.2", dst="10.0.0.2")/TCP(sport=1024, dport=2048, flags=0x10, seq=101, ack=201), iface="veth_l1")',
     "ACK", (1, 5), "ESTABLISHED"),
    ("send", L, DATA,
     "data", (1, 5), None),
    ("send", R, 'sendp(Ether()/IP(src="10.0.0.2", dst="192.168.0.2")/TCP(sport=2048, dport=1024, flags=0X10, seq=201, ack=102), iface="veth_r1")',
     "data's ACK", (3, 4), None),
    ("send", L, 'sendp(Ether()/IP(src="192.168.0.2", dst="10.0.0.2")/TCP(sport=1024, dport=2048, flags=0x11, seq=102, ack=201), iface="veth_l1")',
     "FIN", (1, 5), "FIN_WAIT_1"),
    ("send", R, 'sendp(Ether()/IP(src="10.0.0.2", dst="192.168.0.2")/TCP(sport=2048, dport=1024, flags=0X11, seq=201, ack=103), iface="veth_r1")',
     "FIN-ACK", (3, 4), "LAST_ACK"),
    ("send", L, 'sendp(Ether()/IP(src="192.168.0.2", dst="10.0.0.2")/TCP(sport=1024, dport=2048, flags=0x10, seq=103, ack=202), iface="veth_l1")',
     "last ACK", (1, 5), "TIME_WAIT"),
    # Its note: "when the conntrack connection state is in "TIME_WAIT"
    # state ..., a re-transmitted data packet (from 192.168.0.2 ->
    # 10.0.0.2), still hits flows #1 and #5".
    ("send", L, DATA, "data again", (1, 5), "TIME_WAIT"),
]

# The entry the tutorial shows, with the state it names.
TUTORIAL_ENTRY = ("tcp,orig=(src=192.168.0.2,dst=10.0.0.2,sport=1024,dport=2048),"
                  "reply=(src=10.0.0.2,dst=192.168.0.2,sport=2048,dport=1024),protoinfo=(state={})")

# The kernel's TCP states the tutorial shows that Open vSwitch's userspace
# conntrack calls otherwise: it keeps a state per end (pf's) and prints
# the later one's (lib/ct-dpif.c), a FIN sent being CLOSING, both FINs
# acknowledged (FIN_WAIT_2, printed as TIME_WAIT) once the server's FIN
# has acknowledged the client's.
KERNEL_ONLY = {"FIN_WAIT_1": "CLOSING", "LAST_ACK": "TIME_WAIT"}

# The idle timeout (`dpctl/dump-conntrack -s`, seconds) each segment leaves
# the connection with: Open vSwitch's userspace tracker's defaults
# (lib/conntrack-tp.c: opening 30, established 24 h, one end closing
# 15 min, both 45, both done 30) and sluice's, which are Linux's
# (docs/CONNTRACK.md: SYN_SENT 120, established 5 days, FIN_WAIT and
# TIME_WAIT 120): a deliberate difference (docs/OVS-DIALECT.md, 20).
TIMEOUTS = {
    "SYN": (30, 120),
    "SYN again": (30, 120),
    "SYN-ACK": (30, 120),
    "ACK": (86400, 432000),
    "data": (86400, 432000),
    "data's ACK": (86400, 432000),
    "FIN": (900, 120),
    "FIN-ACK": (45, 120),
    "last ACK": (30, 120),
    "data again": (30, 120),
}

# How far below its full value a timeout may be read: it counts down in
# whole seconds from the segment on, and the read comes a moment later.
TIMEOUT_SLACK = 3


class Scapy:
    """A scapy session in a namespace, as the tutorial keeps one open in
    `left` and one in `right`: each line given is run as in the scapy
    shell (everything of scapy.all in scope); `do` returns once it ran."""

    SESSION = ("import sys\n"
               "from scapy.all import *\n"
               "conf.verb = 0\n"
               "print('ready', flush=True)\n"
               "for line in sys.stdin:\n"
               "    exec(line)\n"
               "    print('done', flush=True)\n")

    def __init__(self, tb, where):
        self.where = where
        self.p = tb.procs.start(tb.cmd(where, VENV_PY, "-u", "-c", self.SESSION), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.buf = b""
        self._expect("ready", 60)

    def _expect(self, word, secs=20):
        """Reads the session's output up to a line `word` (scapy's own
        warnings may come before it), for at most `secs` seconds."""
        fd = self.p.stdout.fileno()
        seen = []

        def line_said():
            while b"\n" in self.buf:
                line, self.buf = self.buf.split(b"\n", 1)
                if line.decode(errors="replace").strip() == word:
                    return True
                seen.append(line.decode(errors="replace"))
            if select.select([fd], [], [], 0.05)[0]:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise AssertionError(f"scapy in {self.where} ended:\n" + "\n".join(seen))
                self.buf += chunk
            return False

        wait_until(secs, f"scapy in {self.where} to say {word!r}", line_said, every=0)

    def do(self, line):
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()
        self._expect("done")


class Switch:
    """One of the two switches the tutorial runs on: its testbed (the
    namespaces sw, left, right), the environment its Open vSwitch tools
    need (OVS_RUNDIR), and the scapy sessions."""

    def __init__(self, name, tb, env):
        self.name, self.tb, self.env = name, tb, env
        self.userspace_ovs = name == "Open vSwitch"
        self.scapy = {}
        self.flow_key = {}  # the tutorial's flow number: its dump-flows line

    def sh(self, *cmd, check=True):
        """One of the tutorial's commands, as typed, in the switch's
        namespace (ovs-* tools reach the switch by OVS_RUNDIR)."""
        return run(self.tb.cmd("sw", *cmd), check=check, env=self.env)

    def flows(self):
        """{flow as dump-flows prints it, without its counters and ages:
        (n_packets, n_bytes)}."""
        out = self.sh("ovs-ofctl", "--names", "dump-flows", "br0").stdout
        got = {}
        for line in out.splitlines():
            if "actions=" not in line:
                continue
            n = re.search(r"n_packets=(\d+)", line)
            b = re.search(r"n_bytes=(\d+)", line)
            key = re.sub(r"\s*(duration|n_packets|n_bytes|idle_age|hard_age)=[^,\s]+,?", "", line).strip()
            got[key] = (int(n.group(1)) if n else None, int(b.group(1)) if b else None)
        return got

    def conntrack(self, stats=False):
        """The tutorial's `ovs-appctl dpctl/dump-conntrack | grep
        "192.168.0.2"`: the lines naming 192.168.0.2."""
        out = self.sh("ovs-appctl", "dpctl/dump-conntrack", *(["-s"] if stats else [])).stdout
        return [line for line in out.splitlines() if "192.168.0.2" in line]

    def timeouts(self):
        return [int(t) for line in self.conntrack(stats=True) for t in re.findall(r",timeout=(\d+)", line)]

    def hits(self, before, after):
        """The tutorial's flow numbers whose n_packets grew."""
        return tuple(sorted(k for k, key in self.flow_key.items()
                            if after.get(key, (0, 0))[0] != before.get(key, (0, 0))[0]))


def build(sw):
    """The tutorial's "Sample Topology", its commands in its order."""
    tb = sw.tb
    left, right = tb.ns("left"), tb.ns("right")
    # $ ip netns add left / right (named with the test's prefix; the test's
    # helper also sets lo up and IPv6 off, which keeps the namespaces quiet).
    tb.add_ns("left")
    tb.add_ns("right")
    # IPv6 off for the veths made below too (they take the default).
    tb.x("sw", "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
    sw.sh("ip", "link", "add", "veth_l0", "type", "veth", "peer", "name", "veth_l1")
    sw.sh("ip", "link", "set", "veth_l1", "netns", left)
    sw.sh("ip", "link", "add", "veth_r0", "type", "veth", "peer", "name", "veth_r1")
    sw.sh("ip", "link", "set", "veth_r1", "netns", right)
    # $ ovs-vsctl add-br br0 (Open vSwitch's in its userspace datapath: no
    # kernel module here; sluice's as the tutorial types it).
    netdev = ["--", "set", "bridge", "br0", "datapath_type=netdev"] if sw.userspace_ovs else []
    sw.sh("ovs-vsctl", "--timeout=20", "add-br", "br0", *netdev)
    sw.sh("ovs-vsctl", "--timeout=20", "add-port", "br0", "veth_l0")
    sw.sh("ovs-vsctl", "--timeout=20", "add-port", "br0", "veth_r0")
    # Not in the tutorial: the links up, and lo (its note for scapy).
    for ns, dev in (("left", "veth_l1"), ("right", "veth_r1")):
        tb.x(ns, "ip", "link", "set", dev, "up")
        tb.x(ns, "ip", "link", "set", "lo", "up")
    for dev in ("veth_l0", "veth_r0"):
        tb.x("sw", "ip", "link", "set", dev, "up")

    def ports_ready():
        show = sw.sh("ovs-ofctl", "show", "br0", check=False).stdout
        up = all(tb.x("sw", "cat", f"/sys/class/net/{d}/operstate").stdout.strip() == "up"
                 for d in ("veth_l0", "veth_r0"))
        return up and "(veth_l0)" in show and "(veth_r0)" in show

    wait_until(15, f"{sw.name}: veth_l0 and veth_r0 up on br0", ports_ready, every=0.1)
    # The two scapy sessions.
    sw.scapy = {L: Scapy(tb, "left"), R: Scapy(tb, "right")}


def test_ovs_conntrack_tutorial_as_open_vswitch(need, make_testbed, sluice, ovs, tmp_path):
    """The conntrack tutorial, step by step, on Open vSwitch (userspace
    datapath) and on sluice --ovs: after every segment the same
    dump-conntrack line for 192.168.0.2, the same timeout (-s) and the
    same flow counters; each segment hits the flows the tutorial names."""
    need("ovs-ofctl", "openvswitch-common")
    need("ovs-appctl", "openvswitch-common")
    for net in ("192.168.0", "10.0.0"):
        check_subnet(net)
    tbs = {"Open vSwitch": make_testbed(hosts=0), "sluice": make_testbed(hosts=0)}
    for tb in tbs.values():
        tb.add_ns("sw")

    # Open vSwitch, its run directory private; ovs-vsctl, ovs-ofctl and
    # ovs-appctl find it through OVS_RUNDIR (and its pidfile).
    o = ovs.start(tb=tbs["Open vSwitch"])
    ref = Switch("Open vSwitch", tbs["Open vSwitch"], o.env)
    # sluice --ovs, standing in for ovs-vswitchd in its own run directory.
    rd = tmp_path / "sluicerun"
    rd.mkdir()
    senv = {"OVS_RUNDIR": str(rd), "OVS_DBDIR": str(rd)}
    s = sluice.start("--ovs", "--no-local", tb=tbs["sluice"], env=senv)
    sut = Switch("sluice", tbs["sluice"], {**os.environ, **senv})
    assert s.alive()
    switches = (ref, sut)
    for sw in switches:
        build(sw)

    problems = []

    def compare(label, a, b):
        if a != b:
            problems.append(f"{label}:\n  Open vSwitch: {a}\n  sluice:       {b}")

    def flows_differ(a, b):
        keys = sorted(set(a) | set(b))
        return [f"    {k}: Open vSwitch {a.get(k)}, sluice {b.get(k)}" for k in keys if a.get(k) != b.get(k)]

    for step in COURSE:
        if step[0] == "flow":
            n = step[1]
            for sw in switches:
                before = set(sw.flows())
                p = sw.sh("ovs-ofctl", "add-flow", "br0", FLOWS[n], check=False)
                new = set(sw.flows()) - before
                if p.returncode != 0 or len(new) != 1:
                    problems.append(f"{sw.name}: flow #{n} ({FLOWS[n]}): rc={p.returncode} {p.stderr.strip()}, "
                                    f"new lines {sorted(new)}")
                    continue
                sw.flow_key[n] = new.pop()
            if n in ref.flow_key and n in sut.flow_key:
                compare(f"flow #{n} as dump-flows prints it", ref.flow_key[n], sut.flow_key[n])
            continue

        _, side, line, what, hit, shown = step
        # Open vSwitch first: the segment is through once the two flows
        # the tutorial names have counted it.
        before = ref.flows()
        ref.scapy[side].do(line)
        try:
            wait_until(5, f"Open vSwitch to count the {what} on flows {hit}",
                       lambda: ref.hits(before, ref.flows()) == hit)
        except WaitTimeout as e:
            problems.append(f"{what}: {e}; it hit {ref.hits(before, ref.flows())}")
        want_flows, want_ct = ref.flows(), ref.conntrack()
        want_to = ref.timeouts()  # read at once: it counts down
        if shown is not None:
            # The tutorial's own line, where the userspace datapath names
            # the state as the kernel does.
            if want_ct != [TUTORIAL_ENTRY.format(KERNEL_ONLY.get(shown, shown))]:
                problems.append(f"after the {what}, Open vSwitch lists {want_ct}, "
                                f"the tutorial {TUTORIAL_ENTRY.format(shown)}")
        # Then sluice: through once its counters are Open vSwitch's, and the
        # entry then must be the same.
        sbefore = sut.flows()
        sut.scapy[side].do(line)
        try:
            wait_until(5, f"sluice to count the {what} as Open vSwitch did",
                       lambda: sut.flows() == want_flows and sut.conntrack() == want_ct)
        except WaitTimeout:
            pass
        got_flows, got_ct = sut.flows(), sut.conntrack()
        compare(f"after the {what}: dpctl/dump-conntrack | grep 192.168.0.2", want_ct, got_ct)
        diff = flows_differ(want_flows, got_flows)
        if diff:
            problems.append(f"after the {what}: flow counters differ (sluice's {what} hit flows "
                            f"{sut.hits(sbefore, got_flows)}):\n" + "\n".join(diff))
        got_to = sut.timeouts()
        for sw, got, full in ((ref, want_to, TIMEOUTS[what][0]), (sut, got_to, TIMEOUTS[what][1])):
            if len(got) != 1 or not full - TIMEOUT_SLACK <= got[0] <= full:
                problems.append(f"after the {what}: {sw.name}'s dpctl/dump-conntrack -s timeout is {got}, "
                                f"not {full} s (less at most {TIMEOUT_SLACK})")

    assert s.alive(), "sluice died"
    assert not problems, "\n\n".join(problems)
