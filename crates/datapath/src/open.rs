//! What a port is made of and how its devices are opened: one handle per
//! worker (members of one `PACKET_FANOUT` group, one AF_XDP socket per
//! receive queue, one queue of the LOCAL or an internal port's TAP
//! device, one UDP socket of a tunnel port, one lane of a patch port), or
//! a single handle for a pcap port (which one worker alone can serve).

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
    /// An internal port (Open vSwitch's `type=internal`): a TAP device of
    /// the port's name, created by the switch, as the LOCAL port is.
    Internal,
    /// A patch port (`type=patch`): joined to its peer, another patch port
    /// of this process (the spec's [`PortSpec::peer`]), without a device
    /// ([`netdev::patch`]).
    Patch,
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
            Backend::Internal => "internal",
            Backend::Patch => "patch",
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
    /// A patch port's peer (the other port's name); None for the others.
    pub peer: Option<String>,
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
            peer: None,
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
        Backend::Local | Backend::Internal => {
            plain(Ok(netdev::tap::Tap::create_queues(name, workers)?
                .into_iter()
                .map(|t| Box::new(t) as Box<dyn Port>)
                .collect()))
        }
        Backend::Patch => {
            let peer = spec.peer.as_deref().unwrap_or_default();
            plain(Ok(netdev::patch::Patch::open_workers(name, peer, workers)?
                .into_iter()
                .map(|p| Box::new(p) as Box<dyn Port>)
                .collect()))
        }
    }
}

/// The tunnel port types a user can name.
pub const TUNNEL_TYPES: &str = "\"vxlan\" or \"geneve\"";

/// The port types a user can name besides an interface's.
pub const PORT_TYPES: &str = "\"vxlan\", \"geneve\", \"internal\" or \"patch\"";

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
pub const TUNNEL_OPTIONS: &str = "remote_ip, local_ip, key, in_key, out_key, dst_port, ttl, tos, csum, df_default, egress_pkt_mark, packet_type, exts";

/// A tunnel option sluice reads but does not carry out, or does not know:
/// the port comes up without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelNote {
    /// The option as given (`ttl`, `exts`).
    pub option: String,
    /// What it means for the port.
    pub text: String,
    /// Not an option Open vSwitch documents for the port's type (it logs
    /// a warning and goes on; so does sluice, and the Interface's `error`
    /// stays empty); false: documented, not implemented (said on the
    /// Interface's `error`).
    pub unknown: bool,
}

impl std::fmt::Display for TunnelNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "options:{}: {}", self.option, self.text)
    }
}

