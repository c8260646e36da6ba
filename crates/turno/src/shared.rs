//! State shared by everything in one actor system: the clock, the trace,
//! id allocation, the paths of named actors, dead-letter accounting and
//! the scheduler.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use crate::sync::{AtomicU64, Mutex};

use crate::ids::ActorId;
use crate::ids::ActorPath;
use crate::scheduler::Scheduler;
use crate::time::Clock;
use crate::trace::{ActorEvent, DeadLetterReason, Tracer};

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
    /// The live actors spawned with a name, by path: what keeps a name
    /// unique among siblings. Entered when the engine registers the actor,
    /// left when it finalizes, both under the tree lock (taken first), so a
    /// name is free exactly when its actor is no longer alive. A turn's
    /// spawns are not here until the turn ends: `Context::spawn` also looks
    /// at them.
    paths: Mutex<HashMap<ActorPath, ActorId>>,
    /// The system's scheduler, set once by its engine ([`Engine::new`]):
    /// where a push that finds its actor idle hands the actor's slot
    /// (every mailbox holds this shared state, so no slot keeps a pointer
    /// of its own). Unset for the test kit's, which nothing schedules.
    /// Not a cycle the slots did not already make: a scheduler holds the
    /// slots in its run queues only, as when each slot held it.
    ///
    /// [`Engine::new`]: crate::engine::Engine::new
    pub(crate) sched: std::sync::OnceLock<std::sync::Arc<dyn Scheduler>>,
    /// The runtime that runs piped futures.
    #[cfg(feature = "tokio")]
    pub(crate) tokio: std::sync::OnceLock<tokio::runtime::Handle>,
    /// The loom model's injected fault: a system-lane push that forgets to
    /// set its mailbox's rare-work word (`Mailbox::push_system`;
    /// `tests/sched_loom.rs` shows the model catches it).
    #[cfg(turno_loom)]
    pub(crate) rare_mark_bug: std::sync::atomic::AtomicBool,
    /// The loom model's injected fault: the claimed hand-off's claim made
    /// by a load and a store (`RunState::notify_or_claim_by_store`;
    /// `tests/sched_loom.rs` shows the model catches it).
    #[cfg(turno_loom)]
    pub(crate) hand_off_claim_bug: std::sync::atomic::AtomicBool,
}

impl SystemShared {
    pub(crate) fn new(clock: Clock, tracer: Tracer, metrics: bool) -> Self {
        // Every take of a mailbox's lane uses the light side of the
        // asymmetric fence, which stays a full fence until the process is
        // registered for the heavy side: register it here, once, rather
        // than on the first wait of an outside sender (the default policy
        // is a suspend one, so nearly every system has such mailboxes).
        crate::asym_fence::init();
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
            paths: Mutex::new(HashMap::new()),
            sched: std::sync::OnceLock::new(),
            #[cfg(feature = "tokio")]
            tokio: std::sync::OnceLock::new(),
            #[cfg(turno_loom)]
            rare_mark_bug: std::sync::atomic::AtomicBool::new(false),
            #[cfg(turno_loom)]
            hand_off_claim_bug: std::sync::atomic::AtomicBool::new(false),
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

    /// True while a live actor has this path.
    pub(crate) fn path_taken(&self, path: &ActorPath) -> bool {
        self.paths.lock().contains_key(path)
    }

    /// Enters a named actor's path; false (and nothing entered) when a live
    /// actor has it.
    pub(crate) fn claim_path(&self, path: &ActorPath, id: ActorId) -> bool {
        let mut paths = self.paths.lock();
        if paths.contains_key(path) {
            return false;
        }
        paths.insert(path.clone(), id);
        true
    }

    /// Frees the path of `id`, which has stopped.
    pub(crate) fn release_path(&self, path: &ActorPath, id: ActorId) {
        let mut paths = self.paths.lock();
        if paths.get(path) == Some(&id) {
            paths.remove(path);
        }
    }

    /// The live named actor at `path`.
    pub(crate) fn actor_at(&self, path: &str) -> Option<ActorId> {
        self.paths.lock().get(path).copied()
    }

    pub(crate) fn dead_letter(&self, actor: ActorId, reason: DeadLetterReason) {
        self.dead_letters.fetch_add(1, Ordering::Relaxed);
        if self.metrics {
            metrics::counter!("turno_dead_letters_total").increment(1);
        }
        self.tracer.emit(&self.clock, || ActorEvent::DeadLetter {
            actor: actor.into(),
            reason,
        });
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
