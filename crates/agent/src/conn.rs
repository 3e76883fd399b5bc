//! One controller connection as the agent sees it: bytes in, bytes out,
//! and the per-connection state OpenFlow gives it (negotiated version,
//! role, asynchronous message filter, keepalive, PACKET_IN rate limit (a
//! [`pipeline::bucket::Gcra`] token bucket), bundles) and the Nicira
//! extensions add (packet-in format, controller id, and under OpenFlow
//! 1.0 the flow format and the table id in flow mods).
//! No sockets here: the daemon moves the bytes.

use ofp::msg::nx_flow::FlowFormat;
use ofp::msg::nxt::PacketInFormat;
use ofp::msg::simple::{AsyncConfig, ControllerRole};
use ofp::{Framer, Message, Version, Versions};
use pipeline::bucket::Gcra;

use crate::bundle::{BundleLimits, Bundles};
use crate::outbox::Outbox;

/// Where a connection stands in the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Our HELLO is sent; the peer's is awaited.
    AwaitHello,
    /// A version agreed ([`Conn::version`]).
    Open,
    /// Closing after the outbox drains (a failed handshake).
    Closing,
}

/// Keepalive and rate-limit settings.
#[derive(Debug, Clone, Copy)]
pub struct ConnConfig {
    /// Send ECHO_REQUEST after this long without input (Open vSwitch's
    /// inactivity probe defaults to 5 s).
    pub probe_ns: u64,
    /// PACKET_INs per second allowed to this connection (0: no limit).
    pub packet_in_rate: u32,
    /// Burst of PACKET_INs allowed above the rate: a full bucket lets
    /// `packet_in_burst + 1` through back to back.
    pub packet_in_burst: u32,
    /// The connection's budget of unsent bytes. While its outbox holds
    /// more, the daemon stops reading from it (requests wait in the
    /// kernel, not in sluice), the agent handles no more of its requests,
    /// a long reply in progress (FLOW_STATS) waits, and PACKET_INs for it
    /// are dropped and counted.
    pub max_outbox: usize,
    /// The peer's HELLO must come within this long of the connection.
    pub hello_deadline_ns: u64,
    /// A message whose first bytes came must be whole within this long (a
    /// byte every few seconds must not keep a half message, and its
    /// buffer, alive forever).
    pub message_deadline_ns: u64,
    /// Past this many unsent bytes the connection is closed: only
    /// asynchronous messages (PORT_STATUS, FLOW_REMOVED) can take a peer
    /// that does not read this far past the budget.
    pub outbox_hard_cap: usize,
    /// Bounds on the connection's bundles (see [`crate::bundle`]).
    pub bundles: BundleLimits,
    /// The OpenFlow versions offered in our HELLO (the bridge's
    /// `protocols`; all by default).
    pub versions: Versions,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            probe_ns: 5_000_000_000,
            packet_in_rate: 100_000,
            packet_in_burst: 10_000,
            max_outbox: 4 << 20,
            outbox_hard_cap: 32 << 20,
            hello_deadline_ns: 10_000_000_000,
            message_deadline_ns: 10_000_000_000,
            bundles: BundleLimits::default(),
            versions: Versions::ALL,
        }
    }
}

