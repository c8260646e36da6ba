//! # turno-js: the JavaScript event loop, made visible
//!
//! This crate runs real JavaScript (on the [boa](https://boajs.dev) engine)
//! inside a host that implements one of two event-loop models on **virtual
//! time**, prints what the program prints, in the order the real runtime
//! would, and can record every step into a [`Trace`].
//!
//! ## The two rules it demonstrates
//!
//! Every JavaScript runtime is "one thread, two kinds of queue, one rule":
//! a *task* (a macrotask: a timer, a message, an I/O callback) runs to
//! completion, and then the whole *microtask* queue (promise reactions,
//! `queueMicrotask`) drains before the next task. The runtimes differ in
//! what counts as a task and in what else gets squeezed in between:
//!
//! * [`Model::Node`]: the `process.nextTick` queue is drained *before*
//!   promise jobs, after the main module and after every callback; the loop
//!   goes through phases `timers → pending → poll → check (setImmediate) →
//!   close`; `setTimeout(f, 0)` means 1 ms.
//! * [`Model::Html`]: the script is a task; timers and posted messages
//!   (`MessageChannel`) are tasks; a microtask checkpoint follows every task
//!   and every callback that empties the stack; nested timers are clamped to
//!   4 ms beyond nesting level 5; `requestAnimationFrame` callbacks run in an
//!   "update the rendering" step on a 60 Hz frame clock, all callbacks of one
//!   frame receiving the same timestamp.
//!
//! ## Why our own job executor
//!
//! boa's default executor runs due timers before promise jobs, which is right
//! for neither model. Here the host is boa's `JobExecutor`: every promise job
//! lands in our microtask queue, and the loop in `host/` decides when it runs.
//!
//! ## Virtual time and the cost model
//!
//! Time is virtual and runs are fully deterministic. Executing JavaScript
//! advances the clock by the boa instructions it executes times
//! [`RunOptions::cost`] ([`Cost::DEFAULT`]: 10 ns per instruction; see
//! `cost.rs` for how the count is read), so `performance.now()` and
//! `Date.now()` move while code runs, a long task delays everything behind
//! it, and a 60 Hz frame that comes due during a task is rendered only after
//! it. When nothing is runnable the clock jumps straight to the next due
//! timer, frame or input event. [`Cost::ZERO`] (`--cost 0`) keeps the
//! explorer's earlier behaviour: the clock never moves while JavaScript runs.
//! Where the real runtime is *not* deterministic (in Node, `setTimeout(f, 0)`
//! against `setImmediate` from the main module), the run picks one order and
//! says so in [`RunReport::notes`].
//!
//! ## Budgets
//!
//! A runaway program (an endless microtask loop, an interval never cleared,
//! `while (true) {}`) stops at [`RunOptions::max_steps`],
//! [`RunOptions::max_virtual_time`] or [`RunOptions::max_loop_iterations`]
//! with a [`JsRunError`] that carries the output produced so far. It never hangs.
//!
//! ## The trace
//!
//! With [`RunOptions::trace`] the run records a [`Trace`]: host call-stack
//! pushes and pops, every enqueue/dequeue on every queue (microtasks,
//! nextTick, the timers heap, immediates, task queues, the rAF list), loop
//! phases, render steps, time jumps, output, and the internal slots of the
//! promises it follows. The format (JSON lines, `turno-js-trace` version 1,
//! a sibling of the runtime's `turno-trace`) and exactly what the engine
//! lets it see are documented in `docs/js-trace-format.md`.
//!
//! ## Fidelity and limits
//!
//! * **Checked against the real engines.** `tests/oracle.rs` runs every
//!   snippet of `tests/corpus/node` under `node` and every snippet of
//!   `tests/corpus/html` in headless Chromium, and requires the same lines.
//! * **console.log** follows Node's `util.inspect` defaults (depth 2,
//!   breakLength 80, compact 3, array grouping, `%s %d %i %f %j %o %O %c`),
//!   in both models. Error stacks carry boa's frames, not V8's.
//! * **What each model provides.** `docs/js-runtime.md` has the table of
//!   APIs per model (checked by `tests/runtime_table.rs`), the runtime
//!   profile (built-ins boa has and the modelled runtime lacks are hidden
//!   unless [`RunOptions::all_builtins`]), and how a call of a non-function
//!   or an undefined name is reported (`o.foo is not a function` with V8's
//!   line and column).
//! * **Node model.** The entry file runs as a script with `require` (`util`,
//!   `timers`, `timers/promises`, `process`), `module`, `exports`, `__filename`, `__dirname` as
//!   globals instead of inside Node's module wrapper, so positions are exact
//!   but top-level `var` and `this` are global. `fs.readFile` reads
//!   [`RunOptions::files`] (and the program's own file), its callbacks in
//!   the poll phase; `process.exit`,
//!   `process.exitCode`, unref'd timers, unhandled-rejection crashes and
//!   `process.on` (`beforeExit`, `exit`, `uncaughtException`,
//!   `unhandledRejection`, `rejectionHandled`) behave as in Node 20.
//! * **Events.** `EventTarget`, `Event`, `CustomEvent`, `AbortController`,
//!   `AbortSignal` (`abort`, `timeout`, `any`, `reason`), `DOMException` and
//!   `structuredClone` in both models, with the DOM Standard's dispatch
//!   (Node 20 ignores `passive`, and so does the node model).
//! * **HTML model.** A minimal `window`/`document` (an element tree without
//!   layout, `click()`, `KeyboardEvent`/`MouseEvent` for scripted input,
//!   `animate()` for the compositor lane, `readyState` with
//!   `DOMContentLoaded` and `load` right after the script),
//!   `window.postMessage`, `MutationObserver` (child lists), dedicated
//!   workers (below). Where the standard leaves
//!   the order of task sources open, [`Browser::Chromium`] does what
//!   Chromium does (input first; a zero-delay timer posted at once; a
//!   delayed timer queued after the task in which it came due; a
//!   `MessagePort`'s first message one task, and when its dispatch is over
//!   one task for each message then waiting, see `docs/js-workers.md`) and
//!   [`Browser::Spec`] runs tasks in the order they became runnable, with a
//!   note. Frames are at exactly k/60 s; a real browser's frames
//!   follow the display, so rAF against timers is noted as timing-dependent.
//!   An uncaught error is reported and the page keeps running; the exit code
//!   is then 1. A string handler for `setTimeout` is evaluated as script
//!   text (indirect `eval`) when the timer fires.
//! * **Workers** (html model). `new Worker(url)` loads `url` relative to
//!   [`RunOptions::base_dir`] and runs it as a second event loop with its own
//!   realm, queues and virtual clock (its script 1 ms after creation);
//!   `postMessage` goes both ways as tasks with structured-clone semantics
//!   (`DataCloneError` thrown to the sender), `terminate()` and `close()` end
//!   it, and every trace event names its `loop`. The loops run as a
//!   discrete-event simulation, so a busy worker delays nothing on the page.
//!   The model and where it differs from a browser: `docs/js-workers.md`.
//!   The node model has no `worker_threads`.
//! * **Date.now()** starts at 2024-01-01T00:00:00Z and follows virtual time;
//!   `performance.now()` is virtual milliseconds since the start.
//!
//! ## Example
//!
//! ```
//! use turno_js::{run, Model, RunOptions};
//!
//! let src = "setTimeout(() => console.log('timeout'), 0);\n\
//!            Promise.resolve().then(() => console.log('promise'));\n\
//!            process.nextTick(() => console.log('tick'));\n\
//!            console.log('sync');";
//! let report = run(src, "demo.js", &RunOptions::new(Model::Node)).unwrap();
//! assert_eq!(report.stdout_lines(), ["sync", "tick", "promise", "timeout"]);
//! ```

