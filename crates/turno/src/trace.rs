//! The trace: every push, pop, drop and decision, in order.
//!
//! A system built with a [`TraceSink`] records one [`TraceEvent`] per
//! observable step: a message enqueued or dropped, a turn started and ended,
//! a timer set, fired or cancelled, an actor spawned, restarted or stopped, a
//! stale reply discarded. On the deterministic scheduler the same seed gives
//! the same trace, byte for byte, which is what makes a run replayable.
//!
//! The serialised form (JSON lines, format `turno-trace`, version
//! [`FORMAT_VERSION`]) is documented in `docs/trace-format.md`.
//!
//! ```
//! use turno::trace::{ActorEvent, RingSink};
//! use turno::{Actor, Context, DetSystem, Props, System};
//!
//! struct Sink;
//! impl Actor for Sink {
//!     type Msg = u8;
//!     fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: u8) {}
//! }
//!
//! let ring = RingSink::new(1024);
//! let mut sys = DetSystem::builder().trace(ring.clone()).build();
//! let sink = sys.spawn(Props::new().name("sink"), || Sink).unwrap();
//! let _ = sink.try_send(7);
//! sys.run_until_idle().unwrap();
//! let kinds: Vec<&str> = ring.events().iter().map(|e| match e.kind {
//!     ActorEvent::Spawn { .. } => "spawn",
//!     ActorEvent::Enqueue { .. } => "enqueue",
//!     ActorEvent::TurnStart { .. } => "turn_start",
//!     ActorEvent::TurnEnd { .. } => "turn_end",
//!     _ => "other",
//! }).collect();
//! // spawn, start control enqueued, user message enqueued, then two turns.
//! assert_eq!(kinds, ["spawn", "enqueue", "enqueue", "turn_start", "turn_end", "turn_start", "turn_end"]);
//! ```

use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use parking_lot::Mutex;
use serde::Serialize;

use crate::ids::ActorId;
use crate::ids::{RequestId, TimerId};
use crate::sync::AtomicU64;
use crate::time::Clock;
use crate::Policy;

/// The runtime's events are `turno_trace`'s: one definition, written here
/// and read by the inspector.
pub use turno_trace::actor::{
    ActorEvent, ChartStateDef, ChartTransitionDef, DeadLetterReason, Dropped, EventOrigin,
    HistoryDepth, Lane, StateKind, TurnKind,
};
pub use turno_trace::actor::{RemoteReceived, RemoteSendKind};
pub use turno_trace::DropPolicy;

/// The version of the serialised trace format (`docs/trace-format.md`).
pub const FORMAT_VERSION: u32 = turno_trace::VERSION;

/// The name of the serialised trace format.
pub const FORMAT_NAME: &str = turno_trace::Format::Turno.name();

/// One recorded step.
///
/// Its JSON line is `turno_trace::Event`'s for the same step: `seq`,
/// `t_ns`, then the kind's fields (`docs/trace-format.md`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceEvent {
    /// Position in the trace, from 0, without gaps.
    pub seq: u64,
    /// System time of the step in nanoseconds (virtual on the deterministic scheduler).
    pub t_ns: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: ActorEvent,
}

impl From<ActorId> for turno_trace::ActorId {
    fn from(a: ActorId) -> Self {
        turno_trace::ActorId(a.as_u64())
    }
}

impl From<TimerId> for turno_trace::TimerId {
    fn from(t: TimerId) -> Self {
        turno_trace::TimerId(t.as_u64())
    }
}

impl From<RequestId> for turno_trace::RequestId {
    fn from(r: RequestId) -> Self {
        turno_trace::RequestId(r.as_u64())
    }
}

impl From<Policy> for turno_trace::Policy {
    fn from(p: Policy) -> Self {
        match p {
            Policy::KeepNewest(n) => turno_trace::Policy::KeepNewest(n),
            Policy::KeepOldest(n) => turno_trace::Policy::KeepOldest(n),
            Policy::Reject(n) => turno_trace::Policy::Reject(n),
            Policy::Suspend(n) => turno_trace::Policy::Suspend(n),
            Policy::Unbounded => turno_trace::Policy::Unbounded,
        }
    }
}

