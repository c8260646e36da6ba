//! The lock-free user lane: many producers, one consumer, admission decided
//! by the policy on an atomic length.
//!
//! The lane is a linked list of blocks of `BLOCK_CAP` slots (the layout of
//! crossbeam-channel's list flavour, reduced to one consumer). One word,
//! `tail`, holds the next position to claim and the `CLOSED` bit; positions
//! run `LAP` to a block, the last one (`offset == BLOCK_CAP`) meaning "the
//! next block is being installed". A producer:
//!
//! 1. loads `tail` and `taken` (what the consumer has removed) and asks
//!    [`Policy::decide`] about the length `count(tail) - taken`;
//! 2. on [`Decision::Admit`] claims the position with one compare-exchange
//!    of `tail` (which fails if another producer claimed it, or the lane
//!    closed, and then it starts again);
//! 3. writes its element into the claimed slot and publishes it by storing
//!    `WRITTEN` into the slot's state (release).
//!
//! The claimer of a block's last slot installs the next block before it
//! writes; everyone else meeting the "installing" position waits for it.
//! The consumer alone reads slots (in position order, acquire on the state),
//! advances its head, and publishes `taken` (a plain store: one writer).
//!
//! **The invariant**: `count(tail) - taken` is the number of elements
//! admitted and not yet removed, every admitted element was admitted by
//! `decide` on a length no smaller than the real one at that moment (so a
//! bounded lane never exceeds its capacity except by forced pushes), and
//! each claimed position is written exactly once and read at most once.
//! A claimed slot may be not yet written when the consumer reaches it (its
//! producer is between steps 2 and 3): the consumer then reports nothing
//! ready, and the producer's own wake-up, which comes after step 3, makes
//! it look again (see `Mailbox::notify`).
//!
//! **Keep-newest is evicted by the consumer**, as
//! [`Buffer::evicting_on_take`](crate::buffer::Buffer::evicting_on_take)
//! does (the reference): a producer meeting a full keep-newest lane claims
//! its position as on admit, counts one eviction owed (before publishing
//! its element) and is answered [`Offer::Evicting`]; the consumer, before a
//! take, removes oldest first as many elements as are owed, never below the
//! capacity (an owed count from a producer that saw a stale `taken` and so
//! a lane fuller than it was is dropped there, unapplied). Producers still
//! never pop.
//!
//! Closing sets `CLOSED` in `tail`: every later claim fails, and the
//! elements admitted before it are exactly `count(tail) - taken` at that
//! moment. The consumer evicts the owed ones, drains the rest already
//! written; the ones still being written are dropped with the lane.
//!
//! Blocks the consumer has left are reset and kept in `spare`, a stack of
//! blocks for the next installs, so a lane in steady state does not
//! allocate. An unbounded lane keeps one block there (an actor that once
//! got a burst keeps no more than that), a bounded one as many as its
//! capacity fills, plus one: a stream whose producer and consumer run in
//! turns (one fills the lane, the other empties it) reuses its blocks
//! instead of allocating one per `BLOCK_CAP` elements on one thread and
//! freeing it on the other (one `malloc` and one `free` per block). The
//! stack has one pusher, the consumer, and one popper at a
//! time, the producer installing the next block (the claimer of a block's
//! last slot: the next one can claim only after the install), so it needs
//! no tag against reuse (ABA): the top can change under the popper only by
//! a push, which fails its compare-exchange.

use std::mem::MaybeUninit;
use std::ops::Deref;
use std::ptr;
use std::sync::atomic::Ordering;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release, SeqCst};

use crate::buffer::{BufferStats, Decision, Offer, Policy};
use crate::lazy::LazyBox;
use crate::sync::{backoff, AtomicPtr, AtomicU64, AtomicUsize, UnsafeCell};

/// Slots per block. Under loom the blocks are tiny, so that a model with a
/// handful of elements crosses block boundaries and recycles blocks.
#[cfg(not(turno_loom))]
const BLOCK_CAP: usize = 31;
#[cfg(turno_loom)]
const BLOCK_CAP: usize = 2;
/// Positions per block: one more than the slots, for "installing".
const LAP: usize = BLOCK_CAP + 1;
/// The lane is closed: no claim succeeds.
const CLOSED: usize = 1;
/// Positions are stored above the `CLOSED` bit.
const SHIFT: usize = 1;
/// A slot's state once its element is in it.
const WRITTEN: usize = 1;

/// Elements before position `pos` (the installing position holds none).
fn count(pos: usize) -> usize {
    (pos / LAP) * BLOCK_CAP + (pos % LAP).min(BLOCK_CAP)
}

struct Slot<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    state: AtomicUsize,
}

struct Block<T> {
    /// The next block of the lane; in `spare`, the block below in the stack.
    next: AtomicPtr<Block<T>>,
    /// In `spare`: the stack's depth from this block down (1 at the bottom),
    /// so that the consumer knows when it is full without a count of its own.
    pooled: AtomicUsize,
    slots: [Slot<T>; BLOCK_CAP],
}

impl<T> Block<T> {
    fn alloc() -> *mut Block<T> {
        Box::into_raw(Box::new(Block {
            next: AtomicPtr::new(ptr::null_mut()),
            pooled: AtomicUsize::new(0),
            slots: std::array::from_fn(|_| Slot {
                value: UnsafeCell::new(MaybeUninit::uninit()),
                state: AtomicUsize::new(0),
            }),
        }))
    }
}

/// How a producer offers an element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A new element: the policy decides ([`Buffer::offer`](crate::buffer::Buffer::offer)).
    Offer,
    /// An element this lane refused as full before: counted as an attempt,
    /// not a new element ([`Buffer::offer_again`](crate::buffer::Buffer::offer_again)).
    Retry,
    /// Queued whatever the policy says ([`Buffer::force`](crate::buffer::Buffer::force)).
    Force,
    /// A new element from a sender that is muted instead of refused: on
    /// [`Decision::Suspend`] the element comes back as
    /// [`Pushed::WouldSuspend`], uncounted, for the caller to force.
    Muting,
}

