//! Shortest and simple paths through a chart's state space, for
//! model-based tests (xstate/graph's `getShortestPaths` and
//! `getSimplePaths`).
//!
//! A state is a snapshot, told apart by its key (by default: the state
//! value, the status, the context and the pending delayed events with the
//! time they have left). From each state the [`Explorer`] tries every
//! event the active states handle by name (or the events you give), and,
//! when delayed events are pending, a time advance to the next deadline.
//! A step is a [`PathStep`], written as a `turno chart run` item, so a path
//! printed by `turno chart paths` can be fed back to `turno chart run`.
//!
//! - [`Explorer::shortest_paths`]: every reachable state once, with a
//!   shortest sequence of steps that reaches it (breadth first; ties go to
//!   the event tried first).
//! - [`Explorer::simple_paths`]: every path from the initial state that
//!   visits no state twice, one per (path, end state).
//! - [`check_paths`] runs each path against an implementation and checks
//!   a predicate at every state along it.
//!
//! ```
//! use turno_chart::{load_json, stdlib};
//! use turno_chart::paths::Explorer;
//! let m = load_json::<serde_json::Value>(r#"{"initial": "a", "states": {
//!     "a": {"on": {"NEXT": "b", "SKIP": "c"}},
//!     "b": {"on": {"NEXT": "c"}}, "c": {"type": "final"}}}"#,
//!     &stdlib::implementations()).unwrap();
//! let paths = Explorer::new(&m).shortest_paths().unwrap();
//! let to_c = paths.iter().find(|p| p.state().value(&m).to_json() == "c").unwrap();
//! assert_eq!(to_c.items(), vec![serde_json::json!({"type": "SKIP"})]);
//! assert_eq!(Explorer::new(&m).simple_paths().unwrap().len(), 4);
//! ```

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};

use crate::actions::Action;
use crate::algorithm::ChartError;
use crate::core::{advance, initial_transition, invocation_done, transition_in_place};
use crate::event::Event;
use crate::machine::Machine;
use crate::snapshot::{Snapshot, Status};

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
pub enum PathStep {
    /// An external event.
    Event(Event),
    /// Virtual time passes (delayed events fire at their deadlines).
    Advance(u64),
}

impl PathStep {
    /// As a `turno chart run` item.
    pub fn to_item(&self) -> Value {
        match self {
            PathStep::Event(e) => e.to_json(),
            PathStep::Advance(ms) => json!({"advance_ms": ms}),
        }
    }
}

/// A path: the initial snapshot, then each step with the snapshot it
/// leads to.
#[derive(Clone, Debug)]
pub struct Path<C> {
    /// The initial snapshot.
    pub initial: Snapshot<C>,
    /// The steps, each with where it leads.
    pub steps: Vec<(PathStep, Snapshot<C>)>,
}

impl<C> Path<C> {
    /// Where the path ends.
    pub fn state(&self) -> &Snapshot<C> {
        self.steps.last().map_or(&self.initial, |(_, s)| s)
    }

    /// The steps as `turno chart run` items.
    pub fn items(&self) -> Vec<Value> {
        self.steps.iter().map(|(s, _)| s.to_item()).collect()
    }
}

/// Why exploring failed.
#[derive(Debug, thiserror::Error)]
pub enum PathsError {
    /// A macrostep ran away.
    #[error(transparent)]
    Chart(#[from] ChartError),
    /// More states than the limit.
    #[error("more than {0} states (or paths); raise the limit or give fewer events")]
    TooMany(usize),
}

type EventsFn<C> = Arc<dyn Fn(&Machine<C>, &Snapshot<C>) -> Vec<Event> + Send + Sync>;
type KeyFn<C> = Arc<dyn Fn(&Machine<C>, &Snapshot<C>) -> String + Send + Sync>;
type SettleFn = Arc<dyn Fn(&str, &Value) -> Option<Result<Value, Value>> + Send + Sync>;

/// Walks a machine's state space. See the [module docs](self).
pub struct Explorer<'m, C> {
    m: &'m Machine<C>,
    events: EventsFn<C>,
    key: KeyFn<C>,
    settle: SettleFn,
    time: bool,
    limit: usize,
}

