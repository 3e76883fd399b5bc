//! SIGHUP: the configuration file is read again and the differences are
//! applied to the running bridges, with nothing restarted.
//!
//! * A file that does not parse or check, or whose static flows, groups and
//!   meters the pipeline would refuse (tried first on a copy of each
//!   bridge's pipeline), is refused whole with the error; the running
//!   state stays as it was.
//! * Ports: a port no longer listed is deleted, a new one added, one whose
//!   back end, captures, queues or pinned number changed is deleted and
//!   added again (controllers hear PORT_STATUS DELETE/ADD); a new port
//!   that cannot be opened is reported and the rest applied. A port whose
//!   VLAN settings (`tag`, `trunks`, `vlan_mode`) alone changed keeps its
//!   devices and number and gets them in place: they are NORMAL's, which
//!   no controller sees (NORMAL forgets the addresses learned on it, as
//!   Open vSwitch does). Ports added
//!   at run time with `add-port` and not in the file are deleted too: the
//!   file is the configuration, as Open vSwitch's database is.
//! * Static flows, groups and meters: those of the old file that are not
//!   in the new one are deleted (flows strictly: same table, priority and
//!   match), new or changed ones added. Flows from controllers are left
//!   alone unless the file's flows replace them (same match and priority).
//!   The agent applies them as a controller's changes
//!   (`Agent::handle_local_changes`): a flow deleted that asked for it
//!   (`send_flow_rem`), or that a deleted group or meter takes along, is
//!   reported to controllers in FLOW_REMOVED, and the result is published
//!   at once.
//! * Table names: the file's replace what the old file gave; a table the
//!   old file named and the new one does not loses its name; names
//!   controllers set (TABLE_FEATURES) on other tables stay.
//! * Controllers and listeners: kept endpoints keep their connections,
//!   removed ones are closed with theirs, new ones opened.
//! * What a running bridge cannot change (workers and their CPUs, datapath
//!   id, fail mode, the LOCAL port, `max_flows`, `max_connections`, TLS
//!   files; bridges added or removed) is logged as needing a restart, and
//!   the rest is applied.

use std::collections::HashSet;

use agent::LocalChange;
use datapath::PortSpec;
use ofp::msg::flow::FlowModCommand;
use ofp::msg::group::GroupModCommand;
use ofp::msg::meter::MeterModCommand;

use crate::config::Config;
use crate::running::Running;

/// The changes to one bridge's static flows, groups and meters, in the
/// order they are applied.
struct StaticPlan {
    flow_dels: Vec<ofp::FlowMod>,
    group_dels: Vec<ofp::msg::group::GroupMod>,
    meter_dels: Vec<ofp::msg::meter::MeterMod>,
    meters: Vec<ofp::msg::meter::MeterMod>,
    groups: Vec<ofp::msg::group::GroupMod>,
    flows: Vec<ofp::FlowMod>,
}

impl StaticPlan {
    fn new(old: &Config, new: &Config) -> StaticPlan {
        let flow_dels = old
            .flows
            .iter()
            .filter(|f| !new.flows.contains(f))
            .map(|f| ofp::FlowMod {
                command: FlowModCommand::DeleteStrict,
                out_port: ofp::port::port_no::ANY,
                out_group: ofp::port::group_no::ANY,
                ..f.clone()
            })
            .collect();
        let flows = new
            .flows
            .iter()
            .filter(|f| !old.flows.contains(f))
            .cloned()
            .collect();
        let old_groups: HashSet<u32> = old.groups.iter().map(|g| g.group_id).collect();
        let new_groups: HashSet<u32> = new.groups.iter().map(|g| g.group_id).collect();
        let group_dels = old
            .groups
            .iter()
            .filter(|g| !new_groups.contains(&g.group_id))
            .map(|g| ofp::msg::group::GroupMod {
                command: GroupModCommand::Delete,
                buckets: Vec::new(),
                ..g.clone()
            })
            .collect();
        let groups = new
            .groups
            .iter()
            .filter(|g| !old.groups.contains(g))
            .map(|g| ofp::msg::group::GroupMod {
                command: if old_groups.contains(&g.group_id) {
                    GroupModCommand::Modify
                } else {
                    GroupModCommand::Add
                },
                ..g.clone()
            })
            .collect();
        let old_meters: HashSet<u32> = old.meters.iter().map(|m| m.meter_id).collect();
        let new_meters: HashSet<u32> = new.meters.iter().map(|m| m.meter_id).collect();
        let meter_dels = old
            .meters
            .iter()
            .filter(|m| !new_meters.contains(&m.meter_id))
            .map(|m| ofp::msg::meter::MeterMod {
                command: MeterModCommand::Delete,
                bands: Vec::new(),
                ..m.clone()
            })
            .collect();
        let meters = new
            .meters
            .iter()
            .filter(|m| !old.meters.contains(m))
            .map(|m| ofp::msg::meter::MeterMod {
                command: if old_meters.contains(&m.meter_id) {
                    MeterModCommand::Modify
                } else {
                    MeterModCommand::Add
                },
                ..m.clone()
            })
            .collect();
        StaticPlan {
            flow_dels,
            group_dels,
            meter_dels,
            meters,
            groups,
            flows,
        }
    }

