//! The Node model: the loop phases, `process.nextTick` and `setImmediate`.
//!
//! After the main module and after every callback, Node's
//! `processTicksAndRejections` drains the nextTick queue, then the
//! microtasks, until both are empty. Each loop iteration goes through the
//! phases timers → pending → poll → check → close; the poll phase runs the
//! callbacks of the virtual file system's requests (`h.io`), otherwise
//! pending and poll only wait (virtual time jumps to the next timer, referenced or not, while a
//! referenced one or an immediate keeps the loop alive) and the
//! check phase runs the immediates queued before it started.

use std::rc::Rc;

use boa_engine::{Context, JsValue};
use turno_trace::js::Phase;
use turno_trace::{EntryId, JsEvent, Queue};

use super::state::{args_vec, fn_name, Host, Stop, MS};
use super::state::{cancel, dequeue, enqueue};
use super::support::{arg_fn, arg_u32, Ret};

pub(super) fn n_set_immediate(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let extra = args_vec(args.get(1), ctx)?;
    let label = fn_name(&cb, ctx);
    let id = {
        let mut st = host.st.borrow_mut();
        st.next_immediate_id += 1;
        let id = st.next_immediate_id;
        st.immediates.push_back((id, cb, extra));
        st.ev(enqueue(Queue::Immediate, u64::from(id), Some(label)));
        id
    };
    Ok(JsValue::from(id))
}

pub(super) fn n_clear_immediate(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let id = arg_u32(args, 0, ctx)?;
    let mut st = host.st.borrow_mut();
    let before = st.immediates.len();
    st.immediates.retain(|(i, _, _)| *i != id);
    if st.running_immediates.contains(&id) {
        st.cleared_immediates.push(id);
    }
    if st.immediates.len() != before || st.running_immediates.contains(&id) {
        st.ev(cancel(Queue::Immediate, u64::from(id)));
    }
    Ok(JsValue::undefined())
}

/// `h.io(callback)`: an I/O request that completes at once; its callback
/// runs in the next poll phase.
pub(super) fn n_io(host: &Rc<Host>, args: &[JsValue], _: &mut Context) -> Ret {
    if let Some(cb) = arg_fn(args, 0) {
        host.st.borrow_mut().io.push_back(cb);
    }
    Ok(JsValue::undefined())
}

/// `h.readFile(path)`: the virtual file's text, or `null`.
pub(super) fn n_read_file(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let path = args
        .first()
        .cloned()
        .unwrap_or_default()
        .to_string(ctx)?
        .to_std_string_escaped();
    let st = host.st.borrow();
    let key = path.strip_prefix("./").unwrap_or(&path);
    Ok(st
        .files
        .get(key)
        .map(|t| JsValue::from(boa_engine::JsString::from(t.as_str())))
        .unwrap_or_else(JsValue::null))
}

pub(super) fn n_next_tick(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let extra = args_vec(args.get(1), ctx)?;
    let label = fn_name(&cb, ctx);
    let mut st = host.st.borrow_mut();
    st.seq += 1;
    let id = st.seq;
    st.ticks.push_back((id, cb, extra));
    st.ev(enqueue(Queue::NextTick, id, Some(label)));
    Ok(JsValue::undefined())
}

impl Host {
    /// Node's `processTicksAndRejections`.
    fn process_ticks(&self, ctx: &mut Context) -> Result<(), Stop> {
        loop {
            loop {
                let next = self.st.borrow_mut().ticks.pop_front();
                let Some((id, f, args)) = next else { break };
                self.st.borrow_mut().ev(dequeue(Queue::NextTick, id));
                let label = format!("nextTick: {}", fn_name(&f, ctx));
                self.call(ctx, label, &f, &JsValue::undefined(), &args)?;
            }
            self.run_microtasks(ctx)?;
            if self.st.borrow().ticks.is_empty() {
                self.report_rejections(ctx)?;
                if self.st.borrow().ticks.is_empty() && self.st.borrow().microtasks.is_empty() {
                    return Ok(());
                }
            }
        }
    }

    fn run_node_timer(&self, ctx: &mut Context, key: (u64, u64, u32)) -> Result<(), Stop> {
        let (due, _, id) = key;
        let (cb, args, label, repeat) = {
            let mut st = self.st.borrow_mut();
            st.timer_heap.remove(&key);
            let Some(t) = st.timers.get(&id) else {
                return Ok(());
            };
            let v = (t.cb.clone(), t.args.clone(), t.label.clone(), t.repeat);
            if !t.repeat {
                st.timers.remove(&id);
            }
            st.ev(JsEvent::Dequeue {
                queue: Queue::Timers,
                id: EntryId(u64::from(id)),
                due_ns: Some(due),
                source: None,
            });
            v
        };
        let kind = if repeat { "setInterval" } else { "setTimeout" };
        self.call(
            ctx,
            format!("{kind} callback: {label}"),
            &cb,
            &JsValue::undefined(),
            &args,
        )?;
        if repeat {
            let mut st = self.st.borrow_mut();
            let now = st.now_ns;
            st.seq += 1;
            let seq = st.seq;
            if let Some(t) = st.timers.get_mut(&id) {
                t.seq = seq;
                let due = now + t.delay_ns;
                st.timer_heap.insert((due, seq, id));
                let mut e = enqueue(Queue::Timers, u64::from(id), None);
                if let JsEvent::Enqueue { due_ns, repeat, .. } = &mut e {
                    *due_ns = Some(due);
                    *repeat = Some(true);
                }
                st.ev(e);
            }
        }
        self.process_ticks(ctx)
    }

