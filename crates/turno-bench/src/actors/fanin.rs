//! `fanin`: `--producers` (default 4) OS threads send `1..=n/producers`
//! each into one actor whose mailbox is bounded at [`CAPACITY`] and makes
//! senders wait when full (turno: [`turno::Policy::Suspend`] with
//! `send_blocking`). The actor sums; the run ends when it has all `n` and
//! the sum is checked.
//!
//! Each run builds its system (or runtime) and spawns the consumer first,
//! outside the timing; the timing runs from the producers' spawn to the
//! verified sum; joining the producers, stopping the consumer and the
//! shutdown come after it. The channel peers (crossbeam-channel, kanal,
//! std's `sync_channel`, all bounded at [`CAPACITY`]) consume on an OS
//! thread of their own; `tokio-ct` consumes in a `block_on` on the bench's
//! thread (no thread of its own), `tokio-mt` in a task.
//!
//! Where a peer has no bounded mailbox with a blocking send from a foreign
//! thread, its unbounded send is used and the table says so: actix
//! (`do_send` ignores the mailbox capacity) and ractor (unbounded
//! mailboxes). stakker is single-threaded: n/a. `turno-det` and
//! `turno-local` are n/a too: those schedulers run on the caller's thread,
//! so producers blocked on a full mailbox would wait forever.

use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Sender};

use super::{n_or, not_applicable, tokio_rt, wait, TokioRt, Turno};
use crate::harness::Harness;
use crate::Args;

const BENCH: &str = "fanin";

/// The consumer's mailbox capacity.
pub const CAPACITY: usize = 1024;

/// Default messages per run (all producers together).
pub const DEFAULT_N: u64 = 1_000_000;

/// Runs every implementation.
pub fn run(args: &Args, h: &mut Harness) {
    let p = args.producers.max(1) as u64;
    let per = n_or(args, DEFAULT_N).div_ceil(p);
    let job = Job {
        producers: p,
        per,
        n: per * p,
        sum: p * per * (per + 1) / 2,
    };
    for imp in ["turno", "turno-1t", "turno-tuned"] {
        if args.selected(BENCH, imp) {
            turno_impl(h, imp, job);
        }
    }
    for imp in ["turno-det", "turno-local"] {
        not_applicable(
            args,
            BENCH,
            imp,
            "one thread: producers blocked on a full mailbox would wait forever",
        );
    }
    type Impl = (&'static str, fn(&mut Harness, &str, Job));
    let peers: [Impl; 10] = [
        ("actix", actix_impl),
        ("ractor", ractor_impl),
        ("ractor-ct", ractor_impl),
        ("kameo", kameo_impl),
        ("kameo-ct", kameo_impl),
        ("tokio-ct", tokio_impl),
        ("tokio-mt", tokio_impl),
        ("crossbeam", crossbeam_impl),
        ("kanal", kanal_impl),
        ("std", std_impl),
    ];
    for (imp, f) in peers {
        if args.selected(BENCH, imp) {
            f(h, imp, job);
        }
    }
    not_applicable(
        args,
        BENCH,
        "stakker",
        "single-threaded: no send into an actor from another thread",
    );
}

/// One run's parameters.
#[derive(Clone, Copy)]
struct Job {
    producers: u64,
    per: u64,
    n: u64,
    sum: u64,
}

/// Starts the producers: each sends `1..=per` through `send`.
fn produce<S: Clone + Send + 'static>(job: Job, tx: &S, send: fn(&S, u64)) -> Vec<JoinHandle<()>> {
    (0..job.producers)
        .map(|_| {
            let tx = tx.clone();
            let per = job.per;
            thread::spawn(move || {
                for i in 1..=per {
                    send(&tx, i);
                }
            })
        })
        .collect()
}

fn join(handles: Vec<JoinHandle<()>>) {
    for t in handles {
        t.join().expect("producer");
    }
}

/// The consumer's state, shared by the actor implementations.
pub struct Sum {
    n: u64,
    count: u64,
    total: u64,
    done: Option<Box<dyn FnOnce(u64) + Send>>,
}

