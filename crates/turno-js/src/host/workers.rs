//! Dedicated workers (html model): more event loops, each on its own
//! thread of virtual time, and the messages between them.
//!
//! `new Worker(url)` creates a loop with its own boa context, prelude
//! (a `DedicatedWorkerGlobalScope`: no `window`, no `document`), queues and
//! clock, which starts at the parent's time of creation and then moves only
//! with the worker's own work. The loops are run as a discrete-event
//! simulation ([`run_loops`]): the loop whose next step starts earliest goes
//! first (the page before workers on a tie), and runs one step (a task, its
//! checkpoint, a render step). A message is stamped with the sender's time
//! when it is posted; it becomes a task at the receiver once the receiver's
//! clock reaches that time, in time order among the receiver's own tasks,
//! however far ahead in its own time the sender has run meanwhile. Since
//! loops share nothing but messages, every loop sees what it would see if
//! they ran truly in parallel, and runs stay deterministic.
//!
//! Data crosses as the prelude's structured serialization (a string), so
//! no object of one realm reaches another: the receiver deserializes into
//! its own realm, as the HTML Standard's StructuredSerialize /
//! StructuredDeserialize do.
//!
//! What a real browser does that this does not: it fetches the worker's
//! script and starts a thread, which takes a machine-dependent few
//! milliseconds; here the worker's script runs [`WORKER_START_NS`] after
//! `new Worker` on the parent's clock, so that messages posted right after
//! creation are all waiting when the script has run, as in a browser. A
//! message takes real time to cross in a browser; here none. `terminate()` in Chromium interrupts a task already
//! running; here the worker's last step, already simulated, runs to its
//! end, but nothing it posts reaches the page afterwards (as in Chromium,
//! whose worker object drops messages once asked to terminate).

use std::path::PathBuf;
use std::rc::Rc;

use boa_engine::{Context, JsString, JsValue};
use turno_trace::JsEvent;

use super::shared::{Arrival, Post, Shared, Spawn};
use super::state::{Host, Stop};
use super::support::Ret;

/// How long after `new Worker(url)` the worker's script runs: 1 ms of
/// virtual time (the worker's clock starts there; its `performance.now()`
/// counts from there).
pub(super) const WORKER_START_NS: u64 = 1_000_000;

/// `h.workerCreate(url, name)`: the new worker's id (its loop id), or a
/// string saying why the script cannot be loaded (the prelude then fires
/// `error` at the `Worker`, as a browser does when the fetch fails).
pub(super) fn n_worker_create(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let url = args
        .first()
        .cloned()
        .unwrap_or_default()
        .to_string(ctx)?
        .to_std_string_escaped();
    let name = args
        .get(1)
        .cloned()
        .unwrap_or_default()
        .to_string(ctx)?
        .to_std_string_escaped();
    let mut st = host.st.borrow_mut();
    let loaded = load_script(st.shared.base_dir.as_ref(), &url);
    let (file, source) = match loaded {
        Ok(v) => v,
        Err(why) => {
            st.ev(JsEvent::WorkerError {
                url: url.clone(),
                message: why.clone(),
            });
            return Ok(JsValue::from(JsString::from(why.as_str())));
        }
    };
    let id = st.shared.next_loop.get();
    st.shared.next_loop.set(id + 1);
    let t_ns = st.now_ns + WORKER_START_NS;
    let parent = st.loop_id;
    st.ev(JsEvent::WorkerStart {
        worker: id,
        url: url.clone(),
        file: file.clone(),
        name: name.clone(),
    });
    st.shared.spawns.borrow_mut().push(Spawn {
        loop_id: id,
        parent,
        file,
        source,
        name,
        t_ns,
    });
    Ok(JsValue::from(id))
}

/// `h.workerPost(to, worker, data)`: posts serialized `data` to loop `to`.
pub(super) fn n_worker_post(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let to = args.first().cloned().unwrap_or_default().to_u32(ctx)?;
    let worker = args.get(1).cloned().unwrap_or_default().to_u32(ctx)?;
    let data = args.get(2).cloned().unwrap_or_default().to_string(ctx)?;
    let mut st = host.st.borrow_mut();
    let message = st.shared.next_message.get() + 1;
    st.shared.next_message.set(message);
    st.ev(JsEvent::MessagePost {
        to_loop: to,
        message,
        worker,
    });
    let arrival = Arrival {
        t_ns: st.now_ns,
        from: st.loop_id,
        message,
        worker,
        data,
    };
    st.shared.posts.borrow_mut().push(Post { to, arrival });
    Ok(JsValue::undefined())
}

/// `h.workerEnd(id, reason)`: `worker.terminate()` on the page, or the
/// worker's own `close()`; the loop takes no step after the current one.
pub(super) fn n_worker_end(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let id = args.first().cloned().unwrap_or_default().to_u32(ctx)?;
    let reason = args
        .get(1)
        .cloned()
        .unwrap_or_default()
        .to_string(ctx)?
        .to_std_string_escaped();
    let mut st = host.st.borrow_mut();
    st.ev(JsEvent::WorkerEnd {
        worker: id,
        reason: reason.to_string(),
    });
    st.shared.ended.borrow_mut().push(id);
    Ok(JsValue::undefined())
}

/// Resolves a worker URL against the program's directory and reads it.
/// Only files there (or below) load: the explorer has no network.
fn load_script(base: Option<&PathBuf>, url: &str) -> Result<(String, String), String> {
    let Some(base) = base else {
        return Err(format!(
            "cannot load worker script '{url}': no base directory to resolve it against"
        ));
    };
    let rel = url
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .trim_start_matches("./");
    if rel.is_empty() || url.contains("://") || url.starts_with('/') || url.contains(':') {
        return Err(format!(
            "cannot load worker script '{url}': only a path relative to the program's directory loads"
        ));
    }
    if rel.split('/').any(|p| p == "..") {
        return Err(format!(
            "cannot load worker script '{url}': it leaves the program's directory"
        ));
    }
    let path = base.join(rel);
    std::fs::read_to_string(&path)
        .map(|src| (path.to_string_lossy().into_owned(), src))
        .map_err(|e| format!("cannot load worker script '{url}': {e}"))
}