/// What a push did (when the lane is open).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pushed<T> {
    /// The buffer verdict, and the depth after the push (the length the
    /// producer saw, plus its own element when it was queued).
    Done(Offer<T>, usize),
    /// [`Mode::Muting`] met a full suspend lane: nothing was done.
    WouldSuspend(T),
}

/// What only the consumer touches.
struct Head<T> {
    /// The block being read; null until the first block exists.
    block: *mut Block<T>,
    /// The next slot to read in it (`BLOCK_CAP`: move to the next block).
    /// Four bytes, so that it and `closed` share a word. (The elements
    /// removed are `ConsumerSide::taken`, which the consumer alone writes, so it
    /// reads it back rather than keep a copy here: a word less.)
    offset: u32,
    closed: bool,
}

/// The words the consumer writes on every take (`taken`, `head`), and the
/// evictions owed, which it reads on every take and only keep-newest
/// producers write. Producers read `taken` on every push (a push's verdict
/// says the room left), but never write here.
pub(crate) struct ConsumerSide<T> {
    /// Elements removed (taken, evicted or drained), for producers' length
    /// checks. The consumer is its only writer (a load and a release store,
    /// no read-modify-write) and reads it back with a relaxed load, which
    /// sees its own last store. Of them, the evicted are counted in
    /// [`RareCounts::evicted`], not here: an idle lane pays no word for an
    /// outcome most lanes never see.
    taken: AtomicUsize,
    head: UnsafeCell<Head<T>>,
    /// Evictions owed to keep-newest pushes answered `Evicting`.
    owed: AtomicUsize,
}

/// Where a lane keeps its [`ConsumerSide`]: beside the producers' words
/// ([`Packed`]: a mailbox, where every byte counts per idle actor) or on
/// cache lines of its own ([`OwnLines`]: a stream, whose producer and
/// consumer run at once on two cores, and whose consumer's store of `taken`
/// would otherwise take the line of `tail` from the producers on every
/// take, and their claim take it back).
pub(crate) trait Place<T>: Deref<Target = ConsumerSide<T>> {
    fn new(side: ConsumerSide<T>) -> Self;
}

/// The consumer's words beside the producers' ([`Place`]).
pub(crate) struct Packed<T>(ConsumerSide<T>);

/// The consumer's words alone on a pair of cache lines ([`Place`]): 128
/// bytes, as Intel's adjacent-line prefetcher moves lines in pairs. The
/// lane holding it is aligned so too, so its producers' words share their
/// lines with nothing the consumer writes.
#[repr(align(128))]
pub(crate) struct OwnLines<T>(ConsumerSide<T>);

impl<T> Place<T> for Packed<T> {
    fn new(side: ConsumerSide<T>) -> Self {
        Packed(side)
    }
}

impl<T> Deref for Packed<T> {
    type Target = ConsumerSide<T>;
    fn deref(&self) -> &ConsumerSide<T> {
        &self.0
    }
}

impl<T> Place<T> for OwnLines<T> {
    fn new(side: ConsumerSide<T>) -> Self {
        OwnLines(side)
    }
}

impl<T> Deref for OwnLines<T> {
    type Target = ConsumerSide<T>;
    fn deref(&self) -> &ConsumerSide<T> {
        &self.0
    }
}

/// The lock-free user lane. See the [module docs](self). `P`: where the
/// consumer's words live ([`Place`]).
pub(crate) struct Lane<T, P: Place<T> = Packed<T>> {
    policy: Policy,
    /// Next position to claim, shifted, with the `CLOSED` bit.
    tail: AtomicUsize,
    /// The block holding the tail position (null before the first push).
    tail_block: AtomicPtr<Block<T>>,
    /// The first block, for the consumer's first read.
    first: AtomicPtr<Block<T>>,
    /// Reset blocks kept for the next installs: the top of a stack linked
    /// through `Block::next` (see the module docs).
    spare: AtomicPtr<Block<T>>,
    counts: Counts,
    consumer: P,
    /// The loom models' injected faults: nothing outside them (a
    /// zero-sized type whose answers are the correct lane's constants).
    faults: Faults,
}

/// The counters the fast path reads or writes: the deepest depth seen
/// (every push compares; the keep-newest evictions owed, which every take
/// looks at, are the consumer's, [`ConsumerSide::owed`]); the rest of
/// [`BufferStats`] is derived from `tail` and `taken`, or counted in
/// [`RareCounts`].
#[derive(Default)]
struct Counts {
    max_depth: AtomicUsize,
    /// Allocated on the first rare outcome: an idle lane pays a pointer.
    rare: LazyBox<RareCounts>,
}

/// The rare outcomes, counted by read-modify-writes off the fast path.
#[derive(Default)]
struct RareCounts {
    dropped: AtomicU64,
    rejected: AtomicU64,
    refused_full: AtomicU64,
    /// Attempts in [`Mode::Retry`] (they follow a refusal, so are rare).
    retries: AtomicU64,
    /// Elements evicted by the consumer, its only writer (a load and a
    /// store, no read-modify-write).
    evicted: AtomicU64,
    /// Elements admitted before the close and left (drained, or dropped
    /// with the lane while still being written), and of them the ones the
    /// close removed (so those taken before it are the removed less these
    /// and the evicted: no count for an actor closed with nothing queued).
    drained: AtomicU64,
    popped_at_close: AtomicU64,
}

impl Counts {
    /// The rare counters, allocated now if need be (never sealed).
    fn rare(&self) -> &RareCounts {
        self.rare
            .get_or_init()
            .expect("a lane's counters are never sealed")
    }

