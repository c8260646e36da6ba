//! Running one actor: a batch of turns (control messages first), then
//! requeue, park or idle; and applying a turn's effects in a fixed order.

use std::sync::Arc;

use super::slot::Queued;
use super::slot::{Slot, BUSY};
use super::tree::Then;
use super::{Engine, Flow};
use crate::cell::{AnyCell, Step, TurnOutcome};
use crate::effects::Effects;
use crate::run_state::RunState;
use crate::supervision::ExitReason;
use crate::system_lane::{Control, Signal};
use crate::timer::TimerKey;
use crate::trace::ActorEvent;

/// How a batch ended ([`Engine::run_cell`]), for its caller to act on after
/// it stops borrowing the cell: on a system whose runners share the cell
/// through the run-state word (see [`crate::run_state`]), the release comes
/// last, and no other runner may touch the cell before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// Nothing left: marked idle on one thread; released to idle by a
    /// claimed runner (which looks again if its release finds a mark).
    Idle,
    /// Work left (the batch is spent, or control came): queue it again.
    Requeue,
    /// Blocked with work: parked (`PARKED` in the slot's state word).
    Parked,
    /// The actor is finalized: its cell is dropped, and a claimed runner
    /// keeps the claim for good, so nothing runs it again.
    Finalized,
}

impl Engine {
    /// Runs up to `batch` units of work of one actor (control messages
    /// first), then requeues, parks or idles it. Returns the turns run.
    /// `queued` is the slot's run queue entry, taken by the caller;
    /// `claimed`: it is a claimed hand-off, whose push claimed the slot's
    /// run-state word for this thread already (see [`crate::hand_off`]).
    ///
    /// `fx` is the caller's effects record, empty, reused by every batch
    /// it runs (a worker, a local or deterministic system owns one): a
    /// turn that only sends leaves it empty and skips `apply` altogether,
    /// and no batch builds, drops or fetches a record of its own.
    pub(crate) fn run_slot(
        &self,
        queued: Queued,
        claimed: bool,
        batch: usize,
        fx: &mut Effects,
    ) -> usize {
        // SAFETY: the caller took the entry from its run queue (or its
        // hand-off slot, claimed) and runs it now; `run_batch` claims the
        // slot before anything else, unless it is claimed already, and the
        // body's reference ends with the call.
        #[allow(unsafe_code)]
        let body = unsafe { queued.body() };
        // SAFETY: as above: `queued` is the entry of the slot whose body
        // `body` is, taken to run it now.
        #[allow(unsafe_code)]
        let (ran, last) = unsafe { body.run_batch(self, queued, claimed, batch, fx) };
        // The cell's address of its own slot went with the finalized cell:
        // this one, taken before, may be the last, so it goes only now that
        // the body is no longer borrowed.
        drop(last);
        ran
    }

    /// [`Engine::run_slot`] on the cell (claimed through the run-state
    /// word), compiled for
    /// each cell type (the turns' calls are static); returns the turns run
    /// and how the batch ended, which the caller acts on once it no longer
    /// borrows the cell (see [`End`]).
    pub(crate) fn run_cell<C: AnyCell>(
        &self,
        slot: &Arc<Slot>,
        cell: &mut C,
        batch: usize,
        fx: &mut Effects,
    ) -> (usize, End) {
        let mut ran_here = 0;
        let mut flow = Flow::Continue;
        let mut idle = false;
        while ran_here < batch.max(1) && flow == Flow::Continue {
            let blocked = slot.blocked();
            let mut took_last = false;
            match cell.step_hot(blocked, fx) {
                Step::Control(c) => {
                    ran_here += 1;
                    flow = self.control(slot, cell, c);
                }
                // Marked idle: the next push will wake the actor.
                Step::Idle => {
                    idle = true;
                    break;
                }
                // Park it below.
                Step::Blocked => break,
                Step::Ran {
                    outcome: TurnOutcome::Discarded,
                    emptied,
                } => {
                    ran_here += 1;
                    self.release_discarded(slot, fx);
                    took_last = emptied;
                }
                // Failed or not: a failure is in `fx.failed`, which `apply` reads.
                Step::Ran {
                    outcome: TurnOutcome::Handled,
                    emptied,
                } => {
                    ran_here += 1;
                    if !fx.is_untouched() {
                        flow = self.apply_recorded(slot, cell, fx);
                    }
                    took_last = emptied;
                }
            }
            // The turn took the lane's last message: go idle now, as the
            // next step would find nothing and do (the look for control
            // and signals is in `try_idle`). A blocked actor (muted by this
            // turn's sends) goes through `finish`, which parks it.
            if took_last && flow == Flow::Continue && !slot.blocked() && cell.try_idle() {
                idle = true;
                break;
            }
        }
        fx.end_batch();
        if flow == Flow::Finalized {
            // Dropping the cell drops its address of its own slot.
            return (ran_here, End::Finalized);
        }
        if idle {
            return (ran_here, End::Idle);
        }
        (ran_here, self.finish(slot, cell))
    }

    /// [`Engine::apply`] on the record a turn wrote, which is left empty
    /// for the batch's next turn. Out of line, with the take of the record
    /// inside: in the batch loop, the take's writes of the record's eleven
    /// fields had their addresses computed (and kept on the stack) at the
    /// entry of every batch, about 26 instructions a ping-pong message,
    /// whose turns never write the record.
    #[inline(never)]
    fn apply_recorded(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, fx: &mut Effects) -> Flow {
        self.apply(slot, cell, std::mem::take(fx))
    }

