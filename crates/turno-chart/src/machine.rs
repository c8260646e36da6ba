//! The compiled machine: states in document order with their indices,
//! transitions in one table, and a precomputed candidate table per event.
//!
//! Document order is the order of a pre-order walk of the definition, so a
//! state's descendants are exactly the indices `(s, last_descendant(s)]`:
//! "is a descendant of" is two comparisons.

use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::actions::{ActionFn, DelayFn, EventHookFn, GuardFn, TryGuardFn, TryValueFn, ValueFn};
use crate::event::{matches_descriptor, names};
use crate::semantics::Semantics;
use crate::spec::{
    ActionSpec, DelaySpec, GuardSpec, InitialSpec, KindSpec, OutputSpec, StateSpec, TransitionSpec,
};

/// A state's index in document order (the root is 0).
pub type StateIdx = u16;

/// A transition's index in the machine's table.
pub type TransIdx = u32;

/// What a state is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateKind {
    /// No children.
    Atomic,
    /// Exactly one child active at a time.
    Compound,
    /// All children active at once.
    Parallel,
    /// Entering it completes its parent.
    Final,
    /// Remembers the configuration of its parent.
    History {
        /// Deep (every descendant) or shallow (the children).
        deep: bool,
    },
}

/// A compiled named action.
#[derive(Clone)]
pub struct ActionDef<C> {
    /// The implementation's name.
    pub name: Arc<str>,
    /// Its params.
    pub params: Value,
    pub(crate) imp: ActionFn<C>,
}

/// A compiled guard.
#[derive(Clone)]
pub enum Guard<C> {
    /// A named implementation.
    Named {
        /// The name.
        name: Arc<str>,
        /// Its params.
        params: Value,
        /// The implementation.
        imp: GuardFn<C>,
    },
    /// All must pass.
    And(Vec<Guard<C>>),
    /// One must pass.
    Or(Vec<Guard<C>>),
    /// The inner one must fail.
    Not(Box<Guard<C>>),
    /// All these states are active.
    StateIn(Vec<StateIdx>, String),
    /// A guard that can fail: an error is raised, the guard is false.
    Try {
        /// The name (the condition's text, for diagrams).
        name: Arc<str>,
        /// The implementation.
        imp: TryGuardFn<C>,
    },
}

/// A compiled delay.
#[derive(Clone)]
pub enum Delay<C> {
    /// Fixed.
    Ms(u64),
    /// Computed when the state is entered.
    Named(Arc<str>, DelayFn<C>),
}

/// A compiled value expression.
#[derive(Clone)]
pub enum ValueExpr<C> {
    /// A constant.
    Value(Value),
    /// An expression.
    Fn(ValueFn<C>),
    /// An expression that can fail: an error is raised, there is no value.
    Try(TryValueFn<C>),
}

/// One transition.
#[derive(Clone)]
pub struct Transition<C> {
    /// The state it belongs to.
    pub source: StateIdx,
    /// The event descriptor; `None` for `always` and initial transitions.
    pub event: Option<Arc<str>>,
    /// Its guard.
    pub guard: Option<Guard<C>>,
    /// Resolved targets; empty for a targetless transition.
    pub targets: Vec<StateIdx>,
    /// Its actions.
    pub actions: Vec<ActionDef<C>>,
    /// XState's `reenter`.
    pub reenter: bool,
    /// An `after` transition's delay label (for diagrams).
    pub delay_label: Option<String>,
    /// `description`.
    pub description: Option<String>,
}

/// An `after` entry of a state: its delay and the event it raises.
#[derive(Clone)]
pub struct After<C> {
    /// The delay.
    pub delay: Delay<C>,
    /// `xstate.after.<delay>.<state id>`.
    pub event: Arc<str>,
}

/// An invocation of a state.
#[derive(Clone)]
pub struct Invoke<C> {
    /// The invocation id.
    pub id: Arc<str>,
    /// The registered actor logic.
    pub src: Arc<str>,
    /// Its input.
    pub input: Option<ValueExpr<C>>,
}

