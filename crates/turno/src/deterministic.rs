//! The deterministic scheduler: one thread, virtual time, seeded choice.
//!
//! [`DetSystem`] runs every actor on the calling thread, one turn per
//! [`step`](DetSystem::step). When several actors could run, a seeded
//! random generator picks one, so a racy protocol shows a different
//! interleaving under a different seed, and the *same* seed replays the same
//! run, trace and all. Time is virtual: it moves only in
//! [`advance`](DetSystem::advance), which fires due timers in deadline order
//! and runs the system to idleness at each one.
//!
//! This is how protocols are tested (stale replies, timeouts, overload) and
//! how runs are replayed.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use std::time::Duration;
//! use turno::{Actor, Context, DetSystem, Props, System};
//!
//! /// Counts to 3, one step every 10 ms, noting when each step happened.
//! struct Counter { seen: Arc<Mutex<Vec<(u32, Duration)>>> }
//! impl Actor for Counter {
//!     type Msg = u32;
//!     fn handle(&mut self, ctx: &mut Context<'_, Self>, n: u32) {
//!         self.seen.lock().unwrap().push((n, ctx.now().since_start()));
//!         if n < 3 {
//!             ctx.send_after(Duration::from_millis(10), n + 1);
//!         }
//!     }
//! }
//!
//! let seen = Arc::new(Mutex::new(Vec::new()));
//! let s = seen.clone();
//! let mut sys = DetSystem::new(7);
//! let counter = sys.spawn(Props::new(), move || Counter { seen: s.clone() }).unwrap();
//! assert!(counter.try_send(1).is_enqueued());
//! sys.advance(Duration::from_millis(25)).unwrap();
//! let ms = Duration::from_millis;
//! assert_eq!(*seen.lock().unwrap(), [(1, ms(0)), (2, ms(10)), (3, ms(20))]);
//! assert_eq!(sys.now().since_start(), ms(25));
//! ```

use std::sync::Arc;
use std::time::Duration;

#[cfg(turno_loom)]
use crate::actor::{Actor, Props};
#[cfg(turno_loom)]
use crate::addr::Addr;
use crate::effects::Effects;
use crate::engine::slot::Queued;
use crate::engine::Engine;
use crate::ids::ActorId;
use crate::scheduler::Scheduler;
#[cfg(turno_loom)]
use crate::shared::SystemConfig;
use crate::shared::SystemShared;
use crate::sync::Mutex;
use crate::system::SystemBuilder;
use crate::system::{ShutdownReport, ShutdownTimeout, System};
use crate::time::{Clock, Instant};
use crate::timer::TimerHeap;
use crate::timer::TimerKey;

pub use crate::ids::ROOT;

/// The default bound on turns for one [`DetSystem::run_until_idle`].
pub const DEFAULT_STEP_LIMIT: u64 = 10_000_000;

/// A run did not reach idleness within its step budget: some actors keep
/// each other busy forever (a message loop) or the budget is too small.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("still busy after {steps} turns at {at} (step limit {limit}): a message loop, or raise the limit with DetSystemBuilder::step_limit")]
pub struct StepLimit {
    /// Turns run before giving up.
    pub steps: u64,
    /// The limit in force.
    pub limit: u64,
    /// Virtual time when it gave up.
    pub at: Instant,
}

/// The deterministic run queue and timer heap: one thread touches them, the
/// locks only satisfy `Sync`.
#[derive(Default)]
struct DetQueue {
    ready: Mutex<Vec<Queued>>,
    timers: Mutex<TimerHeap>,
}

impl Scheduler for DetQueue {
    fn schedule(&self, slot: Queued) {
        // The loom runner's thread with a hand-off slot
        // (`SharedRunner::hand_off_here`) keeps the slot a turn on it
        // wakes there, as a threaded worker keeps it in its LIFO slot, and
        // queues the one it displaces (its claim given up first).
        #[cfg(turno_loom)]
        let slot = match crate::hand_off::installed() {
            Some(here) => match here.replace(slot, false) {
                None => return,
                Some(displaced) => {
                    if displaced.claimed {
                        displaced.slot.unclaim();
                    }
                    displaced.slot
                }
            },
            None => slot,
        };
        let mut ready = self.ready.lock();
        // The run-state word makes at most one entry per slot (run queues
        // hold no count, see `crate::run_state`): the loom models check it
        // in every interleaving they run.
        #[cfg(turno_loom)]
        assert!(
            !ready.iter().any(|q| q.same(&slot)),
            "a second run queue entry of one slot"
        );
        ready.push(slot);
    }

