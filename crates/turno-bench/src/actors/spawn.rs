//! `spawn`, the way a user writes it, the whole timed: build the system
//! (or runtime), spawn `n` actors from outside it with default props and
//! send each one message, wait until every message is handled, stop each
//! actor from outside, wait until every stop is confirmed, shut the system
//! down. Every actor is alive at once between its spawn and the stops.
//!
//! - turno: `Props::new()`, `try_send`, `System::stop(id)`; handled and
//!   stopped counted by [`Countdown`]s ticked in `handle` and `stopped`;
//!   `ThreadedSystem` waits on their channels, `LocalSystem` and
//!   `DetSystem` run until idle on the bench's thread.
//! - tokio: one task and one `mpsc::channel(16)` per actor, everything in
//!   one `block_on` on the bench's thread (current-thread: the tasks run on
//!   that thread too); stopping an actor is dropping its sender, stopped is
//!   its `JoinHandle` awaited.
//! - actix (one `System` per run; an actor stops when its last address is
//!   dropped), ractor (`stop`, join handles), kameo (`stop_gracefully`,
//!   `wait_for_shutdown`), stakker (dropping its `ActorOwn`): the same
//!   steps, each in its runtime's `block_on` on the bench's thread.
//! - crossbeam, one OS thread per actor, cannot keep 50,000 threads alive:
//!   it keeps at most 512 (each stops on its message; labelled).
//!
//! [`super::spawn_pipelined`] keeps the narrower measurement this bench
//! used to be.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use crossbeam_channel::bounded;
use stakker::{actor, call, ret_some_do, Stakker, CX};

use super::{enq, n_or, run_with_peers, Countdown, Turno};
use crate::harness::Harness;
use crate::Args;

const BENCH: &str = "spawn";

/// Default actors per run.
pub const DEFAULT_N: u64 = 50_000;

/// Runs every implementation.
pub fn run(args: &Args, h: &mut Harness) {
    let n = n_or(args, DEFAULT_N);
    run_with_peers!(args, h, BENCH, n);
}

/// A runtime of the flavour `imp` names (`*-ct`: current-thread, else
/// multi-thread with the default workers), as `#[tokio::main]` builds it.
fn runtime(imp: &str) -> tokio::runtime::Runtime {
    if imp.ends_with("-ct") {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
    .enable_all()
    .build()
    .expect("tokio runtime")
}

// ---------------------------------------------------------------- turno

struct Once {
    handled: Arc<Countdown>,
    stopped: Arc<Countdown>,
}

impl turno::Actor for Once {
    type Msg = ();
    fn handle(&mut self, _: &mut turno::Context<'_, Self>, (): ()) {
        self.handled.tick();
    }
    fn stopped(&mut self, _: &mut turno::Context<'_, Self>) {
        self.stopped.tick();
    }
}

fn turno_impl(h: &mut Harness, imp: &str, n: u64) {
    h.measure(BENCH, imp, n, || {
        let mut sys = Turno::new(imp);
        let (handled, handled_rx) = Countdown::new(n);
        let (stopped, stopped_rx) = Countdown::new(n);
        let mut addrs = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let (handled, stopped) = (handled.clone(), stopped.clone());
            let a = sys.spawn(turno::Props::new(), move || Once {
                handled: handled.clone(),
                stopped: stopped.clone(),
            });
            enq(a.try_send(()));
            addrs.push(a);
        }
        sys.wait(&handled_rx);
        for a in &addrs {
            sys.stop(a.id());
        }
        sys.wait(&stopped_rx);
        drop(addrs);
        sys.close();
    });
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
    pub struct Once {
        pub handled: Arc<Countdown>,
        pub stopped: Arc<Countdown>,
    }
    impl Actor for Once {
        type Context = Context<Self>;
        fn stopped(&mut self, _: &mut Context<Self>) {
            self.stopped.tick();
        }
    }
    impl Handler<Go> for Once {
        type Result = ();
        fn handle(&mut self, _: Go, _: &mut Context<Self>) {
            self.handled.tick();
        }
    }
}

fn actix_impl(h: &mut Harness, _imp: &str, n: u64) {
    use actix::Actor as _;
    h.measure(BENCH, "actix", n, || {
        let sys = actix_rt::System::new();
        sys.block_on(async {
            let (handled, mut handled_rx) = Countdown::new_async(n);
            let (stopped, mut stopped_rx) = Countdown::new_async(n);
            let addrs: Vec<_> = (0..n)
                .map(|_| {
                    let a = ax::Once {
                        handled: handled.clone(),
                        stopped: stopped.clone(),
                    }
                    .start();
                    a.do_send(ax::Go);
                    a
                })
                .collect();
            handled_rx.recv().await.expect("all handled");
            drop(addrs);
            stopped_rx.recv().await.expect("all stopped");
        });
        drop(sys);
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
            handled: Arc<Countdown>,
        ) -> Result<Arc<Countdown>, ActorProcessingErr> {
            Ok(handled)
        }
        async fn handle(
            &self,
            _: ActorRef<()>,
            (): (),
            handled: &mut Arc<Countdown>,
        ) -> Result<(), ActorProcessingErr> {
            handled.tick();
            Ok(())
        }
    }
}

