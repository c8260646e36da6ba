//! The host core: a loop's [`State`] and the [`Host`] that owns it, with
//! what every part of the loop needs from them (trace records, output,
//! host-initiated frames, the step budget, stopping).
//!
//! Borrow discipline: the [`State`] is in a `RefCell`; no borrow is ever held
//! across a call into JavaScript, because JavaScript calls back into natives
//! that borrow it again.
//!
//! Below every queue file: it imports only the data leaves (`entries.rs`,
//! `shared.rs`) and calls nothing defined above it.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;

use boa_engine::object::builtins::JsArray;
use boa_engine::{js_string, Context, JsObject, JsResult, JsValue};

use turno_trace::js::{Stream, TaskSource};
use turno_trace::{EntryId, JsEvent, Queue};

use crate::trace::Trace;
use crate::{Model, UncaughtError};

use super::entries::{Animation, DelayedTask, Micro, PendingInput, Task, Timer, Tracked};
use super::shared::{Arrival, Shared};

/// One millisecond in nanoseconds.
pub(super) const MS: u64 = 1_000_000;

/// Why the loop stopped early.
pub(crate) enum Stop {
    /// `process.exit(code)`.
    Exit(i32),
    /// A fatal uncaught exception (node model); already reported.
    Fatal,
    /// A budget ran out.
    Budget(BudgetKind),
}

pub(crate) enum BudgetKind {
    Steps,
    Time { next_ns: u64 },
    LoopIterations { message: String },
}

pub(crate) struct State {
    pub(super) model: Model,
    pub(super) browser: crate::Browser,
    /// Scripted input not yet due, latest first.
    pub(super) input: Vec<PendingInput>,
    /// The prelude's `deliverInput`.
    pub(super) deliver_input: Option<JsObject>,
    /// The prelude's `deliverMessage` (messages from other loops).
    pub(super) deliver_message: Option<JsObject>,
    /// The prelude's `finishParsing` (html page: the document's readiness
    /// events after the script), taken when called.
    pub(super) finish_parsing: Option<JsObject>,
    /// The prelude's `processEvent` (node: process's events from the host).
    pub(super) process_event: Option<JsObject>,
    /// Rejections handed to `unhandledRejection` listeners (node), and
    /// those of them that got a handler since: `rejectionHandled` is due.
    pub(super) reported_rejections: Vec<JsObject>,
    pub(super) handled_late: Vec<JsObject>,
    /// A queueMicrotask callback runs: an uncaught error's excerpt points
    /// where it was made (Node reports it from the error object).
    pub(super) caught_by_host: bool,
    pub(super) animations: Vec<Animation>,
    pub(super) compositor_frame_count: u64,
    /// Picoseconds of virtual time per boa instruction (the cost model).
    pub(super) cost_picos: u64,
    /// boa's instruction count at the last clock sync.
    pub(super) instr_seen: u64,
    /// boa's instruction count once the host was set up.
    pub(super) setup_instructions: u64,
    /// Picoseconds owed to the clock, below one nanosecond.
    pub(super) frac_picos: u64,
    pub(super) file: String,
    pub(super) now_ns: u64,
    /// What every loop of the run shares (the step budget, the order of
    /// records, workers being started and messages in flight).
    pub(super) shared: Rc<Shared>,
    /// This loop: 0 the page (or Node's main thread), 1.. workers in the
    /// order they were created. Every trace event carries it as `loop`.
    pub(super) loop_id: u32,
    /// `performance.now()` counts from here (a worker's creation time).
    pub(super) time_origin_ns: u64,
    /// Messages from other loops, not yet tasks here, in arrival order.
    pub(super) arrivals: VecDeque<Arrival>,
    pub(super) max_time_ns: u64,
    pub(super) seq: u64,
    /// Output as written, with when and in which order across loops.
    pub(super) out: Vec<Chunk>,
    /// The run-wide order of each trace event (see [`Shared::stamp`]).
    pub(super) trace_stamps: Vec<u64>,
    pub(super) notes: Vec<String>,
    pub(super) uncaught: Vec<UncaughtError>,
    /// When each of `uncaught` happened (time, stamp), for the merge.
    pub(super) uncaught_at: Vec<(u64, u64)>,
    pub(super) exit_request: Option<i32>,
    /// A stop decided inside a native, for the host frame below it.
    pub(super) pending_stop: Option<Stop>,
    pub(super) trace: Option<Trace>,
    pub(super) stack: Vec<String>,
    pub(super) microtasks: VecDeque<(u64, Micro)>,
    pub(super) ticks: VecDeque<(u64, JsObject, Vec<JsValue>)>,
    pub(super) timers: HashMap<u32, Timer>,
    pub(super) timer_heap: BTreeSet<(u64, u64, u32)>,
    pub(super) next_timer_id: u32,
    pub(super) immediates: VecDeque<(u32, JsObject, Vec<JsValue>)>,
    /// Node: I/O completions (`h.io`) for the next poll phase.
    pub(super) io: VecDeque<JsObject>,
    /// Node: the virtual file system (the program's file and
    /// `RunOptions::files`).
    pub(super) files: std::collections::BTreeMap<String, String>,
    pub(super) next_immediate_id: u32,
    pub(super) tasks: VecDeque<Task>,
    /// Prioritized tasks waiting for their delay, by (due, sequence): they
    /// reach the run queue with the timers due in the same step, in that
    /// order (see `html.rs`).
    pub(super) delayed_tasks: std::collections::BTreeMap<(u64, u64), DelayedTask>,
    /// The last number given to a prioritized task.
    pub(super) next_sched: u64,
    /// The prioritized task current now (its number; 0 for none): the task
    /// being run and its checkpoint, or, while a promise reaction runs, the
    /// one current when the reaction was registered.
    pub(super) current_sched: u64,
    pub(super) raf: Vec<(u32, JsObject)>,
    pub(super) next_raf_id: u32,
    pub(super) raf_due: Option<u64>,
    pub(super) frames: u64,
    pub(super) current_timer_nesting: Option<u32>,
    pub(super) pending_rejections: Vec<JsObject>,
    pub(super) tracked: Vec<Tracked>,
    pub(super) untracked_promises: u64,
    pub(super) next_promise_id: u64,
    pub(super) race_notes: u64,
    pub(super) noted: Vec<&'static str>,
    /// The JavaScript frames active while a native runs (tracing only);
    /// attached to every event recorded meanwhile.
    pub(super) js_stack: Option<Vec<String>>,
    pub(super) dropped_jobs: u64,
    pub(super) inspect: Option<JsObject>,
    pub(super) clock: Rc<std::cell::Cell<u64>>,
    pub(super) running_immediates: Vec<u32>,
    pub(super) cleared_immediates: Vec<u32>,
    pub(super) running_raf: Vec<u32>,
    pub(super) cancelled_raf: Vec<u32>,
}

