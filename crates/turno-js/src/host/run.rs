//! One run, from source text to [`RunReport`].
//!
//! Builds the state and the engine (our job executor, host hooks and virtual
//! clock, the loop-iteration limit), evaluates the prelude, runs the main
//! script as the model's first step, hands over to the model's loop, and
//! turns how it stopped into an exit code, a report, or a budget error.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::rc::Rc;

use boa_engine::context::time::JsInstant;
use boa_engine::context::Clock;
use boa_engine::{js_string, Context, JsString, JsValue, Source};
use turno_trace::js::TaskSource;
use turno_trace::{EntryId, JsEvent, Queue};

use super::catches;
use super::microtasks::Hooks;
use super::natives::build_natives;
use super::promises::{install_promise_taps, MAX_TRACKED_PROMISES};
use super::shared::{Shared, Spawn};
use super::state::{BudgetKind, Host, State, Stop, MS};
use super::uncaught::{split_parse_error, SOURCE};
use super::workers::{run_loops, Loop};
use crate::trace::Trace;
use crate::{JsRunError, Model, RunOptions, RunReport};

/// Virtual wall-clock epoch for `Date.now()`: 2024-01-01T00:00:00Z.
const EPOCH_MS: i64 = 1_704_067_200_000;

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

/// Which global scope a loop's prelude builds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// The program's own loop: Node's main thread or the page (`window`).
    Main,
    /// A dedicated worker (`self`, `postMessage`, no `document`).
    Worker,
}

