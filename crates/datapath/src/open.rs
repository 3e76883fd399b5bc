//! What a port is made of and how its devices are opened: one handle per
//! worker (members of one `PACKET_FANOUT` group, one AF_XDP socket per
//! receive queue, one queue of the LOCAL TAP device, one UDP socket of a
//! tunnel port), or a single handle for a pcap port (which one worker
//! alone can serve).

use std::path::PathBuf;
use std::sync::Arc;

use netdev::xdp::XdpProgram;

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
    /// AF_XDP with the XDP fast path: table 0 compiled to the port's XDP
    /// program ([`crate::fast`]); native XDP where the driver can, unless
    /// `generic` (on a veth, generic XDP forwards frames that a host's
    /// stack sent faster than native XDP, which copies each such frame
    /// into a page of its own, and it needs no GRO at the peer to deliver
    /// a redirect: docs/PERFORMANCE.md).
    Xdp { generic: bool },
    /// Capture files.
    Pcap,
    /// The LOCAL port: a TAP device named after the bridge, created by
    /// the switch.
    Local,
    /// A VXLAN or Geneve tunnel port over the host's IP stack (not an
    /// interface: its name is the port's own).
    Tunnel(netdev::tunnel::TunnelSpec),
}

/// The back ends a user can name.
pub const BACKENDS: &str =
    "\"afpacket\", \"afpacket-mmsg\", \"afxdp\", \"afxdp-generic\", \"xdp\", \"xdp-generic\" or \"pcap\"";

