//! What `turno chart run FILE.scxml EVENTS.json` runs: a document, then
//! each item (an external event, or virtual time passing), one observation
//! per item. The EVENTS file, its items and its output lines are the
//! command's contract, written once in `crates/turno-cli/src/events.rs`
//! (`turno chart run --help`); here items are already typed ([`Item`]).
//!
//! - An [`Item::Advance`] runs every delayed event due, each at its own
//!   deadline.
//! - Each [`Line`] holds the configuration as XState shows
//!   `snapshot.value`: a compound state whose active child is atomic is
//!   that child's id, otherwise an object from the active child's id to its
//!   value; a parallel state is an object with one entry per region (an
//!   atomic region is `{}`).
//!
//! After start and after each event, every event due at that instant is
//! processed (external events sent without delay included) before the
//! line is taken.
//!
//! ```
//! let doc = turno_scxml::load_str(r#"<scxml initial="p"><parallel id="p">
//!     <state id="a"><state id="a1"><transition event="go" target="a2"/></state><state id="a2"/></state>
//!     <state id="b"/></parallel></scxml>"#, None).unwrap();
//! use turno_scxml::{script::{self, Item}, Event};
//! let lines = script::run(&doc, &[Item::Event(Event::external("go", None))]).unwrap();
//! assert_eq!(serde_json::to_string(&lines[1]).unwrap(),
//!     r#"{"step":1,"value":{"p":{"a":"a2","b":{}}},"status":"active"}"#);
//! ```

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::event::Event;
use crate::model::{Document, StateId, ROOT};
use crate::processor::Processor;

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
    /// The session could not start or ran away.
    #[error("{0}")]
    Run(String),
}

/// One item of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An external event sent to the session.
    Event(Event),
    /// Virtual time passes, in milliseconds.
    Advance(u64),
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
    items: &[Item],
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

/// Runs `items` against `doc`: one line after start, then one per item.
pub fn run(doc: &Document, items: &[Item]) -> Result<Vec<Line>, ScriptError> {
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
    items: &[Item],
    observe: impl Fn(&Processor, crate::processor::SessionHandle) -> T,
) -> Result<Vec<T>, ScriptError> {
    let doc = Arc::new(doc.clone());
    let mut sys = Processor::new();
    let root = sys
        .start(doc.clone())
        .map_err(|e| ScriptError::Run(format!("start: {e}")))?;
    let run_err = |e: crate::processor::RunError| ScriptError::Run(e.to_string());
    sys.run_until(0.0).map_err(run_err)?;
    let failed = |sys: &Processor| match sys.session(root).and_then(|s| s.failure()) {
        Some(f) => Err(ScriptError::Run(f.to_owned())),
        None => Ok(()),
    };
    failed(&sys)?;
    let mut out = vec![observe(&sys, root)];
    for item in items {
        match item {
            Item::Event(e) => {
                sys.send(root, e.clone());
                sys.run_until(sys.now_ms()).map_err(run_err)?;
            }
            Item::Advance(ms) => sys.run_until(sys.now_ms() + *ms as f64).map_err(run_err)?,
        }
        failed(&sys)?;
        out.push(observe(&sys, root));
    }
    Ok(out)
}
