#!/usr/bin/env python3
"""How tests/corpus/<system>.flows and SOURCES.md were made: the flow lines
picked out of the documentation and tests of the systems that program Open
vSwitch (Python 3.11 stdlib; the rules are SOURCES.md's). Needs a git
directory of each repository named in SOURCES below, at MIRROR/OWNER+NAME/repo
(full history: three documents are also read at every earlier commit).

    scripts/corpus_collect.py MIRROR [OUT]    # OUT: tests/corpus

It rewrites the .flows files and SOURCES.md; run scripts/corpus.py --ovs
afterwards (the .ovs verdicts follow the lines), and check the .names files
cover every port and table name the flows use.
"""
import os
import re
import shlex
import subprocess
import sys

MIRROR = sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__)
OUT = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "tests", "corpus")

STATS = re.compile(
    r"\b(duration=[0-9.]+s|n_packets=\d+|n_bytes=\d+|idle_age=\d+|hard_age=\d+"
    r"|n_offload_packets=\d+|n_offload_bytes=\d+)\s*(,\s*|(?=\s)|$)"
)
START = re.compile(
    r"(cookie=|table=|priority=|in_port=|ip\b|ipv6\b|arp\b|tcp\b|udp\b|tcp6\b|udp6\b|icmp\b|icmp6\b|"
    r"dl_|nw_|reg\d|metadata=|tun_|ct_|actions=|conj_id|vlan_tci|dl_vlan|pkt_mark|recirc_id|eth_|sctp|rarp|mpls|dl_type)"
)
BAD = re.compile(r"(\$|<[^-]|(?<!-)>|\?|\.\.\.|xxx|\bxx\b|\{|\}|%|\bbucket=|\bgroup_id=|\bmeter=|\*)")


def show(gitdir, path, commit="HEAD"):
    return subprocess.run(
        ["git", "--git-dir", gitdir, "show", f"{commit}:{path}"],
        check=True, capture_output=True, text=True,
    ).stdout


def clean(s):
    s = s.strip()
    # leading diff/quote/list markers
    s = re.sub(r"^(\d+\.\s+)", "", s)
    s = re.sub(r"^[+\-]\s*(?=(cookie|table|priority|in_port|[a-z_]+=))", "", s)
    m = re.search(r"ovs-ofctl\b.*?\badd-flows?\s+\S+\s+(.*)$", s)
    if m:
        s = m.group(1).strip().rstrip("\\").strip()
        try:
            # As the shell hands it to ovs-ofctl.
            s = " ".join(shlex.split(s))
        except ValueError:
            pass
    s = s.strip().strip("\\").strip()
    if len(s) >= 2 and s[0] in "\"'`" and s[-1] == s[0]:
        s = s[1:-1]
    s = s.strip("`")
    s = STATS.sub("", s)
    s = re.sub(r"\s+#.*$", "", s)  # a trailing comment
    s = re.sub(r"\s+", " ", s).strip()
    s = s.rstrip(",").strip()
    return s


def plausible(s):
    if "actions=" not in s or BAD.search(s):
        return False
    if not START.match(s):
        return False
    if s.count("(") != s.count(")") or s.count("[") != s.count("]"):
        return False  # a piece of a longer string
    head = s.split("actions=", 1)[0]
    # every head token is key=value or a bare protocol/flag word
    for tok in re.split(r"[,\s]+", head):
        if not tok:
            continue
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(=\S+)?", tok):
            return False
    return True


def text_mode(src):
    """Lines, with wrapped dump-flows records (indented continuation lines)
    joined to the record they continue."""
    lines = src.splitlines()
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        st = line.strip()
        st2 = re.sub(r"^[+\-]\s*", "", st)
        if st2.startswith("cookie=") and "actions=" not in st2:
            indent = len(line) - len(line.lstrip())
            buf = [st2]
            j = i + 1
            while j < len(lines):
                nxt = lines[j]
                nind = len(nxt) - len(nxt.lstrip())
                ns = nxt.strip()
                if not ns or nind <= indent or ns.startswith("cookie="):
                    break
                buf.append(ns)
                j += 1
            joined = " ".join(buf)
            # an actions list wrapped after a comma keeps going
            out.append((i + 1, joined))
            i = j
            continue
        # shell line continuation: ovs-ofctl add-flow br0 \ "...."
        if st.endswith("\\") and "ovs-ofctl" in st:
            buf = [st[:-1]]
            j = i + 1
            while j < len(lines):
                ns = lines[j].strip()
                cont = ns.endswith("\\")
                buf.append(ns[:-1] if cont else ns)
                j += 1
                if not cont:
                    break
            out.append((i + 1, " ".join(buf)))
            i = j
            continue
        spans = re.findall(r"``(.+?)``", line)
        if spans:
            # Flows quoted in running text: the spans only.
            out.extend((i + 1, sp) for sp in spans if not sp.startswith("actions="))
        else:
            out.append((i + 1, line))
        i += 1
    return out


