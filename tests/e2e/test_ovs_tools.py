"""Open vSwitch's own tools (ovs-ofctl, ovs-appctl) against sluice, and
sluice-ctl against them."""
import difflib
import json
import os
import re
import socket
import subprocess

from lab import SCRIPTS, run, wait_until

O = ["ovs-ofctl", "-O", "OpenFlow13"]

GROUPS = """\
group_id=1,type=select,bucket=output:1,bucket=weight:5,watch_port:2,actions=output:2,LOCAL
group_id=2,type=all,bucket=actions=output:1,bucket=actions=normal
group_id=3,type=ff,bucket=watch_port:1,actions=output:1,bucket=watch_port:2,actions=output:2
group_id=4,type=indirect,bucket=actions=set_field:10.0.0.9->ip_dst,output:2
"""

# Reserved ports in either case, the default priority, cookies, seven
# tables, the groups, set-field and TTL actions, masks.
FLOWS = """\
in_port=2,actions=normal
priority=10,in_port=1,actions=output:2
table=0,priority=3,in_port=local,actions=output:in_port
cookie=0x6,table=1,priority=7,tcp,tp_dst=80,actions=controller:128,in_port,LOCAL,flood,ALL
table=1,cookie=0x5,priority=0,actions=controller
table=1,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=FLOOD
table=2,priority=3,actions=write_actions(output:1),goto_table:3
table=3,actions=drop
table=3,priority=100,ip,nw_dst=10.0.0.0/8,actions=dec_ttl,set_field:02:00:00:00:00:01->eth_dst,group:1
table=3,priority=90,udp,tp_src=53,actions=push_vlan:0x8100,set_field:4101->vlan_vid,output:1
table=4,priority=5,arp,arp_tpa=10.0.0.1,actions=group:2
table=4,priority=6,cookie=0xff,idle_timeout=300,hard_timeout=600,send_flow_rem,in_port=1,dl_vlan=7,actions=pop_vlan,group:3
table=4,priority=4,ipv6,ipv6_dst=2001:db8::/32,actions=group:4,write_metadata:0x5/0xff,goto_table:5
table=5,priority=2,metadata=0x5/0xff,icmp,icmp_type=8,actions=output:controller,clear_actions
table=5,priority=1,icmp6,icmp_type=135,nd_target=2001:db8::1,actions=set_field:2001:db8::2->nd_target,output:2
table=5,priority=1,tcp6,ipv6_src=2001:db8::/64,tp_dst=22,actions=set_field:1->tcp_dst,set_field:9->ip_dscp,output:1
table=6,priority=2,ip,nw_src=10.1.0.0/16,actions=mod_nw_ttl:7,dec_ttl,output:1
"""


def _both(p):
    return (p.stdout + p.stderr).rstrip("\n")


