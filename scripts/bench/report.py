"""sluice's benchmark report: runs every scenario, round after round, and
writes docs/bench/REPORT-<date>.md with its plots and raw rows.

    scripts/bench-report.sh [--quick] [--rounds N] [--out DIR] [SCENARIO ...]
    python3 scripts/bench/report.py --render ROWS.jsonl [--out DIR]

Each scenario is a command printing one JSON object per row (scripts/lab.sh
--json, scripts/ofbench.sh --json, scripts/flowcurve.sh --json,
pipeline-bench --json). A round runs every switch of a scenario once; the
driver runs round 1 of every scenario, then round 2, ..., so runs of the
switches compared are interleaved (A B A B ...), and ratios are the median
of per-round ratios (aggregate.py). pipeline-bench runs once: it takes its
own medians of 5 rounds (3 with --quick) in one process.

Every figure of the report is computed from the rows written next to it
(REPORT-<date>.jsonl); `--render` makes the report again from those rows.
A scenario whose tools are missing is reported as skipped, with the reason.
"""

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aggregate  # noqa: E402
import render  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class Scenario:
    def __init__(self, name, what, cmd, full_env, quick_env, needs, rounds=None, timeout=900):
        self.name = name
        self.what = what
        self.cmd = cmd
        self.full_env = full_env
        self.quick_env = quick_env
        self.needs = needs  # ["root", "tool:NAME", ...]
        self.rounds = rounds  # None: the driver's rounds
        self.timeout = timeout  # seconds a round may take before it is ended

    def missing(self, quick=False):
        """Why this scenario cannot run here, or None."""
        if quick and self.quick_env is None:
            return "not in the quick report (the forwarding rows carry delay percentiles)"
        for n in self.needs:
            if n == "root" and os.geteuid() != 0:
                return "needs root (network namespaces)"
            if n.startswith("tool:") and shutil.which(n[5:]) is None:
                return f"{n[5:]} is not installed"
        return None


SCENARIOS = [
    Scenario(
        "forwarding",
        "nullx, sluice (each back end), Open vSwitch netdev and the Linux bridge forwarding "
        "between two namespace hosts, for each rule set; 1 and 2 workers",
        ["scripts/lab.sh", "--json", "forwarding"],
        {"LAB_SECONDS": "1"},
        {"LAB_SECONDS": "1", "LAB_SETS": "4p20r", "LAB_BACKENDS": "afxdp", "LAB_WORKERS": "1",
         "LAB_PINGS": "30"},
        ["root", "tool:iperf3"],
    ),
    Scenario(
        "flows",
        "frames/s as the number of distinct active flows grows, 1M rules installed "
        "(101 000 with --quick), frames replayed by tcpreplay from host 1",
        ["scripts/lab.sh", "--json", "flows"],
        {"LAB_BACKENDS": "afxdp", "LAB_FRAMES": "1000000"},
        {"LAB_BACKENDS": "afxdp", "LAB_FRAMES": "100000", "LAB_FLOWS": "1 100000",
         "LAB_FLOWS_SET": "100k1k"},
        ["root", "tool:tcpreplay"],
    ),
    Scenario(
        "conntrack",
        "a stateful firewall between the two namespace hosts (Open vSwitch's conntrack tutorial "
        "flows in sluice and Open vSwitch netdev, nftables ct on a Linux bridge), each also "
        "without it: TCP connections/s, TCP throughput, the switch's CPU",
        ["scripts/lab.sh", "--json", "conntrack"],
        {"LAB_SECONDS": "5"},
        {"LAB_SECONDS": "2"},
        ["root", "tool:iperf3", "tool:nft"],
    ),
    Scenario(
        "control",
        "flow adds, modify, delete (sluice and Open vSwitch, plain and bundled), "
        "PACKET_IN -> PACKET_OUT round trips, update-to-dataplane latency",
        ["scripts/ofbench.sh", "--json"],
        {"OFBENCH_FRAMES": "500000"},
        {"OFBENCH_QUICK": "1", "OFBENCH_SAMPLES": "2"},
        ["root"],
    ),
    Scenario(
        "delay",
        "sluice's in-switch delay under a steady moderate load (iperf3 UDP 20 Mbit/s, "
        "1000-byte datagrams, 4 s), worker unpinned and pinned; the mission's target is "
        "25 us average and 150 us worst case",
        ["scripts/delay.sh", "--json"],
        {"RUNS": "1"},
        None,
        ["root", "tool:iperf3"],
    ),
    Scenario(
        "flowcurve",
        "flow-mod rate and RSS as the table fills (sluice and Open vSwitch, same client)",
        ["scripts/flowcurve.sh", "--json"],
        {},
        {"CURVE_FLOWS": "200000", "CURVE_STEPS": "4"},
        [],
    ),
    Scenario(
        "pipeline",
        "the pipeline alone on one core (pipeline-bench): rule sets, scaling with rules and "
        "active flows, the cost of each stage, ingest, the cache under flow-mod churn, "
        "two threads against one",
        ["target/release/pipeline-bench", "--json", "--all", "--threads", "2"],
        {},
        {},
        [],
        rounds=1,
    ),
]


