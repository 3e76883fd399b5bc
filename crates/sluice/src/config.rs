//! The daemon's configuration: a TOML file and/or command-line flags.
//!
//! ```toml
//! [bridge]
//! name = "br0"
//! datapath_id = "0x1"
//! fail_mode = "standalone"
//!
//! [[port]]
//! name = "veth-a"
//! ofport = 1
//! ```
//!
//! Every problem is reported with the key it concerns and nothing starts
//! half-way: the whole configuration is checked before any port opens.

use std::collections::HashSet;

use serde::Deserialize;

/// What to do with no controller: be a learning switch, or keep the flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    Standalone,
    Secure,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BridgeSection {
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default)]
    pub datapath_id: Option<String>,
    #[serde(default = "default_fail_mode")]
    pub fail_mode: FailMode,
    /// Flows (ovs-ofctl syntax) installed at start, before any controller.
    #[serde(default)]
    pub flows: Vec<String>,
    /// Groups (ovs-ofctl syntax), installed before the flows.
    #[serde(default)]
    pub groups: Vec<String>,
    /// Meters (ovs-ofctl syntax), installed before the flows.
    #[serde(default)]
    pub meters: Vec<String>,
    /// Create the OpenFlow LOCAL port: a TAP device named after the bridge.
    #[serde(default = "default_true")]
    pub local_port: bool,
}

fn default_true() -> bool {
    true
}

fn default_name() -> String {
    "br0".into()
}

fn default_fail_mode() -> FailMode {
    FailMode::Standalone
}

impl Default for BridgeSection {
    fn default() -> Self {
        BridgeSection {
            name: default_name(),
            datapath_id: None,
            fail_mode: FailMode::Standalone,
            flows: Vec::new(),
            groups: Vec::new(),
            meters: Vec::new(),
            local_port: true,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSection {
    pub name: String,
    #[serde(default)]
    pub ofport: Option<u32>,
    #[serde(default = "default_backend")]
    pub backend: String,
    /// Egress queues for `set_queue`.
    #[serde(default)]
    pub queues: Vec<QueueSection>,
}

/// A port's egress queue: `max_rate`/`min_rate` in kbit/s (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSection {
    pub id: u32,
    #[serde(default)]
    pub max_rate: u64,
    #[serde(default)]
    pub min_rate: u64,
}

fn default_backend() -> String {
    "afpacket".into()
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    #[serde(default)]
    pub bridge: BridgeSection,
    #[serde(default, rename = "port")]
    pub ports: Vec<PortSection>,
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub name: String,
    pub datapath_id: u64,
    pub fail_mode: FailMode,
    pub flows: Vec<ofp::FlowMod>,
    pub groups: Vec<ofp::msg::group::GroupMod>,
    pub meters: Vec<ofp::msg::meter::MeterMod>,
    pub local_port: bool,
    /// (OpenFlow port number, interface name), in order.
    pub ports: Vec<(u32, String)>,
    /// Queues per OpenFlow port number.
    pub queues: Vec<(u32, QueueSection)>,
}

/// A configuration problem: the key and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub key: String,
    pub problem: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "config: {}: {}", self.key, self.problem)
    }
}

impl std::error::Error for ConfigError {}

fn err(key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        key: key.into(),
        problem: problem.into(),
    }
}

/// Parses TOML text.
pub fn parse_file(text: &str) -> Result<File, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let msg = e.message().to_string();
        let key = e
            .span()
            .map(|sp| text[..sp.start].lines().count().to_string())
            .map(|l| format!("line {l}"));
        err(key.unwrap_or_else(|| "file".into()), msg)
    })
}

