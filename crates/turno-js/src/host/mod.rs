//! The host: queues, virtual clock, and the two event-loop models.
//!
//! boa runs JavaScript; everything *around* a turn of JavaScript lives here.
//! [`Host`] is installed as boa's [`JobExecutor`](boa_engine::job::JobExecutor), so every promise job the
//! engine creates lands in our microtask queue instead of boa's default
//! executor (which would run due timers before promise jobs). The host then
//! drives the loop itself:
//!
//! * **node**: main script, then `process.nextTick` queue + microtasks
//!   (`processTicksAndRejections`), then loop iterations of the phases
//!   timers → pending → poll → check → close, draining ticks and microtasks
//!   after every callback, as Node ≥ 11 does.
//! * **html**: the script is a task; then pick the oldest runnable task
//!   (timers become tasks when due, posted messages are tasks), run it,
//!   perform a microtask checkpoint, and at each 60 Hz frame boundary with
//!   `requestAnimationFrame` callbacks pending run the "update the rendering"
//!   step (a microtask checkpoint after each rAF callback, as the stack empties).
//!
//! Time is virtual: it moves while JavaScript runs by the cost model
//! (`cost.rs`), and jumps to the next due event when the loop would
//! otherwise wait. Runs are therefore deterministic.
//!
//! Borrow discipline: the [`State`] is in a `RefCell`; no borrow is ever held
//! across a call into JavaScript, because JavaScript calls back into natives
//! that borrow it again.
//!
//! ## Files
//!
//! * `mod.rs` (this file): the loop core shared by both models: the
//!   [`State`] and the [`Host`], trace events, host-initiated frames, the
//!   step budget and the virtual clock.
//! * `microtasks.rs`: boa's job executor and host hooks, the microtask queue
//!   and the microtask checkpoint.
//! * `timers.rs`: the timers heap, delay coercion and the HTML nesting clamp.
//! * `node.rs`: the Node loop: phases, `process.nextTick`, `setImmediate`.
//! * `compositor.rs`: the compositor lane: frames of `transform`/`opacity`
//!   animations that keep coming while the main thread is blocked (trace only).
//! * `events.rs`: DOM event dispatch, the host's half: listener frames,
//!   reported exceptions, the checkpoint after host-dispatched listeners.
//! * `html.rs`: the HTML loop: tasks, posted messages, `requestAnimationFrame`
//!   and the "update the rendering" step.
//! * `promises.rs`: following the internal slots of promises for the trace.
//! * `uncaught.rs`: uncaught exceptions and unhandled rejections, reported as
//!   each runtime reports them.
//! * `natives.rs`: the registry: the `h` object of natives the prelude calls
//!   (each queue's natives live in that queue's file).
//! * `support.rs`: what every native shares (finding the host, argument
//!   helpers, the JavaScript-stack scope); a leaf that imports only this
//!   file, so no sibling imports another through it.
//! * `workers.rs`: dedicated workers: the loops of one run (each its own
//!   `Host` and context) scheduled earliest-step-first, and the messages
//!   between them.
//! * `run.rs`: one run: building a loop (engine and prelude setup), the main
//!   script, the merge of every loop's output and trace, the report and the
//!   budget errors.
//!
//! The JavaScript half of the host (console, `util.inspect`, the Node and web
//! API shapes) is `../prelude.js`.

mod compositor;
mod events;
mod html;
mod microtasks;
mod natives;
mod node;
mod promises;
mod run;
mod support;
mod timers;
mod uncaught;
mod workers;

pub(crate) use run::run;

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;

use boa_engine::object::builtins::JsArray;
use boa_engine::{js_string, Context, JsObject, JsResult, JsValue};
use serde_json::{json, Value};

use crate::trace::Trace;
use crate::{Model, UncaughtError};

use html::Task;
use microtasks::Micro;
use promises::Tracked;
use timers::Timer;

