//! The recorded trace of one run: a versioned header and a list of events.
//!
//! The format is documented in `docs/js-trace-format.md`. On disk it is JSON
//! lines, like the runtime's `turno-trace`: the header object on the first
//! line, then one event per line ([`Trace::to_json_lines`],
//! [`Trace::from_json_lines`]). Every event is one
//! JSON object with `seq` (0, 1, 2, ... in recording order), `t_ns` (virtual
//! time in nanoseconds), `kind`, and kind-specific fields. The events are kept
//! as [`serde_json::Value`] objects so that the set of fields per kind can grow
//! without breaking readers that ignore unknown fields.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The value of [`Trace::format`].
pub const TRACE_FORMAT: &str = turno_trace::Format::TurnoJs.name();
/// The value of [`Trace::version`]. Bumped on any incompatible change.
pub const TRACE_VERSION: u32 = turno_trace::VERSION;

/// Why [`Trace::from_json_lines`] refused a text.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// No header line.
    #[error("empty trace")]
    Empty,
    /// The first line is not a JSON object.
    #[error("bad header: {0}")]
    BadHeader(#[source] serde_json::Error),
    /// The header's `format` is not [`TRACE_FORMAT`].
    #[error("not a turno-js-trace file: format {0}")]
    NotThisFormat(String),
    /// The header has no numeric `version`.
    #[error("header without version")]
    NoVersion,
    /// The version is newer than this reader.
    #[error("turno-js-trace version {0} is newer than {TRACE_VERSION}")]
    TooNew(u32),
    /// The trace breaks the format (checked by `turno_trace`'s reader: the
    /// envelope, every kind's fields, `seq` without gaps, time never going
    /// back); the error names the line and field.
    #[error("{0}")]
    Invalid(#[from] turno_trace::ReadError),
    /// An event line is not JSON.
    #[error("event line {line}: {source}")]
    BadEvent {
        /// 1-based line number in the text.
        line: usize,
        /// The parse error.
        #[source]
        source: serde_json::Error,
    },
}

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

    /// Encodes the trace as JSON lines: the header (`format`, `version`,
    /// `model`, `file`), then one event per line with `seq`, `t_ns` and
    /// `kind` first.
    pub fn to_json_lines(&self) -> String {
        let model = match self.model.as_str() {
            "html" => turno_trace::Model::Html,
            _ => turno_trace::Model::Node,
        };
        let header = turno_trace::Header {
            version: self.version,
            ..turno_trace::Header::js(model, self.file.clone())
        };
        let mut out = header.to_line();
        out.push('\n');
        for e in &self.events {
            let Value::Object(m) = e else { continue };
            let mut line = String::from("{");
            let mut first = true;
            for key in ["seq", "t_ns", "kind"] {
                if let Some(v) = m.get(key) {
                    if !first {
                        line.push(',');
                    }
                    first = false;
                    line.push_str(&format!("{}:{}", Value::from(key), v));
                }
            }
            for (k, v) in m {
                if matches!(k.as_str(), "seq" | "t_ns" | "kind") {
                    continue;
                }
                if !first {
                    line.push(',');
                }
                first = false;
                line.push_str(&format!("{}:{}", Value::from(k.as_str()), v));
            }
            line.push_str("}\n");
            out.push_str(&line);
        }
        out
    }

    /// Decodes [`Trace::to_json_lines`] output. Fails on another format or
    /// a higher version.
    pub fn from_json_lines(text: &str) -> Result<Trace, TraceError> {
        // Validate with the one reader of the trace family first.
        for event in turno_trace::Reader::new(text.as_bytes())? {
            event?;
        }
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let header: Value = serde_json::from_str(lines.next().ok_or(TraceError::Empty)?)
            .map_err(TraceError::BadHeader)?;
        if header["format"] != TRACE_FORMAT {
            return Err(TraceError::NotThisFormat(header["format"].to_string()));
        }
        let version = header["version"].as_u64().ok_or(TraceError::NoVersion)? as u32;
        if version > TRACE_VERSION {
            return Err(TraceError::TooNew(version));
        }
        let mut t = Trace::new(
            header["model"].as_str().unwrap_or_default(),
            header["file"].as_str().unwrap_or_default(),
        );
        t.version = version;
        for (i, l) in lines.enumerate() {
            let v: Value = serde_json::from_str(l).map_err(|source| TraceError::BadEvent {
                line: i + 2,
                source,
            })?;
            t.events.push(v);
        }
        Ok(t)
    }

    /// The events of one kind, in order (a convenience for tests and tools).
    pub fn events_of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.events
            .iter()
            .filter(move |e| e.get("kind").and_then(Value::as_str) == Some(kind))
    }
}
