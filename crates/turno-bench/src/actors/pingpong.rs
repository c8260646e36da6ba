//! `pingpong`: two actors bounce a counter; `--n` counts **messages** (a
//! round trip is two: one each way), and so does the reported rate. The
//! actors are spawned once per implementation; a run sends `Start(n / 2)`
//! to ping, which answers on a channel after that many replies; the count
//! is checked.

use std::cell::Cell;
use std::rc::Rc;

use crossbeam_channel::{bounded, Sender};
use stakker::{actor, call, ret_nop, Stakker, CX};

use super::{enq, n_or, run_with_peers, stop_ractor, wait, TokioRt, Turno};
use crate::harness::Harness;
use crate::Args;

const BENCH: &str = "pingpong";

/// Default messages per run (half as many round trips).
pub const DEFAULT_N: u64 = 400_000;

/// Runs every implementation. Each is given the round trips, and reports
/// twice as many messages.
pub fn run(args: &Args, h: &mut Harness) {
    let trips = n_or(args, DEFAULT_N).div_ceil(2);
    run_with_peers!(args, h, BENCH, trips);
}

// ---------------------------------------------------------------- turno

enum PingMsg {
    Start(u64, Sender<u64>),
    Ball(u64),
}

enum PongMsg {
    Init(turno::Addr<PingMsg>),
    Ball(u64),
}

struct Ping {
    pong: turno::Addr<PongMsg>,
    target: u64,
    done: Option<Sender<u64>>,
}

impl turno::Actor for Ping {
    type Msg = PingMsg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, msg: PingMsg) {
        match msg {
            PingMsg::Start(n, done) => {
                self.target = n;
                self.done = Some(done);
                enq(ctx.send(&self.pong, PongMsg::Ball(1)));
            }
            PingMsg::Ball(i) if i == self.target => {
                let _ = self.done.take().expect("started").send(i);
            }
            PingMsg::Ball(i) => {
                enq(ctx.send(&self.pong, PongMsg::Ball(i + 1)));
            }
        }
    }
}

struct Pong {
    ping: Option<turno::Addr<PingMsg>>,
}

impl turno::Actor for Pong {
    type Msg = PongMsg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, msg: PongMsg) {
        match msg {
            PongMsg::Init(ping) => self.ping = Some(ping),
            PongMsg::Ball(i) => {
                let ping = self.ping.as_ref().expect("initialised");
                enq(ctx.send(ping, PingMsg::Ball(i)));
            }
        }
    }
}

fn turno_impl(h: &mut Harness, imp: &str, n: u64) {
    let mut sys = Turno::new(imp);
    let pong = sys.spawn(turno::Props::new(), || Pong { ping: None });
    let pong2 = pong.clone();
    let ping = sys.spawn(turno::Props::new(), move || Ping {
        pong: pong2.clone(),
        target: 0,
        done: None,
    });
    assert!(pong.try_send(PongMsg::Init(ping.clone())).is_enqueued());
    h.measure(BENCH, imp, 2 * n, || {
        let (tx, rx) = bounded(1);
        assert!(ping.try_send(PingMsg::Start(n, tx)).is_enqueued());
        assert_eq!(sys.wait(&rx), n);
    });
    drop((ping, pong));
    sys.close();
}

// ---------------------------------------------------------------- actix

mod ax {
    use actix::prelude::*;
    use tokio::sync::oneshot;

    pub struct Start(pub u64, pub oneshot::Sender<u64>);
    impl Message for Start {
        type Result = ();
    }
    pub struct Ball(pub u64);
    impl Message for Ball {
        type Result = ();
    }

    pub struct Ping {
        pub pong: Addr<Pong>,
        pub target: u64,
        pub done: Option<oneshot::Sender<u64>>,
    }
    impl Actor for Ping {
        type Context = Context<Self>;
    }
    impl Handler<Start> for Ping {
        type Result = ();
        fn handle(&mut self, Start(n, done): Start, _: &mut Context<Self>) {
            self.target = n;
            self.done = Some(done);
            self.pong.do_send(Ball(1));
        }
    }
    impl Handler<Ball> for Ping {
        type Result = ();
        fn handle(&mut self, Ball(i): Ball, _: &mut Context<Self>) {
            if i == self.target {
                let _ = self.done.take().expect("started").send(i);
            } else {
                self.pong.do_send(Ball(i + 1));
            }
        }
    }