/// One event loop of the run and its engine.
pub(super) struct Loop {
    pub(super) host: Rc<Host>,
    pub(super) ctx: Context,
    pub(super) ended: bool,
}

impl Host {
    /// The time this loop's next step starts, if it has one: now when a
    /// task, a due timer or message, or a due frame waits; else the
    /// earliest future timer, delayed prioritized task, frame, input event
    /// or message. A wake-up for a delayed task (a timer or a prioritized
    /// task) comes [`WAKE_UP_SLACK_NS`] late at most: it starts when the
    /// last delayed task due within that window is due, unless another
    /// event comes first, so the tasks one task posted with the same delay
    /// reach the run queue together, as in Chromium.
    fn next_step_at(&self) -> Option<u64> {
        let st = self.st.borrow();
        let now = st.now_ns;
        let timers = st.timer_heap.iter().map(|k| k.0);
        let delayed = st.delayed_tasks.keys().map(|k| k.0);
        let first_delayed = timers
            .clone()
            .next()
            .into_iter()
            .chain(delayed.clone().next())
            .min();
        let frame = st.raf_due.filter(|_| !st.raf.is_empty());
        let input = st.input.last().map(|p| p.at_ns);
        let arrival = st.arrivals.front().map(|a| a.t_ns);
        if !st.tasks.is_empty() {
            return Some(now);
        }
        let other = [frame, input, arrival].into_iter().flatten().min();
        let Some(d) = first_delayed.filter(|d| other.is_none_or(|o| *d <= o)) else {
            return other.map(|t| t.max(now));
        };
        let until = d
            .saturating_add(WAKE_UP_SLACK_NS)
            .min(other.unwrap_or(u64::MAX));
        let wake = timers
            .take_while(|t| *t <= until)
            .chain(delayed.take_while(|t| *t <= until))
            .max()
            .unwrap_or(d);
        Some(wake.max(now))
    }
}

/// How late a wake-up for a delayed task may come (50 µs, Linux's default
/// timer slack): a task posts its timers and delayed tasks a few
/// microseconds of virtual time apart, and Chromium, whose wake-up comes
/// later than that, finds them all due at once and runs them by priority
/// (`h33_post_task_delay`).
const WAKE_UP_SLACK_NS: u64 = 50_000;

/// The html model's loops, run to the end: the main loop's script has run;
/// workers are started as they are created.
pub(super) fn run_loops(
    main: Rc<Host>,
    main_ctx: &mut Context,
    mut spawn: impl FnMut(Spawn) -> Result<Loop, Stop>,
) -> Result<Vec<Loop>, (Vec<Loop>, Stop)> {
    let mut workers: Vec<Loop> = Vec::new();
    let shared = main.st.borrow().shared.clone();
    let result = (|| -> Result<(), Stop> {
        main.html_start(main_ctx)?;
        loop {
            adopt(&shared, &main, &mut workers, &mut spawn)?;
            // The loop whose next step starts first; the page wins ties,
            // then workers in creation order.
            let mut best: Option<(u64, usize)> = None;
            let hosts = std::iter::once(&main).chain(workers.iter().map(|w| &w.host));
            for (i, h) in hosts.enumerate() {
                if i > 0 && workers[i - 1].ended {
                    continue;
                }
                if let Some(t) = h.next_step_at() {
                    if best.is_none_or(|(b, _)| t < b) {
                        best = Some((t, i));
                    }
                }
            }
            let Some((t, i)) = best else { return Ok(()) };
            if i == 0 {
                main.advance_to(t)?;
                main.html_step(main_ctx)?;
            } else {
                let w = &mut workers[i - 1];
                w.host.advance_to(t)?;
                w.host.html_step(&mut w.ctx)?;
            }
        }
    })();
    match result {
        Ok(()) => Ok(workers),
        Err(stop) => Err((workers, stop)),
    }
}

/// After a step: starts the workers it created (each runs its script as
/// its first step), ends those terminated or closed, and hands messages to
/// their receivers (a message for an ended loop is dropped).
fn adopt(
    shared: &Shared,
    main: &Rc<Host>,
    workers: &mut Vec<Loop>,
    spawn: &mut impl FnMut(Spawn) -> Result<Loop, Stop>,
) -> Result<(), Stop> {
    loop {
        let spawns = std::mem::take(&mut *shared.spawns.borrow_mut());
        let ended = std::mem::take(&mut *shared.ended.borrow_mut());
        let posts = std::mem::take(&mut *shared.posts.borrow_mut());
        if spawns.is_empty() && ended.is_empty() && posts.is_empty() {
            return Ok(());
        }
        for s in spawns {
            workers.push(spawn(s)?);
        }
        for id in ended {
            if let Some(w) = workers.get_mut(id as usize - 1) {
                w.ended = true;
                w.host.st.borrow_mut().arrivals.clear();
            }
        }
        for p in posts {
            let host = if p.to == 0 {
                main
            } else {
                match workers.get(p.to as usize - 1) {
                    Some(w) if !w.ended => &w.host,
                    _ => continue,
                }
            };
            let mut st = host.st.borrow_mut();
            let pos = st
                .arrivals
                .iter()
                .position(|a| a.t_ns > p.arrival.t_ns)
                .unwrap_or(st.arrivals.len());
            st.arrivals.insert(pos, p.arrival);
        }
    }
}
