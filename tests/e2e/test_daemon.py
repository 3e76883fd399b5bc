"""The daemon as a service: reloads, the connection tracker's commands,
MTUs and offloads, and Mininet running sluice as its switches."""
import os
import re
import shutil
import signal
import subprocess

import pytest

from lab import REPO, SCRIPTS, wait_until


def reload_cfg(path, ports, flow, listen):
    """A config with those ports, one flow and one listener."""
    path.write_text(f'[bridge]\nflows = ["{flow}"]\nlisten = ["{listen}"]\n'
                    + "".join(f'[[port]]\nname = "{p}"\n' for p in ports))


@pytest.mark.hosts(3)
def test_sighup_reloads_the_config(testbed, sluice, tmp_path):
    """SIGHUP applies a valid config's changes and refuses an invalid one
    whole."""
    tb = testbed
    cfg = tmp_path / "sluice.toml"
    reload_cfg(cfg, ["p1", "p2"], "priority=50,udp,tp_dst=9,actions=drop", "ptcp:16653:127.0.0.1")
    s = sluice.start("--config", cfg)
    C = s.ctl
    assert tb.ping_ok("h1", tb.ip(2)), "no ping before"
    # Valid: p3 added, the flow replaced by one that stops pings to h2, the
    # listener moved.
    reload_cfg(cfg, ["p1", "p2", "p3"], f"priority=60,icmp,nw_dst={tb.ip(2)},actions=drop", "ptcp:16654:127.0.0.1")
    s.hup_and_wait()
    assert s.alive(), "SIGHUP killed the daemon"
    assert "configuration reloaded" in s.log, "no reload logged"
    assert " 3(p3)" in C("dump-ports-desc", "br0").stdout, "p3 not added"
    assert tb.ping_ok("h1", tb.ip(3)), "no ping to the added port"
    assert not tb.ping_ok("h1", tb.ip(2)), "the new flow does not drop"
    out = C("dump-flows", "br0").stdout
    assert "priority=60" in out and "priority=50" not in out, f"flows after reload: {out}"
    out = tb.x("sw", "ss", "-ltn").stdout
    assert ":16654 " in out and ":16653 " not in out, f"listeners after reload: {out}"
    # Invalid: refused whole, the running state kept.
    reload_cfg(cfg, ["p1", "p2"], "priority=70,actions=group:9", "ptcp:16655:127.0.0.1")
    s.hup_and_wait()
    assert s.alive(), "an invalid file killed the daemon"
    assert re.search("configuration NOT reloaded.*group", s.log), "refusal not logged"
    assert " 3(p3)" in C("dump-ports-desc", "br0").stdout, "p3 removed by a refused file"
    assert "priority=60" in C("dump-flows", "br0").stdout, "flow lost by a refused file"
    cfg.write_text("not = [toml\n")
    s.hup_and_wait()
    assert re.search("configuration NOT reloaded.*line 1", s.log), "TOML error not logged"
    # A port removed from the file is deleted.
    reload_cfg(cfg, ["p1", "p2"], f"priority=60,icmp,nw_dst={tb.ip(2)},actions=drop", "ptcp:16654:127.0.0.1")
    s.hup_and_wait()
    assert "(p3)" not in C("dump-ports-desc", "br0").stdout, "p3 still there"


