//! Listening sockets: TCP (plain or TLS) and Unix (controllers, or the
//! bridge's management socket), what each holds, and how a Unix socket is
//! made private.

use std::net::TcpListener;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;

pub(super) enum Listener {
    /// The flag: connections speak TLS.
    Tcp(TcpListener, bool),
    /// The flag: connections are service connections (management socket).
    Unix(UnixListener, PathBuf, bool),
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, p, _) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// After an accept(2) error other than "nothing to accept" (EMFILE,
/// ENFILE, ENOBUFS...), the listener rests this long instead of being
/// polled again at once, which would spin the control thread.
pub(super) const ACCEPT_BACKOFF_NS: u64 = 200_000_000;

/// A listener's connections and health.
#[derive(Default)]
pub(super) struct ListenerState {
    pub(super) live: usize,
    /// Not polled before this (after an accept error).
    pub(super) resting_until_ns: u64,
}

/// Binds a Unix socket for `punix:` or the management socket: its
/// directory is created private (0700) when it does not exist; a leftover
/// socket nobody answers on is replaced, but anything else at the path
/// (a regular file, a live socket) is an error; the socket is made 0600
/// (only the daemon's user may drive the switch through it).
pub(super) fn bind_unix(path: &std::path::Path) -> Result<UnixListener, String> {
    use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
    let shown = path.display();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| format!("punix:{shown}: creating {}: {e}", dir.display()))?;
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => {
            if UnixStream::connect(path).is_ok() {
                return Err(format!(
                    "punix:{shown}: another process answers on this socket"
                ));
            }
            std::fs::remove_file(path)
                .map_err(|e| format!("punix:{shown}: removing a stale socket: {e}"))?;
        }
        Ok(_) => {
            return Err(format!(
                "punix:{shown}: the path exists and is not a socket; not replacing it"
            ))
        }
        Err(_) => {}
    }
    // Born 0600: no moment at which the umask's mode lets others in (and
    // no reader sees the socket before its mode is final). Only the control
    // thread creates files, so the process-wide umask is not raced.
    let bound = netdev::os::with_umask(0o177, || UnixListener::bind(path));
    let l = bound.map_err(|er| format!("punix:{shown}: {er}"))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| format!("punix:{shown}: {e}"))?;
    l.set_nonblocking(true).map_err(|er| er.to_string())?;
    Ok(l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn unix_sockets_are_private_and_only_stale_sockets_are_replaced() {
        let base = std::env::temp_dir().join(format!("sluice-bind-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("run");
        let path = dir.join("br0.mgmt");
        let l = bind_unix(&path).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700, "a run directory it creates is private");
        assert_eq!(mode(&path), 0o600, "the socket is the daemon user's only");
        // Live: someone answers on it.
        assert!(bind_unix(&path)
            .unwrap_err()
            .contains("another process answers"));
        // Stale: nobody answers (the listener is gone, the file stays).
        drop(l);
        assert!(path.exists());
        assert!(bind_unix(&path).is_ok());
        // Not a socket: never removed.
        let file = dir.join("notes.txt");
        std::fs::write(&file, "keep me").unwrap();
        assert!(bind_unix(&file).unwrap_err().contains("is not a socket"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
        std::fs::remove_dir_all(&base).unwrap();
    }
}
