//! Invoked child charts: a chart and the charts it invokes, driven as one
//! tree by one owner.
//!
//! An `invoke` whose `src` names a machine registered in [`Charts`] starts
//! a **child chart** that lives in the same [`Tree`] as its parent, not in
//! another actor. The tree routes what passes between them, in FIFO order,
//! each delivery one macrostep of its target, until every chart is at rest:
//!
//! - the child starts (its initial macrostep) after the parent's macrostep
//!   that entered the invoking state, or that spawned it (`spawnChild`: a
//!   child not tied to a state, started the same way);
//! - `sendTo(<id>)` from the parent and `sendParent` from the child are
//!   events of the other chart;
//! - a child that reaches a top-level final state has its output delivered
//!   to the parent as `xstate.done.actor.<id>` (an error status as
//!   `xstate.error.actor.<id>`), for *that* start only; it runs no more but
//!   stays in the tree, as XState keeps it among the parent's children,
//!   until the parent no longer lists it ([`Snapshot::finished`]: its
//!   invoking state is left, `stopChild` names it);
//! - leaving the invoking state (or `stopChild`) stops the child after the
//!   events sent to it before: it takes no more events, its timers are
//!   disarmed and its own invocations stopped. A parent that reaches its
//!   top-level final state keeps its children listed, stopped.
//!
//! Everything else (timers, invocations of other sources, events for other
//! actors, `emit`, `log`, custom actions) comes out as [`Tagged`] actions
//! naming the chart that asked ([`Tagged::path`]: the invocation ids from
//! the root), for the owner to carry out and to answer with
//! [`Tree::fire`] and [`Tree::done`] on that path.
//!
//! Why one tree and not one actor per child: between two macrosteps of
//! the tree nothing is in flight from one chart to another, so a snapshot
//! of the whole tree taken there
//! ([`Persist::tree_to_value`](crate::persist::Persist::tree_to_value)) is
//! consistent by construction: no event a child sent and the parent has not
//! seen, no `done` the parent missed, no event the parent sent that the
//! child never got. Children of separate actors would need a distributed
//! snapshot (or an outbox with acknowledgements) for the same guarantee.
//! The price: a child chart shares its parent's turns and mailbox.
//!
//! All charts of a tree have the same context type `C` (for JSON machines,
//! `serde_json::Value`). A child's context starts as its machine's initial
//! context; its `input` is kept in the parent's in-flight invocation.
//!
//! ```
//! use std::sync::Arc;
//! use turno_chart::tree::{Charts, Tree};
//! use turno_chart::{load_json, stdlib, Event};
//!
//! let imp = stdlib::implementations().actor("timer");
//! let child = load_json(r#"{"id": "timer", "initial": "ticking",
//!     "states": {"ticking": {"after": {"100": "rang"}}, "rang": {"type": "final"}}}"#, &imp).unwrap();
//! let parent = load_json(r#"{"id": "p", "initial": "waiting", "states": {
//!     "waiting": {"invoke": {"id": "t", "src": "timer", "onDone": "woken"}},
//!     "woken": {}}}"#, &imp).unwrap();
//! let charts = Arc::new(Charts::new().chart("timer", Arc::new(child)));
//! let (mut tree, _) = Tree::start(&parent, charts, 0).unwrap();
//! let (path, id, seq, due) = tree.next_due(1000).unwrap();
//! assert_eq!((path.as_slice(), due), (&["t".to_string()][..], 100));
//! tree.fire(&parent, &path, &id, seq).unwrap();
//! assert_eq!(tree.root().value(&parent).to_json(), "woken");
//! assert!(tree.child(&["t".into()]).is_none(), "its state was left: the child is gone");
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use thin_vec::ThinVec;

use serde_json::Value;

use crate::actions::Action;
use crate::algorithm::ChartError;
use crate::core::{
    fire_scheduled, initial_transition_for, initial_transition_inspected, invocation_done,
    transition_in_place, Delivery,
};
use crate::event::Event;
use crate::implementations::Implementations;
use crate::json::{load_json, LoadError};
use crate::machine::Machine;
use crate::snapshot::{Snapshot, Status};

