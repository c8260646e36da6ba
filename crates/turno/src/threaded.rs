//! The threaded scheduler: work-stealing across cores, a batch of turns per
//! scheduling, hand-off locality.
//!
//! [`ThreadedSystem`] runs actors on `N` worker threads (default: the
//! available parallelism). The actor API is the same as on the
//! [deterministic scheduler](crate::deterministic): the same [`Actor`](crate::Actor) trait,
//! the same [`Props`](crate::Props), the same engine for supervision, muting and stops;
//! only the choice of what runs next and the clock differ.
//!
//! - **Run queues.** Each worker has a local deque (crossbeam-deque); other
//!   threads push to a global injector; idle workers steal.
//! - **Batches.** A worker runs up to `batch` turns of one actor before
//!   looking at its queue again: one scheduling, many messages.
//! - **Hand-off locality.** When a turn sends to an idle actor, that actor is
//!   put in the worker's LIFO slot and runs next *on the same worker*, so a
//!   request and its reply stay in one core's cache (as in tokio's and Go's
//!   schedulers). After three hand-offs in a row the worker takes from its
//!   deque first, so a ping-pong pair cannot starve others.
//! - **Affinity.** An actor woken by a turn stays on that worker (the LIFO
//!   slot, then its deque) unless the worker falls behind: another worker
//!   steals from a deque only when the entries it held a nap ago (a
//!   [`WATCH`] at first) have not all been run since (a long batch, or
//!   more work than one core does). Messages among a few actors so stay in
//!   one core's cache, and work spreads when it waits, not whenever a core
//!   is free: moving an actor costs its mailbox's and its state's cache
//!   lines, more than a short wait.
//! - **Sleep and wake-up.** A worker that finds nothing searches (spins,
//!   looks at the injector) for a few microseconds, then sleeps; while
//!   another worker's deque holds entries, it sleeps as a watcher, in naps
//!   of [`WATCH`] that double while that deque keeps entries and keeps
//!   draining, up to [`WATCH_MAX`] (an owner that keeps up needs no help,
//!   and each wake-up of the watcher costs the busy core time where the two
//!   share a physical core). New work wakes a sleeper only when no worker is
//!   searching (or watching), one at a time (see `idle.rs`), so a single
//!   busy actor fed from outside threads wakes no second worker.
//! - **Time** is real: timers fire on a timer thread; `simulate_work` is
//!   ignored (real work takes real time).
//!
//! ```
//! use std::time::Duration;
//! use turno::ThreadedSystem;
//! use turno::{Actor, Context, Props, System};
//!
//! struct Doubler;
//! impl Actor for Doubler {
//!     type Msg = (u64, std::sync::mpsc::Sender<u64>);
//!     fn handle(&mut self, _ctx: &mut Context<'_, Self>, (n, out): Self::Msg) {
//!         out.send(n * 2).unwrap();
//!     }
//! }
//!
//! let sys = ThreadedSystem::builder().threads(2).build();
//! let doubler = sys.spawn(Props::new(), || Doubler).unwrap();
//! let (tx, rx) = std::sync::mpsc::channel();
//! assert!(doubler.try_send((21, tx)).is_enqueued());
//! assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), 42);
//! sys.shutdown(Duration::from_secs(5)).unwrap();
//! ```

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};
use parking_lot::{Condvar, Mutex};

use crate::effects::Effects;
use crate::engine::slot::Queued;
use crate::engine::Engine;
use crate::hand_off::{Displaced, HandOff, Port};
use crate::idle::{Idle, Woke};
pub use crate::idle::{WATCH, WATCH_MAX};
use crate::ids::ActorId;
use crate::ids::ROOT;
use crate::scheduler::Scheduler;
use crate::system::System;
use crate::system::SystemBuilder;
use crate::time::{Clock, Instant};
use crate::timer::TimerHeap;
use crate::timer::TimerKey;

/// Default turns per scheduling of one actor.
pub const DEFAULT_BATCH: usize = 32;