/// One compiled state.
#[derive(Clone)]
pub struct StateNode<C> {
    /// Its id (`#id` targets).
    pub id: Arc<str>,
    /// Its key under its parent.
    pub key: Arc<str>,
    /// Its kind.
    pub kind: StateKind,
    /// Its parent (`None` for the root).
    pub parent: Option<StateIdx>,
    /// Its children, history states included, in document order.
    pub children: Vec<StateIdx>,
    /// The last index of its subtree.
    pub last_descendant: StateIdx,
    /// Depth below the root.
    pub depth: u16,
    /// A compound state's initial child (possibly a history state).
    pub initial: Option<StateIdx>,
    /// Actions of the initial transition.
    pub initial_actions: Vec<ActionDef<C>>,
    /// Entry actions.
    pub entry: Vec<ActionDef<C>>,
    /// Exit actions.
    pub exit: Vec<ActionDef<C>>,
    /// `after` entries.
    pub after: Vec<After<C>>,
    /// Invocations.
    pub invoke: Vec<Invoke<C>>,
    /// Event transitions (`on`, `onDone`, invoke results, `after`), in
    /// XState's order: `(descriptor, transitions)`.
    pub on: Vec<(Arc<str>, Vec<TransIdx>)>,
    /// Eventless transitions.
    pub always: Vec<TransIdx>,
    /// A history state's default targets (resolved; empty means "the
    /// parent's initial", or the parent itself for a parallel parent).
    pub history_default: Vec<StateIdx>,
    /// Actions of a history state's default transition.
    pub history_actions: Vec<ActionDef<C>>,
    /// Every target of a compound state's initial transition, when given
    /// as such (SCXML: several, possibly deep); empty means `[initial]`.
    pub initial_targets: Vec<StateIdx>,
    /// Tags.
    pub tags: Vec<Arc<str>>,
    /// `meta`.
    pub meta: Option<Value>,
    /// `description`.
    pub description: Option<String>,
    /// `output`.
    pub output: Option<ValueExpr<C>>,
}

impl<C> StateNode<C> {
    /// Atomic or final: a leaf of the configuration.
    pub fn is_atomic(&self) -> bool {
        matches!(self.kind, StateKind::Atomic | StateKind::Final)
    }

    /// A history pseudo-state.
    pub fn is_history(&self) -> bool {
        matches!(self.kind, StateKind::History { .. })
    }
}

/// Why a definition does not make a machine. `path` says where (a JSON path
/// such as `$.states.a.on.GO[0].target`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct BuildError {
    /// Where the problem is.
    pub path: String,
    /// What it is.
    pub problem: Problem,
}

/// What is wrong with a definition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A key XState does not know (or turno does not support).
    #[error("unknown key {0:?}")]
    UnknownKey(String),
    /// A value of the wrong JSON type.
    #[error("expected {0}")]
    WrongType(&'static str),
    /// A named action, guard, delay or actor that is not registered.
    #[error("unknown {kind} implementation {name:?} (register it by name first)")]
    UnknownImplementation {
        /// `action`, `guard`, `delay` or `actor`.
        kind: &'static str,
        /// The name used.
        name: String,
    },
    /// A target that names no state.
    #[error("bad target {target:?}: {reason}")]
    BadTarget {
        /// The target as written.
        target: String,
        /// Why it does not resolve.
        reason: String,
    },
    /// Two states share an id.
    #[error("duplicate state id {id:?} (first defined at {first})")]
    DuplicateId {
        /// The id.
        id: String,
        /// Where the first one is.
        first: String,
    },
    /// A compound state's `initial` is missing or names no child.
    #[error("invalid initial {initial:?}: {reason}")]
    InvalidInitial {
        /// The initial as written (empty when missing).
        initial: String,
        /// Why.
        reason: String,
    },
    /// History states have no children.
    #[error("a history state cannot have child states")]
    HistoryWithChildren,
    /// A value that is not allowed here.
    #[error("invalid value: {0}")]
    Invalid(String),
    /// More states than a machine can index.
    #[error("too many states (at most {0})")]
    TooManyStates(usize),
}

fn err(path: &str, problem: Problem) -> BuildError {
    BuildError {
        path: path.to_string(),
        problem,
    }
}

/// A compiled statechart. Build it from a [`StateSpec`] (the JSON loader and
/// the builder make one), then run it with [`initial_transition`](crate::initial_transition)
/// and [`transition`](crate::transition).
pub struct Machine<C> {
    pub(crate) states: Vec<StateNode<C>>,
    pub(crate) transitions: Vec<Transition<C>>,
    pub(crate) ids: FxHashMap<Arc<str>, StateIdx>,
    /// The exact event names known to the machine, by id (found without
    /// hashing: [`Machine::event_id`]).
    pub(crate) names: crate::name_index::NameIndex,
    /// `candidates[event * n_states + state]`: a range of `cand`.
    pub(crate) cand_ranges: Vec<(u32, u32)>,
    pub(crate) cand: Vec<TransIdx>,
    /// States with wildcard descriptors (for events not in `names`).
    pub(crate) has_wildcards: bool,
    /// `handlers[event]`: the states with a candidate for that exact event
    /// name; selection skips every subtree where no active state is one.
    pub(crate) handlers: Vec<crate::snapshot::StateSet>,
    /// Each state's position in a post-order walk of the tree (children
    /// in document order before their parent): the order XState's
    /// selection visits active states in.
    pub(crate) post: Vec<u16>,
    /// Some state has a history child (else exits record no history).
    pub(crate) has_history: bool,
    /// Some action is the standard `sendTo` or `sendParent`: a macrostep
    /// keeps the snapshot it started from, to return to when a send finds
    /// no target (XState fails the actor and the transition never happens).
    pub(crate) sends: bool,
    pub(crate) context: C,
    pub(crate) version: Option<String>,
    /// Microsteps one macrostep may take before it is a runaway loop.
    pub(crate) max_microsteps: usize,
    pub(crate) atomic: Vec<bool>,
    pub(crate) semantics: Semantics,
    pub(crate) event_hook: Option<EventHookFn<C>>,
    /// Per transition, what a microstep taking it alone computes that does
    /// not depend on the snapshot: filled the first time it is taken, and
    /// only when no history state was read (see `algorithm::Plan`).
    pub(crate) plans: Vec<OnceLock<Plan>>,
    /// Some state has an `always` transition (else no microstep looks for one).
    pub(crate) has_eventless: bool,
    /// The states with an `always` transition: a configuration without
    /// one of them enables no eventless transition.
    pub(crate) eventless: crate::snapshot::StateSet,
    /// Microstep plans by configuration and event (see [`crate::step_table`]).
    pub(crate) steps: crate::step_table::StepTable,
}

