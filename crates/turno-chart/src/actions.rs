//! What a chart asks its interpreter to do, and the scope in which named
//! actions run.
//!
//! The pure core never performs I/O: an action implementation is a function
//! of the context, the event and its params that may change the context
//! (XState's `assign`) and *record* effects. Raised events go to the
//! internal queue at once; everything else comes out of
//! [`transition`](crate::transition) as [`Action`] data for the interpreter.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::Event;

/// An effect for the interpreter to carry out, in the order it was recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum Action {
    /// Arm a timer: at `due_ms` call [`fire_scheduled`](crate::fire_scheduled)
    /// with `id` and `seq` (the snapshot holds the event; see
    /// [`Scheduled`](crate::Scheduled)).
    Schedule {
        /// The send id (`after` events use their event name).
        id: String,
        /// Distinguishes this scheduling from earlier ones with the same id.
        seq: u64,
        /// Absolute deadline, in the snapshot's milliseconds.
        due_ms: u64,
    },
    /// Disarm the timer of a scheduled event (cancelled or its state left).
    Unschedule {
        /// The send id.
        id: String,
        /// The scheduling that is cancelled.
        seq: u64,
    },
    /// Start an invocation, or a child spawned by `spawnChild` (the
    /// snapshot's [`Invocation::spawned`](crate::Invocation::spawned) says
    /// which); its result must come back as
    /// `xstate.done.actor.<id>` / `xstate.error.actor.<id>` with this
    /// `generation` ([`invocation_done`](crate::invocation_done)).
    StartInvoke {
        /// The invocation id.
        id: String,
        /// The registered actor logic.
        src: String,
        /// The input given to it.
        input: Value,
        /// Unique per start: a result for an older generation is stale.
        generation: u64,
    },
    /// Stop an invocation (its state was exited, `stopChild` named it, or
    /// the chart stopped).
    StopInvoke {
        /// The invocation id.
        id: String,
        /// The start being stopped.
        generation: u64,
    },
    /// Send an event to another actor (`sendTo`).
    SendTo {
        /// The target: a child's id or a system name.
        to: String,
        /// The event.
        event: Event,
    },
    /// Send an event to the parent actor (`sendParent`).
    SendParent {
        /// The event.
        event: Event,
    },
    /// Emit an event to the chart's subscribers (`emit`).
    Emit {
        /// The event.
        event: Event,
    },
    /// A log line (`log`).
    Log {
        /// The message.
        message: String,
    },
    /// A named action the interpreter executes itself (not an assign).
    Custom {
        /// The implementation's name.
        name: String,
        /// The action's params.
        params: Value,
        /// The event being processed.
        event: Event,
    },
}

/// Where a delayed event goes when it fires.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendTarget {
    /// The chart itself (`raise` with a delay, `after`).
    Own,
    /// Another actor, by id (`sendTo` with a delay).
    Actor(String),
    /// The parent (`sendParent` with a delay).
    Parent,
}

/// What an action implementation may do: read and change the context,
/// read the event and params, and record effects.
pub struct ActionScope<'a, C> {
    pub(crate) context: &'a mut C,
    pub(crate) assigned: &'a mut bool,
    pub(crate) event: &'a Event,
    pub(crate) params: &'a Value,
    pub(crate) effects: &'a mut Vec<Effect>,
}

/// One effect recorded by an action, before the core resolves it.
#[derive(Clone, Debug)]
pub(crate) enum Effect {
    Raise {
        event: Event,
        delay_ms: Option<u64>,
        id: Option<String>,
    },
    Cancel(String),
    Send {
        to: SendTarget,
        event: Event,
        delay_ms: Option<u64>,
        id: Option<String>,
    },
    Plain(Action),
    /// `spawnChild`: `id` (`None`: no id given), logic, input.
    Spawn {
        id: Option<String>,
        src: String,
        input: Value,
    },
    /// `stopChild`.
    StopChild(String),
}

impl<'a, C> ActionScope<'a, C> {
    /// The context.
    pub fn context(&self) -> &C {
        self.context
    }

    /// The context, for change (XState's `assign`). Taking it counts as an
    /// assignment even if nothing changes, as in XState, which re-checks
    /// eventless transitions after any assignment.
    pub fn context_mut(&mut self) -> &mut C {
        *self.assigned = true;
        self.context
    }

    /// The event being processed.
    pub fn event(&self) -> &Event {
        self.event
    }

    /// The action's params (`{"type": "name", "params": ...}`), `Null` if none.
    pub fn params(&self) -> &Value {
        self.params
    }

    /// Puts `event` on the internal queue: it is processed in this
    /// macrostep, before the next external event.
    pub fn raise(&mut self, event: Event) {
        self.effects.push(Effect::Raise {
            event,
            delay_ms: None,
            id: None,
        });
    }

