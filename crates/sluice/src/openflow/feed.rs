//! What the rest of the daemon tells a bridge's agent, and how it reads
//! it.
//!
//! The agent is [`Control`]'s: its connections are the sockets `Control`
//! serves, so nothing else may open, feed or close one. The rest of the
//! daemon (the bridge's ports and links in `running`, a reload, unixctl)
//! reads the agent ([`Control::agent`], and through it the datapath, read
//! only) and gives it the inputs below, each the agent's own `handle_*`
//! or `set_*` of that name. Ports have one door: they are added, deleted,
//! detached, re-attached and set only here, through the agent, which asks
//! the datapath and tells controllers.

use agent::{Agent, ConnConfig, LocalChange, LocalRefusal, PortInfo};
use datapath::{Bridge, NewPort, VlanConfig};

use super::Control;

impl Control {
    /// The bridge's agent, read only.
    pub fn agent(&self) -> &Agent<Bridge> {
        &self.agent
    }

    /// Adds a port ([`Agent::handle_add_port`]): Err is the datapath's
    /// refusal, not naming the port.
    pub fn handle_add_port(&mut self, port: NewPort, now_ns: u64) -> Result<PortInfo, String> {
        self.agent.handle_add_port(port, now_ns)
    }

    /// A port's interface is gone ([`Agent::handle_detach_port`]).
    pub fn handle_detach_port(&mut self, port_no: u32) -> bool {
        self.agent.handle_detach_port(port_no)
    }

    /// A port's interface is back ([`Agent::handle_reattach_port`]).
    pub fn handle_reattach_port(&mut self, port_no: u32) -> Result<PortInfo, String> {
        self.agent.handle_reattach_port(port_no)
    }

    /// A port's VLAN settings, in place ([`Agent::handle_port_settings`]).
    pub fn handle_port_vlan(&mut self, port_no: u32, vlan: VlanConfig) -> bool {
        self.agent.handle_port_settings(port_no, vlan)
    }

    /// A port's link went up or down ([`Agent::handle_link_change`]).
    pub fn handle_link_change(&mut self, port_no: u32, up: bool) {
        self.agent.handle_link_change(port_no, up);
    }

    /// A management command ([`Agent::handle_command`]).
    pub fn handle_command(&mut self, words: &[String]) -> Result<String, String> {
        self.agent.handle_command(words)
    }

    /// What the pipeline does with `frame`, traced as `opts` say
    /// ([`Agent::trace_with`]).
    pub fn trace_with(
        &mut self,
        in_port: u32,
        frame: &[u8],
        opts: &pipeline::trace::Options,
    ) -> String {
        self.agent.trace_with(in_port, frame, opts)
    }

    /// A reload's static flows, groups and meters
    /// ([`Agent::handle_local_changes`]).
    pub fn handle_local_changes(
        &mut self,
        changes: &[LocalChange],
        now_ns: u64,
    ) -> Result<(), LocalRefusal> {
        self.agent.handle_local_changes(changes, now_ns)
    }

    /// What new connections start with ([`Agent::set_conn_config`]).
    pub fn set_conn_config(&mut self, config: ConnConfig) {
        self.agent.set_conn_config(config);
    }

    /// Every connection's PACKET_IN limit ([`Agent::set_packet_in_rate`]).
    pub fn set_packet_in_rate(&mut self, rate: u32) {
        self.agent.set_packet_in_rate(rate);
    }

    /// What packets may teach ([`Agent::set_learn_limits`]).
    pub fn set_learn_limits(&mut self, limits: &crate::config::LearnLimits) {
        self.agent
            .set_learn_limits(limits.rate, limits.burst, limits.max);
    }

    /// The tables' names from the configuration ([`Agent::set_table_names`]).
    pub fn set_table_names(&mut self, names: &std::collections::BTreeMap<u8, String>) {
        self.agent.set_table_names(names);
    }
}
