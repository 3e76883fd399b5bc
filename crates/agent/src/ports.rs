//! The bridge's ports as controllers see them: added, removed, their
//! link and PORT_MOD configuration, and the PORT_STATUS each change sends.
//!
//! Contract: every change that alters a port's description reaches the
//! pipeline (its port table) and every connection whose asynchronous
//! configuration asks for that PORT_STATUS reason, and is published.

use super::*;

impl<D: Datapath> Agent<D> {
    /// Adds (or replaces) a port; connected controllers hear PORT_STATUS ADD.
    pub fn handle_port_added(&mut self, p: PortInfo) {
        self.pipeline.set_port(p.state());
        let desc = p.desc();
        self.ports.insert(p.port_no, p);
        self.dirty = true;
        self.port_status(PortReason::Add, desc);
        self.publish();
    }

    /// Removes a port; connected controllers hear PORT_STATUS DELETE. Flows
    /// that output to it stay and send nothing there (as in Open vSwitch).
    /// False if there is no such port.
    pub fn handle_port_removed(&mut self, port_no: u32) -> bool {
        let Some(p) = self.ports.remove(&port_no) else {
            return false;
        };
        self.pipeline.remove_port(port_no);
        self.dirty = true;
        self.port_status(PortReason::Delete, p.desc());
        self.publish();
        true
    }

    /// A port's devices were opened again (its interface came back, maybe
    /// with another hardware address): controllers hear PORT_STATUS MODIFY
    /// if its description changed.
    pub fn handle_port_reattached(&mut self, port: u32, hw_addr: [u8; 6], up: bool) {
        self.modify_port(port, |p| {
            p.hw_addr = hw_addr;
            p.link_up = up;
        });
    }

    /// A port's link went up or down.
    pub fn handle_link_change(&mut self, port: u32, up: bool) {
        self.modify_port(port, |p| p.link_up = up);
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
