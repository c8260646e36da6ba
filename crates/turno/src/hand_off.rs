//! A runner thread's hand-off slot, and the claimed hand-off: a push made on
//! a runner thread to an idle actor of the system that thread runs claims
//! the actor's cell for that thread at once, in the push's one
//! read-modify-write of the run-state word, and puts the slot in the
//! thread's hand-off slot, which only that thread reads and runs next.
//!
//! Without it, a request handed off on one worker pays two read-modify-writes
//! of the receiver's word in a row on that one thread: the push's mark
//! (`0` -> `NOTIFIED`) and, a few hundred instructions later, the runner's
//! claim (`NOTIFIED` -> `RUNNING`). Both say "this thread will run it", so
//! the push claims (`0` -> `RUNNING`) and the runner runs the slot without a
//! claim of its own: a ping-pong message costs three read-modify-writes
//! (the lane's claim, the push's claim, the release) where it cost four.
//!
//! **Why it is sound** (see [`crate::run_state`]): the claim is a
//! compare-exchange from idle, as a runner's claim is from `NOTIFIED`, so
//! it orders the previous holder's turns before this one's (acquire of the
//! previous release), and the push's own element is this thread's own
//! earlier write. Producers on other threads that push meanwhile find the
//! word held and mark it, and the release, which fails on a mark, makes the
//! runner look again. The slot in the hand-off slot is no run queue entry
//! (the word is not `NOTIFIED`): whoever moves it to a queue others take
//! from gives the claim up first ([`Queued::unclaim`], `RUNNING` ->
//! `NOTIFIED`, a swap that keeps a mark's meaning: one entry, queued).
//! It never waits for another thread: the thread that holds it runs it
//! (the threaded worker takes its hand-off slot before anything else, and
//! drains it before it exits; a [`LocalSystem`](crate::LocalSystem)'s owner
//! moves it to the back of its own run queue, which only it takes from,
//! so that its queue stays in wake-up order).
//!
//! Only a thread whose scheduler installed a hand-off slot claims
//! ([`Port::install`]: the threaded workers; a `LocalSystem`'s owner while
//! it runs the system; the loom runner of `tests/sched_loom.rs`), and only while its hand-off slot is empty (a
//! push that would displace an entry goes the general way, through the
//! scheduler). `tests/sched_loom.rs` checks the protocol and that its model
//! catches a claim made by a load and a store.

use std::cell::Cell;

use crate::engine::slot::Queued;
use crate::shared::SystemShared;

#[cfg(not(turno_loom))]
std::thread_local! {
    /// The hand-off slot of this thread's runner, null when the thread runs
    /// none (a constant-initialized `Cell` without a destructor: a look is
    /// one load, no lazy-initialization state).
    static PORT: Cell<*const HandOff> = const { Cell::new(std::ptr::null()) };
}

#[cfg(turno_loom)]
loom::thread_local! {
    /// As above, one per loom thread.
    static PORT: Cell<*const HandOff> = Cell::new(std::ptr::null());
}

/// A runner thread's hand-off slot: the slot it runs next, whether that
/// slot's word was claimed by the push that put it there, and the threaded
/// scheduler's count of it. Owned by the runner's loop (on its stack) and
/// lent to pushes on that thread through [`PORT`]: shared references only,
/// so every field that changes is a `Cell`.
pub(crate) struct HandOff {
    /// The address of the shared state of the system this thread runs: a
    /// push of another system's actor does not claim.
    system: usize,
    slot: Cell<Option<Queued>>,
    /// `slot` was claimed by the push that put it there (its word is
    /// `RUNNING`): the runner runs it without a claim of its own.
    claimed: Cell<bool>,
    /// The threaded scheduler's: `slot` was handed off by the batch running
    /// now and is not counted in its pending count yet (the running batch's
    /// count passes to it when that batch ends; see `threaded::Core`).
    pub(crate) uncounted: Cell<bool>,
}

impl HandOff {
    /// An empty hand-off slot of a runner of the system whose shared state
    /// is `system`.
    pub(crate) fn new(system: &SystemShared) -> HandOff {
        HandOff {
            system: system_key(system),
            slot: Cell::new(None),
            claimed: Cell::new(false),
            uncounted: Cell::new(false),
        }
    }

