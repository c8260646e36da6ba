//! The SCXML processor: a root session and the sessions it invokes, their
//! event I/O on one thread and virtual time.
//!
//! **Why a runtime of its own, and not turno actors.** A session's
//! ECMAScript data model is a boa `Context`, which cannot move between
//! threads (`!Send`), while a turno actor must be `Send` so that any
//! scheduler may run it. So the sessions of one document tree run here,
//! on the caller's thread, with the same discipline as actors on a
//! deterministic scheduler: one macrostep is one turn, each session's
//! external queue is its mailbox, and the order is a FIFO of ready
//! sessions. A document tree with the null data model holds no such
//! context: `ScxmlActor` (feature `actor`) runs it as a turno actor on any
//! scheduler, in a processor made by [`Processor::null_only`]. An
//! ECMAScript document runs here, on one thread (`script::run` is the whole
//! loop), or as turno-chart's `ChartActor` where its logic needs no script.
//!
//! Each session has its own external queue, in the [`PostOffice`] its
//! executable content reaches through its context while a macrostep runs
//! (a `<send>` learns at once whether its target exists, for
//! `error.communication`). [`Processor::run_until`] runs one macrostep at a
//! time, taking sessions with queued events in the order they became ready
//! (a FIFO, like actors on a deterministic scheduler), and advances the
//! clock to the next delayed event only when no session has work. Same
//! documents, same external events, same run.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;

use crate::compile::{compile, Compiled};
use crate::datamodel::{DataModel, EvalError, Null};
use crate::event::Event;
use crate::model::{DataModelKind, Document};
use crate::session::Session;

mod post_office;

pub(crate) use post_office::{PostOffice, Target};

/// A handle on one session of a [`Processor`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SessionHandle(usize);

/// One `<log>` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// The session that logged it.
    pub session: String,
    /// The `label` attribute.
    pub label: Option<String>,
    /// The value of `expr`.
    pub text: String,
}

/// Why [`Processor::run_until`] stopped early.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// More macrosteps than the budget without reaching the time limit
    /// (a session keeps sending itself events at zero delay).
    #[error("more than {0} macrosteps at one instant")]
    StepLimit(usize),
}

/// Creates the data model for a document.
pub fn data_model_for(doc: &Document) -> Result<Box<dyn DataModel>, EvalError> {
    match doc.datamodel {
        DataModelKind::Null => Ok(Box::new(Null::new())),
        #[cfg(feature = "ecmascript")]
        DataModelKind::Ecmascript => Ok(Box::new(crate::datamodel::EcmaScript::new()?)),
        #[cfg(not(feature = "ecmascript"))]
        DataModelKind::Ecmascript => Err(EvalError::new(
            "the ecmascript data model needs the `ecmascript` feature",
        )),
    }
}

/// The SCXML processor: sessions, their queues and the clock, on the
/// caller's thread (a session's ECMAScript data model is a boa `Context`,
/// which cannot move between threads; one macrostep is one turn, in the
/// same discipline as actors). Null-data-model documents also run as turno
/// actors: `ScxmlActor`, feature `actor`.
pub struct Processor {
    post: Rc<RefCell<PostOffice>>,
    sessions: Vec<Option<Session>>,
    /// Compiled documents by address (each invoked child document once).
    compiled: HashMap<usize, Compiled>,
    step_budget: usize,
    /// Sessions may only have the null data model (see
    /// [`Processor::null_only`]).
    null_only: bool,
}

impl Default for Processor {
    fn default() -> Self {
        Processor::new()
    }
}

impl std::fmt::Debug for Processor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("sessions", &self.sessions.len())
            .field("now_us", &self.post.borrow().now_us)
            .finish_non_exhaustive()
    }
}

impl Processor {
    /// An empty system at time 0.
    pub fn new() -> Self {
        Processor {
            post: Rc::new(RefCell::new(PostOffice {
                boxes: Vec::new(),
                by_id: HashMap::new(),
                timers: BTreeMap::new(),
                seq: 0,
                now_us: 0,
                ready: VecDeque::new(),
                to_start: Vec::new(),
                to_cancel: Vec::new(),
                logs: Vec::new(),
            })),
            sessions: Vec::new(),
            compiled: HashMap::new(),
            step_budget: 10_000,
            null_only: false,
        }
    }

    /// An empty processor whose sessions may only have the null data model:
    /// a root document with another is refused by [`Processor::start`], and
    /// an invoked child with another cannot run (it ends at once, as a child
    /// whose data model fails to start). Such a processor holds no
    /// ECMAScript context, which is what lets `ScxmlActor` (feature
    /// `actor`) move it between threads.
    pub fn null_only() -> Self {
        Processor {
            null_only: true,
            ..Processor::new()
        }
    }

    /// The data model for a session of `doc`, under this processor's rule.
    fn data_model(&self, doc: &Document) -> Result<Box<dyn DataModel>, EvalError> {
        if self.null_only && doc.datamodel != DataModelKind::Null {
            return Err(EvalError::new(
                "this processor runs the null data model only (an ECMAScript context cannot \
                 move between threads)",
            ));
        }
        data_model_for(doc)
    }

    /// Virtual time in milliseconds.
    pub fn now_ms(&self) -> f64 {
        self.post.borrow().now_us as f64 / 1000.0
    }

    /// Starts a root session of `doc` (its initial macrostep runs now).
    pub fn start(&mut self, doc: Arc<Document>) -> Result<SessionHandle, EvalError> {
        let dm = self.data_model(&doc)?;
        let slot = self.post.borrow_mut().add(None);
        self.create(slot, doc, dm, Vec::new())?;
        self.start_session(slot);
        self.run_pending();
        Ok(SessionHandle(slot))
    }

