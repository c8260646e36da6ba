//! The threaded scheduler's sleep and wake-up protocol: which idle worker
//! looks for work, which sleeps, and when a new run-queue entry wakes one.
//!
//! Each worker is *running* (it has an actor), *searching* (it found
//! nothing and looks again for a while: spinning, stealing) or *sleeping*
//! (parked on its own condition variable). The rule, tokio's: whoever
//! makes work stealable wakes a sleeper **only when no worker is
//! searching** (a searcher will find the work), and the woken worker is
//! counted as searching before it runs again, so that a burst of pushes
//! wakes one worker, not one each. A searcher that finds work and was the
//! last one searching wakes the next only if more work is visible, so work
//! spreads one worker at a time and a single busy actor wakes nobody.
//! At most half the workers search at once, but always two may (the
//! others sleep at once, since many searchers only take cores from the
//! threads producing the work): with one searcher on two workers, the
//! other slept at once after every batch, and a fan-in from outside
//! threads paid about 1.5x the context switches of two searchers
//! (`perf record -e context-switches`; the run is kept in `bench/runs/`).
//!
//! No wake-up is lost: a notifier publishes its work, then reads the
//! counts (`SeqCst` fence); a searcher that gives up first changes the
//! counts, then looks at the queues again (`SeqCst` fence): one of the two
//! sees the other. `tests/idle_loom.rs` checks it under loom, and that
//! the model catches a notifier that skips its fence.
//!
//! **Watchers.** A worker's own run queue (its deque) is not stealable
//! work in the sense above: an actor woken by a turn stays on its waker's
//! worker, so a chain of messages between a few actors keeps to one core's
//! cache instead of bouncing between cores (two workers were 3x slower
//! than one on chameneos and bndbuffer, BENCHMARKS.md). A worker that goes
//! to sleep while another's deque holds entries sleeps as a *watcher*: it
//! naps [`WATCH`] at a time, and at each nap's end steals only from a
//! worker whose queue did not drain meanwhile (`threaded.rs`). The owner
//! of a deque that has just become non-empty wakes a sleeper only when no
//! worker watches ([`Idle::backlog_pushed`]); a watcher that stops
//! watching first lowers the watcher count, then looks at the deques again
//! (`SeqCst` fences on both sides, the same argument as above), so a
//! backlog is never left with nobody to watch it. `tests/idle_loom.rs`
//! checks that too, and that the model catches an owner without its fence.

use std::sync::atomic::Ordering;

// loom's fence under `--cfg turno_loom`: a std fence is invisible to it.
use crate::sync::{fence, AtomicUsize, Mutex};

/// One searching worker in [`Idle::state`]'s low half.
const SEARCHING: usize = 1;
/// One sleeping worker in [`Idle::state`]'s high half.
const SLEEPING: usize = 1 << 16;

fn searching(state: usize) -> usize {
    state & (SLEEPING - 1)
}

fn sleeping(state: usize) -> usize {
    state >> 16
}

/// How long a sleeping worker waits before it looks again on its own: a
/// safety net only (every wake-up is notified).
#[cfg(not(turno_loom))]
const SLEEP_LIMIT: std::time::Duration = std::time::Duration::from_millis(50);

/// How long a watcher first naps before it looks at the other workers'
/// queues: an entry waits about this long behind a worker that gets stuck
/// in a long batch while the watcher naps this long, and a watcher costs
/// its core one timed wake-up per nap (a few microseconds of its own time).
/// While the deques it watches keep entries and keep draining, its nap
/// doubles after each look, up to [`WATCH_MAX`].
#[cfg_attr(turno_loom, allow(dead_code))] // the threaded scheduler's, not loom's
pub const WATCH: std::time::Duration = std::time::Duration::from_micros(100);

/// The longest nap of a watcher (see [`WATCH`]): its nap grows to this
/// while the owner of the deque it watches keeps up with a backlog that
/// never empties, so an entry behind a batch that then runs long waits at
/// most about twice this long. Each wake-up of the watcher is time taken
/// from the busy worker wherever the two share a physical core (a
/// virtual machine's vCPUs may): on a 2-vCPU guest, naps of [`WATCH`]
/// alone made two workers slower than one on bndbuffer and chameneos
/// (BENCHMARKS.md, "Chameneos and the bounded buffer").
#[cfg_attr(turno_loom, allow(dead_code))] // the threaded scheduler's, not loom's
pub const WATCH_MAX: std::time::Duration = std::time::Duration::from_micros(6400);

#[cfg(not(turno_loom))]
type Condvar = parking_lot::Condvar;
#[cfg(turno_loom)]
type Condvar = loom::sync::Condvar;