    /// Reads a rare counter: 0 while none was ever counted.
    fn read(&self, f: impl FnOnce(&RareCounts) -> &AtomicU64, order: Ordering) -> u64 {
        self.rare.get().map_or(0, |r| f(r).load(order))
    }

    /// Stores a rare counter, allocating only for a non-zero value.
    fn store(&self, f: impl FnOnce(&RareCounts) -> &AtomicU64, value: u64) {
        if value != 0 {
            f(self.rare()).store(value, Release);
        } else if let Some(r) = self.rare.get() {
            f(r).store(0, Release);
        }
    }
}

// SAFETY: the lane owns its elements (moved in by producers, out by the
// consumer) and shares them between threads only through the slot protocol
// of the module docs; raw block pointers are owned by the lane. `T: Send`
// is all that moving elements across threads needs.
unsafe impl<T: Send, P: Place<T>> Send for Lane<T, P> {}
// SAFETY: producers only claim (one CAS) and write their own claimed slot;
// the consumer-only state (`head`) is touched by the `unsafe` consumer
// methods, whose callers guarantee one consumer at a time.
unsafe impl<T: Send, P: Place<T>> Sync for Lane<T, P> {}

impl<T, P: Place<T>> Lane<T, P> {
    /// An empty lane. Nothing is allocated until the first push.
    #[inline]
    pub(crate) fn new(policy: Policy) -> Self {
        Lane {
            policy,
            tail: AtomicUsize::new(0),
            tail_block: AtomicPtr::new(ptr::null_mut()),
            first: AtomicPtr::new(ptr::null_mut()),
            spare: AtomicPtr::new(ptr::null_mut()),
            counts: Counts::default(),
            consumer: P::new(ConsumerSide {
                taken: AtomicUsize::new(0),
                head: UnsafeCell::new(Head {
                    block: ptr::null_mut(),
                    offset: 0,
                    closed: false,
                }),
                owed: AtomicUsize::new(0),
            }),
            faults: Faults::of_new_lane(),
        }
    }

    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    /// The same lane with a fault injected (loom models only).
    #[cfg(turno_loom)]
    pub(crate) fn with_injected(mut self, inject: Inject) -> Self {
        self.faults = Faults::injected(inject);
        self
    }

    /// The most blocks `spare` keeps: one for an unbounded lane, for a
    /// bounded one enough to hold its capacity, plus the one being filled.
    fn spare_limit(&self) -> usize {
        self.policy
            .capacity()
            .map_or(1, |cap| cap.div_ceil(BLOCK_CAP) + 1)
    }

    /// A block for an install: the top of `spare`, or a new one.
    ///
    /// # Safety
    /// Only the installer calls it: the producer that claimed a block's
    /// last slot (one at a time, see the module docs).
    unsafe fn pop_spare(&self) -> *mut Block<T> {
        let mut top = self.spare.load(Acquire);
        loop {
            if top.is_null() {
                return Block::alloc();
            }
            // SAFETY: a block in `spare` is live: only the consumer frees
            // blocks (its own, in `push_spare`, never one in the stack) and
            // only this popper takes one out, so `top` stays in the stack
            // until the exchange below.
            let below = unsafe { &*top }.next.load(Relaxed);
            let order = self.faults.spare_order(Acquire);
            match self.spare.compare_exchange(top, below, order, order) {
                Ok(_) => {
                    // SAFETY: out of the stack: this installer owns it. Its
                    // link is cleared before the install publishes it (the
                    // consumer follows `next` to the block after it).
                    unsafe { &*top }.next.store(ptr::null_mut(), Relaxed);
                    return top;
                }
                // A push came in between: look at the new top.
                Err(now) => top = now,
            }
        }
    }

    /// Keeps a block the consumer has left (reset) in `spare`, or frees it
    /// when the stack holds [`Lane::spare_limit`] blocks.
    ///
    /// # Safety
    /// Only the consumer calls it, with a block it owns (reset: no element).
    unsafe fn push_spare(&self, block: *mut Block<T>) {
        let limit = self.spare_limit();
        let mut top = self.spare.load(Acquire);
        loop {
            let depth = if top.is_null() {
                0
            } else {
                // SAFETY: `top` is live even if the installer popped it
                // since (it is then in the lane): only this consumer frees
                // blocks.
                unsafe { &*top }.pooled.load(Relaxed)
            };
            if depth >= limit {
                // SAFETY: the caller owns `block`, which holds no element.
                drop(unsafe { Box::from_raw(block) });
                return;
            }
            // SAFETY: the caller owns `block` until the exchange below
            // publishes it.
            let b = unsafe { &*block };
            b.next.store(top, Relaxed);
            b.pooled.store(depth + 1, Relaxed);
            // Release: the popper's acquire sees the block's reset slots
            // and its link.
            let order = self.faults.spare_order(Release);
            match self.spare.compare_exchange(top, block, order, Acquire) {
                Ok(_) => return,
                Err(now) => top = now,
            }
        }
    }

    /// Offers an element. `Err` hands it back when the lane is closed.
    ///
    /// The common case is tried once inline (open, admitted, inside an
    /// installed block, the claim won); anything else goes to the loop of
    /// [`Lane::push_slow`], which decides again from scratch.
    #[inline]
    pub(crate) fn push(&self, value: T, mode: Mode) -> Result<Pushed<T>, T> {
        let Some((block, offset, len, _)) = self.claim_fast(mode == Mode::Force) else {
            return self.push_slow(value, mode);
        };
        // SAFETY: `claim_fast` claimed `offset` of `block`, not written.
        Ok(unsafe { self.write(block, offset, value, len, mode, false) })
    }

