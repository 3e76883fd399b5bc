//! `controller(pause)` and its resumption ([`crate::continuation`]): the
//! pause sends the packet-in and unwinds the walk, each level freezing
//! what it had left; [`Worker::resume`] runs the frozen levels in order,
//! then the action set, as the walk would have.

use super::*;
use crate::continuation::{Continuation, Frame};

impl Exec {
    /// `controller(pause)`: the packet-in goes (the continuation is added
    /// to it once the walk has unwound, [`Exec::finish_pause`]) and the
    /// walk stops here. Where sluice cannot freeze the walk (in a clone, a
    /// group bucket or the action set) the packet is dropped and counted
    /// over the limits.
    pub(super) fn pause<const T: bool>(
        &mut self,
        c: &ofp::action::Controller,
        frame: &[u8],
        cx: &mut Ctx<'_>,
        depth: u32,
    ) {
        if cx.clone_depth > 0 || depth > 0 || cx.in_action_set {
            if T {
                self.note(
                    "    -> the packet is dropped: sluice cannot pause in a clone, a group bucket or the action set"
                        .into(),
                );
            }
            self.over_limit += 1;
            cx.failed = true;
            cx.dropped = true;
            return;
        }
        let before = self.outputs.len();
        self.controller::<T>(c, frame, cx);
        self.pause_output = (self.outputs.len() > before).then_some(before);
        self.frozen.clear();
        cx.paused = true;
        cx.exited = true;
        if T {
            self.note("    -> paused: the walk is frozen into the packet-in's continuation".into());
        }
    }

    /// Freezes the actions a list had left after the one that paused.
    pub(super) fn freeze_actions(&mut self, cx: &Ctx<'_>, rest: &[Action]) {
        if !rest.is_empty() {
            self.frozen.push(Frame::Actions {
                table: cx.table_id,
                cookie: cx.cookie,
                actions: rest.to_vec(),
            });
        }
    }

    /// Freezes the instructions a flow had left after its apply-actions.
    pub(super) fn freeze_instructions(&mut self, table: u8, cookie: u64, rest: &[Instruction]) {
        if !rest.is_empty() {
            self.frozen.push(Frame::Instructions {
                table,
                cookie,
                instructions: rest.to_vec(),
            });
        }
    }

    /// The walk has unwound from a pause: the continuation (the frozen
    /// levels, the action set, the packet's metadata) joins the packet-in.
    pub(super) fn finish_pause(&mut self, cx: &Ctx<'_>) {
        let mut action_set = Vec::new();
        self.set.ordered(&mut action_set);
        let c = Continuation {
            frames: std::mem::take(&mut self.frozen),
            action_set,
            meta_words: self.key.w[packet::key::PACKET_WORDS..].to_vec(),
            metadata: self.metadata,
            tun: self.tun,
            resubmit_depth: cx.resubmit_depth,
            resubmits: cx.resubmits,
        };
        let Some(ctl) = self
            .pause_output
            .take()
            .and_then(|i| self.outputs.get_mut(i))
            .and_then(|o| o.controller.as_mut())
        else {
            return;
        };
        let mut extra = ctl.extra.as_deref().cloned().unwrap_or_default();
        extra.continuation = c.encode();
        ctl.extra = Some(Arc::new(extra));
    }

    /// Runs a flow's frozen instructions: apply-actions, the action-set
    /// ones, write_metadata and a goto_table (followed as the walk
    /// follows it).
    fn resume_instructions(
        &mut self,
        table: u8,
        cookie: u64,
        list: &[Instruction],
        frame: &mut Vec<u8>,
        cx: &mut Ctx<'_>,
    ) {
        let mut goto = None;
        for (k, ins) in list.iter().enumerate() {
            match ins {
                Instruction::ApplyActions(a) => {
                    self.run_actions::<false, _>(a, frame, cx, 0);
                    if cx.dropped {
                        return;
                    }
                    if cx.exited {
                        if cx.paused {
                            self.freeze_instructions(table, cookie, &list[k + 1..]);
                        }
                        return;
                    }
                }
                Instruction::ClearActions => self.set.clear(),
                Instruction::WriteActions(a) => self.set.write(a),
                Instruction::WriteMetadata { metadata, mask } => {
                    self.metadata = (self.metadata & !mask) | (metadata & mask)
                }
                Instruction::GotoTable(t) => goto = Some(*t as usize),
                // The meter was charged before the pause.
                Instruction::Meter(_) | Instruction::Experimenter { .. } => {}
            }
        }
        if let Some(t) = goto.filter(|&t| t > table as usize) {
            self.walk::<false, _>(t, None, frame, cx, None, 0);
        }
    }
}