/// Builds one loop: its state (clock at `t0_ns`), engine and prelude.
fn new_loop(
    opts: &RunOptions,
    shared: &Rc<Shared>,
    loop_id: u32,
    scope: Scope,
    file_name: &str,
    t0_ns: u64,
    parent_and_name: (u32, &str),
) -> Result<(Rc<Host>, Context), JsRunError> {
    let model_name = match opts.model {
        Model::Node => "node",
        Model::Html => "html",
    };
    let clock_cell = Rc::new(std::cell::Cell::new(t0_ns));
    let main = scope == Scope::Main;
    let host = Rc::new(Host {
        st: RefCell::new(State {
            model: opts.model,
            browser: opts.browser,
            input: if main {
                super::html::pending_input(&opts.input)
            } else {
                Vec::new()
            },
            deliver_input: None,
            deliver_message: None,
            finish_parsing: None,
            process_event: None,
            reported_rejections: Vec::new(),
            handled_late: Vec::new(),
            caught_by_host: false,
            animations: Vec::new(),
            compositor_frame_count: 0,
            cost_picos: opts.cost.picos(),
            instr_seen: 0,
            setup_instructions: 0,
            frac_picos: 0,
            file: file_name.to_string(),
            now_ns: t0_ns,
            shared: shared.clone(),
            loop_id,
            time_origin_ns: t0_ns,
            arrivals: VecDeque::new(),
            max_time_ns: opts.max_virtual_time.as_nanos().min(u64::MAX as u128) as u64,
            seq: 0,
            out: Vec::new(),
            trace_stamps: Vec::new(),
            notes: Vec::new(),
            uncaught: Vec::new(),
            uncaught_at: Vec::new(),
            exit_request: None,
            pending_stop: None,
            trace: opts.trace.then(|| Trace::new(model_name, file_name)),
            stack: Vec::new(),
            microtasks: VecDeque::new(),
            ticks: VecDeque::new(),
            timers: HashMap::new(),
            timer_heap: BTreeSet::new(),
            next_timer_id: 0,
            immediates: VecDeque::new(),
            io: VecDeque::new(),
            files: {
                let mut f = opts.files.clone();
                if main {
                    let own = SOURCE.with(|s| s.borrow().clone());
                    f.entry(file_name.to_string()).or_insert(own);
                }
                f
            },
            next_immediate_id: 0,
            tasks: VecDeque::new(),
            delayed_tasks: std::collections::BTreeMap::new(),
            next_sched: 0,
            current_sched: 0,
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
    let mut ctx = turno_boa::build(
        Context::builder()
            .job_executor(host.clone())
            .host_hooks(Rc::new(Hooks))
            .clock(Rc::new(VirtualClock(clock_cell.clone()))),
        opts.max_loop_iterations,
    )
    .map_err(|e| JsRunError::Engine(e.to_string()))?;

    // The prelude.
    let natives = build_natives(&mut ctx).map_err(|e| JsRunError::Engine(e.to_string()))?;
    let prelude_fn = ctx
        .eval(
            Source::from_bytes(include_str!("../prelude.js"))
                .with_path(std::path::Path::new("<turno-prelude>")),
        )
        .map_err(|e| JsRunError::Engine(format!("prelude: {e}")))?;
    let prelude_fn = prelude_fn
        .as_object()
        .filter(|o| o.is_callable())
        .ok_or_else(|| JsRunError::Engine("prelude is not a function".into()))?;
    let scope_name = if main { "main" } else { "worker" };
    let exports = prelude_fn
        .call(
            &JsValue::undefined(),
            &[
                natives.into(),
                JsValue::from(js_string!(model_name)),
                JsValue::from(js_string!(scope_name)),
                JsValue::from(loop_id),
                JsValue::from(parent_and_name.0),
                JsValue::from(JsString::from(parent_and_name.1)),
                JsValue::from(js_string!(match opts.browser {
                    crate::Browser::Chromium => "chromium",
                    crate::Browser::Spec => "spec",
                })),
                JsValue::from(opts.all_builtins),
            ],
            &mut ctx,
        )
        .map_err(|e| JsRunError::Engine(format!("prelude: {e}")))?;
    let mut export = |name: &str| {
        exports
            .as_object()
            .and_then(|o| o.get(JsString::from(name), &mut ctx).ok())
            .and_then(|v| v.as_object())
    };
    let inspect = export("inspect");
    let deliver_input = export("deliverInput").filter(|o| o.is_callable());
    let deliver_message = export("deliverMessage").filter(|o| o.is_callable());
    let finish_parsing = export("finishParsing").filter(|o| o.is_callable());
    let process_event = export("processEvent").filter(|o| o.is_callable());
    {
        let mut st = host.st.borrow_mut();
        st.inspect = inspect;
        st.deliver_input = deliver_input;
        st.deliver_message = deliver_message;
        st.finish_parsing = finish_parsing;
        st.process_event = process_event;
    }
    if opts.trace {
        install_promise_taps(&mut ctx).map_err(|e| JsRunError::Engine(e.to_string()))?;
    }

    // Setting up the host costs the program no time.
    let setup = turno_boa::instructions_executed(&ctx);
    {
        let mut st = host.st.borrow_mut();
        st.instr_seen = setup;
        st.setup_instructions = setup;
    }
    Ok((host, ctx))
}

/// Runs one program to completion (or to a budget) and builds the report.
pub(crate) fn run(
    source: &str,
    file_name: &str,
    opts: &RunOptions,
) -> Result<RunReport, JsRunError> {
    SOURCE.with(|s| *s.borrow_mut() = source.to_string());
    let shared = Rc::new(Shared::new(opts.max_steps, opts.base_dir.clone()));
    let (host, mut ctx) = new_loop(opts, &shared, 0, Scope::Main, file_name, 0, (0, ""))?;
    let setup = host.st.borrow().setup_instructions;

    let mut engine_error = None;
    // The program's own script runs with its `catch` blocks rewritten
    // (`catches.rs`); boa's positions are mapped back wherever shown.
    let rewritten = catches::rewrite(source);
    catches::install(file_name, rewritten.as_ref());
    let main_source = rewritten.as_ref().map_or(source, |r| r.source.as_str());
    let (outcome, workers) = match run_script(&host, &mut ctx, main_source, file_name, Some(source))
    {
        Err(stop) => (Err(stop), Vec::new()),
        Ok(()) if opts.model == Model::Node => (host.node_loop(&mut ctx), Vec::new()),
        Ok(()) => {
            let spawn = |s: Spawn| -> Result<Loop, Stop> {
                let (h, mut c) = new_loop(
                    opts,
                    &shared,
                    s.loop_id,
                    Scope::Worker,
                    &s.file,
                    s.t_ns,
                    (s.parent, &s.name),
                )
                .map_err(|e| {
                    engine_error = Some(e);
                    Stop::Fatal
                })?;
                run_script(&h, &mut c, &s.source, &s.file, None)?;
                h.html_start(&mut c)?;
                Ok(Loop {
                    host: h,
                    ctx: c,
                    ended: false,
                })
            };
            match run_loops(host.clone(), &mut ctx, spawn) {
                Ok(w) => (Ok(()), w),
                Err((w, stop)) => (Err(stop), w),
            }
        }
    };
    if let Some(e) = engine_error {
        return Err(e);
    }
    let mut instructions = turno_boa::instructions_executed(&ctx) - setup;
    for w in &workers {
        let seen_setup = w.host.st.borrow().setup_instructions;
        instructions += turno_boa::instructions_executed(&w.ctx) - seen_setup;
    }
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
    let any_uncaught = !st.uncaught.is_empty()
        || workers
            .iter()
            .any(|w| !w.host.st.borrow().uncaught.is_empty());
    let exit_code = match &outcome {
        Ok(()) => {
            if !any_uncaught {
                drop(st);
                let code = exit_code_property(&mut ctx);
                st = host.st.borrow_mut();
                code
            } else {
                1
            }
        }
        Err(Stop::Exit(c)) => *c,
        // Node: 'exit' listeners run after a fatal error, and may set
        // process.exitCode.
        Err(Stop::Fatal) if opts.model == Model::Node => {
            drop(st);
            let code = match host.process_event(&mut ctx, "fatal", &[]) {
                Ok(_) => exit_code_property(&mut ctx),
                Err(Stop::Exit(c)) => c,
                Err(_) => 1,
            };
            st = host.st.borrow_mut();
            code
        }
        Err(Stop::Fatal) => 1,
        Err(Stop::Budget(_)) => 1,
    };
    let now = workers
        .iter()
        .map(|w| w.host.st.borrow().now_ns)
        .fold(st.now_ns, u64::max);
    let steps = shared.steps();
    if let Err(Stop::Budget(b)) = &outcome {
        let msg = match b {
            BudgetKind::Steps => format!("step budget of {} exhausted", shared.max_steps()),
            BudgetKind::Time { next_ns } => {
                format!("virtual-time budget exhausted (next event at {next_ns} ns)")
            }
            BudgetKind::LoopIterations { message } => message.clone(),
        };
        st.ev(JsEvent::BudgetExhausted { message: msg });
    }
    // The run ends when the last loop does.
    st.now_ns = now;
    st.ev(JsEvent::RunEnd { exit_code, steps });
    let frames_rendered = st.frames;
    drop(st);
    let mut states: Vec<std::cell::RefMut<'_, State>> = vec![host.st.borrow_mut()];
    states.extend(workers.iter().map(|w| w.host.st.borrow_mut()));
    let merged = merge(&mut states);
    drop(states);
    let report = RunReport {
        stdout: merged.stdout,
        stderr: merged.stderr,
        exit_code,
        notes: merged.notes,
        uncaught: merged.uncaught,
        trace: merged.trace,
        steps,
        end_time_ns: now,
        frames_rendered,
        instructions,
    };
    let max_steps = shared.max_steps();
    let max_time_ns = host.st.borrow().max_time_ns;
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

/// Everything the loops of a run recorded, as one.
struct Merged {
    stdout: String,
    stderr: String,
    notes: Vec<String>,
    uncaught: Vec<crate::UncaughtError>,
    trace: Option<Trace>,
}

/// Merges the loops' output and traces in time order (each loop's own
/// records are already in time order; the run-wide stamp breaks ties in the
/// order they were made), renumbering the trace's `seq`. With one loop
/// this is the identity.
fn merge(states: &mut [std::cell::RefMut<'_, State>]) -> Merged {
    let mut chunks: Vec<super::state::Chunk> = states
        .iter_mut()
        .flat_map(|st| std::mem::take(&mut st.out))
        .collect();
    chunks.sort_by_key(|c| (c.t_ns, c.stamp));
    let (mut stdout, mut stderr) = (String::new(), String::new());
    for c in chunks {
        if c.fd == 2 {
            stderr.push_str(&c.text);
        } else {
            stdout.push_str(&c.text);
        }
    }
    let notes = states
        .iter_mut()
        .flat_map(|st| std::mem::take(&mut st.notes))
        .collect();
    let mut uncaught: Vec<((u64, u64), crate::UncaughtError)> = Vec::new();
    for st in states.iter_mut() {
        let times = std::mem::take(&mut st.uncaught_at);
        uncaught.extend(times.into_iter().zip(std::mem::take(&mut st.uncaught)));
    }
    uncaught.sort_by_key(|(k, _)| *k);
    let mut trace: Option<Trace> = None;
    let mut events: Vec<((u64, u64), turno_trace::Event)> = Vec::new();
    for st in states.iter_mut() {
        let Some(mut t) = st.trace.take() else {
            continue;
        };
        let stamps = std::mem::take(&mut st.trace_stamps);
        for (e, stamp) in std::mem::take(&mut t.events).into_iter().zip(stamps) {
            events.push(((e.t_ns, stamp), e));
        }
        if trace.is_none() {
            trace = Some(t);
        }
    }
    if let Some(t) = trace.as_mut() {
        events.sort_by_key(|(k, _)| *k);
        for (i, (_, mut e)) in events.into_iter().enumerate() {
            e.seq = i as u64;
            t.events.push(e);
        }
    }
    Merged {
        stdout,
        stderr,
        notes,
        uncaught: uncaught.into_iter().map(|(_, u)| u).collect(),
        trace,
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

/// Runs a loop's script as its first step (a worker's at its creation).
/// `original` is the program's own text when `source` is its rewrite: if
/// the rewrite does not parse, the original runs, unrewritten.
fn run_script(
    host: &Rc<Host>,
    ctx: &mut Context,
    source: &str,
    file_name: &str,
    original: Option<&str>,
) -> Result<(), Stop> {
    let parse = |text: &str, ctx: &mut Context| {
        boa_engine::Script::parse(
            Source::from_bytes(text).with_path(std::path::Path::new(file_name)),
            None,
            ctx,
        )
    };
    let mut script = parse(source, ctx);
    if let (Err(_), Some(text)) = (&script, original) {
        if text != source {
            catches::install(file_name, None);
            script = parse(text, ctx);
        }
    }
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
                host.st.borrow_mut().ev(JsEvent::Dequeue {
                    queue: Queue::Task,
                    id: EntryId(0),
                    due_ns: None,
                    source: Some(TaskSource::Script),
                });
            }
            host.push_frame(label.into());
            let r = script.evaluate(ctx);
            host.sync_clock(ctx);
            host.pop_frame();
            host.check_exit()?;
            host.sample_promises();
            if let Err(e) = r {
                host.uncaught(ctx, e)?;
            }
        }
    }
    Ok(())
}
