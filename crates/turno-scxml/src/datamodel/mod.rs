//! Data models: where a session's variables live and how its expressions
//! are evaluated (SCXML 5 and Appendix B).
//!
//! The interpreter talks to a data model only through [`DataModel`], so the
//! algorithm is the same for every language. Values cross sessions (event
//! data, `<param>`, `<donedata>`) as JSON values: each session has its own
//! engine, and an event carries data, not references into another engine.

use serde_json::Value;

use crate::event::Event;
use crate::model::{AssignValue, DataInit};

#[cfg(feature = "ecmascript")]
mod ecmascript;
mod null;

#[cfg(feature = "ecmascript")]
pub use ecmascript::EcmaScript;
pub use null::Null;

/// An evaluation failed; the interpreter turns it into `error.execution`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EvalError(pub String);

impl EvalError {
    /// An error with this message.
    pub fn new(msg: impl Into<String>) -> Self {
        EvalError(msg.into())
    }
}

/// The system variables of a session (5.10).
#[derive(Debug, Clone)]
pub struct SystemVars {
    /// `_sessionid`.
    pub sessionid: String,
    /// `_name`.
    pub name: String,
    /// `_ioprocessors`: processor type and location, here only the SCXML
    /// processor at `#_scxml_<sessionid>`.
    pub ioprocessors: Vec<(String, String)>,
}

/// What a data model provides to the interpreter.
pub trait DataModel {
    /// Creates the system variables; called once, before anything else.
    fn bind_system(&mut self, vars: &SystemVars) -> Result<(), EvalError>;
    /// Creates variable `id` without a value (late binding declares every
    /// variable first).
    fn declare(&mut self, id: &str) -> Result<(), EvalError>;
    /// Gives variable `id` its value: `init` evaluated, or `value` when the
    /// invoking session passed one.
    fn initialize(
        &mut self,
        id: &str,
        init: &DataInit,
        value: Option<&Value>,
    ) -> Result<(), EvalError>;
    /// Binds `_event`.
    fn set_event(&mut self, event: &Event) -> Result<(), EvalError>;
    /// Tells the model that a state became active or inactive (for `In()`).
    fn set_active(&mut self, state: &str, active: bool);
    /// A condition's effective boolean value.
    fn eval_bool(&mut self, expr: &str) -> Result<bool, EvalError>;
    /// A value expression, as data.
    fn eval_value(&mut self, expr: &str) -> Result<Value, EvalError>;
    /// A value expression converted to a string (`eventexpr`, `targetexpr`, ...).
    fn eval_string(&mut self, expr: &str) -> Result<String, EvalError>;
    /// A value expression as `<log>` prints it.
    fn eval_log(&mut self, expr: &str) -> Result<String, EvalError>;
    /// `<assign>`.
    fn assign(&mut self, location: &str, value: &AssignValue) -> Result<(), EvalError>;
    /// Stores `value` at `location` (`idlocation`).
    fn assign_value(&mut self, location: &str, value: &Value) -> Result<(), EvalError>;
    /// `<script>`.
    fn run_script(&mut self, source: &str) -> Result<(), EvalError>;
    /// Starts a `<foreach>`: evaluates `array` once (a shallow copy) and
    /// returns its length.
    fn foreach_begin(&mut self, array: &str) -> Result<usize, EvalError>;
    /// Binds `item` (and `index`) for iteration `i` of the innermost foreach.
    fn foreach_bind(&mut self, item: &str, index: Option<&str>, i: usize) -> Result<(), EvalError>;
    /// Ends the innermost foreach.
    fn foreach_end(&mut self);
    /// Interprets inline `<content>` text as event data.
    fn content_value(&mut self, text: &str) -> Value;
}

/// The key under which XML content travels as data: `{"$xml": element}`,
/// an element being `{"tag", "attrs", "children"}` and a text child a
/// string; the root also has `"source"`, the markup as written. The
/// ECMAScript data model turns it into a DOM document whose `toString()`
/// is that markup (so `<invoke><content expr>` can run a document held in a
/// variable).
pub const XML_DATA_KEY: &str = "$xml";

/// Inline content as data (B.2): JSON when it parses as JSON; else, when it
/// is one well-formed XML element, that element (see [`XML_DATA_KEY`]);
/// else the text with its whitespace normalized.
pub(crate) fn content_as_data(text: &str) -> Value {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return v;
    }
    if text.trim_start().starts_with('<') {
        if let Ok(root) = crate::xml::parse(text) {
            let mut m = serde_json::Map::new();
            let mut tree = xml_value(&root);
            tree["source"] = Value::String(text.trim().to_owned());
            m.insert(XML_DATA_KEY.into(), tree);
            return Value::Object(m);
        }
    }
    Value::String(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn xml_value(el: &crate::xml::Element) -> Value {
    let attrs: serde_json::Map<String, Value> = el
        .attrs
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let children: Vec<Value> = el
        .children
        .iter()
        .map(|n| match n {
            crate::xml::Node::Element(e) => xml_value(e),
            crate::xml::Node::Text(t) => Value::String(t.clone()),
        })
        .collect();
    serde_json::json!({ "tag": el.name, "attrs": attrs, "children": children })
}
