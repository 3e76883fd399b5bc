#!/usr/bin/env python3
"""Replays what ovn-controller installed on Open vSwitch into sluice, one
message at a time, and lists what sluice refuses: each distinct OpenFlow
error with the action (or match field) that draws it and an example flow.

ovn-controller sends its flows in atomic bundles and, on an error, drops the
connection and sends the same bundle again: a live run (test_ovn.py) shows
only the first refused flow. This shows them all. Root only.

  OVN_E2E_DUMP=/tmp/ovn-dump pytest tests/e2e/test_ovn.py -k ovs   # the dumps
  tests/e2e/ovn_replay.py /tmp/ovn-dump [--bins target/release]

For each CHASSIS.flows of the dump (ovs-ofctl dump-flows of br-int, with its
.groups, .meters, .tlv and .ports beside it): sluice --ovsdb in a namespace
of its own, br-int (netdev, secure) with a veth for every port number
Open vSwitch had (so output:N and in_port=N name a port), then with
ovs-ofctl -O OpenFlow15: the TLV mapping, the meters, the groups, the flows.
A refused flow is tried again with its match alone (actions=drop) and with
each of its actions alone (and those inside clone(...) and ct(exec(...))),
to name the culprit. Everything started is ended by PID; the namespace is
deleted.
"""
import argparse
import collections
import os
import re
import signal
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import lab  # noqa: E402


