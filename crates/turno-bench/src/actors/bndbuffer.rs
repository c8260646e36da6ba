//! `bndbuffer` (Savina producer/consumer with a bounded buffer):
//! [`PRODUCERS`] producers and [`CONSUMERS`] consumers go through a manager
//! actor that holds at most [`BUFFER`] items. A producer sends `Data(item,
//! me)` and produces its next item only when the manager says `More`
//! (at once while the buffer has room; later, when a consumer takes an
//! item, if the buffer was full). A consumer says `Available(me)` and gets
//! one item. After `n` items the manager sends each consumer `Exit`; the
//! consumers report their sums, which are checked. Actors are spawned per
//! run (9 of them).

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::bounded;
use stakker::{actor, call, ret_nop, Stakker, CX};

use super::{enq, n_or, run_with_peers, wait, Countdown, TokioRt, Turno};
use crate::harness::Harness;
use crate::Args;

const BENCH: &str = "bndbuffer";

/// Producer actors.
pub const PRODUCERS: usize = 4;
/// Consumer actors.
pub const CONSUMERS: usize = 4;
/// The manager's buffer capacity.
pub const BUFFER: usize = 64;

/// Default items per run (all producers together).
pub const DEFAULT_N: u64 = 200_000;

/// Runs every implementation.
pub fn run(args: &Args, h: &mut Harness) {
    let quota = n_or(args, DEFAULT_N).div_ceil(PRODUCERS as u64);
    run_with_peers!(args, h, BENCH, quota);
}

/// Items per run for a producer quota.
fn total(quota: u64) -> u64 {
    quota * PRODUCERS as u64
}

/// The sum the consumers must report.
fn expected_sum(quota: u64) -> u64 {
    PRODUCERS as u64 * quota * (quota + 1) / 2
}

/// What the manager tells whom.
pub enum Act<P, C> {
    /// Give a consumer an item.
    Give(C, u64),
    /// Let a producer produce its next item.
    More(P),
    /// Tell a consumer the run is over.
    Exit(C),
}

/// The manager's logic, shared by every implementation; `P` and `C` are
/// the producer and consumer address types.
pub struct Manager<P, C> {
    buf: VecDeque<u64>,
    blocked: VecDeque<P>,
    idle: Vec<C>,
    delivered: u64,
    quota: u64,
}

impl<P, C> Manager<P, C> {
    /// A manager for producers of `quota` items each (a producer's items
    /// are `1..=quota`, so item `quota` is its last: no `More` for it).
    fn new(quota: u64) -> Self {
        Manager {
            buf: VecDeque::with_capacity(BUFFER),
            blocked: VecDeque::new(),
            idle: Vec::new(),
            delivered: 0,
            quota,
        }
    }

    fn give(&mut self, c: C, item: u64, act: &mut impl FnMut(Act<P, C>)) {
        self.delivered += 1;
        act(Act::Give(c, item));
        if self.delivered == total(self.quota) {
            for c in self.idle.drain(..) {
                act(Act::Exit(c));
            }
        }
    }

    fn data(&mut self, item: u64, p: P, mut act: impl FnMut(Act<P, C>)) {
        let more = item < self.quota;
        if let Some(c) = self.idle.pop() {
            self.give(c, item, &mut act);
            if more {
                act(Act::More(p));
            }
        } else {
            self.buf.push_back(item);
            if !more {
                // The producer is done.
            } else if self.buf.len() >= BUFFER {
                self.blocked.push_back(p);
            } else {
                act(Act::More(p));
            }
        }
    }

    fn available(&mut self, c: C, mut act: impl FnMut(Act<P, C>)) {
        if self.delivered == total(self.quota) {
            act(Act::Exit(c));
        } else if let Some(item) = self.buf.pop_front() {
            self.give(c, item, &mut act);
            if let Some(p) = self.blocked.pop_front() {
                act(Act::More(p));
            }
        } else {
            self.idle.push(c);
        }
    }
}

/// The consumers' reports.
pub struct Report {
    sum: AtomicU64,
    left: Arc<Countdown>,
}

