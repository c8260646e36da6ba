//! The job executor and the microtask queue.
//!
//! [`Host`] is boa's [`JobExecutor`]: every promise job the engine creates is
//! pushed onto our microtask queue (next to `queueMicrotask` callbacks) and
//! runs only when the loop performs a microtask checkpoint. The host hooks
//! name promise-reaction frames for the trace, carry the current
//! prioritized task along promise chains (for `scheduler.yield`) and
//! collect rejections that have no handler yet (reported by `uncaught.rs`
//! after the queue drains).

use std::rc::Rc;

use boa_engine::builtins::promise::{OperationType, Promise};
use boa_engine::context::HostHooks;
use boa_engine::job::{Job, JobCallback, JobExecutor};
use boa_engine::object::builtins::JsFunction;
use boa_engine::{Context, JsObject, JsResult, JsValue};

use turno_trace::{JsEvent, Queue};

use super::entries::Micro;
use super::state::{dequeue, enqueue};
use super::state::{fn_name, Host, Stop};
use super::support::{arg_fn, JsStackScope, Ret};

impl JobExecutor for Host {
    fn enqueue_job(self: Rc<Self>, job: Job, context: &mut Context) {
        let _js = JsStackScope::enter(&self, context);
        match job {
            Job::PromiseJob(j) => self.push_micro(Micro::Promise(j), "PromiseJob".into()),
            _ => {
                // Boa only creates promise jobs for the programs we host
                // (no Atomics.waitAsync, no module loading, no FinalizationRegistry
                // cleanup); anything else is counted and reported, never run.
                self.st.borrow_mut().dropped_jobs += 1;
            }
        }
    }

    fn run_jobs(self: Rc<Self>, _context: &mut Context) -> JsResult<()> {
        // The event loop (node.rs, html.rs) decides when jobs run; boa never gets
        // to drain the queue on its own.
        Ok(())
    }
}

/// Host hooks: name promise-reaction frames and track rejections.
pub(super) struct Hooks;

impl HostHooks for Hooks {
    /// A reaction keeps the prioritized task current when it was
    /// registered (`then`, `await`): Chromium carries a task's scheduling
    /// state along its promise chain, so a `scheduler.yield` after an
    /// `await` inherits from the task that awaited.
    fn make_job_callback(&self, callback: JsFunction, context: &mut Context) -> JobCallback {
        let sched = context
            .downcast_job_executor::<Host>()
            .map_or(0, |h| h.st.borrow().current_sched);
        JobCallback::new(callback, sched)
    }

    fn call_job_callback(
        &self,
        job: &JobCallback,
        this: &JsValue,
        args: &[JsValue],
        context: &mut Context,
    ) -> JsResult<JsValue> {
        let host = context.downcast_job_executor::<Host>();
        let sched = job
            .host_defined()
            .downcast_ref::<u64>()
            .copied()
            .unwrap_or(0);
        let outer = host
            .as_ref()
            .map(|h| std::mem::replace(&mut h.st.borrow_mut().current_sched, sched));
        let label = match &host {
            Some(h) if h.tracing() => {
                let name = fn_name(job.callback(), context);
                Some(format!("promise reaction: {name}"))
            }
            _ => None,
        };
        if let (Some(h), Some(l)) = (&host, &label) {
            h.push_frame(l.clone());
        }
        let r = job.callback().call(this, args, context);
        if let Some(h) = &host {
            h.sync_clock(context);
        }
        if let (Some(h), Some(_)) = (&host, &label) {
            h.pop_frame();
        }
        if let (Some(h), Some(o)) = (&host, outer) {
            h.st.borrow_mut().current_sched = o;
        }
        r
    }

    fn promise_rejection_tracker(
        &self,
        promise: &JsObject<Promise>,
        operation: OperationType,
        context: &mut Context,
    ) {
        let Some(host) = context.downcast_job_executor::<Host>() else {
            return;
        };
        let obj = promise.clone().upcast();
        {
            let mut st = host.st.borrow_mut();
            match operation {
                OperationType::Reject => st.pending_rejections.push(obj.clone()),
                OperationType::Handle => {
                    st.pending_rejections.retain(|p| !JsObject::equals(p, &obj));
                    let before = st.reported_rejections.len();
                    st.reported_rejections
                        .retain(|p| !JsObject::equals(p, &obj));
                    if st.reported_rejections.len() != before {
                        st.handled_late.push(obj.clone());
                    }
                }
            }
        }
        host.track_promise(&obj, "rejection-tracker");
    }
}

pub(super) fn n_queue_microtask(host: &Rc<Host>, args: &[JsValue], ctx: &mut Context) -> Ret {
    let Some(cb) = arg_fn(args, 0) else {
        return Ok(JsValue::undefined());
    };
    let label = format!("queueMicrotask: {}", fn_name(&cb, ctx));
    host.push_micro(Micro::Callback(cb, Vec::new()), label);
    Ok(JsValue::undefined())
}

impl Host {
    fn push_micro(&self, m: Micro, label: String) {
        let mut st = self.st.borrow_mut();
        st.seq += 1;
        let id = st.seq;
        st.microtasks.push_back((id, m));
        st.ev(enqueue(Queue::Microtask, id, Some(label)));
    }

    /// HTML "perform a microtask checkpoint" / V8's RunMicrotasks: run until
    /// the queue is empty, including jobs queued meanwhile.
    pub(super) fn run_microtasks(&self, ctx: &mut Context) -> Result<(), Stop> {
        loop {
            let next = self.st.borrow_mut().microtasks.pop_front();
            let Some((id, m)) = next else { break };
            self.st.borrow_mut().ev(dequeue(Queue::Microtask, id));
            match m {
                Micro::Promise(job) => {
                    self.step()?;
                    let r = job.call(ctx);
                    self.sync_clock(ctx);
                    self.check_exit()?;
                    self.sample_promises();
                    if let Err(e) = r {
                        self.uncaught(ctx, e)?;
                    }
                }
                Micro::Callback(f, args) => {
                    let label = format!("queueMicrotask: {}", fn_name(&f, ctx));
                    // Node catches what a queueMicrotask callback throws and
                    // reports it from the error object: its excerpt points
                    // where the error was made, not at the `throw`.
                    self.st.borrow_mut().caught_by_host = true;
                    let r = self.call(ctx, label, &f, &JsValue::undefined(), &args);
                    self.st.borrow_mut().caught_by_host = false;
                    r?;
                }
            }
        }
        Ok(())
    }

    pub(super) fn checkpoint(&self, ctx: &mut Context) -> Result<(), Stop> {
        self.st.borrow_mut().ev(JsEvent::MicrotaskCheckpoint);
        self.run_microtasks(ctx)?;
        self.report_rejections(ctx)
    }
}
