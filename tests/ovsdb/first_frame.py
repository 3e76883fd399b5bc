#!/usr/bin/env python3
"""How soon frames reach a port added through the database.

  first_frame.py send IFACE SECS     broadcasts a marked frame every 5 ms
                                     for at most SECS (until killed);
                                     prints when it sent the first
  first_frame.py first IFACE SECS    waits at most SECS for the first
                                     marked frame; prints its arrival
                                     time (seconds since the epoch, the
                                     clock of bash's EPOCHREALTIME) and
                                     exits 0, or exits 1 if none came

Raw sockets (root, in the hosts' namespaces); used by tests/e2e/test_ovsdb.py.
"""
import select
import socket
import sys
import time

ETHERTYPE = 0x88B6
MAGIC = b"OVSDB-FIRST-FRAME"


def main():
    mode, iface, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETHERTYPE))
    s.bind((iface, 0))
    deadline = time.monotonic() + secs
    if mode == "send":
        frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x4f\x01" + ETHERTYPE.to_bytes(2, "big") + MAGIC
        frame += bytes(60 - len(frame))
        first = True
        while time.monotonic() < deadline:
            s.send(frame)
            if first:
                print(f"{time.time():.6f}", flush=True)
                first = False
            time.sleep(0.005)
        return 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return 1
        r, _, _ = select.select([s], [], [], left)
        if not r:
            return 1
        frame = s.recv(2048)
        at = time.time()
        if MAGIC in frame[14:]:
            print(f"{at:.6f}")
            return 0


if __name__ == "__main__":
    sys.exit(main())
