//! Starting and stopping a bridge's workers, at start and while the
//! daemon runs (bridges the database adds and removes).
//!
//! Each bridge's workers watch the bridge's own stop flag
//! ([`Running::stop`]); the daemon's stop sets every bridge's. A worker's
//! body runs guarded ([`health::guarded`]): a panic is logged, recorded
//! and stops the whole daemon.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use crate::health;
use crate::running::{self, Running};

/// What every bridge is started with.
pub struct Launcher {
    pub nullx: bool,
    pub no_local: bool,
    pub run_dir: std::path::PathBuf,
    pub tls: Option<tls::Tls>,
    pub set_log: datapath::SetLog,
    /// The daemon's stop flag (a dying worker sets it).
    pub stop: Arc<AtomicBool>,
    pub deaths: Arc<health::Deaths>,
}

impl Launcher {
    /// The options `running::build` takes.
    pub fn options(&self) -> running::Options<'_> {
        running::Options {
            nullx: self.nullx,
            no_local: self.no_local,
            run_dir: &self.run_dir,
            tls: self.tls.clone(),
            set_log: Some(self.set_log.clone()),
        }
    }

    /// Starts a built bridge's workers (their threads join `workers`).
    pub fn spawn(&self, r: &mut Running, workers: &mut Vec<health::Thread>) -> std::io::Result<()> {
        let (s, d, bridge) = (self.stop.clone(), self.deaths.clone(), r.name.clone());
        let guard: datapath::WorkerGuard = Arc::new(move |worker, body| {
            let who = health::Who::Worker {
                bridge: &bridge,
                worker,
            };
            health::guarded(&d, &s, who, body)
        });
        let cpus = r.cpus.clone();
        let stop = r.stop.clone();
        let unstarted = r.take_workers();
        for (name, handle) in datapath::spawn_workers(&r.name, unstarted, &cpus, &stop, &guard)? {
            workers.push(health::Thread { name, handle });
        }
        let port_list = r
            .bridge()
            .ports()
            .map(|s| format!("{}={}", s.name, running::port_label(s.port_no)))
            .collect::<Vec<_>>()
            .join(" ");
        tracing::info!(
            bridge = %r.name,
            datapath_id = %format!("{:#018x}", r.datapath_id),
            mode = if self.nullx { "nullx mode" } else { "pipeline" },
            workers = r.cpus.len(),
            ports = %port_list,
            "bridge running"
        );
        Ok(())
    }

    /// Stops a bridge while the daemon runs: its workers stop and are
    /// joined (at most 2 s), then its ports, sockets and LOCAL device
    /// close as it is dropped.
    pub fn remove(&self, r: Running, workers: &mut Vec<health::Thread>) {
        r.stop.store(true, Relaxed);
        let names: Vec<String> = (0..r.cpus.len())
            .map(|n| format!("{}-w{n}", r.name))
            .collect();
        let (mine, rest): (Vec<health::Thread>, Vec<health::Thread>) = std::mem::take(workers)
            .into_iter()
            .partition(|t| names.contains(&t.name));
        *workers = rest;
        for name in health::join_all(mine, Duration::from_secs(2)) {
            tracing::error!(thread = %name, "worker of a removed bridge did not stop within 2 s");
        }
        tracing::info!(bridge = %r.name, "bridge removed");
        drop(r);
    }
}