/// Which workers sleep, under one lock.
struct Sleepers {
    /// Sleeping workers not yet claimed by a notifier.
    list: Vec<usize>,
    /// Per worker: claimed by a notifier (already counted as searching).
    woken: Vec<bool>,
}

/// Test-only fault injection (loom models only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inject {
    /// The protocol as written.
    None,
    /// A notifier reads the counts without its `SeqCst` fence: the read may
    /// miss a searcher that has just given up, and its work is then lost
    /// until the sleeper's safety-net timeout (forever under loom).
    NotifyWithoutFence,
    /// The owner of a deque that has just become non-empty reads the
    /// watcher count without its `SeqCst` fence: it may see a watcher that
    /// is leaving, which then misses the backlog, and nobody watches it.
    BacklogWithoutFence,
}

/// How a sleep ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woke {
    /// A notifier claimed the sleeper, work was there at once, the
    /// safety-net timeout passed, or shutdown: look for work.
    Look,
    /// A watcher's nap ended: look at the other workers' queues.
    Watch,
}

/// The sleep and wake-up state of one system's workers.
pub struct Idle {
    /// Searching workers (low 16 bits) and sleeping ones (high bits): a
    /// notifier decides from one load.
    state: AtomicUsize,
    sleepers: Mutex<Sleepers>,
    wakers: Box<[Condvar]>,
    /// Workers watching the others' deques ([`Idle::watch_start`]).
    watchers: AtomicUsize,
    workers: usize,
    inject: Inject,
}

impl Idle {
    /// The state of `workers` workers, all running.
    pub fn new(workers: usize) -> Idle {
        Self::with_fault(workers, Inject::None)
    }

    /// [`Idle::new`] with a fault injected (loom models only).
    #[cfg_attr(not(turno_loom), allow(dead_code))]
    pub fn with_fault(workers: usize, inject: Inject) -> Idle {
        Idle {
            state: AtomicUsize::new(0),
            sleepers: Mutex::new(Sleepers {
                list: Vec::with_capacity(workers),
                woken: vec![false; workers],
            }),
            wakers: (0..workers).map(|_| Condvar::new()).collect(),
            watchers: AtomicUsize::new(0),
            workers,
            inject,
        }
    }

