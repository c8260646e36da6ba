//! `counting` (Savina): a producer actor sends `n` increments to a counter
//! actor, then asks it for its count; the reply is checked against `n`.
//!
//! How each producer sends `n` messages is the idiomatic way for its
//! runtime: turno sends in turns of [`CHUNK`] messages, each turn ending
//! with a message to itself, so the counter's suspend mailbox (1024) can
//! mute it between turns (one turn sending all `n` would overshoot the
//! mailbox by `n`); kameo and tokio await each send on a bounded mailbox;
//! actix (`do_send`), ractor (`cast`), stakker (`call!`) and crossbeam
//! (bounded(1024), blocking) send in a plain loop.

use std::cell::Cell;
use std::rc::Rc;

use crossbeam_channel::{bounded, Sender};
use stakker::{actor, call, ret_nop, Stakker, CX};

use super::{enq, n_or, run_with_peers, stop_ractor, wait, TokioRt, Turno};
use crate::harness::Harness;
use crate::Args;

const BENCH: &str = "counting";

/// Default increments per run.
pub const DEFAULT_N: u64 = 1_000_000;

/// Increments per producer turn (turno).
pub const CHUNK: u64 = 1024;

/// Runs every implementation.
pub fn run(args: &Args, h: &mut Harness) {
    let n = n_or(args, DEFAULT_N);
    run_with_peers!(args, h, BENCH, n);
}

// ---------------------------------------------------------------- turno

enum CounterMsg {
    Inc,
    Get(turno::Addr<ProducerMsg>),
}

struct Counter(u64);

impl turno::Actor for Counter {
    type Msg = CounterMsg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, msg: CounterMsg) {
        match msg {
            CounterMsg::Inc => self.0 += 1,
            CounterMsg::Get(to) => {
                enq(ctx.send(&to, ProducerMsg::Count(self.0)));
                self.0 = 0;
            }
        }
    }
}

enum ProducerMsg {
    Start(u64, Sender<u64>),
    Continue,
    Count(u64),
}

struct Producer {
    counter: turno::Addr<CounterMsg>,
    left: u64,
    done: Option<Sender<u64>>,
}

impl turno::Actor for Producer {
    type Msg = ProducerMsg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, msg: ProducerMsg) {
        match msg {
            ProducerMsg::Start(n, done) => {
                self.left = n;
                self.done = Some(done);
                let me = ctx.addr();
                enq(ctx.send(&me, ProducerMsg::Continue));
            }
            ProducerMsg::Continue => {
                let k = self.left.min(CHUNK);
                for _ in 0..k {
                    enq(ctx.send(&self.counter, CounterMsg::Inc));
                }
                self.left -= k;
                let me = ctx.addr();
                if self.left > 0 {
                    enq(ctx.send(&me, ProducerMsg::Continue));
                } else {
                    enq(ctx.send(&self.counter, CounterMsg::Get(me)));
                }
            }
            ProducerMsg::Count(c) => {
                let _ = self.done.take().expect("started").send(c);
            }
        }
    }
}

fn turno_impl(h: &mut Harness, imp: &str, n: u64) {
    let mut sys = Turno::new(imp);
    let counter = sys.spawn(turno::Props::new(), || Counter(0));
    let producer = sys.spawn(turno::Props::new(), move || Producer {
        counter: counter.clone(),
        left: 0,
        done: None,
    });
    h.measure(BENCH, imp, n, || {
        let (tx, rx) = bounded(1);
        enq(producer.try_send(ProducerMsg::Start(n, tx)));
        assert_eq!(sys.wait(&rx), n);
    });
    drop(producer);
    sys.close();
}

// ---------------------------------------------------------------- actix

mod ax {
    use actix::prelude::*;
    use tokio::sync::oneshot;

    pub struct Inc;
    impl Message for Inc {
        type Result = ();
    }
    pub struct Get(pub Addr<Producer>);
    impl Message for Get {
        type Result = ();
    }
    pub struct Count(pub u64);
    impl Message for Count {
        type Result = ();
    }
    pub struct Start(pub u64, pub oneshot::Sender<u64>);
    impl Message for Start {
        type Result = ();
    }

    pub struct Counter(pub u64);
    impl Actor for Counter {
        type Context = Context<Self>;
    }
    impl Handler<Inc> for Counter {
        type Result = ();
        fn handle(&mut self, _: Inc, _: &mut Context<Self>) {
            self.0 += 1;
        }
    }
    impl Handler<Get> for Counter {
        type Result = ();
        fn handle(&mut self, Get(to): Get, _: &mut Context<Self>) {
            to.do_send(Count(self.0));
            self.0 = 0;
        }
    }

    pub struct Producer {
        pub counter: Addr<Counter>,
        pub done: Option<oneshot::Sender<u64>>,
    }
    impl Actor for Producer {
        type Context = Context<Self>;
    }
    impl Handler<Start> for Producer {
        type Result = ();
        fn handle(&mut self, Start(n, done): Start, ctx: &mut Context<Self>) {
            self.done = Some(done);
            for _ in 0..n {
                self.counter.do_send(Inc);
            }
            self.counter.do_send(Get(ctx.address()));
        }
    }
    impl Handler<Count> for Producer {
        type Result = ();
        fn handle(&mut self, Count(c): Count, _: &mut Context<Self>) {
            let _ = self.done.take().expect("started").send(c);
        }
    }
}

