//! Connection methods ("remotes") as `ovsdb-server --remote` and
//! `ovs-vsctl --db` spell them (ovsdb(7), "Connection Methods").
//!
//! Active: `unix:FILE`, `tcp:IP[:PORT]`, `ssl:IP[:PORT]`.
//! Passive: `punix:FILE`, `ptcp:[PORT][:IP]`, `pssl:[PORT][:IP]`.
//!
//! As in Open vSwitch: the port defaults to 6640; a passive TCP remote
//! without an address listens on every IPv4 address (`0.0.0.0`; `[::]`
//! takes IPv6 too); an IPv6 address is written in brackets
//! (`tcp:[::1]:6640`, `ptcp:6640:[::1]`). Not taken: DNS names (Open
//! vSwitch needs its optional `unbound` build for them), IPv6 scopes
//! (`%eth0`), comma-separated lists of remotes (clustering) and the
//! server's `db:DB,TABLE,COLUMN` (its owner expands those).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

/// The port a TCP remote without one uses.
pub const DEFAULT_PORT: u16 = 6640;

/// A parsed connection method.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Remote {
    /// `unix:FILE`: connect to a Unix socket.
    Unix(PathBuf),
    /// `tcp:IP[:PORT]`.
    Tcp(SocketAddr),
    /// `ssl:IP[:PORT]`: TCP with TLS.
    Ssl(SocketAddr),
    /// `punix:FILE`: listen on a Unix socket.
    PUnix(PathBuf),
    /// `ptcp:[PORT][:IP]`.
    PTcp(SocketAddr),
    /// `pssl:[PORT][:IP]`.
    PSsl(SocketAddr),
}

const EXPECTED: &str = "expected unix:FILE, tcp:IP[:PORT], ssl:IP[:PORT], \
                        punix:FILE, ptcp:[PORT][:IP] or pssl:[PORT][:IP]";

fn port(s: &str, text: &str) -> Result<u16, String> {
    if text.is_empty() {
        return Ok(DEFAULT_PORT);
    }
    text.parse()
        .map_err(|_| format!("{s:?}: {text:?} is not a port number (0 to 65535)"))
}

/// An IP address, IPv6 in brackets.
fn ip(s: &str, text: &str) -> Result<IpAddr, String> {
    if let Some(inner) = text.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
        return inner
            .parse::<std::net::Ipv6Addr>()
            .map(IpAddr::V6)
            .map_err(|_| format!("{s:?}: {inner:?} is not an IPv6 address"));
    }
    if text.parse::<std::net::Ipv6Addr>().is_ok() {
        return Err(format!(
            "{s:?}: write the IPv6 address {text:?} in brackets, as [{text}]"
        ));
    }
    text.parse::<Ipv4Addr>()
        .map(IpAddr::V4)
        .map_err(|_| format!("{s:?}: {text:?} is not an IP address (names are not resolved)"))
}

/// Splits `IP[:PORT]` where the IP may be `[v6]`.
fn split_ip_port(text: &str) -> (&str, &str) {
    if text.starts_with('[') {
        match text.find(']') {
            Some(end) => {
                let (addr, rest) = text.split_at(end + 1);
                (addr, rest.strip_prefix(':').unwrap_or(rest))
            }
            None => (text, ""),
        }
    } else {
        text.split_once(':').unwrap_or((text, ""))
    }
}

impl Remote {
    /// Parses a connection method; the error quotes the text and names
    /// what is wrong with it.
    pub fn parse(s: &str) -> Result<Remote, String> {
        let Some((kind, rest)) = s.split_once(':') else {
            return Err(format!("{s:?}: {EXPECTED}"));
        };
        let active = |rest: &str| -> Result<SocketAddr, String> {
            let (addr, p) = split_ip_port(rest);
            if addr.is_empty() {
                return Err(format!("{s:?}: {kind}: needs an IP address"));
            }
            if rest.starts_with('[')
                && !rest[addr.len()..].is_empty()
                && !rest[addr.len()..].starts_with(':')
            {
                return Err(format!(
                    "{s:?}: unexpected {:?} after the address",
                    &rest[addr.len()..]
                ));
            }
            Ok(SocketAddr::new(ip(s, addr)?, port(s, p)?))
        };
        let passive = |rest: &str| -> Result<SocketAddr, String> {
            let (p, addr) = rest.split_once(':').unwrap_or((rest, ""));
            let addr = if addr.is_empty() {
                IpAddr::V4(Ipv4Addr::UNSPECIFIED)
            } else {
                ip(s, addr)?
            };
            Ok(SocketAddr::new(addr, port(s, p)?))
        };
        let path = |rest: &str| {
            if rest.is_empty() {
                Err(format!("{s:?}: {kind}: needs a file name"))
            } else {
                Ok(PathBuf::from(rest))
            }
        };
        match kind {
            "unix" => path(rest).map(Remote::Unix),
            "punix" => path(rest).map(Remote::PUnix),
            "tcp" => active(rest).map(Remote::Tcp),
            "ssl" => active(rest).map(Remote::Ssl),
            "ptcp" => passive(rest).map(Remote::PTcp),
            "pssl" => passive(rest).map(Remote::PSsl),
            _ => Err(format!(
                "{s:?}: unknown connection method {kind:?}; {EXPECTED}"
            )),
        }
    }