/// The policy a `drop` names: only keep-newest and keep-oldest drop (a
/// keep-newest mailbox of capacity 0 drops the incoming message), so any
/// other policy cannot reach a `drop`.
pub(crate) fn drop_policy(p: Policy) -> DropPolicy {
    match p {
        Policy::KeepNewest(_) => DropPolicy::KeepNewest,
        _ => DropPolicy::KeepOldest,
    }
}

/// A statechart step an actor records about itself
/// ([`Context::trace_chart`](crate::Context::trace_chart)); the trace
/// event is the matching `ActorEvent::Chart*` with the actor's id.
#[derive(Clone, Debug, PartialEq)]
pub enum ChartStep {
    /// See [`ActorEvent::ChartDefine`].
    Define {
        /// The machine's id.
        machine: String,
        /// Its states in document order.
        states: Vec<ChartStateDef>,
        /// Its transitions in document order.
        transitions: Vec<ChartTransitionDef>,
        /// The root state's id.
        root: Option<String>,
        /// The root's initial state.
        initial: Option<String>,
        /// The root's kind.
        root_kind: Option<StateKind>,
    },
    /// See [`ActorEvent::ChartEvent`].
    Event {
        /// The event's name.
        event: String,
        /// Raised by the chart itself.
        internal: bool,
    },
    /// See [`ActorEvent::ChartExit`].
    Exit(String),
    /// See [`ActorEvent::ChartTransition`].
    Transition {
        /// The source state's id.
        source: String,
        /// The event; `None` when eventless.
        event: Option<String>,
        /// The targets' ids.
        targets: Vec<String>,
        /// Its position in the definition's transitions.
        index: Option<u32>,
    },
    /// See [`ActorEvent::ChartEnter`].
    Enter(String),
}

impl ChartStep {
    pub(crate) fn into_event(self, actor: ActorId) -> ActorEvent {
        let actor = actor.into();
        match self {
            ChartStep::Define {
                machine,
                states,
                transitions,
                root,
                initial,
                root_kind,
            } => ActorEvent::ChartDefine {
                actor,
                machine,
                states,
                transitions,
                root,
                initial,
                root_kind,
            },
            ChartStep::Event { event, internal } => ActorEvent::ChartEvent {
                actor,
                event,
                origin: if internal {
                    EventOrigin::Internal
                } else {
                    EventOrigin::External
                },
            },
            ChartStep::Exit(state) => ActorEvent::ChartExit { actor, state },
            ChartStep::Transition {
                source,
                event,
                targets,
                index,
            } => ActorEvent::ChartTransition {
                actor,
                source,
                event,
                targets,
                index,
            },
            ChartStep::Enter(state) => ActorEvent::ChartEnter { actor, state },
        }
    }
}

/// A cluster node's step ([`System::trace_remote`](crate::System::trace_remote)):
/// a remote message's marks, each naming it by its id across the cluster
/// (`docs/cluster.md`).
#[derive(Clone, Debug, PartialEq)]
pub enum RemoteStep {
    /// See [`ActorEvent::RemoteSend`].
    Send {
        /// The message's id.
        msg: String,
        /// Tell, send or ask.
        how: RemoteSendKind,
        /// The receiving node.
        to_node: String,
        /// The receiving actor's path.
        to_path: String,
    },
    /// See [`ActorEvent::RemoteWire`].
    Wire {
        /// The message's id.
        msg: String,
        /// The subject it was published on.
        subject: String,
    },
    /// See [`ActorEvent::RemoteReceive`].
    Receive {
        /// The receiving actor, if an exported actor takes it.
        actor: Option<ActorId>,
        /// The message's id.
        msg: String,
        /// The sending node.
        from_node: String,
        /// What happened to it.
        verdict: RemoteReceived,
    },
}

impl RemoteStep {
    pub(crate) fn into_event(self) -> ActorEvent {
        let node = turno_trace::ActorId(0);
        match self {
            RemoteStep::Send {
                msg,
                how,
                to_node,
                to_path,
            } => ActorEvent::RemoteSend {
                actor: node,
                msg,
                how,
                to_node,
                to_path,
            },
            RemoteStep::Wire { msg, subject } => ActorEvent::RemoteWire {
                actor: node,
                msg,
                subject,
            },
            RemoteStep::Receive {
                actor,
                msg,
                from_node,
                verdict,
            } => ActorEvent::RemoteReceive {
                actor: actor.map_or(node, Into::into),
                msg,
                from_node,
                verdict,
            },
        }
    }
}

