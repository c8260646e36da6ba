//! Persisted snapshots that are honest about the outside world.
//!
//! A chart is written as one versioned JSON document ([`Persist::to_string`]):
//!
//! ```json
//! {"format": "turno-chart-snapshot", "format_version": 1,
//!  "machine": {"id": "checkout", "version": "3"},
//!  "status": "active", "configuration": ["checkout", "checkout.sending"],
//!  "context": {...}, "volatile": ["/card/number"],
//!  "history": [{"history": "checkout.hist", "states": ["checkout.a"]}],
//!  "scheduled": [{"id": "...", "seq": 4, "due_ms": 12000, "delay_ms": 3000,
//!                 "event": {"type": "..."}, "to": "own"}],
//!  "invocations": [{"id": "submit", "src": "submitPayment", "generation": 7,
//!                   "state": "checkout.sending", "input": {...}, "started_ms": 9000}],
//!  "children": [], "charts": {}, "output": null, "error": null,
//!  "now_ms": 9000, "epoch_ms": 1764583200000, "next_seq": 8}
//! ```
//!
//! States are named by id (not index), so a snapshot survives a reordering
//! of the definition and a hand edit is checked against the machine.
//! Delayed events keep **absolute deadlines**; in-flight invocations keep
//! their source, input and start time.
//!
//! Reading ([`Persist::read`]) never panics and never half-restores: a
//! truncated, corrupt, foreign (another machine, another version without a
//! registered [migration](Persist::migration)) or inconsistent document is
//! a [`SnapshotError`] naming the JSON path of the problem.
//!
//! Restoring ([`Persist::restore`]) re-runs **no entry action** and never
//! silently re-runs an in-flight invocation. In order:
//!
//! 1. delayed events per [`Resume`]: by default each keeps its deadline,
//!    and those that fell due while no actor was alive fire now, in
//!    deadline order, each at its own deadline (as if time had passed);
//! 2. transient states are mapped ([`Sanitizer::transient`]);
//! 3. each invocation still in flight is decided by the [`Sanitizer`]:
//!    map the position to a safe state (the default for a non-idempotent
//!    source is the state that asks "did it happen?", registered with
//!    [`Sanitizer::safe_state`]), re-run it with the same input and so the
//!    same idempotency key (only for sources registered as idempotent), or
//!    fail the restore. A source with no rule fails the restore.
//!
//! The result is a snapshot and the [`Action`]s an interpreter carries out
//! to resume (re-arm timers, re-run idempotent invocations, what the safe
//! states' entries asked for).
//!
//! # Restoring in another process
//!
//! A chart's clock is its system's (ms since the system started), so a new
//! process's clock starts at 0 again. `epoch_ms` (the wall-clock time at
//! which the writer's clock read 0) places the snapshot in real time, and a
//! restore given its own epoch ([`Clock`]) puts every deadline back at the
//! same wall-clock time: those that fell due while no process was alive
//! fire during the restore, once, in deadline order; the others are
//! re-armed on the new clock. With the interpreter (feature `runtime`),
//! see the example of [`wall_epoch_ms`].
//!
//! A driver of the pure core does the same with
//! [`Persist::restore`]`(text, Clock::new(now_ms, Some(epoch)))`, or
//! [`Persist::restore_snapshot`] for a snapshot it kept with serde, and sets
//! [`Snapshot::epoch_ms`] on the snapshots it starts. On `DetSystem` the
//! epochs are numbers the test picks (virtual wall time); `tests/restart.rs`
//! runs both: two DetSystems at two epochs over many seeds, and real
//! processes, the first SIGKILLed mid-flow.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::Deserialize;
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::actions::{Action, SendTarget};
use crate::algorithm::{ChartError, Run};
use crate::event::Event;
use crate::machine::{Machine, StateIdx, StateKind};
use crate::snapshot::{Finished, HistoryEntry, Invocation, Scheduled, Snapshot, StateSet, Status};
use crate::tree::{Charts, Tree};
use crate::volatile;

mod tree_io;
pub use tree_io::{Decisions, RestoredTree};

/// The `format` field of every persisted snapshot.
pub const FORMAT: &str = "turno-chart-snapshot";
/// The layout version this crate writes and reads.
pub const FORMAT_VERSION: u64 = 1;
/// The largest document [`Persist::read`] accepts.
pub const MAX_BYTES: usize = 16 << 20;

/// Why a persisted snapshot cannot be read. `path` is a JSON path such as
/// `$.configuration[2]` (`$` for the whole document).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct SnapshotError {
    /// Where the problem is.
    pub path: String,
    /// What it is.
    pub problem: SnapshotProblem,
}

/// What is wrong with a persisted snapshot.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotProblem {
    /// The document ends early (a partial write).
    #[error("truncated: the document ends at line {line}, column {column}")]
    Truncated {
        /// Where it ends.
        line: usize,
        /// Where it ends.
        column: usize,
    },
    /// Not JSON.
    #[error("corrupt: not JSON at line {line}, column {column}: {message}")]
    Corrupt {
        /// Where.
        line: usize,
        /// Where.
        column: usize,
        /// serde_json's message.
        message: String,
    },
    /// Larger than [`MAX_BYTES`].
    #[error("{0} bytes is larger than the {MAX_BYTES} bytes a snapshot may have")]
    TooLarge(usize),
    /// JSON, but not a turno chart snapshot.
    #[error("not a turno chart snapshot (expected \"format\": \"{FORMAT}\")")]
    NotASnapshot,
    /// A layout version this crate does not read.
    #[error(
        "snapshot format version {found} is not supported (this build reads {FORMAT_VERSION})"
    )]
    FormatVersion {
        /// The version found.
        found: String,
    },
    /// The snapshot belongs to another machine.
    #[error("the snapshot is of machine {found:?}, not {expected:?}")]
    ForeignMachine {
        /// Its machine id.
        found: String,
        /// The machine restoring it.
        expected: String,
    },
    /// Another version of the machine, and no migration leads here.
    #[error("the snapshot is of machine version {}, this machine is version {}; register a migration from {} to restore it", show(.found), show(.expected), show(.found))]
    ForeignVersion {
        /// The snapshot's version.
        found: Option<String>,
        /// The machine's version.
        expected: Option<String>,
    },
    /// A registered migration failed.
    #[error("migration from version {from} to {to} failed: {message}")]
    Migration {
        /// From.
        from: String,
        /// To.
        to: String,
        /// Its error.
        message: String,
    },
    /// A field is missing.
    #[error("missing field {0:?}")]
    Missing(&'static str),
    /// A field has the wrong JSON type.
    #[error("expected {0}")]
    WrongType(&'static str),
    /// A field nobody writes (a typo in a hand edit).
    #[error("unknown field {0:?}")]
    UnknownField(String),
    /// A state id the machine does not have.
    #[error("unknown state {0:?}")]
    UnknownState(String),
    /// A value that is well formed but impossible for this machine.
    #[error("{0}")]
    Inconsistent(String),
    /// The context does not fit the context type.
    #[error("the context does not fit the context type: {0}")]
    Context(String),
}

fn show(v: &Option<String>) -> String {
    match v {
        Some(v) => format!("{v:?}"),
        None => "(none)".into(),
    }
}

fn err(path: impl Into<String>, problem: SnapshotProblem) -> SnapshotError {
    SnapshotError {
        path: path.into(),
        problem,
    }
}

/// Why a snapshot could not be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PersistError {
    /// The context did not serialise.
    #[error("the context does not serialise: {0}")]
    Context(String),
    /// A volatile value appears outside the context (where it cannot be
    /// removed without changing what the chart will do).
    #[error("{path}: a volatile value would reach the snapshot here; keep volatile data out of event payloads, invocation inputs and outputs")]
    VolatileLeak {
        /// Where it was found.
        path: String,
    },
}

