//! What the workers run: the published [`Snapshot`] of the pipeline (its
//! tables, groups, meters and port table, one version, immutable) and
//! the types of what a packet becomes ([`Output`], [`ToController`]).
//!
//! Contract: a snapshot never changes once published; a new version is a
//! new snapshot (sharing what did not change).

use rustc_hash::FxHashMap;
use std::sync::Arc;

use ofp::msg::flow::PacketInReason;
use ofp::msg::group::GroupType;
use packet::TunnelDst;

use crate::lookup::changes::ChangeLog;
use crate::lookup::rule::Counters;
use crate::meter::MeterState;
use crate::ports::PortTable;

/// A group as workers run it.
#[derive(Debug)]
pub struct GroupRt {
    pub group_type: GroupType,
    pub buckets: Vec<ofp::msg::group::Bucket>,
    /// The selection method as given (GROUP_DESC reports it).
    pub selection: Option<ofp::msg::selection::SelectionMethod>,
    /// How a select group picks its bucket, worked out from it.
    pub selector: crate::select::Selector,
    pub counters: Arc<Counters>,
    pub bucket_counters: Vec<Arc<Counters>>,
    pub total_weight: u32,
}

/// Per-table lookup (`packets`) and matched (`bytes`) counters, per worker.
pub type TableCounters = Counters;

/// An immutable version of the pipeline, shared by all workers.
#[derive(Debug)]
pub struct Snapshot {
    pub version: u64,
    /// The rule changes of the last versions: what a cache entry of an
    /// earlier version is checked against.
    pub changes: Arc<ChangeLog>,
    /// One classifier per table (shared with the control plane, which
    /// brings a copy no snapshot holds up to date for the next version:
    /// [`crate::lookup::published`]).
    pub tables: Arc<crate::lookup::published::Tables>,
    /// Whether more than one table has rules: a packet may be looked up
    /// more than once, and its walks are worth caching ([`crate::lookup::paths`]).
    pub multi_table: bool,
    pub table_counters: Arc<Vec<TableCounters>>,
    /// Groups, buckets' liveness and meters are looked up per packet:
    /// keyed with Fx (a multiply), not SipHash; their ids come from the
    /// controller, never from the network.
    pub groups: FxHashMap<u32, Arc<GroupRt>>,
    /// Which buckets of each group are live (watch port up, watched group
    /// live), worked out from the port table when a group or a port
    /// changed (shared by the versions in between), so a packet never
    /// walks a chain of watched groups.
    pub bucket_live: Arc<FxHashMap<u32, Box<[bool]>>>,
    pub meters: FxHashMap<u32, Arc<MeterState>>,
    /// The ports, with the FLOOD and ALL sets ([`crate::ports`]).
    pub ports: PortTable,
    /// OFPC_INVALID_TTL_TO_CONTROLLER.
    pub invalid_ttl_to_controller: bool,
    /// A table miss is a packet-in for OpenFlow 1.0-1.2 controllers
    /// ([`crate::Pipeline::miss_to_controller`]).
    pub miss_to_controller: bool,
    /// The connection tracker (`ct`), the pipeline's one.
    pub conntrack: Arc<conntrack::Tracker>,
    /// The Geneve option table, to read received frames' options and
    /// write those of frames sent ([`crate::tlv`]).
    pub geneve: Arc<crate::tlv::GeneveMap>,
    /// Per worker, the highest sequence number of the flows it holds
    /// until publication that the control plane has taken (a worker then
    /// lets them go: [`crate::exec`]'s `unpublished`).
    pub learned_seen: Arc<[u64]>,
}

/// Why a packet goes to the controller, and what the PACKET_IN says.
///
/// Cheap to clone: what few packet-ins carry (userdata, the packet's
/// registers) is behind one shared [`PacketInExtra`], `None` for most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToController {
    pub reason: PacketInReason,
    pub table_id: u8,
    pub cookie: u64,
    pub max_len: u16,
    /// The connections it goes to: those whose controller id
    /// (NXT_SET_CONTROLLER_ID) is this one; 0, every connection's until
    /// it sets one, unless `controller(id=N)` or `dec_ttl(ids)` says.
    pub controller_id: u16,
    /// The rest, when there is any.
    pub extra: Option<Arc<PacketInExtra>>,
    /// A table miss of OpenFlow 1.0-1.2 ([`Snapshot::miss_to_controller`]):
    /// only connections of those versions get it.
    pub implicit_miss: bool,
}

impl ToController {
    /// A packet-in for the connections of controller id 0, with nothing
    /// more than the packet's port and tunnel.
    pub const fn new(reason: PacketInReason, table_id: u8, cookie: u64, max_len: u16) -> Self {
        ToController {
            reason,
            table_id,
            cookie,
            max_len,
            controller_id: 0,
            extra: None,
            implicit_miss: false,
        }
    }

    /// `controller(userdata=...)`'s bytes (empty: none).
    pub fn userdata(&self) -> &[u8] {
        self.extra.as_deref().map_or(&[], |e| &e.userdata[..])
    }
}

/// What a packet-in carries beyond its reason, table, cookie and the
/// packet's port and tunnel destination: the userdata of
/// `controller(userdata=...)` (for NXT_PACKET_IN2 connections) and the
/// packet's pipeline fields at that moment, which the packet-in's
/// metadata lists where they are not zero (as Open vSwitch's
/// `flow_get_metadata` does).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PacketInExtra {
    pub userdata: bytes::Bytes,
    /// `reg0`-`reg15`.
    pub regs: [u32; 16],
    pub pkt_mark: u32,
    /// OpenFlow's `metadata`.
    pub metadata: u64,
    /// `tun_src`, `tun_ipv6_src` (the destinations ride in
    /// [`Output::tunnel`]).
    pub tun_ipv4_src: u32,
    pub tun_ipv6_src: u128,
    /// `controller(pause)`'s continuation: `NXPINT_CONTINUATION`'s value
    /// ([`crate::continuation`]); empty for any other packet-in.
    pub continuation: bytes::Bytes,
}

impl PacketInExtra {
    /// Whether it says nothing (no packet-in needs it then).
    pub fn is_empty(&self) -> bool {
        *self == PacketInExtra::default()
    }
}

/// One copy of the packet leaving the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// A port number, or CONTROLLER / LOCAL / NORMAL.
    pub port: u32,
    pub queue: Option<u32>,
    /// The bytes, when they differ from the final packet.
    pub data: Option<Vec<u8>>,
    /// Set for port CONTROLLER.
    pub controller: Option<ToController>,
    /// The packet's tunnel metadata at the output: where a tunnel port
    /// sends it (`tun_dst`) and with which VNI (`tun_id`). A packet that
    /// came from a tunnel and still has the destination it arrived with
    /// (this host's own address) has none here: a flow-based tunnel port
    /// does not send it back to this host (Open vSwitch refuses that too),
    /// which would loop between two tunnel ports for ever.
    pub tunnel: TunnelDst,
    /// The Geneve options a tunnel port sends it with (the packet's
    /// `tun_metadataN` fields, [`crate::tlv::GeneveMap::write`]); None for
    /// a packet with none (out of line: most packets have none, and every
    /// output carries this).
    pub tun_opts: Option<Box<[u8]>>,
}