mod cost;
mod host;
mod input;
pub mod trace;

use std::path::PathBuf;
use std::time::Duration;

pub use cost::{Cost, CostError};
pub use input::{InputError, InputEvent, InputKind};
pub use trace::{Trace, TraceError, TRACE_FORMAT, TRACE_VERSION};

/// Which runtime's event loop to model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Model {
    /// Node.js running a CommonJS entry file.
    #[default]
    Node,
    /// A browser page (the HTML Standard event loop, as Chromium runs it).
    Html,
}

/// A model name that is neither `node` nor `html`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown model '{0}' (expected 'node' or 'html')")]
pub struct ParseModelError(pub String);

impl std::str::FromStr for Model {
    type Err = ParseModelError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "node" => Ok(Model::Node),
            "html" | "browser" => Ok(Model::Html),
            other => Err(ParseModelError(other.to_string())),
        }
    }
}

/// Which browser's choices the html model makes where the HTML Standard
/// leaves the order of task sources to the browser.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Browser {
    /// What headless Chromium does (the default): see
    /// `docs/js-trace-format.md` and the `host/html.rs` rules, each checked
    /// by a corpus snippet against Chromium.
    #[default]
    Chromium,
    /// The standard only: runnable tasks run in the order they became
    /// runnable, whatever their source; a note says where a browser may differ.
    Spec,
}

