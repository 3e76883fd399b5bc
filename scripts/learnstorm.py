#!/usr/bin/env python3
"""A learn storm and a watch on the switch's control thread, for the
end-to-end test test_learn_storm (tests/e2e/test_control.py).

  learnstorm.py flood IFACE --count N [--first K] [--secs S]
      sends N Ethernet frames (EtherType 0x88b5), each from a source MAC
      address of its own (02:5e and K, default 1, counting in 32 bits), to
      02:5e:ff:ff:ff:fe, as fast as the socket takes them, for at most S
      seconds (default 30); prints a JSON summary (frames sent, seconds).

  learnstorm.py echo HOST:PORT [--pid PID] [--bound-ms B] [--interval-ms I]
                               [--secs S] [--ready FILE]
      an OpenFlow 1.3 peer: HELLO, then one ECHO_REQUEST every I ms
      (default 10), each waiting for its reply at most B ms (default
      1000), until SIGTERM or S seconds (default 120). Touches FILE once
      the handshake is done. With --pid, samples that process's resident
      memory (VmRSS) at each echo. Prints a JSON summary (echos, round
      trip median, p99 and max in ms, RSS first/max/last in kB) and exits
      1 if a reply was late or missing or the connection closed.

Python's sockets only, no third-party module.
"""
import argparse
import json
import select
import signal
import socket
import struct
import sys
import time

OFP13 = 4
HELLO, ECHO_REQUEST, ECHO_REPLY = 0, 2, 3


def flood(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
    s.bind((a.iface, 0))
    frame = bytearray(bytes.fromhex("025efffffffe") + bytes(6)
                      + struct.pack(">H", 0x88B5) + bytes(46))
    start = time.monotonic()
    end = start + a.secs
    sent = errors = 0
    i = 0
    while i < a.count:
        # A new source address: 02:5e and the count in 32 bits.
        struct.pack_into(">HI", frame, 6, 0x025E, (a.first + i) & 0xFFFFFFFF)
        i += 1
        try:
            s.send(frame)
            sent += 1
        except OSError:
            # The device's queue full: wait for it (select on a packet
            # socket does not say when), and send the frame again.
            errors += 1
            i -= 1
            time.sleep(0.0005)
            if time.monotonic() >= end:
                break
        if (i & 1023) == 0 and time.monotonic() >= end:
            break
    secs = time.monotonic() - start
    print(json.dumps({"sent": sent, "send_errors": errors, "secs": round(secs, 3),
                      "per_s": round(sent / secs) if secs > 0 else 0}))
    return 0


def msg(ty, xid, body=b""):
    return struct.pack(">BBHI", OFP13, ty, 8 + len(body), xid) + body


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class Peer:
    def __init__(self, addr):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=5)
        self.s.setblocking(False)
        self.buf = b""

    def send(self, data):
        self.s.setblocking(True)
        self.s.sendall(data)
        self.s.setblocking(False)

    def next_message(self, deadline):
        """The next message (type, xid, body) before `deadline`, or None."""
        while True:
            if len(self.buf) >= 8:
                _, ty, length, xid = struct.unpack(">BBHI", self.buf[:8])
                if length < 8:
                    raise ConnectionError(f"bad length {length}")
                if len(self.buf) >= length:
                    body = self.buf[8:length]
                    self.buf = self.buf[length:]
                    return ty, xid, body
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.s], [], [], left)
            if not r:
                return None
            data = self.s.recv(65536)
            if not data:
                raise ConnectionError("the switch closed the connection")
            self.buf += data


def echo(a):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    bound = a.bound_ms / 1000.0
    rtts, late, problems = [], 0, []
    rss = []
    try:
        p = Peer(a.addr)
        p.send(msg(HELLO, 1, struct.pack(">HHI", 1, 8, 1 << OFP13)))
        deadline = time.monotonic() + 5
        while True:
            m = p.next_message(deadline)
            if m is None:
                raise ConnectionError("no HELLO from the switch within 5 s")
            if m[0] == HELLO:
                break
        if a.ready:
            open(a.ready, "w").close()
        end = time.monotonic() + a.secs
        xid = 100
        while not stop and time.monotonic() < end:
            xid += 1
            t0 = time.monotonic()
            p.send(msg(ECHO_REQUEST, xid, b"storm"))
            deadline = t0 + bound
            got = None
            while got is None:
                m = p.next_message(deadline)
                if m is None:
                    break
                ty, mx, body = m
                if ty == ECHO_REPLY and mx == xid:
                    got = time.monotonic() - t0
                elif ty == ECHO_REQUEST:
                    p.send(msg(ECHO_REPLY, mx, body))
            if got is None:
                late += 1
                problems.append(f"echo {xid}: no reply within {a.bound_ms} ms")
                # Wait for it (or give up) so the next round trip is its own.
                deadline = time.monotonic() + 10
                while True:
                    m = p.next_message(deadline)
                    if m is None:
                        raise ConnectionError(f"echo {xid}: no reply within 10 s")
                    if m[0] == ECHO_REPLY and m[1] == xid:
                        rtts.append(time.monotonic() - t0)
                        break
            else:
                rtts.append(got)
            if a.pid:
                r = rss_kb(a.pid)
                if r is not None:
                    rss.append(r)
            time.sleep(a.interval_ms / 1000.0)
    except (OSError, ConnectionError) as e:
        problems.append(str(e))
    rtts.sort()
    ms = [round(x * 1000, 2) for x in rtts]
    out = {
        "echos": len(ms),
        "late": late,
        "rtt_ms_median": ms[len(ms) // 2] if ms else None,
        "rtt_ms_p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else None,
        "rtt_ms_max": ms[-1] if ms else None,
        "rss_kb_first": rss[0] if rss else None,
        "rss_kb_max": max(rss) if rss else None,
        "rss_kb_last": rss[-1] if rss else None,
        "problems": problems[:5],
    }
    print(json.dumps(out), flush=True)
    return 1 if problems or not ms else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("flood")
    f.add_argument("iface")
    f.add_argument("--count", type=int, required=True)
    f.add_argument("--first", type=int, default=1)
    f.add_argument("--secs", type=float, default=30)
    e = sub.add_parser("echo")
    e.add_argument("addr")
    e.add_argument("--pid", type=int)
    e.add_argument("--bound-ms", type=float, default=1000)
    e.add_argument("--interval-ms", type=float, default=10)
    e.add_argument("--secs", type=float, default=120)
    e.add_argument("--ready")
    a = ap.parse_args()
    return flood(a) if a.cmd == "flood" else echo(a)


if __name__ == "__main__":
    sys.exit(main())