    pub struct Pong {
        pub ping: Addr<Ping>,
    }
    impl Actor for Pong {
        type Context = Context<Self>;
    }
    impl Handler<Ball> for Pong {
        type Result = ();
        fn handle(&mut self, msg: Ball, _: &mut Context<Self>) {
            self.ping.do_send(msg);
        }
    }
}

fn actix_impl(h: &mut Harness, _imp: &str, n: u64) {
    use actix::{Actor as _, AsyncContext as _};
    let sys = actix_rt::System::new();
    let ping = sys.block_on(async {
        ax::Ping::create(|ctx| {
            let pong = ax::Pong {
                ping: ctx.address(),
            }
            .start();
            ax::Ping {
                pong,
                target: 0,
                done: None,
            }
        })
    });
    h.measure(BENCH, "actix", 2 * n, || {
        sys.block_on(async {
            let (tx, rx) = tokio::sync::oneshot::channel();
            ping.do_send(ax::Start(n, tx));
            assert_eq!(rx.await.expect("actix pingpong finished"), n);
        })
    });
}

// ---------------------------------------------------------------- ractor

mod rc {
    use crossbeam_channel::Sender;
    use ractor::{Actor, ActorProcessingErr, ActorRef};

    pub enum PingMsg {
        Start(u64, Sender<u64>),
        Ball(u64),
    }
    pub enum PongMsg {
        Init(ActorRef<PingMsg>),
        Ball(u64),
    }

    pub struct Ping;
    pub struct PingState {
        pong: ActorRef<PongMsg>,
        target: u64,
        done: Option<Sender<u64>>,
    }
    impl Actor for Ping {
        type Msg = PingMsg;
        type State = PingState;
        type Arguments = ActorRef<PongMsg>;
        async fn pre_start(
            &self,
            _: ActorRef<PingMsg>,
            pong: ActorRef<PongMsg>,
        ) -> Result<PingState, ActorProcessingErr> {
            Ok(PingState {
                pong,
                target: 0,
                done: None,
            })
        }
        async fn handle(
            &self,
            _: ActorRef<PingMsg>,
            msg: PingMsg,
            st: &mut PingState,
        ) -> Result<(), ActorProcessingErr> {
            match msg {
                PingMsg::Start(n, done) => {
                    st.target = n;
                    st.done = Some(done);
                    st.pong.cast(PongMsg::Ball(1))?;
                }
                PingMsg::Ball(i) if i == st.target => {
                    let _ = st.done.take().expect("started").send(i);
                }
                PingMsg::Ball(i) => st.pong.cast(PongMsg::Ball(i + 1))?,
            }
            Ok(())
        }
    }

    pub struct Pong;
    impl Actor for Pong {
        type Msg = PongMsg;
        type State = Option<ActorRef<PingMsg>>;
        type Arguments = ();
        async fn pre_start(
            &self,
            _: ActorRef<PongMsg>,
            _: (),
        ) -> Result<Self::State, ActorProcessingErr> {
            Ok(None)
        }
        async fn handle(
            &self,
            _: ActorRef<PongMsg>,
            msg: PongMsg,
            ping: &mut Self::State,
        ) -> Result<(), ActorProcessingErr> {
            match msg {
                PongMsg::Init(p) => *ping = Some(p),
                PongMsg::Ball(i) => ping.as_ref().expect("initialised").cast(PingMsg::Ball(i))?,
            }
            Ok(())
        }
    }
}

