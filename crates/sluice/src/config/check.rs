//! Checking one bridge: from its section of the file (plus `--port`s) to a
//! [`Config`], or the first problem found.
//!
//! Contract: [`bridge`] checks, in this order, the default back end, the
//! ports (each through the datapath's one port check, then their names and
//! numbers), the datapath id, the OpenFlow endpoints, the flows, groups and
//! meters, the table names, the bridge's name (for the LOCAL port), the CPUs and workers,
//! and the limits. It stops at the first problem and names its key as a
//! single-bridge file would (`bridge.KEY`, `port[N].KEY`); `check_all`
//! renames them for `[[bridges]]`. It opens nothing and touches no
//! interface.

use std::collections::HashSet;

use datapath::{PortRequest, BACKENDS};

use super::schema::{BridgeSection, PortSection, QueueSection};
use super::{err, Backend, Config, ConfigError, LearnLimits, PcapPortConfig};
use crate::openflow::Endpoint;

/// Checks one bridge: its section, its ports and command-line ports;
/// `has_tls`: whether the daemon has a TLS identity.
pub(super) fn bridge(
    file: BridgeSection,
    cli_ports: &[String],
    has_tls: bool,
) -> Result<Config, ConfigError> {
    let default_backend = default_backend(&file)?;
    let requests = port_requests(&file.ports, cli_ports)?;
    let ports = ports(&requests, file.ports.len(), default_backend)?;
    // A bridge of only its LOCAL port is one, as in Open vSwitch (a
    // database's `add-br`); with no port at all it would be nothing.
    if ports.ports.is_empty() && !file.local_port {
        return Err(err(
            "port",
            "no ports: give at least one [[port]] or --port, or keep the LOCAL port",
        ));
    }
    let datapath_id = datapath_id(&file.datapath_id)?;
    let endpoints = endpoints(&file, has_tls)?;
    let flows = parse_each(&file.flows, "flows", config_flow)?;
    let groups = parse_each(&file.groups, "groups", ofp::text::parse_group_mod)?;
    let meters = parse_each(&file.meters, "meters", ofp::text::parse_meter_mod)?;
    let tables = table_names(&file.tables)?;
    local_port_name(&file)?;
    let workers = workers(&file, &ports.backends)?;
    let max_flows = at_least_one(
        file.max_flows,
        "bridge.max_flows",
        pipeline::Config::default().max_flows,
    )?;
    let max_connections = at_least_one(
        file.max_connections,
        "bridge.max_connections",
        crate::openflow::DEFAULT_MAX_CONNECTIONS,
    )?;
    let learn = learn_limits(&file)?;
    let protocols = match &file.protocols {
        None => ofp::Versions::ALL,
        Some(list) => {
            ofp::Versions::parse_list(&list.join(",")).map_err(|e| err("bridge.protocols", e))?
        }
    };
    Ok(Config {
        protocols,
        endpoints,
        packet_in_rate: file.packet_in_rate,
        max_flows,
        max_connections,
        learn,
        workers,
        backends: ports.backends,
        local_port: file.local_port,
        name: file.name,
        datapath_id,
        fail_mode: file.fail_mode,
        flows,
        groups,
        meters,
        ports: ports.ports,
        queues: ports.queues,
        vlans: ports.vlans,
        pcap: ports.pcap,
        peers: ports.peers,
        pinned: ports.pinned,
        default_backend,
        tables,
        // `[conntrack]` is the file's, not a bridge's: `check_all` sets it.
        conntrack: Default::default(),
    })
}

/// `backend`: the back end of ports that name none (default "afpacket").
fn default_backend(file: &BridgeSection) -> Result<Backend, ConfigError> {
    let name = file.backend.as_deref().unwrap_or("afpacket");
    Backend::parse(name).ok_or_else(|| {
        err(
            "bridge.backend",
            format!("{name:?} is not a back end ({BACKENDS})"),
        )
    })
}

/// The bridge's ports as requests to the datapath: the `[[port]]` entries
/// first, then the command-line ports (`NAME` or `NAME=OFPORT`).
fn port_requests(
    sections: &[PortSection],
    cli_ports: &[String],
) -> Result<Vec<PortRequest>, ConfigError> {
    let mut requests = Vec::new();
    for (i, ps) in sections.iter().enumerate() {
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
    Ok(requests)
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
        port_type: ps.r#type.clone(),
        options,
        tag: ps.tag,
        trunks: ps.trunks.clone(),
        vlan_mode: ps.vlan_mode.clone(),
    })
}

