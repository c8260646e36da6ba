//! The registry of natives the prelude reaches through `h`.
//!
//! [`build_natives`] assembles the `h` object. The natives that belong to
//! one queue live with it (`timers.rs`, `node.rs`, `html.rs`,
//! `microtasks.rs`, ...); this file holds the rest (output, clocks, exit,
//! promise state for `util.inspect`). What all of them share is in
//! `support.rs`, which imports none of them.

use std::rc::Rc;

use boa_engine::builtins::promise::PromiseState;
use boa_engine::object::builtins::{JsArray, JsArrayBuffer, JsPromise};
use boa_engine::object::FunctionObjectBuilder;
use boa_engine::{js_string, Context, JsObject, JsResult, JsString, JsValue, NativeFunction};

use super::callee::{describe, find_name, Callee};
use super::compositor::{n_animation, n_cancel_animation};
use super::events::n_invoke_listener;
use super::html::{n_cancel_raf, n_current_task, n_post_task, n_raf};
use super::html::{n_scheduler_cancel, n_scheduler_post, n_scheduler_priority};
use super::microtasks::n_queue_microtask;
use super::node::{n_clear_immediate, n_io, n_next_tick, n_read_file, n_set_immediate};
use super::state::{Host, MS};
use super::support::{arg_u32, host_of, JsStackScope, Ret, Scoped};
use super::timers::{n_clear_timer, n_has_ref, n_ref_timer, n_set_timer};
use super::uncaught::SOURCE;
use super::workers::{n_worker_create, n_worker_end, n_worker_post};

