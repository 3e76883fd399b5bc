//! The whole switch in one thread, at times the test chooses: the OpenFlow
//! agent driving a bridge of memory ports, its worker run round by round
//! (`BridgeWorker::poll_once`) with a hand-set clock. Controller bytes go
//! in, frames and OpenFlow messages come out; no thread, no sleep, no
//! socket.
//!
//! What it shows: a FLOW_MOD's bytes become forwarding at the next round
//! after the barrier; PORT_STATUS for ports added and links changed;
//! FLOW_REMOVED when the clock passes an idle timeout, at the time
//! `poll_timeout` announced; standalone fail mode (NORMAL while no
//! controller, the tables left to the controller once one completes the
//! handshake, NORMAL back when it leaves); a reload's static flow; a
//! PACKET_IN and a PACKET_OUT through the bridge's channels.

use agent::{Agent, ConnId, Event, LocalChange};
use bytes::Bytes;
use datapath::clock::Clock;
use datapath::{Backend, Bridge, BridgeWorker, NewPort, PortSpec};
use netdev::memory::{MemoryPort, Wire};
use ofp::msg::simple::{Hello, PortReason};
use ofp::Message;
use pipeline::{Config, Pipeline};

const S: u64 = 1_000_000_000;

/// The switch: the agent (owning the bridge) and the bridge's worker.
struct Switch {
    agent: Agent<Bridge>,
    worker: BridgeWorker,
    wires: Vec<Wire>,
    now: u64,
}

impl Switch {
    /// A one-worker bridge with memory ports 1..=n, at time 1 s.
    fn new(n: u32) -> Switch {
        Switch::named("br0", n)
    }

    /// [`Switch::new`] of bridge `name`.
    fn named(name: &str, n: u32) -> Switch {
        let mut p = Pipeline::new(Config::default());
        let mut bridge = Bridge::new(name, 1, p.snapshot(), false).unwrap();
        let mut worker = bridge.take_workers().remove(0);
        let (clock, _) = Clock::manual(0);
        worker.set_clock(clock);
        let mut sw = Switch {
            agent: Agent::new(1, p, bridge, name),
            worker,
            wires: Vec::new(),
            now: S,
        };
        for no in 1..=n {
            sw.add_port(no);
        }
        sw
    }

    /// Adds memory port `no` through the agent (the bridge takes its
    /// device; controllers hear of it).
    fn add_port(&mut self, no: u32) {
        let (dev, wire) = MemoryPort::new(&format!("m{no}"));
        let spec = PortSpec::new(no, &format!("m{no}"), Backend::AfPacket { rings: true });
        let port = NewPort::with_devices(spec, vec![Box::new(dev)]);
        self.agent.handle_add_port(port, self.now).unwrap();
        self.wires.push(wire);
    }

    /// One worker round at the current time; then what the bridge sent
    /// the agent (PACKET_INs) is handed over, as the daemon does.
    fn round(&mut self) {
        self.worker.poll_once(self.now);
        let ch = self.agent.datapath().channels.clone();
        while let Some(m) = ch.packet_in.pop() {
            self.agent.handle_packet_in_tunneled(
                m.in_port,
                &m.tunnel,
                m.ctl,
                Bytes::from(m.frame),
                self.now,
            );
        }
    }

    /// Frame `f` arrives on port `no`; one round; the frames each port
    /// sent, by port number 1..
    fn send(&mut self, no: u32, f: &[u8]) -> Vec<usize> {
        self.wires[no as usize - 1].inject(f);
        self.round();
        self.wires.iter().map(|w| w.take_sent().len()).collect()
    }

    fn at(&mut self, t: u64) {
        self.now = t;
        self.agent.handle_timeout(t);
    }

    /// A controller: HELLO and FEATURES_REQUEST (the handshake that ends
    /// standalone mode).
    fn controller(&mut self) -> ConnId {
        let id = self.agent.connect(self.now);
        self.input(id, &Message::Hello(Hello::ours()));
        self.input(id, &Message::FeaturesRequest);
        self.output(id);
        id
    }

    fn input(&mut self, id: ConnId, m: &Message) {
        assert!(self.agent.handle_input(id, &m.to_bytes(7), self.now));
    }

