//! Run one turn of one actor and look at what it did: no scheduler needed.
//!
//! A [`TestKit`] holds a single actor. [`TestKit::handle`] runs its handler on
//! one message and returns the turn's [`TurnEffects`]: what it spawned,
//! stopped, timed, asked, stashed, and every send with its verdict. Messages
//! sent to a [`Probe`] can be read back.
//!
//! ```
//! use std::time::Duration;
//! use turno::testkit::{Probe, TestKit};
//! use turno::{Actor, Addr, Context};
//!
//! struct Relay { to: Addr<u32> }
//! impl Actor for Relay {
//!     type Msg = u32;
//!     fn handle(&mut self, ctx: &mut Context<'_, Self>, n: u32) {
//!         let _ = ctx.send(&self.to, n * 2);
//!         ctx.send_after(Duration::from_secs(1), n + 1);
//!     }
//! }
//!
//! let probe = Probe::new();
//! let to = probe.addr();
//! let mut kit = TestKit::new(move || Relay { to: to.clone() });
//! let fx = kit.handle(21);
//! assert_eq!(probe.drain(), vec![42]);
//! assert_eq!(fx.sent.len(), 1);
//! assert_eq!(fx.timers_set.len(), 1);
//! ```

use std::sync::Arc;
use std::time::Duration;

use crate::actor::{Actor, Props};
use crate::addr::Addr;
use crate::buffer::Policy;
use crate::cell::{AnyCell, Cell, Step, TurnOutcome};
use crate::effects::Effects;
use crate::envelope::Envelope;
use crate::ids::ActorId;
use crate::ids::RequestId;
use crate::ids::TimerId;
use crate::mailbox::Mailbox;
use crate::shared::SystemShared;
use crate::system_lane::Signal;
use crate::time::{Clock, Instant};
use crate::timer::TimerKey;
use crate::trace::Tracer;
use crate::verdict::VerdictKind;

/// What one turn did, besides changing the actor's state.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TurnEffects {
    /// Every send, with its receiver and verdict, in order.
    pub sent: Vec<(ActorId, VerdictKind)>,
    /// Children spawned.
    pub spawned: Vec<ActorId>,
    /// The actor asked to stop itself.
    pub stopped_self: bool,
    /// Other actors asked to stop.
    pub stop_requests: Vec<ActorId>,
    /// Timers set, with their deadlines.
    pub timers_set: Vec<(TimerId, Instant)>,
    /// Timers cancelled.
    pub timers_cancelled: Vec<TimerId>,
    /// Requests made, with their addressees.
    pub asks: Vec<(RequestId, ActorId)>,
    /// Actors watched.
    pub watched: Vec<ActorId>,
    /// Receivers whose full suspend mailbox muted this actor.
    pub muted_by: Vec<ActorId>,
    /// Messages stashed.
    pub stashed: usize,
    /// Messages unstashed.
    pub unstashed: usize,
    /// Simulated work declared.
    pub busy_for: Option<Duration>,
    /// The panic message, if the turn failed.
    pub failed: Option<String>,
}

impl TurnEffects {
    fn from_effects(fx: Effects) -> Self {
        TurnEffects {
            sent: fx.sent.unwrap_or_default(),
            spawned: fx.spawned.iter().map(|s| s.id).collect(),
            stopped_self: fx.stop_self,
            stop_requests: fx.stops,
            timers_set: fx
                .timers_set
                .iter()
                .filter_map(|(k, t)| match k {
                    TimerKey::User(id) => Some((*id, *t)),
                    _ => None,
                })
                .collect(),
            timers_cancelled: fx.timers_cancelled,
            asks: fx.asks,
            watched: fx.watch,
            muted_by: fx.muted_by,
            stashed: fx.stashed,
            unstashed: fx.unstashed,
            busy_for: fx.busy_for,
            failed: fx.failed,
        }
    }
}

/// A single actor outside any scheduler. See the [module docs](self).
pub struct TestKit<A: Actor> {
    cell: Cell<A>,
    addr: Addr<A::Msg>,
}

fn detached_shared() -> Arc<SystemShared> {
    Arc::new(SystemShared::new(
        Clock::default(),
        Tracer::new(None),
        false,
    ))
}

impl<A: Actor> TestKit<A> {
    /// Builds the actor with `factory` (default props). The `started` hook
    /// has not run: call [`TestKit::start`] to run it.
    pub fn new(factory: impl FnMut() -> A + Send + 'static) -> Self {
        match Self::with_props(Props::new(), factory) {
            Ok(kit) => kit,
            Err(_) => unreachable!("the default props are valid"),
        }
    }

