//! The lane store against the locked reference store: for any sequence of
//! operations on one thread, a stream on the lock-free lane and the same
//! stream on the locked [`Buffer`](crate::buffer::Buffer) (the store every
//! stream used before, and keep-newest still uses) answer exactly the same
//! verdicts, deliver the same elements, report the same lengths and
//! counters, and terminate the same way. The threaded properties
//! (conservation, per-producer order, no lost wake-up) are in
//! `tests/stream_buffered.rs` and the loom model `tests/stream_loom.rs`.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex as StdMutex};
use std::task::{Context, Poll, Waker};

use proptest::prelude::*;

use super::{AsyncThrowingStream, Continuation, SendFuture, Shared, Termination, YieldResult};
use crate::buffer::Policy;

fn pair(policy: Policy, lock_free: bool) -> (Continuation<u32, u8>, AsyncThrowingStream<u32, u8>) {
    let shared = Arc::new(Shared::with_store(policy, lock_free));
    (
        Continuation {
            shared: shared.clone(),
        },
        AsyncThrowingStream { shared },
    )
}

#[derive(Debug, Clone)]
enum Op {
    Push,
    /// Start a `send` and poll it once (kept while pending, at most 3).
    Send,
    /// Poll the oldest pending send again.
    PollSend,
    /// Drop the oldest pending send.
    DropSend,
    TryNext,
    /// Poll the consumer once (it may start waiting).
    Poll,
    Finish,
    Fail,
    Len,
    Stats,
    /// Clone a producer, or drop a clone.
    Clone,
    DropClone,
    /// Drop the consumer (the stream is cancelled); ends the sequence.
    Cancel,
}

fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        (0usize..5).prop_map(Policy::KeepOldest),
        (0usize..5).prop_map(Policy::Reject),
        (0usize..5).prop_map(Policy::Suspend),
        Just(Policy::Unbounded),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            6 => Just(Op::Push),
            3 => Just(Op::Send),
            2 => Just(Op::PollSend),
            1 => Just(Op::DropSend),
            4 => Just(Op::TryNext),
            3 => Just(Op::Poll),
            1 => Just(Op::Finish),
            1 => Just(Op::Fail),
            1 => Just(Op::Len),
            1 => Just(Op::Stats),
            1 => Just(Op::Clone),
            1 => Just(Op::DropClone),
            1 => Just(Op::Cancel),
        ],
        0..120,
    )
}

