#!/usr/bin/env python3
"""The smallest OpenFlow 1.3 controller, for the database end-to-end test
(tests/e2e/test_ovsdb.py): that the switch writes a Controller row's
is_connected and role back.

  controller.py PORT SECS

Listens on 127.0.0.1:PORT, takes one switch connection, says HELLO, asks
for the master role (ROLE_REQUEST), answers ECHO_REQUESTs, and holds the
connection until the switch closes it or SECS pass. Prints "hello" once
the switch's HELLO came and "role ROLE" for the ROLE_REPLY.
"""
import select
import socket
import struct
import sys
import time

VERSION = 4
HELLO, ECHO_REQUEST, ECHO_REPLY, ROLE_REQUEST, ROLE_REPLY = 0, 2, 3, 24, 25
ROLES = {0: "nochange", 1: "equal", 2: "master", 3: "slave"}


def header(kind, length, xid):
    return struct.pack(">BBHI", VERSION, kind, length, xid)


def main():
    port, secs = int(sys.argv[1]), float(sys.argv[2])
    deadline = time.monotonic() + secs
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(1)
    ls.settimeout(secs)
    conn, _ = ls.accept()
    conn.sendall(header(HELLO, 8, 1))
    # Master, generation 1.
    conn.sendall(header(ROLE_REQUEST, 24, 2) + struct.pack(">I4xQ", 2, 1))
    buf = b""
    while time.monotonic() < deadline:
        r, _, _ = select.select([conn], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            break
        data = conn.recv(65536)
        if not data:
            break
        buf += data
        while len(buf) >= 8:
            _, kind, length, xid = struct.unpack(">BBHI", buf[:8])
            if len(buf) < length:
                break
            body, buf = buf[8:length], buf[length:]
            if kind == HELLO:
                print("hello", flush=True)
            elif kind == ECHO_REQUEST:
                conn.sendall(header(ECHO_REPLY, 8 + len(body), xid) + body)
            elif kind == ROLE_REPLY:
                print(f"role {ROLES.get(struct.unpack('>I', body[:4])[0], '?')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