    fn is_empty(&self) -> bool {
        self.flow_dels.is_empty()
            && self.group_dels.is_empty()
            && self.meter_dels.is_empty()
            && self.meters.is_empty()
            && self.groups.is_empty()
            && self.flows.is_empty()
    }

    /// The plan as the agent's local changes, in the order they are
    /// applied, each with how a refusal names it.
    fn changes(&self) -> (Vec<String>, Vec<LocalChange>) {
        let mut v: Vec<(String, LocalChange)> = Vec::new();
        for f in &self.flow_dels {
            v.push(("deleting a flow".into(), LocalChange::Flow(f.clone())));
        }
        for g in &self.group_dels {
            v.push((
                format!("deleting group {}", g.group_id),
                LocalChange::Group(g.clone()),
            ));
        }
        for m in &self.meter_dels {
            v.push((
                format!("deleting meter {}", m.meter_id),
                LocalChange::Meter(m.clone()),
            ));
        }
        for m in &self.meters {
            v.push((
                format!("meter {}", m.meter_id),
                LocalChange::Meter(m.clone()),
            ));
        }
        for g in &self.groups {
            v.push((
                format!("group {}", g.group_id),
                LocalChange::Group(g.clone()),
            ));
        }
        for f in &self.flows {
            v.push((
                format!("flow {}", ofp::text::format_flow_mod(f)),
                LocalChange::Flow(f.clone()),
            ));
        }
        v.into_iter().unzip()
    }
}

/// How a bridge's ports become those of `new`.
#[derive(Default)]
struct PortPlan {
    /// Ports to delete, by number.
    dels: Vec<u32>,
    /// Ports to add.
    adds: Vec<PortSpec>,
    /// Kept ports whose VLAN settings change, in place (no PORT_STATUS:
    /// nothing a controller sees changes; NORMAL forgets the addresses
    /// learned on them, as Open vSwitch does).
    vlans: Vec<(u32, datapath::VlanConfig)>,
}

/// The ports to delete (numbers), to add (specs) and to change in place
/// to make a bridge's ports those of `new`. A port is kept when its
/// interface, back end, captures, queues and pinned number stay; its VLAN
/// settings alone change in place.
fn port_plan(r: &Running, new: &Config) -> PortPlan {
    let dp = r.control.agent().datapath();
    let mut dels = Vec::new();
    let mut adds = Vec::new();
    let mut vlans = Vec::new();
    let mut taken: HashSet<u32> = HashSet::new();
    let wanted = new.port_specs();
    // By name and number: a bridge of thousands of ports (a database's)
    // is planned in linear time.
    let by_name: std::collections::HashMap<&str, &PortSpec> =
        wanted.iter().map(|w| (w.name.as_str(), w)).collect();
    let pinned: HashSet<u32> = new.pinned.iter().copied().collect();
    let mut current: std::collections::HashMap<String, u32> = Default::default();
    for cur in dp.ports() {
        if cur.port_no == ofp::port::port_no::LOCAL {
            continue;
        }
        current.insert(cur.name.clone(), cur.port_no);
        let keep = by_name.get(cur.name.as_str()).filter(|w| {
            w.backend == cur.backend
                && w.pcap == cur.pcap
                && w.peer == cur.peer
                && w.queues == cur.queues
                && (!pinned.contains(&w.port_no) || w.port_no == cur.port_no)
        });
        if let Some(w) = keep {
            taken.insert(cur.port_no);
            if w.vlan != cur.vlan {
                vlans.push((cur.port_no, w.vlan.clone()));
            }
        } else {
            dels.push(cur.port_no);
        }
    }
    taken.extend(new.pinned.iter().copied());
    let deleted: HashSet<u32> = dels.iter().copied().collect();
    for mut w in wanted {
        if let Some(no) = current.get(&w.name) {
            if !deleted.contains(no) {
                continue; // kept as it is
            }
        }
        if !new.pinned.contains(&w.port_no) {
            // Unpinned: the number it had last, else a free one.
            match dp.numbers.choose_in(&w.name, &taken) {
                Some(n) => w.port_no = n,
                None => continue,
            }
        }
        taken.insert(w.port_no);
        adds.push(w);
    }
    PortPlan { dels, adds, vlans }
}

/// What a running bridge cannot change, as lines for the log.
pub fn needs_restart(old: &Config, new: &Config) -> Vec<&'static str> {
    let mut v = Vec::new();
    if old.workers != new.workers {
        v.push("workers/cpus");
    }
    if old.datapath_id != new.datapath_id {
        v.push("datapath_id");
    }
    if old.fail_mode != new.fail_mode {
        v.push("fail_mode");
    }
    if old.local_port != new.local_port {
        v.push("local_port");
    }
    if old.max_flows != new.max_flows {
        v.push("max_flows");
    }
    if old.max_connections != new.max_connections {
        v.push("max_connections");
    }
    if old.default_backend != new.default_backend {
        v.push("backend (of ports already open)");
    }
    v
}

