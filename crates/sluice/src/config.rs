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
    /// This bridge's ports (also accepted as top-level `[[port]]` entries).
    #[serde(default)]
    pub ports: Vec<PortSection>,
    /// The CPU to pin this bridge's worker to (one worker).
    #[serde(default)]
    pub cpu: Option<usize>,
    /// CPUs to run this bridge's workers on, one pinned worker each.
    #[serde(default)]
    pub cpus: Vec<usize>,
    /// Workers (threads) for this bridge when `cpus` is not given (unpinned).
    #[serde(default)]
    pub workers: Option<usize>,
    /// The default back end of this bridge's ports.
    #[serde(default)]
    pub backend: Option<String>,
    /// Controllers to connect to (`tcp:HOST:PORT`).
    #[serde(default)]
    pub controllers: Vec<String>,
    /// Endpoints to accept OpenFlow connections on (`ptcp:PORT[:IP]`,
    /// `punix:PATH`), besides the management socket.
    #[serde(default)]
    pub listen: Vec<String>,
    /// PACKET_INs per second per controller connection (0: no limit).
    #[serde(default)]
    pub packet_in_rate: Option<u32>,
    /// Rules in all flow tables together (default 2 000 000); a flow-mod
    /// past it gets OFPFMFC_TABLE_FULL.
    #[serde(default)]
    pub max_flows: Option<usize>,
    /// Connections each listening endpoint (and the management socket)
    /// holds at most (default 256); more are closed as they come.
    #[serde(default)]
    pub max_connections: Option<usize>,
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
            ports: Vec::new(),
            cpu: None,
            cpus: Vec::new(),
            workers: None,
            backend: None,
            controllers: Vec::new(),
            listen: Vec::new(),
            packet_in_rate: None,
            max_flows: None,
            max_connections: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSection {
    pub name: String,
    #[serde(default)]
    pub ofport: Option<u32>,
    /// "afpacket" (TPACKET_V2 rings), "afpacket-mmsg" (recvmmsg/sendmmsg),
    /// "afxdp", "afxdp-generic" (generic XDP only), "xdp" (AF_XDP with the XDP fast path), "xdp-generic" (the fast path at the generic XDP hook) or "pcap"; default: the bridge's `backend`, else "afpacket".
    #[serde(default)]
    pub backend: Option<String>,
    /// Egress queues for `set_queue`.
    #[serde(default)]
    pub queues: Vec<QueueSection>,
    /// backend "pcap": the capture to receive from.
    #[serde(default)]
    pub pcap_in: Option<std::path::PathBuf>,
    /// backend "pcap": the capture to write sent frames to.
    #[serde(default)]
    pub pcap_out: Option<std::path::PathBuf>,
    /// backend "pcap": receive `pcap_in` at this many frames per second
    /// (default: as fast as the worker takes them). For offering a known
    /// load in benchmarks.
    #[serde(default)]
    pub pcap_rate: Option<u64>,
    /// "vxlan" or "geneve": a tunnel port (its name is the port's own, not
    /// an interface); default: an interface.
    #[serde(default)]
    pub r#type: Option<String>,
    /// A tunnel port's options, as Open vSwitch names them: `remote_ip`
    /// ("flow" or an address; required), `key` ("flow" or a VNI; default
    /// 0), `local_ip`, `dst_port`, `ttl`, `tos`.
    #[serde(default)]
    pub options: std::collections::BTreeMap<String, toml::Value>,
}

/// A pcap port of a bridge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PcapPortConfig {
    pub port_no: u32,
    pub input: Option<std::path::PathBuf>,
    pub output: Option<std::path::PathBuf>,
    /// Frames per second to receive `input` at (None: unpaced).
    pub rate: Option<u64>,
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

