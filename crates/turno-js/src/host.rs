//! The host: queues, virtual clock, and the two event-loop models.
//!
//! boa runs JavaScript; everything *around* a turn of JavaScript lives here.
//! [`Host`] is installed as boa's [`JobExecutor`], so every promise job the
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
//! Time is virtual: it never moves while JavaScript runs, and jumps to the
//! next due event when the loop would otherwise wait. Runs are therefore
//! deterministic.
//!
//! Borrow discipline: the [`State`] is in a `RefCell`; no borrow is ever held
//! across a call into JavaScript, because JavaScript calls back into natives
//! that borrow it again.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;

use boa_engine::builtins::promise::{OperationType, Promise, PromiseState};
use boa_engine::context::time::JsInstant;
use boa_engine::context::{Clock, HostHooks};
use boa_engine::job::{Job, JobCallback, JobExecutor, PromiseJob};
use boa_engine::object::builtins::{JsArray, JsPromise};
use boa_engine::object::FunctionObjectBuilder;
use boa_engine::{
    js_string, Context, JsError, JsNativeError, JsObject, JsResult, JsString, JsValue,
    NativeFunction, Source,
};
use serde_json::{json, Value};

use crate::trace::Trace;
use crate::{JsRunError, Model, RunOptions, RunReport, UncaughtError};

const MS: u64 = 1_000_000;
/// Node's TIMEOUT_MAX (2^31 - 1 ms).
const TIMEOUT_MAX_MS: f64 = 2_147_483_647.0;
/// Virtual wall-clock epoch for `Date.now()`: 2024-01-01T00:00:00Z.
const EPOCH_MS: i64 = 1_704_067_200_000;
/// Most promises the trace follows; beyond that, new ones are counted only.
const MAX_TRACKED_PROMISES: usize = 2_000;

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

enum Micro {
    Promise(PromiseJob),
    Callback(JsObject, Vec<JsValue>),
}

struct Timer {
    seq: u64,
    cb: JsObject,
    args: Vec<JsValue>,
    /// The (coerced, clamped) delay of the next run, in ns.
    delay_ns: u64,
    /// The delay requested by the program (before any clamp), in ns.
    requested_ns: u64,
    repeat: bool,
    refed: bool,
    /// HTML timer nesting level of the task this timer will run as.
    nesting: u32,
    label: String,
}

enum TaskKind {
    Timer {
        id: u32,
        seq: u64,
    },
    /// A callback; with `dispatch`, it returns `[fn, this, event]` triples,
    /// each then called from an empty stack with a checkpoint after it.
    Callback {
        f: JsObject,
        args: Vec<JsValue>,
        dispatch: bool,
    },
}

struct Task {
    source: &'static str,
    id: u64,
    label: String,
    kind: TaskKind,
}

#[derive(Clone, PartialEq)]
struct PromiseSnap {
    state: &'static str,
    result: Value,
    fulfill: Option<usize>,
    reject: Option<usize>,
    handled: Option<bool>,
}

struct Tracked {
    obj: JsObject,
    id: u64,
    last: Option<PromiseSnap>,
}

pub(crate) struct State {
    model: Model,
    file: String,
    now_ns: u64,
    steps: u64,
    max_steps: u64,
    max_time_ns: u64,
    seq: u64,
    stdout: String,
    stderr: String,
    notes: Vec<String>,
    uncaught: Vec<UncaughtError>,
    exit_request: Option<i32>,
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

/// The host, installed as boa's job executor (so natives and hooks can reach
/// it through [`Context::downcast_job_executor`]).
pub(crate) struct Host {
    st: RefCell<State>,
}

impl JobExecutor for Host {
    fn enqueue_job(self: Rc<Self>, job: Job, context: &mut Context) {
        let _js = JsStackScope::enter(&self, context);
        match job {
            Job::PromiseJob(j) => self.push_micro(Micro::Promise(j), "PromiseJob".into()),
            _ => {
                // Boa only creates promise jobs for the programs we host
                // (no Atomics.waitAsync, no module loading, no FinalizationRegistry
                // cleanup); anything else is counted and reported, never run.
                self.st.borrow_mut().dropped_jobs += 1;
            }
        }
    }

    fn run_jobs(self: Rc<Self>, _context: &mut Context) -> JsResult<()> {
        // The event loop in this module decides when jobs run; boa never gets
        // to drain the queue on its own.
        Ok(())
    }
}

/// Host hooks: name promise-reaction frames and track rejections.
struct Hooks;

impl HostHooks for Hooks {
    fn call_job_callback(
        &self,
        job: &JobCallback,
        this: &JsValue,
        args: &[JsValue],
        context: &mut Context,
    ) -> JsResult<JsValue> {
        let host = context.downcast_job_executor::<Host>();
        let label = match &host {
            Some(h) if h.tracing() => {
                let name = fn_name(job.callback(), context);
                Some(format!("promise reaction: {name}"))
            }
            _ => None,
        };
        if let (Some(h), Some(l)) = (&host, &label) {
            h.push_frame(l.clone());
        }
        let r = job.callback().call(this, args, context);
        if let (Some(h), Some(_)) = (&host, &label) {
            h.pop_frame();
        }
        r
    }