def test_ovs_ofctl_and_sluice_ctl_agree(need, testbed, sluice, tmp_path, bins):
    """ovs-ofctl and sluice-ctl print the same flows and groups (reserved
    ports, default priority, cookies, 7 tables); diff-flows and
    replace-flows agree. The same flows and groups are installed once with
    each tool; both tools print the same text for them (durations aside),
    and each tool's diff-flows finds the switch equal to the file."""
    need("ovs-ofctl", "openvswitch-common")
    s = sluice.start("--port", "p1", "--port", "p2", "--fail-mode", "secure")
    S = f"unix:{s.run_dir}/br0.mgmt"
    f, g, f2 = tmp_path / "flows.txt", tmp_path / "groups.txt", tmp_path / "flows2.txt"
    f.write_text(FLOWS)
    g.write_text(GROUPS)

    # sluice-ctl with -O after the verb: options go anywhere, as with ovs-ofctl.
    def ctl(*args, check=False):
        return run([bins / "sluice-ctl", *args, "-O", "OpenFlow13"], check=check)

    def ofctl(*args, check=False):
        return run([*O, *args], check=check)

    problems = []

    def same(label, *args):
        """Both tools print the same for args (durations and xids left out:
        given a filter, ovs-ofctl sends other requests first)."""
        args = [S if a == "SW" else a for a in args]

        def strip(p):
            return [re.sub(r"\(xid=0x[0-9a-f]+\)", "(xid=N)", re.sub(r"duration=[0-9.]+s, ", "", l, count=1), count=1)
                    for l in _both(p).splitlines()]

        a, b = strip(ofctl(*args)), strip(ctl(*args))
        if a != b or not a:
            problems.append(f"{label}: {' '.join(args)} differs:\n" + "\n".join(
                difflib.unified_diff(a, b, "ovs-ofctl", "sluice-ctl", lineterm="")))

    for t in ("ovs-ofctl", "sluice-ctl"):
        tool = ofctl if t == "ovs-ofctl" else ctl
        assert tool("add-groups", S, g).returncode == 0 and tool("add-flows", S, f).returncode == 0, f"{t}: add refused"
        n = len(ctl("--no-stats", "dump-flows", S).stdout.splitlines())
        if n != 17:
            problems.append(f"installed by {t}: {n} flows, not 17")
        a = ofctl("dump-flows", S).stdout.split("\n", 1)[0]
        b = ctl("dump-flows", S).stdout.split("\n", 1)[0]
        if not (a == "OFPST_FLOW reply (OF1.3) (xid=0x2):" and b == a):
            problems.append(f"the dump-flows header: {a} / {b}")
        label = f"installed by {t}"
        same(label, "--no-stats", "dump-flows", "SW")
        same(label, "dump-flows", "SW")
        same(label, "dump-flows", "SW", "table=4")
        same(label, "--no-stats", "dump-flows", "SW", "table=3,ip")
        same(label, "--names", "dump-flows", "SW")
        same(label, "--names", "--no-stats", "dump-flows", "SW", "table=4")
        same(label, "--rsort", "dump-flows", "SW", "table=4")
        same(label, "--sort=priority", "dump-flows", "SW", "table=4")
        same(label, "dump-groups", "SW")
        same(label, "dump-aggregate", "SW")
        same(label, "dump-aggregate", "SW", "table=1")
        same(label, "dump-tables", "SW")
        same(label, "dump-ports-desc", "SW")
        same(label, "meter-features", "SW")
        # The switch holds exactly the file's flows, says either tool.
        if ofctl("diff-flows", S, f).returncode != 0:
            problems.append(f"{label}: ovs-ofctl diff-flows")
        if ctl("diff-flows", S, f).returncode != 0:
            problems.append(f"{label}: sluice-ctl diff-flows")
        if t == "ovs-ofctl":
            assert ctl("del-flows", S).returncode == 0 and ctl("del-groups", S).returncode == 0
            assert ctl("--no-stats", "dump-flows", S).stdout == "", "flows left"
    # replace-flows: one flow changed, one gone, one new; ovs-ofctl then
    # finds the switch equal to the new file, and both tools print the
    # same differences from the old one.
    lines = [("priority=10,in_port=1,actions=output:LOCAL" if l == "priority=10,in_port=1,actions=output:2" else l)
             for l in FLOWS.splitlines() if l != "table=3,actions=drop"]
    f2.write_text("\n".join(lines) + "\ntable=6,priority=9,udp,tp_dst=4789,actions=NORMAL\n")
    assert ctl("replace-flows", S, f2).returncode == 0
    if ofctl("diff-flows", S, f2).returncode != 0:
        problems.append("ovs-ofctl diff-flows after replace-flows")
    a = sorted(_both(ofctl("diff-flows", f, S)).splitlines())
    b = sorted(ctl("diff-flows", f, S).stdout.rstrip("\n").splitlines())
    if not (a == b and len(b) == 4):
        problems.append(f"diff-flows: ovs-ofctl said: {a}\nsluice-ctl said: {b}")
    # A version sluice does not speak is refused, with the reason.
    p = run([bins / "sluice-ctl", "-O", "OpenFlow11", "dump-flows", S], check=False)
    if p.returncode == 0 or "does not speak OpenFlow11" not in _both(p):
        problems.append(f"-O OpenFlow11: {_both(p)}")
    assert not problems, "\n".join(problems)


def table_names_cfg(path, tables):
    path.write_text(f'[bridge]\nfail_mode = "secure"\ntables = {tables}\n[[port]]\nname = "p1"\n[[port]]\nname = "p2"\n')


