//! # packet: frames in, flow keys out
//!
//! * [`extract`] parses a frame once into a [`FlowKey`], the fixed layout of
//!   every OpenFlow 1.3 match field the packet carries (and, set apart,
//!   its tunnel metadata), plus [`Offsets`] of
//!   its headers for actions that edit them in place.
//! * [`checksum`] computes and incrementally updates the Internet checksum
//!   (RFC 1071/1624, with UDP's zero rule) and CRC32c for SCTP.
//! * [`frame`] is the trait through which the pipeline grows and shrinks a
//!   frame, wherever its bytes live.
//! * [`tunnel`] holds a packet's tunnel metadata and the tunnel ports'
//!   header codec.
//! * [`wire`] has checked views of every header the switch reads or
//!   writes (one file each), the one transport-checksum follow-up and the
//!   one frame builder.
//!
//! Contract: nothing here allocates or panics, whatever the bytes: a header
//! cut short or malformed ends parsing, and the key then matches only what
//! was really present (see [`flags`]).

pub mod checksum;
pub mod frame;
pub mod key;
pub mod parse;
pub mod tunnel;
pub mod wire;

pub use frame::FrameBuf;
pub use key::{flags, slots, FlowKey, Slot, KEY_WORDS, PACKET_WORDS, TUN_METADATA_KEY_FIELDS};
pub use parse::{extract, l2_addresses, Offsets};
pub use tunnel::{TunnelDst, TunnelMeta};
