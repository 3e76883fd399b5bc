//! The agent against byte streams a controller could send: handshake,
//! malformed and refused messages (exact error type/code, connection
//! stays up, nothing half-applied), roles, buffers, barriers, splitting.
//!
//! The rooms: `fake.rs` the datapath the agent drives here and the helpers
//! that speak to it; `session.rs` a connection's life (handshake, versions,
//! errors, roles, buffers, barriers, replies and their budgets);
//! `management.rs` ports, management commands, Nicira settings and
//! packet-ins; `nicira_formats.rs` OpenFlow 1.0 with Nicira's flow formats
//! (NXM), as plain ovs-ofctl speaks it; `flow_monitor.rs` its flow
//! monitor (NXST_FLOW_MONITOR).

#[path = "../common/mod.rs"]
mod common;
mod fake;
mod flow_monitor;
mod management;
mod nicira_formats;
mod session;
