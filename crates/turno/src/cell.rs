//! The actor cell: one actor instance with its mailbox, stash, timers and
//! pending requests, and the code that runs one turn.
//!
//! A cell knows nothing about scheduling: a scheduler picks a cell, asks it
//! to run one unit of work, and applies the [`Effects`] it returns. The
//! type-erased [`AnyCell`] is what schedulers hold.

use std::any::Any;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::actor::{Actor, Props};
use crate::addr::Addr;
use crate::ask::{Asks, ReplyFate, StaleReason};
use crate::context::{Context, WatchMap};
use crate::effects::{Effects, Spawned};
use crate::engine::slot::{AnyBody, Queued, Slot, ThinSlot, TypedBody};
use crate::engine::{End, Engine};
use crate::envelope::Envelope;
use crate::ids::ActorId;
use crate::ids::ActorPath;
use crate::ids::RequestId;
use crate::ids::TimerId;
use crate::mailbox::{Mailbox, MailboxOps, Next};
use crate::path_cell::PathCell;
use crate::shared::SystemShared;
use crate::stash::Stash;
use crate::sync::UnsafeCell;
use crate::system_lane::{Control, Signal};
use crate::trace::{ActorEvent, TurnKind};

/// The result of [`AnyCell::step`].
pub(crate) enum Step {
    /// A control message, for the engine.
    Control(Control),
    /// A unit of work was consumed; `emptied`: it was the user lane's last
    /// message (as far as the take saw), so the batch may go idle at once
    /// instead of asking the mailbox for a next unit that is most likely
    /// not there.
    Ran { outcome: TurnOutcome, emptied: bool },
    /// Nothing queued: the mailbox was marked idle, the next push wakes the
    /// actor.
    Idle,
    /// Work is queued but the actor may not handle it now (muted, failed,
    /// stopping, busy): the caller must park it.
    Blocked,
}

/// What one consumed unit of work came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TurnOutcome {
    /// A handler ran (whether it panicked is in the turn's effects:
    /// [`Effects::failed`] is the one record of a failed turn).
    Handled,
    /// A message was consumed without a handler call (stale reply, cancelled
    /// timer).
    Discarded,
}

/// A cell as a scheduler sees it.
pub(crate) trait AnyCell: Send {
    fn push_signal(&self, s: Signal) -> bool;
    fn has_control(&self) -> bool;
    /// Anything queued: control, signals, re-deliveries or mail.
    fn has_work(&self) -> bool;
    /// Marks the actor idle unless work is waiting.
    fn try_idle(&self) -> bool;
    /// Runs the `started` hook, building an instance first if needed.
    fn start(&mut self, fx: &mut Effects);
    /// Takes the next unit of work from the mailbox: a control
    /// message is returned to the engine; otherwise, unless `blocked`, a
    /// signal, re-delivery or message is handled.
    fn step(&mut self, blocked: bool, fx: &mut Effects) -> Step;
    /// [`AnyCell::step`] for a runner that claimed the cell (the batch
    /// loop, [`Engine::run_cell`], into which it is inlined): when the
    /// actor may run and its mailbox's rare-work word is clear
    /// (`Mailbox::rare_pending`), the user lane's next entry is taken and
    /// handled here, and an empty lane is idle (the release's compare-exchange
    /// is the look that catches a push since); anything else (control,
    /// signals, evictions owed, re-deliveries, a blocked actor) goes to the
    /// general take, out of line.
    fn step_hot(&mut self, blocked: bool, fx: &mut Effects) -> Step;
    /// Replaces the instance: runs `stopped` on a healthy one, keeps mailbox
    /// and stash, cancels timers and pending requests. The caller queues
    /// [`Control::Start`].
    fn reset(&mut self, fx: &mut Effects);
    /// Drops a failed instance.
    fn fail(&mut self);
    /// Stops for good: `stopped` hook if healthy, mailbox closed, everything
    /// held becomes dead letters. Returns the senders this mailbox had muted.
    fn stop(&mut self, fx: &mut Effects) -> Vec<ActorId>;
    fn timer_live(&self, id: TimerId) -> bool;
    fn ask_pending(&self, id: RequestId) -> bool;
}

