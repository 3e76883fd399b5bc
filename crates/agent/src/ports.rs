//! The bridge's ports as controllers see them: added, deleted, detached
//! and re-attached, their link and PORT_MOD configuration, and the
//! PORT_STATUS each change sends.
//!
//! Contracts:
//! * One door: a port's devices change only through these inputs, each
//!   asking the datapath first ([`Datapath::port_add`], `port_del`,
//!   `port_detach`, `port_reattach`, `port_set`; a link's change is told
//!   it, `port_link_changed`); a refusal changes nothing, and the agent
//!   announces what the datapath did.
//! * Every change that alters a port's description reaches the pipeline
//!   (its port table) and every connection whose asynchronous
//!   configuration asks for that PORT_STATUS reason, and is published.

use super::*;

impl<D: Datapath> Agent<D> {
    /// Adds a port through the datapath ([`Datapath::port_add`]); then
    /// the pipeline knows it, connected controllers hear PORT_STATUS ADD
    /// and the pipeline is published. `now_ns` is when it counts from
    /// (stats durations). Err is the datapath's refusal, as it gave it
    /// (nothing changed). The port as added.
    pub fn handle_add_port(&mut self, port: D::Port, now_ns: u64) -> Result<PortInfo, String> {
        let info = PortInfo {
            since_ns: now_ns,
            ..self.datapath.port_add(port)?
        };
        self.port_added(info.clone());
        Ok(info)
    }

    /// Deletes a port: the datapath closes its devices first
    /// ([`Datapath::port_del`]; a refusal changes nothing), then the port
    /// leaves the pipeline and connected controllers hear PORT_STATUS
    /// DELETE. Flows that output to it stay and send nothing there (as in
    /// Open vSwitch). Err: no such port, or the datapath's refusal.
    pub fn handle_del_port(&mut self, port_no: u32) -> Result<(), String> {
        if !self.ports.contains_key(&port_no) {
            return Err(format!("no port {port_no}"));
        }
        // Until the pipeline without the port is published, outputs to it
        // find no device and are dropped.
        self.datapath.port_del(port_no)?;
        self.port_removed(port_no);
        Ok(())
    }

    /// A port's interface is gone: the datapath closes its devices
    /// ([`Datapath::port_detach`]), the port keeps its number, its link is
    /// down (PORT_STATUS MODIFY). False (nothing changed) if it had no
    /// devices open.
    pub fn handle_detach_port(&mut self, port_no: u32) -> bool {
        if !self.datapath.port_detach(port_no) {
            return false;
        }
        self.modify_port(port_no, |p| p.link_up = false);
        true
    }

    /// A detached port's interface is back: the datapath opens its devices
    /// again ([`Datapath::port_reattach`]); controllers hear PORT_STATUS
    /// MODIFY if its description changed (another hardware address, its
    /// link). Err: the datapath cannot open them yet (nothing changed).
    /// The port as the datapath sees it now.
    pub fn handle_reattach_port(&mut self, port_no: u32) -> Result<PortInfo, String> {
        let now = self.datapath.port_reattach(port_no)?;
        self.modify_port(port_no, |p| {
            p.hw_addr = now.hw_addr;
            p.link_up = now.link_up;
        });
        Ok(now)
    }

    /// Changes a port's settings that only the datapath sees
    /// ([`Datapath::port_set`]): no PORT_STATUS, nothing published. False
    /// if the datapath has no such port.
    pub fn handle_port_settings(&mut self, port_no: u32, settings: D::PortSettings) -> bool {
        self.datapath.port_set(port_no, settings)
    }

    /// A port's link went up or down: if that is news, the datapath hears
    /// it first ([`Datapath::port_link_changed`]), then controllers
    /// (PORT_STATUS MODIFY).
    pub fn handle_link_change(&mut self, port: u32, up: bool) {
        if self.ports.get(&port).is_some_and(|p| p.link_up != up) {
            self.datapath.port_link_changed(port, up);
        }
        self.modify_port(port, |p| p.link_up = up);
    }

    /// The datapath added a port (or replaced one of that number):
    /// connected controllers hear PORT_STATUS ADD.
    fn port_added(&mut self, p: PortInfo) {
        self.pipeline.set_port(p.state());
        let desc = p.desc();
        self.ports.insert(p.port_no, p);
        self.dirty = true;
        self.port_status(PortReason::Add, desc);
        self.publish();
    }

    /// The datapath deleted a port: connected controllers hear
    /// PORT_STATUS DELETE.
    fn port_removed(&mut self, port_no: u32) {
        let Some(p) = self.ports.remove(&port_no) else {
            return;
        };
        self.pipeline.remove_port(port_no);
        self.dirty = true;
        self.port_status(PortReason::Delete, p.desc());
        self.publish();
    }

    /// Applies `change` to a port; if that changed it, the pipeline learns
    /// its new state, controllers hear PORT_STATUS MODIFY and the pipeline
    /// is published.
    pub(crate) fn modify_port(&mut self, port: u32, change: impl FnOnce(&mut PortInfo)) {
        let Some(p) = self.ports.get_mut(&port) else {
            return;
        };
        let before = (p.hw_addr, p.link_up);
        change(p);
        if (p.hw_addr, p.link_up) == before {
            return;
        }
        let (state, desc) = (p.state(), p.desc());
        self.pipeline.set_port(state);
        self.dirty = true;
        self.port_status(PortReason::Modify, desc);
        self.publish();
    }

    pub(crate) fn port_status(&mut self, reason: PortReason, desc: PortDesc) {
        let msg = Message::PortStatus(PortStatus { reason, desc });
        for c in self.conns.values_mut() {
            if c.wants(c.async_config.port_status_mask, reason.value()) {
                let xid = c.xid();
                c.send(&msg, xid);
            }
        }
    }
}
