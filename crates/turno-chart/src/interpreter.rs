//! The interpreter: a statechart as a turno actor, one macrostep per turn.
//!
//! [`ChartActor`] owns a snapshot and executes the [`Action`]s each
//! macrostep returns:
//!
//! - `after` and delayed `raise`/`sendTo` arm turno timers (virtual time on
//!   `DetSystem`), disarmed when their state is exited or they are
//!   cancelled; a timer message that outlived its schedule is stale.
//! - `invoke` starts a [`Service`]: a turno actor asked for the result
//!   ([`Service::ask`], delegated work with a correlated reply), a future
//!   run off-turn ([`Service::future`], feature `tokio`, through
//!   `Context::pipe`), or a child actor ([`Service::child`]). The result
//!   comes back as `xstate.done.actor.<id>` / `xstate.error.actor.<id>` for
//!   *that* invocation only: leaving the state stops the invocation
//!   (abandons the request, aborts the future, stops the child), and a
//!   result that arrives later is **stale: dropped and counted**
//!   ([`ChartStats::stale_results`]), never delivered.
//! - an `invoke.src` registered with [`ChartActor::with_charts`] starts a
//!   **child chart inside this actor** (a [`Tree`]): events pass between
//!   parent and child within the turn, the child's timers and invocations
//!   are this actor's (their messages carry the child's [`Path`]), and one
//!   persisted document holds both ([`ChartActor::on_persist_tree`],
//!   [`ChartActor::restoring_tree`]);
//! - `sendTo` reaches children by id, `sendParent` the parent given in
//!   [`ChartActor::with_parent`], `emit` and snapshots reach subscribers,
//!   `log` and custom actions reach their hooks.
//! - With a trace sink on the system, every step is recorded in the runtime
//!   trace (`chart_define`, `chart_event`, `chart_exit`,
//!   `chart_transition`, `chart_enter`; `docs/trace-format.md`).
//!
//! The chart's events are its actor's messages ([`ChartMsg::Event`]), so the
//! mailbox policy is the actor's: a chart fed by a sensor can keep newest.
//!
//! A runaway macrostep ([`ChartError::RunawayLoop`]) panics the turn: the
//! actor fails and its supervisor decides.
//!
//! # Extensions: requests in the chart's turn
//!
//! An application that talks to its chart in the chart's own turns (check
//! something, send an event, answer with a view of the result, with nothing
//! slipping in between) gives the actor an [`Extension`]: its own state and
//! messages ([`ChartMsg::Ext`]), handled in the chart's turn with a
//! [`Turn`] that reads the snapshot, asks whether the chart takes an event
//! here ([`Turn::can`]), runs a macrostep ([`Turn::send`]) and replies with
//! any projection of the snapshot. [`Extension::stepped`] runs after every
//! macrostep, before its effects (the application's own write-ahead
//! record), and [`Service::custom`] starts invocations with the extension
//! and the snapshot at hand. The signup wizard's session
//! (`crates/turno-wizard/src/session.rs`) is such an actor.
//!
//! An ask with a projection: the event is sent only if the chart takes it
//! here, and the reply is the state after the macrostep.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use serde_json::Value;
//! use turno::{Props, ReplyTo, System, ThreadedSystem};
//! use turno_chart::interpreter::{ChartActor, ChartMsg, Extension, Turn};
//! use turno_chart::{load_json, stdlib, Event};
//!
//! struct Ask(Event, ReplyTo<Result<String, String>>);
//! struct Pages;
//! impl Extension<Value> for Pages {
//!     type Msg = Ask;
//!     fn handle(turn: &mut Turn<'_, '_, Value, Self>, Ask(event, reply): Ask) {
//!         if !turn.can(&event) {
//!             reply.reply(Err(format!("{} is not taken here", event.name())));
//!             return;
//!         }
//!         turn.send(event);
//!         let value = turn.snapshot().value(turn.machine()).to_json();
//!         reply.reply(Ok(value.to_string()));
//!     }
//! }
//!
//! let m = Arc::new(load_json::<Value>(r#"{"initial": "a", "states": {
//!     "a": {"on": {"NEXT": "b"}}, "b": {"on": {"BACK": "a"}}}}"#,
//!     &stdlib::implementations()).unwrap());
//! let sys = ThreadedSystem::builder().threads(1).build();
//! let chart = sys
//!     .spawn(Props::new(), move || ChartActor::with_extension(m.clone(), Pages))
//!     .unwrap();
//! let ask = |name: &str| {
//!     chart
//!         .ask_blocking(|r| ChartMsg::Ext(Ask(Event::new(name), r)), Duration::from_secs(5))
//!         .unwrap()
//! };
//! assert_eq!(ask("BACK"), Err("BACK is not taken here".to_string()));
//! assert_eq!(ask("NEXT"), Ok(r#""b""#.to_string()));
//! assert_eq!(ask("BACK"), Ok(r#""a""#.to_string()));
//! sys.shutdown(Duration::from_secs(5)).unwrap();
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use turno::trace::{self, ChartStep};
use turno::{Actor, Addr, Context, ReplyTo, RequestId, Response, TimerId};

use crate::actions::Action;
use crate::algorithm::{ChartError, Inspect};
use crate::core::{
    fire_scheduled_inspected, initial_transition_for, invocation_done_inspected,
    transition_inspected, Delivery,
};
use crate::event::Event;
use crate::machine::{Machine, StateKind};
use crate::persist::{Clock, RestoreError, Restored, RestoredTree};
use crate::snapshot::{Snapshot, Status};
use crate::tree::{Charts, Path, Tagged, Tree};