fn ractor_impl(h: &mut Harness, imp: &str, n: u64) {
    h.measure(BENCH, imp, n, || {
        let rt = runtime(imp);
        rt.block_on(async {
            let (handled, mut handled_rx) = Countdown::new_async(n);
            let mut actors = Vec::with_capacity(n as usize);
            let mut joins = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let (a, join) = ractor::Actor::spawn(None, rc::Once, handled.clone())
                    .await
                    .expect("spawn");
                assert!(a.cast(()).is_ok());
                actors.push(a);
                joins.push(join);
            }
            handled_rx.recv().await.expect("all handled");
            for a in &actors {
                a.stop(None);
            }
            for j in joins {
                j.await.expect("ractor actor");
            }
        });
        drop(rt);
    });
}

// ---------------------------------------------------------------- kameo

mod km {
    use std::convert::Infallible;
    use std::sync::Arc;

    use kameo::actor::ActorRef;
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
    }
    impl Message<Go> for Once {
        type Reply = ();
        async fn handle(&mut self, _: Go, _: &mut Context<Self, ()>) {
            self.0.tick();
        }
    }
}

fn kameo_impl(h: &mut Harness, imp: &str, n: u64) {
    use kameo::actor::Spawn;
    h.measure(BENCH, imp, n, || {
        let rt = runtime(imp);
        rt.block_on(async {
            let (handled, mut handled_rx) = Countdown::new_async(n);
            let mut actors = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let a = km::Once::spawn(km::Once(handled.clone()));
                assert!(a.tell(km::Go).await.is_ok());
                actors.push(a);
            }
            handled_rx.recv().await.expect("all handled");
            for a in &actors {
                let _ = a.stop_gracefully().await;
            }
            for a in &actors {
                a.wait_for_shutdown().await;
            }
        });
        drop(rt);
    });
}

// ---------------------------------------------------------------- stakker

struct SOnce(Rc<Cell<u64>>);

impl SOnce {
    fn init(_: CX![], handled: Rc<Cell<u64>>) -> Option<Self> {
        Some(SOnce(handled))
    }
    fn go(&mut self, _: CX![]) {
        self.0.set(self.0.get() + 1);
    }
}

fn stakker_impl(h: &mut Harness, _imp: &str, n: u64) {
    h.measure(BENCH, "stakker", n, || {
        let mut s = Stakker::new(std::time::Instant::now());
        let handled = Rc::new(Cell::new(0u64));
        let stopped = Rc::new(Cell::new(0u64));
        let actors: Vec<_> = (0..n)
            .map(|_| {
                let c = stopped.clone();
                let a = actor!(
                    s,
                    SOnce::init(handled.clone()),
                    ret_some_do!(move |_cause| c.set(c.get() + 1))
                );
                call!([a], go());
                a
            })
            .collect();
        s.run(std::time::Instant::now(), false);
        assert_eq!(handled.get(), n);
        drop(actors);
        s.run(std::time::Instant::now(), false);
        assert_eq!(stopped.get(), n);
    });
}

// ---------------------------------------------------------------- tokio

fn tokio_impl(h: &mut Harness, imp: &str, n: u64) {
    use tokio::sync::mpsc;
    h.measure(BENCH, imp, n, || {
        let rt = runtime(imp);
        rt.block_on(async {
            let (handled, mut handled_rx) = Countdown::new_async(n);
            let mut senders = Vec::with_capacity(n as usize);
            let mut tasks = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let (tx, mut inbox) = mpsc::channel::<()>(16);
                let handled = handled.clone();
                tasks.push(tokio::spawn(async move {
                    while inbox.recv().await.is_some() {
                        handled.tick();
                    }
                }));
                assert!(tx.send(()).await.is_ok());
                senders.push(tx);
            }
            handled_rx.recv().await.expect("all handled");
            // Stopping an actor: its mailbox closes, its loop ends.
            drop(senders);
            for t in tasks {
                t.await.expect("actor task");
            }
        });
        drop(rt);
    });
}

// ---------------------------------------------------------------- crossbeam

fn crossbeam_impl(h: &mut Harness, _imp: &str, n: u64) {
    // At most this many threads alive at once (the OS limits threads).
    const OUTSTANDING: usize = 512;
    h.measure(BENCH, "crossbeam (512 threads alive)", n, || {
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
