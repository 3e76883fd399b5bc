#!/usr/bin/env python3
"""Medians of scripts/lab-ab.sh rows per side and switch, and each sluice
row's ratio to nullx on the same back end (medians of per-round ratios)."""
import collections
import json
import statistics
import sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = collections.defaultdict(list)
for r in rows:
    by[(r["ab"], r["switch"])].append(r)
FIELDS = ("tcp_mbit", "frames_per_s", "frames_1500_per_s", "delay_p50_us")
for (ab, sw), rs in sorted(by.items()):
    med = {f: statistics.median(r[f] or 0 for r in rs) for f in FIELDS}
    print(f"{ab:6} {sw:28} n={len(rs)} " + " ".join(f"{f}={v:g}" for f, v in med.items()))
for ab in sorted({r["ab"] for r in rows}):
    for sw in sorted({r["switch"] for r in rows if r["switch"].startswith("sluice")}):
        ratios = collections.defaultdict(list)
        for rnd in sorted({r["round"] for r in rows}):
            g = {r["switch"]: r for r in rows if r["ab"] == ab and r["round"] == rnd}
            s, n = g.get(sw), g.get("nullx " + sw.split()[1])
            if not s or not n:
                continue
            for f in ("tcp_mbit", "frames_per_s"):
                if n[f]:
                    ratios[f].append(s[f] / n[f])
        print(f"{ab:6} {sw:28} / nullx: " + " ".join(
            f"{f}={statistics.median(v):.2f} ({min(v):.2f}-{max(v):.2f})" for f, v in ratios.items()))