/// The chart machines an `invoke.src` may name, by name.
pub struct Charts<C> {
    map: BTreeMap<String, Arc<Machine<C>>>,
}

impl<C> Default for Charts<C> {
    fn default() -> Self {
        Charts {
            map: BTreeMap::new(),
        }
    }
}

impl<C> Charts<C> {
    /// No charts: every invocation is the owner's to run.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `machine` as the chart `invoke.src: name` starts.
    pub fn chart(mut self, name: impl Into<String>, machine: Arc<Machine<C>>) -> Self {
        self.map.insert(name.into(), machine);
        self
    }

    /// The chart registered as `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Machine<C>>> {
        self.map.get(name)
    }

    /// The registered names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// No chart registered.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Why a machine or one of its child charts did not load.
#[derive(Debug, thiserror::Error)]
#[error("{}: {error}", .chart.as_deref().map_or("the machine".to_string(), |c| format!("chart {c:?}")))]
pub struct TreeLoadError {
    /// The child chart's name (`None`: the root machine).
    pub chart: Option<String>,
    /// What is wrong with it.
    pub error: LoadError,
}

/// Loads an XState v5 JSON machine and the child charts it may invoke,
/// given as `(name, JSON config)`: every name is declared as actor logic
/// (`invoke.src`) for all of them, so a child chart can invoke another.
/// What `turno chart run --chart NAME=FILE` does.
pub fn load_json_tree<C: Clone + serde::de::DeserializeOwned + 'static>(
    machine: &str,
    charts: &[(String, String)],
    imp: &Implementations<C>,
) -> Result<(Machine<C>, Arc<Charts<C>>), TreeLoadError> {
    let mut imp = imp.clone();
    for (name, _) in charts {
        imp = imp.actor(name.clone());
    }
    let mut reg = Charts::new();
    for (name, text) in charts {
        let m = load_json(text, &imp).map_err(|error| TreeLoadError {
            chart: Some(name.clone()),
            error,
        })?;
        reg = reg.chart(name.clone(), Arc::new(m));
    }
    let m = load_json(machine, &imp).map_err(|error| TreeLoadError { chart: None, error })?;
    Ok((m, Arc::new(reg)))
}

/// Where a chart is in its tree: the invocation ids from the root (empty:
/// the root).
pub type Path = Vec<String>;

/// An action for the tree's owner, from the chart at `path`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tagged {
    /// The chart that asked.
    pub path: Path,
    /// What it asked for.
    pub action: Action,
}

/// A running child chart.
#[derive(Clone)]
pub(crate) struct Child<C> {
    pub(crate) id: String,
    pub(crate) generation: u64,
    pub(crate) machine: Arc<Machine<C>>,
    pub(crate) snapshot: Snapshot<C>,
    pub(crate) children: ThinVec<Child<C>>,
}

/// A chart and its invoked child charts. See the [module docs](self).
///
/// The root's machine is not kept: every call that may run the root is
/// given it (as the pure core's functions are); child machines come from
/// the [`Charts`].
pub struct Tree<C> {
    pub(crate) root: Snapshot<C>,
    pub(crate) children: ThinVec<Child<C>>,
    /// `None`: no charts registered (most trees: no allocation).
    pub(crate) charts: Option<Arc<Charts<C>>>,
}

enum Work {
    Start {
        path: Path,
        id: String,
        src: String,
        generation: u64,
        /// Events sent to the child before it started (by the entry
        /// actions of the state that invokes it): it takes them right
        /// after its initial macrostep, as an XState actor drains its
        /// mailbox when it starts.
        mailbox: Vec<Event>,
    },
    /// A child chart whose invoking state was exited: it stops after
    /// the events sent to it before (the exit actions' sends reach it).
    Stop {
        path: Path,
        id: String,
        generation: u64,
    },
    Event {
        path: Path,
        event: Event,
    },
    Done {
        path: Path,
        id: String,
        generation: u64,
        result: Result<Value, Value>,
    },
}

impl<C: Clone> Tree<C> {
    /// A tree around a root snapshot (no child running yet).
    pub fn new(root: Snapshot<C>, charts: Arc<Charts<C>>) -> Self {
        Tree {
            root,
            children: ThinVec::new(),
            charts: (!charts.is_empty()).then_some(charts),
        }
    }