    /// Everything the agent sent on `id`, decoded, but its inactivity
    /// probes (ECHO_REQUEST: the test's controller is silent for seconds).
    fn output(&mut self, id: ConnId) -> Vec<Message> {
        let out = self.agent.poll_transmit(id).unwrap_or_default().to_vec();
        self.agent.transmitted(id, out.len());
        let mut v = Vec::new();
        let mut at = 0;
        while at < out.len() {
            let len = u16::from_be_bytes([out[at + 2], out[at + 3]]) as usize;
            let (_, m) = Message::decode(&Bytes::copy_from_slice(&out[at..at + len])).unwrap();
            if !matches!(m, Message::EchoRequest(_)) {
                v.push(m);
            }
            at += len;
        }
        v
    }

    fn flow(&mut self, id: ConnId, text: &str) {
        let fm = ofp::text::parse_flow_mod(text).unwrap();
        self.input(id, &Message::FlowMod(fm));
        self.input(id, &Message::BarrierRequest);
        let out = self.output(id);
        assert!(matches!(out.last(), Some(Message::BarrierReply)), "{out:?}");
    }
}

/// An Ethernet frame from `src` to `dst` (the last byte of each MAC),
/// of the local experimental EtherType, padded to 60 bytes.
fn frame(dst: u8, src: u8) -> Vec<u8> {
    let mac = |b: u8| 0x0200_0000_0000 | b as u64;
    let mut f = packet::wire::build::ethernet(mac(dst), mac(src), None, 0x88b5, &[]);
    f.resize(60, 0);
    f
}

/// Bridges `a` and `b` (one memory port each, 1) joined by patch ports
/// 2 named `pa` and `pb`, each bridge's controller `ca`, `cb`.
fn patched(pa: &str, pb: &str) -> (Switch, Switch, ConnId, ConnId) {
    let mut a = Switch::named(&format!("{pa}-br"), 1);
    let mut b = Switch::named(&format!("{pb}-br"), 1);
    for (sw, name, peer) in [(&mut a, pa, pb), (&mut b, pb, pa)] {
        let spec = PortSpec {
            peer: Some(peer.to_string()),
            ..PortSpec::new(2, name, Backend::Patch)
        };
        let p = sw
            .agent
            .handle_add_port(NewPort::to_open(spec), sw.now)
            .unwrap();
        assert!(p.link_up);
    }
    let (ca, cb) = (a.controller(), b.controller());
    (a, b, ca, cb)
}

#[test]
fn a_patch_pair_carries_frames_through_the_peers_pipeline() {
    let (mut a, mut b, ca, cb) = patched("tp-a", "tp-b");
    a.flow(ca, "priority=1,in_port=1,actions=output:2");
    // Through b's pipeline, in on its patch port: only a flow for that
    // port sends it on.
    b.flow(cb, "priority=1,in_port=1,actions=drop");
    assert_eq!(a.send(1, &frame(9, 1)), vec![0]);
    assert_eq!(b.send(1, &frame(9, 1)), vec![0]);
    b.flow(cb, "priority=2,in_port=2,actions=output:1");
    assert_eq!(a.send(1, &frame(9, 1)), vec![0]);
    b.round();
    assert_eq!(b.wires[0].take_sent(), vec![frame(9, 1)]);
    // And back, through NORMAL on both sides.
    a.flow(ca, "priority=2,in_port=2,actions=normal");
    b.flow(cb, "priority=3,in_port=1,actions=output:2");
    b.wires[0].inject(&frame(1, 9));
    b.round();
    a.round();
    assert_eq!(a.wires[0].take_sent(), vec![frame(1, 9)]);
    let c = |sw: &Switch, no| sw.agent.datapath().port_counters(no).unwrap();
    use std::sync::atomic::Ordering::Relaxed;
    assert_eq!(c(&a, 2).tx_packets.load(Relaxed), 2);
    assert_eq!(c(&b, 2).rx_packets.load(Relaxed), 2);
    assert_eq!(c(&a, 2).rx_packets.load(Relaxed), 1);
    // The peer's port goes: a's carries nothing, counted as dropped.
    b.agent.handle_del_port(2).unwrap();
    b.round();
    assert_eq!(a.send(1, &frame(9, 1)), vec![0]);
    assert_eq!(c(&a, 2).tx_dropped.load(Relaxed), 1);
}

