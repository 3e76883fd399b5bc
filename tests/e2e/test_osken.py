"""os-ken (from the venv scripts/setup.sh made) as sluice's controller,
listening on the switch namespace's loopback."""
import re

from lab import run, wait_until

CONTROLLER = ("--controller", "tcp:127.0.0.1:6653", "--fail-mode", "secure")


def test_osken_learning_switch(testbed, controller, sluice):
    """os-ken learning switch (simple_switch_13's algorithm) drives sluice:
    ping and TCP."""
    tb = testbed
    c = controller.start("learning_switch")
    s = sluice.start("--port", "p1", "--port", "p2", *CONTROLLER)
    wait_until(10, "os-ken's table-miss flow to the controller", lambda: "actions=CONTROLLER" in s.flows())
    assert tb.ping_ok("h1", tb.ip(2))
    mbps = tb.tcp_mbps(5309)
    print(f"TCP through sluice under os-ken: {mbps} Mbit/s")
    assert mbps > 0
    s.stop()
    c.stop()
    # The controller saw the switch and learned; the flows it installed
    # carried the bulk (few packets went to the controller).
    assert "switch 0000000000000001 connected" in c.log
    assert "packet in" in c.log
    to_ctl = re.findall(r" to_controller ([0-9]+)", s.log)
    print(f"packets sent to the controller: {to_ctl[-1] if to_ctl else '?'}")
    assert to_ctl and 0 < int(to_ctl[-1]) < 1000


def test_osken_conformance(testbed, controller, sluice):
    """os-ken drives roles (STALE, IS_SLAVE), FLOW_REMOVED (hard timeout,
    delete) and PACKET_OUT answered by a host."""
    tb = testbed
    c = controller.start("conformance_app", env={"PEER_IP": tb.ip(2), "PEER_PORT": "2", "OUR_IP": tb.ip(9)})
    s = sluice.start("--port", "p1", "--port", "p2", *CONTROLLER)
    # Every check passes within a few seconds (the hard timeout is 1 s).
    wait_until(10, "os-ken's ALL CHECKS PASSED", lambda: "ALL CHECKS PASSED" in c.log)
    s.stop()
    c.stop()
    for line in c.log.splitlines():
        if "CHECK " in line:
            print(line[line.index("CHECK"):])
    assert "ALL CHECKS PASSED" in c.log
    assert "FAILED" not in c.log


def test_osken_over_tls(testbed, controller, sluice, tmp_path, bins):
    """os-ken over TLS (mutual authentication) drives sluice: ping; an
    identity from another CA gets no connection."""
    tb = testbed
    pki = tmp_path / "pki"
    run([bins / "sluice-bench", "test-pki", "--dir", pki])
    # os-ken listens with TLS only and requires the switch's certificate;
    # sluice dials it with its own identity and checks os-ken's.
    c = controller.start("learning_switch", env={"OSKEN_TLS_DIR": str(pki)})

    def tls_args(d):
        return ("--port", "p1", "--port", "p2", "--controller", "tls:127.0.0.1:6653",
                "--private-key", d / "switch-key.pem", "--certificate", d / "switch-cert.pem",
                "--ca-cert", d / "switch-ca.pem", "--fail-mode", "secure", "--run-dir", pki)

    s = sluice.start(*tls_args(pki))
    wait_until(10, "os-ken's table-miss flow to the controller (over TLS)", lambda: "actions=CONTROLLER" in s.flows())
    assert tb.ping_ok("h1", tb.ip(2))
    s.stop()
    assert "peer=tls:127.0.0.1:6653" in s.log
    # How many times the good switch connected (once, or again after a
    # reconnect on a loaded machine): the rogue one must add none.
    good = c.log.count("switch 0000000000000001 connected")
    assert good >= 1, "the switch never connected"
    # A switch whose certificate another CA signed is refused by os-ken.
    run([bins / "sluice-bench", "test-pki", "--dir", pki / "rogue"])
    rogue = sluice.start(*tls_args(pki / "rogue"))
    # os-ken refuses the handshake: sluice sees its connection closed.
    wait_until(10, "sluice's TLS connection with the rogue identity to be closed",
               lambda: "controller connection closed" in rogue.log)
    rogue.stop()
    c.stop()
    assert c.log.count("switch 0000000000000001 connected") == good, \
        "a switch with an identity from another CA got a connection"
    assert "packet in" in c.log
