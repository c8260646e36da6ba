//! The streaming, validating reader.
//!
//! It reads one line at a time (memory is bounded by the longest line, at
//! most [`MAX_LINE`] bytes), checks the envelope as it goes (format,
//! version, `seq` without gaps, time never going back) and stops at the
//! first problem with its line (1-based; the header is line 1) and field.

use std::io::{BufRead, Read};

use serde::Deserialize;
use serde_json::Value;

use crate::actor::ActorEvent;
use crate::event::{Event, Format, Header, Kind, OtherKind, VERSION};
use crate::js::{JsEvent, Model};

/// The longest line the reader accepts, in bytes (16 MiB).
pub const MAX_LINE: usize = 16 << 20;

/// What went wrong, by category.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// The source could not be read.
    Io,
    /// The line is not JSON, not an object, not UTF-8, or too long.
    Syntax,
    /// The header is missing or names another format or a higher version.
    Header,
    /// A field is missing or has the wrong type or value.
    Field,
    /// `seq` is not the next number.
    Seq,
    /// `t_ns` went back.
    Time,
}

/// The first problem in a trace: where (line, field) and what.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}{}: {message}", field.as_ref().map(|f| format!(", field `{f}`")).unwrap_or_default())]
pub struct ReadError {
    /// The line, from 1 (the header).
    pub line: u64,
    /// The field at fault, when one is.
    pub field: Option<String>,
    /// The category.
    pub problem: Problem,
    /// What is wrong, for a person.
    pub message: String,
}

impl ReadError {
    fn new(line: u64, field: Option<&str>, problem: Problem, message: impl Into<String>) -> Self {
        ReadError {
            line,
            field: field.map(str::to_owned),
            problem,
            message: message.into(),
        }
    }
}

/// Where a reader stands: enough to resume reading from the middle of a
/// seekable source (see [`Reader::resume`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// Byte offset of the next line.
    pub offset: u64,
    /// Number of the next line (1-based).
    pub line: u64,
    /// The `seq` the next event must carry.
    pub seq: u64,
    /// The last event's `t_ns` (the next may not be smaller).
    pub t_ns: u64,
}

/// Reads a trace of either family, event by event.
///
/// ```
/// use turno_trace::{Reader, Kind, ActorEvent};
/// let text = "{\"format\":\"turno-trace\",\"version\":1}\n\
///             {\"seq\":0,\"t_ns\":0,\"kind\":\"reject\",\"actor\":4}\n\
///             {\"seq\":2,\"t_ns\":0,\"kind\":\"reject\",\"actor\":4}\n";
/// let mut r = Reader::new(text.as_bytes()).unwrap();
/// let first = r.next().unwrap().unwrap();
/// assert!(matches!(first.kind, Kind::Actor(ActorEvent::Reject { .. })));
/// let err = r.next().unwrap().unwrap_err();
/// assert_eq!((err.line, err.field.as_deref()), (3, Some("seq")));
/// assert_eq!(err.to_string(), "line 3, field `seq`: expected 1, found 2 (a gap or a repeat)");
/// ```
pub struct Reader<R> {
    src: R,
    header: Header,
    pos: Position,
    buf: Vec<u8>,
    failed: bool,
    unknown_kinds: u64,
}

impl<R: BufRead> Reader<R> {
    /// Reads and checks the header line.
    pub fn new(mut src: R) -> Result<Self, ReadError> {
        let mut buf = Vec::new();
        let mut pos = Position {
            offset: 0,
            line: 1,
            seq: 0,
            t_ns: 0,
        };
        let header = loop {
            let n = read_line(&mut src, &mut buf, pos.line)?;
            if n == 0 {
                return Err(ReadError::new(
                    pos.line,
                    None,
                    Problem::Header,
                    "empty trace: the header line is missing",
                ));
            }
            pos.offset += n as u64;
            if trim(&buf).is_empty() {
                pos.line += 1;
                continue;
            }
            break parse_header(&buf, pos.line)?;
        };
        pos.line += 1;
        Ok(Reader {
            src,
            header,
            pos,
            buf,
            failed: false,
            unknown_kinds: 0,
        })
    }

