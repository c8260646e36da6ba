//! One snippet run: what the page asks, what it gets back, and the child
//! process that runs it.
//!
//! A snippet is untrusted. The explorer bounds what it can count (host
//! steps, virtual time, iterations of one loop); what it cannot count
//! (memory, a native call that never returns, a crash of the engine) is
//! bounded by running the snippet in a child process: the child lowers its
//! own address-space limit before it reads the snippet, and the server
//! kills it when the wall-clock limit passes. Whatever happens to the
//! child, the server answers with a [`Problem`] and keeps serving.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::AsyncWriteExt;
use turno_js::{JsRunError, Model, RunOptions, RunReport};
use turno_trace::world::{Console, JsWorld};
use turno_trace::{Event, World};

/// The name every snippet runs as, in messages and stack traces.
pub const SNIPPET_FILE: &str = "snippet.js";

/// The most bytes of source a snippet may have.
pub const MAX_CODE_BYTES: usize = 64 * 1024;

/// The most bytes of steps (as JSON) an answer carries; the steps after
/// are cut, and the answer says how many there were.
pub const MAX_STEP_BYTES: usize = 8 << 20;

/// What the page asks: run `code` on the explorer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRequest {
    /// The JavaScript source.
    pub code: String,
    /// `"node"` or `"html"` (default `"html"`).
    #[serde(default = "default_model")]
    pub model: String,
    /// Scripted input for the html model, in `turno js run --input` form
    /// (`[{"at_ms": 100, "type": "key", "key": "a"}]`).
    #[serde(default)]
    pub input: Vec<serde_json::Value>,
    /// Record the steps (default `true`); `false` returns only the
    /// output and the counts (the loops of "run both").
    #[serde(default = "yes")]
    pub steps: bool,
}

fn default_model() -> String {
    "html".into()
}

fn yes() -> bool {
    true
}

/// The limits every run is held to.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budgets {
    /// The explorer's host-step budget.
    pub max_steps: u64,
    /// The explorer's virtual-time budget, in milliseconds.
    pub max_virtual_ms: u64,
    /// The explorer's budget of iterations of one JavaScript loop.
    pub max_loop_iterations: u64,
    /// Real time a run may take, child start to answer, in milliseconds.
    pub wall_ms: u64,
    /// The child's address-space limit, in bytes.
    pub memory_bytes: u64,
    /// Runs at the same time; more wait for a slot.
    pub concurrent: usize,
    /// How long a run waits for a slot before it is turned away, in
    /// milliseconds.
    pub queue_ms: u64,
    /// The most steps sent back to the page (the run goes on; the answer
    /// says how many there were).
    pub max_steps_shown: usize,
}

impl Default for Budgets {
    /// 20 000 host steps, 60 s of virtual time, 2 000 000 iterations of one
    /// loop, 5 s of real time, 512 MiB of address space, 4 runs at a time
    /// (10 s wait for a slot), 3 000 steps shown.
    fn default() -> Self {
        Budgets {
            max_steps: 20_000,
            max_virtual_ms: 60_000,
            max_loop_iterations: 2_000_000,
            wall_ms: 5_000,
            memory_bytes: 512 << 20,
            concurrent: 4,
            queue_ms: 10_000,
            max_steps_shown: 3_000,
        }
    }
}

/// Why a run did not end on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The snippet does not parse.
    Syntax,
    /// The explorer's step budget ran out (an endless microtask loop).
    StepBudget,
    /// The explorer's virtual-time budget ran out (an interval never cleared).
    TimeBudget,
    /// One loop ran too many iterations (`while (true) {}`).
    LoopBudget,
    /// The wall-clock limit passed; the run was killed.
    WallClock,
    /// The memory budget ran out; the run was killed.
    Memory,
    /// Every slot was taken for too long.
    Busy,
    /// The request was not a run request (bad JSON, too long, unknown model).
    BadRequest,
    /// The run could not start or ended abnormally.
    Crashed,
}

/// What stopped a run, said plainly, with a place in the snippet when there
/// is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// Which limit or failure.
    pub kind: ProblemKind,
    /// A sentence for the reader.
    pub message: String,
    /// 1-based line in the snippet.
    pub line: Option<u32>,
    /// 1-based column.
    pub column: Option<u32>,
}

