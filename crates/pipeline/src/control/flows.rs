//! Flow entries: FLOW_MOD (add, modify, delete, strict or not, with
//! the checks the spec names), expiry from each table's deadlines, and
//! the statistics read from the rules (FLOW_STATS, AGGREGATE).
//!
//! Contract: a refused FLOW_MOD changes nothing; a delete returns the
//! rules it removed, for FLOW_REMOVED. A DELETE of every rule of a table
//! takes the table out whole, at once; a non-strict MODIFY or DELETE of
//! a table past [`ROUND`] rules may be applied a round at a time
//! ([`Pipeline::flow_mod_rounds`], [`FlowModJob`] says what can be seen
//! between rounds), [`Pipeline::flow_mod`] applying every round at once.

use super::*;

impl Pipeline {
    /// Applies a FLOW_MOD at time `now_ns`. Returns the rules it removed
    /// (DELETE), for FLOW_REMOVED messages.
    pub fn flow_mod(&mut self, fm: &FlowMod, now_ns: u64) -> Result<Vec<Removed>, OfpError> {
        self.apply_flow_mod(fm, None, now_ns)
    }

    /// [`Pipeline::flow_mod`] for a FLOW_MOD decoded from the wire and
    /// validated by the caller with `Message::validate`, given its match
    /// as the codec found it in the message (`ofp::FlowMod::match_bytes`;
    /// None: encode it here): the match is not validated again, and a
    /// rule keeps it as the bytes it came in rather than encoding it anew.
    /// (In the million-flow push the second validation and the encoding
    /// were ~10% of the time.)
    pub fn flow_mod_with_match(
        &mut self,
        fm: &FlowMod,
        wire_match: Option<&[u8]>,
        now_ns: u64,
    ) -> Result<Vec<Removed>, OfpError> {
        self.apply_flow_mod(fm, wire_match, now_ns)
    }

    /// Applies `fm`; `wire_match`, when given, is its match as received
    /// and already validated.
    pub(super) fn apply_flow_mod(
        &mut self,
        fm: &FlowMod,
        wire_match: Option<&[u8]>,
        now_ns: u64,
    ) -> Result<Vec<Removed>, OfpError> {
        match self.flow_mod_rounds(fm, wire_match, now_ns)? {
            Applied::Done(removed) => Ok(removed),
            Applied::Rounds(mut job) => {
                let mut removed = Vec::new();
                loop {
                    let (mut r, done) = self.flow_mod_round(&mut job);
                    removed.append(&mut r);
                    if done {
                        return Ok(removed);
                    }
                }
            }
        }
    }

    /// Applies a FLOW_MOD (validated as for
    /// [`Pipeline::flow_mod_with_match`]) at once, or, when it names more
    /// rules than one round changes ([`ROUND`]), checks it, changes
    /// nothing yet and returns the job that applies it a round at a time
    /// ([`Pipeline::flow_mod_round`]): see [`FlowModJob`] for what may
    /// be seen between rounds. A DELETE of every rule of a table takes
    /// the table out whole at once; its rounds only hand back the rules
    /// removed, for FLOW_REMOVED.
    pub fn flow_mod_rounds(
        &mut self,
        fm: &FlowMod,
        wire_match: Option<&[u8]>,
        now_ns: u64,
    ) -> Result<Applied, OfpError> {
        let mut out = self.apply_flow_mod_alone(fm, wire_match, now_ns)?;
        if let Applied::Done(removed) = &mut out {
            self.forget_learners(removed);
            self.note_removed(removed);
        }
        Ok(out)
    }

