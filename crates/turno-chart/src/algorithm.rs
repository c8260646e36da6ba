//! The W3C SCXML algorithm for interpreting statecharts
//! (<https://www.w3.org/TR/scxml/#AlgorithmforSCXMLInterpretation>), with
//! XState v5's semantics where the two differ. Function names follow the
//! spec's Appendix D so one can be read against the other; each says where
//! XState departs and what turno does (see also `docs/statecharts.md`).
//! A machine's [`Semantics`] picks the rule at each such point: XState's
//! for JSON configs, the spec's for SCXML documents.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use serde_json::{Map, Value};
use smallvec::SmallVec;

use crate::actions::{Action, ActionScope, Effect, SendTarget};
use crate::event::{names, Event};
use crate::machine::{
    ActionDef, Delay, Guard, Machine, Plan, StateIdx, StateKind, TransIdx, ValueExpr,
};
use crate::semantics::{scxml_descriptor_matches, Semantics};
use crate::snapshot::{Finished, HistoryEntry, Invocation, Scheduled, Snapshot, StateSet, Status};
use crate::step_table::StepPlan;

/// Why a macrostep could not complete.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChartError {
    /// Eventless transitions (or raised events) kept firing without the
    /// chart coming to rest: a cycle. XState would loop forever.
    #[error("runaway loop while processing {event:?}: more than {limit} microsteps, cycling through {}", cycle.join(" -> "))]
    RunawayLoop {
        /// The event whose macrostep ran away.
        event: String,
        /// The microstep limit.
        limit: usize,
        /// The states entered along the repeating cycle, by id.
        cycle: Vec<String>,
    },
}

/// One step of the algorithm, for an inspector (the interpreter records
/// them in the runtime trace).
#[derive(Clone, Copy, Debug)]
pub enum Inspect<'a> {
    /// The chart starts processing an event (`internal`: raised).
    Event {
        /// The event.
        event: &'a Event,
        /// From the internal queue.
        internal: bool,
    },
    /// A state was exited.
    Exit(StateIdx),
    /// A transition was taken (after the exits, before the entries).
    Transition {
        /// Its source.
        source: StateIdx,
        /// The event's name; `None` for an eventless transition.
        event: Option<&'a str>,
        /// Its targets.
        targets: &'a [StateIdx],
        /// Its position in [`Machine::transitions`].
        index: TransIdx,
    },
    /// A state was entered.
    Enter(StateIdx),
}

/// Receives [`Inspect`] steps.
pub type Inspector<'a> = &'a mut dyn FnMut(Inspect<'_>);

/// Small lists that stay on the stack in the common case.
pub(crate) type Trans = SmallVec<[TransIdx; 4]>;
type States = SmallVec<[StateIdx; 8]>;
/// A microstep's exit set in exit order.
type ExitOrder = SmallVec<[StateIdx; 8]>;
type Refs<'a> = SmallVec<[TRef<'a>; 4]>;
/// One transition domain per transition of a microstep (`None`: above the
/// root).
type Domains = SmallVec<[Option<StateIdx>; 4]>;
/// SCXML: `(parent, history)` pairs whose default history content runs.
type HistoryContent = SmallVec<[(StateIdx, StateIdx); 2]>;

/// A transition as the algorithm sees it (the initial transition of the
/// root is not in the machine's table).
#[derive(Clone, Copy)]
struct TRef<'a> {
    source: StateIdx,
    targets: &'a [StateIdx],
    reenter: bool,
}

/// One macrostep in progress over a snapshot.
pub(crate) struct Run<'m, 's, C> {
    m: &'m Machine<C>,
    snap: &'s mut Snapshot<C>,
    actions: &'s mut Vec<Action>,
    /// The internal queue, created when the first event is raised.
    internal: Option<VecDeque<Event>>,
    effects: Vec<Effect>,
    scratch: Vec<TransIdx>,
    /// Set when a microstep assigned the context or changed the
    /// configuration or history (XState re-selects eventless transitions
    /// only then).
    changed: bool,
    /// Recent microsteps (transition source and targets), to name a cycle.
    recent: Vec<(StateIdx, Vec<StateIdx>)>,
    /// Microsteps of the current macrostep (recent ones are kept only near the limit).
    steps: usize,
    inspect: Option<&'s mut (dyn FnMut(Inspect<'_>) + 's)>,
    /// SCXML: `(parent, history)` for each history state whose default
    /// transition the entry set takes (its actions run after the parent's
    /// entry: the spec's `defaultHistoryContent`).
    history_content: RefCell<HistoryContent>,
    /// Set when a history state was read while computing a microstep's
    /// domains or entry set: the result then depends on the snapshot and
    /// is not kept as the transition's [`Plan`].
    history_read: Cell<bool>,
    /// Set when selection evaluated a guard.
    guard_read: bool,
    /// Set when a microstep's exits recorded history.
    history_written: bool,
    /// The event id under which the microstep about to run is kept in the
    /// machine's step table (its selection read no guard and no history).
    capture: Option<u32>,
    /// XState: why an action failed (a send with no target). The rest of
    /// the macrostep does not run, and the chart fails.
    failed: Option<String>,
    /// The state whose entry actions are running: a send to one of its own
    /// invocations reaches the child once it has started (XState resolves
    /// those ids after the entry actions).
    entering: Option<StateIdx>,
}

/// The generation a send to a finished invocation is bound to: no start
/// has it, so the send reaches nobody.
const FINISHED: u64 = u64::MAX;

impl<'m, 's, C: Clone> Run<'m, 's, C> {
    pub(crate) fn new(
        m: &'m Machine<C>,
        snap: &'s mut Snapshot<C>,
        actions: &'s mut Vec<Action>,
    ) -> Self {
        Run {
            m,
            snap,
            actions,
            internal: None,
            effects: Vec::new(),
            scratch: Vec::new(),
            changed: false,
            recent: Vec::new(),
            steps: 0,
            inspect: None,
            history_content: RefCell::new(SmallVec::new()),
            history_read: Cell::new(false),
            guard_read: false,
            history_written: false,
            capture: None,
            failed: None,
            entering: None,
        }
    }

    /// The snapshot a macrostep starts from, kept when an action may fail
    /// it (the machine sends, under XState's rules), with how many actions
    /// were recorded before.
    fn keep_start(&self) -> Option<(Snapshot<C>, usize)> {
        (self.m.sends && !self.scxml()).then(|| (self.snap.clone(), self.actions.len()))
    }

    /// XState fails an actor whose action throws: the snapshot stays the
    /// one before the macrostep (when it was kept), with status `error`
    /// and the error's message; nothing the macrostep asked for happens.
    fn fail_if_failed(&mut self, start: Option<(Snapshot<C>, usize)>) {
        let Some(message) = self.failed.take() else {
            return;
        };
        if let Some((snap, mark)) = start {
            *self.snap = snap;
            self.actions.truncate(mark);
        }
        self.snap.status = Status::Error;
        self.snap.error = Some(Box::new(Value::String(message)));
    }

    /// The start a send to `to` is bound to: a child in flight, invoked or
    /// spawned (its generation); an invocation of the state being entered
    /// (`Some(None)`: bound by id, fixed up once it starts); a child that
    /// finished and is still listed (`Some(Some(FINISHED))`: XState keeps
    /// the finished actor as a child until its state is left or it is
    /// stopped, so the send is no error, and reaches nobody). `None`: no
    /// such actor.
    fn send_target(&self, to: &str) -> Option<Option<u64>> {
        if let Some(i) = self.snap.invocations.iter().find(|i| i.id == to) {
            return Some(Some(i.generation));
        }
        let entering = self
            .entering
            .is_some_and(|s| self.m.state(s).invoke.iter().any(|i| &*i.id == to));
        if entering {
            return Some(None);
        }
        self.snap
            .finished
            .iter()
            .any(|f| f.child.id == to)
            .then_some(Some(FINISHED))
    }

    /// XState's `stopChild(id)`: the child listed under `id`, in flight
    /// (stopped) or finished, is no longer a child. `replaced`: a spawn
    /// takes the id over.
    fn forget_child(&mut self, id: &str, replaced: bool) {
        // XState deletes the key of the child's own id: for a child spawned
        // without one (listed as `undefined`, its own id a session id) the
        // listing stays, the child stopped.
        let unnamed = |c: &Invocation| c.unnamed && !replaced;
        if let Some(pos) = self.snap.invocations.iter().position(|i| i.id == id) {
            let inv = self.snap.invocations.remove(pos);
            self.actions.push(Action::StopInvoke {
                id: inv.id.clone(),
                generation: inv.generation,
            });
            if unnamed(&inv) {
                self.snap.finished.push(Finished {
                    child: inv,
                    status: Status::Stopped,
                });
                return;
            }
        }
        self.snap
            .finished
            .retain(|f| f.child.id != id || unnamed(&f.child));
    }

