//! The HTML model: tasks, posted messages, animation frames and rendering.
//!
//! Each step (`html_step`, scheduled with the other loops of the run by
//! `workers.rs`) takes the next runnable task (due timers become tasks of
//! the timer source, `MessageChannel` messages and messages from other
//! loops are posted-message tasks, `scheduler.postTask` and
//! `scheduler.yield` queue prioritized tasks, picked by priority), runs it,
//! performs a microtask checkpoint, and at each 60 Hz frame boundary with
//! `requestAnimationFrame` callbacks pending runs the "update the
//! rendering" step, with a checkpoint after each callback.

use std::rc::Rc;

use boa_engine::{Context, JsValue};
use turno_trace::{EntryId, JsEvent, Queue};

use super::entries::{DelayedTask, PendingInput, Prio, Task, TaskKind};
use super::state::{args_vec, fn_name, Host, State, Stop, MS};
use super::state::{cancel, dequeue, enqueue, task_source_kind};
use super::support::{arg_fn, arg_u32, Ret};

/// Expands the input script into pending input tasks, in time order
/// (stable for equal times).
pub(super) fn pending_input(events: &[crate::InputEvent]) -> Vec<PendingInput> {
    use crate::InputKind as K;
    let mut out = Vec::new();
    for e in events {
        let at_ns = e.at_ns();
        let key = |kind: &'static str, key: &str, code: &Option<String>| PendingInput {
            at_ns,
            kind,
            a: JsValue::from(boa_engine::JsString::from(key)),
            b: code
                .as_deref()
                .map(|c| JsValue::from(boa_engine::JsString::from(c)))
                .unwrap_or_default(),
            label: format!("{kind} {key}"),
        };
        let mouse = |kind: &'static str, x: f64, y: f64| PendingInput {
            at_ns,
            kind,
            a: JsValue::from(x),
            b: JsValue::from(y),
            label: format!("{kind} ({x}, {y})"),
        };
        match &e.kind {
            K::KeyDown { key: k, code } => out.push(key("keydown", k, code)),
            K::KeyUp { key: k, code } => out.push(key("keyup", k, code)),
            K::Key { key: k, code } => {
                out.push(key("keydown", k, code));
                out.push(key("keyup", k, code));
            }
            K::MouseDown { x, y } => out.push(mouse("mousedown", *x, *y)),
            K::MouseUp { x, y } => out.push(mouse("mouseup", *x, *y)),
            K::Click { x, y } => {
                out.push(mouse("mousedown", *x, *y));
                out.push(mouse("click", *x, *y));
            }
        }
    }
    out.sort_by_key(|p| p.at_ns);
    out.reverse(); // popped from the back
    out
}

pub(super) fn n_raf(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
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
    let mut e = enqueue(Queue::AnimationFrame, u64::from(id), Some(label));
    if let JsEvent::Enqueue { frame_due_ns, .. } = &mut e {
        *frame_due_ns = due;
    }
    st.ev(e);
    Ok(JsValue::from(id))
}

pub(super) fn n_cancel_raf(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let id = arg_u32(args, 0, ctx)?;
    let mut st = host.st.borrow_mut();
    let before = st.raf.len();
    st.raf.retain(|(i, _)| *i != id);
    if st.running_raf.contains(&id) {
        st.cancelled_raf.push(id);
    }
    if st.raf.len() != before || st.running_raf.contains(&id) {
        st.ev(cancel(Queue::AnimationFrame, u64::from(id)));
    }
    if st.raf.is_empty() {
        st.raf_due = None;
    }
    Ok(JsValue::undefined())
}

pub(super) fn n_post_task(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let extra = args_vec(args.get(1), ctx)?;
    let source = task_source(
        &args
            .get(2)
            .cloned()
            .unwrap_or_default()
            .to_string(ctx)?
            .to_std_string_escaped(),
    );
    let label = fn_name(&cb, ctx);
    host.queue_task(source, label, TaskKind::Callback { f: cb, args: extra });
    Ok(JsValue::undefined())
}