fn n_write(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
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

fn n_now(_: &JsValue, _: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    host.sync_clock(ctx);
    // A worker's `performance.now()` counts from its own creation.
    let ns = {
        let st = host.st.borrow();
        st.now_ns - st.time_origin_ns
    };
    Ok(JsValue::from(ns as f64 / MS as f64))
}

fn n_now_ns(_: &JsValue, _: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    host.sync_clock(ctx);
    let ns = host.st.borrow().now_ns;
    Ok(JsValue::from(ns as f64))
}

fn n_file_name(_: &JsValue, _: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let f = host.st.borrow().file.clone();
    Ok(JsValue::from(JsString::from(f.as_str())))
}

/// `h.originalPositions(text)`: a stack string with the main script's
/// positions mapped back from the rewritten script boa runs (`catches.rs`).
fn n_original_positions(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let text = args
        .first()
        .cloned()
        .unwrap_or_default()
        .to_string(ctx)?
        .to_std_string_escaped();
    let file = host.st.borrow().file.clone();
    Ok(JsValue::from(JsString::from(
        super::catches::map_text(&file, &text).as_str(),
    )))
}

/// `h.callError(line, column, isNew)`: what V8 would say about the failed
/// call whose `(` (or `new`) boa reports at `line`:`column` of the main
/// script: `[message, column]`, `(intermediate value)` when the source
/// there names no callee. A worker's source is not kept, so its calls
/// keep boa's position and get the generic name.
fn n_call_error(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let line = arg_u32(args, 0, ctx)?;
    let column = arg_u32(args, 1, ctx)?;
    let constructor = args.get(2).is_some_and(JsValue::to_boolean);
    let main = host.st.borrow().loop_id == 0;
    let found = if main {
        SOURCE.with(|s| describe(&s.borrow(), line, column, constructor))
    } else {
        None
    };
    let Callee { message, column } = found.unwrap_or_else(|| Callee {
        message: format!(
            "(intermediate value) is not a {}",
            if constructor {
                "constructor"
            } else {
                "function"
            }
        ),
        column,
    });
    let arr = JsArray::from_iter(
        [
            JsValue::from(JsString::from(message)),
            JsValue::from(column),
        ],
        ctx,
    );
    Ok(arr.into())
}

/// `h.nameAt(line, column, name)`: where the main script uses `name`
/// (an undefined name) at or after `line`:`column`, as `[line, column]`,
/// or `null`.
fn n_name_at(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let line = arg_u32(args, 0, ctx)?;
    let column = arg_u32(args, 1, ctx)?;
    let name = args
        .get(2)
        .cloned()
        .unwrap_or_default()
        .to_string(ctx)?
        .to_std_string_escaped();
    if host.st.borrow().loop_id != 0 {
        return Ok(JsValue::null());
    }
    match SOURCE.with(|s| find_name(&s.borrow(), line, column, &name)) {
        Some((l, c)) => Ok(JsArray::from_iter([JsValue::from(l), JsValue::from(c)], ctx).into()),
        None => Ok(JsValue::null()),
    }
}

/// `h.detach(buffer, really)`: whether the ArrayBuffer was already
/// detached; with `really`, detaches it (a transfer's sender side).
fn n_detach(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let Some(obj) = args.first().and_then(JsValue::as_object) else {
        return Ok(JsValue::from(false));
    };
    let Ok(buffer) = JsArrayBuffer::from_object(obj.clone()) else {
        return Ok(JsValue::from(false));
    };
    let was = buffer.data().is_none();
    if !was && args.get(1).is_some_and(JsValue::to_boolean) {
        buffer.detach(&JsValue::undefined())?;
    }
    let _ = ctx;
    Ok(JsValue::from(was))
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

/// How a native is called.
#[derive(Clone, Copy)]
enum Native {
    /// With the host found and the JavaScript stack scope entered first
    /// (see [`Scoped`]).
    WithHost(Scoped),
    /// As boa calls it: for the natives that record nothing, or sync the
    /// clock themselves.
    Plain(fn(&JsValue, &[JsValue], &mut Context) -> Ret),
}

impl Native {
    fn function(self) -> NativeFunction {
        match self {
            Native::Plain(f) => NativeFunction::from_fn_ptr(f),
            Native::WithHost(f) => NativeFunction::from_copy_closure(move |_, args, ctx| {
                let host = host_of(ctx)?;
                let _js = JsStackScope::enter(&host, ctx);
                f(&host, args, ctx)
            }),
        }
    }
}

pub(super) fn build_natives(ctx: &mut Context) -> JsResult<JsObject> {
    use Native::{Plain, WithHost};
    let list: [(&str, Native, usize); 33] = [
        ("workerCreate", WithHost(n_worker_create), 2),
        ("workerPost", WithHost(n_worker_post), 3),
        ("workerEnd", WithHost(n_worker_end), 2),
        ("animation", WithHost(n_animation), 4),
        ("cancelAnimation", WithHost(n_cancel_animation), 1),
        ("invokeListener", Plain(n_invoke_listener), 4),
        ("write", WithHost(n_write), 2),
        ("setTimer", WithHost(n_set_timer), 4),
        ("clearTimer", WithHost(n_clear_timer), 1),
        ("refTimer", Plain(n_ref_timer), 2),
        ("hasRef", Plain(n_has_ref), 1),
        ("setImmediate", WithHost(n_set_immediate), 2),
        ("clearImmediate", WithHost(n_clear_immediate), 1),
        ("nextTick", WithHost(n_next_tick), 2),
        ("queueMicrotask", WithHost(n_queue_microtask), 1),
        ("raf", WithHost(n_raf), 1),
        ("cancelRaf", WithHost(n_cancel_raf), 1),
        ("postTask", WithHost(n_post_task), 3),
        ("schedulerPost", WithHost(n_scheduler_post), 7),
        ("schedulerPriority", WithHost(n_scheduler_priority), 2),
        ("schedulerCancel", WithHost(n_scheduler_cancel), 1),
        ("currentTask", WithHost(n_current_task), 0),
        ("now", Plain(n_now), 0),
        ("nowNs", Plain(n_now_ns), 0),
        ("fileName", Plain(n_file_name), 0),
        ("exit", Plain(n_exit), 1),
        ("callError", Plain(n_call_error), 3),
        ("originalPositions", Plain(n_original_positions), 1),
        ("nameAt", Plain(n_name_at), 3),
        ("detach", Plain(n_detach), 2),
        ("io", WithHost(n_io), 1),
        ("readFile", WithHost(n_read_file), 1),
        ("promiseState", Plain(n_promise_state), 1),
    ];
    let obj = JsObject::with_null_proto();
    for (name, f, len) in list {
        let func = FunctionObjectBuilder::new(ctx.realm(), f.function())
            .name(JsString::from(name))
            .length(len)
            .build();
        obj.set(JsString::from(name), func, false, ctx)?;
    }
    Ok(obj)
}