use datapath::PortRequest;
pub use datapath::{Backend, BACKENDS};

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    #[serde(default)]
    pub bridge: BridgeSection,
    #[serde(default, rename = "port")]
    pub ports: Vec<PortSection>,
    #[serde(default)]
    pub bridges: Vec<BridgeSection>,
    /// The daemon's TLS identity, for `tls:`/`ptls:` endpoints.
    #[serde(default)]
    pub tls: Option<TlsSection>,
}

/// `[tls]`: the daemon's TLS identity (Open vSwitch's `--private-key`,
/// `--certificate`, `--ca-cert`), PEM files. Every TLS endpoint of every
/// bridge uses it; peers must present a certificate signed by `ca_cert`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    pub private_key: std::path::PathBuf,
    pub certificate: std::path::PathBuf,
    pub ca_cert: std::path::PathBuf,
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
    /// OpenFlow endpoints: controllers to connect to and sockets to listen on.
    pub endpoints: Vec<crate::control::Endpoint>,
    pub packet_in_rate: Option<u32>,
    /// Rules in all tables together (see [`BridgeSection::max_flows`]).
    pub max_flows: usize,
    /// Connections per listener (see [`BridgeSection::max_connections`]).
    pub max_connections: usize,
    /// Each port's back end, by OpenFlow port number.
    pub backends: Vec<(u32, Backend)>,
    /// The back end of ports that name none (`add-port` too).
    pub default_backend: Backend,
    /// pcap ports.
    pub pcap: Vec<PcapPortConfig>,
    /// Port numbers the configuration gives (`ofport`); the others are
    /// the daemon's to choose (see `datapath::numbers`).
    pub pinned: Vec<u32>,
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

/// Parses TOML text.
pub fn parse_file(text: &str) -> Result<File, ConfigError> {
    toml::from_str(text).map_err(|e| {
        let msg = e.message().to_string();
        // Where, as an editor counts: line and column, from 1.
        let key = e.span().map(|sp| {
            let before = &text[..sp.start];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {col}")
        });
        err(key.unwrap_or_else(|| "file".into()), msg)
    })
}

/// Checks a file's contents plus ports given on the command line (`NAME`
/// or `NAME=OFPORT`, for the single-bridge form): one [`Config`] per bridge.
pub fn check_all(mut file: File, cli_ports: &[String]) -> Result<Vec<Config>, ConfigError> {
    let has_tls = file.tls.is_some();
    if file.bridges.is_empty() {
        let mut b = std::mem::take(&mut file.bridge);
        b.ports.append(&mut file.ports);
        return Ok(vec![check(b, cli_ports, has_tls)?]);
    }
    if !file.ports.is_empty() || !cli_ports.is_empty() {
        return Err(err(
            "bridges",
            "with [[bridges]], give each bridge its `ports`; not [[port]] or --port",
        ));
    }
    let mut out: Vec<Config> = Vec::new();
    for (i, b) in file.bridges.into_iter().enumerate() {
        let c = check(b, &[], has_tls).map_err(|mut e| {
            let k = e.key.strip_prefix("bridge.").unwrap_or(&e.key).to_string();
            let k = k
                .strip_prefix("port")
                .map(|r| format!("ports{r}"))
                .unwrap_or(k);
            e.key = format!("bridges[{i}].{k}");
            e
        })?;
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
        out.push(c);
    }
    Ok(out)
}

/// A `[[port]]` entry as the datapath's one port check takes it (`key`
/// names the entry in errors).
fn request_of(ps: &PortSection, key: &str) -> Result<PortRequest, ConfigError> {
    let mut options = Vec::new();
    for (k, v) in &ps.options {
        let v = match v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(n) => n.to_string(),
            _ => return Err(err(format!("{key}.options.{k}"), "a string or an integer")),
        };
        options.push((k.clone(), v));
    }
    Ok(PortRequest {
        name: ps.name.clone(),
        ofport: ps.ofport,
        backend: ps.backend.clone(),
        pcap_in: ps.pcap_in.clone(),
        pcap_out: ps.pcap_out.clone(),
        pcap_rate: ps.pcap_rate,
        queues: ps
            .queues
            .iter()
            .map(|q| datapath::QueueSpec {
                id: q.id,
                min_rate: q.min_rate,
                max_rate: q.max_rate,
            })
            .collect(),
        tunnel: ps.r#type.clone(),
        options,
    })
}

