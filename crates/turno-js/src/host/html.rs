//! The HTML model: tasks, posted messages, animation frames and rendering.
//!
//! The loop takes the oldest runnable task (due timers become tasks of the
//! timer source, `MessageChannel` messages are posted-message tasks), runs
//! it, performs a microtask checkpoint, and at each 60 Hz frame boundary with
//! `requestAnimationFrame` callbacks pending runs the "update the rendering"
//! step, with a checkpoint after each callback.

use boa_engine::{Context, JsObject, JsResult, JsValue};
use serde_json::json;

use super::natives::{arg_fn, arg_u32, host_of, JsStackScope};
use super::{args_vec, fn_name, Host, Stop, MS};

enum TaskKind {
    Timer {
        id: u32,
        seq: u64,
    },
    /// A callback; with `dispatch`, it returns `[fn, this, event]` triples,
    /// each then called from an empty stack with a checkpoint after it.
    Callback {
        f: JsObject,
        args: Vec<JsValue>,
        dispatch: bool,
    },
}

pub(super) struct Task {
    source: &'static str,
    id: u64,
    label: String,
    kind: TaskKind,
}

pub(super) fn n_raf(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::from(0));
    };
    let label = fn_name(&cb, ctx);
    let mut st = host.st.borrow_mut();
    st.next_raf_id += 1;
    let id = st.next_raf_id;
    st.raf.push((id, cb));
    if st.raf_due.is_none() {
        st.raf_due = Some(next_frame_after(st.now_ns));
    }
    let due = st.raf_due;
    st.ev(
        "enqueue",
        json!({"queue": "animation-frame", "id": id, "label": label, "frame_due_ns": due}),
    );
    Ok(JsValue::from(id))
}

pub(super) fn n_cancel_raf(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let id = arg_u32(args, 0, ctx)?;
    let mut st = host.st.borrow_mut();
    let before = st.raf.len();
    st.raf.retain(|(i, _)| *i != id);
    if st.running_raf.contains(&id) {
        st.cancelled_raf.push(id);
    }
    if st.raf.len() != before || st.running_raf.contains(&id) {
        st.ev("cancel", json!({"queue": "animation-frame", "id": id}));
    }
    if st.raf.is_empty() {
        st.raf_due = None;
    }
    Ok(JsValue::undefined())
}

pub(super) fn n_post_task(_: &JsValue, args: &[JsValue], ctx: &mut Context) -> JsResult<JsValue> {
    let host = host_of(ctx)?;
    let _js = JsStackScope::enter(&host, ctx);
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let extra = args_vec(args.get(1), ctx)?;
    let dispatch = args.get(3).is_some_and(JsValue::to_boolean);
    let label = fn_name(&cb, ctx);
    let mut st = host.st.borrow_mut();
    st.seq += 1;
    let id = st.seq;
    st.ev(
        "enqueue",
        json!({"queue": "task", "source": "posted-message", "id": id, "label": label}),
    );
    st.tasks.push_back(Task {
        source: "posted-message",
        id,
        label,
        kind: TaskKind::Callback {
            f: cb,
            args: extra,
            dispatch,
        },
    });
    Ok(JsValue::undefined())
}

/// The latest frame boundary at or before `t_ns`: a frame that came due
/// while a task kept the main thread starts when the task ends, with the
/// timestamp of the vsync it missed most recently.
fn frame_at_or_before(t_ns: u64) -> u64 {
    let frame_ns = |k: u64| (k * 1_000_000_000 + 30) / 60;
    let mut k = t_ns.saturating_mul(60) / 1_000_000_000;
    while frame_ns(k + 1) <= t_ns {
        k += 1;
    }
    while k > 0 && frame_ns(k) > t_ns {
        k -= 1;
    }
    frame_ns(k)
}

fn next_frame_after(t_ns: u64) -> u64 {
    // Frame k starts at k/60 s, rounded to the nanosecond.
    let frame_ns = |k: u64| (k * 1_000_000_000 + 30) / 60;
    let mut k = t_ns.saturating_mul(60) / 1_000_000_000 + 1;
    while frame_ns(k) <= t_ns {
        k += 1;
    }
    frame_ns(k)
}

impl Host {
    pub(super) fn html_loop(&self, ctx: &mut Context) -> Result<(), Stop> {
        self.checkpoint(ctx)?;
        loop {
            self.queue_due_timers();
            let task = {
                let mut st = self.st.borrow_mut();
                let first = st.tasks.front().map(|t| t.source);
                if let Some(src) = first {
                    if let Some(other) = st.tasks.iter().map(|t| t.source).find(|s| *s != src) {
                        let now_ms = st.now_ns as f64 / MS as f64;
                        st.note_once(
                            "task-sources",
                            format!(
                                "implementation-defined in real browsers: at t={} ms tasks from the \
                                 '{src}' and '{other}' task sources were runnable together; the HTML \
                                 Standard lets the browser pick either source first. This run took \
                                 them in the order they became runnable.",
                                now_ms
                            ),
                        );
                    }
                }
                st.tasks.pop_front()
            };
            if let Some(task) = task {
                self.run_html_task(ctx, task)?;
                self.checkpoint(ctx)?;
                self.maybe_render(ctx)?;
                continue;
            }
            if self.maybe_render(ctx)? {
                continue;
            }
            let next_timer = self.next_timer(false).map(|k| k.0);
            let raf_due = self.st.borrow().raf_due;
            let next = match (next_timer, raf_due) {
                (Some(a), Some(b)) => a.min(b),
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (None, None) => return Ok(()),
            };
            self.advance_to(next)?;
        }
    }