/// A chart actor's messages.
pub enum ChartMsg<M = NoExt> {
    /// An event for the chart (a macrostep).
    Event(Event),
    /// A delayed event's timer fired.
    Timer {
        /// The chart that scheduled it (empty: this chart; else the
        /// invocation ids down to an invoked child chart).
        path: Path,
        /// The send id.
        id: String,
        /// Which scheduling.
        seq: u64,
    },
    /// An invocation finished (output) or failed (error).
    Done {
        /// The chart that started it (see [`ChartMsg::Timer::path`]).
        path: Path,
        /// The invocation id.
        id: String,
        /// Which start of it.
        generation: u64,
        /// Its outcome.
        result: Result<Value, Value>,
    },
    /// A delegated request timed out or its reply was lost.
    Lost {
        /// The chart that started it.
        path: Path,
        /// The invocation id.
        id: String,
        /// Which start of it.
        generation: u64,
    },
    /// Adds a snapshot subscriber (called after every macrostep).
    Subscribe(SnapshotFn),
    /// Adds a subscriber to emitted events.
    SubscribeEmitted(EmitFn),
    /// A message of the actor's [`Extension`], handled in the chart's turn
    /// ([`Extension::handle`]).
    Ext(M),
}

/// The extension message of a chart actor without an extension: there is
/// none.
#[derive(Debug)]
pub enum NoExt {}

impl<M> From<Event> for ChartMsg<M> {
    fn from(e: Event) -> Self {
        ChartMsg::Event(e)
    }
}

/// What an application adds to a [`ChartActor`]: its own state and
/// messages, handled **in the chart's turn**, with the chart at hand.
///
/// A request that must see the chart as it is between two macrosteps (a
/// check, then an event, then the view after it) is one extension message:
/// [`handle`](Self::handle) gets a [`Turn`] that can read the snapshot,
/// ask whether an event would be taken ([`Turn::can`]), run a macrostep
/// ([`Turn::send`]) and reply with a projection of the result, all in one
/// turn, so nothing slips in between. [`stepped`](Self::stepped) is called
/// after every macrostep, before its effects: the place for the
/// application's own write-ahead record. A chart actor without an extension
/// has `X = ()`.
pub trait Extension<C: Clone + Send + Sync + 'static>: Send + Sized + 'static {
    /// Its messages, sent to the chart actor as [`ChartMsg::Ext`].
    type Msg: Send + 'static;

    /// Handles one of its messages in the chart's turn.
    fn handle(turn: &mut Turn<'_, '_, C, Self>, msg: Self::Msg);

    /// Whether [`Stepped::taken`] is filled. Naming the transitions taken
    /// runs every macrostep through the algorithm's inspector, which skips
    /// the step table's shortcut for a macrostep that only moves the
    /// configuration, so only an extension that shows them asks.
    const TAKEN: bool = false;

    /// Called after every macrostep that was taken (the first one and a
    /// restore included), after the write-ahead hooks
    /// ([`ChartActor::on_persist`]) and before the macrostep's effects
    /// are carried out.
    fn stepped(&mut self, ctx: &mut Context<'_, ChartActor<C, Self>>, step: Stepped<'_, C>) {
        let _ = (ctx, step);
    }
}

impl<C: Clone + Send + Sync + 'static> Extension<C> for () {
    type Msg = NoExt;

    fn handle(_: &mut Turn<'_, '_, C, Self>, msg: NoExt) {
        match msg {}
    }
}

/// A macrostep just taken, as [`Extension::stepped`] sees it.
pub struct Stepped<'a, C> {
    /// The machine.
    pub machine: &'a Machine<C>,
    /// The actor's own chart after the macrostep.
    pub snapshot: &'a Snapshot<C>,
    /// What the macrostep asks the interpreter to do next (about to be
    /// carried out).
    pub actions: &'a [Tagged],
    /// The transitions of the actor's own chart this macrostep took, in
    /// the order taken, as positions in [`Machine::transitions`] (the
    /// indices of `turno chart svg`'s arrows). Filled only when the
    /// extension's [`Extension::TAKEN`] is true; empty for a restore.
    pub taken: &'a [u32],
}

/// A chart actor's turn, as its [`Extension`] handles a message: the
/// extension, the chart, and the turn's context.
pub struct Turn<'a, 'c, C: Clone + Send + Sync + 'static, X: Extension<C>> {
    actor: &'a mut ChartActor<C, X>,
    ctx: &'a mut Context<'c, ChartActor<C, X>>,
}

impl<'c, C: Clone + Send + Sync + 'static, X: Extension<C>> Turn<'_, 'c, C, X> {
    /// The extension.
    pub fn ext(&self) -> &X {
        &self.actor.ext
    }

    /// The extension, to change.
    pub fn ext_mut(&mut self) -> &mut X {
        &mut self.actor.ext
    }

    /// The machine.
    pub fn machine(&self) -> &Arc<Machine<C>> {
        &self.actor.machine
    }

    /// The actor's own chart, as the last macrostep left it.
    pub fn snapshot(&self) -> &Snapshot<C> {
        self.actor.tree.as_ref().expect("started").root()
    }

    /// The turn's context (timers, sends, `stop`).
    pub fn ctx(&mut self) -> &mut Context<'c, ChartActor<C, X>> {
        self.ctx
    }

    /// Whether `event` would be taken here: some transition of the active
    /// configuration is enabled for it (guards evaluated on the current
    /// context) and does something. Nothing changes.
    pub fn can(&self, event: &Event) -> bool {
        crate::core::can(&self.actor.machine, self.snapshot(), event)
    }

    /// Runs the macrostep for `event` now, in this turn, as if it had
    /// arrived as [`ChartMsg::Event`]: the write-ahead hooks, the effects
    /// and the subscribers all run before this returns, so
    /// [`snapshot`](Self::snapshot) is the chart after it.
    pub fn send(&mut self, event: Event) {
        self.actor.event(self.ctx, event);
    }
}

/// A snapshot subscriber: the value (as XState shows it), the status and
/// the snapshot.
pub type SnapshotFn = Box<dyn FnMut(&Value, Status) + Send>;
/// An emitted-event subscriber.
pub type EmitFn = Box<dyn FnMut(&Event) + Send>;
/// Where an event for another actor goes (`sendTo` a child, `sendParent`).
pub type Sender = Arc<dyn Fn(Event) -> bool + Send + Sync>;

/// How an invoked (or spawned) actor runs.
pub struct Service<C: Clone + Send + Sync + 'static, X: Extension<C> = ()> {
    start: StartFn<C, X>,
}