/// A transition's domain and entry set when they are fixed by the machine
/// alone (no history state among its effective targets or what they enter).
pub(crate) struct Plan {
    /// The transition domain (`None`: above the root).
    pub(crate) domain: Option<StateIdx>,
    /// The states it enters, in document order.
    pub(crate) to_enter: crate::snapshot::StateSet,
    /// The states entered by default (their initial actions run).
    pub(crate) default_entry: crate::snapshot::StateSet,
}

/// The default bound on microsteps in one macrostep.
pub const DEFAULT_MAX_MICROSTEPS: usize = 10_000;

impl<C: Clone> Machine<C> {
    /// Compiles a definition: assigns ids, resolves targets and checks the
    /// structure. The root spec's key is the machine's id.
    pub fn new(
        root: StateSpec<C>,
        context: C,
        version: Option<String>,
    ) -> Result<Self, BuildError> {
        Builder::default().build(root, context, version)
    }

    /// [`Machine::new`] under the given rules ([`Semantics`]). Under
    /// [`Semantics::Scxml`] a state's `on` entries keep document order and
    /// are not merged by descriptor: each descriptor is an SCXML descriptor
    /// list (`"a b.*"`).
    pub fn with_semantics(
        root: StateSpec<C>,
        context: C,
        version: Option<String>,
        semantics: Semantics,
    ) -> Result<Self, BuildError> {
        Builder {
            semantics,
            ..Builder::default()
        }
        .build(root, context, version)
    }
}

impl<C> Machine<C> {
    /// The machine's id (the root's id).
    pub fn id(&self) -> &str {
        &self.states[0].id
    }

    /// The definition's `version`, if given (persisted snapshots carry it).
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// All states in document order.
    pub fn states(&self) -> &[StateNode<C>] {
        &self.states
    }

    /// One state.
    pub fn state(&self, s: StateIdx) -> &StateNode<C> {
        &self.states[s as usize]
    }

    /// All transitions.
    pub fn transitions(&self) -> &[Transition<C>] {
        &self.transitions
    }

    /// A state by id (without `#`).
    pub fn state_by_id(&self, id: &str) -> Option<StateIdx> {
        self.ids.get(id).copied()
    }

    /// The initial context.
    pub fn initial_context(&self) -> &C {
        &self.context
    }

    /// The rules this machine follows.
    pub fn semantics(&self) -> Semantics {
        self.semantics
    }

    /// Calls `hook` with every event before transitions are selected for
    /// it (see [`EventHookFn`]): how a data model binds the current event.
    pub fn with_event_hook(mut self, hook: EventHookFn<C>) -> Self {
        self.event_hook = Some(hook);
        self
    }

    /// Sets how many microsteps a macrostep may take before it is reported
    /// as a runaway loop (default [`DEFAULT_MAX_MICROSTEPS`]).
    pub fn with_max_microsteps(mut self, n: usize) -> Self {
        self.max_microsteps = n.max(1);
        self
    }

    /// Sets the size of the machine's step table, in slots (rounded up to
    /// a power of two; at most half of them hold plans; 0: no table, every
    /// microstep computed by the algorithm). The table keeps, per
    /// configuration and event, the plan of a microstep that depended on
    /// neither guards nor history, and replays it the next time (see
    /// `docs/statecharts.md`, "The step table"). Default: 1024 slots (512
    /// plans) for XState machines, none for SCXML ones.
    pub fn with_step_table(mut self, slots: usize) -> Self {
        self.steps = crate::step_table::StepTable::new(slots);
        self
    }

    /// How many microstep plans the step table holds now, and at most.
    pub fn step_table_entries(&self) -> (usize, usize) {
        (self.steps.len(), self.steps.max_entries())
    }

    /// The id of an exact event name some state handles.
    #[inline]
    pub(crate) fn event_id(&self, name: &str) -> Option<u32> {
        self.names.get(name)
    }

