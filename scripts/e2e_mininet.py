#!/usr/bin/python3
"""Mininet end-to-end test: a tree of sluice switches under real controllers.

    sudo SLUICE=target/release/sluice SLUICE_CTL=target/release/sluice-ctl \\
        /usr/bin/python3 scripts/e2e_mininet.py [osken] [faucet]

For each controller named (both by default): Mininet's tree topology of
depth 2 and fanout 3 (switch s1 above s2, s3 and s4; hosts h1-h3 on s2,
h4-h6 on s3, h7-h9 on s4), every switch a sluice daemon (the switch class
dist/mininet/sluice.py), under

- osken: os-ken's own learning switch, simple_switch_13 (the module of
  os-ken 1.4.1, served by .venv's os-ken; scripts/setup.sh says why), or
- faucet: Faucet (.venv-faucet) with a faucet.yaml made from the topology:
  each switch a datapath with the dp_id Mininet gives it, host ports
  untagged on VLAN 100, links between switches tagged with it (a tree has
  no loop: no stacking; Faucet learns).

It waits until the controller has set up every switch, then requires that
Mininet's pingall loses nothing and that TCP (iperf3, 3 s) from h1 to h9,
on different leaf switches, has a rate above zero; it prints the figures.
Everything is stopped, even on failure: net.stop() (sluice by its PID),
then the controller by its PID; the temporary directory is removed (logs
printed first when something failed).

Runs with Debian's /usr/bin/python3, where Debian's Mininet lives; the
controllers run from their venvs. Hosts are on 10.77.0.0/16 (MININET_NET to
change it), checked against the machine's addresses and routes first.
Mininet's global clean-up (`mn -c`) is never used, and neither are
Mininet's `iperf` (it runs `killall -9 iperf`, every iperf of the machine)
and its fixLimits (it raises machine-wide sysctls): Mininet is told it is
initialised already.
"""

import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from mininet.log import setLogLevel  # noqa: E402
from mininet.net import Mininet  # noqa: E402
from mininet.node import RemoteController, Switch  # noqa: E402
from mininet.topolib import TreeTopo  # noqa: E402
from mininet.util import customClass  # noqa: E402

NET = os.environ.get("MININET_NET", "10.77.0.0/16")
VENV = os.path.join(ROOT, ".venv", "bin", "python")
FAUCET = os.path.join(ROOT, ".venv-faucet", "bin", "faucet")
SS13_DIR = os.path.join(ROOT, ".venv", "os-ken-1.4.1", "os_ken", "app")
IPERF_SECS = 3


def say(msg):
    print("     " + msg, flush=True)


class Failed(Exception):
    pass


def switch_class(rundir):
    """The switch class as `mn --custom dist/mininet/sluice.py --switch
    sluice,rundir=DIR` gets it: the file run into a dictionary of its own,
    its `switches`, the parameters applied by Mininet's customClass."""
    path = os.path.join(ROOT, "dist", "mininet", "sluice.py")
    customs = {}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), customs, customs)
    return customClass(customs["switches"], "sluice,rundir=%s" % rundir)


def wait_until(secs, what, cond):
    "Runs cond every 50 ms until it is true; fails loudly after secs."
    deadline = time.monotonic() + secs
    while not cond():
        if time.monotonic() >= deadline:
            raise Failed("timed out after %g s waiting for: %s" % (secs, what))
        time.sleep(0.05)


def check_subnet():
    "The hosts' subnet must overlap nothing of the machine's."
    net = ipaddress.ip_network(NET)
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True).stdout
    out += subprocess.run(["ip", "-4", "route"], capture_output=True, text=True).stdout
    for tok in out.split():
        if "/" in tok or tok[:1].isdigit():
            try:
                other = ipaddress.ip_network(tok, strict=False)
            except ValueError:
                continue
            if other.prefixlen > 0 and other.overlaps(net):
                raise Failed("%s overlaps %s on this machine; set MININET_NET" % (net, other))


