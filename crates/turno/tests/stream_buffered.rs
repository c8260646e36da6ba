//! The buffered stream: Swift AsyncStream's semantics, policy by policy,
//! termination exactly once, and conservation/order as properties.

#![cfg(not(turno_loom))]

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use futures::StreamExt;
use proptest::prelude::*;
use turno::stream::{buffered, throwing, Empty, Termination, YieldResult};
use turno::Policy;

fn poll_once<S: futures::Stream + Unpin>(s: &mut S) -> Poll<Option<S::Item>> {
    let mut cx = Context::from_waker(Waker::noop());
    s.poll_next_unpin(&mut cx)
}

fn recorder() -> (
    Arc<Mutex<Vec<Termination>>>,
    impl FnOnce(Termination) + Send + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (seen, move |t| s.lock().unwrap().push(t))
}

#[test]
fn unbounded_enqueues_everything_with_no_remaining_count() {
    let (tx, mut rx) = buffered::<u32>(Policy::Unbounded);
    for i in 0..1000 {
        assert_eq!(tx.push(i), YieldResult::Enqueued { remaining: None });
    }
    drop(tx);
    assert_eq!(
        rx.blocking_iter().collect::<Vec<_>>(),
        (0..1000).collect::<Vec<_>>()
    );
}

#[test]
fn keep_oldest_drops_the_incoming_element() {
    let (tx, mut rx) = buffered::<u32>(Policy::KeepOldest(2));
    assert_eq!(tx.push(1), YieldResult::Enqueued { remaining: Some(1) });
    assert_eq!(tx.push(2), YieldResult::Enqueued { remaining: Some(0) });
    assert_eq!(tx.push(3), YieldResult::Dropped(3));
    assert_eq!(rx.try_next(), Ok(Some(1)));
    assert_eq!(tx.push(4), YieldResult::Enqueued { remaining: Some(0) });
    tx.finish();
    assert_eq!(rx.blocking_iter().collect::<Vec<_>>(), [2, 4]);
    assert_eq!(rx.stats().dropped, 1);
}

#[test]
fn keep_newest_evicts_the_oldest_and_returns_it() {
    let (tx, mut rx) = buffered::<u32>(Policy::KeepNewest(2));
    assert_eq!(tx.push(1), YieldResult::Enqueued { remaining: Some(1) });
    assert_eq!(tx.push(2), YieldResult::Enqueued { remaining: Some(0) });
    assert_eq!(tx.push(3), YieldResult::Evicted(1));
    assert_eq!(tx.push(4), YieldResult::Evicted(2));
    tx.finish();
    assert_eq!(rx.blocking_iter().collect::<Vec<_>>(), [3, 4]);
}

#[test]
fn capacity_zero_passes_only_to_a_waiting_consumer() {
    for policy in [Policy::KeepOldest(0), Policy::KeepNewest(0)] {
        let (tx, mut rx) = buffered::<u32>(policy);
        // Nobody waits: dropped, whatever the policy keeps.
        assert_eq!(tx.push(1), YieldResult::Dropped(1), "{policy}");
        // A consumer that merely looks (try_next) does not wait.
        assert_eq!(rx.try_next(), Err(Empty));
        assert_eq!(tx.push(2), YieldResult::Dropped(2));
        // A consumer that awaits does: the element is handed straight to it,
        // and the verdict is Swift's `.enqueued(remaining: limit)`.
        assert!(poll_once(&mut rx).is_pending());
        assert_eq!(tx.push(3), YieldResult::Enqueued { remaining: Some(0) });
        // One element per wait: the next one is dropped again.
        assert_eq!(tx.push(4), YieldResult::Dropped(4));
        assert_eq!(poll_once(&mut rx), Poll::Ready(Some(3)));
        let s = rx.stats();
        assert_eq!((s.offered, s.taken, s.dropped), (4, 1, 3));
    }
}

