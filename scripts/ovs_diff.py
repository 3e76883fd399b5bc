#!/usr/bin/env python3
"""A differential test of sluice's pipeline against Open vSwitch 3.1's
`ofproto/trace`: the same flows and groups in both, the same frames in,
and the outputs compared, port by port in order, with the bytes of the
frame as it leaves at each.

    scripts/ovs_diff.py --cases 300 --seed 1          # random pipelines
    scripts/ovs_diff.py --corpus faucet,ovs-docs      # real tables (or all)
    scripts/ovs_diff.py --quick                       # what `make test` runs (<1 min)
    scripts/ovs_diff.py --cases 50 --seed 7 --keep D  # case files, OVS's logs in D
    scripts/ovs_diff.py --show-known all --cases 50   # the known differences too
    scripts/ovs_diff.py --replay FILE                 # a case file, both traces printed

Root (the lock file, and CI runs it so). sluice's side is `sluice-ctl
offline-trace` (the switch's pipeline in the process: flows and groups as
from the wire, packets through `Worker::process`; CARGO_TARGET_DIR's
release build unless --sluice-ctl). Open vSwitch's side is a private
ovsdb-server and ovs-vswitchd (run, database and log files in a temporary
directory) started with `--enable-dummy=override`, so every port, the
bridge's own included, is a dummy device: nothing is created in the
kernel. One userspace bridge, `fail-mode=secure`, OpenFlow 1.3 (and 1.5,
for the groups: a select group gets `selection_method=hash`, since OVS's
default dp_hash recirculates and ofproto/trace cannot say which bucket it
takes), dummy ports at fixed OpenFlow numbers, and
`other_config:vlan-limit=2` (sluice parses below every VLAN tag; OVS's
default of 1 stops at the first). The lock /tmp/sluice-e2e.lock is held
while OVS runs (one netdev OVS a machine); only the processes started here
are stopped, by their pid files. Flows go in with `ovs-ofctl -O
OpenFlow13 --bundle add-flows`, and each packet is traced with
`ofproto/trace BRIDGE in_port=N HEX` over ovs-vswitchd's control socket
(JSON-RPC, no process per packet).

OVS's answer is the "Datapath actions:" of the trace, applied here to the
input frame: set(eth, ipv4, ipv6, tcp, udp, sctp, icmp, icmpv6, arp) with
their masks, push_vlan, pop_vlan; an output is the datapath port mapped
back to its OpenFlow number (`dpif/show`); `userspace(...controller(...))`
is CONTROLLER with its reason (OVS's internal reasons mapped to OpenFlow
1.3's) and its controller id.

Compared: the list of outputs (ports, LOCAL and CONTROLLER, in order), the
frame at each output byte for byte except the checksums (IPv4 header, TCP,
UDP, ICMP, ICMPv6, SCTP: zeroed in both) and the Ethernet padding (bytes
after the IP packet or ARP message, zeros ending another frame), and the
packet-in reason and controller id of a CONTROLLER output, and the
`Datapath actions:` lines themselves, OVS's against those of sluice's
trace (`offline-trace`'s "datapath_actions", one per block), normalized
by dp_text: ports in OpenFlow numbers, a packet-in as
`CONTROLLER(reason)`, a set action as the header it writes, OVS's
`set(skb_mark(...))` left out. sluice's checksums are checked on
their own: recomputed, they must be right (IPv4 header always; TCP, UDP,
ICMP of a packet that is no fragment and came in right). sluice must also
agree with itself (the packet run again from its exact-match cache, and
traced). Not compared: pkt_mark and tunnel metadata at an output (sluice's
outputs do not carry them; they count through what they make flows
match), the table, max_len and userdata of a packet-in (the datapath
action shows neither the table nor the userdata; the end-to-end test
test_packet_ins_as_open_vswitch_sends_them compares whole packet-ins),
a packet-in for an expired TTL (OVS's default
asynchronous configuration gives it to no controller, as sluice without
OFPC_INVALID_TTL_TO_CONTROLLER sends none), NORMAL (sluice's is in its
datapath), a packet that had more than 2 VLAN tags on the way (OVS's flows
hold 2), and anything after a datapath action not modelled here. Those
packets are counted as not compared.

A flow or group only one side takes is left out of its case and listed
(a failure), except in the corpus mode, where sluice takes a subset (the
corpus report counts it). The differences found so far are in KNOWN, with
a minimal case each in tests/ovs_diff/known.txt; the generator avoids
them (--show-known to see them) so that the test catches new ones.

Exit status: 0 when nothing differed, 1 when something did (packets or
refusals), 2 when the test could not run (OVS did not start, sluice-ctl
missing...). It never skips.
"""

import argparse
import collections
import fcntl
import ipaddress
import json
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

import ovslib  # scripts/ovslib.py

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "corpus")
LOCK = "/tmp/sluice-e2e.lock"
BRIDGE = "brdiff"


class Fail(Exception):
    """The test cannot run."""


# ================================================================ frames


def mac_bytes(s):
    return bytes.fromhex(s.replace(":", ""))


def ones_sum(data, start=0):
    if len(data) % 2:
        data = data + b"\0"
    s = start + sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def checksum(data, start=0):
    return ~ones_sum(data, start) & 0xFFFF


def pseudo4(src, dst, proto, length):
    return src + dst + struct.pack("!BBH", 0, proto, length)


def pseudo6(src, dst, nh, length):
    return src + dst + struct.pack("!I3xB", length, nh)


def l4_segment(proto, spec, payload):
    """The transport header and payload, checksum field zero (filled by
    the caller, which knows the pseudo-header)."""
    if proto == 6:
        flags = spec.get("tcp_flags", 0x10)
        hdr = struct.pack("!HHIIBBHHH", spec.get("tp_src", 1234), spec.get("tp_dst", 80),
                          spec.get("seq", 1000), spec.get("ack", 0) if flags & 0x10 else 0,
                          (5 << 4) | ((flags >> 8) & 0xF), flags & 0xFF, 8192, 0, 0)
        return hdr + payload, 16
    if proto == 17:
        return struct.pack("!HHHH", spec.get("tp_src", 1234), spec.get("tp_dst", 53),
                           8 + len(payload), 0) + payload, 6
    if proto == 132:
        # SCTP: common header, CRC left zero (never compared).
        return struct.pack("!HHII", spec.get("tp_src", 1234), spec.get("tp_dst", 80), 1, 0) + payload, None
    if proto in (1, 58):
        return struct.pack("!BBHHH", spec.get("icmp_type", 8), spec.get("icmp_code", 0), 0, 1,
                           spec.get("seq", 1)) + payload, 2
    return payload, None


def build(spec):
    """A frame from a packet description (a dict: kind, addresses, ports,
    vlans, frag...), with right checksums (a fragment's L4 checksum covers
    the part in the frame only)."""
    kind = spec["kind"]
    payload = bytes((i * 7 + spec.get("seed", 0)) & 0xFF for i in range(spec.get("payload", 12)))
    frag = spec.get("frag", "no")
    if kind in ("l2",):
        ethertype = spec.get("dl_type", 0x88B5)
        body = payload + bytes(16)
    elif kind == "arp":
        ethertype = 0x0806
        body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, spec.get("arp_op", 1),
                           mac_bytes(spec.get("arp_sha", spec["dl_src"])),
                           ipaddress.IPv4Address(spec.get("arp_spa", "10.0.0.1")).packed,
                           mac_bytes(spec.get("arp_tha", "00:00:00:00:00:00")),
                           ipaddress.IPv4Address(spec.get("arp_tpa", "10.0.0.2")).packed)
    elif kind in ("ip", "tcp", "udp", "icmp", "sctp"):
        ethertype = 0x0800
        proto = {"tcp": 6, "udp": 17, "icmp": 1, "sctp": 132}.get(kind, spec.get("nw_proto", 47))
        src = ipaddress.IPv4Address(spec.get("nw_src", "10.0.0.1")).packed
        dst = ipaddress.IPv4Address(spec.get("nw_dst", "10.0.0.2")).packed
        if frag == "later":
            seg, at = payload + bytes(8), None
            off, mf = spec.get("frag_offset", 185), spec.get("mf", False)
        else:
            seg, at = l4_segment(proto, spec, payload)
            off, mf = 0, frag == "first"
            if at is not None:
                c = checksum(seg, ones_sum(pseudo4(src, dst, proto, len(seg)))) if proto != 1 else checksum(seg)
                if proto == 17 and spec.get("udp_zero_csum"):
                    c = 0
                elif proto == 17 and c == 0:
                    c = 0xFFFF
                seg = seg[:at] + struct.pack("!H", c) + seg[at + 2:]
        hdr = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, spec.get("tos", 0), 20 + len(seg),
                                    spec.get("ip_id", 0x1234), (0x2000 if mf else 0) | off,
                                    spec.get("ttl", 64), proto, 0, src, dst))
        hdr[10:12] = struct.pack("!H", checksum(bytes(hdr)))
        body = bytes(hdr) + seg
    elif kind in ("ipv6", "tcp6", "udp6", "icmp6"):
        ethertype = 0x86DD
        proto = {"tcp6": 6, "udp6": 17, "icmp6": 58}.get(kind, spec.get("nw_proto", 59))
        src = ipaddress.IPv6Address(spec.get("ipv6_src", "2001:db8::1")).packed
        dst = ipaddress.IPv6Address(spec.get("ipv6_dst", "2001:db8::2")).packed
        if frag == "later":
            seg, at = payload + bytes(8), None
        else:
            seg, at = l4_segment(proto, spec, payload)
            if at is not None:
                c = checksum(seg, ones_sum(pseudo6(src, dst, proto, len(seg))))
                if proto == 17 and c == 0:
                    c = 0xFFFF
                seg = seg[:at] + struct.pack("!H", c) + seg[at + 2:]
        nh = proto
        if frag != "no":
            off = spec.get("frag_offset", 185) if frag == "later" else 0
            m = 1 if frag == "first" or spec.get("mf") else 0
            seg = struct.pack("!BBHI", proto, 0, (off << 3) | m, spec.get("ip_id", 0x1234)) + seg
            nh = 44
        tc = spec.get("tos", 0)
        first = (6 << 28) | (tc << 20) | spec.get("ipv6_label", 0)
        body = struct.pack("!IHBB16s16s", first, len(seg), nh, spec.get("ttl", 64), src, dst) + seg
    else:
        raise ValueError(f"packet kind {kind}")
    out = mac_bytes(spec["dl_dst"]) + mac_bytes(spec["dl_src"])
    for tpid, vid, pcp in spec.get("vlans", []):
        out += struct.pack("!HH", tpid, (pcp << 13) | vid)
    out += struct.pack("!H", ethertype) + body
    if len(out) < 60:
        out += bytes(60 - len(out))
    return out


def layers(f):
    """Where the headers of frame f are: {'l3': offset or None, 'type':
    ethertype, 'ip': 4/6/None, 'arp': bool, 'l4': offset or None, 'proto':
    IP protocol, 'frag': 'no'/'first'/'later'}."""
    o = {"l3": None, "ip": None, "arp": False, "l4": None, "proto": None, "frag": "no", "vlans": 0}
    if len(f) < 14:
        return o
    at = 12
    ty = struct.unpack_from("!H", f, at)[0]
    while ty in (0x8100, 0x88A8, 0x9100) and len(f) >= at + 6:
        at += 4
        o["vlans"] += 1
        ty = struct.unpack_from("!H", f, at)[0]
    o["type"] = ty
    l3 = at + 2
    o["l3"] = l3
    if ty == 0x0800 and len(f) >= l3 + 20:
        o["ip"] = 4
        ihl = (f[l3] & 0xF) * 4
        fo = struct.unpack_from("!H", f, l3 + 6)[0]
        mf, off = fo & 0x2000, fo & 0x1FFF
        o["frag"] = "later" if off else ("first" if mf else "no")
        o["proto"] = f[l3 + 9]
        o["l3_len"] = struct.unpack_from("!H", f, l3 + 2)[0]
        if o["frag"] != "later":
            o["l4"] = l3 + ihl
    elif ty == 0x86DD and len(f) >= l3 + 40:
        o["ip"] = 6
        nh = f[l3 + 6]
        at = l3 + 40
        o["l3_len"] = 40 + struct.unpack_from("!H", f, l3 + 4)[0]
        while nh in (0, 43, 60, 44) and len(f) >= at + 8:
            if nh == 44:
                fo = struct.unpack_from("!H", f, at + 2)[0]
                o["frag"] = "later" if fo >> 3 else "first" if fo & 1 else "first"
                nh2 = f[at]
                at += 8
                nh = nh2
                if o["frag"] == "later":
                    break
            else:
                nh2 = f[at]
                at += (f[at + 1] + 1) * 8
                nh = nh2
        o["proto"] = nh
        if o["frag"] != "later":
            o["l4"] = at
    elif ty == 0x0806:
        o["arp"] = True
    return o


CSUM_AT = {6: 16, 17: 6, 1: 2, 58: 2}


def without_checksums(f):
    """f with the IPv4 header, TCP, UDP, ICMP, ICMPv6 and SCTP checksums
    zeroed."""
    b = bytearray(f)
    o = layers(b)
    if o["ip"] == 4:
        b[o["l3"] + 10:o["l3"] + 12] = b"\0\0"
    if o["l4"] is not None and o["proto"] in CSUM_AT and (o["ip"] == 6 or o["proto"] != 58) \
            and (o["ip"] == 4 or o["proto"] != 1):
        at = o["l4"] + CSUM_AT[o["proto"]]
        if at + 2 <= len(b):
            b[at:at + 2] = b"\0\0"
    if o["l4"] is not None and o["proto"] == 132 and o["l4"] + 12 <= len(b):
        b[o["l4"] + 8:o["l4"] + 12] = bytes(4)
    return bytes(b)


