//! Flow monitors: Open vSwitch's NXST_FLOW_MONITOR, as `ovs-ofctl monitor
//! br0 watch:` uses it ([`ofp::msg::nx_flow::monitor`] has the wire
//! form), from OpenFlow 1.0 connections.
//!
//! * A request adds monitors to the connection (each id unique among its
//!   running ones: else `OFPMOFC_MONITOR_EXISTS`; a table past the last
//!   `OFPBRC_BAD_TABLE_ID`; an invalid match its error; any refusal adds
//!   none of the request's monitors). The reply, with the request's xid,
//!   lists the flows that match a monitor with `NXFMF_INITIAL` (event
//!   ADDED), each flow once.
//! * Afterwards every change to the flow tables — a controller's FLOW_MOD
//!   (from any connection, or a bundle), a flow expiring, a flow going
//!   with its group, meter or learner, a flow a `learn` action adds, the
//!   switch's own — is an update in a reply of xid 0 to each connection
//!   with a monitor that wants it (its event flag, table, `out_port` in
//!   the new or the old actions, and a match the flow's is within), one
//!   update per change however many monitors match, with actions if one
//!   of them asked. A connection's own changes are one ABBREV update
//!   (the request's xid) per request unless a matching monitor asked for
//!   them in full (`NXFMF_OWN`), as Open vSwitch does. A MODIFY that
//!   leaves a flow's actions and cookie as they were is no update.
//! * `NXT_FLOW_MONITOR_CANCEL` removes a monitor (`OFPMOFC_UNKNOWN_MONITOR`
//!   if there is none of that id).
//!
//! The pipeline writes the changes down only while some connection has
//! a monitor ([`pipeline::Pipeline::watch_flows`]); the agent takes them
//! after each message, timer, learned batch or local change
//! ([`Agent::report_flow_changes`]).
//!
//! Memory stays bounded when a monitoring connection reads slowly, as in
//! Open vSwitch ("Buffer Management" in nicira-ext.h): once its unsent
//! bytes pass [`PAUSE_AT`] after an update, it gets
//! `NXT_FLOW_MONITOR_PAUSED`; while paused it gets only the deletions of
//! flows that existed before the pause (each at most once), and the agent
//! keeps just the ids of the flows added or modified since (at most one
//! per installed flow). When its outbox is empty again it gets an ADDED
//! update for each flow added since that is still there and a MODIFIED
//! one for each flow modified since, then `NXT_FLOW_MONITOR_RESUMED`.
//! A flow older than the pause that an ADD replaced counts as modified
//! (its deletion is still sent, and it comes back MODIFIED): Open vSwitch
//! counts it as added, and so never reports its deletion while paused.
//! Unlike Open vSwitch, which counts only the monitor's messages, the
//! threshold counts every unsent byte of the connection.
//!
//! Tested in `tests/protocol/flow_monitor.rs`.

use std::collections::HashSet;

use ofp::msg::nx_flow::monitor::{
    self as fm, flags, FullUpdate, MonitorCommand, MonitorRequest, Update, Update14, UpdateEvent,
};
use ofp::port::{group_no, TABLE_ALL};
use pipeline::{FlowChange, MaskedKey, Rule, RuleId};

use super::*;

/// Unsent bytes past which a connection's monitors pause (Open vSwitch's
/// 128 KiB).
pub const PAUSE_AT: usize = 128 << 10;

/// One running monitor.
#[derive(Debug, Clone)]
struct Monitor {
    flags: u16,
    out_port: u32,
    /// `OFPG_ANY`, or only flows that use this group (OpenFlow 1.4).
    out_group: u32,
    table_id: u8,
    key: MaskedKey,
}

impl Monitor {
    /// Whether a change to `r` (whose match is `key`; `old`: the rule it
    /// replaced) is this monitor's: its table, its out_port among the new
    /// or the old actions, and a match within the monitor's.
    fn covers(&self, r: &Rule, key: &MaskedKey, old: Option<&Rule>) -> bool {
        (self.table_id == TABLE_ALL || self.table_id == r.table_id)
            && (self.out_port == port_no::ANY
                || r.outputs_to(self.out_port)
                || old.is_some_and(|o| o.outputs_to(self.out_port)))
            && (self.out_group == group_no::ANY || r.uses_group(self.out_group))
            && key.is_subset_of(&self.key)
    }
}

/// A connection's monitors.
#[derive(Debug, Default)]
pub struct Monitors {
    by_id: BTreeMap<u32, Monitor>,
    /// Set while paused: the flows added and modified since.
    paused: Option<Paused>,
}