#[test]
fn a_waiting_consumer_gets_the_element_directly_with_full_remaining() {
    // Swift resumes a waiting consumer directly and reports `remaining: limit`.
    let (tx, mut rx) = buffered::<u32>(Policy::KeepOldest(3));
    assert!(poll_once(&mut rx).is_pending());
    assert_eq!(tx.push(1), YieldResult::Enqueued { remaining: Some(3) });
    assert_eq!(tx.push(2), YieldResult::Enqueued { remaining: Some(2) });
    assert_eq!(poll_once(&mut rx), Poll::Ready(Some(1)));
    assert_eq!(poll_once(&mut rx), Poll::Ready(Some(2)));
    let (tx, mut rx) = buffered::<u32>(Policy::Unbounded);
    assert!(poll_once(&mut rx).is_pending());
    assert_eq!(tx.push(1), YieldResult::Enqueued { remaining: None });
}

#[test]
fn a_waiting_consumer_is_woken_by_a_push_and_by_finish() {
    let (tx, mut rx) = buffered::<u32>(Policy::Unbounded);
    let t = std::thread::spawn(move || rx.next_blocking());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let _ = tx.push(9);
    assert_eq!(t.join().unwrap(), Some(9));
    let (tx, mut rx) = buffered::<u32>(Policy::Unbounded);
    let t = std::thread::spawn(move || rx.next_blocking());
    std::thread::sleep(std::time::Duration::from_millis(20));
    tx.finish();
    assert_eq!(t.join().unwrap(), None);
}

#[test]
fn reject_and_suspend_policies_hand_the_element_back() {
    let (tx, _rx) = buffered::<u32>(Policy::Reject(1));
    assert!(tx.push(1).is_enqueued());
    assert_eq!(tx.push(2), YieldResult::Rejected(2));
    let (tx, _rx) = buffered::<u32>(Policy::Suspend(1));
    assert!(tx.push(1).is_enqueued());
    assert_eq!(tx.push(2), YieldResult::Full(2));
}

#[test]
fn finish_delivers_the_buffer_then_ends_and_later_pushes_are_terminated() {
    let (tx, mut rx) = buffered::<u32>(Policy::Unbounded);
    let (seen, h) = recorder();
    tx.on_termination(h);
    let _ = tx.push(1);
    let _ = tx.push(2);
    assert!(tx.finish());
    // Swift calls onTermination at finish, before the buffer is drained.
    assert_eq!(*seen.lock().unwrap(), [Termination::Finished]);
    assert!(!tx.finish(), "finishing twice has no effect");
    assert_eq!(tx.push(3), YieldResult::Terminated(3));
    assert!(tx.is_terminated());
    assert_eq!(rx.next_blocking(), Some(1));
    assert_eq!(rx.next_blocking(), Some(2));
    assert_eq!(rx.next_blocking(), None);
    assert_eq!(rx.next_blocking(), None);
    drop(rx);
    assert_eq!(
        *seen.lock().unwrap(),
        [Termination::Finished],
        "exactly once"
    );
}

