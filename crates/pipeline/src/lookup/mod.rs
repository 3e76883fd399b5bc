//! # lookup: finding the rule a packet matches
//!
//! Everything that turns a packet's flow key into a rule, and nothing that
//! runs the rule: this room imports no other room of the crate (not the
//! interpreter, not the control plane, not the snapshot), so both sides
//! build on it.
//!
//! * [`matchkey`] compiles an OpenFlow match into a masked flow key.
//! * [`rule`] is an installed rule as workers read it (match, priority,
//!   instructions, per-worker counters).
//! * [`classifier`] finds the highest-priority rule for a flow key
//!   (tuple-space search over the installed masks); [`conjunction`] is the
//!   lookup of a table with Open vSwitch's conjunctive flows.
//! * [`table`] is the control plane's copy of one flow table (rules by
//!   match and priority, with `expiry`'s idle and hard deadlines);
//!   [`published`] keeps the copies snapshots carry, brought up to date
//!   from a log of rule changes ([`changes`]), so publishing costs the
//!   changes, not the tables' size.
//! * The workers' caches in front of the classifier: [`emc`], the
//!   exact-match cache, which keeps what a publication did not touch;
//!   [`paths`], whole multi-table walks per ingress key; [`lookahead`],
//!   which loads what a batch's lookups will read while the cache misses.

pub mod changes;
pub mod classifier;
pub mod conjunction;
pub mod emc;
pub(crate) mod expiry;
pub mod lookahead;
pub mod matchkey;
pub mod paths;
pub mod published;
pub mod rule;
pub mod table;
