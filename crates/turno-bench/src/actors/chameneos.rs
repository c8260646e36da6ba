//! `chameneos` (Savina): [`CHAMENEOS`] chameneos meet through a mall until
//! `n` meetings have happened. A chameneo sends `Meet(me, colour)` to the
//! mall; the mall holds the first and, when a second comes, sends the first
//! `Pair(second, colour)` (one meeting); the first takes the complement
//! colour, tells the second `Change(colour)`, and both go back to the mall.
//! After `n` meetings the mall answers every `Meet` with `Exit`; each
//! chameneo then reports its own meetings and stops. The run checks that
//! the reports add up to `2n`. Actors are spawned per run (9 of them).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::bounded;
use stakker::{actor, call, ret_nop, Stakker, CX};

use super::{enq, n_or, run_with_peers, wait, Countdown, TokioRt, Turno};
use crate::harness::Harness;
use crate::Args;

const BENCH: &str = "chameneos";

/// Chameneos per run.
pub const CHAMENEOS: usize = 8;

/// Default meetings per run.
pub const DEFAULT_N: u64 = 200_000;

/// Runs every implementation.
pub fn run(args: &Args, h: &mut Harness) {
    let n = n_or(args, DEFAULT_N);
    run_with_peers!(args, h, BENCH, n);
}

/// The colour two chameneos of colours `a` and `b` take after meeting.
fn complement(a: u8, b: u8) -> u8 {
    if a == b {
        a
    } else {
        3 - a - b
    }
}

/// What the chameneos report: their meetings, summed, and a countdown of
/// the chameneos still running.
pub struct Report {
    meetings: AtomicU64,
    left: Arc<Countdown>,
}

impl Report {
    fn new() -> (Arc<Report>, crossbeam_channel::Receiver<()>) {
        let (left, rx) = Countdown::new(CHAMENEOS as u64);
        let r = Report {
            meetings: AtomicU64::new(0),
            left,
        };
        (Arc::new(r), rx)
    }
    fn new_async() -> (Arc<Report>, tokio::sync::mpsc::UnboundedReceiver<()>) {
        let (left, rx) = Countdown::new_async(CHAMENEOS as u64);
        let r = Report {
            meetings: AtomicU64::new(0),
            left,
        };
        (Arc::new(r), rx)
    }
    fn exit(&self, meetings: u64) {
        self.meetings.fetch_add(meetings, Ordering::Relaxed);
        self.left.tick();
    }
    fn check(&self, n: u64) {
        assert_eq!(self.meetings.load(Ordering::Relaxed), 2 * n);
    }
}

/// The mall's bookkeeping, shared by every implementation: `meet` answers
/// what to do with a chameneo that arrives. (The waiting place is always
/// empty once the meetings are done: the last meeting emptied it.)
pub struct Mall<A> {
    left: u64,
    waiting: Option<(A, u8)>,
}

pub enum Verdict<A> {
    /// Send it `Exit`: the meetings are done.
    Exit(A),
    Wait,
    /// Send the earlier one `Pair(with, colour)`.
    Pair(A, A, u8),
}

impl<A> Mall<A> {
    fn new(n: u64) -> Self {
        Mall {
            left: n,
            waiting: None,
        }
    }
    fn meet(&mut self, from: A, colour: u8) -> Verdict<A> {
        if self.left == 0 {
            return Verdict::Exit(from);
        }
        match self.waiting.take() {
            None => {
                self.waiting = Some((from, colour));
                Verdict::Wait
            }
            Some((first, _)) => {
                self.left -= 1;
                Verdict::Pair(first, from, colour)
            }
        }
    }
}

// ---------------------------------------------------------------- turno

enum MallMsg {
    Meet(turno::Addr<ChamMsg>, u8),
}

enum ChamMsg {
    Go,
    Pair(turno::Addr<ChamMsg>, u8),
    Change(u8),
    Exit,
}

struct TMall(Mall<turno::Addr<ChamMsg>>);

impl turno::Actor for TMall {
    type Msg = MallMsg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, MallMsg::Meet(from, c): MallMsg) {
        match self.0.meet(from, c) {
            Verdict::Exit(from) => enq(ctx.send(&from, ChamMsg::Exit)),
            Verdict::Wait => {}
            Verdict::Pair(first, second, c) => enq(ctx.send(&first, ChamMsg::Pair(second, c))),
        }
    }
}

struct TCham {
    mall: turno::Addr<MallMsg>,
    colour: u8,
    meetings: u64,
    report: Arc<Report>,
}