    fn add_timer(&self, actor: ActorId, key: TimerKey, deadline: Instant) {
        self.timers.lock().push(actor, key, deadline);
    }

    fn simulates_work(&self) -> bool {
        true
    }
}

/// The deterministic scheduler's own settings, set through
/// [`DetSystemBuilder`]'s `seed` and `step_limit`.
pub struct DetOptions {
    seed: u64,
    step_limit: u64,
}

/// Configures a [`DetSystem`]: the settings every system shares (see
/// [`SystemBuilder`]) and the deterministic scheduler's own.
pub type DetSystemBuilder = SystemBuilder<DetOptions>;

impl SystemBuilder<DetOptions> {
    /// The seed for the choice among runnable actors.
    pub fn seed(mut self, seed: u64) -> Self {
        self.options.seed = seed;
        self
    }

    /// The most turns one `run_until_idle` may take (default
    /// [`DEFAULT_STEP_LIMIT`]).
    pub fn step_limit(mut self, limit: u64) -> Self {
        self.options.step_limit = limit;
        self
    }

    /// Builds the system.
    pub fn build(self) -> DetSystem {
        let (shared, root) = self.config.build(Clock::default());
        let queue = Arc::new(DetQueue::default());
        let engine = Engine::new(shared, queue.clone(), root);
        DetSystem {
            engine,
            queue,
            rng: fastrand::Rng::with_seed(self.options.seed),
            step_limit: self.options.step_limit,
            turns: 0,
            fx: Effects::default(),
        }
    }
}

/// A deterministic actor system. See the [module docs](self).
///
/// Dropping it without [`System::shutdown`] is the death of the simulated
/// process: no turn runs and nothing more is traced (no `stopped` hook, no
/// dead letter; the trace ends at the last step), and every actor still
/// alive is freed with its state and its mail (addresses kept elsewhere
/// stay valid: a send to them answers that the actor is gone). A crash
/// test drops the system and builds a new one from what it persisted;
/// [`System::shutdown`] is the graceful end, hooks and all.
pub struct DetSystem {
    engine: Engine,
    queue: Arc<DetQueue>,
    rng: fastrand::Rng,
    step_limit: u64,
    turns: u64,
    /// The effects record every batch reuses (see `Engine::run_slot`).
    fx: Effects,
}

impl DetSystem {
    /// A system with the given seed and defaults otherwise (no trace,
    /// metrics on).
    pub fn new(seed: u64) -> Self {
        DetSystem::builder().seed(seed).build()
    }

    /// A builder, for a trace sink, metrics, root supervision, step limit.
    pub fn builder() -> DetSystemBuilder {
        SystemBuilder::with_options(DetOptions {
            seed: 0,
            step_limit: DEFAULT_STEP_LIMIT,
        })
    }

    fn shared(&self) -> &SystemShared {
        &self.engine.shared
    }

    /// Turns run so far.
    pub fn turns(&self) -> u64 {
        self.turns
    }

    /// The deadline of the next pending timer, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.timers.lock().next_deadline()
    }

    /// Flushes the trace sink.
    pub fn flush_trace(&self) {
        self.shared().tracer.flush();
    }

    /// Runs one unit of work (a control message or a turn) of one runnable
    /// actor, chosen by the seed. Returns false when nothing is runnable.
    pub fn step(&mut self) -> bool {
        let slot = {
            let mut ready = self.queue.ready.lock();
            if ready.is_empty() {
                return false;
            }
            let i = self.rng.usize(..ready.len());
            ready.swap_remove(i)
        };
        self.turns += 1;
        // Every turn of a `DetSystem` runs here, on the thread holding its
        // `&mut`: no other runner can hold the cell.
        self.engine.run_slot(slot, false, 1, &mut self.fx);
        true
    }

    /// Steps until nothing is runnable, firing the timers that are due now
    /// (a `send_after(Duration::ZERO, ..)`, or one set for the current
    /// instant) as part of it. Does not move time.
    pub fn run_until_idle(&mut self) -> Result<u64, StepLimit> {
        let mut steps = 0;
        loop {
            while self.step() {
                steps += 1;
                if steps >= self.step_limit {
                    return Err(StepLimit {
                        steps,
                        limit: self.step_limit,
                        at: self.now(),
                    });
                }
            }
            if !self.fire_due(self.now()) {
                return Ok(steps);
            }
        }
    }

    /// Fires every timer whose deadline is `at` or earlier, in deadline
    /// order. False if there was none.
    fn fire_due(&mut self, at: Instant) -> bool {
        let mut fired = false;
        loop {
            let next = self.queue.timers.lock().pop_due(at);
            match next {
                Some(t) => {
                    self.engine.fire_timer(t);
                    fired = true;
                }
                None => return fired,
            }
        }
    }

    /// Moves virtual time forward by `by`, firing each due timer at its
    /// deadline and running to idleness after each instant.
    pub fn advance(&mut self, by: Duration) -> Result<u64, StepLimit> {
        let target = self.now() + by;
        self.advance_to(target)
    }

    /// Moves virtual time forward to `target` (see [`DetSystem::advance`]).
    pub fn advance_to(&mut self, target: Instant) -> Result<u64, StepLimit> {
        let mut steps = self.run_until_idle()?;
        loop {
            let due: Vec<_> = {
                let mut timers = self.queue.timers.lock();
                let Some(deadline) = timers.next_deadline() else {
                    break;
                };
                if deadline > target {
                    break;
                }
                // The earliest deadline: everything due by it is due at it.
                std::iter::from_fn(|| timers.pop_due(deadline)).collect()
            };
            self.shared().clock.advance_to(due[0].deadline);
            for t in due {
                self.engine.fire_timer(t);
            }
            steps += self.run_until_idle()?;
        }
        self.shared().clock.advance_to(target);
        Ok(steps)
    }
}

