//! Model-checked sleep and wake-up protocol of the threaded scheduler
//! (loom): the real `Idle` (`src/idle.rs`), driven by model workers that
//! take from a model run queue (a counter), under every interleaving loom
//! explores.
//!
//! ```text
//! RUSTFLAGS="--cfg turno_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p turno --release --test idle_loom
//! ```
//!
//! Properties:
//! - **no lost wake-up**: work pushed (and notified) while the workers go
//!   from searching to sleeping is always taken: a lost wake-up leaves
//!   every thread blocked with work queued, which loom reports as a
//!   deadlock (under loom a sleeper has no safety-net timeout);
//! - **one wake-up per burst**: pushes made while a worker is searching
//!   wake no sleeper;
//! - and the check of the checker: a notifier that reads the counts
//!   without its fence (`Inject::NotifyWithoutFence`) loses a wake-up, and
//!   `the_model_catches_a_notifier_without_its_fence` asserts that loom
//!   finds it;
//! - **no unwatched backlog**: a worker's deque that becomes non-empty
//!   while the one watcher stops watching is seen by that watcher, or the
//!   owner wakes it (a sleeper left with a backlog nobody watches is a
//!   deadlock under loom);
//! - **a watched backlog wakes nobody**: while a worker watches, an owner
//!   whose deque fills wakes no sleeper;
//! - and its check: an owner that reads the watcher count without its
//!   fence (`Inject::BacklogWithoutFence`) leaves a backlog unwatched, and
//!   `the_model_catches_an_owner_without_its_fence` asserts that loom finds it.

#![allow(unexpected_cfgs)]
#![cfg(turno_loom)]

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;
use turno::idle_model::{Idle, Inject};

/// A run queue of `queued` anonymous items, the workers' shared state.
struct Model {
    idle: Idle,
    queued: AtomicUsize,
    taken: AtomicUsize,
    stop: AtomicBool,
    total: usize,
}

impl Model {
    fn new(workers: usize, total: usize, inject: Inject) -> Arc<Model> {
        Arc::new(Model {
            idle: Idle::with_fault(workers, inject),
            queued: AtomicUsize::new(0),
            taken: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            total,
        })
    }

    fn push(&self) {
        self.queued.fetch_add(1, Ordering::Release);
        self.idle.notify();
    }

