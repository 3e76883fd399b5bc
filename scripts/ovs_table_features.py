#!/usr/bin/env python3
"""TABLE_FEATURES requests that set features, sent to Open vSwitch 3.1 and
to sluice alike: each verdict side by side (ok, or the error), and the
names after the requests that change them.

Each request is built from the switch's own reply (so the features are
its own) and then changed: a table renamed, left out, added, twice, a
property missing or doubled, an unknown instruction or field, a name the
configuration gives (OVS: a Flow_Table row; sluice: `tables` in its
file), parts of a multipart request that do not belong together or never
end. The request goes in messages of at most 60 kB, as ovs-ofctl sends
it. The differences sluice makes on purpose (docs/OVS-DIALECT.md) are
KNOWN; any other fails the run (exit 1).

Root (a private ovsdb-server and ovs-vswitchd in a temporary directory,
stopped at the end; the lock /tmp/sluice-e2e.lock is held meanwhile).
sluice's side runs the daemon given (default: the release build in
CARGO_TARGET_DIR or target/) with one pcap port.

    sudo scripts/ovs_table_features.py [--sluice PATH]
"""

import argparse
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

import ovslib  # scripts/ovslib.py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCK = "/tmp/sluice-e2e.lock"
HELLO, ERROR, ECHO_REQ, ECHO_REP, MP_REQ, MP_REP, BARRIER_REQ, BARRIER_REP = (
    0, 1, 2, 3, 18, 19, 20, 21)
TF = 12
# The table the configuration names "Config" on either switch.
NAMED = 3

# Where sluice differs from Open vSwitch 3.1 on purpose, by case.
KNOWN = {
    "rename 1 to the start of its name":
        "OVS keeps the old name (it compares only as many bytes as the new name has); "
        "sluice renames",
    "an EXPERIMENTER_MISS property with exp_type 1":
        "OVS reads it as INSTRUCTIONS_MISS (its switch sees the low 32 bits of the "
        "experimenter type); sluice refuses it as any experimenter property",
    "first part of another type":
        "the first part (a FLOW request whose body is table features) does not decode "
        "for sluice (OFPBMC_BAD_TYPE); OVS takes it until the next part's type differs "
        "(OFPBRC_BAD_STAT); the parts after make a request without table 0 either way",
}


