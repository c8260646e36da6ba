//! Implementations registered by name, as XState's `setup()` does: a JSON
//! config refers to actions, guards, delays and actors by name, and loading
//! fails early when a name is not registered.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use crate::actions::{ActionFn, ActionScope, DelayFn, GuardFn};
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
}

impl<C> Clone for Implementations<C> {
    fn clone(&self) -> Self {
        Implementations {
            actions: self.actions.clone(),
            guards: self.guards.clone(),
            delays: self.delays.clone(),
            actors: self.actors.clone(),
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

    /// Is this guard registered?
    pub fn has_guard(&self, name: &str) -> bool {
        self.guards.contains_key(name)
    }

    /// Is this action registered?
    pub fn has_action(&self, name: &str) -> bool {
        self.actions.contains_key(name)
    }

    /// Is this actor logic declared?
    pub fn has_actor(&self, name: &str) -> bool {
        self.actors.contains(name)
    }
}
