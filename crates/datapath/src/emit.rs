//! Where a worker's pipeline outputs go: a port's transmit queue (the
//! frame's own UMEM chunk when it can move by descriptor, else a copy),
//! the port's shaped egress queue, the MAC learning switch for NORMAL, or
//! the agent's packet-in queue for CONTROLLER.
//!
//! Contract: [`Emit::emit`] never blocks and never allocates on the
//! transmit side (queues are bounded and count what they refuse); only a
//! frame for the controller is copied into a new buffer.

use std::sync::Arc;

use netdev::umem::{Desc, Umem};
use ofp::port::port_no;
use pipeline::Snapshot;

use crate::channel;
use crate::counters::{BridgeCounters, PortCounters};
use crate::normal::{self, Decision, Egress, MacTable};
use crate::tx::TxQueue;
use crate::vlan::PortVlans;
use crate::worker::WorkerPort;

/// Port number -> position in a worker's port list, asked once per
/// output: a table for the small numbers ports usually have (one load), a
/// map for the rest.
#[derive(Default)]
pub(crate) struct PortIndex {
    small: Vec<Option<u32>>,
    rest: std::collections::HashMap<u32, usize>,
}

impl PortIndex {
    /// Numbers below this are in the table.
    const SMALL: u32 = 1024;

    pub(crate) fn of(ports: impl Iterator<Item = u32>) -> PortIndex {
        let mut x = PortIndex {
            small: Vec::new(),
            rest: Default::default(),
        };
        for (i, p) in ports.enumerate() {
            if p < Self::SMALL {
                let p = p as usize;
                if x.small.len() <= p {
                    x.small.resize(p + 1, None);
                }
                x.small[p] = Some(i as u32);
            } else {
                x.rest.insert(p, i);
            }
        }
        x
    }

    pub(crate) fn get(&self, p: u32) -> Option<usize> {
        if p < Self::SMALL {
            self.small
                .get(p as usize)
                .copied()
                .flatten()
                .map(|i| i as usize)
        } else {
            self.rest.get(&p).copied()
        }
    }
}

/// Whether two ports' UMEMs are one (a chunk of one is the other's).
pub(crate) fn same_umem(a: Option<&Arc<Umem>>, b: Option<&Arc<Umem>>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if Arc::ptr_eq(a, b))
}

/// Where one worker's outputs go: the pieces of the worker it needs.
pub(crate) struct Emit<'a> {
    pub(crate) ports: &'a mut [WorkerPort],
    pub(crate) tx: &'a mut [TxQueue],
    pub(crate) index: &'a PortIndex,
    pub(crate) macs: &'a MacTable,
    /// The ports' VLAN settings, as the round found them.
    pub(crate) vlans: &'a PortVlans,
    pub(crate) counters: &'a BridgeCounters,
    pub(crate) channels: Option<&'a channel::Channels>,
    pub(crate) snap: &'a Snapshot,
    pub(crate) now: u64,
    /// The UMEM the frame lies in, if it does.
    pub(crate) umem: Option<&'a Arc<Umem>>,
    /// The patch ports the frame crossed to get here (its outputs to a
    /// patch port carry it on, `netdev::patch`).
    pub(crate) hops: u8,
}

