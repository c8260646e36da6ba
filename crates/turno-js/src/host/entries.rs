//! The entries each queue of a loop holds: tasks, scripted input,
//! microtasks, timers, followed promises and animations.
//!
//! A leaf of `host/`: plain data, imported by the host's state (`state.rs`)
//! and by the file of each queue, which alone gives it meaning. Keeping the
//! data below the state is what lets the state import no queue file.

use boa_engine::job::PromiseJob;
use boa_engine::{JsObject, JsValue};
use serde_json::Value;

/// What an HTML task runs (see `html.rs`).
pub(super) enum TaskKind {
    Timer {
        id: u32,
        seq: u64,
    },
    /// A callback (which may dispatch an event from the host, see
    /// `events.rs`).
    Callback {
        f: JsObject,
        args: Vec<JsValue>,
    },
    /// A prioritized task: the prelude's `run` (the callback), a microtask
    /// checkpoint, then its `finish` (settling the task's promise), as
    /// Chromium settles it only once the callback's microtasks have run.
    Prioritized {
        run: JsObject,
        finish: JsObject,
    },
    /// Scripted input: the prelude's `deliverInput(type, a, b)`.
    Input {
        kind: &'static str,
        a: JsValue,
        b: JsValue,
    },
    /// A message from another loop (a worker, or the page): the prelude's
    /// `deliverMessage(worker, data)`.
    Message {
        worker: u32,
        data: boa_engine::JsString,
    },
}

/// An HTML task in its task queue (see `html.rs`).
pub(super) struct Task {
    pub(super) source: &'static str,
    pub(super) id: u64,
    /// When it became runnable (the spec profile's order).
    pub(super) runnable_ns: u64,
    /// When it reached the run queue (the Chromium profile's order).
    pub(super) queued_ns: u64,
    pub(super) label: String,
    pub(super) kind: TaskKind,
    /// A `scheduler.postTask` or `scheduler.yield` task: its priority.
    pub(super) prio: Option<Prio>,
}

/// The priority of a prioritized task (`scheduler.postTask`, a
/// `scheduler.yield` continuation), as Chromium ranks it against the
/// other tasks (see `html.rs`).
#[derive(Clone, Copy)]
pub(super) struct Prio {
    /// The task's number for the prelude (aborting it, the task it runs in).
    pub(super) sched: u64,
    /// 2 `user-blocking`, 0 `user-visible` (every other task's level), -2
    /// `background`.
    pub(super) level: i8,
    /// A `scheduler.yield` continuation: one above its priority's tasks.
    pub(super) continuation: bool,
    /// The `TaskSignal` whose priority it follows (0 for a fixed priority).
    pub(super) group: u64,
}

impl Prio {
    /// Higher runs first: continuations just above their priority's tasks.
    pub(super) fn rank(&self) -> i8 {
        self.level + i8::from(self.continuation)
    }
}

/// A prioritized task whose delay has not passed yet (see `html.rs`).
pub(super) struct DelayedTask {
    pub(super) label: String,
    pub(super) run: JsObject,
    pub(super) finish: JsObject,
    pub(super) prio: Prio,
}

/// One scripted input event waiting for its time (expanded: a key press
/// is a keydown and a keyup, a click a mousedown and a mouseup+click).
pub(super) struct PendingInput {
    pub(super) at_ns: u64,
    pub(super) kind: &'static str,
    pub(super) a: JsValue,
    pub(super) b: JsValue,
    pub(super) label: String,
}

/// A microtask (see `microtasks.rs`).
pub(super) enum Micro {
    Promise(PromiseJob),
    Callback(JsObject, Vec<JsValue>),
}

/// A timer of `setTimeout` / `setInterval` (see `timers.rs`).
pub(super) struct Timer {
    pub(super) seq: u64,
    pub(super) cb: JsObject,
    pub(super) args: Vec<JsValue>,
    /// The (coerced, clamped) delay of the next run, in ns.
    pub(super) delay_ns: u64,
    /// The delay requested by the program (before any clamp), in ns.
    pub(super) requested_ns: u64,
    pub(super) repeat: bool,
    pub(super) refed: bool,
    /// HTML timer nesting level of the task this timer will run as.
    pub(super) nesting: u32,
    pub(super) label: String,
}

/// A promise's internal slots as last seen (see `promises.rs`).
#[derive(Clone, PartialEq)]
pub(super) struct PromiseSnap {
    pub(super) state: &'static str,
    pub(super) result: Value,
    pub(super) fulfill: Option<usize>,
    pub(super) reject: Option<usize>,
    pub(super) handled: Option<bool>,
}

/// A promise the trace follows (see `promises.rs`).
pub(super) struct Tracked {
    pub(super) obj: JsObject,
    pub(super) id: u64,
    pub(super) last: Option<PromiseSnap>,
}

/// A running animation (see `compositor.rs`).
pub(super) struct Animation {
    pub(super) id: u32,
    pub(super) label: String,
    pub(super) compositor: bool,
    /// None: runs until cancelled (infinite iterations).
    pub(super) end_ns: Option<u64>,
}
