"""Runs os-ken applications as a controller listening on a TCP port.

The PyPI os-ken package ships no `osken-manager` command, so this is the
few lines it would do: parse os-ken's own options, load the apps, serve.

    python run_osken.py PORT APP_MODULE [APP_MODULE...]
"""
import logging
import sys

from os_ken.lib import hub

hub.patch(thread=False)

from os_ken import cfg  # noqa: E402
from os_ken.base import app_manager  # noqa: E402
import os_ken.controller.controller  # noqa: E402,F401  (registers the ofp options)


def main():
    port, apps = sys.argv[1], sys.argv[2:]
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(name)s: %(message)s")
    cfg.CONF(args=["--ofp-tcp-listen-port", port, "--ofp-listen-host", "127.0.0.1"],
             project="os_ken")
    app_manager.AppManager.run_apps(apps)


if __name__ == "__main__":
    main()
