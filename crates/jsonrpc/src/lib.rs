//! JSON-RPC 1.0 over stream sockets, as Open vSwitch speaks it: OVSDB
//! (RFC 7047 section 4) and unixctl (`ovs-appctl`) both use it.
//!
//! The pieces, each usable alone:
//! * [`Message`]: request, notification, reply and error, read from and
//!   written to `serde_json::Value` as Open vSwitch does (`message.rs`).
//! * [`Framer`]: cuts a byte stream of concatenated JSON values, with a
//!   bound on a message's size and nesting depth (`framer.rs`). Pure.
//! * [`Remote`]: the connection methods as ovsdb(7) spells them
//!   (`punix:`, `ptcp:`, `pssl:`, `unix:`, `tcp:`, `ssl:`) (`remote.rs`).
//! * [`Stream`], [`Conn`], [`Listener`]: a non-blocking socket (Unix, TCP
//!   or TLS), one connection over it with its framer, output buffer and
//!   output budget, and the passive side's listening socket. No threads,
//!   no clock: the owner polls the descriptors and calls in.
//!
//! Why its own crate: the OVSDB server and the daemon's unixctl server
//! share all of it, and none of it knows about either.

mod conn;
pub mod framer;
mod listener;
mod message;
mod remote;
mod stream;

pub use conn::{Conn, ConnError, ConnLimits, Incoming};
pub use framer::{FrameError, Framer, Limits};
pub use listener::{clear_stale_socket, Listener};
pub use message::Message;
pub use remote::{Remote, DEFAULT_PORT};
pub use stream::Stream;