/// Where trace events go.
///
/// A sink is called with the system's trace lock held, in trace order; it
/// should be quick (buffer, then write) and must not call back into the system.
pub trait TraceSink: Send {
    /// Records one event.
    fn record(&mut self, event: &TraceEvent);
    /// Flushes buffered output, if any.
    fn flush(&mut self) {}
}

/// Keeps the last `capacity` events in memory; clones share the same ring.
#[derive(Clone, Debug)]
pub struct RingSink {
    inner: Arc<Mutex<Ring>>,
}

#[derive(Debug)]
struct Ring {
    events: VecDeque<TraceEvent>,
    capacity: usize,
    overwritten: u64,
}

impl RingSink {
    /// A ring holding at most `capacity` events (at least 1).
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        RingSink {
            inner: Arc::new(Mutex::new(Ring {
                events: VecDeque::with_capacity(capacity.min(4096)),
                capacity,
                overwritten: 0,
            })),
        }
    }

    /// A copy of the events currently held, oldest first.
    pub fn events(&self) -> Vec<TraceEvent> {
        self.inner.lock().events.iter().cloned().collect()
    }

    /// How many old events were overwritten because the ring was full.
    pub fn overwritten(&self) -> u64 {
        self.inner.lock().overwritten
    }
}

impl TraceSink for RingSink {
    fn record(&mut self, event: &TraceEvent) {
        let mut ring = self.inner.lock();
        if ring.events.len() == ring.capacity {
            ring.events.pop_front();
            ring.overwritten += 1;
        }
        ring.events.push_back(event.clone());
    }
}

/// Writes the trace as JSON lines: a header line, then one event per line.
///
/// The writer must be owned (`'static`): a file, stdout, or, to read the
/// trace back from memory, a [`SharedBuffer`] (see
/// [`JsonLinesSink::in_memory`]).
///
/// ```
/// use turno::trace::{JsonLinesSink, TraceSink};
/// let mut out = Vec::new();
/// JsonLinesSink::new(&mut out).flush();
/// assert_eq!(String::from_utf8(out).unwrap(),
///            "{\"format\":\"turno-trace\",\"version\":1}\n");
/// ```
pub struct JsonLinesSink<W: Write + Send> {
    out: W,
    error: Option<std::io::Error>,
}

impl<W: Write + Send> JsonLinesSink<W> {
    /// Writes the header line at once.
    pub fn new(mut out: W) -> Self {
        let error = writeln!(out, "{}", turno_trace::Header::turno().to_line()).err();
        JsonLinesSink { out, error }
    }

    /// Writes the header of cluster node `name`, incarnation `inc`
    /// (`node`, and `epoch_unix_ns`: now, which is close to the `t_ns` 0
    /// of a real system built right after), so that `turno inspect`
    /// merges it with the other nodes' traces.
    ///
    /// ```
    /// use turno::trace::{JsonLinesSink, TraceSink};
    /// let mut out = Vec::new();
    /// JsonLinesSink::for_node(&mut out, "b", 3).flush();
    /// let header: serde_json::Value = serde_json::from_slice(&out).unwrap();
    /// assert_eq!(header["node"], "b#3");
    /// assert!(header["epoch_unix_ns"].as_u64().unwrap() > 0);
    /// ```
    pub fn for_node(mut out: W, name: &str, inc: u64) -> Self {
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        let mut header = turno_trace::Header::turno_node(turno_trace::node_id(name, inc));
        header.epoch_unix_ns = Some(epoch);
        let error = writeln!(out, "{}", header.to_line()).err();
        JsonLinesSink { out, error }
    }

    /// The first write error, if any: writing stops at the first failure
    /// instead of panicking inside the runtime.
    pub fn error(&self) -> Option<&std::io::Error> {
        self.error.as_ref()
    }
}

