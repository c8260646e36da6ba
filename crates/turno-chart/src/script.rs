//! What `turno chart run` runs for an XState JSON machine: the initial
//! state, then each item (an external event, or virtual time passing),
//! one [`Line`] per item. The EVENTS file, its items and its output lines
//! are the command's contract, written once in
//! `crates/turno-cli/src/events.rs` (`turno chart run --help`); here items
//! are already typed ([`Item`]).
//!
//! - An [`Item::Advance`] fires the due delayed events in deadline order,
//!   each at its own deadline.
//! - With persistence ([`run_persisted`], `--persist-at K
//!   --restore-after-ms D`): after K items the chart is persisted, dropped,
//!   D ms pass, and a restored chart goes on; the output is exactly that of
//!   the run with `Item::Advance(D)` inserted after the first K items.
//!
//! The standard actors (invoked, or spawned with `spawnChild`) settle right
//! after the step that started them, in the order they were started (as
//! XState's promise actors do before the next event): `echo` with its input
//! as output, `reject` with its input as error, `never` not at all. The
//! callback actor `mirror` sends every event it receives back to the chart
//! that started it, its type suffixed with `.mirrored`, before promises
//! settle (XState's `sendBack` is synchronous).

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::actions::Action;
use crate::algorithm::ChartError;
use crate::event::Event;
use crate::machine::Machine;
use crate::persist::{Clock, Persist, PersistError, RestoreError, Sanitizer};
use crate::snapshot::{StateValue, Status};
use crate::tree::{Charts, Path, Tagged, Tree};

/// One output line: `{"step", "value", "status"}`, then `error` when the
/// status is `error`, then the fields [`Show`] asks for, in this order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Line {
    /// 0 for the initial state, then one per item.
    pub step: usize,
    /// XState's `snapshot.value`.
    pub value: StateValue,
    /// `active`, `done` (or `error`, `stopped`).
    pub status: &'static str,
    /// Why the chart failed (status `error`): the failed action's message
    /// (`Unable to send event to actor 'kid' from machine 'parent'.`) or
    /// the error of an invocation nobody handled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    /// `--show context`: the root chart's context after the item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    /// `--show emitted`: the events the root chart emitted during the item
    /// (`emit`), in order, as XState event objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emitted: Option<Vec<Value>>,
    /// `--show log`: the root chart's log messages during the item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<Vec<String>>,
    /// `--show children`: the root's children by id, as XState lists them
    /// (see [`Child`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<BTreeMap<String, Child>>,
}

/// A child as `--show children` prints it: one in flight (invoked, or
/// spawned by `spawnChild`), or one that finished and XState still lists
/// (an invoked one until its state is left, a spawned one until
/// `stopChild`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Child {
    /// The actor logic's name (`invoke.src`, `spawnChild`'s `src`).
    pub src: String,
    /// `active`, `done` or `error` (a finished child).
    pub status: &'static str,
    /// A child chart's state value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<StateValue>,
    /// A child chart's context.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    /// A child chart's own children, when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub children: Option<BTreeMap<String, Child>>,
}

/// Which fields each [`Line`] shows beyond step, value and status
/// (`turno chart run --show context,emitted,log,children`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Show {
    /// The context.
    pub context: bool,
    /// The events emitted during the item.
    pub emitted: bool,
    /// The log messages of the item.
    pub log: bool,
    /// The running children.
    pub children: bool,
}

impl Show {
    /// Every field.
    pub const ALL: Show = Show {
        context: true,
        emitted: true,
        log: true,
        children: true,
    };

    /// Parses a comma-separated list of `context`, `emitted`, `log`,
    /// `children` (the `--show` argument).
    pub fn parse(list: &str) -> Result<Show, String> {
        let mut show = Show::default();
        for field in list.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            match field {
                "context" => show.context = true,
                "emitted" => show.emitted = true,
                "log" => show.log = true,
                "children" => show.children = true,
                other => {
                    return Err(format!(
                        "unknown field {other:?} (expected context, emitted, log or children)"
                    ))
                }
            }
        }
        Ok(show)
    }
}

/// One item of a script: an external event, or virtual time passing
/// (the steps of a [`paths`](crate::paths) path are the same items).
pub use crate::paths::PathStep as Item;

