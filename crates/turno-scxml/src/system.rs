//! A set of SCXML sessions (a root and the children it invokes) on one
//! thread and virtual time: the SCXML event I/O processor.
//!
//! Each session has its own external queue. [`System::run_until`] runs one
//! macrostep at a time, taking sessions with queued events in the order they
//! became ready (a FIFO, like actors on a deterministic scheduler), and
//! advances the clock to the next delayed event only when no session has
//! work. Same documents, same external events, same run.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::datamodel::{DataModel, EvalError, Null};
use crate::event::{Event, EventKind};
use crate::interp::{Host, InvokeRequest, Session, Target};
use crate::model::{DataModelKind, Document};

/// A handle on one session of a [`System`].
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

/// Why [`System::run_until`] stopped early.
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

struct Slot {
    session: Option<Session>,
    queue: VecDeque<Event>,
    queued: bool,
    alive: bool,
    /// The parent slot and this session's invokeid there.
    parent: Option<(usize, String)>,
    children: HashMap<String, usize>,
}

struct Timer {
    from: usize,
    to: usize,
    sendid: Option<String>,
    event: Event,
}

/// Sessions, their queues and the clock.
pub struct System {
    slots: Vec<Slot>,
    by_id: HashMap<String, usize>,
    /// Delayed events by (deadline in microseconds, sequence number).
    timers: BTreeMap<(u64, u64), Timer>,
    seq: u64,
    now_us: u64,
    ready: VecDeque<usize>,
    to_start: Vec<usize>,
    logs: Vec<LogLine>,
    step_budget: usize,
}

impl Default for System {
    fn default() -> Self {
        System::new()
    }
}

impl std::fmt::Debug for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("System")
            .field("sessions", &self.slots.len())
            .field("now_us", &self.now_us)
            .finish_non_exhaustive()
    }
}

impl System {
    /// An empty system at time 0.
    pub fn new() -> Self {
        System {
            slots: Vec::new(),
            by_id: HashMap::new(),
            timers: BTreeMap::new(),
            seq: 0,
            now_us: 0,
            ready: VecDeque::new(),
            to_start: Vec::new(),
            logs: Vec::new(),
            step_budget: 10_000,
        }
    }

    /// Virtual time in milliseconds.
    pub fn now_ms(&self) -> f64 {
        self.now_us as f64 / 1000.0
    }

    /// Starts a root session of `doc` (its initial macrostep runs now).
    pub fn start(&mut self, doc: Arc<Document>) -> Result<SessionHandle, EvalError> {
        let dm = data_model_for(&doc)?;
        let slot = self.add_slot(doc, dm, None, Vec::new());
        self.to_start.push(slot);
        self.start_pending();
        Ok(SessionHandle(slot))
    }

    fn add_slot(
        &mut self,
        doc: Arc<Document>,
        dm: Box<dyn DataModel>,
        parent: Option<(usize, String)>,
        params: Vec<(String, Value)>,
    ) -> usize {
        let n = self.slots.len();
        let id = format!("session{}", n + 1);
        self.by_id.insert(id.clone(), n);
        self.slots.push(Slot {
            session: Some(Session::new(doc, dm, id, params)),
            queue: VecDeque::new(),
            queued: false,
            alive: true,
            parent,
            children: HashMap::new(),
        });
        n
    }

    fn start_pending(&mut self) {
        while !self.to_start.is_empty() {
            let batch = std::mem::take(&mut self.to_start);
            for k in batch {
                if !self.slots[k].alive {
                    continue;
                }
                if let Some(mut s) = self.slots[k].session.take() {
                    s.start(self);
                    let running = s.is_running();
                    self.slots[k].session = Some(s);
                    if !running {
                        self.retire(k);
                    }
                }
            }
        }
    }

    /// Queues an external event for a session (the outside world sending).
    /// An event for a session that has ended, or a handle from another
    /// system, is dropped; the return value says whether it was queued.
    pub fn send(&mut self, to: SessionHandle, event: Event) -> bool {
        if self.slots.get(to.0).is_some_and(|s| s.alive) {
            self.enqueue(to.0, event);
            true
        } else {
            false
        }
    }

    fn enqueue(&mut self, k: usize, event: Event) {
        let slot = &mut self.slots[k];
        if !slot.alive {
            return;
        }
        slot.queue.push_back(event);
        if !slot.queued {
            slot.queued = true;
            self.ready.push_back(k);
        }
    }

    /// Runs one macrostep of the first ready session; false if none is ready.
    fn step(&mut self) -> bool {
        let Some(k) = self.ready.pop_front() else {
            return false;
        };
        self.slots[k].queued = false;
        let Some(event) = self.slots[k].queue.pop_front() else {
            return true;
        };
        if let Some(mut s) = self.slots[k].session.take() {
            if self.slots[k].alive {
                s.handle_external(event, self);
            }
            let running = s.is_running();
            self.slots[k].session = Some(s);
            if !running {
                self.retire(k);
            }
        }
        if !self.slots[k].queue.is_empty() && self.slots[k].alive && !self.slots[k].queued {
            self.slots[k].queued = true;
            self.ready.push_back(k);
        }
        self.start_pending();
        true
    }

