//! A typed Rust builder for machines: the context is any `Clone` Rust type,
//! events are Rust types ([`EventType`], serde-serializable), guards and
//! actions are closures that receive the event already decoded as its type,
//! or named implementations registered as XState's `setup()` does.
//!
//! What the compiler checks: a transition declared with `on::<E>` can only
//! have guards and actions over `&E` (and the context type), so a guard
//! cannot read a field its event does not have. What [`Chart::build`]
//! checks, as the JSON loader does: targets, initial states, ids and named
//! implementations, each error naming its place as the JSON path of the
//! equivalent XState config (`$.states.form.on.SUBMIT[0]`).
//!
//! ```
//! use serde::{Deserialize, Serialize};
//! use turno_chart::builder::{Chart, EventType};
//! use turno_chart::{initial_transition, transition};
//!
//! /// The context: any `Clone` type (serde too, to persist snapshots).
//! #[derive(Clone, Default, Serialize, Deserialize)]
//! struct Form { name: String, submits: u32 }
//!
//! /// Events: each is its own type, named as XState's `type`.
//! #[derive(Serialize, Deserialize)]
//! struct Edit { name: String }
//! impl EventType for Edit { const NAME: &'static str = "EDIT"; }
//!
//! #[derive(Serialize, Deserialize)]
//! struct Submit;
//! impl EventType for Submit { const NAME: &'static str = "SUBMIT"; }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let m = Chart::new("signup")
//!     .initial("editing")
//!     .state("editing", |s| {
//!         // `e` is an `&Edit`: its fields are checked by the compiler.
//!         s.on::<Edit>(|t| t.assign(|ctx: &mut Form, e| ctx.name = e.name.clone()))
//!             .on::<Submit>(|t| {
//!                 t.target("sent")
//!                     .guard(|ctx, _| !ctx.name.is_empty())
//!                     .assign(|ctx, _| ctx.submits += 1)
//!             })
//!     })
//!     .final_state("sent")
//!     .build(Form::default())?;
//!
//! let (s, _) = initial_transition(&m)?;
//! let (s, _) = transition(&m, &s, Submit.event()?)?;
//! assert_eq!(s.value(&m).to_json(), "editing"); // the guard failed
//! let (s, _) = transition(&m, &s, Edit { name: "Ada".into() }.event()?)?;
//! let (s, _) = transition(&m, &s, Submit.event()?)?;
//! assert_eq!(s.value(&m).to_json(), "sent");
//! assert_eq!(s.context.submits, 1);
//! # Ok(())
//! # }
//! ```
//!
//! The same machine as XState v5 JSON would be
//! `{"id": "signup", "initial": "editing", "states": {"editing": {"on":
//! {"EDIT": {"actions": ...}, "SUBMIT": {"target": "sent", "guard": ...,
//! "actions": ...}}}, "sent": {"type": "final"}}}`: each builder call is
//! one key of that config, and [`Chart::build`]'s errors name it.

use std::marker::PhantomData;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::actions::{ActionFn, ActionScope, GuardFn};
use crate::event::Event;
use crate::implementations::Implementations;
use crate::machine::{BuildError, Machine, Problem};
use crate::spec::{
    ActionSpec, DelaySpec, GuardSpec, InitialSpec, InvokeSpec, KindSpec, OutputSpec, StateSpec,
    TransitionSpec,
};

/// An event as a Rust type: its name (XState's `type`) and its payload,
/// the type's serde form (an object of fields; a unit struct has none).
pub trait EventType: Serialize + DeserializeOwned + 'static {
    /// The event's name.
    const NAME: &'static str;

    /// The chart event: `NAME` with this value's fields. Fails only when
    /// the type does not serialize to JSON (a map with non-string keys).
    fn event(&self) -> Result<Event, serde_json::Error> {
        Ok(Event::with_data(Self::NAME, serde_json::to_value(self)?))
    }

    /// Decodes a chart event: `None` when the name differs or the payload
    /// does not deserialize as this type. An event without payload decodes
    /// as a unit struct, or as `{}` (a struct of optional fields).
    fn from_event(event: &Event) -> Option<Self> {
        if event.name() != Self::NAME {
            return None;
        }
        match serde_json::from_value(event.data().clone()) {
            Ok(v) => Some(v),
            // No payload at all: a struct whose fields are all optional
            // (or defaulted) still decodes, as from `{}`.
            Err(_) if event.data().is_null() => {
                serde_json::from_value(Value::Object(serde_json::Map::new())).ok()
            }
            Err(_) => None,
        }
    }
}

