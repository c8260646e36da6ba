//! The slot: one actor as a scheduler holds it, and its scheduling state
//! word. Parking and every unblocking are read-modify-writes of that one
//! word, so no wake-up is lost (`tests/sched_loom.rs` checks it).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::Scheduler;
use crate::addr::ActorId;
use crate::cell::AnyCell;
use crate::mailbox::{MailboxOps, Wake};
use crate::sync::{AtomicU64, Mutex};
use crate::time::Instant;

/// One actor as a scheduler holds it.
pub(crate) struct Slot {
    pub(crate) id: ActorId,
    /// The cell; `None` once the actor has stopped. Only its runner locks it.
    pub(crate) cell: Mutex<Option<Box<dyn AnyCell>>>,
    /// The scheduling state word: `PARKED`, the blocking flags and the mute
    /// count, changed only by read-modify-writes of this one word (see
    /// [`Slot::try_park`]).
    pub(super) state: AtomicU64,
    /// End of a simulated busy period, in nanoseconds (with `BUSY` set).
    pub(super) busy_until: AtomicU64,
    /// The mailbox, reachable without the cell's lock. Weak: the mailbox
    /// holds the slot (its waker), and the cell, alive until the actor
    /// stops, holds an address; a strong reference here made a cycle that
    /// kept every stopped actor's slot and mailbox alive forever.
    pub(super) mailbox: Weak<dyn MailboxOps>,
    pub(super) me: Weak<Slot>,
    pub(super) sched: Arc<dyn Scheduler>,
}

/// Parked: the slot has work it may not do yet and is in no run queue.
pub(super) const PARKED: u64 = 1 << 63;
/// Its turn panicked; only control messages (restart, stop) run.
pub(super) const FAILED: u64 = 1 << 62;
/// Waiting for its children to stop; only control messages run.
pub(super) const STOPPING: u64 = 1 << 61;
/// Simulated work in progress (deterministic scheduler).
pub(super) const BUSY: u64 = 1 << 60;
/// How many mailboxes mute this actor (its out-degree in the wait-for graph).
pub(super) const MUTES: u64 = (1 << 32) - 1;
/// Anything that keeps the actor from handling mail and signals.
pub(super) const BLOCKING: u64 = FAILED | STOPPING | BUSY | MUTES;

impl Slot {
    /// The mailbox; `None` once the actor has stopped and every address of
    /// it is gone.
    pub(super) fn mailbox(&self) -> Option<Arc<dyn MailboxOps>> {
        self.mailbox.upgrade()
    }

    /// May the actor handle user mail and signals now?
    pub(super) fn blocked(&self) -> bool {
        self.state.load(Ordering::SeqCst) & BLOCKING != 0
    }

    pub(crate) fn is_muted(&self) -> bool {
        self.state.load(Ordering::SeqCst) & MUTES != 0
    }

    pub(super) fn is_failed(&self) -> bool {
        self.state.load(Ordering::SeqCst) & FAILED != 0
    }

    /// Sets blocking flags (only the actor's own runner does this).
    pub(super) fn block(&self, flags: u64) {
        self.state.fetch_or(flags, Ordering::SeqCst);
    }

    /// Clears blocking flags, or removes one mute (`unmute`); if that leaves
    /// a parked slot unblocked, unparks it in the same step and requeues it.
    ///
    /// Parking ([`Slot::try_park`]) and unblocking are read-modify-writes of
    /// one word, so they are totally ordered: either the unblocking sees
    /// `PARKED` and requeues, or the parking sees no blocking flag and does
    /// not park. No wake-up is lost, even under acquire/release reasoning
    /// (which is what loom checks).
    pub(super) fn unblock(&self, flags: u64, unmute: bool) {
        let mut requeue = false;
        let _ = self
            .state
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| {
                let mut n = s & !flags;
                if unmute && n & MUTES != 0 {
                    n -= 1;
                }
                requeue = n & PARKED != 0 && n & BLOCKING == 0;
                if requeue {
                    n &= !PARKED;
                }
                Some(n)
            });
        if requeue {
            self.requeue();
        }
    }

    /// Parks the slot if it is blocked; false (not parked) if it is not.
    pub(super) fn try_park(&self) -> bool {
        self.state
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| {
                (s & BLOCKING != 0).then_some(s | PARKED)
            })
            .is_ok()
    }

    /// Requeues a parked slot whatever blocks it (a control message must
    /// run); no-op if it was not parked.
    pub(crate) fn unpark(&self) {
        if self.state.fetch_and(!PARKED, Ordering::SeqCst) & PARKED != 0 {
            self.requeue();
        }
    }

    pub(super) fn requeue(&self) {
        if let Some(me) = self.me.upgrade() {
            self.sched.schedule(me);
        }
    }

    /// Ends a simulated busy period that ends at `deadline`.
    pub(crate) fn end_busy(&self, deadline: Instant) {
        if self
            .busy_until
            .compare_exchange(deadline.as_nanos(), 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            self.unblock(BUSY, false);
        }
    }
}

impl Wake for Slot {
    fn wake(&self) {
        if let Some(me) = self.me.upgrade() {
            self.sched.schedule(me);
        }
    }
}