def test_table_names(need, testbed, sluice, tmp_path):
    """table names: from the config, in flows by sluice-ctl and ovs-ofctl
    (table=, resubmit, goto_table, --names), a controller's TABLE_FEATURES
    (mod-table name:), configured names kept, reload."""
    need("ovs-ofctl", "openvswitch-common")
    tb = testbed
    cfg = tmp_path / "sluice.toml"
    table_names_cfg(cfg, '{ 0 = "Classifier", 1 = "Learn", 2 = "Output" }')
    s = sluice.start("--config", cfg)
    C = s.ctl
    S = f"unix:{s.run_dir}/br0.mgmt"
    # Flows by table name, through resubmit and goto_table.
    C("add-flow", "br0", "table=Classifier,priority=10,in_port=p1,actions=resubmit(,Output)")
    C("add-flow", "br0", "table=Classifier,priority=10,in_port=p2,actions=goto_table:Output")
    (tmp_path / "flows").write_text("table=Output,priority=10,in_port=p1,actions=output:p2\n"
                                    "table=Output,priority=10,in_port=p2,actions=output:p1\n")
    C("add-flows", "br0", tmp_path / "flows")
    assert tb.ping_ok("h1", tb.ip(2)), "no ping through the named tables"
    out = C("--names", "--no-stats", "dump-flows", "br0").stdout
    for want in ["table=Classifier, priority=10,in_port=p1 actions=resubmit(,Output)",
                 "table=Classifier, priority=10,in_port=p2 actions=goto_table:Output",
                 "table=Output, priority=10,in_port=p1 actions=output:p2"]:
        assert want in out, f"--names dump-flows lacks: {want}"
    # ovs-ofctl reads the same names from the switch and prints the same.
    a = _both(run([*O, "--names", "--no-stats", "dump-flows", S], check=False))
    assert a == out.rstrip("\n"), "ovs-ofctl --names dump-flows differs:\n" + "\n".join(
        difflib.unified_diff(a.splitlines(), out.splitlines(), lineterm=""))
    assert re.search(r'^  table 0 \("Classifier"\):', run([*O, "dump-table-features", S]).stdout, re.M), \
        "ovs-ofctl dump-table-features: no name"
    assert re.search(r'^  table 2 \("Output"\):', C("dump-table-features", "br0").stdout, re.M), \
        "sluice-ctl dump-table-features: no name"
    # A controller names table 5 (ovs-ofctl's TABLE_FEATURES request) and
    # sluice-ctl adds a flow by it; renaming a configured table is refused.
    assert run([*O, "mod-table", S, "5", "name:Extra"], check=False).returncode == 0, "ovs-ofctl mod-table name: refused"
    run([*O, "add-flow", S, "table=Extra,priority=1,actions=drop"])
    assert "table=Extra, priority=1 actions=drop" in C("--names", "--no-stats", "dump-flows", "br0").stdout, "no flow in table Extra"
    p = run([*O, "mod-table", S, "0", "name:Other"], check=False)
    assert p.returncode != 0, "ovs-ofctl renamed a configured table"
    assert "OFPTFFC_EPERM" in _both(p), f"ovs-ofctl mod-table: {_both(p)}"
    p = C("mod-table", "br0", "Classifier", "name:Other", check=False)
    assert p.returncode != 0, "sluice-ctl renamed a configured table"
    assert "OFPTFFC_EPERM" in _both(p), f"sluice-ctl mod-table: {_both(p)}"
    C("mod-table", "br0", "6", "name:Six")
    # A reload renames Output, drops Learn; Extra and Six, a controller's,
    # stay; the flows follow their tables and traffic still passes.
    table_names_cfg(cfg, '{ 0 = "Classifier", 2 = "Egress" }')
    s.hup_and_wait()
    out = C("--names", "--no-stats", "dump-flows", "br0").stdout
    assert "table=Classifier, priority=10,in_port=p1 actions=resubmit(,Egress)" in out \
        and "table=Egress, priority=10,in_port=p2 actions=output:p1" in out, f"after the reload: {out}"
    names = ",".join(re.findall(r'^  (table [0-9]* \("[^"]*"\))', C("dump-table-features", "br0").stdout, re.M))
    assert names == 'table 0 ("Classifier"),table 2 ("Egress"),table 5 ("Extra"),table 6 ("Six")', f"names after the reload: {names}"
    assert tb.ping_ok("h1", tb.ip(2)), "no ping after the reload"
    # A bad name is refused at reload, naming its key; the names stay.
    table_names_cfg(cfg, '{ 0 = "all" }')
    s.hup_and_wait()
    assert re.search(r"configuration NOT reloaded.*bridge.tables.0", s.log), "bad name not refused"
    assert re.search(r'^  table 2 \("Egress"\)', C("dump-table-features", "br0").stdout, re.M), "names lost by a refused file"