    /// Whether this is a runner of `system`'s.
    #[inline]
    pub(crate) fn runs(&self, system: &SystemShared) -> bool {
        self.system == system_key(system)
    }

    /// True when no slot is in the hand-off slot.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        let slot = self.slot.take();
        let empty = slot.is_none();
        self.slot.set(slot);
        empty
    }

    /// Puts `slot` in the hand-off slot, claimed or not (its word
    /// `RUNNING` by this thread's push, or `NOTIFIED`), handed off by the
    /// batch running now (uncounted); returns what was there, if anything.
    #[inline]
    pub(crate) fn replace(&self, slot: Queued, claimed: bool) -> Option<Displaced> {
        let previous = self.slot.replace(Some(slot));
        let was_claimed = self.claimed.replace(claimed);
        let was_uncounted = self.uncounted.replace(true);
        previous.map(|slot| Displaced {
            slot,
            claimed: was_claimed,
            uncounted: was_uncounted,
        })
    }

    /// Takes the slot in the hand-off slot, with whether it is claimed.
    #[inline]
    pub(crate) fn take(&self) -> Option<(Queued, bool)> {
        self.slot.take().map(|s| (s, self.claimed.replace(false)))
    }
}

/// What [`HandOff::replace`] took out of the hand-off slot.
pub(crate) struct Displaced {
    pub(crate) slot: Queued,
    /// Its word is this thread's claim: give it up before queuing it
    /// ([`Queued::unclaim`]).
    pub(crate) claimed: bool,
    /// It was not counted in the threaded scheduler's pending count (the
    /// loom runner, which counts nothing, does not ask).
    #[cfg_attr(turno_loom, allow(dead_code))]
    pub(crate) uncounted: bool,
}

/// A system's key: the address of its shared state (alive, so unique,
/// while any thread runs the system: its runners hold it).
#[inline]
fn system_key(system: &SystemShared) -> usize {
    std::ptr::from_ref(system) as usize
}

/// This thread's registration of its [`HandOff`] in [`PORT`]; dropped, it
/// puts back the one before (a turn may run a [`LocalSystem`] of its own,
/// whose runner installs a hand-off slot for the length of its run: the
/// worker's must be there again after it).
///
/// [`LocalSystem`]: crate::LocalSystem
pub(crate) struct Port {
    before: *const HandOff,
}

impl Port {
    /// Installs `hand_off` as this thread's hand-off slot until the `Port`
    /// is dropped. The caller keeps `hand_off` where it is (not moved, not
    /// dropped) until then, and drops the `Port` before it (ports are
    /// dropped in the reverse order of their installs: each is a guard
    /// on its installer's stack).
    pub(crate) fn install(hand_off: &HandOff) -> Port {
        Port {
            before: PORT.with(|p| p.replace(hand_off)),
        }
    }
}

impl Drop for Port {
    fn drop(&mut self) {
        PORT.with(|p| p.set(self.before));
    }
}

/// This thread's hand-off slot, if the thread runs actors of `system` and
/// the slot is empty: a push that finds the actor idle may claim it for
/// this thread ([`HandOff::replace`] with `claimed`).
#[allow(unsafe_code)]
#[inline]
pub(crate) fn claimable<'a>(system: &SystemShared) -> Option<&'a HandOff> {
    let at = PORT.with(Cell::get);
    // SAFETY: `PORT` is this thread's own; it is non-null only while a
    // `Port` installed it, whose owner keeps the `HandOff` at that address
    // until it drops the `Port`, which clears it (on return or unwind).
    // The caller uses the reference on this thread within its own call,
    // made from a turn (or the engine's work) the runner loop further up
    // this thread's stack is running. Only shared references to the
    // `HandOff` are ever made.
    let hand_off = unsafe { at.as_ref() }?;
    (hand_off.runs(system) && hand_off.is_empty()).then_some(hand_off)
}

/// This thread's hand-off slot, whatever its system and whether empty: the
/// loom runner's scheduler fills it as the threaded worker's fills its LIFO
/// slot (under loom only that runner installs one, one system a model).
#[cfg(turno_loom)]
#[allow(unsafe_code)]
pub(crate) fn installed<'a>() -> Option<&'a HandOff> {
    let at = PORT.with(Cell::get);
    // SAFETY: as in `claimable`.
    unsafe { at.as_ref() }
}