/// Why a restore failed. Nothing was restored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// The document could not be read.
    #[error(transparent)]
    Snapshot(#[from] SnapshotError),
    /// The sanitizer refused an in-flight invocation.
    #[error("invocation {id:?} of {src:?} was in flight: {reason}")]
    InFlight {
        /// The invocation id.
        id: String,
        /// Its source.
        src: String,
        /// Why it cannot be resumed.
        reason: String,
    },
    /// A safe state or transient target names no state.
    #[error("the sanitizer names unknown state {0:?}")]
    UnknownTarget(String),
    /// Resuming (firing overdue events, entering safe states) ran away.
    #[error("resuming: {0}")]
    Chart(#[from] ChartError),
}

/// What becomes of delayed events on restore.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Resume {
    /// Each keeps its absolute deadline; overdue ones fire at once, in
    /// deadline order, each at its own deadline.
    #[default]
    Deadline,
    /// Each keeps the time it had left when persisted.
    Remaining,
    /// Each starts its full delay again from the restore.
    Restart,
}

/// The clock a chart is restored on: its time now and, when known, the
/// wall-clock time at which that clock read 0 (its *epoch*).
///
/// A chart's clock is its system's: milliseconds since the system started
/// (virtual on `DetSystem`). A snapshot written with an epoch
/// ([`Snapshot::epoch_ms`]) says where its deadlines are in real time, so
/// a restore that knows its own epoch puts them back where they were, in
/// this process or another: with `then` the snapshot's epoch and `here`
/// this clock's, the snapshot's clock now reads `here + now_ms - then`;
/// delayed events due by then fire during the restore, each at its own
/// deadline, and every other time moves by `then - here` onto this clock
/// (a deadline at wall-clock `W` stays at `W`). The restored snapshot's
/// epoch becomes `here`.
///
/// Without both epochs the two clocks are taken to be one (a restore in the
/// same system): a plain `u64` converts to that. A wall clock set back
/// between persist and restore counts as no time passing.
///
/// ```
/// use turno_chart::persist::Clock;
/// let c = Clock::new(250, Some(1_700_000_000_000));
/// assert_eq!(c.wall_ms(), Some(1_700_000_000_250));
/// assert_eq!(Clock::from(42), Clock::new(42, None));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    /// The chart's clock now, in ms (the system's since it started).
    pub now_ms: u64,
    /// When that clock read 0, in ms since the Unix epoch.
    pub epoch_ms: Option<u64>,
}

impl Clock {
    /// `now_ms` on a clock that read 0 at wall-clock `epoch_ms`.
    pub fn new(now_ms: u64, epoch_ms: Option<u64>) -> Self {
        Clock { now_ms, epoch_ms }
    }

    /// The wall-clock time now (ms since the Unix epoch), if the epoch is known.
    pub fn wall_ms(&self) -> Option<u64> {
        self.epoch_ms.map(|e| e.saturating_add(self.now_ms))
    }
}

impl From<u64> for Clock {
    /// A restore on the snapshot's own clock.
    fn from(now_ms: u64) -> Self {
        Clock::new(now_ms, None)
    }
}

/// The epoch of a system whose clock reads `now` at this moment: the real
/// wall clock (`SystemTime`) minus `now`. Call it once per system, right
/// after creating it (`wall_epoch_ms(sys.now())`), and give the result to
/// every chart actor of that system
/// ([`ChartActor::with_epoch`](crate::interpreter::ChartActor::with_epoch)).
/// A chart persisted by the last process, resumed with its deadlines at
/// the same wall-clock time:
///
/// ```no_run
/// # use std::sync::Arc;
/// # use turno::{Props, System, ThreadedSystem};
/// # use turno_chart::interpreter::ChartActor;
/// # use turno_chart::persist::{self, Persist};
/// # // The application's own durable storage, e.g. turno-store.
/// # fn load(_: &str) -> String { String::new() }
/// # fn save(_: &str, _: String) {}
/// # let m = Arc::new(turno_chart::load_json::<serde_json::Value>(
/// #     r#"{"id": "checkout", "initial": "cart", "states": {
/// #         "cart": {"after": {"600000": "expired"}}, "expired": {"type": "final"}}}"#,
/// #     &turno_chart::stdlib::implementations(),
/// # ).unwrap());
/// let sys = ThreadedSystem::new();
/// let epoch = persist::wall_epoch_ms(sys.now()); // once per system
/// let text = load("checkout"); // what the last process persisted
/// let (m1, m2) = (m.clone(), m.clone());
/// sys.spawn(Props::new(), move || {
///     let (m1, m2, text) = (m1.clone(), m2.clone(), text.clone());
///     ChartActor::new(m1.clone())
///         .with_epoch(epoch)
///         // Before the macrostep's effects: write it durably here.
///         .on_persist(move |s| save("checkout", Persist::new(&*m1).to_string(s).unwrap()))
///         .restoring(move |at| Persist::new(&*m2).restore(&text, at))
/// });
/// ```
#[cfg(feature = "runtime")]
pub fn wall_epoch_ms(now: turno::Instant) -> u64 {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    wall.saturating_sub(u64::try_from(now.since_start().as_millis()).unwrap_or(u64::MAX))
}

/// The sanitizer's decision for one in-flight invocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InFlight {
    /// Move to this state (by id): the interrupted state is exited and the
    /// safe state entered, with its entry actions and invocations.
    SafeState(String),
    /// Start it again with the same input (and so the same idempotency
    /// key) and generation. Only for sources registered as idempotent.
    Rerun,
    /// Refuse to restore.
    Fail(String),
    /// An invoked child chart ([`tree`](crate::tree)): restored from its
    /// own snapshot, nested in its parent's document; never re-run, never
    /// a sanitizer's choice (a sanitizer answering it for another source
    /// fails the restore).
    Resume,
}

type DecideFn = Arc<dyn Fn(&Invocation) -> Option<InFlight> + Send + Sync>;