    pub(crate) fn n(&self) -> usize {
        self.states.len()
    }

    /// Is `a` a proper descendant of `b`?
    #[inline]
    pub fn is_descendant(&self, a: StateIdx, b: StateIdx) -> bool {
        a > b && a <= self.states[b as usize].last_descendant
    }

    /// The external events the chart takes in `state`, guards aside: the
    /// event descriptors of the transitions of `state` and of its
    /// ancestors, innermost first, each once. The chart's own events
    /// (`xstate.*`, `done.*`, `error.*`) and wildcard descriptors are left
    /// out: no page, form or client sends those. Whether a guard lets the
    /// event through now is the snapshot's question
    /// ([`can`](crate::can)).
    ///
    /// ```
    /// use turno_chart::{load_json, stdlib};
    /// let m = load_json::<serde_json::Value>(r#"{"id": "f", "initial": "a",
    ///   "on": {"RESET": ".a"},
    ///   "states": {"a": {"on": {"NEXT": "b"}, "after": {"100": "b"}}, "b": {}}}"#,
    ///   &stdlib::implementations()).unwrap();
    /// let a = m.state_by_id("f.a").unwrap();
    /// assert_eq!(m.accepted_events(a), ["NEXT", "RESET"]);
    /// ```
    pub fn accepted_events(&self, state: StateIdx) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        let mut at = Some(state);
        while let Some(s) = at {
            let node = &self.states[s as usize];
            for (descriptor, transitions) in &node.on {
                let d: &str = descriptor;
                let own =
                    d.starts_with("xstate.") || d.starts_with("done.") || d.starts_with("error.");
                if !own && !d.contains('*') && !transitions.is_empty() && !out.contains(&d) {
                    out.push(d);
                }
            }
            at = node.parent;
        }
        out
    }

    /// The candidate transitions of `state` for the exact event `event`
    /// (an id of `names`), from the table.
    #[inline]
    pub(crate) fn candidates_of(&self, event: u32, state: StateIdx) -> &[TransIdx] {
        let (a, b) = self.cand_ranges[event as usize * self.n() + state as usize];
        &self.cand[a as usize..b as usize]
    }

    /// The candidate transitions of `state` for `event`, in XState's
    /// order: the exact descriptor first, then wildcards, longest first.
    pub(crate) fn candidates<'a>(
        &'a self,
        event_id: Option<u32>,
        event: &str,
        state: StateIdx,
        scratch: &'a mut Vec<TransIdx>,
    ) -> &'a [TransIdx] {
        if let Some(e) = event_id {
            let (a, b) = self.cand_ranges[e as usize * self.n() + state as usize];
            return &self.cand[a as usize..b as usize];
        }
        if !self.has_wildcards {
            return &[];
        }
        scratch.clear();
        collect_candidates(&self.states[state as usize], event, scratch);
        scratch
    }
}

/// Every state's index in a post-order walk from the root.
fn post_order<C>(states: &[StateNode<C>]) -> Vec<u16> {
    let mut post = vec![0u16; states.len()];
    let mut next = 0u16;
    let mut stack = vec![(0usize, 0usize)];
    while let Some(top) = stack.last_mut() {
        let (s, i) = *top;
        match states[s].children.get(i) {
            Some(&c) => {
                top.1 += 1;
                stack.push((c as usize, 0));
            }
            None => {
                post[s] = next;
                next += 1;
                stack.pop();
            }
        }
    }
    post
}

fn collect_candidates<C>(node: &StateNode<C>, event: &str, out: &mut Vec<TransIdx>) {
    if let Some((_, ts)) = node.on.iter().find(|(d, _)| &**d == event) {
        out.extend_from_slice(ts);
    }
    let mut wild: Vec<&(Arc<str>, Vec<TransIdx>)> = node
        .on
        .iter()
        .filter(|(d, _)| &**d != event && matches_descriptor(event, d))
        .collect();
    // Stable: equal lengths keep document order, as JavaScript's sort does.
    wild.sort_by_key(|w| std::cmp::Reverse(w.0.len()));
    for (_, ts) in wild {
        out.extend_from_slice(ts);
    }
}

/// Compiles a spec in three passes: lay out states, assign ids, then
/// resolve everything that refers to states.
#[derive(Default)]
struct Builder {
    paths: Vec<String>,
    semantics: Semantics,
}

struct Flat<C> {
    spec: StateSpec<C>,
    parent: Option<StateIdx>,
    depth: u16,
    children: Vec<StateIdx>,
    last: StateIdx,
    kind: StateKind,
}

