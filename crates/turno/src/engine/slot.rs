//! The slot: one actor as a scheduler holds it, and its scheduling state
//! word. Parking and every unblocking are read-modify-writes of that one
//! word, so no wake-up is lost (`tests/sched_loom.rs` checks it).
//!
//! A slot is **one allocation per actor**: the header here (id, state
//! word, the slot's own wide address, the parent's id), then the body, which for an actor is its mailbox and
//! its cell ([`Body`](crate::cell::Body)), for the test kit's a mailbox
//! alone ([`Bare`](crate::cell::Bare)). The engine holds it as
//! `Arc<Slot>` (`Slot<dyn AnyBody>`); an address is one word, its
//! mailbox's own address, owning a strong reference counted through the
//! header's own address of the slot; the run queues hold a [`Queued`], its address without a strong
//! count (the run-state word owns the one entry, see [`crate::run_state`]).
//! The mailbox wakes its own slot through the header's own address of it
//! (`Slot::me`, found from the mailbox's address less its offset in the
//! slot, as the id is), so a wake-up touches no reference count, and hands
//! it to its system's scheduler, which the system's shared state holds
//! (`SystemShared::sched`), not every slot. The tree holds a slot thin
//! ([`ThinSlot`]) and widens it from the same address; it finds a slot's
//! parent in the header (`Slot::parent`), fixed at the spawn.

use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::Engine;
use crate::cell::AnyCell;
use crate::effects::Effects;
use crate::ids::ActorId;
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
    /// own slot, maybe the last): thin, so that the pair comes back in two
    /// registers, not through memory. Implemented by the typed body so
    /// that the batch loop is compiled for the actor's own cell.
    /// `claimed`: the caller's push claimed the word already (a claimed
    /// hand-off, see [`crate::hand_off`]), so the batch starts held.
    /// `slot` is the slot this body is part of, as its run queue entry
    /// holds it ([`Queued`]): the typed body rebuilds the engine's `Arc`
    /// from it with its own static layout, where the caller would compute
    /// the `Arc`'s address from the body's alignment in the vtable (about
    /// 15 instructions a batch, between the caller and this).
    ///
    /// # Safety
    /// `slot` is the entry of the slot whose body `self` is, taken by the
    /// caller from its run queue (or its hand-off slot) to run it now, as
    /// [`Queued::borrow_as`] requires: only [`Engine::run_slot`] calls it.
    #[allow(unsafe_code)]
    unsafe fn run_batch(
        &self,
        engine: &Engine,
        slot: Queued,
        claimed: bool,
        batch: usize,
        fx: &mut Effects,
    ) -> (usize, Option<ThinSlot>);
    /// Runs `f` on the cell of a slot never registered (its owner holds
    /// the run-state word since the slot was built), unless the actor has
    /// stopped; drops the cell if `f` returns true (the actor is finalized:
    /// the cell's address of its own slot goes with it, so the slot is
    /// freed once the last outside address is).
    fn with_cell(&self, f: &mut dyn FnMut(&mut dyn AnyCell) -> bool);
    /// Gives the actor up without a turn: holds the run-state word for
    /// good (no run queue entry of it is taken again; a later push only
    /// marks it) and drops the cell, with its address of its own slot.
    /// Only between turns of a system whose turns all run on the caller's
    /// thread (a dropped `DetSystem`); the caller keeps a strong reference
    /// to the slot across the call.
    fn abandon(&self);
}

/// What an address needs of a slot's body: its typed mailbox at the body's
/// own address, which is what an address keeps (`Addr::from_slot`), so a
/// send (and a cell, several times a turn) reads it with no offset to
/// compute.
///
/// # Safety
/// An implementor is `#[repr(C)]` with its `Mailbox<M>` as its first
/// field, so that the body's address is the mailbox's.
#[allow(unsafe_code)]
pub(crate) unsafe trait TypedBody<M>: Send + Sync + 'static {}