impl Report {
    fn new() -> (Arc<Report>, crossbeam_channel::Receiver<()>) {
        let (left, rx) = Countdown::new(CONSUMERS as u64);
        let sum = AtomicU64::new(0);
        (Arc::new(Report { sum, left }), rx)
    }
    fn new_async() -> (Arc<Report>, tokio::sync::mpsc::UnboundedReceiver<()>) {
        let (left, rx) = Countdown::new_async(CONSUMERS as u64);
        let sum = AtomicU64::new(0);
        (Arc::new(Report { sum, left }), rx)
    }
    fn exit(&self, sum: u64) {
        self.sum.fetch_add(sum, Ordering::Relaxed);
        self.left.tick();
    }
    fn check(&self, quota: u64) {
        assert_eq!(self.sum.load(Ordering::Relaxed), expected_sum(quota));
    }
}

// ---------------------------------------------------------------- turno

enum MgrMsg {
    Data(u64, turno::Addr<ProdMsg>),
    Available(turno::Addr<ConsMsg>),
}

struct ProdMsg;

enum ConsMsg {
    Go,
    Item(u64),
    Exit,
}

struct TMgr(Manager<turno::Addr<ProdMsg>, turno::Addr<ConsMsg>>);

impl turno::Actor for TMgr {
    type Msg = MgrMsg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, msg: MgrMsg) {
        let act = |a: Act<_, _>| match a {
            Act::Give(c, item) => enq(ctx.send(&c, ConsMsg::Item(item))),
            Act::More(p) => enq(ctx.send(&p, ProdMsg)),
            Act::Exit(c) => enq(ctx.send(&c, ConsMsg::Exit)),
        };
        match msg {
            MgrMsg::Data(item, p) => self.0.data(item, p, act),
            MgrMsg::Available(c) => self.0.available(c, act),
        }
    }
}

struct TProd {
    mgr: turno::Addr<MgrMsg>,
    produced: u64,
    quota: u64,
}

impl turno::Actor for TProd {
    type Msg = ProdMsg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, ProdMsg: ProdMsg) {
        self.produced += 1;
        let me = ctx.addr();
        enq(ctx.send(&self.mgr, MgrMsg::Data(self.produced, me)));
        if self.produced == self.quota {
            ctx.stop();
        }
    }
}

struct TCons {
    mgr: turno::Addr<MgrMsg>,
    sum: u64,
    report: Arc<Report>,
}

impl turno::Actor for TCons {
    type Msg = ConsMsg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, msg: ConsMsg) {
        match msg {
            ConsMsg::Go => {}
            ConsMsg::Item(v) => self.sum += v,
            ConsMsg::Exit => {
                self.report.exit(self.sum);
                ctx.stop();
                return;
            }
        }
        let me = ctx.addr();
        enq(ctx.send(&self.mgr, MgrMsg::Available(me)));
    }
}

fn turno_impl(h: &mut Harness, imp: &str, quota: u64) {
    let mut sys = Turno::new(imp);
    h.measure(BENCH, imp, total(quota), || {
        let (report, rx) = Report::new();
        let mut mgr = Some(TMgr(Manager::new(quota)));
        let mgr = sys.spawn(turno::Props::new(), move || {
            mgr.take().expect("no restarts")
        });
        for _ in 0..CONSUMERS {
            let (m, r) = (mgr.clone(), report.clone());
            let c = sys.spawn(turno::Props::new(), move || TCons {
                mgr: m.clone(),
                sum: 0,
                report: r.clone(),
            });
            enq(c.try_send(ConsMsg::Go));
        }
        for _ in 0..PRODUCERS {
            let m = mgr.clone();
            let p = sys.spawn(turno::Props::new(), move || TProd {
                mgr: m.clone(),
                produced: 0,
                quota,
            });
            enq(p.try_send(ProdMsg));
        }
        sys.wait(&rx);
        report.check(quota);
        sys.stop(mgr.id());
    });
    sys.close();
}

// ---------------------------------------------------------------- actix

mod ax {
    use std::sync::Arc;

    use actix::prelude::*;

