//! The local scheduler: every actor on the calling thread, first come
//! first served, real time.
//!
//! [`LocalSystem`] is for programs whose actors all live on one thread (a
//! GUI loop, a single-core service, an embedded controller, a test that
//! wants real time without threads): what `stakker` offers, with turno's
//! actors, mailboxes, supervision and verdicts unchanged. Compared with
//! the two other schedulers:
//!
//! - like [`DetSystem`](crate::DetSystem) it runs on the caller's thread,
//!   only inside [`LocalSystem::run_until_idle`], [`System::settle`],
//!   [`System::sleep`] or [`LocalSystem::run_for`]; but there is no seeded
//!   choice: runnable actors run in the order they became runnable (a FIFO
//!   run queue), each for a batch of up to `batch` turns;
//! - like [`ThreadedSystem`](crate::ThreadedSystem) its clock is real:
//!   timers fire once their deadline has passed, at the next look at the
//!   timer heap (between batches), and `simulate_work` is ignored.
//!
//! Addresses stay usable from any thread (they are the same [`Addr`](crate::Addr)s):
//! a message sent from another thread queues the actor, which runs the next
//! time the owner runs the system (actors made runnable from other threads
//! join the run queue at the owner's next look for work, behind the ones
//! already in it; the owner's own wake-ups take no lock).
//!
//! Tracing works as on the other schedulers; with no sink and no
//! `tracing` subscriber nothing is recorded, which is the fast configuration.
//!
//! **What a message costs.** A message between two actors of one
//! `LocalSystem` costs several times what stakker's closure queue costs
//! (`turno-bench pingpong`, `turno-local`; BENCHMARKS.md, "The local
//! scheduler", has the figures). The difference buys turno's guarantees:
//! - every mailbox stays open to senders on other threads, with exact
//!   admission and a verdict (three read-modify-writes a message);
//! - a panicking turn fails its actor, not the loop.
//!
//! A biased lock that lets the owner skip the three read-modify-writes
//! was built and model-checked, and made the message slower: its ownership
//! checks cost more instructions than the read-modify-writes cost time. So
//! the mailboxes stay shared (the measurements, and a model of what a
//! shorter path for same-system messages could reach, are in the benchmark
//! records, `bench/runs/`).
//!
//! ```
//! use std::sync::mpsc;
//! use std::time::Duration;
//! use turno::{Actor, Context, LocalSystem, Props, System};
//!
//! /// Sends every number it gets on, plus one, until 10.
//! struct Counter { out: mpsc::Sender<u32> }
//! impl Actor for Counter {
//!     type Msg = u32;
//!     fn handle(&mut self, ctx: &mut Context<'_, Self>, n: u32) {
//!         self.out.send(n).unwrap();
//!         if n < 10 {
//!             let me = ctx.addr();
//!             ctx.tell(&me, n + 1);
//!         } else {
//!             ctx.send_after(Duration::from_millis(5), 100);
//!         }
//!     }
//! }
//!
//! let (tx, rx) = mpsc::channel();
//! let mut sys = LocalSystem::new();
//! let counter = sys.spawn(Props::new(), move || Counter { out: tx.clone() }).unwrap();
//! assert!(counter.try_send(1).is_enqueued());
//! assert_eq!(sys.run_until_idle(), 11); // the start hook and ten messages
//! assert_eq!(rx.try_iter().collect::<Vec<_>>(), (1..=10).collect::<Vec<_>>());
//! // The timer fires once its real deadline has passed.
//! assert!(sys.sleep(Duration::from_millis(20)));
//! assert_eq!(rx.try_recv(), Ok(100));
//! sys.shutdown(Duration::from_secs(5)).unwrap();
//! ```

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::effects::Effects;
use crate::engine::slot::Queued;
use crate::engine::Engine;
use crate::hand_off::{HandOff, Port};
use crate::ids::ActorId;
use crate::ids::ROOT;
use crate::scheduler::Scheduler;
use crate::shared::SystemShared;
use crate::sync::Mutex;
use crate::system::{ShutdownReport, ShutdownTimeout, System, SystemBuilder};
use crate::time::{Clock, Instant};
use crate::timer::TimerHeap;
use crate::timer::TimerKey;

