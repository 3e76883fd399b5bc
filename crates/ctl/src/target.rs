//! Where the switch is: `BRIDGE` (its management socket,
//! `RUN_DIR/BRIDGE.mgmt`, [`run_dirs`]), `unix:PATH`, `tcp:HOST:PORT` (a switch
//! listening with `ptcp:`) or `tls:HOST:PORT` / `ssl:HOST:PORT` (a switch
//! listening with `ptls:`; needs `--private-key`, `--certificate` and
//! `--ca-cert`), as ovs-ofctl spells them.

use std::fmt;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// The default directory of management sockets (the daemon's `--run-dir`).
pub const RUN_DIR: &str = "/run/sluice";

/// Open vSwitch's run directory when `OVS_RUNDIR` is not set (where
/// `sluice --ovs` puts its sockets, as ovs-vswitchd does).
pub const OVS_RUN_DIR: &str = "/var/run/openvswitch";

/// Where to look for a bridge's management socket, in order: `--run-dir`
/// alone when given; else `$OVS_RUNDIR` when set (as ovs-ofctl looks,
/// and `sluice --ovs` puts its sockets there), then sluice's own
/// [`RUN_DIR`], then Open vSwitch's default [`OVS_RUN_DIR`] when
/// `OVS_RUNDIR` is not set. A bridge name is the first directory's socket
/// that exists, so one command finds a daemon started either way.
pub fn run_dirs(given: Option<&str>, ovs_rundir: Option<&str>) -> Vec<PathBuf> {
    match (given, ovs_rundir) {
        (Some(d), _) => vec![d.into()],
        (None, Some(o)) if !o.is_empty() => vec![o.into(), RUN_DIR.into()],
        (None, _) => vec![RUN_DIR.into(), OVS_RUN_DIR.into()],
    }
}

/// A switch endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Unix(PathBuf),
    Tcp(String),
    Tls(String),
}

impl Target {
    /// Reads a target: `unix:PATH`, `tcp:HOST:PORT`, a path (contains a
    /// `/`), or a bridge name (its management socket in the first of
    /// `run_dirs` that has it, else in the first: [`run_dirs`]).
    pub fn parse(s: &str, run_dirs: &[PathBuf]) -> Result<Target, String> {
        if let Some(p) = s.strip_prefix("unix:") {
            if p.is_empty() {
                return Err(format!("{s:?}: unix: needs a path"));
            }
            return Ok(Target::Unix(p.into()));
        }
        for (scheme, tls) in [("tcp", false), ("tls", true), ("ssl", true)] {
            let Some(hp) = s.strip_prefix(scheme).and_then(|r| r.strip_prefix(':')) else {
                continue;
            };
            let ok = hp
                .rsplit_once(':')
                .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
            if !ok {
                return Err(format!("{s:?}: expected {scheme}:HOST:PORT"));
            }
            return Ok(if tls {
                Target::Tls(hp.to_string())
            } else {
                Target::Tcp(hp.to_string())
            });
        }
        if s.contains('/') {
            return Ok(Target::Unix(s.into()));
        }
        let name_ok = !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
        if !name_ok || s.contains(':') {
            return Err(format!(
                "{s:?}: expected a bridge name, unix:PATH, tcp:HOST:PORT or tls:HOST:PORT"
            ));
        }
        let sock = format!("{s}.mgmt");
        let found = run_dirs.iter().map(|d| d.join(&sock)).find(|p| p.exists());
        let first = run_dirs.first().cloned().unwrap_or_else(|| RUN_DIR.into());
        Ok(Target::Unix(found.unwrap_or_else(|| first.join(&sock))))
    }