    /// A session halted: it takes no more events and its timers are dropped.
    fn retire(&mut self, k: usize) {
        self.slots[k].alive = false;
        self.slots[k].queue.clear();
        self.timers.retain(|_, t| t.from != k);
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
            let Some((&(deadline, seq), _)) = self.timers.iter().next() else {
                break;
            };
            if deadline > limit {
                break;
            }
            let timer = self.timers.remove(&(deadline, seq)).expect("just seen");
            self.now_us = self.now_us.max(deadline);
            steps = 0;
            self.deliver(timer.to, timer.event);
        }
        self.now_us = self.now_us.max(limit);
        Ok(())
    }

    fn deliver(&mut self, to: usize, event: Event) {
        self.enqueue(to, event);
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
        self.slots.get(h.0).and_then(|s| s.session.as_ref())
    }

    /// Is the session still running?
    pub fn is_running(&self, h: SessionHandle) -> bool {
        self.slots.get(h.0).is_some_and(|s| s.alive)
    }

    /// Every `<log>` so far, in order.
    pub fn logs(&self) -> &[LogLine] {
        &self.logs
    }

    fn slot_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }
}

impl Host for System {
    fn send(
        &mut self,
        from: &str,
        target: Target,
        mut event: Event,
        delay_ms: f64,
    ) -> Result<(), String> {
        let me = self.slot_of(from).ok_or("unknown sending session")?;
        if !self.slots[me].alive {
            // A cancelled child's last words (its onexit) go nowhere (6.4).
            return Ok(());
        }
        let to = match &target {
            Target::SelfExternal => me,
            Target::Parent => {
                let (p, invokeid) = self.slots[me]
                    .parent
                    .clone()
                    .ok_or("#_parent: this session was not invoked")?;
                event.invokeid = Some(invokeid);
                p
            }
            Target::Invoked(id) => *self.slots[me]
                .children
                .get(id)
                .ok_or_else(|| format!("#_{id}: no such invocation"))?,
            Target::Session(id) => self
                .slot_of(id)
                .ok_or_else(|| format!("#_scxml_{id}: no such session"))?,
        };
        if !self.slots[to].alive {
            return Err(format!("{target:?}: the session has ended"));
        }
        if delay_ms <= 0.0 {
            self.enqueue(to, event);
        } else {
            let deadline = self.now_us + (delay_ms * 1000.0).round() as u64;
            self.seq += 1;
            self.timers.insert(
                (deadline, self.seq),
                Timer {
                    from: me,
                    to,
                    sendid: event.sendid.clone(),
                    event,
                },
            );
        }
        Ok(())
    }

    fn cancel(&mut self, from: &str, sendid: &str) {
        if let Some(me) = self.slot_of(from) {
            self.timers
                .retain(|_, t| !(t.from == me && t.sendid.as_deref() == Some(sendid)));
        }
    }

    fn invoke(&mut self, parent: &str, request: InvokeRequest) -> Result<(), String> {
        let p = self.slot_of(parent).ok_or("unknown invoking session")?;
        let dm = data_model_for(&request.document).map_err(|e| e.0)?;
        let child = self.add_slot(
            request.document,
            dm,
            Some((p, request.invokeid.clone())),
            request.params,
        );
        self.slots[p].children.insert(request.invokeid, child);
        self.to_start.push(child);
        Ok(())
    }

    fn cancel_invoke(&mut self, parent: &str, invokeid: &str) {
        let Some(p) = self.slot_of(parent) else {
            return;
        };
        let Some(child) = self.slots[p].children.remove(invokeid) else {
            return;
        };
        if !self.slots[child].alive {
            return;
        }
        self.retire(child);
        if let Some(mut s) = self.slots[child].session.take() {
            if s.started {
                s.cancel(self);
            }
            self.slots[child].session = Some(s);
        }
    }

    fn forward(&mut self, parent: &str, invokeid: &str, event: &Event) {
        let Some(p) = self.slot_of(parent) else {
            return;
        };
        if let Some(&child) = self.slots[p].children.get(invokeid) {
            self.enqueue(child, event.clone());
        }
    }

    fn done(&mut self, session: &str, data: Option<Value>) {
        let Some(k) = self.slot_of(session) else {
            return;
        };
        if let Some((p, invokeid)) = self.slots[k].parent.clone() {
            let event = Event {
                name: format!("done.invoke.{invokeid}"),
                kind: EventKind::Platform,
                invokeid: Some(invokeid),
                ..Event::platform("", data)
            };
            self.enqueue(p, event);
        }
    }

    fn log(&mut self, session: &str, label: Option<&str>, text: &str) {
        self.logs.push(LogLine {
            session: session.to_owned(),
            label: label.map(str::to_owned),
            text: text.to_owned(),
        });
    }
}