    fn promise_rejection_tracker(
        &self,
        promise: &JsObject<Promise>,
        operation: OperationType,
        context: &mut Context,
    ) {
        let Some(host) = context.downcast_job_executor::<Host>() else {
            return;
        };
        let obj = promise.clone().upcast();
        {
            let mut st = host.st.borrow_mut();
            match operation {
                OperationType::Reject => st.pending_rejections.push(obj.clone()),
                OperationType::Handle => {
                    st.pending_rejections.retain(|p| !JsObject::equals(p, &obj))
                }
            }
        }
        host.track_promise(&obj, "rejection-tracker");
    }
}

/// The virtual clock boa uses for `Date.now()`.
struct VirtualClock(Rc<std::cell::Cell<u64>>);

impl Clock for VirtualClock {
    fn now(&self) -> JsInstant {
        let ns = self.0.get();
        JsInstant::new(ns / 1_000_000_000, (ns % 1_000_000_000) as u32)
    }
    fn system_time_millis(&self) -> i64 {
        EPOCH_MS + (self.0.get() / MS) as i64
    }
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

fn summarize(v: &JsValue) -> Value {
    if v.is_undefined() {
        return json!("undefined");
    }
    if let Some(s) = v.as_string() {
        let s = s.to_std_string_escaped();
        let short: String = s.chars().take(60).collect();
        return json!(format!("'{short}'"));
    }
    if let Some(o) = v.as_object() {
        if o.is_callable() {
            return json!("[Function]");
        }
        if o.is::<boa_engine::builtins::error::Error>() {
            return json!("[Error]");
        }
        if o.is_array() {
            return json!("[Array]");
        }
        if o.is::<Promise>() {
            return json!("[Promise]");
        }
        return json!("[Object]");
    }
    json!(v.display().to_string())
}

/// Reads the slots of a promise. [[PromiseState]] and [[PromiseResult]] come
/// from boa's public `JsPromise::state`. boa 0.22 exposes no accessor for
/// [[PromiseFulfillReactions]], [[PromiseRejectReactions]] or
/// [[PromiseIsHandled]]; its `Promise` type only derives `Debug`, so they are
/// read from that output (`Promise { state, fulfill_reactions: [..],
/// reject_reactions: [..], handled }`). If the layout ever changes, the fields
/// become `null` rather than guessed.
fn probe_promise(obj: &JsObject) -> Option<PromiseSnap> {
    let p = JsPromise::from_object(obj.clone()).ok()?;
    let (state, result) = match p.state() {
        PromiseState::Pending => ("pending", Value::Null),
        PromiseState::Fulfilled(v) => ("fulfilled", summarize(&v)),
        PromiseState::Rejected(v) => ("rejected", summarize(&v)),
    };
    let dbg = obj.downcast_ref::<Promise>().map(|p| format!("{:?}", &*p));
    let (mut fulfill, mut reject, mut handled) = (None, None, None);
    if let Some(d) = dbg {
        let tail = d.trim_end().strip_suffix('}').map(str::trim_end);
        if let Some(t) = tail {
            if t.ends_with("handled: true") {
                handled = Some(true);
            } else if t.ends_with("handled: false") {
                handled = Some(false);
            }
        }
        if state == "pending" {
            // A pending promise has no result, so the text before the
            // reaction lists cannot contain the markers.
            let f = d.find(", fulfill_reactions: [");
            let r = d.rfind(", reject_reactions: [");
            let h = d.rfind(", handled: ");
            if let (Some(f), Some(r), Some(h)) = (f, r, h) {
                if f < r && r < h {
                    fulfill = Some(d[f..r].matches("ReactionRecord {").count());
                    reject = Some(d[r..h].matches("ReactionRecord {").count());
                }
            }
        }
        // Settled promises: the spec sets both reaction lists to undefined;
        // reported as null.
    }
    Some(PromiseSnap {
        state,
        result,
        fulfill,
        reject,
        handled,
    })
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

/// The JavaScript call stack, outermost first, as `name (file:line:col)`;
/// the prelude's own frames (console.log, setTimeout, ... wrappers) left out.
fn js_stack(ctx: &Context) -> Vec<String> {
    let mut frames: Vec<String> = ctx
        .stack_trace()
        .filter_map(|f| {
            let loc = f.position();
            let path = loc.path.to_string();
            if path.starts_with("<turno-prelude>") {
                return None;
            }
            let name = if loc.function_name.is_empty() {
                "<main>".to_string()
            } else {
                loc.function_name.to_std_string_escaped()
            };
            Some(match loc.position {
                Some(p) => format!("{name} ({path}:{}:{})", p.line_number(), p.column_number()),
                None => format!("{name} ({path})"),
            })
        })
        .collect();
    frames.reverse();
    frames
}

/// While alive, events recorded carry the JavaScript stack of the native
/// call that records them (tracing only).
struct JsStackScope(Rc<Host>, Option<Vec<String>>);

impl JsStackScope {
    fn enter(host: &Rc<Host>, ctx: &Context) -> Self {
        let mut prev = None;
        if host.tracing() {
            let now = js_stack(ctx);
            prev = host.st.borrow_mut().js_stack.replace(now);
        }
        JsStackScope(host.clone(), prev)
    }
}

impl Drop for JsStackScope {
    fn drop(&mut self) {
        if let Ok(mut st) = self.0.st.try_borrow_mut() {
            st.js_stack = self.1.take();
        }
    }
}

fn host_of(ctx: &Context) -> JsResult<Rc<Host>> {
    ctx.downcast_job_executor::<Host>().ok_or_else(|| {
        JsNativeError::error()
            .with_message("turno-js host missing")
            .into()
    })
}

fn arg_fn(args: &[JsValue], i: usize) -> Option<JsObject> {
    args.get(i)
        .and_then(JsValue::as_object)
        .filter(|o| o.is_callable())
}

fn arg_u32(args: &[JsValue], i: usize, ctx: &mut Context) -> JsResult<u32> {
    let n = args.get(i).cloned().unwrap_or_default().to_number(ctx)?;
    Ok(if n.is_finite() && n >= 0.0 {
        n as u32
    } else {
        0
    })
}

// ----- natives reachable from the prelude through `h` -----

fn n_write(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let fd = arg_u32(args, 0, ctx)?;
    let text = args
        .get(1)
        .cloned()
        .unwrap_or_default()
        .to_string(ctx)?
        .to_std_string_escaped();
    host.write(fd, &text);
    Ok(JsValue::undefined())
}

fn n_set_timer(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let Some(cb) = arg_fn(args, 0) else {
        // HTML would compile a string handler; we don't evaluate strings.
        return Ok(JsValue::from(0));
    };
    let extra = args_vec(args.get(1), ctx)?;
    let delay = args.get(2).cloned().unwrap_or_default().to_number(ctx)?;
    let repeat = args.get(3).is_some_and(JsValue::to_boolean);
    let label = fn_name(&cb, ctx);
    let id = host.set_timer(cb, extra, delay, repeat, label);
    Ok(JsValue::from(id))
}

fn n_clear_timer(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let id = arg_u32(args, 0, ctx)?;
    host.clear_timer(id);
    Ok(JsValue::undefined())
}

fn n_ref_timer(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let id = arg_u32(args, 0, ctx)?;
    let on = args.get(1).is_some_and(JsValue::to_boolean);
    if let Some(t) = host.st.borrow_mut().timers.get_mut(&id) {
        t.refed = on;
    }
    Ok(JsValue::undefined())
}

fn n_has_ref(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let id = arg_u32(args, 0, ctx)?;
    let r = host.st.borrow().timers.get(&id).is_some_and(|t| t.refed);
    Ok(JsValue::from(r))
}

fn n_set_immediate(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let extra = args_vec(args.get(1), ctx)?;
    let label = fn_name(&cb, ctx);
    let id = {
        let mut st = host.st.borrow_mut();
        st.next_immediate_id += 1;
        let id = st.next_immediate_id;
        st.immediates.push_back((id, cb, extra));
        st.ev(
            "enqueue",
            json!({"queue": "immediate", "id": id, "label": label}),
        );
        id
    };
    Ok(JsValue::from(id))
}

fn n_clear_immediate(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let id = arg_u32(args, 0, ctx)?;
    let mut st = host.st.borrow_mut();
    let before = st.immediates.len();
    st.immediates.retain(|(i, _, _)| *i != id);
    if st.running_immediates.contains(&id) {
        st.cleared_immediates.push(id);
    }
    if st.immediates.len() != before || st.running_immediates.contains(&id) {
        st.ev("cancel", json!({"queue": "immediate", "id": id}));
    }
    Ok(JsValue::undefined())
}

fn n_next_tick(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let extra = args_vec(args.get(1), ctx)?;
    let label = fn_name(&cb, ctx);
    let mut st = host.st.borrow_mut();
    st.seq += 1;
    let id = st.seq;
    st.ticks.push_back((id, cb, extra));
    st.ev(
        "enqueue",
        json!({"queue": "nextTick", "id": id, "label": label}),
    );
    Ok(JsValue::undefined())
}

fn n_queue_microtask(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let label = format!("queueMicrotask: {}", fn_name(&cb, ctx));
    host.push_micro(Micro::Callback(cb, Vec::new()), label);
    Ok(JsValue::undefined())
}

fn n_raf(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::from(0));
    };
    let label = fn_name(&cb, ctx);
    let mut st = host.st.borrow_mut();
    st.next_raf_id += 1;
    let id = st.next_raf_id;
    st.raf.push((id, cb));
    if st.raf_due.is_none() {
        st.raf_due = Some(next_frame_after(st.now_ns));
    }
    let due = st.raf_due;
    st.ev(
        "enqueue",
        json!({"queue": "animation-frame", "id": id, "label": label, "frame_due_ns": due}),
    );
    Ok(JsValue::from(id))
}

fn n_cancel_raf(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let id = arg_u32(args, 0, ctx)?;
    let mut st = host.st.borrow_mut();
    let before = st.raf.len();
    st.raf.retain(|(i, _)| *i != id);
    if st.running_raf.contains(&id) {
        st.cancelled_raf.push(id);
    }
    if st.raf.len() != before || st.running_raf.contains(&id) {
        st.ev("cancel", json!({"queue": "animation-frame", "id": id}));
    }
    if st.raf.is_empty() {
        st.raf_due = None;
    }
    Ok(JsValue::undefined())
}

fn n_post_task(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let extra = args_vec(args.get(1), ctx)?;
    let dispatch = args.get(3).is_some_and(JsValue::to_boolean);
    let label = fn_name(&cb, ctx);
    let mut st = host.st.borrow_mut();
    st.seq += 1;
    let id = st.seq;
    st.ev(
        "enqueue",
        json!({"queue": "task", "source": "posted-message", "id": id, "label": label}),
    );
    st.tasks.push_back(Task {
        source: "posted-message",
        id,
        label,
        kind: TaskKind::Callback {
            f: cb,
            args: extra,
            dispatch,
        },
    });
    Ok(JsValue::undefined())
}

fn n_now(_: &JsValue, _: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let ns = host.st.borrow().now_ns;
    Ok(JsValue::from(ns as f64 / MS as f64))
}

fn n_now_ns(_: &JsValue, _: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let ns = host.st.borrow().now_ns;
    Ok(JsValue::from(ns as f64))
}

fn n_file_name(_: &JsValue, _: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let f = host.st.borrow().file.clone();
    Ok(JsValue::from(JsString::from(f.as_str())))
}

fn n_exit(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let n = args.first().cloned().unwrap_or_default().to_number(ctx)?;
    let code = if n.is_finite() { n as i32 } else { 0 };
    host.st.borrow_mut().exit_request = Some(code);
    // An engine error is not catchable by JavaScript, so `process.exit`
    // unwinds every frame, as it does in Node.
    Err(boa_engine::error::RuntimeLimitError::Recursion.into())
}

fn n_promise_state(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let Some(obj) = args.first().and_then(JsValue::as_object) else {
        return Ok(JsValue::undefined());
    };
    let p = JsPromise::from_object(obj.clone())?;
    let (s, v) = match p.state() {
        PromiseState::Pending => ("pending", JsValue::undefined()),
        PromiseState::Fulfilled(v) => ("fulfilled", v),
        PromiseState::Rejected(v) => ("rejected", v),
    };
    Ok(JsArray::from_iter([JsValue::from(js_string!(s)), v], ctx).into())
}

fn next_frame_after(t_ns: u64) -> u64 {
    // Frame k starts at k/60 s, rounded to the nanosecond.
    let frame_ns = |k: u64| (k * 1_000_000_000 + 30) / 60;
    let mut k = t_ns.saturating_mul(60) / 1_000_000_000 + 1;
    while frame_ns(k) <= t_ns {
        k += 1;
    }
    frame_ns(k)
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
        if let Some(tr) = self.trace.as_mut() {
            tr.push(t, kind, fields);
        }
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

    fn push_micro(&self, m: Micro, label: String) {
        let mut st = self.st.borrow_mut();
        st.seq += 1;
        let id = st.seq;
        st.microtasks.push_back((id, m));
        st.ev(
            "enqueue",
            json!({"queue": "microtask", "id": id, "label": label}),
        );
    }

    fn write(&self, fd: u32, text: &str) {
        let mut st = self.st.borrow_mut();
        let stream = if fd == 2 { "stderr" } else { "stdout" };
        if fd == 2 {
            st.stderr.push_str(text);
        } else {
            st.stdout.push_str(text);
        }
        st.ev("output", json!({"stream": stream, "text": text}));
    }

    fn set_timer(
        &self,
        cb: JsObject,
        args: Vec<JsValue>,
        delay: f64,
        repeat: bool,
        label: String,
    ) -> u32 {
        let mut st = self.st.borrow_mut();
        let requested_ns;
        let mut delay_ns;
        let mut nesting = 0;
        let mut clamped = false;
        match st.model {
            Model::Node => {
                // lib/internal/timers.js: `after *= 1; if (!(after >= 1 &&
                // after <= TIMEOUT_MAX)) after = 1;`
                let after = if (1.0..=TIMEOUT_MAX_MS).contains(&delay) {
                    delay
                } else {
                    1.0
                };
                requested_ns = (delay.clamp(0.0, TIMEOUT_MAX_MS) * MS as f64) as u64;
                delay_ns = (after * MS as f64) as u64;
            }
            Model::Html => {
                // WebIDL `long`: NaN -> 0, truncate; negative -> 0.
                let ms = if delay.is_finite() && delay > 0.0 {
                    delay.trunc().min(TIMEOUT_MAX_MS)
                } else {
                    0.0
                };
                requested_ns = ms as u64 * MS;
                delay_ns = requested_ns;
                // HTML timer initialization steps: nesting level of the
                // running timer task (0 otherwise); clamp to 4 ms when the
                // level is above 5.
                let level = st.current_timer_nesting.unwrap_or(0);
                if level > 5 && delay_ns < 4 * MS {
                    delay_ns = 4 * MS;
                    clamped = true;
                }
                nesting = level + 1;
            }
        }
        st.next_timer_id += 1;
        let id = st.next_timer_id;
        st.seq += 1;
        let seq = st.seq;
        let due = st.now_ns + delay_ns;
        st.timers.insert(
            id,
            Timer {
                seq,
                cb,
                args,
                delay_ns,
                requested_ns,
                repeat,
                refed: true,
                nesting,
                label: label.clone(),
            },
        );
        st.timer_heap.insert((due, seq, id));
        st.ev(
            "enqueue",
            json!({"queue": "timers", "id": id, "label": label, "due_ns": due,
                   "delay_ns": delay_ns, "requested_ns": requested_ns, "repeat": repeat,
                   "nesting": nesting, "clamped": clamped}),
        );
        id
    }

    fn clear_timer(&self, id: u32) {
        let mut st = self.st.borrow_mut();
        if let Some(t) = st.timers.remove(&id) {
            st.timer_heap.retain(|&(_, s, i)| !(i == id && s == t.seq));
            st.ev("cancel", json!({"queue": "timers", "id": id}));
        }
    }

    /// Starts following a promise in the trace (no-op when not tracing).
    fn track_promise(&self, obj: &JsObject, via: &str) {
        let mut st = self.st.borrow_mut();
        if st.trace.is_none() || !obj.is::<Promise>() {
            return;
        }
        if st.tracked.iter().any(|t| JsObject::equals(&t.obj, obj)) {
            return;
        }
        if st.tracked.len() >= MAX_TRACKED_PROMISES {
            st.untracked_promises += 1;
            return;
        }
        st.next_promise_id += 1;
        let id = st.next_promise_id;
        st.tracked.push(Tracked {
            obj: obj.clone(),
            id,
            last: None,
        });
        st.ev("promise_observed", json!({"promise": id, "via": via}));
        drop(st);
        self.sample_promises();
    }

    /// Emits a `promise` event for every followed promise whose slots changed.
    fn sample_promises(&self) {
        let mut st = self.st.borrow_mut();
        if st.trace.is_none() {
            return;
        }
        let mut events = Vec::new();
        for t in &mut st.tracked {
            let Some(snap) = probe_promise(&t.obj) else {
                continue;
            };
            if t.last.as_ref() != Some(&snap) {
                events.push(json!({
                    "promise": t.id,
                    "state": snap.state,
                    "result": snap.result,
                    "fulfill_reactions": snap.fulfill,
                    "reject_reactions": snap.reject,
                    "is_handled": snap.handled,
                }));
                t.last = Some(snap);
            }
        }
        for e in events {
            st.ev("promise", e);
        }
    }

    fn step(&self) -> Result<(), Stop> {
        let mut st = self.st.borrow_mut();
        st.steps += 1;
        if st.steps > st.max_steps {
            return Err(Stop::Budget(BudgetKind::Steps));
        }
        Ok(())
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
        self.pop_frame();
        self.check_exit()?;
        self.sample_promises();
        match r {
            Ok(_) => Ok(()),
            Err(e) => self.uncaught(ctx, e),
        }
    }

    /// Calls a dispatch-preparing function and reads back its
    /// `[fn, this, event]` triples (`None` if it threw, after reporting).
    #[allow(clippy::type_complexity)]
    fn call_value(
        &self,
        ctx: &mut Context,
        label: String,
        f: &JsObject,
        args: &[JsValue],
    ) -> Result<Option<Vec<(JsObject, JsValue, JsValue)>>, Stop> {
        self.step()?;
        self.push_frame(label);
        let r = f.call(&JsValue::undefined(), args, ctx);
        self.pop_frame();
        let v = match r {
            Ok(v) => v,
            Err(e) => {
                self.uncaught(ctx, e)?;
                return Ok(None);
            }
        };
        let mut out = Vec::new();
        let Ok(list) = args_vec(Some(&v), ctx) else {
            return Ok(Some(out));
        };
        for item in list {
            let Ok(t) = args_vec(Some(&item), ctx) else {
                continue;
            };
            if let (Some(g), Some(this), Some(ev)) = (
                t.first()
                    .and_then(JsValue::as_object)
                    .filter(|o| o.is_callable()),
                t.get(1),
                t.get(2),
            ) {
                out.push((g, this.clone(), ev.clone()));
            }
        }
        Ok(Some(out))
    }

    /// `process.exit` was called, even if the engine swallowed the unwind
    /// (an async function body turns it into a rejection).
    fn check_exit(&self) -> Result<(), Stop> {
        match self.st.borrow().exit_request {
            Some(code) => Err(Stop::Exit(code)),
            None => Ok(()),
        }
    }

    fn uncaught(&self, ctx: &mut Context, e: JsError) -> Result<(), Stop> {
        if let Some(code) = self.st.borrow().exit_request {
            return Err(Stop::Exit(code));
        }
        if let Some(engine) = e.as_engine() {
            let msg = engine.to_string();
            if msg.contains("iteration loops") {
                return Err(Stop::Budget(BudgetKind::LoopIterations { message: msg }));
            }
            // Recursion / stack limits: Node reports a RangeError.
            self.report_uncaught(
                ctx,
                None,
                "RangeError: Maximum call stack size exceeded".into(),
                None,
            );
            return self.after_uncaught();
        }
        let value = e.into_opaque(ctx).unwrap_or_default();
        self.report_value(ctx, &value, false);
        self.after_uncaught()
    }

    fn after_uncaught(&self) -> Result<(), Stop> {
        match self.st.borrow().model {
            Model::Node => Err(Stop::Fatal),
            Model::Html => Ok(()),
        }
    }

    /// Formats an uncaught value the way the model's runtime reports it.
    fn report_value(&self, ctx: &mut Context, value: &JsValue, in_promise: bool) {
        let is_error = value
            .as_object()
            .is_some_and(|o| o.is::<boa_engine::builtins::error::Error>());
        let text = self.inspect(ctx, value);
        let loc = if is_error {
            first_frame_location(&text)
        } else {
            None
        };
        let message = if is_error {
            text.lines().next().unwrap_or_default().to_string()
        } else {
            text.clone()
        };
        let model = self.st.borrow().model;
        let body = match (model, is_error, in_promise) {
            (Model::Node, true, _) => text.clone(),
            (Model::Node, false, false) => {
                let shown = match value.as_string() {
                    Some(s) => s.to_std_string_escaped(),
                    None => text.clone(),
                };
                format!(
                    "Uncaught {shown}\n(turno-js: a thrown non-Error value carries no location)"
                )
            }
            (Model::Node, false, true) => {
                let reason = match value.as_string() {
                    Some(s) => s.to_std_string_escaped(),
                    None => text.clone(),
                };
                format!(
                    "[UnhandledPromiseRejection: This error originated either by throwing inside of an async function without a catch block, or by rejecting a promise which was not handled with .catch(). The promise rejected with the reason \"{reason}\".] {{\n  code: 'ERR_UNHANDLED_REJECTION'\n}}"
                )
            }
            (Model::Html, _, false) => format!("Uncaught {text}"),
            (Model::Html, _, true) => format!("Uncaught (in promise) {text}"),
        };
        self.report_uncaught(ctx, loc, body, Some(message));
    }

    fn report_uncaught(
        &self,
        _ctx: &mut Context,
        loc: Option<(String, u32, u32)>,
        body: String,
        message: Option<String>,
    ) {
        let mut st = self.st.borrow_mut();
        let mut text = String::new();
        if st.model == Model::Node {
            if let Some((file, line, col)) = &loc {
                text.push_str(&format!("{file}:{line}\n"));
                if let Some(src) = st_source_line(&st, *line) {
                    text.push_str(&src);
                    text.push('\n');
                    text.push_str(&" ".repeat(col.saturating_sub(1) as usize));
                    text.push_str("^\n");
                }
                text.push('\n');
            }
        }
        text.push_str(&body);
        text.push('\n');
        st.stderr.push_str(&text);
        let message =
            message.unwrap_or_else(|| body.lines().next().unwrap_or_default().to_string());
        st.ev(
            "uncaught",
            json!({"message": message, "location": loc.as_ref().map(|(f, l, c)| format!("{f}:{l}:{c}"))}),
        );
        st.uncaught.push(UncaughtError {
            message,
            file: loc.as_ref().map(|l| l.0.clone()),
            line: loc.as_ref().map(|l| l.1),
            column: loc.as_ref().map(|l| l.2),
        });
    }

    fn inspect(&self, ctx: &mut Context, v: &JsValue) -> String {
        let f = self.st.borrow().inspect.clone();
        if let Some(f) = f {
            if let Ok(s) = f.call(&JsValue::undefined(), std::slice::from_ref(v), ctx) {
                if let Some(s) = s.as_string() {
                    return s.to_std_string_escaped();
                }
            }
        }
        v.display().to_string()
    }

    // ----- microtasks, ticks -----

    /// HTML "perform a microtask checkpoint" / V8's RunMicrotasks: run until
    /// the queue is empty, including jobs queued meanwhile.
    fn run_microtasks(&self, ctx: &mut Context) -> Result<(), Stop> {
        loop {
            let next = self.st.borrow_mut().microtasks.pop_front();
            let Some((id, m)) = next else { break };
            self.st
                .borrow_mut()
                .ev("dequeue", json!({"queue": "microtask", "id": id}));
            match m {
                Micro::Promise(job) => {
                    self.step()?;
                    let r = job.call(ctx);
                    self.check_exit()?;
                    self.sample_promises();
                    if let Err(e) = r {
                        self.uncaught(ctx, e)?;
                    }
                }
                Micro::Callback(f, args) => {
                    let label = format!("queueMicrotask: {}", fn_name(&f, ctx));
                    self.call(ctx, label, &f, &JsValue::undefined(), &args)?;
                }
            }
        }
        Ok(())
    }

    fn checkpoint(&self, ctx: &mut Context) -> Result<(), Stop> {
        self.st.borrow_mut().ev("microtask_checkpoint", Value::Null);
        self.run_microtasks(ctx)?;
        self.report_rejections(ctx)
    }

    /// Unhandled rejections still unhandled after the microtasks drained.
    fn report_rejections(&self, ctx: &mut Context) -> Result<(), Stop> {
        let pending = std::mem::take(&mut self.st.borrow_mut().pending_rejections);
        for p in pending {
            let Ok(jp) = JsPromise::from_object(p.clone()) else {
                continue;
            };
            let PromiseState::Rejected(reason) = jp.state() else {
                continue;
            };
            self.report_value(ctx, &reason, true);
            self.after_uncaught()?;
        }
        Ok(())
    }

    /// Node's `processTicksAndRejections`.
    fn process_ticks(&self, ctx: &mut Context) -> Result<(), Stop> {
        loop {
            loop {
                let next = self.st.borrow_mut().ticks.pop_front();
                let Some((id, f, args)) = next else { break };
                self.st
                    .borrow_mut()
                    .ev("dequeue", json!({"queue": "nextTick", "id": id}));
                let label = format!("nextTick: {}", fn_name(&f, ctx));
                self.call(ctx, label, &f, &JsValue::undefined(), &args)?;
            }
            self.run_microtasks(ctx)?;
            if self.st.borrow().ticks.is_empty() {
                self.report_rejections(ctx)?;
                if self.st.borrow().ticks.is_empty() && self.st.borrow().microtasks.is_empty() {
                    return Ok(());
                }
            }
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
            st.ev("time_advance", json!({"from_ns": from, "to_ns": t}));
        }
        Ok(())
    }

    fn next_timer(&self, only_refed: bool) -> Option<(u64, u64, u32)> {
        let st = self.st.borrow();
        st.timer_heap
            .iter()
            .find(|(_, _, id)| !only_refed || st.timers.get(id).is_some_and(|t| t.refed))
            .copied()
    }

    // ----- node -----

    fn run_node_timer(&self, ctx: &mut Context, key: (u64, u64, u32)) -> Result<(), Stop> {
        let (due, _, id) = key;
        let (cb, args, label, repeat) = {
            let mut st = self.st.borrow_mut();
            st.timer_heap.remove(&key);
            let Some(t) = st.timers.get(&id) else {
                return Ok(());
            };
            let v = (t.cb.clone(), t.args.clone(), t.label.clone(), t.repeat);
            if !t.repeat {
                st.timers.remove(&id);
            }
            st.ev(
                "dequeue",
                json!({"queue": "timers", "id": id, "due_ns": due}),
            );
            v
        };
        let kind = if repeat { "setInterval" } else { "setTimeout" };
        self.call(
            ctx,
            format!("{kind} callback: {label}"),
            &cb,
            &JsValue::undefined(),
            &args,
        )?;
        if repeat {
            let mut st = self.st.borrow_mut();
            let now = st.now_ns;
            st.seq += 1;
            let seq = st.seq;
            if let Some(t) = st.timers.get_mut(&id) {
                t.seq = seq;
                let due = now + t.delay_ns;
                st.timer_heap.insert((due, seq, id));
                st.ev(
                    "enqueue",
                    json!({"queue": "timers", "id": id, "due_ns": due, "repeat": true}),
                );
            }
        }
        self.process_ticks(ctx)
    }

    fn node_loop(&self, ctx: &mut Context) -> Result<(), Stop> {
        self.process_ticks(ctx)?;
        let mut iteration = 0u64;
        loop {
            let alive = {
                let st = self.st.borrow();
                !st.immediates.is_empty() || st.timers.values().any(|t| t.refed)
            };
            if !alive {
                return Ok(());
            }
            iteration += 1;
            self.race_check(iteration);
            self.phase("timers", iteration);
            loop {
                let now = self.st.borrow().now_ns;
                match self.next_timer(false) {
                    Some(key) if key.0 <= now => self.run_node_timer(ctx, key)?,
                    _ => break,
                }
            }
            self.phase("pending", iteration);
            self.phase("poll", iteration);
            if self.st.borrow().immediates.is_empty() {
                if let Some((due, _, _)) = self.next_timer(true) {
                    self.advance_to(due)?;
                }
            }
            self.phase("check", iteration);
            // Immediates queued while this batch runs wait for the next
            // iteration; one cleared by an earlier one in the batch is skipped.
            let batch: Vec<_> = {
                let mut st = self.st.borrow_mut();
                let b: Vec<_> = st.immediates.drain(..).collect();
                st.running_immediates = b.iter().map(|x| x.0).collect();
                st.cleared_immediates.clear();
                b
            };
            for (id, f, args) in batch {
                if self.st.borrow().cleared_immediates.contains(&id) {
                    continue;
                }
                self.st
                    .borrow_mut()
                    .ev("dequeue", json!({"queue": "immediate", "id": id}));
                let label = format!("setImmediate callback: {}", fn_name(&f, ctx));
                self.call(ctx, label, &f, &JsValue::undefined(), &args)?;
                self.process_ticks(ctx)?;
            }
            self.st.borrow_mut().running_immediates.clear();
            self.phase("close", iteration);
        }
    }

    fn phase(&self, name: &str, iteration: u64) {
        self.st
            .borrow_mut()
            .ev("phase", json!({"phase": name, "iteration": iteration}));
    }

    /// setTimeout(0|1) against setImmediate: in real Node the timer runs
    /// first iff at least 1 ms of real time passed before the loop iteration
    /// started. Virtual time says it did not; we say the other order exists.
    fn race_check(&self, iteration: u64) {
        let mut st = self.st.borrow_mut();
        if st.immediates.is_empty() {
            return;
        }
        let now = st.now_ns;
        let racing = st
            .timer_heap
            .iter()
            .any(|&(due, _, id)| due > now && due <= now + MS && st.timers.contains_key(&id));
        if racing {
            st.race_notes += 1;
            if st.race_notes == 1 {
                let note = format!(
                    "nondeterministic in real Node: at iteration {iteration} (t={} ms) a setTimeout \
                     due within 1 ms and setImmediate callbacks were both pending. Real Node runs the \
                     timer first if 1 ms of real time has already elapsed, otherwise the immediates \
                     first; this run (virtual time, no elapsed time) ran the immediates first.",
                    now as f64 / MS as f64
                );
                st.ev("note", json!({"text": note.clone()}));
                st.notes.push(note);
            }
        }
    }

    // ----- html -----

    fn html_loop(&self, ctx: &mut Context) -> Result<(), Stop> {
        self.checkpoint(ctx)?;
        loop {
            self.queue_due_timers();
            let task = {
                let mut st = self.st.borrow_mut();
                let first = st.tasks.front().map(|t| t.source);
                if let Some(src) = first {
                    if let Some(other) = st.tasks.iter().map(|t| t.source).find(|s| *s != src) {
                        let now_ms = st.now_ns as f64 / MS as f64;
                        st.note_once(
                            "task-sources",
                            format!(
                                "implementation-defined in real browsers: at t={} ms tasks from the \
                                 '{src}' and '{other}' task sources were runnable together; the HTML \
                                 Standard lets the browser pick either source first. This run took \
                                 them in the order they became runnable.",
                                now_ms
                            ),
                        );
                    }
                }
                st.tasks.pop_front()
            };
            if let Some(task) = task {
                self.run_html_task(ctx, task)?;
                self.checkpoint(ctx)?;
                self.maybe_render(ctx)?;
                continue;
            }
            if self.maybe_render(ctx)? {
                continue;
            }
            let next_timer = self.next_timer(false).map(|k| k.0);
            let raf_due = self.st.borrow().raf_due;
            let next = match (next_timer, raf_due) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => return Ok(()),
            };
            self.advance_to(next)?;
        }
    }

