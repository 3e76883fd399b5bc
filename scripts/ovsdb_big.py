#!/usr/bin/env python3
"""One huge OVSDB transaction against an OVSDB server (issue 48;
docs/RELIABILITY.md "From an OVSDB client"): do the other clients wait,
and is the memory given back?

For each server asked for (sluice --ovsdb, or Open vSwitch's ovsdb-server),
on a Unix socket in a private directory:
  insert  one `transact` inserting N QoS rows (one JSON-RPC message),
          while another connection sends `list_dbs` every 20 ms, each
          after the previous one's reply: the other client's latency
          (median, max, how many) while the big request is received,
          parsed, applied and answered, the big one's time, and the
          server's peak RSS (VmHWM);
  delete  one `transact` deleting them all, measured the same way, then
          the server's RSS 2 s and 10 s after the reply;
  map     on a fresh server, one row whose external_ids map has M
          entries: RSS added, per entry.
One line per server and measure. No root needed (no bridge is made).

  scripts/ovsdb_big.py [--rows N] [--map M] [--sluice PATH]...
                       [--ovsdb-server]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import multiprocessing
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ovsdb_cap import start_ovsdb_server, start_sluice  # noqa: E402


def rss_kb(pid, field="VmRSS"):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


class Client:
    def __init__(self, sock):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.settimeout(600)
        self.s.connect(sock)
        self.dec = json.JSONDecoder()
        self.buf = ""
        self.chunks = []

    def call(self, id_, method, params):
        self.s.sendall(json.dumps({"id": id_, "method": method, "params": params}).encode())
        while True:
            # Decoding is tried only when a chunk ends a value (a reply of
            # megabytes comes in many chunks).
            if self.chunks and self.chunks[-1].rstrip().endswith(b"}"):
                self.buf += b"".join(self.chunks).decode()
                self.chunks = []
            text = self.buf.lstrip()
            if text and not self.chunks:
                try:
                    v, end = self.dec.raw_decode(text)
                    self.buf = text[end:]
                    if v.get("id") == id_:
                        return v
                    continue
                except ValueError:
                    pass
            b = self.s.recv(1 << 20)
            if not b:
                raise SystemExit(f"ovsdb_big: connection closed during {method}")
            self.chunks.append(b)

    def close(self):
        self.s.close()


def probe(sock, done, q):
    c = Client(sock)
    lat = []
    i = 0
    while not done.is_set():
        t0 = time.monotonic()
        c.call(i, "list_dbs", [])
        lat.append((time.monotonic() - t0) * 1000)
        i += 1
        done.wait(0.02)
    c.close()
    q.put(lat)


def while_probing(sock, pid, fn):
    """Runs fn() while another client (a process of its own, so that this
    one's JSON work does not delay it) sends list_dbs after list_dbs:
    (fn's result, seconds fn took, probe latencies in ms)."""
    done = multiprocessing.Event()
    q = multiprocessing.Queue()
    pr = multiprocessing.Process(target=probe, args=(sock, done, q))
    pr.start()
    t0 = time.monotonic()
    r = fn()
    took = time.monotonic() - t0
    done.set()
    lat = q.get(timeout=600)
    pr.join()
    return r, took, lat


def lat_text(lat):
    if not lat:
        return "list_dbs: none answered"
    return (f"list_dbs x{len(lat)}: median {statistics.median(lat):.1f} ms, "
            f"max {max(lat):.0f} ms")


def check(r, what):
    res = r.get("result")
    if not isinstance(res, list) or any(isinstance(x, dict) and "error" in x for x in res):
        raise SystemExit(f"ovsdb_big: {what} failed: {json.dumps(r)[:300]}")
    return res


def measure(name, start, args):
    d = tempfile.mkdtemp(prefix="ovsdb-big-")
    p = None
    try:
        p, sock = start(d)
        pid = p.pid
        time.sleep(0.5)
        base = rss_kb(pid)
        big = Client(sock)
        ops = ["Open_vSwitch"] + [
            {"op": "insert", "table": "QoS", "row": {"type": "x"}} for _ in range(args.rows)]
        msg_mb = len(json.dumps({"id": 1, "method": "transact", "params": ops})) / 1e6
        r, took, lat = while_probing(sock, pid, lambda: big.call(1, "transact", ops))
        check(r, "insert")
        del ops, r
        peak = rss_kb(pid, "VmHWM")
        now = rss_kb(pid)
        print(f"{name}: insert {args.rows} rows ({msg_mb:.0f} MB) in {took:.1f} s; "
              f"{lat_text(lat)}; RSS {base // 1024} MB before, peak {peak // 1024} MB, "
              f"{now // 1024} MB after", flush=True)
        delete = ["Open_vSwitch", {"op": "delete", "table": "QoS", "where": []}]
        r, took, lat = while_probing(sock, pid, lambda: big.call(2, "transact", delete))
        n = check(r, "delete")[0].get("count")
        time.sleep(2)
        after = rss_kb(pid)
        time.sleep(8)
        later = rss_kb(pid)
        print(f"{name}: delete of {n} rows in {took:.1f} s; {lat_text(lat)}; "
              f"RSS {after // 1024} MB 2 s after, {later // 1024} MB 10 s after "
              f"(started at {base // 1024} MB)", flush=True)
        big.close()
    finally:
        if p is not None:
            p.terminate()
            try:
                p.wait(10)
            except Exception:
                p.kill()
        shutil.rmtree(d, ignore_errors=True)


def measure_map(name, start, args):
    """A fresh server: RSS added by one row with an args.map-entry map."""
    d = tempfile.mkdtemp(prefix="ovsdb-big-")
    p = None
    try:
        p, sock = start(d)
        pid = p.pid
        time.sleep(0.5)
        big = Client(sock)
        before = rss_kb(pid)
        m = ["map", [[f"key{i}", f"value{i}"] for i in range(args.map)]]
        ins = ["Open_vSwitch", {"op": "insert", "table": "QoS",
                                "row": {"type": "x", "external_ids": m}}]
        r, took, lat = while_probing(sock, pid, lambda: big.call(3, "transact", ins))
        check(r, "map insert")
        del m, ins, r
        time.sleep(2)
        grown = rss_kb(pid) - before
        print(f"{name}: one row with a {args.map}-entry external_ids map in {took:.1f} s; "
              f"{lat_text(lat)}; RSS +{grown // 1024} MB "
              f"({grown * 1024 / args.map:.0f} bytes per entry), "
              f"peak {rss_kb(pid, 'VmHWM') // 1024} MB", flush=True)
        big.close()
    finally:
        if p is not None:
            p.terminate()
            try:
                p.wait(10)
            except Exception:
                p.kill()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--map", type=int, default=200000, help="entries of the map (0: skip)")
    ap.add_argument("--sluice", action="append", default=[],
                    help="a sluice binary to measure (repeatable)")
    ap.add_argument("--ovsdb-server", action="store_true", help="measure ovsdb-server too")
    args = ap.parse_args()
    for b in args.sluice:
        measure(f"sluice {b}", lambda d, b=b: start_sluice(b, [], d), args)
        if args.map:
            measure_map(f"sluice {b}", lambda d, b=b: start_sluice(b, [], d), args)
    if args.ovsdb_server:
        measure("ovsdb-server", start_ovsdb_server, args)
        if args.map:
            measure_map("ovsdb-server", start_ovsdb_server, args)
    if not args.sluice and not args.ovsdb_server:
        sys.exit("ovsdb_big: nothing to measure (--sluice PATH, --ovsdb-server)")


if __name__ == "__main__":
    main()