def test_conntrack_commands_and_config(testbed, sluice, tmp_path):
    """conntrack: dpctl-shaped commands and [conntrack] at start and reload.
    (Dumps and flushes of filled trackers are tested in Rust and in
    test_ct.py.)"""
    cfg = tmp_path / "sluice.toml"

    def ct_cfg(udp):
        cfg.write_text(f'[conntrack]\nlimit = 5000\nzone_limits = {{ 3 = 7 }}\ntimeouts = {{ udp = {udp} }}\n'
                       '[[port]]\nname = "p1"\n[[port]]\nname = "p2"\n')

    ct_cfg(45)
    s = sluice.start("--config", cfg)

    def C(*args):
        return s.ctl(*args).stdout.rstrip("\n")

    # What the file set, in dpctl's forms.
    assert C("ct-get-maxconns", "br0") == "5000"
    assert C("ct-get-nconns", "br0") == "0"
    assert C("ct-get-limits", "br0") == "default limit=0\nzone=3,limit=7,count=0"
    assert "udp=45" in C("ct-get-timeouts", "br0").splitlines()
    # Changed at run time.
    C("ct-set-limits", "br0", "default=100", "zone=4,limit=9")
    assert C("ct-get-limits", "br0", "zone=4,5") == "default limit=100\nzone=4,limit=9,count=0\nzone=5,limit=100,count=0"
    C("ct-del-limits", "br0", "zone=4")
    assert not re.search("^zone=4,", C("ct-get-limits", "br0"), re.M), "zone 4 still limited"
    C("ct-set-timeouts", "br0", "icmp=5")
    assert "icmp=5" in C("ct-get-timeouts", "br0").splitlines(), "icmp timeout not set"
    assert "setting maxconns successful" in C("ct-set-maxconns", "br0", "6000").splitlines()
    out = C("dump-conntrack", "br0", "-s")
    assert out == "", f"dump of an empty tracker: {out}"
    out = C("flush-conntrack", "br0", "zone=1", "ct_nw_src=10.0.0.1,ct_nw_proto=6,ct_tp_dst=80")
    assert out == "0 connections flushed", f"flush-conntrack: {out}"
    # A bad tuple: refused with the field's name, before connecting.
    p = s.ctl("flush-conntrack", "br0", "ct_nw_src=10.0.0", check=False)
    assert p.returncode != 0, "a bad tuple was taken"
    assert 'ct_nw_src: "10.0.0" is not an IPv4 address' in p.stdout + p.stderr, f"bad tuple: {p.stdout}{p.stderr}"
    # A reload that changes the timeouts applies the file's (icmp back to
    # its default); the limits it did not change keep what sluice-ctl set.
    ct_cfg(50)
    s.hup_and_wait()
    out = C("ct-get-timeouts", "br0").splitlines()
    assert "udp=50" in out and "icmp=30" in out, f"timeouts after reload: {out}"
    assert C("ct-get-maxconns", "br0") == "6000"
    # A bad [conntrack] is refused whole, naming the key.
    cfg.write_text('[conntrack]\ntimeouts = { tcp = 5 }\n[[port]]\nname = "p1"\n')
    s.hup_and_wait()
    assert re.search("configuration NOT reloaded.*conntrack.timeouts.tcp", s.log), "refusal not logged"


def set_mtu(tb, mtu):
    for h in (1, 2):
        tb.x("sw", "ip", "link", "set", f"p{h}", "mtu", mtu)
        tb.x(f"h{h}", "ip", "link", "set", "eth0", "mtu", mtu)


def big_ping(tb):
    return tb.x("h1", "ping", "-c", "3", "-i", "0.2", "-W", "2", "-q", "-M", "do", "-s", "8000", tb.ip(2),
                check=False).returncode == 0


def test_jumbo_frames_and_offload_warnings(testbed, sluice):
    """jumbo frames pass whole, also after an MTU change; GRO and checksum
    offloads are named."""
    tb = testbed
    set_mtu(tb, 9000)
    s = sluice.start("--port", "p1", "--port", "p2")
    # Frames up to the MTU go through whole (8 028-byte IP packets, not
    # fragmented).
    assert big_ping(tb), "no 8000-byte ping through a 9000-MTU bridge"
    s.stop()
    trunc = s.port_counter(1, 9)
    assert trunc == "0", f"truncated frames at MTU 9000: {trunc}"
    # The MTU raised under a running switch: the ports are opened again for
    # it.
    set_mtu(tb, 1500)
    s = sluice.start("--port", "p1", "--port", "p2")
    set_mtu(tb, 9000)
    wait_until(5, "sluice to open p1 and p2 again for the new MTU",
               lambda: s.log.count("MTU changed: port opened again") >= 2)
    assert big_ping(tb), "no 8000-byte ping after the MTU went up"
    s.stop()
    # Offloads on: the switch says which, and what to do.
    tb.x("sw", "ethtool", "-K", "p1", "gro", "on", check=False)
    tb.x("h1", "ethtool", "-K", "eth0", "tx", "on", check=False)
    s = sluice.start("--port", "p1", "--port", "p2")
    assert re.search("merges received frames.*ethtool -K p1 gro off", s.log), "no GRO warning at open"
    tb.x("h1", "ping", "-c", "1", "-W", "1", tb.ip(2), check=False)
    # A TCP connect, for frames with unfinished checksums: in the
    # background, since h2 drops those SYNs and the connect only gives up
    # after the kernel's retries (about two minutes).
    tb.bg("h1", "bash", "-c", f"exec 3<>/dev/tcp/{tb.ip(2)}/5399")
    wait_until(5, "sluice's warning about unfinished checksums", lambda: "frames arrive with unfinished checksums" in s.log)


