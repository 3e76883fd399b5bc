#!/usr/bin/env bash
# Compile and load times of the XDP fast path for 20, 200 and 20 000
# rules (root: the load step runs the kernel's verifier), then the cost of
# the in-kernel edits: one rule on the lab frame that only outputs, sets
# eth_dst, or sets ip_dst and tcp_dst (checksums). One JSON line per rule
# set and round on stdout; figures go to docs/PERFORMANCE.md. (A push or
# pop is not timed here: BPF_PROG_TEST_RUN's repeat runs the program on
# the same buffer, whose headroom a push uses up.)
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
printf '%s\n' "priority=10,in_port=1,actions=output:2" >"$dir/edit-none.rules"
printf '%s\n' "priority=10,in_port=1,actions=set_field:02:00:00:00:00:09->eth_dst,output:2" >"$dir/edit-eth.rules"
printf '%s\n' "priority=10,tcp,in_port=1,actions=set_field:10.213.77.9->ip_dst,set_field:8080->tcp_dst,output:2" >"$dir/edit-ip-port.rules"
target/release/examples/compile-bench --rounds "$rounds" \
    "$dir/edit-none.rules" "$dir/edit-eth.rules" "$dir/edit-ip-port.rules"
