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
//! Several bridges in one daemon: a `[[bridges]]` array instead, each entry
//! with the `[bridge]` keys plus `ports = [{ name = "...", ofport = 1 }]` and
//! an optional `cpu` for its worker. Bridges share nothing: each has its
//! own ports, pipeline, worker and datapath id.
//!
//! Every problem is reported with the key it concerns and nothing starts
//! half-way: the whole configuration is checked before any port opens.
//!
//! This module holds the checked result ([`Config`], one per bridge), the
//! error ([`ConfigError`]: a key and a problem) and the checks that span
//! bridges ([`check_all`], [`load_tls`]). The file's format is in
//! [`schema`], the checks of one bridge in [`check`].

mod check;
mod ct;
mod schema;
#[cfg(test)]
mod tests;

pub use ct::CtSettings;
pub use datapath::Backend;
pub use schema::{
    parse_file, BridgeSection, FailMode, File, PortSection, QueueSection, TlsSection,
};

/// A pcap port of a bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapPortConfig {
    pub port_no: u32,
    pub input: Option<std::path::PathBuf>,
    pub output: Option<std::path::PathBuf>,
    /// Frames per second to receive `input` at (None: unpaced).
    pub rate: Option<u64>,
}

/// The limits on learned flows (`learn`) of one bridge, per table
/// (`learn_rate`, `learn_burst`, `learned_max`; see
/// `pipeline::control::learn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LearnLimits {
    /// Flows per second (0: no limit).
    pub rate: u64,
    pub burst: u64,
    pub max: usize,
}

impl LearnLimits {
    /// Sets them in a pipeline's configuration.
    pub fn apply(&self, c: &mut pipeline::Config) {
        (c.learn_rate, c.learn_burst, c.learned_max) = (self.rate, self.burst, self.max);
    }
}

/// A checked configuration of one bridge.
#[derive(Debug, Clone)]
pub struct Config {
    /// One entry per worker: the CPU it is pinned to, if any.
    pub workers: Vec<Option<usize>>,
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
    /// VLAN settings per OpenFlow port number (ports with some).
    pub vlans: Vec<(u32, datapath::VlanConfig)>,
    /// OpenFlow endpoints: controllers to connect to and sockets to listen on.
    pub endpoints: Vec<crate::openflow::Endpoint>,
    pub packet_in_rate: Option<u32>,
    /// Rules in all tables together (see [`schema::BridgeSection::max_flows`]).
    pub max_flows: usize,
    /// Connections per listener (see [`schema::BridgeSection::max_connections`]).
    pub max_connections: usize,
    /// What packets may teach (`learn`), per table.
    pub learn: LearnLimits,
    /// Each port's back end, by OpenFlow port number.
    pub backends: Vec<(u32, Backend)>,
    /// The back end of ports that name none (`add-port` too).
    pub default_backend: Backend,
    /// pcap ports.
    pub pcap: Vec<PcapPortConfig>,
    /// Patch ports' peers (the other port's name), by OpenFlow port number.
    pub peers: Vec<(u32, String)>,
    /// Port numbers the configuration gives (`ofport`); the others are
    /// the daemon's to choose (see `datapath::numbers`).
    pub pinned: Vec<u32>,
    /// The OpenFlow versions the bridge speaks (see
    /// [`schema::BridgeSection::protocols`]).
    pub protocols: ofp::Versions,
    /// Table names, by table number (see [`schema::BridgeSection::tables`]).
    pub tables: std::collections::BTreeMap<u8, String>,
    /// The connection tracker's limits and timeouts (`[conntrack]`, the
    /// same for every bridge; each bridge has its own tracker).
    pub conntrack: CtSettings,
}

impl Config {
    /// Whether a port uses the XDP fast path (backend "xdp"), now or when
    /// added without a back end of its own.
    pub fn uses_xdp(&self) -> bool {
        matches!(self.default_backend, Backend::Xdp { .. })
            || self
                .backends
                .iter()
                .any(|(_, b)| matches!(b, Backend::Xdp { .. }))
    }

