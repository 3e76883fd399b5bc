//! The bridge as its OpenFlow agent's [`agent::Datapath`]: publishing
//! snapshots, handing over PACKET_OUTs, reading port and queue counters,
//! the ports' one door (`port_add`, `port_del`, `port_detach`,
//! `port_reattach`, `port_set`: whoever owns the agent adds and changes
//! ports only through it, and the agent through these), and the
//! management commands that change the datapath itself (`fdb-show`,
//! `fdb-flush`, `vlog`, and the connection tracker's,
//! [`crate::ct_commands`]).
//!
//! A port to add is a [`NewPort`]: its checked spec and its devices,
//! opened here or already (the daemon opens many at once on threads of
//! its own, with [`Bridge::opener`], which only reads the bridge).
//! `add-port`'s words go through the same [`PortRequest`] check as the
//! configuration file's ports; a port that names no number gets the one
//! its interface had last, and every port added but LOCAL is remembered
//! under its name ([`crate::numbers`]). Deleting or detaching a port
//! returns once every running worker has let go of its devices (or
//! [`APPLY_TIMEOUT`] passed, logged).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use agent::{Datapath, PortInfo};
use bytes::Bytes;
use netdev::Port;
use ofp::msg::multipart::PortStats;
use pipeline::Snapshot;

use crate::bridge::{Attached, Bridge};
use crate::channel::PacketOutJob;
use crate::open::{Backend, Opened};
use crate::request::PortRequest;
use crate::vlan::VlanConfig;
use crate::PortSpec;

/// How long a port change may take to reach every worker (a worker takes
/// it within one round: at most a 10 ms idle poll plus one batch).
pub const APPLY_TIMEOUT: Duration = Duration::from_secs(1);

/// A port for [`Datapath::port_add`]: its checked, numbered spec and
/// where its devices come from.
pub struct NewPort {
    spec: PortSpec,
    devices: Devices,
    /// Asked for by `add-port` (logged as added).
    requested: bool,
}

enum Devices {
    /// Opened as the port is added.
    ToOpen,
    /// Opened already ([`crate::Opener::open`]); an error is the adding's.
    Opened(std::io::Result<Opened>),
    /// Given open: one per worker, or one served by worker 0.
    Given(Vec<Box<dyn Port>>),
    /// None: the interface does not exist yet; the port waits, detached,
    /// for [`Datapath::port_reattach`].
    Detached,
}

impl NewPort {
    /// A port whose devices the bridge opens as it adds it.
    pub fn to_open(spec: PortSpec) -> NewPort {
        NewPort::with(spec, Devices::ToOpen)
    }

    /// A port whose devices [`crate::Opener::open`] opened (maybe on
    /// another thread); if that failed, adding it fails with that error.
    pub fn opened(spec: PortSpec, opened: std::io::Result<Opened>) -> NewPort {
        NewPort::with(spec, Devices::Opened(opened))
    }

    /// A port on devices already open: one per worker, or a single one
    /// served by worker 0 (a pcap or memory port).
    pub fn with_devices(spec: PortSpec, devices: Vec<Box<dyn Port>>) -> NewPort {
        NewPort::with(spec, Devices::Given(devices))
    }

    /// A port whose interface does not exist yet: added detached (link
    /// down), it waits for its interface.
    pub fn detached(spec: PortSpec) -> NewPort {
        NewPort::with(spec, Devices::Detached)
    }

    fn with(spec: PortSpec, devices: Devices) -> NewPort {
        NewPort {
            spec,
            devices,
            requested: false,
        }
    }

    /// How the port is opened.
    pub fn spec(&self) -> &PortSpec {
        &self.spec
    }
}

/// A port's queues as the agent describes them: (id, min, max) in kbit/s.
fn queues(spec: &PortSpec) -> Vec<(u32, u64, u64)> {
    spec.queues
        .iter()
        .map(|q| (q.id, q.min_rate, q.max_rate))
        .collect()
}

