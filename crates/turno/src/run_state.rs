//! The run-state word of an actor: one byte in its mailbox that says whether
//! the actor has been told about work (`NOTIFIED`), whether a runner holds
//! its cell (`RUNNING`) and whether it is parked (`PARKED`). It is the
//! wake-up dedup flag (a push that finds the actor idle schedules it; later
//! pushes do not), the cell's lock, and the owner of the actor's one run
//! queue entry: so a message costs three read-modify-writes of it (the
//! producer's `notify`, the runner's `claim` and its release) where a
//! mutex's lock and unlock and a flag's two swaps were four, and a run
//! queue holds a slot by pointer, without a strong count (the two
//! read-modify-writes of the `Arc` count per wake-up and run are gone).
//!
//! | word | meaning | a push (`notify`) | an unpark |
//! |---|---|---|---|
//! | `0` | idle: in no run queue, no runner | schedules the actor (on a runner thread with an empty hand-off slot: claims it, `RUNNING`, for that slot) | schedules it |
//! | `NOTIFIED` | queued: **exactly one** run queue entry | nothing | nothing |
//! | `RUNNING` | a runner holds the cell, nothing marked since its claim or its last look | marks `NOTIFIED` | marks `NOTIFIED` |
//! | `RUNNING \| NOTIFIED` | held, and marked since | nothing | nothing |
//! | `PARKED` (`\| NOTIFIED`) | parked: blocked with work, in no run queue (see `engine::slot`) | marks `NOTIFIED` | schedules it |
//!
//! - A slot is built held (`RUNNING`): pushes before its registration
//!   mark it; registering releases it to `NOTIFIED` and queues its entry.
//! - A producer publishes its element, then `fetch_or(NOTIFIED)`; it
//!   schedules the actor only when the word was `0`.
//! - A runner takes the slot's entry from a run queue and claims it:
//!   `NOTIFIED` becomes `RUNNING` (one compare-exchange; an entry exists
//!   only in that state, so the claim does not fail).
//! - The claimed hand-off ([`crate::hand_off`]): a producer on a runner
//!   thread whose hand-off slot is empty claims an idle actor for that
//!   thread in its mark (`0` becomes `RUNNING`, one compare-exchange,
//!   [`RunState::notify_or_claim`]) and puts the slot there, not in a run
//!   queue: that thread runs it next without a claim of its own. A slot
//!   moved from there to a run queue others take from gets its claim
//!   given up first (a swap to `NOTIFIED`: [`RunState::release_queued`]).
//!   So a message handed off on one thread costs the receiver's word one
//!   read-modify-write fewer.
//! - The runner's release after a look that found nothing is one
//!   compare-exchange of `RUNNING` to `0` (idle), or to `PARKED`. It fails
//!   exactly when something marked the word since the claim or the last
//!   look: the runner then clears the mark (a swap, so that it synchronizes
//!   with every marker) and looks again. A release with work left (the
//!   batch's end) swaps the word to `NOTIFIED` and queues the one entry.
//! - Unparking (the slot's state word says the actor may run again, or a
//!   control message came) schedules a parked or idle actor, and marks a
//!   held one (whose runner then looks again, and runs or parks it anew).
//!
//! **No lost wake-up**: a producer's mark is either before the release in
//! the word's order (the release fails and the runner's next look, after
//! its clearing swap, sees the element published before the mark) or after
//! it (the producer reads `0` and schedules). **One runner at a time**:
//! only a claim sets `RUNNING` (a runner's, or a hand-off's from idle),
//! and only the holder clears it; the claim's
//! acquire and the release's release order one runner's turns before the
//! next's. **At most one queue entry**, made only by the step that moves
//! the word to `NOTIFIED` from a state without it (`0`, `PARKED`, or the
//! holder's requeue), consumed by the claim. **A queued slot is alive**:
//! its cell holds an address of it until the actor is finalized, which a
//! claimed runner does (no entry exists then), and the finalizing runner
//! never releases: its word keeps `RUNNING`, so nothing queues or runs the
//! actor again. (The runner keeps a strong reference of its own across the
//! drop of the cell: `Engine::run_slot`.)
//!
//! The test kit's mailboxes, whose cell the kit steps by hand (nothing
//! claims or schedules them), use the word as the flag of before: cleared
//! before the consumer's last look and set back if work raced in (see
//! `Mailbox::idle`, which tells the two apart by the `RUNNING` bit).
//!
//! `tests/sched_loom.rs` checks the protocol on the real engine, and that
//! its model catches a release made by a plain store.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed};

use crate::sync::AtomicU8;

/// Told about work: queued, parked, or marked while running.
const NOTIFIED: u8 = 1;
/// A runner holds the cell.
const RUNNING: u8 = 2;
/// Parked: blocked with work, in no run queue.
const PARKED: u8 = 4;

/// See the [module docs](self).
pub(crate) struct RunState(AtomicU8);

impl RunState {
    /// An actor's word as its slot is built: held by the builder (pushes
    /// before the registration mark it and schedule nothing, so the
    /// registration's requeue makes the one queue entry; an unregistered
    /// child's owner reaches the cell as the holder).
    pub(crate) fn held() -> Self {
        RunState(AtomicU8::new(RUNNING))
    }

    /// A test kit mailbox's word (never claimed or scheduled: the flag).
    pub(crate) fn unheld() -> Self {
        RunState(AtomicU8::new(0))
    }

    /// A producer's mark, after its element is visible: true when the actor
    /// was idle and the caller must schedule it.
    #[inline]
    pub(crate) fn notify(&self) -> bool {
        self.0.fetch_or(NOTIFIED, AcqRel) == 0
    }