    fn queue_due_timers(&self) {
        let mut st = self.st.borrow_mut();
        let now = st.now_ns;
        while let Some(&key) = st.timer_heap.iter().next() {
            if key.0 > now {
                break;
            }
            st.timer_heap.remove(&key);
            let (due, seq, id) = key;
            let Some(t) = st.timers.get(&id) else {
                continue;
            };
            let label = t.label.clone();
            st.seq += 1;
            let tid = st.seq;
            st.ev(
                "dequeue",
                json!({"queue": "timers", "id": id, "due_ns": due}),
            );
            st.ev(
                "enqueue",
                json!({"queue": "task", "source": "timer", "id": tid, "label": label, "timer": id}),
            );
            st.tasks.push_back(Task {
                source: "timer",
                id: tid,
                label,
                kind: TaskKind::Timer { id, seq },
            });
        }
    }

    fn run_html_task(&self, ctx: &mut Context, task: Task) -> Result<(), Stop> {
        self.st.borrow_mut().ev(
            "dequeue",
            json!({"queue": "task", "source": task.source, "id": task.id}),
        );
        match task.kind {
            TaskKind::Callback {
                f,
                args,
                dispatch: false,
            } => self.call(
                ctx,
                format!("task: {}", task.label),
                &f,
                &JsValue::undefined(),
                &args,
            ),
            TaskKind::Callback {
                f,
                args,
                dispatch: true,
            } => {
                let Some(calls) =
                    self.call_value(ctx, format!("task: {}", task.label), &f, &args)?
                else {
                    return Ok(());
                };
                for (g, this, ev) in calls {
                    let label = format!("event listener: {}", fn_name(&g, ctx));
                    self.call(ctx, label, &g, &this, std::slice::from_ref(&ev))?;
                    self.checkpoint(ctx)?;
                }
                Ok(())
            }
            TaskKind::Timer { id, seq } => {
                let info = {
                    let st = self.st.borrow();
                    st.timers.get(&id).filter(|t| t.seq == seq).map(|t| {
                        (
                            t.cb.clone(),
                            t.args.clone(),
                            t.repeat,
                            t.nesting,
                            t.requested_ns,
                        )
                    })
                };
                // Cleared after being queued: the task does nothing.
                let Some((cb, args, repeat, nesting, requested)) = info else {
                    return Ok(());
                };
                if !repeat {
                    self.st.borrow_mut().timers.remove(&id);
                }
                self.st.borrow_mut().current_timer_nesting = Some(nesting);
                let kind = if repeat { "setInterval" } else { "setTimeout" };
                let r = self.call(
                    ctx,
                    format!("{kind} callback: {}", task.label),
                    &cb,
                    &JsValue::undefined(),
                    &args,
                );
                if repeat {
                    // Timer initialization steps again, from inside this task:
                    // nesting level grows, clamp applies to the requested timeout.
                    let mut st = self.st.borrow_mut();
                    let now = st.now_ns;
                    st.seq += 1;
                    let nseq = st.seq;
                    if let Some(t) = st.timers.get_mut(&id) {
                        let mut delay = requested;
                        let mut clamped = false;
                        if nesting > 5 && delay < 4 * MS {
                            delay = 4 * MS;
                            clamped = true;
                        }
                        t.seq = nseq;
                        t.delay_ns = delay;
                        t.nesting = nesting + 1;
                        let due = now + delay;
                        st.timer_heap.insert((due, nseq, id));
                        st.ev(
                            "enqueue",
                            json!({"queue": "timers", "id": id, "due_ns": due, "delay_ns": delay,
                                   "repeat": true, "nesting": nesting + 1, "clamped": clamped}),
                        );
                    }
                }
                self.st.borrow_mut().current_timer_nesting = None;
                r
            }
        }
    }

