//! The definition of a machine before it is compiled: a tree of states with
//! targets still written as text, as XState's config has them. Both the
//! JSON loader and the Rust builder produce a [`StateSpec`];
//! [`Machine::new`](crate::Machine::new) resolves and checks it.

use serde_json::Value;

use crate::actions::{ActionFn, DelayFn, GuardFn, TryGuardFn, TryValueFn, ValueFn};

/// One state of a definition.
pub struct StateSpec<C> {
    /// The key under its parent (the machine's id for the root).
    pub key: String,
    /// An explicit id (`"id"`), else `machineId.path.to.state`.
    pub id: Option<String>,
    /// The declared type.
    pub kind: KindSpec,
    /// The initial child's key (compound states) and its actions.
    pub initial: Option<InitialSpec<C>>,
    /// Children, in document order.
    pub states: Vec<StateSpec<C>>,
    /// `on`: descriptor and its candidate transitions, in document order.
    pub on: Vec<(String, Vec<TransitionSpec<C>>)>,
    /// `always`: eventless transitions.
    pub always: Vec<TransitionSpec<C>>,
    /// `after`: a delay and its transitions.
    pub after: Vec<(DelaySpec<C>, Vec<TransitionSpec<C>>)>,
    /// `onDone`: taken on `xstate.done.state.<id>`.
    pub on_done: Vec<TransitionSpec<C>>,
    /// Entry actions.
    pub entry: Vec<ActionSpec<C>>,
    /// Exit actions.
    pub exit: Vec<ActionSpec<C>>,
    /// Invocations started on entry, stopped on exit.
    pub invoke: Vec<InvokeSpec<C>>,
    /// Tags (`hasTag`).
    pub tags: Vec<String>,
    /// `meta`, kept as given.
    pub meta: Option<Value>,
    /// `description`.
    pub description: Option<String>,
    /// `output` (final states and the root).
    pub output: Option<OutputSpec<C>>,
    /// A history state's default `target`.
    pub history_target: Option<Vec<String>>,
    /// Actions of a history state's default transition (SCXML: run after
    /// the parent's entry when the default is taken).
    pub history_actions: Vec<ActionSpec<C>>,
    /// Under [`Semantics::Scxml`](crate::Semantics) only: every target of a
    /// compound state's initial transition (several, possibly deeper than a
    /// child), as `#id`s; when empty, or under XState's rules, the initial
    /// state is `initial`'s child.
    pub initial_targets: Vec<String>,
    /// Where this state was defined (a JSON path like `$.states.a`), for errors.
    pub path: String,
}

impl<C> StateSpec<C> {
    /// An empty atomic state with this key, defined at `path`.
    pub fn new(key: impl Into<String>, path: impl Into<String>) -> Self {
        StateSpec {
            key: key.into(),
            id: None,
            kind: KindSpec::Auto,
            initial: None,
            states: Vec::new(),
            on: Vec::new(),
            always: Vec::new(),
            after: Vec::new(),
            on_done: Vec::new(),
            entry: Vec::new(),
            exit: Vec::new(),
            invoke: Vec::new(),
            tags: Vec::new(),
            meta: None,
            description: None,
            output: None,
            history_target: None,
            history_actions: Vec::new(),
            initial_targets: Vec::new(),
            path: path.into(),
        }
    }
}

/// A state's declared type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindSpec {
    /// Not declared: compound with children, atomic without.
    Auto,
    /// `"type": "parallel"`.
    Parallel,
    /// `"type": "final"`.
    Final,
    /// `"type": "history"`, shallow or deep.
    History {
        /// `"history": "deep"`.
        deep: bool,
    },
}

/// A compound state's initial transition.
pub struct InitialSpec<C> {
    /// The child's key.
    pub target: String,
    /// Actions of the initial transition.
    pub actions: Vec<ActionSpec<C>>,
    /// Where it was defined.
    pub path: String,
}

/// One transition of a definition.
pub struct TransitionSpec<C> {
    /// Targets as XState writes them (`"sibling"`, `".child"`, `"#id"`,
    /// `"#id.child"`); empty for a targetless transition.
    pub targets: Vec<String>,
    /// The guard.
    pub guard: Option<GuardSpec<C>>,
    /// Actions, in order.
    pub actions: Vec<ActionSpec<C>>,
    /// `reenter` (default false).
    pub reenter: bool,
    /// `description`.
    pub description: Option<String>,
    /// Where it was defined.
    pub path: String,
}

impl<C> TransitionSpec<C> {
    /// A transition to `targets` (no guard, no actions).
    pub fn to(targets: Vec<String>, path: impl Into<String>) -> Self {
        TransitionSpec {
            targets,
            guard: None,
            actions: Vec::new(),
            reenter: false,
            description: None,
            path: path.into(),
        }
    }
}

/// A guard of a definition.
pub enum GuardSpec<C> {
    /// A named implementation with its params.
    Named {
        /// The name (for errors, diagrams and traces).
        name: String,
        /// `params`.
        params: Value,
        /// The implementation.
        imp: GuardFn<C>,
    },
    /// All must pass.
    And(Vec<GuardSpec<C>>),
    /// One must pass.
    Or(Vec<GuardSpec<C>>),
    /// The inner one must fail.
    Not(Box<GuardSpec<C>>),
    /// The chart is in a state: `"#id"` or a state value (`"a"`, `{"a": "b"}`).
    StateIn(Value),
    /// A guard that can fail (see [`TryGuardFn`]).
    Try {
        /// The name (for diagrams), e.g. the condition's text.
        name: String,
        /// The implementation.
        imp: TryGuardFn<C>,
    },
}

/// A named action of a definition.
pub struct ActionSpec<C> {
    /// The name.
    pub name: String,
    /// `params`.
    pub params: Value,
    /// The implementation.
    pub imp: ActionFn<C>,
}

/// An `after` delay.
pub enum DelaySpec<C> {
    /// A fixed number of milliseconds.
    Ms(u64),
    /// A named delay implementation.
    Named {
        /// The name (it is part of the event name).
        name: String,
        /// The implementation.
        imp: DelayFn<C>,
    },
}

/// An invocation of a definition.
pub struct InvokeSpec<C> {
    /// The invocation id (default XState's `<i>.<state id>`).
    pub id: Option<String>,
    /// The registered actor logic.
    pub src: String,
    /// Its input.
    pub input: Option<OutputSpec<C>>,
    /// Taken on `xstate.done.actor.<id>`.
    pub on_done: Vec<TransitionSpec<C>>,
    /// Taken on `xstate.error.actor.<id>`.
    pub on_error: Vec<TransitionSpec<C>>,
    /// Where it was defined.
    pub path: String,
}

/// A value computed from context and event (`output`, `input`).
#[derive(Clone)]
pub enum OutputSpec<C> {
    /// A constant.
    Value(Value),
    /// An expression.
    Fn(ValueFn<C>),
    /// An expression that can fail (see [`TryValueFn`]).
    Try(TryValueFn<C>),
}
