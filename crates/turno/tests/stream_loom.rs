//! Model-checked concurrency properties of the stream types, under loom:
//! every interleaving of the threads below is explored, and a lost wake-up
//! shows up as a deadlock that loom reports.
//!
//! Run with:
//!
//! ```text
//! RUSTFLAGS="--cfg turno_loom" CARGO_TARGET_DIR=target/loom cargo test -p turno --release --test stream_loom
//! ```
//!
//! (Without `--cfg turno_loom` this file compiles to nothing; the threaded stress
//! tests in the other `stream_*` files cover the same properties in the
//! normal test run, by sampling instead of exhaustively.)

#![allow(unexpected_cfgs)]
#![cfg(turno_loom)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use loom::thread;
use turno::stream::{buffered, rendezvous, Termination, YieldResult};
use turno::stream_model::{buffered_with_fault, Inject};
use turno::Policy;

/// A model with a preemption bound: loom explores every schedule with at
/// most `bound` preemptions, which covers the races of interest (a handful
/// of lock acquisitions each) while keeping the run in seconds.
fn bounded(bound: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(f);
}

fn counter() -> (Arc<AtomicUsize>, impl FnOnce(Termination) + Send + 'static) {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    (calls, move |_| {
        c.fetch_add(1, Ordering::SeqCst);
    })
}

/// finish() racing the consumer's drop: the handler runs exactly once.
#[test]
fn termination_exactly_once_finish_vs_cancel() {
    loom::model(|| {
        let (tx, rx) = buffered::<u32>(Policy::KeepNewest(1));
        let (calls, h) = counter();
        tx.on_termination(h);
        let t = thread::spawn(move || {
            let _ = tx.push(1);
            tx.finish();
        });
        drop(rx);
        t.join().unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    });
}

/// Two producers: one finishes, the other is dropped (finishing too), while
/// the consumer drains: once, and the consumer always sees the end.
#[test]
fn termination_exactly_once_two_producers() {
    // 2 preemptions since the stream is on the lane (3 ran past 3 minutes).
    bounded(2, || {
        let (tx, mut rx) = buffered::<u32>(Policy::Unbounded);
        let (calls, h) = counter();
        tx.on_termination(h);
        let tx2 = tx.clone();
        let a = thread::spawn(move || {
            let _ = tx.push(1);
            tx.finish();
        });
        let b = thread::spawn(move || {
            let _ = tx2.push(2);
        });
        let got = rx.blocking_iter().count();
        a.join().unwrap();
        b.join().unwrap();
        assert!(got <= 2);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    });
}

/// A consumer about to wait and a producer pushing: no lost wake-up.
/// Bounded since the stream is on the lane (its atomics made the unbounded
/// model run for many minutes); `no_lost_wakeup_lane_push_keeps_stream_open`
/// is the unbounded model of the same hand-shake.
#[test]
fn no_lost_wakeup_consumer() {
    bounded(3, || {
        let (tx, mut rx) = buffered::<u32>(Policy::KeepOldest(1));
        let t = thread::spawn(move || {
            assert!(tx.push(7).is_enqueued());
        });
        assert_eq!(rx.next_blocking(), Some(7));
        assert_eq!(rx.next_blocking(), None);
        t.join().unwrap();
    });
}

/// A producer waiting for room (suspend) and the consumer taking: no lost
/// wake-up for the producer, nothing lost, order kept.
#[test]
fn no_lost_wakeup_suspended_producer() {
    // Bounded since the stream is on the lane, as `no_lost_wakeup_consumer`.
    bounded(3, || {
        let (tx, mut rx) = buffered::<u32>(Policy::Suspend(1));
        let t = thread::spawn(move || {
            assert!(tx.send_blocking(1).is_enqueued());
            assert!(tx.send_blocking(2).is_enqueued());
        });
        assert_eq!(rx.next_blocking(), Some(1));
        assert_eq!(rx.next_blocking(), Some(2));
        assert_eq!(rx.next_blocking(), None);
        t.join().unwrap();
    });
}

/// One take makes room: the waiting producer must be woken by that take
/// alone, even though the consumer then waits on something else (here, the
/// producer's thread) instead of polling the stream again.
#[test]
fn no_lost_wakeup_room_after_one_take() {
    loom::model(|| {
        let (tx, mut rx) = buffered::<u32>(Policy::Suspend(1));
        assert!(tx.push(1).is_enqueued());
        let t = thread::spawn(move || tx.send_blocking(2).is_enqueued());
        assert_eq!(rx.next_blocking(), Some(1));
        assert!(t.join().unwrap());
        assert_eq!(rx.next_blocking(), Some(2));
    });
}

