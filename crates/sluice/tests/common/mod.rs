//! What the daemon's integration tests share.

use std::path::PathBuf;
use std::process::Child;

/// A running daemon and its temporary directory: both go when dropped
/// (the process is ended by its own handle, the directory removed).
pub struct Daemon {
    pub child: Child,
    pub dir: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