def test_ovs_appctl_against_sluice(need, testbed, sluice, tmp_path):
    """ovs-appctl and ovs-ofctl against sluice --ovs (OVS_RUNDIR)."""
    need("ovs-ofctl", "openvswitch-common")
    tb = testbed
    rd = tmp_path / "ovsrun"
    rd.mkdir()
    env = {"OVS_RUNDIR": str(rd), "OVS_DBDIR": str(rd)}
    ovsenv = {**os.environ, **env}

    def ovs(*cmd, check=True):
        return run(list(cmd), check=check, env=ovsenv)

    # --ovs: the database at RUNDIR/db.sock configures the bridge, as Open
    # vSwitch's does.
    s = sluice.start("--ovs", "--no-local", env=env)
    pid = s.pid
    ovs("ovs-vsctl", "--timeout=20", "add-br", "br0", "--", "add-port", "br0", "p1", "--", "set", "interface", "p1",
        "ofport_request=1", "--", "add-port", "br0", "p2", "--", "set", "interface", "p2", "ofport_request=2")
    pidfile = rd / "ovs-vswitchd.pid"
    assert pidfile.exists() and pidfile.read_text().strip() == str(pid), f"pidfile: {os.listdir(rd)}"
    out = ovs("ovs-appctl", "version").stdout
    assert out.startswith("ovs-vswitchd (sluice) "), f"version: {out}"
    # The MAC table after traffic, as ovs-vswitchd shows it.
    assert tb.ping_ok("h1", tb.ip(2)), "no ping h1 -> h2"
    mac1, mac2 = tb.mac("h1"), tb.mac("h2")
    out = ovs("ovs-appctl", "fdb/show", "br0").stdout
    assert out.split("\n", 1)[0] == " port  VLAN  MAC                Age" \
        and re.search(rf"^ +1 +0  {mac1} +[0-9]+$", out, re.M) and re.search(rf"^ +2 +0  {mac2} +[0-9]+$", out, re.M), f"fdb/show: {out}"
    # ofproto/trace in ovs-vswitchd's shape; NORMAL follows the MAC table.
    out = ovs("ovs-appctl", "ofproto/trace", "br0",
              f"in_port=1,tcp,dl_src={mac1},dl_dst={mac2},nw_src={tb.ip(1)},nw_dst={tb.ip(2)},tp_dst=80").stdout
    assert out.startswith("Flow: tcp,in_port=1,"), f"ofproto/trace's first line: {out}"
    for want in ['bridge("br0")', "-------------", "Datapath actions: 2"]:
        assert want in out.splitlines(), f"ofproto/trace lacks {want}: {out}"
    # A port by name, and the bridge left out (sluice has one).
    p = ovs("ovs-appctl", "ofproto/trace", f"in_port=p2,dl_dst={mac1},dl_type=0x88b5", check=False)
    assert p.returncode == 0 and "Datapath actions: 1" in p.stdout.splitlines(), f"ofproto/trace by name: {_both(p)}"
    # Log levels: listed in ovs-vswitchd's table, set per module.
    out = ovs("ovs-appctl", "vlog/list").stdout
    assert out.split("\n", 1)[0] == "                 console    syslog    file", f"vlog/list: {out}"
    ovs("ovs-appctl", "vlog/set", "datapath:file:dbg")
    out = ovs("ovs-appctl", "vlog/list").stdout
    assert re.search(r"^datapath +DBG +DBG +DBG$", out, re.M), f"vlog/set: {out}"
    # An unknown command: ovs-vswitchd's words, status 2; bad arguments too.
    p = ovs("ovs-appctl", "foo/bar", check=False)
    assert p.returncode == 2 and '"foo/bar" is not a valid command' in _both(p), f"foo/bar ({p.returncode}): {_both(p)}"
    p = ovs("ovs-appctl", "fdb/show", "nobr", check=False)
    assert p.returncode != 0 and "no such bridge" in _both(p).splitlines(), f"fdb/show nobr: {_both(p)}"
    # ...and the connection stays up: a second request on it is answered.
    sk = socket.socket(socket.AF_UNIX)
    sk.settimeout(10)
    sk.connect(str(rd / f"ovs-vswitchd.{pid}.ctl"))
    dec, buf, said = json.JSONDecoder(), "", []
    for i, m in enumerate(["foo/bar", "version"]):
        sk.sendall(json.dumps({"method": m, "params": [], "id": i}).encode())
        while True:
            try:
                reply, end = dec.raw_decode(buf)
                buf = buf[end:]
                break
            except ValueError:
                buf += sk.recv(65536).decode()
        said.append(("error" if reply.get("error") else "ok", reply["id"], (reply.get("result") or "").strip()))
    sk.close()
    assert said[0][:2] == ("error", 0) and said[1][:2] == ("ok", 1) and said[1][2].startswith("ovs-vswitchd (sluice) "), \
        f"one connection: {said}"
    ovs("ovs-appctl", "dpctl/dump-conntrack")
    out = ovs("ovs-appctl", "coverage/show").stdout
    assert re.search(r"^rx_packets +[0-9.]+/sec", out, re.M), f"coverage/show: {out}"
    out = ovs("ovs-appctl", "bridge/dump-flows", "br0").stdout
    assert "priority=0,actions=NORMAL" in out, f"bridge/dump-flows: {out}"
    # ovs-ofctl with no target syntax: RUNDIR/br0.mgmt.
    p = ovs(*O, "dump-flows", "br0", check=False)
    assert p.returncode == 0 and "actions=NORMAL" in p.stdout, f"ovs-ofctl dump-flows: {_both(p)}"
    # exit: answered, then a clean stop (status 0), its files gone.
    ovs("ovs-appctl", "exit")
    wait_until(10, "sluice to stop after ovs-appctl exit", lambda: not s.alive())
    rc = s.stop()
    assert rc == 0, f"sluice exited {rc}"
    assert "exit asked for (unixctl)" in s.log, "no exit line"
    left = os.listdir(rd)
    assert "ovs-vswitchd.pid" not in left and f"ovs-vswitchd.{pid}.ctl" not in left, f"left behind: {left}"


