//! Messages the switch sends on its own: PACKET_IN (buffered, cut to
//! `max_len`, rate-limited per connection) and FLOW_REMOVED.

use super::*;

impl<D: Datapath> Agent<D> {
    pub(crate) fn flow_removed(&mut self, removed: &[Removed], now_ns: u64) {
        for r in removed.iter().filter(|r| r.notify()) {
            let msg = Message::FlowRemoved(r.message(now_ns));
            for c in self.conns.values_mut() {
                if c.wants(c.async_config.flow_removed_mask, r.reason.value()) {
                    let xid = c.xid();
                    c.send(&msg, xid);
                }
            }
        }
    }

    /// Flows packets taught (`learn`): added within the pipeline's limits
    /// (`pipeline::control::learn`), seen by packets once published (at
    /// the next publication, as any flow-mod).
    pub fn handle_learned(&mut self, learned: &[pipeline::exec::Learned], now_ns: u64) {
        for l in learned {
            if self.pipeline.learn(l, now_ns) {
                self.dirty = true;
            }
        }
    }

    /// A packet the datapath sends to the controller: buffered if the
    /// controller asked for less than the whole frame, then a PACKET_IN to
    /// every connection that wants it and whose rate limit allows.
    pub fn handle_packet_in(&mut self, in_port: u32, ctl: ToController, frame: Bytes, now_ns: u64) {
        self.handle_packet_in_tunneled(in_port, &TunnelDst::default(), ctl, frame, now_ns)
    }

    /// [`Agent::handle_packet_in`] for a packet with tunnel metadata: the
    /// PACKET_IN's match carries its `tunnel_id` (OpenFlow 1.3 7.4.1: the
    /// pipeline fields that are not zero) and `tun_dst`/`tun_ipv6_dst` as
    /// Open vSwitch sends them.
    pub fn handle_packet_in_tunneled(
        &mut self,
        in_port: u32,
        tun: &TunnelDst,
        ctl: ToController,
        frame: Bytes,
        now_ns: u64,
    ) {
        if self
            .ports
            .get(&in_port)
            .is_some_and(|p| p.config & port_config::NO_PACKET_IN != 0)
        {
            return;
        }
        let max_len = if ctl.reason == PacketInReason::NoMatch && ctl.max_len == 0 {
            self.switch_config.miss_send_len
        } else {
            ctl.max_len
        };
        let reason = ctl.reason.value();
        if !self
            .conns
            .values()
            .any(|c| c.wants(c.async_config.packet_in_mask, reason))
        {
            return;
        }
        let total_len = frame.len().min(u16::MAX as usize) as u16;
        // What is sent of the frame: max_len bytes (all with
        // OFPCML_NO_BUFFER), and never more than one message holds; the
        // rest waits in a buffer.
        let cut = if max_len == 0xffff {
            PACKET_IN_DATA_MAX
        } else {
            (max_len as usize).min(PACKET_IN_DATA_MAX)
        };
        let (buffer_id, data) = if frame.len() <= cut {
            (NO_BUFFER, frame)
        } else {
            let id = self.buffers.put(in_port, frame.clone());
            (id, frame.slice(..cut))
        };
        let msg = Message::PacketIn(PacketIn {
            buffer_id,
            total_len,
            reason: ctl.reason,
            table_id: ctl.table_id,
            cookie: ctl.cookie,
            match_: ofp::Match {
                entries: std::iter::once((OxmField::InPort, in_port as u128))
                    .chain(
                        [
                            (OxmField::TunnelId, tun.id as u128),
                            (OxmField::TunIpv4Dst, tun.ipv4_dst as u128),
                            (OxmField::TunIpv6Dst, u128::from_be_bytes(tun.ipv6_dst)),
                        ]
                        .into_iter()
                        .filter(|(_, v)| *v != 0),
                    )
                    .map(|(f, v)| ofp::MatchEntry::Basic(Oxm::exact(f, v)))
                    .collect(),
            },
            data,
        });
        for c in self.conns.values_mut() {
            if c.wants(c.async_config.packet_in_mask, reason) && c.packet_in_allowed(now_ns) {
                let xid = c.xid();
                c.send(&msg, xid);
            }
        }
    }
}

/// The most frame bytes one PACKET_IN carries: 65 535 less its header
/// (24 bytes), the in_port match (16) and the 2 bytes of padding.
pub(crate) const PACKET_IN_DATA_MAX: usize = ofp::header::MAX_MSG_LEN - 42;