def split_top(text, sep=","):
    """Splits at `sep` outside parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        out.append(cur)
    return out


def flow_parts(line):
    """(match, actions) of a dump-flows --no-stats line, the cookie kept."""
    line = line.strip()
    m, _, a = line.partition(" actions=")
    return m.replace(", ", ","), a


def inner_actions(action):
    """The actions nested in clone(...) or ct(...exec(...)), each as it can
    be sent alone (one of ct's wrapped in ct(commit,exec(...)), where Open
    vSwitch's client allows it); or []."""
    if action.startswith("clone(") and action.endswith(")"):
        return split_top(action[6:-1])
    if action.startswith("ct(") and "exec(" in action:
        for part in split_top(action[3:-1]):
            if part.startswith("exec(") and part.endswith(")"):
                return [f"ct(commit,exec({i}))" for i in split_top(part[5:-1])]
    return []


def shape(text):
    """An action or match field with its values blanked: what kind it is."""
    s = re.sub(r"0x[0-9a-fA-F]+|\b\d+(\.\d+){3}(:\d+)?|\b\d+\b", "N", text)
    s = re.sub(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", "MAC", s)
    return s


class Replay:
    def __init__(self, bins, workdir):
        self.bins = Path(bins)
        self.w = Path(workdir)
        self.ns = f"ovnrp{os.getpid()}"
        self.procs = []

    def x(self, *cmd, check=False):
        return lab.run(["ip", "netns", "exec", self.ns, *map(str, cmd)], check=check, timeout=60)

    def up(self, ports):
        lab.run(["ip", "netns", "add", self.ns])
        self.x("ip", "link", "set", "lo", "up")
        (self.w / "empty.toml").write_text("")
        self.sluice = lab.Sluice(self.bins, self.ns,
                                 ["--config", self.w / "empty.toml", "--ovsdb", f"punix:{self.w}/db.sock",
                                  "--ovsdb-file", self.w / "conf.db", "--run-dir", self.w], self.w).start()
        self.vsctl("add-br", "br-int", "--", "set", "bridge", "br-int", "datapath_type=netdev", "fail_mode=secure",
                   "protocols=OpenFlow15")
        for no in ports:
            self.x("ip", "link", "add", f"rp{no}", "type", "veth", "peer", "name", f"rq{no}", check=True)
            self.x("ip", "link", "set", f"rp{no}", "up")
            self.x("ip", "link", "set", f"rq{no}", "up")
            self.vsctl("add-port", "br-int", f"rp{no}", "--", "set", "interface", f"rp{no}", f"ofport_request={no}")

    def vsctl(self, *args):
        return lab.run(["ovs-vsctl", f"--db=unix:{self.w}/db.sock", "--timeout=20", *args], check=True)

    def ofctl(self, cmd, *args):
        p = lab.run(["ovs-ofctl", "-O", "OpenFlow15", "--strict", cmd, f"unix:{self.w}/br-int.mgmt", *args],
                    check=False, timeout=30)
        return p.returncode, (p.stdout + p.stderr).strip()

    def down(self):
        if getattr(self, "sluice", None) is not None:
            self.sluice.stop()
        pids = lab.run(["ip", "netns", "pids", self.ns], check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        lab.run(["ip", "netns", "del", self.ns], check=False)


def error_of(out):
    m = re.search(r"OFPT_ERROR \(OF1\.5\) \(xid=0x[0-9a-f]+\): (\S+)", out)
    if m:
        return m.group(1)
    return out.splitlines()[-1] if out else "?"


def culprits(r, match, actions, err):
    """What in a refused flow draws `err`: the match alone, or the actions
    that are refused alone (recursing into clone/ct exec)."""
    rc, out = r.ofctl("add-flow", f"{match},actions=drop")
    if rc != 0:
        return [("match", match, error_of(out))]
    found = []
    for a in split_top(actions):
        rc, out = r.ofctl("add-flow", f"{match},actions={a}")
        if rc == 0 or "OFPT_ERROR" not in out:
            continue  # taken, or not a message Open vSwitch's client sends alone
        inner = [i for i in inner_actions(a)]
        deeper = []
        for i in inner:
            rc2, out2 = r.ofctl("add-flow", f"{match},actions={i}")
            if rc2 != 0 and "OFPT_ERROR" in out2:
                deeper.append(("action", i, error_of(out2)))
        found += deeper or [("action", a, error_of(out))]
    return found or [("flow", actions, err)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump", type=Path)
    ap.add_argument("--bins", default=os.environ.get("SLUICE_BIN_DIR", str(lab.REPO / "target/release")))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("ovn_replay: root only (a network namespace)")
    # (kind, error, shape) -> [count, example text, example flow, scenarios]
    seen = collections.OrderedDict()
    totals = []
    for flows in sorted(args.dump.rglob("*.flows")):
        scen = f"{flows.parent.name}/{flows.stem}"
        base = flows.with_suffix("")
        ports = sorted({int(n) for n in re.findall(r"^ (\d+)\(", Path(f"{base}.ports").read_text(), re.M)})
        with tempfile.TemporaryDirectory(prefix="ovnrp.") as w:
            r = Replay(args.bins, w)
            try:
                r.up(ports)
                n_ok = n_bad = 0
                tlv = Path(f"{base}.tlv").read_text()
                for cls, typ, ln, field in re.findall(r"^\s+(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+(\d+)\s+(tun_metadata\d+)",
                                                       tlv, re.M):
                    rc, out = r.ofctl("add-tlv-map", f"{{class={cls},type={typ},len={ln}}}->{field}")
                    if rc:
                        key = ("tlv-map", error_of(out), "add-tlv-map")
                        seen.setdefault(key, [0, f"{{class={cls},type={typ},len={ln}}}->{field}", "", set()])
                        seen[key][0] += 1
                        seen[key][3].add(scen)
                for line in Path(f"{base}.meters").read_text().splitlines():
                    if line.startswith("meter="):
                        rc, out = r.ofctl("add-meter", line.strip())
                        if rc:
                            key = ("meter", error_of(out), shape(line))
                            seen.setdefault(key, [0, line.strip(), line.strip(), set()])
                            seen[key][0] += 1
                            seen[key][3].add(scen)
                for line in Path(f"{base}.groups").read_text().splitlines():
                    if line.strip().startswith("group_id="):
                        g = line.strip()
                        rc, out = r.ofctl("add-group", g)
                        if rc:
                            n_bad += 1
                            key = ("group", error_of(out), shape(re.sub(r"group_id=\d+,", "", g)))
                            seen.setdefault(key, [0, g, g, set()])
                            seen[key][0] += 1
                            seen[key][3].add(scen)
                        else:
                            n_ok += 1
                for line in Path(flows).read_text().splitlines():
                    if "actions=" not in line or line.startswith("OFPST"):
                        continue
                    match, actions = flow_parts(line)
                    rc, out = r.ofctl("add-flow", f"{match},actions={actions}")
                    if rc == 0:
                        n_ok += 1
                        continue
                    n_bad += 1
                    err = error_of(out)
                    if "OFPT_ERROR" not in out:
                        # Open vSwitch's client did not send it (it cannot
                        # read its own dump back): not sluice's refusal.
                        key = ("unsent", err, shape(actions))
                        seen.setdefault(key, [0, actions, line.strip(), set()])
                        seen[key][0] += 1
                        seen[key][3].add(scen)
                        continue
                    for kind, text, e in culprits(r, match, actions, err):
                        key = (kind, e, shape(text) if kind != "match" else "match")
                        if kind == "match":
                            key = (kind, e, shape(match))
                        seen.setdefault(key, [0, text, line.strip(), set()])
                        seen[key][0] += 1
                        seen[key][3].add(scen)
                totals.append((scen, n_ok, n_bad))
            finally:
                r.down()
    print("== per scenario: messages taken / refused")
    for scen, ok, bad in totals:
        print(f"{scen}: {ok} taken, {bad} refused")
    print(f"\n== {len(seen)} distinct refusals (kind, error, culprit shape): count, example, example flow, scenarios")
    for (kind, err, shp), (n, text, ex, scens) in seen.items():
        print(f"\n[{kind}] {err}: {shp}\n  count {n}; e.g. {text}\n  flow: {ex}\n  in: {', '.join(sorted(scens))}")


if __name__ == "__main__":
    main()
