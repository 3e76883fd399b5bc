# End-to-end tests of sluice's Open vSwitch database (sluice --ovsdb),
# sourced by e2e.sh, which runs them: Open vSwitch's own clients, unchanged,
# drive the switch.
#
# Testbed: e2e.sh's (scripts/testbed.sh) with three hosts, h1..h3 on the
# switch namespace's p1..p3; sluice starts with no bridge and the database
# alone configures it. Every change a client makes is checked three ways:
# in the database (the switch's write-back: ofport, link_state, error,
# datapath_id, is_connected, cur_cfg through the clients' own waiting), in
# the switch (ovs-ofctl on the bridge's management socket) and by traffic
# (frames reach a port added within a second of the client returning;
# pings between hosts through NORMAL learning, fail_mode standalone).

# The database's socket and the clients, for the test that runs.
OVSDB_DIR=
vsctl() { ovs-vsctl --db="unix:$OVSDB_DIR/db.sock" --timeout=10 "$@"; }
ofctl() { ovs-ofctl -O OpenFlow13 "$@"; }
# ovs-ofctl on br0's management socket.
ofctl_br0() { ofctl "$1" "unix:$OVSDB_DIR/br0.mgmt" "${@:2}"; }
ports_shown() { ofctl_br0 show 2>/dev/null | grep -E '^ [0-9A-Z]+\('; }

# ovsdb_start PREFIX: the testbed (three hosts) and sluice serving its
# database in the switch namespace, no bridge yet.
ovsdb_start() {
    P=$1
    TESTBED_HOSTS=3 testbed_up "$P" || return 1
    # start_sluice's own run directory, named before it starts: the
    # database file, its socket and the bridges' management sockets.
    AUTO_RD=$(mktemp -d)
    OVSDB_DIR=$AUTO_RD
    # An empty configuration file: /etc/sluice/sluice.toml (make install
    # puts one there) must not add bridges of its own.
    : >"$OVSDB_DIR/empty.toml"
    start_sluice --config "$OVSDB_DIR/empty.toml" --ovsdb "punix:$OVSDB_DIR/db.sock" --ovsdb-file "$OVSDB_DIR/conf.db"
}

# no_ping FROM IP: true if a ping from host FROM to IP gets no answer
# within a second (a port deleted: the switch no longer delivers there).
no_ping() { ! ip netns exec "$P-$1" ping -c 1 -W 1 -q "$2" >/dev/null 2>&1; }

# timed_add WHAT CMD...: runs CMD, a client that adds h3's port p3, while
# h1 broadcasts a marked frame every 5 ms (from before CMD starts); fails
# unless CMD succeeds and h3 sees a frame within a second of CMD
# returning. Prints the figures: how long CMD took, and when the first
# frame came (from CMD's start: the frames can flow before CMD returns,
# since the clients wait for the switch to have applied the change).
# CMD's output is left in OVSDB_DIR/timed.out.
timed_add() {
    local what=$1 lis snd t_start t_end t_first rc
    shift
    ip netns exec "$P-h3" python3 tests/ovsdb/first_frame.py first eth0 5 >"$OVSDB_DIR/first" &
    lis=$!
    listening "$lis" "h3's frame listener" || { kill "$lis" 2>/dev/null; wait "$lis"; return 1; }
    ip netns exec "$P-h1" python3 tests/ovsdb/first_frame.py send eth0 8 >"$OVSDB_DIR/sent" &
    snd=$!
    # Sending before the client starts: what is timed is the switch.
    wait_until 5 "h1 to send its first marked frame" test -s "$OVSDB_DIR/sent" ||
        { kill "$lis" "$snd" 2>/dev/null; wait "$lis" "$snd"; return 1; }
    t_start=${EPOCHREALTIME/[.,]/}
    "$@" >"$OVSDB_DIR/timed.out" 2>&1
    rc=$?
    t_end=${EPOCHREALTIME/[.,]/}
    wait "$lis"
    local heard=$?
    kill "$snd" 2>/dev/null
    wait "$snd" 2>/dev/null
    if [ "$rc" -ne 0 ]; then
        echo "     $what failed ($rc): $(cat "$OVSDB_DIR/timed.out")"
        return 1
    fi
    if [ "$heard" -ne 0 ]; then
        echo "     no frame reached p3 within 5 s of $what"
        return 1
    fi
    t_first=$(tr -d '.' <"$OVSDB_DIR/first")
    echo "     $what: returned after $(((t_end - t_start) / 1000)) ms; first frame on p3 at $(((t_first - t_start) / 1000)) ms"
    if [ $((t_first - t_end)) -ge 1000000 ]; then
        echo "     the first frame came $(((t_first - t_end) / 1000)) ms after $what returned (1 s allowed)"
        return 1
    fi
}