/// Decides, per in-flight invocation and per transient state, how a
/// restored chart resumes. See the [module docs](self).
#[derive(Clone, Default)]
pub struct Sanitizer {
    idempotent: BTreeSet<String>,
    safe: BTreeMap<String, String>,
    transient: Vec<(String, String)>,
    decide: Option<DecideFn>,
}

impl Sanitizer {
    /// No rules: any in-flight invocation fails the restore.
    pub fn new() -> Self {
        Self::default()
    }

    /// `src` may run twice with the same input: re-run it on restore.
    pub fn idempotent(mut self, src: impl Into<String>) -> Self {
        self.idempotent.insert(src.into());
        self
    }

    /// An interrupted `src` maps to the state with id `state_id`.
    pub fn safe_state(mut self, src: impl Into<String>, state_id: impl Into<String>) -> Self {
        self.safe.insert(src.into(), state_id.into());
        self
    }

    /// A chart restored while in `state_id` (an error shown to the user,
    /// say) goes to `target_id` instead.
    pub fn transient(mut self, state_id: impl Into<String>, target_id: impl Into<String>) -> Self {
        self.transient.push((state_id.into(), target_id.into()));
        self
    }

    /// A decision function asked first; `None` falls back to the rules.
    pub fn decide(
        mut self,
        f: impl Fn(&Invocation) -> Option<InFlight> + Send + Sync + 'static,
    ) -> Self {
        self.decide = Some(Arc::new(f));
        self
    }

    /// Is `src` registered as idempotent?
    pub fn is_idempotent(&self, src: &str) -> bool {
        self.idempotent.contains(src)
    }

    /// The decision for `inv`.
    pub fn decision(&self, inv: &Invocation) -> InFlight {
        if let Some(d) = self.decide.as_ref().and_then(|f| f(inv)) {
            return d;
        }
        if let Some(s) = self.safe.get(&inv.src) {
            return InFlight::SafeState(s.clone());
        }
        if self.idempotent.contains(&inv.src) {
            return InFlight::Rerun;
        }
        InFlight::Fail(
            "its source is not registered as idempotent and has no safe state; \
             re-running it could repeat a side effect"
                .into(),
        )
    }
}

/// A migration: the document of one machine version to the next.
pub type MigrateFn = Arc<dyn Fn(Value) -> Result<Value, String> + Send + Sync>;

/// A restored chart: its snapshot, the actions that resume it, and what
/// the sanitizer decided.
#[derive(Debug)]
pub struct Restored<C> {
    /// The snapshot to resume from.
    pub snapshot: Snapshot<C>,
    /// What the interpreter carries out, in order: timers to re-arm,
    /// idempotent invocations to re-run, the effects of overdue events and
    /// safe-state entries.
    pub actions: Vec<Action>,
    /// Per in-flight invocation id, what was decided.
    pub decisions: Vec<(String, InFlight)>,
    /// The volatile fields that were dropped when persisting (JSON Pointers
    /// into the context, as recorded).
    pub volatile_missing: Vec<String>,
    /// Snapshots of child charts, by id, still persisted (restore each
    /// with its own machine).
    pub charts: Vec<(String, Value)>,
}

/// Writing and restoring snapshots of one machine. See the [module docs](self).
pub struct Persist<'m, C> {
    m: &'m Machine<C>,
    volatile: Vec<String>,
    migrations: Vec<(String, String, MigrateFn)>,
    sanitizer: Sanitizer,
    resume: Resume,
}

impl<'m, C: Clone> Persist<'m, C> {
    /// Persistence for `m`. Volatile paths declared in the root's
    /// `meta.volatile` are taken as given.
    pub fn new(m: &'m Machine<C>) -> Self {
        let mut volatile = Vec::new();
        if let Some(Value::Array(paths)) = m.state(0).meta.as_ref().and_then(|v| v.get("volatile"))
        {
            volatile.extend(paths.iter().filter_map(Value::as_str).map(str::to_string));
        }
        Persist {
            m,
            volatile,
            migrations: Vec::new(),
            sanitizer: Sanitizer::new(),
            resume: Resume::Deadline,
        }
    }

    /// Marks the context value at a JSON Pointer (`/card/number`) volatile.
    pub fn volatile(mut self, pointer: impl Into<String>) -> Self {
        self.volatile.push(pointer.into());
        self
    }

    /// Registers a migration of the document from machine version `from`
    /// to `to` (chains are followed).
    pub fn migration(
        mut self,
        from: impl Into<String>,
        to: impl Into<String>,
        f: impl Fn(Value) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Self {
        self.migrations.push((from.into(), to.into(), Arc::new(f)));
        self
    }

    /// The sanitizer used by [`restore`](Self::restore).
    pub fn sanitizer(mut self, s: Sanitizer) -> Self {
        self.sanitizer = s;
        self
    }

    /// How delayed events resume (default: their deadlines).
    pub fn resume(mut self, r: Resume) -> Self {
        self.resume = r;
        self
    }

    fn id(&self, s: StateIdx) -> Value {
        Value::String(self.m.state(s).id.to_string())
    }
}

impl<C: Clone + Serialize> Persist<'_, C> {
    /// The snapshot as a JSON document (see the [module docs](self)).
    pub fn to_value(&self, snap: &Snapshot<C>) -> Result<Value, PersistError> {
        self.to_value_with_charts(snap, Vec::new())
    }

    /// [`to_value`](Self::to_value) with child charts' persisted snapshots
    /// nested under `charts`, by id.
    pub fn to_value_with_charts(
        &self,
        snap: &Snapshot<C>,
        charts: Vec<(String, Value)>,
    ) -> Result<Value, PersistError> {
        let (context, mut secrets) = volatile::collecting(|| serde_json::to_value(&snap.context));
        let mut context = context.map_err(|e| PersistError::Context(e.to_string()))?;
        let mut dropped = Vec::new();
        for p in &self.volatile {
            if let Some(v) = take_pointer(&mut context, p) {
                if !v.is_null() {
                    secrets.push(v);
                }
                dropped.push(Value::String(p.clone()));
            }
        }
        let history: Vec<Value> = snap
            .history
            .iter()
            .map(|h| {
                json!({"history": self.id(h.history),
                       "states": h.states.iter().map(|&s| self.id(s)).collect::<Vec<_>>()})
            })
            .collect();
        let scheduled: Vec<Value> = snap
            .scheduled
            .iter()
            .map(|s| {
                let to = match &s.to {
                    SendTarget::Own => json!("own"),
                    SendTarget::Parent => json!("parent"),
                    SendTarget::Actor(a) => match s.generation {
                        Some(g) => json!({"actor": a, "generation": g}),
                        None => json!({"actor": a}),
                    },
                };
                json!({"id": s.id, "seq": s.seq, "due_ms": s.due_ms, "delay_ms": s.delay_ms,
                       "event": s.event.to_json(), "to": to})
            })
            .collect();
        let child = |i: &Invocation| {
            let mut v = json!({"id": i.id, "src": i.src, "generation": i.generation,
                               "state": i.state, "input": i.input, "started_ms": i.started_ms});
            if i.spawned {
                v["spawned"] = Value::Bool(true);
            }
            if i.unnamed {
                v["unnamed"] = Value::Bool(true);
            }
            v
        };
        let invocations: Vec<Value> = snap.invocations.iter().map(child).collect();
        let finished: Vec<Value> = snap
            .finished
            .iter()
            .map(|f| {
                let mut v = child(&f.child);
                v["status"] = json!(f.status.as_str());
                v
            })
            .collect();
        let doc = json!({
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "machine": {"id": self.m.id(), "version": self.m.version()},
            "status": snap.status.as_str(),
            "configuration": snap.config.iter().map(|s| self.id(s)).collect::<Vec<_>>(),
            "context": context,
            "volatile": dropped,
            "history": history,
            "scheduled": scheduled,
            "invocations": invocations,
            "finished": finished,
            "charts": Value::Object(charts.into_iter().collect()),
            "output": snap.output,
            "error": snap.error,
            "now_ms": snap.now_ms,
            "epoch_ms": snap.epoch_ms,
            "next_seq": snap.next_seq,
        });
        for secret in &secrets {
            if let Some(path) = find(&doc, secret, "$", true) {
                return Err(PersistError::VolatileLeak { path });
            }
        }
        Ok(doc)
    }

