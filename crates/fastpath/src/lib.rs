//! # fastpath: the flow tables compiled to eBPF
//!
//! sluice's user-space pipeline is the reference; this crate compiles the
//! part of it that can run in the kernel, at the XDP hook of each port,
//! into eBPF instructions it generates itself (no compiler toolchain, no
//! object files). Pure code: a [`pipeline::Snapshot`] in, programs and map
//! contents out; loading them (bpf(2)) is `netdev::bpf`'s job and
//! deciding when is the datapath's.
//!
//! * [`asm`]: instructions and a label-resolving assembler.
//! * [`plan`]: what a rule does in the fast path, or why its packets go up.
//! * [`parse`]: the generated parser, the flow key as `packet::extract`
//!   builds it.
//! * [`compile`]: matching (inline or through hash maps per mask), the
//!   actions, the counters and their fold into OpenFlow counts.
//! * [`model`]: what the program does with one frame, in Rust (for
//!   `sluice-ctl trace`).
//!
//! What runs in the kernel: table 0 only; rules whose instructions are
//! apply/write-actions with at most one output (to a port XDP serves,
//! IN_PORT, or FLOOD/ALL when every usable port is one XDP serves) and
//! set_field of the Ethernet addresses, the IPv4 addresses,
//! the TCP/UDP ports (checksums updated incrementally) and the VLAN VID
//! and PCP, one push_vlan or pop_vlan, or drop.
//! Everything else (goto_table, groups, meters, queues, CONTROLLER,
//! NORMAL, other edits, frames the parser does not mirror, a
//! packet without the whole header a rule's edit writes) goes up to the
//! user-space pipeline through the port's AF_XDP socket, unchanged.

pub mod asm;
pub mod compile;
pub mod model;
pub mod parse;
pub mod plan;

pub use compile::{compile, Compiled, Counts, Fold, HashTable, Options, PortProgram};
pub use plan::{Final, Up};