/// Hand-offs in a row before the local deque gets a turn.
const MAX_LIFO_RUN: u32 = 3;

/// A searching worker looks for work again after spinning 1, 2, 4... up
/// to `2^(IDLE_SPINS-1)` pause hints (about 2 µs in all), then after each
/// of `IDLE_YIELDS` yields of its thread (about what crossbeam's `Backoff`
/// does before a channel blocks), then sleeps (see [`crate::idle`]).
const IDLE_SPINS: u32 = 7;
const IDLE_YIELDS: u32 = 4;

/// A watcher stops watching after this many looks in a row saw no other
/// worker's deque holding entries (about 1 ms): until then an owner whose
/// deque fills again wakes nobody, so a backlog that comes and goes costs
/// no futex wake-up each time.
const QUIET_LOOKS: u32 = 10;

static NEXT_SYSTEM: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    /// The worker context of the current thread, if it is a worker: the
    /// address of the [`Local`] its worker loop owns, null elsewhere (a
    /// constant-initialized `Cell` without a destructor, so that a look is
    /// one load: no lazy-initialization state, no `RefCell` flag; a
    /// hand-off looks once, see [`Core::schedule`]).
    static LOCAL: Cell<*const Local> = const { Cell::new(std::ptr::null()) };
}

/// A worker's own run queue state, owned by its worker loop (on its stack)
/// and lent to [`Core::schedule`] on that thread through [`LOCAL`]: shared
/// references only, so every field that changes is a `Cell` (the deque's
/// owner methods take `&self`).
struct Local {
    system: usize,
    deque: Worker<Queued>,
    /// The LIFO slot: the thread's hand-off slot, which pushes on this
    /// thread reach to claim an idle actor for it ([`crate::hand_off`]).
    /// Its `uncounted`: the LIFO slot's actor was handed off by the batch
    /// running now and is not in [`Core::pending`] yet: the running actor's
    /// count passes to it when the batch ends (see [`Core::schedule`]).
    lifo: HandOff,
    lifo_run: Cell<u32>,
    /// Entries this worker took from its own deque, published in
    /// [`Core::epochs`] (hand-offs through the LIFO slot do not count:
    /// they never wait in the deque).
    epoch: Cell<usize>,
}

/// The current thread's worker context, if it is a worker of any system.
#[allow(unsafe_code)]
#[inline]
fn local<'a>() -> Option<&'a Local> {
    let at = LOCAL.with(Cell::get);
    // SAFETY: `LOCAL` is this thread's own; it is non-null only while the
    // worker loop running on this thread (`worker`) owns the `Local` at
    // that address, which it set there after building it and clears
    // (`LocalSet`'s drop, on return or unwind) before the `Local` is
    // dropped or moved. The caller uses the reference on this thread
    // within its own call, while the worker loop, further up this
    // thread's stack, is running: inside a batch the loop runs. Only
    // shared references to the `Local` are ever made.
    unsafe { at.as_ref() }
}

/// The worker loop's registration of its [`Local`] in [`LOCAL`], cleared
/// when dropped.
struct LocalSet;

impl LocalSet {
    fn new(local: &Local) -> LocalSet {
        LOCAL.with(|l| l.set(local));
        LocalSet
    }
}

impl Drop for LocalSet {
    fn drop(&mut self) {
        LOCAL.with(|l| l.set(std::ptr::null()));
    }
}

/// A worker's published count of pops from its own deque, on a cache line
/// of its own: watchers read it to tell whether the deque drains.
#[repr(align(128))]
struct Epoch(AtomicUsize);