/// Default turns of one actor per scheduling (as on the threaded scheduler).
pub const DEFAULT_BATCH: usize = 32;

/// The run queue and the timer heap.
///
/// The owner's thread is the only one that takes from the run queue, and
/// almost every push comes from it too (a turn waking another actor). Those
/// pushes go to `owned`, touched without a lock: only the thread inside
/// [`LocalSystem::run_one`] or the loop of [`LocalSystem::run_until_idle`]
/// and [`LocalSystem::run_for`] (the one holding the system's `&mut`) uses
/// it, and that thread is recognised by a thread-local mark set for the
/// length of the batch or the loop. A push from any other thread (an address used elsewhere)
/// goes to `foreign`, under its lock; the owner moves those into `owned`
/// when it next looks for work, so they run after the actors already
/// queued, in the order they were pushed.
struct LocalQueue {
    owned: OwnedQueue,
    /// The owner's hand-off slot (see [`crate::hand_off`]), installed while
    /// the owner runs the system: a push made there to an idle actor of
    /// this system claims it in its one read-modify-write of the run-state
    /// word and leaves it here, and the runner runs it without a claim of
    /// its own (a ping-pong message: three read-modify-writes, not four).
    /// It holds the latest such wake-up only; it is moved to the back of
    /// `owned` before any other wake-up joins `owned` and before every
    /// look for work (a look that finds `owned` empty and nothing from
    /// other threads takes it directly: it is the only one), so the run
    /// queue stays in wake-up order.
    hand_off: OwnedHandOff,
    foreign: Mutex<VecDeque<Queued>>,
    /// Whether `foreign` may hold a slot: one load per look for work while
    /// no other thread sends.
    has_foreign: AtomicBool,
    timers: Mutex<TimerHeap>,
    /// Whether the heap may hold a timer: set when one is added, cleared
    /// when the heap is found empty, so that the look for due timers after
    /// every batch costs one load while none is pending (timers are added
    /// by turns, which run on the owner's thread).
    has_timers: AtomicBool,
}

/// The owner's part of the run queue (see [`LocalQueue`]): each slot with
/// whether its run-state word is claimed already (it came through the
/// hand-off slot).
#[derive(Default)]
struct OwnedQueue(std::cell::UnsafeCell<VecDeque<(Queued, bool)>>);

/// The owner's hand-off slot (see [`LocalQueue`]).
struct OwnedHandOff(HandOff);

// SAFETY: the queue inside is only touched by the thread that has marked
// itself as running this system (`Running`), which holds the system's
// `&mut` for the whole mark, so one thread at a time; `Queued` is
// `Send`, so the slots may be pushed by one such thread and taken by
// another later.
#[allow(unsafe_code)]
unsafe impl Sync for OwnedQueue {}

// SAFETY: as for `OwnedQueue`: the hand-off slot is reached by the owner's
// thread only: through this queue inside its `Running` mark, and through
// the thread-local port it installs for that mark (`Owner`), which only
// that thread's pushes read; the slot it holds is a `Queued`, `Send`.
#[allow(unsafe_code)]
unsafe impl Sync for OwnedHandOff {}