impl Bridge {
    /// `add-port`'s words as a port of this bridge: checked, numbered.
    fn requested_port(&self, words: &[String], taken: &[u32]) -> Result<PortSpec, String> {
        let r = PortRequest::from_words(words, taken).map_err(|e| e.in_words())?;
        let no = match r.ofport {
            Some(n) => n,
            None => self
                .numbers
                .choose(&r.name, taken)
                .ok_or("no OpenFlow port number is free")?,
        };
        r.check(no, self.default_backend).map_err(|e| e.in_words())
    }

    fn fdb_show(&self) -> String {
        let now = crate::clock::now_ns();
        let mut out = String::from(" port  VLAN  MAC                Age\n");
        for (vlan, mac, port, age) in self.macs.entries(now) {
            let port = match port {
                ofp::port::port_no::LOCAL => "LOCAL".to_string(),
                p => p.to_string(),
            };
            out.push_str(&format!(
                "{port:>5}  {vlan:>4}  {}  {age:>3}\n",
                ofp::text::format_mac(mac)
            ));
        }
        out
    }
}

impl Datapath for Bridge {
    type Port = NewPort;
    type PortSettings = VlanConfig;

    fn publish(&self, snap: Arc<Snapshot>) {
        Bridge::publish(self, snap);
    }

    fn packet_out(&self, in_port: u32, actions: Vec<ofp::Action>, frame: Bytes) -> bool {
        self.channels.to_datapath(PacketOutJob {
            in_port,
            actions,
            frame: frame.to_vec(),
            resume: None,
        })
    }

    fn resume(
        &self,
        in_port: u32,
        c: pipeline::continuation::Continuation,
        fields: Vec<ofp::oxm::Oxm>,
        frame: Bytes,
    ) -> bool {
        self.channels.to_datapath(PacketOutJob {
            in_port,
            actions: Vec::new(),
            frame: frame.to_vec(),
            resume: Some(Box::new((c, fields))),
        })
    }

    fn fast_path_verdict(&self, snap: &Snapshot, in_port: u32, frame: &[u8]) -> Option<String> {
        let xdp = self.fast_path_ports()?;
        Some(if xdp.contains(&in_port) {
            fastpath::model::describe(&fastpath::model::verdict(snap, in_port, &xdp, frame))
        } else {
            "the ingress port is not an xdp port: user space".into()
        })
    }

    fn port_stats(&self, port_no: u32) -> Option<PortStats> {
        let t = self.port_counters(port_no)?;
        Some(PortStats {
            port_no,
            rx_packets: t.rx_packets.load(Relaxed),
            tx_packets: t.tx_packets.load(Relaxed),
            rx_bytes: t.rx_bytes.load(Relaxed),
            tx_bytes: t.tx_bytes.load(Relaxed),
            tx_dropped: t.tx_dropped.load(Relaxed),
            rx_errors: t.rx_errors.load(Relaxed),
            ..PortStats::default()
        })
    }

    fn queue_stats(&self, port_no: u32, queue_id: u32) -> Option<(u64, u64, u64)> {
        let c = self.queue_counters(port_no, queue_id)?;
        Some((
            c.tx_bytes.load(Relaxed),
            c.tx_packets.load(Relaxed),
            c.tx_errors.load(Relaxed),
        ))
    }

    fn port_from_words(&self, words: &[String], taken: &[u32]) -> Result<NewPort, String> {
        let spec = self.requested_port(words, taken)?;
        Ok(NewPort {
            requested: true,
            ..NewPort::to_open(spec)
        })
    }