/// One actor as a scheduler holds it: see the [module docs](self).
/// `repr(C)`: every body type starts at the same offset unless its
/// alignment exceeds the header's; the header's fields are at the same
/// offsets for every body (`me_at` reads them as a `Slot<()>`'s).
#[repr(C)]
pub(crate) struct Slot<B: ?Sized = dyn AnyBody> {
    pub(crate) id: ActorId,
    /// The scheduling state word: `PARKED`, the blocking flags and the mute
    /// count, changed only by read-modify-writes of this one word (see
    /// [`Slot::try_park`]).
    pub(super) state: AtomicU64,
    /// This slot's own address as a `Slot<dyn AnyBody>`, written by
    /// [`Slot::new_in_arc`]: its run queue entry, which a push that wakes
    /// it hands on, what an address counts the slot through and what
    /// widens a [`ThinSlot`].
    pub(crate) me: SelfPtr,
    /// The supervisor's id ([`ROOT`](crate::ROOT) for a top-level actor
    /// and a bare slot), fixed at the spawn: here, not in the tree's map
    /// entry, so that the entry is the [`ThinSlot`] alone (9 bytes a
    /// bucket where a node of the slot, the parent and the rare parts was
    /// 25, times the table's slack).
    pub(crate) parent: ActorId,
    pub(crate) body: B,
}

/// A slot's own address, wide (see [`Slot::me`]).
#[derive(Clone, Copy)]
pub(crate) struct SelfPtr(NonNull<Slot<dyn AnyBody>>);

// SAFETY: a `SelfPtr` is only handed on as the slot's run queue entry
// (`Queued`) or read as a shared reference to the slot it is part of
// (`Send + Sync`: its header is atomics, two ids and this address, its
// body `Send + Sync`).
#[allow(unsafe_code)]
unsafe impl Send for SelfPtr {}
// SAFETY: as for `Send`.
#[allow(unsafe_code)]
unsafe impl Sync for SelfPtr {}

impl SelfPtr {
    /// The slot, wide, with the provenance of the `Arc` it was made in.
    #[inline]
    pub(crate) fn get(self) -> NonNull<Slot<dyn AnyBody>> {
        self.0
    }
}

/// The header's own address of the slot that starts at `slot`, whatever
/// its body (read as a `Slot<()>`'s: the slot is `repr(C)`, so its
/// header's fields are at the same offsets for every body).
///
/// # Safety
/// `slot` is the start of a live slot, with the provenance of a pointer
/// to the whole slot.
#[inline]
#[allow(unsafe_code)]
pub(crate) unsafe fn me_at(slot: *const u8) -> SelfPtr {
    // SAFETY: the caller's; `me` is never written after the slot is
    // built, so reading it races with nothing.
    unsafe {
        slot.add(std::mem::offset_of!(Slot<()>, me))
            .cast::<SelfPtr>()
            .read()
    }
}

/// A strong reference to an actor's slot (a [`Slot::new_in_arc`] one) in
/// one word, where an `Arc<Slot>` is two: it is the tree's map entry of
/// a live actor, so that entry is a word and a control byte, times the
/// table's slack. The header's own address gives the wide slot back ([`Deref`],
/// [`ThinSlot::arc`]); the id is read from the header directly (every
/// lookup in the map compares ids).
///
/// [`Deref`]: std::ops::Deref
pub(crate) struct ThinSlot(NonNull<u8>);

// SAFETY: a `ThinSlot` is an `Arc<Slot>` (`Send + Sync`) kept as its thin
// address; it is only read as a shared `Slot` and turned back into that
// `Arc`.
#[allow(unsafe_code)]
unsafe impl Send for ThinSlot {}
// SAFETY: as for `Send`.
#[allow(unsafe_code)]
unsafe impl Sync for ThinSlot {}

#[allow(unsafe_code)]
impl ThinSlot {
    /// Holds `slot`'s strong reference thin.
    pub(crate) fn new(slot: Arc<Slot>) -> Self {
        let p = Arc::into_raw(slot).cast::<u8>().cast_mut();
        ThinSlot(NonNull::new(p).expect("an Arc's address is not null"))
    }

    /// The slot as the wide pointer `Arc::into_raw` gave.
    #[inline]
    fn wide(&self) -> *const Slot {
        // SAFETY: this holds a strong reference to the slot, so it is
        // alive, and `self.0` is its start with the provenance of the
        // `Arc`'s pointer.
        unsafe { me_at(self.0.as_ptr()) }
            .get()
            .as_ptr()
            .cast_const()
    }

    /// The actor's id, read from the header (the id is its first field).
    #[inline]
    pub(crate) fn id(&self) -> ActorId {
        *self.id_ref()
    }

