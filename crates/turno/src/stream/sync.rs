//! The few synchronisation primitives the stream types use, behind one seam
//! so that `--cfg turno_loom` can swap in loom's model-checked versions.
//!
//! Every stream type keeps its state behind one [`Mutex`] and wakes tasks
//! through [`Waker`](std::task::Waker)s only after releasing it. The one
//! exception is the buffered stream's elements, which travel on the
//! lock-free lane of the mailboxes (`crate::lane`), with two hand-shakes
//! on atomics (`buffered/shared.rs`'s `Shared`); the lane, those atomics and the
//! mutex all come from this seam, so the loom model sees every
//! interleaving that matters.

use std::future::Future;

/// The crate's lock seam (parking_lot, or loom's under `--cfg turno_loom`),
/// shared with the actor core.
pub(crate) use crate::sync::Mutex;

/// The atomics of the lock-free buffered stream (`buffered/shared.rs`), loom's
/// under `--cfg turno_loom`.
pub(crate) use crate::sync::{AtomicBool, AtomicUsize};

/// Runs a future to completion on the current thread, parking the thread
/// while the future waits. This is how the blocking methods of the stream
/// types (`next_blocking`, `send_blocking`, `recv_blocking`) are built, so a
/// blocking and an async caller follow exactly the same state machine.
///
/// The waker is one per thread and never reallocated, so a stream that
/// keeps it (`Waker::will_wake`) never clones it again. Waking it sets a
/// flag; before parking, the thread looks at that flag (a read of its own
/// cache line, which does not disturb the other side) in a short spin, then
/// between a few yields of its core, because the other side usually answers
/// within a few microseconds when it runs on another core, and within a
/// time slice when it does not: both less than a park/unpark round trip.
/// The waker calls `unpark` only when the thread really sleeps.
///
/// Do not call it from inside an async task: it blocks the executor thread.
///
/// ```
/// let (tx, mut rx) = turno::stream::buffered::<u32>(turno::Policy::Unbounded);
/// let _ = tx.push(7);
/// assert_eq!(turno::stream::block_on(turno::stream::next(&mut rx)), Some(7));
/// ```
#[cfg(not(turno_loom))]
pub fn block_on<F: Future>(future: F) -> F::Output {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::{self, Thread};

    /// Own cache line: the spinning thread reads it while others bump the
    /// `Arc`'s counts.
    #[repr(align(128))]
    struct Flag(AtomicBool);

    struct Signal {
        notified: Flag,
        sleeping: AtomicBool,
        thread: Thread,
    }

    impl Wake for Signal {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            // Dekker with the sleeper below: either it sees `notified`, or
            // this sees `sleeping` and unparks (and an unpark that comes
            // before the park makes the park return at once).
            self.notified.0.store(true, Ordering::SeqCst);
            if self.sleeping.load(Ordering::SeqCst) {
                self.thread.unpark();
            }
        }
    }

    thread_local! {
        static SIGNAL: (Arc<Signal>, Waker) = {
            let signal = Arc::new(Signal {
                notified: Flag(AtomicBool::new(false)),
                sleeping: AtomicBool::new(false),
                thread: thread::current(),
            });
            (signal.clone(), Waker::from(signal))
        };
    }

    /// Steps of the spin before the yields: step `i` looks at the flag,
    /// then spins `2^min(i, 6)` CPU hints: 191 hints in all, a few
    /// microseconds, less than one park/unpark round trip.
    const SPIN_STEPS: u32 = 8;
    /// Yields before parking.
    const YIELDS: u32 = 3;

    let mut future = std::pin::pin!(future);
    SIGNAL.with(|(signal, waker)| {
        let mut cx = Context::from_waker(waker);
        'poll: loop {
            signal.notified.0.store(false, Ordering::SeqCst);
            if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
                // The flag is per thread: if this call was nested inside the
                // poll of an outer `block_on`, it may have eaten a wake-up
                // meant for the outer future. Leave the flag set: at worst
                // the outer one polls once more for nothing.
                signal.notified.0.store(true, Ordering::SeqCst);
                return out;
            }
            // Before sleeping, give the other side a few chances to answer:
            // first a short spin, for a side running on another core (an
            // spsc rendezvous hand-off runs several times faster with it
            // than with the yields alone: BENCHMARKS.md, "Streams"), then
            // yields of the core, for a side waiting for
            // this core (producers and consumer outnumbering the cores: a
            // long spin there delays the very thread that would wake us; a
            // 127-iteration spin before the yields once cost rendezvous 2-3x,
            // while this one leaves mpsc4 unchanged).
            for step in 0..SPIN_STEPS {
                if signal.notified.0.load(Ordering::Acquire) {
                    continue 'poll;
                }
                crate::sync::spin_hints(step);
            }
            for _ in 0..YIELDS {
                if signal.notified.0.load(Ordering::Acquire) {
                    continue 'poll;
                }
                thread::yield_now();
            }
            signal.sleeping.store(true, Ordering::SeqCst);
            while !signal.notified.0.load(Ordering::SeqCst) {
                thread::park();
            }
            signal.sleeping.store(false, Ordering::SeqCst);
        }
    })
}

/// Under loom, loom's own executor (it models parking and wake-ups).
#[cfg(turno_loom)]
pub fn block_on<F: Future>(future: F) -> F::Output {
    loom::future::block_on(future)
}