impl Sum {
    fn new(n: u64, done: Sender<u64>) -> Sum {
        Sum::with(n, move |total| {
            let _ = done.send(total);
        })
    }
    fn with(n: u64, done: impl FnOnce(u64) + Send + 'static) -> Sum {
        Sum {
            n,
            count: 0,
            total: 0,
            done: Some(Box::new(done)),
        }
    }
    #[inline]
    fn add(&mut self, v: u64) {
        self.total += v;
        self.count += 1;
        if self.count == self.n {
            (self.done.take().expect("once"))(self.total);
        }
    }
}

// ---------------------------------------------------------------- turno

impl turno::Actor for Sum {
    type Msg = u64;
    fn handle(&mut self, _: &mut turno::Context<'_, Self>, v: u64) {
        self.add(v);
    }
}

fn turno_impl(h: &mut Harness, imp: &str, job: Job) {
    h.measure_span(BENCH, imp, job.n, || {
        let mut sys = Turno::new(imp);
        let (tx, rx) = bounded(1);
        let props = turno::Props::new().mailbox(turno::Policy::Suspend(CAPACITY));
        let mut once = Some(Sum::new(job.n, tx));
        let sum = sys.spawn(props, move || once.take().expect("no restarts"));
        let start = Instant::now();
        let producers = produce(job, &sum, |a, v| {
            assert!(a.send_blocking(v).is_enqueued());
        });
        assert_eq!(sys.wait(&rx), job.sum);
        let span = start.elapsed();
        join(producers);
        sys.stop(sum.id());
        sys.close();
        span
    });
}

// ---------------------------------------------------------------- actix

mod ax {
    use actix::prelude::*;

    pub struct V(pub u64);
    impl Message for V {
        type Result = ();
    }
    impl Actor for super::Sum {
        type Context = Context<Self>;
    }
    impl Handler<V> for super::Sum {
        type Result = ();
        fn handle(&mut self, V(v): V, _: &mut Context<Self>) {
            self.add(v);
        }
    }
}

fn actix_impl(h: &mut Harness, _imp: &str, job: Job) {
    use actix::Actor as _;
    h.measure_span(BENCH, "actix (unbounded)", job.n, || {
        let sys = actix_rt::System::new();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let addr = sys.block_on(async {
            Sum::with(job.n, move |total| {
                let _ = tx.send(total);
            })
            .start()
        });
        let start = Instant::now();
        let producers = produce(job, &addr, |a, v| a.do_send(ax::V(v)));
        // The actor runs while this thread drives the system.
        let total = sys.block_on(rx).expect("actix fanin finished");
        assert_eq!(total, job.sum);
        let span = start.elapsed();
        join(producers);
        drop(addr);
        drop(sys);
        span
    });
}

// ---------------------------------------------------------------- ractor

mod rc {
    use ractor::{Actor, ActorProcessingErr, ActorRef};

    pub struct Consumer;
    impl Actor for Consumer {
        type Msg = u64;
        type State = super::Sum;
        type Arguments = super::Sum;
        async fn pre_start(
            &self,
            _: ActorRef<u64>,
            s: super::Sum,
        ) -> Result<super::Sum, ActorProcessingErr> {
            Ok(s)
        }
        async fn handle(
            &self,
            _: ActorRef<u64>,
            v: u64,
            s: &mut super::Sum,
        ) -> Result<(), ActorProcessingErr> {
            s.add(v);
            Ok(())
        }
    }
}

fn ractor_impl(h: &mut Harness, imp: &str, job: Job) {
    h.measure_span(BENCH, &format!("{imp} (unbounded)"), job.n, || {
        let rt = TokioRt::new(imp);
        let (tx, rx) = bounded(1);
        let (a, handle) = rt
            .block_on(ractor::Actor::spawn(
                None,
                rc::Consumer,
                Sum::new(job.n, tx),
            ))
            .expect("spawn");
        let start = Instant::now();
        let producers = produce(job, &a, |a, v| assert!(a.cast(v).is_ok()));
        assert_eq!(wait(&rx), job.sum);
        let span = start.elapsed();
        join(producers);
        a.stop(None);
        let _ = rt.block_on(handle);
        rt.shutdown_timeout(Duration::from_secs(5));
        span
    });
}

// ---------------------------------------------------------------- kameo

mod km {
    use kameo::message::{Context, Message};