    /// The snapshot as JSON text.
    pub fn to_string(&self, snap: &Snapshot<C>) -> Result<String, PersistError> {
        Ok(self.to_value(snap)?.to_string())
    }
}

/// Removes the value at JSON Pointer `p`.
fn take_pointer(v: &mut Value, p: &str) -> Option<Value> {
    if p.is_empty() {
        return None;
    }
    let (parent, last) = p.rsplit_once('/')?;
    let last = last.replace("~1", "/").replace("~0", "~");
    match v.pointer_mut(parent)? {
        Value::Object(m) => m.remove(&last),
        Value::Array(a) => {
            let i: usize = last.parse().ok()?;
            (i < a.len()).then(|| std::mem::replace(&mut a[i], Value::Null))
        }
        _ => None,
    }
}

/// Where `secret` occurs in `doc` (as a whole value, or inside a string
/// when it is a string of 4 characters or more), skipping the context's
/// own `null`s. `top`: skip the `volatile` list of pointers.
fn find(doc: &Value, secret: &Value, path: &str, top: bool) -> Option<String> {
    if doc == secret && !secret.is_null() {
        return Some(path.to_string());
    }
    match (doc, secret) {
        (Value::String(s), Value::String(x))
            if x.chars().count() >= 4 && s.contains(x.as_str()) =>
        {
            Some(path.to_string())
        }
        (Value::Object(m), _) => m.iter().find_map(|(k, v)| {
            if top && k == "volatile" {
                return None;
            }
            find(v, secret, &format!("{path}.{k}"), false)
        }),
        (Value::Array(a), _) => a
            .iter()
            .enumerate()
            .find_map(|(i, v)| find(v, secret, &format!("{path}[{i}]"), false)),
        _ => None,
    }
}

// ---- reading ------------------------------------------------------------

type Obj = Map<String, Value>;

/// A read snapshot, the volatile pointers it lost, its child charts.
type Parts<C> = (Snapshot<C>, Vec<String>, Vec<(String, Value)>);

fn field<'a>(o: &'a Obj, key: &'static str, path: &str) -> Result<&'a Value, SnapshotError> {
    o.get(key)
        .ok_or_else(|| err(path, SnapshotProblem::Missing(key)))
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Obj, SnapshotError> {
    v.as_object()
        .ok_or_else(|| err(path, SnapshotProblem::WrongType("an object")))
}

fn string<'a>(v: &'a Value, path: &str) -> Result<&'a str, SnapshotError> {
    v.as_str()
        .ok_or_else(|| err(path, SnapshotProblem::WrongType("a string")))
}

fn only(o: &Obj, allowed: &[&str], path: &str) -> Result<(), SnapshotError> {
    for k in o.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(err(
                format!("{path}.{k}"),
                SnapshotProblem::UnknownField(k.clone()),
            ));
        }
    }
    Ok(())
}

/// The text as JSON, or why not (`$`: the whole document).
fn parse(text: &str) -> Result<Value, SnapshotError> {
    if text.len() > MAX_BYTES {
        return Err(err("$", SnapshotProblem::TooLarge(text.len())));
    }
    serde_json::from_str(text).map_err(|e| {
        let (line, column) = (e.line(), e.column());
        let problem = if e.is_eof() {
            SnapshotProblem::Truncated { line, column }
        } else {
            SnapshotProblem::Corrupt {
                line,
                column,
                message: e.to_string(),
            }
        };
        err("$", problem)
    })
}

/// A persisted snapshot as written (after the header check and the
/// migrations): the types of its fields, every field known. What the
/// fields mean for this machine is checked after.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    #[allow(dead_code)]
    format: IgnoredAny,
    #[allow(dead_code)]
    format_version: IgnoredAny,
    #[allow(dead_code)]
    machine: IgnoredAny,
    status: String,
    configuration: Vec<String>,
    /// Read into the context type after the configuration is checked.
    context: Value,
    volatile: Option<Vec<String>>,
    history: Vec<HistoryDoc>,
    scheduled: Vec<ScheduledDoc>,
    invocations: Vec<InvocationDoc>,
    /// Children that finished and are still listed (absent in documents
    /// written before they were kept).
    #[serde(default)]
    finished: Vec<FinishedDoc>,
    /// Written empty by earlier versions (spawned children are now
    /// invocations with `"spawned": true`); a non-empty list is refused.
    #[serde(default)]
    children: Vec<Value>,
    charts: Option<Map<String, Value>>,
    output: Option<Value>,
    error: Option<Value>,
    now_ms: u64,
    epoch_ms: Option<u64>,
    next_seq: u64,
}

/// `$.history[i]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryDoc {
    history: String,
    states: Vec<String>,
}

/// `$.scheduled[i]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduledDoc {
    id: String,
    seq: u64,
    due_ms: u64,
    #[serde(default)]
    delay_ms: u64,
    /// An XState event object, read by `Event::from_json`.
    event: Value,
    /// `"own"`, `"parent"` or `{"actor": ID}`, read after.
    to: Value,
}

/// `$.invocations[i]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InvocationDoc {
    id: String,
    src: String,
    generation: u64,
    state: String,
    #[serde(default)]
    input: Value,
    #[serde(default)]
    started_ms: u64,
    #[serde(default)]
    spawned: bool,
    #[serde(default)]
    unnamed: bool,
}