/// Run queues, sleepers, timers: the scheduler half shared with the engine.
struct Core {
    system: usize,
    injector: Injector<Queued>,
    stealers: OnceLock<Vec<Stealer<Queued>>>,
    /// Per worker, its [`Local::epoch`] (written by its owner only).
    epochs: Box<[Epoch]>,
    /// Which workers search and sleep; who wakes whom.
    idle: Idle,
    /// Slots scheduled and not yet run to the end of their batch, except
    /// a hand-off waiting in a worker's LIFO slot while the batch that
    /// woke it still runs (that batch's own count covers both, and passes
    /// to it when the batch ends): so a request and its reply handed off
    /// on one worker touch this shared counter not at all.
    pending: AtomicUsize,
    idle_lock: Mutex<()>,
    idle_cv: Condvar,
    timers: Mutex<TimerHeap>,
    timer_cv: Condvar,
    shutdown: AtomicBool,
    batch: usize,
}

impl Core {
    /// Work any worker may take at once: the injector's. (A deque's
    /// entries are its owner's unless it falls behind: [`Core::backlog`].)
    fn work_visible(&self) -> bool {
        !self.injector.is_empty()
    }

    /// Entries in another worker's deque than `index`'s: a worker going to
    /// sleep then watches.
    fn backlog(&self, index: usize) -> bool {
        self.stealers.get().is_some_and(|all| {
            all.iter()
                .enumerate()
                .any(|(i, s)| i != index && !s.is_empty())
        })
    }

    /// Records every worker's epoch and deque length in `seen`: the first
    /// look of a watcher (see [`Core::steal_stale`]).
    fn look(&self, seen: &mut [(usize, usize)]) {
        if let Some(stealers) = self.stealers.get() {
            for ((v, victim), at) in stealers.iter().enumerate().zip(seen) {
                *at = self.reading(v, victim);
            }
        }
    }

    /// Worker `v`'s epoch and deque length now.
    fn reading(&self, v: usize, victim: &Stealer<Queued>) -> (usize, usize) {
        (self.epochs[v].0.load(Ordering::Relaxed), victim.len())
    }

    /// A watcher's look (`seen`: per worker, its epoch and deque length at
    /// the previous look, updated here): steals one entry from a worker
    /// that popped fewer entries from its deque since than it held then:
    /// the deque is FIFO, so its oldest entry has waited at least the time
    /// between two looks, a nap ([`WATCH`] to [`WATCH_MAX`]).
    fn steal_stale(&self, index: usize, seen: &mut [(usize, usize)]) -> Option<Queued> {
        let stealers = self.stealers.get()?;
        let mut found = None;
        for (v, victim) in stealers.iter().enumerate() {
            let now = self.reading(v, victim);
            let (epoch, waiting) = std::mem::replace(&mut seen[v], now);
            if v == index || found.is_some() || waiting == 0 || now.1 == 0 {
                continue;
            }
            if now.0.wrapping_sub(epoch) < waiting {
                found = loop {
                    match victim.steal() {
                        Steal::Success(s) => break Some(s),
                        Steal::Empty => break None,
                        Steal::Retry => continue,
                    }
                };
            }
        }
        found
    }

    /// Ends the batch just run (its count passes to the actor it handed
    /// off, if any) and picks the next slot to run on worker `index`
    /// (whose loop owns `l`): the slot, and whether it is a claimed
    /// hand-off (its word claimed for this worker by the push that woke
    /// it, see [`crate::hand_off`]).
    fn next_task(&self, l: &Local, index: usize, finished: bool) -> Option<(Queued, bool)> {
        if finished && !l.lifo.uncounted.replace(false) {
            self.finished_one();
        }
        if let Some((s, claimed)) = l.lifo.take() {
            let run = l.lifo_run.get();
            if run < MAX_LIFO_RUN {
                l.lifo_run.set(run + 1);
                return Some((s, claimed));
            }
            l.lifo_run.set(0);
            // The run limit: the deque's entries go first, the hand-off
            // behind them. With none waiting, it would be pushed and
            // popped right back (a read-modify-write of the deque's front
            // every fourth hand-off): it runs at once instead, and counts
            // as no pop of the deque (it never waited there, which is what
            // the epoch tells watchers).
            if l.deque.is_empty() {
                return Some((s, claimed));
            }
            // Others may steal it from the deque: its one entry, claimed
            // by whoever takes it.
            if claimed {
                s.unclaim();
            }
            l.deque.push(s);
        } else {
            l.lifo_run.set(0);
        }
        if let Some(s) = l.deque.pop() {
            let epoch = l.epoch.get().wrapping_add(1);
            l.epoch.set(epoch);
            self.epochs[index].0.store(epoch, Ordering::Relaxed);
            return Some((s, false));
        }
        loop {
            match self.injector.steal_batch_and_pop(&l.deque) {
                Steal::Success(s) => {
                    // The rest of the batch is this worker's backlog now.
                    if !l.deque.is_empty() {
                        self.idle.backlog_pushed();
                    }
                    break Some((s, false));
                }
                Steal::Empty => break None,
                Steal::Retry => continue,
            }
        }
    }

