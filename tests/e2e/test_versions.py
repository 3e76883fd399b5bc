"""OpenFlow versions besides 1.3: real controllers of each version drive
sluice, and Open vSwitch's ovs-ofctl of each version programs it."""
import difflib
import re

from lab import REPO, beside_ovs, run, wait_until

APPS = REPO / ".venv" / "os-ken-1.4.1" / "os_ken" / "app"


def test_osken_apps_of_every_version(testbed, sluice, controller):
    """os-ken's own learning switches, one per version, unchanged (os-ken
    1.4.1's sample apps, see scripts/setup.sh): simple_switch (OpenFlow 1.0:
    no table-miss flow, the switch's own table miss sends to the
    controller), _12, _14 and _15. Each offers only its version; sluice
    offers all and must agree on the app's; then ping and TCP."""
    problems = []
    for app, ver in [("simple_switch", "OpenFlow10"), ("simple_switch_12", "OpenFlow12"),
                     ("simple_switch_14", "OpenFlow14"), ("simple_switch_15", "OpenFlow15")]:
        c = controller.start(app, pythonpath=[APPS])
        s = sluice.start("--port", "p1", "--port", "p2", "--controller", "tcp:127.0.0.1:6653", "--fail-mode", "secure")
        wait_until(15, f"{app}'s connection to agree on {ver}", lambda: re.search(f'version="?{ver}', s.log))
        if not testbed.ping_ok("h1", testbed.ip(2)):
            problems.append(f"{app}: ping failed")
        mbps = testbed.tcp_mbps(5309)
        print(f"{app} ({ver}): TCP {mbps} Mbit/s")
        if mbps <= 0:
            problems.append(f"{app}: no TCP")
        # The app learned and installed flows (it matches on the
        # destination MAC, in each version's own form).
        flows = s.flows()
        if not re.search("dl_dst=|eth_dst=", flows):
            problems.append(f"{app}: no learned flow:\n{flows}")
        s.stop()
        c.stop()
        if "packet in" not in c.log:
            problems.append(f"{app} saw no packet-in")
        if re.search("Traceback|Error", c.log):
            problems.append(f"{app}:\n{c.log[-2000:]}")
    assert not problems, "\n".join(problems)


FLOWS_10 = """\
priority=10,in_port=1,actions=output:2
priority=20,dl_vlan=5,actions=strip_vlan,output:1
tcp,nw_dst=10.0.0.0/8,tp_dst=80,actions=mod_nw_tos:8,mod_tp_dst:8080,output:2
udp,nw_src=192.168.1.1,tp_src=53,actions=mod_tp_src:5353,mod_nw_src:10.1.1.1,output:1
priority=5,dl_src=02:00:00:00:00:01,actions=mod_dl_dst:02:00:00:00:00:02,CONTROLLER:128
priority=6,dl_vlan_pcp=3,actions=mod_vlan_pcp:5,mod_vlan_vid:7,output:2
cookie=0x77,priority=7,arp,actions=NORMAL
icmp,icmp_type=8,actions=enqueue:1:0,output:1
"""

FLOWS_1X = """\
priority=10,in_port=1,actions=output:2
table=0,priority=3,tcp,tp_dst=80,actions=set_field:10.0.0.9->ip_dst,goto_table:2
cookie=0x5,table=2,priority=7,ip,nw_dst=10.0.0.0/8,actions=dec_ttl,group:1
table=2,priority=4,ipv6,ipv6_dst=2001:db8::/32,actions=write_actions(output:1),write_metadata:0x5/0xff,goto_table:3
table=3,priority=2,metadata=0x5/0xff,icmp6,icmp_type=135,actions=push_vlan:0x8100,set_field:4101->vlan_vid,output:2
table=3,priority=1,udp,tp_src=53,actions=CONTROLLER:128
"""

GROUPS_1X = """\
group_id=1,type=select,bucket=output:1,bucket=weight:5,watch_port:2,actions=output:2
group_id=2,type=all,bucket=actions=output:1,bucket=actions=NORMAL
"""


def _lines_with(word, text):
    return sum(1 for line in text.splitlines() if word in line)


