//! The walk through the tables: one packet's lookups (through the caches
//! or the classifier), each matched rule's instructions in the spec's
//! order, the goto chain, then the action set; and keeping the flow key
//! and offsets right as edits change the packet.

use super::*;

impl Exec {
    /// Runs one packet. With `T` (a trace), nothing is counted, meters are
    /// not charged, the cache is not used, and every step is written to
    /// `log`; without it this is the fast path, and the trace code is
    /// compiled out.
    #[allow(clippy::too_many_arguments)] // the packet, where it came from, and the context
    pub(super) fn process<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        worker: usize,
        emc: Option<&mut Emc>,
        mut paths: Option<&mut crate::lookup::paths::Paths>,
        held: &mut Unpublished,
        snap: &Snapshot,
        in_port: u32,
        tun: &TunnelMeta,
        tun_opts: &[u8],
        frame: &mut B,
        now_ns: u64,
    ) -> &[Output] {
        self.outputs.clear();
        self.set.clear();
        self.metadata = 0;
        self.tun = *tun;
        self.tun_arrived = (tun.ipv4_dst, tun.ipv6_dst);
        self.key.clear_metadata();
        self.stack.clear();
        self.reextract(frame, in_port);
        // A Geneve frame's options become its tun_metadataN fields, or
        // the frame is dropped as Open vSwitch drops it (crate::tlv).
        if !tun_opts.is_empty() {
            if let Err(e) = snap.geneve.read(tun_opts, &mut self.key) {
                if T {
                    self.note(format!("Geneve options refused ({e:?}): dropped"));
                }
                self.tun_opts_refused += 1;
                return &self.outputs;
            }
        }
        if T {
            if let Some((vid, pcp)) = self.tci {
                self.key.set(s::VLAN_VID, vid as u64);
                self.key.set(s::VLAN_PCP, pcp as u64);
            }
            self.note(format!("Flow: {}", describe_key(&self.key)));
        }
        let holding = !held.is_empty();
        if !T && holding {
            held.prune(snap, worker, now_ns);
        }
        let taught_before = self.teach.pending.len();
        // A walk recorded for this ingress key replays; otherwise this one
        // is recorded, when the cache is in use (not while flows this
        // worker taught wait for publication: see `unpublished`).
        let mut replay = None;
        let mut ingress = None;
        if let Some(p) = paths
            .as_deref_mut()
            .filter(|_| snap.multi_table && !holding)
        {
            replay = p.get(snap.version, &self.key);
            if replay.is_none() {
                ingress = Some(self.key);
                self.recorded.clear();
            }
        }
        let record = ingress.is_some();
        self.uncacheable = false;
        self.run_walk::<T, B>(
            worker, emc, held, snap, in_port, frame, now_ns, replay, record,
        );
        if let (Some(key), Some(p), false) = (ingress, paths, self.uncacheable) {
            p.put(snap.version, &key, &self.recorded);
            self.recorded.clear();
        }
        // What this packet taught, its next ones see.
        if !T && self.teach.pending.len() > taught_before {
            for l in &mut self.teach.pending[taught_before..] {
                held.hold(l, snap, worker, now_ns);
            }
        }
        &self.outputs
    }

    /// The walk of [`Exec::process`] and the action set after it.
    #[allow(clippy::too_many_arguments)] // the packet and its context
    #[inline(always)]
    pub(super) fn run_walk<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        worker: usize,
        emc: Option<&mut Emc>,
        held: &Unpublished,
        snap: &Snapshot,
        in_port: u32,
        frame: &mut B,
        now_ns: u64,
        replay: Option<&[Option<Arc<Rule>>]>,
        record: bool,
    ) -> Walk {
        let mut cx = Ctx {
            unpublished: held,
            cookie: 0,
            buckets_run: std::mem::take(&mut self.buckets_carried),
            replay,
            record,
            ..Ctx::new(snap, worker, in_port, now_ns)
        };
        let walked = self.walk::<T, B>(0, None, frame, &mut cx, emc, 0);
        if cx.failed {
            // As Open vSwitch: a packet over the resubmit limits is dropped
            // whole, whatever it had been sent to.
            self.outputs.clear();
            self.buckets_used = cx.buckets_run;
            return walked;
        }
        if cx.paused {
            // The action set is frozen with the rest ([`pause`]).
            self.finish_pause(&cx);
            self.buckets_used = cx.buckets_run;
            return walked;
        }
        if walked == Walk::Stop {
            self.buckets_used = cx.buckets_run;
            return walked;
        }
        // After an exit too (ovs-actions(7): "Actions in the action set
        // are still executed").
        cx.exited = false;
        if !self.set.is_empty() {
            let mut list = std::mem::take(&mut self.scratch);
            self.set.ordered(&mut list);
            if T {
                self.note(format!("Action set: {}", ofp::text::format_actions(&list)));
                self.indent += 1;
            }
            cx.in_action_set = true;
            self.run_actions::<T, _>(&list, frame, &mut cx, 0);
            if T {
                self.indent -= 1;
            }
            self.scratch = list;
        } else if T {
            self.note("Action set: empty".into());
        }
        self.buckets_used = cx.buckets_run;
        walked
    }

    /// Looks the packet up from table `first` on and runs what matches,
    /// following goto_table: the pipeline's walk, or a resubmit's (there a
    /// table without a matching rule does nothing, where the pipeline's
    /// walk drops the packet). `depth` is how deep in groups the actions
    /// run. `lookup_port`, if given, is the ingress port the first lookup
    /// alone sees (a resubmit's port, as Open vSwitch: the actions, and
    /// the lookups of a goto_table after, see the packet's own).
    #[allow(clippy::too_many_arguments)] // where the walk starts, the packet, its context
    #[inline(always)] // the per-packet walk: its context stays in registers
    pub(super) fn walk<const T: bool, B: FrameBuf + ?Sized>(
        &mut self,
        first: usize,
        lookup_port: Option<u32>,
        frame: &mut B,
        cx: &mut Ctx<'_>,
        mut emc: Option<&mut Emc>,
        depth: u32,
    ) -> Walk {
        let mut table = first;
        let mut lookup_port = lookup_port;
        let snap = cx.snap;
        while let Some(cls) = snap.tables.get(table) {
            if cx.key_stale {
                self.reextract(frame, cx.in_port);
                cx.key_stale = false;
                if T {
                    self.note(format!("Flow now: {}", describe_key(&self.key)));
                }
            }
            // Metadata can change between lookups (write_metadata); the
            // tunnel words follow `tun` where it changes (write_field).
            self.key.set(s::METADATA, self.metadata);
            let tc = snap.table_counters.get(table).filter(|_| !T);
            let (worker, now_ns) = (cx.worker, cx.now_ns);
            let other_port = lookup_port.take().filter(|&p| p != cx.in_port);
            if let Some(p) = other_port {
                self.key.set(s::IN_PORT, p as u64);
            }
            let replayed = cx.replay_next();
            let cache = match emc.as_deref_mut() {
                Some(e) if !T => e.consult().then_some(e),
                _ => None,
            };
            let found = match (replayed, cache) {
                (Some(r), _) => r,
                (None, Some(e)) => {
                    match e.find(snap.version, &snap.changes, table as u8, &self.key) {
                        Ok(i) => e.rule(i),
                        Err(i) => {
                            let r = conjunction::lookup(cls, &mut self.key, &mut self.conj).0;
                            e.put(i, snap.version, table as u8, &self.key, r);
                            r
                        }
                    }
                }
                (None, None) => {
                    let (r, via) = conjunction::lookup(cls, &mut self.key, &mut self.conj);
                    if let (true, conjunction::Via::Conjunction { id, priority }) = (T, via) {
                        self.note(format!(
                            "{table:>2}. Conjunction {id} (priority {priority}): every clause matched; looked up again with conj_id={id}"
                        ));
                    }
                    r
                }
            };
            // A flow this worker taught and has not seen published yet.
            let found = if cx.unpublished.is_empty() {
                found
            } else {
                cx.unpublished.over(table as u8, &self.key, found)
            };
            if other_port.is_some() {
                self.key.set(s::IN_PORT, cx.in_port as u64);
            }
            if cx.record && self.recorded.len() <= crate::lookup::paths::MAX_PATH {
                self.recorded.push(found.cloned());
            }
            let Some(rule) = found else {
                // No match and no table-miss entry: the packet is dropped,
                // or with a controller of OpenFlow 1.0-1.2 connected, sent
                // to it (that version's table miss).
                if let Some(c) = tc {
                    c.hit(worker, 0, now_ns);
                }
                let to_controller = cx.in_resubmit == 0 && cx.snap.miss_to_controller;
                if T {
                    // Open vSwitch's words, then what becomes of the packet.
                    self.note(format!("{table:>2}. No match."));
                    self.note(
                        if to_controller {
                            "    to the OpenFlow 1.0-1.2 controllers (their table miss)"
                        } else {
                            // (After a resubmit too, as Open vSwitch
                            // says it: the resubmit does nothing more.)
                            "    drop"
                        }
                        .into(),
                    );
                }
                if to_controller {
                    let meta = ToController {
                        extra: self.packet_in_extra(bytes::Bytes::new()),
                        implicit_miss: true,
                        // max_len 0 with NO_MATCH: the switch's miss_send_len.
                        ..ToController::new(PacketInReason::NoMatch, table as u8, 0, 0)
                    };
                    self.push(port_no::CONTROLLER, cx, Some(meta));
                    // Outputs made before stay; the action set does not run.
                    return Walk::Stop;
                }
                return if cx.in_resubmit == 0 {
                    Walk::Stop
                } else {
                    Walk::Done
                };
            };
            if let Some(c) = tc {
                c.hit(worker, 1, now_ns);
            }
            if T {
                self.note(format!("{table:>2}. {}", describe_rule(rule)));
                self.indent += 1;
            } else {
                rule.counters.hit(worker, frame.len() as u64, now_ns);
            }
            cx.table_id = table as u8;
            cx.cookie = rule.cookie;
            cx.rule_id = rule.id;
            cx.table_miss = rule.table_miss;
            let mut goto = None;
            for (k, ins) in rule.instructions.iter().enumerate() {
                match ins {
                    Instruction::Meter(m) => {
                        if T {
                            let what = if snap.meters.contains_key(m) {
                                "not charged by a trace"
                            } else {
                                "no such meter: ignored"
                            };
                            self.note(format!("meter:{m} ({what})"));
                        } else if let Some(ms) = snap.meters.get(m) {
                            match ms.apply(frame.len(), now_ns) {
                                Verdict::Pass => {}
                                Verdict::Drop => {
                                    cx.dropped = true;
                                    return Walk::Stop;
                                }
                                Verdict::Remark(p) => self.remark(frame, cx, p),
                            }
                        }
                    }
                    Instruction::ApplyActions(list) => {
                        self.run_actions::<T, _>(list, frame, cx, depth);
                        if cx.dropped {
                            return Walk::Stop;
                        }
                        if cx.exited {
                            // Not this flow's other instructions, nor
                            // any table after (the action set does run,
                            // unless the walk paused: then they are all
                            // frozen for NXT_RESUME).
                            if cx.paused {
                                self.freeze_instructions(
                                    table as u8,
                                    rule.cookie,
                                    &rule.instructions[k + 1..],
                                );
                            }
                            if T {
                                self.indent -= 1;
                            }
                            return Walk::Done;
                        }
                    }
                    Instruction::ClearActions => {
                        if T {
                            self.note("clear_actions".into());
                        }
                        self.set.clear()
                    }
                    Instruction::WriteActions(list) => {
                        if T {
                            self.note(format!(
                                "write_actions({})",
                                ofp::text::format_actions(list)
                            ));
                        }
                        self.set.write(list)
                    }
                    Instruction::WriteMetadata { metadata, mask } => {
                        self.metadata = (self.metadata & !mask) | (metadata & mask);
                        if T {
                            self.note(format!("write_metadata -> metadata={:#x}", self.metadata));
                        }
                    }
                    Instruction::GotoTable(t) => goto = Some(*t as usize),
                    Instruction::Experimenter { .. } => {}
                }
            }
            if T {
                if let Some(t) = goto {
                    self.note(format!("goto_table:{t}"));
                }
                self.indent -= 1;
            }
            match goto {
                Some(t) if t > table => table = t,
                _ => break,
            }
        }
        Walk::Done
    }

    pub(super) fn reextract(&mut self, frame: &[u8], in_port: u32) {
        self.off = extract(frame, in_port, &mut self.key);
        self.key.set_tunnel(&self.tun);
    }

    /// Follows up an edit: new offsets after a layout change, a count (and
    /// a trace line) for an edit the packet had no header for.
    pub(super) fn after_edit<const T: bool>(&mut self, r: Edit, frame: &[u8], cx: &Ctx<'_>) {
        match r {
            Edit::Done => {}
            Edit::Layout => self.reextract(frame, cx.in_port),
            Edit::Skipped if T => self.note("    skipped: the packet has no such header".into()),
            Edit::Skipped => self.skipped_edits += 1,
        }
    }

    /// Gives every pending "final packet" output its own copy before the
    /// packet changes.
    pub(super) fn before_change(&mut self, frame: &[u8], cx: &mut Ctx<'_>) {
        for o in self.outputs[cx.pending_from..]
            .iter_mut()
            .filter(|o| o.data.is_none())
        {
            o.data = Some(frame.to_vec());
        }
        cx.key_stale = true;
    }
}
