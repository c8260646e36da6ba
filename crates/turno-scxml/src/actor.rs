//! SCXML documents with the null data model as turno actors (feature
//! `actor`).
//!
//! A [`Processor`] keeps its sessions on one thread because an ECMAScript
//! session's data model is a boa context, which cannot move between
//! threads. A document tree whose every session has the null data model
//! holds no such context, so it can live in an actor like any other state,
//! on any of turno's schedulers: [`ScxmlActor`] runs one root session (and
//! what it invokes) in a null-only processor, one macrostep per external
//! event, one turn per message.
//!
//! Time is the system's: the processor's clock reads the actor's time since
//! it started, so `<send delay>` and `<invoke>`d children's delayed events
//! fall due on virtual time under `DetSystem` and on real time elsewhere;
//! the actor sets one turno timer for the earliest one. When the root
//! session reaches a top-level final state, the actor stops (its watchers
//! are told). A restart by a supervisor starts the document afresh.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use turno::{DetSystem, Props, System};
//! use turno_scxml::actor::{ScxmlActor, ScxmlMsg};
//! use turno_scxml::{load_str, Event};
//!
//! let doc = Arc::new(load_str(r#"
//!   <scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="null">
//!     <state id="idle">
//!       <transition event="go" target="waiting"/>
//!     </state>
//!     <state id="waiting">
//!       <onentry><send event="timeout" delay="2s"/></onentry>
//!       <transition event="timeout" target="done"/>
//!     </state>
//!     <final id="done"/>
//!   </scxml>"#, None).unwrap());
//! ScxmlActor::check(&doc).unwrap();
//! let mut sys = DetSystem::new(1);
//! let d = doc.clone();
//! let chart = sys
//!     .spawn(Props::new().name("door"), move || ScxmlActor::new(d.clone()))
//!     .unwrap();
//! chart.try_send(ScxmlMsg::Event(Event::external("go", None)));
//! sys.run_until_idle().unwrap();
//! assert!(!chart.is_closed(), "waiting for its delayed event");
//! sys.advance(Duration::from_secs(2)).unwrap();
//! assert!(chart.is_closed(), "done: the session ended, the actor stopped");
//! ```

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use turno::{Actor, Context, Instant, ReplyTo, TimerId};

use crate::datamodel::EvalError;
use crate::event::Event;
use crate::model::{DataModelKind, Document};
use crate::processor::{LogLine, Processor, RunError, SessionHandle};

/// Why a document cannot run as an [`ScxmlActor`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScxmlActorError {
    /// The root document does not have the null data model.
    #[error(
        "the document's data model is {0:?}: only the null data model runs as an actor (an \
         ECMAScript context cannot move between threads; run it in a `Processor` on one thread)"
    )]
    NotNull(DataModelKind),
    /// The document could not start.
    #[error("the document cannot start: {0}")]
    Start(String),
}

/// What a session looks like after a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ScxmlState {
    /// The active atomic states, in document order (the last configuration
    /// once the session ended).
    pub atomic_states: Vec<String>,
    /// Whether the root session still runs.
    pub running: bool,
    /// The session's data (`null` under the null data model's rules).
    pub data: Value,
    /// The processor's clock: milliseconds since the actor started.
    pub now_ms: f64,
}

/// An [`ScxmlActor`]'s messages.
pub enum ScxmlMsg {
    /// An external event for the root session.
    Event(Event),
    /// Where the session stands, after every event due by now.
    State(ReplyTo<ScxmlState>),
    /// The actor's own timer: delayed events may be due.
    Wake,
}

/// A null-data-model processor: one document tree, its sessions' shared
/// state behind the processor's `Rc`s.
struct NullProcessor(Processor);

// SAFETY: a `Processor`'s non-`Send` parts are `Rc`/`RefCell` handles
// shared among its own sessions and its post office, and its sessions'
// data models. Every `Rc` clone stays inside the processor: none of its
// public methods hands one out, and `NullProcessor` exposes only `&mut`
// calls on the whole, so moving it moves every handle of each `Rc` at
// once, and no two threads can touch one count. A processor made by
// `Processor::null_only` creates only the null data model (plain data, no
// thread-bound state), the boa contexts being the thread-bound part that
// this rules out.
unsafe impl Send for NullProcessor {}

/// One SCXML document (null data model) as a turno actor. See the module
/// docs.
pub struct ScxmlActor {
    doc: Arc<Document>,
    running: Option<(NullProcessor, SessionHandle)>,
    started_at: Instant,
    wake: Option<TimerId>,
    logs_seen: usize,
    on_step: Option<StepFn>,
    failure: Option<String>,
}