/// An actor's slot body: its mailbox and its cell, in the slot's one
/// allocation (see `engine::slot`). The cell is `None` before the slot is
/// built around it (it holds an address of the slot) and once the actor
/// has stopped. `repr(C)`, the mailbox first: see [`TypedBody`].
#[repr(C)]
pub(crate) struct Body<A: Actor, F = Factory<A>> {
    pub(crate) mailbox: Mailbox<A::Msg>,
    /// Reached only by the holder of the mailbox's run-state word (see
    /// [`crate::run_state`]: the word is the cell's lock).
    cell: UnsafeCell<Option<Cell<A, F>>>,
}

// SAFETY: `repr(C)` with the `Mailbox<A::Msg>` first.
#[allow(unsafe_code)]
unsafe impl<A: Actor, F: FnMut() -> A + Send + 'static> TypedBody<A::Msg> for Body<A, F> {}

// SAFETY: the cell is `Send` (`AnyCell: Send`) and is only reached by one
// thread at a time: the holder of the run-state word (a claimed runner,
// whose claim's acquire and release's release order one holder's accesses
// before the next's; or the builder, or the owner of a slot not yet
// registered, before any runner can claim it; see `Body::cell_mut`).
#[allow(unsafe_code)]
unsafe impl<A: Actor, F: FnMut() -> A + Send + 'static> Sync for Body<A, F> {}

impl<A: Actor, F: FnMut() -> A + Send + 'static> Body<A, F> {
    /// Runs `f` on the cell.
    ///
    /// # Safety
    /// The caller holds the run-state word (a claimed runner, the owner of
    /// a slot not yet registered, the builder): no other access to the
    /// cell overlaps this one.
    #[allow(unsafe_code)]
    #[inline]
    unsafe fn cell_mut<R>(&self, f: impl FnOnce(&mut Option<Cell<A, F>>) -> R) -> R {
        // SAFETY: forwarded from the caller.
        self.cell.with_mut(|c| f(unsafe { &mut *c }))
    }
}

impl<A: Actor, F: FnMut() -> A + Send + 'static> AnyBody for Body<A, F> {
    fn ops(&self) -> &dyn MailboxOps {
        &self.mailbox
    }

    #[allow(unsafe_code)]
    unsafe fn run_batch(
        &self,
        engine: &Engine,
        slot: Queued,
        claimed: bool,
        batch: usize,
        fx: &mut Effects,
    ) -> (usize, Option<ThinSlot>) {
        // SAFETY: the caller's contract: `slot` is the entry of this body's
        // slot, a `Slot<Self>`, taken to run it now (`Queued::borrow_as`).
        let slot = unsafe { slot.borrow_as::<Self>() };
        let slot: &Arc<Slot> = &slot;
        debug_assert!(
            std::ptr::addr_eq(&slot.body, self),
            "run_batch called with another slot's entry"
        );
        let run = self.mailbox.run_state();
        // A claimed hand-off's push claimed it already (`crate::hand_off`).
        if !claimed && !run.claim() {
            return (0, None);
        }
        let mut ran = 0;
        loop {
            // SAFETY: this runner holds the claim (until a release below).
            let (n, end, last) = unsafe {
                self.cell_mut(|cell| {
                    let Some(c) = cell.as_mut() else {
                        return (0, End::Finalized, None);
                    };
                    let (n, end) = engine.run_cell(slot, c, batch - ran.min(batch), fx);
                    if end != End::Finalized {
                        return (n, end, None);
                    }
                    // The cell holds an address of its own slot, maybe the
                    // last: a reference taken first keeps the slot (and
                    // this body) alive until the caller drops it, after
                    // this call has returned.
                    let last = ThinSlot::new(slot.clone());
                    *cell = None;
                    (n, end, Some(last))
                })
            };
            ran += n;
            let released = match end {
                // Keep the claim: nothing queues or runs a finalized actor
                // again.
                End::Finalized => return (ran, last),
                End::Requeue => false,
                End::Idle => engine.release_idle(run),
                End::Parked => run.release_parked(),
            };
            if released {
                return (ran, None);
            }
            // Marked since the look (a push, an unpark): the mark is
            // cleared and the cell still held. Go on while the batch
            // lasts; else queue the actor again.
            if end == End::Requeue || ran >= batch {
                run.release_queued();
                engine.requeue(slot);
                return (ran, None);
            }
        }
    }

    fn with_cell(&self, f: &mut dyn FnMut(&mut dyn AnyCell) -> bool) {
        debug_assert!(
            self.mailbox.run_state().is_running(),
            "with_cell on a slot registered"
        );
        // SAFETY: the slot was never registered (this method's contract),
        // so its run-state word is held as it was built, by the owner of
        // the slot, who calls this; no run queue holds it.
        #[allow(unsafe_code)]
        unsafe {
            self.cell_mut(|cell| {
                if cell.as_mut().is_none_or(|c| f(c)) {
                    *cell = None;
                }
            });
        }
    }

    fn abandon(&self) {
        self.mailbox.run_state().hold_for_good();
        self.mailbox.abandon();
        // SAFETY: the word is held now, and for good, and no turn runs
        // (this method's contract: every turn of the system runs on the
        // caller's thread, which is here), so nothing else reaches the cell.
        #[allow(unsafe_code)]
        unsafe {
            self.cell_mut(|cell| *cell = None);
        }
    }
}