def ovnat_mode(src, macros):
    out = []
    for n, line in enumerate(src.splitlines(), 1):
        line = line.replace("[[", "[").replace("]]", "]")
        for k, v in macros.items():
            line = re.sub(r"\b%s\b" % k, v, line)
        out.append((n, line))
    return out


def go_mode(src):
    out = []
    for n, line in enumerate(src.splitlines(), 1):
        for m in re.finditer(r'"((?:[^"\\]|\\.)*)"|`([^`]*)`', line):
            s = m.group(1) if m.group(1) is not None else m.group(2)
            if m.group(1) is not None:
                s = s.replace('\\"', '"')
            out.append((n, s))
    return out


def py_mode(src):
    """Every string constant of the module (implicit concatenation joined)."""
    import ast
    out = []
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
    out.sort()
    return out



def sources_md(rows, dest):
    total=sum(int(r[4]) for r in rows)
    out=["# Where the corpus's flows come from","",
    f"{total} flows in {len(set(r[0] for r in rows))} files. Each `<system>.flows` file is made of blocks, each headed by",
    "`# source: REPO PATH@COMMIT`; this table lists them all. The flows are data (what these",
    "systems install in Open vSwitch, as their documentation and tests publish it), taken as",
    "written, with only these changes:","",
    "- dump-flows statistics removed (`duration=`, `n_packets=`, `n_bytes=`, `idle_age=`,",
    "  `hard_age=`); `cookie=`, `table=`, `priority=` and timeouts kept;",
    "- runs of white space made one space; a wrapped dump-flows record (continuation lines",
    "  indented under its `cookie=` line) joined into one line; a shell `ovs-ofctl add-flow",
    "  BRIDGE \"FLOW\"` reduced to FLOW as the shell hands it over (quotes removed); a flow",
    "  quoted in running text (``` ``...`` ```) taken from the quotes; a leading diff mark",
    "  (`+`/`-`) or list number removed; a trailing `# comment` removed;",
    "- OVN's autotest files: m4 quoting undone (`[[`/`]]` are `[`/`]`) and the `OFTABLE_*`",
    "  macros replaced by their numbers from `tests/ovn-macros.at` at the same commit (the",
    "  text ovs-ofctl saw when the test ran);",
    "- Go and Python sources: flows taken from string literals (Python's joined as the",
    "  compiler joins them); a literal that is only `actions=...` (a piece appended to a",
    "  match in code) is left out;",
    "- left out: lines with placeholders or shell/format variables (`$x`, `<x>`, `?`, `...`,",
    "  `xx`, `%s`, `{}`, `*`), lines whose parentheses or brackets do not balance (a piece",
    "  of a longer string), group and meter lines, and a flow already listed earlier in the",
    "  same file (the `dups` column); in antrea, flows naming the table `classification`",
    "  of an older pipeline (docs/antctl.md).","",
    "Three documents are also taken at every earlier commit that changed them (newest",
    "first, only the flows not listed before): Neutron's OVS firewall devref, Antrea's OVS",
    "pipeline document and the OVS Faucet tutorial. Their earlier versions show the flows of",
    "earlier versions of those systems (Antrea's numbered tables before its flexible",
    "pipeline, for instance).","",
    "The neutron repository's OVN reference architecture pages show ovn-controller's",
    "flows; they are in `ovn.flows`. `ovs-docs` is the OVS documentation's own examples",
    "(the advanced tutorial and others). `<system>.names` gives the ports and table names",
    "the flows use (both Open vSwitch and `sluice-ctl parse-flows --name-map` read it);",
    "`<system>.ovs-setup` lists ovs-ofctl commands run on the bridge first (OVN's Geneve",
    "TLV map). The lines were picked out by scripts/corpus_collect.py (heuristics over the",
    "files named below) and spot-checked by hand; they were collected on 2026-11-27.","",
    "| system | repository | path | commit | flows | dups | what it is |",
    "|---|---|---|---|---:|---:|---|"]
    for s,repo,path,commit,n,d,desc in rows:
        out.append(f"| {s} | {repo} | `{path}` | `{commit[:12]}` | {n} | {d} | {desc} |")
    out.append("")
    out.append("The `# source:` lines in the `.flows` files give the full commits.")
    with open(dest, "w") as f:
        f.write("\n".join(out) + "\n")


