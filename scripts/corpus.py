#!/usr/bin/env python3
"""The flow corpus: real Open vSwitch flow tables as the systems that program
OVS publish them (tests/corpus/<system>.flows, sources in SOURCES.md), with
Open vSwitch 3.1's verdict on each flow stored beside them
(tests/corpus/<system>.ovs) and sluice's verdict from `sluice-ctl
parse-flows`.

    scripts/corpus.py --ovs            # OVS's verdicts -> tests/corpus/*.ovs (root, OVS)
    scripts/corpus.py --report         # the comparison, printed (Markdown)
    scripts/corpus.py --out FILE       # ... written to FILE
    scripts/corpus.py --check          # the test: no OVS needed
    scripts/corpus.py --set-floors     # tests/corpus/floors.txt := today's counts

Every flow line is judged alone. A flow is a `ct` flow when it uses
connection tracking (ct(, ct_state, ct_mark, ct_label, ct_zone, ct_nw_*,
ct_ipv6_*, ct_tp_*, ct_clear, nat(); sluice runs them, so they are judged
and counted as every other flow (the floors too), and the report also
counts them apart.

OVS's verdict (--ovs): a private ovsdb-server and ovs-vswitchd (run, db and
log directories in a temporary directory; the machine-wide lock
/tmp/sluice-e2e.lock held throughout, since one netdev OVS runs per
machine), a userspace bridge br0 per system whose ports (patch ports, no OS
device) and table names come from tests/corpus/<system>.names, and each
flow added alone with `ovs-ofctl -O OpenFlow13 add-flow`; a refused flow is
tried again with OpenFlow14, OpenFlow15, then OpenFlow10 (ovs-ofctl's
default, with Nicira extensions), and `ok:OpenFlow15` records a flow only
another version takes. The groups and meters a flow names are created
first (an empty group of type all, a drop meter), and the ovs-ofctl
commands of tests/corpus/<system>.ovs-setup (such as add-tlv-map) run
once the bridge is up. Only the processes started here are
stopped, by their pid files.

The .ovs file: a header comment, then `LINE<TAB>HASH<TAB>VERDICT<TAB>REASON`
per flow (LINE in the .flows file, HASH the first 12 hex digits of the
flow's SHA-1, so a changed flow file is noticed).

sluice's verdict is sluice-ctl's: OpenFlow 1.3, or, for a flow only
OpenFlow 1.0 takes (`strip_vlan` with no VLAN matched), OpenFlow 1.0 with
NXM, as sluice-ctl picks the protocol per flow when no -O is given
(parse-flows prints `ok (by NXM+table_id)`). "Accepts" counts a flow
accepted under any version, by either.

--check fails (exit 1) when sluice accepts a flow in no version Open
vSwitch accepts it in (refused under every version; taken by Open vSwitch
only under another version than 1.3 and by sluice under 1.3; or the other
way), when it refuses a ct flow Open vSwitch accepts for a reason not in
CT_KNOWN, when sluice accepts fewer flows of a system than
tests/corpus/floors.txt records, or when it cannot run at all (no
sluice-ctl, a missing or stale .ovs file).
"""

import argparse
import collections
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import ovslib  # scripts/ovslib.py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "corpus")
FLOORS = os.path.join(CORPUS, "floors.txt")
LOCK = "/tmp/sluice-e2e.lock"
CT_RE = re.compile(
    r"(?<![A-Za-z0-9_])(ct\(|ct_state|ct_mark|ct_label|ct_zone|ct_nw_|ct_ipv6_|ct_tp_|ct_clear|nat\()"
)
# The ct flows Open vSwitch accepts and sluice refuses, each for a reason
# that is not connection tracking's (--check fails on any other, and on
# one of these sluice takes now). The same list, for the wire, is
# CORPUS_KNOWN in crates/ofp/tests/ovs_wire.rs.
CT_KNOWN: dict[str, str] = {}
# Tried in this order when OpenFlow 1.3 refuses a flow (OpenFlow10 is
# ovs-ofctl's default, OpenFlow 1.0 with Nicira extensions).
LATER = ["OpenFlow14", "OpenFlow15", "OpenFlow10"]


class Fail(Exception):
    """The corpus cannot be judged (a file or a tool is missing)."""


def systems():
    out = sorted(f[:-6] for f in os.listdir(CORPUS) if f.endswith(".flows"))
    if not out:
        raise Fail(f"no .flows files in {CORPUS}")
    return out