    /// Continues a trace whose header is known from `pos` (a position an
    /// earlier reader of the same trace reported), with `src` already
    /// positioned at `pos.offset`.
    pub fn resume(src: R, header: Header, pos: Position) -> Self {
        Reader {
            src,
            header,
            pos,
            buf: Vec::new(),
            failed: false,
            unknown_kinds: 0,
        }
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Where the next event will be read.
    pub fn position(&self) -> Position {
        self.pos
    }

    /// Events of kinds this reader does not know, skipped so far.
    pub fn unknown_kinds(&self) -> u64 {
        self.unknown_kinds
    }

    fn next_event(&mut self) -> Result<Option<Event>, ReadError> {
        let format = self.header.format;
        loop {
            let line = self.pos.line;
            // A line wholly in the source's buffer (all but the few that
            // straddle its end) is decoded there, without a copy.
            let buffered = self.src.fill_buf().map_err(|e| io_error(line, e))?;
            let event = if let Some(end) = memchr::memchr(b'\n', buffered) {
                let bytes = &buffered[..=end];
                let event = (!trim(bytes).is_empty()).then(|| parse_event(format, bytes, line));
                self.src.consume(end + 1);
                self.pos.offset += end as u64 + 1;
                self.pos.line += 1;
                match event {
                    Some(e) => e?,
                    None => continue,
                }
            } else {
                let n = read_line(&mut self.src, &mut self.buf, line)?;
                if n == 0 {
                    return Ok(None);
                }
                self.pos.offset += n as u64;
                self.pos.line += 1;
                if trim(&self.buf).is_empty() {
                    continue;
                }
                parse_event(format, &self.buf, line)?
            };
            if event.seq != self.pos.seq {
                return Err(ReadError::new(
                    line,
                    Some("seq"),
                    Problem::Seq,
                    format!(
                        "expected {}, found {} (a gap or a repeat)",
                        self.pos.seq, event.seq
                    ),
                ));
            }
            if event.t_ns < self.pos.t_ns {
                return Err(ReadError::new(
                    line,
                    Some("t_ns"),
                    Problem::Time,
                    format!("time went back from {} to {}", self.pos.t_ns, event.t_ns),
                ));
            }
            self.pos.seq += 1;
            self.pos.t_ns = event.t_ns;
            if matches!(event.kind, Kind::Other(_)) {
                self.unknown_kinds += 1;
            }
            return Ok(Some(event));
        }
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Event, ReadError>;

    /// The next event; after the first error, `None`.
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_event() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Reads a whole trace held in memory: the header and every event, or the
/// first problem.
pub fn read_all(bytes: &[u8]) -> Result<(Header, Vec<Event>), ReadError> {
    let reader = Reader::new(bytes)?;
    let header = reader.header().clone();
    let events = reader.collect::<Result<Vec<_>, _>>()?;
    Ok((header, events))
}

/// Reads one line (with its newline) into `buf`, refusing lines longer than
/// [`MAX_LINE`]. Returns the bytes consumed, 0 at the end.
fn read_line<R: BufRead>(src: &mut R, buf: &mut Vec<u8>, line: u64) -> Result<usize, ReadError> {
    buf.clear();
    let limit = MAX_LINE as u64 + 1;
    let n = src
        .by_ref()
        .take(limit)
        .read_until(b'\n', buf)
        .map_err(|e| io_error(line, e))?;
    if buf.len() > MAX_LINE {
        return Err(ReadError::new(
            line,
            None,
            Problem::Syntax,
            format!("line longer than {MAX_LINE} bytes"),
        ));
    }
    Ok(n)
}

fn io_error(line: u64, e: std::io::Error) -> ReadError {
    ReadError::new(line, None, Problem::Io, e.to_string())
}

fn trim(b: &[u8]) -> &[u8] {
    b.trim_ascii()
}

fn parse_object(buf: &[u8], line: u64) -> Result<serde_json::Map<String, Value>, ReadError> {
    let text = std::str::from_utf8(buf)
        .map_err(|e| ReadError::new(line, None, Problem::Syntax, format!("not UTF-8: {e}")))?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ReadError::new(
            line,
            None,
            Problem::Syntax,
            "not a JSON object",
        )),
        Err(e) => Err(ReadError::new(
            line,
            None,
            Problem::Syntax,
            format!("not JSON: {e}"),
        )),
    }
}

fn parse_header(buf: &[u8], line: u64) -> Result<Header, ReadError> {
    let m = parse_object(buf, line).map_err(|mut e| {
        e.problem = Problem::Header;
        e
    })?;
    let bad =
        |field: &str, msg: String| Err(ReadError::new(line, Some(field), Problem::Header, msg));
    let format = match m.get("format").and_then(Value::as_str) {
        Some("turno-trace") => Format::Turno,
        Some("turno-js-trace") => Format::TurnoJs,
        Some(other) => {
            return bad(
                "format",
                format!(
                    "unknown format {other:?} (expected \"turno-trace\" or \"turno-js-trace\")"
                ),
            )
        }
        None => return bad("format", "missing or not a string".into()),
    };
    let version = match m.get("version").and_then(Value::as_u64) {
        Some(v) if (1..=u64::from(VERSION)).contains(&v) => v as u32,
        Some(v) => {
            return bad(
                "version",
                format!(
                    "{} version {v} is not readable (this reader knows 1 to {VERSION})",
                    format.name()
                ),
            )
        }
        None => return bad("version", "missing or not an unsigned integer".into()),
    };
    let (model, file) = if format == Format::TurnoJs {
        let model = match m.get("model").and_then(Value::as_str) {
            Some("node") => Model::Node,
            Some("html") => Model::Html,
            _ => return bad("model", "expected \"node\" or \"html\"".into()),
        };
        let Some(file) = m.get("file").and_then(Value::as_str) else {
            return bad("file", "missing or not a string".into());
        };
        (Some(model), Some(file.to_owned()))
    } else {
        (None, None)
    };
    let node = match m.get("node") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) => Some(n.clone()),
        Some(_) => return bad("node", "expected a string (NAME#INCARNATION)".into()),
    };
    let nodes = match m.get("nodes") {
        None | Some(Value::Null) => None,
        Some(v) => match Vec::<String>::deserialize(v) {
            Ok(list) => Some(list),
            Err(_) => return bad("nodes", "expected a list of strings".into()),
        },
    };
    let epoch_unix_ns = match m.get("epoch_unix_ns") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) => Some(n),
            None => return bad("epoch_unix_ns", "expected an unsigned integer".into()),
        },
    };
    Ok(Header {
        format,
        version,
        model,
        file,
        node,
        nodes,
        epoch_unix_ns,
    })
}