impl Builder {
    fn build<C: Clone>(
        mut self,
        root: StateSpec<C>,
        context: C,
        version: Option<String>,
    ) -> Result<Machine<C>, BuildError> {
        // Pass 1: flatten in document order.
        let mut flat: Vec<Flat<C>> = Vec::new();
        self.flatten(root, None, 0, &mut flat)?;
        let n = flat.len();
        // Pass 2: ids, keys, paths of keys.
        let machine_id = flat[0]
            .spec
            .id
            .clone()
            .unwrap_or_else(|| flat[0].spec.key.clone());
        let mut ids: FxHashMap<Arc<str>, StateIdx> = FxHashMap::default();
        let mut id_of: Vec<Arc<str>> = Vec::with_capacity(n);
        let mut key_path: Vec<Vec<String>> = Vec::with_capacity(n);
        #[allow(clippy::needless_range_loop)] // `i` is also the state's index
        for i in 0..n {
            let kp = match flat[i].parent {
                None => Vec::new(),
                Some(p) => {
                    let mut v = key_path[p as usize].clone();
                    v.push(flat[i].spec.key.clone());
                    v
                }
            };
            let id: Arc<str> = match (&flat[i].spec.id, i) {
                (Some(id), _) => id.as_str().into(),
                (None, 0) => machine_id.as_str().into(),
                (None, _) => {
                    let mut s = machine_id.clone();
                    for k in &kp {
                        s.push('.');
                        s.push_str(k);
                    }
                    s.into()
                }
            };
            if let Some(&first) = ids.get(&id) {
                return Err(err(
                    &flat[i].spec.path,
                    Problem::DuplicateId {
                        id: id.to_string(),
                        first: self.paths[first as usize].clone(),
                    },
                ));
            }
            ids.insert(id.clone(), i as StateIdx);
            id_of.push(id);
            key_path.push(kp);
        }
        // Pass 3: resolve.
        let mut states: Vec<StateNode<C>> = Vec::with_capacity(n);
        let mut transitions: Vec<Transition<C>> = Vec::new();
        let mut specs: Vec<StateSpec<C>> = Vec::with_capacity(n);
        let mut meta: Vec<Meta> = Vec::new();
        for f in &flat {
            meta.push((f.parent, f.children.clone(), f.last, f.depth, f.kind));
        }
        for f in flat.drain(..) {
            specs.push(f.spec);
        }
        let resolver = SpecResolver {
            specs: &specs,
            meta: &meta,
            ids: &ids,
        };
        for i in 0..n {
            let spec = &specs[i];
            let (parent, ref children, last, depth, kind) = meta[i];
            let initial = resolver.initial(i as StateIdx, spec)?;
            let initial_actions = spec
                .initial
                .as_ref()
                .map(|init| actions(&init.actions))
                .unwrap_or_default();
            let history_default = match &spec.history_target {
                Some(ts) => {
                    let p = parent.expect("history states have a parent");
                    let mut out = Vec::new();
                    for t in ts {
                        out.push(resolver.by_path(p, t, &spec.path)?);
                    }
                    out
                }
                None => Vec::new(),
            };
            let mut on: Vec<(Arc<str>, Vec<TransIdx>)> = Vec::new();
            let merge = self.semantics == Semantics::XState;
            let mut push_group = |descriptor: Arc<str>,
                                  group: &[TransitionSpec<C>],
                                  delay_label: Option<String>,
                                  transitions: &mut Vec<Transition<C>>|
             -> Result<(), BuildError> {
                let mut idx = Vec::with_capacity(group.len());
                for t in group {
                    let mut tr = resolver.transition(i as StateIdx, Some(descriptor.clone()), t)?;
                    tr.delay_label = delay_label.clone();
                    idx.push(transitions.len() as TransIdx);
                    transitions.push(tr);
                }
                match on.iter_mut().find(|(d, _)| merge && *d == descriptor) {
                    Some((_, v)) => v.extend(idx),
                    None => on.push((descriptor, idx)),
                }
                Ok(())
            };
            for (descriptor, group) in &spec.on {
                if descriptor.is_empty() {
                    return Err(err(
                        &spec.path,
                        Problem::Invalid(
                            "the empty event descriptor is not allowed; use \"always\"".into(),
                        ),
                    ));
                }
                push_group(descriptor.as_str().into(), group, None, &mut transitions)?;
            }
            if !spec.on_done.is_empty() {
                let d: Arc<str> = names::done_state(&id_of[i]).into();
                push_group(d, &spec.on_done, None, &mut transitions)?;
            }
            let mut invoke = Vec::new();
            for (k, inv) in spec.invoke.iter().enumerate() {
                let id: Arc<str> = match &inv.id {
                    Some(id) => id.as_str().into(),
                    None => format!("{k}.{}", id_of[i]).into(),
                };
                if !inv.on_done.is_empty() {
                    let d: Arc<str> = names::done_actor(&id).into();
                    push_group(d, &inv.on_done, None, &mut transitions)?;
                }
                if !inv.on_error.is_empty() {
                    let d: Arc<str> = names::error_actor(&id).into();
                    push_group(d, &inv.on_error, None, &mut transitions)?;
                }
                invoke.push(Invoke {
                    id,
                    src: inv.src.as_str().into(),
                    input: inv.input.as_ref().map(value_expr),
                });
            }
            let mut after = Vec::new();
            for (delay, group) in &spec.after {
                let (label, delay) = match delay {
                    DelaySpec::Ms(ms) => (ms.to_string(), Delay::Ms(*ms)),
                    DelaySpec::Named { name, imp } => (
                        name.clone(),
                        Delay::Named(name.as_str().into(), imp.clone()),
                    ),
                };
                let event: Arc<str> = names::after(&label, &id_of[i]).into();
                push_group(event.clone(), group, Some(label), &mut transitions)?;
                after.push(After { delay, event });
            }
            let history_actions = actions(&spec.history_actions);
            let mut initial_targets = Vec::with_capacity(spec.initial_targets.len());
            for t in &spec.initial_targets {
                initial_targets.push(resolver.by_path(i as StateIdx, t, &spec.path)?);
            }
            let mut always = Vec::new();
            for t in &spec.always {
                always.push(transitions.len() as TransIdx);
                transitions.push(resolver.transition(i as StateIdx, None, t)?);
            }
            states.push(StateNode {
                id: id_of[i].clone(),
                key: if i == 0 {
                    id_of[0].clone()
                } else {
                    spec.key.as_str().into()
                },
                kind,
                parent,
                children: children.clone(),
                last_descendant: last,
                depth,
                initial,
                initial_actions,
                entry: actions(&spec.entry),
                exit: actions(&spec.exit),
                after,
                invoke,
                on,
                always,
                history_default,
                history_actions,
                initial_targets,
                tags: spec.tags.iter().map(|t| t.as_str().into()).collect(),
                meta: spec.meta.clone(),
                description: spec.description.clone(),
                output: spec.output.as_ref().map(value_expr),
            });
        }
        // The candidate table for every exact event name.
        let mut events: FxHashMap<Arc<str>, u32> = FxHashMap::default();
        let mut has_wildcards = false;
        // SCXML machines select by descriptor lists in document order and
        // need no table of exact names.
        let table = self.semantics == Semantics::XState;
        for s in states.iter().filter(|_| table) {
            for (d, _) in &s.on {
                if d.contains('*') {
                    has_wildcards = true;
                } else if !events.contains_key(d) {
                    let id = events.len() as u32;
                    events.insert(d.clone(), id);
                }
            }
        }
        let mut names_by_id: Vec<Arc<str>> = vec![Arc::from(""); events.len()];
        for (name, &id) in &events {
            names_by_id[id as usize] = name.clone();
        }
        let names = crate::name_index::NameIndex::new(names_by_id.clone());
        let mut cand_ranges = Vec::with_capacity(events.len() * n);
        let mut cand = Vec::new();
        for name in &names_by_id {
            for s in &states {
                let start = cand.len() as u32;
                collect_candidates(s, name, &mut cand);
                cand_ranges.push((start, cand.len() as u32));
            }
        }
        let handlers = (0..names_by_id.len())
            .map(|e| {
                let mut set = crate::snapshot::StateSet::with_states(n);
                for s in 0..n {
                    let (a, b) = cand_ranges[e * n + s];
                    if a < b {
                        set.insert(s as StateIdx);
                    }
                }
                set
            })
            .collect();
        let has_history = states.iter().any(|s| s.is_history());
        let is_send = |a: &ActionDef<C>| matches!(&*a.name, "sendTo" | "sendParent");
        let sends = transitions.iter().any(|t| t.actions.iter().any(is_send))
            || states.iter().any(|s| {
                s.entry.iter().any(is_send)
                    || s.exit.iter().any(is_send)
                    || s.initial_actions.iter().any(is_send)
                    || s.history_actions.iter().any(is_send)
            });
        let post = post_order(&states);
        let atomic = states.iter().map(|s| s.is_atomic()).collect();
        let plans = transitions.iter().map(|_| OnceLock::new()).collect();
        let has_eventless = states.iter().any(|s| !s.always.is_empty());
        let mut eventless = crate::snapshot::StateSet::with_states(n);
        for (i, s) in states.iter().enumerate() {
            if !s.always.is_empty() {
                eventless.insert(i as StateIdx);
            }
        }
        // SCXML machines select by descriptor lists and may bind events
        // into their data model: they keep no step table.
        let steps = crate::step_table::StepTable::new(match self.semantics {
            Semantics::XState => crate::step_table::DEFAULT_STEP_TABLE_SLOTS,
            Semantics::Scxml => 0,
        });
        Ok(Machine {
            states,
            transitions,
            ids,
            names,
            cand_ranges,
            cand,
            has_wildcards,
            handlers,
            post,
            has_history,
            sends,
            context,
            version,
            max_microsteps: DEFAULT_MAX_MICROSTEPS,
            atomic,
            semantics: self.semantics,
            event_hook: None,
            plans,
            has_eventless,
            eventless,
            steps,
        })
    }

