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
//! (`perf record -e context-switches`, BENCHMARKS.md, stop 22).
//!
//! No wake-up is lost: a notifier publishes its work, then reads the
//! counts (`SeqCst` fence); a searcher that gives up first changes the
//! counts, then looks at the queues again (`SeqCst` fence): one of the two
//! sees the other. `tests/idle_loom.rs` checks it under loom, and that
//! the model catches a notifier that skips its fence.

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
}

/// The sleep and wake-up state of one system's workers.
pub struct Idle {
    /// Searching workers (low 16 bits) and sleeping ones (high bits): a
    /// notifier decides from one load.
    state: AtomicUsize,
    sleepers: Mutex<Sleepers>,
    wakers: Box<[Condvar]>,
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
    /// `stop()` (shutdown). It comes back searching.
    pub fn sleep(
        &self,
        index: usize,
        was_searching: bool,
        work: impl Fn() -> bool,
        stop: impl Fn() -> bool,
    ) {
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
            return;
        }
        loop {
            #[cfg(not(turno_loom))]
            let timed_out = self.wakers[index]
                .wait_for(&mut sl, SLEEP_LIMIT)
                .timed_out();
            #[cfg(turno_loom)]
            let timed_out = {
                sl = self.wakers[index]
                    .wait(sl)
                    .unwrap_or_else(|e| e.into_inner());
                false
            };
            if std::mem::take(&mut sl.woken[index]) {
                return;
            }
            if timed_out || stop() {
                self.leave(&mut sl, index);
                return;
            }
        }
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