    /// Whether this remote listens (`punix`, `ptcp`, `pssl`).
    pub fn is_passive(&self) -> bool {
        matches!(self, Remote::PUnix(_) | Remote::PTcp(_) | Remote::PSsl(_))
    }

    /// Whether this remote needs a TLS identity.
    pub fn is_ssl(&self) -> bool {
        matches!(self, Remote::Ssl(_) | Remote::PSsl(_))
    }
}

impl std::str::FromStr for Remote {
    type Err = String;
    fn from_str(s: &str) -> Result<Remote, String> {
        Remote::parse(s)
    }
}

impl fmt::Display for Remote {
    /// The canonical spelling (port and address always written), which
    /// parses back to the same remote.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bracket = |a: &SocketAddr| match a.ip() {
            IpAddr::V4(ip) => ip.to_string(),
            IpAddr::V6(ip) => format!("[{ip}]"),
        };
        match self {
            Remote::Unix(p) => write!(f, "unix:{}", p.display()),
            Remote::PUnix(p) => write!(f, "punix:{}", p.display()),
            Remote::Tcp(a) => write!(f, "tcp:{}:{}", bracket(a), a.port()),
            Remote::Ssl(a) => write!(f, "ssl:{}:{}", bracket(a), a.port()),
            Remote::PTcp(a) => write!(f, "ptcp:{}:{}", a.port(), bracket(a)),
            Remote::PSsl(a) => write!(f, "pssl:{}:{}", a.port(), bracket(a)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn every_method_as_open_vswitch_spells_it() {
        let ok = |s: &str| Remote::parse(s).unwrap();
        assert_eq!(ok("unix:/run/db.sock"), Remote::Unix("/run/db.sock".into()));
        assert_eq!(ok("punix:db.sock"), Remote::PUnix("db.sock".into()));
        assert_eq!(ok("tcp:10.0.0.1:6641"), Remote::Tcp(sa("10.0.0.1:6641")));
        assert_eq!(ok("tcp:10.0.0.1"), Remote::Tcp(sa("10.0.0.1:6640")));
        assert_eq!(ok("ssl:[::1]:6642"), Remote::Ssl(sa("[::1]:6642")));
        assert_eq!(ok("ssl:[::1]"), Remote::Ssl(sa("[::1]:6640")));
        assert_eq!(ok("ptcp:6641"), Remote::PTcp(sa("0.0.0.0:6641")));
        assert_eq!(
            ok("ptcp:6641:127.0.0.1"),
            Remote::PTcp(sa("127.0.0.1:6641"))
        );
        assert_eq!(ok("ptcp:"), Remote::PTcp(sa("0.0.0.0:6640")));
        assert_eq!(ok("ptcp::[::]"), Remote::PTcp(sa("[::]:6640")));
        assert_eq!(ok("pssl:6640:[::1]"), Remote::PSsl(sa("[::1]:6640")));
        assert!(ok("pssl:1").is_passive() && ok("pssl:1").is_ssl());
        assert!(!ok("tcp:1.2.3.4").is_passive());
    }

    #[test]
    fn display_parses_back() {
        for s in [
            "unix:/a b",
            "punix:x",
            "tcp:[::1]",
            "ssl:1.2.3.4:5",
            "ptcp:6641",
            "pssl:1:[fe80::1]",
        ] {
            let r = Remote::parse(s).unwrap();
            assert_eq!(Remote::parse(&r.to_string()), Ok(r.clone()), "{s} -> {r}");
        }
    }

    #[test]
    fn errors_name_the_problem() {
        let e = |s: &str| Remote::parse(s).unwrap_err();
        assert!(e("db.sock").contains("expected unix:FILE"));
        assert!(e("udp:1.2.3.4").contains("unknown connection method \"udp\""));
        assert!(e("unix:").contains("needs a file name"));
        assert!(e("tcp:").contains("needs an IP address"));
        assert!(e("tcp:1.2.3.4:http").contains("\"http\" is not a port number"));
        assert!(e("ptcp:70000").contains("\"70000\" is not a port number"));
        assert!(e("tcp:example.com:6640").contains("names are not resolved"));
        assert!(e("tcp:[::1:6640").contains("is not an IP address"));
        assert!(e("ptcp:6640:::1").contains("in brackets"));
        assert!(e("tcp:[zz]:1").contains("\"zz\" is not an IPv6 address"));
        assert!(e("tcp:[::1]x").contains("unexpected \"x\""));
    }
}