#[test]
fn a_patch_loop_ends_at_the_hop_limit() {
    let (mut a, mut b, ca, cb) = patched("tl-a", "tl-b");
    a.flow(ca, "priority=1,in_port=1,actions=output:2");
    a.flow(ca, "priority=1,in_port=2,actions=in_port");
    b.flow(cb, "priority=1,in_port=2,actions=in_port");
    a.wires[0].inject(&frame(9, 1));
    let mut rounds = 0;
    use std::sync::atomic::Ordering::Relaxed;
    let rx = |sw: &Switch| {
        sw.agent
            .datapath()
            .port_counters(2)
            .unwrap()
            .rx_packets
            .load(Relaxed)
    };
    loop {
        let before = rx(&a) + rx(&b);
        a.round();
        b.round();
        rounds += 1;
        if rx(&a) + rx(&b) == before || rounds > 1000 {
            break;
        }
    }
    // 64 crossings, then the frame is dropped where it would cross again.
    assert_eq!(rx(&a) + rx(&b), netdev::patch::MAX_HOPS as u64);
    let dropped = |sw: &Switch| {
        sw.agent
            .datapath()
            .port_counters(2)
            .unwrap()
            .tx_dropped
            .load(Relaxed)
    };
    assert_eq!(dropped(&a) + dropped(&b), 1);
}

fn normal_flow() -> ofp::FlowMod {
    ofp::text::parse_flow_mod("priority=0,actions=normal").unwrap()
}

#[test]
fn flow_mod_bytes_in_frames_out_then_expiry_by_the_clock() {
    let mut sw = Switch::new(3);
    let c = sw.controller();
    // No flow: the table-miss drops.
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 0, 0]);
    sw.flow(
        c,
        "priority=10,in_port=1,idle_timeout=5,send_flow_rem,actions=output:2",
    );
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 1, 0]);
    // The agent asks to be woken by the idle deadline (5 s after the hit,
    // the last one at this time) and not later.
    let hit = sw.now;
    let wake = sw.agent.poll_timeout().unwrap();
    assert!(wake <= hit + 5 * S, "{wake} > {}", hit + 5 * S);
    // Hits keep it: 4 s later, a frame; 4 s after that it is still there.
    sw.at(hit + 4 * S);
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 1, 0]);
    sw.at(hit + 8 * S);
    assert!(sw.output(c).is_empty(), "not yet expired");
    // 5 s idle: FLOW_REMOVED (idle timeout), and the frames stop.
    sw.at(hit + 9 * S);
    let out = sw.output(c);
    assert!(
        matches!(&out[..], [Message::FlowRemoved(r)] if r.reason == ofp::msg::flow::FlowRemovedReason::IdleTimeout && r.priority == 10),
        "{out:?}"
    );
    sw.round();
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 0, 0]);
    assert_eq!(sw.agent.poll_timeout().map(|t| t > sw.now), Some(true));
}

#[test]
fn port_status_for_a_new_port_and_a_link_change() {
    let mut sw = Switch::new(2);
    let c = sw.controller();
    sw.flow(c, "priority=1,actions=flood");
    sw.add_port(3);
    let out = sw.output(c);
    assert!(
        matches!(&out[..], [Message::PortStatus(p)] if p.reason == PortReason::Add && p.desc.port_no == 3),
        "{out:?}"
    );
    // The new port is flooded to from the next round.
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 1, 1]);
    // Its link goes down: PORT_STATUS MODIFY, and FLOOD leaves it out.
    sw.agent.handle_link_change(3, false);
    let out = sw.output(c);
    assert!(
        matches!(&out[..], [Message::PortStatus(p)] if p.reason == PortReason::Modify && p.desc.state & ofp::port::port_state::LINK_DOWN != 0),
        "{out:?}"
    );
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 1, 0]);
}