    /// The "update the rendering" step, when a frame is due and rAF
    /// callbacks are waiting. Returns whether it ran.
    fn maybe_render(&self, ctx: &mut Context) -> Result<bool, Stop> {
        let (due, batch) = {
            let mut st = self.st.borrow_mut();
            match st.raf_due {
                Some(d) if d <= st.now_ns && !st.raf.is_empty() => {
                    if !st.timers.is_empty() || !st.tasks.is_empty() {
                        st.note_once(
                            "frame-timing",
                            "timing-dependent in real browsers: animation frames and timers or \
                             messages were pending together. This run renders on an exact 60 Hz \
                             virtual clock (frame k at k/60 s); a real browser's frames follow the \
                             display and load, so rAF callbacks may move relative to timers."
                                .to_string(),
                        );
                    }
                    st.raf_due = None;
                    st.frames += 1;
                    let batch = std::mem::take(&mut st.raf);
                    let ids: Vec<u32> = batch.iter().map(|b| b.0).collect();
                    st.running_raf = ids.clone();
                    st.cancelled_raf.clear();
                    let frame = st.frames;
                    st.ev(
                        "render_start",
                        json!({"frame": frame, "frame_time_ns": d, "callbacks": ids}),
                    );
                    (d, batch)
                }
                _ => return Ok(false),
            }
        };
        let ts = JsValue::from(due as f64 / MS as f64);
        for (id, f) in batch {
            if self.st.borrow().cancelled_raf.contains(&id) {
                continue;
            }
            self.st
                .borrow_mut()
                .ev("dequeue", json!({"queue": "animation-frame", "id": id}));
            let label = format!("requestAnimationFrame callback: {}", fn_name(&f, ctx));
            self.call(
                ctx,
                label,
                &f,
                &JsValue::undefined(),
                std::slice::from_ref(&ts),
            )?;
            self.checkpoint(ctx)?;
        }
        self.st.borrow_mut().running_raf.clear();
        let frame = self.st.borrow().frames;
        self.st
            .borrow_mut()
            .ev("render_end", json!({"frame": frame}));
        Ok(true)
    }
}

