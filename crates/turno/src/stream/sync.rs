//! The few synchronisation primitives the stream types use, behind one seam
//! so that `--cfg loom` can swap in loom's model-checked versions.
//!
//! Every stream type keeps all of its state behind one [`Mutex`] and wakes
//! tasks through [`Waker`](std::task::Waker)s only after releasing it. That
//! design has two consequences: there is no `unsafe` and no atomics to get
//! wrong, and a model checker that controls the mutex and the threads sees
//! every interleaving that matters.

#![allow(unexpected_cfgs)] // `loom` is set by RUSTFLAGS="--cfg loom" for the model-checked tests.

use std::future::Future;

#[cfg(not(loom))]
pub(crate) use parking_lot::Mutex;

/// loom's mutex with parking_lot's infallible `lock()`.
#[cfg(loom)]
pub(crate) struct Mutex<T>(loom::sync::Mutex<T>);

#[cfg(loom)]
impl<T> Mutex<T> {
    pub(crate) fn new(value: T) -> Self {
        Mutex(loom::sync::Mutex::new(value))
    }

    pub(crate) fn lock(&self) -> loom::sync::MutexGuard<'_, T> {
        // A poisoned lock means a panic in a model thread: loom reports that.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Runs a future to completion on the current thread, parking the thread
/// while the future waits. This is how the blocking methods of the stream
/// types (`next_blocking`, `send_blocking`, `recv_blocking`) are built, so a
/// blocking and an async caller follow exactly the same state machine.
///
/// Before parking it polls again a few times with a short exponential spin:
/// on a multi-core machine the other side usually answers within a few
/// hundred nanoseconds, far less than a park/unpark round trip.
///
/// Do not call it from inside an async task: it blocks the executor thread.
///
/// ```
/// let (tx, mut rx) = turno::stream::buffered::<u32>(turno::Policy::Unbounded);
/// let _ = tx.push(7);
/// assert_eq!(turno::stream::block_on(turno::stream::next(&mut rx)), Some(7));
/// ```
#[cfg(not(loom))]
pub fn block_on<F: Future>(future: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::{self, Thread};

    struct Unparker(Thread);
    impl Wake for Unparker {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.unpark();
        }
    }

    thread_local! {
        static WAKER: Waker = Waker::from(Arc::new(Unparker(thread::current())));
    }

    let mut future = std::pin::pin!(future);
    WAKER.with(|waker| {
        let mut cx = Context::from_waker(waker);
        let mut spins = 0u32;
        loop {
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                return out;
            }
            if spins < 6 {
                for _ in 0..(1u32 << spins) {
                    std::hint::spin_loop();
                }
                spins += 1;
            } else if spins < 8 {
                thread::yield_now();
                spins += 1;
            } else {
                // An unpark that came before this park makes it return at
                // once (the thread's token), so no wake-up is lost between
                // the last poll and here.
                thread::park();
            }
        }
    })
}

/// Under loom, loom's own executor (it models parking and wake-ups).
#[cfg(loom)]
pub fn block_on<F: Future>(future: F) -> F::Output {
    loom::future::block_on(future)
}