def checksum_problems(f):
    """What is wrong with f's checksums (IPv4 header; TCP/UDP/ICMP/ICMPv6 of
    an unfragmented packet): a list of words, empty when right."""
    o = layers(f)
    bad = []
    if o["ip"] == 4:
        l3 = o["l3"]
        ihl = (f[l3] & 0xF) * 4
        if checksum(bytes(f[l3:l3 + ihl])) != 0:
            bad.append("ipv4")
    if o["l4"] is None or o["frag"] != "no" or o["proto"] not in CSUM_AT:
        return bad
    l3, l4, proto = o["l3"], o["l4"], o["proto"]
    end = l3 + o["l3_len"]
    seg = bytes(f[l4:end])
    if len(seg) < CSUM_AT[proto] + 2 or end > len(f):
        return bad
    if o["ip"] == 4:
        if proto == 58:
            return bad
        if proto == 1:
            ok = checksum(seg) == 0
        elif proto == 17 and seg[6:8] == b"\0\0":
            ok = True
        else:
            ok = checksum(seg, ones_sum(pseudo4(f[l3 + 12:l3 + 16], f[l3 + 16:l3 + 20], proto, len(seg)))) == 0
    else:
        if proto == 1:
            return bad
        if proto == 17 and seg[6:8] == b"\0\0":
            ok = True
        else:
            ok = checksum(seg, ones_sum(pseudo6(f[l3 + 8:l3 + 24], f[l3 + 24:l3 + 40], proto, len(seg)))) == 0
    if not ok:
        bad.append({6: "tcp", 17: "udp", 1: "icmp", 58: "icmpv6"}[proto])
    return bad


# ================================================================ datapath actions


def split_top(s, sep=","):
    """s split at the separators outside parentheses."""
    out, depth, cur = [], 0, []
    for c in s:
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if c == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if cur or out:
        out.append("".join(cur))
    return [x.strip() for x in out if x.strip()]


def parse_value(kind, text):
    """(value, mask) of `text` for a field of kind mac/ip4/ip6/int."""
    val, _, mask = text.partition("/")

    def one(t):
        if kind == "mac":
            return int(t.replace(":", ""), 16)
        if kind == "ip4":
            return int(ipaddress.IPv4Address(t))
        if kind == "ip6":
            return int(ipaddress.IPv6Address(t))
        return int(t, 0)

    v = one(val)
    if mask:
        if kind in ("ip4", "ip6") and mask.isdigit() and "." not in mask and ":" not in mask:
            bits = 32 if kind == "ip4" else 128
            m = ((1 << int(mask)) - 1) << (bits - int(mask)) if int(mask) else 0
        else:
            m = one(mask)
    else:
        m = None
    return v, m


# Where each settable field lies: key -> field -> (base, offset, bytes,
# kind, shift, bits). base: 'eth' (frame start), 'l3', 'l4'.
FIELDS = {
    "eth": {"src": ("eth", 6, 6, "mac"), "dst": ("eth", 0, 6, "mac")},
    "ipv4": {"src": ("l3", 12, 4, "ip4"), "dst": ("l3", 16, 4, "ip4"), "proto": ("l3", 9, 1, "int"),
             "tos": ("l3", 1, 1, "int"), "ttl": ("l3", 8, 1, "int")},
    "ipv6": {"src": ("l3", 8, 16, "ip6"), "dst": ("l3", 24, 16, "ip6"), "hlimit": ("l3", 7, 1, "int"),
             "label": ("l3", 0, 4, "int", 0, 20), "tclass": ("l3", 0, 4, "int", 20, 8)},
    "tcp": {"src": ("l4", 0, 2, "int"), "dst": ("l4", 2, 2, "int")},
    "udp": {"src": ("l4", 0, 2, "int"), "dst": ("l4", 2, 2, "int")},
    "sctp": {"src": ("l4", 0, 2, "int"), "dst": ("l4", 2, 2, "int")},
    "icmp": {"type": ("l4", 0, 1, "int"), "code": ("l4", 1, 1, "int")},
    "icmpv6": {"type": ("l4", 0, 1, "int"), "code": ("l4", 1, 1, "int")},
    "arp": {"sip": ("l3", 14, 4, "ip4"), "tip": ("l3", 24, 4, "ip4"), "op": ("l3", 6, 2, "int"),
            "sha": ("l3", 8, 6, "mac"), "tha": ("l3", 18, 6, "mac")},
}
# Keys that change metadata only, not the frame.
META_KEYS = {"skb_mark", "skb_priority"}
# OVS's packet-in reasons (enum ofp_packet_in_reason) as OpenFlow 1.3
# reports them.
OVS_REASON = {0: "no_match", 1: "action", 2: "invalid_ttl", 3: "action", 4: "action", 5: "action",
              6: "no_match", 7: "no_match"}


class Unmodelled(Exception):
    """A datapath action this script does not apply."""


def apply_set(frame, inner):
    """frame with set(KEY(FIELD=VALUE[/MASK],...)) applied."""
    m = re.fullmatch(r"(\w+)\((.*)\)", inner)
    if not m:
        raise Unmodelled(f"set({inner})")
    key, args = m.group(1), m.group(2)
    if key in META_KEYS:
        return frame
    if key not in FIELDS:
        raise Unmodelled(f"set({inner})")
    o = layers(frame)
    b = bytearray(frame)
    for a in split_top(args):
        name, _, text = a.partition("=")
        if key in ("ipv4", "ipv6") and name == "frag" or key == "ipv6" and name == "proto":
            continue
        spec = FIELDS[key].get(name)
        if spec is None:
            raise Unmodelled(f"set({inner}): {name}")
        base, off, size, kind = spec[:4]
        shift, bits = (spec[4], spec[5]) if len(spec) > 4 else (0, size * 8)
        at = {"eth": 0, "l3": o["l3"], "l4": o["l4"]}[base]
        if at is None or at + off + size > len(b):
            raise Unmodelled(f"set({inner}) on a frame without that header")
        v, mask = parse_value(kind, text)
        full = (1 << bits) - 1
        mask = full if mask is None else mask & full
        old = int.from_bytes(b[at + off:at + off + size], "big")
        fm = mask << shift
        new = (old & ~fm) | ((v << shift) & fm)
        b[at + off:at + off + size] = new.to_bytes(size, "big")
    return bytes(b)


def apply_actions(frame, actions, dp_to_of):
    """Runs the datapath actions (a list of texts) on frame: the outputs,
    [(port, frame, reason)]."""
    outs = []
    for a in actions:
        if a.isdigit():
            port = dp_to_of.get(int(a))
            if port is None:
                raise Unmodelled(f"output to datapath port {a}, not a port of the bridge")
            outs.append((port, frame, None))
        elif a == "drop":
            pass
        elif a.startswith("set(") and a.endswith(")"):
            frame = apply_set(frame, a[4:-1])
        elif a.startswith("push_vlan(") and a.endswith(")"):
            args = dict(x.split("=", 1) for x in split_top(a[10:-1]))
            tpid = int(args.get("tpid", "0x8100"), 0)
            tci = (int(args.get("pcp", "0")) << 13) | int(args.get("vid", "0"))
            frame = frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
        elif a == "pop_vlan":
            if struct.unpack_from("!H", frame, 12)[0] in (0x8100, 0x88A8, 0x9100):
                frame = frame[:12] + frame[16:]
        elif a.startswith("userspace(") and "controller(" in a:
            m = re.search(r"controller\(reason=(\d+)", a)
            reason = OVS_REASON.get(int(m.group(1)), m.group(1)) if m else None
            cid = re.search(r"controller_id=(\d+)", a)
            outs.append(("CONTROLLER", frame, with_id(reason, int(cid.group(1)) if cid else 0)))
        elif a.startswith("clone(") and a.endswith(")"):
            outs.extend(apply_actions(frame, split_top(a[6:-1]), dp_to_of))
        elif a.startswith("hash("):
            pass
        elif a.startswith("recirc("):
            # What follows a recirculation is not in the trace (but for
            # conntrack, which no case here uses).
            raise Unmodelled(a)
        else:
            raise Unmodelled(a)
    return outs


def dp_text(actions, dp_to_of=None):
    """A list of datapath actions as text both switches write alike:
    Open vSwitch's datapath ports put in OpenFlow numbers (dp_to_of given),
    and a packet-in, Open vSwitch's `userspace(...controller(reason=N,...
    controller_id=C...))` or sluice's `controller(reason=R,table=T,id=C)`,
    as `CONTROLLER(R[,id=C])` (docs/OVS-DIALECT.md, ofproto/trace 5: the
    datapath action is sluice's own; the table and userdata are not
    compared, as for the outputs); Open vSwitch's `set(skb_mark(...))`
    left out (sluice writes no pkt_mark action: not compared, as for the
    outputs); a set action as the header it writes (`set(eth)`)."""
    out = []
    for a in actions:
        if a.startswith("set(skb_mark("):
            # sluice's datapath actions do not write pkt_mark (its outputs
            # do not carry it: see the module doc of
            # crates/pipeline/src/trace/datapath.rs).
            continue
        if dp_to_of is not None and a.isdigit():
            a = str(dp_to_of.get(int(a), f"?{a}"))
        elif a.startswith("userspace(") and "controller(" in a:
            m = re.search(r"controller\(reason=(\d+)", a)
            reason = OVS_REASON.get(int(m.group(1)), m.group(1)) if m else "?"
            cid = re.search(r"controller_id=(\d+)", a)
            a = f"CONTROLLER({with_id(reason, int(cid.group(1)) if cid else 0)})"
        elif a.startswith("controller(reason="):
            args = dict(x.split("=", 1) for x in split_top(a[11:-1]))
            a = f"CONTROLLER({with_id(args.get('reason'), int(args.get('id', '0')))})"
        elif a.startswith("set(") and "(" in a[4:]:
            # Which header a set action writes, not its fields: Open
            # vSwitch writes the fields the flows set, masked to the bits
            # they set (set(eth(dst=00:00:00:00:00:01/00:00:00:00:ff:ff)),
            # set(icmp(type=0,code=1)) with the code unchanged), sluice the
            # fields that changed, whole (docs/OVS-DIALECT.md,
            # ofproto/trace 6). The values are compared through the
            # frames at each output.
            a = a[:a.index("(", 4)] + ")"
        out.append(a)
    return ",".join(out)


def dp_problem(trace, dp_to_of, j):
    """Whether the `Datapath actions:` lines differ (normalized by
    dp_text): a problem text, or None. Only packets whose outputs are
    compared get here (an action this script does not model, NORMAL and
    the rest are skipped before)."""
    ovs = [dp_text(split_top(line.split(":", 1)[1].strip()), dp_to_of)
           for line in trace.splitlines() if line.startswith("Datapath actions:")]
    mine = [dp_text(split_top(x)) for x in j.get("datapath_actions", [])]
    if ovs == mine:
        return None
    return f"datapath actions: OVS {' | '.join(ovs)}; sluice {' | '.join(mine)}"


def with_id(reason, controller_id):
    """A packet-in's reason, and the controller id it is for when not 0
    (the connections of that id get it)."""
    return reason if not controller_id or reason is None else f"{reason},id={controller_id}"


def datapath_actions(trace):
    """The actions of every "Datapath actions:" line of a trace, in order."""
    out = []
    for line in trace.splitlines():
        if line.startswith("Datapath actions:"):
            out.extend(split_top(line.split(":", 1)[1].strip()))
    return out


# ================================================================ Open vSwitch


def ofctl_reason(stderr):
    """ovs-ofctl's complaint in one line: the OpenFlow error's name or its
    own message."""
    own = None
    for line in stderr.strip().splitlines():
        m = re.match(r"OFPT_ERROR \(.*?\): (.*)$", line.strip())
        if m:
            return m.group(1)
        if line.startswith("ovs-ofctl: ") and own is None:
            own = line[len("ovs-ofctl: "):]
    return own or (stderr.strip().splitlines() or ["refused (no message)"])[0]


