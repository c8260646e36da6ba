//! One SCXML session: the W3C algorithm (Appendix D) over a [`Document`]
//! and a [`DataModel`], with everything outside the session behind [`Host`].
//!
//! A session never blocks. [`Session::start`] runs the initial macrostep and
//! [`Session::handle_external`] one macrostep for one external event: the
//! upper half of the spec's `mainEventLoop`, with the blocking dequeue left to
//! whoever owns the external queue (the [`crate::system::System`]). That is a
//! turn: one message, run to completion.
//!
//! `algorithm.rs` holds the spec's procedures under the spec's names;
//! `content.rs` the executable content, `<send>` and `<invoke>`.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use crate::datamodel::{DataModel, SystemVars};
use crate::event::{Event, SCXML_IO_PROCESSOR};
use crate::model::{Binding, Document, StateId, ROOT};

mod algorithm;
mod content;

/// Where a `<send>` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// No target: this session's external queue.
    SelfExternal,
    /// `#_parent`.
    Parent,
    /// `#_<invokeid>`: a child this session invoked.
    Invoked(String),
    /// `#_scxml_<sessionid>`.
    Session(String),
}

/// A child to start (`<invoke>` after its arguments were evaluated).
#[derive(Debug, Clone)]
pub struct InvokeRequest {
    /// The invocation's id.
    pub invokeid: String,
    /// The document to run.
    pub document: Arc<Document>,
    /// `<param>` and `namelist` values, for the child's top-level data.
    pub params: Vec<(String, Value)>,
}

/// What a session needs from the world around it. Every call happens in
/// the middle of a macrostep, so whatever it does to other sessions must be
/// queued, not run.
pub trait Host {
    /// Delivers `event` to `target` after `delay_ms` (0: at once). An error
    /// means the target cannot be reached; the session raises
    /// `error.communication`.
    fn send(
        &mut self,
        from: &str,
        target: Target,
        event: Event,
        delay_ms: f64,
    ) -> Result<(), String>;
    /// Cancels a delayed event this session sent, if not yet delivered.
    fn cancel(&mut self, from: &str, sendid: &str);
    /// Starts a child session for `request` (after the current macrostep).
    fn invoke(&mut self, parent: &str, request: InvokeRequest) -> Result<(), String>;
    /// Stops an invoked child; events it sends afterwards are not delivered.
    fn cancel_invoke(&mut self, parent: &str, invokeid: &str);
    /// Forwards an external event to an invoked child (`autoforward`).
    fn forward(&mut self, parent: &str, invokeid: &str, event: &Event);
    /// The session reached a top-level final state (`done.invoke` for a
    /// parent, with the final state's `<donedata>`).
    fn done(&mut self, session: &str, data: Option<Value>);
    /// `<log>`.
    fn log(&mut self, session: &str, label: Option<&str>, text: &str);
}

/// An invocation started by this session and not yet cancelled.
#[derive(Debug, Clone)]
pub(crate) struct ActiveInvoke {
    pub invokeid: String,
    pub state: StateId,
    pub index: usize,
}

/// One running SCXML session.
pub struct Session {
    pub(crate) doc: Arc<Document>,
    pub(crate) dm: Box<dyn DataModel>,
    pub(crate) sessionid: String,
    pub(crate) configuration: BTreeSet<StateId>,
    pub(crate) states_to_invoke: BTreeSet<StateId>,
    pub(crate) history_value: HashMap<StateId, Vec<StateId>>,
    pub(crate) internal_queue: VecDeque<Event>,
    pub(crate) running: bool,
    /// States whose data is still to be initialized (late binding).
    pub(crate) first_entry: Vec<bool>,
    pub(crate) invocations: Vec<ActiveInvoke>,
    /// Values passed by the invoking session for top-level data.
    pub(crate) params: HashMap<String, Value>,
    pub(crate) counter: u64,
    /// The configuration when the session halted (the spec's exit empties it).
    pub(crate) final_configuration: Option<Vec<StateId>>,
    pub(crate) started: bool,
    /// Why the session stopped on its own, other than by reaching a final
    /// state (a runaway macrostep).
    pub(crate) failure: Option<String>,
}