/// Options for [`run`].
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The host model.
    pub model: Model,
    /// The html model's browser profile (ignored by the node model).
    pub browser: Browser,
    /// How much virtual time executing JavaScript takes ([`Cost::DEFAULT`]:
    /// 10 ns per boa instruction; [`Cost::ZERO`]: JavaScript takes no time).
    pub cost: Cost,
    /// Scripted user input (html model), delivered at its virtual times as
    /// tasks from the user-interaction task source.
    pub input: Vec<InputEvent>,
    /// Where `new Worker(url)` (html model) resolves `url`, a path that must
    /// stay below it (the CLI gives the program's directory); without it no
    /// worker script loads, and the `Worker` gets an `error` event.
    pub base_dir: Option<PathBuf>,
    /// Most host steps (callbacks, microtasks, ticks, the main script) before
    /// the run is stopped with [`JsRunError::StepBudget`].
    pub max_steps: u64,
    /// Most virtual time the run may reach before it is stopped with
    /// [`JsRunError::TimeBudget`].
    pub max_virtual_time: Duration,
    /// Most iterations of one JavaScript loop (boa's runtime limit) before the
    /// run is stopped with [`JsRunError::LoopBudget`].
    pub max_loop_iterations: u64,
    /// Record a [`Trace`].
    pub trace: bool,
    /// Keep every built-in the engine has, even those the modelled runtime
    /// lacks. By default (`false`) the run follows the runtime profile of
    /// `docs/js-runtime.md`: under the node model, for instance,
    /// `Promise.withResolvers` and `Object.groupBy` are `undefined`, as in
    /// Node 20, so feature-detecting code takes Node's branch.
    pub all_builtins: bool,
    /// The node model's virtual file system for `fs.readFile` and
    /// `fs.promises.readFile`: path to UTF-8 text. The program's own file
    /// is always there under its name (`__filename`).
    pub files: std::collections::BTreeMap<String, String>,
}

impl RunOptions {
    /// Defaults for `model`: the Chromium profile, [`Cost::DEFAULT`], no
    /// input, 100 000 steps, 1 hour of virtual time, 5 000 000 iterations
    /// of any one loop, no trace, the runtime's built-ins only.
    pub fn new(model: Model) -> Self {
        RunOptions {
            model,
            browser: Browser::default(),
            cost: Cost::DEFAULT,
            input: Vec::new(),
            base_dir: None,
            max_steps: 100_000,
            max_virtual_time: Duration::from_secs(3600),
            max_loop_iterations: 5_000_000,
            trace: false,
            all_builtins: false,
            files: std::collections::BTreeMap::new(),
        }
    }
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions::new(Model::Node)
    }
}

/// An exception nobody caught (or a promise rejection nobody handled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncaughtError {
    /// The first line of the error as the runtime prints it, e.g. `Error: boom`.
    pub message: String,
    /// Where it was thrown, when known.
    pub file: Option<String>,
    /// 1-based line.
    pub line: Option<u32>,
    /// 1-based column.
    pub column: Option<u32>,
}