/// Capacity 0 with a suspending producer: each element is handed to the
/// waiting consumer; nobody sleeps forever.
#[test]
fn no_lost_wakeup_capacity_zero_handoff() {
    // Bounded since the consumer polls again while a counted element is
    // being written (unbounded, it ran about 14 minutes).
    bounded(3, || {
        let (tx, mut rx) = buffered::<u32>(Policy::Suspend(0));
        let t = thread::spawn(move || {
            assert!(tx.send_blocking(1).is_enqueued());
        });
        assert_eq!(rx.next_blocking(), Some(1));
        assert_eq!(rx.next_blocking(), None);
        t.join().unwrap();
    });
}

/// Cancellation racing a waiting producer: it is woken with Terminated.
#[test]
fn cancel_wakes_a_suspended_producer() {
    loom::model(|| {
        let (tx, rx) = buffered::<u32>(Policy::Suspend(1));
        assert!(tx.push(1).is_enqueued());
        let t = thread::spawn(move || tx.send_blocking(2));
        drop(rx);
        assert_eq!(t.join().unwrap(), YieldResult::Terminated(2));
    });
}

/// Rendezvous: a send completes exactly when received; both sides wake.
#[test]
fn rendezvous_handoff_no_lost_wakeup() {
    loom::model(|| {
        let (tx, rx) = rendezvous::<u32>();
        let t = thread::spawn(move || tx.send_blocking(5));
        assert_eq!(rx.recv_blocking(), Ok(5));
        assert_eq!(t.join().unwrap(), Ok(()));
        assert!(rx.recv_blocking().is_err(), "the sender is gone");
    });
}

/// Rendezvous: close racing a send: the element is either received or comes
/// back, never both, never lost.
#[test]
fn rendezvous_close_vs_send() {
    loom::model(|| {
        let (tx, rx) = rendezvous::<u32>();
        let rx2 = rx.clone();
        let t = thread::spawn(move || tx.send_blocking(5));
        let closer = thread::spawn(move || rx2.close());
        let got = rx.recv_blocking().ok();
        closer.join().unwrap();
        let sent = t.join().unwrap();
        match (got, sent) {
            (Some(5), Ok(())) | (None, Err(_)) => {}
            other => panic!("element both/neither delivered: {other:?}"),
        }
    });
}

// The lock-free lane store (every policy but keep-newest): the producers'
// Dekker hand-shake with the waiting consumer, the seal at finish.

/// Two producers push on the lane while the consumer waits: every element
/// arrives, in each producer's order, and nobody sleeps forever. `inject`
/// breaks the producers' half of the hand-shake.
fn two_producers_waiting_consumer(inject: Inject) {
    bounded(2, move || {
        let (tx, mut rx) = buffered_with_fault::<u32>(Policy::Unbounded, inject);
        let tx2 = tx.clone();
        let a = thread::spawn(move || {
            assert!(tx.push(1).is_enqueued());
        });
        let b = thread::spawn(move || {
            assert!(tx2.push(2).is_enqueued());
        });
        let mut got: Vec<u32> = rx.blocking_iter().collect();
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
        a.join().unwrap();
        b.join().unwrap();
    });
}

#[test]
fn no_lost_wakeup_lane_two_producers() {
    two_producers_waiting_consumer(Inject::None);
}

/// The check of the checker: a consumer that, before it waits, looks at the
/// lane's `tail` by a relaxed load (not the read-modify-write that pairs
/// with the producers' claims) loses the wake-up, and the model finds it
/// (loom reports the consumer parked forever).
#[test]
fn the_model_catches_a_look_without_the_claim_order() {
    let caught = catch_unwind(AssertUnwindSafe(|| {
        bounded(3, || {
            let (tx, mut rx) =
                buffered_with_fault::<u32>(Policy::KeepOldest(2), Inject::LookWithoutClaimOrder);
            let t = thread::spawn(move || {
                assert!(tx.push(7).is_enqueued());
                // Keep the stream open: only the push can wake the consumer.
                tx
            });
            assert_eq!(rx.next_blocking(), Some(7));
            drop(t.join().unwrap());
        })
    }));
    assert!(caught.is_err(), "the model missed the lost wake-up");
}