/// `$.finished[i]`: an invocation's fields and how it ended.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FinishedDoc {
    id: String,
    src: String,
    generation: u64,
    state: String,
    #[serde(default)]
    input: Value,
    #[serde(default)]
    started_ms: u64,
    #[serde(default)]
    spawned: bool,
    #[serde(default)]
    unnamed: bool,
    status: String,
}

/// Every field name of the document, for [`SnapshotProblem::Missing`].
const FIELDS: &[&str] = &[
    "format",
    "format_version",
    "machine",
    "status",
    "configuration",
    "context",
    "volatile",
    "history",
    "scheduled",
    "invocations",
    "finished",
    "children",
    "charts",
    "output",
    "error",
    "now_ms",
    "epoch_ms",
    "next_seq",
    "states",
    "id",
    "seq",
    "due_ms",
    "delay_ms",
    "event",
    "to",
    "src",
    "generation",
    "state",
    "input",
    "started_ms",
    "spawned",
    "unnamed",
];

/// The document typed, or the first field that does not fit, with its
/// JSON path.
fn typed(doc: Value) -> Result<Doc, SnapshotError> {
    serde_path_to_error::deserialize(doc).map_err(|e| {
        let p = e.path().to_string();
        let mut path = if p == "." || p.is_empty() {
            "$".to_string()
        } else {
            format!("$.{p}")
        };
        let message = e.into_inner().to_string();
        let quoted = || message.split('`').nth(1).unwrap_or_default().to_string();
        let problem = if message.starts_with("missing field") {
            let name = quoted();
            match FIELDS.iter().find(|f| **f == name) {
                Some(f) => SnapshotProblem::Missing(f),
                None => SnapshotProblem::Inconsistent(message),
            }
        } else if message.starts_with("unknown field") {
            let name = quoted();
            if !path.ends_with(&format!(".{name}")) {
                path = format!("{path}.{name}");
            }
            SnapshotProblem::UnknownField(name)
        } else {
            let expected = message.rsplit("expected ").next().unwrap_or_default();
            SnapshotProblem::WrongType(match expected {
                "u64" => "a non-negative integer",
                "a string" => "a string",
                "a sequence" => "an array",
                "a map" => "an object",
                e if e.starts_with("struct") => "an object",
                _ => "another JSON type",
            })
        };
        err(path, problem)
    })
}

