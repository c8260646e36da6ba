//! Mailboxes: a bounded user lane with an overflow policy, and a system lane
//! that no policy can drop.
//!
//! A mailbox belongs to one actor. Any thread may push into it through an
//! [`Addr`](crate::Addr); only the scheduler running the actor takes from it.
//! Two lanes:
//!
//! - the **user lane** is a [`Buffer`] with the actor's [`Policy`]: this is
//!   where ordinary messages and replies wait, FIFO per sender;
//! - the **system lane** carries control (start, stop, child failure) and
//!   signals (timer fires, ask timeouts, terminations). It is unbounded
//!   because its producers are bounded by construction (one entry per timer,
//!   request, child or watch), and it is always handled first.
//!
//! The mailbox also keeps the set of senders it has *muted* (suspend policy):
//! they are released when the depth falls below the low watermark.

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use crate::sync::{AtomicU64, AtomicUsize, Mutex};
use event_listener::Event;

use crate::addr::ActorId;
use crate::ask::RequestId;
use crate::buffer::{Buffer, BufferStats, Decision, Offer, Policy};
use crate::ids::ActorPath;
use crate::metrics::{MailboxMetrics, Metrics};
use crate::shared::SystemShared;
use crate::supervision::ExitReason;
use crate::system_lane::SystemQueues;
use crate::time::Instant;
use crate::timer::TimerId;
use crate::trace::{drop_policy, ActorEvent, DeadLetterReason, Dropped, Lane};

/// What happened to one sent message. Every send returns one; nothing is
/// lost without a verdict.
///
/// Replies to an actor's own requests get no verdict: they are queued
/// whatever the capacity (see [`Policy`]), and only a keep-newest mailbox
/// may evict one later (counted as a drop).
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a send's verdict says whether the message was queued, dropped or handed back"]
pub enum Verdict<M> {
    /// The message is in the mailbox. `remaining` is the room left (`None`:
    /// unbounded); zero is the early warning that the next send will meet the
    /// policy.
    Enqueued {
        /// Free slots after this message, `None` for an unbounded mailbox.
        remaining: Option<usize>,
    },
    /// The message is in the mailbox, and to make room the oldest queued
    /// one was pushed out (keep-newest): here it is. The mailbox is full.
    Evicted(M),
    /// The message was lost to the policy (keep-oldest): here it is.
    Dropped(M),
    /// The mailbox is full and rejects: here is the message back.
    Rejected(M),
    /// The mailbox is full and its policy is suspend: wait
    /// ([`Addr::send`](crate::Addr::send), [`Addr::send_blocking`](crate::Addr::send_blocking))
    /// or try again later. Actor senders never see this: they are muted instead.
    Full(M),
    /// The actor has stopped: here is the message back (it was also counted as
    /// a dead letter).
    Closed(M),
}

impl<M> Verdict<M> {
    /// True when the sent message is now queued: [`Verdict::Enqueued`], and
    /// [`Verdict::Evicted`] (a keep-newest send that pushed an older message
    /// out).
    pub fn is_enqueued(&self) -> bool {
        matches!(self, Verdict::Enqueued { .. } | Verdict::Evicted(_))
    }

    /// A payload-free summary, handy for logs, counters and tests.
    pub fn kind(&self) -> VerdictKind {
        match self {
            Verdict::Enqueued { .. } => VerdictKind::Enqueued,
            Verdict::Evicted(_) => VerdictKind::Evicted,
            Verdict::Dropped(_) => VerdictKind::Dropped,
            Verdict::Rejected(_) => VerdictKind::Rejected,
            Verdict::Full(_) => VerdictKind::Full,
            Verdict::Closed(_) => VerdictKind::Closed,
        }
    }
}

/// [`Verdict`] without its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// See [`Verdict::Enqueued`].
    Enqueued,
    /// See [`Verdict::Evicted`].
    Evicted,
    /// See [`Verdict::Dropped`].
    Dropped,
    /// See [`Verdict::Rejected`].
    Rejected,
    /// See [`Verdict::Full`].
    Full,
    /// See [`Verdict::Closed`].
    Closed,
}

