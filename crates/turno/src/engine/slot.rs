//! The slot: one actor as a scheduler holds it, and its scheduling state
//! word. Parking and every unblocking are read-modify-writes of that one
//! word, so no wake-up is lost (`tests/sched_loom.rs` checks it).
//!
//! A slot is **one allocation per actor**: the header here (id, state
//! word), then the body, which for an actor is its mailbox and
//! its cell ([`Body`](crate::cell::Body)). The engine holds it as
//! `Arc<Slot>` (`Slot<dyn AnyBody>`), an address as
//! `Arc<Slot<dyn TypedBody<M>>>`: the same allocation seen through two
//! vtables; the run queues hold a [`Queued`], its address without a strong
//! count (the run-state word owns the one entry, see [`crate::run_state`]).
//! The mailbox wakes its own slot through a pointer to it
//! (`mailbox::SlotRef`), so a wake-up touches no reference count, and
//! hands it to its system's scheduler, which the system's shared state
//! holds (`SystemShared::sched`), not every slot.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Engine;
use crate::addr::ActorId;
use crate::cell::AnyCell;
use crate::effects::Effects;
use crate::mailbox::MailboxOps;
use crate::sync::AtomicU64;

/// What the engine needs of a slot's body, whatever the actor's type.
pub(crate) trait AnyBody: Send + Sync + 'static {
    /// The mailbox, untyped.
    fn ops(&self) -> &dyn MailboxOps;
    /// Runs a batch of the actor's turns ([`Engine::run_cell`]) on the
    /// cell, claimed through the run-state word (the caller took the slot's
    /// run queue entry), and releases it (see [`crate::run_state`]); drops
    /// the cell if the actor is finalized. Returns the turns run and, if
    /// the cell was dropped, a strong reference to the slot that the caller
    /// drops once this call has returned (the cell held an address of its
    /// own slot, maybe the last). Implemented by the typed body so that the
    /// batch loop is compiled for the actor's own cell.
    fn run_batch(
        &self,
        engine: &Engine,
        slot: &Arc<Slot>,
        batch: usize,
        fx: &mut Effects,
    ) -> (usize, Option<Arc<Slot>>);
    /// Runs `f` on the cell of a slot never registered (its owner holds
    /// the run-state word since the slot was built), unless the actor has
    /// stopped; drops the cell if `f` returns true (the actor is finalized:
    /// the cell's address of its own slot goes with it, so the slot is
    /// freed once the last outside address is).
    fn with_cell(&self, f: &mut dyn FnMut(&mut dyn AnyCell) -> bool);
}

/// What an address needs of a slot's body: its typed mailbox, read
/// without a call through the vtable (an address reads it on every send,
/// a cell several times a turn), by [`Mailbox::of_body`](crate::mailbox::Mailbox::of_body).
///
/// # Safety
/// An implementor is `#[repr(C)]` with its `Mailbox<M>` as its first
/// field, so that the body's address is the mailbox's.
#[allow(unsafe_code)]
pub(crate) unsafe trait TypedBody<M>: Send + Sync + 'static {}

/// One actor as a scheduler holds it: see the [module docs](self).
/// `repr(C)`: every body type starts at the same offset unless its
/// alignment exceeds the header's (the cell relies on it to find its
/// mailbox without the vtable, see `cell::mailbox_of`).
#[repr(C)]
pub(crate) struct Slot<B: ?Sized = dyn AnyBody> {
    pub(crate) id: ActorId,
    /// The scheduling state word: `PARKED`, the blocking flags and the mute
    /// count, changed only by read-modify-writes of this one word (see
    /// [`Slot::try_park`]).
    pub(super) state: AtomicU64,
    pub(crate) body: B,
}

impl<B> Slot<B> {
    /// Where the body starts, from the slot's start: the mailbox, a body's
    /// first field, finds the header (the actor's id) this far back (see
    /// `Mailbox::id`). Two bytes: a body aligned to 64 KiB or more does
    /// not compile (this constant's assertion).
    pub(crate) const BODY_AT: u16 = {
        let at = std::mem::offset_of!(Slot<B>, body);
        assert!(
            at <= u16::MAX as usize,
            "an actor's slot body is aligned to 64 KiB or more"
        );
        // The id is the header's first field, at the slot's start.
        assert!(std::mem::offset_of!(Slot<B>, id) == 0);
        at as u16
    };

    pub(crate) fn new(id: ActorId, body: B) -> Self {
        Slot {
            id,
            state: AtomicU64::new(0),
            body,
        }
    }
}

/// A slot in a run queue: its address, without a strong count. The slot's
/// run-state word accounts for the entry (at most one per slot, made when
/// the word moves to `NOTIFIED`, consumed by the claim) and the slot is
/// alive while it exists: its cell holds an address of it until the actor
/// is finalized, which only a claimed runner does (see
/// [`crate::run_state`]).
pub(crate) struct Queued(NonNull<Slot<dyn AnyBody>>);

// SAFETY: a `Queued` is only read as a shared reference to the slot, which
// is `Send + Sync`, while the run-state word keeps the slot alive (above).
#[allow(unsafe_code)]
unsafe impl Send for Queued {}

impl Queued {
    /// The entry of the slot at `slot` (the mailbox's own pointer to it).
    pub(crate) fn new(slot: NonNull<Slot<dyn AnyBody>>) -> Queued {
        Queued(slot)
    }

    /// The entry of a slot the caller holds.
    pub(crate) fn of(slot: &Arc<Slot>) -> Queued {
        Queued(NonNull::from(&**slot))
    }

    /// Whether two entries are of one slot (the loom runner's check that
    /// a slot has at most one).
    #[cfg(turno_loom)]
    pub(crate) fn same(&self, other: &Queued) -> bool {
        std::ptr::addr_eq(self.0.as_ptr(), other.0.as_ptr())
    }

    /// The queued actor's id (the loom runner's `run_actor` looks for it).
    #[cfg(turno_loom)]
    pub(crate) fn id(&self) -> ActorId {
        // SAFETY: a queued slot is alive (see the type's docs).
        #[allow(unsafe_code)]
        unsafe {
            self.0.as_ref().id
        }
    }

    /// The slot as the engine handles it: an `Arc` made from the address,
    /// never dropped (the entry owns no count).
    ///
    /// # Safety
    /// The caller took this entry from its run queue and runs the slot with
    /// it before anything else could finalize it ([`Engine::run_slot`]
    /// claims it first).
    #[allow(unsafe_code)]
    pub(crate) unsafe fn borrow(self) -> ManuallyDrop<Arc<Slot>> {
        // SAFETY: the slot is an `Arc` allocation (every slot is built by
        // `Arc::new` or `Arc::new_cyclic`) and alive (the type's docs); the
        // `Arc` is never dropped, so no count it does not own is released.
        ManuallyDrop::new(unsafe { Arc::from_raw(self.0.as_ptr().cast_const()) })
    }
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
    /// The mailbox (part of the slot).
    pub(super) fn mailbox(&self) -> &dyn MailboxOps {
        self.body.ops()
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
        self.body.ops().wake();
    }
}