def flows(system):
    """[(line number, flow text)] of the system's .flows file."""
    out = []
    with open(os.path.join(CORPUS, system + ".flows")) as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if s and not s.startswith("#"):
                out.append((n, s))
    return out


def digest(flow):
    return hashlib.sha1(flow.encode()).hexdigest()[:12]


def is_ct(flow):
    return bool(CT_RE.search(flow))


def names(system):
    """{'port': [(name, no)], 'table': [(name, no)]} from <system>.names."""
    out = {"port": [], "table": []}
    path = os.path.join(CORPUS, system + ".names")
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for n, line in enumerate(f, 1):
            w = line.split("#", 1)[0].split()
            if not w:
                continue
            if len(w) != 3 or w[0] not in out:
                raise Fail(f"{path}:{n}: expected `port NAME NUMBER` or `table NAME NUMBER`")
            out[w[0]].append((w[1], int(w[2])))
    return out


# ---------------------------------------------------------------- Open vSwitch


class Ovs:
    """A private ovsdb-server + ovs-vswitchd in a temporary directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sluice-corpus-ovs-")
        self.env = dict(os.environ, OVS_RUNDIR=self.dir, OVS_DBDIR=self.dir, OVS_LOGDIR=self.dir)
        self.db = f"unix:{self.dir}/db.sock"

    def run(self, *args, check=True, timeout=30):
        p = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise Fail(f"{' '.join(args)}: {p.stderr.strip()}")
        return p

    def vsctl(self, *args):
        return self.run("ovs-vsctl", f"--db={self.db}", "--timeout=30", *args)

    def start(self):
        d = self.dir
        self.run("ovsdb-tool", "create", f"{d}/conf.db", "/usr/share/openvswitch/vswitch.ovsschema")
        self.run("ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock",
                 f"--pidfile={d}/ovsdb-server.pid", "--detach", f"--log-file={d}/ovsdb-server.log")
        self.vsctl("--no-wait", "init")
        self.run("ovs-vswitchd", self.db, f"--pidfile={d}/ovs-vswitchd.pid", "--detach",
                 f"--log-file={d}/ovs-vswitchd.log")

    def stop(self):
        ovslib.stop_daemons(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)

    def bridge(self, system):
        """br0 with the system's ports and table names (br0 replaced)."""
        self.vsctl("--if-exists", "del-br", "br0")
        self.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev",
                   "fail-mode=secure",
                   "protocols=OpenFlow10,OpenFlow11,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15")
        nm = names(system)
        args = []
        for name, no in nm["port"]:
            args += ["--", "add-port", "br0", name, "--", "set", "interface", name, "type=patch",
                     f"options:peer=corpus-peer-{no}", f"ofport_request={no}"]
        for i, (name, no) in enumerate(nm["table"]):
            args += ["--", f"--id=@t{i}", "create", "Flow_Table", f"name={name}",
                     "--", "set", "bridge", "br0", f"flow_tables:{no}=@t{i}"]
        if args:
            self.vsctl(*args)
        self.groups = set()
        self.meters = set()
        # The names must be visible to OpenFlow before flows use them.
        for _ in range(100):
            p = self.run("ovs-ofctl", "-O", "OpenFlow13", "dump-ports-desc", "br0", check=False)
            if p.returncode == 0 and all(f"({n})" in p.stdout for n, _ in nm["port"]):
                break
            time.sleep(0.1)
        else:
            raise Fail(f"{system}: br0's ports did not appear")
        setup = os.path.join(CORPUS, system + ".ovs-setup")
        if os.path.exists(setup):
            with open(setup) as f:
                for line in f:
                    w = line.split("#", 1)[0].split()
                    if w:
                        self.run("ovs-ofctl", "-O", "OpenFlow13", w[0], "br0", *w[1:])

    def objects(self, flow):
        """Creates the groups and meters the flow's actions name (an empty
        group of type all, a drop meter), as a controller would have
        first."""
        for g in re.findall(r"\bgroup:(\d+)", flow):
            if g not in self.groups:
                self.run("ovs-ofctl", "-O", "OpenFlow13", "add-group", "br0", f"group_id={g},type=all")
                self.groups.add(g)
        for m in re.findall(r"\bmeter:(\d+)", flow):
            if m not in self.meters:
                self.run("ovs-ofctl", "-O", "OpenFlow13", "add-meter", "br0",
                         f"meter={m},kbps,band=type=drop,rate=1000")
                self.meters.add(m)

    def add_flow(self, flow, version):
        p = self.run("ovs-ofctl", "-O", version, "add-flow", "br0", flow, check=False)
        if p.returncode == 0:
            return None
        return reason(p.stderr)