const ENVELOPE: [&str; 6] = ["seq", "t_ns", "kind", "js_stack", "loop", "node"];

/// Decodes one event line: a well-formed line of a known kind by the fast
/// decoder ([`crate::fast`]), which only ever accepts what
/// [`parse_event_checked`] accepts, with the same result (property tests
/// hold them to it); anything else (an unknown kind, a bad field, a
/// duplicate key) by that slower path, which names the line and field at
/// fault.
fn parse_event(format: Format, buf: &[u8], line: u64) -> Result<Event, ReadError> {
    match crate::fast::decode(format, buf) {
        Some(e) => Ok(e),
        None => parse_event_checked(format, buf, line),
    }
}

/// The reference decoder: through a JSON `Value`, field by field, so a
/// problem can be named exactly.
pub(crate) fn parse_event_checked(
    format: Format,
    buf: &[u8],
    line: u64,
) -> Result<Event, ReadError> {
    let mut m = parse_object(buf, line)?;
    let field_err =
        |field: &str, msg: String| ReadError::new(line, Some(field), Problem::Field, msg);
    let seq = m
        .get("seq")
        .and_then(Value::as_u64)
        .ok_or_else(|| field_err("seq", "missing or not an unsigned integer".into()))?;
    let t_ns = m
        .get("t_ns")
        .and_then(Value::as_u64)
        .ok_or_else(|| field_err("t_ns", "missing or not an unsigned integer".into()))?;
    let kind = match m.get("kind") {
        Some(Value::String(k)) => k.clone(),
        _ => return Err(field_err("kind", "missing or not a string".into())),
    };
    let js_stack = match m.remove("js_stack") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            Vec::<String>::deserialize(v)
                .map_err(|_| field_err("js_stack", "expected a list of strings".into()))?,
        ),
    };
    let loop_id = match m.remove("loop") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| field_err("loop", "expected an unsigned integer".into()))?,
        ),
    };
    let node = match m.remove("node") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) => Some(n),
        Some(_) => return Err(field_err("node", "expected a string".into())),
    };
    let known = match format {
        Format::Turno => ACTOR_KINDS.contains(&kind.as_str()),
        Format::TurnoJs => JS_KINDS.contains(&kind.as_str()),
    };
    let kind = if !known {
        let mut fields = m;
        for k in ENVELOPE {
            fields.remove(k);
        }
        Kind::Other(OtherKind { kind, fields })
    } else {
        let value = Value::Object(m);
        let result = match format {
            Format::Turno => ActorEvent::deserialize(&value).map(Kind::Actor),
            Format::TurnoJs => JsEvent::deserialize(&value).map(Kind::Js),
        };
        result.map_err(|e| {
            let msg = e.to_string();
            let field = culprit(&value, &msg);
            ReadError::new(
                line,
                field.as_deref(),
                Problem::Field,
                format!("{kind}: {msg}"),
            )
        })?
    };
    Ok(Event {
        seq,
        t_ns,
        kind,
        js_stack,
        loop_id,
        node,
    })
}

