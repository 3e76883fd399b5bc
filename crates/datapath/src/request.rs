//! A port as a user asks for it, checked once: the configuration file's
//! `[[port]]` entries, `--port NAME[=OFPORT]` and `add-port`'s words all
//! become a [`PortRequest`], and [`PortRequest::check`] alone turns one
//! into a [`PortSpec`] (back end, tunnel options, captures, queues), so
//! the two doors cannot drift apart.
//!
//! Contract: every refusal is a [`RequestError`] naming the field (as the
//! configuration file spells it: `backend`, `ofport`, `options.remote_ip`,
//! `queues[0].max_rate`) and the problem; each door says where the field
//! was (`port[2].backend` in the file, `backend=netmap` for `add-port`).
//! Choosing a number for a port that names none is not this module's job:
//! the bridge's remembered numbers do it ([`crate::numbers`]).

use std::path::PathBuf;

use crate::open::{tunnel_proto, tunnel_spec, Backend, PcapSpec, PortSpec, QueueSpec};
use crate::open::{BACKENDS, PORT_TYPES, TUNNEL_OPTIONS, TUNNEL_TYPES};
use crate::vlan::VlanConfig;

/// The largest queue rate accepted, kbit/s (1 Pbit/s): rates become
/// bit/s (x1000) and shaping intervals, and stay where that arithmetic
/// cannot overflow.
pub const MAX_QUEUE_RATE_KBPS: u64 = 1_000_000_000_000;

/// A port as its user wrote it, before it is checked or numbered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortRequest {
    /// The interface (or the tunnel or capture port's own) name.
    pub name: String,
    pub ofport: Option<u32>,
    /// A back end's name; None: the bridge's default.
    pub backend: Option<String>,
    pub pcap_in: Option<PathBuf>,
    pub pcap_out: Option<PathBuf>,
    /// Frames per second to receive `pcap_in` at.
    pub pcap_rate: Option<u64>,
    pub queues: Vec<QueueSpec>,
    /// The port's type, as Open vSwitch's Interface `type`: "vxlan",
    /// "geneve" (a tunnel port), "internal" (a TAP device the switch
    /// creates), "patch" (joined to a peer); None (or "system"): an
    /// interface.
    pub port_type: Option<String>,
    /// A tunnel or patch port's options, as text (a patch port's `peer`).
    pub options: Vec<(String, String)>,
    /// VLAN settings as given (checked into a [`VlanConfig`]): an access
    /// port's VLAN or a native port's native VLAN.
    pub tag: Option<i64>,
    /// The VLANs a trunk carries (empty: all).
    pub trunks: Vec<i64>,
    /// "access", "trunk", "native-tagged", "native-untagged"; None: access
    /// with a tag, trunk without.
    pub vlan_mode: Option<String>,
}

/// A field of a port request and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    /// The field as the configuration file names it (`backend`,
    /// `options.key`, `queues[1].id`); empty for the request as a whole.
    pub field: String,
    /// The value given, where one was (for `add-port`'s `KEY=VALUE`).
    pub value: Option<String>,
    pub problem: String,
}

impl RequestError {
    fn new(field: &str, value: Option<&str>, problem: impl Into<String>) -> RequestError {
        RequestError {
            field: field.to_string(),
            value: value.map(str::to_string),
            problem: problem.into(),
        }
    }

    /// As `add-port`'s words say it: `KEY=VALUE: problem` (options
    /// without their `options.` prefix).
    pub fn in_words(&self) -> String {
        let key = self.field.strip_prefix("options.").unwrap_or(&self.field);
        match (&self.value, key.is_empty()) {
            (_, true) => self.problem.clone(),
            (Some(v), false) => format!("{key}={v}: {}", self.problem),
            (None, false) => format!("{key}: {}", self.problem),
        }
    }
}

/// Whether `name` can be a Linux interface's name.
pub fn check_ifname(name: &str) -> Result<(), String> {
    if name.is_empty()
        || name.len() > 15
        || name.contains(['/', '\0'])
        || name.contains(char::is_whitespace)
    {
        return Err(format!(
            "{name:?} is not a Linux interface name (1-15 characters, no '/' or spaces)"
        ));
    }
    Ok(())
}