impl turno::Actor for TCham {
    type Msg = ChamMsg;
    fn handle(&mut self, ctx: &mut turno::Context<'_, Self>, msg: ChamMsg) {
        match msg {
            ChamMsg::Go => {}
            ChamMsg::Pair(other, c) => {
                self.colour = complement(self.colour, c);
                self.meetings += 1;
                enq(ctx.send(&other, ChamMsg::Change(self.colour)));
            }
            ChamMsg::Change(c) => {
                self.colour = c;
                self.meetings += 1;
            }
            ChamMsg::Exit => {
                self.report.exit(self.meetings);
                ctx.stop();
                return;
            }
        }
        let me = ctx.addr();
        enq(ctx.send(&self.mall, MallMsg::Meet(me, self.colour)));
    }
}

fn turno_impl(h: &mut Harness, imp: &str, n: u64) {
    let mut sys = Turno::new(imp);
    h.measure(BENCH, imp, n, || {
        let (report, rx) = Report::new();
        let mut mall = Some(TMall(Mall::new(n)));
        let mall = sys.spawn(turno::Props::new(), move || {
            mall.take().expect("no restarts")
        });
        let chams: Vec<_> = (0..CHAMENEOS)
            .map(|i| {
                let (mall, report) = (mall.clone(), report.clone());
                sys.spawn(turno::Props::new(), move || TCham {
                    mall: mall.clone(),
                    colour: (i % 3) as u8,
                    meetings: 0,
                    report: report.clone(),
                })
            })
            .collect();
        for c in &chams {
            enq(c.try_send(ChamMsg::Go));
        }
        sys.wait(&rx);
        report.check(n);
        sys.stop(mall.id());
    });
    sys.close();
}

// ---------------------------------------------------------------- actix

mod ax {
    use std::sync::Arc;

    use actix::prelude::*;

    use super::{complement, Mall, Report, Verdict};

    pub struct Meet(pub Addr<Cham>, pub u8);
    impl Message for Meet {
        type Result = ();
    }
    pub enum ChamMsg {
        Go,
        Pair(Addr<Cham>, u8),
        Change(u8),
        Exit,
    }
    impl Message for ChamMsg {
        type Result = ();
    }

    pub struct AMall(pub Mall<Addr<Cham>>);
    impl Actor for AMall {
        type Context = Context<Self>;
    }
    impl Handler<Meet> for AMall {
        type Result = ();
        fn handle(&mut self, Meet(from, c): Meet, _: &mut Context<Self>) {
            match self.0.meet(from, c) {
                Verdict::Exit(from) => from.do_send(ChamMsg::Exit),
                Verdict::Wait => {}
                Verdict::Pair(first, second, c) => first.do_send(ChamMsg::Pair(second, c)),
            }
        }
    }

    pub struct Cham {
        pub mall: Addr<AMall>,
        pub colour: u8,
        pub meetings: u64,
        pub report: Arc<Report>,
    }
    impl Actor for Cham {
        type Context = Context<Self>;
    }
    impl Handler<ChamMsg> for Cham {
        type Result = ();
        fn handle(&mut self, msg: ChamMsg, ctx: &mut Context<Self>) {
            match msg {
                ChamMsg::Go => {}
                ChamMsg::Pair(other, c) => {
                    self.colour = complement(self.colour, c);
                    self.meetings += 1;
                    other.do_send(ChamMsg::Change(self.colour));
                }
                ChamMsg::Change(c) => {
                    self.colour = c;
                    self.meetings += 1;
                }
                ChamMsg::Exit => {
                    self.report.exit(self.meetings);
                    ctx.stop();
                    return;
                }
            }
            self.mall.do_send(Meet(ctx.address(), self.colour));
        }
    }
}

fn actix_impl(h: &mut Harness, _imp: &str, n: u64) {
    use actix::Actor as _;
    let sys = actix_rt::System::new();
    h.measure(BENCH, "actix", n, || {
        let (report, mut rx) = Report::new_async();
        sys.block_on(async {
            let mall = ax::AMall(Mall::new(n)).start();
            for i in 0..CHAMENEOS {
                ax::Cham {
                    mall: mall.clone(),
                    colour: (i % 3) as u8,
                    meetings: 0,
                    report: report.clone(),
                }
                .start()
                .do_send(ax::ChamMsg::Go);
            }
            rx.recv().await.expect("every chameneo exited");
        });
        report.check(n);
    });
}

