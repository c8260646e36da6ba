//! Backpressure sources: pull-based unfold, the watermark source (SwiftNIO's
//! HighLowWatermark), and the bridge into a suspend mailbox.

#![cfg(not(turno_loom))]

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use turno::System;

use futures::{Stream, StreamExt};
use proptest::prelude::*;
use turno::stream::{
    buffered, pipe_to_actor, rendezvous, unfold, watermark, Demand, HighLowWatermark, Termination,
    WatermarkDelegate, WatermarkError,
};
use turno::{Actor, Context as Turn, DetSystem, Policy, Props};

#[test]
fn unfold_runs_nothing_until_asked_and_none_ends_it() {
    let calls = Arc::new(AtomicU32::new(0));
    let c = calls.clone();
    let mut s = Box::pin(unfold(0u32, move |n| {
        c.fetch_add(1, Ordering::SeqCst);
        async move { (n < 3).then_some((n, n + 1)) }
    }));
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let mut cx = Context::from_waker(Waker::noop());
    assert_eq!(s.as_mut().poll_next(&mut cx), Poll::Ready(Some(0)));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let rest = futures::executor::block_on(s.as_mut().collect::<Vec<_>>());
    assert_eq!(rest, [1, 2]);
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    assert_eq!(s.as_mut().poll_next(&mut cx), Poll::Ready(None));
    assert_eq!(calls.load(Ordering::SeqCst), 4, "ended for good");
}

#[test]
fn unfold_waits_on_its_future_without_calling_again() {
    let (tx, rx) = rendezvous::<u32>();
    let calls = Arc::new(AtomicU32::new(0));
    let c = calls.clone();
    let mut s = Box::pin(unfold(rx, move |rx| {
        c.fetch_add(1, Ordering::SeqCst);
        async move { rx.recv().await.ok().map(|v| (v, rx)) }
    }));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(s.as_mut().poll_next(&mut cx).is_pending());
    assert!(s.as_mut().poll_next(&mut cx).is_pending());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let mut send = Box::pin(tx.send(7));
    assert!(send.as_mut().poll(&mut cx).is_pending());
    assert_eq!(s.as_mut().poll_next(&mut cx), Poll::Ready(Some(7)));
}

#[derive(Default)]
struct Probe {
    log: Mutex<Vec<&'static str>>,
}
impl WatermarkDelegate for Probe {
    fn produce_more(&self) {
        self.log.lock().unwrap().push("produce_more");
    }
    fn did_terminate(&self) {
        self.log.lock().unwrap().push("did_terminate");
    }
}
impl Probe {
    fn take(&self) -> Vec<&'static str> {
        std::mem::take(&mut self.log.lock().unwrap())
    }
}

#[test]
fn watermarks_validate() {
    assert_eq!(
        HighLowWatermark::new(5, 2),
        Err(WatermarkError::LowAboveHigh { low: 5, high: 2 })
    );
    assert_eq!(HighLowWatermark::new(0, 0), Err(WatermarkError::ZeroHigh));
    assert!(HighLowWatermark::new(2, 2).is_ok());
}

#[test]
fn demand_stops_at_high_and_resumes_below_low_once_per_edge() {
    let probe = Arc::new(Probe::default());
    let (src, mut s) = watermark::<u32, _>(HighLowWatermark::new(2, 5).unwrap(), probe.clone());
    for i in 0..4 {
        assert_eq!(src.push(i), Demand::ProduceMore, "depth {} < 5", i + 1);
    }
    assert_eq!(src.push(4), Demand::StopProducing, "depth 5 >= high");
    assert_eq!(src.push_all([5, 6]), Demand::StopProducing, "still above");
    // depth 7 -> 6, 5, 4, 3, 2: not below low, no signal.
    for i in 0..5 {
        assert_eq!(s.next_blocking(), Some(i));
    }
    assert!(probe.take().is_empty());
    assert_eq!(s.next_blocking(), Some(5)); // depth 1 < 2: demand back
    assert_eq!(probe.take(), ["produce_more"]);
    assert_eq!(s.next_blocking(), Some(6)); // depth 0: already on, no repeat
    assert!(probe.take().is_empty());
    src.finish();
    assert_eq!(src.push(9), Demand::Dropped);
    assert_eq!(s.next_blocking(), None);
    assert_eq!(probe.take(), ["did_terminate"]);
    assert_eq!(s.next_blocking(), None);
    drop(s);
    drop(src);
    assert!(probe.take().is_empty(), "did_terminate exactly once");
}

