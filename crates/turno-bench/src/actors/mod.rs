//! The actor benches: turno on its three schedulers against actix, ractor,
//! kameo, stakker and two baselines (tokio tasks with `mpsc`, OS threads
//! with crossbeam-channel), in one binary and one run.
//!
//! | bench | what one run does | `n` counts |
//! |---|---|---|
//! | `pingpong` | 2 actors bounce a counter | round trips |
//! | `ring` | Savina thread ring: a token goes around 1000 actors | hops |
//! | `spawn` | build the system, spawn actors from outside, one message each, all handled, stop each from outside, all stopped, shut down; the whole timed | actors |
//! | `spawn-pipelined` | narrower: spawn into a warm system, one message each, each stops itself on it, all stops confirmed | actors |
//! | `fanout` | one actor sends jobs of about 10 µs of arithmetic to 16 actors (how work spreads over threads) | jobs |
//! | `fanin` | 4 producer threads into one actor (suspend mailbox of 1024), sum checked | messages |
//! | `counting` | Savina counting: a producer actor sends increments, then asks for the count | messages |
//! | `chameneos` | Savina chameneos: 8 chameneos meet through a mall | meetings |
//! | `bndbuffer` | Savina bounded buffer: producers and consumers through a manager holding 64 items | items |
//!
//! The implementations, for every bench where they apply:
//!
//! - `turno`: exactly what a user gets from [`ThreadedSystem::new`] (the
//!   available parallelism, metrics on, no trace, batch 32);
//! - `turno-1t`: the same on one worker thread (`threads(1)`);
//! - `turno-det`: [`DetSystem`] as `DetSystem::new` builds it (metrics on,
//!   no trace), driven by `run_until_idle`;
//! - `turno-local`: [`LocalSystem`] as `LocalSystem::new` builds it (the
//!   single-threaded scheduler: FIFO run queue, real time, metrics on, no
//!   trace), driven by `run_until_idle` on the bench's thread;
//! - `turno-tuned`: a labelled tuned configuration, `metrics(false)` on the
//!   default threads (the figure to compare with `turno`: metrics that
//!   nobody records must cost nothing);
//! - `actix`: actors on one `actix_rt::System` (actix's model: an arbiter is
//!   one thread), `do_send`;
//! - `ractor`, `kameo`: on a tokio multi-thread runtime (default workers);
//!   `cast` and `tell(..).await` (kameo's default bounded mailbox of 64);
//! - `ractor-ct`, `kameo-ct`: the same on a current-thread runtime driven
//!   by one thread of its own, as `tokio-ct` is (often their faster
//!   flavour when the actors only talk to each other);
//! - `stakker`: single-threaded, `call!`, driven by `Stakker::run`;
//! - `tokio-ct`, `tokio-mt`: one task per actor, `mpsc::channel(1024)` as
//!   the mailbox, on a current-thread runtime (driven by one thread of its
//!   own) and on the multi-thread runtime (default workers);
//! - `crossbeam`: one OS thread per actor, `crossbeam_channel::bounded(1024)`.
//!
//! `spawn` and `fanin` measure the way a user writes them and build their
//! runtimes per run, each peer in its best flavour (tokio current-thread
//! inside one `block_on` on the bench's thread); their module docs say
//! how, and what is timed.
//!
//! Every run checks its result (counts, sums, who holds the token) and
//! panics when it is wrong; completion is signalled from inside the actors
//! (a channel), never detected by sleeping. A lost message shows up as a
//! panic after [`TIMEOUT`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use turno::System;

use crossbeam_channel::Receiver;
use turno::{Actor, Addr, DetSystem, LocalSystem, Props, ThreadedSystem};

use crate::harness::Harness;
use crate::Args;

pub mod bndbuffer;
pub mod chameneos;
pub mod counting;
pub mod fanin;
pub mod fanout;
pub mod memory;
pub mod pingpong;
pub mod ring;
pub mod spawn;
pub mod spawn_pipelined;

/// The actor benches, in the order `all` runs them.
pub const BENCHES: &[&str] = &[
    "pingpong",
    "ring",
    "spawn",
    "spawn-pipelined",
    "fanin",
    "fanout",
    "counting",
    "chameneos",
    "bndbuffer",
];

/// How long a run may wait for its completion signal before it is declared
/// lost.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs one actor bench by name (`all`: every one of [`BENCHES`], then the
/// memory measurement). Returns false for an unknown name.
pub fn run(bench: &str, args: &Args, h: &mut Harness) -> bool {
    match bench {
        "pingpong" => pingpong::run(args, h),
        "ring" => ring::run(args, h),
        "spawn" => spawn::run(args, h),
        "spawn-pipelined" => spawn_pipelined::run(args, h),
        "fanin" => fanin::run(args, h),
        "fanout" => fanout::run(args, h),
        "counting" => counting::run(args, h),
        "chameneos" => chameneos::run(args, h),
        "bndbuffer" => bndbuffer::run(args, h),
        "memory" => memory::run(args),
        "all" => {
            for b in BENCHES {
                run(b, args, h);
            }
            memory::run(args);
        }
        _ => return false,
    }
    true
}

