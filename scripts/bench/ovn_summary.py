#!/usr/bin/env python3
"""Medians of tests/e2e/bench_ovn.py's rows, per switch and path, and
sluice's ratio to Open vSwitch (TCP: sluice/ovs; RTT: ovs/sluice, so above
1 is sluice faster in both)."""
import json
import statistics
import sys

rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
print(f"{'path':8} {'switch':7} {'n':>2} {'TCP Mbit/s':>11} {'RTT avg ms':>11} {'RTT min ms':>11}")
med = {}
for path in ("switch", "router"):
    for sw in ("ovs", "sluice"):
        rs = [r for r in rows if r["path"] == path and r["switch"] == sw]
        if not rs:
            continue
        m = {k: statistics.median(r[k] for r in rs) for k in ("tcp_mbps", "rtt_avg_ms", "rtt_min_ms")}
        med[(path, sw)] = m
        print(f"{path:8} {sw:7} {len(rs):>2} {m['tcp_mbps']:>11.0f} {m['rtt_avg_ms']:>11.3f} {m['rtt_min_ms']:>11.3f}")
for path in ("switch", "router"):
    if (path, "ovs") in med and (path, "sluice") in med:
        a, b = med[(path, "ovs")], med[(path, "sluice")]
        print(f"{path}: sluice/ovs TCP {b['tcp_mbps'] / a['tcp_mbps']:.2f}x, "
              f"RTT avg ovs/sluice {a['rtt_avg_ms'] / b['rtt_avg_ms']:.2f}x")