    /// The next round of `job`: the rules it removed in it (with what
    /// removing a learner removes with it), and whether the job is done.
    pub fn flow_mod_round(&mut self, job: &mut FlowModJob) -> (Vec<Removed>, bool) {
        let mut budget = ROUND;
        let mut out = Vec::new();
        while budget > 0 {
            let Some((t, entries)) = job.pending.last_mut() else {
                break;
            };
            let t = *t as usize;
            let n = budget.min(entries.len());
            let chunk = entries.split_off(entries.len() - n);
            budget -= n;
            if entries.is_empty() {
                job.pending.pop();
            }
            for (h, addr) in chunk {
                // Still installed, as it was when the job began (else
                // changed since: see FlowModJob).
                let Some(r) = self.tables[t]
                    .exact
                    .find(h, |(_, r)| Arc::as_ptr(r) as usize == addr)
                    .map(|(_, r)| r.clone())
                else {
                    continue;
                };
                if !job.selects(&r) {
                    continue;
                }
                match &job.modify {
                    Some(m) => {
                        let counters = if m.reset {
                            Arc::new(Counters::new(self.config.workers))
                        } else {
                            r.counters.clone()
                        };
                        let new = Arc::new(Rule {
                            instructions: m.instructions.clone(),
                            counters,
                            modified_ns: m.now_ns,
                            ..clone_rule(&r)
                        });
                        self.tables[t].replace(new.clone());
                        if self.watching {
                            self.journal
                                .push(FlowChange::Modified { rule: new, old: r });
                        }
                    }
                    None => {
                        if let Some(rule) = self.tables[t].remove(&r) {
                            self.flows -= 1;
                            out.push(Removed {
                                rule,
                                reason: FlowRemovedReason::Delete,
                            });
                        }
                    }
                }
            }
        }
        // Then the rules taken out whole, a round's worth (handing one
        // back costs a FLOW_REMOVED at most, not a change).
        if job.pending.is_empty() {
            let n = (ROUND * HAND_BACK).min(job.removed.len());
            out.extend(job.removed.split_off(job.removed.len() - n));
        }
        self.forget_learners(&mut out);
        self.note_removed(&out);
        let done = job.pending.is_empty() && job.removed.is_empty();
        (out, done)
    }

    /// [`Pipeline::flow_mod_rounds`] without what removing a learner
    /// removes with it.
    fn apply_flow_mod_alone(
        &mut self,
        fm: &FlowMod,
        wire_match: Option<&[u8]>,
        now_ns: u64,
    ) -> Result<Applied, OfpError> {
        if fm.flags & !ff::ALL != 0 {
            return Err(fm_err(
                FlowModFailedCode::BadFlags,
                "unknown flow-mod flags",
            ));
        }
        let is_delete = matches!(
            fm.command,
            FlowModCommand::Delete | FlowModCommand::DeleteStrict
        );
        let table_ok =
            (fm.table_id as usize) < self.tables.len() || (is_delete && fm.table_id == TABLE_ALL);
        if !table_ok {
            return Err(fm_err(FlowModFailedCode::BadTableId, "no such table"));
        }
        // A Geneve option field must be mapped (NXFMFC_INVALID_TLV_FIELD),
        // whatever the command, as Open vSwitch decodes it.
        self.tlv.check(crate::tlv::fields_used(
            &fm.match_,
            crate::tlv::instruction_actions(&fm.instructions),
        ))?;
        let key = match wire_match {
            Some(_) => compile_valid(&fm.match_)?,
            None => compile(&fm.match_)?,
        };
        // A flow entry must fit one FLOW_STATS reply (see FLOW_ENTRY_MAX).
        let ins_len = (!is_delete).then(|| {
            let mut v = Vec::new();
            ofp::instruction::encode_instructions(&fm.instructions, &mut v);
            v.len()
        });
        match fm.command {
            FlowModCommand::Add => {
                let m = wire_match.map_or_else(|| fm.match_.wire_len(), <[u8]>::len);
                fits_flow_stats(m, ins_len.unwrap_or(0))?;
                self.add(fm, key, wire_match, false, now_ns)
                    .map(|_| Applied::Done(Vec::new()))
            }
            FlowModCommand::Modify | FlowModCommand::ModifyStrict => {
                validate::instructions(fm.table_id, &fm.instructions, &fm.match_, &self.context())?;
                let strict = fm.command == FlowModCommand::ModifyStrict;
                let table = &mut self.tables[fm.table_id as usize];
                let ins_len = ins_len.unwrap_or(0);
                // A big table, and every rule's entry fits whatever its
                // match (else each is checked below): in rounds.
                if !strict
                    && table.len() > ROUND
                    && fits_flow_stats(table.match_len_max, ins_len).is_ok()
                {
                    let mut job = FlowModJob::new(fm, key);
                    job.modify = Some(ModifyTo {
                        instructions: fm.instructions.clone().into_boxed_slice(),
                        reset: fm.flags & ff::RESET_COUNTS != 0,
                        now_ns,
                    });
                    job.pending.push((fm.table_id, table.addresses()));
                    return Ok(Applied::Rounds(Box::new(job)));
                }
                let targets = named_rules(table, &key, strict, fm.priority, |r| {
                    r.cookie_matches(fm.cookie, fm.cookie_mask)
                });
                for r in &targets {
                    fits_flow_stats(r.match_.wire_len(), ins_len)?;
                }
                let workers = self.config.workers;
                let instructions: Box<[ofp::Instruction]> =
                    fm.instructions.clone().into_boxed_slice();
                let table = &mut self.tables[fm.table_id as usize];
                for old in targets {
                    let counters = if fm.flags & ff::RESET_COUNTS != 0 {
                        Arc::new(Counters::new(workers))
                    } else {
                        old.counters.clone()
                    };
                    let new = Arc::new(Rule {
                        instructions: instructions.clone(),
                        counters,
                        modified_ns: now_ns,
                        ..clone_rule(&old)
                    });
                    table.replace(new.clone());
                    if self.watching {
                        self.journal.push(FlowChange::Modified { rule: new, old });
                    }
                }
                Ok(Applied::Done(Vec::new()))
            }
            FlowModCommand::Delete | FlowModCommand::DeleteStrict => {
                let strict = fm.command == FlowModCommand::DeleteStrict;
                let mut job = FlowModJob::new(fm, key);
                let everything = !strict && job.selects_everything();
                for t in self.table_ids(fm.table_id) {
                    let table = &mut self.tables[t];
                    if table.is_empty() {
                        continue;
                    }
                    if everything {
                        // The whole table, at once (see FlowTable::take_all).
                        let all = table.take_all(&self.disposer);
                        self.flows -= all.len();
                        job.removed.reserve(all.len());
                        job.removed.extend(all.into_iter().map(|(_, rule)| Removed {
                            rule,
                            reason: FlowRemovedReason::Delete,
                        }));
                    } else if !strict && table.len() > ROUND {
                        job.pending.push((t as u8, table.addresses()));
                    } else {
                        let doomed = named_rules(table, &job.key, strict, fm.priority, |r| {
                            job.selects_but_match(r)
                        });
                        for r in doomed {
                            if let Some(rule) = table.remove(&r) {
                                self.flows -= 1;
                                job.removed.push(Removed {
                                    rule,
                                    reason: FlowRemovedReason::Delete,
                                });
                            }
                        }
                    }
                }
                if job.pending.is_empty() && job.removed.len() <= ROUND * HAND_BACK {
                    return Ok(Applied::Done(job.removed));
                }
                Ok(Applied::Rounds(Box::new(job)))
            }
            FlowModCommand::Unknown(_) => Err(fm_err(
                FlowModFailedCode::BadCommand,
                "unknown flow-mod command",
            )),
        }
    }