/// A piece of output: its time, its run-wide order, the stream (1, 2).
pub(crate) struct Chunk {
    pub(super) t_ns: u64,
    pub(super) stamp: u64,
    pub(super) fd: u32,
    pub(super) text: String,
}

/// The host, installed as boa's job executor (so natives and hooks can reach
/// it through [`Context::downcast_job_executor`]).
pub(crate) struct Host {
    pub(super) st: RefCell<State>,
}

pub(super) fn fn_name(f: &JsObject, ctx: &mut Context) -> String {
    match f.get(js_string!("name"), ctx) {
        Ok(v) => match v.as_string() {
            Some(s) if !s.is_empty() => s.to_std_string_escaped(),
            _ => "(anonymous)".into(),
        },
        Err(_) => "(anonymous)".into(),
    }
}

pub(super) fn args_vec(v: Option<&JsValue>, ctx: &mut Context) -> JsResult<Vec<JsValue>> {
    let Some(obj) = v.and_then(JsValue::as_object) else {
        return Ok(Vec::new());
    };
    let arr = JsArray::from_object(obj.clone())?;
    let len = arr.length(ctx)?;
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        out.push(arr.get(i, ctx)?);
    }
    Ok(out)
}

/// An `enqueue` of entry `id` on `queue` with `label` and no other field
/// (the callers that have timer, task or frame fields set them on it).
pub(super) fn enqueue(queue: Queue, id: u64, label: Option<String>) -> JsEvent {
    JsEvent::Enqueue {
        queue,
        id: EntryId(id),
        label,
        due_ns: None,
        delay_ns: None,
        requested_ns: None,
        repeat: None,
        nesting: None,
        clamped: None,
        source: None,
        timer: None,
        frame_due_ns: None,
        from_loop: None,
        message: None,
        input_at_ns: None,
    }
}

/// A `dequeue` of entry `id` from `queue`, without `due_ns` or `source`.
pub(super) fn dequeue(queue: Queue, id: u64) -> JsEvent {
    JsEvent::Dequeue {
        queue,
        id: EntryId(id),
        due_ns: None,
        source: None,
    }
}

