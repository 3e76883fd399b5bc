//! # ofp: OpenFlow 1.0 to 1.5, sans-IO
//!
//! The wire format of OpenFlow 1.3 (spec 1.3.5), the other versions sluice
//! speaks (1.0, 1.2, 1.4, 1.5: [`version`], [`of10`], [`of1x`]) translated
//! onto the same 1.3-shaped [`Message`], and the ovs-ofctl text syntax
//! for flows, groups and meters. No sockets, no threads, no clocks: bytes
//! in, typed messages out, and back.
//!
//! * [`Framer`] cuts a byte stream into frames; [`Message::decode`] turns a
//!   frame into a [`Message`] or the [`OfpError`] the switch must answer;
//!   [`Message::encode`] writes one.
//! * [`oxm`], [`action`], [`instruction`] hold the building blocks, with
//!   `validate` methods that return the exact error code the spec names.
//! * [`text`] parses and prints flows (`table=0,priority=100,tcp,tp_dst=80,
//!   actions=output:2`), groups and meters as ovs-ofctl users type them.
//!
//! Contract: no function in this crate panics on any input, whether bytes
//! from the network or text from a user; fuzz targets in `fuzz/` hold it to
//! that.

mod macros;

pub mod action;
pub mod conjunction;
pub mod ct;
pub mod error;
pub mod framer;
pub mod header;
pub mod instruction;
pub mod learn;
pub mod msg;
pub mod multipath;
pub mod nicira;
pub mod of10;
pub mod of1x;
pub mod oxm;
pub mod port;
pub mod resubmit;
pub mod text;
pub mod version;
pub mod wire;

pub use action::Action;
pub use error::{ErrorCode, OfpError};
pub use framer::{Framer, Rejection};
pub use header::{Header, MsgType, OFP_VERSION};
pub use instruction::Instruction;
pub use msg::flow::{FlowMod, FlowModCommand, FlowRemoved, PacketIn, PacketOut};
pub use msg::Message;
pub use oxm::{Match, MatchEntry, Oxm, OxmField};
pub use version::{Version, Versions};