// ---------------------------------------------------------------- ractor

mod rc {
    use std::sync::Arc;

    use ractor::{Actor, ActorProcessingErr, ActorRef};

    use super::{complement, Mall, Report, Verdict};

    pub enum ChamMsg {
        Go,
        Pair(ActorRef<ChamMsg>, u8),
        Change(u8),
        Exit,
    }
    pub type MallMsg = (ActorRef<ChamMsg>, u8);

    pub struct RMall;
    impl Actor for RMall {
        type Msg = MallMsg;
        type State = Mall<ActorRef<ChamMsg>>;
        type Arguments = u64;
        async fn pre_start(
            &self,
            _: ActorRef<MallMsg>,
            n: u64,
        ) -> Result<Self::State, ActorProcessingErr> {
            Ok(Mall::new(n))
        }
        async fn handle(
            &self,
            _: ActorRef<MallMsg>,
            (from, c): MallMsg,
            mall: &mut Self::State,
        ) -> Result<(), ActorProcessingErr> {
            match mall.meet(from, c) {
                Verdict::Exit(from) => from.cast(ChamMsg::Exit)?,
                Verdict::Wait => {}
                Verdict::Pair(first, second, c) => first.cast(ChamMsg::Pair(second, c))?,
            }
            Ok(())
        }
    }

    pub struct Cham;
    pub struct State {
        mall: ActorRef<MallMsg>,
        colour: u8,
        meetings: u64,
        report: Arc<Report>,
    }
    impl Actor for Cham {
        type Msg = ChamMsg;
        type State = State;
        type Arguments = (ActorRef<MallMsg>, u8, Arc<Report>);
        async fn pre_start(
            &self,
            _: ActorRef<ChamMsg>,
            (mall, colour, report): Self::Arguments,
        ) -> Result<State, ActorProcessingErr> {
            Ok(State {
                mall,
                colour,
                meetings: 0,
                report,
            })
        }
        async fn handle(
            &self,
            myself: ActorRef<ChamMsg>,
            msg: ChamMsg,
            st: &mut State,
        ) -> Result<(), ActorProcessingErr> {
            match msg {
                ChamMsg::Go => {}
                ChamMsg::Pair(other, c) => {
                    st.colour = complement(st.colour, c);
                    st.meetings += 1;
                    other.cast(ChamMsg::Change(st.colour))?;
                }
                ChamMsg::Change(c) => {
                    st.colour = c;
                    st.meetings += 1;
                }
                ChamMsg::Exit => {
                    st.report.exit(st.meetings);
                    myself.stop(None);
                    return Ok(());
                }
            }
            st.mall.cast((myself, st.colour))?;
            Ok(())
        }
    }
}

fn ractor_impl(h: &mut Harness, imp: &str, n: u64) {
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, n, || {
        let (report, rx) = Report::new();
        let (mall, mh) = rt.block_on(async {
            let (mall, mh) = ractor::Actor::spawn(None, rc::RMall, n)
                .await
                .expect("spawn");
            for i in 0..CHAMENEOS {
                let args = (mall.clone(), (i % 3) as u8, report.clone());
                let (c, _) = ractor::Actor::spawn(None, rc::Cham, args)
                    .await
                    .expect("spawn");
                assert!(c.cast(rc::ChamMsg::Go).is_ok());
            }
            (mall, mh)
        });
        wait(&rx);
        report.check(n);
        mall.stop(None);
        let _ = rt.block_on(mh);
    });
}

// ---------------------------------------------------------------- kameo

mod km {
    use std::sync::Arc;

    use kameo::actor::ActorRef;
    use kameo::message::{Context, Message};
    use kameo::Actor;

    use super::{complement, Mall, Report, Verdict};

    pub struct Meet(pub ActorRef<Cham>, pub u8);
    pub enum ChamMsg {
        Go,
        Pair(ActorRef<Cham>, u8),
        Change(u8),
        Exit,
    }

    #[derive(Actor)]
    pub struct KMall(pub Mall<ActorRef<Cham>>);
    impl Message<Meet> for KMall {
        type Reply = ();
        async fn handle(&mut self, Meet(from, c): Meet, _: &mut Context<Self, ()>) {
            let sent = match self.0.meet(from, c) {
                Verdict::Exit(from) => from.tell(ChamMsg::Exit).await.is_ok(),
                Verdict::Wait => true,
                Verdict::Pair(first, second, c) => {
                    first.tell(ChamMsg::Pair(second, c)).await.is_ok()
                }
            };
            assert!(sent);
        }
    }