# The shape both switches' datapath commands share, line by line.
DPCTL_SHOW_SHAPE = [r"^\S+@\S+:$", r"^  lookups: hit:\d+ missed:\d+ lost:\d+$", r"^  flows: \d+$",
                    r"^  port \d+: p1$", r"^  port \d+: p2$"]
DPIF_SHOW_SHAPE = [r"^\S+@\S+: hit:\d+ missed:\d+$", r"^  br0:$", r"^    p1 1/\d+: \(system\)$",
                   r"^    p2 2/\d+: \(system\)$"]


def test_ovs_appctl_datapath_commands_beside_open_vswitch(need, testbed, sluice, ovs, tmp_path):
    """dpctl/show, dpif/show and upcall/show against sluice --ovs in the
    layout Open vSwitch (its userspace datapath, same ports) prints them;
    dpctl/dump-flows and dpctl/del-flows an error saying sluice keeps no
    datapath flows."""
    need("ovs-vswitchd", "openvswitch-switch")
    tb = testbed
    rd = tmp_path / "ovsrun"
    rd.mkdir()
    env = {"OVS_RUNDIR": str(rd), "OVS_DBDIR": str(rd)}
    ovsenv = {**os.environ, **env}

    def appctl(*cmd, check=True):
        return run(["ovs-appctl", *cmd], check=check, env=ovsenv)

    def shaped(what, text, shape):
        for want in shape:
            assert re.search(want, text, re.M), f"{what} lacks {want!r}:\n{text}"

    s = sluice.start("--ovs", "--no-local", env=env)
    run(["ovs-vsctl", "--timeout=20", "add-br", "br0", "--", "add-port", "br0", "p1", "--", "set", "interface", "p1",
         "ofport_request=1", "--", "add-port", "br0", "p2", "--", "set", "interface", "p2", "ofport_request=2"],
        env=ovsenv)
    assert tb.ping_ok("h1", tb.ip(2)), "no ping h1 -> h2 through sluice"
    mine = {c: appctl(c).stdout for c in ("dpctl/show", "dpif/show", "upcall/show")}
    shaped("sluice's dpctl/show", mine["dpctl/show"], DPCTL_SHOW_SHAPE)
    shaped("sluice's dpif/show", mine["dpif/show"], DPIF_SHOW_SHAPE)
    # The ping's lookups are counted (the workers publish them each round).
    m = re.search(r"hit:(\d+) missed:(\d+)", mine["dpif/show"])
    assert int(m[1]) + int(m[2]) > 0, f"no lookups counted: {mine['dpif/show']}"
    assert "lost:0" in mine["dpctl/show"] and "  flows: 0\n" in mine["dpctl/show"], mine["dpctl/show"]
    assert mine["upcall/show"].startswith("netdev@br0:\n  no upcalls: ") and "  rules         : 1\n" in mine["upcall/show"], \
        f"upcall/show: {mine['upcall/show']}"
    for c in ("dpctl/dump-flows", "dpctl/del-flows"):
        p = appctl(c, check=False)
        assert p.returncode == 2 and p.stdout == "" and "no datapath flow table" in p.stderr \
            and "ofproto/trace" in p.stderr, f"{c} ({p.returncode}): {_both(p)}"
    assert tb.ping_ok("h1", tb.ip(2)), "no ping after dpctl/del-flows"
    s.stop()
    # The same commands on Open vSwitch, same ports.
    o = ovs.start()
    o.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev",
            "--", "add-port", "br0", "p1", "--", "set", "interface", "p1", "ofport_request=1",
            "--", "add-port", "br0", "p2", "--", "set", "interface", "p2", "ofport_request=2")
    wait_until(10, "Open vSwitch's p1 and p2 in dpif/show",
               lambda: all(f"    p{i} {i}/" in o.appctl("dpif/show", check=False).stdout for i in (1, 2)))
    theirs = {c: o.appctl(c).stdout for c in ("dpctl/show", "dpif/show", "upcall/show")}
    shaped("Open vSwitch's dpctl/show", theirs["dpctl/show"], DPCTL_SHOW_SHAPE)
    shaped("Open vSwitch's dpif/show", theirs["dpif/show"], DPIF_SHOW_SHAPE)
    first = r"^\S+@\S+:$"
    for c in ("dpctl/show", "upcall/show"):
        assert re.match(first, theirs[c].split("\n")[0]) and re.match(first, mine[c].split("\n")[0]), \
            f"{c}'s first lines: {theirs[c]!r} / {mine[c]!r}"


