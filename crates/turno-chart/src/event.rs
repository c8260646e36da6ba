//! Events: a name (XState's `type`) and an optional JSON payload.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One event, as XState sees it: `{"type": "NAME", ...fields}`.
///
/// The name is shared (`Arc<str>`), so cloning an event without a payload
/// costs one reference-count increment: queued and delayed events are cheap.
///
/// ```
/// use turno_chart::Event;
/// let e = Event::with_data("SET", serde_json::json!({"value": 3}));
/// assert_eq!(e.name(), "SET");
/// assert_eq!(e.get("value"), Some(&serde_json::json!(3)));
/// assert_eq!(serde_json::to_string(&e).unwrap(), r#"{"type":"SET","value":3}"#);
/// ```
#[derive(Debug, PartialEq)]
pub struct Event {
    name: Arc<str>,
    /// The fields other than `type` (an object), or `Null` when none.
    data: Value,
}

// By hand: an event without payload (the common case) clones its name's
// reference count and nothing else, without a call into `Value::clone`.
impl Clone for Event {
    #[inline]
    fn clone(&self) -> Self {
        Event {
            name: self.name.clone(),
            data: match &self.data {
                Value::Null => Value::Null,
                d => d.clone(),
            },
        }
    }
}

impl Event {
    /// An event without payload.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Event {
            name: name.into(),
            data: Value::Null,
        }
    }

    /// An event with fields: `data` should be an object (a non-object value
    /// is kept under the key `data`).
    pub fn with_data(name: impl Into<Arc<str>>, data: Value) -> Self {
        let data = match data {
            Value::Object(m) if m.is_empty() => Value::Null,
            Value::Object(m) => Value::Object(m),
            Value::Null => Value::Null,
            other => {
                let mut m = Map::new();
                m.insert("data".into(), other);
                Value::Object(m)
            }
        };
        Event {
            name: name.into(),
            data,
        }
    }

    /// The event's name (XState's `event.type`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shared name.
    pub fn name_arc(&self) -> &Arc<str> {
        &self.name
    }

    /// A payload field (`event.key` in XState). `type` gives the name.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.data.as_object().and_then(|m| m.get(key))
    }

    /// The payload: an object, or `Null` when there is none.
    pub fn data(&self) -> &Value {
        &self.data
    }

    /// Parses `{"type": "NAME", ...}`.
    pub fn from_json(value: &Value) -> Result<Event, EventError> {
        let Value::Object(m) = value else {
            return Err(EventError::NotAnObject);
        };
        let Some(Value::String(name)) = m.get("type") else {
            return Err(EventError::NoType);
        };
        let mut rest = m.clone();
        rest.remove("type");
        Ok(Event::with_data(name.as_str(), Value::Object(rest)))
    }

    /// The event as XState shows it: `{"type": name, ...fields}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::String(self.name.to_string()));
        if let Value::Object(d) = &self.data {
            for (k, v) in d {
                if k != "type" {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        Value::Object(m)
    }
}

/// Why a JSON value is not an event.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// Events are JSON objects.
    #[error("an event must be a JSON object like {{\"type\": \"NAME\"}}")]
    NotAnObject,
    /// The `type` field is missing or not a string.
    #[error("an event needs a string field \"type\"")]
    NoType,
}

impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Event::from_json(&v).map_err(serde::de::Error::custom)
    }
}

impl From<&str> for Event {
    fn from(name: &str) -> Self {
        Event::new(name)
    }
}

/// The names XState gives its own events.
pub mod names {
    /// `xstate.done.state.<id>`: a compound or parallel state completed.
    pub fn done_state(id: &str) -> String {
        format!("xstate.done.state.{id}")
    }
    /// `xstate.done.actor.<id>`: an invocation finished with output.
    pub fn done_actor(id: &str) -> String {
        format!("xstate.done.actor.{id}")
    }
    /// `xstate.error.actor.<id>`: an invocation failed.
    pub fn error_actor(id: &str) -> String {
        format!("xstate.error.actor.{id}")
    }
    /// `xstate.after.<delay>.<state id>`: the event of an `after` transition.
    pub fn after(delay: &str, state_id: &str) -> String {
        format!("xstate.after.{delay}.{state_id}")
    }
}

/// XState's event descriptor match: exact, `*`, or a `prefix.*` whose
/// tokens before the `*` equal the event's first tokens.
///
/// ```
/// use turno_chart::event::matches_descriptor;
/// assert!(matches_descriptor("mouse.click", "mouse.*"));
/// assert!(matches_descriptor("mouse", "mouse.*"));
/// assert!(!matches_descriptor("mousedown", "mouse.*"));
/// assert!(matches_descriptor("anything", "*"));
/// ```
pub fn matches_descriptor(event: &str, descriptor: &str) -> bool {
    if descriptor == event || descriptor == "*" {
        return true;
    }
    let Some(prefix) = descriptor.strip_suffix(".*") else {
        return false;
    };
    let mut ev = event.split('.');
    for token in prefix.split('.') {
        if token == "*" {
            // A `*` before the last token ends the match (XState: only the
            // last token may be a wildcard; an inner one matches when last).
            return false;
        }
        if ev.next() != Some(token) {
            return false;
        }
    }
    true
}