    /// The message path's push: the common case of [`Lane::push`] in
    /// [`Mode::Offer`] alone (open, admitted by the policy, inside an
    /// installed block, the claim won), answered with the depth after it
    /// and the room left below the capacity (`None` unbounded): its
    /// verdict is `Offer::Enqueued` with that room, which the caller
    /// builds. `Err` hands the element back with nothing done: the caller
    /// then pushes it by [`Lane::push_slow`] (which decides again from
    /// scratch, as after a lost claim).
    #[inline]
    pub(crate) fn push_admitted(&self, value: T) -> Result<(usize, Option<usize>), T> {
        let Some((block, offset, len, remaining)) = self.claim_fast(false) else {
            return Err(value);
        };
        // SAFETY: `claim_fast` claimed `offset` of `block`, not written.
        unsafe { self.publish(block, offset, value, false) };
        // `remaining` is the policy's answer at the admission (not `force`
        // here), so the policy is not read again.
        Ok((self.deepest(len + 1), remaining))
    }

    /// The common case's claim, tried once: the lane open, the position
    /// not its block's last (so no install is due) in an installed block,
    /// the policy admitting (or `force`), and the compare-exchange won.
    /// Returns the block, the claimed offset in it, the length seen before
    /// the claim and the room left below the capacity after this element
    /// (`None` unbounded, and meaningless when `force` overrode a refusal);
    /// `None` (nothing done) otherwise.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn claim_fast(&self, force: bool) -> Option<(&Block<T>, usize, usize, Option<usize>)> {
        let tail = self.tail.load(SeqCst);
        let pos = tail >> SHIFT;
        let offset = pos % LAP;
        if tail & CLOSED == 0 && offset + 1 < BLOCK_CAP {
            let len = count(pos).saturating_sub(self.consumer.taken.load(SeqCst));
            // The policy read once: its admission and the verdict's
            // `remaining` together (`decide` and then the capacity for the
            // verdict matched it twice).
            let room = self.policy.admit(len);
            if force || room.is_some() {
                let block = self.tail_block.load(Acquire);
                if !block.is_null()
                    && self
                        .tail
                        .compare_exchange(tail, tail + (1 << SHIFT), SeqCst, Relaxed)
                        .is_ok()
                {
                    // SAFETY: as in `push_slow`: the claim succeeded, so
                    // `block` is the live block of `pos` (it stays so until
                    // the claimed slot is written and read).
                    return Some((unsafe { &*block }, offset, len, room.flatten()));
                }
            }
        }
        None
    }

    /// Writes the element of a claimed position and publishes it
    /// (`evicting`: counting the eviction it owes first).
    ///
    /// # Safety
    /// The caller claimed position `offset` of `block` and has not written it.
    #[inline(always)]
    unsafe fn publish(&self, block: &Block<T>, offset: usize, value: T, evicting: bool) {
        // SAFETY: `offset < BLOCK_CAP` for a claimed slot (the installing
        // position is never claimed).
        let slot = unsafe { block.slots.get_unchecked(offset) };
        // SAFETY: this producer claimed the position, so no one else
        // writes the slot, and the consumer reads it only after the
        // `WRITTEN` store below.
        slot.value.with_mut(|p| unsafe { (*p).write(value) });
        if evicting {
            // Before the publication, so that the take of this element
            // sees the eviction it owes.
            self.consumer.owed.fetch_add(1, AcqRel);
        }
        slot.state.store(WRITTEN, self.faults.publish_order());
    }

    /// Records `depth`, the depth after a push, in the deepest seen.
    #[inline(always)]
    fn deepest(&self, depth: usize) -> usize {
        if depth > self.counts.max_depth.load(Relaxed) {
            self.counts.max_depth.fetch_max(depth, Relaxed);
        }
        depth
    }

    /// Writes and publishes the element of a claimed position, counts it,
    /// and says what the push did.
    ///
    /// # Safety
    /// The caller claimed position `offset` of `block` and has not written it.
    #[inline]
    unsafe fn write(
        &self,
        block: &Block<T>,
        offset: usize,
        value: T,
        len: usize,
        mode: Mode,
        evicting: bool,
    ) -> Pushed<T> {
        // SAFETY: forwarded from the caller.
        unsafe { self.publish(block, offset, value, evicting) };
        if mode == Mode::Retry {
            self.counts.rare().retries.fetch_add(1, Relaxed);
        }
        let depth = self.deepest(len + 1);
        if evicting {
            return Pushed::Done(Offer::Evicting, depth);
        }
        let remaining = self.policy.capacity().map(|c| c.saturating_sub(depth));
        Pushed::Done(Offer::Enqueued { remaining }, depth)
    }

    /// The general push: retries claims, installs blocks, refuses.
    #[inline(never)]
    pub(crate) fn push_slow(&self, value: T, mode: Mode) -> Result<Pushed<T>, T> {
        let mut next_block: *mut Block<T> = ptr::null_mut();
        let mut step = 0;
        let outcome = loop {
            let tail = self.tail.load(SeqCst);
            if tail & CLOSED != 0 {
                break Err(value);
            }
            let pos = tail >> SHIFT;
            let offset = pos % LAP;
            if offset == BLOCK_CAP {
                // The claimer of the last slot is installing the next block.
                backoff(&mut step);
                continue;
            }
            let len = count(pos).saturating_sub(self.consumer.taken.load(SeqCst));
            let mut evicting = false;
            if mode != Mode::Force {
                match self.policy.decide(len) {
                    Decision::Admit => {}
                    Decision::EvictOldestThenAdmit => evicting = true,
                    decision => {
                        if mode == Mode::Retry {
                            self.counts.rare().retries.fetch_add(1, Relaxed);
                        }
                        break Ok(self.refuse(value, decision, mode, len));
                    }
                }
            }
            let mut block = self.tail_block.load(Acquire);
            if block.is_null() {
                match self.install_first(&mut next_block) {
                    Some(first) => block = first,
                    None => {
                        // The installer stores `tail_block` next.
                        backoff(&mut step);
                        continue;
                    }
                }
            }
            if offset + 1 == BLOCK_CAP && next_block.is_null() && self.spare.load(Relaxed).is_null()
            {
                // The claim of the last slot makes this producer the
                // installer, and the others wait for the install: allocate
                // before the claim when no spare is likely (a spare is taken
                // after it, see `pop_spare`).
                next_block = Block::alloc();
            }
            if self
                .tail
                .compare_exchange_weak(tail, tail + (1 << SHIFT), SeqCst, Relaxed)
                .is_err()
            {
                backoff(&mut step);
                continue;
            }
            // SAFETY: the claim succeeded, so `block` is the block of `pos`
            // (a later block would need `tail` to have moved, failing the
            // claim) and it is live: the consumer frees a block only after
            // reading every slot of it, and this slot is not written yet.
            let block = unsafe { &*block };
            if offset + 1 == BLOCK_CAP {
                let next = if next_block.is_null() {
                    // SAFETY: this producer claimed the block's last slot:
                    // it is the installer.
                    unsafe { self.pop_spare() }
                } else {
                    std::mem::replace(&mut next_block, ptr::null_mut())
                };
                self.tail_block.store(next, Release);
                self.tail.fetch_add(1 << SHIFT, Release);
                block.next.store(next, Release);
            }
            // SAFETY: claimed above, not written yet.
            break Ok(unsafe { self.write(block, offset, value, len, mode, evicting) });
        };
        if !next_block.is_null() {
            // SAFETY: made by this producer and never published (a block
            // lost to another's first install, or made for a last-slot claim
            // it lost): it alone has it. Freed, not kept: only the consumer
            // pushes to `spare` (see `pop_spare`).
            drop(unsafe { Box::from_raw(next_block) });
        }
        outcome
    }

    /// A decision other than admit: counted, and the element handed back.
    #[cold]
    #[inline(never)]
    fn refuse(&self, value: T, decision: Decision, mode: Mode, len: usize) -> Pushed<T> {
        match decision {
            Decision::Suspend if mode == Mode::Muting => Pushed::WouldSuspend(value),
            Decision::Suspend => {
                self.counts.rare().refused_full.fetch_add(1, Relaxed);
                Pushed::Done(Offer::Full(value), len)
            }
            Decision::DropIncoming => {
                self.counts.rare().dropped.fetch_add(1, Relaxed);
                Pushed::Done(Offer::Dropped(value), len)
            }
            Decision::Reject => {
                self.counts.rare().rejected.fetch_add(1, Relaxed);
                Pushed::Done(Offer::Rejected(value), len)
            }
            // `push` admits on these two.
            Decision::EvictOldestThenAdmit | Decision::Admit => {
                unreachable!("the lane refuses only by drop, reject or suspend")
            }
        }
    }

    /// The very first push installs the first block (`None`: another
    /// producer is installing it, look again; the block made here is kept
    /// for later).
    ///
    /// The block is published to the consumer (`first`) before it is to
    /// the other producers (`tail_block`): a producer that finds it through
    /// `tail_block` may claim, write and publish a slot in it at once and
    /// wake the consumer, which finds blocks only through `first`. In the
    /// other order that consumer could find no block, report nothing ready
    /// and go idle, and an installer whose own push was then refused (a
    /// full bounded lane) or closed would wake no one: an admitted message
    /// left unseen (`tests/lane_loom.rs`,
    /// `a_completed_push_is_visible_to_the_consumer`).
    #[cold]
    #[inline(never)]
    fn install_first(&self, next_block: &mut *mut Block<T>) -> Option<*mut Block<T>> {
        // A new block: `spare` is empty until the consumer has left one.
        let new = if next_block.is_null() {
            Block::alloc()
        } else {
            std::mem::replace(next_block, ptr::null_mut())
        };
        let (installed, then) = if self.faults.first_published_late() {
            (&self.tail_block, &self.first)
        } else {
            (&self.first, &self.tail_block)
        };
        match installed.compare_exchange(ptr::null_mut(), new, AcqRel, Acquire) {
            Ok(_) => {
                then.store(new, Release);
                Some(new)
            }
            Err(_) => {
                *next_block = new;
                None
            }
        }
    }

    /// Elements admitted and not yet removed (0 once closed).
    pub(crate) fn len(&self) -> usize {
        let tail = self.tail.load(SeqCst);
        if tail & CLOSED != 0 {
            return 0;
        }
        count(tail >> SHIFT).saturating_sub(self.consumer.taken.load(SeqCst))
    }

    /// Seals the lane from the producers' side: every later claim fails
    /// (the push answers `Err`), as after [`Lane::close`], but nothing is
    /// drained: the consumer still takes every element admitted before the
    /// seal, waiting as usual for the ones whose producers are still
    /// writing them ([`Lane::admitted`] counts them). Returns false if the
    /// lane was sealed or closed before. Any thread may call it.
    pub(crate) fn seal(&self) -> bool {
        self.tail.fetch_or(CLOSED, SeqCst) & CLOSED == 0
    }

    /// Elements admitted and not yet removed, claimed ones still being
    /// written included, whether or not the lane is sealed (unlike
    /// [`Lane::len`], which is 0 once closed). After a [`Lane::close`] it
    /// still counts the elements dropped with the lane.
    pub(crate) fn admitted(&self) -> usize {
        count(self.tail.load(SeqCst) >> SHIFT).saturating_sub(self.consumer.taken.load(SeqCst))
    }

    /// [`Lane::admitted`], reading `tail` by a read-modify-write (one that
    /// changes nothing): a consumer's half of a hand-shake paired on `tail`.
    /// Every claim is a read-modify-write of `tail` too, so the two are
    /// ordered: either this counts the claim, or the claim reads this and
    /// sees what the caller stored before it (`buffered/shared.rs`).
    pub(crate) fn admitted_ordered(&self) -> usize {
        count(self.tail.fetch_or(0, SeqCst) >> SHIFT)
            .saturating_sub(self.consumer.taken.load(SeqCst))
    }

    /// [`Lane::admitted`] by a relaxed load of `tail`: the injected fault of
    /// `tests/stream_loom.rs` (`Inject::LookWithoutClaimOrder`).
    #[cfg(turno_loom)]
    pub(crate) fn admitted_relaxed(&self) -> usize {
        count(self.tail.load(Relaxed) >> SHIFT).saturating_sub(self.consumer.taken.load(SeqCst))
    }

    /// True once [`Lane::close`] (or [`Lane::seal`]) ran.
    pub(crate) fn is_closed(&self) -> bool {
        self.tail.load(SeqCst) & CLOSED != 0
    }

    /// The counters, as [`Buffer::stats`](crate::buffer::Buffer::stats)
    /// keeps them. `max_depth` is the greatest depth a producer saw.
    pub(crate) fn stats(&self) -> BufferStats {
        let c = &self.counts;
        let queued = count(self.tail.load(SeqCst) >> SHIFT) as u64;
        let dropped = c.read(|r| &r.dropped, Relaxed);
        let rejected = c.read(|r| &r.rejected, Relaxed);
        let full = c.read(|r| &r.refused_full, Relaxed);
        let attempts = queued + dropped + rejected + full;
        let drained = c.read(|r| &r.drained, Acquire);
        let evicted = c.read(|r| &r.evicted, Acquire);
        let removed = self.consumer.taken.load(SeqCst) as u64;
        let taken = if self.is_closed() {
            removed.saturating_sub(evicted + c.read(|r| &r.popped_at_close, Acquire))
        } else {
            removed.saturating_sub(evicted)
        };
        BufferStats {
            offered: attempts - c.read(|r| &r.retries, Relaxed),
            attempts,
            taken,
            // Incoming elements dropped, and the oldest evicted.
            dropped: dropped + evicted,
            rejected,
            refused_full: full,
            drained,
            max_depth: c.max_depth.load(Relaxed),
        }
    }

    /// The slot the consumer reads next, moving to the next block (and
    /// recycling the old one) when the current one is done. `None`: no
    /// block yet, or the next block not yet linked.
    ///
    /// # Safety
    /// Only the consumer calls it (one thread at a time).
    #[inline]
    unsafe fn head_slot(&self, head: &mut Head<T>) -> Option<&Slot<T>> {
        if head.block.is_null() || head.offset as usize == BLOCK_CAP {
            // SAFETY: forwarded from the caller.
            if !unsafe { self.advance(head) } {
                return None;
            }
        }
        // SAFETY: the consumer's block is live: only this consumer frees
        // blocks, and only the ones it has left (in `advance`); and
        // `head.offset < BLOCK_CAP` here (`advance` moved on otherwise).
        Some(unsafe { (*head.block).slots.get_unchecked(head.offset as usize) })
    }

    /// The rare part of [`Lane::head_slot`]: the first block, or the move
    /// to the next one. False when there is none yet.
    ///
    /// # Safety
    /// Only the consumer calls it (one thread at a time).
    #[cold]
    #[inline(never)]
    unsafe fn advance(&self, head: &mut Head<T>) -> bool {
        if head.block.is_null() {
            head.block = self.first.load(Acquire);
            if head.block.is_null() {
                return false;
            }
        }
        if head.offset as usize == BLOCK_CAP {
            // SAFETY: `head.block` is live: only this consumer frees blocks,
            // and only the one it leaves here.
            let old = unsafe { &*head.block };
            let next = old.next.load(Acquire);
            if next.is_null() {
                return false;
            }
            // Every slot of `old` was read, so every producer of it is done
            // with it (the last one linked `next` before writing): reset it
            // for a later install.
            old.next.store(ptr::null_mut(), Relaxed);
            for s in &old.slots {
                s.state.store(0, Relaxed);
            }
            // SAFETY: the consumer, with the block it left (reset above).
            unsafe { self.push_spare(head.block) };
            head.block = next;
            head.offset = 0;
        }
        true
    }

    /// True when the next element is written and can be taken.
    ///
    /// # Safety
    /// Only the consumer calls it (one thread at a time).
    pub(crate) unsafe fn ready(&self) -> bool {
        // SAFETY: the caller is the only consumer, so `head` is not shared.
        self.consumer.head.with_mut(|h| unsafe {
            let h = &mut *h;
            !h.closed
                && self
                    .head_slot(h)
                    .is_some_and(|s| s.state.load(Acquire) == WRITTEN)
        })
    }

    /// Takes the oldest element, and the depth left after it; `None` when
    /// nothing is written yet (or the lane is closed). Keep-newest
    /// evictions owed are made first, each element passed to `evicted`.
    ///
    /// # Safety
    /// Only the consumer calls it (one thread at a time).
    pub(crate) unsafe fn take(&self, evicted: impl FnMut(T)) -> Option<(T, usize)> {
        // SAFETY: the caller is the only consumer.
        let value = self.consumer.head.with_mut(|h| unsafe {
            let h = &mut *h;
            if h.closed {
                return None;
            }
            if self.consumer.owed.load(Relaxed) > 0 {
                self.evict_owed(h, evicted);
            }
            let value = self.pop(h)?;
            Some((value, self.removed()))
        })?;
        let (value, removed) = value;
        // The store of `taken` (in `pop`) before the load of `tail`: a
        // refused outside sender saw a claim and a `taken` from before
        // this take; without the order, this load could miss that claim
        // while the sender's retry still misses the store, and the depth
        // read would be too low for the mailbox to look for the sender
        // (`Mailbox::after_suspend_take`): a store then a load, so only a
        // full fence orders them. The light side of the asymmetric pair:
        // the registering sender pays the barrier (`crate::asym_fence`,
        // `crate::waiters`). Only a suspend lane has senders waiting for
        // room: where the pair is not asymmetric (the light side a full
        // fence), the other policies do not pay it.
        if self.faults.take_fences() {
            crate::asym_fence::light_where(matches!(self.policy, Policy::Suspend(_)));
        }
        let depth = count(self.tail.load(SeqCst) >> SHIFT).saturating_sub(removed);
        Some((value, depth))
    }

    /// [`Lane::take`] without the depth: the oldest element, or `None` when
    /// nothing is written yet (or the lane is closed). It does not read
    /// `tail`, the producers' word, so a consumer that does not need the
    /// depth (a stream) leaves that cache line to them.
    ///
    /// # Safety
    /// Only the consumer calls it (one thread at a time).
    #[inline]
    pub(crate) unsafe fn take_one(&self, evicted: impl FnMut(T)) -> Option<T> {
        // SAFETY: the caller is the only consumer.
        self.consumer.head.with_mut(|h| unsafe {
            let h = &mut *h;
            if h.closed {
                return None;
            }
            if self.consumer.owed.load(Relaxed) > 0 {
                self.evict_owed(h, evicted);
            }
            self.pop(h)
        })
    }

    /// Makes the owed keep-newest evictions now (each element passed to
    /// `evicted`), as the next take would; returns how many. The mailbox
    /// calls it before looking at its signals, so that the signal of an
    /// evicted reply is served before the next message.
    ///
    /// # Safety
    /// Only the consumer calls it (one thread at a time).
    #[inline]
    pub(crate) unsafe fn evict(&self, evicted: impl FnMut(T)) -> usize {
        if self.consumer.owed.load(Relaxed) == 0 {
            return 0;
        }
        // SAFETY: the caller is the only consumer.
        self.consumer.head.with_mut(|h| unsafe {
            let h = &mut *h;
            if h.closed {
                return 0;
            }
            self.evict_owed(h, evicted)
        })
    }

    /// Removes the owed keep-newest evictions, oldest first, never below
    /// the capacity; returns how many.
    ///
    /// # Safety
    /// Only the consumer calls it.
    #[cold]
    #[inline(never)]
    unsafe fn evict_owed(&self, head: &mut Head<T>, mut evicted: impl FnMut(T)) -> usize {
        // Acquire: every owed count seen here comes after its producer's
        // claim, so the `tail` read below counts the claimed elements.
        let owed = self.consumer.owed.swap(0, AcqRel);
        let len = count(self.tail.load(SeqCst) >> SHIFT) - self.removed();
        let over = self
            .policy
            .capacity()
            .map_or(0, |cap| len.saturating_sub(cap));
        let n = owed.min(over);
        let mut done = 0;
        while done < n {
            // SAFETY: forwarded from the caller.
            match unsafe { self.pop(head) } {
                Some(v) => {
                    evicted(v);
                    done += 1;
                }
                // The oldest is still being written: the rest is owed on.
                None => {
                    self.consumer.owed.fetch_add(n - done, AcqRel);
                    break;
                }
            }
        }
        if done > 0 {
            // Relaxed: the consumer reads its own last store.
            let total = self.counts.read(|r| &r.evicted, Relaxed) + done as u64;
            self.counts.store(|r| &r.evicted, total);
        }
        done
    }

    /// Elements removed so far, as the consumer knows it: `taken`, of which
    /// it is the only writer, so a relaxed load sees its own last store.
    /// Only the consumer calls it (producers load `taken` themselves).
    #[inline]
    fn removed(&self) -> usize {
        self.consumer.taken.load(Relaxed)
    }

    /// # Safety
    /// Only the consumer calls it.
    unsafe fn pop(&self, head: &mut Head<T>) -> Option<T> {
        // SAFETY: forwarded from the caller.
        let slot = unsafe { self.head_slot(head) }?;
        if slot.state.load(Acquire) != WRITTEN {
            return None;
        }
        // SAFETY: `WRITTEN` (acquire) says the producer's write is done and
        // visible; this consumer reads each position once (it moves on).
        let value = slot.value.with(|p| unsafe { (*p).assume_init_read() });
        head.offset += 1;
        self.consumer.taken.store(self.removed() + 1, Release);
        Some(value)
    }

    /// Closes the lane: later pushes get `Err`. The owed keep-newest
    /// evictions are made first (passed to `evicted`); returns how many
    /// admitted elements were left after them (the ones already written
    /// are passed to `drained`, the ones being written are dropped with the
    /// lane); 0 if it was closed before.
    ///
    /// # Safety
    /// Only the consumer calls it (one thread at a time).
    pub(crate) unsafe fn close(&self, mut drained: impl FnMut(T), evicted: impl FnMut(T)) -> usize {
        // SAFETY: the caller is the only consumer.
        self.consumer.head.with_mut(|h| unsafe {
            let h = &mut *h;
            if h.closed {
                return 0;
            }
            let tail = self.tail.fetch_or(CLOSED, SeqCst);
            if self.consumer.owed.load(Relaxed) > 0 {
                self.evict_owed(h, evicted);
            }
            h.closed = true;
            let left = count(tail >> SHIFT) - self.removed();
            self.counts.store(|r| &r.drained, left as u64);
            let mut popped = 0;
            while let Some(v) = self.pop(h) {
                drained(v);
                popped += 1;
            }
            self.counts.store(|r| &r.popped_at_close, popped);
            left
        })
    }
}

