//! The switch's own changes to its tables, applied as a controller's are
//! (FLOW_REMOVED where a removed flow asks for it, publication): the fail
//! mode's flow and a configuration reload's static flows, groups and
//! meters.
//!
//! Fail mode (Open vSwitch's `fail_mode`): in standalone mode the switch
//! installs its own NORMAL flow while no controller is connected and
//! removes it when one completes the handshake ([`Agent::has_controller`]);
//! in secure mode it leaves the tables alone.

use ofp::msg::group::GroupMod;
use ofp::msg::meter::MeterMod;
use ofp::FlowMod;

use super::*;

/// One change the switch's configuration makes to its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalChange {
    Flow(FlowMod),
    Group(GroupMod),
    Meter(MeterMod),
}

/// Which change of a list was refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalRefusal {
    /// Its position in the list.
    pub at: usize,
    pub why: String,
}

fn apply(p: &mut Pipeline, c: &LocalChange, now_ns: u64) -> Result<Vec<Removed>, String> {
    match c {
        LocalChange::Flow(f) => p.flow_mod(f, now_ns),
        LocalChange::Group(g) => p.group_mod(g, now_ns),
        LocalChange::Meter(m) => p.meter_mod(m, now_ns),
    }
    .map_err(|e| e.to_string())
}

impl<D: Datapath> Agent<D> {
    /// Sets the fail mode: `standalone` is the flow installed while no
    /// controller is connected (None: secure mode). Applied at once.
    pub fn handle_fail_mode(&mut self, standalone: Option<FlowMod>, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        if let Some(old) = self.standalone_flow.take() {
            if self.fail_flow_installed {
                self.fail_flow(&old, false, now_ns);
            }
        }
        self.fail_flow_installed = false;
        self.standalone_flow = standalone;
        self.follow_fail_mode(now_ns);
        self.report_flow_changes(None);
        self.publish();
    }

    /// Installs or removes the standalone flow as a controller comes or
    /// goes, and turns OpenFlow 1.0-1.2's table miss on or off as
    /// controllers of those versions come or go; true if it did either.
    pub(crate) fn follow_fail_mode(&mut self, now_ns: u64) -> bool {
        let miss = self.follow_table_miss();
        let Some(fm) = self.standalone_flow.clone() else {
            return miss;
        };
        let want = !self.has_controller();
        if want == self.fail_flow_installed {
            return miss;
        }
        self.fail_flow(&fm, want, now_ns);
        self.fail_flow_installed = want;
        true
    }

    /// A packet no rule matches is a packet-in (OFPR_NO_MATCH) while a
    /// controller of OpenFlow 1.0-1.2 is connected, whose versions send
    /// table misses to the controller by default; management connections
    /// do not count (Open vSwitch: `connmgr_wants_packet_in_on_miss`).
    /// True if it changed.
    fn follow_table_miss(&mut self) -> bool {
        let want = self
            .conns
            .values()
            .any(|c| c.phase == Phase::Open && c.version < ofp::Version::V1_3 && !c.service);
        if want == self.pipeline.miss_to_controller {
            return false;
        }
        self.pipeline.miss_to_controller = want;
        self.dirty = true;
        true
    }

    /// Installs the standalone flow, or removes it: only while the flow
    /// of its table, priority and match is still the one the switch put
    /// there (same cookie and instructions). A controller's own
    /// table-miss flow, which replaced it on the same match and priority,
    /// stays: the standalone flow's cookie is 0, as Open vSwitch's, so the
    /// cookie alone cannot tell them apart.
    fn fail_flow(&mut self, fm: &FlowMod, install: bool, now_ns: u64) {
        let fm = if install {
            fm.clone()
        } else {
            let ours = self
                .pipeline
                .tables()
                .get(fm.table_id as usize)
                .and_then(|t| {
                    t.rules()
                        .find(|r| r.priority == fm.priority && r.match_.get() == fm.match_)
                })
                .is_some_and(|r| {
                    r.cookie == fm.cookie && r.instructions[..] == fm.instructions[..]
                });
            if !ours {
                return;
            }
            FlowMod {
                command: ofp::FlowModCommand::DeleteStrict,
                cookie_mask: u64::MAX,
                ..fm.clone()
            }
        };
        if let Ok(removed) = self.pipeline.flow_mod(&fm, now_ns) {
            self.dirty = true;
            self.flow_removed(&removed, now_ns);
        }
    }

    /// Whether `changes` would all be taken, in order, with ports
    /// `ports_gone` removed and `ports_new` added (up): tried on a copy of
    /// the pipeline, nothing changes.
    pub fn try_local_changes(
        &self,
        ports_gone: &[u32],
        ports_new: &[u32],
        changes: &[LocalChange],
    ) -> Result<(), LocalRefusal> {
        let mut trial = self.pipeline.clone();
        for &no in ports_gone {
            trial.remove_port(no);
        }
        for &no in ports_new {
            trial.set_port(PortState::up(no));
        }
        for (at, c) in changes.iter().enumerate() {
            apply(&mut trial, c, self.now_ns).map_err(|why| LocalRefusal { at, why })?;
        }
        Ok(())
    }

    /// Applies `changes` in order, then publishes; the first refusal
    /// stops there (the changes before it stay applied: try them first
    /// with [`Agent::try_local_changes`]).
    pub fn handle_local_changes(
        &mut self,
        changes: &[LocalChange],
        now_ns: u64,
    ) -> Result<(), LocalRefusal> {
        self.now_ns = self.now_ns.max(now_ns);
        let mut result = Ok(());
        for (at, c) in changes.iter().enumerate() {
            match apply(&mut self.pipeline, c, now_ns) {
                Ok(removed) => {
                    self.dirty = true;
                    self.flow_removed(&removed, now_ns);
                }
                Err(why) => {
                    result = Err(LocalRefusal { at, why });
                    break;
                }
            }
        }
        self.report_flow_changes(None);
        self.publish();
        result
    }
}
