//! `spawn-pipelined`, a narrower variant of [`super::spawn`], labelled as
//! such: one system (or runtime) built before the timing and reused by
//! every run; each actor stops itself on its one message, so actors die
//! while later ones are still being spawned (few are alive at once); the
//! run ends when every stop is confirmed (the actor's stop hook, or a
//! joined thread for the thread-per-actor baseline, which keeps at most 512
//! threads alive), counted by a [`Countdown`]. `tokio-ct` spawns from the
//! bench's thread into a current-thread runtime driven by a thread of its
//! own. It leaves out what `spawn` times: start-up and teardown, the
//! stop sent from outside, and every actor alive at once.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use crossbeam_channel::bounded;
use stakker::{actor, call, ret_some_do, Stakker, CX};

use super::{enq, n_or, run_with_peers, wait, Countdown, TokioRt, Turno};
use crate::harness::Harness;
use crate::Args;

const BENCH: &str = "spawn-pipelined";

/// Default actors per run.
pub const DEFAULT_N: u64 = 50_000;

/// Runs every implementation.
pub fn run(args: &Args, h: &mut Harness) {
    let n = n_or(args, DEFAULT_N);
    run_with_peers!(args, h, BENCH, n);
}

// ---------------------------------------------------------------- turno

struct Once(Arc<Countdown>);

impl turno::Actor for Once {
    type Msg = ();
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, (): ()) {
        ctx.stop();
    }
    fn stopped(&mut self, _: &mut turno::Context<'_, Self>) {
        self.0.tick();
    }
}

fn turno_impl(h: &mut Harness, imp: &str, n: u64) {
    let mut sys = Turno::new(imp);
    h.measure(BENCH, imp, n, || {
        let (cd, rx) = Countdown::new(n);
        for _ in 0..n {
            let cd = cd.clone();
            let a = sys.spawn(turno::Props::new(), move || Once(cd.clone()));
            enq(a.try_send(()));
        }
        sys.wait(&rx);
    });
    sys.close();
}

// ---------------------------------------------------------------- actix

mod ax {
    use std::sync::Arc;

    use actix::prelude::*;

    use super::Countdown;

    pub struct Go;
    impl Message for Go {
        type Result = ();
    }
    pub struct Once(pub Arc<Countdown>);
    impl Actor for Once {
        type Context = Context<Self>;
        fn stopped(&mut self, _: &mut Context<Self>) {
            self.0.tick();
        }
    }
    impl Handler<Go> for Once {
        type Result = ();
        fn handle(&mut self, _: Go, ctx: &mut Context<Self>) {
            ctx.stop();
        }
    }
}

fn actix_impl(h: &mut Harness, _imp: &str, n: u64) {
    use actix::Actor as _;
    let sys = actix_rt::System::new();
    h.measure(BENCH, "actix", n, || {
        let (cd, mut rx) = Countdown::new_async(n);
        sys.block_on(async {
            for _ in 0..n {
                ax::Once(cd.clone()).start().do_send(ax::Go);
            }
            rx.recv().await.expect("all stopped");
        })
    });
}

// ---------------------------------------------------------------- ractor

mod rc {
    use std::sync::Arc;

    use ractor::{Actor, ActorProcessingErr, ActorRef};

    use super::Countdown;

    pub struct Once;
    impl Actor for Once {
        type Msg = ();
        type State = Arc<Countdown>;
        type Arguments = Arc<Countdown>;
        async fn pre_start(
            &self,
            _: ActorRef<()>,
            cd: Arc<Countdown>,
        ) -> Result<Arc<Countdown>, ActorProcessingErr> {
            Ok(cd)
        }
        async fn handle(
            &self,
            myself: ActorRef<()>,
            (): (),
            _: &mut Arc<Countdown>,
        ) -> Result<(), ActorProcessingErr> {
            myself.stop(None);
            Ok(())
        }
        async fn post_stop(
            &self,
            _: ActorRef<()>,
            cd: &mut Arc<Countdown>,
        ) -> Result<(), ActorProcessingErr> {
            cd.tick();
            Ok(())
        }
    }
}

