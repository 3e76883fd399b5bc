//! Standing in for Open vSwitch's `ovs-vswitchd` on a host (`--ovs`):
//! where its files go, and its pidfile.
//!
//! Open vSwitch's tools find the daemon through its run directory
//! (`$OVS_RUNDIR`, else the one it was built with, `/var/run/openvswitch`
//! on Debian): `ovs-appctl` reads `RUNDIR/ovs-vswitchd.pid` and connects
//! to `RUNDIR/ovs-vswitchd.PID.ctl`; `ovs-ofctl ... br0` connects to
//! `RUNDIR/br0.mgmt`. So with `--ovs` sluice's run directory (where its
//! bridges' `BRIDGE.mgmt` sockets already go) is that one, and it writes
//! the pidfile and serves unixctl on that socket.
//!
//! The pidfile is written as Open vSwitch writes its own, because
//! `ovs-appctl` trusts it only so: the number and a newline, in a file
//! the daemon holds a POSIX record lock (`fcntl`) on for its whole life
//! (the tools ask who holds it with `F_GETLK` and compare). It is made
//! under a temporary name and renamed into place, so no reader sees it
//! half-written; one whose lock nobody holds is stale and replaced; one
//! a live process holds is an error (two daemons on one run directory).
//! It is removed when the [`Pidfile`] is dropped, if it is still ours.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Where Debian's Open vSwitch keeps its sockets and pidfiles.
pub const DEFAULT_RUNDIR: &str = "/var/run/openvswitch";

/// The run directory Open vSwitch's tools use: `$OVS_RUNDIR` or
/// [`DEFAULT_RUNDIR`].
pub fn rundir() -> PathBuf {
    std::env::var_os("OVS_RUNDIR")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_RUNDIR), PathBuf::from)
}

/// `RUNDIR/ovs-vswitchd.PID.ctl`, where `ovs-appctl` looks.
pub fn ctl_path(rundir: &Path) -> PathBuf {
    rundir.join(format!("ovs-vswitchd.{}.ctl", std::process::id()))
}

/// `RUNDIR/ovs-vswitchd.pid`.
pub fn pidfile_path(rundir: &Path) -> PathBuf {
    rundir.join("ovs-vswitchd.pid")
}

/// The daemon's pidfile, locked while it lives.
pub struct Pidfile {
    path: PathBuf,
    /// Held open: closing any descriptor of the file would drop the lock.
    file: File,
}

impl Pidfile {
    /// Writes and locks the pidfile at `path` (see the module docs).
    pub fn create(path: &Path) -> Result<Pidfile, String> {
        let shown = path.display();
        if let Ok(old) = OpenOptions::new().read(true).write(true).open(path) {
            if let Ok(Some(pid)) = netdev::os::record_lock_holder(&old) {
                return Err(format!(
                    "{shown}: process {pid} holds it (another ovs-vswitchd, or sluice --ovs, uses this run directory)"
                ));
            }
        }
        let tmp = path.with_extension("pid.tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        let made = netdev::os::lock_record(&file)
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .and_then(|()| file.flush())
            .and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = made {
            let _ = std::fs::remove_file(&tmp);
            return Err(format!("{shown}: {e}"));
        }
        Ok(Pidfile {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Pidfile {
    fn drop(&mut self) {
        // Only our own file: another daemon may have replaced it.
        let ours = match (std::fs::metadata(&self.path), self.file.metadata()) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        };
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pidfile_holds_our_pid_is_replaced_when_stale_and_removed_at_drop() {
        let dir = std::env::temp_dir().join(format!("sluice-pidfile-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = pidfile_path(&dir);
        // A stale one (nobody holds its lock) is replaced.
        std::fs::write(&path, "999999\n").unwrap();
        let p = Pidfile::create(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{}\n", std::process::id())
        );
        assert!(!path.with_extension("pid.tmp").exists());
        drop(p);
        assert!(!path.exists());
        // One replaced by someone else is not removed.
        let p = Pidfile::create(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "1\n").unwrap();
        drop(p);
        assert!(path.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rundir_as_open_vswitchs_tools_resolve_it() {
        // Read only: the environment is the process's, shared by tests.
        let want = std::env::var_os("OVS_RUNDIR")
            .filter(|v| !v.is_empty())
            .map_or_else(|| PathBuf::from(DEFAULT_RUNDIR), PathBuf::from);
        assert_eq!(rundir(), want);
        assert_eq!(
            ctl_path(Path::new("/r")),
            PathBuf::from(format!("/r/ovs-vswitchd.{}.ctl", std::process::id()))
        );
    }
}
