//! Management commands (sluice's COMMAND_REQUEST from the management
//! socket): `add-port`, `del-port` here (through the ports' one door,
//! [`Agent::handle_add_port`] and [`Agent::handle_del_port`]), the rest
//! by the datapath.
//!
//! Contract: a refused command changes nothing; the answer is the text
//! the user sees.

use super::*;

impl<D: Datapath> Agent<D> {
    /// Runs a management command (sluice's COMMAND_REQUEST): `add-port`,
    /// `del-port` and `show-ports` here, the rest by the datapath. The
    /// answer is the text the user sees, Err if refused.
    pub fn handle_command(&mut self, words: &[String]) -> Result<String, String> {
        let Some(verb) = words.first().map(String::as_str) else {
            return Err("an empty command".into());
        };
        match verb {
            "add-port" => {
                let name = words.get(1).ok_or("add-port: which interface?")?;
                if let Some(p) = self.ports.values().find(|p| p.name == *name) {
                    return Err(format!("add-port: {name} is already port {}", p.port_no));
                }
                let taken: Vec<u32> = self.ports.keys().copied().collect();
                let port = self
                    .datapath
                    .port_from_words(&words[1..], &taken)
                    .map_err(|e| format!("add-port {name}: {e}"))?;
                let info = self
                    .handle_add_port(port, self.now_ns)
                    .map_err(|e| format!("add-port {name}: {e}"))?;
                let (no, up) = (info.port_no, info.link_up);
                Ok(format!(
                    "added {name} as port {no} (link {})\n",
                    if up { "up" } else { "down" }
                ))
            }
            "del-port" => {
                let which = words.get(1).ok_or("del-port: which port?")?;
                if words.len() > 2 {
                    return Err(format!("del-port: unexpected {:?}", words[2]));
                }
                let no = self
                    .ports
                    .values()
                    .find(|p| p.name == *which || p.port_no.to_string() == *which)
                    .map(|p| p.port_no)
                    .ok_or_else(|| format!("del-port: {which} is not a port of this bridge"))?;
                if no == ofp::port::port_no::LOCAL {
                    return Err("del-port: the LOCAL port goes with the bridge".into());
                }
                // The devices first: if the datapath refuses, nothing
                // changed.
                self.handle_del_port(no)
                    .map_err(|e| format!("del-port {which}: {e}"))?;
                Ok(format!("deleted port {no} ({which})\n"))
            }
            _ => self
                .datapath
                .command(words)
                .unwrap_or_else(|| Err(format!("{verb:?}: no such command"))),
        }
    }
}
