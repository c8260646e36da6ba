//! The synchronisation primitives of the actor core (mailboxes, the lock-free
//! user lane, the engine, the deterministic run queue), behind one seam:
//! `--cfg turno_loom` swaps in loom's model-checked versions, so
//! `tests/sched_loom.rs` and `tests/lane_loom.rs` explore every interleaving
//! of the real code, not a copy of it.

#[cfg(not(turno_loom))]
pub(crate) use parking_lot::Mutex;
#[cfg(not(turno_loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
};

#[cfg(turno_loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize,
};

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

/// A lock that guards data its owner keeps in a field of its own (an
/// [`UnsafeCell`] beside it), so that the lock's one byte can sit in its
/// owner's padding where a `Mutex<T>` pads itself to `T`'s alignment (the
/// mailbox's system lane: 16 bytes of queues and flags, 24 with a mutex
/// around them). Under loom, loom's mutex of nothing.
#[cfg(not(turno_loom))]
pub(crate) struct RawLock(parking_lot::RawMutex);

/// Holds a [`RawLock`] until dropped.
#[cfg(not(turno_loom))]
pub(crate) struct RawLockGuard<'a>(&'a parking_lot::RawMutex);

#[cfg(not(turno_loom))]
impl RawLock {
    pub(crate) const fn new() -> Self {
        RawLock(<parking_lot::RawMutex as parking_lot::lock_api::RawMutex>::INIT)
    }

    pub(crate) fn lock(&self) -> RawLockGuard<'_> {
        parking_lot::lock_api::RawMutex::lock(&self.0);
        RawLockGuard(&self.0)
    }
}

#[cfg(not(turno_loom))]
#[allow(unsafe_code)]
impl Drop for RawLockGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard was made by `RawLock::lock` on this thread,
        // which locked the mutex, and only its drop unlocks it.
        unsafe { parking_lot::lock_api::RawMutex::unlock(self.0) }
    }
}

/// See the non-loom [`RawLock`].
#[cfg(turno_loom)]
pub(crate) struct RawLock(loom::sync::Mutex<()>);

#[cfg(turno_loom)]
impl RawLock {
    pub(crate) fn new() -> Self {
        RawLock(loom::sync::Mutex::new(()))
    }

    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, ()> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A cell written through raw pointers, with loom's closure API so that
/// loom can check every access for data races (`loom::cell::UnsafeCell`).
#[cfg(not(turno_loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(turno_loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(turno_loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Step `step` of a doubling spin: `2^min(step, 6)` CPU hints (the waits
/// before a yield or a park share it: [`backoff`], a worker's search, an
/// outside sender's retries, `stream::block_on`).
#[cfg_attr(turno_loom, allow(dead_code))]
#[inline]
pub(crate) fn spin_hints(step: u32) {
    for _ in 0..1u32 << step.min(6) {
        std::hint::spin_loop();
    }
}

/// One step of a short wait for another thread's next few instructions
/// (a producer installing a block): a CPU hint at first, then a yield.
/// Under loom every step yields, so that the model can run the other thread.
pub(crate) fn backoff(step: &mut u32) {
    #[cfg(turno_loom)]
    {
        let _ = step;
        loom::thread::yield_now();
    }
    #[cfg(not(turno_loom))]
    {
        if *step < 6 {
            spin_hints(*step);
            *step += 1;
        } else {
            std::thread::yield_now();
        }
    }
}
