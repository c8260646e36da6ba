//! The EVENTS file of `turno chart run`, and its output: the contract,
//! the same for XState JSON machines and SCXML documents.
//!
//! - EVENTS is a JSON array. Each item is an event, `{"type": "NAME",
//!   ...}` (the other fields are its data: the XState event's fields,
//!   SCXML's `_event.data`), or a time advance, `{"advance_ms": N}`, that
//!   fires the delayed events due, in deadline order, each at its own
//!   deadline.
//! - Every item is checked before anything runs; an error names the file,
//!   the line and column where the item starts, and its index:
//!   `events.json:3:5: events[1]: "advance_ms" must be a non-negative
//!   integer`.
//! - Output: one JSON line per item, `{"step": i, "value": V, "status":
//!   "active"|"done"|"error"}`, step 0 being the state after start, `V` the
//!   state value as XState shows `snapshot.value`; a chart that failed
//!   (status `error`) adds `"error"`: the failed action's message or the
//!   error nobody handled.
//! - `--show context,emitted,log,children` (XState JSON machines) adds
//!   those fields, in that order, whichever are asked for: `"context"`
//!   (the context after the item), `"emitted"` (the events the chart
//!   emitted during the item, a list of XState event objects), `"log"`
//!   (the messages it logged during the item), `"children"` (its children
//!   by id as XState's `snapshot.children` lists them: invoked or spawned,
//!   running, or finished while still listed; each `{"src", "status"}`
//!   with `status` `active`, `done`, `error` or `stopped`, and for a child
//!   chart `"value"`, `"context"` and, when it has any, its own
//!   `"children"`).
//!   Emitted events and log lines are the machine's own, not its
//!   children's.
//!
//! `turno chart paths` prints its steps as items of this format, so a path
//! can be fed back to `turno chart run`.

use std::fmt;

use serde_json::{Map, Value};

/// One item of an EVENTS file.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// An event: its name and its other fields.
    Event {
        /// `type`.
        name: String,
        /// The other fields.
        data: Map<String, Value>,
    },
    /// Virtual time passes, in milliseconds.
    Advance(u64),
}

impl Item {
    /// As turno-chart's script item.
    pub fn to_chart(&self) -> turno_chart::script::Item {
        match self {
            Item::Event { name, data } => turno_chart::script::Item::Event(
                turno_chart::Event::with_data(name.as_str(), Value::Object(data.clone())),
            ),
            Item::Advance(ms) => turno_chart::script::Item::Advance(*ms),
        }
    }

    /// As turno-scxml's script item (no data: no `_event.data`).
    pub fn to_scxml(&self) -> turno_scxml::script::Item {
        match self {
            Item::Event { name, data } => {
                let data = (!data.is_empty()).then(|| Value::Object(data.clone()));
                turno_scxml::script::Item::Event(turno_scxml::Event::external(name.clone(), data))
            }
            Item::Advance(ms) => turno_scxml::script::Item::Advance(*ms),
        }
    }
}

/// Why an EVENTS file was refused.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemsError {
    /// Where (1-based line and column), when known.
    pub at: Option<(usize, usize)>,
    /// What is wrong.
    pub problem: Problem,
}

/// What is wrong with an EVENTS file.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// Not JSON.
    Syntax(String),
    /// Not an array.
    NotAnArray,
    /// One item is neither an event nor a time advance.
    BadItem {
        /// Its index.
        index: usize,
        /// What is wrong.
        problem: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Syntax(e) => write!(f, "not valid JSON: {e}"),
            Problem::NotAnArray => f.write_str(
                "the events must be a JSON array of events and {\"advance_ms\": N} items",
            ),
            Problem::BadItem { index, problem } => write!(f, "events[{index}]: {problem}"),
        }
    }
}

impl ItemsError {
    /// The message for a file named `file`: `file:line:column: problem`.
    pub fn in_file(&self, file: &str) -> String {
        match self.at {
            Some((line, col)) => format!("{file}:{line}:{col}: {}", self.problem),
            None => format!("{file}: {}", self.problem),
        }
    }
}

/// Reads an EVENTS file's text (see the [module docs](self)).
pub fn parse(text: &str) -> Result<Vec<Item>, ItemsError> {
    let v: Value = serde_json::from_str(text).map_err(|e| ItemsError {
        at: Some((e.line(), e.column())),
        problem: Problem::Syntax(e.to_string()),
    })?;
    items(&v).map_err(|problem| {
        let at = match &problem {
            Problem::BadItem { index, .. } => item_starts(text).get(*index).copied(),
            _ => None,
        };
        ItemsError { at, problem }
    })
}

/// The items of a parsed EVENTS array.
pub fn items(v: &Value) -> Result<Vec<Item>, Problem> {
    let Value::Array(items) = v else {
        return Err(Problem::NotAnArray);
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| item_of(item).map_err(|problem| Problem::BadItem { index, problem }))
        .collect()
}

fn item_of(item: &Value) -> Result<Item, String> {
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
    let mut data = obj.clone();
    data.remove("type");
    Ok(Item::Event {
        name: name.clone(),
        data,
    })
}

/// Where each element of the top-level array of (valid JSON) `text`
/// starts: 1-based line and column (in characters).
fn item_starts(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut line, mut col) = (1, 0);
    let (mut depth, mut in_string, mut escaped, mut expect) = (0usize, false, false, false);
    for c in text.chars() {
        if c == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        if c.is_whitespace() {
            continue;
        }
        if depth == 1 && expect && c != ']' {
            out.push((line, col));
            expect = false;
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => {
                depth += 1;
                if depth == 1 {
                    expect = true;
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => expect = true,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every item is checked before anything runs (this contract was
    /// turno-scxml's `script::run` before it moved here).
    #[test]
    fn bad_event_items_are_rejected_before_running() {
        let e = items(&json!([{"type": "x"}, {"advance_ms": -1}])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "events[1]: \"advance_ms\" must be a non-negative integer"
        );
        let e = items(&json!({"type": "x"})).unwrap_err();
        assert!(e.to_string().contains("JSON array"));
        let e = items(&json!([{"name": "x"}])).unwrap_err();
        assert_eq!(e.to_string(), "events[0]: an event needs a string \"type\"");
    }

    #[test]
    fn errors_point_at_the_line_and_column_of_the_item() {
        let text = "[\n  {\"type\": \"a\"},\n  {\"advance_ms\": 5, \"x\": 1}\n]";
        let e = parse(text).unwrap_err();
        assert_eq!(
            e.in_file("events.json"),
            "events.json:3:3: events[1]: a time advance has only the key \"advance_ms\""
        );
        let e = parse("[{\"type\": \"a\"},\n  {\"type\": \"b\" ").unwrap_err();
        assert!(
            e.in_file("events.json").starts_with("events.json:2:"),
            "{e:?}"
        );
        let e = parse("{}").unwrap_err();
        assert_eq!(e.at, None);
    }

    #[test]
    fn events_keep_their_fields_and_advances_their_milliseconds() {
        let got = parse(r#"[{"type": "go", "n": 2, "s": "[,]"}, {"advance_ms": 100}, 3]"#);
        let e = got.unwrap_err();
        assert_eq!(e.at, Some((1, 59)));
        let got = parse(r#"[{"type": "go", "n": 2}, {"advance_ms": 100}]"#).unwrap();
        assert_eq!(
            got,
            [
                Item::Event {
                    name: "go".into(),
                    data: json!({"n": 2}).as_object().unwrap().clone()
                },
                Item::Advance(100)
            ]
        );
    }
}