impl JsonLinesSink<SharedBuffer> {
    /// A sink writing into memory, and the buffer to read it back from
    /// (while the system runs, or after).
    ///
    /// ```
    /// use turno::trace::JsonLinesSink;
    /// use turno::{Actor, Context, DetSystem, Props, System};
    ///
    /// struct Quiet;
    /// impl Actor for Quiet {
    ///     type Msg = ();
    ///     fn handle(&mut self, _ctx: &mut Context<'_, Self>, _m: ()) {}
    /// }
    ///
    /// let (sink, buffer) = JsonLinesSink::in_memory();
    /// let mut sys = DetSystem::builder().trace(sink).build();
    /// sys.spawn(Props::new(), || Quiet).unwrap();
    /// sys.run_until_idle().unwrap();
    /// sys.flush_trace();
    /// let text = buffer.text();
    /// assert!(text.starts_with("{\"format\":\"turno-trace\""));
    /// assert!(text.contains("\"kind\":\"spawn\""));
    /// ```
    pub fn in_memory() -> (Self, SharedBuffer) {
        let buffer = SharedBuffer::default();
        (JsonLinesSink::new(buffer.clone()), buffer)
    }
}

/// An in-memory writer whose clones share one byte buffer: give one to a
/// sink, keep one to read.
#[derive(Clone, Debug, Default)]
pub struct SharedBuffer(Arc<Mutex<Vec<u8>>>);

impl SharedBuffer {
    /// A copy of the bytes written so far.
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().clone()
    }

    /// The bytes written so far, as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

impl Write for SharedBuffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<W: Write + Send> TraceSink for JsonLinesSink<W> {
    fn record(&mut self, event: &TraceEvent) {
        if self.error.is_some() {
            return;
        }
        let result = serde_json::to_writer(&mut self.out, event)
            .map_err(std::io::Error::from)
            .and_then(|()| self.out.write_all(b"\n"));
        self.error = result.err();
    }

    fn flush(&mut self) {
        if self.error.is_none() {
            self.error = self.out.flush().err();
        }
    }
}

/// The system's trace recorder: numbers events and hands them to the sink.
pub(crate) struct Tracer {
    sink: Option<Mutex<Box<dyn TraceSink>>>,
    seq: AtomicU64,
}

impl Tracer {
    pub(crate) fn new(sink: Option<Box<dyn TraceSink>>) -> Self {
        Tracer {
            sink: sink.map(Mutex::new),
            seq: AtomicU64::new(0),
        }
    }

    /// Records the event built by `kind`, only when tracing is on (the
    /// clock is not even read otherwise). The look at the sink is inlined
    /// into every caller, the recording is not: tracing off costs a load
    /// and a branch, not a call (the message path's enqueue event made
    /// `emit` a call of its own, about 17 instructions a message).
    #[inline(always)]
    pub(crate) fn emit(&self, clock: &Clock, kind: impl FnOnce() -> ActorEvent) {
        if let Some(sink) = &self.sink {
            self.record(sink, clock, kind);
        } else {
            #[cfg(feature = "tracing")]
            if crate::tracing_log::wanted() {
                crate::tracing_log::event(&kind());
            }
        }
    }

    /// [`Tracer::emit`] with tracing on.
    #[cold]
    #[inline(never)]
    fn record(
        &self,
        sink: &Mutex<Box<dyn TraceSink>>,
        clock: &Clock,
        kind: impl FnOnce() -> ActorEvent,
    ) {
        let mut sink = sink.lock();
        // The clock and the sequence number are read under the sink
        // lock, so that recorded order, numbering and time agree: read
        // before the lock, two workers could record `t_ns` going back.
        let now = clock.now();
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let event = TraceEvent {
            seq,
            t_ns: now.as_nanos(),
            kind: kind(),
        };
        #[cfg(feature = "tracing")]
        crate::tracing_log::event(&event.kind);
        sink.record(&event);
    }

    pub(crate) fn is_on(&self) -> bool {
        self.sink.is_some()
    }