const MS: u64 = 1_000_000;

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
    model: Model,
    browser: crate::Browser,
    /// Scripted input not yet due, latest first.
    input: Vec<html::PendingInput>,
    /// The prelude's `deliverInput`.
    deliver_input: Option<JsObject>,
    /// The prelude's `deliverMessage` (messages from other loops).
    deliver_message: Option<JsObject>,
    animations: Vec<compositor::Animation>,
    compositor_frame_count: u64,
    /// Picoseconds of virtual time per boa instruction (the cost model).
    cost_picos: u64,
    /// boa's instruction count at the last clock sync.
    instr_seen: u64,
    /// boa's instruction count once the host was set up.
    setup_instructions: u64,
    /// Picoseconds owed to the clock, below one nanosecond.
    frac_picos: u64,
    file: String,
    now_ns: u64,
    /// What every loop of the run shares (the step budget, the order of
    /// records, workers being started and messages in flight).
    shared: Rc<workers::Shared>,
    /// This loop: 0 the page (or Node's main thread), 1.. workers in the
    /// order they were created. Every trace event carries it as `loop`.
    loop_id: u32,
    /// `performance.now()` counts from here (a worker's creation time).
    time_origin_ns: u64,
    /// Messages from other loops, not yet tasks here, in arrival order.
    arrivals: VecDeque<workers::Arrival>,
    max_time_ns: u64,
    seq: u64,
    /// Output as written, with when and in which order across loops.
    out: Vec<Chunk>,
    /// The run-wide order of each trace event (see [`workers::Shared::stamp`]).
    trace_stamps: Vec<u64>,
    notes: Vec<String>,
    uncaught: Vec<UncaughtError>,
    /// When each of `uncaught` happened (time, stamp), for the merge.
    uncaught_at: Vec<(u64, u64)>,
    exit_request: Option<i32>,
    /// A stop decided inside a native, for the host frame below it.
    pending_stop: Option<Stop>,
    trace: Option<Trace>,
    stack: Vec<String>,
    microtasks: VecDeque<(u64, Micro)>,
    ticks: VecDeque<(u64, JsObject, Vec<JsValue>)>,
    timers: HashMap<u32, Timer>,
    timer_heap: BTreeSet<(u64, u64, u32)>,
    next_timer_id: u32,
    immediates: VecDeque<(u32, JsObject, Vec<JsValue>)>,
    next_immediate_id: u32,
    tasks: VecDeque<Task>,
    raf: Vec<(u32, JsObject)>,
    next_raf_id: u32,
    raf_due: Option<u64>,
    frames: u64,
    current_timer_nesting: Option<u32>,
    pending_rejections: Vec<JsObject>,
    tracked: Vec<Tracked>,
    untracked_promises: u64,
    next_promise_id: u64,
    race_notes: u64,
    noted: Vec<&'static str>,
    /// The JavaScript frames active while a native runs (tracing only);
    /// attached to every event recorded meanwhile.
    js_stack: Option<Vec<String>>,
    dropped_jobs: u64,
    inspect: Option<JsObject>,
    clock: Rc<std::cell::Cell<u64>>,
    running_immediates: Vec<u32>,
    cleared_immediates: Vec<u32>,
    running_raf: Vec<u32>,
    cancelled_raf: Vec<u32>,
}

/// A piece of output: its time, its run-wide order, the stream (1, 2).
pub(crate) struct Chunk {
    t_ns: u64,
    stamp: u64,
    fd: u32,
    text: String,
}

/// The host, installed as boa's job executor (so natives and hooks can reach
/// it through [`Context::downcast_job_executor`]).
pub(crate) struct Host {
    st: RefCell<State>,
}

fn fn_name(f: &JsObject, ctx: &mut Context) -> String {
    match f.get(js_string!("name"), ctx) {
        Ok(v) => match v.as_string() {
            Some(s) if !s.is_empty() => s.to_std_string_escaped(),
            _ => "(anonymous)".into(),
        },
        Err(_) => "(anonymous)".into(),
    }
}