    /// A tree with no charts registered: every invocation is the owner's.
    pub(crate) fn bare(root: Snapshot<C>) -> Self {
        Tree {
            root,
            children: ThinVec::new(),
            charts: None,
        }
    }

    /// Starts `m` at `now_ms` and every chart its initial states invoke.
    pub fn start(
        m: &Machine<C>,
        charts: Arc<Charts<C>>,
        now_ms: u64,
    ) -> Result<(Self, Vec<Tagged>), ChartError> {
        let mut actions = Vec::new();
        let snap = initial_transition_inspected(m, now_ms, &mut actions, None)?;
        let mut tree = Tree::new(snap, charts);
        let out = tree.absorb(m, &[], actions)?;
        Ok((tree, out))
    }

    /// The root's snapshot.
    pub fn root(&self) -> &Snapshot<C> {
        &self.root
    }

    /// The root's snapshot, to run a macrostep on it; give the actions to
    /// [`absorb`](Self::absorb).
    pub fn root_mut(&mut self) -> &mut Snapshot<C> {
        &mut self.root
    }

    /// The registered charts.
    pub fn charts(&self) -> Arc<Charts<C>> {
        self.charts.clone().unwrap_or_default()
    }

    /// The chart registered as `src`.
    pub(crate) fn chart(&self, src: &str) -> Option<&Arc<Machine<C>>> {
        self.charts.as_ref().and_then(|c| c.get(src))
    }

    /// The snapshot of the child chart at `path` (not the root).
    pub fn child(&self, path: &[String]) -> Option<&Snapshot<C>> {
        find(&self.children, path).map(|c| &c.snapshot)
    }

    /// The machine of the child chart at `path`.
    pub fn child_machine(&self, path: &[String]) -> Option<&Arc<Machine<C>>> {
        find(&self.children, path).map(|c| &c.machine)
    }