fn actix_impl(h: &mut Harness, _imp: &str, n: u64) {
    use actix::Actor as _;
    let sys = actix_rt::System::new();
    let producer = sys.block_on(async {
        ax::Producer {
            counter: ax::Counter(0).start(),
            done: None,
        }
        .start()
    });
    h.measure(BENCH, "actix", n, || {
        sys.block_on(async {
            let (tx, rx) = tokio::sync::oneshot::channel();
            producer.do_send(ax::Start(n, tx));
            assert_eq!(rx.await.expect("actix counting finished"), n);
        })
    });
}

// ---------------------------------------------------------------- ractor

mod rc {
    use crossbeam_channel::Sender;
    use ractor::{Actor, ActorProcessingErr, ActorRef};

    pub enum CounterMsg {
        Inc,
        Get(ActorRef<ProducerMsg>),
    }
    pub enum ProducerMsg {
        Start(u64, Sender<u64>),
        Count(u64),
    }

    pub struct Counter;
    impl Actor for Counter {
        type Msg = CounterMsg;
        type State = u64;
        type Arguments = ();
        async fn pre_start(
            &self,
            _: ActorRef<CounterMsg>,
            _: (),
        ) -> Result<u64, ActorProcessingErr> {
            Ok(0)
        }
        async fn handle(
            &self,
            _: ActorRef<CounterMsg>,
            msg: CounterMsg,
            c: &mut u64,
        ) -> Result<(), ActorProcessingErr> {
            match msg {
                CounterMsg::Inc => *c += 1,
                CounterMsg::Get(to) => {
                    to.cast(ProducerMsg::Count(*c))?;
                    *c = 0;
                }
            }
            Ok(())
        }
    }

    pub struct Producer;
    pub struct State {
        counter: ActorRef<CounterMsg>,
        done: Option<Sender<u64>>,
    }
    impl Actor for Producer {
        type Msg = ProducerMsg;
        type State = State;
        type Arguments = ActorRef<CounterMsg>;
        async fn pre_start(
            &self,
            _: ActorRef<ProducerMsg>,
            counter: ActorRef<CounterMsg>,
        ) -> Result<State, ActorProcessingErr> {
            Ok(State {
                counter,
                done: None,
            })
        }
        async fn handle(
            &self,
            myself: ActorRef<ProducerMsg>,
            msg: ProducerMsg,
            st: &mut State,
        ) -> Result<(), ActorProcessingErr> {
            match msg {
                ProducerMsg::Start(n, done) => {
                    st.done = Some(done);
                    for _ in 0..n {
                        st.counter.cast(CounterMsg::Inc)?;
                    }
                    st.counter.cast(CounterMsg::Get(myself))?;
                }
                ProducerMsg::Count(c) => {
                    let _ = st.done.take().expect("started").send(c);
                }
            }
            Ok(())
        }
    }
}

fn ractor_impl(h: &mut Harness, imp: &str, n: u64) {
    let rt = TokioRt::new(imp);
    let (counter, producer, hs) = rt.block_on(async {
        let (counter, h1) = ractor::Actor::spawn(None, rc::Counter, ())
            .await
            .expect("spawn");
        let (producer, h2) = ractor::Actor::spawn(None, rc::Producer, counter.clone())
            .await
            .expect("spawn");
        (counter, producer, [h1, h2])
    });
    h.measure(BENCH, imp, n, || {
        let (tx, rx) = bounded(1);
        assert!(producer.cast(rc::ProducerMsg::Start(n, tx)).is_ok());
        assert_eq!(wait(&rx), n);
    });
    stop_ractor(&rt, &[producer.get_cell(), counter.get_cell()], hs);
}

// ---------------------------------------------------------------- kameo

mod km {
    use crossbeam_channel::Sender;
    use kameo::actor::ActorRef;
    use kameo::message::{Context, Message};
    use kameo::Actor;

    pub struct Inc;
    pub struct Get;
    pub struct Start(pub u64, pub Sender<u64>);

    #[derive(Actor)]
    pub struct Counter(pub u64);
    impl Message<Inc> for Counter {
        type Reply = ();
        async fn handle(&mut self, _: Inc, _: &mut Context<Self, ()>) {
            self.0 += 1;
        }
    }
    impl Message<Get> for Counter {
        type Reply = u64;
        async fn handle(&mut self, _: Get, _: &mut Context<Self, u64>) -> u64 {
            std::mem::take(&mut self.0)
        }
    }

    #[derive(Actor)]
    pub struct Producer {
        pub counter: ActorRef<Counter>,
    }
    impl Message<Start> for Producer {
        type Reply = ();
        async fn handle(&mut self, Start(n, done): Start, _: &mut Context<Self, ()>) {
            for _ in 0..n {
                assert!(self.counter.tell(Inc).await.is_ok());
            }
            let c = self.counter.ask(Get).await.expect("count");
            let _ = done.send(c);
        }
    }
}