class Unixctl:
    """ovs-appctl's protocol (JSON-RPC over a Unix socket), one connection."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.buf = ""
        self.n = 0
        self.dec = json.JSONDecoder()

    def call(self, method, *params):
        self.n += 1
        self.sock.sendall(json.dumps({"method": method, "params": list(params), "id": self.n}).encode())
        while True:
            try:
                msg, end = self.dec.raw_decode(self.buf.lstrip())
                self.buf = self.buf.lstrip()[end:]
                break
            except ValueError:
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    raise Fail(f"ovs-vswitchd closed its control socket during {method}")
                self.buf += chunk.decode()
        if msg.get("error"):
            raise Fail(f"ovs-appctl {method} {' '.join(params)}: {msg['error']}")
        return msg.get("result", "")

    def close(self):
        self.sock.close()


def ovs_group(g):
    """A group as OVS gets it (with OpenFlow 1.5): a select group is given
    `selection_method=hash`. OVS's default, dp_hash, recirculates, and
    ofproto/trace cannot tell which bucket the datapath would take; with
    one bucket every method takes it."""
    return re.sub(r"(^|,)type=select(,|$)", r"\1type=select,selection_method=hash\2", g, count=1)


class Ovs:
    """A private ovsdb-server + ovs-vswitchd (dummy devices only) and one
    bridge; start() takes the machine-wide lock, stop() lets it go."""

    def __init__(self, keep_logs=None):
        self.dir = tempfile.mkdtemp(prefix="sluice-ovsdiff-")
        self.env = dict(os.environ, OVS_RUNDIR=self.dir, OVS_DBDIR=self.dir, OVS_LOGDIR=self.dir)
        self.db = f"unix:{self.dir}/db.sock"
        self.lock = None
        self.ctl = None
        self.ports = []
        self.keep_logs = keep_logs
        self.has_groups = True

    def run(self, *args, check=True, timeout=60, input=None):
        p = subprocess.run(args, env=self.env, capture_output=True, text=True, timeout=timeout, input=input)
        if check and p.returncode != 0:
            raise Fail(f"{' '.join(args)}: {p.stderr.strip()}")
        return p

    def vsctl(self, *args):
        return self.run("ovs-vsctl", f"--db={self.db}", "--timeout=30", *args)

    def ofctl(self, *args, check=True):
        return self.run("ovs-ofctl", "-O", "OpenFlow13", *args, check=check)

    def start(self):
        for tool in ("ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovsdb-tool"):
            if shutil.which(tool) is None:
                raise Fail(f"{tool} not found (scripts/setup.sh installs openvswitch-switch)")
        self.lock = open(LOCK, "a")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        d = self.dir
        self.run("ovsdb-tool", "create", f"{d}/conf.db", "/usr/share/openvswitch/vswitch.ovsschema")
        self.run("ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock",
                 f"--pidfile={d}/ovsdb-server.pid", "--detach", f"--log-file={d}/ovsdb-server.log")
        self.vsctl("--no-wait", "init")
        self.vsctl("--no-wait", "set", "Open_vSwitch", ".", "other_config:vlan-limit=2")
        self.run("ovs-vswitchd", self.db, "--enable-dummy=override", f"--pidfile={d}/ovs-vswitchd.pid",
                 "--detach", f"--log-file={d}/ovs-vswitchd.log")
        pid = int(open(f"{d}/ovs-vswitchd.pid").read().strip())
        self.ctl = Unixctl(f"{d}/ovs-vswitchd.{pid}.ctl")
        self.version = self.ctl.call("version").strip()

    def bridge(self, ports, names=None, tables=None):
        """The bridge, made anew with dummy ports at the OpenFlow numbers
        `ports` (named from `names` {number: name} or pN), table names
        {number: name}; returns {datapath port: OpenFlow port}."""
        names = names or {}
        self.vsctl("--if-exists", "del-br", BRIDGE)
        args = ["add-br", BRIDGE, "--", "set", "bridge", BRIDGE, "datapath_type=netdev",
                "fail-mode=secure", "protocols=OpenFlow13,OpenFlow15"]
        for no in ports:
            name = names.get(no, f"p{no}")
            args += ["--", "add-port", BRIDGE, name, "--", "set", "interface", name, "type=dummy",
                     f"ofport_request={no}"]
        for i, (no, name) in enumerate(sorted((tables or {}).items())):
            args += ["--", f"--id=@t{i}", "create", "Flow_Table", f"name={name}",
                     "--", "set", "bridge", BRIDGE, f"flow_tables:{no}=@t{i}"]
        self.vsctl(*args)
        self.ports = list(ports)
        self.has_groups = False
        for _ in range(100):
            dp = self.dp_ports()
            if sorted(p for p in dp.values() if p != "LOCAL") == sorted(ports):
                return dp
            time.sleep(0.1)
        raise Fail(f"the bridge's ports did not all appear: {self.ctl.call('dpif/show')}")

    def dp_ports(self):
        """{datapath port: OpenFlow port} of the bridge, from dpif/show."""
        out, mine = {}, False
        for line in self.ctl.call("dpif/show").splitlines():
            if re.match(r"^  \S+:$", line):
                mine = line.strip() == BRIDGE + ":"
                continue
            m = re.match(r"^\s+\S+ (\d+)/(\d+):", line)
            if m and mine:
                of, dp = int(m.group(1)), int(m.group(2))
                out[dp] = "LOCAL" if of == 65534 else of
        return out

    def add_group(self, g):
        """Adds one group; None or OVS's complaint."""
        p = self.run("ovs-ofctl", "-O", "OpenFlow15", "add-group", BRIDGE, ovs_group(g), check=False)
        return None if p.returncode == 0 else ofctl_reason(p.stderr)

    def load(self, flows, groups, path):
        """Replaces the bridge's flows and groups. Returns None, or the
        first error (the flows go as one bundle: all or none)."""
        # (A "delete" line in the bundle instead crashes OVS 3.1 on the
        # del-groups after: ofproto.c:9341, rule->state == RULE_INSERTED.)
        self.ofctl("del-flows", BRIDGE)
        if groups or self.has_groups:
            self.ofctl("del-groups", BRIDGE)
            self.has_groups = False
        if groups:
            with open(path, "w") as f:
                f.write("\n".join(ovs_group(g) for g in groups) + "\n")
            self.has_groups = True
            p = self.run("ovs-ofctl", "-O", "OpenFlow15", "add-groups", BRIDGE, path, check=False)
            if p.returncode != 0:
                return p.stderr.strip()
        if flows:
            with open(path, "w") as f:
                f.write("\n".join(flows) + "\n")
            p = self.ofctl("--bundle", "add-flows", BRIDGE, path, check=False)
            if p.returncode != 0:
                return p.stderr.strip()
        return None

    def refused(self, flows, groups):
        """Which flows and groups OVS refuses, each added alone (groups
        first, in order): {text: reason}."""
        out = {}
        self.ofctl("del-flows", BRIDGE)
        self.ofctl("del-groups", BRIDGE)
        for g in groups:
            err = self.add_group(g)
            if err:
                out[g] = err
        for fl in flows:
            p = self.ofctl("add-flow", BRIDGE, fl, check=False)
            if p.returncode != 0:
                out[fl] = ofctl_reason(p.stderr)
        return out

    def trace(self, in_port, frame):
        return self.ctl.call("ofproto/trace", BRIDGE, f"in_port={in_port}", frame.hex())

    def stop(self):
        try:
            if self.ctl:
                try:
                    self.vsctl("--if-exists", "del-br", BRIDGE)
                except (Fail, subprocess.TimeoutExpired):
                    pass
                self.ctl.close()
        finally:
            ovslib.stop_daemons(self.dir)
            if self.keep_logs:
                for f in os.listdir(self.dir):
                    if f.endswith(".log"):
                        shutil.copy(os.path.join(self.dir, f), self.keep_logs)
            shutil.rmtree(self.dir, ignore_errors=True)
            if self.lock:
                self.lock.close()
                self.lock = None


# ================================================================ random cases

# Differences known and written down, which the generator avoids unless
# told (--show-known): a test that fails on them would hide new ones.
# Remove an entry once the difference is gone.
KNOWN = {
    "bucket-order":
        "Open vSwitch runs a group bucket's actions as an action set "
        "(xlate_group_bucket -> ofpacts_execute_action_set): pop_vlan, push_vlan, "
        "dec_ttl, then set-fields and moves in order, then one final action (the "
        "group, else the last output, else the last resubmit; none: nothing runs). "
        "sluice runs them as a list, in order. The generator writes buckets in "
        "action-set order with one final action.",
    "action-set-after-miss":
        "A packet that misses in a table without a table-miss flow (after a "
        "goto_table): Open vSwitch still runs its action set (\"No match. drop\", then "
        "\"Executing action set\"), sluice drops it, action set and all (OpenFlow 1.3 "
        "5.4: unmatched packets are dropped). The generator gives every table but 0 "
        "a catch-all flow at priority 1 with no actions.",
    "ttl-expiry":
        "dec_ttl on a packet whose TTL is 1 or 0: Open vSwitch stops only the action "
        "list being run (compose_dec_ttl: \"stop processing for current table\"): the "
        "flow that resubmitted goes on after its resubmit, the action set still runs; "
        "sluice drops the packet there. (OVS's packet-in for it reaches no controller "
        "with the default asynchronous configuration; it is not compared.) The "
        "generator sends TTLs of 64 and 255 only and sets none below 64.",
    "push-vlan-copy":
        "push_vlan on a packet that has a tag: Open vSwitch's new tag has VID 0 and "
        "PCP 0 (the set_field that follows gives the VID), sluice's copies the outer "
        "tag's VID and PCP (OpenFlow 1.3: fields of a pushed header are copied from the "
        "existing one). The generator tags packets with PCP 0, matches and sets no other "
        "PCP, and follows every push_vlan with a set_field of the VID.",
    "first-fragment-l4":
        "A first fragment (offset 0, more fragments): Open vSwitch looks it up with its "
        "transport ports, ICMP type and code taken as 0 (rule_dpif_lookup_from_table, "
        "frag handling \"normal\", its default); sluice matches the ports the fragment "
        "carries. The generator builds first fragments with ports, type and code 0.",
    "packet-in-reason-miss":
        "A packet-in made by the action set or a group bucket while the last flow run "
        "was a table-miss flow (priority 0, no match): Open vSwitch reports OFPR_ACTION "
        "(its ACTION_SET and GROUP reasons, in OpenFlow 1.3 terms), sluice OFPR_NO_MATCH. "
        "The generator writes no controller output in action sets or buckets.",
    "group-loop":
        "A loop through a group bucket's resubmit back to a flow that runs the group: "
        "Open vSwitch counts each bucket as a level of its 64-level limit and, over "
        "it, drops the packet whole (\"Recursion too deep\"); sluice stops at a "
        "nesting limit of its own and keeps the copies output so far (16 outputs for "
        "group:1 = {output:4, resubmit(,0)} run from table 0). The generator writes no "
        "resubmit in buckets.",
    "ipv6-later-fragment-proto":
        "An IPv6 fragment past the first: Open vSwitch gives it nw_proto 44 (the "
        "fragment header; parse_ipv6_ext_hdrs), so tcp6/udp6/icmp6 flows miss it; "
        "sluice gives it the fragment header's next header. The generator sends IPv6 "
        "first fragments only.",
    "later-fragment-l4":
        "An IPv4 fragment past the first: Open vSwitch's flow has tp_src, tp_dst, "
        "tcp_flags (and ICMP type and code) 0, which flows can match (tcp_flags=-ack, "
        "icmp_type=0); sluice has no such fields for it, so those flows miss. The "
        "generator matches tcp_flags with a flag set, and no ICMP type or code 0.",
    "runt-padding":
        "pop_vlan on a 60-byte frame: sluice pads the 56 bytes left to 60, and a "
        "push_vlan after makes the frame 64 bytes where Open vSwitch's is 60 (it pads "
        "nothing; the device pads a runt). The comparison leaves out the bytes after "
        "the IP packet or ARP message, and the zero bytes that end a frame of another "
        "type (Ethernet padding).",
    "tp-mask":
        "(refusal) a masked tp_src/tp_dst: sluice refuses it (OpenFlow 1.3's OXM has no "
        "mask for the transport ports), Open vSwitch takes it. Never generated.",
    "frag-later-l4":
        "(refusal) ip_frag=later with a transport field: Open vSwitch refuses it "
        "(OFPBMC_BAD_PREREQ), sluice takes it. The generator writes not_later instead.",
    "vlan-field-in-set-after-push":
        "(refusal) a set_field of vlan_vid (or mod_vlan_pcp) in write_actions of a flow "
        "whose match has no tag but whose apply-actions push one: sluice refuses it "
        "(OFPBAC_MATCH_INCONSISTENT: it checks the action set against the match), Open "
        "vSwitch takes it (it checks the instructions in order). The generator writes "
        "VLAN fields in action sets only when the match has a tag.",
    "vlan-field-after-pop":
        "(refusal) a set_field of vlan_vid after push_vlan then pop_vlan in a flow "
        "that matches a tag (the matched tag is back on top): sluice refuses it "
        "(OFPBAC_MATCH_INCONSISTENT: after a pop it takes the packet to be untagged), "
        "Open vSwitch takes it (it keeps the stack of tags). The generator sets no "
        "VLAN field after a pop.",
    "dec-ttl-prereq":
        "(refusal) dec_ttl in a flow whose match is not IP: Open vSwitch refuses it "
        "under OpenFlow 1.3 (check_DEC_TTL: an inconsistent match), sluice takes it. "
        "The generator writes dec_ttl in IP flows (and buckets) only.",
    "exit-action-set":
        "exit with a non-empty action set: ovs-actions(7) says the action set still "
        "runs, and sluice runs it; Open vSwitch 3.1's translation does not "
        "(do_xlate_actions stops at ctx->exit, the action set's actions included). The "
        "generator writes no write_actions in a case that may exit.",
    "third-tag":
        "(refusal) a flow whose actions could push a third VLAN tag (dl_vlan=10 then "
        "two push_vlan): Open vSwitch refuses it (OFPBAC_BAD_TAG: its flows hold 2 "
        "tags), sluice takes it. The generator counts the tags. A third tag pushed "
        "through resubmits is not compared (\"more than 2 VLAN tags\").",
}

MACS = ["02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03", "0a:00:00:00:00:0b",
        "ff:ff:ff:ff:ff:ff", "01:00:5e:00:00:01"]