fn st_source_line(st: &State, line: u32) -> Option<String> {
    let _ = st;
    SOURCE.with(|s| {
        s.borrow()
            .lines()
            .nth(line.saturating_sub(1) as usize)
            .map(str::to_string)
    })
}

thread_local! {
    /// The program's source, for the `file:line` excerpt of uncaught errors.
    static SOURCE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Splits boa's parse-error message `"... at line L, col C"` into the text
/// and the position.
fn split_parse_error(msg: &str) -> (String, Option<(u32, u32)>) {
    if let Some(i) = msg.rfind(" at line ") {
        let rest = &msg[i + " at line ".len()..];
        let mut it = rest.splitn(2, ", col ");
        let line = it.next().and_then(|l| l.trim().parse().ok());
        let col = it.next().and_then(|c| {
            c.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        });
        if let (Some(l), Some(c)) = (line, col) {
            let mut text = msg[..i].to_string();
            if let Some(first) = text.get(..1) {
                text = first.to_uppercase() + &text[1..];
            }
            return (text, Some((l, c)));
        }
    }
    (msg.to_string(), None)
}

/// `(file, line, column)` of the first `    at name (file:line:col)` frame.
fn first_frame_location(stack: &str) -> Option<(String, u32, u32)> {
    for l in stack.lines() {
        // The last frame of an error with extra properties ends in " {".
        let l = l.trim().trim_end_matches('{').trim_end();
        let Some(rest) = l.strip_prefix("at ") else {
            continue;
        };
        let inner = match (rest.rfind('('), rest.ends_with(')')) {
            (Some(i), true) => &rest[i + 1..rest.len() - 1],
            _ => rest,
        };
        let mut parts = inner.rsplitn(3, ':');
        let col = parts.next()?.parse().ok();
        let line = parts.next()?.parse().ok();
        let file = parts.next()?.to_string();
        if let (Some(line), Some(col)) = (line, col) {
            if file.starts_with('<') || file == "prelude" {
                continue;
            }
            return Some((file, line, col));
        }
    }
    None
}

fn build_natives(ctx: &mut Context) -> JsResult<JsObject> {
    type F = fn(&JsValue, &[JsValue], &mut Context) -> JsResult<JsValue>;
    let list: [(&str, F, usize); 17] = [
        ("write", n_write, 2),
        ("setTimer", n_set_timer, 4),
        ("clearTimer", n_clear_timer, 1),
        ("refTimer", n_ref_timer, 2),
        ("hasRef", n_has_ref, 1),
        ("setImmediate", n_set_immediate, 2),
        ("clearImmediate", n_clear_immediate, 1),
        ("nextTick", n_next_tick, 2),
        ("queueMicrotask", n_queue_microtask, 1),
        ("raf", n_raf, 1),
        ("cancelRaf", n_cancel_raf, 1),
        ("postTask", n_post_task, 3),
        ("now", n_now, 0),
        ("nowNs", n_now_ns, 0),
        ("fileName", n_file_name, 0),
        ("exit", n_exit, 1),
        ("promiseState", n_promise_state, 1),
    ];
    let obj = JsObject::with_null_proto();
    for (name, f, len) in list {
        let func = FunctionObjectBuilder::new(ctx.realm(), NativeFunction::from_fn_ptr(f))
            .name(JsString::from(name))
            .length(len)
            .build();
        obj.set(JsString::from(name), func, false, ctx)?;
    }
    Ok(obj)
}

/// Replaces `Promise.prototype.then` and the `Promise` statics with wrappers
/// that call the originals unchanged and register the promises they see, so
/// the trace can follow them. Installed only when tracing. `await` and
/// internal resolution call the original algorithms directly, so ordering is
/// unaffected; promises first seen through them are not followed until they
/// cross one of these entry points.
fn install_promise_taps(ctx: &mut Context) -> JsResult<()> {
    let ctor = ctx.intrinsics().constructors().promise().constructor();
    let proto = ctx.intrinsics().constructors().promise().prototype();
    let targets: [(&JsObject, &str, usize); 7] = [
        (&proto, "then", 2),
        (&ctor, "resolve", 1),
        (&ctor, "reject", 1),
        (&ctor, "all", 1),
        (&ctor, "allSettled", 1),
        (&ctor, "race", 1),
        (&ctor, "any", 1),
    ];
    for (holder, name, len) in targets {
        let orig = holder.get(JsString::from(name), ctx)?;
        let Some(orig) = orig.as_object().filter(|o| o.is_callable()) else {
            continue;
        };
        let via = if name == "then" { "then" } else { name };
        let f = NativeFunction::from_copy_closure_with_captures(
            move |this, args, (orig, via): &(JsObject, &'static str), ctx| {
                let host = host_of(ctx)?;
                let js = JsStackScope::enter(&host, ctx);
                if let Some(o) = this.as_object() {
                    host.track_promise(&o, via);
                }
                drop(js);
                let r = orig.call(this, args, ctx)?;
                let _js = JsStackScope::enter(&host, ctx);
                if let Some(o) = r.as_object() {
                    host.track_promise(&o, via);
                }
                Ok(r)
            },
            (orig.clone(), static_name(via)),
        );
        let func = FunctionObjectBuilder::new(ctx.realm(), f)
            .name(JsString::from(name))
            .length(len)
            .build();
        holder.set(JsString::from(name), func, true, ctx)?;
    }
    Ok(())
}

fn static_name(s: &str) -> &'static str {
    match s {
        "then" => "then",
        "resolve" => "Promise.resolve",
        "reject" => "Promise.reject",
        "all" => "Promise.all",
        "allSettled" => "Promise.allSettled",
        "race" => "Promise.race",
        _ => "Promise.any",
    }
}

