#!/usr/bin/env python3
"""Update-to-dataplane latency: FLOW_MOD sent -> first frame forwarded by it.

Used by scripts/ofbench.sh on the namespace testbed (scripts/testbed.sh):
h1 eth0 <-> p1 [switch] p2 <-> h2 eth0, the switch in fail mode secure with
no flow, so nothing h1 sends reaches h2. Three roles, stdlib only:

  send     (in h1) a steady stream of small UDP frames to h2, paced at
           --rate frames/s (sleeping between frames, timer slack 1 ns);
  recv     (in h2) a UDP socket with SO_TIMESTAMPNS; prints "B <ns>" with
           the kernel's receive time of the first frame after a silence of
           --gap-ms, and "E <ns>" with the last one's when a silence begins;
  measure  starts both (ip netns exec), connects to the switch's OpenFlow
           management socket (unix:PATH, OpenFlow 1.3: HELLO, then FLOW_MODs
           built here with struct) and takes --samples samples. For each:
           delete the rule (FLOW_MOD DELETE_STRICT + BARRIER), wait until no
           frame has arrived for --quiet-ms, read CLOCK_REALTIME (the same in
           every namespace), send FLOW_MOD ADD priority=100,in_port=1,
           actions=output:2 and a BARRIER_REQUEST. The latency is the first
           arrival's kernel timestamp minus that send time; the barrier time
           is when the BARRIER_REPLY was read, minus the same. A frame
           arriving before the add is an error, so is a latency outside
           (0, 1 s) or a wait past its timeout. Prints one JSON line.
           With --no-barrier neither FLOW_MOD is followed by a barrier (a
           controller's changes in a row, applied when the switch will),
           and the delete is timed too: to the last frame it let through.
"""

import argparse
import ctypes
import json
import os
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import time

OFP_VERSION = 4
HELLO, ERROR, ECHO_REQUEST, ECHO_REPLY, FLOW_MOD = 0, 1, 2, 3, 14
BARRIER_REQUEST, BARRIER_REPLY = 20, 21
OFPFC_ADD, OFPFC_DELETE_STRICT = 0, 4
ANY = 0xFFFFFFFF
SO_TIMESTAMPNS = 35
PRIORITY = 100


def header(msg_type, length, xid):
    return struct.pack("!BBHI", OFP_VERSION, msg_type, length, xid)


def in_port_match(port):
    # ofp_match: type OXM (1), length 4 + 8; OXM_OF_IN_PORT (class 0x8000,
    # field 0, 4 bytes); padded to 8 bytes.
    oxm = struct.pack("!HBBI", 0x8000, 0 << 1, 4, port)
    body = struct.pack("!HH", 1, 4 + len(oxm)) + oxm
    return body + b"\0" * (-len(body) % 8)


def flow_mod(xid, command, in_port, out_port=None):
    instructions = b""
    if out_port is not None:
        # OFPAT_OUTPUT (0), 16 bytes, max_len NO_BUFFER.
        action = struct.pack("!HHIH6x", 0, 16, out_port, 0xFFFF)
        # OFPIT_APPLY_ACTIONS (4).
        instructions = struct.pack("!HH4x", 4, 8 + len(action)) + action
    body = struct.pack(
        "!QQBBHHHIIIH2x",
        0,  # cookie
        0,  # cookie mask
        0,  # table
        command,
        0,  # idle timeout
        0,  # hard timeout
        PRIORITY,
        ANY,  # buffer id: none
        ANY,  # out_port
        ANY,  # out_group
        0,  # flags
    )
    body += in_port_match(in_port) + instructions
    return header(FLOW_MOD, 8 + len(body), xid) + body


