//! The context of one turn: everything a handler may do besides changing its
//! own state.
//!
//! Sends take effect at once (the verdict must be real). Every other effect
//! (spawn, stop, timers, watches, muting) is recorded in the turn's effects
//! and applied by the scheduler when the turn ends, which is also what lets
//! the [`TestKit`](crate::testkit::TestKit) run a single turn and show its
//! effects without any scheduler.

use std::sync::Arc;
use std::time::Duration;

use crate::actor::{Actor, Props, SpawnError};
use crate::addr::Addr;
use crate::ask::{self, Pending, ReplyTo, RequestId, Response, StaleReason};
use crate::cell::{Cell, LazyRare};
use crate::effects::Effects;
use crate::envelope::Envelope;
use crate::ids::ActorId;
use crate::ids::ActorPath;
use crate::ids::TimerId;
use crate::shared::SystemShared;
use crate::stash::StashFull;
use crate::supervision::ExitReason;
use crate::time::Instant;
use crate::timer::TimerKey;
use crate::trace::ActorEvent;
use crate::verdict::{Verdict, VerdictKind};

/// Maps a watched actor's termination into the watcher's message.
pub(crate) type WatchMap<M> = Box<dyn Fn(ActorId, ExitReason) -> M + Send>;

/// The context of the current turn: everything a handler may do besides
/// changing its own state.
///
/// Sends take effect at once (the verdict must be real). Every other effect
/// (spawn, stop, timers, watches, muting) is recorded and applied by the
/// scheduler when the turn ends, which is also what lets the
/// [`TestKit`](crate::testkit::TestKit) run a single turn and show its
/// effects without any scheduler.
pub struct Context<'a, A: Actor> {
    pub(crate) addr: &'a Addr<A::Msg>,
    /// Stash, timers, pending requests and watches: allocated on first use.
    pub(crate) rare: &'a mut LazyRare<A::Msg>,
    /// The stash's bound, for the rare parts' first use (the cell's).
    pub(crate) stash_capacity: u32,
    pub(crate) fx: &'a mut Effects,
}

impl<'a, A: Actor> Context<'a, A> {
    fn shared(&self) -> &Arc<SystemShared> {
        &self.addr.mailbox().shared
    }

    fn trace(&self, kind: impl FnOnce() -> ActorEvent) {
        let shared = self.shared();
        shared.tracer.emit(&shared.clock, kind);
    }

    /// This actor's id.
    pub fn id(&self) -> ActorId {
        self.addr.id()
    }

    /// This actor's path from the root, e.g. `/orders/worker` (see
    /// [`ActorPath`]).
    pub fn path(&self) -> &ActorPath {
        self.addr.mailbox().path()
    }

    /// This actor's own address.
    pub fn addr(&self) -> Addr<A::Msg> {
        self.addr.clone()
    }

    /// The system's time (virtual on the deterministic scheduler).
    pub fn now(&self) -> Instant {
        self.shared().clock.now()
    }