/// Applies `new` (one checked configuration per bridge) to the running
/// bridges. Err (and nothing changed) if the new configuration cannot be
/// applied; Ok with the problems met while applying it otherwise.
pub fn apply(running: &mut [Running], new: Vec<Config>) -> Result<Vec<String>, String> {
    let names: HashSet<&str> = running.iter().map(|r| r.name.as_str()).collect();
    let new_names: HashSet<&str> = new.iter().map(|c| c.name.as_str()).collect();
    if names != new_names {
        return Err(format!(
            "bridges added or removed (running: {}; file: {}): that needs a restart",
            sorted(&names),
            sorted(&new_names)
        ));
    }
    // Plan every bridge and try its static changes on a copy of its
    // pipeline before anything changes.
    let mut plans = Vec::new();
    for cfg in new {
        let r = running
            .iter()
            .find(|r| r.name == cfg.name)
            .expect("same names");
        let PortPlan { dels, adds, vlans } = port_plan(r, &cfg);
        let stat = StaticPlan::new(&r.config, &cfg);
        let (labels, changes) = stat.changes();
        let new_ports: Vec<u32> = adds.iter().map(|a| a.port_no).collect();
        r.control
            .agent()
            .try_local_changes(&dels, &new_ports, &changes)
            .map_err(|e| format!("bridge {}: {}: {}", cfg.name, labels[e.at], e.why))?;
        plans.push((cfg, dels, adds, vlans, stat));
    }
    let mut problems = Vec::new();
    // Every bridge's deletions before any addition: a port (a tunnel
    // port's UDP port, an interface) moving from one bridge to another
    // is free by the time it is added.
    for (cfg, dels, _, _, _) in &plans {
        let r = running
            .iter_mut()
            .find(|r| r.name == cfg.name)
            .expect("same names");
        for no in dels {
            if let Err(e) = r
                .control
                .handle_command(&["del-port".into(), no.to_string()])
            {
                problems.push(format!("bridge {}: {e}", r.name));
            }
        }
    }
    for (cfg, _, adds, vlans, stat) in plans {
        let r = running
            .iter_mut()
            .find(|r| r.name == cfg.name)
            .expect("same names");
        for what in needs_restart(&r.config, &cfg) {
            problems.push(format!(
                "bridge {}: {what} changed: takes effect at the next start",
                r.name
            ));
        }
        for (no, vlan) in vlans {
            if r.control.handle_port_vlan(no, vlan.clone()) {
                tracing::info!(bridge = %r.name, port = no, vlan = %vlan, "port VLAN settings changed (configuration)");
            }
        }
        let labels: Vec<(u32, String)> = adds.iter().map(|s| (s.port_no, s.name.clone())).collect();
        for ((no, name), res) in labels.into_iter().zip(r.add_ports(adds)) {
            match res {
                Ok(()) => {
                    tracing::info!(bridge = %r.name, port = no, name = %name, "port added (configuration)")
                }
                Err(e) => problems.push(format!("bridge {}: {e}", r.name)),
            }
        }
        if !stat.is_empty() {
            let (labels, changes) = stat.changes();
            let now = datapath::clock::now_ns();
            if let Err(e) = r.control.handle_local_changes(&changes, now) {
                // Tried on a copy first: only a port that failed to open
                // can make this differ.
                problems.push(format!("bridge {}: {}: {}", r.name, labels[e.at], e.why));
            }
        }
        r.control.set_conn_config(agent::ConnConfig {
            versions: cfg.protocols,
            ..*r.control.agent().conn_config()
        });
        if let Some(rate) = cfg.packet_in_rate {
            r.control.set_packet_in_rate(rate);
        }
        r.control.set_learn_limits(&cfg.learn);
        let changed = cfg.conntrack.apply_changes(
            &r.config.conntrack,
            r.control.agent().pipeline().conntrack(),
        );
        if !changed.is_empty() {
            tracing::info!(bridge = %r.name, changed = %changed.join(", "), "connection tracker settings changed (configuration)");
        }
        if cfg.tables != r.config.tables {
            r.control.set_table_names(&cfg.tables);
            tracing::info!(bridge = %r.name, "table names changed (configuration)");
        }
        let mut endpoints = cfg.endpoints.clone();
        endpoints.extend(r.mgmt.iter().cloned());
        problems.extend(
            r.control
                .set_endpoints(&endpoints)
                .into_iter()
                .map(|p| format!("bridge {}: {p}", r.name)),
        );
        r.config = cfg;
    }
    Ok(problems)
}

fn sorted(s: &HashSet<&str>) -> String {
    let mut v: Vec<&str> = s.iter().copied().collect();
    v.sort_unstable();
    v.join(", ")
}