/// Microsteps one macrostep may take before the session is stopped: a
/// cycle of eventless transitions never ends otherwise.
pub const MAX_MICROSTEPS: usize = 10_000;

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("sessionid", &self.sessionid)
            .field("configuration", &self.configuration)
            .field("running", &self.running)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session of `doc` on `dm`, not yet started. `params` are the values
    /// an invoking session passes for top-level data.
    pub fn new(
        doc: Arc<Document>,
        dm: Box<dyn DataModel>,
        sessionid: impl Into<String>,
        params: Vec<(String, Value)>,
    ) -> Self {
        let n = doc.states.len();
        Session {
            doc,
            dm,
            sessionid: sessionid.into(),
            configuration: BTreeSet::new(),
            states_to_invoke: BTreeSet::new(),
            history_value: HashMap::new(),
            internal_queue: VecDeque::new(),
            running: false,
            first_entry: vec![true; n],
            invocations: Vec::new(),
            params: params.into_iter().collect(),
            counter: 0,
            final_configuration: None,
            started: false,
            failure: None,
        }
    }

    /// The session id (`_sessionid`).
    pub fn id(&self) -> &str {
        &self.sessionid
    }

    /// The document.
    pub fn document(&self) -> &Arc<Document> {
        &self.doc
    }

    /// Is the session still running (not halted, not cancelled)?
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The active states in document order; after the session halted, the
    /// configuration it halted in.
    pub fn configuration(&self) -> Vec<StateId> {
        match &self.final_configuration {
            Some(c) => c.clone(),
            None => self.configuration.iter().copied().collect(),
        }
    }

    /// The ids of the active atomic states, in document order.
    pub fn atomic_state_ids(&self) -> Vec<String> {
        self.configuration()
            .into_iter()
            .filter(|&s| self.doc.is_atomic(s))
            .map(|s| self.doc.states[s].id.clone())
            .collect()
    }

    /// The spec's `interpret` up to the first wait: data model, global
    /// script, initial states, and the first macrostep.
    pub fn start(&mut self, host: &mut dyn Host) {
        if self.started {
            return;
        }
        self.started = true;
        let vars = SystemVars {
            sessionid: self.sessionid.clone(),
            name: self
                .doc
                .name
                .clone()
                .unwrap_or_else(|| self.sessionid.clone()),
            ioprocessors: vec![(
                SCXML_IO_PROCESSOR.to_owned(),
                format!("#_scxml_{}", self.sessionid),
            )],
        };
        if let Err(e) = self.dm.bind_system(&vars) {
            self.raise_error_execution(&e.0);
        }
        let doc = self.doc.clone();
        match doc.binding {
            Binding::Early => {
                // Every variable of the document, in document order.
                for s in 0..doc.states.len() {
                    self.initialize_data(s);
                }
            }
            Binding::Late => {
                for st in &doc.states {
                    for d in &st.data {
                        if let Err(e) = self.dm.declare(&d.id) {
                            self.raise_error_execution(&e.0);
                        }
                    }
                }
                self.initialize_data(ROOT);
            }
        }
        self.running = true;
        if let Some(script) = &doc.script {
            if let Err(e) = self.dm.run_script(&script.source) {
                self.raise_error_execution(&e.0);
            }
        }
        if let Some(t) = doc.states[ROOT].initial {
            self.enter_states(&[t], host);
        }
        self.finish_macrostep(host);
    }

    /// One macrostep for one external event (the lower half of the spec's
    /// `mainEventLoop`, after the dequeue).
    pub fn handle_external(&mut self, event: Event, host: &mut dyn Host) {
        if !self.running {
            return;
        }
        if let Err(e) = self.dm.set_event(&event) {
            self.raise_error_execution(&e.0);
        }
        // finalize for events from an invocation, autoforward for all.
        for inv in self.invocations.clone() {
            let def = &self.doc.clone().states[inv.state].invokes[inv.index];
            if event.invokeid.as_deref() == Some(inv.invokeid.as_str()) {
                self.execute_block(&def.finalize, host);
            }
            if def.autoforward {
                host.forward(&self.sessionid, &inv.invokeid, &event);
            }
        }
        let enabled = self.select_transitions(&event);
        if !enabled.is_empty() {
            self.microstep(&enabled, host);
        }
        self.finish_macrostep(host);
    }

    /// Stops a session from outside (the parent cancelled the invocation):
    /// onexit handlers run, no `done.invoke` is sent.
    pub fn cancel(&mut self, host: &mut dyn Host) {
        if self.running {
            self.running = false;
            self.exit_interpreter(host, false);
        }
    }

    /// Why the session stopped other than by reaching a top-level final
    /// state (more than [`MAX_MICROSTEPS`] microsteps in one macrostep).
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Is `invokeid` an invocation of this session not yet cancelled?
    pub fn has_invocation(&self, invokeid: &str) -> bool {
        self.invocations.iter().any(|i| i.invokeid == invokeid)
    }

    /// Eventless transitions and internal events until none is left, then
    /// the invocations of the states entered (the upper half of
    /// `mainEventLoop`); halts when a top-level final state was entered.
    fn finish_macrostep(&mut self, host: &mut dyn Host) {
        loop {
            self.run_internal(host);
            if !self.running {
                let halted = self.failure.is_none();
                self.exit_interpreter(host, halted);
                return;
            }
            let to_invoke: Vec<StateId> = std::mem::take(&mut self.states_to_invoke)
                .into_iter()
                .collect();
            for s in to_invoke {
                for i in 0..self.doc.states[s].invokes.len() {
                    self.invoke(s, i, host);
                }
            }
            if self.internal_queue.is_empty() {
                return;
            }
        }
    }

    fn run_internal(&mut self, host: &mut dyn Host) {
        let mut steps = 0;
        while self.running {
            steps += 1;
            if steps > MAX_MICROSTEPS {
                self.failure = Some(format!(
                    "more than {MAX_MICROSTEPS} microsteps in one macrostep: stopped"
                ));
                self.running = false;
                return;
            }
            let mut enabled = self.select_eventless_transitions();
            if enabled.is_empty() {
                let Some(event) = self.internal_queue.pop_front() else {
                    return;
                };
                if let Err(e) = self.dm.set_event(&event) {
                    self.raise_error_execution(&e.0);
                }
                enabled = self.select_transitions(&event);
            }
            if !enabled.is_empty() {
                self.microstep(&enabled, host);
            }
        }
    }

    /// Places `error.execution` on the internal queue.
    pub(crate) fn raise_error_execution(&mut self, message: &str) {
        self.internal_queue.push_back(Event::platform(
            "error.execution",
            Some(Value::String(message.to_owned())),
        ));
    }

    /// Runs the `<data>` of state `s` (its first entry under late binding).
    pub(crate) fn initialize_data(&mut self, s: StateId) {
        if !std::mem::replace(&mut self.first_entry[s], false) {
            return;
        }
        let doc = self.doc.clone();
        for d in &doc.states[s].data {
            let passed = if s == ROOT {
                self.params.get(&d.id)
            } else {
                None
            };
            if let Err(e) = self.dm.initialize(&d.id, &d.init, passed) {
                self.raise_error_execution(&format!("data {:?}: {}", d.id, e.0));
            }
        }
    }

    pub(crate) fn next_id(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}.{}.{}", self.sessionid, self.counter)
    }
}
