//! Messages the switch sends on its own: PACKET_IN (buffered, cut to
//! `max_len`, rate-limited per connection, for the connections of its
//! controller id, in each connection's format: OFPT_PACKET_IN,
//! NXT_PACKET_IN or NXT_PACKET_IN2) and FLOW_REMOVED.

use super::*;
use ofp::msg::nxt::{NxPacketIn, PacketIn2, PacketInFormat};

impl<D: Datapath> Agent<D> {
    pub(crate) fn flow_removed(&mut self, removed: &[Removed], now_ns: u64) {
        for r in removed.iter().filter(|r| r.notify()) {
            let fr = r.message(now_ns);
            // A 1.0 connection in the NXM flow format gets Nicira's
            // NXT_FLOW_REMOVED, as Open vSwitch sends it.
            let nx = ofp::msg::nx_flow::flow_removed(&fr);
            let msg = Message::FlowRemoved(fr);
            for c in self.conns.values_mut() {
                if c.wants(c.async_config.flow_removed_mask, r.reason.value()) {
                    let xid = c.xid();
                    let nxm = c.version == Version::V1_0
                        && c.flow_format == ofp::msg::nx_flow::FlowFormat::Nxm;
                    c.send(if nxm { &nx } else { &msg }, xid);
                }
            }
        }
    }

    /// Flows packets taught (`learn`): added within the pipeline's limits
    /// (`pipeline::control::learn`), seen by every packet once published
    /// (at the next publication, as any flow-mod). A flow the teaching
    /// worker holds until then (`seq` set) asks for a publication even
    /// if nothing changed, so that the worker lets it go soon.
    pub fn handle_learned(&mut self, learned: &[pipeline::exec::Learned], now_ns: u64) {
        for l in learned {
            if self.pipeline.learn(l, now_ns) || l.seq != 0 {
                self.dirty = true;
            }
        }
        self.report_flow_changes(None);
    }

    /// A packet the datapath sends to the controller: buffered if the
    /// controller asked for less than the whole frame, then a PACKET_IN to
    /// every connection that wants it and whose rate limit allows.
    pub fn handle_packet_in(&mut self, in_port: u32, ctl: ToController, frame: Bytes, now_ns: u64) {
        self.handle_packet_in_tunneled(in_port, &TunnelDst::default(), ctl, frame, now_ns)
    }

