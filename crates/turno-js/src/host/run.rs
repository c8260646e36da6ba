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
use boa_engine::{js_string, Context, JsValue, Source};
use serde_json::json;

use super::microtasks::Hooks;
use super::natives::build_natives;
use super::promises::{install_promise_taps, MAX_TRACKED_PROMISES};
use super::uncaught::{split_parse_error, SOURCE};
use super::{BudgetKind, Host, State, Stop, MS};
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
            browser: opts.browser,
            input: super::html::pending_input(&opts.input),
            deliver_input: None,
            animations: Vec::new(),
            compositor_frame_count: 0,
            cost_picos: opts.cost.picos(),
            instr_seen: 0,
            frac_picos: 0,
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
            pending_stop: None,
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
    let deliver_input = exports
        .as_object()
        .and_then(|o| o.get(js_string!("deliverInput"), &mut ctx).ok())
        .and_then(|v| v.as_object())
        .filter(|o| o.is_callable());
    host.st.borrow_mut().deliver_input = deliver_input;
    if opts.trace {
        install_promise_taps(&mut ctx).map_err(|e| JsRunError::Engine(e.to_string()))?;
    }

    // Setting up the host costs the program no time.
    let setup = turno_boa::instructions_executed(&ctx);
    host.st.borrow_mut().instr_seen = setup;

    let outcome = run_program(&host, &mut ctx, source, file_name);
    let instructions = turno_boa::instructions_executed(&ctx) - setup;

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
        frames_rendered: st.frames,
        instructions,
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
            host.sync_clock(ctx);
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
