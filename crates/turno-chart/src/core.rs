//! The pure entry points: no I/O, no clock. Time enters only as data (the
//! snapshot's `now_ms`, set by whoever drives the chart).

use serde_json::{Map, Value};
use thin_vec::ThinVec;

use crate::actions::{Action, SendTarget};
use crate::algorithm::{ChartError, Inspector, Run};
use crate::event::{names, Event};
use crate::machine::Machine;
use crate::snapshot::{Finished, Snapshot, StateSet, Status};

/// A snapshot and the actions the interpreter must carry out, in order.
pub type Step<C> = (Snapshot<C>, Vec<Action>);

/// The chart before its first macrostep: only the initial context.
fn pre_initial<C: Clone>(m: &Machine<C>, now_ms: u64) -> Snapshot<C> {
    Snapshot {
        status: Status::Active,
        config: StateSet::with_states(m.n()),
        context: m.initial_context().clone(),
        history: ThinVec::new(),
        output: None,
        error: None,
        scheduled: ThinVec::new(),
        invocations: ThinVec::new(),
        finished: ThinVec::new(),
        now_ms,
        next_seq: 0,
        machine_version: m.version().map(str::to_string),
        epoch_ms: None,
        has_parent: false,
    }
}

/// The initial snapshot: the initial configuration entered, the first
/// macrostep run (eventless transitions, raised events), at time 0.
///
/// ```
/// use turno_chart::{initial_transition, load_json, stdlib, transition, Event};
/// let m = load_json(r#"{"initial": "idle", "states": {
///     "idle": {"on": {"GO": "busy"}}, "busy": {}}}"#, &stdlib::implementations()).unwrap();
/// let (s0, _) = initial_transition(&m).unwrap();
/// assert_eq!(serde_json::to_string(&s0.value(&m)).unwrap(), r#""idle""#);
/// let (s1, _) = transition(&m, &s0, Event::new("GO")).unwrap();
/// assert_eq!(serde_json::to_string(&s1.value(&m)).unwrap(), r#""busy""#);
/// ```
pub fn initial_transition<C: Clone>(m: &Machine<C>) -> Result<Step<C>, ChartError> {
    initial_transition_at(m, 0)
}

/// [`initial_transition`] with the chart's clock starting at `now_ms`.
pub fn initial_transition_at<C: Clone>(m: &Machine<C>, now_ms: u64) -> Result<Step<C>, ChartError> {
    let mut snap = pre_initial(m, now_ms);
    let mut actions = Vec::new();
    Run::new(m, &mut snap, &mut actions).initial()?;
    Ok((snap, actions))
}

/// [`initial_transition`] starting from `context` instead of the machine's
/// initial context (a machine shared by sessions that each own their data,
/// as SCXML sessions of one document do).
pub fn initial_transition_with<C: Clone>(
    m: &Machine<C>,
    context: C,
    actions: &mut Vec<Action>,
) -> Result<Snapshot<C>, ChartError> {
    let mut snap = pre_initial(m, 0);
    snap.context = context;
    Run::new(m, &mut snap, actions).initial()?;
    Ok(snap)
}

/// One macrostep for an external event: a new snapshot and the actions.
/// The input snapshot is not changed.
pub fn transition<C: Clone>(
    m: &Machine<C>,
    snapshot: &Snapshot<C>,
    event: Event,
) -> Result<Step<C>, ChartError> {
    let mut snap = snapshot.clone();
    let mut actions = Vec::new();
    transition_in_place(m, &mut snap, event, &mut actions)?;
    Ok((snap, actions))
}

/// [`transition`] on a snapshot the caller owns, appending to `actions`
/// (what the interpreter actor uses: nothing is cloned). After an error the
/// snapshot is as the failed macrostep left it.
pub fn transition_in_place<C: Clone>(
    m: &Machine<C>,
    snapshot: &mut Snapshot<C>,
    event: Event,
    actions: &mut Vec<Action>,
) -> Result<(), ChartError> {
    if Run::quiet_macrostep(m, snapshot, &event) {
        return Ok(());
    }
    Run::new(m, snapshot, actions).macrostep(event)
}

/// [`initial_transition_at`] on a snapshot the caller owns, reporting
/// each step to `inspect`.
pub fn initial_transition_inspected<C: Clone>(
    m: &Machine<C>,
    now_ms: u64,
    actions: &mut Vec<Action>,
    inspect: Option<Inspector<'_>>,
) -> Result<Snapshot<C>, ChartError> {
    initial_transition_for(m, now_ms, false, actions, inspect)
}