IP4 = ["10.0.0.1", "10.0.0.2", "10.0.1.5", "10.1.2.3", "192.168.1.1", "172.16.0.9"]
IP6 = ["2001:db8::1", "2001:db8::2", "2001:db8:1::5", "fe80::1"]
TPORTS = [80, 443, 53, 1234, 8080, 0x51]
VIDS = [10, 20, 100]
REGVALS = [0, 1, 2, 5, 0x10, 0xFF, 0x1234, 0xFFFFFFFF]
TCP_FLAGS = [0x002, 0x012, 0x010, 0x011, 0x004, 0x018, 0x014]
# Packet kinds: the shorthand a flow writes, the packet kinds it covers.
KINDS = {
    "any": ["l2", "arp", "ip", "tcp", "udp", "icmp", "sctp", "ipv6", "tcp6", "udp6", "icmp6"],
    "ip": ["ip", "tcp", "udp", "icmp", "sctp"], "tcp": ["tcp"], "udp": ["udp"], "icmp": ["icmp"],
    "arp": ["arp"], "ipv6": ["ipv6", "tcp6", "udp6", "icmp6"], "tcp6": ["tcp6"], "udp6": ["udp6"],
    "icmp6": ["icmp6"], "sctp": ["sctp"],
}
IP4_KINDS = {"ip", "tcp", "udp", "icmp", "sctp"}
IP6_KINDS = {"ipv6", "tcp6", "udp6", "icmp6"}
L4_PORTS = {"tcp", "udp", "tcp6", "udp6", "sctp"}