class Conn:
    """An OpenFlow 1.3 connection to a unix socket."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.buf = b""
        self.send(HELLO, b"\x00\x01\x00\x08\x00\x00\x00\x10", 1)
        ty, _, _ = self.recv()
        assert ty == HELLO

    def send(self, ty, body, xid):
        self.s.sendall(struct.pack("!BBHI", 4, ty, 8 + len(body), xid) + body)

    def recv(self, timeout=5):
        self.s.settimeout(timeout)
        while True:
            if len(self.buf) >= 8:
                _, ty, ln, xid = struct.unpack("!BBHI", self.buf[:8])
                if len(self.buf) >= ln:
                    m, self.buf = self.buf[:ln], self.buf[ln:]
                    if ty == ECHO_REQ:
                        self.send(ECHO_REP, m[8:], xid)
                        continue
                    return ty, xid, m[8:]
            d = self.s.recv(65536)
            if not d:
                raise EOFError("the switch closed the connection")
            self.buf += d

    def features(self, xid=7):
        self.send(MP_REQ, struct.pack("!HH4x", TF, 0), xid)
        tables = []
        while True:
            ty, x, body = self.recv()
            assert ty == MP_REP and x == xid, (ty, x, body[:16])
            _, flags = struct.unpack("!HH", body[:4])
            b = body[8:]
            while b:
                ln = struct.unpack("!H", b[:2])[0]
                tables.append(parse_table(b[:ln]))
                b = b[ln:]
            if not flags & 1:
                return tables

    def names(self):
        return {t["id"]: t["name"].split(b"\0")[0].decode() for t in self.features()
                if t["name"][0]}


def parse_table(b):
    ln, tid = struct.unpack("!HB", b[:3])
    mm, mw, cfg, maxe = struct.unpack("!QQII", b[40:64])
    props = []
    p = b[64:ln]
    while p:
        ty, pl = struct.unpack("!HH", p[:4])
        props.append([ty, p[4:pl]])
        p = p[(pl + 7) // 8 * 8:]
    return {"id": tid, "name": b[8:40], "mm": mm, "mw": mw, "cfg": cfg, "max": maxe,
            "props": props}


def enc_table(t):
    props = b""
    for ty, body in t["props"]:
        pl = 4 + len(body)
        props += struct.pack("!HH", ty, pl) + body + b"\0" * ((pl + 7) // 8 * 8 - pl)
    return (struct.pack("!HB5x", 64 + len(props), t["id"]) + t["name"][:32].ljust(32, b"\0")
            + struct.pack("!QQII", t["mm"], t["mw"], t["cfg"], t["max"]) + props)


def verdict(c, xid):
    """What the switch answered `xid` before a barrier's reply."""
    c.send(BARRIER_REQ, b"", xid + 1000)
    out = []
    while True:
        ty, x, body = c.recv()
        if ty == BARRIER_REP and x == xid + 1000:
            return ", ".join(out) or "no answer"
        if x != xid:
            continue
        if ty == ERROR:
            et, code = struct.unpack("!HH", body[:4])
            if et == 0xFFFF:
                exp = struct.unpack("!I", body[4:8])[0]
                out.append(f"error experimenter {exp:#x} exp_type {code}")
            else:
                out.append(f"error ({et},{code})")
        elif ty == MP_REP and (not out or out[-1] != "ok"):
            out.append("ok")


def request(c, tables, xid, first_type=TF):
    msgs, cur = [], b""
    for e in (enc_table(t) for t in tables):
        if cur and len(cur) + len(e) > 60000:
            msgs.append(cur)
            cur = b""
        cur += e
    msgs.append(cur)
    for i, m in enumerate(msgs):
        more = 1 if i + 1 < len(msgs) else 0
        c.send(MP_REQ, struct.pack("!HH4x", first_type if i == 0 else TF, more) + m, xid)
    return verdict(c, xid)


def edit_props(t, ty, fn):
    for p in t["props"]:
        if p[0] == ty:
            p[1] = fn(p[1])


def oxms(body, fn):
    """The OXM ids of a property body, each header passed through fn."""
    out = b""
    while body:
        h = struct.unpack("!I", body[:4])[0]
        n = 8 if h >> 16 == 0xFFFF else 4
        out += struct.pack("!I", fn(h)) + body[4:n]
        body = body[n:]
    return out