# system -> list of (owner/name, path, mode, description)
SOURCES = {
    "neutron": [
        ("openstack/neutron", "doc/source/contributor/internals/openvswitch_firewall.rst", "text",
         "devref: the OVS firewall driver's flows"),
        ("openstack/neutron", "doc/source/contributor/internals/openvswitch_firewall.rst", "history",
         "the same devref at an earlier commit: flows of earlier versions of the driver"),
        ("openstack/neutron", "neutron/tests/unit/agent/common/test_ovs_lib.py", "py", "ovs_lib unit tests"),
        ("openstack/neutron", "neutron/tests/unit/agent/linux/openvswitch_firewall/test_firewall.py", "py",
         "OVS firewall unit tests"),
        ("openstack/neutron", "neutron/tests/functional/agent/common/test_ovs_lib.py", "py", "ovs_lib functional tests"),
        ("openstack/neutron", "neutron/tests/common/agents/l2_extensions.py", "py", "L2 extension test helpers"),
        ("openstack/neutron", "neutron/agent/ovn/extensions/bgp/bridge.py", "py", "OVN agent BGP extension"),
        ("openstack/neutron", "neutron/tests/functional/agent/ovn/extensions/bgp/test_bridge.py", "py",
         "OVN agent BGP extension tests"),
    ],
    "ovn": [
        ("ovn-org/ovn", "tests/ovn.at", "ovnat", "ovn-controller flows checked by the test suite"),
        ("ovn-org/ovn", "tests/ovn-controller.at", "ovnat", "ovn-controller tests"),
        ("ovn-org/ovn", "tests/system-ovn.at", "ovnat", "system tests"),
        ("ovn-org/ovn", "tests/ovn-br-controller.at", "ovnat", "ovn-br-controller tests"),
        ("ovn-org/ovn", "Documentation/tutorials/ovn-openstack.rst", "text", "OVN/OpenStack tutorial"),
        ("openstack/neutron", "doc/source/admin/ovn/refarch/provider-networks.rst", "text",
         "Neutron's OVN reference architecture: ovn-controller's br-int flows"),
        ("openstack/neutron", "doc/source/admin/ovn/refarch/selfservice-networks.rst", "text", "likewise"),
        ("openstack/neutron", "doc/source/admin/ovn/refarch/routers.rst", "text", "likewise"),
        ("openstack/neutron", "doc/source/admin/ovn/refarch/launch-instance-provider-network.rst", "text",
         "likewise"),
        ("openstack/neutron", "doc/source/admin/ovn/refarch/launch-instance-selfservice-network.rst", "text",
         "likewise"),
    ],
    "antrea": [
        ("antrea-io/antrea", "docs/design/ovs-pipeline.md", "text", "the OVS pipeline design document"),
        ("antrea-io/antrea", "docs/design/ovs-pipeline.md", "history",
         "the same document at an earlier commit: earlier pipelines (numbered tables)"),
        ("antrea-io/antrea", "docs/antctl.md", "text", "antctl documentation"),
        ("antrea-io/antrea", "docs/external-node.md", "text", "ExternalNode documentation"),
        ("antrea-io/antrea", "pkg/agent/openflow/client_test.go", "go", "expected flows of the agent's unit tests"),
        ("antrea-io/antrea", "pkg/agent/openflow/egress_test.go", "go", "likewise"),
        ("antrea-io/antrea", "pkg/agent/openflow/externalnode_connectivity_test.go", "go", "likewise"),
        ("antrea-io/antrea", "pkg/agent/openflow/multicast_test.go", "go", "likewise"),
        ("antrea-io/antrea", "pkg/agent/openflow/network_policy_test.go", "go", "likewise"),
        ("antrea-io/antrea", "pkg/agent/openflow/pipeline_test.go", "go", "likewise"),
        ("antrea-io/antrea", "pkg/agent/openflow/pod_connectivity_test.go", "go", "likewise"),
        ("antrea-io/antrea", "pkg/agent/openflow/service_test.go", "go", "likewise"),
    ],
    "ovn-kubernetes": [
        ("ovn-org/ovn-kubernetes", "docs/design/host-to-node-port-hairpin-trafficflow.md", "text", "design docs"),
        ("ovn-org/ovn-kubernetes", "docs/design/service-traffic-policy.md", "text", "design docs"),
        ("ovn-org/ovn-kubernetes", "docs/features/cluster-egress-controls/egress-ip.md", "text", "feature docs"),
        ("ovn-org/ovn-kubernetes", "go-controller/pkg/node/gateway_localnet_linux_test.go", "go",
         "gateway flows expected by the node's unit tests"),
        ("ovn-org/ovn-kubernetes", "go-controller/hybrid-overlay/pkg/controller/ovn_node_linux.go", "go",
         "hybrid overlay flows"),
        ("ovn-org/ovn-kubernetes", "go-controller/hybrid-overlay/pkg/controller/ovn_node_linux_test.go", "go",
         "hybrid overlay unit tests"),
        ("ovn-org/ovn-kubernetes", "go-controller/pkg/node/gateway_shared_intf.go", "go", "gateway flows"),
        ("ovn-org/ovn-kubernetes", "go-controller/pkg/node/management-port.go", "go", "management port"),
        ("ovn-org/ovn-kubernetes", "go-controller/pkg/node/management-port_linux_test.go", "go", "likewise"),
        ("ovn-org/ovn-kubernetes", "go-controller/pkg/node/openflow_manager.go", "go", "openflow manager"),
    ],
    "openshift-sdn": [
        ("openshift/sdn", "pkg/network/node/ovscontroller.go", "go", "the node's OVS controller"),
        ("openshift/sdn", "pkg/network/node/ovscontroller_test.go", "go", "its unit tests' flow dumps"),
        ("openshift/sdn", "pkg/network/node/networkpolicy.go", "go", "network policy"),
        ("openshift/sdn", "pkg/network/node/networkpolicy_test.go", "go", "network policy tests"),
        ("openshift/sdn", "pkg/network/node/multitenant.go", "go", "multitenant plugin"),
        ("openshift/sdn", "pkg/network/node/singletenant.go", "go", "single-tenant plugin"),
    ],
    "netvirt": [
        ("opendaylight/netvirt", "resources/tools/odltools/odltools/tests/resources/flow_dumps.1.txt", "text",
         "odltools test data: dump-flows of NetVirt-programmed br-int"),
        ("opendaylight/netvirt", "resources/tools/odltools/odltools/tests/resources/flow_dumps.2.txt", "text",
         "likewise"),
        ("opendaylight/netvirt", "resources/tools/odltools/odltools/tests/resources/flow_dumps.3.txt", "text",
         "likewise"),
    ] + [
        ("opendaylight/netvirt", p, "text", "design spec")
        for p in [
            "docs/openstack-guide/openstack-with-netvirt.rst",
            "docs/specs/fluorine/controller-punt-protection.rst",
            "docs/specs/fluorine/ovs_based_na_responder_for_gw.rst",
            "docs/specs/fluorine/subnet-routing-for-hidden-ipv6.rst",
            "docs/specs/neon/igmp-snooping.rst",
            "docs/specs/oxygen/acl-non-conntrack.rst",
            "docs/specs/oxygen/acl-reflection-on-existing-traffic.rst",
            "docs/specs/oxygen/acl-stats.rst",
            "docs/specs/oxygen/conntrack-based-snat.rst",
            "docs/specs/oxygen/dhcp-dynamic-allocation-pool.rst",
            "docs/specs/oxygen/ecmp-bgp-l3vpn.rst",
            "docs/specs/oxygen/l3vpn-over-vxlan-with-evpn-rt5.rst",
            "docs/specs/oxygen/neutron-port-for-dhcp-service.rst",
            "docs/specs/oxygen/new-sfc-classifier.rst",
            "docs/specs/oxygen/policy-based-path-selection.rst",
            "docs/specs/oxygen/setup-smac-for-routed-packets-to-virt-endpoints.rst",
            "docs/specs/oxygen/temporary-smac-learning.rst",
            "docs/specs/oxygen/vni-based-l2-switching-l3-forwarding-and-NATing.rst",
        ]
    ],
    "faucet": [
        ("openvswitch/ovs", "Documentation/tutorials/faucet.rst", "text",
         "the OVS Faucet tutorial: the flows Faucet installs"),
        ("openvswitch/ovs", "Documentation/tutorials/faucet.rst", "history",
         "the same tutorial at an earlier commit: earlier Faucet versions' flows"),
    ],
    "ovs-docs": [
        ("openvswitch/ovs", "Documentation/tutorials/ovs-advanced.rst", "text", "the advanced OVS tutorial"),
        ("openvswitch/ovs", "Documentation/tutorials/ovs-conntrack.rst", "text", "the conntrack tutorial"),
        ("openvswitch/ovs", "Documentation/faq/openflow.rst", "text", "the OpenFlow FAQ"),
        ("openvswitch/ovs", "Documentation/faq/qos.rst", "text", "the QoS FAQ"),
        ("openvswitch/ovs", "Documentation/faq/bareudp.rst", "text", "the bareudp FAQ"),
        ("openvswitch/ovs", "Documentation/ref/ovs-actions.7.rst", "text", "ovs-actions(7)"),
        ("openvswitch/ovs", "Documentation/topics/dpdk/bridge.rst", "text", "DPDK bridge topics"),
        ("openvswitch/ovs", "Documentation/topics/flow-visualization.rst", "text", "flow visualization"),
        ("openvswitch/ovs", "Documentation/intro/install/afxdp.rst", "text", "AF_XDP install guide"),
        ("openvswitch/ovs", "Documentation/howto/tc-offload.rst", "text", "TC offload howto"),
    ],
}

