#!/usr/bin/env python3
"""Malformed Ethernet frames for the end-to-end tests.

  malformed.py send IFACE          send each malformed frame once
  malformed.py expect IFACE SECS   print, as JSON, which of them arrived
                                   (by name) within SECS seconds

Each frame's source MAC is 02:00:00:00:ee:NN (NN: its index), so the
receiver knows which one it got whatever the switch did to the rest. The
frames (no runt: Linux refuses to send a frame shorter than an Ethernet
header, so none can come from a veth): a bare Ethernet header, IPv4 with
lying total and header lengths, UDP with a lying
length, a 10-deep VLAN stack, 30 IPv6 extension headers, an extension
chain that runs past the frame, IPv4/IPv6 fragments, bad IPv4 and TCP
checksums.
"""
import json
import select
import socket
import struct
import sys
import time

DST = b"\xff" * 6  # broadcast: a learning switch floods it


def src(i):
    return bytes([2, 0, 0, 0, 0xEE, i])


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f">{len(b) // 2}H", b))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(proto, l4, total=None, ihl=5, frag=0, bad_sum=False):
    hl = ihl * 4
    total = hl + len(l4) if total is None else total
    h = bytearray(struct.pack(">BBHHHBBH4s4s", 0x40 | ihl, 0, total, 1, frag, 64, proto, 0,
                              bytes([10, 213, 77, 1]), bytes([10, 213, 77, 2])))
    h += b"\x01" * max(0, hl - 20)
    s = csum(bytes(h[:max(hl, 20)])) ^ (0x5A5A if bad_sum else 0)
    h[10:12] = struct.pack(">H", s)
    return bytes(h) + l4


def tcp(dport, bad_sum=False):
    return struct.pack(">HHIIBBHHH", 40000, dport, 1, 0, 0x50, 0x02, 4096,
                       0xDEAD if bad_sum else 0, 0)


def udp(dport, length):
    return struct.pack(">HHHH", 5353, dport, length, 0) + b"\x01\x02\x03\x04"


def ipv6(first, ext, l4, payload=None):
    payload = len(ext) + len(l4) if payload is None else payload
    return (struct.pack(">IHBB", 0x60000000, payload, first, 64) + b"\xfd" * 16 + b"\xfe" * 16
            + ext + l4)


def dest_opts(n, last):
    return b"".join(bytes([last if i + 1 == n else 60, 0, 1, 4, 0, 0, 0, 0]) for i in range(n))


def frames():
    """(name, frame bytes after the source MAC) in order."""
    v4 = lambda p: b"\x08\x00" + p
    v6 = lambda p: b"\x86\xdd" + p
    tags = lambda n: b"".join(struct.pack(">HH", 0x8100, i + 1) for i in range(n))
    return [
        ("ethernet header only, ipv4 type", v4(b"")),
        ("ipv4 total length past the frame", v4(ipv4(6, tcp(80), total=2000))),
        ("ipv4 total length below its header", v4(ipv4(6, tcp(80), total=8))),
        ("ipv4 header length past the frame", v4(ipv4(6, b"", ihl=15)[:24])),
        ("ipv4 header length below 5 words", v4(ipv4(6, tcp(80), ihl=3))),
        ("udp length that lies", v4(ipv4(17, udp(53, 0xFFFF)))),
        ("10 vlan tags", tags(10) + v4(ipv4(6, tcp(80)))),
        ("30 ipv6 extension headers", v6(ipv6(60, dest_opts(30, 6), tcp(80)))),
        ("ipv6 extension chain past the frame", v6(ipv6(60, dest_opts(30, 6)[:100], b"", 400))),
        ("ipv6 later fragment", v6(ipv6(44, bytes([6, 0, 1, 0, 0, 0, 0, 7]), tcp(80)))),
        ("ipv4 first fragment", v4(ipv4(6, tcp(80), frag=0x2000))),
        ("ipv4 later fragment", v4(ipv4(6, tcp(80), frag=100))),
        ("bad ipv4 checksum", v4(ipv4(6, tcp(80), bad_sum=True))),
        ("bad tcp checksum", v4(ipv4(6, tcp(80, bad_sum=True)))),
    ]


def recv_with_tag(s):
    """Linux moves a received VLAN tag into metadata; put it back."""
    frame, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(20))
    for level, kind, data in anc:
        if level == 263 and kind == 8 and len(data) >= 20:
            status, _, _, _, _, tci, tpid = struct.unpack("IIIHHHH", data[:20])
            if status & (1 << 4):
                tpid = tpid if status & (1 << 6) else 0x8100
                frame = frame[:12] + struct.pack(">HH", tpid, tci) + frame[12:]
    return frame


def main():
    mode, iface = sys.argv[1], sys.argv[2]
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((iface, 0))
    s.setsockopt(263, 8, 1)  # PACKET_AUXDATA
    fs = frames()
    if mode == "send":
        for i, (_, body) in enumerate(fs):
            s.send(DST + src(i) + body)
            time.sleep(0.01)
        return 0
    got = {}
    deadline = time.time() + float(sys.argv[3])
    while time.time() < deadline:
        r, _, _ = select.select([s], [], [], max(0.0, deadline - time.time()))
        if not r:
            break
        f = recv_with_tag(s)
        if f[6:11] == bytes([2, 0, 0, 0, 0xEE]) and f[11] < len(fs):
            name, body = fs[f[11]]
            # Received as sent (Ethernet may pad a short frame to 60 bytes).
            got[name] = f[12:12 + len(body)] == body
    print(json.dumps(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
