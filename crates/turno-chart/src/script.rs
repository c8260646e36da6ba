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
//! The standard actors settle right after the step that started them, in
//! the order they were started (as XState's promise actors do before the
//! next event): `echo` with its input as output, `reject` with its input as
//! error, `never` not at all.

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::actions::Action;
use crate::algorithm::ChartError;
use crate::machine::Machine;
use crate::persist::{Clock, Persist, PersistError, RestoreError, Sanitizer};
use crate::snapshot::StateValue;
use crate::tree::{Charts, Path, Tagged, Tree};

/// One output line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Line {
    /// 0 for the initial state, then one per item.
    pub step: usize,
    /// XState's `snapshot.value`.
    pub value: StateValue,
    /// `active`, `done` (or `error`, `stopped`).
    pub status: &'static str,
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
}

/// Takes note of the standard actors started (and stopped) by `actions`;
/// the rest is of no interest to a script.
fn note(settling: &mut Settling, actions: Vec<Tagged>) {
    for t in actions {
        match t.action {
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
) -> Result<(), ChartError> {
    while let Some((path, id, src, input, generation)) = settling.pop_front() {
        let result = if src == "reject" {
            Err(input)
        } else {
            Ok(input)
        };
        let (_, actions) = tree.done(m, &path, &id, generation, result)?;
        note(settling, actions);
    }
    Ok(())
}

impl Runner<'_> {
    fn absorb(&mut self, actions: Vec<Tagged>) {
        note(&mut self.settling, actions);
    }

    fn settle(&mut self) -> Result<(), ChartError> {
        settle(self.m, &mut self.tree, &mut self.settling)
    }

    fn line(&self, step: usize) -> Line {
        let snap = self.tree.root();
        Line {
            step,
            value: snap.value(self.m),
            status: snap.status.as_str(),
        }
    }
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
        drop(self);
        let mut settle_overdue = |tree: &mut Tree<Value>, m: &Machine<Value>, actions| {
            let mut settling = VecDeque::new();
            note(&mut settling, actions);
            settle(m, tree, &mut settling).map(|()| Vec::new())
        };
        let restored = p
            .restore_tree_with(&text, charts, Clock::from(now), &mut settle_overdue)
            .map_err(ScriptError::Restore)?;
        let mut r = Runner {
            m,
            tree: restored.tree,
            settling: VecDeque::new(),
        };
        r.absorb(restored.actions);
        r.settle()
            .map_err(|e| ScriptError::Restore(RestoreError::Chart(e)))?;
        Ok((r, text))
    }
}