    /// Adds (or replaces, same match and priority) the rule `fm` makes,
    /// `learned` if a `learn` action taught it; the rule installed.
    pub(super) fn add(
        &mut self,
        fm: &FlowMod,
        key: MaskedKey,
        wire_match: Option<&[u8]>,
        learned: bool,
        now_ns: u64,
    ) -> Result<Arc<Rule>, OfpError> {
        validate::instructions(fm.table_id, &fm.instructions, &fm.match_, &self.context())?;
        let workers = self.config.workers;
        let table = &mut self.tables[fm.table_id as usize];
        let existing = table.get_exact(&key, fm.priority).cloned();
        if fm.flags & ff::CHECK_OVERLAP != 0 {
            let clash = table
                .rules()
                .any(|r| r.priority == fm.priority && !r.packed.is(&key) && r.key().overlaps(&key));
            if clash {
                return Err(fm_err(
                    FlowModFailedCode::Overlap,
                    "overlaps a rule of the same priority",
                ));
            }
        }
        if existing.is_none() && table.len() >= table.max_entries {
            return Err(fm_err(FlowModFailedCode::TableFull, "table is full"));
        }
        if existing.is_none() && self.flows >= self.config.max_flows {
            return Err(fm_err(
                FlowModFailedCode::TableFull,
                "the switch holds max_flows rules",
            ));
        }
        // An identical entry is replaced; its counters are kept unless asked.
        let (id, counters) = match &existing {
            Some(old) if fm.flags & ff::RESET_COUNTS == 0 => (old.id, old.counters.clone()),
            Some(old) => (old.id, Arc::new(Counters::new(workers))),
            None => {
                self.next_id = self.next_id.wrapping_add(1);
                (self.next_id, Arc::new(Counters::new(workers)))
            }
        };
        let rule = Arc::new(Rule {
            id,
            table_id: fm.table_id,
            priority: fm.priority,
            table_miss: fm.priority == 0 && fm.match_.entries.is_empty(),
            learned,
            packed: PackedKey::pack(&key),
            match_: wire_match.map_or_else(|| StoredMatch::new(&fm.match_), StoredMatch::from_wire),
            instructions: fm.instructions.clone().into_boxed_slice(),
            cookie: fm.cookie,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            flags: fm.flags,
            created_ns: now_ns,
            modified_ns: now_ns,
            counters,
        });
        let table = &mut self.tables[fm.table_id as usize];
        if existing.is_some() {
            table.replace(rule.clone());
        } else {
            table.insert_keyed(rule.clone(), &key);
            self.flows += 1;
        }
        self.note(|| FlowChange::Added {
            rule: rule.clone(),
            replaced: existing,
        });
        Ok(rule)
    }

