#!/usr/bin/env python3
"""Misbehaving OpenFlow peers against a sluice binary, measured.

  connfaults.py SLUICE [CASE...]

Runs each case (all by default) against the daemon binary SLUICE, each
with a daemon of its own (one pcap port, the management socket and a
ptcp listener in a temporary directory; no root needed), and prints one
line per case with what was measured. It exists to compare two builds
(the figures in docs/reliability/conn.md); the pass/fail checks of the
same faults are the Rust tests in crates/sluice/tests/connections.rs.

Cases: never_reads, trickle, silent, emfile, dial, log_flood, standalone,
mgmt_mode, file_at_mgmt, big_flow.
"""
import os
import resource
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

OFP = 4


def msg(ty, xid, body=b""):
    return struct.pack(">BBHI", OFP, ty, 8 + len(body), xid) + body


HELLO = msg(0, 1, struct.pack(">HHI", 1, 8, 1 << OFP))


def echo(xid, n):
    return msg(2, xid, b"\x5a" * n)


def table_features(xid):
    return msg(18, xid, struct.pack(">HH4x", 12, 0))


def flow_stats_req(xid):
    # table all, out_port any, out_group any, cookies 0, empty match.
    body = struct.pack(">HH4xB3xII4xQQ", 1, 0, 0xFF, 0xFFFFFFFF, 0xFFFFFFFF, 0, 0)
    return msg(18, xid, body + struct.pack(">HH4x", 1, 4))


