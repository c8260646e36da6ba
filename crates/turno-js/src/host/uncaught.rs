//! Uncaught exceptions and unhandled rejections.
//!
//! Decides what an exception escaping a host frame means (the loop-iteration
//! budget, `process.exit` unwinding, an engine limit, or a program error),
//! formats the report as each runtime prints it (Node's source excerpt and
//! `ERR_UNHANDLED_REJECTION`, the browser's `Uncaught (in promise)`), and
//! says whether the loop goes on (HTML) or stops (Node).

use std::cell::RefCell;

use boa_engine::builtins::promise::PromiseState;
use boa_engine::object::builtins::JsPromise;
use boa_engine::{Context, JsError, JsObject, JsValue};
use turno_trace::JsEvent;

use super::state::{BudgetKind, Host, State, Stop};
use crate::{Model, UncaughtError};

impl Host {
    /// Calls `f` as a host-initiated frame, handling an uncaught exception
    /// per model. Returns `Err` only when the loop must stop.
    pub(super) fn call(
        &self,
        ctx: &mut Context,
        label: String,
        f: &JsObject,
        this: &JsValue,
        args: &[JsValue],
    ) -> Result<(), Stop> {
        self.step()?;
        self.call_in_step(ctx, label, f, this, args)
    }

    /// [`Host::call`] as part of the step already under way (no step of
    /// its own): the page's readiness events belong to the script's task.
    pub(super) fn call_in_step(
        &self,
        ctx: &mut Context,
        label: String,
        f: &JsObject,
        this: &JsValue,
        args: &[JsValue],
    ) -> Result<(), Stop> {
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

    pub(super) fn uncaught(&self, ctx: &mut Context, e: JsError) -> Result<(), Stop> {
        if let Some(stop) = self.st.borrow_mut().pending_stop.take() {
            return Err(stop);
        }
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
        if self.st.borrow().model == Model::Node
            && self.process_event(ctx, "uncaughtException", std::slice::from_ref(&value))?
        {
            return Ok(());
        }
        self.report_value(ctx, &value, false);
        self.after_uncaught()
    }

    /// Hands one of process's events to the prelude (node; `false`
    /// elsewhere): whether a listener took it. An error thrown by a
    /// listener is fatal, as in Node, and reported without another event.
    pub(super) fn process_event(
        &self,
        ctx: &mut Context,
        kind: &str,
        args: &[JsValue],
    ) -> Result<bool, Stop> {
        let Some(f) = self.st.borrow().process_event.clone() else {
            return Ok(false);
        };
        let mut all = vec![JsValue::from(boa_engine::JsString::from(kind))];
        all.extend_from_slice(args);
        self.push_frame(format!("process event: {kind}"));
        let r = f.call(&JsValue::undefined(), &all, ctx);
        self.sync_clock(ctx);
        self.pop_frame();
        self.check_exit()?;
        match r {
            Ok(v) => Ok(v.to_boolean()),
            Err(e) => {
                if let Some(stop) = self.st.borrow_mut().pending_stop.take() {
                    return Err(stop);
                }
                let value = e.into_opaque(ctx).unwrap_or_default();
                self.report_value(ctx, &value, false);
                Err(Stop::Fatal)
            }
        }
    }

    pub(super) fn after_uncaught(&self) -> Result<(), Stop> {
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

    pub(super) fn report_uncaught(
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
                let src = st_source_line(&st, *line);
                let col = match src.as_deref() {
                    Some(s) if !st.caught_by_host => throw_column(s, *col),
                    _ => *col,
                };
                text.push_str(&format!("{file}:{line}\n"));
                if let Some(src) = src {
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
        st.emit(2, &text);
        let message =
            message.unwrap_or_else(|| body.lines().next().unwrap_or_default().to_string());
        st.ev(JsEvent::Uncaught {
            message: message.clone(),
            location: loc.as_ref().map(|(f, l, c)| format!("{f}:{l}:{c}")),
        });
        let at = (st.now_ns, st.shared.stamp());
        st.uncaught_at.push(at);
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

    /// Unhandled rejections still unhandled after the microtasks drained.
    pub(super) fn report_rejections(&self, ctx: &mut Context) -> Result<(), Stop> {
        let handled = std::mem::take(&mut self.st.borrow_mut().handled_late);
        for p in handled {
            self.process_event(ctx, "rejectionHandled", &[p.into()])?;
        }
        let pending = std::mem::take(&mut self.st.borrow_mut().pending_rejections);
        for p in pending {
            let Ok(jp) = JsPromise::from_object(p.clone()) else {
                continue;
            };
            let PromiseState::Rejected(reason) = jp.state() else {
                continue;
            };
            let promise = JsValue::from(p.clone());
            if self.process_event(ctx, "unhandledRejection", &[reason.clone(), promise])? {
                self.st.borrow_mut().reported_rejections.push(p);
                continue;
            }
            self.report_value(ctx, &reason, true);
            self.after_uncaught()?;
        }
        Ok(())
    }
}

/// The column Node's excerpt points at for an error created at `col` of
/// `line`: V8 marks the `throw` of `throw new Error(..)`, where the stack
/// (what boa gives) has the `new`.
fn throw_column(line: &str, col: u32) -> u32 {
    let chars: Vec<char> = line.chars().collect();
    let at = (col.saturating_sub(1) as usize).min(chars.len());
    let before: String = chars[..at].iter().collect();
    let trimmed = before.trim_end();
    match trimmed.strip_suffix("throw") {
        Some(rest) if !rest.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '$') => {
            rest.chars().count() as u32 + 1
        }
        _ => col,
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
    pub(super) static SOURCE: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Splits boa's parse-error message `"... at line L, col C"` into the text
/// and the position.
pub(super) fn split_parse_error(msg: &str) -> (String, Option<(u32, u32)>) {
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