#[test]
fn ports_detached_and_deleted_through_the_agent_leave_the_bridge() {
    let mut sw = Switch::new(3);
    let c = sw.controller();
    sw.flow(c, "priority=1,actions=flood");
    // Detached (its interface gone): the bridge closes the device, the
    // port keeps its number, controllers hear its link go down.
    assert!(sw.agent.handle_detach_port(3));
    assert!(!sw.agent.datapath().is_attached(3));
    assert!(sw.agent.datapath().port(3).is_some());
    let out = sw.output(c);
    assert!(
        matches!(&out[..], [Message::PortStatus(p)] if p.reason == PortReason::Modify && p.desc.port_no == 3),
        "{out:?}"
    );
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 1, 0]);
    // Twice: nothing more to close, nothing said.
    assert!(!sw.agent.handle_detach_port(3));
    assert!(sw.output(c).is_empty());
    // Its interface (a memory port's name) cannot be opened again: the
    // bridge's error, nothing changed.
    assert!(sw.agent.handle_reattach_port(3).is_err());
    assert!(!sw.agent.datapath().is_attached(3));
    assert!(sw.output(c).is_empty());
    // Deleted: gone from the bridge and the pipeline, announced.
    sw.agent.handle_del_port(2).unwrap();
    assert!(sw.agent.datapath().port(2).is_none());
    let out = sw.output(c);
    assert!(
        matches!(&out[..], [Message::PortStatus(p)] if p.reason == PortReason::Delete && p.desc.port_no == 2),
        "{out:?}"
    );
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 0, 0]);
    // The bridge remembers the numbers of the ports it was given.
    assert_eq!(sw.agent.datapath().numbers.get("m2"), Some(2));
}

#[test]
fn a_new_port_comes_opened_detached_or_refused_through_the_agent() {
    let mut sw = Switch::new(1);
    let c = sw.controller();
    // Opened elsewhere (the daemon opens many at once): its devices, or
    // the error of opening them, which changes nothing.
    let spec = PortSpec::new(5, "gone0", Backend::AfPacket { rings: true });
    let failed = std::io::Error::other("no such device");
    let e = sw
        .agent
        .handle_add_port(NewPort::opened(spec, Err(failed)), sw.now)
        .unwrap_err();
    assert_eq!(e, "no such device");
    assert!(sw.agent.datapath().port(5).is_none());
    assert!(!sw.agent.ports().contains_key(&5));
    assert!(sw.output(c).is_empty());
    // No interface yet: detached, link down, announced, its number kept.
    let spec = PortSpec::new(6, "later0", Backend::AfPacket { rings: true });
    let p = sw
        .agent
        .handle_add_port(NewPort::detached(spec), sw.now)
        .unwrap();
    assert_eq!((p.port_no, p.link_up, p.since_ns), (6, false, sw.now));
    assert!(sw.agent.datapath().port(6).is_some());
    assert!(!sw.agent.datapath().is_attached(6));
    assert_eq!(sw.agent.datapath().numbers.get("later0"), Some(6));
    let out = sw.output(c);
    assert!(
        matches!(&out[..], [Message::PortStatus(p)] if p.reason == PortReason::Add && p.desc.port_no == 6),
        "{out:?}"
    );
    // A number or a name taken: the bridge's refusal, nothing said.
    let spec = PortSpec::new(6, "other0", Backend::AfPacket { rings: true });
    let e = sw
        .agent
        .handle_add_port(NewPort::detached(spec), sw.now)
        .unwrap_err();
    assert_eq!(e, "port number 6 is taken by later0");
    assert!(sw.output(c).is_empty());
    // LOCAL is the bridge's own: its number is not remembered by name.
    let (dev, _wire) = MemoryPort::new("br0");
    let spec = PortSpec::new(ofp::port::port_no::LOCAL, "br0", Backend::Local);
    let port = NewPort::with_devices(spec, vec![Box::new(dev)]);
    sw.agent.handle_add_port(port, sw.now).unwrap();
    assert_eq!(sw.agent.datapath().numbers.get("br0"), None);
}

