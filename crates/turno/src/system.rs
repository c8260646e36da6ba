//! The one contract every scheduler keeps: [`System`].
//!
//! [`DetSystem`](crate::DetSystem) (one thread, virtual time, seeded
//! choice), [`ThreadedSystem`](crate::ThreadedSystem) (worker threads, real
//! time) and [`LocalSystem`](crate::LocalSystem) (the caller's thread, first
//! come first served, real time) run the same actors through the same
//! engine; they differ only in what runs next and how time passes. Code that builds on turno (statecharts, stores,
//! inspectors, test suites) takes `impl System` or `S: System` and runs on
//! either:
//!
//! ```
//! use std::time::Duration;
//! use turno::{Actor, Context, DetSystem, Props, System, ThreadedSystem};
//!
//! struct Hello;
//! impl Actor for Hello {
//!     type Msg = ();
//!     fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: ()) {}
//! }
//!
//! fn two_actors<S: System>(mut sys: S) -> usize {
//!     let a = sys.spawn(Props::new().name("a"), || Hello).unwrap();
//!     sys.spawn(Props::new().name("b"), || Hello).unwrap();
//!     let _ = a.try_send(());
//!     assert!(sys.settle(Duration::from_secs(5)));
//!     let n = sys.children(turno::ROOT).len();
//!     sys.shutdown(Duration::from_secs(5)).unwrap();
//!     n
//! }
//! assert_eq!(two_actors(DetSystem::new(1)), 2);
//! assert_eq!(two_actors(ThreadedSystem::builder().threads(1).build()), 2);
//! assert_eq!(two_actors(turno::LocalSystem::new()), 2);
//! ```

use std::time::Duration;

use crate::actor::{Actor, Props, SpawnError};
use crate::addr::Addr;
use crate::ids::{ActorId, ActorPath};
use crate::supervision::ExitReason;
use crate::system_lane::Control;
use crate::time::Instant;

pub(crate) mod sealed {
    /// Only turno's schedulers implement [`System`](super::System). The
    /// engine it hands out cannot be named outside the crate: that is the
    /// point (the lint would have the type public).
    #[allow(private_interfaces)]
    pub trait Sealed {
        fn engine(&self) -> &crate::engine::Engine;
    }
}

/// What every actor system offers, whichever scheduler runs it. See the
/// [module docs](self).
///
/// Sealed: only [`DetSystem`](crate::DetSystem),
/// [`ThreadedSystem`](crate::ThreadedSystem) and
/// [`LocalSystem`](crate::LocalSystem) implement it.
pub trait System: sealed::Sealed {
    /// Spawns a top-level actor, supervised by the root ([`crate::ROOT`]).
    /// Its first turn is its `started` hook.
    ///
    /// Its path is `/` and its [name](Props::name); a name a live
    /// top-level actor already has fails with [`SpawnError::DuplicateName`],
    /// as among the children of any actor (also between threads spawning
    /// at once: one of them wins).
    ///
    /// **The root's restart intensity is shared** by every top-level actor,
    /// as in Erlang: by default at most 3 restarts of *any* top-level actors
    /// within 5 s; one more failure in that window stops the actor that
    /// failed (the root cannot escalate), whichever it is. So one
    /// crash-looping top-level actor can use up the budget and get a
    /// well-behaved sibling stopped on its next failure. Give each subsystem
    /// its own supervisor actor, or set the root's intensity on the builder
    /// (`root_supervision`, `root_intensity`).
    fn spawn<A: Actor>(
        &self,
        props: Props,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Result<Addr<A::Msg>, SpawnError> {
        self.engine().spawn_top(props, factory)
    }

    /// Asks an actor to stop (through its system lane, ahead of its mail).
    /// Its children stop first.
    fn stop(&self, id: ActorId) {
        self.engine()
            .push_control(id, Control::Stop(ExitReason::Stopped));
    }

    /// True while the actor has not stopped.
    fn is_alive(&self, id: ActorId) -> bool {
        self.engine().is_alive(id)
    }

    /// How many times the actor was restarted.
    fn restarts(&self, id: ActorId) -> u32 {
        self.engine().restarts(id)
    }

    /// The actor's name, while it lives.
    fn name(&self, id: ActorId) -> Option<String> {
        self.engine().name(id)
    }

    /// The actor's path from the root (see [`ActorPath`]), while it lives.
    fn path(&self, id: ActorId) -> Option<ActorPath> {
        self.engine().path(id)
    }

    /// The live actor at `path`, e.g. `"/orders/worker"`, if it was spawned
    /// with a name (an unnamed actor, `$<id>`, is found by its id).
    fn actor_at(&self, path: &str) -> Option<ActorId> {
        self.engine().shared.actor_at(path)
    }

    /// The actor's children, in the order they were started
    /// ([`crate::ROOT`]: the top-level actors).
    fn children(&self, id: ActorId) -> Vec<ActorId> {
        self.engine().children(id)
    }

    /// True while the actor is muted by a saturated suspend mailbox.
    fn is_muted(&self, id: ActorId) -> bool {
        self.engine().is_muted(id)
    }

    /// Live actors.
    fn actor_count(&self) -> usize {
        self.engine().actor_count()
    }

    /// Messages that reached no actor, system-wide.
    fn dead_letters(&self) -> u64 {
        self.engine().shared.dead_letters()
    }

    /// The system's time: virtual on `DetSystem`, real since start on
    /// `ThreadedSystem` and `LocalSystem`.
    fn now(&self) -> Instant {
        self.engine().shared.clock.now()
    }

    /// True when the system records a trace (see [`crate::trace`]).
    fn tracing(&self) -> bool {
        self.engine().shared.tracer.is_on()
    }

    /// Records a cluster node's step in the trace (the `remote_*` events
    /// of `docs/trace-format.md`): `step` is called only when tracing is
    /// on, so a node whose system records no trace builds nothing.
    fn trace_remote(&self, step: impl FnOnce() -> crate::trace::RemoteStep)
    where
        Self: Sized,
    {
        let shared = &self.engine().shared;
        shared.tracer.emit(&shared.clock, || step().into_event());
    }

    /// The system-wide counters.
    fn stats(&self) -> SystemStats {
        SystemStats {
            actors: self.actor_count(),
            dead_letters: self.dead_letters(),
        }
    }

    /// Runs until nothing is runnable: `DetSystem` runs to idleness on this
    /// thread (firing timers due now; virtual time does not move),
    /// `LocalSystem` too (firing timers whose real deadline has passed, at
    /// most `timeout`), and `ThreadedSystem` waits for its workers, at most
    /// `timeout`. False if
    /// it did not settle (a message loop hit the step limit, or the timeout).
    fn settle(&mut self, timeout: Duration) -> bool;

    /// Lets `d` of system time pass, then settles: `DetSystem` advances its
    /// virtual clock (firing each timer at its deadline), `ThreadedSystem`
    /// sleeps the calling thread, `LocalSystem` runs its actors and timers
    /// for `d` of real time, sleeping while nothing is runnable. False as for [`System::settle`].
    fn sleep(&mut self, d: Duration) -> bool;

    /// Graceful shutdown: lets queued mail drain, stops every actor
    /// (children first, `stopped` hooks run), and on `ThreadedSystem` joins
    /// the threads.
    fn shutdown(self, timeout: Duration) -> Result<ShutdownReport, ShutdownTimeout>
    where
        Self: Sized;
}

/// System-wide counters, see [`System::stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SystemStats {
    /// Live actors.
    pub actors: usize,
    /// Messages that reached no actor, so far.
    pub dead_letters: u64,
}