/// Runs one program to completion (or to a budget) and builds the report.
pub(crate) fn run(
    source: &str,
    file_name: &str,
    opts: &RunOptions,
) -> Result<RunReport, JsRunError> {
    SOURCE.with(|s| *s.borrow_mut() = source.to_string());
    let model_name = match opts.model {
        Model::Node => "node",
        Model::Html => "html",
    };
    let clock_cell = Rc::new(std::cell::Cell::new(0u64));
    let host = Rc::new(Host {
        st: RefCell::new(State {
            model: opts.model,
            file: file_name.to_string(),
            now_ns: 0,
            steps: 0,
            max_steps: opts.max_steps,
            max_time_ns: opts.max_virtual_time.as_nanos().min(u64::MAX as u128) as u64,
            seq: 0,
            stdout: String::new(),
            stderr: String::new(),
            notes: Vec::new(),
            uncaught: Vec::new(),
            exit_request: None,
            trace: opts.trace.then(|| Trace::new(model_name, file_name)),
            stack: Vec::new(),
            microtasks: VecDeque::new(),
            ticks: VecDeque::new(),
            timers: HashMap::new(),
            timer_heap: BTreeSet::new(),
            next_timer_id: 0,
            immediates: VecDeque::new(),
            next_immediate_id: 0,
            tasks: VecDeque::new(),
            raf: Vec::new(),
            next_raf_id: 0,
            raf_due: None,
            frames: 0,
            current_timer_nesting: None,
            pending_rejections: Vec::new(),
            tracked: Vec::new(),
            untracked_promises: 0,
            next_promise_id: 0,
            race_notes: 0,
            noted: Vec::new(),
            js_stack: None,
            dropped_jobs: 0,
            inspect: None,
            clock: clock_cell.clone(),
            running_immediates: Vec::new(),
            cleared_immediates: Vec::new(),
            running_raf: Vec::new(),
            cancelled_raf: Vec::new(),
        }),
    });
    let mut ctx = Context::builder()
        .job_executor(host.clone())
        .host_hooks(Rc::new(Hooks))
        .clock(Rc::new(VirtualClock(clock_cell.clone())))
        .build()
        .map_err(|e| JsRunError::Engine(e.to_string()))?;
    ctx.runtime_limits_mut()
        .set_loop_iteration_limit(opts.max_loop_iterations);

    // The prelude.
    let natives = build_natives(&mut ctx).map_err(|e| JsRunError::Engine(e.to_string()))?;
    let prelude_fn = ctx
        .eval(
            Source::from_bytes(include_str!("prelude.js"))
                .with_path(std::path::Path::new("<turno-prelude>")),
        )
        .map_err(|e| JsRunError::Engine(format!("prelude: {e}")))?;
    let prelude_fn = prelude_fn
        .as_object()
        .filter(|o| o.is_callable())
        .ok_or_else(|| JsRunError::Engine("prelude is not a function".into()))?;
    let exports = prelude_fn
        .call(
            &JsValue::undefined(),
            &[natives.into(), JsValue::from(js_string!(model_name))],
            &mut ctx,
        )
        .map_err(|e| JsRunError::Engine(format!("prelude: {e}")))?;
    let inspect = exports
        .as_object()
        .and_then(|o| o.get(js_string!("inspect"), &mut ctx).ok())
        .and_then(|v| v.as_object());
    host.st.borrow_mut().inspect = inspect;
    if opts.trace {
        install_promise_taps(&mut ctx).map_err(|e| JsRunError::Engine(e.to_string()))?;
    }

    let outcome = run_program(&host, &mut ctx, source, file_name);

    let mut st = host.st.borrow_mut();
    let dropped = st.dropped_jobs;
    if dropped > 0 {
        st.notes
            .push(format!("{dropped} non-promise engine job(s) were ignored"));
    }
    if st.untracked_promises > 0 {
        let n = st.untracked_promises;
        st.notes.push(format!(
            "trace follows at most {MAX_TRACKED_PROMISES} promises; {n} more were not followed"
        ));
    }
    let exit_code = match &outcome {
        Ok(()) => {
            if st.uncaught.is_empty() {
                drop(st);
                let code = exit_code_property(&mut ctx);
                st = host.st.borrow_mut();
                code
            } else {
                1
            }
        }
        Err(Stop::Exit(c)) => *c,
        Err(Stop::Fatal) => 1,
        Err(Stop::Budget(_)) => 1,
    };
    let now = st.now_ns;
    let steps = st.steps;
    if let Err(Stop::Budget(b)) = &outcome {
        let msg = match b {
            BudgetKind::Steps => format!("step budget of {} exhausted", st.max_steps),
            BudgetKind::Time { next_ns } => {
                format!("virtual-time budget exhausted (next event at {next_ns} ns)")
            }
            BudgetKind::LoopIterations { message } => message.clone(),
        };
        st.ev("budget_exhausted", json!({"message": msg}));
    }
    st.ev("run_end", json!({"exit_code": exit_code, "steps": steps}));
    let report = RunReport {
        stdout: std::mem::take(&mut st.stdout),
        stderr: std::mem::take(&mut st.stderr),
        exit_code,
        notes: std::mem::take(&mut st.notes),
        uncaught: std::mem::take(&mut st.uncaught),
        trace: st.trace.take(),
        steps,
        end_time_ns: now,
    };
    let max_steps = st.max_steps;
    let max_time_ns = st.max_time_ns;
    drop(st);
    match outcome {
        Err(Stop::Budget(BudgetKind::Steps)) => Err(JsRunError::StepBudget {
            file: file_name.to_string(),
            max_steps,
            t_ns: now,
            partial: Box::new(report),
        }),
        Err(Stop::Budget(BudgetKind::Time { next_ns })) => Err(JsRunError::TimeBudget {
            file: file_name.to_string(),
            max_ns: max_time_ns,
            next_ns,
            partial: Box::new(report),
        }),
        Err(Stop::Budget(BudgetKind::LoopIterations { .. })) => Err(JsRunError::LoopBudget {
            file: file_name.to_string(),
            max_iterations: opts.max_loop_iterations,
            t_ns: now,
            partial: Box::new(report),
        }),
        _ => Ok(report),
    }
}