type StartFn<C, X> = Arc<
    dyn Fn(&mut Context<'_, ChartActor<C, X>>, &mut X, &Snapshot<C>, Started) -> Running
        + Send
        + Sync,
>;

/// What a service is given when it starts.
pub struct Started {
    /// The chart that started it: empty for the actor's own chart, else
    /// the invocation ids down to an invoked child chart
    /// ([`tree`](crate::tree)).
    pub path: Path,
    /// The invocation (or child) id.
    pub id: String,
    /// Its generation: part of every message back.
    pub generation: u64,
    /// Its input.
    pub input: Value,
}

impl Started {
    /// The message that delivers `result` as this invocation's outcome
    /// (`xstate.done.actor.<id>` or `xstate.error.actor.<id>`; stale if
    /// the invocation was stopped meanwhile).
    pub fn done<M>(&self, result: Result<Value, Value>) -> ChartMsg<M> {
        ChartMsg::Done {
            path: self.path.clone(),
            id: self.id.clone(),
            generation: self.generation,
            result,
        }
    }
}

/// A running invocation, as the interpreter stops it.
pub enum Running {
    /// A request awaiting its reply (abandoned on stop).
    Request(RequestId),
    /// A child actor (stopped on stop), with how to send it events.
    Child(turno::ActorId, Option<Sender>),
    /// Nothing to stop (it could not start; the error was delivered).
    Nothing,
}

impl<C: Clone + Send + Sync + 'static, X: Extension<C>> Clone for Service<C, X> {
    fn clone(&self) -> Self {
        Service {
            start: self.start.clone(),
        }
    }
}

impl<C: Clone + Send + Sync + 'static, X: Extension<C>> Service<C, X> {
    /// Delegated work: asks `worker` with `request(input, reply)`; the
    /// reply (`Ok` output or `Err` error) becomes the invocation's result.
    /// After `timeout` the invocation fails with `"timeout"`.
    pub fn ask<N: Send + 'static>(
        worker: Addr<N>,
        timeout: Duration,
        request: impl Fn(Value, ReplyTo<Result<Value, Value>>) -> N + Send + Sync + 'static,
    ) -> Self {
        let request = Arc::new(request);
        Service {
            start: Arc::new(move |ctx, _: &mut X, _: &Snapshot<C>, s: Started| {
                let (id, generation) = (s.id.clone(), s.generation);
                let path = s.path.clone();
                let r = request.clone();
                let input = s.input;
                let asked = ctx.ask(
                    &worker,
                    move |reply| r(input, reply),
                    timeout,
                    move |resp| match resp {
                        Response::Reply(result) => ChartMsg::Done {
                            path: path.clone(),
                            id: id.clone(),
                            generation,
                            result,
                        },
                        Response::TimedOut => ChartMsg::Done {
                            path: path.clone(),
                            id: id.clone(),
                            generation,
                            result: Err(Value::String("timeout".into())),
                        },
                    },
                );
                match asked {
                    Ok(req) => Running::Request(req),
                    Err(_) => {
                        // The worker could not take the request: the
                        // invocation fails at once (as a message, so it
                        // is processed as its own macrostep).
                        let me = ctx.addr();
                        let _ = ctx.send(
                            &me,
                            ChartMsg::Done {
                                path: s.path,
                                id: s.id,
                                generation: s.generation,
                                result: Err(Value::String("not delivered".into())),
                            },
                        );
                        Running::Nothing
                    }
                }
            }),
        }
    }

    /// A child actor: `spawn` creates it under the chart, given the start
    /// record and a [`Reporter`] to send its result (and events) back.
    /// It returns the child's id and, for `sendTo`, how to send it events.
    pub fn child(
        spawn: impl Fn(
                &mut Context<'_, ChartActor<C, X>>,
                &Started,
                Reporter<X::Msg>,
            ) -> Option<(turno::ActorId, Option<Sender>)>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        Service {
            start: Arc::new(move |ctx, _: &mut X, _: &Snapshot<C>, s: Started| {
                let reporter = Reporter {
                    parent: ctx.addr(),
                    path: s.path.clone(),
                    id: s.id.clone(),
                    generation: s.generation,
                };
                match spawn(ctx, &s, reporter) {
                    Some((child, sender)) => Running::Child(child, sender),
                    None => Running::Nothing,
                }
            }),
        }
    }

    /// An invocation started by the application itself, with its
    /// [`Extension`] and the chart's snapshot at hand (the actor's own
    /// chart, after the macrostep that started it). `start` returns what
    /// to stop when the state is left; the result comes back as
    /// [`Started::done`] (a [`ChartMsg::Done`] sent to the chart, typically
    /// from `Context::pipe` or `Context::ask`).
    pub fn custom(
        start: impl Fn(&mut Context<'_, ChartActor<C, X>>, &mut X, &Snapshot<C>, Started) -> Running
            + Send
            + Sync
            + 'static,
    ) -> Self {
        Service {
            start: Arc::new(start),
        }
    }

    /// A future run off-turn on tokio (`Context::pipe`); its output is the
    /// invocation's result. Stopping the invocation aborts the task.
    #[cfg(feature = "tokio")]
    pub fn future<F>(make: impl Fn(Value) -> F + Send + Sync + 'static) -> Self
    where
        F: std::future::Future<Output = Result<Value, Value>> + Send + 'static,
    {
        Service {
            start: Arc::new(move |ctx, _: &mut X, _: &Snapshot<C>, s: Started| {
                let (id, generation) = (s.id.clone(), s.generation);
                let path = s.path.clone();
                let piped = ctx.pipe(make(s.input), None, move |resp| match resp {
                    Response::Reply(result) => ChartMsg::Done {
                        path: path.clone(),
                        id: id.clone(),
                        generation,
                        result,
                    },
                    Response::TimedOut => ChartMsg::Lost {
                        path: path.clone(),
                        id: id.clone(),
                        generation,
                    },
                });
                match piped {
                    Ok(req) => Running::Request(req),
                    Err(e) => {
                        let me = ctx.addr();
                        let _ = ctx.send(
                            &me,
                            ChartMsg::Done {
                                path: s.path,
                                id: s.id,
                                generation: s.generation,
                                result: Err(Value::String(e.to_string())),
                            },
                        );
                        Running::Nothing
                    }
                }
            }),
        }
    }
}

/// Lets a child report back to the chart that started it.
pub struct Reporter<M: Send + 'static = NoExt> {
    parent: Addr<ChartMsg<M>>,
    path: Path,
    id: String,
    generation: u64,
}