/// `h.schedulerPost(run, finish, label, level, continuation, group,
/// delay)`: queues a prioritized task (`scheduler.postTask`, or a
/// `scheduler.yield` continuation) that calls the prelude's `run`, performs
/// a microtask checkpoint and calls `finish`; at once or, when `delay` (ms,
/// the prelude has checked it) is positive, once it has passed. Returns
/// the task's number for `schedulerCancel`.
pub(super) fn n_scheduler_post(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let (Some(run), Some(finish)) = (arg_fn(args, 0), arg_fn(args, 1)) else {
        return Ok(JsValue::undefined());
    };
    let args = &args[1..];
    let label = args
        .get(1)
        .cloned()
        .unwrap_or_default()
        .to_string(ctx)?
        .to_std_string_escaped();
    let level = args
        .get(2)
        .cloned()
        .unwrap_or_default()
        .to_i32(ctx)?
        .clamp(-2, 2) as i8;
    let continuation = args.get(3).is_some_and(JsValue::to_boolean);
    let group = args.get(4).cloned().unwrap_or_default().to_number(ctx)?;
    let delay_ms = args.get(5).cloned().unwrap_or_default().to_number(ctx)?;
    let delay_ns = if delay_ms.is_finite() && delay_ms > 0.0 {
        (delay_ms.trunc() * MS as f64).min(u64::MAX as f64 / 2.0) as u64
    } else {
        0
    };
    let sched = {
        let mut st = host.st.borrow_mut();
        st.next_sched += 1;
        st.next_sched
    };
    let prio = Prio {
        sched,
        level,
        continuation,
        group: if group.is_finite() && group > 0.0 {
            group as u64
        } else {
            0
        },
    };
    if delay_ns == 0 {
        let now = host.st.borrow().now_ns;
        host.queue_task_at(
            "posted-task",
            label,
            TaskKind::Prioritized { run, finish },
            now,
            TaskExtra::Prioritized(prio),
        );
    } else {
        let mut st = host.st.borrow_mut();
        // The same sequence as timers, so that a delayed task and a timer
        // due together keep the order they were posted in.
        st.seq += 1;
        let key = (st.now_ns.saturating_add(delay_ns), st.seq);
        st.delayed_tasks.insert(
            key,
            DelayedTask {
                label,
                run,
                finish,
                prio,
            },
        );
    }
    Ok(JsValue::from(sched as f64))
}

/// `h.schedulerPriority(group, level)`: a `TaskSignal`'s priority changed;
/// its tasks, queued or delayed, take the new level (keeping their place
/// in their queue).
pub(super) fn n_scheduler_priority(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let group = args.first().cloned().unwrap_or_default().to_number(ctx)?;
    let level = args
        .get(1)
        .cloned()
        .unwrap_or_default()
        .to_i32(ctx)?
        .clamp(-2, 2) as i8;
    if !(group.is_finite() && group > 0.0) {
        return Ok(JsValue::undefined());
    }
    let group = group as u64;
    let mut st = host.st.borrow_mut();
    let st = &mut *st;
    let queued = st.tasks.iter_mut().filter_map(|t| t.prio.as_mut());
    let delayed = st.delayed_tasks.values_mut().map(|d| &mut d.prio);
    for p in queued.chain(delayed) {
        if p.group == group {
            p.level = level;
        }
    }
    Ok(JsValue::undefined())
}

/// `h.schedulerCancel(sched)`: an aborted signal removes its prioritized
/// task (nothing when it has run).
pub(super) fn n_scheduler_cancel(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let sched = args.first().cloned().unwrap_or_default().to_number(ctx)?;
    let mut st = host.st.borrow_mut();
    if let Some(i) = st
        .tasks
        .iter()
        .position(|t| t.prio.is_some_and(|p| p.sched as f64 == sched))
    {
        if let Some(t) = st.tasks.remove(i) {
            st.ev(cancel(Queue::Task, t.id));
        }
    } else {
        st.delayed_tasks.retain(|_, d| d.prio.sched as f64 != sched);
    }
    Ok(JsValue::undefined())
}