    fn create(
        &mut self,
        slot: usize,
        doc: Arc<Document>,
        dm: Box<dyn DataModel>,
        params: Vec<(String, Value)>,
    ) -> Result<(), EvalError> {
        let key = Arc::as_ptr(&doc) as usize;
        if let std::collections::hash_map::Entry::Vacant(e) = self.compiled.entry(key) {
            e.insert(compile(doc.clone())?);
        }
        let id = self.post.borrow().boxes[slot].id.clone();
        let session = Session::new(
            &self.compiled[&key],
            dm,
            id,
            slot,
            params,
            self.post.clone(),
        );
        if self.sessions.len() <= slot {
            self.sessions.resize_with(slot + 1, || None);
        }
        self.sessions[slot] = Some(session);
        Ok(())
    }

    fn start_session(&mut self, k: usize) {
        if let Some(s) = self.sessions[k].as_mut() {
            s.start();
            if !s.is_running() {
                self.post.borrow_mut().retire(k);
            }
        }
    }

    /// Starts the children invoked and stops the ones cancelled in the
    /// macrosteps that just ran, until neither is left.
    fn run_pending(&mut self) {
        loop {
            let (starts, cancels) = {
                let mut p = self.post.borrow_mut();
                (
                    std::mem::take(&mut p.to_start),
                    std::mem::take(&mut p.to_cancel),
                )
            };
            if starts.is_empty() && cancels.is_empty() {
                return;
            }
            for k in cancels {
                if let Some(s) = self.sessions.get_mut(k).and_then(Option::as_mut) {
                    s.cancel();
                }
            }
            for st in starts {
                if !self.post.borrow().boxes[st.slot].alive {
                    continue;
                }
                let made = self
                    .data_model(&st.document)
                    .and_then(|dm| self.create(st.slot, st.document, dm, st.params));
                match made {
                    Ok(()) => self.start_session(st.slot),
                    Err(e) => {
                        // The child cannot run: it ends at once (its parent
                        // gets no done.invoke).
                        self.post.borrow_mut().retire(st.slot);
                        let _ = e;
                    }
                }
            }
        }
    }

    /// Queues an external event for a session (the outside world sending).
    /// An event for a session that has ended, or a handle from another
    /// system, is dropped; the return value says whether it was queued.
    pub fn send(&mut self, to: SessionHandle, event: Event) -> bool {
        let mut p = self.post.borrow_mut();
        if p.boxes.get(to.0).is_some_and(|s| s.alive) {
            p.enqueue(to.0, event);
            true
        } else {
            false
        }
    }

    /// Runs one macrostep of the first ready session; false if none is ready.
    fn step(&mut self) -> bool {
        let (k, event) = {
            let mut p = self.post.borrow_mut();
            let Some(k) = p.ready.pop_front() else {
                return false;
            };
            p.boxes[k].queued = false;
            (k, p.boxes[k].queue.pop_front())
        };
        let Some(event) = event else {
            return true;
        };
        let alive = self.post.borrow().boxes[k].alive;
        if let Some(s) = self.sessions.get_mut(k).and_then(Option::as_mut) {
            if alive {
                s.handle_external(event);
            }
            if !s.is_running() {
                self.post.borrow_mut().retire(k);
            }
        }
        {
            let mut p = self.post.borrow_mut();
            let b = &p.boxes[k];
            if !b.queue.is_empty() && b.alive && !b.queued {
                p.boxes[k].queued = true;
                p.ready.push_back(k);
            }
        }
        self.run_pending();
        true
    }

    /// Runs every macrostep due up to virtual time `t_ms`, then sets the
    /// clock to `t_ms`.
    pub fn run_until(&mut self, t_ms: f64) -> Result<(), RunError> {
        let limit = (t_ms * 1000.0).round().max(0.0) as u64;
        let mut steps = 0;
        loop {
            if self.step() {
                steps += 1;
                if steps > self.step_budget {
                    return Err(RunError::StepLimit(self.step_budget));
                }
                continue;
            }
            let mut p = self.post.borrow_mut();
            let Some((&(deadline, seq), _)) = p.timers.iter().next() else {
                break;
            };
            if deadline > limit {
                break;
            }
            let timer = p.timers.remove(&(deadline, seq)).expect("just seen");
            p.now_us = p.now_us.max(deadline);
            steps = 0;
            p.enqueue(timer.to, timer.event);
        }
        let mut p = self.post.borrow_mut();
        p.now_us = p.now_us.max(limit);
        Ok(())
    }

    /// The active atomic states of a session (its last configuration, once
    /// halted).
    pub fn atomic_states(&self, h: SessionHandle) -> Vec<String> {
        self.session(h)
            .map(Session::atomic_state_ids)
            .unwrap_or_default()
    }

    /// The session behind a handle.
    pub fn session(&self, h: SessionHandle) -> Option<&Session> {
        self.sessions.get(h.0).and_then(Option::as_ref)
    }

    /// Is the session still running?
    pub fn is_running(&self, h: SessionHandle) -> bool {
        self.post.borrow().boxes.get(h.0).is_some_and(|s| s.alive)
    }

    /// The delayed events not yet due, earliest first: the milliseconds
    /// each has left (rounded up) and its event's name.
    pub fn pending(&self) -> Vec<(u64, String)> {
        let p = self.post.borrow();
        p.timers
            .iter()
            .map(|(&(deadline, _), t)| {
                (
                    deadline.saturating_sub(p.now_us).div_ceil(1000),
                    t.event.name.clone(),
                )
            })
            .collect()
    }

    /// Every `<log>` so far, in order.
    pub fn logs(&self) -> Vec<LogLine> {
        self.post.borrow().logs.clone()
    }
}
