#!/usr/bin/env python3
"""Open vSwitch's Python database clients against sluice --ovsdb, for the
end-to-end test (tests/e2e/test_ovsdb.py), one action a run:

  clients.py idl-add-port REMOTE BRIDGE PORT OFPORT
  clients.py idl-del-port REMOTE BRIDGE PORT
      The Python IDL (PyPI or Debian `ovs`): a transaction that inserts the
      Interface (with ofport_request) and the Port and adds the Port to
      the bridge, increments next_cfg as ovs-vsctl does, then waits in
      its replica for cur_cfg to catch up and for the Interface's ofport
      to be OFPORT (the switch's write-back). Deleting removes the Port
      from the bridge (the rows are garbage-collected) and waits for the
      Interface to leave the replica.
  clients.py ovsdbapp-add-port REMOTE BRIDGE PORT OFPORT
  clients.py ovsdbapp-del-port REMOTE BRIDGE PORT
      ovsdbapp (OpenStack's library, as Neutron's agents use it):
      add_port and db_set of ofport_request in one transaction (which
      waits for cur_cfg), then list_ports and db_get of the ofport until
      the switch wrote it; del_port, then list_ports without it.

Prints what it saw on stdout; exits 1 with a reason when something is
not as expected or takes longer than the timeout (10 s).
"""
import sys
import time
import warnings

# ovs's poller imports eventlet when it is installed (os-ken brings it)
# and eventlet warns that it is deprecated: noise in the test's output.
warnings.filterwarnings("ignore", message="(?s).*eventlet is deprecated")

TIMEOUT = 10.0


def fail(msg):
    print(f"clients.py: {msg}", file=sys.stderr)
    sys.exit(1)


# The Python IDL, as a program of its own would use it.


def idl_open(remote):
    import ovs.db.idl
    import ovs.jsonrpc
    import ovs.stream

    # The schema from the server (get_schema), as ovsdbapp does too.
    err, stream = ovs.stream.Stream.open_block(ovs.stream.Stream.open(remote), TIMEOUT * 1000)
    if err:
        fail(f"cannot connect to {remote}: {err}")
    rpc = ovs.jsonrpc.Connection(stream)
    err, reply = rpc.transact_block(ovs.jsonrpc.Message.create_request("get_schema", ["Open_vSwitch"]))
    rpc.close()
    if err or reply.error:
        fail(f"get_schema: {err or reply.error}")
    helper = ovs.db.idl.SchemaHelper(None, reply.result)
    helper.register_all()
    idl = ovs.db.idl.Idl(remote, helper)
    idl_run_until(idl, lambda: idl.has_ever_connected() and idl.tables["Open_vSwitch"].rows, "the initial contents")
    return idl


def idl_run_until(idl, cond, what):
    import ovs.poller

    deadline = time.monotonic() + TIMEOUT
    while True:
        idl.run()
        if cond():
            return
        left = deadline - time.monotonic()
        if left <= 0:
            fail(f"timed out after {TIMEOUT} s waiting for {what}")
        poller = ovs.poller.Poller()
        idl.wait(poller)
        poller.timer_wait(int(min(left, 0.5) * 1000))
        poller.block()


def idl_commit(idl, build, what):
    """Builds a transaction with build(txn, root) and commits it; waits
    for cur_cfg to reach the next_cfg it set. Retries on TRY_AGAIN (the
    replica was behind), as ovs-vsctl does."""
    import ovs.db.idl

    deadline = time.monotonic() + TIMEOUT
    while True:
        root = next(iter(idl.tables["Open_vSwitch"].rows.values()))
        txn = ovs.db.idl.Transaction(idl)
        txn.add_comment(f"clients.py: {what}")
        build(txn, root)
        root.increment("next_cfg")
        status = txn.commit_block()
        if status == ovs.db.idl.Transaction.SUCCESS:
            break
        if status != ovs.db.idl.Transaction.TRY_AGAIN or time.monotonic() > deadline:
            fail(f"{what}: transaction {ovs.db.idl.Transaction.status_to_string(status)}: {txn.get_error()}")
        idl_run_until(idl, lambda: True, "the replica")
    next_cfg = txn.get_increment_new_value()
    idl_run_until(
        idl,
        lambda: next(iter(idl.tables["Open_vSwitch"].rows.values())).cur_cfg >= next_cfg,
        f"cur_cfg to reach {next_cfg} (the switch applied {what})",
    )
    return txn


def bridge_row(idl, bridge):
    for b in idl.tables["Bridge"].rows.values():
        if b.name == bridge:
            return b
    fail(f"no bridge {bridge} in the replica")