/// What the closures of a transition receive as the event: an
/// [`EventType`], or the raw [`Event`] (for `always`, `after`, `onDone`,
/// wildcards).
pub trait Payload: Sized + 'static {
    /// Decodes the event being processed.
    fn decode(event: &Event) -> Option<Self>;
}

impl<T: EventType> Payload for T {
    fn decode(event: &Event) -> Option<Self> {
        T::from_event(event)
    }
}

impl Payload for Event {
    fn decode(event: &Event) -> Option<Self> {
        Some(event.clone())
    }
}

/// A machine under construction: its root state, named implementations
/// for `guard_named`/`action_named`/`invoke`, and a version.
pub struct Chart<C> {
    root: StateBuilder<C>,
    version: Option<String>,
}

impl<C: Clone + Send + Sync + 'static> Chart<C> {
    /// A machine with this id (the root's id; state ids default to
    /// `id.path.to.state`).
    pub fn new(id: impl Into<String>) -> Self {
        Self::with_implementations(id, Implementations::new())
    }

    /// A machine whose named guards, actions, delays and actors come from
    /// `imp` (XState's `setup()`).
    pub fn with_implementations(id: impl Into<String>, imp: Implementations<C>) -> Self {
        let id = id.into();
        Chart {
            root: StateBuilder::new(id, "$".into(), Arc::new(imp)),
            version: None,
        }
    }

    /// The machine's `version` (kept in snapshots; see `persist`).
    pub fn version(mut self, v: impl Into<String>) -> Self {
        self.version = Some(v.into());
        self
    }

    /// Compiles the machine with its initial context: every target,
    /// initial state, id and name is checked here.
    pub fn build(self, context: C) -> Result<Machine<C>, BuildError> {
        let root = self.root.finish()?;
        Machine::new(root, context, self.version)
    }

    /// Changes the root state (anything a [`StateBuilder`] can declare).
    pub fn root(mut self, f: impl FnOnce(StateBuilder<C>) -> StateBuilder<C>) -> Self {
        self.root = f(self.root);
        self
    }

    /// The root's initial child.
    pub fn initial(self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.root(|s| s.initial(key))
    }

    /// Makes the root a parallel state.
    pub fn parallel(self) -> Self {
        self.root(StateBuilder::parallel)
    }

    /// A child of the root.
    pub fn state(
        self,
        key: impl Into<String>,
        f: impl FnOnce(StateBuilder<C>) -> StateBuilder<C>,
    ) -> Self {
        let key = key.into();
        self.root(|s| s.state(key, f))
    }

    /// A final child of the root.
    pub fn final_state(self, key: impl Into<String>) -> Self {
        let key = key.into();
        self.root(|s| s.final_state(key))
    }

    /// A final child of the root, with more (its `output`, an id...).
    pub fn final_state_with(
        self,
        key: impl Into<String>,
        f: impl FnOnce(StateBuilder<C>) -> StateBuilder<C>,
    ) -> Self {
        let key = key.into();
        self.root(|s| s.final_state_with(key, f))
    }
}

/// One state: its children, transitions, actions and invocations.
pub struct StateBuilder<C> {
    spec: StateSpec<C>,
    imp: Arc<Implementations<C>>,
    /// The first problem met (an unknown named implementation); reported
    /// by [`Chart::build`].
    error: Option<BuildError>,
}