#[cfg(turno_loom)]
impl<T, P: Place<T>> Lane<T, P> {
    /// True when the blocks of the lane (from the consumer's one on) and
    /// those of the spare stack are distinct, and each list ends. Only for
    /// the lane's drop, when no other thread touches it.
    fn blocks_are_disjoint(&mut self) -> bool {
        let walk = |mut b: *mut Block<T>| {
            let mut seen = Vec::new();
            while !b.is_null() {
                if seen.contains(&b) {
                    return None;
                }
                seen.push(b);
                // SAFETY: `&mut self`: the lane's blocks are live and only
                // read here.
                b = unsafe { &*b }.next.load(Relaxed);
            }
            Some(seen)
        };
        let start = self.consumer.head.with_mut(|h| {
            // SAFETY: `&mut self`: no other thread touches the lane.
            let h = unsafe { &*h };
            if h.block.is_null() {
                self.first.load(Relaxed)
            } else {
                h.block
            }
        });
        match (walk(start), walk(self.spare.load(Relaxed))) {
            (Some(lane), Some(spare)) => spare.iter().all(|b| !lane.contains(b)),
            _ => false,
        }
    }
}

impl<T, P: Place<T>> Drop for Lane<T, P> {
    fn drop(&mut self) {
        // Under loom, the model checks that no block is both in the lane and
        // in the spare stack (a stack that hands out a stale link would put
        // one there: `Inject::SpareRelaxed`), and leaks the blocks rather
        // than free one twice.
        #[cfg(turno_loom)]
        if !self.blocks_are_disjoint() {
            if !std::thread::panicking() {
                panic!("a block is both in the lane and in its spare stack");
            }
            return;
        }
        // No producer is left (they hold the lane by reference), so every
        // claimed slot is written: drop the elements the consumer has not
        // read, then the blocks.
        self.consumer.head.with_mut(|h| {
            // SAFETY: `&mut self`: no other thread touches the lane.
            let h = unsafe { &mut *h };
            let (mut block, mut offset) = if h.block.is_null() {
                (self.first.load(Acquire), 0)
            } else {
                (h.block, h.offset as usize)
            };
            while !block.is_null() {
                // SAFETY: blocks from the consumer's one onwards are owned
                // by the lane and linked once each; each is freed once here.
                let b = unsafe { Box::from_raw(block) };
                for s in &b.slots[offset.min(BLOCK_CAP)..] {
                    if s.state.load(Acquire) == WRITTEN {
                        // SAFETY: written and never read (the consumer read
                        // only the slots before `offset`).
                        s.value.with_mut(|p| unsafe { (*p).assume_init_drop() });
                    }
                }
                block = b.next.load(Acquire);
                offset = 0;
            }
        });
        let mut spare = self.spare.swap(ptr::null_mut(), Acquire);
        while !spare.is_null() {
            // SAFETY: the blocks in `spare` are owned by the lane, hold no
            // element, and are each in the stack once.
            let b = unsafe { Box::from_raw(spare) };
            spare = b.next.load(Relaxed);
        }
    }
}