/// A controller connection.
pub struct Conn {
    pub phase: Phase,
    /// The version the connection speaks: the highest we offer until the
    /// peer's HELLO, then the one negotiated. Every message in and out is
    /// of this version; the agent behind sees only the internal form.
    pub version: Version,
    pub role: ControllerRole,
    pub async_config: AsyncConfig,
    pub(crate) framer: Framer,
    /// Bytes to send, in order.
    pub outbox: Outbox,
    /// A FLOW_STATS reply being produced a message at a time, as the
    /// outbox drains, or a FLOW_MOD applied a round at a time (see
    /// [`crate::Agent::pump`]).
    pub(crate) job: Option<crate::Job>,
    pub(crate) last_rx_ns: u64,
    /// When the connection was made.
    pub(crate) opened_ns: u64,
    /// Since when a started message has waited for its remaining bytes
    /// (while the connection is read).
    pub(crate) partial_since_ns: Option<u64>,
    /// Whether the peer has sent FEATURES_REQUEST: a controller's
    /// handshake, after which it counts for the fail mode.
    pub(crate) features_seen: bool,
    pub(crate) probe_sent: bool,
    /// The PACKET_IN limit's token bucket.
    pub(crate) pin_bucket: Gcra,
    /// PACKET_INs not sent because of the rate limit or a full outbox.
    pub packet_in_dropped: u64,
    pub(crate) next_xid: u32,
    pub config: ConnConfig,
    /// A management connection, not a controller (see
    /// [`crate::Agent::set_service`]).
    pub service: bool,
    /// Its bundles (dropped with it).
    pub bundles: Bundles,
    /// The form its packet-ins take (NXT_SET_PACKET_IN_FORMAT; standard
    /// OFPT_PACKET_IN until it says).
    pub packet_in_format: PacketInFormat,
    /// Its controller id (NXT_SET_CONTROLLER_ID; 0 until it says): it gets
    /// the packet-ins made for this id only.
    pub controller_id: u16,
    /// The match its OpenFlow 1.0 flow messages carry
    /// (NXT_SET_FLOW_FORMAT; 1.0's own until it says): with NXM, flow
    /// statistics it asks for with NXST_FLOW and the FLOW_REMOVED it gets
    /// are Nicira's ([`ofp::msg::nx_flow`]).
    pub flow_format: FlowFormat,
    /// Whether the high byte of its OpenFlow 1.0 flow mods' command is
    /// the table id (NXT_FLOW_MOD_TABLE_ID; off until it says).
    pub flow_mod_table_id: bool,
    /// Multipart requests whose last part has not come, by xid
    /// (see [`crate::Agent::multipart_request`]).
    pub(crate) partial: std::collections::BTreeMap<u32, Partial>,
    /// Its flow monitors (NXST_FLOW_MONITOR, [`crate::monitor`]).
    pub monitors: crate::monitor::Monitors,
}

/// A multipart request in parts (OFPMPF_REQ_MORE) whose last part has not
/// come yet.
#[derive(Debug)]
pub(crate) struct Partial {
    pub(crate) mp_type: ofp::msg::multipart::MultipartType,
    /// Each part's frame and request (None: an empty part, not decoded),
    /// in order.
    pub(crate) parts: Vec<(bytes::Bytes, Option<ofp::msg::multipart::MultipartRequest>)>,
    /// The parts' bytes together.
    pub(crate) size: usize,
    /// The next part must come before this.
    pub(crate) deadline_ns: u64,
}

/// The spec's default asynchronous configuration (OpenFlow 1.3.5 §7.3.10):
/// master and equal get every PACKET_IN, PORT_STATUS and FLOW_REMOVED
/// reason; slaves only PORT_STATUS.
pub fn default_async() -> AsyncConfig {
    AsyncConfig {
        packet_in_mask: [0b111, 0],
        port_status_mask: [0b111, 0b111],
        flow_removed_mask: [0b1111, 0],
    }
}

impl Conn {
    pub(crate) fn new(now_ns: u64, config: ConnConfig) -> Conn {
        let mut c = Conn {
            phase: Phase::AwaitHello,
            version: config.versions.highest().unwrap_or(Version::V1_3),
            role: ControllerRole::Equal,
            async_config: default_async(),
            framer: Framer::new(),
            outbox: Outbox::default(),
            job: None,
            last_rx_ns: now_ns,
            opened_ns: now_ns,
            partial_since_ns: None,
            features_seen: false,
            probe_sent: false,
            pin_bucket: Gcra::new(),
            packet_in_dropped: 0,
            next_xid: 1,
            config,
            service: false,
            bundles: Bundles::default(),
            packet_in_format: PacketInFormat::Standard,
            controller_id: 0,
            flow_format: FlowFormat::OpenFlow10,
            flow_mod_table_id: false,
            partial: Default::default(),
            monitors: Default::default(),
        };
        let xid = c.xid();
        c.send(&Message::Hello(config.versions.hello()), xid);
        c
    }

    /// A fresh xid for a message the switch starts.
    pub(crate) fn xid(&mut self) -> u32 {
        let x = self.next_xid;
        self.next_xid = self.next_xid.wrapping_add(1).max(1);
        x
    }