    /// Builds the actor with the given props; invalid props (a
    /// zero-capacity mailbox) are refused as they are by `spawn`.
    ///
    /// ```
    /// use turno::testkit::TestKit;
    /// use turno::{Actor, Context, Policy, Props};
    ///
    /// struct Idle;
    /// impl Actor for Idle {
    ///     type Msg = ();
    ///     fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: ()) {}
    /// }
    /// let err = TestKit::with_props(Props::new().mailbox(Policy::Reject(0)), || Idle);
    /// assert!(err.is_err());
    /// ```
    pub fn with_props(
        props: Props,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Result<Self, crate::SpawnError> {
        // The actor under test stands alone: a top-level actor of no system.
        let root = crate::ids::ActorPath::root();
        let named = props.check(&root)?;
        let (mut cell, addr) =
            Cell::<A>::new(detached_shared(), &props, Box::new(factory), &root, named);
        cell.ensure_instance();
        Ok(TestKit { cell, addr })
    }

    /// A mailbox to send to from the actor under test, unbounded. Same as
    /// [`Probe::new`], which reads better.
    pub fn probe<M: Send + 'static>() -> Probe<M> {
        Probe::new()
    }

    /// Same as [`Probe::with_policy`].
    pub fn probe_with<M: Send + 'static>(policy: Policy) -> Probe<M> {
        Probe::with_policy(policy)
    }

    /// The actor's address: messages sent here wait until [`TestKit::run_next`].
    pub fn addr(&self) -> Addr<A::Msg> {
        self.addr.clone()
    }

    /// The actor's state.
    pub fn actor(&self) -> &A {
        self.cell
            .instance()
            .expect("the test kit's actor has failed or stopped")
    }

    /// Runs the `started` hook.
    pub fn start(&mut self) -> TurnEffects {
        let mut fx = Self::effects();
        self.cell.start(&mut fx);
        TurnEffects::from_effects(fx)
    }

    /// Runs one turn on `msg`, bypassing the mailbox.
    pub fn handle(&mut self, msg: A::Msg) -> TurnEffects {
        let mut fx = Self::effects();
        self.cell.handle_now(msg, &mut fx);
        TurnEffects::from_effects(fx)
    }

    /// Runs one turn on whatever is next: a signal, an unstashed message, or
    /// the mailbox. `None` when nothing waits (or a stale reply was discarded:
    /// see [`Addr::stale_replies`]).
    pub fn run_next(&mut self) -> Option<TurnEffects> {
        let mut fx = Self::effects();
        match self.cell.step(false, &mut fx) {
            Step::Ran {
                outcome: TurnOutcome::Handled,
                ..
            } => Some(TurnEffects::from_effects(fx)),
            // The kit never queues control messages.
            Step::Control(_)
            | Step::Ran {
                outcome: TurnOutcome::Discarded,
                ..
            }
            | Step::Idle
            | Step::Blocked => None,
        }
    }

    /// Fires a timer now, as if its deadline had come, and runs its turn.
    pub fn fire_timer(&mut self, id: TimerId) -> Option<TurnEffects> {
        if !self.cell.timer_live(id) {
            return None;
        }
        self.cell.push_signal(Signal::Timer(id));
        self.run_next()
    }

    /// Times a request out now, and runs the timeout's turn.
    pub fn time_out(&mut self, id: RequestId) -> Option<TurnEffects> {
        if !self.cell.ask_pending(id) {
            return None;
        }
        self.cell.push_signal(Signal::AskTimeout(id));
        self.run_next()
    }

    /// Sets the kit's clock (it starts at zero and moves only here).
    pub fn set_time(&mut self, t: Instant) {
        self.addr.mailbox().shared.clock.advance_to(t);
    }

    fn effects() -> Effects {
        Effects {
            sent: Some(Vec::new()),
            ..Effects::default()
        }
    }
}

/// A mailbox for reading what the actor under test sent. Its address works
/// from any thread and any system.
pub struct Probe<M> {
    addr: Addr<M>,
}

impl<M: Send + 'static> Default for Probe<M> {
    fn default() -> Self {
        Probe::new()
    }
}

impl<M: Send + 'static> Probe<M> {
    /// An unbounded probe, outside any system.
    pub fn new() -> Self {
        Self::with_policy(Policy::Unbounded)
    }

    /// A probe with a given mailbox policy, to test how an actor handles
    /// verdicts.
    pub fn with_policy(policy: Policy) -> Self {
        let shared = detached_shared();
        let id = ActorId(u64::MAX - shared.next_actor().as_u64());
        let mailbox = Mailbox::new(
            crate::engine::slot::Slot::<crate::cell::Bare<M>>::BODY_AT,
            crate::path_cell::PathCell::new(
                crate::ids::ActorPath::root_ref(),
                Some(crate::ids::ActorPath::root().child("probe")),
            ),
            policy,
            shared,
            false,
        );
        Probe {
            addr: crate::cell::Bare::addr(id, mailbox),
        }
    }

    /// The probe's address, to hand to the actor under test.
    pub fn addr(&self) -> Addr<M> {
        self.addr.clone()
    }

    /// Takes every message received so far, in order.
    pub fn drain(&self) -> Vec<M> {
        let mut out = Vec::new();
        while let Some(env) = self.addr.mailbox().pop_user() {
            out.push(match env {
                Envelope::Msg(m) | Envelope::Reply(_, m) => m,
            });
        }
        out
    }
}
