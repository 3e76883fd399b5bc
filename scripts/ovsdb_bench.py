#!/usr/bin/env python3
"""ovs-vsctl add-port of N ports, sluice against Open vSwitch on the same
machine (issue 33 point 7; docs/PERFORMANCE.md "The database side").

Each round, for each switch in turn (interleaved): a namespace of its own
holding N veth pairs; the switch started there (sluice --ovsdb, or a
private ovsdb-server and ovs-vswitchd with a netdev bridge); an
`ovsdb-client monitor` of Interface name/ofport started; then
  one-by-one  N `ovs-vsctl add-port br0 pI` commands, each waiting for the
              switch to apply it (cur_cfg), as an operator's loop does;
  batch       the N ports deleted, then added back in one `ovs-vsctl`
              transaction;
and how long until the monitor has seen every port's ofport written back.
Prints one line per switch and measure, and a summary with medians.

  sudo scripts/ovsdb_bench.py [--ports N] [--rounds R] [--sluice PATH]
"""

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ovslib import stop_daemons  # noqa: E402

SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"


def sh(*cmd, ns=None, check=True, env=None, **kw):
    if ns:
        cmd = ("ip", "netns", "exec", ns) + cmd
    return subprocess.run(cmd, check=check, env=env, **kw)


def make_ns(ns, n):
    sh("ip", "netns", "add", ns)
    sh("ip", "link", "set", "lo", "up", ns=ns)
    batch = "".join(
        f"link add p{i} type veth peer name q{i}\nlink set p{i} up\nlink set q{i} up\n"
        for i in range(n)
    )
    sh("ip", "-n", ns, "-batch", "-", input=batch.encode())


def wait_for(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"ovsdb_bench: timed out waiting for {what}")
        time.sleep(0.02)


class Switch:
    """A switch under test in its namespace, reachable at self.db."""

    def __init__(self, kind, ns, d, sluice):
        self.kind, self.ns, self.dir = kind, ns, d
        self.db = f"unix:{d}/db.sock"
        self.proc = None
        if kind == "sluice":
            self.proc = subprocess.Popen(
                ["ip", "netns", "exec", ns, sluice, "--ovsdb", f"punix:{d}/db.sock",
                 "--ovsdb-file", f"{d}/conf.db", "--run-dir", d],
                stdout=subprocess.DEVNULL, stderr=open(f"{d}/sluice.log", "w"))
        else:
            env = dict(os.environ, OVS_RUNDIR=d, OVS_DBDIR=d, OVS_LOGDIR=d)
            sh("ovsdb-tool", "create", f"{d}/conf.db", SCHEMA)
            sh("ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock",
               f"--pidfile={d}/ovsdb-server.pid", "--detach", f"--log-file={d}/ovsdb-server.log",
               ns=ns, env=env)
            sh("ovs-vsctl", f"--db={self.db}", "--no-wait", "init", env=env)
            sh("ovs-vswitchd", self.db, f"--pidfile={d}/ovs-vswitchd.pid", "--detach",
               f"--log-file={d}/ovs-vswitchd.log", ns=ns, env=env)
        wait_for("the database socket", lambda: os.path.exists(f"{d}/db.sock"), 15)
        extra = ["--", "set", "bridge", "br0", "datapath_type=netdev"] if kind == "ovs" else []
        self.vsctl("add-br", "br0", *extra, timeout=30)

    def vsctl(self, *args, timeout=600):
        return sh("ovs-vsctl", f"--db={self.db}", f"--timeout={timeout}", *args,
                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def stop(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        else:
            stop_daemons(self.dir)


class Monitor:
    """ovsdb-client monitor of Interface ofports, in the background."""

    def __init__(self, db, path):
        self.path = path
        self.proc = subprocess.Popen(
            ["ovsdb-client", "monitor", db, "Open_vSwitch", "Interface", "name", "ofport",
             "--format=json"], stdout=open(path, "w"), stderr=subprocess.DEVNULL)
        wait_for("the monitor's first output", lambda: os.path.getsize(path) > 0, 15)

    def ofports(self):
        """name -> last ofport seen, and how many updates were seen."""
        seen, updates = {}, 0
        with open(self.path) as f:
            for line in f:
                try:
                    u = json.loads(line)
                except ValueError:
                    continue
                updates += 1
                cols = u.get("headings", [])
                for row in u.get("data", []):
                    r = dict(zip(cols, row))
                    if "name" in r and isinstance(r.get("ofport"), int):
                        seen[r["name"]] = r["ofport"]
        return seen, updates

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def run(kind, n, sluice):
    ns = f"ovsb-{kind}"
    d = tempfile.mkdtemp(prefix=f"ovsdb-bench-{kind}-")
    sw = mon = None
    try:
        make_ns(ns, n)
        sw = Switch(kind, ns, d, sluice)
        mon = Monitor(sw.db, f"{d}/monitor.json")
        names = [f"p{i}" for i in range(n)]

        def all_written():
            seen, _ = mon.ofports()
            return all(seen.get(p, -1) > 0 for p in names)

        t0 = time.monotonic()
        for p in names:
            sw.vsctl("add-port", "br0", p)
        one = time.monotonic() - t0
        wait_for("every ofport in the monitor", all_written, 600)
        one_seen = time.monotonic() - t0
        _, updates = mon.ofports()

        del_args = []
        for p in names:
            del_args += ["--", "del-port", "br0", p]
        sw.vsctl(*del_args)
        add_args = []
        for p in names:
            add_args += ["--", "add-port", "br0", p]
        mon.stop()
        os.remove(f"{d}/monitor.json")
        mon = Monitor(sw.db, f"{d}/monitor.json")
        t0 = time.monotonic()
        sw.vsctl(*add_args)
        batch = time.monotonic() - t0
        wait_for("every ofport in the monitor", all_written, 600)
        batch_seen = time.monotonic() - t0
        return {"one_by_one_s": one, "one_by_one_seen_s": one_seen, "updates": updates,
                "batch_s": batch, "batch_seen_s": batch_seen}
    finally:
        if mon:
            mon.stop()
        if sw:
            sw.stop()
        sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ports", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--switches", default="sluice,ovs",
                    help="which to run, in this order each round (sluice, ovs)")
    ap.add_argument("--sluice", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", "target"), "release", "sluice"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("ovsdb_bench: needs root (namespaces)")
    kinds = [k for k in a.switches.split(",") if k]
    if any(k not in ("sluice", "ovs") for k in kinds):
        raise SystemExit(f"ovsdb_bench: --switches {a.switches}: sluice and/or ovs")
    res = {k: [] for k in kinds}
    for r in range(a.rounds):
        for kind in kinds:
            m = run(kind, a.ports, a.sluice)
            res[kind].append(m)
            print(f"round {r} {kind}: " + " ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}"
                                                  for k, v in m.items()), flush=True)
    print(f"\nmedians over {a.rounds} interleaved rounds, {a.ports} ports:")
    for k in ("one_by_one_s", "one_by_one_seen_s", "batch_s", "batch_seen_s"):
        med = {kind: statistics.median(m[k] for m in res[kind]) for kind in kinds}
        line = "  ".join(f"{kind} {v:8.2f}" for kind, v in med.items())
        if len(med) == 2:
            line += f"  ovs/sluice {med['ovs'] / med['sluice']:5.2f}x"
        print(f"  {k:20} {line}")


if __name__ == "__main__":
    main()
