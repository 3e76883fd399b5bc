#!/usr/bin/env python3
"""Raw Ethernet frames for the end-to-end tests (no tcpdump needed).

  rawframe.py send IFACE HEX [N]       send the frame N times (default 1), 0.2 s apart
  rawframe.py expect IFACE HEX SECS    wait for a frame whose bytes from
                                       offset 6 (source MAC on) start with HEX;
                                       exit 0 if one came, print it
"""
import select
import socket
import struct
import sys
import time

SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 1 << 4
TP_STATUS_VLAN_TPID_VALID = 1 << 6


def recv_with_tag(s):
    """Linux moves a received VLAN tag into metadata; put it back."""
    frame, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(20))
    for level, kind, data in anc:
        if level == SOL_PACKET and kind == PACKET_AUXDATA and len(data) >= 20:
            status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", data[:20])
            if status & TP_STATUS_VLAN_VALID:
                tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100
                frame = frame[:12] + struct.pack(">HH", tpid, tci) + frame[12:]
    return frame


def main():
    mode, iface, hexdata = sys.argv[1], sys.argv[2], sys.argv[3]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((iface, 0))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    want = bytes.fromhex(hexdata)
    if mode == "send":
        count = int(sys.argv[4]) if len(sys.argv) > 4 else 1
        for i in range(count):
            if i:
                time.sleep(0.2)
            s.send(want)
        return 0
    deadline = time.time() + float(sys.argv[4])
    while time.time() < deadline:
        r, _, _ = select.select([s], [], [], max(0.0, deadline - time.time()))
        if not r:
            break
        frame = recv_with_tag(s)
        if frame[6:6 + len(want)] == want:
            print(frame.hex())
            return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