class OpenFlow:
    """One OpenFlow 1.3 connection over a unix socket."""

    def __init__(self, path, timeout):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        self.xid = 100
        self.sock.sendall(header(HELLO, 8, 1))
        deadline = time.monotonic() + timeout
        while True:
            m = self.read(deadline)
            if m is None:
                raise SystemExit("update_latency: no HELLO from the switch")
            if m[0] == HELLO:
                break

    def next_xid(self):
        self.xid += 1
        return self.xid

    def read(self, deadline):
        """The next message as (type, xid, body), or None at the deadline;
        answers echo requests, fails on errors."""
        while True:
            if len(self.buf) >= 8:
                _, t, length, xid = struct.unpack("!BBHI", self.buf[:8])
                if len(self.buf) >= length:
                    body, self.buf = self.buf[8:length], self.buf[length:]
                    if t == ECHO_REQUEST:
                        self.sock.sendall(header(ECHO_REPLY, 8 + len(body), xid) + body)
                        continue
                    if t == ERROR:
                        etype, code = struct.unpack("!HH", body[:4])
                        raise SystemExit(f"update_latency: the switch answered xid {xid} with error type {etype} code {code}")
                    return t, xid, body
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return None
            data = self.sock.recv(65536)
            if not data:
                raise SystemExit("update_latency: the switch closed the connection")
            self.buf += data

    def barrier_reply(self, xid, deadline):
        while True:
            m = self.read(deadline)
            if m is None:
                raise SystemExit("update_latency: no BARRIER_REPLY in time")
            if m[0] == BARRIER_REPLY and m[1] == xid:
                return time.time_ns()

    def send_barrier(self):
        xid = self.next_xid()
        self.sock.sendall(header(BARRIER_REQUEST, 8, xid))
        return xid


class Receiver:
    """The lines of the `recv` process: burst starts and ends."""

    def __init__(self, proc):
        self.proc = proc
        self.fd = proc.stdout.fileno()
        self.buf = b""
        self.in_burst = False
        self.last_end = 0
        self.starts = []

    def poll(self, wait):
        r, _, _ = select.select([self.fd], [], [], max(wait, 0))
        if not r:
            return
        data = os.read(self.fd, 65536)
        if not data:
            raise SystemExit("update_latency: the receiver stopped: " + self.proc.stderr.read().decode(errors="replace"))
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            kind, ns = line.split()
            if kind == b"B":
                self.in_burst = True
                self.starts.append(int(ns))
            else:
                self.in_burst = False
                self.last_end = int(ns)

    def wait_quiet(self, quiet_ns, timeout):
        deadline = time.monotonic() + timeout
        while self.in_burst or time.time_ns() - self.last_end < quiet_ns:
            if time.monotonic() > deadline:
                raise SystemExit("update_latency: frames kept arriving after the rule was deleted")
            self.poll(0.01)