def _ofctl_dump(v, what, target, ovs_side):
    # (`ovs_side` is kept for the callers: both switches now answer
    # ovs-ofctl's OpenFlow 1.0 dumps with Nicira's NXST replies.)
    p = run(["ovs-ofctl", "-O", v, *what.split(), target], check=False)
    lines = []
    for line in (p.stdout + p.stderr).splitlines():
        line = re.sub(r"\(xid=0x[0-9a-f]+\)", "", line, count=1)
        lines.append(line)
    return sorted(lines)


def test_ovs_ofctl_of_every_version_agrees_with_open_vswitch(need, testbed, sluice, ovs, tmp_path, bins):
    """ovs-ofctl of each version (-O OpenFlow10, 12, 14, 15) installs the
    same flows and groups in sluice and in an Open vSwitch netdev bridge
    (1.4 and 1.5 into sluice as one native bundle); what it dumps back from
    each (flows without counters, groups, the aggregate) must be the same
    text; and sluice-ctl -O of the version reads the flows back too."""
    need("ovs-ofctl", "openvswitch-common")
    s, o, S, R = beside_ovs(sluice, ovs, "OpenFlow10,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15")
    f, g = tmp_path / "flows", tmp_path / "groups"
    problems = []
    for v in ["OpenFlow10", "OpenFlow12", "OpenFlow14", "OpenFlow15"]:
        f.write_text(FLOWS_10 if v == "OpenFlow10" else FLOWS_1X)
        g.write_text("" if v == "OpenFlow10" else GROUPS_1X)
        for sw in (S, R):
            def ofctl(*args):
                p = run(["ovs-ofctl", "-O", v, *args], check=False)
                if p.returncode != 0:
                    problems.append(f"{v}: {' '.join(args[:-1])} refused by {sw}: {p.stderr.strip()}")

            ofctl("del-flows", sw)
            if v != "OpenFlow10":
                ofctl("del-groups", sw)
            if g.stat().st_size:
                ofctl("add-groups", sw, g)
            # 1.4 and 1.5 into sluice as one native bundle (OFPT_BUNDLE_*:
            # all or nothing), the rest as plain FLOW_MODs.
            bundle = ["--bundle"] if sw == S and v in ("OpenFlow14", "OpenFlow15") else []
            ofctl(*bundle, "add-flows", sw, f)
        for what in ["--no-stats dump-flows", "dump-groups", "dump-aggregate"]:
            if what == "dump-groups" and v == "OpenFlow10":
                continue
            # In OpenFlow 1.0 ovs-ofctl asks for Open vSwitch's NXM flow
            # format (NXT_SET_FLOW_FORMAT) and its NXST statistics, from
            # both (docs/OVS-DIALECT.md, "Flow formats").
            a = _ofctl_dump(v, what, R, ovs_side=True)
            b = _ofctl_dump(v, what, S, ovs_side=False)
            if a != b or not a:
                diff = "\n".join(difflib.unified_diff(a, b, "Open vSwitch", "sluice", lineterm=""))
                problems.append(f"{v} {what} differs:\n{diff}")
        # sluice-ctl of the version reads back as many flows.
        a = _lines_with("actions=", run(["ovs-ofctl", "-O", v, "--no-stats", "dump-flows", S]).stdout)
        b = _lines_with("actions=", run([bins / "sluice-ctl", "-O", v, "--no-stats", "dump-flows", S]).stdout)
        if not (a == b and a >= 6):
            problems.append(f"{v}: ovs-ofctl dumps {a} flows, sluice-ctl {b}")
        head = run([bins / "sluice-ctl", "-O", v, "dump-flows", S]).stdout.split("\n", 1)[0]
        if f"(OF1.{v[-1]})" not in head:
            problems.append(f"{v}: sluice-ctl's header: {head}")
    assert not problems, "\n".join(problems)