def probe(path):
    """Every case's verdict (and the names after some) on the switch at
    `path`, as (label, text) pairs."""
    c = Conn(path)
    base = c.features()
    n = len(base)
    out = [("tables", f"{n}, names {c.names()}")]

    def cp():
        return [dict(t, props=[list(p) for p in t["props"]]) for t in base]

    def case(label, tables, first_type=TF, names=False):
        out.append((label, request(c, tables, 100 + len(out), first_type)))
        if names:
            out.append((label + ": names", str(c.names())))

    def named(i, name):
        t = cp()
        t[i]["name"] = name
        return t

    case("as they are", cp())
    case("rename 1", named(1, b"Renamed"), names=True)
    case("rename 1 to the start of its name", named(1, b"Ren"), names=True)
    case("unname 1", named(1, b""), names=True)
    case("a 32-byte name", named(2, b"x" * 32), names=True)
    request(c, named(2, b""), 99)
    case("one table fewer", cp()[:-1])
    case("a table left out", cp()[:3] + cp()[4:])
    case(f"table {n} added", cp() + [dict(cp()[-1], id=n)])
    case("table 1 twice", cp() + [cp()[1]])
    t = cp()
    t[0]["id"] = 255
    case("table 255", t)
    t = cp()
    t[0]["max"] -= 1
    case("max_entries changed", t)
    t = cp()
    edit_props(t[5], 2, lambda b: bytes([0]) + b)
    case("table 5 goes to table 0", t)
    t = cp()
    for ty in (4, 5, 6, 7):
        edit_props(t[0], ty, lambda b: b[:4])
    case("table 0 with one action", t)
    t = cp()
    t[0]["props"] = [p for p in t[0]["props"] if p[0] != 10]
    case("table 0 without WILDCARDS", t)
    t = cp()
    t[0]["props"].append(list(t[0]["props"][0]))
    case("table 0 with INSTRUCTIONS twice", t)
    t = cp()
    t[0]["props"] = []
    case("table 0 without properties", t)
    for ty, exp, et, label in [
        (0xFFFE, 0x2320, 1, "an EXPERIMENTER property"),
        (0xFFFE, 0, 1, "an EXPERIMENTER property of experimenter 0"),
        (0xFFFF, 0x2320, 1, "an EXPERIMENTER_MISS property with exp_type 1"),
        (0xFFFF, 0x2320, 99, "an EXPERIMENTER_MISS property with exp_type 99"),
        (0xFFFF, 0, 99, "an EXPERIMENTER_MISS property of experimenter 0"),
    ]:
        t = cp()
        t[0]["props"].append([ty, struct.pack("!II", exp, et)])
        case(label, t)
    t = cp()
    edit_props(t[0], 0, lambda b: b + struct.pack("!HH", 7, 4))
    case("instruction 7", t)
    t = cp()
    edit_props(t[0], 10, lambda b: oxms(b[:4], lambda h: (h | 0x100) & ~0xFF | 2 * (h & 0xFF))
               + b[4:])
    case("a masked wildcard", t)
    t = cp()
    edit_props(t[0], 10, lambda b: oxms(b[:4], lambda h: h | 0x100) + b[4:])
    case("a wildcard with hasmask and the exact length", t)
    t = cp()
    edit_props(t[0], 8, lambda b: oxms(b, lambda h: h + 1 if h >> 9 == 0x8000 << 7 | 5 else h))
    case("eth_type with another length", t)
    t = cp()
    edit_props(t[0], 8, lambda b: b + struct.pack("!I", 0x80007F04))
    case("an unknown field", t)
    t = cp()
    edit_props(t[0], 2, lambda b: b + b"\xff")
    case("next table 255", t)
    case("first part of another type", cp(), first_type=1)
    flow = struct.pack("!B3xII4xQQ", 255, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0) + struct.pack("!HH4x", 1, 4)
    c.send(MP_REQ, struct.pack("!HH4x", 1, 1) + flow, 650)
    c.send(MP_REQ, struct.pack("!HH4x", TF, 0), 650)
    out.append(("a FLOW part, then an empty TABLE_FEATURES part", verdict(c, 650)))
    c.send(MP_REQ, struct.pack("!HH4x", 1, 1) + flow, 660)
    c.send(MP_REQ, struct.pack("!HH4x", 1, 0) + flow, 660)
    out.append(("FLOW in two parts with bodies", verdict(c, 660)))
    c.send(MP_REQ, struct.pack("!HH4x", 1, 1), 670)
    c.send(MP_REQ, struct.pack("!HH4x", 1, 0) + flow, 670)
    out.append(("FLOW: an empty part, then the body", verdict(c, 670)))
    c.send(MP_REQ, struct.pack("!HH4x", 0, 1), 680)
    c.send(MP_REQ, struct.pack("!HH4x", 0, 0), 680)
    out.append(("DESC in two empty parts", verdict(c, 680)))
    c.send(MP_REQ, struct.pack("!HH4x", TF, 1) + enc_table(cp()[0]), 690)
    t0 = time.monotonic()
    ty, x, body = c.recv(timeout=10)
    late = time.monotonic() - t0
    err = struct.unpack("!HHI", body[:8]) if ty == ERROR else None
    out.append(("a part and nothing after",
                f"type {ty} xid {x} {err} after {'about 1 s' if 0.8 < late < 1.6 else late}"))
    for name in [b"Other", b"", b"Con", b"Configs"]:
        t = named(NAMED, name)
        t[1]["name"] = b"Also"
        case(f"configured table to {name!r}, table 1 to Also", t, names=True)
        request(c, named(1, b""), 98)
    return out