    use super::{Act, Manager, Report};

    pub enum MgrMsg {
        Data(u64, Addr<Prod>),
        Available(Addr<Cons>),
    }
    impl Message for MgrMsg {
        type Result = ();
    }
    pub struct More;
    impl Message for More {
        type Result = ();
    }
    pub enum ConsMsg {
        Go,
        Item(u64),
        Exit,
    }
    impl Message for ConsMsg {
        type Result = ();
    }

    pub struct Mgr(pub Manager<Addr<Prod>, Addr<Cons>>);
    impl Actor for Mgr {
        type Context = Context<Self>;
    }
    impl Handler<MgrMsg> for Mgr {
        type Result = ();
        fn handle(&mut self, msg: MgrMsg, _: &mut Context<Self>) {
            let act = |a: Act<Addr<Prod>, Addr<Cons>>| match a {
                Act::Give(c, item) => c.do_send(ConsMsg::Item(item)),
                Act::More(p) => p.do_send(More),
                Act::Exit(c) => c.do_send(ConsMsg::Exit),
            };
            match msg {
                MgrMsg::Data(item, p) => self.0.data(item, p, act),
                MgrMsg::Available(c) => self.0.available(c, act),
            }
        }
    }

    pub struct Prod {
        pub mgr: Addr<Mgr>,
        pub produced: u64,
        pub quota: u64,
    }
    impl Actor for Prod {
        type Context = Context<Self>;
    }
    impl Handler<More> for Prod {
        type Result = ();
        fn handle(&mut self, _: More, ctx: &mut Context<Self>) {
            self.produced += 1;
            self.mgr.do_send(MgrMsg::Data(self.produced, ctx.address()));
            if self.produced == self.quota {
                ctx.stop();
            }
        }
    }

    pub struct Cons {
        pub mgr: Addr<Mgr>,
        pub sum: u64,
        pub report: Arc<Report>,
    }
    impl Actor for Cons {
        type Context = Context<Self>;
    }
    impl Handler<ConsMsg> for Cons {
        type Result = ();
        fn handle(&mut self, msg: ConsMsg, ctx: &mut Context<Self>) {
            match msg {
                ConsMsg::Go => {}
                ConsMsg::Item(v) => self.sum += v,
                ConsMsg::Exit => {
                    self.report.exit(self.sum);
                    ctx.stop();
                    return;
                }
            }
            self.mgr.do_send(MgrMsg::Available(ctx.address()));
        }
    }
}

fn actix_impl(h: &mut Harness, _imp: &str, quota: u64) {
    use actix::Actor as _;
    let sys = actix_rt::System::new();
    h.measure(BENCH, "actix", total(quota), || {
        let (report, mut rx) = Report::new_async();
        sys.block_on(async {
            let mgr = ax::Mgr(Manager::new(quota)).start();
            for _ in 0..CONSUMERS {
                ax::Cons {
                    mgr: mgr.clone(),
                    sum: 0,
                    report: report.clone(),
                }
                .start()
                .do_send(ax::ConsMsg::Go);
            }
            for _ in 0..PRODUCERS {
                ax::Prod {
                    mgr: mgr.clone(),
                    produced: 0,
                    quota,
                }
                .start()
                .do_send(ax::More);
            }
            rx.recv().await.expect("every consumer exited");
        });
        report.check(quota);
    });
}

// ---------------------------------------------------------------- ractor

mod rc {
    use std::sync::Arc;

    use ractor::{Actor, ActorProcessingErr, ActorRef};

    use super::{Act, Manager, Report};

    pub enum MgrMsg {
        Data(u64, ActorRef<()>),
        Available(ActorRef<ConsMsg>),
    }
    pub enum ConsMsg {
        Go,
        Item(u64),
        Exit,
    }