impl Problem {
    fn new(kind: ProblemKind, message: impl Into<String>) -> Self {
        Problem {
            kind,
            message: message.into(),
            line: None,
            column: None,
        }
    }
}

/// An uncaught exception or unhandled rejection, with its place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Uncaught {
    /// The error's first line, e.g. `Error: boom`.
    pub message: String,
    /// 1-based line.
    pub line: Option<u32>,
    /// 1-based column.
    pub column: Option<u32>,
}

/// One step of the run: the event that led to it and the state after it,
/// as `turno_trace::World` reconstructs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Virtual time, in nanoseconds.
    pub t_ns: u64,
    /// The event (`None` at step 0, before anything ran).
    pub event: Option<Event>,
    /// The page's (or Node's main thread's) event loop: queues, stacks,
    /// promise slots, phase, frames.
    pub js: JsWorld,
    /// Console writes so far: the step shows the first `console_len -
    /// console.forgotten` lines of [`Answer::console`].
    pub console_len: u64,
}

/// What a run gives back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// What stopped the run early, or the syntax error; `None` when it ran
    /// to its end.
    pub problem: Option<Problem>,
    /// stdout, line by line.
    pub stdout: Vec<String>,
    /// stderr, line by line.
    pub stderr: Vec<String>,
    /// Uncaught errors, in order.
    pub uncaught: Vec<Uncaught>,
    /// The explorer's notes (where the real runtime is not deterministic).
    pub notes: Vec<String>,
    /// Step 0 (nothing ran) and one step per trace event, as many as fit
    /// [`Budgets::max_steps_shown`] and [`MAX_STEP_BYTES`].
    pub steps: Vec<Step>,
    /// The console at the end of the run (its newest writes; each step
    /// says how many it has seen).
    pub console: Console,
    /// Trace events recorded (more than `steps.len() - 1` when cut).
    pub events: u64,
    /// Host steps taken.
    pub host_steps: u64,
    /// Virtual time at the end, in nanoseconds.
    pub end_time_ns: u64,
    /// html: frames with `requestAnimationFrame` callbacks rendered.
    pub frames_rendered: u64,
    /// boa instructions executed.
    pub instructions: u64,
}

impl Answer {
    /// An answer with nothing but `problem`.
    pub fn refused(problem: Problem) -> Self {
        Answer {
            problem: Some(problem),
            stdout: vec![],
            stderr: vec![],
            uncaught: vec![],
            notes: vec![],
            steps: vec![],
            console: Console::default(),
            events: 0,
            host_steps: 0,
            end_time_ns: 0,
            frames_rendered: 0,
            instructions: 0,
        }
    }
}

/// Checks a request before a child is started for it.
pub fn check(req: &RunRequest) -> Result<(), Problem> {
    if req.code.len() > MAX_CODE_BYTES {
        return Err(Problem::new(
            ProblemKind::BadRequest,
            format!(
                "the snippet is {} bytes long; at most {MAX_CODE_BYTES} are run",
                req.code.len()
            ),
        ));
    }
    if req.model.parse::<Model>().is_err() {
        return Err(Problem::new(
            ProblemKind::BadRequest,
            format!("unknown model {:?} (node or html)", req.model),
        ));
    }
    if !req.input.is_empty() && req.model != "html" {
        return Err(Problem::new(
            ProblemKind::BadRequest,
            "scripted input needs the html model",
        ));
    }
    Ok(())
}

