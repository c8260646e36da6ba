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
    /// Let the panic hook print contained panics (see `crate::panics`).
    pub(crate) print_panics: bool,
    next_actor: AtomicU64,
    next_timer: AtomicU64,
    next_request: AtomicU64,
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
            print_panics: false,
            // Actor id 0 is the root of the supervision tree.
            next_actor: AtomicU64::new(1),
            next_timer: AtomicU64::new(1),
            next_request: AtomicU64::new(1),
            dead_letters: AtomicU64::new(0),
            #[cfg(feature = "tokio")]
            tokio: std::sync::OnceLock::new(),
        }
    }

    /// A fresh actor id (each kind has its own sequence).
    pub(crate) fn next_actor(&self) -> crate::ids::ActorId {
        crate::ids::ActorId(self.next_actor.fetch_add(1, Ordering::Relaxed))
    }

    /// A fresh timer id.
    pub(crate) fn next_timer(&self) -> crate::ids::TimerId {
        crate::ids::TimerId(self.next_timer.fetch_add(1, Ordering::Relaxed))
    }

    /// A fresh request id.
    pub(crate) fn next_request(&self) -> crate::ids::RequestId {
        crate::ids::RequestId(self.next_request.fetch_add(1, Ordering::Relaxed))
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

/// What both system builders configure alike.
pub(crate) struct SystemConfig {
    pub(crate) sink: Option<Box<dyn crate::trace::TraceSink>>,
    pub(crate) metrics: bool,
    pub(crate) print_panics: bool,
    pub(crate) root: crate::supervision::Supervision,
    #[cfg(feature = "tokio")]
    pub(crate) tokio: Option<tokio::runtime::Handle>,
}

impl Default for SystemConfig {
    fn default() -> Self {
        SystemConfig {
            sink: None,
            metrics: true,
            print_panics: false,
            root: crate::supervision::Supervision::default(),
            #[cfg(feature = "tokio")]
            tokio: None,
        }
    }
}

impl SystemConfig {
    /// The shared state of a system with this configuration and `clock`,
    /// and the root's supervision.
    pub(crate) fn build(
        self,
        clock: crate::time::Clock,
    ) -> (
        std::sync::Arc<SystemShared>,
        crate::supervision::Supervision,
    ) {
        let mut shared = SystemShared::new(clock, Tracer::new(self.sink), self.metrics);
        shared.print_panics = self.print_panics;
        let shared = std::sync::Arc::new(shared);
        #[cfg(feature = "tokio")]
        if let Some(h) = self.tokio {
            let _ = shared.tokio.set(h);
        }
        (shared, self.root)
    }
}

/// The builder methods both systems share (the builder has a `config:
/// SystemConfig` field).
macro_rules! shared_builder_methods {
    () => {
        /// Records the trace into `sink` (on the threaded scheduler one lock
        /// serialises it: costly).
        pub fn trace(mut self, sink: impl $crate::trace::TraceSink + 'static) -> Self {
            self.config.sink = Some(Box::new(sink));
            self
        }

        /// Reports metrics through the `metrics` facade (default: on).
        pub fn metrics(mut self, on: bool) -> Self {
            self.config.metrics = on;
            self
        }

        /// How the root supervises top-level actors (default: one-for-one,
        /// at most 3 restarts in 5 s). The root cannot escalate: when it
        /// gives up, the failed actor stops. The intensity is one budget for
        /// all top-level actors together.
        pub fn root_supervision(mut self, s: $crate::supervision::Supervision) -> Self {
            self.config.root = s;
            self
        }

        /// The root's restart intensity: at most `max_restarts` restarts of
        /// top-level actors (all of them together) within `within`; the
        /// strategy and decider stay as set.
        pub fn root_intensity(mut self, max_restarts: u32, within: std::time::Duration) -> Self {
            self.config.root = self.config.root.intensity(max_restarts, within);
            self
        }

        /// Prints the panic message and backtrace of a panicking turn through
        /// the process's panic hook, as an uncontained panic would (default:
        /// off). Either way the failure is recorded: the trace's `fail`
        /// event, the `tracing` error event (feature `tracing`), and the
        /// supervisor's decision.
        pub fn print_panics(mut self, on: bool) -> Self {
            self.config.print_panics = on;
            self
        }

        /// The tokio runtime that runs futures piped into actors
        /// ([`Context::pipe`]($crate::Context::pipe)).
        #[cfg(feature = "tokio")]
        pub fn tokio(mut self, handle: tokio::runtime::Handle) -> Self {
            self.config.tokio = Some(handle);
            self
        }
    };
}
pub(crate) use shared_builder_methods;