impl Emit<'_> {
    /// Sends one pipeline output of a frame received on `in_port` (`frame`
    /// unless the output carries its own bytes). `own` is the frame's
    /// UMEM chunk while no output has taken it. True if a frame went to
    /// the agent.
    pub(crate) fn emit(
        &mut self,
        in_port: u32,
        o: &pipeline::Output,
        frame: &[u8],
        own: &mut Option<Desc>,
    ) -> bool {
        let data: &[u8] = o.data.as_deref().unwrap_or(frame);
        let whole = o.data.is_none();
        match o.port {
            port_no::CONTROLLER => {
                PortCounters::add(&self.counters.to_controller, 1);
                if let (Some(ch), Some(ctl)) = (self.channels, &o.controller) {
                    return ch.to_agent(channel::ToAgent {
                        in_port,
                        ctl: ctl.clone(),
                        frame: data.to_vec(),
                        tunnel: o.tunnel,
                    });
                }
            }
            port_no::NORMAL => self.normal(in_port, o, data, whole, own),
            p => {
                if let Some(x) = self.index.get(p) {
                    let q = o
                        .queue
                        .and_then(|id| self.ports[x].queues.iter_mut().find(|q| q.queue_id == id));
                    match q {
                        Some(q) => {
                            q.enqueue(data);
                        }
                        None => self.queue(x, data, whole, own, &o.tunnel, tun_opts(o)),
                    }
                }
            }
        }
        false
    }

    /// NORMAL ([`normal::switch`], written out: no call per output, and
    /// a bridge whose ports have no VLAN settings goes the plain way).
    fn normal(
        &mut self,
        in_port: u32,
        o: &pipeline::Output,
        data: &[u8],
        whole: bool,
        own: &mut Option<Desc>,
    ) {
        if self.vlans.is_plain() {
            let Some((src, dst, came)) = normal::l2(data) else {
                return;
            };
            let (vlan, e) = (came.map_or(0, |h| h.vid), normal::plain_egress(came));
            match self.macs.forward(vlan, src, dst, in_port, self.now) {
                Decision::Port(p) => {
                    if let Some(x) = self.index.get(p) {
                        match e {
                            Egress::Keep => self.queue(x, data, whole, own, &o.tunnel, tun_opts(o)),
                            e => self.tx[x].push_edited(data, e, &o.tunnel, tun_opts(o), self.hops),
                        }
                    }
                }
                Decision::Flood => {
                    for p in self.snap.ports.flood_from(in_port) {
                        if let Some(y) = self.index.get(p) {
                            match e {
                                Egress::Keep => {
                                    self.tx[y].push_meta(data, &o.tunnel, tun_opts(o), self.hops)
                                }
                                e => self.tx[y].push_edited(
                                    data,
                                    e,
                                    &o.tunnel,
                                    tun_opts(o),
                                    self.hops,
                                ),
                            }
                        }
                    }
                }
                Decision::Drop => {}
            }
            return;
        }
        let Ok(a) = normal::admit(self.vlans, data, in_port) else {
            return;
        };
        match self.macs.forward(a.vlan, a.src, a.dst, in_port, self.now) {
            Decision::Port(p) => {
                if let Some(x) = self.index.get(p) {
                    match a.to_port(self.vlans, p) {
                        Egress::Keep => self.queue(x, data, whole, own, &o.tunnel, tun_opts(o)),
                        e => self.tx[x].push_edited(data, e, &o.tunnel, tun_opts(o), self.hops),
                    }
                }
            }
            Decision::Flood => {
                for p in self.snap.ports.flood_from(in_port) {
                    let (Some(e), Some(y)) = (a.to_flood_port(self.vlans, p), self.index.get(p))
                    else {
                        continue;
                    };
                    match e {
                        Egress::Keep => {
                            self.tx[y].push_meta(data, &o.tunnel, tun_opts(o), self.hops)
                        }
                        e => self.tx[y].push_edited(data, e, &o.tunnel, tun_opts(o), self.hops),
                    }
                }
            }
            Decision::Drop => {}
        }
    }

    /// Queues `data` on port x: the frame's chunk itself when `data` is
    /// the whole frame and the port shares its UMEM, else a copy.
    fn queue(
        &mut self,
        x: usize,
        data: &[u8],
        whole: bool,
        own: &mut Option<Desc>,
        tun: &netdev::TunnelDst,
        opts: &[u8],
    ) {
        if whole && same_umem(self.umem, self.ports[x].dev.umem()) {
            if let Some(d) = own.take() {
                if !self.tx[x].push_chunk(d) {
                    // Queue full (counted): the chunk stays the batch's.
                    *own = Some(d);
                }
                return;
            }
        }
        self.tx[x].push_meta(data, tun, opts, self.hops);
    }
}
/// The Geneve options output `o` goes out with (empty: none).
#[inline]
fn tun_opts(o: &pipeline::Output) -> &[u8] {
    o.tun_opts.as_deref().unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_index_finds_small_and_large_numbers() {
        let x = PortIndex::of([3, 1, 0xffff_fff0, 1023, 1024].into_iter());
        assert_eq!(x.get(3), Some(0));
        assert_eq!(x.get(1), Some(1));
        assert_eq!(x.get(0xffff_fff0), Some(2));
        assert_eq!(x.get(1023), Some(3));
        assert_eq!(x.get(1024), Some(4));
        for absent in [0, 2, 4, 1022, 1025, port_no::LOCAL, port_no::CONTROLLER] {
            assert_eq!(x.get(absent), None, "{absent}");
        }
    }
}