    fn finished_one(&self) {
        if self.pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _guard = self.idle_lock.lock();
            self.idle_cv.notify_all();
        }
    }
}

impl Scheduler for Core {
    /// A slot woken by a batch running on one of this system's workers is
    /// handed off: it takes the worker's LIFO slot and runs next there,
    /// and is not counted in `pending` (the running batch's count passes
    /// to it when that batch ends, in `next_task`). The actor it displaces
    /// from the LIFO slot goes to the deque, where others may steal it, so
    /// it is counted first if it was the uncounted one. Only this worker
    /// reads or writes its LIFO slot and the flag, so no ordering is
    /// involved; `pending` stays `SeqCst` for `wait_idle`. (A push on this
    /// worker that finds its actor idle and the LIFO slot empty does not
    /// come here: it claims the actor and fills the LIFO slot itself, see
    /// [`crate::hand_off`].)
    fn schedule(&self, slot: Queued) {
        match local() {
            Some(l) if l.system == self.system => {
                // Waking a sleeper for the LIFO slot alone would just
                // bounce.
                let Some(Displaced {
                    slot: previous,
                    claimed,
                    uncounted,
                }) = l.lifo.replace(slot, false)
                else {
                    return;
                };
                if uncounted {
                    self.pending.fetch_add(1, Ordering::SeqCst);
                }
                // Others may steal it from the deque: its one entry,
                // claimed by whoever takes it.
                if claimed {
                    previous.unclaim();
                }
                let was_empty = l.deque.is_empty();
                l.deque.push(previous);
                // The deque has just become non-empty: wake a sleeper
                // only if nobody watches it.
                if was_empty {
                    self.idle.backlog_pushed();
                }
            }
            _ => {
                self.pending.fetch_add(1, Ordering::SeqCst);
                self.injector.push(slot);
                self.idle.notify();
            }
        }
    }

    fn add_timer(&self, actor: ActorId, key: TimerKey, deadline: Instant) {
        if self.timers.lock().push(actor, key, deadline) {
            self.timer_cv.notify_one();
        }
    }

    fn simulates_work(&self) -> bool {
        false
    }
}

/// The threaded scheduler's own settings, set through
/// [`ThreadedBuilder`]'s `threads` and `batch`.
pub struct ThreadedOptions {
    threads: usize,
    batch: usize,
}

/// Configures a [`ThreadedSystem`]: the settings every system shares (see
/// [`SystemBuilder`]) and the threaded scheduler's own.
pub type ThreadedBuilder = SystemBuilder<ThreadedOptions>;

impl SystemBuilder<ThreadedOptions> {
    /// Worker threads (default: the available parallelism; at least 1).
    pub fn threads(mut self, n: usize) -> Self {
        self.options.threads = n.max(1);
        self
    }

    /// Turns of one actor per scheduling (default [`DEFAULT_BATCH`]; at least 1).
    pub fn batch(mut self, n: usize) -> Self {
        self.options.batch = n.max(1);
        self
    }