    fn flatten<C>(
        &mut self,
        mut spec: StateSpec<C>,
        parent: Option<StateIdx>,
        depth: u16,
        flat: &mut Vec<Flat<C>>,
    ) -> Result<StateIdx, BuildError> {
        const MAX: usize = StateIdx::MAX as usize;
        if flat.len() >= MAX {
            return Err(err(&spec.path, Problem::TooManyStates(MAX)));
        }
        let me = flat.len() as StateIdx;
        let children_specs = std::mem::take(&mut spec.states);
        let kind = match spec.kind {
            KindSpec::History { deep } => {
                if !children_specs.is_empty() {
                    return Err(err(&spec.path, Problem::HistoryWithChildren));
                }
                if parent.is_none() {
                    return Err(err(
                        &spec.path,
                        Problem::Invalid("the root cannot be a history state".into()),
                    ));
                }
                StateKind::History { deep }
            }
            KindSpec::Final => StateKind::Final,
            KindSpec::Parallel => StateKind::Parallel,
            KindSpec::Auto if children_specs.is_empty() => StateKind::Atomic,
            KindSpec::Auto => StateKind::Compound,
        };
        if kind == StateKind::Final && !children_specs.is_empty() {
            return Err(err(
                &spec.path,
                Problem::Invalid("a final state cannot have child states".into()),
            ));
        }
        self.paths.push(spec.path.clone());
        flat.push(Flat {
            spec,
            parent,
            depth,
            children: Vec::new(),
            last: me,
            kind,
        });
        let mut children = Vec::new();
        for c in children_specs {
            children.push(self.flatten(c, Some(me), depth + 1, flat)?);
        }
        let last = (flat.len() - 1) as StateIdx;
        let f = &mut flat[me as usize];
        f.children = children;
        f.last = last;
        Ok(me)
    }
}