#[test]
fn dropping_the_consumer_cancels_once() {
    let (tx, rx) = buffered::<String>(Policy::Unbounded);
    let (seen, h) = recorder();
    tx.on_termination(h);
    let _ = tx.push("kept?".into());
    drop(rx);
    assert_eq!(*seen.lock().unwrap(), [Termination::Cancelled]);
    assert_eq!(
        tx.push("late".into()),
        YieldResult::Terminated("late".into())
    );
    assert!(!tx.finish());
    drop(tx);
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn dropping_the_last_producer_finishes() {
    let (tx, mut rx) = buffered::<u32>(Policy::Unbounded);
    let (seen, h) = recorder();
    tx.on_termination(h);
    let tx2 = tx.clone();
    let _ = tx.push(1);
    drop(tx);
    assert!(seen.lock().unwrap().is_empty(), "a clone is still alive");
    let _ = tx2.push(2);
    drop(tx2);
    assert_eq!(*seen.lock().unwrap(), [Termination::Finished]);
    assert_eq!(rx.blocking_iter().collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn a_handler_installed_late_runs_at_once_and_replacing_drops_the_old_one() {
    let (tx, rx) = buffered::<u32>(Policy::Unbounded);
    let (first, h1) = recorder();
    let (second, h2) = recorder();
    tx.on_termination(h1);
    tx.on_termination(h2);
    tx.finish();
    drop(rx);
    assert!(first.lock().unwrap().is_empty());
    assert_eq!(*second.lock().unwrap(), [Termination::Finished]);
    let (late, h3) = recorder();
    tx.on_termination(h3);
    assert_eq!(*late.lock().unwrap(), [Termination::Finished]);
}

#[test]
fn throwing_stream_delivers_buffer_then_error_then_end() {
    let (tx, mut rx) = throwing::<u32, &'static str>(Policy::Unbounded);
    let (seen, h) = recorder();
    tx.on_termination(h);
    let _ = tx.push(1);
    assert!(tx.fail("boom"));
    assert!(!tx.fail("again"));
    assert_eq!(*seen.lock().unwrap(), [Termination::Failed]);
    assert_eq!(rx.try_next(), Ok(Some(Ok(1))));
    assert_eq!(rx.try_next(), Ok(Some(Err("boom"))));
    assert_eq!(rx.try_next(), Ok(None));
    let (tx, rx) = throwing::<u32, &'static str>(Policy::Unbounded);
    tx.finish();
    assert_eq!(
        futures::executor::block_on(rx.collect::<Vec<_>>()),
        Vec::<Result<u32, &str>>::new()
    );
}

#[test]
fn suspend_send_waits_for_room_and_a_cancelled_send_delivers_nothing() {
    let (tx, mut rx) = buffered::<u32>(Policy::Suspend(1));
    assert!(tx.push(1).is_enqueued());
    let mut cx = Context::from_waker(Waker::noop());
    {
        let mut send = Box::pin(tx.send(2));
        assert!(send.as_mut().poll(&mut cx).is_pending());
        // Dropped while waiting: the element is gone with the future.
    }
    let mut send = Box::pin(tx.send(3));
    assert!(send.as_mut().poll(&mut cx).is_pending());
    assert_eq!(rx.try_next(), Ok(Some(1)));
    assert_eq!(
        send.as_mut().poll(&mut cx),
        Poll::Ready(YieldResult::Enqueued { remaining: Some(0) })
    );
    drop(send);
    tx.finish();
    assert_eq!(rx.blocking_iter().collect::<Vec<_>>(), [3]);
    assert_eq!(rx.stats().refused_full, 0, "waiting is not a refused offer");
}

#[test]
fn suspend_zero_is_a_handoff_to_a_waiting_consumer() {
    let (tx, mut rx) = buffered::<u32>(Policy::Suspend(0));
    let producer = std::thread::spawn(move || {
        for i in 0..100 {
            assert!(tx.send_blocking(i).is_enqueued());
        }
    });
    assert_eq!(
        rx.blocking_iter().collect::<Vec<_>>(),
        (0..100).collect::<Vec<_>>()
    );
    producer.join().unwrap();
}

#[test]
fn terminated_wakes_a_waiting_sender() {
    let (tx, rx) = buffered::<u32>(Policy::Suspend(1));
    assert!(tx.push(1).is_enqueued());
    let t = std::thread::spawn(move || tx.send_blocking(2));
    std::thread::sleep(std::time::Duration::from_millis(20));
    drop(rx);
    assert_eq!(t.join().unwrap(), YieldResult::Terminated(2));
}

#[test]
fn many_producers_one_consumer_lose_nothing_and_keep_per_producer_order() {
    let (tx, mut rx) = buffered::<(usize, u32)>(Policy::Suspend(8));
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for i in 0..5_000 {
                    assert!(tx.send_blocking((p, i)).is_enqueued());
                }
            })
        })
        .collect();
    drop(tx);
    let mut next = [0u32; 4];
    let mut count = 0;
    for (p, i) in rx.blocking_iter() {
        assert_eq!(i, next[p], "per-producer FIFO");
        next[p] += 1;
        count += 1;
    }
    for p in producers {
        p.join().unwrap();
    }
    assert_eq!(count, 20_000);
}