#[test]
fn standalone_fail_mode_follows_the_controller() {
    let mut sw = Switch::new(3);
    sw.agent.handle_fail_mode(Some(normal_flow()), sw.now);
    // No controller: the learning switch floods, then forwards.
    assert_eq!(sw.send(1, &frame(2, 1)), vec![0, 1, 1]);
    assert_eq!(sw.send(2, &frame(1, 2)), vec![1, 0, 0]);
    // A controller completes the handshake: its tables, empty.
    let c = sw.controller();
    assert_eq!(sw.send(1, &frame(2, 1)), vec![0, 0, 0]);
    assert_eq!(sw.agent.pipeline().flow_count(), 0);
    // It goes: NORMAL again, at once.
    sw.agent.disconnect(c);
    assert_eq!(sw.send(1, &frame(2, 1)), vec![0, 1, 0]);
    // Secure mode: the switch's flow goes, and stays gone.
    sw.agent.handle_fail_mode(None, sw.now);
    assert_eq!(sw.send(1, &frame(2, 1)), vec![0, 0, 0]);
    let c = sw.controller();
    sw.agent.disconnect(c);
    assert_eq!(sw.send(1, &frame(2, 1)), vec![0, 0, 0]);
}

#[test]
fn a_controllers_own_table_miss_flow_outlives_the_standalone_flow() {
    // The standalone flow as the daemon installs it: cookie 0, as Open
    // vSwitch's, so the same match, priority and cookie as a controller's
    // table-miss flow.
    let mut sw = Switch::new(3);
    let normal = ofp::text::parse_flow_mod("priority=0,actions=normal").unwrap();
    sw.agent.handle_fail_mode(Some(normal), sw.now);
    assert_eq!(sw.agent.pipeline().flow_count(), 1);
    // The controller's table-miss flow replaces it before the handshake
    // ends (its FLOW_MOD read in the same batch as its FEATURES_REQUEST).
    let miss = ofp::text::parse_flow_mod("priority=0,actions=CONTROLLER:65535").unwrap();
    sw.agent
        .handle_local_changes(&[LocalChange::Flow(miss)], sw.now)
        .unwrap();
    let c = sw.controller();
    // The switch takes out only its own flow: the controller's stays.
    assert_eq!(sw.agent.pipeline().flow_count(), 1);
    assert_eq!(sw.send(1, &frame(2, 1)), vec![0, 0, 0]);
    sw.agent.disconnect(c);
    assert_eq!(sw.send(1, &frame(2, 1)), vec![0, 1, 1]);
}

#[test]
fn a_reload_changes_static_flows_through_the_agent() {
    let mut sw = Switch::new(3);
    let c = sw.controller();
    let add = |t: &str| LocalChange::Flow(ofp::text::parse_flow_mod(t).unwrap());
    // A change the pipeline refuses is found on a copy: nothing changes.
    let bad = [
        add("priority=5,in_port=1,actions=output:3"),
        add("priority=5,in_port=2,actions=group:9"),
    ];
    let e = sw.agent.try_local_changes(&[], &[], &bad).unwrap_err();
    assert_eq!(e.at, 1, "{e:?}");
    assert_eq!(sw.agent.pipeline().flow_count(), 0);
    // The trial sees the ports the reload removes: a flow on one of
    // them is still taken (as Open vSwitch, the pipeline does not check
    // outputs against the ports there are).
    let good = [add("priority=5,in_port=1,actions=output:4")];
    assert!(sw.agent.try_local_changes(&[3], &[4], &good).is_ok());
    assert_eq!(sw.agent.pipeline().flow_count(), 0);
    // Applied: published, forwarding at the next round.
    let ok = [add("priority=5,in_port=1,actions=output:3")];
    sw.agent.handle_local_changes(&ok, sw.now).unwrap();
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 0, 1]);
    // Deleting it with send_flow_rem set tells the controller, as a
    // controller's delete would.
    let mut with_rem =
        ofp::text::parse_flow_mod("priority=6,in_port=2,send_flow_rem,actions=output:1").unwrap();
    sw.agent
        .handle_local_changes(&[LocalChange::Flow(with_rem.clone())], sw.now)
        .unwrap();
    with_rem.command = ofp::FlowModCommand::DeleteStrict;
    with_rem.out_port = ofp::port::port_no::ANY;
    with_rem.out_group = ofp::port::group_no::ANY;
    sw.agent
        .handle_local_changes(&[LocalChange::Flow(with_rem)], sw.now)
        .unwrap();
    let out = sw.output(c);
    assert!(
        matches!(&out[..], [Message::FlowRemoved(r)] if r.reason == ofp::msg::flow::FlowRemovedReason::Delete && r.priority == 6),
        "{out:?}"
    );
}

