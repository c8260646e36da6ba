//! Implementations registered by name, as XState's `setup()` does: a JSON
//! config refers to actions, guards, delays and actors by name, and loading
//! fails early when a name is not registered.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use crate::actions::{ActionFn, ActionScope, DelayFn, GuardFn};

/// Resolves a JSON `input` or `output` template against the context and
/// the event (see [`Implementations::templates`]).
pub type TemplateFn<C> = Arc<dyn Fn(&C, &Event, &Value) -> Value + Send + Sync>;
use crate::event::Event;

/// Named implementations for machines with context `C`.
///
/// ```
/// use turno_chart::Implementations;
/// let imp = Implementations::<serde_json::Value>::new()
///     .guard("isAdult", |ctx, _ev, _params| ctx["age"].as_u64().unwrap_or(0) >= 18)
///     .action("greet", |scope| scope.log("hello"))
///     .delay("patience", |_, _, _| 5_000)
///     .actor("fetchUser");
/// assert!(imp.has_guard("isAdult"));
/// ```
pub struct Implementations<C> {
    pub(crate) actions: BTreeMap<String, ActionFn<C>>,
    pub(crate) guards: BTreeMap<String, GuardFn<C>>,
    pub(crate) delays: BTreeMap<String, DelayFn<C>>,
    pub(crate) actors: BTreeSet<String>,
    /// Actions whose `branches` the loader compiles (see
    /// [`choose`](Implementations::choose)).
    pub(crate) choose: BTreeSet<String>,
    /// Actions whose `params.src` names actor logic the loader checks (see
    /// [`spawns`](Implementations::spawns)).
    pub(crate) spawns: BTreeSet<String>,
    /// How `input` and `output` templates read the context and the event.
    pub(crate) templates: Option<TemplateFn<C>>,
}

impl<C> Clone for Implementations<C> {
    fn clone(&self) -> Self {
        Implementations {
            actions: self.actions.clone(),
            guards: self.guards.clone(),
            delays: self.delays.clone(),
            actors: self.actors.clone(),
            choose: self.choose.clone(),
            spawns: self.spawns.clone(),
            templates: self.templates.clone(),
        }
    }
}

impl<C> Default for Implementations<C> {
    fn default() -> Self {
        Implementations {
            actions: BTreeMap::new(),
            guards: BTreeMap::new(),
            delays: BTreeMap::new(),
            actors: BTreeSet::new(),
            choose: BTreeSet::new(),
            spawns: BTreeSet::new(),
            templates: None,
        }
    }
}

impl<C> Implementations<C> {
    /// No implementations.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers an action: it may assign the context and record effects.
    pub fn action(
        mut self,
        name: impl Into<String>,
        f: impl for<'a> Fn(&mut ActionScope<'a, C>) + Send + Sync + 'static,
    ) -> Self {
        self.actions.insert(name.into(), Arc::new(f));
        self
    }

    /// Registers an action that only assigns: `f(context, event, params)`.
    pub fn assign(
        self,
        name: impl Into<String>,
        f: impl Fn(&mut C, &Event, &Value) + Send + Sync + 'static,
    ) -> Self {
        self.action(name, move |scope: &mut ActionScope<'_, C>| {
            let (event, params) = (scope.event.clone(), scope.params.clone());
            f(scope.context_mut(), &event, &params)
        })
    }

    /// Registers a custom action the interpreter executes (it comes out as
    /// [`Action::Custom`](crate::Action::Custom)).
    pub fn custom(self, name: impl Into<String>) -> Self {
        let name = name.into();
        let n = name.clone();
        self.action(name, move |scope: &mut ActionScope<'_, C>| {
            scope.custom(n.clone())
        })
    }

    /// Registers a guard: `f(context, event, params)`.
    pub fn guard(
        mut self,
        name: impl Into<String>,
        f: impl Fn(&C, &Event, &Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.guards.insert(name.into(), Arc::new(f));
        self
    }

    /// Registers a named delay in milliseconds: `f(context, event, params)`.
    pub fn delay(
        mut self,
        name: impl Into<String>,
        f: impl Fn(&C, &Event, &Value) -> u64 + Send + Sync + 'static,
    ) -> Self {
        self.delays.insert(name.into(), Arc::new(f));
        self
    }

    /// Declares actor logic by name (`invoke.src`); the interpreter is
    /// given the logic itself.
    pub fn actor(mut self, name: impl Into<String>) -> Self {
        self.actors.insert(name.into());
        self
    }

    /// Registers `name` as a conditional action list, as XState's
    /// `enqueueActions` with `check` and `enqueue` writes one: its params
    /// are `{"branches": [{"guard": G, "actions": A}, ...]}` (the last
    /// branch's `guard` may be left out), and the actions of the first
    /// branch whose guard passes run, in order, where the action runs.
    /// The loader compiles the branches, so their guards and actions are
    /// registered names (or `and`/`or`/`not` of them) checked at load,
    /// each error naming its JSON path.
    pub fn choose(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.actions.remove(&name);
        self.choose.insert(name);
        self
    }

    /// Marks the registered action `name` as one that spawns a child of
    /// the logic its `params.src` names (the standard `spawnChild`): the
    /// loader refuses a `src` that is not a registered actor, as it does for
    /// `invoke.src`, naming the JSON path.
    pub fn spawns(mut self, name: impl Into<String>) -> Self {
        self.spawns.insert(name.into());
        self
    }

    /// Lets `input` (of an invocation) and `output` (of a final state or
    /// the machine) be templates: `f(context, event, template)` gives the
    /// value. The JSON loader calls it for a value that holds a
    /// `{"$context": KEY}` or `{"$event": KEY}` object anywhere (what
    /// [`stdlib`](crate::stdlib) resolves); other values stay constants.
    pub fn templates(
        mut self,
        f: impl Fn(&C, &Event, &Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        self.templates = Some(Arc::new(f));
        self
    }

    /// Is this guard registered?
    pub fn has_guard(&self, name: &str) -> bool {
        self.guards.contains_key(name)
    }

    /// Is this action registered?
    pub fn has_action(&self, name: &str) -> bool {
        self.actions.contains_key(name) || self.choose.contains(name)
    }

    /// Is this actor logic declared?
    pub fn has_actor(&self, name: &str) -> bool {
        self.actors.contains(name)
    }
}
