"""Connection tracking: Open vSwitch's ct(...)/nat(...) flows with real
traffic between hosts in namespaces, through sluice and, as a peer, through
Open vSwitch 3.1's userspace datapath (its own conntrack) with the same
flows and the same traffic.

Each scenario (SCENARIOS[name](ct, kind), kind "sluice" or "ovs") builds its
testbed, starts the switch, adds its flows and runs its cases. A case is
named, has an expected verdict (pass or drop) and a measured one. Waits for a
drop are short (a connect or a ping bounded at about 1 s) and a pass returns
as soon as the exchange is done."""
import os
import re
import time

import pytest

from lab import NET, SCRIPTS, Ovs, check_subnet, metric, run, scrape, wait_until

NET2 = os.environ.get("CT_NET2", "10.213.78")  # the SNAT gateway's outside
GWMAC = "02:00:00:00:00:fe"
CTT = str(SCRIPTS / "cttraffic.py")


def ct_mac(n):
    return f"02:00:00:00:00:{n:02x}"


class Ct:
    """One scenario run: its testbed, its switch (sluice or Open vSwitch),
    and the cases it recorded as (name, expected, got)."""

    def __init__(self, make_testbed, sluice, tmp_path, kind, results):
        self.make_testbed, self.sluice, self.tmp = make_testbed, sluice, tmp_path
        self.kind = kind
        self.results = results
        self.tb = None
        self.s = None
        self.o = None
        self.last = ""

    # The testbed and the switch.
    def testbed(self, hosts=2):
        self.tb = self.make_testbed(hosts=hosts)
        return self.tb

    def host_mac(self, i, mac):
        self.tb.x(f"h{i}", "ip", "link", "set", "dev", "eth0", "address", mac)

    def switch_up(self, n, flows):
        f = self.tmp / f"{self.tb.p}-{self.kind}.flows"
        f.write_text(flows)
        if self.kind == "sluice":
            args = [a for i in range(1, n + 1) for a in ("--port", f"p{i}")]
            self.s = self.sluice.start(*args, "--fail-mode", "secure", tb=self.tb)
            p = self.s.ctl("add-flows", "br0", f, check=False)
            assert p.returncode == 0, f"sluice-ctl add-flows refused the flows: {p.stderr}"
            return
        d = self.tmp / f"{self.tb.p}-ovs"
        d.mkdir()
        self.o = Ovs(self.tb.ns("sw"), d).start()
        args = ["add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "fail-mode=secure", "protocols=OpenFlow13"]
        for i in range(1, n + 1):
            args += ["--", "add-port", "br0", f"p{i}", "--", "set", "interface", f"p{i}", f"ofport_request={i}"]
        self.o.vsctl(*args)
        wait_until(10, f"Open vSwitch's ports 1 to {n}",
                   lambda: f" {n}(p{n})" in run(["ovs-ofctl", "-O", "OpenFlow13", "show", self.o.mgmt()], check=False).stdout)
        p = run(["ovs-ofctl", "-O", "OpenFlow13", "add-flows", self.o.mgmt(), f], check=False)
        assert p.returncode == 0, f"ovs-ofctl add-flows refused the flows: {p.stderr}"

    def del_flows(self, match):
        if self.kind == "ovs":
            run(["ovs-ofctl", "-O", "OpenFlow13", "del-flows", self.o.mgmt(), match])
        else:
            self.s.ctl("del-flows", "br0", match)

    def conns(self):
        """The connections the switch's tracker lists, as ovs-appctl
        dpctl/dump-conntrack prints them."""
        if self.kind == "ovs":
            return self.o.appctl("dpctl/dump-conntrack", check=False).stdout
        return self.s.ctl("dump-conntrack", "br0", check=False).stdout

    def lists(self, pattern):
        return re.search(pattern, self.conns(), re.M) is not None

    def down(self):
        if self.o:
            self.o.stop()
        if self.s:
            self.s.stop()
        if self.tb:
            self.tb.down()

    # Traffic.
    def serve(self, h, log, *ports):
        """The TCP echo server in h (bounded at 120 s), listening on every
        port on return."""
        log.write_text("")
        self.tb.bg(h, "timeout", "120", "python3", CTT, "serve", log, *ports)
        for port in ports:
            wait_until(5, f"the echo server in {h} to listen on {port}", lambda: self.tb.tcp_listening(h, port))

    def tcp(self, frm, ip, port, secs, sport=None):
        p = self.tb.x(frm, "python3", CTT, "connect", ip, port, secs, *([sport] if sport else []), check=False)
        self.last = p.stdout.strip()
        return p.returncode == 0

    def ping(self, frm, ip, secs):
        return self.tb.x(frm, "ping", "-c", "2", "-i", "0.2", "-W", secs, "-q", ip, check=False).returncode == 0

    def refused(self, frm, ip, port, secs):
        return self.tb.x(frm, "python3", CTT, "refused", ip, port, secs, check=False).returncode == 0

    def stray(self, frm, to, smac, dmac, sip, dip, dport):
        """An unsolicited SYN-ACK (+inv in a tracker) from frm; true if `to`
        received it within 1 s."""
        got = self.tmp / "stray.count"
        w = self.tb.bg(to, "python3", CTT, "sniff", "eth0", "1.2", dport, stdout=got)
        self.tb.listening(w, f"{to}'s TCP listener")
        self.tb.x(frm, "python3", CTT, "stray", "eth0", smac, dmac, sip, dip, dport)
        w.wait(10)
        return int(got.read_text().strip() or 0) > 0

    def case(self, name, want, got):
        """Records a case: got is true if the traffic passed."""
        got = "pass" if got else "drop"
        self.results.append((name, want, got))
        if got != want:
            print(f"{self.kind}: {name}: {got}, expected {want}")


def scn_tutorial(ct):
    """The conntrack tutorial's firewall (Open vSwitch's "Connection
    Tracking" tutorial): h1 on port 1 may open connections to h2 on port 2,
    whose replies pass; h2 may not open any."""
    tb = ct.testbed()
    A = NET
    ct.switch_up(2, """\
table=0,priority=1,actions=drop
table=0,priority=10,arp,actions=normal
table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1)
table=1,in_port=1,ip,ct_state=+trk+new,actions=ct(commit),output:2
table=1,in_port=1,ip,ct_state=+trk+est,actions=output:2
table=1,in_port=2,ip,ct_state=+trk+new,actions=drop
table=1,in_port=2,ip,ct_state=+trk+est,actions=output:1
""")
    log1, log2 = ct.tmp / f"{tb.p}-log1", ct.tmp / f"{tb.p}-log2"
    ct.serve("h2", log2, 8080)
    ct.serve("h1", log1, 8080)
    ct.case("tutorial: TCP h1 -> h2:8080 (new from the left)", "pass", ct.tcp("h1", f"{A}.2", 8080, 3))
    ct.case("tutorial: h2 sees h1's own address", "pass", re.search(f"^{A}.1 ", log2.read_text(), re.M))
    ct.case("tutorial: ping h1 -> h2", "pass", ct.ping("h1", f"{A}.2", 2))
    ct.case("tutorial: the tracker lists h1 -> h2:8080", "pass",
            ct.lists(rf"^tcp,orig=\(src={A}.1,dst={A}.2,sport=[0-9]+,dport=8080\),reply=\(src={A}.2,dst={A}.1,sport=8080,"))
    ct.case("tutorial: TCP h2 -> h1:8080 (new from the right)", "drop", ct.tcp("h2", f"{A}.1", 8080, 1))
    ct.case("tutorial: ping h2 -> h1", "drop", ct.ping("h2", f"{A}.1", 1))
    ct.case("tutorial: a connection reached h1", "drop", log1.read_text() != "")
    ct.case("tutorial: UDP h1 -> h2:9, its port unreachable back (+rel: no flow)", "drop", ct.refused("h1", f"{A}.2", 9, 1))


# Neutron's OVS firewall driver (neutron/agent/linux/openvswitch_firewall,
# the flows of its devref, in tests/corpus/neutron.flows): two ports of one
# network (local VLAN 0x284, which is also the conntrack zone, kept in reg6;
# the port's ofport in reg5), both in one security group: egress of any IPv4
# allowed, ingress TCP 22 and ICMP allowed. Tables as the driver's (60
# transient, 71/72/73 egress base/rules/accept-or-ingress, 81/82 ingress
# base/rules, 91/92 accepted, 93 dropped, 94 normal); the rules' priorities
# are the driver's (70 + its flow_priority_offset: 74 any protocol, 75 ICMP,
# 77 TCP with ports, without a remote group). Adapted: the ports' MACs are
# the devref's, their IPv4 addresses the testbed's; no IPv6 (off on the
# testbed), no tunnel port 3 (its table-94 flows left out) and no strip_vlan
# (the devref's ingress outputs strip br-int's local VLAN tag, which a
# port-to-port path on one bridge never carries, and which Open vSwitch
# refuses under OpenFlow 1.3 on an untagged match); `ip` in the ct(commit)
# flows of tables 72, 73 and 82 (the driver installs them once per
# ethertype; the devref prints them without, and Open vSwitch refuses a ct
# without ip or ipv6 in the match).
NMAC = {1: "fa:16:3e:a4:22:10", 2: "fa:16:3e:24:57:c7"}

NEUTRON_PORT = """\
table=60,priority=100,in_port={p},actions=load:0x{p}->NXM_NX_REG5[],load:0x284->NXM_NX_REG6[],resubmit(,71)
table=71,priority=95,arp,reg5=0x{p},in_port={p},dl_src={mac},arp_spa={ip},actions=resubmit(,94)
table=71,priority=80,udp,reg5=0x{p},in_port={p},tp_src=68,tp_dst=67,actions=resubmit(,73)
table=71,priority=70,udp,reg5=0x{p},in_port={p},tp_src=67,tp_dst=68,actions=resubmit(,93)
table=71,priority=65,ip,reg5=0x{p},in_port={p},dl_src={mac},nw_src={ip},actions=ct(table=72,zone=NXM_NX_REG6[0..15])
table=71,priority=10,reg5=0x{p},in_port={p},actions=resubmit(,93)
table=72,priority=74,ct_state=+est-rel-rpl,ip,reg5=0x{p},actions=resubmit(,73)
table=72,priority=74,ct_state=+new-est,ip,reg5=0x{p},actions=resubmit(,73)
table=72,priority=50,ct_mark=0x1,reg5=0x{p},actions=resubmit(,93)
table=72,priority=50,ct_state=+est-rel+rpl,ct_zone=644,ct_mark=0,reg5=0x{p},actions=resubmit(,94)
table=72,priority=50,ct_state=-new-est+rel-inv,ct_zone=644,ct_mark=0,reg5=0x{p},actions=resubmit(,94)
table=72,priority=40,ct_state=-est,reg5=0x{p},actions=resubmit(,93)
table=72,priority=40,ct_state=+est,ip,reg5=0x{p},actions=ct(commit,zone=NXM_NX_REG6[0..15],exec(load:0x1->NXM_NX_CT_MARK[]))
table=73,priority=100,reg6=0x284,dl_dst={mac},actions=load:0x{p}->NXM_NX_REG5[],resubmit(,81)
table=73,priority=90,ct_state=+new-est,ip,reg5=0x{p},actions=ct(commit,zone=NXM_NX_REG6[0..15]),resubmit(,91)
table=73,priority=80,reg5=0x{p},actions=resubmit(,94)
table=81,priority=100,arp,reg5=0x{p},actions=output:{p}
table=81,priority=95,udp,reg5=0x{p},tp_src=67,tp_dst=68,actions=output:{p}
table=81,priority=90,ct_state=-trk,ip,reg5=0x{p},actions=ct(table=82,zone=NXM_NX_REG6[0..15])
table=81,priority=80,ct_state=+trk,reg5=0x{p},actions=resubmit(,82)
table=82,priority=77,ct_state=+est-rel-rpl,tcp,reg5=0x{p},tp_dst=22,actions=output:{p}
table=82,priority=77,ct_state=+new-est,tcp,reg5=0x{p},tp_dst=22,actions=ct(commit,zone=NXM_NX_REG6[0..15]),output:{p},resubmit(,92)
table=82,priority=75,ct_state=+est-rel-rpl,icmp,reg5=0x{p},actions=output:{p}
table=82,priority=75,ct_state=+new-est,icmp,reg5=0x{p},actions=ct(commit,zone=NXM_NX_REG6[0..15]),output:{p},resubmit(,92)
table=82,priority=50,ct_mark=0x1,reg5=0x{p},actions=resubmit(,93)
table=82,priority=50,ct_state=+est-rel+rpl,ct_zone=644,ct_mark=0,reg5=0x{p},actions=output:{p}
table=82,priority=50,ct_state=-new-est+rel-inv,ct_zone=644,ct_mark=0,reg5=0x{p},actions=output:{p}
table=82,priority=40,ct_state=-est,reg5=0x{p},actions=resubmit(,93)
table=82,priority=40,ct_state=+est,ip,reg5=0x{p},actions=ct(commit,zone=NXM_NX_REG6[0..15],exec(load:0x1->NXM_NX_CT_MARK[]))
table=94,priority=12,reg6=0x284,dl_dst={mac},actions=output:{p}
"""

NEUTRON_COMMON = """\
table=60,priority=0,actions=NORMAL
table=71,priority=110,ct_state=+trk,actions=ct_clear,resubmit(,71)
table=71,priority=0,actions=drop
table=72,priority=50,ct_state=+inv+trk,actions=resubmit(,93)
table=72,priority=0,actions=drop
table=73,priority=0,actions=drop
table=81,priority=0,actions=drop
table=82,priority=50,ct_state=+inv+trk,actions=resubmit(,93)
table=82,priority=0,actions=drop
table=91,priority=1,actions=resubmit(,94)
table=92,priority=0,actions=drop
table=93,priority=0,actions=drop
table=94,priority=1,actions=NORMAL
"""


def neutron_flows():
    return ("table=0,priority=0,actions=resubmit(,60)\n"
            + "".join(NEUTRON_PORT.format(p=p, mac=NMAC[p], ip=f"{NET}.{p}") for p in (1, 2))
            + NEUTRON_COMMON)


def scn_neutron(ct):
    tb = ct.testbed()
    A = NET
    ct.host_mac(1, NMAC[1])
    ct.host_mac(2, NMAC[2])
    ct.switch_up(2, neutron_flows())
    log1, log2 = ct.tmp / f"{tb.p}-log1", ct.tmp / f"{tb.p}-log2"
    ct.serve("h2", log2, 22, 8080)
    ct.serve("h1", log1, 22, 8080)
    ct.case("neutron: ping h1 -> h2 (ingress ICMP)", "pass", ct.ping("h1", f"{A}.2", 2))
    ct.case("neutron: TCP h1 -> h2:22 (ingress SSH)", "pass", ct.tcp("h1", f"{A}.2", 22, 3))
    ct.case("neutron: TCP h2 -> h1:22 (the other way)", "pass", ct.tcp("h2", f"{A}.1", 22, 3))
    ct.case("neutron: the tracker lists h1 -> h2:22 in zone 644", "pass",
            ct.lists(rf"^tcp,orig=\(src={A}.1,dst={A}.2,sport=[0-9]+,dport=22\),.*zone=644"))
    ct.case("neutron: TCP h1 -> h2:8080 (no ingress rule)", "drop", ct.tcp("h1", f"{A}.2", 8080, 1))
    ct.case("neutron: TCP h2 -> h1:8080 (no ingress rule)", "drop", ct.tcp("h2", f"{A}.1", 8080, 1))
    ct.case("neutron: a connection to 8080 reached h1 or h2", "drop",
            re.search(" 8080$", log1.read_text() + log2.read_text(), re.M))
    ct.case("neutron: unsolicited SYN-ACK h1 -> h2:22 (+inv)", "drop",
            ct.stray("h1", "h2", NMAC[1], NMAC[2], f"{A}.1", f"{A}.2", 22))
    # A rule taken away, as Neutron does it: its flows deleted; the
    # connections it allowed are then marked (ct_mark=1, the +est flow's
    # commit) and dropped from then on.
    flag = ct.tmp / f"{tb.p}-{ct.kind}-flag"
    out = ct.tmp / f"{tb.p}-{ct.kind}-flag.out"
    cw = tb.bg("h1", "python3", CTT, "twice", f"{A}.2", 22, 1, flag, stdout=out)
    wait_until(5, "h1's first exchange on a held SSH connection", lambda: os.path.exists(f"{flag}.ready"))
    ct.del_flows("table=82,tcp,reg5=0x2,tp_dst=22")
    open(f"{flag}.go", "w").close()
    cw.wait(30)
    text = out.read_text()
    ct.case("neutron: a held SSH connection, first exchange", "pass", re.search("^first ok", text, re.M))
    ct.case("neutron: the same after its rule is deleted (ct_mark=1)", "drop", "second ok" in text)
    ct.case("neutron: the tracker lists it with mark=1", "pass",
            ct.lists(rf"^tcp,orig=\(src={A}.1,dst={A}.2,sport=[0-9]+,dport=22\),.*zone=644,mark=1,"))


def scn_snat(ct):
    """A SNAT gateway: h1, h2, h3 (default route through a gateway MAC
    nobody has) reach h4, the outside server (NET2.4), through the switch,
    which translates their source to NET2.1 (nat(src=...) without a port
    range: each source port kept while free, else another) and routes (MAC
    rewrites); the replies go back through ct(nat) to each host, and so do
    ICMP errors related to a connection (their quoted packet translated
    back too). All three connect from the same source port."""
    tb = ct.testbed(hosts=4)
    A, B = NET, NET2
    check_subnet(B)
    for i in (1, 2, 3, 4):
        ct.host_mac(i, ct_mac(i))
    for i in (1, 2, 3):
        tb.x(f"h{i}", "ip", "neigh", "replace", f"{A}.254", "lladdr", GWMAC, "dev", "eth0", "nud", "permanent")
        tb.x(f"h{i}", "ip", "route", "add", "default", "via", f"{A}.254")
    tb.x("h4", "ip", "addr", "flush", "dev", "eth0")
    tb.x("h4", "ip", "addr", "add", f"{B}.4/24", "dev", "eth0")
    tb.x("h4", "ip", "neigh", "replace", f"{B}.1", "lladdr", GWMAC, "dev", "eth0", "nud", "permanent")
    tb.x("h4", "ip", "route", "add", f"{A}.0/24", "via", f"{B}.1")
    flows = [f"table=0,priority=10,ip,nw_src={A}.0/24,nw_dst={B}.0/24,actions=ct(commit,zone=5,nat(src={B}.1)),"
             f"set_field:{GWMAC}->eth_src,set_field:{ct_mac(4)}->eth_dst,output:4",
             f"table=0,priority=10,ip,in_port=4,nw_dst={B}.1,ct_state=-trk,actions=ct(zone=5,nat,table=1)"]
    for i in (1, 2, 3):
        for st in ("+trk+est", "+trk+rel"):
            flows.append(f"table=1,priority=10,ip,ct_state={st},nw_dst={A}.{i},"
                         f"actions=set_field:{GWMAC}->eth_src,set_field:{ct_mac(i)}->eth_dst,output:{i}")
    flows.append("table=0,priority=0,actions=drop")
    ct.switch_up(4, "\n".join(flows) + "\n")
    log = ct.tmp / f"{tb.p}-{ct.kind}-log"
    ct.serve("h4", log, 8080)
    for i in (1, 2, 3):
        ct.case(f"snat: TCP h{i} -> outside:8080 from port 33333", "pass", ct.tcp(f"h{i}", f"{B}.4", 8080, 3, 33333))
        ct.case(f"snat: ping h{i} -> outside", "pass", ct.ping(f"h{i}", f"{B}.4", 2))
    ct.case("snat: UDP h2 -> outside:9, its port unreachable back (+rel, inner packet translated)", "pass",
            ct.refused("h2", f"{B}.4", 9, 2))
    rows = [l.split() for l in log.read_text().splitlines()]
    ct.case(f"snat: the server saw 3 connections, all from {B}.1", "pass",
            len(rows) == 3 and all(r[0] == f"{B}.1" for r in rows))
    ct.case("snat: the first host's port kept (33333)", "pass", [f"{B}.1", "33333", "8080"] in rows)
    ct.case("snat: from 3 different ports", "pass", len({r[1] for r in rows}) == 3)
    ct.case("snat: the tracker lists h1's connection translated", "pass",
            ct.lists(rf"^tcp,orig=\(src={A}.1,dst={B}.4,sport=33333,dport=8080\),reply=\(src={B}.4,dst={B}.1,sport=8080,"))
    ct.case("snat: outside -> h1 directly", "drop", ct.ping("h4", f"{A}.1", 1))


def scn_dnat(ct):
    """A DNAT port forward: h1 connects to VIP:80 (NET.100, whose MAC h1 has
    statically as h2's); the switch translates to h2:8080 (the backend),
    and the replies back to VIP:80."""
    tb = ct.testbed()
    A = NET
    ct.host_mac(1, ct_mac(1))
    ct.host_mac(2, ct_mac(2))
    tb.x("h1", "ip", "neigh", "replace", f"{A}.100", "lladdr", ct_mac(2), "dev", "eth0", "nud", "permanent")
    ct.switch_up(2, f"""\
table=0,priority=20,tcp,in_port=1,nw_dst={A}.100,tp_dst=80,actions=ct(commit,zone=2,nat(dst={A}.2:8080)),output:2
table=0,priority=20,tcp,in_port=2,ct_state=-trk,actions=ct(zone=2,nat,table=2)
table=2,priority=10,tcp,ct_state=+trk+est,actions=output:1
table=0,priority=10,arp,actions=NORMAL
table=0,priority=0,actions=drop
""")
    log = ct.tmp / f"{tb.p}-{ct.kind}-log"
    ct.serve("h2", log, 8080)
    ct.case("dnat: TCP h1 -> VIP:80", "pass", ct.tcp("h1", f"{A}.100", 80, 3))
    ct.case("dnat: h1's peer is VIP:80", "pass", re.fullmatch(rf"ok {A}\.1:\S* {A}\.100:80", ct.last))
    ct.case("dnat: the backend saw h1 on 8080", "pass", re.search(rf"^{A}\.1 [0-9]* 8080$", log.read_text(), re.M))
    ct.case("dnat: TCP h1 -> h2:8080 directly", "drop", ct.tcp("h1", f"{A}.2", 8080, 1))


SCENARIOS = {"tutorial": scn_tutorial, "neutron": scn_neutron, "snat": scn_snat, "dnat": scn_dnat}


@pytest.fixture
def run_scenario(make_testbed, sluice, tmp_path):
    """run_scenario(name, kind): the cases of one scenario run, as
    (name, expected, got); its testbed and switch gone on return."""

    def go(name, kind):
        results = []
        ct = Ct(make_testbed, sluice, tmp_path, kind, results)
        try:
            SCENARIOS[name](ct)
        finally:
            ct.down()
        return results

    return go


def _all_as_expected(results):
    assert results, "no case ran"
    wrong = [f"{n}: {g}, expected {w}" for n, w, g in results if g != w]
    assert not wrong, "\n".join(wrong)


def test_ct_tutorial_firewall(run_scenario):
    """conntrack: the OVS conntrack tutorial's firewall (TCP and ping open
    from the left only, replies pass, dump-conntrack lists the connection)."""
    _all_as_expected(run_scenario("tutorial", "sluice"))


def test_ct_neutron_firewall(run_scenario):
    """conntrack: Neutron's OVS firewall flows for two ports (egress any,
    ingress SSH and ICMP, zone from reg6, other TCP and +inv dropped)."""
    _all_as_expected(run_scenario("neutron", "sluice"))


def test_ct_snat_gateway(run_scenario):
    """conntrack: a SNAT gateway (three hosts behind one address, TCP from
    one source port and ping, each reply to its host)."""
    _all_as_expected(run_scenario("snat", "sluice"))


def test_ct_dnat_port_forward(run_scenario):
    """conntrack: a DNAT port forward (VIP:80 to backend:8080, replies from
    VIP:80)."""
    _all_as_expected(run_scenario("dnat", "sluice"))


def test_ct_open_vswitch_peer(run_scenario, need):
    """conntrack: the same flows and traffic through Open vSwitch 3.1's
    userspace conntrack and through sluice pass or drop the same (tutorial,
    Neutron, SNAT, DNAT): a table of every case."""
    need("ovs-vswitchd", "openvswitch-switch")
    need("ovs-ofctl", "openvswitch-common")
    rows_s, rows_o = [], []
    for name in SCENARIOS:
        rows_s += run_scenario(name, "sluice")
        rows_o += run_scenario(name, "ovs")
    so = {n: g for n, _, g in rows_s}
    oo = {n: g for n, _, g in rows_o}
    names = [n for n, _, _ in rows_s] + [n for n, _, _ in rows_o if n not in so]
    w = max(len(n) for n in names)
    print(f"{'case':<{w}}  sluice  Open vSwitch")
    same = 0
    for n in names:
        a, b = so.get(n, "-"), oo.get(n, "-")
        same += a == b
        print(f"{n:<{w}}  {a:<6}  {b}" + ("" if a == b else "  <- differs"))
    print(f"{same} of {len(names)} cases the same")
    assert same == len(names), f"{len(names) - same} cases differ (the table above)"


FLOOD_LIMIT = 64  # the tracker's limit in the SYN flood test (ct-set-maxconns)
FLOOD_METRICS = 9481


def test_ct_syn_flood_keeps_admitting(make_testbed, sluice, tmp_path):
    """conntrack: a SYN flood from h1 (spoofed sources nobody answers for)
    fills a table of 64 connections; during the flood a new TCP connection
    from h3 gets through (early drop evicts an unassured SYN_SENT entry),
    and a connection h3 established before the flood keeps working. The
    flood runs at most 60 s and is stopped as soon as the checks are done."""
    tb = make_testbed(hosts=3)
    A = NET
    s = sluice.start("--port", "p1", "--port", "p2", "--port", "p3", "--fail-mode", "secure",
                     "--metrics", f"127.0.0.1:{FLOOD_METRICS}", tb=tb)
    flows = tmp_path / "flood.flows"
    # The tutorial's firewall, with h1 and h3 on the left: new connections
    # only from the left, committed; established ones both ways.
    flows.write_text("""\
table=0,priority=1,actions=drop
table=0,priority=10,arp,actions=normal
table=0,priority=100,ip,ct_state=-trk,actions=ct(table=1)
table=1,in_port=1,ip,ct_state=+trk+new,actions=ct(commit),output:2
table=1,in_port=3,ip,ct_state=+trk+new,actions=ct(commit),output:2
table=1,in_port=2,ip,ct_state=+trk+new,actions=drop
table=1,ip,ct_state=+trk+est,actions=normal
""")
    assert s.ctl("add-flows", "br0", flows, check=False).returncode == 0
    s.ctl("ct-set-maxconns", "br0", FLOOD_LIMIT)
    nconns = lambda: int(s.ctl("ct-get-nconns", "br0").stdout.strip())
    log = tmp_path / "flood-serve.log"
    log.write_text("")
    tb.bg("h2", "timeout", "120", "python3", CTT, "serve", log, 7000, 7001)
    for port in (7000, 7001):
        wait_until(5, f"h2 listening on {port}", lambda: tb.tcp_listening("h2", port))

    # Established before the flood: one exchange, then it waits for FLAG.go.
    flag = str(tmp_path / "before")
    before = tb.bg("h3", "python3", CTT, "twice", f"{A}.2", 7000, 5, flag, stdout=tmp_path / "before.out")
    wait_until(10, "the connection made before the flood", lambda: os.path.exists(flag + ".ready"))

    stop = tmp_path / "flood.stop"
    flood = tb.bg("h1", "python3", CTT, "synflood", "eth0", tb.mac("h1"), tb.mac("h2"), A, f"{A}.2", 7002, 60, stop,
                  stdout=tmp_path / "flood.out")
    try:
        wait_until(20, f"the flood to fill the table ({FLOOD_LIMIT})", lambda: nconns() >= FLOOD_LIMIT)
        # The flood keeps coming at the full table: 2 000 more of its SYNs
        # (two trips through the tracker each) after it filled.
        packets = lambda: float(metric(scrape(tb, FLOOD_METRICS), 'sluice_conntrack_packets_total{bridge="br0"}') or 0)
        p0 = packets()
        wait_until(20, "2 000 more SYNs of the flood at the full table", lambda: packets() >= p0 + 4000)
        assert flood.poll() is None, "the flood ended early"

        # A new connection from another host, during the flood.
        t0 = time.monotonic()
        p = tb.x("h3", "python3", CTT, "connect", f"{A}.2", 7001, 10, check=False)
        took = time.monotonic() - t0
        assert flood.poll() is None, "the flood ended before the new connection was made"
        print(f"syn flood: new connection from h3 during the flood: {p.stdout.strip()} in {took:.2f} s")
        assert p.returncode == 0, f"no new connection during the flood: {p.stdout.strip()} (after {took:.1f} s)"
        assert nconns() <= FLOOD_LIMIT

        # The connection made before the flood still works.
        open(flag + ".go", "w").close()
        before.wait(30)
        out = (tmp_path / "before.out").read_text().strip()
        assert out == "first ok second ok", f"the connection made before the flood: {out}"

        m = scrape(tb, FLOOD_METRICS)
        early = float(metric(m, 'sluice_conntrack_early_drop_total{bridge="br0"}') or 0)
        refused = float(metric(m, 'sluice_conntrack_refused_total{bridge="br0"}') or 0)
        print(f"syn flood: early drops {early:.0f}, refused {refused:.0f}, connections {nconns()}")
        assert early >= 2000, f"early drops {early}: the flood was not evicting at the full table"
    finally:
        stop.write_text("")
        flood.wait(30)
    print(f"syn flood: {(tmp_path / 'flood.out').read_text().strip()} SYNs sent")


def test_ct_zone_per_port_flood_keeps_metrics_bounded(make_testbed, sluice, tmp_path):
    """metrics: a SYN flood whose every source port is a conntrack zone of
    its own (ct(zone=reg0[0..15]) with reg0 = tcp_src) puts 2 000 zones in
    use; /metrics still has at most 64+1 per-zone series (the default
    --metrics-zones and zone="other") and they sum to the connections."""
    tb = make_testbed(hosts=2)
    A = NET
    s = sluice.start("--port", "p1", "--port", "p2", "--fail-mode", "secure",
                     "--metrics", f"127.0.0.1:{FLOOD_METRICS}", tb=tb)
    flows = tmp_path / "zones.flows"
    flows.write_text("""\
table=0,priority=1,actions=drop
table=0,priority=10,arp,actions=normal
table=0,priority=100,in_port=1,tcp,actions=move:NXM_OF_TCP_SRC[]->NXM_NX_REG0[0..15],ct(commit,zone=NXM_NX_REG0[0..15]),output:2
""")
    assert s.ctl("add-flows", "br0", flows, check=False).returncode == 0
    nconns = lambda: int(s.ctl("ct-get-nconns", "br0").stdout.strip())
    stop = tmp_path / "flood.stop"
    flood = tb.bg("h1", "python3", CTT, "synflood", "eth0", tb.mac("h1"), tb.mac("h2"), A, f"{A}.2", 7002, 60, stop,
                  stdout=tmp_path / "flood.out")
    try:
        wait_until(30, "2 000 connections, each in a zone of its own", lambda: nconns() >= 2000)
    finally:
        stop.write_text("")
        flood.wait(30)
    m = scrape(tb, FLOOD_METRICS)
    series = [line for line in m.splitlines() if line.startswith("sluice_conntrack_zone_connections{")]
    total = float(metric(m, 'sluice_conntrack_connections{bridge="br0"}'))
    in_series = sum(float(line.split()[-1]) for line in series)
    print(f"zone flood: {total:.0f} connections, {len(series)} per-zone series, {len(m.splitlines())} lines in /metrics")
    assert total >= 2000
    assert len(series) <= 65, f"{len(series)} per-zone series for {total:.0f} connections"
    assert in_series == total, f"the per-zone series sum to {in_series}, the connections are {total}"
    assert metric(m, 'sluice_conntrack_zone_connections{bridge="br0",zone="other"}') is not None
