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
//! use turno::trace::{EventKind, RingSink};
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
//!     EventKind::Spawn { .. } => "spawn",
//!     EventKind::Enqueue { .. } => "enqueue",
//!     EventKind::TurnStart { .. } => "turn_start",
//!     EventKind::TurnEnd { .. } => "turn_end",
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

use crate::addr::ActorId;
use crate::sync::AtomicU64;
use crate::time::Clock;

/// The version of the serialised trace format (`docs/trace-format.md`).
pub const FORMAT_VERSION: u32 = turno_trace::VERSION;

/// The name of the serialised trace format.
pub const FORMAT_NAME: &str = turno_trace::Format::Turno.name();

/// One recorded step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceEvent {
    /// Position in the trace, from 0, without gaps.
    pub seq: u64,
    /// System time of the step in nanoseconds (virtual on the deterministic scheduler).
    pub t_ns: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Which lane of a mailbox a message travelled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Ordinary messages, subject to the overflow policy.
    User,
    /// Stop, failures, terminations, timers: never dropped by a policy.
    System,
}

/// What a turn was spent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnKind {
    /// The `started` hook.
    Started,
    /// The `stopped` hook.
    Stopped,
    /// A message from the mailbox.
    Message,
    /// A message re-delivered from the stash.
    Unstashed,
    /// A fresh reply to a pending request.
    Reply,
    /// A request that timed out.
    AskTimeout,
    /// A timer the actor set.
    Timer,
    /// A watched actor terminated.
    Terminated,
}

/// Why a message could not be delivered to its actor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadLetterReason {
    /// The actor had stopped (or never existed) when the message was sent.
    Closed,
    /// The message was still queued when the actor stopped.
    Drained,
}

/// Which element an overflow policy dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dropped {
    /// The incoming message (keep-oldest).
    Incoming,
    /// The oldest queued message, evicted (keep-newest).
    Oldest,
}

/// Every kind of step the runtime records.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EventKind {
    /// An actor was created.
    Spawn {
        /// The new actor.
        actor: ActorId,
        /// Its name (from `Props::name`, or `actor-<id>`).
        name: String,
        /// Its supervisor, if any.
        parent: Option<ActorId>,
        /// Its mailbox policy, e.g. `keep-newest(16)`.
        policy: String,
    },
    /// A message entered a mailbox.
    Enqueue {
        /// The receiver.
        actor: ActorId,
        /// The lane it entered.
        lane: Lane,
        /// The lane's depth after the push.
        depth: usize,
    },
    /// An overflow policy dropped a message.
    Drop {
        /// The receiver whose mailbox was full.
        actor: ActorId,
        /// The policy name (`keep_newest` or `keep_oldest`).
        policy: &'static str,
        /// Which message was lost.
        which: Dropped,
    },
    /// A reject mailbox handed a message back to its sender.
    Reject {
        /// The receiver whose mailbox was full.
        actor: ActorId,
    },
    /// A suspend mailbox was full: the sender must wait or is muted.
    Full {
        /// The receiver whose mailbox was full.
        actor: ActorId,
    },
    /// A message reached no actor.
    DeadLetter {
        /// The addressee.
        actor: ActorId,
        /// Why it was not delivered.
        reason: DeadLetterReason,
    },
    /// A turn began.
    TurnStart {
        /// The actor.
        actor: ActorId,
        /// What the turn handles.
        what: TurnKind,
    },
    /// A turn ended.
    TurnEnd {
        /// The actor.
        actor: ActorId,
        /// False when the handler panicked.
        ok: bool,
    },
    /// A message was set aside.
    Stash {
        /// The actor.
        actor: ActorId,
        /// Stash size after the push.
        size: usize,
    },
    /// Stashed messages were put back ahead of the mailbox.
    Unstash {
        /// The actor.
        actor: ActorId,
        /// How many were put back.
        count: usize,
    },
    /// A timer was set.
    TimerSet {
        /// The owner.
        actor: ActorId,
        /// Timer id, unique within the system.
        timer: u64,
        /// When it fires, in nanoseconds.
        deadline_ns: u64,
    },
    /// A timer fired (its message entered the system lane).
    TimerFire {
        /// The owner.
        actor: ActorId,
        /// Timer id.
        timer: u64,
    },
    /// A timer was cancelled before its message was handled.
    TimerCancel {
        /// The owner.
        actor: ActorId,
        /// Timer id.
        timer: u64,
    },
    /// A request was sent.
    Ask {
        /// The requester.
        actor: ActorId,
        /// The correlation id.
        request: u64,
        /// The addressee.
        to: ActorId,
    },
    /// A reply or timeout arrived for a request that was no longer awaited.
    StaleReply {
        /// The requester.
        actor: ActorId,
        /// The correlation id.
        request: u64,
        /// Why it was stale.
        reason: crate::ask::StaleReason,
    },
    /// An actor's turn panicked (or a hook did): it is failed until its
    /// supervisor decides.
    Fail {
        /// The actor.
        actor: ActorId,
        /// The panic message.
        error: String,
    },
    /// A supervisor restarted a child.
    Restart {
        /// The restarted actor.
        actor: ActorId,
        /// Restarts of this supervisor's children within the current period.
        restarts_in_period: u32,
    },
    /// A supervisor gave up and failed in turn.
    Escalate {
        /// The supervisor.
        actor: ActorId,
        /// The child whose failure it could not handle.
        child: ActorId,
    },
    /// An actor stopped for good.
    Stop {
        /// The actor.
        actor: ActorId,
        /// Why, as text.
        reason: String,
    },
    /// A sender was muted by a saturated suspend mailbox.
    Mute {
        /// The muted sender.
        actor: ActorId,
        /// The saturated receiver.
        by: ActorId,
    },
    /// A muted sender may run again.
    Unmute {
        /// The sender.
        actor: ActorId,
    },
    /// Extension: a statechart actor's definition (`turno-chart`).
    ChartDefine {
        /// The chart actor.
        actor: ActorId,
        /// The machine's id.
        machine: String,
        /// Its states in document order: `{"id", "parent", "kind"}`.
        states: Vec<serde_json::Value>,
        /// Its transitions: `{"source", "event", "targets"}`.
        transitions: Vec<serde_json::Value>,
    },
    /// Extension: a statechart starts processing an event.
    ChartEvent {
        /// The chart actor.
        actor: ActorId,
        /// The event's name.
        event: String,
        /// `external` (a macrostep starts) or `internal` (raised).
        origin: &'static str,
    },
    /// Extension: a microstep exited a state.
    ChartExit {
        /// The chart actor.
        actor: ActorId,
        /// The state's id.
        state: String,
    },
    /// Extension: a microstep took a transition.
    ChartTransition {
        /// The chart actor.
        actor: ActorId,
        /// The source state's id.
        source: String,
        /// The event; `None` when eventless.
        event: Option<String>,
        /// The targets' ids.
        targets: Vec<String>,
    },
    /// Extension: a microstep entered a state.
    ChartEnter {
        /// The chart actor.
        actor: ActorId,
        /// The state's id.
        state: String,
    },
}

