//! The two bounded queues between a bridge's workers and its OpenFlow
//! agent, with an eventfd each to wake the side that sleeps.
//!
//! * packet-in: workers push frames for the controller; a full queue drops
//!   the frame and counts it, never blocking a worker.
//! * packet-out: the agent pushes PACKET_OUTs; worker 0 runs them through
//!   the pipeline's action executor and sends them like any output.
//!
//! Both are lock-free (`crossbeam_queue::ArrayQueue`); a worker writes the
//! eventfd at most once per batch.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crossbeam_queue::ArrayQueue;
use ofp::Action;
use pipeline::ToController;

/// A frame for the controller.
#[derive(Debug)]
pub struct ToAgent {
    pub in_port: u32,
    pub ctl: ToController,
    pub frame: Vec<u8>,
    /// The packet's tunnel id and destination (zero: none).
    pub tunnel: netdev::TunnelDst,
}

/// A PACKET_OUT for the datapath to run.
#[derive(Debug)]
pub struct PacketOutJob {
    pub in_port: u32,
    pub actions: Vec<Action>,
    pub frame: Vec<u8>,
    /// NXT_RESUME: the paused walk to go on with (`actions` is empty),
    /// and the fields the controller sent back.
    pub resume: Option<Box<(pipeline::continuation::Continuation, Vec<ofp::oxm::Oxm>)>>,
}

pub use netdev::os::EventFd;

/// The queues of one bridge.
#[derive(Debug)]
pub struct Channels {
    pub packet_in: ArrayQueue<ToAgent>,
    pub packet_in_wake: EventFd,
    /// Frames for the controller dropped because the queue was full.
    pub packet_in_dropped: AtomicU64,
    pub packet_out: ArrayQueue<PacketOutJob>,
    pub packet_out_wake: EventFd,
    pub learn: ArrayQueue<pipeline::exec::Learned>,
    /// Learned flows dropped because the queue was full.
    pub learn_dropped: AtomicU64,
    /// PACKET_OUTs dropped because the queue was full.
    pub packet_out_dropped: AtomicU64,
}

impl Channels {
    /// Queues of `capacity` entries each.
    pub fn new(capacity: usize) -> std::io::Result<Channels> {
        Ok(Channels {
            packet_in: ArrayQueue::new(capacity),
            packet_in_wake: EventFd::new()?,
            packet_in_dropped: AtomicU64::new(0),
            packet_out: ArrayQueue::new(capacity),
            packet_out_wake: EventFd::new()?,
            learn: ArrayQueue::new(capacity),
            learn_dropped: AtomicU64::new(0),
            packet_out_dropped: AtomicU64::new(0),
        })
    }

    /// A worker hands a frame to the agent (false: queue full, counted).
    pub fn to_agent(&self, m: ToAgent) -> bool {
        if self.packet_in.push(m).is_err() {
            self.packet_in_dropped.fetch_add(1, Relaxed);
            return false;
        }
        true
    }

    /// The agent hands a PACKET_OUT to the datapath (false: queue full,
    /// counted).
    pub fn to_datapath(&self, job: PacketOutJob) -> bool {
        let ok = self.packet_out.push(job).is_ok();
        if !ok {
            self.packet_out_dropped.fetch_add(1, Relaxed);
        }
        self.packet_out_wake.wake();
        ok
    }
}