    pub(crate) fn inspected<'i: 's>(mut self, inspect: Option<Inspector<'i>>) -> Self {
        self.inspect = inspect.map(|f| f as &'s mut (dyn FnMut(Inspect<'_>) + 's));
        self
    }

    #[inline]
    fn internal_queue(&mut self) -> &mut VecDeque<Event> {
        self.internal.get_or_insert_with(VecDeque::new)
    }

    #[inline]
    fn note(&mut self, step: Inspect<'_>) {
        if let Some(f) = &mut self.inspect {
            f(step);
        }
    }

    #[inline]
    fn scxml(&self) -> bool {
        self.m.semantics == Semantics::Scxml
    }

    /// The machine's event hook (SCXML: bind `_event`) for the event about
    /// to be processed.
    fn bind_event(&mut self, event: &Event) {
        if let Some(hook) = &self.m.event_hook {
            let errors = hook(&mut self.snap.context, event);
            self.internal_queue().extend(errors);
        }
    }

    fn t(&self, t: TransIdx) -> TRef<'m> {
        let tr = &self.m.transitions[t as usize];
        TRef {
            source: tr.source,
            targets: &tr.targets,
            reenter: tr.reenter,
        }
    }

    /// A whole macrostep from the step table, when the event's plan in
    /// this configuration runs no content and leaves the chart where no
    /// eventless transition can be enabled: nothing is raised, nothing is
    /// scheduled, the chart stays active, so the macrostep is the plan's
    /// configuration copied in (what [`macrostep`](Self::macrostep) would
    /// compute, without building a `Run`). False when that does not hold:
    /// the caller runs the macrostep.
    pub(crate) fn quiet_macrostep(m: &Machine<C>, snap: &mut Snapshot<C>, event: &Event) -> bool {
        if snap.status != Status::Active
            || m.event_hook.is_some()
            || m.semantics != Semantics::XState
            || !m.steps.enabled()
        {
            return false;
        }
        let Some(e) = m.event_id(event.name()) else {
            return false;
        };
        match m.steps.get(&snap.config, e) {
            // An unhandled invocation error fails the chart: not quiet.
            Some(p)
                if p.quiet
                    && !p.after.intersects(&m.eventless)
                    && (!p.enabled.is_empty()
                        || !event.name().starts_with("xstate.error.actor.")) =>
            {
                snap.config.copy_from(&p.after);
                true
            }
            _ => false,
        }
    }

    // ---- the macrostep ------------------------------------------------

    /// Enters the initial configuration (the spec's `interpret`, with
    /// XState's initial transition: every initial state, root included, is
    /// entered by one reentering transition of the root) and runs the rest
    /// of the first macrostep.
    ///
    /// SCXML: the root's initial transition (its targets may be several
    /// and deep) from the root, which is entered with them.
    pub(crate) fn initial(&mut self) -> Result<(), ChartError> {
        let targets = if self.scxml() {
            let root = self.m.state(0);
            match (&root.initial_targets[..], root.initial) {
                ([], Some(i)) => vec![i],
                (ts, _) => ts.to_vec(),
            }
        } else {
            self.get_initial_state_nodes()
        };
        let init = TRef {
            source: 0,
            targets: &targets,
            reenter: true,
        };
        let event = Event::new("xstate.init");
        self.note(Inspect::Event {
            event: &event,
            internal: false,
        });
        self.microstep_refs(&[init], &event, true);
        let r = self.settle(event);
        self.fail_if_failed(None);
        r
    }

    /// Processes one external event: the spec's `mainEventLoop` body for
    /// one external event, then the internal queue and eventless
    /// transitions until the chart is at rest (XState's `macrostep`).
    pub(crate) fn macrostep(&mut self, event: Event) -> Result<(), ChartError> {
        if self.snap.status != Status::Active {
            return Ok(());
        }
        self.note(Inspect::Event {
            event: &event,
            internal: false,
        });
        self.bind_event(&event);
        let mut enabled = Trans::new();
        let plan = self.select_for(&event, &mut enabled);
        let none = plan.map_or(enabled.is_empty(), |p| p.enabled.is_empty());
        if none && !self.scxml() && event.name().starts_with("xstate.error.actor.") {
            // XState: an unhandled invocation error fails the chart.
            self.capture = None;
            self.snap.status = Status::Error;
            self.snap.error = Some(Box::new(event.get("error").cloned().unwrap_or(Value::Null)));
            self.stop_everything();
            return Ok(());
        }
        let start = self.keep_start();
        self.microstep_for(plan, &enabled, &event);
        let r = self.settle(event);
        self.fail_if_failed(start);
        r
    }

    /// The spec's `selectTransitions` for `event`, through the machine's
    /// step table: a kept plan for this configuration and event is returned
    /// (and `out` left empty); otherwise the transitions are selected into
    /// `out`, and when the selection read no guard and no history the
    /// microstep that follows is kept as a plan.
    fn select_for(&mut self, event: &Event, out: &mut Trans) -> Option<&'m StepPlan> {
        self.capture = None;
        let m = self.m;
        let id = match m.event_hook {
            None if m.steps.enabled() && !self.scxml() => m.event_id(event.name()),
            _ => None,
        };
        let Some(e) = id else {
            self.select_transitions(event, out);
            return None;
        };
        if let Some(p) = m.steps.get(&self.snap.config, e) {
            return Some(p);
        }
        self.guard_read = false;
        self.history_read.set(false);
        self.select_transitions(event, out);
        if !self.guard_read && !self.history_read.get() {
            self.capture = Some(e);
        }
        None
    }

    /// The microstep for what [`select_for`](Self::select_for) found: a
    /// kept plan replayed, or the algorithm's microstep over `enabled`.
    fn microstep_for(&mut self, plan: Option<&'m StepPlan>, enabled: &Trans, event: &Event) {
        match plan {
            Some(p) => self.replay(p, event),
            None => {
                let refs: Refs<'m> = enabled.iter().map(|&t| self.t(t)).collect();
                self.microstep(enabled, &refs, event);
            }
        }
    }

    /// Runs a kept microstep plan: the exits in their order with their
    /// content, the transitions' actions, the entries with theirs, exactly
    /// as [`microstep`](Self::microstep) runs them once it has computed the
    /// sets; a plan without content only moves the configuration.
    fn replay(&mut self, p: &'m StepPlan, event: &Event) {
        let Some(&first) = p.enabled.first() else {
            return;
        };
        self.note_recent(first);
        if p.quiet && self.inspect.is_none() {
            if !p.exits.is_empty() || !p.to_enter.is_empty() {
                self.snap.config.copy_from(&p.after);
                self.changed = true;
            }
            return;
        }
        self.exit_in_order(&p.exits, event);
        self.take_transitions(&p.enabled, event);
        self.enter_set(&p.to_enter, &p.default_entry, SmallVec::new(), event, false);
        self.after_done(event);
    }

    /// Moves the chart from `source` to `targets` by one synthetic
    /// reentering transition (exit actions of what is left, entry actions
    /// of what is entered), then settles. Restoring a persisted chart uses
    /// it to map an interrupted position to a safe state (`persist`).
    pub(crate) fn goto(
        &mut self,
        source: StateIdx,
        targets: &[StateIdx],
        event: Event,
    ) -> Result<(), ChartError> {
        if self.snap.status != Status::Active {
            return Ok(());
        }
        let t = TRef {
            source,
            targets,
            reenter: true,
        };
        let start = self.keep_start();
        self.microstep_refs(&[t], &event, false);
        let r = self.settle(event);
        self.fail_if_failed(start);
        r
    }

    /// Puts `events` on the internal queue and runs them (and what they
    /// cause) as the rest of the current macrostep.
    pub(crate) fn continue_with(&mut self, events: Vec<Event>) -> Result<(), ChartError> {
        if self.snap.status != Status::Active {
            return Ok(());
        }
        let Some(first) = events.first().cloned() else {
            return Ok(());
        };
        let start = self.keep_start();
        self.internal_queue().extend(events);
        let r = self.settle(first);
        self.fail_if_failed(start);
        r
    }

    /// Eventless transitions after every microstep, then the internal queue,
    /// until neither has anything left. XState re-selects eventless
    /// transitions after an eventless microstep only when it changed
    /// something; SCXML after every microstep.
    fn settle(&mut self, mut event: Event) -> Result<(), ChartError> {
        let mut select_eventless = true;
        let mut steps = 0usize;
        let mut enabled = Trans::new();
        while self.snap.status == Status::Active && self.failed.is_none() {
            enabled.clear();
            self.capture = None;
            let mut plan = None;
            if select_eventless {
                self.select_eventless_transitions(&event, &mut enabled);
            }
            let eventless = !enabled.is_empty();
            if !eventless {
                let Some(next) = self.internal.as_mut().and_then(VecDeque::pop_front) else {
                    break;
                };
                event = next;
                self.note(Inspect::Event {
                    event: &event,
                    internal: true,
                });
                self.bind_event(&event);
                plan = self.select_for(&event, &mut enabled);
            }
            steps += 1;
            self.steps = steps;
            if steps > self.m.max_microsteps {
                return Err(self.runaway(&event));
            }
            self.changed = false;
            self.microstep_for(plan, &enabled, &event);
            select_eventless = !eventless || self.changed || self.scxml();
        }
        if self.snap.status != Status::Active && self.failed.is_none() {
            self.stop_everything();
        }
        Ok(())
    }

    fn runaway(&self, event: &Event) -> ChartError {
        // The shortest period with which the recent microsteps repeat.
        let steps: Vec<&(StateIdx, Vec<StateIdx>)> = self.recent.iter().collect();
        let n = steps.len();
        let mut period = n.min(8);
        for p in 1..=n / 2 {
            if (n - p..n).all(|i| steps[i] == steps[i - p]) {
                period = p;
                break;
            }
        }
        let mut cycle: Vec<String> = Vec::new();
        for (source, targets) in &steps[n - period..] {
            let name = if targets.is_empty() {
                format!("{} (targetless)", self.m.state(*source).id)
            } else {
                targets
                    .iter()
                    .map(|&t| self.m.state(t).id.to_string())
                    .collect::<Vec<_>>()
                    .join("+")
            };
            cycle.push(name);
        }
        if let Some(first) = cycle.first().cloned() {
            cycle.push(first);
        }
        ChartError::RunawayLoop {
            event: event.name().to_string(),
            limit: self.m.max_microsteps,
            cycle,
        }
    }

    /// Stops an active chart from outside as SCXML's `exitInterpreter`
    /// does for a cancelled session: the exit actions of every active
    /// state run, innermost first (the configuration is kept, as for a done
    /// chart), then its invocations, children and delayed events stop.
    pub(crate) fn exit_interpreter(&mut self, event: &Event) {
        if self.snap.status != Status::Active {
            return;
        }
        let mut order: States = States::new();
        self.snap.config.for_each_rev(|s| order.push(s));
        let m = self.m;
        for s in order {
            self.note(Inspect::Exit(s));
            self.execute_content(&m.state(s).exit, event);
        }
        self.snap.status = Status::Stopped;
        self.stop_everything();
    }

    /// A done or failed chart stops its children and forgets its delayed
    /// events. XState keeps a done machine's children listed (those still
    /// running then as `stopped`); a failed or stopped one lists none.
    fn stop_everything(&mut self) {
        let keep = self.snap.status == Status::Done && !self.scxml();
        for inv in std::mem::take(&mut self.snap.invocations) {
            self.actions.push(Action::StopInvoke {
                id: inv.id.clone(),
                generation: inv.generation,
            });
            if keep {
                self.snap.finished.push(Finished {
                    child: inv,
                    status: Status::Stopped,
                });
            }
        }
        if !keep {
            self.snap.finished.clear();
        }
        for s in std::mem::take(&mut self.snap.scheduled) {
            self.actions.push(Action::Unschedule {
                id: s.id,
                seq: s.seq,
            });
        }
    }

    // ---- selection ----------------------------------------------------

    /// The spec's `selectTransitions`
    /// (<https://www.w3.org/TR/scxml/#selectTransitions>), as XState walks
    /// it: below a compound state its active child is tried first and the
    /// state's own transitions only if the child's subtree has none; below
    /// a parallel state every region is tried, and the parallel state's own
    /// transitions only if no region has one. Within a state, candidates
    /// come in XState's order (exact descriptor, then wildcards longest
    /// first) and the first whose guard passes is taken.
    ///
    /// SCXML: for each active atomic state in document order, the state and
    /// then its ancestors are searched, transitions in document order, for
    /// the first whose descriptor list matches (by token prefix) and whose
    /// guard passes.
    pub(crate) fn select_transitions(&mut self, event: &Event, out: &mut Trans) {
        if self.scxml() {
            self.select_transitions_scxml(event, out);
            return;
        }
        match self.m.event_id(event.name()) {
            Some(e) => self.select_by_table(e, event, out),
            None => {
                self.select_node(0, None, event, out);
            }
        }
        if out.len() > 1 {
            let filtered = self.remove_conflicting_transitions(out);
            *out = filtered;
        }
    }

    /// [`select_transitions`](Self::select_transitions) for an event name
    /// the machine's table knows: XState's walk visits the active states
    /// in post-order (a compound state's active child before it, a
    /// parallel state's regions in order before it) and tries a state's
    /// own candidates only when nothing was selected below it. Only the
    /// active states with a candidate for the event can select anything,
    /// so those (`config ∩ handlers[event]`) are taken in post-order and
    /// skipped when a selected source lies below them: the same
    /// transitions, in the same order, with the same guards evaluated in
    /// the same order, without walking the rest of the configuration.
    fn select_by_table(&mut self, e: u32, event: &Event, out: &mut Trans) {
        let m = self.m;
        let mut order: States = self
            .snap
            .config
            .and(&m.handlers[e as usize])
            .ones()
            .collect();
        if order.len() > 1 {
            order.sort_unstable_by_key(|&s| m.post[s as usize]);
        }
        for s in order {
            let last = m.state(s).last_descendant;
            let below = out.iter().any(|&t| {
                let src = m.transitions[t as usize].source;
                src > s && src <= last
            });
            if !below {
                self.next(s, Some(e), event, out);
            }
        }
    }

    fn select_transitions_scxml(&mut self, event: &Event, out: &mut Trans) {
        let m = self.m;
        let mut atomics: States = States::new();
        self.snap.config.for_each(|s| {
            if m.atomic[s as usize] {
                atomics.push(s)
            }
        });
        for s in atomics {
            let mut anc = Some(s);
            'walk: while let Some(a) = anc {
                for (d, ts) in &m.state(a).on {
                    if !scxml_descriptor_matches(d, event.name()) {
                        continue;
                    }
                    for &t in ts {
                        if self.guard_passes(t, event) {
                            if !out.contains(&t) {
                                out.push(t);
                            }
                            break 'walk;
                        }
                    }
                }
                anc = m.state(a).parent;
            }
        }
        if out.len() > 1 {
            let filtered = self.remove_conflicting_transitions(out);
            *out = filtered;
        }
    }

    fn guard_passes(&mut self, t: TransIdx, event: &Event) -> bool {
        let m = self.m;
        match &m.transitions[t as usize].guard {
            None => true,
            Some(g) => {
                self.guard_read = true;
                self.eval_guard(g, event)
            }
        }
    }

    fn select_node(
        &mut self,
        s: StateIdx,
        event_id: Option<u32>,
        event: &Event,
        out: &mut Trans,
    ) -> bool {
        let node = self.m.state(s);
        match node.kind {
            StateKind::Compound => {
                let child = node
                    .children
                    .iter()
                    .copied()
                    .find(|&c| self.snap.config.contains(c));
                if let Some(c) = child {
                    if self.select_node(c, event_id, event, out) {
                        return true;
                    }
                }
            }
            StateKind::Parallel => {
                let mut found = false;
                for &c in &node.children {
                    if self.snap.config.contains(c) {
                        found |= self.select_node(c, event_id, event, out);
                    }
                }
                if found {
                    return true;
                }
            }
            _ => {}
        }
        self.next(s, event_id, event, out)
    }

    /// The first enabled candidate of one state.
    fn next(&mut self, s: StateIdx, event_id: Option<u32>, event: &Event, out: &mut Trans) -> bool {
        let m = self.m;
        let mut found = None;
        if let Some(e) = event_id {
            // The machine's table: no scratch list to build.
            for &t in m.candidates_of(e, s) {
                if self.guard_passes(t, event) {
                    found = Some(t);
                    break;
                }
            }
        } else {
            let mut scratch = std::mem::take(&mut self.scratch);
            for &t in m.candidates(event_id, event.name(), s, &mut scratch) {
                if self.guard_passes(t, event) {
                    found = Some(t);
                    break;
                }
            }
            self.scratch = scratch;
        }
        match found {
            Some(t) => {
                out.push(t);
                true
            }
            None => false,
        }
    }

    /// The spec's `selectEventlessTransitions`
    /// (<https://www.w3.org/TR/scxml/#selectEventlessTransitions>): for each
    /// active atomic state in document order, the first `always` transition
    /// whose guard passes, looking at the state and then its ancestors.
    /// (XState walks its active states in insertion order, which differs
    /// from document order only after a region was re-entered.)
    pub(crate) fn select_eventless_transitions(&mut self, event: &Event, out: &mut Trans) {
        let m = self.m;
        if !m.has_eventless || !self.snap.config.intersects(&m.eventless) {
            return;
        }
        let mut atomics: smallvec::SmallVec<[StateIdx; 8]> = smallvec::SmallVec::new();
        self.snap.config.for_each(|s| {
            if m.atomic[s as usize] {
                atomics.push(s)
            }
        });
        for s in atomics {
            let mut anc = Some(s);
            'walk: while let Some(a) = anc {
                for &t in &m.state(a).always {
                    if self.guard_passes(t, event) {
                        if !out.contains(&t) {
                            out.push(t);
                        }
                        break 'walk;
                    }
                }
                anc = m.state(a).parent;
            }
        }
        if out.len() > 1 {
            let filtered = self.remove_conflicting_transitions(out);
            *out = filtered;
        }
    }

    /// The spec's `removeConflictingTransitions`
    /// (<https://www.w3.org/TR/scxml/#removeConflictingTransitions>): two
    /// transitions conflict when their exit sets intersect; the one whose
    /// source is a descendant of the other's wins, else the earlier one.
    pub(crate) fn remove_conflicting_transitions(&self, enabled: &[TransIdx]) -> Trans {
        let mut filtered: SmallVec<[(TransIdx, StateSet); 4]> = SmallVec::new();
        for &t1 in enabled {
            let r1 = self.t(t1);
            let exit1 = self.compute_exit_set(&[r1], &[self.get_transition_domain(&r1)]);
            let mut preempted = false;
            let mut remove: SmallVec<[usize; 4]> = SmallVec::new();
            for (i, (t2, exit2)) in filtered.iter().enumerate() {
                if exit1.intersects(exit2) {
                    if self.m.is_descendant(r1.source, self.t(*t2).source) {
                        remove.push(i);
                    } else {
                        preempted = true;
                        break;
                    }
                }
            }
            if !preempted {
                for i in remove.into_iter().rev() {
                    filtered.remove(i);
                }
                filtered.push((t1, exit1));
            }
        }
        filtered.into_iter().map(|(t, _)| t).collect()
    }

    /// A guard's verdict; a [`Guard::Try`] that fails places its error on
    /// the internal queue and counts as false (SCXML's `conditionMatch`).
    pub(crate) fn eval_guard(&mut self, g: &Guard<C>, event: &Event) -> bool {
        match g {
            Guard::Named { imp, params, .. } => imp(&self.snap.context, event, params),
            Guard::And(gs) => gs.iter().all(|g| self.eval_guard(g, event)),
            Guard::Or(gs) => gs.iter().any(|g| self.eval_guard(g, event)),
            Guard::Not(g) => !self.eval_guard(g, event),
            Guard::StateIn(states, _) => states.iter().all(|&s| self.snap.config.contains(s)),
            Guard::Try { imp, .. } => match imp(&self.snap.context, event) {
                Ok(b) => b,
                Err(e) => {
                    self.internal_queue().push_back(e);
                    false
                }
            },
        }
    }

    // ---- the microstep ------------------------------------------------

    /// Only a macrostep near its limit keeps its recent microsteps (to
    /// name the cycle if it runs away): the common path allocates nothing.
    #[inline]
    fn note_recent(&mut self, first: TransIdx) {
        if self.steps + 64 > self.m.max_microsteps {
            if self.recent.len() == 64 {
                self.recent.remove(0);
            }
            let r = self.t(first);
            self.recent.push((r.source, r.targets.to_vec()));
        }
    }

    /// The transitions' own content, in selection order (between the exits
    /// and the entries).
    fn take_transitions(&mut self, enabled: &[TransIdx], event: &Event) {
        for &t in enabled {
            let tr = &self.m.transitions[t as usize];
            if self.inspect.is_some() {
                let name = tr.event.as_ref().map(|_| event.name());
                self.note(Inspect::Transition {
                    source: tr.source,
                    event: name,
                    targets: &tr.targets,
                    index: t,
                });
            }
            self.execute_content(&tr.actions, event);
        }
    }

    fn microstep(&mut self, enabled: &[TransIdx], refs: &[TRef<'m>], event: &Event) {
        let capture = self.capture.take();
        let before = capture.map(|_| self.snap.config.clone());
        if enabled.is_empty() {
            if let (Some(e), Some(before)) = (capture, before) {
                let after = before.clone();
                self.m.steps.insert(StepPlan {
                    before,
                    event: e,
                    enabled: SmallVec::new(),
                    exits: SmallVec::new(),
                    to_enter: StateSet::default(),
                    default_entry: StateSet::default(),
                    after,
                    quiet: true,
                });
            }
            return;
        }
        self.note_recent(enabled[0]);
        // A transition taken alone whose domain and entry set were fixed by
        // the machine (no history involved) reuses them: the common path
        // then walks no ancestors.
        let plan = match enabled {
            [t] => self.m.plans[*t as usize].get(),
            _ => None,
        };
        self.history_read.set(false);
        self.history_written = false;
        let domains: Domains = match plan {
            Some(p) => smallvec::smallvec![p.domain],
            None => self.get_transition_domains(refs),
        };
        let exits = self.exit_states(refs, &domains, event);
        self.take_transitions(enabled, event);
        let (to_enter, default_entry, history_content) = match plan {
            Some(p) => (
                Cow::Borrowed(&p.to_enter),
                Cow::Borrowed(&p.default_entry),
                HistoryContent::new(),
            ),
            None => {
                let (to_enter, default_entry, history_content) = self.entry_set_of(refs, &domains);
                if let ([t], false) = (enabled, self.history_read.get()) {
                    let _ = self.m.plans[*t as usize].set(Plan {
                        domain: domains[0],
                        to_enter: to_enter.clone(),
                        default_entry: default_entry.clone(),
                    });
                }
                (
                    Cow::Owned(to_enter),
                    Cow::Owned(default_entry),
                    history_content,
                )
            }
        };
        let plain = history_content.is_empty();
        self.enter_set(&to_enter, &default_entry, history_content, event, false);
        // The step table keeps what this computed when it depended on the
        // configuration and the event alone.
        if let (Some(e), Some(before), true, false, false) = (
            capture,
            before,
            plain,
            self.history_read.get(),
            self.history_written,
        ) {
            let quiet = self.is_quiet(enabled, &exits, &to_enter);
            self.m.steps.insert(StepPlan {
                before,
                event: e,
                enabled: enabled.iter().copied().collect(),
                exits,
                to_enter: to_enter.into_owned(),
                default_entry: default_entry.into_owned(),
                after: self.snap.config.clone(),
                quiet,
            });
        }
        self.after_done(event);
    }

    /// A microstep that runs no content at all: its replay only moves the
    /// configuration.
    fn is_quiet(&self, enabled: &[TransIdx], exits: &[StateIdx], to_enter: &StateSet) -> bool {
        let m = self.m;
        enabled
            .iter()
            .all(|&t| m.transitions[t as usize].actions.is_empty())
            && exits.iter().all(|&s| {
                let n = m.state(s);
                n.exit.is_empty() && n.after.is_empty() && n.invoke.is_empty()
            })
            && to_enter.ones().all(|s| {
                let n = m.state(s);
                n.entry.is_empty()
                    && n.after.is_empty()
                    && n.invoke.is_empty()
                    && n.initial_actions.is_empty()
                    && n.kind != StateKind::Final
            })
    }

    fn microstep_refs(&mut self, refs: &[TRef<'_>], event: &Event, initial: bool) {
        let domains = self.get_transition_domains(refs);
        if !initial {
            self.exit_states(refs, &domains, event);
        }
        self.enter_states(refs, &domains, event, initial);
        self.after_done(event);
    }

    /// XState: a chart that reached its top-level final state runs the exit
    /// actions of every state still active (the configuration itself stays,
    /// so `value` shows the final state).
    fn after_done(&mut self, event: &Event) {
        if self.snap.status != Status::Done {
            return;
        }
        let mut order = Vec::new();
        self.snap.config.for_each_rev(|s| order.push(s));
        let m = self.m;
        for s in order {
            let node = m.state(s);
            self.execute_content(&node.exit, event);
            for a in &node.after {
                self.cancel(&a.event);
            }
            // SCXML's `exitInterpreter`: the top-level final state's done
            // data, evaluated as it is exited, is the session's output.
            if self.scxml() && node.kind == StateKind::Final && node.parent == Some(0) {
                if let Some(o) = &node.output {
                    self.snap.output = self.eval_value_try(o, event).map(Box::new);
                }
            }
        }
    }

    // ---- exits --------------------------------------------------------

    /// The spec's `computeExitSet`
    /// (<https://www.w3.org/TR/scxml/#computeExitSet>): the active
    /// descendants of each targeted transition's domain, and the domain
    /// itself for a reentering transition whose domain is its source.
    /// `domains` are the transitions' domains (see
    /// [`Run::get_transition_domains`]).
    fn compute_exit_set(&self, ts: &[TRef<'_>], domains: &[Option<StateIdx>]) -> StateSet {
        let mut exit = StateSet::with_states(self.m.n());
        for (t, &domain) in ts.iter().zip(domains) {
            if t.targets.is_empty() {
                continue;
            }
            match domain {
                None => exit.insert_all(&self.snap.config),
                Some(d) => {
                    if t.reenter && t.source == d {
                        exit.insert(d);
                    }
                    let last = self.m.state(d).last_descendant;
                    exit.insert_from_range(&self.snap.config, d + 1, last);
                }
            }
        }
        exit
    }

    /// The spec's `exitStates`
    /// (<https://www.w3.org/TR/scxml/#exitStates>): records history, then
    /// exits in reverse document order running exit actions, cancelling
    /// `after` events and stopping invocations.
    fn exit_states(
        &mut self,
        ts: &[TRef<'_>],
        domains: &[Option<StateIdx>],
        event: &Event,
    ) -> ExitOrder {
        let exit = self.compute_exit_set(ts, domains);
        let mut order = ExitOrder::new();
        if exit.is_empty() {
            return order;
        }
        let m = self.m;
        exit.for_each_rev(|s| order.push(s));
        for &s in order.iter().filter(|_| m.has_history) {
            for &h in &m.state(s).children {
                let StateKind::History { deep } = m.state(h).kind else {
                    continue;
                };
                let mut states = Vec::new();
                self.snap.config.for_each(|a| {
                    let keep = if deep {
                        m.atomic[a as usize] && m.is_descendant(a, s)
                    } else {
                        m.state(a).parent == Some(s)
                    };
                    if keep {
                        states.push(a);
                    }
                });
                match self.snap.history.iter_mut().find(|e| e.history == h) {
                    Some(e) => e.states = states,
                    None => self.snap.history.push(HistoryEntry { history: h, states }),
                }
                self.changed = true;
                self.history_written = true;
            }
        }
        self.exit_in_order(&order, event);
        order
    }

    /// The rest of `exitStates`: each state of the exit set, in exit order,
    /// runs its exit actions, cancels its `after` events, stops its
    /// invocations and leaves the configuration.
    fn exit_in_order(&mut self, order: &[StateIdx], event: &Event) {
        let m = self.m;
        for &s in order {
            let node = m.state(s);
            self.note(Inspect::Exit(s));
            self.execute_content(&node.exit, event);
            for a in &node.after {
                self.cancel(&a.event);
            }
            for inv in &node.invoke {
                if let Some(pos) = self
                    .snap
                    .invocations
                    .iter()
                    .position(|i| !i.spawned && *i.id == *inv.id)
                {
                    let inv = self.snap.invocations.remove(pos);
                    self.actions.push(Action::StopInvoke {
                        id: inv.id,
                        generation: inv.generation,
                    });
                }
                if !self.snap.finished.is_empty() {
                    self.snap
                        .finished
                        .retain(|f| f.child.spawned || *f.child.id != *inv.id);
                }
            }
            self.snap.config.remove(s);
            self.changed = true;
        }
    }

    // ---- entries ------------------------------------------------------

    /// The spec's `enterStates`
    /// (<https://www.w3.org/TR/scxml/#enterStates>): enters the entry set in
    /// document order (entry actions, then `after` schedules, then
    /// invocations, then initial-transition actions), and raises
    /// `xstate.done.state.*` when a final state completes its parent,
    /// bubbling through parallel ancestors; reaching a final child of the
    /// root makes the chart done.
    fn enter_states(
        &mut self,
        ts: &[TRef<'_>],
        domains: &[Option<StateIdx>],
        event: &Event,
        initial: bool,
    ) {
        let (to_enter, default_entry, history_content) = self.entry_set_of(ts, domains);
        self.enter_set(&to_enter, &default_entry, history_content, event, initial);
    }

    /// The entry set of a microstep, the states entered by default, and
    /// (SCXML) the history states whose default content runs.
    fn entry_set_of(
        &self,
        ts: &[TRef<'_>],
        domains: &[Option<StateIdx>],
    ) -> (StateSet, StateSet, HistoryContent) {
        let n = self.m.n();
        let mut to_enter = StateSet::with_states(n);
        let mut default_entry = StateSet::with_states(n);
        self.history_content.borrow_mut().clear();
        self.compute_entry_set(ts, domains, &mut to_enter, &mut default_entry);
        self.complete_entry_set(&mut to_enter, &mut default_entry);
        let history_content = std::mem::take(&mut *self.history_content.borrow_mut());
        (to_enter, default_entry, history_content)
    }

    /// Not a step of the spec's procedure: closes a microstep's entry set
    /// when its transitions do not conflict but one exits what another's
    /// entries stand on. A non-reentering transition to a history that
    /// remembers its own source exits nothing, so it conflicts with nothing,
    /// and enters the remembered states below a parent it takes to stay
    /// active; a second transition of the same microstep can exit that
    /// parent (a reentering self-transition in a sibling region of a
    /// parallel root exits the whole configuration). `computeEntrySet`
    /// (and XState's) then enters the children without their parent, and
    /// regions skip that parent because something below it is entered. Here
    /// every entered state gets the ancestors that are no longer active
    /// (each parallel one with its other regions), and a compound or
    /// parallel state entered without an active or entered child gets its
    /// default descendants. When the procedure's set is legal, as in every
    /// case XState agrees with, nothing changes. Runs after the exits, so
    /// the configuration is what stays active.
    fn complete_entry_set(&self, to_enter: &mut StateSet, default_entry: &mut StateSet) {
        let m = self.m;
        let config = &self.snap.config;
        // The common case, a legal set, is recognised without allocating:
        // every entered state's parent stays or is entered, and every
        // entered compound or parallel state has what it needs below it.
        let live = |c: StateIdx| to_enter.contains(c) || config.contains(c);
        let complete = to_enter.ones().all(|s| {
            let node = m.state(s);
            let parent_ok = node.parent.is_none_or(|p| p == 0 || live(p));
            let children_ok = match node.kind {
                StateKind::Compound => node.children.iter().any(|&c| live(c)),
                StateKind::Parallel => node
                    .children
                    .iter()
                    .all(|&c| m.state(c).is_history() || live(c)),
                _ => true,
            };
            parent_ok && children_ok
        });
        if complete {
            return;
        }
        let entered: Vec<StateIdx> = to_enter.ones().collect();
        for s in entered {
            let mut a = m.state(s).parent;
            while let Some(anc) = a {
                // The root stands for the chart itself: always active.
                if anc == 0 || config.contains(anc) || to_enter.contains(anc) {
                    break;
                }
                self.add_ancestor_states_to_enter(&[anc], None, to_enter, default_entry);
                a = m.state(anc).parent;
            }
        }
        let entered: Vec<StateIdx> = to_enter.ones().collect();
        for s in entered {
            let node = m.state(s);
            match node.kind {
                StateKind::Compound
                    if !node
                        .children
                        .iter()
                        .any(|&c| to_enter.contains(c) || config.contains(c)) =>
                {
                    self.add_descendant_states_to_enter(s, to_enter, default_entry);
                }
                StateKind::Parallel => {
                    for &c in &node.children {
                        if !m.state(c).is_history()
                            && !to_enter.contains(c)
                            && !config.contains(c)
                            && !self.has_descendant_in(to_enter, c)
                        {
                            to_enter.insert(c);
                            default_entry.insert(c);
                            self.add_descendant_states_to_enter(c, to_enter, default_entry);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Enters `to_enter` in document order (the rest of `enterStates`).
    fn enter_set(
        &mut self,
        to_enter: &StateSet,
        default_entry: &StateSet,
        history_content: HistoryContent,
        event: &Event,
        initial: bool,
    ) {
        let n = self.m.n();
        let m = self.m;
        let mut completed = StateSet::with_states(n);
        for s in to_enter.ones() {
            self.snap.config.insert(s);
            self.changed = true;
            self.note(Inspect::Enter(s));
            let node = m.state(s);
            let entry_seq = self.snap.next_seq;
            self.entering = Some(s);
            self.execute_content(&node.entry, event);
            self.entering = None;
            for a in &node.after {
                let delay = match &a.delay {
                    Delay::Ms(ms) => *ms,
                    Delay::Named(_, f) => f(&self.snap.context, event, &Value::Null),
                };
                self.schedule(
                    a.event.to_string(),
                    Event::new(a.event.clone()),
                    delay,
                    SendTarget::Own,
                );
            }
            for inv in &node.invoke {
                let input = match &inv.input {
                    None => Value::Null,
                    Some(e) => self.eval_value(e, event),
                };
                let generation = self.seq();
                self.snap.invocations.push(Invocation {
                    id: inv.id.to_string(),
                    src: inv.src.to_string(),
                    generation,
                    state: node.id.to_string(),
                    spawned: false,
                    unnamed: false,
                    input: input.clone(),
                    started_ms: self.snap.now_ms,
                });
                self.actions.push(Action::StartInvoke {
                    id: inv.id.to_string(),
                    src: inv.src.to_string(),
                    input,
                    generation,
                });
                // Delayed sends the entry actions addressed to this child
                // are bound to this start.
                for d in self.snap.scheduled.iter_mut() {
                    if d.seq >= entry_seq
                        && d.generation.is_none()
                        && matches!(&d.to, SendTarget::Actor(a) if *a == *inv.id)
                    {
                        d.generation = Some(generation);
                    }
                }
            }
            if default_entry.contains(s) || (initial && s == 0) {
                self.execute_content(&node.initial_actions, event);
            }
            for &(_, h) in history_content.iter().filter(|(p, _)| *p == s) {
                self.execute_content(&m.state(h).history_actions, event);
            }
            if node.kind == StateKind::Final && self.scxml() {
                self.final_entered_scxml(s, event);
                continue;
            }
            if node.kind == StateKind::Final {
                let parent = node.parent;
                let mut marker = match parent {
                    Some(p) if m.state(p).kind == StateKind::Parallel => Some(p),
                    Some(p) => m.state(p).parent,
                    None => None,
                };
                let mut completion = marker.unwrap_or(s);
                if let Some(p) = parent {
                    if m.state(p).kind == StateKind::Compound {
                        let output = node.output.as_ref().map(|o| self.eval_value(o, event));
                        self.internal_queue()
                            .push_back(done_event(&m.state(p).id, output));
                    }
                }
                while let Some(a) = marker {
                    if m.state(a).kind != StateKind::Parallel
                        || completed.contains(a)
                        || !self.is_in_final_state(a)
                    {
                        break;
                    }
                    completed.insert(a);
                    self.internal_queue()
                        .push_back(done_event(&m.state(a).id, None));
                    completion = a;
                    marker = m.state(a).parent;
                }
                if marker.is_some() {
                    continue;
                }
                self.snap.status = Status::Done;
                self.snap.output = self.machine_output(completion, event).map(Box::new);
            }
        }
    }

    /// SCXML's `enterStates` for a final state: a child of the root halts
    /// the session (its done data is read when it is exited); otherwise
    /// `done.state.<parent>` with the done data as `data`, and
    /// `done.state.<grandparent>` when that is a parallel state whose
    /// regions are all final (no further bubbling).
    fn final_entered_scxml(&mut self, s: StateIdx, event: &Event) {
        let m = self.m;
        let node = m.state(s);
        let parent = node.parent.expect("a final state has a parent");
        if parent == 0 {
            self.snap.status = Status::Done;
            return;
        }
        let data = match &node.output {
            Some(o) => self.eval_value_try(o, event),
            None => None,
        };
        self.internal_queue()
            .push_back(scxml_done_event(&m.state(parent).id, data));
        if let Some(gp) = m.state(parent).parent {
            if m.state(gp).kind == StateKind::Parallel && self.is_in_final_state(gp) {
                self.internal_queue()
                    .push_back(scxml_done_event(&m.state(gp).id, None));
            }
        }
    }

    /// A value; a [`ValueExpr::Try`] that fails places its error on the
    /// internal queue and gives none.
    fn eval_value_try(&mut self, e: &ValueExpr<C>, event: &Event) -> Option<Value> {
        match e {
            ValueExpr::Try(f) => match f(&self.snap.context, event) {
                Ok(v) => Some(v),
                Err(err) => {
                    self.internal_queue().push_back(err);
                    None
                }
            },
            other => Some(self.eval_value(other, event)),
        }
    }

    fn machine_output(&self, completion: StateIdx, event: &Event) -> Option<Value> {
        let root = self.m.state(0);
        let expr = root.output.as_ref()?;
        let node = self.m.state(completion);
        let inner = match (&node.output, node.parent) {
            (Some(o), Some(_)) => Some(self.eval_value(o, event)),
            _ => None,
        };
        let done = done_event(&node.id, inner);
        Some(self.eval_value(expr, &done))
    }

    fn eval_value(&self, e: &ValueExpr<C>, event: &Event) -> Value {
        match e {
            ValueExpr::Value(v) => v.clone(),
            ValueExpr::Fn(f) => f(&self.snap.context, event),
            // Outside SCXML's done data (where errors are raised) a failed
            // expression gives `null`.
            ValueExpr::Try(f) => f(&self.snap.context, event).unwrap_or(Value::Null),
        }
    }

    /// The spec's `computeEntrySet`
    /// (<https://www.w3.org/TR/scxml/#computeEntrySet>), with XState's
    /// `reenter`: a target equal to its source is entered again only when
    /// the transition reenters or its domain lies above the source.
    /// `domains` are the ones the exit set was computed with (see
    /// [`Run::get_transition_domains`]); the effective targets are read
    /// from the history as it is now, just recorded by the exits.
    fn compute_entry_set(
        &self,
        ts: &[TRef<'_>],
        domains: &[Option<StateIdx>],
        to_enter: &mut StateSet,
        default_entry: &mut StateSet,
    ) {
        for (t, &domain) in ts.iter().zip(domains) {
            let own_domain =
                domain.filter(|&d| (!t.reenter || t.source != d) && !to_enter.contains(d));
            for &s in t.targets {
                if !self.m.state(s).is_history()
                    && (t.source != s || Some(t.source) != domain || t.reenter)
                {
                    to_enter.insert(s);
                    default_entry.insert(s);
                }
                self.add_descendant_states_to_enter(s, to_enter, default_entry);
            }
            let reentrancy = if t.source == 0 && t.reenter {
                None
            } else {
                domain
            };
            for s in self.get_effective_target_states(t) {
                let mut ancestors = self.get_proper_ancestors(s, domain);
                if let Some(d) = domain {
                    if self.m.state(d).kind == StateKind::Parallel {
                        ancestors.push(d);
                    }
                }
                self.add_ancestor_states_to_enter(&ancestors, reentrancy, to_enter, default_entry);
            }
            // The domain is entered only when it was exited (a reentering
            // transition of its own source). A history target can name it
            // otherwise: a non-reentering transition from an atomic state
            // to a history that remembers that very state has the source as
            // domain, exits nothing and so conflicts with nothing (XState
            // enters the source a second time). Entering it here would hide
            // it from a transition that does exit it along with its parent:
            // that one enters the parent's regions only where nothing in
            // the set lies below them.
            if let Some(d) = own_domain {
                to_enter.remove(d);
                default_entry.remove(d);
            }
        }
    }

    /// The spec's `addDescendantStatesToEnter`
    /// (<https://www.w3.org/TR/scxml/#addDescendantStatesToEnter>): a
    /// history state's recorded (or default) states, a compound state's
    /// initial child, every region of a parallel state.
    fn add_descendant_states_to_enter(
        &self,
        s: StateIdx,
        to_enter: &mut StateSet,
        default_entry: &mut StateSet,
    ) {
        let m = self.m;
        let node = m.state(s);
        match node.kind {
            StateKind::History { .. } => {
                self.history_read.set(true);
                let parent = node.parent.expect("history has a parent");
                // SCXML enters a remembered or default compound state by
                // its initial transition (its actions run); XState does not.
                let scxml = self.scxml();
                if let Some(h) = self.history_of(s) {
                    for &r in h {
                        to_enter.insert(r);
                        if scxml {
                            default_entry.insert(r);
                        }
                        self.add_descendant_states_to_enter(r, to_enter, default_entry);
                    }
                    for &r in h {
                        let anc = self.get_proper_ancestors(r, Some(parent));
                        self.add_ancestor_states_to_enter(&anc, None, to_enter, default_entry);
                    }
                } else {
                    let (targets, is_parent_initial) = self.history_default(s);
                    if scxml {
                        self.history_content.borrow_mut().push((parent, s));
                    }
                    for &r in &targets {
                        to_enter.insert(r);
                        if is_parent_initial {
                            default_entry.insert(parent);
                        }
                        if scxml {
                            default_entry.insert(r);
                        }
                        self.add_descendant_states_to_enter(r, to_enter, default_entry);
                    }
                    for &r in &targets {
                        let anc = self.get_proper_ancestors(r, Some(parent));
                        self.add_ancestor_states_to_enter(&anc, None, to_enter, default_entry);
                    }
                }
            }
            StateKind::Compound => {
                let init = node.initial.expect("compound states have an initial child");
                let targets = match &node.initial_targets[..] {
                    ts if !ts.is_empty() && self.scxml() => ts,
                    _ => std::slice::from_ref(&init),
                };
                for &t in targets {
                    if !m.state(t).is_history() {
                        to_enter.insert(t);
                        default_entry.insert(t);
                    }
                    self.add_descendant_states_to_enter(t, to_enter, default_entry);
                }
                for &t in targets {
                    let anc = self.get_proper_ancestors(t, Some(s));
                    self.add_ancestor_states_to_enter(&anc, None, to_enter, default_entry);
                }
            }
            StateKind::Parallel => {
                for &c in &node.children {
                    if m.state(c).is_history() {
                        continue;
                    }
                    if !self.has_descendant_in(to_enter, c) {
                        to_enter.insert(c);
                        default_entry.insert(c);
                        self.add_descendant_states_to_enter(c, to_enter, default_entry);
                    }
                }
            }
            _ => {}
        }
    }

    /// The spec's `addAncestorStatesToEnter`
    /// (<https://www.w3.org/TR/scxml/#addAncestorStatesToEnter>): the
    /// ancestors below the domain, and for a parallel ancestor every region
    /// that nothing else enters.
    fn add_ancestor_states_to_enter(
        &self,
        ancestors: &[StateIdx],
        reentrancy: Option<StateIdx>,
        to_enter: &mut StateSet,
        default_entry: &mut StateSet,
    ) {
        for &a in ancestors {
            if reentrancy.is_none_or(|d| self.m.is_descendant(a, d)) {
                to_enter.insert(a);
            }
            if self.m.state(a).kind == StateKind::Parallel {
                for &c in &self.m.state(a).children {
                    if self.m.state(c).is_history() {
                        continue;
                    }
                    if !self.has_descendant_in(to_enter, c) {
                        to_enter.insert(c);
                        if self.scxml() {
                            default_entry.insert(c);
                        }
                        self.add_descendant_states_to_enter(c, to_enter, default_entry);
                    }
                }
            }
        }
    }

    fn has_descendant_in(&self, set: &StateSet, s: StateIdx) -> bool {
        let last = self.m.state(s).last_descendant;
        let mut found = false;
        set.for_each(|x| {
            if x > s && x <= last {
                found = true
            }
        });
        found
    }

    // ---- helpers named in the spec -------------------------------------

    /// The spec's `isInFinalState`
    /// (<https://www.w3.org/TR/scxml/#isInFinalState>): a compound state
    /// with an active final child; a parallel state whose regions all are.
    pub(crate) fn is_in_final_state(&self, s: StateIdx) -> bool {
        let node = self.m.state(s);
        match node.kind {
            StateKind::Compound => node
                .children
                .iter()
                .any(|&c| self.m.state(c).kind == StateKind::Final && self.snap.config.contains(c)),
            StateKind::Parallel => node
                .children
                .iter()
                .filter(|&&c| !self.m.state(c).is_history())
                .all(|&c| self.is_in_final_state(c)),
            StateKind::Final => true,
            _ => false,
        }
    }

    /// The domain of each transition of a microstep, computed once, before
    /// its exits. Appendix D (and XState) compute it again in
    /// `computeEntrySet`, after `exitStates` has recorded history; for a
    /// history target the effective targets, and so the domain, can then
    /// change (a history defaulting to its parallel parent, or one first
    /// recorded by this very microstep), and whatever was exited above the
    /// second domain is never re-entered: a parallel state left with some
    /// of its regions, a state active without its parent. One domain for
    /// both sets keeps the configuration legal.
    fn get_transition_domains(&self, ts: &[TRef<'_>]) -> Domains {
        ts.iter().map(|t| self.get_transition_domain(t)).collect()
    }

    /// The spec's `getTransitionDomain`
    /// (<https://www.w3.org/TR/scxml/#getTransitionDomain>). XState's rule:
    /// a non-reentering transition whose targets all lie in (or are) its
    /// source has the source as domain; otherwise the least common
    /// ancestor of source and targets. `None` stands for "above the root"
    /// (a reentering transition of the root).
    ///
    /// SCXML: the source when the transition is internal (`reenter` false),
    /// the source compound and every target a proper descendant of it;
    /// otherwise the least common compound ancestor. The root's initial
    /// transition has the domain "above the root".
    fn get_transition_domain(&self, t: &TRef<'_>) -> Option<StateIdx> {
        if self.scxml() {
            return self.get_transition_domain_scxml(t);
        }
        let targets = self.get_effective_target_states(t);
        if !t.reenter
            && targets
                .iter()
                .all(|&s| s == t.source || self.m.is_descendant(s, t.source))
        {
            return Some(t.source);
        }
        let mut all = targets;
        all.push(t.source);
        match self.find_lcca(&all) {
            Some(a) => Some(a),
            None if t.reenter => None,
            None => Some(0),
        }
    }

    fn get_transition_domain_scxml(&self, t: &TRef<'_>) -> Option<StateIdx> {
        if t.source == 0 {
            return None;
        }
        let targets = self.get_effective_target_states(t);
        if !t.reenter
            && self.m.state(t.source).kind == StateKind::Compound
            && targets.iter().all(|&s| self.m.is_descendant(s, t.source))
        {
            return Some(t.source);
        }
        // The spec's findLCCA: only compound ancestors (the root is one).
        let mut a = self.m.state(t.source).parent;
        while let Some(anc) = a {
            if self.m.state(anc).kind == StateKind::Compound
                && targets.iter().all(|&s| self.m.is_descendant(s, anc))
            {
                return Some(anc);
            }
            a = self.m.state(anc).parent;
        }
        Some(0)
    }

    /// The spec's `findLCCA` (<https://www.w3.org/TR/scxml/#findLCCA>).
    /// XState considers every proper ancestor of the first state, parallel
    /// ones included (the spec skips those); turno follows XState.
    fn find_lcca(&self, states: &[StateIdx]) -> Option<StateIdx> {
        let (&head, tail) = states.split_first()?;
        let mut a = self.m.state(head).parent;
        while let Some(anc) = a {
            if tail.iter().all(|&s| self.m.is_descendant(s, anc)) {
                return Some(anc);
            }
            a = self.m.state(anc).parent;
        }
        None
    }

    /// The spec's `getProperAncestors`
    /// (<https://www.w3.org/TR/scxml/#getProperAncestors>): from the parent
    /// up to, excluding, `upto` (`None`: to the root, included).
    pub(crate) fn get_proper_ancestors(&self, s: StateIdx, upto: Option<StateIdx>) -> States {
        let mut out = States::new();
        if Some(s) == upto {
            return out;
        }
        let mut a = self.m.state(s).parent;
        while let Some(anc) = a {
            if Some(anc) == upto {
                break;
            }
            out.push(anc);
            a = self.m.state(anc).parent;
        }
        out
    }

    /// The spec's `getEffectiveTargetStates`
    /// (<https://www.w3.org/TR/scxml/#getEffectiveTargetStates>): targets
    /// with history states replaced by what they remember (or their
    /// default).
    fn get_effective_target_states(&self, t: &TRef<'_>) -> States {
        let mut out = States::new();
        for &s in t.targets {
            self.effective_into(s, &mut out);
        }
        out
    }

    fn effective_into(&self, s: StateIdx, out: &mut States) {
        if !self.m.state(s).is_history() {
            if !out.contains(&s) {
                out.push(s);
            }
            return;
        }
        self.history_read.set(true);
        if let Some(h) = self.history_of(s) {
            for &r in h {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
            return;
        }
        for r in self.history_default(s).0 {
            self.effective_into(r, out);
        }
    }

    fn history_of(&self, h: StateIdx) -> Option<&[StateIdx]> {
        self.snap
            .history
            .iter()
            .find(|e| e.history == h)
            .map(|e| e.states.as_slice())
    }

    /// A history state's default transition targets, and whether they are
    /// its parent's initial (XState: the parent's initial when no
    /// `target`, the parent itself under a parallel parent).
    fn history_default(&self, h: StateIdx) -> (States, bool) {
        let node = self.m.state(h);
        if !node.history_default.is_empty() {
            return (node.history_default.iter().copied().collect(), false);
        }
        let parent = node.parent.expect("history has a parent");
        let p = self.m.state(parent);
        match (p.kind, p.initial) {
            (StateKind::Parallel, _) => (States::from_slice(&[parent]), false),
            (_, Some(i)) => (States::from_slice(&[i]), true),
            _ => (States::new(), false),
        }
    }

    /// XState's `getInitialStateNodes(root)`: the root, each compound
    /// state's initial child and every region, recursively.
    fn get_initial_state_nodes(&self) -> Vec<StateIdx> {
        let mut out = Vec::new();
        let mut stack = vec![0 as StateIdx];
        while let Some(s) = stack.pop() {
            if out.contains(&s) {
                continue;
            }
            out.push(s);
            let node = self.m.state(s);
            match node.kind {
                StateKind::Compound => stack.extend(node.initial),
                StateKind::Parallel => {
                    for &c in node.children.iter().rev() {
                        if !self.m.state(c).is_history() {
                            stack.push(c);
                        }
                    }
                }
                _ => {}
            }
        }
        out
    }

    // ---- executable content -------------------------------------------

    /// The spec's `executeContent`: runs named actions in order; assigns
    /// change the context at once, raised events join the internal queue,
    /// everything else becomes an [`Action`] for the interpreter.
    fn execute_content(&mut self, actions: &[ActionDef<C>], event: &Event) {
        for a in actions {
            if self.failed.is_some() {
                return;
            }
            let mut assigned = false;
            {
                let mut scope = ActionScope {
                    context: &mut self.snap.context,
                    assigned: &mut assigned,
                    event,
                    params: &a.params,
                    effects: &mut self.effects,
                };
                (a.imp)(&mut scope);
            }
            if assigned {
                self.changed = true;
            }
            if !self.effects.is_empty() {
                let effects = std::mem::take(&mut self.effects);
                for e in effects {
                    if self.failed.is_none() {
                        self.apply_effect(e);
                    }
                }
            }
        }
    }

    fn apply_effect(&mut self, e: Effect) {
        match e {
            Effect::Raise {
                event,
                delay_ms: None,
                ..
            } => self.internal_queue().push_back(event),
            Effect::Raise {
                event,
                delay_ms: Some(d),
                id,
            } => {
                let id = id.unwrap_or_else(|| format!("raise:{}", self.snap.next_seq));
                self.schedule(id, event, d, SendTarget::Own);
            }
            Effect::Cancel(id) => self.cancel(&id),
            Effect::Send {
                to,
                event,
                delay_ms,
                id,
            } => {
                // XState resolves the target when the action runs: no such
                // actor (or no parent) is an error of the action.
                let generation = match &to {
                    SendTarget::Actor(a) if !self.scxml() => match self.send_target(a) {
                        Some(g) => g,
                        None => return self.fail_send(a),
                    },
                    SendTarget::Parent if !self.scxml() && !self.snap.has_parent => {
                        return self.fail_send("#_parent");
                    }
                    _ => None,
                };
                match (delay_ms, to) {
                    (None, SendTarget::Own) => self.internal_queue().push_back(event),
                    (None, SendTarget::Actor(to)) => {
                        self.actions.push(Action::SendTo { to, event })
                    }
                    (None, SendTarget::Parent) => self.actions.push(Action::SendParent { event }),
                    (Some(d), to) => {
                        let id = id.unwrap_or_else(|| format!("send:{}", self.snap.next_seq));
                        self.schedule(id, event, d, to);
                        if let Some(last) = self.snap.scheduled.last_mut() {
                            last.generation = generation;
                        }
                    }
                }
            }
            Effect::Plain(a) => self.actions.push(a),
            Effect::Spawn { id, src, input } => {
                // XState lists a child spawned without an id under the key
                // `undefined` (its `children[id]` with `id` undefined).
                let unnamed = id.is_none();
                let id = id.unwrap_or_else(|| "undefined".to_string());
                self.forget_child(&id, true);
                let generation = self.seq();
                self.snap.invocations.push(Invocation {
                    id: id.clone(),
                    src: src.clone(),
                    generation,
                    state: String::new(),
                    spawned: true,
                    unnamed,
                    input: input.clone(),
                    started_ms: self.snap.now_ms,
                });
                self.actions.push(Action::StartInvoke {
                    id,
                    src,
                    input,
                    generation,
                });
            }
            Effect::StopChild(id) => self.forget_child(&id, false),
        }
    }

    fn fail_send(&mut self, to: &str) {
        self.failed = Some(format!(
            "Unable to send event to actor '{to}' from machine '{}'.",
            self.m.id()
        ));
    }

    fn seq(&mut self) -> u64 {
        let s = self.snap.next_seq;
        self.snap.next_seq += 1;
        s
    }

    fn schedule(&mut self, id: String, event: Event, delay_ms: u64, to: SendTarget) {
        // A new schedule under a pending id replaces it.
        self.cancel(&id);
        let seq = self.seq();
        let due_ms = self.snap.now_ms.saturating_add(delay_ms);
        self.actions.push(Action::Schedule {
            id: id.clone(),
            seq,
            due_ms,
        });
        self.snap.scheduled.push(Scheduled {
            id,
            seq,
            due_ms,
            delay_ms,
            event,
            to,
            generation: None,
        });
    }

    fn cancel(&mut self, id: &str) {
        if let Some(pos) = self.snap.scheduled.iter().position(|s| s.id == id) {
            let s = self.snap.scheduled.remove(pos);
            self.actions.push(Action::Unschedule {
                id: s.id,
                seq: s.seq,
            });
        }
    }
}

/// SCXML's `done.state.<id>`, the done data under `data` (`_event.data`).
fn scxml_done_event(id: &str, data: Option<Value>) -> Event {
    match data {
        Some(v) => {
            let mut m = Map::new();
            m.insert("data".into(), v);
            Event::with_data(format!("done.state.{id}"), Value::Object(m))
        }
        None => Event::new(format!("done.state.{id}")),
    }
}

fn done_event(id: &str, output: Option<Value>) -> Event {
    match output {
        Some(v) => {
            let mut m = Map::new();
            m.insert("output".into(), v);
            Event::with_data(names::done_state(id), Value::Object(m))
        }
        None => Event::new(names::done_state(id)),
    }
}

#[cfg(test)]
#[path = "algorithm_tests.rs"]
mod tests;