    fn queue_due_timers(&self) {
        let mut st = self.st.borrow_mut();
        let now = st.now_ns;
        while let Some(&key) = st.timer_heap.iter().next() {
            if key.0 > now {
                break;
            }
            st.timer_heap.remove(&key);
            let (due, seq, id) = key;
            let Some(t) = st.timers.get(&id) else {
                continue;
            };
            let label = t.label.clone();
            st.seq += 1;
            let tid = st.seq;
            st.ev(
                "dequeue",
                json!({"queue": "timers", "id": id, "due_ns": due}),
            );
            st.ev(
                "enqueue",
                json!({"queue": "task", "source": "timer", "id": tid, "label": label, "timer": id}),
            );
            st.tasks.push_back(Task {
                source: "timer",
                id: tid,
                label,
                kind: TaskKind::Timer { id, seq },
            });
        }
    }

    fn run_html_task(&self, ctx: &mut Context, task: Task) -> Result<(), Stop> {
        self.st.borrow_mut().ev(
            "dequeue",
            json!({"queue": "task", "source": task.source, "id": task.id}),
        );
        match task.kind {
            TaskKind::Callback {
                f,
                args,
                dispatch: false,
            } => self.call(
                ctx,
                format!("task: {}", task.label),
                &f,
                &JsValue::undefined(),
                &args,
            ),
            TaskKind::Callback {
                f,
                args,
                dispatch: true,
            } => {
                let Some(calls) =
                    self.call_value(ctx, format!("task: {}", task.label), &f, &args)?
                else {
                    return Ok(());
                };
                for (g, this, ev) in calls {
                    let label = format!("event listener: {}", fn_name(&g, ctx));
                    self.call(ctx, label, &g, &this, std::slice::from_ref(&ev))?;
                    self.checkpoint(ctx)?;
                }
                Ok(())
            }
            TaskKind::Timer { id, seq } => {
                let info = {
                    let st = self.st.borrow();
                    st.timers.get(&id).filter(|t| t.seq == seq).map(|t| {
                        (
                            t.cb.clone(),
                            t.args.clone(),
                            t.repeat,
                            t.nesting,
                            t.requested_ns,
                        )
                    })
                };
                // Cleared after being queued: the task does nothing.
                let Some((cb, args, repeat, nesting, requested)) = info else {
                    return Ok(());
                };
                if !repeat {
                    self.st.borrow_mut().timers.remove(&id);
                }
                self.st.borrow_mut().current_timer_nesting = Some(nesting);
                let kind = if repeat { "setInterval" } else { "setTimeout" };
                let r = self.call(
                    ctx,
                    format!("{kind} callback: {}", task.label),
                    &cb,
                    &JsValue::undefined(),
                    &args,
                );
                if repeat {
                    // Timer initialization steps again, from inside this task:
                    // nesting level grows, clamp applies to the requested timeout.
                    let mut st = self.st.borrow_mut();
                    let now = st.now_ns;
                    st.seq += 1;
                    let nseq = st.seq;
                    if let Some(t) = st.timers.get_mut(&id) {
                        let mut delay = requested;
                        let mut clamped = false;
                        if nesting > 5 && delay < 4 * MS {
                            delay = 4 * MS;
                            clamped = true;
                        }
                        t.seq = nseq;
                        t.delay_ns = delay;
                        t.nesting = nesting + 1;
                        let due = now + delay;
                        st.timer_heap.insert((due, nseq, id));
                        st.ev(
                            "enqueue",
                            json!({"queue": "timers", "id": id, "due_ns": due, "delay_ns": delay,
                                   "repeat": true, "nesting": nesting + 1, "clamped": clamped}),
                        );
                    }
                }
                self.st.borrow_mut().current_timer_nesting = None;
                r
            }
        }
    }

    /// The "update the rendering" step, when a frame is due and rAF
    /// callbacks are waiting. Returns whether it ran.
    fn maybe_render(&self, ctx: &mut Context) -> Result<bool, Stop> {
        let (due, batch) = {
            let mut st = self.st.borrow_mut();
            match st.raf_due {
                Some(d) if d <= st.now_ns && !st.raf.is_empty() => {
                    if !st.timers.is_empty() || !st.tasks.is_empty() {
                        st.note_once(
                            "frame-timing",
                            "timing-dependent in real browsers: animation frames and timers or \
                             messages were pending together. This run renders on an exact 60 Hz \
                             virtual clock (frame k at k/60 s); a real browser's frames follow the \
                             display and load, so rAF callbacks may move relative to timers."
                                .to_string(),
                        );
                    }
                    st.raf_due = None;
                    st.frames += 1;
                    let d = frame_at_or_before(st.now_ns).max(d);
                    let batch = std::mem::take(&mut st.raf);
                    let ids: Vec<u32> = batch.iter().map(|b| b.0).collect();
                    st.running_raf = ids.clone();
                    st.cancelled_raf.clear();
                    let frame = st.frames;
                    st.ev(
                        "render_start",
                        json!({"frame": frame, "frame_time_ns": d, "callbacks": ids}),
                    );
                    (d, batch)
                }
                _ => return Ok(false),
            }
        };
        let ts = JsValue::from(due as f64 / MS as f64);
        for (id, f) in batch {
            if self.st.borrow().cancelled_raf.contains(&id) {
                continue;
            }
            self.st
                .borrow_mut()
                .ev("dequeue", json!({"queue": "animation-frame", "id": id}));
            let label = format!("requestAnimationFrame callback: {}", fn_name(&f, ctx));
            self.call(
                ctx,
                label,
                &f,
                &JsValue::undefined(),
                std::slice::from_ref(&ts),
            )?;
            self.checkpoint(ctx)?;
        }
        self.st.borrow_mut().running_raf.clear();
        let frame = self.st.borrow().frames;
        self.st
            .borrow_mut()
            .ev("render_end", json!({"frame": frame}));
        Ok(true)
    }
}