/// A bridge's checked ports, by OpenFlow port number.
#[derive(Default)]
struct Ports {
    /// (OpenFlow port number, name), in the requests' order.
    ports: Vec<(u32, String)>,
    backends: Vec<(u32, Backend)>,
    queues: Vec<(u32, QueueSection)>,
    vlans: Vec<(u32, datapath::VlanConfig)>,
    pcap: Vec<PcapPortConfig>,
    peers: Vec<(u32, String)>,
    /// The numbers the requests give (`ofport`).
    pinned: Vec<u32>,
}

/// Checks every port request and numbers the ports: a request's own
/// `ofport`, else the lowest number neither taken nor asked for. The
/// requests past the first `from_file` came from the command line.
fn ports(
    requests: &[PortRequest],
    from_file: usize,
    default: Backend,
) -> Result<Ports, ConfigError> {
    let mut out = Ports::default();
    let mut used = HashSet::new();
    let mut names = HashSet::new();
    for (i, r) in requests.iter().enumerate() {
        let key = format!("port[{i}]");
        if i >= from_file && default == Backend::Pcap {
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
            out.pinned.push(n);
        }
        let no = r.ofport.unwrap_or_else(|| {
            (1..)
                .find(|n| !used.contains(n) && !requests.iter().any(|o| o.ofport == Some(*n)))
                .unwrap_or(1)
        });
        if !used.insert(no) {
            return Err(err(
                format!("{key}.ofport"),
                format!("{no} is used by another port"),
            ));
        }
        out.add(no, &r.name, spec);
    }
    Ok(out)
}

impl Ports {
    /// Records checked port `spec` as number `no`.
    fn add(&mut self, no: u32, name: &str, spec: datapath::PortSpec) {
        self.ports.push((no, name.to_string()));
        self.backends.push((no, spec.backend));
        if let Some(p) = spec.pcap {
            self.pcap.push(PcapPortConfig {
                port_no: no,
                input: p.input,
                output: p.output,
                rate: p.rate,
            });
        }
        if !spec.vlan.is_default() {
            self.vlans.push((no, spec.vlan));
        }
        if let Some(p) = spec.peer {
            self.peers.push((no, p));
        }
        for q in spec.queues {
            self.queues.push((
                no,
                QueueSection {
                    id: q.id,
                    max_rate: q.max_rate,
                    min_rate: q.min_rate,
                },
            ));
        }
    }
}

/// `datapath_id`: decimal, or hexadecimal after `0x` (default 1).
fn datapath_id(id: &Option<String>) -> Result<u64, ConfigError> {
    let Some(s) = id else {
        return Ok(1);
    };
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| {
        err(
            "bridge.datapath_id",
            format!("{s:?} is not a 64-bit number"),
        )
    })
}

/// `controllers` (active endpoints) then `listen` (passive ones).
fn endpoints(file: &BridgeSection, has_tls: bool) -> Result<Vec<Endpoint>, ConfigError> {
    let mut endpoints = Vec::new();
    let lists = [("controllers", &file.controllers), ("listen", &file.listen)];
    for (list, items) in lists {
        for (i, c) in items.iter().enumerate() {
            endpoints.push(endpoint(list, &format!("bridge.{list}[{i}]"), c, has_tls)?);
        }
    }
    Ok(endpoints)
}

/// Endpoint `c` of list `list` (named `key` in errors): it parses, suits
/// its list, and is TLS only when the daemon has a TLS identity.
fn endpoint(list: &str, key: &str, c: &str, has_tls: bool) -> Result<Endpoint, ConfigError> {
    let e = Endpoint::parse(c).map_err(|p| err(key, p))?;
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
    Ok(e)
}

/// Parses each entry of list `list` (`flows`, `groups`, `meters`: ovs-ofctl
/// syntax) with `parse`; a problem is named `bridge.LIST[N]`.
/// A configured flow: ovs-ofctl's text, but a field whose prerequisites
/// the match lacks is an error here, where ovs-ofctl (and sluice-ctl)
/// leave it out: a flow the daemon starts with matches what it says.
fn config_flow(text: &str) -> Result<ofp::FlowMod, String> {
    let (fm, dropped) = ofp::text::parse_flow_mod_noting(text).map_err(|e| e.to_string())?;
    match dropped.first() {
        None => Ok(fm),
        Some(f) => Err(format!(
            "`{f}`: no prerequisite for it in the match (write the protocol, such as `ip,` or \
             `tcp,`; ovs-ofctl would leave the field out)"
        )),
    }
}

fn parse_each<T, E: std::fmt::Display>(
    items: &[String],
    list: &str,
    parse: impl Fn(&str) -> Result<T, E>,
) -> Result<Vec<T>, ConfigError> {
    items
        .iter()
        .enumerate()
        .map(|(i, s)| parse(s).map_err(|e| err(format!("bridge.{list}[{i}]"), e.to_string())))
        .collect()
}