/// The events a snapshot's active states handle by exact name (no
/// wildcards, none of XState's own `xstate.*` events), in document order.
pub fn handled_events<C>(m: &Machine<C>, s: &Snapshot<C>) -> Vec<Event> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for st in s.config.iter() {
        for (d, _) in &m.state(st).on {
            if d.contains('*') || d.starts_with("xstate.") {
                continue;
            }
            if seen.insert(d.clone()) {
                out.push(Event::new(d.clone()));
            }
        }
    }
    out
}

impl<'m, C: Clone + Serialize + 'static> Explorer<'m, C> {
    /// An explorer with the defaults: [`handled_events`], time advances on,
    /// invocations of `echo` resolve and of `reject` fail with their input
    /// (the standard actors), at most 10 000 states.
    pub fn new(m: &'m Machine<C>) -> Self {
        Explorer {
            m,
            events: Arc::new(handled_events),
            key: Arc::new(default_key),
            settle: Arc::new(|src, input| match src {
                "echo" => Some(Ok(input.clone())),
                "reject" => Some(Err(input.clone())),
                _ => None,
            }),
            time: true,
            limit: 10_000,
        }
    }

    /// The events to try from a snapshot (xstate/graph's `events`).
    pub fn events(
        mut self,
        f: impl Fn(&Machine<C>, &Snapshot<C>) -> Vec<Event> + Send + Sync + 'static,
    ) -> Self {
        self.events = Arc::new(f);
        self
    }

    /// What tells two snapshots apart (xstate/graph's `serializeState`).
    pub fn key(
        mut self,
        f: impl Fn(&Machine<C>, &Snapshot<C>) -> String + Send + Sync + 'static,
    ) -> Self {
        self.key = Arc::new(f);
        self
    }

    /// How invocations settle right after the step that started them:
    /// `f(src, input)`, `None` for one that stays in flight.
    pub fn settle(
        mut self,
        f: impl Fn(&str, &Value) -> Option<Result<Value, Value>> + Send + Sync + 'static,
    ) -> Self {
        self.settle = Arc::new(f);
        self
    }

    /// Whether time advances (to the next deadline) are steps.
    pub fn with_time(mut self, on: bool) -> Self {
        self.time = on;
        self
    }

    /// The most states (or simple paths) to produce.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = n;
        self
    }

    fn absorb(&self, snap: &mut Snapshot<C>, actions: Vec<Action>) -> Result<(), ChartError> {
        let mut queue: VecDeque<Action> = actions.into();
        while let Some(a) = queue.pop_front() {
            if let Action::StartInvoke {
                id,
                src,
                input,
                generation,
            } = a
            {
                if let Some(result) = (self.settle)(&src, &input) {
                    let mut more = Vec::new();
                    invocation_done(self.m, snap, &id, generation, result, &mut more)?;
                    queue.extend(more);
                }
            }
        }
        Ok(())
    }

    fn start(&self) -> Result<Snapshot<C>, ChartError> {
        let (mut s, actions) = initial_transition(self.m)?;
        self.absorb(&mut s, actions)?;
        Ok(s)
    }

    /// The steps from `s` and where each leads.
    fn next(&self, s: &Snapshot<C>) -> Result<Vec<(PathStep, Snapshot<C>)>, ChartError> {
        let mut out = Vec::new();
        if s.status != Status::Active {
            return Ok(out);
        }
        for e in (self.events)(self.m, s) {
            let mut n = s.clone();
            let mut actions = Vec::new();
            transition_in_place(self.m, &mut n, e.clone(), &mut actions)?;
            self.absorb(&mut n, actions)?;
            out.push((PathStep::Event(e), n));
        }
        if self.time {
            if let Some(due) = s.scheduled.iter().map(|x| x.due_ms).min() {
                let by = due.saturating_sub(s.now_ms);
                let (mut n, actions) = advance(self.m, s, by)?;
                self.absorb(&mut n, actions)?;
                out.push((PathStep::Advance(by), n));
            }
        }
        Ok(out)
    }

    /// Every reachable state once, with a shortest path to it (the initial
    /// state first, then in the order found).
    pub fn shortest_paths(&self) -> Result<Vec<Path<C>>, PathsError> {
        let initial = self.start()?;
        let mut seen: HashMap<String, usize> = HashMap::new();
        seen.insert((self.key)(self.m, &initial), 0);
        let mut found = vec![Path {
            initial: initial.clone(),
            steps: Vec::new(),
        }];
        let mut queue = VecDeque::from([0usize]);
        while let Some(i) = queue.pop_front() {
            let here = found[i].state().clone();
            for (step, next) in self.next(&here)? {
                let k = (self.key)(self.m, &next);
                if seen.contains_key(&k) {
                    continue;
                }
                if found.len() >= self.limit {
                    return Err(PathsError::TooMany(self.limit));
                }
                let mut steps = found[i].steps.clone();
                steps.push((step, next));
                seen.insert(k, found.len());
                queue.push_back(found.len());
                found.push(Path {
                    initial: initial.clone(),
                    steps,
                });
            }
        }
        Ok(found)
    }

    /// Every path from the initial state that visits no state twice
    /// (depth first, in the order events are tried), including the empty
    /// path to the initial state.
    pub fn simple_paths(&self) -> Result<Vec<Path<C>>, PathsError> {
        let initial = self.start()?;
        let mut out = vec![Path {
            initial: initial.clone(),
            steps: Vec::new(),
        }];
        let mut on_path: HashSet<String> = HashSet::new();
        on_path.insert((self.key)(self.m, &initial));
        let mut steps = Vec::new();
        self.dfs(&initial, &initial, &mut on_path, &mut steps, &mut out)?;
        Ok(out)
    }

    fn dfs(
        &self,
        initial: &Snapshot<C>,
        here: &Snapshot<C>,
        on_path: &mut HashSet<String>,
        steps: &mut Vec<(PathStep, Snapshot<C>)>,
        out: &mut Vec<Path<C>>,
    ) -> Result<(), PathsError> {
        for (step, next) in self.next(here)? {
            let k = (self.key)(self.m, &next);
            if on_path.contains(&k) {
                continue;
            }
            if out.len() >= self.limit {
                return Err(PathsError::TooMany(self.limit));
            }
            steps.push((step, next.clone()));
            out.push(Path {
                initial: initial.clone(),
                steps: steps.clone(),
            });
            on_path.insert(k.clone());
            self.dfs(initial, &next, on_path, steps, out)?;
            on_path.remove(&k);
            steps.pop();
        }
        Ok(())
    }
}