class Gen:
    """Random small pipelines and packets aimed at them, from one seed."""

    def __init__(self, seed, n_ports=4, avoid=()):
        self.r = random.Random(seed)
        self.n_ports = n_ports
        # The known differences not to generate (KNOWN).
        self.avoid = set(avoid)

    def chance(self, p):
        return self.r.random() < p

    def pick(self, seq):
        return self.r.choice(seq)

    # ---------------------------------------------------------- matches

    def match(self, kind=None):
        """(text fields, needs, vlan state) of a random match; needs: what a
        packet must have to match; vlan: 'tagged', 'untagged' or None."""
        r = self.r
        if kind is None:
            kind = self.pick(["any"] * 3 + ["ip"] * 2 + ["tcp"] * 3 + ["udp"] * 2 +
                             ["icmp", "arp", "ipv6", "tcp6", "udp6", "icmp6"])
        parts = [] if kind == "any" else [kind]
        needs = {} if kind == "any" else {"kind": kind}
        vlan = None
        if self.chance(0.3):
            p = r.randint(1, self.n_ports)
            parts.append(f"in_port={p}")
            needs["in_port"] = p
        for f in ("dl_src", "dl_dst"):
            if self.chance(0.15):
                m = self.pick(MACS)
                if self.chance(0.3):
                    mask = self.pick(["ff:ff:ff:ff:ff:00", "01:00:00:00:00:00", "ff:ff:ff:00:00:00"])
                    parts.append(f"{f}={m}/{mask}")
                else:
                    parts.append(f"{f}={m}")
                needs[f] = m
        if self.chance(0.2):
            c = r.randrange(4)
            vid = self.pick(VIDS)
            if c == 0:
                parts.append(f"dl_vlan={vid}")
                needs["vlan"] = vid
                vlan = "tagged"
            elif c == 1:
                parts.append("vlan_tci=0x0000/0x1000")
                needs["vlan"] = None
                vlan = "untagged"
            elif c == 2:
                parts.append("vlan_tci=0x1000/0x1000")
                needs["vlan"] = vid
                vlan = "tagged"
            else:
                pcp = 0 if "push-vlan-copy" in self.avoid else r.randrange(8)
                parts.append(f"dl_vlan={vid},dl_vlan_pcp={pcp}")
                needs["vlan"] = vid
                needs["pcp"] = pcp
                vlan = "tagged"
        if self.chance(0.25):
            c = r.randrange(5)
            v = self.pick(REGVALS)
            if c <= 2:
                n = r.randrange(8)
                if self.chance(0.4):
                    mask = self.pick([0xFF, 0xF0, 0xFFFF0000, 0x1, 0x0000FFFF])
                    parts.append(f"reg{n}={v & mask:#x}/{mask:#x}")
                else:
                    parts.append(f"reg{n}={v:#x}")
            elif c == 3:
                n = r.randrange(4)
                v64 = (self.pick(REGVALS) << 32) | v
                mask = self.pick([0xFFFFFFFFFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF00000000, 0xFF000000FF])
                parts.append(f"xreg{n}={v64 & mask:#x}/{mask:#x}")
            else:
                if self.chance(0.5):
                    parts.append(f"pkt_mark={v:#x}")
                else:
                    parts.append(f"pkt_mark={v & 0xFF:#x}/0xff")
        k4 = kind in ("ip", "tcp", "udp", "icmp", "sctp")
        k6 = kind in ("ipv6", "tcp6", "udp6", "icmp6")
        if k4:
            for f in ("nw_src", "nw_dst"):
                if self.chance(0.3):
                    a = self.pick(IP4)
                    plen = self.pick([32, 32, 24, 16, 8])
                    net = ipaddress.IPv4Network(f"{a}/{plen}", strict=False)
                    parts.append(f"{f}={a}" if plen == 32 else f"{f}={net}")
                    needs[f] = a
            if self.chance(0.05):
                tos = self.pick([0, 0x20, 0xB8])
                parts.append(f"nw_tos={tos}")
                needs["tos"] = tos
        if k6:
            for f in ("ipv6_src", "ipv6_dst"):
                if self.chance(0.3):
                    a = self.pick(IP6)
                    plen = self.pick([128, 64, 32])
                    net = ipaddress.IPv6Network(f"{a}/{plen}", strict=False)
                    parts.append(f"{f}={a}" if plen == 128 else f"{f}={net}")
                    needs[f] = a
        if k4 or k6:
            if self.chance(0.1):
                t = self.pick([64, 255] if "ttl-expiry" in self.avoid else [64, 1, 2, 255])
                parts.append(f"nw_ttl={t}")
                needs["ttl"] = t
            if self.chance(0.12):
                fr = self.pick(["no", "yes", "first", "later", "not_later"])
                if fr == "later" and kind in L4_PORTS | {"icmp", "icmp6"} and "frag-later-l4" in self.avoid:
                    # OVS refuses L4 fields with ip_frag=later (a later
                    # fragment has none); sluice takes them: KNOWN.
                    fr = "not_later"
                parts.append(f"ip_frag={fr}")
                needs["frag"] = {"no": "no", "yes": self.pick(["first", "later"]), "first": "first",
                                 "later": "later", "not_later": self.pick(["no", "first"])}[fr]
        if kind in L4_PORTS:
            for f in ("tp_src", "tp_dst"):
                if self.chance(0.3):
                    p = self.pick(TPORTS)
                    if "tp-mask" not in self.avoid and self.chance(0.2):
                        parts.append(f"{f}={p & 0xFFF0:#x}/0xfff0")
                    else:
                        parts.append(f"{f}={p}")
                    needs[f] = p
        if kind in ("tcp", "tcp6") and self.chance(0.3):
            fl = self.pick(TCP_FLAGS)
            c = r.randrange(3)
            # A match that a packet without flags (0) meets: see KNOWN
            # "later-fragment-l4".
            zero_ok = "later-fragment-l4" not in self.avoid
            if c == 1 and (fl & 0x12 or zero_ok):
                parts.append(f"tcp_flags={fl & 0x12:#05x}/0x012")
            elif c == 2:
                names = [("syn", 0x2), ("ack", 0x10), ("fin", 0x1), ("rst", 0x4)]
                sub = r.sample(names, 2)
                if not zero_ok and not any(fl & b for _, b in sub):
                    sub[0] = self.pick([(n, b) for n, b in names if fl & b])
                parts.append("tcp_flags=" + "".join(("+" if fl & b else "-") + n for n, b in sub))
            else:
                parts.append(f"tcp_flags={fl:#05x}")
            needs["tcp_flags"] = fl
        if kind in ("icmp", "icmp6") and self.chance(0.3):
            t = self.pick([8, 0, 3]) if kind == "icmp" else self.pick([128, 129, 1])
            if "later-fragment-l4" in self.avoid:
                t = t or 8
            parts.append(f"icmp_type={t}")
            needs["icmp_type"] = t
            if self.chance(0.3) and "later-fragment-l4" not in self.avoid:
                parts.append("icmp_code=0")
                needs["icmp_code"] = 0
        if kind == "arp":
            if self.chance(0.3):
                op = self.pick([1, 2])
                parts.append(f"arp_op={op}")
                needs["arp_op"] = op
            for f in ("arp_spa", "arp_tpa"):
                if self.chance(0.2):
                    a = self.pick(IP4)
                    parts.append(f"{f}={a}")
                    needs[f] = a
        return parts, needs, vlan

    # ---------------------------------------------------------- actions

    def reg_field(self):
        n = self.r.randrange(8)
        if self.chance(0.5):
            return f"NXM_NX_REG{n}[]", 32
        lo = self.r.randrange(0, 24)
        w = self.pick([1, 4, 8])
        return f"NXM_NX_REG{n}[{lo}..{lo + w - 1}]", w

    def nicira_actions(self, kind, vlan, table, n_tables, groups, nested):
        """One of Open vSwitch's Nicira actions (texts: some come with the
        load or output that makes them show)."""
        r = self.r
        ports = list(range(1, self.n_ports + 1))
        reg = f"NXM_NX_REG{r.randrange(8)}"
        fields = ["eth_src", "symmetric_l4", "symmetric_l3l4", "symmetric_l3l4+udp", "nw_src",
                  "nw_dst", "symmetric_l3"]
        c = r.random()
        if c < 0.08:
            return [self.pick(["note:01.02.03", "note:", "sample(probability=65535,collector_set_id=1)"])]
        if c < 0.16 and self.exit_ok:
            return ["exit"]
        if c < 0.26:
            return [f"load:{self.pick(ports + [0, 9, 0xfffe, 0xfffd])}->{reg}[0..15]", f"output:{reg}[0..15]"]
        if c < 0.40:
            f, _ = self.reg_field()
            if self.chance(0.5):
                return [f"push:{f}"]
            return [f"pop:{f}"]
        if c < 0.52 and kind in IP4_KINDS | IP6_KINDS and not self.no_dec:
            return [self.pick(["dec_ttl(0)", "dec_ttl(1,2)", "dec_ttl(0,7)"])]
        if c < 0.66 and not nested:
            tags = self.tags
            inner, _ = self.actions(kind, vlan, table, n_tables, groups, nested=True)
            self.tags = tags
            return [f"clone({','.join(inner) if inner else 'drop'})"]
        if c < 0.74:
            reason = self.pick(["no_match", "invalid_ttl", "action_set", "group", "packet_out"])
            opts = [f"controller(reason={reason})", f"controller(reason={reason},max_len=64)",
                    f"controller(max_len=32,id=0,reason={reason})", "controller(id=3)",
                    f"controller(userdata=01.02.03,id=7,reason={reason})"]
            return [self.pick(opts)]
        if c < 0.86:
            n = r.randint(1, 4)
            alg = self.pick(["modulo_n", "hash_threshold", "hrw", "iter_hash"])
            return [f"multipath({self.pick(fields)},{r.randrange(65536)},{alg},{n},{r.randint(0, 9)},{reg}[0..2])",
                    f"output:{reg}[0..2]"]
        members = ",".join(str(p) for p in r.sample(ports + [9], r.randint(1, 3)))
        alg = self.pick(["hrw", "active_backup"])
        if self.chance(0.5):
            return [f"bundle({self.pick(fields)},{r.randrange(65536)},{alg},ofport,members:{members})"]
        return [f"bundle_load({self.pick(fields)},{r.randrange(65536)},{alg},ofport,{reg}[0..15],members:{members})",
                f"output:{reg}[0..15]"]

    def actions(self, kind, vlan, table, n_tables, groups, in_set=False, nested=False):
        """A random action list (texts) for a flow of `kind`; vlan: what
        the match says of the tag (the list keeps it up to date)."""
        r = self.r
        out = []
        ip4 = kind in ("ip", "tcp", "udp", "icmp", "sctp")
        ip6 = kind in ("ipv6", "tcp6", "udp6", "icmp6")
        for _ in range(r.randint(0 if not in_set else 1, 3 if in_set else 5)):
            if not in_set and self.nicira and self.chance(0.15):
                out.extend(self.nicira_actions(kind, vlan, table, n_tables, groups, nested))
                continue
            c = r.random()
            if c < 0.25:
                out.append(f"output:{r.randint(1, self.n_ports)}")
            elif c < 0.28:
                out.append(self.pick(["in_port", "output:in_port", "LOCAL", "output:LOCAL"]))
            elif c < 0.32:
                if in_set and "packet-in-reason-miss" in self.avoid:
                    out.append(f"output:{r.randint(1, self.n_ports)}")
                else:
                    out.append(self.pick(["controller", "CONTROLLER:128", "controller(max_len=64)"]))
            elif c < 0.42 and not in_set:
                if self.backward and self.chance(0.3):
                    t = r.randrange(n_tables)
                elif table + 1 < n_tables:
                    t = r.randint(table + 1, n_tables - 1)
                else:
                    # Forward only, from the last table: nowhere to go.
                    out.append(f"output:{r.randint(1, self.n_ports)}")
                    continue
                if self.chance(0.25):
                    out.append(f"resubmit({r.randint(1, self.n_ports)},{t})")
                else:
                    out.append(f"resubmit(,{t})")
            elif c < 0.50 and not in_set:
                f, w = self.reg_field()
                out.append(f"load:{r.randrange(1 << w):#x}->{f}")
            elif c < 0.54:
                if self.chance(0.7):
                    out.append(f"set_field:{self.pick(REGVALS):#x}->reg{r.randrange(8)}")
                else:
                    out.append(f"set_field:{(self.pick(REGVALS) << 32) | self.pick(REGVALS):#x}->xreg{r.randrange(4)}")
            elif c < 0.58:
                if self.chance(0.6) or in_set:
                    out.append(f"set_field:{self.pick(REGVALS):#x}->pkt_mark")
                else:
                    out.append(f"load:{r.randrange(256):#x}->NXM_NX_PKT_MARK[0..7]")
            elif c < 0.63 and not in_set:
                srcs = [self.reg_field() for _ in range(2)] + [("NXM_OF_ETH_SRC[0..15]", 16),
                                                               ("NXM_OF_IN_PORT[]", 16),
                                                               ("NXM_NX_PKT_MARK[]", 32)]
                if ip4:
                    srcs.append(("NXM_OF_IP_SRC[]", 32))
                if kind in ("tcp",):
                    srcs.append(("NXM_OF_TCP_DST[]", 16))
                src, w = self.pick(srcs)
                dsts = [(f"NXM_NX_REG{r.randrange(8)}[{lo}..{lo + w - 1}]", w) for lo in (0, 32 - w)]
                dsts += [("NXM_NX_PKT_MARK[]", 32), ("NXM_OF_ETH_DST[0..15]", 16), ("NXM_OF_ETH_DST[]", 48)]
                if ip4:
                    dsts.append(("NXM_OF_IP_DST[]", 32))
                dst = [d for d, dw in dsts if dw == w]
                out.append(f"move:{src}->{self.pick(dst)}")
            elif c < 0.65 and not in_set:
                out.append(f"load:{r.randint(1, self.n_ports)}->NXM_OF_IN_PORT[]")
            elif c < 0.72:
                m = self.pick(MACS[:4] + ["02:00:00:00:00:99"])
                out.append(self.pick([f"mod_dl_src:{m}", f"mod_dl_dst:{m}", f"set_field:{m}->eth_dst"]))
            elif c < 0.80 and (ip4 or ip6):
                ttls = [64, 128] if "ttl-expiry" in self.avoid else [1, 5, 64]
                opts = [f"mod_nw_ttl:{self.pick(ttls)}"] + ([] if self.no_dec else ["dec_ttl"])
                if ip4:
                    a = self.pick(IP4 + ["10.9.9.9"])
                    opts += [f"mod_nw_src:{a}", f"set_field:{a}->ip_dst", f"mod_nw_tos:{self.pick([0, 32, 184])}",
                             f"mod_nw_ecn:{r.randrange(4)}"]
                if ip6:
                    opts += [f"set_field:{self.pick(IP6)}->ipv6_src", f"set_field:{r.randrange(1 << 20):#x}->ipv6_label"]
                if kind in L4_PORTS:
                    p = self.pick(TPORTS + [9999])
                    opts += [f"mod_tp_src:{p}", f"mod_tp_dst:{p}"]
                if kind in ("icmp",):
                    opts += ["set_field:0->icmp_type"]
                out.append(self.pick(opts))
            elif c < 0.86:
                # Tags known to be there (OVS refuses a flow that could
                # push a third: OFPBAC_BAD_TAG).
                if vlan == "tagged" and self.chance(0.5):
                    out.append("pop_vlan")
                    self.tags = max(0, self.tags - 1)
                    vlan = "tagged" if self.tags and "vlan-field-after-pop" not in self.avoid else None
                elif self.chance(0.5) and self.tags < 2:
                    out.append("push_vlan:0x8100")
                    self.tags += 1
                    vlan = "tagged"
                    if self.chance(0.8) or "push-vlan-copy" in self.avoid:
                        out.append(f"set_field:{4096 | self.pick(VIDS)}->vlan_vid")
                elif vlan == "tagged" and self.chance(0.5):
                    opts = [f"set_field:{4096 | self.pick(VIDS)}->vlan_vid"]
                    if "push-vlan-copy" not in self.avoid:
                        opts.append(f"mod_vlan_pcp:{r.randrange(8)}")
                    out.append(self.pick(opts))
                elif not in_set and (vlan == "tagged" or self.tags < 2):
                    out.append(f"mod_vlan_vid:{self.pick(VIDS)}")
                    if vlan != "tagged":
                        self.tags += 1
                    vlan = "tagged"
            elif c < 0.92 and groups:
                out.append(f"group:{self.pick(groups)}")
            elif ip4 and self.chance(0.3) and not self.no_dec:
                out.append("dec_ttl")
        if in_set:
            # One action of each type in an action set (the last of a
            # type kept).
            seen, kept = set(), []
            for a in reversed(out):
                key = re.split(r"[:(]", a, 1)[0]
                if key.startswith("set_field"):
                    key = a.split("->", 1)[1]
                if key in ("in_port", "LOCAL", "controller", "CONTROLLER") or key.startswith("output"):
                    key = "output"
                if key in seen:
                    continue
                seen.add(key)
                kept.append(a)
            out = list(reversed(kept))
        return out, vlan

    def instructions(self, kind, vlan, table, n_tables, groups):
        match_vlan = vlan
        self.tags = 1 if vlan == "tagged" else 0
        acts, vlan = self.actions(kind, vlan, table, n_tables, groups)
        ins = list(acts)
        if self.chance(0.04):
            ins.append("clear_actions")
        if self.chance(0.15) and not (self.exit_ok and "exit-action-set" in self.avoid):
            if "vlan-field-in-set-after-push" in self.avoid and match_vlan != "tagged":
                # sluice checks an action set against the match alone.
                vlan = None
            ws, _ = self.actions(kind, vlan, table, n_tables, groups, in_set=True)
            if ws:
                ins.append(f"write_actions({','.join(ws)})")
        if table + 1 < n_tables and self.chance(0.35):
            ins.append(f"goto_table:{self.r.randint(table + 1, n_tables - 1)}")
        return ",".join(ins) if ins else "drop"

    # ---------------------------------------------------------- a case

    def bucket(self, lower, n_tables):
        """A bucket's actions. Unless the known difference "bucket-order"
        is to be shown, in the order an action set runs them (pop, push,
        dec_ttl, set-fields and moves, then one output, group or
        resubmit), so that running them as a list or as a set is the same."""
        r = self.r
        acts = []
        for _ in range(r.randint(1, 3)):
            c = r.random()
            if c < 0.45:
                acts.append(("final", f"output:{r.randint(1, self.n_ports)}"))
            elif c < 0.6:
                acts.append(("set", f"mod_dl_src:{self.pick(MACS[:4])}"))
            elif c < 0.7:
                acts.append(("set", f"set_field:{self.pick(REGVALS):#x}->reg{r.randrange(8)}"))
            elif c < 0.75:
                acts.append(("set", f"set_field:{self.pick(REGVALS):#x}->pkt_mark"))
            elif c < 0.82:
                acts.append(("push", "push_vlan:0x8100"))
                acts.append(("set", f"set_field:{4096 | self.pick(VIDS)}->vlan_vid"))
            elif c < 0.88 and not self.no_dec:
                acts.append(("dec", "dec_ttl"))
            elif c < 0.94:
                if "group-loop" in self.avoid:
                    acts.append(("final", f"output:{r.randint(1, self.n_ports)}"))
                else:
                    acts.append(("final", f"resubmit(,{r.randrange(n_tables)})"))
            elif lower:
                acts.append(("final", f"group:{self.pick(lower)}"))
            elif "packet-in-reason-miss" not in self.avoid:
                acts.append(("final", "controller"))
            else:
                acts.append(("final", f"output:{r.randint(1, self.n_ports)}"))
        if "bucket-order" in self.avoid:
            order = {"push": 0, "dec": 1, "set": 2}
            finals = [a for k, a in acts if k == "final"]
            acts = [a for _, a in sorted(((order[k], a) for k, a in acts if k != "final"),
                                         key=lambda x: x[0])]
            # Pushes once, dec_ttl once (an action set keeps one of each).
            seen, kept = set(), []
            for a in acts:
                if a in ("push_vlan:0x8100", "dec_ttl"):
                    if a in seen:
                        continue
                    seen.add(a)
                kept.append(a)
            return kept + [finals[-1] if finals else f"output:{r.randint(1, self.n_ports)}"]
        return [a for _, a in acts]

    def group(self, gid, lower, n_tables):
        gtype = self.pick(["all", "all", "select", "indirect"])
        nb = self.r.randint(1, 3) if gtype == "all" else 1
        buckets = ["bucket=" + ",".join(self.bucket(lower, n_tables)) for _ in range(nb)]
        return gid, gtype, f"group_id={gid},type={gtype}," + ",".join(buckets)

    def case(self):
        r = self.r
        # Resubmits back to a table (loops) in half the cases; with
        # "ttl-expiry" avoided, those cases decrement no TTL (a loop of
        # dec_ttl expires it).
        self.backward = self.chance(0.5)
        self.no_dec = self.backward and "ttl-expiry" in self.avoid
        # Open vSwitch's Nicira actions (note, sample, exit, output:FIELD,
        # dec_ttl(ids), push/pop, clone, controller(...), multipath,
        # bundle) in half the cases; exit in half of those.
        self.nicira = self.chance(0.5)
        self.exit_ok = self.nicira and self.chance(0.5)
        n_tables = r.randint(2, 5)
        n_flows = r.randint(5, 40)
        groups = []
        for gid in range(1, r.randint(0, 3) + 1):
            groups.append(self.group(gid, [g[0] for g in groups], n_tables))
        gids = [g[0] for g in groups]
        prios = {t: r.sample(range(2, 2000), 60) for t in range(n_tables)}
        misses = set()
        flows, needs, conj_needs = [], [], []
        # About half the flows in table 0.
        for _ in range(n_flows):
            t = 0 if self.chance(0.45) else r.randrange(n_tables)
            if self.chance(0.05) and t not in misses:
                misses.add(t)
                prio = 0
                parts, need, vlan = [], {}, None
            else:
                prio = prios[t].pop()
                parts, need, vlan = self.match()
            kind = need.get("kind", "any")
            ins = self.instructions(kind, vlan, t, n_tables, gids)
            m = ",".join(parts)
            flows.append(f"table={t},priority={prio}{',' + m if m else ''},actions={ins}")
            needs.append(need)
        # Conjunctive matches: clauses on different fields, one priority.
        for cid in range(1, (r.randint(0, 2) if self.chance(0.4) else 0) + 1):
            t = r.randrange(n_tables)
            prio = prios[t].pop()
            n = r.randint(2, 3)
            kind = self.pick(["tcp", "udp", "ip", "any"])
            dims = r.sample(["in_port", "nw_src", "nw_dst", "tp_dst", "dl_src", "reg"], n)
            need = {} if kind == "any" else {"kind": kind}
            for k, dim in enumerate(dims, 1):
                for _ in range(r.randint(1, 2)):
                    part, key, val = self.clause(dim, kind)
                    m = ",".join(([kind] if kind != "any" else []) + [part])
                    flows.append(f"table={t},priority={prio},{m},actions=conjunction({cid},{k}/{n})")
                    need[key] = val
            ins = self.instructions(kind, None, t, n_tables, gids)
            head = f"table={t},priority={prio},conj_id={cid}" + (f",{kind}" if kind != "any" else "")
            flows.append(f"{head},actions={ins}")
            conj_needs.append(need)
        if "action-set-after-miss" in self.avoid:
            flows += [f"table={t},priority=1,actions=drop" for t in range(1, n_tables)]
        packets = []
        for _ in range(r.randint(5, 10)):
            if conj_needs and self.chance(0.35):
                need = dict(self.pick(conj_needs))
            else:
                need = dict(self.pick(needs)) if needs and self.chance(0.85) else {}
            if need and self.chance(0.25):
                # A near miss: one need dropped.
                need.pop(self.pick(list(need)))
            spec = self.packet(need)
            packets.append((need.get("in_port") or r.randint(1, self.n_ports), spec))
        return {"flows": flows, "groups": [g[2] for g in groups], "packets": packets}

    def clause(self, dim, kind):
        r = self.r
        if dim == "in_port":
            p = r.randint(1, self.n_ports)
            return f"in_port={p}", "in_port", p
        if dim in ("nw_src", "nw_dst"):
            if kind == "any":
                return self.clause("dl_src", kind)
            a = self.pick(IP4)
            return (f"{dim}={a}" if self.chance(0.6) else f"{dim}={ipaddress.IPv4Network(a + '/24', strict=False)}"), dim, a
        if dim == "tp_dst":
            if kind not in ("tcp", "udp"):
                return self.clause("in_port", kind)
            p = self.pick(TPORTS)
            return f"tp_dst={p}", "tp_dst", p
        if dim == "dl_src":
            m = self.pick(MACS[:4])
            return f"dl_src={m}", "dl_src", m
        v = self.pick(REGVALS)
        return f"reg3={v:#x}", "reg", v

    # ---------------------------------------------------------- packets

    def packet(self, need):
        r = self.r
        kind = need.get("kind", "any")
        pk = self.pick(KINDS[kind] + (["tcp", "udp"] if kind == "any" else []))
        if "frag" in need and pk in ("l2", "arp"):
            pk = "tcp"
        spec = {"kind": pk, "dl_src": self.pick(MACS[:4]), "dl_dst": self.pick(MACS),
                "seed": r.randrange(256), "payload": self.pick([0, 4, 12, 40])}
        if need.get("vlan") or (self.chance(0.25) and "vlan" not in need):
            vid = need.get("vlan") or self.pick(VIDS)
            pcp = 0 if "push-vlan-copy" in self.avoid else r.randrange(8)
            spec["vlans"] = [(0x8100, vid, need.get("pcp", pcp))]
            if self.chance(0.1):
                spec["vlans"] = [(self.pick([0x88A8, 0x8100]), self.pick(VIDS), 0)] + spec["vlans"]
                if need.get("vlan"):
                    spec["vlans"] = spec["vlans"][::-1]
        if pk in IP4_KINDS:
            spec["nw_src"], spec["nw_dst"] = r.sample(IP4, 2)
        if pk in IP6_KINDS:
            spec["ipv6_src"], spec["ipv6_dst"] = r.sample(IP6, 2)
            if self.chance(0.1):
                spec["ipv6_label"] = r.randrange(1 << 20)
        if pk in IP4_KINDS | IP6_KINDS:
            spec["ttl"] = self.pick([64, 64, 255] if "ttl-expiry" in self.avoid else [64, 64, 64, 1, 2, 255])
            spec["tos"] = self.pick([0, 0, 0x20, 0x02, 0xB8])
            spec["frag"] = "no" if self.chance(0.85) else self.pick(["first", "later"])
            if pk in ("ip", "ipv6"):
                spec["nw_proto"] = self.pick([47, 89, 59 if pk == "ipv6" else 4])
        if pk in L4_PORTS:
            spec["tp_src"], spec["tp_dst"] = self.pick(TPORTS + [33333]), self.pick(TPORTS)
        if pk in ("tcp", "tcp6"):
            spec["tcp_flags"] = self.pick(TCP_FLAGS)
        if pk == "icmp":
            spec["icmp_type"], spec["icmp_code"] = self.pick([(8, 0), (0, 0), (3, 1)])
        if pk == "icmp6":
            spec["icmp_type"], spec["icmp_code"] = self.pick([(128, 0), (129, 0), (1, 4)])
        if pk == "arp":
            spec["arp_op"] = self.pick([1, 2])
            spec["arp_spa"], spec["arp_tpa"] = r.sample(IP4, 2)
            spec["arp_sha"] = spec["dl_src"]
        if pk == "udp" and self.chance(0.1):
            spec["udp_zero_csum"] = True
        for k, v in need.items():
            if k in ("kind", "in_port", "vlan", "pcp", "reg"):
                continue
            if k == "frag" and pk not in IP4_KINDS | IP6_KINDS:
                continue
            spec[k] = v
        if pk in IP6_KINDS:
            for a, b in (("nw_src", "ipv6_src"), ("nw_dst", "ipv6_dst")):
                spec.pop(a, None)
        if spec.get("frag") == "later" and pk in IP6_KINDS and "ipv6-later-fragment-proto" in self.avoid:
            spec["frag"] = "first"
        if spec.get("frag") == "first" and "first-fragment-l4" in self.avoid:
            for k in ("tp_src", "tp_dst", "icmp_type", "icmp_code"):
                if k in spec:
                    spec[k] = 0
        return spec