/// With a LOCAL port, the bridge's name is a TAP device's.
fn local_port_name(file: &BridgeSection) -> Result<(), ConfigError> {
    if file.local_port && (file.name.is_empty() || file.name.len() > 15 || file.name.contains('/'))
    {
        return Err(err(
            "bridge.name",
            "the LOCAL port is a TAP device named after the bridge: 1-15 characters, no '/'",
        ));
    }
    Ok(())
}

/// `cpu` or `cpus`: the CPUs to pin workers to, each one this machine has.
fn cpus(file: &BridgeSection) -> Result<Vec<usize>, ConfigError> {
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
    Ok(cpus)
}

/// The workers, one per entry: pinned to each of the CPUs, else `workers`
/// unpinned (default 1). A pcap port allows one worker only.
fn workers(
    file: &BridgeSection,
    backends: &[(u32, Backend)],
) -> Result<Vec<Option<usize>>, ConfigError> {
    let cpus = cpus(file)?;
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
    Ok(workers)
}

/// A count that must be at least 1 when given (`key` names it), else
/// `default`.
/// `learn_rate`, `learn_burst`, `learned_max`: what packets may teach
/// (`learn`), per table.
fn learn_limits(file: &BridgeSection) -> Result<LearnLimits, ConfigError> {
    let d = pipeline::Config::default();
    let burst = at_least_one(
        file.learn_burst
            .map(|b| usize::try_from(b).unwrap_or(usize::MAX)),
        "bridge.learn_burst",
        d.learn_burst as usize,
    )?;
    Ok(LearnLimits {
        rate: file.learn_rate.unwrap_or(d.learn_rate),
        burst: burst as u64,
        max: at_least_one(file.learned_max, "bridge.learned_max", d.learned_max)?,
    })
}

fn at_least_one(value: Option<usize>, key: &str, default: usize) -> Result<usize, ConfigError> {
    match value {
        Some(0) => Err(err(key, "must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(default),
    }
}

/// `tables`: table numbers (0 to the last table, 253) and their names,
/// each name a word ovs-ofctl and sluice-ctl read as that table's name and
/// as nothing else, once per bridge. A problem is named
/// `bridge.tables.NUMBER`.
fn table_names(
    tables: &std::collections::BTreeMap<String, String>,
) -> Result<std::collections::BTreeMap<u8, String>, ConfigError> {
    let n = pipeline::Config::default().n_tables;
    let mut out = std::collections::BTreeMap::new();
    let mut seen: std::collections::HashMap<&str, u8> = Default::default();
    for (k, name) in tables {
        let key = format!("bridge.tables.{k}");
        let id = k
            .parse::<u8>()
            .ok()
            .filter(|&id| id < n && k.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| err(&key, format!("{k:?} is not a table number (0-{})", n - 1)))?;
        if let Some(problem) = table_name_problem(name) {
            return Err(err(&key, format!("{name:?}: {problem}")));
        }
        if let Some(other) = seen.insert(name, id) {
            return Err(err(
                &key,
                format!("{name:?} names table {other} too: a name is one table's"),
            ));
        }
        out.insert(id, name.clone());
    }
    Ok(out)
}

/// What is wrong with table name `name`, if anything: it must fit
/// OpenFlow's 32 bytes with its NUL, be one word of printable ASCII without
/// the characters flow text separates or quotes with (so that it reads the
/// same unquoted in `table=`, `goto_table:` and `resubmit(,...)`, in a
/// shell and in a `--name-map` file), and not read as a number (ovs-ofctl
/// takes `5` and `+5` as table 5 and refuses `-5`; sluice-ctl also takes
/// `0x5`) or as the keyword `all` (every table, to `mod-table`, `table=`
/// and `dump-table-features`).
fn table_name_problem(name: &str) -> Option<String> {
    const SEPARATORS: &str = ",=:()\"\\";
    if name.is_empty() {
        return Some("empty (leave a table out to leave it without a name)".into());
    }
    if name.len() > agent::MAX_TABLE_NAME {
        return Some(format!(
            "{} bytes: a table name has at most {} (OpenFlow's 32 with the NUL)",
            name.len(),
            agent::MAX_TABLE_NAME
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|&c| !c.is_ascii_graphic() || SEPARATORS.contains(c))
    {
        return Some(format!(
            "{c:?} is not allowed: printable ASCII without spaces or any of {SEPARATORS}"
        ));
    }
    if name.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-') {
        return Some(
            "starts with a digit, + or -: ovs-ofctl and sluice-ctl would read it as a number"
                .into(),
        );
    }
    if name.eq_ignore_ascii_case("all") {
        return Some("\"all\" means every table to ovs-ofctl and sluice-ctl".into());
    }
    None
}