    /// A discarded unit of work (no handler ran): the senders its take
    /// released were all of its record. Out of line, as
    /// [`Engine::apply_recorded`].
    #[inline(never)]
    fn release_discarded(&self, slot: &Arc<Slot>, fx: &mut Effects) {
        self.release_from(slot, std::mem::take(&mut fx.unmuted));
        fx.untouch();
    }

    /// After a batch: requeue, park or idle, without losing a wake-up.
    pub(super) fn finish(&self, slot: &Arc<Slot>, cell: &dyn AnyCell) -> End {
        if cell.has_control() || (!slot.blocked() && cell.has_work()) {
            return End::Requeue;
        }
        if slot.try_park() {
            // A control message pushed before `PARKED` was set found nothing
            // to unpark: look again now that it is set. (The push is
            // published before its unpark, a read-modify-write of the state
            // word as this park is, so this look sees it.)
            if cell.has_control() {
                slot.unpark();
            }
            return End::Parked;
        }
        // Not blocked (only this runner can block it again): idle, unless
        // work raced in.
        if cell.try_idle() {
            End::Idle
        } else {
            End::Requeue
        }
    }

    /// A claimed runner's release to idle ([`crate::run_state`]); under
    /// loom, the injected fault's plain store if the model asked for it.
    #[inline]
    pub(crate) fn release_idle(&self, run: &RunState) -> bool {
        #[cfg(turno_loom)]
        if self
            .run_release_bug
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return run.release_idle_by_store();
        }
        run.release_idle()
    }

    /// Queues a slot whose batch ended with work left ([`End::Requeue`]).
    pub(crate) fn requeue(&self, slot: &Arc<Slot>) {
        self.sched.schedule(Queued::of(slot));
    }

    pub(super) fn control(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, c: Control) -> Flow {
        match c {
            Control::Start => {
                let mut fx = Effects::default();
                cell.start(&mut fx);
                self.apply(slot, cell, fx)
            }
            Control::Stop(reason) => self.begin_stop(slot, cell, Then::Finalize(reason)),
            Control::Restart(in_period) => self.begin_stop(slot, cell, Then::Restart(in_period)),
            Control::ChildFailed { child, error } => {
                self.supervise(Some((slot, cell)), child, error)
            }
            Control::ChildTerminated(child) => {
                let then = self.tree.lock().child_terminated(slot.id, child);
                match then {
                    Some(then) => self.complete_stop(slot, cell, then),
                    None => Flow::Continue,
                }
            }
        }
    }

    /// Applies a turn's effects in a fixed order: children, timers, watches,
    /// muting, busy time, stops, self-stop. A failed turn's effects are
    /// dropped (see below).
    pub(super) fn apply(&self, slot: &Arc<Slot>, cell: &mut dyn AnyCell, fx: Effects) -> Flow {
        let id = slot.id;
        let Effects {
            spawned,
            stops,
            stop_self,
            timers_set,
            timers_cancelled,
            watch,
            unwatch,
            muted_by,
            unmuted,
            busy_for,
            failed,
            ..
        } = fx;
        if let Some(error) = failed {
            // A turn that panicked has no effects but its sends (they are
            // out already) and the takes it made: children it spawned never
            // start (their mail becomes dead letters), its timers, watches,
            // stops and busy time are dropped, and the senders its take
            // released are released.
            for s in spawned {
                s.stop_orphan();
            }
            self.release_from(slot, unmuted);
            return self.fail(slot, cell, error);
        }
        for s in spawned {
            let registered = self.register(Some(id), s);
            // `Context::spawn` refused a taken name in this actor's turn, and
            // only this runner registers its children.
            debug_assert_ne!(registered, super::Registered::PathTaken);
        }
        for (key, deadline) in timers_set {
            if let TimerKey::User(timer) = key {
                self.trace(|| ActorEvent::TimerSet {
                    actor: id.into(),
                    timer: timer.into(),
                    deadline_ns: deadline.as_nanos(),
                });
            }
            self.sched.add_timer(id, key, deadline);
        }
        for timer in timers_cancelled {
            self.trace(|| ActorEvent::TimerCancel {
                actor: id.into(),
                timer: timer.into(),
            });
        }
        if !watch.is_empty() || !unwatch.is_empty() {
            let mut tree = self.tree.lock();
            for target in watch {
                if !tree.watch(target, id) {
                    cell.push_signal(Signal::Terminated {
                        actor: target,
                        reason: ExitReason::Stopped,
                    });
                }
            }
            for target in unwatch {
                tree.unwatch(target, id);
            }
        }
        for by in muted_by {
            self.mute(slot, by);
        }
        self.release_from(slot, unmuted);
        if let Some(cost) = busy_for {
            if self.sched.simulates_work() && !cost.is_zero() {
                let until = self.shared.clock.now() + cost;
                self.begin_busy(slot, until);
                slot.block(BUSY);
                self.sched.add_timer(id, TimerKey::WakeUp, until);
            }
        }
        for target in stops {
            if target == id {
                return self.begin_stop(slot, cell, Then::Finalize(ExitReason::Stopped));
            }
            self.push_control(target, Control::Stop(ExitReason::Stopped));
        }
        if stop_self {
            return self.begin_stop(slot, cell, Then::Finalize(ExitReason::Stopped));
        }
        Flow::Continue
    }
}