    /// Raises `event` after `delay_ms` as an external event; `id` lets
    /// [`cancel`](Self::cancel) withdraw it.
    pub fn raise_after(&mut self, event: Event, delay_ms: u64, id: Option<String>) {
        self.effects.push(Effect::Raise {
            event,
            delay_ms: Some(delay_ms),
            id,
        });
    }

    /// Cancels a delayed event by its send id.
    pub fn cancel(&mut self, id: impl Into<String>) {
        self.effects.push(Effect::Cancel(id.into()));
    }

    /// Sends `event` to another actor, now or after a delay.
    pub fn send_to(&mut self, to: impl Into<String>, event: Event, delay_ms: Option<u64>) {
        self.effects.push(Effect::Send {
            to: SendTarget::Actor(to.into()),
            event,
            delay_ms,
            id: None,
        });
    }

    /// Sends `event` to the parent actor.
    pub fn send_parent(&mut self, event: Event) {
        self.effects.push(Effect::Send {
            to: SendTarget::Parent,
            event,
            delay_ms: None,
            id: None,
        });
    }

    /// Emits `event` to the chart's subscribers.
    pub fn emit(&mut self, event: Event) {
        self.effects.push(Effect::Plain(Action::Emit { event }));
    }

    /// Records a log line.
    pub fn log(&mut self, message: impl Into<String>) {
        self.effects.push(Effect::Plain(Action::Log {
            message: message.into(),
        }));
    }

    /// Spawns a child actor of the registered logic `src` with `input`, as
    /// XState's `spawnChild(src, {id, input})`: a child not tied to a state,
    /// listed among the chart's children under `id` from this action on
    /// (so a `sendTo` after it reaches it) and started once the macrostep
    /// is over. Its result comes back as `xstate.done.actor.<id>` (or
    /// `xstate.error.actor.<id>`, which fails the chart when nothing takes
    /// it). `id: None` lists it as XState does, under `"undefined"` (and,
    /// as XState, keeps it listed once `stop_child` stopped it). A child
    /// already listed under the id is stopped and replaced.
    pub fn spawn_child(&mut self, src: impl Into<String>, id: Option<String>, input: Value) {
        self.effects.push(Effect::Spawn {
            id,
            src: src.into(),
            input,
        });
    }

    /// Stops the child listed under `id` (spawned or invoked, running or
    /// finished), as XState's `stopChild(id)`: it is no longer a child
    /// (a `sendTo` to it fails) and it stops after the events sent to it
    /// before in this macrostep. No such child: nothing happens.
    pub fn stop_child(&mut self, id: impl Into<String>) {
        self.effects.push(Effect::StopChild(id.into()));
    }

    /// Runs another action implementation with `params`, in this scope
    /// (its assigns and effects are this action's).
    pub(crate) fn run(&mut self, f: &ActionFn<C>, params: &Value) {
        let mut inner = ActionScope {
            context: &mut *self.context,
            assigned: &mut *self.assigned,
            event: self.event,
            params,
            effects: &mut *self.effects,
        };
        f(&mut inner);
    }

    /// Records a custom action for the interpreter to execute.
    pub fn custom(&mut self, name: impl Into<String>) {
        let event = self.event.clone();
        self.effects.push(Effect::Plain(Action::Custom {
            name: name.into(),
            params: self.params.clone(),
            event,
        }));
    }
}

/// A named action implementation.
pub type ActionFn<C> = Arc<dyn for<'a> Fn(&mut ActionScope<'a, C>) + Send + Sync>;

/// A named guard implementation: context, event, params.
pub type GuardFn<C> = Arc<dyn Fn(&C, &Event, &Value) -> bool + Send + Sync>;

/// A named delay implementation: context, event, params to milliseconds.
pub type DelayFn<C> = Arc<dyn Fn(&C, &Event, &Value) -> u64 + Send + Sync>;

/// An output or input expression: context and event to a value.
pub type ValueFn<C> = Arc<dyn Fn(&C, &Event) -> Value + Send + Sync>;

/// A guard that can fail (a data-model condition that throws): `Ok` is the
/// verdict; `Err` is an event the core places on the internal queue (SCXML's
/// `error.execution`), the guard counting as false. It sees the context and
/// the event being processed.
pub type TryGuardFn<C> = Arc<dyn Fn(&C, &Event) -> Result<bool, Event> + Send + Sync>;

/// A value expression that can fail (SCXML `<donedata>`): `Err` is an event
/// for the internal queue, and there is no value.
pub type TryValueFn<C> = Arc<dyn Fn(&C, &Event) -> Result<Value, Event> + Send + Sync>;

/// Called with every event before transitions are selected for it
/// (external and internal): a data model binds it (SCXML's `_event`, and
/// an invocation's `<finalize>`). The events it returns (errors) join the
/// internal queue.
pub type EventHookFn<C> = Arc<dyn Fn(&mut C, &Event) -> Vec<Event> + Send + Sync>;
