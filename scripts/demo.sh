#!/usr/bin/env bash
# The README's first command. The switch itself (datapath, ports, daemon)
# is not built yet: it is the next issue. Until then the demo shows what
# exists, the OpenFlow 1.3 protocol crate, turning ovs-ofctl flows into
# FLOW_MOD messages and back.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "sluice: the switch daemon and the two-namespace demo arrive with the datapath work."
echo "For now: the OpenFlow 1.3 codec and ovs-ofctl flow syntax."
echo
cargo run -q --release -p ofp --example flow-codec -- "$@"
