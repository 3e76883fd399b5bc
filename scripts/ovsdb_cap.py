#!/usr/bin/env python3
"""An OVSDB server under its worst client (issue 48; docs/RELIABILITY.md
"From an OVSDB client"): many idle connections, then an administrator.

For each server asked for (sluice --ovsdb, or Open vSwitch's ovsdb-server),
on a Unix socket in a private directory:
  held    N connections opened and left idle (never a byte sent), then
          `ovs-vsctl show` run with a bounded --timeout: did it answer,
          how fast, how many of the N the server closed meanwhile, and
          the server's CPU while ovs-vsctl ran;
  garbage one connection sends a valid request and garbage in one write:
          is the request answered before the connection is closed?
One line per server and measure. No root needed (no bridge is made).

  scripts/ovsdb_cap.py [--held N] [--timeout S] [--sluice PATH]
                       [--sluice-args "--ovsdb-max-connections 64"]
                       [--ovsdb-server]
"""

import argparse
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"


def wait_for(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"ovsdb_cap: timed out waiting for {what}")
        time.sleep(0.02)


def answers(sock_path):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(2)
        s.connect(sock_path)
        s.sendall(b'{"id":0,"method":"echo","params":[]}')
        ok = b'"id":0' in s.recv(4096)
        s.close()
        return ok
    except OSError:
        return False


def start_sluice(binary, extra, d):
    sock = os.path.join(d, "db.sock")
    open(os.path.join(d, "empty.toml"), "w").close()
    p = subprocess.Popen(
        [binary, "--config", os.path.join(d, "empty.toml"), "--ovsdb", f"punix:{sock}",
         "--ovsdb-file", os.path.join(d, "conf.db"), "--ovsdb-schema", SCHEMA,
         "--run-dir", d, *extra],
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "log"), "w"))
    wait_for("sluice's socket", lambda: answers(sock), 10)
    return p, sock


def start_ovsdb_server(d):
    sock = os.path.join(d, "db.sock")
    db = os.path.join(d, "conf.db")
    subprocess.run(["ovsdb-tool", "create", db, SCHEMA], check=True)
    p = subprocess.Popen(
        ["ovsdb-server", db, f"--remote=punix:{sock}", f"--unixctl={d}/ovsdb-server.ctl",
         "--no-chdir", f"--log-file={d}/log", "-vconsole:off"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for("ovsdb-server's socket", lambda: answers(sock), 10)
    subprocess.run(["ovs-vsctl", f"--db=unix:{sock}", "--no-wait", "init"], check=True)
    return p, sock


def closed_by_server(s):
    """Whether the server has closed this idle connection (non-blocking)."""
    s.setblocking(False)
    try:
        return s.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def cpu_s(pid):
    """User + system CPU seconds of a process so far."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def held(pid, sock, n, timeout):
    conns = []
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock)  # completes in the kernel's backlog if not accepted
        conns.append(s)
    # Give the server its chance to take them all (bounded).
    time.sleep(0.5)
    cpu0, t0 = cpu_s(pid), time.monotonic()
    p = subprocess.run(["ovs-vsctl", f"--db=unix:{sock}", f"--timeout={timeout}", "show"],
                       capture_output=True, text=True)
    ms = (time.monotonic() - t0) * 1000
    cpu = (cpu_s(pid) - cpu0) / (ms / 1000) * 100
    closed = sum(closed_by_server(s) for s in conns)
    for s in conns:
        s.close()
    return p.returncode, ms, closed, cpu, (p.stderr or "").strip().splitlines()[-1:]


def garbage(sock):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sock)
    s.sendall(b'{"id":1,"method":"echo","params":["first"]}this is not JSON')
    got = b""
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except OSError as e:
        got += f" [{e}]".encode()
    s.close()
    try:
        reply = json.loads(got.decode().split(" [")[0]) if got else None
    except ValueError:
        reply = None
    return reply is not None and reply.get("id") == 1, got[:80]


def measure(name, start, args):
    d = tempfile.mkdtemp(prefix="ovsdb-cap-")
    p = None
    try:
        p, sock = start(d)
        rc, ms, closed, cpu, err = held(p.pid, sock, args.held, args.timeout)
        verdict = "answered" if rc == 0 else f"NOT answered (exit {rc}{': ' + err[0] if err else ''})"
        print(f"{name}: {args.held} idle connections held; ovs-vsctl show {verdict} "
              f"in {ms:.0f} ms; {closed} of the {args.held} closed by the server; "
              f"server CPU {cpu:.0f} % of a core while ovs-vsctl ran")
        ok, got = garbage(sock)
        print(f"{name}: valid request + garbage in one write: "
              f"{'answered, then closed' if ok else 'closed unanswered'} ({got!r})")
    finally:
        if p is not None:
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--held", type=int, default=2000)
    ap.add_argument("--timeout", type=int, default=10, help="ovs-vsctl --timeout, s")
    ap.add_argument("--sluice", action="append", default=[],
                    help="a sluice binary to measure (repeatable)")
    ap.add_argument("--sluice-args", default="", help="more arguments for sluice")
    ap.add_argument("--ovsdb-server", action="store_true", help="measure ovsdb-server too")
    args = ap.parse_args()
    for b in args.sluice:
        measure(f"sluice {b}", lambda d, b=b: start_sluice(b, shlex.split(args.sluice_args), d), args)
    if args.ovsdb_server:
        measure("ovsdb-server", start_ovsdb_server, args)
    if not args.sluice and not args.ovsdb_server:
        sys.exit("ovsdb_cap: nothing to measure (--sluice PATH, --ovsdb-server)")


if __name__ == "__main__":
    main()