type Meta = (Option<StateIdx>, Vec<StateIdx>, StateIdx, u16, StateKind);

struct SpecResolver<'a, C> {
    specs: &'a [StateSpec<C>],
    meta: &'a [Meta],
    ids: &'a FxHashMap<Arc<str>, StateIdx>,
}

impl<C: Clone> SpecResolver<'_, C> {
    fn child(&self, node: StateIdx, key: &str) -> Option<StateIdx> {
        self.meta[node as usize]
            .1
            .iter()
            .copied()
            .find(|&c| self.specs[c as usize].key == key)
    }

    fn id_of_spec(&self, s: StateIdx) -> String {
        self.ids
            .iter()
            .find(|(_, &v)| v == s)
            .map(|(k, _)| k.to_string())
            .unwrap_or_default()
    }

    /// XState's `getStateNodeById`: `#id`, then a key path below it.
    fn by_id(&self, target: &str, path: &str) -> Result<StateIdx, BuildError> {
        let body = &target[1..];
        if let Some(&s) = self.ids.get(body) {
            return Ok(s);
        }
        let mut parts = body.split('.');
        let head = parts.next().unwrap_or("");
        let Some(&start) = self.ids.get(head) else {
            return Err(bad_target(
                target,
                format!("no state has id {head:?}"),
                path,
            ));
        };
        self.walk(start, parts, target, path)
    }

    fn walk<'k>(
        &self,
        mut node: StateIdx,
        keys: impl Iterator<Item = &'k str>,
        target: &str,
        path: &str,
    ) -> Result<StateIdx, BuildError> {
        for key in keys {
            if key.is_empty() {
                break;
            }
            node = match self.child(node, key) {
                Some(c) => c,
                None => {
                    return Err(bad_target(
                        target,
                        format!("state {:?} has no child {key:?}", self.id_of_spec(node)),
                        path,
                    ))
                }
            };
        }
        Ok(node)
    }

    /// XState's `getStateNodeByPath` from `node`.
    fn by_path(&self, node: StateIdx, target: &str, path: &str) -> Result<StateIdx, BuildError> {
        if target.starts_with('#') {
            return self.by_id(target, path);
        }
        self.walk(node, target.split('.'), target, path)
    }

    /// XState's `resolveTarget` for one target of a transition of `source`.
    fn target(&self, source: StateIdx, target: &str, path: &str) -> Result<StateIdx, BuildError> {
        if target.starts_with('#') {
            return self.by_id(target, path);
        }
        let parent = self.meta[source as usize].0;
        if let Some(rest) = target.strip_prefix('.') {
            // A child of the source.
            return self.walk(source, rest.split('.'), target, path);
        }
        match parent {
            Some(p) => self.walk(p, target.split('.'), target, path),
            None => Err(bad_target(
                target,
                format!("not a valid target from the root; did you mean \".{target}\"?"),
                path,
            )),
        }
    }

    fn transition(
        &self,
        source: StateIdx,
        event: Option<Arc<str>>,
        t: &TransitionSpec<C>,
    ) -> Result<Transition<C>, BuildError> {
        let mut targets = Vec::with_capacity(t.targets.len());
        for (k, target) in t.targets.iter().enumerate() {
            let p = if t.targets.len() > 1 {
                format!("{}.target[{k}]", t.path)
            } else {
                format!("{}.target", t.path)
            };
            targets.push(self.target(source, target, &p)?);
        }
        let guard = match &t.guard {
            Some(g) => Some(self.guard(g, &format!("{}.guard", t.path))?),
            None => None,
        };
        Ok(Transition {
            source,
            event,
            guard,
            targets,
            actions: actions(&t.actions),
            reenter: t.reenter,
            delay_label: None,
            description: t.description.clone(),
        })
    }

    fn guard(&self, g: &GuardSpec<C>, path: &str) -> Result<Guard<C>, BuildError> {
        Ok(match g {
            GuardSpec::Named { name, params, imp } => Guard::Named {
                name: name.as_str().into(),
                params: params.clone(),
                imp: imp.clone(),
            },
            GuardSpec::And(gs) => Guard::And(
                gs.iter()
                    .enumerate()
                    .map(|(i, g)| self.guard(g, &format!("{path}.guards[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            GuardSpec::Or(gs) => Guard::Or(
                gs.iter()
                    .enumerate()
                    .map(|(i, g)| self.guard(g, &format!("{path}.guards[{i}]")))
                    .collect::<Result<_, _>>()?,
            ),
            GuardSpec::Not(g) => Guard::Not(Box::new(self.guard(g, &format!("{path}.guard"))?)),
            GuardSpec::Try { name, imp } => Guard::Try {
                name: name.as_str().into(),
                imp: imp.clone(),
            },
            GuardSpec::StateIn(v) => {
                let mut out = Vec::new();
                let label = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                match v {
                    Value::String(s) if s.starts_with('#') => out.push(self.by_id(s, path)?),
                    other => self.state_value(0, other, path, &mut out)?,
                }
                Guard::StateIn(out, label)
            }
        })
    }

    /// The states a (partial) state value names, below `node`.
    fn state_value(
        &self,
        node: StateIdx,
        v: &Value,
        path: &str,
        out: &mut Vec<StateIdx>,
    ) -> Result<(), BuildError> {
        match v {
            Value::String(s) => {
                let c = self.walk(node, s.split('.'), s, path)?;
                out.push(c);
                Ok(())
            }
            Value::Object(m) => {
                for (k, sub) in m {
                    let c = self.walk(node, std::iter::once(k.as_str()), k, path)?;
                    out.push(c);
                    self.state_value(c, sub, path, out)?;
                }
                Ok(())
            }
            _ => Err(err(path, Problem::WrongType("a state id or a state value"))),
        }
    }

    fn initial(&self, s: StateIdx, spec: &StateSpec<C>) -> Result<Option<StateIdx>, BuildError> {
        let kind = self.meta[s as usize].4;
        match (kind, &spec.initial) {
            (StateKind::Compound, None) => Err(err(
                &spec.path,
                Problem::InvalidInitial {
                    initial: String::new(),
                    reason: "a state with child states needs \"initial\"".into(),
                },
            )),
            (StateKind::Compound, Some(InitialSpec { target, path, .. })) => {
                match self.child(s, target) {
                    Some(c) => Ok(Some(c)),
                    None => Err(err(
                        path,
                        Problem::InvalidInitial {
                            initial: target.clone(),
                            reason: format!("state {:?} has no such child", self.id_of_spec(s)),
                        },
                    )),
                }
            }
            (StateKind::Parallel, _) | (_, None) => Ok(None),
            (_, Some(InitialSpec { target, path, .. })) => Err(err(
                path,
                Problem::InvalidInitial {
                    initial: target.clone(),
                    reason: "the state has no child states".into(),
                },
            )),
        }
    }
}

fn bad_target(target: &str, reason: String, path: &str) -> BuildError {
    err(
        path,
        Problem::BadTarget {
            target: target.to_string(),
            reason,
        },
    )
}

fn actions<C>(specs: &[ActionSpec<C>]) -> Vec<ActionDef<C>> {
    specs
        .iter()
        .map(|a| ActionDef {
            name: a.name.as_str().into(),
            params: a.params.clone(),
            imp: a.imp.clone(),
        })
        .collect()
}

fn value_expr<C>(o: &OutputSpec<C>) -> ValueExpr<C> {
    match o {
        OutputSpec::Value(v) => ValueExpr::Value(v.clone()),
        OutputSpec::Fn(f) => ValueExpr::Fn(f.clone()),
        OutputSpec::Try(f) => ValueExpr::Try(f.clone()),
    }
}