#[derive(Debug, Default)]
struct Paused {
    added: HashSet<RuleId>,
    modified: HashSet<RuleId>,
}

impl Monitors {
    /// How many monitors run.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether none runs.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Whether updates are paused (NXT_FLOW_MONITOR_PAUSED sent, RESUMED
    /// not yet).
    pub fn is_paused(&self) -> bool {
        self.paused.is_some()
    }

    /// The flags of the monitors that want an update of kind `bit` of
    /// `r`, together (0: none does).
    fn wanting(&self, bit: u16, r: &Rule, key: &MaskedKey, old: Option<&Rule>) -> u16 {
        self.by_id
            .values()
            .filter(|m| m.flags & bit != 0 && m.covers(r, key, old))
            .fold(0, |a, m| a | m.flags)
    }
}

/// The full update of `event` for `r`.
fn full(event: UpdateEvent, reason: u16, r: &Rule, actions: bool) -> Update {
    Update::Full(FullUpdate {
        event,
        reason,
        priority: r.priority,
        idle_timeout: r.idle_timeout,
        hard_timeout: r.hard_timeout,
        table_id: r.table_id,
        cookie: r.cookie,
        match_: r.match_.get(),
        instructions: if actions {
            r.instructions.to_vec()
        } else {
            Vec::new()
        },
    })
}

/// Queues `ups` as flow monitor replies of `xid` in the connection's
/// form (NXST_FLOW_MONITOR under 1.0, OFPMP_FLOW_MONITOR under 1.4, where
/// `initial` makes full updates OFPFME_INITIAL), as many updates to a
/// message as fit, REPLY_MORE on all but the last; with nothing to say,
/// one empty reply if `always`, else nothing.
fn send_updates(c: &mut Conn, xid: u32, ups: Vec<Update>, initial: bool, always: bool) {
    if ups.is_empty() && !always {
        return;
    }
    let of14 = c.version != Version::V1_0;
    let max = if of14 {
        fm::MAX_REPLY_BODY_14
    } else {
        fm::MAX_REPLY_BODY
    };
    let mut body = Vec::new();
    let mut parts = Vec::new();
    for u in ups {
        let at = body.len();
        if of14 {
            let u = match u {
                Update::Full(update) => Update14::Full { update, initial },
                Update::Abbrev { xid } => Update14::Abbrev { xid },
            };
            fm::put_update_14(&u, &mut body);
        } else {
            fm::put_update(&u, &mut body);
        }
        if at > 0 && body.len() > max {
            let rest = body.split_off(at);
            parts.push(std::mem::replace(&mut body, rest));
        }
    }
    parts.push(body);
    let n = parts.len();
    for (i, b) in parts.into_iter().enumerate() {
        let more = i + 1 < n;
        if of14 {
            let mut out = Vec::new();
            fm::reply_14(c.version.wire(), xid, &b, more, &mut out);
            c.outbox.extend_from_slice(&out);
        } else {
            c.send(&fm::reply(b, more), xid);
        }
    }
}

/// Queues NXT_FLOW_MONITOR_PAUSED or _RESUMED (OpenFlow 1.4: a reply
/// with the OFPFME_PAUSED or _RESUMED event).
fn send_pause(c: &mut Conn, paused: bool) {
    if c.version == Version::V1_0 {
        c.send(&if paused { fm::paused() } else { fm::resumed() }, 0);
        return;
    }
    let mut body = Vec::new();
    let u = if paused {
        Update14::Paused
    } else {
        Update14::Resumed
    };
    fm::put_update_14(&u, &mut body);
    let mut out = Vec::new();
    fm::reply_14(c.version.wire(), 0, &body, false, &mut out);
    c.outbox.extend_from_slice(&out);
}

/// A monitor of a request, its match compiled; a table past the last
/// `OFPBRC_BAD_TABLE_ID`.
fn monitor_of(q: &MonitorRequest, out_group: u32, n_tables: u8) -> Result<Monitor, ErrorCode> {
    if q.table_id != TABLE_ALL && q.table_id >= n_tables {
        return Err(brc(BadRequestCode::BadTableId));
    }
    Ok(Monitor {
        flags: q.flags,
        out_port: q.out_port,
        out_group,
        table_id: q.table_id,
        key: pipeline::compile(&q.match_).map_err(|e| e.code)?,
    })
}