/// Why a script could not run.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The chart ran away.
    #[error("events[{index}]: {source}")]
    Chart {
        /// The item being processed (`None`: the initial state).
        index: usize,
        /// The error.
        source: ChartError,
    },
    /// The initial state ran away.
    #[error("initial state: {0}")]
    Initial(ChartError),
    /// `--persist-at` is past the end of the events.
    #[error("--persist-at {k}: the events have only {len} items")]
    PersistAt {
        /// K.
        k: usize,
        /// How many items there are.
        len: usize,
    },
    /// The snapshot could not be written.
    #[error("persisting: {0}")]
    Persist(PersistError),
    /// The snapshot could not be restored.
    #[error("restoring: {0}")]
    Restore(RestoreError),
}

/// Invocations of the standard actors waiting to settle: where, which.
type Settling = VecDeque<(Path, String, String, Value, u64)>;

struct Runner<'m> {
    m: &'m Machine<Value>,
    tree: Tree<Value>,
    settling: Settling,
    seen: Seen,
}

/// What the root emitted and logged since the last line (as far as
/// [`Show`] asks for them), and the callback actors (`mirror`) running
/// with the events they sent back and the chart has not yet taken.
#[derive(Default)]
struct Seen {
    show: Show,
    emitted: Vec<Value>,
    log: Vec<String>,
    /// Running `mirror` invocations: the chart that invoked each, its id
    /// and generation.
    mirrors: Vec<(Path, String, u64)>,
    /// Events a callback actor sent back, for the chart at each path.
    mailbox: VecDeque<(Path, Event)>,
}

/// Takes note of the standard actors started (and stopped) by `actions`,
/// and of what the root emitted and logged; the rest is of no interest to
/// a script.
fn note(settling: &mut Settling, seen: &mut Seen, actions: Vec<Tagged>) {
    for t in actions {
        match t.action {
            Action::Emit { event } if t.path.is_empty() && seen.show.emitted => {
                seen.emitted.push(event.to_json())
            }
            Action::Log { message } if t.path.is_empty() && seen.show.log => seen.log.push(message),
            Action::StartInvoke {
                id,
                src,
                generation,
                ..
            } if src == "mirror" => {
                seen.mirrors.push((t.path, id, generation));
            }
            Action::StartInvoke {
                id,
                src,
                input,
                generation,
            } if src != "never" => {
                settling.push_back((t.path, id, src, input, generation));
            }
            Action::StopInvoke { id, generation } => {
                settling.retain(|s| !(s.0 == t.path && s.1 == id && s.4 == generation));
                seen.mirrors
                    .retain(|s| !(s.0 == t.path && s.1 == id && s.2 == generation));
            }
            // A callback actor's `receive`: `mirror` sends the event back
            // at once, its type suffixed, to the chart's mailbox.
            Action::SendTo { to, event }
                if seen.mirrors.iter().any(|s| s.0 == t.path && s.1 == to) =>
            {
                let back =
                    Event::with_data(format!("{}.mirrored", event.name()), event.data().clone());
                seen.mailbox.push_back((t.path, back));
            }
            _ => {}
        }
    }
}

/// Settles the standard actors in the order they started, and what their
/// results start in turn.
fn settle(
    m: &Machine<Value>,
    tree: &mut Tree<Value>,
    settling: &mut Settling,
    seen: &mut Seen,
) -> Result<(), ChartError> {
    loop {
        // What callback actors sent back is queued for the chart before
        // promises settle (XState's `sendBack` is synchronous).
        if let Some((path, event)) = seen.mailbox.pop_front() {
            let actions = tree.event(m, &path, event)?;
            note(settling, seen, actions);
            continue;
        }
        let Some((path, id, src, input, generation)) = settling.pop_front() else {
            break;
        };
        let result = if src == "reject" {
            Err(input)
        } else {
            Ok(input)
        };
        let (_, actions) = tree.done(m, &path, &id, generation, result)?;
        note(settling, seen, actions);
    }
    Ok(())
}