# The forms OVN's ovn-controller sends in OpenFlow 1.5 (masked set_field
# for every partial load, also inside ct(exec) and ct_label; set_field of
# metadata and in_port; a move inside ct(exec); RARP's arp_op;
# check_pkt_larger), each added in one version and dumped in both.
OVN_FORMS = """\
table=1,priority=1,actions=set_field:0x1/0x1->reg10,set_field:0/0xffffffff->xxreg1,set_field:0x4/0x4->xreg4
table=1,priority=2,actions=load:1->NXM_NX_REG10[0],load:5->NXM_NX_REG1[],set_field:7->reg2,load:0x1->OXM_OF_METADATA[],set_field:3->in_port,load:0->NXM_OF_IN_PORT[],set_field:00:11:22:33:44:55->eth_dst,load:0x3->NXM_OF_ETH_DST[0..7]
table=1,priority=5,ip,actions=ct(commit,zone=NXM_NX_REG13[0..15],exec(move:NXM_NX_XXREG0[0..31]->NXM_NX_CT_LABEL[96..127],load:1->NXM_NX_CT_MARK[1],set_field:0x1/0x1->ct_label))
table=1,priority=6,rarp,arp_op=3,actions=drop
table=1,priority=7,ip,actions=clone(set_field:0x1/0x3->reg0,move:NXM_NX_REG1[0..7]->NXM_NX_REG2[8..15])
table=1,priority=8,ip,actions=check_pkt_larger(1514)->NXM_NX_REG9[1],resubmit(,2)
"""

# (Options of at most 16 bytes: sluice refuses a longer one where it is
# mapped, docs/OVS-DIALECT.md difference 21; TLV_LONG checks that.)
TLV_STEPS = [
    ("del-tlv-map",),
    ("add-tlv-map", "{class=0x102,type=0x80,len=4}->tun_metadata0"),
    ("add-tlv-map", "{class=0x102,type=0x80,len=4}->tun_metadata1"),
    ("add-tlv-map", "{class=0x103,type=0x80,len=4}->tun_metadata0"),
    ("add-tlv-map", "{class=0x103,type=0x81,len=16}->tun_metadata5,{class=0x103,type=0x82,len=16}->tun_metadata6"),
    ("add-tlv-map", "{class=0x103,type=0x83,len=8}->tun_metadata7"),
    ("dump-tlv-map",),
    ("del-tlv-map", "{class=0x103,type=0x81,len=16}->tun_metadata5"),
    ("dump-tlv-map",),
]
TLV_LONG = "{class=0x103,type=0x84,len=124}->tun_metadata9"


def test_ovn_wire_forms_and_the_tlv_table_agree_with_open_vswitch(need, testbed, sluice, ovs, tmp_path):
    """What ovn-controller sends, through ovs-ofctl: OVN_FORMS added in
    OpenFlow 1.5 and in 1.3 to sluice and to Open vSwitch, each dumped in
    both versions, must read the same; and the Geneve option table
    (add-tlv-map, del-tlv-map, dump-tlv-map, with every refusal) must
    answer the same, error names included."""
    need("ovs-ofctl", "openvswitch-common")
    s, o, S, R = beside_ovs(sluice, ovs, "OpenFlow10,OpenFlow13,OpenFlow15")
    f = tmp_path / "flows"
    f.write_text(OVN_FORMS)
    problems = []
    for add_v in ["OpenFlow15", "OpenFlow13", "OpenFlow10"]:
        for sw in (S, R):
            for args in (["del-flows", sw], ["add-flows", sw, str(f)]):
                p = run(["ovs-ofctl", "-O", add_v, *args], check=False)
                if p.returncode != 0:
                    problems.append(f"{add_v} {args[0]} refused by {sw}: {p.stderr.strip()}")
        for dump_v in ["OpenFlow15", "OpenFlow13", "OpenFlow10"]:
            a = _ofctl_dump(dump_v, "--no-stats dump-flows", R, ovs_side=True)
            b = _ofctl_dump(dump_v, "--no-stats dump-flows", S, ovs_side=False)
            if dump_v == "OpenFlow10":
                # Open vSwitch writes a masked set_field of eth_dst to a
                # 1.0 peer as mod_dl_dst, its mask lost; sluice as load
                # (docs/OVS-DIALECT.md, flow formats, difference 4).
                a = [x.replace("mod_dl_dst:00:00:00:00:00:03", "load:0x3->NXM_OF_ETH_DST[0..7]") for x in a]
            if a != b or len(a) < 6:
                diff = "\n".join(difflib.unified_diff(a, b, "Open vSwitch", "sluice", lineterm=""))
                problems.append(f"added in {add_v}, dumped in {dump_v}, differs:\n{diff}")
    for v in ["OpenFlow15", "OpenFlow13", "OpenFlow10"]:
        said = {}
        for sw in (S, R):
            out = []
            for cmd, *rest in TLV_STEPS:
                p = run(["ovs-ofctl", "-O", v, cmd, sw, *rest], check=False)
                text = re.sub(r"\(xid=0x[0-9a-f]+\)", "", p.stdout + p.stderr)
                # ovs-ofctl echoes the refused request after the error.
                out.append(f"{cmd}: " + text.split("\n")[0] if p.returncode else f"{cmd}: {text}")
            said[sw] = out
        if said[S] != said[R]:
            diff = "\n".join(difflib.unified_diff(said[R], said[S], "Open vSwitch", "sluice", lineterm=""))
            problems.append(f"{v} tlv map differs:\n{diff}")
        if not any("0x102  0x80       4  tun_metadata0" in x for x in said[S]):
            problems.append(f"{v}: the mapping was not listed:\n{said[S]}")
        p = run(["ovs-ofctl", "-O", v, "add-tlv-map", S, TLV_LONG], check=False)
        if p.returncode == 0 or "NXTTMFC_BAD_OPT_LEN" not in p.stderr:
            problems.append(f"{v}: a 124-byte option was not refused as too long: {p.stderr}")
    assert not problems, "\n".join(problems)