impl<C: Clone + Send + Sync + 'static> StateBuilder<C> {
    fn new(key: String, path: String, imp: Arc<Implementations<C>>) -> Self {
        StateBuilder {
            spec: StateSpec::new(key, path),
            imp,
            error: None,
        }
    }

    fn fail(&mut self, path: String, problem: Problem) {
        if self.error.is_none() {
            self.error = Some(BuildError { path, problem });
        }
    }

    fn finish(self) -> Result<StateSpec<C>, BuildError> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.spec),
        }
    }

    fn child(&mut self, key: String, f: impl FnOnce(Self) -> Self) {
        let path = format!("{}.states.{key}", self.spec.path);
        let child = f(StateBuilder::new(key, path, self.imp.clone()));
        match child.finish() {
            Ok(spec) => self.spec.states.push(spec),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(e);
                }
            }
        }
    }

    /// An explicit id (`"id"`), targetable as `#id`.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.spec.id = Some(id.into());
        self
    }

    /// The initial child (compound states).
    pub fn initial(mut self, key: impl Into<String>) -> Self {
        let path = format!("{}.initial", self.spec.path);
        self.spec.initial = Some(InitialSpec {
            target: key.into(),
            actions: Vec::new(),
            path,
        });
        self
    }

    /// Makes this a parallel state: every child is a region.
    pub fn parallel(mut self) -> Self {
        self.spec.kind = KindSpec::Parallel;
        self
    }

    /// A child state.
    pub fn state(mut self, key: impl Into<String>, f: impl FnOnce(Self) -> Self) -> Self {
        self.child(key.into(), f);
        self
    }

    /// A final child state.
    pub fn final_state(self, key: impl Into<String>) -> Self {
        self.final_state_with(key, |s| s)
    }

    /// A final child state, with more (its `output`, entry actions...).
    pub fn final_state_with(
        mut self,
        key: impl Into<String>,
        f: impl FnOnce(Self) -> Self,
    ) -> Self {
        self.child(key.into(), |mut s| {
            s.spec.kind = KindSpec::Final;
            f(s)
        });
        self
    }

    /// A history child state (`deep`: every atomic descendant, else the
    /// direct children); `default` targets it goes to when nothing was
    /// recorded (else the parent's initial state).
    pub fn history(mut self, key: impl Into<String>, deep: bool, default: &[&str]) -> Self {
        let default: Vec<String> = default.iter().map(|t| t.to_string()).collect();
        self.child(key.into(), |mut s| {
            s.spec.kind = KindSpec::History { deep };
            if !default.is_empty() {
                s.spec.history_target = Some(default);
            }
            s
        });
        self
    }

    /// A tag (`hasTag`).
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.spec.tags.push(tag.into());
        self
    }

    /// `meta`, kept as given.
    pub fn meta(mut self, meta: Value) -> Self {
        self.spec.meta = Some(meta);
        self
    }

    /// `description`, kept on the compiled state (`Machine::state`).
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.spec.description = Some(text.into());
        self
    }

    /// The state's `output` (final states and the root), from the context.
    pub fn output(mut self, f: impl Fn(&C) -> Value + Send + Sync + 'static) -> Self {
        self.spec.output = Some(OutputSpec::Fn(Arc::new(move |c, _| f(c))));
        self
    }

    /// An entry action.
    pub fn entry(mut self, f: impl Fn(&mut ActionScope<'_, C>) + Send + Sync + 'static) -> Self {
        self.spec.entry.push(closure_action("entry", f));
        self
    }

    /// An exit action.
    pub fn exit(mut self, f: impl Fn(&mut ActionScope<'_, C>) + Send + Sync + 'static) -> Self {
        self.spec.exit.push(closure_action("exit", f));
        self
    }

    /// A named entry action with its params.
    pub fn entry_named(mut self, name: &str, params: Value) -> Self {
        let path = format!("{}.entry", self.spec.path);
        if let Some(a) = self.named_action(name, params, path) {
            self.spec.entry.push(a);
        }
        self
    }

    fn named_action(&mut self, name: &str, params: Value, path: String) -> Option<ActionSpec<C>> {
        match self.imp.actions.get(name) {
            Some(imp) => Some(ActionSpec {
                name: name.to_string(),
                params,
                imp: imp.clone(),
            }),
            None => {
                self.fail(
                    path,
                    Problem::UnknownImplementation {
                        kind: "action",
                        name: name.to_string(),
                    },
                );
                None
            }
        }
    }

    /// A transition on the event type `E`: its closures see the event as
    /// an `&E`. An event named `E::NAME` whose payload does not decode as
    /// `E` does not take it. Several `on::<E>` are candidates in order.
    pub fn on<E: EventType>(
        self,
        f: impl FnOnce(TransitionBuilder<C, E>) -> TransitionBuilder<C, E>,
    ) -> Self {
        self.on_descriptor(E::NAME, |t| f(t).decoded())
    }

    /// A transition on an event descriptor as XState writes it (an exact
    /// name, `*` or `prefix.*`); its closures see the raw [`Event`].
    pub fn on_any(
        self,
        descriptor: &str,
        f: impl FnOnce(TransitionBuilder<C, Event>) -> TransitionBuilder<C, Event>,
    ) -> Self {
        self.on_descriptor(descriptor, f)
    }

    fn on_descriptor<E: Payload>(
        mut self,
        descriptor: &str,
        f: impl FnOnce(TransitionBuilder<C, E>) -> TransitionBuilder<C, E>,
    ) -> Self {
        let i = self
            .spec
            .on
            .iter()
            .position(|(d, _)| d == descriptor)
            .unwrap_or_else(|| {
                self.spec.on.push((descriptor.to_string(), Vec::new()));
                self.spec.on.len() - 1
            });
        let n = self.spec.on[i].1.len();
        let path = format!("{}.on.{descriptor}[{n}]", self.spec.path);
        if let Some(t) = self.transition(path, f) {
            self.spec.on[i].1.push(t);
        }
        self
    }

    fn transition<E: Payload>(
        &mut self,
        path: String,
        f: impl FnOnce(TransitionBuilder<C, E>) -> TransitionBuilder<C, E>,
    ) -> Option<TransitionSpec<C>> {
        let t = f(TransitionBuilder {
            spec: TransitionSpec::to(Vec::new(), path),
            imp: self.imp.clone(),
            error: None,
            decoded: false,
            _event: PhantomData,
        });
        match t.finish() {
            Ok(spec) => Some(spec),
            Err(e) => {
                if self.error.is_none() {
                    self.error = Some(e);
                }
                None
            }
        }
    }

    /// An eventless transition (`always`).
    pub fn always(
        mut self,
        f: impl FnOnce(TransitionBuilder<C, Event>) -> TransitionBuilder<C, Event>,
    ) -> Self {
        let path = format!("{}.always[{}]", self.spec.path, self.spec.always.len());
        if let Some(t) = self.transition(path, f) {
            self.spec.always.push(t);
        }
        self
    }

    /// A transition taken `ms` milliseconds after entry (`after`),
    /// cancelled when the state is left first.
    pub fn after(
        mut self,
        ms: u64,
        f: impl FnOnce(TransitionBuilder<C, Event>) -> TransitionBuilder<C, Event>,
    ) -> Self {
        let path = format!("{}.after.{ms}", self.spec.path);
        if let Some(t) = self.transition(path, f) {
            self.push_after(
                |d| matches!(d, DelaySpec::Ms(x) if *x == ms),
                || DelaySpec::Ms(ms),
                t,
            );
        }
        self
    }

    /// Adds `t` to the delay `same` finds among this state's `after`
    /// entries, or a new entry for `delay()`: one entry per delay, as in
    /// XState's `after` object.
    fn push_after(
        &mut self,
        same: impl Fn(&DelaySpec<C>) -> bool,
        delay: impl FnOnce() -> DelaySpec<C>,
        t: TransitionSpec<C>,
    ) {
        match self.spec.after.iter_mut().find(|(d, _)| same(d)) {
            Some((_, ts)) => ts.push(t),
            None => self.spec.after.push((delay(), vec![t])),
        }
    }

    /// A transition taken after the named delay (registered with
    /// [`Implementations::delay`]; computed from the context on entry).
    pub fn after_named(
        mut self,
        delay: &str,
        f: impl FnOnce(TransitionBuilder<C, Event>) -> TransitionBuilder<C, Event>,
    ) -> Self {
        let path = format!("{}.after.{delay}", self.spec.path);
        let Some(imp) = self.imp.delays.get(delay).cloned() else {
            self.fail(
                path,
                Problem::UnknownImplementation {
                    kind: "delay",
                    name: delay.to_string(),
                },
            );
            return self;
        };
        if let Some(t) = self.transition(path, f) {
            self.push_after(
                |d| matches!(d, DelaySpec::Named { name, .. } if name == delay),
                || DelaySpec::Named {
                    name: delay.to_string(),
                    imp,
                },
                t,
            );
        }
        self
    }

    /// The transition taken when this compound or parallel state is done
    /// (`onDone`).
    pub fn on_done(
        mut self,
        f: impl FnOnce(TransitionBuilder<C, Event>) -> TransitionBuilder<C, Event>,
    ) -> Self {
        let path = format!("{}.onDone[{}]", self.spec.path, self.spec.on_done.len());
        if let Some(t) = self.transition(path, f) {
            self.spec.on_done.push(t);
        }
        self
    }

    /// Invokes the registered actor logic `src` while the state is active
    /// (declared in the chart's implementations with `actor`).
    pub fn invoke(
        mut self,
        src: &str,
        f: impl FnOnce(InvokeBuilder<C>) -> InvokeBuilder<C>,
    ) -> Self {
        let path = format!("{}.invoke[{}]", self.spec.path, self.spec.invoke.len());
        if !self.imp.has_actor(src) {
            self.fail(
                format!("{path}.src"),
                Problem::UnknownImplementation {
                    kind: "actor",
                    name: src.to_string(),
                },
            );
            return self;
        }
        let mut state = StateBuilder::new(String::new(), path.clone(), self.imp.clone());
        let inv = f(InvokeBuilder {
            spec: InvokeSpec {
                id: None,
                src: src.to_string(),
                input: None,
                on_done: Vec::new(),
                on_error: Vec::new(),
                path,
            },
            state: &mut state,
        })
        .spec;
        if let Some(e) = state.error {
            self.fail(e.path, e.problem);
        }
        self.spec.invoke.push(inv);
        self
    }
}

/// One invocation: its id, input, and the transitions for its result.
pub struct InvokeBuilder<'a, C> {
    spec: InvokeSpec<C>,
    state: &'a mut StateBuilder<C>,
}