    pub(crate) fn flush(&self) {
        if let Some(sink) = &self.sink {
            sink.lock().flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Actor, Addr, Context, DetSystem, Props, System};

    #[test]
    fn ring_keeps_the_newest_events() {
        let ring = RingSink::new(2);
        let tracer = Tracer::new(Some(Box::new(ring.clone())));
        let clock = Clock::default();
        for i in 0..3 {
            tracer.emit(&clock, || ActorEvent::Unmute {
                actor: turno_trace::ActorId(i),
            });
        }
        let seqs: Vec<u64> = ring.events().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, vec![1, 2]);
        assert_eq!(ring.overwritten(), 1);
    }

    #[test]
    fn json_lines_have_header_and_flat_kind() {
        let (sink, buf) = JsonLinesSink::in_memory();
        let tracer = Tracer::new(Some(Box::new(sink)));
        let clock = Clock::default();
        clock.advance_to(crate::time::Instant::from_nanos(5));
        tracer.emit(&clock, || ActorEvent::Enqueue {
            actor: turno_trace::ActorId(3),
            lane: Lane::User,
            depth: 1,
        });
        let text = buf.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], r#"{"format":"turno-trace","version":1}"#);
        assert_eq!(
            lines[1],
            r#"{"seq":0,"t_ns":5,"kind":"enqueue","actor":3,"lane":"user","depth":1}"#
        );
    }

    struct Sink;
    impl Actor for Sink {
        type Msg = u32;
        fn handle(&mut self, ctx: &mut Context<'_, Self>, m: u32) {
            if m == 0 {
                ctx.stop();
            }
            ctx.simulate_work(Duration::from_millis(10));
        }
    }

    struct Ticker {
        to: Vec<Addr<u32>>,
        n: u32,
    }
    impl Actor for Ticker {
        type Msg = ();
        fn started(&mut self, ctx: &mut Context<'_, Self>) {
            ctx.send_after(Duration::ZERO, ());
        }
        fn handle(&mut self, ctx: &mut Context<'_, Self>, _: ()) {
            self.n += 1;
            // The last message (0) stops each sink.
            let m = if self.n == 50 { 0 } else { self.n };
            for to in &self.to {
                let _ = ctx.send(to, m);
            }
            if self.n < 50 {
                ctx.send_after(Duration::from_millis(2), ());
            }
        }
    }

    /// A run with drops of both kinds, rejections, timers, dead letters and
    /// stops: each line the runtime writes is `turno_trace::Event`'s line
    /// for the same step, and the validating reader reads it back as a
    /// known kind.
    #[test]
    fn the_shared_format_is_the_documented_one_for_a_real_run() {
        let ring = RingSink::new(100_000);
        let mut sys = DetSystem::builder().trace(ring.clone()).build();
        let mut to = Vec::new();
        for p in [
            Policy::KeepNewest(3),
            Policy::KeepOldest(3),
            Policy::Reject(3),
            Policy::Suspend(3),
        ] {
            to.push(sys.spawn(Props::new().mailbox(p), || Sink).unwrap());
        }
        sys.spawn(Props::new().name("ticker"), move || Ticker {
            to: to.clone(),
            n: 0,
        })
        .unwrap();
        sys.advance(Duration::from_secs(1)).unwrap();
        let events = ring.events();
        let mut text = turno_trace::Header::turno().to_line();
        text.push('\n');
        let mut kinds = std::collections::BTreeSet::new();
        for e in &events {
            let line = serde_json::to_string(e).unwrap();
            let wire =
                turno_trace::Event::new(e.seq, e.t_ns, turno_trace::Kind::Actor(e.kind.clone()));
            assert_eq!(line, wire.to_line());
            kinds.insert(wire.kind_name());
            text.push_str(&line);
            text.push('\n');
        }
        for k in [
            "spawn",
            "enqueue",
            "drop",
            "reject",
            "turn_start",
            "turn_end",
            "timer_set",
            "timer_fire",
            "stop",
        ] {
            assert!(kinds.contains(k), "{k} not exercised: {kinds:?}");
        }
        let (_, read) = turno_trace::read_all(text.as_bytes()).unwrap();
        assert_eq!(read.len(), events.len());
        assert!(read
            .iter()
            .all(|e| matches!(e.kind, turno_trace::Kind::Actor(_))));
    }
}