#[test]
fn a_waiting_consumer_asks_for_more_and_finish_terminates_at_once() {
    let probe = Arc::new(Probe::default());
    let (src, mut s) = watermark::<u32, _>(HighLowWatermark::new(1, 2).unwrap(), probe.clone());
    let mut cx = Context::from_waker(Waker::noop());
    assert!(s.poll_next_unpin(&mut cx).is_pending());
    assert_eq!(probe.take(), ["produce_more"], "empty buffer: 0 < low");
    // The waiting consumer gets the element directly: depth stays 0.
    assert_eq!(src.push(1), Demand::ProduceMore);
    assert_eq!(s.poll_next_unpin(&mut cx), Poll::Ready(Some(1)));
    assert!(s.poll_next_unpin(&mut cx).is_pending());
    src.finish();
    assert_eq!(probe.take(), ["did_terminate"]);
    assert_eq!(s.poll_next_unpin(&mut cx), Poll::Ready(None));
}

#[test]
fn dropping_the_consumer_terminates_once_even_after_finish() {
    let probe = Arc::new(Probe::default());
    let (src, s) = watermark::<u32, _>(HighLowWatermark::new(1, 2).unwrap(), probe.clone());
    let _ = src.push(1);
    src.finish();
    assert!(
        probe.take().is_empty(),
        "elements remain: not yet terminated"
    );
    drop(s);
    assert_eq!(probe.take(), ["did_terminate"]);
    drop(src);
    assert!(probe.take().is_empty());
}

struct Slow {
    seen: Arc<Mutex<Vec<u32>>>,
}
impl Actor for Slow {
    type Msg = u32;
    fn handle(&mut self, _ctx: &mut Turn<'_, Self>, n: u32) {
        self.seen.lock().unwrap().push(n);
    }
}

#[test]
fn a_suspend_mailbox_is_backpressure_on_the_stream() {
    let mut sys = DetSystem::new(3);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let actor = sys
        .spawn(Props::new().mailbox(Policy::Suspend(2)), move || Slow {
            seen: s.clone(),
        })
        .unwrap();
    // The upstream is a suspend(1) stream: when the pipe stops pulling, the
    // producer's push is refused (Full), i.e. the producer feels it.
    let (tx, input) = buffered::<u32>(Policy::Suspend(1));
    let mut pipe = Box::pin(pipe_to_actor(input, &actor, |n| n));
    let mut cx = Context::from_waker(Waker::noop());
    let mut next = 0;
    let mut refused = 0;
    fn push_all(tx: &turno::stream::Continuation<u32>, next: &mut u32, refused: &mut u32) {
        while *next < 10 {
            match tx.push(*next) {
                turno::stream::YieldResult::Enqueued { .. } => *next += 1,
                turno::stream::YieldResult::Full(_) => {
                    *refused += 1;
                    return;
                }
                other => panic!("{other:?}"),
            }
        }
    }
    push_all(&tx, &mut next, &mut refused);
    assert!(pipe.as_mut().poll(&mut cx).is_pending());
    push_all(&tx, &mut next, &mut refused);
    assert!(pipe.as_mut().poll(&mut cx).is_pending());
    assert_eq!(actor.depth(), 2, "the mailbox is full");
    assert!(refused >= 1, "the producer was pushed back");
    while next < 10 {
        push_all(&tx, &mut next, &mut refused);
        let _ = pipe.as_mut().poll(&mut cx);
        sys.run_until_idle().unwrap();
        let _ = pipe.as_mut().poll(&mut cx);
    }
    drop(tx);
    let report = loop {
        sys.run_until_idle().unwrap();
        if let Poll::Ready(r) = pipe.as_mut().poll(&mut cx) {
            break r;
        }
    };
    sys.run_until_idle().unwrap();
    assert_eq!(report.enqueued, 10);
    assert_eq!(
        *seen.lock().unwrap(),
        (0..10).collect::<Vec<_>>(),
        "nothing lost"
    );
    assert_eq!(
        actor.stats().max_depth,
        2,
        "the mailbox never exceeded its bound"
    );
}

