//! What the control thread shows other threads of its bridge's OpenFlow
//! side: connections with their state and role, configured controllers,
//! ports' link state, PACKET_INs a connection did not take, what became
//! of the flows packets taught. The agent lives
//! on the control thread alone, so the control thread publishes a copy
//! ([`View`]) at most every [`EVERY_NS`], and only while someone holds it
//! (the metrics endpoint); readers load it without locking.

use std::sync::Arc;

use agent::conn::Phase;
use arc_swap::ArcSwap;

use super::Control;

/// How often the control thread refreshes the view, at most.
pub const EVERY_NS: u64 = 100_000_000;

/// A copy of the OpenFlow side of one bridge.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct View {
    /// Live connections, by id.
    pub conns: Vec<ConnView>,
    /// Configured controllers (`tcp:`/`tls:` targets): endpoint and
    /// whether a connection to it is up (OpenFlow handshake done).
    pub controllers: Vec<(String, bool)>,
    /// Ports the agent knows: number and link state.
    pub ports: Vec<(u32, bool)>,
    /// PACKET_INs not sent to a connection (its rate limit, or its send
    /// buffer full), summed over every connection ever made: only grows.
    pub packet_in_limited: u64,
    /// What the agent did with the flows packets taught (`learn`).
    pub learn: pipeline::control::learn::LearnStats,
    /// Learned flows installed, per table that has any: (table, flows).
    pub learned: Vec<(u8, usize)>,
}

/// One connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnView {
    pub id: u64,
    /// Where it came from, or the controller it dialled (`tcp:ADDR`,
    /// `unix:PATH`, ...).
    pub peer: String,
    /// A management connection (`sluice-ctl`, `ovs-ofctl` on the
    /// management socket), not a controller.
    pub management: bool,
    /// `hello` (handshake), `open`, `closing`.
    pub state: &'static str,
    /// `equal`, `master`, `slave`.
    pub role: &'static str,
    /// The OpenFlow version it speaks (`OpenFlow13`); during the
    /// handshake, the highest offered.
    pub version: &'static str,
}

impl Control {
    /// The view this bridge publishes (refreshed while it is held).
    pub fn view(&self) -> Arc<ArcSwap<View>> {
        self.view.clone()
    }

    /// Publishes a fresh view if someone reads it and the last one is
    /// older than [`EVERY_NS`].
    pub(super) fn refresh_view(&mut self, now_ns: u64) {
        let due = self.view_at_ns == 0 || now_ns.saturating_sub(self.view_at_ns) >= EVERY_NS;
        if !due || Arc::strong_count(&self.view) < 2 {
            return;
        }
        self.view_at_ns = now_ns.max(1);
        self.view.store(Arc::new(self.snapshot_view()));
    }

    /// The view as it is now (the database's status write-back reads it
    /// on the control thread itself).
    pub fn current_view(&self) -> View {
        self.snapshot_view()
    }

