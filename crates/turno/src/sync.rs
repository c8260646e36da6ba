//! The synchronisation primitives of the actor core (mailboxes, the engine,
//! the deterministic run queue), behind one seam: `--cfg turno_loom` swaps in
//! loom's model-checked versions, so `tests/sched_loom.rs` explores every
//! interleaving of the real scheduling code, not a copy of it.

#[cfg(not(turno_loom))]
pub(crate) use parking_lot::Mutex;
#[cfg(not(turno_loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize};

#[cfg(turno_loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize};

/// loom's mutex with parking_lot's infallible `lock()`.
#[cfg(turno_loom)]
#[derive(Debug, Default)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(turno_loom)]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        // Poisoning means a panic in a model thread, which loom reports.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