def measure(a):
    # A SIGTERM (timeout(1)) ends the sender and receiver too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("update_latency: terminated"))
    here = os.path.abspath(__file__)
    # No rule of ours from an earlier run may forward the stream.
    of = OpenFlow(a.socket, a.timeout)
    of.sock.sendall(flow_mod(of.next_xid(), OFPFC_DELETE_STRICT, 1))
    of.barrier_reply(of.send_barrier(), time.monotonic() + a.timeout)
    recv = subprocess.Popen(
        ["ip", "netns", "exec", a.h2, sys.executable, here, "recv", "--port", str(a.port), "--gap-ms", str(a.gap_ms), "--seconds", str(a.max_seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    send = None
    try:
        time.sleep(0.3)
        send = subprocess.Popen(
            ["ip", "netns", "exec", a.h1, sys.executable, here, "send", "--dst", a.dst, "--port", str(a.port), "--rate", str(a.rate), "--seconds", str(a.max_seconds)],
            stdout=subprocess.DEVNULL,
        )
        rx = Receiver(recv)
        latencies, barriers = [], []
        # Let the stream start: nothing may arrive with no rule in place.
        time.sleep(0.3)
        deletes = []
        for _ in range(a.samples):
            xid = of.next_xid()
            dsent = time.time_ns()
            of.sock.sendall(flow_mod(xid, OFPFC_DELETE_STRICT, 1))
            if not a.no_barrier:
                of.barrier_reply(of.send_barrier(), time.monotonic() + a.timeout)
            rx.wait_quiet(a.quiet_ms * 1_000_000, a.timeout)
            if a.no_barrier and rx.last_end > dsent:
                # The last frame the deleted rule forwarded.
                deletes.append((rx.last_end - dsent) / 1e6)
            seen = len(rx.starts)
            if send.poll() is not None:
                raise SystemExit("update_latency: the sender stopped")
            msg = flow_mod(of.next_xid(), OFPFC_ADD, 1, 2)
            bxid = of.next_xid()
            barrier = header(BARRIER_REQUEST, 8, bxid)
            sent = time.time_ns()
            of.sock.sendall(msg)
            if not a.no_barrier:
                of.sock.sendall(barrier)
                reply = of.barrier_reply(bxid, time.monotonic() + a.timeout)
            deadline = time.monotonic() + a.timeout
            while len(rx.starts) == seen:
                if time.monotonic() > deadline:
                    raise SystemExit("update_latency: no frame reached h2 after the rule was added")
                rx.poll(0.01)
            first = rx.starts[seen]
            if first < sent:
                raise SystemExit(f"update_latency: a frame arrived {(sent - first) / 1e6:.3f} ms before the rule was added")
            lat = (first - sent) / 1e6
            if not 0 < lat < 1000:
                raise SystemExit(f"update_latency: implausible latency {lat:.3f} ms")
            latencies.append(lat)
            if not a.no_barrier:
                barriers.append((reply - sent) / 1e6)
            told = f", BARRIER_REPLY {barriers[-1]:.3f} ms" if barriers else ""
            print(f"update_latency: {a.switch}: sample {len(latencies)}: first frame {lat:.3f} ms{told}", file=sys.stderr)
        row = {
            "scenario": "control",
            "test": "update_latency",
            "switch": a.switch,
            "samples": a.samples,
            "flows_installed": a.prefill,
            "barrier": not a.no_barrier,
            "latency_ms_p50": round(statistics.median(latencies), 3),
            "latency_ms_max": round(max(latencies), 3),
            "barrier_ms_p50": round(statistics.median(barriers), 3) if barriers else None,
        }
        if deletes:
            row["delete_ms_p50"] = round(statistics.median(deletes), 3)
            row["delete_ms_max"] = round(max(deletes), 3)
        print(json.dumps(row, separators=(",", ":")), flush=True)
    finally:
        for p in (send, recv):
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=3)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def send(a):
    # Timer slack 1 ns (PR_SET_TIMERSLACK): sleeps end when asked, not up
    # to 50 us later.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dst = (a.dst, a.port)
    payload = b"sluice-update-lat!"  # 18 bytes: a 60-byte frame
    interval = 1_000_000_000 // a.rate
    now = time.monotonic_ns()
    nxt, end = now, now + int(a.seconds * 1e9)
    while now < end:
        if now < nxt:
            time.sleep((nxt - now) / 1e9)
        else:
            try:
                s.sendto(payload, dst)
            except OSError:
                pass
            nxt += interval
            if now - nxt > 10_000_000:  # fell behind: no catch-up burst
                nxt = now
        now = time.monotonic_ns()


def recv(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.bind(("0.0.0.0", a.port))
    s.settimeout(a.gap_ms / 1000)
    end = time.monotonic() + a.seconds
    in_burst, last = False, 0
    out = sys.stdout
    while time.monotonic() < end:
        try:
            _, anc, _, _ = s.recvmsg(2048, socket.CMSG_SPACE(16))
        except socket.timeout:
            if in_burst:
                out.write(f"E {last}\n")
                out.flush()
                in_burst = False
            continue
        ts = 0
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", data[:16])
                ts = sec * 1_000_000_000 + nsec
        if ts == 0:
            ts = time.time_ns()
        last = ts
        if not in_burst:
            out.write(f"B {ts}\n")
            out.flush()
            in_burst = True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="role", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--socket", required=True, help="the switch's OpenFlow unix socket")
    m.add_argument("--switch", required=True, help="the name in the JSON row")
    m.add_argument("--h1", required=True, help="the sender's namespace")
    m.add_argument("--h2", required=True, help="the receiver's namespace")
    m.add_argument("--dst", required=True, help="h2's address")
    m.add_argument("--port", type=int, default=5599)
    m.add_argument("--rate", type=int, default=20000)
    m.add_argument("--samples", type=int, default=10)
    m.add_argument("--quiet-ms", type=int, default=200)
    m.add_argument("--gap-ms", type=int, default=50)
    m.add_argument("--timeout", type=float, default=5.0)
    m.add_argument("--max-seconds", type=float, default=120.0, help="the sender's and receiver's lifetime")
    m.add_argument("--no-barrier", action="store_true", help="send the FLOW_MODs alone (the switch applies them when it will); also times each delete to the last frame it let through")
    m.add_argument("--prefill", type=int, default=0, help="flows the caller installed before (recorded in the row)")
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--rate", type=int, required=True)
    s.add_argument("--seconds", type=float, required=True)
    r = sub.add_parser("recv")
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--gap-ms", type=int, required=True)
    r.add_argument("--seconds", type=float, required=True)
    a = p.parse_args()
    {"measure": measure, "send": send, "recv": recv}[a.role](a)


if __name__ == "__main__":
    main()
