#!/usr/bin/env python3
"""Traffic for the connection-tracking end-to-end tests (tests/e2e/test_ct.py).

  cttraffic.py serve LOG PORT...        a TCP echo server on each PORT (all
                                        addresses); each connection adds a
                                        line "PEER_IP PEER_PORT LOCAL_PORT"
                                        to LOG; runs until killed
  cttraffic.py connect IP PORT SECS [SPORT]
                                        one TCP exchange: connect (from
                                        source port SPORT if given), send a
                                        line, read it back, all within SECS;
                                        prints "ok LOCAL_IP:PORT PEER_IP:PORT"
                                        and exits 0, or prints why and exits 1
  cttraffic.py twice IP PORT SECS FLAG
                                        one exchange as connect does, then
                                        creates FLAG.ready and waits (at
                                        most 20 s) for FLAG.go; then a
                                        second exchange on the same
                                        connection within SECS; prints
                                        "first ok|fail second ok|fail"
  cttraffic.py refused IP PORT SECS     a UDP datagram to a closed PORT: exits
                                        0 if the ICMP port unreachable it
                                        causes comes back (ECONNREFUSED)
                                        within SECS, else 1
  cttraffic.py stray IFACE SRC_MAC DST_MAC SRC_IP DST_IP DPORT
                                        sends an unsolicited TCP SYN-ACK (no
                                        connection has it: +inv in a tracker)
                                        three times, 50 ms apart
  cttraffic.py sniff IFACE SECS DPORT   counts TCP segments with SYN and ACK
                                        set to DPORT that arrive within SECS;
                                        prints the count
  cttraffic.py synflood IFACE SRC_MAC DST_MAC SRC_NET DST_IP DPORT SECS STOP
                                        a SYN flood: SYNs to DST_IP:DPORT from
                                        SRC_NET.100-199 (addresses nobody
                                        has, so nothing answers), source ports
                                        1024 up (a new one each until 64 000
                                        were sent, then the next address), at
                                        most 20 000 a second,
                                        until SECS passed or the file STOP
                                        exists; prints how many it sent
"""
import select
import socket
import struct
import sys
import threading
import time