mod faults;
#[cfg(test)]
mod tests;

use faults::Faults;
#[cfg(turno_loom)]
pub use faults::Inject;

/// A thin public face of the lane for `tests/lane_loom.rs`.
#[cfg(turno_loom)]
pub(crate) mod model {
    pub use super::Inject;
    use super::{Lane, Mode, Pushed};
    use crate::buffer::{BufferStats, Offer, Policy};

    /// What a model push did.
    #[derive(Debug, PartialEq, Eq)]
    pub enum ModelPush<T> {
        /// Queued.
        Enqueued,
        /// Handed back: dropped, rejected or full.
        Refused(T),
        /// The lane is closed.
        Closed(T),
    }

    /// A lane of `T` with an optional injected fault. One thread at a time
    /// may call the consumer methods (`take`, `ready`, `close`).
    pub struct ModelLane<T>(Lane<T>);

    impl<T> ModelLane<T> {
        /// A lane with `policy` and `inject`.
        pub fn new(policy: Policy, inject: Inject) -> Self {
            ModelLane(Lane::new(policy).with_injected(inject))
        }

        /// Every lane created on this thread from now on (a mailbox's, by
        /// the runtime) starts with `inject`. Loom runs all of a model's
        /// threads on the thread that calls `loom::model`.
        pub fn inject_new(inject: Inject) {
            super::faults::inject_new(inject);
        }

