//! One trace of the whole simulated cluster: every node's system writes
//! into it through its own sink ([`ClusterTrace::sink`]), in the order the
//! simulation runs them, each event naming its node; its time is the
//! broker's virtual clock. `turno inspect` opens it as a cluster trace
//! (nodes as lanes, each remote message followed across them).

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use turno::trace::{TraceEvent, TraceSink};
use turno_trace::{node_id, Event, Header, Kind};

/// A merged trace of the simulated cluster's nodes. Cheap to clone (a
/// shared handle).
///
/// ```
/// use std::time::Duration;
/// use turno::{DetSystem, System};
/// use turno_cluster::sim::{ClusterTrace, Faults, SimBroker};
/// use turno_cluster::node::{Node, NodeConfig};
///
/// let broker = SimBroker::new(7, Faults::none());
/// let trace = broker.record();
/// let sys = DetSystem::builder().trace(trace.sink("a", 1)).build();
/// let mut a = Node::new("a", 1, sys, broker.transport("a", Duration::ZERO), NodeConfig::default()).unwrap();
/// broker.advance(Duration::from_millis(3));
/// a.pump();
/// let text = trace.text();
/// assert!(text.starts_with(r#"{"format":"turno-trace","version":1,"nodes":["a#1"]}"#));
/// ```
#[derive(Clone, Default)]
pub struct ClusterTrace(Arc<Mutex<Inner>>);

#[derive(Default)]
struct Inner {
    nodes: Vec<String>,
    lines: Vec<u8>,
    seq: u64,
    now_ns: u64,
}

impl ClusterTrace {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A sink never panics while holding the lock; a poisoned one still
        // holds whole lines.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// An empty trace; [`SimBroker::record`](super::SimBroker::record)
    /// makes one whose time follows the broker's clock.
    pub fn new() -> Self {
        ClusterTrace::default()
    }

    /// The sink for node `name`, incarnation `inc` (give it to the node's
    /// system builder). A restarted node gets a new sink, a new lane.
    pub fn sink(&self, name: &str, inc: u64) -> ClusterSink {
        let node = node_id(name, inc);
        let mut inner = self.lock();
        if !inner.nodes.contains(&node) {
            inner.nodes.push(node.clone());
        }
        ClusterSink {
            trace: self.clone(),
            node,
        }
    }

    /// Sets the cluster's time, which the events recorded from now on
    /// carry (it never goes back).
    pub fn set_now(&self, now: Duration) {
        let mut inner = self.lock();
        let t = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
        inner.now_ns = inner.now_ns.max(t);
    }

    /// The trace so far: the header naming the nodes, then the events.
    pub fn text(&self) -> String {
        let inner = self.lock();
        let mut s = Header::turno_cluster(inner.nodes.clone()).to_line();
        s.push('\n');
        s.push_str(&String::from_utf8_lossy(&inner.lines));
        s
    }

    /// Writes [`ClusterTrace::text`] to `path`.
    pub fn write_to(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.text())
    }

    /// How many events were recorded.
    pub fn len(&self) -> u64 {
        self.lock().seq
    }

    /// True when no event was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One node's way into a [`ClusterTrace`].
pub struct ClusterSink {
    trace: ClusterTrace,
    node: String,
}

impl TraceSink for ClusterSink {
    fn record(&mut self, event: &TraceEvent) {
        let mut inner = self.trace.lock();
        let mut e = Event::new(inner.seq, inner.now_ns, Kind::Actor(event.kind.clone()));
        e.node = Some(self.node.clone());
        inner.seq += 1;
        let line = e.to_line();
        inner.lines.extend_from_slice(line.as_bytes());
        let _ = inner.lines.write_all(b"\n");
    }
}
