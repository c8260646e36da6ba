//! The JavaScript explorer's family (`turno-js-trace`,
//! `docs/js-trace-format.md`): the event loop's queues, the call stack,
//! virtual time, render steps and the slots of followed promises.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{AnimationId, EntryId, PromiseId};

/// The host model a program ran under (the header's `model`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// Node.js: phases, `process.nextTick`, `setImmediate`.
    Node,
    /// The HTML Standard's event loop: tasks, rAF, render steps.
    Html,
}

/// A queue of the event loop (the `queue` of `enqueue`, `dequeue`, `cancel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Queue {
    /// Promise jobs and `queueMicrotask` callbacks.
    #[serde(rename = "microtask")]
    Microtask,
    /// Node's `process.nextTick` callbacks.
    #[serde(rename = "nextTick")]
    NextTick,
    /// Armed timers, ordered by (`due_ns`, arming order).
    #[serde(rename = "timers")]
    Timers,
    /// Node's `setImmediate` callbacks.
    #[serde(rename = "immediate")]
    Immediate,
    /// HTML's runnable tasks.
    #[serde(rename = "task")]
    Task,
    /// HTML's animation frame callback list.
    #[serde(rename = "animation-frame")]
    AnimationFrame,
}

impl Queue {
    /// Every queue, in the order the inspector draws them.
    pub const ALL: [Queue; 6] = [
        Queue::Microtask,
        Queue::NextTick,
        Queue::Timers,
        Queue::Immediate,
        Queue::Task,
        Queue::AnimationFrame,
    ];

    /// The queue's name as the trace writes it.
    pub fn name(self) -> &'static str {
        match self {
            Queue::Microtask => "microtask",
            Queue::NextTick => "nextTick",
            Queue::Timers => "timers",
            Queue::Immediate => "immediate",
            Queue::Task => "task",
            Queue::AnimationFrame => "animation-frame",
        }
    }
}

/// Where an HTML task came from (`source`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskSource {
    /// A due timer.
    Timer,
    /// `MessageChannel`'s posted message, or a message from another loop
    /// (a worker or the page).
    PostedMessage,
    /// Scripted user input.
    UserInteraction,
    /// DOM manipulation.
    DomManipulation,
    /// Fetching (a worker script that could not be loaded).
    Networking,
    /// The program itself, or a worker's script (id 0).
    Script,
    /// `scheduler.postTask` or a `scheduler.yield` continuation (the
    /// Prioritized Task Scheduling spec's posted task task source).
    PostedTask,
}

/// A Node event loop phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Expired timers run.
    Timers,
    /// Deferred I/O callbacks.
    Pending,
    /// I/O poll.
    Poll,
    /// `setImmediate` callbacks.
    Check,
    /// Close callbacks.
    Close,
}

/// `[[PromiseState]]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromiseState {
    /// Not settled yet.
    Pending,
    /// Resolved with a value.
    Fulfilled,
    /// Rejected with a reason.
    Rejected,
}

/// An output stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    /// Standard output (`console.log`).
    Stdout,
    /// Standard error (`console.error`).
    Stderr,
}

/// Which thread drives an animation (`driven_by`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrivenBy {
    /// Only `transform` / `opacity`: the compositor runs it off the main thread.
    Compositor,
    /// Anything else: it needs the main thread's rendering steps.
    MainThread,
}

/// The main thread when a compositor frame was drawn (`main_thread`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MainThread {
    /// JavaScript was running.
    Busy,
    /// It was not.
    Idle,
}

/// An animation named in a frame: `{animation, label}`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AnimationRef {
    /// Its id.
    pub animation: AnimationId,
    /// Its label.
    pub label: String,
}

