#!/usr/bin/env bash
# Instructions per packet of pipeline-bench's probe scenarios, counted by
# callgrind: exact and repeatable (a timing on a busy 2-core machine is
# neither), so a fast-path change can be held against the commit before it.
#
#   scripts/bench/icount.sh [PIPELINE_BENCH] [SCENARIO...]
#
# PIPELINE_BENCH: the binary (default: target/release/pipeline-bench, built
# if missing). Each scenario runs twice, with 20 000 and 120 000 packets;
# the difference over 100 000 leaves out the set-up and the caches'
# warm-up. Needs valgrind (apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-target/release/pipeline-bench}
if [ $# -gt 0 ]; then shift; fi
if [ ! -x "$bin" ]; then
    cargo build -q --release --locked -p pipeline --bin pipeline-bench
fi
command -v valgrind >/dev/null || { echo "icount: valgrind is not installed" >&2; exit 1; }
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] ||
    scenarios=(cache_hit group_select tables-flat tables-br-int-resubmit tables-br-int-goto)
count() { # scenario packets -> instructions
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bin" --probe "$1" "$2" 2>&1 >/dev/null |
        awk '/Collected/ {print $4}'
}
printf "%-24s %s\n" scenario instructions_per_packet
for s in "${scenarios[@]}"; do
    a=$(count "$s" 20000)
    b=$(count "$s" 120000)
    [ -n "$a" ] && [ -n "$b" ] || { echo "icount: $s: no count from callgrind" >&2; exit 1; }
    printf "%-24s %d\n" "$s" $(((b - a) / 100000))
done