/// A slot body of a mailbox alone: the test kit's actor under test (whose
/// cell the kit holds) and its probes, which no scheduler runs. `repr(C)`,
/// the mailbox first: see [`TypedBody`].
#[repr(C)]
pub(crate) struct Bare<M> {
    mailbox: Mailbox<M>,
}

// SAFETY: `repr(C)` with the `Mailbox<M>` first.
#[allow(unsafe_code)]
unsafe impl<M: Send + 'static> TypedBody<M> for Bare<M> {}

impl<M: Send + 'static> Bare<M> {
    /// An address of a bare mailbox.
    pub(crate) fn addr(id: ActorId, mailbox: Mailbox<M>) -> Addr<M> {
        let slot = Slot::new_in_arc(id, crate::ids::ROOT, Bare { mailbox });
        debug_assert_eq!(slot.body.mailbox.id(), id, "built for a bare slot");
        Addr::from_slot(slot)
    }
}

/// A bare slot is never registered, so nothing runs it: it has no cell.
/// (Its pushes wake no one: its system's shared state has no scheduler.)
impl<M: Send + 'static> AnyBody for Bare<M> {
    fn ops(&self) -> &dyn MailboxOps {
        &self.mailbox
    }

    #[allow(unsafe_code)]
    unsafe fn run_batch(
        &self,
        _: &Engine,
        _: Queued,
        _: bool,
        _: usize,
        _: &mut Effects,
    ) -> (usize, Option<ThinSlot>) {
        (0, None)
    }

    fn with_cell(&self, _: &mut dyn FnMut(&mut dyn AnyCell) -> bool) {}

    fn abandon(&self) {}
}

/// A boxed factory: the test kit's cell's (`TestKit<A>` names one type per
/// actor type). A spawned actor's cell and body hold the spawn's closure
/// itself (their `F`), so a capture-less factory takes no byte of the slot
/// (a box of one is two words); the batch loop is compiled per actor type
/// and factory type.
pub(crate) type Factory<A> = Box<dyn FnMut() -> A + Send>;