/// Every kind of step the explorer records.
///
/// `js_stack` (the JavaScript frames active when JavaScript called into the
/// host) is a field of the envelope ([`crate::Event::js_stack`]), not of a
/// kind, since any host call may carry it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JsEvent {
    /// The host called into JavaScript.
    StackPush {
        /// What was called, e.g. `"setTimeout callback: tick"`.
        frame: String,
        /// Stack depth after the push.
        depth: u32,
    },
    /// That call returned or threw.
    StackPop {
        /// The frame.
        frame: String,
        /// Stack depth after the pop.
        depth: u32,
    },
    /// Something entered a queue.
    Enqueue {
        /// The queue.
        queue: Queue,
        /// The entry's id within it.
        id: EntryId,
        /// The callback's name, or `"PromiseJob"`; absent when an interval
        /// re-arms (it keeps the label it had).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        /// `timers`: when it is due.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        due_ns: Option<u64>,
        /// `timers`: the delay after coercion and clamp.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        delay_ns: Option<u64>,
        /// `timers`: the delay as requested.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        requested_ns: Option<u64>,
        /// `timers`: an interval.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        repeat: Option<bool>,
        /// `timers`: the HTML timer nesting level.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nesting: Option<u32>,
        /// `timers`: the 4 ms clamp applied.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        clamped: Option<bool>,
        /// `task`: where it came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<TaskSource>,
        /// `task` from a timer: the timer's id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timer: Option<EntryId>,
        /// `animation-frame`: the frame it is due for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_due_ns: Option<u64>,
        /// `task` carrying a message from another loop: that loop.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_loop: Option<u32>,
        /// `task` carrying a message from another loop: the message's id
        /// (as in its `message_post`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<u64>,
        /// `task` from `user-interaction`: the time the input script gave
        /// the input (the task is queued when the main thread is next free,
        /// so the event's `t_ns` may be later).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input_at_ns: Option<u64>,
    },
    /// An entry left its queue to run.
    Dequeue {
        /// The queue.
        queue: Queue,
        /// The entry.
        id: EntryId,
        /// `timers`: when it was due.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        due_ns: Option<u64>,
        /// `task`: where it came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<TaskSource>,
    },
    /// A pending entry was removed (`clearTimeout`, ...).
    Cancel {
        /// The queue.
        queue: Queue,
        /// The entry.
        id: EntryId,
    },
    /// Node: the loop entered a phase.
    Phase {
        /// The phase.
        phase: Phase,
        /// The loop iteration, from 1.
        iteration: u64,
    },
    /// Virtual time jumped to the next due timer or frame.
    TimeAdvance {
        /// From.
        from_ns: u64,
        /// To.
        to_ns: u64,
    },
    /// HTML: a microtask checkpoint starts.
    MicrotaskCheckpoint,
    /// HTML: "update the rendering" begins.
    RenderStart {
        /// Frame number, from 1.
        frame: u64,
        /// The 60 Hz boundary every callback receives.
        frame_time_ns: u64,
        /// The rAF ids run in this frame.
        #[serde(default)]
        callbacks: Vec<EntryId>,
        /// The main-thread animations active in this frame.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        animations: Vec<AnimationRef>,
    },
    /// HTML: `element.animate(...)` started an animation.
    AnimationStart {
        /// Its id.
        animation: AnimationId,
        /// The element and properties, e.g. `"div transform"`.
        label: String,
        /// Which thread drives it.
        driven_by: DrivenBy,
        /// When it ends; `None` for an infinite one.
        #[serde(default)]
        end_ns: Option<u64>,
    },
    /// HTML: an animation's `cancel()`.
    AnimationCancel {
        /// Its id.
        animation: AnimationId,
    },
    /// HTML: the compositor produced a frame while a compositor animation
    /// ran (recorded when the clock passes the 60 Hz boundary).
    CompositorFrame {
        /// The boundary (also the event's `t_ns`).
        frame_time_ns: u64,
        /// The compositor animations active.
        #[serde(default)]
        animations: Vec<AnimationRef>,
        /// Whether JavaScript was running when the boundary passed.
        main_thread: MainThread,
        /// The lane that drew it (`"compositor"`).
        lane: String,
    },
    /// HTML: the rendering step is done.
    RenderEnd {
        /// Frame number.
        frame: u64,
    },
    /// The trace starts following a promise.
    PromiseObserved {
        /// The promise.
        promise: PromiseId,
        /// Through what (`then`, `Promise.all`, `rejection-tracker`, ...).
        via: String,
    },
    /// A followed promise's slots changed.
    Promise {
        /// The promise.
        promise: PromiseId,
        /// `[[PromiseState]]`.
        state: PromiseState,
        /// A short rendering of `[[PromiseResult]]`; `null` while pending.
        #[serde(default)]
        result: Option<Value>,
        /// Length of `[[PromiseFulfillReactions]]`; `null` once settled.
        #[serde(default)]
        fulfill_reactions: Option<u64>,
        /// Length of `[[PromiseRejectReactions]]`; `null` once settled.
        #[serde(default)]
        reject_reactions: Option<u64>,
        /// `[[PromiseIsHandled]]`; `null` if unreadable.
        #[serde(default)]
        is_handled: Option<bool>,
    },
    /// The program wrote.
    Output {
        /// Which stream.
        stream: Stream,
        /// The text (with its newline).
        text: String,
    },
    /// An exception nobody caught, or a rejection nobody handled.
    Uncaught {
        /// The message.
        message: String,
        /// `file:line:col`, if known.
        #[serde(default)]
        location: Option<String>,
    },
    /// The real runtime is not deterministic here.
    Note {
        /// Which order this run took.
        text: String,
    },
    /// A budget stopped a runaway program.
    BudgetExhausted {
        /// Which budget.
        message: String,
    },
    /// `new Worker(url)` created a worker (recorded in the creating loop).
    WorkerStart {
        /// The new worker's loop id.
        worker: u32,
        /// The URL as given.
        url: String,
        /// The script file it loaded.
        file: String,
        /// The `name` option (empty when none).
        #[serde(default)]
        name: String,
    },
    /// `new Worker(url)` could not load its script.
    WorkerError {
        /// The URL as given.
        url: String,
        /// Why.
        message: String,
    },
    /// `postMessage` sent a message to another loop.
    MessagePost {
        /// The receiving loop.
        to_loop: u32,
        /// The message's id, run-wide, from 1.
        message: u64,
        /// The worker the message concerns.
        worker: u32,
    },
    /// A worker ended: `terminate()` from its parent, or its own `close()`.
    WorkerEnd {
        /// The worker's loop id.
        worker: u32,
        /// `"terminate"` or `"close"`.
        reason: String,
    },
    /// The last event.
    RunEnd {
        /// The exit code.
        exit_code: i32,
        /// Steps run.
        steps: u64,
    },
}