impl Worker {
    /// NXT_RESUME: goes on with a paused packet, `frame` as the controller
    /// sent it back, from `in_port`, with `c`'s frozen walk and metadata
    /// and then the fields the controller sent (`fields`: registers,
    /// `metadata`, `pkt_mark`, the tunnel; they win over the frozen ones).
    /// Outputs as [`Worker::packet_out`]'s, each with its bytes; a pause
    /// again sends a packet-in whose continuation holds what is left of
    /// this one too.
    pub fn resume(
        &mut self,
        snap: &Snapshot,
        in_port: u32,
        c: &Continuation,
        fields: &[ofp::oxm::Oxm],
        frame: &mut Vec<u8>,
        now_ns: u64,
    ) -> Vec<Output> {
        let e = &mut self.exec;
        e.outputs.clear();
        e.set.clear();
        e.stack.clear();
        e.frozen.clear();
        e.pause_output = None;
        e.metadata = c.metadata;
        e.tun = c.tun;
        e.tun_arrived = (0, 0);
        e.reextract(frame, in_port);
        for (k, w) in c.meta_words.iter().enumerate() {
            if let Some(slot) = e.key.w.get_mut(packet::key::PACKET_WORDS + k) {
                *slot = *w;
            }
        }
        for o in fields {
            let v = o.value & o.field.full_mask();
            match o.field {
                OxmField::Metadata => e.metadata = v as u64,
                OxmField::TunnelId => e.tun.id = v as u64,
                OxmField::TunIpv4Src => e.tun.ipv4_src = v as u32,
                OxmField::TunIpv4Dst => e.tun.ipv4_dst = v as u32,
                OxmField::TunIpv6Src => e.tun.ipv6_src = v,
                OxmField::TunIpv6Dst => e.tun.ipv6_dst = v,
                f => crate::lookup::matchkey::write_metadata(&mut e.key, f, v, f.full_mask()),
            }
        }
        e.key.set_tunnel(&e.tun);
        e.set.write(&c.action_set);
        let mut cx = Ctx {
            resubmits: c.resubmits,
            resubmit_depth: c.resubmit_depth,
            ..Ctx::new(snap, self.id, in_port, now_ns)
        };
        let n = c.frames.len();
        for (i, f) in c.frames.iter().enumerate() {
            // Every level but the outermost ran inside a resubmit.
            cx.in_resubmit = u32::from(i + 1 < n);
            match f {
                Frame::Actions {
                    table,
                    cookie,
                    actions,
                } => {
                    (cx.table_id, cx.cookie) = (*table, *cookie);
                    e.run_actions::<false, _>(actions, frame, &mut cx, 0);
                }
                Frame::Instructions {
                    table,
                    cookie,
                    instructions,
                } => {
                    (cx.table_id, cx.cookie) = (*table, *cookie);
                    e.resume_instructions(*table, *cookie, instructions, frame, &mut cx);
                }
            }
            if cx.paused {
                e.frozen.extend(c.frames[i + 1..].iter().cloned());
                break;
            }
            if cx.dropped || cx.failed || cx.exited {
                break;
            }
        }
        if cx.failed {
            e.outputs.clear();
        } else if cx.paused {
            e.finish_pause(&cx);
        } else if !cx.dropped && !e.set.is_empty() {
            let mut list = Vec::new();
            e.set.ordered(&mut list);
            cx.in_action_set = true;
            cx.exited = false;
            e.run_actions::<false, _>(&list, frame, &mut cx, 0);
        }
        e.outputs
            .drain(..)
            .map(|mut o| {
                o.data.get_or_insert_with(|| frame.clone());
                o
            })
            .collect()
    }
}