/// Names the field a serde message is about. serde says which field is
/// missing, but for a wrong type or value it only describes the value
/// found; the field holding exactly that value is the culprit (when only
/// one does).
fn culprit(obj: &Value, msg: &str) -> Option<String> {
    if let Some(rest) = msg.strip_prefix("missing field `") {
        return rest.split('`').next().map(str::to_owned);
    }
    let Value::Object(m) = obj else { return None };
    let unexpected = if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let v = rest.split('`').next()?;
        return single(
            m.iter()
                .filter(|(k, val)| !ENVELOPE.contains(&k.as_str()) && val.as_str() == Some(v))
                .map(|(k, _)| k),
        );
    } else if let Some(rest) = msg
        .strip_prefix("invalid type: ")
        .or_else(|| msg.strip_prefix("invalid value: "))
    {
        rest.rsplit_once(", expected").map(|(u, _)| u)?
    } else {
        // A custom error (e.g. a policy that does not parse) quotes the text.
        return single(
            m.iter()
                .filter(|(k, val)| {
                    !ENVELOPE.contains(&k.as_str())
                        && val
                            .as_str()
                            .is_some_and(|s| msg.contains(&format!("{s:?}")))
                })
                .map(|(k, _)| k),
        );
    };
    single(
        m.iter()
            .filter(|(k, v)| !ENVELOPE.contains(&k.as_str()) && describe(v) == unexpected)
            .map(|(k, _)| k),
    )
}

fn single<'a>(mut it: impl Iterator<Item = &'a String>) -> Option<String> {
    let first = it.next()?;
    it.next().is_none().then(|| first.clone())
}

/// serde's `Unexpected` rendering of a JSON value.
fn describe(v: &Value) -> String {
    match v {
        Value::Null => "unit value".into(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) if n.is_f64() => format!("floating point `{n}`"),
        Value::Number(n) => format!("integer `{n}`"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "sequence".into(),
        Value::Object(_) => "map".into(),
    }
}

/// The kinds of the runtime family (and its statechart extension).
pub const ACTOR_KINDS: &[&str] = &[
    "spawn",
    "enqueue",
    "drop",
    "reject",
    "full",
    "dead_letter",
    "turn_start",
    "turn_end",
    "stash",
    "unstash",
    "timer_set",
    "timer_fire",
    "timer_cancel",
    "ask",
    "stale_reply",
    "fail",
    "restart",
    "escalate",
    "stop",
    "mute",
    "unmute",
    "chart_define",
    "chart_event",
    "chart_exit",
    "chart_transition",
    "chart_enter",
    "remote_send",
    "remote_wire",
    "remote_receive",
    "stream_open",
    "stream_push",
    "stream_drop",
    "stream_reject",
    "stream_full",
    "stream_take",
];

/// The kinds of the JavaScript family.
pub const JS_KINDS: &[&str] = &[
    "stack_push",
    "stack_pop",
    "enqueue",
    "dequeue",
    "cancel",
    "phase",
    "time_advance",
    "microtask_checkpoint",
    "render_start",
    "render_end",
    "animation_start",
    "animation_cancel",
    "compositor_frame",
    "promise_observed",
    "promise",
    "output",
    "uncaught",
    "note",
    "budget_exhausted",
    "worker_start",
    "worker_error",
    "message_post",
    "worker_end",
    "run_end",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds serde says an enum has, from its unknown-variant message.
    fn serde_kinds(format: Format) -> Vec<String> {
        let line = b"{\"kind\":\"?\"}";
        let msg = match format {
            Format::Turno => serde_json::from_slice::<ActorEvent>(line).unwrap_err(),
            Format::TurnoJs => serde_json::from_slice::<JsEvent>(line).unwrap_err(),
        }
        .to_string();
        let list = msg.split("expected one of ").nth(1).unwrap();
        // `a`, `b`, ... : the names are the odd pieces between backticks.
        list.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn the_kind_lists_are_the_enums() {
        let mut actor = serde_kinds(Format::Turno);
        let mut js = serde_kinds(Format::TurnoJs);
        actor.sort();
        js.sort();
        let mut want_actor: Vec<String> = ACTOR_KINDS.iter().map(|k| k.to_string()).collect();
        let mut want_js: Vec<String> = JS_KINDS.iter().map(|k| k.to_string()).collect();
        want_actor.sort();
        want_js.sort();
        assert_eq!(actor, want_actor);
        assert_eq!(js, want_js);
    }
}
