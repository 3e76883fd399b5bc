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
# Mininet (not for the demo): the tree-topology e2e test runs sluice as
# Mininet's switches (dist/mininet/sluice.py, scripts/e2e_mininet.py).
# Debian's package, not PyPI's: it brings `mn` and `mnexec` (a C helper that
# PyPI's mininet, a 2020 dev release, does not build) and installs its
# Python module for Debian's /usr/bin/python3 only
# (/usr/lib/python3/dist-packages). The `python3` on PATH may be another
# interpreter (a pyenv build on CI's machines), whose venvs, even with
# --system-site-packages, never see that directory; so the test runs
# Mininet with /usr/bin/python3, as Debian's `mn` does (its shebang), and
# the controllers as processes of their own from their venvs. Checked by
# importing it, so a missing or broken module installs it again.
$demo || { command -v mnexec >/dev/null 2>&1 && [ -x /usr/bin/python3 ] &&
    /usr/bin/python3 -c 'import mininet.net, mininet.topolib' >/dev/null 2>&1; } || need_apt+=(mininet)
# OVN (not for the demo): the "OVN on sluice" e2e tests
# (tests/e2e/test_ovn.py) run Debian's OVN unchanged, started by hand
# (never its systemd units): ovn-central brings ovn-northd, the NB and SB
# schemas and ovn-nbctl/ovn-sbctl; ovn-host brings ovn-controller.
$demo || command -v ovn-northd >/dev/null 2>&1 || need_apt+=(ovn-central)
$demo || command -v ovn-controller >/dev/null 2>&1 || need_apt+=(ovn-host)
# isc-dhcp-client (not for the demo): dhclient, OVN's native DHCP's client
# in the OVN tests (run with a script of the test's own: it never touches
# the machine's resolv.conf).
$demo || command -v dhclient >/dev/null 2>&1 || need_apt+=(isc-dhcp-client)
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

# ensure_venv DIR REQUIREMENTS: a venv at DIR holding every pinned
# requirement (NAME==VERSION) of the file. Installs when any is missing or
# at another version, so a line added to the file is installed on the next
# run.
ensure_venv() {
    local venv=$1 req=$2
    if [ ! -x "$venv/bin/python" ]; then
        echo "setup: creating $venv"
        python3 -m venv "$venv"
    fi
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
}

ensure_venv .venv tests/interop/requirements.txt
# Open vSwitch's Python database clients (the IDL and ovsdbapp), for the
# e2e tests of sluice --ovsdb: beside os-ken in .venv, no conflict.
ensure_venv .venv tests/ovsdb/requirements.txt
# pytest, which runs the end-to-end tests (tests/e2e): beside the clients
# the tests drive, in the same .venv.
ensure_venv .venv tests/e2e/requirements.txt
# Faucet, the Mininet test's second controller, in a venv of its own: it
# pins an older os-ken than .venv's (tests/mininet/faucet-requirements.txt).
ensure_venv .venv-faucet tests/mininet/faucet-requirements.txt
# os-ken's own learning switch, os_ken.app.simple_switch_13, which the
# Mininet test runs unchanged: os-ken's releases after 1.4.1 no longer ship
# their sample apps, and 1.4.1 itself no longer imports on Python 3.11 with
# today's eventlet. So the app's module alone is taken from os-ken 1.4.1
# (installed apart, without dependencies, in a folder named after its
# version) and served as `simple_switch_13` by .venv's os-ken 4.2.2
# (tests/controller/run_osken.py, with that folder's os_ken/app on
# PYTHONPATH); it uses only os-ken's stable app API.
ss13=.venv/os-ken-1.4.1
if [ ! -f "$ss13/os_ken/app/simple_switch_13.py" ]; then
    echo "setup: installing os-ken 1.4.1's sample apps into $ss13"
    .venv/bin/pip install -q --disable-pip-version-check --no-deps --target "$ss13" os-ken==1.4.1
fi