/// Runs `req` here, in this process, under `budgets`' explorer limits (not
/// the wall-clock or memory ones: those are the child's, see [`run_child`]).
pub fn run_here(req: &RunRequest, budgets: &Budgets) -> Answer {
    if let Err(p) = check(req) {
        return Answer::refused(p);
    }
    let model = req.model.parse::<Model>().unwrap_or(Model::Html);
    let mut opts = RunOptions::new(model);
    opts.max_steps = budgets.max_steps;
    opts.max_virtual_time = Duration::from_millis(budgets.max_virtual_ms);
    opts.max_loop_iterations = budgets.max_loop_iterations;
    opts.trace = req.steps;
    if !req.input.is_empty() {
        let text = serde_json::Value::Array(req.input.clone()).to_string();
        match turno_js::InputEvent::parse_script(&text) {
            Ok(i) => opts.input = i,
            Err(e) => {
                return Answer::refused(Problem::new(
                    ProblemKind::BadRequest,
                    format!("scripted input: {e}"),
                ))
            }
        }
    }
    match turno_js::run(&req.code, SNIPPET_FILE, &opts) {
        Ok(report) => answer(&report, None, budgets),
        Err(e) => {
            let problem = match &e {
                JsRunError::StepBudget { max_steps, .. } => Problem::new(
                    ProblemKind::StepBudget,
                    format!("stopped after {max_steps} steps of the event loop: a loop that never empties its queue (a promise or queueMicrotask that queues itself)?"),
                ),
                JsRunError::TimeBudget { max_ns, .. } => Problem::new(
                    ProblemKind::TimeBudget,
                    format!("stopped at {} s of virtual time: a timer or interval that never stops?", max_ns / 1_000_000_000),
                ),
                JsRunError::LoopBudget { max_iterations, .. } => Problem::new(
                    ProblemKind::LoopBudget,
                    format!("stopped: one loop ran more than {max_iterations} times (while (true) {{}}?)"),
                ),
                other => Problem::new(ProblemKind::Crashed, other.to_string()),
            };
            match e.partial_report() {
                Some(r) => answer(r, Some(problem), budgets),
                None => Answer::refused(problem),
            }
        }
    }
}

fn answer(r: &RunReport, problem: Option<Problem>, budgets: &Budgets) -> Answer {
    let uncaught: Vec<Uncaught> = r
        .uncaught
        .iter()
        .map(|u| Uncaught {
            message: u.message.clone(),
            line: u.line,
            column: u.column,
        })
        .collect();
    // A syntax error is reported as an uncaught SyntaxError before anything
    // ran: the page shows it as the run's problem, at its place.
    let problem = problem.or_else(|| {
        uncaught
            .first()
            .filter(|u| u.message.starts_with("SyntaxError") && r.stdout.is_empty())
            .map(|u| Problem {
                kind: ProblemKind::Syntax,
                message: u.message.clone(),
                line: u.line,
                column: u.column,
            })
    });
    let mut steps = Vec::new();
    let mut events = 0;
    let mut console = Console::default();
    if let Some(trace) = &r.trace {
        events = trace.events.len() as u64;
        let mut world = World::new();
        let mut bytes = 0;
        let mut cut = !keep(
            Step {
                t_ns: 0,
                event: None,
                js: world.js.clone(),
                console_len: 0,
            },
            &mut steps,
            &mut bytes,
            budgets.max_steps_shown,
        );
        for e in &trace.events {
            world.apply(e);
            if !cut {
                let written = world.console.lines.len() as u64 + world.console.forgotten;
                let step = Step {
                    t_ns: e.t_ns,
                    event: Some(e.clone()),
                    js: world.js.clone(),
                    console_len: written,
                };
                cut = !keep(step, &mut steps, &mut bytes, budgets.max_steps_shown);
            }
        }
        console = world.console;
    }
    Answer {
        problem,
        stdout: r.stdout_lines().iter().map(|s| s.to_string()).collect(),
        stderr: r.stderr_lines().iter().map(|s| s.to_string()).collect(),
        uncaught,
        notes: r.notes.clone(),
        steps,
        console,
        events,
        host_steps: r.steps,
        end_time_ns: r.end_time_ns,
        frames_rendered: r.frames_rendered,
        instructions: r.instructions,
    }
}

/// Adds `step` if `steps` stays within `max_steps` and [`MAX_STEP_BYTES`];
/// false once it does not.
fn keep(step: Step, steps: &mut Vec<Step>, bytes: &mut usize, max_steps: usize) -> bool {
    *bytes += serde_json::to_vec(&step).map(|v| v.len()).unwrap_or(0);
    if steps.len() >= max_steps || *bytes > MAX_STEP_BYTES {
        return false;
    }
    steps.push(step);
    true
}

/// What the server hands the child on its stdin.
#[derive(Debug, Serialize, Deserialize)]
struct ChildInput {
    request: RunRequest,
    budgets: Budgets,
}

