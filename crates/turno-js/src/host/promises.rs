//! Promise-slot observation for the trace.
//!
//! When tracing, the host follows the promises it sees (through the
//! rejection tracker and taps on `then` and the `Promise` statics) and emits
//! a `promise` event whenever one's internal slots change. Nothing here
//! affects ordering; without a trace all of it is a no-op.

use boa_engine::builtins::promise::{Promise, PromiseState};
use boa_engine::object::builtins::JsPromise;
use boa_engine::object::FunctionObjectBuilder;
use boa_engine::{Context, JsObject, JsResult, JsString, JsValue, NativeFunction};
use serde_json::{json, Value};
use turno_trace::js::PromiseState as PromiseSlot;
use turno_trace::{JsEvent, PromiseId};

use super::entries::{PromiseSnap, Tracked};
use super::state::Host;
use super::support::{host_of, JsStackScope};

/// Most promises the trace follows; beyond that, new ones are counted only.
pub(super) const MAX_TRACKED_PROMISES: usize = 2_000;

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

/// Reads the slots of a promise. `[[PromiseState]]` and `[[PromiseResult]]` come
/// from boa's public `JsPromise::state`. boa 0.22 exposes no accessor for
/// `[[PromiseFulfillReactions]]`, `[[PromiseRejectReactions]]` or
/// `[[PromiseIsHandled]]`; its `Promise` type only derives `Debug`, so they are
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

impl Host {
    /// Starts following a promise in the trace (no-op when not tracing).
    pub(super) fn track_promise(&self, obj: &JsObject, via: &str) {
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
        st.ev(JsEvent::PromiseObserved {
            promise: PromiseId(id),
            via: via.to_string(),
        });
        drop(st);
        self.sample_promises();
    }

    /// Emits a `promise` event for every followed promise whose slots changed.
    pub(super) fn sample_promises(&self) {
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
                events.push(JsEvent::Promise {
                    promise: PromiseId(t.id),
                    state: match snap.state {
                        "fulfilled" => PromiseSlot::Fulfilled,
                        "rejected" => PromiseSlot::Rejected,
                        _ => PromiseSlot::Pending,
                    },
                    result: (!snap.result.is_null()).then(|| snap.result.clone()),
                    fulfill_reactions: snap.fulfill.map(|n| n as u64),
                    reject_reactions: snap.reject.map(|n| n as u64),
                    is_handled: snap.handled,
                });
                t.last = Some(snap);
            }
        }
        for e in events {
            st.ev(e);
        }
    }
}

/// Replaces `Promise.prototype.then` and the `Promise` statics with wrappers
/// that call the originals unchanged and register the promises they see, so
/// the trace can follow them. Installed only when tracing. `await` and
/// internal resolution call the original algorithms directly, so ordering is
/// unaffected; promises first seen through them are not followed until they
/// cross one of these entry points.
pub(super) fn install_promise_taps(ctx: &mut Context) -> JsResult<()> {
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
