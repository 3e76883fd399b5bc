//! The actions of an apply-actions list, in order: the common ones inline
//! in [`Exec::run_actions`], the rare ones (Nicira's, beyond load and
//! resubmit) out of line; reading and writing fields (set_field, load,
//! move) on the packet, its metadata and its tunnel.

use super::*;

impl Exec {
    pub(super) fn remark(&mut self, frame: &mut [u8], cx: &mut Ctx<'_>, prec: u8) {
        if self.key.flags() & (packet::flags::IPV4 | packet::flags::IPV6) == 0 {
            return;
        }
        // Raise the drop precedence (DSCP bits 2..1) by `prec`, saturating.
        let dscp = self.key.get(s::IP_DSCP) as u8;
        let dp = ((dscp >> 1) & 3).saturating_add(prec).min(3);
        let new = (dscp & !0b110) | (dp << 1);
        self.before_change(frame, cx);
        edit::set_field(frame, &self.off, &Oxm::exact(OxmField::IpDscp, new as u128));
    }

    pub(super) fn run_actions<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        list: &[Action],
        frame: &mut B,
        cx: &mut Ctx<'_>,
        depth: u32,
    ) {
        for (i, a) in list.iter().enumerate() {
            if T && !matches!(a, Action::Output { .. } | Action::Group(_)) {
                self.note(ofp::text::format_action(a));
            }
            match a {
                Action::Output { port, max_len } => self.output::<T>(*port, *max_len, cx),
                Action::OutputTrunc { port, max_len } => {
                    self.output_trunc::<T>(*port, *max_len, &frame[..], cx)
                }
                Action::Group(g) => self.group::<T>(*g, frame, cx, depth),
                Action::SetQueue(q) => cx.queue = Some(*q),
                Action::PopQueue => cx.queue = None,
                Action::SetField(MatchEntry::Basic(o)) => self.write_any::<T, _>(o, frame, cx),
                Action::RegLoad(l) => {
                    if !crate::lookup::matchkey::load_metadata(&mut self.key, l) {
                        self.write_any::<T, _>(&l.masked(), frame, cx);
                    }
                }
                Action::PushVlan(t)
                | Action::PushMpls(t)
                | Action::PopMpls(t)
                | Action::PushPbb(t) => {
                    self.before_change(frame, cx);
                    let r = match a {
                        Action::PushVlan(_) => edit::push_vlan(frame, &self.off, *t),
                        Action::PushMpls(_) => edit::push_mpls(frame, &self.off, *t),
                        Action::PopMpls(_) => edit::pop_mpls(frame, &self.off, *t),
                        _ => edit::push_pbb(frame, &self.off, *t),
                    };
                    self.after_edit::<T>(r, frame, cx);
                }
                Action::PopVlan | Action::PopPbb => {
                    self.before_change(frame, cx);
                    let r = if *a == Action::PopVlan {
                        edit::pop_vlan(frame, &self.off)
                    } else {
                        edit::pop_pbb(frame, &self.off)
                    };
                    self.after_edit::<T>(r, frame, cx);
                }
                Action::SetNwTtl(_)
                | Action::DecNwTtl
                | Action::DecTtlIds(_)
                | Action::SetMplsTtl(_)
                | Action::DecMplsTtl => {
                    self.before_change(frame, cx);
                    let r = match a {
                        Action::SetNwTtl(t) => edit::nw_ttl(frame, &self.off, Some(*t)),
                        Action::DecNwTtl | Action::DecTtlIds(_) => {
                            edit::nw_ttl(frame, &self.off, None)
                        }
                        Action::SetMplsTtl(t) => edit::mpls_ttl(frame, &self.off, Some(*t)),
                        _ => edit::mpls_ttl(frame, &self.off, None),
                    };
                    if r == Ttl::Skipped {
                        self.after_edit::<T>(Edit::Skipped, frame, cx);
                    }
                    if r == Ttl::Expired {
                        if T {
                            self.note("    TTL expired: the packet is dropped here".into());
                        }
                        // One packet-in for the connections of each
                        // controller id dec_ttl(ids) names (dec_ttl: 0),
                        // as Open vSwitch's compose_dec_ttl sends them.
                        let ids: &[u16] = match a {
                            Action::DecTtlIds(ids) => ids,
                            _ => &[0],
                        };
                        if cx.snap.invalid_ttl_to_controller && !ids.is_empty() {
                            let extra = self.packet_in_extra(bytes::Bytes::new());
                            for &id in ids {
                                if self.outputs.len() >= MAX_OUTPUTS_PER_PACKET {
                                    self.over_limit += 1;
                                    continue;
                                }
                                self.outputs.push(Output {
                                    port: port_no::CONTROLLER,
                                    queue: None,
                                    data: Some(frame.to_vec()),
                                    controller: Some(ToController {
                                        controller_id: id,
                                        extra: extra.clone(),
                                        ..ToController::new(
                                            PacketInReason::InvalidTtl,
                                            cx.table_id,
                                            cx.cookie,
                                            ofp::action::OFPCML_NO_BUFFER,
                                        )
                                    }),
                                    tunnel: self.tun.dst(),
                                    tun_opts: None,
                                });
                            }
                        }
                        cx.dropped = true;
                        return;
                    }
                }
                Action::CopyTtlOut | Action::CopyTtlIn => {
                    self.before_change(frame, cx);
                    let done = edit::copy_ttl(frame, &self.off, *a == Action::CopyTtlOut);
                    if !done {
                        self.after_edit::<T>(Edit::Skipped, frame, cx);
                    }
                }
                Action::Resubmit(r) => {
                    self.resubmit::<T, _>(r, frame, cx, depth);
                    if cx.dropped || cx.exited {
                        if cx.paused {
                            self.freeze_actions(cx, &list[i + 1..]);
                        }
                        return;
                    }
                }
                Action::Note(_) | Action::Sample(_) => {}
                Action::Exit => {
                    cx.exited = true;
                    return;
                }
                // A conjunctive flow is never the result of a lookup
                // (`crate::lookup::conjunction`): nothing runs its actions.
                Action::Conjunction(_) => {}
                Action::SetField(MatchEntry::Other(_)) | Action::Experimenter { .. } => {}
                _ => {
                    if self.run_rare::<T, B>(a, frame, cx, depth) {
                        if cx.paused {
                            self.freeze_actions(cx, &list[i + 1..]);
                        }
                        return;
                    }
                }
            }
        }
    }

    /// The actions few pipelines run (the Nicira extensions beyond
    /// load and resubmit), out of line: [`Exec::run_actions`] is entered
    /// once per table a packet visits, and its set-up grew with every
    /// action it held inline. True when the action list ends here.
    #[inline(never)]
    pub(super) fn run_rare<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        a: &Action,
        frame: &mut B,
        cx: &mut Ctx<'_>,
        depth: u32,
    ) -> bool {
        match a {
            Action::RegMove(m) => {
                let v = self.field_value(m.src, frame, cx) >> m.src_ofs;
                let dst = ofp::action::Subfield {
                    field: m.dst,
                    ofs: m.dst_ofs,
                    n_bits: m.n_bits,
                };
                self.write_subfield::<T, _>(&dst, v, frame, cx);
            }
            Action::OutputReg(o) => self.output_reg::<T>(o, frame, cx),
            Action::StackPush(f) => {
                self.stack_push::<T>(f, frame, cx);
                if cx.dropped {
                    return true;
                }
            }
            Action::Learn(l) => {
                let learner = cx.rule_id;
                let taught = learn::build(l, learner, |f| self.field_value(f, frame, cx));
                if T {
                    // As Open vSwitch's trace: the flow, then (for
                    // `-generate`) handed over as a packet's would be.
                    let mut fm = taught.flow_mod.clone();
                    fm.command = ofp::msg::flow::FlowModCommand::Add;
                    self.note(format!(" -> {}", ofp::text::format_flow_mod(&fm)));
                }
                self.teach.push(taught, cx.now_ns, cx.snap.removals);
            }
            Action::StackPop(f) => self.stack_pop::<T, _>(f, frame, cx),
            Action::Clone(list) => {
                self.clone_actions::<T>(list, frame, cx, depth);
                if cx.dropped || cx.exited {
                    return true;
                }
            }
            Action::Controller(c) if c.pause => {
                self.pause::<T>(c, frame, cx, depth);
                return true;
            }
            Action::Controller(c) => self.controller::<T>(c, frame, cx),
            Action::Multipath(m) => self.multipath::<T, _>(m, frame, cx),
            Action::Bundle(b) => self.bundle::<T, _>(b, frame, cx),
            // run_actions' own (listed, so that a new action is placed
            // in one of the two on purpose).
            Action::Output { .. }
            | Action::Group(_)
            | Action::SetQueue(_)
            | Action::PopQueue
            | Action::OutputTrunc { .. }
            | Action::SetField(_)
            | Action::RegLoad(_)
            | Action::PushVlan(_)
            | Action::PushMpls(_)
            | Action::PopMpls(_)
            | Action::PushPbb(_)
            | Action::PopVlan
            | Action::PopPbb
            | Action::SetNwTtl(_)
            | Action::DecNwTtl
            | Action::DecTtlIds(_)
            | Action::SetMplsTtl(_)
            | Action::DecMplsTtl
            | Action::CopyTtlOut
            | Action::CopyTtlIn
            | Action::Resubmit(_)
            | Action::Note(_)
            | Action::Sample(_)
            | Action::Exit
            | Action::Conjunction(_)
            | Action::Experimenter { .. } => {}
            Action::Ct(c) => {
                self.conntrack::<T, B>(c, frame, cx, depth);
                if cx.dropped || cx.failed || cx.paused {
                    return true;
                }
            }
            Action::CtClear => self.key.clear_ct(),
            // The frame as it is now, its tags included (Open vSwitch's
            // datapath compares the packet's size).
            Action::CheckPktLarger(c) => {
                let big = frame.len() > c.pkt_len as usize;
                if T {
                    self.note(format!(
                        "    -> the packet's {} bytes are {} {}",
                        frame.len(),
                        if big { "more than" } else { "not more than" },
                        c.pkt_len
                    ));
                }
                self.write_subfield::<T, _>(&c.dst, u128::from(big), frame, cx);
            }
            // Only inside ct (validation refuses it elsewhere).
            Action::Nat(_) => {}
        }
        false
    }

    /// Where a tunnel port sends the packet as it is now: not back to the
    /// address it arrived at (see [`Output::tunnel`]).
    #[inline]
    pub(super) fn out_tunnel(&self) -> TunnelDst {
        let mut d = self.tun.dst();
        if (self.tun.ipv4_dst, self.tun.ipv6_dst) == self.tun_arrived {
            d.ipv4_dst = 0;
            d.ipv6_dst = [0; 16];
        }
        d
    }

    /// The packet's current value of field `f` (its metadata, or its
    /// headers as they are now).
    pub(super) fn field_value(&mut self, f: OxmField, frame: &[u8], cx: &mut Ctx<'_>) -> u128 {
        let t = &self.tun;
        match f {
            OxmField::Metadata => self.metadata as u128,
            OxmField::TunnelId => t.id as u128,
            OxmField::TunIpv4Src => t.ipv4_src as u128,
            OxmField::TunIpv4Dst => t.ipv4_dst as u128,
            OxmField::TunIpv6Src => t.ipv6_src,
            OxmField::TunIpv6Dst => t.ipv6_dst,
            OxmField::NxmInPort => ofp::resubmit::port_to_u16(cx.in_port) as u128,
            _ => {
                if cx.key_stale {
                    self.reextract(frame, cx.in_port);
                    cx.key_stale = false;
                }
                crate::lookup::matchkey::read_field(&self.key, f).unwrap_or(0)
            }
        }
    }

    /// [`Exec::write_field`], and the writes that change the header
    /// layout: `NXM_OF_VLAN_TCI` (Open vSwitch's OpenFlow 1.0 view of the
    /// tag) pushes a tag when CFI becomes set on a packet without one and
    /// pops it when CFI is cleared, then sets VID and PCP.
    pub(super) fn write_any<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        o: &Oxm,
        frame: &mut B,
        cx: &mut Ctx<'_>,
    ) {
        if o.field != OxmField::VlanTci {
            return self.write_field::<T>(o, frame, cx);
        }
        let old = self.field_value(OxmField::VlanTci, frame, cx);
        let m = o.mask.unwrap_or(0xffff) & 0xffff;
        let tci = ((old & !m) | (o.value & m)) as u16;
        let tagged = self.key.flags() & packet::flags::VLAN != 0;
        if tci & 0x1000 == 0 {
            if tagged {
                self.before_change(frame, cx);
                let r = edit::pop_vlan(frame, &self.off);
                self.after_edit::<T>(r, frame, cx);
            }
            return;
        }
        if !tagged {
            self.before_change(frame, cx);
            let r = edit::push_vlan(frame, &self.off, packet::parse::ethertype::VLAN);
            self.after_edit::<T>(r, frame, cx);
        }
        self.before_change(frame, cx);
        for (f, v) in [
            (OxmField::VlanVid, (tci & 0x1fff) as u128),
            (OxmField::VlanPcp, (tci >> 13) as u128),
        ] {
            let r = edit::set_field(frame, &self.off, &Oxm::exact(f, v));
            self.after_edit::<T>(r, frame, cx);
        }
    }

    /// Writes `o.value` into the bits of field `o.field` its mask selects
    /// (all of them without a mask): metadata in place, headers by
    /// [`edit::set_field`].
    pub(super) fn write_field<const T: bool>(
        &mut self,
        o: &Oxm,
        frame: &mut [u8],
        cx: &mut Ctx<'_>,
    ) {
        let full = o.field.width_mask();
        let m = o.mask.unwrap_or(full) & full;
        let merge = |old: u128| (old & !m) | (o.value & m);
        if is_tunnel_field(o.field) {
            let t = &mut self.tun;
            match o.field {
                OxmField::TunnelId => t.id = merge(t.id as u128) as u64,
                OxmField::TunIpv4Src => t.ipv4_src = merge(t.ipv4_src as u128) as u32,
                OxmField::TunIpv4Dst => t.ipv4_dst = merge(t.ipv4_dst as u128) as u32,
                OxmField::TunIpv6Src => t.ipv6_src = merge(t.ipv6_src),
                _ => t.ipv6_dst = merge(t.ipv6_dst),
            }
            // The next lookup sees it.
            self.key.set_tunnel(&self.tun);
            return;
        }
        if crate::lookup::matchkey::is_key_metadata(o.field) {
            // Registers and the packet mark live in the key itself.
            crate::lookup::matchkey::write_metadata(&mut self.key, o.field, o.value, m);
            return;
        }
        match o.field {
            OxmField::Metadata => self.metadata = merge(self.metadata as u128) as u64,
            // Open vSwitch's `load:...->NXM_OF_IN_PORT[]`: the packet now
            // counts as received on that port (an output to its real
            // ingress port is then allowed; IN_PORT means the new one).
            OxmField::NxmInPort => {
                let old = ofp::resubmit::port_to_u16(cx.in_port) as u128;
                cx.in_port = ofp::resubmit::Resubmit::port_from_u16(merge(old) as u16);
                self.key.set(s::IN_PORT, cx.in_port as u64);
            }
            _ => {
                let exact = if m == full {
                    Oxm::exact(o.field, o.value & full)
                } else {
                    let old = self.field_value(o.field, frame, cx);
                    Oxm::exact(o.field, merge(old) & o.field.full_mask())
                };
                self.before_change(frame, cx);
                let r = edit::set_field(frame, &self.off, &exact);
                self.after_edit::<T>(r, frame, cx);
            }
        }
    }
}