pub(crate) struct Cell<A: Actor, F = Factory<A>> {
    actor: Option<A>,
    /// What builds the instance, first and at every restart: the spawn's
    /// closure itself, not boxed (a capture-less one takes no byte).
    factory: F,
    addr: Addr<A::Msg>,
    rare: LazyRare<A::Msg>,
    /// The stash's bound, for the rare parts' first use: four bytes, so
    /// that it, the turn count and the instance's tag share one word (a
    /// bound above `u32::MAX` builds the parts at once, see
    /// [`LazyRare::new`]).
    stash_capacity: u32,
    /// Message turns run, plus the actor's sampling phase (its id modulo
    /// `TURN_SAMPLE`), for sampling the turn-time metric (see
    /// [`crate::metrics`]), wrapping: two bytes, and `TURN_SAMPLE` divides
    /// 2^16, so the wrap keeps one turn in `TURN_SAMPLE` sampled.
    turns: u16,
}

// The turn count wraps at 2^16 without skipping a sampled turn.
const _: () = assert!((1 << 16) % crate::metrics::TURN_SAMPLE == 0);

/// The parts of a cell most actors never use: the stash, timers, pending
/// requests and watches (about 250 bytes of empty tables and queues).
pub(crate) struct Rare<M> {
    pub(crate) stash: Stash<M>,
    pub(crate) timers: HashMap<TimerId, M>,
    pub(crate) asks: Asks<M>,
    pub(crate) watching: HashMap<ActorId, WatchMap<M>>,
}

/// [`Rare`], allocated on the first stash, timer, request or watch, so an
/// idle actor pays one pointer for them (the stash's capacity is kept in
/// the cell beside, `Cell::stash_capacity`, and handed to [`LazyRare::get`]).
pub(crate) struct LazyRare<M> {
    rare: Option<Box<Rare<M>>>,
}

impl<M> LazyRare<M> {
    /// The parts, unallocated, and the stash capacity the cell keeps for
    /// their first use: a capacity that does not fit the cell's four bytes
    /// builds them now (the stash keeps it whole; a second allocation for
    /// that spawn only), so the bound is never cut.
    fn new(stash_capacity: usize) -> (Self, u32) {
        match u32::try_from(stash_capacity) {
            Ok(kept) => (LazyRare { rare: None }, kept),
            Err(_) => (
                LazyRare {
                    rare: Some(Rare::boxed(stash_capacity)),
                },
                u32::MAX,
            ),
        }
    }

    /// The parts, allocated now (with a stash of `stash_capacity`, the
    /// cell's) if this is their first use.
    pub(crate) fn get(&mut self, stash_capacity: u32) -> &mut Rare<M> {
        self.rare
            .get_or_insert_with(|| Rare::boxed(stash_capacity as usize))
    }

    /// The parts, if ever used.
    pub(crate) fn peek(&self) -> Option<&Rare<M>> {
        self.rare.as_deref()
    }

    /// The parts, if ever used.
    pub(crate) fn peek_mut(&mut self) -> Option<&mut Rare<M>> {
        self.rare.as_deref_mut()
    }

    fn has_redelivery(&self) -> bool {
        self.peek().is_some_and(|r| r.stash.has_redelivery())
    }
}

impl<M> Rare<M> {
    fn boxed(stash_capacity: usize) -> Box<Self> {
        Box::new(Rare {
            stash: Stash::new(stash_capacity),
            timers: HashMap::new(),
            asks: Asks::default(),
            watching: HashMap::new(),
        })
    }
}