type StepFn = Box<dyn FnMut(&ScxmlState, &[LogLine]) + Send>;

impl ScxmlActor {
    /// Whether `doc` can run as an actor: the null data model, and its
    /// initial macrostep starts.
    pub fn check(doc: &Arc<Document>) -> Result<(), ScxmlActorError> {
        if doc.datamodel != DataModelKind::Null {
            return Err(ScxmlActorError::NotNull(doc.datamodel.clone()));
        }
        Processor::null_only()
            .start(doc.clone())
            .map(|_| ())
            .map_err(|e: EvalError| ScxmlActorError::Start(e.to_string()))
    }

    /// An actor that starts `doc` when it starts. A document that fails
    /// [`ScxmlActor::check`] makes the actor fail at its start (a panic in
    /// `started`, which its supervisor sees as a failure), so check first.
    pub fn new(doc: Arc<Document>) -> Self {
        ScxmlActor {
            doc,
            running: None,
            started_at: Instant::ZERO,
            wake: None,
            logs_seen: 0,
            on_step: None,
            failure: None,
        }
    }

    /// Calls `f` after every turn with the session's state and the `<log>`
    /// lines written in that turn.
    pub fn on_step(mut self, f: impl FnMut(&ScxmlState, &[LogLine]) + Send + 'static) -> Self {
        self.on_step = Some(Box::new(f));
        self
    }

    fn now_ms(&self, ctx: &Context<'_, Self>) -> f64 {
        ctx.now()
            .saturating_duration_since(self.started_at)
            .as_secs_f64()
            * 1000.0
    }

    fn state(&self, now_ms: f64) -> ScxmlState {
        match &self.running {
            Some((p, root)) => ScxmlState {
                atomic_states: p.0.atomic_states(*root),
                running: p.0.is_running(*root),
                data: p.0.session(*root).map(|s| s.data()).unwrap_or(Value::Null),
                now_ms,
            },
            None => ScxmlState {
                atomic_states: Vec::new(),
                running: false,
                data: Value::Null,
                now_ms,
            },
        }
    }

    /// Runs what is due, reports, re-arms the timer, stops when done.
    fn settle(&mut self, ctx: &mut Context<'_, Self>) {
        let now_ms = self.now_ms(ctx);
        let Some((p, _)) = self.running.as_mut() else {
            return;
        };
        if let Err(RunError::StepLimit(n)) = p.0.run_until(now_ms) {
            self.failure = Some(format!("more than {n} macrosteps at one instant"));
        }
        let logs = p.0.logs();
        let new_logs = logs.get(self.logs_seen..).unwrap_or_default().to_vec();
        self.logs_seen = logs.len();
        let next = p.0.pending().first().map(|(ms, _)| *ms);
        let state = self.state(now_ms);
        if let Some(f) = self.on_step.as_mut() {
            f(&state, &new_logs);
        }
        if let Some(t) = self.wake.take() {
            ctx.cancel_timer(t);
        }
        if let Some(why) = self.failure.take() {
            panic!("the SCXML session failed: {why}");
        }
        if !state.running {
            ctx.stop();
            return;
        }
        if let Some(ms) = next {
            self.wake = Some(ctx.send_after(Duration::from_millis(ms), ScxmlMsg::Wake));
        }
    }
}

impl Actor for ScxmlActor {
    type Msg = ScxmlMsg;

    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        self.started_at = ctx.now();
        let mut p = Processor::null_only();
        match p.start(self.doc.clone()) {
            Ok(root) => self.running = Some((NullProcessor(p), root)),
            Err(e) => panic!("the SCXML document cannot start: {e}"),
        }
        self.settle(ctx);
    }

    fn handle(&mut self, ctx: &mut Context<'_, Self>, msg: ScxmlMsg) {
        match msg {
            ScxmlMsg::Event(event) => {
                // Events due before this one are delivered first.
                let now_ms = self.now_ms(ctx);
                if let Some((p, root)) = self.running.as_mut() {
                    let _ = p.0.run_until(now_ms);
                    p.0.send(*root, event);
                }
                self.settle(ctx);
            }
            ScxmlMsg::Wake => {
                self.wake = None;
                self.settle(ctx);
            }
            ScxmlMsg::State(reply) => {
                self.settle(ctx);
                reply.reply(self.state(self.now_ms(ctx)));
            }
        }
    }
}