/// Whether `k` is one of the options `add-port`'s words take without
/// their `options:` prefix (a patch port's or a tunnel port's).
fn is_option(k: &str) -> bool {
    k == "peer" || TUNNEL_OPTIONS.split(", ").any(|o| o == k)
}

/// Whether `n` is a number a port can be given (1 to OFPP_MAX).
pub fn check_ofport(n: u32) -> Result<(), String> {
    if n == 0 || n > ofp::port::port_no::MAX {
        return Err(format!(
            "{n} is not a usable OpenFlow port number (1-{})",
            ofp::port::port_no::MAX
        ));
    }
    Ok(())
}

impl PortRequest {
    /// A request for interface `name`.
    pub fn named(name: &str) -> PortRequest {
        PortRequest {
            name: name.to_string(),
            ..PortRequest::default()
        }
    }

    /// Reads `add-port`'s words: `IFACE [ofport=N] [backend=NAME]
    /// [pcap_in=FILE] [pcap_out=FILE]`, or for a tunnel port `NAME
    /// type=vxlan|geneve [ofport=N] OPTION=VALUE...` with the tunnel
    /// options (also written `options:remote_ip=...` as ovs-vsctl does),
    /// `NAME type=internal`, `NAME type=patch peer=PEER`; any with
    /// `tag=VLAN`, `trunks=VLAN,...` and `vlan_mode=MODE`.
    /// `taken` is the numbers in use. Refusals come in the order a user
    /// reads the words (the name, then each word, then how they go
    /// together), in `add-port`'s terms; [`PortRequest::check`] then
    /// judges the port as it judges a configuration file's.
    pub fn from_words(words: &[String], taken: &[u32]) -> Result<PortRequest, RequestError> {
        let whole = |p: String| RequestError::new("", None, p);
        let name = words
            .first()
            .ok_or_else(|| whole("which interface?".into()))?;
        // A patch port is no interface: any name (see `check`).
        if !words[1..].iter().any(|w| w == "type=patch") {
            check_ifname(name).map_err(whole)?;
        }
        let mut r = PortRequest::named(name);
        for w in &words[1..] {
            let (k, v) = w.split_once('=').ok_or_else(|| {
                whole(format!("{w:?}: expected KEY=VALUE (ofport, backend, pcap_in, pcap_out, type, tag, trunks, vlan_mode, or a tunnel option)"))
            })?;
            let k = k.strip_prefix("options:").unwrap_or(k);
            match k {
                "type" => {
                    if tunnel_proto(v).is_none() && !matches!(v, "internal" | "patch") {
                        return Err(RequestError::new(
                            "type",
                            Some(v),
                            format!("not a port type ({PORT_TYPES})"),
                        ));
                    }
                    r.port_type = Some(v.to_string());
                }
                _ if w.starts_with("options:") || is_option(k) => {
                    r.options.push((k.to_string(), v.to_string()))
                }
                "ofport" => {
                    let n = v
                        .parse()
                        .ok()
                        .filter(|&n| check_ofport(n).is_ok())
                        .ok_or_else(|| {
                            RequestError::new(
                                "ofport",
                                Some(v),
                                format!(
                                    "not a usable OpenFlow port number (1-{})",
                                    ofp::port::port_no::MAX
                                ),
                            )
                        })?;
                    if taken.contains(&n) {
                        return Err(RequestError::new("ofport", Some(v), "the number is taken"));
                    }
                    r.ofport = Some(n);
                }
                "backend" => {
                    Backend::parse(v).ok_or_else(|| {
                        RequestError::new("backend", Some(v), format!("not a back end ({BACKENDS})"))
                    })?;
                    r.backend = Some(v.to_string());
                }
                "pcap_in" => r.pcap_in = Some(v.into()),
                "pcap_out" => r.pcap_out = Some(v.into()),
                "tag" => {
                    let n = v.parse().map_err(|_| {
                        RequestError::new("tag", Some(v), "not a VLAN ID (0 to 4095)")
                    })?;
                    r.tag = Some(n);
                }
                "trunks" => {
                    r.trunks = v
                        .split(',')
                        .map(|t| t.trim().parse::<i64>())
                        .collect::<Result<_, _>>()
                        .map_err(|_| {
                            RequestError::new(
                                "trunks",
                                Some(v),
                                "VLAN IDs (0 to 4095) separated by commas",
                            )
                        })?;
                }
                "vlan_mode" => r.vlan_mode = Some(v.to_string()),
                _ => {
                    return Err(RequestError::new(
                        k,
                        None,
                        format!(
                            "no such option (ofport, backend, pcap_in, pcap_out, type, tag, trunks, vlan_mode, peer, {TUNNEL_OPTIONS})"
                        ),
                    ))
                }
            }
        }
        let pcap = r.pcap_in.is_some() || r.pcap_out.is_some();
        match &r.port_type {
            Some(ty) if r.backend.is_some() || pcap => {
                return Err(whole(format!(
                    "a {ty} port takes no backend, pcap_in or pcap_out"
                )))
            }
            None if !r.options.is_empty() => {
                let k = &r.options[0].0;
                let ty = if k == "peer" { "patch" } else { TUNNEL_TYPES };
                return Err(RequestError::new(
                    k,
                    None,
                    format!(
                        "a {} option; give type={ty}",
                        if k == "peer" { "patch" } else { "tunnel" }
                    ),
                ));
            }
            _ => {}
        }
        if r.port_type.is_none() && pcap != (r.backend.as_deref() == Some("pcap")) {
            return Err(whole(
                "pcap_in/pcap_out go with backend=pcap, which needs one of them".into(),
            ));
        }
        Ok(r)
    }

