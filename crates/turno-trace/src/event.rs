//! The envelope every trace shares: a header line, then events with `seq`,
//! `t_ns` and `kind`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::actor::ActorEvent;
use crate::js::{JsEvent, Model};

/// The highest version of either format this crate reads (and the one it
/// writes).
pub const VERSION: u32 = 1;

/// Which family a trace belongs to (the header's `format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Format {
    /// The runtime: actors, mailboxes, timers, statecharts.
    #[serde(rename = "turno-trace")]
    Turno,
    /// The JavaScript event-loop explorer.
    #[serde(rename = "turno-js-trace")]
    TurnoJs,
}

impl Format {
    /// The name the header carries.
    pub const fn name(self) -> &'static str {
        match self {
            Format::Turno => "turno-trace",
            Format::TurnoJs => "turno-js-trace",
        }
    }
}

/// The first line of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The family.
    pub format: Format,
    /// The format version (at most [`VERSION`]).
    pub version: u32,
    /// `turno-js-trace`: the host model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Model>,
    /// `turno-js-trace`: the program's file name as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `turno-trace` of one cluster node: the node that recorded it,
    /// `NAME#INCARNATION`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `turno-trace` merged from several nodes: the nodes, in the order
    /// the inspector draws their lanes; each event names its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<String>>,
    /// `turno-trace` of one cluster node: when its `t_ns` 0 was, in
    /// nanoseconds since the Unix epoch, so traces of nodes in different
    /// processes merge on one time line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch_unix_ns: Option<u64>,
}

impl Header {
    /// The header of a runtime trace.
    pub fn turno() -> Self {
        Header {
            format: Format::Turno,
            version: VERSION,
            model: None,
            file: None,
            node: None,
            nodes: None,
            epoch_unix_ns: None,
        }
    }

    /// The header of one cluster node's runtime trace: `node` is
    /// `NAME#INCARNATION` ([`node_id`]).
    pub fn turno_node(node: impl Into<String>) -> Self {
        Header {
            node: Some(node.into()),
            ..Header::turno()
        }
    }

    /// The header of a runtime trace merged from the nodes of a cluster.
    pub fn turno_cluster(nodes: Vec<String>) -> Self {
        Header {
            nodes: Some(nodes),
            ..Header::turno()
        }
    }

    /// The header of a JavaScript trace.
    pub fn js(model: Model, file: impl Into<String>) -> Self {
        Header {
            format: Format::TurnoJs,
            version: VERSION,
            model: Some(model),
            file: Some(file.into()),
            node: None,
            nodes: None,
            epoch_unix_ns: None,
        }
    }

    /// The header as its JSON line (without the newline).
    pub fn to_line(&self) -> String {
        // Serialising a struct of strings and numbers cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A cluster node's id in a trace: `NAME#INCARNATION`.
///
/// ```
/// assert_eq!(turno_trace::node_id("b", 3), "b#3");
/// ```
pub fn node_id(name: &str, inc: u64) -> String {
    format!("{name}#{inc}")
}

/// A kind this reader does not know (a newer writer's); kept, not applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OtherKind {
    /// The kind's name.
    pub kind: String,
    /// Its other fields.
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// What an event says, by family.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Kind {
    /// A runtime (or statechart) event.
    Actor(ActorEvent),
    /// A JavaScript explorer event.
    Js(JsEvent),
    /// A kind unknown to this reader.
    Other(OtherKind),
}

/// One event line: `seq`, `t_ns`, `kind` and the kind's fields.
///
/// ```
/// use turno_trace::{ActorEvent, ActorId, Event, Kind, Lane};
/// let e = Event::new(12, 10_000_000, Kind::Actor(ActorEvent::Enqueue {
///     actor: ActorId(3), lane: Lane::User, depth: 1 }));
/// assert_eq!(e.to_line(),
///     r#"{"seq":12,"t_ns":10000000,"kind":"enqueue","actor":3,"lane":"user","depth":1}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Position in the trace, from 0, without gaps.
    pub seq: u64,
    /// Time of the step in nanoseconds; never decreases.
    pub t_ns: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: Kind,
    /// `turno-js-trace`: the JavaScript frames active when JavaScript called
    /// into the host, outermost first (the innermost, the one that called
    /// the host, is last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub js_stack: Option<Vec<String>>,
    /// `turno-js-trace`: the event loop the event belongs to (0 the page or
    /// Node's main thread, 1.. dedicated workers in creation order).
    #[serde(default, rename = "loop", skip_serializing_if = "Option::is_none")]
    pub loop_id: Option<u32>,
    /// A cluster trace merged from several nodes: the node that recorded
    /// the event, `NAME#INCARNATION` (absent in one node's own trace,
    /// whose header names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

impl Event {
    /// An event without `js_stack`.
    pub fn new(seq: u64, t_ns: u64, kind: Kind) -> Self {
        Event {
            seq,
            t_ns,
            kind,
            js_stack: None,
            loop_id: None,
            node: None,
        }
    }

    /// The event as its JSON line (without the newline).
    pub fn to_line(&self) -> String {
        // Every field is a string, number, bool, list or map with string
        // keys: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The `kind` name.
    pub fn kind_name(&self) -> String {
        match &self.kind {
            Kind::Other(o) => o.kind.clone(),
            k => serde_json::to_value(k)
                .ok()
                .and_then(|v| v.get("kind").and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_default(),
        }
    }
}
