#!/usr/bin/env python3
"""Sequence-numbered raw Ethernet traffic for the fault and soak tests.

  seqtraffic.py send IFACE --src MAC --dst MAC[,MAC...] --rate FPS --secs S [--tag N]
      sends frames of EtherType 0x88b5 round-robin to the destinations;
      each carries a magic, the sender's tag, the destination's index, a
      sequence number per destination and the send time (CLOCK_MONOTONIC,
      shared by every namespace of the machine). Prints a JSON summary.

  seqtraffic.py recv IFACE --me MAC --secs S [--late-ms L]
      receives such frames for S seconds and prints a JSON summary:
      frames received per stream ("TAG/DESTINATION-INDEX"), frames that
      were addressed to another MAC (misdelivered), sequence numbers seen
      twice (duplicates) or arriving after a higher one of the same
      stream (reordered), numbers never seen below the highest (lost),
      the largest delay, and frames that arrived more than L ms after
      they were sent (late, with their sequence numbers).

Python's raw sockets, no tcpdump; used by tests/e2e and
scripts/soak.sh.
"""
import argparse
import json
import select
import socket
import struct
import sys
import time

ETHERTYPE = 0x88B5
MAGIC = b"SEQT"
# magic, tag, destination index, sequence number, send time (ns)
PAYLOAD = struct.Struct(">4sHHQQ")


def mac_bytes(s):
    b = bytes.fromhex(s.replace(":", ""))
    if len(b) != 6:
        raise SystemExit(f"seqtraffic: {s!r} is not a MAC address")
    return b


def send(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
    s.bind((a.iface, 0))
    src = mac_bytes(a.src)
    dsts = [mac_bytes(d) for d in a.dst.split(",")]
    seqs = [0] * len(dsts)
    sent = errors = 0
    start = time.monotonic()
    end = start + a.secs
    pad = bytes(max(0, 46 - PAYLOAD.size))
    i = 0
    while True:
        now = time.monotonic()
        if now >= end:
            break
        # Frames due by now at the rate, in bursts of at most 64.
        due = int((now - start) * a.rate) - sent - errors
        if due <= 0:
            time.sleep(min(0.001, end - now))
            continue
        for _ in range(min(due, 64)):
            k = i % len(dsts)
            i += 1
            frame = (dsts[k] + src + struct.pack(">H", ETHERTYPE)
                     + PAYLOAD.pack(MAGIC, a.tag, k, seqs[k], time.monotonic_ns()) + pad)
            seqs[k] += 1
            try:
                s.send(frame)
                sent += 1
            except OSError:
                # The sender's own link down: not the switch's doing.
                errors += 1
    print(json.dumps({"sent": sent, "send_errors": errors, "per_destination": seqs}))
    return 0


def recv(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
    s.bind((a.iface, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    me = mac_bytes(a.me)
    late_ns = int(a.late_ms * 1e6)
    streams = {}  # (tag, dst index) -> [count, last seq, dup, reordered, gaps]
    misdelivered = 0
    late = []
    max_delay = 0
    total = 0
    end = time.monotonic() + a.secs
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([s], [], [], left)
        if not r:
            continue
        while True:
            try:
                frame = s.recv(2048, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            except OSError:
                # Our own link went down (ENETDOWN, reported once): go on.
                break
            now = time.monotonic_ns()
            if len(frame) < 14 + PAYLOAD.size or frame[12:14] != b"\x88\xb5":
                continue
            magic, tag, k, seq, t = PAYLOAD.unpack_from(frame, 14)
            if magic != MAGIC:
                continue
            total += 1
            if frame[0:6] != me:
                misdelivered += 1
                continue
            delay = now - t
            max_delay = max(max_delay, delay)
            if delay > late_ns:
                late.append({"tag": tag, "seq": seq, "delay_ms": round(delay / 1e6, 1)})
            st = streams.setdefault(f"{tag}/{k}", {"count": 0, "last": -1, "seen": bytearray(),
                                                   "unique": 0, "duplicates": 0, "reordered": 0})
            st["count"] += 1
            seen = st["seen"]
            byte, bit = seq >> 3, 1 << (seq & 7)
            if byte >= len(seen):
                seen.extend(bytes(byte + 1 - len(seen) + 4096))
            if seen[byte] & bit:
                st["duplicates"] += 1
            else:
                seen[byte] |= bit
                st["unique"] += 1
                if seq < st["last"]:
                    st["reordered"] += 1
            st["last"] = max(st["last"], seq)
    out = {"received": total, "misdelivered": misdelivered,
           "max_delay_ms": round(max_delay / 1e6, 2), "late": late[:20], "late_count": len(late),
           "streams": {}}
    for key, st in streams.items():
        span = st["last"] + 1
        out["streams"][key] = {"count": st["count"], "duplicates": st["duplicates"],
                               "reordered": st["reordered"], "lost": span - st["unique"]}
    out["duplicates"] = sum(v["duplicates"] for v in out["streams"].values())
    out["reordered"] = sum(v["reordered"] for v in out["streams"].values())
    print(json.dumps(out))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    ps = sub.add_parser("send")
    ps.add_argument("iface")
    ps.add_argument("--src", required=True)
    ps.add_argument("--dst", required=True)
    ps.add_argument("--rate", type=float, default=1000)
    ps.add_argument("--secs", type=float, default=1)
    ps.add_argument("--tag", type=int, default=0)
    pr = sub.add_parser("recv")
    pr.add_argument("iface")
    pr.add_argument("--me", required=True)
    pr.add_argument("--secs", type=float, default=1)
    pr.add_argument("--late-ms", type=float, default=100)
    a = p.parse_args()
    return send(a) if a.mode == "send" else recv(a)


if __name__ == "__main__":
    sys.exit(main())
