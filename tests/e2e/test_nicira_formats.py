"""Plain ovs-ofctl (no -O: OpenFlow 1.0 and Nicira's flow formats, NXM
and the table id in flow mods) against sluice and against Open vSwitch:
the same flows go in, and dump-flows, dump-aggregate, diff-flows,
replace-flows, mod-flows and del-flows read the same
(docs/OVS-DIALECT.md, "Flow formats")."""

import difflib
import re

from lab import beside_ovs, run, wait_until

# Flows that need NXM (registers, ct_state, table=, masked MACs, tun_id,
# IPv6, a whole TCI, cookies) and the cloud agent's flow, whose strip_vlan
# needs no tag in the match under OpenFlow 1.0.
FLOWS = """\
priority=100,ip,nw_dst=10.0.0.7,actions=strip_vlan,load:21->NXM_NX_TUN_ID[],set_field:10.10.10.10->tun_dst,output:100
priority=1,ip,nw_tos=16,actions=NORMAL
priority=2,arp,arp_tpa=10.0.0.1,actions=CONTROLLER:65535
table=1,priority=10,reg0=0x1,actions=resubmit(,2)
table=1,priority=20,reg1=0x5/0xff,reg2=7,actions=drop
table=2,priority=5,ct_state=+trk+est,ip,actions=output:2
table=2,priority=6,ct_state=-trk,tcp,actions=ct(table=3,zone=5)
table=3,priority=7,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=drop
table=3,priority=8,dl_src=00:11:22:00:00:00/ff:ff:ff:00:00:00,dl_vlan=10,actions=mod_vlan_vid:20,output:1
table=4,priority=9,tun_id=0x64,in_port=1,actions=load:0x1->NXM_NX_REG3[]
table=4,cookie=0x5,priority=11,ipv6,ipv6_src=2001:db8::/32,actions=dec_ttl,output:2
table=5,priority=12,vlan_tci=0,actions=drop
table=5,priority=13,dl_vlan_pcp=3,actions=drop
table=6,idle_timeout=30,hard_timeout=60,priority=14,tcp,tp_dst=80,tcp_flags=+syn-ack,actions=drop
table=6,priority=15,pkt_mark=0x5,ct_mark=0x1/0x1,actions=drop
"""

# replace-flows' file: one flow gone, one changed, one new.
REPLACED = (
    FLOWS.replace("table=3,priority=7,dl_dst=01:00:00:00:00:00/01:00:00:00:00:00,actions=drop\n", "")
    .replace("reg2=7,actions=drop", "reg2=7,actions=output:1")
    + "table=7,priority=3,xreg0=0x1/0x1,actions=drop\n"
)

# Commands after add-flows, each followed by a dump: (verb, args...).
STEPS = [
    ("mod-flows", "table=1,reg0=1,actions=output:2"),
    ("mod-flows", "--strict", "table=5,priority=13,dl_vlan_pcp=3,actions=output:1"),
    ("add-flow", "table=8,priority=4,ct_state=+new-rpl+trk,ct_zone=3,ip,actions=ct(commit,zone=3)"),
    ("del-flows", "table=2,ct_state=+trk+est,ip"),
    ("del-flows", "--strict", "table=5,priority=12,vlan_tci=0"),
    ("del-flows", "cookie=0x5/-1"),
    ("del-flows", "table=6"),
]

# What each reads, after each step.
DUMPS = [
    ("--no-stats", "dump-flows"),
    ("--no-stats", "dump-flows", "table=3"),
    ("--no-stats", "dump-flows", "reg0=1"),
    ("--no-stats", "dump-flows", "cookie=0x5/-1"),
    ("dump-aggregate",),
    ("dump-aggregate", "table=1"),
]


def _said(args, sw):
    """ovs-ofctl's text (no -O), xids out, sorted where lines are flows."""
    verb = [a for a in args if not a.startswith("-")][0]
    rest = [a for a in args if a != verb]
    p = run(["ovs-ofctl", *[a for a in rest if a.startswith("-")], verb, sw,
             *[a for a in rest if not a.startswith("-")]], check=False)
    text = re.sub(r"\(xid=0x[0-9a-f]+\)", "", p.stdout + p.stderr)
    head, *lines = text.splitlines() or [""]
    return [f"rc={p.returncode}", head, *sorted(lines)]


