//! Graceful shutdown of the threaded scheduler: drain or drop per policy,
//! hooks run, every thread joined. One test in this binary, so that no other
//! system's threads are alive while threads are counted.

#![cfg(not(turno_loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use turno::System;

use turno::ThreadedSystem;
use turno::{Actor, Context, Policy, Props};

/// Names of this process's threads that belong to turno.
fn turno_threads() -> Vec<String> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir("/proc/self/task").expect("Linux /proc") {
        let comm = entry.unwrap().path().join("comm");
        if let Ok(name) = std::fs::read_to_string(comm) {
            if name.starts_with("turno-") {
                names.push(name.trim().to_owned());
            }
        }
    }
    names
}

/// turno's threads once the joined ones have left `/proc`: `pthread_join`
/// returns when the kernel clears the exiting thread's id, a step of its
/// exit that comes before the task is removed from `/proc/self/task`, so a
/// thread joined a moment ago may still be listed (seen under load). The
/// list is read again until it is empty or 5 s have passed; a thread that
/// was not joined stays listed and fails the assertion.
fn turno_threads_after_join() -> Vec<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let names = turno_threads();
        if names.is_empty() || std::time::Instant::now() >= deadline {
            return names;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

struct Slow {
    handled: Arc<AtomicU64>,
    stopped: Arc<AtomicU64>,
}

impl Actor for Slow {
    type Msg = u32;
    fn started(&mut self, ctx: &mut Context<'_, Self>) {
        // A child, to check that shutdown stops subtrees.
        let (h, s) = (self.handled.clone(), self.stopped.clone());
        if ctx.id().as_u64() % 2 == 1 {
            ctx.spawn(Props::new(), move || Slow {
                handled: h.clone(),
                stopped: s.clone(),
            })
            .unwrap();
        }
    }
    fn handle(&mut self, _ctx: &mut Context<'_, Self>, _n: u32) {
        std::thread::sleep(Duration::from_micros(50));
        self.handled.fetch_add(1, Ordering::SeqCst);
    }
    fn stopped(&mut self, _ctx: &mut Context<'_, Self>) {
        self.stopped.fetch_add(1, Ordering::SeqCst);
    }
}

type Counter = Arc<AtomicU64>;

fn system(actors: usize) -> (ThreadedSystem, Vec<turno::Addr<u32>>, Counter, Counter) {
    let sys = ThreadedSystem::builder().threads(3).build();
    let handled = Arc::new(AtomicU64::new(0));
    let stopped = Arc::new(AtomicU64::new(0));
    let addrs = (0..actors)
        .map(|_| {
            let (h, s) = (handled.clone(), stopped.clone());
            sys.spawn(Props::new().mailbox(Policy::Unbounded), move || Slow {
                handled: h.clone(),
                stopped: s.clone(),
            })
            .unwrap()
        })
        .collect();
    (sys, addrs, handled, stopped)
}

#[test]
fn shutdown_drains_or_drops_and_leaves_no_thread_behind() {
    assert!(turno_threads().is_empty());

    // Graceful: every queued message is handled, every actor stops.
    let (sys, addrs, handled, stopped) = system(10);
    // A new thread names itself once it runs: give them a moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while turno_threads().len() < 4 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(turno_threads().len(), 4, "3 workers and the timer thread");
    for a in &addrs {
        for i in 0..100 {
            let _ = a.try_send(i);
        }
    }
    sys.wait_idle(Duration::from_secs(10));
    let actors = stopped.load(Ordering::SeqCst);
    assert_eq!(actors, 0);
    sys.shutdown(Duration::from_secs(10)).unwrap();
    assert_eq!(handled.load(Ordering::SeqCst), 1000);
    // 10 top-level actors and their children (odd ids have one).
    assert!(stopped.load(Ordering::SeqCst) >= 10);
    let left = turno_threads_after_join();
    assert!(left.is_empty(), "{left:?}");

    // Immediate: queued mail becomes dead letters, counted, nothing lost silently.
    let (sys, addrs, handled, _stopped) = system(4);
    for a in &addrs {
        for i in 0..2_000 {
            let _ = a.try_send(i);
        }
    }
    assert_eq!(sys.dead_letters(), 0);
    let probe = addrs[0].clone();
    let report = sys.shutdown_now(Duration::from_secs(10)).unwrap();
    assert!(probe.is_closed());
    // Every message was handled or counted as a dead letter.
    assert_eq!(handled.load(Ordering::SeqCst) + report.dead_letters, 8_000);
    assert!(
        report.dead_letters > 0,
        "shutdown_now did not wait for the mail"
    );
    let left = turno_threads_after_join();
    assert!(left.is_empty(), "{left:?}");

    // Dropped without shutdown: the threads still go.
    let (sys, addrs, _h, _s) = system(2);
    let _ = addrs[0].try_send(1);
    drop(sys);
    let left = turno_threads_after_join();
    assert!(left.is_empty(), "{left:?}");
}