/// The default key: value, status, context, and each pending delayed
/// event's id with the time it has left.
pub fn default_key<C: Serialize>(m: &Machine<C>, s: &Snapshot<C>) -> String {
    let mut pending: Vec<(String, u64)> = s
        .scheduled
        .iter()
        .map(|x| (x.id.clone(), x.due_ms.saturating_sub(s.now_ms)))
        .collect();
    pending.sort();
    json!({
        "value": s.value(m).to_json(),
        "status": s.status.as_str(),
        "context": serde_json::to_value(&s.context).unwrap_or(Value::Null),
        "pending": pending,
    })
    .to_string()
}

/// Where a path check failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("path {path} ({items}), after {step} steps: {message}")]
pub struct PathFailure {
    /// Which path (its index).
    pub path: usize,
    /// After how many of its steps (0: the initial state).
    pub step: usize,
    /// The path's items, as JSON.
    pub items: String,
    /// What the predicate said.
    pub message: String,
}

/// Runs every path against an implementation: a fresh one per path
/// (`new`), each step applied to it (`apply`), and `check(implementation,
/// expected snapshot)` at the initial state and after every step. Returns
/// how many states were checked.
pub fn check_paths<C, I>(
    paths: &[Path<C>],
    mut new: impl FnMut() -> I,
    mut apply: impl FnMut(&mut I, &PathStep),
    mut check: impl FnMut(&I, &Snapshot<C>) -> Result<(), String>,
) -> Result<usize, PathFailure> {
    let mut checked = 0;
    for (pi, p) in paths.iter().enumerate() {
        let fail = |step: usize, message: String| PathFailure {
            path: pi,
            step,
            items: Value::Array(p.items()).to_string(),
            message,
        };
        let mut imp = new();
        check(&imp, &p.initial).map_err(|m| fail(0, m))?;
        checked += 1;
        for (si, (step, expected)) in p.steps.iter().enumerate() {
            apply(&mut imp, step);
            check(&imp, expected).map_err(|m| fail(si + 1, m))?;
            checked += 1;
        }
    }
    Ok(checked)
}
