//! A tracked connection: its keys in both directions, what its protocol's
//! state machine knows, its mark and label, and when it expires.

use crate::config::{LiveTimeouts, Timeout};
use crate::key::Key;
use crate::tcp::{Phase, TcpConn};

/// The protocol part of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtoState {
    Tcp(TcpConn),
    /// UDP, ICMP queries, other protocols: whether a reply was seen.
    Simple {
        replied: bool,
    },
}

/// A connection. `key[0]` is what the originator's packets carry, `key[1]`
/// what the responder's carry (the reverse of `key[0]` unless translated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conn {
    pub key: [Key; 2],
    pub proto: ProtoState,
    /// When it expires, in milliseconds of the tracker's clock.
    pub expires_ms: u64,
    pub mark: u32,
    /// The 128-bit label as two words (high, low).
    pub label: [u64; 2],
    /// [`crate::nat::SNAT`] and/or [`crate::nat::DNAT`].
    pub nat: u8,
    /// Linux's ASSURED: the connection proved two-way (TCP: the handshake
    /// completed; others but ICMP: a reply seen). Once set it stays set;
    /// a full table evicts only connections without it (early drop).
    pub assured: bool,
}

impl Conn {
    /// The label.
    pub fn label(&self) -> u128 {
        crate::key::addr(self.label)
    }

    /// Whether what the connection has seen makes it assured now (see
    /// [`Conn::assured`]). ICMP is never assured, as in Linux.
    pub(crate) fn proves_assured(&self) -> bool {
        match self.proto {
            ProtoState::Tcp(c) => c.phase() == Phase::Established,
            ProtoState::Simple { replied } => replied && !self.key[0].is_icmp(),
        }
    }

    /// Whether the responder has answered (TCP: it sent its SYN-ACK or
    /// anything else; others: a reply seen).
    pub(crate) fn replied(&self) -> bool {
        match self.proto {
            ProtoState::Tcp(c) => {
                c.peer[1].state != crate::tcp::PeerState::Closed || c.phase() != Phase::Opening
            }
            ProtoState::Simple { replied } => replied,
        }
    }

    /// The idle timeout that applies now.
    pub(crate) fn timeout_ms(&self, t: &LiveTimeouts) -> u64 {
        let icmp = self.key[0].is_icmp();
        let which = match self.proto {
            ProtoState::Tcp(c) => match c.phase() {
                Phase::Opening => Timeout::TcpSynSent,
                Phase::Established => Timeout::TcpEstablished,
                Phase::Closing => Timeout::TcpFinWait,
                Phase::TimeWait => Timeout::TcpTimeWait,
                Phase::Close => Timeout::TcpClose,
            },
            ProtoState::Simple { .. } if icmp => Timeout::Icmp,
            ProtoState::Simple { replied } if self.key[0].proto == crate::key::proto::UDP => {
                if replied {
                    Timeout::UdpStream
                } else {
                    Timeout::Udp
                }
            }
            ProtoState::Simple { .. } => Timeout::Other,
        };
        t.ms(which)
    }

    /// The protocol state's name, as `dump-conntrack` prints it.
    pub fn state_name(&self) -> &'static str {
        match self.proto {
            ProtoState::Tcp(c) => match c.phase() {
                Phase::Opening => "SYN_SENT",
                Phase::Established => "ESTABLISHED",
                Phase::Closing => "FIN_WAIT",
                Phase::TimeWait => "TIME_WAIT",
                Phase::Close => "CLOSE",
            },
            ProtoState::Simple { replied: true } => "REPLIED",
            ProtoState::Simple { replied: false } => "UNREPLIED",
        }
    }
}
