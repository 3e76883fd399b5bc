//! # datapath: ports -> pipeline -> ports
//!
//! A bridge ([`bridge::Bridge`]) is its OpenFlow agent's
//! [`agent::Datapath`] (`for_agent.rs`: publication, PACKET_OUT,
//! counters, the ports' one door (a [`NewPort`] added, ports deleted,
//! detached, re-attached, their VLANs set: only through the agent), the
//! NORMAL hop and the fast path's verdict for `trace`); its workers are
//! taken from it ([`Bridge::take_workers`]) and started on threads of
//! their own ([`spawn_workers`]) or, in a test, driven round by round. A
//! port as a user asks for it is checked once, for the configuration file
//! and `add-port` alike ([`request`]), and keeps the number its interface
//! had last ([`numbers`]).
//!
//! A bridge runs on one or more workers. A
//! [`BridgeWorker`] ([`worker`]: a state machine, one bounded round per
//! [`BridgeWorker::poll_once`]) owns its own handle on every port of the bridge (with
//! several workers, one member of each port's `PACKET_FANOUT` group, or one
//! queue of the LOCAL TAP device; ports added and removed while it runs
//! reach it through its [`Inbox`] at a batch boundary) and serves them end
//! to end on its thread: receive a batch from each
//! port, run every frame through the current pipeline snapshot, queue the
//! outputs per port, flush each port once per batch. Workers share only
//! what must be shared, all without locks: the published pipeline, the MAC
//! table (atomics, [`normal`]) and the shaping budget of each egress queue
//! (an atomic timestamp). Counters are per worker and summed when read.
//! The snapshot is picked up once per batch from an `ArcSwap` that the
//! control plane replaces (never a lock on the packet path). Packets for
//! NORMAL go through the MAC learning switch ([`normal`]); packets for the
//! controller go to the agent through [`channel`] (a full queue drops and
//! counts).
//!
//! A round looks at each port once (an AF_XDP port: one load of its RX
//! ring's index, so idle ports cost little) and receives only from those
//! with frames. When no port had a frame, the worker sleeps on the ports'
//! descriptors (an epoll set made once per port set, `sleep.rs`; up to
//! 10 ms) instead of spinning: this machine class has two cores.
//!
//! Bounded work and memory per round: receive buffers are as long as the
//! longest frame a port takes (from its MTU); a frame shorter than an
//! Ethernet header is dropped and counted as a receive error, one longer
//! than the buffers dropped and counted as truncated; a port's transmit
//! queue takes at most [`TX_QUEUE_MAX`] frames a round (the rest dropped and
//! counted) and keeps at most [`TX_KEEP`] buffers once the round is sent;
//! worker 0 runs at most [`PACKET_OUTS_PER_ROUND`] PACKET_OUTs a round.
//!
//! Health: a worker writes a heartbeat at the start of every round and
//! holds `running` true while its loop runs ([`BridgeCounters`]); the
//! daemon reads both for its metrics and to notice a stalled worker. The
//! loop does not catch panics: whoever runs it decides what a dead worker
//! means (the daemon's guard, handed to [`spawn_workers`], stops
//! and exits, see its `health` module).

pub mod bridge;
pub mod channel;
pub mod clock;
pub mod counters;
pub mod ct_commands;
mod emit;
pub mod fast;
mod for_agent;
pub mod histogram;
pub mod normal;
pub mod numbers;
pub mod open;
pub mod queue;
pub mod request;
mod rx;
mod sleep;
mod tx;
pub mod vlan;
pub mod worker;

pub use bridge::{spawn_workers, Attached, Bridge, Inbox, Opener, PortView, SetLog, WorkerGuard};
pub use counters::{BridgeCounters, PortCounters};
pub use for_agent::{NewPort, APPLY_TIMEOUT};
pub use normal::{Decision, Egress, MacTable};
pub use open::{
    tunnel_proto, tunnel_spec, Backend, PcapSpec, PortSpec, QueueSpec, BACKENDS, TUNNEL_OPTIONS,
    TUNNEL_TYPES,
};
pub use packet::tunnel::Proto as TunnelProto;
pub use request::{PortRequest, RequestError};
pub use tx::{TX_KEEP, TX_QUEUE_MAX};
pub use vlan::{PortVlan, PortVlans, VlanConfig, VlanMode};
pub use worker::{BridgeWorker, Round, WorkerPort, PACKET_OUTS_PER_ROUND};

/// Shortest frame the worker takes: an Ethernet header.
pub const ETH_HLEN: usize = 14;

/// Pins the calling thread to `cpu` (best effort: a refusal is reported and
/// the thread runs unpinned).
pub fn pin_to_cpu(cpu: usize) -> bool {
    match netdev::os::pin_to_cpu(cpu) {
        Ok(()) => true,
        // A CPU past the set: refused without a word, as before.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => false,
        Err(e) => {
            eprintln!("sluice: could not pin the worker to CPU {cpu}: {e}");
            false
        }
    }
}