impl<C: Clone + Send + Sync + 'static> InvokeBuilder<'_, C> {
    /// The invocation id (its done event is `xstate.done.actor.<id>`).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.spec.id = Some(id.into());
        self
    }

    /// The input, from the context.
    pub fn input(mut self, f: impl Fn(&C) -> Value + Send + Sync + 'static) -> Self {
        self.spec.input = Some(OutputSpec::Fn(Arc::new(move |c, _| f(c))));
        self
    }

    /// Taken when this invocation (this start of it) succeeds; the event's
    /// `output` is the result.
    pub fn on_done(
        mut self,
        f: impl FnOnce(TransitionBuilder<C, Event>) -> TransitionBuilder<C, Event>,
    ) -> Self {
        let path = format!("{}.onDone[{}]", self.spec.path, self.spec.on_done.len());
        if let Some(t) = self.state.transition(path, f) {
            self.spec.on_done.push(t);
        }
        self
    }

    /// Taken when this invocation fails; the event's `error` is the reason.
    pub fn on_error(
        mut self,
        f: impl FnOnce(TransitionBuilder<C, Event>) -> TransitionBuilder<C, Event>,
    ) -> Self {
        let path = format!("{}.onError[{}]", self.spec.path, self.spec.on_error.len());
        if let Some(t) = self.state.transition(path, f) {
            self.spec.on_error.push(t);
        }
        self
    }
}

