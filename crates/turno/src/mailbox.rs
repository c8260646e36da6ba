//! Mailboxes: a bounded user lane with an overflow policy, and a system lane
//! that no policy can drop.
//!
//! A mailbox belongs to one actor. Any thread may push into it through an
//! [`Addr`](crate::Addr); only the scheduler running the actor takes from it.
//! Two lanes:
//!
//! - the **user lane** applies the actor's [`Policy`]: this is where
//!   ordinary messages and replies wait, FIFO per sender. It is the
//!   lock-free [`Lane`](crate::lane) (admission by `Policy::decide` on an
//!   atomic length; keep-newest evictions made by the consumer before a
//!   take), tested against the locked [`Buffer`](crate::buffer::Buffer);
//! - the **system lane** carries control (start, stop, child failure) and
//!   signals (timer fires, ask timeouts, terminations). It is unbounded
//!   because its producers are bounded by construction (one entry per timer,
//!   request, child or watch), and it is always handled first.
//!
//! The mailbox also keeps the set of senders it has *muted* (suspend policy):
//! they are released when the depth falls below the low watermark.

// The path cell is not part of any loom model (asked for rarely, and
// under a lock when written): std's atomic, whose word can be lent.
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::lane::{Lane, Mode, Pushed};
use crate::lazy::LazyBox;
use crate::sync::{AtomicBool, AtomicU8, AtomicUsize, Mutex, RawLock, UnsafeCell};

use crate::buffer::{BufferStats, Offer, Policy};
use crate::engine::slot::{me_at, Queued, SelfPtr};
use crate::envelope::Envelope;
use crate::ids::{ActorId, ActorPath, RequestId};
use crate::metrics::{Label, MailboxMetrics, Metrics};
use crate::path_cell::PathCell;
use crate::run_state::RunState;
use crate::shared::SystemShared;
use crate::system_lane::{Control, QueuesBox, Signal, SystemFlags, SystemQueues};
use crate::time::Instant;
use crate::trace::{drop_policy, ActorEvent, DeadLetterReason, Dropped, Lane as TraceLane};
use crate::verdict::Verdict;
use crate::waiters::{Waiters, WaitingSender};

/// The untyped operations the engine needs on any actor's mailbox, without
/// touching the actor's cell.
pub(crate) trait MailboxOps: Send + Sync {
    /// The actor's path (the tree keeps none of its own).
    fn path(&self) -> &ActorPath;
    /// True when the actor was spawned with a name (its path is in the
    /// system's path index while it lives).
    fn is_named(&self) -> bool;
    fn push_control(&self, c: Control) -> bool;
    fn push_signal(&self, s: Signal) -> bool;
    fn forget_muted(&self, sender: ActorId);
    fn is_muting(&self, sender: ActorId) -> bool;
    /// Unparks the actor: schedules it if it is parked (or idle), marks
    /// it if a runner holds it (see [`crate::run_state`]).
    fn wake(&self);
    /// The registering engine's release of the slot's run-state word, held
    /// since the slot was built: the engine then queues the actor's one
    /// entry itself (pushes made before, a parent sending to its child in
    /// the turn that spawned it, marked the word and woke no one).
    fn release_registered(&self);
    /// The holder of a claimed hand-off gives the claim up (the word
    /// `NOTIFIED`: the slot's one run queue entry), before it moves the
    /// slot to a run queue others take from (see [`crate::hand_off`]).
    fn unclaim(&self);
}

/// A queued user-lane offer: the buffer verdict, the depth after it, and
/// whether the sender was newly muted.
type Admitted<M> = (Offer<Envelope<M>>, usize, bool);

