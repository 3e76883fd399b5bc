"""Patch and internal ports as the database describes them (ovs-vsctl), on
sluice (sluice --ovsdb) and, to compare, on Open vSwitch (bridges of
datapath_type netdev, which is what sluice is).

Two bridges, bra (p1, h1) and brb (p2, h2), joined by a patch pair: h1
pings h2 across both bridges' NORMAL; an unpaired patch port runs (an
ofport, link up) and its Interface `error` says why, as Open vSwitch
writes it; malformed ones are refused with Open vSwitch's words; the pair
stops carrying when one end goes. An internal port is a TAP device of its
name in the switch's namespace: the host's stack there reaches h1 through
the bridge."""
import pytest

from lab import run, wait_until


class Switch:
    """ovs-vsctl on one switch's database."""

    def __init__(self, kind, vsctl):
        self.kind, self._vsctl = kind, vsctl

    def vsctl(self, *args, check=True):
        p = self._vsctl(*args)
        if check:
            assert p.returncode == 0, f"{self.kind}: ovs-vsctl {' '.join(args)}: {p.stdout}{p.stderr}"
        return p

    def get(self, iface, col):
        return self.vsctl("get", "interface", iface, col).stdout.strip()

    def wait_col(self, iface, col, want):
        wait_until(10, f"{self.kind}: {iface}'s {col} to be {want}",
                   lambda: self.get(iface, col) == want)

    def add_br(self, br):
        self.vsctl("add-br", br, "--", "set", "bridge", br, "datapath_type=netdev")


@pytest.fixture(params=["sluice", "ovs"])
def switch(request, testbed, need, tmp_path):
    need("ovs-vsctl", "openvswitch-common")
    if request.param == "ovs":
        o = request.getfixturevalue("ovs").start()
        return Switch("ovs", lambda *a: o.vsctl(*a, check=False))
    rd = tmp_path / "run"
    rd.mkdir()
    (rd / "empty.toml").write_text("")
    request.getfixturevalue("sluice").start(
        "--config", rd / "empty.toml", "--ovsdb", f"punix:{rd}/db.sock", "--ovsdb-file", rd / "conf.db",
        "--run-dir", rd)
    return Switch("sluice", lambda *a: run(["ovs-vsctl", f"--db=unix:{rd}/db.sock", "--timeout=10", *a],
                                           check=False))


def test_patch_pair_joins_two_bridges(testbed, switch):
    tb, s = testbed, switch
    s.add_br("bra")
    s.add_br("brb")
    s.vsctl("add-port", "bra", "p1")
    s.vsctl("add-port", "brb", "p2")
    # ovn-controller's names: longer than an interface's.
    pa, pb = "patch-bra-to-brb-longer-than-15", "patch-brb-to-bra"
    s.vsctl("add-port", "bra", pa, "--", "set", "interface", pa, "type=patch", f"options:peer={pb}")
    s.vsctl("add-port", "brb", pb, "--", "set", "interface", pb, "type=patch", f"options:peer={pa}")
    wait_until(15, f"{s.kind}: h1 to ping h2 across the patch pair", lambda: tb.ping_ok("h1", tb.ip(2), count=1))
    assert tb.ping_ok("h1", tb.ip(2)), f"{s.kind}: no ping h1 -> h2 through bra, the patch pair and brb"
    for p in (pa, pb):
        assert int(s.get(p, "ofport")) > 0, f"{s.kind}: {p} has no ofport"
        assert s.get(p, "error") == "[]", f"{s.kind}: {p}: {s.get(p, 'error')}"
        assert s.get(p, "link_state") == "up"
        assert s.get(p, "admin_state") == "up"
        assert s.get(p, "type") == "patch"

    # Unpaired: it runs, carrying nothing, and says why.
    s.vsctl("add-port", "bra", "lone", "--", "set", "interface", "lone", "type=patch", "options:peer=nobody")
    s.wait_col("lone", "error", '"No usable peer \'nobody\' exists in \'netdev\' datapath."')
    assert int(s.get("lone", "ofport")) > 0, f"{s.kind}: an unpaired patch port has its number"
    assert s.get("lone", "link_state") == "up"
    # A peer that names another port.
    s.vsctl("add-port", "brb", "wrong", "--", "set", "interface", "wrong", "type=patch", f"options:peer={pa}")
    s.wait_col("wrong", "error", f'"No usable peer \'{pa}\' exists in \'netdev\' datapath."')
    # Malformed: refused with Open vSwitch's words, no number
    # (ovs-vsctl says "Error detected while setting up").
    for name, opts, said in (("nopeer", [], "nopeer: patch type requires valid 'peer' argument"),
                             ("selfp", ["options:peer=selfp"], "selfp: patch peer must not be self"),
                             ("extra", ["options:peer=x", "options:foo=1"],
                              "extra: patch type takes only a 'peer' argument")):
        s.vsctl("add-port", "bra", name, "--", "set", "interface", name, "type=patch", *opts, check=False)
        s.wait_col(name, "error", f'"{said}"')
        assert s.get(name, "ofport") == "-1", f"{s.kind}: {name}"
    # The pair still carries.
    assert tb.ping_ok("h1", tb.ip(2)), f"{s.kind}: the other patch ports broke the pair"

    # One end goes: the other is unpaired, and nothing crosses.
    s.vsctl("del-port", "brb", pb)
    s.wait_col(pa, "error", f'"No usable peer \'{pb}\' exists in \'netdev\' datapath."')
    assert tb.no_ping("h1", tb.ip(2)), f"{s.kind}: h1 still reaches h2 with one patch port gone"
    # It comes back: paired again.
    s.vsctl("add-port", "brb", pb, "--", "set", "interface", pb, "type=patch", f"options:peer={pa}")
    s.wait_col(pa, "error", "[]")
    wait_until(15, f"{s.kind}: h1 to ping h2 again", lambda: tb.ping_ok("h1", tb.ip(2), count=1))


def test_internal_port_is_a_tap_device_of_its_name(testbed, switch):
    tb, s = testbed, switch
    s.add_br("bra")
    s.vsctl("add-port", "bra", "p1")
    s.vsctl("add-port", "bra", "int0", "--", "set", "interface", "int0", "type=internal")
    assert int(s.get("int0", "ofport")) > 0, f"{s.kind}: int0 has no ofport"
    assert s.get("int0", "error") == "[]", f"{s.kind}: {s.get('int0', 'error')}"
    wait_until(10, f"{s.kind}: int0's device", lambda: tb.x("sw", "ip", "link", "show", "int0", check=False).returncode == 0)
    mac = tb.mac("sw", "int0")
    s.wait_col("int0", "mac_in_use", f'"{mac}"')
    assert int(s.get("int0", "ifindex")) > 0
    tb.x("sw", "ip", "addr", "add", f"{tb.ip(100)}/24", "dev", "int0")
    tb.x("sw", "ip", "link", "set", "int0", "up")
    wait_until(15, f"{s.kind}: the switch's host to ping h1 through int0",
               lambda: tb.ping_ok("sw", tb.ip(1), count=1))
    assert tb.ping_ok("h1", tb.ip(100)), f"{s.kind}: no ping h1 -> int0"
    # Deleted from the database: the device goes.
    s.vsctl("del-port", "bra", "int0")
    wait_until(10, f"{s.kind}: int0's device to go",
               lambda: tb.x("sw", "ip", "link", "show", "int0", check=False).returncode != 0)
