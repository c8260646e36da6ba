//! Events as the spec's `_event` sees them (5.10.1).

use serde_json::Value;

/// The `type` field of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// Raised by the processor itself (`done.*`, `error.*`).
    Platform,
    /// Raised with `<raise>` or `<send target="#_internal">`.
    Internal,
    /// Arrived through an event I/O processor (`<send>`, the outside world).
    External,
}

impl EventKind {
    /// The name `_event.type` shows.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Platform => "platform",
            EventKind::Internal => "internal",
            EventKind::External => "external",
        }
    }
}

/// An SCXML event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Dot-separated name.
    pub name: String,
    /// Platform, internal or external.
    pub kind: EventKind,
    /// The `id` of the `<send>` that produced it, if it had one.
    pub sendid: Option<String>,
    /// Where to send a reply (`#_scxml_<sessionid>` for SCXML sessions).
    pub origin: Option<String>,
    /// The I/O processor type of `origin`.
    pub origintype: Option<String>,
    /// The invocation it came from, for events from invoked children.
    pub invokeid: Option<String>,
    /// Payload (`None`: `_event.data` is undefined).
    pub data: Option<Value>,
}

/// The SCXML event I/O processor type.
pub const SCXML_IO_PROCESSOR: &str = "http://www.w3.org/TR/scxml/#SCXMLEventProcessor";

impl Event {
    /// A platform event (`done.state.*`, `error.execution`, ...).
    pub fn platform(name: impl Into<String>, data: Option<Value>) -> Self {
        Event {
            name: name.into(),
            kind: EventKind::Platform,
            sendid: None,
            origin: None,
            origintype: None,
            invokeid: None,
            data,
        }
    }

    /// An event from outside the session, with no origin.
    pub fn external(name: impl Into<String>, data: Option<Value>) -> Self {
        Event {
            kind: EventKind::External,
            ..Event::platform(name, data)
        }
    }

    /// Does the descriptor list of a transition match this event's name?
    /// A descriptor matches a name equal to it or beginning with it followed
    /// by `.`; a trailing `.*` or `.` is ignored; `*` matches every event.
    pub fn matches(&self, descriptors: &[String]) -> bool {
        descriptors.iter().any(|d| name_match(d, &self.name))
    }
}

/// One descriptor against a name: turno-chart's rule, so the compiled chart
/// and executable content match events the same way.
fn name_match(descriptor: &str, name: &str) -> bool {
    turno_chart::semantics::scxml_descriptor_matches(descriptor, name)
}

#[cfg(test)]
mod tests {
    use super::name_match;

    #[test]
    fn descriptors() {
        assert!(name_match("foo", "foo"));
        assert!(name_match("foo", "foo.bar"));
        assert!(name_match("foo.*", "foo.bar"));
        assert!(name_match("foo.", "foo.bar"));
        assert!(!name_match("foo", "foobar"));
        assert!(!name_match("foo.bar", "foo"));
        assert!(name_match("*", "anything"));
        assert!(name_match("error", "error.execution"));
    }
}