#[test]
fn packet_in_and_packet_out_cross_the_bridge() {
    let mut sw = Switch::new(2);
    let c = sw.controller();
    sw.flow(c, "priority=1,actions=controller");
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 0]);
    let out = sw.output(c);
    let Some(Message::PacketIn(pi)) = out.first() else {
        panic!("{out:?}");
    };
    assert_eq!(pi.data.len(), 60);
    // The controller sends it out of port 2.
    let po = ofp::PacketOut {
        buffer_id: ofp::port::NO_BUFFER,
        in_port: ofp::port::port_no::CONTROLLER,
        actions: vec![ofp::Action::Output {
            port: 2,
            max_len: 0,
        }],
        data: pi.data.clone(),
    };
    sw.input(c, &Message::PacketOut(po));
    sw.round();
    assert_eq!(sw.wires[1].take_sent(), vec![frame(9, 1)]);
    // Nothing asked the daemon to close anything.
    assert_eq!(sw.agent.poll_event(), None::<Event>);
}

/// Open vSwitch's packet-in extensions through the bridge: three
/// controllers, one per packet-in format, and a fourth of controller id
/// 7. `controller(userdata=..)` reaches the NXT_PACKET_IN2 controller with
/// its userdata and the registers and metadata the flows set; the
/// others get the same packet-in without it; `controller(id=7)` reaches
/// the fourth alone.
#[test]
fn packet_in_formats_and_controller_ids_cross_the_bridge() {
    use ofp::msg::nxt::{NxtMsg, PacketInFormat};
    use ofp::{Oxm, OxmField as F};
    let mut sw = Switch::new(2);
    let c = [
        sw.controller(),
        sw.controller(),
        sw.controller(),
        sw.controller(),
    ];
    for (id, m) in [
        (c[1], NxtMsg::SetPacketInFormat(PacketInFormat::Nxt)),
        (c[2], NxtMsg::SetPacketInFormat(PacketInFormat::Nxt2)),
        (c[3], NxtMsg::SetPacketInFormat(PacketInFormat::Nxt2)),
        (c[3], NxtMsg::SetControllerId(7)),
    ] {
        sw.input(id, &m.message());
    }
    sw.flow(
        c[0],
        "table=0,priority=1,actions=load:0x5->NXM_NX_REG0[],write_metadata:0xab00/0xff00,goto_table:3",
    );
    sw.flow(
        c[0],
        "table=3,cookie=0x77,priority=1,actions=controller(userdata=01.02.03),controller(id=7,userdata=ff)",
    );
    for id in c {
        sw.output(id);
    }
    assert_eq!(sw.send(1, &frame(9, 1)), vec![0, 0]);
    let meta = ofp::Match::new()
        .with(Oxm::exact(F::InPort, 1))
        .with(Oxm::exact(F::Reg(0), 5))
        .with(Oxm::exact(F::Metadata, 0xab00));
    let nx = |m: &Message| match m {
        Message::Experimenter(e) => NxtMsg::decode(e).unwrap().unwrap(),
        other => panic!("{other:?}"),
    };
    let out = sw.output(c[0]);
    let [Message::PacketIn(pin)] = &out[..] else {
        panic!("{out:?}")
    };
    assert_eq!(pin.match_, meta);
    assert_eq!((pin.table_id, pin.cookie, pin.data.len()), (3, 0x77, 60));
    let out = sw.output(c[1]);
    let [m] = &out[..] else { panic!("{out:?}") };
    let NxtMsg::PacketIn(p) = nx(m) else {
        panic!("{m:?}")
    };
    assert_eq!(&p.to_packet_in(), pin);
    let out = sw.output(c[2]);
    let [m] = &out[..] else { panic!("{out:?}") };
    let NxtMsg::PacketIn2(p) = nx(m) else {
        panic!("{m:?}")
    };
    assert_eq!((&p.to_packet_in(), &p.userdata[..]), (pin, &[1, 2, 3][..]));
    let out = sw.output(c[3]);
    let [m] = &out[..] else { panic!("{out:?}") };
    let NxtMsg::PacketIn2(p) = nx(m) else {
        panic!("{m:?}")
    };
    assert_eq!((&p.to_packet_in(), &p.userdata[..]), (pin, &[0xff][..]));
}

