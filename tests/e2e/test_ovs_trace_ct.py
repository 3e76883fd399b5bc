"""`ovs-appctl ofproto/trace` through `ct(table=N)` on sluice --ovs and on a
private Open vSwitch in the same test: the conntrack tutorial's firewall
(Documentation/tutorials/ovs-conntrack.rst, flows #1 to #5, in_port by
number) and a pipeline that forks twice in one pass and again in a
recirculation, with a zone, a mark, NAT and header changes before each
`ct`, traced with and without `--ct-next`.

Compared, block by block (the first pass, then one block per
recirculation after its line of `=`): the block's header (`recirc(0xN) -
resume conntrack with default ct_state=trk|new (use --ct-next to
customize)` or `... with ct_state=est|trk`, and NAT's `Replacing
src/dst IP/ports ...` lines), the connection fields its `Flow:` starts
with (`recirc_id`, `ct_state`, `ct_zone`, `ct_mark`) and its addresses,
ports and TTL (NAT's translation, the TTL set before the `ct`), its `Resuming from
table N`, and its `Datapath actions:` (Open vSwitch's datapath port
numbers mapped to OpenFlow ones through `dpif/show`). Recirculation ids
are numbered in the order they first appear in each trace on both sides:
Open vSwitch takes them from a pool that runs on from trace to trace
(0x1, 0x2, ... in the first, 0x3, ... in the next), sluice numbers each
trace's from 0x1, in the same order."""
import re

import pytest

from lab import run, tutorial_bridges
from test_ovs_trace import _map_ports, _odp_to_ofport

FLOWS = [
    # The tutorial's firewall, its flows #1 to #5 (veth_l0 is port 1,
    # veth_r0 port 2).
    "table=0, priority=50, ct_state=-trk, tcp, in_port=1, actions=ct(table=0)",
    "table=0, priority=50, ct_state=+trk+new, tcp, in_port=1, actions=ct(commit),2",
    "table=0, priority=50, ct_state=-trk, tcp, in_port=2, actions=ct(table=0)",
    "table=0, priority=50, ct_state=+trk+est, tcp, in_port=2, actions=1",
    "table=0, priority=50, ct_state=+trk+est, tcp, in_port=1, actions=2",
    # Two forks in one pass after a TTL change, one with NAT, and each
    # fork forking again: Open vSwitch traces the first pass's forks
    # first, then theirs. (No edits in a recirculation with actions after
    # its ct in the pass that forked it: sluice's pass goes on with them,
    # docs/OVS-DIALECT.md; the two second forks go to different tables:
    # Open vSwitch gives recirculations of equal frozen state one id.)
    "table=0, priority=60, ct_state=-trk, udp, in_port=3, "
    "actions=mod_nw_ttl:9, ct(table=1,zone=1), ct(table=2,zone=2,nat)",
    "table=1, priority=10, ip, ct_state=+trk+est, actions=ct(table=3,zone=3)",
    "table=1, priority=10, ip, ct_state=+trk+new, actions=ct(commit,zone=1,exec(set_field:0x7->ct_mark)),1",
    "table=2, priority=10, ip, ct_state=+trk+new, actions=ct(commit,table=4,zone=2,nat(dst=10.1.1.1:53)), 2",
    "table=2, priority=10, ip, ct_state=+trk+est, actions=mod_nw_src:10.9.9.9, 3",
    "table=3, priority=10, ip, actions=ct(commit,zone=3,exec(set_field:0x1/0x1->ct_label)), 4",
    "table=4, priority=10, ip, actions=4",
]

TCP = "tcp,nw_src=192.168.0.2,nw_dst=10.0.0.2,tp_src=1024,tp_dst=2048,nw_ttl=64"
UDP = "udp,nw_src=192.168.0.2,nw_dst=10.0.0.2,udp_src=1024,udp_dst=2048,nw_ttl=64"

TRACES = [
    # The tutorial's SYN, then its later segments as --ct-next states.
    f"in_port=1,{TCP}",
    f"in_port=1,{TCP} --ct-next trk,est",
    f"in_port=2,{TCP}",
    f"in_port=2,{TCP} --ct-next trk,est",
    f"in_port=2,{TCP} --ct-next trk,inv",
    # The forks: trk|new for each; then states that send the first fork
    # on to its own fork, given in Open vSwitch's order.
    f"in_port=3,{UDP}",
    f"in_port=3,{UDP} --ct-next trk,est",
    f"in_port=3,{UDP} --ct-next trk,est --ct-next trk,est --ct-next trk,rpl,est",
    f"in_port=3,{UDP} --ct-next trk,new --ct-next trk,est",
]

RULE = "=" * 79


def _blocks(text, odp):
    """The trace's blocks as compared: per block, its header lines, the
    connection fields, addresses, ports and TTL of its Flow:, its Resuming line and its datapath
    actions (ports mapped through `odp` when given), recirc ids renumbered
    in order of appearance."""
    ids = {}

    def renumber(s):
        return re.sub(r"(recirc\(|recirc_id=)(0x[0-9a-f]+)",
                      lambda m: m.group(1) + ids.setdefault(m.group(2), f"#{len(ids) + 1}"), s)

    parts = text.split(RULE)
    # parts: first block, then (header, block) pairs.
    out = []
    for i, part in enumerate(parts):
        lines = part.strip("\n").splitlines()
        if i % 2 == 1:
            out.append(("header", tuple(renumber(x) for x in lines)))
            continue
        flow = next((x for x in lines if x.startswith("Flow: ")), "")
        ct = ",".join(f for f in flow[6:].split(",")
                      if f.split("=")[0] in ("recirc_id", "ct_state", "ct_zone", "ct_mark", "ct_label",
                                             "nw_src", "nw_dst", "nw_ttl", "tp_src", "tp_dst"))
        resume = next((x.strip() for x in lines if "Resuming from table" in x), "")
        acts = [x.split(": ", 1)[1] for x in lines if x.startswith("Datapath actions: ")]
        assert len(acts) == 1, f"not one Datapath actions line in a block:\n{text}"
        act = _map_ports(acts[0], odp) if odp else acts[0]
        out.append(("block", renumber(ct), resume, renumber(act)))
    return out


@pytest.mark.hosts(4)
def test_trace_through_ct_blocks_as_open_vswitch(need, testbed, sluice, ovs, tmp_path):
    """Each trace's blocks on both switches: the same headers, connection
    fields, resumptions and datapath actions."""
    need("ovs-ofctl", "openvswitch-common")
    s, o, S, R, senv = tutorial_bridges(sluice, ovs, tmp_path)
    for sw in (S, R):
        run(["ovs-ofctl", "del-flows", sw])
        for f in FLOWS:
            run(["ovs-ofctl", "add-flow", sw, f])
    odp = _odp_to_ofport(o.appctl("dpif/show").stdout, "br0")

    problems = []
    seen_recirc = 0
    for t in TRACES:
        args = t.split()
        a = o.appctl("ofproto/trace", "br0", *args).stdout
        b = run(["ovs-appctl", "ofproto/trace", "br0", *args], env=senv).stdout
        want, got = _blocks(a, odp), _blocks(b, None)
        seen_recirc += len(want) > 1
        if want != got:
            problems.append(f"ofproto/trace br0 {t}:\n  Open vSwitch: {want}\n  sluice:       {got}\n"
                            f"--- Open vSwitch\n{a}--- sluice\n{b}")
    # The test's own check: every trace here recirculates on Open vSwitch.
    assert seen_recirc == len(TRACES), "a trace here did not recirculate on Open vSwitch"
    assert not problems, "\n\n".join(problems)
