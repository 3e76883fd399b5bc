"""Runs os-ken applications as a controller listening on a TCP port.

The PyPI os-ken package ships no `osken-manager` command, so this is the
few lines it would do: parse os-ken's own options, load the apps, serve.

    python run_osken.py PORT APP_MODULE [APP_MODULE...] [-- OS-KEN OPTIONS]

(options after `--` go to os-ken as they are, e.g. the switch test tool's
`--test-switch-dir`). With OSKEN_TOOL_FIXES=1, the fixes in tool_fixes.py
are applied to os-ken first.

With OSKEN_TLS_DIR set, it listens with TLS instead (os-ken's own
--ctl-privkey/--ctl-cert/--ca-certs, which require the switch's
certificate): controller-key.pem, controller-cert.pem and
controller-ca.pem from that directory.
"""
import os
import logging
import sys

from os_ken.lib import hub

hub.patch(thread=os.environ.get("OSKEN_PATCH_THREADS") == "1")

from os_ken import cfg  # noqa: E402
import os_ken.flags  # noqa: E402,F401  (registers the test tool's options)
import os_ken.log  # noqa: E402,F401  (registers log_file, which the test tool reads)
from os_ken.base import app_manager  # noqa: E402
import os_ken.controller.controller  # noqa: E402,F401  (registers the ofp options)


def _dump_stacks(*_):
    import gc
    import traceback
    import greenlet
    for ob in gc.get_objects():
        if isinstance(ob, greenlet.greenlet) and ob.gr_frame is not None:
            sys.stderr.write("--- greenlet %r\n" % ob)
            traceback.print_stack(ob.gr_frame, file=sys.stderr)
    sys.stderr.flush()


def main():
    if os.environ.get("OSKEN_DUMP_STACKS"):
        import signal
        signal.signal(signal.SIGUSR1, _dump_stacks)
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    port, apps = argv[0], argv[1:]
    if os.environ.get("OSKEN_TOOL_FIXES") == "1":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import tool_fixes
        tool_fixes.apply()
    logging.basicConfig(level=os.environ.get("OSKEN_LOG_LEVEL", "INFO"), stream=sys.stderr,
                        format="%(name)s: %(message)s")
    args = ["--ofp-listen-host", "127.0.0.1"]
    tls = os.environ.get("OSKEN_TLS_DIR")
    if tls:
        args += ["--ofp-ssl-listen-port", port,
                 "--ctl-privkey", os.path.join(tls, "controller-key.pem"),
                 "--ctl-cert", os.path.join(tls, "controller-cert.pem"),
                 "--ca-certs", os.path.join(tls, "controller-ca.pem")]
    else:
        args += ["--ofp-tcp-listen-port", port]
    cfg.CONF(args=args + extra, project="os_ken")
    app_manager.AppManager.run_apps(apps)


if __name__ == "__main__":
    main()