/// One implementation of a bench: its name and the function measuring it
/// (given that name, which picks the flavour where there are several, and
/// the bench's size parameter).
pub type Impl = (&'static str, fn(&mut Harness, &str, u64));

/// Runs turno's implementations, then the peers, each if `--only` selects it.
pub fn run_impls(
    args: &Args,
    h: &mut Harness,
    bench: &str,
    size: u64,
    turno: fn(&mut Harness, &str, u64),
    peers: &[Impl],
) {
    for imp in TURNO {
        if args.selected(bench, imp) {
            turno(h, imp, size);
        }
    }
    for &(imp, f) in peers {
        if args.selected(bench, imp) {
            f(h, imp, size);
        }
    }
}

/// Runs turno's implementations and the peers every bench has, whose
/// functions the calling module names `actix_impl`, `ractor_impl`,
/// `kameo_impl`, `stakker_impl`, `tokio_impl` (both flavours) and
/// `crossbeam_impl`.
macro_rules! run_with_peers {
    ($args:expr, $h:expr, $bench:expr, $size:expr) => {
        $crate::actors::run_impls(
            $args,
            $h,
            $bench,
            $size,
            turno_impl,
            &[
                (
                    "actix",
                    actix_impl as fn(&mut $crate::harness::Harness, &str, u64),
                ),
                ("ractor", ractor_impl),
                ("ractor-ct", ractor_impl),
                ("kameo", kameo_impl),
                ("kameo-ct", kameo_impl),
                ("stakker", stakker_impl),
                ("tokio-ct", tokio_impl),
                ("tokio-mt", tokio_impl),
                ("crossbeam", crossbeam_impl),
            ],
        )
    };
}
pub(crate) use run_with_peers;

/// Stops ractor actors and waits for their tasks to end.
pub fn stop_ractor(
    rt: &TokioRt,
    actors: &[ractor::ActorCell],
    handles: impl IntoIterator<Item = tokio::task::JoinHandle<()>>,
) {
    for a in actors {
        a.stop(None);
    }
    rt.block_on(async {
        for h in handles {
            let _ = h.await;
        }
    });
}

/// The turno implementations (see the [module docs](self)).
pub const TURNO: [&str; 5] = [
    "turno",
    "turno-1t",
    "turno-det",
    "turno-local",
    "turno-tuned",
];

/// A turno system of either scheduler, so that one bench body serves all
/// three turno implementations.
pub enum Turno {
    /// `turno` or `turno-1t`.
    Threaded(ThreadedSystem),
    /// `turno-det`.
    Det(Box<DetSystem>),
    /// `turno-local`.
    Local(Box<LocalSystem>),
}

impl Turno {
    /// The system for one of [`TURNO`].
    pub fn new(imp: &str) -> Turno {
        match imp {
            "turno" => Turno::Threaded(ThreadedSystem::new()),
            "turno-1t" => Turno::Threaded(ThreadedSystem::builder().threads(1).build()),
            "turno-tuned" => Turno::Threaded(ThreadedSystem::builder().metrics(false).build()),
            // `DetSystem::new(seed)` but for the step limit, which a bench
            // of millions of turns must lift.
            "turno-det" => Turno::Det(Box::new(
                DetSystem::builder().seed(1).step_limit(u64::MAX).build(),
            )),
            "turno-local" => Turno::Local(Box::new(LocalSystem::new())),
            other => panic!("not a turno implementation: {other}"),
        }
    }

    /// Asks an actor to stop.
    pub fn stop(&mut self, id: turno::ActorId) {
        match self {
            Turno::Threaded(s) => s.stop(id),
            Turno::Det(s) => s.stop(id),
            Turno::Local(s) => s.stop(id),
        }
    }

    /// Spawns a top-level actor.
    pub fn spawn<A: Actor>(
        &mut self,
        props: Props,
        factory: impl FnMut() -> A + Send + 'static,
    ) -> Addr<A::Msg> {
        match self {
            Turno::Threaded(s) => s.spawn(props, factory),
            Turno::Det(s) => s.spawn(props, factory),
            Turno::Local(s) => s.spawn(props, factory),
        }
        .expect("spawn")
    }

    /// Waits for the run's completion signal: blocks on `rx` (threaded), or
    /// runs the deterministic system until idle and then expects the
    /// signal to be there.
    pub fn wait<T>(&mut self, rx: &Receiver<T>) -> T {
        match self {
            Turno::Threaded(_) => wait(rx),
            Turno::Det(s) => {
                s.run_until_idle().expect("run_until_idle");
                rx.try_recv()
                    .expect("the deterministic run went idle without finishing")
            }
            Turno::Local(s) => {
                s.run_until_idle();
                rx.try_recv()
                    .expect("the local run went idle without finishing")
            }
        }
    }

    /// Shuts the system down (threaded: gracefully, within 10 s).
    pub fn close(self) {
        match self {
            Turno::Threaded(s) => drop(s.shutdown(Duration::from_secs(10))),
            Turno::Det(s) => drop(s),
            Turno::Local(s) => drop(s.shutdown(Duration::from_secs(10))),
        }
    }
}

/// Blocks on a completion channel, panicking after [`TIMEOUT`].
pub fn wait<T>(rx: &Receiver<T>) -> T {
    rx.recv_timeout(TIMEOUT)
        .expect("no completion signal: a message was lost or an actor is stuck")
}

/// A tokio multi-thread runtime with the default number of workers (the
/// runtime of the `*-mt` implementations and of `ractor` and `kameo`).
pub fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// The runtime of the `tokio-ct` / `tokio-mt` implementations: a
/// current-thread runtime driven by a thread of its own (so the bench's
/// thread can send into it and wait, as it does with every other
/// implementation), or the multi-thread runtime.
pub struct TokioRt {
    rt: Option<Arc<tokio::runtime::Runtime>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    driver: Option<std::thread::JoinHandle<()>>,
}

impl TokioRt {
    /// The flavour `imp` names: `*-ct` current-thread, else multi-thread.
    pub fn new(imp: &str) -> TokioRt {
        if !imp.ends_with("-ct") {
            return TokioRt {
                rt: Some(Arc::new(tokio_rt())),
                stop: None,
                driver: None,
            };
        }
        let rt = Arc::new(
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime"),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let driving = rt.clone();
        let driver = std::thread::spawn(move || {
            let _ = driving.block_on(stopped);
        });
        TokioRt {
            rt: Some(rt),
            stop: Some(stop),
            driver: Some(driver),
        }
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("running")
    }

    /// Spawns a task on the runtime.
    pub fn spawn<F>(&self, f: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.rt().spawn(f)
    }

    /// Enters the runtime's context (for spawns outside `block_on`).
    pub fn enter(&self) -> tokio::runtime::EnterGuard<'_> {
        self.rt().enter()
    }

    /// Runs a future to completion on the calling thread.
    pub fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt().block_on(f)
    }

    /// Stops the driver (current-thread) and shuts the runtime down.
    pub fn shutdown_timeout(mut self, timeout: Duration) {
        self.close(timeout);
    }

    fn close(&mut self, timeout: Duration) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(d) = self.driver.take() {
            let _ = d.join();
        }
        if let Some(rt) = self.rt.take().and_then(|rt| Arc::try_unwrap(rt).ok()) {
            rt.shutdown_timeout(timeout);
        }
    }
}

