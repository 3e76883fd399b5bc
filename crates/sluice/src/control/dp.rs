//! How a bridge's agent reaches its datapath: publishing snapshots,
//! handing over PACKET_OUTs, reading port and queue counters.

use std::sync::Arc;

use agent::Datapath;
use arc_swap::ArcSwap;
use bytes::Bytes;
use datapath::channel::{Channels, PacketOutJob};
use datapath::queue::QueueCounters;
use datapath::PortCounters;
use ofp::msg::multipart::PortStats;
use pipeline::Snapshot;

/// What the agent reaches the datapath through.
pub struct DpHandle {
    pub shared: Arc<ArcSwap<Snapshot>>,
    pub channels: Arc<Channels>,
    /// Per port: its number and one set of counters per worker.
    pub counters: Vec<(u32, Vec<Arc<PortCounters>>)>,
    /// Per egress queue: port, queue id, counters (shared by the workers).
    pub queues: Vec<(u32, u32, Arc<QueueCounters>)>,
}

impl Datapath for DpHandle {
    fn publish(&self, snap: Arc<Snapshot>) {
        self.shared.store(snap);
    }

    fn packet_out(&self, in_port: u32, actions: Vec<ofp::Action>, frame: Bytes) -> bool {
        self.channels.to_datapath(PacketOutJob {
            in_port,
            actions,
            frame: frame.to_vec(),
        })
    }

    fn port_stats(&self, port_no: u32) -> Option<PortStats> {
        use std::sync::atomic::Ordering::Relaxed;
        let (_, c) = self.counters.iter().find(|(n, _)| *n == port_no)?;
        let t = PortCounters::sum(c);
        Some(PortStats {
            port_no,
            rx_packets: t.rx_packets.load(Relaxed),
            tx_packets: t.tx_packets.load(Relaxed),
            rx_bytes: t.rx_bytes.load(Relaxed),
            tx_bytes: t.tx_bytes.load(Relaxed),
            tx_dropped: t.tx_dropped.load(Relaxed),
            rx_errors: t.rx_errors.load(Relaxed),
            ..PortStats::default()
        })
    }

    fn queue_stats(&self, port_no: u32, queue_id: u32) -> Option<(u64, u64, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        let (_, _, c) = self
            .queues
            .iter()
            .find(|(p, q, _)| *p == port_no && *q == queue_id)?;
        Some((
            c.tx_bytes.load(Relaxed),
            c.tx_packets.load(Relaxed),
            c.tx_errors.load(Relaxed),
        ))
    }
}
