#!/usr/bin/env python3
"""sluice's OVSDB server against Open vSwitch's ovsdb-server, transaction by
transaction (issue 33).

Both servers serve the same schema (tests/ovsdb/diff.ovsschema: every
type, constraint, reference kind, index and limit RFC 7047 has; not
Open vSwitch's own, so that sluice configures and writes back nothing)
from a fresh database each. The same sequence of requests
(tests/ovsdb/diff_cases.json) goes to each through Open vSwitch's own
client, `ovsdb-client transact` (or another `ovsdb-client` command), and
the answers are compared once made comparable:

* UUIDs become the name of the case and operation that inserted the row
  (`<case#op>`), other UUIDs (`_version`, rows inserted elsewhere) `<?>`;
* the rows of a select, the members of a set and the pairs of a map are
  sorted;
* of an error, only its `error` member counts: `details` and `syntax` are
  free text, which no client reads.

Then monitors (tests/ovsdb/diff_monitors.json), on connections of the
script's own, since ovsdb-client prints updates in a form that hides
what a server sent: monitor, monitor_cond (with where clauses and a
condition change), monitor_cond_since, on _Server, refused ones, and
monitor_cancel; after each of a list of steps (transactions, condition
changes) a row inserted into table Mark tells when every update of the
step has arrived, and each monitor's reply and updates, step by step,
are compared as above (rows of updates are keyed by their UUIDs' names).

A difference fails the run unless tests/ovsdb/diff_known.txt lists the
case with the reason (a known difference that no longer differs fails
too, so the list stays true). Needs Open vSwitch's ovsdb-server,
ovsdb-tool and ovsdb-client (Debian openvswitch-common/-switch) and a
release build of sluice; runs as any user that may start them.

  scripts/ovsdb_diff.py [--sluice PATH] [--show N] [--keep]
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "tests/ovsdb/diff.ovsschema")
CASES = os.path.join(ROOT, "tests/ovsdb/diff_cases.json")
MONITORS = os.path.join(ROOT, "tests/ovsdb/diff_monitors.json")
KNOWN = os.path.join(ROOT, "tests/ovsdb/diff_known.txt")
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
# Each server's answer to one request: a bound, so a server that never
# answers fails the run instead of holding it.
TIMEOUT = 10


def wait_for(what, cond, secs=10.0):
    deadline = time.monotonic() + secs
    while not cond():
        if time.monotonic() > deadline:
            sys.exit(f"ovsdb_diff: timed out after {secs} s waiting for {what}")
        time.sleep(0.02)


class Target:
    """One server: how to reach it, and its UUID labels."""

    def __init__(self, name, sock, proc):
        self.name, self.sock, self.proc = name, sock, proc
        self.labels = {}

    def client(self, args, stdin=None):
        """ovsdb-client ARGS against this server: (exit status, stdout, stderr)."""
        if self.proc.poll() is not None:
            sys.exit(f"ovsdb_diff: {self.name} exited ({self.proc.returncode})")
        cmd = ["ovsdb-client", "--timeout", str(TIMEOUT)] + [a.replace("SOCK", "unix:" + self.sock) for a in args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT + 5, input=stdin)
        return p.returncode, p.stdout, p.stderr


def start(dirname, sluice):
    """Starts both servers on fresh databases: {name: Target}."""
    srv = os.path.join(dirname, "ovs")
    sl = os.path.join(dirname, "sluice")
    os.makedirs(srv)
    os.makedirs(os.path.join(sl, "run"))
    subprocess.run(["ovsdb-tool", "create", os.path.join(srv, "diff.db"), SCHEMA], check=True)
    ovs = subprocess.Popen(
        ["ovsdb-server", os.path.join(srv, "diff.db"), "--remote=punix:" + os.path.join(srv, "db.sock"),
         "--unixctl=" + os.path.join(srv, "ovsdb-server.ctl"), "--no-chdir",
         "--log-file=" + os.path.join(srv, "ovsdb-server.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # An empty configuration file: nothing from /etc/sluice applies.
    cfg = os.path.join(sl, "empty.toml")
    open(cfg, "w").close()
    log = open(os.path.join(sl, "sluice.log"), "w")
    slu = subprocess.Popen(
        [sluice, "--config", cfg, "--ovsdb", "punix:" + os.path.join(sl, "db.sock"),
         "--ovsdb-file", os.path.join(sl, "diff.db"), "--ovsdb-schema", SCHEMA,
         "--run-dir", os.path.join(sl, "run")],
        stdout=log, stderr=subprocess.STDOUT)
    targets = {"ovsdb-server": Target("ovsdb-server", os.path.join(srv, "db.sock"), ovs),
               "sluice": Target("sluice", os.path.join(sl, "db.sock"), slu)}
    try:
        for t in targets.values():
            wait_for(f"{t.name}'s socket {t.sock}", lambda t=t: os.path.exists(t.sock) or t.proc.poll() is not None)
            if t.proc.poll() is not None:
                sys.exit(f"ovsdb_diff: {t.name} exited at start ({t.proc.returncode}); see {dirname}")
    except BaseException:
        stop(targets)
        raise
    return targets


def stop(targets):
    for t in targets.values():
        if t.proc.poll() is None:
            t.proc.send_signal(signal.SIGTERM)
            try:
                t.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                t.proc.kill()
                t.proc.wait()


def label_inserts(target, case, ops, result):
    """Names the rows a transaction inserted after its case and operation."""
    if not isinstance(result, list):
        return
    for i, (op, r) in enumerate(zip(ops, result)):
        if isinstance(op, dict) and op.get("op") == "insert" and isinstance(r, dict) and "uuid" in r:
            u = r["uuid"]
            if isinstance(u, list) and len(u) == 2 and isinstance(u[1], str):
                target.labels.setdefault(u[1], f"<{case}#{op.get('uuid-name', i)}>")


def canon(v, labels):
    """A value made comparable across servers (see the module's doc)."""
    if isinstance(v, str):
        if UUID_RE.match(v):
            return labels.get(v, "<?>")
        return v
    if isinstance(v, list):
        if len(v) == 2 and v[0] == "uuid" and isinstance(v[1], str):
            return ["uuid", labels.get(v[1], "<?>")]
        if len(v) == 2 and v[0] in ("set", "map") and isinstance(v[1], list):
            return [v[0], sorted((canon(x, labels) for x in v[1]), key=lambda x: json.dumps(x, sort_keys=True))]
        return [canon(x, labels) for x in v]
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if "error" in v and k in ("details", "syntax"):
                continue
            # Rows of a monitor's update are keyed by their UUID.
            out[labels.get(k, "<?>") if UUID_RE.match(k) else k] = canon(x, labels)
        # Rows of UUIDs without a name: numbered in the order of their
        # contents (not of their UUIDs).
        unnamed = sorted((canon(x, labels) for k, x in v.items() if UUID_RE.match(k) and k not in labels),
                         key=lambda x: json.dumps(x, sort_keys=True))
        if len(unnamed) > 1:
            out.pop("<?>", None)
            for i, x in enumerate(unnamed):
                out[f"<?{i}>"] = x
        if isinstance(out.get("rows"), list):
            out["rows"] = sorted(out["rows"], key=lambda x: json.dumps(x, sort_keys=True))
        return out
    return v


def run_case(target, case):
    """One case against one server: its answer, made comparable."""
    name = case["name"]
    if "txn" in case:
        db = case.get("db", "Diff")
        ops = case["txn"]
        rc, out, err = target.client(["transact", "SOCK", json.dumps([db] + ops)])
        if rc == 0:
            try:
                result = json.loads(out)
            except ValueError:
                return {"unparsed": out.strip()}
            label_inserts(target, name, ops, result)
            return canon(result, target.labels)
        # An error for the whole request: ovsdb-client says
        # "transaction returned error: {...}" or why it failed.
        m = re.search(r"error: (\{.*\})\s*$", err, re.S)
        if m:
            try:
                return {"request error": canon(json.loads(m.group(1)), target.labels)}
            except ValueError:
                pass
        return {"exit": rc, "stderr": err.strip().split("\n")[-1][:200]}
    rc, out, err = target.client(case["client"], stdin=case.get("stdin"))
    text = out
    for u, lab in target.labels.items():
        text = text.replace(u, lab)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<?>", text)
    if case.get("json"):
        try:
            text = canon(json.loads(text), target.labels)
        except ValueError:
            pass
    elif case.get("sort_lines"):
        text = sorted(text.splitlines())
    return {"exit": rc, "out": text}


class Rpc:
    """A JSON-RPC connection of our own (for monitors, which ovsdb-client
    prints in a form that hides what a server sent): requests, and the
    notifications that arrive meanwhile."""

    def __init__(self, sock):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(TIMEOUT)
        self.s.connect(sock)
        self.buf = ""
        self.notes = []
        self.next_id = 0

    def close(self):
        self.s.close()

    def _read(self):
        dec = json.JSONDecoder()
        while True:
            text = self.buf.lstrip()
            if text:
                try:
                    msg, end = dec.raw_decode(text)
                    self.buf = text[end:]
                    return msg
                except ValueError:
                    pass
            try:
                data = self.s.recv(65536)
            except socket.timeout:
                sys.exit(f"ovsdb_diff: no message within {TIMEOUT} s")
            if not data:
                sys.exit("ovsdb_diff: a server closed a monitor's connection")
            self.buf += data.decode()

    def call(self, method, params):
        """Sends a request; its reply (notifications before it are kept)."""
        self.next_id += 1
        rid = f"r{self.next_id}"
        self.s.sendall(json.dumps({"id": rid, "method": method, "params": params}).encode())
        while True:
            msg = self._read()
            if msg.get("id") == rid and "method" not in msg:
                return msg
            self._note(msg)

    def _note(self, msg):
        if msg.get("method") == "echo" and msg.get("id") is not None:
            self.s.sendall(json.dumps({"id": msg["id"], "result": msg.get("params", []), "error": None}).encode())
        else:
            self.notes.append(msg)

    def until(self, cond):
        """Reads notifications until one satisfies cond (bounded by TIMEOUT
        per message)."""
        while not any(cond(n) for n in self.notes):
            self._note(self._read())


def marks_in(note):
    """The Mark steps a notification inserts (monitor, update2, update3)."""
    params = note.get("params") or []
    updates = params[-1] if params else None
    out = []
    if isinstance(updates, dict):
        for row in (updates.get("Mark") or {}).values():
            if isinstance(row, dict):
                new = row.get("new") or row.get("insert") or row.get("initial")
                if isinstance(new, dict) and "step" in new:
                    out.append(new["step"])
    return out


def run_monitors(targets, spec):
    """The monitors of diff_monitors.json opened on each server, then its
    steps (transactions, condition changes), each followed by a Mark row
    whose update tells that the step's updates have all arrived: per
    monitor, its reply and the notifications of each step, made
    comparable."""
    out = {}
    for name, t in targets.items():
        conns = {}
        got = {}
        for m in spec["monitors"]:
            c = Rpc(t.sock)
            reply = c.call(m["method"], m["params"])
            got[m["name"]] = {"reply": canon(reply.get("result") if reply.get("error") is None else {"error": reply["error"]}, t.labels), "steps": []}
            # Requests on the monitor's connection right after it.
            for method, params in m.get("then", []):
                r = c.call(method, params)
                got[m["name"]]["steps"].append({method: canon(r.get("result") if r.get("error") is None else {"error": r["error"]}, t.labels),
                                                "notifications": [canon({k: v for k, v in n.items() if k != "id"}, t.labels) for n in c.notes]})
                c.notes = []
            if m.get("no_steps") or reply.get("error") is not None:
                c.close()
            else:
                conns[m["name"]] = c
        tx = Rpc(t.sock)
        for i, step in enumerate(spec["steps"], start=1):
            replies = {}
            if "txn" in step:
                r = tx.call("transact", ["Diff"] + step["txn"])
                label_inserts(t, "monitor-" + step["name"], step["txn"], r.get("result"))
                replies["transact"] = canon(r.get("result") if r.get("error") is None else {"error": r["error"]}, t.labels)
            else:
                c = conns[step["cond_change"]]
                r = c.call("monitor_cond_change", step["params"])
                replies["monitor_cond_change"] = canon(r.get("result") if r.get("error") is None else {"error": r["error"]}, t.labels)
            mark = [{"op": "insert", "table": "Mark", "row": {"step": i}}]
            r = tx.call("transact", ["Diff"] + mark)
            label_inserts(t, f"mark{i}", mark, r.get("result"))
            for mname, c in conns.items():
                c.until(lambda n, i=i: i in marks_in(n))
                notes = [canon({k: v for k, v in n.items() if k != "id"}, t.labels) for n in c.notes]
                c.notes = []
                got[mname]["steps"].append({"step": step["name"], **replies, "notifications": notes})
        tx.close()
        for c in conns.values():
            c.close()
        out[name] = got
    return out


def first_difference(a, b, path="$"):
    """Where two answers first differ (for the report)."""
    if type(a) is not type(b):
        return path, a, b
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}", a.get(k, "(absent)"), b.get(k, "(absent)")
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        if len(a) != len(b):
            return f"{path} (length)", len(a), len(b)
        return None
    return None if a == b else (path, a, b)