def reason(stderr):
    """One line of ovs-ofctl's error output: the OpenFlow error's name or
    ovs-ofctl's own message, with the first warning logged before it."""
    warn = None
    error = None
    own = None
    for line in stderr.strip().splitlines():
        line = line.strip()
        m = re.match(r"\d{4}-\d\d-\d\dT[\d:.]+Z\|\d+\|[\w-]+\|\w+\|(.*)$", line)
        if m:
            warn = warn or m.group(1).rstrip(":")
            continue
        m = re.match(r"OFPT_ERROR \(.*?\): (.*)$", line)
        if m and error is None:
            error = m.group(1)
        elif line.startswith("ovs-ofctl: ") and own is None:
            own = line[len("ovs-ofctl: "):]
    main = error or own or warn or "refused (no message)"
    if warn and warn != main:
        main += f" [{warn}]"
    return main.replace("\t", " ")


def ovs_verdicts(selected):
    if shutil.which("ovs-vswitchd") is None:
        raise Fail("ovs-vswitchd not found (scripts/setup.sh installs openvswitch-switch)")
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ovs = Ovs()
        try:
            ovs.start()
            version = ovs.run("ovs-vswitchd", "--version").stdout.splitlines()[0]
            for system in selected:
                ovs.bridge(system)
                rows = []
                for n, flow in flows(system):
                    ovs.objects(flow)
                    why = ovs.add_flow(flow, "OpenFlow13")
                    verdict = "ok"
                    if why is not None:
                        verdict = "refused"
                        for v in LATER:
                            if ovs.add_flow(flow, v) is None:
                                verdict = f"ok:{v}"
                                break
                    rows.append(f"{n}\t{digest(flow)}\t{verdict}\t{why or ''}")
                with open(os.path.join(CORPUS, system + ".ovs"), "w") as f:
                    f.write(f"# {version}: each flow of {system}.flows added alone to a netdev bridge\n")
                    f.write("# with ovs-ofctl -O OpenFlow13 add-flow (scripts/corpus.py --ovs).\n")
                    f.write("# LINE\tHASH\tVERDICT\tREASON (OpenFlow 1.3's refusal, if any)\n")
                    f.write("\n".join(rows) + "\n")
                ok = sum(r.split("\t")[2] == "ok" for r in rows)
                print(f"{system}: OVS accepts {ok} of {len(rows)}", file=sys.stderr)
            ovs.vsctl("--if-exists", "del-br", "br0")
        finally:
            ovs.stop()


def stored_ovs(system):
    """{line: (verdict, reason)}; fails when the file is missing or stale."""
    path = os.path.join(CORPUS, system + ".ovs")
    if not os.path.exists(path):
        raise Fail(f"{path} missing: run scripts/corpus.py --ovs (root, Open vSwitch)")
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            n, h, verdict, why = line.rstrip("\n").split("\t", 3)
            out[int(n)] = (h, verdict, why)
    fl = flows(system)
    if sorted(out) != [n for n, _ in fl] or any(out[n][0] != digest(s) for n, s in fl):
        raise Fail(f"{path} does not match {system}.flows: run scripts/corpus.py --ovs again")
    return {n: (v, w) for n, (_, v, w) in out.items()}


# ---------------------------------------------------------------- sluice


def sluice_ctl_path(given):
    if given:
        cands = [given]
    else:
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        cands = [os.path.join(target, "release", "sluice-ctl"), os.path.join(target, "debug", "sluice-ctl")]
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    raise Fail(f"sluice-ctl not found ({', '.join(cands)}): cargo build --release -p ctl")


