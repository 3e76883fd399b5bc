#!/usr/bin/env bash
# `make bench-report`: every performance scenario side by side with the
# peers, as docs/bench/REPORT-<date>.md with plots (scripts/bench/report.py).
# Installs what is missing first (scripts/setup.sh: Open vSwitch, iperf3,
# tcpreplay, matplotlib in .venv), builds the release binaries, then runs.
#   sudo scripts/bench-report.sh [--quick] [--rounds N] [SCENARIO ...]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then
    echo "bench-report: runs as root (network namespaces, Open vSwitch); scenarios that need no root: sudo is still needed to install peers" >&2
    exit 1
fi
scripts/setup.sh
cargo build -q --release --locked -p sluice -p ctl -p bench -p pipeline --bin pipeline-bench
exec .venv/bin/python scripts/bench/report.py "$@"