# Lines taken out on purpose (regexes over the flow), with why.
EXCLUDE = {
    "antrea": [(r"table=classification\b", "names a table of an older Antrea pipeline")],
}


def gitdir(repo):
    return os.path.join(MIRROR, repo.replace("/", "+"), "repo")


def commit_of(repo):
    return subprocess.run(["git", "--git-dir", gitdir(repo), "rev-parse", "HEAD"],
                          check=True, capture_output=True, text=True).stdout.strip()


def history(repo, path):
    """(commit, path) of every earlier version of the file, newest first
    (renames followed), HEAD's left out."""
    log = subprocess.run(["git", "--git-dir", gitdir(repo), "log", "--format=C %H", "--follow",
                          "--name-only", "--", path], check=True, capture_output=True, text=True).stdout
    out = []
    c = None
    for line in log.splitlines():
        if line.startswith("C "):
            c = line[2:]
        elif line.strip():
            out.append((c, line.strip()))
    return out


def candidates(repo, path, mode, commit="HEAD"):
    src = show(gitdir(repo), path, commit)
    if mode == "text":
        cands = text_mode(src)
    elif mode == "ovnat":
        macros = {}
        mac = show(gitdir(repo), "tests/ovn-macros.at")
        for m in re.finditer(r"m4_define\(\[(OFTABLE_[A-Z0-9_]+)\], \[(\d+)\]\)", mac):
            macros[m.group(1)] = m.group(2)
        cands = ovnat_mode(src, dict(sorted(macros.items(), key=lambda kv: -len(kv[0]))))
    elif mode == "go":
        cands = go_mode(src)
    elif mode == "py":
        cands = py_mode(src)
    for n, c in cands:
        s = clean(c)
        if not plausible(s):
            continue
        if mode in ("go", "py") and s.startswith("actions="):
            continue  # a fragment appended to a match in code
        yield n, s