impl Backend {
    /// A back end by the name a user gives it (not `Local`, which only
    /// the switch creates).
    pub fn parse(s: &str) -> Option<Backend> {
        Some(match s {
            "afpacket" => Backend::AfPacket { rings: true },
            "afpacket-mmsg" => Backend::AfPacket { rings: false },
            "afxdp" => Backend::AfXdp { generic: false },
            "afxdp-generic" => Backend::AfXdp { generic: true },
            "xdp" => Backend::Xdp { generic: false },
            "xdp-generic" => Backend::Xdp { generic: true },
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
            Backend::Xdp { generic: false } => "xdp",
            Backend::Xdp { generic: true } => "xdp-generic",
            Backend::Pcap => "pcap",
            Backend::Local => "local",
            Backend::Tunnel(t) => t.proto.name(),
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
    /// What NORMAL does with the port's VLANs (default: a trunk of all).
    pub vlan: crate::vlan::VlanConfig,
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
            vlan: Default::default(),
        }
    }
}

/// Opens `spec`'s devices: `workers` handles (one for a pcap port). An
/// interface that merges received frames (GRO, LRO) is opened with a
/// warning: such frames exceed the MTU and are dropped.
pub fn open(spec: &PortSpec, workers: usize) -> std::io::Result<Vec<Box<dyn Port>>> {
    open_xdp(spec, workers, None).map(|o| o.0)
}

/// [`open`], with the interface's XDP program when its devices are AF_XDP
/// sockets (for the fast path to replace). With `umems` (one per worker),
/// AF_XDP sockets bind to their worker's UMEM, which the worker's other
/// AF_XDP ports share: frames cross between them without a copy.
pub fn open_xdp(
    spec: &PortSpec,
    workers: usize,
    umems: Option<&[Arc<netdev::umem::Umem>]>,
) -> std::io::Result<Opened> {
    let (devs, program) = open_devices(spec, workers, umems)?;
    if matches!(
        spec.backend,
        Backend::AfPacket { .. } | Backend::AfXdp { .. } | Backend::Xdp { .. }
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
    Ok((devs, program))
}

/// A port's devices and, for AF_XDP, its interface's XDP program.
pub type Opened = (Vec<Box<dyn Port>>, Option<Arc<XdpProgram>>);

fn open_devices(
    spec: &PortSpec,
    workers: usize,
    umems: Option<&[Arc<netdev::umem::Umem>]>,
) -> std::io::Result<Opened> {
    use netdev::afpacket::{AfPacket, Options};
    let name = spec.name.as_str();
    let boxed = |v: Vec<AfPacket>| {
        v.into_iter()
            .map(|p| Box::new(p) as Box<dyn Port>)
            .collect()
    };
    let plain = |v: std::io::Result<Vec<Box<dyn Port>>>| v.map(|d| (d, None));
    match spec.backend {
        Backend::AfPacket { rings } => {
            let opts = Options {
                rings,
                ..Options::default()
            };
            plain(Ok(boxed(AfPacket::open_fanout(name, opts, workers)?)))
        }
        Backend::AfXdp { generic } | Backend::Xdp { generic } => {
            match netdev::afxdp::AfXdp::open_queues(name, workers, generic, umems) {
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
                        umem = if socks[0].umem().is_some() && umems.is_some() {
                            "shared by the worker's AF_XDP ports"
                        } else {
                            "its own"
                        },
                        "AF_XDP port"
                    );
                    let program = socks[0].program().clone();
                    Ok((
                        socks
                            .into_iter()
                            .map(|p| Box::new(p) as Box<dyn Port>)
                            .collect(),
                        Some(program),
                    ))
                }
                Err(e) => {
                    tracing::warn!(port = name, error = %e, "AF_XDP cannot be used; falling back to AF_PACKET (no XDP fast path for this port)");
                    plain(Ok(boxed(AfPacket::open_fanout(
                        name,
                        Options::default(),
                        workers,
                    )?)))
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
            plain(Ok(vec![Box::new(port)]))
        }
        Backend::Tunnel(t) => plain(Ok(netdev::tunnel::Tunnel::open_workers(name, t, workers)?
            .into_iter()
            .map(|t| Box::new(t) as Box<dyn Port>)
            .collect())),
        Backend::Local => plain(Ok(netdev::tap::Tap::create_queues(name, workers)?
            .into_iter()
            .map(|t| Box::new(t) as Box<dyn Port>)
            .collect())),
    }
}

/// The tunnel port types a user can name.
pub const TUNNEL_TYPES: &str = "\"vxlan\" or \"geneve\"";

/// The tunnel protocol named `ty`.
pub fn tunnel_proto(ty: &str) -> Option<packet::tunnel::Proto> {
    use packet::tunnel::Proto;
    match ty {
        "vxlan" => Some(Proto::Vxlan),
        "geneve" => Some(Proto::Geneve),
        _ => None,
    }
}

/// The options a tunnel port takes, as Open vSwitch names them.
pub const TUNNEL_OPTIONS: &str = "remote_ip, local_ip, key, dst_port, ttl, tos";

/// Reads a tunnel port's options (Open vSwitch's `options:KEY=VALUE`):
/// `remote_ip` (an address, or `flow`: each packet's `tun_dst`; required),
/// `key` (a VNI, or `flow`: each packet's `tun_id`; default 0 as in Open
/// vSwitch), `local_ip` (the address to bind; default any), `dst_port`
/// (default the protocol's IANA port), `ttl` (default 64), `tos`
/// (default 0). Errors name the option and the problem.
pub fn tunnel_spec<'a>(
    proto: packet::tunnel::Proto,
    options: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<netdev::tunnel::TunnelSpec, (String, String)> {
    use std::net::IpAddr;
    let mut spec = netdev::tunnel::TunnelSpec::flow(proto);
    spec.key = Some(0);
    let mut remote = false;
    let bad = |k: &str, p: String| Err((k.to_string(), p));
    for (k, v) in options {
        let ip = |v: &str| {
            v.parse::<IpAddr>()
                .ok()
                .filter(|a| !a.is_unspecified() && !a.is_multicast())
        };
        match k {
            "remote_ip" => {
                remote = true;
                spec.remote = match v {
                    "flow" => None,
                    _ => Some(ip(v).ok_or((
                        k.to_string(),
                        format!("{v:?} is neither \"flow\" nor a unicast IPv4/IPv6 address"),
                    ))?),
                };
            }
            "local_ip" => {
                spec.local = Some(ip(v).ok_or((
                    k.to_string(),
                    format!("{v:?} is not a unicast IPv4/IPv6 address"),
                ))?)
            }
            "in_key" | "out_key" => {
                return bad(
                    k,
                    "separate in_key/out_key are not supported: give `key`".into(),
                )
            }
            "key" => {
                spec.key = match v {
                    "flow" => None,
                    _ => {
                        let n = v
                            .strip_prefix("0x")
                            .map_or_else(|| v.parse::<u64>(), |h| u64::from_str_radix(h, 16));
                        match n {
                            Ok(n) if n <= packet::tunnel::MAX_VNI as u64 => Some(n as u32),
                            _ => {
                                return bad(
                                    k,
                                    format!("{v:?} is neither \"flow\" nor a VNI (0-16777215)"),
                                )
                            }
                        }
                    }
                }
            }
            "dst_port" => spec.dst_port = number(k, v, 1, "a UDP port (1-65535)")?,
            "ttl" => spec.ttl = number(k, v, 1, "a TTL (1-255)")?,
            "tos" => spec.tos = number(k, v, 0, "a TOS byte (0-255)")?,
            _ => return bad(k, format!("no such tunnel option ({TUNNEL_OPTIONS})")),
        }
    }
    if !remote {
        return bad(
            "remote_ip",
            "a tunnel port needs remote_ip: an address, or \"flow\" to take each packet's tun_dst"
                .into(),
        );
    }
    match (spec.local, spec.remote) {
        (Some(l), Some(r)) if l.is_ipv4() != r.is_ipv4() => {
            return bad(
                "remote_ip",
                format!("{r} and local_ip {l} are of different IP versions"),
            )
        }
        _ => {}
    }
    Ok(spec)
}

/// Option `k`'s value `v` as a number of at least `min` (`what` names the
/// range in the error).
fn number<T: std::str::FromStr + PartialOrd + From<u8>>(
    k: &str,
    v: &str,
    min: u8,
    what: &str,
) -> Result<T, (String, String)> {
    v.parse::<T>()
        .ok()
        .filter(|n| *n >= T::from(min))
        .ok_or_else(|| (k.to_string(), format!("{v:?} is not {what}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use packet::tunnel::Proto;

    #[test]
    fn every_backend_name_reads_back_as_itself() {
        let names = [
            "afpacket",
            "afpacket-mmsg",
            "afxdp",
            "afxdp-generic",
            "xdp",
            "xdp-generic",
            "pcap",
        ];
        for n in names {
            let b = Backend::parse(n).unwrap_or_else(|| panic!("{n}"));
            assert_eq!(b.name(), n);
            assert!(BACKENDS.contains(&format!("\"{n}\"")), "{n} listed");
        }
        assert_eq!(
            Backend::parse("xdp-generic"),
            Some(Backend::Xdp { generic: true })
        );
        assert_eq!(Backend::parse("xdp-native"), None);
    }

    #[test]
    fn tunnel_options_read_as_open_vswitch_names_them() {
        let s = tunnel_spec(Proto::Vxlan, [("remote_ip", "flow"), ("key", "flow")]).unwrap();
        assert_eq!((s.remote, s.key, s.dst_port, s.ttl), (None, None, 4789, 64));
        let s = tunnel_spec(
            Proto::Geneve,
            [
                ("remote_ip", "192.0.2.9"),
                ("key", "0x15"),
                ("local_ip", "192.0.2.1"),
                ("dst_port", "7000"),
                ("ttl", "9"),
                ("tos", "4"),
            ],
        )
        .unwrap();
        assert_eq!(s.remote, Some("192.0.2.9".parse().unwrap()));
        assert_eq!((s.key, s.dst_port, s.ttl, s.tos), (Some(0x15), 7000, 9, 4));
        // A fixed port with no key sends VNI 0, as Open vSwitch does.
        assert_eq!(
            tunnel_spec(Proto::Vxlan, [("remote_ip", "flow")])
                .unwrap()
                .key,
            Some(0)
        );
        for (opts, key) in [
            (vec![("key", "flow")], "remote_ip"),
            (vec![("remote_ip", "0.0.0.0")], "remote_ip"),
            (vec![("remote_ip", "flow"), ("key", "16777216")], "key"),
            (vec![("remote_ip", "flow"), ("dst_port", "0")], "dst_port"),
            (vec![("remote_ip", "flow"), ("ttl", "0")], "ttl"),
            (vec![("remote_ip", "flow"), ("colour", "red")], "colour"),
            (vec![("remote_ip", "flow"), ("in_key", "5")], "in_key"),
            (
                vec![("remote_ip", "2001:db8::1"), ("local_ip", "192.0.2.1")],
                "remote_ip",
            ),
        ] {
            let e = tunnel_spec(Proto::Vxlan, opts.clone()).unwrap_err();
            assert_eq!(e.0, key, "{opts:?}: {e:?}");
        }
    }
}