    pub(super) fn node_loop(&self, ctx: &mut Context) -> Result<(), Stop> {
        self.process_ticks(ctx)?;
        let mut iteration = 0u64;
        loop {
            let alive = {
                let st = self.st.borrow();
                !st.immediates.is_empty()
                    || !st.io.is_empty()
                    || st.timers.values().any(|t| t.refed)
            };
            if !alive {
                // Node emits 'beforeExit' when the loop empties; what its
                // listeners queue keeps the loop going. Then 'exit', whose
                // listeners' microtasks still run, but nothing else.
                self.process_event(ctx, "beforeExit", &[])?;
                self.process_ticks(ctx)?;
                let alive = {
                    let st = self.st.borrow();
                    !st.immediates.is_empty()
                        || !st.io.is_empty()
                        || st.timers.values().any(|t| t.refed)
                };
                if alive {
                    continue;
                }
                self.process_event(ctx, "exit", &[])?;
                self.process_ticks(ctx)?;
                return Ok(());
            }
            iteration += 1;
            self.race_check(iteration);
            self.phase("timers", iteration);
            loop {
                let now = self.st.borrow().now_ns;
                match self.next_timer() {
                    Some(key) if key.0 <= now => self.run_node_timer(ctx, key)?,
                    _ => break,
                }
            }
            self.phase("pending", iteration);
            self.phase("poll", iteration);
            // The I/O completed since the last poll phase (the virtual file
            // system answers at once); what these callbacks request
            // completes in the next one.
            let done: Vec<_> = self.st.borrow_mut().io.drain(..).collect();
            for f in done {
                let label = format!("I/O callback: {}", fn_name(&f, ctx));
                self.call(ctx, label, &f, &JsValue::undefined(), &[])?;
                self.process_ticks(ctx)?;
            }
            // The poll phase waits for the earliest timer, referenced or
            // not (libuv's timeout counts every timer handle; Node's one
            // handle is due at its earliest list): an unref'd timer fires at
            // its own time while anything else keeps the loop alive.
            let waits = {
                let st = self.st.borrow();
                st.immediates.is_empty() && st.io.is_empty()
            };
            if waits {
                if let Some((due, _, _)) = self.next_timer() {
                    self.advance_to(due)?;
                }
            }
            self.phase("check", iteration);
            // Immediates queued while this batch runs wait for the next
            // iteration; one cleared by an earlier one in the batch is skipped.
            let batch: Vec<_> = {
                let mut st = self.st.borrow_mut();
                let b: Vec<_> = st.immediates.drain(..).collect();
                st.running_immediates = b.iter().map(|x| x.0).collect();
                st.cleared_immediates.clear();
                b
            };
            for (id, f, args) in batch {
                if self.st.borrow().cleared_immediates.contains(&id) {
                    continue;
                }
                self.st
                    .borrow_mut()
                    .ev(dequeue(Queue::Immediate, u64::from(id)));
                let label = format!("setImmediate callback: {}", fn_name(&f, ctx));
                self.call(ctx, label, &f, &JsValue::undefined(), &args)?;
                self.process_ticks(ctx)?;
            }
            self.st.borrow_mut().running_immediates.clear();
            self.phase("close", iteration);
        }
    }

    fn phase(&self, name: &str, iteration: u64) {
        self.st.borrow_mut().ev(JsEvent::Phase {
            phase: phase_kind(name),
            iteration,
        });
    }

    /// setTimeout(0|1) against setImmediate: in real Node the timer runs
    /// first iff at least 1 ms of real time passed before the loop iteration
    /// started. Virtual time says it did not; we say the other order exists.
    fn race_check(&self, iteration: u64) {
        let mut st = self.st.borrow_mut();
        if st.immediates.is_empty() {
            return;
        }
        let now = st.now_ns;
        let racing = st
            .timer_heap
            .iter()
            .any(|&(due, _, id)| due > now && due <= now + MS && st.timers.contains_key(&id));
        if racing {
            st.race_notes += 1;
            if st.race_notes == 1 {
                let note = format!(
                    "nondeterministic in real Node: at iteration {iteration} (t={} ms) a setTimeout \
                     due within 1 ms and setImmediate callbacks were both pending. Real Node runs the \
                     timer first if 1 ms of real time has already elapsed, otherwise the immediates \
                     first; this run (virtual time, no elapsed time) ran the immediates first.",
                    now as f64 / MS as f64
                );
                st.ev(JsEvent::Note { text: note.clone() });
                st.notes.push(note);
            }
        }
    }
}

/// The trace's name of a Node phase the loop enters.
fn phase_kind(name: &str) -> Phase {
    match name {
        "timers" => Phase::Timers,
        "pending" => Phase::Pending,
        "poll" => Phase::Poll,
        "check" => Phase::Check,
        _ => Phase::Close,
    }
}