    pub struct Mgr;
    impl Actor for Mgr {
        type Msg = MgrMsg;
        type State = Manager<ActorRef<()>, ActorRef<ConsMsg>>;
        type Arguments = u64;
        async fn pre_start(
            &self,
            _: ActorRef<MgrMsg>,
            quota: u64,
        ) -> Result<Self::State, ActorProcessingErr> {
            Ok(Manager::new(quota))
        }
        async fn handle(
            &self,
            _: ActorRef<MgrMsg>,
            msg: MgrMsg,
            m: &mut Self::State,
        ) -> Result<(), ActorProcessingErr> {
            let mut ok = true;
            let act = |a: Act<ActorRef<()>, ActorRef<ConsMsg>>| {
                ok &= match a {
                    Act::Give(c, item) => c.cast(ConsMsg::Item(item)).is_ok(),
                    Act::More(p) => p.cast(()).is_ok(),
                    Act::Exit(c) => c.cast(ConsMsg::Exit).is_ok(),
                }
            };
            match msg {
                MgrMsg::Data(item, p) => m.data(item, p, act),
                MgrMsg::Available(c) => m.available(c, act),
            }
            assert!(ok, "a ractor cast failed");
            Ok(())
        }
    }

    pub struct Prod;
    impl Actor for Prod {
        type Msg = ();
        type State = (ActorRef<MgrMsg>, u64, u64);
        type Arguments = (ActorRef<MgrMsg>, u64);
        async fn pre_start(
            &self,
            _: ActorRef<()>,
            (mgr, quota): Self::Arguments,
        ) -> Result<Self::State, ActorProcessingErr> {
            Ok((mgr, 0, quota))
        }
        async fn handle(
            &self,
            myself: ActorRef<()>,
            (): (),
            (mgr, produced, quota): &mut Self::State,
        ) -> Result<(), ActorProcessingErr> {
            *produced += 1;
            mgr.cast(MgrMsg::Data(*produced, myself.clone()))?;
            if produced == quota {
                myself.stop(None);
            }
            Ok(())
        }
    }

    pub struct Cons;
    impl Actor for Cons {
        type Msg = ConsMsg;
        type State = (ActorRef<MgrMsg>, u64, Arc<Report>);
        type Arguments = (ActorRef<MgrMsg>, Arc<Report>);
        async fn pre_start(
            &self,
            _: ActorRef<ConsMsg>,
            (mgr, report): Self::Arguments,
        ) -> Result<Self::State, ActorProcessingErr> {
            Ok((mgr, 0, report))
        }
        async fn handle(
            &self,
            myself: ActorRef<ConsMsg>,
            msg: ConsMsg,
            (mgr, sum, report): &mut Self::State,
        ) -> Result<(), ActorProcessingErr> {
            match msg {
                ConsMsg::Go => {}
                ConsMsg::Item(v) => *sum += v,
                ConsMsg::Exit => {
                    report.exit(*sum);
                    myself.stop(None);
                    return Ok(());
                }
            }
            mgr.cast(MgrMsg::Available(myself))?;
            Ok(())
        }
    }
}

fn ractor_impl(h: &mut Harness, imp: &str, quota: u64) {
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, total(quota), || {
        let (report, rx) = Report::new();
        let (mgr, mh) = rt.block_on(async {
            let (mgr, mh) = ractor::Actor::spawn(None, rc::Mgr, quota)
                .await
                .expect("spawn");
            for _ in 0..CONSUMERS {
                let (c, _) = ractor::Actor::spawn(None, rc::Cons, (mgr.clone(), report.clone()))
                    .await
                    .expect("spawn");
                assert!(c.cast(rc::ConsMsg::Go).is_ok());
            }
            for _ in 0..PRODUCERS {
                let (p, _) = ractor::Actor::spawn(None, rc::Prod, (mgr.clone(), quota))
                    .await
                    .expect("spawn");
                assert!(p.cast(()).is_ok());
            }
            (mgr, mh)
        });
        wait(&rx);
        report.check(quota);
        mgr.stop(None);
        let _ = rt.block_on(mh);
    });
}

// ---------------------------------------------------------------- kameo

mod km {
    use std::sync::Arc;

    use kameo::actor::ActorRef;
    use kameo::message::{Context, Message};
    use kameo::Actor;

    use super::{Act, Manager, Report};

