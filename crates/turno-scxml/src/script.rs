//! `turno chart run FILE.scxml EVENTS.json`: the same contract as for
//! XState JSON machines.
//!
//! - EVENTS is a JSON array; each item is an event (`{"type": "NAME", ...}`,
//!   the other fields becoming `_event.data`) or a time advance
//!   (`{"advance_ms": N}`) that runs every delayed event due, each at its
//!   own deadline.
//! - Output: one line per item, `{"step": i, "value": V, "status":
//!   "active"|"done"}`, step 0 being the state after start. `V` is the
//!   configuration as XState shows `snapshot.value`: a compound state whose
//!   active child is atomic is that child's id, otherwise an object from the
//!   active child's id to its value; a parallel state is an object with one
//!   entry per region (an atomic region is `{}`).
//!
//! After start and after each event, every event due at that instant is
//! processed (external events sent without delay included) before the
//! line is printed.
//!
//! ```
//! let doc = turno_scxml::load_str(r#"<scxml initial="p"><parallel id="p">
//!     <state id="a"><state id="a1"><transition event="go" target="a2"/></state><state id="a2"/></state>
//!     <state id="b"/></parallel></scxml>"#, None).unwrap();
//! let lines = turno_scxml::script::run(&doc, &serde_json::json!([{"type": "go"}])).unwrap();
//! assert_eq!(serde_json::to_string(&lines[1]).unwrap(),
//!     r#"{"step":1,"value":{"p":{"a":"a2","b":{}}},"status":"active"}"#);
//! ```

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::event::Event;
use crate::model::{Document, StateId, ROOT};
use crate::system::System;

/// One output line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    /// 0 after start, then one per item.
    pub step: usize,
    /// The configuration as XState's `snapshot.value`.
    pub value: Value,
    /// `active` or `done`.
    pub status: &'static str,
}

/// Why a script could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    /// The session could not start or ran away.
    #[error("{0}")]
    Run(String),
}

enum Item {
    Event(Event),
    Advance(u64),
}

fn parse_item(item: &Value) -> Result<Item, String> {
    let Some(obj) = item.as_object() else {
        return Err("an item is an object".into());
    };
    if let Some(ms) = obj.get("advance_ms") {
        if obj.len() != 1 {
            return Err("a time advance has only the key \"advance_ms\"".into());
        }
        return ms
            .as_u64()
            .map(Item::Advance)
            .ok_or_else(|| "\"advance_ms\" must be a non-negative integer".into());
    }
    let Some(Value::String(name)) = obj.get("type") else {
        return Err("an event needs a string \"type\"".into());
    };
    let data: Map<String, Value> = obj
        .iter()
        .filter(|(k, _)| *k != "type")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let data = (!data.is_empty()).then_some(Value::Object(data));
    Ok(Item::Event(Event::external(name.clone(), data)))
}

/// The configuration `config` as XState's `snapshot.value`.
pub fn state_value(doc: &Document, config: &[StateId]) -> Value {
    state_value_named(doc, config, &|s| doc.states[s].id.clone())
}

/// [`state_value`] with each state shown as `name(state)` instead of its id
/// (XState shows keys, which are unique only among siblings).
pub fn state_value_named(
    doc: &Document,
    config: &[StateId],
    name: &dyn Fn(StateId) -> String,
) -> Value {
    value_of(doc, config, ROOT, name)
}

/// Runs `items` against `doc` and returns, per line, the raw configuration
/// and whether the session is still running (for callers that name states
/// their own way).
pub fn run_configurations(
    doc: &Document,
    items: &Value,
) -> Result<Vec<(Vec<StateId>, bool)>, ScriptError> {
    run_with(doc, items, |sys, root| {
        let config = sys
            .session(root)
            .map(|s| s.configuration())
            .unwrap_or_default();
        (config, sys.is_running(root))
    })
}

fn value_of(
    doc: &Document,
    config: &[StateId],
    s: StateId,
    name: &dyn Fn(StateId) -> String,
) -> Value {
    let active: Vec<StateId> = doc.states[s]
        .children
        .iter()
        .copied()
        .filter(|c| config.contains(c))
        .collect();
    if !doc.is_parallel(s) {
        match active.first() {
            Some(&c) if doc.is_atomic(c) => return Value::String(name(c)),
            None => return Value::Object(Map::new()),
            Some(_) => {}
        }
    }
    Value::Object(
        active
            .into_iter()
            .map(|c| (name(c), value_of(doc, config, c, name)))
            .collect(),
    )
}

/// Runs `items` (the parsed EVENTS file) against `doc`.
pub fn run(doc: &Document, items: &Value) -> Result<Vec<Line>, ScriptError> {
    let lines = run_configurations(doc, items)?;
    Ok(lines
        .into_iter()
        .enumerate()
        .map(|(step, (config, running))| Line {
            step,
            value: state_value(doc, &config),
            status: if running { "active" } else { "done" },
        })
        .collect())
}

fn run_with<T>(
    doc: &Document,
    items: &Value,
    observe: impl Fn(&System, crate::system::SessionHandle) -> T,
) -> Result<Vec<T>, ScriptError> {
    let Value::Array(items) = items else {
        return Err(ScriptError::NotAnArray);
    };
    let mut parsed = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        parsed.push(parse_item(item).map_err(|problem| ScriptError::BadItem { index, problem })?);
    }
    let doc = Arc::new(doc.clone());
    let mut sys = System::new();
    let root = sys
        .start(doc.clone())
        .map_err(|e| ScriptError::Run(format!("start: {e}")))?;
    let run_err = |e: crate::system::RunError| ScriptError::Run(e.to_string());
    sys.run_until(0.0).map_err(run_err)?;
    let failed = |sys: &System| match sys.session(root).and_then(|s| s.failure()) {
        Some(f) => Err(ScriptError::Run(f.to_owned())),
        None => Ok(()),
    };
    failed(&sys)?;
    let mut out = vec![observe(&sys, root)];
    for item in parsed {
        match item {
            Item::Event(e) => {
                sys.send(root, e);
                sys.run_until(sys.now_ms()).map_err(run_err)?;
            }
            Item::Advance(ms) => sys.run_until(sys.now_ms() + ms as f64).map_err(run_err)?,
        }
        failed(&sys)?;
        out.push(observe(&sys, root));
    }
    Ok(out)
}