    /// Sends a message and returns the verdict at once.
    ///
    /// **Backpressure.** When the receiver's policy is
    /// [`Policy::Suspend`](crate::Policy::Suspend) and its mailbox is full,
    /// the message is queued anyway and this actor is *muted*: the scheduler
    /// runs no further turns of it (other than control: stop, supervision)
    /// until the receiver drains below its low watermark. Pressure thus
    /// propagates back along a chain of actors.
    ///
    /// **The cycle rule.** A sender is not muted when the receiver already
    /// waits, directly or through others, for the sender (A and B each full,
    /// each sending to the other; an actor sending to itself): muting would
    /// close a cycle of waits and stall it forever. Such a cycle is its own
    /// bottleneck and keeps circulating its messages.
    ///
    /// **Overshoot.** A receiver's depth exceeds its capacity by at most the
    /// sends of one turn per sender muted on it, plus the sends of senders
    /// exempted by the cycle rule.
    //
    // Inlined into the sending turn with the mailbox's message path
    // (`Mailbox::push_message`), every other outcome out of line
    // (`Context::send_general`): as two calls the verdict went back
    // through memory twice and each frame saved and restored its
    // registers, about 30 of a pingpong message's 444 instructions, and
    // a verdict merged from both paths went through the stack.
    #[inline(always)]
    pub fn send<N: Send + 'static>(&mut self, to: &Addr<N>, msg: N) -> Verdict<N> {
        match to.mailbox().push_message(msg) {
            Ok(remaining) => {
                if let Some(sent) = &mut self.fx.sent {
                    sent.push((to.id(), VerdictKind::Enqueued));
                }
                Verdict::Enqueued { remaining }
            }
            Err(env) => self.send_general(to, env),
        }
    }

    /// [`Context::send`] past the message path: the mailbox's general
    /// push, which may mute this actor (a full suspend mailbox).
    #[inline(never)]
    fn send_general<N: Send + 'static>(&mut self, to: &Addr<N>, env: Envelope<N>) -> Verdict<N> {
        let me = self.addr.id();
        let (verdict, muted) = to.mailbox().push_user_slow(env, Some(me), false);
        if muted {
            self.fx.edit().muted_by.push(to.id());
        }
        if let Some(sent) = &mut self.fx.sent {
            sent.push((to.id(), verdict.kind()));
        }
        verdict
    }

    /// Sends a message, fire-and-forget: [`Context::send`] without a
    /// verdict to look at.
    ///
    /// For sends whose outcome this actor would not act on anyway. Nothing is
    /// lost silently for it: the verdict is still counted in the receiver's
    /// [`stats`](crate::Addr::stats) (dropped, rejected), traced, reported as
    /// metrics, a message to a stopped actor is a dead letter, and
    /// backpressure (muting) applies exactly as for [`Context::send`].
    /// Use `send` where the verdict matters (a `Rejected` message to retry,
    /// a `Closed` peer to forget).
    pub fn tell<N: Send + 'static>(&mut self, to: &Addr<N>, msg: N) {
        let _ = self.send(to, msg);
    }

    /// Spawns a child supervised by this actor. The child's first turn is its
    /// `started` hook. `factory` builds the first instance and every restart.
    ///
    /// The child's path is this actor's [path](Context::path) and its
    /// [name](Props::name). A name a live child of this actor already has,
    /// or a child spawned earlier in this turn, fails with
    /// [`SpawnError::DuplicateName`]; a stopped child's name is free again
    /// (by the time a watcher hears of its end).
    ///
    /// ```
    /// use turno::{Actor, Context, DetSystem, Props, SpawnError, System};
    ///
    /// struct Idle;
    /// impl Actor for Idle {
    ///     type Msg = ();
    ///     fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: ()) {}
    /// }
    /// struct Sup(Vec<Result<String, SpawnError>>);
    /// impl Actor for Sup {
    ///     type Msg = ();
    ///     fn handle(&mut self, ctx: &mut Context<'_, Self>, _m: ()) {
    ///         for _ in 0..2 {
    ///             let child = ctx.spawn(Props::new().name("worker"), || Idle);
    ///             self.0.push(child.map(|a| a.path().to_string()));
    ///         }
    ///         assert_eq!(ctx.path().as_str(), "/sup");
    ///         assert_eq!(self.0[0], Ok("/sup/worker".to_string()));
    ///         assert_eq!(
    ///             self.0[1].as_ref().unwrap_err().to_string(),
    ///             "cannot spawn \"worker\" under /sup: a live sibling already has that name"
    ///         );
    ///     }
    /// }
    /// let mut sys = DetSystem::new(1);
    /// let sup = sys.spawn(Props::new().name("sup"), || Sup(Vec::new())).unwrap();
    /// sup.try_send(());
    /// sys.run_until_idle().unwrap();
    /// assert!(sys.actor_at("/sup/worker").is_some());
    /// ```
    pub fn spawn<B: Actor>(
        &mut self,
        props: Props,
        factory: impl FnMut() -> B + Send + 'static,
    ) -> Result<Addr<B::Msg>, SpawnError> {
        let parent = self.addr.mailbox().path();
        let named = props.check(parent)?;
        if let Some(path) = &named {
            let pending = self
                .fx
                .spawned
                .iter()
                .any(|s| s.named.as_ref() == Some(path));
            if pending || self.shared().path_taken(path) {
                return Err(SpawnError::DuplicateName {
                    parent: parent.clone(),
                    name: path.name().to_string(),
                });
            }
        }
        let me = self.id();
        let (spawned, addr) =
            Cell::<B, _>::create(self.shared().clone(), props, factory, (me, parent), named);
        self.fx.edit().spawned.push(spawned);
        Ok(addr)
    }

    /// Stops this actor after this turn. Messages still queued become dead
    /// letters; children stop first; watchers get a terminated message.
    pub fn stop(&mut self) {
        self.fx.edit().stop_self = true;
    }

    /// Asks another actor (usually a child) to stop. The stop travels in its
    /// system lane, ahead of its queued messages.
    pub fn stop_actor(&mut self, id: ActorId) {
        self.fx.edit().stops.push(id);
    }

    /// Sends `msg` to this actor after `delay`. The timer can be cancelled
    /// until its message is handled.
    pub fn send_after(&mut self, delay: Duration, msg: A::Msg) -> TimerId {
        let id = self.shared().next_timer();
        let deadline = self.now() + delay;
        self.rare.get(self.stash_capacity).timers.insert(id, msg);
        self.fx
            .edit()
            .timers_set
            .push((TimerKey::User(id), deadline));
        id
    }

    /// Cancels a timer. Returns false if it already fired and was handled
    /// (or never existed). After this, its message is never handled.
    pub fn cancel_timer(&mut self, id: TimerId) -> bool {
        let found = self
            .rare
            .peek_mut()
            .is_some_and(|r| r.timers.remove(&id).is_some());
        if found {
            self.fx.edit().timers_cancelled.push(id);
        }
        found
    }

    /// Sets a message aside until [`Context::unstash_all`]. A full stash
    /// hands the message back.
    pub fn stash(&mut self, msg: A::Msg) -> Result<(), StashFull<A::Msg>> {
        let size = self.rare.get(self.stash_capacity).stash.push(msg)?;
        self.fx.stashed += 1;
        let actor = self.id();
        self.addr.mailbox().metrics().stash(size);
        self.trace(|| ActorEvent::Stash {
            actor: actor.into(),
            size,
        });
        Ok(())
    }

    /// Re-delivers every stashed message, in original order, ahead of newer
    /// mail. Returns how many.
    pub fn unstash_all(&mut self) -> usize {
        let count = self.rare.peek_mut().map_or(0, |r| r.stash.unstash_all());
        if count > 0 {
            // The batch loop's message path looks at the stash only when
            // the rare-work word says so.
            self.addr.mailbox().mark_rare();
            self.fx.unstashed += count;
            let actor = self.id();
            self.addr.mailbox().metrics().stash(0);
            self.trace(|| ActorEvent::Unstash {
                actor: actor.into(),
                count,
            });
        }
        count
    }

    /// Messages in the stash now.
    pub fn stash_len(&self) -> usize {
        self.rare.peek().map_or(0, |r| r.stash.len())
    }

    /// Asks `to` and awaits one [`Response`]: `request` builds the request
    /// message around the [`ReplyTo`] handle; `on_response` turns the reply,
    /// or [`Response::TimedOut`] after `timeout`, into this actor's message.
    ///
    /// The reply wins if it was *enqueued* in this actor's mailbox before
    /// the deadline, even when this actor is busy past the deadline (see
    /// [the rule](crate::ask)). Replies are queued whatever this actor's
    /// mailbox capacity: it asked for them.
    ///
    /// To tell several outstanding requests apart, use
    /// [`Context::ask_with_id`], whose closure also gets the [`RequestId`].
    ///
    /// If the request itself cannot be delivered (closed, rejected, dropped),
    /// nothing is pending and the error carries the request back.
    pub fn ask<N, R, F>(
        &mut self,
        to: &Addr<N>,
        request: impl FnOnce(ReplyTo<R>) -> N,
        timeout: Duration,
        on_response: F,
    ) -> Result<RequestId, AskError<N>>
    where
        N: Send + 'static,
        R: Send + 'static,
        F: Fn(Response<R>) -> A::Msg + Send + Sync + 'static,
    {
        self.ask_with_id(to, request, timeout, move |_, r| on_response(r))
    }

    /// [`Context::ask`], with the request's id handed to `on_response`
    /// together with the response, so that several requests in flight can be
    /// told apart without tags of one's own.
    ///
    /// ```
    /// use std::time::Duration;
    /// use turno::{Actor, Context, ReplyTo, RequestId, Response};
    ///
    /// struct Echo;
    /// impl Actor for Echo {
    ///     type Msg = (u32, ReplyTo<u32>);
    ///     fn handle(&mut self, _ctx: &mut Context<'_, Self>, (n, r): Self::Msg) { r.reply(n); }
    /// }
    /// enum Msg { Go(turno::Addr<(u32, ReplyTo<u32>)>), Got(RequestId, Response<u32>) }
    /// struct Asker;
    /// impl Actor for Asker {
    ///     type Msg = Msg;
    ///     fn handle(&mut self, ctx: &mut Context<'_, Self>, m: Msg) {
    ///         match m {
    ///             Msg::Go(echo) => for n in 0..3 {
    ///                 let _ = ctx.ask_with_id(&echo, |r| (n, r), Duration::from_secs(1), Msg::Got);
    ///             },
    ///             Msg::Got(id, response) => println!("{id}: {response:?}"),
    ///         }
    ///     }
    /// }
    /// ```
    pub fn ask_with_id<N, R, F>(
        &mut self,
        to: &Addr<N>,
        request: impl FnOnce(ReplyTo<R>) -> N,
        timeout: Duration,
        on_response: F,
    ) -> Result<RequestId, AskError<N>>
    where
        N: Send + 'static,
        R: Send + 'static,
        F: Fn(RequestId, Response<R>) -> A::Msg + Send + Sync + 'static,
    {
        let id = self.shared().next_request();
        let (reply_to, timeout_port) = ask::new_request(id, self.addr.clone(), on_response);
        match self.send(to, request(reply_to)) {
            // Evicting: ours is queued, the receiver evicts an older one.
            Verdict::Enqueued { .. } | Verdict::Evicting => {}
            Verdict::Dropped(m) => return Err(AskError::Dropped(m)),
            Verdict::Rejected(m) => return Err(AskError::Rejected(m)),
            Verdict::Full(m) => return Err(AskError::Rejected(m)),
            Verdict::Closed(m) => return Err(AskError::Closed(m)),
        }
        let deadline = self.now() + timeout;
        self.fx
            .edit()
            .timers_set
            .push((TimerKey::Ask(id), deadline));
        self.rare
            .get(self.stash_capacity)
            .asks
            .insert(id, Pending::new(timeout_port, Some(deadline), None));
        if self.fx.recording() {
            self.fx.asks.push((id, to.id()));
        }
        let (actor, to) = (self.id(), to.id());
        self.trace(|| ActorEvent::Ask {
            actor: actor.into(),
            request: id.into(),
            to: to.into(),
        });
        Ok(id)
    }

    /// Asks again, superseding `previous`: a late reply to `previous` is
    /// discarded as stale ([`StaleReason::Superseded`]).
    pub fn supersede<N, R, F>(
        &mut self,
        previous: RequestId,
        to: &Addr<N>,
        request: impl FnOnce(ReplyTo<R>) -> N,
        timeout: Duration,
        on_response: F,
    ) -> Result<RequestId, AskError<N>>
    where
        N: Send + 'static,
        R: Send + 'static,
        F: Fn(Response<R>) -> A::Msg + Send + Sync + 'static,
    {
        if let Some(r) = self.rare.peek_mut() {
            r.asks.settle(previous, StaleReason::Superseded);
        }
        self.ask(to, request, timeout, on_response)
    }

    /// Stops awaiting `id` (typically: the state that wanted it was left).
    /// Its reply, if it comes, is discarded as stale; no timeout is delivered.
    /// Returns false if it was not pending.
    pub fn abandon(&mut self, id: RequestId) -> bool {
        self.rare
            .peek_mut()
            .is_some_and(|r| r.asks.settle(id, StaleReason::Abandoned).is_some())
    }

    /// Abandons every pending request. Returns how many.
    pub fn abandon_all(&mut self) -> usize {
        self.rare
            .peek_mut()
            .map_or(0, |r| r.asks.settle_all(StaleReason::Abandoned))
    }

    /// True while `id` awaits its response.
    pub fn is_pending(&self, id: RequestId) -> bool {
        self.rare.peek().is_some_and(|r| r.asks.is_pending(id))
    }

    /// Requests awaiting a response.
    pub fn pending_requests(&self) -> usize {
        self.rare.peek().map_or(0, |r| r.asks.len())
    }

    /// Watches another actor: when it terminates, `on_terminated` builds the
    /// message this actor receives (through the system lane, so no policy
    /// drops it). Watching an actor that is already gone delivers at once.
    pub fn watch<N: Send + 'static>(
        &mut self,
        target: &Addr<N>,
        on_terminated: impl Fn(ActorId, ExitReason) -> A::Msg + Send + 'static,
    ) {
        self.rare
            .get(self.stash_capacity)
            .watching
            .insert(target.id(), Box::new(on_terminated));
        self.fx.edit().watch.push(target.id());
    }

    /// Stops watching: no terminated message for `target` after this.
    pub fn unwatch(&mut self, target: ActorId) {
        let found = self
            .rare
            .peek_mut()
            .is_some_and(|r| r.watching.remove(&target).is_some());
        if found {
            self.fx.edit().unwatch.push(target);
        }
    }

    /// True when the system records a trace (so callers can skip building
    /// events nobody will see).
    pub fn tracing(&self) -> bool {
        self.shared().tracer.is_on()
    }

    /// Records a statechart step of this actor in the trace (the
    /// `chart_*` extension events of `docs/trace-format.md`); nothing when
    /// tracing is off.
    pub fn trace_chart(&self, step: crate::trace::ChartStep) {
        let actor = self.id();
        self.trace(|| step.into_event(actor));
    }

    /// Declares that this turn's work takes `cost` of time. On the
    /// deterministic scheduler the actor handles nothing else until the
    /// virtual clock has moved past it (this is how a slow consumer is
    /// modelled); the threaded scheduler ignores it, real time passes by
    /// itself.
    pub fn simulate_work(&mut self, cost: Duration) {
        let total = self.fx.busy_for.unwrap_or_default() + cost;
        self.fx.edit().busy_for = Some(total);
    }
}

/// An [`ask`](Context::ask) whose request could not be delivered; nothing is
/// pending. Carries the request back.
#[derive(PartialEq, Eq, thiserror::Error)]
pub enum AskError<N> {
    /// The addressee has stopped.
    #[error("ask failed: the addressee has stopped")]
    Closed(N),
    /// The addressee's mailbox is full and refuses (reject policy).
    #[error("ask failed: the addressee's mailbox is full and rejected the request")]
    Rejected(N),
    /// The addressee's keep-oldest mailbox is full and dropped the request.
    #[error("ask failed: the addressee's mailbox is full and dropped the request")]
    Dropped(N),
}

impl<N> AskError<N> {
    /// The request that was not delivered.
    pub fn into_request(self) -> N {
        match self {
            AskError::Closed(n) | AskError::Rejected(n) | AskError::Dropped(n) => n,
        }
    }
}

// Messages need not be `Debug`: show the variant only.
impl<N> std::fmt::Debug for AskError<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = match self {
            AskError::Closed(_) => "Closed",
            AskError::Rejected(_) => "Rejected",
            AskError::Dropped(_) => "Dropped",
        };
        write!(f, "AskError::{v}(..)")
    }
}