#[test]
fn termination_runs_exactly_once_under_racing_finish_and_drop() {
    for _ in 0..200 {
        let (tx, rx) = buffered::<u32>(Policy::KeepNewest(4));
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        tx.on_termination(move |_| {
            c.fetch_add(1, Ordering::SeqCst);
        });
        let tx2 = tx.clone();
        let a = std::thread::spawn(move || {
            let _ = tx.push(1);
            tx.finish();
        });
        let b = std::thread::spawn(move || {
            let _ = tx2.push(2);
            drop(tx2);
        });
        let c = std::thread::spawn(move || drop(rx));
        a.join().unwrap();
        b.join().unwrap();
        c.join().unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }
}

#[derive(Debug, Clone)]
enum Op {
    Push(u16),
    Take,
}

fn policies() -> impl Strategy<Value = Policy> {
    prop_oneof![
        Just(Policy::Unbounded),
        (0usize..5).prop_map(Policy::KeepOldest),
        (0usize..5).prop_map(Policy::KeepNewest),
        (0usize..5).prop_map(Policy::Reject),
        (0usize..5).prop_map(Policy::Suspend),
    ]
}

proptest! {
    /// Conservation: every pushed element is delivered, or lost with a
    /// verdict naming it (dropped, rejected, full), exactly once. Order: what is
    /// delivered is a subsequence of what was pushed.
    #[test]
    fn conservation_and_order(policy in policies(), ops in prop::collection::vec(
        prop_oneof![any::<u16>().prop_map(Op::Push), Just(Op::Take)], 0..200)) {
        let (tx, mut rx) = buffered::<(u32, u16)>(policy);
        let mut pushed = Vec::new();
        let mut lost = Vec::new();
        let mut delivered = Vec::new();
        for (seq, op) in ops.into_iter().enumerate() {
            match op {
                Op::Push(v) => {
                    let e = (seq as u32, v);
                    pushed.push(e);
                    match tx.push(e) {
                        YieldResult::Enqueued { remaining } => {
                            prop_assert_eq!(remaining, policy.capacity().map(|c| c - tx.len()));
                        }
                        YieldResult::Evicted(d) | YieldResult::Dropped(d) | YieldResult::Rejected(d) | YieldResult::Full(d) => {
                            lost.push(d)
                        }
                        other => prop_assert!(false, "unexpected {:?}", other),
                    }
                    if let Some(cap) = policy.capacity() { prop_assert!(tx.len() <= cap); }
                }
                Op::Take => if let Ok(Some(e)) = rx.try_next() { delivered.push(e) },
            }
        }
        tx.finish();
        delivered.extend(rx.blocking_iter());
        let mut all: Vec<_> = delivered.iter().chain(lost.iter()).copied().collect();
        all.sort();
        prop_assert_eq!(&all, &pushed, "each element delivered or lost, exactly once");
        prop_assert!(delivered.windows(2).all(|w| w[0].0 < w[1].0), "FIFO");
        let s = rx.stats();
        prop_assert_eq!(s.offered as usize, pushed.len());
        prop_assert_eq!(
            (s.taken as usize, (s.dropped + s.rejected + s.refused_full) as usize),
            (delivered.len(), lost.len())
        );
        if matches!(policy, Policy::KeepNewest(_)) {
            // What is delivered after the last take is the newest suffix.
            prop_assert!(lost.windows(2).all(|w| w[0].0 < w[1].0));
        }
    }
}