def test_bundles_from_ovs_ofctl_and_sluice_ctl(need, testbed, sluice, tmp_path, bins):
    """bundles from ovs-ofctl --bundle and sluice-ctl --bundle: a good file
    whole, a bad one nothing, errors named (each tool names the flow-mod's
    error and OFPBFC_MSG_FAILED, and exits non-zero)."""
    need("ovs-ofctl", "openvswitch-common")
    tb = testbed
    s = sluice.start("--port", "p1", "--port", "p2", "--fail-mode", "secure")
    S = f"unix:{s.run_dir}/br0.mgmt"

    def ctl(*args):
        return run([bins / "sluice-ctl", *args, "-O", "OpenFlow13"], check=False)

    def flows():
        return len(ctl("--no-stats", "dump-flows", S).stdout.splitlines())

    good, bad, bad_table = tmp_path / "good.txt", tmp_path / "bad.txt", tmp_path / "bad-table.txt"
    good.write_text("".join(f"priority=10,ip,nw_dst=10.9.{i // 256}.{i % 256},actions=output:2\n" for i in range(1, 301))
                    + "priority=20,in_port=1,actions=output:2\npriority=20,in_port=2,actions=output:1\n")
    bad.write_text("priority=30,in_port=1,actions=drop\npriority=30,ip,actions=group:99\npriority=30,in_port=2,actions=drop\n")
    # Tables are 0-253: table 254 does not exist.
    bad_table.write_text("table=253,priority=30,actions=drop\ntable=254,priority=30,actions=drop\npriority=30,actions=drop\n")
    for t in ("ovs-ofctl", "sluice-ctl"):
        tool = (lambda *a: run([*O, *a], check=False)) if t == "ovs-ofctl" else ctl
        assert tool("--bundle", "add-flows", S, good).returncode == 0, f"{t} --bundle add-flows refused"
        n = flows()
        assert n == 302, f"after {t} --bundle add-flows: {n} flows, not 302"
        assert tb.ping_ok("h1", tb.ip(2)), f"no ping after {t}'s bundle"
        for f in (bad, bad_table):
            p = tool("--bundle", "add-flows", S, f)
            assert p.returncode != 0, f"{t}: a bad bundle succeeded"
            out = _both(p)
            assert "OFPBFC_MSG_FAILED" in out and re.search("OFPBAC_BAD_OUT_GROUP|OFPFMFC_BAD_TABLE_ID", out), f"{t} said:\n{out}"
            n = flows()
            assert n == 302, f"after {t}'s bad bundle ({f.name}): {n} flows, not 302"
        # Both tools find the switch holding exactly the good file.
        assert run([*O, "diff-flows", S, good], check=False).returncode == 0, f"after {t}: ovs-ofctl diff-flows"
        if t == "ovs-ofctl":
            assert ctl("--bundle", "del-flows", S).returncode == 0, "sluice-ctl --bundle del-flows"
            assert flows() == 0, "flows left after del-flows"