fn ractor_impl(h: &mut Harness, imp: &str, n: u64) {
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, n, || {
        let (cd, rx) = Countdown::new(n);
        rt.block_on(async {
            for _ in 0..n {
                let (a, _) = ractor::Actor::spawn(None, rc::Once, cd.clone())
                    .await
                    .expect("spawn");
                assert!(a.cast(()).is_ok());
            }
        });
        wait(&rx);
    });
}

// ---------------------------------------------------------------- kameo

mod km {
    use std::convert::Infallible;
    use std::sync::Arc;

    use kameo::actor::{ActorRef, WeakActorRef};
    use kameo::error::ActorStopReason;
    use kameo::message::{Context, Message};
    use kameo::Actor;

    use super::Countdown;

    pub struct Go;
    pub struct Once(pub Arc<Countdown>);
    impl Actor for Once {
        type Args = Self;
        type Error = Infallible;
        async fn on_start(me: Self, _: ActorRef<Self>) -> Result<Self, Infallible> {
            Ok(me)
        }
        async fn on_stop(
            &mut self,
            _: WeakActorRef<Self>,
            _: ActorStopReason,
        ) -> Result<(), Infallible> {
            self.0.tick();
            Ok(())
        }
    }
    impl Message<Go> for Once {
        type Reply = ();
        async fn handle(&mut self, _: Go, ctx: &mut Context<Self, ()>) {
            ctx.stop();
        }
    }
}

fn kameo_impl(h: &mut Harness, imp: &str, n: u64) {
    use kameo::actor::Spawn;
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, n, || {
        let (cd, rx) = Countdown::new(n);
        rt.block_on(async {
            for _ in 0..n {
                let a = km::Once::spawn(km::Once(cd.clone()));
                assert!(a.tell(km::Go).await.is_ok());
            }
        });
        wait(&rx);
    });
}

// ---------------------------------------------------------------- stakker

struct SOnce;

impl SOnce {
    fn init(_: CX![]) -> Option<Self> {
        Some(SOnce)
    }
    fn go(&mut self, cx: CX![]) {
        cx.stop();
    }
}

fn stakker_impl(h: &mut Harness, _imp: &str, n: u64) {
    let mut s = Stakker::new(std::time::Instant::now());
    let stopped = Rc::new(Cell::new(0u64));
    h.measure(BENCH, "stakker", n, || {
        stopped.set(0);
        let actors: Vec<_> = (0..n)
            .map(|_| {
                let c = stopped.clone();
                let a = actor!(
                    s,
                    SOnce::init(),
                    ret_some_do!(move |_cause| c.set(c.get() + 1))
                );
                call!([a], go());
                a
            })
            .collect();
        s.run(std::time::Instant::now(), false);
        assert_eq!(stopped.get(), n);
        drop(actors);
    });
}

// ---------------------------------------------------------------- tokio

fn tokio_impl(h: &mut Harness, imp: &str, n: u64) {
    use tokio::sync::mpsc;
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, n, || {
        let (cd, rx) = Countdown::new(n);
        rt.block_on(async {
            for _ in 0..n {
                let (tx, mut inbox) = mpsc::channel::<()>(1024);
                let cd = cd.clone();
                tokio::spawn(async move {
                    inbox.recv().await.expect("one message");
                    cd.tick();
                });
                assert!(tx.send(()).await.is_ok());
            }
        });
        wait(&rx);
    });
}

// ---------------------------------------------------------------- crossbeam

fn crossbeam_impl(h: &mut Harness, _imp: &str, n: u64) {
    // At most this many threads alive at once (the OS limits threads).
    const OUTSTANDING: usize = 512;
    h.measure(BENCH, "crossbeam", n, || {
        let mut threads = std::collections::VecDeque::with_capacity(OUTSTANDING);
        let mut stopped = 0;
        for _ in 0..n {
            let (tx, inbox) = bounded::<()>(1024);
            threads.push_back(std::thread::spawn(move || {
                inbox.recv().expect("one message")
            }));
            tx.send(()).expect("thread alive");
            if threads.len() == OUTSTANDING {
                threads
                    .pop_front()
                    .expect("a thread")
                    .join()
                    .expect("actor thread");
                stopped += 1;
            }
        }
        for t in threads {
            t.join().expect("actor thread");
            stopped += 1;
        }
        assert_eq!(stopped, n);
    });
}