    /// Every child chart's path, parents before children, siblings in the
    /// order they started.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        walk(&self.children, &mut Vec::new(), &mut |p, _| {
            out.push(p.to_vec())
        });
        out
    }

    /// The chart's clock: the root's `now_ms`.
    pub fn now_ms(&self) -> u64 {
        self.root.now_ms
    }

    /// Moves every chart's clock to `now_ms` (never backwards).
    pub fn set_now(&mut self, now_ms: u64) {
        self.root.now_ms = self.root.now_ms.max(now_ms);
        let now = self.root.now_ms;
        walk_mut(&mut self.children, &mut |c| {
            c.snapshot.now_ms = c.snapshot.now_ms.max(now)
        });
    }

    /// The earliest delayed event of any chart due at or before `limit_ms`:
    /// `(path, id, seq, due_ms)`. Ties go to the chart met first (the root,
    /// then children in start order, depth first), then to the one
    /// scheduled first within it.
    pub fn next_due(&self, limit_ms: u64) -> Option<(Path, String, u64, u64)> {
        let mut best: Option<(u64, usize, u64, Path, String)> = None;
        let mut consider = |order: usize, path: &[String], s: &Snapshot<C>| {
            for e in s.scheduled.iter().filter(|e| e.due_ms <= limit_ms) {
                let key = (e.due_ms, order, e.seq);
                if best.as_ref().is_none_or(|b| key < (b.0, b.1, b.2)) {
                    best = Some((e.due_ms, order, e.seq, path.to_vec(), e.id.clone()));
                }
            }
        };
        consider(0, &[], &self.root);
        let mut order = 0;
        walk(&self.children, &mut Vec::new(), &mut |p, c| {
            order += 1;
            consider(order, p, &c.snapshot);
        });
        best.map(|(due, _, seq, path, id)| (path, id, seq, due))
    }

    /// An external event for the chart at `path` (the root: `&[]`), then
    /// whatever it causes in the tree.
    pub fn event(
        &mut self,
        m: &Machine<C>,
        path: &[String],
        event: Event,
    ) -> Result<Vec<Tagged>, ChartError> {
        let now = self.now_ms();
        let mut actions = Vec::new();
        let ran = self.on(m, path, |m, s| {
            s.now_ms = s.now_ms.max(now);
            transition_in_place(m, s, event, &mut actions)
        });
        match ran {
            Some(r) => {
                r?;
                self.absorb(m, path, actions)
            }
            None => Ok(Vec::new()),
        }
    }

    /// Fires the delayed event `id`/`seq` of the chart at `path` at its
    /// deadline (every chart's clock moves there), then what it causes.
    pub fn fire(
        &mut self,
        m: &Machine<C>,
        path: &[String],
        id: &str,
        seq: u64,
    ) -> Result<(Delivery, Vec<Tagged>), ChartError> {
        let due = self
            .snapshot_at(path)
            .and_then(|s| s.scheduled.iter().find(|e| e.id == id && e.seq == seq))
            .map(|e| e.due_ms);
        let Some(due) = due else {
            return Ok((Delivery::Stale, Vec::new()));
        };
        self.set_now(due);
        let mut actions = Vec::new();
        let d = self
            .on(m, path, |m, s| fire_scheduled(m, s, id, seq, &mut actions))
            .unwrap_or(Ok(Delivery::Stale))?;
        let out = self.absorb(m, path, actions)?;
        Ok((d, out))
    }

    /// The result of invocation `id` (started as `generation`) of the
    /// chart at `path`, then what it causes. Stale when that start is no
    /// longer in flight.
    pub fn done(
        &mut self,
        m: &Machine<C>,
        path: &[String],
        id: &str,
        generation: u64,
        result: Result<Value, Value>,
    ) -> Result<(Delivery, Vec<Tagged>), ChartError> {
        let now = self.now_ms();
        let mut actions = Vec::new();
        let d = self
            .on(m, path, |m, s| {
                s.now_ms = s.now_ms.max(now);
                invocation_done(m, s, id, generation, result, &mut actions)
            })
            .unwrap_or(Ok(Delivery::Stale))?;
        let out = self.absorb(m, path, actions)?;
        Ok((d, out))
    }

    /// Carries out what the tree itself does with `actions` (recorded by a
    /// macrostep of the chart at `from`): starts and stops child charts,
    /// routes events between charts, delivers finished children, each
    /// delivery one macrostep, until every chart is at rest. Returns the
    /// actions left for the owner, in order.
    pub fn absorb(
        &mut self,
        m: &Machine<C>,
        from: &[String],
        actions: Vec<Action>,
    ) -> Result<Vec<Tagged>, ChartError> {
        let mut out = Vec::new();
        let mut work = VecDeque::new();
        self.route(from, actions, &mut work, &mut out);
        self.check_done(from, &mut work);
        while let Some(w) = work.pop_front() {
            let now = self.now_ms();
            match w {
                Work::Start {
                    path,
                    id,
                    src,
                    generation,
                    mailbox,
                } => {
                    // Started and stopped in one macrostep: nothing to do.
                    let in_flight = self.snapshot_at(&path).is_some_and(|s| {
                        s.status == Status::Active
                            && s.invocations
                                .iter()
                                .any(|i| i.id == id && i.generation == generation)
                    });
                    let machine = self.chart(&src).cloned();
                    let (true, Some(machine)) = (in_flight, machine) else {
                        continue;
                    };
                    let mut actions = Vec::new();
                    let mut snap = initial_transition_for(&machine, now, true, &mut actions, None)?;
                    snap.epoch_ms = self.root.epoch_ms;
                    let child = Child {
                        id: id.clone(),
                        generation,
                        machine,
                        snapshot: snap,
                        children: ThinVec::new(),
                    };
                    let Some(siblings) = self.children_at(&path) else {
                        continue;
                    };
                    siblings.retain(|c| c.id != id);
                    siblings.push(child);
                    let mut at = path;
                    at.push(id);
                    self.route(&at, actions, &mut work, &mut out);
                    self.check_done(&at, &mut work);
                    for event in mailbox.into_iter().rev() {
                        work.push_front(Work::Event {
                            path: at.clone(),
                            event,
                        });
                    }
                }
                Work::Stop {
                    path,
                    id,
                    generation,
                } => {
                    // A done parent keeps its children listed, stopped.
                    let listed = self.snapshot_at(&path).is_some_and(|s| {
                        s.finished
                            .iter()
                            .any(|f| f.child.id == id && f.child.generation == generation)
                    });
                    if listed {
                        let mut at = path.clone();
                        at.push(id.clone());
                        if let Some(c) = self.children_at(&path).and_then(|sib| {
                            sib.iter_mut()
                                .find(|c| c.id == id && c.generation == generation)
                        }) {
                            teardown(c, &mut at, &mut out);
                            c.children.clear();
                            let s = &mut c.snapshot;
                            s.scheduled.clear();
                            s.invocations.clear();
                            s.finished.clear();
                            if s.status == Status::Active {
                                s.status = Status::Stopped;
                            }
                        }
                        continue;
                    }
                    let removed = self.children_at(&path).and_then(|sib| {
                        let pos = sib
                            .iter()
                            .position(|c| c.id == id && c.generation == generation)?;
                        Some(sib.remove(pos))
                    });
                    if let Some(gone) = removed {
                        let mut at = path;
                        at.push(id);
                        teardown(&gone, &mut at, &mut out);
                    }
                }
                Work::Event { path, event } => {
                    let mut actions = Vec::new();
                    let ran = self.on(m, &path, |m, s| {
                        if s.status != Status::Active {
                            return Ok(());
                        }
                        s.now_ms = s.now_ms.max(now);
                        transition_in_place(m, s, event, &mut actions)
                    });
                    if let Some(r) = ran {
                        r?;
                        self.route(&path, actions, &mut work, &mut out);
                        self.check_done(&path, &mut work);
                    }
                }
                Work::Done {
                    path,
                    id,
                    generation,
                    result,
                } => {
                    if !self.in_flight(&path, &id, generation) {
                        continue;
                    }
                    let mut at = path.clone();
                    at.push(id.clone());
                    let Some(c) = self.children_at(&path).and_then(|sib| {
                        sib.iter_mut()
                            .find(|c| c.id == id && c.generation == generation)
                    }) else {
                        continue;
                    };
                    // The finished child stays listed, as XState keeps it
                    // among the parent's children, but nothing of it runs
                    // any more.
                    teardown(c, &mut at, &mut out);
                    c.snapshot.scheduled.clear();
                    if !c.snapshot.invocations.is_empty() {
                        // A chart failed by an action leaves its children
                        // running; as a finished child it runs nothing.
                        c.snapshot.invocations.clear();
                        c.children.clear();
                    }
                    let mut actions = Vec::new();
                    let ran = self.on(m, &path, |m, s| {
                        s.now_ms = s.now_ms.max(now);
                        invocation_done(m, s, &id, generation, result, &mut actions)
                    });
                    if let Some(r) = ran {
                        r?;
                        self.route(&path, actions, &mut work, &mut out);
                        self.check_done(&path, &mut work);
                    }
                }
            }
        }
        self.prune(&mut out);
        Ok(out)
    }

    /// Is the child `id` started as `generation` in flight in the chart at
    /// `path`?
    fn in_flight(&self, path: &[String], id: &str, generation: u64) -> bool {
        self.snapshot_at(path).is_some_and(|s| {
            s.invocations
                .iter()
                .any(|i| i.id == id && i.generation == generation)
        })
    }

    /// Drops the child charts their parent no longer lists: a finished
    /// child once its invoking state is left or `stopChild` named it.
    fn prune(&mut self, out: &mut Vec<Tagged>) {
        fn listed<C>(parent: &Snapshot<C>, c: &Child<C>) -> bool {
            parent
                .invocations
                .iter()
                .any(|i| i.id == c.id && i.generation == c.generation)
                || parent
                    .finished
                    .iter()
                    .any(|f| f.child.id == c.id && f.child.generation == c.generation)
        }
        fn prune_at<C>(
            parent: &Snapshot<C>,
            children: &mut ThinVec<Child<C>>,
            path: &mut Path,
            out: &mut Vec<Tagged>,
        ) {
            children.retain(|c| {
                let keep = listed(parent, c);
                if !keep {
                    path.push(c.id.clone());
                    teardown(c, path, out);
                    path.pop();
                }
                keep
            });
            for c in children.iter_mut() {
                path.push(c.id.clone());
                prune_at(&c.snapshot, &mut c.children, path, out);
                path.pop();
            }
        }
        if self.children.is_empty() {
            return;
        }
        prune_at(&self.root, &mut self.children, &mut Vec::new(), out);
    }

    /// What the tree does itself with the actions of the chart at `from`;
    /// the rest goes to `out`.
    ///
    /// A `sendTo` reaches the actor its id named when the action ran: the
    /// child started last before it in these actions, else the running
    /// child (unless these actions stopped it), else the child these
    /// actions start next (a send from the entry actions of the invoking
    /// state, which the child takes once started).
    fn route(
        &mut self,
        from: &[String],
        actions: Vec<Action>,
        work: &mut VecDeque<Work>,
        out: &mut Vec<Tagged>,
    ) {
        // Sends waiting for a start later in these actions: (id, event).
        let mut early: Vec<(String, Event)> = Vec::new();
        // Ids stopped and started so far in these actions.
        let mut stopped: Vec<String> = Vec::new();
        let mut started: Vec<String> = Vec::new();
        let mut rest = actions.into_iter();
        while let Some(a) = rest.next() {
            match a {
                Action::StartInvoke {
                    id,
                    src,
                    input,
                    generation,
                } => {
                    let mine: Vec<Event> = take_early(&mut early, &id);
                    started.push(id.clone());
                    if self.chart(&src).is_some() {
                        work.push_back(Work::Start {
                            path: from.to_vec(),
                            id,
                            src,
                            generation,
                            mailbox: mine,
                        });
                    } else {
                        out.push(Tagged {
                            path: from.to_vec(),
                            action: Action::StartInvoke {
                                id: id.clone(),
                                src,
                                input,
                                generation,
                            },
                        });
                        out.extend(mine.into_iter().map(|event| Tagged {
                            path: from.to_vec(),
                            action: Action::SendTo {
                                to: id.clone(),
                                event,
                            },
                        }));
                    }
                }
                Action::StopInvoke { id, generation } => {
                    stopped.push(id.clone());
                    let running = self.children_at(from).is_some_and(|sib| {
                        sib.iter().any(|c| c.id == id && c.generation == generation)
                    });
                    if running {
                        work.push_back(Work::Stop {
                            path: from.to_vec(),
                            id,
                            generation,
                        });
                    } else {
                        out.push(Tagged {
                            path: from.to_vec(),
                            action: Action::StopInvoke { id, generation },
                        });
                    }
                }
                Action::SendTo { to, event } => {
                    let pending_start = started.contains(&to)
                        && work.iter().rev().any(|w| {
                            matches!(w, Work::Start { path, id, .. } if path == from && *id == to)
                        });
                    let running = !stopped.contains(&to)
                        && self
                            .children_at(from)
                            .is_some_and(|sib| sib.iter().any(|c| c.id == to));
                    let starts_later = || {
                        rest.as_slice()
                            .iter()
                            .any(|a| matches!(a, Action::StartInvoke { id, .. } if *id == to))
                    };
                    if pending_start {
                        let mailbox = work.iter_mut().rev().find_map(|w| match w {
                            Work::Start {
                                path, id, mailbox, ..
                            } if path == from && *id == to => Some(mailbox),
                            _ => None,
                        });
                        if let Some(mailbox) = mailbox {
                            mailbox.push(event);
                        }
                    } else if running {
                        let mut path = from.to_vec();
                        path.push(to);
                        work.push_back(Work::Event { path, event });
                    } else if !started.contains(&to) && starts_later() {
                        early.push((to, event));
                    } else {
                        out.push(Tagged {
                            path: from.to_vec(),
                            action: Action::SendTo { to, event },
                        });
                    }
                }
                Action::SendParent { event } if !from.is_empty() => {
                    work.push_back(Work::Event {
                        path: from[..from.len() - 1].to_vec(),
                        event,
                    });
                }
                action => out.push(Tagged {
                    path: from.to_vec(),
                    action,
                }),
            }
        }
    }

    /// A child chart that finished is delivered to its parent.
    fn check_done(&mut self, path: &[String], work: &mut VecDeque<Work>) {
        let Some((last, parent)) = path.split_last() else {
            return;
        };
        let Some(c) = find(&self.children, path) else {
            return;
        };
        if !self.in_flight(parent, last, c.generation) {
            return; // delivered already
        }
        let result = match c.snapshot.status {
            Status::Active => return,
            Status::Done => Ok(c.snapshot.output.as_deref().cloned().unwrap_or(Value::Null)),
            Status::Error | Status::Stopped => {
                Err(c.snapshot.error.as_deref().cloned().unwrap_or(Value::Null))
            }
        };
        work.push_back(Work::Done {
            path: parent.to_vec(),
            id: last.clone(),
            generation: c.generation,
            result,
        });
    }

    pub(crate) fn snapshot_at(&self, path: &[String]) -> Option<&Snapshot<C>> {
        if path.is_empty() {
            Some(&self.root)
        } else {
            self.child(path)
        }
    }

    /// Runs `f` on the chart at `path` with its machine.
    pub(crate) fn on<R>(
        &mut self,
        m: &Machine<C>,
        path: &[String],
        f: impl FnOnce(&Machine<C>, &mut Snapshot<C>) -> R,
    ) -> Option<R> {
        if path.is_empty() {
            return Some(f(m, &mut self.root));
        }
        let c = find_mut(&mut self.children, path)?;
        Some(f(&c.machine, &mut c.snapshot))
    }

    pub(crate) fn children_at(&mut self, path: &[String]) -> Option<&mut ThinVec<Child<C>>> {
        if path.is_empty() {
            return Some(&mut self.children);
        }
        find_mut(&mut self.children, path).map(|c| &mut c.children)
    }
}