impl<M: Send + 'static> Clone for Reporter<M> {
    fn clone(&self) -> Self {
        Reporter {
            parent: self.parent.clone(),
            path: self.path.clone(),
            id: self.id.clone(),
            generation: self.generation,
        }
    }
}

impl<M: Send + 'static> Reporter<M> {
    /// Reports the child's outcome: `xstate.done.actor.<id>` or
    /// `xstate.error.actor.<id>`. Stale if the chart left the state.
    pub fn done(&self, result: Result<Value, Value>) -> turno::Verdict<ChartMsg<M>> {
        self.parent.try_send(ChartMsg::Done {
            path: self.path.clone(),
            id: self.id.clone(),
            generation: self.generation,
            result,
        })
    }

    /// Sends an event to the chart (a child's `sendParent`).
    pub fn send(&self, event: Event) -> turno::Verdict<ChartMsg<M>> {
        self.parent.try_send(ChartMsg::Event(event))
    }

    /// As a [`Sender`], for a child chart's [`ChartActor::with_parent`].
    pub fn sender(&self) -> Sender {
        let parent = self.parent.clone();
        Arc::new(move |e| parent.try_send(ChartMsg::Event(e)).is_enqueued())
    }
}

/// Counters of one chart actor, readable from outside.
#[derive(Debug, Default)]
pub struct ChartStats {
    macrosteps: AtomicU64,
    stale_results: AtomicU64,
    stale_timers: AtomicU64,
}

impl ChartStats {
    /// Macrosteps run (the initial one included).
    pub fn macrosteps(&self) -> u64 {
        self.macrosteps.load(Ordering::Relaxed)
    }
    /// Invocation results that arrived after their invocation had stopped:
    /// dropped, never delivered.
    pub fn stale_results(&self) -> u64 {
        self.stale_results.load(Ordering::Relaxed)
    }
    /// Timer messages whose schedule had been cancelled or replaced.
    pub fn stale_timers(&self) -> u64 {
        self.stale_timers.load(Ordering::Relaxed)
    }
}

/// Hooks for actions the interpreter hands back to the application.
type CustomFn<C, X> =
    Box<dyn FnMut(&mut Context<'_, ChartActor<C, X>>, &str, &Value, &Event) + Send>;
type LogFn = Box<dyn FnMut(&str) + Send>;
type DoneFn = Box<dyn FnMut(Status, Option<&Value>) + Send>;
type PersistFn<C> = Box<dyn FnMut(&Snapshot<C>) + Send>;
type PersistTreeFn<C> = Box<dyn FnMut(&Tree<C>) + Send>;
type RestoreFn<C> =
    Box<dyn FnOnce(Clock, Arc<Charts<C>>) -> Result<RestoredTree<C>, RestoreError> + Send>;

/// A statechart running as a turno actor. See the [module docs](self).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use turno::{DetSystem, Props, System};
/// use turno_chart::interpreter::{ChartActor, ChartMsg};
/// use turno_chart::{load_json, stdlib, Event};
///
/// let m = Arc::new(load_json::<serde_json::Value>(r#"{"initial": "idle", "states": {
///     "idle": {"on": {"GO": "busy"}},
///     "busy": {"after": {"100": "idle"}}}}"#, &stdlib::implementations()).unwrap());
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let s = seen.clone();
/// let mut sys = DetSystem::new(1);
/// let chart = sys.spawn(Props::new(), move || {
///     let s = s.clone();
///     ChartActor::new(m.clone()).on_snapshot(move |v, _| s.lock().unwrap().push(v.to_string()))
/// }).unwrap();
/// sys.run_until_idle().unwrap();
/// assert!(chart.try_send(ChartMsg::Event(Event::new("GO"))).is_enqueued());
/// sys.advance(std::time::Duration::from_millis(100)).unwrap();
/// assert_eq!(*seen.lock().unwrap(), [r#""idle""#, r#""busy""#, r#""idle""#]);
/// ```
pub struct ChartActor<C: Clone + Send + Sync + 'static, X: Extension<C> = ()> {
    machine: Arc<Machine<C>>,
    tree: Option<Tree<C>>,
    /// Scratch for each macrostep's actions (kept to reuse its capacity).
    actions: Vec<Action>,
    /// What an idle chart of a plain machine never touches (services,
    /// timers, invocations, children, hooks, subscribers, counters): boxed
    /// on first use, so an idle chart actor is its tree and six words.
    rare: Option<Box<Rare<C, X>>>,
    defined: bool,
    ext: X,
}

/// The parts of a [`ChartActor`] that most charts never use.
struct Rare<C: Clone + Send + Sync + 'static, X: Extension<C>> {
    charts: Option<Arc<Charts<C>>>,
    services: Option<Arc<HashMap<String, Service<C, X>>>>,
    timers: HashMap<(Path, String, u64), TimerId>,
    running: HashMap<(Path, String, u64), Running>,
    children: HashMap<(Path, String), (turno::ActorId, Option<Sender>)>,
    parent: Option<Sender>,
    on_snapshot: Vec<SnapshotFn>,
    on_emit: Vec<EmitFn>,
    on_custom: Option<CustomFn<C, X>>,
    on_log: Option<LogFn>,
    on_done: Option<DoneFn>,
    on_persist: Vec<PersistFn<C>>,
    on_persist_tree: Vec<PersistTreeFn<C>>,
    restore: Option<RestoreFn<C>>,
    epoch_ms: Option<u64>,
    stats: Option<Arc<ChartStats>>,
    /// The transitions the last macrostep took ([`Extension::TAKEN`]).
    taken: Vec<u32>,
}