/// One transition whose closures see the event as an `&E`.
pub struct TransitionBuilder<C, E> {
    spec: TransitionSpec<C>,
    imp: Arc<Implementations<C>>,
    error: Option<BuildError>,
    /// `on::<E>`: the event must decode as `E` for the transition to be
    /// enabled.
    decoded: bool,
    _event: PhantomData<fn(&E)>,
}

impl<C: Clone + Send + Sync + 'static, E: Payload> TransitionBuilder<C, E> {
    fn finish(self) -> Result<TransitionSpec<C>, BuildError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut spec = self.spec;
        if self.decoded {
            let decodes = GuardSpec::Named {
                name: "decodes".into(),
                params: Value::Null,
                imp: Arc::new(|_: &C, e: &Event, _: &Value| E::decode(e).is_some()) as GuardFn<C>,
            };
            spec.guard = Some(match spec.guard.take() {
                None => decodes,
                Some(g) => GuardSpec::And(vec![decodes, g]),
            });
        }
        Ok(spec)
    }

    fn decoded(mut self) -> Self {
        self.decoded = true;
        self
    }

    /// Adds a target: a sibling's key, `.child`, `#id` or `#id.child`.
    pub fn target(mut self, target: impl Into<String>) -> Self {
        self.spec.targets.push(target.into());
        self
    }

    /// Exits and re-enters the source even when the targets lie inside it
    /// (XState's `reenter: true`).
    pub fn reenter(mut self) -> Self {
        self.spec.reenter = true;
        self
    }

    /// `description`.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.spec.description = Some(text.into());
        self
    }

    /// The guard: the transition is enabled only when it returns true.
    /// A second guard must pass too.
    pub fn guard(mut self, f: impl Fn(&C, &E) -> bool + Send + Sync + 'static) -> Self {
        let g = GuardSpec::Named {
            name: "guard".into(),
            params: Value::Null,
            imp: Arc::new(move |c: &C, e: &Event, _: &Value| {
                E::decode(e).is_some_and(|e| f(c, &e))
            }),
        };
        self.and_guard(g);
        self
    }

    /// A named guard from the chart's implementations, with its params.
    pub fn guard_named(mut self, name: &str, params: Value) -> Self {
        match self.imp.guards.get(name) {
            Some(imp) => {
                let g = GuardSpec::Named {
                    name: name.to_string(),
                    params,
                    imp: imp.clone(),
                };
                self.and_guard(g);
            }
            None => self.fail(
                format!("{}.guard", self.spec.path),
                Problem::UnknownImplementation {
                    kind: "guard",
                    name: name.to_string(),
                },
            ),
        }
        self
    }

    /// A guard that the chart is in the state with this id (`stateIn`).
    pub fn in_state(mut self, id: &str) -> Self {
        let g = GuardSpec::StateIn(Value::String(format!("#{}", id.trim_start_matches('#'))));
        self.and_guard(g);
        self
    }

    fn and_guard(&mut self, g: GuardSpec<C>) {
        self.spec.guard = Some(match self.spec.guard.take() {
            None => g,
            Some(GuardSpec::And(mut gs)) => {
                gs.push(g);
                GuardSpec::And(gs)
            }
            Some(first) => GuardSpec::And(vec![first, g]),
        });
    }

    fn fail(&mut self, path: String, problem: Problem) {
        if self.error.is_none() {
            self.error = Some(BuildError { path, problem });
        }
    }

    /// An action: it may change the context (through
    /// [`ActionScope::context_mut`]) and record effects (raise, send,
    /// emit...).
    pub fn action(
        mut self,
        f: impl Fn(&mut ActionScope<'_, C>, &E) + Send + Sync + 'static,
    ) -> Self {
        let imp: ActionFn<C> = Arc::new(move |scope: &mut ActionScope<'_, C>| {
            if let Some(e) = E::decode(scope.event()) {
                f(scope, &e)
            }
        });
        self.spec.actions.push(ActionSpec {
            name: "action".into(),
            params: Value::Null,
            imp,
        });
        self
    }

    /// An action that changes the context (XState's `assign`).
    pub fn assign(self, f: impl Fn(&mut C, &E) + Send + Sync + 'static) -> Self {
        self.action(move |scope, e| f(scope.context_mut(), e))
    }

    /// Raises a typed event on the internal queue (processed in this
    /// macrostep, before the next external event).
    pub fn raise<R: EventType>(mut self, event: R) -> Self {
        match event.event() {
            Ok(e) => self.action(move |scope, _| scope.raise(e.clone())),
            Err(err) => {
                let path = format!("{}.actions[{}]", self.spec.path, self.spec.actions.len());
                self.fail(path, Problem::Invalid(format!("event {}: {err}", R::NAME)));
                self
            }
        }
    }

    /// Emits a typed event to the chart's subscribers (XState's `emit`).
    pub fn emit<R: EventType>(mut self, event: R) -> Self {
        match event.event() {
            Ok(e) => self.action(move |scope, _| scope.emit(e.clone())),
            Err(err) => {
                let path = format!("{}.actions[{}]", self.spec.path, self.spec.actions.len());
                self.fail(path, Problem::Invalid(format!("event {}: {err}", R::NAME)));
                self
            }
        }
    }

    /// A log line computed from the context and the event (XState's `log`).
    pub fn log(self, f: impl Fn(&C, &E) -> String + Send + Sync + 'static) -> Self {
        self.action(move |scope, e| {
            let line = f(scope.context(), e);
            scope.log(line)
        })
    }

    /// A named action from the chart's implementations, with its params.
    pub fn action_named(mut self, name: &str, params: Value) -> Self {
        match self.imp.actions.get(name) {
            Some(imp) => self.spec.actions.push(ActionSpec {
                name: name.to_string(),
                params,
                imp: imp.clone(),
            }),
            None => {
                let path = format!("{}.actions[{}]", self.spec.path, self.spec.actions.len());
                self.fail(
                    path,
                    Problem::UnknownImplementation {
                        kind: "action",
                        name: name.to_string(),
                    },
                )
            }
        }
        self
    }
}

fn closure_action<C>(
    name: &str,
    f: impl Fn(&mut ActionScope<'_, C>) + Send + Sync + 'static,
) -> ActionSpec<C> {
    ActionSpec {
        name: name.to_string(),
        params: Value::Null,
        imp: Arc::new(f),
    }
}