    /// Queues `msg` with `xid`.
    pub fn send(&mut self, msg: &Message, xid: u32) {
        // Every source of a long message is bounded (multipart replies are
        // split, trace text and PACKET_IN data cut to fit, flows and groups
        // whose stats could not be sent refused), so this cannot fail; if
        // it ever does, the message is dropped and logged rather than sent
        // with a clamped length that would desynchronise the peer.
        if let Err(e) = self.outbox.push(msg, xid, self.version) {
            tracing::error!(msg_type = ?msg.msg_type(), xid, "not sent: {e}");
            debug_assert!(false, "a {:?} of {e}", msg.msg_type());
        }
    }

    /// Whether the peer wants asynchronous message `reason` of a kind
    /// whose masks are `mask` (index 0: master/equal, 1: slave).
    pub(crate) fn wants(&self, mask: [u32; 2], reason: u8) -> bool {
        let m = if self.role == ControllerRole::Slave {
            mask[1]
        } else {
            mask[0]
        };
        self.phase == Phase::Open && m & (1 << reason) != 0
    }

    /// Whether the outbox is within the budget: more requests may be
    /// handled and more bytes read.
    pub fn within_budget(&self) -> bool {
        self.outbox.len() <= self.config.max_outbox
    }

    /// Whether the connection may take more input now: within its budget
    /// and not in the middle of a long reply.
    pub fn wants_input(&self) -> bool {
        self.within_budget() && self.job.is_none() && self.phase != Phase::Closing
    }

    /// Whether [`crate::Agent::pump`] has something to do: within the
    /// budget, with a long reply in progress or a whole request waiting.
    pub fn has_work(&self) -> bool {
        self.within_budget()
            && self.phase != Phase::Closing
            && (self.job.is_some() || self.framer.has_frame())
    }

    /// Whether a FLOW_MOD is being applied in rounds: each
    /// [`crate::Agent::pump`] does one, and the daemon should turn to
    /// its other work between them.
    pub fn in_rounds(&self) -> bool {
        matches!(self.job, Some(crate::Job::FlowMod(_)))
    }

    /// Whether the peer has let the outbox grow past the hard cap.
    pub fn over_hard_cap(&self) -> bool {
        self.outbox.len() > self.config.outbox_hard_cap
    }

    /// Takes one PACKET_IN token at `now_ns` if the rate allows and the
    /// outbox has room.
    pub(crate) fn packet_in_allowed(&mut self, now_ns: u64) -> bool {
        if !self.within_budget() {
            self.packet_in_dropped += 1;
            return false;
        }
        let rate = self.config.packet_in_rate as u64;
        if rate == 0 {
            return true;
        }
        // ns a PACKET_IN costs, and what the bucket may owe before one:
        // at most 10^9 ns times a u32 burst, which fits a u64.
        let interval = 1_000_000_000 / rate;
        let tolerance = interval * self.config.packet_in_burst as u64;
        if !self.pin_bucket.take(now_ns, interval, tolerance) {
            self.packet_in_dropped += 1;
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn conn(packet_in_rate: u32, packet_in_burst: u32) -> Conn {
        Conn::new(
            0,
            ConnConfig {
                packet_in_rate,
                packet_in_burst,
                ..ConnConfig::default()
            },
        )
    }

    /// A full bucket passes the burst and one more back to back, then one
    /// PACKET_IN per interval; each refusal is counted.
    #[test]
    fn packet_ins_keep_to_the_rate_and_burst() {
        let mut c = conn(1_000, 5);
        let passed = (0..20).filter(|_| c.packet_in_allowed(S)).count();
        assert_eq!((passed, c.packet_in_dropped), (6, 14));
        assert!(c.packet_in_allowed(S + S / 1_000));
        assert!(!c.packet_in_allowed(S + S / 1_000));
        assert_eq!(c.packet_in_dropped, 15);
        // A second of silence fills the bucket again, and no more.
        let passed = (0..20).filter(|_| c.packet_in_allowed(3 * S)).count();
        assert_eq!(passed, 6);
    }

    /// A rate of 0 is no limit.
    #[test]
    fn a_zero_rate_is_no_limit() {
        let mut c = conn(0, 0);
        assert!((0..100_000).all(|_| c.packet_in_allowed(S)));
        assert_eq!(c.packet_in_dropped, 0);
    }
}