# vsctl_is WANT ARGS...: ovs-vsctl ARGS succeeds and prints WANT.
vsctl_is() {
    local want=$1 got
    shift
    got=$(vsctl "$@" 2>&1)
    [ "$got" = "$want" ] && return 0
    echo "     ovs-vsctl $*: got '$got', wanted '$want'"
    return 1
}

test_ovsdb_ovs_vsctl_monitor_and_ofctl() {
    local r=0 mon mpid out mac cpid cuuid name="ovsdb: ovs-vsctl, ovsdb-client monitor and ovs-ofctl drive sluice; write-back; traffic"
    ovsdb_start sle2e$$ov || { finish "$name" 1; return; }
    mon=$OVSDB_DIR/monitor.out
    # ovsdb-client monitor, in the background for the whole test: the
    # Interface rows added and removed must show in what it prints.
    ip netns exec "$P-sw" ovsdb-client monitor "unix:$OVSDB_DIR/db.sock" Open_vSwitch Interface name ofport >"$mon" 2>&1 &
    mpid=$!

    # A bridge with a datapath id, its protocols and fail mode.
    vsctl add-br br0 -- set bridge br0 other-config:datapath-id=0000000000000042 || { echo "     add-br"; r=1; }
    vsctl_is br0 list-br || r=1
    vsctl br-exists br0 || { echo "     br-exists br0"; r=1; }
    vsctl_is '"0000000000000042"' get bridge br0 datapath_id || r=1
    vsctl set bridge br0 protocols=OpenFlow10,OpenFlow13 || { echo "     set protocols"; r=1; }
    vsctl_is '[OpenFlow10, OpenFlow13]' get bridge br0 protocols || r=1
    vsctl set-fail-mode br0 standalone || { echo "     set-fail-mode standalone"; r=1; }
    vsctl_is standalone get-fail-mode br0 || r=1
    ofctl_br0 show | grep -q "dpid:0000000000000042" || { echo "     ovs-ofctl show: $(ofctl_br0 show 2>&1 | head -3)"; r=1; }
    # The bridge's own interface, written back as Open vSwitch does.
    vsctl_is 65534 get interface br0 ofport || r=1
    wait_until 5 "ovsdb-client monitor to show br0's Interface" grep -q " br0 " "$mon" || r=1

    # Ports with the numbers asked for; the switch writes back what runs.
    vsctl add-port br0 p1 -- set interface p1 ofport_request=5 || { echo "     add-port p1"; r=1; }
    vsctl add-port br0 p2 -- set interface p2 ofport_request=6 || { echo "     add-port p2"; r=1; }
    vsctl_is 5 get interface p1 ofport || r=1
    vsctl_is 6 get interface p2 ofport || r=1
    vsctl_is up get interface p1 link_state || r=1
    vsctl_is up get interface p1 admin_state || r=1
    vsctl_is '[]' get interface p1 error || r=1
    vsctl_is 1500 get interface p1 mtu || r=1
    mac=$(ip netns exec "$P-sw" cat /sys/class/net/p1/address)
    vsctl_is "\"$mac\"" get interface p1 mac_in_use || r=1
    vsctl_is $'p1\np2' list-ports br0 || r=1
    vsctl_is br0 port-to-br p2 || r=1
    out=$(ports_shown)
    echo "$out" | grep -q "^ 5(p1): addr:$mac" && echo "$out" | grep -q "^ 6(p2):" ||
        { echo "     ovs-ofctl show: $out"; r=1; }
    ping_ok h1 "$TESTBED_NET.2" || { echo "     no ping h1 -> h2"; r=1; }

    # list, find, get.
    vsctl list interface p1 | grep -Eq '^ofport_request +: 5$' || { echo "     list interface p1: $(vsctl list interface p1)"; r=1; }
    vsctl_is p2 --bare --columns=name find interface ofport=6 || r=1
    out=$(vsctl --bare --columns=name find interface link_state=up type='""' | grep . | sort | tr '\n' ' ')
    [ "$out" = "p1 p2 " ] || { echo "     find interface link_state=up type=\"\": $out"; r=1; }
    vsctl_is '"0000000000000042"' get bridge br0 other-config:datapath-id || r=1

    # link_state follows the peer: wait-until sees it go down and up.
    ip netns exec "$P-h2" ip link set eth0 down
    vsctl --timeout=5 wait-until interface p2 link_state=down || { echo "     p2 never down: $(vsctl get interface p2 link_state)"; r=1; }
    ofctl_br0 dump-ports-desc | grep -A2 " 6(p2)" | grep -q LINK_DOWN || { echo "     ovs-ofctl: p2 not LINK_DOWN"; r=1; }
    ip netns exec "$P-h2" ip link set eth0 up
    vsctl --timeout=5 wait-until interface p2 link_state=up || { echo "     p2 never up again"; r=1; }

    # A port added while h1 broadcasts: frames reach it within a second.
    timed_add "ovs-vsctl add-port p3" vsctl add-port br0 p3 -- set interface p3 ofport_request=7 || r=1
    vsctl_is 7 get interface p3 ofport || r=1
    ports_shown | grep -q "^ 7(p3):" || { echo "     ovs-ofctl show lacks 7(p3): $(ports_shown)"; r=1; }
    ping_ok h1 "$TESTBED_NET.3" || { echo "     no ping h1 -> h3"; r=1; }
    vsctl del-port br0 p3 || { echo "     del-port p3"; r=1; }
    ports_shown | grep -q "(p3)" && { echo "     ovs-ofctl show still lists p3"; r=1; }
    out=$(vsctl get interface p3 ofport 2>&1) && { echo "     p3's Interface row is still there: $out"; r=1; }
    no_ping h1 "$TESTBED_NET.3" || { echo "     h3 still answers after del-port"; r=1; }

    # --id=@ references in one transaction: a QoS with a queue on p1
    # (OpenFlow shows the queue), a passive controller (a listener).
    out=$(vsctl -- set port p1 qos=@q -- --id=@q create qos type=linux-htb queues:1=@q1 \
        -- --id=@q1 create queue other-config:max-rate=10000000) || { echo "     QoS: $out"; r=1; }
    [ "$(echo "$out" | grep -c '^[0-9a-f-]\{36\}$')" = 2 ] || { echo "     QoS: two UUIDs expected: $out"; r=1; }
    ofctl queue-get-config "unix:$OVSDB_DIR/br0.mgmt" 5 | grep -q "queue 1:" ||
        { echo "     queue-get-config 5: $(ofctl queue-get-config "unix:$OVSDB_DIR/br0.mgmt" 5 2>&1)"; r=1; }
    vsctl -- --id=@c create controller target='"ptcp:6654:127.0.0.1"' -- set bridge br0 controller=@c >/dev/null ||
        { echo "     --id=@c create controller"; r=1; }
    vsctl_is ptcp:6654:127.0.0.1 get-controller br0 || r=1
    wait_until 5 "the bridge to listen on its ptcp controller target" tcp_listening "$P-sw" 6654 || r=1
    ip netns exec "$P-sw" ovs-ofctl -O OpenFlow13 show tcp:127.0.0.1:6654 | grep -q "dpid:0000000000000042" ||
        { echo "     ovs-ofctl over the ptcp target"; r=1; }

    # set-controller to an active target: the switch connects, and writes
    # is_connected and the role the controller asked for.
    ip netns exec "$P-sw" python3 tests/ovsdb/controller.py 6699 20 >"$OVSDB_DIR/controller.out" 2>&1 &
    cpid=$!
    wait_until 5 "the test controller to listen" tcp_listening "$P-sw" 6699 || r=1
    vsctl set-controller br0 tcp:127.0.0.1:6699 || { echo "     set-controller"; r=1; }
    vsctl_is tcp:127.0.0.1:6699 get-controller br0 || r=1
    cuuid=$(vsctl --bare --columns=_uuid find controller target='"tcp:127.0.0.1:6699"')
    vsctl --timeout=5 wait-until controller "$cuuid" is_connected=true role=master ||
        { echo "     controller: $(vsctl --columns=target,is_connected,role list controller)"; r=1; }
    grep -q "role master" "$OVSDB_DIR/controller.out" || { echo "     controller saw: $(cat "$OVSDB_DIR/controller.out")"; r=1; }
    vsctl del-controller br0 || { echo "     del-controller"; r=1; }
    vsctl_is "" get-controller br0 || r=1
    # The Controller rows are gone with their references.
    vsctl_is "" list controller || r=1
    wait "$cpid" 2>/dev/null

    # A VXLAN interface with options; one whose options do not hold gets
    # ofport -1 and its error, and ovs-vsctl says so.
    vsctl add-port br0 vx0 -- set interface vx0 type=vxlan options:remote_ip="$TESTBED_NET.250" \
        options:key=5000 options:dst_port=4789 ofport_request=10 || { echo "     add-port vx0"; r=1; }
    vsctl_is 10 get interface vx0 ofport || r=1
    vsctl_is '[]' get interface vx0 error || r=1
    vsctl_is '"5000"' get interface vx0 options:key || r=1
    ports_shown | grep -q "^ 10(vx0):" || { echo "     ovs-ofctl show lacks 10(vx0)"; r=1; }
    out=$(vsctl add-port br0 vx9 -- set interface vx9 type=vxlan options:key=abc 2>&1)
    echo "$out" | grep -q "Error detected while setting up 'vx9'" || { echo "     add-port vx9 said: $out"; r=1; }
    vsctl_is -1 get interface vx9 ofport || r=1
    vsctl get interface vx9 error | grep -q abc || { echo "     vx9 error: $(vsctl get interface vx9 error)"; r=1; }
    vsctl del-port vx9 -- del-port br0 vx0 || { echo "     del-port vx9, vx0"; r=1; }
    ports_shown | grep -q "(vx" && { echo "     ovs-ofctl still lists a vx port"; r=1; }

    # fail_mode secure rebuilds the bridge: no flow, no traffic, until a
    # flow from ovs-ofctl; the port numbers stay.
    vsctl set-fail-mode br0 secure || { echo "     set-fail-mode secure"; r=1; }
    vsctl_is secure get-fail-mode br0 || r=1
    no_ping h1 "$TESTBED_NET.2" || { echo "     secure bridge without flows forwards"; r=1; }
    ofctl_br0 add-flow "priority=0,actions=NORMAL" || { echo "     ovs-ofctl add-flow"; r=1; }
    ofctl_br0 dump-flows | grep -q "actions=NORMAL" || { echo "     dump-flows: $(ofctl_br0 dump-flows 2>&1)"; r=1; }
    ping_ok h1 "$TESTBED_NET.2" || { echo "     no ping h1 -> h2 with a NORMAL flow"; r=1; }
    vsctl_is 5 get interface p1 ofport || r=1

    # del-br: the bridge, its rows and its management socket go.
    vsctl del-br br0 || { echo "     del-br"; r=1; }
    vsctl_is "" list-br || r=1
    vsctl_is "" --bare --columns=name list interface || r=1
    ofctl_br0 show >/dev/null 2>&1 && { echo "     br0's management socket still answers"; r=1; }
    no_ping h1 "$TESTBED_NET.2" || { echo "     traffic after del-br"; r=1; }
    # QoS and Queue are root tables: they outlive the bridge, as in Open
    # vSwitch, until destroyed.
    vsctl_is linux-htb --bare --columns=type list qos || r=1
    vsctl -- --all destroy qos -- --all destroy queue || { echo "     destroy qos, queue"; r=1; }
    vsctl_is "" list queue || r=1

    # What ovsdb-client monitor saw: p3 inserted, given its number,
    # deleted; everything deleted with the bridge.
    wait_until 5 "ovsdb-client monitor to show br0's deletion" grep -Eq "delete +br0 +65534" "$mon" || r=1
    kill "$mpid" 2>/dev/null
    wait "$mpid" 2>/dev/null
    grep -Eq "insert +p3 " "$mon" && grep -Eq "new +p3 +7$" "$mon" && grep -Eq "delete +p3 +7$" "$mon" &&
        grep -Eq "delete +p1 +5$" "$mon" ||
        { echo "     ovsdb-client monitor printed:"; sed 's/^/       /' "$mon"; r=1; }
    finish "$name" $r
}