/// Shutdown did not complete in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("shutdown timed out after {waited:?} with {remaining} actors still alive; the threads were stopped anyway")]
pub struct ShutdownTimeout {
    /// How long it waited.
    pub waited: Duration,
    /// Actors that had not stopped.
    pub remaining: usize,
}

/// What a completed shutdown observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Messages that reached no actor over the system's life, including mail
    /// still queued when the actors stopped.
    pub dead_letters: u64,
}

/// A system builder: the settings every system shares (trace, metrics,
/// root supervision, panics, tokio), written once here, plus the
/// scheduler's own `S`. [`DetSystemBuilder`](crate::DetSystemBuilder) and
/// [`ThreadedBuilder`](crate::ThreadedBuilder) are this type with each
/// scheduler's options; each adds its own methods and `build`.
///
/// ```
/// use turno::{DetSystem, ThreadedSystem};
///
/// let det = DetSystem::builder().metrics(false).seed(7).build();
/// let threaded = ThreadedSystem::builder().metrics(false).threads(1).build();
/// # drop(det);
/// # threaded.shutdown(std::time::Duration::from_secs(5)).unwrap();
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct SystemBuilder<S> {
    pub(crate) options: S,
    pub(crate) config: crate::shared::SystemConfig,
}

impl<S> SystemBuilder<S> {
    pub(crate) fn with_options(options: S) -> Self {
        SystemBuilder {
            options,
            config: crate::shared::SystemConfig::default(),
        }
    }

    /// Records the trace into `sink` (on the threaded scheduler one lock
    /// serialises it: costly).
    pub fn trace(mut self, sink: impl crate::trace::TraceSink + 'static) -> Self {
        self.config.sink = Some(Box::new(sink));
        self
    }

    /// Reports metrics through the `metrics` facade (default: on).
    pub fn metrics(mut self, on: bool) -> Self {
        self.config.metrics = on;
        self
    }

    /// How the root supervises top-level actors (default: one-for-one,
    /// at most 3 restarts in 5 s). The root cannot escalate: when it
    /// gives up, the failed actor stops. The intensity is one budget for
    /// all top-level actors together.
    pub fn root_supervision(mut self, s: crate::supervision::Supervision) -> Self {
        self.config.root = s;
        self
    }

    /// The root's restart intensity: at most `max_restarts` restarts of
    /// top-level actors (all of them together) within `within`; the
    /// strategy and decider stay as set.
    pub fn root_intensity(mut self, max_restarts: u32, within: std::time::Duration) -> Self {
        self.config.root = self.config.root.intensity(max_restarts, within);
        self
    }

    /// Prints the panic message and backtrace of a panicking turn through
    /// the process's panic hook, as an uncontained panic would (default:
    /// off). Either way the failure is recorded: the trace's `fail`
    /// event, the `tracing` error event (feature `tracing`), and the
    /// supervisor's decision.
    pub fn print_panics(mut self, on: bool) -> Self {
        self.config.print_panics = on;
        self
    }

    /// The tokio runtime that runs futures piped into actors
    /// ([`Context::pipe`](crate::Context::pipe)).
    #[cfg(feature = "tokio")]
    pub fn tokio(mut self, handle: tokio::runtime::Handle) -> Self {
        self.config.tokio = Some(handle);
        self
    }
}