/// [`initial_transition_inspected`] for a chart that has a parent or not
/// ([`Snapshot::has_parent`]): a child chart may `sendParent` from its
/// first entry actions.
pub(crate) fn initial_transition_for<C: Clone>(
    m: &Machine<C>,
    now_ms: u64,
    has_parent: bool,
    actions: &mut Vec<Action>,
    inspect: Option<Inspector<'_>>,
) -> Result<Snapshot<C>, ChartError> {
    let mut snap = pre_initial(m, now_ms);
    snap.has_parent = has_parent;
    Run::new(m, &mut snap, actions)
        .inspected(inspect)
        .initial()?;
    Ok(snap)
}

/// [`transition_in_place`] reporting each step to `inspect`.
pub fn transition_inspected<C: Clone>(
    m: &Machine<C>,
    snapshot: &mut Snapshot<C>,
    event: Event,
    actions: &mut Vec<Action>,
    inspect: Option<Inspector<'_>>,
) -> Result<(), ChartError> {
    // An inspector sees every step: only an uninspected macrostep may be
    // a bare copy of a kept configuration.
    if inspect.is_none() && Run::quiet_macrostep(m, snapshot, &event) {
        return Ok(());
    }
    Run::new(m, snapshot, actions)
        .inspected(inspect)
        .macrostep(event)
}

/// Runs `events` as internal events of the macrostep that produced
/// `snapshot` (before any further external event), and what they cause,
/// until the chart is at rest. An SCXML session uses it for errors raised
/// while starting invocations, which the spec runs in the same macrostep.
pub fn continue_macrostep<C: Clone>(
    m: &Machine<C>,
    snapshot: &mut Snapshot<C>,
    events: Vec<Event>,
    actions: &mut Vec<Action>,
) -> Result<(), ChartError> {
    Run::new(m, snapshot, actions).continue_with(events)
}

/// Stops an active chart from outside, running the exit actions of every
/// active state innermost first (SCXML's `exitInterpreter` for a cancelled
/// session); the status becomes `Stopped` and the actions stop its
/// invocations and timers. The configuration is kept.
pub fn exit_interpreter<C: Clone>(
    m: &Machine<C>,
    snapshot: &mut Snapshot<C>,
    event: Event,
    actions: &mut Vec<Action>,
) {
    Run::new(m, snapshot, actions).exit_interpreter(&event)
}

/// The earliest pending delayed event due at or before `limit_ms`, as
/// `(id, seq, due_ms)`; ties go to the one scheduled first.
pub fn next_due<C>(snapshot: &Snapshot<C>, limit_ms: u64) -> Option<(String, u64, u64)> {
    snapshot
        .scheduled
        .iter()
        .filter(|s| s.due_ms <= limit_ms)
        .min_by_key(|s| (s.due_ms, s.seq))
        .map(|s| (s.id.clone(), s.seq, s.due_ms))
}

/// What became of a fired timer or a finished invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// It was processed as a macrostep (or sent on, see the actions).
    Delivered,
    /// It no longer matched what the chart waits for (cancelled, replaced,
    /// its state left): dropped.
    Stale,
}

/// Fires the delayed event `id`/`seq` at its deadline: the clock moves to
/// the deadline, the event is removed from the snapshot and processed (for
/// the chart itself) or becomes a [`Action::SendTo`]/[`Action::SendParent`].
pub fn fire_scheduled<C: Clone>(
    m: &Machine<C>,
    snapshot: &mut Snapshot<C>,
    id: &str,
    seq: u64,
    actions: &mut Vec<Action>,
) -> Result<Delivery, ChartError> {
    fire_scheduled_inspected(m, snapshot, id, seq, actions, None)
}

