//! # pipeline: what happens to a packet
//!
//! Pure data structures, no threads and no I/O: packets in memory in,
//! decisions out; flow-mods in, new versions out. (One exception, for
//! the daemon to start: [`garbage::on_thread`], where what a big change
//! leaves to free is dropped.)
//!
//! The rooms, each importing only those listed before it:
//!
//! * [`bucket`] is the one token bucket (GCRA) of the switch: meter bands,
//!   the datapath's egress queues and the agent's PACKET_IN limit use it;
//!   [`meter`] holds the meters' bands and counters.
//! * [`ports`] is the published port table (FLOOD and ALL worked out when
//!   ports change); [`edit`] changes headers in place with incremental
//!   checksums; [`flow_packet`] builds frames from a flow's fields.
//! * [`lookup`] finds the rule a packet matches: compiled matches, the
//!   classifier, the published tables and the workers' caches.
//! * [`snapshot`] is what workers run: one immutable version of the tables,
//!   groups, meters and ports, and the types of what a packet becomes
//!   ([`Output`], [`ToController`]). [`describe`] writes keys and rules as
//!   traces show them.
//! * [`exec`] runs packets through a snapshot ([`Worker::process`]):
//!   instructions, the action set, groups, meters, conntrack, learn.
//! * [`control`] is the control plane's copy: tables, groups and meters with
//!   the OpenFlow semantics of FLOW_MOD, GROUP_MOD and METER_MOD (checked
//!   by [`validate`]); it publishes [`Snapshot`]s, each with the recent
//!   rule changes so the workers' caches keep what a publication did not
//!   touch.
//! * [`trace`] tells what the pipeline does with one packet, step by step,
//!   changing nothing.
//! * [`tlv`] is the Geneve option table (which option each
//!   `tun_metadataN` field stands for).

pub mod bucket;
pub mod continuation;
pub mod control;
pub mod describe;
pub mod edit;
pub mod exec;
pub mod flow_packet;
pub mod garbage;
pub mod lookup;
pub mod meter;
pub mod ports;
pub mod select;
pub mod snapshot;
pub mod tlv;
pub mod trace;
pub mod validate;

pub use control::{Config, FlowChange, Pipeline, Removed};
pub use exec::Worker;
pub use exec::{UNPUBLISHED_MAX, UNPUBLISHED_TTL_NS};
pub use lookup::classifier::{Classifier, RuleId};
pub use lookup::matchkey::{compile, MaskedKey};
pub use lookup::rule::Rule;
pub use ports::{PortState, PortTable};
pub use snapshot::{Output, PacketInExtra, Snapshot, ToController};

/// The stack a thread that walks packets through the pipeline gets (the
/// workers): the deepest walk the resubmit limits allow is 4 096 call
/// levels ([`exec`]'s resubmit module doc), which a release build walks
/// in under 4 MiB and a debug build in far more (a test walks it on this
/// stack). The pages are touched only as deep as a walk goes. The
/// daemon's main thread, which runs packet-outs and traces, has the
/// process's own (8 MiB by default).
pub const WALK_STACK: usize = if cfg!(debug_assertions) {
    512 << 20
} else {
    16 << 20
};
