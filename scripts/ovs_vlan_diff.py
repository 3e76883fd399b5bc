#!/usr/bin/env python3
"""NORMAL and the ports' VLAN settings against Open vSwitch 3.1: the same
ports with the same `tag`, `trunks` and `vlan_mode`, the same learned
addresses and a NORMAL flow in both, random frames in, and where NORMAL
sends each (ports, and the frame as it leaves each, byte for byte)
compared.

    scripts/ovs_vlan_diff.py                       # 60 configurations x 8 frames, seed 1
    scripts/ovs_vlan_diff.py --configs 200 --seed 7
    scripts/ovs_vlan_diff.py --keep DIR            # the case files and OVS's logs in DIR

Root (the lock file; CI runs it so). sluice's side is `sluice-ctl
offline-trace --normal` (the pipeline and the datapath's NORMAL, the one
`trace` and the workers run, in the process: `port` lines give the VLAN
settings, `fdb` lines the learned addresses; CARGO_TARGET_DIR's release
build unless --sluice-ctl). Open vSwitch's side is a private
ovsdb-server and ovs-vswitchd on dummy devices (scripts/ovs_diff.py's
`Ovs`: nothing is created in the kernel; the lock /tmp/sluice-e2e.lock is
held while it runs; only what it started is stopped), with Open vSwitch's
default `vlan-limit` (1: only the outer tag is a VLAN, as in sluice). For
each configuration the ports get their settings with `ovs-vsctl set port`
(cleared first) and the MAC table the configuration's addresses as static
entries (`fdb/add`; `fdb/del` for the previous configuration's, which
`fdb/flush` leaves); before each frame what the previous trace learned is
flushed (`fdb/flush`: a trace with a packet learns in OVS, in sluice it
does not); the frame is traced with
`ofproto/trace` and its "Datapath actions" applied to it
(push_vlan/pop_vlan, outputs: scripts/ovs_diff.py's `apply_actions`).

Each configuration: 6 ports, each with no settings, an access port, a
trunk (of every VLAN or of some), or a native-tagged or native-untagged
port, VLAN IDs from a small pool (0, 1, 10, 20, 30, 4095) so that ports
share them, settings only as a configuration file may hold them (sluice
refuses what OVS would ignore in part: docs/CONFIG.md); a few learned
addresses (port, VLAN, MAC); one flow, `actions=normal`, or (one
configuration in four) a flow for in_port 1 that pops or pushes a tag
before NORMAL. Each frame: an in_port, a source and a destination
(broadcast, multicast, a learned address, an unknown one), untagged or
tagged 802.1Q or 802.1ad with a VID of the pool or any, a PCP, or
priority-tagged (VID 0); payload long enough that a pop needs no padding.

Compared: the outputs as a set of (port, frame), since the two switches
flood in different orders. Not compared: outputs to the bridge's LOCAL
port (OVS's is a trunk of every VLAN that NORMAL floods to; sluice-ctl
offline-trace has no LOCAL port). Left out of the frames: destinations in
01:80:c2:00:00:00/44 (OVS's NORMAL drops these reserved addresses unless
`other_config:forward-bpdu`; sluice's floods them: a known difference,
docs/CONFIG.md) and double tags (both take the outer one alone at OVS's
default vlan-limit, but OVS's flow keeps no inner tag then).

Exit status: 0 when all agree, 1 when a frame differs, 2 when the test
could not run (OVS did not start, sluice-ctl missing...).
"""

import argparse
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

import ovs_diff  # scripts/ovs_diff.py: the private OVS, datapath actions
from ovs_diff import BRIDGE, Fail, Unmodelled