    /// A running worker that found nothing starts searching, unless half
    /// the workers (and at least two) already do (false: it should sleep at
    /// once).
    pub fn start_search(&self) -> bool {
        let mut s = self.state.load(Ordering::SeqCst);
        loop {
            if searching(s) >= (self.workers / 2).max(2) {
                return false;
            }
            match self.state.compare_exchange_weak(
                s,
                s + SEARCHING,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// A searching worker found work and runs it. The last searcher to stop
    /// wakes another worker if more work is visible (`more_work`), so that
    /// work left behind is not stranded while every other worker sleeps.
    pub fn found_work(&self, more_work: impl Fn() -> bool) {
        let before = self.state.fetch_sub(SEARCHING, Ordering::SeqCst);
        if searching(before) == 1 {
            // Ordered before the look at the queues: a push whose notifier
            // saw us searching is visible to `more_work`.
            fence(Ordering::SeqCst);
            if more_work() {
                self.notify();
            }
        }
    }

    /// Work was just made stealable (pushed to the injector or a worker's
    /// deque): wakes a sleeping worker, unless one is searching already
    /// (it will find the work) or none sleeps.
    pub fn notify(&self) {
        if self.inject != Inject::NotifyWithoutFence {
            // The push before this, then the read of the counts: a searcher
            // that gives up after our read looks at the queues after it.
            fence(Ordering::SeqCst);
        }
        let s = self
            .state
            .load(if self.inject == Inject::NotifyWithoutFence {
                Ordering::Relaxed
            } else {
                Ordering::SeqCst
            });
        if searching(s) > 0 || sleeping(s) == 0 {
            return;
        }
        let mut sl = self.sleepers.lock();
        // Another notifier may have woken one meanwhile: it is searching.
        if searching(self.state.load(Ordering::SeqCst)) > 0 {
            return;
        }
        if let Some(index) = sl.list.pop() {
            sl.woken[index] = true;
            self.state
                .fetch_add(SEARCHING.wrapping_sub(SLEEPING), Ordering::SeqCst);
            drop(sl);
            self.wakers[index].notify_one();
        }
    }

    /// Worker `index`, searching or not, sleeps until a notifier claims it
    /// (or, outside loom, a safety-net timeout). It first looks at the
    /// queues once more (`work`) and stops at once if there is work or
    /// `stop()` (shutdown). It comes back searching. With `watch`, the
    /// sleep is a watcher's nap of that long ([`WATCH`]): [`Woke::Watch`]
    /// when it ends by its timeout (under loom, which has no time, at once
    /// after the look at the queues).
    pub fn sleep(
        &self,
        index: usize,
        was_searching: bool,
        watch: Option<std::time::Duration>,
        work: impl Fn() -> bool,
        stop: impl Fn() -> bool,
    ) -> Woke {
        let mut sl = self.sleepers.lock();
        sl.list.push(index);
        let delta = if was_searching {
            SLEEPING.wrapping_sub(SEARCHING)
        } else {
            SLEEPING
        };
        self.state.fetch_add(delta, Ordering::SeqCst);
        // The counts, then the look at the queues: a notifier that read the
        // counts before this change pushed before our look.
        fence(Ordering::SeqCst);
        if work() || stop() {
            self.leave(&mut sl, index);
            return Woke::Look;
        }
        #[cfg(turno_loom)]
        if watch.is_some() {
            self.leave(&mut sl, index);
            return Woke::Watch;
        }
        loop {
            #[cfg(not(turno_loom))]
            let timed_out = self.wakers[index]
                .wait_for(&mut sl, watch.unwrap_or(SLEEP_LIMIT))
                .timed_out();
            #[cfg(turno_loom)]
            let timed_out = {
                sl = self.wakers[index]
                    .wait(sl)
                    .unwrap_or_else(|e| e.into_inner());
                false
            };
            if std::mem::take(&mut sl.woken[index]) {
                return Woke::Look;
            }
            if timed_out || stop() {
                self.leave(&mut sl, index);
                return if timed_out && watch.is_some() {
                    Woke::Watch
                } else {
                    Woke::Look
                };
            }
        }
    }

    /// A worker starts watching the others' deques (it saw a backlog as it
    /// went to sleep): owners whose deque becomes non-empty wake nobody
    /// while it watches.
    pub fn watch_start(&self) {
        self.watchers.fetch_add(1, Ordering::SeqCst);
    }

    /// A watcher stops watching: `backlog()` looks at the other workers'
    /// deques after the count is lowered. Returns true if it saw one and
    /// so watches on (counted again).
    pub fn watch_stop(&self, backlog: impl Fn() -> bool) -> bool {
        self.watchers.fetch_sub(1, Ordering::SeqCst);
        // The count, then the look: an owner that read the count before
        // this change pushed before our look.
        fence(Ordering::SeqCst);
        if backlog() {
            self.watchers.fetch_add(1, Ordering::SeqCst);
            return true;
        }
        false
    }

    /// A watcher found work of its own and runs it: it stops watching
    /// without a look (a running worker wakes on nothing; it looks again
    /// when it next goes to sleep).
    pub fn watch_end(&self) {
        self.watchers.fetch_sub(1, Ordering::SeqCst);
    }

    /// A worker's deque has just become non-empty: unless a worker
    /// watches, wake a sleeper as [`Idle::notify`] does (a searcher, or the
    /// woken one, becomes a watcher when it goes to sleep and sees it).
    pub fn backlog_pushed(&self) {
        if self.inject != Inject::BacklogWithoutFence {
            // The push before this, then the read of the count: a watcher
            // that stops after our read looks at the deques after it.
            fence(Ordering::SeqCst);
        }
        let order = if self.inject == Inject::BacklogWithoutFence {
            Ordering::Relaxed
        } else {
            Ordering::SeqCst
        };
        if self.watchers.load(order) > 0 {
            return;
        }
        self.notify();
    }

    /// Workers watching now (tests and the model).
    #[cfg_attr(not(turno_loom), allow(dead_code))]
    pub fn watchers(&self) -> usize {
        self.watchers.load(Ordering::SeqCst)
    }

    /// A sleeper gets up on its own: off the list, counted as searching
    /// (unless a notifier claimed it meanwhile, which counted it so).
    fn leave(&self, sl: &mut Sleepers, index: usize) {
        if std::mem::take(&mut sl.woken[index]) {
            return;
        }
        if let Some(at) = sl.list.iter().position(|&i| i == index) {
            sl.list.swap_remove(at);
            self.state
                .fetch_add(SEARCHING.wrapping_sub(SLEEPING), Ordering::SeqCst);
        }
    }

    /// Wakes every sleeper (shutdown).
    pub fn wake_all(&self) {
        let mut sl = self.sleepers.lock();
        while let Some(index) = sl.list.pop() {
            sl.woken[index] = true;
            self.state
                .fetch_add(SEARCHING.wrapping_sub(SLEEPING), Ordering::SeqCst);
            self.wakers[index].notify_one();
        }
    }

    /// Searching and sleeping workers now (tests and the model).
    #[cfg_attr(not(turno_loom), allow(dead_code))]
    pub fn counts(&self) -> (usize, usize) {
        let s = self.state.load(Ordering::SeqCst);
        (searching(s), sleeping(s))
    }
}
