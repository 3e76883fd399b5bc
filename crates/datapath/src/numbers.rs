//! Stable OpenFlow port numbers: an interface keeps its number across
//! restarts of the daemon, re-creation of the interface and
//! `del-port`/`add-port`, so that a controller's flows keep meaning the
//! same port.
//!
//! A number pinned in the configuration (`ofport`) always wins. Otherwise
//! the number an interface had last is remembered in a small state file,
//! `RUN_DIR/BRIDGE.ports` (one `NAME NUMBER` line per interface, written
//! whole and renamed into place), and given back while no other port holds
//! it; a name without a free remembered number gets the lowest number no
//! port of the bridge holds (so `--port a --port b` on a fresh host is 1
//! and 2, and names seen in other runs do not push new ones up). The file
//! lives in the run directory (the management socket's): numbers survive
//! restarts of the daemon, not of the host; pin them in the configuration
//! to survive both (as Open vSwitch's `ofport_request`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Remembered numbers of one bridge's interfaces.
#[derive(Debug, Default)]
pub struct PortNumbers {
    path: Option<PathBuf>,
    by_name: BTreeMap<String, u32>,
}

impl PortNumbers {
    /// Reads `path` (a missing or unreadable file is an empty memory;
    /// malformed lines are skipped with a warning).
    pub fn load(path: &Path) -> PortNumbers {
        let mut by_name = BTreeMap::new();
        if let Ok(text) = std::fs::read_to_string(path) {
            for (i, line) in text.lines().enumerate() {
                let mut w = line.split_whitespace();
                match (w.next(), w.next().map(str::parse::<u32>), w.next()) {
                    (Some(name), Some(Ok(no)), None) if valid(no) => {
                        by_name.insert(name.to_string(), no);
                    }
                    (None, _, _) => {}
                    _ => {
                        tracing::warn!(file = %path.display(), line = i + 1, "port numbers: line skipped (expected NAME NUMBER)")
                    }
                }
            }
        }
        PortNumbers {
            path: Some(path.to_path_buf()),
            by_name,
        }
    }

    /// The number `name` had last.
    pub fn get(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The number for `name`, given the numbers `taken` by other ports:
    /// the remembered one if free, else the lowest free one.
    pub fn choose(&self, name: &str, taken: &[u32]) -> Option<u32> {
        self.choose_in(name, &taken.iter().copied().collect())
    }

    /// [`PortNumbers::choose`] with the numbers taken in a set (many
    /// ports planned at once).
    pub fn choose_in(&self, name: &str, taken: &std::collections::HashSet<u32>) -> Option<u32> {
        if let Some(n) = self.get(name).filter(|n| !taken.contains(n)) {
            return Some(n);
        }
        (1..=ofp::port::port_no::MAX).find(|n| !taken.contains(n))
    }

    /// Remembers `name`'s number and writes the file (a failure to write
    /// is logged: the numbers then last until the daemon stops).
    pub fn remember(&mut self, name: &str, no: u32) {
        if self.by_name.get(name) == Some(&no) {
            return;
        }
        // A number belongs to one name.
        self.by_name.retain(|_, m| *m != no);
        self.by_name.insert(name.to_string(), no);
        if let Err(e) = self.save() {
            tracing::warn!(error = %e, "port numbers: could not save");
        }
    }

    fn save(&self) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let text: String = self
            .by_name
            .iter()
            .map(|(n, no)| format!("{n} {no}\n"))
            .collect();
        if let Some(dir) = path.parent().filter(|d| !d.exists()) {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let tmp = path.with_extension("ports.tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)
    }

    /// Gives the ports of `specs` whose number the configuration did not
    /// pin (`pinned`) their remembered numbers where free, then remembers
    /// every port's number.
    pub fn assign(&mut self, specs: &mut [crate::PortSpec], pinned: &[u32]) {
        let mut taken: Vec<u32> = pinned.to_vec();
        let free: Vec<usize> = (0..specs.len())
            .filter(|&i| !pinned.contains(&specs[i].port_no))
            .collect();
        // Remembered numbers first, so that a new name cannot take one.
        let mut rest = Vec::new();
        for &i in &free {
            match self.get(&specs[i].name).filter(|n| !taken.contains(n)) {
                Some(n) => {
                    specs[i].port_no = n;
                    taken.push(n);
                }
                None => rest.push(i),
            }
        }
        for i in rest {
            if let Some(n) = self.choose(&specs[i].name, &taken) {
                specs[i].port_no = n;
                taken.push(n);
            }
        }
        for s in specs.iter() {
            if s.port_no != ofp::port::port_no::LOCAL {
                self.remember(&s.name, s.port_no);
            }
        }
    }
}

fn valid(no: u32) -> bool {
    (1..=ofp::port::port_no::MAX).contains(&no)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Backend, PortSpec};

    fn spec(no: u32, name: &str) -> PortSpec {
        PortSpec::new(no, name, Backend::AfPacket { rings: true })
    }

    #[test]
    fn numbers_survive_a_restart_and_a_reordered_config() {
        let dir = std::env::temp_dir().join(format!("sluice-portnums-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("br0.ports");
        let _ = std::fs::remove_file(&path);
        let mut n = PortNumbers::load(&path);
        let mut specs = vec![spec(1, "a"), spec(2, "b"), spec(3, "c")];
        n.assign(&mut specs, &[]);
        // Next start: "a" is gone from the config, "d" is new, and the
        // config numbered the rest from 1 again.
        let mut n = PortNumbers::load(&path);
        let mut specs = vec![spec(1, "c"), spec(2, "d"), spec(3, "b")];
        n.assign(&mut specs, &[]);
        let got: Vec<(&str, u32)> = specs.iter().map(|s| (s.name.as_str(), s.port_no)).collect();
        // c and b keep theirs; d takes the lowest free number.
        assert_eq!(got, vec![("c", 3), ("d", 1), ("b", 2)]);
        // A pinned number wins over a remembered one.
        let mut specs = vec![spec(3, "b"), spec(1, "c")];
        n.assign(&mut specs, &[3]);
        assert_eq!(specs[0].port_no, 3);
        // c's 3 is pinned by b: the lowest free.
        assert_eq!(specs[1].port_no, 1);
        assert_eq!(n.get("c"), Some(1));
        assert_eq!(n.get("d"), None, "its number went to c");
        // Names of other runs do not push a new name up.
        assert_eq!(n.choose("zz", &[3]), Some(1));
        std::fs::write(&path, "ok 9\ngarbage\nbad x\n\n").unwrap();
        let n = PortNumbers::load(&path);
        assert_eq!(n.get("ok"), Some(9));
        assert_eq!(n.get("bad"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