/// [`fire_scheduled`] reporting each step to `inspect`.
pub fn fire_scheduled_inspected<C: Clone>(
    m: &Machine<C>,
    snapshot: &mut Snapshot<C>,
    id: &str,
    seq: u64,
    actions: &mut Vec<Action>,
    inspect: Option<Inspector<'_>>,
) -> Result<Delivery, ChartError> {
    let Some(pos) = snapshot
        .scheduled
        .iter()
        .position(|s| s.id == id && s.seq == seq)
    else {
        return Ok(Delivery::Stale);
    };
    let s = snapshot.scheduled.remove(pos);
    snapshot.now_ms = snapshot.now_ms.max(s.due_ms);
    match s.to {
        SendTarget::Own => transition_inspected(m, snapshot, s.event, actions, inspect)?,
        // Bound to a start that is no longer in flight: the actor it was
        // sent to has stopped, and the event reaches nobody.
        SendTarget::Actor(to)
            if s.generation.is_some_and(|g| {
                !snapshot
                    .invocations
                    .iter()
                    .any(|i| i.id == to && i.generation == g)
            }) =>
        {
            return Ok(Delivery::Stale)
        }
        SendTarget::Actor(to) => actions.push(Action::SendTo { to, event: s.event }),
        SendTarget::Parent => actions.push(Action::SendParent { event: s.event }),
    }
    Ok(Delivery::Delivered)
}

/// Moves the chart's clock forward by `by_ms`, firing every due delayed
/// event in deadline order, each at its own deadline (so a delay scheduled
/// by a fired event counts from that deadline).
pub fn advance<C: Clone>(
    m: &Machine<C>,
    snapshot: &Snapshot<C>,
    by_ms: u64,
) -> Result<Step<C>, ChartError> {
    let mut snap = snapshot.clone();
    let mut actions = Vec::new();
    let target = snap.now_ms.saturating_add(by_ms);
    while let Some((id, seq, _)) = next_due(&snap, target) {
        fire_scheduled(m, &mut snap, &id, seq, &mut actions)?;
    }
    snap.now_ms = target;
    Ok((snap, actions))
}

/// Delivers the result of invocation `id` started as `generation`:
/// `Ok(output)` as `xstate.done.actor.<id>`, `Err(error)` as
/// `xstate.error.actor.<id>` (an invocation or a spawned child alike). The
/// child then moves to [`Snapshot::finished`], still listed as XState
/// lists it. A result for a child that is no longer in flight (its state
/// was left, it was stopped or restarted) is stale: dropped, never
/// delivered.
pub fn invocation_done<C: Clone>(
    m: &Machine<C>,
    snapshot: &mut Snapshot<C>,
    id: &str,
    generation: u64,
    result: Result<Value, Value>,
    actions: &mut Vec<Action>,
) -> Result<Delivery, ChartError> {
    invocation_done_inspected(m, snapshot, id, generation, result, actions, None)
}

/// [`invocation_done`] reporting each step to `inspect`.
pub fn invocation_done_inspected<C: Clone>(
    m: &Machine<C>,
    snapshot: &mut Snapshot<C>,
    id: &str,
    generation: u64,
    result: Result<Value, Value>,
    actions: &mut Vec<Action>,
    inspect: Option<Inspector<'_>>,
) -> Result<Delivery, ChartError> {
    let Some(pos) = snapshot
        .invocations
        .iter()
        .position(|i| i.id == id && i.generation == generation)
    else {
        return Ok(Delivery::Stale);
    };
    let child = snapshot.invocations.remove(pos);
    let status = if result.is_ok() {
        Status::Done
    } else {
        Status::Error
    };
    snapshot.finished.push(Finished { child, status });
    let mut data = Map::new();
    let name = match result {
        Ok(output) => {
            data.insert("output".into(), output);
            names::done_actor(id)
        }
        Err(error) => {
            data.insert("error".into(), error);
            names::error_actor(id)
        }
    };
    data.insert("actorId".into(), Value::String(id.to_string()));
    let event = Event::with_data(name, Value::Object(data));
    transition_inspected(m, snapshot, event, actions, inspect)?;
    Ok(Delivery::Delivered)
}

/// XState's `snapshot.can(event)`: would the event select a transition
/// that has a target or actions?
pub fn can<C: Clone>(m: &Machine<C>, snapshot: &Snapshot<C>, event: &Event) -> bool {
    if snapshot.status != Status::Active {
        return false;
    }
    let mut snap = snapshot.clone();
    let mut actions = Vec::new();
    let mut run = Run::new(m, &mut snap, &mut actions);
    let mut enabled = crate::algorithm::Trans::new();
    run.select_transitions(event, &mut enabled);
    enabled.iter().any(|&t| {
        let tr = &m.transitions()[t as usize];
        !tr.targets.is_empty() || !tr.actions.is_empty()
    })
}