def main():
    summary = []
    for system, srcs in SOURCES.items():
        seen = set()
        lines = [f"# {system}: flows as published (see SOURCES.md); one flow per line.",
                 "# Statistics fields of dump-flows output are removed; a flow already",
                 "# listed earlier in this file is not repeated."]
        total = 0
        expanded = []
        for repo, path, mode, desc in srcs:
            if mode == "history":
                for c, p in history(repo, path):
                    expanded.append((repo, p, "text", desc, c))
            else:
                expanded.append((repo, path, mode, desc, commit_of(repo)))
        for repo, path, mode, desc, commit in expanded:
            block = []
            dups = 0
            try:
                cands = list(candidates(repo, path, mode, commit))
            except subprocess.CalledProcessError:
                continue  # the file is not there at that commit (a deletion)
            for n, s in cands:
                if any(re.search(rx, s) for rx, _ in EXCLUDE.get(system, [])):
                    continue
                if s in seen:
                    dups += 1
                    continue
                seen.add(s)
                block.append(s)
            if not block:
                continue
            lines.append("")
            lines.append(f"# source: {repo} {path}@{commit}")
            lines.extend(block)
            total += len(block)
            summary.append((system, repo, path, commit, len(block), dups, desc))
        with open(os.path.join(OUT, f"{system}.flows"), "w") as f:
            f.write("\n".join(lines) + "\n")
        print(system, total)
    sources_md([[str(x) for x in row] for row in summary], os.path.join(OUT, "SOURCES.md"))


if __name__ == "__main__":
    main()