/// A `cancel` of entry `id` on `queue`.
pub(super) fn cancel(queue: Queue, id: u64) -> JsEvent {
    JsEvent::Cancel {
        queue,
        id: EntryId(id),
    }
}

/// The trace's name of a task source the host queues on (anything the
/// prelude may name that is not one of the others is `posted-message`).
pub(super) fn task_source_kind(source: &str) -> TaskSource {
    match source {
        "timer" => TaskSource::Timer,
        "user-interaction" => TaskSource::UserInteraction,
        "dom-manipulation" => TaskSource::DomManipulation,
        "networking" => TaskSource::Networking,
        "script" => TaskSource::Script,
        "posted-task" => TaskSource::PostedTask,
        _ => TaskSource::PostedMessage,
    }
}

impl State {
    /// Records a note (in the report and the trace) once per kind per run.
    pub(super) fn note_once(&mut self, key: &'static str, text: String) {
        if self.noted.contains(&key) {
            return;
        }
        self.noted.push(key);
        self.ev(JsEvent::Note { text: text.clone() });
        self.notes.push(text);
    }

    /// Records `event` now, with the JavaScript frames active (if
    /// JavaScript is calling into the host).
    pub(super) fn ev(&mut self, event: JsEvent) {
        let t = self.now_ns;
        let js_stack = self.js_stack.clone();
        self.record_with(t, event, js_stack);
    }

    /// Appends a trace event at `t` with this loop's id and the next
    /// run-wide stamp (the merge of all loops' traces sorts by both).
    pub(super) fn record(&mut self, t: u64, event: JsEvent) {
        self.record_with(t, event, None);
    }

    fn record_with(&mut self, t: u64, event: JsEvent, js_stack: Option<Vec<String>>) {
        if self.trace.is_none() {
            return;
        }
        let stamp = self.shared.stamp();
        let loop_id = self.loop_id;
        if let Some(tr) = self.trace.as_mut() {
            tr.push(t, event, js_stack, loop_id);
            self.trace_stamps.push(stamp);
        }
    }

    /// Output to stdout (1) or stderr (2), now.
    pub(super) fn emit(&mut self, fd: u32, text: &str) {
        let stamp = self.shared.stamp();
        self.out.push(Chunk {
            t_ns: self.now_ns,
            stamp,
            fd,
            text: text.to_string(),
        });
    }
}

impl Host {
    pub(super) fn tracing(&self) -> bool {
        self.st.borrow().trace.is_some()
    }

    pub(super) fn push_frame(&self, label: String) {
        let mut st = self.st.borrow_mut();
        st.stack.push(label.clone());
        let depth = st.stack.len();
        st.ev(JsEvent::StackPush {
            frame: label,
            depth: depth as u32,
        });
    }

    pub(super) fn pop_frame(&self) {
        let mut st = self.st.borrow_mut();
        let label = st.stack.pop().unwrap_or_default();
        let depth = st.stack.len();
        st.ev(JsEvent::StackPop {
            frame: label,
            depth: depth as u32,
        });
    }

    pub(super) fn write(&self, fd: u32, text: &str) {
        let mut st = self.st.borrow_mut();
        let stream = if fd == 2 {
            Stream::Stderr
        } else {
            Stream::Stdout
        };
        st.emit(if fd == 2 { 2 } else { 1 }, text);
        st.ev(JsEvent::Output {
            stream,
            text: text.to_string(),
        });
    }

    pub(super) fn step(&self) -> Result<(), Stop> {
        let st = self.st.borrow();
        if st.shared.take_step() {
            Ok(())
        } else {
            Err(Stop::Budget(BudgetKind::Steps))
        }
    }

    /// `process.exit` was called, even if the engine swallowed the unwind
    /// (an async function body turns it into a rejection).
    pub(super) fn check_exit(&self) -> Result<(), Stop> {
        if let Some(stop) = self.st.borrow_mut().pending_stop.take() {
            return Err(stop);
        }
        match self.st.borrow().exit_request {
            Some(code) => Err(Stop::Exit(code)),
            None => Ok(()),
        }
    }

    /// A native that ran host steps (a listener, a checkpoint) was told to
    /// stop the loop: the stop is kept for the host frame below, and the
    /// native unwinds every JavaScript frame with an engine error, which
    /// JavaScript cannot catch.
    pub(super) fn stop_from_native(&self, stop: Stop) -> boa_engine::JsError {
        self.st.borrow_mut().pending_stop = Some(stop);
        boa_engine::error::RuntimeLimitError::Recursion.into()
    }
}