/// One actor's mailbox. Shared (behind an `Arc`) by every address of the actor.
///
/// Producers (any thread) push; the consumer side (`next`, `has_work`,
/// `try_idle`, `close`, `pop_user`) is called only by whoever holds the
/// actor's cell (its runner, or the test kit's probe), one at a time.
pub(crate) struct Mailbox<M> {
    /// Where the actor sits in the tree; its name is the last segment.
    /// See [`Mailbox::path`].
    path: PathCell,
    /// The policy is the lane's.
    user: Lane<Envelope<M>>,
    /// The system lane: control and signals, and whether the mailbox is
    /// closed, under a lock of their own (`system_lock`; they are rare),
    /// reached only through [`Mailbox::with_system`]; whether each queue is
    /// empty is mirrored in an atomic (`system_ready`) so that the hot path
    /// looks at them without the lock.
    system: SystemCell<QueuesBox>,
    /// The system lane's flags, under the same lock: one byte, beside the
    /// other bytes (beside the queues' pointer they padded it to two words).
    system_flags: SystemCell<SystemFlags>,
    /// The system lane's lock: one byte, beside the flags (a `Mutex` around
    /// the queues was a word more).
    system_lock: RawLock,
    /// Whether the system lane's control and signal queues are non-empty
    /// ([`SYSTEM_CONTROL`], [`SYSTEM_SIGNAL`]), mirrored under the lane's
    /// lock after every change: readers only ask whether one is empty, so
    /// one byte, where two `u32` lengths were eight. Its [`RARE`] bit is
    /// the rare-work word (see [`Mailbox::rare_pending`]), in this byte so
    /// that it costs none of the mailbox's.
    system_ready: AtomicU8,
    /// The run-state word: whether the scheduler has been told about this
    /// actor (further pushes need not tell it again) and whether a runner
    /// holds its cell (the cell's lock). Producers mark it *after* their
    /// element is visible; see [`crate::run_state`]. One byte, where the
    /// `notified` flag was.
    run: RunState,
    /// Senders muted by this mailbox, allocated when the first one is
    /// (only a full suspend mailbox mutes).
    muted: LazyBox<Muted>,
    /// Outside senders waiting for room, and the stale-reply count: one
    /// word until the first of them (see [`crate::waiters`]).
    waiters: Waiters,
    /// How far this mailbox is from the start of its slot (the body's
    /// offset, `Slot::BODY_AT`): the actor's id is the slot
    /// header's, read from there (see [`Mailbox::id`]), not kept twice.
    /// Two bytes, beside the flags.
    at: u16,
    /// Consumer-only: a take saw the lane at its capacity (less the one
    /// taken) since the last look for waiting senders, so a sender may have
    /// been refused and be waiting. Only then does a take below the low
    /// watermark pay the fence of that look.
    maybe_waiting: AtomicBool,
    pub(crate) shared: Arc<SystemShared>,
    metrics: MailboxMetrics,
}

/// [`Mailbox::system_ready`]: the system lane's control queue is non-empty.
const SYSTEM_CONTROL: u8 = 1;
/// [`Mailbox::system_ready`]: its signal queue is non-empty.
const SYSTEM_SIGNAL: u8 = 2;
/// [`Mailbox::system_ready`]'s rare-work bit: something other than the
/// user lane may want the runner (a control or a signal, keep-newest
/// evictions owed, a stash re-delivery). The batch loop's message path
/// reads this bit instead of each of those sources and takes the user lane
/// when it is clear (see [`Mailbox::rare_pending`]).
const RARE: u8 = 4;

/// The system lane's queues, touched only under the mailbox's
/// `system_lock` (see [`Mailbox::with_system`]).
struct SystemCell<T>(UnsafeCell<T>);

// SAFETY: the queues are only reached through `Mailbox::with_system`, which
// holds the mailbox's `system_lock` while it lends them, so no two threads
// touch them at once; they hold `Send` entries only (controls, signals).
unsafe impl<T: Send> Sync for SystemCell<T> {}

/// The senders a mailbox has muted, released below the low watermark.
/// Closing the lane holds this lock (or seals the part when no sender was
/// ever muted), so no sender is muted by a closed mailbox.
#[derive(Default)]
struct Muted {
    list: Mutex<Vec<ActorId>>,
    len: AtomicUsize,
}

/// The next unit of work of an actor, see [`Mailbox::next`].
pub(crate) enum Next<M> {
    Control(Control),
    Signal(Signal),
    /// The stash has a message to re-deliver.
    Redeliver,
    /// A user-lane entry, the senders whose mute this take released, and
    /// whether the take emptied the lane (as far as the taker saw).
    User(Envelope<M>, Vec<ActorId>, bool),
    Idle,
}

impl<M> Mailbox<M> {
    /// The actor's path (an unnamed actor's is written the first time).
    #[inline]
    pub(crate) fn path(&self) -> &ActorPath {
        self.path.get(self.id())
    }

    /// The actor's id, kept once, in the header of the slot this mailbox
    /// is part of.
    #[inline]
    pub(crate) fn id(&self) -> ActorId {
        let slot = (self as *const Self)
            .cast::<u8>()
            .wrapping_sub(usize::from(self.at));
        // SAFETY: every mailbox is built inside a slot's body, at the
        // offset `at` from the slot's start that its builder gave
        // (`Slot::BODY_AT` of that body type; a body is `repr(C)` with
        // its mailbox first), and never moved out of it; the slot is
        // `repr(C)` with the id its first field (asserted with `Slot::BODY_AT`), so the id
        // is at the slot's start, inside the same allocation as this
        // mailbox, alive as long as the mailbox is borrowed, and never
        // written after the slot is built. (The reference to the mailbox
        // was made from a pointer to the whole slot, an `Arc`'s, so its
        // provenance covers the header.)
        unsafe { slot.cast::<ActorId>().read() }
    }

    /// The start of the slot this mailbox is part of (see [`Mailbox::id`]).
    #[inline]
    pub(crate) fn slot_start(&self) -> *const u8 {
        (self as *const Self)
            .cast::<u8>()
            .wrapping_sub(usize::from(self.at))
    }