def iface_row(idl, name):
    for i in idl.tables["Interface"].rows.values():
        if i.name == name:
            return i
    return None


def idl_add_port(remote, bridge, port, ofport):
    idl = idl_open(remote)
    br = bridge_row(idl, bridge)

    def build(txn, _root):
        iface = txn.insert(idl.tables["Interface"])
        iface.name = port
        iface.ofport_request = ofport
        p = txn.insert(idl.tables["Port"])
        p.name = port
        p.interfaces = [iface]
        br.addvalue("ports", p.uuid)

    idl_commit(idl, build, f"add port {port}")
    idl_run_until(
        idl,
        lambda: (i := iface_row(idl, port)) is not None and i.ofport == [ofport],
        f"the switch to write ofport {ofport} for {port}",
    )
    i = iface_row(idl, port)
    if i.error:
        fail(f"{port}: error {i.error}")
    print(f"{port}: ofport={i.ofport[0]} link_state={i.link_state[0] if i.link_state else '-'}")
    idl.close()


def idl_del_port(remote, bridge, port):
    idl = idl_open(remote)
    br = bridge_row(idl, bridge)
    ports = [p for p in br.ports if p.name == port]
    if not ports:
        fail(f"no port {port} on {bridge}")

    def build(_txn, _root):
        br.delvalue("ports", ports[0].uuid)

    idl_commit(idl, build, f"delete port {port}")
    idl_run_until(idl, lambda: iface_row(idl, port) is None, f"{port}'s Interface row to be collected")
    print(f"{port}: deleted")
    idl.close()


# ovsdbapp, as Neutron's OVS agent uses it.


def ovsdbapp_api(remote):
    from ovsdbapp.backend.ovs_idl import connection
    from ovsdbapp.schema.open_vswitch import impl_idl

    idl = connection.OvsdbIdl.from_server(remote, "Open_vSwitch")
    conn = connection.Connection(idl=idl, timeout=TIMEOUT)
    return impl_idl.OvsdbIdl(conn)


def poll(fn, what):
    deadline = time.monotonic() + TIMEOUT
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            fail(f"timed out after {TIMEOUT} s waiting for {what}")
        time.sleep(0.02)


def ovsdbapp_add_port(remote, bridge, port, ofport):
    api = ovsdbapp_api(remote)
    with api.transaction(check_error=True) as txn:
        txn.add(api.add_port(bridge, port))
        txn.add(api.db_set("Interface", port, ("ofport_request", ofport)))
    ports = api.list_ports(bridge).execute(check_error=True)
    if port not in ports:
        fail(f"list_ports {bridge}: {ports} lacks {port}")
    # As Neutron's ovs_lib reads a new port's number: until it is set.
    got = poll(
        lambda: (v := api.db_get("Interface", port, "ofport").execute(check_error=True)) not in ([], -1, None) and v,
        f"{port}'s ofport",
    )
    if got != ofport:
        fail(f"{port}: ofport {got}, wanted {ofport}")
    err = api.db_get("Interface", port, "error").execute(check_error=True)
    if err:
        fail(f"{port}: error {err}")
    link = api.db_get("Interface", port, "link_state").execute(check_error=True)
    print(f"{port}: ofport={got} link_state={link or '-'} ports={','.join(sorted(ports))}")
    api.ovsdb_connection.stop()


def ovsdbapp_del_port(remote, bridge, port):
    api = ovsdbapp_api(remote)
    api.del_port(port, bridge, if_exists=False).execute(check_error=True)
    ports = api.list_ports(bridge).execute(check_error=True)
    if port in ports:
        fail(f"list_ports {bridge} after del_port: {ports}")
    rows = api.db_find("Interface", ("name", "=", port)).execute(check_error=True)
    if rows:
        fail(f"{port}'s Interface row is still there: {rows}")
    print(f"{port}: deleted ports={','.join(sorted(ports))}")
    api.ovsdb_connection.stop()


def main():
    if len(sys.argv) < 5:
        fail(__doc__)
    action, remote, bridge, port = sys.argv[1:5]
    ofport = int(sys.argv[5]) if len(sys.argv) > 5 else None
    actions = {
        "idl-add-port": lambda: idl_add_port(remote, bridge, port, ofport),
        "idl-del-port": lambda: idl_del_port(remote, bridge, port),
        "ovsdbapp-add-port": lambda: ovsdbapp_add_port(remote, bridge, port, ofport),
        "ovsdbapp-del-port": lambda: ovsdbapp_del_port(remote, bridge, port),
    }
    if action not in actions:
        fail(f"unknown action {action}")
    actions[action]()


if __name__ == "__main__":
    main()