    /// Opens a non-blocking stream to the target; `tls` is the identity
    /// for `tls:` targets.
    pub fn open(&self, timeout: Duration, tls: Option<&tls::Tls>) -> io::Result<Stream> {
        let tcp = |hp: &str| -> io::Result<TcpStream> {
            let addr = hp
                .to_socket_addrs()?
                .next()
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address for host"))?;
            let t = TcpStream::connect_timeout(&addr, timeout)?;
            t.set_nodelay(true)?;
            t.set_nonblocking(true)?;
            Ok(t)
        };
        match self {
            Target::Unix(p) => {
                let s = UnixStream::connect(p)?;
                s.set_nonblocking(true)?;
                Ok(Stream::Unix(s))
            }
            Target::Tcp(hp) => Ok(Stream::Tcp(tcp(hp)?)),
            Target::Tls(hp) => {
                let id = tls.ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "a tls: target needs --private-key, --certificate and --ca-cert",
                    )
                })?;
                let host = hp.rsplit_once(':').map_or(hp.as_str(), |(h, _)| h);
                let name = tls::server_name(host)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
                let s = tls::TlsStream::client(tcp(hp)?, id.client.clone(), name)?;
                Ok(Stream::Tls(Box::new(s)))
            }
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Unix(p) => write!(f, "unix:{}", p.display()),
            Target::Tcp(hp) => write!(f, "tcp:{hp}"),
            Target::Tls(hp) => write!(f, "tls:{hp}"),
        }
    }
}

/// An open connection.
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
    Tls(Box<tls::TlsStream>),
}

impl Stream {
    pub(crate) fn read_bytes(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::io::Read;
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }

    pub(crate) fn write_bytes(&mut self, buf: &[u8]) -> io::Result<usize> {
        use std::io::Write;
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    /// Whether the transport itself has bytes to write (TLS records).
    pub(crate) fn wants_write(&self) -> bool {
        matches!(self, Stream::Tls(s) if s.wants_write())
    }

    /// Writes what the transport itself holds (TLS records), as far as
    /// the socket takes them now.
    pub(crate) fn flush_tls(&mut self) -> io::Result<()> {
        match self {
            Stream::Tls(s) => match s.flush_tls() {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
                r => r,
            },
            _ => Ok(()),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Tls(s) => s.as_raw_fd(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bridge_is_found_where_its_socket_is() {
        let d = std::env::temp_dir().join(format!("sluice-ctl-rundir-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let ovs = d.to_str().unwrap();
        // --run-dir alone when given.
        assert_eq!(run_dirs(Some("/x"), Some(ovs)), vec![PathBuf::from("/x")]);
        // OVS_RUNDIR first; a socket there is found, else the first dir.
        let dirs = run_dirs(None, Some(ovs));
        assert_eq!(dirs, vec![d.clone(), PathBuf::from(RUN_DIR)]);
        assert_eq!(
            Target::parse("brq", &dirs).unwrap(),
            Target::Unix(d.join("brq.mgmt"))
        );
        std::fs::write(d.join("brq.mgmt"), b"").unwrap();
        assert_eq!(
            Target::parse("brq", &run_dirs(Some("/nowhere"), None)).unwrap(),
            Target::Unix("/nowhere/brq.mgmt".into())
        );
        let dirs = [PathBuf::from("/nowhere"), d.clone()];
        assert_eq!(
            Target::parse("brq", &dirs).unwrap(),
            Target::Unix(d.join("brq.mgmt"))
        );
        // Neither set: sluice's, then Open vSwitch's default.
        assert_eq!(
            run_dirs(None, None),
            vec![PathBuf::from(RUN_DIR), PathBuf::from(OVS_RUN_DIR)]
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn targets() {
        assert_eq!(
            Target::parse("br0", &[PathBuf::from(RUN_DIR)]).unwrap(),
            Target::Unix("/run/sluice/br0.mgmt".into())
        );
        assert_eq!(
            Target::parse("unix:/tmp/x", &[PathBuf::from(RUN_DIR)]).unwrap(),
            Target::Unix("/tmp/x".into())
        );
        assert_eq!(
            Target::parse("tcp:127.0.0.1:6653", &[PathBuf::from(RUN_DIR)]).unwrap(),
            Target::Tcp("127.0.0.1:6653".into())
        );
        assert_eq!(
            Target::parse("ssl:127.0.0.1:6653", &[PathBuf::from(RUN_DIR)]).unwrap(),
            Target::Tls("127.0.0.1:6653".into())
        );
        assert_eq!(
            Target::parse("tls:localhost:6653", &[PathBuf::from(RUN_DIR)]).unwrap(),
            Target::Tls("localhost:6653".into())
        );
        for bad in [
            "tcp:1.2.3.4",
            "tcp::80",
            "unix:",
            "",
            "br 0",
            "ssl:x",
            "tls::1",
        ] {
            assert!(
                Target::parse(bad, &[PathBuf::from(RUN_DIR)]).is_err(),
                "{bad}"
            );
        }
    }
}