/// `h.currentTask()`: the number of the prioritized task whose run (or
/// microtask checkpoint) is in progress, 0 if the current task is another.
pub(super) fn n_current_task(host: &Rc<Host>, _: &[JsValue], _: &mut Context) -> Ret {
    Ok(JsValue::from(host.st.borrow().current_sched as f64))
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

/// The task sources the prelude may queue on (anything else is
/// `posted-message`).
fn task_source(name: &str) -> &'static str {
    match name {
        "user-interaction" => "user-interaction",
        "dom-manipulation" => "dom-manipulation",
        "timer" => "timer",
        "networking" => "networking",
        "posted-task" => "posted-task",
        _ => "posted-message",
    }
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
    fn queue_task(&self, source: &'static str, label: String, kind: TaskKind) {
        let now = self.st.borrow().now_ns;
        self.queue_task_at(source, label, kind, now, TaskExtra::None);
    }

    /// Queues a task that became runnable at `runnable_ns`. The spec
    /// profile keeps the queue in the order tasks became runnable; the
    /// Chromium profile appends (Chromium's scheduler orders a task by when
    /// it reached a run queue, see [`Host::next_task`]).
    fn queue_task_at(
        &self,
        source: &'static str,
        label: String,
        kind: TaskKind,
        runnable_ns: u64,
        extra: TaskExtra,
    ) {
        let prio = match &extra {
            TaskExtra::Prioritized(p) => Some(*p),
            _ => None,
        };
        let mut st = self.st.borrow_mut();
        st.seq += 1;
        let id = st.seq;
        let mut e = enqueue(Queue::Task, id, Some(label.clone()));
        if let JsEvent::Enqueue {
            source: s,
            timer,
            from_loop,
            message,
            input_at_ns,
            ..
        } = &mut e
        {
            *s = Some(task_source_kind(source));
            match extra {
                TaskExtra::None | TaskExtra::Prioritized(_) => {}
                TaskExtra::Timer(id) => *timer = Some(EntryId(u64::from(id))),
                TaskExtra::Message { from, id } => {
                    *from_loop = Some(from);
                    *message = Some(id);
                }
                TaskExtra::Input { at_ns } => *input_at_ns = Some(at_ns),
            }
        }
        st.ev(e);
        // A message from another loop reached this one when its sender
        // posted it, which may lie before tasks queued since (this loop
        // was busy); everything else reaches the run queue now.
        let queued_ns = if matches!(kind, TaskKind::Message { .. }) {
            runnable_ns
        } else {
            st.now_ns
        };
        let task = Task {
            source,
            id,
            runnable_ns,
            queued_ns,
            label,
            kind,
            prio,
        };
        let pos = if st.browser == crate::Browser::Spec {
            st.tasks.iter().position(|t| t.runnable_ns > runnable_ns)
        } else {
            st.tasks.iter().position(|t| t.queued_ns > queued_ns)
        };
        let pos = pos.unwrap_or(st.tasks.len());
        st.tasks.insert(pos, task);
    }

    /// Messages from other loops whose time has come become tasks of the
    /// posted-message task source.
    fn queue_due_arrivals(&self) {
        self.queue_due("posted-message", |st| {
            let due = st.arrivals.front().is_some_and(|a| a.t_ns <= st.now_ns);
            let a = if due { st.arrivals.pop_front() } else { None }?;
            let kind = TaskKind::Message {
                worker: a.worker,
                data: a.data,
            };
            let fields = TaskExtra::Message {
                from: a.from,
                id: a.message,
            };
            Some((
                format!("message from loop {}", a.from),
                kind,
                a.t_ns,
                fields,
            ))
        });
    }

    /// Scripted input whose time has come becomes user-interaction tasks.
    fn queue_due_input(&self) {
        self.queue_due("user-interaction", |st| {
            let due = st.input.last().is_some_and(|p| p.at_ns <= st.now_ns);
            let p = if due { st.input.pop() } else { None }?;
            let (label, at_ns) = (format!("input: {}", p.label), p.at_ns);
            let kind = TaskKind::Input {
                kind: p.kind,
                a: p.a,
                b: p.b,
            };
            Some((label, kind, at_ns, TaskExtra::Input { at_ns }))
        });
    }

    /// Queues, in order, the tasks of `source` that `next_due` takes from
    /// a waiting list while their time has come: label, what runs, when it
    /// became runnable, the event's extra fields. The state is borrowed
    /// only while taking.
    fn queue_due(
        &self,
        source: &'static str,
        next_due: impl Fn(&mut State) -> Option<(String, TaskKind, u64, TaskExtra)>,
    ) {
        loop {
            let Some((label, kind, at_ns, extra)) = next_due(&mut self.st.borrow_mut()) else {
                break;
            };
            self.queue_task_at(source, label, kind, at_ns, extra);
        }
    }

    /// Picks the next task: the highest priority first, then, among tasks
    /// of that priority, the profile's order. Every task has the priority
    /// of `user-visible` but prioritized tasks (`scheduler.postTask`,
    /// `scheduler.yield`: `user-blocking` above, `background` below, a
    /// continuation just above its priority's tasks, as Chromium runs them:
    /// `h34_post_task_priorities`), and, in the Chromium profile, input,
    /// above everything (Blink's input task queue has the highest priority:
    /// `h20_input_before_timer`). Spec profile: the one that became
    /// runnable first (the queue is kept in that order), with a note when
    /// sources compete. Chromium profile: the oldest in run-queue order.
    fn next_task(&self) -> Option<Task> {
        let mut st = self.st.borrow_mut();
        let chromium = st.browser == crate::Browser::Chromium;
        let rank = |t: &Task| {
            if chromium && t.source == "user-interaction" {
                i8::MAX
            } else {
                t.prio.map_or(0, |p| p.rank())
            }
        };
        let best = st.tasks.iter().map(rank).max()?;
        let i = st.tasks.iter().position(|t| rank(t) == best)?;
        if i > 0 {
            let now_ms = st.now_ns as f64 / MS as f64;
            let other = st.tasks[0].source;
            if st.tasks[i].source == "user-interaction" {
                st.note_once(
                    "input-priority",
                    format!(
                        "chromium profile: at t={now_ms} ms a user-interaction task ran before an \
                         older '{other}' task (Chromium gives input the highest priority; the HTML \
                         Standard leaves the choice to the browser; --browser spec keeps runnable order)."
                    ),
                );
            } else {
                st.note_once(
                    "task-priority",
                    format!(
                        "at t={now_ms} ms a prioritized task (scheduler.postTask or scheduler.yield) \
                         ran before an older '{other}' task of lower priority, as Chromium orders them."
                    ),
                );
            }
        } else if !chromium {
            let src = st.tasks[0].source;
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
        st.tasks.remove(i)
    }

    /// After the script (the first task): its microtask checkpoint, then
    /// (the page) the parser finishes: the document's readiness events,
    /// before any task the script queued.
    pub(super) fn html_start(&self, ctx: &mut Context) -> Result<(), Stop> {
        self.checkpoint(ctx)?;
        let finish = self.st.borrow_mut().finish_parsing.take();
        if let Some(f) = finish {
            self.call_in_step(
                ctx,
                "parser finished: DOMContentLoaded, load".into(),
                &f,
                &JsValue::undefined(),
                &[],
            )?;
            self.checkpoint(ctx)?;
        }
        Ok(())
    }

    /// One turn of the loop at the current time (the caller has moved the
    /// clock to when it starts, see `workers.rs`): the next runnable task
    /// and its checkpoint, then the rendering step if a frame is due.
    pub(super) fn html_step(&self, ctx: &mut Context) -> Result<(), Stop> {
        self.queue_due_timers();
        self.queue_due_input();
        self.queue_due_arrivals();
        if let Some(task) = self.next_task() {
            self.run_html_task(ctx, task)?;
            self.checkpoint(ctx)?;
        }
        self.maybe_render(ctx)?;
        Ok(())
    }

    /// Due timers, and prioritized tasks whose delay has passed, become
    /// tasks together, in the order (due time, posting order): Chromium
    /// moves every ripe delayed task to its run queue in one batch, ordered
    /// so across its queues (`h33_post_task_delay`).
    fn queue_due_timers(&self) {
        let mut st = self.st.borrow_mut();
        let now = st.now_ns;
        loop {
            let timer = st.timer_heap.iter().next().copied().filter(|k| k.0 <= now);
            let delayed = st
                .delayed_tasks
                .keys()
                .next()
                .copied()
                .filter(|k| k.0 <= now);
            let take_delayed = match (timer, delayed) {
                (None, None) => break,
                (Some(t), Some(d)) => (d.0, d.1) < (t.0, t.1),
                (None, Some(_)) => true,
                (Some(_), None) => false,
            };
            if take_delayed {
                let Some((key, d)) = st.delayed_tasks.pop_first() else {
                    break;
                };
                drop(st);
                self.queue_task_at(
                    "posted-task",
                    d.label,
                    TaskKind::Prioritized {
                        run: d.run,
                        finish: d.finish,
                    },
                    key.0,
                    TaskExtra::Prioritized(d.prio),
                );
                st = self.st.borrow_mut();
                continue;
            }
            let Some(key) = timer else { break };
            st.timer_heap.remove(&key);
            let (due, seq, id) = key;
            let Some(t) = st.timers.get(&id) else {
                continue;
            };
            let label = t.label.clone();
            st.ev(JsEvent::Dequeue {
                queue: Queue::Timers,
                id: EntryId(u64::from(id)),
                due_ns: Some(due),
                source: None,
            });
            drop(st);
            self.queue_task_at(
                "timer",
                label,
                TaskKind::Timer { id, seq },
                due,
                TaskExtra::Timer(id),
            );
            st = self.st.borrow_mut();
        }
    }

    /// Chromium profile: a one-shot timer whose delay is 0 after clamping
    /// is posted as an ordinary task at once (Blink posts a zero-delay timer
    /// without a delay), so it runs in posting order with messages
    /// (`h19_zero_timer_in_posting_order`); a delayed timer reaches the run
    /// queue only when the loop next looks after it is due, behind every
    /// task posted meanwhile (`h21_due_timer_behind_later_message`).
    pub(super) fn post_zero_timer(&self, id: u32) {
        let (label, seq, due) = {
            let mut st = self.st.borrow_mut();
            let Some(t) = st.timers.get(&id) else { return };
            let (label, seq) = (t.label.clone(), t.seq);
            let due = st.now_ns;
            st.timer_heap.remove(&(due, seq, id));
            st.ev(JsEvent::Dequeue {
                queue: Queue::Timers,
                id: EntryId(u64::from(id)),
                due_ns: Some(due),
                source: None,
            });
            (label, seq, due)
        };
        self.queue_task_at(
            "timer",
            label,
            TaskKind::Timer { id, seq },
            due,
            TaskExtra::Timer(id),
        );
    }

    fn run_html_task(&self, ctx: &mut Context, task: Task) -> Result<(), Stop> {
        self.st.borrow_mut().current_sched = task.prio.map_or(0, |p| p.sched);
        self.st.borrow_mut().ev(JsEvent::Dequeue {
            queue: Queue::Task,
            id: EntryId(task.id),
            due_ns: None,
            source: Some(task_source_kind(task.source)),
        });
        match task.kind {
            TaskKind::Callback { f, args } => self.call(
                ctx,
                format!("task: {}", task.label),
                &f,
                &JsValue::undefined(),
                &args,
            ),
            TaskKind::Prioritized { run, finish } => {
                let label = format!("task: {}", task.label);
                self.call(ctx, label.clone(), &run, &JsValue::undefined(), &[])?;
                self.checkpoint(ctx)?;
                self.call(ctx, label, &finish, &JsValue::undefined(), &[])
            }
            TaskKind::Message { worker, data } => {
                let Some(f) = self.st.borrow().deliver_message.clone() else {
                    return Ok(());
                };
                let args = [JsValue::from(worker), JsValue::from(data)];
                self.call(
                    ctx,
                    format!("task: {}", task.label),
                    &f,
                    &JsValue::undefined(),
                    &args,
                )
            }
            TaskKind::Input { kind, a, b } => {
                let Some(f) = self.st.borrow().deliver_input.clone() else {
                    return Ok(());
                };
                let args = [JsValue::from(boa_engine::JsString::from(kind)), a, b];
                self.call(
                    ctx,
                    format!("task: {}", task.label),
                    &f,
                    &JsValue::undefined(),
                    &args,
                )
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
                        let mut e = enqueue(Queue::Timers, u64::from(id), None);
                        if let JsEvent::Enqueue {
                            due_ns,
                            delay_ns,
                            repeat,
                            nesting: n,
                            clamped: c,
                            ..
                        } = &mut e
                        {
                            *due_ns = Some(due);
                            *delay_ns = Some(delay);
                            *repeat = Some(true);
                            *n = Some(nesting + 1);
                            *c = Some(clamped);
                        }
                        st.ev(e);
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
                    st.current_sched = 0;
                    st.frames += 1;
                    let d = frame_at_or_before(st.now_ns).max(d);
                    let batch = std::mem::take(&mut st.raf);
                    let ids: Vec<u32> = batch.iter().map(|b| b.0).collect();
                    st.running_raf = ids.clone();
                    st.cancelled_raf.clear();
                    let frame = st.frames;
                    let animations = st.main_thread_animations();
                    st.ev(JsEvent::RenderStart {
                        frame,
                        frame_time_ns: d,
                        callbacks: ids.iter().map(|&i| EntryId(u64::from(i))).collect(),
                        animations,
                    });
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
                .ev(dequeue(Queue::AnimationFrame, u64::from(id)));
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
        self.st.borrow_mut().ev(JsEvent::RenderEnd { frame });
        Ok(true)
    }
}

/// What a task's `enqueue` says beyond its queue, id, source and label.
enum TaskExtra {
    /// Nothing more.
    None,
    /// A due timer: the timer's id.
    Timer(u32),
    /// A message from another loop: that loop and the message's id.
    Message {
        /// The sending loop.
        from: u32,
        /// The message's id (as in its `message_post`).
        id: u64,
    },
    /// Scripted input: when the input script gave it.
    Input {
        /// The input's time.
        at_ns: u64,
    },
    /// A prioritized task (`scheduler.postTask`, `scheduler.yield`).
    Prioritized(Prio),
}