    /// The actor's id where the slot keeps it.
    #[inline]
    pub(crate) fn id_ref(&self) -> &ActorId {
        // SAFETY: the slot is alive while this is (a strong reference),
        // `repr(C)` with the id first (asserted with `Slot::BODY_AT`), and
        // the id is never written after the slot is built.
        unsafe { &*self.0.as_ptr().cast_const().cast::<ActorId>() }
    }

    /// A new strong reference to the slot, wide.
    pub(crate) fn arc(&self) -> Arc<Slot> {
        let p = self.wide();
        // SAFETY: `p` is the slot's own wide address, which is what
        // `Arc::into_raw` gave, and this holds one of its strong
        // references, so the count is at least one while it is raised; the
        // `Arc` made owns the raised one.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }
}

#[allow(unsafe_code)]
impl std::ops::Deref for ThinSlot {
    type Target = Slot;

    fn deref(&self) -> &Slot {
        // SAFETY: the slot is alive while this is borrowed (this holds a
        // strong reference), and only shared references to it are made.
        unsafe { &*self.wide() }
    }
}

#[allow(unsafe_code)]
impl Drop for ThinSlot {
    fn drop(&mut self) {
        // SAFETY: the slot's own wide address, which is what
        // `Arc::into_raw` gave, whose strong reference this owns and gives
        // back once.
        drop(unsafe { Arc::from_raw(self.wide()) });
    }
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
}

impl<B: AnyBody> Slot<B> {
    /// A slot, in its `Arc` (the header learns the slot's address before
    /// the slot is built).
    pub(crate) fn new_in_arc(id: ActorId, parent: ActorId, body: B) -> Arc<Self> {
        Arc::new_cyclic(|me: &std::sync::Weak<Slot<B>>| {
            let me: *const Slot<B> = me.as_ptr();
            let me: *const Slot<dyn AnyBody> = me;
            Slot {
                id,
                state: AtomicU64::new(0),
                me: SelfPtr(NonNull::new(me.cast_mut()).expect("an Arc's address is not null")),
                parent,
                body,
            }
        })
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
    /// The entry of the slot at `slot` (the header's own address).
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

    /// The holder of a claimed hand-off ([`crate::hand_off`]) gives the
    /// claim up before it moves the slot to a run queue others take from:
    /// the word becomes `NOTIFIED`, so this is the slot's one entry and
    /// whoever takes it claims it.
    pub(crate) fn unclaim(&self) {
        // SAFETY: a claimed slot is alive: its cell holds an address of it
        // until a claimed runner finalizes it, and the claim is this
        // caller's.
        #[allow(unsafe_code)]
        let slot = unsafe { self.0.as_ref() };
        slot.body.ops().unclaim();
    }

    /// The body of the queued slot, to run it ([`AnyBody::run_batch`]
    /// with this entry).
    ///
    /// # Safety
    /// The caller took this entry from its run queue and runs the slot with
    /// it before anything else could finalize it ([`Engine::run_slot`]
    /// claims it first), and keeps the reference no longer than that run.
    #[allow(unsafe_code)]
    #[inline]
    pub(crate) unsafe fn body<'a>(&self) -> &'a dyn AnyBody {
        // SAFETY: a queued slot is alive (the type's docs), for the run by
        // the caller's contract, and only shared references to it are made.
        unsafe { &(*self.0.as_ptr()).body }
    }

    /// The slot as the engine handles it, for the typed body `B` the entry
    /// is of: an `Arc` made from the address with `B`'s static layout (no
    /// alignment read from the vtable), never dropped (the entry owns no
    /// count).
    ///
    /// # Safety
    /// As for [`Queued::body`], and the slot's body is a `B`: the caller is
    /// `B`'s [`AnyBody::run_batch`], called on this entry's body.
    #[allow(unsafe_code)]
    #[inline]
    pub(crate) unsafe fn borrow_as<B: AnyBody>(self) -> ManuallyDrop<Arc<Slot>> {
        let typed = self.0.as_ptr().cast_const().cast::<Slot<B>>();
        // SAFETY: the slot is an `Arc<Slot<B>>` allocation (every slot is
        // built by `Slot::new_in_arc`, and its body is a `B` by the
        // caller's contract; the thin cast keeps the address and its
        // provenance, which is the `Arc`'s) and alive (the type's docs);
        // the `Arc` is never dropped, so no count it does not own is
        // released.
        let slot: Arc<Slot> = unsafe { Arc::from_raw(typed) };
        ManuallyDrop::new(slot)
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