test_ovsdb_python_idl_and_ovsdbapp() {
    local r=0 db name="ovsdb: the Python IDL (PyPI and Debian) and ovsdbapp add and remove ports"
    ovsdb_start sle2e$$oy || { finish "$name" 1; return; }
    db=unix:$OVSDB_DIR/db.sock
    vsctl add-br br0 -- add-port br0 p1 -- set interface p1 ofport_request=5 || { echo "     add-br, add-port p1"; r=1; }
    local py=.venv/bin/python
    [ -x "$py" ] || { echo "     $py missing (scripts/setup.sh makes it)"; finish "$name" 1; return; }

    # The Python IDL (PyPI's ovs, pinned in tests/ovsdb/requirements.txt).
    timed_add "the Python IDL's insert of p3" $py tests/ovsdb/clients.py idl-add-port "$db" br0 p3 8 || r=1
    grep -qx "p3: ofport=8 link_state=up" "$OVSDB_DIR/timed.out" || { echo "     IDL: $(cat "$OVSDB_DIR/timed.out")"; r=1; }
    ports_shown | grep -q "^ 8(p3):" || { echo "     ovs-ofctl show lacks 8(p3): $(ports_shown)"; r=1; }
    ping_ok h1 "$TESTBED_NET.3" || { echo "     no ping h1 -> h3 (IDL)"; r=1; }
    out=$($py tests/ovsdb/clients.py idl-del-port "$db" br0 p3 2>&1) || { echo "     IDL delete: $out"; r=1; }
    ports_shown | grep -q "(p3)" && { echo "     ovs-ofctl show still lists p3 (IDL)"; r=1; }
    no_ping h1 "$TESTBED_NET.3" || { echo "     h3 still answers after the IDL's delete"; r=1; }

    # Debian's python3-openvswitch, the same transactions (for h2).
    out=$(/usr/bin/python3 tests/ovsdb/clients.py idl-add-port "$db" br0 p2 12 2>&1) || { echo "     Debian IDL: $out"; r=1; }
    ports_shown | grep -q "^ 12(p2):" || { echo "     ovs-ofctl show lacks 12(p2): $(ports_shown)"; r=1; }
    ping_ok h1 "$TESTBED_NET.2" || { echo "     no ping h1 -> h2 (Debian IDL)"; r=1; }
    out=$(/usr/bin/python3 tests/ovsdb/clients.py idl-del-port "$db" br0 p2 2>&1) || { echo "     Debian IDL delete: $out"; r=1; }
    ports_shown | grep -q "(p2)" && { echo "     ovs-ofctl show still lists p2"; r=1; }

    # ovsdbapp, as Neutron's agent adds and removes a VM's port.
    timed_add "ovsdbapp's add_port p3" $py tests/ovsdb/clients.py ovsdbapp-add-port "$db" br0 p3 9 || r=1
    grep -qx "p3: ofport=9 link_state=up ports=p1,p3" "$OVSDB_DIR/timed.out" || { echo "     ovsdbapp: $(cat "$OVSDB_DIR/timed.out")"; r=1; }
    ports_shown | grep -q "^ 9(p3):" || { echo "     ovs-ofctl show lacks 9(p3): $(ports_shown)"; r=1; }
    ping_ok h1 "$TESTBED_NET.3" || { echo "     no ping h1 -> h3 (ovsdbapp)"; r=1; }
    vsctl_is 9 get interface p3 ofport || r=1
    out=$($py tests/ovsdb/clients.py ovsdbapp-del-port "$db" br0 p3 2>&1) || { echo "     ovsdbapp del_port: $out"; r=1; }
    ports_shown | grep -q "(p3)" && { echo "     ovs-ofctl show still lists p3 (ovsdbapp)"; r=1; }
    no_ping h1 "$TESTBED_NET.3" || { echo "     h3 still answers after del_port"; r=1; }
    vsctl_is p1 list-ports br0 || r=1
    finish "$name" $r
}