thread_local! {
    /// The queue whose system this thread is running now (null: none).
    static RUNNING: std::cell::Cell<*const LocalQueue> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Marks this thread as the one running `queue` and installs the queue's
/// hand-off slot as this thread's until dropped (the mark and the port
/// before are put back: a turn may run another system).
struct Running {
    before: *const LocalQueue,
    _port: Port,
}

impl Running {
    fn enter(queue: &LocalQueue) -> Running {
        Running {
            before: RUNNING.replace(queue),
            _port: Port::install(&queue.hand_off.0),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.set(self.before);
    }
}

impl LocalQueue {
    fn new(shared: &SystemShared) -> LocalQueue {
        LocalQueue {
            owned: OwnedQueue::default(),
            hand_off: OwnedHandOff(HandOff::new(shared)),
            foreign: Mutex::default(),
            has_foreign: AtomicBool::new(false),
            timers: Mutex::default(),
            has_timers: AtomicBool::new(false),
        }
    }

    /// Whether this thread is running this queue's system now.
    #[inline]
    fn is_owner(&self) -> bool {
        std::ptr::eq(RUNNING.get(), self)
    }

    /// The owner's queue. Only called by the owner (see [`LocalQueue`]).
    ///
    /// # Safety
    /// The caller is the thread marked as running this system, and keeps
    /// no other reference to the queue alive meanwhile.
    #[allow(unsafe_code, clippy::mut_from_ref)]
    #[inline]
    unsafe fn owned(&self) -> &mut VecDeque<(Queued, bool)> {
        // SAFETY: forwarded from the caller.
        unsafe { &mut *self.owned.0.get() }
    }

    /// Moves the hand-off slot's wake-up, the latest, to the back of the
    /// owner's queue (the owner's thread only, as [`LocalQueue::owned`]).
    ///
    /// # Safety
    /// As for [`LocalQueue::owned`].
    #[allow(unsafe_code)]
    #[inline]
    unsafe fn flush_hand_off(&self) {
        if let Some(entry) = self.hand_off.0.take() {
            // SAFETY: forwarded from the caller.
            unsafe { self.owned().push_back(entry) };
        }
    }

    /// The next slot to run, with whether it is claimed (the owner's
    /// thread only).
    fn pop(&self) -> Option<(Queued, bool)> {
        let has_foreign = self.has_foreign.load(Ordering::Acquire);
        // SAFETY: only `run_next` calls this, inside its caller's
        // `Running` mark, and no reference to the queue outlives the line.
        #[allow(unsafe_code)]
        if !has_foreign && unsafe { self.owned().is_empty() } {
            // The hand-off slot's wake-up, if any, is the only one: run it
            // without a pass through the queue (a ping-pong message's
            // usual case: its push and pop were about 30 instructions).
            return self.hand_off.0.take();
        }
        // SAFETY: as above.
        #[allow(unsafe_code)]
        unsafe {
            self.flush_hand_off()
        };
        if has_foreign {
            self.take_foreign();
        }
        // SAFETY: as above.
        #[allow(unsafe_code)]
        unsafe {
            self.owned().pop_front()
        }
    }

    /// A wake-up made by another thread: behind the lock. Out of line, so
    /// that the owner's push above saves and restores no register (the
    /// lock's path needs five: about a third of the owner's push).
    #[inline(never)]
    fn schedule_foreign(&self, slot: Queued) {
        let mut foreign = self.foreign.lock();
        foreign.push_back(slot);
        self.has_foreign.store(true, Ordering::Release);
    }

    #[inline(never)]
    fn take_foreign(&self) {
        let mut foreign = self.foreign.lock();
        self.has_foreign.store(false, Ordering::Relaxed);
        // SAFETY: as in `pop`, whose caller this is.
        #[allow(unsafe_code)]
        let owned = unsafe { self.owned() };
        owned.extend(foreign.drain(..).map(|slot| (slot, false)));
    }
}

impl Scheduler for LocalQueue {
    fn schedule(&self, slot: Queued) {
        if self.is_owner() {
            // SAFETY: this thread is the owner (a turn, or the engine
            // inside `run_one` or `drain`), and the references do not
            // outlive these lines: nothing that runs inside `push_back`
            // schedules. The hand-off slot's wake-up came first.
            #[allow(unsafe_code)]
            unsafe {
                self.flush_hand_off();
                self.owned().push_back((slot, false))
            };
            return;
        }
        self.schedule_foreign(slot);
    }

    fn add_timer(&self, actor: ActorId, key: TimerKey, deadline: Instant) {
        let mut timers = self.timers.lock();
        timers.push(actor, key, deadline);
        self.has_timers.store(true, Ordering::Relaxed);
    }

    fn simulates_work(&self) -> bool {
        false
    }
}

/// The local scheduler's own settings, set through [`LocalBuilder`]'s
/// `batch`.
pub struct LocalOptions {
    batch: usize,
}

/// Configures a [`LocalSystem`]: the settings every system shares (see
/// [`SystemBuilder`]) and the local scheduler's own.
pub type LocalBuilder = SystemBuilder<LocalOptions>;

impl SystemBuilder<LocalOptions> {
    /// Turns of one actor per scheduling (default [`DEFAULT_BATCH`], at
    /// least 1): more is faster for an actor with a full mailbox, fewer is
    /// fairer to the others.
    pub fn batch(mut self, n: usize) -> Self {
        self.options.batch = n.max(1);
        self
    }

    /// Builds the system.
    pub fn build(self) -> LocalSystem {
        let (shared, root) = self.config.build(Clock::real());
        let queue = Arc::new(LocalQueue::new(&shared));
        let engine = Engine::new(shared, queue.clone(), root);
        LocalSystem {
            engine,
            queue,
            batch: self.options.batch,
            turns: 0,
            fx: Effects::default(),
        }
    }
}

/// An actor system on the calling thread, with real time. See the
/// [module docs](self).
///
/// Dropping it without [`LocalSystem::shutdown`] stops every actor still
/// alive at once (children first, `stopped` hooks run, mail still queued
/// becomes dead letters), running for at most 5 s, as dropping a
/// [`ThreadedSystem`](crate::ThreadedSystem) does: an actor's cell holds
/// its own address, so without the stop it would never be freed.
pub struct LocalSystem {
    engine: Engine,
    queue: Arc<LocalQueue>,
    batch: usize,
    turns: u64,
    /// The effects record every batch reuses (see `Engine::run_slot`).
    fx: Effects,
}

impl LocalSystem {
    /// A system with default settings (metrics on, no trace, batch 32).
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// The engine (the unit tests' look at the tree).
    #[cfg(test)]
    pub(crate) fn engine(&self) -> &Engine {
        &self.engine
    }

    /// A builder, for a trace sink, metrics, root supervision, batch.
    pub fn builder() -> LocalBuilder {
        SystemBuilder::with_options(LocalOptions {
            batch: DEFAULT_BATCH,
        })
    }

    /// Units of work (control messages and turns) run so far.
    pub fn turns(&self) -> u64 {
        self.turns
    }

    /// The deadline of the next pending timer, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.queue.timers.lock().next_deadline()
    }

    /// Runs the actor that has waited longest for a batch of turns. False
    /// when no actor is runnable (timers are not looked at).
    pub fn run_one(&mut self) -> bool {
        let _running = Running::enter(&self.queue);
        self.run_next()
    }

    /// [`LocalSystem::run_one`] inside the caller's `Running` mark.
    /// Inlined into the loop of `drain` too (as a call it saved and
    /// restored six registers a batch).
    #[inline(always)]
    fn run_next(&mut self) -> bool {
        let Some((slot, claimed)) = self.queue.pop() else {
            return false;
        };
        self.turns += self
            .engine
            .run_slot(slot, claimed, self.batch, &mut self.fx) as u64;
        true
    }

    /// Runs until no actor is runnable and no timer is due, firing the
    /// timers whose deadline has passed. Returns the units of work run.
    /// An actor that keeps itself busy forever keeps this from returning:
    /// [`LocalSystem::run_for`] bounds the time.
    pub fn run_until_idle(&mut self) -> u64 {
        let before = self.turns;
        self.drain(None);
        self.turns - before
    }

    /// Runs until idle, or until `limit` of real time has passed (checked
    /// between batches). True if it went idle.
    pub fn run_for(&mut self, limit: Duration) -> bool {
        self.drain(Some(std::time::Instant::now() + limit))
    }

    /// Runs batches, firing due timers after each, until nothing is
    /// runnable or due (true), or `deadline` has passed (false). The
    /// thread is marked as this system's runner once for the whole loop,
    /// not once per batch (`run_one`'s mark was about a tenth of a
    /// ping-pong message's instructions): between batches it is still
    /// the thread holding `&mut self`, so the wake-ups made by the timers
    /// fired here go to the owner's queue as a turn's do.
    fn drain(&mut self, deadline: Option<std::time::Instant>) -> bool {
        let _running = Running::enter(&self.queue);
        let past = |deadline: Option<std::time::Instant>| {
            deadline.is_some_and(|d| std::time::Instant::now() >= d)
        };
        loop {
            let mut n = 0u32;
            while self.run_next() {
                self.fire_due();
                n = n.wrapping_add(1);
                // The clock is read once in 64 batches: a batch is short.
                if n % 64 == 0 && past(deadline) {
                    return false;
                }
            }
            if !self.fire_due() {
                return true;
            }
            if past(deadline) {
                return false;
            }
        }
    }

    /// Fires every timer whose deadline has passed. False if there was none.
    /// Called after every batch: inlined, so that with no timer pending it
    /// is one load and a branch (as a call it was about 20 instructions
    /// per batch, for the frame of the loop below).
    #[inline]
    fn fire_due(&mut self) -> bool {
        if !self.queue.has_timers.load(Ordering::Relaxed) {
            return false;
        }
        self.fire_pending()
    }

    #[inline(never)]
    fn fire_pending(&mut self) -> bool {
        let mut fired = false;
        loop {
            let next = {
                let mut timers = self.queue.timers.lock();
                // No timer pending: no clock read.
                if timers.next_deadline().is_none() {
                    self.queue.has_timers.store(false, Ordering::Relaxed);
                    return fired;
                }
                timers.pop_due(self.engine.shared.clock.now())
            };
            match next {
                Some(t) => {
                    self.engine.fire_timer(t);
                    fired = true;
                }
                None => return fired,
            }
        }
    }

    /// Graceful shutdown: lets queued mail drain, stops every top-level
    /// actor (children first, `stopped` hooks run) and runs until they are
    /// gone, at most `timeout` in all. Pending timers never fire.
    pub fn shutdown(mut self, timeout: Duration) -> Result<ShutdownReport, ShutdownTimeout> {
        let start = std::time::Instant::now();
        let _ = self.run_for(timeout);
        for id in self.engine.children(ROOT) {
            System::stop(&self, id);
        }
        let _ = self.run_for(timeout.saturating_sub(start.elapsed()));
        let remaining = self.engine.actor_count();
        self.flush_trace();
        if remaining > 0 {
            return Err(ShutdownTimeout {
                waited: start.elapsed(),
                remaining,
            });
        }
        Ok(ShutdownReport {
            dead_letters: self.engine.shared.dead_letters(),
        })
    }

    /// Flushes the trace sink.
    pub fn flush_trace(&self) {
        self.engine.shared.tracer.flush();
    }
}

impl Default for LocalSystem {
    fn default() -> Self {
        Self::new()
    }
}

#[allow(private_interfaces)] // sealed: see `system::sealed`
impl crate::system::sealed::Sealed for LocalSystem {
    fn engine(&self) -> &Engine {
        &self.engine
    }
}

impl System for LocalSystem {
    /// Runs until idle (see [`LocalSystem::run_for`]); false if still busy
    /// after `timeout`.
    fn settle(&mut self, timeout: Duration) -> bool {
        self.run_for(timeout)
    }

    /// Runs the system for `d` of real time: actors run as they become
    /// runnable, timers fire when due, and the thread sleeps while nothing
    /// is runnable until the next deadline. Then settles (at most 10 s).
    fn sleep(&mut self, d: Duration) -> bool {
        let end = self.engine.shared.clock.now() + d;
        loop {
            self.run_until_idle();
            let now = self.engine.shared.clock.now();
            if now >= end {
                break;
            }
            let wake = self.next_deadline().map_or(end, |t| t.min(end));
            std::thread::sleep(wake.saturating_duration_since(now));
        }
        self.run_for(Duration::from_secs(10))
    }

    fn shutdown(self, timeout: Duration) -> Result<ShutdownReport, ShutdownTimeout> {
        LocalSystem::shutdown(self, timeout)
    }
}

impl Drop for LocalSystem {
    fn drop(&mut self) {
        if self.engine.actor_count() > 0 {
            for id in self.engine.children(ROOT) {
                System::stop(self, id);
            }
            let _ = self.run_for(Duration::from_secs(5));
        }
        self.engine.shared.tracer.flush();
    }
}