    /// Starts the workers and the timer thread.
    pub fn build(self) -> ThreadedSystem {
        let (shared, root) = self.config.build(Clock::real());
        let core = Arc::new(Core {
            system: NEXT_SYSTEM.fetch_add(1, Ordering::Relaxed),
            injector: Injector::new(),
            stealers: OnceLock::new(),
            epochs: (0..self.options.threads)
                .map(|_| Epoch(AtomicUsize::new(0)))
                .collect(),
            idle: Idle::new(self.options.threads),
            pending: AtomicUsize::new(0),
            idle_lock: Mutex::new(()),
            idle_cv: Condvar::new(),
            timers: Mutex::new(TimerHeap::default()),
            timer_cv: Condvar::new(),
            shutdown: AtomicBool::new(false),
            batch: self.options.batch,
        });
        let engine = Arc::new(Engine::new(shared, core.clone(), root));
        let deques: Vec<Worker<Queued>> = (0..self.options.threads)
            .map(|_| Worker::new_fifo())
            .collect();
        let _ = core
            .stealers
            .set(deques.iter().map(Worker::stealer).collect());
        let mut threads = Vec::with_capacity(self.options.threads + 1);
        for (index, deque) in deques.into_iter().enumerate() {
            let (core, engine) = (core.clone(), engine.clone());
            threads.push(
                std::thread::Builder::new()
                    .name(format!("turno-worker-{index}"))
                    .spawn(move || worker(core, engine, index, deque))
                    .expect("spawn a turno worker thread"),
            );
        }
        let (c, e) = (core.clone(), engine.clone());
        threads.push(
            std::thread::Builder::new()
                .name("turno-timers".into())
                .spawn(move || timer_thread(c, e))
                .expect("spawn the turno timer thread"),
        );
        ThreadedSystem {
            core,
            engine,
            threads,
        }
    }
}

/// A worker between two batches, in the terms of [`crate::idle`].
///
/// A worker that finds nothing searches a few microseconds before it
/// parks: the next message often follows at once (a producer thread's next
/// send, a hand-off from the other worker), and a park costs the sleeper's
/// futex wait plus the waker's futex wake, two context switches that were
/// most of a fan-in's and of two workers' time (`perf stat -e
/// context-switches`). While a worker searches, pushes wake no one.
#[derive(Clone, Copy, Debug)]
enum Between {
    /// Running batches: not a searcher.
    Running,
    /// A searcher: spins (`step` below [`IDLE_SPINS`]), then yields
    /// (below `IDLE_SPINS + IDLE_YIELDS`), then parks; a woken worker is a
    /// searcher again from `step` 0. `watch` is set while it watches other
    /// workers' backlog.
    Searching { step: u32, watch: Option<Watch> },
}

/// A searcher watching other workers' backlog (see [`Core::steal_stale`]).
#[derive(Clone, Copy, Debug)]
struct Watch {
    /// The next nap: [`WATCH`] when the watch starts and after a look that
    /// finds no backlog, doubled (up to [`WATCH_MAX`]) after a look that
    /// finds one draining (nothing stale to steal).
    nap: Duration,
    /// Looks in a row that saw no backlog; [`QUIET_LOOKS`] of them end the
    /// watch.
    quiet_looks: u32,
}

impl Watch {
    const START: Watch = Watch {
        nap: WATCH,
        quiet_looks: 0,
    };
}

/// A searcher's spin or yield number `step`.
fn search_step(step: u32) {
    if step < IDLE_SPINS {
        crate::sync::spin_hints(step);
    } else {
        std::thread::yield_now();
    }
}

