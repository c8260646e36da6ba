//! The background sweeper: a thread that calls [`Store::sweep`] at an
//! interval, so expired snapshots and drafts, keys past retention and old
//! acknowledged items leave the database even when nobody reads them.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::model::SweepReport;
use crate::store::Store;

/// A running sweeper; dropping it (or [`Sweeper::stop`]) stops the thread.
pub struct Sweeper {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<SweepTotals>>,
}

/// What a sweeper did over its life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepTotals {
    /// Sweeps that ran.
    pub runs: u64,
    /// Sweeps that failed (busy database, lost connection...). They are
    /// retried at the next interval; the last error is not kept.
    pub errors: u64,
    /// Everything removed, summed.
    pub removed: SweepReport,
}

impl Sweeper {
    /// Sweeps `store` every `interval`, the first time at once.
    pub fn spawn(store: Store, interval: Duration) -> std::io::Result<Sweeper> {
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("turno-store-sweeper".into())
            .spawn(move || {
                let mut t = SweepTotals::default();
                loop {
                    match store.sweep() {
                        Ok(r) => {
                            t.removed.snapshots += r.snapshots;
                            t.removed.drafts += r.drafts;
                            t.removed.keys += r.keys;
                            t.removed.queue_items += r.queue_items;
                        }
                        Err(_) => t.errors += 1,
                    }
                    t.runs += 1;
                    match rx.recv_timeout(interval) {
                        Err(RecvTimeoutError::Timeout) => continue,
                        _ => return t,
                    }
                }
            })?;
        Ok(Sweeper {
            stop: Some(tx),
            thread: Some(thread),
        })
    }

    /// Stops the thread and returns its totals.
    pub fn stop(mut self) -> SweepTotals {
        self.shutdown()
    }

    fn shutdown(&mut self) -> SweepTotals {
        drop(self.stop.take());
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sweeper {
    fn drop(&mut self) {
        self.shutdown();
    }
}