#[test]
fn a_link_down_forgets_what_was_learned_on_the_port() {
    let mut sw = Switch::new(3);
    let c = sw.controller();
    sw.flow(c, "priority=0,actions=normal");
    // 02:00:00:00:00:0b is learned on port 2.
    assert_eq!(sw.send(2, &frame(0x0a, 0x0b)), vec![1, 0, 1]);
    let to_b = frame(0x0b, 0x0a);
    assert!(sw.agent.trace(1, &to_b).contains("learned on port 2"));
    // Port 2's link goes down: the datapath is told (port_link_changed)
    // and forgets it; the same link event again changes nothing.
    sw.agent.handle_link_change(2, false);
    sw.agent.handle_link_change(2, false);
    let t = sw.agent.trace(1, &to_b);
    assert!(t.contains("02:00:00:00:00:0b not learned: flooded"), "{t}");
    // Up again: nothing comes back by itself.
    sw.agent.handle_link_change(2, true);
    assert!(sw.agent.trace(1, &to_b).contains("not learned: flooded"));
}

#[test]
fn trace_follows_normal_through_the_mac_table() {
    let mut sw = Switch::new(3);
    let c = sw.controller();
    sw.flow(c, "priority=0,actions=normal");
    // 02:00:00:00:00:0b is learned on port 2 (a frame from it, flooded).
    assert_eq!(sw.send(2, &frame(0x0a, 0x0b)), vec![1, 0, 1]);
    let frame = |dst: u8| frame(dst, 0x0a);
    let learned = sw.agent.trace(1, &frame(0x0b));
    assert!(
        learned.contains("NORMAL: dst 02:00:00:00:00:0b learned on port 2\n")
            && learned.ends_with("Datapath actions: 2\n"),
        "{learned}"
    );
    let unknown = sw.agent.trace(1, &frame(0x0c));
    assert!(
        unknown.contains("NORMAL: dst 02:00:00:00:00:0c not learned: flooded\n")
            && unknown.ends_with("Datapath actions: 2,3\n"),
        "{unknown}"
    );
    let back = sw.agent.trace(2, &frame(0x0b));
    assert!(
        back.contains("learned on the ingress port: dropped")
            && back.ends_with("Datapath actions: drop\n"),
        "{back}"
    );
    // The trace learned nothing: 0a is still unknown.
    assert!(sw
        .agent
        .trace(2, &frame(0x0a))
        .contains("not learned: flooded"));
}

#[test]
fn conntrack_commands_reach_the_pipelines_tracker() {
    use conntrack::build::{self, Ip};
    let mut sw = Switch::new(2);
    let c = sw.controller();
    sw.flow(c, "priority=0,actions=normal");
    // The tracker the pipeline (and so every snapshot) holds, filled as a
    // `ct(commit)` would fill it.
    let t = sw.agent.pipeline().conntrack().clone();
    let now_ms = datapath::clock::now_ns() / 1_000_000;
    let commit = conntrack::Request {
        commit: true,
        zone: 4,
        ..Default::default()
    };
    let mut p = build::udp(Ip::V4([10, 0, 0, 1]), Ip::V4([10, 0, 0, 2]), 5353, 53, 0);
    t.track(&mut p, false, &commit, now_ms);
    let cmd = |sw: &mut Switch, line: &str| {
        let words: Vec<String> = line.split(' ').map(String::from).collect();
        sw.agent.handle_command(&words)
    };
    assert_eq!(
        cmd(&mut sw, "dump-conntrack").unwrap(),
        "udp,orig=(src=10.0.0.1,dst=10.0.0.2,sport=5353,dport=53),reply=(src=10.0.0.2,dst=10.0.0.1,sport=53,dport=5353),zone=4\n"
    );
    assert_eq!(
        cmd(&mut sw, "ct-set-limits zone=4,limit=9"),
        Ok(String::new())
    );
    assert_eq!(
        cmd(&mut sw, "ct-get-limits").unwrap(),
        "default limit=0\nzone=4,limit=9,count=1\n"
    );
    assert_eq!(
        cmd(&mut sw, "flush-conntrack zone=4").unwrap(),
        "1 connection flushed\n"
    );
    assert_eq!(cmd(&mut sw, "ct-get-nconns").unwrap(), "0\n");
    assert!(
        cmd(&mut sw, "fdb-show").is_ok(),
        "the other commands still answer"
    );
}
