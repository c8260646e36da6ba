//! Timers: `setTimeout` / `setInterval` and their heap.
//!
//! Owns the delay coercion of each model (Node: anything outside
//! 1..=TIMEOUT_MAX ms is 1 ms; HTML: WebIDL `long`, i.e. ToInt32 with a
//! negative result meaning 0, clamped to 4 ms beyond nesting level 5), the heap ordered by (due, sequence), cancellation and
//! `ref`/`unref`. When a due timer runs is each loop's business: `node.rs`
//! runs it in the timers phase, `html.rs` turns it into a task.

use std::rc::Rc;

use boa_engine::{Context, JsObject, JsResult, JsValue};
use turno_trace::{EntryId, JsEvent, Queue};

use super::entries::Timer;
use super::state::cancel;
use super::state::{args_vec, fn_name, Host, MS};
use super::support::{arg_fn, arg_u32, host_of, Ret};
use crate::Model;

/// Node's TIMEOUT_MAX (2^31 - 1 ms).
const TIMEOUT_MAX_MS: f64 = 2_147_483_647.0;

pub(super) fn n_set_timer(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let Some(cb) = arg_fn(args, 0) else {
        // The prelude has already turned an HTML string handler into a
        // function; anything else that is not callable sets no timer.
        return Ok(JsValue::from(0));
    };
    let extra = args_vec(args.get(1), ctx)?;
    let delay = args.get(2).cloned().unwrap_or_default().to_number(ctx)?;
    let repeat = args.get(3).is_some_and(JsValue::to_boolean);
    let label = fn_name(&cb, ctx);
    let id = host.set_timer(cb, extra, delay, repeat, label);
    let zero = {
        let st = host.st.borrow();
        st.model == Model::Html
            && st.browser == crate::Browser::Chromium
            && !repeat
            && st.timers.get(&id).is_some_and(|t| t.delay_ns == 0)
    };
    if zero {
        host.post_zero_timer(id);
    }
    Ok(JsValue::from(id))
}

pub(super) fn n_clear_timer(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let id = arg_u32(args, 0, ctx)?;
    host.clear_timer(id);
    Ok(JsValue::undefined())
}

pub(super) fn n_ref_timer(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let id = arg_u32(args, 0, ctx)?;
    let on = args.get(1).is_some_and(JsValue::to_boolean);
    if let Some(t) = host.st.borrow_mut().timers.get_mut(&id) {
        t.refed = on;
    }
    Ok(JsValue::undefined())
}

pub(super) fn n_has_ref(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let id = arg_u32(args, 0, ctx)?;
    let r = host.st.borrow().timers.get(&id).is_some_and(|t| t.refed);
    Ok(JsValue::from(r))
}

/// ECMAScript ToInt32 of a number: NaN and infinities are 0, the rest is
/// truncated and wrapped modulo 2^32 into the signed range.
fn to_int32(n: f64) -> i32 {
    if !n.is_finite() {
        return 0;
    }
    let m = n.trunc().rem_euclid(4_294_967_296.0);
    if m >= 2_147_483_648.0 {
        (m - 4_294_967_296.0) as i32
    } else {
        m as i32
    }
}

impl Host {
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
                // WebIDL `long` (ToInt32: 2^32 + 30 is 30, 2^31 wraps
                // negative); the timer initialization steps make a
                // negative timeout 0.
                let ms = to_int32(delay).max(0);
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
        st.ev(JsEvent::Enqueue {
            queue: Queue::Timers,
            id: EntryId(u64::from(id)),
            label: Some(label),
            due_ns: Some(due),
            delay_ns: Some(delay_ns),
            requested_ns: Some(requested_ns),
            repeat: Some(repeat),
            nesting: Some(nesting),
            clamped: Some(clamped),
            source: None,
            timer: None,
            frame_due_ns: None,
            from_loop: None,
            message: None,
            input_at_ns: None,
        });
        id
    }

    fn clear_timer(&self, id: u32) {
        let mut st = self.st.borrow_mut();
        if let Some(t) = st.timers.remove(&id) {
            st.timer_heap.retain(|&(_, s, i)| !(i == id && s == t.seq));
            st.ev(cancel(Queue::Timers, u64::from(id)));
        }
    }

    /// The earliest timer in the heap, referenced or not.
    pub(super) fn next_timer(&self) -> Option<(u64, u64, u32)> {
        let st = self.st.borrow();
        st.timer_heap
            .iter()
            .find(|(_, _, id)| st.timers.contains_key(id))
            .copied()
    }
}