    fn try_take(&self) -> bool {
        let mut n = self.queued.load(Ordering::Acquire);
        while n > 0 {
            match self
                .queued
                .compare_exchange(n, n - 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    fn work(&self) -> bool {
        self.queued.load(Ordering::Acquire) > 0
    }

    /// A worker as `threaded.rs` runs one: take, else search (one more
    /// look stands for the spin), else sleep; it stops once every item is
    /// taken (the last taker wakes the others, as shutdown does).
    fn worker(&self, index: usize) {
        let mut searching = false;
        loop {
            if self.try_take() {
                if std::mem::take(&mut searching) {
                    self.idle.found_work(|| self.work());
                }
                if self.taken.fetch_add(1, Ordering::AcqRel) + 1 == self.total {
                    self.stop.store(true, Ordering::SeqCst);
                    self.idle.wake_all();
                }
                continue;
            }
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            if !searching {
                searching = self.idle.start_search();
                if searching {
                    continue;
                }
            }
            self.idle.sleep(
                index,
                searching,
                None,
                || self.work(),
                || self.stop.load(Ordering::SeqCst),
            );
            searching = true;
        }
    }
}

/// Two workers; a producer pushes `items` one at a time while they go
/// idle. Every item is taken (or loom reports the deadlock). `bound`:
/// loom's preemption bound (2 keeps the two-item model under a minute).
fn two_workers(items: usize, bound: usize, inject: Inject) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(bound);
    b.check(move || {
        let m = Model::new(2, items, inject);
        let workers: Vec<_> = (0..2)
            .map(|i| {
                let m = m.clone();
                thread::spawn(move || m.worker(i))
            })
            .collect();
        for _ in 0..items {
            m.push();
        }
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(m.taken.load(Ordering::SeqCst), items);
        assert_eq!(m.queued.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn a_push_racing_with_workers_going_to_sleep_is_taken() {
    two_workers(1, 3, Inject::None);
}

#[test]
fn two_pushes_racing_with_two_sleepers_are_both_taken() {
    two_workers(2, 2, Inject::None);
}

/// While a worker searches, a push wakes no sleeper: the notifier sees
/// the searcher and leaves the sleeper alone.
#[test]
fn a_push_while_one_searches_wakes_no_sleeper() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(2));
        let stop = Arc::new(AtomicBool::new(false));
        // Worker 1 sleeps (nothing queued, not stopping).
        let sleeper = {
            let (idle, stop) = (idle.clone(), stop.clone());
            thread::spawn(move || {
                idle.sleep(1, false, None, || false, || stop.load(Ordering::SeqCst));
            })
        };
        // Worker 0 searches; work is pushed and notified meanwhile.
        assert!(idle.start_search());
        idle.notify();
        // Worker 0 is still the one searcher: nobody was woken for it.
        let (searching, _) = idle.counts();
        assert_eq!(searching, 1);
        stop.store(true, Ordering::SeqCst);
        idle.wake_all();
        sleeper.join().unwrap();
    });
}

#[test]
fn the_model_catches_a_notifier_without_its_fence() {
    let caught = catch_unwind(AssertUnwindSafe(|| {
        two_workers(1, 3, Inject::NotifyWithoutFence)
    }));
    assert!(
        caught.is_err(),
        "loom should find the lost wake-up of a notifier that skips its fence"
    );
}

/// Worker 1 watches; its look saw no backlog, so it stops watching and
/// sleeps unless it sees one; meanwhile worker 0's deque becomes non-empty
/// and worker 0 calls `backlog_pushed`. Worker 1 ends watching on, or
/// awake with the backlog in sight; a sleeper left with it is a deadlock.
fn watcher_leaving(inject: Inject) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let idle = Arc::new(Idle::with_fault(2, inject));
        let backlog = Arc::new(AtomicBool::new(false));
        idle.watch_start();
        let watcher = {
            let (idle, backlog) = (idle.clone(), backlog.clone());
            thread::spawn(move || {
                let seen = || backlog.load(Ordering::Acquire);
                if !idle.watch_stop(seen) {
                    idle.sleep(1, false, None, seen, || false);
                }
                assert!(seen(), "worker 1 stopped looking before the backlog");
            })
        };
        backlog.store(true, Ordering::Release);
        idle.backlog_pushed();
        watcher.join().unwrap();
    });
}

#[test]
fn a_backlog_racing_with_the_watcher_leaving_is_watched_or_wakes_it() {
    watcher_leaving(Inject::None);
}

/// While a worker watches, a deque that fills wakes no sleeper.
#[test]
fn a_backlog_while_one_watches_wakes_no_sleeper() {
    loom::model(|| {
        let idle = Arc::new(Idle::new(2));
        let stop = Arc::new(AtomicBool::new(false));
        idle.watch_start();
        let sleeper = {
            let (idle, stop) = (idle.clone(), stop.clone());
            thread::spawn(move || {
                idle.sleep(1, false, None, || false, || stop.load(Ordering::SeqCst));
            })
        };
        idle.backlog_pushed();
        let (searching, _) = idle.counts();
        assert_eq!(searching, 0, "a sleeper was woken for a watched backlog");
        assert_eq!(idle.watchers(), 1);
        stop.store(true, Ordering::SeqCst);
        idle.wake_all();
        sleeper.join().unwrap();
    });
}

#[test]
fn the_model_catches_an_owner_without_its_fence() {
    let caught = catch_unwind(AssertUnwindSafe(|| {
        watcher_leaving(Inject::BacklogWithoutFence)
    }));
    assert!(
        caught.is_err(),
        "loom should find the unwatched backlog of an owner that skips its fence"
    );
}
