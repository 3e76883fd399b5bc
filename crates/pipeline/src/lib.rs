//! # pipeline: what happens to a packet
//!
//! Pure data structures, no threads and no I/O: packets in memory in,
//! decisions out; flow-mods in, new versions out.
//!
//! * [`matchkey`] compiles an OpenFlow match into a masked flow key.
//! * [`classifier`] finds the highest-priority rule for a flow key
//!   (tuple-space search over the installed masks, copy-on-write publishing).
//!
//! Flow tables with OpenFlow semantics, instructions, actions, groups and
//! meters build on these (issue 3, in progress).

pub mod classifier;
pub mod control;
pub mod matchkey;
pub mod rule;
pub mod table;
pub mod validate;

pub use classifier::{Classifier, RuleId};
pub use control::{Config, Pipeline, Removed};
pub use matchkey::{compile, MaskedKey};
pub use rule::Rule;
