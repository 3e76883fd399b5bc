//! Bringing the running bridges in line with the database, on the control
//! thread: bridges the database no longer has are removed, new ones built
//! and started, and each kept bridge gets its changes the way a reload
//! applies a file's ([`crate::reload::apply`]: ports added and deleted,
//! controllers, table names). What a running bridge cannot change
//! (datapath id, fail mode) rebuilds it: its flows go, as a new bridge's
//! would. Then [`state`] reads back what runs, for [`super::status`].

use std::collections::{BTreeMap, HashMap};

use ovsdb::{Database, Uuid};

use super::desired;
use super::status::{BridgeState, PortState};
use crate::config;
use crate::health;
use crate::launch::Launcher;
use crate::running::{self, Running};

/// What a round of reconciling leaves to write back.
pub struct Applied {
    /// The Interface rows' problems (None: as the last round left them).
    pub errors: Option<BTreeMap<Uuid, String>>,
    pub next_cfg: i64,
}

/// Applies the database to the running bridges. `last` is the
/// fingerprint of what the last round applied ([`desired::Sections`]):
/// when nothing the switch reads changed, nothing is checked or applied
/// (a status write, statistics, an `ovs-vsctl` that changed only
/// `next_cfg`), so a round costs a walk of the rows.
pub fn reconcile(
    db: &Database,
    base: &config::File,
    running: &mut Vec<Running>,
    workers: &mut Vec<health::Thread>,
    launcher: &Launcher,
    last: &mut Option<u64>,
) -> Applied {
    let read = desired::sections(db);
    if *last == Some(read.fingerprint) {
        return Applied {
            errors: None,
            next_cfg: read.next_cfg,
        };
    }
    *last = Some(read.fingerprint);
    let want = desired::check(read, base);
    let mut errors = want.errors;
    // Removed, or changed in what a running bridge cannot change.
    let mut i = 0;
    while i < running.len() {
        let keep = want.bridges.iter().any(|c| {
            c.name == running[i].name
                && crate::reload::needs_restart(&running[i].config, c).is_empty()
        });
        if keep {
            i += 1;
        } else {
            let r = running.remove(i);
            launcher.remove(r, workers);
        }
    }
    for cfg in want.bridges {
        let name = cfg.name.clone();
        if let Some(r) = running.iter_mut().find(|r| r.name == name) {
            match crate::reload::apply(std::slice::from_mut(r), vec![cfg]) {
                Ok(problems) => problems.iter().for_each(|p| tracing::warn!("ovsdb: {p}")),
                Err(e) => tracing::warn!(bridge = %name, error = %e, "ovsdb: changes not applied"),
            }
            continue;
        }
        // A new bridge: built without its ports, which are then added one
        // by one (a port that cannot open is named, the rest run).
        let mut bare = cfg.clone();
        bare.ports.clear();
        bare.backends.clear();
        bare.queues.clear();
        bare.vlans.clear();
        bare.pinned.clear();
        bare.pcap.clear();
        bare.peers.clear();
        let mut r = match running::build(bare, launcher.options()) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(bridge = %name, error = %e, "ovsdb: bridge cannot start");
                for (u, _) in interfaces_of(db, &name) {
                    errors.insert(u, format!("bridge {name}: {e}"));
                }
                continue;
            }
        };
        if let Err(e) = launcher.spawn(&mut r, workers) {
            tracing::error!(bridge = %name, error = %e, "ovsdb: bridge workers cannot start");
            continue;
        }
        match crate::reload::apply(std::slice::from_mut(&mut r), vec![cfg]) {
            Ok(problems) => problems.iter().for_each(|p| tracing::warn!("ovsdb: {p}")),
            Err(e) => tracing::warn!(bridge = %name, error = %e, "ovsdb: ports not added"),
        }
        running.push(r);
    }
    Applied {
        errors: Some(errors),
        next_cfg: want.next_cfg,
    }
}

/// The Interface rows (UUID, name) of a bridge.
fn interfaces_of(db: &Database, bridge: &str) -> Vec<(Uuid, String)> {
    let mut out = Vec::new();
    let Some(t) = db.table("Bridge") else {
        return out;
    };
    for row in t.rows.values() {
        let b = desired::R {
            db,
            table: "Bridge",
            row,
        };
        if b.str("name") != Some(bridge) {
            continue;
        }
        for p in b.refs("ports", "Port") {
            for i in p.refs("interfaces", "Interface") {
                out.push((i.uuid(), i.str("name").unwrap_or_default().to_string()));
            }
        }
    }
    out
}

/// What the running bridges show the database.
pub fn state(running: &[Running]) -> Vec<BridgeState> {
    running
        .iter()
        .map(|r| {
            let mut ports = HashMap::new();
            for (no, p) in r.control.agent().ports() {
                let local = *no == ofp::port::port_no::LOCAL;
                let ofport = if local { 65534 } else { *no as i64 };
                // What the daemon last saw of the interface (no system
                // call per port per round); the TAP devices the switch
                // made (LOCAL, internal ports) are asked; a patch port
                // has no device (Open vSwitch shows ifindex 0, no MTU).
                let backend = r.bridge().port(*no).map(|s| s.backend);
                let (ifindex, mtu) = match backend {
                    _ if local => tap_facts(&p.name),
                    Some(datapath::Backend::Internal) => tap_facts(&p.name),
                    Some(datapath::Backend::Patch) => (Some(0), None),
                    _ => r.link_facts(*no),
                };
                ports.insert(
                    p.name.clone(),
                    PortState {
                        ofport,
                        attached: local || r.bridge().is_attached(*no),
                        admin_up: p.config & 1 == 0,
                        link_up: p.link_up,
                        mac: p.hw_addr,
                        mtu,
                        ifindex,
                        stats: stats_of(r, *no),
                    },
                );
            }
            let view = r.control.current_view();
            let mut controllers = HashMap::new();
            for (target, up) in &view.controllers {
                let role = view
                    .conns
                    .iter()
                    .find(|c| !c.management && c.peer == *target)
                    .map_or("other", |c| match c.role {
                        "master" => "master",
                        "slave" => "slave",
                        _ => "other",
                    });
                controllers.insert(target.clone(), (*up, role));
            }
            BridgeState {
                name: r.name.clone(),
                datapath_id: r.datapath_id,
                local: r
                    .control
                    .agent()
                    .ports()
                    .contains_key(&ofp::port::port_no::LOCAL),
                ports,
                controllers,
            }
        })
        .collect()
}

/// A TAP device's interface index and MTU, asked of the system.
fn tap_facts(name: &str) -> (Option<u32>, Option<u32>) {
    (
        netdev::link::ifindex(name),
        netdev::mtu(name).map(|m| m as u32),
    )
}

/// A port's counters as the Interface `statistics` column names them.
fn stats_of(r: &Running, port_no: u32) -> Vec<(&'static str, u64)> {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(c) = r.bridge().port_counters(port_no) else {
        return Vec::new();
    };
    vec![
        ("rx_packets", c.rx_packets.load(Relaxed)),
        ("rx_bytes", c.rx_bytes.load(Relaxed)),
        (
            "rx_errors",
            c.rx_errors.load(Relaxed) + c.rx_truncated.load(Relaxed),
        ),
        ("tx_packets", c.tx_packets.load(Relaxed)),
        ("tx_bytes", c.tx_bytes.load(Relaxed)),
        ("tx_dropped", c.tx_dropped.load(Relaxed)),
    ]
}