impl Drop for TokioRt {
    fn drop(&mut self) {
        self.close(Duration::from_secs(5));
    }
}

/// `--n` or the bench's default.
pub fn n_or(args: &Args, default: u64) -> u64 {
    args.n.unwrap_or(default).max(1)
}

/// Prints a line saying why an implementation does not take part.
pub fn not_applicable(args: &Args, bench: &str, imp: &str, why: &str) {
    if args.selected(bench, imp) {
        eprintln!("  {bench:<34} {imp:<18} n/a: {why}");
    }
}

/// Checks that a turno send was enqueued (every bench's mailboxes are large
/// enough, or suspend, so anything else is a bug).
#[inline]
pub fn enq<M>(v: turno::Verdict<M>) {
    assert!(v.is_enqueued(), "a turno send was not enqueued");
}

/// Counts down from `n`; the last [`Countdown::tick`] signals completion.
pub struct Countdown {
    left: AtomicU64,
    done: Done,
}

enum Done {
    Sync(crossbeam_channel::Sender<()>),
    Async(tokio::sync::mpsc::UnboundedSender<()>),
}

impl Countdown {
    /// A countdown whose end is received on a crossbeam channel.
    pub fn new(n: u64) -> (Arc<Countdown>, Receiver<()>) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let cd = Countdown {
            left: AtomicU64::new(n),
            done: Done::Sync(tx),
        };
        (Arc::new(cd), rx)
    }

    /// A countdown whose end is awaited (for actix, whose system runs on the
    /// driving thread).
    pub fn new_async(n: u64) -> (Arc<Countdown>, tokio::sync::mpsc::UnboundedReceiver<()>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let cd = Countdown {
            left: AtomicU64::new(n),
            done: Done::Async(tx),
        };
        (Arc::new(cd), rx)
    }

    /// One done; the last one signals.
    pub fn tick(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            let _ = match &self.done {
                Done::Sync(tx) => tx.send(()).is_ok(),
                Done::Async(tx) => tx.send(()).is_ok(),
            };
        }
    }
}
