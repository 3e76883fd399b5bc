//! An OVSDB database engine (RFC 7047), the part of an OVSDB server that
//! knows no sockets: schemas ([`schema`]), values ([`datum`]), conditions
//! and mutations ([`cond`]), transactions ([`txn`]) over a database
//! ([`db`]), monitors and their updates ([`monitor`]), the crash-safe log
//! on disk ([`storage`]), and the JSON-RPC methods of a server with its
//! sessions, locks and blocked transactions ([`server`]).
//!
//! The daemon (`sluice --ovsdb`) runs [`server::Server`] on a thread of
//! its own and moves bytes between it and the sockets.

pub mod cond;
pub mod datum;
pub mod db;
pub mod error;
pub mod monitor;
pub mod schema;
pub mod server;
pub mod storage;
pub mod txn;
pub mod uuid;

pub use datum::{Atom, Datum};
pub use db::{Commit, Database, Row};
pub use error::Error;
pub use schema::Schema;
pub use uuid::{Uuid, UuidGen};