    /// The earliest time a rule may expire (when [`Pipeline::expire`] has
    /// work, at the soonest); None with no timed rule.
    pub fn next_expiry(&self) -> Option<u64> {
        self.tables.iter().filter_map(|t| t.next_deadline()).min()
    }

    /// Removes rules whose idle or hard timeout passed by `now_ns`. Looks
    /// only at the rules whose deadline passed (`expiry.rs`), not
    /// at every timed rule.
    pub fn expire(&mut self, now_ns: u64) -> Vec<Removed> {
        let mut out = Vec::new();
        for table in &mut self.tables {
            for (r, reason) in table.due(now_ns) {
                if let Some(rule) = table.remove(&r) {
                    self.flows -= 1;
                    out.push(Removed { rule, reason });
                }
            }
        }
        self.forget_learners(&mut out);
        self.note_removed(&out);
        out
    }

    pub(super) fn selected_rules<'a>(
        &'a self,
        req: &'a FlowStatsRequest,
    ) -> Result<Vec<&'a Arc<Rule>>, OfpError> {
        if req.table_id != TABLE_ALL && req.table_id as usize >= self.tables.len() {
            return Err(OfpError::new(
                ErrorCode::BadRequest(ofp::error::BadRequestCode::BadTableId),
                "no such table",
            ));
        }
        let key = compile(&req.match_)?;
        // An empty match selects every rule: skip unpacking each rule's key.
        let all = req.match_.entries.is_empty();
        Ok(self
            .table_ids(req.table_id)
            .flat_map(|t| self.tables[t].rules())
            .filter(|r| {
                (all || r.key().is_subset_of(&key))
                    && r.cookie_matches(req.cookie, req.cookie_mask)
                    && (req.out_port == port_no::ANY || r.outputs_to(req.out_port))
                    && (req.out_group == group_no::ANY || r.uses_group(req.out_group))
            })
            .collect())
    }

    /// Answers a flow stats request.
    pub fn flow_stats(
        &self,
        req: &FlowStatsRequest,
        now_ns: u64,
    ) -> Result<Vec<FlowStats>, OfpError> {
        Ok(self
            .flow_stats_rules(req)?
            .iter()
            .map(|r| flow_stats_entry(r, now_ns))
            .collect())
    }

    /// The rules a flow stats request selects, in the order they are
    /// reported (table, then priority from high to low, then age), held so
    /// a long reply can be produced a message at a time while the tables
    /// change ([`flow_stats_entry`] makes each entry).
    pub fn flow_stats_rules(&self, req: &FlowStatsRequest) -> Result<Vec<Arc<Rule>>, OfpError> {
        let mut keyed: Vec<(u64, &Arc<Rule>)> = self
            .selected_rules(req)?
            .into_iter()
            .map(|r| {
                // Table, priority from high to low, then id, in one word
                // (an unstable sort of plain words: the 1M-flow dump).
                let k = (r.table_id as u64) << 48
                    | ((u16::MAX - r.priority) as u64) << 32
                    | r.id as u64;
                (k, r)
            })
            .collect();
        keyed.sort_unstable_by_key(|(k, _)| *k);
        Ok(keyed.into_iter().map(|(_, r)| r.clone()).collect())
    }

    /// Answers an aggregate stats request.
    pub fn aggregate(&self, req: &FlowStatsRequest) -> Result<AggregateStats, OfpError> {
        Ok(self
            .selected_rules(req)?
            .into_iter()
            .fold(AggregateStats::default(), |a, r| {
                let t = r.counters.totals();
                AggregateStats {
                    packet_count: a.packet_count + t.packets,
                    byte_count: a.byte_count + t.bytes,
                    flow_count: a.flow_count + 1,
                }
            }))
    }

    pub(super) fn remove_rules_where(
        &mut self,
        f: impl Fn(&Rule) -> bool,
        reason: FlowRemovedReason,
    ) -> Vec<Removed> {
        let mut out = Vec::new();
        for table in &mut self.tables {
            let doomed: Vec<Arc<Rule>> = table.rules().filter(|r| f(r)).cloned().collect();
            for r in doomed {
                if let Some(rule) = table.remove(&r) {
                    self.flows -= 1;
                    out.push(Removed { rule, reason });
                }
            }
        }
        // A learner removed with a group or a meter takes its learned
        // flows along as a deleted one does.
        self.forget_learners(&mut out);
        self.note_removed(&out);
        out
    }
}