/// The same model without the fault passes.
#[test]
fn no_lost_wakeup_lane_push_keeps_stream_open() {
    // Bounded as `no_lost_wakeup_capacity_zero_handoff`.
    bounded(3, || {
        let (tx, mut rx) = buffered_with_fault::<u32>(Policy::KeepOldest(2), Inject::None);
        let t = thread::spawn(move || {
            assert!(tx.push(7).is_enqueued());
            tx
        });
        assert_eq!(rx.next_blocking(), Some(7));
        drop(t.join().unwrap());
    });
}

/// finish (the seal) racing a push: the element is either admitted and
/// delivered before the end, or handed back as Terminated; never both, never
/// lost, and the consumer waits for an element claimed before the seal
/// that is still being written.
#[test]
fn finish_races_a_push_on_the_lane() {
    bounded(3, || {
        let (tx, mut rx) = buffered::<u32>(Policy::Suspend(2));
        let tx2 = tx.clone();
        let pusher = thread::spawn(move || tx2.push(5));
        let finisher = thread::spawn(move || {
            assert!(tx.finish());
        });
        let got: Vec<u32> = rx.blocking_iter().collect();
        finisher.join().unwrap();
        match (pusher.join().unwrap(), got.as_slice()) {
            (YieldResult::Enqueued { .. }, [5]) | (YieldResult::Terminated(5), []) => {}
            other => panic!("element both/neither delivered: {other:?}"),
        }
    });
}

/// Two senders on a full suspend lane and the consumer: each take wakes a
/// waiting sender through the counted queue; nothing is lost.
#[test]
fn no_lost_wakeup_two_suspended_senders() {
    bounded(2, || {
        let (tx, mut rx) = buffered::<u32>(Policy::Suspend(1));
        let tx2 = tx.clone();
        let a = thread::spawn(move || {
            assert!(tx.send_blocking(1).is_enqueued());
        });
        let b = thread::spawn(move || {
            assert!(tx2.send_blocking(2).is_enqueued());
        });
        let mut got: Vec<u32> = rx.blocking_iter().collect();
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
        a.join().unwrap();
        b.join().unwrap();
    });
}

/// The check of the checker for the second hand-shake (a take and a
/// waiting sender, `no_lost_wakeup_room_after_one_take`'s race): a sender
/// that registers without its fence (the heavy side of the asymmetric pair,
/// `crate::asym_fence`; under loom both sides are `SeqCst` fences) loses
/// the wake-up, and the model finds it (loom reports both threads blocked).
/// The sender polls its send by hand, parking between polls, and nothing of
/// the stream is dropped while loom unwinds from the deadlock: loom aborts
/// the process when a drop touches its objects then (its own `block_on`
/// does), which no `catch_unwind` could catch.
#[test]
fn the_model_catches_a_registration_without_the_fence() {
    use std::future::Future;
    use std::mem::ManuallyDrop;
    use std::pin::Pin;
    use std::task::{Context, Poll, Wake, Waker};

    struct Unpark(thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }

    let caught = catch_unwind(AssertUnwindSafe(|| {
        loom::model(|| {
            let (tx, rx) =
                buffered_with_fault::<u32>(Policy::Suspend(1), Inject::RegisterWithoutFence);
            let mut rx = ManuallyDrop::new(rx);
            assert!(tx.push(1).is_enqueued());
            let t = thread::spawn(move || {
                let tx = ManuallyDrop::new(tx);
                let waker = ManuallyDrop::new(Waker::from(Arc::new(Unpark(thread::current()))));
                let mut cx = Context::from_waker(&waker);
                let mut send = ManuallyDrop::new(tx.send(2));
                let verdict = loop {
                    if let Poll::Ready(v) = Pin::new(&mut *send).poll(&mut cx) {
                        break v;
                    }
                    thread::park();
                };
                // Not reached on a deadlock: dropped on the schedules that end.
                drop(ManuallyDrop::into_inner(send));
                drop(ManuallyDrop::into_inner(waker));
                drop(ManuallyDrop::into_inner(tx));
                verdict.is_enqueued()
            });
            assert_eq!(rx.next_blocking(), Some(1));
            assert!(t.join().unwrap());
            assert_eq!(rx.next_blocking(), Some(2));
            drop(ManuallyDrop::into_inner(rx));
        })
    }));
    assert!(caught.is_err(), "the model missed the lost wake-up");
}
