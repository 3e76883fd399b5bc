//! The daemon's threads are never dead in silence.
//!
//! Choice (issue 11, "a dead worker is never silent"): when a worker thread
//! (or the metrics thread) panics, the daemon **exits loudly** rather than
//! restarting the thread in place. The panic is logged at error level with
//! the bridge, the worker and the panic message (and where it happened),
//! every other thread is told to stop, the counters are printed, the
//! control sockets are closed, and the process exits with status 70
//! (`EX_SOFTWARE`) so that its service manager (systemd `Restart=on-failure`)
//! starts a fresh one. Why not restart the worker: a worker owns its port
//! handles (ring mappings, fanout membership, AF_XDP sockets) and they are
//! dropped while it unwinds; rebuilding them in a running bridge is a
//! second start-up path that would itself need testing for every back end,
//! and a panic means an invariant broke somewhere that a restart of one
//! thread would not repair (the pipeline snapshot and MAC table it shares
//! are still there). A fresh process comes back in well under a second
//! with the configured flows, and controllers reconnect (`secure` mode
//! keeps their flows out of the switch until they do; `standalone` mode
//! forwards again at once).
//!
//! How a death is seen: each worker's and the metrics thread's body runs
//! under [`guarded`], which catches the unwind, logs it and sets the
//! daemon's stop flag; the main loop also notices a worker thread that
//! ended while the daemon runs (`JoinHandle::is_finished`), in case
//! anything ends a thread without unwinding through `guarded`. The
//! control thread (the main thread) runs under [`catch`]: a panic there is
//! logged the same way and the process exits 70 at once (the workers end
//! with it). A worker that is alive but stuck is seen
//! through its heartbeat (`BridgeCounters::heartbeat_ns`): the main loop
//! logs a warning when it is over [`STALL_NS`] old, and the metrics
//! endpoint reports `sluice_worker_up` and
//! `sluice_worker_heartbeat_age_seconds` per worker.
//!
//! Fault injection for tests (never set in production):
//! `SLUICE_FAULT=worker-panic:N`, read once at start, makes worker 0 of the
//! first bridge panic in its N-th batch that carried frames
//! (`pytest tests/e2e -k test_worker_panic_exits_loudly`).

use std::any::Any;
use std::cell::RefCell;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Mutex, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A heartbeat older than this (ns) marks a worker as stalled in the log.
pub const STALL_NS: u64 = 1_000_000_000;

/// Why threads died, first first.
#[derive(Default)]
pub struct Deaths(Mutex<Vec<String>>);

impl Deaths {
    pub fn record(&self, why: String) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(why);
    }

    /// The first death, if any.
    pub fn first(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .first()
            .cloned()
    }
}

/// Who runs in a guarded thread, for the log line.
pub enum Who<'a> {
    Worker { bridge: &'a str, worker: usize },
    Thread(&'a str),
}

impl std::fmt::Display for Who<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Who::Worker { bridge, worker } => write!(f, "bridge {bridge} worker {worker}"),
            Who::Thread(name) => write!(f, "thread {name}"),
        }
    }
}

thread_local! {
    /// The last panic of this thread, as the hook saw it (message and
    /// place).
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Installs (once) a panic hook that remembers each panic's message and
/// place for [`guarded`], then runs the previous hook (which prints the
/// standard report on stderr).
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let msg = payload_text(info.payload());
            let text = match info.location() {
                Some(l) => format!("{msg} at {}:{}", l.file(), l.line()),
                None => msg,
            };
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
            previous(info);
        }));
    });
}

fn payload_text(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(a panic without a message)".to_string()
    }
}

/// Whether a worker counts as stalled: running, looped at least once, and
/// its heartbeat more than [`STALL_NS`] older than `now_ns`.
pub fn stalled(running: bool, heartbeat_ns: u64, now_ns: u64) -> bool {
    running && heartbeat_ns != 0 && now_ns.saturating_sub(heartbeat_ns) > STALL_NS
}

/// Runs `body`; if it panics, logs the death at error level, records it in
/// `deaths` and sets `stop` so that the whole daemon stops.
pub fn guarded(deaths: &Deaths, stop: &AtomicBool, who: Who, body: impl FnOnce()) {
    if catch(deaths, who, body).is_none() {
        stop.store(true, Relaxed);
    }
}

/// Runs `body`; if it panics, logs the death at error level, records it in
/// `deaths` and returns None.
pub fn catch<R>(deaths: &Deaths, who: Who, body: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(r) => Some(r),
        Err(payload) => {
            died(deaths, &who, payload.as_ref());
            None
        }
    }
}

fn died(deaths: &Deaths, who: &Who, payload: &(dyn Any + Send)) {
    {
        let msg = LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_else(|| payload_text(payload));
        match who {
            Who::Worker { bridge, worker } => tracing::error!(
                bridge = %bridge,
                worker = *worker,
                panic = %msg,
                "worker died; stopping the daemon (exit status 70) so that it is restarted"
            ),
            Who::Thread(name) => tracing::error!(
                thread = %name,
                panic = %msg,
                "thread died; stopping the daemon (exit status 70) so that it is restarted"
            ),
        }
        deaths.record(format!("{who} died: {msg}"));
    }
}