impl<C: Clone + DeserializeOwned> Persist<'_, C> {
    /// Parses and checks a persisted snapshot (migrating it if needed); no
    /// sanitizing. See [`restore`](Self::restore) to resume a chart.
    pub fn read(&self, text: &str) -> Result<Snapshot<C>, SnapshotError> {
        Ok(self.read_parts(text)?.0)
    }

    fn read_parts(&self, text: &str) -> Result<Parts<C>, SnapshotError> {
        self.read_value(parse(text)?)
    }

    /// Checks the header and migrates the document to this machine's version.
    fn migrate(&self, mut doc: Value) -> Result<Value, SnapshotError> {
        let o = object(&doc, "$")?;
        if o.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(err("$.format", SnapshotProblem::NotASnapshot));
        }
        let fv = field(o, "format_version", "$")?;
        if fv.as_u64() != Some(FORMAT_VERSION) {
            return Err(err(
                "$.format_version",
                SnapshotProblem::FormatVersion {
                    found: fv.to_string(),
                },
            ));
        }
        let mach = object(field(o, "machine", "$")?, "$.machine")?;
        only(mach, &["id", "version"], "$.machine")?;
        let id = string(field(mach, "id", "$.machine")?, "$.machine.id")?;
        if id != self.m.id() {
            return Err(err(
                "$.machine.id",
                SnapshotProblem::ForeignMachine {
                    found: id.to_string(),
                    expected: self.m.id().to_string(),
                },
            ));
        }
        let version = |doc: &Value| -> Result<Option<String>, SnapshotError> {
            match doc.pointer("/machine/version") {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(err(
                    "$.machine.version",
                    SnapshotProblem::WrongType("a string or null"),
                )),
            }
        };
        let expected = self.m.version().map(str::to_string);
        let mut found = version(&doc)?;
        let mut steps = 0;
        while found != expected {
            let Some((from, to, f)) = self
                .migrations
                .iter()
                .find(|(from, _, _)| Some(from) == found.as_ref())
                .filter(|_| steps < self.migrations.len())
            else {
                return Err(err(
                    "$.machine.version",
                    SnapshotProblem::ForeignVersion {
                        found: version(&doc)?,
                        expected,
                    },
                ));
            };
            doc = f(doc).map_err(|message| {
                err(
                    "$",
                    SnapshotProblem::Migration {
                        from: from.clone(),
                        to: to.clone(),
                        message,
                    },
                )
            })?;
            // The migration says where it led, whatever the function wrote.
            if let Some(m) = doc.get_mut("machine").and_then(Value::as_object_mut) {
                m.insert("version".into(), Value::String(to.clone()));
            } else {
                return Err(err("$.machine", SnapshotProblem::Missing("machine")));
            }
            found = Some(to.clone());
            steps += 1;
        }
        Ok(doc)
    }

    fn state(&self, id: &str, path: &str) -> Result<StateIdx, SnapshotError> {
        let s = self
            .m
            .state_by_id(id)
            .ok_or_else(|| err(path, SnapshotProblem::UnknownState(id.to_string())))?;
        Ok(s)
    }

    fn read_value(&self, doc: Value) -> Result<Parts<C>, SnapshotError> {
        let doc: Doc = typed(self.migrate(doc)?)?;
        let m = self.m;
        let status = match doc.status.as_str() {
            "active" => Status::Active,
            "done" => Status::Done,
            "error" => Status::Error,
            "stopped" => Status::Stopped,
            other => {
                return Err(err(
                    "$.status",
                    SnapshotProblem::Inconsistent(format!(
                        "unknown status {other:?} (active, done, error or stopped)"
                    )),
                ))
            }
        };
        let next_seq = doc.next_seq;

        // The configuration: known, non-history states forming a legal
        // configuration of this machine.
        let mut config = StateSet::with_states(m.states().len());
        for (i, id) in doc.configuration.iter().enumerate() {
            let path = format!("$.configuration[{i}]");
            let s = self.state(id, &path)?;
            if m.state(s).is_history() {
                return Err(err(
                    path,
                    SnapshotProblem::Inconsistent(format!(
                        "{:?} is a history state; it is never active",
                        &*m.state(s).id
                    )),
                ));
            }
            if !config.insert(s) {
                return Err(err(
                    path,
                    SnapshotProblem::Inconsistent(format!("{:?} is listed twice", &*m.state(s).id)),
                ));
            }
        }
        self.check_configuration(&config, status)?;

        let context: C = serde_path_to_error::deserialize(doc.context).map_err(|e| {
            let p = e.path().to_string();
            let path = if p == "." || p.is_empty() {
                "$.context".to_string()
            } else {
                format!("$.context.{p}")
            };
            err(path, SnapshotProblem::Context(e.into_inner().to_string()))
        })?;

        let mut history = Vec::new();
        for (i, h) in doc.history.iter().enumerate() {
            let path = format!("$.history[{i}]");
            let hp = format!("{path}.history");
            let hs = self.state(&h.history, &hp)?;
            let StateKind::History { .. } = m.state(hs).kind else {
                return Err(err(
                    hp,
                    SnapshotProblem::Inconsistent(format!(
                        "{:?} is not a history state",
                        &*m.state(hs).id
                    )),
                ));
            };
            if history.iter().any(|e: &HistoryEntry| e.history == hs) {
                return Err(err(
                    hp,
                    SnapshotProblem::Inconsistent("a history state recorded twice".into()),
                ));
            }
            let parent = m.state(hs).parent.unwrap_or(0);
            let mut states = Vec::new();
            for (j, id) in h.states.iter().enumerate() {
                let p = format!("{path}.states[{j}]");
                let s = self.state(id, &p)?;
                if !m.is_descendant(s, parent) || m.state(s).is_history() {
                    return Err(err(
                        p,
                        SnapshotProblem::Inconsistent(format!(
                            "{:?} is not a state the history of {:?} can remember",
                            &*m.state(s).id,
                            &*m.state(parent).id
                        )),
                    ));
                }
                states.push(s);
            }
            history.push(HistoryEntry {
                history: hs,
                states,
            });
        }

        let mut scheduled = Vec::new();
        for (i, d) in doc.scheduled.into_iter().enumerate() {
            let path = format!("$.scheduled[{i}]");
            let (id, seq) = (d.id, d.seq);
            if seq >= next_seq {
                return Err(err(
                    format!("{path}.seq"),
                    SnapshotProblem::Inconsistent(format!(
                        "sequence number {seq} was never issued (next_seq is {next_seq})"
                    )),
                ));
            }
            let event = Event::from_json(&d.event).map_err(|e| {
                err(
                    format!("{path}.event"),
                    SnapshotProblem::Inconsistent(e.to_string()),
                )
            })?;
            // A send to an actor may carry the invocation start it is
            // bound to: `{"actor": ID, "generation": G}`.
            let bound = |t: &serde_json::Map<String, Value>| match t.get("generation") {
                None => Some(None),
                Some(g) => g.as_u64().map(Some),
            };
            let (to, generation) = match d.to {
                Value::String(s) if s == "own" => (SendTarget::Own, None),
                Value::String(s) if s == "parent" => (SendTarget::Parent, None),
                Value::Object(t)
                    if t.get("actor").is_some_and(Value::is_string)
                        && t.keys().all(|k| k == "actor" || k == "generation")
                        && bound(&t).is_some() =>
                {
                    let g = bound(&t).flatten();
                    (
                        SendTarget::Actor(t["actor"].as_str().unwrap_or_default().to_string()),
                        g,
                    )
                }
                _ => {
                    return Err(err(
                        format!("{path}.to"),
                        SnapshotProblem::WrongType(
                            "\"own\", \"parent\" or {\"actor\": ID, \"generation\"?: N}",
                        ),
                    ))
                }
            };
            if scheduled
                .iter()
                .any(|x: &Scheduled| x.id == id || x.seq == seq)
            {
                return Err(err(
                    path,
                    SnapshotProblem::Inconsistent(format!(
                        "two delayed events share id {id:?} or sequence number {seq}"
                    )),
                ));
            }
            scheduled.push(Scheduled {
                id,
                seq,
                due_ms: d.due_ms,
                delay_ms: d.delay_ms,
                event,
                to,
                generation,
            });
        }

        if !doc.children.is_empty() {
            return Err(err(
                "$.children",
                SnapshotProblem::Inconsistent(
                    "spawned children are listed in invocations (\"spawned\": true)".into(),
                ),
            ));
        }
        let mut invocations: Vec<Invocation> = Vec::new();
        for (i, d) in doc.invocations.into_iter().enumerate() {
            let path = format!("$.invocations[{i}]");
            let taken = invocations.iter().map(|x| x.id.as_str());
            let inv = self.child_doc(&path, &config, next_seq, taken, d)?;
            invocations.push(inv);
        }
        let mut finished: Vec<Finished> = Vec::new();
        for (i, d) in doc.finished.into_iter().enumerate() {
            let path = format!("$.finished[{i}]");
            let status = match d.status.as_str() {
                "done" => Status::Done,
                "error" => Status::Error,
                "stopped" => Status::Stopped,
                other => {
                    return Err(err(
                        format!("{path}.status"),
                        SnapshotProblem::Inconsistent(format!(
                            "a finished child is done, error or stopped, not {other:?}"
                        )),
                    ))
                }
            };
            let taken = invocations
                .iter()
                .map(|x| x.id.as_str())
                .chain(finished.iter().map(|f| f.child.id.as_str()));
            let d = InvocationDoc {
                id: d.id,
                src: d.src,
                generation: d.generation,
                state: d.state,
                input: d.input,
                started_ms: d.started_ms,
                spawned: d.spawned,
                unnamed: d.unnamed,
            };
            let child = self.child_doc(&path, &config, next_seq, taken, d)?;
            finished.push(Finished { child, status });
        }

        let mut charts = Vec::new();
        for (k, v) in doc.charts.unwrap_or_default() {
            if v.get("format").and_then(Value::as_str) != Some(FORMAT) {
                return Err(err(
                    format!("$.charts.{k}.format"),
                    SnapshotProblem::NotASnapshot,
                ));
            }
            charts.push((k, v));
        }
        let snap = Snapshot {
            status,
            config,
            context,
            history: history.into(),
            output: doc.output.map(Box::new),
            error: doc.error.map(Box::new),
            scheduled: scheduled.into(),
            invocations: invocations.into(),
            finished: finished.into(),
            now_ms: doc.now_ms,
            next_seq,
            machine_version: m.version().map(str::to_string),
            epoch_ms: doc.epoch_ms,
            has_parent: false,
        };
        Ok((snap, doc.volatile.unwrap_or_default(), charts))
    }

    /// One listed child (`$.invocations[i]` or `$.finished[i]`): its
    /// generation was issued, an invoked one is declared by an active state
    /// (a spawned one names no state), and its id is not listed before.
    fn child_doc<'a>(
        &self,
        path: &str,
        config: &StateSet,
        next_seq: u64,
        mut taken: impl Iterator<Item = &'a str>,
        d: InvocationDoc,
    ) -> Result<Invocation, SnapshotError> {
        let m = self.m;
        let (id, src, generation) = (d.id, d.src, d.generation);
        if generation >= next_seq {
            return Err(err(
                format!("{path}.generation"),
                SnapshotProblem::Inconsistent(format!(
                    "generation {generation} was never issued (next_seq is {next_seq})"
                )),
            ));
        }
        let sp = format!("{path}.state");
        let state = if d.spawned {
            if !d.state.is_empty() {
                return Err(err(
                    sp,
                    SnapshotProblem::Inconsistent(
                        "a spawned child is tied to no state (\"state\": \"\")".into(),
                    ),
                ));
            }
            String::new()
        } else {
            let state = self.state(&d.state, &sp)?;
            let declared = m
                .state(state)
                .invoke
                .iter()
                .any(|inv| *inv.id == id && *inv.src == src);
            if !declared {
                return Err(err(
                    sp,
                    SnapshotProblem::Inconsistent(format!(
                        "state {:?} invokes no {src:?} as {id:?}",
                        &*m.state(state).id
                    )),
                ));
            }
            if !config.contains(state) {
                return Err(err(
                    sp,
                    SnapshotProblem::Inconsistent(format!(
                        "state {:?} is not active, so nothing it invoked can be in flight",
                        &*m.state(state).id
                    )),
                ));
            }
            m.state(state).id.to_string()
        };
        if taken.any(|t| t == id) {
            return Err(err(
                format!("{path}.id"),
                SnapshotProblem::Inconsistent(format!("child {id:?} listed twice")),
            ));
        }
        Ok(Invocation {
            id,
            src,
            generation,
            state,
            spawned: d.spawned,
            unnamed: d.spawned && d.unnamed,
            input: d.input,
            started_ms: d.started_ms,
        })
    }

    /// A legal configuration: the root and every active state's parent are
    /// active, a compound state has exactly one active child, a parallel
    /// state all its regions, and an atomic state is where it ends.
    fn check_configuration(&self, config: &StateSet, status: Status) -> Result<(), SnapshotError> {
        let m = self.m;
        let bad = |msg: String| err("$.configuration", SnapshotProblem::Inconsistent(msg));
        if config.is_empty() {
            return if status == Status::Active {
                Err(bad("an active chart has at least its root state".into()))
            } else {
                Ok(())
            };
        }
        if !config.contains(0) {
            return Err(bad(format!("the root {:?} is not listed", m.id())));
        }
        for s in config.iter() {
            let node = m.state(s);
            if let Some(p) = node.parent {
                if !config.contains(p) {
                    return Err(bad(format!(
                        "{:?} is active but its parent {:?} is not",
                        &*node.id,
                        &*m.state(p).id
                    )));
                }
            }
            let active: Vec<StateIdx> = node
                .children
                .iter()
                .copied()
                .filter(|&c| config.contains(c))
                .collect();
            match node.kind {
                StateKind::Compound if active.len() != 1 => {
                    return Err(bad(format!(
                        "compound state {:?} has {} active children (exactly one is needed)",
                        &*node.id,
                        active.len()
                    )))
                }
                StateKind::Parallel => {
                    if let Some(&r) = node
                        .children
                        .iter()
                        .find(|&&c| !m.state(c).is_history() && !config.contains(c))
                    {
                        return Err(bad(format!(
                            "parallel state {:?} is active but its region {:?} is not",
                            &*node.id,
                            &*m.state(r).id
                        )));
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Reads a persisted snapshot and resumes it at `at`: the chart's clock
    /// now (a plain `u64` of ms, on the same clock as the snapshot's) or a
    /// [`Clock`] that also says when that clock read 0, so a snapshot
    /// written by another process comes back with its deadlines in place.
    /// See the [module docs](self) for the order of things. Nothing is
    /// half-restored: any error leaves no chart.
    pub fn restore(&self, text: &str, at: impl Into<Clock>) -> Result<Restored<C>, RestoreError> {
        let (snap, volatile_missing, charts) = self.read_parts(text)?;
        let mut r = self.restore_snapshot(snap, at)?;
        r.volatile_missing = volatile_missing;
        r.charts = charts;
        Ok(r)
    }
}

impl<C: Clone> Persist<'_, C> {
    /// [`restore`](Persist::restore) from a snapshot already read (one kept
    /// with serde, say): the same resume, with no document to check.
    pub fn restore_snapshot(
        &self,
        snapshot: Snapshot<C>,
        at: impl Into<Clock>,
    ) -> Result<Restored<C>, RestoreError> {
        let mut tree = Tree::bare(snapshot);
        let (actions, decisions) = self.resume_tree(&mut tree, at.into(), &mut |_, _, a| Ok(a))?;
        Ok(Restored {
            snapshot: tree.root,
            actions: actions.into_iter().map(|t| t.action).collect(),
            decisions: decisions.into_iter().map(|(_, id, d)| (id, d)).collect(),
            volatile_missing: Vec::new(),
            charts: Vec::new(),
        })
    }
}

/// Moves a time of a resumed chart by `shift` ms onto the restoring clock.
/// A deadline still pending is later than the restore, so it stays
/// positive; only past times (when an invocation started) can clamp at 0.
fn shifted(t: u64, shift: i128) -> u64 {
    u64::try_from((i128::from(t) + shift).max(0)).unwrap_or(u64::MAX)
}

/// Moves every time of a resumed chart by `shift` ms (see [`shifted`]).
fn rebase<C>(snap: &mut Snapshot<C>, shift: i128) {
    if shift == 0 {
        return;
    }
    snap.now_ms = shifted(snap.now_ms, shift);
    for s in &mut snap.scheduled {
        s.due_ms = shifted(s.due_ms, shift);
    }
    for i in &mut snap.invocations {
        i.started_ms = shifted(i.started_ms, shift);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{initial_transition, load_json, stdlib, transition};

    fn machine(version: Option<&str>) -> Machine<Value> {
        let v = version.map_or(String::new(), |v| format!(r#""version": "{v}","#));
        load_json(
            &format!(
                r#"{{"id": "m", {v} "initial": "a", "context": {{"n": 0}},
                "states": {{
                  "a": {{"on": {{"GO": "b"}}, "entry": {{"type": "inc", "params": {{"key": "n"}}}}}},
                  "b": {{"after": {{"2000": "c"}}, "on": {{"BACK": "a"}}}},
                  "c": {{}}
                }}}}"#
            ),
            &stdlib::implementations(),
        )
        .unwrap()
    }

    #[test]
    fn round_trip_keeps_everything_and_runs_no_entry_action() {
        let m = machine(Some("1"));
        let (s0, _) = initial_transition(&m).unwrap();
        let (s1, _) = transition(&m, &s0, Event::new("GO")).unwrap();
        let p = Persist::new(&m);
        let text = p.to_string(&s1).unwrap();
        let back = p.read(&text).unwrap();
        assert_eq!(back, s1);
        let r = p.restore(&text, s1.now_ms).unwrap();
        assert_eq!(r.snapshot.context["n"], 1, "entry of a not re-run");
        assert_eq!(
            r.actions,
            vec![Action::Schedule {
                id: "xstate.after.2000.m.b".into(),
                seq: s1.scheduled[0].seq,
                due_ms: 2000
            }]
        );
    }

    #[test]
    fn overdue_events_fire_at_their_deadline_and_options_change_that() {
        let m = machine(None);
        let (s0, _) = initial_transition(&m).unwrap();
        let (s1, _) = transition(&m, &s0, Event::new("GO")).unwrap();
        let p = Persist::new(&m);
        let text = p.to_string(&s1).unwrap();
        let r = p.restore(&text, 10_000).unwrap();
        assert_eq!(r.snapshot.value(&m).to_json(), "c");
        assert_eq!(r.snapshot.now_ms, 10_000);
        let r = Persist::new(&m)
            .resume(Resume::Remaining)
            .restore(&text, 10_000)
            .unwrap();
        assert_eq!(r.snapshot.value(&m).to_json(), "b");
        assert_eq!(r.snapshot.scheduled[0].due_ms, 12_000);
        let r = Persist::new(&m)
            .resume(Resume::Restart)
            .restore(&text, 10_000)
            .unwrap();
        assert_eq!(r.snapshot.scheduled[0].due_ms, 12_000);
    }

    /// A snapshot written in one process (epoch E1) restored in another
    /// (epoch E2, clock from 0): the deadline stays at the same wall-clock
    /// time, an overdue one fires during the restore, once.
    #[test]
    fn another_process_keeps_wall_clock_deadlines() {
        const E1: u64 = 1_700_000_000_000;
        let m = machine(None);
        let (mut s0, _) = initial_transition(&m).unwrap();
        s0.epoch_ms = Some(E1);
        let (s1, _) = transition(&m, &s0, Event::new("GO")).unwrap();
        let mut s1 = s1;
        s1.now_ms = 1500; // persisted 1.5 s after GO: the event is due at E1 + 2000
        let p = Persist::new(&m);
        let text = p.to_string(&s1).unwrap();
        assert!(text.contains(&format!("\"epoch_ms\":{E1}")), "{text}");
        // Process 2 started at E1 + 1700; restored at its 100 ms: 200 ms left.
        let e2 = E1 + 1700;
        let r = p.restore(&text, Clock::new(100, Some(e2))).unwrap();
        assert_eq!(r.snapshot.value(&m).to_json(), "b");
        assert_eq!(r.snapshot.epoch_ms, Some(e2));
        assert_eq!(r.snapshot.now_ms, 100);
        assert_eq!(r.snapshot.scheduled[0].due_ms, 300);
        assert_eq!(e2 + 300, E1 + 2000, "the same wall-clock deadline");
        assert_eq!(
            r.actions,
            vec![Action::Schedule {
                id: "xstate.after.2000.m.b".into(),
                seq: s1.scheduled[0].seq,
                due_ms: 300
            }]
        );
        // Restored after the deadline: it fires during the restore, and
        // nothing is left to fire again.
        let r = p.restore(&text, Clock::new(50, Some(E1 + 9000))).unwrap();
        assert_eq!(r.snapshot.value(&m).to_json(), "c");
        assert!(r.snapshot.scheduled.is_empty());
        assert!(r
            .actions
            .iter()
            .all(|a| !matches!(a, Action::Schedule { .. })));
        assert_eq!(r.snapshot.now_ms, 50);
        // A process whose clock started before the snapshot's: times move
        // the other way.
        let r = p.restore(&text, Clock::new(4800, Some(E1 - 3000))).unwrap();
        assert_eq!(r.snapshot.scheduled[0].due_ms, 5000);
        // A wall clock set back: no time has passed, 500 ms still left.
        let r = p.restore(&text, Clock::new(10, Some(E1))).unwrap();
        assert_eq!(r.snapshot.scheduled[0].due_ms, 510);
        // Without the restoring clock's epoch: the same clock as the
        // snapshot's (the old rule), its epoch kept.
        let r = p.restore(&text, 1900).unwrap();
        assert_eq!(r.snapshot.scheduled[0].due_ms, 2000);
        assert_eq!(r.snapshot.epoch_ms, Some(E1));
        // Remaining time is relative to the restore either way.
        let r = Persist::new(&m)
            .resume(Resume::Remaining)
            .restore(&text, Clock::new(100, Some(E1 + 60_000)))
            .unwrap();
        assert_eq!(r.snapshot.scheduled[0].due_ms, 600);
    }

    #[test]
    fn epoch_is_checked_when_read() {
        let m = machine(None);
        let (s, _) = initial_transition(&m).unwrap();
        let p = Persist::new(&m);
        let mut doc = p.to_value(&s).unwrap();
        assert_eq!(doc["epoch_ms"], Value::Null);
        doc["epoch_ms"] = json!("soon");
        let e = p.read(&doc.to_string()).unwrap_err();
        assert_eq!(e.path, "$.epoch_ms");
        doc["epoch_ms"] = json!(12);
        assert_eq!(p.read(&doc.to_string()).unwrap().epoch_ms, Some(12));
    }

    #[test]
    fn foreign_version_needs_a_migration() {
        let v1 = machine(Some("1"));
        let v2 = machine(Some("2"));
        let (s, _) = initial_transition(&v1).unwrap();
        let text = Persist::new(&v1).to_string(&s).unwrap();
        let e = Persist::new(&v2).read(&text).unwrap_err();
        assert_eq!(e.path, "$.machine.version");
        assert!(matches!(e.problem, SnapshotProblem::ForeignVersion { .. }));
        let p = Persist::new(&v2).migration("1", "2", |mut doc| {
            doc["context"]["n"] = json!(41);
            Ok(doc)
        });
        assert_eq!(p.read(&text).unwrap().context["n"], 41);
        let failing = Persist::new(&v2).migration("1", "2", |_| Err("no".into()));
        assert!(matches!(
            failing.read(&text).unwrap_err().problem,
            SnapshotProblem::Migration { .. }
        ));
    }

    #[test]
    fn volatile_paths_never_reach_the_document() {
        let m = machine(None);
        let (mut s, _) = initial_transition(&m).unwrap();
        s.context["card"] = json!({"number": "4111111111111111", "exp": "12/30"});
        let p = Persist::new(&m).volatile("/card/number");
        let text = p.to_string(&s).unwrap();
        assert!(!text.contains("4111111111111111"));
        let r = p.restore(&text, 0).unwrap();
        assert!(volatile::is_missing_at(&r.snapshot.context, "/card/number"));
        assert_eq!(r.snapshot.context["card"]["exp"], "12/30");
        assert_eq!(r.volatile_missing, vec!["/card/number".to_string()]);
        // A copy elsewhere is refused, not scrubbed.
        s.scheduled.push(Scheduled {
            id: "x".into(),
            seq: 0,
            due_ms: 5,
            delay_ms: 5,
            event: Event::with_data("E", json!({"card": "4111111111111111"})),
            to: SendTarget::Own,
            generation: None,
        });
        assert_eq!(
            p.to_string(&s).unwrap_err(),
            PersistError::VolatileLeak {
                path: "$.scheduled[0].event.card".into()
            }
        );
    }
}
