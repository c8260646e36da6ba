//! `turno chart run`: a machine, a list of events and time advances, one
//! JSON line per item. The contract:
//!
//! - MACHINE is an XState v5 JSON config using the [`stdlib`](crate::stdlib)
//!   implementations.
//! - EVENTS is a JSON array; each item is an event (`{"type": "NAME", ...}`)
//!   or a time advance (`{"advance_ms": N}`) that fires the due delayed
//!   events in deadline order, each at its own deadline.
//! - Output: `{"step": i, "value": <snapshot.value>, "status": "active"|"done"}`
//!   per item, step 0 being the initial state.
//! - With persistence ([`run_persisted`], `--persist-at K
//!   --restore-after-ms D`): after K items the chart is persisted, dropped,
//!   D ms pass, and a restored chart goes on; the output is exactly that of
//!   the run with `{"advance_ms": D}` inserted after the first K items.
//!
//! The standard actors settle right after the step that started them, in
//! the order they were started (as XState's promise actors do before the
//! next event): `echo` with its input as output, `reject` with its input as
//! error, `never` not at all.

use std::collections::VecDeque;

use serde::Serialize;
use serde_json::Value;

use crate::actions::Action;
use crate::algorithm::ChartError;
use crate::core::{
    fire_scheduled, initial_transition, invocation_done, next_due, transition_in_place,
};
use crate::event::Event;
use crate::machine::Machine;
use crate::persist::{Persist, PersistError, RestoreError, Sanitizer};
use crate::snapshot::{Snapshot, StateValue};

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

/// Why a script could not run.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    /// The events file is not a JSON array.
    #[error("the events must be a JSON array of events and {{\"advance_ms\": N}} items")]
    NotAnArray,
    /// One item is neither an event nor a time advance.
    #[error("events[{index}]: {problem}")]
    BadItem {
        /// Its index.
        index: usize,
        /// What is wrong.
        problem: String,
    },
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

struct Runner<'m> {
    m: &'m Machine<Value>,
    snap: Snapshot<Value>,
    settling: VecDeque<(String, String, Value, u64)>,
}

impl Runner<'_> {
    fn absorb(&mut self, actions: Vec<Action>) {
        for a in actions {
            match a {
                Action::StartInvoke {
                    id,
                    src,
                    input,
                    generation,
                } if src != "never" => {
                    self.settling.push_back((id, src, input, generation));
                }
                Action::StopInvoke { id, generation } => {
                    self.settling.retain(|s| !(s.0 == id && s.3 == generation));
                }
                _ => {}
            }
        }
    }

    fn settle(&mut self) -> Result<(), ChartError> {
        while let Some((id, src, input, generation)) = self.settling.pop_front() {
            let result = if src == "reject" {
                Err(input)
            } else {
                Ok(input)
            };
            let mut actions = Vec::new();
            invocation_done(
                self.m,
                &mut self.snap,
                &id,
                generation,
                result,
                &mut actions,
            )?;
            self.absorb(actions);
        }
        Ok(())
    }

    fn line(&self, step: usize) -> Line {
        Line {
            step,
            value: self.snap.value(self.m),
            status: self.snap.status.as_str(),
        }
    }
}

/// Runs `items` (the parsed EVENTS file) against `m`; one line per item
/// after the initial one.
pub fn run(m: &Machine<Value>, items: &Value) -> Result<Vec<Line>, ScriptError> {
    Ok(run_persisted(m, items, None)?.lines)
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
/// `{"advance_ms": D}` inserted after the first K items: the restore step
/// is one line, and delayed events keep their absolute deadlines.
pub fn run_persisted(
    m: &Machine<Value>,
    items: &Value,
    at: Option<PersistAt>,
) -> Result<Persisted, ScriptError> {
    let Value::Array(items) = items else {
        return Err(ScriptError::NotAnArray);
    };
    // Check every item before running any.
    let mut parsed = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        parsed.push(parse_item(item).map_err(|problem| ScriptError::BadItem { index, problem })?);
    }
    if let Some(at) = at {
        if at.after_items > parsed.len() {
            return Err(ScriptError::PersistAt {
                k: at.after_items,
                len: parsed.len(),
            });
        }
    }
    let (snap, actions) = initial_transition(m).map_err(ScriptError::Initial)?;
    let mut r = Runner {
        m,
        snap,
        settling: VecDeque::new(),
    };
    r.absorb(actions);
    r.settle().map_err(ScriptError::Initial)?;
    let mut out = vec![r.line(0)];
    let mut snapshot = None;
    let mut step = 0;
    for (index, item) in parsed.into_iter().enumerate() {
        if let Some(at) = at.filter(|a| a.after_items == index) {
            let (restored, text) = r.persist_and_restore(at.restore_after_ms)?;
            r = restored;
            snapshot = Some(text);
            step += 1;
            out.push(r.line(step));
        }
        let res = match item {
            Item::Event(e) => {
                let mut actions = Vec::new();
                transition_in_place(m, &mut r.snap, e, &mut actions)
                    .map(|()| r.absorb(actions))
                    .and_then(|()| r.settle())
            }
            Item::Advance(ms) => r.advance(ms),
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
        let target = self.snap.now_ms.saturating_add(ms);
        while let Some((id, seq, _)) = next_due(&self.snap, target) {
            let mut actions = Vec::new();
            fire_scheduled(self.m, &mut self.snap, &id, seq, &mut actions)?;
            self.absorb(actions);
            self.settle()?;
        }
        self.snap.now_ms = target;
        Ok(())
    }

    /// Writes the chart, drops it, and restores a new one `after_ms` later.
    fn persist_and_restore(self, after_ms: u64) -> Result<(Runner<'m>, String), ScriptError> {
        let p = Persist::new(self.m).sanitizer(sanitizer());
        let text = p.to_string(&self.snap).map_err(ScriptError::Persist)?;
        let now = self.snap.now_ms.saturating_add(after_ms);
        let m = self.m;
        drop(self);
        let restored = p.restore(&text, now).map_err(ScriptError::Restore)?;
        let mut r = Runner {
            m,
            snap: restored.snapshot,
            settling: VecDeque::new(),
        };
        r.absorb(restored.actions);
        r.settle()
            .map_err(|e| ScriptError::Restore(RestoreError::Chart(e)))?;
        Ok((r, text))
    }
}

enum Item {
    Event(Event),
    Advance(u64),
}

fn parse_item(item: &Value) -> Result<Item, String> {
    if let Some(ms) = item.get("advance_ms") {
        if item.as_object().is_some_and(|o| o.len() != 1) {
            return Err("a time advance has only the key \"advance_ms\"".into());
        }
        return ms
            .as_u64()
            .map(Item::Advance)
            .ok_or_else(|| "\"advance_ms\" must be a non-negative integer".to_string());
    }
    Event::from_json(item)
        .map(Item::Event)
        .map_err(|e| e.to_string())
}