    pub struct V(pub u64);
    impl kameo::Actor for super::Sum {
        type Args = Self;
        type Error = std::convert::Infallible;
        async fn on_start(me: Self, _: kameo::actor::ActorRef<Self>) -> Result<Self, Self::Error> {
            Ok(me)
        }
    }
    impl Message<V> for super::Sum {
        type Reply = ();
        async fn handle(&mut self, V(v): V, _: &mut Context<Self, ()>) {
            self.add(v);
        }
    }
}

fn kameo_impl(h: &mut Harness, imp: &str, job: Job) {
    use kameo::actor::Spawn;
    h.measure_span(BENCH, imp, job.n, || {
        let rt = TokioRt::new(imp);
        let (tx, rx) = bounded(1);
        let a = {
            let _g = rt.enter();
            Sum::spawn_with_mailbox(Sum::new(job.n, tx), kameo::mailbox::bounded(CAPACITY))
        };
        let start = Instant::now();
        let producers = produce(job, &a, |a, v| {
            assert!(a.tell(km::V(v)).blocking_send().is_ok());
        });
        assert_eq!(wait(&rx), job.sum);
        let span = start.elapsed();
        join(producers);
        rt.block_on(async {
            let _ = a.stop_gracefully().await;
            a.wait_for_shutdown().await;
        });
        rt.shutdown_timeout(Duration::from_secs(5));
        span
    });
}

// ---------------------------------------------------------------- tokio

fn tokio_impl(h: &mut Harness, imp: &str, job: Job) {
    h.measure_span(BENCH, imp, job.n, || {
        let rt = if imp.ends_with("-ct") {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime")
        } else {
            tokio_rt()
        };
        let (mtx, mut inbox) = tokio::sync::mpsc::channel::<u64>(CAPACITY);
        let start = Instant::now();
        let producers = produce(job, &mtx, |a, v| assert!(a.blocking_send(v).is_ok()));
        drop(mtx);
        let consume = async move {
            let mut total = 0;
            while let Some(v) = inbox.recv().await {
                total += v;
            }
            total
        };
        // Current-thread: the consumer runs on this thread, in `block_on`.
        let total = if imp.ends_with("-ct") {
            rt.block_on(consume)
        } else {
            rt.block_on(rt.spawn(consume)).expect("consumer task")
        };
        assert_eq!(total, job.sum);
        let span = start.elapsed();
        join(producers);
        drop(rt);
        span
    });
}

// ---------------------------------------------------------------- crossbeam

/// A channel consumer's loop: receives until every sender is gone and
/// returns the sum.
type Consume = Box<dyn FnOnce() -> u64 + Send>;

/// A channel peer: `channel` makes a bounded sender and the consumer's
/// loop (run on an OS thread of its own).
fn channel_impl<S: Clone + Send + 'static>(
    h: &mut Harness,
    label: &str,
    job: Job,
    channel: fn() -> (S, Consume),
    send: fn(&S, u64),
) {
    h.measure_span(BENCH, label, job.n, || {
        let (tx, consume) = channel();
        let consumer = thread::spawn(consume);
        let start = Instant::now();
        let producers = produce(job, &tx, send);
        drop(tx);
        assert_eq!(consumer.join().expect("consumer"), job.sum);
        let span = start.elapsed();
        join(producers);
        span
    });
}

fn crossbeam_impl(h: &mut Harness, _imp: &str, job: Job) {
    channel_impl(
        h,
        "crossbeam",
        job,
        || {
            let (tx, rx) = bounded::<u64>(CAPACITY);
            (tx, Box::new(move || rx.iter().sum()))
        },
        |tx, v| tx.send(v).expect("consumer alive"),
    );
}

fn kanal_impl(h: &mut Harness, _imp: &str, job: Job) {
    channel_impl(
        h,
        "kanal",
        job,
        || {
            let (tx, rx) = kanal::bounded::<u64>(CAPACITY);
            (tx, Box::new(move || rx.into_iter().sum()))
        },
        |tx, v| tx.send(v).expect("consumer alive"),
    );
}

fn std_impl(h: &mut Harness, _imp: &str, job: Job) {
    channel_impl(
        h,
        "std sync_channel",
        job,
        || {
            let (tx, rx) = std::sync::mpsc::sync_channel::<u64>(CAPACITY);
            (tx, Box::new(move || rx.iter().sum()))
        },
        |tx, v| tx.send(v).expect("consumer alive"),
    );
}