/// A statechart step an actor records about itself
/// ([`Context::trace_chart`](crate::Context::trace_chart)); the trace
/// event is the matching `EventKind::Chart*` with the actor's id.
#[derive(Clone, Debug, PartialEq)]
pub enum ChartStep {
    /// See [`EventKind::ChartDefine`].
    Define {
        /// The machine's id.
        machine: String,
        /// Its states.
        states: Vec<serde_json::Value>,
        /// Its transitions.
        transitions: Vec<serde_json::Value>,
    },
    /// See [`EventKind::ChartEvent`].
    Event {
        /// The event's name.
        event: String,
        /// Raised by the chart itself.
        internal: bool,
    },
    /// See [`EventKind::ChartExit`].
    Exit(String),
    /// See [`EventKind::ChartTransition`].
    Transition {
        /// The source state's id.
        source: String,
        /// The event; `None` when eventless.
        event: Option<String>,
        /// The targets' ids.
        targets: Vec<String>,
    },
    /// See [`EventKind::ChartEnter`].
    Enter(String),
}

impl ChartStep {
    pub(crate) fn into_kind(self, actor: ActorId) -> EventKind {
        match self {
            ChartStep::Define {
                machine,
                states,
                transitions,
            } => EventKind::ChartDefine {
                actor,
                machine,
                states,
                transitions,
            },
            ChartStep::Event { event, internal } => EventKind::ChartEvent {
                actor,
                event,
                origin: if internal { "internal" } else { "external" },
            },
            ChartStep::Exit(state) => EventKind::ChartExit { actor, state },
            ChartStep::Transition {
                source,
                event,
                targets,
            } => EventKind::ChartTransition {
                actor,
                source,
                event,
                targets,
            },
            ChartStep::Enter(state) => EventKind::ChartEnter { actor, state },
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
        // Written through the shared format (`turno_trace`), which the
        // validating reader reads back.
        let written = match crate::wire::to_wire(event) {
            Some(wire) => serde_json::to_writer(&mut self.out, &wire),
            None => serde_json::to_writer(&mut self.out, event),
        };
        let result = written
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
    /// clock is not even read otherwise).
    #[inline]
    pub(crate) fn emit(&self, clock: &Clock, kind: impl FnOnce() -> EventKind) {
        if let Some(sink) = &self.sink {
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
        } else {
            #[cfg(feature = "tracing")]
            if crate::tracing_log::wanted() {
                crate::tracing_log::event(&kind());
            }
        }
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
    use super::*;

    #[test]
    fn ring_keeps_the_newest_events() {
        let ring = RingSink::new(2);
        let tracer = Tracer::new(Some(Box::new(ring.clone())));
        let clock = Clock::default();
        for i in 0..3 {
            tracer.emit(&clock, || EventKind::Unmute { actor: ActorId(i) });
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
        tracer.emit(&clock, || EventKind::Enqueue {
            actor: ActorId(3),
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
}