    pub struct Data(pub u64, pub ActorRef<Prod>);
    pub struct Available(pub ActorRef<Cons>);
    pub struct More;
    pub enum ConsMsg {
        Go,
        Item(u64),
        Exit,
    }

    #[derive(Actor)]
    pub struct Mgr(pub Manager<ActorRef<Prod>, ActorRef<Cons>>);

    /// Sends what the manager decided (kameo's `tell` is awaited).
    async fn perform(acts: Vec<Act<ActorRef<Prod>, ActorRef<Cons>>>) {
        for a in acts {
            let ok = match a {
                Act::Give(c, item) => c.tell(ConsMsg::Item(item)).await.is_ok(),
                Act::More(p) => p.tell(More).await.is_ok(),
                Act::Exit(c) => c.tell(ConsMsg::Exit).await.is_ok(),
            };
            assert!(ok, "a kameo tell failed");
        }
    }

    impl Message<Data> for Mgr {
        type Reply = ();
        async fn handle(&mut self, Data(item, p): Data, _: &mut Context<Self, ()>) {
            let mut acts = Vec::new();
            self.0.data(item, p, |a| acts.push(a));
            perform(acts).await;
        }
    }
    impl Message<Available> for Mgr {
        type Reply = ();
        async fn handle(&mut self, Available(c): Available, _: &mut Context<Self, ()>) {
            let mut acts = Vec::new();
            self.0.available(c, |a| acts.push(a));
            perform(acts).await;
        }
    }

    #[derive(Actor)]
    pub struct Prod {
        pub mgr: ActorRef<Mgr>,
        pub produced: u64,
        pub quota: u64,
    }
    impl Message<More> for Prod {
        type Reply = ();
        async fn handle(&mut self, _: More, ctx: &mut Context<Self, ()>) {
            self.produced += 1;
            let me = ctx.actor_ref().clone();
            assert!(self.mgr.tell(Data(self.produced, me)).await.is_ok());
            if self.produced == self.quota {
                ctx.stop();
            }
        }
    }

    #[derive(Actor)]
    pub struct Cons {
        pub mgr: ActorRef<Mgr>,
        pub sum: u64,
        pub report: Arc<Report>,
    }
    impl Message<ConsMsg> for Cons {
        type Reply = ();
        async fn handle(&mut self, msg: ConsMsg, ctx: &mut Context<Self, ()>) {
            match msg {
                ConsMsg::Go => {}
                ConsMsg::Item(v) => self.sum += v,
                ConsMsg::Exit => {
                    self.report.exit(self.sum);
                    ctx.stop();
                    return;
                }
            }
            let me = ctx.actor_ref().clone();
            assert!(self.mgr.tell(Available(me)).await.is_ok());
        }
    }
}

fn kameo_impl(h: &mut Harness, imp: &str, quota: u64) {
    use kameo::actor::Spawn;
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, total(quota), || {
        let (report, rx) = Report::new();
        let mgr = rt.block_on(async {
            let mgr = km::Mgr::spawn(km::Mgr(Manager::new(quota)));
            for _ in 0..CONSUMERS {
                let c = km::Cons::spawn(km::Cons {
                    mgr: mgr.clone(),
                    sum: 0,
                    report: report.clone(),
                });
                assert!(c.tell(km::ConsMsg::Go).await.is_ok());
            }
            for _ in 0..PRODUCERS {
                let p = km::Prod::spawn(km::Prod {
                    mgr: mgr.clone(),
                    produced: 0,
                    quota,
                });
                assert!(p.tell(km::More).await.is_ok());
            }
            mgr
        });
        wait(&rx);
        report.check(quota);
        rt.block_on(async {
            let _ = mgr.stop_gracefully().await;
            mgr.wait_for_shutdown().await;
        });
    });
}

// ---------------------------------------------------------------- stakker

struct SMgr(Manager<stakker::Actor<SProd>, stakker::Actor<SCons>>);