def test_plain_ovs_ofctl_reads_and_writes_as_against_open_vswitch(need, testbed, sluice, ovs, tmp_path):
    """Every flow command of plain ovs-ofctl, through Nicira's formats:
    the flows of FLOWS (each needing NXM, and the cloud agent's strip_vlan
    flow) added to sluice and to Open vSwitch, then each of STEPS, read
    back after each with DUMPS, replace-flows and diff-flows: the same
    text from both, return codes included."""
    need("ovs-ofctl", "openvswitch-common")
    s, o, S, R = beside_ovs(sluice, ovs, "OpenFlow10,OpenFlow13,OpenFlow14")
    flows, replaced = tmp_path / "flows", tmp_path / "replaced"
    flows.write_text(FLOWS)
    replaced.write_text(REPLACED)
    problems = []

    def both(*args, label=None):
        a, b = _said(args, R), _said(args, S)
        if a != b:
            diff = "\n".join(difflib.unified_diff(a, b, "Open vSwitch", "sluice", lineterm=""))
            problems.append(f"{label or ' '.join(args)} differs:\n{diff}")
        return b

    def dumps(after):
        for d in DUMPS:
            both(*d, label=f"after {after}: {' '.join(d)}")

    both("del-flows")
    added = both("add-flows", str(flows))
    if added[0] != "rc=0":
        problems.append(f"add-flows refused: {added}")
    dumps("add-flows")
    n = len([x for x in _said(("--no-stats", "dump-flows"), S) if "actions=" in x])
    if n != FLOWS.count("\n"):
        problems.append(f"sluice holds {n} flows, not {FLOWS.count(chr(10))}")
    both("diff-flows", str(flows))
    both("diff-flows", str(replaced))
    for step in STEPS:
        both(*step)
        dumps(" ".join(step))
    both("replace-flows", str(replaced))
    dumps("replace-flows")
    both("diff-flows", str(replaced))
    # Bundles: ovs-ofctl --bundle speaks OpenFlow 1.4 (it offers no
    # bundles in 1.0, and neither does Open vSwitch).
    both("--bundle", "add-flow", "table=9,reg4=1,actions=drop")
    both("del-flows")
    dumps("del-flows")
    assert not problems, "\n".join(problems)


def _aged(sw):
    """Plain `ovs-ofctl dump-flows` with statistics, the times as words:
    which of duration, idle_age and hard_age are printed, and where."""
    out = run(["ovs-ofctl", "dump-flows", sw]).stdout
    out = re.sub(r"duration=[0-9.]+s", "duration=D", out)
    out = re.sub(r"(idle_age|hard_age)=\d+", r"\1=A", out)
    return sorted(l.strip() for l in out.splitlines() if "actions=" in l)


def test_dump_flows_ages_as_open_vswitch_prints_them(need, testbed, sluice, ovs):
    """NXST_FLOW's idle_age and hard_age: both switches print idle_age for
    every flow, and hard_age once a mod-flows (a second or more after the
    add) made it differ from the duration."""
    need("ovs-ofctl", "openvswitch-common")
    s, o, S, R = beside_ovs(sluice, ovs, "OpenFlow10,OpenFlow13")
    for sw in (S, R):
        run(["ovs-ofctl", "del-flows", sw])
        run(["ovs-ofctl", "add-flow", sw, "priority=5,in_port=1,actions=drop"])
        run(["ovs-ofctl", "add-flow", sw, "priority=6,in_port=2,actions=drop"])

    def a_second_old(sw):
        out = run(["ovs-ofctl", "dump-flows", sw]).stdout
        return all(float(d) >= 1.0 for d in re.findall(r"duration=([0-9.]+)s", out))

    for sw in (S, R):
        wait_until(10, f"{sw}'s flows a second old", lambda: a_second_old(sw))
    assert _aged(S) == _aged(R)
    assert all("idle_age=A" in l and "hard_age" not in l for l in _aged(S)), _aged(S)
    for sw in (S, R):
        run(["ovs-ofctl", "mod-flows", sw, "in_port=1,actions=output:2"])
    assert _aged(S) == _aged(R)
    modified = [l for l in _aged(S) if "in_port=1" in l]
    assert "hard_age=A" in modified[0], modified