    fn port_add(&mut self, port: NewPort) -> Result<PortInfo, String> {
        let NewPort {
            spec,
            devices,
            requested,
        } = port;
        let err = |e: std::io::Error| e.to_string();
        let (no, name, local) = (
            spec.port_no,
            spec.name.clone(),
            spec.backend == Backend::Local,
        );
        let queues = queues(&spec);
        // Devices opened elsewhere come with a spec nobody here checked
        // yet: a taken number or name is refused before any is handed out.
        if matches!(devices, Devices::Opened(_) | Devices::Given(_)) {
            self.check_free(&spec).map_err(err)?;
        }
        let a = match devices {
            Devices::ToOpen => Bridge::add_port(self, spec).map_err(err)?,
            Devices::Opened(o) => self.add_port_opened(spec, o.map_err(err)?),
            Devices::Given(devs) => self.add_port_devices(spec, devs),
            Devices::Detached => {
                self.add_port_detached(spec).map_err(err)?;
                Attached {
                    hw_addr: [0; 6],
                    link_up: false,
                }
            }
        };
        if !local {
            self.numbers.remember(&name, no);
        }
        if requested {
            tracing::info!(bridge = %self.name, port = no, name = %name, "port added");
        }
        Ok(PortInfo {
            link_up: a.link_up,
            queues,
            ..PortInfo::new(no, &name, a.hw_addr)
        })
    }

    fn port_del(&mut self, port_no: u32) -> Result<(), String> {
        let spec = self
            .remove_port(port_no)
            .ok_or_else(|| format!("no port {port_no} in the datapath"))?;
        if !self.wait_applied(APPLY_TIMEOUT) {
            tracing::warn!(bridge = %self.name, port = port_no, "a worker has not let go of the deleted port within 1 s");
        }
        tracing::info!(bridge = %self.name, port = port_no, name = %spec.name, "port deleted");
        Ok(())
    }

    fn port_detach(&mut self, port_no: u32) -> bool {
        if !self.detach(port_no) {
            return false;
        }
        if !self.wait_applied(APPLY_TIMEOUT) {
            tracing::warn!(bridge = %self.name, port = port_no, "a worker has not let go of the detached port within 1 s");
        }
        true
    }

    fn port_reattach(&mut self, port_no: u32) -> Result<PortInfo, String> {
        let a = self.reattach(port_no).map_err(|e| e.to_string())?;
        // What was learned there was learned from another interface.
        self.macs.forget_port(port_no);
        let spec = self.port(port_no).expect("just re-attached");
        Ok(PortInfo {
            link_up: a.link_up,
            queues: queues(spec),
            ..PortInfo::new(port_no, &spec.name, a.hw_addr)
        })
    }

    fn port_link_changed(&mut self, port_no: u32, up: bool) {
        // What was learned there may have moved while the link was down.
        if !up {
            self.macs.forget_port(port_no);
        }
    }

    fn port_set(&mut self, port_no: u32, vlan: VlanConfig) -> bool {
        self.set_port_vlan(port_no, vlan)
    }

    fn normal_hop(
        &self,
        snap: &Snapshot,
        in_port: u32,
        frame: &[u8],
        now_ns: u64,
    ) -> Option<pipeline::trace::NormalHop> {
        self.macs
            .explain(&self.vlans(), &snap.ports, frame, in_port, now_ns)
    }

    fn command(&mut self, words: &[String]) -> Option<Result<String, String>> {
        // The tracker is the pipeline's, the same in every snapshot.
        let tracker = self.pipeline.load().conntrack.clone();
        let now_ms = crate::clock::now_ns() / 1_000_000;
        if let Some(r) = crate::ct_commands::run(&tracker, words, now_ms) {
            return Some(r);
        }
        let args = &words[1..];
        Some(match (words[0].as_str(), args.len()) {
            ("fdb-show", 0) => Ok(self.fdb_show()),
            ("fdb-flush", 0) => {
                self.macs.flush();
                Ok("MAC table flushed\n".into())
            }
            ("vlog", 1) => match &self.set_log {
                Some(f) => f(&args[0]).map(|now| format!("log filter: {now}\n")),
                None => Err("vlog: this daemon's log level is fixed".into()),
            },
            ("fdb-show" | "fdb-flush", _) => Err(format!("{}: takes no argument", words[0])),
            ("vlog", _) => {
                Err("vlog: one LEVEL or FILTER (as RUST_LOG: info, debug, sluice=trace,...)".into())
            }
            _ => return None,
        })
    }
}