PI_FLOWS = """\
table=0,priority=10,udp,actions=load:0x5->NXM_NX_REG0[],set_field:0x9->pkt_mark,write_metadata:0xab00/0xff00,goto_table:3
table=3,cookie=0x77,priority=5,actions=controller(userdata=01.02.03.04.05),controller(id=7,userdata=aa.bb),output:2
table=0,priority=10,tcp,tp_dst=80,actions=load:0x1->NXM_NX_REG15[],goto_table:1
table=1,priority=0,actions=controller(userdata=ff)
table=0,priority=10,arp,arp_tpa=10.0.0.9,actions=controller
"""

# UDP to port 53, TCP to port 80, an ARP request for 10.0.0.9.
PI_FRAMES = [
    "020000000002020000000001080045000028123400004011548f0a0000010a00000204d20035001413c000070e151c232a31383f464d000000000000",
    "020000000002020000000001080045000034123400004006548e0a0000010a00000204d20050000003e800000000501020009fbf000000070e151c232a31383f464d",
    "ffffffffffff020000000001080600010800060400010200000000010a0000010000000000000a000009000000000000000000000000000000000000",
]

PI_FORMATS = ("standard", "nxt_packet_in", "nxt_packet_in2", "id7")
PI_HEADER = re.compile(r"^(OFPT_PACKET_IN|NXT_PACKET_IN2?) ")
PI_HEX = re.compile(r"^[0-9a-f]{8}  ")
# The first row of a message's hex dump (OFPT_EXPERIMENTER or
# OFPT_PACKET_IN): bytes 4-7 are the xid.
PI_XID_ROW = re.compile(r"^(00000000  04 (?:04|0a) [0-9a-f]{2} [0-9a-f]{2} )(?:[0-9a-f]{2} ){3}[0-9a-f]{2}-")


def packet_ins(path):
    """The packet-ins a monitor log shows, each as its lines (header,
    userdata, the frame's flow, the frame's and the message's hex dumps),
    the xid left out of the header and the dump (and the dump's ASCII
    column)."""
    out, cur, flow_seen = [], None, False
    try:
        lines = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return out
    for line in lines:
        if PI_HEADER.match(line):
            cur = [re.sub(r"\(xid=0x[0-9a-f]+\)", "(xid=N)", line)]
            out.append(cur)
            flow_seen = False
        elif cur is None:
            continue
        elif line.startswith(" "):
            cur.append(line)
        elif PI_HEX.match(line):
            line = re.sub(r"\s*\|.*\|$", "", line)
            cur.append(PI_XID_ROW.sub(r"\1xx xx xx xx-", line))
        elif not flow_seen:
            cur.append(line)
            flow_seen = True
        else:
            cur = None
    return out


def _pins(path):
    try:
        return sum(1 for l in path.read_text(errors="replace").splitlines() if PI_HEADER.match(l))
    except FileNotFoundError:
        return 0


def _watch_and_send(tb, sw, d):
    """The flows into switch sw, four `ovs-ofctl monitor -mmm`s on it (logs
    in d), then the three frames one by one; the monitors' PIDs."""
    run([*O, "add-flows", sw, d.parent / "flows.txt"])
    env = {**os.environ, "OVS_RUNDIR": str(d)}
    pids = []
    try:
        for fmt in PI_FORMATS:
            # A miss length (65534) because Open vSwitch sends no
            # asynchronous message to a service connection (its management
            # socket) that has not set one; sluice takes the same
            # SET_CONFIG.
            with open(d / f"{fmt}.log", "w") as err:
                p = subprocess.run([*O, "-mmm", "monitor", sw, "65534", "-P",
                                    "nxt_packet_in2" if fmt == "id7" else fmt, "--detach", "--no-chdir",
                                    f"--pidfile={d}/{fmt}.pid", f"--unixctl={d}/{fmt}.ctl"],
                                   stderr=err, env=env, timeout=30)
            assert p.returncode == 0, f"monitor -P {fmt} of {sw} did not start"
            pids.append(int((d / f"{fmt}.pid").read_text()))
        # NXT_SET_CONTROLLER_ID 7, and a barrier so that it is in effect.
        run(["ovs-appctl", "-t", d / "id7.ctl", "ofctl/send", "040400180000000000002320000000140000000000000007"])
        run(["ovs-appctl", "-t", d / "id7.ctl", "ofctl/barrier"])
        for i, frame in enumerate(PI_FRAMES):
            tb.x("h1", "python3", SCRIPTS / "rawframe.py", "send", "eth0", frame)
            wait_until(5, f"packet-in {i + 1} at {sw}'s monitors", lambda: _pins(d / "nxt_packet_in2.log") >= i + 1)
        wait_until(5, f"the packet-in for controller id 7 at {sw}", lambda: _pins(d / "id7.log") >= 1)
    finally:
        for pid in pids:
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass


