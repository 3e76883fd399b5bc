//! # pipeline: what happens to a packet
//!
//! Pure data structures, no threads and no I/O: packets in memory in,
//! decisions out; flow-mods in, new versions out. (One exception, for
//! the daemon to start: [`garbage::on_thread`], where what a big change
//! leaves to free is dropped.)
//!
//! * [`matchkey`] compiles an OpenFlow match into a masked flow key.
//! * [`classifier`] finds the highest-priority rule for a flow key
//!   (tuple-space search over the installed masks); [`published`] keeps
//!   the copies snapshots carry, brought up to date from a log of rule
//!   changes, so publishing costs the changes, not the tables' size.
//!   [`conjunction`] is the lookup of a table with Open vSwitch's
//!   conjunctive flows.
//!
//! * [`control`] is the control plane's copy: tables, groups and meters with
//!   the OpenFlow semantics of FLOW_MOD, GROUP_MOD and METER_MOD; it
//!   publishes immutable [`Snapshot`]s, each with the recent rule changes
//!   ([`changes`]) so the workers' exact-match caches ([`emc`]) keep what
//!   a publication did not touch; [`paths`] caches whole multi-table
//!   walks per ingress key; [`lookahead`] loads what a batch's lookups
//!   will read while the cache misses.
//! * [`exec`] runs packets through a snapshot ([`Worker::process`]):
//!   instructions, the action set, groups, meters; [`edit`] changes headers
//!   in place with incremental checksums; [`meter`] holds the meters'
//!   bands and counters.
//! * [`bucket`] is the one token bucket (GCRA) of the switch: meter bands,
//!   the datapath's egress queues and the agent's PACKET_IN limit use it.
//! * [`trace`] tells what the pipeline does with one packet, step by step,
//!   changing nothing.

pub mod bucket;
pub mod changes;
pub mod classifier;
pub mod conjunction;
pub mod control;
pub mod edit;
pub mod emc;
pub mod exec;
mod expiry;
pub mod flow_packet;
pub mod garbage;
pub mod lookahead;
pub mod matchkey;
pub mod meter;
pub mod paths;
pub mod ports;
pub mod published;
pub mod rule;
pub mod table;
pub mod trace;
pub mod validate;

pub use classifier::{Classifier, RuleId};
pub use control::{Config, Pipeline, Removed};
pub use exec::{Output, PacketInExtra, PortState, Snapshot, ToController, Worker};
pub use matchkey::{compile, MaskedKey};
pub use ports::PortTable;
pub use rule::Rule;
