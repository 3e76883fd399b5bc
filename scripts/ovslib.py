"""What the scripts that run a private Open vSwitch share (corpus.py,
ovs_diff.py): stopping the daemons they started, by the pid files in
their run directory, and nothing else."""

import os
import signal
import time


def stop_daemons(run_dir, names=("ovs-vswitchd", "ovsdb-server"), wait_s=5.0):
    """SIGTERM each daemon whose pid file is in run_dir, and wait (at most
    wait_s each) until it is gone."""
    for name in names:
        path = os.path.join(run_dir, name + ".pid")
        try:
            with open(path) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
