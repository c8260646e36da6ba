//! Model-checked scheduling protocol (loom): the real mailbox and engine,
//! run by several threads, under every interleaving loom explores.
//!
//! ```text
//! RUSTFLAGS="--cfg turno_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p turno --release --test sched_loom
//! ```
//!
//! Properties:
//! - **no lost wake-up**: a message pushed from another thread while the
//!   actor goes idle is always handled (idle -> scheduled);
//! - **muting releases**: a sender muted by a full suspend mailbox
//!   (running -> muted/parked) is always unparked when another runner drains
//!   the receiver, and its later mail is handled (muted -> scheduled);
//! - **one runner at a time**: a turn never overlaps another turn of the same
//!   actor (the handlers assert it; loom checks the cell's accesses too);
//! - **the run-state word** (`crate::run_state`: the wake-up flag and the
//!   cell's lock in one byte): a push racing with the runner's release, and
//!   a requeue meeting the cell still held, are never lost; a slot is in
//!   the run queue at most once (the queue asserts it: queues hold slots
//!   without a count); the model catches a fault injected into it (a
//!   release by a plain store);
//! - **the claimed hand-off** (`crate::hand_off`: a push on a runner thread
//!   claims an idle actor for that thread's hand-off slot, and the runner
//!   runs it without a claim of its own): a push from another thread
//!   racing with it, and the claimed slot displaced to the run queue, are
//!   never lost; the model catches a claim made by a load and a store;
//! - **the rare-work word** (`Mailbox::rare_pending`: the one byte the
//!   batch loop's message path reads instead of the system lane, evictions
//!   owed and re-deliveries): a control message pushed from another thread
//!   while the actor takes its mail is never lost; the model catches a
//!   push that forgets to set the word.
//!
//! Each model runs a bounded race (no spinning), then drains on one thread:
//! a lost wake-up leaves mail that no queued slot will run, and the final
//! count comes up short.

#![cfg(turno_loom)]

use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;
use turno::deterministic::SharedRunner;
use turno::{Actor, Addr, Context, Policy, Props};

/// Counts messages and checks that turns never overlap.
struct Counter {
    handled: Arc<AtomicUsize>,
    in_turn: Arc<AtomicBool>,
}

impl Actor for Counter {
    type Msg = u32;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: u32) {
        assert!(
            !self.in_turn.swap(true, Ordering::SeqCst),
            "overlapping turns"
        );
        self.handled.fetch_add(1, Ordering::SeqCst);
        self.in_turn.store(false, Ordering::SeqCst);
    }
}

fn counter(runner: &SharedRunner, policy: Policy) -> (Addr<u32>, Arc<AtomicUsize>) {
    let handled = Arc::new(AtomicUsize::new(0));
    let in_turn = Arc::new(AtomicBool::new(false));
    let (h, t) = (handled.clone(), in_turn.clone());
    let addr = runner.spawn(Props::new().mailbox(policy), move || Counter {
        handled: h.clone(),
        in_turn: t.clone(),
    });
    (addr, handled)
}

/// Runs at most `n` units of work (no spinning: loom explores every
/// interleaving of a bounded run).
fn run_some(runner: &SharedRunner, n: usize) {
    for _ in 0..n {
        if !runner.run_one() {
            return;
        }
    }
}

/// After the race, one thread drains what is queued. A lost wake-up leaves
/// mail behind that no queued slot will ever run: the count comes up short.
fn drain(runner: &SharedRunner) {
    while runner.run_one() {}
}

/// A push from another thread racing with the runner's release of the
/// run-state word (`crate::run_state`): either the release sees the mark
/// and the runner looks again, or the push sees the actor idle and
/// schedules it.
fn push_racing_with_idle(runner: fn() -> SharedRunner) {
    loom::model(move || {
        let runner = Arc::new(runner());
        let (addr, handled) = counter(&runner, Policy::Unbounded);
        let _ = addr.try_send(0);
        let sender = {
            let addr = addr.clone();
            thread::spawn(move || {
                let _ = addr.try_send(1);
            })
        };
        // The start and the first message, racing the push.
        run_some(&runner, 3);
        sender.join().unwrap();
        drain(&runner);
        assert_eq!(handled.load(Ordering::SeqCst), 2, "a push was lost");
    });
}

#[test]
fn a_push_racing_with_going_idle_is_never_lost() {
    push_racing_with_idle(SharedRunner::new);
}

/// The same model with the runner's release made by a plain store: loom
/// must find the push whose mark the store overwrites.
#[test]
#[should_panic(expected = "a push was lost")]
fn the_model_catches_a_release_by_store() {
    push_racing_with_idle(SharedRunner::with_release_by_store_bug);
}

/// Counts messages; its `stopped` hook sets a flag.
struct Stoppable {
    handled: Arc<AtomicUsize>,
    stopped: Arc<AtomicBool>,
}

impl Actor for Stoppable {
    type Msg = u32;
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: u32) {
        self.handled.fetch_add(1, Ordering::SeqCst);
    }
    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.stopped.store(true, Ordering::SeqCst);
    }
}