impl SMgr {
    fn init(_: CX![], quota: u64) -> Option<Self> {
        Some(SMgr(Manager::new(quota)))
    }
    fn act(a: Act<stakker::Actor<SProd>, stakker::Actor<SCons>>) {
        match a {
            Act::Give(c, item) => call!([c], item(item)),
            Act::More(p) => call!([p], more()),
            Act::Exit(c) => call!([c], exit()),
        }
    }
    fn data(&mut self, _: CX![], item: u64, p: stakker::Actor<SProd>) {
        self.0.data(item, p, SMgr::act);
    }
    fn available(&mut self, _: CX![], c: stakker::Actor<SCons>) {
        self.0.available(c, SMgr::act);
    }
}

struct SProd {
    mgr: stakker::Actor<SMgr>,
    produced: u64,
    quota: u64,
}

impl SProd {
    fn init(_: CX![], mgr: stakker::Actor<SMgr>, quota: u64) -> Option<Self> {
        Some(SProd {
            mgr,
            produced: 0,
            quota,
        })
    }
    fn more(&mut self, cx: CX![]) {
        self.produced += 1;
        let me = cx.this().clone();
        call!([self.mgr], data(self.produced, me));
        if self.produced == self.quota {
            cx.stop();
        }
    }
}

struct SCons {
    mgr: stakker::Actor<SMgr>,
    sum: u64,
    out: Rc<Cell<u64>>,
}

impl SCons {
    fn init(_: CX![], mgr: stakker::Actor<SMgr>, out: Rc<Cell<u64>>) -> Option<Self> {
        Some(SCons { mgr, sum: 0, out })
    }
    fn go(&mut self, cx: CX![]) {
        let me = cx.this().clone();
        call!([self.mgr], available(me));
    }
    fn item(&mut self, cx: CX![], v: u64) {
        self.sum += v;
        self.go(cx);
    }
    fn exit(&mut self, cx: CX![]) {
        self.out.set(self.out.get() + self.sum);
        cx.stop();
    }
}

fn stakker_impl(h: &mut Harness, _imp: &str, quota: u64) {
    let mut s = Stakker::new(std::time::Instant::now());
    let out = Rc::new(Cell::new(0));
    h.measure(BENCH, "stakker", total(quota), || {
        out.set(0);
        let mgr = actor!(s, SMgr::init(quota), ret_nop!());
        let mut actors = Vec::new();
        for _ in 0..CONSUMERS {
            let m: stakker::Actor<SMgr> = (*mgr).clone();
            let c = actor!(s, SCons::init(m, out.clone()), ret_nop!());
            call!([c], go());
            actors.push(c);
        }
        let mut prods = Vec::new();
        for _ in 0..PRODUCERS {
            let m: stakker::Actor<SMgr> = (*mgr).clone();
            let p = actor!(s, SProd::init(m, quota), ret_nop!());
            call!([p], more());
            prods.push(p);
        }
        s.run(std::time::Instant::now(), false);
        assert_eq!(out.get(), expected_sum(quota));
        drop((actors, prods, mgr));
    });
}

// ---------------------------------------------------------------- tokio

/// The manager's messages in the baselines, where an address is an index.
enum BaseMgr {
    Data(u64, usize),
    Available(usize),
}

/// A consumer's messages in the baselines.
enum BaseCons {
    Item(u64),
    Exit,
}