def test_mininet_tree_under_osken_and_faucet(bins):
    """Mininet: tree 2,3 of sluice switches under simple_switch_13 and
    Faucet: pingall loses nothing, TCP across leaves. Its tree topology
    (depth 2, fanout 3: 4 switches, 9 hosts) with every switch a sluice
    (dist/mininet/sluice.py), under os-ken's simple_switch_13 and then
    Faucet (scripts/e2e_mininet.py; 10-15 s). Mininet runs with Debian's
    /usr/bin/python3, where Debian's package puts its module (setup.sh
    says why), as a process of its own; the controllers from their venvs.
    The script stops everything it started, also on failure and on the
    timeout's SIGTERM."""
    ok = shutil.which("mnexec") and subprocess.run(["/usr/bin/python3", "-c", "import mininet.net"],
                                                   capture_output=True).returncode == 0
    assert ok, "Mininet not found for /usr/bin/python3 (scripts/setup.sh installs Debian's mininet)"
    env = {**os.environ, "SLUICE": str(bins / "sluice"), "SLUICE_CTL": str(bins / "sluice-ctl")}
    p = subprocess.run(["timeout", "-k", "15", "150", "/usr/bin/python3", SCRIPTS / "e2e_mininet.py", "osken", "faucet"],
                       capture_output=True, text=True, env=env, timeout=200)
    print(p.stdout + p.stderr)
    assert p.returncode == 0, "scripts/e2e_mininet.py failed (above)"


def test_service_install_and_notify(testbed, sluice, tmp_path):
    """make install into a staging root (binaries, man pages, completions,
    the unit with its paths filled in, the example config, which checks);
    then the service protocol: READY=1 once running, RELOADING=1 and READY=1
    around SIGHUP, STOPPING=1 at the end."""
    dest = tmp_path / "root"
    r = subprocess.run(
        ["make", "-s", "install", f"DESTDIR={dest}", "PREFIX=/usr"],
        cwd=REPO, capture_output=True, text=True, timeout=1200,
    )
    assert r.returncode == 0, f"make install failed:\n{r.stdout}{r.stderr}"
    for f in ["usr/bin/sluice", "usr/bin/sluice-ctl", "usr/share/man/man1/sluice.1",
              "usr/share/man/man1/sluice-ctl.1", "usr/share/bash-completion/completions/sluice-ctl",
              "etc/systemd/system/sluice.service", "etc/sluice/sluice.toml"]:
        p = dest / f
        assert p.exists() and p.stat().st_size > 0, f"missing {f}"
    unit = (dest / "etc/systemd/system/sluice.service").read_text()
    assert re.search(r"^ExecStart=/usr/bin/sluice --config /etc/sluice/sluice.toml$", unit, re.M), \
        f"unit paths not filled in:\n{unit}"
    if shutil.which("systemd-analyze"):
        v = subprocess.run(["systemd-analyze", "verify", str(dest / "etc/systemd/system/sluice.service")],
                           capture_output=True, text=True, timeout=60)
        out = v.stdout + v.stderr
        assert not re.search(r"unknown|invalid|failed to parse|ignoring", out, re.I), f"unit: {out}"
    c = subprocess.run([str(dest / "usr/bin/sluice"), "--check-config", "--config", str(dest / "etc/sluice/sluice.toml")],
                       capture_output=True, text=True, timeout=60)
    assert c.returncode == 0, f"the example config does not check:\n{c.stdout}{c.stderr}"
    m = subprocess.run(["man", "-l", str(dest / "usr/share/man/man1/sluice-ctl.1")],
                       capture_output=True, text=True, timeout=60)
    assert "add-port" in m.stdout, "man page lacks add-port"
    cfg = tmp_path / "c.toml"
    cfg.write_text('[bridge]\n[[port]]\nname = "p1"\n[[port]]\nname = "p2"\n')
    s = sluice.start("--config", cfg)
    s.hup_and_wait()
    # Stopped here (not by the fixture) to read what it said last.
    s.proc.send_signal(signal.SIGTERM)
    s.proc.wait(20)
    wait_until(5, "STOPPING=1 from sluice", lambda: s.notify.count("STOPPING=1"))
    states = "|".join(s.notify.states) + "|"
    assert re.fullmatch(r"READY=1\|RELOADING=1 MONOTONIC_USEC=\d+\|READY=1\|STOPPING=1\|", states), \
        f"states: {states}"