/// The initial updates of `monitors` (those with `INITIAL`): every flow
/// one of them covers, once, with actions if one of those asked.
fn initial_updates<'a>(p: &Pipeline, monitors: impl Iterator<Item = &'a Monitor>) -> Vec<Update> {
    let ms: Vec<&Monitor> = monitors.filter(|m| m.flags & flags::INITIAL != 0).collect();
    if ms.is_empty() {
        return Vec::new();
    }
    let mut ups = Vec::new();
    for r in p.tables().iter().flat_map(|t| t.rules()) {
        let key = r.key();
        let fl = ms
            .iter()
            .filter(|m| m.covers(r, &key, None))
            .fold(0, |a, m| a | m.flags);
        if fl != 0 {
            ups.push(full(UpdateEvent::Added, 0, r, fl & flags::ACTIONS != 0));
        }
    }
    ups
}

impl<D: Datapath> Agent<D> {
    /// NXST_FLOW_MONITOR: the monitors added, and the reply with the
    /// initial flows (module doc).
    pub(crate) fn flow_monitor_request(
        &mut self,
        id: ConnId,
        xid: u32,
        data: &Bytes,
    ) -> Result<(), ErrorCode> {
        let reqs = fm::decode_requests(data).map_err(|e| e.code)?;
        let n_tables = self.pipeline.config.n_tables;
        let Some(c) = self.conns.get_mut(&id) else {
            return Ok(());
        };
        let mut new: Vec<(u32, Monitor)> = Vec::with_capacity(reqs.len());
        for q in reqs {
            let m = monitor_of(&q, group_no::ANY, n_tables)?;
            if c.monitors.by_id.contains_key(&q.id) || new.iter().any(|(i, _)| *i == q.id) {
                return Err(fm::OFPMOFC_MONITOR_EXISTS);
            }
            new.push((q.id, m));
        }
        let ups = initial_updates(&self.pipeline, new.iter().map(|(_, m)| m));
        c.monitors.by_id.extend(new);
        send_updates(c, xid, ups, true, true);
        self.pipeline.watch_flows(true);
        Ok(())
    }

    /// OpenFlow 1.4's OFPMP_FLOW_MONITOR request (`frame`, whole): ADD as
    /// NXST_FLOW_MONITOR's, MODIFY replacing a running monitor, DELETE
    /// removing one (either `OFPMOFC_UNKNOWN_MONITOR` when there is none
    /// of that id); the reply lists the flows of the monitors added or
    /// modified with `INITIAL` (event INITIAL). A refusal changes none of
    /// the connection's monitors (Open vSwitch keeps the deletions and
    /// modifications before the refused entry).
    pub(crate) fn flow_monitor_request_14(
        &mut self,
        id: ConnId,
        xid: u32,
        frame: &Bytes,
    ) -> Result<(), ErrorCode> {
        let body = frame.slice(frame.len().min(16)..);
        let reqs = fm::decode_requests_14(&body).map_err(|e| e.code)?;
        let n_tables = self.pipeline.config.n_tables;
        let Some(c) = self.conns.get_mut(&id) else {
            return Ok(());
        };
        let mut map = c.monitors.by_id.clone();
        let mut fresh = Vec::new();
        for q in reqs {
            let mid = q.monitor.id;
            match q.command {
                MonitorCommand::Add => {
                    let m = monitor_of(&q.monitor, q.out_group, n_tables)?;
                    if map.contains_key(&mid) {
                        return Err(fm::OFPMOFC_MONITOR_EXISTS);
                    }
                    map.insert(mid, m);
                    fresh.push(mid);
                }
                MonitorCommand::Modify => {
                    let m = monitor_of(&q.monitor, q.out_group, n_tables)?;
                    if map.insert(mid, m).is_none() {
                        return Err(fm::OFPMOFC_UNKNOWN_MONITOR);
                    }
                    fresh.push(mid);
                }
                _ => {
                    map.remove(&mid).ok_or(fm::OFPMOFC_UNKNOWN_MONITOR)?;
                    fresh.retain(|&f| f != mid);
                }
            }
        }
        let ups = initial_updates(&self.pipeline, fresh.iter().filter_map(|f| map.get(f)));
        c.monitors.by_id = map;
        send_updates(c, xid, ups, true, true);
        self.rewatch();
        Ok(())
    }

    /// NXT_FLOW_MONITOR_CANCEL.
    pub(crate) fn flow_monitor_cancel(&mut self, id: ConnId, data: &[u8]) -> Result<(), ErrorCode> {
        let mid = fm::decode_cancel(data).map_err(|e| e.code)?;
        let c = self.conns.get_mut(&id).expect("live");
        c.monitors
            .by_id
            .remove(&mid)
            .ok_or(fm::OFPMOFC_UNKNOWN_MONITOR)?;
        self.rewatch();
        Ok(())
    }