/// Fault injection read from `SLUICE_FAULT` (tests only).
#[derive(Debug, Default, PartialEq)]
pub struct Fault {
    /// `worker-panic:N`: worker 0 of the first bridge panics in its N-th
    /// batch with frames.
    pub worker_panic_after: Option<u64>,
}

impl Fault {
    /// Reads `SLUICE_FAULT` once; a value that is not understood stops the
    /// start (a test that meant to inject a fault must not pass without it).
    pub fn from_env() -> Result<Fault, String> {
        match std::env::var("SLUICE_FAULT") {
            Ok(v) => Fault::parse(&v),
            Err(_) => Ok(Fault::default()),
        }
    }

    fn parse(v: &str) -> Result<Fault, String> {
        if v.is_empty() {
            return Ok(Fault::default());
        }
        let n = v
            .strip_prefix("worker-panic:")
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|&n| n > 0);
        match n {
            Some(n) => {
                tracing::warn!(
                    fault = v,
                    "SLUICE_FAULT set: fault injection for tests is active"
                );
                Ok(Fault {
                    worker_panic_after: Some(n),
                })
            }
            None => Err(format!(
                "SLUICE_FAULT={v:?}: expected worker-panic:N with N >= 1 (fault injection for tests)"
            )),
        }
    }
}

/// A thread of the daemon and its name.
pub struct Thread {
    pub name: String,
    pub handle: JoinHandle<()>,
}

/// Joins every thread that ends within `limit`; returns the names of those
/// that did not (left running: the process is about to exit).
pub fn join_all(threads: Vec<Thread>, limit: Duration) -> Vec<String> {
    let deadline = Instant::now() + limit;
    let mut waiting = threads;
    loop {
        let (done, rest): (Vec<Thread>, Vec<Thread>) =
            waiting.into_iter().partition(|t| t.handle.is_finished());
        for t in done {
            // A panic was already caught and reported by `guarded`.
            let _ = t.handle.join();
        }
        waiting = rest;
        if waiting.is_empty() || Instant::now() >= deadline {
            return waiting.into_iter().map(|t| t.name).collect();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_panic_is_recorded_with_its_place_and_stops_the_daemon() {
        install_panic_hook();
        let deaths = Arc::new(Deaths::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (d, s) = (deaths.clone(), stop.clone());
        let h = std::thread::spawn(move || {
            guarded(
                &d,
                &s,
                Who::Worker {
                    bridge: "br0",
                    worker: 1,
                },
                || panic!("boom {}", 7),
            )
        });
        h.join().expect("guarded catches the panic");
        assert!(stop.load(Relaxed));
        let why = deaths.first().unwrap();
        assert!(
            why.starts_with("bridge br0 worker 1 died: boom 7 at "),
            "{why}"
        );
        assert!(why.contains("health.rs"), "{why}");
    }

    #[test]
    fn a_thread_that_returns_is_not_a_death() {
        let deaths = Deaths::default();
        let stop = AtomicBool::new(false);
        guarded(&deaths, &stop, Who::Thread("metrics"), || {});
        assert!(!stop.load(Relaxed));
        assert!(deaths.first().is_none());
    }

    #[test]
    fn a_worker_is_stalled_when_its_heartbeat_is_over_a_second_old() {
        let s = 1_000_000_000;
        assert!(!stalled(true, 5 * s, 5 * s + s / 2));
        assert!(!stalled(true, 5 * s, 6 * s));
        assert!(stalled(true, 5 * s, 6 * s + 1));
        // Not yet started, or no longer running: not stalled.
        assert!(!stalled(true, 0, 10 * s));
        assert!(!stalled(false, 5 * s, 10 * s));
        // A heartbeat read after `now` was taken is not a stall.
        assert!(!stalled(true, 6 * s, 5 * s));
    }

    #[test]
    fn a_panic_on_the_control_thread_is_caught_and_recorded() {
        install_panic_hook();
        let deaths = Deaths::default();
        let r: Option<u32> = catch(&deaths, Who::Thread("control"), || panic!("trace"));
        assert!(r.is_none());
        assert!(deaths
            .first()
            .unwrap()
            .starts_with("thread control died: trace at "));
        assert_eq!(catch(&deaths, Who::Thread("control"), || 7), Some(7));
    }

    #[test]
    fn fault_injection_is_parsed_strictly() {
        assert_eq!(Fault::parse("").unwrap(), Fault::default());
        assert_eq!(
            Fault::parse("worker-panic:3").unwrap().worker_panic_after,
            Some(3)
        );
        for bad in ["worker-panic:0", "worker-panic:x", "worker-panic", "panic"] {
            let e = Fault::parse(bad).unwrap_err();
            assert!(e.contains("SLUICE_FAULT"), "{e}");
        }
    }

    #[test]
    fn join_all_leaves_a_stuck_thread_behind() {
        let stuck = Arc::new(AtomicBool::new(true));
        let s = stuck.clone();
        let threads = vec![
            Thread {
                name: "quick".into(),
                handle: std::thread::spawn(|| {}),
            },
            Thread {
                name: "stuck".into(),
                handle: std::thread::spawn(move || {
                    while s.load(Relaxed) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }),
            },
        ];
        let left = join_all(threads, Duration::from_millis(50));
        assert_eq!(left, vec!["stuck".to_string()]);
        stuck.store(false, Relaxed);
    }
}