    /// Each port as the datapath opens it, in order (not LOCAL).
    pub fn port_specs(&self) -> Vec<datapath::PortSpec> {
        self.ports
            .iter()
            .map(|(no, name)| {
                let backend = self
                    .backends
                    .iter()
                    .find(|(n, _)| n == no)
                    .map_or(Backend::AfPacket { rings: true }, |(_, b)| *b);
                datapath::PortSpec {
                    port_no: *no,
                    name: name.clone(),
                    backend,
                    pcap: self
                        .pcap
                        .iter()
                        .find(|p| p.port_no == *no)
                        .map(|p| datapath::PcapSpec {
                            input: p.input.clone(),
                            output: p.output.clone(),
                            rate: p.rate,
                        }),
                    queues: self
                        .queues
                        .iter()
                        .filter(|(n, _)| n == no)
                        .map(|(_, q)| datapath::QueueSpec {
                            id: q.id,
                            min_rate: q.min_rate,
                            max_rate: q.max_rate,
                        })
                        .collect(),
                    vlan: self
                        .vlans
                        .iter()
                        .find(|(n, _)| n == no)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default(),
                    peer: self
                        .peers
                        .iter()
                        .find(|(n, _)| n == no)
                        .map(|(_, p)| p.clone()),
                }
            })
            .collect()
    }
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

/// Loads `[tls]`; problems are named `tls.private_key`, `tls.certificate`
/// or `tls.ca_cert`.
pub fn load_tls(section: &Option<TlsSection>) -> Result<Option<tls::Tls>, ConfigError> {
    let Some(t) = section else {
        return Ok(None);
    };
    tls::Tls::load(&tls::Files {
        private_key: t.private_key.clone(),
        certificate: t.certificate.clone(),
        ca_cert: t.ca_cert.clone(),
    })
    .map(Some)
    .map_err(|e| err(format!("tls.{}", e.what), e.problem))
}

/// Checks what a file gives every bridge alike (`[conntrack]`): with
/// `--ovsdb`, all a file may give besides `[tls]`.
pub fn check_shared(file: &File) -> Result<(), ConfigError> {
    ct::check(&file.conntrack).map(|_| ())
}

/// Checks a file's contents plus ports given on the command line (`NAME`
/// or `NAME=OFPORT`, for the single-bridge form): one [`Config`] per bridge.
pub fn check_all(mut file: File, cli_ports: &[String]) -> Result<Vec<Config>, ConfigError> {
    let has_tls = file.tls.is_some();
    let ct = ct::check(&file.conntrack)?;
    let with_ct = |mut c: Config| {
        c.conntrack = ct.clone();
        c
    };
    if file.bridges.is_empty() {
        let mut b = std::mem::take(&mut file.bridge);
        b.ports.append(&mut file.ports);
        return Ok(vec![with_ct(check::bridge(b, cli_ports, has_tls)?)]);
    }
    if !file.ports.is_empty() || !cli_ports.is_empty() {
        return Err(err(
            "bridges",
            "with [[bridges]], give each bridge its `ports`; not [[port]] or --port",
        ));
    }
    let mut out: Vec<Config> = Vec::new();
    for (i, b) in file.bridges.into_iter().enumerate() {
        let c = with_ct(check::bridge(b, &[], has_tls).map_err(|e| in_bridges(i, e))?);
        distinct(&out, &c, i)?;
        out.push(c);
    }
    Ok(out)
}

/// Names a problem of `[[bridges]]` entry `i` as that entry's key
/// (`bridge.flows[0]` becomes `bridges[i].flows[0]`, `port[1]` becomes
/// `bridges[i].ports[1]`).
fn in_bridges(i: usize, mut e: ConfigError) -> ConfigError {
    let k = e.key.strip_prefix("bridge.").unwrap_or(&e.key).to_string();
    let k = k
        .strip_prefix("port")
        .map(|r| format!("ports{r}"))
        .unwrap_or(k);
    e.key = format!("bridges[{i}].{k}");
    e
}

/// Checks that bridge `i`, `c`, shares no name, datapath id or port with
/// the bridges before it, `out`.
fn distinct(out: &[Config], c: &Config, i: usize) -> Result<(), ConfigError> {
    if out.iter().any(|o| o.name == c.name) {
        return Err(err(
            format!("bridges[{i}].name"),
            format!("{} names another bridge too", c.name),
        ));
    }
    if out.iter().any(|o| o.datapath_id == c.datapath_id) {
        return Err(err(
            format!("bridges[{i}].datapath_id"),
            "every bridge needs its own datapath id",
        ));
    }
    for (_, n) in &c.ports {
        if out.iter().any(|o| o.ports.iter().any(|(_, m)| m == n)) {
            return Err(err(
                format!("bridges[{i}].ports"),
                format!("{n} is a port of another bridge"),
            ));
        }
    }
    Ok(())
}