impl Runner<'_> {
    fn absorb(&mut self, actions: Vec<Tagged>) {
        note(&mut self.settling, &mut self.seen, actions);
    }

    fn settle(&mut self) -> Result<(), ChartError> {
        settle(self.m, &mut self.tree, &mut self.settling, &mut self.seen)
    }

    fn line(&mut self, step: usize) -> Line {
        let snap = self.tree.root();
        let show = self.seen.show;
        Line {
            step,
            value: snap.value(self.m),
            status: snap.status.as_str(),
            error: (snap.status == Status::Error)
                .then(|| snap.error.as_deref().cloned().unwrap_or(Value::Null)),
            context: show.context.then(|| snap.context.clone()),
            emitted: show.emitted.then(|| std::mem::take(&mut self.seen.emitted)),
            log: show.log.then(|| std::mem::take(&mut self.seen.log)),
            children: show.children.then(|| children(&self.tree, &[])),
        }
    }
}

/// The children of the chart at `path` as XState's `snapshot.children`
/// lists them: those in flight, invoked or spawned, and those that
/// finished and are still listed (a child chart with its value, context and
/// own children).
fn children(tree: &Tree<Value>, path: &[String]) -> BTreeMap<String, Child> {
    let mut out = BTreeMap::new();
    let Some(snap) = (if path.is_empty() {
        Some(tree.root())
    } else {
        tree.child(path)
    }) else {
        return out;
    };
    let listed = snap
        .invocations
        .iter()
        .map(|i| (i, Status::Active))
        .chain(snap.finished.iter().map(|f| (&f.child, f.status)));
    for (inv, status) in listed {
        let mut at = path.to_vec();
        at.push(inv.id.clone());
        let child = match (tree.child(&at), tree.child_machine(&at)) {
            (Some(s), Some(m)) => {
                let kids = children(tree, &at);
                Child {
                    src: inv.src.clone(),
                    status: s.status.as_str(),
                    value: Some(s.value(m)),
                    context: Some(s.context.clone()),
                    children: (!kids.is_empty()).then_some(kids),
                }
            }
            _ => Child {
                src: inv.src.clone(),
                status: status.as_str(),
                value: None,
                context: None,
                children: None,
            },
        };
        out.insert(inv.id.clone(), child);
    }
    out
}

/// Runs `items` (the parsed EVENTS file) against `m`; one line per item
/// after the initial one.
pub fn run(m: &Machine<Value>, items: &[Item]) -> Result<Vec<Line>, ScriptError> {
    Ok(run_persisted(m, items, None)?.lines)
}

/// [`run`] with invoked child charts ([`tree`](crate::tree)): an
/// `invoke.src` named in `charts` starts that chart.
pub fn run_with(
    m: &Machine<Value>,
    charts: Arc<Charts<Value>>,
    items: &[Item],
) -> Result<Vec<Line>, ScriptError> {
    Ok(run_persisted_with(m, charts, items, None)?.lines)
}

/// Where `turno chart run --persist-at K --restore-after-ms D` persists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PersistAt {
    /// After how many items (0: right after the start).
    pub after_items: usize,
    /// How long no actor is alive, in virtual milliseconds.
    pub restore_after_ms: u64,
}

/// What a run with persistence produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Persisted {
    /// The output lines (one more than the items: the restore step).
    pub lines: Vec<Line>,
    /// The snapshot taken, as JSON text (see [`persist`](crate::persist)).
    pub snapshot: Option<String>,
}

/// How `turno chart run` resumes a persisted chart: the standard actors
/// are pure (`echo`, `reject`, `never`), so re-running one is safe.
pub fn sanitizer() -> Sanitizer {
    Sanitizer::new()
        .idempotent("echo")
        .idempotent("reject")
        .idempotent("never")
        .idempotent("mirror")
}

/// [`run`], optionally persisting after `at.after_items` items: the chart
/// is written to JSON, dropped, `at.restore_after_ms` of virtual time pass
/// with no chart alive, and a new chart restored from the JSON goes on with
/// the remaining items. The output is that of the same run with
/// `Item::Advance(D)` inserted after the first K items: the restore step
/// is one line, and delayed events keep their absolute deadlines.
pub fn run_persisted(
    m: &Machine<Value>,
    items: &[Item],
    at: Option<PersistAt>,
) -> Result<Persisted, ScriptError> {
    run_persisted_with(m, Arc::new(Charts::new()), items, at)
}