def machine():
    def out(cmd):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            return (p.stdout.strip() or p.stderr.strip()) if p.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError):
            return ""

    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        mem = f"{int(open('/proc/meminfo').readline().split()[1]) / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    peers = {}
    for name, cmd in [
        ("Open vSwitch", ["ovs-vswitchd", "--version"]),
        ("iperf3", ["iperf3", "--version"]),
        ("tcpreplay", ["tcpreplay", "--version"]),
    ]:
        v = out(cmd).splitlines()
        peers[name] = v[0] if v else "not installed"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": out(["git", "-C", ROOT, "describe", "--always", "--dirty"]),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory": mem,
        "kernel": platform.release(),
        "rustc": out(["rustc", "--version"]),
        "peers": peers,
    }


def fmt_elapsed(s):
    return f"{int(s) // 60}:{int(s) % 60:02d}"


def read_lines(f):
    for line in f:
        yield line


def run_round(sc, rnd, rounds, quick, t0, log):
    """Runs one round of a scenario; returns its rows (tagged) and an error or None."""
    env = dict(os.environ)
    env.update(sc.quick_env if quick else sc.full_env)
    # The lab turns its switches' order with the round.
    env["BENCH_ROUND"] = str(rnd)
    cmd = list(sc.cmd)
    if sc.name == "pipeline" and quick:
        # Quick: the scaling and stage sections only (configs and ingest
        # keep their full sizes even with --quick).
        cmd = [c for c in cmd if c != "--all"] + ["--quick", "--scaling", "--stages"]
    label = f"{sc.name} round {rnd}/{rounds}"
    print(f"[{fmt_elapsed(time.time() - t0)}] {label}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    rows = []
    # A process group of its own, so that a timeout or Ctrl-C ends the
    # scenario and everything it started (SIGINT: its traps clean up).
    p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, bufsize=1, start_new_session=True)
    import signal

    def end(why):
        print(f"{sc.name}: {why}: ending it", file=sys.stderr, flush=True)
        for sig, grace in ((signal.SIGINT, 20), (signal.SIGKILL, 5)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                return
            try:
                p.wait(timeout=grace)
                return
            except subprocess.TimeoutExpired:
                pass

    timer = threading.Timer(sc.timeout, end, args=(f"over {sc.timeout} s",))
    timer.start()
    # Progress lines of the scenario, prefixed, as they come.
    def relay():
        for line in p.stderr:
            log.write(line)
            print(f"[{fmt_elapsed(time.time() - t0)}] {label}: {line.rstrip()}", file=sys.stderr,
                  flush=True)

    th = threading.Thread(target=relay, daemon=True)
    th.start()
    bad = []
    try:
        lines = list(read_lines(p.stdout))
    except KeyboardInterrupt:
        timer.cancel()
        end("interrupted")
        raise
    timer.cancel()
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            bad.append(line)
            continue
        if not isinstance(row, dict):
            bad.append(line)
            continue
        row.setdefault("scenario", sc.name)
        row["round"] = rnd
        row["source"] = sc.name
        rows.append(row)
    rc = p.wait()
    th.join(timeout=5)
    err = None
    if rc != 0:
        err = f"exit status {rc}" + (" (ended after the timeout)" if rc < 0 else "")
    elif bad:
        err = f"{len(bad)} lines that are not JSON objects, e.g. {bad[0][:80]!r}"
    elif not rows:
        err = "no rows"
    return rows, err


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scenarios", nargs="*", help="scenarios to run (default: all): "
                    + ", ".join(s.name for s in SCENARIOS))
    ap.add_argument("--quick", action="store_true", help="small sizes, short tests (under 3 minutes)")
    ap.add_argument("--rounds", type=int, help="rounds of each scenario (default 3; 2 with --quick)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "bench"), help="report directory")
    ap.add_argument("--render", metavar="ROWS", help="only render the report of a rows file")
    ap.add_argument("--name", help="report name (default REPORT-<date>, -quick for --quick)")
    a = ap.parse_args(argv)
    names = [s.name for s in SCENARIOS]
    for n in a.scenarios:
        if n not in names:
            ap.error(f"unknown scenario {n!r}: one of {', '.join(names)}")
    if a.rounds is None:
        a.rounds = 2 if a.quick else 3
    if a.rounds < 1:
        ap.error("--rounds: at least 1")

    if a.render:
        rows, meta = [], {}
        for line in open(a.render):
            obj = json.loads(line)
            if obj.get("meta"):
                meta = obj
            else:
                rows.append(obj)
        name = a.name or os.path.basename(a.render).rsplit(".", 1)[0]
        path = render.write(a.out, name, rows, meta)
        print(path)
        return 0

    chosen = [s for s in SCENARIOS if not a.scenarios or s.name in a.scenarios]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    name = a.name or f"REPORT-{date}{'-quick' if a.quick else ''}"
    os.makedirs(a.out, exist_ok=True)
    meta = {"meta": True, **machine(), "quick": a.quick, "rounds": a.rounds,
            "scenarios": {}, "skipped": {}, "failed": {}}
    t0 = time.time()
    rows = []
    runnable = []
    for sc in chosen:
        why = sc.missing(a.quick)
        if why:
            meta["skipped"][sc.name] = why
            print(f"{sc.name}: skipped ({why})", file=sys.stderr)
        else:
            runnable.append(sc)
            env = dict(sc.quick_env if a.quick else sc.full_env)
            # Knobs set in the caller's environment change the run too.
            for k, v in os.environ.items():
                if k.split("_")[0] in ("LAB", "OFBENCH", "CURVE", "DELAY", "TESTBED") or k == "RUNS":
                    env.setdefault(k, v)
            meta["scenarios"][sc.name] = {"what": sc.what, "command": " ".join(sc.cmd), "env": env,
                                          "rounds": sc.rounds or a.rounds, "seconds": 0.0}
    # A peer missing after set-up: the scenarios run without it.
    for peer, tool in (("Open vSwitch", "ovs-vswitchd"), ("Linux bridge", "ip")):
        if shutil.which(tool) is None:
            meta["skipped"][peer] = f"{tool} is not installed: its rows are absent"
    log = open(os.path.join(a.out, f"{name}.log"), "w")
    for rnd in range(1, a.rounds + 1):
        for sc in runnable:
            r = sc.rounds or a.rounds
            if rnd > r:
                continue
            t = time.time()
            got, err = run_round(sc, rnd, r, a.quick, t0, log)
            meta["scenarios"][sc.name]["seconds"] += time.time() - t
            if err:
                # A failed round's rows are left out: a median of the
                # rounds that completed, marked [n=K], rather than a mix.
                prev = meta["failed"].get(sc.name)
                msg = f"round {rnd}: {err} (see {name}.log); its rows are left out"
                meta["failed"][sc.name] = f"{prev}; {msg}" if prev else msg
                print(f"{sc.name}: FAILED round {rnd}: {err}", file=sys.stderr)
            else:
                rows.extend(got)
    log.close()
    meta["seconds"] = time.time() - t0
    with open(os.path.join(a.out, f"{name}.jsonl"), "w") as f:
        f.write(json.dumps(meta) + "\n")
        for r in rows:
            f.write(json.dumps(r) + "\n")
    path = render.write(a.out, name, rows, meta)
    print(f"[{fmt_elapsed(time.time() - t0)}] wrote {path}", file=sys.stderr)
    return 1 if meta["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