impl std::fmt::Display for UncaughtError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.file, self.line, self.column) {
            (Some(file), Some(l), Some(c)) => write!(f, "{file}:{l}:{c}: {}", self.message),
            _ => f.write_str(&self.message),
        }
    }
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunReport {
    /// Everything written to stdout (console.log, process.stdout.write).
    pub stdout: String,
    /// Everything written to stderr, including uncaught-error reports.
    pub stderr: String,
    /// The process exit code as the real runtime would give it (Node: 1 on an
    /// uncaught exception or unhandled rejection, `process.exit(n)`,
    /// `process.exitCode`; html: 1 if any error went uncaught, else 0).
    pub exit_code: i32,
    /// Remarks about the run, such as where the real runtime is not
    /// deterministic and this run chose one order.
    pub notes: Vec<String>,
    /// Uncaught exceptions and unhandled rejections, in order.
    pub uncaught: Vec<UncaughtError>,
    /// The recorded trace, if [`RunOptions::trace`] was set.
    pub trace: Option<Trace>,
    /// Host steps taken.
    pub steps: u64,
    /// Virtual time at the end of the run, in nanoseconds.
    pub end_time_ns: u64,
    /// html: "update the rendering" steps that ran (frames with
    /// `requestAnimationFrame` callbacks); 0 in node.
    pub frames_rendered: u64,
    /// boa instructions the program executed (the host's setup excluded),
    /// the quantity the [`Cost`] model turns into time.
    pub instructions: u64,
}

impl RunReport {
    /// `stdout` split into lines (without the line terminators).
    pub fn stdout_lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
    /// `stderr` split into lines.
    pub fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }
}

/// Why a run (or the command line) failed.
///
/// Exceptions thrown by the program are *not* errors of this type: they are
/// part of the program's behaviour and appear in [`RunReport::uncaught`] and
/// [`RunReport::exit_code`], as with the real runtime. The budget variants
/// carry the partial report up to the stop.
#[derive(Debug, thiserror::Error)]
pub enum JsRunError {
    /// The step budget ran out: most likely an endless microtask, nextTick or
    /// immediate loop.
    #[error("{file}: step budget of {max_steps} host steps exhausted at t={t_ns} ns (runaway program? e.g. an endless microtask loop)")]
    StepBudget {
        /// The program's file name.
        file: String,
        /// The budget.
        max_steps: u64,
        /// Virtual time at the stop.
        t_ns: u64,
        /// Output and trace up to the stop.
        partial: Box<RunReport>,
    },
    /// The next event lies beyond the virtual-time budget (e.g. an interval
    /// that is never cleared).
    #[error("{file}: virtual-time budget of {max_ns} ns exhausted (next event due at {next_ns} ns; an interval never cleared?)")]
    TimeBudget {
        /// The program's file name.
        file: String,
        /// The budget.
        max_ns: u64,
        /// When the next event was due.
        next_ns: u64,
        /// Output and trace up to the stop.
        partial: Box<RunReport>,
    },
    /// A single JavaScript loop ran too many iterations (`while (true) {}`).
    #[error("{file}: a loop exceeded {max_iterations} iterations at t={t_ns} ns (synchronous infinite loop?)")]
    LoopBudget {
        /// The program's file name.
        file: String,
        /// The budget.
        max_iterations: u64,
        /// Virtual time at the stop.
        t_ns: u64,
        /// Output and trace up to the stop.
        partial: Box<RunReport>,
    },
    /// The engine or the host prelude could not be set up.
    #[error("engine setup failed: {0}")]
    Engine(String),
    /// Scripted input was given to a model without user interaction (node).
    #[error("scripted input needs the html model, not {model}")]
    InputUnsupported {
        /// The model that was asked, `"node"`.
        model: &'static str,
    },
    /// The program file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl JsRunError {
    /// The report up to the stop, for the budget errors.
    pub fn partial_report(&self) -> Option<&RunReport> {
        match self {
            JsRunError::StepBudget { partial, .. }
            | JsRunError::TimeBudget { partial, .. }
            | JsRunError::LoopBudget { partial, .. } => Some(partial),
            _ => None,
        }
    }
}

/// Runs `source` (named `file_name` in messages and stack traces) under
/// `opts.model` until its event loop is empty, the program exits, or a budget
/// runs out.
///
/// The node model runs the file as a CommonJS entry point would run, with
/// `require` (for `util`, `timers`, `timers/promises`, `process`), `module`, `exports`,
/// `__filename` and `__dirname` provided as globals rather than through
/// Node's module wrapper function, so that line and column numbers are
/// exact. A syntax error is reported like an uncaught exception.
pub fn run(source: &str, file_name: &str, opts: &RunOptions) -> Result<RunReport, JsRunError> {
    if !opts.input.is_empty() && opts.model == Model::Node {
        return Err(JsRunError::InputUnsupported { model: "node" });
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        host::run(source, file_name, opts)
    })) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            Err(JsRunError::Engine(format!("internal panic: {msg}")))
        }
    }
}