/// Reads a tunnel port's options (Open vSwitch's `options:KEY=VALUE`,
/// ovs-vswitchd.conf.db(5) "Tunnel Options" for geneve and vxlan):
/// `remote_ip` (an address, or `flow`: each packet's `tun_dst`;
/// required), `local_ip` (the address to bind, or `flow`: any; default
/// any), `key` (`in_key` and `out_key` at once: a VNI, or `flow`: any
/// VNI received goes to `tun_id`, each packet's `tun_id` is sent; default
/// 0 as in Open vSwitch), `dst_port` (default the protocol's IANA port),
/// `ttl` (default 64), `tos` (default 0), `csum` (the outer UDP checksum
/// on IPv4, default false), `df_default` (default true),
/// `egress_pkt_mark` (the socket mark). What is documented and not
/// carried out comes back as notes (`ttl=inherit`, `tos=inherit`,
/// `packet_type` other than `legacy_l2`, `exts`), as do options Open
/// vSwitch does not know either; the port works without them. Errors
/// name the option and the problem; IPsec's options (`psk`,
/// `remote_cert`, `remote_name`) are one: the port would send in the
/// clear what its user wants encrypted.
pub fn tunnel_options<'a>(
    proto: packet::tunnel::Proto,
    options: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(netdev::tunnel::TunnelSpec, Vec<TunnelNote>), (String, String)> {
    use std::net::IpAddr;
    let mut spec = netdev::tunnel::TunnelSpec::flow(proto);
    spec.in_key = Some(0);
    spec.out_key = Some(0);
    let mut notes = Vec::new();
    let mut note = |k: &str, text: String, unknown: bool| {
        notes.push(TunnelNote {
            option: k.to_string(),
            text,
            unknown,
        })
    };
    let mut remote = false;
    let mut local_flow = false;
    let key = |k: &str, v: &str| -> Result<Option<u32>, (String, String)> {
        if v == "flow" {
            return Ok(None);
        }
        let n = v
            .strip_prefix("0x")
            .map_or_else(|| v.parse::<u64>(), |h| u64::from_str_radix(h, 16));
        match n {
            Ok(n) if n <= packet::tunnel::MAX_VNI as u64 => Ok(Some(n as u32)),
            _ => bad(
                k,
                format!("{v:?} is neither \"flow\" nor a VNI (0-16777215)"),
            ),
        }
    };
    let boolean = |k: &str, v: &str| match v {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => bad(k, format!("{v:?} is neither \"true\" nor \"false\"")),
    };
    // Open vSwitch reads `key` first, then lets in_key/out_key override.
    let mut opts: Vec<(&str, &str)> = options.into_iter().collect();
    opts.sort_by_key(|(k, _)| *k != "key");
    for (k, v) in opts {
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
            "local_ip" if v == "flow" => {
                local_flow = true;
                spec.local = None;
            }
            "local_ip" => {
                spec.local = Some(ip(v).ok_or((
                    k.to_string(),
                    format!("{v:?} is neither \"flow\" nor a unicast IPv4/IPv6 address"),
                ))?)
            }
            "key" => {
                spec.in_key = key(k, v)?;
                spec.out_key = spec.in_key;
            }
            "in_key" => spec.in_key = key(k, v)?,
            "out_key" => spec.out_key = key(k, v)?,
            "dst_port" => spec.dst_port = number(k, v, 1, "a UDP port (1-65535)")?,
            "ttl" if v == "inherit" => note(
                k,
                format!("\"inherit\" is not supported by sluice: the outer TTL is {}", spec.ttl),
                false,
            ),
            "ttl" => spec.ttl = number(k, v, 1, "a TTL (1-255) or \"inherit\"")?,
            "tos" if v == "inherit" => note(
                k,
                "\"inherit\" is not supported by sluice: the outer TOS is 0".into(),
                false,
            ),
            "tos" => spec.tos = number(k, v, 0, "a TOS byte (0-255) or \"inherit\"")?,
            "csum" => spec.csum = boolean(k, v)?,
            "df_default" => spec.df = boolean(k, v)?,
            "egress_pkt_mark" => {
                spec.mark = Some(number(k, v, 0, "a packet mark (0-4294967295)")?)
            }
            "packet_type" if v == "legacy_l2" => {}
            "packet_type" if proto == packet::tunnel::Proto::Vxlan
                && matches!(v, "legacy_l3" | "ptap") =>
            {
                note(
                    k,
                    format!("{v:?} is not supported by sluice: the port carries Ethernet frames (legacy_l2)"),
                    false,
                )
            }
            "exts" if proto == packet::tunnel::Proto::Vxlan => note(
                k,
                format!("VXLAN extensions ({v}) are not supported by sluice: plain VXLAN is sent and received"),
                false,
            ),
            "psk" | "remote_cert" | "remote_name" => {
                return bad(
                    k,
                    "IPsec is not supported by sluice: the port is not created, so that nothing meant to be encrypted goes out in the clear".into(),
                )
            }
            _ => note(
                k,
                format!("unknown {} argument (ignored, as Open vSwitch ignores it)", proto.name()),
                true,
            ),
        }
    }
    if !remote {
        return bad(
            "remote_ip",
            "a tunnel port needs remote_ip: an address, or \"flow\" to take each packet's tun_dst"
                .into(),
        );
    }
    if local_flow && spec.remote.is_some() {
        return bad(
            "local_ip",
            "\"flow\" goes with remote_ip=flow only (as in Open vSwitch)".into(),
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
    Ok((spec, notes))
}

/// A refusal of option `k`.
fn bad<T>(k: &str, p: String) -> Result<T, (String, String)> {
    Err((k.to_string(), p))
}

/// [`tunnel_options`] without its notes.
pub fn tunnel_spec<'a>(
    proto: packet::tunnel::Proto,
    options: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<netdev::tunnel::TunnelSpec, (String, String)> {
    tunnel_options(proto, options).map(|(s, _)| s)
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
        assert_eq!(
            (s.remote, s.in_key, s.out_key, s.dst_port, s.ttl),
            (None, None, None, 4789, 64)
        );
        assert!(
            !s.csum && s.df && s.mark.is_none(),
            "Open vSwitch's defaults"
        );
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
        assert_eq!(
            (s.in_key, s.out_key, s.dst_port, s.ttl, s.tos),
            (Some(0x15), Some(0x15), 7000, 9, 4)
        );
        // A fixed port with no key sends VNI 0, as Open vSwitch does.
        let s = tunnel_spec(Proto::Vxlan, [("remote_ip", "flow")]).unwrap();
        assert_eq!((s.in_key, s.out_key), (Some(0), Some(0)));
        for (opts, key) in [
            (vec![("key", "flow")], "remote_ip"),
            (vec![("remote_ip", "0.0.0.0")], "remote_ip"),
            (vec![("remote_ip", "flow"), ("key", "16777216")], "key"),
            (vec![("remote_ip", "flow"), ("dst_port", "0")], "dst_port"),
            (vec![("remote_ip", "flow"), ("ttl", "0")], "ttl"),
            (vec![("remote_ip", "flow"), ("csum", "yes")], "csum"),
            (vec![("remote_ip", "flow"), ("ttl", "x")], "ttl"),
            (vec![("remote_ip", "flow"), ("psk", "secret")], "psk"),
            (
                vec![("remote_ip", "192.0.2.1"), ("local_ip", "flow")],
                "local_ip",
            ),
            (
                vec![("remote_ip", "2001:db8::1"), ("local_ip", "192.0.2.1")],
                "remote_ip",
            ),
        ] {
            let e = tunnel_spec(Proto::Vxlan, opts.clone()).unwrap_err();
            assert_eq!(e.0, key, "{opts:?}: {e:?}");
        }
    }

    #[test]
    fn every_option_open_vswitch_documents_is_taken() {
        // What ovn-controller sets on a Geneve port, and the rest.
        let (s, notes) = tunnel_options(
            Proto::Geneve,
            [
                ("csum", "true"),
                ("key", "flow"),
                ("remote_ip", "192.0.2.7"),
                ("local_ip", "192.0.2.1"),
                ("df_default", "false"),
                ("egress_pkt_mark", "7"),
                ("ttl", "inherit"),
                ("tos", "inherit"),
                ("packet_type", "legacy_l2"),
                ("colour", "red"),
            ],
        )
        .unwrap();
        assert!(s.csum && !s.df);
        assert_eq!((s.in_key, s.out_key, s.mark), (None, None, Some(7)));
        let said: Vec<(&str, bool)> = notes
            .iter()
            .map(|n| (n.option.as_str(), n.unknown))
            .collect();
        assert_eq!(said, [("ttl", false), ("tos", false), ("colour", true)]);
        assert!(notes[0]
            .to_string()
            .starts_with("options:ttl: \"inherit\" is not supported"));
        // in_key and out_key apart, whatever the order; key first.
        let s = tunnel_spec(
            Proto::Vxlan,
            [
                ("out_key", "9"),
                ("remote_ip", "flow"),
                ("key", "5"),
                ("in_key", "flow"),
            ],
        )
        .unwrap();
        assert_eq!((s.in_key, s.out_key), (None, Some(9)));
        let (_, notes) = tunnel_options(
            Proto::Vxlan,
            [
                ("remote_ip", "flow"),
                ("exts", "gbp"),
                ("packet_type", "ptap"),
            ],
        )
        .unwrap();
        assert_eq!(notes.len(), 2);
        assert!(notes.iter().all(|n| !n.unknown));
        // exts on Geneve is not an option of Geneve.
        let (_, notes) =
            tunnel_options(Proto::Geneve, [("remote_ip", "flow"), ("exts", "gbp")]).unwrap();
        assert!(notes[0].unknown);
    }
}