class Ovs:
    """A private Open vSwitch with bridge br0 (netdev) and table 3 named
    "Config" in its database."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sluice-tf-ovs-")
        self.env = dict(os.environ, OVS_RUNDIR=self.dir, OVS_DBDIR=self.dir,
                        OVS_LOGDIR=self.dir)
        d = self.dir
        self.run("ovsdb-tool", "create", f"{d}/conf.db",
                 "/usr/share/openvswitch/vswitch.ovsschema")
        self.run("ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock",
                 f"--pidfile={d}/ovsdb-server.pid", "--detach", f"--log-file={d}/ovsdb.log")
        self.vsctl("--no-wait", "init")
        self.run("ovs-vswitchd", f"unix:{d}/db.sock", f"--pidfile={d}/ovs-vswitchd.pid",
                 "--detach", f"--log-file={d}/ovs-vswitchd.log")
        self.vsctl("add-br", "br0", "--", "set", "bridge", "br0", "datapath_type=netdev",
                   "fail-mode=secure", "protocols=OpenFlow13", "--", "--id=@t", "create",
                   "Flow_Table", "name=Config", "--", "set", "bridge", "br0",
                   f"flow_tables:{NAMED}=@t")
        self.sock = f"{d}/br0.mgmt"
        wait_for(self.sock)

    def run(self, *args):
        subprocess.run(args, env=self.env, check=True, capture_output=True, timeout=30)

    def vsctl(self, *args):
        self.run("ovs-vsctl", f"--db=unix:{self.dir}/db.sock", "--timeout=30", *args)

    def stop(self):
        ovslib.stop_daemons(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)


class Sluice:
    """sluice with one pcap port and table 3 named "Config" in its file."""

    def __init__(self, binary):
        self.dir = tempfile.mkdtemp(prefix="sluice-tf-")
        cfg = os.path.join(self.dir, "sluice.toml")
        with open(cfg, "w") as f:
            f.write(f'[bridge]\nfail_mode = "secure"\nlocal_port = false\n'
                    f'tables = {{ {NAMED} = "Config" }}\n[[port]]\nname = "pc"\n'
                    f'backend = "pcap"\npcap_out = "{self.dir}/out.pcap"\n')
        self.log = open(os.path.join(self.dir, "log"), "w")
        self.p = subprocess.Popen([binary, "--config", cfg, "--run-dir", self.dir],
                                  stdout=self.log, stderr=subprocess.STDOUT)
        self.sock = os.path.join(self.dir, "br0.mgmt")
        wait_for(self.sock)

    def stop(self):
        self.p.terminate()
        self.p.wait(10)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for(path):
    for _ in range(100):
        if os.path.exists(path):
            return
        time.sleep(0.1)
    raise SystemExit(f"{path} did not appear")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    ap.add_argument("--sluice", default=os.path.join(target, "release", "sluice"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("root only (a private Open vSwitch)")
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ovs = Ovs()
        try:
            theirs = probe(ovs.sock)
        finally:
            ovs.stop()
    s = Sluice(args.sluice)
    try:
        ours = probe(s.sock)
    finally:
        s.stop()
    bad = 0
    for (label, a), (_, b) in zip(theirs, ours):
        known = KNOWN.get(label.split(": names")[0])
        mark = "same" if a == b else ("KNOWN" if known else "DIFF")
        bad += mark == "DIFF"
        print(f"{mark:5} {label}\n      ovs:    {a}\n      sluice: {b}")
        if a != b and known:
            print(f"      ({known})")
    print(f"{len(ours)} cases, {bad} unexpected differences")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