impl Core {
    /// Parks worker `index` until it is woken or, watching, its nap ends
    /// (`searching`: whether it is counted as a searcher). A worker that
    /// sees another's backlog first starts watching it (`seen`: the looks'
    /// record). Returns the worker's state after the wake-up, a searcher,
    /// and the entry a watcher's look stole, if any.
    fn park(
        &self,
        index: usize,
        searching: bool,
        watch: Option<Watch>,
        seen: &mut [(usize, usize)],
    ) -> (Between, Option<Queued>) {
        let watch = watch.or_else(|| {
            self.backlog(index).then(|| {
                self.idle.watch_start();
                self.look(seen);
                Watch::START
            })
        });
        let woke = self.idle.sleep(
            index,
            searching,
            watch.map(|w| w.nap),
            // Not watching, a backlog that appeared since the look above
            // ends the sleep at once, so that the worker starts watching
            // it: the owner that pushed it may have seen this worker
            // searching and woken nobody (the `SeqCst` fences in
            // `crate::idle`).
            || self.work_visible() || (watch.is_none() && self.backlog(index)),
            || self.shutdown.load(Ordering::SeqCst),
        );
        let searching_again = |watch| Between::Searching { step: 0, watch };
        let Some(mut w) = watch.filter(|_| woke == Woke::Watch) else {
            return (searching_again(watch), None);
        };
        if let Some(stolen) = self.steal_stale(index, seen) {
            // The caller ends the watch and the search as for any work.
            return (searching_again(Some(w)), Some(stolen));
        }
        if self.backlog(index) {
            w.quiet_looks = 0;
            w.nap = (w.nap * 2).min(WATCH_MAX);
            return (searching_again(Some(w)), None);
        }
        w.quiet_looks += 1;
        w.nap = WATCH;
        if w.quiet_looks < QUIET_LOOKS {
            return (searching_again(Some(w)), None);
        }
        let still = self.idle.watch_stop(|| self.backlog(index));
        (searching_again(still.then_some(Watch::START)), None)
    }
}

fn worker(core: Arc<Core>, engine: Arc<Engine>, index: usize, deque: Worker<Queued>) {
    let local = Local {
        system: core.system,
        deque,
        lifo: HandOff::new(&engine.shared),
        lifo_run: Cell::new(0),
        epoch: Cell::new(0),
    };
    // Cleared before `local` is dropped (declared after it), on return or
    // unwind.
    let _set = LocalSet::new(&local);
    let _port = Port::install(&local.lifo);
    let mut between = Between::Running;
    // Whether a batch ran since the last `next_task` (which ends it).
    let mut finished = false;
    // An entry a watcher's look stole: the next to run.
    let mut stolen = None;
    // The effects record every batch of this worker reuses.
    let mut fx = Effects::default();
    // The watchers' record of every worker's epoch and deque length.
    let mut seen = vec![(0usize, 0usize); core.epochs.len()];
    loop {
        let task = match stolen.take() {
            Some(slot) => Some((slot, false)),
            None => core.next_task(&local, index, std::mem::take(&mut finished)),
        };
        if let Some((slot, claimed)) = task {
            if let Between::Searching { watch, .. } = between {
                // Only off the busy path: a worker that finds work while
                // searching checks the watcher count.
                if watch.is_some() {
                    core.idle.watch_end();
                }
                core.idle.found_work(|| core.work_visible());
            }
            between = Between::Running;
            engine.run_slot(slot, claimed, core.batch, &mut fx);
            finished = true;
            continue;
        }
        if core.shutdown.load(Ordering::SeqCst) {
            break;
        }
        between = match between {
            Between::Running if core.idle.start_search() => {
                search_step(0);
                Between::Searching {
                    step: 1,
                    watch: None,
                }
            }
            // Refused as a searcher: parks at once.
            Between::Running => {
                let (next, found) = core.park(index, false, None, &mut seen);
                stolen = found;
                next
            }
            Between::Searching { step, watch } if step < IDLE_SPINS + IDLE_YIELDS => {
                search_step(step);
                Between::Searching {
                    step: step + 1,
                    watch,
                }
            }
            Between::Searching { watch, .. } => {
                let (next, found) = core.park(index, true, watch, &mut seen);
                stolen = found;
                next
            }
        };
    }
    if let Between::Searching { watch: Some(_), .. } = between {
        core.idle.watch_end();
    }
}