    #[derive(Actor)]
    pub struct Cham {
        pub mall: ActorRef<KMall>,
        pub colour: u8,
        pub meetings: u64,
        pub report: Arc<Report>,
    }
    impl Message<ChamMsg> for Cham {
        type Reply = ();
        async fn handle(&mut self, msg: ChamMsg, ctx: &mut Context<Self, ()>) {
            match msg {
                ChamMsg::Go => {}
                ChamMsg::Pair(other, c) => {
                    self.colour = complement(self.colour, c);
                    self.meetings += 1;
                    assert!(other.tell(ChamMsg::Change(self.colour)).await.is_ok());
                }
                ChamMsg::Change(c) => {
                    self.colour = c;
                    self.meetings += 1;
                }
                ChamMsg::Exit => {
                    self.report.exit(self.meetings);
                    ctx.stop();
                    return;
                }
            }
            let me = ctx.actor_ref().clone();
            assert!(self.mall.tell(Meet(me, self.colour)).await.is_ok());
        }
    }
}

fn kameo_impl(h: &mut Harness, imp: &str, n: u64) {
    use kameo::actor::Spawn;
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, n, || {
        let (report, rx) = Report::new();
        let mall = rt.block_on(async {
            let mall = km::KMall::spawn(km::KMall(Mall::new(n)));
            for i in 0..CHAMENEOS {
                let c = km::Cham::spawn(km::Cham {
                    mall: mall.clone(),
                    colour: (i % 3) as u8,
                    meetings: 0,
                    report: report.clone(),
                });
                assert!(c.tell(km::ChamMsg::Go).await.is_ok());
            }
            mall
        });
        wait(&rx);
        report.check(n);
        rt.block_on(async {
            let _ = mall.stop_gracefully().await;
            mall.wait_for_shutdown().await;
        });
    });
}

// ---------------------------------------------------------------- stakker

struct SMall(Mall<stakker::Actor<SCham>>);

impl SMall {
    fn init(_: CX![], n: u64) -> Option<Self> {
        Some(SMall(Mall::new(n)))
    }
    fn meet(&mut self, _: CX![], from: stakker::Actor<SCham>, c: u8) {
        match self.0.meet(from, c) {
            Verdict::Exit(from) => call!([from], exit()),
            Verdict::Wait => {}
            Verdict::Pair(first, second, c) => call!([first], pair(second, c)),
        }
    }
}

struct SCham {
    mall: stakker::Actor<SMall>,
    colour: u8,
    meetings: u64,
    exited: Rc<Cell<u64>>,
}

impl SCham {
    fn init(
        _: CX![],
        mall: stakker::Actor<SMall>,
        colour: u8,
        exited: Rc<Cell<u64>>,
    ) -> Option<Self> {
        Some(SCham {
            mall,
            colour,
            meetings: 0,
            exited,
        })
    }
    fn go(&mut self, cx: CX![]) {
        let me = cx.this().clone();
        call!([self.mall], meet(me, self.colour));
    }
    fn pair(&mut self, cx: CX![], other: stakker::Actor<SCham>, c: u8) {
        self.colour = complement(self.colour, c);
        self.meetings += 1;
        call!([other], change(self.colour));
        self.go(cx);
    }
    fn change(&mut self, cx: CX![], c: u8) {
        self.colour = c;
        self.meetings += 1;
        self.go(cx);
    }
    fn exit(&mut self, cx: CX![]) {
        self.exited.set(self.exited.get() + self.meetings);
        cx.stop();
    }
}

fn stakker_impl(h: &mut Harness, _imp: &str, n: u64) {
    let mut s = Stakker::new(std::time::Instant::now());
    let meetings = Rc::new(Cell::new(0));
    h.measure(BENCH, "stakker", n, || {
        meetings.set(0);
        let mall = actor!(s, SMall::init(n), ret_nop!());
        let chams: Vec<_> = (0..CHAMENEOS)
            .map(|i| {
                let m: stakker::Actor<SMall> = (*mall).clone();
                let c = actor!(
                    s,
                    SCham::init(m, (i % 3) as u8, meetings.clone()),
                    ret_nop!()
                );
                call!([c], go());
                c
            })
            .collect();
        s.run(std::time::Instant::now(), false);
        assert_eq!(meetings.get(), 2 * n);
        drop((chams, mall));
    });
}