/// The events of `early` sent to `id`, in order.
fn take_early(early: &mut Vec<(String, Event)>, id: &str) -> Vec<Event> {
    let mut mine = Vec::new();
    early.retain(|(to, event)| {
        if to == id {
            mine.push(event.clone());
            false
        } else {
            true
        }
    });
    mine
}

/// Disarms a removed chart's timers and stops its own invocations, all the
/// way down.
fn teardown<C>(c: &Child<C>, path: &mut Path, out: &mut Vec<Tagged>) {
    for s in &c.snapshot.scheduled {
        out.push(Tagged {
            path: path.clone(),
            action: Action::Unschedule {
                id: s.id.clone(),
                seq: s.seq,
            },
        });
    }
    for i in &c.snapshot.invocations {
        if c.children.iter().any(|k| k.id == i.id) {
            continue;
        }
        out.push(Tagged {
            path: path.clone(),
            action: Action::StopInvoke {
                id: i.id.clone(),
                generation: i.generation,
            },
        });
    }
    for k in &c.children {
        path.push(k.id.clone());
        teardown(k, path, out);
        path.pop();
    }
}

pub(crate) fn find<'a, C>(children: &'a [Child<C>], path: &[String]) -> Option<&'a Child<C>> {
    let (first, rest) = path.split_first()?;
    let c = children.iter().find(|c| &c.id == first)?;
    if rest.is_empty() {
        Some(c)
    } else {
        find(&c.children, rest)
    }
}

pub(crate) fn find_mut<'a, C>(
    children: &'a mut [Child<C>],
    path: &[String],
) -> Option<&'a mut Child<C>> {
    let (first, rest) = path.split_first()?;
    let c = children.iter_mut().find(|c| &c.id == first)?;
    if rest.is_empty() {
        Some(c)
    } else {
        find_mut(&mut c.children, rest)
    }
}

/// Calls `f` with each child's path, parents first, in start order.
pub(crate) fn walk<'a, C>(
    children: &'a [Child<C>],
    path: &mut Path,
    f: &mut dyn FnMut(&[String], &'a Child<C>),
) {
    for c in children {
        path.push(c.id.clone());
        f(path, c);
        walk(&c.children, path, f);
        path.pop();
    }
}

pub(crate) fn walk_mut<C>(children: &mut [Child<C>], f: &mut dyn FnMut(&mut Child<C>)) {
    for c in children {
        f(c);
        walk_mut(&mut c.children, f);
    }
}
