//! The systemd service protocol, written by hand (a datagram to
//! `$NOTIFY_SOCKET`): `READY=1` once every bridge runs, `RELOADING=1` and
//! `READY=1` around a SIGHUP reload, `STOPPING=1` on the way out, and
//! `WATCHDOG=1` from the control loop at half the `WatchdogSec` interval,
//! so that a control thread that stops looping gets the daemon restarted.
//! Without `$NOTIFY_SOCKET` (not under systemd) every call does nothing.

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

/// The service manager's socket, if there is one.
pub struct Notify {
    sock: Option<(UnixDatagram, std::os::unix::net::SocketAddr)>,
    watchdog: Option<Duration>,
    last_ping: Instant,
}

impl Notify {
    /// Reads `$NOTIFY_SOCKET` and `$WATCHDOG_USEC` (and `$WATCHDOG_PID`:
    /// the watchdog is ours only if it names this process or nobody).
    pub fn from_env() -> Notify {
        let sock = std::env::var_os("NOTIFY_SOCKET").and_then(|path| {
            let path = path.to_string_lossy().into_owned();
            let addr = match path.strip_prefix('@') {
                Some(name) => {
                    use std::os::linux::net::SocketAddrExt;
                    std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).ok()?
                }
                None => std::os::unix::net::SocketAddr::from_pathname(&path).ok()?,
            };
            Some((UnixDatagram::unbound().ok()?, addr))
        });
        let ours = std::env::var("WATCHDOG_PID")
            .map_or(true, |p| p.trim() == std::process::id().to_string());
        let watchdog = std::env::var("WATCHDOG_USEC")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&us| us > 0 && ours)
            .map(|us| Duration::from_micros(us / 2));
        Notify {
            sock,
            watchdog,
            last_ping: Instant::now(),
        }
    }

    /// Sends `state` (e.g. `READY=1`); failures are logged at debug level.
    pub fn send(&self, state: &str) {
        if let Some((s, addr)) = &self.sock {
            if let Err(e) = s.send_to_addr(state.as_bytes(), addr) {
                tracing::debug!(error = %e, state, "sd_notify");
            }
        }
    }

    /// `RELOADING=1` with the monotonic time systemd asks for.
    pub fn reloading(&self) {
        let us = netdev::os::monotonic_usec();
        self.send(&format!("RELOADING=1\nMONOTONIC_USEC={us}"));
    }

    /// Pings the watchdog when half its interval has passed.
    pub fn watchdog(&mut self) {
        if let Some(every) = self.watchdog {
            if self.last_ping.elapsed() >= every {
                self.send("WATCHDOG=1");
                self.last_ping = Instant::now();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_reach_the_socket() {
        let dir = std::env::temp_dir().join(format!("sluice-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let _ = std::fs::remove_file(&path);
        let server = UnixDatagram::bind(&path).unwrap();
        let n = Notify {
            sock: Some((
                UnixDatagram::unbound().unwrap(),
                std::os::unix::net::SocketAddr::from_pathname(&path).unwrap(),
            )),
            watchdog: None,
            last_ping: Instant::now(),
        };
        n.send("READY=1");
        n.reloading();
        let mut buf = [0u8; 128];
        let k = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..k], b"READY=1");
        let k = server.recv(&mut buf).unwrap();
        assert!(std::str::from_utf8(&buf[..k])
            .unwrap()
            .starts_with("RELOADING=1\nMONOTONIC_USEC="));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
