//! What a big change leaves to free, and who frees it.
//!
//! Freeing a million rules (each a handful of allocations: the rule, its
//! instructions, match, packed key and counters) took 1.5 s of the control
//! thread after a DELETE of every flow, more than the delete itself. A
//! [`Pipeline`](crate::Pipeline) hands such leftovers (a table's rules
//! taken out whole, a classifier copy emptied at once) to its
//! [`Disposer`] instead of dropping them where it stands. The default
//! disposer drops them at once (this crate starts no thread); the daemon
//! installs one that drops them on a thread of its own, as Open vSwitch
//! postpones the freeing of its rules to its RCU thread.
//!
//! Contract: what is handed over is no longer reachable from the
//! pipeline or any snapshot taken later; dropping it anywhere, at any
//! time, changes nothing anyone can see but memory.

use std::any::Any;
use std::sync::Arc;

/// Something to drop (it is `Send`: it may be dropped on another thread).
pub type Garbage = Box<dyn Any + Send>;

/// Drops what a pipeline no longer needs; see the module docs.
#[derive(Clone)]
pub struct Disposer(Arc<dyn Fn(Garbage) + Send + Sync>);

impl Disposer {
    /// A disposer that calls `f` with each thing to drop.
    pub fn new(f: impl Fn(Garbage) + Send + Sync + 'static) -> Disposer {
        Disposer(Arc::new(f))
    }

    /// Hands `g` over to be dropped.
    pub fn dispose<T: Send + 'static>(&self, g: T) {
        (self.0)(Box::new(g))
    }
}

impl Default for Disposer {
    /// Drops at once, on the caller's thread.
    fn default() -> Disposer {
        Disposer::new(drop)
    }
}

impl std::fmt::Debug for Disposer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Disposer")
    }
}

/// A disposer that drops on a thread of its own (named `name`), started
/// now; None if the thread could not be started. The thread ends when
/// every clone of the disposer is gone.
pub fn on_thread(name: &str) -> Option<Disposer> {
    let (tx, rx) = std::sync::mpsc::channel::<Garbage>();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            for g in rx {
                drop(g);
            }
        })
        .ok()?;
    let tx = std::sync::Mutex::new(tx);
    Some(Disposer::new(move |g| {
        // A send fails only once the thread is gone: drop here then.
        if let Ok(tx) = tx.lock() {
            let _ = tx.send(g);
        }
    }))
}