    /// [`Agent::handle_packet_in`] for a packet with tunnel metadata.
    ///
    /// The packet-in goes to the connections whose controller id is the
    /// packet-in's (Open vSwitch's `connmgr_send_async_msg`), that want
    /// its reason and whose rate limit allows, each in the format it chose
    /// (NXT_SET_PACKET_IN_FORMAT): OFPT_PACKET_IN, NXT_PACKET_IN, or
    /// NXT_PACKET_IN2, the only one that carries `controller(userdata=..)`
    /// (the others drop it, as Open vSwitch does). Its metadata is what
    /// Open vSwitch's `flow_get_metadata` lists, in its order: in_port,
    /// then the pipeline fields that are not zero (OpenFlow 1.3 7.4.1):
    /// `tunnel_id`, `tun_src`, `tun_dst`, `tun_ipv6_src`, `tun_ipv6_dst`,
    /// `reg0`-`reg15`, `pkt_mark`, `metadata`.
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
        // A table miss of OpenFlow 1.0-1.2 goes to those versions only.
        let to = |c: &Conn| {
            c.controller_id == ctl.controller_id
                && c.wants(c.async_config.packet_in_mask, reason)
                && (!ctl.implicit_miss || c.version < Version::V1_3)
        };
        if !self.conns.values().any(to) {
            return;
        }
        let extra = ctl.extra.as_deref().cloned().unwrap_or_default();
        let mut fields = vec![(OxmField::InPort, in_port as u128)];
        fields.extend(
            [
                (OxmField::TunnelId, tun.id as u128),
                (OxmField::TunIpv4Src, extra.tun_ipv4_src as u128),
                (OxmField::TunIpv4Dst, tun.ipv4_dst as u128),
                (OxmField::TunIpv6Src, extra.tun_ipv6_src),
                (OxmField::TunIpv6Dst, u128::from_be_bytes(tun.ipv6_dst)),
            ]
            .into_iter()
            .chain((0..16).map(|i| (OxmField::Reg(i as u8), extra.regs[i] as u128)))
            .chain([
                (OxmField::PktMark, extra.pkt_mark as u128),
                (OxmField::Metadata, extra.metadata as u128),
            ])
            .filter(|(_, v)| *v != 0),
        );
        let match_ = ofp::Match {
            entries: fields
                .into_iter()
                .map(|(f, v)| ofp::MatchEntry::Basic(Oxm::exact(f, v)))
                .collect(),
        };
        let total_len = frame.len().min(u16::MAX as usize) as u16;
        // What is sent of the frame: max_len bytes (all with
        // OFPCML_NO_BUFFER), and never more than one message of any
        // format holds; the rest waits in a buffer.
        let room = packet_in_data_max(&match_, extra.userdata.len());
        let cut = if max_len == 0xffff {
            room
        } else {
            (max_len as usize).min(room)
        };
        let (buffer_id, data) = if frame.len() <= cut {
            (NO_BUFFER, frame)
        } else {
            let id = self.buffers.put(in_port, frame.clone());
            (id, frame.slice(..cut))
        };
        let pin = PacketIn {
            buffer_id,
            total_len,
            reason: ctl.reason,
            table_id: ctl.table_id,
            cookie: ctl.cookie,
            match_,
            data,
        };
        // Each format's message, made once for all the connections that
        // chose it (the standard one takes `pin` itself).
        let format = |c: &Conn| match c.packet_in_format {
            PacketInFormat::Nxt => PacketInFormat::Nxt,
            PacketInFormat::Nxt2 => PacketInFormat::Nxt2,
            _ => PacketInFormat::Standard,
        };
        let uses = |f| self.conns.values().any(|c| to(c) && format(c) == f);
        let nxt = uses(PacketInFormat::Nxt).then(|| NxPacketIn::from_packet_in(&pin).message());
        let nxt2 = uses(PacketInFormat::Nxt2).then(|| {
            PacketIn2 {
                continuation: extra.continuation.clone(),
                ..PacketIn2::from_packet_in(&pin, extra.userdata.clone())
            }
            .message()
        });
        let standard = uses(PacketInFormat::Standard).then(|| Message::PacketIn(pin));
        for c in self.conns.values_mut() {
            if to(c) && c.packet_in_allowed(now_ns) {
                let msg = match format(c) {
                    PacketInFormat::Nxt => nxt.as_ref(),
                    PacketInFormat::Nxt2 => nxt2.as_ref(),
                    _ => standard.as_ref(),
                };
                let Some(msg) = msg else { continue };
                let xid = c.xid();
                c.send(msg, xid);
            }
        }
    }
}

/// The most frame bytes a packet-in with metadata `m` and `userdata`
/// bytes of userdata may carry, whatever its format: 65 535 less the
/// largest format's headers (NXT_PACKET_IN2's properties, padding and
/// userdata; OFPT_PACKET_IN's header, match and 2 bytes of padding; with
/// the in_port match alone, 65 535 - 42 for OFPT_PACKET_IN).
pub(crate) fn packet_in_data_max(m: &ofp::Match, userdata: usize) -> usize {
    let standard = 24 + m.wire_len() + 2;
    // NXT_PACKET_IN: 16 + 24 bytes of header, NXM fields no longer than
    // their OXM form (in_port is shorter), 2 bytes of padding.
    let nxt = 40 + m.wire_len() + 2;
    let nxt2 = PacketIn2::overhead(m) + userdata;
    ofp::header::MAX_MSG_LEN.saturating_sub(standard.max(nxt).max(nxt2))
}