fn kameo_impl(h: &mut Harness, imp: &str, n: u64) {
    use kameo::actor::Spawn;
    let rt = TokioRt::new(imp);
    let (counter, producer) = rt.block_on(async {
        let counter = km::Counter::spawn(km::Counter(0));
        let producer = km::Producer::spawn(km::Producer {
            counter: counter.clone(),
        });
        (counter, producer)
    });
    h.measure(BENCH, imp, n, || {
        let (tx, rx) = bounded(1);
        assert!(producer.tell(km::Start(n, tx)).blocking_send().is_ok());
        assert_eq!(wait(&rx), n);
    });
    rt.block_on(async {
        let _ = producer.stop_gracefully().await;
        let _ = counter.stop_gracefully().await;
        producer.wait_for_shutdown().await;
        counter.wait_for_shutdown().await;
    });
}

// ---------------------------------------------------------------- stakker

struct SCounter(u64);

impl SCounter {
    fn init(_: CX![]) -> Option<Self> {
        Some(SCounter(0))
    }
    fn inc(&mut self, _: CX![]) {
        self.0 += 1;
    }
    fn get(&mut self, _: CX![], to: stakker::Actor<SProducer>) {
        call!([to], count(std::mem::take(&mut self.0)));
    }
}

struct SProducer {
    counter: stakker::ActorOwn<SCounter>,
    out: Rc<Cell<u64>>,
}

impl SProducer {
    fn init(cx: CX![], out: Rc<Cell<u64>>) -> Option<Self> {
        let counter = actor!(cx, SCounter::init(), ret_nop!());
        Some(SProducer { counter, out })
    }
    fn start(&mut self, cx: CX![], n: u64) {
        for _ in 0..n {
            call!([self.counter], inc());
        }
        let me = cx.this().clone();
        call!([self.counter], get(me));
    }
    fn count(&mut self, _: CX![], c: u64) {
        self.out.set(c);
    }
}

fn stakker_impl(h: &mut Harness, _imp: &str, n: u64) {
    let mut s = Stakker::new(std::time::Instant::now());
    let out = Rc::new(Cell::new(0));
    let producer = actor!(s, SProducer::init(out.clone()), ret_nop!());
    s.run(std::time::Instant::now(), false);
    h.measure(BENCH, "stakker", n, || {
        out.set(0);
        call!([producer], start(n));
        s.run(std::time::Instant::now(), false);
        assert_eq!(out.get(), n);
    });
}

// ---------------------------------------------------------------- tokio

/// The counter's messages in the two baselines.
enum Base<R> {
    Inc,
    Get(R),
}

fn tokio_impl(h: &mut Harness, imp: &str, n: u64) {
    use tokio::sync::{mpsc, oneshot};
    let rt = TokioRt::new(imp);
    let (ctx, mut inbox) = mpsc::channel::<Base<oneshot::Sender<u64>>>(1024);
    rt.spawn(async move {
        let mut c = 0u64;
        while let Some(msg) = inbox.recv().await {
            match msg {
                Base::Inc => c += 1,
                Base::Get(to) => {
                    let _ = to.send(std::mem::take(&mut c));
                }
            }
        }
    });
    let (ptx, mut pinbox) = mpsc::channel::<(u64, Sender<u64>)>(1024);
    rt.spawn(async move {
        while let Some((n, done)) = pinbox.recv().await {
            for _ in 0..n {
                ctx.send(Base::Inc).await.expect("counter alive");
            }
            let (tx, rx) = oneshot::channel();
            ctx.send(Base::Get(tx)).await.expect("counter alive");
            let _ = done.send(rx.await.expect("count"));
        }
    });
    h.measure(BENCH, imp, n, || {
        let (tx, rx) = bounded(1);
        assert!(ptx.blocking_send((n, tx)).is_ok());
        assert_eq!(wait(&rx), n);
    });
    drop(ptx);
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
}

// ---------------------------------------------------------------- crossbeam

fn crossbeam_impl(h: &mut Harness, _imp: &str, n: u64) {
    let (ctx, inbox) = bounded::<Base<Sender<u64>>>(1024);
    let counter = std::thread::spawn(move || {
        let mut c = 0u64;
        for msg in inbox {
            match msg {
                Base::Inc => c += 1,
                Base::Get(to) => {
                    let _ = to.send(std::mem::take(&mut c));
                }
            }
        }
    });
    let (ptx, pinbox) = bounded::<(u64, Sender<u64>)>(1024);
    let producer = std::thread::spawn(move || {
        for (n, done) in pinbox {
            for _ in 0..n {
                ctx.send(Base::Inc).expect("counter alive");
            }
            let (tx, rx) = bounded(1);
            ctx.send(Base::Get(tx)).expect("counter alive");
            let _ = done.send(rx.recv().expect("count"));
        }
    });
    h.measure(BENCH, "crossbeam", n, || {
        let (tx, rx) = bounded(1);
        ptx.send((n, tx)).expect("producer alive");
        assert_eq!(wait(&rx), n);
    });
    drop(ptx);
    producer.join().expect("producer");
    counter.join().expect("counter");
}