fn tokio_impl(h: &mut Harness, imp: &str, quota: u64) {
    use tokio::sync::mpsc;
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, total(quota), || {
        let (report, rx) = Report::new();
        rt.block_on(async {
            let (mgr_tx, mut mgr_rx) = mpsc::channel::<BaseMgr>(1024);
            let (ptx, prx): (Vec<_>, Vec<_>) =
                (0..PRODUCERS).map(|_| mpsc::channel::<()>(1024)).unzip();
            let (ctx, crx): (Vec<_>, Vec<_>) = (0..CONSUMERS)
                .map(|_| mpsc::channel::<BaseCons>(1024))
                .unzip();
            tokio::spawn(async move {
                let mut m = Manager::<usize, usize>::new(quota);
                let mut exited = 0;
                while let Some(msg) = mgr_rx.recv().await {
                    let mut acts = Vec::with_capacity(4);
                    match msg {
                        BaseMgr::Data(item, p) => m.data(item, p, |a| acts.push(a)),
                        BaseMgr::Available(c) => m.available(c, |a| acts.push(a)),
                    }
                    for a in acts {
                        match a {
                            Act::Give(c, item) => {
                                let _ = ctx[c].send(BaseCons::Item(item)).await;
                            }
                            Act::More(p) => {
                                let _ = ptx[p].send(()).await;
                            }
                            Act::Exit(c) => {
                                let _ = ctx[c].send(BaseCons::Exit).await;
                                exited += 1;
                            }
                        }
                    }
                    if exited == CONSUMERS {
                        break;
                    }
                }
            });
            for (i, mut inbox) in crx.into_iter().enumerate() {
                let (mgr, report) = (mgr_tx.clone(), report.clone());
                tokio::spawn(async move {
                    let mut sum = 0;
                    let _ = mgr.send(BaseMgr::Available(i)).await;
                    while let Some(BaseCons::Item(v)) = inbox.recv().await {
                        sum += v;
                        let _ = mgr.send(BaseMgr::Available(i)).await;
                    }
                    report.exit(sum);
                });
            }
            for (i, mut inbox) in prx.into_iter().enumerate() {
                let mgr = mgr_tx.clone();
                tokio::spawn(async move {
                    let mut produced = 0;
                    while produced < quota {
                        produced += 1;
                        let _ = mgr.send(BaseMgr::Data(produced, i)).await;
                        if produced == quota || inbox.recv().await.is_none() {
                            break;
                        }
                    }
                });
            }
        });
        wait(&rx);
        report.check(quota);
    });
}

// ---------------------------------------------------------------- crossbeam

fn crossbeam_impl(h: &mut Harness, _imp: &str, quota: u64) {
    h.measure(BENCH, "crossbeam", total(quota), || {
        let (report, rx) = Report::new();
        let (mgr_tx, mgr_rx) = bounded::<BaseMgr>(1024);
        let (ptx, prx): (Vec<_>, Vec<_>) = (0..PRODUCERS).map(|_| bounded::<()>(1024)).unzip();
        let (ctx, crx): (Vec<_>, Vec<_>) =
            (0..CONSUMERS).map(|_| bounded::<BaseCons>(1024)).unzip();
        let mut threads = vec![std::thread::spawn(move || {
            let mut m = Manager::<usize, usize>::new(quota);
            let mut exited = 0;
            for msg in mgr_rx.iter() {
                let act = |a: Act<usize, usize>| match a {
                    Act::Give(c, item) => {
                        let _ = ctx[c].send(BaseCons::Item(item));
                    }
                    Act::More(p) => {
                        let _ = ptx[p].send(());
                    }
                    Act::Exit(c) => {
                        let _ = ctx[c].send(BaseCons::Exit);
                        exited += 1;
                    }
                };
                match msg {
                    BaseMgr::Data(item, p) => m.data(item, p, act),
                    BaseMgr::Available(c) => m.available(c, act),
                }
                if exited == CONSUMERS {
                    break;
                }
            }
        })];
        for (i, inbox) in crx.into_iter().enumerate() {
            let (mgr, report) = (mgr_tx.clone(), report.clone());
            threads.push(std::thread::spawn(move || {
                let mut sum = 0;
                let _ = mgr.send(BaseMgr::Available(i));
                while let Ok(BaseCons::Item(v)) = inbox.recv() {
                    sum += v;
                    let _ = mgr.send(BaseMgr::Available(i));
                }
                report.exit(sum);
            }));
        }
        for (i, inbox) in prx.into_iter().enumerate() {
            let mgr = mgr_tx.clone();
            threads.push(std::thread::spawn(move || {
                let mut produced = 0;
                while produced < quota {
                    produced += 1;
                    let _ = mgr.send(BaseMgr::Data(produced, i));
                    if produced == quota || inbox.recv().is_err() {
                        break;
                    }
                }
            }));
        }
        drop(mgr_tx);
        wait(&rx);
        report.check(quota);
        for t in threads {
            t.join().expect("thread");
        }
    });
}