PORTS = (1, 2, 3, 4, 5, 6)
VIDS = (0, 1, 10, 20, 30, 4095)
MACS = ["02:00:00:00:00:%02x" % i for i in range(1, 9)]


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)

    def vid(self):
        return self.r.choice(VIDS) if self.r.random() < 0.8 else self.r.randrange(4096)

    def trunks(self):
        if self.r.random() < 0.35:
            return []
        return sorted(set(self.r.choice(VIDS) for _ in range(self.r.randint(1, 3))))

    def port(self):
        """A port's settings, as {key: value} (sluice-ctl add-port's
        words; ovs-vsctl's columns)."""
        k = self.r.random()
        if k < 0.2:
            return {}
        if k < 0.45:
            s = {"tag": self.r.choice(VIDS)}
            if self.r.random() < 0.3:
                s["vlan_mode"] = "access"
            return s
        if k < 0.7:
            s = {}
            t = self.trunks()
            if t:
                s["trunks"] = t
            if self.r.random() < 0.3 or not s:
                s["vlan_mode"] = "trunk"
            return s
        s = {"tag": self.r.choice(VIDS),
             "vlan_mode": self.r.choice(["native-tagged", "native-untagged"])}
        t = self.trunks()
        if t:
            s["trunks"] = t
        return s

    def config(self):
        ports = {p: self.port() for p in PORTS}
        fdb = []
        for mac in self.r.sample(MACS, self.r.randint(0, 5)):
            fdb.append((self.r.choice(PORTS), self.r.choice(VIDS), mac))
        flows = ["actions=normal"]
        if self.r.random() < 0.25:
            tagged = "vlan_tci=0x1000/0x1000,"
            match, pre = self.r.choice([
                (tagged, "pop_vlan"),
                ("", "push_vlan:0x8100,set_field:%d->vlan_vid" % (0x1000 | self.vid())),
                (tagged, "mod_vlan_vid:%d" % self.vid())])
            flows.append(f"priority=10,in_port=1,{match}actions={pre},normal")
        return ports, fdb, flows

    def frame(self, fdb):
        r = self.r
        k = r.random()
        if k < 0.3:
            dst = "ff:ff:ff:ff:ff:ff"
        elif k < 0.4:
            dst = "01:00:5e:00:00:%02x" % r.randrange(1, 256)
        elif k < 0.8 and fdb:
            dst = r.choice(fdb)[2]
        else:
            dst = r.choice(MACS + ["02:00:00:00:00:ee"])
        src = r.choice(MACS)
        while src == dst:
            src = r.choice(MACS)
        k = r.random()
        tag = b""
        if k < 0.3:
            pass
        elif k < 0.45:
            tag = struct.pack("!HH", 0x8100, (r.randrange(8) << 13) if r.random() < 0.6 else 0)
        else:
            tpid = 0x88A8 if r.random() < 0.2 else 0x8100
            pcp = r.randrange(8) if r.random() < 0.4 else 0
            tag = struct.pack("!HH", tpid, pcp << 13 | self.vid())
        mac = lambda m: bytes.fromhex(m.replace(":", ""))
        return r.choice(PORTS), mac(dst) + mac(src) + tag + b"\x88\xb5" + bytes(range(60))


def vsctl_settings(ports):
    """ovs-vsctl arguments that give each port its settings (cleared
    first)."""
    args = []
    for p, s in ports.items():
        args += ["--", "clear", "port", f"p{p}", "tag", "trunks", "vlan_mode"]
        if s:
            cols = []
            for k, v in s.items():
                cols.append(f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}")
            args += ["--", "set", "port", f"p{p}"] + cols
    return args


def port_line(p, s):
    words = [f"{k}={','.join(map(str, v)) if isinstance(v, list) else v}" for k, v in s.items()]
    return " ".join([f"port {p}"] + words)


def describe(ports, fdb, flows):
    lines = [port_line(p, s) for p, s in ports.items() if s]
    lines += [f"fdb {p} {v} {m}" for p, v, m in fdb]
    return lines + flows


def set_fdb(ovs, old, new):
    """The MAC table holds `new`'s addresses alone (static entries, which
    fdb/flush leaves: `old`'s are deleted one by one)."""
    for _, v, m in old:
        try:
            ovs.ctl.call("fdb/del", BRIDGE, str(v), m)
        except Fail:
            pass  # gone with its port's changed settings
    ovs.ctl.call("fdb/flush", BRIDGE)
    for p, v, m in new:
        ovs.ctl.call("fdb/add", BRIDGE, f"p{p}", str(v), m)