impl<C: Clone + Send + Sync + 'static, X: Extension<C>> Default for Rare<C, X> {
    fn default() -> Self {
        Rare {
            charts: None,
            services: None,
            timers: HashMap::new(),
            running: HashMap::new(),
            children: HashMap::new(),
            parent: None,
            on_snapshot: Vec::new(),
            on_emit: Vec::new(),
            on_custom: None,
            on_log: None,
            on_done: None,
            on_persist: Vec::new(),
            on_persist_tree: Vec::new(),
            restore: None,
            epoch_ms: None,
            stats: None,
            taken: Vec::new(),
        }
    }
}

impl<C: Clone + Send + Sync + 'static> ChartActor<C> {
    /// A chart actor for `machine`, with no services.
    pub fn new(machine: Arc<Machine<C>>) -> Self {
        ChartActor::with_extension(machine, ())
    }
}

impl<C: Clone + Send + Sync + 'static, X: Extension<C>> ChartActor<C, X> {
    /// A chart actor for `machine` with an [`Extension`]: the
    /// application's own messages and state, handled in the chart's turns
    /// (see the [module docs](self#extensions-requests-in-the-charts-turn)).
    pub fn with_extension(machine: Arc<Machine<C>>, ext: X) -> Self {
        ChartActor {
            machine,
            tree: None,
            actions: Vec::new(),
            rare: None,
            defined: false,
            ext,
        }
    }

    /// The extension.
    pub fn extension(&self) -> &X {
        &self.ext
    }

    /// The machine.
    pub fn machine(&self) -> &Arc<Machine<C>> {
        &self.machine
    }

    /// The rare parts, boxed now if they were not yet.
    fn rare(&mut self) -> &mut Rare<C, X> {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The services `invoke.src` and `spawnChild` name (shared between
    /// instances: build the map once).
    pub fn with_services(mut self, services: Arc<HashMap<String, Service<C, X>>>) -> Self {
        self.rare().services = Some(services);
        self
    }

    /// Invoked child charts: an `invoke.src` named in `charts` starts that
    /// chart **inside this actor**, in the same [`Tree`] as this chart
    /// (see [`tree`](crate::tree) for what passes between them, and why:
    /// a snapshot of the tree is consistent between two turns). The
    /// children's timers are this actor's timers; their invocations of
    /// other sources start from [`with_services`](Self::with_services),
    /// their `emit`, `log` and custom actions reach this actor's hooks.
    pub fn with_charts(mut self, charts: Arc<Charts<C>>) -> Self {
        self.rare().charts = (!charts.is_empty()).then_some(charts);
        self
    }

    /// Where `sendParent` goes.
    pub fn with_parent(mut self, parent: Sender) -> Self {
        self.rare().parent = Some(parent);
        self
    }

    /// Shares counters with the caller (see [`ChartStats`]).
    pub fn with_stats(mut self, stats: Arc<ChartStats>) -> Self {
        self.rare().stats = Some(stats);
        self
    }

    /// Calls `f` with the state value and status after every macrostep.
    pub fn on_snapshot(mut self, f: impl FnMut(&Value, Status) + Send + 'static) -> Self {
        self.rare().on_snapshot.push(Box::new(f));
        self
    }

    /// Calls `f` for every emitted event.
    pub fn on_emit(mut self, f: impl FnMut(&Event) + Send + 'static) -> Self {
        self.rare().on_emit.push(Box::new(f));
        self
    }

    /// Executes custom actions ([`Action::Custom`]).
    pub fn on_custom(
        mut self,
        f: impl FnMut(&mut Context<'_, ChartActor<C, X>>, &str, &Value, &Event) + Send + 'static,
    ) -> Self {
        self.rare().on_custom = Some(Box::new(f));
        self
    }

    /// Receives `log` lines.
    pub fn on_log(mut self, f: impl FnMut(&str) + Send + 'static) -> Self {
        self.rare().on_log = Some(Box::new(f));
        self
    }

    /// Calls `f` with the whole snapshot after every macrostep (what
    /// [`persist`](crate::persist) writes), **before** the macrostep's
    /// effects are carried out: a hook that writes the snapshot durably
    /// (synchronously) makes it a write-ahead record, so no invocation
    /// starts, no event leaves and no timer is armed that a crash could
    /// hide from the restored chart.
    pub fn on_persist(mut self, f: impl FnMut(&Snapshot<C>) + Send + 'static) -> Self {
        self.rare().on_persist.push(Box::new(f));
        self
    }

    /// [`on_persist`](Self::on_persist) for a chart with invoked child
    /// charts: `f` gets the whole [`Tree`] (write it with
    /// [`Persist::tree_to_string`](crate::persist::Persist::tree_to_string)),
    /// at the same point, so the record holds parent and children as they
    /// were between two turns.
    pub fn on_persist_tree(mut self, f: impl FnMut(&Tree<C>) + Send + 'static) -> Self {
        self.rare().on_persist_tree.push(Box::new(f));
        self
    }

    /// Says where this system's clock is in real time: it read 0 at
    /// wall-clock `epoch_ms` (ms since the Unix epoch). The chart's
    /// snapshots carry it ([`Snapshot::epoch_ms`]), and a
    /// [restore](Self::restoring) is given it, so a chart persisted by one
    /// process resumes in another with every deadline at the same
    /// wall-clock time. On `ThreadedSystem`:
    /// `with_epoch(persist::wall_epoch_ms(sys.now()))`, computed once per
    /// system; on `DetSystem`, any fixed number (virtual wall time). Without
    /// it, snapshots restore on this system's clock only.
    pub fn with_epoch(mut self, epoch_ms: u64) -> Self {
        self.rare().epoch_ms = Some(epoch_ms);
        self
    }

    /// Starts from a restored snapshot instead of the initial state: in
    /// its first turn the actor calls `f` with its [`Clock`] (the system's
    /// ms and the [epoch](Self::with_epoch), if given) and carries out the
    /// actions it returns (re-armed timers, re-run idempotent invocations);
    /// no entry action of the restored configuration runs. Typically `f` is
    /// `move |at| Persist::new(&m).sanitizer(s).restore(&text, at)`. A
    /// failed restore fails the actor (its supervisor decides); nothing is
    /// half-restored.
    ///
    /// A snapshot persisted by another process (a crash, a deploy) resumes
    /// here when both sides know their epoch: see [`Clock`].
    pub fn restoring(
        mut self,
        f: impl FnOnce(Clock) -> Result<Restored<C>, RestoreError> + Send + 'static,
    ) -> Self {
        self.rare().restore = Some(Box::new(move |at, charts| {
            let r = f(at)?;
            let actions = r
                .actions
                .into_iter()
                .map(|action| Tagged {
                    path: Vec::new(),
                    action,
                })
                .collect();
            Ok(RestoredTree {
                tree: Tree::new(r.snapshot, charts),
                actions,
                decisions: Vec::new(),
                volatile_missing: Vec::new(),
            })
        }));
        self
    }

    /// [`restoring`](Self::restoring) a chart with invoked child charts:
    /// `f` is given the clock and this actor's [charts](Self::with_charts),
    /// typically `move |at, charts| Persist::new(&m).restore_tree(&text,
    /// charts, at)`. Every child chart comes back in the state its nested
    /// snapshot holds, its timers re-armed at their deadlines; none is
    /// started again.
    pub fn restoring_tree(
        mut self,
        f: impl FnOnce(Clock, Arc<Charts<C>>) -> Result<RestoredTree<C>, RestoreError> + Send + 'static,
    ) -> Self {
        self.rare().restore = Some(Box::new(f));
        self
    }

    /// Called once when the chart is done (or failed) with its output or
    /// error; a child chart uses it to report to its parent.
    pub fn on_done(mut self, f: impl FnMut(Status, Option<&Value>) + Send + 'static) -> Self {
        self.rare().on_done = Some(Box::new(f));
        self
    }

    /// The current snapshot (`None` before the actor's first turn).
    pub fn snapshot(&self) -> Option<&Snapshot<C>> {
        self.tree.as_ref().map(Tree::root)
    }

    /// The chart and its invoked child charts (`None` before the first turn).
    pub fn tree(&self) -> Option<&Tree<C>> {
        self.tree.as_ref()
    }

    fn define(&mut self, ctx: &Context<'_, Self>) {
        self.defined = true;
        if !ctx.tracing() {
            return;
        }
        let m = &self.machine;
        let states = m
            .states()
            .iter()
            .skip(1)
            .map(|s| {
                let (kind, history) = match s.kind {
                    StateKind::Atomic => (trace::StateKind::Atomic, None),
                    StateKind::Compound => (trace::StateKind::Compound, None),
                    StateKind::Parallel => (trace::StateKind::Parallel, None),
                    StateKind::Final => (trace::StateKind::Final, None),
                    StateKind::History { deep } => (
                        trace::StateKind::History,
                        Some(if deep {
                            trace::HistoryDepth::Deep
                        } else {
                            trace::HistoryDepth::Shallow
                        }),
                    ),
                };
                let parent = s
                    .parent
                    .filter(|&p| p != 0)
                    .map(|p| m.state(p).id.to_string());
                trace::ChartStateDef {
                    id: s.id.to_string(),
                    parent,
                    kind,
                    history,
                    initial: s.initial.map(|i| m.state(i).id.to_string()),
                }
            })
            .collect();
        let transitions = m
            .transitions()
            .iter()
            .map(|t| trace::ChartTransitionDef {
                source: m.state(t.source).id.to_string(),
                event: t.event.as_deref().map(str::to_string),
                targets: t
                    .targets
                    .iter()
                    .map(|&x| m.state(x).id.to_string())
                    .collect(),
                guard: t.guard.as_ref().map(crate::mermaid::guard_label),
                delay: t.delay_label.clone(),
                actions: t.actions.iter().map(|a| a.name.to_string()).collect(),
            })
            .collect();
        let root = m.state(0);
        ctx.trace_chart(ChartStep::Define {
            machine: m.id().to_string(),
            states,
            transitions,
            root: Some(root.id.to_string()),
            initial: root.initial.map(|i| m.state(i).id.to_string()),
            root_kind: Some(if root.kind == StateKind::Parallel {
                trace::StateKind::Parallel
            } else {
                trace::StateKind::Compound
            }),
        });
    }

    /// Runs `f` (one pure macrostep) on the chart at `path` (the trace
    /// inspector sees this actor's own chart), then what it causes in the
    /// tree, the write-ahead hooks and the effects. The snapshot is
    /// stepped where it lies, never moved.
    fn step(
        &mut self,
        ctx: &mut Context<'_, Self>,
        path: &[String],
        f: impl FnOnce(
            &Machine<C>,
            &mut Snapshot<C>,
            &mut Vec<Action>,
            Option<&mut dyn FnMut(Inspect<'_>)>,
        ) -> Result<Delivery, ChartError>,
    ) -> Delivery {
        let now = ctx.now().since_start().as_millis() as u64;
        let m = &*self.machine;
        let tree = self.tree.as_mut().expect("started");
        tree.set_now(now);
        let actions = &mut self.actions;
        if let Some(r) = self.rare.as_mut().filter(|_| X::TAKEN) {
            r.taken.clear();
        }
        let result = if path.is_empty() && (ctx.tracing() || X::TAKEN) {
            let cx = &*ctx;
            let tracing = cx.tracing();
            let mut taken = X::TAKEN.then(|| &mut self.rare.get_or_insert_with(Box::default).taken);
            let mut record = |step: Inspect<'_>| {
                if let (Some(t), Inspect::Transition { index, .. }) = (&mut taken, &step) {
                    t.push(*index);
                }
                if tracing {
                    trace_step(cx, m, step);
                }
            };
            Some(f(m, tree.root_mut(), actions, Some(&mut record)))
        } else {
            tree.on(m, path, |cm, snap| f(cm, snap, actions, None))
        };
        let delivery = match result {
            Some(Ok(Delivery::Delivered)) if actions.is_empty() && tree.children.is_empty() => {
                Ok((Delivery::Delivered, Vec::new()))
            }
            Some(Ok(Delivery::Delivered)) => tree
                .absorb(m, path, std::mem::take(actions))
                .map(|out| (Delivery::Delivered, out)),
            None | Some(Ok(Delivery::Stale)) => Ok((Delivery::Stale, Vec::new())),
            Some(Err(e)) => Err(e),
        };
        let (delivery, mut out) = delivery.unwrap_or_else(|e| panic!("chart {:?}: {e}", m.id()));
        actions.clear();
        if delivery == Delivery::Delivered {
            self.persist();
            self.stepped(ctx, &out);
        }
        if !out.is_empty() {
            self.execute(ctx, &mut out);
        }
        if delivery == Delivery::Delivered {
            self.count_macrostep();
            self.notify(ctx);
        }
        delivery
    }

    /// The macrostep for an external event.
    fn event(&mut self, ctx: &mut Context<'_, Self>, event: Event) {
        self.step(ctx, &[], |m, s, a, i| {
            transition_inspected(m, s, event, a, i).map(|()| Delivery::Delivered)
        });
    }

    /// The extension's hook, after the write-ahead hooks.
    fn stepped(&mut self, ctx: &mut Context<'_, Self>, actions: &[Tagged]) {
        let snapshot = self.tree.as_ref().expect("started").root();
        let taken = self.rare.as_ref().map_or(&[][..], |r| &r.taken);
        self.ext.stepped(
            ctx,
            Stepped {
                machine: &self.machine,
                snapshot,
                actions,
                taken,
            },
        );
    }

    fn count_macrostep(&self) {
        if let Some(stats) = self.rare.as_ref().and_then(|r| r.stats.as_ref()) {
            stats.macrosteps.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn count(&self, counter: impl Fn(&ChartStats) -> &AtomicU64) {
        if let Some(stats) = self.rare.as_ref().and_then(|r| r.stats.as_ref()) {
            counter(stats).fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The write-ahead hooks: before the macrostep's effects.
    fn persist(&mut self) {
        let (Some(tree), Some(rare)) = (self.tree.as_ref(), self.rare.as_mut()) else {
            return;
        };
        for f in &mut rare.on_persist {
            f(tree.root());
        }
        for f in &mut rare.on_persist_tree {
            f(tree);
        }
    }

    fn notify(&mut self, ctx: &mut Context<'_, Self>) {
        let snap = self.tree.as_ref().expect("started").root();
        if let Some(rare) = self.rare.as_mut().filter(|r| !r.on_snapshot.is_empty()) {
            let value = snap.value(&self.machine).to_json();
            for f in &mut rare.on_snapshot {
                f(&value, snap.status);
            }
        }
        if snap.status != Status::Active {
            let status = snap.status;
            let payload = snap.output.clone().or_else(|| snap.error.clone());
            if let Some(mut f) = self.rare.as_mut().and_then(|r| r.on_done.take()) {
                f(status, payload.as_deref());
            }
            ctx.stop();
        }
    }

    fn execute(&mut self, ctx: &mut Context<'_, Self>, actions: &mut Vec<Tagged>) {
        let now = ctx.now().since_start().as_millis() as u64;
        let rare = self.rare.get_or_insert_with(Box::default);
        let ext = &mut self.ext;
        let root = self.tree.as_ref().expect("started").root();
        for Tagged { path, action } in actions.drain(..) {
            match action {
                Action::Schedule { id, seq, due_ms } => {
                    let delay = Duration::from_millis(due_ms.saturating_sub(now));
                    let t = ctx.send_after(
                        delay,
                        ChartMsg::Timer {
                            path: path.clone(),
                            id: id.clone(),
                            seq,
                        },
                    );
                    rare.timers.insert((path, id, seq), t);
                }
                Action::Unschedule { id, seq } => {
                    if let Some(t) = rare.timers.remove(&(path, id, seq)) {
                        ctx.cancel_timer(t);
                    }
                }
                Action::StartInvoke {
                    id,
                    src,
                    input,
                    generation,
                } => {
                    let service = rare.services.as_ref().and_then(|s| s.get(&src)).cloned();
                    let running = match service {
                        Some(service) => (service.start)(
                            ctx,
                            ext,
                            root,
                            Started {
                                path: path.clone(),
                                id: id.clone(),
                                generation,
                                input,
                            },
                        ),
                        None => {
                            let me = ctx.addr();
                            let _ = ctx.send(
                                &me,
                                ChartMsg::Done {
                                    path: path.clone(),
                                    id: id.clone(),
                                    generation,
                                    result: Err(Value::String(format!("no service {src:?}"))),
                                },
                            );
                            Running::Nothing
                        }
                    };
                    if let Running::Child(child, sender) = &running {
                        rare.children
                            .insert((path.clone(), id.clone()), (*child, sender.clone()));
                    }
                    rare.running.insert((path, id, generation), running);
                }
                Action::StopInvoke { id, generation } => {
                    if let Some(r) = rare.running.remove(&(path.clone(), id.clone(), generation)) {
                        stop_running(ctx, r);
                        rare.children.remove(&(path, id));
                    }
                }
                Action::SendTo { to, event } => {
                    if let Some((_, Some(send))) = rare.children.get(&(path, to)) {
                        send(event);
                    }
                }
                Action::SendParent { event } => {
                    // Only this actor's own chart gets here: a child
                    // chart's go to its parent in the tree.
                    if let Some(p) = &rare.parent {
                        p(event);
                    }
                }
                Action::Emit { event } => {
                    for f in &mut rare.on_emit {
                        f(&event);
                    }
                }
                Action::Log { message } => {
                    if let Some(f) = &mut rare.on_log {
                        f(&message);
                    }
                }
                Action::Custom {
                    name,
                    params,
                    event,
                } => {
                    if let Some(f) = &mut rare.on_custom {
                        f(ctx, &name, &params, &event);
                    }
                }
            }
        }
    }
}

fn stop_running<C: Clone + Send + Sync + 'static, X: Extension<C>>(
    ctx: &mut Context<'_, ChartActor<C, X>>,
    r: Running,
) {
    match r {
        Running::Request(req) => {
            ctx.abandon(req);
        }
        Running::Child(child, _) => ctx.stop_actor(child),
        Running::Nothing => {}
    }
}

fn trace_step<A: Actor, C>(ctx: &Context<'_, A>, m: &Machine<C>, step: Inspect<'_>) {
    let id = |s| m.state(s).id.to_string();
    ctx.trace_chart(match step {
        Inspect::Event { event, internal } => ChartStep::Event {
            event: event.name().to_string(),
            internal,
        },
        Inspect::Exit(s) => ChartStep::Exit(id(s)),
        Inspect::Enter(s) => ChartStep::Enter(id(s)),
        Inspect::Transition {
            source,
            event,
            targets,
            index,
        } => ChartStep::Transition {
            source: id(source),
            event: event.map(str::to_string),
            targets: targets.iter().map(|&t| id(t)).collect(),
            index: Some(index),
        },
    });
}

impl<C: Clone + Send + Sync + 'static, X: Extension<C>> Actor for ChartActor<C, X> {
    type Msg = ChartMsg<X::Msg>;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        if !self.defined {
            self.define(ctx);
        }
        // A restarted instance starts from the initial state again.
        let now = ctx.now().since_start().as_millis() as u64;
        let m = self.machine.clone();
        let (epoch_ms, charts, has_parent) = match &self.rare {
            Some(r) => (r.epoch_ms, r.charts.clone(), r.parent.is_some()),
            None => (None, None, false),
        };
        if let Some(restore) = self.rare.as_mut().and_then(|r| r.restore.take()) {
            let charts = charts.unwrap_or_else(|| Arc::new(Charts::new()));
            let r = restore(Clock::new(now, epoch_ms), charts)
                .unwrap_or_else(|e| panic!("chart {:?}: restore: {e}", m.id()));
            let mut tree = r.tree;
            tree.root_mut().has_parent = has_parent;
            self.tree = Some(tree);
            if let Some(r) = self.rare.as_mut() {
                r.taken.clear();
            }
            let mut out = r.actions;
            self.persist();
            self.stepped(ctx, &out);
            self.execute(ctx, &mut out);
            self.notify(ctx);
            return;
        }
        let mut actions = std::mem::take(&mut self.actions);
        let snap = if ctx.tracing() || X::TAKEN {
            let cx = &*ctx;
            let tracing = cx.tracing();
            let mut taken = X::TAKEN.then(|| {
                let t = &mut self.rare.get_or_insert_with(Box::default).taken;
                t.clear();
                t
            });
            let mut record = |step: Inspect<'_>| {
                if let (Some(t), Inspect::Transition { index, .. }) = (&mut taken, &step) {
                    t.push(*index);
                }
                if tracing {
                    trace_step(cx, &m, step);
                }
            };
            initial_transition_for(&m, now, has_parent, &mut actions, Some(&mut record))
        } else {
            initial_transition_for(&m, now, has_parent, &mut actions, None)
        };
        let mut snap = snap.unwrap_or_else(|e| panic!("chart {:?}: {e}", m.id()));
        snap.epoch_ms = epoch_ms;
        let mut tree = match charts {
            Some(charts) => Tree::new(snap, charts),
            None => Tree::bare(snap),
        };
        let mut out = if actions.is_empty() {
            Vec::new()
        } else {
            tree.absorb(&m, &[], std::mem::take(&mut actions))
                .unwrap_or_else(|e| panic!("chart {:?}: {e}", m.id()))
        };
        self.tree = Some(tree);
        self.persist();
        self.stepped(ctx, &out);
        if !out.is_empty() {
            self.execute(ctx, &mut out);
        }
        actions.clear();
        self.actions = actions;
        self.count_macrostep();
        self.notify(ctx);
    }

    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: ChartMsg<X::Msg>) {
        match msg {
            ChartMsg::Event(event) => self.event(ctx, event),
            ChartMsg::Ext(msg) => X::handle(&mut Turn { actor: self, ctx }, msg),
            ChartMsg::Timer { path, id, seq } => {
                if let Some(r) = &mut self.rare {
                    r.timers.remove(&(path.clone(), id.clone(), seq));
                }
                let d = self.step(ctx, &path, |m, s, a, i| {
                    fire_scheduled_inspected(m, s, &id, seq, a, i)
                });
                if d == Delivery::Stale {
                    self.count(|s| &s.stale_timers);
                }
            }
            ChartMsg::Done {
                path,
                id,
                generation,
                result,
            } => {
                if let Some(r) = &mut self.rare {
                    r.running.remove(&(path.clone(), id.clone(), generation));
                }
                let d = self.step(ctx, &path, |m, s, a, i| {
                    invocation_done_inspected(m, s, &id, generation, result, a, i)
                });
                if d == Delivery::Stale {
                    self.count(|s| &s.stale_results);
                } else if let Some(r) = &mut self.rare {
                    r.children.remove(&(path, id));
                }
            }
            ChartMsg::Lost {
                path,
                id,
                generation,
            } => {
                if let Some(r) = &mut self.rare {
                    r.running.remove(&(path, id, generation));
                }
                self.count(|s| &s.stale_results);
            }
            ChartMsg::Subscribe(f) => self.rare().on_snapshot.push(f),
            ChartMsg::SubscribeEmitted(f) => self.rare().on_emit.push(f),
        }
    }

    fn stopped(&mut self, ctx: &mut Context<'_, Self>) {
        if let Some(r) = &mut self.rare {
            for (_, run) in r.running.drain() {
                stop_running(ctx, run);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idle chart actor is its tree (the snapshot and two words) and a
    /// few words: everything else is behind the box allocated on first use.
    #[test]
    fn an_idle_chart_actor_is_its_tree_and_six_words() {
        assert_eq!(
            std::mem::size_of::<ChartActor<Value>>(),
            std::mem::size_of::<Tree<Value>>() + 6 * std::mem::size_of::<usize>(),
        );
    }
}