#[allow(private_interfaces)] // sealed: see `system::sealed`
impl crate::system::sealed::Sealed for DetSystem {
    fn engine(&self) -> &Engine {
        &self.engine
    }
}

impl System for DetSystem {
    fn settle(&mut self, _timeout: Duration) -> bool {
        self.run_until_idle().is_ok()
    }

    fn sleep(&mut self, d: Duration) -> bool {
        self.advance(d).is_ok()
    }

    /// Stops every top-level actor and runs until they are gone. Virtual
    /// time does not move: pending timers never fire. `timeout` does not
    /// apply (the step limit does).
    fn shutdown(mut self, _timeout: Duration) -> Result<ShutdownReport, ShutdownTimeout> {
        let _ = self.run_until_idle();
        for id in self.engine.children(ROOT) {
            System::stop(&self, id);
        }
        let _ = self.run_until_idle();
        let remaining = self.engine.actor_count();
        if remaining > 0 {
            return Err(ShutdownTimeout {
                waited: Duration::ZERO,
                remaining,
            });
        }
        Ok(ShutdownReport {
            dead_letters: self.engine.shared.dead_letters(),
        })
    }
}

impl Drop for DetSystem {
    fn drop(&mut self) {
        // No turn runs here: between this system's steps no runner holds
        // a cell, so the actors can be given up at once.
        self.queue.ready.lock().clear();
        self.engine.abandon_all();
        self.shared().tracer.flush();
    }
}

/// The deterministic run queue shared by several model threads: loom's
/// checks of the scheduling protocol (`tests/sched_loom.rs`) run the real
/// engine with more than one runner. Not part of the API.
#[cfg(turno_loom)]
#[doc(hidden)]
pub struct SharedRunner {
    engine: Engine,
    queue: Arc<DetQueue>,
}

/// A loom runner thread's hand-off slot ([`SharedRunner::hand_off_here`]),
/// uninstalled when dropped. Not part of the API.
#[cfg(turno_loom)]
#[doc(hidden)]
pub struct HandOffHere {
    // Dropped first: the port goes before the slot it points to.
    _port: crate::hand_off::Port,
    hand_off: Box<crate::hand_off::HandOff>,
    // The port is this thread's.
    _not_send: std::marker::PhantomData<*const ()>,
}

#[cfg(turno_loom)]
impl Default for SharedRunner {
    fn default() -> Self {
        SharedRunner::new()
    }
}

#[cfg(turno_loom)]
impl SharedRunner {
    /// An empty system (virtual clock, no trace, no metrics).
    pub fn new() -> Self {
        let config = SystemConfig {
            metrics: false,
            ..SystemConfig::default()
        };
        let (shared, root) = config.build(Clock::default());
        let queue = Arc::new(DetQueue::default());
        let engine = Engine::new(shared, queue.clone(), root);
        SharedRunner { engine, queue }
    }