def serve(log, ports):
    lock = threading.Lock()

    def handle(conn, peer, port):
        with lock, open(log, "a") as f:
            f.write(f"{peer[0]} {peer[1]} {port}\n")
        conn.settimeout(20)
        try:
            while True:
                data = conn.recv(100)
                if not data:
                    break
                conn.sendall(data)
        except OSError:
            pass
        conn.close()

    def loop(s, port):
        while True:
            conn, peer = s.accept()
            threading.Thread(target=handle, args=(conn, peer, port), daemon=True).start()

    threads = []
    for port in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        s.listen(64)
        t = threading.Thread(target=loop, args=(s, port), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()


def connect(ip, port, secs, sport=0):
    deadline = time.monotonic() + secs
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.settimeout(secs)
        if sport:
            s.bind(("0.0.0.0", sport))
        s.connect((ip, port))
        s.settimeout(max(0.05, deadline - time.monotonic()))
        s.sendall(b"sluice ct e2e\n")
        got = b""
        while len(got) < 14:
            d = s.recv(100)
            if not d:
                break
            got += d
        if got != b"sluice ct e2e\n":
            print(f"no echo ({got!r})")
            return 1
        me, peer = s.getsockname(), s.getpeername()
        s.close()
    except OSError as e:
        print(f"refused or timed out: {e}")
        return 1
    print(f"ok {me[0]}:{me[1]} {peer[0]}:{peer[1]}")
    return 0


def exchange(s, secs):
    s.settimeout(secs)
    deadline = time.monotonic() + secs
    try:
        s.sendall(b"sluice ct e2e\n")
        got = b""
        while len(got) < 14 and time.monotonic() < deadline:
            s.settimeout(max(0.05, deadline - time.monotonic()))
            d = s.recv(100)
            if not d:
                break
            got += d
        return got == b"sluice ct e2e\n"
    except OSError:
        return False


def twice(ip, port, secs, flag):
    import os

    try:
        s = socket.create_connection((ip, port), timeout=secs)
    except OSError as e:
        print(f"refused or timed out: {e}")
        open(flag + ".ready", "w").close()
        return 1
    first = exchange(s, secs)
    open(flag + ".ready", "w").close()
    deadline = time.monotonic() + 20
    while not os.path.exists(flag + ".go") and time.monotonic() < deadline:
        time.sleep(0.02)
    second = exchange(s, secs)
    print(f"first {'ok' if first else 'fail'} second {'ok' if second else 'fail'}")
    return 0


def refused(ip, port, secs):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect((ip, port))
    deadline = time.monotonic() + secs
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            print("no ICMP error came back")
            return 1
        try:
            s.send(b"sluice ct e2e\n")
            s.settimeout(min(0.3, left))
            s.recv(100)
        except ConnectionRefusedError:
            print("ok: refused")
            return 0
        except OSError:
            pass


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def stray(iface, smac, dmac, sip, dip, dport):
    src, dst = socket.inet_aton(sip), socket.inet_aton(dip)
    tcp = struct.pack("!HHIIBBHHH", 40123, int(dport), 12345, 6789, 5 << 4, 0x12, 64000, 0, 0)
    tcp = tcp[:16] + struct.pack("!H", csum(src + dst + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 7, 0, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    frame = bytes.fromhex(dmac.replace(":", "")) + bytes.fromhex(smac.replace(":", "")) + b"\x08\x00" + ip + tcp
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    for i in range(3):
        if i:
            time.sleep(0.05)
        s.send(frame)
    return 0


def syn_frame(smac, dmac, src, dst, sport, dport):
    tcp = struct.pack("!HHIIBBHHH", sport, dport, sport * 7919, 0, 5 << 4, 0x02, 64000, 0, 0)
    tcp = tcp[:16] + struct.pack("!H", csum(src + dst + struct.pack("!BBH", 0, 6, len(tcp)) + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), sport, 0, 64, 6, 0, src, dst)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    return dmac + smac + b"\x08\x00" + ip + tcp


def synflood(iface, smac, dmac, net, dip, dport, secs, stop):
    import os

    smac, dmac = bytes.fromhex(smac.replace(":", "")), bytes.fromhex(dmac.replace(":", ""))
    dst, dport = socket.inet_aton(dip), int(dport)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    start = time.monotonic()
    deadline = start + float(secs)
    n = 0
    while True:
        for _ in range(200):
            src = socket.inet_aton(f"{net}.{100 + (n // 64000) % 100}")
            sport = 1024 + n % 64000
            try:
                s.send(syn_frame(smac, dmac, src, dst, sport, dport))
            except OSError:
                pass  # a full transmit queue: the next round tries again
            n += 1
        now = time.monotonic()
        if now >= deadline or os.path.exists(stop):
            break
        # At most 20 000 a second.
        ahead = n / 20000 - (now - start)
        if ahead > 0:
            time.sleep(ahead)
    print(n)
    return 0


def sniff(iface, secs, dport):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((iface, 0))
    n = 0
    deadline = time.monotonic() + float(secs)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([s], [], [], left)
        if not r:
            break
        f, addr = s.recvfrom(2048)
        if addr[2] == socket.PACKET_OUTGOING or len(f) < 14 + 20 + 20 or f[23] != 6:
            continue
        l4 = 14 + (f[14] & 0xF) * 4
        (dp,) = struct.unpack("!H", f[l4 + 2 : l4 + 4])
        if dp == int(dport) and f[l4 + 13] & 0x12 == 0x12:
            n += 1
    print(n)
    return 0


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        return serve(args[0], [int(p) for p in args[1:]])
    if cmd == "connect":
        return connect(args[0], int(args[1]), float(args[2]), int(args[3]) if len(args) > 3 else 0)
    if cmd == "twice":
        return twice(args[0], int(args[1]), float(args[2]), args[3])
    if cmd == "refused":
        return refused(args[0], int(args[1]), float(args[2]))
    if cmd == "stray":
        return stray(*args)
    if cmd == "sniff":
        return sniff(*args)
    if cmd == "synflood":
        return synflood(*args)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
