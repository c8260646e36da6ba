//! State shared by everything in one actor system: the clock, the trace,
//! id allocation and dead-letter accounting.

use std::sync::atomic::Ordering;

use crate::sync::AtomicU64;

use crate::addr::ActorId;
use crate::time::Clock;
use crate::trace::{DeadLetterReason, EventKind, Tracer};

pub(crate) struct SystemShared {
    pub(crate) clock: Clock,
    pub(crate) tracer: Tracer,
    pub(crate) metrics: bool,
    next_id: AtomicU64,
    dead_letters: AtomicU64,
    /// The runtime that runs piped futures.
    #[cfg(feature = "tokio")]
    pub(crate) tokio: std::sync::OnceLock<tokio::runtime::Handle>,
}

impl SystemShared {
    pub(crate) fn new(clock: Clock, tracer: Tracer, metrics: bool) -> Self {
        SystemShared {
            clock,
            tracer,
            metrics,
            // Id 0 is the root of the supervision tree.
            next_id: AtomicU64::new(1),
            dead_letters: AtomicU64::new(0),
            #[cfg(feature = "tokio")]
            tokio: std::sync::OnceLock::new(),
        }
    }

    /// A fresh id, for actors, timers and requests alike.
    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn dead_letter(&self, actor: ActorId, reason: DeadLetterReason) {
        self.dead_letters.fetch_add(1, Ordering::Relaxed);
        if self.metrics {
            metrics::counter!("turno_dead_letters_total").increment(1);
        }
        self.tracer
            .emit(&self.clock, || EventKind::DeadLetter { actor, reason });
    }

    pub(crate) fn dead_letters(&self) -> u64 {
        self.dead_letters.load(Ordering::Relaxed)
    }
}