impl<A: Actor, F: FnMut() -> A + Send + 'static> Cell<A, F> {
    /// Builds a cell (no instance yet: the first `Start` builds it) and its
    /// address, under `parent`. `named` is the path `props.check` gave
    /// (whether a sibling has it is the caller's business); an unnamed
    /// actor is `$<id>`.
    pub(crate) fn new(
        shared: Arc<SystemShared>,
        props: &Props,
        factory: F,
        parent: &ActorPath,
        named: Option<ActorPath>,
    ) -> (Self, Addr<A::Msg>) {
        let id = shared.next_actor();
        let path = PathCell::new(parent, named);
        let at = Slot::<Bare<A::Msg>>::BODY_AT;
        let addr = Bare::addr(id, Mailbox::new(at, path, props.policy, shared, false));
        (Self::around(props, factory, addr.clone()), addr)
    }

    /// A cell with no instance yet, of the actor at `addr`.
    fn around(props: &Props, factory: F, addr: Addr<A::Msg>) -> Self {
        let id = addr.id();
        let (rare, stash_capacity) = LazyRare::new(props.stash_capacity);
        Cell {
            actor: None,
            factory,
            addr,
            rare,
            stash_capacity,
            turns: (id.as_u64() % u64::from(crate::metrics::TURN_SAMPLE)) as u16,
        }
    }

    /// Builds a cell ready for a scheduler to register (see [`Cell::new`]),
    /// the child of the actor `parent_id` ([`ROOT`](crate::ids::ROOT):
    /// a top-level actor), whose path is `parent`.
    pub(crate) fn create(
        shared: Arc<SystemShared>,
        props: Props,
        factory: F,
        (parent_id, parent): (ActorId, &ActorPath),
        named: Option<ActorPath>,
    ) -> (Spawned, Addr<A::Msg>) {
        let id = shared.next_actor();
        let path = PathCell::new(parent, named.clone());
        // One allocation: the slot's header, the mailbox and the cell (the
        // header learns the slot's address before the slot exists).
        let at = Slot::<Body<A, F>>::BODY_AT;
        let slot: Arc<Slot<Body<A, F>>> = Slot::new_in_arc(
            id,
            parent_id,
            Body {
                mailbox: Mailbox::new(at, path, props.policy, shared, true),
                cell: UnsafeCell::new(None),
            },
        );
        debug_assert_eq!(slot.body.mailbox.id(), id, "built for this slot");
        let addr = Addr::from_slot(slot.clone());
        let cell = Self::around(&props, factory, addr.clone());
        // SAFETY: the slot is being built, its run-state word held by the
        // builder: it is not registered, so no runner claims it, and the
        // addresses made so far reach only its mailbox.
        #[allow(unsafe_code)]
        unsafe {
            slot.body.cell_mut(|c| *c = Some(cell));
        }
        let spawned = Spawned {
            id,
            named,
            policy: props.policy,
            slot: Some(slot),
            supervision: props.supervision,
        };
        (spawned, addr)
    }

    /// Builds the instance if there is none (the test kit does this up front).
    pub(crate) fn ensure_instance(&mut self) {
        if self.actor.is_none() {
            self.actor = Some((self.factory)());
        }
    }

    pub(crate) fn instance(&self) -> Option<&A> {
        self.actor.as_ref()
    }

    /// Runs the handler on `msg` directly, bypassing the mailbox.
    pub(crate) fn handle_now(&mut self, msg: A::Msg, fx: &mut Effects) -> TurnOutcome {
        self.handle(TurnKind::Message, msg, fx)
    }

    /// The actor's mailbox.
    #[inline]
    fn mailbox(&self) -> &Mailbox<A::Msg> {
        self.addr.mailbox()
    }

    fn shared(&self) -> &SystemShared {
        &self.mailbox().shared
    }

    /// Runs `f` on the instance with a context, catching a panic.
    fn run(
        &mut self,
        what: TurnKind,
        fx: &mut Effects,
        f: impl FnOnce(&mut A, &mut Context<'_, A>),
    ) {
        let actor_id = self.addr.id();
        let Some(actor) = self.actor.as_mut() else {
            return;
        };
        let mailbox = self.addr.mailbox();
        let shared = &mailbox.shared;
        #[cfg(feature = "tracing")]
        let _span = tracing::debug_span!(
            target: "turno",
            "turn",
            actor = %mailbox.path().name(),
            id = actor_id.as_u64(),
            kind = ?what,
            path = %mailbox.path(),
        )
        .entered();
        shared.tracer.emit(&shared.clock, || ActorEvent::TurnStart {
            actor: actor_id.into(),
            what,
        });
        let metrics = mailbox.metrics();
        // Turn time is sampled (see `crate::metrics`): the clock is read on
        // one message turn in `TURN_SAMPLE`, never on a hook.
        let sampled = match what {
            TurnKind::Started | TurnKind::Stopped => false,
            _ => {
                let n = self.turns;
                self.turns = n.wrapping_add(1);
                u32::from(n) % crate::metrics::TURN_SAMPLE == 0
            }
        };
        let started = (sampled && metrics.enabled()).then(std::time::Instant::now);
        let mut ctx = Context {
            addr: &self.addr,
            rare: &mut self.rare,
            stash_capacity: self.stash_capacity,
            fx,
        };
        let quiet = crate::panics::Quiet::enter(!shared.print_panics);
        let result = catch_unwind(AssertUnwindSafe(|| f(actor, &mut ctx))).map_err(panic_message);
        drop(quiet);
        if let Some(t0) = started {
            metrics.turn(t0.elapsed().as_secs_f64());
        }
        let ok = result.is_ok();
        shared.tracer.emit(&shared.clock, || ActorEvent::TurnEnd {
            actor: actor_id.into(),
            ok,
        });
        if let Err(e) = result {
            #[cfg(feature = "tracing")]
            tracing::error!(target: "turno", error = %e, "turn panicked: actor failed");
            fx.record_failure(e);
        }
    }

    fn handle(&mut self, what: TurnKind, msg: A::Msg, fx: &mut Effects) -> TurnOutcome {
        self.run(what, fx, |a, ctx| a.handle(ctx, msg));
        TurnOutcome::Handled
    }

    fn stale(&mut self, request: RequestId, reason: StaleReason) -> TurnOutcome {
        let mailbox = self.mailbox();
        mailbox.count_stale();
        mailbox.metrics().stale();
        let actor = self.addr.id();
        let shared = self.shared();
        shared
            .tracer
            .emit(&shared.clock, || ActorEvent::StaleReply {
                actor: actor.into(),
                request: request.into(),
                reason,
            });
        TurnOutcome::Discarded
    }

    /// The general take's turn: what `next` (the mailbox's take in
    /// priority order) found, handled. `blocked` as the take saw it.
    #[inline(always)]
    fn step_next(&mut self, next: Next<A::Msg>, blocked: bool, fx: &mut Effects) -> Step {
        let mut emptied = false;
        let outcome = match next {
            Next::Control(c) => return Step::Control(c),
            Next::Idle if blocked => return Step::Blocked,
            Next::Idle => return Step::Idle,
            Next::Signal(Signal::Timer(id)) => {
                match self.rare.peek_mut().and_then(|r| r.timers.remove(&id)) {
                    Some(msg) => {
                        let actor = self.addr.id();
                        let shared = self.shared();
                        shared.tracer.emit(&shared.clock, || ActorEvent::TimerFire {
                            actor: actor.into(),
                            timer: id.into(),
                        });
                        self.handle(TurnKind::Timer, msg, fx)
                    }
                    None => TurnOutcome::Discarded,
                }
            }
            // The timeout signal is served ahead of the user lane, but a
            // reply enqueued before the deadline still wins: `deadline_passed`
            // judges by the reply's enqueue time.
            Next::Signal(Signal::AskTimeout(id)) => match self
                .rare
                .peek_mut()
                .and_then(|r| r.asks.deadline_passed(id))
            {
                Some(msg) => self.handle(TurnKind::AskTimeout, msg, fx),
                None => TurnOutcome::Discarded,
            },
            Next::Signal(Signal::ReplyEvicted(id)) => {
                match self.rare.peek_mut().and_then(|r| r.asks.reply_evicted(id)) {
                    Some(msg) => self.handle(TurnKind::AskTimeout, msg, fx),
                    None => TurnOutcome::Discarded,
                }
            }
            Next::Signal(Signal::Terminated { actor, reason }) => {
                match self.rare.peek_mut().and_then(|r| r.watching.remove(&actor)) {
                    Some(map) => {
                        let msg = map(actor, reason);
                        self.handle(TurnKind::Terminated, msg, fx)
                    }
                    None => TurnOutcome::Discarded,
                }
            }
            Next::Redeliver => match self.rare.peek_mut().and_then(|r| r.stash.next()) {
                Some(msg) => self.handle(TurnKind::Unstashed, msg, fx),
                None => TurnOutcome::Discarded,
            },
            Next::User(env, unmuted, last) => {
                emptied = last;
                // Almost always empty: skip the call (and the drop) then.
                if !unmuted.is_empty() {
                    fx.edit().unmuted.extend(unmuted);
                }
                match env {
                    Envelope::Msg(msg) => self.handle(TurnKind::Message, msg, fx),
                    Envelope::Reply(id, msg) => self.reply(id, msg, fx),
                }
            }
        };
        Step::Ran { outcome, emptied }
    }

    /// [`AnyCell::step_hot`]'s out-of-line part: the general take, for a
    /// claimed runner, with the rare-work word's protocol around it. The
    /// word is cleared first (unless the actor is blocked: signals and
    /// re-deliveries are not looked at then), so a producer marking it
    /// since is seen by the look that follows or leaves it set; a take of
    /// rare work sets it back (there may be more), so the next take comes
    /// here again; a take that found none (a message, or idle) leaves it
    /// clear, and the next takes are the message path's.
    #[cold]
    #[inline(never)]
    fn step_rare(&mut self, blocked: bool, fx: &mut Effects) -> Step {
        let blocked = blocked || self.actor.is_none();
        let mailbox = self.addr.mailbox();
        if !blocked {
            mailbox.clear_rare();
        }
        let next = mailbox.next(blocked, self.rare.has_redelivery());
        if !matches!(next, Next::User(..) | Next::Idle) {
            mailbox.mark_rare();
        }
        self.step_next(next, blocked, fx)
    }

    /// A reply's turn: fresh, stale, or late (the request timed out: the
    /// timeout's message is handled instead). Out of line: the message
    /// path takes far more messages than replies.
    #[cold]
    #[inline(never)]
    fn reply(&mut self, id: RequestId, msg: A::Msg, fx: &mut Effects) -> TurnOutcome {
        match self
            .rare
            .peek_mut()
            .map_or(ReplyFate::Stale(StaleReason::Unknown), |r| {
                r.asks.take_reply(id)
            }) {
            ReplyFate::Fresh => self.handle(TurnKind::Reply, msg, fx),
            ReplyFate::Stale(reason) => self.stale(id, reason),
            ReplyFate::Late(timed_out) => {
                self.stale(id, StaleReason::TimedOut);
                self.handle(TurnKind::AskTimeout, timed_out, fx)
            }
        }
    }

    fn cancel_everything(&mut self, why: StaleReason) {
        if let Some(r) = self.rare.peek_mut() {
            r.timers.clear();
            r.asks.settle_all(why);
        }
    }
}