    /// Checks the request and says how the port is opened, numbered
    /// `port_no`; `default` is the bridge's back end for a port that
    /// names none.
    pub fn check(&self, port_no: u32, default: Backend) -> Result<PortSpec, RequestError> {
        // A patch port is no device: Open vSwitch's names, of any length
        // (ovn-controller's `patch-br-int-to-ln-...`), are taken.
        if self.port_type.as_deref() == Some("patch") {
            // Not empty, and one word (the bridge's remembered numbers
            // are kept one port a line).
            if self.name.is_empty()
                || self.name.contains(char::is_whitespace)
                || self.name.contains('\0')
            {
                return Err(RequestError::new(
                    "name",
                    None,
                    format!(
                        "{:?} is not a patch port's name (not empty, no spaces)",
                        self.name
                    ),
                ));
            }
        } else {
            check_ifname(&self.name).map_err(|p| RequestError::new("name", None, p))?;
        }
        if let Some(n) = self.ofport {
            check_ofport(n).map_err(|p| RequestError::new("ofport", Some(&n.to_string()), p))?;
        }
        let mut peer = None;
        let backend = match self.port_type.as_deref() {
            None | Some("system") if !self.options.is_empty() => {
                return Err(RequestError::new(
                    "options",
                    None,
                    format!("options go with a tunnel or patch port: give type = {PORT_TYPES}"),
                ))
            }
            Some(ty @ ("vxlan" | "geneve")) => self.tunnel_backend(ty)?,
            Some(ty @ ("internal" | "patch")) => {
                self.plain_type(ty)?;
                if ty == "patch" {
                    peer = Some(self.patch_peer()?);
                    Backend::Patch
                } else {
                    Backend::Internal
                }
            }
            Some(ty) if ty != "system" => {
                return Err(RequestError::new(
                    "type",
                    Some(ty),
                    format!("{ty:?} is not a port type ({PORT_TYPES})"),
                ))
            }
            _ => match &self.backend {
                None => default,
                Some(b) => Backend::parse(b).ok_or_else(|| {
                    RequestError::new(
                        "backend",
                        Some(b),
                        format!("{b:?} is not a back end ({BACKENDS})"),
                    )
                })?,
            },
        };
        let pcap = self.pcap(backend)?;
        let queues = self.checked_queues()?;
        let vlan =
            VlanConfig::check(self.tag, &self.trunks, self.vlan_mode.as_deref()).map_err(|e| {
                let value = match e.field {
                    "tag" => self.tag.map(|t| t.to_string()),
                    "trunks" => Some(
                        self.trunks
                            .iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                    _ => self.vlan_mode.clone(),
                };
                RequestError::new(e.field, value.as_deref(), e.problem)
            })?;
        Ok(PortSpec {
            port_no,
            name: self.name.clone(),
            backend,
            pcap,
            queues,
            vlan,
            peer,
        })
    }

    /// An internal or patch port: no back end, captures or queues (and,
    /// for an internal port, no options).
    fn plain_type(&self, ty: &str) -> Result<(), RequestError> {
        for (field, set) in [
            ("backend", self.backend.is_some()),
            ("queues", !self.queues.is_empty()),
            ("pcap_in", self.pcap_in.is_some()),
            ("pcap_out", self.pcap_out.is_some()),
            ("pcap_rate", self.pcap_rate.is_some()),
            ("options", ty == "internal" && !self.options.is_empty()),
        ] {
            if set {
                return Err(RequestError::new(
                    field,
                    None,
                    format!(
                        "a{} {ty} port takes no {field}",
                        if ty == "internal" { "n" } else { "" }
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A patch port's `peer`, checked as Open vSwitch checks it (its
    /// words).
    fn patch_peer(&self) -> Result<String, RequestError> {
        let n = &self.name;
        let peer = self
            .options
            .iter()
            .find(|(k, _)| k == "peer")
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty());
        let Some(peer) = peer else {
            return Err(RequestError::new(
                "options.peer",
                None,
                format!("{n}: patch type requires valid 'peer' argument"),
            ));
        };
        if self.options.len() > 1 {
            return Err(RequestError::new(
                "options",
                None,
                format!("{n}: patch type takes only a 'peer' argument"),
            ));
        }
        if &peer == n {
            return Err(RequestError::new(
                "options.peer",
                Some(&peer),
                format!("{n}: patch peer must not be self"),
            ));
        }
        Ok(peer)
    }

    /// A tunnel port's back end: its type and options; it takes nothing
    /// an interface takes.
    fn tunnel_backend(&self, ty: &str) -> Result<Backend, RequestError> {
        let proto = tunnel_proto(ty).ok_or_else(|| {
            RequestError::new(
                "type",
                Some(ty),
                format!("{ty:?} is not a port type ({TUNNEL_TYPES})"),
            )
        })?;
        for (field, set) in [
            ("backend", self.backend.is_some()),
            ("queues", !self.queues.is_empty()),
            ("pcap_in", self.pcap_in.is_some()),
            ("pcap_out", self.pcap_out.is_some()),
            ("pcap_rate", self.pcap_rate.is_some()),
        ] {
            if set {
                return Err(RequestError::new(
                    field,
                    None,
                    format!("a {ty} port takes no {field}"),
                ));
            }
        }
        tunnel_spec(
            proto,
            self.options.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .map(Backend::Tunnel)
        .map_err(|(k, p)| RequestError::new(&format!("options.{k}"), None, p))
    }

    /// A pcap port's captures. On another back end they are ignored, as a
    /// configuration file's always were (`add-port` refuses them while
    /// reading its words).
    fn pcap(&self, backend: Backend) -> Result<Option<PcapSpec>, RequestError> {
        let has = self.pcap_in.is_some() || self.pcap_out.is_some();
        if backend != Backend::Pcap {
            return Ok(None);
        }
        if !has {
            return Err(RequestError::new(
                "pcap_in",
                None,
                "a pcap port needs pcap_in, pcap_out or both",
            ));
        }
        if self.pcap_rate == Some(0) || (self.pcap_rate.is_some() && self.pcap_in.is_none()) {
            return Err(RequestError::new(
                "pcap_rate",
                None,
                "a rate above 0 frames/s, for a port with pcap_in",
            ));
        }
        Ok(Some(PcapSpec {
            input: self.pcap_in.clone(),
            output: self.pcap_out.clone(),
            rate: self.pcap_rate,
        }))
    }

    /// Egress queues: ids unique and not OFPQ_ALL, rates in range,
    /// `min_rate` not above `max_rate`.
    fn checked_queues(&self) -> Result<Vec<QueueSpec>, RequestError> {
        let mut ids = std::collections::HashSet::new();
        for (j, q) in self.queues.iter().enumerate() {
            if q.id == ofp::port::QUEUE_ALL || !ids.insert(q.id) {
                return Err(RequestError::new(
                    &format!("queues[{j}].id"),
                    None,
                    format!("{} is reserved or used twice", q.id),
                ));
            }
            for (field, v) in [("max_rate", q.max_rate), ("min_rate", q.min_rate)] {
                if v > MAX_QUEUE_RATE_KBPS {
                    return Err(RequestError::new(
                        &format!("queues[{j}].{field}"),
                        None,
                        format!("{v} kbit/s is above the largest rate, {MAX_QUEUE_RATE_KBPS} kbit/s (1 Pbit/s)"),
                    ));
                }
            }
            if q.max_rate != 0 && q.min_rate > q.max_rate {
                return Err(RequestError::new(
                    &format!("queues[{j}].min_rate"),
                    None,
                    "min_rate is above max_rate",
                ));
            }
        }
        Ok(self.queues.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    fn add_port(w: &[&str]) -> Result<PortSpec, String> {
        let r = PortRequest::from_words(&words(w), &[2]).map_err(|e| e.in_words())?;
        r.check(5, Backend::AfPacket { rings: true })
            .map_err(|e| e.in_words())
    }

    #[test]
    fn add_port_words_become_the_same_spec_as_a_file_entry() {
        let s = add_port(&["vx0", "type=vxlan", "options:remote_ip=flow", "key=7"]).unwrap();
        // A file's capture keys on another back end are ignored, as they
        // always were.
        let mut stray = PortRequest::named("eth1");
        stray.pcap_in = Some("/x".into());
        assert_eq!(stray.check(1, Backend::Local).unwrap().pcap, None);
        let mut file = PortRequest::named("vx0");
        file.port_type = Some("vxlan".into());
        file.options = vec![
            ("remote_ip".into(), "flow".into()),
            ("key".into(), "7".into()),
        ];
        assert_eq!(file.check(5, Backend::Local).unwrap(), s);
        let s = add_port(&["eth1", "backend=afxdp"]).unwrap();
        assert!(matches!(s.backend, Backend::AfXdp { .. }));
        let s = add_port(&["eth1"]).unwrap();
        assert_eq!(s.backend, Backend::AfPacket { rings: true });
        assert_eq!(s.port_no, 5);
    }

    #[test]
    fn refusals_name_the_field() {
        for (w, said) in [
            (
                &["eth1", "backend=netmap"][..],
                "backend=netmap: not a back end",
            ),
            (&["vx0", "type=gre"], "type=gre: not a port type"),
            (&["vx0", "type=vxlan"], "remote_ip: "),
            (
                &["vx0", "type=vxlan", "remote_ip=flow", "backend=afxdp"],
                "a vxlan port takes no backend, pcap_in or pcap_out",
            ),
            (
                &["eth1", "remote_ip=flow"],
                "remote_ip: a tunnel option; give type=",
            ),
            (
                &["eth1", "ofport=0"],
                "ofport=0: not a usable OpenFlow port number",
            ),
            (&["eth1", "ofport=x"], "ofport=x: not a usable"),
            (&["eth1", "ofport=2"], "ofport=2: the number is taken"),
            (
                &["a/b", "ofport=2"],
                "\"a/b\" is not a Linux interface name",
            ),
            (&["eth1", "color=red"], "color: no such option"),
            (&["eth1", "plain"], "\"plain\": expected KEY=VALUE"),
            (
                &["eth1", "pcap_in=/x"],
                "pcap_in/pcap_out go with backend=pcap",
            ),
            (
                &["eth1", "backend=pcap"],
                "pcap_in/pcap_out go with backend=pcap",
            ),
            (&[], "which interface?"),
        ] {
            let e = add_port(w).unwrap_err();
            assert!(e.starts_with(said), "{w:?}: {e}");
        }
    }

    #[test]
    fn patch_and_internal_ports_are_checked_as_open_vswitch_checks_them() {
        let s = add_port(&["patch-br-int-to-ln-public", "type=patch", "peer=x"]).unwrap();
        assert_eq!((s.backend, s.peer.as_deref()), (Backend::Patch, Some("x")));
        let s = add_port(&["p0", "type=patch", "options:peer=x"]).unwrap();
        assert_eq!(s.peer.as_deref(), Some("x"));
        let s = add_port(&["mgmt0", "type=internal"]).unwrap();
        assert_eq!((s.backend, s.peer), (Backend::Internal, None));
        for (w, said) in [
            (
                &["p0", "type=patch"][..],
                "peer: p0: patch type requires valid 'peer' argument",
            ),
            (
                &["p0", "type=patch", "peer=p0"],
                "peer=p0: p0: patch peer must not be self",
            ),
            (
                &["p0", "type=patch", "peer=x", "ttl=3"],
                "options: p0: patch type takes only a 'peer' argument",
            ),
            (&["p0", "peer=x"], "peer: a patch option; give type=patch"),
            (
                &["mgmt0", "type=internal", "key=3"],
                "options: an internal port takes no options",
            ),
            (
                &["a-very-long-name0", "type=internal"],
                "\"a-very-long-name0\" is not a Linux",
            ),
            (&["vx0", "type=gre"], "type=gre: not a port type"),
            (
                &["a b", "type=patch", "peer=x"],
                "name: \"a b\" is not a patch port's name",
            ),
        ] {
            let e = add_port(w).unwrap_err();
            assert!(e.starts_with(said), "{w:?}: {e}");
        }
        // A file's entry of type "system" is an interface.
        let mut r = PortRequest::named("eth1");
        r.port_type = Some("system".into());
        assert_eq!(r.check(1, Backend::Local).unwrap().backend, Backend::Local);
    }

    #[test]
    fn vlan_settings_from_words_and_their_refusals() {
        let s = add_port(&["eth1", "tag=10"]).unwrap();
        assert_eq!(s.vlan.tag, Some(10));
        let s = add_port(&["eth1", "trunks=20,10", "vlan_mode=trunk"]).unwrap();
        assert_eq!(s.vlan.trunks, [10, 20]);
        let s = add_port(&["eth1", "tag=5", "vlan_mode=native-untagged", "trunks=7"]).unwrap();
        assert_eq!(
            s.vlan.to_string(),
            "tag=5 trunks=7 vlan_mode=native-untagged"
        );
        assert!(add_port(&["eth1"]).unwrap().vlan.is_default());
        for (w, said) in [
            (&["eth1", "tag=x"][..], "tag=x: not a VLAN ID (0 to 4095)"),
            (&["eth1", "tag=4096"], "tag=4096: 4096 is not a VLAN ID"),
            (&["eth1", "trunks=1,a"], "trunks=1,a: VLAN IDs"),
            (
                &["eth1", "tag=1", "trunks=2"],
                "trunks=2: an access port carries",
            ),
            (
                &["eth1", "vlan_mode=dot1q-tunnel", "tag=3"],
                "vlan_mode=dot1q-tunnel: dot1q-tunnel is not supported",
            ),
        ] {
            let e = add_port(w).unwrap_err();
            assert!(e.starts_with(said), "{w:?}: {e}");
        }
    }

    #[test]
    fn queues_are_checked() {
        let mut r = PortRequest::named("eth1");
        let q = |id, min_rate, max_rate| QueueSpec {
            id,
            min_rate,
            max_rate,
        };
        r.queues = vec![q(1, 0, 100), q(1, 0, 0)];
        let e = r.check(1, Backend::Local).unwrap_err();
        assert_eq!(e.field, "queues[1].id");
        r.queues = vec![q(1, 200, 100)];
        assert_eq!(
            r.check(1, Backend::Local).unwrap_err().field,
            "queues[0].min_rate"
        );
        r.queues = vec![q(1, 0, MAX_QUEUE_RATE_KBPS + 1)];
        assert_eq!(
            r.check(1, Backend::Local).unwrap_err().field,
            "queues[0].max_rate"
        );
    }
}