# ================================================================ both sides


class Case:
    """Flows, groups and packets [(in_port, frame)] to run through both."""

    def __init__(self, cid, flows, groups, packets, ports=(1, 2, 3, 4), names=None, tables=None,
                 name_map=None):
        self.id = cid
        self.flows = list(flows)
        self.groups = list(groups)
        self.packets = list(packets)
        self.ports = list(ports)
        self.names = names or {}
        self.tables = tables or {}
        self.name_map = name_map
        # Flows and groups one side refused: {text: (sluice's error, OVS's)}.
        self.refused = {}

    def text(self, packets=True):
        """The case as `sluice-ctl offline-trace` reads it; also the lines
        of its flows and groups there."""
        lines = [f"case {self.id}"]
        where = {}
        for x in self.groups + self.flows:
            lines.append(x)
            where[len(lines)] = x
        if packets:
            lines += [f"packet {p} {f.hex()}" for p, f in self.packets]
        return "\n".join(lines) + "\n", where


def ports_spec(ports):
    return ",".join(str(p) for p in sorted(ports))


class Sluice:
    def __init__(self, ctl, workdir):
        self.ctl = ctl
        self.dir = workdir
        self.n = 0

    def run(self, cases, packets=True, steps=False):
        """{case id: {"errors": {text: error}, "packets": [answer]}}; the
        cases of one call share their ports and name map. steps: with each
        packet's trace."""
        self.n += 1
        path = os.path.join(self.dir, f"sluice-{self.n}.txt")
        wheres = {}
        offset = 0
        with open(path, "w") as f:
            for c in cases:
                text, where = c.text(packets)
                f.write(text)
                wheres[c.id] = {offset + n: x for n, x in where.items()}
                offset += text.count("\n")
        args = [self.ctl, "offline-trace", "--ports", ports_spec(cases[0].ports), path]
        if steps:
            args.append("--steps")
        if cases[0].name_map:
            args += ["--name-map", cases[0].name_map]
        p = subprocess.run(args, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise Fail(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
        out = {c.id: {"errors": {}, "packets": []} for c in cases}
        for line in p.stdout.splitlines():
            j = json.loads(line)
            r = out[j["case"]]
            if "error" in j:
                m = re.match(r"line (\d+): (.*)", j["error"])
                text = wheres[j["case"]].get(int(m.group(1)))
                r["errors"][text] = m.group(2)[:-(len(text) + 2)] if text else m.group(2)
            else:
                r["packets"].append(j)
        return out


def ovs_outputs(ovs, dp, in_port, frame):
    """(outputs [(port, frame, reason)] or None, the trace, unmodelled
    action or None). A packet-in for an expired TTL is left out: OVS's
    datapath sends it up, but OVS's default asynchronous configuration
    (ofputil_async_cfg_default) gives it to no controller, as sluice
    without OFPC_INVALID_TTL_TO_CONTROLLER sends none."""
    t = ovs.trace(in_port, frame)
    try:
        outs = apply_actions(frame, datapath_actions(t), dp)
    except Unmodelled as e:
        return None, t, str(e)
    return [o for o in outs if o[2] is None or o[2].split(",")[0] != "invalid_ttl"], t, None


def sluice_outputs(j):
    """sluice's outputs; a packet-in with reason invalid_ttl left out as on
    OVS's side (a controller(reason=invalid_ttl) action makes one too: the
    default asynchronous configuration gives it to no controller, in
    either switch)."""
    return [(o["port"], bytes.fromhex(o["frame"]), with_id(o.get("reason"), o.get("controller_id", 0)))
            for o in j["outputs"] if o.get("reason") != "invalid_ttl"]


def without_padding(f):
    """f without the bytes after its IP packet or ARP message (Ethernet
    padding)."""
    o = layers(f)
    if o["ip"]:
        end = o["l3"] + o["l3_len"]
    elif o["arp"]:
        end = o["l3"] + 28
    else:
        return f
    return f[:end] if end < len(f) else f


def without_trailing_zeros(f):
    """f without its padding: after the IP packet or ARP message, else the
    zero bytes at its end (a frame of another type says not how long its
    payload is)."""
    o = layers(f)
    return without_padding(f) if o["ip"] or o["arp"] else f.rstrip(b"\0")


# Whether to compare frames without their padding (KNOWN "runt-padding").
TRIM_PADDING = True


def same(a, b):
    """Whether two lists of outputs are the same, checksums left out and
    frames shorter than 60 bytes padded with zeros to 60 (as they leave:
    sluice pads a frame a pop made short, OVS leaves that to the device);
    the padding after the IP packet left out too while "runt-padding" is
    avoided."""
    def norm(outs):
        return [(p, (without_trailing_zeros(without_checksums(f)) if TRIM_PADDING else without_checksums(f))
                 .ljust(60, b"\0"), r) for p, f, r in outs]
    return norm(a) == norm(b)


def judge(frame, oo, unm, j, trace=None, dp_to_of=None):
    """("skip", why) when the packet cannot be compared, else ("same", [])
    or ("differ", [what differs]); with OVS's trace and its port map, the
    `Datapath actions:` lines are compared too (dp_problem)."""
    if unm is not None:
        return "skip", unm
    so = sluice_outputs(j)
    if any(p == "NORMAL" for p, _, _ in so):
        return "skip", "NORMAL (sluice's is in its datapath)"
    if any(layers(f)["vlans"] > 2 for _, f, _ in oo + so):
        # OVS's flow has room for 2 tags (FLOW_MAX_VLAN_HEADERS): a third
        # push loses the innermost tag.
        return "skip", "more than 2 VLAN tags"
    problems = []
    if not same(oo, so):
        problems.append("outputs")
    if not checksum_problems(frame):
        bad = [(p, checksum_problems(f)) for p, f, _ in so if checksum_problems(f)]
        if bad:
            problems.append(f"sluice's checksums wrong: {bad}")
    if "check" in j:
        problems.append(f"sluice disagrees with itself: {json.dumps(j['check'])}")
    if trace is not None and dp_to_of is not None:
        p = dp_problem(trace, dp_to_of, j)
        if p:
            problems.append(p)
    return ("differ" if problems else "same"), problems


def most_tags(steps, start):
    """The most VLAN tags the packet had at once, by sluice's trace: its
    pushes and pops in order, a bucket's or a clone's undone after it (both
    work on a copy)."""
    count = most = start
    stack = []
    for line in steps.splitlines():
        st = line.strip()
        ind = len(line) - len(line.lstrip())
        while stack and ind <= stack[-1][0]:
            count = stack.pop()[1]
        if re.match(r"bucket \d+:", st) or st.startswith("clone("):
            stack.append((ind, count))
            continue
        if st.startswith("push_vlan"):
            count += 1
        elif st.startswith("pop_vlan"):
            count = max(0, count - 1)
        most = max(most, count)
    return most


def show_outputs(outs, frame):
    """The outputs as text: port, then the frame when it is not the input."""
    if not outs:
        return "drop"
    parts = []
    for p, f, r in outs:
        s = f"{p}" + (f"(reason={r})" if r else "")
        if f != frame:
            s += f" {f.hex()}"
        parts.append(s)
    return "; ".join(parts)


# What the packets went through, by OVS's trace (counted per packet).
EXERCISED = [
    ("a flow matched", r"^ *\d+\. .*priority \d+"),
    ("a table missed", r"No match"),
    ("conjunction", r"conj_id="),
    ("resubmit", r"^ *resubmit\("),
    ("goto_table", r"^ *goto_table:"),
    ("group", r"^ *group:"),
    ("action set run", r"Executing action set"),
    ("push_vlan", r"^ *push_vlan"),
    ("pop_vlan", r"^ *pop_vlan"),
    ("set_field/load/move", r"^ *(set_field|load|move):"),
    ("in_port written", r"NXM_OF_IN_PORT\[\]( is now|$)"),
    ("dec_ttl", r"^ *dec_ttl"),
    ("controller", r"^ *(CONTROLLER|controller)"),
    ("register match", r"^ *\d+\. .*\b(x?reg\d+|pkt_mark)="),
    ("ip_frag match", r"^ *\d+\. .*nw_frag="),
    ("tcp_flags match", r"^ *\d+\. .*tcp_flags="),
    ("skipping output to input port", r"skipping output to input port"),
    ("resubmit limit", r"over max translation depth|Recursion too deep"),
    ("clone", r"^ *clone\("),
    ("exit", r"^ *exit$"),
    ("push/pop", r"^ *(push|pop):"),
    ("stack underflow", r"stack underflow"),
    ("output:FIELD", r"^ *output:NXM_"),
    ("multipath", r"^ *multipath\("),
    ("bundle", r"^ *bundle(_load)?\("),
    ("note/sample", r"^ *(note|sample)"),
]


class Runner:
    """Runs cases through both sides and collects what differs."""

    def __init__(self, ovs, sluice, workdir):
        self.ovs = ovs
        self.sluice = sluice
        self.dir = workdir
        self.dp = None
        self.bridge_key = None
        self.stats = collections.Counter()
        self.diffs = []
        self.refusals = []
        self.unmodelled = []
        self.exercised = collections.Counter()

    def bridge_for(self, case):
        setup = getattr(case, "setup", None)
        key = (tuple(case.ports), tuple(sorted(case.names.items())), tuple(sorted(case.tables.items())),
               setup)
        if key != self.bridge_key:
            self.dp = self.ovs.bridge(case.ports, case.names, case.tables)
            self.bridge_key = key
            if setup and os.path.exists(setup):
                with open(setup) as f:
                    for line in f:
                        w = line.split("#", 1)[0].split()
                        if w:
                            self.ovs.ofctl(w[0], BRIDGE, *w[1:])

    def settle(self, cases):
        """Leaves in each case only the flows and groups both sides take;
        the others go to case.refused (both refusing: the generator's
        doing, only counted)."""
        first = self.sluice.run(cases, packets=False)
        for c in cases:
            errs = first[c.id]["errors"]
            if errs:
                c.flows = [f for f in c.flows if f not in errs]
                c.groups = [g for g in c.groups if g not in errs]
                for x, e in errs.items():
                    c.refused[x] = (e, None)
            self.bridge_for(c)
            path = os.path.join(self.dir, "ovs-flows.txt")
            if self.ovs.load(c.flows, c.groups, path) is not None:
                bad = self.ovs.refused(c.flows, c.groups)
                c.flows = [f for f in c.flows if f not in bad]
                c.groups = [g for g in c.groups if g not in bad]
                for x, e in bad.items():
                    c.refused[x] = (None, e)
                err = self.ovs.load(c.flows, c.groups, path)
                if err is not None:
                    raise Fail(f"case {c.id}: OVS refuses the flows it took one by one: {err}")
            # What OVS says of the flows sluice refused.
            sl_only = [x for x, (se, oe) in c.refused.items() if se is not None]
            if sl_only:
                bad = self.ovs.refused([x for x in sl_only if not x.startswith("group_id=")],
                                       [x for x in sl_only if x.startswith("group_id=")])
                for x in sl_only:
                    c.refused[x] = (c.refused[x][0], bad.get(x))
                self.ovs.load(c.flows, c.groups, path)
            for x, (se, oe) in c.refused.items():
                if se is not None and oe is not None:
                    self.stats["refused by both"] += 1
                elif se is not None and getattr(c, "subset", False):
                    # A real table: sluice takes a subset (the corpus
                    # report, scripts/corpus.py, counts what it refuses).
                    self.stats["left out (sluice refuses)"] += 1
                else:
                    self.stats["refused by one"] += 1
                    self.refusals.append((c, x, se, oe))
            yield c

    def run(self, cases):
        """Runs the cases; differences go to self.diffs."""
        ovs_side, dps = {}, {}
        for c in self.settle(cases):
            answers = []
            for in_port, frame in c.packets:
                answers.append(ovs_outputs(self.ovs, self.dp, in_port, frame))
            ovs_side[c.id] = answers
            dps[c.id] = dict(self.dp)
        sl = self.sluice.run(cases)
        for c in cases:
            self.stats["cases"] += 1
            self.stats["flows"] += len(c.flows)
            self.stats["groups"] += len(c.groups)
            for k, ((in_port, frame), (oo, trace, unm), j) in enumerate(
                    zip(c.packets, ovs_side[c.id], sl[c.id]["packets"])):
                self.stats["packets"] += 1
                so = sluice_outputs(j)
                self.stats["outputs"] += len(so)
                self.stats["packets with an output"] += bool(so)
                for what, pattern in EXERCISED:
                    if re.search(pattern, trace, re.M):
                        self.exercised[what] += 1
                verdict, problems = judge(frame, oo, unm, j, trace, dps[c.id])
                if verdict == "skip":
                    self.stats["unmodelled"] += 1
                    self.unmodelled.append((c, k, problems))
                    continue
                if problems and self.third_tag(c, k):
                    self.stats["unmodelled"] += 1
                    self.unmodelled.append((c, k, "a third VLAN tag on the way"))
                    continue
                if problems:
                    self.stats["differences"] += 1
                    self.diffs.append({"case": c, "packet": k, "in_port": in_port, "frame": frame,
                                       "ovs": oo, "sluice": so, "trace": trace, "problems": problems})
                else:
                    self.stats["agree"] += 1

    def third_tag(self, c, k):
        """Whether packet k of case c had more than 2 VLAN tags at some
        point in sluice's pipeline: OVS's flow holds 2 (a third push loses
        the innermost), so their answers cannot be compared."""
        one = Case(c.id, c.flows, c.groups, [c.packets[k]], c.ports, c.names, c.tables, c.name_map)
        j = self.sluice.run([one], steps=True)[c.id]["packets"][0]
        return most_tags(j.get("steps", ""), layers(c.packets[k][1])["vlans"]) > 2

    # ------------------------------------------------------------ minimising

    def still_differs(self, case, in_port, frame, flows, groups):
        c = Case(case.id + "-min", flows, groups, [(in_port, frame)], case.ports, case.names,
                 case.tables, case.name_map)
        self.bridge_for(c)
        if self.ovs.load(flows, groups, os.path.join(self.dir, "ovs-flows.txt")) is not None:
            return None
        oo, trace, unm = ovs_outputs(self.ovs, self.dp, in_port, frame)
        r = self.sluice.run([c])[c.id]
        if r["errors"] or not r["packets"]:
            return None
        j = r["packets"][0]
        verdict, _ = judge(frame, oo, unm, j, trace, self.dp)
        return (oo, sluice_outputs(j), trace, j) if verdict == "differ" else None

    def minimise(self, d):
        """The difference with as few flows and groups as still show it
        (one pass dropping each in turn, then again while it shrinks)."""
        c, in_port, frame = d["case"], d["in_port"], d["frame"]
        flows, groups = list(c.flows), list(c.groups)
        got = self.still_differs(c, in_port, frame, flows, groups)
        if got is None:
            return None
        want = (got[0], got[1])
        changed = True
        while changed:
            changed = False
            for i in reversed(range(len(flows))):
                trial = flows[:i] + flows[i + 1:]
                g = self.still_differs(c, in_port, frame, trial, groups)
                # The same difference: both answers as they were.
                if g is not None and (g[0], g[1]) == want:
                    flows, got, changed = trial, g, True
            for i in reversed(range(len(groups))):
                trial = groups[:i] + groups[i + 1:]
                g = self.still_differs(c, in_port, frame, flows, trial)
                if g is not None and (g[0], g[1]) == want:
                    groups, got, changed = trial, g, True
        oo, so, trace, j = got
        return {"flows": flows, "groups": groups, "ovs": oo, "sluice": so, "trace": trace,
                "steps": None}


def describe_diff(d, m=None):
    """A difference as text: the flows, the packet, both answers."""
    c = d["case"]
    flows, groups = (m["flows"], m["groups"]) if m else (c.flows, c.groups)
    oo, so, trace = (m["ovs"], m["sluice"], m["trace"]) if m else (d["ovs"], d["sluice"], d["trace"])
    frame = d["frame"]
    out = [f"case {c.id}, packet {d['packet']}: {', '.join(d['problems'])}"
           + (" (minimised)" if m else "")]
    out += ["  " + g for g in groups] + ["  " + f for f in flows]
    out.append(f"  packet: in_port={d['in_port']} {frame.hex()}")
    out.append(f"  OVS:    {show_outputs(oo, frame)}")
    out.append(f"  sluice: {show_outputs(so, frame)}")
    dp = [line for line in trace.splitlines() if line.startswith("Datapath actions:")]
    out += ["  OVS " + line for line in dp]
    return "\n".join(out)


# ================================================================ main


def sluice_ctl_path(given):
    if given:
        cands = [given]
    else:
        target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
        cands = [os.path.join(target, "release", "sluice-ctl"), os.path.join(target, "debug", "sluice-ctl")]
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    raise Fail(f"sluice-ctl not found ({', '.join(cands)}): cargo build --release -p ctl")


def random_cases(n, seed, avoid):
    g = Gen(seed, avoid=avoid)
    out = []
    for i in range(n):
        c = g.case()
        packets = [(p, build(spec)) for p, spec in c["packets"]]
        out.append(Case(f"s{seed}-{i}", c["flows"], c["groups"], packets))
    return out


def report(runner, args, started):
    st = runner.stats
    print(f"ovs_diff: {st['cases']} cases, {st['flows']} flows, {st['groups']} groups, "
          f"{st['packets']} packets ({st['packets with an output']} sent somewhere), "
          f"{st['outputs']} outputs (sluice); "
          f"{st['agree']} packets agree, {st['differences']} differ, "
          f"{st['unmodelled']} not compared (an OVS action not modelled, more than 2 tags); "
          f"flows or groups refused by both: {st['refused by both']}, by one side only: "
          f"{st['refused by one']}"
          + (f"; corpus flows sluice refuses, left out: {st['left out (sluice refuses)']}"
             if st["left out (sluice refuses)"] else "")
          + f" ({time.time() - started:.1f} s)")
    print("exercised (packets whose OVS trace shows it): "
          + ", ".join(f"{w} {runner.exercised[w]}" for w, _ in EXERCISED))
    if runner.refusals:
        print(f"\n== refused by one side only ({len(runner.refusals)}; first {args.show}):")
        for c, x, se, oe in runner.refusals[:args.show]:
            who = "sluice refuses, OVS accepts" if se else "OVS refuses, sluice accepts"
            print(f"case {c.id}: {who}: {x}\n  {se or oe}")
    if runner.unmodelled:
        print(f"\n== not compared ({len(runner.unmodelled)}; first {args.show}):")
        for c, k, what in runner.unmodelled[:args.show]:
            print(f"case {c.id}, packet {k}: {what}")
    if runner.diffs:
        print(f"\n== differences ({len(runner.diffs)}; the first {args.show}"
              f"{', minimised' if args.minimise else ''}):")
        for d in runner.diffs[:args.show]:
            m = runner.minimise(d) if args.minimise else None
            print(describe_diff(d, m))
            print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=0, help="random cases to run")
    ap.add_argument("--seed", type=int, default=1, help="the random cases' seed")
    ap.add_argument("--corpus", default="", help="corpus systems to run (comma-separated, or all)")
    ap.add_argument("--corpus-packets", type=int, default=200, help="packets per corpus table")
    ap.add_argument("--quick", action="store_true", help="what `make test` runs: 300 random cases "
                    "(seed 1) and every corpus table (200 packets each)")
    ap.add_argument("--sluice-ctl", help="sluice-ctl to use (default: CARGO_TARGET_DIR's release build)")
    ap.add_argument("--show", type=int, default=5, help="differences shown (and minimised)")
    ap.add_argument("--no-minimise", dest="minimise", action="store_false",
                    help="show differences as found, not minimised")
    ap.add_argument("--show-known", default="", metavar="NAMES",
                    help="generate cases that show these known differences (comma-separated "
                    "names from KNOWN, or all); by default the generator avoids them")
    ap.add_argument("--replay", metavar="FILE",
                    help="run the cases of FILE (offline-trace's format) and print both traces")
    ap.add_argument("--keep", help="a directory to keep the case files, sluice's answers and OVS's logs in")
    args = ap.parse_args()
    if args.quick:
        args.cases = args.cases or 300
        args.corpus = args.corpus or "all"
    if not args.cases and not args.corpus and not args.replay:
        ap.error("nothing to run: give --cases N, --corpus SYSTEMS or --quick")
    avoid = set(KNOWN) - set(args.show_known.split(",")) if args.show_known != "all" else set()
    global TRIM_PADDING
    TRIM_PADDING = "runt-padding" in avoid
    started = time.time()
    # A SIGTERM (a timeout) stops OVS too: the finally below runs.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(2))
    try:
        ctl = sluice_ctl_path(args.sluice_ctl)
        workdir = args.keep or tempfile.mkdtemp(prefix="sluice-ovsdiff-work-")
        os.makedirs(workdir, exist_ok=True)
        ovs = Ovs(keep_logs=args.keep)
        try:
            ovs.start()
            runner = Runner(ovs, Sluice(ctl, workdir), workdir)
            if args.replay:
                # Everything as it is: no known difference normalised away.
                TRIM_PADDING = False
                return replay(runner, args.replay)
            if args.cases:
                runner.run(random_cases(args.cases, args.seed, avoid))
            if args.corpus:
                for cases in corpus_cases(args.corpus, args.seed, args.corpus_packets):
                    runner.run(cases)
            report(runner, args, started)
        finally:
            ovs.stop()
            if not args.keep:
                shutil.rmtree(workdir, ignore_errors=True)
    except (Fail, subprocess.TimeoutExpired, OSError) as e:
        print(f"ovs_diff: cannot run: {e}", file=sys.stderr)
        return 2
    return 1 if runner.diffs or runner.refusals else 0


# ================================================================ corpus tables

# Flows left out of the corpus mode: connection tracking, learning, meters,
# hashing, NORMAL (sluice's MAC learning is the datapath's, outside the
# pipeline) and other actions whose result depends on state or on things a
# trace does not show. Conjunctions too: a table's clauses and conj_id
# flows would be kept or left out apart.
CORPUS_SKIP = re.compile(
    r"(?<![A-Za-z0-9_])(ct\(|ct_state|ct_mark|ct_label|ct_zone|ct_nw_|ct_ipv6_|ct_tp_|ct_clear|nat\(|"
    r"learn\(|meter:|sample\(|bundle\(|bundle_load\(|multipath\(|check_pkt_larger|encap\(|decap\(|"
    r"fin_timeout|exit\b|conj_id|conjunction\(|\bNORMAL\b|\bnormal\b)")
# Protocol shorthands: (dl_type, nw_proto).
SHORT = {"ip": (0x0800, None), "ipv6": (0x86DD, None), "tcp": (0x0800, 6), "tcp6": (0x86DD, 6),
         "udp": (0x0800, 17), "udp6": (0x86DD, 17), "sctp": (0x0800, 132), "sctp6": (0x86DD, 132),
         "icmp": (0x0800, 1), "icmp6": (0x86DD, 58), "arp": (0x0806, None), "rarp": (0x8035, None),
         "mpls": (0x8847, None), "mplsm": (0x8848, None)}
# Field aliases to one name.
ALIAS = {"eth_src": "dl_src", "eth_dst": "dl_dst", "eth_type": "dl_type", "ip_src": "nw_src",
         "ip_dst": "nw_dst", "ip_proto": "nw_proto", "tcp_src": "tp_src", "tcp_dst": "tp_dst",
         "udp_src": "tp_src", "udp_dst": "tp_dst", "sctp_src": "tp_src", "sctp_dst": "tp_dst",
         "icmpv6_type": "icmp_type", "icmpv6_code": "icmp_code", "icmpv4_type": "icmp_type",
         "icmpv4_code": "icmp_code", "nw_ttl": "nw_ttl", "ipv6_src": "ipv6_src", "vlan_vid": "vlan_vid",
         "dl_vlan_pcp": "vlan_pcp", "nw_tos": "nw_tos", "ip_dscp": "ip_dscp", "nw_ecn": "ip_ecn",
         "tun_id": "tunnel_id", "in_port": "in_port"}
NOT_MATCH = {"table", "priority", "cookie", "idle_timeout", "hard_timeout", "out_port", "out_group",
             "send_flow_rem", "check_overlap", "reset_counts", "no_packet_counts", "no_byte_counts",
             "importance", "buffer_id", "flags"}


def split_flow(text):
    """(head tokens, actions text) of a flow in ovs-ofctl's syntax (commas
    or spaces between fields)."""
    m = re.search(r"(^|[\s,])actions\s*=", text)
    head, acts = (text[:m.start()], text[m.end():]) if m else (text, "")
    return [t for t in re.split(r"[\s,]+", head.strip()) if t], acts.strip()


def field_value(name, text):
    """(value, mask) of a match field as integers, or None when the form
    is not understood (compared as text then)."""
    try:
        if text.startswith("+") or text.startswith("-"):
            return None
        if name in ("dl_src", "dl_dst", "arp_sha", "arp_tha"):
            return parse_value("mac", text)
        if name in ("nw_src", "nw_dst", "arp_spa", "arp_tpa"):
            return parse_value("ip4", text)
        if name in ("ipv6_src", "ipv6_dst", "nd_target"):
            return parse_value("ip6", text)
        return parse_value("int", text)
    except ValueError:
        return None


def flow_match(text, names=None):
    """{field: (value, mask)} of a flow's match, shorthands expanded;
    values that are not numbers kept as text (value, None)."""
    names = names or {}
    toks, _ = split_flow(text)
    out = {}
    for t in toks:
        k, eq, v = t.partition("=")
        if not eq:
            if k in SHORT:
                dt, proto = SHORT[k]
                out["dl_type"] = (dt, None)
                if proto is not None:
                    out["nw_proto"] = (proto, None)
            continue
        k = ALIAS.get(k, k)
        if k in NOT_MATCH:
            continue
        v = v.strip('"')
        if k == "in_port" and v in names:
            v = str(names[v])
        if k == "dl_vlan":
            k, v = "vlan_tci", f"{0x1000 | int(v, 0):#x}/0x1fff"
        fv = field_value(k, v)
        out[k] = fv if fv is not None else (v, None)
    return out


def may_overlap(a, b):
    """Whether some packet could match both matches (same priority: the
    answer would be the implementation's choice)."""
    for k in set(a) & set(b):
        (va, ma), (vb, mb) = a[k], b[k]
        if isinstance(va, str) or isinstance(vb, str):
            # Text (a name, a form not understood): apart only when both
            # are plain text and differ.
            if isinstance(va, str) and isinstance(vb, str) and va != vb:
                return False
            continue
        full = (1 << 128) - 1
        m = (full if ma is None else ma) & (full if mb is None else mb)
        if va & m != vb & m:
            return False
    return True


def packet_for(match, ports, r):
    """(in_port, spec) of a packet that meets `match` where it can."""
    g = lambda k: match.get(k, (None, None))[0]
    dt, proto = g("dl_type"), g("nw_proto")
    kind = {0x0806: "arp"}.get(dt)
    if dt == 0x0800:
        kind = {6: "tcp", 17: "udp", 1: "icmp", 132: "sctp"}.get(proto, "ip")
    elif dt == 0x86DD:
        kind = {6: "tcp6", 17: "udp6", 58: "icmp6"}.get(proto, "ipv6")
    elif dt is not None and kind is None:
        kind = "l2"
    if kind is None:
        kind = r.choice(["tcp", "udp", "arp", "icmp", "tcp6", "l2"])
    spec = {"kind": kind, "dl_src": r.choice(MACS[:4]), "dl_dst": r.choice(MACS[:4]), "seed": r.randrange(256),
            "payload": 12}
    if kind == "l2" and isinstance(dt, int):
        spec["dl_type"] = dt
    if kind in IP4_KINDS:
        spec["nw_src"], spec["nw_dst"] = r.sample(IP4, 2)
    if kind in IP6_KINDS:
        spec["ipv6_src"], spec["ipv6_dst"] = r.sample(IP6, 2)
    if kind == "ip" and isinstance(proto, int):
        spec["nw_proto"] = proto
    if kind == "ipv6" and isinstance(proto, int):
        spec["nw_proto"] = proto
    if kind in ("tcp", "tcp6"):
        spec["tcp_flags"] = 0x002

    def val(k, kindof):
        v, m = match[k]
        if not isinstance(v, int):
            return None
        if m is not None:
            # The bits the mask leaves free: random.
            bits = 48 if kindof == "mac" else 32 if kindof == "ip4" else 128 if kindof == "ip6" else 16
            v = (v & m) | (r.getrandbits(bits) & ~m & ((1 << bits) - 1))
        return v

    for k in match:
        if k in ("dl_src", "dl_dst", "arp_sha", "arp_tha"):
            v = val(k, "mac")
            if v is not None:
                spec[k] = ":".join(f"{b:02x}" for b in v.to_bytes(6, "big"))
        elif k in ("nw_src", "nw_dst") and kind in IP4_KINDS or k in ("arp_spa", "arp_tpa") and kind == "arp":
            v = val(k, "ip4")
            if v is not None:
                spec[k] = str(ipaddress.IPv4Address(v))
        elif k in ("ipv6_src", "ipv6_dst") and kind in IP6_KINDS:
            v = val(k, "ip6")
            if v is not None:
                spec[k] = str(ipaddress.IPv6Address(v))
        elif k in ("tp_src", "tp_dst", "icmp_type", "icmp_code", "arp_op") and isinstance(match[k][0], int):
            spec[k] = val(k, "int") & (0xFFFF if k.startswith("tp") else 0xFF)
        elif k == "nw_ttl" and isinstance(match[k][0], int):
            spec["ttl"] = match[k][0]
        elif k == "ip_dscp" and isinstance(match[k][0], int):
            spec["tos"] = match[k][0] << 2
        elif k == "nw_tos" and isinstance(match[k][0], int):
            spec["tos"] = match[k][0] & 0xFC
        elif k == "vlan_tci":
            v, m = match[k]
            if isinstance(v, int) and v & 0x1000:
                spec["vlans"] = [(0x8100, v & 0xFFF, (v >> 13) & 7)]
        elif k == "vlan_vid":
            v, m = match[k]
            if isinstance(v, int) and v & 0x1000:
                spec["vlans"] = [(0x8100, v & 0xFFF, 0)]
        elif k == "ip_frag" and kind in IP4_KINDS | IP6_KINDS:
            fr = match[k][0]
            spec["frag"] = {"no": "no", "yes": "first", "first": "first", "later": "later",
                            "not_later": "no"}.get(fr, "no")
    if spec.get("frag") == "later" and kind in IP6_KINDS:
        spec["frag"] = "first"
    if spec.get("frag") == "first":
        for k in ("tp_src", "tp_dst", "icmp_type", "icmp_code"):
            spec[k] = 0
    port = match.get("in_port", (None, None))[0]
    if not isinstance(port, int) or port not in ports:
        port = r.choice(ports)
    return port, spec


def read_names(system):
    """({port number: name}, {table number: name}) of <system>.names."""
    ports, tables = {}, {}
    path = os.path.join(CORPUS, system + ".names")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                w = line.split("#", 1)[0].split()
                if len(w) == 3:
                    (ports if w[0] == "port" else tables)[int(w[2])] = w[1]
    return ports, tables


def stored_ok(system):
    """The line numbers of <system>.flows that OVS took under OpenFlow 1.3
    (its stored verdicts, tests/corpus/<system>.ovs)."""
    ok = set()
    with open(os.path.join(CORPUS, system + ".ovs")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            n, _, verdict, _ = line.rstrip("\n").split("\t", 3)
            if verdict == "ok":
                ok.add(int(n))
    return ok


def corpus_case(system, seed, n_packets):
    """The system's table as one case: its flows OVS took (stored
    verdicts) without connection tracking and the like (CORPUS_SKIP), a
    later flow left out when it could match the same packets as an earlier
    one of its table and priority (either would be a right answer), the
    empty groups its flows name, and packets aimed at its flows."""
    r = random.Random(f"{system}-{seed}")
    port_names, table_names = read_names(system)
    by_name = {v: k for k, v in port_names.items()}
    table_no = {v: k for k, v in table_names.items()}
    ok = stored_ok(system)
    flows = []
    with open(os.path.join(CORPUS, system + ".flows")) as f:
        for n, line in enumerate(f, 1):
            t = line.strip()
            if t and not t.startswith("#") and n in ok and not CORPUS_SKIP.search(t):
                flows.append(t)
    kept, seen = [], []
    for t in flows:
        toks, _ = split_flow(t)
        kv = dict(x.partition("=")[::2] for x in toks if "=" in x)
        table = kv.get("table", "0")
        key = (table_no.get(table, table), kv.get("priority", "32768"))
        m = flow_match(t, by_name)
        if any(k == key and mm != m and may_overlap(mm, m) for k, mm in seen):
            continue
        seen.append((key, m))
        kept.append(t)
    # The ports: those named, and those the flows name by number.
    ports = set(port_names)
    for t in kept:
        for x in re.findall(r"\bin_port=(\d+)|\boutput:(\d+)|resubmit\((\d+),", t):
            for y in x:
                if y and 0 < int(y) < 0xFF00:
                    ports.add(int(y))
        _, acts = split_flow(t)
        for a in split_top(acts):
            if a.isdigit() and 0 < int(a) < 0xFF00:
                ports.add(int(a))
    if not ports:
        ports = {1, 2, 3, 4}
    ports = sorted(ports)[:64]
    groups = sorted({int(g) for t in kept for g in re.findall(r"\bgroup:(\d+)", t)})
    matches = [flow_match(t, by_name) for t in kept]
    packets = []
    for _ in range(n_packets):
        port, spec = packet_for(r.choice(matches) if matches else {}, ports, r)
        packets.append((port, build(spec)))
    name_map = os.path.join(CORPUS, system + ".names")
    case = Case(f"corpus-{system}", kept, [f"group_id={g},type=all" for g in groups], packets, ports,
                {no: nm for no, nm in port_names.items() if no in ports}, table_names,
                name_map if os.path.exists(name_map) else None)
    case.setup = os.path.join(CORPUS, system + ".ovs-setup")
    case.subset = True
    return case


def corpus_cases(which, seed, n_packets):
    """One list of one case per system (each has its own ports)."""
    systems = sorted(f[:-6] for f in os.listdir(CORPUS) if f.endswith(".flows"))
    chosen = systems if which == "all" else which.split(",")
    for s in chosen:
        if s not in systems:
            raise Fail(f"no corpus system {s} (there are: {', '.join(systems)})")
        yield [corpus_case(s, seed, n_packets)]


def read_case_file(path):
    """Cases from a file in offline-trace's format (`case NAME`,
    `group_id=...`, `packet IN_PORT HEX`, flows)."""
    cases = []
    cur = None
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            if s.startswith("case "):
                cur = Case(s[5:].strip(), [], [], [])
                cases.append(cur)
                continue
            if cur is None:
                cur = Case("-", [], [], [])
                cases.append(cur)
            if s.startswith("packet "):
                _, port, hexf = s.split(None, 2)
                cur.packets.append((int(port), bytes.fromhex(re.sub(r"[\s:.-]", "", hexf))))
            elif s.startswith("group_id="):
                cur.groups.append(s)
            else:
                cur.flows.append(s)
    return cases


def replay(runner, path):
    """Each case of the file through both sides, everything printed: OVS's
    whole trace and sluice's steps."""
    rc = 0
    for c in read_case_file(path):
        runner.bridge_for(c)
        refused = False
        err = runner.ovs.load(c.flows, c.groups, os.path.join(runner.dir, "ovs-flows.txt"))
        if err:
            for x, why in runner.ovs.refused(c.flows, c.groups).items():
                print(f"== case {c.id}: OVS refuses: {why}: {x}")
            refused = True
            rc = 1
        args = [runner.sluice.ctl, "offline-trace", "--steps", "--ports", ports_spec(c.ports)]
        text, _ = c.text()
        p = subprocess.run(args + ["-"], input=text, capture_output=True, text=True, timeout=60)
        answers = [json.loads(x) for x in p.stdout.splitlines()]
        for j in answers:
            if "error" in j:
                print(f"== case {c.id}: sluice refuses: {j['error']}")
                refused = True
                rc = 1
        answers = [j for j in answers if "error" not in j]
        for k, ((in_port, frame), j) in enumerate(zip(c.packets, answers)):
            oo, trace, unm = ovs_outputs(runner.ovs, runner.dp, in_port, frame)
            so = sluice_outputs(j)
            v, why = judge(frame, oo, unm, j, trace, runner.dp)
            verdict = ("not compared: a flow or group refused" if refused else
                       f"not compared: {why}" if v == "skip" else
                       "same" if v == "same" else "DIFFERENT: " + ", ".join(why))
            if verdict != "same":
                rc = 1
            print(f"== case {c.id}, packet {k} (in_port={in_port} {frame.hex()}): {verdict}")
            print(f"OVS:    {show_outputs(oo, frame) if oo is not None else '?'}")
            print(f"sluice: {show_outputs(so, frame)}")
            print("-- OVS's trace:\n" + trace.rstrip())
            print("-- sluice's trace:\n" + j.get("steps", "").rstrip())
            print()
    return rc


if __name__ == "__main__":
    sys.exit(main())