def test_packet_ins_as_open_vswitch_sends_them(need, testbed, sluice, ovs, tmp_path):
    """packet-ins as Open vSwitch 3.1 sends them: standard, NXT_PACKET_IN and
    NXT_PACKET_IN2 (userdata, registers, pkt_mark, metadata, table-miss
    reason), controller id 7; the same text and bytes from ovs-ofctl
    monitor. The same flows, then the same frames from h1, through sluice
    and through Open vSwitch (its userspace datapath on the same veth); four
    monitors watch each switch: one per packet-in format and one in
    nxt_packet_in2 whose controller id is 7 (NXT_SET_CONTROLLER_ID sent
    through its ofctl/send). Xids aside: Open vSwitch sends 0, sluice
    numbers its messages."""
    need("ovs-vswitchd", "openvswitch-switch")
    need("ovs-ofctl", "openvswitch-common")
    tb = testbed
    (tmp_path / "flows.txt").write_text(PI_FLOWS)
    ds, do = tmp_path / "sluice", tmp_path / "ovs"
    ds.mkdir()
    do.mkdir()
    s = sluice.start("--port", "p1", "--port", "p2", "--fail-mode", "secure")
    _watch_and_send(tb, f"unix:{s.run_dir}/br0.mgmt", ds)
    s.stop()
    o = ovs.start()
    o.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev", "fail-mode=secure",
            "protocols=OpenFlow13", "--", "add-port", "br0", "p1", "--", "set", "interface", "p1", "ofport_request=1",
            "--", "add-port", "br0", "p2", "--", "set", "interface", "p2", "ofport_request=2")
    wait_until(10, "Open vSwitch's ports 1 and 2", lambda: " 2(p2)" in run([*O, "show", o.mgmt()], check=False).stdout)
    _watch_and_send(tb, o.mgmt(), do)
    o.stop()
    # The packet-ins of each monitor: the same text and bytes, xids aside.
    problems = []
    for name, n in [("standard", 3), ("nxt_packet_in", 3), ("nxt_packet_in2", 3), ("id7", 1)]:
        a, b = packet_ins(do / f"{name}.log"), packet_ins(ds / f"{name}.log")
        if a != b or len(a) != n:
            diff = "\n".join(difflib.unified_diff(["\n".join(m) for m in a], ["\n".join(m) for m in b],
                                                  "Open vSwitch", "sluice", lineterm=""))
            problems.append(f"{name}: {len(a)} packet-ins from Open vSwitch, {len(b)} from sluice, not the same:\n{diff}")
        else:
            print(f"{name}: {n} packet-in{'s' * (n > 1)} the same: {a[0][0][:110]}...")
    # And they say what the flows made them say.
    text = {name: "\n".join("\n".join(m) for m in packet_ins(ds / f"{name}.log")) + "\n"
            for name in ("standard", "nxt_packet_in2", "id7")}
    for name, want in [("nxt_packet_in2", " userdata=01.02.03.04.05\n"), ("nxt_packet_in2", " userdata=ff\n"),
                       ("nxt_packet_in2", "reg15=0x1,in_port=1 (via no_match)"), ("id7", " userdata=aa.bb\n"),
                       ("standard", "pkt_mark=0x9,reg0=0x5,metadata=0xab00,in_port=1 (via action)")]:
        if want not in text[name]:
            problems.append(f"{name}: no {want.strip()!r}")
    if "userdata" in text["standard"]:
        problems.append("standard: userdata in an OFPT_PACKET_IN")
    assert not problems, "\n".join(problems)
