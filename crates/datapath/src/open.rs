//! What a port is made of and how its devices are opened: one handle per
//! worker (members of one `PACKET_FANOUT` group, one AF_XDP socket per
//! receive queue, one queue of the LOCAL TAP device), or a single handle
//! for a pcap port (which one worker alone can serve).

use std::path::PathBuf;

use netdev::Port;

/// How a port reaches its frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// AF_PACKET with TPACKET_V2 rings (`rings`) or recvmmsg/sendmmsg.
    AfPacket { rings: bool },
    /// AF_XDP (falls back to AF_PACKET with a log line where XDP cannot
    /// run); the XDP program runs natively where the driver can, unless
    /// `generic`.
    AfXdp { generic: bool },
    /// Capture files.
    Pcap,
    /// The LOCAL port: a TAP device named after the bridge, created by
    /// the switch.
    Local,
}

/// The back ends a user can name.
pub const BACKENDS: &str =
    "\"afpacket\", \"afpacket-mmsg\", \"afxdp\", \"afxdp-generic\" or \"pcap\"";

impl Backend {
    /// A back end by the name a user gives it (not `Local`, which only
    /// the switch creates).
    pub fn parse(s: &str) -> Option<Backend> {
        Some(match s {
            "afpacket" => Backend::AfPacket { rings: true },
            "afpacket-mmsg" => Backend::AfPacket { rings: false },
            "afxdp" => Backend::AfXdp { generic: false },
            "afxdp-generic" => Backend::AfXdp { generic: true },
            "pcap" => Backend::Pcap,
            _ => return None,
        })
    }

    /// The name [`Backend::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Backend::AfPacket { rings: true } => "afpacket",
            Backend::AfPacket { rings: false } => "afpacket-mmsg",
            Backend::AfXdp { generic: false } => "afxdp",
            Backend::AfXdp { generic: true } => "afxdp-generic",
            Backend::Pcap => "pcap",
            Backend::Local => "local",
        }
    }
}

/// A pcap port's captures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PcapSpec {
    pub input: Option<PathBuf>,
    pub output: Option<PathBuf>,
    /// Frames per second to receive `input` at (None: unpaced).
    pub rate: Option<u64>,
}

/// An egress queue of a port: rates in kbit/s (0: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSpec {
    pub id: u32,
    pub min_rate: u64,
    pub max_rate: u64,
}

/// One port of a bridge, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortSpec {
    pub port_no: u32,
    /// The interface (or, for pcap, the port's) name.
    pub name: String,
    pub backend: Backend,
    /// Set for [`Backend::Pcap`] only.
    pub pcap: Option<PcapSpec>,
    pub queues: Vec<QueueSpec>,
}

impl PortSpec {
    /// A port on interface `name` with `backend`, no queues.
    pub fn new(port_no: u32, name: &str, backend: Backend) -> PortSpec {
        PortSpec {
            port_no,
            name: name.to_string(),
            backend,
            pcap: None,
            queues: Vec::new(),
        }
    }
}

/// Opens `spec`'s devices: `workers` handles (one for a pcap port). An
/// interface that merges received frames (GRO, LRO) is opened with a
/// warning: such frames exceed the MTU and are dropped.
pub fn open(spec: &PortSpec, workers: usize) -> std::io::Result<Vec<Box<dyn Port>>> {
    let devs = open_devices(spec, workers)?;
    if matches!(
        spec.backend,
        Backend::AfPacket { .. } | Backend::AfXdp { .. }
    ) {
        let on = netdev::link::merging_offloads(&spec.name);
        if !on.is_empty() {
            let off: Vec<String> = on.iter().map(|o| format!("{o} off")).collect();
            tracing::warn!(
                port = %spec.name,
                offloads = %on.join(","),
                "the interface merges received frames past its MTU, which sluice drops (rx_truncated); turn that off: ethtool -K {} {}",
                spec.name,
                off.join(" ")
            );
        }
    }
    Ok(devs)
}

fn open_devices(spec: &PortSpec, workers: usize) -> std::io::Result<Vec<Box<dyn Port>>> {
    use netdev::afpacket::{AfPacket, Options};
    let name = spec.name.as_str();
    let boxed = |v: Vec<AfPacket>| {
        v.into_iter()
            .map(|p| Box::new(p) as Box<dyn Port>)
            .collect()
    };
    match spec.backend {
        Backend::AfPacket { rings } => {
            let opts = Options {
                rings,
                ..Options::default()
            };
            Ok(boxed(AfPacket::open_fanout(name, opts, workers)?))
        }
        Backend::AfXdp { generic } => {
            match netdev::afxdp::AfXdp::open_queues(name, workers, generic) {
                Ok(socks) => {
                    tracing::info!(
                        port = name,
                        xdp = if socks[0].native() {
                            "native"
                        } else {
                            "generic"
                        },
                        copy = if socks[0].zero_copy() {
                            "zero-copy"
                        } else {
                            "copy"
                        },
                        "AF_XDP port"
                    );
                    Ok(socks
                        .into_iter()
                        .map(|p| Box::new(p) as Box<dyn Port>)
                        .collect())
                }
                Err(e) => {
                    tracing::warn!(port = name, error = %e, "AF_XDP cannot be used; falling back to AF_PACKET");
                    Ok(boxed(AfPacket::open_fanout(
                        name,
                        Options::default(),
                        workers,
                    )?))
                }
            }
        }
        Backend::Pcap => {
            let Some(p) = &spec.pcap else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "a pcap port needs pcap_in, pcap_out or both",
                ));
            };
            if workers != 1 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("a pcap port needs a one-worker bridge (this one has {workers})"),
                ));
            }
            let mut port =
                netdev::pcap::PcapPort::open(name, p.input.as_deref(), p.output.as_deref())?;
            if let Some(rate) = p.rate {
                port = port.paced(rate)?;
            }
            Ok(vec![Box::new(port)])
        }
        Backend::Local => Ok(netdev::tap::Tap::create_queues(name, workers)?
            .into_iter()
            .map(|t| Box::new(t) as Box<dyn Port>)
            .collect()),
    }
}