/// Checks a file's contents plus ports given on the command line
/// (`NAME` or `NAME=OFPORT`).
pub fn check(file: File, cli_ports: &[String]) -> Result<Config, ConfigError> {
    let mut ports = Vec::new();
    let mut used = HashSet::new();
    let mut names = HashSet::new();
    let mut specs: Vec<(String, Option<u32>, String)> = file
        .ports
        .iter()
        .map(|p| (p.name.clone(), p.ofport, p.backend.clone()))
        .collect();
    let mut queues = Vec::new();
    for (i, s) in cli_ports.iter().enumerate() {
        let (name, no) = match s.split_once('=') {
            Some((n, v)) => (
                n.to_string(),
                Some(
                    v.parse::<u32>()
                        .map_err(|_| err(format!("--port {s}"), "OFPORT must be a number"))?,
                ),
            ),
            None => (s.clone(), None),
        };
        let _ = i;
        specs.push((name, no, "afpacket".into()));
    }
    for (i, (name, no, backend)) in specs.iter().enumerate() {
        let key = format!("port[{i}]");
        if name.is_empty()
            || name.len() > 15
            || name.contains('/')
            || name.contains(char::is_whitespace)
        {
            return Err(err(
                format!("{key}.name"),
                format!(
                    "{name:?} is not a Linux interface name (1-15 characters, no '/' or spaces)"
                ),
            ));
        }
        if backend != "afpacket" {
            return Err(err(
                format!("{key}.backend"),
                format!("{backend:?} is not available (only \"afpacket\" is built)"),
            ));
        }
        if !names.insert(name.clone()) {
            return Err(err(
                format!("{key}.name"),
                format!("{name} is listed twice"),
            ));
        }
        let no = match no {
            Some(n) => *n,
            None => (1..)
                .find(|n| !used.contains(n) && !specs.iter().any(|(_, o, _)| *o == Some(*n)))
                .unwrap_or(1),
        };
        if no == 0 || no > ofp::port::port_no::MAX {
            return Err(err(
                format!("{key}.ofport"),
                format!(
                    "{no} is not a usable OpenFlow port number (1-{})",
                    ofp::port::port_no::MAX
                ),
            ));
        }
        if !used.insert(no) {
            return Err(err(
                format!("{key}.ofport"),
                format!("{no} is used by another port"),
            ));
        }
        ports.push((no, name.clone()));
        // Queues come from the file's [[port]] entries (command-line ports have none).
        if let Some(ps) = file.ports.get(i) {
            let mut ids = HashSet::new();
            for (j, q) in ps.queues.iter().enumerate() {
                if q.id == ofp::port::QUEUE_ALL || !ids.insert(q.id) {
                    return Err(err(
                        format!("{key}.queues[{j}].id"),
                        format!("{} is reserved or used twice", q.id),
                    ));
                }
                if q.max_rate != 0 && q.min_rate > q.max_rate {
                    return Err(err(
                        format!("{key}.queues[{j}].min_rate"),
                        "min_rate is above max_rate",
                    ));
                }
                queues.push((no, *q));
            }
        }
    }
    if ports.is_empty() {
        return Err(err(
            "port",
            "no ports: give at least one [[port]] or --port",
        ));
    }
    let datapath_id = match &file.bridge.datapath_id {
        None => 1,
        Some(s) => {
            let r = match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16),
                None => s.parse(),
            };
            r.map_err(|_| {
                err(
                    "bridge.datapath_id",
                    format!("{s:?} is not a 64-bit number"),
                )
            })?
        }
    };
    if file.bridge.fail_mode == FailMode::Secure {
        return Err(err(
            "bridge.fail_mode",
            "\"secure\" keeps flows for a controller, and the controller agent is not built yet; use \"standalone\"",
        ));
    }
    let mut flows = Vec::new();
    for (i, f) in file.bridge.flows.iter().enumerate() {
        let fm = ofp::text::parse_flow_mod(f)
            .map_err(|e| err(format!("bridge.flows[{i}]"), e.to_string()))?;
        flows.push(fm);
    }
    let mut groups = Vec::new();
    for (i, g) in file.bridge.groups.iter().enumerate() {
        groups.push(
            ofp::text::parse_group_mod(g)
                .map_err(|e| err(format!("bridge.groups[{i}]"), e.to_string()))?,
        );
    }
    let mut meters = Vec::new();
    for (i, m) in file.bridge.meters.iter().enumerate() {
        meters.push(
            ofp::text::parse_meter_mod(m)
                .map_err(|e| err(format!("bridge.meters[{i}]"), e.to_string()))?,
        );
    }
    if file.bridge.local_port
        && (file.bridge.name.is_empty()
            || file.bridge.name.len() > 15
            || file.bridge.name.contains('/'))
    {
        return Err(err(
            "bridge.name",
            "the LOCAL port is a TAP device named after the bridge: 1-15 characters, no '/'",
        ));
    }
    Ok(Config {
        local_port: file.bridge.local_port,
        name: file.bridge.name,
        datapath_id,
        fail_mode: file.bridge.fail_mode,
        flows,
        groups,
        meters,
        ports,
        queues,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_and_bad_configs() {
        let f = parse_file("[bridge]\ndatapath_id = \"0x2a\"\n[[port]]\nname = \"a\"\n[[port]]\nname = \"b\"\nofport = 7\n").unwrap();
        let c = check(f, &["c".into()]).unwrap();
        assert_eq!(c.datapath_id, 42);
        assert_eq!(
            c.ports,
            vec![(1, "a".into()), (7, "b".into()), (2, "c".into())]
        );

        let e = parse_file("[bridge]\nnmae = \"x\"\n").unwrap_err();
        assert!(e.problem.contains("unknown field"), "{e}");
        let e = check(File::default(), &["a=0".into()]).unwrap_err();
        assert_eq!(e.key, "port[0].ofport");
        let e = check(File::default(), &["a".into(), "a".into()]).unwrap_err();
        assert_eq!(e.key, "port[1].name");
        let e = check(File::default(), &[]).unwrap_err();
        assert_eq!(e.key, "port");
        let f =
            parse_file("[bridge]\nflows = [\"tp_dst=80,actions=drop\"]\n[[port]]\nname = \"a\"\n")
                .unwrap();
        let e = check(f, &[]).unwrap_err();
        assert_eq!(e.key, "bridge.flows[0]");
        let f = parse_file("[bridge]\ndatapath_id = \"zz\"\n[[port]]\nname = \"a\"\n").unwrap();
        assert_eq!(check(f, &[]).unwrap_err().key, "bridge.datapath_id");
    }
}
