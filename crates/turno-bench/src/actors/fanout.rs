//! `fanout`: parallel work spread from one actor. A coordinator gets one
//! message and sends `n` jobs round-robin to [`WORKERS`] worker actors;
//! each job is [`SPINS`] steps of arithmetic (about 10 µs on the machine of
//! BENCHMARKS.md) and counts down a shared [`Countdown`]; the run ends at
//! the last job, and the workers' checksum is checked.
//!
//! Unlike every other actor bench here, the work per message dominates the
//! message passing, so the figure says how well a scheduler spreads work
//! over its threads: on a machine with `k` free cores a multi-threaded
//! scheduler should approach `k` times its one-thread figure (`turno` /
//! `turno-1t`, `tokio-mt` / `tokio-ct`, `crossbeam` one OS thread per
//! worker). It is the bench that would show a cost of turno's affinity
//! (an actor woken by a turn stays on its worker; another worker takes it
//! only after it waited a nap of [`turno::threaded::WATCH`]), which the
//! message-passing benches cannot.
//!
//! Only the implementations that run on several threads and their
//! one-thread references take part: the single-threaded peers (stakker,
//! actix on one arbiter, `turno-det`, `turno-local`) would measure one core.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;

use crossbeam_channel::{Receiver, Sender};

use super::{enq, n_or, not_applicable, wait, Countdown, TokioRt, Turno};
use crate::harness::Harness;
use crate::Args;

const BENCH: &str = "fanout";

/// Worker actors per run.
pub const WORKERS: usize = 16;

/// Arithmetic steps per job.
pub const SPINS: u64 = 4_000;

/// Default jobs per run.
pub const DEFAULT_N: u64 = 20_000;

/// Runs every implementation that runs on threads.
pub fn run(args: &Args, h: &mut Harness) {
    let n = n_or(args, DEFAULT_N);
    for imp in ["turno", "turno-1t", "turno-tuned"] {
        if args.selected(BENCH, imp) {
            turno_impl(h, imp, n);
        }
    }
    for imp in ["turno-det", "turno-local", "stakker", "actix"] {
        not_applicable(
            args,
            BENCH,
            imp,
            "single-threaded: this bench measures how work spreads over threads",
        );
    }
    for imp in ["tokio-ct", "tokio-mt"] {
        if args.selected(BENCH, imp) {
            tokio_impl(h, imp, n);
        }
    }
    if args.selected(BENCH, "crossbeam") {
        crossbeam_impl(h, n);
    }
}

/// One job: [`SPINS`] steps of a linear congruential generator seeded by
/// the job's number (its result goes into the checksum, so it cannot be
/// optimised away).
#[inline]
fn job(seed: u64) -> u64 {
    let mut x = seed;
    for i in 0..SPINS {
        x = black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(i | 1),
        );
    }
    x
}

/// The checksum every implementation must report for jobs `0..n`.
fn expected(n: u64) -> u64 {
    (0..n).map(job).fold(0, u64::wrapping_add)
}

/// What a worker does with a job: the work, the checksum, the countdown.
struct Work {
    sum: Arc<AtomicU64>,
    left: Arc<Countdown>,
}

impl Work {
    #[inline]
    fn run(&self, seed: u64) {
        self.sum.fetch_add(job(seed), Ordering::Relaxed);
        self.left.tick();
    }
}

/// A fresh checksum and countdown for `n` jobs.
fn start(n: u64) -> (Arc<AtomicU64>, Arc<Countdown>, Receiver<()>) {
    let (left, rx) = Countdown::new(n);
    (Arc::new(AtomicU64::new(0)), left, rx)
}

// ---------------------------------------------------------------- turno

impl turno::Actor for Work {
    type Msg = u64;
    fn handle(&mut self, _: &mut turno::Context<'_, Self>, seed: u64) {
        self.run(seed);
    }
}

struct Coordinator {
    workers: Vec<turno::Addr<u64>>,
    n: u64,
}

impl turno::Actor for Coordinator {
    type Msg = ();
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, _: ()) {
        for i in 0..self.n {
            enq(ctx.send(&self.workers[i as usize % WORKERS], i));
        }
    }
}

fn turno_impl(h: &mut Harness, imp: &str, n: u64) {
    let want = expected(n);
    let mut sys = Turno::new(imp);
    h.measure(BENCH, imp, n, || {
        let (sum, left, rx) = start(n);
        // Unbounded: the coordinator's one turn sends all `n` jobs (a
        // bounded mailbox would mute it, which is another bench).
        let props = || turno::Props::new().mailbox(turno::Policy::Unbounded);
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let (sum, left) = (sum.clone(), left.clone());
                sys.spawn(props(), move || Work {
                    sum: sum.clone(),
                    left: left.clone(),
                })
            })
            .collect();
        let mut once = Some(Coordinator {
            workers: workers.clone(),
            n,
        });
        let coordinator = sys.spawn(props(), move || once.take().expect("no restarts"));
        enq(coordinator.try_send(()));
        sys.wait(&rx);
        assert_eq!(sum.load(Ordering::Relaxed), want, "checksum");
        sys.stop(coordinator.id());
        for w in &workers {
            sys.stop(w.id());
        }
    });
    sys.close();
}

// ---------------------------------------------------------------- tokio

fn tokio_impl(h: &mut Harness, imp: &str, n: u64) {
    let want = expected(n);
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, n, || {
        let (sum, left, rx) = start(n);
        let workers: Vec<_> = (0..WORKERS)
            .map(|_| {
                let (tx, mut inbox) = tokio::sync::mpsc::unbounded_channel::<u64>();
                let work = Work {
                    sum: sum.clone(),
                    left: left.clone(),
                };
                rt.spawn(async move {
                    while let Some(seed) = inbox.recv().await {
                        work.run(seed);
                    }
                });
                tx
            })
            .collect();
        rt.spawn(async move {
            for i in 0..n {
                workers[i as usize % WORKERS].send(i).expect("worker alive");
            }
        });
        wait(&rx);
        assert_eq!(sum.load(Ordering::Relaxed), want, "checksum");
    });
}

// ---------------------------------------------------------------- crossbeam

fn crossbeam_impl(h: &mut Harness, n: u64) {
    let want = expected(n);
    h.measure(BENCH, "crossbeam", n, || {
        let (sum, left, rx) = start(n);
        let (senders, threads): (Vec<Sender<u64>>, Vec<_>) = (0..WORKERS)
            .map(|_| {
                let (tx, inbox) = crossbeam_channel::unbounded::<u64>();
                let work = Work {
                    sum: sum.clone(),
                    left: left.clone(),
                };
                let t = thread::spawn(move || {
                    for seed in inbox {
                        work.run(seed);
                    }
                });
                (tx, t)
            })
            .unzip();
        let coordinator = thread::spawn(move || {
            for i in 0..n {
                senders[i as usize % WORKERS].send(i).expect("worker alive");
            }
        });
        wait(&rx);
        assert_eq!(sum.load(Ordering::Relaxed), want, "checksum");
        coordinator.join().expect("coordinator");
        for t in threads {
            t.join().expect("worker");
        }
    });
}
