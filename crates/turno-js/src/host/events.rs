//! DOM event dispatch: the host's half.
//!
//! The dispatch algorithm itself (paths, phases, `once`, `passive`,
//! `signal`, `stopImmediatePropagation`, the return value) is JavaScript in
//! the prelude; every listener call comes here (`h.invokeListener`), so that
//! the host can do what only it can:
//!
//! * record the listener as a host frame (`event listener: NAME`);
//! * "report the exception" a listener throws (html: reported, dispatch
//!   goes on; node: handed back to the prelude, which rethrows it on the
//!   next tick as Node does, ending the process);
//! * the microtask checkpoint of "clean up after running script": after a
//!   listener returns, the JavaScript stack is empty only if the *host*
//!   started the dispatch (a message, user input, a signal's timeout), so
//!   only then, and only in the html model, the microtasks run before the
//!   next listener. Node drains its queues only after the whole callback.

use boa_engine::object::builtins::JsArray;
use boa_engine::{Context, JsResult, JsValue};

use super::state::fn_name;
use super::support::{arg_fn, host_of};
use crate::Model;

pub(super) fn n_invoke_listener(
    _: &JsValue,
    args: &[JsValue],
    ctx: &mut Context,
) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    host.sync_clock(ctx);
    let Some(f) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let this = args.get(1).cloned().unwrap_or_default();
    let event = args.get(2).cloned().unwrap_or_default();
    let from_host = args.get(3).is_some_and(JsValue::to_boolean);
    if let Err(stop) = host.step() {
        return Err(host.stop_from_native(stop));
    }
    let label = format!("event listener: {}", fn_name(&f, ctx));
    host.push_frame(label);
    let r = f.call(&this, std::slice::from_ref(&event), ctx);
    host.sync_clock(ctx);
    host.pop_frame();
    host.sample_promises();
    let model = host.st.borrow().model;
    if let Err(e) = r {
        // process.exit, a budget or a stop from a nested native: unwind.
        if e.as_engine().is_some() || host.st.borrow().pending_stop.is_some() {
            return Err(e);
        }
        match model {
            Model::Node => {
                let v = e.into_opaque(ctx).unwrap_or_default();
                return Ok(JsArray::from_iter([v], ctx).into());
            }
            Model::Html => {
                if let Err(stop) = host.uncaught(ctx, e) {
                    return Err(host.stop_from_native(stop));
                }
            }
        }
    }
    if from_host && model == Model::Html {
        if let Err(stop) = host.checkpoint(ctx) {
            return Err(host.stop_from_native(stop));
        }
    }
    Ok(JsValue::undefined())
}