/// A user-lane entry: a message, or a reply to a request this actor made.
pub(crate) enum Envelope<M> {
    Msg(M),
    Reply(RequestId, M),
}

impl<M> Envelope<M> {
    fn into_msg(self) -> M {
        match self {
            Envelope::Msg(m) | Envelope::Reply(_, m) => m,
        }
    }
}

/// Control messages: handled by the runtime, even for a muted actor.
#[derive(Debug)]
pub(crate) enum Control {
    /// Run the `started` hook (first turn, and after a restart).
    Start,
    /// Stop this actor (children first).
    Stop(ExitReason),
    /// Replace this actor's instance (children stopped first); the number is
    /// the supervisor's restarts within its period, for the trace.
    Restart(u32),
    /// A child failed; the supervisor must decide.
    ChildFailed { child: ActorId, error: String },
    /// A child has stopped for good.
    ChildTerminated(ActorId),
}

/// How a mailbox tells its scheduler that its actor has work.
pub(crate) trait Wake: Send + Sync {
    fn wake(&self);
}

/// The untyped operations the engine needs on any actor's mailbox, without
/// touching the actor's cell.
pub(crate) trait MailboxOps: Send + Sync {
    /// The actor's path (the tree keeps none of its own).
    fn path(&self) -> &ActorPath;
    fn push_control(&self, c: Control) -> bool;
    fn push_signal(&self, s: Signal) -> bool;
    fn forget_muted(&self, sender: ActorId);
    fn is_muting(&self, sender: ActorId) -> bool;
    fn set_waker(&self, waker: Arc<dyn Wake>);
}

/// Signals: system-lane entries that become a call to the actor's handler.
#[derive(Debug)]
pub(crate) enum Signal {
    Timer(TimerId),
    AskTimeout(RequestId),
    /// A queued reply to this request was evicted (keep-newest).
    ReplyEvicted(RequestId),
    Terminated {
        actor: ActorId,
        reason: ExitReason,
    },
}

struct State<M> {
    user: Buffer<Envelope<M>>,
    system: SystemQueues,
    closed: bool,
    /// The scheduler has been told about this actor and has not yet seen it
    /// idle: further pushes need not notify it again.
    notified: bool,
    /// Senders muted by this mailbox, released below the low watermark.
    muted: Vec<ActorId>,
}

/// One actor's mailbox. Shared (behind an `Arc`) by every address of the actor.
pub(crate) struct Mailbox<M> {
    pub(crate) id: ActorId,
    /// Where the actor sits in the tree; its name is the last segment.
    pub(crate) path: ActorPath,
    policy: Policy,
    state: Mutex<State<M>>,
    /// Woken when room appears in a suspend mailbox, or when it closes.
    space: Event,
    /// Outside senders currently waiting for room: takes notify only then.
    waiting_senders: AtomicUsize,
    pub(crate) shared: Arc<SystemShared>,
    metrics: MailboxMetrics,
    stale_replies: AtomicU64,
    /// The scheduler's hook; unset for probes and the test kit.
    waker: OnceLock<Arc<dyn Wake>>,
}

/// An outside sender waiting for room; unregisters on drop (also when the
/// waiting future is cancelled).
pub(crate) struct WaitingSender<'a>(&'a AtomicUsize);

impl Drop for WaitingSender<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The next unit of work of an actor, see [`Mailbox::next`].
pub(crate) enum Next<M> {
    Control(Control),
    Signal(Signal),
    /// The stash has a message to re-deliver.
    Redeliver,
    /// A user-lane entry, and the senders whose mute this take released.
    User(Envelope<M>, Vec<ActorId>),
    Idle,
}