    /// Spawns a top-level actor.
    pub fn spawn<A: Actor>(
        &self,
        props: Props,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Addr<A::Msg> {
        self.engine.spawn_top(props, factory).expect("valid props")
    }

    /// Runs one unit of work of some ready actor; false when none is ready.
    pub fn run_one(&self) -> bool {
        let slot = self.queue.ready.lock().pop();
        match slot {
            Some(slot) => {
                // Each loom thread runs with a record of its own.
                self.engine
                    .run_slot(slot, false, 1, &mut crate::effects::Effects::default());
                true
            }
            None => false,
        }
    }

    /// The same system with a wrong release protocol (a sender re-listed
    /// while its receiver drained is released anyway), so the model can
    /// show it catches that bug.
    pub fn with_stale_release_bug() -> Self {
        let runner = Self::new();
        runner
            .engine
            .stale_release_bug
            .store(true, std::sync::atomic::Ordering::Relaxed);
        runner
    }

    /// The same system with the run-state word's release made by a plain
    /// store (see `crate::run_state`), so the model can show it catches a
    /// push lost to it.
    pub fn with_release_by_store_bug() -> Self {
        let runner = Self::new();
        runner
            .engine
            .run_release_bug
            .store(true, std::sync::atomic::Ordering::Relaxed);
        runner
    }

    /// The same system with a system-lane push that forgets to set its
    /// mailbox's rare-work word (see `Mailbox::rare_pending`), so the
    /// model can show it catches the control message lost to it.
    pub fn with_rare_mark_bug() -> Self {
        let runner = Self::new();
        runner
            .engine
            .shared
            .rare_mark_bug
            .store(true, std::sync::atomic::Ordering::Relaxed);
        runner
    }

    /// The same system with the claimed hand-off's claim made by a load and
    /// a store (see `crate::hand_off`), so the model can show it catches
    /// the push whose mark the store overwrites.
    pub fn with_hand_off_claim_bug() -> Self {
        let runner = Self::new();
        runner
            .engine
            .shared
            .hand_off_claim_bug
            .store(true, std::sync::atomic::Ordering::Relaxed);
        runner
    }

    /// Makes the calling thread a runner with a hand-off slot, as a
    /// threaded worker is with its LIFO slot, until the returned value is
    /// dropped: a push on this thread that finds its actor idle claims it
    /// and puts it there (the claimed hand-off, see `crate::hand_off`), a
    /// wake-up scheduled on it goes there too (the one there before is
    /// queued). [`SharedRunner::run_one_here`] runs it first.
    pub fn hand_off_here(&self) -> HandOffHere {
        let hand_off = Box::new(crate::hand_off::HandOff::new(&self.engine.shared));
        let port = crate::hand_off::Port::install(&hand_off);
        HandOffHere {
            _port: port,
            hand_off,
            _not_send: std::marker::PhantomData,
        }
    }

    /// [`SharedRunner::run_one`] on a thread with a hand-off slot: its
    /// slot first (claimed by the push that put it there, or not), then
    /// the run queue.
    pub fn run_one_here(&self, here: &HandOffHere) -> bool {
        let (slot, claimed) = match here.hand_off.take() {
            Some(taken) => taken,
            None => match self.queue.ready.lock().pop() {
                Some(slot) => (slot, false),
                None => return false,
            },
        };
        self.engine
            .run_slot(slot, claimed, 1, &mut crate::effects::Effects::default());
        true
    }

    /// Stops actor `id` from the calling thread: its stop is pushed to its
    /// system lane as a supervisor's would be, whatever its runner is
    /// doing.
    pub fn stop(&self, id: ActorId) {
        self.engine.push_control(
            id,
            crate::system_lane::Control::Stop(crate::supervision::ExitReason::Stopped),
        );
    }

    /// Runs one unit of work of actor `id` if it is in the run queue; false
    /// if it is not (idle, parked, or being run by another thread).
    pub fn run_actor(&self, id: ActorId) -> bool {
        let slot = {
            let mut ready = self.queue.ready.lock();
            match ready.iter().position(|s| s.id() == id) {
                Some(i) => ready.swap_remove(i),
                None => return false,
            }
        };
        self.engine
            .run_slot(slot, false, 1, &mut crate::effects::Effects::default());
        true
    }

    /// True while the actor is muted.
    pub fn is_muted(&self, id: ActorId) -> bool {
        self.engine.is_muted(id)
    }

    /// True while `receiver`'s mailbox lists `sender` as muted by it.
    pub fn is_listed(&self, receiver: ActorId, sender: ActorId) -> bool {
        self.engine.is_listed(receiver, sender)
    }

    /// Slots in the run queue.
    pub fn ready_len(&self) -> usize {
        self.queue.ready.lock().len()
    }
}
