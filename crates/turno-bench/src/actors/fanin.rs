//! `fanin`: `--producers` (default 4) OS threads send `1..=n/producers`
//! each into one actor whose mailbox is bounded at [`CAPACITY`] and makes
//! senders wait when full (turno: [`turno::Policy::Suspend`] with
//! `send_blocking`). The actor sums; the run ends when it has all `n` and
//! the sum is checked.
//!
//! Where a peer has no bounded mailbox with a blocking send from a foreign
//! thread, its unbounded send is used and the table says so: actix
//! (`do_send` ignores the mailbox capacity) and ractor (unbounded
//! mailboxes). stakker is single-threaded: n/a. `turno-det` and
//! `turno-local` are n/a too: those schedulers run on the caller's thread,
//! so producers blocked on a full mailbox would wait forever.

use std::thread::{self, JoinHandle};
use turno::System;

use crossbeam_channel::{bounded, Sender};

use super::{n_or, not_applicable, wait, TokioRt, Turno};
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
    let peers: [Impl; 8] = [
        ("actix", actix_impl),
        ("ractor", ractor_impl),
        ("ractor-ct", ractor_impl),
        ("kameo", kameo_impl),
        ("kameo-ct", kameo_impl),
        ("tokio-ct", tokio_impl),
        ("tokio-mt", tokio_impl),
        ("crossbeam", crossbeam_impl),
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
    let mut sys = Turno::new(imp);
    h.measure(BENCH, imp, job.n, || {
        let (tx, rx) = bounded(1);
        let props = turno::Props::new().mailbox(turno::Policy::Suspend(CAPACITY));
        let mut once = Some(Sum::new(job.n, tx));
        let sum = sys.spawn(props, move || once.take().expect("no restarts"));
        let producers = produce(job, &sum, |a, v| {
            assert!(a.send_blocking(v).is_enqueued());
        });
        assert_eq!(sys.wait(&rx), job.sum);
        join(producers);
        if let Turno::Threaded(s) = &sys {
            s.stop(sum.id());
        }
    });
    sys.close();
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
    let sys = actix_rt::System::new();
    h.measure(BENCH, "actix (unbounded)", job.n, || {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let addr = sys.block_on(async {
            Sum::with(job.n, move |total| {
                let _ = tx.send(total);
            })
            .start()
        });
        let producers = produce(job, &addr, |a, v| a.do_send(ax::V(v)));
        // The actor runs while this thread drives the system.
        let total = sys.block_on(rx).expect("actix fanin finished");
        assert_eq!(total, job.sum);
        join(producers);
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
    let rt = TokioRt::new(imp);
    h.measure(BENCH, &format!("{imp} (unbounded)"), job.n, || {
        let (tx, rx) = bounded(1);
        let (a, handle) = rt
            .block_on(ractor::Actor::spawn(
                None,
                rc::Consumer,
                Sum::new(job.n, tx),
            ))
            .expect("spawn");
        let producers = produce(job, &a, |a, v| assert!(a.cast(v).is_ok()));
        assert_eq!(wait(&rx), job.sum);
        join(producers);
        a.stop(None);
        let _ = rt.block_on(handle);
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
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, job.n, || {
        let (tx, rx) = bounded(1);
        let a = {
            let _g = rt.enter();
            Sum::spawn_with_mailbox(Sum::new(job.n, tx), kameo::mailbox::bounded(CAPACITY))
        };
        let producers = produce(job, &a, |a, v| {
            assert!(a.tell(km::V(v)).blocking_send().is_ok());
        });
        assert_eq!(wait(&rx), job.sum);
        join(producers);
        rt.block_on(async {
            let _ = a.stop_gracefully().await;
            a.wait_for_shutdown().await;
        });
    });
}

// ---------------------------------------------------------------- tokio

fn tokio_impl(h: &mut Harness, imp: &str, job: Job) {
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, job.n, || {
        let (tx, rx) = bounded(1);
        let (mtx, mut inbox) = tokio::sync::mpsc::channel::<u64>(CAPACITY);
        let mut sum = Sum::new(job.n, tx);
        rt.spawn(async move {
            while let Some(v) = inbox.recv().await {
                sum.add(v);
            }
        });
        let producers = produce(job, &mtx, |a, v| assert!(a.blocking_send(v).is_ok()));
        drop(mtx);
        assert_eq!(wait(&rx), job.sum);
        join(producers);
    });
}

// ---------------------------------------------------------------- crossbeam

fn crossbeam_impl(h: &mut Harness, _imp: &str, job: Job) {
    h.measure(BENCH, "crossbeam", job.n, || {
        let (tx, rx) = bounded(1);
        let (mtx, inbox) = bounded::<u64>(CAPACITY);
        let mut sum = Sum::new(job.n, tx);
        let consumer = thread::spawn(move || {
            for v in inbox {
                sum.add(v);
            }
        });
        let producers = produce(job, &mtx, |a, v| a.send(v).expect("consumer alive"));
        drop(mtx);
        assert_eq!(wait(&rx), job.sum);
        join(producers);
        consumer.join().expect("consumer");
    });
}