    /// Hands the slot this mailbox is part of (its header's own address)
    /// to its system's scheduler as its one run queue entry (the caller
    /// moved the run-state word to `NOTIFIED`); nothing for a slot no
    /// scheduler runs (the test kit's).
    #[inline]
    fn wake_slot(&self) {
        if let Some(sched) = self.shared.sched.get() {
            sched.schedule(Queued::new(self.me().get()));
        }
    }

    /// The header's own address of the slot this mailbox is part of.
    #[inline]
    fn me(&self) -> SelfPtr {
        let slot = self.slot_start();
        // SAFETY: as in `Mailbox::id`: the slot starts `at` bytes before
        // this mailbox, in the same live allocation, and the mailbox's
        // reference has the provenance of the whole slot.
        unsafe { me_at(slot) }
    }
}

impl<M: Send + 'static> Mailbox<M> {
    /// A mailbox to be placed at `at` bytes from the start of its slot
    /// (`Slot::BODY_AT` of the body it is the first field of); `scheduled`:
    /// an actor's (`Slot::new_in_arc`), whose run-state word its builder
    /// holds until the engine registers it, not the test kit's. Inlined,
    /// so that a spawn builds it in place in the slot, not on the stack and
    /// copied.
    #[inline]
    pub(crate) fn new(
        at: u16,
        path: PathCell,
        policy: Policy,
        shared: Arc<SystemShared>,
        scheduled: bool,
    ) -> Self {
        let metrics = MailboxMetrics::new(shared.metrics);
        Mailbox {
            path,
            user: Lane::new(policy),
            system: SystemCell(UnsafeCell::new(None)),
            system_flags: SystemCell(UnsafeCell::new(SystemFlags::default())),
            system_lock: RawLock::new(),
            system_ready: AtomicU8::new(0),
            run: if scheduled {
                RunState::held()
            } else {
                RunState::unheld()
            },
            muted: LazyBox::new(),
            waiters: Waiters::new(),
            at,
            maybe_waiting: AtomicBool::new(false),
            shared,
            metrics,
        }
    }

    pub(crate) fn policy(&self) -> Policy {
        self.user.policy()
    }

    /// The actor's metric handles, labelled with its name and policy.
    pub(crate) fn metrics(&self) -> Metrics<'_> {
        Metrics {
            handles: &self.metrics,
            actor: Label {
                path: &self.path,
                id: self.id(),
            },
            policy: self.policy(),
        }
    }

    /// Offers a user message. `muting_sender` is the sending actor when the
    /// send comes from a turn: on a full suspend mailbox the message is queued
    /// anyway and the sender recorded as muted (`true` in the second field);
    /// the scheduler decides whether the mute stands (see `Context::send`).
    /// `retry`: the message was handed back as [`Verdict::Full`] by this
    /// mailbox before (counted as an attempt, not a new message).
    ///
    /// The message path (a new message the policy admits, in a block
    /// already installed: [`Lane::push_admitted`]) builds its verdict
    /// here and touches no buffer `Offer`; every other push (a refusal, an
    /// eviction, a retry, a closed mailbox, a block to install, a lost
    /// claim) is the general one, out of line. Always inlined, into
    /// `Context::send` and `Addr::try_send`: the common case is small, and
    /// a call of its own returned the verdict through memory.
    #[inline(always)]
    pub(crate) fn push_user(
        &self,
        msg: M,
        muting_sender: Option<ActorId>,
        retry: bool,
    ) -> (Verdict<M>, bool) {
        if retry {
            return self.push_user_slow(Envelope::Msg(msg), muting_sender, retry);
        }
        match self.push_message(msg) {
            Ok(remaining) => (Verdict::Enqueued { remaining }, false),
            Err(env) => self.push_user_slow(env, muting_sender, retry),
        }
    }

    /// [`Mailbox::push_user`]'s message path alone (a new message, not a
    /// retry): `Ok` with the verdict's `remaining` when the message is in
    /// (its verdict is `Verdict::Enqueued`, traced and notified here);
    /// `Err` hands the envelope back with nothing done, for
    /// [`Mailbox::push_user_slow`]. `Context::send` builds its verdict
    /// from it in registers, its general case out of line.
    #[inline(always)]
    pub(crate) fn push_message(&self, msg: M) -> Result<Option<usize>, Envelope<M>> {
        let (depth, remaining) = self.user.push_admitted(Envelope::Msg(msg))?;
        // As `account` and `notify` below, for `Offer::Enqueued`.
        self.trace_enqueue(depth);
        self.notify();
        Ok(remaining)
    }

    /// [`Mailbox::push_user`]'s general case: the lane's general push
    /// ([`Lane::push_slow`]), the verdict from its `Offer`.
    #[inline(never)]
    pub(crate) fn push_user_slow(
        &self,
        env: Envelope<M>,
        muting_sender: Option<ActorId>,
        retry: bool,
    ) -> (Verdict<M>, bool) {
        let mode = match (muting_sender, retry) {
            (Some(_), _) => Mode::Muting,
            (None, true) => Mode::Retry,
            (None, false) => Mode::Offer,
        };
        let (offer, depth, muted) = match self.user.push_slow(env, mode) {
            Ok(Pushed::Done(offer, depth)) => (offer, depth, false),
            Ok(Pushed::WouldSuspend(env)) => match muting_sender {
                Some(sender) => match self.mute_and_force(sender, env) {
                    Ok(done) => done,
                    Err(env) => return self.closed_verdict(env),
                },
                None => unreachable!("only a muting sender is told WouldSuspend"),
            },
            Err(env) => return self.closed_verdict(env),
        };
        let queued = offer.is_queued();
        if matches!(offer, Offer::Evicting) {
            // An eviction is owed: the runner makes it before its next
            // signal and message (`Mailbox::next`), off the message path.
            self.mark_rare();
        }
        let verdict = self.account(offer, depth);
        if queued {
            self.notify();
        }
        (verdict, muted)
    }

    /// A sender meeting a full suspend mailbox: its message goes in (the
    /// overshoot) and it is muted instead of refused. Listed before its
    /// message is visible, so the take of that message sees it; under the
    /// muted lock, which closing takes too, so a closed mailbox mutes no one.
    #[cold]
    #[inline(never)]
    fn mute_and_force(
        &self,
        sender: ActorId,
        env: Envelope<M>,
    ) -> Result<Admitted<M>, Envelope<M>> {
        let lane = &self.user;
        // Sealed: the mailbox is closing.
        let Some(part) = self.muted.get_or_init() else {
            return Err(env);
        };
        let mut muted = part.list.lock();
        if lane.is_closed() {
            return Err(env);
        }
        let newly = !muted.contains(&sender);
        if newly {
            muted.push(sender);
            part.len.store(muted.len(), Ordering::Release);
        }
        match lane.push(env, Mode::Force) {
            Ok(Pushed::Done(offer, depth)) => Ok((offer, depth, newly)),
            // Force neither suspends nor meets a close (it needs this lock).
            Ok(Pushed::WouldSuspend(env)) | Err(env) => {
                if newly {
                    muted.retain(|s| *s != sender);
                    part.len.store(muted.len(), Ordering::Release);
                }
                Err(env)
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn closed_verdict(&self, env: Envelope<M>) -> (Verdict<M>, bool) {
        self.dead_letter(DeadLetterReason::Closed);
        (Verdict::Closed(env.into_msg()), false)
    }

    /// Queues a reply: replies bypass the policy's refusal (they answer a
    /// request the receiver made itself, so the receiver bounds them), but a
    /// keep-newest mailbox may later evict them like any message.
    /// `on_queued` runs with the enqueue time before the reply can be taken:
    /// the asker judges "reply before deadline" from it (see [`crate::ask`]).
    pub(crate) fn push_reply(
        &self,
        id: RequestId,
        msg: M,
        on_queued: impl FnOnce(Instant),
    ) -> bool {
        {
            // Under the system lane's lock, which the take of the ask's
            // timeout signal holds too: either that take sees this enqueue
            // time, or the time is read after it (at or past the deadline),
            // as `crate::ask` requires.
            let open = self.with_system(|sys| {
                let open = !sys.is_closed();
                if open {
                    on_queued(self.shared.clock.now());
                }
                open
            });
            if !open {
                self.dead_letter(DeadLetterReason::Closed);
                return false;
            }
        }
        let (offer, depth) = match self.user.push(Envelope::Reply(id, msg), Mode::Force) {
            Ok(Pushed::Done(offer, depth)) => (offer, depth),
            Ok(Pushed::WouldSuspend(_)) | Err(_) => {
                self.dead_letter(DeadLetterReason::Closed);
                return false;
            }
        };
        if matches!(offer, Offer::Evicting) {
            self.mark_rare();
        }
        let _ = self.account(offer, depth);
        self.notify();
        true
    }

    /// After a push is visible: tells the scheduler, unless it was told
    /// already or a runner holds the cell. A read-modify-write of the
    /// run-state word, which the runner's release is too (or, in the test
    /// kit, the consumer's clearing before its last look), so either
    /// this sees the actor idle and wakes it, or the runner's next look
    /// sees this push (see [`crate::run_state`]).
    ///
    /// On a runner thread of this actor's system whose hand-off slot is
    /// empty, a push that finds the actor idle claims it for this thread
    /// instead and puts its slot there (the claimed hand-off, see
    /// [`crate::hand_off`]): the runner's claim is this one.
    #[inline]
    fn notify(&self) {
        if let Some(hand_off) = crate::hand_off::claimable(&self.shared) {
            if self.notify_or_claim() {
                hand_off.replace(Queued::new(self.me().get()), true);
            }
            return;
        }
        if self.run.notify() {
            self.wake_slot();
        }
    }

    /// [`RunState::notify_or_claim`]; under loom, the injected fault's
    /// load and store if the model asked for it.
    #[inline]
    fn notify_or_claim(&self) -> bool {
        #[cfg(turno_loom)]
        if self
            .shared
            .hand_off_claim_bug
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            return self.run.notify_or_claim_by_store();
        }
        self.run.notify_or_claim()
    }

    /// Traces a user-lane enqueue (nothing but the tracer's check when
    /// tracing is off).
    #[inline]
    fn trace_enqueue(&self, depth: usize) {
        let shared = &self.shared;
        shared.tracer.emit(&shared.clock, || ActorEvent::Enqueue {
            actor: self.id().into(),
            lane: TraceLane::User,
            depth,
        });
    }

    /// Turns a buffer offer into a verdict, counting and tracing it.
    fn account(&self, offer: Offer<Envelope<M>>, depth: usize) -> Verdict<M> {
        let shared = &self.shared;
        match offer {
            Offer::Enqueued { remaining } => {
                self.trace_enqueue(depth);
                Verdict::Enqueued { remaining }
            }
            // The eviction itself is the consumer's (`Mailbox::evicted`).
            Offer::Evicting => {
                self.trace_enqueue(depth);
                Verdict::Evicting
            }
            Offer::Evicted(_) => unreachable!("the lane evicts on take, not on offer"),
            Offer::Dropped(env) => {
                self.metrics().dropped();
                shared.tracer.emit(&shared.clock, || ActorEvent::Drop {
                    actor: self.id().into(),
                    policy: drop_policy(self.policy()),
                    which: Dropped::Incoming,
                });
                Verdict::Dropped(env.into_msg())
            }
            Offer::Rejected(env) => {
                self.metrics().rejected();
                shared.tracer.emit(&shared.clock, || ActorEvent::Reject {
                    actor: self.id().into(),
                });
                Verdict::Rejected(env.into_msg())
            }
            Offer::Full(env) => {
                shared.tracer.emit(&shared.clock, || ActorEvent::Full {
                    actor: self.id().into(),
                });
                Verdict::Full(env.into_msg())
            }
        }
    }

    fn dead_letter(&self, reason: DeadLetterReason) {
        self.shared.dead_letter(self.id(), reason);
    }

    /// Pushes a control message. Returns false when the mailbox is closed.
    pub(crate) fn push_control(&self, c: Control) -> bool {
        // A (re)start runs before anything else (see `SystemQueues`).
        self.push_system(|st| st.push_control(c))
    }

    /// Pushes a signal. Returns false when the mailbox is closed.
    pub(crate) fn push_signal(&self, s: Signal) -> bool {
        self.push_system(|st| st.push_signal(s))
    }

    /// Runs `push` on the system lane of an open mailbox, then traces and
    /// wakes as every push does.
    fn push_system(&self, push: impl FnOnce(&mut SystemQueues<'_>)) -> bool {
        let depth = self.with_system(|st| {
            if st.is_closed() {
                return None;
            }
            push(st);
            self.publish_system_ready(st);
            Some(st.control_len() + st.signal_len())
        });
        let Some(depth) = depth else {
            return false;
        };
        // After the lengths are published, before the run-state mark: a
        // runner that sees the mark (or claims after it) sees this word
        // set, and its next take goes to the system lane first.
        #[cfg(turno_loom)]
        let mark = !self
            .shared
            .rare_mark_bug
            .load(std::sync::atomic::Ordering::Relaxed);
        #[cfg(not(turno_loom))]
        let mark = true;
        if mark {
            self.mark_rare();
        }
        self.trace_system_enqueue(depth);
        self.notify();
        true
    }

    /// Sets the rare-work word (see [`Mailbox::rare_pending`]): a producer
    /// of rare work, after its work is visible and before its run-state
    /// mark; the runner, after a turn that made a re-delivery or a take
    /// of rare work that may leave more. A read-modify-write, so that a
    /// runner's clearing swap that reads it (or a later mark) synchronizes
    /// with every marker since its last clear.
    #[inline]
    pub(crate) fn mark_rare(&self) {
        self.system_ready.fetch_or(RARE, Ordering::AcqRel);
    }

    /// True when rare work may be pending (consumer side): a control or a
    /// signal, evictions owed, a re-delivery. False means none was
    /// published before the producer's run-state mark that this runner's
    /// claim or last release look synchronized with, so the message path
    /// may take the user lane (and the look before a release may find the
    /// actor idle) without looking at any of them.
    ///
    /// The word is set by every producer of rare work (`mark_rare`) and
    /// cleared only by the runner, by [`Mailbox::clear_rare`] before a look
    /// at every rare source; a look that finds some sets it back.
    #[inline]
    pub(crate) fn rare_pending(&self) -> bool {
        self.system_ready.load(Ordering::Acquire) & RARE != 0
    }

    /// Clears the rare-work word before a look at every rare source (the
    /// runner only): a read-modify-write, so that it reads the last mark
    /// and the look sees what every marker published before marking.
    #[inline]
    pub(crate) fn clear_rare(&self) {
        self.system_ready.fetch_and(!RARE, Ordering::AcqRel);
    }

    /// Runs `f` on the system lane under its lock. `f` must not come back
    /// here (the lock is not reentrant).
    fn with_system<R>(&self, f: impl FnOnce(&mut SystemQueues<'_>) -> R) -> R {
        let _locked = self.system_lock.lock();
        // SAFETY: every access to `system` is made here, under
        // `system_lock`, which is held until after `f` returns: this is
        // the only reference to the queues while it lives.
        self.system.0.with_mut(|queues| {
            self.system_flags.0.with_mut(|flags| {
                // SAFETY: as above, for both parts of the lane.
                f(&mut SystemQueues::new(unsafe { &mut *flags }, unsafe {
                    &mut *queues
                }))
            })
        })
    }

    /// Mirrors which system queues are non-empty. Called under the lane's
    /// lock, the only writer of those two bits (release: a reader that
    /// sees a bit set and takes the lock finds the entry); a
    /// read-modify-write that keeps the [`RARE`] bit, which others set and
    /// the runner clears without the lock (and which a store would break
    /// the release sequence of).
    fn publish_system_ready(&self, st: &SystemQueues<'_>) {
        let mut ready = 0;
        if st.control_len() > 0 {
            ready |= SYSTEM_CONTROL;
        }
        if st.signal_len() > 0 {
            ready |= SYSTEM_SIGNAL;
        }
        let _ = self
            .system_ready
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |now| {
                Some(now & RARE | ready)
            });
    }

    fn trace_system_enqueue(&self, depth: usize) {
        self.shared
            .tracer
            .emit(&self.shared.clock, || ActorEvent::Enqueue {
                actor: self.id().into(),
                lane: TraceLane::System,
                depth,
            });
    }

    pub(crate) fn has_control(&self) -> bool {
        self.system_ready.load(Ordering::Acquire) & SYSTEM_CONTROL != 0
    }

    fn has_signal(&self) -> bool {
        self.system_ready.load(Ordering::Acquire) & SYSTEM_SIGNAL != 0
    }

    /// Pops from the system lane under its lock.
    fn pop_system<T>(&self, pop: impl FnOnce(&mut SystemQueues<'_>) -> Option<T>) -> Option<T> {
        self.with_system(|st| {
            let item = pop(st);
            // An idle actor keeps no system-lane buffer: the queues free
            // themselves once empty.
            if item.is_some() {
                self.publish_system_ready(st);
            }
            item
        })
    }

    /// True when the user lane has an entry to take (consumer side).
    #[inline]
    pub(crate) fn user_ready(&self) -> bool {
        // SAFETY: the mailbox's consumer side runs on one thread at a time
        // (the actor's runner holds its cell; see `Mailbox`).
        unsafe { self.user.ready() }
    }

    /// Takes a user-lane entry and the depth left (consumer side), making
    /// the keep-newest evictions owed first.
    #[inline]
    pub(crate) fn take_user(&self) -> Option<(Envelope<M>, usize)> {
        // SAFETY: as in `user_ready`.
        unsafe { self.user.take(|env| self.evicted(env)) }
    }

    /// The consumer evicted the oldest message of a full keep-newest
    /// mailbox (see `Verdict::Evicting`): counted as a drop and traced.
    #[cold]
    #[inline(never)]
    fn evicted(&self, env: Envelope<M>) {
        self.metrics().dropped();
        self.shared
            .tracer
            .emit(&self.shared.clock, || ActorEvent::Drop {
                actor: self.id().into(),
                policy: drop_policy(self.policy()),
                which: Dropped::Oldest,
            });
        if let Envelope::Reply(id, _) = env {
            // Its request must still get one response (the timeout), see
            // `Asks::reply_evicted`.
            self.push_signal(Signal::ReplyEvicted(id));
        }
    }

    /// The consumer found nothing: marks the actor idle, unless work raced
    /// in before the mark and the consumer won it back (false: go on).
    ///
    /// A runner that claimed the cell through the run-state word only
    /// looks here: its release, after this, is the read-modify-write that
    /// races with the producers' marks (see [`crate::run_state`]). The test
    /// kit's cells (no claim) clear the mark first, then look.
    #[inline]
    fn idle(&self, extra_work: bool) -> bool {
        if extra_work {
            return false;
        }
        if self.run.is_running() {
            return !self.has_work();
        }
        self.run.clear();
        if !self.has_work() {
            return true;
        }
        // Work arrived. Its producer's mark either came before our clear
        // (then it saw the actor told and woke no one: whoever marks it
        // back now owns the work) or after (it has woken the scheduler).
        self.run.remark()
    }

    /// The actor's run-state word (the runner's claim and release).
    #[inline]
    pub(crate) fn run_state(&self) -> &RunState {
        &self.run
    }

    /// Takes the next unit of work, in priority order: control; then,
    /// unless `blocked`, a signal, a re-delivery (reported, the stash holds
    /// it), a user-lane entry. When there is nothing and the actor is not
    /// blocked, it is marked idle, and a push that races with the mark is
    /// either seen here or wakes the scheduler (see `Mailbox::idle`).
    pub(crate) fn next(&self, blocked: bool, has_redelivery: bool) -> Next<M> {
        loop {
            if self.has_control() {
                if let Some(c) = self.pop_system(|st| st.pop_control()) {
                    return Next::Control(c);
                }
            }
            if blocked {
                return Next::Idle;
            }
            // Keep-newest evictions owed, before the signals: an evicted
            // reply's signal then comes ahead of the next message, as it
            // would had the sender evicted it.
            // SAFETY: as in `user_ready`.
            unsafe { self.user.evict(|env| self.evicted(env)) };
            if self.has_signal() {
                if let Some(s) = self.pop_system(|st| st.pop_signal()) {
                    return Next::Signal(s);
                }
            }
            if has_redelivery {
                return Next::Redeliver;
            }
            if let Some((item, depth)) = self.take_user() {
                return Next::User(item, self.after_take(depth), depth == 0);
            }
            if self.idle(false) {
                return Next::Idle;
            }
        }
    }

    /// After a take that left `depth`: releases the muted senders and wakes
    /// waiting outside senders below the low watermark. Inlined into the
    /// message path with the common case (no sender muted or waiting, the
    /// lane not near its capacity) answered here; the rest is out of line.
    #[inline(always)]
    pub(crate) fn after_take(&self, depth: usize) -> Vec<ActorId> {
        match self.suspend_work_after(depth) {
            Some(cap) => self.after_suspend_take(depth, cap),
            None => Vec::new(),
        }
    }

    /// [`Mailbox::after_take`] for the batch loop's message path: the
    /// senders released, if any, are handed to `released` (the take's
    /// record), so the common case builds, tests and drops no vector
    /// (about six instructions a message).
    #[inline(always)]
    pub(crate) fn after_take_into(&self, depth: usize, released: impl FnOnce(Vec<ActorId>)) {
        if let Some(cap) = self.suspend_work_after(depth) {
            let unmuted = self.after_suspend_take(depth, cap);
            if !unmuted.is_empty() {
                released(unmuted);
            }
        }
    }

    /// The common part of both: sets the depth gauge, and says whether a
    /// suspend mailbox (of the capacity returned) has senders to set,
    /// release or wake after a take that left `depth`.
    #[inline(always)]
    fn suspend_work_after(&self, depth: usize) -> Option<usize> {
        self.metrics.set_depth(depth, || self.metrics());
        let Policy::Suspend(cap) = self.policy() else {
            return None;
        };
        // What `after_suspend_take` would find: nothing to set, release
        // or wake (`maybe_waiting` is the consumer's own).
        if depth + 1 < cap
            && (depth >= (cap / 2).max(1)
                || (!self.maybe_waiting.load(Ordering::Relaxed)
                    && self
                        .muted
                        .get()
                        .is_none_or(|p| p.len.load(Ordering::Acquire) == 0)))
        {
            return None;
        }
        Some(cap)
    }

    /// [`Mailbox::after_take`] of a suspend mailbox of capacity `cap`.
    #[cold]
    #[inline(never)]
    fn after_suspend_take(&self, depth: usize, cap: usize) -> Vec<ActorId> {
        // A refusal at a time t saw `cap` queued, so the first take after t
        // leaves at least `cap - 1`: it sets the flag.
        if depth + 1 >= cap {
            self.maybe_waiting.store(true, Ordering::Relaxed);
        }
        let low = (cap / 2).max(1);
        if depth >= low {
            return Vec::new();
        }
        let mut unmuted = Vec::new();
        if let Some(part) = self
            .muted
            .get()
            .filter(|p| p.len.load(Ordering::Acquire) > 0)
        {
            // The take and this release are not one atomic step: producers
            // may have refilled the lane since, and a sender muted by that
            // refill must stay muted. So the depth is checked again under
            // the muted lock (no sender is listed meanwhile); if it is back
            // at the watermark, a later take releases them.
            let mut muted = part.list.lock();
            if self.user.len() < low {
                part.len.store(0, Ordering::Release);
                unmuted = std::mem::take(&mut *muted);
            }
        }
        // Outside senders waiting for room are woken like muted actors: all
        // at once, when the depth is below the low watermark, so that each
        // wake-up finds room for a batch instead of one slot (one context
        // switch per message is what made a full suspend mailbox slow). A
        // waiting sender registers before re-trying its send, so either it
        // sees the room made here, or this sees it waiting (the fence orders
        // the take before the look); while it waits above the watermark,
        // the takes that drain the mailbox come here. No sender was
        // refused since the last look unless `maybe_waiting` is set. (The
        // handshake, with the waiters' part allocated on first use, is
        // argued in `crate::waiters`.)
        if self.maybe_waiting.load(Ordering::Relaxed) {
            self.maybe_waiting.store(false, Ordering::Relaxed);
            self.waiters.notify_registered();
        }
        unmuted
    }

    /// Takes the next user-lane entry (the test kit's probes).
    pub(crate) fn pop_user(&self) -> Option<Envelope<M>> {
        self.take_user().map(|(item, _)| item)
    }

    /// True when anything is queued in either lane (consumer side).
    #[inline]
    pub(crate) fn has_work(&self) -> bool {
        self.system_ready.load(Ordering::Acquire) & (SYSTEM_CONTROL | SYSTEM_SIGNAL) != 0
            || self.user_ready()
    }

    /// Marks the actor idle if nothing is queued; false if work raced in.
    #[inline(always)]
    pub(crate) fn try_idle(&self, extra_work: bool) -> bool {
        self.idle(extra_work)
    }

    /// Closes the mailbox: later sends get [`Verdict::Closed`]. Queued user
    /// messages are drained as dead letters; the muted senders are returned
    /// for release.
    pub(crate) fn close(&self) -> Vec<ActorId> {
        self.close_counting(true)
    }

    /// Closes the mailbox of an actor given up with its dropped system
    /// (`AnyBody::abandon`): later sends get [`Verdict::Closed`], and the
    /// mail still queued goes with the system, neither counted nor traced
    /// (the system that would count it is gone; its trace ended at its
    /// last step).
    pub(crate) fn abandon(&self) {
        self.close_counting(false);
    }

    fn close_counting(&self, count_drained: bool) -> Vec<ActorId> {
        // Evictions owed at the close are traced and counted as any other,
        // except for an abandoned actor's (its system is gone).
        let evict = |env| {
            if count_drained {
                self.evicted(env)
            }
        };
        self.with_system(|st| {
            st.close();
            self.publish_system_ready(st);
        });
        // The lane closes under the lock its muting senders hold (so no
        // sender is muted after the close), or with the muted part sealed
        // when no sender was ever muted (so none can be from now on).
        let (drained, muted) = match self.muted.seal() {
            None => {
                // SAFETY: as in `user_ready`.
                let drained = unsafe { self.user.close(drop, evict) };
                (drained, Vec::new())
            }
            Some(part) => {
                let mut muted = part.list.lock();
                // SAFETY: as in `user_ready`.
                let drained = unsafe { self.user.close(drop, evict) };
                part.len.store(0, Ordering::Release);
                (drained, std::mem::take(&mut *muted))
            }
        };
        if count_drained {
            for _ in 0..drained {
                self.dead_letter(DeadLetterReason::Drained);
            }
        }
        // Outside senders waiting for room learn of the close. A waiting
        // sender registers before it tries again, so either its try sees
        // the lane closed or this sees it registered (the fence orders the
        // close before the look; see `crate::waiters`). Notifying no
        // listener would still allocate the event's list.
        self.waiters.notify_registered();
        muted
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.with_system(|st| st.is_closed())
    }

    pub(crate) fn user_len(&self) -> usize {
        self.user.len()
    }

    pub(crate) fn stats(&self) -> BufferStats {
        self.user.stats()
    }

    pub(crate) fn count_stale(&self) {
        self.waiters.count_stale();
    }

    pub(crate) fn stale_replies(&self) -> u64 {
        self.waiters.stale_replies()
    }

    /// Registers an outside sender waiting for room, until the returned
    /// guard drops, and the listener it will wait on. The sender must try
    /// again after this and before waiting: either it sees room made since,
    /// or the take that makes room sees it registered and notifies.
    pub(crate) fn wait_for_space(&self) -> (WaitingSender<'_>, event_listener::EventListener) {
        self.waiters.register()
    }

    /// The waiting senders' part (the loom model's check of a wake-up).
    #[cfg(turno_loom)]
    pub(crate) fn waiters(&self) -> &Waiters {
        &self.waiters
    }
}

impl<M: Send + 'static> MailboxOps for Mailbox<M> {
    fn path(&self) -> &ActorPath {
        Mailbox::path(self)
    }

    fn is_named(&self) -> bool {
        self.path.is_named()
    }

    fn push_control(&self, c: Control) -> bool {
        Mailbox::push_control(self, c)
    }

    fn push_signal(&self, s: Signal) -> bool {
        Mailbox::push_signal(self, s)
    }

    fn forget_muted(&self, sender: ActorId) {
        if let Some(part) = self.muted.get() {
            let mut muted = part.list.lock();
            muted.retain(|s| *s != sender);
            part.len.store(muted.len(), Ordering::Release);
        }
    }

    fn is_muting(&self, sender: ActorId) -> bool {
        self.muted
            .get()
            .is_some_and(|part| part.list.lock().contains(&sender))
    }

    fn wake(&self) {
        if self.run.unpark() {
            self.wake_slot();
        }
    }

    fn release_registered(&self) {
        self.run.release_queued();
    }

    fn unclaim(&self) {
        self.run.release_queued();
    }
}
