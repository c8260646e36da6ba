//! A traced stream's records: its buffer's pushes, losses and takes as
//! `stream_*` events in its system's trace (`docs/trace-format.md`), so
//! the inspector plots a stream's depth, losses and sojourn times as it
//! plots a mailbox's.

use std::sync::Arc;

use super::outcome::YieldResult;
use crate::buffer::Policy;
use crate::ids::ActorId;
use crate::shared::SystemShared;
use crate::trace::{ActorEvent, DropPolicy, Dropped};

/// The system a stream records into, and the stream's id there.
pub(crate) struct StreamTracer {
    system: Arc<SystemShared>,
    id: ActorId,
    policy: Policy,
}

impl StreamTracer {
    /// Takes an id for the stream (numbered with the actors) and records
    /// `stream_open`; `None` when the system records no trace.
    pub(crate) fn open(system: Arc<SystemShared>, name: &str, policy: Policy) -> Option<Self> {
        if !system.tracer.is_on() {
            return None;
        }
        let id = system.next_actor();
        let t = StreamTracer { system, id, policy };
        t.emit(|stream| ActorEvent::StreamOpen {
            stream,
            name: name.to_string(),
            policy: policy.into(),
        });
        Some(t)
    }

    fn emit(&self, kind: impl FnOnce(turno_trace::ActorId) -> ActorEvent) {
        let stream = self.id.into();
        self.system.tracer.emit(&self.system.clock, || kind(stream));
    }

    /// Records a push's verdict; `depth` is the buffer's after it.
    pub(crate) fn pushed<T>(&self, verdict: &YieldResult<T>, depth: usize) {
        match verdict {
            YieldResult::Enqueued { .. } => {
                self.emit(|stream| ActorEvent::StreamPush { stream, depth });
            }
            YieldResult::Evicted(_) => {
                self.emit(|stream| ActorEvent::StreamDrop {
                    stream,
                    policy: DropPolicy::KeepNewest,
                    which: Dropped::Oldest,
                });
                self.emit(|stream| ActorEvent::StreamPush { stream, depth });
            }
            YieldResult::Dropped(_) => self.emit(|stream| ActorEvent::StreamDrop {
                stream,
                policy: crate::trace::drop_policy(self.policy),
                which: Dropped::Incoming,
            }),
            YieldResult::Rejected(_) => self.emit(|stream| ActorEvent::StreamReject { stream }),
            YieldResult::Full(_) => self.emit(|stream| ActorEvent::StreamFull { stream }),
            YieldResult::Terminated(_) => {}
        }
    }

    /// Records that the consumer took an element; `depth` is the buffer's
    /// after it.
    pub(crate) fn took(&self, depth: usize) {
        self.emit(|stream| ActorEvent::StreamTake { stream, depth });
    }
}