def free_port():
    "A TCP port nothing listens on in the root namespace (from 16653 up)."
    used = subprocess.run(["ss", "-Htan"], capture_output=True, text=True).stdout
    taken = {int(m) for m in re.findall(r":(\d+)\s", used)}
    port = 16653 + os.getpid() % 1000
    while port in taken or port + 1 in taken:
        port += 2
    return port


def listening(port):
    out = subprocess.run(["ss", "-Hltn", "sport = :%d" % port], capture_output=True, text=True)
    return bool(out.stdout.strip())


class Controller:
    "A controller process of ours: started, waited for, ended by PID."

    def __init__(self, name, cmd, env, log):
        self.name, self.log = name, log
        with open(log, "wb") as f:
            self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=f,
                                         stderr=subprocess.STDOUT, cwd=ROOT)

    def alive(self):
        return self.proc.poll() is None

    def wait_listening(self, port):
        def ready():
            if not self.alive():
                raise Failed("%s exited (%s) before it listened" % (self.name, self.proc.returncode))
            return listening(port)
        wait_until(60, "%s to listen on 127.0.0.1:%d" % (self.name, port), ready)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def tail(self, n=25):
        try:
            with open(self.log, errors="replace") as f:
                return f.readlines()[-n:]
        except OSError:
            return []


def faucet_yaml(net):
    "Faucet's configuration for the topology: one datapath per switch."
    lines = ["vlans:", "  mininet:", "    vid: 100", "dps:"]
    for sw in net.switches:
        lines += ["  %s:" % sw.name, "    dp_id: %d" % int(sw.dpid, 16),
                  "    hardware: \"Open vSwitch\"", "    interfaces:"]
        for intf, port in sorted(sw.dataPorts(), key=lambda ip: ip[1]):
            link = intf.link
            peer = link.intf2 if link.intf1 is intf else link.intf1
            lines += ["      %d:" % port, "        name: \"%s\"" % intf.name]
            if isinstance(peer.node, Switch):
                lines.append("        tagged_vlans: [mininet]")
            else:
                lines.append("        native_vlan: mininet")
    return "\n".join(lines) + "\n"


def start_controller(kind, tmp, net):
    "Starts the controller (its port chosen free); returns (Controller, port, ready)."
    port = free_port()
    log = os.path.join(tmp, kind + ".log")
    if kind == "osken":
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.join(ROOT, "tests", "controller"), SS13_DIR]))
        if not os.path.exists(os.path.join(SS13_DIR, "simple_switch_13.py")):
            raise Failed("os-ken's simple_switch_13 not found in %s (run scripts/setup.sh)" % SS13_DIR)
        ctl = Controller("os-ken simple_switch_13",
                         [VENV, os.path.join(ROOT, "tests", "controller", "run_osken.py"),
                          str(port), "simple_switch_13"], env, log)

        def ready(sw):
            # Its table-miss flow to the controller.
            return "actions=CONTROLLER" in sw.dpctl("dump-flows")

        def learned(net):
            # The flows it installed for the pairs it learned (priority 1),
            # on every switch.
            counts = {sw.name: sw.dpctl("dump-flows").count("priority=1,") for sw in net.switches}
            if not all(counts.values()):
                raise Failed("switches without learned flows: %s" % counts)
            return "learned flows per switch: %s" % " ".join("%s=%d" % kv for kv in sorted(counts.items()))
    else:
        if not os.access(FAUCET, os.X_OK):
            raise Failed("%s not found (run scripts/setup.sh)" % FAUCET)
        conf = os.path.join(tmp, "faucet.yaml")
        with open(conf, "w") as f:
            f.write(faucet_yaml(net))
        prom = port + 1
        env = dict(os.environ, FAUCET_CONFIG=conf, FAUCET_LOG=os.path.join(tmp, "faucet-app.log"),
                   FAUCET_EXCEPTION_LOG=os.path.join(tmp, "faucet_exception.log"),
                   FAUCET_PROMETHEUS_ADDR="127.0.0.1", FAUCET_PROMETHEUS_PORT=str(prom),
                   FAUCET_CONFIG_STAT_RELOAD="0",
                   # `faucet` execs osken-manager from PATH: its venv's.
                   PATH=os.path.dirname(FAUCET) + os.pathsep + os.environ.get("PATH", ""))
        ctl = Controller("Faucet", [FAUCET, "--ryu-ofp-listen-host", "127.0.0.1",
                                    "--ryu-ofp-tcp-listen-port", str(port)], env, log)

        def ready(sw):
            # Faucet says the datapath is up once it has programmed it.
            try:
                body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % prom, timeout=2).read()
            except OSError:
                return False
            want = 'dp_status{dp_id="0x%x",dp_name="%s"} 1.0' % (int(sw.dpid, 16), sw.name)
            return want in body.decode(errors="replace")

        def learned(net):
            # Every host's address, learned by Faucet on every switch.
            with open(env["FAUCET_LOG"], errors="replace") as f:
                seen = set(re.findall(r" (\S+) L2 learned on Port \d+ (\S+) ", f.read()))
            missing = [(sw.name, h.name) for sw in net.switches for h in net.hosts
                       if (sw.name, h.MAC()) not in seen]
            if missing:
                raise Failed("Faucet did not learn: %s" % missing[:10])
            return "Faucet learned all %d hosts on all %d switches" % (len(net.hosts), len(net.switches))
    return ctl, port, ready, learned