def flow_mod(xid, n_outputs, extra8=False):
    """An ADD of a table-miss flow with n_outputs output actions."""
    actions = b"".join(struct.pack(">HHIH6x", 0, 16, 1, 0) for _ in range(n_outputs))
    if extra8:
        actions += struct.pack(">HH4x", 18, 8)  # pop_vlan
    ins = struct.pack(">HH4x", 4, 8 + len(actions)) + actions
    fixed = struct.pack(">QQBBHHHIIIH2x", 0, 0, 0, 0, 0, 0, 0, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return msg(14, xid, fixed + struct.pack(">HH4x", 1, 4) + ins)


class Daemon:
    def __init__(self, binary, name, bridge=""):
        self.dir = tempfile.mkdtemp(prefix=f"connfaults-{name}-")
        self.port = free_port()
        cfg = os.path.join(self.dir, "sluice.toml")
        bridge = bridge or 'fail_mode = "secure"'
        with open(cfg, "w") as f:
            f.write(
                f'[bridge]\nname = "t"\nlocal_port = false\n'
                f'{bridge}\n'
                f'listen = ["ptcp:{self.port}:127.0.0.1"]\n'
                f'[[port]]\nname = "out"\nofport = 1\nbackend = "pcap"\n'
                f'pcap_out = "{self.dir}/out.pcap"\n'
            )
        self.log = open(os.path.join(self.dir, "log"), "w+")
        self.p = subprocess.Popen(
            [binary, "--config", cfg, "--run-dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=self.log)
        self.mgmt = os.path.join(self.dir, "t.mgmt")
        t0 = time.time()
        while not os.path.exists(self.mgmt):
            if time.time() - t0 > 10 or self.p.poll() is not None:
                raise RuntimeError("daemon did not start: " + self.logtext())
            time.sleep(0.02)

    def logtext(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def rss_kb(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def cpu_ticks(self):
        with open(f"/proc/{self.p.pid}/stat") as f:
            rest = f.read().rsplit(")", 1)[1].split()
        return int(rest[11]) + int(rest[12])

    def stop(self):
        self.p.kill()
        self.p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Peer:
    def __init__(self, sock):
        self.s = sock
        self.buf = b""

    @staticmethod
    def tcp(port, hello=True):
        p = Peer(socket.create_connection(("127.0.0.1", port)))
        p.s.settimeout(5)
        if hello:
            p.s.sendall(HELLO)
            p.recv()
        return p

    @staticmethod
    def unix(path):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.settimeout(5)
        p = Peer(s)
        p.s.sendall(HELLO)
        p.recv()
        return p

    def recv(self):
        """The next message (type, xid, body); None when closed."""
        while True:
            if len(self.buf) >= 8:
                _, ty, ln, xid = struct.unpack(">BBHI", self.buf[:8])
                if ln >= 8 and len(self.buf) >= ln:
                    m, self.buf = self.buf[:ln], self.buf[ln:]
                    return ty, xid, m[8:]
            d = self.s.recv(65536)
            if not d:
                return None
            self.buf += d

    def ask(self, data, xid):
        """Sends data and returns the message with xid; the others that
        came before it are kept in self.skipped."""
        self.s.sendall(data)
        self.skipped = []
        while True:
            m = self.recv()
            if m is None or m[1] == xid:
                return m
            self.skipped.append(m)


def case_never_reads(binary):
    d = Daemon(binary, "rss")
    try:
        m = Peer.unix(d.mgmt)
        m.s.sendall(table_features(3))
        m.ask(msg(20, 4), 4)
        time.sleep(0.5)
        before = d.rss_kb()
        p = Peer.tcp(d.port)
        reqs = bytearray()
        for i in range(20000):
            if i % 64 == 0 and i // 64 < 300:
                reqs += table_features(i)
            reqs += echo(i, 1024)
        p.s.settimeout(3)
        sent = 0
        try:
            while sent < len(reqs):
                sent += p.s.send(reqs[sent:])
        except (socket.timeout, BlockingIOError):
            pass
        time.sleep(3)
        after = d.rss_kb()
        t = time.time()
        ok = Peer.unix(d.mgmt).ask(msg(20, 9), 9) is not None
        return (f"{len(reqs)} B of requests, {sent} B taken by the kernel/daemon; "
                f"RSS +{after - before} kB; other connection answered: {ok} in {time.time() - t:.3f} s")
    finally:
        d.stop()


def case_trickle(binary):
    d = Daemon(binary, "trickle")
    try:
        p = Peer.tcp(d.port)
        p.s.settimeout(0.1)
        data = echo(5, 100)
        t0 = time.time()
        i = 0
        while time.time() - t0 < 16:
            if i < len(data) and time.time() - t0 >= 2 * i:
                try:
                    p.s.sendall(data[i:i + 1])
                except OSError:
                    break
                i += 1
            try:
                if p.s.recv(256) == b"":
                    return f"closed after {time.time() - t0:.1f} s ({i} bytes of one message sent)"
            except socket.timeout:
                pass
            except ConnectionResetError:
                return f"closed after {time.time() - t0:.1f} s"
        return f"still open after 16 s ({i} bytes of one message sent)"
    finally:
        d.stop()


def case_silent(binary):
    d = Daemon(binary, "silent")
    try:
        s = socket.create_connection(("127.0.0.1", d.port))
        s.settimeout(15)
        t0 = time.time()
        try:
            while s.recv(256):
                pass
        except OSError:
            pass
        why = [l for l in d.logtext().splitlines() if "closed" in l]
        return f"closed after {time.time() - t0:.1f} s: {why[-1].split('why=')[-1] if why else '?'}"
    finally:
        d.stop()


def case_emfile(binary):
    d = Daemon(binary, "emfile")
    try:
        used = len(os.listdir(f"/proc/{d.p.pid}/fd"))
        _, hard = resource.prlimit(d.p.pid, resource.RLIMIT_NOFILE)
        resource.prlimit(d.p.pid, resource.RLIMIT_NOFILE, (used + 2, hard))
        peers = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(10)]
        time.sleep(0.3)
        a = d.cpu_ticks()
        time.sleep(2)
        ticks = d.cpu_ticks() - a
        lines = sum("accept" in l.lower() for l in d.logtext().splitlines())
        del peers
        return f"CPU {ticks / 2:.0f}% of a core for 2 s out of descriptors; {lines} log lines about accept"
    finally:
        d.stop()


def case_dial(binary):
    # A controller whose listen queue is full never answers the SYN.
    l = socket.socket()
    l.bind(("127.0.0.1", 0))
    l.listen(0)
    queued = socket.create_connection(l.getsockname())
    host, port = l.getsockname()
    d = Daemon(binary, "dial", f'fail_mode = "secure"\ncontrollers = ["tcp:{host}:{port}"]')
    try:
        m = Peer.unix(d.mgmt)
        worst = 0
        t0 = time.time()
        xid = 100
        while time.time() - t0 < 4:
            t = time.time()
            m.ask(msg(20, xid), xid)
            worst = max(worst, time.time() - t)
            xid += 1
            time.sleep(0.01)
        return f"slowest BARRIER on another connection while dialling: {worst * 1000:.1f} ms"
    finally:
        d.stop()
        queued.close()
        l.close()


def case_log_flood(binary):
    d = Daemon(binary, "logs")
    try:
        for _ in range(100):
            socket.create_connection(("127.0.0.1", d.port)).close()
        time.sleep(2.5)
        Peer.tcp(d.port).s.close()
        time.sleep(0.5)
        lines = [l for l in d.logtext().splitlines() if "connection" in l and "bridge running" not in l]
        return f"100 connect/close pairs (+1): {len(lines)} log lines"
    finally:
        d.stop()


def standalone_present(d):
    m = Peer.unix(d.mgmt)
    m.s.sendall(flow_stats_req(1))
    body = b""
    while True:
        ty, xid, b = m.recv()
        if ty == 19 and xid == 1:
            body += b[8:]
            if not struct.unpack(">H", b[2:4])[0] & 1:
                break
    return b"\x00\x00\x73\x6c\x75\x69\x63\x65" in body


def case_standalone(binary):
    d = Daemon(binary, "standalone", 'fail_mode = "standalone"')
    try:
        before = standalone_present(d)
        p = Peer.tcp(d.port)
        p.ask(msg(20, 2), 2)
        time.sleep(0.3)
        after_hello = standalone_present(d)
        p.ask(msg(5, 3), 3)
        time.sleep(0.3)
        after_features = standalone_present(d)
        return (f"NORMAL flow: at start {before}, after a listener peer's HELLO {after_hello}, "
                f"after its FEATURES_REQUEST {after_features}")
    finally:
        d.stop()


def case_mgmt_mode(binary):
    d = Daemon(binary, "mode")
    try:
        return f"management socket mode {oct(os.stat(d.mgmt).st_mode & 0o777)}"
    finally:
        d.stop()


def case_file_at_mgmt(binary):
    dirname = tempfile.mkdtemp(prefix="connfaults-file-")
    try:
        path = os.path.join(dirname, "t.mgmt")
        with open(path, "w") as f:
            f.write("precious")
        cfg = os.path.join(dirname, "sluice.toml")
        with open(cfg, "w") as f:
            f.write('[bridge]\nname = "t"\nlocal_port = false\n[[port]]\nname = "out"\n'
                    f'ofport = 1\nbackend = "pcap"\npcap_out = "{dirname}/out.pcap"\n')
        p = subprocess.Popen([binary, "--config", cfg, "--run-dir", dirname, "--duration", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, err = p.communicate(timeout=20)
        kept = os.path.isfile(path) and open(path).read() == "precious"
        last = err.decode().strip().splitlines()[-1:] or [""]
        return f"exit {p.returncode}; the file kept: {kept}; {last[0][-120:]}"
    finally:
        shutil.rmtree(dirname, ignore_errors=True)


def case_big_flow(binary):
    d = Daemon(binary, "bigflow")
    try:
        m = Peer.unix(d.mgmt)
        fm = flow_mod(2, 4091)  # 65 520 bytes
        assert len(fm) == 65520
        m.ask(fm + msg(20, 3), 3)
        refused = [struct.unpack(">HH", b[:4]) for ty, x, b in m.skipped if ty == 1 and x == 2]
        m.s.sendall(flow_stats_req(4) + echo(5, 4))
        raw = b""
        m.s.settimeout(2)
        try:
            while len(raw) < 200_000:
                d_ = m.s.recv(65536)
                if not d_:
                    break
                raw += d_
        except socket.timeout:
            pass
        raw = m.buf + raw
        # Walk the stream by header lengths, as a controller does.
        at, seen = 0, []
        while at + 8 <= len(raw):
            _, ty, ln, xid = struct.unpack(">BBHI", raw[at:at + 8])
            seen.append((ty, xid, ln))
            if ln < 8:
                break
            at += ln
        ok = any(ty == 3 and xid == 5 for ty, xid, _ in seen)
        return (f"flow-mod of 65 520 B refused: {refused or 'no'}; then FLOW_STATS and ECHO, "
                f"framed by length (type, xid, len): {seen[:4]}; echo reply found: {ok}")
    finally:
        d.stop()


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}


def main():
    binary = os.path.abspath(sys.argv[1])
    for name in sys.argv[2:] or CASES:
        try:
            print(f"{name:13} {CASES[name](binary)}", flush=True)
        except Exception as e:  # one case failing must not hide the others
            print(f"{name:13} error: {e!r}", flush=True)


if __name__ == "__main__":
    main()
