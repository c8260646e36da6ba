//! One SCXML session: a document compiled for turno-chart's core
//! ([`crate::compile`], [`Semantics::Scxml`](turno_chart::Semantics)) and
//! the data model it runs against.
//!
//! The algorithm is turno-chart's (`crates/turno-chart/src/algorithm.rs`);
//! this module owns what the core leaves to its host: the session's data
//! (the chart's context is a handle on it), the start of invocations at the
//! end of a macrostep (the spec's `statesToInvoke`), autoforward, and the
//! `done.invoke` of a session that halted.
//!
//! A session never blocks. [`Session::start`] runs the initial macrostep and
//! [`Session::handle_external`] one macrostep for one external event: the
//! spec's `mainEventLoop` with the blocking dequeue left to the
//! [`Processor`](crate::Processor) that owns the queues. That is a turn.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use serde_json::{Map, Value};
use turno_chart::{Action, ChartError, Machine, Snapshot, Status};

use crate::datamodel::{DataModel, SystemVars};
use crate::event::{Event, EventKind, SCXML_IO_PROCESSOR};
use crate::exec::error_execution;
use crate::model::{Binding, Document, StateId, ROOT};
use crate::processor::PostOffice;

/// An invocation started by a session and not yet cancelled.
#[derive(Debug, Clone)]
pub(crate) struct ActiveInvoke {
    pub invokeid: String,
    pub state: StateId,
    pub index: usize,
    /// The child's mailbox.
    pub child: usize,
}

/// A session's data: what executable content reads and changes.
pub(crate) struct Core {
    pub dm: Box<dyn DataModel>,
    pub doc: Arc<Document>,
    pub sessionid: String,
    /// This session's mailbox in the post office.
    pub slot: usize,
    /// Values passed by the invoking session for top-level data.
    pub params: HashMap<String, Value>,
    /// States whose data is still to be initialized (late binding).
    pub first_entry: Vec<bool>,
    pub counter: u64,
    pub invocations: Vec<ActiveInvoke>,
    pub post: Rc<RefCell<PostOffice>>,
}

/// The chart's context for an SCXML session: a handle on its [`Core`].
/// A machine shared by the sessions of one document holds an empty one.
#[derive(Clone, Default)]
pub(crate) struct Ctx(pub(crate) Option<Rc<RefCell<Core>>>);

impl Ctx {
    /// Runs `f` on the session's data (nothing for the machine's own,
    /// empty context).
    pub(crate) fn with<R: Default>(&self, f: impl FnOnce(&mut Core) -> R) -> R {
        match &self.0 {
            Some(c) => f(&mut c.borrow_mut()),
            None => R::default(),
        }
    }

    /// [`Ctx::with`] for results without a default: `None` for the
    /// machine's own, empty context.
    pub(crate) fn try_with<R>(&self, f: impl FnOnce(&mut Core) -> R) -> Option<R> {
        self.0.as_ref().map(|c| f(&mut c.borrow_mut()))
    }
}

impl Core {
    /// The spec's data model set-up and global script (the root's entry in
    /// the compiled machine): system variables, `<data>` (all of it under
    /// early binding, the root's under late), then the `<script>`.
    pub(crate) fn start(&mut self, raised: &mut Vec<Event>) {
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
            raised.push(error_execution(&e.0));
        }
        let doc = self.doc.clone();
        match doc.binding {
            Binding::Early => {
                for s in 0..doc.states.len() {
                    self.initialize_data(s, raised);
                }
            }
            Binding::Late => {
                for st in &doc.states {
                    for d in &st.data {
                        if let Err(e) = self.dm.declare(&d.id) {
                            raised.push(error_execution(&e.0));
                        }
                    }
                }
                self.initialize_data(ROOT, raised);
            }
        }
        if let Some(script) = &doc.script {
            if let Err(e) = self.dm.run_script(&script.source) {
                raised.push(error_execution(&e.0));
            }
        }
    }

    /// Runs the `<data>` of state `s` (its first entry under late binding).
    pub(crate) fn initialize_data(&mut self, s: StateId, raised: &mut Vec<Event>) {
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
                raised.push(error_execution(&format!("data {:?}: {}", d.id, e.0)));
            }
        }
    }
}

const META: &str = "$scxml";

/// An SCXML event as the core carries it: the name, the payload under
/// `data`, the other `_event` fields under `$scxml` (a platform event
/// without them, such as the core's `done.state.*`, has none).
pub(crate) fn to_chart(e: &Event) -> turno_chart::Event {
    let mut m = Map::new();
    if let Some(d) = &e.data {
        m.insert("data".into(), d.clone());
    }
    let fields = [
        ("sendid", &e.sendid),
        ("origin", &e.origin),
        ("origintype", &e.origintype),
        ("invokeid", &e.invokeid),
    ];
    if e.kind != EventKind::Platform || fields.iter().any(|(_, v)| v.is_some()) {
        let mut meta = Map::new();
        meta.insert("type".into(), Value::String(e.kind.as_str().into()));
        for (k, v) in fields {
            if let Some(v) = v {
                meta.insert(k.into(), Value::String(v.clone()));
            }
        }
        m.insert(META.into(), Value::Object(meta));
    }
    turno_chart::Event::with_data(e.name.as_str(), Value::Object(m))
}