    /// The pipeline's journal on while some connection has a monitor.
    pub(crate) fn rewatch(&mut self) {
        let on = self.conns.values().any(|c| !c.monitors.is_empty());
        if on != self.pipeline.watching_flows() {
            self.pipeline.watch_flows(on);
        }
    }

    /// Sends the updates of the rule changes the pipeline wrote down since
    /// the last call (module doc); `origin`: the connection and xid of the
    /// request that made them, if a connection's request did.
    pub(crate) fn report_flow_changes(&mut self, origin: Option<(ConnId, u32)>) {
        if !self.pipeline.watching_flows() {
            return;
        }
        let changes = self.pipeline.take_flow_changes();
        if changes.is_empty() {
            return;
        }
        for (id, c) in self.conns.iter_mut() {
            if c.monitors.is_empty() {
                continue;
            }
            let own = origin.filter(|(o, _)| o == id).map(|(_, x)| x);
            let mut ups = Vec::new();
            let mut abbreviated = false;
            for ch in &changes {
                let (event, bit, rule, old, reason) = match ch {
                    FlowChange::Added { rule, replaced } => {
                        (UpdateEvent::Added, flags::ADD, rule, replaced.as_deref(), 0)
                    }
                    FlowChange::Modified { rule, old } => {
                        if old.instructions == rule.instructions && old.cookie == rule.cookie {
                            continue;
                        }
                        (UpdateEvent::Modified, flags::MODIFY, rule, Some(&**old), 0)
                    }
                    FlowChange::Removed(r) => (
                        UpdateEvent::Deleted,
                        flags::DELETE,
                        &r.rule,
                        None,
                        u16::from(r.reason.value()),
                    ),
                };
                if let Some(p) = c.monitors.paused.as_mut() {
                    // Paused: the ids of what changed, for the resumption;
                    // deletions of flows older than the pause are sent.
                    match event {
                        // A flow older than the pause that an ADD
                        // replaced (same id) still existed before it: its
                        // deletion must be sent, so it counts as modified.
                        UpdateEvent::Added if old.is_some() && !p.added.contains(&rule.id) => {
                            p.modified.insert(rule.id);
                            continue;
                        }
                        UpdateEvent::Added => {
                            p.added.insert(rule.id);
                            continue;
                        }
                        UpdateEvent::Modified => {
                            if !p.added.contains(&rule.id) {
                                p.modified.insert(rule.id);
                            }
                            continue;
                        }
                        _ => {
                            p.modified.remove(&rule.id);
                            if p.added.remove(&rule.id) {
                                continue;
                            }
                        }
                    }
                }
                let key = rule.key();
                let fl = c.monitors.wanting(bit, rule, &key, old);
                if fl == 0 {
                    continue;
                }
                match own {
                    Some(xid) if fl & flags::OWN == 0 && !c.monitors.is_paused() => {
                        if !abbreviated {
                            abbreviated = true;
                            ups.push(Update::Abbrev { xid });
                        }
                    }
                    _ => ups.push(full(event, reason, rule, fl & flags::ACTIONS != 0)),
                }
            }
            send_updates(c, 0, ups, false, false);
            if !c.monitors.is_paused() && c.outbox.len() > PAUSE_AT {
                send_pause(c, true);
                c.monitors.paused = Some(Paused::default());
            }
        }
    }

    /// Resumes connection `id`'s paused monitors once everything it was
    /// sent has been written (module doc).
    pub(crate) fn resume_monitors(&mut self, id: ConnId) {
        let Some(c) = self.conns.get_mut(&id) else {
            return;
        };
        if !c.outbox.is_empty() || !c.monitors.is_paused() {
            return;
        }
        let p = c.monitors.paused.take().expect("paused");
        let mut ups = Vec::new();
        if !p.added.is_empty() || !p.modified.is_empty() {
            for r in self.pipeline.tables().iter().flat_map(|t| t.rules()) {
                let added = p.added.contains(&r.id);
                if !added && !p.modified.contains(&r.id) {
                    continue;
                }
                let bit = if added {
                    flags::ADD | flags::MODIFY
                } else {
                    flags::MODIFY
                };
                let key = r.key();
                let fl = c.monitors.wanting(bit, r, &key, None);
                if fl == 0 {
                    continue;
                }
                let event = if added {
                    UpdateEvent::Added
                } else {
                    UpdateEvent::Modified
                };
                ups.push(full(event, 0, r, fl & flags::ACTIONS != 0));
            }
        }
        send_updates(c, 0, ups, false, false);
        send_pause(c, false);
    }
}