# What ovn-controller 23.03 sends for Geneve in OpenFlow 1.5: the option
# (class 0x0102, type 0x80, 4 bytes) mapped to tun_metadata0, the logical
# input and output ports moved out of it on the way in and into it on the
# way out, and matches on it.
OVN_TUN_METADATA = """\
table=0,priority=100,tun_id=0x1,in_port=5,actions=move:NXM_NX_TUN_ID[0..23]->OXM_OF_METADATA[0..23],move:NXM_NX_TUN_METADATA0[16..30]->NXM_NX_REG14[0..14],move:NXM_NX_TUN_METADATA0[0..15]->NXM_NX_REG15[0..15],resubmit(,38)
table=37,priority=100,reg15=0x2,metadata=0x1,actions=load:0x1->NXM_NX_TUN_ID[0..23],set_field:0x10002->tun_metadata0,move:NXM_NX_REG14[0..14]->NXM_NX_TUN_METADATA0[16..30],output:5
table=38,priority=100,tun_metadata0=0x2/0xffff,actions=resubmit(,39)
table=38,priority=90,tun_metadata0=0x10002,actions=drop
table=39,priority=100,tun_metadata0=0,actions=load:0x7->NXM_NX_TUN_METADATA0[4..6]
"""


def test_ovns_geneve_option_fields_agree_with_open_vswitch(need, testbed, sluice, ovs, tmp_path):
    """tun_metadata0 as OVN uses it, through ovs-ofctl: a flow naming it
    before it is mapped is refused alike (NXFMFC_INVALID_TLV_FIELD); once
    add-tlv-map maps OVN's option, OVN_TUN_METADATA added in OpenFlow 1.5
    and 1.3 to sluice and to Open vSwitch and dumped in both versions read
    the same; and the mapping a flow uses cannot be deleted
    (NXTTMFC_INVALID_TLV_DEL) until the flows go."""
    need("ovs-ofctl", "openvswitch-common")
    s, o, S, R = beside_ovs(sluice, ovs, "OpenFlow10,OpenFlow13,OpenFlow15")
    f = tmp_path / "flows"
    f.write_text(OVN_TUN_METADATA)
    tlv = "{class=0x102,type=0x80,len=4}->tun_metadata0"
    problems = []

    def said(v, *args):
        """What ovs-ofctl says, both switches: [Open vSwitch, sluice]."""
        out = []
        for sw in (R, S):
            p = run(["ovs-ofctl", "-O", v, args[0], sw, *args[1:]], check=False)
            text = re.sub(r"\(xid=0x[0-9a-f]+\)", "", p.stdout + p.stderr)
            out.append(f"rc={p.returncode} " + (text.split("\n")[0] if p.returncode else text))
        if out[0] != out[1]:
            problems.append(f"{v} {' '.join(args)}:\n   Open vSwitch: {out[0]}\n   sluice:       {out[1]}")
        return out

    for v in ["OpenFlow15", "OpenFlow13"]:
        said(v, "del-flows")
        said(v, "del-tlv-map")
        unmapped = said(v, "add-flow", "table=38,tun_metadata0=0x2/0xffff,actions=drop")
        if "NXFMFC_INVALID_TLV_FIELD" not in unmapped[1]:
            problems.append(f"{v}: a flow on an unmapped field: {unmapped[1]}")
        said(v, "add-flow", "actions=set_field:0x2->tun_metadata0")
        said(v, "add-tlv-map", tlv)
        for add_v in ["OpenFlow15", "OpenFlow13"]:
            said(v, "del-flows")
            for sw in (S, R):
                p = run(["ovs-ofctl", "-O", add_v, "add-flows", sw, str(f)], check=False)
                if p.returncode != 0:
                    problems.append(f"{add_v} add-flows refused by {sw}: {p.stderr.strip()}")
            for dump_v in ["OpenFlow15", "OpenFlow13"]:
                a = _ofctl_dump(dump_v, "--no-stats dump-flows", R, ovs_side=True)
                b = _ofctl_dump(dump_v, "--no-stats dump-flows", S, ovs_side=False)
                if a != b or len(a) < 5:
                    diff = "\n".join(difflib.unified_diff(a, b, "Open vSwitch", "sluice", lineterm=""))
                    problems.append(f"added in {add_v}, dumped in {dump_v}, differs:\n{diff}")
        in_use = said(v, "del-tlv-map", tlv)
        if "NXTTMFC_INVALID_TLV_DEL" not in in_use[1]:
            problems.append(f"{v}: deleting a mapping in use: {in_use[1]}")
        said(v, "del-tlv-map")
        said(v, "del-flows")
        said(v, "del-tlv-map")
        said(v, "dump-tlv-map")
    assert not problems, "\n".join(problems)