def ovs_outputs(ovs, dp, in_port, frame):
    # What the previous trace learned (a trace with a packet learns).
    ovs.ctl.call("fdb/flush", BRIDGE)
    t = ovs.trace(in_port, frame)
    outs = ovs_diff.apply_actions(frame, ovs_diff.datapath_actions(t), dp)
    return sorted((p, f.hex()) for p, f, _ in outs if p != "LOCAL"), t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", type=int, default=60, help="port configurations")
    ap.add_argument("--frames", type=int, default=8, help="frames per configuration")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sluice-ctl", help="sluice-ctl to use (default: CARGO_TARGET_DIR's release build)")
    ap.add_argument("--show", type=int, default=5, help="differences shown")
    ap.add_argument("--keep", help="a directory to keep the case file and OVS's logs in")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    started = time.time()
    g = Gen(args.seed)
    configs = []
    for c in range(args.configs):
        ports, fdb, flows = g.config()
        configs.append((ports, fdb, flows, [g.frame(fdb) for _ in range(args.frames)]))
    try:
        ctl = ovs_diff.sluice_ctl_path(args.sluice_ctl)
        workdir = args.keep or tempfile.mkdtemp(prefix="sluice-vlandiff-")
        os.makedirs(workdir, exist_ok=True)
        # sluice's side first: one offline-trace run for every case.
        path = os.path.join(workdir, "cases.txt")
        with open(path, "w") as f:
            for i, (ports, fdb, flows, frames) in enumerate(configs):
                f.write(f"case {i}\n")
                f.write("\n".join(describe(ports, fdb, flows)) + "\n")
                for in_port, fr in frames:
                    f.write(f"packet {in_port} {fr.hex()}\n")
        p = subprocess.run([ctl, "offline-trace", "--normal", "--ports", "1-6", path],
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise Fail(f"sluice-ctl offline-trace: exit {p.returncode}: {p.stderr.strip()}")
        sluice = {}
        for line in p.stdout.splitlines():
            j = json.loads(line)
            if "error" in j:
                raise Fail(f"sluice refused a flow: {j}")
            if "check" in j:
                raise Fail(f"sluice disagrees with itself (cache or trace): {j}")
            sluice[(int(j["case"]), j["packet"])] = j
        ovs = ovs_diff.Ovs(keep_logs=args.keep)
        diffs, agree, unmodelled, sent = [], 0, 0, 0
        try:
            ovs.start()
            ovs.vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:vlan-limit=1")
            dp = ovs.bridge(PORTS)
            last_fdb = []
            for i, (ports, fdb, flows, frames) in enumerate(configs):
                ovs.vsctl(*vsctl_settings(ports)[1:])
                # After the settings: a port's changed settings flush
                # what was learned on it.
                set_fdb(ovs, last_fdb, fdb)
                last_fdb = fdb
                err = ovs.load(flows, [], os.path.join(workdir, "flows.txt"))
                if err:
                    raise Fail(f"OVS refused the flows {flows}: {err}")
                for k, (in_port, fr) in enumerate(frames):
                    j = sluice[(i, k)]
                    mine = sorted((o["port"], o["frame"]) for o in j["outputs"])
                    try:
                        theirs, t = ovs_outputs(ovs, dp, in_port, fr)
                    except Unmodelled:
                        unmodelled += 1
                        continue
                    sent += bool(theirs)
                    if mine == theirs:
                        agree += 1
                    else:
                        diffs.append((i, k, ports, fdb, flows, in_port, fr, mine, theirs, t, j))
        finally:
            ovs.stop()
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
    except (Fail, subprocess.TimeoutExpired, OSError) as e:
        print(f"ovs_vlan_diff: cannot run: {e}", file=sys.stderr)
        return 2
    n = sum(len(c[3]) for c in configs)
    print(f"ovs_vlan_diff: {args.configs} configurations, {n} frames ({sent} sent somewhere by OVS): "
          f"{agree} agree, {len(diffs)} differ, {unmodelled} not compared; "
          f"seed {args.seed}, {time.time() - started:.0f} s")
    for (i, k, ports, fdb, flows, in_port, fr, mine, theirs, t, j) in diffs[:args.show]:
        print(f"\n-- case {i}, frame {k}: in_port {in_port}, {fr.hex()}")
        print("   " + "\n   ".join(describe(ports, fdb, flows)))
        print(f"   sluice: {mine}\n   sluice's NORMAL: {j.get('normal', '')}")
        print(f"   OVS:    {theirs}")
        print("   OVS's trace:\n     " + "\n     ".join(t.strip().splitlines()))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