/// [`run_persisted`] with invoked child charts: the snapshot holds the
/// whole tree (each running child's under `charts.<invocation id>`) and the
/// restore brings every child back in the state it was in.
pub fn run_persisted_with(
    m: &Machine<Value>,
    charts: Arc<Charts<Value>>,
    items: &[Item],
    at: Option<PersistAt>,
) -> Result<Persisted, ScriptError> {
    run_shown(m, charts, items, at, Show::default())
}

/// [`run_persisted_with`], each line showing what `show` asks for
/// (`turno chart run --show`). Across a persist the emitted events and log
/// messages of the restore (overdue events firing) belong to its line.
pub fn run_shown(
    m: &Machine<Value>,
    charts: Arc<Charts<Value>>,
    items: &[Item],
    at: Option<PersistAt>,
    show: Show,
) -> Result<Persisted, ScriptError> {
    let parsed = items;
    if let Some(at) = at {
        if at.after_items > parsed.len() {
            return Err(ScriptError::PersistAt {
                k: at.after_items,
                len: parsed.len(),
            });
        }
    }
    let (tree, actions) = Tree::start(m, charts, 0).map_err(ScriptError::Initial)?;
    let mut r = Runner {
        m,
        tree,
        settling: VecDeque::new(),
        seen: Seen {
            show,
            ..Seen::default()
        },
    };
    r.absorb(actions);
    r.settle().map_err(ScriptError::Initial)?;
    let mut out = vec![r.line(0)];
    let mut snapshot = None;
    let mut step = 0;
    for (index, item) in parsed.iter().enumerate() {
        if let Some(at) = at.filter(|a| a.after_items == index) {
            let (restored, text) = r.persist_and_restore(at.restore_after_ms)?;
            r = restored;
            snapshot = Some(text);
            step += 1;
            out.push(r.line(step));
        }
        let res = match item {
            Item::Event(e) => r
                .tree
                .event(m, &[], e.clone())
                .map(|actions| r.absorb(actions))
                .and_then(|()| r.settle()),
            Item::Advance(ms) => r.advance(*ms),
        };
        res.map_err(|source| ScriptError::Chart { index, source })?;
        step += 1;
        out.push(r.line(step));
    }
    if let Some(at) = at.filter(|a| a.after_items == items.len()) {
        let (restored, text) = r.persist_and_restore(at.restore_after_ms)?;
        r = restored;
        snapshot = Some(text);
        step += 1;
        out.push(r.line(step));
    }
    Ok(Persisted {
        lines: out,
        snapshot,
    })
}

impl<'m> Runner<'m> {
    fn advance(&mut self, ms: u64) -> Result<(), ChartError> {
        let target = self.tree.now_ms().saturating_add(ms);
        while let Some((path, id, seq, _)) = self.tree.next_due(target) {
            let (_, actions) = self.tree.fire(self.m, &path, &id, seq)?;
            self.absorb(actions);
            self.settle()?;
        }
        self.tree.set_now(target);
        Ok(())
    }

    /// Writes the chart (and its child charts), drops it, and restores a
    /// new one `after_ms` later; overdue events fire during the restore,
    /// the standard actors settling between them as they do in a run.
    fn persist_and_restore(self, after_ms: u64) -> Result<(Runner<'m>, String), ScriptError> {
        let p = Persist::new(self.m).sanitizer(sanitizer());
        let text = p.tree_to_string(&self.tree).map_err(ScriptError::Persist)?;
        let now = self.tree.now_ms().saturating_add(after_ms);
        let (m, charts) = (self.m, self.tree.charts());
        let mut seen = self.seen;
        // The restore starts the callback actors again.
        seen.mirrors.clear();
        let mut settle_overdue = |tree: &mut Tree<Value>, m: &Machine<Value>, actions| {
            let mut settling = VecDeque::new();
            note(&mut settling, &mut seen, actions);
            settle(m, tree, &mut settling, &mut seen).map(|()| Vec::new())
        };
        let restored = p
            .restore_tree_with(&text, charts, Clock::from(now), &mut settle_overdue)
            .map_err(ScriptError::Restore)?;
        let mut r = Runner {
            m,
            tree: restored.tree,
            settling: VecDeque::new(),
            seen,
        };
        r.absorb(restored.actions);
        r.settle()
            .map_err(|e| ScriptError::Restore(RestoreError::Chart(e)))?;
        Ok((r, text))
    }
}
