//! The recorded trace of one run: a versioned header and a list of events.
//!
//! The format is documented in `docs/js-trace-format.md`. Every event is one
//! JSON object with `seq` (0, 1, 2, ... in recording order), `t_ns` (virtual
//! time in nanoseconds), `kind`, and kind-specific fields. The events are kept
//! as [`serde_json::Value`] objects so that the set of fields per kind can grow
//! without breaking readers that ignore unknown fields.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The value of [`Trace::format`].
pub const TRACE_FORMAT: &str = "turno-js-trace";
/// The value of [`Trace::version`]. Bumped on any incompatible change.
pub const TRACE_VERSION: u32 = 1;

/// A recorded run: header fields plus the events in order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Trace {
    /// Always [`TRACE_FORMAT`] (`"turno-js-trace"`).
    pub format: String,
    /// Always [`TRACE_VERSION`].
    pub version: u32,
    /// The host model, `"node"` or `"html"`.
    pub model: String,
    /// The file name the program was run as.
    pub file: String,
    /// The events, in `seq` order.
    pub events: Vec<Value>,
}

impl Trace {
    pub(crate) fn new(model: &str, file: &str) -> Self {
        Trace {
            format: TRACE_FORMAT.to_string(),
            version: TRACE_VERSION,
            model: model.to_string(),
            file: file.to_string(),
            events: Vec::new(),
        }
    }

    /// Appends an event of `kind` at virtual time `t_ns` with the given fields
    /// (which must be a JSON object; anything else is recorded under `"value"`).
    pub(crate) fn push(&mut self, t_ns: u64, kind: &str, fields: Value) {
        let mut obj = Map::new();
        obj.insert("seq".into(), Value::from(self.events.len() as u64));
        obj.insert("t_ns".into(), Value::from(t_ns));
        obj.insert("kind".into(), Value::from(kind));
        match fields {
            Value::Object(m) => obj.extend(m),
            Value::Null => {}
            other => {
                obj.insert("value".into(), other);
            }
        }
        self.events.push(Value::Object(obj));
    }

    /// The events of one kind, in order (a convenience for tests and tools).
    pub fn events_of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.events
            .iter()
            .filter(move |e| e.get("kind").and_then(Value::as_str) == Some(kind))
    }
}