def read_known():
    known = {}
    with open(KNOWN) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition(" ")
            if not reason.strip():
                sys.exit(f"ovsdb_diff: {KNOWN}: {name} has no reason")
            known[name] = reason.strip()
    return known


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target_dir = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ap.add_argument("--sluice", default=os.path.join(target_dir, "release/sluice"))
    ap.add_argument("--show", type=int, default=20, help="differences shown in full (default 20)")
    ap.add_argument("--keep", action="store_true", help="keep the servers' directory (logs, databases)")
    args = ap.parse_args()
    for tool in ("ovsdb-server", "ovsdb-tool", "ovsdb-client"):
        if not shutil.which(tool):
            sys.exit(f"ovsdb_diff: {tool} not found (scripts/setup.sh installs openvswitch-switch)")
    if not os.access(args.sluice, os.X_OK):
        sys.exit(f"ovsdb_diff: {args.sluice} not found (cargo build --release -p sluice)")
    with open(CASES) as f:
        cases = json.load(f)
    names = [c["name"] for c in cases]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        sys.exit(f"ovsdb_diff: case names used twice: {sorted(dup)}")
    known = read_known()
    with open(MONITORS) as f:
        monitor_names = ["monitor:" + m["name"] for m in json.load(f)["monitors"]]
    unknown_known = set(known) - set(names) - set(monitor_names)
    if unknown_known:
        sys.exit(f"ovsdb_diff: {KNOWN} names cases that do not exist: {sorted(unknown_known)}")

    dirname = tempfile.mkdtemp(prefix="ovsdb_diff.")
    # A timeout's SIGTERM stops the servers too (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("ovsdb_diff: stopped (SIGTERM)"))
    targets = start(dirname, args.sluice)
    diffs, known_seen, same = [], [], 0
    try:
        def judge(case, a, b):
            nonlocal same
            if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True):
                same += 1
                if case["name"] in known:
                    diffs.append((case, a, b, "listed in diff_known.txt but no longer differs"))
            elif case["name"] in known:
                known_seen.append(case["name"])
            else:
                diffs.append((case, a, b, None))

        for case in cases:
            got = {n: run_case(t, case) for n, t in targets.items()}
            judge(case, got["ovsdb-server"], got["sluice"])
        with open(MONITORS) as f:
            spec = json.load(f)
        mons = run_monitors(targets, spec)
        for m in spec["monitors"]:
            case = {"name": "monitor:" + m["name"], "client": [m["method"]] + m["params"][:2]}
            names.append(case["name"])
            judge(case, mons["ovsdb-server"][m["name"]], mons["sluice"][m["name"]])
    finally:
        stop(targets)
    for i, (case, a, b, why) in enumerate(diffs):
        if i >= args.show:
            print(f"... and {len(diffs) - args.show} more")
            break
        print(f"DIFF {case['name']}" + (f" ({why})" if why else ""))
        print(f"  request:      {json.dumps(case.get('txn', case.get('client')))[:400]}")
        d = first_difference(a, b)
        if d and len(json.dumps(a)) > 300:
            print(f"  first at:     {d[0]}")
            a, b = d[1], d[2]
        print(f"  ovsdb-server: {json.dumps(a, sort_keys=True)[:600]}")
        print(f"  sluice:       {json.dumps(b, sort_keys=True)[:600]}")
    for n in known_seen:
        print(f"known {n}: {known[n]}")
    if args.keep or diffs:
        print(f"ovsdb_diff: servers' files in {dirname}")
    else:
        shutil.rmtree(dirname, ignore_errors=True)
    print(f"ovsdb_diff: {len(cases) + len(monitor_names)} cases ({len(monitor_names)} of them monitors), {same} the same, "
          f"{len(known_seen)} known differences, {len(diffs)} unexpected")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