fn ractor_impl(h: &mut Harness, imp: &str, n: u64) {
    let rt = TokioRt::new(imp);
    let (ping, pong, hs) = rt.block_on(async {
        let (pong, h1) = ractor::Actor::spawn(None, rc::Pong, ())
            .await
            .expect("spawn");
        let (ping, h2) = ractor::Actor::spawn(None, rc::Ping, pong.clone())
            .await
            .expect("spawn");
        assert!(pong.cast(rc::PongMsg::Init(ping.clone())).is_ok());
        (ping, pong, [h1, h2])
    });
    h.measure(BENCH, imp, 2 * n, || {
        let (tx, rx) = bounded(1);
        assert!(ping.cast(rc::PingMsg::Start(n, tx)).is_ok());
        assert_eq!(wait(&rx), n);
    });
    stop_ractor(&rt, &[ping.get_cell(), pong.get_cell()], hs);
}

// ---------------------------------------------------------------- kameo

mod km {
    use crossbeam_channel::Sender;
    use kameo::actor::ActorRef;
    use kameo::message::{Context, Message};
    use kameo::Actor;

    pub struct Start(pub u64, pub Sender<u64>);
    pub struct Ball(pub u64);
    pub struct Init(pub ActorRef<Ping>);

    #[derive(Actor)]
    pub struct Ping {
        pub pong: ActorRef<Pong>,
        pub target: u64,
        pub done: Option<Sender<u64>>,
    }
    impl Message<Start> for Ping {
        type Reply = ();
        async fn handle(&mut self, Start(n, done): Start, _: &mut Context<Self, ()>) {
            self.target = n;
            self.done = Some(done);
            assert!(self.pong.tell(Ball(1)).await.is_ok());
        }
    }
    impl Message<Ball> for Ping {
        type Reply = ();
        async fn handle(&mut self, Ball(i): Ball, _: &mut Context<Self, ()>) {
            if i == self.target {
                let _ = self.done.take().expect("started").send(i);
            } else {
                assert!(self.pong.tell(Ball(i + 1)).await.is_ok());
            }
        }
    }

    #[derive(Actor)]
    pub struct Pong {
        pub ping: Option<ActorRef<Ping>>,
    }
    impl Message<Init> for Pong {
        type Reply = ();
        async fn handle(&mut self, Init(p): Init, _: &mut Context<Self, ()>) {
            self.ping = Some(p);
        }
    }
    impl Message<Ball> for Pong {
        type Reply = ();
        async fn handle(&mut self, msg: Ball, _: &mut Context<Self, ()>) {
            let ping = self.ping.as_ref().expect("initialised");
            assert!(ping.tell(msg).await.is_ok());
        }
    }
}

fn kameo_impl(h: &mut Harness, imp: &str, n: u64) {
    use kameo::actor::Spawn;
    let rt = TokioRt::new(imp);
    let (ping, pong) = rt.block_on(async {
        let pong = km::Pong::spawn(km::Pong { ping: None });
        let ping = km::Ping::spawn(km::Ping {
            pong: pong.clone(),
            target: 0,
            done: None,
        });
        assert!(pong.tell(km::Init(ping.clone())).await.is_ok());
        (ping, pong)
    });
    h.measure(BENCH, imp, 2 * n, || {
        let (tx, rx) = bounded(1);
        assert!(ping.tell(km::Start(n, tx)).blocking_send().is_ok());
        assert_eq!(wait(&rx), n);
    });
    rt.block_on(async {
        let _ = ping.stop_gracefully().await;
        let _ = pong.stop_gracefully().await;
        ping.wait_for_shutdown().await;
        pong.wait_for_shutdown().await;
    });
}

// ---------------------------------------------------------------- stakker

struct SPing {
    pong: stakker::ActorOwn<SPong>,
    target: u64,
    out: Rc<Cell<u64>>,
}

impl SPing {
    fn init(cx: CX![], out: Rc<Cell<u64>>) -> Option<Self> {
        let me = cx.this().clone();
        let pong = actor!(cx, SPong::init(me), ret_nop!());
        Some(SPing {
            pong,
            target: 0,
            out,
        })
    }
    fn start(&mut self, _: CX![], n: u64) {
        self.target = n;
        call!([self.pong], ball(1));
    }
    fn ball(&mut self, _: CX![], i: u64) {
        if i == self.target {
            self.out.set(i);
        } else {
            call!([self.pong], ball(i + 1));
        }
    }
}

struct SPong {
    ping: stakker::Actor<SPing>,
}

