#!/usr/bin/env bash
# Runs fuzz targets one after another, each for SECONDS (default 600) on one
# core, from its corpus (fuzz/corpus/TARGET, kept between runs) and its seeds
# (fuzz/seeds/TARGET, checked in). Prints one summary line per target:
# date, target, seconds, executions, coverage, corpus size, result — the
# columns of docs/FUZZING.md. A crash stops the run (exit 1) and leaves the
# input in fuzz/artifacts/TARGET/.
#
#   scripts/fuzz.sh [--seconds N] [TARGET...]   (default: every target)
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
secs=600
if [ "${1:-}" = "--seconds" ]; then
    secs=$2
    shift 2
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(decode versions text pipeline actions agent classifier tunnel conntrack ovsdb)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --version 0.13.1 --locked
mkdir -p logs
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "seeds/$t"
    extra=()
    [ "$t" = text ] && extra=(-dict=text.dict)
    log="logs/$t.log"
    status=ok
    # The code fuzzed is the working tree as built now.
    built=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- .. || echo "+changes")
    cargo +nightly fuzz run "$t" -O "corpus/$t" "seeds/$t" -- \
        -max_total_time="$secs" -print_final_stats=1 "${extra[@]}" >"$log" 2>&1 || status=CRASH
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    echo "$(date -u +%F) $t ${secs}s runs=${runs:-?} cov=${cov:-?} corpus=$(ls "corpus/$t" | wc -l) commit=$built $status"
    [ "$status" = ok ] || { tail -40 "$log"; exit 1; }
done