impl<M: Send + 'static> Mailbox<M> {
    pub(crate) fn new(
        id: ActorId,
        path: ActorPath,
        policy: Policy,
        shared: Arc<SystemShared>,
    ) -> Self {
        let metrics = MailboxMetrics::new(&shared);
        Mailbox {
            id,
            path,
            policy,
            state: Mutex::new(State {
                user: Buffer::new(policy),
                system: SystemQueues::default(),
                closed: false,
                notified: false,
                muted: Vec::new(),
            }),
            space: Event::new(),
            waiting_senders: AtomicUsize::new(0),
            shared,
            metrics,
            stale_replies: AtomicU64::new(0),
            waker: OnceLock::new(),
        }
    }

    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    /// The actor's metric handles, labelled with its name and policy.
    pub(crate) fn metrics(&self) -> Metrics<'_> {
        Metrics {
            handles: &self.metrics,
            actor: &self.path,
            policy: self.policy,
        }
    }

    /// Offers a user message. `muting_sender` is the sending actor when the
    /// send comes from a turn: on a full suspend mailbox the message is queued
    /// anyway and the sender recorded as muted (`true` in the second field);
    /// the scheduler decides whether the mute stands (see `Context::send`).
    /// `retry`: the message was handed back as [`Verdict::Full`] by this
    /// mailbox before (counted as an attempt, not a new message).
    pub(crate) fn push_user(
        &self,
        msg: M,
        muting_sender: Option<ActorId>,
        retry: bool,
    ) -> (Verdict<M>, bool) {
        let mut st = self.state.lock();
        if st.closed {
            drop(st);
            self.dead_letter(DeadLetterReason::Closed);
            return (Verdict::Closed(msg), false);
        }
        let mut muted = false;
        let offer = match muting_sender {
            // An actor sender is never refused by a suspend mailbox: its
            // message goes in (the overshoot) and it is muted instead.
            Some(sender) if st.user.decision() == Decision::Suspend => {
                if !st.muted.contains(&sender) {
                    st.muted.push(sender);
                    muted = true;
                }
                st.user.force(Envelope::Msg(msg))
            }
            _ if retry => st.user.offer_again(Envelope::Msg(msg)),
            _ => st.user.offer(Envelope::Msg(msg)),
        };
        if let Offer::Evicted(Envelope::Reply(id, _)) = &offer {
            // Keep-newest evicted a reply: its request must still get one
            // response (the timeout), see `Asks::reply_evicted`.
            st.system.push_signal(Signal::ReplyEvicted(*id));
        }
        let depth = st.user.len();
        let wake = self.note_push(&mut st);
        drop(st);
        let verdict = self.account(offer, depth);
        if wake {
            self.wake();
        }
        (verdict, muted)
    }

    /// Queues a reply: replies bypass the policy's refusal (they answer a
    /// request the receiver made itself, so the receiver bounds them), but a
    /// keep-newest mailbox may later evict them like any message.
    /// `on_queued` runs under the mailbox lock with the enqueue time: the
    /// asker judges "reply before deadline" from it (see [`crate::ask`]).
    pub(crate) fn push_reply(
        &self,
        id: RequestId,
        msg: M,
        on_queued: impl FnOnce(Instant),
    ) -> bool {
        let mut st = self.state.lock();
        if st.closed {
            drop(st);
            self.dead_letter(DeadLetterReason::Closed);
            return false;
        }
        on_queued(self.shared.clock.now());
        let offer = st.user.force(Envelope::Reply(id, msg));
        let depth = st.user.len();
        let wake = self.note_push(&mut st);
        drop(st);
        let _ = self.account(offer, depth);
        if wake {
            self.wake();
        }
        true
    }

    fn wake(&self) {
        if let Some(w) = self.waker.get() {
            w.wake();
        }
    }

    fn note_push(&self, st: &mut State<M>) -> bool {
        if st.notified {
            false
        } else {
            st.notified = true;
            true
        }
    }

    /// Turns a buffer offer into a verdict, counting and tracing it.
    fn account(&self, offer: Offer<Envelope<M>>, depth: usize) -> Verdict<M> {
        let shared = &self.shared;
        let actor = self.id;
        match offer {
            Offer::Enqueued { remaining } => {
                shared.tracer.emit(&shared.clock, || ActorEvent::Enqueue {
                    actor: actor.into(),
                    lane: Lane::User,
                    depth,
                });
                Verdict::Enqueued { remaining }
            }
            Offer::Evicted(env) => {
                self.metrics().dropped();
                shared.tracer.emit(&shared.clock, || ActorEvent::Drop {
                    actor: actor.into(),
                    policy: drop_policy(self.policy),
                    which: Dropped::Oldest,
                });
                shared.tracer.emit(&shared.clock, || ActorEvent::Enqueue {
                    actor: actor.into(),
                    lane: Lane::User,
                    depth,
                });
                Verdict::Evicted(env.into_msg())
            }
            Offer::Dropped(env) => {
                self.metrics().dropped();
                shared.tracer.emit(&shared.clock, || ActorEvent::Drop {
                    actor: actor.into(),
                    policy: drop_policy(self.policy),
                    which: Dropped::Incoming,
                });
                Verdict::Dropped(env.into_msg())
            }
            Offer::Rejected(env) => {
                self.metrics().rejected();
                shared.tracer.emit(&shared.clock, || ActorEvent::Reject {
                    actor: actor.into(),
                });
                Verdict::Rejected(env.into_msg())
            }
            Offer::Full(env) => {
                shared.tracer.emit(&shared.clock, || ActorEvent::Full {
                    actor: actor.into(),
                });
                Verdict::Full(env.into_msg())
            }
        }
    }

    fn dead_letter(&self, reason: DeadLetterReason) {
        self.shared.dead_letter(self.id, reason);
    }

    /// Pushes a control message. Returns false when the mailbox is closed.
    pub(crate) fn push_control(&self, c: Control) -> bool {
        // A (re)start runs before anything else (see `SystemQueues`).
        self.push_system(|st| st.system.push_control(c))
    }

    /// Pushes a signal. Returns false when the mailbox is closed.
    pub(crate) fn push_signal(&self, s: Signal) -> bool {
        self.push_system(|st| st.system.push_signal(s))
    }

    /// Runs `push` on the system lane of an open mailbox, then traces and
    /// wakes as every push does.
    fn push_system(&self, push: impl FnOnce(&mut State<M>)) -> bool {
        let mut st = self.state.lock();
        if st.closed {
            return false;
        }
        push(&mut st);
        let depth = st.system.control_len() + st.system.signal_len();
        let wake = self.note_push(&mut st);
        drop(st);
        self.trace_system_enqueue(depth);
        if wake {
            self.wake();
        }
        true
    }

    fn trace_system_enqueue(&self, depth: usize) {
        let actor = self.id;
        self.shared
            .tracer
            .emit(&self.shared.clock, || ActorEvent::Enqueue {
                actor: actor.into(),
                lane: Lane::System,
                depth,
            });
    }

    pub(crate) fn has_control(&self) -> bool {
        self.state.lock().system.control_len() > 0
    }

    /// Takes the next unit of work under one lock, in priority order:
    /// control; then, unless `blocked`, a signal, a re-delivery (reported,
    /// the stash holds it), a user-lane entry. When there is nothing and the
    /// actor is not blocked, it is marked idle in the same critical section,
    /// so a concurrent push cannot be missed.
    pub(crate) fn next(&self, blocked: bool, has_redelivery: bool) -> Next<M> {
        let mut st = self.state.lock();
        // An idle actor keeps no system-lane buffer: the queues free
        // themselves once empty.
        if let Some(c) = st.system.pop_control() {
            return Next::Control(c);
        }
        if blocked {
            return Next::Idle;
        }
        if let Some(s) = st.system.pop_signal() {
            return Next::Signal(s);
        }
        if has_redelivery {
            return Next::Redeliver;
        }
        let Some(item) = st.user.take() else {
            st.notified = false;
            return Next::Idle;
        };
        let depth = st.user.len();
        let mut unmuted = Vec::new();
        let below_low = self.policy.low_watermark().is_some_and(|low| depth < low);
        if below_low && !st.muted.is_empty() {
            unmuted = std::mem::take(&mut st.muted);
        }
        drop(st);
        self.metrics().depth(depth);
        // Outside senders waiting for room are woken like muted actors: all
        // at once, when the depth is below the low watermark, so that each
        // wake-up finds room for a batch instead of one slot (one context
        // switch per message is what made a full suspend mailbox slow). A
        // waiting sender registers before re-trying its send, so either it
        // sees the room made here, or this sees it waiting; while it waits
        // above the watermark, the takes that drain the mailbox come here.
        if below_low && self.waiting_senders.load(Ordering::SeqCst) > 0 {
            self.space.notify(usize::MAX);
        }
        Next::User(item, unmuted)
    }

    /// Takes the next user-lane entry (the test kit's probes).
    pub(crate) fn pop_user(&self) -> Option<Envelope<M>> {
        self.state.lock().user.take()
    }

    /// True when anything is queued in either lane.
    pub(crate) fn has_work(&self) -> bool {
        let st = self.state.lock();
        !st.system.is_empty() || !st.user.is_empty()
    }

    /// Marks the actor idle if nothing is queued; false if work raced in.
    pub(crate) fn try_idle(&self, extra_work: bool) -> bool {
        let mut st = self.state.lock();
        if extra_work || !st.system.is_empty() || !st.user.is_empty() {
            return false;
        }
        st.notified = false;
        true
    }

    /// Closes the mailbox: later sends get [`Verdict::Closed`]. Queued user
    /// messages are drained as dead letters; the muted senders are returned
    /// for release.
    pub(crate) fn close(&self) -> Vec<ActorId> {
        let mut st = self.state.lock();
        st.closed = true;
        let drained = st.user.drain().count();
        st.system.clear();
        let muted = std::mem::take(&mut st.muted);
        drop(st);
        for _ in 0..drained {
            self.dead_letter(DeadLetterReason::Drained);
        }
        self.space.notify(usize::MAX);
        muted
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    pub(crate) fn user_len(&self) -> usize {
        self.state.lock().user.len()
    }

    pub(crate) fn stats(&self) -> BufferStats {
        self.state.lock().user.stats()
    }

    pub(crate) fn count_stale(&self) {
        self.stale_replies.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn stale_replies(&self) -> u64 {
        self.stale_replies.load(Ordering::Relaxed)
    }

    /// Registers an outside sender waiting for room, until the returned
    /// guard drops, and the listener it will wait on. The sender must try
    /// again after this and before waiting: either it sees room made since,
    /// or the take that makes room sees it registered and notifies.
    pub(crate) fn wait_for_space(&self) -> (WaitingSender<'_>, event_listener::EventListener) {
        self.waiting_senders.fetch_add(1, Ordering::SeqCst);
        (WaitingSender(&self.waiting_senders), self.space.listen())
    }
}

impl<M: Send + 'static> MailboxOps for Mailbox<M> {
    fn path(&self) -> &ActorPath {
        &self.path
    }

    fn push_control(&self, c: Control) -> bool {
        Mailbox::push_control(self, c)
    }

    fn push_signal(&self, s: Signal) -> bool {
        Mailbox::push_signal(self, s)
    }

    fn forget_muted(&self, sender: ActorId) {
        self.state.lock().muted.retain(|s| *s != sender);
    }

    fn is_muting(&self, sender: ActorId) -> bool {
        self.state.lock().muted.contains(&sender)
    }

    fn set_waker(&self, waker: Arc<dyn Wake>) {
        let _ = self.waker.set(waker);
    }
}
