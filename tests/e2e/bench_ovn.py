"""OVN's pipeline, measured: TCP throughput and ping RTT between VMs of
one chassis through a logical switch (vm1 -> vm2, ls1) and through a
logical router (vm1 -> vm3, ls1 -> lr1 -> ls2), on Open vSwitch 3.1
(netdev datapath) and on sluice, interleaved round by round (ovs, sluice,
ovs, sluice, ...): every round a fresh chassis of each, the same
topology, the same commands.

Not part of `make test` (the file name keeps pytest from collecting it):
    OVN_BENCH_OUT=rows.jsonl OVN_BENCH_ROUNDS=5 SLUICE_BIN_DIR=target/release \\
        .venv/bin/python -m pytest tests/e2e/bench_ovn.py -q
    python3 scripts/bench/ovn_summary.py rows.jsonl
(as root). Each row: switch, round, path, TCP Mbit/s (iperf3, 5 s, one
stream), ping RTT avg/min in ms (100 echos 10 ms apart)."""
import json
import os
import re

import pytest

from lab import wait_until
from test_ovn import LS1, LS2, central, lsp, ovn, router_between  # noqa: F401 (fixtures)

ROUNDS = int(os.environ.get("OVN_BENCH_ROUNDS", "3"))
OUT = os.environ.get("OVN_BENCH_OUT", "ovn-bench.jsonl")
SECONDS = int(os.environ.get("OVN_BENCH_SECONDS", "5"))


def _tcp(o, frm, to, ip):
    srv = o.tb.bg(to, "iperf3", "-s", "-1", "-p", "5201")
    try:
        wait_until(10, f"iperf3 in {to}", lambda: o.tb.tcp_listening(to, 5201))
        p = o.tb.x(frm, "iperf3", "-c", ip, "-p", "5201", "-t", SECONDS, "-J", check=False, timeout=SECONDS + 30)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        return json.loads(p.stdout)["end"]["sum_received"]["bits_per_second"] / 1e6
    finally:
        srv.kill()
        srv.wait(timeout=5)


def _rtt(o, frm, ip):
    p = o.tb.x(frm, "ping", "-c", "100", "-i", "0.01", "-q", ip, check=False, timeout=60)
    m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/", p.stdout)
    assert m, p.stdout
    return float(m.group(2)), float(m.group(1))


@pytest.mark.parametrize("switch,rnd", [(s, r) for r in range(ROUNDS) for s in ("ovs", "sluice")])
def test_ovn_pipeline_speed(ovn, switch, rnd):
    o = ovn
    ch = o.add_chassis(switch)
    router_between(o)
    lsp(o, "ls1", "vm1", LS1, 11, ch, gw=1)
    lsp(o, "ls1", "vm2", LS1, 12, ch, gw=1)
    lsp(o, "ls2", "vm3", LS2, 11, ch, gw=1)
    o.ready("vm1", "vm2", "vm3")
    o.ping_eventually("vm1", f"{LS2}.11")
    o.ping_eventually("vm1", f"{LS1}.12")
    rows = []
    for path, to, ip in (("switch", "vm2", f"{LS1}.12"), ("router", "vm3", f"{LS2}.11")):
        mbps = _tcp(o, "vm1", to, ip)
        avg, low = _rtt(o, "vm1", ip)
        rows.append({"switch": switch, "round": rnd, "path": path, "tcp_mbps": round(mbps, 1),
                     "rtt_avg_ms": avg, "rtt_min_ms": low})
    o.check_switches(interfaces=True)
    with open(OUT, "a") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(rows)