/// The child's side: reads a request from stdin, limits its own address
/// space, runs the request, writes the [`Answer`] to stdout. A binary that
/// serves `turno learn` calls this when started as the runner (`turno learn
/// --runner`, the `turno-learn-runner` binary of this crate).
pub fn runner_main() -> ExitCode {
    let mut text = String::new();
    let read = std::io::stdin()
        .take(2 * MAX_CODE_BYTES as u64 + 64 * 1024)
        .read_to_string(&mut text);
    let answer = match read
        .map_err(|e| e.to_string())
        .and_then(|_| serde_json::from_str::<ChildInput>(&text).map_err(|e| e.to_string()))
    {
        Ok(input) => {
            limit_memory(input.budgets.memory_bytes);
            run_here(&input.request, &input.budgets)
        }
        Err(e) => Answer::refused(Problem::new(
            ProblemKind::BadRequest,
            format!("runner: unreadable request: {e}"),
        )),
    };
    let out = serde_json::to_vec(&answer).unwrap_or_default();
    let mut stdout = std::io::stdout().lock();
    if stdout.write_all(&out).and_then(|_| stdout.flush()).is_err() {
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

fn limit_memory(bytes: u64) {
    let limit = libc::rlimit {
        rlim_cur: bytes as libc::rlim_t,
        rlim_max: bytes as libc::rlim_t,
    };
    // SAFETY: setrlimit reads the struct we pass by reference for the
    // duration of the call and touches no memory of ours afterwards.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
    if rc != 0 {
        eprintln!("runner: cannot limit memory (setrlimit failed); running without the limit");
    }
}

/// How the server starts a child: a program and its arguments; the child
/// must call [`runner_main`].
#[derive(Debug, Clone)]
pub struct Runner {
    /// The program (`turno`, or this crate's `turno-learn-runner`).
    pub program: PathBuf,
    /// Its arguments (`["learn", "--runner"]` for `turno`).
    pub args: Vec<String>,
}

/// Runs `req` in a child started by `runner`, killed after `budgets.wall_ms`;
/// never fails: every way the child can end becomes an [`Answer`].
pub async fn run_child(runner: &Runner, req: &RunRequest, budgets: &Budgets) -> Answer {
    if let Err(p) = check(req) {
        return Answer::refused(p);
    }
    let input = match serde_json::to_vec(&ChildInput {
        request: req.clone(),
        budgets: *budgets,
    }) {
        Ok(b) => b,
        Err(e) => {
            return Answer::refused(Problem::new(ProblemKind::Crashed, e.to_string()));
        }
    };
    let mut child = match tokio::process::Command::new(&runner.program)
        .args(&runner.args)
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return Answer::refused(Problem::new(
                ProblemKind::Crashed,
                format!("cannot start the runner {}: {e}", runner.program.display()),
            ))
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A child that dies before reading is reported by its exit below.
        let _ = stdin.write_all(&input).await;
    }
    let wall = Duration::from_millis(budgets.wall_ms);
    let out = match tokio::time::timeout(wall, child.wait_with_output()).await {
        // The dropped future drops the child, which kills it.
        Err(_) => {
            return Answer::refused(Problem::new(
                ProblemKind::WallClock,
                format!(
                    "stopped after {:.1} s of real time (the limit): the snippet kept the engine busy without finishing a loop iteration or a step it counts",
                    wall.as_secs_f64()
                ),
            ))
        }
        Ok(Err(e)) => {
            return Answer::refused(Problem::new(
                ProblemKind::Crashed,
                format!("the runner failed: {e}"),
            ))
        }
        Ok(Ok(out)) => out,
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        if let Ok(a) = serde_json::from_slice::<Answer>(&out.stdout) {
            return a;
        }
    }
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return Answer::refused(Problem::new(
            ProblemKind::Memory,
            format!(
                "stopped: the snippet used more than its memory budget ({} MiB) and was killed",
                budgets.memory_bytes >> 20
            ),
        ));
    }
    if stderr.contains("has overflowed its stack") {
        return Answer::refused(Problem::new(
            ProblemKind::Crashed,
            "stopped: the engine's stack overflowed (recursion too deep)",
        ));
    }
    let last = stderr.lines().last().unwrap_or("").trim();
    Answer::refused(Problem::new(
        ProblemKind::Crashed,
        format!("the run ended abnormally ({}){}", out.status, {
            if last.is_empty() {
                String::new()
            } else {
                format!(": {last}")
            }
        }),
    ))
}