pub(super) fn fm_err(c: FlowModFailedCode, d: &'static str) -> OfpError {
    OfpError::new(ErrorCode::FlowModFailed(c), d)
}

/// The longest flow entry (`ofp_flow_stats`: 48 bytes, the match, the
/// instructions; as long as the FLOW_MOD that makes it) whose FLOW_STATS
/// reply fits one message: 65 535 less the reply's 16-byte header. A
/// longer one could never be reported, so it is refused.
pub const FLOW_ENTRY_MAX: usize = ofp::header::MAX_MSG_LEN - 16;

pub(super) fn fits_flow_stats(match_len: usize, ins_len: usize) -> Result<(), OfpError> {
    if 48 + match_len + ins_len > FLOW_ENTRY_MAX {
        return Err(fm_err(
            FlowModFailedCode::Unknown0,
            "the flow entry would not fit a FLOW_STATS reply (65 535 bytes)",
        ));
    }
    Ok(())
}

/// One rule's FLOW_STATS entry at `now_ns` (counters as they are now).
pub fn flow_stats_entry(r: &Rule, now_ns: u64) -> FlowStats {
    let t = r.counters.totals();
    let (duration_sec, duration_nsec) = age(r, now_ns);
    FlowStats {
        idle_age: Some(secs_since(r.last_used_ns(), now_ns)),
        hard_age: Some(secs_since(r.modified_ns, now_ns)),
        table_id: r.table_id,
        duration_sec,
        duration_nsec,
        priority: r.priority,
        idle_timeout: r.idle_timeout,
        hard_timeout: r.hard_timeout,
        flags: r.flags,
        cookie: r.cookie,
        packet_count: t.packets,
        byte_count: t.bytes,
        match_: r.match_.get(),
        instructions: r.instructions.to_vec(),
    }
}

/// Whole seconds from `since_ns` to `now_ns` (0 if `since_ns` is later).
fn secs_since(since_ns: u64, now_ns: u64) -> u32 {
    (now_ns.saturating_sub(since_ns) / 1_000_000_000).min(u32::MAX as u64) as u32
}

/// How long `r` has been installed at `now_ns`: (seconds, nanoseconds).
pub(super) fn age(r: &Rule, now_ns: u64) -> (u32, u32) {
    let d = now_ns.saturating_sub(r.created_ns);
    ((d / 1_000_000_000) as u32, (d % 1_000_000_000) as u32)
}

/// A copy of a rule's fields (counters shared), for building a new version.
pub(super) fn clone_rule(r: &Rule) -> Rule {
    Rule {
        id: r.id,
        table_id: r.table_id,
        priority: r.priority,
        packed: r.packed.clone(),
        table_miss: r.table_miss,
        learned: r.learned,
        match_: r.match_.clone(),
        instructions: r.instructions.clone(),
        cookie: r.cookie,
        idle_timeout: r.idle_timeout,
        hard_timeout: r.hard_timeout,
        flags: r.flags,
        created_ns: r.created_ns,
        modified_ns: r.modified_ns,
        counters: r.counters.clone(),
    }
}

/// The rules of `table` a MODIFY or DELETE names: strict, the one with
/// exactly `key` and `priority`; otherwise every rule whose match is
/// within `key`; either way only those `also` accepts.
fn named_rules(
    table: &FlowTable,
    key: &MaskedKey,
    strict: bool,
    priority: u16,
    also: impl Fn(&Rule) -> bool,
) -> Vec<Arc<Rule>> {
    if strict {
        table
            .get_exact(key, priority)
            .filter(|r| also(r))
            .cloned()
            .into_iter()
            .collect()
    } else {
        table
            .rules()
            .filter(|r| r.key().is_subset_of(key) && also(r))
            .cloned()
            .collect()
    }
}

/// Rules one round of a [`FlowModJob`] looks at (MODIFY, DELETE): with
/// the publication that follows, ~40 ms of the control thread at a
/// million flows (each rule changed is a few cache misses in the table
/// and in each classifier copy: 16 384 a round took up to 165 ms), so
/// that a FLOW_MOD naming them all holds it well under 100 ms at a time.
pub const ROUND: usize = 4_096;

