#!/usr/bin/env bash
# Compile and load times of the XDP fast path for 20, 200 and 20 000
# rules (root: the load step runs the kernel's verifier). One JSON line per
# rule set and round on stdout; figures go to docs/PERFORMANCE.md.
#   sudo scripts/xdp_compile_bench.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"
dir="$(mktemp -d /tmp/sluice-xdpc.XXXXXX)"
trap 'rm -rf "$dir"' EXIT
cargo build -q --release --locked -p bench -p fastpath --example compile-bench
target/release/sluice-bench lab-rules --set 4p20r --out "$dir/20.rules"
target/release/sluice-bench lab-rules --set 32p200r --out "$dir/200.rules"
target/release/sluice-bench flows --count 19998 --form 5tuple --out "$dir/20000.rules"
printf '%s\n' "table=0,priority=10,in_port=1,actions=output:2" \
    "table=0,priority=10,in_port=2,actions=output:1" >>"$dir/20000.rules"
target/release/examples/compile-bench --rounds "$rounds" \
    "$dir/20.rules" "$dir/200.rules" "$dir/20000.rules"