/// The inverse of [`to_chart`].
pub(crate) fn from_chart(e: &turno_chart::Event) -> Event {
    let meta = e.get(META);
    let field = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let kind = match field("type").as_deref() {
        Some("internal") => EventKind::Internal,
        Some("external") => EventKind::External,
        _ => EventKind::Platform,
    };
    Event {
        name: e.name().to_owned(),
        kind,
        sendid: field("sendid"),
        origin: field("origin"),
        origintype: field("origintype"),
        invokeid: field("invokeid"),
        data: e.get("data").cloned(),
    }
}

/// One running SCXML session.
pub struct Session {
    doc: Arc<Document>,
    machine: Rc<Machine<Ctx>>,
    /// Machine state index to document state id.
    to_doc: Arc<Vec<StateId>>,
    ctx: Ctx,
    snap: Option<Snapshot<Ctx>>,
    /// `(state, invoke index)` entered in this macrostep and not exited:
    /// the spec's `statesToInvoke`, started when the macrostep ends.
    to_invoke: Vec<(StateId, usize)>,
    failure: Option<String>,
    sessionid: String,
}

/// Microsteps one macrostep may take before the session is stopped: a
/// cycle of eventless transitions never ends otherwise.
pub const MAX_MICROSTEPS: usize = turno_chart::machine::DEFAULT_MAX_MICROSTEPS;

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("sessionid", &self.sessionid)
            .field("running", &self.is_running())
            .finish_non_exhaustive()
    }
}