fn exit_code_property(ctx: &mut Context) -> i32 {
    let g = ctx.global_object();
    let Ok(p) = g.get(js_string!("process"), ctx) else {
        return 0;
    };
    let Some(p) = p.as_object() else { return 0 };
    match p.get(js_string!("exitCode"), ctx) {
        Ok(v) if !v.is_undefined() => v.to_number(ctx).map(|n| n as i32).unwrap_or(0),
        _ => 0,
    }
}

fn run_program(
    host: &Rc<Host>,
    ctx: &mut Context,
    source: &str,
    file_name: &str,
) -> Result<(), Stop> {
    let script = boa_engine::Script::parse(
        Source::from_bytes(source).with_path(std::path::Path::new(file_name)),
        None,
        ctx,
    );
    host.step()?;
    let label = match host.st.borrow().model {
        Model::Node => "main module",
        Model::Html => "script",
    };
    match script {
        Err(e) => {
            let raw = match e.as_native() {
                Some(n) => n.message().to_string(),
                None => e.to_string(),
            };
            let (msg, loc) = split_parse_error(&raw);
            let loc = loc.map(|(l, c)| (file_name.to_string(), l, c));
            let msg = format!("SyntaxError: {msg}");
            let body = match host.st.borrow().model {
                Model::Node => msg.clone(),
                Model::Html => format!("Uncaught {msg}"),
            };
            host.report_uncaught(ctx, loc, body, Some(msg));
            return host.after_uncaught().and(Err(Stop::Fatal));
        }
        Ok(script) => {
            if host.st.borrow().model == Model::Html {
                host.st.borrow_mut().ev(
                    "dequeue",
                    json!({"queue": "task", "source": "script", "id": 0}),
                );
            }
            host.push_frame(label.into());
            let r = script.evaluate(ctx);
            host.pop_frame();
            host.check_exit()?;
            host.sample_promises();
            if let Err(e) = r {
                host.uncaught(ctx, e)?;
            }
        }
    }
    let model = host.st.borrow().model;
    match model {
        Model::Node => host.node_loop(ctx),
        Model::Html => host.html_loop(ctx),
    }
}