impl SPong {
    fn init(_: CX![], ping: stakker::Actor<SPing>) -> Option<Self> {
        Some(SPong { ping })
    }
    fn ball(&mut self, _: CX![], i: u64) {
        call!([self.ping], ball(i));
    }
}

fn stakker_impl(h: &mut Harness, _imp: &str, n: u64) {
    let mut s = Stakker::new(std::time::Instant::now());
    let out = Rc::new(Cell::new(0));
    let ping = actor!(s, SPing::init(out.clone()), ret_nop!());
    s.run(std::time::Instant::now(), false);
    h.measure(BENCH, "stakker", 2 * n, || {
        out.set(0);
        call!([ping], start(n));
        s.run(std::time::Instant::now(), false);
        assert_eq!(out.get(), n);
    });
}

// ---------------------------------------------------------------- tokio

fn tokio_impl(h: &mut Harness, imp: &str, n: u64) {
    use tokio::sync::mpsc;
    let rt = TokioRt::new(imp);
    let (ping_tx, mut ping_rx) = mpsc::channel::<PingBase>(1024);
    let (pong_tx, mut pong_rx) = mpsc::channel::<u64>(1024);
    let back = ping_tx.clone();
    rt.spawn(async move {
        while let Some(i) = pong_rx.recv().await {
            if back.send(PingBase::Ball(i)).await.is_err() {
                break;
            }
        }
    });
    rt.spawn(async move {
        let (mut target, mut done) = (0, None);
        while let Some(msg) = ping_rx.recv().await {
            match msg {
                PingBase::Start(0, _) => break,
                PingBase::Start(n, d) => {
                    target = n;
                    done = Some(d);
                    pong_tx.send(1).await.expect("pong alive");
                }
                PingBase::Ball(i) if i == target => {
                    let _ = done.take().expect("started").send(i);
                }
                PingBase::Ball(i) => pong_tx.send(i + 1).await.expect("pong alive"),
            }
        }
    });
    h.measure(BENCH, imp, 2 * n, || {
        let (tx, rx) = bounded(1);
        assert!(ping_tx.blocking_send(PingBase::Start(n, tx)).is_ok());
        assert_eq!(wait(&rx), n);
    });
    let (tx, _rx) = bounded(1);
    let _ = ping_tx.blocking_send(PingBase::Start(0, tx));
    drop(ping_tx);
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
}

/// Ping's messages in the two baselines (`Start(0, _)` ends the loop).
enum PingBase {
    Start(u64, Sender<u64>),
    Ball(u64),
}

// ---------------------------------------------------------------- crossbeam

fn crossbeam_impl(h: &mut Harness, _imp: &str, n: u64) {
    let (ping_tx, ping_rx) = bounded::<PingBase>(1024);
    let (pong_tx, pong_rx) = bounded::<u64>(1024);
    let back = ping_tx.clone();
    let t1 = std::thread::spawn(move || {
        for i in pong_rx {
            if back.send(PingBase::Ball(i)).is_err() {
                break;
            }
        }
    });
    let t2 = std::thread::spawn(move || {
        let (mut target, mut done) = (0, None);
        for msg in ping_rx {
            match msg {
                PingBase::Start(0, _) => break,
                PingBase::Start(n, d) => {
                    target = n;
                    done = Some(d);
                    pong_tx.send(1).expect("pong alive");
                }
                PingBase::Ball(i) if i == target => {
                    let _ = done.take().expect("started").send(i);
                }
                PingBase::Ball(i) => pong_tx.send(i + 1).expect("pong alive"),
            }
        }
    });
    h.measure(BENCH, "crossbeam", 2 * n, || {
        let (tx, rx) = bounded(1);
        ping_tx.send(PingBase::Start(n, tx)).expect("ping alive");
        assert_eq!(wait(&rx), n);
    });
    // Ping holds a sender to itself (through pong): `Start(0)` stops it.
    let (tx, _rx) = bounded(1);
    ping_tx.send(PingBase::Start(0, tx)).expect("ping alive");
    drop(ping_tx);
    t2.join().expect("ping thread");
    t1.join().expect("pong thread");
}
