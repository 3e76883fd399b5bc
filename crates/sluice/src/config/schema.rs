//! The configuration file's format: the TOML tables and keys as serde reads
//! them, and [`parse_file`], which turns text into a [`File`] or an error
//! naming the line and column.
//!
//! Contract: this is the file's shape and its defaults, nothing more. A
//! value that parses here may still be wrong (a port number in use, a CPU
//! the machine lacks): `check` judges it. Unknown keys are refused. Every
//! field of a `*Section` is a key documented in docs/CONFIG.md (a test
//! compares this file's structs with that page).

use serde::Deserialize;

use super::{err, ConfigError};

/// What to do with no controller: be a learning switch, or keep the flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FailMode {
    Standalone,
    Secure,
}

/// `[bridge]`, or one entry of `[[bridges]]`.
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
    /// Flows packets may teach (`learn`) per second, per table (default
    /// 10 000; 0: no limit).
    #[serde(default)]
    pub learn_rate: Option<u64>,
    /// Learned flows that may come at once beyond `learn_rate`, per table
    /// (default 10 000).
    #[serde(default)]
    pub learn_burst: Option<u64>,
    /// Learned flows one table holds at most (default 1 000 000).
    #[serde(default)]
    pub learned_max: Option<usize>,
    /// Table names by table number (`{ 0 = "Classifier", 10 = "Output" }`),
    /// as TABLE_FEATURES reports them (Open vSwitch's `Flow_Table` names).
    #[serde(default)]
    pub tables: std::collections::BTreeMap<String, String>,
    /// The OpenFlow versions the bridge speaks (`OpenFlow10` ...
    /// `OpenFlow15`, as Open vSwitch's `protocols` column); all if not
    /// given.
    #[serde(default)]
    pub protocols: Option<Vec<String>>,
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
            learn_rate: None,
            learn_burst: None,
            learned_max: None,
            tables: Default::default(),
            protocols: None,
        }
    }
}

/// `[[port]]`, or one entry of a bridge's `ports`.
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
    /// an interface); "internal": a TAP device of the port's name, created
    /// by the switch; "patch": joined to another patch port of the daemon
    /// (`options.peer`); default (or "system"): an interface.
    #[serde(default)]
    pub r#type: Option<String>,
    /// A tunnel port's options, as Open vSwitch names them: `remote_ip`
    /// ("flow" or an address; required), `key` ("flow" or a VNI; default
    /// 0), `in_key`, `out_key`, `local_ip`, `dst_port`, `ttl`, `tos`,
    /// `csum`, `df_default`, `egress_pkt_mark` (datapath::open's
    /// `tunnel_options`); a patch port's `peer`.
    #[serde(default)]
    pub options: std::collections::BTreeMap<String, toml::Value>,
    /// The VLAN of an access port, the native VLAN of a native-tagged or
    /// native-untagged one (0-4095), as Open vSwitch's Port `tag`.
    #[serde(default)]
    pub tag: Option<i64>,
    /// The VLANs a trunk (or native) port carries; empty: all.
    #[serde(default)]
    pub trunks: Vec<i64>,
    /// "access", "trunk", "native-tagged" or "native-untagged"; default:
    /// access with a `tag`, trunk without.
    #[serde(default)]
    pub vlan_mode: Option<String>,
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

/// The whole file: one bridge (`[bridge]` and `[[port]]`) or several
/// (`[[bridges]]`), and the daemon's TLS identity.
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
    /// Every bridge's connection tracker (each bridge has its own).
    #[serde(default)]
    pub conntrack: ConntrackSection,
}

/// `[conntrack]`: the limits and timeouts of each bridge's connection
/// tracker (what `sluice-ctl ct-set-maxconns`, `ct-set-limits` and
/// `ct-set-timeouts` change at run time). Numbers are read as TOML
/// integers and checked in `config::conntrack`, which names the key.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ConntrackSection {
    /// Connections in all zones together (default 1 048 576; 0: no limit).
    #[serde(default)]
    pub limit: Option<i64>,
    /// Connections per zone, for zones without a limit of their own
    /// (default 0: none).
    #[serde(default)]
    pub default_zone_limit: Option<i64>,
    /// Limits of zones by number (`{ 1 = 100, 7 = 0 }`; 0: none).
    #[serde(default)]
    pub zone_limits: std::collections::BTreeMap<String, i64>,
    /// Idle timeouts in seconds by name (`{ udp = 60 }`; the names of
    /// `conntrack::TIMEOUT_NAMES`).
    #[serde(default)]
    pub timeouts: std::collections::BTreeMap<String, i64>,
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