# OpenFlow 1.5's groups as ovn-controller sends them (its load balancer's
# dp_hash group with ct() buckets), Open vSwitch's hash selection method
# with fields, bucket ids, insert-buckets and remove-buckets (first, last,
# all, an id), and the errors Open vSwitch gives for them. Each step goes to
# sluice and to Open vSwitch alike; whether it is taken, the errors' names,
# and what dump-groups prints after it must be the same.
_CT = "ct(commit,table=21,zone=NXM_NX_REG13[0..15],nat(dst=10.0.0.1{}:8080),exec(set_field:0x2/0x2->ct_mark))"
GROUPS_15_STEPS = [
    ("add-group", "group_id=1,type=select,selection_method=dp_hash,bucket=bucket_id=0,weight:100,actions="
     + _CT.format(1) + ",bucket=bucket_id=1,weight:100,actions=" + _CT.format(2)),
    ("add-group", "group_id=2,type=select,selection_method=hash,selection_method_param=7,"
     "fields(ip_dst,ip_src=255.255.0.0,tcp_dst),bucket=actions=output:1,bucket=weight:3,actions=output:2"),
    ("add-group", "group_id=3,type=ff,bucket=watch_port:1,actions=output:1"),
    ("add-group", "group_id=4,type=select,selection_method=hash,fields=eth_src,bucket=bucket_id:5,actions=output:1"),
    ("add-group", "group_id=6,type=select,selection_method=hash,"
     "fields(ipv6_src=ffff:ffff::,udp_src=0xff00,nw_proto,reg3),bucket=bucket_id:2,actions=output:1"),
    ("add-group", "group_id=7,type=select,selection_method=hash,bucket=actions=output:1"),
    ("insert-buckets", "group_id=1,command_bucket_id=first,bucket=bucket_id:5,actions=output:2"),
    ("insert-buckets", "group_id=1,command_bucket_id=0,bucket=bucket_id:6,actions=output:3,"
     "bucket=bucket_id:9,weight:4,actions=output:4"),
    ("insert-buckets", "group_id=1,command_bucket_id=last,bucket=bucket_id:7,actions=output:1"),
    ("insert-buckets", "group_id=3,command_bucket_id=last,bucket=bucket_id:7,actions=output:2"),
    # Refused: a watch in the `all` group mod ovs-ofctl sends, an id the
    # group has (given, or the 0 ovs-ofctl gives a bucket without one), an
    # unknown group or bucket, an unknown method, a method outside a
    # select group, an id twice.
    ("insert-buckets", "group_id=3,command_bucket_id=last,bucket=bucket_id:8,watch_port:2,actions=output:2"),
    ("insert-buckets", "group_id=3,command_bucket_id=last,bucket=bucket_id:7,actions=output:2"),
    ("insert-buckets", "group_id=3,command_bucket_id=last,bucket=actions=output:5"),
    ("insert-buckets", "group_id=99,command_bucket_id=last,bucket=bucket_id:7,actions=output:2"),
    ("insert-buckets", "group_id=3,command_bucket_id=42,bucket=bucket_id:8,actions=output:2"),
    ("remove-buckets", "group_id=3,command_bucket_id=42"),
    ("remove-buckets", "group_id=99,command_bucket_id=all"),
    ("add-group", "group_id=5,type=select,selection_method=foo,bucket=actions=output:1"),
    ("add-group", "group_id=5,type=all,selection_method=hash,bucket=actions=output:1"),
    ("add-group", "group_id=5,type=select,selection_method=hash,fields=ip_src,"
     "bucket=bucket_id:1,actions=output:1,bucket=bucket_id:1,actions=output:2"),
    ("remove-buckets", "group_id=1,command_bucket_id=first"),
    ("remove-buckets", "group_id=1,command_bucket_id=last"),
    ("remove-buckets", "group_id=1,command_bucket_id=6"),
    ("remove-buckets", "group_id=3"),
    ("remove-buckets", "group_id=3,command_bucket_id=first"),
    ("insert-buckets", "group_id=3,command_bucket_id=first,bucket=bucket_id:3,actions=output:1"),
    ("mod-group", "group_id=2,type=select,bucket=bucket_id:3,actions=output:2"),
    ("mod-group", "group_id=4,type=select,selection_method=dp_hash,selection_method_param=4294967297,"
     "bucket=bucket_id:1,weight:2,actions=output:1,bucket=bucket_id:0,actions=output:2"),
    ("mod-group", "group_id=7,type=indirect,bucket=actions=output:1"),
    ("insert-buckets", "group_id=7,command_bucket_id=last,bucket=bucket_id:4,actions=output:2"),
]