impl Session {
    pub(crate) fn new(
        compiled: &crate::compile::Compiled,
        dm: Box<dyn DataModel>,
        sessionid: String,
        slot: usize,
        params: Vec<(String, Value)>,
        post: Rc<RefCell<PostOffice>>,
    ) -> Self {
        let doc = compiled.doc.clone();
        let core = Core {
            dm,
            doc: doc.clone(),
            sessionid: sessionid.clone(),
            slot,
            params: params.into_iter().collect(),
            first_entry: vec![true; doc.states.len()],
            counter: 0,
            invocations: Vec::new(),
            post,
        };
        Session {
            doc,
            machine: compiled.machine.clone(),
            to_doc: compiled.to_doc.clone(),
            ctx: Ctx(Some(Rc::new(RefCell::new(core)))),
            snap: None,
            to_invoke: Vec::new(),
            failure: None,
            sessionid,
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

    /// Is the session still running (started, not halted, not cancelled,
    /// not failed)?
    pub fn is_running(&self) -> bool {
        self.snap
            .as_ref()
            .is_some_and(|s| s.status == Status::Active)
            && self.failure.is_none()
    }

    /// The active states in document order (the `<scxml>` element is not
    /// one); after the session halted, the configuration it halted in.
    pub fn configuration(&self) -> Vec<StateId> {
        let Some(snap) = &self.snap else {
            return Vec::new();
        };
        let mut out: Vec<StateId> = snap
            .config
            .iter()
            .map(|s| self.to_doc[s as usize])
            .filter(|&s| s != ROOT)
            .collect();
        out.sort_unstable();
        out
    }

    /// The ids of the active atomic states, in document order.
    pub fn atomic_state_ids(&self) -> Vec<String> {
        self.configuration()
            .into_iter()
            .filter(|&s| self.doc.is_atomic(s))
            .map(|s| self.doc.states[s].id.clone())
            .collect()
    }

    /// Why the session stopped other than by reaching a top-level final
    /// state (more than [`MAX_MICROSTEPS`] microsteps in one macrostep).
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// The session's `<data>` variables (of every state, in document
    /// order) as JSON; a value the data model cannot show is `null`.
    pub fn data(&self) -> Value {
        let doc = self.doc.clone();
        self.ctx.with(|c| {
            let mut out = Map::new();
            for d in doc.states.iter().flat_map(|s| &s.data) {
                let v = c.dm.eval_value(&d.id).unwrap_or(Value::Null);
                out.insert(d.id.clone(), v);
            }
            Value::Object(out)
        })
    }

    /// Is `invokeid` an invocation of this session not yet cancelled?
    pub fn has_invocation(&self, invokeid: &str) -> bool {
        self.ctx
            .with(|c| c.invocations.iter().any(|i| i.invokeid == invokeid))
    }

    /// The spec's `interpret` up to the first wait: the initial macrostep
    /// (the data model is set up by the root's entry), then invocations.
    pub(crate) fn start(&mut self) {
        if self.snap.is_some() {
            return;
        }
        let mut actions = Vec::new();
        match turno_chart::initial_transition_with(&self.machine, self.ctx.clone(), &mut actions) {
            Ok(snap) => {
                self.snap = Some(snap);
                self.finish_macrostep(Ok(()), actions);
            }
            Err(e) => {
                // No snapshot to keep: the session failed in its first
                // macrostep.
                self.failure = Some(e.to_string());
                self.cancel_all_invocations();
            }
        }
    }

    /// One macrostep for one external event: autoforward, then the core's
    /// macrostep (whose event hook binds `_event` and runs `<finalize>`).
    pub(crate) fn handle_external(&mut self, event: Event) {
        if !self.is_running() {
            return;
        }
        let forward: Vec<usize> = self.ctx.with(|c| {
            let doc = c.doc.clone();
            c.invocations
                .iter()
                .filter(|i| doc.states[i.state].invokes[i.index].autoforward)
                .map(|i| i.child)
                .collect()
        });
        for child in forward {
            self.ctx
                .with(|c| c.post.borrow_mut().forward(child, event.clone()));
        }
        let mut actions = Vec::new();
        let snap = self
            .snap
            .as_mut()
            .expect("running sessions have a snapshot");
        let r =
            turno_chart::transition_in_place(&self.machine, snap, to_chart(&event), &mut actions);
        self.finish_macrostep(r, actions);
    }

    /// Stops the session from outside (the parent cancelled the
    /// invocation): onexit handlers run, no `done.invoke` is sent.
    pub(crate) fn cancel(&mut self) {
        if !self.is_running() {
            return;
        }
        let mut actions = Vec::new();
        let snap = self
            .snap
            .as_mut()
            .expect("running sessions have a snapshot");
        turno_chart::exit_interpreter(
            &self.machine,
            snap,
            turno_chart::Event::new("cancel"),
            &mut actions,
        );
        self.apply(&actions);
        self.to_invoke.clear();
        self.cancel_all_invocations();
    }

    /// What the core asked for: invocations to start when the macrostep
    /// ends (dropped again if their state was exited first) or to cancel.
    fn apply(&mut self, actions: &[Action]) {
        for a in actions {
            match a {
                Action::StartInvoke { id, .. } => {
                    if let Some(key) = invoke_key(id) {
                        self.to_invoke.push(key);
                    }
                }
                Action::StopInvoke { id, .. } => {
                    if let Some(key) = invoke_key(id) {
                        if let Some(pos) = self.to_invoke.iter().position(|k| *k == key) {
                            self.to_invoke.remove(pos);
                        } else {
                            self.ctx.with(|c| c.cancel_invocations_of(key.0, key.1));
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// The rest of the spec's `mainEventLoop` after the core's macrostep:
    /// a halted session sends `done.invoke`; otherwise the invocations of
    /// the states entered start, and errors they raise run as internal
    /// events of the same macrostep.
    fn finish_macrostep(&mut self, mut result: Result<(), ChartError>, mut actions: Vec<Action>) {
        loop {
            self.apply(&actions);
            actions.clear();
            if let Err(e) = result {
                self.failure = Some(e.to_string());
                self.to_invoke.clear();
                self.cancel_all_invocations();
                return;
            }
            let snap = self.snap.as_mut().expect("started");
            if snap.status != Status::Active {
                self.to_invoke.clear();
                if snap.status == Status::Done {
                    let data = snap.output.as_deref().cloned();
                    let slot = self.ctx.with(|c| c.slot);
                    self.ctx.with(|c| c.post.borrow_mut().done(slot, data));
                }
                return;
            }
            let mut pending = std::mem::take(&mut self.to_invoke);
            pending.sort_unstable();
            let mut raised = Vec::new();
            for (state, index) in pending {
                self.ctx.with(|c| c.invoke(state, index, &mut raised));
            }
            if raised.is_empty() {
                return;
            }
            let events = raised.iter().map(to_chart).collect();
            result = turno_chart::continue_macrostep(&self.machine, snap, events, &mut actions);
        }
    }

    fn cancel_all_invocations(&mut self) {
        let children: Vec<usize> = self.ctx.with(|c| {
            std::mem::take(&mut c.invocations)
                .into_iter()
                .map(|i| i.child)
                .collect()
        });
        for child in children {
            self.ctx.with(|c| c.post.borrow_mut().cancel_invoke(child));
        }
    }
}

/// The machine's invocation id for `<invoke>` number `index` of document
/// state `state`.
pub(crate) fn invoke_id(state: StateId, index: usize) -> String {
    format!("{state}/{index}")
}

fn invoke_key(id: &str) -> Option<(StateId, usize)> {
    let (s, i) = id.split_once('/')?;
    Some((s.parse().ok()?, i.parse().ok()?))
}