/// A control message pushed from another thread while the actor takes its
/// mail: the push sets the mailbox's rare-work word before its run-state
/// mark, and the batch loop's message path, which looks at that word
/// alone (not at the system lane), goes to the system lane whenever it is
/// set. Whether the stop meets the actor running, with mail queued, or
/// idle, it runs: the actor is stopped once the queue is drained.
fn control_racing_with_mail(runner: fn() -> SharedRunner) {
    loom::model(move || {
        let runner = Arc::new(runner());
        let handled = Arc::new(AtomicUsize::new(0));
        let stopped = Arc::new(AtomicBool::new(false));
        let (h, s) = (handled.clone(), stopped.clone());
        let addr = runner.spawn(Props::new(), move || Stoppable {
            handled: h.clone(),
            stopped: s.clone(),
        });
        // Started before the race.
        drain(&runner);
        let _ = addr.try_send(0);
        let _ = addr.try_send(1);
        let stopper = {
            let runner = runner.clone();
            let id = addr.id();
            thread::spawn(move || runner.stop(id))
        };
        run_some(&runner, 2);
        stopper.join().unwrap();
        drain(&runner);
        assert!(stopped.load(Ordering::SeqCst), "a control was lost");
        assert!(handled.load(Ordering::SeqCst) <= 2);
    });
}

#[test]
fn a_control_racing_with_the_message_path_is_never_lost() {
    control_racing_with_mail(SharedRunner::new);
}

/// The same model with a system-lane push that does not set the rare-work
/// word: loom must find the stop the message path never looks for.
#[test]
#[should_panic(expected = "a control was lost")]
fn the_model_catches_a_push_that_forgets_the_rare_word() {
    control_racing_with_mail(SharedRunner::with_rare_mark_bug);
}

#[test]
fn two_runners_never_overlap_turns_of_one_actor() {
    loom::model(|| {
        let runner = Arc::new(SharedRunner::new());
        let (addr, handled) = counter(&runner, Policy::Unbounded);
        for i in 0..3 {
            let _ = addr.try_send(i);
        }
        let other = {
            let runner = runner.clone();
            thread::spawn(move || run_some(&runner, 2))
        };
        run_some(&runner, 2);
        other.join().unwrap();
        drain(&runner);
        assert_eq!(handled.load(Ordering::SeqCst), 3);
    });
}

/// On each message, forwards it to every actor of `to`, in order.
struct Forward {
    to: Vec<Addr<u32>>,
}

impl Actor for Forward {
    type Msg = u32;
    fn handle(&mut self, ctx: &mut Context<'_, Self>, m: u32) {
        for to in &self.to {
            let _ = ctx.send(to, m);
        }
    }
}

/// The claimed hand-off (`crate::hand_off`): a turn on a runner thread with
/// a hand-off slot (as a threaded worker has its LIFO slot) sends to an
/// idle actor, and the push claims it for that thread (`0` -> `RUNNING`)
/// instead of marking it for a claim later; another thread pushes to the
/// same actor meanwhile. Either that push finds the actor claimed and marks
/// it, so the runner's release fails and it looks again, or it comes first
/// and queues the actor, and the hand-off's push only marks it. With
/// `fan_out`, the turn then wakes a second idle actor, which displaces the
/// first from the hand-off slot: the claim is given up (`NOTIFIED`) before
/// the first goes to the run queue, where a claim takes it. Every message
/// is handled, no two turns of one actor overlap (the handler asserts it),
/// and a slot has at most one run queue entry (the queue asserts it).
fn hand_off_racing_with_a_push(runner: fn() -> SharedRunner, fan_out: bool) {
    // Bounded as the muted-sender model is: the race is one push against
    // one turn's push, which two preemptions already interleave every way
    // (exhaustive, it runs for minutes).
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        let runner = Arc::new(runner());
        let here = runner.hand_off_here();
        let (first, handled) = counter(&runner, Policy::Unbounded);
        let (second, handled_second) = counter(&runner, Policy::Unbounded);
        let to = if fan_out {
            vec![first.clone(), second.clone()]
        } else {
            vec![first.clone()]
        };
        let forward = runner.spawn(Props::new(), move || Forward { to: to.clone() });
        // Started before the race.
        while runner.run_one_here(&here) {}
        // From this runner thread: the push claims the idle forwarder.
        let _ = forward.try_send(0);
        let other = {
            let first = first.clone();
            thread::spawn(move || {
                let _ = first.try_send(1);
            })
        };
        // The forwarder's turn (its push claims `first` or marks it), then
        // the next.
        for _ in 0..2 {
            if !runner.run_one_here(&here) {
                break;
            }
        }
        other.join().unwrap();
        while runner.run_one_here(&here) {}
        assert_eq!(handled.load(Ordering::SeqCst), 2, "a push was lost");
        assert_eq!(
            handled_second.load(Ordering::SeqCst),
            usize::from(fan_out),
            "a displaced hand-off was lost"
        );
        assert_eq!(runner.ready_len(), 0);
    });
}