// ---------------------------------------------------------------- tokio

/// A chameneo's messages in the baselines, where an address is an index
/// into the chameneos' senders.
enum Base<S> {
    Go,
    Pair(S, u8),
    Change(u8),
    Exit,
}

fn tokio_impl(h: &mut Harness, imp: &str, n: u64) {
    use tokio::sync::mpsc;
    let rt = TokioRt::new(imp);
    h.measure(BENCH, imp, n, || {
        let (report, rx) = Report::new();
        rt.block_on(async {
            let (mall_tx, mut mall_rx) = mpsc::channel::<(usize, u8)>(1024);
            let (txs, rxs): (Vec<_>, Vec<_>) = (0..CHAMENEOS)
                .map(|_| mpsc::channel::<Base<usize>>(1024))
                .unzip();
            let addrs = Arc::new(txs);
            let a = addrs.clone();
            tokio::spawn(async move {
                let mut mall = Mall::new(n);
                let mut exited = 0;
                while let Some((from, c)) = mall_rx.recv().await {
                    match mall.meet(from, c) {
                        Verdict::Exit(from) => {
                            let _ = a[from].send(Base::Exit).await;
                            exited += 1;
                            if exited == CHAMENEOS {
                                break;
                            }
                        }
                        Verdict::Wait => {}
                        Verdict::Pair(first, second, c) => {
                            let _ = a[first].send(Base::Pair(second, c)).await;
                        }
                    }
                }
            });
            for (i, mut inbox) in rxs.into_iter().enumerate() {
                let (peers, mall, report) = (addrs.clone(), mall_tx.clone(), report.clone());
                tokio::spawn(async move {
                    let (mut colour, mut meetings) = ((i % 3) as u8, 0);
                    while let Some(msg) = inbox.recv().await {
                        match msg {
                            Base::Go => {}
                            Base::Pair(other, c) => {
                                colour = complement(colour, c);
                                meetings += 1;
                                let _ = peers[other].send(Base::Change(colour)).await;
                            }
                            Base::Change(c) => {
                                colour = c;
                                meetings += 1;
                            }
                            Base::Exit => break,
                        }
                        let _ = mall.send((i, colour)).await;
                    }
                    report.exit(meetings);
                });
                let _ = addrs[i].send(Base::Go).await;
            }
        });
        wait(&rx);
        report.check(n);
    });
}

// ---------------------------------------------------------------- crossbeam

fn crossbeam_impl(h: &mut Harness, _imp: &str, n: u64) {
    h.measure(BENCH, "crossbeam", n, || {
        let (report, rx) = Report::new();
        let (mall_tx, mall_rx) = bounded::<(usize, u8)>(1024);
        let (txs, rxs): (Vec<_>, Vec<_>) =
            (0..CHAMENEOS).map(|_| bounded::<Base<usize>>(1024)).unzip();
        let addrs = Arc::new(txs);
        let a = addrs.clone();
        let mut threads = vec![std::thread::spawn(move || {
            let mut mall = Mall::new(n);
            let mut exited = 0;
            for (from, c) in mall_rx {
                match mall.meet(from, c) {
                    Verdict::Exit(from) => {
                        let _ = a[from].send(Base::Exit);
                        exited += 1;
                        if exited == CHAMENEOS {
                            break;
                        }
                    }
                    Verdict::Wait => {}
                    Verdict::Pair(first, second, c) => {
                        let _ = a[first].send(Base::Pair(second, c));
                    }
                }
            }
        })];
        for (i, inbox) in rxs.into_iter().enumerate() {
            let (peers, mall, report) = (addrs.clone(), mall_tx.clone(), report.clone());
            threads.push(std::thread::spawn(move || {
                let (mut colour, mut meetings) = ((i % 3) as u8, 0);
                for msg in inbox.iter() {
                    match msg {
                        Base::Go => {}
                        Base::Pair(other, c) => {
                            colour = complement(colour, c);
                            meetings += 1;
                            let _ = peers[other].send(Base::Change(colour));
                        }
                        Base::Change(c) => {
                            colour = c;
                            meetings += 1;
                        }
                        Base::Exit => break,
                    }
                    let _ = mall.send((i, colour));
                }
                report.exit(meetings);
            }));
            addrs[i].send(Base::Go).expect("chameneo alive");
        }
        drop(mall_tx);
        wait(&rx);
        report.check(n);
        for t in threads {
            t.join().expect("thread");
        }
    });
}