def sluice_verdicts(ctl, system):
    """{line: (None, VERSION) when taken, by the protocol sluice-ctl picks
    for it (OpenFlow13, or OpenFlow10 with NXM: `ok (by NXM+table_id)`),
    or (the error, None)}."""
    args = [ctl, "parse-flows", os.path.join(CORPUS, system + ".flows")]
    nm = os.path.join(CORPUS, system + ".names")
    if os.path.exists(nm):
        args += ["--name-map", nm]
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode not in (0, 1) or p.stderr.strip():
        raise Fail(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    out = {}
    for line in p.stdout.splitlines():
        n, rest = line.split(": ", 1)
        if rest == "ok" or rest.startswith("ok ("):
            out[int(n)] = (None, "OpenFlow10" if "by NXM+table_id" in rest else "OpenFlow13")
        else:
            out[int(n)] = (rest.removeprefix("error: "), None)
    want = [n for n, _ in flows(system)]
    if sorted(out) != want:
        raise Fail(f"sluice-ctl parse-flows gave verdicts for other lines than {system}.flows has")
    return out


def refusal_key(err):
    """Groups sluice's refusals by the first token it did not take: `regN`,
    `ct_state`, `learn(`..."""
    m = re.match(r"`([^`]*)`", err)
    if not m:
        # Not a parse error (a check or the encoding): its code.
        return err.split(":", 1)[0]
    tok = m.group(1)
    if "(" in tok:
        key = tok.split("(", 1)[0] + "("
    elif "=" in tok:
        key = tok.split("=", 1)[0]
    elif ":" in tok and not re.fullmatch(r"[0-9a-fA-F:]+", tok):
        key = tok.split(":", 1)[0] + ":"
    else:
        key = tok
    key = re.sub(r"^(x{0,2}reg)\d+$", r"\1N", key)
    key = re.sub(r"(NXM_NX_X{0,2}REG)\d+", r"\1N", key)
    return key


# ---------------------------------------------------------------- comparison


def judge(ctl):
    """Per system: the rows [(line, flow, ct, ovs verdict, ovs reason,
    sluice error, sluice's version)]."""
    out = {}
    for system in systems():
        ovs = stored_ovs(system)
        sl = sluice_verdicts(ctl, system)
        out[system] = [(n, f, is_ct(f), ovs[n][0], ovs[n][1]) + sl[n] for n, f in flows(system)]
    return out


def ovs_takes(ov):
    """Open vSwitch takes the flow under some OpenFlow version."""
    return ov == "ok" or ov.startswith("ok:")


def counts(rows):
    c = collections.Counter()
    for _, _, ct, ov, _, serr, _ in rows:
        o = ovs_takes(ov)
        s = serr is None
        c["flows"] += 1
        c["ct" if ct else "nonct"] += 1
        pre = "ct_" if ct else ""
        c[pre + "ovs"] += o
        c[pre + "ovs_later"] += ov.startswith("ok:")
        c[pre + "sluice"] += s
        c[pre + "both"] += o and s
        c[pre + "sluice_only"] += s and not o
        c[pre + "ovs_only"] += o and not s
        c["sluice_all"] += s
        c["ovs_all"] += o
        c["both_all"] += o and s
        c["sluice_only_all"] += s and not o
        c["ovs_only_all"] += o and not s
    return c


def report(judged, top=15):
    total = collections.Counter()
    out = ["# Flow corpus: what Open vSwitch 3.1 and sluice accept", ""]
    out.append("Real flow tables as published by the systems that program Open vSwitch "
               "(`tests/corpus/`, sources in `tests/corpus/SOURCES.md`). Each flow is judged "
               "alone: Open vSwitch 3.1 by `ovs-ofctl -O OpenFlow13 add-flow` on a netdev bridge "
               "whose port and table names come from `<system>.names` (stored in "
               "`<system>.ovs`; a flow it refuses there is tried under OpenFlow 1.4, 1.5, then 1.0 "
               "with Nicira extensions, and counts as accepted if one takes it), sluice by "
               "`sluice-ctl parse-flows --name-map` (parsed, checked as a switch checks a flow "
               "before its tables, encoded as OpenFlow 1.3, or as OpenFlow 1.0 with NXM when only "
               "that takes it, as sluice-ctl sends it). Flows "
               "using connection tracking (`ct(`, `ct_state`, `nat(`, ...) are counted with the "
               "others and again apart. Made by `scripts/corpus.py --out`.")
    out.append("")
    out.append("## All flows")
    out.append("")
    out.append("| system | flows | ct flows | OVS accepts | sluice accepts | both | sluice only | OVS only |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for system, rows in judged.items():
        c = counts(rows)
        total.update(c)
        out.append(f"| {system} | {c['flows']} | {c['ct']} | {c['ovs_all']} | {c['sluice_all']} | "
                   f"{c['both_all']} | {c['sluice_only_all']} | {c['ovs_only_all']} |")
    t = total
    out.append(f"| **all** | {t['flows']} | {t['ct']} | {t['ovs_all']} | {t['sluice_all']} | "
               f"{t['both_all']} | {t['sluice_only_all']} | {t['ovs_only_all']} |")
    out.append("")
    out.append("## Flows without connection tracking")
    out.append("")
    out.append("| system | non-ct flows | OVS accepts | sluice accepts | both | sluice only | OVS only |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    for system, rows in judged.items():
        c = counts(rows)
        out.append(f"| {system} | {c['nonct']} | {c['ovs']} | {c['sluice']} | "
                   f"{c['both']} | {c['sluice_only']} | {c['ovs_only']} |")
    out.append(f"| **all** | {t['nonct']} | {t['ovs']} | {t['sluice']} | "
               f"{t['both']} | {t['sluice_only']} | {t['ovs_only']} |")
    out.append("")
    out.append("## Flows with connection tracking")
    out.append("")
    out.append("| system | ct flows | OVS accepts | sluice accepts | both | sluice only | OVS only |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    for system, rows in judged.items():
        c = counts(rows)
        out.append(f"| {system} | {c['ct']} | {c['ct_ovs']} | {c['ct_sluice']} | {c['ct_both']} | "
                   f"{c['ct_sluice_only']} | {c['ct_ovs_only']} |")
    out.append(f"| **all** | {t['ct']} | {t['ct_ovs']} | {t['ct_sluice']} | {t['ct_both']} | "
               f"{t['ct_sluice_only']} | {t['ct_ovs_only']} |")
    later = collections.Counter(ov.split(":", 1)[1] for rows in judged.values()
                                for _, _, _, ov, _, _, _ in rows if ov.startswith("ok:"))
    by10 = sum(via == "OpenFlow10" for rows in judged.values() for *_, via in rows)
    out.append("")
    out.append(f"Of the flows OVS accepts, {sum(later.values())} it accepts only under another "
               "OpenFlow version than 1.3 ("
               + ", ".join(f"{v}: {n}" for v, n in sorted(later.items()))
               + "; OpenFlow10 is ovs-ofctl's default, with Nicira extensions). sluice-ctl picks "
               f"a protocol per flow as ovs-ofctl does: {by10} flows go in by OpenFlow 1.0 with "
               "NXM (`strip_vlan` with no VLAN matched), the others by OpenFlow 1.3.")
    for title, pick in (("non-ct flows", False), ("ct flows", True)):
        keys = collections.Counter()
        example = {}
        for system, rows in judged.items():
            for n, f, ct, ov, _, serr, _ in rows:
                if ct == pick and serr is not None and ovs_takes(ov):
                    k = refusal_key(serr)
                    keys[k] += 1
                    example.setdefault(k, (system, n, serr))
        out.append("")
        out.append(f"## Why sluice refuses {title} that OVS accepts (top {top}, by first token it does not take)")
        out.append("")
        out.append("| token | flows | example (system:line: sluice's message) |")
        out.append("|---|---:|---|")
        for k, v in keys.most_common(top):
            s, n, e = example[k]
            e = e.replace("|", "\\|")
            if len(e) > 110:
                e = e[:107] + "..."
            out.append(f"| `{k}` | {v} | {s}:{n}: {e} |")
    out.append("")
    out.append("## ct flows Open vSwitch accepts and sluice refuses, each with its reason")
    out.append("")
    out.append("| flow | reason |")
    out.append("|---|---|")
    for system, rows in judged.items():
        for n, f, ct, ov, _, serr, _ in rows:
            if ct and ovs_takes(ov) and serr is not None:
                why = CT_KNOWN.get(f"{system}:{n}", f"not known: {serr}").replace("|", "\\|")
                out.append(f"| {system}:{n} | {why} |")
    ovs_why = collections.Counter()
    for system, rows in judged.items():
        for n, f, ct, ov, why, _, _ in rows:
            if ov != "ok":
                ovs_why[(system, ov, re.sub(r"\d+", "N", why)[:100])] += 1
    out.append("")
    out.append("## Why Open vSwitch refuses flows under OpenFlow 1.3 (as published)")
    out.append("")
    out.append("| system | verdict | OpenFlow 1.3's reason | flows |")
    out.append("|---|---|---|---:|")
    for (s, ov, w), v in sorted(ovs_why.items(), key=lambda kv: (kv[0][0], kv[0][1], -kv[1])):
        out.append(f"| {s} | {ov} | {w.replace('|', '/')} | {v} |")
    return "\n".join(out) + "\n"


def read_floors():
    if not os.path.exists(FLOORS):
        raise Fail(f"{FLOORS} missing: scripts/corpus.py --set-floors")
    out = {}
    with open(FLOORS) as f:
        for line in f:
            w = line.split("#", 1)[0].split()
            if w:
                out[w[0]] = int(w[1])
    return out


def check(judged):
    """The test: returns the list of failures."""
    failures = []
    floors = read_floors()
    passed = 0
    for system, rows in judged.items():
        c = counts(rows)
        # Taken by sluice only in a version Open vSwitch takes it in:
        # refused by Open vSwitch under every version, refused by sluice;
        # taken only under another version than 1.3 ("ok:OpenFlow10"),
        # not taken by sluice under 1.3; taken under 1.3, by sluice too.
        for n, f, _, ov, why, serr, via in rows:
            if serr is not None:
                continue
            if ov == "refused":
                failures.append(f"{system}.flows:{n}: sluice accepts a flow Open vSwitch refuses "
                                f"under every OpenFlow version ({why}): {f}")
            elif ov != "ok" and via == "OpenFlow13":
                failures.append(f"{system}.flows:{n}: sluice accepts under OpenFlow 1.3 a flow "
                                f"Open vSwitch takes only under {ov[3:]} ({why}): {f}")
            elif ov == "ok" and via != "OpenFlow13":
                failures.append(f"{system}.flows:{n}: sluice takes by {via} a flow Open vSwitch "
                                f"takes under OpenFlow 1.3: {f}")
        # A ct flow Open vSwitch takes: refused only for a known reason.
        for n, f, ct, ov, _, serr, _ in rows:
            k = f"{system}:{n}"
            if ct and ovs_takes(ov) and serr is not None and k not in CT_KNOWN:
                failures.append(f"{system}.flows:{n}: sluice refuses a ct flow Open vSwitch accepts "
                                f"({serr}), not in CT_KNOWN: {f}")
            if k in CT_KNOWN and serr is None:
                failures.append(f"{k}: in CT_KNOWN ({CT_KNOWN[k]}) but sluice accepts it now: take it out")
        if system not in floors:
            failures.append(f"{system}: no floor in {FLOORS}")
        elif c["sluice_all"] < floors[system]:
            failures.append(f"{system}: sluice accepts {c['sluice_all']} flows, below the floor of {floors[system]}")
        else:
            passed += 1
        print(f"corpus {system}: {c['flows']} flows, OVS accepts {c['ovs_all']}, "
              f"sluice accepts {c['sluice_all']} (floor {floors.get(system, '-')})")
    missing = set(floors) - set(judged)
    for s in sorted(missing):
        failures.append(f"floors.txt names {s}, which has no .flows file")
    return passed, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ovs", action="store_true", help="compute Open vSwitch's verdicts (root, OVS installed)")
    ap.add_argument("--system", action="append", help="with --ovs: only this system (repeatable)")
    ap.add_argument("--report", action="store_true", help="print the comparison")
    ap.add_argument("--out", help="write the comparison to this file")
    ap.add_argument("--check", action="store_true", help="the test (no OVS needed)")
    ap.add_argument("--set-floors", action="store_true", help="record today's sluice counts as floors")
    ap.add_argument("--sluice-ctl", help="the sluice-ctl binary (default: the target dir's)")
    a = ap.parse_args()
    if not (a.ovs or a.report or a.out or a.check or a.set_floors):
        ap.error("nothing to do: --ovs, --report, --out, --check or --set-floors")
    try:
        if a.ovs:
            ovs_verdicts(a.system or systems())
        if not (a.report or a.out or a.check or a.set_floors):
            return 0
        judged = judge(sluice_ctl_path(a.sluice_ctl))
        if a.set_floors:
            with open(FLOORS, "w") as f:
                f.write("# The fewest flows of each system sluice must accept (scripts/corpus.py --check);\n"
                        "# raised as features land (scripts/corpus.py --set-floors).\n")
                for s, rows in judged.items():
                    f.write(f"{s} {counts(rows)['sluice_all']}\n")
        text = report(judged)
        if a.report:
            sys.stdout.write(text)
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
        if a.check:
            passed, failures = check(judged)
            for f in failures:
                print("FAIL " + f)
            print(f"corpus: {passed} passed, {len(failures)} failed")
            return 1 if failures else 0
        return 0
    except (Fail, OSError, subprocess.SubprocessError) as e:
        print(f"corpus: cannot run: {e}", file=sys.stderr)
        print("corpus: 0 passed, 1 failed")
        return 1


if __name__ == "__main__":
    sys.exit(main())