/// Runs `ops` on one stream and records everything observable.
fn run(policy: Policy, lock_free: bool, ops: &[Op]) -> Vec<String> {
    let (tx, rx) = pair(policy, lock_free);
    let mut rx = Some(rx);
    let terminations = Arc::new(StdMutex::new(Vec::<Termination>::new()));
    let t = terminations.clone();
    tx.on_termination(move |why| t.lock().unwrap().push(why));
    let mut clones = Vec::new();
    let mut sends: Vec<SendFuture<'_, u32, u8>> = Vec::new();
    let mut log = Vec::new();
    let mut cx = Context::from_waker(Waker::noop());
    let mut next = 0u32;
    for op in ops {
        let entry = match op {
            Op::Push => {
                next += 1;
                format!("push {next}: {:?}", tx.push(next))
            }
            Op::Send if sends.len() < 3 => {
                next += 1;
                let mut f = tx.send(next);
                match Pin::new(&mut f).poll(&mut cx) {
                    Poll::Ready(v) => format!("send {next}: {v:?}"),
                    Poll::Pending => {
                        sends.push(f);
                        format!("send {next}: pending")
                    }
                }
            }
            Op::Send => "send: skipped".into(),
            Op::PollSend if !sends.is_empty() => match Pin::new(&mut sends[0]).poll(&mut cx) {
                Poll::Ready(v) => {
                    drop(sends.remove(0));
                    format!("poll send: {v:?}")
                }
                Poll::Pending => "poll send: pending".into(),
            },
            Op::DropSend if !sends.is_empty() => {
                drop(sends.remove(0));
                "drop send".into()
            }
            Op::PollSend | Op::DropSend => "no send".into(),
            Op::TryNext => match rx.as_mut() {
                Some(rx) => format!("try_next: {:?}", rx.try_next()),
                None => "gone".into(),
            },
            Op::Poll => match rx.as_mut() {
                Some(rx) => format!("poll: {:?}", Pin::new(rx).poll_next(&mut cx)),
                None => "gone".into(),
            },
            Op::Finish => format!("finish: {}", tx.finish()),
            Op::Fail => format!("fail: {}", tx.fail(7)),
            Op::Len => format!("len: {} {}", tx.len(), tx.is_empty()),
            Op::Stats => format!("stats: {:?}", tx.stats()),
            Op::Clone => {
                clones.push(tx.clone());
                "clone".into()
            }
            Op::DropClone => {
                clones.pop();
                "drop clone".into()
            }
            Op::Cancel => {
                rx = None;
                "cancel".into()
            }
        };
        log.push(entry);
        log.push(format!(
            "terminated: {} {:?}",
            tx.is_terminated(),
            terminations.lock().unwrap()
        ));
    }
    // Whatever is left, then the end.
    drop(sends);
    if let Some(mut rx) = rx {
        loop {
            match rx.try_next() {
                Ok(Some(v)) => log.push(format!("rest: {v:?}")),
                Ok(None) => {
                    log.push("rest: end".into());
                    break;
                }
                Err(e) => {
                    log.push(format!("rest: {e:?}"));
                    if !tx.finish() {
                        break;
                    }
                }
            }
        }
        log.push(format!("stats: {:?}", rx.stats()));
    }
    log.push(format!("stats: {:?}", tx.stats()));
    drop(clones);
    drop(tx);
    log.push(format!("terminations: {:?}", terminations.lock().unwrap()));
    log
}

use futures_core::Stream;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_lane_store_answers_as_the_locked_store(policy in policy(), ops in ops()) {
        let lane = run(policy, true, &ops);
        let locked = run(policy, false, &ops);
        prop_assert_eq!(lane, locked);
    }
}

/// The lane store is the default for every policy but keep-newest.
#[test]
fn keep_newest_stays_on_the_locked_store() {
    assert!(Shared::<u8, u8>::new(Policy::KeepNewest(2))
        .lane()
        .is_none());
    for p in [
        Policy::KeepOldest(2),
        Policy::Reject(2),
        Policy::Suspend(2),
        Policy::Unbounded,
    ] {
        assert!(Shared::<u8, u8>::new(p).lane().is_some(), "{p:?}");
    }
}

/// A case the generator reaches rarely: a sender waiting on a full stream
/// is woken by the take that makes room, and its send then succeeds.
#[test]
fn a_take_wakes_the_waiting_sender_on_both_stores() {
    for lock_free in [true, false] {
        let (tx, mut rx) = pair(Policy::Suspend(1), lock_free);
        assert_eq!(tx.push(1), YieldResult::Enqueued { remaining: Some(0) });
        let woken = Arc::new(Flag::default());
        let waker = Waker::from(woken.clone());
        let mut cx = Context::from_waker(&waker);
        let mut f = tx.send(2);
        assert!(Pin::new(&mut f).poll(&mut cx).is_pending());
        assert!(!woken.get());
        assert_eq!(rx.try_next(), Ok(Some(Ok(1))));
        assert!(woken.get(), "lock_free: {lock_free}");
        assert_eq!(
            Pin::new(&mut f).poll(&mut cx),
            Poll::Ready(YieldResult::Enqueued { remaining: Some(0) })
        );
    }
}

#[derive(Default)]
struct Flag(std::sync::atomic::AtomicBool);

impl Flag {
    fn get(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl std::task::Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