    /// A producer's mark on a runner thread whose hand-off slot is empty
    /// (see [`crate::hand_off`]), after its element is visible: from idle
    /// the word is claimed for this thread (`0` -> `RUNNING`) and true
    /// returned (the caller puts the slot in its hand-off slot, claimed);
    /// any other word is marked as [`RunState::notify`] marks it, and the
    /// caller schedules nothing. One read-modify-write either way (a
    /// `fetch_or` whose old value is used is a compare-exchange loop too).
    #[inline]
    pub(crate) fn notify_or_claim(&self) -> bool {
        let mut now = self.0.load(Relaxed);
        loop {
            let new = if now == 0 { RUNNING } else { now | NOTIFIED };
            // Even when the word already has `NOTIFIED`, a read-modify-write:
            // the holder's release must fail on it, and a claim must read
            // it, so that their next look sees this push's element.
            match self.0.compare_exchange_weak(now, new, AcqRel, Relaxed) {
                Ok(_) => return now == 0,
                Err(seen) => now = seen,
            }
        }
    }

    /// The loom model's injected fault: the hand-off's claim by a load and
    /// a store, which overwrites a mark (and its queue entry) another
    /// producer made between the two (`tests/sched_loom.rs` shows the model
    /// catches it).
    #[cfg(turno_loom)]
    pub(crate) fn notify_or_claim_by_store(&self) -> bool {
        if self.0.load(Acquire) == 0 {
            self.0.store(RUNNING, std::sync::atomic::Ordering::Release);
            return true;
        }
        self.0.fetch_or(NOTIFIED, AcqRel);
        false
    }

    /// True while a runner holds the cell (a runner asks about its own
    /// claim: the single-thread protocol never sets it).
    #[inline]
    pub(crate) fn is_running(&self) -> bool {
        self.0.load(Relaxed) & RUNNING != 0
    }

    /// Claims the cell of a slot taken from a run queue (its one entry).
    /// False only if the word is not `NOTIFIED`, which no correct run
    /// queue entry meets (checked in debug builds); the entry is then left.
    #[inline]
    pub(crate) fn claim(&self) -> bool {
        let claimed = self
            .0
            .compare_exchange(NOTIFIED, RUNNING, AcqRel, Acquire)
            .is_ok();
        debug_assert!(claimed, "a run queue entry of an actor not queued");
        claimed
    }

    /// Unparks: true when the caller must schedule the actor (it was
    /// parked or idle); a held actor is marked instead (its runner looks
    /// again), a queued one left alone.
    pub(crate) fn unpark(&self) -> bool {
        let mut now = self.0.load(Relaxed);
        loop {
            let (new, schedule) = if now & RUNNING != 0 {
                (now | NOTIFIED, false)
            } else if now == NOTIFIED {
                return false;
            } else {
                (NOTIFIED, true)
            };
            match self.0.compare_exchange_weak(now, new, AcqRel, Relaxed) {
                Ok(_) => return schedule,
                Err(seen) => now = seen,
            }
        }
    }

    /// The holder lets go after a look that found nothing: idle. False
    /// when something was marked since the claim or the last look: the
    /// mark is cleared, the cell still held, and the caller looks again.
    #[inline]
    pub(crate) fn release_idle(&self) -> bool {
        self.release_to(0)
    }

    /// The holder lets go of a parked (blocked) actor: pushes do not
    /// schedule it, an unpark does. False as for
    /// [`RunState::release_idle`].
    pub(crate) fn release_parked(&self) -> bool {
        self.release_to(PARKED)
    }

    #[inline]
    fn release_to(&self, to: u8) -> bool {
        if self
            .0
            .compare_exchange(RUNNING, to, AcqRel, Acquire)
            .is_ok()
        {
            return true;
        }
        // A swap, not a store: it reads the last mark, so the look that
        // follows sees every element published before a mark.
        self.0.swap(RUNNING, AcqRel);
        false
    }

    /// The holder lets go with work left: the caller queues the actor's
    /// one entry. (Also the holder of a claimed hand-off that moves it to a
    /// run queue others take from: [`crate::hand_off`].)
    pub(crate) fn release_queued(&self) {
        self.0.swap(NOTIFIED, AcqRel);
    }

    /// Holds the cell for good, whatever the word was: a dropped system
    /// gives its actors up (`AnyBody::abandon`). An entry still queued is
    /// never taken (the system's run queue goes with it), and a later push
    /// only marks the word, as for a finalized actor.
    pub(crate) fn hold_for_good(&self) {
        self.0.swap(RUNNING, AcqRel);
    }

    /// The test kit's protocol's first step of going idle: clears the
    /// mark before the consumer's last look.
    pub(crate) fn clear(&self) {
        self.0.fetch_and(!NOTIFIED, AcqRel);
    }

    /// The test kit's protocol's last step when work raced in: marks
    /// the actor again; true when a producer had marked it meanwhile (and
    /// scheduled it: the actor may go idle here).
    pub(crate) fn remark(&self) -> bool {
        self.0.fetch_or(NOTIFIED, AcqRel) & NOTIFIED != 0
    }

    /// The loom model's injected fault: a release by a plain store, which
    /// overwrites a mark made since the look (`tests/sched_loom.rs` shows
    /// the model catches it).
    #[cfg(turno_loom)]
    pub(crate) fn release_idle_by_store(&self) -> bool {
        self.0.store(0, std::sync::atomic::Ordering::Release);
        true
    }
}