/// Rounds' worth of rules a DELETE took out whole handed back at once
/// (for FLOW_REMOVED: no change, and no publication, each).
const HAND_BACK: usize = 4;

/// A FLOW_MOD applied at once, or to be applied in rounds.
#[derive(Debug)]
pub enum Applied {
    /// Done: the rules it removed, for FLOW_REMOVED.
    Done(Vec<Removed>),
    /// To go on with [`Pipeline::flow_mod_round`] until it says done.
    Rounds(Box<FlowModJob>),
}

/// A non-strict MODIFY or DELETE that names more rules than a round
/// changes, applied a round at a time ([`Pipeline::flow_mod_round`]).
///
/// What it looks at is fixed when it begins: the rules of the tables
/// then, by the address of each version (no rule is read until its
/// round: reading a million rules at once was itself ~100 ms). In its
/// round a rule still installed as it was is changed if the FLOW_MOD
/// selects it; one gone or replaced since (by another connection's
/// message: the caller holds the same connection's later messages until
/// the job is done) is left as it is now, and one added since is not
/// looked at: as if those messages came after this one.
///
/// Between rounds the pipeline may be published: the workers can see a
/// MODIFY or DELETE applied to part of the rules, each publication a
/// consistent set of whole rules (never a rule half changed). Open
/// vSwitch makes a FLOW_MOD visible at once, holding its main thread for
/// all of it; a controller that must know it is all in place sends a
/// barrier, which is answered only after the last round (the agent holds
/// the connection's later messages), or uses a bundle (applied at once).
/// A DELETE of every rule of a table (no match, cookie mask, out_port or
/// out_group) is not split: the table is emptied at once and published
/// whole; only the FLOW_REMOVED messages are handed back a round at a
/// time. The flows a removed learner takes with it (`delete_learned`)
/// go in the round that hands the learner back.
#[derive(Debug)]
pub struct FlowModJob {
    command: FlowModCommand,
    key: MaskedKey,
    /// The match is all wildcards: every rule is within it.
    any_match: bool,
    cookie: u64,
    cookie_mask: u64,
    out_port: u32,
    out_group: u32,
    /// A MODIFY: what the rules become.
    modify: Option<ModifyTo>,
    /// Rules still to look at: per table, by (hash, address of the
    /// version), taken from the end.
    pending: Vec<(u8, Vec<(u64, usize)>)>,
    /// Rules already removed, still to hand back.
    removed: Vec<Removed>,
}

#[derive(Debug)]
struct ModifyTo {
    instructions: Box<[ofp::Instruction]>,
    reset: bool,
    /// When the MODIFY came: the rules' new `modified_ns`.
    now_ns: u64,
}

impl FlowModJob {
    fn new(fm: &FlowMod, key: MaskedKey) -> FlowModJob {
        FlowModJob {
            command: fm.command,
            any_match: key.mask.w.iter().all(|&w| w == 0),
            key,
            cookie: fm.cookie,
            cookie_mask: fm.cookie_mask,
            out_port: fm.out_port,
            out_group: fm.out_group,
            modify: None,
            pending: Vec::new(),
            removed: Vec::new(),
        }
    }

    /// Whether a DELETE of this job takes every rule whatever it is.
    fn selects_everything(&self) -> bool {
        self.any_match
            && self.cookie_mask == 0
            && self.out_port == port_no::ANY
            && self.out_group == group_no::ANY
    }

    /// Whether the FLOW_MOD names `r` (non-strict). A MODIFY ignores
    /// out_port and out_group.
    fn selects(&self, r: &Rule) -> bool {
        (self.any_match || r.key().is_subset_of(&self.key)) && self.selects_but_match(r)
    }

    /// [`FlowModJob::selects`] but for the match.
    fn selects_but_match(&self, r: &Rule) -> bool {
        let delete = matches!(
            self.command,
            FlowModCommand::Delete | FlowModCommand::DeleteStrict
        );
        r.cookie_matches(self.cookie, self.cookie_mask)
            && (!delete || self.out_port == port_no::ANY || r.outputs_to(self.out_port))
            && (!delete || self.out_group == group_no::ANY || r.uses_group(self.out_group))
    }

    /// Rules still to look at or hand back.
    pub fn remaining(&self) -> usize {
        self.removed.len() + self.pending.iter().map(|(_, e)| e.len()).sum::<usize>()
    }
}