/// Checks one bridge: its section, its ports and command-line ports.
/// Checks one bridge; `has_tls`: whether the daemon has a TLS identity.
pub fn check(
    file: BridgeSection,
    cli_ports: &[String],
    has_tls: bool,
) -> Result<Config, ConfigError> {
    let mut ports = Vec::new();
    let mut used = HashSet::new();
    let mut names = HashSet::new();
    let default_backend = file.backend.clone().unwrap_or_else(|| "afpacket".into());
    if Backend::parse(&default_backend).is_none() {
        return Err(err(
            "bridge.backend",
            format!("{default_backend:?} is not a back end ({BACKENDS})"),
        ));
    }
    let default = Backend::parse(&default_backend).unwrap_or(Backend::AfPacket { rings: true });
    let mut requests = Vec::new();
    for (i, ps) in file.ports.iter().enumerate() {
        requests.push(request_of(ps, &format!("port[{i}]"))?);
    }
    for s in cli_ports {
        let (name, no) = match s.split_once('=') {
            Some((n, v)) => (
                n,
                Some(
                    v.parse::<u32>()
                        .map_err(|_| err(format!("--port {s}"), "OFPORT must be a number"))?,
                ),
            ),
            None => (s.as_str(), None),
        };
        requests.push(PortRequest {
            ofport: no,
            ..PortRequest::named(name)
        });
    }
    let mut backends = Vec::new();
    let mut queues = Vec::new();
    let mut pcap = Vec::new();
    let mut pinned = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let key = format!("port[{i}]");
        if i >= file.ports.len() && default == Backend::Pcap {
            // A pcap port is made of capture files, which only a [[port]]
            // entry names.
            return Err(err(
                format!("--port {}", r.name),
                "a pcap port needs pcap_in or pcap_out, which only a [[port]] entry of the config file can give (--backend pcap does not apply to --port)",
            ));
        }
        let spec = r
            .check(0, default)
            .map_err(|e| err(format!("{key}.{}", e.field), e.problem))?;
        if !names.insert(r.name.clone()) {
            return Err(err(
                format!("{key}.name"),
                format!("{} is listed twice", r.name),
            ));
        }
        if let Some(n) = r.ofport {
            pinned.push(n);
        }
        let no = match r.ofport {
            Some(n) => n,
            None => (1..)
                .find(|n| !used.contains(n) && !requests.iter().any(|o| o.ofport == Some(*n)))
                .unwrap_or(1),
        };
        if !used.insert(no) {
            return Err(err(
                format!("{key}.ofport"),
                format!("{no} is used by another port"),
            ));
        }
        ports.push((no, r.name.clone()));
        backends.push((no, spec.backend));
        if let Some(p) = spec.pcap {
            pcap.push(PcapPortConfig {
                port_no: no,
                input: p.input,
                output: p.output,
                rate: p.rate,
            });
        }
        for q in spec.queues {
            queues.push((
                no,
                QueueSection {
                    id: q.id,
                    max_rate: q.max_rate,
                    min_rate: q.min_rate,
                },
            ));
        }
    }
    if ports.is_empty() {
        return Err(err(
            "port",
            "no ports: give at least one [[port]] or --port",
        ));
    }
    let datapath_id = match &file.datapath_id {
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
    let mut endpoints = Vec::new();
    let lists = [("controllers", &file.controllers), ("listen", &file.listen)];
    for (list, items) in lists {
        for (i, c) in items.iter().enumerate() {
            let key = format!("bridge.{list}[{i}]");
            let e = crate::control::Endpoint::parse(c).map_err(|p| err(&key, p))?;
            match (list, e.is_active()) {
                ("controllers", false) => {
                    return Err(err(
                        key,
                        format!("{c:?}: a controller is tcp:HOST:PORT or tls:HOST:PORT; passive endpoints go in `listen`"),
                    ))
                }
                ("listen", true) => {
                    return Err(err(
                        key,
                        format!("{c:?}: `listen` takes ptcp:PORT[:IP], ptls:PORT[:IP] or punix:PATH"),
                    ))
                }
                _ => {}
            }
            if e.is_tls() && !has_tls {
                return Err(err(
                    key,
                    format!("{c:?}: TLS needs the daemon's identity: [tls] private_key, certificate and ca_cert (or --private-key, --certificate, --ca-cert)"),
                ));
            }
            endpoints.push(e);
        }
    }
    let mut flows = Vec::new();
    for (i, f) in file.flows.iter().enumerate() {
        let fm = ofp::text::parse_flow_mod(f)
            .map_err(|e| err(format!("bridge.flows[{i}]"), e.to_string()))?;
        flows.push(fm);
    }
    let mut groups = Vec::new();
    for (i, g) in file.groups.iter().enumerate() {
        groups.push(
            ofp::text::parse_group_mod(g)
                .map_err(|e| err(format!("bridge.groups[{i}]"), e.to_string()))?,
        );
    }
    let mut meters = Vec::new();
    for (i, m) in file.meters.iter().enumerate() {
        meters.push(
            ofp::text::parse_meter_mod(m)
                .map_err(|e| err(format!("bridge.meters[{i}]"), e.to_string()))?,
        );
    }
    if file.local_port && (file.name.is_empty() || file.name.len() > 15 || file.name.contains('/'))
    {
        return Err(err(
            "bridge.name",
            "the LOCAL port is a TAP device named after the bridge: 1-15 characters, no '/'",
        ));
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cpus = file.cpus.clone();
    if let Some(c) = file.cpu {
        if !cpus.is_empty() {
            return Err(err("bridge.cpu", "give `cpu` or `cpus`, not both"));
        }
        cpus.push(c);
    }
    if let Some(&c) = cpus.iter().find(|&&c| c >= ncpu) {
        return Err(err(
            "bridge.cpus",
            format!(
                "CPU {c} does not exist (this machine has CPUs 0-{})",
                ncpu - 1
            ),
        ));
    }
    let workers: Vec<Option<usize>> = match (file.workers, cpus.is_empty()) {
        (Some(0), _) => return Err(err("bridge.workers", "at least one worker")),
        (Some(n), false) if n != cpus.len() => {
            return Err(err(
                "bridge.workers",
                format!(
                    "{n} workers but {} CPUs in `cpus`: one worker per CPU",
                    cpus.len()
                ),
            ))
        }
        (_, false) => cpus.into_iter().map(Some).collect(),
        (n, true) => vec![None; n.unwrap_or(1)],
    };
    if workers.len() > 1 {
        if let Some((no, _)) = backends.iter().find(|(_, b)| *b == Backend::Pcap) {
            return Err(err(
                "bridge.workers",
                format!("port {no} is a pcap port, which one worker alone can serve"),
            ));
        }
    }
    let max_flows = match file.max_flows {
        Some(0) => return Err(err("bridge.max_flows", "must be at least 1")),
        Some(n) => n,
        None => pipeline::Config::default().max_flows,
    };
    let max_connections = match file.max_connections {
        Some(0) => return Err(err("bridge.max_connections", "must be at least 1")),
        Some(n) => n,
        None => crate::control::DEFAULT_MAX_CONNECTIONS,
    };
    Ok(Config {
        endpoints,
        packet_in_rate: file.packet_in_rate,
        max_flows,
        max_connections,
        workers,
        backends,
        local_port: file.local_port,
        name: file.name,
        datapath_id,
        fail_mode: file.fail_mode,
        flows,
        groups,
        meters,
        ports,
        queues,
        pcap,
        pinned,
        default_backend: Backend::parse(&default_backend)
            .unwrap_or(Backend::AfPacket { rings: true }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunnel_ports_are_read_and_checked() {
        let c = check_all(
            parse_file(
                "[[port]]\nname = \"vx0\"\ntype = \"vxlan\"\nofport = 100\noptions = { remote_ip = \"flow\", key = \"flow\", local_ip = \"192.0.2.1\" }\n[[port]]\nname = \"gnv0\"\ntype = \"geneve\"\noptions = { remote_ip = \"192.0.2.7\", key = 21, dst_port = 7081 }\n",
            )
            .unwrap(),
            &[],
        )
        .unwrap();
        let specs = c[0].port_specs();
        let Backend::Tunnel(vx) = specs[0].backend else {
            panic!("{:?}", specs[0])
        };
        assert_eq!(specs[0].port_no, 100);
        assert_eq!((vx.remote, vx.key, vx.dst_port), (None, None, 4789));
        assert_eq!(vx.local, Some("192.0.2.1".parse().unwrap()));
        let Backend::Tunnel(g) = specs[1].backend else {
            panic!("{:?}", specs[1])
        };
        assert_eq!(g.proto, datapath::TunnelProto::Geneve);
        assert_eq!((g.key, g.dst_port), (Some(21), 7081));
        for (text, key) in [
            (
                "type = \"gre\"\noptions = { remote_ip = \"flow\" }",
                "port[0].type",
            ),
            ("options = { remote_ip = \"flow\" }", "port[0].options"),
            ("type = \"vxlan\"", "port[0].options.remote_ip"),
            (
                "type = \"vxlan\"\noptions = { remote_ip = \"flow\", key = -1 }",
                "port[0].options.key",
            ),
            (
                "type = \"vxlan\"\noptions = { remote_ip = true }",
                "port[0].options.remote_ip",
            ),
            (
                "type = \"vxlan\"\nbackend = \"afxdp\"\noptions = { remote_ip = \"flow\" }",
                "port[0].backend",
            ),
            (
                "type = \"vxlan\"\nqueues = [{ id = 1 }]\noptions = { remote_ip = \"flow\" }",
                "port[0].queues",
            ),
        ] {
            let f = parse_file(&format!("[[port]]\nname = \"vx0\"\n{text}\n")).unwrap();
            let e = check_all(f, &[]).unwrap_err();
            assert_eq!(e.key, key, "{text}: {e}");
        }
    }

    #[test]
    fn a_command_line_port_cannot_be_a_pcap_port() {
        let mut f = parse_file("").unwrap();
        f.bridge.backend = Some("pcap".into());
        let e = check_all(f, &["veth0".into()]).unwrap_err().to_string();
        assert!(e.contains("--port veth0"), "{e}");
        assert!(e.contains("pcap_in"), "{e}");
        // The same in a [bridge] backend with command-line ports.
        let f = parse_file("[bridge]\nbackend = \"pcap\"\n").unwrap();
        assert!(check_all(f, &["a".into()]).is_err());
    }

    #[test]
    fn toml_errors_name_the_line_and_column() {
        let e = parse_file("[bridge]\nname = \"br0\"\nworkers = \"two\"\n").unwrap_err();
        assert_eq!(e.key, "line 3, column 11", "{e:?}");
        let e = parse_file("[bridge]\nnmae = 1\n").unwrap_err();
        assert!(e.key.starts_with("line 2, column 1"), "{e:?}");
        assert!(e.problem.contains("nmae"), "{e:?}");
    }

    #[test]
    fn every_configuration_sample_in_the_readme_is_accepted() {
        let readme = include_str!("../../../README.md");
        let blocks: Vec<&str> = readme
            .split("```toml\n")
            .skip(1)
            .map(|b| b.split("```").next().unwrap())
            .collect();
        assert!(blocks.len() >= 3, "the README's samples were found");
        for b in blocks {
            let f = parse_file(b).unwrap_or_else(|e| panic!("{e:?} in\n{b}"));
            // Samples without ports stand for a bridge given ports elsewhere.
            let cli: Vec<String> = if b.contains("[[port]]") {
                vec![]
            } else {
                vec!["eth0".into()]
            };
            check_all(f, &cli).unwrap_or_else(|e| panic!("{e:?} in\n{b}"));
        }
    }

    /// The keys docs/CONFIG.md lists under `heading`'s table.
    fn documented(doc: &str, heading: &str) -> Vec<String> {
        let section = doc
            .split(&format!("## `{heading}`\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("CONFIG.md has no section {heading}"));
        let section = section.split("\n## ").next().unwrap();
        let mut keys: Vec<String> = section
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split('`').next())
            .map(str::to_string)
            .collect();
        keys.sort();
        keys
    }

    /// The fields of `struct name` in this file's source.
    fn fields(src: &str, name: &str) -> Vec<String> {
        let body = src
            .split(&format!("pub struct {name} {{\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("no struct {name}"));
        let body = body.split("\n}").next().unwrap();
        let mut keys: Vec<String> = body
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub "))
            .filter_map(|l| l.split(':').next())
            .map(|k| k.trim_start_matches("r#").to_string())
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn every_key_is_documented() {
        let doc = include_str!("../../../docs/CONFIG.md");
        let src = include_str!("config.rs");
        for (heading, strukt) in [
            ("[bridge]", "BridgeSection"),
            ("[[port]]", "PortSection"),
            ("[[port]].queues", "QueueSection"),
            ("[tls]", "TlsSection"),
        ] {
            assert_eq!(
                documented(doc, heading),
                fields(src, strukt),
                "docs/CONFIG.md's {heading} and config.rs's {strukt} list different keys"
            );
        }
        // The file the service installs is a valid configuration.
        let sample = include_str!("../../../dist/sluice.toml");
        check_all(parse_file(sample).unwrap(), &[]).unwrap();
    }

    #[test]
    fn queue_rates_that_would_overflow_are_refused() {
        let f = "[[port]]\nname = \"a\"\n[[port.queues]]\nid = 1\nmax_rate = 9223372036854775807\n";
        let e = check_all(parse_file(f).unwrap(), &[]).unwrap_err();
        assert_eq!(e.key, "port[0].queues[0].max_rate", "{e:?}");
    }

    #[test]
    fn max_flows_is_passed_on_and_zero_is_refused() {
        let c = check_all(
            parse_file("[bridge]\nmax_flows = 10\n").unwrap(),
            &["a".into()],
        )
        .unwrap();
        assert_eq!(c[0].max_flows, 10);
        let c = check_all(parse_file("").unwrap(), &["a".into()]).unwrap();
        assert_eq!(c[0].max_flows, pipeline::Config::default().max_flows);
        let e = check_all(
            parse_file("[bridge]\nmax_flows = 0\n").unwrap(),
            &["a".into()],
        )
        .unwrap_err();
        assert_eq!(e.key, "bridge.max_flows");
    }

    #[test]
    fn good_and_bad_configs() {
        let f = parse_file("[bridge]\ndatapath_id = \"0x2a\"\n[[port]]\nname = \"a\"\n[[port]]\nname = \"b\"\nofport = 7\n").unwrap();
        let c = check_all(f, &["c".into()]).unwrap().remove(0);
        assert_eq!(c.datapath_id, 42);
        assert_eq!(
            c.ports,
            vec![(1, "a".into()), (7, "b".into()), (2, "c".into())]
        );

        let e = parse_file("[bridge]\nnmae = \"x\"\n").unwrap_err();
        assert!(e.problem.contains("unknown field"), "{e}");
        let e = check_all(File::default(), &["a=0".into()]).unwrap_err();
        assert_eq!(e.key, "port[0].ofport");
        let e = check_all(File::default(), &["a".into(), "a".into()]).unwrap_err();
        assert_eq!(e.key, "port[1].name");
        let e = check_all(File::default(), &[]).unwrap_err();
        assert_eq!(e.key, "port");
        let f =
            parse_file("[bridge]\nflows = [\"tp_dst=80,actions=drop\"]\n[[port]]\nname = \"a\"\n")
                .unwrap();
        let e = check_all(f, &[]).unwrap_err();
        assert_eq!(e.key, "bridge.flows[0]");
        let two = "[[bridges]]\nname = \"x\"\nports = [{ name = \"a\" }]\n[[bridges]]\nname = \"y\"\ndatapath_id = \"2\"\nports = [{ name = \"b\" }, { name = \"c\", ofport = 0 }]\n";
        let e = check_all(parse_file(two).unwrap(), &[]).unwrap_err();
        assert_eq!(e.key, "bridges[1].ports[1].ofport");
        let same_port = "[[bridges]]\nname = \"x\"\nports = [{ name = \"a\" }]\n[[bridges]]\nname = \"y\"\ndatapath_id = \"2\"\nports = [{ name = \"a\" }]\n";
        assert_eq!(
            check_all(parse_file(same_port).unwrap(), &[])
                .unwrap_err()
                .key,
            "bridges[1].ports"
        );
        let ok = "[[bridges]]\nname = \"x\"\nports = [{ name = \"a\" }]\n[[bridges]]\nname = \"y\"\ndatapath_id = \"2\"\nports = [{ name = \"b\" }]\n";
        assert_eq!(check_all(parse_file(ok).unwrap(), &[]).unwrap().len(), 2);
        let f = parse_file("[bridge]\ndatapath_id = \"zz\"\n[[port]]\nname = \"a\"\n").unwrap();
        assert_eq!(check_all(f, &[]).unwrap_err().key, "bridge.datapath_id");
    }

    #[test]
    fn back_ends_and_workers() {
        let check = |text: &str| check_all(parse_file(text).unwrap(), &["c".into()]);
        let c = check(
            "[bridge]
backend = \"afxdp\"\nworkers = 2\n[[port]]\nname = \"a\"\nbackend = \"afpacket-mmsg\"\n",
        )
        .unwrap()
        .remove(0);
        assert_eq!(
            c.backends,
            vec![
                (1, Backend::AfPacket { rings: false }),
                (2, Backend::AfXdp { generic: false })
            ],
            "a port's own back end, else the bridge's"
        );
        assert_eq!(c.workers, vec![None, None]);
        let c = check(
            "[bridge]
cpus = [0]
",
        )
        .unwrap()
        .remove(0);
        assert_eq!(c.workers, vec![Some(0)]);
        assert_eq!(c.backends, vec![(1, Backend::AfPacket { rings: true })]);
        for (text, key) in [
            (
                "[bridge]
backend = \"dpdk\"\n",
                "bridge.backend",
            ),
            (
                "[[port]]
name = \"a\"\nbackend = \"netmap\"\n",
                "port[0].backend",
            ),
            (
                "[bridge]
workers = 0
",
                "bridge.workers",
            ),
            (
                "[bridge]
cpus = [0]
workers = 2
",
                "bridge.workers",
            ),
            (
                "[bridge]
cpus = [4096]
",
                "bridge.cpus",
            ),
            (
                "[bridge]
cpu = 0
cpus = [0]
",
                "bridge.cpu",
            ),
            (
                "[bridge]
workers = 2
[[port]]
name = \"a\"\nbackend = \"pcap\"\npcap_in = \"x\"\n",
                "bridge.workers",
            ),
        ] {
            assert_eq!(check(text).unwrap_err().key, key, "{text}");
        }
    }
}
