#!/usr/bin/env bash
# Before/after on the lab: two checkouts of sluice (each with its own
# target/ built: `cargo build --release` in each), run alternately, one
# `scripts/lab.sh --json forwarding` each per round (A B, then B A, ...),
# every row tagged "ab": "before"|"after" and "round". Root only.
#
#   sudo scripts/lab-ab.sh BEFORE_DIR AFTER_DIR [ROUNDS] > rows.jsonl
#
# The lab's knobs pass through (for the zero-copy figures in
# docs/PERFORMANCE.md: LAB_SETS="4p20r 32p200r" LAB_BACKENDS=afxdp
# LAB_WORKERS=1 LAB_OVS=0). Progress on stderr. Medians and ratios:
# scripts/lab-ab-summary.py rows.jsonl.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: lab-ab.sh BEFORE_DIR AFTER_DIR [ROUNDS]" >&2; exit 2; }
BEFORE=$1
AFTER=$2
ROUNDS=${3:-3}
for d in "$BEFORE" "$AFTER"; do
    [ -x "$d/target/release/sluice" ] || { echo "lab-ab: $d/target/release/sluice: not built" >&2; exit 2; }
done
for round in $(seq 1 "$ROUNDS"); do
    order="before after"
    [ $((round % 2)) = 0 ] && order="after before"
    for which in $order; do
        dir=$BEFORE
        [ "$which" = after ] && dir=$AFTER
        echo "lab-ab: round $round $which ($dir)" >&2
        (cd "$dir" && scripts/lab.sh --json forwarding) | python3 -c '
import json, sys
for line in sys.stdin:
    if line.startswith("{"):
        o = json.loads(line)
        o["ab"], o["round"] = sys.argv[1], int(sys.argv[2])
        print(json.dumps(o), flush=True)' "$which" "$round"
    done
done