def test_ovs_ofctl_15_groups_agree_with_open_vswitch(need, testbed, sluice, ovs, bins):
    """GROUPS_15_STEPS through ovs-ofctl -O OpenFlow15 into sluice and an
    Open vSwitch netdev bridge, each change alone and then, from scratch,
    each as a bundle of its own (as ovn-controller sends them): the same
    answer (taken, or the same errors) and the same dump-groups text after
    every step; and sluice-ctl -O OpenFlow15 dumps what ovs-ofctl dumps
    (the groups without ct, whose exec sluice-ctl prints as loads)."""
    need("ovs-ofctl", "openvswitch-common")
    s, o, S, R = beside_ovs(sluice, ovs, "OpenFlow13,OpenFlow15")
    error = re.compile(r"OFPT_ERROR \(OF1\.5\) \(xid=0x[0-9a-f]+\): (\S+)")
    problems = []

    def dump(sw, tool="ovs-ofctl"):
        p = run([tool, "-O", "OpenFlow15", "dump-groups", sw], check=False)
        return sorted(re.sub(r" ?\(xid=0x[0-9a-f]+\)", "", line) for line in p.stdout.splitlines())

    for bundle in ([], ["--bundle"]):
        for sw in (S, R):
            run(["ovs-ofctl", "-O", "OpenFlow15", "del-groups", sw], check=False)
        for verb, arg in GROUPS_15_STEPS:
            seen = {}
            for sw in (S, R):
                p = run(["ovs-ofctl", "-O", "OpenFlow15", *bundle, verb, sw, arg], check=False)
                seen[sw] = (p.returncode == 0, error.findall(p.stdout + p.stderr), dump(sw))
            if seen[S] != seen[R]:
                diff = "\n".join(difflib.unified_diff(seen[R][2], seen[S][2], "Open vSwitch", "sluice", lineterm=""))
                problems.append(f"{' '.join(bundle)} {verb} {arg}:\n  Open vSwitch: taken={seen[R][0]} "
                                f"errors={seen[R][1]}\n  sluice: taken={seen[S][0]} errors={seen[S][1]}\n{diff}")
        if not any("selection_method=hash" in line for line in dump(R)):
            problems.append("the steps left no hash group to compare")
    no_ct = [line for line in dump(R) if "ct(" not in line]
    for sw in (S, R):
        ctl = [line for line in dump(sw, bins / "sluice-ctl") if "ct(" not in line]
        if ctl != no_ct:
            diff = "\n".join(difflib.unified_diff(no_ct, ctl, "ovs-ofctl", "sluice-ctl", lineterm=""))
            problems.append(f"sluice-ctl dump-groups of {sw} differs:\n{diff}")
    assert not problems, "\n".join(problems)
