"""Fixtures of the end-to-end tests (tests/e2e/README.md says how to use them).

  testbed      namespaces PREFIX-sw and PREFIX-h1..hN (N=2, or the test's
               @pytest.mark.hosts(N)), torn down after the test, pass or fail
  sluice       start(*args): a sluice daemon in PREFIX-sw, ready (READY=1)
  ovs          start(where="sw"): Open vSwitch (ovsdb-server, ovs-vswitchd)
  controller   start(app, ...): os-ken running an app of tests/controller
  bins         the directory of sluice, sluice-ctl, sluice-bench

The binaries come from SLUICE_BIN_DIR; without it, from
${CARGO_TARGET_DIR:-target}/release, built first (cargo build --release).
"""
import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import lab

_prefixes = itertools.count(1)


def pytest_configure(config):
    config.addinivalue_line("markers", "hosts(n): the testbed has n hosts (default 2)")


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    if os.environ.get("CI") == "true":
        raise pytest.UsageError("e2e: CI runs as root; refusing to skip")
    skip = pytest.mark.skip(reason="needs root (network namespaces)")
    for item in items:
        item.add_marker(skip)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries the output of what it started (the
    sluice daemons, controllers, peers), each as a section of its own."""
    rep = yield
    if rep.failed and call.when in ("call", "setup"):
        for title, read in getattr(item, "e2e_logs", []):
            try:
                text = read()
            except Exception as e:  # noqa: BLE001 (the report must go on)
                text = f"(could not read: {e})"
            rep.sections.append((title, text or "(empty)"))
    return rep


def _add_log(request, title, read):
    if not hasattr(request.node, "e2e_logs"):
        request.node.e2e_logs = []
    request.node.e2e_logs.append((title, read))


@pytest.fixture(scope="session")
def bins():
    given = os.environ.get("SLUICE_BIN_DIR")
    if given:
        d = Path(given).resolve()
    else:
        d = (lab.REPO / os.environ.get("CARGO_TARGET_DIR", "target") / "release").resolve()
        subprocess.run(
            ["cargo", "build", "-q", "--release", "-p", "sluice", "-p", "ctl", "-p", "bench"],
            cwd=lab.REPO, check=True,
        )
    for b in ("sluice", "sluice-ctl", "sluice-bench"):
        if not (d / b).exists():
            raise pytest.UsageError(f"e2e: {d / b} missing")
    return d


@pytest.fixture
def prefix():
    """A namespace prefix of the test's own."""
    return f"se{os.getpid() % 100000}n{next(_prefixes)}"


@pytest.fixture
def make_testbed(prefix):
    """make_testbed(hosts=2, name=None): a testbed (several per test get
    prefixes PREFIX, PREFIX-b, ...); all torn down after the test."""
    made = []

    def make(hosts=2, net=lab.NET):
        p = prefix if not made else f"{prefix}{chr(ord('a') + len(made))}"
        tb = lab.Testbed(p, hosts=hosts, net=net)
        made.append(tb)
        return tb.up()

    yield make
    for tb in reversed(made):
        tb.down()


@pytest.fixture
def testbed(request, make_testbed):
    m = request.node.get_closest_marker("hosts")
    return make_testbed(hosts=m.args[0] if m else 2)


@pytest.fixture
def workdir(tmp_path):
    return tmp_path


@pytest.fixture
def sluice(request, bins, tmp_path):
    """sluice.start(*args, where="sw", tb=None, env=None, run_dir=None): a
    daemon in namespace `where` of testbed `tb` (the test's `testbed` if
    None), ready; sluice.last is the latest, sluice.all every one. All
    stopped after the test, by PID."""
    daemons = []

    class Factory:
        last = None
        all = daemons

        def start(self, *args, where="sw", tb=None, env=None, run_dir=None, ready=True):
            tb = tb or request.getfixturevalue("testbed")
            d = tmp_path / f"sluice{len(daemons) + 1}"
            d.mkdir()
            s = lab.Sluice(bins, tb.ns(where), args, d, run_dir=run_dir, env=env)
            daemons.append(s)
            _add_log(request, f"sluice {len(daemons)} ({' '.join(s.args)})", lambda: s.log)
            Factory.last = s
            if ready:
                s.start()
            return s

    yield Factory()
    for s in reversed(daemons):
        s.stop()


@pytest.fixture
def ovs(request, tmp_path):
    """ovs.start(where="sw", tb=None): Open vSwitch with a private run
    directory, in namespace `where` of testbed `tb` (the test's `testbed`
    if None); stopped after the test, by PID."""
    peers = []

    class Factory:
        def start(self, where="sw", tb=None):
            tb = tb or request.getfixturevalue("testbed")
            d = tmp_path / f"ovs{len(peers) + 1}"
            d.mkdir()
            o = lab.Ovs(tb.ns(where), d)
            peers.append(o)
            _add_log(request, f"ovs-vswitchd {len(peers)}", lambda: _tail(d / "vswitchd.log"))
            return o.start()

    yield Factory()
    for o in reversed(peers):
        o.stop()


@pytest.fixture
def controller(request, tmp_path):
    """controller.start(app, where="sw", port=6653, env=None, pythonpath=(),
    tb=None): os-ken running `app`, listening; stopped after the test, by
    PID."""
    started = []

    class Factory:
        def start(self, app, where="sw", port=6653, env=None, pythonpath=(), tb=None):
            tb = tb or request.getfixturevalue("testbed")
            c = lab.Osken(tb, app, tmp_path / f"osken{len(started) + 1}.log", where, port, env, pythonpath)
            started.append(c)
            _add_log(request, f"os-ken {app}", lambda: _tail(c.log_path))
            return c.start()

    yield Factory()
    for c in reversed(started):
        c.stop()


def _tail(path, lines=60):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return "(none)"


@pytest.fixture
def need():
    """need(tool, package): fails (never skips) when tool is missing."""
    return lab.need


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    # The helpers are named relative to the repository, as in scripts/.
    monkeypatch.chdir(lab.REPO)


def which(tool):
    return shutil.which(tool)