#[test]
fn a_stopped_actor_ends_the_pipe_and_cancels_the_stream() {
    let mut sys = DetSystem::new(1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let actor = sys
        .spawn(Props::new(), move || Slow { seen: s.clone() })
        .unwrap();
    sys.stop(actor.id());
    sys.run_until_idle().unwrap();
    let (tx, input) = buffered::<u32>(Policy::Unbounded);
    let term = Arc::new(Mutex::new(None));
    let t = term.clone();
    tx.on_termination(move |x| *t.lock().unwrap() = Some(x));
    let _ = tx.push(1);
    let report = futures::executor::block_on(pipe_to_actor(input, &actor, |n| n));
    assert!(report.closed);
    assert_eq!(*term.lock().unwrap(), Some(Termination::Cancelled));
}

#[derive(Default)]
struct Count {
    produce_more: AtomicU32,
    terminated: AtomicU32,
}
impl WatermarkDelegate for Count {
    fn produce_more(&self) {
        self.produce_more.fetch_add(1, Ordering::SeqCst);
    }
    fn did_terminate(&self) {
        self.terminated.fetch_add(1, Ordering::SeqCst);
    }
}

proptest! {
    /// Against a model of NIO's HighLowWatermark state machine: each push
    /// answers `depth < high`; each take recomputes demand as `depth < low`
    /// and calls `produce_more` exactly on an off-to-on edge; order is kept;
    /// `did_terminate` runs once.
    #[test]
    fn watermark_matches_the_nio_model(
        (low, high) in (1usize..6).prop_flat_map(|h| (0..=h, Just(h))),
        ops in prop::collection::vec(prop_oneof![(1usize..4).prop_map(Some), Just(None)], 0..120),
    ) {
        let count = Arc::new(Count::default());
        let marks = HighLowWatermark::new(low, high).unwrap();
        let (src, mut s) = watermark::<u32, _>(marks, count.clone());
        let mut cx = Context::from_waker(Waker::noop());
        let (mut depth, mut outstanding, mut calls) = (0usize, false, 0u32);
        let (mut next, mut expect) = (0u32, 0u32);
        for op in ops {
            match op {
                Some(k) => {
                    let demand = src.push_all((0..k).map(|_| { next += 1; next - 1 }));
                    depth += k;
                    outstanding = depth < high;
                    let want = if outstanding { Demand::ProduceMore } else { Demand::StopProducing };
                    prop_assert_eq!(demand, want);
                }
                // Take only when something is buffered: a waiting consumer
                // (a hand-off) is covered by the unit tests.
                None if depth > 0 => {
                    prop_assert_eq!(s.poll_next_unpin(&mut cx), Poll::Ready(Some(expect)));
                    expect += 1;
                    depth -= 1;
                    let demand = depth < low;
                    if demand && !outstanding {
                        calls += 1;
                    }
                    outstanding = demand;
                    prop_assert_eq!(count.produce_more.load(Ordering::SeqCst), calls);
                }
                None => {}
            }
        }
        src.finish();
        drop(src);
        let rest: Vec<u32> = std::iter::from_fn(|| s.next_blocking()).collect();
        prop_assert_eq!(rest, (expect..next).collect::<Vec<_>>());
        drop(s);
        prop_assert_eq!(count.terminated.load(Ordering::SeqCst), 1);
    }
}