        /// Offers a new element.
        pub fn push(&self, value: T) -> ModelPush<T> {
            match self.0.push(value, Mode::Offer) {
                Ok(Pushed::Done(Offer::Enqueued { .. } | Offer::Evicting, _)) => {
                    ModelPush::Enqueued
                }
                Ok(Pushed::Done(
                    Offer::Dropped(v) | Offer::Rejected(v) | Offer::Full(v) | Offer::Evicted(v),
                    _,
                ))
                | Ok(Pushed::WouldSuspend(v)) => ModelPush::Refused(v),
                Err(v) => ModelPush::Closed(v),
            }
        }

        /// Takes the oldest written element (consumer only).
        pub fn take(&self) -> Option<T> {
            // SAFETY: the model calls consumer methods from one thread at a
            // time (the documented contract of this type).
            unsafe { self.0.take(drop) }.map(|(v, _)| v)
        }

        /// Closes; returns the admitted elements left (consumer only).
        pub fn close(&self, drained: impl FnMut(T)) -> usize {
            // SAFETY: as in `take`.
            unsafe { self.0.close(drained, drop) }
        }

        /// Elements admitted and not yet removed.
        pub fn len(&self) -> usize {
            self.0.len()
        }

        /// True when nothing is admitted.
        pub fn is_empty(&self) -> bool {
            self.0.len() == 0
        }

        /// The counters.
        pub fn stats(&self) -> BufferStats {
            self.0.stats()
        }
    }
}
