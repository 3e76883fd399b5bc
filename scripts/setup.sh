#!/usr/bin/env bash
# Installs what the tests need, idempotently: Debian packages (when root and
# missing) and the Python venv with os-ken for the interop checks.
set -euo pipefail
cd "$(dirname "$0")/.."

# --demo: only what the demo needs (no Python venv).
demo=false
[ "${1:-}" = "--demo" ] && demo=true

need_apt=()
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v ping >/dev/null 2>&1 || need_apt+=(iputils-ping)
command -v iperf3 >/dev/null 2>&1 || need_apt+=(iperf3)
command -v ethtool >/dev/null 2>&1 || need_apt+=(ethtool)
# ovs-ofctl (not for the demo): the e2e test that compares its output with
# sluice-ctl's.
$demo || command -v ovs-ofctl >/dev/null 2>&1 || need_apt+=(openvswitch-common)
# ovs-vswitchd (not for the demo): the tester switch of the OpenFlow
# conformance run (scripts/conformance.sh) and the VXLAN/Geneve peer of the
# overlay e2e tests, started by hand in a namespace.
$demo || command -v ovs-vswitchd >/dev/null 2>&1 || need_apt+=(openvswitch-switch)
# tcpdump (not for the demo): the overlay e2e test reads the VNI on the wire.
$demo || command -v tcpdump >/dev/null 2>&1 || need_apt+=(tcpdump)
# tcpreplay (not for the demo): the lab's active-flows scenario replays
# captures of many distinct flows into the switch (scripts/lab.sh flows).
$demo || command -v tcpreplay >/dev/null 2>&1 || need_apt+=(tcpreplay)
# conntrack and nftables (not for the demo): the kernel side of the
# connection tracker's oracle (scripts/ct_oracle.py: libnftables counts
# ct state, conntrack -F empties the table between scenarios).
$demo || command -v conntrack >/dev/null 2>&1 || need_apt+=(conntrack)
$demo || [ -e /usr/lib/x86_64-linux-gnu/libnftables.so.1 ] || ldconfig -p 2>/dev/null | grep -q libnftables.so.1 || need_apt+=(nftables)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v cc >/dev/null 2>&1 || need_apt+=(build-essential)
if ((${#need_apt[@]})); then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: missing Debian packages: ${need_apt[*]} (run as root or install them)" >&2
        exit 1
    fi
    echo "setup: installing ${need_apt[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; sluice needs the Rust toolchain (1.95)" >&2
    exit 1
fi

$demo && exit 0

venv=.venv
req=tests/interop/requirements.txt
if [ ! -x "$venv/bin/python" ]; then
    echo "setup: creating $venv"
    python3 -m venv "$venv"
fi
# Installs when any pinned requirement (NAME==VERSION) is missing or at
# another version, so a line added to the file is installed on the next run.
if ! "$venv/bin/python" - "$req" >/dev/null 2>&1 <<'PY'; then
import importlib.metadata as m, sys
for line in open(sys.argv[1]):
    name, _, version = line.split("#")[0].strip().partition("==")
    if name and m.version(name.strip()) != version.strip():
        sys.exit(1)
PY
    echo "setup: installing $(grep -v '^#' "$req" | tr '\n' ' ')into $venv"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
fi