fn args_vec(v: Option<&JsValue>, ctx: &mut Context) -> JsResult<Vec<JsValue>> {
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

impl State {
    /// Records a note (in the report and the trace) once per kind per run.
    fn note_once(&mut self, key: &'static str, text: String) {
        if self.noted.contains(&key) {
            return;
        }
        self.noted.push(key);
        self.ev("note", json!({"text": text.clone()}));
        self.notes.push(text);
    }

    fn ev(&mut self, kind: &str, mut fields: Value) {
        let t = self.now_ns;
        if let (Some(js), Value::Object(m)) = (&self.js_stack, &mut fields) {
            m.insert("js_stack".into(), json!(js));
        }
        self.record(t, kind, fields);
    }

    /// Appends a trace event at `t` with this loop's id and the next
    /// run-wide stamp (the merge of all loops' traces sorts by both).
    fn record(&mut self, t: u64, kind: &str, mut fields: Value) {
        if self.trace.is_none() {
            return;
        }
        match &mut fields {
            Value::Object(m) => {
                m.insert("loop".into(), json!(self.loop_id));
            }
            other => *other = json!({"loop": self.loop_id}),
        }
        let stamp = self.shared.stamp();
        if let Some(tr) = self.trace.as_mut() {
            tr.push(t, kind, fields);
            self.trace_stamps.push(stamp);
        }
    }

    /// Output to stdout (1) or stderr (2), now.
    fn emit(&mut self, fd: u32, text: &str) {
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
    fn tracing(&self) -> bool {
        self.st.borrow().trace.is_some()
    }

    fn push_frame(&self, label: String) {
        let mut st = self.st.borrow_mut();
        st.stack.push(label.clone());
        let depth = st.stack.len();
        st.ev("stack_push", json!({"frame": label, "depth": depth}));
    }

    fn pop_frame(&self) {
        let mut st = self.st.borrow_mut();
        let label = st.stack.pop().unwrap_or_default();
        let depth = st.stack.len();
        st.ev("stack_pop", json!({"frame": label, "depth": depth}));
    }

    fn write(&self, fd: u32, text: &str) {
        let mut st = self.st.borrow_mut();
        let stream = if fd == 2 { "stderr" } else { "stdout" };
        st.emit(if fd == 2 { 2 } else { 1 }, text);
        st.ev("output", json!({"stream": stream, "text": text}));
    }

    fn step(&self) -> Result<(), Stop> {
        let st = self.st.borrow();
        if st.shared.take_step() {
            Ok(())
        } else {
            Err(Stop::Budget(BudgetKind::Steps))
        }
    }

    /// Calls `f` as a host-initiated frame, handling an uncaught exception
    /// per model. Returns `Err` only when the loop must stop.
    fn call(
        &self,
        ctx: &mut Context,
        label: String,
        f: &JsObject,
        this: &JsValue,
        args: &[JsValue],
    ) -> Result<(), Stop> {
        self.step()?;
        self.push_frame(label);
        let r = f.call(this, args, ctx);
        self.sync_clock(ctx);
        self.pop_frame();
        self.check_exit()?;
        self.sample_promises();
        match r {
            Ok(_) => Ok(()),
            Err(e) => self.uncaught(ctx, e),
        }
    }

    /// `process.exit` was called, even if the engine swallowed the unwind
    /// (an async function body turns it into a rejection).
    fn check_exit(&self) -> Result<(), Stop> {
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

    /// Moves the clock forward by the instructions boa executed since the
    /// last sync times the cost (see `cost.rs`). Called whenever JavaScript
    /// calls into the host and whenever a host call returns, so every event
    /// is stamped with the time the code reached it.
    pub(super) fn sync_clock(&self, ctx: &Context) {
        let executed = turno_boa::instructions_executed(ctx);
        let Ok(mut st) = self.st.try_borrow_mut() else {
            return;
        };
        let delta = executed.saturating_sub(st.instr_seen);
        st.instr_seen = executed;
        if delta == 0 || st.cost_picos == 0 {
            return;
        }
        let picos = delta
            .saturating_mul(st.cost_picos)
            .saturating_add(st.frac_picos);
        st.frac_picos = picos % 1000;
        let ns = picos / 1000;
        if ns > 0 {
            let from = st.now_ns;
            st.now_ns = st.now_ns.saturating_add(ns);
            let now = st.now_ns;
            st.clock.set(now);
            st.compositor_frames(from, true);
        }
    }

    fn advance_to(&self, t: u64) -> Result<(), Stop> {
        let mut st = self.st.borrow_mut();
        if t > st.max_time_ns {
            return Err(Stop::Budget(BudgetKind::Time { next_ns: t }));
        }
        if t > st.now_ns {
            let from = st.now_ns;
            st.now_ns = t;
            st.clock.set(t);
            st.compositor_frames(from, false);
            st.ev("time_advance", json!({"from_ns": from, "to_ns": t}));
        }
        Ok(())
    }
}
