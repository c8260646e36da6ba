//! The recorded trace of one run: a versioned header and a list of events.
//!
//! The format is documented in `docs/js-trace-format.md`. On disk it is JSON
//! lines, like the runtime's `turno-trace`: the header object on the first
//! line, then one event per line ([`Trace::to_json_lines`],
//! [`Trace::from_json_lines`]). Every event is one JSON object with `seq`
//! (0, 1, 2, ... in recording order), `t_ns` (virtual time in nanoseconds),
//! `kind`, and kind-specific fields.
//!
//! The explorer records typed events: each one a [`turno_trace::JsEvent`]
//! in `turno_trace`'s envelope ([`turno_trace::Event`], which adds `seq`,
//! `t_ns`, `js_stack` and `loop`), so the lines written are exactly what
//! `turno_trace`'s `Serialize` produces and what its reader validates.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use turno_trace::{Event, Format, JsEvent, Kind};

/// The value of [`Trace::format`].
pub const TRACE_FORMAT: &str = Format::TurnoJs.name();
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
    /// header, the envelope, every kind's fields, `seq` without gaps, time
    /// never going back); the error names the line and field.
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
    /// The events, in `seq` order: [`turno_trace::JsEvent`]s in
    /// `turno_trace`'s envelope (a trace read back may also hold kinds a
    /// newer writer added, as [`Kind::Other`]).
    pub events: Vec<Event>,
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

    /// Appends `event` at virtual time `t_ns`, recorded on loop `loop_id`
    /// with the JavaScript frames `js_stack`, numbered next (`seq`).
    pub(crate) fn push(
        &mut self,
        t_ns: u64,
        event: JsEvent,
        js_stack: Option<Vec<String>>,
        loop_id: u32,
    ) {
        let mut e = Event::new(self.events.len() as u64, t_ns, Kind::Js(event));
        e.js_stack = js_stack;
        e.loop_id = Some(loop_id);
        self.events.push(e);
    }

    fn header(&self) -> turno_trace::Header {
        let model = match self.model.as_str() {
            "html" => turno_trace::Model::Html,
            _ => turno_trace::Model::Node,
        };
        turno_trace::Header {
            version: self.version,
            ..turno_trace::Header::js(model, self.file.clone())
        }
    }

    /// Encodes the trace as JSON lines: the header (`format`, `version`,
    /// `model`, `file`), then one event per line (`seq`, `t_ns` and `kind`
    /// first), each line as `turno_trace` serialises it.
    pub fn to_json_lines(&self) -> String {
        let mut out = self.header().to_line();
        out.push('\n');
        for e in &self.events {
            out.push_str(&e.to_line());
            out.push('\n');
        }
        out
    }

    /// Decodes [`Trace::to_json_lines`] output with `turno_trace`'s reader
    /// (which validates as it reads). Fails on another format, a higher
    /// version or the first problem the reader finds.
    pub fn from_json_lines(text: &str) -> Result<Trace, TraceError> {
        if text.trim().is_empty() {
            return Err(TraceError::Empty);
        }
        let (header, events) = turno_trace::read_all(text.as_bytes())?;
        if header.format != Format::TurnoJs {
            return Err(TraceError::NotThisFormat(header.format.name().to_string()));
        }
        if header.version > TRACE_VERSION {
            return Err(TraceError::TooNew(header.version));
        }
        let model = match header.model {
            Some(turno_trace::Model::Html) => "html",
            Some(turno_trace::Model::Node) => "node",
            None => "",
        };
        let mut t = Trace::new(model, header.file.as_deref().unwrap_or_default());
        t.version = header.version;
        t.events = events;
        Ok(t)
    }

    /// Every event as the JSON object its line holds (a convenience for
    /// tests and tools that look at fields by name).
    pub fn event_values(&self) -> Vec<Value> {
        self.events.iter().map(event_value).collect()
    }

    /// The events of one kind, in order, each as the JSON object its line
    /// holds (a convenience for tests and tools).
    pub fn events_of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = Value> + 'a {
        self.events
            .iter()
            .map(event_value)
            .filter(move |e| e.get("kind").and_then(Value::as_str) == Some(kind))
    }
}

/// One event as a JSON object (serialising an event cannot fail: every
/// field is a string, number, bool, list or map with string keys).
fn event_value(e: &Event) -> Value {
    serde_json::to_value(e).unwrap_or_default()
}
