//! Model-checked wake-up of an outside sender waiting for room in a full
//! suspend mailbox (loom): the real mailbox, lane and waiters, the actor
//! run by `SharedRunner` on the main thread, one outside producer filling
//! the last slot and one outside sender refused, under every interleaving
//! (and every stale read) loom explores.
//!
//! ```text
//! RUSTFLAGS="--cfg turno_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p turno --release --test send_loom
//! ```
//!
//! Property: **no lost wake-up of a waiting sender**. The sender is
//! refused, registers, tries again and, refused again, would wait; once
//! the threads have joined and the runner has drained the mailbox, its
//! listener must have been notified (so `Addr::send_blocking` would wake
//! and find room). The wait itself is not loom's (`event_listener`), so
//! the model checks the notification instead of waiting.
//!
//! The race (`Mailbox::after_suspend_take` looks for waiting senders only
//! after a take that saw the lane at `cap - 1` or more): a take that
//! stores its `taken` and then loads `tail` without a fence between can
//! read `tail` from before a producer's claim while that store is not yet
//! visible to the refused sender, and so see less than `cap - 1` queued
//! although the sender was refused. `Lane::take` orders the two with the
//! light side of `crate::asym_fence` (the registration takes the heavy
//! side); the check of the checker removes that fence.

#![allow(unexpected_cfgs)]
#![cfg(turno_loom)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::Notify;
use loom::thread;
use turno::deterministic::SharedRunner;
use turno::lane_model::{Inject, ModelLane};
use turno::send_model::{retry_send, wait_for_space};
use turno::{Actor, Context, Policy, Props, Verdict};

struct Counter(Arc<AtomicUsize>);

impl Actor for Counter {
    type Msg = u32;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: u32) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Suspend(2) with one message queued; an outside producer claims the
/// second slot while an outside sender is refused and registers; the
/// runner takes on the main thread meanwhile, then drains. The sender's
/// thread asserts its own notification; every admitted message is handled.
fn waiting_sender_is_woken(bound: usize, inject: Inject) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(move || {
        ModelLane::<u32>::inject_new(inject);
        let runner = Arc::new(SharedRunner::new());
        let handled = Arc::new(AtomicUsize::new(0));
        let h = handled.clone();
        let addr = runner.spawn(Props::new().mailbox(Policy::Suspend(2)), move || {
            Counter(h.clone())
        });
        // The start, then one message queued.
        while runner.run_one() {}
        assert!(addr.try_send(0).is_enqueued());
        let producer = {
            let addr = addr.clone();
            thread::spawn(move || addr.try_send(1).is_enqueued())
        };
        let drained = Arc::new((AtomicBool::new(false), Notify::new()));
        let sender = {
            let (addr, drained) = (addr.clone(), drained.clone());
            thread::spawn(move || {
                let msg = match addr.try_send(2) {
                    Verdict::Full(back) => back,
                    verdict => return verdict.is_enqueued(),
                };
                let waiting = wait_for_space(&addr);
                match retry_send(&addr, msg) {
                    Verdict::Full(_) => {}
                    verdict => return verdict.is_enqueued(),
                }
                // It would wait now, registered: once the runner has
                // drained the mailbox, one of its takes must have notified
                // it (`send_blocking` would wake and find room).
                // (loom's `Notify` may wake spuriously: the flag says.)
                while !drained.0.load(Ordering::SeqCst) {
                    drained.1.wait();
                }
                assert!(
                    waiting.notified(),
                    "a sender waits, and no take that made room woke it"
                );
                false
            })
        };
        // The runner races both: its takes may read stale words.
        runner.run_one();
        let mut admitted = 1 + usize::from(producer.join().unwrap());
        while runner.run_one() {}
        drained.0.store(true, Ordering::SeqCst);
        drained.1.notify();
        admitted += usize::from(sender.join().unwrap());
        // Nothing admitted is lost (a push that lands after the drain
        // above scheduled the actor again).
        while runner.run_one() {}
        assert_eq!(handled.load(Ordering::SeqCst), admitted);
    });
}

#[test]
fn a_waiting_sender_is_woken_by_the_takes_that_drain_the_mailbox() {
    waiting_sender_is_woken(2, Inject::None);
}

/// The same model with three preemptions (a few seconds).
#[test]
fn a_waiting_sender_is_woken_with_three_preemptions() {
    waiting_sender_is_woken(3, Inject::None);
}

/// The check of the checker: the take without its fence (the lane before
/// this model) loses the waiting sender's wake-up, and loom finds it.
#[test]
fn the_model_catches_a_take_without_its_fence() {
    let caught = catch_unwind(AssertUnwindSafe(|| {
        waiting_sender_is_woken(2, Inject::TakeWithoutFence)
    }));
    assert!(
        caught.is_err(),
        "loom found no lost wake-up in a take without its fence"
    );
}