#[test]
fn a_claimed_hand_off_racing_with_a_push_is_never_lost() {
    hand_off_racing_with_a_push(SharedRunner::new, false);
}

#[test]
fn a_claimed_hand_off_displaced_from_the_hand_off_slot_is_never_lost() {
    hand_off_racing_with_a_push(SharedRunner::new, true);
}

/// The same model with the hand-off's claim made by a load and a store:
/// loom must find the other thread's mark (and its queue entry) that the
/// store overwrites.
#[test]
#[should_panic(expected = "a push was lost")]
fn the_model_catches_a_hand_off_claim_by_store() {
    hand_off_racing_with_a_push(SharedRunner::with_hand_off_claim_bug, false);
}

/// On each message, sends two to the receiver.
struct Sender {
    to: Addr<u32>,
}

impl Actor for Sender {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _m: ()) {
        let _ = ctx.send(&self.to, 1);
        let _ = ctx.send(&self.to, 2);
    }
}

/// A sender muted by a full receiver while another runner drains it: the
/// drain's release unparks the sender, whose requeue can meet its own
/// runner still holding the cell (between parking it and releasing the
/// run-state word): the claim that finds the cell held marks it, so the
/// holder looks again instead of leaving the sender parked for good.
fn muted_sender_model(runner: fn() -> SharedRunner) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        let runner = Arc::new(runner());
        let (receiver, handled) = counter(&runner, Policy::Suspend(1));
        let to = receiver.clone();
        let sender = runner.spawn(Props::new(), move || Sender { to: to.clone() });
        // Start both actors before the race.
        drain(&runner);
        assert!(receiver.try_send(0).is_enqueued()); // the receiver is full
        let _ = sender.try_send(());
        let _ = sender.try_send(());
        // Two runners race: the sender gets muted, the receiver drains.
        let other = {
            let runner = runner.clone();
            thread::spawn(move || run_some(&runner, 3))
        };
        run_some(&runner, 3);
        other.join().unwrap();
        drain(&runner);
        // 1 + 2 + 2 messages reached the receiver, and nobody stays muted.
        assert_eq!(
            handled.load(Ordering::SeqCst),
            5,
            "sender muted: {}, sender depth {}, receiver depth {}",
            runner.is_muted(sender.id()),
            sender.depth(),
            receiver.depth()
        );
        assert!(!runner.is_muted(sender.id()));
        assert_eq!(runner.ready_len(), 0);
    });
}

#[test]
fn a_muted_sender_is_released_by_another_runner() {
    muted_sender_model(SharedRunner::new);
}

/// On each message, sends three to the receiver: the first overfills it,
/// the third can overfill it again after the receiver drained in between.
struct Refiller {
    to: Addr<u32>,
}

impl Actor for Refiller {
    type Msg = ();
    fn handle(&mut self, ctx: &mut Context<'_, Self>, _m: ()) {
        for i in 0..3 {
            ctx.tell(&self.to, i);
        }
    }
}

/// The relisting race: the receiver takes its muted list while the sender's
/// turn is still running; the sender refills it and is listed again, its
/// mute is recorded, and the receiver's release (from the list it took
/// before) must not remove that new mute. Invariant after every completed
/// turn: a sender listed by a mailbox is muted by it, and the other way
/// round. A sender listed but unmuted is never muted again by that mailbox
/// (the "already muted?" check says yes), and the mailbox grows without bound.
fn relisting_model(runner: fn() -> SharedRunner) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        let runner = Arc::new(runner());
        let (receiver, handled) = counter(&runner, Policy::Suspend(1));
        let to = receiver.clone();
        let sender = runner.spawn(Props::new(), move || Refiller { to: to.clone() });
        drain(&runner);
        assert!(receiver.try_send(9).is_enqueued()); // full
        let _ = sender.try_send(());
        let other = {
            let runner = runner.clone();
            let id = receiver.id();
            thread::spawn(move || {
                for _ in 0..2 {
                    runner.run_actor(id);
                }
            })
        };
        runner.run_actor(sender.id());
        other.join().unwrap();
        let listed = runner.is_listed(receiver.id(), sender.id());
        let muted = runner.is_muted(sender.id());
        assert!(
            listed == muted,
            "sender listed but not muted (listed {listed}, muted {muted})"
        );
        drain(&runner);
        assert_eq!(handled.load(Ordering::SeqCst), 4);
        assert!(!runner.is_muted(sender.id()));
        assert!(!runner.is_listed(receiver.id(), sender.id()));
    });
}

#[test]
fn a_sender_relisted_while_its_receiver_drains_stays_muted() {
    relisting_model(SharedRunner::new);
}

/// The same model against the release protocol from before the fix: loom
/// must find the interleaving that leaves the sender listed but unmuted.
#[test]
#[should_panic(expected = "sender listed but not muted")]
fn the_model_catches_the_old_release_protocol() {
    relisting_model(SharedRunner::with_stale_release_bug);
}
