//! Time: keepalives, connection deadlines, flow expiry and idle bundles
//! when their time comes ([`Agent::handle_timeout`]), the next time the
//! agent needs to be called ([`Agent::poll_timeout`]: the daemon sleeps
//! until then, or until a socket or the packet-in queue wakes it), and
//! what the daemon must do as a result ([`Agent::poll_event`]).
//!
//! Contract: nothing here reads a clock; every time is the caller's.
//! Calling `handle_timeout` early does nothing that was not due, and late
//! does everything that came due since, in one call.

use super::*;

/// What the daemon must do for the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Close the connection (after writing what it has queued), for this
    /// reason: no input for twice the probe interval, no HELLO within
    /// [`ConnConfig::hello_deadline_ns`], a message left half sent past
    /// [`ConnConfig::message_deadline_ns`].
    Close { conn: ConnId, why: &'static str },
}

/// How soon a publication that waits (changes not yet published) is
/// looked at again.
const PUBLISH_RETRY_NS: u64 = 1_000_000;

impl<D: Datapath> Agent<D> {
    /// Does what is due at `now_ns`: flow expiry (FLOW_REMOVED), idle
    /// bundles (discarded with OFPBFC_TIMEOUT, see [`bundle`]), multipart
    /// requests whose next part is late (discarded with
    /// OFPBRC_MULTIPART_REQUEST_TIMEOUT), a waiting
    /// publication, the fail mode's flow, echo probes; connections past a
    /// deadline become [`Event::Close`].
    pub fn handle_timeout(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        let removed = self.pipeline.expire(now_ns);
        if !removed.is_empty() {
            self.dirty = true;
            self.flow_removed(&removed, now_ns);
        }
        self.expire_bundles(now_ns);
        if self.follow_fail_mode(now_ns) {
            self.publish();
        }
        self.report_flow_changes(None);
        self.publish_due(now_ns);
        for (id, c) in self.conns.iter_mut() {
            // Multipart requests whose next part is late.
            let late: Vec<u32> = c
                .partial
                .iter()
                .filter(|(_, p)| now_ns >= p.deadline_ns)
                .map(|(x, _)| *x)
                .collect();
            for xid in late {
                let p = c.partial.remove(&xid).expect("listed");
                let frame = &p.parts.last().expect("a part").0;
                let data = frame.slice(..frame.len().min(ofp::framer::ERROR_DATA_LEN));
                let code = ofp::error::OFPBRC_MULTIPART_REQUEST_TIMEOUT;
                c.send(&Message::Error(ErrorMsg { code, data }), xid);
            }
            let idle = now_ns.saturating_sub(c.last_rx_ns);
            let cfg = &c.config;
            let why = if c.phase == Phase::AwaitHello
                && now_ns.saturating_sub(c.opened_ns) > cfg.hello_deadline_ns
            {
                Some("no HELLO in time")
            } else if c
                .partial_since_ns
                .is_some_and(|t| now_ns.saturating_sub(t) > cfg.message_deadline_ns)
            {
                Some("a message left unfinished")
            } else if idle > 2 * c.config.probe_ns {
                Some("inactivity probe unanswered")
            } else {
                if idle > c.config.probe_ns && !c.probe_sent && c.phase == Phase::Open {
                    let xid = c.xid();
                    c.send(&Message::EchoRequest(Bytes::new()), xid);
                    c.probe_sent = true;
                }
                None
            };
            if let Some(why) = why {
                self.events.push_back(Event::Close { conn: *id, why });
            }
        }
    }

    /// The next time [`Agent::handle_timeout`] has something to do (at
    /// the soonest: a rule hit since may have moved on); None while
    /// nothing is timed.
    pub fn poll_timeout(&self) -> Option<u64> {
        let mut next = self.pipeline.next_expiry();
        let mut at = |t: Option<u64>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        };
        if self.dirty {
            at(Some(self.now_ns.saturating_add(PUBLISH_RETRY_NS)));
        }
        for c in self.conns.values() {
            let cfg = &c.config;
            // Deadlines are passed strictly (`>`): the first time past one.
            if c.phase == Phase::AwaitHello {
                at(Some(c.opened_ns.saturating_add(cfg.hello_deadline_ns) + 1));
            }
            at(c.partial_since_ns
                .map(|t| t.saturating_add(cfg.message_deadline_ns) + 1));
            let probe = if c.probe_sent || c.phase != Phase::Open {
                cfg.probe_ns.saturating_mul(2)
            } else {
                cfg.probe_ns
            };
            at(Some(c.last_rx_ns.saturating_add(probe).saturating_add(1)));
            at(c.bundles.next_idle_deadline(cfg.bundles.idle_timeout_ns));
            at(c.partial.values().map(|p| p.deadline_ns).min());
        }
        next
    }

    /// The next thing the daemon must do for the agent, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}
