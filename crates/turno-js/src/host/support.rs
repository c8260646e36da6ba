//! What every native shares: finding the host, reading arguments, and
//! attaching the JavaScript stack to the events a native records.
//!
//! Below the queue files and the registry: it imports only the host core
//! (`state.rs`; entering the scope syncs the clock of `clock.rs`), so the
//! queue modules that define natives and the registry that collects them
//! (`natives.rs`) both depend on it and never on each other.

use std::rc::Rc;

use boa_engine::{Context, JsNativeError, JsObject, JsResult, JsValue};

use super::catches::original_position;
use super::state::Host;

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
                Some(p) => {
                    let (l, c) = original_position(&path, p.line_number(), p.column_number());
                    format!("{name} ({path}:{l}:{c})")
                }
                None => format!("{name} ({path})"),
            })
        })
        .collect();
    frames.reverse();
    frames
}

/// While alive, events recorded carry the JavaScript stack of the native
/// call that records them (tracing only).
pub(super) struct JsStackScope(Rc<Host>, Option<Vec<String>>);

impl JsStackScope {
    pub(super) fn enter(host: &Rc<Host>, ctx: &Context) -> Self {
        host.sync_clock(ctx);
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

/// What a native hands back to JavaScript.
pub(super) type Ret = JsResult<JsValue>;

/// A native that runs with its host at hand and the JavaScript stack
/// attached to everything it records: the registry (`natives.rs`) finds the
/// host and enters the [`JsStackScope`] around it, once for all of them.
pub(super) type Scoped = fn(&Rc<Host>, &[JsValue], &mut Context) -> Ret;

pub(super) fn host_of(ctx: &Context) -> JsResult<Rc<Host>> {
    ctx.downcast_job_executor::<Host>().ok_or_else(|| {
        JsNativeError::error()
            .with_message("turno-js host missing")
            .into()
    })
}

pub(super) fn arg_fn(args: &[JsValue], i: usize) -> Option<JsObject> {
    args.get(i)
        .and_then(JsValue::as_object)
        .filter(|o| o.is_callable())
}

pub(super) fn arg_u32(args: &[JsValue], i: usize, ctx: &mut Context) -> JsResult<u32> {
    let n = args.get(i).cloned().unwrap_or_default().to_number(ctx)?;
    Ok(if n.is_finite() && n >= 0.0 {
        n as u32
    } else {
        0
    })
}
