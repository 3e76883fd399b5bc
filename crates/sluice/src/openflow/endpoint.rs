//! The endpoints a bridge connects to or listens on, as Open vSwitch
//! spells them: `tcp:`/`tls:` (`ssl:`) HOST:PORT, `ptcp:`/`ptls:` (`pssl:`)
//! PORT[:IP] (loopback without an address) and `punix:PATH`.

use std::net::SocketAddr;
use std::path::PathBuf;

/// A parsed endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Tcp(String),
    PTcp(SocketAddr),
    /// `tls:HOST:PORT` (`ssl:` is the same).
    Tls(String),
    /// `ptls:PORT[:IP]` (`pssl:` is the same).
    PTls(SocketAddr),
    PUnix(PathBuf),
    /// The bridge's management socket: a `punix` whose connections are
    /// tools (sluice-ctl, ovs-ofctl), not controllers — they do not end
    /// standalone fail mode. Never parsed from text.
    Mgmt(PathBuf),
}

impl Endpoint {
    /// Parses `tcp:HOST:PORT`, `tls:HOST:PORT`, `ptcp:PORT[:IP]`,
    /// `ptls:PORT[:IP]` or `punix:PATH` (`ssl`/`pssl` for `tls`/`ptls`).
    pub fn parse(s: &str) -> Result<Endpoint, String> {
        const EXPECTED: &str =
            "expected tcp:HOST:PORT, tls:HOST:PORT, ptcp:PORT[:IP], ptls:PORT[:IP] or punix:PATH";
        let (kind, rest) = s
            .split_once(':')
            .ok_or_else(|| format!("{s:?}: {EXPECTED}"))?;
        let host_port = |rest: &str| {
            if rest
                .rsplit_once(':')
                .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
            {
                return Err(format!("{s:?}: expected {kind}:HOST:PORT"));
            }
            Ok(rest.to_string())
        };
        let listen_addr = |rest: &str| {
            // Without an address: loopback only (listening on every
            // interface must be asked for, e.g. ptcp:6653:0.0.0.0).
            let (port, ip) = rest.split_once(':').unwrap_or((rest, "127.0.0.1"));
            let port: u16 = port
                .parse()
                .map_err(|_| format!("{s:?}: {port:?} is not a port number"))?;
            let ip: std::net::IpAddr = ip
                .parse()
                .map_err(|_| format!("{s:?}: {ip:?} is not an IP address"))?;
            Ok::<_, String>(SocketAddr::new(ip, port))
        };
        match kind {
            "tcp" => host_port(rest).map(Endpoint::Tcp),
            "tls" | "ssl" => host_port(rest).map(Endpoint::Tls),
            "ptcp" => listen_addr(rest).map(Endpoint::PTcp),
            "ptls" | "pssl" => listen_addr(rest).map(Endpoint::PTls),
            "punix" if !rest.is_empty() => Ok(Endpoint::PUnix(PathBuf::from(rest))),
            _ => Err(format!("{s:?}: {EXPECTED}")),
        }
    }

    /// Whether this endpoint connects out (a controller) rather than listens.
    pub fn is_active(&self) -> bool {
        matches!(self, Endpoint::Tcp(_) | Endpoint::Tls(_))
    }

    /// Whether this endpoint needs the daemon's TLS identity.
    pub fn is_tls(&self) -> bool {
        matches!(self, Endpoint::Tls(_) | Endpoint::PTls(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptcp_without_an_address_listens_on_loopback_only() {
        assert_eq!(
            Endpoint::parse("ptcp:6653").unwrap(),
            Endpoint::PTcp("127.0.0.1:6653".parse().unwrap())
        );
        assert_eq!(
            Endpoint::parse("ptcp:6653:0.0.0.0").unwrap(),
            Endpoint::PTcp("0.0.0.0:6653".parse().unwrap())
        );
        assert_eq!(
            Endpoint::parse("ptls:6653").unwrap(),
            Endpoint::PTls("127.0.0.1:6653".parse().unwrap())
        );
    }
}