/// The text of a panic payload.
fn panic_message(payload: Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

impl<A: Actor, F: FnMut() -> A + Send + 'static> AnyCell for Cell<A, F> {
    fn push_signal(&self, s: Signal) -> bool {
        self.mailbox().push_signal(s)
    }

    fn has_control(&self) -> bool {
        self.mailbox().has_control()
    }

    fn has_work(&self) -> bool {
        self.rare.has_redelivery() || self.mailbox().has_work()
    }

    // Inlined: the batch loop calls it after every turn that took the
    // lane's last message (a call of its own cost about a fifth of it).
    #[inline(always)]
    fn try_idle(&self) -> bool {
        let mailbox = self.mailbox();
        if mailbox.run_state().is_running() {
            // A claimed runner's look before its release: the rare-work
            // word stands for control, signals, evictions owed and
            // re-deliveries (a re-delivery marks it: `Context::unstash_all`,
            // `reset`), so the look is the word and the user lane.
            return !mailbox.rare_pending() && !mailbox.user_ready();
        }
        mailbox.try_idle(self.rare.has_redelivery())
    }

    fn start(&mut self, fx: &mut Effects) {
        if self.actor.is_none() {
            let factory = &mut self.factory;
            let quiet = crate::panics::Quiet::enter(!self.addr.mailbox().shared.print_panics);
            let built = catch_unwind(AssertUnwindSafe(factory));
            drop(quiet);
            match built {
                Ok(a) => self.actor = Some(a),
                Err(p) => {
                    let e = format!("factory panicked: {}", panic_message(p));
                    #[cfg(feature = "tracing")]
                    tracing::error!(
                        target: "turno",
                        actor = %self.mailbox().path().name(),
                        path = %self.mailbox().path(),
                        id = self.addr.id().as_u64(),
                        error = %e,
                        "factory panicked: actor failed"
                    );
                    fx.record_failure(e);
                    return;
                }
            }
        }
        self.run(TurnKind::Started, fx, |a, ctx| a.started(ctx))
    }

    fn step(&mut self, blocked: bool, fx: &mut Effects) -> Step {
        let blocked = blocked || self.actor.is_none();
        let next = self.mailbox().next(blocked, self.rare.has_redelivery());
        self.step_next(next, blocked, fx)
    }

    #[inline(always)]
    fn step_hot(&mut self, blocked: bool, fx: &mut Effects) -> Step {
        let mailbox = self.addr.mailbox();
        debug_assert!(mailbox.run_state().is_running(), "step_hot unclaimed");
        if blocked || mailbox.rare_pending() || self.actor.is_none() {
            return self.step_rare(blocked, fx);
        }
        let Some((env, depth)) = mailbox.take_user() else {
            // Nothing written: idle. A producer still writing, or one
            // that pushed since, marked the run-state word after its
            // element was visible, so the release fails and the runner
            // looks again (see `crate::run_state`).
            return Step::Idle;
        };
        // Almost always nothing released: no call, no vector then.
        mailbox.after_take_into(depth, |unmuted| fx.edit().unmuted.extend(unmuted));
        let outcome = match env {
            Envelope::Msg(msg) => self.handle(TurnKind::Message, msg, fx),
            Envelope::Reply(id, msg) => self.reply(id, msg, fx),
        };
        Step::Ran {
            outcome,
            emptied: depth == 0,
        }
    }

    fn reset(&mut self, fx: &mut Effects) {
        if self.actor.is_some() {
            // A healthy instance replaced because a sibling failed.
            self.run(TurnKind::Stopped, fx, |a, ctx| a.stopped(ctx));
            fx.failed = None;
            self.actor = None;
        }
        // Stashed messages were accepted by the mailbox: the new instance
        // gets them first, in order.
        if let Some(r) = self.rare.peek_mut() {
            if r.stash.unstash_all() > 0 {
                self.addr.mailbox().mark_rare();
            }
        }
        self.cancel_everything(StaleReason::Restarted);
    }

    fn fail(&mut self) {
        self.actor = None;
    }

    fn stop(&mut self, fx: &mut Effects) -> Vec<ActorId> {
        if self.actor.is_some() {
            self.run(TurnKind::Stopped, fx, |a, ctx| a.stopped(ctx));
            fx.failed = None;
        }
        self.actor = None;
        self.cancel_everything(StaleReason::Unknown);
        if let Some(r) = self.rare.peek_mut() {
            r.watching.clear();
        }
        let id = self.addr.id();
        let drained = self.rare.peek_mut().map_or(0, |r| r.stash.drain_all());
        for _ in 0..drained {
            self.shared()
                .dead_letter(id, crate::trace::DeadLetterReason::Drained);
        }
        self.mailbox().close()
    }

    fn timer_live(&self, id: TimerId) -> bool {
        self.rare.peek().is_some_and(|r| r.timers.contains_key(&id))
    }

    fn ask_pending(&self, id: RequestId) -> bool {
        self.rare.peek().is_some_and(|r| r.asks.is_pending(id))
    }
}