    fn snapshot_view(&self) -> View {
        let a = &self.agent;
        let conns = a
            .conns()
            .map(|(id, c)| ConnView {
                id,
                peer: self.peers.get(&id).cloned().unwrap_or_default(),
                management: c.service,
                state: match c.phase {
                    Phase::AwaitHello => "hello",
                    Phase::Open => "open",
                    Phase::Closing => "closing",
                },
                role: c.role.name().unwrap_or("equal"),
                version: c.version.name(),
            })
            .collect();
        let controllers = self
            .actives
            .iter()
            .map(|c| {
                let scheme = if c.tls { "tls" } else { "tcp" };
                let open = c
                    .conn
                    .and_then(|id| a.conn(id))
                    .is_some_and(|c| c.phase == Phase::Open);
                (format!("{scheme}:{}", c.target), open)
            })
            .collect();
        let ports = a.ports().values().map(|p| (p.port_no, p.link_up)).collect();
        let live: u64 = a.conns().map(|(_, c)| c.packet_in_dropped).sum();
        let p = a.pipeline();
        let learned = p
            .tables()
            .iter()
            .filter(|t| t.learned_len() > 0)
            .map(|t| (t.id, t.learned_len()))
            .collect();
        View {
            conns,
            controllers,
            ports,
            packet_in_limited: self.packet_in_limited_closed + live,
            learn: p.learn_stats(),
            learned,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openflow::Endpoint;
    use std::os::unix::net::UnixStream;

    /// A bridge's OpenFlow side with port 1 (link up), one controller to
    /// dial (nothing listens there) and no listener.
    fn control() -> Control {
        let mut p = pipeline::Pipeline::new(pipeline::Config::default());
        let bridge = datapath::Bridge::new("br0", 1, p.snapshot(), true).unwrap();
        let channels = bridge.channels.clone();
        let mut agent = agent::Agent::new(1, p, bridge, "br0");
        let (dev, _) = netdev::memory::MemoryPort::new("p1");
        let spec = datapath::PortSpec::new(1, "p1", datapath::Backend::AfPacket { rings: true });
        let port = datapath::NewPort::with_devices(spec, vec![Box::new(dev)]);
        agent.handle_add_port(port, 0).unwrap();
        let ctl = [Endpoint::Tcp("127.0.0.1:9".into())];
        Control::new("br0", agent, channels, &ctl, None, 8).unwrap()
    }

    const T0: u64 = 1_000_000_000;

    #[test]
    fn published_while_read_at_most_every_100_ms() {
        let mut c = control();
        // Nobody reads it: nothing is built.
        c.service(T0);
        assert_eq!(*c.view.load_full(), View::default());
        let view = c.view();
        c.service(T0);
        let v = view.load_full();
        assert_eq!(v.ports, vec![(1, true)]);
        assert_eq!(v.controllers, vec![("tcp:127.0.0.1:9".to_string(), false)]);
        assert!(v.conns.is_empty());
        // A connection: seen once 100 ms have passed, not before.
        let (a, _b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let id = c.adopt(super::super::Stream::Unix(a), "unix:/x".into(), false, T0);
        c.refresh_view(T0 + EVERY_NS - 1);
        assert!(view.load().conns.is_empty());
        c.refresh_view(T0 + EVERY_NS);
        let v = view.load_full();
        assert_eq!(
            v.conns,
            vec![ConnView {
                id,
                peer: "unix:/x".into(),
                management: false,
                state: "hello",
                role: "equal",
                version: "OpenFlow15",
            }]
        );
        assert_eq!(v.ports, vec![(1, true)]);
    }

    #[test]
    fn packet_ins_a_connection_did_not_take_are_kept_after_it_closes() {
        let mut c = control();
        let view = c.view();
        let mut t = T0;
        let (mut ids, mut peers) = (Vec::new(), Vec::new());
        // One PACKET_IN a second, no burst: of n sent at once, n - 1 are
        // limited. The first connection is offered 4 + 5, the second 5.
        c.set_conn_config(agent::ConnConfig {
            packet_in_rate: 1,
            packet_in_burst: 0,
            ..*c.agent().conn_config()
        });
        let hello = ofp::Message::Hello(ofp::msg::simple::Hello::ours()).to_bytes(1);
        let miss =
            pipeline::ToController::new(ofp::msg::flow::PacketInReason::NoMatch, 0, 0, 0xffff);
        for n in [4, 5] {
            let (a, b) = UnixStream::pair().unwrap();
            peers.push(b);
            let id = c.adopt(super::super::Stream::Unix(a), "unix:/x".into(), true, t);
            assert!(c.agent.handle_input(id, &hello, t));
            for _ in 0..n {
                c.agent
                    .handle_packet_in(1, miss.clone(), bytes::Bytes::from(vec![0u8; 60]), t);
            }
            ids.push(id);
        }
        let limited = |c: &Control, id| c.agent.conn(id).unwrap().packet_in_dropped;
        assert_eq!((limited(&c, ids[0]), limited(&c, ids[1])), (3 + 5, 4));
        c.refresh_view(t);
        assert_eq!(view.load().packet_in_limited, 12);
        assert!(view.load().conns.iter().all(|c| c.management));
        c.close(ids[0], "test");
        t += EVERY_NS;
        c.refresh_view(t);
        assert_eq!(view.load().packet_in_limited, 12);
        assert_eq!(view.load().conns.len(), 1);
        c.close(ids[1], "test");
        t += EVERY_NS;
        c.refresh_view(t);
        assert_eq!(view.load().packet_in_limited, 12);
        assert!(view.load().conns.is_empty());
    }
}