def iperf(client, server):
    "TCP from client to server for IPERF_SECS with iperf3; bits/s received."
    srv = server.popen(["iperf3", "-s", "-1", "-p", "5201"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    try:
        wait_until(10, "iperf3 to listen in %s" % server.name,
                   lambda: bool(server.cmd("ss -Hltn 'sport = :5201'").strip()))
        cli = client.popen(["iperf3", "-c", server.IP(), "-p", "5201", "-t", str(IPERF_SECS), "-J"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = cli.communicate(timeout=IPERF_SECS + 20)
        except subprocess.TimeoutExpired:
            raise Failed("iperf3 client did not finish within %d s" % (IPERF_SECS + 20))
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait()
        try:
            res = json.loads(out)
            return res["end"]["sum_received"]["bits_per_second"]
        except (ValueError, KeyError):
            raise Failed("iperf3: %s %s" % (out.decode(errors="replace")[-300:],
                                            err.decode(errors="replace")[-300:]))
    finally:
        if srv.poll() is None:
            srv.terminate()
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


def teardown(net):
    """net.stop(), after ending every sluice by its PID (which needs no
    shell). When net.stop() fails (a node's shell was interrupted mid-command:
    Mininet then refuses to send it more), each node's shell is ended by its
    PID and the switches' interfaces (all in the root namespace; deleting
    one deletes its veth peer) are deleted. True if net.stop() worked."""
    for sw in net.switches:
        sw.stopDaemon()
    try:
        net.stop()
        return True
    except Exception as e:  # what Mininet raised: said, then cleaned up
        say("net.stop(): %s: %s; ending the nodes by PID" % (type(e).__name__, e))
    for node in net.hosts + net.switches:
        try:
            node.terminate()
        except Exception as e:
            say("%s.terminate(): %s: %s" % (node.name, type(e).__name__, e))
    for sw in net.switches:
        for intf, _port in sw.dataPorts():
            subprocess.run(["ip", "link", "del", intf.name], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    return False


def leaf_of(host):
    "The switch a host hangs off."
    intf = host.defaultIntf()
    link = intf.link
    return (link.intf2 if link.intf1 is intf else link.intf1).node


def run(kind):
    "One controller's run; True if it passed."
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="sluice-mn-e2e-%s-" % kind)
    net = None
    ctl = None
    ok = False
    try:
        # Mininet's init raises machine-wide sysctls (fixLimits); this
        # small topology does not need them. We are root (checked by
        # the caller).
        Mininet.inited = True
        net = Mininet(topo=TreeTopo(depth=2, fanout=3), switch=switch_class(os.path.join(tmp, "sw")),
                      controller=None,
                      ipBase=NET, autoSetMacs=True, build=False)
        net.build()
        ctl, port, ready, learned = start_controller(kind, tmp, net)
        ctl.wait_listening(port)
        net.addController("c0", controller=RemoteController, ip="127.0.0.1", port=port)
        net.start()
        if len(net.switches) != 4 or len(net.hosts) != 9:
            raise Failed("topology: %d switches, %d hosts" % (len(net.switches), len(net.hosts)))
        for sw in net.switches:
            wait_until(30, "%s to connect to %s" % (sw.name, ctl.name), sw.connected)
        for sw in net.switches:
            wait_until(30, "%s to set up %s" % (ctl.name, sw.name), lambda: ready(sw))
        t_ready = time.monotonic()
        loss = net.pingAll(timeout=2)
        t_ping = time.monotonic() - t_ready
        n = len(net.hosts)
        say("%s: pingall %d%% lost of %d pings (%.1f s), setup %.1f s"
            % (ctl.name, loss, n * (n - 1), t_ping, t_ready - t0))
        h1, h9 = net.hosts[0], net.hosts[-1]
        if leaf_of(h1) is leaf_of(h9):
            raise Failed("%s and %s hang off the same switch" % (h1, h9))
        bps = iperf(h1, h9)
        say("%s: iperf3 TCP %s (%s) -> %s (%s), %d s: %.0f Mbit/s"
            % (ctl.name, h1, leaf_of(h1), h9, leaf_of(h9), IPERF_SECS, bps / 1e6))
        if loss != 0:
            setLogLevel("output")
            net.pingAll(timeout=2)  # again, to show which pairs
            setLogLevel("warning")
            raise Failed("pingall lost %s%%" % loss)
        if not bps > 0:
            raise Failed("iperf3 rate %s" % bps)
        say("%s: %s" % (ctl.name, learned(net)))
        if not ctl.alive():
            raise Failed("%s died" % ctl.name)
        ok = True
    except Failed as e:
        say("%s: %s" % (kind, e))
    except Exception as e:  # Mininet's own failures: said, then cleaned up
        say("%s: %s: %s" % (kind, type(e).__name__, e))
    finally:
        if net is not None and not teardown(net):
            ok = False
        if ctl is not None:
            ctl.stop()
        exc = os.path.join(tmp, "faucet_exception.log")
        if os.path.exists(exc) and os.path.getsize(exc) > 0:
            ok = False
            say("Faucet's exception log:")
            with open(exc, errors="replace") as f:
                for line in f.readlines()[-20:]:
                    say("  " + line.rstrip())
        if not ok:
            for path in sorted(_logs(tmp)):
                say("--- %s" % os.path.relpath(path, tmp))
                with open(path, errors="replace") as f:
                    for line in f.readlines()[-25:]:
                        say("  " + line.rstrip())
        if os.environ.get("E2E_MININET_KEEP"):
            say("kept: %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    say("%s: %s in %.1f s" % (kind, "passed" if ok else "FAILED", time.monotonic() - t0))
    return ok


def _logs(tmp):
    for d, _dirs, files in os.walk(tmp):
        for f in files:
            if f.endswith(".log") or f == "faucet.yaml":
                yield os.path.join(d, f)


def main():
    if os.geteuid() != 0:
        print("e2e_mininet: needs root", file=sys.stderr)
        return 1
    kinds = sys.argv[1:] or ["osken", "faucet"]
    for k in kinds:
        if k not in ("osken", "faucet"):
            print("e2e_mininet: unknown controller %r (osken, faucet)" % k, file=sys.stderr)
            return 2
    # A SIGTERM (the caller's timeout) unwinds like an error: everything
    # started is stopped on the way out.
    # A second one is ignored, so that the clean-up runs to its end.
    def on_term(*_):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise KeyboardInterrupt("SIGTERM")
    signal.signal(signal.SIGTERM, on_term)
    setLogLevel("warning")
    try:
        check_subnet()
    except Failed as e:
        say(str(e))
        return 1
    results = [run(k) for k in kinds]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