fn timer_thread(core: Arc<Core>, engine: Arc<Engine>) {
    let clock = &engine.shared.clock;
    let mut timers = core.timers.lock();
    loop {
        if core.shutdown.load(Ordering::SeqCst) {
            return;
        }
        match timers.next_deadline() {
            None => {
                core.timer_cv.wait(&mut timers);
            }
            Some(deadline) if deadline <= clock.now() => {
                let t = timers.pop_due(deadline).expect("the earliest is due");
                drop(timers);
                engine.fire_timer(t);
                timers = core.timers.lock();
            }
            Some(deadline) => {
                let at = clock.to_std(deadline).expect("the threaded clock is real");
                core.timer_cv.wait_until(&mut timers, at);
            }
        }
    }
}

pub use crate::system::{ShutdownReport, ShutdownTimeout};

/// An actor system on worker threads. See the [module docs](self).
pub struct ThreadedSystem {
    core: Arc<Core>,
    engine: Arc<Engine>,
    threads: Vec<JoinHandle<()>>,
}

impl ThreadedSystem {
    /// A builder (threads, batch, trace, metrics, root supervision).
    pub fn builder() -> ThreadedBuilder {
        SystemBuilder::with_options(ThreadedOptions {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            batch: DEFAULT_BATCH,
        })
    }

    /// A system with default settings.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Waits until no actor is scheduled or running (pending timers and
    /// parked actors do not count). Returns false on timeout.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut guard = self.core.idle_lock.lock();
        while self.core.pending.load(Ordering::SeqCst) > 0 {
            if std::time::Instant::now() >= deadline {
                return false;
            }
            self.core
                .idle_cv
                .wait_for(&mut guard, Duration::from_millis(1));
        }
        true
    }

    /// Graceful shutdown: lets queued mail drain, stops every actor
    /// (children first, `stopped` hooks run), then joins all threads.
    pub fn shutdown(self, timeout: Duration) -> Result<ShutdownReport, ShutdownTimeout> {
        let start = std::time::Instant::now();
        self.wait_idle(timeout);
        let left = timeout.saturating_sub(start.elapsed());
        self.close(left, start)
    }

    /// Stops every actor at once: mail still queued becomes dead letters
    /// (counted); then joins all threads.
    pub fn shutdown_now(self, timeout: Duration) -> Result<ShutdownReport, ShutdownTimeout> {
        let start = std::time::Instant::now();
        self.close(timeout, start)
    }

    fn close(
        mut self,
        timeout: Duration,
        start: std::time::Instant,
    ) -> Result<ShutdownReport, ShutdownTimeout> {
        self.close_inner(timeout, start)
    }

    fn close_inner(
        &mut self,
        timeout: Duration,
        start: std::time::Instant,
    ) -> Result<ShutdownReport, ShutdownTimeout> {
        for id in self.engine.children(ROOT) {
            self.stop(id);
        }
        let deadline = start + timeout;
        while self.engine.actor_count() > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_micros(200));
        }
        let remaining = self.engine.actor_count();
        self.join_threads();
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

    fn join_threads(&mut self) {
        self.core.shutdown.store(true, Ordering::SeqCst);
        self.core.idle.wake_all();
        {
            let _t = self.core.timers.lock();
            self.core.timer_cv.notify_all();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.engine.shared.tracer.flush();
    }
}

#[allow(private_interfaces)] // sealed: see `system::sealed`
impl crate::system::sealed::Sealed for ThreadedSystem {
    fn engine(&self) -> &Engine {
        &self.engine
    }
}

impl System for ThreadedSystem {
    fn settle(&mut self, timeout: Duration) -> bool {
        self.wait_idle(timeout)
    }

    fn sleep(&mut self, d: Duration) -> bool {
        std::thread::sleep(d);
        self.wait_idle(Duration::from_secs(10))
    }

    fn shutdown(self, timeout: Duration) -> Result<ShutdownReport, ShutdownTimeout> {
        ThreadedSystem::shutdown(self, timeout)
    }
}

impl Default for ThreadedSystem {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ThreadedSystem {
    /// Dropping without `shutdown` is `shutdown_now` with a 5 s limit.
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            let _ = self.close_inner(Duration::from_secs(5), std::time::Instant::now());
        }
    }
}
